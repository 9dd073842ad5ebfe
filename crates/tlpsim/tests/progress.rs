//! Forward progress: a flow that completes nothing while its TLPs wait is named starved,
//! and a requester gives up a read whose completions do not come within its completion
//! timeout (issue 26 item 3).

use tlpsim::scenario::load_str;
use tlpsim::sim::{result::RunResult, run};

/// The reproduction: writes stream through a shared outbound queue that a scratchpad read
/// can never leave (see the file).
const STARVED: &str = include_str!("scenarios/starved-scratchpad-read.toml");

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    assert_eq!(
        r.audit.duplicates + r.audit.order_violations,
        0,
        "{:?}",
        r.audit
    );
    r
}

/// `STARVED` with `key = value` lines added to the root complex `rc`.
fn starved_with(rc_keys: &str) -> String {
    STARVED.replacen(
        "port_queue = 1\n",
        &format!("port_queue = 1\n{rc_keys}\n"),
        1,
    )
}

#[test]
fn a_read_that_never_leaves_the_shared_queue_is_named_starved_with_what_it_waits_for() {
    // Before: the read flow completed 0 requests in 4 ms and nothing said so.
    let r = simulate(STARVED);
    let (stream, spad) = (&r.flows[0], &r.flows[1]);
    assert!(stream.bytes > 3_000_000 && !stream.starved, "{stream:?}");
    assert_eq!((spad.bytes, spad.requests), (0, 0));
    assert!(spad.starved);
    assert_eq!(spad.starved_on.as_deref(), Some("rc shared outbound queue"));
    let b = &spad.bottleneck;
    assert_eq!(
        (b.kind, b.resource.as_str()),
        ("starved", "rc shared outbound queue")
    );
    assert!(
        b.detail.contains("posted writes, which may pass it"),
        "{b:?}"
    );
    assert_eq!(r.starved.len(), 1);
    let s = &r.starved[0];
    assert_eq!(s.flow, "spad");
    assert_eq!((s.since_us, s.until_us, s.for_us), (0.0, None, 4000.0));
    // With a queue per root port the read goes out beside the writes and completes.
    let per_port = simulate(&STARVED.replace("outbound_queue = \"shared\"\nport_queue = 1", ""));
    let spad = &per_port.flows[1];
    assert!(spad.requests > 1000 && !spad.starved, "{spad:?}");
    assert!(per_port.starved.is_empty(), "{:?}", per_port.starved);
}

#[test]
fn a_starved_read_times_out_at_its_completion_timeout_and_its_tag_is_used_again() {
    // 1 ms in a 4 ms run: the request made at 0 is given up at 1 ms, its tag makes the
    // next, given up at 2 ms, and so on.
    let r = simulate(&starved_with("completion_timeout = \"1ms\""));
    assert_eq!(r.flows[1].completion_timeouts, 4);
    assert_eq!(r.flows[0].completion_timeouts, 0);
    // The default (50 ms, the top of the spec's default range) and "off" give none.
    assert_eq!(simulate(STARVED).flows[1].completion_timeouts, 0);
    let off = simulate(&starved_with("completion_timeout = \"off\""));
    assert_eq!(off.flows[1].completion_timeouts, 0);
    assert!(off.flows[1].starved);
}

/// One DMA endpoint reading host memory whose reads take `latency` to answer, with
/// `completion_timeout` on the endpoint, for `duration`.
fn slow_memory(latency: &str, timeout: &str, duration: &str) -> String {
    format!(
        "[simulation]\nduration = \"{duration}\"\nwarmup = \"0ns\"\n[pcie]\nmps = 256\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"{latency}\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ncompletion_timeout = \"{timeout}\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\ngen = 3\nwidth = 8\n\
         [[workload]]\nname = \"r\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
         direction = \"read\"\ntransfer_size = \"512B\"\noutstanding = 2\n"
    )
}

#[test]
fn completions_that_come_after_the_timeout_are_discarded_and_nothing_is_lost() {
    // Memory answers after 200 us; the endpoint gives a read up after 100 us and reads
    // again. Every completion comes too late: no byte counts, none is delivered twice,
    // and the payload of every completion is accounted for (the audit).
    let r = simulate(&slow_memory("200us", "100us", "1ms"));
    let f = &r.flows[0];
    assert_eq!(f.bytes, 0, "{f:?}");
    // Two reads given up every 100 us: at 100, 200, ..., 1000 us.
    assert_eq!(f.completion_timeouts, 20, "{f:?}");
    // Waiting inside the memory is slow, not starved: no TLP of it waits in a queue.
    assert!(!f.starved && r.starved.is_empty(), "{:?}", r.starved);
    // A timeout longer than the memory's answer never fires.
    let r = simulate(&slow_memory("200us", "300us", "1ms"));
    assert_eq!(r.flows[0].completion_timeouts, 0);
    assert!(r.flows[0].bytes > 0);
}

#[test]
fn a_completion_timeout_outside_the_spec_ranges_is_refused_in_one_line() {
    for (value, bad) in [
        ("10us", true),
        ("65s", true),
        ("fast", true),
        ("50us", false),
        ("64s", false),
    ] {
        let text = slow_memory("1us", value, "10us");
        match load_str(&text, "f.toml") {
            Ok(_) => assert!(!bad, "{value} was accepted"),
            Err(e) => {
                let e = e.to_string();
                assert!(bad, "{value}: {e}");
                assert!(!e.contains('\n'), "{e}");
                for want in ["f.toml", "completion_timeout", "50us to 64s", "\"off\""] {
                    assert!(e.contains(want), "{want:?} not in {e}");
                }
            }
        }
    }
}

#[test]
fn reads_that_time_out_are_named_in_the_verdict() {
    // A memory answering in 60 us behind a 50 us completion timeout: every read times out,
    // nothing arrives, and the verdict names the timeout, not the requests in flight.
    let text = "[simulation]\nduration = \"500us\"\nwarmup = \"10us\"\n\
        [pcie]\ngen = 3\nwidth = 4\nmps = 256\nmrrs = 512\n\
        [[root_complex]]\nname = \"rc\"\ncompletion_timeout = \"50us\"\n\
        [[endpoint]]\nname = \"mem\"\nkind = \"memory\"\nbar_size = \"1MiB\"\nread_latency = \"60us\"\n\
        [[link]]\nbetween = [\"rc\", \"mem\"]\n\
        [[workload]]\nname = \"r\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"mem\"\n\
        direction = \"read\"\ntransfer_size = \"4KiB\"\noutstanding = 4\n";
    let r = simulate(text);
    let f = &r.flows[0];
    assert!(f.completion_timeouts > 100 && f.bytes == 0, "{f:?}");
    assert_eq!(
        (f.bottleneck.kind, f.bottleneck.resource.as_str()),
        ("completion_timeout", "rc completion timeout")
    );
    assert!(
        f.bottleneck.detail.contains("50.0 us"),
        "{:?}",
        f.bottleneck
    );
}
