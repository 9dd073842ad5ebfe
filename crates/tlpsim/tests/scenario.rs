//! The scenario format: its JSON Schema lists every word a key takes and every default the
//! loader fills in, and a table of one kind refuses the keys of another at their line.

use serde_json::Value;
use tlpsim::scenario::{json_schema, load_str};

/// String keys whose values are free text, not words from a fixed set nor quantities with a
/// `pattern`: names of files, nodes and flows.
const FREE_TEXT: &[&str] = &[
    "include",
    "name",
    "endpoint",
    "target",
    "memory",
    "root",
    "host_bridge",
    "between",
];

fn schema() -> Value {
    serde_json::from_str(&json_schema()).expect("the schema is JSON")
}

/// `v` with its `$ref` followed.
fn resolve<'a>(root: &'a Value, v: &'a Value) -> &'a Value {
    match v.get("$ref").and_then(Value::as_str) {
        Some(r) => root
            .pointer(r.trim_start_matches('#'))
            .unwrap_or_else(|| panic!("{r} does not resolve")),
        None => v,
    }
}

/// Every property in the schema as (path, schema), through refs, arrays and variants.
fn properties(root: &Value) -> Vec<(String, &Value)> {
    fn walk<'a>(root: &'a Value, node: &'a Value, path: &str, out: &mut Vec<(String, &'a Value)>) {
        assert!(
            path.matches('.').count() < 12,
            "the schema nests too deep at {path}"
        );
        let node = resolve(root, node);
        if let Some(props) = node.get("properties").and_then(Value::as_object) {
            for (k, v) in props {
                let p = format!("{path}.{k}");
                out.push((p.clone(), v));
                walk(root, v, &p, out);
            }
        }
        for key in ["items", "additionalProperties"] {
            if let Some(v) = node.get(key).filter(|v| v.is_object()) {
                walk(root, v, path, out);
            }
        }
        for key in ["oneOf", "anyOf", "allOf"] {
            for v in node
                .get(key)
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                walk(root, v, path, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(root, root, "", &mut out);
    out
}

/// The schemas a value of `v` may match: its alternatives, arrays' items and maps' values.
fn alternatives<'a>(root: &'a Value, v: &'a Value, out: &mut Vec<&'a Value>) {
    let v = resolve(root, v);
    let mut branched = false;
    for key in ["oneOf", "anyOf"] {
        for alt in v.get(key).and_then(Value::as_array).into_iter().flatten() {
            branched = true;
            alternatives(root, alt, out);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner) = v.get(key).filter(|v| v.is_object()) {
            alternatives(root, inner, out);
        }
    }
    if !branched {
        out.push(v);
    }
}

fn is_string(v: &Value) -> bool {
    match v.get("type") {
        Some(Value::String(t)) => t == "string",
        Some(Value::Array(ts)) => ts.iter().any(|t| t == "string"),
        _ => false,
    }
}

/// The literal after "default " in a description: `"150ns"`, `128`, `true`, `0`.
fn documented_default(description: &str) -> Option<Value> {
    description.match_indices("default ").find_map(|(i, _)| {
        let rest = &description[i + "default ".len()..];
        let end = if let Some(quoted) = rest.strip_prefix('"') {
            quoted.find('"')? + 2
        } else {
            rest.find([')', ',', ';', ':', ' ']).unwrap_or(rest.len())
        };
        let (token, after) = rest.split_at(end);
        let after = after.trim_end_matches('.');
        let ends = after.is_empty() || after.starts_with([')', ',', ';', ':']);
        ends.then(|| serde_json::from_str(token).ok()).flatten()
    })
}

/// Defaults equal as JSON values, numbers by value (the doc says 0, the schema 0.0).
fn same(a: &Value, b: &Value) -> bool {
    match (a.as_f64(), b.as_f64()) {
        (Some(x), Some(y)) => x == y,
        _ => a == b,
    }
}

#[test]
fn every_word_valued_key_lists_its_words() {
    let root = schema();
    let mut free = Vec::new();
    for (path, v) in properties(&root) {
        let key = path.rsplit('.').next().unwrap_or_default();
        let mut alts = Vec::new();
        alternatives(&root, v, &mut alts);
        for alt in alts {
            if let Some(words) = alt.get("enum") {
                let words = words.as_array().expect("enum is a list");
                assert!(!words.is_empty(), "{path}: an empty enum");
                assert!(words.iter().all(Value::is_string), "{path}: {words:?}");
            } else if is_string(alt)
                && alt.get("const").is_none()
                && alt.get("pattern").is_none()
                && !FREE_TEXT.contains(&key)
            {
                free.push(path.clone());
            }
        }
    }
    assert!(
        free.is_empty(),
        "string keys without an enum or a pattern (words from a fixed set need an enum, \
         quantities a pattern; names go in FREE_TEXT): {free:?}"
    );
    // The words themselves, for the keys the issue names.
    let words = |def: &str| root["$defs"][def]["enum"].clone();
    assert_eq!(
        words("ForwardingWord"),
        serde_json::json!(["cut-through", "store-and-forward"])
    );
    assert_eq!(
        words("ArbitrationWord"),
        serde_json::json!(["round-robin", "weighted", "oldest"])
    );
    assert_eq!(
        words("DirectionWord"),
        serde_json::json!(["read", "write", "both", "alternate", "write-read"])
    );
    let kinds: Vec<&str> = root["$defs"]["EndpointSection"]["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["properties"]["kind"]["const"].as_str().unwrap())
        .collect();
    assert_eq!(
        kinds,
        [
            "dma",
            "storage",
            "nic",
            "memory",
            "nvme",
            "gpu",
            "cxl_memory"
        ]
    );
}

/// Every `pattern` in the schema, with the path of its property.
fn patterns(root: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (path, v) in properties(root) {
        let mut alts = Vec::new();
        alternatives(root, v, &mut alts);
        for alt in alts {
            if let Some(p) = alt.get("pattern") {
                out.push((
                    path.clone(),
                    p.as_str().expect("a pattern is text").to_string(),
                ));
            }
        }
    }
    out
}

#[test]
fn every_quantity_pattern_is_an_anchored_regular_expression() {
    let root = schema();
    let patterns = patterns(&root);
    assert!(patterns.len() >= 95, "only {} patterns", patterns.len());
    for (path, p) in &patterns {
        assert!(
            p.starts_with('^') && p.ends_with('$'),
            "{path}: {p} is not anchored"
        );
        if let Err(e) = regex_syntax::parse(p) {
            panic!("{path}: {p} does not compile: {e}");
        }
    }
    // Keys of each kind carry their parser's pattern, however they are written.
    let of = |path: &str| {
        let found = patterns.iter().find(|(p, _)| p == path);
        found.map(|(_, p)| p.as_str()).unwrap_or_default()
    };
    assert_eq!(of(".simulation.duration"), tlpsim::units::DURATION_PATTERN);
    assert_eq!(of(".pcie.replay_buffer"), tlpsim::units::BYTES_PATTERN);
    assert_eq!(of(".host_bridge.bandwidth"), tlpsim::units::RATE_PATTERN);
    assert_eq!(of(".link.rate"), tlpsim::units::GT_PER_S_PATTERN);
    assert_eq!(of(".ntb.window.base"), tlpsim::units::ADDRESS_PATTERN);
    assert_eq!(
        of(".root_complex.completion_timeout"),
        tlpsim::units::DURATION_OR_OFF_PATTERN
    );
    assert_eq!(
        of(".root_complex.memory_read_latency"),
        tlpsim::units::DURATION_PATTERN
    );
    assert_eq!(
        of(".switch.latency_by_width"),
        tlpsim::units::DURATION_PATTERN
    );
}

#[test]
fn every_default_is_in_the_schema_and_its_description() {
    let root = schema();
    let mut checked = 0;
    for (path, v) in properties(&root) {
        let description = v.get("description").and_then(Value::as_str).unwrap_or("");
        let description = description.replace('\n', " ");
        let documented = documented_default(&description);
        match (documented, v.get("default")) {
            (Some(d), Some(s)) => {
                assert!(same(&d, s), "{path}: description says {d}, schema {s}");
                checked += 1;
            }
            (Some(d), None) => panic!("{path}: description says default {d}, schema has none"),
            (None, Some(s)) if !s.is_object() && !s.is_array() => {
                panic!("{path}: schema default {s} is not in the description {description:?}")
            }
            _ => {}
        }
    }
    assert!(checked >= 45, "only {checked} defaults checked");
    let pcie = resolve(&root, &root["properties"]["pcie"]["anyOf"][0]);
    assert_eq!(pcie["properties"]["mps"]["default"], 128);
    assert_eq!(pcie["properties"]["ack"]["default"], "timer");
}

/// A scenario with every section and kind, leaving every key with a default out.
const EVERY_SECTION: &str = r#"
[simulation]
[pcie]
[[host_bridge]]
name = "hb"
bandwidth = "4GB/s"
[[root_complex]]
name = "rc"
host_bridge = "hb"
outbound_queue = "shared"
[[root_complex]]
name = "far"
[[switch]]
name = "sw"
[[ntb]]
name = "nt"
[[endpoint]]
name = "dma"
kind = "dma"
[[endpoint]]
name = "hba"
kind = "storage"
media_read = "800MB/s"
media_write = "700MB/s"
[[endpoint]]
name = "nic"
kind = "nic"
[[link]]
between = ["rc", "sw"]
[[link]]
between = ["sw", "dma"]
[[link]]
between = ["sw", "hba"]
[[link]]
between = ["sw", "nic"]
[[link]]
between = ["sw", "nt"]
[[link]]
between = ["nt", "far"]
[cpu]
frame_cost = "2us"
[[workload]]
name = "reads"
kind = "dma"
endpoint = "dma"
direction = "read"
transfer_size = "4KiB"
[[workload]]
name = "io"
kind = "storage"
endpoint = "hba"
read_percent = 50
read_size = "64KiB"
write_size = "64KiB"
[[workload]]
name = "frames"
kind = "bridge"
endpoint = "nic"
frame_size = 64
load = 0.5
"#;

/// The keys of `section`'s table of `kind` in the schema, with their schemas.
fn section_keys<'a>(
    root: &'a Value,
    section: &str,
    kind: Option<&str>,
) -> &'a serde_json::Map<String, Value> {
    let mut s = &root["properties"][section];
    s = s.get("anyOf").map_or(s, |a| &a[0]);
    s = resolve(root, s);
    s = s.get("items").map_or(s, |i| resolve(root, i));
    if let Some(variants) = s.get("oneOf").and_then(Value::as_array) {
        s = variants
            .iter()
            .find(|v| v["properties"]["kind"]["const"].as_str() == kind)
            .expect("a variant per kind");
    }
    s["properties"].as_object().expect("properties")
}

