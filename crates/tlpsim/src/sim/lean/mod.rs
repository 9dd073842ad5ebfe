//! The lean kernel: the hot path of the first classes of runs, DMA endpoints streaming
//! posted writes into, reads from (`read`), or both (`both`), root complexes straight over
//! one link each, or through one crossbar switch (`switch`), with no bit errors,
//! flits, other switches, trace or anything of a root complex's own (bridge, sink, memory
//! limits, host memory, CPU). It runs on the simulator's own state and event queue, so the
//! events it schedules, their order at one instant and every counter the results read are
//! those of the general engine, but a write is a code word (payload and DW lead) in a fixed
//! ring per channel, not a slab record (a read request is its request slot, a completion a
//! code word, each in its channel's queue): no arbiter queues (but a switch's egress), no
//! node dispatch, no owner cookie, no completer. Its eligibility (`eligible`) says yes only
//! when every feature of the run is one it models exactly; a run it cannot finish the same
//! way (a flow quiet for a whole watchdog period, whose starvation the general engine
//! describes by its waiting TLP, or a read that times out) starts again on the general
//! engine.

mod both;
mod path;
mod read;
mod switch;

use super::*;
use crate::fabric::WorkloadKind;
use switch::SwitchIn;

/// Ring slots per channel: a write source keeps at most `WRITE_QUEUE_DEPTH` queued.
const RING: usize = 4;
const _: () = assert!(WRITE_QUEUE_DEPTH as usize <= RING);

/// Which engine runs a scenario.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Kernel {
    /// The lean kernel where the run qualifies, else the general engine.
    #[default]
    Auto,
    /// The general engine, always.
    General,
    /// The lean kernel where the run qualifies, and an error where it gives up (for the
    /// differential test: a run that qualifies then surely ran on it).
    #[doc(hidden)]
    LeanOrError,
    /// The lean kernel, giving up at its first progress call (for the test of the restart
    /// on the general engine, which no run of the class reaches by itself).
    #[doc(hidden)]
    LeanGiveUp,
}

/// A channel that carries a flow's posted writes (or nothing).
const WRITE: u32 = 0;
/// A channel that carries a flow's read requests.
const MRD: u32 = 1;
/// A channel that carries the completions of a flow's reads.
const CPL: u32 = 2;
/// A channel that carries a flow's posted writes and its read requests (`direction =
/// "both"`): the writes in its ring, the MRds in its queue.
const BOTH: u32 = 3;

/// One channel's lean state: the writes waiting for its wire, oldest first.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct LeanChannel {
    /// The flow whose TLPs it carries (`NONE`: none).
    flow: u32,
    /// What it carries: `WRITE`, `MRD`, `CPL`, `BOTH`, or one of a switch's kinds (`SW_IN`,
    /// `SW_MRD`, `SW_BOTH` into it, `SW_UP` and `SW_DOWN` out of it, `SW_CPL` from the root
    /// complex into it).
    kind: u32,
    /// Wire bytes of one of its TLPs with no data (header, digest, framing).
    overhead: u32,
    /// Index of the oldest waiting write in `ring`.
    head: u32,
    /// Writes of the flow's whole TLP payload that its writer cuts next in a row (each
    /// [`LeanChannel::full_word`]; `tlp::full_pieces`): one replaces a sent write at once.
    full: u32,
    /// The code word of a write of the flow's whole TLP payload from a DW's start.
    full_word: u32,
    /// Waiting writes, each `payload | dw_lead << 16`; the arbiter's `queued` counts them.
    ring: [u32; RING],
}

/// The lean kernel's state: one [`LeanChannel`] per channel (empty when the general engine
/// runs).
#[derive(Debug, Default)]
pub(in crate::sim) struct Lean {
    chans: Vec<LeanChannel>,
    /// Each channel's waiting read requests (request slots) or completions (code words),
    /// oldest first; empty on a channel of writes.
    queues: Vec<std::collections::VecDeque<u32>>,
    /// The address (its low 32 bits, as a TLP holds it) of each request slot's read.
    req_addr: Vec<u32>,
    /// The writes its flow had made when each request slot's MRd was queued (its place
    /// among the writes of a channel of both: `lean_send_both`).
    req_writes: Vec<u64>,
    /// A look found a flow quiet: the run starts again on the general engine.
    gave_up: bool,
    /// How the switch at the end of each channel into it forwards its TLPs (and, at each
    /// `SW_DOWN` channel, the completions toward its requester).
    sw: Vec<SwitchIn>,
    /// The births of each flow's writes inside a switch or past it, oldest first.
    born: Vec<std::collections::VecDeque<SimTime>>,
}

/// A write's code word: its payload and DW lead.
#[inline(always)]
fn code(payload: u32, lead: u32) -> u32 {
    payload | lead << 16
}

