//! FIFO-shared egress queues: where window-limited streams share one FIFO, their shares of
//! the link follow their windows, not max-min fairness.
//!
//! The simulator's egress arbiter (`sim/channel/arbiter.rs`) keeps one input per ingress
//! port and serves the inputs in turn; within an input, TLPs go in the order they came (the
//! ordering rules aside). A node's own TLPs (a root complex's completions, an endpoint's
//! requests and writes) share one input, and a switch with `arbitration = "oldest"` serves
//! all its inputs as one FIFO. When every stream on a link direction joins its queue
//! through the same input, the queue is one FIFO: each TLP waits behind all those queued
//! before it, so every stream sees the same queueing delay `q`, and a stream that keeps a
//! window `W` in flight over an unloaded round trip `T` runs at `W / (T + q)` (Little's
//! law). A saturated FIFO's `q` is the one at which those rates fill the link: the streams
//! share it in proportion to their windows, not equally (two readers under one Gen2 x1
//! link with 4 and 16 requests in flight get about 1:4). The solve finds every FIFO's `q`
//! by a fixed point with the max-min solve of everything else ([`settle`]).
//!
//! A posted writer's window is what holds its TLPs in the queue while they wait: at its own
//! egress, the writes its flow keeps queued (the next queued as one leaves: no round trip
//! of its own); behind a switch's egress, the posted credits it took at the hop before,
//! freed as the TLP leaves (over the credit round trip), one buffer that the writers crossing
//! that link share by the TLPs each sends into it (`Limit::shared`). Each such window waits
//! behind that one FIFO only (`Limit::at`; into a root complex, behind every throttle the
//! write books, `Limit::behind`), and a writer it holds backs up to its source
//! ([`held_at`]). Where a link's egress serves several inputs round robin and
//! one of them holds two or more windowed streams, each input is a FIFO with its own delay,
//! and every input that would send more gets the same TLP rate: the one that fills the link.

use std::collections::BTreeMap;

use super::{Bound, Model, Stream};
use crate::pcie::flow_control::FcClass;

/// The kinds of resource that pass TLPs in the order they come, one FIFO of their payload.
pub(super) const THROTTLES: [&str; 8] = [
    "switch_bus",
    "socket_link",
    "memory",
    "read_path",
    "data_path",
    "write_sink",
    "host_bridge",
    "p2p",
];

/// The egress input of the TLPs that start at the transmitting node.
pub(super) const OWN: usize = usize::MAX;

/// A link direction whose egress queue is one FIFO for the window-limited streams on it.
pub(super) struct Fifo {
    /// The link direction (or the socket link direction's resource).
    pub(super) chan: usize,
    /// The streams through it (indices into `Model::streams`).
    streams: Vec<usize>,
    /// Seconds of its queueing delay each of `streams` spends anyway (a read's memory
    /// latency, where the queue is booked as the request arrives): none in most.
    hidden: Vec<f64>,
}

impl Fifo {
    /// One FIFO of `streams` at `chan`, its delay added whole to each.
    fn new(chan: usize, streams: Vec<usize>) -> Self {
        let hidden = vec![0.0; streams.len()];
        Fifo {
            chan,
            streams,
            hidden,
        }
    }

    /// Whether stream `s` queues in it.
    pub(super) fn holds(&self, s: usize) -> bool {
        self.streams.contains(&s)
    }

    /// What its delay `q` adds to stream `s`'s round trip (`None`: `s` does not cross it).
    fn wait(&self, s: usize, q: f64) -> Option<f64> {
        let k = self.streams.iter().position(|&x| x == s)?;
        Some((q - self.hidden[k]).max(0.0))
    }
}

