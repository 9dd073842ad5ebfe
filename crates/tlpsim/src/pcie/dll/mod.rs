//! Data link layer: TLP framing, DLLPs, the Ack / UpdateFC latency timers, and the two
//! ends' state machines: [`transmit`] (sequence numbers, replay buffer, replay timer) and
//! [`receive`] (next expected sequence number, Ack and Nak).
//!
//! Timer values come from the PCI Express Base Specification:
//! - Ack latency limits: Rev. 6.3 Tables 3-10 (2.5 GT/s), 3-11 (5.0 GT/s) and 3-12
//!   (8.0 GT/s and higher), in symbol times, for x1–x16 and Rx_MPS_Limit 128–4096.
//! - The same values follow from the formula of Rev. 1.1 §3.5.3.1 and its UpdateFC
//!   counterpart (Rev. 1.1 §2.6.1.2, "UpdateFC Transmission Latency Guidelines"):
//!   `((MaxPayloadSize + TLPOverhead) × AckFactor / LinkWidth) + InternalDelay`, with
//!   TLPOverhead = 28 symbols and InternalDelay = 19, 70 or 115 symbol times at 2.5, 5.0 and
//!   8.0+ GT/s, truncated to whole symbol times. AckFactor (= UpdateFactor) is Rev. 1.1
//!   Table 3-7's: 1.4 for x1–x4, 2.5 for x8, 3.0 for x12–x32 at MPS 128/256; 1.0 for
//!   x1–x8 and 2.0 for x12–x32 at MPS 512 and above. x12 and x32 come from that
//!   formula (later revisions dropped them from the tables).
//!
//! A symbol time is the time one lane takes to send one symbol (one byte after
//! encoding); during one symbol time an xN link carries N bytes. The timers are per
//! lane, so an interval of T symbol times is T × N bytes of link capacity, not T bytes.

pub mod receive;
pub mod transmit;

use super::flow_control::FcClass;
use super::phy::Generation;

/// A DLLP and what it carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dllp {
    /// Everything up to and including this sequence number arrived.
    Ack(u64),
    /// The TLP after this sequence number arrived corrupted: replay from there.
    Nak(u64),
    /// Cumulative credits allocated for a class: (headers, data units).
    UpdateFc(FcClass, u64, u64),
}

/// Bytes of framing a non-flit TLP carries on the wire.
///
/// Gen1/2: STP 1 + sequence number 2 + LCRC 4 + END 1. Gen3–5: STP token 4 (carries the
/// sequence number and length) + LCRC 4. Eight bytes either way.
pub const TLP_FRAMING_BYTES: u32 = 8;

/// Bytes of one DLLP on the wire in non-flit mode.
///
/// Gen1/2: SDP 1 + 4 + CRC 2 + END 1. Gen3–5: SDP token 2 + 4 + CRC 2.
pub const DLLP_BYTES: u32 = 8;

/// TLPOverhead term of the Ack/UpdateFC timer formula, in symbols.
pub const TIMER_TLP_OVERHEAD_SYMBOLS: u32 = 28;

/// InternalDelay term of the Ack/UpdateFC timer formula, in symbol times.
pub fn internal_delay_symbols(gen: Generation) -> u32 {
    match gen {
        Generation::Gen1 => 19,
        Generation::Gen2 => 70,
        _ => 115,
    }
}

/// AckFactor (equal to UpdateFactor) in tenths, by MPS and link width.
fn ack_factor_tenths(mps: u32, width: u32) -> u32 {
    match (mps <= 256, width) {
        (true, 1..=4) => 14,
        (true, 8) => 25,
        (true, _) => 30,
        (false, 1..=8) => 10,
        (false, _) => 20,
    }
}

/// Ack latency limit (AckNak_LATENCY_TIMER threshold) in symbol times.
///
/// `mps` is the receiver's Rx_MPS_Limit in bytes, `width` the operating lane count.
pub fn ack_latency_symbols(gen: Generation, width: u32, mps: u32) -> u32 {
    (mps + TIMER_TLP_OVERHEAD_SYMBOLS) * ack_factor_tenths(mps, width) / (10 * width)
        + internal_delay_symbols(gen)
}

