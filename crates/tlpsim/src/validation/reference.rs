//! The published numbers: looking a cell's reference path up in the systems' reference files,
//! and the validation row that sets tlpsim's value beside it.

use super::{Role, ValidationRow};
use crate::error::{ConfigError, Result};

/// One step of a reference path: a key, optionally indexed (`reduction[3]`), or indexed
/// again for nested arrays (`rows[0][4][1]`).
fn path_steps(path: &str) -> Vec<(&str, Vec<usize>)> {
    path.split('.')
        .map(|step| match step.split_once('[') {
            Some((key, rest)) => (
                key,
                rest.split('[')
                    .filter_map(|i| i.trim_end_matches(']').parse().ok())
                    .collect(),
            ),
            None => (step, Vec::new()),
        })
        .collect()
}

/// The `system` and `table` a reference path starts with (empty where it has fewer steps).
pub(crate) fn system_and_table(path: &str) -> (&str, &str) {
    let mut parts = path.split('.');
    let system = parts.next().unwrap_or_default();
    let table = parts.next().unwrap_or_default();
    (system, table)
}

/// Looks a value up in the reference table; `None` if the path names nothing.
fn lookup<'a>(root: &'a toml::Table, path: &str) -> Option<&'a toml::Value> {
    let mut steps = path_steps(path).into_iter();
    let (first, idx) = steps.next()?;
    let mut v = root.get(first)?;
    for i in idx {
        v = v.as_array()?.get(i)?;
    }
    for (key, idx) in steps {
        v = v.as_table()?.get(key)?;
        for i in idx {
            v = v.as_array()?.get(i)?;
        }
    }
    Some(v)
}

fn as_number(v: &toml::Value) -> Option<f64> {
    v.as_float().or_else(|| v.as_integer().map(|i| i as f64))
}

/// The number a reference path names in `root`, if any.
pub(crate) fn number(root: &toml::Table, path: &str) -> Option<f64> {
    lookup(root, path).and_then(as_number)
}

/// What identifies a compared cell: the reference path, optional series, column and unit,
/// role.
pub(crate) struct CellKey<'a> {
    pub(crate) reference: &'a str,
    pub(crate) series: Option<&'a str>,
    pub(crate) column: Option<&'a str>,
    pub(crate) unit: Option<&'a str>,
    pub(crate) role: Role,
}

/// A validation row: the published number `key` names, next to `simulated`.
pub(crate) fn row_for(
    root: &toml::Table,
    key: &CellKey,
    simulated: impl FnOnce() -> Result<f64>,
) -> Result<ValidationRow> {
    let cell = key;
    let bad =
        |why: &str| ConfigError::Conflict(format!("validation cell {}: {why}", cell.reference));
    let published = number(root, cell.reference)
        .ok_or_else(|| bad("names no number in its system's reference.toml"))?;
    let steps = path_steps(cell.reference);
    if steps.len() < 3 {
        return Err(bad("must be system.table.series"));
    }
    let (system, table) = (steps[0].0.to_string(), steps[1].0.to_string());
    let table_value = lookup(root, &format!("{system}.{table}")).and_then(|t| t.as_table());
    let series = match cell.series {
        Some(s) => s.to_string(),
        None => steps[2..].iter().map(|s| s.0).collect::<Vec<_>>().join("."),
    };
    let column = match (cell.column, steps.last().and_then(|s| s.1.first().copied())) {
        (Some(c), _) => c.to_string(),
        (None, Some(i)) => table_value
            .and_then(|t| t.get("columns"))
            .and_then(|c| c.as_array())
            .and_then(|c| c.get(i))
            .map(|c| match c {
                toml::Value::String(s) => s.clone(),
                other => other.to_string(),
            })
            .ok_or_else(|| bad("needs a `column`: its table has no such column"))?,
        (None, None) => return Err(bad("needs a `column`")),
    };
    let unit = match cell.unit {
        Some(u) => u.to_string(),
        None => table_value
            .and_then(|t| t.get("unit"))
            .and_then(|u| u.as_str())
            .unwrap_or("")
            .to_string(),
    };
    let simulated = simulated()?;
    Ok(ValidationRow {
        system,
        table,
        series,
        column,
        unit,
        published,
        simulated,
        error: (simulated - published) / published,
        role: cell.role,
        limit: None,
        fold: None,
        band: None,
    })
}
