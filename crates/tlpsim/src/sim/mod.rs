//! The TLP-level discrete-event simulator.
//!
//! Each link direction is a [`channel::Channel`]: serialization on a [`Wire`] exactly as the
//! closed form counts it, sequence numbers, a replay buffer and replay timer, Ack and
//! UpdateFC DLLPs on the spec's timer intervals (travelling on the opposite direction),
//! Naks and replays when a bit error corrupts a TLP, and credits per PH/PD/NPH/NPD/CplH/CplD.
//! Nodes are root complexes (memory behind an optional host bridge), switches (cut-through
//! or store-and-forward, crossbar or shared bus) and DMA endpoints. Every run ends with a
//! self-audit ([`result::Audit`]).
//!
//! This module holds the simulator's state and the event loop; its construction (`build`),
//! the results at the end of a run (`finish`), the transmit side (`transmit`) and the
//! receive side (`receive`) of the links, the DMA flows (`flow`) and the transfers a DMA
//! endpoint's engines run (`transfer`) are `impl` blocks of [`Simulator`] in their own
//! files. Each kind of node is a module of `node`, behind the one
//! interface `node::Node`.

pub mod bottleneck;
mod build;
pub mod channel;
mod cx;
mod finish;
mod flow;
mod host_memory;
mod lean;
mod node;
mod outbound;
mod pace;
mod progress;
mod receive;
pub mod result;
pub mod rfc2544;
mod route;
mod slab;
mod socket;
mod throttle;
pub mod trace;
mod transfer;
mod transmit;
#[cfg(test)]
mod watchdog_tests;

pub use lean::Kernel;
pub use rfc2544::rfc2544;
pub(crate) use socket::socket_way_name;

use std::fmt;
use std::time::Instant;

use crate::engine::rng::Rng;
use crate::engine::table::Pool;
use crate::engine::{EventQueue, OpenSpan, SimTime, Table};
use crate::fabric::{
    AckPolicy, Addresses, DmaDirection, Doorbell, Driver, NodeKind, StorageMix, System,
};
use crate::pcie::dll::{self, DLLP_BYTES};
use crate::pcie::tlp::{self, TlpKind};
use crate::pcie::wire::{symbol_ticks, Wire};
use bottleneck::BusyTicks;
use channel::{
    Arrival, Blocked, Channel, ChannelCounters, Dllp, FcClass, Queued, ReplayEntry, CLASSES,
};
use node::requester::Requester;
use node::{AnyNode, NodeEv, NodeReport};
use result::{Audit, FlowResult, LatencyRecorder, LinkResult, RunResult};
use slab::{Owner, Tlp};
use throttle::Calendar;
use trace::{Packet, Trace};

const NONE: u32 = u32::MAX;
/// TLPs a write source keeps queued ahead of its link.
pub(crate) const WRITE_QUEUE_DEPTH: u32 = 2;
/// Interval of every receiver's UpdateFC refresh (spec §2.6.1.2: at least every 30 us).
const FC_REFRESH: SimTime = SimTime::from_ns(30_000);
/// Channels up to which the lean kernel keeps its events in one sorted list rather than
/// the timing wheel (`EventQueue::make_small`): one link's few waiting events.
const SMALL_QUEUE_CHANNELS: usize = 4;

