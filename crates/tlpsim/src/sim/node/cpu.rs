//! The host CPU behind a root complex, which bridges Ethernet frames between NIC ports: its
//! cores take the NICs' interrupts, read a NIC's cause register (a blocking MMIO read
//! through the fabric), bridge each received frame (software cost per frame and per byte),
//! post it on the other port's transmit ring and write the NIC's registers (posted MMIO
//! writes; a core stalls while the root complex holds `posted_depth` of them). The root
//! complex holds it ([`super::root::RootComplex`]) and hands it its events and the
//! completions of its reads.

use std::collections::VecDeque;

use super::nic::RegisterWrite;
use super::root::cpu_owner;
use super::NodeEv;
use crate::engine::table::Pool;
use crate::engine::{OpenSpan, SimTime};
use crate::fabric::CpuSpec;
use crate::pcie::tlp::TlpKind;
use crate::sim::{Ev, Simulator, Tlp};

/// The host CPU at run time.
#[derive(Debug)]
pub(in crate::sim) struct Cpu {
    spec: CpuSpec,
    cores: Vec<Core>,
    /// What each register write in flight does at its NIC (a write's cookie indexes it);
    /// free entries.
    writes: Pool<RegisterWrite>,
    /// Register writes the root complex holds, not yet sent.
    posted_queued: u32,
    /// Cores waiting for room among them.
    posted_waiters: Vec<u32>,
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

/// One core of the CPU.
#[derive(Debug)]
struct Core {
    phase: Phase,
    /// The NIC (its node) whose interrupt it is handling.
    nic: u32,
    /// NICs (their nodes) whose interrupts wait for it.
    queue: VecDeque<u32>,
    /// The port it looks at first for the next received frame.
    next_port: u32,
    /// Busy (out of `Phase::Idle`), while it lasts.
    busy: OpenSpan,
    /// Ticks busy within the measurement window before the current busy span.
    busy_ticks: u64,
}

impl Cpu {
    /// A CPU as `spec` describes it, all cores idle.
    pub(in crate::sim) fn new(spec: CpuSpec) -> Self {
        let cores = (0..spec.cores)
            .map(|_| Core {
                phase: Phase::Idle,
                nic: 0,
                queue: VecDeque::new(),
                next_port: 0,
                busy: OpenSpan::default(),
                busy_ticks: 0,
            })
            .collect();
        Cpu {
            spec,
            cores,
            writes: Pool::new(),
            posted_queued: 0,
            posted_waiters: Vec::new(),
        }
    }

    /// The measurement window opens at `now`: the cores' busy time restarts.
    pub(in crate::sim) fn measure_from(&mut self, now: SimTime) {
        for c in &mut self.cores {
            c.busy_ticks = 0;
            c.busy.restart(now);
        }
    }
}

/// What a TLP of the host CPU is to it (below the root complex's own bit, see
/// [`cpu_owner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum CpuTlp {
    /// A register write whose effect is entry `r` of `Cpu::writes`.
    RegWrite(u32),
    /// A register read by this core, and its completion.
    RegRead(u32),
}

impl CpuTlp {
    /// Its cookie: bit 30 set for a read, the entry or core below.
    fn cookie(self) -> u32 {
        match self {
            CpuTlp::RegWrite(r) => r,
            CpuTlp::RegRead(core) => 1 << 30 | core,
        }
    }

    /// The TLP a cookie made by [`Self::cookie`] stands for.
    fn of(cookie: u32) -> Self {
        let i = cookie & ((1 << 30) - 1);
        if cookie & 1 << 30 != 0 {
            CpuTlp::RegRead(i)
        } else {
            CpuTlp::RegWrite(i)
        }
    }
}

/// The event of core `core` of the CPU behind root complex `r`.
fn cpu_ev(r: usize, core: u32) -> Ev {
    Ev::Node {
        node: r as u32,
        ev: NodeEv::Cpu(core),
    }
}

