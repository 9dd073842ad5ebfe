//! The flow-level engine (`--engine fluid`): throughputs from max-min fair sharing of
//! closed-form capacities, with no events and no TLPs, in microseconds per scenario.
//!
//! A [`System`] becomes *streams* (a DMA workload's writes, its reads, an fio job set's
//! I/Os), each a mix of TLPs per payload byte on the link directions its data, requests,
//! completions, doorbells, queue entries and interrupts cross (the tree of links, ACS
//! redirects, socket links between root complexes: [`path`]), and *resources* with a
//! capacity in bytes (or commands) per second. Then:
//!
//! - **Link directions** carry wire bytes: each TLP's header, data and framing (flit-mode
//!   packing, SKP and line encoding taken off the capacity, as [`crate::analytic`] does).
//!   DLLPs are charged to a direction for the TLPs coming the other way: one Ack and one
//!   UpdateFC per TLP (per timer interval a burst of one request's completions spans), at
//!   most one of each per timer interval of the spec (none in flit mode). That charge depends on the rates, so the solve repeats until it settles
//!   (a fixed point; four rounds).
//! - **Node resources**, named as the simulator names them: a root complex's memory,
//!   posted-write sink, read and data paths, peer-to-peer forwarding (payload of TLPs that
//!   pass between two root ports, neither end a root complex) and host bridge; a switch's
//!   shared bus (TLP bytes without framing); a memory endpoint's or GPU BAR's write rate; an
//!   NVMe drive's media (read, write) and command processor (one command per I/O); each
//!   direction of a socket link (payload).
//! - **Sharing**: weighted max-min fairness by progressive filling ([`solve`]). A stream's
//!   weight is its payload bytes per TLP on the link direction where it sends the most TLPs
//!   per byte (its data's): the simulator's egress arbiters serve one TLP per input in turn,
//!   so flows through one full link get equal TLP rates, not equal byte rates, when their
//!   TLPs differ in size (an NVMe drive's 4 KiB I/Os carry three small TLPs of queue traffic
//!   per 16 data TLPs). Where windowed streams share one FIFO egress queue (a root
//!   complex's completions for every reader below one root port, an endpoint's writes and
//!   read requests) they share the link by their windows instead, behind a common queueing
//!   delay; inputs that each hold such a FIFO get one TLP rate each ([`fifo`]). A stream
//!   held some hops down its way fills the buffers and queues before, and a stream that
//!   shares one of those queues and may not pass it waits behind that backlog ([`hol`]).
//! - **Own limits** of a stream (the least of them): a workload's `rate` (per stream, per
//!   fio job); a read stream's window, requests in flight (tags, transfers in flight, a copy
//!   engine's reads) × bytes per request over the unloaded round trip of one request
//!   (Little's law); an fio workload's I/Os in flight × `bs` over the unloaded latency of
//!   one I/O; a posted-write stream's posted credits at each hop over that hop's credit round
//!   trip (the TLP's time on the wire, the receiver holding it, the UpdateFC timer, the
//!   DLLP back), and the two writes it keeps queued at its own egress; a read stream's NPH
//!   credits at each switch its requests come into. A switch's completion buffer that
//!   several readers' completions share is two resources of the solve ([`pool`]).
//!   Queueing is modelled only where a resource is full: below saturation the
//!   round trip is the unloaded one, and a window larger than the fair share only fills a
//!   queue at the full resource, which the solve's fixed point (rate = window / (unloaded
//!   round trip + queueing)) gives exactly.
//!
//! Latencies are not modelled: every latency summary is null and each flow carries
//! `unloaded_latency_ns`, the first-byte latency of one request alone on the fabric (of
//! one I/O, for fio). Each flow also names the estimates its rate rests on beyond the
//! closed form, and carries a 90 % band against the simulator ([`estimates`]). What it
//! cannot run is refused with one line naming why ([`Refused`]):
//! Ethernet bridging with a CPU, storage HBAs' I/O mixes, bit errors, host memory models
//! (LLC, IOMMU), shared outbound queues, DMA engine costs, descriptors and status writes,
//! mixed read-write streams, scratchpad and NIC register targets.

mod adjust;
mod duty;
mod estimates;
mod fifo;
mod hol;
mod path;
mod pool;
mod report;
mod solve;
mod streams;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::time::Instant;

use crate::engine::SimTime;
use crate::fabric::{AckPolicy, NodeId, NodeKind, System, TargetKind, WorkloadSpec};
use crate::pcie::dll::{ack_latency_symbols, DLLP_BYTES};
use crate::pcie::flow_control::FcClass;
use crate::pcie::tlp::{self, TlpKind};
use crate::pcie::wire::symbol_ticks;
use crate::pcie::{flit, phy};
use crate::sim::result::RunResult;
use crate::sim::socket_way_name;
pub use path::{Hop, Path, Tree};
pub use solve::{solve, Bound, Demand};

/// A system the fluid engine cannot run, with the reason in one line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refused(pub String);

impl fmt::Display for Refused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "the fluid engine cannot run this scenario: {}; run it with --engine des",
            self.0
        )
    }
}

impl std::error::Error for Refused {}

