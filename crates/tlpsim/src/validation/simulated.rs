//! Tools on single cells, for calibration and inspection (`examples/calibrate.rs`): a cell's
//! scenario text and value with catalog values replaced, and the catalog's device readers.

use super::measures;
use super::registry::Registry;
use super::template::scenario_text;
use crate::error::Result;

pub use super::catalog::{catalog_value, render, CATALOG_TOML};

/// The scenario text a cell runs (for inspection and for `tlpsim run`).
pub fn cell_scenario(reference: &str) -> Result<String> {
    cell_scenario_with(reference, &[])
}

/// The scenario text of a cell with some catalog values replaced.
pub fn cell_scenario_with(reference: &str, overrides: &[(&str, &str)]) -> Result<String> {
    let registry = Registry::embedded()?.with_catalog_values(overrides)?;
    scenario_text(registry.find(reference)?, &registry)
}

/// A cell's value with some catalog values replaced (`section.key`, TOML value text): the
/// calibration tool's probe.
pub fn cell_value_with(reference: &str, overrides: &[(&str, &str)]) -> Result<f64> {
    let registry = Registry::embedded()?.with_catalog_values(overrides)?;
    let cell = registry.find(reference)?;
    Ok(cell.quantity.compute(cell, &registry)?.0)
}

/// A cut-through reduction cell's per-endpoint latencies: (endpoint, cut-through ns,
/// store-and-forward ns).
pub fn cell_cut_through_latencies(reference: &str) -> Result<Vec<(String, f64, f64)>> {
    let registry = Registry::embedded()?;
    measures::cut_through_latencies(registry.find(reference)?, &registry)
}

/// The catalog's virtual Ethernet framing: (header bytes per frame, bytes per write TLP).
pub fn catalog_virtual_ethernet() -> Result<(u32, u32)> {
    let catalog = super::catalog::parse(CATALOG_TOML)?;
    measures::virtual_ethernet(&catalog).map(|(h, l)| (h, l as u32))
}

/// A host network stack from the device catalog (`xeon_e5310`, `athlon64_3500`).
pub fn catalog_host(section: &str) -> Result<crate::netperf::Host> {
    let catalog = super::catalog::parse(CATALOG_TOML)?;
    measures::netperf_host(&catalog, section)
}
