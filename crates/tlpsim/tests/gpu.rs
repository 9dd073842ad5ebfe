//! The GPU endpoint (`kind = "gpu"`) and its memcpy workloads (`kind = "memcpy"`): bulk
//! copies against the closed form, the copy engines' limits, both directions at once,
//! peer-to-peer below a switch, and the messages for mistakes.

use tlpsim::analytic::{CompletionSize, DllpPolicy, LinkRequest};
use tlpsim::scenario::load_str;
use tlpsim::sim::{result::RunResult, run};

/// A root complex (MPS-sized completions after 600 ns) and GPU `gpu0` (`keys` added to
/// its section) on a Gen`gen` x16 link, MPS 256 B, MRRS 512 B, then `workloads`.
fn host_and_gpu(gen: u32, keys: &str, workloads: &str) -> String {
    format!(
        "[simulation]\nduration = \"40us\"\nwarmup = \"10us\"\n\
         [pcie]\nmps = 256\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"600ns\"\ncompletion = \"mps\"\n\
         [[endpoint]]\nname = \"gpu0\"\nkind = \"gpu\"\n{keys}\n\
         [[link]]\nbetween = [\"rc\", \"gpu0\"]\ngen = {gen}\nwidth = 16\n{workloads}"
    )
}

/// A memcpy workload `name` on `endpoint` with the extra `keys`.
fn memcpy(name: &str, endpoint: &str, keys: &str) -> String {
    format!(
        "[[workload]]\nname = \"{name}\"\nkind = \"memcpy\"\nendpoint = \"{endpoint}\"\n{keys}\n"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    assert_eq!(r.audit.duplicates, 0);
    assert_eq!(r.audit.order_violations, 0);
    assert_eq!(r.audit.credit_violations, 0);
    r
}

/// The build error of `text`, as the user reads it.
fn refused(text: &str) -> String {
    load_str(text, "<test>").unwrap_err().to_string()
}

/// The closed form's (write, read) Gb/s of Gen`gen` x16, MPS 256 B, MRRS 512 B,
/// MPS-sized completions, bulk transfers; the data flow one way, so no DLLPs share their
/// direction.
fn closed(gen: i64) -> (f64, f64) {
    let req = LinkRequest {
        gen,
        width: 16,
        mps: 256,
        mrrs: 512,
        payload: Some(1 << 20),
        completion: CompletionSize::Mps,
        dllp: DllpPolicy::None,
        ..LinkRequest::default()
    };
    let b = tlpsim::link_bandwidth(&req).unwrap();
    (b.write_gbps, b.read_gbps)
}

#[test]
fn h2d_and_d2h_run_at_the_closed_form_from_gen3_to_gen5() {
    for gen in [3, 4, 5] {
        let (write, read) = closed(gen as i64);
        for (direction, closed) in [("h2d", read), ("d2h", write)] {
            let w = memcpy("copy", "gpu0", &format!("direction = \"{direction}\""));
            let r = simulate(&host_and_gpu(gen, "", &w));
            let f = &r.flows[0];
            let err = f.throughput_gbps / closed - 1.0;
            eprintln!(
                "Gen{gen} x16 {direction}: {:.3} Gb/s, closed form {closed:.3}: {err:+.4}",
                f.throughput_gbps
            );
            assert!(
                err.abs() < 0.05,
                "Gen{gen} {direction}: {} Gb/s against {closed}: {err:+.4}",
                f.throughput_gbps
            );
            assert_eq!(f.memcpy, Some(direction));
            let gbytes = f.memcpy_gbytes_per_s.expect("a memcpy flow's GB/s");
            assert!((gbytes * 8.0 - f.throughput_gbps).abs() < 1e-9);
        }
    }
}

#[test]
fn a_gen5_x16_read_with_the_default_tags_and_engines_reaches_the_link_limit() {
    // The root complex's default memory latency, the GPU's default tags (10 bits at Gen5)
    // and engines: nothing but the link limits the copy.
    let text = host_and_gpu(5, "", &memcpy("h2d", "gpu0", "direction = \"h2d\""))
        .replace("memory_read_latency = \"600ns\"\n", "");
    let r = simulate(&text);
    let f = &r.flows[0];
    let err = f.throughput_gbps / closed(5).1 - 1.0;
    eprintln!(
        "default Gen5 x16 h2d: {} Gb/s: {err:+.4}",
        f.throughput_gbps
    );
    assert!(err.abs() < 0.05, "{} Gb/s: {err:+.4}", f.throughput_gbps);
    assert_eq!(f.bottleneck.kind, "link", "{:?}", f.bottleneck);
}

#[test]
fn few_reads_per_engine_limit_a_host_to_device_copy() {
    // 8 reads of 512 B in flight over a 600 ns memory and the round trip: far below the
    // link, whatever the tags allow.
    let w = memcpy("h2d", "gpu0", "direction = \"h2d\"");
    let r = simulate(&host_and_gpu(5, "engine_reads = 8", &w));
    let f = &r.flows[0];
    let rtt_ns = f.latency_ns.mean.expect("reads answered") + 512.0 * 8.0 / closed(5).1;
    let little = 8.0 * 512.0 * 8.0 / rtt_ns; // Gb/s
    eprintln!(
        "{} Gb/s, Little's law {little} Gb/s, {:?}",
        f.throughput_gbps, f.bottleneck
    );
    assert!(
        f.throughput_gbps < 0.3 * closed(5).1 && (f.throughput_gbps / little - 1.0).abs() < 0.02,
        "{} Gb/s, Little's law {little} Gb/s",
        f.throughput_gbps
    );
    assert_eq!(f.bottleneck.kind, "requests");
    assert!(
        f.bottleneck
            .detail
            .contains("copy engine keeps at most 8 reads"),
        "{:?}",
        f.bottleneck
    );
}

#[test]
fn a_copy_setup_adds_its_time_to_every_copy() {
    // 64 KiB copies one after another, device to host (posted writes: no round trip of
    // their own). With a setup of 2 us each copy takes 2 us more: 64 KiB over (t + 2 us),
    // where t is a copy's time without it.
    let w = memcpy("d2h", "gpu0", "direction = \"d2h\"\nsize = \"64KiB\"");
    // 400 us: a hundred copies or more, so the window's edges hardly count.
    let gbps = |keys: &str| {
        let text = host_and_gpu(5, keys, &w).replace("\"40us\"", "\"400us\"");
        simulate(&text).flows[0].throughput_gbps
    };
    let (bare, slow) = (gbps(""), gbps("copy_setup = \"2us\""));
    let bits = 65536.0 * 8.0;
    let expected = bits / (bits / bare + 2000.0);
    eprintln!("{bare} Gb/s bare, {slow} with a 2 us setup, expected {expected}");
    assert!(
        (slow / expected - 1.0).abs() < 0.02,
        "{slow} against {expected}"
    );
}

#[test]
fn the_fluid_engine_refuses_a_copy_setup_in_one_line() {
    // Copies that take turns on an engine, or share a link, with a time per copy are not
    // a flow's rate: the fluid engine names the key.
    let w = memcpy("c", "gpu0", "direction = \"d2h\"");
    let sys = load_str(&host_and_gpu(5, "copy_setup = \"2us\"", &w), "<test>").unwrap();
    let why = tlpsim::fluid::run(&sys).err().unwrap().to_string();
    assert!(why.contains("gpu0") && why.contains("copy_setup"), "{why}");
}

#[test]
fn both_directions_copy_at_once_as_two_flows() {
    let w = memcpy("bi", "gpu0", "direction = \"both\"\nsize = \"64MiB\"");
    let r = simulate(&host_and_gpu(4, "", &w));
    let names: Vec<&str> = r.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["bi.h2d", "bi.d2h"]);
    let (write, read) = closed(4);
    // Each direction also carries the other's read requests or DLLPs: a little less.
    for (f, closed, word) in [(&r.flows[0], read, "h2d"), (&r.flows[1], write, "d2h")] {
        assert_eq!(f.memcpy, Some(word));
        let share = f.throughput_gbps / closed;
        assert!((0.85..1.01).contains(&share), "{}: {share}", f.name);
    }
    let down = r.links.iter().find(|l| l.direction == "down").unwrap();
    let up = r.links.iter().find(|l| l.direction == "up").unwrap();
    assert!(
        down.utilization > 0.95 && up.utilization > 0.95,
        "{down:?} {up:?}"
    );
}