/// A fluid run: the simulator's result record and each flow's unloaded latency.
#[derive(Debug, Clone, PartialEq)]
pub struct FluidRun {
    /// Flows, links, resources and verdicts, as the simulator reports them.
    pub result: RunResult,
    /// Per flow: the first-byte latency of one request (one I/O for fio) on an idle
    /// fabric, in ns.
    pub unloaded_latency_ns: Vec<Option<f64>>,
    /// Per flow: what its rate rests on beyond the closed-form solve ([`estimates`]).
    pub estimates: Vec<Vec<String>>,
}

impl FluidRun {
    /// The result as JSON: the simulator's fields, `"engine": "fluid"` and each flow's
    /// `unloaded_latency_ns`, `estimates` and `throughput_band_gbps` (its 90 % band against
    /// the simulator, [`estimates::band`]).
    pub fn to_json(&self) -> String {
        let mut v = serde_json::to_value(&self.result).unwrap_or_default();
        if let Some(obj) = v.as_object_mut() {
            obj.insert("engine".into(), "fluid".into());
            if let Some(flows) = obj.get_mut("flows").and_then(|f| f.as_array_mut()) {
                for (i, f) in flows.iter_mut().enumerate() {
                    let l = self.unloaded_latency_ns.get(i).copied().flatten();
                    let e = self.estimates.get(i).cloned().unwrap_or_default();
                    let (a, g) = (estimates::band(&e), self.result.flows[i].throughput_gbps);
                    if let Some(o) = f.as_object_mut() {
                        o.insert("unloaded_latency_ns".into(), l.into());
                        o.insert("estimates".into(), e.into());
                        let band = vec![g * (-a).exp(), g * a.exp()];
                        o.insert("throughput_band_gbps".into(), band.into());
                    }
                }
            }
        }
        v.to_string()
    }
}

/// A simulator's result as JSON with `"engine": "des"`.
pub fn des_json(result: &RunResult) -> String {
    let mut v = serde_json::to_value(result).unwrap_or_default();
    if let Some(obj) = v.as_object_mut() {
        obj.insert("engine".into(), "des".into());
    }
    v.to_string()
}

/// Solves `sys` with the fluid engine.
pub fn run(sys: &System) -> Result<FluidRun, Refused> {
    let start = Instant::now();
    refuse(sys)?;
    let mut m = Model::new(sys);
    for (i, w) in sys.workloads.iter().enumerate() {
        m.workload(i, w)?;
    }
    let mut out = m.solve();
    out.result.wall_s = start.elapsed().as_secs_f64();
    Ok(out)
}

/// What the fluid engine refuses, before any work.
fn refuse(sys: &System) -> Result<(), Refused> {
    let no = |why: String| Err(Refused(why));
    let bridging = |w: &WorkloadSpec| w.kind.bridge().is_some();
    if sys.cpu.is_some() || sys.workloads.iter().any(bridging) {
        return no(
            "Ethernet bridging by a host CPU is a loop of interrupts and register \
                   accesses, not a flow"
                .into(),
        );
    }
    if let Some(l) = sys.links.iter().find(|l| l.ber > 0.0) {
        return no(format!(
            "link {} has a bit error rate (replays are not modelled)",
            l.name
        ));
    }
    for n in &sys.nodes {
        if let Some(why) = n.kind.fluid_refusal() {
            return no(format!("{} {why}", n.name));
        }
        if let Some(d) = n.kind.dma_device() {
            let simple = |e: &crate::fabric::DmaEngines| {
                e.request_cost == SimTime::ZERO
                    && e.transfer_cost == SimTime::ZERO
                    && e.latency == SimTime::ZERO
                    && e.latency_per_kib == SimTime::ZERO
                    && e.transfer_cost_per_kib == SimTime::ZERO
                    && e.partial_unit_cost == SimTime::ZERO
            };
            if !simple(&d.read) || !simple(&d.write) || d.descriptor > 0 || d.status_writeback > 0 {
                // A GPU's only engine cost is its time per copy.
                let what = if matches!(n.kind, NodeKind::Gpu { .. }) {
                    "copy engines have a time per copy (`copy_setup`)"
                } else {
                    "DMA engines have costs, latencies, descriptors or status writes"
                };
                return no(format!("{}'s {what}", n.name));
            }
        }
    }
    for w in &sys.workloads {
        // Bridging is refused above, with the CPU that bridges.
        if w.kind.storage().is_some() {
            return no(format!(
                "{} is a storage HBA's I/O mix (media turnaround, seeks)",
                w.name
            ));
        }
        if w.direction.mixed() {
            return no(format!("{} mixes reads and writes in one stream", w.name));
        }
        match sys.nodes[w.target].kind.as_target() {
            TargetKind::Scratchpad | TargetKind::NicRegisters => {
                return no(format!("{} targets registers, not memory", w.name))
            }
            TargetKind::HostMemory
            | TargetKind::BarMemory { .. }
            | TargetKind::WriteSink
            | TargetKind::Nothing => {}
        }
    }
    Ok(())
}

/// A resource of the solve.
struct Res {
    /// Verdict kind ("link", "memory", ...).
    kind: &'static str,
    /// Its name as the simulator writes it ("rc-sw down" for a link direction).
    name: String,
    /// Units (bytes, commands) per second.
    cap: f64,
}

