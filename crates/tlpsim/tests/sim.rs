//! The simulator against the closed form, the audit, determinism and error behaviour.

use tlpsim::analytic::{DllpPolicy, LinkBandwidth, LinkRequest};
use tlpsim::scenario::load_str;
use tlpsim::sim::{result::RunResult, run, run_with_progress, RunError, PROGRESS_EVERY};

/// Closed form for 64 KiB transfers (MPS-sized writes, MRRS-sized reads).
fn closed(gen: i64, width: i64, mps: i64) -> LinkBandwidth {
    let req = LinkRequest {
        gen,
        width,
        mps,
        payload: Some(65536),
        ..LinkRequest::default()
    };
    tlpsim::link_bandwidth(&req).unwrap()
}

/// A root complex and one endpoint on one link; `workloads` is TOML for the workloads.
fn single_link(gen: i64, width: i64, mps: i64, tlps: f64, workloads: &str, extra: &str) -> String {
    let b = closed(gen, width, mps);
    let tlp_s = mps as f64 * 8.0 / (b.write_gbps * 1e9);
    let duration_ns = (tlps * tlp_s * 1e9).ceil() as u64 + 2000;
    format!(
        "[simulation]\nduration = \"{duration_ns}ns\"\nwarmup = \"2000ns\"\n\
         [pcie]\nmps = {mps}\n{extra}\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"100ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ntags = 256\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\ngen = {gen}\nwidth = {width}\n{workloads}"
    )
}

const BOTH_WAYS_WRITES: &str = "[[workload]]\nname = \"up\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
    direction = \"write\"\ntransfer_size = \"64KiB\"\n\
    [[workload]]\nname = \"down\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"ep\"\n\
    direction = \"write\"\ntransfer_size = \"64KiB\"\n";

const READS: &str = "[[workload]]\nname = \"reads\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
    direction = \"read\"\ntransfer_size = \"64KiB\"\noutstanding = 8\n";

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

#[test]
fn saturated_link_matches_the_closed_form() {
    let mut worst_w: (f64, String) = (0.0, String::new());
    let mut worst_r: (f64, String) = (0.0, String::new());
    for gen in 1..=6 {
        for width in [1, 2, 4, 8, 16] {
            for mps in [128, 256, 512] {
                let b = closed(gen, width, mps);
                let r = simulate(&single_link(gen, width, mps, 6000.0, BOTH_WAYS_WRITES, ""));
                for f in &r.flows {
                    let err = f.throughput_gbps / b.write_gbps - 1.0;
                    if err.abs() > worst_w.0.abs() {
                        worst_w = (err, format!("gen{gen} x{width} mps{mps} {}", f.name));
                    }
                }
                let r = simulate(&single_link(gen, width, mps, 6000.0, READS, "mrrs = 512"));
                let err = r.flows[0].throughput_gbps / b.read_gbps - 1.0;
                if err.abs() > worst_r.0.abs() {
                    worst_r = (err, format!("gen{gen} x{width} mps{mps}"));
                }
            }
        }
    }
    eprintln!("worst write {:?} worst read {:?}", worst_w, worst_r);
    assert!(worst_w.0.abs() < 0.005, "writes: {worst_w:?}");
    assert!(worst_r.0.abs() < 0.01, "reads: {worst_r:?}");
}

#[test]
fn immediate_acks_answer_every_tlp_and_cost_only_where_both_directions_are_busy() {
    let one_way = "[[workload]]\nname = \"up\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
        direction = \"write\"\ntransfer_size = \"64KiB\"\n";
    let run =
        |workloads: &str, extra: &str| simulate(&single_link(1, 4, 128, 4000.0, workloads, extra));
    let link = |r: &RunResult, dir: &str| {
        let l = r.links.iter().find(|l| l.direction == dir).unwrap();
        (l.tlps, l.dllps)
    };
    let gbps = |r: &RunResult| r.flows.iter().map(|f| f.throughput_gbps).sum::<f64>();

    // Writes one way: the idle direction carries an Ack and an UpdateFC for every TLP (the
    // spec timer, about two TLP times at x4, coalesces two), and the writes lose nothing.
    let (timer, immediate) = (run(one_way, ""), run(one_way, "ack = \"immediate\""));
    let (tlps, timer_dllps) = (link(&timer, "up").0, link(&timer, "down").1);
    let (_, immediate_dllps) = link(&immediate, "down");
    let immediate_tlps = link(&immediate, "up").0;
    assert!(
        immediate_dllps as f64 >= 1.9 * immediate_tlps as f64,
        "{immediate_dllps} DLLPs for {immediate_tlps} TLPs"
    );
    assert!(
        immediate_dllps as f64 > 1.6 * timer_dllps as f64,
        "{immediate_dllps} vs {timer_dllps} on the timer ({tlps} TLPs)"
    );
    assert!((gbps(&immediate) / gbps(&timer) - 1.0).abs() < 0.005);

    // Writes both ways: each direction carries the other's DLLPs, about 16 B per 152 B TLP.
    let (timer, immediate) = (
        run(BOTH_WAYS_WRITES, ""),
        run(BOTH_WAYS_WRITES, "ack = \"immediate\""),
    );
    let ratio = gbps(&immediate) / gbps(&timer);
    assert!((0.88..0.97).contains(&ratio), "immediate / timer = {ratio}");
}

#[test]
fn immediate_acks_cost_at_most_what_the_closed_form_charges_for_an_ack_and_updatefc_per_tlp() {
    // Writes both ways: each direction carries an Ack and an UpdateFC-P (8 B each) for
    // every TLP of the other, which the closed form charges as 16 DLLP bytes per TLP. The
    // simulator replaces one still waiting for the wire by a newer one, so it may send a
    // few fewer (most at x1 with 512 B TLPs, where one TLP holds the wire longest).
    let (mut lowest, mut highest) = ((f64::MAX, String::new()), (f64::MIN, String::new()));
    for gen in 1..=5 {
        for width in [1, 4, 16] {
            for mps in [128, 512] {
                let req = LinkRequest {
                    gen,
                    width,
                    mps,
                    payload: Some(65536),
                    dllp: DllpPolicy::PerTlp(16.0),
                    ..LinkRequest::default()
                };
                let closed = tlpsim::link_bandwidth(&req).unwrap().write_gbps;
                let text = single_link(
                    gen,
                    width,
                    mps,
                    6000.0,
                    BOTH_WAYS_WRITES,
                    "ack = \"immediate\"",
                );
                for f in &simulate(&text).flows {
                    let err = f.throughput_gbps / closed - 1.0;
                    let at = format!("gen{gen} x{width} mps{mps} {}", f.name);
                    if err < lowest.0 {
                        lowest = (err, at.clone());
                    }
                    if err > highest.0 {
                        highest = (err, at);
                    }
                }
            }
        }
    }
    assert!(
        lowest.0 > -0.001,
        "slower than the closed form's bound: {lowest:?}"
    );
    assert!(highest.0 < 0.015, "{highest:?}");
}

