//! DMA and storage measures: the payload throughput of a cell's flows, and the read latency
//! of a latency probe.

use super::super::cell::Cell;
use super::super::registry::Registry;
use super::super::template::scenario_text;
use super::{build, limit_of, mean_latency, run_audited, Computed};
use crate::error::Result;
use crate::sim::result::{FioResult, KindResult, RunResult};

/// Runs the cell's scenario (audited).
pub(super) fn run(cell: &Cell, registry: &Registry) -> Result<RunResult> {
    let origin = cell.origin();
    let system = build(&scenario_text(cell, registry)?, &origin)?;
    run_audited(&system, &origin, registry.engine)
}

/// The DMA and storage flows' summed throughput, Gb/s converted by `unit`, and what limited
/// them. An Ethernet bridging workload beside them is background, not counted.
pub(super) fn throughput(
    cell: &Cell,
    registry: &Registry,
    unit: impl Fn(f64) -> f64,
) -> Result<Computed> {
    let result = run(cell, registry)?;
    let limit = limit_of(&result);
    let bridging = |name: &str| result.ethernet().iter().any(|e| e.name == name);
    let named = |name: &str| cell.flows.is_empty() || cell.flows.iter().any(|f| f == name);
    if let Some(missing) = cell
        .flows
        .iter()
        .find(|f| !result.flows.iter().any(|r| &r.name == *f))
    {
        return Err(cell.error(format!(
            "flows names {missing:?}, no workload of its topology"
        )));
    }
    let dma_gbps: f64 = result
        .flows
        .iter()
        .filter(|f| !bridging(&f.name) && named(&f.name))
        .map(|f| f.throughput_gbps)
        .sum();
    Ok((unit(dma_gbps), limit))
}

/// A figure of the run's first fio workload (`figure`: IOPS, a latency), and what limited it;
/// an error naming the cell where the topology runs no fio or no I/O completed.
pub(super) fn fio(
    cell: &Cell,
    registry: &Registry,
    figure: impl Fn(&FioResult) -> Option<f64>,
) -> Result<Computed> {
    let result = run(cell, registry)?;
    let f = result
        .kinds
        .iter()
        .find_map(KindResult::fio)
        .ok_or_else(|| cell.error("a fio measure needs a kind = \"fio\" workload"))?;
    let v = figure(f).ok_or_else(|| {
        cell.error(format!(
            "no I/O of {} completed in the measured window; lengthen the duration",
            f.name
        ))
    })?;
    Ok((v, limit_of(&result)))
}

/// The first flow's mean read latency, ns (the cell's runs are latency probes).
pub(super) fn latency_ns(cell: &Cell, registry: &Registry) -> Result<f64> {
    mean_latency(&run(cell, registry)?, &cell.origin())
}