/// Per payload byte of a stream: what it uses of each resource, and the TLPs and payload it
/// puts on each link direction.
#[derive(Default, Clone)]
struct Mix {
    uses: BTreeMap<usize, f64>,
    tlps: BTreeMap<usize, f64>,
    payload: BTreeMap<usize, f64>,
    /// Per link direction, the egress inputs its TLPs join there ([`fifo::OWN`] for the
    /// transmitting node's own TLPs, else the link they came in on).
    inputs: BTreeMap<usize, BTreeSet<usize>>,
    /// Per link direction, the flow-control classes of its TLPs there ([`hol::bit`]).
    classes: BTreeMap<usize, u8>,
    /// Per link direction, its TLPs per payload byte of each flow-control class there.
    by_class: BTreeMap<usize, [f64; 3]>,
}

impl Mix {
    /// Its TLPs per payload byte on link direction `c` (none where it sends none there).
    fn tlps_on(&self, c: usize) -> f64 {
        self.tlps.get(&c).copied().unwrap_or(0.0)
    }

    /// What it uses of resource `r` per payload byte (none where it uses none).
    fn use_of(&self, r: usize) -> f64 {
        self.uses.get(&r).copied().unwrap_or(0.0)
    }

    /// Divides everything by `bytes` (the unit's data bytes).
    fn per(mut self, bytes: f64) -> Self {
        for m in [&mut self.uses, &mut self.tlps, &mut self.payload] {
            for v in m.values_mut() {
                *v /= bytes;
            }
        }
        for v in self.by_class.values_mut().flatten() {
            *v /= bytes;
        }
        self
    }
}

/// A stream's link directions, each with its arrivals there per payload byte that owe an
/// Ack, and an UpdateFC where the receiver counts their class's credits ([`Model::owed`]).
type Owing = Vec<(usize, f64)>;

/// A limit of a stream's own.
#[derive(Clone)]
struct Limit {
    rate: f64,
    /// A window's bytes in flight and unloaded round trip (s): behind a FIFO's queueing
    /// delay `d` the limit is the least of `rate` and the window over round trip plus `d`;
    /// `None` for a fixed rate.
    window: Option<(f64, f64)>,
    /// The link direction (or throttle) whose FIFO delay alone the window waits behind (a
    /// writer's TLPs held in one queue; into a root complex, its slowest write throttle);
    /// `None`: every FIFO the stream crosses (a read's round trip).
    at: Option<usize>,
    /// The link direction and wire bytes of the window that cross it back to back, counted
    /// in the round trip at the link's whole capacity: the solve stretches them to what
    /// the DLLPs leave of it, or a shared completion buffer lets through (`None`: nothing
    /// paced by a link).
    paced: Option<(usize, f64)>,
    /// Where not empty, the link directions or throttles whose FIFO delays the window
    /// waits behind, in place of `at`'s (a transfer's requests, which wait together in
    /// each FIFO on their way out; a write's credits into a root complex, behind every
    /// throttle it books).
    behind: Vec<usize>,
    /// The link direction whose receiver's buffer of a class (posted, non-posted) the
    /// window is, which every stream crossing it with TLPs of that class shares (`None`: a
    /// window of the stream's own).
    shared: Option<(usize, FcClass)>,
    /// The window waits behind other streams' backlogs too (`hol`: a read's completions,
    /// a window of no one FIFO's).
    hol: bool,
    kind: &'static str,
    resource: String,
    detail: String,
}

/// One stream: a flow's writes, its reads, or its I/Os.
struct Stream {
    flow: usize,
    mix: Mix,
    weight: f64,
    limits: Vec<Limit>,
    /// Data TLPs (or read requests) per payload byte, for `requests`.
    requests_per_byte: f64,
    /// Doorbells per payload byte (interrupts at the target).
    interrupts_per_byte: f64,
    /// What it keeps queued on its way when held downstream (writes, completions).
    backlog: Option<hol::Backlog>,
    /// A reader of one transfer at a time: its cycle ([`duty`]).
    duty: Option<duty::Duty>,
    /// Read requests it sends back to back, a whole transfer's where its tags let every
    /// transfer's go out at once (1: one at a time, as tags free).
    burst: f64,
    /// The credits (their name, and why) it waits for behind another stream's backlog,
    /// where that wait binds it.
    waits: Option<(String, String)>,
}

/// The system being turned into streams and resources.
struct Model<'a> {
    sys: &'a System,
    tree: Tree<'a>,
    res: Vec<Res>,
    by_name: BTreeMap<String, usize>,
    streams: Vec<Stream>,
    unloaded: Vec<Option<f64>>,
}

/// Seconds of a simulated time.
fn secs(t: SimTime) -> f64 {
    t.as_secs_f64()
}

