//! Gigabit Ethernet NICs: each a [`NicEndpoint`] holding its ports, rings and interrupt
//! state; the host CPU that bridges frames between their ports is `super::cpu`.
//!
//! Receive (`rx`): frames arrive from the wire at a constant rate into the port's RX FIFO
//! (a frame that does not fit is dropped), the NIC writes each to host memory (MPS-sized
//! MWr), writes its descriptor back (16 B MWr) and raises an MSI (at most one per
//! moderation interval, masked until the CPU re-enables it). The CPU takes the interrupt,
//! reads the cause register, bridges each frame, posts it on the other port's transmit ring
//! and writes the NIC's registers (`registers`: one access per `register_time`, the posted
//! credit returned only after it, so a NIC with few credits holds up the root port, which a
//! switch's buffers hide). Transmit (`tx`): on the doorbell the NIC reads the descriptors,
//! then the frame data (MRd, its tags), sends the frame on the wire and writes the
//! descriptor back.

mod registers;
mod rx;
mod tx;

pub(in crate::sim) use registers::RegisterWrite;

use super::context::Context;
use super::{Node, NodeEv, NodeReport};
use crate::engine::SimTime;
use crate::fabric::{NicSpec, NodeKind, System};
use crate::pcie::tlp::TlpKind;
use crate::sim::result::EthernetResult;
use crate::sim::{Owner, Tlp, NONE};

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

/// A NIC at run time: its PCIe side (read tags, register engine), its Ethernet ports with
/// their rings, and its interrupt state.
#[derive(Debug)]
pub(in crate::sim) struct NicEndpoint {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
    spec: NicSpec,
    ports: Vec<Port>,
    windows: Vec<Window>,
    /// The bridge workloads on it, in file order (its report has one row each).
    workloads: Vec<u32>,
    /// The root complex whose CPU serves it: its DMA and interrupts go there.
    root: u32,
    /// The CPU core that takes its interrupts.
    core: u32,
    /// Queued on its core for an interrupt not yet taken.
    queued_on_core: bool,
    int_enabled: bool,
    /// Descriptors written back since its last MSI.
    unsignalled: u32,
    last_int: Option<SimTime>,
    /// The moderation timer is running.
    int_timer: bool,
    /// When its register engine is free.
    reg_free: SimTime,
    /// The middle of the measurement window (backlog samples are kept per half).
    mid: SimTime,
    /// The measurement window is open (backlog samples are kept).
    measuring: bool,
}

/// One Ethernet port of a NIC.
#[derive(Debug, Default)]
struct Port {
    /// Bridge workload feeding it (NONE when the NIC has none).
    flow: u32,
    frame: u32,
    interval_ticks: f64,
    /// Time one of its frames takes on the wire (preamble and gap included).
    wire: SimTime,
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
    /// Frames that came in on this port and went out whole inside the measurement window
    /// (first bit at or after its start).
    window_forwarded: u64,
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
    arrivals: u64,
    /// Backlog sums and sample counts over the first and second half of the window.
    sums: [f64; 2],
    samples: [u64; 2],
}

impl NicEndpoint {
    /// NIC `n` of `sys` as `spec` describes it, with `tags` read tags, fed by the bridge
    /// workloads on it.
    pub(in crate::sim) fn new(sys: &System, n: usize, spec: NicSpec, tags: u32) -> Self {
        let cores = sys.cpu.map_or(1, |c| c.cores);
        // NICs take cores in turn, in file order.
        let ordinal = sys.nodes[..n]
            .iter()
            .filter(|x| matches!(x.kind, NodeKind::Nic { .. }))
            .count() as u32;
        let mut ports: Vec<Port> = (0..spec.ports)
            .map(|_| Port {
                flow: NONE,
                rx_desc: spec.rx_ring,
                ..Port::default()
            })
            .collect();
        let mut workloads = Vec::new();
        for (f, w) in sys.workloads.iter().enumerate() {
            let Some(b) = w.kind.bridge().filter(|_| w.source == n) else {
                continue;
            };
            workloads.push(f as u32);
            let rate = spec.line_rate * b.load;
            let interval = ticks(wire_bits(b.frame_size) / rate);
            for (p, port) in ports.iter_mut().enumerate() {
                port.flow = f as u32;
                port.frame = b.frame_size;
                port.interval_ticks = interval;
                port.wire = SimTime::from_ticks(
                    ticks(wire_bits(b.frame_size) / spec.line_rate).round() as u64,
                );
                // The ports' streams are independent: offset the second by half a frame time.
                port.first = SimTime::from_ticks((interval * p as f64 / 2.0) as u64);
            }
        }
        NicEndpoint {
            free_tags: tags,
            spec,
            windows: vec![Window::default(); ports.len()],
            ports,
            workloads,
            root: sys.cpu.map_or(0, |c| c.root) as u32,
            core: ordinal % cores,
            queued_on_core: false,
            int_enabled: true,
            unsignalled: 0,
            last_int: None,
            int_timer: false,
            reg_free: SimTime::ZERO,
            mid: SimTime::from_ticks((sys.warmup.ticks() + sys.duration.ticks()) / 2),
            measuring: false,
        }
    }