impl Simulator<'_> {
    /// The CPU behind root complex `r`, if it has one.
    fn cpu_mut(&mut self, r: usize) -> Option<&mut Cpu> {
        self.nodes[r].cpu_mut()
    }

    /// Per core, the fraction of the measurement window (which ends at `end`) it was busy:
    /// taking interrupts, reading registers, bridging frames, writing registers.
    pub(in crate::sim) fn cpu_busy(&self, end: SimTime) -> Vec<f64> {
        let window = end.saturating_sub(self.sys.warmup).ticks().max(1) as f64;
        let cpu = self.sys.cpu.and_then(|c| self.nodes[c.root].cpu());
        cpu.map_or(Vec::new(), |cpu| {
            cpu.cores
                .iter()
                .map(|c| ((c.busy_ticks + c.busy.elapsed(end)) as f64 / window).min(1.0))
                .collect()
        })
    }

    /// The MSI of the NIC at node `nic` reached root complex `r`: it waits for core `core`,
    /// which takes it at once if idle.
    pub(in crate::sim) fn cpu_interrupt(&mut self, r: usize, core: u32, nic: u32) {
        let Some(cpu) = self.cpu_mut(r) else {
            return;
        };
        let c = &mut cpu.cores[core as usize];
        c.queue.push_back(nic);
        if c.phase == Phase::Idle {
            self.next_interrupt(r, core);
        }
    }

    /// Core `core` of the CPU behind root complex `r` takes the next interrupt waiting for
    /// it, or goes idle.
    fn next_interrupt(&mut self, r: usize, core: u32) {
        let now = self.now();
        let Some(cpu) = self.cpu_mut(r) else {
            return;
        };
        let cost = cpu.spec.interrupt_cost;
        let c = &mut cpu.cores[core as usize];
        let Some(k) = c.queue.pop_front() else {
            c.phase = Phase::Idle;
            c.busy_ticks += c.busy.close(now).unwrap_or(0);
            return;
        };
        c.nic = k;
        c.phase = Phase::Interrupt;
        c.busy.open(now);
        if let Some(nic) = self.nic_mut(k as usize) {
            nic.interrupt_taken();
        }
        self.q.schedule(now + cost, cpu_ev(r, core));
    }

    /// Runs core `core` of the CPU behind root complex `r` until it has to wait (software
    /// time, a register read, room for a posted write).
    pub(in crate::sim) fn advance(&mut self, r: usize, core: u32) {
        let Some(spec) = self.cpu_mut(r).map(|cpu| cpu.spec) else {
            return;
        };
        loop {
            let now = self.now();
            let Some(cpu) = self.cpu_mut(r) else {
                return;
            };
            let c = &mut cpu.cores[core as usize];
            let k = c.nic as usize;
            match c.phase {
                Phase::Idle => return,
                Phase::Interrupt => c.phase = Phase::Reads(spec.reads_per_interrupt),
                Phase::Reads(0) => c.phase = Phase::Frames,
                Phase::Reads(left) => {
                    c.phase = Phase::Reads(left - 1);
                    let owner = cpu_owner(r as u32, CpuTlp::RegRead(core).cookie());
                    let id =
                        self.new_tlp(Tlp::at_source(TlpKind::MRd, r as u32, k as u32, 4, owner));
                    let down = self.route.next(r, k);
                    self.push(down, id);
                    return;
                }
                Phase::Frames => {
                    let start = c.next_port;
                    let found = self.nic_mut(k).and_then(|nic| nic.take_received(start));
                    let Some(cpu) = self.cpu_mut(r) else {
                        return;
                    };
                    let c = &mut cpu.cores[core as usize];
                    match found {
                        Some((p, frame, next)) => {
                            c.next_port = next;
                            c.phase = Phase::FrameDone(p);
                            let bytes =
                                spec.byte_cost_ps * frame as f64 * SimTime::TICKS_PER_PS as f64;
                            let cost = spec.frame_cost + SimTime::from_ticks(bytes.round() as u64);
                            self.q.schedule(now + cost, cpu_ev(r, core));
                            return;
                        }
                        None => c.phase = Phase::EndWrites(spec.writes_per_interrupt),
                    }
                }
                Phase::FrameDone(p) => {
                    c.phase = Phase::FrameWrites(spec.writes_per_frame);
                    if let Some(nic) = self.nic_mut(k) {
                        nic.post_frame(p);
                    }
                }
                Phase::FrameWrites(0) => c.phase = Phase::Frames,
                Phase::FrameWrites(left) => {
                    let doorbell = left == spec.writes_per_frame;
                    if !self.register_write(r, core, k, (doorbell, false, false)) {
                        return;
                    }
                    self.set_phase(r, core, Phase::FrameWrites(left - 1));
                }
                Phase::EndWrites(0) => {
                    self.next_interrupt(r, core);
                    return;
                }
                Phase::EndWrites(left) => {
                    let first = left == spec.writes_per_interrupt;
                    let doorbell = first && spec.writes_per_frame == 0;
                    if !self.register_write(r, core, k, (doorbell, first, left == 1)) {
                        return;
                    }
                    self.set_phase(r, core, Phase::EndWrites(left - 1));
                }
            }
        }
    }

    /// Core `core` of the CPU behind root complex `r` moves to `phase`.
    fn set_phase(&mut self, r: usize, core: u32, phase: Phase) {
        if let Some(cpu) = self.cpu_mut(r) {
            cpu.cores[core as usize].phase = phase;
        }
    }

    /// Core `core` of the CPU behind root complex `r` writes a register of the NIC at node
    /// `k`, (ringing the doorbells, returning receive descriptors, re-enabling interrupts)
    /// as `what` says; false if the root complex already holds `posted_depth` writes (the
    /// core waits for one to leave).
    fn register_write(
        &mut self,
        r: usize,
        core: u32,
        k: usize,
        (doorbell, rdt, enable): (bool, bool, bool),
    ) -> bool {
        let Some(cpu) = self.cpu_mut(r) else {
            return false;
        };
        if cpu.posted_queued >= cpu.spec.posted_depth {
            cpu.posted_waiters.push(core);
            return false;
        }
        let Some(w) = self
            .nic_mut(k)
            .map(|nic| nic.register_write(doorbell, rdt, enable))
        else {
            return false;
        };
        let Some(cpu) = self.cpu_mut(r) else {
            return false;
        };
        let i = cpu.writes.place(w);
        cpu.posted_queued += 1;
        let owner = cpu_owner(r as u32, CpuTlp::RegWrite(i).cookie());
        let id = self.new_tlp(Tlp::at_source(TlpKind::MWr, r as u32, k as u32, 4, owner));
        let down = self.route.next(r, k);
        self.push(down, id);
        true
    }

    /// A TLP of the CPU behind root complex `r` (`cookie` its own) left the root complex: a
    /// register write frees its posted slot, and a core waiting for one goes on.
    pub(in crate::sim) fn cpu_tlp_left(&mut self, r: usize, cookie: u32) {
        let now = self.now();
        let Some(cpu) = self.cpu_mut(r) else {
            return;
        };
        if let CpuTlp::RegWrite(_) = CpuTlp::of(cookie) {
            cpu.posted_queued -= 1;
            if let Some(core) = cpu.posted_waiters.pop() {
                self.q.schedule(now, cpu_ev(r, core));
            }
        }
    }

    /// The completion of a register read of the CPU behind root complex `r` (`cookie` its
    /// own) reached it: the core goes on.
    pub(in crate::sim) fn cpu_read_done(&mut self, r: usize, cookie: u32) {
        if let CpuTlp::RegRead(core) = CpuTlp::of(cookie) {
            self.advance(r, core);
        }
    }

    /// Register write `t` of the CPU behind root complex `r` (`cookie` its own) took effect
    /// at its NIC.
    pub(in crate::sim) fn cpu_tlp_written(&mut self, r: usize, t: &Tlp, cookie: u32) {
        let Some(cpu) = self.cpu_mut(r) else {
            return;
        };
        if let CpuTlp::RegWrite(i) = CpuTlp::of(cookie) {
            let w = cpu.writes[i as usize];
            cpu.writes.release(i);
            self.registers_written(t.dst as usize, w);
        }
    }
}
