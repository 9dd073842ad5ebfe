//! Root complexes: memory behind an optional posted-write sink and host bridge (or a host
//! memory system: LLC, IOMMU, NUMA socket), completions for memory reads at RCB or MPS size
//! paced by an optional read data path, the CPU's own read tags, and the host CPU behind it
//! (`cpu`), whose calls it routes. Its root ports' shared outbound queue, if they share one,
//! is the transmit path's (`sim::outbound`).

use super::context::Context;
use super::cpu::Cpu;
use super::requester::Port;
use super::{completer, Node, NodeEv};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::fabric::{CacheState, CompletionRule, CpuSpec, NodeKind, PcieSettings, PeerForwarding};
use crate::host_memory_spec::HostMemorySpec;
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::host_memory::HostMemory;
use crate::sim::socket::SOCKET;
use crate::sim::throttle::{Calendar, Throttle};
use crate::sim::{Owner, Tlp, NONE};

/// The bit of a root complex's cookie that marks the host CPU's own TLPs (its register
/// accesses, in the CPU's encoding below it); without it the cookie is a
/// [`FlowTlp`](crate::sim::flow::FlowTlp)'s.
const CPU: u32 = 1 << 31;

/// The owner of a TLP of the host CPU behind root complex `root`, whose own cookie (below
/// bit 31) is `cookie`.
pub(in crate::sim) fn cpu_owner(root: u32, cookie: u32) -> Owner {
    debug_assert!(cookie & CPU == 0);
    Owner {
        node: root,
        cookie: cookie | CPU,
    }
}

/// The host CPU's own cookie of a root complex's TLP with cookie `cookie`, if it is the
/// CPU's (else it is a flow's).
#[inline(always)]
pub(in crate::sim) fn cpu_cookie(cookie: u32) -> Option<u32> {
    (cookie & CPU != 0).then_some(cookie & !CPU)
}

/// A root complex at run time.
#[derive(Debug)]
pub(in crate::sim) struct RootComplex {
    /// A read request's arrival to its data being ready in memory.
    read_latency: Latency,
    /// Its memory's bandwidth, shared by reads and writes, if limited.
    memory: Option<Calendar>,
    /// The posted-write sink ahead of the memory.
    write_sink: Option<Throttle>,
    /// The host bridge its memory traffic crosses, if any.
    pub(in crate::sim) bridge: Option<usize>,
    /// The payload of each completion it splits a read's data into (RCB or MPS rule).
    cpl_size: u32,
    /// Tags for the CPU's own reads (of a bridge's scratchpad registers).
    pub(in crate::sim) free_tags: u32,
    /// The host CPU behind it that bridges NICs' frames, if it is that CPU's root.
    pub(in crate::sim) cpu: Option<Box<Cpu>>,
    /// Its read data path (completion payload), if limited.
    read_path: Option<Throttle>,
    /// Its data path shared by completion payload and posted write data, if limited.
    data_path: Option<Throttle>,
    /// Its host memory system, if it has one (then `read_latency` and `memory` are unused).
    host: Option<Box<HostMemory>>,
    /// When the last posted write into its host memory took effect.
    last_written: SimTime,
    /// The data path of the peer-to-peer TLPs it forwards between root ports, if limited.
    p2p_path: Option<Throttle>,
    /// Added to each peer-to-peer TLP it forwards.
    p2p_latency: SimTime,
}

/// The host address of byte `addr` of workload `w`'s buffer (each workload's buffer starts
/// on its own 4 GiB boundary; TLPs of no workload use the first).
#[inline]
fn host_address(w: Option<u32>, addr: u32) -> u64 {
    (w.map_or(0, |w| w as u64 + 1) << 32) | addr as u64
}

