//! Cut-through against store-and-forward (the T5220 document's "35-40 %"): the DMA read
//! latency of each `run` endpoint alone, with the topology's switches as built and with the
//! same switches store-and-forward.

use super::super::cell::Cell;
use super::super::registry::Registry;
use super::super::template::scenario_text;
use super::{build, mean_latency, run_audited};
use crate::error::Result;

/// For each `run` endpoint of the cell alone: (endpoint, DMA read latency in ns with the
/// topology's switches cut-through as built, with the same switches store-and-forward).
pub(crate) fn latencies(cell: &Cell, registry: &Registry) -> Result<Vec<(String, f64, f64)>> {
    let origin = cell.origin();
    let latency = |text: &str| -> Result<f64> {
        let system = build(text, &origin)?;
        mean_latency(&run_audited(&system, &origin, registry.engine)?, &origin)
    };
    let mut out = Vec::new();
    for r in &cell.run {
        let one = Cell {
            run: vec![r.clone()],
            ..cell.clone()
        };
        let text = scenario_text(&one, registry)?;
        let saf_text = text.replace(
            "forwarding = \"cut-through\"",
            "forwarding = \"store-and-forward\"",
        );
        if saf_text == text {
            return Err(cell.error(format!(
                "topology {} has no cut-through switch",
                cell.topology.as_deref().unwrap_or("-")
            )));
        }
        out.push((r.endpoint.clone(), latency(&text)?, latency(&saf_text)?));
    }
    Ok(out)
}

/// The reductions `1 - cut-through / store-and-forward`, one per endpoint.
fn reductions(cell: &Cell, registry: &Registry) -> Result<impl Iterator<Item = f64>> {
    Ok(latencies(cell, registry)?
        .into_iter()
        .map(|(_, ct, saf)| 1.0 - ct / saf))
}

/// The smallest reduction over the cell's endpoints.
pub(super) fn smallest_reduction(cell: &Cell, registry: &Registry) -> Result<f64> {
    Ok(reductions(cell, registry)?.fold(f64::INFINITY, f64::min))
}

/// The largest reduction over the cell's endpoints.
pub(super) fn largest_reduction(cell: &Cell, registry: &Registry) -> Result<f64> {
    Ok(reductions(cell, registry)?.fold(f64::NEG_INFINITY, f64::max))
}
