//! Runs a scenario file and prints the result as JSON (a development aid).
fn main() {
    let path = std::env::args().nth(1).expect("usage: run SCENARIO.toml");
    match tlpsim::scenario::load_path(std::path::Path::new(&path)) {
        Ok(sys) => match tlpsim::sim::run(&sys) {
            Ok(r) => println!("{}", r.to_json()),
            Err(e) => eprintln!("error: {e}"),
        },
        Err(e) => eprintln!("error: {e}"),
    }
}
