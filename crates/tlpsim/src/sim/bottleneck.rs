//! What limits each flow, and why.
//!
//! A flow's path is the link directions its requests and their answers cross, the nodes on
//! the way (a switch's shared bus, a root complex's memory and host bridge, a storage
//! endpoint's media, a DMA endpoint's engines) and, for Ethernet bridging, the CPU core that
//! serves the NIC. The verdict, in this order:
//!
//! 0. the workload's `rate`, if it held the flow back in the measured window and the flow
//!    moved at least [`RATE_MET`] of it: the flow runs at its cap, whatever else is busy;
//! 1. the busiest resource its data crosses, if it is busy at least [`SATURATED`] of the
//!    measured window: the flow cannot go faster than it does (a node's resource before a
//!    link exactly as busy);
//! 2. else a transmitter on the path that waits for credits of a type (or replay buffer
//!    room, or a free sequence number when 2,047 TLPs are unacknowledged) at least
//!    [`STALLED`] of the window: the receiver's advertised credits do not cover the credit
//!    round trip, and more of them would raise the flow;
//! 3. else a saturated link direction that carries only the flow's read requests (its
//!    data comes back the other way): the requests wait there behind other traffic;
//! 4. else the requester's read slots or tags, if all are in use at least [`WINDOW_FULL`] of
//!    the window: throughput is outstanding bytes over latency;
//! 5. else the workload's own offered rate.
//!
//! Where 4 or 5 is the verdict of a flow whose reads timed out, the completion timeout is
//! (`progress`): its timeouts are the latency that limits it.
//!
//! Back-pressure makes a saturated resource's upstream neighbours wait for credits too, so
//! a saturated resource on the data's way outranks any stall, and a stall on the requests'
//! way behind a saturated request link is that link's back-pressure, not a limit of its
//! own. A link direction that carries only a reader's requests is not the reader's limit
//! while something else is: a writer that fills it leaves the reader's completions, and
//! the credits they wait for, to decide its rate.

use serde::Serialize;

use super::{Flow, Simulator, NONE};
use crate::engine::SimTime;
use crate::fabric::{CreditType, DmaDirection, FioSpec, WorkloadSpec, CREDIT_TYPES};
use crate::pcie::dll::transmit::MAX_UNACKED;
use crate::pcie::flow_control::FcClass;
use crate::sim::result::LinkResult;

/// Busy fraction at or above which a resource counts as saturated.
pub const SATURATED: f64 = 0.9;
/// Share of the window a transmitter must wait (for credits or replay buffer room) to count
/// as held up.
pub const STALLED: f64 = 0.05;
/// Share of the window a requester must have every read slot or tag in use to count as
/// limited by them.
pub const WINDOW_FULL: f64 = 0.5;
/// Share of its `rate` a paced flow must move in the window to count as limited by it.
pub const RATE_MET: f64 = 0.98;

/// A resource other than a link: memory, host bridge, switch bus, storage media, CPU core.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResourceResult {
    /// Its name, e.g. "rc memory", "sw shared bus", "cpu core 0".
    pub name: String,
    /// "memory", "write_sink", "read_path", "data_path", "socket_link", "iommu",
    /// "host_bridge", "switch_bus", "media", "command_rate", "cpu", "dma_engines".
    pub kind: &'static str,
    /// Fraction of the measured window it was busy.
    pub busy: f64,
}

/// What limits a flow.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bottleneck {
    /// "link", "memory", "write_sink", "read_path", "data_path", "socket_link", "iommu",
    /// "host_bridge", "switch_bus", "media", "command_rate", "cpu", "dma_engines", "credits",
    /// "replay_buffer", "sequence_window", "requests", "iodepth", "completion_timeout",
    /// "rate" (the workload's own `rate` caps it), "offered_load", or "starved" (it still
    /// completed nothing at the run's end while its TLPs waited: see `sim::progress`).
    pub kind: &'static str,
    /// The resource, e.g. "rc-sw down", "rc memory", "sw -> a NPH credits", "nic rate".
    pub resource: String,
    /// Fraction of the measured window it was busy (waiting, for a stall; full, for
    /// requests; for a rate, the share of it the flow moved; for offered load, the busiest
    /// resource's share).
    pub busy: f64,
    /// One sentence on why.
    pub detail: String,
}

