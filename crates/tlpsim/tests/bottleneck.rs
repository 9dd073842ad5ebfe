//! Each flow's bottleneck: the resource the run names is the one the scenario was built to
//! saturate, and busy fractions agree with the bytes that crossed.

use tlpsim::scenario::load_str;
use tlpsim::sim::{bottleneck::Bottleneck, result::RunResult, run};

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// A root complex (`rc` keys) and one DMA endpoint on an x8 Gen1 link (`link` keys) with
/// one workload (`workload` keys).
fn one_link(rc: &str, link: &str, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"200us\"\nwarmup = \"10us\"\n[pcie]\nmps = 128\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"600ns\"\n{rc}\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 8\n{link}\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n{workload}"
    )
}

/// The first flow's bottleneck, checked to be of `kind` on `resource`.
fn first_bottleneck<'a>(r: &'a RunResult, kind: &str, resource: &str) -> &'a Bottleneck {
    let b = &r.flows[0].bottleneck;
    assert_eq!((b.kind, b.resource.as_str()), (kind, resource), "{b:?}");
    b
}

const READS: &str = "direction = \"read\"\ntransfer_size = \"4KiB\"\noutstanding = 16\n";
const WRITES: &str = "direction = \"write\"\ntransfer_size = \"4KiB\"\n";

#[test]
fn reads_with_enough_requests_saturate_the_completion_direction() {
    let r = simulate(&one_link("", "", READS));
    let b = first_bottleneck(&r, "link", "rc-ep down");
    assert!(b.busy > 0.99, "{b:?}");
}

#[test]
fn one_request_at_a_time_is_limited_by_the_requests_in_flight() {
    let reads = READS.replace("outstanding = 16", "outstanding = 1");
    let r = simulate(&one_link("", "", &reads));
    let b = &r.flows[0].bottleneck;
    assert_eq!(b.kind, "requests", "{b:?}");
    assert!(b.busy > 0.99, "{b:?}");
}

#[test]
fn a_slow_memory_is_named_and_its_busy_share_matches_the_bytes() {
    let r = simulate(&one_link("memory_bandwidth = \"1GB/s\"", "", READS));
    first_bottleneck(&r, "memory", "rc memory");
    // Half the reads: the memory's share is the bytes it served over its rate.
    let reads = READS.replace("outstanding = 16", "outstanding = 1");
    let r = simulate(&one_link("memory_bandwidth = \"1GB/s\"", "", &reads));
    let mem = r.resources.iter().find(|m| m.name == "rc memory").unwrap();
    let expected = r.flows[0].throughput_gbps / 8.0;
    assert!((mem.busy - expected).abs() < 0.01, "{mem:?} vs {expected}");
    assert_eq!(r.flows[0].bottleneck.kind, "requests");
}

#[test]
fn writes_into_infinite_posted_credits_still_wait_for_the_memory() {
    // x8 Gen1 carries about 1.7 GB/s of 128 B writes; a 1 GB/s memory behind a root that
    // advertises infinite posted credits (nothing holds the sender back) takes 1 GB/s.
    for credits in [
        "ph = \"infinite\", pd = \"infinite\"",
        "ph = 1000000, pd = 1000000",
    ] {
        let rc = format!("memory_bandwidth = \"1GB/s\"\ncredits = {{ {credits} }}");
        let r = simulate(&one_link(&rc, "", WRITES));
        let gbps = r.flows[0].throughput_gbps;
        assert!((gbps / 8.0 - 1.0).abs() < 0.01, "{credits}: {gbps} Gb/s");
        let b = first_bottleneck(&r, "memory", "rc memory");
        assert!(b.busy > 0.99, "{b:?}");
    }
}