#[test]
fn the_schema_defaults_are_what_the_loader_fills_in() {
    let root = schema();
    let implicit = load_str(EVERY_SECTION, "implicit.toml").expect("the scenario loads");
    let mut doc: toml::Table = EVERY_SECTION.parse().unwrap();
    let mut written = 0;
    for (section, value) in doc.iter_mut() {
        let tables: Vec<&mut toml::Table> = match value {
            toml::Value::Table(t) => vec![t],
            toml::Value::Array(a) => a.iter_mut().filter_map(toml::Value::as_table_mut).collect(),
            _ => vec![],
        };
        for t in tables {
            let kind = t
                .get("kind")
                .and_then(toml::Value::as_str)
                .map(str::to_string);
            for (key, v) in section_keys(&root, section, kind.as_deref()) {
                let Some(default) = v.get("default").filter(|d| !d.is_array()) else {
                    continue;
                };
                // port_queue applies only to a shared outbound queue.
                let shared =
                    t.get("outbound_queue").and_then(toml::Value::as_str) == Some("shared");
                if !t.contains_key(key) && (key != "port_queue" || shared) {
                    t.insert(
                        key.clone(),
                        serde_json::from_value(default.clone()).unwrap(),
                    );
                    written += 1;
                }
            }
        }
    }
    let explicit_text = toml::to_string(&doc).unwrap();
    let explicit = load_str(&explicit_text, "explicit.toml").expect("the defaults load");
    assert!(
        written >= 50,
        "only {written} defaults written:\n{explicit_text}"
    );
    assert_eq!(implicit, explicit, "{explicit_text}");
}

