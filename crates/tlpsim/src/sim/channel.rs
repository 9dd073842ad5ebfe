//! One direction of a link as the simulator sees it: the transmitter's egress queues and
//! arbiter, its credit counters, its data link layer (sequence numbers, replay buffer,
//! replay timer), the wire, and the receiver's side (next expected sequence number, Ack and
//! UpdateFC timers, credits allocated).
//!
//! Channel `2 × link` carries TLPs downstream, `2 × link + 1` upstream; DLLPs about a
//! channel's TLPs travel on the other channel of the same link.

use std::collections::VecDeque;

use crate::engine::{OpenSpan, SimTime, Table};
use crate::fabric::Credits;
use crate::pcie::wire::Wire;

/// Traffic class of the ordering and credit rules: posted, non-posted, completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FcClass {
    /// Posted requests (MWr): header PH, data PD.
    Posted = 0,
    /// Non-posted requests (MRd): NPH, NPD.
    NonPosted = 1,
    /// Completions (CplD): CplH, CplD.
    Completion = 2,
}

/// The classes in queue order.
pub const CLASSES: [FcClass; 3] = [FcClass::Posted, FcClass::NonPosted, FcClass::Completion];

/// A DLLP and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dllp {
    /// Everything up to and including this sequence number arrived.
    Ack(u64),
    /// The TLP after this sequence number arrived corrupted: replay from there.
    Nak(u64),
    /// Cumulative credits allocated for a class: (headers, data units).
    UpdateFc(FcClass, u64, u64),
}

/// A TLP waiting in an egress queue.
#[derive(Debug, Clone, Copy)]
pub struct Queued {
    /// Slab index of the TLP.
    pub tlp: u32,
    /// Data credits it needs (16-byte units).
    pub data_credits: u32,
    /// Wire bytes on this channel.
    pub bytes: u32,
    /// Arrival order in its input, for the ordering rules.
    stamp: u64,
}

/// One ingress port's TLPs waiting for this egress: posted, non-posted, completion queues.
#[derive(Debug, Default)]
struct Input {
    queues: [VecDeque<Queued>; 3],
    weight: u32,
}

impl Input {
    /// True when no TLP waits in any of its queues.
    fn is_empty(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }
}

/// A sent TLP held until acknowledged.
#[derive(Debug, Clone, Copy)]
pub struct ReplayEntry {
    /// Sequence number.
    pub seq: u64,
    /// Slab index (only dereferenced if the receiver has not taken this sequence number).
    pub tlp: u32,
    /// Wire bytes.
    pub bytes: u32,
}

/// A TLP on its way to the receiver (arrival events of one channel come in this order).
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// Sequence number.
    pub seq: u64,
    /// Slab index.
    pub tlp: u32,
    /// Corrupted on the wire.
    pub bad: bool,
    /// A cut-through switch's nullified copy of a corrupted TLP (EDB, inverted LCRC): the
    /// receiver drops it silently.
    pub nullified: bool,
    /// Its arrival is also the moment the transmitter's wire frees (the arrival event then
    /// wakes the transmitter: no TxFree of its own). Set when it is sent on its way.
    pub frees_wire: bool,
    /// When its first byte reaches the receiver.
    pub head: SimTime,
    /// When its last byte reaches the receiver.
    pub tail: SimTime,
    /// A switch forwards it by a Forward event of its own (the data link layer takes it
    /// when its last byte arrives, the switch starts it on its egress at its own time).
    pub forwarded: bool,
}

/// Why the arbiter found nothing to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Blocked {
    /// Nothing queued.
    Empty,
    /// The oldest eligible TLP lacks credits of this type index (see `fabric::CreditType`).
    Credits(usize),
    /// The replay buffer is full.
    ReplayBuffer,
}