const EXAMPLE: &str = include_str!("../../../scenarios/t5220-two-switches.toml");

#[test]
fn an_arrival_that_frees_its_wire_saves_an_event_and_changes_no_rate() {
    // With no propagation delay a TLP reaches the root or endpoint just as its wire frees,
    // and one event does both; 1 ps of propagation separates them again.
    let workloads = format!("{BOTH_WAYS_WRITES}{READS}");
    let run_with = |prop: &str| {
        let extra = format!("propagation = \"{prop}\"");
        simulate(&single_link(2, 4, 256, 3000.0, &workloads, &extra))
    };
    let (fused, apart) = (run_with("0ns"), run_with("1ps"));
    for (a, b) in fused.flows.iter().zip(&apart.flows) {
        let diff = a.throughput_gbps / b.throughput_gbps - 1.0;
        assert!(
            diff.abs() < 1e-3,
            "{}: {} vs {} Gb/s",
            a.name,
            a.throughput_gbps,
            b.throughput_gbps
        );
    }
    // Most TLPs here end at a root or an endpoint: far fewer events (22 k against 36 k).
    assert!(
        (fused.events as f64) < 0.8 * apart.events as f64,
        "{} events fused, {} apart",
        fused.events,
        apart.events
    );
}

#[test]
fn progress_rises_to_one_changes_nothing_and_can_stop_a_run() {
    let sys = load_str(
        &single_link(1, 8, 128, 200_000.0, BOTH_WAYS_WRITES, ""),
        "<test>",
    )
    .unwrap();
    let plain = run(&sys).unwrap();
    assert!(
        plain.events > 2 * PROGRESS_EVERY,
        "{} events: too few to report",
        plain.events
    );
    let mut seen = Vec::new();
    let reported = run_with_progress(&sys, &mut |f| {
        seen.push(f);
        true
    })
    .unwrap();
    assert!(seen.len() >= 3, "{seen:?}");
    assert!(seen.windows(2).all(|w| w[0] < w[1]), "{seen:?}");
    assert_eq!(seen.last(), Some(&1.0));
    assert_eq!(reported.events, plain.events);
    for (a, b) in reported.flows.iter().zip(&plain.flows) {
        assert_eq!(a.bytes, b.bytes);
    }
    match run_with_progress(&sys, &mut |_| false) {
        Err(RunError::Interrupted(m)) => assert!(m.starts_with("interrupted after "), "{m}"),
        other => panic!(
            "expected an interruption, got {:?}",
            other.map(|r| r.events)
        ),
    }
}

#[test]
fn the_example_scenario_runs_and_passes_the_audit() {
    let r = simulate(EXAMPLE);
    assert_eq!(r.flows.len(), 1);
    assert!(
        r.flows[0].throughput_gbps > 10.0,
        "{}",
        r.flows[0].throughput_gbps
    );
    assert_eq!(r.links.len(), 6);
}

#[test]
fn same_scenario_and_seed_give_identical_results() {
    let with_ber = EXAMPLE
        .replace("seed = 7", "seed = 7\n[pcie]\nber = 1e-7")
        .replacen(
            "[pcie]            # defaults for every link and device unless they say otherwise\n",
            "",
            1,
        );
    for text in [EXAMPLE.to_string(), with_ber] {
        let mut a = simulate(&text);
        let mut b = simulate(&text);
        a.wall_s = 0.0;
        b.wall_s = 0.0;
        assert_eq!(a.to_json(), b.to_json());
    }
}

#[test]
fn bit_errors_cause_naks_and_replays_and_the_audit_still_passes() {
    let clean = simulate(&single_link(1, 4, 256, 20000.0, BOTH_WAYS_WRITES, ""));
    let noisy = simulate(&single_link(
        1,
        4,
        256,
        20000.0,
        BOTH_WAYS_WRITES,
        "ber = 1e-6",
    ));
    let replays: u64 = noisy.links.iter().map(|l| l.replays).sum();
    let bad: u64 = noisy.links.iter().map(|l| l.bad_tlps + l.bad_dllps).sum();
    assert!(
        bad > 10 && replays >= bad / 2,
        "bad {bad} replays {replays}"
    );
    for (c, n) in clean.flows.iter().zip(&noisy.flows) {
        assert!(
            n.throughput_gbps < c.throughput_gbps,
            "{} vs {}",
            n.throughput_gbps,
            c.throughput_gbps
        );
    }
    // 1e-9 on every link of a three-level read tree: the audit holds.
    let tree = EXAMPLE
        .replace("seed = 7", "seed = 3")
        .replace("mps = 128", "mps = 128\nber = 1e-9");
    simulate(&tree);
}

#[test]
fn reads_with_bit_errors_lose_nothing() {
    let text = single_link(2, 8, 128, 20000.0, READS, "mrrs = 512\nber = 1e-6");
    let r = simulate(&text);
    assert!(r.links.iter().map(|l| l.replays).sum::<u64>() > 0);
    assert!(r.flows[0].bytes > 0);
}

#[test]
fn a_credit_supply_below_one_tlp_is_refused_before_it_could_deadlock() {
    // 8 PD credits hold 128 B; MPS 256 writes could never enter: a property of the file.
    let text = single_link(1, 4, 256, 2000.0, BOTH_WAYS_WRITES, "")
        .replace("tags = 256", "tags = 256\ncredits = { pd = 8 }");
    let err = load_str(&text, "<test>").unwrap_err().to_string();
    assert!(err.contains("credits.pd 8 is not allowed"), "{err}");
    assert!(err.contains("at least 16"), "{err}");
}

