//! A DMA endpoint's own limits (engines, request and transfer costs, device latency, its
//! memory word) and the pcie-bench workload patterns (windows, offsets, random slots,
//! alternate, write-read), against closed forms: request and transfer rates, exact added
//! latency, 4 KiB splitting, whole-DW wire bytes.

use tlpsim::analytic::LinkRequest;
use tlpsim::pcie::tlp::TlpKind;
use tlpsim::scenario::load_str;
use tlpsim::sim::result::RunResult;
use tlpsim::sim::trace::Packet;
use tlpsim::sim::{run, run_traced};

/// A root complex and one DMA endpoint (keys `device`) on a Gen3 x16 link, one workload on
/// it (keys `workload`); `pcie` adds [pcie] keys.
fn scenario(pcie: &str, device: &str, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\nseed = 7\n\
         [pcie]\ngen = 3\n{pcie}\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"300ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ntags = 256\n{device}\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 16\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n{workload}"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// The measured window in seconds.
const WINDOW_S: f64 = 50e-6;

/// Transfers per second of flow 0 moving `size` bytes each.
fn transfers_per_s(r: &RunResult, size: f64) -> f64 {
    r.flows[0].bytes as f64 / size / WINDOW_S
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a / b - 1.0).abs() < tol
}

#[test]
fn request_cost_caps_a_small_write_stream_at_one_request_per_cost() {
    // 64 B writes: one MWr per transfer; one engine issues one per 20 ns: 50 M/s, far below
    // what a Gen3 x16 link carries.
    for (engines, cost, expect) in [(1, 20.0, 50e6), (2, 20.0, 100e6), (1, 12.5, 80e6)] {
        let device = format!("dma_engines = {engines}\nrequest_cost = \"{cost}ns\"");
        let w = "direction = \"write\"\ntransfer_size = \"64B\"\noutstanding = 16\n";
        let r = simulate(&scenario("", &device, w));
        let up = r.links.iter().find(|l| l.direction == "up").unwrap();
        let tlps = up.tlps as f64 / WINDOW_S;
        assert!(
            close(tlps, expect, 0.002),
            "{engines} x {cost} ns: {tlps} TLP/s"
        );
        assert!(close(transfers_per_s(&r, 64.0), expect, 0.002));
        assert_eq!(r.flows[0].bottleneck.kind, "dma_engines");
    }
    // Reads: one MRd per request, 15 ns each.
    let device = "dma_engines = 1\nrequest_cost = { read = \"15ns\", write = \"99ns\" }";
    let w = "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 64\n";
    let r = simulate(&scenario("", device, w));
    assert!(close(transfers_per_s(&r, 64.0), 1e9 / 15.0, 0.003));
}

#[test]
fn engines_times_their_transfer_time_bound_throughput() {
    // Each transfer holds an engine for transfer_cost + requests x request_cost; E engines
    // finish E of them per that time.
    for engines in [1u32, 2, 3] {
        let device =
            format!("dma_engines = {engines}\ntransfer_cost = \"300ns\"\nrequest_cost = \"10ns\"");
        // 1 KiB writes at MPS 256: 4 MWr, 340 ns of engine time each (3 engines move 72
        // Gb/s, below the link's 115).
        let w = "direction = \"write\"\ntransfer_size = \"1KiB\"\noutstanding = 8\n";
        let r = simulate(&scenario("mps = 256", &device, w));
        let expect = engines as f64 / 340e-9;
        let got = transfers_per_s(&r, 1024.0);
        assert!(
            close(got, expect, 0.01),
            "{engines} engines: {got} vs {expect}"
        );
    }
    // With more engines than transfers in flight, `outstanding` bounds it instead: two
    // 1 KiB reads of ~300 ns latency each in flight at a time, far below 4 engines' rate.
    let device = "dma_engines = 4\ntransfer_cost = \"100ns\"";
    let w = "direction = \"read\"\ntransfer_size = \"1KiB\"\noutstanding = 2\n";
    let r = simulate(&scenario("", device, w));
    assert!(transfers_per_s(&r, 1024.0) < 4.0 / 100e-9 / 4.0);
}