impl RootComplex {
    /// A root complex as `fabric::NodeKind::RootComplex` describes it (its shared outbound
    /// queue aside: `sim::outbound`).
    #[allow(clippy::too_many_arguments)]
    pub(in crate::sim) fn new(
        pcie: &PcieSettings,
        read_latency: Latency,
        memory_bandwidth: Option<f64>,
        posted_write_rate: Option<f64>,
        host_bridge: Option<usize>,
        completion: CompletionRule,
        cpu: Option<CpuSpec>,
        read_bandwidth: Option<f64>,
        data_path_bandwidth: Option<f64>,
        host_memory: Option<&HostMemorySpec>,
        p2p: Option<PeerForwarding>,
        read_tags: u32,
    ) -> Self {
        // A refused path never reaches the simulator (the scenario refuses the workload).
        let p2p = p2p.unwrap_or(PeerForwarding {
            bandwidth: None,
            latency: SimTime::ZERO,
        });
        RootComplex {
            read_latency,
            memory: memory_bandwidth.map(Calendar::new),
            write_sink: posted_write_rate.map(Throttle::new),
            bridge: host_bridge,
            cpl_size: match completion {
                CompletionRule::Rcb => pcie.rcb.min(pcie.mps),
                CompletionRule::Mps => pcie.mps,
            },
            free_tags: read_tags,
            cpu: cpu.map(|spec| Box::new(Cpu::new(spec))),
            read_path: read_bandwidth.map(Throttle::new),
            data_path: data_path_bandwidth.map(Throttle::new),
            host: host_memory.map(|h| Box::new(HostMemory::new(h))),
            last_written: SimTime::ZERO,
            p2p_path: p2p.bandwidth.map(Throttle::new),
            p2p_latency: p2p.latency,
        }
    }
}

impl Node for RootComplex {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime) {
        if t.dst as usize != cx.node() {
            self.forward(cx, c, id, t);
            return;
        }
        match t.kind {
            TlpKind::MWr => self.write(cx, c, id, t),
            TlpKind::MRd => self.read(cx, c, id, t),
            TlpKind::CplD => match cpu_cookie(t.owner.cookie) {
                // The CPU's register read completes.
                Some(cookie) => {
                    cx.release(c, t.class(), 1, t.data_credits());
                    cx.deliver(id);
                    self.with_cpu(cx, |cpu, cx| cpu.read_done(cx, cookie));
                }
                // Its own read (of a bridge's scratchpads) completes.
                None => cx.flow_received(self.port(), c, id, t, head),
            },
            _ => {
                cx.release(c, t.class(), 1, t.data_credits());
                cx.deliver(id);
            }
        }
    }

    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, start: SimTime) {
        match cpu_cookie(cx.tlp(id).owner.cookie) {
            Some(cookie) => self.with_cpu(cx, |cpu, cx| cpu.tlp_left(cx, cookie)),
            None => cx.flow_left(self.port(), id, start),
        }
    }

    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, c: u32) {
        match cpu_cookie(t.owner.cookie) {
            Some(cookie) => self.with_cpu(cx, |cpu, cx| cpu.tlp_written(cx, t, cookie)),
            None => cx.flow_written(t, c),
        }
    }

    fn start<C: Context>(&mut self, cx: &mut C) {
        let Some(h) = &mut self.host else {
            return;
        };
        // The caches and IOTLB as the run finds them: each workload's window in the state
        // its `cache` names, its pages translated (a long run's steady state).
        for (i, w) in cx.sys().workloads.iter().enumerate() {
            if w.target != cx.node() {
                continue;
            }
            let (base, len) = (host_address(Some(i as u32), 0), w.addresses.window);
            match w.cache {
                CacheState::Warm => h.warm(base, len),
                CacheState::Cold => {}
                CacheState::DeviceWarm => h.device_warm(base, len),
                CacheState::RemoteWarm => h.warm_remote(base, len),
            }
            h.warm_iotlb(base, len);
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        match ev {
            NodeEv::Written(id) => completer::on_written(cx, id),
            NodeEv::Socket(id) => self.socket_arrived(cx, id),
            NodeEv::SocketSend(id) => {
                // Held here until now, it crosses the socket link.
                let (c, now) = (cx.tlp(id).ingress, cx.now());
                cx.cross_socket(c, id, now);
            }
            // The host CPU behind this root complex.
            NodeEv::Cpu(core) => self.with_cpu(cx, |cpu, cx| cpu.advance(cx, core)),
            NodeEv::MediaDone(_)
            | NodeEv::Frame(_)
            | NodeEv::Register(_)
            | NodeEv::TxDone(_)
            | NodeEv::Interrupt
            | NodeEv::BridgeMsi(_)
            | NodeEv::Engine(_)
            | NodeEv::Io(_) => {}
        }
    }

    fn measure_from(&mut self, now: SimTime) {
        if let Some(cpu) = &mut self.cpu {
            cpu.measure_from(now);
        }
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        if let Some(w) = &self.write_sink {
            out.push(w.resource(
                n,
                UsedBy::WritesInto,
                "write_sink",
                format!("{name} posted-write sink"),
                t,
            ));
        }
        if let Some(m) = &self.memory {
            let (busy, rate) = (m.busy_by(t), Some(m.bytes_per_s()));
            let what = format!("{name} memory");
            out.push(Resource::of_node(
                n,
                UsedBy::Every,
                "memory",
                what,
                busy,
                rate,
            ));
        }
        if let Some(r) = &self.read_path {
            let what = format!("{name} read data path");
            out.push(r.resource(n, UsedBy::ReadsFrom, "read_path", what, t));
        }
        if let Some(d) = &self.data_path {
            let what = format!("{name} data path (reads and writes)");
            out.push(d.resource(n, UsedBy::Every, "data_path", what, t));
        }
        if let Some(h) = &self.host {
            h.resources(n, name, t, out);
        }
        if let Some(p) = &self.p2p_path {
            let what = format!("{name} peer-to-peer forwarding");
            out.push(p.resource(n, UsedBy::Through, "p2p", what, t));
        }
    }

    /// A NIC's interrupt goes to its host CPU.
    fn cpu_interrupt<C: Context>(&mut self, cx: &mut C, core: u32, nic: u32) {
        self.with_cpu(cx, |cpu, cx| cpu.interrupt(cx, core, nic))
    }
}

