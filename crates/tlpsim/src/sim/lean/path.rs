//! The lean kernel's path of one write: the writer fills its channel's ring, the
//! transmitter sends DLLPs and the ring's head, the receiver's data link layer takes it and
//! the root complex's memory counts it for its flow. Each step does what the general
//! engine's does (`flow::fill_writes`, `transmit`, `receive`, `node::root`,
//! `node::completer`) for this class, in the same order, scheduling the same events.

use super::*;

impl Simulator<'_> {
    /// Flow `f` queues writes while fewer than `WRITE_QUEUE_DEPTH` wait (`fill_writes`),
    /// waking the transmitter if `kick` (from a send, whose end wakes it the same way); a
    /// flow of both that began a transfer then issues reads.
    pub(super) fn lean_fill(&mut self, f: u32, kick: bool) {
        let now = self.now();
        let mut started_io = false;
        while self.work.flows[f as usize].write_queued < WRITE_QUEUE_DEPTH {
            let flow = &mut self.work.flows[f as usize];
            if flow.write_left == 0 {
                flow.write_left = flow.transfer_size;
                flow.write_addr = flow.next_address(&mut self.rng, flow.write_left);
                flow.ios += 1;
                started_io = true;
            }
            let addr = flow.write_addr;
            let size = tlp::request_piece(addr, flow.write_left, flow.tlp_payload as u32);
            flow.write_left -= size as u64;
            flow.write_addr += size as u64;
            // Behind the flow's other waiting writes (the channel may hold its MRds too).
            let waiting = flow.write_queued as usize;
            flow.write_queued += 1;
            flow.next_order += 1;
            let c = flow.out;
            self.audit.tlps_created += 1;
            self.audit.payload_created += size as u64;
            let max = flow.tlp_payload as u32;
            let full = tlp::full_pieces(flow.write_addr, flow.write_left, max);
            let l = &mut self.lean.chans[c as usize];
            l.full = full as u32;
            let ch = &mut self.chans[c as usize];
            l.ring[(l.head as usize + waiting) % RING] = code(size, (addr & 3) as u32);
            ch.arbiter.lean_join(now);
            if kick {
                self.lean_try_send(c);
            }
        }
        if started_io && self.work.flows[f as usize].reads {
            self.lean_issue_reads(f);
        }
    }

    /// Wakes channel `c`'s transmitter (`try_send`).
    #[inline(always)]
    pub(in crate::sim) fn lean_try_send(&mut self, c: u32) {
        let ch = &self.chans[c as usize];
        if ch.tx_event {
            return;
        }
        if ch.phy.wire.free_at() > self.now() {
            if ch.has_work() {
                self.lean_tx_free(c);
            }
            return;
        }
        self.lean_send_now(c);
    }

    /// Sends channel `c`'s DLLPs back to back, then one write (`send_now`).
    #[inline(never)]
    fn lean_send_now(&mut self, c: u32) {
        let now = self.now();
        while let Some(d) = self.chans[c as usize].phy.dllp_out.pop_front() {
            let ch = &mut self.chans[c as usize];
            let (_, end) = ch.phy.wire.send(now, DLLP_BYTES);
            ch.counters.dllps += 1;
            let last = ch.phy.dllp_out.is_empty();
            let at = end + ch.phy.prop;
            self.chans[(c ^ 1) as usize]
                .phy
                .dllps_arriving
                .push_back((d, false, last));
            if last {
                self.q.schedule_inline(at, Ev::DllpArrive(c ^ 1));
            }
        }
        match self.lean.chans[c as usize].kind {
            WRITE => self.lean_send_tlp::<false>(c),
            BOTH => self.lean_send_both::<false>(c),
            _ => self.lean_send_queued(c),
        }
        let ch = &self.chans[c as usize];
        if ch.phy.wire.free_at() > now && ch.has_work() {
            self.lean_tx_free(c);
        }
    }

    /// Puts channel `c`'s next write (a replay, or its ring's head if the credits and the
    /// replay buffer let it go) on the wire (`send_tlp` with one input, posted only); into
    /// a switch (`SW`), which forwards it, its birth noted for its flow.
    // Out of line: inlined beside the read path's call in `lean_send_now`, its in-flight
    // pushes were no longer inlined (`/tmp/link1_5ms.toml` 58.05 M -> 56.57 M instructions).
    #[inline(never)]
    pub(super) fn lean_send_tlp<const SW: bool>(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            self.lean_transmit::<SW>(c, e);
            return;
        }
        if ch.arbiter.queued == 0 {
            ch.note_blocked(Blocked::Empty, now);
            return;
        }
        let l = &mut self.lean.chans[c as usize];
        let word = l.ring[l.head as usize];
        let dc = data_credits(word);
        let bytes = l.overhead + (payload(word) + (word >> 16)).next_multiple_of(4);
        if let Err(ty) = ch.tx_credits.check(FcClass::Posted, dc) {
            ch.note_blocked(Blocked::Credits(ty), now);
            return;
        }
        if !ch.tx_dll.has_room(bytes) {
            ch.note_blocked(Blocked::ReplayBuffer, now);
            return;
        }
        self.lean_send_write::<SW, false>(c, word, bytes);
    }

    /// Puts one TLP (new or replayed) on the wire of `c` (`transmit` with no errors, into a
    /// switch that forwards it if `SW`); returns when its first byte left.
    #[inline(always)]
    pub(super) fn lean_transmit<const SW: bool>(&mut self, c: u32, e: ReplayEntry) -> SimTime {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        let (start, end) = ch.phy.wire.send(now, e.bytes);
        let prop = ch.phy.prop;
        if let Some(at) = ch.tx_dll.start_timer(now) {
            self.q.schedule(at, Ev::ReplayTimer(c));
        }
        let ch = &mut self.chans[c as usize];
        let expected = e.seq == ch.phy.predicted_seq;
        if expected {
            ch.phy.predicted_seq += 1;
        }
        if SW && expected {
            self.lean_schedule_forward(c, e.tlp, start, end);
        }
        self.lean_arrive(
            c,
            Arrival {
                seq: e.seq,
                tlp: e.tlp,
                bad: false,
                nullified: false,
                frees_wire: false,
                head: start + prop,
                tail: end + prop,
                forwarded: SW,
            },
        );
        start
    }

    /// Wakes channel `c`'s transmitter when its wire frees (`schedule_tx_free`: its own copy,
    /// so that the general engine's inlining stays as it was).
    #[inline(always)]
    fn lean_tx_free(&mut self, c: u32) {
        let ch = &mut self.chans[c as usize];
        if !ch.tx_event {
            ch.tx_event = true;
            let at = ch.phy.wire.free_at();
            self.q.schedule(at, Ev::TxFree(c));
        }
    }

    /// Sends `a` on its way to channel `c`'s receiver (`arrive`).
    #[inline(always)]
    fn lean_arrive(&mut self, c: u32, mut a: Arrival) {
        let ch = &mut self.chans[c as usize];
        a.frees_wire = !ch.tx_event && a.tail == ch.phy.wire.free_at();
        ch.tx_event |= a.frees_wire;
        ch.phy.arriving.push_back(a);
        self.q.schedule_inline(a.tail, Ev::TlpArrive(c));
    }

    /// A write's last byte reaches channel `c`'s receiver (`on_tlp`, `dll_receive`).
    #[inline(always)]
    pub(super) fn lean_on_tlp(&mut self, c: u32, a: Arrival) {
        use crate::pcie::dll::receive::Received;
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        match ch.rx_dll.receive(a.seq, false) {
            Received::Accepted => {
                if ch.rx_dll.start_timer() {
                    let at = (a.tail + ch.rx_dll.ack_interval).max(now);
                    self.q.schedule_inline(at, Ev::DllTimer(c));
                }
                match self.lean.chans[c as usize].kind {
                    WRITE => self.lean_written(c, a),
                    MRD => self.lean_read_arrived(c, a),
                    CPL => self.lean_completed(c, a),
                    BOTH => self.lean_both_arrived(c, a),
                    _ => self.lean_switch_arrived(c, a),
                }
            }
            Received::Nak(s) => self.lean_send_dllp(c, Dllp::Nak(s)),
            Received::Duplicate(s) => self.lean_send_dllp(c, Dllp::Ack(s)),
            Received::Missing => self.audit.sequence_violations += 1,
            Received::Dropped => {}
        }
    }

    /// Channel `c`'s transmitter takes DLLP `d` about its writes (`on_dllp`, its own copy
    /// so that the general engine's inlining stays as it was).
    #[inline(always)]
    pub(super) fn lean_on_dllp(&mut self, c: u32, d: Dllp, bad: bool) {
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
            Dllp::UpdateFc(class, h, dd) => ch.tx_credits.update(class, h, dd),
            // Only a corrupted TLP is Nak'd, and no wire of the class corrupts: were one
            // to come, the run would start again on the general engine.
            Dllp::Nak(_) => self.lean.gave_up = true,
        }
    }

    /// Sends a DLLP about channel `c`'s TLPs (`send_dllp`).
    #[cold]
    fn lean_send_dllp(&mut self, c: u32, d: Dllp) {
        self.queue_dllp(c, d);
        self.lean_try_send(c ^ 1);
    }

    /// Accepted write `a` on channel `c` enters the root complex's buffer and its memory
    /// at once (`tlp_receive`, `RootComplex::write`, `completer::written`): its credits
    /// free, its flow counts it (`write_arrived`), and it is delivered.
    #[inline(always)]
    pub(super) fn lean_written(&mut self, c: u32, a: Arrival) {
        let word = a.tlp;
        let born = a.head - self.chans[c as usize].phy.prop;
        let f = self.lean.chans[c as usize].flow;
        self.lean_deliver(c, f, word, born);
    }

    /// Write `word` of flow `f`, born at `born`, accepted on channel `c`, enters the root
    /// complex's buffer and its memory at once (`lean_written`'s work).
    #[inline(always)]
    pub(super) fn lean_deliver(&mut self, c: u32, f: u32, word: u32, born: SimTime) {
        let (dc, size) = (data_credits(word), payload(word));
        let ch = &mut self.chans[c as usize];
        // Into the buffer and, the memory having it at once, out again (`rx_release`).
        let (ok, finite) = ch.rx_credits.pass(FcClass::Posted, 1, dc);
        if !ok {
            self.audit.credit_violations += 1;
        }
        if finite && ch.rx_dll.start_timer() {
            let at = self.q.now() + ch.rx_dll.ack_interval;
            self.q.schedule(at, Ev::DllTimer(c));
        }
        let now = self.now();
        let measuring = self.window.measuring;
        let warmup = self.sys.warmup;
        let flow = &mut self.work.flows[f as usize];
        flow.expected_order += 1;
        flow.done += 1;
        if measuring {
            flow.bytes += size as u64;
            flow.latency.record_span(now - born);
        }
        if flow.write_taken == 0 {
            flow.write_issued = born;
        }
        flow.write_taken += size as u64;
        if flow.write_taken >= flow.transfer_size {
            flow.write_taken = 0;
            if flow.write_issued >= warmup {
                let ns = (now - flow.write_issued).as_ns_f64();
                flow.transfer_latency.record(ns);
            }
        }
        self.audit.tlps_delivered += 1;
        self.audit.payload_delivered += size as u64;
    }
}
