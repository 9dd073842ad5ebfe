//! The nodes of a simulated fabric, one module per kind, behind one interface.
//!
//! Every kind of node is a struct owning its state ([`root::RootComplex`],
//! [`switch::Switch`], [`ntb::Ntb`], [`dma::DmaEndpoint`], [`storage::StorageHba`],
//! [`nic::NicEndpoint`], [`memory::MemoryEndpoint`], [`nvme::NvmeDrive`], [`gpu::GpuEndpoint`],
//! [`cxl::CxlMemory`]) and implements
//! [`Node`]; [`AnyNode`]
//! is the static-dispatch enum over them that the simulator holds, one per node of the
//! system. The host CPU that bridges NICs' frames ([`cpu::Cpu`]) is held by the root
//! complex it sits behind.
//!
//! [`Node`]'s handlers take `&mut self` and a [`Context`] (`context`): the time, events of
//! the node's own, its ports, the shared TLP table. Every kind is behind it: the root
//! complex (its memory, host memory and host bridge reached through narrow ports of its
//! context; its root ports' shared outbound queue is the transmit path's,
//! `sim::outbound`), the switch, the non-transparent bridge, the memory endpoint, the NVMe
//! drive (with its fio jobs, whose flows it reaches through its context), the DMA
//! endpoint, the storage HBA, the GPU (its BAR and its copy engines), the NIC and the CXL
//! expander; the completer logic they share is `completer`. A DMA requester's flows run in
//! `sim::flow` and `sim::transfer`: the node (a root complex too, reading a bridge's
//! scratchpads) lends them its tags, engines and drives through its context's requester
//! port (`requester`). The host CPU's methods take `&mut self` and its root complex's
//! context; the root complex routes the CPU's calls to it; the NIC and the CPU call each
//! other through typed ports of the context ([`AnyNode::call`]).
//!
//! Every TLP has an owner (`Tlp::owner`): the node whose transaction it is, and a cookie
//! only that node's module decodes. The fabric and the targets tell the owner what became
//! of its TLPs ([`Node::tlp_left`], [`Node::tlp_written`]) instead of interpreting them.
//!
//! Adding a kind of node: a module here with its struct and `impl Node`, a variant of
//! [`AnyNode`] with its arm in [`AnyNode::build`] and in the `dispatch!` macro, the
//! variant of `fabric::NodeKind` it is built from, and the scenario section that describes
//! it (see docs/architecture.md).

pub(in crate::sim) mod completer;
pub(in crate::sim) mod context;
pub(in crate::sim) mod cpu;
pub(in crate::sim) mod cxl;
pub(in crate::sim) mod dma;
pub(in crate::sim) mod gpu;
pub(in crate::sim) mod memory;
pub(in crate::sim) mod nic;
#[cfg(test)]
mod node_tests;
pub(in crate::sim) mod ntb;
pub(in crate::sim) mod nvme;
pub(in crate::sim) mod requester;
pub(in crate::sim) mod root;
pub(in crate::sim) mod storage;
pub(in crate::sim) mod switch;

use dma::DmaEndpoint;
use gpu::GpuEndpoint;
use memory::MemoryEndpoint;
use nic::NicEndpoint;
use ntb::Ntb;
use nvme::NvmeDrive;
use requester::Port;
use root::RootComplex;
use storage::StorageHba;
use switch::Switch;

use super::bottleneck::Resource;
use super::result::{EthernetResult, KindResult};
use super::Tlp;
use crate::engine::SimTime;
use crate::fabric::{NodeKind, System};
use context::{Call, Context};
use cpu::Cpu;
use cxl::CxlMemory;

/// An event of one node's own: a timer of its, or the end of work it started. Only the
/// node's module interprets it (the simulator hands it to [`Node::event`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum NodeEv {
    /// A root complex or memory endpoint has taken posted write `tlp` into its memory (the
    /// channel it came in on is the TLP's `ingress`): its credits free, its data counts.
    Written(u32),
    /// A storage HBA's media is done with a storage write (its entry in the HBA's table).
    MediaDone(u32),
    /// The next Ethernet frame reaches this port of a NIC.
    Frame(u32),
    /// A NIC's register engine is done with TLP `tlp`.
    Register(u32),
    /// A frame has left this port of a NIC on the Ethernet wire.
    TxDone(u32),
    /// A NIC's interrupt moderation timer expired.
    Interrupt,
    /// This core of the host CPU behind the root complex finished its current work.
    Cpu(u32),
    /// A non-transparent bridge's MSI `tlp` for a doorbell leaves, after the bridge's latency.
    BridgeMsi(u32),
    /// A DMA endpoint's engines of this side (`dma::READ`, `dma::WRITE`) have a request or a
    /// transfer due.
    Engine(u32),
    /// An NVMe drive's I/O (its entry in the drive's table) is through the step it waited on
    /// (its command processor, its media).
    Io(u32),
    /// TLP `tlp` came across a socket link to this root complex.
    Socket(u32),
    /// TLP `tlp` is ready to cross a socket link from this root complex.
    SocketSend(u32),
}

