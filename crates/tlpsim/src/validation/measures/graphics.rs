//! The graphics measure (PES24N3A Table 6): a 3DMark-style score from the time the host takes
//! to write one frame's bytes to every card at once, plus the catalog's render time.

use super::super::catalog;
use super::super::cell::Cell;
use super::super::registry::Registry;
use crate::error::{ConfigError, Result};
use crate::units;

/// points_per_fps / (render_time + PCIe time of `gpu_frame.bytes` to the slowest card).
pub(super) fn score(cell: &Cell, registry: &Registry) -> Result<f64> {
    let result = super::dma::run(cell, registry)?;
    let catalog = &registry.catalog;
    let bytes = catalog::parsed(catalog, "gpu_frame.bytes", |v| {
        units::parse_bytes("gpu_frame.bytes", v)
    })?;
    let render = catalog::parsed(catalog, "gpu_frame.render_time", |v| {
        units::parse_duration("gpu_frame.render_time", v)
    })?;
    let ppf: f64 = catalog::parsed(catalog, "gpu_frame.points_per_fps", |v| {
        v.parse()
            .map_err(|_| ConfigError::Conflict("gpu_frame.points_per_fps is not a number".into()))
    })?;
    // Both cards receive their bytes at once; the frame waits for the slower.
    let slowest = result
        .flows
        .iter()
        .map(|f| f.throughput_gbps)
        .fold(f64::INFINITY, f64::min);
    let pcie_s = bytes as f64 * 8.0 / (slowest * 1e9);
    Ok(ppf / (render.as_secs_f64() + pcie_s))
}
