//! All four endpoint processors of the IDT System Interconnect stream netperf (16 KiB
//! messages) to the root processor at once: the simulated PCIe share of each stream, the
//! host stacks on top, and what limits the aggregate.
//!
//! `cargo run --release --example ntb_aggregate [SCENARIO]`

use tlpsim::netperf::{tcp_stream, Interface};
use tlpsim::scenario::load_path;
use tlpsim::sim::run;
use tlpsim::validation::simulated::{catalog_host, catalog_virtual_ethernet};

fn main() {
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "scenarios/ntb-four-endpoints-to-root.toml".into());
    let fail = |e: String| -> ! {
        eprintln!("error: {e}");
        std::process::exit(2)
    };
    let system = load_path(std::path::Path::new(&path)).unwrap_or_else(|e| fail(e.to_string()));
    let r = run(&system).unwrap_or_else(|e| fail(e.to_string()));
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    let xeon = catalog_host("xeon_e5310").unwrap_or_else(|e| fail(e.to_string()));
    let amd = catalog_host("athlon64_3500").unwrap_or_else(|e| fail(e.to_string()));
    let (header, line) = catalog_virtual_ethernet().unwrap_or_else(|e| fail(e.to_string()));
    let message = 16384;
    let mut total = 0.0;
    println!("stream      sender   path share Gb/s   netperf Gb/s   limit");
    for (i, f) in r.flows.iter().enumerate() {
        let sender = if i < 2 { xeon } else { amd };
        let path_rate = f.throughput_gbps * 1e9 / 8.0;
        let s = tcp_stream(
            &sender,
            &xeon,
            Interface::Pcie {
                header,
                line,
                path_rate,
            },
            message,
        );
        total += s.gbps;
        println!(
            "{:<11} {:<8} {:>16.3} {:>14.3}   {}",
            f.name,
            if i < 2 { "Xeon" } else { "Athlon" },
            f.throughput_gbps,
            s.gbps,
            s.limit
        );
    }
    for l in r.links.iter().filter(|l| l.payload_gbps > 0.0) {
        println!(
            "link {:<14} {:<4} utilization {:5.1} %  payload {:.3} Gb/s",
            l.name,
            l.direction,
            l.utilization * 100.0,
            l.payload_gbps
        );
    }
    println!("aggregate netperf: {total:.3} Gb/s");
}