#[test]
fn a_flow_with_no_completed_request_has_no_latency() {
    // Reads that take longer than the run: bytes 0, latency null (not 0 ns).
    let text = single_link(1, 8, 128, 100.0, READS, "").replace(
        "memory_read_latency = \"100ns\"",
        "memory_read_latency = \"1ms\"",
    );
    let r = simulate(&text);
    assert_eq!((r.flows[0].bytes, r.flows[0].requests), (0, 0));
    assert_eq!(r.flows[0].latency_ns, Default::default());
    assert!(r
        .to_json()
        .contains("\"latency_ns\":{\"mean\":null,\"p50\":null"));
}

#[test]
fn a_slow_fabric_is_not_reported_as_a_deadlock() {
    // 200 us of propagation on every link: a read's round trip outlasts the run, and for
    // whole watchdog periods nothing is sent while credits are on their way back.
    let far = EXAMPLE
        .replace("mps = 128", "mps = 128\npropagation = \"200us\"")
        .replace("duration = \"200us\"", "duration = \"1ms\"");
    assert_eq!(simulate(&far).flows[0].bytes, 0);
    // 10 MB/s of memory: transmitters wait on credits for longer than a watchdog period
    // between the memory's completions.
    let slow = EXAMPLE
        .replacen(
            "memory_read_latency",
            "memory_bandwidth = \"10MB/s\"\nmemory_read_latency",
            1,
        )
        .replace("direction = \"read\"", "direction = \"both\"");
    let r = simulate(&slow);
    assert!(r.flows[0].bytes > 0);
    assert!(
        r.flows[0].throughput_gbps < 0.09,
        "{}",
        r.flows[0].throughput_gbps
    );
}

#[test]
fn small_credit_supplies_stall_and_are_counted() {
    let text = single_link(
        1,
        8,
        128,
        4000.0,
        BOTH_WAYS_WRITES,
        "propagation = \"200ns\"",
    )
    .replace("tags = 256", "tags = 256\ncredits = { ph = 4, pd = 32 }");
    let r = simulate(&text);
    let down = r.links.iter().find(|l| l.direction == "down").unwrap();
    assert!(down.credit_stall_fraction > 0.3, "{down:?}");
    let b = closed(1, 8, 128);
    assert!(r.flows[1].throughput_gbps < 0.7 * b.write_gbps);
}

#[test]
fn store_and_forward_adds_the_tlp_time_per_switch() {
    let ct = simulate(EXAMPLE);
    let saf = simulate(
        &EXAMPLE
            .replace("cut-through", "store-and-forward")
            .replace("outstanding = 16", "outstanding = 1"),
    );
    let ct1 = simulate(
        &EXAMPLE
            .replace("outstanding = 16", "outstanding = 1")
            .replace(
                "[[endpoint]]\nname = \"ex\"\nkind = \"dma\"",
                "[[endpoint]]\nname = \"ex\"\nkind = \"dma\"\ntags = 1",
            ),
    );
    let _ = ct;
    let saf1 = simulate(
        &EXAMPLE
            .replace("cut-through", "store-and-forward")
            .replace("outstanding = 16", "outstanding = 1")
            .replace(
                "[[endpoint]]\nname = \"ex\"\nkind = \"dma\"",
                "[[endpoint]]\nname = \"ex\"\nkind = \"dma\"\ntags = 1",
            ),
    );
    let _ = saf;
    // One request at a time: the latency difference is the serialization the switches wait
    // for: the MRd (16 + 8 B) and the first 64 B completion (12 + 64 + 8 B) at x8 Gen1, at
    // each of two switches: 2 × (24 + 84) B / 8 lanes × 4 ns = 108 ns.
    let diff = saf1.flows[0].latency_ns.mean.unwrap() - ct1.flows[0].latency_ns.mean.unwrap();
    assert!((diff - 108.0).abs() < 1.0, "{diff}");
}

/// One storage HBA on an x4 Gen1 link under a root complex; `workload` is its I/O mix.
fn storage(media_read: &str, media_write: &str, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"20ms\"\nwarmup = \"5ms\"\n[pcie]\nmps = 128\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[endpoint]]\nname = \"hba\"\nkind = \"storage\"\nmedia_read = \"{media_read}\"\n\
         media_write = \"{media_write}\"\nmedia_turnaround = \"100us\"\n\
         [[link]]\nbetween = [\"rc\", \"hba\"]\nwidth = 4\n\
         [[workload]]\nname = \"io\"\nkind = \"storage\"\nendpoint = \"hba\"\n{workload}"
    )
}

#[test]
fn storage_throughput_is_the_slower_of_media_and_link() {
    let mb_s = |r: &RunResult| r.flows[0].throughput_gbps / 8.0 * 1000.0;
    let reads = "read_percent = 100\nread_size = \"256KB\"\noutstanding = 2\n";
    let writes = "read_percent = 0\nwrite_size = \"1MB\"\noutstanding = 2\n";
    // Media-bound: the drives are slower than the x4 link.
    let r = simulate(&storage("300MB/s", "400MB/s", reads));
    assert!((mb_s(&r) / 300.0 - 1.0).abs() < 0.01, "reads {}", mb_s(&r));
    let r = simulate(&storage("300MB/s", "400MB/s", writes));
    assert!((mb_s(&r) / 400.0 - 1.0).abs() < 0.01, "writes {}", mb_s(&r));
    // Link-bound: x4 Gen1 carries what the closed form says for one-way writes (their Acks
    // and UpdateFCs travel on the other direction), whatever the drives could do.
    let req = LinkRequest {
        gen: 1,
        width: 4,
        mps: 128,
        payload: Some(65536),
        dllp: tlpsim::analytic::DllpPolicy::None,
        ..LinkRequest::default()
    };
    let link = tlpsim::link_bandwidth(&req).unwrap().write_gbps / 8.0 * 1000.0;
    let r = simulate(&storage("5GB/s", "5GB/s", reads));
    assert!(
        (mb_s(&r) / link - 1.0).abs() < 0.01,
        "{} vs {link}",
        mb_s(&r)
    );
}

#[test]
fn a_mixed_storage_workload_pays_the_turnaround() {
    let mb_s = |r: &RunResult| r.flows[0].throughput_gbps / 8.0 * 1000.0;
    let mix = "read_percent = 50\nread_size = \"100KB\"\nwrite_size = \"100KB\"\noutstanding = 2\n";
    let r = simulate(&storage("300MB/s", "300MB/s", mix));
    // I/Os alternate: each 100 KB I/O takes 333 us of media time plus a 100 us turnaround.
    let expected = 100e3 / (100e3 / 300e6 + 100e-6) / 1e6;
    assert!(
        (mb_s(&r) / expected - 1.0).abs() < 0.03,
        "{} vs {expected}",
        mb_s(&r)
    );
}