/// How a candidate may limit a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    /// A resource with a throughput of its own (a wire, memory, a bus, a core).
    Saturable,
    /// A transmitter that waits for credits or replay buffer room.
    Stall,
    /// The requester's read slots or tags.
    Window,
    /// A link direction that carries only the flow's read requests (not its data).
    RequestWire,
    /// The workload's `rate`, which held the flow back.
    Rate,
}

/// Something on a flow's path that may limit it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// How it limits.
    pub limit: Limit,
    /// The verdict's kind if it is the one.
    pub kind: &'static str,
    /// Its name.
    pub resource: String,
    /// Fraction of the window busy, stalled or full.
    pub busy: f64,
    /// The verdict's sentence if it is the one.
    pub detail: String,
}

/// The candidate of one of `limits` with the largest share, the first listed among equals
/// (candidates list the links out and back in path order, then the node resources in node
/// order, then the CPU core).
fn largest<'a>(cands: &'a [Candidate], limits: &[Limit]) -> Option<&'a Candidate> {
    cands
        .iter()
        .filter(|c| limits.contains(&c.limit))
        .fold(None, |best: Option<&Candidate>, c| match best {
            Some(b) if b.busy >= c.busy => Some(b),
            _ => Some(c),
        })
}

/// The busiest of the candidates of `limits` that have a throughput of their own, a node's
/// resource (memory, sink, bus) before a link exactly as busy: the link feeding a
/// saturated node carries TLPs that then wait in the node's buffers.
fn busiest<'a>(cands: &'a [Candidate], limits: &[Limit]) -> Option<&'a Candidate> {
    largest(cands, limits).map(|b| {
        cands
            .iter()
            .find(|c| limits.contains(&c.limit) && c.kind != "link" && c.busy >= b.busy)
            .unwrap_or(b)
    })
}

/// The verdict over one flow's candidates (see the module's order).
pub fn verdict(cands: &[Candidate]) -> Bottleneck {
    let pick = |c: &Candidate| Bottleneck {
        kind: c.kind,
        resource: c.resource.clone(),
        busy: c.busy,
        detail: c.detail.clone(),
    };
    if let Some(c) = largest(cands, &[Limit::Rate]).filter(|c| c.busy >= RATE_MET) {
        return pick(c);
    }
    if let Some(c) = busiest(cands, &[Limit::Saturable]).filter(|c| c.busy >= SATURATED) {
        return pick(c);
    }
    if let Some(c) = largest(cands, &[Limit::Stall]).filter(|c| c.busy >= STALLED) {
        return pick(c);
    }
    let requests = largest(cands, &[Limit::RequestWire]);
    if let Some(c) = requests.filter(|c| c.busy >= SATURATED) {
        return pick(c);
    }
    if let Some(c) = largest(cands, &[Limit::Window]).filter(|c| c.busy >= WINDOW_FULL) {
        return pick(c);
    }
    // The busiest of everything that carries the flow, for the offered-load sentence.
    let busiest = busiest(cands, &[Limit::Saturable, Limit::RequestWire]);
    let (resource, busy, detail) = match busiest {
        Some(c) => (
            c.resource.clone(),
            c.busy,
            format!(
                "nothing on its path is saturated (the busiest, {}, is {:.0} % busy): the \
                 workload's own rate limits it",
                c.resource,
                c.busy * 100.0
            ),
        ),
        None => (
            String::new(),
            0.0,
            "the workload's own rate limits it".to_string(),
        ),
    };
    Bottleneck {
        kind: "offered_load",
        resource,
        busy,
        detail,
    }
}

/// Ticks of service each non-link resource gave by `t` (the order of [`Simulator::resources`]).
pub(crate) type BusyTicks = Vec<u64>;

