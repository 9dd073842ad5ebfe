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
                let tlps = st.mix.tlps.get(&c).copied().unwrap_or(0.0);
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

/// Lowers each pool's link direction's capacity `cap` (wire bytes per second) to what its
/// buffer lets through at the mix of `rates`: the completions' wire bytes scaled by the
/// buffer over the credits they hold, beside the rest of the link's load.
pub(super) fn cap_pools(pools: &[Pool], streams: &[Stream], rates: &[f64], cap: &mut [f64]) {
    for p in pools {
        let c = p.chan;
        let (mut headers, mut units, mut wire) = (0.0, 0.0, 0.0);
        for &(s, h, d) in &p.users {
            headers += rates[s] * h;
            units += rates[s] * d;
            wire += rates[s] * streams[s].mix.uses.get(&c).copied().unwrap_or(0.0);
        }
        let f = (p.credits.0 / headers).min(p.credits.1 / units);
        if f.is_finite() {
            let load: f64 = (streams.iter().zip(rates))
                .map(|(st, r)| r * st.mix.uses.get(&c).copied().unwrap_or(0.0))
                .sum();
            cap[c] = cap[c].min(load - wire * (1.0 - f));
        }
    }
}