#[test]
fn device_latency_adds_exactly_to_a_reads_latency() {
    // pcie-bench's LAT_DMA_RD: one 64 B read in flight at a time.
    let w = "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 1\n";
    let base = simulate(&scenario("", "", w));
    let zero = simulate(&scenario("", "dma_engines = 1", w));
    let later = simulate(&scenario("", "dma_engines = 1\nlatency = \"250ns\"", w));
    let mean = |r: &RunResult| r.flows[0].latency_ns.mean.unwrap();
    // With no device time, counting from the transfer's start is counting from the MRd.
    assert!(
        (mean(&zero) - mean(&base)).abs() < 0.01,
        "{} {}",
        mean(&zero),
        mean(&base)
    );
    let added = mean(&later) - mean(&zero);
    assert!((added - 250.0).abs() < 0.01, "added {added} ns");
    // The transfer's latency (to its last byte in: one request here) too.
    let whole = |r: &RunResult| r.flows[0].transfer_latency_ns.mean.unwrap();
    assert!((whole(&later) - whole(&zero) - 250.0).abs() < 0.01);
    assert!((whole(&zero) - whole(&base)).abs() < 0.01);
    // And the request rate falls by it: one transfer per (latency + round trip).
    let rate = |r: &RunResult| transfers_per_s(r, 64.0);
    let per = 1e9 / rate(&later) - 1e9 / rate(&zero);
    assert!((per - 250.0).abs() < 2.0, "{per} ns more per transfer");
    // A request cost lengthens it too, before the request leaves.
    let costly = simulate(&scenario(
        "",
        "dma_engines = 1\nrequest_cost = \"16ns\"\ntransfer_cost = \"4ns\"",
        w,
    ));
    assert!((mean(&costly) - mean(&zero) - 20.0).abs() < 0.01);
}

/// (kind, bytes, addr) of every TLP the workloads sent up the endpoint's link.
fn tlps_up(text: &str) -> Vec<(TlpKind, u32, u32)> {
    let sys = load_str(text, "<test>").unwrap();
    let (r, trace) = run_traced(&sys, 1_000_000, &mut |_| true).unwrap();
    assert!(r.audit.passed);
    trace
        .events()
        .iter()
        .filter(|e| e.chan == 1)
        .filter_map(|e| match e.packet {
            Packet::Tlp {
                kind,
                bytes,
                replay: false,
                addr,
                flow: Some(_),
                ..
            } => Some((kind, bytes, addr)),
            _ => None,
        })
        .collect()
}

#[test]
fn a_4_kib_read_at_offset_64_is_two_requests() {
    let pcie = "mrrs = 4096";
    let w = |offset: u32| {
        format!(
            "direction = \"read\"\ntransfer_size = \"4KiB\"\noutstanding = 2\n\
             host_offset = {offset}\n"
        )
    };
    let aligned = tlps_up(&scenario(pcie, "", &w(0)));
    assert!(
        aligned.iter().all(|&t| t == (TlpKind::MRd, 4096, 0)),
        "{aligned:?}"
    );
    let offset = tlps_up(&scenario(pcie, "", &w(64)));
    assert!(offset.len() >= 20);
    for pair in offset.chunks_exact(2) {
        assert_eq!(pair, [(TlpKind::MRd, 4032, 64), (TlpKind::MRd, 64, 4096)]);
    }
    // Writes too: at MPS 512, a 4 KiB write at offset 64 is 8 MWr + 1 (the cut at 4 KiB).
    let w = "direction = \"write\"\ntransfer_size = \"4KiB\"\nhost_offset = 64\n";
    let writes = tlps_up(&scenario("mps = 512", "", w));
    let sizes: Vec<u32> = writes.iter().take(9).map(|t| t.1).collect();
    assert_eq!(sizes, [512, 512, 512, 512, 512, 512, 512, 448, 64]);
    // Completions: RCB-sized ones of a read at offset 32 end on 64 B boundaries.
    let w = "direction = \"read\"\ntransfer_size = \"256B\"\noutstanding = 1\nhost_offset = 32\n";
    let sys = load_str(&scenario("", "", w), "<test>").unwrap();
    let (_, trace) = run_traced(&sys, 100_000, &mut |_| true).unwrap();
    let cpls: Vec<(u32, u32)> = trace
        .events()
        .iter()
        .filter_map(|e| match e.packet {
            Packet::Tlp {
                kind: TlpKind::CplD,
                bytes,
                addr,
                ..
            } => Some((bytes, addr)),
            _ => None,
        })
        .take(5)
        .collect();
    assert_eq!(cpls, [(32, 32), (64, 64), (64, 128), (64, 192), (32, 256)]);
}