/// Which flows through a resource's node use it.
#[derive(Clone, Copy)]
pub(crate) enum UsedBy {
    /// Every flow (a memory, a shared bus, a host bridge, a simplex media).
    Every,
    /// Flows that DMA-write (a duplex storage media's read side).
    Writes,
    /// Flows that DMA-write into its node (a root complex's posted-write sink).
    WritesInto,
    /// Flows that DMA-read (a duplex media's write side).
    Reads,
    /// Flows that DMA-read from its node (a root complex's read data path).
    ReadsFrom,
    /// Flows that pass through its node (a root complex's peer-to-peer forwarding).
    Through,
    /// Flows whose data cross from root complex `from`'s tree to `to`'s (one direction of
    /// a socket link).
    Crossing {
        /// The tree the data leave.
        from: usize,
        /// The tree they enter.
        to: usize,
    },
}

/// A non-link resource: the node it belongs to (NONE for a host bridge), its kind, its name,
/// and the service it gave by some time.
pub(crate) struct Resource {
    node: usize,
    bridge: usize,
    /// Which flows through its node it can limit.
    used_by: UsedBy,
    kind: &'static str,
    name: String,
    /// Ticks of service it gave by the time it was taken.
    pub(crate) busy: u64,
    /// Bytes per second, where it has a rate.
    rate: Option<f64>,
}

impl Resource {
    /// Node `node`'s resource of `kind` called `name`, which the flows `used_by` says
    /// through its node use, with `busy` ticks of service given and its rate, if it has one.
    pub(crate) fn of_node(
        node: usize,
        used_by: UsedBy,
        kind: &'static str,
        name: String,
        busy: u64,
        rate: Option<f64>,
    ) -> Self {
        Resource {
            node,
            bridge: NONE as usize,
            used_by,
            kind,
            name,
            busy,
            rate,
        }
    }
}

/// The measured window every flow's candidates are weighed over: the resources' and the
/// CPU cores' use in it, and the link directions' results.
struct Measured<'l> {
    /// When the window ends.
    end: SimTime,
    /// Its length in ticks.
    window: f64,
    /// The non-link resources ([`Simulator::resources`] at `end`).
    resources: Vec<Resource>,
    /// The share of the window each of `resources` was busy.
    shares: Vec<f64>,
    /// The share of the window each CPU core was busy (none without a CPU).
    cpu: Vec<f64>,
    /// Every link direction's results.
    links: &'l [LinkResult],
}

