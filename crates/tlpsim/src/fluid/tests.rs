use super::*;
use crate::pcie::flow_control::FcClass;
use crate::scenario::load_str;

/// The system a scenario's text describes.
pub(super) fn system(text: &str) -> System {
    load_str(text, "<test>").expect("scenario loads")
}

/// The model of `sys` with every workload's streams.
pub(super) fn streams_of(sys: &System) -> Model<'_> {
    let mut m = Model::new(sys);
    for (i, w) in sys.workloads.iter().enumerate() {
        m.workload(i, w).expect("runs");
    }
    m
}

/// One endpoint under a root complex on a Gen3 x8 link, with `workloads` appended.
fn one_link(workloads: &str) -> System {
    switched("", 8, workloads)
}

/// Endpoints `ep` (`width` lanes) and `ep2` (eight) under switch `sw` (with the `switch`
/// lines), the switch under a root complex on a Gen3 x8 link, with `workloads` appended.
fn switched(switch: &str, width: u32, workloads: &str) -> System {
    system(&format!(
        r#"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "500ns"
[[endpoint]]
name = "ep"
kind = "dma"
tags = 256
[[endpoint]]
name = "ep2"
kind = "dma"
[[switch]]
name = "sw"
{switch}
[[link]]
between = ["rc", "sw"]
gen = 3
width = 8
[[link]]
between = ["sw", "ep"]
gen = 3
width = {width}
[[link]]
between = ["sw", "ep2"]
gen = 3
width = 8
{workloads}
"#
    ))
}

const WRITE: &str = r#"
[[workload]]
name = "w"
kind = "dma"
endpoint = "ep"
direction = "write"
transfer_size = "4KiB"
"#;

#[test]
fn a_lone_write_fills_its_link_by_the_closed_form() {
    let r = run(&one_link(WRITE)).expect("runs").result;
    // 8 GT/s x8, 128b/130b, SKP off the top; MWr of 256 B: 16 B header + 8 framing; a
    // one-way write carries no DLLPs on its own direction.
    let l = &one_link(WRITE).links[0];
    let skp = l.gen.encoding().skp_fraction();
    let cap = 8.0 * 8.0 * 128.0 / 130.0 * (1.0 - skp);
    let expect = cap * 256.0 / (256.0 + 16.0 + 8.0);
    let got = r.flows[0].throughput_gbps;
    assert!((got - expect).abs() < 1e-6 * expect, "{got} vs {expect}");
    assert_eq!(r.flows[0].bottleneck.kind, "link");
    assert!(r.flows[0].latency_ns.p99.is_none());
}

#[test]
fn two_writers_through_one_link_get_half_each() {
    let two = format!(
        "{WRITE}{}",
        WRITE
            .replace("\"w\"", "\"w2\"")
            .replace("\"ep\"", "\"ep2\"")
    );
    let one = run(&one_link(WRITE)).expect("runs").result.flows[0].throughput_gbps;
    let r = run(&one_link(&two)).expect("runs").result;
    for f in &r.flows {
        assert!(
            (f.throughput_gbps - one / 2.0).abs() < 1e-6 * one,
            "{}",
            f.throughput_gbps
        );
        assert_eq!(f.bottleneck.resource, "rc-sw up");
    }
}

#[test]
fn a_rate_caps_a_flow_and_the_other_takes_the_rest() {
    let capped = WRITE.replace("transfer_size", "rate = \"1GB/s\"\ntransfer_size");
    let two = format!(
        "{capped}{}",
        WRITE
            .replace("\"w\"", "\"w2\"")
            .replace("\"ep\"", "\"ep2\"")
    );
    let one = run(&one_link(WRITE)).expect("runs").result.flows[0].throughput_gbps;
    let r = run(&one_link(&two)).expect("runs").result;
    assert!((r.flows[0].throughput_gbps - 8.0).abs() < 1e-9);
    assert_eq!(r.flows[0].bottleneck.kind, "rate");
    assert!((r.flows[1].throughput_gbps - (one - 8.0)).abs() < 1e-6 * one);
}

