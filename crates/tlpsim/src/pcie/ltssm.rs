//! Link retraining: the time a link spends in the LTSSM's Recovery state when its data link
//! layer directs it there (REPLAY_NUM rolled over: see [`super::dll::transmit`]).
//!
//! The default is the shortest Recovery the PCI Express Base Specification's rules allow
//! without a speed or width change (Physical Layer Logical Block, LTSSM "Recovery" substates,
//! §4.2.6.4 from Rev. 3.0 on):
//! - Recovery.RcvrLock: on to Recovery.RcvrCfg after receiving 8 consecutive TS1 (or TS2)
//!   ordered sets;
//! - Recovery.RcvrCfg: on to Recovery.Idle after receiving 8 consecutive TS2 ordered sets
//!   and sending 16 TS2 after receiving the first;
//! - Recovery.Idle: a few Idle symbols (8b/10b) or an SDS and Idle data (128b/130b and
//!   flit mode), shorter than one more ordered set; counted as one.
//!
//! That is 8 + 16 + 1 = 25 ordered sets of 16 symbols per lane each (a TS1/TS2 is 16
//! symbols in 8b/10b, one 16-symbol block in 128b/130b, 16 bytes per lane in 1b/1b flit
//! mode), plus one round trip of the link (each side waits for the other's ordered sets).
//! At 2.5 GT/s: 25 × 16 × 4 ns = 1.6 us; at 8 GT/s 406 ns; at 32 GT/s 102 ns. Real
//! receivers add their own bit-lock and equalization time on top of this minimum: a link's
//! `recovery` scenario key sets a measured figure instead.

use super::phy::Generation;
use super::wire::symbol_ticks;
use crate::engine::SimTime;

/// Ordered sets the shortest Recovery sends (see the module documentation).
pub const RECOVERY_ORDERED_SETS: u64 = 25;

/// Symbols per lane of one TS1/TS2 ordered set.
pub const TS_SYMBOLS: u64 = 16;

/// The shortest time in Recovery at `gen` on a link with one-way `propagation` delay.
pub fn recovery_time(gen: Generation, propagation: SimTime) -> SimTime {
    SimTime::from_ticks(RECOVERY_ORDERED_SETS * TS_SYMBOLS * symbol_ticks(gen))
        + propagation
        + propagation
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovery_is_25_ordered_sets_plus_a_round_trip() {
        let ns = SimTime::from_ns;
        assert_eq!(recovery_time(Generation::Gen1, SimTime::ZERO), ns(1600));
        assert_eq!(recovery_time(Generation::Gen2, SimTime::ZERO), ns(800));
        // 16 symbols of 8 × 130/128 bits at 8 GT/s: 16.25 ns per ordered set.
        assert_eq!(
            recovery_time(Generation::Gen3, SimTime::ZERO),
            SimTime::from_ps(406_250)
        );
        // 32 GT/s: 101.5625 ns, and 50 ns of propagation each way.
        assert_eq!(
            recovery_time(Generation::Gen5, ns(50)),
            ns(100) + SimTime::from_ticks(6_500_000)
        );
    }
}
