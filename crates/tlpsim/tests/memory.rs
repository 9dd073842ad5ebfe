//! The memory endpoint (`kind = "memory"`): a BAR of plain memory that a root complex
//! writes to and reads from through a switch, against the closed form and its own settings.

use tlpsim::analytic::{CompletionSize, DllpPolicy, LinkRequest};
use tlpsim::scenario::load_str;
use tlpsim::sim::{result::RunResult, run};

/// A root complex, a cut-through switch, a memory endpoint `gpu` (`memory` adds its keys)
/// and a DMA endpoint `ep`, all on Gen3 x8 links (MPS 256 B, MRRS 512 B).
fn fabric(memory: &str, workloads: &str) -> String {
    format!(
        "[simulation]\nduration = \"300us\"\nwarmup = \"30us\"\n\
         [pcie]\nmps = 256\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"700ns\"\n\
         [[switch]]\nname = \"sw\"\nforwarding = \"cut-through\"\nlatency = \"150ns\"\n\
         [[endpoint]]\nname = \"gpu\"\nkind = \"memory\"\nbar_size = \"256MiB\"\n{memory}\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ntags = 256\n\
         [[link]]\nbetween = [\"rc\", \"sw\"]\ngen = 3\nwidth = 8\n\
         [[link]]\nbetween = [\"sw\", \"gpu\"]\ngen = 3\nwidth = 8\n\
         [[link]]\nbetween = [\"sw\", \"ep\"]\ngen = 3\nwidth = 8\n{workloads}"
    )
}

