//! Peer-to-peer: a DMA endpoint writing into and reading from another endpoint's BAR, under
//! a common switch (the root link stays idle, the narrower link's closed form holds), with
//! ACS redirect (the copy crosses the root link both ways; the root link or the root
//! complex's forwarding limits it, and the verdict says which), and across two root ports
//! (forwarded at `p2p_bandwidth`, or refused at load time).

use tlpsim::analytic::{CompletionSize, LinkRequest};
use tlpsim::scenario::load_str;
use tlpsim::sim::result::RunResult;
use tlpsim::sim::run;

/// A Gen4 root complex `rc` (keys `rc`), a switch `sw` under it on a link of `root_width`
/// lanes (keys `switch`), a DMA endpoint `a` (x16) and a memory endpoint `b` (x8) below
/// the switch, and one DMA workload from `a` into `b` (keys `workload`).
fn under_switch(rc: &str, switch: &str, root_width: u32, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\nseed = 3\n\
         [pcie]\ngen = 4\nmps = 256\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\n{rc}\n\
         [[switch]]\nname = \"sw\"\nlatency = \"100ns\"\n{switch}\n\
         [[endpoint]]\nname = \"a\"\nkind = \"dma\"\ntags = 256\n\
         [[endpoint]]\nname = \"b\"\nkind = \"memory\"\nbar_size = \"1GiB\"\n\
         read_latency = \"500ns\"\n\
         [[link]]\nbetween = [\"rc\", \"sw\"]\nwidth = {root_width}\n\
         [[link]]\nbetween = [\"sw\", \"a\"]\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"b\"]\nwidth = 8\n\
         [[workload]]\nname = \"copy\"\nkind = \"dma\"\nendpoint = \"a\"\ntarget = \"b\"\n\
         transfer_size = \"64KiB\"\noutstanding = 8\n{workload}"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    assert!(r.flows[0].bytes > 0, "nothing moved");
    r
}

/// The closed form's (write, read) payload rate of a Gen4 link of `width` lanes, MPS 256,
/// MRRS 512, MPS-sized completions (a memory endpoint's), in Gb/s.
fn closed(width: i64) -> (f64, f64) {
    let req = LinkRequest {
        gen: 4,
        width,
        mps: 256,
        mrrs: 512,
        completion: CompletionSize::Mps,
        ..LinkRequest::default()
    };
    let b = tlpsim::link_bandwidth(&req).unwrap();
    (b.write_gbps, b.read_gbps)
}

/// Utilization of link `name` in direction `dir`.
fn busy(r: &RunResult, name: &str, dir: &str) -> f64 {
    let l = r
        .links
        .iter()
        .find(|l| l.name == name && l.direction == dir);
    l.unwrap_or_else(|| panic!("no link {name} {dir}"))
        .utilization
}

fn close(a: f64, b: f64, tol: f64) -> bool {
    (a / b - 1.0).abs() < tol
}

#[test]
fn p2p_under_a_common_switch_leaves_the_root_link_idle() {
    let (write, read) = closed(8);
    for (dir, expect) in [("write", write), ("read", read)] {
        let r = simulate(&under_switch(
            "",
            "",
            16,
            &format!("direction = \"{dir}\"\n"),
        ));
        let got = r.flows[0].throughput_gbps;
        assert!(
            close(got, expect, 0.02),
            "{dir}: {got} Gb/s against the x8 closed form {expect}"
        );
        for d in ["down", "up"] {
            assert!(busy(&r, "rc-sw", d) < 0.01, "{dir}: rc-sw {d} busy");
        }
        assert_eq!(r.flows[0].bottleneck.kind, "link", "{dir}");
        assert!(r.flows[0].bottleneck.resource.starts_with("sw-b"), "{dir}");
    }
}

