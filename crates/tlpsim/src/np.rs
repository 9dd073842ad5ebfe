//! Network processor: microengines with hardware threads and a clock run pipeline stages,
//! each with a cycle cost per packet; stages hand packets on through message queues of fixed
//! depth (a packet that finds its queue full is dropped and counted there); packet data
//! crosses one shared SDRAM. Built as the Intel IXP1240 ATM OC-12 / 8 x 100 Mb/s Ethernet IP
//! router example design with single-cell PDUs (29-byte IP packets):
//!
//! ```text
//!  OC-12 cells -> ATM RX ME (4 threads) -MSGQ-> IP route ME (4) -packet queue per port->
//!                 Ethernet TX ME (3 fill threads) -> 8 Ethernet MACs
//!  Ethernet MACs -> Ethernet RX MEs (2 x 4 threads, one per port) -MSGQ per ME->
//!                 ATM TX ME (3 fill threads) -> OC-12
//! ```
//!
//! (Partitioning: Intel, "IXP1200 Network Processor Family ATM OC-3/12/Ethernet IP Router
//! Example Design", Figure 7.) A thread takes a packet from its input, asks its microengine
//! for the stage's cycles (the microengine runs one thread at a time, in request order) and
//! the SDRAM for one access (also in request order), and puts the packet on its output.

use crate::engine::{EventQueue, SimTime};

/// Cells per second of OC-12 after SONET overhead: 599.04 Mb/s / (53 x 8 bits).
pub const OC12_CELLS_PER_S: f64 = 599.04e6 / 424.0;
/// Minimum Ethernet frames per second at 100 Mb/s: 64 bytes + 20 of preamble and gap.
pub const FE_FRAMES_PER_S: f64 = 100e6 / (84.0 * 8.0);

/// The router's hardware and software, and the offered load.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterSpec {
    /// Microengine clock, Hz.
    pub clock_hz: f64,
    /// Ethernet ports (each transmits; ATM traffic is spread evenly over them).
    pub ethernet_ports: u32,
    /// Ethernet ports receiving minimum frames at line rate (all routed to ATM).
    pub ethernet_inputs: u32,
    /// Cycles per packet: ATM receive, IP route, Ethernet transmit, Ethernet receive (IP
    /// lookup included), ATM transmit.
    pub cycles: StageCycles,
    /// Hardware threads per stage, in the same order.
    pub threads: StageThreads,
    /// Entries of each scratchpad message queue (ATM RX -> IP route, Ethernet RX -> ATM TX).
    pub msgq_depth: u32,
    /// Packets an Ethernet transmit packet queue holds.
    pub tx_queue_depth: u32,
    /// Cells the OC-12 framer's receive FIFO holds; a cell arriving to a full FIFO overflows.
    pub atm_rx_fifo: u32,
    /// Frames a MAC's receive FIFO holds.
    pub eth_rx_fifo: u32,
    /// Frames (or cells) a MAC's transmit FIFO holds.
    pub tx_fifo: u32,
    /// SDRAM occupancy of one packet access, seconds.
    pub dram_access: f64,
    /// Simulated time, seconds (statistics after `warmup`).
    pub duration: f64,
    /// Time before statistics start, seconds.
    pub warmup: f64,
}

/// Cycles per packet of each stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageCycles {
    /// ATM receive (per cell: one single-cell PDU).
    pub atm_rx: f64,
    /// IP route of an ATM-received packet.
    pub ip_route: f64,
    /// Ethernet transmit.
    pub eth_tx: f64,
    /// Ethernet receive with its IP lookup.
    pub eth_rx: f64,
    /// ATM transmit.
    pub atm_tx: f64,
}

/// Hardware threads of each stage.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StageThreads {
    /// ATM receive.
    pub atm_rx: u32,
    /// IP route.
    pub ip_route: u32,
    /// Ethernet transmit fill threads.
    pub eth_tx: u32,
    /// Ethernet receive threads per microengine (two microengines, a thread per port).
    pub eth_rx: u32,
    /// ATM transmit fill threads.
    pub atm_tx: u32,
}

/// Packets dropped, by where.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Drops {
    /// Cells lost at the framer's full receive FIFO (receiver not keeping up).
    pub atm_rx_fifo: u64,
    /// Packets lost at the IP router's full input message queue.
    pub ip_router_queue: u64,
    /// Packets lost at full Ethernet transmit packet queues.
    pub eth_tx_queue: u64,
    /// Frames lost at full MAC receive FIFOs.
    pub eth_rx_fifo: u64,
    /// Packets lost at full ATM transmit message queues.
    pub atm_tx_queue: u64,
}