impl<'a> Model<'a> {
    fn new(sys: &'a System) -> Self {
        let mut m = Model {
            sys,
            tree: Tree::new(sys),
            res: Vec::new(),
            by_name: BTreeMap::new(),
            streams: Vec::new(),
            unloaded: vec![None; sys.workloads.len()],
        };
        for (c, dir) in
            (0..sys.links.len() * 2).map(|c| (c, if c % 2 == 0 { "down" } else { "up" }))
        {
            let l = &sys.links[c / 2];
            m.add_res("link", format!("{} {dir}", l.name), m.tlp_cap(c));
        }
        for (n, node) in sys.nodes.iter().enumerate() {
            let name = &node.name;
            if let NodeKind::RootComplex {
                memory_bandwidth,
                posted_write_rate,
                read_bandwidth,
                data_path_bandwidth,
                p2p,
                ..
            } = &node.kind
            {
                let mut add = |kind, what: String, rate: &Option<f64>| {
                    if let Some(r) = rate {
                        m.add_res(kind, what, *r);
                    }
                };
                add(
                    "write_sink",
                    format!("{name} posted-write sink"),
                    posted_write_rate,
                );
                add("memory", format!("{name} memory"), memory_bandwidth);
                add(
                    "read_path",
                    format!("{name} read data path"),
                    read_bandwidth,
                );
                add(
                    "data_path",
                    format!("{name} data path (reads and writes)"),
                    data_path_bandwidth,
                );
                let p2p_rate = p2p.and_then(|p| p.bandwidth);
                add("p2p", format!("{name} peer-to-peer forwarding"), &p2p_rate);
            }
            if let Some(rate) = node.kind.shared_bus() {
                m.add_res("switch_bus", format!("{name} shared bus"), rate);
            }
            if let Some(r) = node.kind.bar_write_rate() {
                m.add_res("memory", format!("{name} memory (write)"), r);
            }
            if let Some(spec) = node.kind.nvme() {
                if let Some(r) = spec.command_rate {
                    m.add_res("command_rate", format!("{name} command processor"), r);
                }
                if let Some(r) = spec.read_bandwidth {
                    m.add_res("media", format!("{name} media (read)"), r);
                }
                if let Some(r) = spec.write_bandwidth {
                    m.add_res("media", format!("{name} media (write)"), r);
                }
            }
            let _ = n;
        }
        for s in &sys.socket_links {
            for (a, b) in [(s.a, s.b), (s.b, s.a)] {
                m.add_res("socket_link", socket_way_name(sys, a, b), s.bandwidth);
            }
        }
        for b in &sys.host_bridges {
            m.add_res(
                "host_bridge",
                format!("{} host bridge", b.name),
                b.bandwidth,
            );
        }
        m
    }

    fn add_res(&mut self, kind: &'static str, name: String, cap: f64) {
        self.by_name.insert(name.clone(), self.res.len());
        self.res.push(Res { kind, name, cap });
    }

    /// Bytes per second link direction `c` gives TLPs (encoding, SKP, flit packing off).
    fn tlp_cap(&self, c: usize) -> f64 {
        let l = &self.sys.links[c / 2];
        let skp = if l.skp {
            l.gen.encoding().skp_fraction()
        } else {
            0.0
        };
        let packing = if l.flit { flit::tlp_fraction() } else { 1.0 };
        phy::encoded_gbps(l.gen, l.width) * 1e9 / 8.0 * (1.0 - skp) * packing
    }

    /// Whether switch `n` passes a TLP from channel `from` on to channel `to` as it comes
    /// in: it cuts through and `to` is no faster (as the simulator's `Crossing` decides).
    fn cuts_through(&self, n: NodeId, from: usize, to: usize) -> bool {
        let rate = |c: usize| self.sys.links[c / 2].port_gbps();
        !self.sys.nodes[n].kind.stores_and_forwards() && rate(to) <= rate(from) + 1e-9
    }

    /// Wire bytes of a TLP on channel `c`.
    fn wire(&self, c: usize, kind: TlpKind, payload: u32) -> f64 {
        let p = &self.sys.pcie;
        let framing = if self.sys.links[c / 2].flit { 0 } else { 8 };
        (tlp::tlp_bytes(kind, p.addressing, payload, p.ecrc) + framing) as f64
    }

    /// Seconds channel `c` takes to carry `bytes`.
    fn ser(&self, c: usize, bytes: f64) -> f64 {
        bytes / self.tlp_cap(c)
    }

    /// The resource of the socket link direction from root complex `from` to `to`.
    fn socket_res(&self, from: NodeId, to: NodeId) -> Option<usize> {
        self.named(&socket_way_name(self.sys, from, to))
    }

    /// The resource called `name`, if the system has it.
    fn named(&self, name: &str) -> Option<usize> {
        self.by_name.get(name).copied()
    }

    fn path(&self, a: NodeId, b: NodeId, w: &WorkloadSpec) -> Result<Path, Refused> {
        self.tree.path(a, b).ok_or_else(|| {
            Refused(format!(
                "{}: no way from {} to {}",
                w.name, self.sys.nodes[a].name, self.sys.nodes[b].name
            ))
        })
    }

    fn is_root(&self, n: NodeId) -> bool {
        self.sys.nodes[n].kind.is_root_complex()
    }

    /// Whether `p` runs between two devices (peer to peer), neither end a root complex.
    fn peer(&self, p: &Path) -> bool {
        let ends = (p.nodes[0], *p.nodes.last().unwrap_or(&p.nodes[0]));
        !self.is_root(ends.0) && !self.is_root(ends.1)
    }

