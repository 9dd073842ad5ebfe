//! What a node sees of the fabric while it handles something: its [`Context`].
//!
//! A node's handlers take `&mut self` (its own state) and a context, and reach the rest of
//! the fabric only through it: the time, events of its own, its ports (sending a TLP out
//! of one, freeing the receive buffer a TLP held), the shared TLP table and the system's
//! description. The simulator gives a node its context by taking the node out of its
//! table for the call ([`Nodes::take`]); a call into a node whose handler is running (it
//! sent a TLP, which left at once and whose owner it is) waits until that handler returns,
//! and then runs, in the order such calls came ([`Simulator::with_node`]). Runs give the
//! same results, value for value, as when handlers reached into the simulator.
//!
//! Unit tests drive a node through a context of their own that records what it did
//! (`context::tests::Recorder`), without a fabric.

use super::nic::{NicEndpoint, RegisterWrite};
use super::requester::{Port, Requester};
use super::{AnyNode, NodeEv};
use crate::engine::SimTime;
use crate::fabric::System;
use crate::sim::channel::FcClass;
use crate::sim::{Ev, Simulator, Tlp};

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
}

/// The context the simulator gives node `n` (taken out of its table for the call).
pub(in crate::sim) struct Cx<'s, 'a> {
    sim: &'s mut Simulator<'a>,
    n: usize,
}

impl Context for Cx<'_, '_> {
    #[inline(always)]
    fn now(&self) -> SimTime {
        self.sim.now()
    }

    #[inline(always)]
    fn node(&self) -> usize {
        self.n
    }

    #[inline(always)]
    fn sys(&self) -> &System {
        self.sim.sys
    }

    #[inline(always)]
    fn schedule(&mut self, at: SimTime, ev: NodeEv) {
        let node = self.n as u32;
        self.sim.q.schedule(at, Ev::Node { node, ev });
    }

    #[inline(always)]
    fn tlp(&self, id: u32) -> &Tlp {
        &self.sim.tlps[id as usize]
    }

    #[inline(always)]
    fn tlp_mut(&mut self, id: u32) -> &mut Tlp {
        &mut self.sim.tlps[id as usize]
    }

    #[inline(always)]
    fn new_tlp(&mut self, t: Tlp) -> u32 {
        self.sim.new_tlp(t)
    }

    #[inline(always)]
    fn toward(&self, dst: usize) -> u32 {
        self.sim.route.next(self.n, dst)
    }

    #[inline(always)]
    fn hop(&self, came_in: u32, dst: usize) -> u32 {
        self.sim.route.hop(self.n, came_in, dst)
    }

    #[inline(always)]
    fn crossing(&self, came_in: u32, out: u32) -> (bool, SimTime) {
        let (from, to) = (
            self.sim.ends.rx_port[came_in as usize],
            self.sim.ends.tx_port[out as usize],
        );
        match self.sim.route.crossing(self.n) {
            Some(x) => x.hop(from, to),
            None => (false, SimTime::ZERO),
        }
    }

    #[inline(always)]
    fn send(&mut self, c: u32, id: u32) {
        self.sim.push(c, id);
    }

    #[inline(always)]
    fn send_at(&mut self, at: SimTime, c: u32, id: u32) {
        self.sim.push_at(at, c, id);
    }

    #[inline(always)]
    fn send_by_event(&mut self, at: SimTime, c: u32, id: u32) {
        self.sim.q.schedule(at, Ev::Enqueue { ch: c, tlp: id });
    }

    #[inline(always)]
    fn send_from(&mut self, c: u32, id: u32, input: usize) {
        self.sim.enqueue_from(c, id, input);
    }

    #[inline(always)]
    fn release(&mut self, c: u32, class: FcClass, h: u32, d: u32) {
        self.sim.rx_release(c, class, h, d);
    }

    #[inline(always)]
    fn deliver(&mut self, id: u32) {
        self.sim.deliver(id);
    }

    #[inline(always)]
    fn written_by(&mut self, t: &Tlp, c: u32) {
        AnyNode::tlp_written(self.sim, t, c);
    }

    #[inline(always)]
    fn cross_socket(&mut self, c: u32, id: u32, at: SimTime) -> bool {
        self.sim.socket_cross(self.n, c, id, at)
    }

    #[inline(always)]
    fn flow_interrupt(&mut self, f: u32, order: u64) {
        self.sim.doorbell_interrupt(f, order);
    }

    fn toward_from(&self, src: usize, dst: usize) -> u32 {
        self.sim.route.next(src, dst)
    }

    fn order_violation(&mut self) {
        self.sim.audit.order_violations += 1;
    }

    fn flow_data(&mut self, f: u32, bytes: u64, latency: Option<f64>) {
        if self.sim.window.measuring {
            let flow = &mut self.sim.work.flows[f as usize];
            flow.bytes += bytes;
            if let Some(ns) = latency {
                flow.latency.record(ns);
            }
        }
    }

    fn flow_io_latency(&mut self, f: u32, ns: f64) {
        if self.sim.window.measuring {
            self.sim.work.flows[f as usize].transfer_latency.record(ns);
        }
    }

    fn pace_offer(&mut self, f: u32, s: u32, bytes: u64) -> bool {
        let now = self.sim.now();
        let Some(p) = self.sim.work.flows[f as usize].pace.get_mut(s as usize) else {
            return true;
        };
        if p.waiting == 0 && p.ready(now) {
            p.take(bytes);
            return true;
        }
        p.waiting += 1;
        self.sim.pace_hold(f, s as usize);
        false
    }

