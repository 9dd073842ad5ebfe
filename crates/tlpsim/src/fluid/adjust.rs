//! Each round of the fluid solve's adjustments of the streams' own limits: a paced window
//! stretched to what the DLLPs or a shared completion buffer leave of its link (`stretch`),
//! and a buffer several streams share given in turns to the egress inputs before it
//! (`share`, `turns`).

use super::{fifo, pool, Bound, Limit, Stream};
use crate::pcie::flow_control::FcClass;
use std::collections::{BTreeMap, BTreeSet};

/// Sets each stream's limits to `base`'s with the bytes a limit's round trip carries back
/// to back over a link at its whole capacity `full` taken at the capacity `cap` the DLLPs
/// leave of it, or for a reader's completions into a switch's shared buffer (`pools`), at
/// the rate `drain` the buffer lets them through.
pub(super) fn stretch(
    streams: &mut [Stream],
    base: &[Vec<Limit>],
    (full, cap): (&[f64], &[f64]),
    (pools, drain): (&[pool::Pool], &[f64]),
) {
    for (s, (st, base)) in streams.iter_mut().zip(base).enumerate() {
        for (l, b) in st.limits.iter_mut().zip(base) {
            let (Some((c, bytes)), Some((w, t))) = (b.paced, b.window) else {
                continue;
            };
            let at = if pool::drains(pools, s, c) {
                drain[c]
            } else {
                cap[c]
            };
            let t = t + bytes / at.max(1.0) - bytes / full[c];
            l.window = Some((w, t));
            l.rate = w / t;
        }
    }
}

/// Sets each window of a buffer that several streams share (`Limit::shared`: a posted
/// buffer its writers, a non-posted one its readers' requests) to its stream's part of
/// `base`'s, at the last `rates` and `bounds`. The simulator's switch holds a TLP in the
/// buffer it came into until it leaves, whoever sent it, and the egress before the buffer
/// gives its credits to its inputs one TLP each in turn: an input whose streams send less
/// than an equal turn (held by their workloads' rates, or by a resource the window does not
/// wait behind) is not held by the buffer, and the others' inputs take equal turns of the
/// rest, each stream its part of its input's TLPs. (Parts in proportion to the rates alone
/// fit any split once the buffer is full: random fabric `--host` seed 1372, a 0.5 GB/s
/// writer beside a greedy one held below its rate, and two readers behind its writes, -34
/// and -61 %.)
pub(super) fn share(
    streams: &mut [Stream],
    base: &[Vec<Limit>],
    (rates, bounds): (&[f64], &[Bound]),
) {
    let mut into: BTreeMap<(usize, FcClass), Vec<Sender>> = BTreeMap::new();
    for (s, (st, base)) in streams.iter().zip(base).enumerate() {
        let paced = (base.iter().filter(|l| l.kind == "rate"))
            .map(|l| l.rate)
            .fold(f64::INFINITY, f64::min);
        for (l, key) in base.iter().filter_map(|l| Some((l, l.shared?))) {
            let elsewhere = match bounds[s] {
                Bound::Resource(r) if !fifo::waits_at(l, r) => rates[s],
                _ => f64::INFINITY,
            };
            let tlps = st.mix.tlps_on(key.0);
            (into.entry(key).or_default()).push(Sender {
                stream: s,
                input: st.mix.inputs.get(&key.0).cloned().unwrap_or_default(),
                tlps: tlps * rates[s],
                most: tlps * paced.min(elsewhere),
            });
        }
    }
    let parts: BTreeMap<((usize, FcClass), usize), Option<f64>> = (into.iter())
        .flat_map(|(&key, on)| turns(on).into_iter().map(move |(s, p)| ((key, s), p)))
        .collect();
    for (s, (st, base)) in streams.iter_mut().zip(base).enumerate() {
        for (l, b) in st.limits.iter_mut().zip(base) {
            let (Some(key), Some((w, t))) = (b.shared, b.window) else {
                continue;
            };
            match parts.get(&(key, s)).copied().unwrap_or(Some(1.0)) {
                Some(part) => {
                    l.window = Some((w * part, t));
                    l.rate = w * part / t;
                }
                // Something else holds it below its turn: the buffer does not.
                None => {
                    l.window = None;
                    l.rate = f64::INFINITY;
                }
            }
        }
    }
}

/// A stream sending into a shared buffer.
pub(super) struct Sender {
    /// The stream.
    pub(super) stream: usize,
    /// The egress inputs it joins before the buffer.
    pub(super) input: BTreeSet<usize>,
    /// Its TLPs a second into the buffer.
    pub(super) tlps: f64,
    /// The most it would send, held by something else (infinite where nothing is).
    pub(super) most: f64,
}

/// Each stream's part of a shared buffer: None for one whose input sends less than an
/// equal turn of what the inputs sending more leave (the buffer does not hold it), else an
/// equal turn of the buffer's TLPs split over its input's streams by their TLPs; the whole
/// buffer to a stream that sends nothing into it yet (so that it can start).
pub(super) fn turns(on: &[Sender]) -> Vec<(usize, Option<f64>)> {
    let total: f64 = on.iter().map(|x| x.tlps).sum();
    if total <= 0.0 {
        return on.iter().map(|x| (x.stream, Some(1.0))).collect();
    }
    // Per input: its TLPs and the most it would send.
    let mut inputs: BTreeMap<&BTreeSet<usize>, (f64, f64)> = BTreeMap::new();
    for x in on {
        let e = inputs.entry(&x.input).or_insert((0.0, 0.0));
        (e.0, e.1) = (e.0 + x.tlps, e.1 + x.most);
    }
    let mut order: Vec<_> = inputs.iter().collect();
    order.sort_by(|a, b| a.1 .1.total_cmp(&b.1 .1));
    let (mut left, mut n) = (total, order.len());
    let mut under = BTreeSet::new();
    for (&input, &(_, most)) in &order {
        let turn = left / n as f64;
        n -= 1;
        // Not below it by rounding alone (equal streams bound at one rate elsewhere).
        if most >= turn * (1.0 - 1e-9) || n == 0 {
            break;
        }
        under.insert(input);
        left -= most;
    }
    let turn = left / (inputs.len() - under.len()) as f64;
    (on.iter())
        .map(|x| {
            let part = if x.tlps > 0.0 {
                turn * x.tlps / inputs[&x.input].0 / total
            } else {
                1.0
            };
            (x.stream, (!under.contains(&x.input)).then_some(part))
        })
        .collect()
}