impl RootComplex {
    /// Its read latency and completion size, for the lean kernel's completer (`sim::lean`).
    pub(in crate::sim) fn lean_read(&self) -> (Latency, u32) {
        (self.read_latency, self.cpl_size)
    }

    /// Its read tags, lent to the flow code of the flows it runs (reads of a bridge's
    /// scratchpads).
    #[inline(always)]
    fn port(&mut self) -> Port<'_> {
        Port {
            tags: &mut self.free_tags,
            engines: None,
            drives: None,
        }
    }

    /// Runs `f` on the host CPU behind it (if it has one) with its context; then the calls
    /// that came for the CPU meanwhile (a TLP it sent left at once), where a nested call
    /// would have run, and then those for the root complex itself that the CPU set aside.
    fn with_cpu<C: Context>(&mut self, cx: &mut C, f: impl FnOnce(&mut Cpu, &mut C)) {
        let Some(cpu) = self.cpu.as_deref_mut() else {
            return;
        };
        f(cpu, cx);
        while let Some(call) = cx.next_call() {
            cpu.handle(cx, call);
        }
        let own = cpu.take_for_root();
        for call in own {
            self.handle(cx, call);
        }
    }

    /// Peer-to-peer TLP `id`, accepted on root port channel `c`, leaves on the root port
    /// toward its destination once its forwarding latency and data path let it; its receive
    /// buffer frees when it leaves.
    ///
    /// Toward another root complex's tree it crosses the socket link between the two
    /// (`socket`): after this forwarding when it goes peer to peer, straight away when it is
    /// for (or comes from) a root complex's memory.
    fn forward<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp) {
        let out = cx.hop(c, t.dst as usize);
        let now = cx.now();
        let sys = cx.sys();
        let is_root = |x: u32| matches!(sys.nodes[x as usize].kind, NodeKind::RootComplex { .. });
        let peer = !is_root(t.src) && !is_root(t.dst);
        let ready = if peer {
            let start = now + self.p2p_latency;
            match &mut self.p2p_path {
                Some(p) => p.pass(start, t.payload),
                None => start,
            }
        } else {
            now
        };
        if out == NONE && cx.cross_socket(c, id, ready) {
            return;
        }
        cx.tlp_mut(id).ingress = c;
        cx.send_at(ready, out, id);
    }

    /// Posted write `id` reached it on channel `c`: it crosses the host bridge, the
    /// posted-write sink and the memory before it counts.
    fn write<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp) {
        let mut done = cx.now();
        if let Some(b) = self.bridge {
            done = cx.host_bridge_pass(b, done, t.payload);
        }
        // The memory and the shared data path serve reads and writes in the order they
        // come, so a write behind a sink books them as it arrives, beside the sink: booked
        // when it left the sink, a sink's backlog would hold every read behind writes that
        // have not reached the memory yet. Without a sink they take it one after the other.
        let arrived = done;
        let behind_sink = self.write_sink.is_some();
        if let Some(w) = &mut self.write_sink {
            done = w.pass(done, t.payload);
        }
        let now = cx.now();
        if let Some(m) = &mut self.memory {
            let at = if behind_sink { arrived } else { done };
            done = done.max(m.pass(now, at, t.payload));
        }
        if let Some(d) = &mut self.data_path {
            let at = if behind_sink { arrived } else { done };
            done = done.max(d.pass(at, t.payload));
        }
        if let Some(h) = &mut self.host {
            let addr = host_address(cx.tlp_workload(&t), t.addr);
            // Posted writes take effect in the order they came (a write to a line that
            // misses does not let a later hit pass it).
            done = h.write(done, addr, t.payload).max(self.last_written);
            self.last_written = done;
        }
        // The write counts, and its credits free, once the memory has it: a root
        // advertising infinite posted credits still takes data at its sink's and
        // memory's rates.
        completer::write_done_at(cx, c, id, done);
    }

    /// Read request `id` reached it on channel `c`: completions leave once the memory (and
    /// host bridge) has the data.
    fn read<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp) {
        let now = cx.now();
        let bridge_lat = self
            .bridge
            .map_or(SimTime::ZERO, |b| cx.host_bridge_latency(b));
        let memory_lat = match self.host {
            // The host memory times each completion's bytes itself.
            Some(_) => SimTime::ZERO,
            None => cx.sample_latency(&self.read_latency),
        };
        let ready = now + memory_lat + bridge_lat + bridge_lat;
        let mut addr = host_address(cx.tlp_workload(&t), t.addr);
        // A request's completions leave in address order (a later piece whose lines are
        // ready sooner waits for the one before).
        let mut previous = SimTime::ZERO;
        let (size, bridge) = (self.cpl_size, self.bridge);
        let (host, memory) = (&mut self.host, &mut self.memory);
        let (read_path, data_path) = (&mut self.read_path, &mut self.data_path);
        completer::complete_read(cx, c, id, t, ready, size, |cx, piece, mut at| {
            if let Some(h) = host.as_deref_mut() {
                at = h.read(at, addr, piece).max(previous);
                previous = at;
                addr += piece as u64;
            }
            if let Some(m) = memory.as_mut() {
                at = m.pass_after(now, at, piece);
            }
            if let Some(p) = read_path.as_mut() {
                at = p.pass(at, piece);
            }
            // The shared data path is booked as the request arrives (writes book it as they
            // arrive too, so it serves both in time order); the data leaves no sooner.
            if let Some(p) = data_path.as_mut() {
                at = at.max(p.pass(now, piece));
            }
            if let Some(b) = bridge {
                at = cx.host_bridge_pass(b, at, piece);
            }
            at
        });
    }

    /// TLP `id` came across a socket link to it: the buffer it left on the other side
    /// frees, and it takes the TLP as from a root port of its own (`socket::SOCKET`).
    fn socket_arrived<C: Context>(&mut self, cx: &mut C, id: u32) {
        let t = *cx.tlp(id);
        if t.ingress < SOCKET {
            cx.release(t.ingress, t.class(), 1, t.data_credits());
        }
        cx.tlp_mut(id).ingress = SOCKET;
        let (t, now) = (*cx.tlp(id), cx.now());
        self.tlp_arrived(cx, SOCKET, id, t, now);
    }
}