#[test]
fn a_buffer_shared_in_turn_holds_only_the_inputs_that_send_their_turn() {
    let sender = |stream: usize, input: usize, tlps: f64, most: f64| adjust::Sender {
        stream,
        input: [input].into(),
        tlps,
        most,
    };
    // A greedy input of two streams, a paced one and another greedy one: the paced input
    // (a tenth of the buffer's TLPs) is not held, the greedy ones take equal turns of the
    // rest, 0.45 each, split in their inputs by their TLPs.
    let on = [
        sender(0, 1, 3.0, f64::INFINITY),
        sender(1, 1, 1.0, f64::INFINITY),
        sender(2, 2, 1.0, 1.0),
        sender(3, 3, 5.0, 9.0),
    ];
    let parts: Vec<_> = adjust::turns(&on)
        .into_iter()
        .map(|(s, p)| (s, p.map(|p| (p * 1e6).round() / 1e6)))
        .collect();
    assert_eq!(
        parts,
        [
            (0, Some(0.3375)),
            (1, Some(0.1125)),
            (2, None),
            (3, Some(0.45))
        ]
    );
    // Nothing comes in yet: each may fill the buffer.
    let on = [sender(0, 1, 0.0, 6.0), sender(1, 2, 0.0, 8.0)];
    assert_eq!(adjust::turns(&on), [(0, Some(1.0)), (1, Some(1.0))]);
}

#[test]
fn paced_flows_beside_a_greedy_writer_into_a_full_memory_meet_their_rates() {
    let sys = system(include_str!(
        "../../../../tests/data/paced_writer_in_a_shared_buffer.toml"
    ));
    let r = run(&sys).expect("runs").result;
    let gbps: Vec<f64> = r.flows.iter().map(|f| f.throughput_gbps).collect();
    // w1's two streams and w2's reads at 0.5 GB/s each; w0 takes the rest of 40 Gb/s.
    for (got, want) in gbps.iter().zip([28.0, 8.0, 4.0]) {
        assert!((got - want).abs() < 1e-3 * want, "{gbps:?}");
    }
    assert_eq!(r.flows[0].bottleneck.kind, "memory");
    assert_eq!(r.flows[1].bottleneck.kind, "rate");
    assert_eq!(r.flows[2].bottleneck.kind, "rate");
}

#[test]
fn a_tag_limited_read_runs_at_bytes_in_flight_over_its_round_trip() {
    let read = r#"
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "512B"
outstanding = 1
"#;
    let sys = one_link(read);
    let out = run(&sys).expect("runs");
    let f = &out.result.flows[0];
    assert_eq!(f.bottleneck.kind, "requests");
    // One 512 B request in flight: its round trip is the first byte's latency plus the
    // rest of its completions (64 B each, the RCB) at the link's pace.
    let m = Model::new(&sys);
    let (ep, rc) = (sys.node("ep").unwrap(), sys.node("rc").unwrap());
    let (req, cpl) = (m.tree.path(ep, rc).unwrap(), m.tree.path(rc, ep).unwrap());
    let (first, rtt) = m.read_round_trip(&req, &cpl, 512);
    assert!(rtt > 500e-9 && rtt > first);
    let expect = 512.0 / rtt * 8.0 / 1e9;
    assert!((f.throughput_gbps - expect).abs() < 1e-9 * expect);
    assert_eq!(out.unloaded_latency_ns[0], Some(first * 1e9));
}

/// A DMA endpoint reading 4 KiB at a time from a root complex with `memory` lines, on
/// a Gen3 x8 link, with `more` appended.
fn with_memory(memory: &str, more: &str) -> System {
    system(&format!(
        r#"
[[root_complex]]
name = "rc"
memory_read_latency = "500ns"
{memory}
[[endpoint]]
name = "ep"
kind = "dma"
[[link]]
between = ["rc", "ep"]
gen = 3
width = 8
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
outstanding = 1
{more}"#
    ))
}

