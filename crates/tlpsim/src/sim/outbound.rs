//! A root complex's one outbound queue shared by all its root ports (a HyperTransport host
//! bridge's issue order): the egress arbitration of its root ports, kept with the host side
//! of the run (`HostSide::outbound`), not in the root complex, since the transmit path
//! consults it for every TLP made at a node, the root complex's own included while its
//! handler runs.

use std::collections::VecDeque;

use super::Simulator;
use crate::fabric::System;

/// A root complex's one outbound queue for all its root ports: posted writes in issue
/// order, and completions and requests in issue order, which may not pass an older posted
/// write.
#[derive(Debug, Default)]
pub(in crate::sim) struct Outbound {
    /// TLPs each root port holds beyond this queue.
    depth: u32,
    /// Issue order stamp of the last TLP queued.
    seq: u64,
    /// (stamp, channel, TLP) of waiting posted writes.
    posted: VecDeque<(u64, u32, u32)>,
    /// (stamp, channel, TLP) of waiting completions and non-posted requests.
    other: VecDeque<(u64, u32, u32)>,
}

impl Outbound {
    /// Per node of `sys`, the shared outbound queue of a root complex with one (no table at
    /// all when none has one).
    pub(in crate::sim) fn of_system(sys: &System) -> Vec<Option<Outbound>> {
        if sys.nodes.iter().all(|n| n.kind.shared_outbound().is_none()) {
            return Vec::new();
        }
        (sys.nodes.iter())
            .map(|n| {
                n.kind.shared_outbound().map(|depth| Outbound {
                    depth,
                    ..Outbound::default()
                })
            })
            .collect()
    }
}

impl Simulator<'_> {
    /// A root complex `tx` with a shared outbound queue takes TLP `id`, created for channel
    /// `c`, into that queue if it must wait there (the port is full, or older TLPs it may
    /// not pass wait); true if it did.
    #[inline]
    pub(in crate::sim) fn hold_in_outbound(
        &mut self,
        tx: usize,
        c: u32,
        id: u32,
        posted: bool,
    ) -> bool {
        let Some(Some(o)) = self.host.outbound.get_mut(tx) else {
            return false;
        };
        let full = self.chans[c as usize].arbiter.queued >= o.depth as usize;
        if full || !o.posted.is_empty() || (!posted && !o.other.is_empty()) {
            o.seq += 1;
            let fifo = if posted { &mut o.posted } else { &mut o.other };
            fifo.push_back((o.seq, c, id));
            return true;
        }
        false
    }

    /// The TLPs waiting in root complex `n`'s shared outbound queue (none without one), each
    /// with whether posted writes wait there too.
    pub(in crate::sim) fn outbound_waiting(&self, n: usize) -> Vec<(u32, bool)> {
        match self.host.outbound.get(n) {
            Some(Some(o)) => {
                let posted = !o.posted.is_empty();
                (o.posted.iter().chain(&o.other))
                    .map(|&(_, _, id)| (id, posted))
                    .collect()
            }
            Some(None) | None => Vec::new(),
        }
    }

    /// Moves TLPs from the heads of the shared outbound queue of channel `c`'s transmitting
    /// node (if it has one) into their root ports while the ports have room (a posted write
    /// first; a completion or read request only when no older posted write is still waiting).
    pub(in crate::sim) fn drain_outbound(&mut self, c: u32) {
        let tx = self.ends.rx_node[(c ^ 1) as usize] as usize;
        let shared = matches!(self.host.outbound.get(tx), Some(Some(_)));
        if self.host.draining || !shared {
            return;
        }
        self.host.draining = true;
        while let Some(Some(o)) = self.host.outbound.get_mut(tx) {
            let room = |ch: u32| self.chans[ch as usize].arbiter.queued < o.depth as usize;
            let next = match (o.posted.front(), o.other.front()) {
                (Some(&(_, ch, _)), _) if room(ch) => o.posted.pop_front(),
                (p, Some(&(seq, ch, _))) if p.is_none_or(|p| p.0 > seq) && room(ch) => {
                    o.other.pop_front()
                }
                _ => None,
            };
            let Some((_, ch, id)) = next else { break };
            // A TLP created while this one is sent joins the shared queue behind the rest
            // (this loop takes it in its turn).
            self.enqueue_tlp(ch, id);
        }
        self.host.draining = false;
    }
}
