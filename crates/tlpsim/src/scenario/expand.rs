//! `count = N` on an `[[endpoint]]`: N copies named NAME0 ... NAME{N-1}, each with its own
//! copy of every `[[link]]` whose `between` names the endpoint and of every `[[workload]]`
//! whose `endpoint` or `target` names it (the workload copies are named WORKLOAD0 ...).
//!
//! The copies are made on the parsed file, before the build, so that every later check sees
//! them as if they had been written out. A link or workload that names two counted endpoints
//! (a GPU copying into an NVMe drive, both counted) pairs their copies one to one: copy `i`
//! of one with copy `i` of the other, so their counts must be equal.

use std::borrow::Cow;
use std::collections::{HashMap, HashSet};

use super::error::{BuildError, Place};
use super::file::ScenarioFile;
use super::values;

/// Copies one `count` may make at most.
pub const MAX_COUNT: i64 = 1024;

/// The file with every counted endpoint replaced by its copies, and the links and workloads
/// that name it by theirs (the file itself when no endpoint has a `count`).
pub fn expand(f: &ScenarioFile) -> Result<Cow<'_, ScenarioFile>, BuildError> {
    let counted = counts(f)?;
    if counted.is_empty() {
        return Ok(Cow::Borrowed(f));
    }
    let mut out = f.clone();
    out.endpoint = f
        .endpoint
        .iter()
        .flat_map(|ep| match counted.get(ep.name()) {
            Some(&n) => (0..n)
                .map(|i| ep.copy_named(copy_name(ep.name(), i)))
                .collect(),
            None => vec![ep.clone()],
        })
        .collect();
    out.link.clear();
    for (i, l) in f.link.iter().enumerate() {
        let place = Place::element("link", i, &format!("between {}", l.between.join(", ")));
        let refs: Vec<&str> = l.between.iter().map(String::as_str).collect();
        match copies(&place, "between", &refs, &counted)? {
            None => out.link.push(l.clone()),
            Some(n) => out.link.extend((0..n).map(|c| {
                let mut copy = l.clone();
                for end in &mut copy.between {
                    rename(end, c, &counted);
                }
                copy
            })),
        }
    }
    out.workload.clear();
    for (i, w) in f.workload.iter().enumerate() {
        let place = Place::element("workload", i, w.name());
        let mut probe = w.clone();
        let (_, endpoint, target) = probe.names_mut();
        let mut refs = vec![endpoint.as_str()];
        refs.extend(target.map(|t| t.as_str()));
        match copies(&place, "endpoint and target", &refs, &counted)? {
            None => out.workload.push(w.clone()),
            Some(n) => out.workload.extend((0..n).map(|c| {
                let mut copy = w.clone();
                let (name, endpoint, target) = copy.names_mut();
                *name = copy_name(name, c);
                rename(endpoint, c, &counted);
                if let Some(t) = target {
                    rename(t, c, &counted);
                }
                copy
            })),
        }
    }
    Ok(Cow::Owned(out))
}

/// The name of copy `i` of `name`: `gpu` -> `gpu0`.
fn copy_name(name: &str, i: usize) -> String {
    format!("{name}{i}")
}

/// `name` as copy `i` names it, if it is a counted endpoint's.
fn rename(name: &mut String, i: usize, counted: &HashMap<String, usize>) {
    if counted.contains_key(name.as_str()) {
        *name = copy_name(name, i);
    }
}

/// The counted endpoints and their counts, checked: each count in 1..=[`MAX_COUNT`], and no
/// copy's name already a node's name (or another copy's).
fn counts(f: &ScenarioFile) -> Result<HashMap<String, usize>, BuildError> {
    let mut taken: HashSet<&str> = f
        .root_complex
        .iter()
        .map(|s| s.name.as_str())
        .chain(f.switch.iter().map(|s| s.name.as_str()))
        .chain(f.ntb.iter().map(|s| s.name.as_str()))
        .chain(f.host_bridge.iter().map(|s| s.name.as_str()))
        .chain(
            f.endpoint
                .iter()
                .filter(|e| e.count().is_none())
                .map(|e| e.name()),
        )
        .collect();
    let mut made: HashSet<String> = HashSet::new();
    let mut counted = HashMap::new();
    for (i, ep) in f.endpoint.iter().enumerate() {
        let Some(n) = ep.count() else { continue };
        let place = Place::element("endpoint", i, ep.name());
        let n = values::count(&place, "count", n, 1..=MAX_COUNT, "1 to 1024")? as usize;
        for c in 0..n {
            let copy = copy_name(ep.name(), c);
            if taken.contains(copy.as_str()) || made.contains(&copy) {
                return Err(BuildError::conflict(
                    &place,
                    format!(
                        "count = {n} names its copies {} to {}, but {copy:?} is already a node \
                         name; rename one of them",
                        copy_name(ep.name(), 0),
                        copy_name(ep.name(), n - 1)
                    ),
                ));
            }
            made.insert(copy);
        }
        taken.insert(ep.name());
        counted.insert(ep.name().to_string(), n);
    }
    Ok(counted)
}