/// What the router did in the measured interval.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterResult {
    /// Cells transmitted on OC-12, percent of its cell capacity.
    pub atm_tx_percent: f64,
    /// Frames per second each Ethernet port transmitted.
    pub eth_tx_fps: Vec<f64>,
    /// Drops by place.
    pub drops: Drops,
    /// Fraction of time the SDRAM was busy.
    pub dram_utilization: f64,
    /// Events processed.
    pub events: u64,
}

#[derive(Debug, Clone, Copy)]
enum Ev {
    AtmCell,
    EthFrame(u32),
    /// A thread reaches its next step.
    Thread(u32),
    EthWireDone(u32),
    AtmWireDone,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Stage {
    AtmRx,
    IpRoute,
    EthTx,
    EthRx(u32),
    AtmTx,
}

#[derive(Debug, Clone, Copy)]
enum Step {
    /// Waiting for input.
    Idle,
    /// Holds a packet (destination port or source queue); next: compute.
    Got(u32),
    /// Compute done; next: SDRAM.
    Computed(u32),
    /// SDRAM done; next: hand on.
    Stored(u32),
    /// Waiting for room in a transmit FIFO.
    Blocked(u32),
}

struct Thread {
    stage: Stage,
    me: usize,
    step: Step,
}

/// Runs the router.
pub fn run(spec: &RouterSpec) -> RouterResult {
    Router::new(spec).run()
}

struct Router<'a> {
    spec: &'a RouterSpec,
    q: EventQueue<Ev>,
    threads: Vec<Thread>,
    me_free: Vec<SimTime>,
    dram_free: SimTime,
    dram_busy: SimTime,
    atm_rx_fifo: u32,
    eth_rx_fifo: Vec<u32>,
    router_q: std::collections::VecDeque<u32>,
    tx_q: Vec<u32>,
    atm_q: [u32; 2],
    eth_tx_fifo: Vec<u32>,
    eth_wire_busy: Vec<bool>,
    atm_tx_fifo: u32,
    atm_wire_busy: bool,
    next_port: u32,
    next_tx_port: u32,
    next_atm_q: u32,
    waiting: Vec<Vec<u32>>,
    measuring: bool,
    drops: Drops,
    eth_sent: Vec<u64>,
    atm_sent: u64,
}

/// Wait lists: ATM RX, IP route, Ethernet TX, ATM TX, then Ethernet RX per port.
const W_ATM_RX: usize = 0;
const W_ROUTE: usize = 1;
const W_ETH_TX: usize = 2;
const W_ATM_TX: usize = 3;
const W_ETH_RX: usize = 4;

impl<'a> Router<'a> {
    fn new(spec: &'a RouterSpec) -> Self {
        let ports = spec.ethernet_ports as usize;
        let t = spec.threads;
        let mut threads = Vec::new();
        let mut add = |stage, me, n: u32| {
            for _ in 0..n {
                threads.push(Thread {
                    stage,
                    me,
                    step: Step::Idle,
                });
            }
        };
        add(Stage::AtmRx, 0, t.atm_rx);
        add(Stage::IpRoute, 1, t.ip_route);
        add(Stage::EthTx, 2, t.eth_tx);
        add(Stage::AtmTx, 3, t.atm_tx);
        // Ethernet RX: two microengines, one thread per port.
        for p in 0..spec.ethernet_ports.min(2 * t.eth_rx) {
            add(Stage::EthRx(p), 4 + (p / t.eth_rx.max(1)) as usize, 1);
        }
        Router {
            spec,
            q: EventQueue::new(),
            threads,
            me_free: vec![SimTime::ZERO; 6],
            dram_free: SimTime::ZERO,
            dram_busy: SimTime::ZERO,
            atm_rx_fifo: 0,
            eth_rx_fifo: vec![0; ports],
            router_q: Default::default(),
            tx_q: vec![0; ports],
            atm_q: [0; 2],
            eth_tx_fifo: vec![0; ports],
            eth_wire_busy: vec![false; ports],
            atm_tx_fifo: 0,
            atm_wire_busy: false,
            next_port: 0,
            next_tx_port: 0,
            next_atm_q: 0,
            waiting: vec![Vec::new(); W_ETH_RX + ports],
            measuring: false,
            drops: Drops::default(),
            eth_sent: vec![0; ports],
            atm_sent: 0,
        }
    }

