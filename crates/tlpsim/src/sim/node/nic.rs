//! Gigabit Ethernet NICs and the host CPU that bridges frames between their ports.
//!
//! Receive: frames arrive from the wire at a constant rate into the port's RX FIFO (a frame
//! that does not fit is dropped), the NIC writes each to host memory (MPS-sized MWr), writes
//! its descriptor back (16 B MWr) and raises an MSI (at most one per moderation interval,
//! masked until the CPU re-enables it). The CPU takes the interrupt, reads the cause register
//! (a blocking MMIO read through the fabric), bridges each frame (software cost per frame and
//! per byte), posts it on the other port's transmit ring and writes the NIC's registers
//! (posted MMIO writes; the CPU stalls when the root complex holds `posted_depth` of them).
//! Transmit: on the doorbell the NIC reads the descriptors, then the frame data (MRd, its
//! tags), sends the frame on the wire and writes the descriptor back. A NIC absorbs one
//! register access per `register_time` and returns the posted credit only after it, so a
//! NIC with few credits holds up the root port, which a switch's buffers hide.

use std::collections::VecDeque;

use super::cpu::CpuTlp;
use super::root::cpu_owner;
use super::{AnyNode, Node, NodeEv};
use crate::engine::{OpenSpan, SimTime};
use crate::fabric::{CpuSpec, NicSpec, NodeKind};
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::result::EthernetResult;
use crate::sim::{Ev, Owner, Simulator, Tlp, NONE};

/// A NIC's PCIe side at run time: its read tags (its Ethernet side lives in [`Nics`]).
#[derive(Debug)]
pub(in crate::sim) struct NicEndpoint {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
}

impl Node for NicEndpoint {
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, _head: SimTime) {
        if let Some(k) = sim.nics.at(n) {
            sim.at_nic(k, c, id, t);
        }
    }

    fn start(sim: &mut Simulator<'_>, n: usize) {
        if let Some(k) = sim.nics.at(n) {
            sim.start_nic(k);
        }
    }

    fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        if let Some(k) = sim.nics.at(n) {
            sim.on_nic_event(k, ev);
        }
    }

    fn tlp_left(sim: &mut Simulator<'_>, n: usize, id: u32, _start: SimTime) {
        if let Some(k) = sim.nics.at(n) {
            sim.nic_tlp_left(k, id);
        }
    }

    fn tlp_written(sim: &mut Simulator<'_>, n: usize, t: &Tlp, _c: u32) {
        if let Some(k) = sim.nics.at(n) {
            sim.nic_tlp_written(k, t);
        }
    }
}

/// What a NIC's own TLP is to it: the cookie of its [`Owner`], encoded and decoded only
/// here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NicTlp {
    /// Received frame data written to host memory from this port (`last`: the frame's last
    /// TLP).
    RxData { port: u32, last: bool },
    /// A receive descriptor write-back of this port.
    RxWriteBack(u32),
    /// A transmit descriptor write-back of this port.
    TxWriteBack(u32),
    /// Its MSI.
    Msi,
    /// A read of this port's transmit descriptors, and its completions.
    TxDesc(u32),
    /// A read of the data of the frame in transmit slot `slot` of this port, and its
    /// completions.
    TxData { port: u32, slot: u32 },
}

impl NicTlp {
    /// Its cookie: the variant in bits 28 to 31, `last` in bit 27, the port in bits 16 to
    /// 26, the slot below.
    fn cookie(self) -> u32 {
        let (tag, port, slot, last) = match self {
            NicTlp::RxData { port, last } => (0, port, 0, last),
            NicTlp::RxWriteBack(port) => (1, port, 0, false),
            NicTlp::TxWriteBack(port) => (2, port, 0, false),
            NicTlp::Msi => (3, 0, 0, false),
            NicTlp::TxDesc(port) => (4, port, 0, false),
            NicTlp::TxData { port, slot } => (5, port, slot, false),
        };
        debug_assert!(port < 1 << 11 && slot < 1 << 16);
        tag << 28 | u32::from(last) << 27 | port << 16 | slot
    }

    /// The owner of this TLP of the NIC at node `node`.
    fn owner(self, node: u32) -> Owner {
        Owner {
            node,
            cookie: self.cookie(),
        }
    }

