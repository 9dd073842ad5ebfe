//! The measures: what a cell reads off the model. Each is one variant of [`Measure`] (the
//! cell's `quantity`) with its own compute; a system whose cells use existing measures needs
//! no Rust.
//!
//! Closed form (the link model, `link.rs`): per-direction rates and overheads of one link.
//! Simulated (a scenario from the cell's template and `run` workloads): DMA and storage
//! throughput and read latency (`dma.rs`), RFC 2544 zero-loss Ethernet bridging
//! (`rfc2544.rs`), a 3DMark-style frame score (`graphics.rs`), cut-through against
//! store-and-forward latency (`cut_through.rs`), netperf TCP_STREAM (`netperf.rs`) and the
//! IXP1240 network-processor router (`router.rs`).

use serde::Deserialize;

use super::cell::Cell;
use super::registry::Registry;
use crate::error::{ConfigError, Result};
use crate::fabric::{Engine, System};
use crate::sim;
use crate::sim::result::RunResult;

mod cut_through;
mod dma;
mod graphics;
mod link;
mod netperf;
mod rfc2544;
mod router;

pub(crate) use cut_through::latencies as cut_through_latencies;
pub(crate) use netperf::{host as netperf_host, virtual_ethernet};

/// A value, and what limited the simulation behind it where the measure says.
pub(crate) type Computed = (f64, Option<String>);

/// What a cell reads off the model (`quantity` in cells.toml).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Measure {
    /// Closed form: raw bit rate per direction (x `scale`).
    RawGbps,
    /// Closed form: bit rate after line encoding per direction (x `scale`).
    EncodedGbps,
    /// Closed form: posted-write payload rate per direction (x `scale`).
    WriteGbps,
    /// Closed form: DMA read payload rate per direction (x `scale`).
    ReadGbps,
    /// Closed form: write payload rate over the encoded rate.
    Efficiency,
    /// Closed form: wire bytes of one write TLP minus its payload.
    FramingBytes,
    /// Closed form: write TLPs per second, millions (x `scale`).
    TlpsPerSMillions,
    /// Closed form: encoded rate minus write payload rate (x `scale`).
    OverheadGbps,
    /// Closed form: the share of the raw rate the line encoding takes.
    EncodingLoss,
    /// Closed form: the share of the encoded rate framing takes (1 - efficiency).
    FramingLoss,
    /// Closed form: payload rate of netperf messages (`message`) in TLPs (x `scale`).
    MessageGbps,
    /// Closed form: the fraction of the line-sized write rate a message's headers cost.
    MessageReduction,
    /// Sum of the DMA and storage flows' payload throughput, GB/s (10^9 bytes/s).
    ThroughputGbytes,
    /// As `ThroughputGbytes`, MB/s.
    ThroughputMbytes,
    /// As `ThroughputGbytes`, GiB/s (2^30 bytes/s).
    ThroughputGibytes,
    /// As `ThroughputGbytes`, MiB/s (2^20 bytes/s).
    ThroughputMibytes,
    /// The fio workloads' I/Os per second, thousands.
    FioKiops,
    /// The first fio workload's mean latency per I/O (submission doorbell to MSI-X), us.
    FioLatencyUs,
    /// As `FioLatencyUs`, the median.
    FioLatencyP50Us,
    /// As `FioLatencyUs`, the 99th percentile.
    FioLatencyP99Us,
    /// Mean read latency of the first flow, one 64 B read at a time: request start to the
    /// first completion byte (the T5220 document's definition).
    LatencyNs,
    /// RFC 2544 zero-loss throughput of the bridge workloads, Mb/s combined over ports.
    GeCombinedMbps,
    /// A 3DMark-style score: points per fps over (render time + the frame's PCIe time).
    GraphicsScore,
    /// netperf TCP_STREAM user data rate, Gb/s (`netperf`), or its ratio to another stream
    /// (`over`).
    Netperf,
    /// IXP1240 router (`router`): cells sent on OC-12, percent of its capacity.
    AtmTxPercent,
    /// IXP1240 router: frames per second of the slowest Ethernet port, thousands.
    EthTxKfpsLow,
    /// IXP1240 router: frames per second of the fastest Ethernet port, thousands.
    EthTxKfpsHigh,
    /// IXP1240 router: share of the dropped ATM-received packets lost at full Ethernet
    /// transmit queues.
    DropShareEthTxQueue,
    /// IXP1240 router: share of the dropped ATM-received packets lost at the IP router's
    /// full input queue.
    DropShareIpRouter,
    /// DMA read latency of each `run` endpoint alone, with the topology's switches as built
    /// (cut-through) and all store-and-forward: the smallest reduction `1 - ct / saf`.
    CutThroughReductionLow,
    /// As `CutThroughReductionLow`, the largest reduction.
    CutThroughReductionHigh,
}