#[test]
fn storage_mistakes_get_one_clear_message() {
    let bad = [
        (
            storage(
                "1GB/s",
                "1GB/s",
                "read_percent = 150\nread_size = \"1MB\"\n",
            ),
            "read_percent",
        ),
        (
            storage("1GB/s", "1GB/s", "read_percent = 50\nread_size = \"1MB\"\n"),
            "write_size is missing",
        ),
        (
            storage(
                "1GB/s",
                "1GB/s",
                "direction = \"read\"\nread_percent = 100\n",
            ),
            "unknown field `direction`",
        ),
        (
            storage(
                "1GB/s",
                "1GB/s",
                "read_percent = 100\nread_size = \"1MB\"\n",
            )
            .replace(
                "kind = \"storage\"\nmedia_read",
                "kind = \"dma\"\nmedia_read",
            ),
            "media_read needs kind = \"storage\"",
        ),
    ];
    for (text, want) in bad {
        let e = load_str(&text, "hba.toml").unwrap_err().to_string();
        assert!(e.contains(want) && e.contains("hba.toml"), "{e}");
    }
}

/// A root complex, one dual-port NIC at x4 and a CPU; `frame`, `load`, `cpu` fill in.
fn bridge(frame: u32, load: f64, cpu: &str, nic: &str) -> String {
    format!(
        "[simulation]\nduration = \"3ms\"\nwarmup = \"500us\"\n[pcie]\nmps = 128\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[endpoint]]\nname = \"nic\"\nkind = \"nic\"\ninterrupt_interval = \"50us\"\n{nic}\n\
         [[link]]\nbetween = [\"rc\", \"nic\"]\nwidth = 4\n\
         [cpu]\n{cpu}\n\
         [[workload]]\nname = \"bridge\"\nkind = \"bridge\"\nendpoint = \"nic\"\n\
         frame_size = {frame}\nload = {load}\n"
    )
}

/// A `bridge` scenario with a switch (`keys` in its section, `up` lanes above it) between
/// the root complex and the NIC's x4 link.
fn behind_switch(text: &str, keys: &str, up: u32) -> String {
    let direct = "[[link]]\nbetween = [\"rc\", \"nic\"]\nwidth = 4\n";
    assert!(text.contains(direct), "no direct NIC link in {text}");
    text.replace(
        direct,
        &format!(
            "[[switch]]\nname = \"sw\"\n{keys}\n\
             [[link]]\nbetween = [\"rc\", \"sw\"]\nwidth = {up}\n\
             [[link]]\nbetween = [\"sw\", \"nic\"]\nwidth = 4\n"
        ),
    )
}

#[test]
fn a_saturated_bridge_never_forwards_more_than_its_line_rate() {
    // Two 1 Gb/s ports at full load with a free CPU: each port sends back to back. The
    // window counts frames wholly on the wire inside it, so the rate is at most the line's
    // (it read 2000.04 and 2000.14 Mb/s when a frame begun before the window counted).
    for duration in ["1ms", "2ms", "3ms", "7ms"] {
        let text = bridge(64, 1.0, "frame_cost = \"0ns\"", "")
            .replace("duration = \"3ms\"", &format!("duration = \"{duration}\""));
        let r = simulate(&text);
        let e = r.ethernet()[0];
        let window = r.simulated_s;
        // 64 B frames take 84 B on the wire: 1,488,095 frames/s per port.
        let per_port = (window * 1e9 / (84.0 * 8.0)).floor();
        assert!(e.forwarded_mbps <= 2000.0, "{duration}: {e:?}");
        assert!(
            e.forwarded_frames as f64 <= 2.0 * per_port,
            "{duration}: {e:?}"
        );
        assert!(
            e.forwarded_frames as f64 >= 2.0 * (per_port - 2.0),
            "{duration}: {e:?}"
        );
        assert!(e.zero_loss, "{duration}: {e:?}");
    }
}

#[test]
fn a_lightly_loaded_bridge_forwards_every_frame() {
    let r = simulate(&bridge(512, 0.3, "frame_cost = \"1us\"", ""));
    let e = r.ethernet()[0];
    assert_eq!(e.dropped, 0, "{e:?}");
    assert!(e.zero_loss, "{e:?}");
    // Offered: 2 ports x 0.3 x 1 Gb/s / ((512 + 20) x 8 bits).
    let offered = 2.0 * 0.3e9 / (532.0 * 8.0);
    assert!((e.offered_fps - offered).abs() / offered < 0.01, "{e:?}");
    assert!((e.forwarded_fps - offered).abs() / offered < 0.02, "{e:?}");
    assert!(r.audit.passed, "{:?}", r.audit);
    // Its flow row carries the bytes of the frames forwarded.
    let f = &r.flows[0];
    assert_eq!(f.bytes, e.forwarded_frames * 512, "{f:?}");
    let fps = e.forwarded_frames as f64 / r.simulated_s;
    assert!((fps - e.forwarded_fps).abs() < 1e-6 * fps, "{e:?}");
    assert!(
        (f.throughput_gbps - fps * 512.0 * 8.0 / 1e9).abs() < 1e-9,
        "{f:?}"
    );
}

#[test]
fn an_overloaded_host_loses_frames_and_forwards_at_its_software_rate() {
    // 5 us per frame on one core: at most 200 k frames/s whatever is offered.
    let r = simulate(&bridge(64, 0.5, "frame_cost = \"5us\"", ""));
    let e = r.ethernet()[0];
    assert!(!e.zero_loss && e.dropped > 0, "{e:?}");
    assert!(
        e.forwarded_fps <= 200_000.0 && e.forwarded_fps > 170_000.0,
        "{e:?}"
    );
    assert!(r.audit.passed, "{:?}", r.audit);
}

