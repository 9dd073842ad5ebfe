//! The simulator's side of a node's context: [`Cx`], the [`Context`] it gives the node a
//! handler runs for, over the simulator's engine, channels, routing and the workloads'
//! flows; and the handing of calls to nodes, each taken out of its slot for its handler
//! (`with_node`), with the calls that came for it meanwhile after.
//!
//! The node modules (`sim/node/`) see only the [`Context`] trait; this file is where it
//! meets the [`Simulator`].

use super::channel::FcClass;
use super::node::context::{Call, Context};
use super::node::each_node;
use super::node::nic::{NicEndpoint, RegisterWrite};
use super::node::requester::{Port, Requester};
use super::node::{AnyNode, Node, NodeEv};
use super::{Ev, Simulator, Tlp};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::fabric::System;

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

    fn host_bridge_pass(&mut self, b: usize, at: SimTime, bytes: u32) -> SimTime {
        let now = self.sim.now();
        self.sim.host.bridges[b].0.pass(now, at, bytes)
    }

    fn host_bridge_latency(&self, b: usize) -> SimTime {
        self.sim.host.bridges[b].1
    }

    fn sample_latency(&mut self, l: &Latency) -> SimTime {
        l.sample(&mut self.sim.rng)
    }

    fn tlp_workload(&self, t: &Tlp) -> Option<u32> {
        AnyNode::tlp_workload(self.sim, t)
    }
}

impl<'s, 'a> Cx<'s, 'a> {
    /// The context of node `n`, out of its table for a call (`dispatch!`).
    #[inline(always)]
    pub(in crate::sim) fn of(sim: &'s mut Simulator<'a>, n: usize) -> Self {
        Cx { sim, n }
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
    pub(in crate::sim) fn handled(&mut self, n: usize, mut node: Box<AnyNode>) {
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

/// Hands a call to node `$n`: it runs `$new` with `$x` the node's state, taken out of its
/// table, and `$cx` its context; a node whose handler runs gets `$call` when that handler
/// returns (`Simulator::with_node`).
macro_rules! dispatch {
    ($sim:ident, $n:ident, $call:expr, $x:ident, $cx:ident => $new:expr) => {
        // One look at the slot: the node comes out of it for its handler.
        match $sim.nodes.take($n) {
            None => $sim.nodes.waiting.push(($n as u32, $call)),
            Some(node) if matches!(*node, AnyNode::Nic(_)) => {
                // Out of line: the NIC's handlers stay out of the hot event loop.
                $sim.nodes.put($n, node);
                AnyNode::call_out_of_line($sim, $n, $call)
            }
            Some(mut node) => {
                {
                    let $cx = &mut Cx::of($sim, $n);
                    // Every kind (a NIC's arm is never taken: it went out of line above).
                    each_node!(&mut *node, $x => $new)
                }
                $sim.handled($n, node);
            }
        }
    };
}

/// The simulator hands nodes their calls (see [`Node`]'s handlers).
impl AnyNode {
    /// Hands accepted TLP `id` to node `n` (see [`Node::tlp_arrived`]).
    #[inline(always)]
    pub(in crate::sim) fn tlp_arrived(
        sim: &mut Simulator<'_>,
        n: usize,
        c: u32,
        id: u32,
        t: Tlp,
        head: SimTime,
    ) {
        dispatch!(sim, n, Call::Arrived(c, id, t, head),
            x, cx => x.tlp_arrived(cx, c, id, t, head))
    }

    /// Node `n` starts (see [`Node::start`]).
    pub(in crate::sim) fn start(sim: &mut Simulator<'_>, n: usize) {
        dispatch!(sim, n, Call::Start, x, cx => x.start(cx))
    }

    /// Hands node `n` its event `ev` (see [`Node::event`]).
    pub(in crate::sim) fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        dispatch!(sim, n, Call::Event(ev), x, cx => x.event(cx, ev))
    }

    /// TLP `id` left its owner: the owner hears of it (see [`Node::tlp_left`]).
    #[inline(always)]
    pub(in crate::sim) fn tlp_left(sim: &mut Simulator<'_>, id: u32, start: SimTime) {
        let n = sim.tlps[id as usize].owner.node as usize;
        dispatch!(sim, n, Call::Left(id, start), x, cx => x.tlp_left(cx, id, start))
    }

    /// Posted write `t`, received on channel `c`, took effect at its target: its owner
    /// hears of it (see [`Node::tlp_written`]).
    #[inline(always)]
    pub(in crate::sim) fn tlp_written(sim: &mut Simulator<'_>, t: &Tlp, c: u32) {
        let n = t.owner.node as usize;
        dispatch!(sim, n, Call::Written(*t, c), x, cx => x.tlp_written(cx, t, c))
    }

    /// Hands node `n`, in its slot, `call` from a function of its own, not inlined into
    /// the event loop (see `dispatch!`).
    #[inline(never)]
    pub(in crate::sim) fn call_out_of_line(sim: &mut Simulator<'_>, n: usize, call: Call) {
        sim.with_node(n, |node, cx| node.handle(cx, call));
    }

    /// Hands node `n` `call` from another node through a typed port of [`Context`]: at
    /// once if it is in its slot, after its handler returns if that runs (a root complex
    /// routes its host CPU's calls to it).
    pub(in crate::sim) fn call(sim: &mut Simulator<'_>, n: usize, call: Call) {
        if sim.nodes.get(n).is_none() {
            sim.nodes.waiting.push((n as u32, call));
        } else {
            sim.with_node(n, |node, cx| node.handle(cx, call));
        }
    }

    /// Workload `f` starts at node `n`, which drives it (see [`Node::workload_start`]).
    pub(in crate::sim) fn workload_start(sim: &mut Simulator<'_>, n: usize, f: u32) {
        dispatch!(sim, n, Call::WorkloadStart(f), x, cx => x.workload_start(cx, f))
    }

    /// Stream `s` of workload `f`, driven by node `n`, may go on (see [`Node::paced`]).
    pub(in crate::sim) fn paced(sim: &mut Simulator<'_>, n: usize, f: u32, s: u32) {
        dispatch!(sim, n, Call::Paced(f, s), x, cx => x.paced(cx, f, s))
    }

    /// The workload TLP `t` belongs to, as its owner says (an NVMe drive's TLPs name theirs);
    /// a DMA requester's TLPs are its flows' (`sim::flow`), and a root complex's are its
    /// flows' or its host CPU's (of none), which the owner, out of its slot while its
    /// handler runs, need not be asked.
    pub(in crate::sim) fn tlp_workload(sim: &Simulator<'_>, t: &Tlp) -> Option<u32> {
        let n = t.owner.node as usize;
        let kind = &sim.sys.nodes[n].kind;
        if kind.owns_only_flow_tlps() {
            return sim.flow_tlp_workload(t);
        }
        if matches!(kind, crate::fabric::NodeKind::RootComplex { .. }) {
            return match super::node::root::cpu_cookie(t.owner.cookie) {
                Some(_) => None,
                None => sim.flow_tlp_workload(t),
            };
        }
        match sim.nodes.get(n) {
            Some(node) => node.own_tlp_workload(t),
            // Out of its table, its handler runs: of the kinds behind Node, only a drive's
            // TLPs belong to a workload, which their cookies name.
            None if matches!(sim.sys.nodes[n].kind, crate::fabric::NodeKind::Nvme { .. }) => {
                super::node::nvme::tlp_workload(sim.sys, n, t)
            }
            None => None,
        }
    }
}
