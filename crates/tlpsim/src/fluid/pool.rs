//! A switch's completion buffer, which the completions of every reader coming in over one
//! link share.
//!
//! The simulator's switch pools one ingress buffer per port and flow-control class
//! (`sim/node/switch.rs`) and holds each TLP's credits from its arrival until it starts
//! on its way out, then until the UpdateFC that returns them is in. Each reader's own
//! credit limit (`credit_limits` in `streams.rs`) is its window over that round trip with
//! the whole buffer to itself; together they hold their TLP rates times their round trips
//! (Little's law), and where that is more than the buffer the link into the switch stalls
//! on the credits (random fabric seed 597: the root complex's Gen5 x8 link 91 % busy, 8.8 %
//! of the time waiting for CplH credits). The link then carries no more completions than
//! the buffer over their mean round trip, however its transmitter splits them.

use super::solve::{Bound, Demand};
use super::{Hop, Model, Stream};
use crate::pcie::flow_control::FcClass;
use crate::pcie::tlp::TlpKind;

/// The completions coming into a switch over one link direction, which share its buffer.
pub(super) struct Pool {
    /// The link direction.
    pub(super) chan: usize,
    /// The buffer's header and data credits (infinite where it advertises infinite).
    credits: (f64, f64),
    /// Per stream whose completions cross it: its index and the header and data credits
    /// each payload byte holds for its round trip (credit-seconds per byte).
    pub(super) users: Vec<(usize, f64, f64)>,
    /// Where the readers' runs take the buffer in turn ([`Model::serial`]): per reader, its
    /// index, the seconds each payload byte of its holds the queue before the link up, and
    /// its window's bytes; empty where the readers share the buffer at once.
    pub(super) serial: Vec<(usize, f64, f64)>,
}

