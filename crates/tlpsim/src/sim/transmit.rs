//! The transmit side of the simulator: egress queues into the wire, the arbiter's pick,
//! DLLPs out, the replay buffer and timer, and TLPs put on their way to the receiver (an
//! arrival at their last byte, a switch's forward at its port-to-port latency).

use super::*;
use crate::pcie::dll::transmit::ReplayTimer;

impl Simulator<'_> {
    /// Queues TLP `id` on channel `c` (input from its ingress port) and kicks the wire; a
    /// root complex with a shared outbound queue takes its own TLPs in issue order there.
    pub(in crate::sim) fn push(&mut self, c: u32, id: u32) {
        let t = &self.tlps[id as usize];
        if t.ingress == NONE {
            let posted = t.class() == FcClass::Posted;
            let tx = self.ends.rx_node[(c ^ 1) as usize] as usize;
            if self.hold_in_outbound(tx, c, id, posted) {
                return;
            }
        }
        self.enqueue_tlp(c, id);
    }

    /// Queues TLP `id` on channel `c` as [`Simulator::push`] does, at `at` when that is later
    /// than now (a data path or media still holds it).
    pub(in crate::sim) fn push_at(&mut self, at: SimTime, c: u32, id: u32) {
        if at > self.now() {
            self.q.schedule(at, Ev::Enqueue { ch: c, tlp: id });
        } else {
            self.push(c, id);
        }
    }

    /// Puts TLP `id` into channel `c`'s egress queues (past any shared outbound queue) and
    /// wakes the transmitter: behind the port it came in on, or the first if it starts here.
    #[inline(always)]
    pub(in crate::sim) fn enqueue_tlp(&mut self, c: u32, id: u32) {
        let t = &self.tlps[id as usize];
        let input = if t.ingress < socket::SOCKET {
            self.ends.rx_port[t.ingress as usize] as usize
        } else {
            self.ends.own_input[c as usize] as usize
        };
        self.enqueue_from(c, id, input);
    }

    /// Puts TLP `id` into channel `c`'s egress queues as if it came in on port `input` of
    /// the transmitting node, and wakes the transmitter.
    #[inline(always)]
    pub(in crate::sim) fn enqueue_from(&mut self, c: u32, id: u32, input: usize) {
        let t = &self.tlps[id as usize];
        let pcie = &self.sys.pcie;
        // Its data in whole DWs from the one holding its first byte.
        let data = t.payload + t.dw_lead as u32;
        let bytes = tlp::tlp_bytes(t.kind, pcie.addressing, data, pcie.ecrc);
        let (class, data) = (t.class(), t.data_credits());
        let ch = &mut self.chans[c as usize];
        let bytes = bytes + ch.phy.framing;
        ch.arbiter
            .enqueue(self.q.now(), input, class, id, data, bytes);
        self.try_send(c);
    }

    /// Wakes channel `c`'s transmitter when its wire frees (once: one pending TxFree).
    fn schedule_tx_free(&mut self, c: u32) {
        let ch = &mut self.chans[c as usize];
        if !ch.tx_event {
            ch.tx_event = true;
            let at = ch.phy.wire.free_at();
            self.q.schedule(at, Ev::TxFree(c));
        }
    }

    /// Sends what channel `c` has: pending DLLPs back to back, then one TLP (a replay or
    /// the arbiter's pick), all starting when the wire is free; a TxFree event follows only
    /// while more waits.
    #[inline(always)]
    pub(in crate::sim) fn try_send(&mut self, c: u32) {
        let ch = &self.chans[c as usize];
        // Most calls find a wake-up pending or the wire busy: answered here, inline.
        if ch.tx_event {
            return;
        }
        if ch.phy.wire.free_at() > self.now() {
            if ch.has_work() {
                self.schedule_tx_free(c);
            }
            return;
        }
        self.send_now(c);
    }

    /// [`Self::try_send`] once the wire is free and no wake-up is pending.
    #[inline(never)]
    fn send_now(&mut self, c: u32) {
        let now = self.now();
        // Back-to-back DLLPs reach the other end as one burst (one event at the last one's
        // arrival: the earlier ones are at most a few DLLP times early).
        while let Some(d) = self.chans[c as usize].phy.dllp_out.pop_front() {
            let ch = &mut self.chans[c as usize];
            let (start, end) = ch.phy.wire.send(now, DLLP_BYTES);
            if let Some(tr) = &mut self.trace {
                tr.record(c, start, end, Packet::Dllp(d));
            }
            ch.counters.dllps += 1;
            let bad = ch.phy.corrupts(DLLP_BYTES);
            let last = ch.phy.dllp_out.is_empty();
            let at = end + ch.phy.prop;
            self.chans[(c ^ 1) as usize]
                .phy
                .dllps_arriving
                .push_back((d, bad, last));
            if last {
                self.q.schedule(at, Ev::DllpArrive(c ^ 1));
            }
        }
        self.send_tlp(c);
        let ch = &self.chans[c as usize];
        if ch.phy.wire.free_at() > now && ch.has_work() {
            self.schedule_tx_free(c);
        }
    }

    /// Puts channel `c`'s next TLP (a replay, or the arbiter's pick) on the wire.
    fn send_tlp(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            self.transmit(c, e, true);
            return;
        }
        let mut picked = ch.pick(now);
        // A nullified copy the switch already knows is bad is dropped: pick again.
        if self.errors {
            while let Ok((q, _)) = picked {
                if !self.tlps[q.tlp as usize].nullified {
                    break;
                }
                if self.send_nullified(c, q) {
                    let ch = &mut self.chans[c as usize];
                    ch.end_stall(now);
                    ch.end_replay_stall(now);
                    return;
                }
                picked = self.chans[c as usize].pick(now);
            }
        }
        let ch = &mut self.chans[c as usize];
        match picked {
            Ok((q, class)) => {
                ch.end_stall(now);
                ch.end_replay_stall(now);
                if !ch.tx_credits.consume(class, q.data_credits) {
                    self.audit.credit_violations += 1;
                }
                let e = ch.tx_dll.push(q.tlp, q.bytes);
                let t = &self.tlps[q.tlp as usize];
                let (ingress, own) = (t.ingress, t.owner.node == t.src);
                ch.counters.tlps += 1;
                ch.counters.payload_bytes += t.payload as u64;
                let start = self.transmit(c, e, false);
                if ingress != NONE {
                    // Leaves a switch: its ingress buffer space is free again.
                    self.rx_release(ingress, class, 1, q.data_credits);
                    return;
                }
                self.tlps[q.tlp as usize].born = start;
                if own {
                    // A request or posted write leaves its owner (not a completion).
                    AnyNode::tlp_left(self, q.tlp, start);
                }
                // A root port has room again: its shared outbound queue may move on.
                self.drain_outbound(c);
            }
            Err(b) => ch.note_blocked(b, now),
        }
    }

    /// Puts one TLP (new or replayed) on the wire of `c`; returns when its first byte left.
    #[inline(always)]
    fn transmit(&mut self, c: u32, e: ReplayEntry, replay: bool) -> SimTime {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        let (start, end) = ch.phy.wire.send(now, e.bytes);
        if self.trace.is_some() {
            self.trace_tlp(c, e, (start, end), replay);
        }
        let ch = &mut self.chans[c as usize];
        let prop = ch.phy.prop;
        if let Some(at) = ch.tx_dll.start_timer(now) {
            self.q.schedule(at, Ev::ReplayTimer(c));
        }
        let bad = ch.phy.corrupts(e.bytes);
        let tail = end + prop;
        let dst = self.tlps[e.tlp as usize].dst as usize;
        let forward_at = self.switch_forward_at(c, dst, start, end);
        let ch = &mut self.chans[c as usize];
        // The receiver's data link layer takes TLPs in the order they were sent: whether it
        // will accept this one is known now.
        let expected = e.seq == ch.phy.predicted_seq;
        let accepted = !bad && expected;
        if accepted {
            ch.phy.predicted_seq += 1;
        }
        let forwarded = forward_at.is_some();
        if let (Some(f), true) = (forward_at, accepted) {
            self.schedule_forward(c, e.tlp, start + prop, f);
        } else if let Some(f) = forward_at.filter(|&f| bad && expected && f < tail) {
            // Cut-through: the switch begins sending the TLP on before its bad LCRC arrives,
            // and can only nullify what it sent (spec: a switch must not truncate a TLP).
            let ghost = Tlp {
                nullified: true,
                live: false,
                born: tail,
                next: NONE,
                ..self.tlps[e.tlp as usize]
            };
            let id = self.slot_for(ghost);
            self.schedule_forward(c, id, start + prop, f);
        }
        self.arrive(
            c,
            Arrival {
                seq: e.seq,
                tlp: e.tlp,
                bad,
                nullified: false,
                frees_wire: false,
                head: start + prop,
                tail,
                forwarded,
            },
        );
        start
    }

    /// Sends `a` on its way to channel `c`'s receiver: its arrival event is due at its tail
    /// (the data link layer takes a TLP at its last byte; tails follow the wire's order, so
    /// arrival events come in the order of `arriving`).
    #[inline]
    fn arrive(&mut self, c: u32, mut a: Arrival) {
        let ch = &mut self.chans[c as usize];
        debug_assert!(ch.phy.arriving.back().is_none_or(|b| b.tail <= a.tail));
        // Arriving just as the wire frees (no propagation delay, no SKP due): one event does
        // both.
        a.frees_wire = !ch.tx_event && a.tail == ch.phy.wire.free_at();
        ch.tx_event |= a.frees_wire;
        ch.phy.arriving.push_back(a);
        self.q.schedule(a.tail, Ev::TlpArrive(c));
    }

    /// When the switch at the receiving end of channel `c` starts a TLP for `dst` that went
    /// on the wire from `start` to `end` on its egress (from its first byte when cut-through,
    /// its last when store-and-forward, plus propagation and the port-to-port latency); None
    /// where no switch forwards it.
    #[inline(always)]
    fn switch_forward_at(
        &self,
        c: u32,
        dst: usize,
        start: SimTime,
        end: SimTime,
    ) -> Option<SimTime> {
        let rx = self.ends.rx_node[c as usize] as usize;
        let crossing = self.route.crossing(rx)?;
        let out = self.route.hop(rx, c, dst);
        if out == NONE {
            return None;
        }
        let prop = self.chans[c as usize].phy.prop;
        let (ct, lat) = crossing.hop(
            self.ends.rx_port[c as usize],
            self.ends.tx_port[out as usize],
        );
        Some(if ct { start } else { end } + prop + lat)
    }

    /// The switch at the receiving end of `c` forwards TLP `id` (first byte in at `head`) at
    /// `at`, in the order of the TLPs it forwards before it.
    #[inline]
    fn schedule_forward(&mut self, c: u32, id: u32, head: SimTime, at: SimTime) {
        let ch = &mut self.chans[c as usize];
        let at = at.max(ch.last_forward);
        ch.last_forward = at;
        ch.forwarding.push_back((id, head));
        self.q.schedule(at, Ev::Forward(c));
    }

    /// A switch's egress `c` has picked nullified copy `q`: sends it (EDB, inverted LCRC; on
    /// again through a cut-through switch beyond) and returns true, or drops it and returns
    /// false if the switch already knows the original was bad when the wire frees.
    #[cold]
    #[inline(never)]
    fn send_nullified(&mut self, c: u32, q: Queued) -> bool {
        let now = self.now();
        let id = q.tlp;
        if now >= self.tlps[id as usize].born {
            self.tlps.release(id);
            return false;
        }
        let ch = &mut self.chans[c as usize];
        let (start, end) = ch.phy.wire.send(now, q.bytes);
        ch.counters.nullified += 1;
        let tail = end + ch.phy.prop;
        if let Some(tr) = &mut self.trace {
            let t = &self.tlps[id as usize];
            let bytes = t.payload.max(t.length);
            tr.record(
                c,
                start,
                end,
                Packet::Nullified {
                    kind: t.kind,
                    bytes,
                },
            );
        }
        let dst = self.tlps[id as usize].dst as usize;
        let onward = self
            .switch_forward_at(c, dst, start, end)
            .filter(|&f| f < tail);
        if let Some(f) = onward {
            self.tlps[id as usize].born = tail;
            self.schedule_forward(c, id, start + self.chans[c as usize].phy.prop, f);
        }
        let head = start + self.chans[c as usize].phy.prop;
        self.arrive(
            c,
            Arrival {
                seq: 0,
                tlp: id,
                bad: true,
                nullified: true,
                frees_wire: false,
                head,
                tail,
                forwarded: onward.is_some(),
            },
        );
        true
    }

    /// Notes TLP `e` on channel `c`'s wire from `span.0` to `span.1` in the trace (kept out
    /// of line: most runs are not traced).
    #[cold]
    #[inline(never)]
    fn trace_tlp(&mut self, c: u32, e: ReplayEntry, span: (SimTime, SimTime), replay: bool) {
        // A replay of a TLP the receiver already took: its slab entry may hold another TLP
        // by now, so only its size is known.
        let packet = if replay && e.seq < self.chans[c as usize].rx_dll.expected() {
            Packet::Duplicate {
                seq: e.seq,
                wire_bytes: e.bytes,
            }
        } else {
            let t = &self.tlps[e.tlp as usize];
            Packet::Tlp {
                kind: t.kind,
                bytes: t.payload.max(t.length),
                seq: e.seq,
                replay,
                flow: AnyNode::tlp_workload(self, t),
                addr: t.addr,
            }
        };
        if let Some(tr) = &mut self.trace {
            tr.record(c, span.0, span.1, packet);
        }
    }

    /// Sends a DLLP about channel `c`'s TLPs (it travels on the other direction's wire).
    pub(in crate::sim) fn send_dllp(&mut self, c: u32, d: Dllp) {
        self.queue_dllp(c, d);
        self.try_send(c ^ 1);
    }

    /// Queues a DLLP about channel `c`'s TLPs on the other direction's wire without kicking
    /// its transmitter (DLLPs due at one instant go out back to back, ahead of TLPs: the
    /// spec's recommended priority of scheduled transmissions, an implementation note of the
    /// Data Link Layer chapter, puts Ack and UpdateFC DLLPs before new TLPs).
    #[inline]
    pub(in crate::sim) fn queue_dllp(&mut self, c: u32, d: Dllp) {
        let w = c ^ 1;
        if self.chans[w as usize].phy.flit {
            // Flit mode: the DLLP rides in the DLP bytes of flits already on the wire.
            let at = self.now() + self.chans[w as usize].phy.prop;
            self.chans[w as usize].counters.dllps += 1;
            self.chans[c as usize]
                .phy
                .dllps_arriving
                .push_back((d, false, true));
            self.q.schedule(at, Ev::DllpArrive(c));
        } else {
            self.chans[w as usize].phy.dllp_out.push_back(d);
        }
    }

    /// Immediate Acks: drops the Ack (if `ack`) and the UpdateFCs of `classes` that still
    /// wait for the wire carrying channel `c`'s DLLPs, before newer ones are queued (Acks and
    /// UpdateFCs are cumulative; a Nak always goes). On the spec's timers at most one of
    /// each falls due per interval.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn drop_stale_dllps(&mut self, c: u32, ack: bool, classes: u8) {
        self.chans[(c ^ 1) as usize]
            .phy
            .dllp_out
            .retain(|d| match d {
                Dllp::Ack(_) => !ack,
                Dllp::UpdateFc(class, ..) => classes & (1 << *class as u8) == 0,
                Dllp::Nak(_) => true,
            });
    }

    /// Queues an UpdateFC for each class set in `classes` (bit k: class k), without kicking
    /// the transmitter that carries them.
    pub(in crate::sim) fn queue_update_fcs(&mut self, c: u32, classes: u8) {
        for (k, class) in CLASSES.into_iter().enumerate() {
            if classes & (1 << k) != 0 {
                let d = self.chans[c as usize].rx_credits.update_fc(class);
                self.queue_dllp(c, d);
            }
        }
    }

    /// Channel `c`'s transmitter takes DLLP `d` about its TLPs: an Ack or Nak frees the
    /// replay buffer up to its sequence number (a Nak then replays the rest), an UpdateFC
    /// raises a credit limit; a corrupted one is dropped.
    pub(in crate::sim) fn on_dllp(&mut self, c: u32, d: Dllp, bad: bool) {
        let ch = &mut self.chans[c as usize];
        if bad {
            ch.counters.bad_dllps += 1;
            return;
        }
        match d {
            Dllp::Ack(seq) => {
                if let Some(at) = ch.tx_dll.on_ack(seq, self.q.now()) {
                    self.q.schedule(at, Ev::ReplayTimer(c));
                }
            }
            Dllp::Nak(seq) => {
                ch.counters.naks += 1;
                if let Some(at) = ch.tx_dll.on_nak(seq, self.q.now()) {
                    self.q.schedule(at, Ev::ReplayTimer(c));
                }
                if ch.tx_dll.take_retrain() {
                    self.retrain(c);
                }
            }
            Dllp::UpdateFc(class, h, dd) => ch.tx_credits.update(class, h, dd),
        }
    }

    /// Wakes channel `c`'s transmitter on the engine running: the lean kernel's send path
    /// (`LEAN`) or the general one's.
    #[inline(always)]
    pub(in crate::sim) fn wake<const LEAN: bool>(&mut self, c: u32) {
        if LEAN {
            self.lean_try_send(c);
        } else {
            self.try_send(c);
        }
    }

    /// The UpdateFC refresh of receiver `c`: an UpdateFC for each finite class, sent back on
    /// the reverse channel (on the lean path if `LEAN`), and the next refresh scheduled.
    /// Spec §2.6.1.2: UpdateFCs at least every 30 us, which recovers lost ones.
    pub(in crate::sim) fn on_fc_refresh<const LEAN: bool>(&mut self, c: u32) {
        let finite = self.chans[c as usize].rx_credits.finite_classes();
        self.queue_update_fcs(c, finite);
        self.wake::<LEAN>(c ^ 1);
        self.q.schedule(self.now() + FC_REFRESH, Ev::FcRefresh(c));
    }

    /// The replay timer of `c` fires: reschedules itself to a later deadline, or replays
    /// every unacknowledged TLP if the deadline passed (sending on the lean path if `LEAN`).
    pub(in crate::sim) fn on_replay_timer<const LEAN: bool>(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        match ch.tx_dll.on_timer(now) {
            ReplayTimer::Idle => {}
            ReplayTimer::Pending(d) => self.q.schedule(d, Ev::ReplayTimer(c)),
            ReplayTimer::Expired => {
                ch.counters.timeouts += 1;
                if ch.tx_dll.take_retrain() {
                    self.retrain(c);
                }
                self.wake::<LEAN>(c);
            }
        }
    }

    /// The Ack/UpdateFC timer of `c`'s receiver fires: sends the Ack and UpdateFCs owed
    /// (on the lean path if `LEAN`), or stops while none is.
    #[inline(always)]
    pub(in crate::sim) fn on_dll_timer<const LEAN: bool>(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        let ack = ch.rx_dll.take_ack();
        let dirty = ch.rx_credits.take_dirty();
        if ack.is_none() && dirty == 0 {
            ch.rx_dll.stop_timer();
        } else {
            // Immediate Acks (a zero interval): the timer fires again at once and stops
            // unless more became owed in this instant.
            let next = now + ch.rx_dll.ack_interval;
            self.q.schedule(next, Ev::DllTimer(c));
            if ch.rx_dll.ack_interval == SimTime::ZERO {
                self.drop_stale_dllps(c, ack.is_some(), dirty);
            }
            if let Some(seq) = ack {
                self.queue_dllp(c, Dllp::Ack(seq));
            }
            self.queue_update_fcs(c, dirty);
            self.wake::<LEAN>(c ^ 1);
        }
    }

    /// Channel `c`'s REPLAY_NUM rolled over: its data link layer directs the physical layer
    /// to retrain the link. Both directions' wires carry nothing but ordered sets for the
    /// link's Recovery time (what is already on them still arrives), and both replay timers
    /// are held until it ends; the replay goes on after it.
    #[cold]
    #[inline(never)]
    pub(in crate::sim) fn retrain(&mut self, c: u32) {
        let until = self.now() + self.sys.links[(c / 2) as usize].recovery;
        self.chans[c as usize].counters.retrains += 1;
        for d in [c & !1, c | 1] {
            let ch = &mut self.chans[d as usize];
            ch.phy.wire.hold_until(until);
            // A pending wake-up finds the wire held and waits for its end.
            if ch.tx_dll.deadline().is_some() {
                if let Some(at) = ch.tx_dll.restart_timer(until) {
                    self.q.schedule(at, Ev::ReplayTimer(d));
                }
            }
        }
    }
}
