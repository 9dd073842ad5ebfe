//! Transaction layer packets: kinds, header sizes, size rules and splitting.
//!
//! Header sizes: PCI Express Base Specification §2.2 (3 DW for 32-bit-address memory
//! requests and for completions, 4 DW for 64-bit-address memory requests and for
//! messages). Flit-mode header bases have the same sizes for these TLPs (§2.2.1.2,
//! without OHC). Lengths are in DW: a payload is carried in whole 4-byte words.

use crate::error::{ConfigError, Result};
use crate::pcie::flow_control::FcClass;

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

impl TlpKind {
    /// The flow-control class its TLPs take credits of (and are ordered by).
    #[inline(always)]
    pub fn class(self) -> FcClass {
        match self {
            TlpKind::MWr | TlpKind::Msg | TlpKind::MsgD => FcClass::Posted,
            TlpKind::MRd => FcClass::NonPosted,
            TlpKind::CplD | TlpKind::Cpl => FcClass::Completion,
        }
    }
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

/// Bytes the data of a TLP whose first data byte is at address `addr` occupies on the wire:
/// the whole DWs from the one holding its first byte to the one holding its last (the
/// Length field counts DWs; the First and Last DW Byte Enables mark the bytes used, PCIe
/// Base Specification §2.2.5). A 65-byte write at a DW-aligned address and a 64-byte write
/// at an address 1 past one are both 17 DW (68 bytes); a TLP with no data has none.
#[inline(always)]
pub fn data_wire_bytes_at(addr: u64, payload: u32) -> u32 {
    if payload == 0 {
        return 0;
    }
    ((addr as u32 & (DW_BYTES - 1)) + payload).div_ceil(DW_BYTES) * DW_BYTES
}

/// Transaction-layer bytes of one TLP: header + data (whole DW) + optional ECRC.
pub fn tlp_bytes(kind: TlpKind, addressing: Addressing, payload: u32, ecrc: bool) -> u32 {
    header_bytes(kind, addressing) + data_wire_bytes(payload) + if ecrc { ECRC_BYTES } else { 0 }
}

/// [`tlp_bytes`] of a TLP whose data starts at address `addr` (see [`data_wire_bytes_at`]).
#[inline(always)]
pub fn tlp_bytes_at(
    kind: TlpKind,
    addressing: Addressing,
    addr: u64,
    payload: u32,
    ecrc: bool,
) -> u32 {
    header_bytes(kind, addressing)
        + data_wire_bytes_at(addr, payload)
        + if ecrc { ECRC_BYTES } else { 0 }
}

/// No memory request may cross a multiple of this address (PCIe Base Specification §2.2.7:
/// "Requests must not specify an Address/Length combination which causes a Memory Space
/// access to cross a 4-KB boundary").
pub const REQUEST_BOUNDARY: u64 = 4096;

/// Bytes of the next request TLP (MWr data or MRd length) of a transfer whose next byte is
/// at address `addr`, with `left` bytes to go: at most `max` (MPS or a smaller TLP payload
/// for writes, MRRS for reads), cut from the transfer's start, and never across a 4 KiB
/// boundary ([`REQUEST_BOUNDARY`]). `max` bounds the Length field, which counts whole DWs
/// from the DW of the first byte: a piece starting `addr % 4` bytes into its DW is that much
/// shorter. At an address that is a multiple of `max` (a power of two), every piece but the
/// last is `max` bytes, as [`split`] cuts.
#[inline(always)]
pub fn request_piece(addr: u64, left: u64, max: u32) -> u32 {
    let to_boundary = REQUEST_BOUNDARY - (addr & (REQUEST_BOUNDARY - 1));
    let in_dw = addr & 3;
    left.min(max as u64 - in_dw).min(to_boundary) as u32
}

/// How many pieces of `max` bytes [`request_piece`] cuts in a row, before the next 4 KiB
/// boundary, from a transfer whose next byte is at `addr` with `left` bytes to go (none
/// from an address inside a DW).
#[inline]
pub fn full_pieces(addr: u64, left: u64, max: u32) -> u64 {
    if addr & 3 != 0 || max & 3 != 0 {
        return 0;
    }
    let to_boundary = REQUEST_BOUNDARY - (addr & (REQUEST_BOUNDARY - 1));
    left.min(to_boundary) / max as u64
}

/// Bytes of the next completion of a read request whose next byte is at address `addr`,
/// with `left` bytes to go: at most `max` (the completer's completion size, a multiple of
/// `rcb`), ending on a multiple of the read completion boundary `rcb` unless it is the
/// last (PCIe Base Specification §2.3.1.1: a request completed by several completions is
/// split at RCB-aligned addresses). At an RCB-aligned address every piece but the last is
/// `max` bytes, as [`split`] cuts.
#[inline(always)]
pub fn completion_piece(addr: u64, left: u32, max: u32, rcb: u32) -> u32 {
    let end = (addr + max as u64) & !(rcb as u64 - 1);
    let piece = if end > addr { end - addr } else { max as u64 };
    (left as u64).min(piece) as u32
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
/// For a transfer that starts on a `chunk`-aligned address (the closed form's, a NIC's
/// frame buffers); [`request_piece`] and [`completion_piece`] cut from a real address.
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
    fn full_pieces_counts_the_pieces_of_max_bytes_before_the_next_boundary() {
        let mut rng = crate::engine::rng::Rng::new(7);
        for _ in 0..20_000 {
            let max = [4u32, 8, 64, 100, 102, 128, 256, 4096][rng.below(8) as usize];
            let (mut addr, mut left) = (rng.below(1 << 20), 1 + rng.below(20_000));
            let n = full_pieces(addr, left, max);
            let boundary = (addr / REQUEST_BOUNDARY + 1) * REQUEST_BOUNDARY;
            let mut run = 0;
            while left > 0 && request_piece(addr, left, max) == max && addr + max as u64 <= boundary
            {
                run += 1;
                addr += max as u64;
                left -= max as u64;
            }
            // A `max` that is no whole number of DWs is never counted (its second piece
            // starts inside a DW).
            assert_eq!(n, if max % 4 == 0 { run } else { 0 });
        }
    }

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
    fn data_rounds_to_whole_dws_from_its_address() {
        assert_eq!(data_wire_bytes_at(0, 64), 64);
        assert_eq!(data_wire_bytes_at(0, 65), 68);
        assert_eq!(data_wire_bytes_at(1, 64), 68);
        assert_eq!(data_wire_bytes_at(3, 1), 4);
        assert_eq!(data_wire_bytes_at(3, 2), 8);
        assert_eq!(data_wire_bytes_at(0, 63), 64);
        assert_eq!(data_wire_bytes_at(5, 0), 0);
        for p in 0..300 {
            assert_eq!(data_wire_bytes_at(0, p), data_wire_bytes(p));
            assert_eq!(data_wire_bytes_at(4096, p), data_wire_bytes(p));
        }
        assert_eq!(
            tlp_bytes_at(TlpKind::MWr, Addressing::A64, 1, 64, false),
            tlp_bytes(TlpKind::MWr, Addressing::A64, 65, false)
        );
    }

    #[test]
    fn requests_never_cross_4_kib() {
        // A 4 KiB read at offset 64 with MRRS 4096: two requests, the first to the boundary.
        assert_eq!(request_piece(64, 4096, 4096), 4032);
        assert_eq!(request_piece(4096, 64, 4096), 64);
        // Cut from the transfer's start, not at multiples of the maximum.
        assert_eq!(request_piece(8, 128, 128), 128);
        assert_eq!(request_piece(4000, 200, 128), 96);
        // The Length field counts DWs from the first byte's DW: from byte 3 of a DW, 128 B
        // of Length carry 125 B.
        assert_eq!(request_piece(123, 126, 128), 125);
        assert_eq!(request_piece(4095, 300, 128), 1);
        // At aligned addresses, what `split` cuts.
        for (total, max) in [(4196u64, 256u32), (8192, 512), (100, 128), (1 << 20, 4096)] {
            let (mut addr, mut left, mut pieces) = (0u64, total, Vec::new());
            while left > 0 {
                let p = request_piece(addr, left, max);
                pieces.push(p);
                addr += p as u64;
                left -= p as u64;
            }
            assert_eq!(pieces, split(total, max).collect::<Vec<_>>());
        }
    }

    #[test]
    fn completions_end_on_rcb_boundaries() {
        // RCB-sized completions of 256 B at offset 1: 63, 64, 64, 64, 1.
        let (mut addr, mut left, mut pieces) = (1u64, 256u32, Vec::new());
        while left > 0 {
            let p = completion_piece(addr, left, 64, 64);
            pieces.push(p);
            addr += p as u64;
            left -= p;
        }
        assert_eq!(pieces, [63, 64, 64, 64, 1]);
        // MPS-sized (256) completions, RCB 64, from offset 32: 224, then 256, then the rest.
        assert_eq!(completion_piece(32, 600, 256, 64), 224);
        assert_eq!(completion_piece(256, 376, 256, 64), 256);
        assert_eq!(completion_piece(512, 120, 256, 64), 120);
        // At an aligned address: what `split` cuts.
        assert_eq!(completion_piece(0, 1000, 256, 128), 256);
        assert_eq!(completion_piece(0, 100, 256, 128), 100);
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