/// A root complex and an endpoint writing to each other on one Gen1 x1 link: payload
/// rate of the endpoint's `size`-byte writes at `offset`, and the closed form's for
/// `closed_size`-byte TLPs.
fn both_ways(size: u32, offset: u32, closed_size: i64) -> (f64, f64) {
    let w = |src: &str, dst: &str| {
        format!(
            "[[workload]]\nname = \"{src}\"\nkind = \"dma\"\nendpoint = \"{src}\"\n\
             target = \"{dst}\"\ndirection = \"write\"\ntransfer_size = \"{size}B\"\n\
             host_offset = {offset}\n"
        )
    };
    let text = format!(
        "[simulation]\nduration = \"1500us\"\nwarmup = \"20us\"\n\
         [[root_complex]]\nname = \"rc\"\n[[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 1\n{}{}",
        w("ep", "rc"),
        w("rc", "ep")
    );
    let r = simulate(&text);
    let req = LinkRequest {
        payload: Some(closed_size),
        ..LinkRequest::default()
    };
    let closed = tlpsim::link_bandwidth(&req).unwrap();
    (r.flows[0].throughput_gbps, closed.write_gbps)
}

#[test]
fn odd_sizes_and_offsets_take_whole_dws_on_the_wire() {
    // A 65 B write at offset 0 is 17 DW, as the closed form counts 65 B.
    let (sim, closed) = both_ways(65, 0, 65);
    assert!(close(sim, closed, 0.005), "{sim} vs {closed}");
    // A 64 B write at offset 1 is 17 DW too: the TLP rate of 65 B ones, 64 B of payload.
    let (sim, closed) = both_ways(64, 1, 65);
    assert!(close(sim, closed * 64.0 / 65.0, 0.005), "{sim} vs {closed}");
    // At offset 4 it is 16 DW again.
    let (sim, closed) = both_ways(64, 4, 64);
    assert!(close(sim, closed, 0.005), "{sim} vs {closed}");
    // At offset 3, a 2 B write spans two DWs.
    let (sim, closed) = both_ways(2, 3, 8);
    assert!(close(sim, closed * 2.0 / 8.0, 0.005), "{sim} vs {closed}");
}