/// A DMA workload `name` on `endpoint` toward `target`.
fn dma(name: &str, endpoint: &str, target: &str, direction: &str, size: &str, n: u32) -> String {
    format!(
        "[[workload]]\nname = \"{name}\"\nkind = \"dma\"\nendpoint = \"{endpoint}\"\n\
         target = \"{target}\"\ndirection = \"{direction}\"\ntransfer_size = \"{size}\"\n\
         outstanding = {n}\n"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// The build error of `text`, as the user reads it.
fn refused(text: &str) -> String {
    load_str(text, "<test>").unwrap_err().to_string()
}

/// Gen3 x8, MPS 256 B, MRRS 512 B, 64 KiB transfers, MPS-sized completions: the closed
/// form's (write, read) Gb/s. The data flow one way, so no DLLP shares their direction.
fn closed() -> (f64, f64) {
    let req = LinkRequest {
        gen: 3,
        width: 8,
        mps: 256,
        mrrs: 512,
        payload: Some(65536),
        completion: CompletionSize::Mps,
        dllp: DllpPolicy::None,
        ..LinkRequest::default()
    };
    let b = tlpsim::link_bandwidth(&req).unwrap();
    (b.write_gbps, b.read_gbps)
}

fn mean_latency(r: &RunResult, flow: usize) -> f64 {
    r.flows[flow].latency_ns.mean.expect("completed requests")
}

#[test]
fn writes_into_a_bar_that_keeps_up_run_at_the_link_rate() {
    let r = simulate(&fabric("", &dma("w", "rc", "gpu", "write", "64KiB", 8)));
    let err = r.flows[0].throughput_gbps / closed().0 - 1.0;
    assert!(
        err.abs() < 0.005,
        "{} Gb/s: {err:+.4}",
        r.flows[0].throughput_gbps
    );
    assert_eq!(r.flows[0].target, "gpu");
}

#[test]
fn a_slow_memory_paces_writes_and_is_named_the_bottleneck() {
    let r = simulate(&fabric(
        "write_rate = \"2GB/s\"",
        &dma("w", "rc", "gpu", "write", "64KiB", 8),
    ));
    let f = &r.flows[0];
    // 2 GB/s of payload is 16 Gb/s.
    assert!(
        (f.throughput_gbps / 16.0 - 1.0).abs() < 0.01,
        "{} Gb/s",
        f.throughput_gbps
    );
    assert!(
        f.bottleneck.resource.contains("gpu memory (write)"),
        "{:?}",
        f.bottleneck
    );
}

#[test]
fn reads_of_a_bar_run_at_the_link_rate() {
    let r = simulate(&fabric("", &dma("r", "rc", "gpu", "read", "64KiB", 8)));
    let err = r.flows[0].throughput_gbps / closed().1 - 1.0;
    // -0.99 % before every receiver's UpdateFC refresh (a few DLLPs per 30 us) shared the
    // completions' direction; -1.00 % since (one completion fewer in the window).
    assert!(
        err.abs() < 0.011,
        "{} Gb/s: {err:+.4}",
        r.flows[0].throughput_gbps
    );
}

#[test]
fn a_read_waits_exactly_the_read_latency_more() {
    let one = |latency: &str| {
        let w = dma("r", "rc", "gpu", "read", "64B", 1);
        mean_latency(
            &simulate(&fabric(&format!("read_latency = \"{latency}\""), &w)),
            0,
        )
    };
    let (fast, slow) = (one("700ns"), one("1700ns"));
    assert!(
        (slow - fast - 1000.0).abs() < 0.01,
        "{fast} ns then {slow} ns"
    );
}

#[test]
fn a_root_complex_reading_a_bar_sees_what_an_endpoint_reading_host_memory_sees() {
    // The same links, switch and 700 ns memory either way round: one 64 B read at a time
    // takes the same time from request to completion.
    let bar = simulate(&fabric(
        "read_latency = \"700ns\"",
        &dma("r", "rc", "gpu", "read", "64B", 1),
    ));
    let host = simulate(&fabric("", &dma("r", "ep", "rc", "read", "64B", 1)));
    let (a, b) = (mean_latency(&bar, 0), mean_latency(&host, 0));
    assert!((a - b).abs() < 0.01, "BAR read {a} ns, host read {b} ns");
}

#[test]
fn the_memory_endpoint_is_in_the_schema_with_its_defaults() {
    let text = tlpsim::scenario::json_schema();
    assert!(text.contains("\"memory\""), "no memory kind in the schema");
    assert!(text.contains("bar_size") && text.contains("write_rate"));
}

#[test]
fn mistakes_with_a_memory_endpoint_get_one_clear_message() {
    let cases = [
        // (memory keys, workload, words the message must hold)
        (
            "",
            dma("w", "gpu", "rc", "write", "4KiB", 1),
            vec!["memory endpoint", "issues no requests"],
        ),
        (
            "",
            // Peer-to-peer from an endpoint: the BAR still bounds a transfer.
            dma("w", "ep", "gpu", "write", "512MiB", 1),
            vec!["transfer_size", "BAR"],
        ),
        (
            "",
            dma("w", "rc", "gpu", "write", "512MiB", 1),
            vec!["transfer_size", "BAR"],
        ),
        (
            "",
            dma("r", "rc", "ep", "read", "4KiB", 1),
            vec!["writes only", "kind = \"memory\""],
        ),
        ("tags = 8", String::new(), vec!["tags"]),
    ];
    for (keys, workload, words) in &cases {
        let e = refused(&fabric(keys, workload));
        for w in words {
            assert!(e.contains(w), "{e:?} lacks {w:?}");
        }
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
    let bad_bar = fabric("", "").replace("\"256MiB\"", "\"3000B\"");
    let e = refused(&bad_bar);
    assert!(e.contains("bar_size") && e.contains("power of two"), "{e}");
    let below = format!(
        "{}[[endpoint]]\nname = \"x\"\nkind = \"dma\"\n[[link]]\nbetween = [\"gpu\", \"x\"]\n",
        fabric("", "")
    );
    let e = refused(&below);
    assert!(
        e.contains("memory endpoint") && e.contains("no downstream ports"),
        "{e}"
    );
}

#[test]
fn a_root_complex_keeps_as_many_reads_outstanding_as_its_tags() {
    // 64 B reads of a BAR with 700 ns of memory behind it are latency-bound: the rate is the
    // tags over the round trip, so 8 tags read a quarter of what 32 (the default) read,
    // and 64 twice as much.
    let rate = |tags: &str| {
        let text = fabric(
            "read_latency = \"700ns\"",
            &dma("r", "rc", "gpu", "read", "64B", 1024),
        )
        .replace("name = \"rc\"\n", &format!("name = \"rc\"\n{tags}"));
        simulate(&text).flows[0].throughput_gbps
    };
    let (eight, default, sixty_four) = (rate("tags = 8\n"), rate(""), rate("tags = 64\n"));
    assert!(
        (default / eight / 4.0 - 1.0).abs() < 0.02,
        "{eight} {default}"
    );
    assert!(
        (sixty_four / default / 2.0 - 1.0).abs() < 0.02,
        "{default} {sixty_four}"
    );
    for bad in ["tags = 0\n", "tags = 1000\n"] {
        let text = fabric("", "").replace("name = \"rc\"\n", &format!("name = \"rc\"\n{bad}"));
        let e = refused(&text);
        assert!(e.contains("tags") && e.contains("1 to 768"), "{e}");
    }
}