/// Two GPUs below a Gen4 switch with an x16 link to the root complex, `workloads` added.
fn two_gpus_below_a_switch(workloads: &str) -> String {
    format!(
        "[simulation]\nduration = \"40us\"\nwarmup = \"10us\"\n\
         [pcie]\nmps = 256\nmrrs = 512\n\
         [[root_complex]]\nname = \"rc\"\ncompletion = \"mps\"\n\
         [[switch]]\nname = \"sw\"\n\
         [[endpoint]]\nname = \"gpu0\"\nkind = \"gpu\"\n\
         [[endpoint]]\nname = \"gpu1\"\nkind = \"gpu\"\nread_latency = \"700ns\"\n\
         [[link]]\nbetween = [\"rc\", \"sw\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"gpu0\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"gpu1\"]\ngen = 4\nwidth = 16\n{workloads}"
    )
}

#[test]
fn peer_copies_below_a_switch_leave_the_root_link_idle() {
    let (write, read) = closed(4);
    for (direction, closed, word) in [("write", write, "p2p-write"), ("read", read, "p2p-read")] {
        let w = memcpy(
            "p2p",
            "gpu0",
            &format!("target = \"gpu1\"\ndirection = \"{direction}\"\nsize = \"64MiB\""),
        );
        let r = simulate(&two_gpus_below_a_switch(&w));
        let f = &r.flows[0];
        assert_eq!((f.target.as_str(), f.memcpy), ("gpu1", Some(word)));
        let err = f.throughput_gbps / closed - 1.0;
        assert!(
            err.abs() < 0.05,
            "{direction}: {} Gb/s: {err:+.4}",
            f.throughput_gbps
        );
        for l in r.links.iter().filter(|l| l.name == "rc-sw") {
            assert!(l.utilization < 0.01, "{direction}: {l:?}");
        }
    }
}

