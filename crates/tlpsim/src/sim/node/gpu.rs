//! GPUs: copy engines that read and write other nodes' memory, run as a DMA endpoint's
//! engines (`dma`, `sim::transfer`), beside a BAR of plain memory that other requesters
//! write to and read from, answered as a memory endpoint answers (`memory`). Requests and
//! writes into the BAR go to the memory; completions of the engines' reads go to the
//! engines.

use super::dma::DmaEndpoint;
use super::memory::MemoryEndpoint;
use super::{Context, Node, NodeEv};
use crate::engine::SimTime;
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::Resource;
use crate::sim::Tlp;

/// A GPU at run time: its copy engines and its BAR.
#[derive(Debug)]
pub(in crate::sim) struct GpuEndpoint {
    /// Its copy engines, with its read tags.
    pub(in crate::sim) engines: DmaEndpoint,
    /// Its memory BAR.
    pub(in crate::sim) bar: MemoryEndpoint,
}

/// Requests and writes into its BAR, and the BAR's own events (`NodeEv::Written`), go to the
/// BAR; the rest (its reads' completions, its engines' wake-ups, its TLPs leaving and taking
/// effect) to its copy engines.
impl Node for GpuEndpoint {
    #[inline]
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime) {
        match t.kind {
            TlpKind::MWr | TlpKind::MRd => self.bar.tlp_arrived(cx, c, id, t, head),
            TlpKind::CplD | TlpKind::Cpl | TlpKind::Msg | TlpKind::MsgD => {
                self.engines.tlp_arrived(cx, c, id, t, head)
            }
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        match ev {
            NodeEv::Written(_) => self.bar.event(cx, ev),
            NodeEv::MediaDone(_)
            | NodeEv::Frame(_)
            | NodeEv::Register(_)
            | NodeEv::TxDone(_)
            | NodeEv::Interrupt
            | NodeEv::Cpu(_)
            | NodeEv::BridgeMsi(_)
            | NodeEv::Engine(_)
            | NodeEv::Io(_)
            | NodeEv::Socket(_)
            | NodeEv::SocketSend(_) => self.engines.event(cx, ev),
        }
    }

    #[inline(always)]
    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, start: SimTime) {
        self.engines.tlp_left(cx, id, start);
    }

    #[inline(always)]
    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, c: u32) {
        self.engines.tlp_written(cx, t, c);
    }

    /// Its BAR's memory; not its copy engines, which spend no time of their own (the reads
    /// each keeps in flight limit a copy: the verdict's `requests`).
    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        self.bar.resources(n, name, t, out);
    }
}