/// Counters of one channel (whole run; the simulator subtracts a warmup snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ChannelCounters {
    /// New TLPs sent.
    pub tlps: u64,
    /// TLP payload bytes sent (new TLPs).
    pub payload_bytes: u64,
    /// DLLPs sent.
    pub dllps: u64,
    /// TLPs sent again from the replay buffer.
    pub replays: u64,
    /// Replay timer expiries.
    pub timeouts: u64,
    /// Naks received by the transmitter.
    pub naks: u64,
    /// TLPs the receiver found corrupted.
    pub bad_tlps: u64,
    /// DLLPs lost to errors.
    pub bad_dllps: u64,
    /// Ticks the transmitter had TLPs but no credits for the next one.
    pub credit_stall_ticks: u64,
    /// The same ticks by the credit type it waited for (PH, PD, NPH, NPD, CplH, CplD: the
    /// type lacking when the stall began).
    pub credit_stall_by_type: [u64; 6],
    /// Ticks the transmitter had a TLP the credits allowed but no replay buffer room.
    pub replay_stall_ticks: u64,
    /// TLPs a cut-through switch sent nullified (it had begun them before their bad LCRC
    /// arrived).
    pub nullified: u64,
    /// TLPs waiting in the egress queues, integrated over time (TLP-ticks; brought up to
    /// date by [`Channel::account_queue`]).
    pub queue_area: u128,
    /// Wire ticks busy (TLPs, DLLPs, SKP).
    pub busy_ticks: u64,
}

/// One direction of a link.
#[derive(Debug)]
pub struct Channel {
    /// The wire.
    pub wire: Wire,
    /// Flit mode (DLLPs ride in the flit's DLP bytes, no per-TLP framing).
    pub flit: bool,
    /// Propagation delay.
    pub prop: SimTime,
    /// Probability that one byte on this wire is corrupted (from the BER).
    pub byte_error: f64,
    /// Ack / UpdateFC timer interval.
    pub ack_interval: SimTime,
    /// Replay timer limit.
    pub replay_timeout: SimTime,
    /// Framing bytes per TLP.
    pub framing: u32,

    // Transmitter.
    inputs: Table<Input>,
    /// The arbiter sends the oldest ready TLP of all inputs (else round-robin or weighted).
    pub oldest_first: bool,
    current: usize,
    left: u32,
    next_stamp: u64,
    /// TLPs waiting in every input.
    pub queued: usize,
    /// Sum of the times (ticks) TLPs joined the egress queues, and of the times they left:
    /// the queue's time integral up to `t` is `left + queued × t - joined`.
    queue_joined: u128,
    queue_left: u128,
    /// Most TLPs waiting at once since measuring started.
    pub queue_max: usize,
    /// DLLPs waiting to go (non-flit).
    pub dllp_out: VecDeque<Dllp>,
    /// A TxFree event, or an arrival that frees the wire (`Arrival::frees_wire`), is pending.
    pub tx_event: bool,
    /// Next sequence number to assign.
    pub next_seq: u64,
    /// Sent, not yet acknowledged.
    pub replay: VecDeque<ReplayEntry>,
    /// Bytes in `replay`.
    pub replay_bytes: u32,
    /// Capacity of the replay buffer.
    pub replay_capacity: u32,
    /// Index into `replay` of the next TLP to resend, while replaying.
    pub replay_next: Option<usize>,
    /// When the replay timer expires, if running.
    pub replay_deadline: Option<SimTime>,
    /// A ReplayTimer event is pending.
    pub replay_event: bool,
    /// Credit limit per type (cumulative, from InitFC and UpdateFC); `u64::MAX` for a type
    /// the receiver advertised as infinite.
    pub credit_limit: [u64; 6],
    /// Credits consumed per type (cumulative).
    pub credit_consumed: [u64; 6],
    /// The transmitter's stall on credits, while it lasts.
    pub stall: OpenSpan,
    /// The credit type it lacked when that stall began.
    pub stall_type: usize,
    /// The transmitter's wait for replay buffer room, while it lasts.
    pub replay_stall: OpenSpan,
    /// What blocked it last.
    pub blocked: Blocked,
    /// The sequence number the receiver will expect once every TLP now on the wire is
    /// taken: a TLP is accepted if it arrives intact and carries it (the receiver's data
    /// link layer sees TLPs in the order they were sent, so this is known when one is sent).
    pub rx_predicted: u64,
    /// TLPs a switch has accepted and will forward, each with when its first byte
    /// arrived, oldest first (Forward events come in this order).
    pub forwarding: VecDeque<(u32, SimTime)>,
    /// Latest Forward event time scheduled.
    pub last_forward: SimTime,
    /// TLPs on the wire toward the receiver, oldest first.
    pub arriving: VecDeque<Arrival>,
    /// DLLPs about this channel's TLPs on their way back to the transmitter, oldest first:
    /// (DLLP, corrupted, last of a back-to-back burst that arrives as one event).
    pub dllps_arriving: VecDeque<(Dllp, bool, bool)>,