/// Why a run could not finish.
#[derive(Debug, Clone, PartialEq)]
pub enum RunError {
    /// TLPs waited for credits that never came.
    Deadlock(String),
    /// The progress callback asked the run to stop (the message says how far it got).
    Interrupted(String),
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RunError::Deadlock(m) | RunError::Interrupted(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for RunError {}

/// What happens at an instant: link events (one direction of a link, `ch`: its
/// transmitter, its wire, its receiver's data link layer, a switch's forwarding off it), a
/// node event (a node's own timer or the end of its own work, interpreted only by the node),
/// and the run's own (a flow starts, measuring starts, the deadlock watchdog).
///
/// A 4-byte tag and 8-byte alignment: it then moves in whole words (with a 1-byte tag, the
/// 15 bytes after it were copied as overlapping words, stalling store forwarding each pop).
#[derive(Debug, Clone, Copy)]
#[repr(u32, align(8))]
enum Ev {
    /// Channel `ch`'s wire is free: its transmitter sends what it has.
    TxFree(u32),
    /// The oldest TLP in `chans[ch].arriving` reaches the receiver (its last byte: the
    /// data link layer takes it; a TLP forwarded by a switch moves on by a Forward event).
    TlpArrive(u32),
    /// The oldest burst of DLLPs in `chans[ch].dllps_arriving` reaches ch's transmitter.
    DllpArrive(u32),
    /// The switch at the receiving end of `ch` starts forwarding the oldest TLP in
    /// `chans[ch].forwarding` (its port-to-port latency after the first byte arrived when
    /// cut-through, after the last when store-and-forward).
    Forward(u32),
    /// The receiver of `ch` sends the Ack and UpdateFCs it owes (one timer for both: the
    /// spec gives them the same interval).
    DllTimer(u32),
    /// The receiver of `ch` repeats its UpdateFCs (spec §2.6.1.2: at least every 30 us).
    FcRefresh(u32),
    /// The replay timer of `ch`'s transmitter reaches its deadline (or a later one).
    ReplayTimer(u32),
    /// TLP `tlp` (and the chain of TLPs it links to by `next`) joins `ch`'s egress queues.
    Enqueue { ch: u32, tlp: u32 },
    /// An event of node `node`'s own, which only that node's module interprets.
    Node { node: u32, ev: NodeEv },
    /// Flow `f` starts issuing.
    Start(u32),
    /// Stream `stream` of flow `f` (an fio job, or a DMA flow's reads 0 or writes 1) may go
    /// on: its `rate` held it back until now (`pace`).
    Pace { flow: u32, stream: u32 },
    /// The measurement window opens.
    Warmup,
    /// The credit deadlock watchdog looks for transmitters that sent nothing.
    Watchdog,
    /// The starvation watchdog looks for flows that completed nothing (`progress`).
    Progress,
    /// Read requests whose completion timeout is up are given up (`progress`).
    CplTimeout,
}

// Every event moves as two words; a node event's payload must fit beside its node index.
const _: () = assert!(std::mem::size_of::<Ev>() == 16);

/// A read request in flight: its flow, the transfer it is part of (a slot of the flow's
/// `transfer_left`, or for a flow run by its endpoint's engines an entry of
/// `Simulator::dma`), its bytes, and when its latency counts from.
#[derive(Debug, Clone, Copy)]
struct Req {
    flow: u32,
    transfer: u32,
    length: u32,
    remaining: u32,
    next_offset: u64,
    issued: SimTime,
    answered: bool,
    /// Its latency counts from `issued` as made (its transfer's start in the device), not
    /// from when it left.
    from_start: bool,
    /// It reads its transfer's descriptor: not the flow's data.
    descriptor: bool,
    /// The first request of its transfer (when it leaves, the transfer's latency starts;
    /// a transfer run by its endpoint's engines keeps its own start).
    first: bool,
    /// When its requester made it (its completion timeout counts from here).
    made: SimTime,
    /// Its completion timeout expired: completions still coming for it are discarded.
    timed_out: bool,
}

impl Req {
    /// A request of `length` bytes of flow `flow`'s transfer `transfer`, made at `made`,
    /// whose latency counts from when it leaves (its transfer's `first` or not).
    fn new(flow: u32, transfer: u32, length: u32, first: bool, made: SimTime) -> Self {
        Req {
            flow,
            transfer,
            length,
            remaining: length,
            next_offset: 0,
            issued: SimTime::ZERO,
            answered: false,
            from_start: false,
            descriptor: false,
            first,
            made,
            timed_out: false,
        }
    }
}

#[derive(Debug)]
struct Flow {
    source: u32,
    target: u32,
    out: u32,
    reads: bool,
    writes: bool,
    transfer_size: u64,
    tlp_payload: u64,
    outstanding: u32,
    write_queued: u32,
    write_left: u64,
    next_order: u64,
    expected_order: u64,
    active: u32,
    transfer_left: Vec<u64>,
    free_transfers: Vec<u32>,
    /// (transfer slot, bytes not yet requested, host address of the next byte) of the
    /// transfer being requested.
    current: Option<(u32, u64, u64)>,
    /// Where its transfers lie.
    addresses: Addresses,
    /// Slots a sequential walk of its window has passed.
    next_slot: u64,
    /// Host address of the write stream's next byte.
    write_addr: u64,
    /// Its transfers run through its DMA endpoint's engines (`transfer`), not as the plain
    /// read and write streams: the endpoint has limits of its own, or the direction mixes
    /// reads and writes in one stream.
    engines: Option<Box<transfer::Streams>>,
    /// Its transfers write and then read the same bytes: its latency is the pairs'.
    write_read: bool,
    bytes: u64,
    /// First-byte latency per read request or write TLP (`latency_ns`).
    latency: LatencyRecorder,
    /// Latency per transfer, first TLP out to last byte in (`transfer_latency_ns`).
    transfer_latency: LatencyRecorder,
    /// When the first request of each read transfer slot left the requester.
    transfer_issued: Vec<SimTime>,
    /// The write transfer arriving at the target: bytes it has taken so far, and when the
    /// transfer's first TLP left the writer.
    write_taken: u64,
    write_issued: SimTime,
    /// Storage workloads: the access mix, and I/Os started so far (all, reads).
    storage: Option<StorageMix>,
    ios: u64,
    /// Storage writes: bytes the media finished within the measurement window (counted
    /// when the media is done with them, not when PCIe delivered them).
    media_bytes: u64,
    /// Writes into another domain: the bridge doorbell rung after every few transfers.
    doorbell: Option<Doorbell>,
    /// Write transfers fully queued so far.
    transfers_queued: u64,
    /// MSIs the target took within the measurement window.
    interrupts: u64,
    /// Writes that took effect and completions that came, over the whole run (its forward
    /// progress, as the starvation watchdog follows it).
    done: u64,
    /// Every read transfer slot (or every tag of the source) in use, while it lasts.
    window_full: OpenSpan,
    /// Ticks of the measurement window with every read transfer slot or tag in use.
    window_ticks: u64,
    /// Its `rate` per stream or fio job (`pace`; empty without one).
    pace: Vec<pace::Pacer>,
}

impl Flow {
    /// Whether the next I/O of a storage mix is a read (reads spread evenly by their
    /// percentage); None for DMA flows, whose two streams never wait for each other.
    fn next_io_is_read(&self) -> Option<bool> {
        self.storage.map(|m| {
            let p = m.read_percent as u64;
            (self.ios + 1) * p / 100 > self.ios * p / 100
        })
    }

    /// Bytes per transfer of the DMA-read stream (storage write I/O size for storage).
    fn read_transfer(&self) -> u64 {
        self.storage.map_or(self.transfer_size, |m| m.write_size)
    }

    /// Bytes per transfer of the DMA-write stream (storage read I/O size for storage).
    fn write_transfer(&self) -> u64 {
        self.storage.map_or(self.transfer_size, |m| m.read_size)
    }
}

/// A system being simulated: the engine (event queue, random numbers, the TLP table), the
/// channels, the nodes, the routing, the workloads' flows, and what the run watches and
/// records.
pub struct Simulator<'a> {
    sys: &'a System,
    q: EventQueue<Ev>,
    rng: Rng,
    /// Every TLP in flight, with its free entries.
    tlps: Pool<Tlp>,
    chans: Table<Channel>,
    /// Which node and port each channel joins.
    ends: ChannelEnds,
    /// The nodes, and the calls waiting for one whose handler runs (`node::context`).
    nodes: node::context::Nodes,
    /// The next channel from any node toward any other, and how TLPs cross a switch.
    route: route::Routes,
    /// The DMA flows, their read requests and their endpoints' transfers.
    work: Work,
    audit: Audit,
    /// The measurement window.
    window: Window,
    /// The credit deadlock watchdog, completion timeouts and the starvation watchdog.
    watch: Watch,
    /// Host bridges, the shared outbound queues and their drain, the socket links.
    host: HostSide,
    /// The packets on every wire, when the run is traced.
    trace: Option<Trace>,
    /// Some link has a bit error rate (only then can a switch hold nullified copies).
    errors: bool,
    /// Which engine may run it, and the lean kernel's state when that one does (`lean`).
    kernel: Kernel,
    lean: lean::Lean,
}

/// Which node and port each channel joins.
struct ChannelEnds {
    /// Node each channel delivers to, and that node's port index for it.
    rx_node: Table<u32>,
    rx_port: Table<u32>,
    /// The transmitting node's port index of each channel.
    tx_port: Table<u32>,
    /// The egress input of each channel's TLPs that start at its transmitting node: a root
    /// complex's own come in after its root ports' (the peer-to-peer TLPs it forwards),
    /// any other node's on its first.
    own_input: Table<u32>,
}

/// The workloads' run-time state.
struct Work {
    /// One per workload.
    flows: Table<Flow>,
    /// Read requests in flight.
    reqs: Pool<Req>,
    /// Transfers run by DMA endpoints' engines (see `transfer`).
    dma: Pool<transfer::DmaTransfer>,
}

/// The measurement window.
struct Window {
    /// It is open.
    measuring: bool,
    /// Each channel's counters when it opened.
    snapshot: Vec<ChannelCounters>,
    /// Service the non-link resources had given when it opened.
    busy_at_warmup: BusyTicks,
}

/// What watches the run's progress.
struct Watch {
    /// TLPs each channel had sent at the last watchdog check.
    sent_at_watchdog: Vec<u64>,
    /// TLPs delivered at the last watchdog check.
    delivered_at_watchdog: u64,
    /// The credit deadlock watchdog's period.
    watchdog: SimTime,
    /// Completion timeouts and the starvation watchdog (`progress`).
    progress: progress::Progress,
}

/// What the root complexes share with the run: their host bridges, their shared outbound
/// queues and the drain of one, the inter-socket links.
struct HostSide {
    /// Each host bridge's data path and latency.
    bridges: Vec<(Calendar, SimTime)>,
    /// The shared outbound queue is being drained (push must not queue behind itself).
    draining: bool,
    /// The inter-socket links between root complexes (`socket`).
    sockets: socket::SocketLinks,
    /// Per node, the shared outbound queue of a root complex with one (`outbound`).
    outbound: Vec<Option<outbound::Outbound>>,
}

/// Runs `system` to its duration and reports.
pub fn run(system: &System) -> Result<RunResult, RunError> {
    Simulator::new(system).run()
}

/// Whether a run of `system` qualifies for the lean kernel (see [`Kernel`]).
pub fn lean_qualifies(system: &System) -> bool {
    Simulator::new(system).lean_eligible()
}

/// Runs `system` like [`run`] on the engine `kernel` allows (the same results either way).
pub fn run_on(system: &System, kernel: Kernel) -> Result<RunResult, RunError> {
    let mut sim = Simulator::new(system);
    sim.kernel = kernel;
    sim.run()
}

/// Events between two calls of a progress callback (tens of milliseconds of wall time).
pub const PROGRESS_EVERY: u64 = 1 << 18;

/// Runs `system` like [`run`], calling `progress` with the fraction of the simulated time
/// done (0 to 1) every [`PROGRESS_EVERY`] events and once at the end; when it returns
/// false the run stops with [`RunError::Interrupted`]. The callback cannot change the
/// results: the same scenario gives the same numbers with or without it.
pub fn run_with_progress(
    system: &System,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<RunResult, RunError> {
    Simulator::new(system).run_reporting(progress)
}

/// Runs `system` like [`run_with_progress`] and also records the first `limit` packets put
/// on any wire (see [`trace`]). Tracing changes no result.
pub fn run_traced(
    system: &System,
    limit: usize,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(RunResult, Trace), RunError> {
    let mut sim = Simulator::new(system);
    sim.trace = Some(Trace::new(limit));
    let (result, trace) = sim.run_inner(progress)?;
    Ok((result, trace.unwrap_or_else(|| Trace::new(0))))
}

/// Runs `system` like [`run_with_progress`] and streams the first `limit` packets put on
/// any wire to `out` as Chrome trace JSON while it runs (see [`trace`]), so that memory does
/// not grow with the trace. Returns the result and what the trace wrote, or the error that
/// stopped its writing (the run goes on without it). Tracing changes no result.
pub fn run_traced_to(
    system: &System,
    limit: usize,
    out: Box<dyn std::io::Write + Send>,
    progress: &mut dyn FnMut(f64) -> bool,
) -> Result<(RunResult, std::io::Result<trace::Written>), RunError> {
    let mut sim = Simulator::new(system);
    sim.trace = Some(Trace::streaming(limit, system, out));
    let (result, trace) = sim.run_inner(progress)?;
    Ok((result, trace.unwrap_or_else(|| Trace::new(0)).finish()))
}

impl Simulator<'_> {
    /// Runs to the scenario's duration.
    pub fn run(self) -> Result<RunResult, RunError> {
        self.run_reporting(&mut |_| true)
    }

    /// Runs to the end, calling `progress` as [`run_with_progress`] describes.
    pub fn run_reporting(
        self,
        progress: &mut dyn FnMut(f64) -> bool,
    ) -> Result<RunResult, RunError> {
        self.run_inner(progress).map(|(r, _)| r)
    }

    /// Runs to the end; returns the results and the trace, if one was recorded.
    fn run_inner(
        mut self,
        progress: &mut dyn FnMut(f64) -> bool,
    ) -> Result<(RunResult, Option<Trace>), RunError> {
        let wall = Instant::now();
        if self.sys.warmup == SimTime::ZERO {
            // No warmup: measure from before the first packet.
            self.start_measuring();
        }
        for f in 0..self.work.flows.len() {
            self.q.schedule(SimTime::ZERO, Ev::Start(f as u32));
        }
        for n in 0..self.nodes.len() {
            AnyNode::start(&mut self, n);
        }
        // Every receiver with finite credits repeats its UpdateFCs (errors or not: a link
        // with a bit error rate of 1e-300 runs as one with none).
        for (c, ch) in self.chans.iter().enumerate() {
            if ch.rx_credits.finite_classes() != 0 {
                self.q.schedule(FC_REFRESH, Ev::FcRefresh(c as u32));
            }
        }
        if self.sys.warmup > SimTime::ZERO {
            self.q.schedule(self.sys.warmup, Ev::Warmup);
        }
        self.q.schedule(self.watch.watchdog, Ev::Watchdog);
        self.start_progress();
        if self.kernel != Kernel::General && self.lean_eligible() {
            return self.run_lean(progress);
        }
        let end = self.sys.duration;
        let fraction = |t: SimTime| t.ticks() as f64 / end.ticks().max(1) as f64;
        while let Some((now, ev)) = self.q.pop_until(end) {
            self.handle(ev)?;
            if self.q.events() % PROGRESS_EVERY == 0 && !progress(fraction(now)) {
                return Err(RunError::Interrupted(format!(
                    "interrupted after {:.3} us of {:.3} us simulated",
                    now.as_ns_f64() / 1000.0,
                    end.as_ns_f64() / 1000.0
                )));
            }
        }
        if self.q.is_empty()
            && self
                .chans
                .iter()
                .any(|c| c.arbiter.queued > 0 && matches!(c.blocked, Blocked::Credits(_)))
        {
            return Err(self.deadlock());
        }
        progress(1.0);
        let trace = self.trace.take();
        Ok((self.finish(wall.elapsed().as_secs_f64()), trace))
    }

    /// Runs the event loop on the lean kernel (set up by `run_inner`); if it gives up, the
    /// run starts again on the general engine, its progress calls going on from the
    /// furthest fraction reported.
    #[cold]
    fn run_lean(
        mut self,
        progress: &mut dyn FnMut(f64) -> bool,
    ) -> Result<(RunResult, Option<Trace>), RunError> {
        let wall = Instant::now();
        self.lean_start();
        if self.chans.len() <= SMALL_QUEUE_CHANNELS {
            self.q.make_small();
        }
        let mut furthest = 0.0f64;
        let mut noted = |f: f64| {
            furthest = furthest.max(f);
            progress(f)
        };
        match self.lean_loop(&mut noted) {
            Some(Ok(())) => {
                progress(1.0);
                Ok((self.finish(wall.elapsed().as_secs_f64()), None))
            }
            Some(Err(e)) => Err(e),
            None if self.kernel == Kernel::LeanOrError => Err(RunError::Interrupted(
                "the lean kernel gave up (a flow quiet for a watchdog period, a read that \
                 timed out, a Nak or an event it does not take)"
                    .into(),
            )),
            None => {
                // The abandoned run's state goes before the general one is built; its
                // progress calls go on from the furthest fraction reported, still called
                // (a caller's stop request is answered while the run catches up).
                let sys = self.sys;
                drop(self);
                let mut general = Simulator::new(sys);
                general.kernel = Kernel::General;
                general.run_inner(&mut |f| progress(f.max(furthest)))
            }
        }
    }

    fn now(&self) -> SimTime {
        self.q.now()
    }

    fn handle(&mut self, ev: Ev) -> Result<(), RunError> {
        match ev {
            Ev::TxFree(c) => {
                self.chans[c as usize].tx_event = false;
                self.try_send(c);
            }
            Ev::TlpArrive(c) => {
                let a = self.chans[c as usize].phy.arriving.pop_front();
                if let Some(a) = a {
                    let frees_wire = a.frees_wire;
                    self.on_tlp(c, a);
                    if frees_wire {
                        self.chans[c as usize].tx_event = false;
                        self.try_send(c);
                    }
                }
            }
            Ev::Forward(c) => {
                if let Some((id, head)) = self.chans[c as usize].forwarding.pop_front() {
                    if self.errors && self.tlps[id as usize].nullified {
                        // Never in the switch's buffer: straight to its egress queue.
                        let n = self.ends.rx_node[c as usize] as usize;
                        let dst = self.tlps[id as usize].dst as usize;
                        let out = self.route.hop(n, c, dst);
                        self.tlps[id as usize].ingress = c;
                        self.enqueue_tlp(out, id);
                    } else {
                        self.tlp_receive(c, id, head);
                    }
                }
            }
            Ev::DllpArrive(c) => {
                while let Some((dllp, bad, last)) =
                    self.chans[c as usize].phy.dllps_arriving.pop_front()
                {
                    self.on_dllp(c, dllp, bad);
                    if last {
                        break;
                    }
                }
                self.try_send(c);
            }
            Ev::DllTimer(c) => self.on_dll_timer::<false>(c),
            Ev::FcRefresh(c) => self.on_fc_refresh::<false>(c),
            Ev::ReplayTimer(c) => self.on_replay_timer::<false>(c),
            Ev::Enqueue { ch, mut tlp } => loop {
                // Completions ready at the same time come as one chain.
                let next = std::mem::replace(&mut self.tlps[tlp as usize].next, NONE);
                self.push(ch, tlp);
                if next == NONE {
                    break;
                }
                tlp = next;
            },
            Ev::Node { node, ev } => AnyNode::event(self, node as usize, ev),
            Ev::Start(f) => self.start_flow(f),
            Ev::Pace { flow, stream } => self.pace_woken(flow, stream as usize),
            Ev::Warmup => self.start_measuring(),
            Ev::Progress => self.look_for_starvation(),
            Ev::CplTimeout => self.check_completion_timeouts(),
            Ev::Watchdog => self.credit_watchdog()?,
        }
        Ok(())
    }

    /// Flow `f` starts issuing (`Ev::Start`): an fio workload's I/Os through its NVMe drive
    /// (`node::nvme`); a DMA, storage or memcpy flow run by its endpoint's engines through
    /// them (`transfer`), any other's write and read streams; a bridging workload nothing
    /// (its NIC's frames drive it, `node::nic`).
    #[cold]
    fn start_flow(&mut self, f: u32) {
        match self.sys.workloads[f as usize].kind.driver() {
            Driver::FioJobs => {
                let n = self.sys.workloads[f as usize].source;
                AnyNode::workload_start(self, n, f);
            }
            Driver::Frames => {}
            Driver::Streams => {
                // Outside its requester's handlers: the requester is in its slot.
                let rq = &mut Requester::InSlot(self.work.flows[f as usize].source as usize);
                if self.work.flows[f as usize].engines.is_some() {
                    self.start_transfers(rq, f);
                    return;
                }
                if self.work.flows[f as usize].writes {
                    self.fill_writes(rq, f);
                }
                if self.work.flows[f as usize].reads {
                    self.issue_reads(rq, f);
                }
            }
        }
    }

    /// The credit deadlock watchdog's look (`Ev::Watchdog`).
    #[cold]
    fn credit_watchdog(&mut self) -> Result<(), RunError> {
        // A transmitter that had TLPs waiting for credits and sent none for a whole
        // watchdog period is deadlocked if the credits it lacks can never come, or if
        // nothing else moved either and nothing is on its way that could free credits
        // (a slow fabric is not a stuck one; credits a lost UpdateFC granted come with
        // the refresh).
        // Per stuck transmitter: whether its credits can never come.
        let stuck: Vec<bool> = self
            .chans
            .iter()
            .zip(&self.watch.sent_at_watchdog)
            .filter(|(c, &sent)| {
                c.arbiter.queued > 0
                    && matches!(c.blocked, Blocked::Credits(_))
                    && c.counters.tlps == sent
                    && !c.awaits_update_fc()
            })
            .map(|(c, _)| c.starved_for_good())
            .collect();
        if stuck.contains(&true) || (!stuck.is_empty() && self.quiescent()) {
            return Err(self.deadlock());
        }
        self.watch.sent_at_watchdog = self.chans.iter().map(|c| c.counters.tlps).collect();
        self.watch.delivered_at_watchdog = self.audit.tlps_delivered;
        self.q
            .schedule(self.now() + self.watch.watchdog, Ev::Watchdog);
        Ok(())
    }

    /// True when nothing moved since the last watchdog check (no TLP sent or delivered
    /// anywhere) and nothing is under way that could move something: no TLP or DLLP on a
    /// wire or inside a switch, and no pending event but timers that free nothing by
    /// themselves (the watchdog, warmup, UpdateFC refresh) and frames arriving from outside.
    fn quiescent(&self) -> bool {
        let moved = self.audit.tlps_delivered != self.watch.delivered_at_watchdog
            || self
                .chans
                .iter()
                .zip(&self.watch.sent_at_watchdog)
                .any(|(c, &sent)| c.counters.tlps != sent);
        let under_way = self.chans.iter().any(|c| {
            c.awaits_update_fc()
                || !c.phy.arriving.is_empty()
                || !c.phy.dllps_arriving.is_empty()
                || !c.forwarding.is_empty()
                || !c.phy.dllp_out.is_empty()
        });
        let pending = self.q.any(|e| {
            !matches!(
                e,
                Ev::Watchdog
                    | Ev::Progress
                    | Ev::CplTimeout
                    | Ev::Warmup
                    | Ev::FcRefresh(_)
                    | Ev::Node {
                        ev: NodeEv::Frame(_),
                        ..
                    }
            )
        });
        !moved && !under_way && !pending
    }

    fn deadlock(&self) -> RunError {
        let mut parts = Vec::new();
        for (c, ch) in self.chans.iter().enumerate() {
            if ch.arbiter.queued == 0 || !matches!(ch.blocked, Blocked::Credits(_)) {
                continue;
            }
            let link = &self.sys.links[c / 2];
            let (tx, rx) = if c % 2 == 0 {
                (link.up, link.down)
            } else {
                (link.down, link.up)
            };
            let why = match ch.blocked {
                Blocked::Credits(ty) => {
                    let adv = ch.rx_credits.advertised(ty);
                    let adv = adv.map_or("infinite".to_string(), |a| a.to_string());
                    format!(
                        "waiting for {} credits ({} available, {} advertised by {})",
                        ty.name(),
                        ch.tx_credits.available(ty),
                        adv,
                        self.sys.nodes[rx].name
                    )
                }
                Blocked::ReplayBuffer => "waiting for replay buffer space".to_string(),
                Blocked::Empty => "waiting".to_string(),
            };
            parts.push(format!(
                "port {} -> {}: {} TLP(s) {why}",
                self.sys.nodes[tx].name, self.sys.nodes[rx].name, ch.arbiter.queued
            ));
        }
        RunError::Deadlock(format!(
            "credit deadlock at {:.3} us: {}. A receiver must advertise at least one \
             MPS-sized TLP of data credits (MPS {} B = {} credits) per type",
            self.now().as_ns_f64() / 1000.0,
            parts.join("; "),
            self.sys.pcie.mps,
            self.sys.pcie.mps / 16
        ))
    }

    fn start_measuring(&mut self) {
        let now = self.now();
        for (c, ch) in self.chans.iter_mut().enumerate() {
            if ch.end_stall(now) {
                ch.stall.open(now);
            }
            if ch.end_replay_stall(now) {
                ch.replay_stall.open(now);
            }
            ch.account_queue(now);
            ch.arbiter.queue_max = ch.arbiter.queued;
            ch.counters.busy_ticks = ch.phy.wire.busy_ticks();
            self.window.snapshot[c] = ch.counters;
        }
        for f in self.work.flows.iter_mut() {
            f.bytes = 0;
            f.latency = LatencyRecorder::default();
            f.transfer_latency = LatencyRecorder::default();
            f.window_ticks = 0;
            f.window_full.restart(now);
        }
        for node in self.nodes.iter_mut() {
            node.measure_from(now);
        }
        self.window.busy_at_warmup = self.busy_ticks(now);
        self.window.measuring = true;
    }

    // ---- TLP slab -------------------------------------------------------------------

    fn new_tlp(&mut self, t: Tlp) -> u32 {
        self.audit.tlps_created += 1;
        self.audit.payload_created += t.payload as u64;
        self.slot_for(t)
    }

    /// Puts `t` in a free slab entry (a nullified copy goes here directly: the audit does
    /// not count it).
    fn slot_for(&mut self, t: Tlp) -> u32 {
        self.tlps.place(t)
    }

    /// The TLP reached its destination and is consumed.
    fn deliver(&mut self, id: u32) {
        let t = &mut self.tlps[id as usize];
        if !t.live {
            self.audit.duplicates += 1;
            return;
        }
        t.live = false;
        self.audit.tlps_delivered += 1;
        self.audit.payload_delivered += t.payload as u64;
        self.tlps.release(id);
    }
}