#[test]
fn the_host_copies_into_a_gpus_bar_as_into_a_memory_endpoint() {
    let w = "[[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"gpu1\"\n\
             direction = \"write\"\ntransfer_size = \"64KiB\"\noutstanding = 4\n";
    let r = simulate(&two_gpus_below_a_switch(w));
    let err = r.flows[0].throughput_gbps / closed(4).0 - 1.0;
    assert!(
        err.abs() < 0.05,
        "{}: {err:+.4}",
        r.flows[0].throughput_gbps
    );
}

#[test]
fn the_gpu_and_memcpy_are_in_the_schema_with_their_defaults() {
    let text = tlpsim::scenario::json_schema();
    for word in [
        "\"gpu\"",
        "\"memcpy\"",
        "copy_engines",
        "engine_reads",
        "copy_setup",
        "\"h2d\"",
        "\"d2h\"",
        "512MiB",
        "32GiB",
    ] {
        assert!(text.contains(word), "the schema lacks {word}");
    }
}

#[test]
fn the_same_copy_gives_the_same_numbers() {
    let text = host_and_gpu(5, "", &memcpy("bi", "gpu0", "direction = \"both\""));
    let (a, b) = (simulate(&text), simulate(&text));
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.links, b.links);
}

#[test]
fn mistakes_with_a_gpu_or_a_memcpy_get_one_clear_message() {
    let h2d = memcpy("c", "gpu0", "direction = \"h2d\"");
    let cases: Vec<(String, Vec<&str>)> = vec![
        (
            host_and_gpu(5, "copy_engines = 0", &h2d),
            vec!["copy_engines", "1 to 64"],
        ),
        (
            host_and_gpu(5, "engine_reads = 1000", &h2d),
            vec!["engine_reads", "768"],
        ),
        (
            host_and_gpu(5, "bar_size = \"3GiB\"", &h2d),
            vec!["bar_size", "power of two"],
        ),
        (
            host_and_gpu(5, "tag_bits = 7", &h2d),
            vec!["tag_bits", "5, 8 or 10"],
        ),
        (
            host_and_gpu(5, "read_latency = \"fast\"", &h2d),
            vec!["read_latency"],
        ),
        (
            host_and_gpu(5, "copy_setup = \"soon\"", &h2d),
            vec!["copy_setup"],
        ),
        (
            host_and_gpu(5, "write_rate = \"-1GB/s\"", &h2d),
            vec!["write_rate"],
        ),
        (host_and_gpu(5, "engines = 2", &h2d), vec!["engines"]),
        (
            host_and_gpu(5, "", &memcpy("c", "gpu0", "")),
            vec!["direction", "h2d"],
        ),
        (
            host_and_gpu(5, "", &memcpy("c", "gpu0", "direction = \"sideways\"")),
            vec!["direction", "h2d", "both"],
        ),
        (
            host_and_gpu(5, "", &memcpy("c", "gpu0", "direction = \"write\"")),
            vec!["direction", "target"],
        ),
        (
            host_and_gpu(
                5,
                "",
                &memcpy("c", "gpu0", "direction = \"h2d\"\ntarget = \"rc\""),
            ),
            vec!["direction", "\"write\" or \"read\""],
        ),
        (
            host_and_gpu(5, "", &memcpy("c", "gpu0", "target = \"rc\"")),
            vec!["target", "a root complex", "memory BAR"],
        ),
        (
            host_and_gpu(5, "", &memcpy("c", "gpu0", "target = \"gpu0\"")),
            vec!["the GPU itself"],
        ),
        (
            host_and_gpu(
                5,
                "",
                &memcpy("c", "gpu0", "direction = \"h2d\"\nsize = \"2GiB\""),
            ),
            vec!["size", "1 GiB"],
        ),
        (
            host_and_gpu(5, "", &memcpy("c", "rc", "direction = \"h2d\"")),
            vec!["a root complex", "kind = \"gpu\""],
        ),
        (
            host_and_gpu(
                5,
                "",
                &format!(
                    "{}{}",
                    memcpy("c", "gpu0", "direction = \"both\""),
                    memcpy("c.h2d", "gpu0", "direction = \"d2h\"")
                ),
            ),
            vec!["c.h2d"],
        ),
        (
            two_gpus_below_a_switch(&memcpy("c", "gpu0", "target = \"gpu1\"\nsize = \"64GiB\"")),
            vec!["size", "1 GiB"],
        ),
        (
            two_gpus_below_a_switch(&memcpy("c", "gpu0", "target = \"gpu1\""))
                .replace("read_latency = \"700ns\"", "bar_size = \"256MiB\""),
            vec!["transfer_size", "BAR"],
        ),
    ];
    for (text, words) in &cases {
        let e = refused(text);
        for w in words {
            assert!(e.contains(w), "{e:?} lacks {w:?}");
        }
        assert!(!e.contains('\n'), "one line: {e:?}");
    }
}