#[test]
fn rfc2544_finds_the_software_limit_and_line_rate() {
    let sys = load_str(&bridge(64, 1.0, "frame_cost = \"5us\"", ""), "t").unwrap();
    let r = tlpsim::sim::rfc2544(&sys, 0.01).unwrap();
    // Zero-loss frames/s over both ports, against the 200 k/s the CPU can bridge (the
    // backlog-growth tolerance admits up to about 1 % over).
    let fps = r.load * 2.0 * 1e9 / (84.0 * 8.0);
    assert!(fps <= 202_000.0 && fps > 170_000.0, "{r:?}");
    assert!((r.combined_mbps - r.load * 2000.0).abs() < 1e-6);
    // A fast host bridges 1518 B frames at line rate: 2000 Mb/s over two ports.
    let sys = load_str(&bridge(1518, 1.0, "frame_cost = \"1us\"", ""), "t").unwrap();
    let r = tlpsim::sim::rfc2544(&sys, 0.01).unwrap();
    assert_eq!(r.load, 1.0);
    assert_eq!(r.combined_mbps, 2000.0);
}

#[test]
fn a_switch_lengthens_the_cpus_register_reads() {
    // One register read per interrupt and an interrupt per frame: the read's round trip
    // through a switch adds to the CPU's time per frame, so fewer frames get through.
    let cpu = "frame_cost = \"2us\"\ninterrupt_cost = \"0ns\"\nreads_per_interrupt = 4";
    let direct = simulate(&bridge(64, 1.0, cpu, ""));
    let via_switch = behind_switch(&bridge(64, 1.0, cpu, ""), "latency = \"300ns\"", 4).replace(
        "interrupt_interval = \"50us\"",
        "interrupt_interval = \"0ns\"",
    );
    let direct_per_int = simulate(&bridge(64, 1.0, cpu, "").replace(
        "interrupt_interval = \"50us\"",
        "interrupt_interval = \"0ns\"",
    ));
    let switched = simulate(&via_switch);
    assert!(
        switched.ethernet()[0].forwarded_fps < direct_per_int.ethernet()[0].forwarded_fps,
        "{:?} vs {:?}",
        switched.ethernet()[0],
        direct_per_int.ethernet()[0]
    );
    assert!(direct.audit.passed && switched.audit.passed);
}