    fn secs(s: f64) -> SimTime {
        SimTime::from_ticks((s * 1e12 * SimTime::TICKS_PER_PS as f64).round() as u64)
    }

    fn run(mut self) -> RouterResult {
        let spec = self.spec;
        let cell = Self::secs(1.0 / OC12_CELLS_PER_S);
        let frame = Self::secs(1.0 / FE_FRAMES_PER_S);
        self.q.schedule(SimTime::ZERO, Ev::AtmCell);
        for p in 0..spec.ethernet_inputs.min(spec.ethernet_ports) {
            // Ports start a fraction of a frame apart, as independent testers do.
            let offset = Self::secs(p as f64 / FE_FRAMES_PER_S / spec.ethernet_ports as f64);
            self.q.schedule(offset, Ev::EthFrame(p));
        }
        for i in 0..self.threads.len() {
            self.q.schedule(SimTime::ZERO, Ev::Thread(i as u32));
        }
        let warmup = Self::secs(spec.warmup);
        let end = Self::secs(spec.duration);
        let mut dram_at_warmup = SimTime::ZERO;
        while let Some((now, ev)) = self.q.pop_until(end) {
            if !self.measuring && now >= warmup {
                self.measuring = true;
                self.drops = Drops::default();
                self.eth_sent.iter_mut().for_each(|c| *c = 0);
                self.atm_sent = 0;
                dram_at_warmup = self.dram_busy;
            }
            match ev {
                Ev::AtmCell => {
                    if self.atm_rx_fifo < spec.atm_rx_fifo {
                        self.atm_rx_fifo += 1;
                        self.wake(W_ATM_RX);
                    } else {
                        self.drops.atm_rx_fifo += 1;
                    }
                    self.q.schedule(now + cell, Ev::AtmCell);
                }
                Ev::EthFrame(p) => {
                    let f = &mut self.eth_rx_fifo[p as usize];
                    if *f < spec.eth_rx_fifo {
                        *f += 1;
                        self.wake(W_ETH_RX + p as usize);
                    } else {
                        self.drops.eth_rx_fifo += 1;
                    }
                    self.q.schedule(now + frame, Ev::EthFrame(p));
                }
                Ev::Thread(i) => self.step(i as usize),
                Ev::EthWireDone(p) => {
                    self.eth_sent[p as usize] += 1;
                    self.eth_wire_busy[p as usize] = false;
                    self.start_eth_wire(p as usize);
                }
                Ev::AtmWireDone => {
                    self.atm_sent += 1;
                    self.atm_wire_busy = false;
                    self.start_atm_wire();
                }
            }
        }
        let span = (end.saturating_sub(warmup)).as_secs_f64();
        RouterResult {
            atm_tx_percent: 100.0 * self.atm_sent as f64 / (span * OC12_CELLS_PER_S),
            eth_tx_fps: self.eth_sent.iter().map(|&n| n as f64 / span).collect(),
            drops: self.drops,
            dram_utilization: (self.dram_busy.saturating_sub(dram_at_warmup)).as_secs_f64() / span,
            events: self.q.events(),
        }
    }

    fn wake(&mut self, list: usize) {
        if let Some(t) = self.waiting[list].pop() {
            let now = self.q.now();
            self.q.schedule(now, Ev::Thread(t));
        }
    }

    /// Reserves `cycles` on the thread's microengine; returns when they are done.
    fn compute(&mut self, me: usize, cycles: f64) -> SimTime {
        let now = self.q.now();
        let start = self.me_free[me].max(now);
        self.me_free[me] = start + Self::secs(cycles / self.spec.clock_hz);
        self.me_free[me]
    }

    /// Reserves one SDRAM access; returns when it is done.
    fn dram(&mut self) -> SimTime {
        let now = self.q.now();
        let start = self.dram_free.max(now);
        let t = Self::secs(self.spec.dram_access);
        self.dram_free = start + t;
        self.dram_busy += t;
        self.dram_free
    }

