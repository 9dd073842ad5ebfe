//! A bandwidth-limited resource that data passes through in order: a root complex's memory
//! and posted-write sink, a host bridge, a switch's shared bus, one side of a storage media.

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
    /// the resource frees (service booked to start later, such as memory reads booked at
    /// their latency, makes this short by at most that lead at each end of a window).
    pub(in crate::sim) fn busy_by(&self, t: SimTime) -> u64 {
        self.busy
            .saturating_sub(self.free_at.saturating_sub(t).ticks())
    }

    /// Passes `bytes` arriving at `t`; returns when the first byte enters and the last is through.
    pub(in crate::sim) fn pass_span(&mut self, t: SimTime, bytes: u32) -> (SimTime, SimTime) {
        let start = t.max(self.free_at);
        let service = (bytes as f64 * self.ticks_per_byte).round() as u64;
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
