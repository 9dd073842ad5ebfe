//! Root complexes: memory behind an optional posted-write sink and host bridge (or a host
//! memory system: LLC, IOMMU, NUMA socket), completions for memory reads at RCB or MPS size
//! paced by an optional read data path, the CPU's own read tags, and an optional outbound
//! queue shared by all root ports (a HyperTransport host bridge's issue order).

use std::collections::VecDeque;

use super::context::{Call, Context};
use super::cpu::Cpu;
use super::{completer, AnyNode, LegacyNode, NodeEv};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::fabric::{CacheState, CompletionRule, CpuSpec, PcieSettings, PeerForwarding};
use crate::host_memory_spec::HostMemorySpec;
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::cx::Cx;
use crate::sim::host_memory::HostMemory;
use crate::sim::throttle::Throttle;
use crate::sim::{Owner, Simulator, Tlp, NONE};

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

/// A root complex at run time.
#[derive(Debug)]
pub(in crate::sim) struct RootComplex {
    read_latency: Latency,
    memory: Option<Throttle>,
    /// The posted-write sink ahead of the memory.
    write_sink: Option<Throttle>,
    /// The host bridge its memory traffic crosses, if any.
    pub(in crate::sim) bridge: Option<usize>,
    cpl_size: u32,
    /// Tags for the CPU's own reads (of a bridge's scratchpad registers).
    pub(in crate::sim) free_tags: u32,
    /// The one outbound queue of all its root ports, if they share one.
    outbound: Option<Outbound>,
    /// The host CPU behind it that bridges NICs' frames, if it is that CPU's root (out of
    /// it while a method of the CPU runs: `cpu_running`).
    pub(in crate::sim) cpu: Option<Box<Cpu>>,
    /// A method of its host CPU runs (calls for the CPU wait in `Nodes::waiting`).
    cpu_running: bool,
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

/// A root complex's one outbound queue for all its root ports (a HyperTransport host
/// bridge): posted writes in issue order, and completions and requests in issue order,
/// which may not pass an older posted write.
#[derive(Debug, Default)]
struct Outbound {
    /// TLPs each root port holds beyond this queue.
    depth: u32,
    /// Issue order stamp of the last TLP queued.
    seq: u64,
    /// (stamp, channel, TLP) of waiting posted writes.
    posted: VecDeque<(u64, u32, u32)>,
    /// (stamp, channel, TLP) of waiting completions and non-posted requests.
    other: VecDeque<(u64, u32, u32)>,
}

impl RootComplex {
    /// A root complex as `fabric::NodeKind::RootComplex` describes it.
    #[allow(clippy::too_many_arguments)]
    pub(in crate::sim) fn new(
        pcie: &PcieSettings,
        read_latency: Latency,
        memory_bandwidth: Option<f64>,
        posted_write_rate: Option<f64>,
        host_bridge: Option<usize>,
        completion: CompletionRule,
        shared_outbound: Option<u32>,
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
            memory: memory_bandwidth.map(Throttle::new),
            write_sink: posted_write_rate.map(Throttle::new),
            bridge: host_bridge,
            cpl_size: match completion {
                CompletionRule::Rcb => pcie.rcb.min(pcie.mps),
                CompletionRule::Mps => pcie.mps,
            },
            free_tags: read_tags,
            outbound: shared_outbound.map(|depth| Outbound {
                depth,
                ..Outbound::default()
            }),
            cpu: cpu.map(|spec| Box::new(Cpu::new(spec))),
            cpu_running: false,
            read_path: read_bandwidth.map(Throttle::new),
            data_path: data_path_bandwidth.map(Throttle::new),
            host: host_memory.map(|h| Box::new(HostMemory::new(h))),
            last_written: SimTime::ZERO,
            p2p_path: p2p.bandwidth.map(Throttle::new),
            p2p_latency: p2p.latency,
        }
    }
}

