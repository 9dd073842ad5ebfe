//! Wire timing of one direction of a link: serialization, SKP ordered sets, flit packing.
//!
//! The simulator's counterpart of the closed form's capacity: a packet of N bytes
//! occupies the wire for N / width symbol times (N × 256 / 236 / width in flit mode,
//! where only 236 of each flit's 256 bytes carry TLPs). Time is integer ticks; the
//! fraction of a tick left over by one packet is carried into the next, so a saturated
//! wire's long-run rate is exact. SKP ordered sets that fall due during a packet (the data
//! time since the last one reaching the spec's interval) are sent after it, as many as fell
//! due; the excess carries over, so the long-run share of SKP equals
//! [`Encoding::skp_fraction`].

use super::flit;
use super::phy::{Encoding, Generation};
use crate::engine::SimTime;

/// Ticks (1/64 ps) of one symbol time at `gen`: 8 bits per lane after line encoding.
///
/// 2.5 GT/s: 10 bits / 2.5 GT/s = 4 ns; 8 GT/s: 8 × 130/128 bits / 8 GT/s = 1.015625 ns;
/// 64 GT/s (1b/1b): 8 bits / 64 GT/s = 125 ps; the others scale with the rate.
pub fn symbol_ticks(gen: Generation) -> u64 {
    match gen {
        Generation::Gen1 => 256_000,
        Generation::Gen2 => 128_000,
        Generation::Gen3 => 65_000,
        Generation::Gen4 => 32_500,
        Generation::Gen5 => 16_250,
        Generation::Gen6 => 8_000,
        Generation::Gen7 => 4_000,
    }
}

/// (data symbol times between SKP ordered sets, symbol times of one SKP ordered set).
fn skp_schedule(encoding: Encoding) -> (u64, u64) {
    match encoding {
        // 4 symbols (COM + 3 SKP) in every 1180 symbol times.
        Encoding::E8b10b => (1176, 4),
        // One 16-symbol block after 370 data blocks of 16 symbols.
        Encoding::E128b130b | Encoding::E1b1b => (370 * 16, 16),
    }
}

/// One transmitting direction of a link.
#[derive(Debug, Clone)]
pub struct Wire {
    /// Ticks per byte = num / den.
    num: u64,
    den: u64,
    /// Sub-tick remainder carried from the last packet, in 1/den ticks.
    carry: u64,
    free_at: SimTime,
    /// (data ticks between SKP ordered sets, ticks of one), when SKP is on.
    skp: Option<(u64, u64)>,
    data_ticks_since_skp: u64,
    busy_ticks: u64,
    skp_ticks: u64,
    bytes: u64,
}

impl Wire {
    /// A wire of `width` lanes at `gen`; `flit` packs TLP bytes into flits; `skp` inserts SKP sets.
    ///
    /// `width` must be a checked lane count (see [`super::phy::check_width`]).
    pub fn new(gen: Generation, width: u32, flit: bool, skp: bool) -> Self {
        assert!(width > 0, "Wire::new needs a checked, non-zero width");
        let sym = symbol_ticks(gen);
        let (num, den) = if flit {
            (
                sym * flit::FLIT_BYTES as u64,
                width as u64 * flit::FLIT_TLP_BYTES as u64,
            )
        } else {
            (sym, width as u64)
        };
        let skp = skp.then(|| {
            let (interval, length) = skp_schedule(gen.encoding());
            (interval * sym, length * sym)
        });
        Wire {
            num,
            den,
            carry: 0,
            free_at: SimTime::ZERO,
            skp,
            data_ticks_since_skp: 0,
            busy_ticks: 0,
            skp_ticks: 0,
            bytes: 0,
        }
    }

    /// When the wire can start the next packet.
    pub fn free_at(&self) -> SimTime {
        self.free_at
    }

