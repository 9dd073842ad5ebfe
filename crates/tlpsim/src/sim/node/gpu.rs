//! GPUs: copy engines that read and write other nodes' memory, run as a DMA endpoint's
//! engines (`dma`, `sim::transfer`), beside a BAR of plain memory that other requesters
//! write to and read from, answered as a memory endpoint answers (`memory`). Requests and
//! writes into the BAR go to the memory; completions of the engines' reads go to the
//! engines.

use super::dma::DmaEndpoint;
use super::memory::MemoryEndpoint;
use super::{LegacyNode, Node, NodeEv};
use crate::engine::SimTime;
use crate::sim::bottleneck::Resource;
use crate::sim::{Simulator, Tlp};

/// A GPU at run time: its copy engines and its BAR.
#[derive(Debug)]
pub(in crate::sim) struct GpuEndpoint {
    /// Its copy engines, with its read tags.
    pub(in crate::sim) engines: DmaEndpoint,
    /// Its memory BAR.
    pub(in crate::sim) bar: MemoryEndpoint,
}

/// Its copy engines' handlers; requests and writes into its BAR, and the BAR's own events,
/// go to the BAR (a [`Node`], through `AnyNode`'s dispatch).
impl LegacyNode for GpuEndpoint {
    #[inline]
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        DmaEndpoint::tlp_arrived(sim, n, c, id, t, head);
    }

    fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        DmaEndpoint::event(sim, n, ev);
    }

    #[inline(always)]
    fn tlp_left(sim: &mut Simulator<'_>, n: usize, id: u32, start: SimTime) {
        DmaEndpoint::tlp_left(sim, n, id, start);
    }

    #[inline(always)]
    fn tlp_written(sim: &mut Simulator<'_>, n: usize, t: &Tlp, c: u32) {
        DmaEndpoint::tlp_written(sim, n, t, c);
    }

    fn tlp_workload(sim: &Simulator<'_>, n: usize, t: &Tlp) -> Option<u32> {
        DmaEndpoint::tlp_workload(sim, n, t)
    }

    /// Its BAR's memory; not its copy engines, which spend no time of their own (the reads
    /// each keeps in flight limit a copy: the verdict's `requests`).
    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        self.bar.resources(n, name, t, out);
    }
}