impl Model<'_> {
    /// Whether every stream of `on` has a window that waits behind a FIFO at resource `c`
    /// (one of its own, or one behind every FIFO it crosses).
    fn windowed(&self, on: &[usize], c: usize) -> bool {
        on.iter().all(|&s| {
            let s = &self.streams[s];
            (s.limits.iter()).any(|l| {
                l.window.is_some() && (l.at.is_none_or(|a| a == c) || l.behind.contains(&c))
            })
        })
    }

    /// The link directions where two or more streams, each with a window of its own (read
    /// requests, fio I/Os in flight), share one FIFO and nothing else uses the link there.
    pub(super) fn fifos(&self) -> Vec<Fifo> {
        let mut out = Vec::new();
        for c in 0..self.sys.links.len() * 2 {
            let on: Vec<usize> = (0..self.streams.len())
                .filter(|&s| self.streams[s].mix.tlps_on(c) > 0.0)
                .collect();
            if on.len() < 2 {
                continue;
            }
            let (tx, _) = super::path::ends(self.sys, c);
            let oldest = self.sys.nodes[tx].kind.arbiter_inputs(1).1;
            let inputs = |s: usize| self.streams[s].mix.inputs.get(&c);
            let one_input = on
                .iter()
                .all(|&s| inputs(s).is_some_and(|i| i.len() == 1 && Some(i) == inputs(on[0])));
            if !self.windowed(&on, c) {
                continue;
            }
            if oldest || one_input {
                out.push(Fifo::new(c, on));
                continue;
            }
            // Round robin between inputs, each one FIFO (every stream joins through one).
            let mut by: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
            for &s in &on {
                match inputs(s).filter(|i| i.len() == 1).and_then(|i| i.first()) {
                    Some(&i) => by.entry(i).or_default().push(s),
                    None => by.clear(),
                }
                if by.is_empty() {
                    break;
                }
            }
            if by.values().any(|v| v.len() > 1) {
                out.extend(by.into_values().map(|streams| Fifo::new(c, streams)));
            }
        }
        // A socket link direction passes TLPs in the order they are ready, whoever sent
        // them (`socket_cross` in `sim/socket.rs`), and so does a node's throttle (a
        // memory, a data path, a host bridge, a switch's shared bus: `Throttle::pass` books
        // each piece after the ones before it): one FIFO of its payload.
        for r in (0..self.res.len()).filter(|&r| THROTTLES.contains(&self.res[r].kind)) {
            let on: Vec<usize> = (0..self.streams.len())
                .filter(|&s| self.streams[s].mix.use_of(r) > 0.0)
                .collect();
            if on.len() >= 2 && self.windowed(&on, r) {
                let mut f = Fifo::new(r, on);
                f.hidden = self.hidden(r, &f.streams);
                out.push(f);
            }
        }
        out
    }
}

impl Model<'_> {
    /// Seconds of throttle `r`'s queueing delay each of `streams` spends anyway: a root
    /// complex's shared data path is booked as a read request arrives (`RootComplex::read`),
    /// so a reader's wait there overlaps the memory's latency; none elsewhere.
    fn hidden(&self, r: usize, streams: &[usize]) -> Vec<f64> {
        let node = (self.res[r].kind == "data_path")
            .then(|| {
                (0..self.sys.nodes.len()).find(|&n| {
                    (self.target_names(n, false).iter()).any(|s| self.named(s) == Some(r))
                })
            })
            .flatten();
        let reads = |s: usize| {
            let posted = self.streams[s].backlog.as_ref();
            posted.is_none_or(|b| b.class != FcClass::Posted)
        };
        (streams.iter())
            .map(|&s| match node {
                Some(n) if reads(s) => self.memory_latency(n),
                _ => 0.0,
            })
            .collect()
    }
}

/// Whether window `l` waits behind the FIFO at resource `c`: one of those it lists
/// (`behind`), else its own FIFO's (`at`), else every FIFO its stream crosses.
pub(super) fn waits_at(l: &super::Limit, c: usize) -> bool {
    if l.behind.is_empty() {
        l.at.is_none_or(|a| a == c)
    } else {
        l.behind.contains(&c)
    }
}