/// What every kind of node does: its handlers take its own state and a [`Context`], the
/// only way it reaches the fabric. The simulator calls it through [`AnyNode`].
pub(in crate::sim) trait Node {
    /// TLP `id` (a copy in `t`), accepted on channel `c` with its first byte in at `head`,
    /// is in the node's receive buffer: the node consumes it, answers it or forwards it,
    /// and frees its credits when its buffer no longer holds it.
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime);

    /// The run starts: the node schedules its first events.
    fn start<C: Context>(&mut self, _cx: &mut C) {}

    /// An event of the node's own fired (see [`NodeEv`]).
    fn event<C: Context>(&mut self, _cx: &mut C, _ev: NodeEv) {}

    /// TLP `id`, a request or posted write that the node owns and sent, left it (its first
    /// byte went on the wire at `start`). (Completions leave their completer, not their
    /// owner: no call.)
    fn tlp_left<C: Context>(&mut self, _cx: &mut C, _id: u32, _start: SimTime) {}

    /// Posted write `t`, which the node owns, took effect at its target (`t.dst`, which
    /// received it on channel `c`). The TLP is out of the table.
    fn tlp_written<C: Context>(&mut self, _cx: &mut C, _t: &Tlp, _c: u32) {}

    /// The measurement window opens at `now`: the node notes the counters its report
    /// counts from.
    fn measure_from(&mut self, _now: SimTime) {}

    /// The node's resources (memory, a shared bus, media) with the service each gave by
    /// `t`, for the bottleneck verdict; `name` is the node's name.
    fn resources(&self, _n: usize, _name: &str, _t: SimTime, _out: &mut Vec<Resource>) {}

    /// At the end of the run, node `n` adds its own results (a NIC's Ethernet results) to
    /// `out`.
    fn report(&self, _n: usize, _sys: &System, _out: &mut NodeReport) {}

    /// Workload `f`, which the node drives (an NVMe drive's fio workload), starts.
    fn workload_start<C: Context>(&mut self, _cx: &mut C, _f: u32) {}

    /// Stream `s` of workload `f`, which the node drives and whose rate held it back, may
    /// go on (its pacer's wake-up).
    fn paced<C: Context>(&mut self, _cx: &mut C, _f: u32, _s: u32) {}

    /// A flow's doorbell write took effect at the node, a non-transparent bridge: it
    /// raises the doorbell's MSI.
    fn doorbell<C: Context>(&mut self, _cx: &mut C, _d: context::Doorbell) {
        unreachable!("a doorbell is a non-transparent bridge's")
    }

    /// The MSI of the NIC at node `nic` waits for core `core` of the host CPU behind the
    /// node, a root complex ([`Call::CpuInterrupt`]).
    fn cpu_interrupt<C: Context>(&mut self, _cx: &mut C, _core: u32, _nic: u32) {
        unreachable!("a call for a root complex's host CPU")
    }

    /// The host CPU's core took the interrupt the node, a NIC, queued on it.
    fn interrupt_taken<C: Context>(&mut self, _cx: &mut C) {
        unreachable!("a call for a NIC")
    }

    /// The host CPU's register write `w` took effect at the node, a NIC.
    fn registers_written<C: Context>(&mut self, _cx: &mut C, _w: nic::RegisterWrite) {
        unreachable!("a call for a NIC")
    }

    /// Hands `call` to the matching handler.
    #[inline(always)]
    fn handle<C: Context>(&mut self, cx: &mut C, call: Call) {
        match call {
            Call::Arrived(c, id, t, head) => self.tlp_arrived(cx, c, id, t, head),
            Call::Start => self.start(cx),
            Call::Event(ev) => self.event(cx, ev),
            Call::Left(id, start) => self.tlp_left(cx, id, start),
            Call::Written(t, c) => self.tlp_written(cx, &t, c),
            Call::WorkloadStart(f) => self.workload_start(cx, f),
            Call::Paced(f, s) => self.paced(cx, f, s),
            Call::Doorbell(d) => self.doorbell(cx, d),
            Call::CpuInterrupt(core, nic) => self.cpu_interrupt(cx, core, nic),
            Call::InterruptTaken => self.interrupt_taken(cx),
            Call::RegistersWritten(w) => self.registers_written(cx, w),
        }
    }
}