#[test]
fn a_posted_write_sinks_backlog_does_not_hold_another_ports_reads_at_the_memory() {
    // ep0's writes queue 8 us deep before a 2 GB/s sink; ep1 reads 4 KiB at a time through
    // the 20 GB/s memory behind it. Booked when they left the sink, the writes held the
    // memory ahead of every read: ep1's reads took 8.3 us each (1.96 Gb/s).
    let text = r#"
[simulation]
duration = "300us"
warmup = "20us"
[pcie]
mps = 512
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "200ns"
memory_bandwidth = "20GB/s"
posted_write_rate = "2GB/s"
[[endpoint]]
name = "ep0"
kind = "dma"
[[endpoint]]
name = "ep1"
kind = "dma"
tags = 4
[[link]]
between = ["rc", "ep0"]
gen = 4
width = 8
[[link]]
between = ["rc", "ep1"]
gen = 5
width = 2
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep0"
direction = "write"
transfer_size = "4KiB"
[[workload]]
name = "w1"
kind = "dma"
endpoint = "ep1"
direction = "read"
transfer_size = "4KiB"
outstanding = 2
"#;
    let r = simulate(text);
    let (writes, reads) = (&r.flows[0], &r.flows[1]);
    assert_eq!(writes.bottleneck.resource, "rc posted-write sink");
    assert!(
        (writes.throughput_gbps / 16.0 - 1.0).abs() < 0.01,
        "{}",
        writes.throughput_gbps
    );
    // The reads see the memory's latency and the link, not the sink's queue.
    let mean = reads.latency_ns.mean.unwrap();
    assert!(mean < 1_000.0, "{mean} ns");
    assert!(reads.throughput_gbps > 10.0, "{}", reads.throughput_gbps);
}

#[test]
fn a_posted_write_sink_paces_writes_and_leaves_reads_alone() {
    let rc = "posted_write_rate = \"0.5GB/s\"";
    let r = simulate(&one_link(rc, "", WRITES));
    let gbps = r.flows[0].throughput_gbps;
    assert!((gbps / 4.0 - 1.0).abs() < 0.01, "{gbps} Gb/s");
    let b = first_bottleneck(&r, "write_sink", "rc posted-write sink");
    assert!(b.busy > 0.99, "{b:?}");
    // Reads do not cross it: they fill the link, and it is not their bottleneck.
    let r = simulate(&one_link(rc, "", READS));
    first_bottleneck(&r, "link", "rc-ep down");
    let sink = r.resources.iter().find(|m| m.kind == "write_sink").unwrap();
    assert_eq!(sink.busy, 0.0);
    // Nor do the root's own writes into the endpoint.
    let down = one_link(rc, "", WRITES).replace(
        "endpoint = \"ep\"\n",
        "endpoint = \"rc\"\ntarget = \"ep\"\n",
    );
    let r = simulate(&down);
    first_bottleneck(&r, "link", "rc-ep down");
}

#[test]
fn a_credit_supply_short_of_the_round_trip_is_named_with_its_type() {
    let r = simulate(&one_link(
        "credits = { ph = 2, pd = 64 }",
        "propagation = \"200ns\"",
        WRITES,
    ));
    let b = first_bottleneck(&r, "credits", "ep -> rc PH credits");
    assert!(b.detail.contains("rc advertises 2"), "{b:?}");
    let up = r.links.iter().find(|l| l.direction == "up").unwrap();
    assert!(
        (b.busy - up.credit_stall_fraction).abs() < 1e-9,
        "{b:?} {up:?}"
    );
}

#[test]
fn a_replay_buffer_short_of_the_ack_round_trip_is_named() {
    let r = simulate(&one_link(
        "",
        "propagation = \"500ns\"\nreplay_buffer = \"1KiB\"",
        WRITES,
    ));
    first_bottleneck(&r, "replay_buffer", "ep -> rc replay buffer");
}

#[test]
fn storage_slower_than_its_link_is_named_by_its_media() {
    let text = "[simulation]\nduration = \"20ms\"\nwarmup = \"5ms\"\n[pcie]\nmps = 128\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[endpoint]]\nname = \"hba\"\nkind = \"storage\"\nmedia_read = \"300MB/s\"\n\
        media_write = \"400MB/s\"\n\
        [[link]]\nbetween = [\"rc\", \"hba\"]\nwidth = 4\n\
        [[workload]]\nname = \"io\"\nkind = \"storage\"\nendpoint = \"hba\"\n\
        read_percent = 100\nread_size = \"256KB\"\noutstanding = 2\n";
    let r = simulate(text);
    first_bottleneck(&r, "media", "hba media");
}

