//! The requester's Completion Timeout: how long a requester waits for the completions of a
//! non-posted request before it gives up on it, frees its tag and records the error.
//!
//! PCI Express Base Specification, Device Capabilities 2 register (Completion Timeout
//! Ranges Supported) and Device Control 2 register (Completion Timeout Value, bits 3:0, and
//! Completion Timeout Disable, bit 4). The four programmable ranges are
//!
//! | range | from | to |
//! |---|---|---|
//! | A | 50 us | 10 ms |
//! | B | 10 ms | 250 ms |
//! | C | 250 ms | 4 s |
//! | D | 4 s | 64 s |
//!
//! and the Completion Timeout Value encodes sub-ranges of them: 0001b 50-100 us and 0010b
//! 1-10 ms (A), 0101b 16-55 ms and 0110b 65-210 ms (B), 1001b 260-900 ms and 1010b
//! 1-3.5 s (C), 1101b 4-13 s and 1110b 17-64 s (D). 0000b, the value at reset and the only
//! one of a device without the optional programmability, is the default range, 50 us to
//! 50 ms. (Checked against Intel's 6 Series chipset datasheet, DCTL2, which lists the
//! specification range beside each encoding, and the Xeon C5500 datasheet, DEVCAP2, which
//! lists the ranges A to D.)
//!
//! A scenario gives the timeout as one duration (`completion_timeout = "50ms"`) anywhere in
//! the spec's span, 50 us to 64 s, or `"off"` for Completion Timeout Disable.

use crate::engine::SimTime;

/// The timeout of a requester whose section leaves it out: the top of the spec's default
/// range (Device Control 2 value 0000b, 50 us to 50 ms), the most a device that does not
/// implement the programmable ranges waits.
pub const DEFAULT: SimTime = SimTime::from_ns(50_000_000);

/// The shortest timeout the spec allows (the bottom of range A).
pub const SHORTEST: SimTime = SimTime::from_ns(50_000);

/// The longest timeout the spec allows (the top of range D).
pub const LONGEST: SimTime = SimTime::from_ns(64_000_000_000);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_is_the_top_of_the_default_range_and_within_the_spec_span() {
        assert!(SHORTEST < DEFAULT && DEFAULT < LONGEST);
        assert_eq!(DEFAULT.as_ns_f64(), 50e6);
        assert_eq!((SHORTEST.as_ns_f64(), LONGEST.as_ns_f64()), (50e3, 64e9));
    }
}