#[test]
fn a_memory_slower_than_the_link_paces_a_reads_completions_after_the_first() {
    let round_trip = |sys: &System| {
        let m = Model::new(sys);
        let (ep, rc) = (sys.node("ep").unwrap(), sys.node("rc").unwrap());
        let (req, cpl) = (m.tree.path(ep, rc).unwrap(), m.tree.path(rc, ep).unwrap());
        (m.read_round_trip(&req, &cpl, 4096), m.cpl_size(rc) as f64)
    };
    let ((first, whole), _) = round_trip(&with_memory("", ""));
    // 2 GB/s, a quarter of the link: each completion's data passes it after the latency.
    let ((slow_first, slow_whole), cs) =
        round_trip(&with_memory(r#"memory_bandwidth = "2GB/s""#, ""));
    assert!((slow_first - (first + cs / 2e9)).abs() < 1e-15);
    assert!((slow_whole - slow_first - (4096.0 - cs) / 2e9).abs() < 1e-15);
    // 100 GB/s, faster than the link: the link paces the rest, as with no memory limit.
    let ((fast_first, fast_whole), _) =
        round_trip(&with_memory(r#"memory_bandwidth = "100GB/s""#, ""));
    assert!((fast_whole - fast_first - (whole - first)).abs() < 1e-15);
}

#[test]
fn what_it_cannot_run_is_refused_in_one_line() {
    let mut sys = one_link(WRITE);
    sys.links[0].ber = 1e-12;
    let e = run(&sys).unwrap_err().to_string();
    assert!(e.contains("bit error rate") && e.contains("--engine des") && !e.contains('\n'));
}

#[test]
fn the_json_names_the_engine_and_the_unloaded_latency() {
    let out = run(&one_link(WRITE)).expect("runs");
    let v: serde_json::Value = serde_json::from_str(&out.to_json()).unwrap();
    assert_eq!(v["engine"], "fluid");
    assert!(v["flows"][0]["unloaded_latency_ns"].as_f64().unwrap() > 0.0);
    assert!(v["flows"][0]["latency_ns"]["p50"].is_null());
}

/// Two readers of host memory under one Gen2 x1 link: the root complex's completions for
/// both leave through its one egress queue, a FIFO.
fn two_readers(tags: (u32, u32)) -> System {
    system(&format!(
        r#"
[pcie]
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw"
[[link]]
between = ["rc", "sw"]
gen = 2
width = 1
[[endpoint]]
name = "ep0"
kind = "dma"
tags = {}
[[endpoint]]
name = "ep1"
kind = "dma"
tags = {}
[[link]]
between = ["sw", "ep0"]
gen = 3
width = 8
[[link]]
between = ["sw", "ep1"]
gen = 3
width = 8
[[workload]]
name = "r0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "64KiB"
outstanding = 8
[[workload]]
name = "r1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "64KiB"
outstanding = 8
"#,
        tags.0, tags.1
    ))
}

#[test]
fn readers_behind_one_fifo_share_its_link_by_their_windows() {
    let r = run(&two_readers((4, 16))).expect("runs").result;
    let (a, b) = (r.flows[0].throughput_gbps, r.flows[1].throughput_gbps);
    // Each waits the same queueing delay, far longer than its round trip: rates in the
    // ratio of the requests in flight, 4 to 16, and the link full.
    assert!((b / a - 4.0).abs() < 0.1, "{a} {b}");
    assert_eq!(r.flows[0].bottleneck.kind, "link");
    assert_eq!(r.flows[0].bottleneck.resource, "rc-sw down");
    let even = run(&two_readers((8, 8))).expect("runs").result;
    let total = even.flows[0].throughput_gbps + even.flows[1].throughput_gbps;
    assert!((a + b - total).abs() < 1e-6 * total, "{} {total}", a + b);
    assert!((even.flows[0].throughput_gbps - even.flows[1].throughput_gbps).abs() < 1e-9);
}

/// A reader behind a Gen2 x1 link with 32 KiB of reads in flight and, beside it, a reader
/// of 4 KiB at a time on a fast link (`slow` false: the first reader left out).
fn behind_a_backlog(slow: bool) -> System {
    let first = if slow {
        r#"
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "read"
transfer_size = "16KiB"
outstanding = 2
"#
    } else {
        ""
    };
    system(&format!(
        r#"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw0"
[[link]]
between = ["rc", "sw0"]
gen = 5
width = 8
[[endpoint]]
name = "ep0"
kind = "dma"
tags = 256
[[link]]
between = ["sw0", "ep0"]
gen = 2
width = 1
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 32
[[link]]
between = ["sw0", "ep1"]
gen = 3
width = 16
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 1
{first}"#
    ))
}

#[test]
fn completions_wait_behind_a_slow_readers_backlog_in_the_root_complexs_queue() {
    // The first reader's completions fill the switch's buffer before its Gen2 x1 link and
    // back up into the root complex's one egress queue, where the other's wait behind them
    // (0.61 Gb/s against 28.7 alone; the simulator gives it 0.77 at 1 ms, its requests
    // probably in step with the first reader's transfers). Both name the switch's
    // completion credits, which the first reader's backlog holds, as what it waits for.
    let alone = run(&behind_a_backlog(false)).expect("runs").result;
    let r = run(&behind_a_backlog(true)).expect("runs").result;
    let (w1, w1_alone) = (r.flows[0].throughput_gbps, alone.flows[0].throughput_gbps);
    assert!(
        w1 < 0.1 * w1_alone && w1 > 0.3,
        "{w1} against {w1_alone} alone"
    );
    assert_eq!(r.flows[0].bottleneck.resource, "rc -> sw0 CplH credits");
    assert_eq!(r.flows[0].bottleneck.kind, "credits");
    assert_eq!(r.flows[1].bottleneck.resource, "sw0-ep0 down");
}

#[test]
fn a_rate_its_link_cannot_reach_leaves_a_reader_as_without_one() {
    let text = include_str!("../../../../tests/data/one_transfer_reader_backlog.toml");
    let gbps = |text: &str| -> Vec<f64> {
        let r = run(&system(text)).expect("runs").result;
        r.flows.iter().map(|f| f.throughput_gbps).collect()
    };
    let with_rate = |rate: &str| {
        text.replace(
            "transfer_size = \"64KiB\"",
            &format!("transfer_size = \"64KiB\"\nrate = \"{rate}\""),
        )
    };
    // 4 GB/s is no slower than the Gen1 x16 link's wire: w1's completions still back up
    // and w0 still waits behind them (5.1 Gb/s; 11.7 where the rate hid the backlog).
    let free = gbps(text);
    assert_eq!(gbps(&with_rate("4GB/s")), free);
    assert!(free[0] < 6.0, "{free:?}");
    // A rate below it paces the reader.
    let paced = gbps(&with_rate("1GB/s"));
    assert!((paced[1] - 8.0).abs() < 1e-6, "{paced:?}");
}

#[test]
fn a_switchs_completion_buffer_has_room_for_one_reader_beside_what_the_others_hold() {
    // Both readers' completions come into sw0 over rc -> sw0 and share its 64 CplH.
    let sys = behind_a_backlog(true);
    let m = streams_of(&sys);
    let (mine, other) = (&m.streams[1], &m.streams[0]);
    let (bl, theirs) = (
        mine.backlog.as_ref().unwrap(),
        other.backlog.as_ref().unwrap(),
    );
    let Hop::Chan(c) = bl.path.hops[0] else {
        panic!("the first hop is a link")
    };
    let sw0 = bl.path.nodes[1];
    let whole = m.room(sw0, c, (1, bl), &[0.0, 0.0]);
    assert_eq!(whole, m.buffer(sw0, FcClass::Completion, bl.tlp));
    assert_eq!(whole, 64.0 * bl.tlp);
    // At 1 GB/s the other holds its TLPs' headers over their credit round trip.
    let tlps = other.mix.tlps[&c] * 1e9;
    let hold = m.credit_round_trip(&theirs.path, 0, TlpKind::CplD, theirs.tlp as u32);
    let room = m.room(sw0, c, (1, bl), &[1e9, 0.0]);
    assert!(tlps * hold > 1.0, "{}", tlps * hold);
    assert!(
        (whole - room - tlps * hold * bl.tlp).abs() < 1e-9 * whole,
        "{room} of {whole}"
    );
}

#[test]
fn readers_into_a_switch_share_its_completion_buffer_and_leave_writers_the_link() {
    // Both readers' completions come into sw0 over rc -> sw0 and share its 64 CplH.
    let sys = behind_a_backlog(true);
    let m = streams_of(&sys);
    let pools = m.pools();
    assert_eq!(pools.len(), 1);
    let (c, users) = (pools[0].chan, &pools[0].users);
    assert_eq!(users.len(), 2);
    let bl = m.streams[0].backlog.as_ref().unwrap();
    assert_eq!(bl.path.hops[0], Hop::Chan(c));
    // Each byte holds its TLP's header over the credit round trip.
    let hold = m.credit_round_trip(&bl.path, 0, TlpKind::CplD, bl.tlp as u32);
    assert!((users[0].1 - m.streams[0].mix.tlps[&c] * hold).abs() < 1e-18);
    let per = |r: &[f64]| users.iter().map(|&(s, h, _)| r[s] * h).sum::<f64>();
    // As resources of the solve: with the link's wire to spare, the readers fill the 64
    // headers between them, one TLP each in turn, and their bound names the link. A
    // writer on the same link takes the rest of its wire: the buffer holds completions
    // only.
    let inf = f64::INFINITY;
    let one = |s: usize| {
        let t = m.streams[s].mix.tlps[&c];
        (c, m.streams[s].mix.uses[&c], 1.0 / t)
    };
    let wire_per = |s: usize| m.streams[s].mix.uses[&c];
    let mut demands: Vec<Demand> = (0..2)
        .map(|s| Demand {
            uses: vec![one(s)],
            limit: inf,
        })
        .collect();
    demands.push(Demand {
        uses: vec![(c, 1.0, 128.0)],
        limit: inf,
    });
    let chans = 2 * sys.links.len();
    let extra = pool::resources(&pools, chans, &mut demands[..]);
    // Its headers, its data units, and its time, which the first reader's runs (a 16 KiB
    // transfer's requests at once, into a slow link) hold up; this test is of the
    // credits, so the time is left unbounded.
    assert!(!pools[0].serial.is_empty());
    assert_eq!(extra, vec![64.0, 1024.0, 1.0]);
    let mut cap = vec![1e12; chans];
    cap.extend(&extra);
    cap[chans + 2] = f64::INFINITY;
    let (r, b) = pool::solve(&pools, &cap, &demands);
    let held = per(&r);
    assert!((held - 64.0).abs() < 1e-9 * 64.0, "{held} headers held");
    let tlp = |s: usize| r[s] * m.streams[s].mix.tlps[&c];
    assert!((tlp(0) - tlp(1)).abs() < 1e-9 * tlp(0), "{r:?}");
    assert_eq!((b[0], b[1]), (Bound::Resource(c), Bound::Resource(c)));
    let readers = r[0] * wire_per(0) + r[1] * wire_per(1);
    assert!(
        (r[2] - (1e12 - readers)).abs() < 1e-9 * 1e12,
        "the writer gets {} of {}",
        r[2],
        1e12 - readers
    );
    assert_eq!(b[2], Bound::Resource(c));
    // The run names the shared buffer as an estimate of both readers.
    for e in &run(&sys).expect("runs").estimates {
        assert!(
            e.iter()
                .any(|l| l.starts_with("pool:") && l.contains(" rc-sw0 down ")),
            "{e:?}"
        );
    }
}

#[test]
fn a_transfers_requests_sent_at_once_owe_one_ack_per_timer_interval_they_span() {
    // Two 16 KiB transfers of 32 requests each, all 64 out at once (256 tags): at each link
    // up, a transfer's requests owe an Ack and an UpdateFC once per Ack timer interval
    // their burst spans, not each; one at a time (8 tags), each owes its own.
    let read = |tags: u32| {
        format!(
            r#"
[pcie]
mps = 128
mrrs = 512
[[root_complex]]
name = "rc"
[[switch]]
name = "sw"
[[endpoint]]
name = "ep"
kind = "dma"
tags = {tags}
[[link]]
between = ["rc", "sw"]
gen = 3
width = 8
[[link]]
between = ["sw", "ep"]
gen = 4
width = 1
[[workload]]
name = "w"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "16KiB"
outstanding = 2
"#
        )
    };
    for (tags, burst) in [(256, 32.0), (8, 1.0)] {
        let sys = system(&read(tags));
        let m = streams_of(&sys);
        let s = &m.streams[0];
        assert_eq!(s.burst, burst);
        let owed = m.owed();
        let mut links_up = 0;
        for &(c, n) in &owed[0] {
            if s.mix.classes[&c] != hol::bit(FcClass::NonPosted) {
                continue;
            }
            links_up += 1;
            let requests = s.mix.tlps[&c];
            if burst == 1.0 {
                assert_eq!(n, requests);
                continue;
            }
            let l = &sys.links[c / 2];
            let sym = ack_latency_symbols(l.gen, l.width, sys.pcie.mps);
            let interval = secs(SimTime::from_ticks(sym as u64 * symbol_ticks(l.gen)));
            let span = m.ser(c, s.mix.uses[&c] / requests * burst);
            let expected = requests / burst * (1.0 + span / interval);
            assert!(
                (n - expected).abs() < 1e-12 * expected,
                "{n} against {expected}"
            );
            assert!(n < requests / 4.0, "{n} of {requests}");
        }
        assert_eq!(links_up, 2);
    }
}

#[test]
fn read_requests_wait_behind_the_posted_writes_a_slow_target_holds() {
    // The writes back up from the BAR's 4 GB/s through the switch's posted buffer to the
    // root complex's egress, and a read request may not pass them (the simulator: 25.4
    // Gb/s of reads; their window over the unloaded round trip alone gives 106).
    let text = include_str!("../../../../scenarios/gpu-bar-through-switch.toml");
    let r = run(&system(text)).expect("runs").result;
    let reads = r.flows[1].throughput_gbps;
    assert!(reads > 24.0 && reads < 26.0, "{reads}");
    assert_eq!(r.flows[0].bottleneck.kind, "memory");
}

#[test]
fn a_switch_frees_a_posted_credit_as_the_tlp_starts_out() {
    // The simulator's switch frees the ingress buffer when the TLP starts on its egress:
    // its latency after the first byte if it cuts through, after the last otherwise; not
    // after the next link's wire time.
    let trip = |fwd: &str, width: u32| {
        let sys = switched(
            &format!("forwarding = \"{fwd}\"\nlatency = \"100ns\""),
            width,
            WRITE,
        );
        let m = Model::new(&sys);
        let p = m
            .tree
            .path(sys.node("ep").unwrap(), sys.node("rc").unwrap())
            .unwrap();
        let Hop::Chan(c) = p.hops[0] else {
            panic!("a link first")
        };
        let ser = m.ser(c, m.wire(c, TlpKind::MWr, 256));
        let back = m.credit_return(c, TlpKind::MWr, 256);
        (m.credit_round_trip(&p, 0, TlpKind::MWr, 256), back, ser)
    };
    let (cut, back, ser) = trip("cut-through", 8);
    assert!((cut - (back - ser + 100e-9)).abs() < 1e-15);
    let (stored, back, _) = trip("store-and-forward", 8);
    assert!((stored - (back + 100e-9)).abs() < 1e-15);
    // A faster egress than the ingress: the switch stores the TLP first.
    let (up_faster, back, _) = trip("cut-through", 4);
    assert!((up_faster - (back + 100e-9)).abs() < 1e-15);
}

#[test]
fn a_readers_requests_into_a_switch_are_bound_by_its_nph_credits_behind_the_next_link() {
    // 16 KiB reads at MRRS 512: 32 requests of 512 B each; the switch advertises 64 NPH.
    let sys = switched(
        "",
        8,
        r#"
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "16KiB"
outstanding = 4
"#,
    );
    let m = streams_of(&sys);
    let st = &m.streams[0];
    let nph: Vec<&Limit> = st
        .limits
        .iter()
        .filter(|l| l.resource == "ep -> sw NPH credits")
        .collect();
    assert_eq!(nph.len(), 1, "one switch on the requests' way");
    let l = nph[0];
    let req = m
        .path(
            sys.workloads[0].source,
            sys.workloads[0].target,
            &sys.workloads[0],
        )
        .unwrap();
    let (Hop::Chan(into), Hop::Chan(next)) = (req.hops[0], req.hops[1]) else {
        panic!("two links up")
    };
    let rtt = m.credit_round_trip(&req, 0, TlpKind::MRd, 0);
    // Each credit stands for one request's 512 bytes, out for the credit's round trip.
    assert_eq!(l.window, Some((64.0 * 512.0, rtt)));
    assert!((l.rate - 64.0 * 512.0 / rtt).abs() < 1e-9 * l.rate);
    // Held until the request starts on the link to the root: a window behind its FIFO,
    // shared with every stream's requests into the switch over the same link.
    assert_eq!(l.at, Some(next));
    assert_eq!(l.shared, Some((into, FcClass::NonPosted)));
    assert!(!l.hol);
}

#[test]
fn a_reader_waits_half_a_turn_of_the_other_inputs_at_a_full_round_robin_link() {
    // `r` reads with four tags from `ep`; `w` writes from `ep2`: both go up `sw -> rc`, each
    // through its own input of `sw`'s egress.
    let sys = switched(
        "",
        8,
        r#"
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
[[workload]]
name = "w"
kind = "dma"
endpoint = "ep2"
direction = "write"
transfer_size = "16KiB"
"#,
    );
    let m = streams_of(&sys);
    let (r, w) = (&m.streams[0], &m.streams[1]);
    let c = *(r.mix.inputs.keys())
        .find(|c| w.mix.inputs.contains_key(c))
        .expect("a link they share");
    assert!(
        r.mix.inputs[&c].is_disjoint(&w.mix.inputs[&c]),
        "two inputs"
    );
    let cap: Vec<f64> = m.res.iter().map(|x| x.cap).collect();
    let bounds = [Bound::Limit, Bound::Resource(c)];
    // The writer fills the link: the reader waits half of one write's time per round trip.
    let full = [1e6, cap[c] / w.mix.uses[&c]];
    let t = m.turn_waits((&full, &bounds, &cap));
    let write = w.mix.uses[&c] / w.mix.tlps[&c] / cap[c];
    assert!(
        (t[0] - 0.5 * write).abs() < 1e-9 * write,
        "{} against {}",
        t[0],
        0.5 * write
    );
    assert_eq!(t[1], 0.0, "a writer's window has no round trip to wait in");
    // Below full, no turn waits.
    let half = [1e6, 0.5 * full[1]];
    assert_eq!(m.turn_waits((&half, &bounds, &cap))[0], 0.0);
    // The run names the reader's turns as an estimate, and the writer's share of the link
    // it fills as resting on it.
    let e = run(&sys).expect("runs").estimates;
    assert!(e[0].iter().any(|l| l.starts_with("turn:")), "{e:?}");
    assert_eq!(e[1], ["shares rc-sw up with r, whose rate is estimated"]);
}

#[test]
fn a_flow_on_the_closed_form_alone_carries_no_estimate() {
    let two = format!(
        "{WRITE}{}",
        WRITE
            .replace("\"w\"", "\"w2\"")
            .replace("\"ep\"", "\"ep2\"")
    );
    for sys in [one_link(WRITE), one_link(&two)] {
        let out = run(&sys).expect("runs");
        assert!(
            out.estimates.iter().all(Vec::is_empty),
            "{:?}",
            out.estimates
        );
        let v: serde_json::Value = serde_json::from_str(&out.to_json()).unwrap();
        assert_eq!(v["flows"][0]["estimates"], serde_json::json!([]));
        // Its band is the closed form's, about the rate.
        let g = v["flows"][0]["throughput_gbps"].as_f64().unwrap();
        let band = &v["flows"][0]["throughput_band_gbps"];
        let (lo, hi) = (band[0].as_f64().unwrap(), band[1].as_f64().unwrap());
        assert!(lo < g && ((hi / g).ln() - estimates::band(&[])).abs() < 1e-12);
    }
}

#[test]
fn readers_sharing_a_fifo_or_waiting_behind_a_backlog_name_the_estimate() {
    let out = run(&two_readers((4, 16))).expect("runs");
    for e in &out.estimates {
        assert!(
            e.iter()
                .any(|l| l.starts_with("queue:") && l.contains(" rc-sw down ")),
            "{e:?}"
        );
    }
    let out = run(&behind_a_backlog(true)).expect("runs");
    assert!(
        out.estimates[0].iter().any(|l| l.starts_with("backlog:")),
        "{:?}",
        out.estimates
    );
    // The reader alone has none.
    let alone = run(&behind_a_backlog(false)).expect("runs");
    assert!(alone.estimates[0]
        .iter()
        .all(|l| !l.starts_with("backlog:")));
}

#[test]
fn a_burst_within_its_credit_window_waits_for_no_credit() {
    let window = |per: f64, tlps: f64, rtt: f64, ser: f64| streams::Window {
        per,
        tlps,
        rtt,
        ser,
    };
    let held = streams::Held {
        rate: 64.0 * 64.0 / 200e-9,
        windows: vec![window(64.0, 64.0, 200e-9, 1e-9)],
    };
    // 64 TLPs in 64 credits go back to back; the 65th waits for the first's credit.
    assert_eq!(held.burst(4096.0), 0.0);
    assert!((held.burst(4160.0) - 200e-9).abs() < 1e-18);
    // 256 TLPs: three round trips, then the 63 after the third round's first at the pace.
    assert!((held.burst(16384.0) - (3.0 * 200e-9 + 63e-9)).abs() < 1e-18);
    // The longest wait of several windows.
    let two = streams::Held {
        windows: vec![
            window(64.0, 64.0, 200e-9, 1e-9),
            window(512.0, 4.0, 900e-9, 2e-9),
        ],
        ..held
    };
    assert!((two.burst(4096.0) - (900e-9 + 3.0 * 2e-9)).abs() < 1e-18);
}

#[test]
fn a_transfer_that_fits_a_switchs_completion_credits_comes_at_the_links_pace() {
    // Two 4 KiB transfers in flight through `sw`, whose CplH credits (64 unless `switch`
    // sets them) hold a transfer's 64 completions of 64 B (random fabric seed 1732).
    let whole_limit = |switch: &str| {
        let read = r#"
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
outstanding = 2
"#;
        let sys = switched(switch, 8, read);
        let m = streams_of(&sys);
        let l = (m.streams[0].limits.iter())
            .find(|l| {
                l.detail
                    .contains("from its first request to its last completion")
            })
            .expect("a whole-transfer limit")
            .clone();
        let (ep, rc) = (sys.node("ep").unwrap(), sys.node("rc").unwrap());
        let (req, cpl) = (m.tree.path(ep, rc).unwrap(), m.tree.path(rc, ep).unwrap());
        let (first, whole) = m.read_round_trip(&req, &cpl, 4096);
        let credits = m
            .hop_credits(&cpl, 0, 64, FcClass::Completion)
            .expect("finite");
        let Hop::Chan(c) = cpl.hops[0] else {
            panic!("a link first")
        };
        let ser = m.ser(c, m.wire(c, TlpKind::CplD, 64));
        (
            l.window.unwrap().1,
            first,
            whole,
            (credits.0, credits.2, ser),
        )
    };
    let (t, _, whole, (tlps, _, _)) = whole_limit("");
    assert_eq!(tlps, 64.0);
    assert!((t - whole).abs() < 1e-15, "{t} against the link's {whole}");
    // Eight credits: the 64 completions wait seven round trips and the last round's
    // seven TLPs after its first, not an eighth round trip for the first round (the whole
    // transfer over the window's rate).
    let (t, first, whole, (tlps, rtt, ser)) = whole_limit("credits = { cplh = 8 }");
    assert_eq!(tlps, 8.0);
    let expect = first + 7.0 * rtt + 7.0 * ser;
    assert!(
        t > whole && (t - expect).abs() < 1e-15,
        "{t} against {expect}"
    );
    assert!(
        8.0 * rtt - 7.0 * rtt - 7.0 * ser > 1e-9,
        "the two apart by {rtt} - 7 x {ser}"
    );
}

/// `with_memory`'s reader with `gbps` GB/s of memory (its window binds), and, with
/// `bursts`, `ep2` reading 64 KiB transfers whose requests all go out at once.
fn memory_shared(gbps: u32, bursts: bool) -> System {
    let other = r#"
[[endpoint]]
name = "ep2"
kind = "dma"
tags = 256
[[link]]
between = ["rc", "ep2"]
gen = 3
width = 8
[[workload]]
name = "big"
kind = "dma"
endpoint = "ep2"
direction = "read"
transfer_size = "64KiB"
outstanding = 1
"#;
    let memory = format!(r#"memory_bandwidth = "{gbps}GB/s""#);
    with_memory(&memory, if bursts { other } else { "" })
}

#[test]
fn a_window_behind_other_readers_bursts_at_the_memory_names_the_wait() {
    // The wait the `burst` line names for `r` at the memory, in ns, and the two readers'
    // rates in bytes per second.
    let wait = |gbps: u32| {
        let out = run(&memory_shared(gbps, true)).expect("runs");
        let line = (out.estimates[0].iter())
            .find(|l| l.starts_with("burst:") && l.contains("rc memory"))
            .unwrap_or_else(|| panic!("{:?}", out.estimates));
        let ns: f64 = (line
            .split("about ")
            .nth(1)
            .and_then(|w| w.split(' ').next()))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{line}"));
        let rate = |f: usize| out.result.flows[f].throughput_gbps * 1e9 / 8.0;
        (ns, rate(0), rate(1))
    };
    // At 40 GB/s: the M/G/1 mean residual of `big`'s 64 KiB bursts, each 1.6 us of the
    // memory's time, over the part of it the two leave free.
    let cap = 40e9;
    let (ns, r, big) = wait(40);
    let expect = big * 65536.0 / cap / cap / 2.0 / (1.0 - (r + big) / cap) * 1e9;
    assert!(
        expect > 10.0 && (ns - expect).abs() <= 0.5,
        "{ns} against {expect}"
    );
    // At 10 GB/s the memory is nearly full and the M/G/1 wait longer than `big` can queue:
    // it is what `big` queues, 64 KiB at 10 GB/s.
    let (ns, _, _) = wait(10);
    assert!((ns - 6554.0).abs() < 1.0, "{ns}");
    // Alone it waits behind nothing.
    let alone = run(&memory_shared(10, false)).expect("runs");
    assert!(
        alone.estimates[0].iter().all(|l| !l.starts_with("burst:")),
        "{:?}",
        alone.estimates
    );
}

/// One DMA endpoint with `tags` tags reading 256 B at a time from a root complex on a Gen3
/// x4 link.
fn reads_with_tags(tags: u32) -> System {
    system(&format!(
        r#"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "500ns"
[[endpoint]]
name = "ep"
kind = "dma"
tags = {tags}
[[link]]
between = ["rc", "ep"]
gen = 3
width = 4
[[workload]]
name = "r"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "256B"
outstanding = 64
"#
    ))
}

#[test]
fn a_window_within_five_per_cent_of_its_bottleneck_is_named_near() {
    let near = |tags: u32| {
        let out = run(&reads_with_tags(tags)).expect("runs");
        let kind = out.result.flows[0].bottleneck.kind;
        (
            kind,
            out.estimates[0].iter().any(|l| l.starts_with("near:")),
        )
    };
    // Six reads in flight bind it; seven allow a little more than the link (near); sixteen
    // far more.
    assert_eq!(near(6), ("requests", false));
    assert_eq!(near(7), ("link", true));
    assert_eq!(near(16), ("link", false));
}