/// The most stream `s` (`st`) may run at with the FIFOs' delays `q`: each window over its
/// round trip plus the delays it waits behind (those of the FIFOs the stream crosses, or
/// the one at its link), its fixed limits. A read window, its transfers' as well as its
/// requests', also waits `hol`, its completions' wait behind other streams' backlogs,
/// whichever FIFO its requests wait behind.
pub(super) fn limit_at(fifos: &[Fifo], q: &[f64], (s, hol): (usize, f64), st: &Stream) -> f64 {
    st.limits
        .iter()
        .map(|l| match l.window {
            Some((w, t)) => {
                let d: f64 = (fifos.iter().zip(q))
                    .filter(|(f, _)| waits_at(l, f.chan))
                    .filter_map(|(f, &q)| f.wait(s, q))
                    .sum::<f64>()
                    + if l.hol { hol } else { 0.0 };
                if t + d > 0.0 {
                    l.rate.min(w / (t + d))
                } else {
                    l.rate
                }
            }
            None => l.rate,
        })
        .fold(f64::INFINITY, f64::min)
}

/// Rounds the solve takes at most to settle the FIFOs' delays and the backlogs' waits.
pub(super) const ROUNDS: usize = 200;

/// Rounds after which a solve that has not settled moves each limit by a shrinking step.
const DAMPED_AFTER: usize = 50;

/// Sets each stream's limit in `demands` to what its windows allow with the FIFOs' delays
/// `q` and its wait `hol` behind others' backlogs, in solve round `round`; returns whether
/// any moved. The solve has settled when none does (two FIFOs in series that the same
/// streams cross may trade their delays without changing a rate). Some never settle: a
/// wait behind a backlog that is there in one round and gone in the next (a stream held at
/// a resource, then not) takes them round a cycle of two to eight rounds. After
/// [`DAMPED_AFTER`] rounds a limit that has turned round since (its change against its last
/// one, `last`: each stream's last change and whether it turned) moves by 1/(k + 2) of its
/// change in the k-th round after, so that it comes to the mean of what the cycle's rounds
/// give it, not to wherever the last round falls (random fabric seed 132's 4-tag reader:
/// +288 % at the last round, -9 % at the mean); a limit still moving one way is not slowed.
pub(super) fn relimit(
    (fifos, q, hol): (&[Fifo], &[f64], &[f64]),
    streams: &[Stream],
    (demands, last): (&mut [super::solve::Demand], &mut [(f64, bool)]),
    round: usize,
) -> bool {
    let step = match round.checked_sub(DAMPED_AFTER) {
        Some(k) => 1.0 / (k as f64 + 2.0),
        None => 1.0,
    };
    let mut moved = false;
    for (i, (dm, s)) in demands.iter_mut().zip(streams).enumerate() {
        let mut limit = limit_at(fifos, q, (i, hol[i]), s);
        let change = limit - dm.limit;
        let (before, turned) = last[i];
        let turned = turned || (step < 1.0 && change * before < 0.0);
        if turned && change.is_finite() {
            limit = dm.limit + step * change;
        }
        last[i] = (if change.is_finite() { change } else { 0.0 }, turned);
        // A limit that comes to or leaves infinity moved.
        moved |= if limit.is_finite() && dm.limit.is_finite() {
            (limit - dm.limit).abs() > 1e-12 * limit.abs()
        } else {
            limit != dm.limit
        };
        dm.limit = limit;
    }
    moved
}

/// What the FIFOs' streams offer their links, with the streams something else bound held
/// at their last rates.
struct Offer<'a> {
    fifos: &'a [Fifo],
    streams: &'a [Stream],
    rates: &'a [f64],
    bounds: &'a [Bound],
    /// Each stream's wait behind other streams' backlogs.
    hol: &'a [f64],
    /// The delays, FIFO `k`'s set to what is being tried.
    at: Vec<f64>,
}

