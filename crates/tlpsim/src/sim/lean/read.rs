//! The lean kernel's path of one read: the requester issues MRds while tags and transfer
//! slots are free, each a request slot in its upstream channel's queue; the root complex's
//! completer answers it after its memory latency with completions cut at RCB or MPS, code
//! words in the downstream channel's queue; each completion frees its credits at the
//! requester and counts for its request, the last frees the tag. Each step does what the
//! general engine's does (`flow::issue_reads`, `flow_left`, `node::root`'s `read`,
//! `completer::complete_read`, the `Ev::Enqueue` of its chain, `requester_received`,
//! `completion_by`) for this class, in the same order, scheduling the same events.

use super::*;
use crate::sim::node::AnyNode;

/// Bits of a completion's code word that hold its request slot.
const SLOT_BITS: u32 = 18;
/// The most request slots a completion's code word can name.
pub(super) const MAX_SLOTS: u64 = 1 << SLOT_BITS;

/// A completion's code word: its request slot, payload (1 to 4096) and DW lead.
#[inline(always)]
fn cpl_code(slot: u32, piece: u32, lead: u32) -> u32 {
    slot | (piece - 1) << SLOT_BITS | lead << 30
}

/// The request slot of a completion's code word.
#[inline(always)]
pub(super) fn cpl_slot(code: u32) -> u32 {
    code & (MAX_SLOTS as u32 - 1)
}

/// The payload of a completion's code word.
#[inline(always)]
pub(super) fn cpl_payload(code: u32) -> u32 {
    (code >> SLOT_BITS & 0xfff) + 1
}

/// The data credits of a completion's code word (whole DWs from the one holding its first
/// byte).
#[inline(always)]
pub(super) fn cpl_credits(code: u32) -> u32 {
    (cpl_payload(code) + (code >> 30)).div_ceil(16)
}