impl Simulator<'_> {
    /// The non-link resources with the service each gave by `t`: per node its posted-write
    /// sink and memory, shared bus or media (read and write apart when they run at once),
    /// then the host bridges.
    fn resources(&self, t: SimTime) -> Vec<Resource> {
        let mut out = Vec::new();
        for (n, node) in self.nodes.iter().enumerate() {
            node.resources(n, &self.sys.nodes[n].name, t, &mut out);
        }
        self.host.sockets.resources(self.sys, t, &mut out);
        for (b, (th, _)) in self.host.bridges.iter().enumerate() {
            out.push(Resource {
                node: NONE as usize,
                bridge: b,
                used_by: UsedBy::Every,
                kind: "host_bridge",
                name: format!("{} host bridge", self.sys.host_bridges[b].name),
                busy: th.busy_by(t),
                rate: Some(th.bytes_per_s()),
            });
        }
        out
    }

    /// Service each non-link resource gave by `t` (taken when measuring starts).
    pub(crate) fn busy_ticks(&self, t: SimTime) -> BusyTicks {
        self.resources(t).iter().map(|r| r.busy).collect()
    }

    /// The channels from `from` toward `to`, in path order.
    fn path(&self, from: usize, to: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let mut node = from;
        let mut came_in = NONE;
        while node != to && out.len() < self.chans.len() {
            let c = self.route.hop(node, came_in, to);
            if c == NONE {
                // Across a socket link, on from the root complex on the far side.
                match self.host.sockets.across(node, to) {
                    Some(far) if far != node => {
                        (node, came_in) = (far, NONE);
                        continue;
                    }
                    _ => break,
                }
            }
            out.push(c as usize);
            node = self.ends.rx_node[c as usize] as usize;
            came_in = c;
        }
        out
    }

    /// The non-link resources' use over the window ending at `end` (`at_warmup` from
    /// [`Simulator::busy_ticks`]), and each flow's bottleneck given the link results.
    pub(crate) fn bottlenecks(
        &self,
        end: SimTime,
        at_warmup: &BusyTicks,
        links: &[LinkResult],
    ) -> (Vec<ResourceResult>, Vec<Bottleneck>) {
        let window = end.saturating_sub(self.sys.warmup).ticks().max(1) as f64;
        let resources = self.resources(end);
        let shares = resources
            .iter()
            .enumerate()
            .map(|(i, r)| {
                (r.busy
                    .saturating_sub(at_warmup.get(i).copied().unwrap_or(0)) as f64
                    / window)
                    .min(1.0)
            })
            .collect();
        // Cores only where the scenario has a CPU.
        let cpu = (self.sys.cpu.and_then(|c| self.nodes[c.root].cpu()))
            .map_or(Vec::new(), |cpu| cpu.busy(self.sys.warmup, end));
        let m = Measured {
            end,
            window,
            resources,
            shares,
            cpu,
            links,
        };
        let mut results: Vec<ResourceResult> = m
            .resources
            .iter()
            .zip(&m.shares)
            .map(|(r, &busy)| ResourceResult {
                name: r.name.clone(),
                kind: r.kind,
                busy,
            })
            .collect();
        results.extend(m.cpu.iter().enumerate().map(|(k, &busy)| ResourceResult {
            name: format!("cpu core {k}"),
            kind: "cpu",
            busy,
        }));
        let verdicts = self
            .work
            .flows
            .iter()
            .zip(&self.sys.workloads)
            .map(|(f, w)| verdict(&self.candidates(f, w, &m)))
            .collect();
        (results, verdicts)
    }

    /// Everything that may limit flow `f` of workload `w` over the window `m`: the link
    /// directions out and back in path order, the node resources on its way in node order,
    /// the CPU core that serves its NIC, its `rate`, and its I/Os or read requests in
    /// flight.
    fn candidates(&self, f: &Flow, w: &WorkloadSpec, m: &Measured<'_>) -> Vec<Candidate> {
        let (src, dst) = (f.source as usize, f.target as usize);
        // The way its requests or data go; the way back only where answers come back
        // (reads' completions; a NIC's descriptor and frame reads; an NVMe drive's
        // doorbells and queue entries).
        let mut chans = self.path(src, dst);
        // Whether answers come back whatever it does: a NIC's and a drive's reads.
        let answered = w.kind.answered();
        // A flow that only reads sends nothing but its requests toward its target.
        let requests_only = f.reads && !f.writes && !answered;
        let requests = if requests_only { chans.len() } else { 0 };
        if f.reads || answered {
            chans.extend(self.path(dst, src));
        }
        let mut nodes = vec![src];
        nodes.extend(chans.iter().map(|&c| self.ends.rx_node[c] as usize));
        // Across a socket link: both root complexes (the paths end at each).
        let tops = (self.host.sockets.top(src), self.host.sockets.top(dst));
        if tops.0 != tops.1 {
            nodes.extend([tops.0, tops.1]);
        }
        let mut cands = self.path_candidates(&chans, requests, w, m);
        self.resource_candidates(f, &nodes, tops, m, &mut cands);
        let nic_core = self.nodes[src].nic().map(|nic| nic.core());
        if let Some(&busy) = nic_core.and_then(|k| m.cpu.get(k as usize)) {
            let core = nic_core.unwrap_or(0);
            cands.push(Candidate {
                limit: Limit::Saturable,
                kind: "cpu",
                resource: format!("cpu core {core}"),
                busy,
                detail: format!(
                    "cpu core {core} (interrupts, register reads, bridging, register \
                     writes) is busy {:.0} %",
                    busy * 100.0
                ),
            });
        }
        if let Some(c) = rate_candidate(w, f, m.window) {
            cands.push(c);
        }
        let in_flight = match w.kind.fio() {
            Some(fio) => Some(fio_depth(fio, f.transfer_latency.summary().mean)),
            None => f.reads.then(|| self.read_window(f, w, m)),
        };
        cands.extend(in_flight);
        cands
    }

    /// The read requests in flight of flow `f` of workload `w` as a limit over the window
    /// `m`: its share is the time all its read transfers (or its source's tags) were.
    fn read_window(&self, f: &Flow, w: &WorkloadSpec, m: &Measured<'_>) -> Candidate {
        let full = f.window_ticks + f.window_full.elapsed(m.end);
        let busy = (full as f64 / m.window).min(1.0);
        Candidate {
            limit: Limit::Window,
            kind: "requests",
            resource: format!("{} read requests", w.name),
            busy,
            detail: self.window_detail(w, f, busy),
        }
    }

    /// The candidates of the channels `chans` of workload `w`'s path, the first `requests`
    /// of which carry only its read requests: those are wires the requests wait on, and a
    /// stall on one behind a saturated request link further on is that link's
    /// back-pressure, not a limit.
    fn path_candidates(
        &self,
        chans: &[usize],
        requests: usize,
        w: &WorkloadSpec,
        m: &Measured<'_>,
    ) -> Vec<Candidate> {
        let mut cands = Vec::new();
        for (i, &c) in chans.iter().enumerate() {
            let mut link = self.link_candidates(c, &m.links[c], m.window);
            if i < requests {
                let saturated_ahead = chans[i + 1..requests]
                    .iter()
                    .any(|&d| m.links[d].utilization >= SATURATED);
                link.retain(|l| l.limit != Limit::Stall || !saturated_ahead);
                for l in link.iter_mut().filter(|l| l.limit == Limit::Saturable) {
                    l.limit = Limit::RequestWire;
                    l.detail.push_str(&format!(
                        ": {}'s read requests wait there behind other traffic",
                        w.name
                    ));
                }
            }
            cands.extend(link);
        }
        cands
    }

    /// Adds to `cands` the non-link resources of flow `f` on its way through `nodes` (and
    /// their host bridges) that it uses, none named twice; `tops` are the root complexes
    /// of its source's and target's trees.
    fn resource_candidates(
        &self,
        f: &Flow,
        nodes: &[usize],
        (top_src, top_dst): (usize, usize),
        m: &Measured<'_>,
        cands: &mut Vec<Candidate>,
    ) {
        let (src, dst) = (f.source as usize, f.target as usize);
        let bridges: Vec<usize> = nodes
            .iter()
            .filter_map(|&n| self.nodes[n].host_bridge())
            .collect();
        for (r, &busy) in m.resources.iter().zip(&m.shares) {
            let on_path = if r.node == NONE as usize {
                bridges.contains(&r.bridge)
            } else {
                nodes.contains(&r.node)
            };
            // A duplex media's side this flow does not use cannot limit it, nor a root's
            // posted-write sink a flow that does not write into that root.
            let side_used = match r.used_by {
                UsedBy::Every => true,
                UsedBy::Writes => f.writes,
                UsedBy::WritesInto => f.writes && dst == r.node,
                UsedBy::Reads => f.reads,
                UsedBy::ReadsFrom => f.reads && dst == r.node,
                UsedBy::Through => src != r.node && dst != r.node,
                UsedBy::Crossing { from, to } => {
                    let written = f.writes && (top_src, top_dst) == (from, to);
                    let read = f.reads && (top_dst, top_src) == (from, to);
                    written || read
                }
            };
            if !on_path || !side_used || cands.iter().any(|c| c.resource == r.name) {
                continue;
            }
            let rate = r
                .rate
                .map(|b| format!(" of {:.3} GB/s", b / 1e9))
                .unwrap_or_default();
            cands.push(Candidate {
                limit: Limit::Saturable,
                kind: r.kind,
                resource: r.name.clone(),
                busy,
                detail: format!("{} is busy {:.0} %{rate}", r.name, busy * 100.0),
            });
        }
    }

    /// Why a flow whose read requests are all in flight `busy` of the time is limited by
    /// them: its transfers in flight or its requester's tags, or, for a GPU's copy, the
    /// reads its copy engine keeps in flight.
    fn window_detail(&self, w: &WorkloadSpec, f: &Flow, busy: f64) -> String {
        let src = &self.sys.nodes[w.source];
        let engine_reads = src.kind.dma_device().and_then(|d| d.read.reads_per_engine);
        let copy_engine_reads = w.kind.memcpy().and(engine_reads);
        match copy_engine_reads {
            Some(reads) => format!(
                "{}'s copy engine keeps at most {reads} reads of up to {} B in flight (or all \
                 its tags are) {:.0} % of the time: throughput is bytes in flight over latency",
                src.name,
                self.sys.pcie.mrrs,
                busy * 100.0
            ),
            None => format!(
                "all {} read transfers of {} B (or all of {}'s tags) are in flight {:.0} % of \
                 the time: throughput is bytes in flight over latency",
                f.outstanding,
                f.read_transfer(),
                src.name,
                busy * 100.0
            ),
        }
    }

    /// Channel `c` as a wire that may saturate, a transmitter that may wait for credits and
    /// one that may wait for replay buffer room.
    fn link_candidates(&self, c: usize, link: &LinkResult, window: f64) -> Vec<Candidate> {
        let spec = &self.sys.links[c / 2];
        let (tx, rx) = if c % 2 == 0 {
            (spec.up, spec.down)
        } else {
            (spec.down, spec.up)
        };
        let rx_kind = &self.sys.nodes[rx].kind;
        let (tx, rx) = (&self.sys.nodes[tx].name, &self.sys.nodes[rx].name);
        let ch = &self.chans[c];
        let (now, then) = (ch.counters, self.window.snapshot[c]);
        let name = format!("{} {}", link.name, link.direction);
        let mut out = vec![Candidate {
            limit: Limit::Saturable,
            kind: "link",
            resource: name.clone(),
            busy: link.utilization,
            detail: format!(
                "the wire {tx} -> {rx} is busy {:.0} % of the time ({:.3} Gb/s of TLP payload)",
                link.utilization * 100.0,
                link.payload_gbps
            ),
        }];
        let by_type = |ty: CreditType| now.credit_stall_by_type[ty] - then.credit_stall_by_type[ty];
        if let Some(ty) = CREDIT_TYPES.into_iter().rev().max_by_key(|&ty| by_type(ty)) {
            let busy = (by_type(ty) as f64 / window).min(1.0);
            let adv = ch
                .rx_credits
                .advertised(ty)
                .map_or("infinite".to_string(), |a| a.to_string());
            let credit = ty.name();
            // A root complex frees posted credits as its memory takes the data: where that
            // memory is limited, it (not the round trip) holds them, and the reads queued
            // behind the waiting writes wait too (a read does not pass a posted write).
            let sink = if ty.class() == FcClass::Posted {
                rx_kind.posted_sink_rate()
            } else {
                None
            };
            let why = match sink {
                Some(rate) => format!(
                    "{rx} frees them as its memory ({:.3} GB/s) takes the data, so posted \
                     writes queue at {tx}, and read requests behind them wait too (a read \
                     does not pass a posted write)",
                    rate / 1e9
                ),
                None => "the receive buffer does not cover the credit round trip".to_string(),
            };
            out.push(Candidate {
                limit: Limit::Stall,
                kind: "credits",
                resource: format!("{tx} -> {rx} {credit} credits"),
                busy,
                detail: format!(
                    "{tx} waits for {credit} credits toward {rx} {:.0} % of the time ({rx} \
                     advertises {adv}): {why}",
                    busy * 100.0
                ),
            });
        }
        out.push(self.replay_candidate(c, tx, rx, window));
        out
    }

    /// The stall candidate of channel `c`'s replay buffer from `tx` to `rx` over a window of
    /// `window` ticks, or of its sequence number window where the buffer holds all of it.
    fn replay_candidate(&self, c: usize, tx: &str, rx: &str, window: f64) -> Candidate {
        let ch = &self.chans[c];
        let (now, then) = (ch.counters, self.window.snapshot[c]);
        let replay = ((now.replay_stall_ticks - then.replay_stall_ticks) as f64 / window).min(1.0);
        // A replay buffer that holds the whole sequence number window of the largest TLPs
        // never fills first: the window (2,047 TLPs unacknowledged) is what waits.
        let largest = self.sys.pcie.mps as u64 + 32;
        let window_bound = ch.tx_dll.capacity as u64 >= MAX_UNACKED as u64 * largest;
        if window_bound {
            Candidate {
                limit: Limit::Stall,
                kind: "sequence_window",
                resource: format!("{tx} -> {rx} sequence number window"),
                busy: replay,
                detail: format!(
                    "{tx} waits with {MAX_UNACKED} TLPs unacknowledged toward {rx} {:.0} % of \
                     the time: the 12-bit sequence number window does not cover the Ack \
                     round trip",
                    replay * 100.0
                ),
            }
        } else {
            Candidate {
                limit: Limit::Stall,
                kind: "replay_buffer",
                resource: format!("{tx} -> {rx} replay buffer"),
                busy: replay,
                detail: format!(
                    "{tx} waits for replay buffer room toward {rx} {:.0} % of the time ({} B): \
                     it does not cover the Ack round trip",
                    replay * 100.0,
                    ch.tx_dll.capacity
                ),
            }
        }
    }
}