#[test]
fn a_random_window_is_deterministic_and_stays_inside() {
    let w = "direction = \"write\"\ntransfer_size = \"100B\"\nwindow = \"8KiB\"\n\
             pattern = \"random\"\nhost_offset = 8\n";
    let text = scenario("", "", w);
    let a = tlps_up(&text);
    assert_eq!(a, tlps_up(&text), "same seed, same addresses");
    assert!(a.len() > 1000);
    // Slots of 128 B (100 + 8 rounded up to 64 B): 64 of them, each written at +8.
    let mut seen = std::collections::BTreeSet::new();
    for &(kind, bytes, addr) in &a {
        assert_eq!((kind, bytes), (TlpKind::MWr, 100));
        assert!(addr < 8192 && addr % 128 == 8, "{addr}");
        seen.insert(addr);
    }
    assert_eq!(seen.len(), 64, "every slot drawn");
    let b = tlps_up(&text.replace("seed = 7", "seed = 8"));
    assert_ne!(a, b, "another seed, other addresses");
    // Sequential: slot after slot, passing over those that would cross 4 KiB (192 B
    // slots: the 22nd, at 4032, would).
    let w = "direction = \"write\"\ntransfer_size = \"129B\"\nwindow = \"8KiB\"\n";
    let s = tlps_up(&scenario("mps = 256", "", w));
    let addrs: Vec<u32> = s.iter().map(|t| t.2).take(44).collect();
    assert_eq!(&addrs[..3], [0, 192, 384]);
    assert_eq!(addrs[20], 3840);
    assert_eq!(addrs[21], 4224, "4032 + 129 crosses 4096: passed over");
    assert_eq!(
        addrs[41], 0,
        "wraps after 42 slots of 8 KiB / 192 B, one passed over"
    );
}

#[test]
fn alternate_moves_both_ways_in_one_stream() {
    let w = "direction = \"alternate\"\ntransfer_size = \"256B\"\noutstanding = 4\n";
    let text = scenario("mps = 256", "", w);
    let r = simulate(&text);
    let (down, up) = (&r.links[0], &r.links[1]);
    assert!(down.payload_gbps > 1.0 && up.payload_gbps > 1.0);
    // One stream: reads and writes alternate, so the two directions carry the same data.
    assert!(close(down.payload_gbps, up.payload_gbps, 0.02));
    // The read and the write engines issue at once; in any stretch the stream's two kinds
    // stay within the transfers in flight of each other.
    let up = tlps_up(&text);
    assert!(up.len() > 500);
    let mut lead = 0i64;
    for &(kind, ..) in &up {
        lead += if kind == TlpKind::MWr { 1 } else { -1 };
        assert!(lead.abs() <= 4, "{lead}");
    }
}

#[test]
fn write_read_pairs_read_what_they_wrote_after_writing_it() {
    // pcie-bench's LAT_DMA_WRRD: one pair at a time.
    let w = |d: &str| {
        format!(
            "direction = \"{d}\"\ntransfer_size = \"64B\"\noutstanding = 1\nwindow = \"8KiB\"\n"
        )
    };
    let text = scenario("", "", &w("write-read"));
    let r = simulate(&text);
    let up = tlps_up(&text);
    for pair in up.chunks_exact(2).take(50) {
        assert_eq!(pair[0].0, TlpKind::MWr);
        assert_eq!(pair[1].0, TlpKind::MRd);
        assert_eq!(
            pair[0].2, pair[1].2,
            "the read is of the address just written"
        );
    }
    assert!(up[0].2 != up[2].2, "the next pair goes to the next slot");
    // Its latency is the pair's: longer than a read's alone by the write's time out.
    let read = simulate(&scenario("", "", &w("read")));
    let pair = r.flows[0].latency_ns.mean.unwrap();
    let alone = read.flows[0].latency_ns.mean.unwrap();
    assert!(pair > alone && pair < alone + 50.0, "{pair} vs {alone}");
    // Both halves move data: 64 B each way per pair.
    assert!(close(
        r.links[0].payload_gbps,
        r.links[1].payload_gbps,
        0.02
    ));
}