    // Receiver.
    /// Next sequence number expected.
    pub rx_expected: u64,
    /// A Nak was sent and no good TLP has arrived since.
    pub rx_nak_sent: bool,
    /// TLPs received and not yet acknowledged.
    pub rx_unacked: bool,
    /// The receiver's Ack/UpdateFC timer runs.
    pub dll_timer: bool,
    /// Credits allocated per type (cumulative: advertised + freed).
    pub rx_allocated: [u64; 6],
    /// Credits in use in the receive buffer per type.
    pub rx_used: [u64; 6],
    /// Advertised size of the receive buffer per type (`None` infinite).
    pub rx_advertised: [Option<u32>; 6],
    /// Classes with freed credits not yet reported.
    pub fc_dirty: u8,

    /// Counters.
    pub counters: ChannelCounters,
}

impl Channel {
    /// A channel whose transmitter arbitrates among `weights.len()` inputs and whose receiver
    /// advertises `credits`.
    pub fn new(wire: Wire, flit: bool, weights: &[u32], credits: Credits) -> Self {
        let inputs = weights
            .iter()
            .map(|&w| Input {
                weight: w.max(1),
                ..Input::default()
            })
            .collect::<Table<_>>();
        let left = inputs[0].weight;
        let adv = credits.0;
        Channel {
            wire,
            flit,
            prop: SimTime::ZERO,
            byte_error: 0.0,
            ack_interval: SimTime::ZERO,
            replay_timeout: SimTime::ZERO,
            framing: if flit {
                0
            } else {
                crate::pcie::dll::TLP_FRAMING_BYTES
            },
            inputs,
            oldest_first: false,
            current: 0,
            left,
            next_stamp: 0,
            queued: 0,
            queue_joined: 0,
            queue_left: 0,
            queue_max: 0,
            dllp_out: VecDeque::new(),
            tx_event: false,
            next_seq: 1,
            replay: VecDeque::new(),
            replay_bytes: 0,
            replay_capacity: u32::MAX,
            replay_next: None,
            replay_deadline: None,
            replay_event: false,
            credit_limit: adv.map(|c| c.map_or(u64::MAX, u64::from)),
            credit_consumed: [0; 6],
            stall: OpenSpan::default(),
            stall_type: 0,
            replay_stall: OpenSpan::default(),
            blocked: Blocked::Empty,
            rx_predicted: 1,
            forwarding: VecDeque::new(),
            last_forward: SimTime::ZERO,
            arriving: VecDeque::new(),
            dllps_arriving: VecDeque::new(),
            rx_expected: 1,
            rx_nak_sent: false,
            rx_unacked: false,
            dll_timer: false,
            rx_allocated: adv.map(|c| c.unwrap_or(0) as u64),
            rx_used: [0; 6],
            rx_advertised: adv,
            fc_dirty: 0,
            counters: ChannelCounters::default(),
        }
    }

    /// Brings `counters.queue_area` up to `now`: each TLP counts from when it joined to when
    /// it left (or `now`, if it still waits).
    pub fn account_queue(&mut self, now: SimTime) {
        self.counters.queue_area =
            self.queue_left + self.queued as u128 * now.ticks() as u128 - self.queue_joined;
    }

    /// Queues a TLP from `input` in `class` at `now`.
    pub fn enqueue(
        &mut self,
        now: SimTime,
        input: usize,
        class: FcClass,
        tlp: u32,
        data_credits: u32,
        bytes: u32,
    ) {
        self.queue_joined += now.ticks() as u128;
        let stamp = self.next_stamp;
        self.next_stamp += 1;
        self.inputs[input].queues[class as usize].push_back(Queued {
            tlp,
            data_credits,
            bytes,
            stamp,
        });
        self.queued += 1;
        self.queue_max = self.queue_max.max(self.queued);
    }

