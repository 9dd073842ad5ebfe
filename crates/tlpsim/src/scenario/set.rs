//! One scenario value replaced by key, for sweeps: `pcie.mps`, `simulation.duration`,
//! `cpu.frame_cost`, or `SECTION.NAME.KEY` for the repeated sections, where NAME is the
//! `name` of a `[[root_complex]]`, `[[switch]]`, `[[ntb]]`, `[[endpoint]]`,
//! `[[host_bridge]]` or `[[workload]]`, or `UP-DOWN` for a `[[link]]`
//! (`link.rc-sw1.width`) or a `[[socket_link]]` (`socket_link.rc0-rc1.bandwidth`). `SECTION[NAME].KEY` takes the name as written (dots included),
//! and `link[UP,DOWN].KEY` a link by its two ends, so every element can be named; a key
//! that names several elements is refused with each of them written out. A KEY may go into
//! an inline table (`endpoint.ex.credits.ph`).

use super::{load_rewritten, load_str, ScenarioError};
use crate::error::{closest, did_you_mean};

/// Sections that appear once.
const TABLES: [&str; 3] = ["simulation", "pcie", "cpu"];
/// Sections that repeat, each element picked by its name.
const ARRAYS: [&str; 8] = [
    "root_complex",
    "switch",
    "ntb",
    "endpoint",
    "host_bridge",
    "link",
    "socket_link",
    "workload",
];

/// Whether `section`'s elements go by their two ends (`between`) rather than a `name`.
fn by_ends(section: &str) -> bool {
    matches!(section, "link" | "socket_link")
}

/// The name an element of a repeated section goes by: its `name`, or `UP-DOWN` for a link.
fn element_name(section: &str, t: &toml::Table) -> Option<String> {
    if by_ends(section) {
        let (up, down) = ends(t)?;
        Some(format!("{up}-{down}"))
    } else {
        t.get("name")?.as_str().map(str::to_string)
    }
}

/// A link's two ends, upstream first.
fn ends(t: &toml::Table) -> Option<(&str, &str)> {
    let b = t.get("between")?.as_array()?;
    Some((b.first()?.as_str()?, b.get(1)?.as_str()?))
}

/// The key that names element `t` of `section` without ambiguity: `link[UP,DOWN]`, or
/// `SECTION.NAME` (`SECTION[NAME]` where the name holds a dot or a bracket).
fn exact_key(section: &str, t: &toml::Table) -> Option<String> {
    if by_ends(section) {
        let (up, down) = ends(t)?;
        return Some(format!("{section}[{up},{down}]"));
    }
    let name = t.get("name")?.as_str()?;
    Some(if name.contains(['.', '[', ']']) {
        format!("{section}[{name}]")
    } else {
        format!("{section}.{name}")
    })
}

/// Whether `inner`, the text between the brackets of `SECTION[...]`, names element `t`.
fn bracket_names(section: &str, t: &toml::Table, inner: &str) -> bool {
    let inner = inner.trim();
    if !by_ends(section) {
        return element_name(section, t).is_some_and(|n| n == inner);
    }
    let Some((up, down)) = ends(t) else {
        return false;
    };
    inner
        .strip_prefix(up)
        .and_then(|rest| rest.trim_start().strip_prefix(','))
        .is_some_and(|rest| rest.trim() == down)
}

/// `value` as TOML: a number, boolean, string in quotes, inline table or array as written,
/// anything else as a string (`4KiB`, `150ns`, `cut-through`).
fn parse_value(value: &str) -> toml::Value {
    format!("v = {value}")
        .parse::<toml::Table>()
        .ok()
        .and_then(|mut t| t.remove("v"))
        .unwrap_or_else(|| toml::Value::String(value.trim().to_string()))
}

