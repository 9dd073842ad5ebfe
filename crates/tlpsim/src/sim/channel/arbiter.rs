//! The egress arbiter of one link direction: the TLPs waiting for the wire, one set of
//! queues per ingress port (input), and the choice of which goes next.
//!
//! An input exists only for an ingress port that has queued a TLP here, so a switch with
//! thousands of ports keeps per egress only the inputs its traffic uses (linear, not
//! quadratic, in ports); inputs are kept sorted by ingress port.
//!
//! Among inputs it serves round-robin, weighted (`weight` TLPs per turn) or oldest first;
//! within an input, the transaction ordering rules: nothing passes an older posted
//! request, posted requests pass blocked non-posted requests and completions. A TLP may go
//! only if the receiver granted its credits and the replay buffer has room for it.

use std::collections::VecDeque;

use crate::engine::SimTime;
use crate::pcie::dll::transmit::DllTransmitter;
use crate::pcie::flow_control::{CreditType, FcClass, FcTransmitter, CLASSES};

/// Up to this many ingress ports, an arbiter makes all their inputs at once (as cheap to
/// find as a table); beyond, only when a port first queues a TLP.
const DENSE_PORTS: u32 = 32;

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
#[derive(Debug)]
struct Input {
    queues: [VecDeque<Queued>; 3],
    /// The ingress port.
    port: u32,
    /// TLPs per turn.
    weight: u32,
}

impl Input {
    /// True when no TLP waits in any of its queues.
    fn is_empty(&self) -> bool {
        self.queues.iter().all(VecDeque::is_empty)
    }
}

/// Why the arbiter found nothing to send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)] // a plain tag byte: matched on every blocked pick
pub enum Blocked {
    /// Nothing queued.
    Empty,
    /// The oldest eligible TLP lacks credits of this type.
    Credits(CreditType),
    /// The replay buffer is full.
    ReplayBuffer,
}

/// The egress queues and arbiter of one link direction.
#[derive(Debug)]
pub struct Arbiter {
    /// The inputs of the ingress ports that have queued here, sorted by port.
    inputs: Vec<Input>,
    /// Ingress ports.
    ports: u32,
    /// TLPs per turn of each ingress port; empty when every port takes one.
    weights: Box<[u32]>,
    /// Sends the oldest ready TLP of all inputs (else round-robin or weighted).
    pub oldest_first: bool,
    /// Where the round starts in `inputs`: the input of the port whose turn it is, else
    /// the first of a later port, else the first.
    start: usize,
    /// The TLPs left in the turn of input `start` (0: no turn has begun).
    left: u32,
    /// The port whose turn it is, kept while `left` is 0 (else input `start`'s).
    current: u32,
    next_stamp: u64,
    /// TLPs waiting in every input.
    pub queued: usize,
    /// Sum of the times (ticks) TLPs joined the egress queues, and of the times they left:
    /// the queue's time integral up to `t` is `left + queued × t - joined`.
    queue_joined: u128,
    queue_left: u128,
    /// Most TLPs waiting at once since measuring started.
    pub queue_max: usize,
}

impl Arbiter {
    /// An arbiter among `weights.len()` inputs, input `i` taking `weights[i]` TLPs per turn
    /// (at least one).
    pub fn new(weights: &[u32]) -> Self {
        let ports = weights.len() as u32;
        let weights = if weights.iter().all(|&w| w <= 1) {
            Box::default()
        } else {
            weights.iter().map(|&w| w.max(1)).collect()
        };
        let mut arbiter = Arbiter {
            inputs: Vec::new(),
            ports,
            weights,
            oldest_first: false,
            current: 0,
            left: 0,
            start: 0,
            next_stamp: 0,
            queued: 0,
            queue_joined: 0,
            queue_left: 0,
            queue_max: 0,
        };
        // A few ports get their inputs at once, so that each sits at its port's index.
        if ports <= DENSE_PORTS {
            for port in 0..ports as usize {
                arbiter.add_input(port, port);
            }
        }
        arbiter
    }

    /// TLPs waiting, integrated over time up to `now` (TLP-ticks): each counts from when it
    /// joined to when it left (or `now`, if it still waits).
    pub fn queue_area(&self, now: SimTime) -> u128 {
        self.queue_left + self.queued as u128 * now.ticks() as u128 - self.queue_joined
    }