/// How a cell's `run` entries become workloads of its scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Workloads {
    /// DMA runs move the catalog exerciser's transfer size, that many outstanding.
    Exerciser,
    /// DMA runs are one 64 B read at a time (a latency probe).
    LatencyProbe,
    /// The host writes one frame (`gpu_frame.bytes`) to each run endpoint.
    FrameWrites,
}

impl Measure {
    /// The cell's value and, for throughput measures, what limited the simulation.
    pub(crate) fn compute(self, cell: &Cell, registry: &Registry) -> Result<Computed> {
        use Measure::*;
        if registry.engine == Engine::Fluid && !self.fluid_computes() {
            return Err(not_run("it gives no latencies and no frame losses".into()));
        }
        let plain = |v: Result<f64>| v.map(|v| (v, None));
        match self {
            RawGbps | EncodedGbps | WriteGbps | ReadGbps | Efficiency | FramingBytes
            | TlpsPerSMillions | OverheadGbps | EncodingLoss | FramingLoss | MessageGbps
            | MessageReduction => plain(link::figure(self, cell)),
            ThroughputGbytes => dma::throughput(cell, registry, |gbps| gbps / 8.0),
            ThroughputMbytes => dma::throughput(cell, registry, |gbps| gbps / 8.0 * 1000.0),
            ThroughputGibytes => dma::throughput(cell, registry, |gbps| gbps * 1e9 / 8.0 / GIB),
            ThroughputMibytes => {
                dma::throughput(cell, registry, |gbps| gbps * 1e9 / 8.0 / (GIB / 1024.0))
            }
            FioKiops => dma::fio(cell, registry, |f| Some(f.iops / 1e3)),
            FioLatencyUs => dma::fio(cell, registry, |f| f.latency_ns.mean.map(|v| v / 1e3)),
            FioLatencyP50Us => dma::fio(cell, registry, |f| f.latency_ns.p50.map(|v| v / 1e3)),
            FioLatencyP99Us => dma::fio(cell, registry, |f| f.latency_ns.p99.map(|v| v / 1e3)),
            LatencyNs => plain(dma::latency_ns(cell, registry)),
            GeCombinedMbps => rfc2544::combined_mbps(cell, registry),
            GraphicsScore => plain(graphics::score(cell, registry)),
            Netperf => plain(netperf::gbps_or_ratio(cell, registry)),
            AtmTxPercent => plain(router::atm_tx_percent(cell, registry)),
            EthTxKfpsLow => plain(router::eth_tx_kfps_low(cell, registry)),
            EthTxKfpsHigh => plain(router::eth_tx_kfps_high(cell, registry)),
            DropShareEthTxQueue => plain(router::drop_share_eth_tx_queue(cell, registry)),
            DropShareIpRouter => plain(router::drop_share_ip_router(cell, registry)),
            CutThroughReductionLow => plain(cut_through::smallest_reduction(cell, registry)),
            CutThroughReductionHigh => plain(cut_through::largest_reduction(cell, registry)),
        }
    }

    /// Whether the closed-form link model computes it (no simulation, not counted in a
    /// validation's progress).
    pub(crate) fn is_closed_form(self) -> bool {
        use Measure::*;
        matches!(
            self,
            RawGbps
                | EncodedGbps
                | WriteGbps
                | ReadGbps
                | Efficiency
                | FramingBytes
                | TlpsPerSMillions
                | OverheadGbps
                | EncodingLoss
                | FramingLoss
                | MessageGbps
                | MessageReduction
        )
    }

    /// Whether the fluid engine computes it (a throughput; the closed form and the router
    /// model, which run no fabric, too): not a latency, not an RFC 2544 search for frame loss.
    fn fluid_computes(self) -> bool {
        use Measure::*;
        match self {
            ThroughputGbytes | ThroughputMbytes | ThroughputGibytes | ThroughputMibytes
            | FioKiops | GraphicsScore | Netperf => true,
            FioLatencyUs
            | FioLatencyP50Us
            | FioLatencyP99Us
            | LatencyNs
            | GeCombinedMbps
            | CutThroughReductionLow
            | CutThroughReductionHigh => false,
            _ => self.is_closed_form() || self.is_router(),
        }
    }

