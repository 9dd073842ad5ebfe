//! A bandwidth-limited resource that data passes through in order (a root complex's
//! posted-write sink and data paths, a switch's shared bus, one side of a storage media),
//! and one booked at times that need not come in order (a root complex's memory, a host
//! bridge: [`Calendar`]).

use crate::engine::SimTime;
use crate::sim::bottleneck::{Resource, UsedBy};

/// A bandwidth-limited resource data passes through in order.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Throttle {
    ticks_per_byte: f64,
    /// When the last byte booked so far is through.
    pub(in crate::sim) free_at: SimTime,
    /// Ticks of service given so far (for the bottleneck report).
    pub(in crate::sim) busy: u64,
}

impl Throttle {
    /// A resource passing `bytes_per_s` bytes per second.
    pub(in crate::sim) fn new(bytes_per_s: f64) -> Self {
        Throttle {
            ticks_per_byte: SimTime::TICKS_PER_PS as f64 * 1e12 / bytes_per_s,
            free_at: SimTime::ZERO,
            busy: 0,
        }
    }

    /// Bytes per second it passes.
    pub(in crate::sim) fn bytes_per_s(&self) -> f64 {
        SimTime::TICKS_PER_PS as f64 * 1e12 / self.ticks_per_byte
    }

    /// Ticks of service given by time `t`: everything booked, less the span from `t` to when
    /// the resource frees (service booked to start later, such as a read path's data booked
    /// at the memory's latency, makes this short by at most that lead at each end of a
    /// window).
    pub(in crate::sim) fn busy_by(&self, t: SimTime) -> u64 {
        self.busy
            .saturating_sub(self.free_at.saturating_sub(t).ticks())
    }

    /// Ticks of service `bytes` take.
    fn service(&self, bytes: u32) -> u64 {
        (bytes as f64 * self.ticks_per_byte).round() as u64
    }

    /// Passes `bytes` arriving at `t`; returns when the first byte enters and the last is through.
    pub(in crate::sim) fn pass_span(&mut self, t: SimTime, bytes: u32) -> (SimTime, SimTime) {
        let start = t.max(self.free_at);
        let service = self.service(bytes);
        self.busy += service;
        self.free_at = start + SimTime::from_ticks(service);
        (start, self.free_at)
    }

    /// It as a resource of node `node` for the bottleneck verdict: its service by `t` and
    /// its rate.
    pub(in crate::sim) fn resource(
        &self,
        node: usize,
        used_by: UsedBy,
        kind: &'static str,
        name: String,
        t: SimTime,
    ) -> Resource {
        Resource::of_node(
            node,
            used_by,
            kind,
            name,
            self.busy_by(t),
            Some(self.bytes_per_s()),
        )
    }

    /// Passes `bytes` arriving at `t`; returns when the last byte is through.
    pub(in crate::sim) fn pass(&mut self, t: SimTime, bytes: u32) -> SimTime {
        self.pass_span(t, bytes).1
    }
}

/// A bandwidth-limited resource booked at times that need not come in order: a root
/// complex's memory, which reads book at their latency after they arrive and writes as
/// they arrive, and a host bridge that both cross. Each booking takes the first service
/// free at or after its time, in as many pieces as the gaps between earlier bookings
/// give, so a booking for later holds no booking for sooner ([`Throttle`] would start
/// each after the last one booked: a write behind reads booked a memory latency ahead).
/// Booked in time order, it gives [`Throttle`]'s times.
#[derive(Debug, Clone)]
pub(in crate::sim) struct Calendar {
    /// Its rate and the service given so far.
    rate: Throttle,
    /// The booked spans that have not ended, sorted, apart and not touching.
    spans: std::collections::VecDeque<(SimTime, SimTime)>,
}

impl Calendar {
    /// A resource passing `bytes_per_s` bytes per second.
    pub(in crate::sim) fn new(bytes_per_s: f64) -> Self {
        Calendar {
            rate: Throttle::new(bytes_per_s),
            spans: std::collections::VecDeque::new(),
        }
    }

    /// Bytes per second it passes.
    pub(in crate::sim) fn bytes_per_s(&self) -> f64 {
        self.rate.bytes_per_s()
    }

    /// Ticks of service given by time `t`: everything booked, less what is booked after `t`.
    pub(in crate::sim) fn busy_by(&self, t: SimTime) -> u64 {
        let ahead: u64 = (self.spans.iter())
            .filter(|&&(_, end)| end > t)
            .map(|&(start, end)| end.saturating_sub(start.max(t)).ticks())
            .sum();
        self.rate.busy.saturating_sub(ahead)
    }

    /// Passes `bytes` arriving at `t` (no sooner than `now`, before which nothing is
    /// booked again); returns when the last byte is through.
    pub(in crate::sim) fn pass(&mut self, now: SimTime, t: SimTime, bytes: u32) -> SimTime {
        debug_assert!(
            t >= now,
            "a booking before now would miss the spans already let go"
        );
        while self.spans.front().is_some_and(|&(_, end)| end <= now) {
            self.spans.pop_front();
        }
        let service = self.rate.service(bytes);
        self.rate.busy += service;
        let (mut at, mut left) = (t, service);
        let mut i = self.spans.partition_point(|&(_, end)| end < at);
        while left > 0 {
            match self.spans.get(i).copied() {
                // `at` inside (or at the start of) a span: on past it.
                Some((start, end)) if start <= at => {
                    at = at.max(end);
                    i += 1;
                }
                // A gap before the next span: as much as it holds.
                Some((start, _)) => {
                    let take = (start - at).ticks().min(left);
                    i = self.book(i, at, at + SimTime::from_ticks(take));
                    at += SimTime::from_ticks(take);
                    left -= take;
                }
                None => {
                    self.book(i, at, at + SimTime::from_ticks(left));
                    at += SimTime::from_ticks(left);
                    left = 0;
                }
            }
        }
        at
    }