#[test]
fn a_partial_device_word_costs_and_an_offset_word_splits_writes() {
    // Reads of whole 8 B words at 15 ns each; a read covering a word in part pays 8 ns more.
    let device = "dma_engines = 1\nrequest_cost = \"15ns\"\ndma_unit = \"8B\"\n\
                  partial_unit_cost = { read = \"8ns\" }";
    let rate = |size: u32, device_offset: u32| {
        let w = format!(
            "direction = \"read\"\ntransfer_size = \"{size}B\"\noutstanding = 64\n\
             device_offset = {device_offset}\n"
        );
        transfers_per_s(&simulate(&scenario("", device, &w)), size as f64)
    };
    assert!(close(rate(64, 0), 1e9 / 15.0, 0.003));
    assert!(close(rate(63, 0), 1e9 / 23.0, 0.003));
    assert!(close(rate(65, 0), 1e9 / 23.0, 0.003));
    assert!(close(rate(64, 8), 1e9 / 15.0, 0.003));
    assert!(
        close(rate(64, 1), 1e9 / 31.0, 0.003),
        "both end words in part"
    );
    // Writes of 128 B TLPs: at device offset 1, the 128 B span 17 words, so two MWr.
    let w = "direction = \"write\"\ntransfer_size = \"128B\"\ntlp_payload = \"128B\"\n\
             device_offset = 1\n";
    let sizes: Vec<u32> = tlps_up(&scenario("mps = 256", "dma_unit = \"8B\"", w))
        .iter()
        .map(|t| t.1)
        .take(4)
        .collect();
    assert_eq!(sizes, [127, 1, 127, 1]);
}

#[test]
fn descriptors_and_statuses_are_tlps_around_each_transfer_but_not_its_data() {
    let device = "descriptor = \"16B\"\nstatus_writeback = \"8B\"";
    let w = "direction = \"write\"\ntransfer_size = \"256B\"\noutstanding = 1\n\
             window = \"4KiB\"\n";
    let text = scenario("mps = 256", device, w);
    let up = tlps_up(&text);
    assert!(up.len() > 300);
    for (i, three) in up.chunks_exact(3).take(100).enumerate() {
        assert_eq!(three[0], (TlpKind::MRd, 16, 0), "the descriptor first");
        assert_eq!(
            three[1],
            (TlpKind::MWr, 256, (i as u32 % 16) * 256),
            "then the data"
        );
        assert_eq!(three[2], (TlpKind::MWr, 8, 0), "then the status");
    }
    let r = simulate(&text);
    let up = &r.links[1];
    let ratio = up.payload_gbps / r.flows[0].throughput_gbps;
    assert!(
        close(ratio, 264.0 / 256.0, 0.01),
        "{ratio}: status bytes are not the flow's"
    );
    // A read: descriptor, data request, status; the descriptor's completion does not
    // count, and the read's latency counts from the transfer's start (the descriptor's
    // round trip too).
    let w = "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 1\n";
    let kinds: Vec<(TlpKind, u32)> = tlps_up(&scenario("", device, w))
        .iter()
        .map(|t| (t.0, t.1))
        .take(6)
        .collect();
    assert_eq!(
        kinds,
        [
            (TlpKind::MRd, 16),
            (TlpKind::MRd, 64),
            (TlpKind::MWr, 8),
            (TlpKind::MRd, 16),
            (TlpKind::MRd, 64),
            (TlpKind::MWr, 8)
        ]
    );
    let with = simulate(&scenario("", device, w));
    let without = simulate(&scenario("", "", w));
    let down = with.links[0].payload_gbps / with.flows[0].throughput_gbps;
    assert!(close(down, 80.0 / 64.0, 0.01), "{down}");
    let lat = |r: &RunResult| r.flows[0].latency_ns.mean.unwrap();
    assert!(
        lat(&with) > lat(&without) + 300.0,
        "{} {}",
        lat(&with),
        lat(&without)
    );
}