#[test]
fn bridge_mistakes_get_one_clear_message() {
    let no_cpu =
        bridge(64, 0.5, "frame_cost = \"1us\"", "").replace("[cpu]\nframe_cost = \"1us\"\n", "");
    let e = load_str(&no_cpu, "f.toml").unwrap_err().to_string();
    assert!(e.contains("needs a [cpu] section"), "{e}");
    let e = load_str(&bridge(40, 0.5, "frame_cost = \"1us\"", ""), "f.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("frame_size") && e.contains("64 to 9018"), "{e}");
    let e = load_str(&bridge(64, 1.5, "frame_cost = \"1us\"", ""), "f.toml")
        .unwrap_err()
        .to_string();
    assert!(e.contains("load") && e.contains("(0, 1]"), "{e}");
    let dma =
        bridge(64, 0.5, "frame_cost = \"1us\"", "").replace("kind = \"nic\"", "kind = \"dma\"");
    let e = load_str(&dma, "f.toml").unwrap_err().to_string();
    assert!(
        e.contains("interrupt_interval") && e.contains("kind = \"nic\""),
        "{e}"
    );
}

/// `bridge` plus a DMA engine reading host memory on its own x4 root port.
fn bridge_and_reader(root: &str, nic: &str, cpu: &str) -> String {
    bridge(64, 1.0, cpu, nic).replace("name = \"rc\"\n", &format!("name = \"rc\"\n{root}\n"))
        + "[[endpoint]]\nname = \"dma\"\nkind = \"dma\"\n[[link]]\nbetween = [\"rc\", \"dma\"]\nwidth = 4\n\
           [[workload]]\nname = \"reads\"\nkind = \"dma\"\nendpoint = \"dma\"\n\
           direction = \"read\"\ntransfer_size = \"4KiB\"\noutstanding = 8\n"
}

#[test]
fn a_shared_outbound_queue_lets_a_slow_nic_hold_up_other_ports() {
    // A NIC with one posted header credit absorbing a register write every 2 us, four
    // writes per frame: its root port is always waiting for credit.
    let nic = "credits = { ph = 1, pd = 8, nph = 1, npd = 2 }\nregister_time = \"200ns\"";
    let cpu = "frame_cost = \"1us\"\nwrites_per_frame = 4\nposted_depth = 8";
    let reads = |r: &RunResult| {
        r.flows
            .iter()
            .find(|f| f.name == "reads")
            .unwrap()
            .throughput_gbps
    };
    let own = simulate(&bridge_and_reader("", nic, cpu));
    let shared = simulate(&bridge_and_reader(
        "outbound_queue = \"shared\"\nport_queue = 2",
        nic,
        cpu,
    ));
    // Per-port queues: the reader's completions never wait for the NIC's writes; a shared
    // queue keeps them behind the writes (a completion may not pass a posted write).
    assert!(
        reads(&shared) < 0.9 * reads(&own),
        "{} vs {}",
        reads(&shared),
        reads(&own)
    );
    assert!(own.audit.passed && shared.audit.passed);
    // A switch's buffers take the writes off the root complex: the reader recovers.
    let via_switch = behind_switch(
        &bridge_and_reader("outbound_queue = \"shared\"\nport_queue = 2", nic, cpu),
        "credits = { ph = 32, pd = 256 }",
        8,
    );
    let switched = simulate(&via_switch);
    assert!(
        reads(&switched) > 1.05 * reads(&shared),
        "{} vs {}",
        reads(&switched),
        reads(&shared)
    );
    assert!(switched.audit.passed);
}

#[test]
fn outbound_queue_mistakes_get_one_clear_message() {
    let text = bridge_and_reader("outbound_queue = \"single\"", "", "frame_cost = \"1us\"");
    let e = load_str(&text, "q.toml").unwrap_err().to_string();
    assert!(
        e.contains("outbound_queue") && e.contains("per_port, shared"),
        "{e}"
    );
    let text = bridge_and_reader(
        "outbound_queue = \"shared\"\nport_queue = 0",
        "",
        "frame_cost = \"1us\"",
    );
    let e = load_str(&text, "q.toml").unwrap_err().to_string();
    assert!(e.contains("port_queue") && e.contains("1 to 1024"), "{e}");
    let text = bridge_and_reader("port_queue = 2", "", "frame_cost = \"1us\"");
    let e = load_str(&text, "q.toml").unwrap_err().to_string();
    assert!(e.contains("only with outbound_queue = \"shared\""), "{e}");
}

/// Two hosts joined by non-transparent bridges under one switch, the first writing 64-byte
/// TLPs into the second's memory; `extra` is appended.
fn two_domains(extra: &str) -> String {
    format!(
        r#"
[simulation]
duration = "200us"
warmup = "20us"
[pcie]
gen = 1
width = 4
addressing = 32
[[root_complex]]
name = "rp"
[[root_complex]]
name = "a"
[[root_complex]]
name = "b"
[[switch]]
name = "sw"
[[ntb]]
name = "nta"
[[ntb]]
name = "ntb"
[[link]]
between = ["rp", "sw"]
[[link]]
between = ["sw", "nta"]
[[link]]
between = ["nta", "a"]
[[link]]
between = ["sw", "ntb"]
[[link]]
between = ["ntb", "b"]
[[workload]]
name = "a-to-b"
kind = "dma"
endpoint = "a"
target = "b"
direction = "write"
transfer_size = "16KiB"
outstanding = 4
tlp_payload = "64B"
{extra}"#
    )
}

#[test]
fn a_host_writes_through_two_ntbs_into_another_domain() {
    let system = load_str(&two_domains(""), "ntb.toml").unwrap();
    let r = run(&system).unwrap();
    assert!(r.audit.passed, "{:?}", r.audit);
    // 64-byte writes with 32-bit addresses on Gen1 x4: 8 Gb/s x 64 / 84 = 6.10 Gb/s less SKP.
    let gbps = r.flows[0].throughput_gbps;
    assert!((6.0..6.1).contains(&gbps), "{gbps}");
    // The root processor's link carries none of it: the switch routes port to port.
    let rp = r.links.iter().find(|l| l.name == "rp-sw").unwrap();
    assert_eq!(rp.tlps, 0);
}

#[test]
fn ntb_mistakes_get_one_clear_message() {
    let below_switch =
        two_domains("").replace("between = [\"nta\", \"a\"]", "between = [\"sw\", \"a\"]");
    let below_switch = below_switch.replacen("[[link]]\nbetween = [\"sw\", \"nta\"]\n", "", 1);
    let e = load_str(&below_switch, "ntb.toml").unwrap_err().to_string();
    assert!(e.contains("only below a non-transparent bridge"), "{e}");
    let second = two_domains(
        "[[endpoint]]\nname = \"x\"\nkind = \"dma\"\n[[link]]\nbetween = [\"nta\", \"x\"]\n",
    );
    let e = load_str(&second, "ntb.toml").unwrap_err().to_string();
    assert!(e.contains("already has its downstream link"), "{e}");
    let bad_size = two_domains("").replace("tlp_payload = \"64B\"", "tlp_payload = \"66B\"");
    let e = load_str(&bad_size, "ntb.toml").unwrap_err().to_string();
    assert!(
        e.contains("tlp_payload") && e.contains("multiple of 4"),
        "{e}"
    );
}

#[test]
fn doorbells_interrupt_once_per_signalled_transfers_and_never_pass_their_data() {
    let plain = run(&load_str(&two_domains(""), "ntb.toml").unwrap()).unwrap();
    for every in [1u64, 4] {
        let text = two_domains(&format!("doorbell_every = {every}\n"))
            .replace("transfer_size = \"16KiB\"", "transfer_size = \"1536B\"");
        let r = run(&load_str(&text, "ntb.toml").unwrap()).unwrap();
        // The audit counts an MSI that reached the host before the data it signals as an
        // order violation.
        assert!(r.audit.passed, "{:?}", r.audit);
        assert_eq!(r.audit.order_violations, 0);
        let f = &r.flows[0];
        let transfers = f.bytes / 1536;
        let expected = transfers / every;
        assert!(
            f.interrupts.abs_diff(expected) <= 2,
            "every {every}: {} interrupts for {transfers} transfers",
            f.interrupts
        );
        // A 4-byte doorbell and a 4-byte MSI per 24 data TLPs cost a little link time.
        let loss = 1.0 - f.throughput_gbps / plain.flows[0].throughput_gbps;
        let most = 0.06 / every as f64;
        assert!((0.0..most).contains(&loss), "every {every}: loss {loss}");
    }
}

#[test]
fn scratchpad_reads_take_the_bridge_latency_once() {
    // An endpoint in the root processor's domain reads a bridge's scratchpad registers
    // (the hosts' write stream is left out: nothing queues ahead of the reads).
    let hosts = two_domains("");
    let base = hosts[..hosts.find("[[workload]]").unwrap()]
        .replace(
            "[[link]]\nbetween = [\"rp\", \"sw\"]",
            "[[endpoint]]\nname = \"e\"\nkind = \"dma\"\n[[link]]\nbetween = [\"sw\", \"e\"]\n[[link]]\nbetween = [\"rp\", \"sw\"]",
        )
        + "[[workload]]\nname = \"spad\"\nkind = \"dma\"\nendpoint = \"e\"\ntarget = \"ntb\"\n\
           direction = \"read\"\ntransfer_size = \"8B\"\noutstanding = 1\n";
    let latency = |ntb_latency: &str| {
        let text = base.replace(
            "[[ntb]]\nname = \"ntb\"",
            &format!("[[ntb]]\nname = \"ntb\"\nlatency = \"{ntb_latency}\""),
        );
        let r = run(&load_str(&text, "spad.toml").unwrap()).unwrap();
        assert!(r.audit.passed, "{:?}", r.audit);
        let f = r.flows.iter().find(|f| f.name == "spad").unwrap();
        assert!(f.requests > 100);
        f.latency_ns.mean.unwrap()
    };
    let (fast, slow) = (latency("100ns"), latency("400ns"));
    // The request is consumed by the bridge (not forwarded), so its latency counts once.
    // (SKP ordered sets fall differently against the two request streams: a few ns.)
    assert!((slow - fast - 300.0).abs() < 10.0, "{fast} -> {slow}");
}

#[test]
fn doorbell_and_scratchpad_mistakes_get_one_clear_message() {
    let e = load_str(
        &two_domains("doorbell_every = 1\n").replace("target = \"b\"", "target = \"rp\""),
        "ntb.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("doorbell_every") && e.contains("non-transparent bridge"),
        "{e}"
    );
    let e = load_str(&two_domains("doorbell_every = 0\n"), "ntb.toml")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("doorbell_every") && e.contains("1 to 65536"),
        "{e}"
    );
    let spad = two_domains("")
        .replace("target = \"b\"", "target = \"ntb\"")
        .replace("transfer_size = \"16KiB\"", "transfer_size = \"6B\"")
        .replace("tlp_payload = \"64B\"\n", "");
    let e = load_str(&spad, "ntb.toml").unwrap_err().to_string();
    assert!(
        e.contains("transfer_size") && e.contains("scratchpad"),
        "{e}"
    );
}