impl LegacyNode for RootComplex {
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        if t.dst as usize != n {
            sim.root_forward(n, c, id, t);
            return;
        }
        match t.kind {
            TlpKind::MWr => sim.root_write(n, c, id, t),
            TlpKind::MRd => sim.root_read(n, c, id, t),
            TlpKind::CplD if t.owner.cookie & CPU != 0 => {
                // The CPU's register read completes.
                sim.rx_release(c, t.class(), 1, t.data_credits());
                sim.deliver(id);
                with_cpu(sim, n, |cpu, cx| cpu.read_done(cx, t.owner.cookie & !CPU));
            }
            TlpKind::CplD => {
                // Its own read (of a bridge's scratchpads) completes.
                sim.rx_release(c, t.class(), 1, t.data_credits());
                sim.completion_arrived(n, id, t, head);
            }
            _ => {
                sim.rx_release(c, t.class(), 1, t.data_credits());
                sim.deliver(id);
            }
        }
    }

    fn tlp_left(sim: &mut Simulator<'_>, n: usize, id: u32, start: SimTime) {
        let cookie = sim.tlps[id as usize].owner.cookie;
        if cookie & CPU != 0 {
            cpu_call(sim, n, Call::CpuLeft(cookie & !CPU));
        } else {
            sim.flow_tlp_left(id, start);
        }
    }

    fn tlp_written(sim: &mut Simulator<'_>, n: usize, t: &Tlp, c: u32) {
        if t.owner.cookie & CPU != 0 {
            with_cpu(sim, n, |cpu, cx| {
                cpu.tlp_written(cx, t, t.owner.cookie & !CPU)
            });
        } else {
            sim.flow_tlp_written(t, c);
        }
    }

    fn tlp_workload(sim: &Simulator<'_>, _n: usize, t: &Tlp) -> Option<u32> {
        if t.owner.cookie & CPU != 0 {
            None
        } else {
            sim.flow_tlp_workload(t)
        }
    }

    fn start(sim: &mut Simulator<'_>, n: usize) {
        let AnyNode::Root(RootComplex { host: Some(h), .. }) = &mut sim.nodes[n] else {
            return;
        };
        // The caches and IOTLB as the run finds them: each workload's window in the state
        // its `cache` names, its pages translated (a long run's steady state).
        for (i, w) in sim.sys.workloads.iter().enumerate() {
            if w.target != n {
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

    fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        match ev {
            NodeEv::Written(id) => completer::on_written(&mut Cx::legacy(sim, n), id),
            NodeEv::Socket(id) => sim.socket_arrived(n, id),
            NodeEv::SocketSend(id) => sim.socket_send(n, id),
            // The host CPU behind this root complex.
            NodeEv::Cpu(core) => with_cpu(sim, n, |cpu, cx| cpu.advance(cx, core)),
            _ => {}
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
            out.push(m.resource(n, UsedBy::Every, "memory", format!("{name} memory"), t));
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
}

/// Hands the host CPU behind root complex `r` `call` from another node
/// ([`AnyNode::call`]): at once, or where it would have nested if a method of the CPU runs.
pub(in crate::sim) fn cpu_call(sim: &mut Simulator<'_>, r: usize, call: Call) {
    let AnyNode::Root(root) = &sim.nodes[r] else {
        return;
    };
    if root.cpu_running {
        sim.nodes.waiting.push((r as u32, call));
    } else {
        with_cpu(sim, r, |cpu, cx| cpu.handle(cx, call));
    }
}

/// Runs `f` on the host CPU behind root complex `r` (if it has one), taken out of it, with
/// the root complex's context; then the calls that came for it meanwhile.
fn with_cpu(sim: &mut Simulator<'_>, r: usize, f: impl FnOnce(&mut Cpu, &mut Cx<'_, '_>)) {
    let AnyNode::Root(root) = &mut sim.nodes[r] else {
        return;
    };
    let Some(mut cpu) = root.cpu.take() else {
        return;
    };
    root.cpu_running = true;
    let cx = &mut Cx::legacy(sim, r);
    f(&mut cpu, cx);
    while let Some(call) = cx.next_call() {
        cpu.handle(cx, call);
    }
    if let AnyNode::Root(root) = &mut sim.nodes[r] {
        root.cpu = Some(cpu);
        root.cpu_running = false;
    }
}

impl Simulator<'_> {
    /// Peer-to-peer TLP `id`, accepted on root port channel `c` of root complex `n`, leaves
    /// on the root port toward its destination once its forwarding latency and data path
    /// let it; its receive buffer frees when it leaves.
    ///
    /// Toward another root complex's tree it crosses the socket link between the two
    /// (`socket`): after this forwarding when it goes peer to peer, straight away when it is
    /// for (or comes from) a root complex's memory.
    fn root_forward(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let out = self.route.hop(n, c, t.dst as usize);
        let now = self.now();
        let is_root = |x: u32| matches!(self.nodes[x as usize], AnyNode::Root(_));
        let peer = !is_root(t.src) && !is_root(t.dst);
        let AnyNode::Root(r) = &mut self.nodes[n] else {
            return;
        };
        let ready = if peer {
            let start = now + r.p2p_latency;
            match &mut r.p2p_path {
                Some(p) => p.pass(start, t.payload),
                None => start,
            }
        } else {
            now
        };
        if out == NONE && self.socket_cross(n, c, id, ready) {
            return;
        }
        self.tlps[id as usize].ingress = c;
        self.push_at(ready, out, id);
    }

    /// Posted write `id` reached root complex `n` on channel `c`: it crosses the host bridge,
    /// the posted-write sink and the memory before it counts.
    fn root_write(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let AnyNode::Root(r) = &mut self.nodes[n] else {
            return;
        };
        let mut done = now;
        if let Some(b) = r.bridge {
            done = self.host.bridges[b].0.pass(done, t.payload);
        }
        if let Some(w) = &mut r.write_sink {
            done = w.pass(done, t.payload);
        }
        if let Some(m) = &mut r.memory {
            done = m.pass(done, t.payload);
        }
        if let Some(p) = &mut r.data_path {
            done = p.pass(done, t.payload);
        }
        if r.host.is_some() {
            let addr = host_address(AnyNode::tlp_workload(self, &t), t.addr);
            if let AnyNode::Root(RootComplex {
                host: Some(h),
                last_written,
                ..
            }) = &mut self.nodes[n]
            {
                // Posted writes take effect in the order they came (a write to a line
                // that misses does not let a later hit pass it).
                done = h.write(done, addr, t.payload).max(*last_written);
                *last_written = done;
            }
        }
        // The write counts, and its credits free, once the memory has it: a root
        // advertising infinite posted credits still takes data at its sink's and
        // memory's rates.
        completer::write_done_at(&mut Cx::legacy(self, n), c, id, done);
    }

    /// Read request `id` reached root complex `n` on channel `c`: completions leave once the
    /// memory (and host bridge) has the data.
    fn root_read(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let AnyNode::Root(r) = &mut self.nodes[n] else {
            return;
        };
        let size = r.cpl_size;
        let bridge_lat = r.bridge.map_or(SimTime::ZERO, |b| self.host.bridges[b].1);
        let memory_lat = match r.host {
            // The host memory times each completion's bytes itself.
            Some(_) => SimTime::ZERO,
            None => r.read_latency.sample(&mut self.rng),
        };
        let ready = now + memory_lat + bridge_lat + bridge_lat;
        let mut addr = host_address(AnyNode::tlp_workload(self, &t), t.addr);
        // A request's completions leave in address order (a later piece whose lines are
        // ready sooner waits for the one before).
        let mut previous = SimTime::ZERO;
        let cx = &mut Cx::legacy(self, n);
        completer::complete_read(cx, c, id, t, ready, size, |cx, piece, mut at| {
            let sim = cx.legacy_sim();
            let AnyNode::Root(r) = &mut sim.nodes[n] else {
                return at;
            };
            if let Some(h) = &mut r.host {
                at = h.read(at, addr, piece).max(previous);
                previous = at;
                addr += piece as u64;
            }
            if let Some(m) = &mut r.memory {
                at = m.pass(at, piece);
            }
            if let Some(p) = &mut r.read_path {
                at = p.pass(at, piece);
            }
            // The shared data path is booked as the request arrives (writes book it as they
            // arrive too, so it serves both in time order); the data leaves no sooner.
            if let Some(p) = &mut r.data_path {
                at = at.max(p.pass(now, piece));
            }
            if let Some(b) = r.bridge {
                at = sim.host.bridges[b].0.pass(at, piece);
            }
            at
        });
    }

    /// A root complex `tx` with a shared outbound queue takes TLP `id`, created for channel
    /// `c`, into that queue if it must wait there (the port is full, or older TLPs it may
    /// not pass wait); true if it did.
    #[inline]
    pub(in crate::sim) fn hold_in_outbound(
        &mut self,
        tx: usize,
        c: u32,
        id: u32,
        posted: bool,
    ) -> bool {
        // (A node out of its table, whose handler runs, is never a root complex.)
        let Some(AnyNode::Root(RootComplex {
            outbound: Some(o), ..
        })) = self.nodes.get_mut(tx)
        else {
            return false;
        };
        let full = self.chans[c as usize].arbiter.queued >= o.depth as usize;
        if full || !o.posted.is_empty() || (!posted && !o.other.is_empty()) {
            o.seq += 1;
            let fifo = if posted { &mut o.posted } else { &mut o.other };
            fifo.push_back((o.seq, c, id));
            return true;
        }
        false
    }

    /// The TLPs waiting in root complex `n`'s shared outbound queue (none without one), each
    /// with whether posted writes wait there too.
    pub(in crate::sim) fn outbound_waiting(&self, n: usize) -> Vec<(u32, bool)> {
        match &self.nodes[n] {
            AnyNode::Root(RootComplex {
                outbound: Some(o), ..
            }) => {
                let posted = !o.posted.is_empty();
                o.posted
                    .iter()
                    .chain(&o.other)
                    .map(|&(_, _, id)| (id, posted))
                    .collect()
            }
            _ => Vec::new(),
        }
    }

    /// Moves TLPs from the heads of the shared outbound queue of channel `c`'s transmitting
    /// node (if it has one) into their root ports while the ports have room (a posted write
    /// first; a completion or read request only when no older posted write is still waiting).
    pub(in crate::sim) fn drain_outbound(&mut self, c: u32) {
        let tx = self.ends.rx_node[(c ^ 1) as usize] as usize;
        // (A node out of its table, whose handler runs, is never a root complex.)
        let shared = matches!(
            self.nodes.get(tx),
            Some(AnyNode::Root(RootComplex {
                outbound: Some(_),
                ..
            }))
        );
        if self.host.draining || !shared {
            return;
        }
        self.host.draining = true;
        while let AnyNode::Root(RootComplex {
            outbound: Some(o), ..
        }) = &mut self.nodes[tx]
        {
            let room = |ch: u32| self.chans[ch as usize].arbiter.queued < o.depth as usize;
            let next = match (o.posted.front(), o.other.front()) {
                (Some(&(_, ch, _)), _) if room(ch) => o.posted.pop_front(),
                (p, Some(&(seq, ch, _))) if p.is_none_or(|p| p.0 > seq) && room(ch) => {
                    o.other.pop_front()
                }
                _ => None,
            };
            let Some((_, ch, id)) = next else { break };
            // A TLP created while this one is sent joins the shared queue behind the rest
            // (this loop takes it in its turn).
            self.enqueue_tlp(ch, id);
        }
        self.host.draining = false;
    }
}