#[test]
fn an_engine_run_writer_rings_its_doorbell_behind_the_data() {
    // An endpoint in the domain below a non-transparent bridge writes into its root
    // complex and rings the bridge's doorbell after every second transfer.
    let text = |device: &str| {
        format!(
            "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\n\
             [[root_complex]]\nname = \"rp\"\n[[ntb]]\nname = \"nt\"\n\
             [[root_complex]]\nname = \"h\"\n\
             [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n{device}\n\
             [[link]]\nbetween = [\"rp\", \"nt\"]\n[[link]]\nbetween = [\"nt\", \"h\"]\n\
             [[link]]\nbetween = [\"h\", \"ep\"]\nwidth = 4\n\
             [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
             target = \"h\"\ndirection = \"write\"\ntransfer_size = \"256B\"\n\
             doorbell_every = 2\n"
        )
    };
    for device in ["", "dma_engines = 1\nrequest_cost = \"40ns\""] {
        let r = simulate(&text(device));
        let transfers = r.flows[0].bytes / 256;
        let interrupts = r.flows[0].interrupts;
        assert!(transfers > 100, "{device}: {transfers}");
        assert!(
            interrupts.abs_diff(transfers / 2) <= 2,
            "{interrupts} for {transfers}"
        );
    }
}

#[test]
fn device_and_pattern_mistakes_get_one_clear_line() {
    let cases = [
        ("dma_engines = 0", "", "dma_engines"),
        ("dma_unit = \"12B\"", "", "dma_unit"),
        ("request_cost = { read = \"fast\" }", "", "request_cost"),
        ("request_cost = { reads = \"1ns\" }", "", "reads"),
        ("descriptor = \"3B\"", "", "descriptor"),
        ("", "pattern = \"zigzag\"", "sequential, random"),
        ("", "cache = \"tepid\"", "warm, cold"),
        ("", "host_offset = 5000", "host_offset"),
        ("", "window = \"64B\"", "window"),
        ("", "direction = \"sideways\"", "alternate, write-read"),
    ];
    for (device, workload, needle) in cases {
        let w = if workload.starts_with("direction") {
            format!("{workload}\ntransfer_size = \"100B\"\n")
        } else {
            format!("direction = \"read\"\ntransfer_size = \"100B\"\n{workload}\n")
        };
        let e = load_str(&scenario("", device, &w), "dev.toml")
            .unwrap_err()
            .to_string();
        assert!(e.contains(needle), "{device} {workload}: {e}");
        assert_eq!(e.lines().count(), 1, "{e}");
    }
    // Mixed directions run on a DMA endpoint only.
    let text = scenario("", "", "direction = \"read\"\ntransfer_size = \"64B\"\n").replace(
        "[[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n",
        "[[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"ep\"\n\
         direction = \"alternate\"\ntransfer_size = \"64B\"\n[[workload]]\nname = \"x\"\n\
         kind = \"dma\"\nendpoint = \"ep\"\n",
    );
    let e = load_str(&text, "dev.toml").unwrap_err().to_string();
    assert!(e.contains("alternate") && e.contains("DMA endpoint"), "{e}");
}

#[test]
fn transfer_cost_per_kib_holds_the_engine_in_proportion_to_the_size() {
    // One read in flight: 2 KiB at 100 ns per KiB adds exactly 200 ns to its latency,
    // 512 B adds 50 ns.
    for (size, added) in [("2KiB", 200.0), ("512B", 50.0)] {
        let w = format!("direction = \"read\"\ntransfer_size = \"{size}\"\noutstanding = 1\n");
        let base = simulate(&scenario("", "dma_engines = 1", &w));
        let dev = "dma_engines = 1\ntransfer_cost_per_kib = { read = \"100ns\" }";
        let slow = simulate(&scenario("", dev, &w));
        let whole = |r: &RunResult| r.flows[0].transfer_latency_ns.mean.unwrap();
        assert!(
            (whole(&slow) - whole(&base) - added).abs() < 0.1,
            "{size}: {} vs {}",
            whole(&slow),
            whole(&base)
        );
    }
    // Many in flight: one engine finishes one 1 KiB write (4 MWr) per 100 ns + 4 x 20 ns
    // (45.5 Gb/s; its MWrs take 71 ns of the x16 link).
    let dev = "dma_engines = 1\ntransfer_cost_per_kib = \"100ns\"\nrequest_cost = \"20ns\"";
    let w = "direction = \"write\"\ntransfer_size = \"1KiB\"\noutstanding = 8\n";
    let r = simulate(&scenario("mps = 256", dev, w));
    let expect = 1.0 / 180e-9;
    let got = transfers_per_s(&r, 1024.0);
    assert!(close(got, expect, 0.01), "{got} vs {expect}");
}