/// What the nodes add to a run's results at its end ([`Node::report`]).
#[derive(Debug, Default)]
pub(in crate::sim) struct NodeReport {
    /// Ethernet results, each with the index of its bridge workload.
    pub(in crate::sim) ethernet: Vec<(u32, EthernetResult)>,
    /// Results of a workload kind's own, each with the index of its workload.
    pub(in crate::sim) kinds: Vec<(u32, KindResult)>,
}

/// One node of any kind.
// Each node is boxed once in its slot (`context::Nodes`): the sizes of the kinds differ at
// no cost on the hot path.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
pub(in crate::sim) enum AnyNode {
    /// A root complex.
    Root(RootComplex),
    /// A switch.
    Switch(Switch),
    /// A non-transparent bridge.
    Ntb(Ntb),
    /// A DMA engine.
    Dma(DmaEndpoint),
    /// A storage HBA.
    Storage(StorageHba),
    /// A NIC.
    Nic(NicEndpoint),
    /// A memory endpoint.
    Memory(MemoryEndpoint),
    /// An NVMe drive.
    Nvme(NvmeDrive),
    /// A GPU: copy engines and a memory BAR.
    Gpu(GpuEndpoint),
    /// A CXL memory expander.
    Cxl(CxlMemory),
}

/// Runs `$call` on the node struct inside `$node` (an [`AnyNode`] reference) as `$x`.
macro_rules! each_node {
    ($node:expr, $x:ident => $call:expr) => {
        match $node {
            AnyNode::Root($x) => $call,
            AnyNode::Switch($x) => $call,
            AnyNode::Ntb($x) => $call,
            AnyNode::Dma($x) => $call,
            AnyNode::Storage($x) => $call,
            AnyNode::Nic($x) => $call,
            AnyNode::Memory($x) => $call,
            AnyNode::Nvme($x) => $call,
            AnyNode::Gpu($x) => $call,
            AnyNode::Cxl($x) => $call,
        }
    };
}

pub(in crate::sim) use each_node;

impl AnyNode {
    /// The run-time state of node `n` of `sys`.
    pub(in crate::sim) fn build(sys: &System, n: usize) -> AnyNode {
        match &sys.nodes[n].kind {
            NodeKind::RootComplex {
                read_latency,
                memory_bandwidth,
                posted_write_rate,
                host_bridge,
                completion,
                shared_outbound: _,
                read_bandwidth,
                data_path_bandwidth,
                host_memory,
                p2p,
                read_tags,
            } => AnyNode::Root(RootComplex::new(
                &sys.pcie,
                *read_latency,
                *memory_bandwidth,
                *posted_write_rate,
                *host_bridge,
                *completion,
                sys.cpu.filter(|c| c.root == n),
                *read_bandwidth,
                *data_path_bandwidth,
                host_memory.as_deref(),
                *p2p,
                *read_tags,
            )),
            NodeKind::Switch { core, .. } => AnyNode::Switch(Switch::new(*core)),
            NodeKind::Ntb { latency, .. } => AnyNode::Ntb(Ntb::new(*latency)),
            NodeKind::Storage { tags, media } => AnyNode::Storage(StorageHba::new(*tags, media)),
            NodeKind::Nic { tags, nic } => AnyNode::Nic(NicEndpoint::new(sys, n, *nic, *tags)),
            NodeKind::Dma { tags, device } => AnyNode::Dma(DmaEndpoint::new(*tags, *device)),
            NodeKind::Memory {
                read_latency,
                write_rate,
                ..
            } => AnyNode::Memory(MemoryEndpoint::new(
                *read_latency,
                *write_rate,
                sys.pcie.mps,
            )),
            NodeKind::Nvme { tags, spec } => AnyNode::Nvme(NvmeDrive::new(sys, n, *spec, *tags)),
            NodeKind::Gpu {
                tags,
                engines,
                read_latency,
                write_rate,
                ..
            } => AnyNode::Gpu(GpuEndpoint {
                engines: DmaEndpoint::new(*tags, *engines),
                bar: MemoryEndpoint::new(*read_latency, *write_rate, sys.pcie.mps),
            }),
            NodeKind::CxlMemory {
                media_read,
                media_write,
                media_latency,
                ..
            } => AnyNode::Cxl(CxlMemory::new(
                *media_latency,
                *media_read,
                *media_write,
                sys.pcie.mps,
            )),
        }
    }