/// Every way of reading `key` as `SECTION.ELEMENT.PATH`, for the repeated sections: the
/// element (its index) and the path of keys inside it; several where the key is ambiguous.
fn elements<'k>(
    section: &str,
    list: &[toml::Value],
    key: &'k str,
) -> Result<Vec<(usize, Vec<&'k str>)>, String> {
    let tables = || {
        list.iter()
            .enumerate()
            .filter_map(|(i, e)| Some((i, e.as_table()?)))
    };
    let after = &key[section.len()..];
    if let Some(rest) = after.strip_prefix('[') {
        let Some((inner, path)) = rest.rsplit_once("].") else {
            return Err(format!(
                "the key has no `].KEY` after `{section}[`; write {section}[NAME].KEY"
            ));
        };
        let path: Vec<&str> = path.split('.').collect();
        let found: Vec<_> = tables()
            .filter(|(_, t)| bracket_names(section, t, inner))
            .map(|(i, _)| (i, path.clone()))
            .collect();
        if found.is_empty() {
            let names: Vec<String> = tables()
                .filter_map(|(_, t)| exact_key(section, t))
                .collect();
            let plain: Vec<String> = tables()
                .filter_map(|(_, t)| element_name(section, t))
                .collect();
            let wanted = if by_ends(section) {
                // `plain` and `names` list the same links: the ends both need.
                let guess = inner.replacen(',', "-", 1);
                let hint = closest(&guess, plain.iter().map(String::as_str))
                    .and_then(|c| plain.iter().position(|p| p == c))
                    .map(|i| format!("; did you mean {}?", names[i]))
                    .unwrap_or_default();
                format!(
                    "no [[{section}]] between {inner}; the scenario has {}{hint}",
                    names.join(", ")
                )
            } else {
                format!(
                    "no [[{section}]] named {inner:?}; the scenario has {}{}",
                    plain.join(", "),
                    did_you_mean(inner, plain.iter().map(String::as_str))
                )
            };
            return Err(wanted);
        }
        return Ok(found);
    }
    let parts: Vec<&str> = after.strip_prefix('.').unwrap_or("").split('.').collect();
    let mut found = Vec::new();
    for (i, t) in tables() {
        let Some(name) = element_name(section, t) else {
            continue;
        };
        for k in 1..parts.len() {
            if parts[..k].join(".") == name {
                found.push((i, parts[k..].to_vec()));
            }
        }
    }
    if found.is_empty() {
        let plain: Vec<String> = tables()
            .filter_map(|(_, t)| element_name(section, t))
            .collect();
        let name = parts.first().copied().unwrap_or("");
        return Err(format!(
            "no [[{section}]] named {name:?}; the scenario has {}{}",
            plain.join(", "),
            did_you_mean(name, plain.iter().map(String::as_str))
        ));
    }
    Ok(found)
}