impl Simulator<'_> {
    /// The free tags of DMA endpoint `n`.
    #[inline(always)]
    fn lean_tags(&mut self, n: usize) -> &mut u32 {
        match &mut self.nodes[n] {
            AnyNode::Dma(d) => &mut d.free_tags,
            _ => unreachable!("the lean kernel's reads come from DMA endpoints"),
        }
    }

    /// Flow `f`'s requester issues reads (`issue_reads`): nothing while no tag is free and
    /// its wait for one is already noted.
    #[inline(never)]
    pub(super) fn lean_issue_reads(&mut self, f: u32) {
        let src = self.work.flows[f as usize].source as usize;
        let no_tag = *self.lean_tags(src) == 0;
        if !(no_tag && self.work.flows[f as usize].window_full.is_open()) {
            self.lean_issue_reads_now(f, src);
        }
    }

    /// [`Self::lean_issue_reads`] once it may have something to do (`issue_reads_now` with
    /// no engines, pace or storage): MRds while a tag and a transfer slot are free.
    fn lean_issue_reads_now(&mut self, f: u32, src: usize) {
        let mrrs = self.sys.pcie.mrrs;
        let now = self.q.now();
        loop {
            let mut first = false;
            let free_tags = *self.lean_tags(src);
            let flow = &mut self.work.flows[f as usize];
            if free_tags == 0 {
                flow.window_full.open(now);
                return;
            }
            if flow.current.is_none() {
                if flow.active >= flow.outstanding {
                    flow.window_full.open(now);
                    return;
                }
                flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
                let size = flow.transfer_size;
                let addr = flow.next_address(&mut self.rng, size);
                flow.ios += 1;
                flow.open_read_transfer(size, addr);
                first = true;
            }
            flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
            let (slot, left, addr) = flow.current.expect("set above");
            let len = tlp::request_piece(addr, left, mrrs) as u64;
            flow.current = (left > len).then_some((slot, left - len, addr + len));
            let out = flow.out;
            *self.lean_tags(src) -= 1;
            let r = self
                .work
                .reqs
                .place(Req::new(f, slot, len as u32, first, now));
            // An MRd has no payload: the audit counts the TLP alone.
            self.audit.tlps_created += 1;
            let addrs = &mut self.lean.req_addr;
            if addrs.len() <= r as usize {
                addrs.resize(r as usize + 1, 0);
            }
            addrs[r as usize] = addr as u32;
            let flow = &self.work.flows[f as usize];
            if flow.writes {
                // Its place among the writes it shares its channel with.
                let writes = &mut self.lean.req_writes;
                if writes.len() <= r as usize {
                    writes.resize(r as usize + 1, 0);
                }
                writes[r as usize] = flow.next_order;
            }
            self.lean.queues[out as usize].push_back(r);
            self.chans[out as usize].arbiter.lean_join(now);
            self.lean_try_send(out);
        }
    }

    /// Puts channel `c`'s next MRd or completion (its queue's head, if the credits and the
    /// replay buffer let it go) on the wire (`send_tlp` with one input of one class); a
    /// switch's channel sends by its own path.
    #[inline(never)]
    pub(super) fn lean_send_queued(&mut self, c: u32) {
        let now = self.now();
        let l = &self.lean.chans[c as usize];
        let (kind, overhead) = (l.kind, l.overhead);
        if kind >= super::switch::SW_IN {
            // A switch's channel: tested here, not in `lean_send_now`, whose one-link write
            // path got dearer with another arm (see `lean_send_switch`).
            return self.lean_send_switch(c, kind);
        }
        let ch = &mut self.chans[c as usize];
        if ch.tx_dll.is_replaying() {
            return self.lean_replay(c);
        }
        let Some(&word) = self.lean.queues[c as usize].front() else {
            ch.note_blocked(Blocked::Empty, now);
            return;
        };
        let Some(e) = self.lean_take_head(c, word, queued_cost(word, kind == MRD, overhead), now)
        else {
            return;
        };
        if kind != MRD {
            self.chans[c as usize].counters.payload_bytes += cpl_payload(word) as u64;
        }
        // One call: each inlined copy of the transmit path weighs on the write path's.
        let start = self.lean_transmit::<false>(c, e);
        if kind == MRD {
            self.lean_mrd_left(word, start);
        }
    }

    /// Resends channel `c`'s next TLP to replay (after a replay timer's expiry: without bit
    /// errors only an Ack held past three Ack intervals), before anything new, as `send_now`
    /// does; out of line, so that the read send's common path stays as it was.
    #[cold]
    #[inline(never)]
    fn lean_replay(&mut self, c: u32) {
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            self.lean_transmit::<false>(c, e);
        }
    }

    /// Channel `c`'s queue head `word` (its class, data credits and wire bytes) goes into
    /// the replay buffer if the credits and the replay buffer let it, else the channel notes
    /// why not: the step both read sends share, inlined into each.
    #[inline(always)]
    fn lean_take_head(
        &mut self,
        c: u32,
        word: u32,
        (class, dc, bytes): (FcClass, u32, u32),
        now: SimTime,
    ) -> Option<ReplayEntry> {
        let ch = &mut self.chans[c as usize];
        if let Err(ty) = ch.tx_credits.check(class, dc) {
            ch.note_blocked(Blocked::Credits(ty), now);
            return None;
        }
        if !ch.tx_dll.has_room(bytes) {
            ch.note_blocked(Blocked::ReplayBuffer, now);
            return None;
        }
        Some(self.lean_pop_head(c, word, (class, dc, bytes), now))
    }

    /// Channel `c`'s queue head `word`, which the credits and the replay buffer let go,
    /// leaves its queue into the replay buffer: the credits taken, the stalls ended.
    #[inline(always)]
    pub(super) fn lean_pop_head(
        &mut self,
        c: u32,
        word: u32,
        (class, dc, bytes): (FcClass, u32, u32),
        now: SimTime,
    ) -> ReplayEntry {
        self.lean.queues[c as usize].pop_front();
        let ch = &mut self.chans[c as usize];
        ch.arbiter.lean_leave(now);
        ch.end_stall(now);
        ch.end_replay_stall(now);
        if !ch.tx_credits.consume(class, dc) {
            self.audit.credit_violations += 1;
        }
        ch.counters.tlps += 1;
        ch.tx_dll.push(word, bytes)
    }

    /// Puts channel `c`'s next MRd (`kind` `SW_MRD`) or completion (`SW_CPL`), its queue's
    /// head, into a switch (which forwards it: a completion by the crossing toward its
    /// requester), or a completion out of one down to its requester (`SW_DOWN`), if the
    /// credits and the replay buffer let it go (`lean_send_queued`'s work).
    // Its own function beside `lean_send_queued`, sharing only the inlined steps
    // (`queued_cost`, `lean_take_head`): one function generic over the switch and inlined
    // there cost the one-link read path +2.1 % (its arrival push no longer inlined:
    // `/tmp/leanrd-read5.toml` 125.46 M against 122.86 M instructions).
    #[inline(never)]
    pub(super) fn lean_send_into(&mut self, c: u32, kind: u32, overhead: u32) {
        let (mrd, down) = (
            kind == super::switch::SW_MRD,
            kind == super::switch::SW_DOWN,
        );
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            if down {
                self.lean_transmit_down(c, e, None);
            } else {
                self.lean_transmit_into(c, e);
            }
            return;
        }
        let Some(&word) = self.lean.queues[c as usize].front() else {
            ch.note_blocked(Blocked::Empty, now);
            return;
        };
        let cost = queued_cost(word, mrd, overhead);
        let Some(e) = self.lean_take_head(c, word, cost, now) else {
            return;
        };
        if !mrd {
            self.chans[c as usize].counters.payload_bytes += cpl_payload(word) as u64;
        }
        if down {
            return self.lean_transmit_down(c, e, Some(cost.1));
        }
        if !mrd {
            self.lean_route_completion(c, word);
        }
        let start = self.lean_transmit_into(c, e);
        if mrd {
            self.lean_mrd_left(word, start);
        }
    }

    /// The MRd of request slot `r` left its requester, its first byte out at `start`: its
    /// latency (and its transfer's, if first) counts from then (`flow_left`).
    #[inline(always)]
    pub(super) fn lean_mrd_left(&mut self, r: u32, start: SimTime) {
        let req = &mut self.work.reqs[r as usize];
        req.issued = start;
        if req.first {
            let (f, t) = (req.flow as usize, req.transfer as usize);
            self.work.flows[f].transfer_issued[t] = start;
        }
    }

    /// Accepted MRd `a` (a request slot) on channel `c` reaches the root complex
    /// (`tlp_receive`, `RootComplex::read`, `complete_read`): its completions, cut at RCB or
    /// MPS, are made and queued once its memory latency has passed (one `Enqueue` event for
    /// them all), then its credit frees and it is delivered.
    #[inline(never)]
    pub(super) fn lean_read_arrived(&mut self, c: u32, a: Arrival) {
        let r = a.tlp;
        let rx = self.ends.rx_node[c as usize] as usize;
        let (latency, size) = match &self.nodes[rx] {
            AnyNode::Root(root) => root.lean_read(),
            _ => unreachable!("the lean kernel's reads go to a root complex"),
        };
        if !self.chans[c as usize]
            .rx_credits
            .take(FcClass::NonPosted, 1, 0)
        {
            self.audit.credit_violations += 1;
        }
        let ready = self.now() + latency.sample(&mut self.rng);
        let length = self.work.reqs[r as usize].length;
        let addr = self.lean.req_addr[r as usize] as u64;
        let rcb = self.sys.pcie.rcb.min(size);
        let mut offset = 0u64;
        while offset < length as u64 {
            let piece = tlp::completion_piece(addr + offset, length - offset as u32, size, rcb);
            self.audit.tlps_created += 1;
            offset += piece as u64;
        }
        self.audit.payload_created += length as u64;
        self.q.schedule(ready, Ev::Enqueue { ch: c ^ 1, tlp: r });
        self.rx_free(c, FcClass::NonPosted, 1, 0);
        self.audit.tlps_delivered += 1;
    }

    /// The completions of request `r` are ready: each joins channel `c`'s queue and wakes
    /// its transmitter (`Ev::Enqueue`'s chain, `push`).
    #[inline(never)]
    pub(super) fn lean_enqueue_completions(&mut self, c: u32, r: u32) {
        let rx = self.ends.rx_node[(c ^ 1) as usize] as usize;
        let size = match &self.nodes[rx] {
            AnyNode::Root(root) => root.lean_read().1,
            _ => unreachable!("the lean kernel's reads go to a root complex"),
        };
        let now = self.now();
        let length = self.work.reqs[r as usize].length;
        let addr = self.lean.req_addr[r as usize] as u64;
        let rcb = self.sys.pcie.rcb.min(size);
        let mut offset = 0u64;
        while offset < length as u64 {
            let at = addr + offset;
            let piece = tlp::completion_piece(at, length - offset as u32, size, rcb);
            offset += piece as u64;
            self.lean.queues[c as usize].push_back(cpl_code(r, piece, (at & 3) as u32));
            self.chans[c as usize].arbiter.lean_join(now);
            self.lean_try_send(c);
        }
    }

    /// Accepted completion `a` on channel `c` reaches its requester (`requester_received`,
    /// `completion_by`): its credits free, it counts for its request and flow; the last of
    /// a request frees its tag (and, the last of a transfer, the transfer's slot), and the
    /// requester issues what it can.
    #[inline(never)]
    pub(super) fn lean_completed(&mut self, c: u32, a: Arrival) {
        let word = a.tlp;
        let (dc, size) = (cpl_credits(word), cpl_payload(word));
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        let (ok, finite) = ch.rx_credits.pass(FcClass::Completion, 1, dc);
        if !ok {
            self.audit.credit_violations += 1;
        }
        if finite && ch.rx_dll.start_timer() {
            let at = now + ch.rx_dll.ack_interval;
            self.q.schedule(at, Ev::DllTimer(c));
        }
        let slot = cpl_slot(word);
        let r = self.work.reqs[slot as usize];
        let f = r.flow as usize;
        let measuring = self.window.measuring;
        let flow = &mut self.work.flows[f];
        flow.done += 1;
        if measuring {
            flow.bytes += size as u64;
            if !r.answered {
                flow.latency.record_span(a.head - r.issued);
            }
        }
        let req = &mut self.work.reqs[slot as usize];
        req.answered = true;
        req.next_offset += size as u64;
        req.remaining -= size.min(req.remaining);
        if req.remaining == 0 {
            self.work.reqs.release(slot);
            let src = self.work.flows[f].source as usize;
            *self.lean_tags(src) += 1;
            let t = r.transfer as usize;
            let flow = &mut self.work.flows[f];
            if flow.read_answered(t, r.length, self.sys.warmup, now) {
                flow.close_transfer(t);
            }
        }
        self.audit.tlps_delivered += 1;
        self.audit.payload_delivered += size as u64;
        self.lean_issue_reads(f as u32);
    }
}

/// The flow-control class, data credits and wire bytes of queued word `word` with `overhead`
/// bytes of framing and header: an MRd's if `mrd`, else a completion code word's.
#[inline(always)]
fn queued_cost(word: u32, mrd: bool, overhead: u32) -> (FcClass, u32, u32) {
    if mrd {
        (FcClass::NonPosted, 0, overhead)
    } else {
        let data = cpl_payload(word) + (word >> 30);
        (
            FcClass::Completion,
            cpl_credits(word),
            overhead + data.next_multiple_of(4),
        )
    }
}
