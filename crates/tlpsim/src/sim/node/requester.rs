//! The requester port: what a DMA requester (a DMA endpoint, a GPU's copy engines, a storage
//! HBA, a root complex) lends the workload's flow code (`sim::flow`, `sim::transfer`) of the
//! flows it runs. The state stays in the node; its handler hands it by `&mut` through its
//! [`super::Context`] (`flow_received`, `flow_left`, ...), and the flow code takes it as a
//! parameter ([`Requester`]) instead of looking the node up. Flow code run outside the
//! node's handlers (a flow's start, its pacing, a completion timeout) reaches the node in
//! its slot instead ([`Requester::InSlot`]).

use super::context::Nodes;
use super::dma::{EngineSide, Engines};
use super::storage::Drives;

/// A requester's own state, lent to flow code.
#[derive(Debug)]
pub(in crate::sim) struct Port<'r> {
    /// Its read tags not in use.
    pub(in crate::sim) tags: &'r mut u32,
    /// Its engines, if it is a DMA endpoint or a GPU (its copy engines).
    pub(in crate::sim) engines: Option<&'r mut Engines>,
    /// Its drives and the storage writes they are finishing, if it is a storage HBA.
    pub(in crate::sim) drives: Option<&'r mut Drives>,
}

impl Port<'_> {
    /// The same state, lent again for a shorter while.
    #[inline(always)]
    pub(in crate::sim) fn reborrow(&mut self) -> Port<'_> {
        Port {
            tags: &mut *self.tags,
            engines: self.engines.as_deref_mut(),
            drives: self.drives.as_deref_mut(),
        }
    }
}

/// The requester of the flows some flow code works on.
#[derive(Debug)]
pub(in crate::sim) enum Requester<'r> {
    /// Its state, lent by its handler (the node is out of its slot).
    Lent(Port<'r>),
    /// Node `n`, in its slot (flow code outside its handlers).
    InSlot(usize),
}

impl Requester<'_> {
    /// Its state: lent, or that of the node in its slot of `nodes` (None if that node is
    /// no requester).
    #[inline(always)]
    pub(in crate::sim) fn port<'x>(&'x mut self, nodes: &'x mut Nodes) -> Option<Port<'x>> {
        match self {
            Requester::Lent(p) => Some(p.reborrow()),
            Requester::InSlot(n) => nodes[*n].requester(),
        }
    }

    /// Its read tags not in use (None if it is no requester).
    #[inline(always)]
    pub(in crate::sim) fn tags<'x>(&'x mut self, nodes: &'x mut Nodes) -> Option<&'x mut u32> {
        match self {
            Requester::Lent(p) => Some(&mut *p.tags),
            Requester::InSlot(n) => nodes[*n].requester().map(|p| p.tags),
        }
    }

    /// Its drives, if it is a storage HBA.
    #[inline(always)]
    pub(in crate::sim) fn drives<'x>(&'x mut self, nodes: &'x mut Nodes) -> Option<&'x mut Drives> {
        self.port(nodes).and_then(|p| p.drives)
    }

    /// Its engines, if it is a DMA endpoint or a GPU.
    #[inline(always)]
    pub(in crate::sim) fn engines<'x>(
        &'x mut self,
        nodes: &'x mut Nodes,
    ) -> Option<&'x mut Engines> {
        self.port(nodes).and_then(|p| p.engines)
    }

    /// Side `side` (`dma::READ`, `dma::WRITE`) of its engines; it must have engines.
    #[inline(always)]
    pub(in crate::sim) fn side<'x>(
        &'x mut self,
        nodes: &'x mut Nodes,
        side: usize,
    ) -> &'x mut EngineSide {
        match self.engines(nodes) {
            Some(e) => &mut e.sides[side],
            None => unreachable!("only a DMA endpoint's or GPU's flows run through engines"),
        }
    }
}
