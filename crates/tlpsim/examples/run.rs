//! Runs a scenario file and prints the result as JSON (a development aid); with
//! `--rfc2544` it searches the zero-loss load of the scenario's bridge workloads instead.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: run SCENARIO.toml [--rfc2544]");
    let search = args.next().is_some_and(|a| a == "--rfc2544");
    let sys = match tlpsim::scenario::load_path(std::path::Path::new(&path)) {
        Ok(s) => s,
        Err(e) => return eprintln!("error: {e}"),
    };
    if search {
        match tlpsim::sim::rfc2544(&sys, 0.01) {
            Ok(r) => {
                for t in &r.trials {
                    eprintln!(
                        "load {:.4} {}",
                        t.load,
                        if t.passed { "pass" } else { "loss" }
                    );
                }
                println!(
                    "zero-loss load {:.4}, combined {:.1} Mb/s",
                    r.load, r.combined_mbps
                );
            }
            Err(e) => eprintln!("error: {e}"),
        }
        return;
    }
    match tlpsim::sim::run(&sys) {
        Ok(r) => println!("{}", r.to_json()),
        Err(e) => eprintln!("error: {e}"),
    }
}
