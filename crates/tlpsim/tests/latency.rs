//! The two latencies of a flow against the closed form: `latency_ns` (per read request to
//! the first byte of its first completion, per write TLP to its taking effect at the target)
//! and `transfer_latency_ns` (per transfer, its first TLP out to its last byte in), their
//! percentiles, and their determinism.

use tlpsim::scenario::load_str;
use tlpsim::sim::result::{FlowResult, LatencySummary, RunResult};
use tlpsim::sim::run;

/// Gen1 x8: 4 ns per byte time over 8 lanes, so a TLP of `bytes` on the wire takes
/// `bytes / 2` ns.
const NS_PER_BYTE: f64 = 0.5;
/// One-way propagation of the link, ns.
const PROP: f64 = 10.0;
/// The root complex's memory read latency, ns.
const MEMORY: f64 = 500.0;
/// An MRd on the wire: 4 DW header (64-bit addressing) + 8 B framing (STP, sequence
/// number, LCRC, END at Gen1).
const MRD_BYTES: f64 = 16.0 + 8.0;

/// A CplD of `payload` bytes on the wire: 3 DW header + payload + 8 B framing.
fn cpld_bytes(payload: f64) -> f64 {
    12.0 + payload + 8.0
}

/// A root complex and one DMA engine with `tags` read tags on one Gen1 x8 link (10 ns
/// propagation, no SKP ordered sets), memory read latency 500 ns, MPS 128 B, RCB 64 B;
/// `pcie` adds `[pcie]` keys, `workload` is the rest of the one workload's section.
fn one_link(pcie: &str, tags: u32, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"200us\"\nwarmup = \"20us\"\nseed = 3\n\
         [pcie]\nmps = 128\nrcb = 64\npropagation = \"10ns\"\nskp = false\n{pcie}\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"500ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ntags = {tags}\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\ngen = 1\nwidth = 8\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n{workload}"
    )
}