    /// Its Ethernet results for bridge workload `f` over a window of `window` seconds.
    fn ethernet(&self, sys: &System, f: u32, window: f64) -> Option<EthernetResult> {
        let w = &sys.workloads[f as usize];
        let b = w.kind.bridge()?;
        let (mut offered, mut forwarded, mut dropped, mut growth) = (0u64, 0u64, 0u64, 0.0);
        let mut zero_loss = true;
        for (port, win) in self.ports.iter().zip(&self.windows) {
            if port.flow != f {
                continue;
            }
            let off = port.arrivals - win.arrivals;
            offered += off;
            // Frames wholly on the wire inside the window: a port can send no more than
            // the window holds. (Counting every frame whose last bit left in the window
            // took in one that began before it: 2000.04 Mb/s out of 2 x 1 Gb/s.)
            forwarded += port.window_forwarded;
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
        Some(EthernetResult {
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
        })
    }
}

impl Node for NicEndpoint {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, _head: SimTime) {
        match t.kind {
            TlpKind::MWr | TlpKind::MRd => self.register_access(cx, c, id),
            TlpKind::CplD => self.read_data(cx, c, id, t),
            _ => {
                cx.release(c, t.class(), 1, t.data_credits());
                cx.deliver(id);
            }
        }
    }

    fn start<C: Context>(&mut self, cx: &mut C) {
        // The first frame on every port a bridge workload feeds.
        for (p, port) in self.ports.iter().enumerate() {
            if port.flow != NONE {
                cx.schedule(port.first, NodeEv::Frame(p as u32));
            }
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        match ev {
            NodeEv::Frame(port) => self.frame_arrives(cx, port),
            NodeEv::Register(tlp) => self.register_done(cx, tlp),
            NodeEv::TxDone(port) => self.tx_done(cx, port),
            NodeEv::Interrupt => {
                self.int_timer = false;
                self.maybe_interrupt(cx);
            }
            NodeEv::Written(_)
            | NodeEv::MediaDone(_)
            | NodeEv::Cpu(_)
            | NodeEv::BridgeMsi(_)
            | NodeEv::Engine(_)
            | NodeEv::Io(_)
            | NodeEv::Socket(_)
            | NodeEv::SocketSend(_) => {}
        }
    }

    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, _start: SimTime) {
        if let NicTlp::RxData { port, last: true } = NicTlp::of(cx.tlp(id).owner.cookie) {
            self.frame_written(cx, port);
        }
    }

    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, _c: u32) {
        match NicTlp::of(t.owner.cookie) {
            NicTlp::RxWriteBack(p) => self.ports[p as usize].rx_ready += 1,
            NicTlp::Msi => self.msi_written(cx),
            NicTlp::RxData { .. }
            | NicTlp::TxWriteBack(_)
            | NicTlp::TxDesc(_)
            | NicTlp::TxData { .. } => {}
        }
    }

    fn measure_from(&mut self, _now: SimTime) {
        self.measuring = true;
        for (w, p) in self.windows.iter_mut().zip(&mut self.ports) {
            *w = Window {
                dropped: p.dropped,
                sw_dropped: p.sw_dropped,
                arrivals: p.arrivals,
                ..Window::default()
            };
            p.window_forwarded = 0;
        }
    }

    fn report(&self, _n: usize, sys: &System, out: &mut NodeReport) {
        let window = (sys.duration - sys.warmup).as_secs_f64();
        for &f in &self.workloads {
            if let Some(e) = self.ethernet(sys, f, window) {
                out.ethernet.push((f, e));
            }
        }
    }

    fn interrupt_taken<C: Context>(&mut self, _cx: &mut C) {
        self.queued_on_core = false;
    }

    fn registers_written<C: Context>(&mut self, cx: &mut C, w: RegisterWrite) {
        self.apply_register_write(cx, w);
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
    fn owner(self, node: usize) -> Owner {
        Owner {
            node: node as u32,
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

impl NicEndpoint {
    /// The CPU core that takes its interrupts.
    pub(in crate::sim) fn core(&self) -> u32 {
        self.core
    }

    /// A new TLP of its own toward its root complex, owned as `what`: `bytes` is the data
    /// of a write, the length asked for by a read; sent on its link up. The calls that came
    /// for it meanwhile (the TLP left at once) run now, as they would have nested.
    fn send<C: Context>(&mut self, cx: &mut C, kind: TlpKind, bytes: u32, what: NicTlp) {
        let (n, root) = (cx.node(), self.root);
        let id = cx.new_tlp(Tlp::at_source(kind, n as u32, root, bytes, what.owner(n)));
        let up = cx.toward(root as usize);
        cx.send(up, id);
        self.run_nested(cx);
    }

    /// Handles the calls that came for it while its handler ran, where they came.
    fn run_nested<C: Context>(&mut self, cx: &mut C) {
        while let Some(call) = cx.next_call() {
            self.handle(cx, call);
        }
    }
}
