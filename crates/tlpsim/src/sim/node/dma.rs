//! DMA engines (exercisers): requesters with a number of read tags whose flows read and
//! write a target's memory (the flows themselves run in `sim::flow`), and, where the
//! endpoint has limits of its own (`fabric::DmaDevice`), its read and write engines that
//! run its transfers (`sim::transfer`). Its handlers hand its tags and engines to that flow
//! code through the requester port of its context (`requester`).

use std::collections::VecDeque;

use super::requester::Port;
use super::{Context, Node, NodeEv};
use crate::engine::SimTime;
use crate::fabric::{DmaDevice, DmaEngines};
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::Tlp;

/// A DMA engine at run time.
#[derive(Debug)]
pub(in crate::sim) struct DmaEndpoint {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
    /// Its engines.
    pub(in crate::sim) engines: Engines,
}

/// A DMA endpoint's engines: its limits and its two sides.
#[derive(Debug)]
pub(in crate::sim) struct Engines {
    /// Its own limits.
    pub(in crate::sim) device: DmaDevice,
    /// Its read engines and its write engines ([`READ`], [`WRITE`]).
    pub(in crate::sim) sides: Box<[EngineSide; 2]>,
}

/// The index of the read side in [`DmaEndpoint::sides`].
pub(in crate::sim) const READ: usize = 0;
/// The index of the write side in [`DmaEndpoint::sides`].
pub(in crate::sim) const WRITE: usize = 1;

impl DmaEndpoint {
    /// A DMA endpoint with `tags` read tags and the limits `device`.
    pub(in crate::sim) fn new(tags: u32, device: DmaDevice) -> Self {
        DmaEndpoint {
            free_tags: tags,
            engines: Engines {
                device,
                sides: Box::new([EngineSide::new(device.read), EngineSide::new(device.write)]),
            },
        }
    }

    /// Its tags and engines, lent to the flow code of its flows.
    #[inline(always)]
    pub(in crate::sim) fn port(&mut self) -> Port<'_> {
        Port {
            tags: &mut self.free_tags,
            engines: Some(&mut self.engines),
            drives: None,
        }
    }
}

/// One side (reads or writes) of a DMA endpoint: its engines and the transfers (entries of
/// `Simulator::dma`) in its device latency, waiting for an engine, or holding one.
#[derive(Debug)]
pub(in crate::sim) struct EngineSide {
    /// Its engines and costs.
    pub(in crate::sim) spec: DmaEngines,
    /// Engines free (`u32::MAX`: unlimited).
    pub(in crate::sim) free: u32,
    /// Transfers in their device latency: (when it ends, transfer), in that order.
    pub(in crate::sim) delayed: VecDeque<(SimTime, u32)>,
    /// Transfers waiting for an engine, oldest first.
    pub(in crate::sim) waiting: VecDeque<u32>,
    /// Transfers holding an engine, in the order they took it (the first issues first).
    pub(in crate::sim) busy: Vec<u32>,
    /// When the pending wake-up (`NodeEv::Engine`) fires, if one is pending.
    pub(in crate::sim) wake: Option<SimTime>,
    /// The engines are issuing (a call from within that only asks for another round).
    pub(in crate::sim) running: bool,
    /// Something changed while they were issuing: another round.
    pub(in crate::sim) again: bool,
    /// Engine time spent so far (transfer costs and request costs; not time an engine
    /// waits for a tag or for room in its write queue).
    worked: SimTime,
}

impl EngineSide {
    /// A side with the engines and costs of `spec`, all free.
    fn new(spec: DmaEngines) -> Self {
        EngineSide {
            spec,
            free: spec.engines.unwrap_or(u32::MAX),
            delayed: VecDeque::new(),
            waiting: VecDeque::new(),
            busy: Vec::new(),
            wake: None,
            running: false,
            again: false,
            worked: SimTime::ZERO,
        }
    }

    /// An engine spends `cost` (booked when it starts on it).
    pub(in crate::sim) fn work(&mut self, cost: SimTime) {
        self.worked += cost;
    }

    /// Engine time spent so far over the number of engines (so the share of the window is
    /// the engines' mean use); None with unlimited engines.
    fn busy(&self) -> Option<u64> {
        Some(self.worked.ticks() / self.spec.engines? as u64)
    }
}

impl Node for DmaEndpoint {
    #[inline]
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime) {
        cx.flow_received(self.port(), c, id, t, head);
    }

    #[inline(never)]
    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        if let NodeEv::Engine(side) = ev {
            cx.engines_woken(self.port(), side as usize);
        }
    }

    #[inline(always)]
    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, start: SimTime) {
        cx.flow_left(self.port(), id, start);
    }

    #[inline(always)]
    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, c: u32) {
        cx.flow_written(t, c);
    }

    fn resources(&self, n: usize, name: &str, _t: SimTime, out: &mut Vec<Resource>) {
        for (side, used_by, what) in [
            (READ, UsedBy::Reads, "read"),
            (WRITE, UsedBy::Writes, "write"),
        ] {
            if let Some(busy) = self.engines.sides[side].busy() {
                out.push(Resource::of_node(
                    n,
                    used_by,
                    "dma_engines",
                    format!("{name} {what} engines"),
                    busy,
                    None,
                ));
            }
        }
    }
}