    /// Hands `call` to this node, out of its table, with its context `cx` (a call that
    /// waited while its handler ran).
    pub(in crate::sim) fn handle<C: Context>(&mut self, cx: &mut C, call: Call) {
        match self {
            AnyNode::Switch(x) => x.handle(cx, call),
            AnyNode::Ntb(x) => x.handle(cx, call),
            AnyNode::Memory(x) => x.handle(cx, call),
            AnyNode::Nvme(x) => x.handle(cx, call),
            AnyNode::Dma(x) => x.handle(cx, call),
            AnyNode::Storage(x) => x.handle(cx, call),
            AnyNode::Gpu(x) => x.handle(cx, call),
            AnyNode::Nic(x) => x.handle(cx, call),
            AnyNode::Cxl(x) => x.handle(cx, call),
            AnyNode::Root(x) => x.handle(cx, call),
        }
    }

    /// The workload TLP `t`, which the node owns, belongs to, if the node itself knows (an
    /// NVMe drive's fio jobs; a requester's flows answer for theirs, `sim::flow`).
    pub(in crate::sim) fn own_tlp_workload(&self, t: &Tlp) -> Option<u32> {
        match self {
            AnyNode::Nvme(d) => d.tlp_workload(t),
            AnyNode::Root(_)
            | AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Dma(_)
            | AnyNode::Storage(_)
            | AnyNode::Nic(_)
            | AnyNode::Memory(_)
            | AnyNode::Gpu(_)
            | AnyNode::Cxl(_) => None,
        }
    }

    /// The measurement window opens at `now` (see [`Node::measure_from`]).
    pub(in crate::sim) fn measure_from(&mut self, now: SimTime) {
        each_node!(self, x => x.measure_from(now))
    }

    /// Node `n` adds its results to `out` (see [`Node::report`]).
    pub(in crate::sim) fn report(&self, n: usize, sys: &System, out: &mut NodeReport) {
        each_node!(self, x => x.report(n, sys, out))
    }

    /// The node's resources (see [`Node::resources`]).
    pub(in crate::sim) fn resources(
        &self,
        n: usize,
        name: &str,
        t: SimTime,
        out: &mut Vec<Resource>,
    ) {
        each_node!(self, x => x.resources(n, name, t, out))
    }

    /// A DMA requester's own state, lent to flow code run while it is in its slot, if it is
    /// one (see [`requester::Requester::InSlot`]).
    #[inline(always)]
    pub(in crate::sim) fn requester(&mut self) -> Option<Port<'_>> {
        match self {
            AnyNode::Root(r) => Some(Port {
                tags: &mut r.free_tags,
                engines: None,
                drives: None,
            }),
            AnyNode::Dma(d) => Some(d.port()),
            AnyNode::Gpu(g) => Some(g.engines.port()),
            AnyNode::Storage(s) => Some(s.port()),
            AnyNode::Nic(_)
            | AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Memory(_)
            | AnyNode::Nvme(_)
            | AnyNode::Cxl(_) => None,
        }
    }

    /// The NIC it is, if it is one.
    #[inline]
    pub(in crate::sim) fn nic(&self) -> Option<&NicEndpoint> {
        match self {
            AnyNode::Nic(nic) => Some(nic),
            AnyNode::Root(_)
            | AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Dma(_)
            | AnyNode::Storage(_)
            | AnyNode::Memory(_)
            | AnyNode::Nvme(_)
            | AnyNode::Gpu(_)
            | AnyNode::Cxl(_) => None,
        }
    }

    /// The NIC it is, if it is one, to change.
    #[inline]
    pub(in crate::sim) fn nic_mut(&mut self) -> Option<&mut NicEndpoint> {
        match self {
            AnyNode::Nic(nic) => Some(nic),
            AnyNode::Root(_)
            | AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Dma(_)
            | AnyNode::Storage(_)
            | AnyNode::Memory(_)
            | AnyNode::Nvme(_)
            | AnyNode::Gpu(_)
            | AnyNode::Cxl(_) => None,
        }
    }

    /// The host CPU behind it, if it is a root complex with one.
    #[inline]
    pub(in crate::sim) fn cpu(&self) -> Option<&Cpu> {
        match self {
            AnyNode::Root(root) => root.cpu.as_deref(),
            AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Dma(_)
            | AnyNode::Storage(_)
            | AnyNode::Nic(_)
            | AnyNode::Memory(_)
            | AnyNode::Nvme(_)
            | AnyNode::Gpu(_)
            | AnyNode::Cxl(_) => None,
        }
    }

    /// The host bridge its memory traffic crosses, if it is a root complex behind one.
    pub(in crate::sim) fn host_bridge(&self) -> Option<usize> {
        match self {
            AnyNode::Root(r) => r.bridge,
            AnyNode::Switch(_)
            | AnyNode::Ntb(_)
            | AnyNode::Dma(_)
            | AnyNode::Storage(_)
            | AnyNode::Nic(_)
            | AnyNode::Memory(_)
            | AnyNode::Nvme(_)
            | AnyNode::Gpu(_)
            | AnyNode::Cxl(_) => None,
        }
    }
}