/// The payload of a code word.
#[inline(always)]
fn payload(code: u32) -> u32 {
    code & 0xffff
}

/// The data credits of a code word (whole DWs from the one holding its first byte).
#[inline(always)]
fn data_credits(code: u32) -> u32 {
    ((code & 0xffff) + (code >> 16)).div_ceil(16)
}

impl Simulator<'_> {
    /// Whether the lean kernel models every feature of this run exactly.
    pub(in crate::sim) fn lean_eligible(&self) -> bool {
        let sys = self.sys;
        let plain_root = |k: &NodeKind| match k {
            NodeKind::RootComplex {
                memory_bandwidth,
                posted_write_rate,
                host_bridge,
                shared_outbound,
                read_bandwidth,
                data_path_bandwidth,
                host_memory,
                ..
            } => {
                memory_bandwidth.is_none()
                    && posted_write_rate.is_none()
                    && host_bridge.is_none()
                    && shared_outbound.is_none()
                    && read_bandwidth.is_none()
                    && data_path_bandwidth.is_none()
                    && host_memory.is_none()
            }
            _ => false,
        };
        let nodes_ok = sys.nodes.iter().enumerate().all(|(i, n)| {
            plain_root(&n.kind)
                || matches!(n.kind, NodeKind::Dma { .. })
                || self.lean_switch_node(i)
        });
        let chans_ok = self
            .chans
            .iter()
            .all(|c| !c.phy.flit && c.phy.byte_error == 0.0);
        nodes_ok
            && chans_ok
            && !self.errors
            && self.trace.is_none()
            && sys.cpu.is_none()
            && sys.socket_links.is_empty()
            && self.host.outbound.iter().all(Option::is_none)
            && self.lean_flows_ok()
    }

    /// Every workload a plain DMA write, read or both-ways stream from a DMA endpoint
    /// straight into a root complex (or through one crossbar switch), one
    /// per channel, on a transmitter with one input, and fewer tags in all than a
    /// completion's code word can name.
    fn lean_flows_ok(&self) -> bool {
        let mut used = vec![false; self.chans.len()];
        let tags: u64 = (0..self.sys.nodes.len())
            .map(|n| match &self.nodes[n] {
                node::AnyNode::Dma(d) => d.free_tags as u64,
                _ => 0,
            })
            .sum();
        self.sys
            .workloads
            .iter()
            .zip(self.work.flows.iter())
            .enumerate()
            .all(|(i, (w, f))| {
                let out = f.out as usize;
                let ok = matches!(w.kind, WorkloadKind::Dma)
                    && matches!(self.sys.nodes[w.source].kind, NodeKind::Dma { .. })
                    && matches!(self.sys.nodes[w.target].kind, NodeKind::RootComplex { .. })
                    && (f.writes || f.reads)
                    && !f.write_read
                    && f.engines.is_none()
                    && f.storage.is_none()
                    && f.doorbell.is_none()
                    && f.pace.is_empty()
                    && out < self.chans.len()
                    && (self.ends.rx_node[out] as usize == w.target
                        || self.lean_switch_up(i, out, w.target).is_some())
                    && self.chans[out].arbiter.single_input()
                    && !used[out]
                    && !used[out ^ 1];
                if ok {
                    used[out] = true;
                    used[out ^ 1] = f.reads;
                }
                ok
            })
            && tags < read::MAX_SLOTS
    }

    /// Sets up the lean state: each flow's channel and its writes' fixed wire bytes.
    pub(in crate::sim) fn lean_start(&mut self) {
        let pcie = &self.sys.pcie;
        let over = |kind| tlp::tlp_bytes(kind, pcie.addressing, 0, pcie.ecrc);
        self.lean.chans = self
            .chans
            .iter()
            .map(|c| LeanChannel {
                flow: NONE,
                overhead: over(TlpKind::MWr) + c.phy.framing,
                ..LeanChannel::default()
            })
            .collect();
        self.lean.queues = vec![Default::default(); self.chans.len()];
        for (f, flow) in self.work.flows.iter().enumerate() {
            let out = flow.out as usize;
            self.lean.chans[out].flow = f as u32;
            self.lean.chans[out].full_word = code(flow.tlp_payload as u32, 0);
            if flow.reads {
                let (up, down) = (self.chans[out].phy.framing, self.chans[out ^ 1].phy.framing);
                // An MRd's wire bytes are a write's with no data: one overhead serves both.
                debug_assert_eq!(over(TlpKind::MRd), over(TlpKind::MWr));
                self.lean.chans[out].kind = if flow.writes { BOTH } else { MRD };
                self.lean.chans[out].overhead = over(TlpKind::MRd) + up;
                self.lean.chans[out ^ 1] = LeanChannel {
                    flow: f as u32,
                    kind: CPL,
                    overhead: over(TlpKind::CplD) + down,
                    ..LeanChannel::default()
                };
            }
        }
        self.lean_switch_start();
    }

    /// Runs the event loop on the lean kernel; None if it gave up (see the module).
    pub(in crate::sim) fn lean_loop(
        &mut self,
        progress: &mut dyn FnMut(f64) -> bool,
    ) -> Option<Result<(), RunError>> {
        let end = self.sys.duration;
        let fraction = |t: SimTime| t.ticks() as f64 / end.ticks().max(1) as f64;
        while let Some((now, ev)) = self.q.pop_small_until(end) {
            if let Err(e) = self.handle_lean(ev) {
                return Some(Err(e));
            }
            if self.lean.gave_up {
                return None;
            }
            if self.q.events() % PROGRESS_EVERY == 0 && self.kernel == Kernel::LeanGiveUp {
                return None;
            }
            if self.q.events() % PROGRESS_EVERY == 0 && !progress(fraction(now)) {
                return Some(Err(RunError::Interrupted(format!(
                    "interrupted after {:.3} us of {:.3} us simulated",
                    now.as_ns_f64() / 1000.0,
                    end.as_ns_f64() / 1000.0
                ))));
            }
        }
        // The writes still queued or on a wire are in flight (no slab holds them).
        self.audit.tlps_in_flight += self.audit.tlps_created - self.audit.tlps_delivered;
        self.audit.payload_in_flight += self.audit.payload_created - self.audit.payload_delivered;
        Some(Ok(()))
    }

    /// One event on the lean kernel: the link events and a flow's start by its own path,
    /// the run's looks as the general engine takes them (they send nothing).
    #[inline(always)]
    fn handle_lean(&mut self, ev: Ev) -> Result<(), RunError> {
        match ev {
            Ev::TxFree(c) => {
                self.chans[c as usize].tx_event = false;
                self.lean_try_send(c);
            }
            Ev::TlpArrive(c) => {
                if let Some(a) = self.chans[c as usize].phy.arriving.pop_front() {
                    let frees_wire = a.frees_wire;
                    self.lean_on_tlp(c, a);
                    if frees_wire {
                        self.chans[c as usize].tx_event = false;
                        self.lean_try_send(c);
                    }
                }
            }
            Ev::DllpArrive(c) => {
                while let Some((dllp, bad, last)) =
                    self.chans[c as usize].phy.dllps_arriving.pop_front()
                {
                    self.lean_on_dllp(c, dllp, bad);
                    if last {
                        break;
                    }
                }
                self.lean_try_send(c);
            }
            Ev::DllTimer(c) => self.on_dll_timer::<true>(c),
            Ev::FcRefresh(c) => self.on_fc_refresh::<true>(c),
            Ev::ReplayTimer(c) => self.on_replay_timer::<true>(c),
            Ev::Start(f) => self.lean_start_flow(f),
            Ev::Enqueue { ch, tlp } => self.lean_enqueue_completions(ch, tlp),
            Ev::Forward(c) => self.lean_forward(c),
            _ => return self.lean_look(ev),
        }
        Ok(())
    }

    /// The run's own events on the lean kernel: its looks, as the general engine's `handle`
    /// takes them (called apart, so that `handle` stays inlined in the general loop). The
    /// events only other classes make (a switch's forward, a delayed enqueue, a node's own,
    /// a pacer's) never come; if one did, the run would start again on the general engine.
    #[cold]
    #[inline(never)]
    fn lean_look(&mut self, ev: Ev) -> Result<(), RunError> {
        match ev {
            Ev::Warmup => self.start_measuring(),
            Ev::Watchdog => self.credit_watchdog()?,
            Ev::Progress => self.lean_progress(),
            // A request that times out is the general engine's to describe.
            Ev::CplTimeout if self.completion_timeout_due() => self.lean.gave_up = true,
            Ev::CplTimeout => self.check_completion_timeouts(),
            _ => self.lean.gave_up = true,
        }
        Ok(())
    }

    /// Flow `f` starts (`start_flow`): its writer fills its ring, then its requester issues
    /// reads.
    #[cold]
    fn lean_start_flow(&mut self, f: u32) {
        if self.work.flows[f as usize].writes {
            self.lean_fill(f, true);
        }
        if self.work.flows[f as usize].reads {
            self.lean_issue_reads(f);
        }
    }

    /// The starvation watchdog's look: a quiet flow's starvation is described by its
    /// waiting TLP, which only the general engine keeps, so the lean kernel gives up.
    #[cold]
    fn lean_progress(&mut self) {
        if self.any_quiet() {
            self.lean.gave_up = true;
        } else {
            self.look_for_starvation();
        }
    }
}