#[test]
fn peer_copies_through_the_root_complex_run_at_its_forwarding_rate_or_are_refused() {
    let text = |rc: &str| {
        format!(
            "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\n\
             [[root_complex]]\nname = \"rc\"\n{rc}\n\
             [[endpoint]]\nname = \"gpu0\"\nkind = \"gpu\"\n\
             [[endpoint]]\nname = \"gpu1\"\nkind = \"gpu\"\n\
             [[link]]\nbetween = [\"rc\", \"gpu0\"]\ngen = 4\nwidth = 16\n\
             [[link]]\nbetween = [\"rc\", \"gpu1\"]\ngen = 4\nwidth = 16\n"
        ) + &memcpy("p2p", "gpu0", "target = \"gpu1\"\nsize = \"64MiB\"")
    };
    let r = simulate(&text("p2p_bandwidth = \"12GB/s\""));
    let got = r.flows[0].throughput_gbps / 8.0;
    assert!(
        (got / 12.0 - 1.0).abs() < 0.02,
        "{got} GB/s through a 12 GB/s root"
    );
    assert_eq!(r.flows[0].bottleneck.kind, "p2p");
    let e = refused(&text("p2p = \"refuse\""));
    assert!(e.contains("peer-to-peer") && !e.contains('\n'), "{e}");
}