/// `EVERY_SECTION` with `from` replaced by `to`; the message it gets.
fn refused(from: &str, to: &str) -> String {
    assert!(EVERY_SECTION.contains(from), "{from}");
    let text = EVERY_SECTION.replacen(from, to, 1);
    let e = load_str(&text, "f.toml").expect_err("refused").to_string();
    assert!(!e.contains('\n'), "{e}");
    e
}

#[test]
fn a_key_of_another_kind_is_refused_at_its_line_with_the_kinds_it_needs() {
    let e = refused(
        "kind = \"dma\"\n",
        "kind = \"dma\"\nmedia_read = \"1GB/s\"\n",
    );
    for want in [
        "f.toml: line 20 (`media_read = \"1GB/s\"`): [[endpoint]] 1 (dma): ",
        "unknown field `media_read`, expected one of `kind`, `name`, `tag_bits`, `tags`, `completion_timeout`, `credits`",
        "media_read needs kind = \"storage\"",
    ] {
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    let e = refused(
        "direction = \"read\"\n",
        "direction = \"read\"\nload = 0.5\n",
    );
    assert!(
        e.contains("[[workload]] 1 (reads): unknown field `load`"),
        "{e}"
    );
    assert!(e.contains("load needs kind = \"bridge\""), "{e}");
    let e = refused("load = 0.5\n", "load = 0.5\noutstanding = 2\n");
    assert!(
        e.contains("outstanding needs kind = \"dma\" or \"storage\""),
        "{e}"
    );
}

#[test]
fn a_missing_or_unknown_kind_names_the_table_and_the_kinds() {
    let e = refused("kind = \"nic\"\n", "kind = \"fpga\"\n");
    assert!(
        e.contains("line 27 (`kind = \"fpga\"`): [[endpoint]] 3 (nic): "),
        "{e}"
    );
    assert!(
        e.contains("kind \"fpga\" is not allowed; allowed: dma, storage, nic"),
        "{e}"
    );
    let e = refused("kind = \"storage\"\nendpoint", "endpoint");
    assert!(
        e.contains("(`[[workload]]`): [[workload]] 2 (io): missing field `kind`"),
        "{e}"
    );
    assert!(e.contains("allowed: dma, storage, bridge"), "{e}");
    let e = refused("kind = \"nic\"\n", "kind = 3\n");
    assert!(
        e.contains("kind 3 is not allowed; allowed: dma, storage, nic"),
        "{e}"
    );
}

#[test]
fn a_word_or_a_required_key_gets_its_words_at_its_line() {
    let e = refused(
        "name = \"sw\"\n",
        "name = \"sw\"\nforwarding = \"wormhole\"\n",
    );
    assert!(
        e.contains("line 15 (`forwarding = \"wormhole\"`): [[switch]] 1 (sw): "),
        "{e}"
    );
    assert!(
        e.contains(
            "forwarding \"wormhole\" is not allowed; allowed: cut-through, store-and-forward"
        ),
        "{e}"
    );
    let e = refused("direction = \"read\"\n", "");
    assert!(
        e.contains("missing field `direction`; allowed: read, write, both"),
        "{e}"
    );
    let e = refused("transfer_size = \"4KiB\"\n", "");
    assert!(
        e.contains("missing field `transfer_size` (Bytes per transfer, e.g. \"4KiB\")"),
        "{e}"
    );
    let e = refused(
        "name = \"far\"\n",
        "name = \"far\"\nmemory_read_latency = { distribution = \"gaussian\", min = \"1ns\" }\n",
    );
    assert!(e.contains("[[root_complex]] 2 (far): "), "{e}");
    assert!(
        e.contains("distribution \"gaussian\" is not allowed; allowed: uniform, exponential"),
        "{e}"
    );
    let e = refused(
        "name = \"sw\"\n",
        "name = \"sw\"\ncredits = { ph = true }\n",
    );
    assert!(
        e.contains("expected a credit count such as 32, or \"infinite\""),
        "{e}"
    );
    let e = refused(
        "name = \"sw\"\n",
        "name = \"sw\"\ncredits = { ph = \"lots\" }\n",
    );
    assert!(
        e.contains("credits.ph \"lots\" is not allowed; allowed: 1 to 1048576, or \"infinite\""),
        "{e}"
    );
}

#[test]
fn data_credits_below_one_mps_sized_tlp_are_refused_at_load_time() {
    // MPS 256 with MPS-sized completions and an endpoint advertising 4 CplD credits (64 B):
    // no completion could ever fit, so the file is refused in one line naming the key.
    let text = |credits: &str| {
        format!(
            "[simulation]\nduration = \"99us\"\n[pcie]\nmps = 256\nrcb = 128\n\
             [[root_complex]]\nname = \"rc\"\ncompletion = \"mps\"\n\
             [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ncredits = {{ {credits} }}\n\
             [[link]]\nbetween = [\"rc\", \"ep\"]\n\
             [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
             direction = \"read\"\ntransfer_size = \"4KiB\"\n"
        )
    };
    for (credits, key) in [("cpld = 4", "credits.cpld"), ("pd = 15", "credits.pd")] {
        let msg = load_str(&text(credits), "<test>").unwrap_err().to_string();
        assert!(!msg.contains('\n'), "one line: {msg}");
        assert!(
            msg.contains(key) && msg.contains("at least 16") && msg.contains("[[endpoint]] 1 (ep)"),
            "{msg}"
        );
    }
    load_str(&text("cpld = 16, pd = 16"), "<test>").unwrap();
    load_str(&text("cpld = \"infinite\""), "<test>").unwrap();
}

/// A small fabric with two host bridges and two workloads, whose second names are `hb` and
/// `w`: the names under test.
fn with_names(hb: &str, w: &str) -> String {
    format!(
        r#"
[simulation]
duration = "1us"
[[host_bridge]]
name = "hb0"
bandwidth = "2GB/s"
latency = "100ns"
[[host_bridge]]
name = "{hb}"
bandwidth = "2GB/s"
latency = "100ns"
[[root_complex]]
name = "rc"
host_bridge = "hb0"
[[endpoint]]
name = "ep"
kind = "dma"
[[link]]
between = ["rc", "ep"]
[[workload]]
name = "w0"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
[[workload]]
name = "{w}"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
"#
    )
}

#[test]
fn a_name_used_twice_is_refused_whatever_the_number_of_sections() {
    if let Err(e) = load_str(&with_names("hb1", "w1"), "t") {
        panic!("{e}");
    }
    let hb = load_str(&with_names("hb0", "w1"), "t")
        .unwrap_err()
        .to_string();
    assert!(
        hb.contains("[[host_bridge]] 2 (hb0): the name \"hb0\" is used twice"),
        "{hb}"
    );
    let w = load_str(&with_names("hb1", "w0"), "t")
        .unwrap_err()
        .to_string();
    assert!(
        w.contains("[[workload]] 2 (w0): the workload name \"w0\" is used twice"),
        "{w}"
    );
}

/// A root complex, a DMA endpoint and two workloads on it, `a` reading and `b` writing.
const TWO_WORKLOADS: &str = "[simulation]\nduration = \"20us\"\n[pcie]\ngen = 3\n\
    [[root_complex]]\nname = \"rc\"\n[[endpoint]]\nname = \"ep\"\nkind = \"dma\"\n\
    [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 4\n\
    [[workload]]\nname = \"a\"\nkind = \"dma\"\nendpoint = \"ep\"\ndirection = \"read\"\n\
    transfer_size = \"4KiB\"\n\
    [[workload]]\nname = \"b\"\nkind = \"dma\"\nendpoint = \"ep\"\ndirection = \"write\"\n\
    transfer_size = \"4KiB\"\n";

#[test]
fn a_workload_with_enabled_false_stays_in_the_file_and_out_of_the_run() {
    let both = load_str(TWO_WORKLOADS, "<test>").unwrap();
    assert_eq!(both.workloads.len(), 2);
    let text = tlpsim::scenario::set_value(TWO_WORKLOADS, "<test>", "workload.b.enabled", "false")
        .unwrap();
    let one = load_str(&text, "<test>").unwrap();
    let names: Vec<&str> = one.workloads.iter().map(|w| w.name.as_str()).collect();
    assert_eq!(names, ["a"]);
    // Every workload off: one line that says so, naming them.
    let none = tlpsim::scenario::set_value(&text, "<test>", "workload.a.enabled", "false");
    let e = none.and_then(|t| load_str(&t, "<test>").map(|_| t));
    let msg = e.unwrap_err().to_string();
    assert!(
        msg.contains("every [[workload]] has enabled = false (a, b)") && !msg.contains('\n'),
        "{msg}"
    );
    // Not a boolean: refused.
    let e = tlpsim::scenario::set_value(TWO_WORKLOADS, "<test>", "workload.b.enabled", "maybe");
    assert!(e.unwrap_err().to_string().contains("true or false"));
}