/// A root complex, one dual-port NIC at x4 and a CPU bridging frames at `load`.
fn bridge(load: f64, frame_cost: &str) -> String {
    format!(
        "[simulation]\nduration = \"3ms\"\nwarmup = \"500us\"\n[pcie]\nmps = 128\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[endpoint]]\nname = \"nic\"\nkind = \"nic\"\ninterrupt_interval = \"50us\"\n\
         [[link]]\nbetween = [\"rc\", \"nic\"]\nwidth = 4\n\
         [cpu]\nframe_cost = \"{frame_cost}\"\n\
         [[workload]]\nname = \"bridge\"\nkind = \"bridge\"\nendpoint = \"nic\"\n\
         frame_size = 64\nload = {load}\n"
    )
}

#[test]
fn a_host_that_cannot_keep_up_is_limited_by_its_cpu_and_a_light_load_by_itself() {
    let r = simulate(&bridge(0.5, "5us"));
    first_bottleneck(&r, "cpu", "cpu core 0");
    let r = simulate(&bridge(0.05, "1us"));
    let b = &r.flows[0].bottleneck;
    assert_eq!(b.kind, "offered_load", "{b:?}");
    let core = r.resources.iter().find(|c| c.kind == "cpu").unwrap();
    assert!(core.busy < 0.9, "{core:?}");
}

#[test]
fn a_scenario_without_a_cpu_lists_no_cores() {
    let r = simulate(&one_link("", "", READS));
    assert!(
        r.resources.iter().all(|c| c.kind != "cpu"),
        "{:?}",
        r.resources
    );
}

/// Two endpoints writing through a switch whose x4 upstream link is the bottleneck; the
/// switch advertises 8 posted headers per ingress port.
const FAN_IN: &str = "[simulation]\nduration = \"100us\"\nwarmup = \"10us\"\n[pcie]\nmps = 128\n\
    [[root_complex]]\nname = \"rc\"\n\
    [[switch]]\nname = \"sw\"\ncredits = { ph = 8, pd = 64 }\n\
    [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
    [[endpoint]]\nname = \"b\"\nkind = \"dma\"\n\
    [[link]]\nbetween = [\"rc\", \"sw\"]\nwidth = 4\n\
    [[link]]\nbetween = [\"sw\", \"a\"]\nwidth = 4\n\
    [[link]]\nbetween = [\"sw\", \"b\"]\nwidth = 4\n\
    [[workload]]\nname = \"a\"\nkind = \"dma\"\nendpoint = \"a\"\ndirection = \"write\"\n\
    transfer_size = \"4KiB\"\n\
    [[workload]]\nname = \"b\"\nkind = \"dma\"\nendpoint = \"b\"\ndirection = \"write\"\n\
    transfer_size = \"4KiB\"\n";

#[test]
fn egress_queues_build_where_the_bottleneck_is_and_stay_within_the_credits() {
    let r = simulate(FAN_IN);
    let link = |name: &str, dir: &str| {
        r.links
            .iter()
            .find(|l| l.name == name && l.direction == dir)
            .unwrap()
            .clone()
    };
    let up = link("rc-sw", "up");
    assert_eq!(r.flows[0].bottleneck.resource, "rc-sw up");
    // Two x4 inputs into one x4 output: the switch's egress queue is rarely short, and it
    // can never hold more posted TLPs than its two ingress ports advertise headers for.
    assert!(up.queue_mean_tlps > 4.0, "{up:?}");
    assert!(up.queue_max_tlps <= 16, "{up:?}");
    assert!(up.queue_mean_tlps <= up.queue_max_tlps as f64, "{up:?}");
    // Nothing flows down but DLLPs: no TLP ever waits there.
    let down = link("rc-sw", "down");
    assert_eq!(
        (down.queue_mean_tlps, down.queue_max_tlps),
        (0.0, 0),
        "{down:?}"
    );
}

#[test]
fn a_flow_is_judged_on_the_ways_its_own_packets_go() {
    // Writes short of posted credits share the endpoint's link with reads that fill the
    // other direction with completions: the writes' limit is their credits, not that wire.
    let text = one_link(
        "credits = { ph = 2, pd = 64 }",
        "propagation = \"200ns\"",
        WRITES,
    ) + "[[workload]]\nname = \"r\"\nkind = \"dma\"\nendpoint = \"ep\"\n"
        + READS;
    let r = simulate(&text);
    let (w, rd) = (&r.flows[0].bottleneck, &r.flows[1].bottleneck);
    assert_eq!(
        (w.kind, w.resource.as_str()),
        ("credits", "ep -> rc PH credits"),
        "{w:?}"
    );
    assert_eq!(
        (rd.kind, rd.resource.as_str()),
        ("link", "rc-ep down"),
        "{rd:?}"
    );
}