    /// The TLPs waiting here with their class, input by input, each input's oldest first.
    pub fn waiting(&self) -> impl Iterator<Item = (FcClass, u32)> + '_ {
        self.inputs.iter().flat_map(|input| {
            CLASSES
                .into_iter()
                .zip(&input.queues)
                .flat_map(|(class, q)| q.iter().map(move |t| (class, t.tlp)))
        })
    }

    /// Queues a TLP from `input` in `class` at `now`.
    #[inline(always)] // into `Simulator::enqueue_from`, one of the hottest paths
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
        self.input(input).queues[class as usize].push_back(Queued {
            tlp,
            data_credits,
            bytes,
            stamp,
        });
        self.queued += 1;
        self.queue_max = self.queue_max.max(self.queued);
    }

    /// Whether it arbitrates for one ingress port alone (no turns among inputs).
    pub fn single_input(&self) -> bool {
        self.ports == 1
    }

    /// Counts a TLP the lean kernel queued at `now` (it keeps the TLP itself: `sim::lean`).
    #[inline(always)]
    pub fn lean_join(&mut self, now: SimTime) {
        self.queue_joined += now.ticks() as u128;
        self.next_stamp += 1;
        self.queued += 1;
        self.queue_max = self.queue_max.max(self.queued);
    }

    /// Counts a TLP the lean kernel took out and another it queued in its place at one
    /// instant: `queue_area`'s sums would both grow by that instant, which cancels.
    #[inline(always)]
    pub fn lean_swap(&mut self) {
        self.next_stamp += 1;
    }

    /// Counts a TLP the lean kernel took out at `now`.
    #[inline(always)]
    pub fn lean_leave(&mut self, now: SimTime) {
        self.queue_left += now.ticks() as u128;
        self.queued -= 1;
    }

    /// The input of ingress port `port`, made if it is not yet there.
    #[inline(always)]
    fn input(&mut self, port: usize) -> &mut Input {
        // Once every port below `port` has an input (from the start, for a few ports),
        // port `port`'s sits at index `port`.
        let at = match self.inputs.get(port) {
            Some(i) if i.port as usize == port => port,
            _ => self.find_input(port),
        };
        &mut self.inputs[at]
    }

    /// Where in `inputs` the input of ingress port `port` is, by binary search, made if it
    /// is not yet there.
    #[inline(never)]
    fn find_input(&mut self, port: usize) -> usize {
        match self.inputs.binary_search_by_key(&port, |i| i.port as usize) {
            Ok(at) => at,
            Err(at) => self.add_input(port, at),
        }
    }

    /// Makes the input of ingress port `port` at index `at` of `inputs`; returns `at`.
    fn add_input(&mut self, port: usize, at: usize) -> usize {
        assert!(
            port < self.ports as usize,
            "ingress port {port} out of range"
        );
        let weight = self.weights.get(port).copied().unwrap_or(1);
        // The round still starts at the first input whose port is the current one or later.
        let current = if self.left > 0 {
            self.inputs[self.start].port
        } else {
            self.current
        };
        self.inputs.insert(
            at,
            Input {
                queues: Default::default(),
                port: port as u32,
                weight,
            },
        );
        self.start = self.inputs.partition_point(|i| i.port < current);
        if self.start == self.inputs.len() {
            self.start = 0;
        }
        at
    }

    /// Chooses the next TLP to send (round-robin, weighted or oldest first among inputs;
    /// within an input the oldest TLP the ordering rules let go) among those `credits` and
    /// the room in `replay` allow. Takes it out of its queue and returns it with its class,
    /// or says why nothing can go.
    #[inline(always)] // into `Channel::pick`, which addresses all three from one pointer
    pub fn pick(
        &mut self,
        now: SimTime,
        credits: &FcTransmitter,
        replay: &DllTransmitter,
    ) -> Result<(Queued, FcClass), Blocked> {
        if self.queued == 0 {
            return Err(Blocked::Empty);
        }
        let gate = Gate { credits, replay };
        if self.oldest_first {
            return self.pick_oldest(now, gate);
        }
        let n = self.inputs.len();
        let mut blocked = Blocked::Empty;
        // The input after `i`, round the ring.
        let after = |i: usize| if i + 1 == n { 0 } else { i + 1 };
        // In ingress-port order from the port whose turn it is, round the ring.
        let mut idx = self.start;
        for _ in 0..n {
            if self.inputs[idx].is_empty() {
                idx = after(idx);
                continue;
            }
            if let Some(c) = self.choose(idx, gate, &mut blocked) {
                let entry = self.take(idx, c, now);
                // Round-robin or weighted turns only matter among several ingress ports.
                if self.ports > 1 {
                    self.took_turn(idx, n);
                }
                return Ok((entry, CLASSES[c]));
            }
            idx = after(idx);
        }
        Err(blocked)
    }

    /// Counts a TLP sent from input `idx` (of `n`) against its turn: the turn passes to
    /// the next ingress port when its weight is used up.
    #[inline(always)]
    fn took_turn(&mut self, idx: usize, n: usize) {
        // A TLP from another input than the round's start, or the first of a turn,
        // begins that input's turn.
        if idx != self.start || self.left == 0 {
            self.start = idx;
            self.left = self.inputs[idx].weight;
        }
        self.left -= 1;
        if self.left == 0 {
            // The next port's turn: it begins when that port next sends.
            let next = self.inputs[idx].port + 1;
            self.current = if next == self.ports { 0 } else { next };
            self.start = if idx + 1 == n { 0 } else { idx + 1 };
        }
    }

    /// [`Self::pick`] for an egress that sends the oldest ready TLP of all its inputs: each
    /// input offers the TLP its ordering rules and credits let go, and the one that joined
    /// this egress first wins.
    #[inline(never)]
    fn pick_oldest(&mut self, now: SimTime, gate: Gate) -> Result<(Queued, FcClass), Blocked> {
        let mut blocked = Blocked::Empty;
        let mut best: Option<(u64, usize, usize)> = None;
        for idx in 0..self.inputs.len() {
            if self.inputs[idx].is_empty() {
                continue;
            }
            if let Some(c) = self.choose(idx, gate, &mut blocked) {
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
    #[inline(always)]
    fn choose(&self, idx: usize, gate: Gate, blocked: &mut Blocked) -> Option<usize> {
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
                if gate.may_send(c1, h, blocked) {
                    return Some(c1);
                }
                if let Some(h) = h2.filter(|h| h.stamp < posted_stamp) {
                    if gate.may_send(c2, h, blocked) {
                        return Some(c2);
                    }
                }
            }
        }
        match posted {
            Some(h) if gate.may_send(0, h, blocked) => Some(0),
            _ => None,
        }
    }
}