/// Workload `w`'s `rate` as a limit of its flow `f` over a window of `window` ticks, if
/// the rate held the flow back in the window: its share is the share of the rate it moved.
fn rate_candidate(w: &WorkloadSpec, f: &Flow, window: f64) -> Option<Candidate> {
    let rate = w.rate?;
    if f.pace.iter().all(|p| p.held == 0) {
        return None;
    }
    let cap = super::pace::cap(w, rate);
    let seconds = window / (SimTime::TICKS_PER_PS as f64 * 1e12);
    let moved = f.bytes as f64 / seconds;
    let share = moved / cap;
    let streams = match w.kind.fio() {
        Some(fio) if fio.numjobs > 1 => format!(" per job, {} jobs", fio.numjobs),
        Some(_) => String::new(),
        None if w.direction == DmaDirection::Both => " per stream, 2 streams".to_string(),
        None => String::new(),
    };
    Some(Candidate {
        limit: Limit::Rate,
        kind: "rate",
        resource: format!("{} rate", w.name),
        busy: share.min(1.0),
        detail: format!(
            "its rate of {:.3} GB/s{streams} held it back: it moved {:.3} GB/s, {:.1} % of \
             {:.3} GB/s",
            rate / 1e9,
            moved / 1e9,
            share * 100.0,
            cap / 1e9
        ),
    })
}