    /// Passes `bytes` arriving at `t` (no sooner than `now`) after everything booked so
    /// far: a read's data, which keeps its place behind what came before it (a read whose
    /// latency is shorter than an earlier one's does not take the gap before that one's
    /// data); returns when the last byte is through.
    pub(in crate::sim) fn pass_after(&mut self, now: SimTime, t: SimTime, bytes: u32) -> SimTime {
        let last = self.spans.back().map_or(t, |&(_, end)| end.max(t));
        self.pass(now, last, bytes)
    }

    /// Books `[start, end)` before span `i` (which starts at or after `end`), joined to
    /// the spans it touches; returns the index of the span that holds it.
    fn book(&mut self, i: usize, start: SimTime, end: SimTime) -> usize {
        let joins_before = i > 0 && self.spans[i - 1].1 == start;
        let joins_after = self.spans.get(i).is_some_and(|&(s, _)| s == end);
        match (joins_before, joins_after) {
            (true, true) => {
                self.spans[i - 1].1 = self.spans[i].1;
                self.spans.remove(i);
                i - 1
            }
            (true, false) => {
                self.spans[i - 1].1 = end;
                i - 1
            }
            (false, true) => {
                self.spans[i].0 = start;
                i
            }
            (false, false) => {
                self.spans.insert(i, (start, end));
                i
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn ns(n: u64) -> SimTime {
        SimTime::from_ns(n)
    }

    #[test]
    fn a_write_takes_the_memory_before_a_read_booked_a_latency_ahead() {
        // 1 GB/s: a byte a nanosecond. A read's 64 B booked at 1,000 ns, then a write of
        // 64 B arriving at 0 ns: the write is through at 64 ns, not after the read.
        let mut m = Calendar::new(1e9);
        assert_eq!(m.pass(ns(0), ns(1000), 64), ns(1064));
        assert_eq!(m.pass(ns(0), ns(0), 64), ns(64));
        // A write that needs more than the gap runs on after the read's span.
        assert_eq!(m.pass(ns(10), ns(950), 100), ns(1064 + 50));
        // Throttle would have put the first write after the read.
        let mut t = Throttle::new(1e9);
        t.pass(ns(1000), 64);
        assert_eq!(t.pass(ns(0), 64), ns(1128));
    }

    /// A reference calendar: merged busy spans in ticks, never let go; books `service` from
    /// `t` in the free time in order and returns when it is through.
    fn reference(spans: &mut Vec<(u64, u64)>, t: u64, service: u64) -> u64 {
        let (mut at, mut left) = (t, service);
        let mut pieces = Vec::new();
        for &(a, b) in spans.iter() {
            if b <= at {
                continue;
            }
            if a > at {
                let take = (a - at).min(left);
                pieces.push((at, at + take));
                (at, left) = (at + take, left - take);
                if left == 0 {
                    break;
                }
            }
            at = at.max(b);
        }
        if left > 0 {
            pieces.push((at, at + left));
            at += left;
        }
        spans.extend(pieces);
        spans.sort();
        let mut merged: Vec<(u64, u64)> = Vec::new();
        for &(a, b) in spans.iter() {
            match merged.last_mut() {
                Some(last) if last.1 >= a => last.1 = last.1.max(b),
                _ => merged.push((a, b)),
            }
        }
        *spans = merged;
        at
    }

    proptest! {
        /// In any order, each booking is through when the reference calendar says, and the
        /// busy time it keeps after now is the reference's; booked in time order, it is a
        /// Throttle.
        #[test]
        fn bookings_fill_the_free_time_in_order(
            bookings in prop::collection::vec((0u64..2000, 0u64..3000, 1u32..512), 1..40),
            sorted in any::<bool>(),
        ) {
            let mut bookings = bookings;
            if sorted {
                bookings.sort();
            }
            let (mut cal, mut thr) = (Calendar::new(2e9), Throttle::new(2e9));
            let mut spans = Vec::new();
            let mut now = ns(0);
            for &(step, lead, bytes) in &bookings {
                now = now.max(ns(step));
                let t = if sorted { ns(step) } else { now + ns(lead) };
                let done = cal.pass(now, t, bytes);
                let service = cal.rate.service(bytes);
                prop_assert_eq!(done.ticks(), reference(&mut spans, t.ticks(), service));
                if sorted {
                    prop_assert_eq!(done, thr.pass(t, bytes));
                }
                // The busy time after now: what a booking from now on must respect.
                let after = |v: Vec<(u64, u64)>| -> Vec<(u64, u64)> {
                    (v.into_iter())
                        .filter(|&(_, b)| b > now.ticks())
                        .map(|(a, b)| (a.max(now.ticks()), b))
                        .collect()
                };
                let kept = after(cal.spans.iter().map(|&(a, b)| (a.ticks(), b.ticks())).collect());
                let live = after(spans.clone());
                prop_assert_eq!(kept, live);
            }
            let total: u64 = spans.iter().map(|&(a, b)| b - a).sum();
            prop_assert_eq!(cal.busy_by(SimTime::from_ticks(u64::MAX / 2)), total);
        }
    }
}