/// `text` (a scenario; `origin` names it in errors) with `key` set to `value`, checked: the
/// result loads, or the error names the key, the value and the problem (never a line of the
/// rewritten text, which is not the user's file).
pub fn set_value(
    text: &str,
    origin: &str,
    key: &str,
    value: &str,
) -> Result<String, ScenarioError> {
    load_str(text, origin)?;
    let fail = |message: String| ScenarioError {
        origin: origin.to_string(),
        message: format!("{key}={value}: {message}"),
    };
    let mut doc: toml::Table = text
        .parse()
        .map_err(|_| fail("the scenario is not TOML".into()))?;
    let section = key.split(['.', '[']).next().unwrap_or("");
    let allowed = || {
        let mut all: Vec<String> = TABLES.iter().map(|t| format!("{t}.KEY")).collect();
        all.extend(ARRAYS.iter().map(|a| format!("{a}.NAME.KEY")));
        all.push("SECTION[NAME].KEY".into());
        all.push("link[UP,DOWN].KEY".into());
        format!(
            "{}{}",
            all.join(", "),
            did_you_mean(section, TABLES.iter().chain(&ARRAYS).copied())
        )
    };
    let parts: Vec<&str> = key.split('.').collect();
    let (table, path) = if TABLES.contains(&section) && parts.len() > 1 && !key.contains('[') {
        let t = doc
            .entry(section.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()));
        let t = t
            .as_table_mut()
            .ok_or_else(|| fail(format!("[{section}] is not a table")))?;
        (t, parts[1..].to_vec())
    } else if ARRAYS.contains(&section) && key.len() > section.len() {
        let list = doc
            .get_mut(section)
            .and_then(toml::Value::as_array_mut)
            .ok_or_else(|| fail(format!("the scenario has no [[{section}]]")))?;
        let found = elements(section, list, key).map_err(fail)?;
        let (i, path) = match found.as_slice() {
            [one] => one.clone(),
            _ => {
                let keys: Vec<String> = found
                    .iter()
                    .filter_map(|(i, path)| {
                        let e = exact_key(section, list[*i].as_table()?)?;
                        Some(format!("{e}.{}", path.join(".")))
                    })
                    .collect();
                return Err(fail(format!(
                    "the key is ambiguous: it names {}; write one of those",
                    keys.join(" and ")
                )));
            }
        };
        let t = list[i]
            .as_table_mut()
            .ok_or_else(|| fail(format!("[[{section}]] {} is not a table", i + 1)))?;
        (t, path)
    } else {
        return Err(fail(format!(
            "the key is not allowed; allowed: {}",
            allowed()
        )));
    };
    if path.iter().any(|p| p.is_empty()) {
        return Err(fail(format!(
            "the key has an empty part; allowed: {}",
            allowed()
        )));
    }
    let (last, inner) = path.split_last().expect("path is not empty");
    let mut t = table;
    for step in inner {
        t = t
            .entry(step.to_string())
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| fail(format!("{step} is not a table")))?;
    }
    t.insert(last.to_string(), parse_value(value));
    let out = toml::to_string(&doc).map_err(|e| fail(e.to_string()))?;
    load_rewritten(&out, origin).map_err(|e| fail(e.message))?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const BASE: &str = include_str!("../../../../scenarios/t5220-two-switches.toml");

    #[test]
    fn values_land_where_their_key_says() {
        let t = set_value(BASE, "b", "pcie.mps", "256").unwrap();
        assert_eq!(load_str(&t, "b").unwrap().pcie.mps, 256);
        let t = set_value(BASE, "b", "link.sw2-ex.width", "4").unwrap();
        let sys = load_str(&t, "b").unwrap();
        assert_eq!(
            sys.links.iter().find(|l| l.name == "sw2-ex").unwrap().width,
            4
        );
        let t = set_value(BASE, "b", "workload.reads.transfer_size", "512B").unwrap();
        assert_eq!(load_str(&t, "b").unwrap().workloads[0].transfer_size, 512);
        let t = set_value(BASE, "b", "endpoint.ex.credits.cplh", "4").unwrap();
        assert!(t.contains("cplh = 4"), "{t}");
    }

    #[test]
    fn a_bad_key_or_value_gets_one_line_naming_it() {
        let err = |k: &str, v: &str| set_value(BASE, "b.toml", k, v).unwrap_err().to_string();
        let e = err("link.rc-sw9.width", "4");
        assert!(
            e.contains("no [[link]] named \"rc-sw9\"") && e.contains("rc-sw1, sw1-sw2, sw2-ex"),
            "{e}"
        );
        let e = err("pcie.mps", "100");
        assert!(
            e.starts_with("b.toml: pcie.mps=100: ") && e.contains("128, 256"),
            "{e}"
        );
        let e = err("wire.width", "4");
        assert!(
            e.contains("allowed: simulation.KEY") && e.contains("link.NAME.KEY"),
            "{e}"
        );
        let e = err("switch.sw1.lattency", "100ns");
        assert!(e.contains("unknown field `lattency`"), "{e}");
    }

    /// Nodes `a`, `a-b`, `b-c` and `c`: links a -> b-c and a-b -> c are both `a-b-c`.
    const AMBIGUOUS: &str = include_str!("../../../../tests/data/ambiguous_link_key.toml");

    /// The width of the link from `up` to `down` in `text`.
    fn width(text: &str, up: &str, down: &str) -> u32 {
        let sys = load_str(text, "t").unwrap();
        let id = |n: &str| sys.nodes.iter().position(|x| x.name == n).unwrap();
        let (up, down) = (id(up), id(down));
        sys.links
            .iter()
            .find(|l| l.up == up && l.down == down)
            .unwrap()
            .width
    }

    #[test]
    fn a_key_naming_two_links_is_refused_with_both_written_out() {
        let e = set_value(AMBIGUOUS, "t.toml", "link.a-b-c.width", "1")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "t.toml: link.a-b-c.width=1: the key is ambiguous: it names link[a,b-c].width and \
             link[a-b,c].width; write one of those"
        );
    }

    #[test]
    fn a_link_by_its_two_ends_is_the_one_changed() {
        let t = set_value(AMBIGUOUS, "t", "link[a-b,c].width", "1").unwrap();
        assert_eq!((width(&t, "a-b", "c"), width(&t, "a", "b-c")), (1, 4));
        let t = set_value(AMBIGUOUS, "t", "link[a, b-c].width", "2").unwrap();
        assert_eq!((width(&t, "a-b", "c"), width(&t, "a", "b-c")), (4, 2));
        let t = set_value(AMBIGUOUS, "t", "link.rc-a.width", "8").unwrap();
        assert_eq!(width(&t, "rc", "a"), 8);
        let e = set_value(AMBIGUOUS, "t", "link[a,b-x].width", "1")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no [[link]] between a,b-x; the scenario has link[rc,a], link[rc,a-b], ")
                && e.ends_with("did you mean link[a,b-c]?"),
            "{e}"
        );
    }

    #[test]
    fn a_name_holding_a_dot_can_be_named() {
        let text = AMBIGUOUS.replace("\"c\"", "\"c.x\"");
        for key in ["endpoint[c.x].tags", "endpoint.c.x.tags"] {
            let t = set_value(&text, "t", key, "16").unwrap();
            assert!(t.contains("tags = 16"), "{key}: {t}");
        }
        let t = set_value(&text, "t", "link[a-b,c.x].width", "1").unwrap();
        assert_eq!(width(&t, "a-b", "c.x"), 1);
    }

    #[test]
    fn an_error_after_a_set_names_the_section_not_a_rewritten_line() {
        let e = set_value(BASE, "b.toml", "pcie.mps", "abc")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("b.toml: pcie.mps=abc: [pcie]: invalid type") && !e.contains("line "),
            "{e}"
        );
        let e = set_value(BASE, "b.toml", "switch.sw1.lattency", "100ns")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("b.toml: switch.sw1.lattency=100ns: [[switch]] ") && !e.contains("line "),
            "{e}"
        );
    }

    #[test]
    fn a_misspelt_section_or_name_gets_the_closest() {
        let err = |k: &str| set_value(BASE, "b.toml", k, "4").unwrap_err().to_string();
        assert!(err("pcei.mps").ends_with("did you mean \"pcie\"?"));
        assert!(err("switch.sw3.latency").ends_with("did you mean \"sw1\"?"));
        assert!(err("link.rc-sw2.width").ends_with("did you mean \"rc-sw1\"?"));
        assert!(err("switch[sw3].latency").ends_with("did you mean \"sw1\"?"));
    }
}