#[test]
fn acs_redirect_sends_the_copy_through_the_root_both_ways() {
    // The root link is x4, narrower than the x8 target: it limits the redirected copy.
    let (write_x4, _) = closed(4);
    let r = simulate(&under_switch(
        "",
        "acs_redirect = true",
        4,
        "direction = \"write\"\n",
    ));
    let got = r.flows[0].throughput_gbps;
    assert!(close(got, write_x4, 0.03), "{got} against x4 {write_x4}");
    assert!(busy(&r, "rc-sw", "up") > 0.9, "the copy goes up");
    assert!(busy(&r, "rc-sw", "down") > 0.9, "and comes back down");
    let b = &r.flows[0].bottleneck;
    assert_eq!((b.kind, b.resource.as_str()), ("link", "rc-sw up"), "{b:?}");

    // A root complex forwarding at 5 GB/s limits it instead, and the verdict says so.
    let r = simulate(&under_switch(
        "p2p_bandwidth = \"5GB/s\"",
        "acs_redirect = true",
        16,
        "direction = \"write\"\n",
    ));
    let got = r.flows[0].throughput_gbps;
    assert!(close(got, 40.0, 0.02), "{got} Gb/s against 5 GB/s");
    assert_eq!(
        r.flows[0].bottleneck.kind, "p2p",
        "{:?}",
        r.flows[0].bottleneck
    );

    // Reads too: requests and completions both go by way of the root complex.
    let r = simulate(&under_switch(
        "",
        "acs_redirect = true",
        16,
        "direction = \"read\"\n",
    ));
    assert!(busy(&r, "rc-sw", "up") > 0.3 && busy(&r, "rc-sw", "down") > 0.3);

    // ACS on the target's port alone: the requests go across, the completions come back
    // by way of the root complex.
    let text = under_switch("", "", 16, "direction = \"read\"\n").replace(
        "between = [\"sw\", \"b\"]\nwidth = 8\n",
        "between = [\"sw\", \"b\"]\nwidth = 8\nacs_redirect = true\n",
    );
    let r = simulate(&text);
    let down = r
        .links
        .iter()
        .find(|l| l.name == "rc-sw" && l.direction == "down");
    let up = r
        .links
        .iter()
        .find(|l| l.name == "rc-sw" && l.direction == "up");
    assert!(down.unwrap().payload_gbps > 10.0 && up.unwrap().payload_gbps > 10.0);
}

/// Two root ports of `rc` (keys `rc`), a DMA endpoint `a` below one and a memory endpoint
/// `b` below the other, both Gen4 x16, `a` writing into `b`.
fn across_root_ports(rc: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\nseed = 3\n\
         [pcie]\ngen = 4\nmps = 256\n\
         [[root_complex]]\nname = \"rc\"\n{rc}\n\
         [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
         [[endpoint]]\nname = \"b\"\nkind = \"memory\"\nbar_size = \"1GiB\"\n\
         [[link]]\nbetween = [\"rc\", \"a\"]\nwidth = 16\n\
         [[link]]\nbetween = [\"rc\", \"b\"]\nwidth = 16\n\
         [[workload]]\nname = \"copy\"\nkind = \"dma\"\nendpoint = \"a\"\ntarget = \"b\"\n\
         direction = \"write\"\ntransfer_size = \"64KiB\"\noutstanding = 8\n"
    )
}

#[test]
fn a_root_complex_forwards_between_root_ports_or_refuses_at_load_time() {
    let (write, _) = closed(16);
    let r = simulate(&across_root_ports(""));
    assert!(close(r.flows[0].throughput_gbps, write, 0.02));
    let r = simulate(&across_root_ports(
        "p2p_bandwidth = \"10GB/s\"\np2p_latency = \"300ns\"",
    ));
    assert!(close(r.flows[0].throughput_gbps, 80.0, 0.02));
    assert_eq!(r.flows[0].bottleneck.kind, "p2p");
    assert_eq!(r.flows[0].bottleneck.resource, "rc peer-to-peer forwarding");

    let e = load_str(&across_root_ports("p2p = \"refuse\""), "<test>").unwrap_err();
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(
        msg.contains("crosses root complex \"rc\"") && msg.contains("p2p = \"refuse\""),
        "{msg}"
    );
    let e = load_str(
        &across_root_ports("p2p = \"refuse\"\np2p_bandwidth = \"1GB/s\""),
        "<test>",
    )
    .unwrap_err();
    assert!(e
        .to_string()
        .contains("p2p_bandwidth applies only with p2p = \"forward\""));
}

#[test]
fn acs_redirect_is_a_switch_port_key() {
    let text = across_root_ports("").replace(
        "between = [\"rc\", \"b\"]\nwidth = 16\n",
        "between = [\"rc\", \"b\"]\nwidth = 16\nacs_redirect = true\n",
    );
    let msg = load_str(&text, "<test>").unwrap_err().to_string();
    assert!(
        msg.contains("acs_redirect applies to a switch's downstream port"),
        "{msg}"
    );
}