    /// The TLP a cookie made by [`Self::cookie`] stands for.
    fn of(cookie: u32) -> Self {
        let port = cookie >> 16 & 0x7ff;
        match cookie >> 28 {
            0 => NicTlp::RxData {
                port,
                last: cookie >> 27 & 1 != 0,
            },
            1 => NicTlp::RxWriteBack(port),
            2 => NicTlp::TxWriteBack(port),
            3 => NicTlp::Msi,
            4 => NicTlp::TxDesc(port),
            _ => NicTlp::TxData {
                port,
                slot: cookie & 0xffff,
            },
        }
    }
}

/// Bytes an Ethernet frame occupies on the wire beyond its own: preamble 8 + gap 12.
pub const WIRE_OVERHEAD: u32 = 20;

/// Bits a `frame`-byte Ethernet frame occupies on the wire (preamble and gap included).
pub fn wire_bits(frame: u32) -> f64 {
    (frame + WIRE_OVERHEAD) as f64 * 8.0
}

/// Simulator ticks `seconds` lasts (fractional).
fn ticks(seconds: f64) -> f64 {
    seconds * 1e12 * SimTime::TICKS_PER_PS as f64
}
/// Bytes of one receive or transmit descriptor.
const DESCRIPTOR_BYTES: u32 = 16;
/// Descriptors a NIC fetches with one read.
const DESCRIPTOR_FETCH: u32 = 16;

/// One Ethernet port of a NIC.
#[derive(Debug, Default)]
struct Port {
    /// Bridge workload feeding it (NONE when the NIC has none).
    flow: u32,
    frame: u32,
    interval_ticks: f64,
    first: SimTime,
    /// Frames arrived so far (the next one's index).
    arrivals: u64,
    fifo_frames: u32,
    fifo_bytes: u32,
    dma_active: bool,
    rx_desc: u32,
    /// Written back, waiting for the CPU.
    rx_ready: u32,
    /// Processed by the CPU, descriptors not yet returned.
    rx_done: u32,
    /// Posted on the transmit ring by the CPU, doorbell not yet rung.
    tx_posted: u32,
    /// Rung, not yet fetched by the NIC.
    tx_doorbelled: u32,
    tx_fetching: bool,
    /// Descriptors the read in flight fetches.
    tx_fetch_n: u32,
    /// Descriptors fetched whose frame data is not yet requested.
    tx_to_read: u32,
    /// Transmit ring entries in use (posted until sent).
    tx_in_ring: u32,
    /// Bytes still to come per frame being read; free slots.
    tx_slots: Vec<u32>,
    tx_free: Vec<u32>,
    wire_free: SimTime,
    received: u64,
    dropped: u64,
    sw_dropped: u64,
    forwarded: u64,
}

impl Port {
    fn backlog(&self) -> u64 {
        self.received - self.forwarded - self.sw_dropped
    }
}

/// Counters at the start of the measurement window (per NIC port) and backlog samples.
#[derive(Debug, Default, Clone, Copy)]
struct Window {
    dropped: u64,
    sw_dropped: u64,
    forwarded: u64,
    arrivals: u64,
    /// Backlog sums and sample counts over the first and second half of the window.
    sums: [f64; 2],
    samples: [u64; 2],
}

/// A NIC at run time.
#[derive(Debug)]
struct Nic {
    node: u32,
    spec: NicSpec,
    ports: Vec<Port>,
    windows: Vec<Window>,
    /// Channel toward the root complex.
    up: u32,
    /// Channel from the root complex toward it.
    down: u32,
    int_enabled: bool,
    unsignalled: u32,
    last_int: Option<SimTime>,
    int_timer: bool,
    reg_free: SimTime,
    core: u32,
    queued_on_core: bool,
}

/// What a core is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Idle,
    Interrupt,
    Reads(u32),
    Frames,
    FrameDone(u32),
    FrameWrites(u32),
    EndWrites(u32),
}

#[derive(Debug)]
struct Core {
    phase: Phase,
    nic: u32,
    queue: VecDeque<u32>,
    next_port: u32,
    /// Busy (out of `Phase::Idle`), while it lasts.
    busy: OpenSpan,
    /// Ticks busy within the measurement window before the current busy span.
    busy_ticks: u64,
}

/// The effect of one register write when the NIC absorbs it.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct RegEffect {
    nic: u32,
    tdt: [u32; 2],
    rdt: [u32; 2],
    enable: bool,
}