impl Offer<'_> {
    /// TLPs and wire bytes per second FIFO `k`'s streams put on its link with its delay
    /// at `x`.
    fn at(&mut self, k: usize, x: f64) -> (f64, f64) {
        self.at[k] = x;
        let c = self.fifos[k].chan;
        let mut out = (0.0, 0.0);
        for &s in &self.fifos[k].streams {
            let st = &self.streams[s];
            let ceiling = match self.bounds[s] {
                Bound::Resource(r) if r != c => self.rates[s],
                _ => f64::INFINITY,
            };
            let rate = limit_at(self.fifos, &self.at, (s, self.hol[s]), st).min(ceiling);
            out.0 += st.mix.tlps_on(c) * rate;
            out.1 += st.mix.use_of(c) * rate;
        }
        out
    }

    /// The least delay (from `start` up) at which FIFO `k` offers no more than `most` of
    /// what `pick` takes of its offer.
    fn delay(&mut self, k: usize, start: f64, most: f64, pick: fn((f64, f64)) -> f64) -> f64 {
        let mut hi = start.max(1e-9);
        for _ in 0..64 {
            if pick(self.at(k, hi)) <= most {
                break;
            }
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if pick(self.at(k, mid)) > most {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        self.at[k] = hi;
        hi
    }
}

/// Sets each FIFO's queueing delay to the one at which its streams fill the link's
/// capacity `cap` (none when they do not fill it), each stream at its windows over their
/// round trips plus its delays, or at its last `rates` where something else bound it. The
/// FIFOs of one link's inputs share it round robin, one TLP each in turn: every input that
/// would send more gets the same TLP rate, the one at which the link is full.
pub(super) fn settle(
    fifos: &[Fifo],
    q: &mut [f64],
    streams: &[Stream],
    (rates, bounds, hol): (&[f64], &[Bound], &[f64]),
    cap: &[f64],
) {
    let mut k = 0;
    while k < fifos.len() {
        let c = fifos[k].chan;
        let n = fifos[k..].iter().take_while(|f| f.chan == c).count();
        let mut o = Offer {
            fifos,
            streams,
            rates,
            bounds,
            hol,
            at: q.to_vec(),
        };
        let idle: Vec<(f64, f64)> = (k..k + n).map(|j| o.at(j, 0.0)).collect();
        if idle.iter().map(|x| x.1).sum::<f64>() <= cap[c] {
            q[k..k + n].fill(0.0);
        } else if n == 1 {
            q[k] = o.delay(k, q[k], cap[c], |x| x.1);
        } else {
            // Each input's delay at `r` TLPs per second (none where it offers less) and
            // the wire bytes they fill.
            let fill = |r: f64, o: &mut Offer<'_>| -> (f64, Vec<f64>) {
                let mut bytes = 0.0;
                let mut d = Vec::with_capacity(n);
                for (j, &(tlps, b)) in idle.iter().enumerate() {
                    if tlps <= r {
                        o.at[k + j] = 0.0;
                        d.push(0.0);
                        bytes += b;
                    } else {
                        let x = o.delay(k + j, q[k + j], r, |x| x.0);
                        d.push(x);
                        bytes += o.at(k + j, x).1;
                    }
                }
                (bytes, d)
            };
            let (mut lo, mut hi) = (0.0, idle.iter().map(|x| x.0).fold(0.0, f64::max));
            for _ in 0..50 {
                let mid = 0.5 * (lo + hi);
                if fill(mid, &mut o).0 > cap[c] {
                    hi = mid;
                } else {
                    lo = mid;
                }
            }
            let (_, d) = fill(lo, &mut o);
            q[k..k + n].copy_from_slice(&d);
        }
        k += n;
    }
}