    /// Ok if a TLP of `class` needing `data` data credits may be sent now, else the type
    /// index (see `fabric::CreditType`) that lacks credits.
    pub fn has_credits(&self, class: FcClass, data: u32) -> Result<(), usize> {
        let h = class as usize * 2;
        // Cumulative counters: `consumed + need <= limit` (no subtraction to underflow; an
        // infinite type's limit is u64::MAX, which no count reaches).
        if self.credit_consumed[h] >= self.credit_limit[h] {
            Err(h)
        } else if data > 0 && self.credit_consumed[h + 1] + data as u64 > self.credit_limit[h + 1] {
            Err(h + 1)
        } else {
            Ok(())
        }
    }

    /// Chooses the next TLP to send (round-robin, weighted or oldest first among inputs;
    /// within an input the oldest TLP the ordering rules let go: nothing passes an older
    /// posted request, posted requests pass blocked non-posted requests and completions).
    /// Takes it out of its queue and returns it with its class, or says why nothing can go.
    pub fn pick(&mut self, now: SimTime) -> Result<(Queued, FcClass), Blocked> {
        if self.queued == 0 {
            return Err(Blocked::Empty);
        }
        if self.oldest_first {
            return self.pick_oldest(now);
        }
        let n = self.inputs.len();
        let mut blocked = Blocked::Empty;
        // The input after `i`, round the ring.
        let after = |i: usize| if i + 1 == n { 0 } else { i + 1 };
        let mut idx = self.current;
        for _ in 0..n {
            if self.inputs[idx].is_empty() {
                idx = after(idx);
                continue;
            }
            if let Some(c) = self.choose(idx, &mut blocked) {
                let entry = self.take(idx, c, now);
                // Round-robin or weighted turns only matter among several inputs.
                if n > 1 {
                    if idx != self.current {
                        self.current = idx;
                        self.left = self.inputs[idx].weight;
                    }
                    self.left -= 1;
                    if self.left == 0 {
                        self.current = after(idx);
                        self.left = self.inputs[self.current].weight;
                    }
                }
                return Ok((entry, CLASSES[c]));
            }
            idx = after(idx);
        }
        Err(blocked)
    }

    /// [`Self::pick`] for an egress that sends the oldest ready TLP of all its inputs: each
    /// input offers the TLP its ordering rules and credits let go, and the one that joined
    /// this egress first wins.
    #[inline(never)]
    fn pick_oldest(&mut self, now: SimTime) -> Result<(Queued, FcClass), Blocked> {
        let mut blocked = Blocked::Empty;
        let mut best: Option<(u64, usize, usize)> = None;
        for idx in 0..self.inputs.len() {
            if self.inputs[idx].is_empty() {
                continue;
            }
            if let Some(c) = self.choose(idx, &mut blocked) {
                let stamp = self.inputs[idx].queues[c]
                    .front()
                    .expect("head exists")
                    .stamp;
                if best.is_none_or(|(s, ..)| stamp < s) {
                    best = Some((stamp, idx, c));
                }
            }
        }
        match best {
            Some((_, idx, c)) => Ok((self.take(idx, c, now), CLASSES[c])),
            None => Err(blocked),
        }
    }

    /// Takes the head of queue `c` of input `idx` out at `now`.
    #[inline(always)]
    fn take(&mut self, idx: usize, c: usize, now: SimTime) -> Queued {
        let entry = self.inputs[idx].queues[c].pop_front().expect("head exists");
        self.queue_left += now.ticks() as u128;
        self.queued -= 1;
        entry
    }