    fn pace_next(&mut self, f: u32, s: u32, bytes: u64) -> bool {
        let now = self.sim.now();
        let p = &mut self.sim.work.flows[f as usize].pace[s as usize];
        if p.waiting == 0 {
            return false;
        }
        if !p.ready(now) {
            self.sim.pace_hold(f, s as usize);
            return false;
        }
        p.waiting -= 1;
        p.take(bytes);
        true
    }

    #[inline(always)]
    fn flow_received(&mut self, req: Port<'_>, c: u32, id: u32, t: Tlp, head: SimTime) {
        let req = &mut Requester::Lent(req);
        self.sim.requester_received(req, self.n, c, id, t, head);
    }

    #[inline(always)]
    fn engines_woken(&mut self, req: Port<'_>, side: usize) {
        self.sim
            .engines_woken(&mut Requester::Lent(req), self.n, side);
    }

    #[inline(always)]
    fn flow_left(&mut self, req: Port<'_>, id: u32, start: SimTime) {
        self.sim.flow_left(&mut Requester::Lent(req), id, start);
    }

    #[inline(always)]
    fn flow_written(&mut self, t: &Tlp, c: u32) {
        self.sim.flow_tlp_written(t, c);
    }

    #[inline(always)]
    fn media_write_done(&mut self, req: Port<'_>, f: u32, slot: u32) {
        self.sim.transfer_done(&mut Requester::Lent(req), f, slot);
    }

    fn next_call(&mut self) -> Option<Call> {
        let waiting = &mut self.sim.nodes.waiting;
        if waiting.is_empty() {
            return None;
        }
        let i = waiting.iter().position(|w| w.0 as usize == self.n)?;
        Some(waiting.remove(i).1)
    }

    fn cpu_interrupt(&mut self, root: usize, core: u32, nic: u32) {
        AnyNode::call(self.sim, root, Call::CpuInterrupt(core, nic));
    }

    fn interrupt_taken(&mut self, nic: usize) {
        AnyNode::call(self.sim, nic, Call::InterruptTaken);
    }

    fn registers_written(&mut self, nic: usize, w: RegisterWrite) {
        AnyNode::call(self.sim, nic, Call::RegistersWritten(w));
    }

    fn nic_take_received(&mut self, nic: usize, start: u32) -> Option<(u32, u32, u32)> {
        self.driven(nic).take_received(start)
    }

    fn nic_post_frame(&mut self, nic: usize, p: u32) {
        self.driven(nic).post_frame(p);
    }

    fn nic_register_write(&mut self, nic: usize, what: (bool, bool, bool)) -> RegisterWrite {
        self.driven(nic).register_write(what)
    }
}

impl<'s, 'a> Cx<'s, 'a> {
    /// The context of node `n`, out of its table for a call (`dispatch!`).
    #[inline(always)]
    pub(in crate::sim::node) fn of(sim: &'s mut Simulator<'a>, n: usize) -> Self {
        Cx { sim, n }
    }

    /// The context of node `n` while it stays in its table: for a kind not yet behind
    /// [`super::Node`] that uses the shared completer (`completer`).
    pub(in crate::sim::node) fn legacy(sim: &'s mut Simulator<'a>, n: usize) -> Self {
        Cx { sim, n }
    }

    /// The simulator behind it, for a kind not yet behind [`super::Node`].
    pub(in crate::sim::node) fn legacy_sim(&mut self) -> &mut Simulator<'a> {
        self.sim
    }

    /// The NIC at node `nic`, whose rings the host CPU's driver reads and writes (a NIC is
    /// in its slot then: the CPU runs on the root complex's events, not a NIC's).
    fn driven(&mut self, nic: usize) -> &mut NicEndpoint {
        self.sim
            .nodes
            .get_mut(nic)
            .and_then(AnyNode::nic_mut)
            .expect("a NIC in its slot")
    }
}

/// A call into a node that came while its handler ran: it gets it once that handler
/// returns ([`Simulator::with_node`]).
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
    /// To a root complex: the host CPU's TLP with this cookie (its own) left the root
    /// complex.
    CpuLeft(u32),
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

impl<'a> Simulator<'a> {
    /// Runs `f` on node `n`, taken out of its table, with its context; then the calls that
    /// came for it while `f` ran, in their order. The node must be in its table.
    #[inline(always)]
    pub(in crate::sim) fn with_node(
        &mut self,
        n: usize,
        f: impl FnOnce(&mut AnyNode, &mut Cx<'_, 'a>),
    ) {
        let Some(mut node) = self.nodes.take(n) else {
            unreachable!("a node out of its table is not called again");
        };
        f(&mut node, &mut Cx { sim: self, n });
        if !self.nodes.waiting.is_empty() {
            self.run_waiting_calls(n, &mut node);
        }
        self.nodes.put(n, node);
    }

    /// Node `n`'s handler returned: it gets the calls that came for it meanwhile, then goes
    /// back into its slot (`dispatch!`).
    #[inline(always)]
    pub(in crate::sim::node) fn handled(&mut self, n: usize, mut node: Box<AnyNode>) {
        if !self.nodes.waiting.is_empty() {
            self.run_waiting_calls(n, &mut node);
        }
        self.nodes.put(n, node);
    }

    /// Hands node `n` (out of its table) the calls that came for it while its handler ran,
    /// in their order (more may come meanwhile).
    #[cold]
    #[inline(never)]
    fn run_waiting_calls(&mut self, n: usize, node: &mut AnyNode) {
        while let Some(i) = self.nodes.waiting.iter().position(|w| w.0 as usize == n) {
            let (_, call) = self.nodes.waiting.remove(i);
            node.handle(&mut Cx { sim: self, n }, call);
        }
    }
}
