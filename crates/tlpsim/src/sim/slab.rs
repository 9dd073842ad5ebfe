//! One TLP in the simulator's slab: its kind, ends, sizes, address, timing and owner.

use super::channel::FcClass;
use super::NONE;
use crate::engine::SimTime;
use crate::pcie::tlp::TlpKind;

/// One TLP in the slab.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Tlp {
    pub(in crate::sim) kind: TlpKind,
    pub(in crate::sim) src: u32,
    pub(in crate::sim) dst: u32,
    /// Data bytes (MWr, CplD).
    pub(in crate::sim) payload: u32,
    /// Bytes requested (MRd).
    pub(in crate::sim) length: u32,
    /// The address of its first byte (MWr, MRd: in the target's memory; CplD: of the data
    /// it returns), as an offset into its workload's buffer, which starts on a 4 KiB
    /// boundary (only its place relative to 4 KiB pages, RCBs and DWs matters to the
    /// fabric; windows stay below 4 GiB).
    pub(in crate::sim) addr: u32,
    /// Posted: order within its stream (a flow's writes; a doorbell and its MSI carry the
    /// order of the last write they signal). CplD: byte offset within its request.
    pub(in crate::sim) order: u64,
    /// When its first byte left the source.
    pub(in crate::sim) born: SimTime,
    /// Channel it arrived on at the node holding it (NONE at its source).
    pub(in crate::sim) ingress: u32,
    pub(in crate::sim) live: bool,
    /// Bytes of its first data DW before its first byte: its address modulo 4 if it carries
    /// data (set where a data TLP is made at an address, see [`Tlp::data_at`]), else 0. Its
    /// data occupies `payload + dw_lead` bytes rounded up to whole DWs (see
    /// [`crate::pcie::tlp::data_wire_bytes_at`]).
    pub(in crate::sim) dw_lead: u8,
    /// A cut-through switch's copy of a TLP whose LCRC turned out bad after the switch had
    /// begun sending it on: it ends with EDB and an inverted LCRC and the receiver drops it
    /// (`born` = when the bad original's last byte reached the switch). Never counted by the
    /// audit: the original is replayed and forwarded again.
    pub(in crate::sim) nullified: bool,
    /// The TLP the same Enqueue event queues after this one (NONE: the last).
    pub(in crate::sim) next: u32,
    /// Whose transaction it is, and what it is to that node.
    pub(in crate::sim) owner: Owner,
}

/// The node whose transaction a TLP is (the requester of a read, and of its completions;
/// the writer of a posted write) and a cookie that only that node's module decodes (a DMA
/// flow's request slot; a NIC's purpose, port and slot; ...). The fabric and the targets
/// never look inside: they tell the owner, through `node::Node`, that its TLP left its
/// source or took effect at its target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) struct Owner {
    /// The owning node's index.
    pub(in crate::sim) node: u32,
    /// What the TLP is to its owner, in the owner's own encoding.
    pub(in crate::sim) cookie: u32,
}

// The slab's entries: 56 bytes, the address and its DW lead in what was padding.
const _: () = assert!(std::mem::size_of::<Tlp>() == 56);

impl Tlp {
    /// A TLP created at its source, not yet sent: `bytes` is the payload of a write or
    /// completion and the length of a read request; order 0, address 0.
    pub(in crate::sim) fn at_source(
        kind: TlpKind,
        src: u32,
        dst: u32,
        bytes: u32,
        owner: Owner,
    ) -> Tlp {
        let (payload, length) = if kind == TlpKind::MRd {
            (0, bytes)
        } else {
            (bytes, 0)
        };
        Tlp {
            kind,
            src,
            dst,
            payload,
            length,
            addr: 0,
            order: 0,
            born: SimTime::ZERO,
            ingress: NONE,
            live: true,
            dw_lead: 0,
            nullified: false,
            next: NONE,
            owner,
        }
    }

    /// This TLP (a write or completion, with data) with its data at address `addr`.
    #[inline(always)]
    pub(in crate::sim) fn data_at(self, addr: u64) -> Tlp {
        debug_assert!(self.payload > 0);
        Tlp {
            addr: addr as u32,
            dw_lead: (addr & 3) as u8,
            ..self
        }
    }

    pub(in crate::sim) fn class(&self) -> FcClass {
        self.kind.class()
    }

    /// Data credits (16 bytes each) of its whole DWs of data (see
    /// [`crate::pcie::tlp::data_wire_bytes_at`]).
    pub(in crate::sim) fn data_credits(&self) -> u32 {
        (self.payload + self.dw_lead as u32).div_ceil(16)
    }
}
