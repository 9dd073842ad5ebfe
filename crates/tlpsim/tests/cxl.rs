//! The CXL Type 3 memory expander (`[[endpoint]] kind = "cxl_memory"`) and its workload
//! (`[[workload]] kind = "cxl_mem"`): the media binds when it is slower than the link, the
//! link when the media is faster, and the `cxl` table reports both sides.

use tlpsim::scenario::load_str;
use tlpsim::sim::result::{CxlResult, KindResult, RunResult};
use tlpsim::sim::run;

/// A root complex and an expander `cxl` (`media` adds its keys) on a Gen5 x8 link (MPS 256
/// B), with `workloads`.
fn fabric(media: &str, workloads: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\n\
         [pcie]\nmps = 256\n\
         [[root_complex]]\nname = \"rc\"\ntags = 768\n\
         [[endpoint]]\nname = \"cxl\"\nkind = \"cxl_memory\"\n{media}\n\
         [[link]]\nbetween = [\"rc\", \"cxl\"]\ngen = 5\nwidth = 8\n{workloads}"
    )
}

/// A `cxl_mem` workload `name` from the root complex with `keys` added.
fn cxl_mem(name: &str, keys: &str) -> String {
    format!(
        "[[workload]]\nname = \"{name}\"\nkind = \"cxl_mem\"\nendpoint = \"rc\"\n\
         target = \"cxl\"\n{keys}\n"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap_or_else(|e| panic!("{e}"));
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// The run's `cxl` rows.
fn rows(r: &RunResult) -> Vec<&CxlResult> {
    r.kinds
        .iter()
        .filter_map(|k| match k {
            KindResult::Cxl(c) => Some(c),
            KindResult::Bridge(_) | KindResult::Fio(_) => None,
        })
        .collect()
}

#[test]
fn a_media_slower_than_the_link_binds_the_loads() {
    let media = "media_read = \"8GB/s\"\nmedia_write = \"8GB/s\"";
    let r = simulate(&fabric(media, &cxl_mem("loads", "outstanding = 256")));
    let c = rows(&r)[0];
    assert_eq!((c.op, c.size, c.outstanding), ("read", 64, 256));
    assert_eq!((c.source.as_str(), c.expander.as_str()), ("rc", "cxl"));
    assert!((c.bandwidth_gb_per_s / 8.0 - 1.0).abs() < 0.02, "{c:?}");
    assert!(c.media_utilization > 0.97, "{c:?}");
    assert!((c.accesses_per_s - c.bandwidth_gb_per_s * 1e9 / 64.0).abs() < 1.0);
    assert_eq!(
        r.flows[0].bottleneck.kind, "media",
        "{:?}",
        r.flows[0].bottleneck
    );
    assert_eq!(r.flows[0].bottleneck.resource, "cxl media (read)");
}

#[test]
fn a_media_faster_than_the_link_leaves_the_link_to_bind() {
    let media = "media_read = \"200GB/s\"\nmedia_write = \"200GB/s\"";
    let r = simulate(&fabric(media, &cxl_mem("loads", "outstanding = 512")));
    let c = rows(&r)[0];
    // Gen5 x8 carries 32 GB/s of raw bits each way; 64-byte completions with their
    // framing and headers get well under that, and the media idles most of the time.
    assert!(
        c.bandwidth_gb_per_s > 10.0 && c.bandwidth_gb_per_s < 32.0,
        "{c:?}"
    );
    assert!(c.media_utilization < 0.2, "{c:?}");
    let down = r.links.iter().find(|l| l.direction == "up").unwrap();
    assert!(down.utilization > 0.95, "{down:?}");
    assert_eq!(
        r.flows[0].bottleneck.kind, "link",
        "{:?}",
        r.flows[0].bottleneck
    );
}

#[test]
fn stores_run_at_the_write_media_rate_and_report_no_load_latency() {
    let media = "media_read = \"30GB/s\"\nmedia_write = \"5GB/s\"";
    let r = simulate(&fabric(
        media,
        &cxl_mem("stores", "read_fraction = 0\noutstanding = 64"),
    ));
    let c = rows(&r)[0];
    assert_eq!(c.op, "write");
    assert!((c.bandwidth_gb_per_s / 5.0 - 1.0).abs() < 0.02, "{c:?}");
    assert_eq!(
        (c.load_latency_ns_mean, c.load_latency_ns_p99),
        (None, None)
    );
    assert!((c.media_gb_per_s - 5.0).abs() < 1e-9);
}

#[test]
fn a_load_waits_the_media_latency() {
    let latency = |ns: u32| {
        let media = format!(
            "media_read = \"30GB/s\"\nmedia_write = \"30GB/s\"\nmedia_latency = \"{ns}ns\""
        );
        let r = simulate(&fabric(&media, &cxl_mem("one", "outstanding = 1")));
        let c = rows(&r)[0].clone();
        (
            c.load_latency_ns_mean.unwrap(),
            c.load_latency_ns_p99.unwrap(),
        )
    };
    let (mean, p99) = latency(170);
    assert!(mean > 170.0 && mean < 400.0, "{mean}");
    assert!(p99 >= mean - 1.0, "{p99} {mean}");
    // 80 ns more at the media is 80 ns more per load, the link's share unchanged.
    let (slower, _) = latency(250);
    assert!((slower - mean - 80.0).abs() < 1.0, "{mean} -> {slower}");
}

#[test]
fn a_mix_runs_a_read_and_a_write_stream_each_with_its_row() {
    let media = "media_read = \"30GB/s\"\nmedia_write = \"20GB/s\"";
    let r = simulate(&fabric(
        media,
        &cxl_mem("mix", "read_fraction = 0.75\noutstanding = 16"),
    ));
    let names: Vec<_> = r.flows.iter().map(|f| f.name.as_str()).collect();
    assert_eq!(names, ["mix.read", "mix.write"]);
    let rows = rows(&r);
    assert_eq!(rows.len(), 2);
    assert_eq!((rows[0].op, rows[0].outstanding), ("read", 12));
    assert_eq!((rows[1].op, rows[1].outstanding), ("write", 4));
    assert!(rows.iter().all(|c| c.bandwidth_gb_per_s > 0.0));
    // The JSON lists them under `cxl`; a run without a CXL workload has no such list.
    let json: serde_json::Value = serde_json::from_str(&r.to_json()).unwrap();
    assert_eq!(json["cxl"].as_array().unwrap().len(), 2);
    assert_eq!(json["cxl"][0]["name"], "mix.read");
    let memory = "[simulation]\nduration = \"10us\"\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[endpoint]]\nname = \"m\"\nkind = \"memory\"\nbar_size = \"1GiB\"\n\
        [[link]]\nbetween = [\"rc\", \"m\"]\ngen = 5\nwidth = 8\n\
        [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"m\"\n\
        direction = \"write\"\ntransfer_size = \"4KiB\"\n";
    let plain = simulate(memory);
    let json: serde_json::Value = serde_json::from_str(&plain.to_json()).unwrap();
    assert!(json.get("cxl").is_none() && json.get("fio").is_some());
}

#[test]
fn a_cxl_mem_workload_targets_an_expander_with_sane_keys() {
    let media = "media_read = \"30GB/s\"\nmedia_write = \"20GB/s\"";
    let refused = |workload: &str| {
        load_str(&fabric(media, workload), "<test>")
            .unwrap_err()
            .to_string()
    };
    let e = refused(
        "[[workload]]\nname = \"x\"\nkind = \"cxl_mem\"\nendpoint = \"rc\"\ntarget = \"rc\"\n",
    );
    assert!(e.contains("CXL memory expander"), "{e}");
    let e = refused(&cxl_mem("x", "read_fraction = 1.5"));
    assert!(e.contains("read_fraction"), "{e}");
    let e = refused(&cxl_mem("x", "read_fraction = 0.5\noutstanding = 1"));
    assert!(e.contains("outstanding = 2"), "{e}");
    let e = load_str(&fabric("media_read = \"30GB/s\"", ""), "<test>")
        .unwrap_err()
        .to_string();
    assert!(e.contains("media_write"), "{e}");
}
