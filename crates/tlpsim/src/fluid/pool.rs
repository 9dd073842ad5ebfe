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
                    }),
                }
            }
        }
        // A reader alone in a buffer has it to itself: its own credit limit says so.
        out.retain(|p| p.users.len() > 1);
        out
    }
}

/// Adds each pool's buffer to the solve as two resources after the `first` others: its
/// header and its data credits, which each reader's completions hold at its header and
/// data credit-seconds per byte of its rate, and which readers share at the weight they
/// have on the pool's link (its transmitter gives returned credits to one TLP per input in
/// turn). Returns the resources' capacities; a resource index `first + 2k` or
/// `first + 2k + 1` is pool `k`'s. A linear constraint of its own, not a lowered link
/// capacity, so in the max-min solve the link's other traffic (posted writes, other
/// classes) is not held back and the link's busy time stays its wire's. (A FIFO before
/// the link drains at the lowered capacity, [`cap_pools`], whatever it holds.)
pub(super) fn resources(pools: &[Pool], first: usize, demands: &mut [Demand]) -> Vec<f64> {
    let mut cap = Vec::with_capacity(2 * pools.len());
    for (k, p) in pools.iter().enumerate() {
        cap.extend([p.credits.0, p.credits.1]);
        for &(s, h, d) in &p.users {
            let d_s = &mut demands[s];
            let Some(&(_, _, w)) = d_s.uses.iter().find(|u| u.0 == p.chan) else {
                continue;
            };
            d_s.uses.push((first + 2 * k, h, w));
            d_s.uses.push((first + 2 * k + 1, d, w));
        }
    }
    cap
}

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

/// The max-min solve of `demands` over `cap`, whose last `2 * pools.len()` resources are
/// the `pools`' buffers (see [`resources`]), with a flow the buffer bounds named as bound
/// by its link direction: the simulator's link waits for the credits, and its verdict
/// names the link.
pub(super) fn solve(pools: &[Pool], cap: &[f64], demands: &[Demand]) -> (Vec<f64>, Vec<Bound>) {
    debug_assert!(
        cap.len() >= 2 * pools.len(),
        "the pools' resources are in `cap`"
    );
    let (rates, mut bounds) = super::solve::solve(cap, demands);
    let first = cap.len() - 2 * pools.len();
    for b in &mut bounds {
        if let Bound::Resource(r) = *b {
            if r >= first {
                *b = Bound::Resource(pools[(r - first) / 2].chan);
            }
        }
    }
    (rates, bounds)
}
