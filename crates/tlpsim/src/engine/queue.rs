//! A priority queue of timed events with deterministic tie-breaking.

use super::time::SimTime;
use std::cmp::{Ordering, Reverse};
use std::collections::BinaryHeap;

struct Entry<E> {
    at: SimTime,
    seq: u64,
    event: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, other: &Self) -> Ordering {
        (self.at, self.seq).cmp(&(other.at, other.seq))
    }
}

/// Events ordered by time; events at equal times come out in the order they went in.
pub struct EventQueue<E> {
    heap: BinaryHeap<Reverse<Entry<E>>>,
    next_seq: u64,
    now: SimTime,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    /// An empty queue at time zero.
    pub fn new() -> Self {
        EventQueue {
            heap: BinaryHeap::new(),
            next_seq: 0,
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
        self.heap.len()
    }

    /// True when no event waits.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Schedules `event` at `at`; an `at` in the past is clamped to now (never runs backwards).
    pub fn schedule(&mut self, at: SimTime, event: E) {
        let at = at.max(self.now);
        self.heap.push(Reverse(Entry {
            at,
            seq: self.next_seq,
            event,
        }));
        self.next_seq += 1;
    }

    /// Schedules `event` `delay` after now.
    pub fn schedule_in(&mut self, delay: SimTime, event: E) {
        self.schedule(self.now + delay, event);
    }

    /// Takes the earliest event if it is due at or before `until`, advancing now to its time.
    pub fn pop_until(&mut self, until: SimTime) -> Option<(SimTime, E)> {
        if self.heap.peek().is_some_and(|Reverse(e)| e.at <= until) {
            let Reverse(e) = self.heap.pop()?;
            self.now = e.at;
            self.popped += 1;
            Some((e.at, e.event))
        } else {
            None
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
    }
}