    /// Adds `count` TLPs of `kind` with `payload` bytes along `p` to `mix`.
    fn add_tlp(&self, mix: &mut Mix, p: &Path, kind: TlpKind, payload: u32, count: f64) {
        let peer = self.peer(p);
        for (i, hop) in p.hops.iter().enumerate() {
            match *hop {
                Hop::Chan(c) => {
                    let input = match i.checked_sub(1).map(|j| p.hops[j]) {
                        Some(Hop::Chan(prev)) => prev / 2,
                        Some(Hop::Socket { .. }) | None => fifo::OWN,
                    };
                    mix.inputs.entry(c).or_default().insert(input);
                    *mix.classes.entry(c).or_default() |= hol::bit(kind.class());
                    *mix.uses.entry(c).or_default() += self.wire(c, kind, payload) * count;
                    *mix.tlps.entry(c).or_default() += count;
                    mix.by_class.entry(c).or_default()[kind.class() as usize] += count;
                    *mix.payload.entry(c).or_default() += payload as f64 * count;
                }
                Hop::Socket { from, to, .. } => {
                    if let Some(r) = self.socket_res(from, to) {
                        *mix.uses.entry(r).or_default() += payload as f64 * count;
                    }
                }
            }
            // The node this hop reaches, if it passes the TLP on.
            let n = p.nodes[i + 1];
            if i + 1 == p.hops.len() {
                continue;
            }
            let name = &self.sys.nodes[n].name;
            let node = &self.sys.nodes[n].kind;
            if node.shared_bus().is_some() {
                let pc = &self.sys.pcie;
                let bytes = tlp::tlp_bytes(kind, pc.addressing, payload, pc.ecrc) as f64;
                if let Some(r) = self.named(&format!("{name} shared bus")) {
                    *mix.uses.entry(r).or_default() += bytes * count;
                }
            } else if peer && node.is_root_complex() {
                if let Some(r) = self.named(&format!("{name} peer-to-peer forwarding")) {
                    *mix.uses.entry(r).or_default() += payload as f64 * count;
                }
            }
        }
    }

    /// Charges `bytes` of data written into (or read from) node `n`'s memory to its
    /// resources.
    fn charge_target(&self, mix: &mut Mix, n: NodeId, bytes: f64, write: bool) {
        for r in self
            .target_names(n, write)
            .iter()
            .filter_map(|s| self.named(s))
        {
            *mix.uses.entry(r).or_default() += bytes;
        }
    }

    /// The names of the resources data written into (or read from) node `n`'s memory
    /// passes.
    fn target_names(&self, n: NodeId, write: bool) -> Vec<String> {
        let name = &self.sys.nodes[n].name;
        let mut names = Vec::new();
        let kind = &self.sys.nodes[n].kind;
        match kind.as_target() {
            TargetKind::HostMemory => {
                names.push(format!("{name} memory"));
                names.push(format!("{name} data path (reads and writes)"));
                names.push(if write {
                    format!("{name} posted-write sink")
                } else {
                    format!("{name} read data path")
                });
                if let Some(b) = kind.host_bridge() {
                    names.push(format!("{} host bridge", self.sys.host_bridges[b].name));
                }
            }
            TargetKind::BarMemory { .. } if write => {
                names.push(format!("{name} memory (write)"));
            }
            TargetKind::BarMemory { .. }
            | TargetKind::WriteSink
            | TargetKind::NicRegisters
            | TargetKind::Scratchpad
            | TargetKind::Nothing => {}
        }
        names
    }

    /// Seconds a TLP of `kind` with `payload` bytes takes along `p` on an idle fabric, to
    /// its last byte at the far end (cut-through switches pass it on after their latency,
    /// store-and-forward ones and root complexes after its last byte).
    fn one_way(&self, p: &Path, kind: TlpKind, payload: u32) -> f64 {
        let mut t = 0.0;
        let mut last_ser = 0.0;
        for (i, hop) in p.hops.iter().enumerate() {
            let sender = p.nodes[i];
            let node = &self.sys.nodes[sender].kind;
            let store = i == 0 || node.stores_and_forwards();
            if i > 0 {
                t += secs(node.forwarding_latency(self.peer(p)));
            }
            match *hop {
                Hop::Chan(c) => {
                    let ser = self.ser(c, self.wire(c, kind, payload));
                    let l = &self.sys.links[c / 2];
                    // Cut-through: only the part of a faster upstream's TLP not yet in.
                    t += if store {
                        ser
                    } else {
                        (ser - last_ser).max(0.0)
                    };
                    t += secs(l.propagation);
                    last_ser = ser;
                }
                Hop::Socket { link, .. } => {
                    let s = &self.sys.socket_links[link];
                    t += secs(s.latency) + payload as f64 / s.bandwidth;
                    last_ser = 0.0;
                }
            }
        }
        t
    }

    /// The lowest TLP capacity of the links on `p`, bytes per second.
    fn narrowest(&self, p: &Path) -> f64 {
        p.hops
            .iter()
            .map(|h| match h {
                Hop::Chan(c) => self.tlp_cap(*c),
                Hop::Socket { link, .. } => self.sys.socket_links[*link].bandwidth,
            })
            .fold(f64::INFINITY, f64::min)
    }

    /// The first link direction of `p` at [`Model::narrowest`]'s capacity (`None` where a
    /// socket link is narrowest).
    fn narrowest_chan(&self, p: &Path) -> Option<usize> {
        let narrowest = self.narrowest(p);
        p.hops.iter().find_map(|h| match *h {
            Hop::Chan(c) if self.tlp_cap(c) == narrowest => Some(c),
            _ => None,
        })
    }

    /// Read latency of node `n`'s memory, with its host bridge both ways.
    fn memory_latency(&self, n: NodeId) -> f64 {
        let kind = &self.sys.nodes[n].kind;
        secs(kind.read_latency())
            + kind
                .host_bridge()
                .map_or(0.0, |b| 2.0 * secs(self.sys.host_bridges[b].latency))
    }

