//! DMA engines (exercisers): requesters with a number of read tags whose flows read and
//! write a target's memory (the flows themselves run in `sim::flow`).

use super::Node;
use crate::engine::SimTime;
use crate::sim::{Simulator, Tlp};

/// A DMA engine at run time.
#[derive(Debug)]
pub(in crate::sim) struct DmaEndpoint {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
}

impl Node for DmaEndpoint {
    #[inline]
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        sim.requester_received(n, c, id, t, head);
    }

    #[inline(always)]
    fn tlp_left(sim: &mut Simulator<'_>, _n: usize, id: u32, start: SimTime) {
        sim.flow_tlp_left(id, start);
    }

    #[inline(always)]
    fn tlp_written(sim: &mut Simulator<'_>, _n: usize, t: &Tlp, c: u32) {
        sim.flow_tlp_written(t, c);
    }

    fn tlp_workload(sim: &Simulator<'_>, _n: usize, t: &Tlp) -> Option<u32> {
        sim.flow_tlp_workload(t)
    }
}
