//! Runs a scenario file and prints the result as JSON (a development aid); with
//! `--rfc2544` it searches the zero-loss load of the scenario's bridge workloads instead;
//! with `--general` it runs on the general engine even where the lean kernel would.
fn main() {
    let mut args = std::env::args().skip(1);
    let path = args
        .next()
        .expect("usage: run SCENARIO.toml [--rfc2544 | --general]");
    let flag = args.next();
    let search = flag.as_deref() == Some("--rfc2544");
    let kernel = if flag.as_deref() == Some("--general") {
        tlpsim::sim::Kernel::General
    } else {
        tlpsim::sim::Kernel::Auto
    };
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
    match tlpsim::sim::run_on(&sys, kernel) {
        Ok(r) => println!("{}", r.to_json()),
        Err(e) => eprintln!("error: {e}"),
    }
}