/// The NICs and the CPU of a run.
#[derive(Debug, Default)]
pub(in crate::sim) struct Nics {
    nics: Vec<Nic>,
    /// NIC index by node (NONE for other nodes).
    by_node: Vec<u32>,
    cpu: Option<CpuSpec>,
    cores: Vec<Core>,
    pub(in crate::sim) regs: Vec<RegEffect>,
    pub(in crate::sim) free_regs: Vec<u32>,
    pub(in crate::sim) posted_queued: u32,
    pub(in crate::sim) posted_waiters: Vec<u32>,
    /// The root complex the CPU sits behind (where NIC DMA and interrupts go).
    root: u32,
    mid: SimTime,
}

impl Nics {
    /// The NIC at `node`, if it is one.
    pub(in crate::sim) fn at(&self, node: usize) -> Option<u32> {
        self.by_node.get(node).copied().filter(|&i| i != NONE)
    }
}

impl Simulator<'_> {
    /// Builds the NIC and CPU state of the system.
    pub(in crate::sim) fn build_nics(&mut self) {
        let n = self.sys.nodes.len();
        let mut nics = Nics {
            by_node: vec![NONE; n],
            cpu: self.sys.cpu,
            mid: SimTime::from_ticks((self.sys.warmup.ticks() + self.sys.duration.ticks()) / 2),
            ..Nics::default()
        };
        let cores = self.sys.cpu.map_or(1, |c| c.cores);
        let root = self.sys.cpu.map_or(0, |c| c.root);
        nics.root = root as u32;
        for (i, node) in self.sys.nodes.iter().enumerate() {
            if let NodeKind::Endpoint {
                nic: Some(spec), ..
            } = node.kind
            {
                let idx = nics.nics.len() as u32;
                nics.by_node[i] = idx;
                let ports = (0..spec.ports)
                    .map(|_| Port {
                        flow: NONE,
                        rx_desc: spec.rx_ring,
                        ..Port::default()
                    })
                    .collect();
                nics.nics.push(Nic {
                    node: i as u32,
                    spec,
                    ports,
                    windows: vec![Window::default(); spec.ports as usize],
                    up: self.route[i * n + root],
                    down: self.route[root * n + i],
                    int_enabled: true,
                    unsignalled: 0,
                    last_int: None,
                    int_timer: false,
                    reg_free: SimTime::ZERO,
                    core: idx % cores,
                    queued_on_core: false,
                });
            }
        }
        nics.cores = (0..cores)
            .map(|_| Core {
                phase: Phase::Idle,
                nic: 0,
                queue: VecDeque::new(),
                next_port: 0,
                busy: OpenSpan::default(),
                busy_ticks: 0,
            })
            .collect();
        for (f, w) in self.sys.workloads.iter().enumerate() {
            let (Some(b), Some(k)) = (w.bridge, nics.at(w.source)) else {
                continue;
            };
            let nic = &mut nics.nics[k as usize];
            let rate = nic.spec.line_rate * b.load;
            let interval = ticks(wire_bits(b.frame_size) / rate);
            for (p, port) in nic.ports.iter_mut().enumerate() {
                port.flow = f as u32;
                port.frame = b.frame_size;
                port.interval_ticks = interval;
                // The ports' streams are independent: offset the second by half a frame time.
                port.first = SimTime::from_ticks((interval * p as f64 / 2.0) as u64);
            }
        }
        self.nics = nics;
    }

    /// Schedules the first frame on every port of NIC `k` with a bridge workload.
    fn start_nic(&mut self, k: u32) {
        let nic = &self.nics.nics[k as usize];
        for (p, port) in nic.ports.iter().enumerate() {
            if port.flow != NONE {
                let ev = self.nic_ev(k, NodeEv::Frame(p as u32));
                self.q.schedule(port.first, ev);
            }
        }
    }

    /// The event `ev` of NIC `k`.
    fn nic_ev(&self, k: u32, ev: NodeEv) -> Ev {
        Ev::Node {
            node: self.nics.nics[k as usize].node,
            ev,
        }
    }

    /// The event of core `core` of the host CPU (it sits behind its root complex).
    pub(in crate::sim) fn cpu_ev(&self, core: u32) -> Ev {
        Ev::Node {
            node: self.nics.root,
            ev: NodeEv::Cpu(core),
        }
    }

    /// Per core, the fraction of the measurement window (which ends at `end`) it was busy:
    /// taking interrupts, reading registers, bridging frames, writing registers.
    pub(in crate::sim) fn cpu_busy(&self, end: SimTime) -> Vec<f64> {
        let window = end.saturating_sub(self.sys.warmup).ticks().max(1) as f64;
        self.nics
            .cores
            .iter()
            .map(|c| ((c.busy_ticks + c.busy.elapsed(end)) as f64 / window).min(1.0))
            .collect()
    }

    /// The core that serves the NIC at `node`, if the node is a NIC.
    pub(in crate::sim) fn nic_core(&self, node: usize) -> Option<u32> {
        self.nics.at(node).map(|k| self.nics.nics[k as usize].core)
    }

    /// The measurement window starts: snapshot the Ethernet counters, restart the cores'
    /// busy time.
    pub(in crate::sim) fn nics_start_window(&mut self) {
        let now = self.now();
        for c in &mut self.nics.cores {
            c.busy_ticks = 0;
            c.busy.restart(now);
        }
        for nic in &mut self.nics.nics {
            for (w, p) in nic.windows.iter_mut().zip(&nic.ports) {
                *w = Window {
                    dropped: p.dropped,
                    sw_dropped: p.sw_dropped,
                    forwarded: p.forwarded,
                    arrivals: p.arrivals,
                    ..Window::default()
                };
            }
        }
    }

    /// Handles an Ethernet event of NIC `k`.
    fn on_nic_event(&mut self, k: u32, ev: NodeEv) {
        match ev {
            NodeEv::Frame(port) => self.frame_arrives(k, port),
            NodeEv::Register(tlp) => self.register_done(k, tlp),
            NodeEv::TxDone(port) => self.tx_done(k, port),
            NodeEv::Interrupt => {
                self.nics.nics[k as usize].int_timer = false;
                self.maybe_interrupt(k);
            }
            _ => {}
        }
    }

    fn frame_arrives(&mut self, k: u32, p: u32) {
        let now = self.now();
        let measuring = self.measuring;
        let mid = self.nics.mid;
        let nic = &mut self.nics.nics[k as usize];
        let fifo = nic.spec.rx_fifo;
        let port = &mut nic.ports[p as usize];
        port.arrivals += 1;
        let next = port.first.ticks() as f64 + port.arrivals as f64 * port.interval_ticks;
        let node = nic.node;
        self.q.schedule(
            SimTime::from_ticks(next.round() as u64),
            Ev::Node {
                node,
                ev: NodeEv::Frame(p),
            },
        );
        if port.fifo_bytes + port.frame > fifo {
            port.dropped += 1;
        } else {
            port.received += 1;
            port.fifo_frames += 1;
            port.fifo_bytes += port.frame;
        }
        if measuring {
            let half = usize::from(now >= mid);
            let backlog = port.backlog() as f64;
            let w = &mut nic.windows[p as usize];
            w.sums[half] += backlog;
            w.samples[half] += 1;
        }
        self.rx_dma(k, p);
    }

    /// Starts writing the oldest frame of the FIFO to host memory if a descriptor is free.
    fn rx_dma(&mut self, k: u32, p: u32) {
        let mps = self.sys.pcie.mps;
        let nic = &mut self.nics.nics[k as usize];
        let port = &mut nic.ports[p as usize];
        if port.dma_active || port.fifo_frames == 0 || port.rx_desc == 0 {
            return;
        }
        port.dma_active = true;
        port.rx_desc -= 1;
        let (frame, up, node) = (port.frame, nic.up, nic.node);
        let root = self.nics.root;
        let pieces: Vec<u32> = tlp::split(frame as u64, mps).collect();
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            let data = NicTlp::RxData {
                port: p,
                last: i == last,
            };
            let id = self.nic_tlp(TlpKind::MWr, node, root, piece, data.owner(node));
            self.push(up, id);
        }
        let owner = NicTlp::RxWriteBack(p).owner(node);
        let wb = self.nic_tlp(TlpKind::MWr, node, root, DESCRIPTOR_BYTES, owner);
        self.push(up, wb);
        self.nics.nics[k as usize].unsignalled += 1;
        self.maybe_interrupt(k);
    }

    /// A new TLP of the NIC or CPU machinery: `bytes` is the data of a write or completion,
    /// the length asked for by a read.
    fn nic_tlp(&mut self, kind: TlpKind, src: u32, dst: u32, bytes: u32, owner: Owner) -> u32 {
        self.new_tlp(Tlp::at_source(kind, src, dst, bytes, owner))
    }

    /// TLP `id` of NIC `k` left it: the last TLP of a frame frees its FIFO space.
    fn nic_tlp_left(&mut self, k: u32, id: u32) {
        if let NicTlp::RxData {
            port: p,
            last: true,
        } = NicTlp::of(self.tlps[id as usize].owner.cookie)
        {
            let port = &mut self.nics.nics[k as usize].ports[p as usize];
            port.fifo_frames -= 1;
            port.fifo_bytes -= port.frame;
            port.dma_active = false;
            self.rx_dma(k, p);
        }
    }

    /// Sends an MSI if interrupts are enabled, something was written back since the last
    /// one, and the moderation interval allows; otherwise arms the moderation timer.
    fn maybe_interrupt(&mut self, k: u32) {
        let now = self.now();
        let nic = &mut self.nics.nics[k as usize];
        if !nic.int_enabled || nic.unsignalled == 0 {
            return;
        }
        let due = nic
            .last_int
            .map_or(now, |t| (t + nic.spec.interrupt_interval).max(now));
        if due > now {
            if !nic.int_timer {
                nic.int_timer = true;
                let ev = Ev::Node {
                    node: nic.node,
                    ev: NodeEv::Interrupt,
                };
                self.q.schedule(due, ev);
            }
            return;
        }
        nic.int_enabled = false;
        nic.unsignalled = 0;
        nic.last_int = Some(now);
        let (node, up) = (nic.node, nic.up);
        let root = self.nics.root;
        let id = self.nic_tlp(TlpKind::MWr, node, root, 4, NicTlp::Msi.owner(node));
        self.push(up, id);
    }

    /// Posted write `t` of NIC `k` is in host memory: a written-back descriptor is ready for
    /// the CPU; an MSI queues the NIC on its core.
    fn nic_tlp_written(&mut self, k: u32, t: &Tlp) {
        match NicTlp::of(t.owner.cookie) {
            NicTlp::RxWriteBack(p) => self.nics.nics[k as usize].ports[p as usize].rx_ready += 1,
            NicTlp::Msi => {
                let nic = &mut self.nics.nics[k as usize];
                if !nic.queued_on_core {
                    nic.queued_on_core = true;
                    let core = nic.core;
                    self.nics.cores[core as usize].queue.push_back(k);
                    if self.nics.cores[core as usize].phase == Phase::Idle {
                        self.next_interrupt(core);
                    }
                }
            }
            _ => {}
        }
    }

    fn next_interrupt(&mut self, core: u32) {
        let now = self.now();
        let cost = self.nics.cpu.map_or(SimTime::ZERO, |c| c.interrupt_cost);
        let c = &mut self.nics.cores[core as usize];
        let Some(k) = c.queue.pop_front() else {
            c.phase = Phase::Idle;
            c.busy_ticks += c.busy.close(now).unwrap_or(0);
            return;
        };
        c.nic = k;
        c.phase = Phase::Interrupt;
        c.busy.open(now);
        self.nics.nics[k as usize].queued_on_core = false;
        let ev = self.cpu_ev(core);
        self.q.schedule(now + cost, ev);
    }

    /// Runs core `core` until it has to wait (software time, a register read, posted space).
    pub(in crate::sim) fn advance(&mut self, core: u32) {
        let Some(cpu) = self.nics.cpu else {
            return;
        };
        loop {
            let now = self.now();
            let c = &self.nics.cores[core as usize];
            let k = c.nic;
            match c.phase {
                Phase::Idle => return,
                Phase::Interrupt => {
                    self.nics.cores[core as usize].phase = Phase::Reads(cpu.reads_per_interrupt)
                }
                Phase::Reads(0) => self.nics.cores[core as usize].phase = Phase::Frames,
                Phase::Reads(left) => {
                    self.nics.cores[core as usize].phase = Phase::Reads(left - 1);
                    let nic = &self.nics.nics[k as usize];
                    let (node, down, root) = (nic.node, nic.down, self.nics.root);
                    let owner = cpu_owner(root, CpuTlp::RegRead(core).cookie());
                    let id = self.nic_tlp(TlpKind::MRd, root, node, 4, owner);
                    self.push(down, id);
                    return;
                }
                Phase::Frames => {
                    let nic = &mut self.nics.nics[k as usize];
                    let ports = nic.ports.len() as u32;
                    let start = self.nics.cores[core as usize].next_port;
                    let found = (0..ports)
                        .map(|i| (start + i) % ports)
                        .find(|&p| nic.ports[p as usize].rx_ready > 0);
                    let c = &mut self.nics.cores[core as usize];
                    match found {
                        Some(p) => {
                            let port = &mut nic.ports[p as usize];
                            port.rx_ready -= 1;
                            port.rx_done += 1;
                            c.next_port = (p + 1) % ports;
                            c.phase = Phase::FrameDone(p);
                            let cost = cpu.frame_cost
                                + SimTime::from_ticks(
                                    (cpu.byte_cost_ps
                                        * port.frame as f64
                                        * SimTime::TICKS_PER_PS as f64)
                                        .round() as u64,
                                );
                            let ev = self.cpu_ev(core);
                            self.q.schedule(now + cost, ev);
                            return;
                        }
                        None => c.phase = Phase::EndWrites(cpu.writes_per_interrupt),
                    }
                }
                Phase::FrameDone(p) => {
                    let nic = &mut self.nics.nics[k as usize];
                    let ring = nic.spec.tx_ring;
                    let dest = if nic.ports.len() == 2 { p ^ 1 } else { p };
                    let port = &mut nic.ports[dest as usize];
                    if port.tx_in_ring < ring {
                        port.tx_in_ring += 1;
                        port.tx_posted += 1;
                    } else {
                        // The transmit ring is full: the bridge drops the frame.
                        nic.ports[p as usize].sw_dropped += 1;
                    }
                    self.nics.cores[core as usize].phase = Phase::FrameWrites(cpu.writes_per_frame);
                }
                Phase::FrameWrites(0) => self.nics.cores[core as usize].phase = Phase::Frames,
                Phase::FrameWrites(left) => {
                    let doorbell = left == cpu.writes_per_frame;
                    if !self.register_write(core, k, doorbell, false, false) {
                        return;
                    }
                    self.nics.cores[core as usize].phase = Phase::FrameWrites(left - 1);
                }
                Phase::EndWrites(0) => {
                    self.next_interrupt(core);
                    return;
                }
                Phase::EndWrites(left) => {
                    let first = left == cpu.writes_per_interrupt;
                    let doorbell = first && cpu.writes_per_frame == 0;
                    if !self.register_write(core, k, doorbell, first, left == 1) {
                        return;
                    }
                    self.nics.cores[core as usize].phase = Phase::EndWrites(left - 1);
                }
            }
        }
    }

    /// The CPU writes a register of NIC `k` (ringing the doorbells, returning receive
    /// descriptors, re-enabling interrupts as asked); false if the root complex already
    /// holds `posted_depth` writes (the core waits for one to leave).
    fn register_write(
        &mut self,
        core: u32,
        k: u32,
        doorbell: bool,
        rdt: bool,
        enable: bool,
    ) -> bool {
        let depth = self.nics.cpu.map_or(u32::MAX, |c| c.posted_depth);
        if self.nics.posted_queued >= depth {
            self.nics.posted_waiters.push(core);
            return false;
        }
        let nic = &mut self.nics.nics[k as usize];
        let mut effect = RegEffect {
            nic: k,
            enable,
            ..RegEffect::default()
        };
        for (p, port) in nic.ports.iter_mut().enumerate() {
            if doorbell {
                effect.tdt[p] = std::mem::take(&mut port.tx_posted);
            }
            if rdt {
                effect.rdt[p] = std::mem::take(&mut port.rx_done);
            }
        }
        let (node, down) = (nic.node, nic.down);
        let r = match self.nics.free_regs.pop() {
            Some(r) => {
                self.nics.regs[r as usize] = effect;
                r
            }
            None => {
                self.nics.regs.push(effect);
                (self.nics.regs.len() - 1) as u32
            }
        };
        let root = self.nics.root;
        let owner = cpu_owner(root, CpuTlp::RegWrite(r).cookie());
        let id = self.nic_tlp(TlpKind::MWr, root, node, 4, owner);
        self.nics.posted_queued += 1;
        self.push(down, id);
        true
    }

    /// A TLP reached NIC `k` on channel `c`; consumes it (credits as the NIC frees them).
    pub(in crate::sim) fn at_nic(&mut self, k: u32, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let own = match t.kind {
            TlpKind::CplD => Some(NicTlp::of(t.owner.cookie)),
            _ => None,
        };
        match (t.kind, own) {
            (TlpKind::MWr | TlpKind::MRd, _) => {
                // A register access. The register engine takes one at a time; the credit
                // comes back after.
                let nic = &mut self.nics.nics[k as usize];
                let done = now.max(nic.reg_free) + nic.spec.register_time;
                nic.reg_free = done;
                self.tlps[id as usize].ingress = c;
                let ev = self.nic_ev(k, NodeEv::Register(id));
                self.q.schedule(done, ev);
                return;
            }
            (_, Some(NicTlp::TxDesc(p))) => {
                self.rx_release(c, t.class(), 1, t.data_credits());
                let port = &mut self.nics.nics[k as usize].ports[p as usize];
                port.tx_slots[0] -= t.payload.min(port.tx_slots[0]);
                if port.tx_slots[0] == 0 {
                    port.tx_fetching = false;
                    port.tx_to_read += port.tx_fetch_n;
                    self.free_tags(k, 1);
                    self.deliver(id);
                    self.tx_fetch(k, p);
                    self.tx_read(k, p);
                    return;
                }
            }
            (_, Some(NicTlp::TxData { port: p, slot })) => {
                self.rx_release(c, t.class(), 1, t.data_credits());
                let slot = slot as usize;
                let nic = &mut self.nics.nics[k as usize];
                let rate = nic.spec.line_rate;
                let mrrs = self.sys.pcie.mrrs;
                let port = &mut nic.ports[p as usize];
                port.tx_slots[slot] -= t.payload.min(port.tx_slots[slot]);
                if port.tx_slots[slot] == 0 {
                    port.tx_free.push(slot as u32);
                    let start = now.max(port.wire_free);
                    let done = start
                        + SimTime::from_ticks(ticks(wire_bits(port.frame) / rate).round() as u64);
                    port.wire_free = done;
                    let tags = port.frame.div_ceil(mrrs);
                    let ev = self.nic_ev(k, NodeEv::TxDone(p));
                    self.q.schedule(done, ev);
                    self.free_tags(k, tags);
                    self.deliver(id);
                    self.tx_read(k, p);
                    return;
                }
            }
            _ => self.rx_release(c, t.class(), 1, t.data_credits()),
        }
        self.deliver(id);
    }

    fn free_tags(&mut self, k: u32, n: u32) {
        let node = self.nics.nics[k as usize].node as usize;
        if let AnyNode::Nic(nic) = &mut self.nodes[node] {
            nic.free_tags += n;
        }
    }

    /// Takes `n` tags from NIC `k` if it has them.
    fn take_tags(&mut self, k: u32, n: u32) -> bool {
        let node = self.nics.nics[k as usize].node as usize;
        match &mut self.nodes[node] {
            AnyNode::Nic(nic) if nic.free_tags >= n => {
                nic.free_tags -= n;
                true
            }
            _ => false,
        }
    }

    /// The register engine finished TLP `id`: answer a read; a write takes effect (its
    /// writer, which knows what it wrote, hears of it); the credit frees.
    fn register_done(&mut self, k: u32, id: u32) {
        let t = self.tlps[id as usize];
        self.rx_release(t.ingress, t.class(), 1, t.data_credits());
        if t.kind == TlpKind::MRd {
            let nic = &self.nics.nics[k as usize];
            let (node, up) = (nic.node, nic.up);
            let cpl = self.nic_tlp(TlpKind::CplD, node, t.src, 4, t.owner);
            self.deliver(id);
            self.push(up, cpl);
            return;
        }
        self.deliver(id);
        AnyNode::tlp_written(self, &t, t.ingress);
    }

    /// The CPU's register write with effect `e` took effect at its NIC: descriptors are
    /// returned, doorbells rung, interrupts enabled as it says.
    pub(in crate::sim) fn registers_written(&mut self, e: RegEffect) {
        let ports = self.nics.nics[e.nic as usize].ports.len();
        for p in 0..ports {
            let port = &mut self.nics.nics[e.nic as usize].ports[p];
            port.rx_desc += e.rdt[p];
            port.tx_doorbelled += e.tdt[p];
            self.rx_dma(e.nic, p as u32);
            self.tx_fetch(e.nic, p as u32);
        }
        if e.enable {
            self.nics.nics[e.nic as usize].int_enabled = true;
            self.maybe_interrupt(e.nic);
        }
    }

    /// Reads the next transmit descriptors the doorbell announced (one read at a time).
    fn tx_fetch(&mut self, k: u32, p: u32) {
        let nic = &self.nics.nics[k as usize];
        let port = &nic.ports[p as usize];
        if port.tx_fetching || port.tx_doorbelled == 0 {
            return;
        }
        if !self.take_tags(k, 1) {
            return;
        }
        let nic = &mut self.nics.nics[k as usize];
        let (node, up) = (nic.node, nic.up);
        let port = &mut nic.ports[p as usize];
        let n = port.tx_doorbelled.min(DESCRIPTOR_FETCH);
        port.tx_doorbelled -= n;
        port.tx_fetching = true;
        port.tx_fetch_n = n;
        if port.tx_slots.is_empty() {
            port.tx_slots.push(0);
        }
        // Slot 0 tracks the descriptor read; data reads use slots 1 and up.
        port.tx_slots[0] = n * DESCRIPTOR_BYTES;
        let root = self.nics.root;
        let owner = NicTlp::TxDesc(p).owner(node);
        let id = self.nic_tlp(TlpKind::MRd, node, root, n * DESCRIPTOR_BYTES, owner);
        self.push(up, id);
    }

    /// Requests the data of fetched transmit frames while tags last.
    fn tx_read(&mut self, k: u32, p: u32) {
        let mrrs = self.sys.pcie.mrrs;
        let root = self.nics.root;
        loop {
            let nic = &self.nics.nics[k as usize];
            let port = &nic.ports[p as usize];
            if port.tx_to_read == 0 {
                return;
            }
            let frame = port.frame;
            let pieces = frame.div_ceil(mrrs);
            if !self.take_tags(k, pieces) {
                return;
            }
            let nic = &mut self.nics.nics[k as usize];
            let (node, up) = (nic.node, nic.up);
            let port = &mut nic.ports[p as usize];
            port.tx_to_read -= 1;
            let slot = match port.tx_free.pop() {
                Some(s) => s,
                None => {
                    if port.tx_slots.is_empty() {
                        port.tx_slots.push(0);
                    }
                    port.tx_slots.push(0);
                    (port.tx_slots.len() - 1) as u32
                }
            };
            port.tx_slots[slot as usize] = frame;
            for len in tlp::split(frame as u64, mrrs) {
                let owner = NicTlp::TxData { port: p, slot }.owner(node);
                let id = self.nic_tlp(TlpKind::MRd, node, root, len, owner);
                self.push(up, id);
            }
        }
    }

    /// A frame left the wire: it is forwarded; the NIC writes its descriptor back.
    fn tx_done(&mut self, k: u32, p: u32) {
        let nic = &mut self.nics.nics[k as usize];
        let (node, up) = (nic.node, nic.up);
        let port = &mut nic.ports[p as usize];
        port.tx_in_ring -= 1;
        // The frame came in on the other port; count it there (per-direction flow).
        let src = if nic.ports.len() == 2 { p ^ 1 } else { p };
        nic.ports[src as usize].forwarded += 1;
        let root = self.nics.root;
        let owner = NicTlp::TxWriteBack(p).owner(node);
        let id = self.nic_tlp(TlpKind::MWr, node, root, DESCRIPTOR_BYTES, owner);
        self.push(up, id);
    }

    /// Ethernet results per bridge workload, over the measurement window.
    pub(in crate::sim) fn ethernet_results(&self) -> Vec<EthernetResult> {
        let window = (self.sys.duration - self.sys.warmup).as_secs_f64();
        let mut out = Vec::new();
        for (f, w) in self.sys.workloads.iter().enumerate() {
            let (Some(b), Some(k)) = (w.bridge, self.nics.at(w.source)) else {
                continue;
            };
            let nic = &self.nics.nics[k as usize];
            let (mut offered, mut forwarded, mut dropped, mut growth) = (0u64, 0u64, 0u64, 0.0);
            let mut zero_loss = true;
            for (port, win) in nic.ports.iter().zip(&nic.windows) {
                if port.flow != f as u32 {
                    continue;
                }
                let off = port.arrivals - win.arrivals;
                offered += off;
                forwarded += port.forwarded - win.forwarded;
                let lost = (port.dropped - win.dropped) + (port.sw_dropped - win.sw_dropped);
                dropped += lost;
                let avg = |h: usize| win.sums[h] / win.samples[h].max(1) as f64;
                let g = avg(1) - avg(0);
                growth += g;
                // A backlog still growing would overflow a longer trial: count it as loss.
                // Tolerance: half a percent of the frames offered, plus two frames.
                if lost > 0 || g > 0.005 * off as f64 + 2.0 {
                    zero_loss = false;
                }
            }
            let bits = wire_bits(b.frame_size);
            out.push(EthernetResult {
                name: w.name.clone(),
                frame_size: b.frame_size,
                load: b.load,
                offered_fps: offered as f64 / window,
                forwarded_frames: forwarded,
                forwarded_fps: forwarded as f64 / window,
                forwarded_mbps: forwarded as f64 * bits / window / 1e6,
                dropped,
                backlog_growth: growth,
                zero_loss,
            });
        }
        out
    }
}
