//! What the schema and the errors say against what the code does: the lists of words come
//! from the code, and each claim a description makes is checked by a run.

use serde_json::Value;
use tlpsim::scenario::{json_schema, load_str, WorkloadKind};
use tlpsim::sim::result::RunResult;
use tlpsim::sim::run;

/// The description of `key` in the `[[workload]]` section of `kind`.
fn workload_key(kind: &str, key: &str) -> String {
    let schema: Value = serde_json::from_str(&json_schema()).unwrap();
    let variants = schema
        .pointer("/$defs/WorkloadSection/oneOf")
        .and_then(Value::as_array)
        .unwrap();
    variants
        .iter()
        .find(|v| v.pointer("/properties/kind/const").and_then(Value::as_str) == Some(kind))
        .and_then(|v| v.pointer(&format!("/properties/{key}/description")))
        .and_then(Value::as_str)
        .unwrap_or_else(|| panic!("no {key} in kind {kind}"))
        .replace('\n', " ")
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap_or_else(|e| panic!("{e}"));
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// The median latency of one 64 B read in flight over an 8 KiB window with `cache`, below
/// a root complex with an LLC.
fn read_latency(cache: &str) -> f64 {
    let text = format!(
        "[simulation]\nduration = \"20us\"\nwarmup = \"2us\"\n\
         [pcie]\ngen = 3\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"155ns\"\n\
         llc_size = \"25MiB\"\nllc_hit_latency = \"100ns\"\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 8\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\ndirection = \"read\"\n\
         transfer_size = \"64B\"\noutstanding = 1\nwindow = \"8KiB\"\ncache = \"{cache}\"\n"
    );
    simulate(&text).flows[0].transfer_latency_ns.p50.unwrap()
}

#[test]
fn the_schema_says_what_a_dma_workloads_cache_does() {
    // It has an effect: a cold window costs DRAM's latency, a warm one the LLC's.
    assert!(read_latency("cold") > read_latency("warm") + 50.0);
    let d = workload_key("dma", "cache");
    assert!(!d.contains("no effect yet"), "{d}");
    for word in ["warm", "cold", "device-warm", "remote-warm"] {
        assert!(d.contains(&format!("\"{word}\"")), "{word} missing: {d}");
    }
}

#[test]
fn the_schema_says_a_peer_target_may_sit_under_another_switch() {
    // GPUDirect Storage from a drive under sw1 into a GPU's BAR under sw2, through the root
    // complex: it loads and moves data.
    let text = "[simulation]\nduration = \"400us\"\nwarmup = \"100us\"\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[switch]]\nname = \"sw1\"\n[[switch]]\nname = \"sw2\"\n\
         [[endpoint]]\nname = \"gpu\"\nkind = \"memory\"\nbar_size = \"16GiB\"\n\
         [[endpoint]]\nname = \"nvme\"\nkind = \"nvme\"\nread_latency = \"20us\"\n\
         [[link]]\nbetween = [\"rc\", \"sw1\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"rc\", \"sw2\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw2\", \"gpu\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw1\", \"nvme\"]\ngen = 4\nwidth = 4\n\
         [[workload]]\nname = \"gds\"\nkind = \"fio\"\nendpoint = \"nvme\"\nrw = \"read\"\n\
         bs = \"16KiB\"\niodepth = 4\ntarget = \"gpu\"\n";
    let r = simulate(text);
    assert!(r.fio()[0].ios > 0 && r.fio()[0].target == "gpu");
    for kind in ["fio", "memcpy"] {
        let d = workload_key(kind, "target");
        assert!(
            !d.contains("same switch") && !d.contains("below a switch both"),
            "{d}"
        );
        assert!(d.contains("across switches"), "{kind}: {d}");
    }
}

#[test]
fn the_no_workload_error_names_every_workload_kind() {
    let e = load_str(
        "[[root_complex]]\nname = \"rc\"\n[[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\n",
        "f.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("has no [[workload]]"), "{e}");
    for (word, _) in WorkloadKind::WORDS {
        assert!(e.contains(&format!("\"{word}\"")), "{word} missing: {e}");
    }
}