/// What lets a queue's head go besides the ordering rules: the transmitter's credits and
/// its replay buffer's room.
#[derive(Clone, Copy)]
struct Gate<'a> {
    credits: &'a FcTransmitter,
    replay: &'a DllTransmitter,
}

impl Gate<'_> {
    /// Whether the head `h` of queue `c` has the credits and the replay buffer room to go;
    /// if not, notes why in `blocked` (a full replay buffer outranks a lack of credits).
    #[inline]
    fn may_send(self, c: usize, h: &Queued, blocked: &mut Blocked) -> bool {
        match self.credits.check(CLASSES[c], h.data_credits) {
            Ok(()) => {
                if self.replay.has_room(h.bytes) {
                    true
                } else {
                    *blocked = Blocked::ReplayBuffer;
                    false
                }
            }
            Err(ty) => {
                if matches!(*blocked, Blocked::Empty) {
                    *blocked = Blocked::Credits(ty);
                }
                false
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::flow_control::PerCreditType;

    /// Two inputs; TLP `k` is queued `k`-th, from the input `inputs[k]` names, all posted.
    fn queued(oldest_first: bool, inputs: &[usize]) -> Arbiter {
        let mut arb = Arbiter::new(&[1, 1]);
        arb.oldest_first = oldest_first;
        for (k, &i) in inputs.iter().enumerate() {
            arb.enqueue(SimTime::ZERO, i, FcClass::Posted, k as u32, 8, 156);
        }
        arb
    }

    /// The TLPs in the order the arbiter sends them, with infinite credits.
    fn sent(mut arb: Arbiter) -> Vec<u32> {
        let credits = FcTransmitter::new(PerCreditType([None; 6]));
        let replay = DllTransmitter::default();
        std::iter::from_fn(|| {
            arb.pick(SimTime::ZERO, &credits, &replay)
                .ok()
                .map(|(q, _)| q.tlp)
        })
        .collect()
    }

    #[test]
    fn round_robin_alternates_inputs_and_oldest_first_keeps_arrival_order() {
        let inputs = [0, 0, 0, 1, 0, 1];
        assert_eq!(sent(queued(false, &inputs)), [0, 3, 1, 5, 2, 4]);
        assert_eq!(sent(queued(true, &inputs)), [0, 1, 2, 3, 4, 5]);
    }

    #[test]
    fn weighted_inputs_take_their_turns() {
        let mut arb = Arbiter::new(&[2, 1]);
        for (k, i) in [0, 0, 0, 0, 1, 1].into_iter().enumerate() {
            arb.enqueue(SimTime::ZERO, i, FcClass::Posted, k as u32, 8, 156);
        }
        assert_eq!(sent(arb), [0, 1, 4, 2, 3, 5]);
    }

    #[test]
    fn a_sparse_arbiter_serves_ports_in_order_from_the_turn() {
        // 100 ports, inputs made only as ports queue. Port 70 takes three per turn.
        let mut weights = vec![1; 100];
        weights[70] = 3;
        let mut arb = Arbiter::new(&weights);
        for (k, i) in [70, 70, 70, 70, 5, 90].into_iter().enumerate() {
            arb.enqueue(SimTime::ZERO, i, FcClass::Posted, k as u32, 8, 156);
        }
        let credits = FcTransmitter::new(PerCreditType([None; 6]));
        let replay = DllTransmitter::default();
        let mut next = || arb.pick(SimTime::ZERO, &credits, &replay).unwrap().0.tlp;
        // From port 0: port 5, then port 70's turn of three, then port 90.
        assert_eq!([next(), next(), next(), next(), next()], [4, 0, 1, 2, 5]);
        // The turn is now port 91's: a later port 95 goes before port 70 and port 40.
        arb.enqueue(SimTime::ZERO, 40, FcClass::Posted, 6, 8, 156);
        arb.enqueue(SimTime::ZERO, 95, FcClass::Posted, 7, 8, 156);
        let mut next = || arb.pick(SimTime::ZERO, &credits, &replay).unwrap().0.tlp;
        assert_eq!([next(), next(), next()], [7, 6, 3]);
        assert_eq!(arb.inputs.len(), 5);
    }

    #[test]
    fn oldest_first_still_lets_no_request_pass_an_older_posted_write() {
        // Input 0: a posted write (TLP 0) with no data credits left, then a read (TLP 1);
        // input 1: a younger read (TLP 2). Only input 1's read may go.
        let mut limits = PerCreditType([None; 6]);
        limits[CreditType::Pd] = Some(0);
        let credits = FcTransmitter::new(limits);
        let replay = DllTransmitter::default();
        let mut arb = Arbiter::new(&[1, 1]);
        arb.oldest_first = true;
        arb.enqueue(SimTime::ZERO, 0, FcClass::Posted, 0, 8, 156);
        arb.enqueue(SimTime::ZERO, 0, FcClass::NonPosted, 1, 0, 28);
        arb.enqueue(SimTime::ZERO, 1, FcClass::NonPosted, 2, 0, 28);
        let (q, class) = arb.pick(SimTime::ZERO, &credits, &replay).unwrap();
        assert_eq!((q.tlp, class), (2, FcClass::NonPosted));
        assert_eq!(
            arb.pick(SimTime::ZERO, &credits, &replay).unwrap_err(),
            Blocked::Credits(CreditType::Pd)
        );
    }

    #[test]
    fn a_full_replay_buffer_outranks_missing_credits() {
        // The read lacks NPH credits, the completion behind it has no replay buffer room.
        let mut limits = PerCreditType([None; 6]);
        limits[CreditType::Nph] = Some(0);
        let credits = FcTransmitter::new(limits);
        let mut replay = DllTransmitter::new(200, SimTime::ZERO);
        replay.push(9, 100);
        let mut arb = Arbiter::new(&[1]);
        arb.enqueue(SimTime::ZERO, 0, FcClass::NonPosted, 0, 0, 28);
        arb.enqueue(SimTime::ZERO, 0, FcClass::Completion, 1, 8, 156);
        assert_eq!(
            arb.pick(SimTime::ZERO, &credits, &replay).unwrap_err(),
            Blocked::ReplayBuffer
        );
        assert_eq!(arb.queued, 2);
    }

    #[test]
    fn queue_area_integrates_waiting_tlps() {
        let mut arb = Arbiter::new(&[1]);
        arb.enqueue(SimTime::from_ticks(10), 0, FcClass::Posted, 0, 0, 28);
        arb.enqueue(SimTime::from_ticks(20), 0, FcClass::Posted, 1, 0, 28);
        let credits = FcTransmitter::new(PerCreditType([None; 6]));
        let replay = DllTransmitter::default();
        arb.pick(SimTime::from_ticks(30), &credits, &replay)
            .unwrap();
        // TLP 0 waited 20 ticks, TLP 1 waits from 20 to 50.
        assert_eq!(arb.queue_area(SimTime::from_ticks(50)), 20 + 30);
        assert_eq!(arb.queue_max, 2);
    }
}
