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

use super::{Bound, Model, Stream};

/// The egress input of the TLPs that start at the transmitting node.
pub(super) const OWN: usize = usize::MAX;

/// A link direction whose egress queue is one FIFO for the window-limited streams on it.
pub(super) struct Fifo {
    /// The link direction.
    chan: usize,
    /// The streams through it (indices into `Model::streams`).
    streams: Vec<usize>,
}

impl Model<'_> {
    /// The link directions where two or more streams, each with a window of its own (read
    /// requests, fio I/Os in flight), share one FIFO and nothing else uses the link there.
    pub(super) fn fifos(&self) -> Vec<Fifo> {
        let mut out = Vec::new();
        for c in 0..self.sys.links.len() * 2 {
            let on: Vec<usize> = (0..self.streams.len())
                .filter(|&s| self.streams[s].mix.tlps.get(&c).is_some_and(|&t| t > 0.0))
                .collect();
            if on.len() < 2 {
                continue;
            }
            let l = &self.sys.links[c / 2];
            let tx = if c % 2 == 0 { l.up } else { l.down };
            let oldest = self.sys.nodes[tx].kind.arbiter_inputs(1).1;
            let inputs = |s: usize| self.streams[s].mix.inputs.get(&c);
            let one_input = on
                .iter()
                .all(|&s| inputs(s).is_some_and(|i| i.len() == 1 && Some(i) == inputs(on[0])));
            let windows = on.iter().all(|&s| {
                let s = &self.streams[s];
                (s.limits.iter()).any(|l| l.window.is_some() && l.at.is_none_or(|a| a == c))
            });
            if (oldest || one_input) && windows {
                out.push(Fifo {
                    chan: c,
                    streams: on,
                });
            }
        }
        out
    }
}

/// The most stream `s` (`st`) may run at with the FIFOs' delays `q`: each window over its
/// round trip plus the delays it waits behind (those of the FIFOs the stream crosses, or
/// the one at its link), its fixed limits.
pub(super) fn limit_at(fifos: &[Fifo], q: &[f64], s: usize, st: &Stream) -> f64 {
    st.limits
        .iter()
        .map(|l| match l.window {
            Some((w, t)) => {
                let d: f64 = (fifos.iter().zip(q))
                    .filter(|(f, _)| f.streams.contains(&s) && l.at.is_none_or(|a| a == f.chan))
                    .map(|(_, &q)| q)
                    .sum();
                l.rate.min(w / (t + d))
            }
            None => l.rate,
        })
        .fold(f64::INFINITY, f64::min)
}

/// Sets each FIFO's queueing delay in turn to the one at which its streams fill the link's
/// capacity `cap` (none when they do not fill it), each stream at its window over its
/// round trip plus its delays, or at its last `rates` where something else bound it.
pub(super) fn settle(
    fifos: &[Fifo],
    q: &mut [f64],
    streams: &[Stream],
    (rates, bounds): (&[f64], &[Bound]),
    cap: &[f64],
) {
    for k in 0..fifos.len() {
        let f = &fifos[k];
        let c = f.chan;
        let mut at = q.to_vec();
        let mut load = |x: f64| -> f64 {
            at[k] = x;
            f.streams
                .iter()
                .map(|&s| {
                    let a = streams[s].mix.uses.get(&c).copied().unwrap_or(0.0);
                    let ceiling = match bounds[s] {
                        Bound::Resource(r) if r != c => rates[s],
                        _ => f64::INFINITY,
                    };
                    a * limit_at(fifos, &at, s, &streams[s]).min(ceiling)
                })
                .sum()
        };
        if load(0.0) <= cap[c] {
            q[k] = 0.0;
            continue;
        }
        let mut hi = q[k].max(1e-9);
        for _ in 0..64 {
            if load(hi) <= cap[c] {
                break;
            }
            hi *= 2.0;
        }
        let mut lo = 0.0;
        for _ in 0..80 {
            let mid = 0.5 * (lo + hi);
            if load(mid) > cap[c] {
                lo = mid;
            } else {
                hi = mid;
            }
        }
        q[k] = hi;
    }
}

/// Names the link of its fullest FIFO as what bound a stream its window held back behind a
/// queue (the simulator's verdict: the link is full).
pub(super) fn bounds(fifos: &[Fifo], q: &[f64], streams: &[Stream], bounds: &mut [Bound]) {
    let idle = vec![0.0; q.len()];
    for (s, b) in bounds.iter_mut().enumerate() {
        let unloaded = limit_at(fifos, &idle, s, &streams[s]);
        let windowed = limit_at(fifos, q, s, &streams[s]) < unloaded * (1.0 - 1e-9);
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
