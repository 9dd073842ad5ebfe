//! The host CPU behind a root complex, which bridges Ethernet frames between NIC ports: its
//! cores take the NICs' interrupts, read a NIC's cause register (a blocking MMIO read
//! through the fabric), bridge each received frame (software cost per frame and per byte),
//! post it on the other port's transmit ring and write the NIC's registers (posted MMIO
//! writes; a core stalls while the root complex holds `posted_depth` of them). The root
//! complex holds it ([`super::root::RootComplex`]) and hands it its events, the calls for it
//! (a NIC's interrupt, a TLP of its own that left) and the completions of its reads.

use std::collections::VecDeque;

use super::context::{Call, Context};
use super::nic::RegisterWrite;
use super::root::{cpu_cookie, cpu_owner};
use super::NodeEv;
use crate::engine::table::Pool;
use crate::engine::{OpenSpan, SimTime};
use crate::fabric::CpuSpec;
use crate::pcie::tlp::TlpKind;
use crate::sim::Tlp;

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
    /// Calls for its root complex itself (a TLP of the root complex's flows left) that came
    /// while a method of its ran, set aside for the root complex (`take_for_root`).
    for_root: Vec<Call>,
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
            for_root: Vec::new(),
        }
    }

    /// The measurement window opens at `now`: the cores' busy time restarts.
    pub(in crate::sim) fn measure_from(&mut self, now: SimTime) {
        for c in &mut self.cores {
            c.busy_ticks = 0;
            c.busy.restart(now);
        }
    }

    /// Per core, the fraction of the measurement window (from `warmup` to `end`) it was
    /// busy: taking interrupts, reading registers, bridging frames, writing registers.
    pub(in crate::sim) fn busy(&self, warmup: SimTime, end: SimTime) -> Vec<f64> {
        let window = end.saturating_sub(warmup).ticks().max(1) as f64;
        (self.cores.iter())
            .map(|c| ((c.busy_ticks + c.busy.elapsed(end)) as f64 / window).min(1.0))
            .collect()
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

impl Cpu {
    /// Hands `call`, one that came for its root complex while a method of its ran (see
    /// `root::RootComplex::with_cpu`), to the matching method: a NIC's interrupt, a TLP of
    /// its own that left; a call for the root complex itself it sets aside (`for_root`).
    pub(in crate::sim) fn handle<C: Context>(&mut self, cx: &mut C, call: Call) {
        match call {
            Call::CpuInterrupt(core, nic) => self.interrupt(cx, core, nic),
            Call::Left(id, _) => match cpu_cookie(cx.tlp(id).owner.cookie) {
                Some(cookie) => self.tlp_left(cx, cookie),
                None => self.for_root.push(call),
            },
            Call::Arrived(..)
            | Call::Start
            | Call::Event(_)
            | Call::Written(..)
            | Call::WorkloadStart(_)
            | Call::Paced(..) => self.for_root.push(call),
            Call::InterruptTaken | Call::RegistersWritten(_) => unreachable!("a call for a NIC"),
            Call::Doorbell(_) => unreachable!("a call for a bridge"),
        }
    }

    /// The calls for its root complex itself that it set aside (see [`Self::handle`]).
    pub(in crate::sim) fn take_for_root(&mut self) -> Vec<Call> {
        std::mem::take(&mut self.for_root)
    }

    /// Handles the calls that came for it while its method ran, where they came (a TLP it
    /// sent left at once).
    fn run_nested<C: Context>(&mut self, cx: &mut C) {
        while let Some(call) = cx.next_call() {
            self.handle(cx, call);
        }
    }

    /// Sends a new register access of `kind` to the NIC at node `k`, owned as `what`.
    fn access<C: Context>(&mut self, cx: &mut C, kind: TlpKind, k: usize, what: CpuTlp) {
        let r = cx.node() as u32;
        let owner = cpu_owner(r, what.cookie());
        let id = cx.new_tlp(Tlp::at_source(kind, r, k as u32, 4, owner));
        let down = cx.toward(k);
        cx.send(down, id);
        self.run_nested(cx);
    }

    /// The MSI of the NIC at node `nic` reached its root complex: it waits for core
    /// `core`, which takes it at once if idle.
    pub(in crate::sim) fn interrupt<C: Context>(&mut self, cx: &mut C, core: u32, nic: u32) {
        let c = &mut self.cores[core as usize];
        c.queue.push_back(nic);
        if c.phase == Phase::Idle {
            self.next_interrupt(cx, core);
        }
    }

    /// Core `core` takes the next interrupt waiting for it, or goes idle.
    fn next_interrupt<C: Context>(&mut self, cx: &mut C, core: u32) {
        let now = cx.now();
        let cost = self.spec.interrupt_cost;
        let c = &mut self.cores[core as usize];
        let Some(k) = c.queue.pop_front() else {
            c.phase = Phase::Idle;
            c.busy_ticks += c.busy.close(now).unwrap_or(0);
            return;
        };
        c.nic = k;
        c.phase = Phase::Interrupt;
        c.busy.open(now);
        cx.interrupt_taken(k as usize);
        cx.schedule(now + cost, NodeEv::Cpu(core));
    }

    /// Runs core `core` until it has to wait (software time, a register read, room for a
    /// posted write).
    pub(in crate::sim) fn advance<C: Context>(&mut self, cx: &mut C, core: u32) {
        let spec = self.spec;
        loop {
            let now = cx.now();
            let c = &mut self.cores[core as usize];
            let k = c.nic as usize;
            match c.phase {
                Phase::Idle => return,
                Phase::Interrupt => c.phase = Phase::Reads(spec.reads_per_interrupt),
                Phase::Reads(0) => c.phase = Phase::Frames,
                Phase::Reads(left) => {
                    c.phase = Phase::Reads(left - 1);
                    self.access(cx, TlpKind::MRd, k, CpuTlp::RegRead(core));
                    return;
                }
                Phase::Frames => match cx.nic_take_received(k, c.next_port) {
                    Some((p, frame, next)) => {
                        c.next_port = next;
                        c.phase = Phase::FrameDone(p);
                        let bytes = spec.byte_cost_ps * frame as f64 * SimTime::TICKS_PER_PS as f64;
                        let cost = spec.frame_cost + SimTime::from_ticks(bytes.round() as u64);
                        cx.schedule(now + cost, NodeEv::Cpu(core));
                        return;
                    }
                    None => c.phase = Phase::EndWrites(spec.writes_per_interrupt),
                },
                Phase::FrameDone(p) => {
                    c.phase = Phase::FrameWrites(spec.writes_per_frame);
                    cx.nic_post_frame(k, p);
                }
                Phase::FrameWrites(0) => c.phase = Phase::Frames,
                Phase::FrameWrites(left) => {
                    let doorbell = left == spec.writes_per_frame;
                    if !self.register_write(cx, core, k, (doorbell, false, false)) {
                        return;
                    }
                    self.cores[core as usize].phase = Phase::FrameWrites(left - 1);
                }
                Phase::EndWrites(0) => {
                    self.next_interrupt(cx, core);
                    return;
                }
                Phase::EndWrites(left) => {
                    let first = left == spec.writes_per_interrupt;
                    let doorbell = first && spec.writes_per_frame == 0;
                    if !self.register_write(cx, core, k, (doorbell, first, left == 1)) {
                        return;
                    }
                    self.cores[core as usize].phase = Phase::EndWrites(left - 1);
                }
            }
        }
    }

    /// Core `core` writes a register of the NIC at node `k` (ringing the doorbells,
    /// returning receive descriptors, re-enabling interrupts) as `what` says; false if the
    /// root complex already holds `posted_depth` writes (the core waits for one to leave).
    fn register_write<C: Context>(
        &mut self,
        cx: &mut C,
        core: u32,
        k: usize,
        what: (bool, bool, bool),
    ) -> bool {
        if self.posted_queued >= self.spec.posted_depth {
            self.posted_waiters.push(core);
            return false;
        }
        let w = cx.nic_register_write(k, what);
        let i = self.writes.place(w);
        self.posted_queued += 1;
        self.access(cx, TlpKind::MWr, k, CpuTlp::RegWrite(i));
        true
    }

    /// A TLP of its own (`cookie` its own) left the root complex: a register write frees
    /// its posted slot, and a core waiting for one goes on.
    pub(in crate::sim) fn tlp_left<C: Context>(&mut self, cx: &mut C, cookie: u32) {
        if let CpuTlp::RegWrite(_) = CpuTlp::of(cookie) {
            self.posted_queued -= 1;
            if let Some(core) = self.posted_waiters.pop() {
                cx.schedule(cx.now(), NodeEv::Cpu(core));
            }
        }
    }

    /// The completion of a register read of its own (`cookie` its own) reached it: the
    /// core goes on.
    pub(in crate::sim) fn read_done<C: Context>(&mut self, cx: &mut C, cookie: u32) {
        if let CpuTlp::RegRead(core) = CpuTlp::of(cookie) {
            self.advance(cx, core);
        }
    }

    /// Register write `t` of its own (`cookie` its own) took effect at its NIC.
    pub(in crate::sim) fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, cookie: u32) {
        if let CpuTlp::RegWrite(i) = CpuTlp::of(cookie) {
            let w = self.writes[i as usize];
            self.writes.release(i);
            cx.registers_written(t.dst as usize, w);
        }
    }
}