    /// The queue (class index) of input `idx` whose head goes next, if any may: candidates
    /// oldest first, a non-posted request or completion only if it is older than the posted
    /// head (nothing passes an older posted request), then the posted head. Notes in
    /// `blocked` why a candidate could not go.
    #[inline]
    fn choose(&self, idx: usize, blocked: &mut Blocked) -> Option<usize> {
        let [p, np, cpl] = &self.inputs[idx].queues;
        let posted = p.front();
        let (np, cpl) = (np.front(), cpl.front());
        if np.is_some() || cpl.is_some() {
            let posted_stamp = posted.map_or(u64::MAX, |q| q.stamp);
            let stamp = |q: Option<&Queued>| q.map_or(u64::MAX, |q| q.stamp);
            let ((c1, h1), (c2, h2)) = if stamp(np) < stamp(cpl) {
                ((1, np), (2, cpl))
            } else {
                ((2, cpl), (1, np))
            };
            // The older of the two first; the later one only if the older could not go,
            // and neither unless older than the posted head.
            if let Some(h) = h1.filter(|h| h.stamp < posted_stamp) {
                if self.may_send(c1, h, blocked) {
                    return Some(c1);
                }
                if let Some(h) = h2.filter(|h| h.stamp < posted_stamp) {
                    if self.may_send(c2, h, blocked) {
                        return Some(c2);
                    }
                }
            }
        }
        match posted {
            Some(h) if self.may_send(0, h, blocked) => Some(0),
            _ => None,
        }
    }

    /// Whether the head `h` of queue `c` has the credits and the replay buffer room to go;
    /// if not, notes why in `blocked` (a full replay buffer outranks a lack of credits).
    #[inline]
    fn may_send(&self, c: usize, h: &Queued, blocked: &mut Blocked) -> bool {
        match self.has_credits(CLASSES[c], h.data_credits) {
            Ok(()) => {
                if self.replay_bytes as u64 + h.bytes as u64 > self.replay_capacity as u64 {
                    *blocked = Blocked::ReplayBuffer;
                    false
                } else {
                    true
                }
            }
            Err(ty) => {
                if *blocked == Blocked::Empty {
                    *blocked = Blocked::Credits(ty);
                }
                false
            }
        }
    }

    /// Ends a credit stall at `now`, adding its time to the counters; true if one was running.
    pub fn end_stall(&mut self, now: SimTime) -> bool {
        match self.stall.close(now) {
            Some(ticks) => {
                self.counters.credit_stall_ticks += ticks;
                self.counters.credit_stall_by_type[self.stall_type] += ticks;
                true
            }
            None => false,
        }
    }

    /// Ends a wait for replay buffer room at `now`, adding its time to the counters; true
    /// if one was running.
    pub fn end_replay_stall(&mut self, now: SimTime) -> bool {
        match self.replay_stall.close(now) {
            Some(ticks) => {
                self.counters.replay_stall_ticks += ticks;
                true
            }
            None => false,
        }
    }

    /// Notes why the arbiter found nothing to send at `now`, starting or ending the stall
    /// timers: a credit stall runs while TLPs wait for credits, a replay stall while one
    /// waits for replay buffer room.
    pub fn note_blocked(&mut self, b: Blocked, now: SimTime) {
        self.blocked = b;
        match b {
            Blocked::Credits(ty) => {
                self.end_replay_stall(now);
                if !self.stall.is_open() {
                    self.stall.open(now);
                    self.stall_type = ty;
                }
            }
            Blocked::ReplayBuffer => {
                self.end_stall(now);
                self.replay_stall.open(now);
            }
            Blocked::Empty => {
                self.end_stall(now);
                self.end_replay_stall(now);
            }
        }
    }

    /// Consumes the credits of a TLP being sent for the first time; false if a finite
    /// counter would go negative (consumed beyond the limit), which the audit reports.
    pub fn consume(&mut self, class: FcClass, data: u32) -> bool {
        let h = class as usize * 2;
        self.credit_consumed[h] += 1;
        self.credit_consumed[h + 1] += data as u64;
        let within = |ty: usize| self.credit_consumed[ty] <= self.credit_limit[ty];
        within(h) && within(h + 1)
    }

    /// True when the credits the blocked transmitter lacks can never come: its receiver
    /// holds nothing of that type, has reported every credit it allocated, and no TLP or
    /// DLLP is on its way between them (a credit supply below one TLP, for one).
    pub fn starved_for_good(&self) -> bool {
        let Blocked::Credits(ty) = self.blocked else {
            return false;
        };
        self.rx_used[ty] == 0
            && self.credit_limit[ty] == self.rx_allocated[ty]
            && self.arriving.is_empty()
            && self.forwarding.is_empty()
            && self.dllps_arriving.is_empty()
    }

    /// True when the transmitter has something it may try to send: DLLPs, a replay, or
    /// queued TLPs.
    pub fn has_work(&self) -> bool {
        self.queued > 0 || !self.dllp_out.is_empty() || self.replay_next.is_some()
    }

