//! RFC 2544 throughput: the highest offered load at which a bridge loses no frame.
//!
//! Each trial runs the system with every bridge workload at one load (a fraction of line
//! rate per port, frames at a constant rate). A trial fails if a frame is dropped or the
//! host's backlog keeps growing (a longer trial would overflow the rings; see
//! [`super::result::EthernetResult::zero_loss`]). A trial lasts 300 frame times of warmup
//! and 1200 of measurement per port (at least the scenario's own warmup and duration). The
//! search brackets the rate the host forwarded at full load, then bisects until the bracket
//! is within `resolution` (relative) of its upper end.
//!
//! The bisection's premise is that a load passes if a higher one does. Its usual path (the
//! first three probes pass, pass and fail, then the midpoint) is known before any probe
//! runs, so the search runs that path's last probe first and then its third or second one,
//! and answers the probes it can from those (a load passes below a pass and fails above a
//! fail): the same load as running every probe in order, in two trials where that takes four.
//! A probe it cannot answer runs. Where the premise is false at a probe no trial ran, the
//! load can differ from the plain bisection's; where the trials run contradict it, every
//! probe runs. On every shipped cell each probe's answer is the one its own trial gives.

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
    /// Every trial run, in the order run (the full-load one first).
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

/// The trials run so far by `trial` (with each passing one's run, `R`), and the answers
/// they give.
struct Trials<R, F> {
    trial: F,
    done: Vec<(Trial, Option<R>)>,
    /// Whether a probe may be answered from a pass at a higher load or a fail at a lower one.
    infer: bool,
}

impl<R, F: FnMut(f64) -> Result<(bool, R), RunError>> Trials<R, F> {
    /// Runs the trial at `load`: whether it passed.
    fn run(&mut self, load: f64) -> Result<bool, RunError> {
        let (passed, r) = (self.trial)(load)?;
        self.done
            .push((Trial { load, passed }, passed.then_some(r)));
        Ok(passed)
    }

    /// The trial run at exactly `load`, if any.
    fn at(&self, load: f64) -> Option<&Trial> {
        self.done.iter().map(|(t, _)| t).find(|t| t.load == load)
    }

    /// Whether `load` passes: from its own trial, from the others where `infer` allows, or
    /// from a new trial.
    fn ask(&mut self, load: f64) -> Result<bool, RunError> {
        if let Some(t) = self.at(load) {
            return Ok(t.passed);
        }
        let mut trials = self.done.iter().map(|(t, _)| t);
        if self.infer && trials.clone().any(|t| t.passed && t.load > load) {
            return Ok(true);
        }
        if self.infer && trials.any(|t| !t.passed && t.load < load) {
            return Ok(false);
        }
        self.run(load)
    }

    /// Whether no trial passed at or above a load that failed.
    #[cfg(test)]
    fn monotone(&self) -> bool {
        let fails = || self.done.iter().filter(|(t, _)| !t.passed);
        self.done
            .iter()
            .filter(|(t, _)| t.passed)
            .all(|(p, _)| fails().all(|(f, _)| f.load > p.load))
    }
}