/// The scenario file with ep1 writing into ep2's memory through two bridges' windows.
fn windows_scenario() -> String {
    std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../scenarios/ntb-windows.toml"
    ))
    .unwrap()
}

#[test]
fn an_address_crosses_each_bridge_window_into_the_memory_it_maps() {
    let text = windows_scenario();
    let sys = load_str(&text, "windows.toml").unwrap();
    let (nt1, nt2) = (sys.node("nt1").unwrap(), sys.node("nt2").unwrap());
    let w = &sys.workloads[0];
    assert_eq!(w.target, sys.node("ep2").unwrap());
    let path = w.address.as_ref().unwrap();
    assert_eq!(path.address, 0xC000_1000);
    assert_eq!(path.crossings, vec![(nt1, 0xA000_1000), (nt2, 0x1000_1000)]);
    // The same flow addressed or named gives the same run, bit for bit.
    let addressed = run(&sys).unwrap();
    let named = text.replace("target_address = \"0xC000_1000\"", "target = \"ep2\"");
    let named = run(&load_str(&named, "windows.toml").unwrap()).unwrap();
    assert!(addressed.audit.passed, "{:?}", addressed.audit);
    assert_eq!(addressed.flows[0].bytes, named.flows[0].bytes);
    assert_eq!(addressed.flows[0].latency_ns, named.flows[0].latency_ns);
    assert_eq!(
        addressed.flows[0].address.as_deref(),
        Some("0xc0001000 -> nt1 -> 0xa0001000 -> nt2 -> 0x10001000 (ep2)")
    );
    assert_eq!(named.flows[0].address, None);
    // Point nt1's host-side window at the root processor's memory instead: one crossing.
    let to_root = text
        .replacen(
            "translate = \"0xA000_0000\"",
            "translate = \"0x4000_0000\"",
            1,
        )
        .replace("doorbell_every = 1\n", "");
    let sys = load_str(&to_root, "windows.toml").unwrap();
    let w = &sys.workloads[0];
    assert_eq!(w.target, sys.node("rp").unwrap());
    assert_eq!(
        w.address.as_ref().unwrap().crossings,
        vec![(nt1, 0x4000_1000)]
    );
}

#[test]
fn window_mistakes_get_one_clear_message() {
    let text = windows_scenario();
    let cases: [(String, &[&str]); 9] = [
        (
            text.replace(
                "target_address = \"0xC000_1000\"",
                "target_address = \"0xB000_0000\"",
            ),
            &[
                "0xB000_0000",
                "\"ep1\"'s own memory",
                "0xc0000000..0xd0000000",
            ],
        ),
        (
            text.replace(
                "target_address = \"0xC000_1000\"",
                "target_address = \"0xCFFF_FC00\"",
            ),
            &["1514-byte transfer", "runs past the end", "\"nt1\""],
        ),
        (
            text.replacen("size = \"256MiB\"", "size = \"3MiB\"", 1),
            &["[[ntb]] 1 (nt1) window 1", "size \"3MiB\"", "power of two"],
        ),
        (
            text.replacen("base = \"0x9000_0000\"", "base = \"0x9000_1000\"", 1),
            &[
                "window 1",
                "base \"0x9000_1000\"",
                "multiple of the window size",
            ],
        ),
        (
            text.replace(
                "target_address = \"0xC000_1000\"",
                "target_address = \"0xC000_1000\"\ntarget = \"ep2\"",
            ),
            &["not both"],
        ),
        (
            text.replacen("base = \"0xA000_0000\"", "base = \"0x9000_0000\"", 1),
            &["\"nt2\"", "overlaps a window of \"nt1\""],
        ),
        (
            text.replacen(
                "translate = \"0xA000_0000\"",
                "translate = \"0x9000_0000\"",
                1,
            ),
            &["comes back to \"ep1\"'s own memory", "nt1 -> nt1"],
        ),
        (
            text.replacen("side = \"up\"", "side = \"sideways\"", 1),
            &["side", "\"sideways\"", "up", "down"],
        ),
        (
            text.replace(
                "target_address = \"0xC000_1000\"",
                "target_address = \"0xC000_zz\"",
            ),
            &["target_address", "0x8000_0000"],
        ),
    ];
    for (bad, wants) in cases {
        let e = load_str(&bad, "windows.toml").unwrap_err().to_string();
        assert!(e.contains("windows.toml"), "{e}");
        for want in wants {
            assert!(e.contains(want), "missing {want:?} in: {e}");
        }
    }
}

#[test]
fn a_host_reads_bridge_scratchpads_near_and_far() {
    let text = windows_scenario();
    let base = &text[..text.find("[[workload]]").unwrap()];
    let read = |reader: &str, nt2_latency: &str| {
        let text = base.replacen(
            "[[ntb]]\nname = \"nt2\"",
            &format!("[[ntb]]\nname = \"nt2\"\nlatency = \"{nt2_latency}\""),
            1,
        ) + &format!(
            "[[workload]]\nname = \"spad\"\nkind = \"dma\"\nendpoint = \"{reader}\"\n\
             target = \"nt2\"\ndirection = \"read\"\ntransfer_size = \"4B\"\noutstanding = 1\n"
        );
        let r = run(&load_str(&text, "spad.toml").unwrap()).unwrap();
        assert!(r.audit.passed, "{:?}", r.audit);
        assert_eq!(r.audit.order_violations, 0);
        let f = &r.flows[0];
        assert!(f.requests > 100, "{reader}: {} reads", f.requests);
        assert_eq!(f.bytes, 4 * f.requests, "{reader}");
        f.latency_ns.mean.unwrap()
    };
    // ep2 reads the bridge just above it; ep1 reads it across nt1 and the switch.
    let (near, far) = (read("ep2", "150ns"), read("ep1", "150ns"));
    assert!(far > near + 300.0, "near {near} ns, far {far} ns");
    // The read is answered by the bridge: its latency counts once.
    let slower = read("ep2", "450ns");
    assert!((slower - near - 300.0).abs() < 10.0, "{near} -> {slower}");
}