    /// Completion payload size node `n` answers reads with.
    fn cpl_size(&self, n: NodeId) -> u32 {
        self.sys.nodes[n].kind.completion_size(&self.sys.pcie)
    }

    /// Largest write TLP payload of `w`.
    fn write_payload(&self, w: &WorkloadSpec) -> u32 {
        w.tlp_payload.min(self.sys.pcie.mps).max(1)
    }

    /// Adds the TLPs of a read of `bytes` along `req` (requests) and `cpl` (completions),
    /// requests at most MRRS and never across 4 KiB; returns the requests.
    fn add_read(&self, mix: &mut Mix, req: &Path, cpl: &Path, bytes: u64, count: f64) -> f64 {
        let (mrrs, cs) = (
            self.sys.pcie.mrrs,
            self.cpl_size(*req.nodes.last().unwrap_or(&0)),
        );
        let mut requests = 0.0;
        for (chunk, n) in groups(bytes, tlp::REQUEST_BOUNDARY as u32) {
            for (r, m) in groups(chunk as u64, mrrs) {
                let k = count * n * m;
                self.add_tlp(mix, req, TlpKind::MRd, 0, k);
                requests += k;
                for (c, j) in groups(r as u64, cs) {
                    self.add_tlp(mix, cpl, TlpKind::CplD, c, k * j);
                }
            }
        }
        requests
    }

    /// Adds the posted writes of `bytes` along `p` in TLPs of at most `max`; returns them.
    fn add_writes(&self, mix: &mut Mix, p: &Path, bytes: u64, max: u32, count: f64) -> f64 {
        let mut n = 0.0;
        for (chunk, k) in groups(bytes, tlp::REQUEST_BOUNDARY as u32) {
            for (piece, j) in groups(chunk as u64, max) {
                self.add_tlp(mix, p, TlpKind::MWr, piece, count * k * j);
                n += count * k * j;
            }
        }
        n
    }

    /// Seconds one read request of `bytes` holds its tag: out, at the memory, its
    /// completions back (the last at the pace of the narrowest link or of the target's
    /// slowest throttle on the data's way out, whichever is slower: the simulator's root
    /// complex passes each completion's data through its memory and data paths after the
    /// read latency, one piece after another).
    fn read_round_trip(&self, req: &Path, cpl: &Path, bytes: u32) -> (f64, f64) {
        let target = *req.nodes.last().unwrap_or(&0);
        let cs = self.cpl_size(target).min(bytes.max(1));
        // The shared data path is booked as the request arrives, beside the latency.
        let data = self.read_throttle(target, &["data_path"]);
        let first = self.one_way(req, TlpKind::MRd, 0)
            + self.memory_latency(target)
            + cs as f64 / data
            + self.one_way(cpl, TlpKind::CplD, cs);
        let (link, memory) = self.rest_of_read(cpl, bytes);
        (first, first + link.max(memory))
    }

    /// Seconds the completions of a read of `bytes` after its first take back to back at
    /// the narrowest link of `cpl`, and through the completer's slowest read throttle.
    fn rest_of_read(&self, cpl: &Path, bytes: u32) -> (f64, f64) {
        let target = *cpl.nodes.first().unwrap_or(&0);
        let cs = self.cpl_size(target).min(bytes.max(1));
        let c0 = match cpl.hops.first() {
            Some(Hop::Chan(c)) => *c,
            _ => 0,
        };
        let all = tlp::sum_over_split(bytes as u64, cs, |c| self.wire(c0, TlpKind::CplD, c));
        let link = (all - self.wire(c0, TlpKind::CplD, cs)).max(0.0) / self.narrowest(cpl);
        let memory = bytes.saturating_sub(cs) as f64 / self.read_throttle(target, &[]);
        (link, memory)
    }

    /// Bytes per second the slowest resource a read's data passes at node `n` gives it (its
    /// memory, data paths, host bridge), but those of the kinds in `but`; infinite where it
    /// has none.
    fn read_throttle(&self, n: NodeId, but: &[&str]) -> f64 {
        (self.target_names(n, false).iter())
            .filter_map(|s| self.named(s))
            .filter(|&r| !but.contains(&self.res[r].kind))
            .map(|r| self.res[r].cap)
            .fold(f64::INFINITY, f64::min)
    }

    /// The slowest resource a write's data passes at node `n` and its bytes per second
    /// (of equal ones, one that reads pass too, whose queue is the longer).
    fn write_throttle(&self, n: NodeId) -> Option<(usize, f64)> {
        let reads: Vec<String> = self.target_names(n, false);
        (self.target_names(n, true).iter())
            .filter_map(|s| self.named(s).map(|r| (r, !reads.contains(s))))
            .min_by(|a, b| (self.res[a.0].cap.total_cmp(&self.res[b.0].cap)).then(a.1.cmp(&b.1)))
            .map(|(r, _)| (r, self.res[r].cap))
    }

