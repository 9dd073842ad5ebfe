//! Transaction layer packets: kinds, header sizes, size rules and splitting.
//!
//! Header sizes: PCI Express Base Specification §2.2 (3 DW for 32-bit-address memory
//! requests and for completions, 4 DW for 64-bit-address memory requests and for
//! messages). Flit-mode header bases have the same sizes for these TLPs (§2.2.1.2,
//! without OHC). Lengths are in DW: a payload is carried in whole 4-byte words.

use crate::error::{ConfigError, Result};

/// The TLP kinds tlpsim models.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TlpKind {
    /// Memory write request (posted).
    MWr,
    /// Memory read request (non-posted).
    MRd,
    /// Completion with data.
    CplD,
    /// Completion without data.
    Cpl,
    /// Message without data.
    Msg,
    /// Message with data.
    MsgD,
}

/// Memory request addressing: 32-bit (3 DW header) or 64-bit (4 DW header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Addressing {
    /// 32-bit addresses, 3 DW memory request headers.
    A32,
    /// 64-bit addresses, 4 DW memory request headers.
    A64,
}

impl Addressing {
    /// The addressing with `bits` address bits (32 or 64).
    pub fn from_bits(bits: i64) -> Result<Self> {
        match bits {
            32 => Ok(Addressing::A32),
            64 => Ok(Addressing::A64),
            _ => Err(ConfigError::not_allowed(
                "addressing",
                bits,
                "32, 64 (bits)",
            )),
        }
    }

    /// Address bits (32 or 64).
    pub fn bits(self) -> u32 {
        match self {
            Addressing::A32 => 32,
            Addressing::A64 => 64,
        }
    }
}

/// Bytes in one DW.
pub const DW_BYTES: u32 = 4;
/// Bytes of an ECRC (TLP digest, or the flit-mode TLP trailer).
pub const ECRC_BYTES: u32 = 4;
/// Sizes allowed for Max_Payload_Size and Max_Read_Request_Size.
pub const SIZE_CHOICES: [u32; 6] = [128, 256, 512, 1024, 2048, 4096];
/// Read completion boundaries.
pub const RCB_CHOICES: [u32; 2] = [64, 128];

/// Header bytes of a TLP of `kind` (no prefixes, no OHC, no digest).
pub fn header_bytes(kind: TlpKind, addressing: Addressing) -> u32 {
    match kind {
        TlpKind::MWr | TlpKind::MRd => match addressing {
            Addressing::A32 => 12,
            Addressing::A64 => 16,
        },
        TlpKind::CplD | TlpKind::Cpl => 12,
        TlpKind::Msg | TlpKind::MsgD => 16,
    }
}

/// Payload bytes rounded up to whole DW, as they occupy the wire.
pub fn data_wire_bytes(payload: u32) -> u32 {
    payload.div_ceil(DW_BYTES) * DW_BYTES
}

/// Transaction-layer bytes of one TLP: header + data (whole DW) + optional ECRC.
pub fn tlp_bytes(kind: TlpKind, addressing: Addressing, payload: u32, ecrc: bool) -> u32 {
    header_bytes(kind, addressing) + data_wire_bytes(payload) + if ecrc { ECRC_BYTES } else { 0 }
}

/// Checks a Max_Payload_Size or Max_Read_Request_Size (`setting` names which).
pub fn check_size(setting: &'static str, bytes: i64) -> Result<u32> {
    if let Some(&b) = SIZE_CHOICES.iter().find(|&&b| b as i64 == bytes) {
        Ok(b)
    } else {
        Err(ConfigError::not_allowed(
            setting,
            bytes,
            "128, 256, 512, 1024, 2048, 4096 (bytes)",
        ))
    }
}

/// Checks a read completion boundary.
pub fn check_rcb(bytes: i64) -> Result<u32> {
    if let Some(&b) = RCB_CHOICES.iter().find(|&&b| b as i64 == bytes) {
        Ok(b)
    } else {
        Err(ConfigError::not_allowed("rcb", bytes, "64, 128 (bytes)"))
    }
}

/// Sizes of the pieces `total` bytes are cut into at `chunk` (all full, the last partial).
///
/// Transfers are taken to start on a `chunk`-aligned address, so no piece crosses a
/// chunk (or 4 KiB) boundary that an aligned transfer would not.
pub fn split(total: u64, chunk: u32) -> impl Iterator<Item = u32> {
    let chunk = chunk as u64;
    let full = total / chunk;
    let rest = total % chunk;
    (0..full)
        .map(move |_| chunk as u32)
        .chain((rest > 0).then_some(rest as u32))
}

/// Sum of `cost(piece)` over the pieces of [`split`]`(total, chunk)`, in constant time.
pub fn sum_over_split(total: u64, chunk: u32, cost: impl Fn(u32) -> f64) -> f64 {
    let full = total / chunk as u64;
    let rest = (total % chunk as u64) as u32;
    full as f64 * cost(chunk) + if rest > 0 { cost(rest) } else { 0.0 }
}

/// Number of pieces [`split`]`(total, chunk)` yields.
pub fn pieces(total: u64, chunk: u32) -> u64 {
    total.div_ceil(chunk as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seed_overheads() {
        // 64-byte MWr, 32-bit: 12 B header (+8 framing on the wire = the seeds' 20 B).
        assert_eq!(tlp_bytes(TlpKind::MWr, Addressing::A32, 64, false), 76);
        assert_eq!(tlp_bytes(TlpKind::MWr, Addressing::A64, 64, false), 80);
        assert_eq!(tlp_bytes(TlpKind::MWr, Addressing::A64, 64, true), 84);
        assert_eq!(tlp_bytes(TlpKind::CplD, Addressing::A64, 64, false), 76);
    }

    #[test]
    fn payload_rounds_up_to_dw() {
        assert_eq!(data_wire_bytes(1), 4);
        assert_eq!(data_wire_bytes(4), 4);
        assert_eq!(data_wire_bytes(5), 8);
    }

    #[test]
    fn split_conserves_bytes() {
        let parts: Vec<u32> = split(4096 + 100, 256).collect();
        assert_eq!(parts.len(), 17);
        assert_eq!(parts.iter().map(|&p| p as u64).sum::<u64>(), 4196);
        assert_eq!(*parts.last().unwrap(), 100);
        assert_eq!(split(0, 64).count(), 0);
        let direct: f64 = split(4196, 256).map(|p| p as f64 + 24.0).sum();
        assert_eq!(sum_over_split(4196, 256, |p| p as f64 + 24.0), direct);
        assert_eq!(pieces(4196, 256), 17);
    }

    #[test]
    fn bad_sizes_name_the_allowed_values() {
        let e = check_size("mps", 100).unwrap_err().to_string();
        assert!(e.contains("mps 100") && e.contains("128, 256"), "{e}");
        let e = check_rcb(32).unwrap_err().to_string();
        assert!(e.contains("rcb 32") && e.contains("64, 128"), "{e}");
        assert!(Addressing::from_bits(48).is_err());
    }
}