impl Model<'_> {
    /// The completion buffers of switches that readers' completions come into.
    pub(super) fn pools(&self) -> Vec<Pool> {
        let class = FcClass::Completion as usize;
        let mut out: Vec<Pool> = Vec::new();
        for (s, st) in self.streams.iter().enumerate() {
            let Some(bl) = st
                .backlog
                .as_ref()
                .filter(|b| b.class == FcClass::Completion)
            else {
                continue;
            };
            for (i, hop) in bl.path.hops.iter().enumerate() {
                let Hop::Chan(c) = *hop else { continue };
                let n = bl.path.nodes[i + 1];
                let credits = self.sys.nodes[n].credits.0;
                let (h, d) = (credits[2 * class], credits[2 * class + 1]);
                let switch = self.sys.nodes[n].kind.holds_until_forwarded().is_some();
                if !switch || (h.is_none() && d.is_none()) {
                    continue;
                }
                let tlps = st.mix.tlps_on(c);
                let hold = self.credit_round_trip(&bl.path, i, TlpKind::CplD, bl.tlp as u32);
                let user = (s, tlps * hold, tlps * hold * super::hol::data_units(bl.tlp));
                match out.iter_mut().find(|p| p.chan == c) {
                    Some(p) => p.users.push(user),
                    None => out.push(Pool {
                        chan: c,
                        credits: (
                            h.map_or(f64::INFINITY, f64::from),
                            d.map_or(f64::INFINITY, f64::from),
                        ),
                        users: vec![user],
                        serial: Vec::new(),
                    }),
                }
            }
        }
        // A reader alone in a buffer has it to itself: its own credit limit says so.
        out.retain(|p| p.users.len() > 1);
        for p in &mut out {
            p.serial = self.serial(p);
        }
        out
    }

    /// The readers of pool `p` whose runs take its buffer in turn. Where their completions
    /// come in through one egress input (one FIFO) and one of them (the hog) drains slower
    /// after the switch than the link brings them and sends a run (requests back to back,
    /// whose completions come in a row) longer than the buffer holds, the run fills the
    /// buffer and the rest of it waits in the FIFO, holding up everything behind it while
    /// the hog drains it at its own pace. Each reader's run (its window: what it has
    /// queued behind the others' runs) holds the FIFO up for the part the buffer does not
    /// take, at the reader's drain rate, and the readers share that time by their windows.
    /// Random fabric seed 2794: a 4-tag reader on a Gen1 x2 link beside a reader of 64 KiB
    /// transfers on a Gen1 x4 link, both through one switch's 64 CplH credits: the
    /// simulator 1.11 Gb/s, the buffer taken in turn 1.16, shared at once 2.58. Per reader:
    /// (stream, seconds per payload byte it holds the FIFO up, window); empty where no
    /// reader is such a hog.
    fn serial(&self, p: &Pool) -> Vec<(usize, f64, f64)> {
        let c = p.chan;
        let mut out = Vec::new();
        let (mut hog, mut input) = (false, None);
        for &(s, ..) in &p.users {
            let st = &self.streams[s];
            let (Some(bl), Some(ins)) = (st.backlog.as_ref(), st.mix.inputs.get(&c)) else {
                return Vec::new();
            };
            if ins.len() != 1 || input.is_some_and(|i| i != ins) {
                return Vec::new();
            }
            input = Some(ins);
            let window = (st.limits.iter().filter(|l| l.at.is_none()))
                .filter_map(|l| l.window)
                .map(|(w, _)| w)
                .fold(f64::INFINITY, f64::min);
            let Some(i) = bl.path.hops.iter().position(|h| *h == Hop::Chan(c)) else {
                return Vec::new();
            };
            if !window.is_finite() {
                return Vec::new();
            }
            // What it drains at with a link to itself (none where it puts nothing there).
            let alone = |x: usize| match st.mix.use_of(x) {
                u if u > 0.0 => self.res[x].cap / u,
                _ => f64::INFINITY,
            };
            let inflow = alone(c);
            let down = (bl.path.hops[i + 1..].iter())
                .filter_map(|h| match *h {
                    Hop::Chan(x) => Some(alone(x)),
                    Hop::Socket { .. } => None,
                })
                .fold(f64::INFINITY, f64::min);
            let n = bl.path.nodes[i + 1];
            // A run: the requests it sends back to back (their completions come in a row).
            let run = st.burst / st.requests_per_byte;
            let buffer = self.buffer(n, FcClass::Completion, bl.tlp);
            hog |= down < inflow && run > buffer;
            // Of a run, what the buffer takes in holds no one up: the rest waits in the
            // FIFO before the link and holds up whatever comes behind it.
            let (queued, drain) = ((1.0 - buffer / window).max(0.0), inflow.min(down));
            if !(drain > 0.0 && drain.is_finite()) {
                return Vec::new();
            }
            out.push((s, queued / drain, window));
        }
        if hog {
            out
        } else {
            Vec::new()
        }
    }

    /// Names the credits of the switch's completion buffer as what holds back each reader
    /// the solve bound at a pool's link whose runs fill that pool's time at `rates` (the
    /// simulator's link waits for those credits while a run holds the buffer, and its
    /// verdict names them: `rc -> sw1 CplH credits`).
    pub(super) fn name_runs(&mut self, pools: &[Pool], rates: &[f64], bounds: &mut [Bound]) {
        for p in pools {
            let time: f64 = p.serial.iter().map(|&(s, secs, _)| rates[s] * secs).sum();
            if time < 1.0 - 1e-6 {
                continue;
            }
            let (tx, rx) = super::path::ends(self.sys, p.chan);
            for &(s, secs, _) in &p.serial {
                let Some(bl) = self.streams[s].backlog.as_ref() else {
                    continue;
                };
                if secs <= 0.0 || bounds[s] != Bound::Resource(p.chan) {
                    continue;
                }
                let ty = self.credit_type(rx, FcClass::Completion, bl.tlp);
                let (tx, rx) = (&self.sys.nodes[tx].name, &self.sys.nodes[rx].name);
                self.streams[s].waits = Some((
                    format!("{tx} -> {rx} {ty} credits"),
                    format!(
                        "{tx} waits for {ty} credits while other readers' runs of completions \
                         fill {rx}'s completion buffer and drain at their own links' pace"
                    ),
                ));
                bounds[s] = Bound::Limit;
            }
        }
    }
}

