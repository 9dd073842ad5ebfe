//! What a node sees of the fabric while it handles something: its [`Context`].
//!
//! A node's handlers take `&mut self` (its own state) and a context, and reach the rest of
//! the fabric only through it: the time, events of its own, its ports (sending a TLP out
//! of one, freeing the receive buffer a TLP held), the shared TLP table and the system's
//! description. The simulator gives a node its context by taking the node out of its
//! table for the call ([`Nodes::take`]); a call into a node whose handler is running (it
//! sent a TLP, which left at once and whose owner it is) waits until that handler returns,
//! and then runs, in the order such calls came (`Simulator::with_node`, in `sim/cx.rs`, with
//! the simulator's context `Cx`). Runs give the
//! same results, value for value, as when handlers reached into the simulator.
//!
//! Unit tests drive a node through a context of their own that records what it did
//! (`context::tests::Recorder`), without a fabric.

use super::nic::RegisterWrite;
use super::requester::Port;
use super::{AnyNode, NodeEv};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::fabric::System;
use crate::sim::channel::FcClass;
use crate::sim::Tlp;

/// What a node may do while it handles a TLP, an event or a TLP of its leaving.
pub(in crate::sim) trait Context {
    /// The time now.
    fn now(&self) -> SimTime;

    /// The node's own index.
    fn node(&self) -> usize;

    /// The system's description (read only).
    fn sys(&self) -> &System;

    /// Schedules an event of the node's own at `at`.
    fn schedule(&mut self, at: SimTime, ev: NodeEv);

    /// TLP `id` of the shared table.
    fn tlp(&self, id: u32) -> &Tlp;

    /// TLP `id` of the shared table, to change.
    fn tlp_mut(&mut self, id: u32) -> &mut Tlp;

    /// Puts `t` in the shared table; returns its id.
    fn new_tlp(&mut self, t: Tlp) -> u32;

    /// The channel out of the node toward node `dst`.
    fn toward(&self, dst: usize) -> u32;

    /// The channel out of the node for a TLP to `dst` that came in on channel `came_in`.
    fn hop(&self, came_in: u32, dst: usize) -> u32;

    /// How a TLP that came in on channel `came_in` crosses the node to channel `out`:
    /// (cut-through, port-to-port latency); the node must be a switch or a bridge.
    fn crossing(&self, came_in: u32, out: u32) -> (bool, SimTime);

    /// Sends TLP `id` out on channel `c` (queued behind what waits there).
    fn send(&mut self, c: u32, id: u32);

    /// Sends TLP `id` out on channel `c` at `at`, or now if that is not later.
    fn send_at(&mut self, at: SimTime, c: u32, id: u32);

    /// Sends TLP `id` out on channel `c` at `at` by an event (TLPs ready at one instant may
    /// chain behind it by their `next`).
    fn send_by_event(&mut self, at: SimTime, c: u32, id: u32);

    /// Sends TLP `id` out on channel `c` as if it came in on the node's port `input`.
    fn send_from(&mut self, c: u32, id: u32, input: usize);

    /// The receive buffer of channel `c` frees `h` header and `d` data credits of `class`.
    fn release(&mut self, c: u32, class: FcClass, h: u32, d: u32);

    /// TLP `id` is done with: out of the table.
    fn deliver(&mut self, id: u32);

    /// Posted write `t`, received on channel `c`, took effect here: its owner hears of it.
    fn written_by(&mut self, t: &Tlp, c: u32);

    /// Sends TLP `id`, which came in on channel `c` (NONE: made here), across the socket
    /// link toward its destination's root complex at `at`; false if no link leads there.
    fn cross_socket(&mut self, c: u32, id: u32, at: SimTime) -> bool;

    /// Flow `f`'s interrupt (the MSI its doorbell raised, signalling its writes up to order
    /// `order`) reached the flow's target: the flow counts it.
    fn flow_interrupt(&mut self, f: u32, order: u64);

    /// The channel out of node `src` toward node `dst`, for a TLP the node makes on
    /// `src`'s behalf (the host's doorbell writes into an NVMe drive).
    fn toward_from(&self, src: usize, dst: usize) -> u32;

    /// A TLP of the node's took effect or came in out of its stream's order: the audit
    /// counts it.
    fn order_violation(&mut self);

    /// While measuring, flow `f` counts `bytes` it moved and, if given, the latency (ns)
    /// of one of its TLPs.
    fn flow_data(&mut self, f: u32, bytes: u64, latency: Option<f64>);