/// An fio workload's I/Os in flight as a limit: fio keeps every one of them in flight all
/// the time (the next is submitted as one completes), so with nothing saturated or stalled
/// its throughput is the I/Os in flight over their latency.
fn fio_depth(fio: FioSpec, mean_ns: Option<f64>) -> Candidate {
    let ios = fio.iodepth * fio.numjobs;
    Candidate {
        limit: Limit::Window,
        kind: "iodepth",
        resource: format!("{ios} I/O{} in flight", if ios == 1 { "" } else { "s" }),
        busy: 1.0,
        detail: format!(
            "fio keeps all {} x {} I/Os of {} B in flight: throughput is the I/Os in flight \
             over the per-I/O latency ({})",
            fio.iodepth,
            fio.numjobs,
            fio.bs,
            match mean_ns {
                Some(ns) => format!("mean {:.1} us", ns / 1000.0),
                None => "none completed in the window: it is longer".to_string(),
            }
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(limit: Limit, kind: &'static str, busy: f64) -> Candidate {
        Candidate {
            limit,
            kind,
            resource: kind.to_string(),
            busy,
            detail: String::new(),
        }
    }

    #[test]
    fn a_saturated_resource_outranks_the_stalls_it_causes() {
        let v = verdict(&[
            cand(Limit::Stall, "credits", 0.6),
            cand(Limit::Saturable, "link", 0.99),
            cand(Limit::Saturable, "memory", 0.5),
        ]);
        assert_eq!(v.kind, "link");
    }

    #[test]
    fn without_saturation_a_stall_then_full_windows_then_offered_load() {
        let stall = cand(Limit::Stall, "credits", 0.3);
        let window = cand(Limit::Window, "requests", 0.8);
        let link = cand(Limit::Saturable, "link", 0.4);
        let all = [link.clone(), stall.clone(), window.clone()];
        assert_eq!(verdict(&all).kind, "credits");
        assert_eq!(verdict(&[link.clone(), window]).kind, "requests");
        let v = verdict(&[link, cand(Limit::Stall, "credits", 0.01)]);
        assert_eq!(
            (v.kind, v.resource.as_str(), v.busy),
            ("offered_load", "link", 0.4)
        );
    }

    #[test]
    fn a_saturated_request_link_ranks_below_a_credit_stall_and_above_full_windows() {
        let requests = cand(Limit::RequestWire, "link", 1.0);
        let stall = cand(Limit::Stall, "credits", 0.3);
        let window = cand(Limit::Window, "requests", 0.8);
        let data = cand(Limit::Saturable, "link", 0.7);
        let all = [requests.clone(), data.clone(), stall, window.clone()];
        assert_eq!(verdict(&all).kind, "credits");
        let v = verdict(&[requests.clone(), data.clone(), window]);
        assert_eq!((v.kind, v.busy), ("link", 1.0));
        // Below saturation it is only the busiest thing the flow crosses.
        let light = cand(Limit::RequestWire, "link", 0.8);
        let v = verdict(&[light, data]);
        assert_eq!((v.kind, v.busy), ("offered_load", 0.8));
    }

    #[test]
    fn a_rate_met_outranks_everything_and_one_missed_is_no_verdict() {
        let link = cand(Limit::Saturable, "link", 0.95);
        let window = cand(Limit::Window, "iodepth", 1.0);
        let met = cand(Limit::Rate, "rate", 0.995);
        let v = verdict(&[link.clone(), window.clone(), met]);
        assert_eq!((v.kind, v.busy), ("rate", 0.995));
        // Held at times, but the rest of the path kept it well below its rate.
        let missed = cand(Limit::Rate, "rate", 0.9);
        assert_eq!(
            verdict(&[link, window.clone(), missed.clone()]).kind,
            "link"
        );
        assert_eq!(verdict(&[window, missed]).kind, "iodepth");
    }

    #[test]
    fn among_equals_the_first_on_the_path_wins() {
        let mut a = cand(Limit::Saturable, "link", 1.0);
        a.resource = "first".into();
        let mut b = cand(Limit::Saturable, "link", 1.0);
        b.resource = "second".into();
        assert_eq!(verdict(&[a, b]).resource, "first");
    }

    #[test]
    fn a_node_resource_as_busy_as_a_link_goes_first() {
        // Writes into a root with huge posted credits: the link is as busy as the memory,
        // but the memory's rate is what the flow gets.
        let link = cand(Limit::Saturable, "link", 1.0);
        let memory = cand(Limit::Saturable, "memory", 1.0);
        assert_eq!(verdict(&[link.clone(), memory]).kind, "memory");
        let slower = cand(Limit::Saturable, "memory", 0.95);
        assert_eq!(verdict(&[link, slower]).kind, "link");
    }
}