    /// The narrowest link direction of `cpl` and the wire bytes of a read of `bytes`'s
    /// completions after the first, which cross it back to back in
    /// [`Model::read_round_trip`] (`None` where a socket link is narrowest, or the
    /// completer's read throttle paces them, not a link).
    fn pace(&self, cpl: &Path, bytes: u32) -> Option<(usize, f64)> {
        let (link, memory) = self.rest_of_read(cpl, bytes);
        if memory > link {
            return None;
        }
        let target = *cpl.nodes.first().unwrap_or(&0);
        let cs = self.cpl_size(target).min(bytes.max(1));
        let c = self.narrowest_chan(cpl)?;
        let c0 = match cpl.hops.first() {
            Some(Hop::Chan(c)) => *c,
            _ => 0,
        };
        let all = tlp::sum_over_split(bytes as u64, cs, |c| self.wire(c0, TlpKind::CplD, c));
        Some((c, (all - self.wire(c0, TlpKind::CplD, cs)).max(0.0)))
    }

    /// Seconds a credit of link direction `c` takes round for a TLP of `kind` with
    /// `payload` bytes: the TLP over the link, the UpdateFC timer at the receiver, the DLLP
    /// back, and the propagation both ways (a receiver that holds the buffer adds its
    /// hold: [`Model::credit_round_trip`]).
    pub(super) fn credit_return(&self, c: usize, kind: TlpKind, payload: u32) -> f64 {
        let l = &self.sys.links[c / 2];
        let timer = match l.ack {
            AckPolicy::Timer if !l.flit => self.dll_timer(c),
            _ => 0.0,
        };
        let ser = self.ser(c, self.wire(c, kind, payload));
        ser + 2.0 * secs(l.propagation) + timer + self.ser(c ^ 1, DLLP_BYTES as f64)
    }

    /// Seconds of link direction `c`'s Ack/UpdateFC timer interval: the spec's Ack latency
    /// guideline, which the UpdateFC one equals (`update_fc_latency_symbols`); the simulator
    /// runs one timer for both.
    fn dll_timer(&self, c: usize) -> f64 {
        let l = &self.sys.links[c / 2];
        let sym = ack_latency_symbols(l.gen, l.width, self.sys.pcie.mps);
        secs(SimTime::from_ticks(sym as u64 * symbol_ticks(l.gen)))
    }

    /// Per stream, each link direction it crosses and the arrivals there per payload byte
    /// that owe an Ack (and an UpdateFC, [`Model::dllp_load`]): its TLPs, but those that
    /// come back to back, one per Ack timer interval their burst spans (the simulator's
    /// receiver sends the Ack and UpdateFCs owed when its timer fires, at most one of each
    /// per interval: `on_dll_timer` in `sim/transmit.rs`): a read's completions of one
    /// request, and the requests of a transfer that sends them all at once.
    fn owed(&self) -> Vec<Owing> {
        use crate::pcie::flow_control::FcClass;
        let (completions, requests) = (hol::bit(FcClass::Completion), hol::bit(FcClass::NonPosted));
        let owed = |s: &Stream, c: usize, n: f64| {
            let l = &self.sys.links[c / 2];
            // Bursts per payload byte: of one request's completions, or of a transfer's
            // requests.
            let bursts = match s.mix.classes.get(&c) {
                Some(&k) if k == completions => s.requests_per_byte,
                Some(&k) if k == requests && s.burst > 1.0 => s.requests_per_byte / s.burst,
                _ => 0.0,
            };
            if bursts <= 0.0 || l.flit || l.ack != AckPolicy::Timer {
                return n;
            }
            let span = self.ser(c, s.mix.uses[&c] / bursts);
            let tlps = n / bursts;
            bursts * (1.0 + span / self.dll_timer(c)).min(tlps)
        };
        (self.streams.iter())
            .map(|s| {
                (s.mix.tlps.iter())
                    .map(|(&c, &n)| (c, owed(s, c, n)))
                    .collect()
            })
            .collect()
    }

    /// DLLP bytes per second channel `c` carries for the arrivals coming the other way
    /// that owe an Ack and an UpdateFC ([`Model::owed`]), `back[k]` per second of
    /// flow-control class `k`: an Ack each and, where the receiver counts the class's
    /// credits, an UpdateFC each; with an Ack timer, at most one Ack and one UpdateFC per
    /// class per interval (`on_dll_timer` sends the Ack and an UpdateFC for each class
    /// whose credits freed).
    fn dllp_load(&self, c: usize, back: [f64; 3]) -> f64 {
        let l = &self.sys.links[c / 2];
        let total: f64 = back.iter().sum();
        if l.flit || total <= 0.0 {
            return 0.0;
        }
        let (_, rx) = path::ends(self.sys, c ^ 1);
        let credits = &self.sys.nodes[rx].credits.0;
        let counted = |k: usize| credits[2 * k].is_some() || credits[2 * k + 1].is_some();
        let per_interval = match l.ack {
            AckPolicy::Immediate => f64::INFINITY,
            // The timer runs in time, not in the wire's symbols (SKP ordered sets included).
            AckPolicy::Timer => 1.0 / self.dll_timer(c),
        };
        let updates: f64 = (0..3)
            .filter(|&k| counted(k))
            .map(|k| back[k].min(per_interval))
            .sum();
        DLLP_BYTES as f64 * (total.min(per_interval) + updates)
    }