/// The bisection from `estimate` (the full-load trial's forwarded share of the offered
/// load): the highest passing load it finds, asking `passes` about each probe in turn (and
/// None if `passes` stops it by answering None).
fn bisect(
    estimate: f64,
    resolution: f64,
    mut passes: impl FnMut(f64) -> Result<Option<bool>, RunError>,
) -> Result<Option<f64>, RunError> {
    let (mut lo, mut hi) = (0.0f64, 1.0f64);
    // Trials asked, the full-load one included, and whether any probe passed.
    let (mut asked, mut passed_any) = (1, false);
    let mut probe = estimate * 0.98;
    let mut step: f64 = 0.02;
    loop {
        let Some(ok) = passes(probe)? else {
            return Ok(None);
        };
        asked += 1;
        if ok {
            lo = probe;
            passed_any = true;
        } else {
            hi = probe;
        }
        if hi - lo <= resolution * hi || asked >= 24 {
            break;
        }
        probe = if !passed_any && lo == 0.0 {
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
    Ok(Some(lo))
}

/// The probes of the bisection's usual path: the first three pass, pass and fail; the
/// fourth is the last (fewer if it stops sooner).
fn usual_path(estimate: f64, resolution: f64) -> Vec<f64> {
    let mut asked = Vec::new();
    let script = [true, true, false];
    let _ = bisect(estimate, resolution, |load| {
        asked.push(load);
        Ok(script.get(asked.len() - 1).copied())
    });
    asked
}

/// The bisection's load from `estimate`, with `trials` (the full-load one run): the usual
/// path's last probe first, then what it needs, then the probes the trials do not answer.
fn search<R, F: FnMut(f64) -> Result<(bool, R), RunError>>(
    trials: &mut Trials<R, F>,
    estimate: f64,
    resolution: f64,
) -> Result<f64, RunError> {
    if let [_, second, third, last] = usual_path(estimate, resolution)[..] {
        let next = if trials.run(last)? { third } else { second };
        trials.run(next)?;
    }
    let lo = bisect(estimate, resolution, |l| trials.ask(l).map(Some))?.unwrap_or(0.0);
    // A load answered as passing runs for its results. Each trial the search runs lies
    // between the passes and the fails already run, so only this one can contradict the
    // premise (fail below a pass); then every probe runs, as in the plain bisection.
    if lo > 0.0 && trials.at(lo).is_none() && !trials.run(lo)? {
        trials.infer = false;
        return Ok(bisect(estimate, resolution, |l| trials.ask(l).map(Some))?.unwrap_or(0.0));
    }
    Ok(lo)
}

/// Searches the zero-loss load of `sys`'s bridge workloads to `resolution` (relative, e.g.
/// 0.01 for 1 %).
pub fn rfc2544(sys: &System, resolution: f64) -> Result<Rfc2544Result, RunError> {
    let mbps = bridged_mbps(sys);
    let (ok, full) = trial(sys, 1.0)?;
    let full_trial = Trial {
        load: 1.0,
        passed: ok,
    };
    if ok {
        return Ok(Rfc2544Result {
            load: 1.0,
            combined_mbps: mbps,
            trials: vec![full_trial],
            run: Some(full),
            full_load: None,
        });
    }
    // What the host forwarded while overloaded brackets its zero-loss rate.
    let offered: f64 = full.ethernet().iter().map(|e| e.offered_fps).sum();
    let forwarded: f64 = full.ethernet().iter().map(|e| e.forwarded_fps).sum();
    let estimate = (forwarded / offered.max(1.0)).clamp(1e-4, 1.0);
    let mut trials = Trials {
        trial: |load| trial(sys, load),
        done: vec![(full_trial, None)],
        infer: true,
    };
    let lo = search(&mut trials, estimate, resolution)?;
    let best = trials
        .done
        .iter_mut()
        .find(|(t, _)| t.load == lo && t.passed)
        .and_then(|(_, r)| r.take());
    Ok(Rfc2544Result {
        load: lo,
        combined_mbps: lo * mbps,
        trials: trials.done.into_iter().map(|(t, _)| t).collect(),
        run: best,
        full_load: Some(full),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A test's trial: whether a load passes, with no run.
    type Probe<'a> = Box<dyn FnMut(f64) -> Result<(bool, ()), RunError> + 'a>;

    /// The load `search` finds with trials from `passes` (inferring or not), and its trials
    /// (the full-load one first, failed).
    fn searched<'a>(
        passes: impl Fn(f64) -> bool + 'a,
        estimate: f64,
        infer: bool,
    ) -> (f64, Trials<(), Probe<'a>>) {
        let mut trials: Trials<(), Probe<'a>> = Trials {
            trial: Box::new(move |load| Ok((passes(load), ()))),
            done: vec![(
                Trial {
                    load: 1.0,
                    passed: false,
                },
                None,
            )],
            infer,
        };
        let lo = search(&mut trials, estimate, 0.01).unwrap();
        (lo, trials)
    }

    /// The load `search` finds with trials from `passes` (inferring or not), and the trials
    /// it ran after the full-load one.
    fn found(passes: impl Fn(f64) -> bool, estimate: f64, infer: bool) -> (f64, usize) {
        let (lo, trials) = searched(passes, estimate, infer);
        (lo, trials.done.len() - 1)
    }

    /// Estimates over (0.01, 0.99) and thresholds from 0.3 to 1.5 times each.
    fn cases() -> impl Iterator<Item = (f64, f64)> {
        (0..4000).map(|i| {
            let estimate = 0.01 + 0.98 * ((i * 37) % 101) as f64 / 101.0;
            (
                estimate,
                estimate * (0.3 + 1.2 * ((i * 53) % 997) as f64 / 997.0),
            )
        })
    }

    #[test]
    fn answering_probes_from_other_trials_finds_the_same_load() {
        let mut saved = 0;
        for (estimate, threshold) in cases() {
            let passes = |load: f64| load <= threshold;
            let (plain, ran) = found(passes, estimate, false);
            let (fast, fast_ran) = found(passes, estimate, true);
            assert_eq!(plain, fast, "estimate {estimate}, threshold {threshold}");
            saved += ran as i64 - fast_ran as i64;
        }
        assert!(saved > 2000, "{saved} trials saved");
    }

    #[test]
    fn the_trials_run_never_contradict_the_premise() {
        // Even where a band of loads 1 % wide below the threshold fails (the premise false),
        // no trial run passes above one that failed: answers inferred from them are the
        // ones the premise gives.
        for (estimate, threshold) in cases() {
            let band = 0.97 * threshold..0.98 * threshold;
            let passes = |load: f64| load <= threshold && !band.contains(&load);
            let (_, trials) = searched(passes, estimate, true);
            assert!(
                trials.monotone(),
                "estimate {estimate}, threshold {threshold}"
            );
        }
    }
}