/// UpdateFC transmission latency guideline in symbol times (same formula and factors as Ack).
pub fn update_fc_latency_symbols(gen: Generation, width: u32, mps: u32) -> u32 {
    ack_latency_symbols(gen, width, mps)
}

/// What one direction of a link carries besides TLPs, as a fraction of its byte capacity.
///
/// `dllps_per_interval` DLLPs (e.g. one Ack and one UpdateFC) are sent once per timer
/// interval of T symbol times, i.e. per `T × width` bytes of link capacity.
pub fn spec_dllp_fraction(gen: Generation, width: u32, mps: u32, dllps_per_interval: u32) -> f64 {
    let interval_bytes = ack_latency_symbols(gen, width, mps) as f64 * width as f64;
    (DLLP_BYTES * dllps_per_interval) as f64 / interval_bytes
}

#[cfg(test)]
mod tests {
    use super::*;
    use Generation::*;

    /// PCIe Base Spec Rev. 6.3 Tables 3-10, 3-11, 3-12 (rows MPS 128..4096, columns x1, x2, x4, x8, x16).
    const SPEC_TABLES: [(Generation, [[u32; 5]; 6]); 3] = [
        (
            Gen1,
            [
                [237, 128, 73, 67, 48],
                [416, 217, 118, 107, 72],
                [559, 289, 154, 86, 86],
                [1071, 545, 282, 150, 150],
                [2095, 1057, 538, 278, 278],
                [4143, 2081, 1050, 534, 534],
            ],
        ),
        (
            Gen2,
            [
                [288, 179, 124, 118, 99],
                [467, 268, 169, 158, 123],
                [610, 340, 205, 137, 137],
                [1122, 596, 333, 201, 201],
                [2146, 1108, 589, 329, 329],
                [4194, 2132, 1101, 585, 585],
            ],
        ),
        (
            Gen3,
            [
                [333, 224, 169, 163, 144],
                [512, 313, 214, 203, 168],
                [655, 385, 250, 182, 182],
                [1167, 641, 378, 246, 246],
                [2191, 1153, 634, 374, 374],
                [4239, 2177, 1146, 630, 630],
            ],
        ),
    ];

    #[test]
    fn formula_reproduces_every_cell_of_the_spec_tables() {
        let mpss = [128, 256, 512, 1024, 2048, 4096];
        let widths = [1, 2, 4, 8, 16];
        for (gen, table) in SPEC_TABLES {
            for (r, mps) in mpss.iter().enumerate() {
                for (c, w) in widths.iter().enumerate() {
                    assert_eq!(
                        ack_latency_symbols(gen, *w, *mps),
                        table[r][c],
                        "{gen} x{w} MPS {mps}"
                    );
                }
            }
        }
    }

    #[test]
    fn rev11_x12_and_x32_cells() {
        // Rev. 1.1 Table 3-7, 2.5 GT/s: x12 MPS128 = 58, x32 MPS128 = 33, x12 MPS512 = 109.
        assert_eq!(ack_latency_symbols(Gen1, 12, 128), 58);
        assert_eq!(ack_latency_symbols(Gen1, 32, 128), 33);
        assert_eq!(ack_latency_symbols(Gen1, 12, 512), 109);
    }

    #[test]
    fn gen1_x8_mps128_ack_plus_updatefc_is_a_few_percent_not_a_quarter() {
        let f = spec_dllp_fraction(Gen1, 8, 128, 2);
        // 16 bytes per 67 symbol times x 8 lanes = 536 bytes.
        assert!((f - 16.0 / 536.0).abs() < 1e-12);
        assert!(f < 0.05, "{f}");
        // The bytes-for-symbols mistake divides by the table value as if it were bytes:
        // 16/67, about 24 %, eight times (the width) what the spec implies.
        let mistaken = 16.0 / ack_latency_symbols(Gen1, 8, 128) as f64;
        assert!(mistaken > 0.2);
        assert!((mistaken / f - 8.0).abs() < 1e-9);
    }
}