#[test]
fn a_redirected_copy_refused_by_the_root_complex_is_refused_at_load_time() {
    let w = "direction = \"write\"\n";
    let text = under_switch("p2p = \"refuse\"", "acs_redirect = true", 16, w);
    let msg = load_str(&text, "<test>").unwrap_err().to_string();
    assert!(msg.contains("crosses root complex \"rc\""), "{msg}");
    // Without ACS the same copy stays under the switch and loads.
    load_str(&under_switch("p2p = \"refuse\"", "", 16, w), "<test>").unwrap();
}

/// `under_switch` with ACS redirect only on the port of the read's target `b`.
fn redirect_at_target(rc: &str, direction: &str) -> String {
    under_switch(rc, "", 16, &format!("direction = \"{direction}\"\n")).replace(
        "between = [\"sw\", \"b\"]\nwidth = 8\n",
        "between = [\"sw\", \"b\"]\nwidth = 8\nacs_redirect = true\n",
    )
}

#[test]
fn completions_redirected_through_a_refusing_root_complex_are_refused() {
    // ACS at the target's port: the read requests cross the switch, the completions go up
    // through the root complex. A refusing root complex refuses the read at load time.
    let e = load_str(&redirect_at_target("p2p = \"refuse\"", "read"), "<test>").unwrap_err();
    let msg = e.to_string();
    assert!(!msg.contains('\n'), "one line: {msg}");
    assert!(
        msg.contains("completions of peer-to-peer reads") && msg.contains("root complex \"rc\""),
        "{msg}"
    );
    // Writes send nothing back: they stay under the switch and load.
    load_str(&redirect_at_target("p2p = \"refuse\"", "write"), "<test>").unwrap();
    // A forwarding root complex carries the completions at its p2p_bandwidth.
    let r = simulate(&redirect_at_target("p2p_bandwidth = \"1GB/s\"", "read"));
    assert!(
        close(r.flows[0].throughput_gbps, 8.0, 0.03),
        "{}",
        r.flows[0].throughput_gbps
    );
    assert_eq!(r.flows[0].bottleneck.kind, "p2p");
}

#[test]
fn p2p_runs_are_deterministic() {
    let text = under_switch("", "acs_redirect = true", 8, "direction = \"read\"\n");
    let a = simulate(&text);
    let b = simulate(&text);
    assert_eq!(a.flows[0].bytes, b.flows[0].bytes);
    assert_eq!(a.events, b.events);
}

/// A peer-to-peer write from `a` (below one root port) into `m` and a host read by `g`
/// share the root complex's egress toward the switch above both: the forwarded TLPs and the
/// root complex's own completions take turns there, whichever root port is listed first.
fn forwarded_beside_own(first: &str, second: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\nseed = 3\n\
         [pcie]\ngen = 4\nmps = 256\n\
         [[root_complex]]\nname = \"rc\"\ncompletion = \"mps\"\n\
         [[switch]]\nname = \"sw\"\n\
         [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
         [[endpoint]]\nname = \"m\"\nkind = \"memory\"\nbar_size = \"1GiB\"\n\
         [[endpoint]]\nname = \"g\"\nkind = \"dma\"\ntags = 256\n\
         {first}{second}\
         [[link]]\nbetween = [\"sw\", \"m\"]\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"g\"]\nwidth = 16\n\
         [[workload]]\nname = \"p2p\"\nkind = \"dma\"\nendpoint = \"a\"\ntarget = \"m\"\n\
         direction = \"write\"\ntransfer_size = \"64KiB\"\noutstanding = 8\n\
         [[workload]]\nname = \"h2d\"\nkind = \"dma\"\nendpoint = \"g\"\n\
         direction = \"read\"\ntransfer_size = \"64KiB\"\noutstanding = 8\n"
    )
}

#[test]
fn forwarded_and_own_tlps_share_a_root_port_whatever_the_link_order() {
    let to_a = "[[link]]\nbetween = [\"rc\", \"a\"]\nwidth = 16\n";
    let to_sw = "[[link]]\nbetween = [\"rc\", \"sw\"]\nwidth = 16\n";
    let mut shares = Vec::new();
    for (first, second) in [(to_a, to_sw), (to_sw, to_a)] {
        let r = simulate(&forwarded_beside_own(first, second));
        let (p2p, h2d) = (r.flows[0].throughput_gbps, r.flows[1].throughput_gbps);
        assert!(close(p2p, h2d, 0.05), "{p2p} against {h2d} Gb/s");
        shares.push(p2p);
    }
    assert!(close(shares[0], shares[1], 0.01), "{shares:?}");
}