#[test]
fn latency_per_kib_adds_to_the_latency_and_holds_no_engine() {
    // One read in flight: 2 KiB at 100 ns per KiB adds exactly 200 ns to its latency.
    let one = "direction = \"read\"\ntransfer_size = \"2KiB\"\noutstanding = 1\n";
    let base = simulate(&scenario("", "dma_engines = 1", one));
    let dev = "dma_engines = 1\nlatency_per_kib = { read = \"100ns\" }";
    let slow = simulate(&scenario("", dev, one));
    let whole = |r: &RunResult| r.flows[0].transfer_latency_ns.mean.unwrap();
    assert!((whole(&slow) - whole(&base) - 200.0).abs() < 0.1);
    // Many in flight: it is pipelined, so the rate is the engine's alone (as without it).
    let many = "direction = \"write\"\ntransfer_size = \"1KiB\"\noutstanding = 8\n";
    let dev = "dma_engines = 1\nrequest_cost = \"20ns\"\ntransfer_cost = \"100ns\"";
    let plain = transfers_per_s(&simulate(&scenario("mps = 256", dev, many)), 1024.0);
    let dev = format!("{dev}\nlatency_per_kib = \"1000ns\"");
    let piped = transfers_per_s(&simulate(&scenario("mps = 256", &dev, many)), 1024.0);
    assert!(close(piped, plain, 0.01), "{piped} vs {plain}");
}

#[test]
fn mixed_sizes_with_latency_per_kib_lose_no_transfer() {
    // Two flows on one endpoint, 64 B and 4 KiB reads: a size-dependent latency lets a
    // small transfer overtake a large one in the device; both keep completing, and a 64 B
    // read's latency stays far below a 4 KiB one's 2 us extra.
    let w = "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 4\n\
             [[workload]]\nname = \"big\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
             direction = \"read\"\ntransfer_size = \"4KiB\"\noutstanding = 4\n";
    let r = simulate(&scenario(
        "",
        "dma_engines = 2\nlatency_per_kib = \"500ns\"",
        w,
    ));
    let (small, big) = (&r.flows[0], &r.flows[1]);
    assert!(
        small.transfers > 100 && big.transfers > 10,
        "{} {}",
        small.transfers,
        big.transfers
    );
    let mean = |f: &tlpsim::sim::result::FlowResult| f.transfer_latency_ns.mean.unwrap();
    assert!(
        mean(small) < 1500.0 && mean(big) > 2000.0,
        "{} {}",
        mean(small),
        mean(big)
    );
}

#[test]
fn partial_words_overlap_the_data_time_and_the_longer_counts() {
    // One read engine, 63 B reads (one partial 64 B word): 1000 ns per KiB is 61.5 ns of
    // data time; a partial word's 30 ns hides under it, 100 ns does not.
    for (partial, engine_ns) in [(30.0, 63.0 * 1000.0 / 1024.0), (100.0, 100.0)] {
        let device = format!(
            "dma_engines = 1\ndma_unit = \"64B\"\ntransfer_cost_per_kib = \"1000ns\"\n\
             partial_unit_cost = \"{partial}ns\""
        );
        let w = "direction = \"read\"\ntransfer_size = \"63B\"\noutstanding = 64\n";
        let r = simulate(&scenario("", &device, w));
        let got = transfers_per_s(&r, 63.0);
        assert!(close(got, 1e9 / engine_ns, 0.01), "{partial}: {got}");
    }
}