/// Adds each pool's buffer to the solve as three resources after the `first` others: its
/// header and its data credits, which each reader's completions hold at its header and
/// data credit-seconds per byte of its rate, and which readers share at the weight they
/// have on the pool's link (its transmitter gives returned credits to one TLP per input in
/// turn); and its time, where runs take it in turn ([`Model::serial`]). Returns the
/// resources' capacities; resource indices `first + 3k` to `first + 3k + 2` are pool `k`'s.
/// A linear constraint of its own, not a lowered link capacity, so in the max-min solve
/// the link's other traffic (posted writes, other classes) is not held back and the link's
/// busy time stays its wire's. (A FIFO before the link drains at the lowered capacity,
/// [`cap_pools`], whatever it holds.)
pub(super) fn resources(pools: &[Pool], first: usize, demands: &mut [Demand]) -> Vec<f64> {
    let mut cap = Vec::with_capacity(PER_POOL * pools.len());
    for (k, p) in pools.iter().enumerate() {
        let at = first + PER_POOL * k;
        let time = if p.serial.is_empty() {
            f64::INFINITY
        } else {
            1.0
        };
        cap.extend([p.credits.0, p.credits.1, time]);
        for &(s, h, d) in &p.users {
            let d_s = &mut demands[s];
            let Some(&(_, _, w)) = d_s.uses.iter().find(|u| u.0 == p.chan) else {
                continue;
            };
            d_s.uses.push((at, h, w));
            d_s.uses.push((at + 1, d, w));
        }
        // The buffer's time, which each reader's runs hold up for the seconds per byte
        // `serial` gives, shared in proportion to their windows.
        for &(s, secs, window) in p.serial.iter().filter(|u| u.1 > 0.0) {
            demands[s].uses.push((at + 2, secs, window));
        }
    }
    cap
}

/// Resources of the solve per pool: its header credits, its data credits and its time.
const PER_POOL: usize = 3;

/// Lowers each pool's link direction's capacity `cap` (wire bytes per second) to what its
/// buffer lets through at the mix of `rates`: the completions' wire bytes scaled by the
/// buffer over the credits they hold, beside the rest of the link's load. For a FIFO queue
/// before the link (`fifo::settle`): its completions drain as fast as the buffer's
/// credits come back, and the queue's delay sets each reader's share by its window; and for
/// a paced reader's completions (`stretch`), which go back to back only as fast.
pub(super) fn cap_pools(pools: &[Pool], streams: &[Stream], rates: &[f64], cap: &mut [f64]) {
    for p in pools {
        let c = p.chan;
        let (mut headers, mut units, mut wire) = (0.0, 0.0, 0.0);
        for &(s, h, d) in &p.users {
            headers += rates[s] * h;
            units += rates[s] * d;
            wire += rates[s] * streams[s].mix.use_of(c);
        }
        let f = (p.credits.0 / headers).min(p.credits.1 / units);
        if f.is_finite() {
            let load: f64 = (streams.iter().zip(rates))
                .map(|(st, r)| r * st.mix.use_of(c))
                .sum();
            cap[c] = cap[c].min(load - wire * (1.0 - f));
        }
    }
}

/// Whether stream `s`'s completions cross link direction `c` into a pool's buffer.
pub(super) fn drains(pools: &[Pool], s: usize, c: usize) -> bool {
    (pools.iter()).any(|p| p.chan == c && p.users.iter().any(|u| u.0 == s))
}