/// How many copies a link or workload naming the nodes `refs` (under `key`) needs: the
/// count of the counted endpoints among them, which must agree; `None` when it names none.
fn copies(
    place: &Place,
    key: &str,
    refs: &[&str],
    counted: &HashMap<String, usize>,
) -> Result<Option<usize>, BuildError> {
    let named: Vec<(&str, usize)> = refs
        .iter()
        .filter_map(|r| counted.get(*r).map(|&n| (*r, n)))
        .collect();
    match named.as_slice() {
        [] => Ok(None),
        [(_, n), rest @ ..] if rest.iter().all(|(_, m)| m == n) => Ok(Some(*n)),
        _ => {
            let list: Vec<String> = named
                .iter()
                .map(|(name, n)| format!("{name:?} (count = {n})"))
                .collect();
            Err(BuildError::conflict(
                place,
                format!(
                    "{key} name {}: copy i of one goes with copy i of the other, so their counts \
                     must be equal",
                    list.join(" and ")
                ),
            ))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::load_str;

    const BASE: &str = r#"
[[root_complex]]
name = "rc"

[[switch]]
name = "sw"

[[endpoint]]
name = "ex"
kind = "dma"
count = 3

[[endpoint]]
name = "mem"
kind = "memory"
bar_size = "1MiB"

[[link]]
between = ["rc", "sw"]
width = 8

[[link]]
between = ["sw", "ex"]
width = 4

[[link]]
between = ["sw", "mem"]

[[workload]]
name = "reads"
kind = "dma"
endpoint = "ex"
direction = "read"
transfer_size = "4KiB"
"#;

    #[test]
    fn a_counted_endpoint_becomes_copies_with_their_links_and_workloads() {
        let sys = load_str(BASE, "b.toml").unwrap();
        let nodes: Vec<&str> = sys.nodes.iter().map(|n| n.name.as_str()).collect();
        assert_eq!(nodes, ["rc", "sw", "ex0", "ex1", "ex2", "mem"]);
        let links: Vec<(&str, u32)> = sys
            .links
            .iter()
            .map(|l| (l.name.as_str(), l.width))
            .collect();
        assert_eq!(
            links,
            [
                ("rc-sw", 8),
                ("sw-ex0", 4),
                ("sw-ex1", 4),
                ("sw-ex2", 4),
                ("sw-mem", 1)
            ]
        );
        let flows: Vec<&str> = sys.workloads.iter().map(|w| w.name.as_str()).collect();
        assert_eq!(flows, ["reads0", "reads1", "reads2"]);
        let ex1 = sys.nodes.iter().position(|n| n.name == "ex1").unwrap();
        assert_eq!(sys.workloads[1].source, ex1);
    }

    #[test]
    fn two_counted_endpoints_pair_one_to_one() {
        let text = BASE
            .replace("kind = \"memory\"", "kind = \"memory\"\ncount = 3")
            .replace(
                "direction = \"read\"",
                "direction = \"write\"\ntarget = \"mem\"",
            );
        let sys = load_str(&text, "b.toml").unwrap();
        let id = |name: &str| sys.nodes.iter().position(|n| n.name == name).unwrap();
        let pairs: Vec<(usize, usize)> =
            sys.workloads.iter().map(|w| (w.source, w.target)).collect();
        assert_eq!(
            pairs,
            [
                (id("ex0"), id("mem0")),
                (id("ex1"), id("mem1")),
                (id("ex2"), id("mem2"))
            ]
        );
    }

    #[test]
    fn a_bad_count_gets_one_line_naming_the_key() {
        let err = |text: String| load_str(&text, "b.toml").unwrap_err().to_string();
        let e = err(BASE.replace("count = 3", "count = 0"));
        assert_eq!(
            e,
            "b.toml: [[endpoint]] 1 (ex): count 0 is not allowed; allowed: 1 to 1024"
        );
        let e = err(BASE
            .replace("name = \"mem\"", "name = \"ex1\"")
            .replace("\"mem\"]", "\"ex1\"]"));
        assert!(
            e.starts_with("b.toml: [[endpoint]] 1 (ex): count = 3 names its copies ex0 to ex2")
                && e.contains("\"ex1\" is already a node name"),
            "{e}"
        );
        let text = BASE
            .replace("kind = \"memory\"", "kind = \"memory\"\ncount = 2")
            .replace(
                "direction = \"read\"",
                "direction = \"write\"\ntarget = \"mem\"",
            );
        let e = err(text);
        assert!(
            e.contains("[[workload]] 1 (reads): endpoint and target name \"ex\" (count = 3) and \"mem\" (count = 2)"),
            "{e}"
        );
        let e = err(BASE.replace("count = 3", "count = \"three\""));
        assert!(e.contains("count"), "{e}");
    }
}
