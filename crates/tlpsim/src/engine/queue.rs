//! A priority queue of timed events with deterministic tie-breaking.
//!
//! A timing wheel (a calendar queue of fixed bucket width): bucket `k` of the wheel holds
//! the events due in the `k`-th slot of `2^SLOT_BITS` ticks (about 4 ns) within the next
//! `2^WHEEL_BITS` slots (about 4 µs), as a list sorted earliest first. The lists' nodes
//! live in one pool reused last-freed first, so the few hundred events a link simulation
//! keeps waiting stay in a few kilobytes of cache. Events further ahead wait in a binary
//! heap and move onto the wheel as it turns. Pushing and popping cost O(1) for the
//! near-future events a link simulation is made of. Events at equal times come out in the
//! order they went in.

use super::table::Table;
use super::time::SimTime;
use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// Ticks per slot, as a power of two (2^18 ticks = 4.1 ns).
const SLOT_BITS: u32 = 18;
/// Slots on the wheel, as a power of two (1024 slots = 4.2 µs).
const WHEEL_BITS: u32 = 10;
const SLOTS: usize = 1 << WHEEL_BITS;
const WORDS: usize = SLOTS / 64;
/// No node (end of a list, empty bucket).
const NIL: u32 = u32::MAX;

/// (time in ticks, insertion number): the order far events come out in.
type Key = (u64, u64);

struct Far<E> {
    key: Key,
    event: E,
}
impl<E> PartialEq for Far<E> {
    fn eq(&self, other: &Self) -> bool {
        self.key == other.key
    }
}
impl<E> Eq for Far<E> {}
impl<E> PartialOrd for Far<E> {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Far<E> {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.key.cmp(&other.key)
    }
}

/// One waiting event on the wheel, linked to the next in its bucket.
#[derive(Clone, Copy)]
struct Node<E> {
    at: u64,
    next: u32,
    event: E,
}

/// Events ordered by time; events at equal times come out in the order they went in.
pub struct EventQueue<E> {
    /// First and last node of each bucket (NIL when empty); a bucket's list is sorted by
    /// time, equal times in insertion order.
    ends: Table<[u32; 2]>,
    /// The node pool.
    nodes: Table<Node<E>>,
    /// First free node (free nodes chain through `next`).
    free: u32,
    /// Bit per non-empty bucket.
    occupied: [u64; WORDS],
    /// Absolute slot number of the wheel's first slot (no waiting event is earlier).
    base: u64,
    /// Events at or beyond `base + SLOTS`.
    far: BinaryHeap<Reverse<Far<E>>>,
    /// Slot of the earliest far event (`u64::MAX` when there is none).
    far_slot: u64,
    next_seq: u64,
    len: usize,
    now: SimTime,
    popped: u64,
}

