//! The lean kernel's writes through one switch: a DMA endpoint's posted writes go into a
//! crossbar switch on their own link (channel kind `SW_IN`, its ring as on one link), the
//! switch forwards each by a Forward event at its crossing time (cut-through from the first
//! byte, else from the last, plus propagation and the port-to-port latency), taking its
//! ingress credits then, and queues it in the general [`Arbiter`] of its upstream port
//! (kind `SW_UP`) behind its ingress port's input, so that the round robin, the weights,
//! the oldest-first stamps and the queue accounting are the general engine's own; the
//! egress frees the ingress credits as the write leaves, and the root complex takes it as
//! on one link. A write there is a code word that also names its flow (`tagged`); a flow's
//! writes stay in order end to end, so each one's birth (its first byte out of the
//! endpoint, which its latency counts from) waits in a FIFO per flow. Each step does what
//! the general engine's does (`transmit`'s `switch_forward_at` and `schedule_forward`,
//! `Ev::Forward`, `tlp_receive`, `node::switch::forward`, `push`, `send_tlp`,
//! `rx_release`), in the same order, scheduling the same events.

use super::*;
use crate::fabric::Core;

/// A channel that carries a flow's posted writes into a switch.
pub(super) const SW_IN: u32 = 4;
/// A switch's channel up to a root complex that carries the writes it forwards.
pub(super) const SW_UP: u32 = 5;

/// Bits of a forwarded write's code word below its flow (payload 16, DW lead 2).
const FLOW_SHIFT: u32 = 18;
/// The most flows a forwarded write's code word can name.
pub(super) const MAX_FLOWS: usize = 1 << (32 - FLOW_SHIFT);

/// How the switch at the end of a `SW_IN` channel forwards its writes.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct SwitchIn {
    /// The switch's channel up to the root complex.
    up: u32,
    /// The switch's port this channel comes in on (its input at `up`'s arbiter).
    port: u32,
    /// Cut-through (from the first byte), else store-and-forward (from the last).
    cut_through: bool,
    /// Propagation and port-to-port latency to add.
    delay: SimTime,
}

/// Write `word` (payload and DW lead) of flow `f`, as the switch queues it.
#[inline(always)]
fn tagged(word: u32, f: u32) -> u32 {
    word | f << FLOW_SHIFT
}

/// The flow of a forwarded write's code word.
#[inline(always)]
fn flow_of(word: u32) -> u32 {
    word >> FLOW_SHIFT
}

/// A forwarded write's code word without its flow.
#[inline(always)]
fn untagged(word: u32) -> u32 {
    word & ((1 << FLOW_SHIFT) - 1)
}