    /// While measuring, flow `f` counts one of its transfers (an fio I/O) done, which took
    /// `ns`.
    fn flow_io_latency(&mut self, f: u32, ns: f64);

    /// Stream `s` of flow `f` (an fio job) has a request of `bytes`: true if its rate lets
    /// it start now (the pacer takes its bytes); else it waits, and [`super::Node::paced`]
    /// hears when the rate allows.
    fn pace_offer(&mut self, f: u32, s: u32, bytes: u64) -> bool;

    /// Stream `s` of flow `f`, woken by its rate: true if a request of `bytes` it held back
    /// may start now (the pacer takes its bytes); false once none waits, or while the rate
    /// still holds them (it wakes the stream again).
    fn pace_next(&mut self, f: u32, s: u32, bytes: u64) -> bool;

    /// TLP `id` (a copy in `t`), accepted on channel `c` with its first byte in at `head`,
    /// reached the node, a DMA requester lending its state `req`: its buffer frees, a write
    /// into it takes effect, read data goes to its flow's request (`sim::flow`).
    fn flow_received(&mut self, req: Port<'_>, c: u32, id: u32, t: Tlp, head: SimTime);

    /// Side `side` (`dma::READ`, `dma::WRITE`) of the engines of the node, a DMA requester
    /// lending its state `req`, is due: they issue what they can (`sim::transfer`).
    fn engines_woken(&mut self, req: Port<'_>, side: usize);

    /// TLP `id` of a flow, which the node (a DMA requester lending its state `req`) owns,
    /// left it at `start`: its flow makes room for the next or times the request.
    fn flow_left(&mut self, req: Port<'_>, id: u32, start: SimTime);

    /// Posted write `t` of a flow, which the node owns, took effect at its target (which
    /// received it on channel `c`): the flow counts it, a doorbell rings.
    fn flow_written(&mut self, t: &Tlp, c: u32);

    /// The media of the node, a storage HBA lending its state `req`, is done with flow `f`'s
    /// storage write in transfer slot `slot`: the slot takes the flow's next I/O.
    fn media_write_done(&mut self, req: Port<'_>, f: u32, slot: u32);
    /// The next call that came for this node while its handler ran (e.g. a TLP it sent
    /// left at once), to handle now, where a nested call would have run.
    fn next_call(&mut self) -> Option<Call>;

    /// The MSI of the NIC at node `nic` reached root complex `root`: it waits for core
    /// `core` of the host CPU behind it ([`Call::CpuInterrupt`]).
    fn cpu_interrupt(&mut self, root: usize, core: u32, nic: u32);

    /// The host CPU's core took the interrupt the NIC at node `nic` queued on it
    /// ([`Call::InterruptTaken`]).
    fn interrupt_taken(&mut self, nic: usize);

    /// The host CPU's register write `w` took effect at the NIC at node `nic`
    /// ([`Call::RegistersWritten`]).
    fn registers_written(&mut self, nic: usize, w: RegisterWrite);

    /// The CPU's driver takes the next frame the NIC at node `nic` received, looking at
    /// its ports from `start` on: (port, frame size, port to look at first next time).
    fn nic_take_received(&mut self, nic: usize, start: u32) -> Option<(u32, u32, u32)>;

    /// The CPU's driver posts the frame the NIC at node `nic` received on port `p` on the
    /// other port's transmit ring (or drops it if that ring is full).
    fn nic_post_frame(&mut self, nic: usize, p: u32);

    /// The CPU's driver's next register write to the NIC at node `nic`: what it announces
    /// (transmit doorbell, returned receive descriptors, interrupts re-enabled as
    /// `(doorbell, rdt, enable)` ask).
    fn nic_register_write(&mut self, nic: usize, what: (bool, bool, bool)) -> RegisterWrite;

    /// Host bridge `b`'s data path passes `bytes` ready at `at` (no sooner than now): when
    /// they are through.
    fn host_bridge_pass(&mut self, b: usize, at: SimTime, bytes: u32) -> SimTime;

    /// Host bridge `b`'s latency, each way.
    fn host_bridge_latency(&self, b: usize) -> SimTime;

    /// A latency drawn from `l` with the run's random stream (a root complex's memory's).
    fn sample_latency(&mut self, l: &Latency) -> SimTime;

    /// The workload TLP `t` belongs to, as its owner says (where a root complex keeps it).
    fn tlp_workload(&self, t: &Tlp) -> Option<u32>;
}

/// A call into a node that came while its handler ran: it gets it once that handler
/// returns (`Simulator::with_node`).
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) enum Call {
    /// [`super::Node::tlp_arrived`]: (channel, TLP id, its copy, first byte in).
    Arrived(u32, u32, Tlp, SimTime),
    /// [`super::Node::start`].
    Start,
    /// [`super::Node::event`].
    Event(NodeEv),
    /// [`super::Node::tlp_left`]: (TLP id, when its first byte left).
    Left(u32, SimTime),
    /// [`super::Node::tlp_written`]: (the TLP, the channel it came in on).
    Written(Tlp, u32),
    /// [`super::Node::workload_start`]: (the workload).
    WorkloadStart(u32),
    /// [`super::Node::paced`]: (the workload, its stream).
    Paced(u32, u32),
    /// To a root complex: the MSI of the NIC at node .1 waits for core .0 of the host CPU
    /// behind it ([`Context::cpu_interrupt`]).
    CpuInterrupt(u32, u32),
    /// To a NIC: its core took its interrupt ([`Context::interrupt_taken`]).
    InterruptTaken,
    /// To a NIC: the host CPU's register write took effect ([`Context::registers_written`]).
    RegistersWritten(RegisterWrite),
    /// To a non-transparent bridge: a flow's doorbell write took effect there
    /// ([`super::Node::doorbell`]).
    Doorbell(Doorbell),
}

/// A doorbell rung at a non-transparent bridge: it raises an MSI into the domain below.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Doorbell {
    /// The bridge's port the doorbell write came in on (the MSI queues behind the data
    /// that came that way).
    pub(in crate::sim) port: u32,
    /// The flow whose doorbell it is.
    pub(in crate::sim) flow: u32,
    /// Where the MSI goes.
    pub(in crate::sim) target: u32,
    /// The order of the flow's last write the doorbell signals.
    pub(in crate::sim) order: u64,
}

/// The nodes of a run, each in its slot (a node whose handler runs is out of its slot), and
/// the calls that came for a node while it was out.
#[derive(Debug)]
pub(in crate::sim) struct Nodes {
    slots: Vec<Option<Box<AnyNode>>>,
    /// (node, call) of calls waiting for their node's handler to return, in their order.
    pub(in crate::sim) waiting: Vec<(u32, Call)>,
}

impl Nodes {
    /// The table of `nodes`, all in their slots.
    pub(in crate::sim) fn new(nodes: impl Iterator<Item = AnyNode>) -> Self {
        Nodes {
            slots: nodes.map(|n| Some(Box::new(n))).collect(),
            waiting: Vec::new(),
        }
    }

    /// How many nodes.
    pub(in crate::sim) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Node `n`, out of its slot for a call (None if it is out already).
    #[inline(always)]
    pub(in crate::sim) fn take(&mut self, n: usize) -> Option<Box<AnyNode>> {
        self.slots[n].take()
    }

    /// Node `n`, unless it is out of its slot.
    #[inline(always)]
    pub(in crate::sim) fn get(&self, n: usize) -> Option<&AnyNode> {
        self.slots[n].as_deref()
    }

    /// Node `n` to change, unless it is out of its slot.
    #[inline(always)]
    pub(in crate::sim) fn get_mut(&mut self, n: usize) -> Option<&mut AnyNode> {
        self.slots[n].as_deref_mut()
    }

    /// Puts node `n` back into its slot.
    #[inline(always)]
    pub(in crate::sim) fn put(&mut self, n: usize, node: Box<AnyNode>) {
        self.slots[n] = Some(node);
    }

    /// Every node in its slot, in order.
    pub(in crate::sim) fn iter(&self) -> impl Iterator<Item = &AnyNode> {
        self.slots
            .iter()
            .map(|n| n.as_deref().expect("a node out of its slot"))
    }

    /// Every node in its slot, in order, to change.
    pub(in crate::sim) fn iter_mut(&mut self) -> impl Iterator<Item = &mut AnyNode> {
        self.slots
            .iter_mut()
            .map(|n| n.as_deref_mut().expect("a node out of its slot"))
    }
}

impl std::ops::Index<usize> for Nodes {
    type Output = AnyNode;

    /// Node `n`; only the simulator's own code reads a node this way, never while the
    /// node's handler runs.
    #[inline(always)]
    fn index(&self, n: usize) -> &AnyNode {
        self.slots[n].as_deref().expect("a node out of its slot")
    }
}

impl std::ops::IndexMut<usize> for Nodes {
    #[inline(always)]
    fn index_mut(&mut self, n: usize) -> &mut AnyNode {
        self.slots[n]
            .as_deref_mut()
            .expect("a node out of its slot")
    }
}