    /// Each link direction's capacity `cap` at `rates`: its wire's `base` less the DLLPs
    /// (`dllp`) the TLPs coming the other way owe (`owed`).
    fn caps(
        &self,
        owed: &[Owing],
        (rates, base): (&[f64], &[f64]),
        (cap, dllp): (&mut [f64], &mut [f64]),
    ) {
        let chans = self.sys.links.len() * 2;
        let mut owing = vec![[0.0; 3]; chans];
        for ((s, &r), st) in owed.iter().zip(rates).zip(&self.streams) {
            for &(c, n) in s {
                // Split among the stream's classes there by their TLPs (one class but for
                // an fio job's, whose data, requests and queue entries share links).
                let (by, all) = (st.mix.by_class.get(&c), st.mix.tlps_on(c));
                if all <= 0.0 {
                    continue;
                }
                for (o, k) in owing[c].iter_mut().zip(by.into_iter().flatten()) {
                    *o += n * r * k / all;
                }
            }
        }
        for c in 0..chans {
            dllp[c] = self.dllp_load(c, owing[c ^ 1]);
            cap[c] = (base[c] - dllp[c]).max(0.0);
        }
    }

    /// Solves the model and builds the result.
    fn solve(mut self) -> FluidRun {
        let chans = self.sys.links.len() * 2;
        let base: Vec<f64> = self.res.iter().map(|r| r.cap).collect();
        let demands: Vec<Demand> = self
            .streams
            .iter()
            .map(|s| Demand {
                uses: s
                    .mix
                    .uses
                    .iter()
                    .map(|(&r, &a)| {
                        // Payload bytes per TLP on a link direction; the densest elsewhere.
                        let w = match s.mix.tlps.get(&r) {
                            Some(&t) if r < chans && t > 0.0 => 1.0 / t,
                            _ => s.weight,
                        };
                        (r, a, w)
                    })
                    .collect(),
                limit: s
                    .limits
                    .iter()
                    .map(|l| l.rate)
                    .fold(f64::INFINITY, f64::min),
            })
            .collect();
        // Switches' completion buffers that several readers share, as resources after the
        // others.
        let pools = self.pools();
        let mut demands = demands;
        let mut cap = base.clone();
        cap.extend(pool::resources(&pools, base.len(), &mut demands));
        let mut dllp = vec![0.0; chans];
        let (mut rates, mut bounds) = pool::solve(&pools, &cap, &demands);
        // Four rounds settle the DLLPs; FIFO queues and streams held behind others'
        // backlogs take more, until no stream's limit moves.
        let fifos = self.fifos();
        let victims = self.victims();
        let mut q = vec![0.0; fifos.len()];
        let mut hol = vec![0.0; self.streams.len()];
        let (mut waits, mut turns) = (vec![None; self.streams.len()], Vec::new());
        let mut changes = vec![(0.0, false); self.streams.len()];
        let limits: Vec<Vec<Limit>> = self.streams.iter().map(|s| s.limits.clone()).collect();
        let paced = limits.iter().flatten().any(|l| l.paced.is_some());
        let shared = limits.iter().flatten().any(|l| l.shared.is_some());
        let owed = self.owed();
        for round in 0..fifo::ROUNDS {
            (hol, waits, turns) = self.waits(&victims, (&fifos, &q), (&rates, &bounds, &cap));
            let held = hol.iter().any(|&h| h > 0.0);
            if fifos.is_empty() && !held && round >= 4 {
                break;
            }
            self.caps(&owed, (&rates, &base), (&mut cap, &mut dllp));
            // Completions into a switch's shared buffer drain as fast as it lets them.
            let mut drain = cap.clone();
            pool::cap_pools(&pools, &self.streams, &rates, &mut drain);
            if paced {
                adjust::stretch(&mut self.streams, &limits, (&base, &cap), (&pools, &drain));
            }
            if shared {
                adjust::share(&mut self.streams, &limits, (&rates, &bounds));
            }
            if !fifos.is_empty() || held || paced || shared {
                let last = (&rates[..], &bounds[..], &hol[..]);
                fifo::settle(&fifos, &mut q, &self.streams, last, &drain);
                let damped = (&mut demands[..], &mut changes[..]);
                let moved = fifo::relimit((&fifos, &q, &hol), &self.streams, damped, round);
                if round >= 4 && !moved {
                    break;
                }
            }
            (rates, bounds) = pool::solve(&pools, &cap, &demands);
        }
        let rooms = self.rooms();
        let solved = rates.clone();
        let rates = duty::mix(
            (&self.streams, &rooms),
            (&fifos, chans, &pools),
            (&cap, &demands, &hol),
            rates,
        );
        #[rustfmt::skip]
        let end = estimates::End { fifos: &fifos, q: &q, waits: &waits, turns: &turns,
            demands: &demands, pools: &pools, cap: &cap, solved: &solved, rates: &rates,
            bounds: &bounds };
        let estimates = self.estimates(&end);
        fifo::bounds(&fifos, (&q, &hol), &self.streams, &mut bounds);
        self.name_waits(waits, (&fifos, &q, &hol), &bounds);
        self.name_runs(&pools, &solved, &mut bounds);
        self.report((rates, bounds), (&cap[..base.len()], &dllp), estimates)
    }
}

/// The pieces `total` bytes are cut into at `chunk`, as (size, how many): the full ones,
/// then the partial one.
fn groups(total: u64, chunk: u32) -> Vec<(u32, f64)> {
    let (full, rest) = (total / chunk as u64, (total % chunk as u64) as u32);
    let mut out = Vec::with_capacity(2);
    if full > 0 {
        out.push((chunk, full as f64));
    }
    if rest > 0 {
        out.push((rest, 1.0));
    }
    out
}

#[cfg(test)]
mod tests;