    /// Takes an input packet for thread `i`, or parks it; returns its tag.
    fn take(&mut self, i: usize) -> Option<u32> {
        let ports = self.spec.ethernet_ports;
        let (list, got) = match self.threads[i].stage {
            Stage::AtmRx => (
                W_ATM_RX,
                (self.atm_rx_fifo > 0).then(|| {
                    self.atm_rx_fifo -= 1;
                    let p = self.next_port;
                    self.next_port = (p + 1) % ports;
                    p
                }),
            ),
            Stage::IpRoute => (W_ROUTE, self.router_q.pop_front()),
            Stage::EthTx => (
                W_ETH_TX,
                (0..ports)
                    .map(|k| (self.next_tx_port + k) % ports)
                    .find(|&p| self.tx_q[p as usize] > 0)
                    .inspect(|&p| {
                        self.tx_q[p as usize] -= 1;
                        self.next_tx_port = (p + 1) % ports;
                    }),
            ),
            Stage::AtmTx => (
                W_ATM_TX,
                (0..2)
                    .map(|k| (self.next_atm_q + k) % 2)
                    .find(|&m| self.atm_q[m as usize] > 0)
                    .inspect(|&m| {
                        self.atm_q[m as usize] -= 1;
                        self.next_atm_q = (m + 1) % 2;
                    }),
            ),
            Stage::EthRx(p) => (
                W_ETH_RX + p as usize,
                (self.eth_rx_fifo[p as usize] > 0).then(|| {
                    self.eth_rx_fifo[p as usize] -= 1;
                    p
                }),
            ),
        };
        if got.is_none() {
            self.waiting[list].push(i as u32);
        }
        got
    }

    fn step(&mut self, i: usize) {
        let c = self.spec.cycles;
        let (stage, me) = (self.threads[i].stage, self.threads[i].me);
        match self.threads[i].step {
            Step::Idle => {
                if let Some(tag) = self.take(i) {
                    self.threads[i].step = Step::Got(tag);
                    let now = self.q.now();
                    self.q.schedule(now, Ev::Thread(i as u32));
                }
            }
            Step::Got(tag) => {
                let cycles = match stage {
                    Stage::AtmRx => c.atm_rx,
                    Stage::IpRoute => c.ip_route,
                    Stage::EthTx => c.eth_tx,
                    Stage::EthRx(_) => c.eth_rx,
                    Stage::AtmTx => c.atm_tx,
                };
                let done = self.compute(me, cycles);
                self.threads[i].step = Step::Computed(tag);
                self.q.schedule(done, Ev::Thread(i as u32));
            }
            Step::Computed(tag) => {
                // Receive stages store the packet, the router reads its header, transmit
                // stages read the packet: one SDRAM access each.
                let done = self.dram();
                self.threads[i].step = Step::Stored(tag);
                self.q.schedule(done, Ev::Thread(i as u32));
            }
            Step::Stored(tag) | Step::Blocked(tag) => {
                if self.hand_on(stage, tag) {
                    self.threads[i].step = Step::Idle;
                    let now = self.q.now();
                    self.q.schedule(now, Ev::Thread(i as u32));
                } else {
                    self.threads[i].step = Step::Blocked(tag);
                    let list = match stage {
                        Stage::EthTx => W_ETH_TX,
                        _ => W_ATM_TX,
                    };
                    // Blocked transmit threads wait on their FIFO (woken when the wire
                    // frees a slot).
                    self.waiting[list].insert(0, i as u32);
                }
            }
        }
    }

    /// Puts a finished packet on the stage's output; false if a transmit FIFO is full (the
    /// thread waits); a full message or packet queue drops it.
    fn hand_on(&mut self, stage: Stage, tag: u32) -> bool {
        let spec = self.spec;
        match stage {
            Stage::AtmRx => {
                if self.router_q.len() < spec.msgq_depth as usize {
                    self.router_q.push_back(tag);
                    self.wake(W_ROUTE);
                } else {
                    self.drops.ip_router_queue += 1;
                }
            }
            Stage::IpRoute => {
                let q = &mut self.tx_q[tag as usize];
                if *q < spec.tx_queue_depth {
                    *q += 1;
                    self.wake(W_ETH_TX);
                } else {
                    self.drops.eth_tx_queue += 1;
                }
            }
            Stage::EthRx(p) => {
                let m = (p / spec.threads.eth_rx.max(1)).min(1) as usize;
                if self.atm_q[m] < spec.msgq_depth {
                    self.atm_q[m] += 1;
                    self.wake(W_ATM_TX);
                } else {
                    self.drops.atm_tx_queue += 1;
                }
            }
            Stage::EthTx => {
                let p = tag as usize;
                if self.eth_tx_fifo[p] >= spec.tx_fifo {
                    return false;
                }
                self.eth_tx_fifo[p] += 1;
                self.start_eth_wire(p);
            }
            Stage::AtmTx => {
                if self.atm_tx_fifo >= spec.tx_fifo {
                    return false;
                }
                self.atm_tx_fifo += 1;
                self.start_atm_wire();
            }
        }
        true
    }

