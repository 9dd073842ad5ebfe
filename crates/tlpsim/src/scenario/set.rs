//! One scenario value replaced by key, for sweeps: `pcie.mps`, `simulation.duration`,
//! `cpu.frame_cost`, or `SECTION.NAME.KEY` for the repeated sections, where NAME is the
//! `name` of a `[[root_complex]]`, `[[switch]]`, `[[ntb]]`, `[[endpoint]]`,
//! `[[host_bridge]]` or `[[workload]]`, or `UP-DOWN` for a `[[link]]`
//! (`link.rc-sw1.width`). A KEY may go into an inline table (`endpoint.ex.credits.ph`).

use super::{load_str, ScenarioError};

/// Sections that appear once.
const TABLES: [&str; 3] = ["simulation", "pcie", "cpu"];
/// Sections that repeat, each element picked by its name.
const ARRAYS: [&str; 7] = [
    "root_complex",
    "switch",
    "ntb",
    "endpoint",
    "host_bridge",
    "link",
    "workload",
];

/// The name an element of a repeated section goes by: its `name`, or `UP-DOWN` for a link.
fn element_name(section: &str, t: &toml::Table) -> Option<String> {
    if section == "link" {
        let b = t.get("between")?.as_array()?;
        Some(format!("{}-{}", b.first()?.as_str()?, b.get(1)?.as_str()?))
    } else {
        t.get("name")?.as_str().map(str::to_string)
    }
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

/// `text` (a scenario; `origin` names it in errors) with `key` set to `value`, checked: the
/// result loads, or the error names the key, the value and the problem.
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
    let parts: Vec<&str> = key.split('.').collect();
    let allowed = || {
        let mut all: Vec<String> = TABLES.iter().map(|t| format!("{t}.KEY")).collect();
        all.extend(ARRAYS.iter().map(|a| format!("{a}.NAME.KEY")));
        all.join(", ")
    };
    let (table, path) = match parts.as_slice() {
        [section, rest @ ..] if TABLES.contains(section) && !rest.is_empty() => {
            let t = doc
                .entry(section.to_string())
                .or_insert_with(|| toml::Value::Table(toml::Table::new()));
            let t = t
                .as_table_mut()
                .ok_or_else(|| fail(format!("[{section}] is not a table")))?;
            (t, rest)
        }
        [section, name, rest @ ..] if ARRAYS.contains(section) && !rest.is_empty() => {
            let elements = doc
                .get_mut(*section)
                .and_then(toml::Value::as_array_mut)
                .ok_or_else(|| fail(format!("the scenario has no [[{section}]]")))?;
            let names: Vec<String> = elements
                .iter()
                .filter_map(|e| element_name(section, e.as_table()?))
                .collect();
            let i = names.iter().position(|n| n == name).ok_or_else(|| {
                fail(format!(
                    "no [[{section}]] named {name:?}; the scenario has {}",
                    names.join(", ")
                ))
            })?;
            let t = elements[i]
                .as_table_mut()
                .ok_or_else(|| fail(format!("[[{section}]] {name} is not a table")))?;
            (t, rest)
        }
        _ => {
            return Err(fail(format!(
                "the key is not allowed; allowed: {}",
                allowed()
            )))
        }
    };
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
    load_str(&out, origin).map_err(|e| fail(e.message))?;
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
}