impl Simulator<'_> {
    /// Whether node `n` is a switch the kernel forwards through (a crossbar).
    pub(super) fn lean_switch_node(&self, n: usize) -> bool {
        matches!(
            self.sys.nodes[n].kind,
            NodeKind::Switch {
                core: Core::Crossbar,
                ..
            }
        )
    }

    /// The switch's channel up to `target` for flow `f`, writing only, whose endpoint's
    /// channel `out` goes into a switch the kernel forwards through straight below the
    /// target; None for any other flow.
    pub(super) fn lean_switch_up(&self, f: usize, out: usize, target: usize) -> Option<u32> {
        let sw = self.ends.rx_node[out] as usize;
        let flow = &self.work.flows[f];
        if !(flow.writes && !flow.reads && f < MAX_FLOWS && self.lean_switch_node(sw)) {
            return None;
        }
        self.route.crossing(sw)?;
        let up = self.route.hop(sw, out as u32, target);
        (up != NONE && self.ends.rx_node[up as usize] as usize == target).then_some(up)
    }

    /// Sets up the writes through switches: their channels' kinds, crossings and births.
    pub(super) fn lean_switch_start(&mut self) {
        self.lean.sw = vec![SwitchIn::default(); self.chans.len()];
        self.lean.born = vec![Default::default(); self.work.flows.len()];
        for f in 0..self.work.flows.len() {
            let out = self.work.flows[f].out as usize;
            let target = self.sys.workloads[f].target;
            if self.ends.rx_node[out] as usize == target {
                continue;
            }
            let up = self.lean_switch_up(f, out, target).expect("eligible");
            let sw = self.ends.rx_node[out] as usize;
            let crossing = self.route.crossing(sw).expect("a switch");
            let (cut_through, lat) =
                crossing.hop(self.ends.rx_port[out], self.ends.tx_port[up as usize]);
            self.lean.sw[out] = SwitchIn {
                up,
                port: self.ends.rx_port[out],
                cut_through,
                delay: self.chans[out].phy.prop + lat,
            };
            self.lean.chans[out].kind = SW_IN;
            self.lean.chans[up as usize].kind = SW_UP;
        }
    }

    /// Sends on channel `c` of kind `kind`, a switch's: into it or out of it.
    // Reached from `lean_send_queued` (the other kinds' send): a dispatch in
    // `lean_send_now` made its one-link write path dearer (`/tmp/link1_5ms.toml` +1.35 %
    // over main in line, +0.75 % out of line; see docs/performance.md).
    #[inline(never)]
    pub(super) fn lean_send_switch(&mut self, c: u32, kind: u32) {
        if kind == SW_IN {
            self.lean_send_tlp::<true>(c);
        } else {
            self.lean_switch_send(c);
        }
    }

    /// The switch at the end of channel `c` forwards write `word`, which went on the wire
    /// from `start` to `end`, at its crossing time, after those it forwards before it
    /// (`switch_forward_at`, `schedule_forward`).
    #[inline(always)]
    pub(super) fn lean_schedule_forward(
        &mut self,
        c: u32,
        word: u32,
        start: SimTime,
        end: SimTime,
    ) {
        let s = self.lean.sw[c as usize];
        let ch = &mut self.chans[c as usize];
        let at = if s.cut_through { start } else { end } + s.delay;
        let at = at.max(ch.last_forward);
        ch.last_forward = at;
        ch.forwarding.push_back((word, start + ch.phy.prop));
        self.q.schedule(at, Ev::Forward(c));
    }

    /// The switch at the end of channel `c` takes its oldest forwarded write into its
    /// buffer and queues it at its upstream port (`Ev::Forward`, `tlp_receive`,
    /// `forward`, `push`).
    #[inline(never)]
    pub(super) fn lean_forward(&mut self, c: u32) {
        let Some((word, _)) = self.chans[c as usize].forwarding.pop_front() else {
            return;
        };
        let dc = data_credits(word);
        if !self.chans[c as usize]
            .rx_credits
            .take(FcClass::Posted, 1, dc)
        {
            self.audit.credit_violations += 1;
        }
        let s = self.lean.sw[c as usize];
        let f = self.lean.chans[c as usize].flow;
        let bytes = self.lean.chans[s.up as usize].overhead
            + (payload(word) + (word >> 16)).next_multiple_of(4);
        let now = self.q.now();
        self.chans[s.up as usize].arbiter.enqueue(
            now,
            s.port as usize,
            FcClass::Posted,
            tagged(word, f),
            dc,
            bytes,
        );
        self.lean_try_send(s.up);
    }

    /// Puts the switch's upstream channel `c`'s next write (a replay, or the arbiter's
    /// pick) on the wire, freeing its ingress credits (`send_tlp` of a switch's egress).
    #[inline(never)]
    fn lean_switch_send(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            self.lean_transmit::<false>(c, e);
            return;
        }
        match ch.pick(now) {
            Ok((q, class)) => {
                ch.end_stall(now);
                ch.end_replay_stall(now);
                if !ch.tx_credits.consume(class, q.data_credits) {
                    self.audit.credit_violations += 1;
                }
                let e = ch.tx_dll.push(q.tlp, q.bytes);
                ch.counters.tlps += 1;
                ch.counters.payload_bytes += payload(q.tlp) as u64;
                self.lean_transmit::<false>(c, e);
                // It leaves the switch: its ingress buffer space is free again.
                let ingress = self.work.flows[flow_of(q.tlp) as usize].out;
                let ch = &mut self.chans[ingress as usize];
                if ch.rx_credits.free(class, 1, q.data_credits) && ch.rx_dll.start_timer() {
                    let at = now + ch.rx_dll.ack_interval;
                    self.q.schedule(at, Ev::DllTimer(ingress));
                }
            }
            Err(b) => ch.note_blocked(b, now),
        }
    }

    /// Accepted write `a` on channel `c`, which carries no one-link writes, MRds or
    /// completions: into a switch, its Forward event takes it on; out of one, the root
    /// complex takes it for its flow, born when it left its endpoint.
    #[inline(never)]
    pub(super) fn lean_switch_arrived(&mut self, c: u32, a: Arrival) {
        if self.lean.chans[c as usize].kind == SW_UP {
            let f = flow_of(a.tlp);
            let born = self.lean.born[f as usize]
                .pop_front()
                .expect("a forwarded write was born");
            self.lean_deliver(c, f, untagged(a.tlp), born);
        }
    }
}
