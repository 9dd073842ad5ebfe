//! The lean kernel's flows through one switch: a DMA endpoint's posted writes, read
//! requests or both go into a crossbar switch on their own link (channel kind `SW_IN`,
//! `SW_MRD` or `SW_BOTH`: its ring and queue as on one link), the switch forwards each by
//! a Forward event at its crossing time (cut-through from the first byte, else from the
//! last, plus propagation and the port-to-port latency), taking its ingress credits then,
//! and queues it in the general [`Arbiter`] of its upstream port (kind `SW_UP`) behind its
//! ingress port's input, posted or non-posted, so that the round robin, the weights, the
//! oldest-first stamps, the ordering rules and the queue accounting are the general
//! engine's own; the egress frees the ingress credits as the TLP leaves, and the root
//! complex takes it as on one link. A write there is a code word that also names its flow
//! (`tagged`), an MRd its request slot marked `MRD_WORD`; a flow's writes stay in order
//! end to end, so each one's birth (its first byte out of the endpoint, which its latency
//! counts from) waits in a FIFO per flow. The root's completions go down its channel into
//! the switch (kind `SW_CPL`, a queue as on one link), each forwarded at the crossing
//! toward its requester (its request slot names the flow) into the queue of the switch's
//! channel down to it (kind `SW_DOWN`: that egress carries one ingress port's completions
//! alone, so its arbiter's pick is the queue's order, its accounting `lean_join` and
//! `lean_leave`), whose send frees them in the switch and whose receiver is the
//! requester's, as on one link. Each step does what the general
//! engine's does (`transmit`'s `switch_forward_at` and `schedule_forward`, `Ev::Forward`,
//! `tlp_receive`, `node::switch::forward`, `push`, `send_tlp`, `rx_release`), in the same
//! order, scheduling the same events.

use super::both::MRD_WORD;
use super::*;
use crate::fabric::Core;

/// A channel that carries a flow's posted writes into a switch.
pub(super) const SW_IN: u32 = 4;
/// A switch's channel up to a root complex that carries the writes and MRds it forwards.
pub(super) const SW_UP: u32 = 5;
/// A channel that carries a flow's read requests into a switch.
pub(super) const SW_MRD: u32 = 6;
/// A channel that carries a flow's posted writes and read requests into a switch.
const SW_BOTH: u32 = 7;
/// A root complex's channel that carries its completions into a switch.
const SW_CPL: u32 = 8;
/// A switch's channel down to a requester that carries the completions it forwards.
pub(super) const SW_DOWN: u32 = 9;

/// Bits of a forwarded write's code word below its flow (payload 16, DW lead 2).
const FLOW_SHIFT: u32 = 18;
/// The most flows a forwarded write's code word can name (bit 31 left to `MRD_WORD`).
pub(super) const MAX_FLOWS: usize = 1 << (31 - FLOW_SHIFT);

