//! The lean kernel's channel of both (`direction = "both"`): a flow's posted writes (its
//! ring, as on a channel of writes) and its read requests (request slots in its queue, as
//! on a channel of MRds) share the upstream channel, one arbiter input with two class
//! queues. Its transmitter picks between the two heads as the arbiter's `choose` does: the
//! MRd first if it is older than the posted head (which it is when every write its flow
//! made before it has left) and may go, else the write if it may go; a write passes a
//! blocked read, never the other way. The root complex takes each as on the channels of
//! one kind; the completions come back on a channel of completions.

use super::*;

/// The mark of an MRd's code word (a request slot, below 2^18) among the writes' (payload
/// and DW lead, below 2^18) on a channel of both.
pub(super) const MRD_WORD: u32 = 1 << 31;

impl Simulator<'_> {
    /// Puts channel `c`'s next TLP (a replay, the MRd at its queue's head if older than the
    /// posted head, or the write at its ring's head, whichever the credits and the replay
    /// buffer let go first) on the wire (`send_tlp` with one input of two classes); into a
    /// switch (`SW`), which forwards it.
    #[inline(never)]
    pub(super) fn lean_send_both<const SW: bool>(&mut self, c: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if let Some(e) = ch.tx_dll.next_replay() {
            ch.counters.replays += 1;
            self.lean_transmit::<false>(c, e);
            return;
        }
        if ch.arbiter.queued == 0 {
            ch.note_blocked(Blocked::Empty, now);
            return;
        }
        let l = &self.lean.chans[c as usize];
        let flow = &self.work.flows[l.flow as usize];
        let (writes, made) = (flow.write_queued, flow.next_order);
        let mut blocked = Blocked::Empty;
        if let Some(&r) = self.lean.queues[c as usize].front() {
            // Older than the posted head: every write made before it has left.
            if self.lean.req_writes[r as usize] <= made - writes as u64 {
                match ch.tx_credits.check(FcClass::NonPosted, 0) {
                    Ok(()) if ch.tx_dll.has_room(l.overhead) => {
                        return self.lean_send_mrd::<SW>(c, r)
                    }
                    Ok(()) => blocked = Blocked::ReplayBuffer,
                    Err(ty) => blocked = Blocked::Credits(ty),
                }
            }
        }
        if writes > 0 {
            let word = l.ring[l.head as usize];
            let dc = data_credits(word);
            let bytes = l.overhead + (payload(word) + (word >> 16)).next_multiple_of(4);
            match ch.tx_credits.check(FcClass::Posted, dc) {
                Ok(()) if ch.tx_dll.has_room(bytes) => {
                    return self.lean_send_write::<SW, SW>(c, word, bytes);
                }
                Ok(()) => blocked = Blocked::ReplayBuffer,
                Err(ty) if blocked == Blocked::Empty => blocked = Blocked::Credits(ty),
                Err(_) => {}
            }
        }
        ch.note_blocked(blocked, now);
    }

    /// Sends the MRd of request slot `r`, its queue's head, on channel `c` (`send_tlp`'s
    /// pick of a non-posted request; into a switch if `SW`).
    fn lean_send_mrd<const SW: bool>(&mut self, c: u32, r: u32) {
        let now = self.now();
        let bytes = self.lean.chans[c as usize].overhead;
        let e = self.lean_pop_head(c, r | MRD_WORD, (FcClass::NonPosted, 0, bytes), now);
        let start = if SW {
            self.lean_transmit_into(c, e)
        } else {
            self.lean_transmit::<false>(c, e)
        };
        self.lean_mrd_left(r, start);
    }

    /// Sends `word`, the write at the head of channel `c`'s ring (`bytes` on the wire), as
    /// `lean_send_tlp` does: a whole-payload successor takes its place at once, else its
    /// writer fills (and, beginning a transfer, issues reads); into a switch (`SW`), its
    /// birth noted for its flow (by `lean_transmit_into`, out of line, if `CALL`).
    #[inline(always)]
    pub(super) fn lean_send_write<const SW: bool, const CALL: bool>(
        &mut self,
        c: u32,
        word: u32,
        bytes: u32,
    ) {
        let now = self.now();
        let dc = data_credits(word);
        let ch = &mut self.chans[c as usize];
        let l = &mut self.lean.chans[c as usize];
        l.head = (l.head + 1) % RING as u32;
        let f = l.flow;
        // The writer's next write is one of its whole payload: it takes this one's place at
        // once (`lean_fill`'s one write after a send, cut without `request_piece`).
        let refill = l.full > 0;
        if refill {
            l.full -= 1;
            let writes = self.work.flows[f as usize].write_queued as usize;
            l.ring[(l.head as usize + writes - 1) % RING] = l.full_word;
            ch.arbiter.lean_swap();
            let max = payload(l.full_word);
            let flow = &mut self.work.flows[f as usize];
            flow.write_left -= max as u64;
            flow.write_addr += max as u64;
            flow.next_order += 1;
            self.audit.tlps_created += 1;
            self.audit.payload_created += max as u64;
        } else {
            ch.arbiter.lean_leave(now);
        }
        ch.end_stall(now);
        ch.end_replay_stall(now);
        if !ch.tx_credits.consume(FcClass::Posted, dc) {
            self.audit.credit_violations += 1;
        }
        let e = ch.tx_dll.push(word, bytes);
        ch.counters.tlps += 1;
        ch.counters.payload_bytes += payload(word) as u64;
        let start = if CALL {
            self.lean_transmit_into(c, e)
        } else {
            self.lean_transmit::<SW>(c, e)
        };
        if SW {
            self.lean.born[f as usize].push_back(start);
        }
        if !refill {
            // It left its writer: room for the next. The wire is busy now: `lean_send_now`'s
            // end wakes the transmitter when it frees, as the writer's own `try_send` would
            // have, with nothing scheduled in between.
            self.work.flows[f as usize].write_queued -= 1;
            self.lean_fill(f, false);
        }
    }

    /// Accepted TLP `a` on channel of both `c` reaches the root complex: a write as on a
    /// channel of writes, an MRd as on a channel of MRds.
    #[inline(never)]
    pub(super) fn lean_both_arrived(&mut self, c: u32, a: Arrival) {
        if a.tlp & MRD_WORD != 0 {
            let tlp = a.tlp & !MRD_WORD;
            self.lean_read_arrived(c, Arrival { tlp, ..a });
        } else {
            self.lean_written(c, a);
        }
    }
}
