//! Fits one catalog value on one calibration cell by bisection (the method of
//! docs/calibration.md), or prints a cell's simulated value.
//!
//!     cargo run --release --example calibrate -- CELL [K=V ...]             # simulated value
//!     cargo run --release --example calibrate -- CELL --scenario            # its scenario TOML
//!     cargo run --release --example calibrate -- CELL KEY LO HI UNIT [K=V ...]
//!
//! CELL is a cell's `reference` in validation/SYSTEM/cells.toml (`--scenario` prints the
//! scenario a simulated cell runs: its topology template, catalog values filled in).
//! KEY is `section.key` in validation/catalog.toml; LO and HI bound the value, UNIT is
//! appended to it ("MB/s", "us", or "" for a plain number); K=V pairs hold other catalog
//! values fixed while fitting. The simulated value must rise or fall monotonically with KEY.
use tlpsim::validation::simulated::cell_value_with;

/// The published value of cell `reference`.
fn published(reference: &str) -> f64 {
    tlpsim::validation::published(reference)
        .unwrap_or_else(|| fail(format!("no published number for '{reference}'")))
}

/// Prints `message` and the usage line, and exits with status 2.
fn usage(message: &str) -> ! {
    if !message.is_empty() {
        eprintln!("calibrate: {message}");
    }
    eprintln!("usage: calibrate CELL [--scenario | K=V ... | KEY LO HI UNIT [K=V ...]]");
    std::process::exit(2);
}

/// Prints `e` as one line and exits with status 1.
fn fail(e: impl std::fmt::Display) -> ! {
    eprintln!("calibrate: {e}");
    std::process::exit(1);
}

fn main() {
    // A "--" (from running the binary directly with cargo's argument style) is skipped.
    let args: Vec<String> = std::env::args().skip(1).filter(|a| a != "--").collect();
    let Some(cell) = args.first() else {
        usage("");
    };
    if args.get(1).map(String::as_str) == Some("--scenario") {
        let text = tlpsim::validation::simulated::cell_scenario(cell).unwrap_or_else(|e| fail(e));
        print!("{text}");
        return;
    }
    if args.len() == 1 || args[1].contains('=') {
        let o: Vec<(&str, &str)> = args[1..]
            .iter()
            .filter_map(|kv| kv.split_once('='))
            .collect();
        let v = cell_value_with(cell, &o).unwrap_or_else(|e| fail(e));
        println!("{cell}: simulated {v:.3}, published {}", published(cell));
        return;
    }
    if args.len() < 5 {
        usage("fitting needs KEY LO HI UNIT");
    }
    let (key, unit) = (&args[1], &args[4]);
    let bound = |s: &String| {
        s.parse::<f64>()
            .unwrap_or_else(|_| usage(&format!("LO and HI must be numbers, not '{s}'")))
    };
    let (mut lo, mut hi) = (bound(&args[2]), bound(&args[3]));
    let fixed: Vec<(String, String)> = args[5..]
        .iter()
        .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.into(), v.into())))
        .collect();
    let target = published(cell);
    let value_at = |x: f64| {
        let text = if unit.is_empty() {
            format!("{x}")
        } else {
            format!("\"{x:.3}{unit}\"")
        };
        let mut o: Vec<(&str, &str)> = vec![(key.as_str(), text.as_str())];
        o.extend(fixed.iter().map(|(k, v)| (k.as_str(), v.as_str())));
        cell_value_with(cell, &o).unwrap_or_else(|e| fail(e))
    };
    let rising = value_at(hi) > value_at(lo);
    for _ in 0..24 {
        let mid = (lo + hi) / 2.0;
        let v = value_at(mid);
        if (v < target) == rising {
            lo = mid;
        } else {
            hi = mid;
        }
        if (hi - lo) / hi.abs().max(1e-12) < 1e-3 {
            break;
        }
    }
    let x = (lo + hi) / 2.0;
    println!(
        "{key} = {x:.3}{unit}: {cell} simulated {:.3}, published {target}",
        value_at(x)
    );
}