    /// Removes acknowledged entries (sequence ≤ `seq`); returns how many.
    pub fn purge_acked(&mut self, seq: u64) -> usize {
        let mut n = 0;
        while self.replay.front().is_some_and(|e| e.seq <= seq) {
            let e = self.replay.pop_front().expect("front exists");
            self.replay_bytes -= e.bytes;
            n += 1;
        }
        if let Some(i) = self.replay_next {
            self.replay_next = if self.replay.is_empty() {
                None
            } else {
                Some(i.saturating_sub(n))
            };
        }
        n
    }

    /// The receiver frees `h` header and `d` data credits of `class`; returns true if the
    /// class is finite (an UpdateFC is owed).
    pub fn rx_free(&mut self, class: FcClass, h: u32, d: u32) -> bool {
        let ht = class as usize * 2;
        let mut finite = false;
        for (ty, n) in [(ht, h as u64), (ht + 1, d as u64)] {
            self.rx_used[ty] -= n.min(self.rx_used[ty]);
            if self.rx_advertised[ty].is_some() {
                self.rx_allocated[ty] += n;
                finite = true;
            }
        }
        if finite {
            self.fc_dirty |= 1 << class as u8;
        }
        finite
    }

    /// The receiver takes a TLP into its buffer; false if that overflows what it advertised
    /// (a flow-control violation the audit reports).
    pub fn rx_take(&mut self, class: FcClass, h: u32, d: u32) -> bool {
        let ht = class as usize * 2;
        let mut ok = true;
        for (ty, n) in [(ht, h as u64), (ht + 1, d as u64)] {
            self.rx_used[ty] += n;
            if let Some(adv) = self.rx_advertised[ty] {
                ok &= self.rx_used[ty] <= adv as u64;
            }
        }
        ok
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::phy::Generation;

    /// A channel with two inputs and infinite credits; TLP `k` is queued `k`-th, from the
    /// input `inputs[k]` names, all posted.
    fn queued(oldest_first: bool, inputs: &[usize]) -> Channel {
        let wire = Wire::new(Generation::Gen1, 8, false, false);
        let mut ch = Channel::new(wire, false, &[1, 1], Credits([None; 6]));
        ch.oldest_first = oldest_first;
        for (k, &i) in inputs.iter().enumerate() {
            ch.enqueue(SimTime::ZERO, i, FcClass::Posted, k as u32, 8, 156);
        }
        ch
    }

    /// The TLPs in the order the arbiter sends them.
    fn sent(mut ch: Channel) -> Vec<u32> {
        std::iter::from_fn(|| ch.pick(SimTime::ZERO).ok().map(|(q, _)| q.tlp)).collect()
    }

    #[test]
    fn round_robin_alternates_inputs_and_oldest_first_keeps_arrival_order() {
        let inputs = [0, 0, 0, 1, 0, 1];
        assert_eq!(sent(queued(false, &inputs)), [0, 3, 1, 5, 2, 4]);
        assert_eq!(sent(queued(true, &inputs)), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn oldest_first_still_lets_no_request_pass_an_older_posted_write() {
        // Input 0: a posted write (TLP 0) with no data credits left, then a read (TLP 1);
        // input 1: a younger read (TLP 2). Only input 1's read may go.
        let wire = Wire::new(Generation::Gen1, 8, false, false);
        let mut limits = [None; 6];
        limits[1] = Some(0);
        let mut ch = Channel::new(wire, false, &[1, 1], Credits(limits));
        ch.oldest_first = true;
        ch.enqueue(SimTime::ZERO, 0, FcClass::Posted, 0, 8, 156);
        ch.enqueue(SimTime::ZERO, 0, FcClass::NonPosted, 1, 0, 28);
        ch.enqueue(SimTime::ZERO, 1, FcClass::NonPosted, 2, 0, 28);
        let (q, class) = ch.pick(SimTime::ZERO).unwrap();
        assert_eq!((q.tlp, class), (2, FcClass::NonPosted));
        assert_eq!(ch.pick(SimTime::ZERO).unwrap_err(), Blocked::Credits(1));
    }
}