/// `bounds` with each posted writer that a window behind a full FIFO holds (not max-min)
/// taken as held at that FIFO's link, and each reader so held at the full FIFO its
/// completions cross ([`reader_held_at`]): its writes or completions back up from there
/// toward their source, and what joins their queues on the way waits behind them
/// ([`super::hol`]).
pub(super) fn held_at(
    fifos: &[Fifo],
    q: &[f64],
    streams: &[Stream],
    bounds: &[Bound],
) -> Vec<Bound> {
    let mut out = bounds.to_vec();
    for (s, b) in out.iter_mut().enumerate() {
        let st = &streams[s];
        if *b != Bound::Limit {
            continue;
        }
        if let Some(c) = reader_held_at(fifos, q, (s, st)) {
            *b = Bound::Resource(c);
            continue;
        }
        let posted = (st.backlog.as_ref()).is_some_and(|b| b.class == FcClass::Posted);
        if !posted {
            continue;
        }
        // The least of its limits, and the full FIFO's link if a window behind it is that.
        let mut least = (f64::INFINITY, None);
        for l in &st.limits {
            let here = match (l.window, l.at) {
                (Some((w, t)), Some(_)) => {
                    // The FIFOs it waits behind (its own, or each write throttle it books),
                    // and the one with the longest delay, which holds it.
                    let waits = (fifos.iter().zip(q))
                        .filter(|(f, _)| waits_at(l, f.chan) && f.streams.contains(&s));
                    let d: f64 = waits.clone().map(|(_, &q)| q).sum();
                    let fullest = waits.max_by(|a, b| a.1.total_cmp(b.1)).map(|(f, _)| f.chan);
                    let window = if t + d > 0.0 {
                        w / (t + d)
                    } else {
                        f64::INFINITY
                    };
                    (l.rate.min(window), fullest.filter(|_| d > 0.0))
                }
                _ => (l.rate, None),
            };
            if here.0 < least.0 {
                least = here;
            }
        }
        if let Some(c) = least.1 {
            *b = Bound::Resource(c);
        }
    }
    out
}

/// Names the link of its fullest FIFO as what bound a stream its window held back behind a
/// queue (the simulator's verdict: the link is full).
pub(super) fn bounds(
    fifos: &[Fifo],
    (q, hol): (&[f64], &[f64]),
    streams: &[Stream],
    bounds: &mut [Bound],
) {
    let idle = vec![0.0; q.len()];
    for (s, b) in bounds.iter_mut().enumerate() {
        let unloaded = limit_at(fifos, &idle, (s, 0.0), &streams[s]);
        let windowed = limit_at(fifos, q, (s, hol[s]), &streams[s]) < unloaded * (1.0 - 1e-9);
        let fullest = fifos
            .iter()
            .zip(q)
            .filter(|(f, &q)| q > 0.0 && f.streams.contains(&s))
            .max_by(|a, b| a.1.total_cmp(b.1));
        if let (Bound::Limit, Some((f, _)), true) = (*b, fullest, windowed) {
            *b = Bound::Resource(f.chan);
        }
    }
}

/// The link of the full FIFO with the longest delay that reader `s`'s completions cross,
/// where a window of its own behind the FIFOs holds it: its completions back up from
/// there (a link that windows share by the delay, not max-min).
fn reader_held_at(fifos: &[Fifo], q: &[f64], (s, st): (usize, &Stream)) -> Option<usize> {
    let bl = (st.backlog.as_ref()).filter(|b| b.class == FcClass::Completion)?;
    let delay: f64 = (fifos.iter().zip(q))
        .filter(|(f, _)| f.streams.contains(&s))
        .map(|(_, &q)| q)
        .sum();
    let window = |l: &super::Limit| match l.window {
        Some((w, t)) if l.at.is_none() && t + delay > 0.0 => l.rate.min(w / (t + delay)),
        _ => l.rate,
    };
    let least = st
        .limits
        .iter()
        .min_by(|a, b| window(a).total_cmp(&window(b)))?;
    if least.window.is_none() || least.at.is_some() {
        return None;
    }
    (fifos.iter().zip(q))
        .filter(|(f, &q)| {
            q > 0.0 && f.streams.contains(&s) && bl.path.hops.contains(&super::Hop::Chan(f.chan))
        })
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map(|(f, _)| f.chan)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_wait_the_round_trip_spends_anyway_adds_only_its_excess() {
        // Stream 7 reads through a data path booked as its request arrives, 500 ns before
        // its memory has the data; stream 3 writes through it.
        let mut f = Fifo::new(9, vec![3, 7]);
        f.hidden[1] = 500e-9;
        assert_eq!(f.wait(3, 2e-6), Some(2e-6));
        assert!((f.wait(7, 2e-6).unwrap() - 1.5e-6).abs() < 1e-18);
        assert_eq!(f.wait(7, 300e-9), Some(0.0));
        assert_eq!(f.wait(5, 2e-6), None);
    }
}
