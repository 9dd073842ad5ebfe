//! Prints validation rows of one system (a development aid); `limits` as a second argument
//! adds what limited each throughput cell's simulation.
//!
//!     cargo run --release --example validate -- [SYSTEM [limits]]
fn main() {
    let only = std::env::args().nth(1).filter(|s| s != "all");
    let limits = std::env::args().nth(2).as_deref() == Some("limits");
    let r = tlpsim::validation::validate(only.as_deref()).unwrap_or_else(|e| panic!("{e}"));
    for row in r.rows {
        let limit = match (&row.limit, limits) {
            (Some(l), true) => format!("  [{l}]"),
            _ => String::new(),
        };
        println!(
            "{:<14} {:<28} {:<12} pub {:>8.3} sim {:>8.3} err {:>+7.1}% {}{limit}",
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