/// Writes through one cut-through switch whose port-to-port latency (150 ns) is longer than
/// the Gen5 x16 replay timeout (about 130 ns): the switch's ingress port acknowledges a TLP
/// when its last byte arrives, not when the switch forwards it, so nothing is replayed and
/// the switch costs no bandwidth.
#[test]
fn a_switch_slower_than_the_replay_timeout_replays_nothing() {
    let text = |lat: u32| {
        format!(
            "[simulation]\nduration = \"40us\"\nwarmup = \"5us\"\n[pcie]\nmps = 256\n\
             [[root_complex]]\nname = \"rc\"\n\
             [[switch]]\nname = \"sw\"\nforwarding = \"cut-through\"\nlatency = \"{lat}ns\"\n\
             [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
             [[link]]\nbetween = [\"rc\", \"sw\"]\ngen = 5\nwidth = 16\n\
             [[link]]\nbetween = [\"sw\", \"ep\"]\ngen = 5\nwidth = 16\n\
             [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
             direction = \"write\"\ntransfer_size = \"64KiB\"\noutstanding = 4\n"
        )
    };
    let near = simulate(&text(0));
    let far = simulate(&text(150));
    assert_eq!(far.links.iter().map(|l| l.replays).sum::<u64>(), 0);
    let (a, b) = (near.flows[0].throughput_gbps, far.flows[0].throughput_gbps);
    assert!((a - b).abs() < 0.005 * a, "{a} vs {b}");
}

/// A root complex with one shared outbound queue: host writes to an endpoint that holds
/// one posted header, a NIC's register writes and read completions all wait in it. A write
/// the host creates while the queue is being drained (its predecessor just went out) must
/// still queue behind the older TLPs waiting there, or it passes an older write of its own
/// flow.
#[test]
fn writes_created_while_the_shared_queue_drains_keep_their_order() {
    let text = "[simulation]\nduration = \"30us\"\nwarmup = \"3us\"\nseed = 0\n\
        [pcie]\nmps = 128\nmrrs = 128\n\
        [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"300ns\"\n\
        completion = \"mps\"\noutbound_queue = \"shared\"\nport_queue = 2\n\
        [[endpoint]]\nname = \"ep0\"\nkind = \"dma\"\ncredits = { ph = 1, pd = 8 }\n\
        [[endpoint]]\nname = \"ep1\"\nkind = \"dma\"\n\
        [[endpoint]]\nname = \"nic\"\nkind = \"nic\"\ninterrupt_interval = \"5us\"\n\
        [cpu]\nframe_cost = \"831ns\"\n\
        [[workload]]\nname = \"w0\"\nkind = \"dma\"\nendpoint = \"ep0\"\ndirection = \"write\"\n\
        transfer_size = \"206B\"\noutstanding = 1\n\
        [[workload]]\nname = \"w1\"\nkind = \"dma\"\nendpoint = \"ep1\"\ndirection = \"read\"\n\
        transfer_size = \"1399B\"\noutstanding = 2\n\
        [[workload]]\nname = \"bridge\"\nkind = \"bridge\"\nendpoint = \"nic\"\n\
        frame_size = 631\nload = 0.74\n\
        [[workload]]\nname = \"host\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"ep0\"\n\
        direction = \"write\"\ntransfer_size = \"2KiB\"\n\
        [[link]]\nbetween = [\"rc\", \"ep0\"]\ngen = 3\nwidth = 1\npropagation = \"9ns\"\n\
        [[link]]\nbetween = [\"rc\", \"ep1\"]\ngen = 3\nwidth = 8\n\
        [[link]]\nbetween = [\"rc\", \"nic\"]\ngen = 1\nwidth = 1\n";
    let r = run(&load_str(text, "<test>").unwrap()).unwrap();
    assert_eq!(r.audit.order_violations, 0, "{:?}", r.audit);
    assert!(r.audit.passed);
    assert!(r.flows.iter().find(|f| f.name == "host").unwrap().bytes > 0);
}

/// The example's read tree with bit errors on its top link only and both switches set to
/// `forwarding` with `latency`.
fn errors_on_top_link(forwarding: &str, latency: &str) -> RunResult {
    let text = EXAMPLE
        .replace("seed = 7", "seed = 11")
        .replace("duration = \"200us\"", "duration = \"2ms\"")
        .replace(
            "forwarding = \"cut-through\"",
            &format!("forwarding = \"{forwarding}\""),
        )
        .replace("latency = \"150ns\"", &format!("latency = \"{latency}\""))
        .replace(
            "between = [\"rc\", \"sw1\"]\ngen = 1",
            "between = [\"rc\", \"sw1\"]\nber = 1e-6\ngen = 1",
        );
    simulate(&text)
}

#[test]
fn a_cut_through_switch_nullifies_what_it_began_before_the_bad_lcrc_arrived() {
    let link = |r: &RunResult, name: &str| {
        r.links
            .iter()
            .find(|l| l.name == name && l.direction == "down")
            .unwrap()
            .clone()
    };
    // 20 ns of switch latency: a 64 B completion (84 B, 42 ns at x8 Gen1) is on its way out
    // before its LCRC is in.
    let ct = errors_on_top_link("cut-through", "20ns");
    let (top, mid) = (link(&ct, "rc-sw1"), link(&ct, "sw1-sw2"));
    assert!(top.bad_tlps > 20 && top.replays > 0, "{top:?}");
    assert!(
        mid.nullified > 0 && mid.nullified <= top.bad_tlps,
        "{mid:?} {top:?}"
    );
    // The next link has no errors: its receiver drops the nullified copies without a Nak,
    // so nothing is replayed there.
    assert_eq!((mid.bad_tlps, mid.replays), (0, 0), "{mid:?}");
    // Store-and-forward never starts a TLP before its LCRC is checked, and a cut-through
    // switch slower than the TLP's wire time knows by the time it would start.
    for r in [
        errors_on_top_link("store-and-forward", "20ns"),
        errors_on_top_link("cut-through", "150ns"),
    ] {
        assert!(link(&r, "rc-sw1").bad_tlps > 20);
        assert!(r.links.iter().all(|l| l.nullified == 0), "{:?}", r.links);
    }
}