/// One read transfer of `size` at a time.
fn reads(size: &str) -> String {
    format!("direction = \"read\"\ntransfer_size = \"{size}\"\noutstanding = 1\n")
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// The summary's values in order: mean, p50, p95, p99, p99.9, max.
fn values(s: &LatencySummary) -> [f64; 6] {
    [s.mean, s.p50, s.p95, s.p99, s.p99_9, s.max].map(|v| v.expect("measured"))
}

/// p50 <= p95 <= p99 <= p99.9 <= max, and the mean within [p50's bucket floor, max].
fn assert_ordered(s: &LatencySummary) {
    let [mean, p50, p95, p99, p99_9, max] = values(s);
    assert!(
        p50 <= p95 && p95 <= p99 && p99 <= p99_9 && p99_9 <= max,
        "{s:?}"
    );
    assert!(mean <= max + 1.0, "{s:?}");
}

/// Every figure of the transfer latency is at least the first-byte latency's.
fn assert_transfer_not_shorter(f: &FlowResult) {
    let first = values(&f.latency_ns);
    let transfer = values(&f.transfer_latency_ns);
    for (i, (a, b)) in first.iter().zip(transfer).enumerate() {
        assert!(
            b >= *a,
            "{}: figure {i}: transfer {b} < first byte {a}",
            f.name
        );
    }
}

/// The spread of a summary (max minus p50): every sample about the same.
fn spread(s: &LatencySummary) -> f64 {
    s.max.unwrap() - s.p50.unwrap()
}

#[test]
fn a_64_byte_read_at_a_time_matches_the_closed_form() {
    let r = simulate(&one_link("", 1, &reads("64B")));
    let f = &r.flows[0];
    // Request on the wire, propagation, memory, propagation: the completion's first byte.
    let first = MRD_BYTES * NS_PER_BYTE + PROP + MEMORY + PROP;
    // ... and its 84 bytes on the wire: the transfer's last byte.
    let transfer = first + cpld_bytes(64.0) * NS_PER_BYTE;
    let (got_first, got_transfer) = (
        f.latency_ns.mean.unwrap(),
        f.transfer_latency_ns.mean.unwrap(),
    );
    // A DLLP (8 B, 4 ns) the root complex sends just as the completion is ready delays it.
    assert!((got_first - first).abs() <= 4.0, "{got_first} vs {first}");
    assert!(
        (got_transfer - transfer).abs() <= 4.0,
        "{got_transfer} vs {transfer}"
    );
    assert!(
        (got_transfer - got_first - 42.0).abs() < 1e-9,
        "{got_transfer} - {got_first}"
    );
    // One request per transfer, every one measured once in each summary.
    assert!(
        f.transfers > 100 && f.requests.abs_diff(f.transfers) <= 1,
        "{f:?}"
    );
    assert!(spread(&f.transfer_latency_ns) <= 4.0, "{f:?}");
    assert_ordered(&f.latency_ns);
    assert_ordered(&f.transfer_latency_ns);
    assert_transfer_not_shorter(f);
}

#[test]
fn a_2_kib_read_adds_its_completions_serialization_to_the_first_byte() {
    // One 2 KiB request (MRRS 2048) answered by 32 completions of 64 B (RCB), back to back
    // on the wire: from the first byte of the first to the last byte of the last is 32
    // completions of 84 B, plus any DLLP the root complex slips between them.
    let r = simulate(&one_link("mrrs = 2048", 1, &reads("2KiB")));
    let f = &r.flows[0];
    let diff = f.transfer_latency_ns.mean.unwrap() - f.latency_ns.mean.unwrap();
    let closed = 32.0 * cpld_bytes(64.0) * NS_PER_BYTE;
    assert!(
        diff >= closed - 1e-9 && diff <= closed + 8.0,
        "{diff} vs {closed}"
    );
    let first = MRD_BYTES * NS_PER_BYTE + PROP + MEMORY + PROP;
    assert!((f.latency_ns.mean.unwrap() - first).abs() <= 4.0, "{f:?}");
    assert_transfer_not_shorter(f);

    // MPS-sized completions: 16 of 128 B.
    let text = one_link("mrrs = 2048", 1, &reads("2KiB")).replace(
        "memory_read_latency = \"500ns\"",
        "memory_read_latency = \"500ns\"\ncompletion = \"mps\"",
    );
    let r = simulate(&text);
    let f = &r.flows[0];
    let diff = f.transfer_latency_ns.mean.unwrap() - f.latency_ns.mean.unwrap();
    let closed = 16.0 * cpld_bytes(128.0) * NS_PER_BYTE;
    assert!(
        diff >= closed - 1e-9 && diff <= closed + 8.0,
        "{diff} vs {closed}"
    );
}

#[test]
fn a_transfer_of_several_requests_counts_from_its_first_to_its_last_byte() {
    // 2 KiB in four 512 B requests, all four tags: the requests leave back to back (12 ns
    // apart); the completions (32 of 64 B) then fill the wire from the first one's first
    // byte to the last one's last byte, as for one 2 KiB request.
    let r = simulate(&one_link("mrrs = 512", 4, &reads("2KiB")));
    let f = &r.flows[0];
    let first = MRD_BYTES * NS_PER_BYTE + PROP + MEMORY + PROP;
    let transfer = f.transfer_latency_ns.mean.unwrap();
    let closed = first + 32.0 * cpld_bytes(64.0) * NS_PER_BYTE;
    assert!(
        transfer >= closed - 4.0 && transfer <= closed + 12.0,
        "{transfer} vs {closed}"
    );
    // Four requests per transfer: request k (0 to 3) leaves 12k ns after the first and its
    // first completion waits behind the 8k completions (42 ns each) before it.
    assert!(f.requests.abs_diff(4 * f.transfers) <= 4, "{f:?}");
    let behind = 8.0 * cpld_bytes(64.0) * NS_PER_BYTE - MRD_BYTES * NS_PER_BYTE;
    let [mean, .., max] = values(&f.latency_ns);
    assert!((max - (first + 3.0 * behind)).abs() <= 4.0, "{f:?}");
    assert!((mean - (first + 1.5 * behind)).abs() <= 4.0, "{f:?}");
    assert_transfer_not_shorter(f);
}

#[test]
fn a_write_transfer_ends_when_its_last_tlp_is_at_the_target() {
    // 2 KiB written in 16 MWr of 128 B (4 DW header + 128 + 8 framing = 152 B, 76 ns), back
    // to back on an otherwise empty direction; the root complex takes each at its last byte.
    // The endpoint's credits are infinite: no UpdateFC refresh shares that direction.
    let infinite = "credits = { ph = \"infinite\", pd = \"infinite\", nph = \"infinite\", \
                    npd = \"infinite\", cplh = \"infinite\", cpld = \"infinite\" }";
    let r = simulate(
        &one_link("", 1, "direction = \"write\"\ntransfer_size = \"2KiB\"\n")
            .replace("tags = 1\n", &format!("tags = 1\n{infinite}\n")),
    );
    let f = &r.flows[0];
    let tlp = 152.0 * NS_PER_BYTE;
    let per_tlp = tlp + PROP;
    let transfer = 16.0 * tlp + PROP;
    let (got_tlp, got_transfer) = (
        f.latency_ns.mean.unwrap(),
        f.transfer_latency_ns.mean.unwrap(),
    );
    assert!((got_tlp - per_tlp).abs() < 1e-6, "{got_tlp} vs {per_tlp}");
    assert!(
        (got_transfer - transfer).abs() < 1e-6,
        "{got_transfer} vs {transfer}"
    );
    assert_eq!(spread(&f.transfer_latency_ns), 0.0, "{f:?}");
    assert!(f.requests.abs_diff(16 * f.transfers) <= 16, "{f:?}");
    assert_ordered(&f.transfer_latency_ns);
    assert_transfer_not_shorter(f);
}

#[test]
fn a_write_into_a_slow_memory_counts_until_the_memory_has_it() {
    // A posted-write sink of 1 GB/s behind a 2 GB/s link: a 2 KiB transfer ends when the
    // sink has taken its last byte, 2048 ns after the sink began on the first (once the
    // sink is the bottleneck, writes queue in front of it and both latencies grow).
    let text = one_link("", 1, "direction = \"write\"\ntransfer_size = \"2KiB\"\n").replace(
        "memory_read_latency = \"500ns\"",
        "memory_read_latency = \"500ns\"\nposted_write_rate = \"1GB/s\"",
    );
    let f = &simulate(&text).flows[0];
    let free = 16.0 * 152.0 * NS_PER_BYTE + PROP;
    assert!(f.transfer_latency_ns.p50.unwrap() > free + 500.0, "{f:?}");
    assert_transfer_not_shorter(f);
    assert_ordered(&f.latency_ns);
}

#[test]
fn transfers_begun_before_the_window_or_unfinished_at_its_end_are_not_counted() {
    // One 64 KiB read at a time, each about 33 us: a window of 50 us (from 20 us to 70 us)
    // holds at most one whole transfer issued inside it.
    let text = one_link("mrrs = 4096", 1, &reads("64KiB"))
        .replace("duration = \"200us\"", "duration = \"70us\"");
    let f = &simulate(&text).flows[0];
    assert!(f.transfers <= 1, "{f:?}");
    // Reads that outlast the run: nothing measured, every figure null.
    let text = one_link("", 1, &reads("64B")).replace(
        "memory_read_latency = \"500ns\"",
        "memory_read_latency = \"1ms\"",
    );
    let f = &simulate(&text).flows[0];
    assert_eq!((f.requests, f.transfers), (0, 0));
    assert_eq!(f.transfer_latency_ns, LatencySummary::default());
}

#[test]
fn the_example_scenarios_order_their_percentiles_and_transfers_are_never_shorter() {
    for (name, text) in [
        (
            "t5220",
            include_str!("../../../scenarios/t5220-two-switches.toml"),
        ),
        (
            "gpu-bar",
            include_str!("../../../scenarios/gpu-bar-through-switch.toml"),
        ),
        (
            "ntb-windows",
            include_str!("../../../scenarios/ntb-windows.toml"),
        ),
        (
            "ntb-four",
            include_str!("../../../scenarios/ntb-four-endpoints-to-root.toml"),
        ),
    ] {
        let r = simulate(text);
        for f in &r.flows {
            assert!(f.transfers > 0, "{name}: {f:?}");
            assert_ordered(&f.latency_ns);
            assert_ordered(&f.transfer_latency_ns);
            assert_transfer_not_shorter(f);
        }
    }
}

#[test]
fn random_memory_latency_gives_a_spread_and_repeats_exactly() {
    let text = one_link("mrrs = 512", 4, &reads("2KiB")).replace(
        "memory_read_latency = \"500ns\"",
        "memory_read_latency = { distribution = \"uniform\", min = \"200ns\", max = \"2us\" }",
    );
    let a = simulate(&text);
    let b = simulate(&text);
    let (fa, fb) = (&a.flows[0], &b.flows[0]);
    assert_eq!(fa.transfer_latency_ns, fb.transfer_latency_ns);
    assert_eq!(fa.latency_ns, fb.latency_ns);
    assert_eq!(fa.transfers, fb.transfers);
    let [_, p50, p95, _, _, max] = values(&fa.transfer_latency_ns);
    assert!(p50 < p95 && p95 <= max, "{fa:?}");
    assert_ordered(&fa.transfer_latency_ns);
    assert_transfer_not_shorter(fa);
}

#[test]
fn the_json_names_every_latency_figure() {
    let r = simulate(&one_link("", 1, &reads("64B")));
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    let flow = &json["flows"][0];
    for key in ["latency_ns", "transfer_latency_ns"] {
        let keys: Vec<_> = flow[key].as_object().unwrap().keys().cloned().collect();
        let mut want = vec!["mean", "p50", "p95", "p99", "p99_9", "max"];
        want.sort_unstable();
        let mut keys = keys;
        keys.sort_unstable();
        assert_eq!(keys, want, "{key}");
    }
    assert!(flow["transfers"].as_u64().unwrap() > 0);
}
