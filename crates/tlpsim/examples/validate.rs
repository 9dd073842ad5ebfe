//! Prints validation rows of one system (a development aid).
fn main() {
    let only = std::env::args().nth(1);
    let r = tlpsim::validation::validate(only.as_deref()).unwrap_or_else(|e| panic!("{e}"));
    for row in r.rows {
        println!(
            "{:<14} {:<28} {:<12} pub {:>8.3} sim {:>8.3} err {:>+7.1}% {}",
            row.table,
            row.series,
            row.column,
            row.published,
            row.simulated,
            row.error * 100.0,
            row.role.as_str()
        );
    }
}