/// How the switch at the end of a `SW_IN`, `SW_MRD` or `SW_BOTH` channel forwards its
/// TLPs, or (kept at a `SW_DOWN` channel) the completions toward its requester.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct SwitchIn {
    /// The switch's channel up to the root complex (at a `SW_DOWN` channel: the root
    /// complex's channel into the switch, whose buffer its completions free).
    up: u32,
    /// The switch's port the TLPs come in on (their input at the egress's arbiter).
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

    /// The switch's channel up to `target` for flow `f` whose endpoint's channel `out`
    /// goes into a switch the kernel forwards through straight below the target (and, for
    /// a reader, whose completions come back the same way); None for any other flow.
    pub(super) fn lean_switch_up(&self, f: usize, out: usize, target: usize) -> Option<u32> {
        let sw = self.ends.rx_node[out] as usize;
        if !(f < MAX_FLOWS && self.lean_switch_node(sw)) {
            return None;
        }
        self.route.crossing(sw)?;
        let up = self.route.hop(sw, out as u32, target);
        if up == NONE || self.ends.rx_node[up as usize] as usize != target {
            return None;
        }
        let source = self.work.flows[f].source as usize;
        let back =
            !self.work.flows[f].reads || self.route.hop(sw, up ^ 1, source) == out as u32 ^ 1;
        back.then_some(up)
    }

    /// Sets up the flows through switches: their channels' kinds, crossings and births.
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
            self.lean.sw[out] = self.lean_crossing(out as u32, up);
            let (writes, reads) = (self.work.flows[f].writes, self.work.flows[f].reads);
            self.lean.chans[out].kind = match (writes, reads) {
                (true, false) => SW_IN,
                (false, _) => SW_MRD,
                (true, true) => SW_BOTH,
            };
            self.lean.chans[up as usize].kind = SW_UP;
            if reads {
                // The completions: the root complex's channel into the switch, then the
                // switch's down to the requester (already of kind `CPL`: its overhead).
                let (into, down) = (up ^ 1, out as u32 ^ 1);
                let pcie = &self.sys.pcie;
                let over = tlp::tlp_bytes(TlpKind::CplD, pcie.addressing, 0, pcie.ecrc);
                self.lean.chans[into as usize] = LeanChannel {
                    flow: NONE,
                    kind: SW_CPL,
                    overhead: over + self.chans[into as usize].phy.framing,
                    ..LeanChannel::default()
                };
                self.lean.chans[down as usize].kind = SW_DOWN;
                self.lean.sw[down as usize] = SwitchIn {
                    up: into,
                    ..self.lean_crossing(into, down)
                };
            }
        }
    }

    /// How the switch at the end of channel `c` forwards its TLPs to egress channel `out`.
    fn lean_crossing(&self, c: u32, out: u32) -> SwitchIn {
        let sw = self.ends.rx_node[c as usize] as usize;
        let crossing = self.route.crossing(sw).expect("a switch");
        let port = self.ends.rx_port[c as usize];
        let (cut_through, lat) = crossing.hop(port, self.ends.tx_port[out as usize]);
        SwitchIn {
            up: out,
            port,
            cut_through,
            delay: self.chans[c as usize].phy.prop + lat,
        }
    }

    /// Sends on channel `c` of kind `kind`, a switch's: into it or out of it.
    // Reached from `lean_send_queued` (the other kinds' send): a dispatch in
    // `lean_send_now` made its one-link write path dearer (`/tmp/link1_5ms.toml` +1.35 %
    // over main in line, +0.75 % out of line; see docs/performance.md).
    #[inline(never)]
    pub(super) fn lean_send_switch(&mut self, c: u32, kind: u32) {
        // The write stream's first, each other a call: a body inlined here would cost
        // every call its saves (scale8w +0.5 % with a `match` of the kinds).
        if kind == SW_IN {
            return self.lean_send_tlp::<true>(c);
        }
        self.lean_send_switch_other(c, kind);
    }

    /// [`Self::lean_send_switch`] on a channel but a write stream's.
    #[inline(never)]
    fn lean_send_switch_other(&mut self, c: u32, kind: u32) {
        match kind {
            SW_UP => self.lean_switch_send(c),
            SW_BOTH => self.lean_send_both::<true>(c),
            _ => {
                let overhead = self.lean.chans[c as usize].overhead;
                self.lean_send_into(c, kind, overhead);
            }
        }
    }

    /// `lean_transmit::<true>` out of line, for the sends into a switch but a write
    /// stream's (each inlined copy of the transmit path weighs on the others': inlined, the
    /// one-link read path's arrival push was no longer inlined, +2 %).
    #[inline(never)]
    pub(super) fn lean_transmit_into(&mut self, c: u32, e: ReplayEntry) -> SimTime {
        self.lean_transmit::<true>(c, e)
    }

    /// Sends completion `e` on the switch's channel `c` down to its requester (out of line,
    /// as [`Self::lean_transmit_into`]); a new one (`dc`: its data credits) frees its room
    /// in the switch's buffer on the root complex's channel into it (`send_tlp`'s
    /// `rx_release`), a replay nothing.
    #[inline(never)]
    pub(super) fn lean_transmit_down(&mut self, c: u32, e: ReplayEntry, dc: Option<u32>) {
        self.lean_transmit::<false>(c, e);
        let Some(dc) = dc else { return };
        let ingress = self.lean.sw[c as usize].up;
        self.rx_free(ingress, FcClass::Completion, 1, dc);
    }

    /// The switch's channel down to the requester of completion `word`.
    #[inline(always)]
    fn lean_cpl_down(&self, word: u32) -> u32 {
        let f = self.work.reqs[read::cpl_slot(word) as usize].flow;
        self.work.flows[f as usize].out ^ 1
    }

    /// Completion `word` goes next on the root complex's channel `c` into the switch: its
    /// forward takes the crossing toward its requester.
    #[inline(always)]
    pub(super) fn lean_route_completion(&mut self, c: u32, word: u32) {
        let down = self.lean_cpl_down(word);
        self.lean.sw[c as usize] = self.lean.sw[down as usize];
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

    /// The switch at the end of channel `c` takes its oldest forwarded TLP into its
    /// buffer and queues it at its egress (`Ev::Forward`, `tlp_receive`, `forward`,
    /// `push`): a write or MRd at its upstream port, a completion at the port down to its
    /// requester.
    #[inline(never)]
    pub(super) fn lean_forward(&mut self, c: u32) {
        let Some((word, _)) = self.chans[c as usize].forwarding.pop_front() else {
            return;
        };
        if self.lean.chans[c as usize].kind != SW_IN {
            return self.lean_forward_other(c, word);
        }
        self.lean_forward_write(c, word);
    }

    /// [`Self::lean_forward`] of `word` on a channel of MRds, of both or of completions.
    #[inline(never)]
    fn lean_forward_other(&mut self, c: u32, word: u32) {
        let kind = self.lean.chans[c as usize].kind;
        if kind == SW_CPL {
            return self.lean_forward_completion(c, word);
        }
        if kind == SW_BOTH && word & MRD_WORD == 0 {
            return self.lean_forward_write(c, word);
        }
        if !self.chans[c as usize]
            .rx_credits
            .take(FcClass::NonPosted, 1, 0)
        {
            self.audit.credit_violations += 1;
        }
        let s = self.lean.sw[c as usize];
        let bytes = self.lean.chans[s.up as usize].overhead;
        let now = self.q.now();
        self.chans[s.up as usize].arbiter.enqueue(
            now,
            s.port as usize,
            FcClass::NonPosted,
            word | MRD_WORD,
            0,
            bytes,
        );
        self.lean_try_send(s.up);
    }

    /// The switch at the end of channel `c` takes write `word` into its buffer and queues it
    /// at its upstream port.
    #[inline(always)]
    fn lean_forward_write(&mut self, c: u32, word: u32) {
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

    /// The switch at the end of the root complex's channel `c` takes completion `word`, its
    /// oldest forwarded, into its buffer and queues it at the port down to its requester.
    #[inline(always)]
    fn lean_forward_completion(&mut self, c: u32, word: u32) {
        let dc = read::cpl_credits(word);
        if !self.chans[c as usize]
            .rx_credits
            .take(FcClass::Completion, 1, dc)
        {
            self.audit.credit_violations += 1;
        }
        // The switch's egress down to the requester carries its completions alone, from one
        // ingress port: its arbiter's pick is its queue's order (the kernel keeps the queue).
        let down = self.lean_cpl_down(word);
        let now = self.q.now();
        self.lean.queues[down as usize].push_back(word);
        self.chans[down as usize].arbiter.lean_join(now);
        self.lean_try_send(down);
    }

    /// Puts the switch's upstream channel `c`'s next TLP (a replay, or the arbiter's pick, a
    /// write or an MRd) on the wire, freeing its ingress credits (`send_tlp` of a switch's
    /// egress).
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
                // It leaves the switch: its ingress buffer space is free again.
                let f = if class == FcClass::Posted {
                    ch.counters.payload_bytes += payload(q.tlp) as u64;
                    flow_of(q.tlp)
                } else {
                    self.work.reqs[(q.tlp & !MRD_WORD) as usize].flow
                };
                let ingress = self.work.flows[f as usize].out;
                self.lean_transmit::<false>(c, e);
                self.rx_free(ingress, class, 1, q.data_credits);
            }
            Err(b) => ch.note_blocked(b, now),
        }
    }

    /// Accepted TLP `a` on channel `c`, which carries no one-link writes, MRds or
    /// completions: into a switch, its Forward event takes it on; out of one up to the root
    /// complex, a write counts for its flow, born when it left its endpoint (an MRd is
    /// answered as on one link); out of one down to a requester, a completion counts as on
    /// one link.
    #[inline(never)]
    pub(super) fn lean_switch_arrived(&mut self, c: u32, a: Arrival) {
        let kind = self.lean.chans[c as usize].kind;
        if kind == SW_UP && a.tlp & MRD_WORD == 0 {
            let f = flow_of(a.tlp);
            let born = self.lean.born[f as usize]
                .pop_front()
                .expect("a forwarded write was born");
            self.lean_deliver(c, f, untagged(a.tlp), born);
        } else if kind == SW_UP {
            let tlp = a.tlp & !MRD_WORD;
            self.lean_read_arrived(c, Arrival { tlp, ..a });
        } else if kind == SW_DOWN {
            self.lean_completed(c, a);
        }
    }
}