    /// Whether it reads the IXP1240 router model (no PCIe scenario).
    fn is_router(self) -> bool {
        use Measure::*;
        matches!(
            self,
            AtmTxPercent | EthTxKfpsLow | EthTxKfpsHigh | DropShareEthTxQueue | DropShareIpRouter
        )
    }

    /// A rough relative cost, to start the slowest cells first.
    pub(crate) fn cost(self) -> u32 {
        match self {
            Measure::GeCombinedMbps => 10,
            _ => 1,
        }
    }

    /// How the cell's `run` entries become workloads.
    pub(crate) fn workloads(self) -> Workloads {
        match self {
            Measure::LatencyNs
            | Measure::CutThroughReductionLow
            | Measure::CutThroughReductionHigh => Workloads::LatencyProbe,
            Measure::GraphicsScore => Workloads::FrameWrites,
            _ => Workloads::Exerciser,
        }
    }

    /// The cell gives the inputs this measure cannot do without.
    pub(crate) fn check(self, cell: &Cell) -> Result<()> {
        if self.is_closed_form() {
            cell.needs(&cell.link, "link")?;
            if cell.topology.is_some() {
                return Err(cell.error("a closed-form measure runs no topology"));
            }
        } else if self.is_router() {
            cell.needs(&cell.router, "router")?;
        } else if cell.topology.is_none() {
            return Err(cell.error("a simulated measure needs a `topology`"));
        }
        Ok(())
    }
}

/// Bytes in a GiB.
const GIB: f64 = (1u64 << 30) as f64;

fn conflict(m: String) -> ConfigError {
    ConfigError::Conflict(m)
}

/// The system a scenario text describes; `origin` names it in messages.
fn build(text: &str, origin: &str) -> Result<System> {
    crate::scenario::load_str(text, origin).map_err(|e| conflict(e.to_string()))
}

/// The start of the error of a cell the validation's engine does not compute (the fluid
/// engine: a latency, a frame loss, a system it refuses); the runner lists such a cell as
/// not run instead of failing ([`not_run_reason`]).
const NOT_RUN: &str = "not run by the fluid engine: ";

/// The error of a cell the fluid engine does not compute, for `why`.
fn not_run(why: String) -> ConfigError {
    ConfigError::Conflict(format!("{NOT_RUN}{why}"))
}

/// Why a cell was not run, if `e` says the validation's engine does not compute it.
pub(crate) fn not_run_reason(e: &ConfigError) -> Option<&str> {
    match e {
        ConfigError::Conflict(m) => m.strip_prefix(NOT_RUN),
        ConfigError::NotAllowed { .. } => None,
    }
}

/// Runs a cell's system on `engine`; a failed self-audit is an error naming the cell, and a
/// system the fluid engine refuses is a cell not run.
fn run_audited(system: &System, origin: &str, engine: Engine) -> Result<RunResult> {
    if engine == Engine::Fluid {
        return crate::fluid::run(system)
            .map(|r| r.result)
            .map_err(|e| not_run(e.0));
    }
    let result = sim::run(system).map_err(|e| conflict(format!("{origin}: {e}")))?;
    check_audit(&result, origin)?;
    Ok(result)
}

fn check_audit(run: &RunResult, origin: &str) -> Result<()> {
    if run.audit.passed {
        Ok(())
    } else {
        Err(conflict(format!(
            "{origin}: the simulator's audit failed: {:?}",
            run.audit
        )))
    }
}

/// The first flow's mean latency in ns; an error naming the scenario if no request of it
/// completed in the measured window.
fn mean_latency(result: &RunResult, origin: &str) -> Result<f64> {
    result.flows[0].latency_ns.mean.ok_or_else(|| {
        conflict(format!(
            "{origin}: no request of flow {} completed in the measured window; lengthen the duration",
            result.flows[0].name
        ))
    })
}

/// What limited a run's flows: each distinct bottleneck as "kind resource (busy %)", joined
/// by "; " (None for a run without flows).
fn limit_of(result: &RunResult) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for f in &result.flows {
        let b = &f.bottleneck;
        let text = if b.resource.is_empty() {
            b.kind.replace('_', " ")
        } else {
            format!(
                "{} {} ({:.0} %)",
                b.kind.replace('_', " "),
                b.resource,
                b.busy * 100.0
            )
        };
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    (!seen.is_empty()).then(|| seen.join("; "))
}