/// The max-min solve of `demands` over `cap`, whose last `PER_POOL * pools.len()` resources
/// are the `pools`' buffers (see [`resources`]), with a flow the buffer bounds named as bound
/// by its link direction: the simulator's link waits for the credits, and its verdict
/// names the link.
pub(super) fn solve(pools: &[Pool], cap: &[f64], demands: &[Demand]) -> (Vec<f64>, Vec<Bound>) {
    debug_assert!(
        cap.len() >= PER_POOL * pools.len(),
        "the pools' resources are in `cap`"
    );
    let (rates, mut bounds) = super::solve::solve(cap, demands);
    let first = cap.len() - PER_POOL * pools.len();
    for b in &mut bounds {
        if let Bound::Resource(r) = *b {
            if r >= first {
                *b = Bound::Resource(pools[(r - first) / PER_POOL].chan);
            }
        }
    }
    (rates, bounds)
}

#[cfg(test)]
mod tests {
    use super::super::tests::{streams_of, system};
    use super::super::{run, Hop};
    use crate::fabric::System;
    use crate::pcie::flow_control::FcClass;

    /// Two readers through one switch from the root complex's one completion queue (random
    /// fabric seed 2794's shape; the Python tests run it on both engines): a reader of
    /// whole 64 KiB transfers whose requests go out at once on a Gen1 x4 link, and a 4-tag
    /// reader of 4 KiB requests on a Gen1 x2 link; `sw0` has 64 CplH credits, one per
    /// completion.
    fn runs_into_one_buffer() -> System {
        system(include_str!(
            "../../../../tests/data/runs_into_one_buffer.toml"
        ))
    }

    #[test]
    fn readers_whose_runs_overflow_a_switchs_buffer_take_its_time_in_turn() {
        let sys = runs_into_one_buffer();
        let m = streams_of(&sys);
        let pools = m.pools();
        assert_eq!(pools.len(), 1);
        let p = &pools[0];
        // The 64 KiB reader's run (a whole transfer's requests at once) overflows the 8 KiB
        // buffer and its Gen1 x4 link drains slower than the Gen5 x2 link brings it: both
        // readers take the buffer's time, each its window's part past the buffer at its
        // drain rate, shared by their windows.
        assert_eq!(p.serial.len(), 2);
        for &(s, secs, window) in &p.serial {
            let st = &m.streams[s];
            let bl = st.backlog.as_ref().unwrap();
            let buffer = m.buffer(bl.path.nodes[1], FcClass::Completion, bl.tlp);
            assert_eq!(buffer, 64.0 * bl.tlp);
            let Hop::Chan(down) = bl.path.hops[1] else {
                panic!("a link after the switch")
            };
            let drain = m.res[down].cap / st.mix.use_of(down);
            let expected = (1.0 - buffer / window) / drain;
            assert!(
                (secs - expected).abs() < 1e-12 * expected,
                "{secs} against {expected}"
            );
            assert_eq!(window, [16384.0, 65536.0][s]);
        }
        // The solve gives each its window per cycle of both windows' held-up parts.
        let r = run(&sys).expect("runs").result;
        let cycle: f64 = p.serial.iter().map(|&(_, secs, w)| secs * w).sum();
        for (s, f) in r.flows.iter().enumerate() {
            let window = p.serial[s].2;
            let expected = window / cycle * 8.0 / 1e9;
            assert!(
                (f.throughput_gbps - expected).abs() < 1e-9 * expected,
                "{}: {} against {expected}",
                f.name,
                f.throughput_gbps
            );
            // As the simulator names it: the link into the switch waits for its credits.
            assert_eq!(f.bottleneck.resource, "rc -> sw0 CplH credits");
            assert_eq!(f.bottleneck.kind, "credits");
        }
        for e in &estimates_of(&sys) {
            assert!(e.iter().any(|l| l.starts_with("runs:")), "{e:?}");
        }
    }

    /// The estimates of each flow of `sys`'s fluid run.
    fn estimates_of(sys: &System) -> Vec<Vec<String>> {
        run(sys).expect("runs").estimates
    }
}