#[test]
fn seeking_drives_count_as_busy() {
    // Random 4 KB reads with 100 us of seek each: the drives, not the workload, set the rate.
    let text = "[simulation]\nduration = \"20ms\"\nwarmup = \"2ms\"\n[pcie]\nmps = 128\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[endpoint]]\nname = \"hba\"\nkind = \"storage\"\nmedia_read = \"300MB/s\"\n\
        media_write = \"300MB/s\"\nmedia_seek = \"100us\"\n\
        [[link]]\nbetween = [\"rc\", \"hba\"]\nwidth = 4\n\
        [[workload]]\nname = \"io\"\nkind = \"storage\"\nendpoint = \"hba\"\n\
        read_percent = 100\nread_size = \"4KB\"\noutstanding = 32\nrandom = true\n";
    let r = simulate(text);
    let b = first_bottleneck(&r, "media", "hba media");
    assert!(b.busy > 0.95, "{b:?}");
}

/// Issue 26 item 12: four readers and a writer behind one switch (see the file).
const READERS_AND_WRITER: &str = include_str!("scenarios/readers-and-writer-cplh.toml");

#[test]
fn readers_held_by_the_switch_cplh_credits_are_named_by_them_and_more_raise_them() {
    // The writer fills the root link's up direction, which the readers' requests share;
    // their completions wait for the switch's 64 CplH credits. Before, all four were
    // "limited by link (rc-sw up)" at 100 %.
    let r = simulate(READERS_AND_WRITER);
    for f in &r.flows[..4] {
        let b = &f.bottleneck;
        assert_eq!(
            (b.kind, b.resource.as_str()),
            ("credits", "rc -> sw CplH credits"),
            "{}: {b:?}",
            f.name
        );
        assert!(b.detail.contains("sw advertises 64"), "{b:?}");
    }
    let w = &r.flows[4].bottleneck;
    assert_eq!((w.kind, w.resource.as_str()), ("link", "rc-sw up"), "{w:?}");
    // The verdict is the resource that, raised, raises the readers: four times the CplH
    // credits, and each reads far more while the up direction stays full.
    let more = READERS_AND_WRITER.replacen(
        "latency = \"150ns\"\n",
        "latency = \"150ns\"\ncredits = { cplh = 256 }\n",
        1,
    );
    let raised = simulate(&more);
    for (a, b) in r.flows[..4].iter().zip(&raised.flows[..4]) {
        assert!(
            b.throughput_gbps > 1.3 * a.throughput_gbps,
            "{}: {} -> {} Gb/s",
            a.name,
            a.throughput_gbps,
            b.throughput_gbps
        );
        // Now their own x4 links are full.
        assert_eq!(b.bottleneck.kind, "link", "{:?}", b.bottleneck);
        assert!(b.bottleneck.busy > 0.99, "{:?}", b.bottleneck);
    }
    let up = |r: &RunResult| {
        r.links
            .iter()
            .find(|l| l.name == "rc-sw" && l.direction == "up")
            .unwrap()
            .utilization
    };
    assert!(up(&r) > 0.99 && up(&raised) > 0.99);
}

#[test]
fn reads_whose_requests_wait_behind_a_full_link_are_limited_by_it() {
    // One 512 B read at a time: the requests wait behind the writer's data on the up
    // direction, nothing stalls, and that wire (not the request window) is named.
    let text = READERS_AND_WRITER.replace(
        "direction = \"read\"\ntransfer_size = \"128KiB\"\noutstanding = 8",
        "direction = \"read\"\ntransfer_size = \"512B\"\noutstanding = 1",
    );
    assert_ne!(text, READERS_AND_WRITER);
    let r = simulate(&text);
    let b = &r.flows[0].bottleneck;
    assert_eq!((b.kind, b.resource.as_str()), ("link", "rc-sw up"), "{b:?}");
    assert!(b.detail.contains("read requests wait there"), "{b:?}");
}
