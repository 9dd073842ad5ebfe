//! A workload's `rate`: the offered-load cap on a stream of a DMA or memcpy flow, or on an
//! fio job.
//!
//! Start-time pacing, as fio paces its `rate`: a request (a DMA or memcpy data request
//! TLP, an fio I/O) may start once the bytes its stream started before it would have
//! taken that long at the rate, counted from the run's start (`start_k >= bytes_before_k /
//! rate`). The cap is on the stream's average since the start, so the measurement window
//! after the warmup sees the rate; a stream that something else (its slots, tags,
//! credits) held behind that schedule catches up at full speed, as fio's jobs do. A stream
//! that cannot reach its rate is never held after its first requests, so a rate above what
//! the fabric carries leaves it as it would run without one.

use super::*;
use crate::fabric::WorkloadSpec;

/// The pacer of a DMA flow's read stream run directly (`flow`); also its first stream run
/// by engines.
pub(in crate::sim) const READS: usize = 0;
/// The pacer of a DMA flow's write stream run directly; also its second stream run by
/// engines (the writes of "both").
pub(in crate::sim) const WRITES: usize = 1;

/// Simulated ticks per second.
const TICKS_PER_S: f64 = SimTime::TICKS_PER_PS as f64 * 1e12;

/// One paced stream (a direction of a DMA or memcpy flow, or one fio job).
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Pacer {
    /// Ticks one byte takes at the rate.
    ticks_per_byte: f64,
    /// When (in ticks) the stream's next byte may start.
    next: f64,
    /// A wake-up is scheduled for when it may.
    woken: bool,
    /// Times it held the stream back while measuring.
    pub(in crate::sim) held: u64,
    /// An fio job's I/Os ready to be submitted but held back.
    pub(in crate::sim) waiting: u32,
}

impl Pacer {
    /// A stream of `rate` bytes per second, starting at time zero.
    pub(in crate::sim) fn new(rate: f64) -> Self {
        Pacer {
            ticks_per_byte: TICKS_PER_S / rate,
            next: 0.0,
            woken: false,
            held: 0,
            waiting: 0,
        }
    }

    /// Whether the stream may start its next request at `now`.
    pub(in crate::sim) fn ready(&self, now: SimTime) -> bool {
        self.next <= now.ticks() as f64
    }

    /// When the stream may start its next request (the first tick at or after it).
    pub(in crate::sim) fn due(&self) -> SimTime {
        SimTime::from_ticks(self.next.ceil() as u64)
    }

    /// The stream starts a request of `bytes` bytes (once [`Self::ready`]): the next may
    /// start once these would have taken their time at the rate.
    pub(in crate::sim) fn take(&mut self, bytes: u64) {
        self.next += bytes as f64 * self.ticks_per_byte;
    }

    /// The stream waits for its rate at `now`: the time to wake it, unless a wake-up is
    /// already on its way (counting the hold while `measuring`).
    pub(in crate::sim) fn hold(&mut self, measuring: bool) -> Option<SimTime> {
        if measuring {
            self.held += 1;
        }
        if self.woken {
            return None;
        }
        self.woken = true;
        Some(self.due())
    }

    /// Its wake-up fired.
    pub(in crate::sim) fn woke(&mut self) {
        self.woken = false;
    }
}

/// The pacers of workload `w`: one per fio job, or for a DMA or memcpy flow one per stream
/// (index 0 its reads or its only stream run by engines, 1 its writes or second stream);
/// none without a `rate`.
pub(in crate::sim) fn pacers(w: &WorkloadSpec) -> Vec<Pacer> {
    let Some(rate) = w.rate else {
        return Vec::new();
    };
    let streams = w.kind.fio().map_or(2, |f| f.numjobs as usize);
    vec![Pacer::new(rate); streams]
}

/// The bytes per second a workload with `rate` moves at most: the rate times its streams
/// (its jobs, for fio), for the verdict.
pub(in crate::sim) fn cap(w: &WorkloadSpec, rate: f64) -> f64 {
    let streams = match w.kind.fio() {
        Some(f) => f.numjobs as f64,
        None if w.direction == DmaDirection::Both => 2.0,
        None => 1.0,
    };
    rate * streams
}

impl Simulator<'_> {
    /// Stream `s` of flow `f` waits for its rate: schedules its wake-up if it has none.
    pub(in crate::sim) fn pace_hold(&mut self, f: u32, s: usize) {
        let measuring = self.window.measuring;
        if let Some(at) = self.work.flows[f as usize].pace[s].hold(measuring) {
            self.q.schedule(
                at,
                Ev::Pace {
                    flow: f,
                    stream: s as u32,
                },
            );
        }
    }

    /// Stream `s` of flow `f` may go on (`Ev::Pace`): an fio job submits the I/Os it held,
    /// a DMA flow's direct stream issues (`s` 0 its reads, 1 its writes).
    pub(in crate::sim) fn pace_woken(&mut self, f: u32, s: usize) {
        self.work.flows[f as usize].pace[s].woke();
        match self.sys.workloads[f as usize].kind.driver() {
            Driver::FioJobs => {
                let n = self.sys.workloads[f as usize].source;
                AnyNode::paced(self, n, f, s as u32);
            }
            Driver::Streams | Driver::Frames => {
                // Outside its requester's handlers: the requester is in its slot.
                let rq = &mut Requester::InSlot(self.work.flows[f as usize].source as usize);
                if s == READS {
                    self.issue_reads(rq, f);
                } else {
                    self.fill_writes(rq, f);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_start_on_the_rate_schedule() {
        // 1 GB/s: 1000 B take 1 us.
        let mut p = Pacer::new(1e9);
        assert!(p.ready(SimTime::ZERO));
        p.take(1000);
        assert!(!p.ready(SimTime::from_ns(999)));
        assert_eq!(p.due(), SimTime::from_ns(1000));
        p.take(1000);
        assert_eq!(p.due(), SimTime::from_ns(2000));
        // 400 Gb/s: a 256 B TLP every 5.12 ns, a million of them in 5.12 ms to the tick.
        let mut n = Pacer::new(400e9 / 8.0);
        for _ in 0..1_000_000 {
            n.take(256);
        }
        assert_eq!(n.due(), SimTime::from_ns(5_120_000));
    }

    #[test]
    fn a_stream_behind_its_schedule_catches_up() {
        let mut p = Pacer::new(1e9);
        p.take(1000);
        // Held elsewhere until 10 us: the 9 us of bytes it is behind may start at once.
        let late = SimTime::from_ns(10_000);
        let mut started = 0;
        while p.ready(late) {
            p.take(1000);
            started += 1;
        }
        assert_eq!(started, 10);
        assert_eq!(p.due(), late + SimTime::from_ns(1000));
    }

    #[test]
    fn a_hold_wakes_once_at_the_due_time() {
        let mut p = Pacer::new(1e9);
        p.take(500);
        assert_eq!(p.hold(true), Some(SimTime::from_ns(500)));
        assert_eq!(p.hold(true), None);
        p.woke();
        assert_eq!(p.hold(false), Some(SimTime::from_ns(500)));
        assert_eq!(p.held, 2);
    }
}