impl<E: Copy> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E: Copy> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            ends: vec![[NIL; 2]; SLOTS].into(),
            nodes: Table::new(),
            free: NIL,
            occupied: [0; WORDS],
            base: 0,
            far: BinaryHeap::new(),
            far_slot: u64::MAX,
            next_seq: 0,
            len: 0,
            now: SimTime::ZERO,
            popped: 0,
        }
    }

    /// The time of the last event taken out (zero before the first).
    pub fn now(&self) -> SimTime {
        self.now
    }

    /// Events taken out so far.
    pub fn events(&self) -> u64 {
        self.popped
    }

    /// Events waiting.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Puts an event on the wheel (its slot must lie within the wheel's span), after every
    /// event of its bucket due at or before it.
    #[inline(always)]
    fn place(&mut self, at: u64, event: E) {
        let node = Node {
            at,
            next: NIL,
            event,
        };
        let n = if self.free != NIL {
            let n = self.free;
            self.free = self.nodes[n as usize].next;
            self.nodes[n as usize] = node;
            n
        } else {
            self.nodes.push(node);
            (self.nodes.len() - 1) as u32
        };
        let i = (at >> SLOT_BITS) as usize & (SLOTS - 1);
        let [first, last] = self.ends[i];
        if last == NIL {
            self.ends[i] = [n, n];
            self.occupied[i / 64] |= 1 << (i % 64);
        } else if self.nodes[last as usize].at <= at {
            // Usually the latest so far: append.
            self.nodes[last as usize].next = n;
            self.ends[i][1] = n;
        } else if self.nodes[first as usize].at > at {
            self.nodes[n as usize].next = first;
            self.ends[i][0] = n;
        } else {
            // After the last node due at or before it (not the tail: that one is later).
            let mut p = first;
            loop {
                let next = self.nodes[p as usize].next;
                if self.nodes[next as usize].at > at {
                    break;
                }
                p = next;
            }
            self.nodes[n as usize].next = self.nodes[p as usize].next;
            self.nodes[p as usize].next = n;
        }
    }

    /// Schedules `event` at `at`; an `at` in the past is clamped to now (never runs backwards).
    // Out of line, as the compiler kept it before: as a small `#[inline]` wrapper it was
    // inlined everywhere and the bench cost +3.5 % instructions.
    #[inline(never)]
    pub fn schedule(&mut self, at: SimTime, event: E) {
        self.schedule_inline(at, event);
    }

    /// [`Self::schedule`] inlined into its caller (the lean kernel's hottest sites; the
    /// general engine keeps the call, which costs it less there).
    #[inline(always)]
    pub fn schedule_inline(&mut self, at: SimTime, event: E) {
        let at = at.max(self.now).ticks();
        self.len += 1;
        if (at >> SLOT_BITS) < self.base + SLOTS as u64 {
            self.place(at, event);
        } else {
            self.push_far(at, event);
        }
    }

    /// Puts an event beyond the wheel's span in the far heap (kept out of line: rare).
    #[cold]
    #[inline(never)]
    fn push_far(&mut self, at: u64, event: E) {
        let key = (at, self.next_seq);
        self.next_seq += 1;
        self.far.push(Reverse(Far { key, event }));
        self.far_slot = self.far_slot.min(at >> SLOT_BITS);
    }

    /// True if some waiting event satisfies `pred` (a scan of every waiting event: for rare
    /// checks such as a deadlock watchdog's).
    pub fn any(&self, pred: impl Fn(&E) -> bool) -> bool {
        let on_wheel = self.ends.iter().any(|&[first, _]| {
            let mut n = first;
            while n != NIL {
                let node = &self.nodes[n as usize];
                if pred(&node.event) {
                    return true;
                }
                n = node.next;
            }
            false
        });
        on_wheel || self.far.iter().any(|Reverse(f)| pred(&f.event))
    }

    /// Schedules `event` `delay` after now.
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// The first non-empty slot at or after `base` (whose bucket is `start`), as an
    /// absolute slot number.
    #[inline]
    fn next_occupied_from(&self, start: usize) -> Option<u64> {
        let (w0, b0) = (start / 64, start % 64);
        let first = self.occupied[w0] & (!0u64 << b0);
        if first != 0 {
            let i = w0 * 64 + first.trailing_zeros() as usize;
            return Some(self.base + (i - start) as u64);
        }
        for step in 1..=WORDS {
            let w = (w0 + step) % WORDS;
            let word = if step == WORDS {
                self.occupied[w] & !(!0u64 << b0)
            } else {
                self.occupied[w]
            };
            if word != 0 {
                let i = w * 64 + word.trailing_zeros() as usize;
                let ahead = (i + SLOTS - start) % SLOTS;
                return Some(self.base + ahead as u64);
            }
        }
        None
    }

    /// Takes the earliest event if it is due at or before `until`, advancing now to its time.
    #[inline(always)] // into each event loop (the general engine's and the lean kernel's)
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        let here = self.base as usize & (SLOTS - 1);
        let slot = match self.next_occupied_from(here) {
            Some(s) => s,
            None => {
                // The wheel is empty: turn it to the first far event.
                let Reverse(f) = self.far.peek()?;
                if f.key.0 > until.ticks() {
                    return None;
                }
                self.base = f.key.0 >> SLOT_BITS;
                self.refill();
                self.base
            }
        };
        let i = slot as usize & (SLOTS - 1);
        let n = self.ends[i][0];
        let at = self.nodes[n as usize].at;
        if at > until.ticks() {
            return None;
        }
        // While the wheel stays on one slot no far event falls due (every turn ends with a
        // refill, and far pushes lie beyond the span): the check fires only on a turn.
        self.base = slot;
        if self.far_due() {
            self.refill();
        }
        // A refill moves far events only into slots later than this one: the head stands.
        let node = &mut self.nodes[n as usize];
        let (next, event) = (node.next, node.event);
        node.next = self.free;
        self.free = n;
        // Without branches: whether a bucket empties follows no pattern a predictor learns.
        let emptied = next == NIL;
        let last = self.ends[i][1];
        // NIL is all ones: `last | -1` is NIL when the bucket empties.
        self.ends[i] = [next, last | (emptied as u32).wrapping_neg()];
        self.occupied[i / 64] &= !((emptied as u64) << (i % 64));
        self.len -= 1;
        self.now = SimTime::from_ticks(at);
        self.popped += 1;
        Some((self.now, event))
    }

    /// True when the earliest far event falls within the wheel's span.
    #[inline]
    fn far_due(&self) -> bool {
        self.far_slot < self.base + SLOTS as u64
    }

    /// Moves far events that now fall within the wheel's span onto it.
    fn refill(&mut self) {
        while self.far_due() {
            let Reverse(f) = self.far.pop().expect("far_slot names a waiting event");
            self.place(f.key.0, f.event);
            self.far_slot = self
                .far
                .peek()
                .map_or(u64::MAX, |Reverse(f)| f.key.0 >> SLOT_BITS);
        }
    }

    /// Takes the earliest event, advancing now to its time.
    pub fn pop(&mut self) -> Option<(SimTime, E)> {
        self.pop_until(SimTime::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn ties_keep_insertion_order() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_ns(5), "b1");
        q.schedule(SimTime::from_ns(1), "a");
        q.schedule(SimTime::from_ns(5), "b2");
        q.schedule(SimTime::from_ns(5), "b3");
        let order: Vec<_> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, ["a", "b1", "b2", "b3"]);
        assert_eq!(q.events(), 4);
    }

    #[test]
    fn any_sees_every_waiting_event_near_and_far() {
        let mut q = EventQueue::new();
        for (ns, e) in [(5, 1), (5, 2), (7, 3), (1_000_000, 4)] {
            q.schedule(SimTime::from_ns(ns), e);
        }
        assert!((1..=4).all(|k| q.any(|&e| e == k)));
        assert!(!q.any(|&e| e == 5));
        q.pop();
        assert!(!q.any(|&e| e == 1) && q.any(|&e| e == 2) && q.any(|&e| e == 4));
        while q.pop().is_some() {}
        assert!(!q.any(|_| true));
    }

    #[test]
    fn past_events_are_clamped_to_now() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_ns(10), 1);
        q.pop();
        q.schedule(SimTime::from_ns(3), 2);
        assert_eq!(q.pop().unwrap().0, SimTime::from_ns(10));
    }

    #[test]
    fn pop_until_stops_at_the_horizon() {
        let mut q = EventQueue::new();
        q.schedule(SimTime::from_ns(10), ());
        assert!(q.pop_until(SimTime::from_ns(9)).is_none());
        assert!(q.pop_until(SimTime::from_ns(10)).is_some());
    }

    proptest! {
        #[test]
        fn output_is_sorted_and_stable(times in prop::collection::vec(0u64..50, 0..200)) {
            let mut q = EventQueue::new();
            for (i, t) in times.iter().enumerate() {
                q.schedule(SimTime::from_ticks(*t), i);
            }
            let mut last: Option<(SimTime, usize)> = None;
            let mut n = 0;
            while let Some((at, i)) = q.pop() {
                if let Some((lt, li)) = last {
                    prop_assert!(at > lt || (at == lt && i > li));
                }
                last = Some((at, i));
                n += 1;
            }
            prop_assert_eq!(n, times.len());
        }

        #[test]
        fn far_and_wheel_events_at_equal_times_keep_insertion_order(
            ops in prop::collection::vec((0u64..40, 0u8..3, any::<bool>()), 0..300)
        ) {
            // Times on a grid of 3/16 of the wheel's span: many ties, some of them between
            // events that waited in the far heap and events scheduled onto the wheel later.
            let step = (SLOTS as u64 * 3 / 16) << SLOT_BITS;
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, usize)> = Vec::new();
            for (i, &(k, pops, absolute)) in ops.iter().enumerate() {
                let at = if absolute { k * step } else { q.now().ticks() + (k % 8) * step };
                let at = at.max(q.now().ticks());
                q.schedule(SimTime::from_ticks(at), i);
                reference.push((at, i));
                for _ in 0..pops {
                    reference.sort();
                    let horizon = q.now().ticks() + 4 * step;
                    let want = reference.first().filter(|r| r.0 <= horizon).copied();
                    if want.is_some() {
                        reference.remove(0);
                    }
                    let got = q.pop_until(SimTime::from_ticks(horizon)).map(|(t, i)| (t.ticks(), i));
                    prop_assert_eq!(got, want);
                }
            }
            reference.sort();
            let rest: Vec<_> = std::iter::from_fn(|| q.pop().map(|(t, i)| (t.ticks(), i))).collect();
            prop_assert_eq!(rest, reference);
        }

        #[test]
        fn interleaved_pushes_and_pops_stay_sorted_and_stable(
            ops in prop::collection::vec((0u64..1u64 << 40, 0u8..4), 0..300)
        ) {
            // Against a reference: a sorted list of (time, insertion index).
            let mut q = EventQueue::new();
            let mut reference: Vec<(u64, usize)> = Vec::new();
            for (i, &(delta, pops)) in ops.iter().enumerate() {
                let at = q.now().ticks() + delta % (1 << (delta % 41));
                let at = if i % 7 == 0 { q.now().ticks() } else { at };
                q.schedule(SimTime::from_ticks(at), i);
                reference.push((at, i));
                for _ in 0..pops {
                    reference.sort();
                    let want = (!reference.is_empty()).then(|| reference.remove(0));
                    let got = q.pop().map(|(t, i)| (t.ticks(), i));
                    prop_assert_eq!(got, want);
                }
            }
            prop_assert_eq!(q.len(), reference.len());
        }
    }
}
