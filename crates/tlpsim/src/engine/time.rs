//! Simulated time in integer ticks of 1/64 ps.
//!
//! Every generation's symbol time is a whole number of ticks: 2.5 GT/s 4000 ps = 256000,
//! 8 GT/s (128b/130b) 1015.625 ps = 65000, 32 GT/s 253.90625 ps = 16250, 64 GT/s 125 ps =
//! 8000, 128 GT/s 62.5 ps = 4000. A u64 of ticks spans about 3.3 days of simulated time.

use std::fmt;
use std::ops::{Add, AddAssign, Sub};

/// A point in (or span of) simulated time, in ticks of 1/64 ps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct SimTime(u64);

impl SimTime {
    /// Ticks in one picosecond.
    pub const TICKS_PER_PS: u64 = 64;
    /// Time zero.
    pub const ZERO: SimTime = SimTime(0);
    /// The largest representable time.
    pub const MAX: SimTime = SimTime(u64::MAX);

    /// A time of `ticks` ticks.
    pub const fn from_ticks(ticks: u64) -> Self {
        SimTime(ticks)
    }

    /// A time of `ps` picoseconds.
    pub const fn from_ps(ps: u64) -> Self {
        SimTime(ps * Self::TICKS_PER_PS)
    }

    /// A time of `ns` nanoseconds.
    pub const fn from_ns(ns: u64) -> Self {
        Self::from_ps(ns * 1000)
    }

    /// The tick count.
    pub const fn ticks(self) -> u64 {
        self.0
    }

    /// Seconds, as a float (for reports only).
    pub fn as_secs_f64(self) -> f64 {
        self.0 as f64 / (Self::TICKS_PER_PS as f64 * 1e12)
    }

    /// Nanoseconds, as a float (for reports only).
    pub fn as_ns_f64(self) -> f64 {
        self.0 as f64 / (Self::TICKS_PER_PS as f64 * 1e3)
    }

    /// `self - earlier`, or zero if `earlier` is later.
    pub fn saturating_sub(self, earlier: SimTime) -> SimTime {
        SimTime(self.0.saturating_sub(earlier.0))
    }
}

/// A span of simulated time that may be open (a stall, a busy period, every request slot in
/// use): opened at one instant, closed at a later one, which gives its length.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct OpenSpan(Option<SimTime>);

impl OpenSpan {
    /// Opens the span at `now`, unless it is open already.
    pub fn open(&mut self, now: SimTime) {
        self.0.get_or_insert(now);
    }

    /// Closes the span at `now`: its length in ticks, or None if it was not open.
    pub fn close(&mut self, now: SimTime) -> Option<u64> {
        self.0.take().map(|s| now.saturating_sub(s).ticks())
    }

    /// Whether it is open.
    pub fn is_open(&self) -> bool {
        self.0.is_some()
    }

    /// Its length so far at `now`, in ticks (zero when closed), leaving it open.
    pub fn elapsed(&self, now: SimTime) -> u64 {
        self.0.map_or(0, |s| now.saturating_sub(s).ticks())
    }

    /// If open, starts it again at `now` (the time before no longer counts).
    pub fn restart(&mut self, now: SimTime) {
        if self.is_open() {
            self.0 = Some(now);
        }
    }
}

impl Add for SimTime {
    type Output = SimTime;
    fn add(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 + rhs.0)
    }
}

impl AddAssign for SimTime {
    fn add_assign(&mut self, rhs: SimTime) {
        self.0 += rhs.0;
    }
}

impl Sub for SimTime {
    type Output = SimTime;
    fn sub(self, rhs: SimTime) -> SimTime {
        SimTime(self.0 - rhs.0)
    }
}

impl fmt::Display for SimTime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:.3} ns", self.as_ns_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::phy::GENERATIONS;

    #[test]
    fn every_symbol_time_is_whole_ticks() {
        for gen in GENERATIONS {
            // One symbol (8 bits) per lane: 8 / efficiency bits of line time at gt_per_s.
            let ps = 8.0 / gen.encoding().efficiency() / gen.gt_per_s() * 1000.0;
            let ticks = ps * SimTime::TICKS_PER_PS as f64;
            assert_eq!(ticks.fract(), 0.0, "{gen}: {ps} ps");
        }
    }

    #[test]
    fn arithmetic_and_display() {
        let t = SimTime::from_ns(3) + SimTime::from_ps(500);
        assert_eq!(t.ticks(), 3500 * 64);
        assert_eq!(t.to_string(), "3.500 ns");
        assert_eq!(SimTime::ZERO.saturating_sub(t), SimTime::ZERO);
        assert!((SimTime::from_ns(1_000_000_000).as_secs_f64() - 1.0).abs() < 1e-15);
    }

    #[test]
    fn an_open_span_keeps_its_first_start_and_gives_its_length_once() {
        let ns = SimTime::from_ns;
        let mut span = OpenSpan::default();
        assert_eq!((span.close(ns(5)), span.elapsed(ns(5))), (None, 0));
        span.open(ns(10));
        span.open(ns(20)); // already open: still from 10 ns
        assert_eq!(span.elapsed(ns(30)), ns(20).ticks());
        span.restart(ns(25));
        assert_eq!(span.close(ns(30)), Some(ns(5).ticks()));
        assert!(!span.is_open());
        span.restart(ns(40)); // closed: stays closed
        assert_eq!(span.close(ns(50)), None);
    }
}