    fn start_eth_wire(&mut self, p: usize) {
        if self.eth_wire_busy[p] || self.eth_tx_fifo[p] == 0 {
            return;
        }
        self.eth_tx_fifo[p] -= 1;
        self.eth_wire_busy[p] = true;
        let now = self.q.now();
        self.q.schedule(
            now + Self::secs(1.0 / FE_FRAMES_PER_S),
            Ev::EthWireDone(p as u32),
        );
        self.wake_blocked(W_ETH_TX);
    }

    fn start_atm_wire(&mut self) {
        if self.atm_wire_busy || self.atm_tx_fifo == 0 {
            return;
        }
        self.atm_tx_fifo -= 1;
        self.atm_wire_busy = true;
        let now = self.q.now();
        self.q
            .schedule(now + Self::secs(1.0 / OC12_CELLS_PER_S), Ev::AtmWireDone);
        self.wake_blocked(W_ATM_TX);
    }

    /// Wakes the threads of a transmit stage that wait for FIFO room.
    fn wake_blocked(&mut self, list: usize) {
        let now = self.q.now();
        let blocked: Vec<u32> = self.waiting[list]
            .iter()
            .copied()
            .filter(|&t| matches!(self.threads[t as usize].step, Step::Blocked(_)))
            .collect();
        self.waiting[list].retain(|&t| !matches!(self.threads[t as usize].step, Step::Blocked(_)));
        for t in blocked {
            self.q.schedule(now, Ev::Thread(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ixp(inputs: u32, route: f64) -> RouterSpec {
        RouterSpec {
            clock_hz: 232e6,
            ethernet_ports: 8,
            ethernet_inputs: inputs,
            cycles: StageCycles {
                atm_rx: 120.0,
                ip_route: route,
                eth_tx: 150.0,
                eth_rx: 300.0,
                atm_tx: 120.0,
            },
            threads: StageThreads {
                atm_rx: 4,
                ip_route: 4,
                eth_tx: 3,
                eth_rx: 4,
                atm_tx: 3,
            },
            msgq_depth: 16,
            tx_queue_depth: 8,
            atm_rx_fifo: 4,
            eth_rx_fifo: 2,
            tx_fifo: 2,
            dram_access: 100e-9,
            duration: 4e-3,
            warmup: 1e-3,
        }
    }

    #[test]
    fn line_rates_are_the_documents_arithmetic() {
        assert!((OC12_CELLS_PER_S - 1.4128e6).abs() < 100.0);
        assert!((FE_FRAMES_PER_S - 148_809.5).abs() < 1.0);
    }

    #[test]
    fn a_fast_router_forwards_every_port_at_line_rate_and_drops_the_excess_at_tx_queues() {
        let r = run(&ixp(0, 100.0));
        for &f in &r.eth_tx_fps {
            assert!((f / FE_FRAMES_PER_S - 1.0).abs() < 0.01, "{f}");
        }
        assert_eq!(r.drops.ip_router_queue, 0);
        // ATM brings 1.41 M/s, Ethernet takes 1.19 M/s: the rest is dropped at the queues.
        let excess = (OC12_CELLS_PER_S - 8.0 * FE_FRAMES_PER_S) * 3e-3;
        let dropped = r.drops.eth_tx_queue as f64;
        assert!(
            (dropped / excess - 1.0).abs() < 0.02,
            "{dropped} vs {excess}"
        );
    }

    #[test]
    fn a_slow_router_drops_at_its_input_queue_and_starves_ethernet() {
        // 232 MHz / 250 cycles = 0.93 M routes/s < 1.19 M/s of Ethernet capacity.
        let r = run(&ixp(0, 250.0));
        let total: f64 = r.eth_tx_fps.iter().sum();
        assert!((total / (232e6 / 250.0) - 1.0).abs() < 0.01, "{total}");
        assert_eq!(r.drops.eth_tx_queue, 0);
        assert!(r.drops.ip_router_queue > 0);
    }

    #[test]
    fn ethernet_input_reaches_atm_in_full_when_atm_has_room() {
        let r = run(&ixp(6, 100.0));
        let offered = 100.0 * 6.0 * FE_FRAMES_PER_S / OC12_CELLS_PER_S;
        assert!(
            (r.atm_tx_percent - offered).abs() < 0.5,
            "{}",
            r.atm_tx_percent
        );
        assert_eq!(r.drops.atm_tx_queue + r.drops.eth_rx_fifo, 0);
    }
}
