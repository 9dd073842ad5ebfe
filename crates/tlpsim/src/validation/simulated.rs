//! Seed cells the TLP-level simulator computes: scenario templates from `validation/`,
//! filled with values from the device catalog, run with DMA workloads per cell.

use serde::Deserialize;

use super::{row_for, CellKey, Role, ValidationRow};
use crate::error::{ConfigError, Result};
use crate::scenario::load_str;
use crate::sim;

/// The cells (validation/simulated.toml).
pub const SIMULATED_TOML: &str = include_str!("../../../../validation/simulated.toml");
/// The device catalog (validation/catalog.toml).
pub const CATALOG_TOML: &str = include_str!("../../../../validation/catalog.toml");
/// Scenario templates by topology name.
pub const TOPOLOGIES: &[(&str, &str)] = &[
    (
        "t5220",
        include_str!("../../../../validation/t5220/t5220.toml"),
    ),
    (
        "t2000",
        include_str!("../../../../validation/t5220/t2000.toml"),
    ),
    (
        "pes24n3a_fc_direct",
        include_str!("../../../../validation/pes24n3a/fc_direct.toml"),
    ),
    (
        "pes24n3a_fc_switch",
        include_str!("../../../../validation/pes24n3a/fc_switch.toml"),
    ),
    (
        "pes24n3a_fc_ramdisk_direct",
        include_str!("../../../../validation/pes24n3a/fc_ramdisk_direct.toml"),
    ),
    (
        "pes24n3a_fc_ramdisk_switch",
        include_str!("../../../../validation/pes24n3a/fc_ramdisk_switch.toml"),
    ),
    (
        "pes24n3a_sas_direct_x4",
        include_str!("../../../../validation/pes24n3a/sas_direct_x4.toml"),
    ),
    (
        "pes24n3a_sas_direct_x8",
        include_str!("../../../../validation/pes24n3a/sas_direct_x8.toml"),
    ),
    (
        "pes24n3a_sas_switch",
        include_str!("../../../../validation/pes24n3a/sas_switch.toml"),
    ),
    (
        "pes24t6_fc_direct",
        include_str!("../../../../validation/pes24t6/fc_direct.toml"),
    ),
    (
        "pes24t6_fc_switch",
        include_str!("../../../../validation/pes24t6/fc_switch.toml"),
    ),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimFile {
    cell: Vec<SimCell>,
}

/// One workload of a cell: a DMA exerciser run (`direction`) or an Iometer-style storage
/// run (`read_percent`, sizes, outstanding I/Os).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunSpec {
    endpoint: String,
    direction: Option<String>,
    read_percent: Option<u32>,
    read_size: Option<String>,
    write_size: Option<String>,
    outstanding: Option<u32>,
    random: Option<bool>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SimQuantity {
    ThroughputGbytes,
    ThroughputMbytes,
    LatencyNs,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimCell {
    reference: String,
    column: Option<String>,
    unit: Option<String>,
    topology: String,
    run: Vec<RunSpec>,
    quantity: SimQuantity,
    #[serde(default)]
    role: Role,
}

fn conflict(m: String) -> ConfigError {
    ConfigError::Conflict(m)
}

/// The catalog's `value` of `section.key`, as TOML text to paste into a template.
pub fn catalog_value(catalog: &toml::Table, path: &str) -> Option<String> {
    let (section, key) = path.split_once('.')?;
    let v = catalog
        .get(section)?
        .as_table()?
        .get(key)?
        .as_table()?
        .get("value")?;
    Some(match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Replaces every `${section.key}` in `template` with its catalog value.
pub fn render(template: &str, catalog: &toml::Table) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find('}')
            .ok_or_else(|| conflict("unterminated ${ in a validation template".into()))?;
        let key = &rest[i + 2..i + end];
        let value = catalog_value(catalog, key)
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no value for {key}")))?;
        out.push_str(&value);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The scenario text of one cell: its topology plus one DMA workload per `run` entry.
fn scenario_text(cell: &SimCell, catalog: &toml::Table) -> Result<String> {
    let template = TOPOLOGIES
        .iter()
        .find(|(n, _)| *n == cell.topology)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            conflict(format!(
                "cell {}: no topology {:?}",
                cell.reference, cell.topology
            ))
        })?;
    let mut text = render(template, catalog)?;
    let (size, outstanding) = match cell.quantity {
        // The document's latency: one 64 B read at a time.
        SimQuantity::LatencyNs => ("64B".to_string(), "1".to_string()),
        _ => (
            catalog_value(catalog, "exerciser.transfer_size").unwrap_or_default(),
            catalog_value(catalog, "exerciser.outstanding").unwrap_or_default(),
        ),
    };
    for r in &cell.run {
        let e = &r.endpoint;
        match (&r.direction, r.read_percent) {
            (Some(d), None) => text.push_str(&format!(
                "\n[[workload]]\nname = \"{e}\"\nkind = \"dma\"\nendpoint = \"{e}\"\n\
                 direction = \"{d}\"\ntransfer_size = \"{size}\"\noutstanding = {outstanding}\n"
            )),
            (None, Some(p)) => {
                text.push_str(&format!(
                    "\n[[workload]]\nname = \"{e}\"\nkind = \"storage\"\nendpoint = \"{e}\"\n\
                     read_percent = {p}\noutstanding = {}\n",
                    r.outstanding.unwrap_or(4)
                ));
                for (key, v) in [("read_size", &r.read_size), ("write_size", &r.write_size)] {
                    if let Some(v) = v {
                        text.push_str(&format!("{key} = \"{v}\"\n"));
                    }
                }
                if let Some(random) = r.random {
                    text.push_str(&format!("random = {random}\n"));
                }
            }
            _ => {
                return Err(conflict(format!(
                    "cell {}: each run needs either direction (DMA) or read_percent (storage)",
                    cell.reference
                )))
            }
        }
    }
    Ok(text)
}

fn compute(cell: &SimCell, catalog: &toml::Table) -> Result<f64> {
    let text = scenario_text(cell, catalog)?;
    let origin = format!("validation/{} for {}", cell.topology, cell.reference);
    let system = load_str(&text, &origin).map_err(|e| conflict(e.to_string()))?;
    let result = sim::run(&system).map_err(|e| conflict(format!("{origin}: {e}")))?;
    if !result.audit.passed {
        return Err(conflict(format!(
            "{origin}: the simulator's audit failed: {:?}",
            result.audit
        )));
    }
    Ok(match cell.quantity {
        SimQuantity::ThroughputGbytes => {
            result.flows.iter().map(|f| f.throughput_gbps).sum::<f64>() / 8.0
        }
        SimQuantity::ThroughputMbytes => {
            result.flows.iter().map(|f| f.throughput_gbps).sum::<f64>() / 8.0 * 1000.0
        }
        SimQuantity::LatencyNs => result.flows[0].latency_ns.mean,
    })
}

/// The simulated cells and the device catalog, parsed.
fn load() -> Result<(SimFile, toml::Table)> {
    let file: SimFile = toml::from_str(SIMULATED_TOML)
        .map_err(|e| conflict(format!("validation/simulated.toml: {e}")))?;
    let catalog: toml::Table = CATALOG_TOML
        .parse()
        .map_err(|e| conflict(format!("validation/catalog.toml: {e}")))?;
    Ok((file, catalog))
}

/// (system, table, row) per simulated cell; the row only for cells of `only` (all if None),
/// so unselected systems cost no simulation.
pub fn rows(
    root: &toml::Table,
    only: Option<&str>,
) -> Result<Vec<(String, String, Option<ValidationRow>)>> {
    let (file, catalog) = load()?;
    let mut out = Vec::new();
    for cell in &file.cell {
        let mut parts = cell.reference.split('.');
        let system = parts.next().unwrap_or_default().to_string();
        let table = parts.next().unwrap_or_default().to_string();
        let row = if only.is_none_or(|s| s == system) {
            let key = CellKey {
                reference: &cell.reference,
                column: cell.column.as_deref(),
                unit: cell.unit.as_deref(),
                role: cell.role,
            };
            Some(row_for(root, &key, || compute(cell, &catalog))?)
        } else {
            None
        };
        out.push((system, table, row));
    }
    Ok(out)
}

/// The scenario text a cell runs (for inspection and for `tlpsim run`).
pub fn cell_scenario(reference: &str) -> Result<String> {
    cell_scenario_with(reference, &[])
}

/// A cell's simulated value with some catalog values replaced (`section.key`, TOML value
/// text): the calibration tool's probe.
pub fn cell_value_with(reference: &str, overrides: &[(&str, &str)]) -> Result<f64> {
    let (file, catalog) = load_with(overrides)?;
    let cell = find(&file, reference)?;
    compute(cell, &catalog)
}

fn find<'f>(file: &'f SimFile, reference: &str) -> Result<&'f SimCell> {
    file.cell
        .iter()
        .find(|c| c.reference == reference)
        .ok_or_else(|| conflict(format!("no simulated cell {reference}")))
}

fn load_with(overrides: &[(&str, &str)]) -> Result<(SimFile, toml::Table)> {
    let (file, mut catalog) = load()?;
    for (path, value) in overrides {
        let entry = path
            .split_once('.')
            .and_then(|(s, k)| {
                catalog
                    .get_mut(s)?
                    .as_table_mut()?
                    .get_mut(k)?
                    .as_table_mut()
            })
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no {path}")))?;
        let v: toml::Value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        entry.insert("value".into(), v);
    }
    Ok((file, catalog))
}

/// The scenario text of a cell with some catalog values replaced.
pub fn cell_scenario_with(reference: &str, overrides: &[(&str, &str)]) -> Result<String> {
    let (file, catalog) = load_with(overrides)?;
    scenario_text(find(&file, reference)?, &catalog)
}
