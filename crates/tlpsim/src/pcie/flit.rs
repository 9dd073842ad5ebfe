//! Flit mode (mandatory at 64 and 128 GT/s): fixed 256-byte flits.
//!
//! Layout per PCI Express Base Specification Rev. 6.0 §4.2.3 (Flit Mode): 236 bytes of
//! TLP bytes, 6 bytes of DLP (Data Link Layer payload: Ack/Nak, flow-control updates),
//! 8 bytes of CRC and 6 bytes of FEC (3-way interleaved ECC). TLPs are packed back to
//! back across flits without per-TLP framing; idle TLP bytes are NOP TLPs; DLLP
//! traffic rides in the DLP bytes and so costs no TLP bytes.

/// Bytes in one flit.
pub const FLIT_BYTES: u32 = 256;
/// TLP bytes in one flit.
pub const FLIT_TLP_BYTES: u32 = 236;
/// Data Link Layer payload bytes in one flit.
pub const FLIT_DLP_BYTES: u32 = 6;
/// CRC bytes in one flit.
pub const FLIT_CRC_BYTES: u32 = 8;
/// FEC bytes in one flit.
pub const FLIT_FEC_BYTES: u32 = 6;

/// Fraction of a flit's bytes that carry TLPs (236 / 256).
pub fn tlp_fraction() -> f64 {
    FLIT_TLP_BYTES as f64 / FLIT_BYTES as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flit_parts_add_up() {
        assert_eq!(
            FLIT_TLP_BYTES + FLIT_DLP_BYTES + FLIT_CRC_BYTES + FLIT_FEC_BYTES,
            FLIT_BYTES
        );
    }
}