    /// Sends `bytes` starting no earlier than `now`; returns (start, end of the last byte).
    ///
    /// The wire is then busy until the returned end, plus an SKP ordered set if one fell due.
    #[inline(always)]
    pub fn send(&mut self, now: SimTime, bytes: u32) -> (SimTime, SimTime) {
        let start = now.max(self.free_at);
        let total = bytes as u64 * self.num + self.carry;
        // Lane counts are mostly powers of two: a shift instead of a division there.
        let (ticks, carry) = if self.den.is_power_of_two() {
            let shift = self.den.trailing_zeros();
            (total >> shift, total & (self.den - 1))
        } else {
            (total / self.den, total % self.den)
        };
        self.carry = carry;
        let end = start + SimTime::from_ticks(ticks);
        self.busy_ticks += ticks;
        self.bytes += bytes as u64;
        self.free_at = end;
        if let Some((interval, length)) = self.skp {
            // Every SKP ordered set that fell due during the packet goes out after it.
            self.data_ticks_since_skp += ticks;
            // A packet is far shorter than the interval: at most one falls due, as a rule.
            let mut due = 0;
            while self.data_ticks_since_skp >= interval {
                self.data_ticks_since_skp -= interval;
                due += 1;
            }
            self.skp_ticks += due * length;
            self.busy_ticks += due * length;
            self.free_at = end + SimTime::from_ticks(due * length);
        }
        (start, end)
    }

    /// Sends nothing until `until` (the link retrains: only ordered sets go meanwhile, not
    /// counted as busy); a packet under way still ends first.
    pub fn hold_until(&mut self, until: SimTime) {
        self.free_at = self.free_at.max(until);
    }

    /// Bytes sent so far.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Ticks the wire has been busy (packets and SKP ordered sets).
    pub fn busy_ticks(&self) -> u64 {
        self.busy_ticks
    }

    /// Ticks spent on SKP ordered sets.
    pub fn skp_ticks(&self) -> u64 {
        self.skp_ticks
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytic::{DllpPolicy, LinkRequest};
    use crate::pcie::phy::GENERATIONS;

    /// Back-to-back write TLPs of `payload` bytes (MPS-sized): simulated payload rate.
    fn saturated_write_gbps(gen: u32, width: u32, payload: u32, skp: bool) -> (f64, f64) {
        let req = LinkRequest {
            gen: gen as i64,
            width: width as i64,
            mps: payload as i64,
            payload: Some(payload as i64),
            dllp: DllpPolicy::None,
            skp,
            ..LinkRequest::default()
        };
        let bw = req.check().unwrap().bandwidth();
        let g = GENERATIONS[gen as usize - 1];
        let mut wire = Wire::new(g, width, bw.flit, skp);
        let n = 40_000u64;
        let mut end = SimTime::ZERO;
        for _ in 0..n {
            end = wire.send(SimTime::ZERO, bw.tlp_wire_bytes as u32).1;
        }
        let sim = (n * payload as u64) as f64 * 8.0 / end.as_secs_f64() / 1e9;
        (sim, bw.write_gbps)
    }

    #[test]
    fn saturated_wire_matches_the_closed_form() {
        for gen in 1..=7 {
            for width in [1, 4, 8, 16, 32] {
                for payload in [128, 256, 512, 2048, 4096] {
                    for skp in [false, true] {
                        let (sim, closed) = saturated_write_gbps(gen, width, payload, skp);
                        let rel = (sim - closed).abs() / closed;
                        // Without SKP the only error is the final sub-tick carry; with SKP,
                        // at most one SKP interval's quantisation over the run.
                        let tol = if skp { 1e-4 } else { 1e-6 };
                        assert!(
                            rel < tol,
                            "Gen{gen} x{width} {payload} B skp={skp}: {sim} vs {closed}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn packets_queue_behind_each_other() {
        let mut wire = Wire::new(Generation::Gen1, 1, false, false);
        let (s1, e1) = wire.send(SimTime::ZERO, 10);
        let (s2, _) = wire.send(SimTime::ZERO, 10);
        assert_eq!(s1, SimTime::ZERO);
        assert_eq!(e1, SimTime::from_ns(40));
        assert_eq!(s2, e1);
        // An idle gap is not filled.
        let (s3, _) = wire.send(SimTime::from_ns(1000), 1);
        assert_eq!(s3, SimTime::from_ns(1000));
    }
}
