//! RFC 2544 throughput: the highest offered load at which a bridge loses no frame.
//!
//! Each trial runs the system with every bridge workload at one load (a fraction of line
//! rate per port, frames at a constant rate). A trial fails if a frame is dropped or the
//! host's backlog keeps growing (a longer trial would overflow the rings; see
//! [`super::result::EthernetResult::zero_loss`]). A trial lasts 300 frame times of warmup
//! and 1200 of measurement per port (at least the scenario's own warmup and duration). The
//! search brackets the rate the host forwarded at full load, then bisects until the bracket
//! is within `resolution` (relative) of its upper end.

use serde::Serialize;

use super::node::nic::wire_bits;
use super::{run, RunError, RunResult};
use crate::engine::SimTime;
use crate::fabric::System;

/// Frame times of warmup per trial.
const WARMUP_FRAMES: f64 = 300.0;
/// Frame times measured per trial.
const WINDOW_FRAMES: f64 = 1200.0;

/// One trial of the search.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Trial {
    /// Offered load per port, fraction of line rate.
    pub load: f64,
    /// No loss.
    pub passed: bool,
}

/// The outcome of an RFC 2544 throughput search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Rfc2544Result {
    /// Highest zero-loss load per port, fraction of line rate.
    pub load: f64,
    /// That load in Mb/s summed over every bridged port (line rate × load × ports).
    pub combined_mbps: f64,
    /// Every trial, in order.
    pub trials: Vec<Trial>,
    /// The run at the zero-loss load (None if even the lowest probe lost frames).
    pub run: Option<RunResult>,
    /// The trial at full load, where it lost frames (its bottlenecks say what stops the
    /// bridge going faster); None when full load passed.
    pub full_load: Option<RunResult>,
}

/// The system with every bridge workload at `load` and a trial's length.
fn at_load(sys: &System, load: f64) -> System {
    let mut s = sys.clone();
    let mut longest = 0.0f64;
    for w in &mut s.workloads {
        let Some(b) = w.kind.bridge_mut() else {
            continue;
        };
        b.load = load;
        let rate = s.nodes[w.source]
            .kind
            .nic()
            .map_or(1e9, |nic| nic.line_rate);
        let frame_s = wire_bits(b.frame_size) / (rate * load);
        longest = longest.max(frame_s);
    }
    let warmup = SimTime::from_ps((longest * WARMUP_FRAMES * 1e12) as u64).max(sys.warmup);
    let window =
        SimTime::from_ps((longest * WINDOW_FRAMES * 1e12) as u64).max(sys.duration - sys.warmup);
    s.warmup = warmup;
    s.duration = warmup + window;
    s
}

/// Ports the bridge workloads offer frames on, and their line rate in Mb/s.
fn bridged_mbps(sys: &System) -> f64 {
    sys.workloads
        .iter()
        .filter(|w| w.kind.bridge().is_some())
        .map(|w| {
            let nic = sys.nodes[w.source].kind.nic();
            nic.map_or(0.0, |nic| nic.ports as f64 * nic.line_rate / 1e6)
        })
        .sum()
}

fn trial(sys: &System, load: f64) -> Result<(bool, RunResult), RunError> {
    let r = run(&at_load(sys, load))?;
    let passed = r.ethernet().iter().all(|e| e.zero_loss);
    Ok((passed, r))
}

/// Searches the zero-loss load of `sys`'s bridge workloads to `resolution` (relative, e.g.
/// 0.01 for 1 %).
pub fn rfc2544(sys: &System, resolution: f64) -> Result<Rfc2544Result, RunError> {
    let mut trials = Vec::new();
    let mbps = bridged_mbps(sys);
    let (ok, full) = trial(sys, 1.0)?;
    trials.push(Trial {
        load: 1.0,
        passed: ok,
    });
    if ok {
        return Ok(Rfc2544Result {
            load: 1.0,
            combined_mbps: mbps,
            trials,
            run: Some(full),
            full_load: None,
        });
    }
    // What the host forwarded while overloaded brackets its zero-loss rate.
    let offered: f64 = full.ethernet().iter().map(|e| e.offered_fps).sum();
    let forwarded: f64 = full.ethernet().iter().map(|e| e.forwarded_fps).sum();
    let estimate = (forwarded / offered.max(1.0)).clamp(1e-4, 1.0);
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    let mut best = None;
    let mut probe = estimate * 0.98;
    let mut step: f64 = 0.02;
    loop {
        let (ok, r) = trial(sys, probe)?;
        trials.push(Trial {
            load: probe,
            passed: ok,
        });
        if ok {
            lo = probe;
            best = Some(r);
        } else {
            hi = probe;
        }
        if hi - lo <= resolution * hi || trials.len() >= 24 {
            break;
        }
        probe = if best.is_none() && lo == 0.0 {
            // Nothing passed yet: step down geometrically.
            step *= 2.0;
            estimate * (1.0 - step).max(0.01 * hi / estimate)
        } else if hi == 1.0 {
            // Nothing failed since full load: step up.
            (lo * (1.0 + step)).min((lo + hi) / 2.0).max(lo * 1.005)
        } else {
            (lo + hi) / 2.0
        };
        if !(probe > lo && probe < hi) {
            probe = (lo + hi) / 2.0;
        }
    }
    Ok(Rfc2544Result {
        load: lo,
        combined_mbps: lo * mbps,
        trials,
        run: best,
        full_load: Some(full),
    })
}
