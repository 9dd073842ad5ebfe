//! Forward progress of the DMA flows: the requesters' completion timeouts, and a watchdog
//! that names a flow starved when it has TLPs waiting but completes nothing for a period.
//!
//! A completion timeout is what a requester does (PCI Express Base Specification, section
//! 2.8, and `pcie::completion_timeout`): a read request whose completions have not all come
//! within its requester's `completion_timeout` of being made is given up. Its tag is free
//! again, the error counts for its flow (`completion_timeouts`), its transfer goes on
//! without its data, and completions that still come for it are discarded (an Unexpected
//! Completion to the requester). The timer counts from when the requester made the
//! request, so a request held inside the requester (a root complex's shared outbound queue)
//! times out too. Requests are checked at their deadlines and at least every eighth of the
//! shortest timeout, so none is checked in a run shorter than that eighth (6.25 ms at the
//! default 50 ms).
//!
//! The starvation watchdog looks at every DMA and storage flow (Ethernet bridging and fio
//! workloads have results of their own) once per deadlock-watchdog period, which covers
//! every link-level recovery. A flow that completed nothing (no write took effect, no
//! completion came) since the previous look while one of its TLPs waits in an egress queue
//! or its root complex's shared outbound queue is starved: the result names it, the time
//! from which it completed nothing, and what its oldest waiting TLP waits for. A flow whose
//! TLPs are all inside devices (a slow memory, a seeking drive) is slow, not starved.

use super::*;
use crate::pcie::flow_control::FcClass;
use bottleneck::Bottleneck;
use result::Starved;

/// A starvation as the watchdog follows it.
#[derive(Debug, Clone)]
struct Episode {
    /// Nothing completed from here on.
    since: SimTime,
    /// Until this look (or the run's end).
    until: SimTime,
    /// Whether it lasts (the flow has made no progress since).
    open: bool,
    /// What its oldest waiting TLP waited for when it was found starved.
    waits_on: String,
    /// One sentence on why.
    detail: String,
}

/// The forward-progress state of a run.
#[derive(Debug, Default)]
pub(in crate::sim) struct Progress {
    /// Completion timeouts per flow, over the whole run.
    timeouts: Vec<u64>,
    /// Per flow: whether the watchdog follows it.
    watched: Vec<bool>,
    /// Per flow: its progress count (`Flow::done`) at the last look.
    done_at_look: Vec<u64>,
    /// Per flow: the last look that found it had progressed (or the run's start).
    progressed_at: Vec<SimTime>,
    /// Per flow: its longest starvation so far.
    longest: Vec<Option<Episode>>,
    /// The watchdog's period.
    period: SimTime,
    /// The completion timeout check's longest interval (None: every timeout is off).
    scan_every: Option<SimTime>,
}

impl Simulator<'_> {
    /// Sets up the forward-progress checks and schedules their first looks.
    pub(in crate::sim) fn start_progress(&mut self) {
        let flows = self.work.flows.len();
        let watched: Vec<bool> = self
            .sys
            .workloads
            .iter()
            .zip(self.work.flows.iter())
            .map(|(w, f)| {
                // Their drive's and their NIC's own loops drive them.
                w.kind.driver() == Driver::Streams && (f.reads || f.writes || f.engines.is_some())
            })
            .collect();
        let shortest = self
            .work
            .flows
            .iter()
            .filter(|f| f.reads || f.engines.is_some())
            .filter_map(|f| self.sys.nodes[f.source as usize].completion_timeout)
            .min();
        self.watch.progress = Progress {
            timeouts: vec![0; flows],
            done_at_look: vec![0; flows],
            progressed_at: vec![SimTime::ZERO; flows],
            longest: vec![None; flows],
            period: self.watch.watchdog,
            scan_every: shortest.map(|t| SimTime::from_ticks((t.ticks() / 8).max(1))),
            watched,
        };
        if self.watch.progress.watched.contains(&true) {
            self.q.schedule(self.watch.watchdog, Ev::Progress);
        }
        if let Some(every) = self.watch.progress.scan_every {
            self.q.schedule(every, Ev::CplTimeout);
        }
    }

    /// Whether a look now would find a watched flow that completed nothing since the last.
    pub(in crate::sim) fn any_quiet(&self) -> bool {
        let p = &self.watch.progress;
        self.work
            .flows
            .iter()
            .enumerate()
            .any(|(f, flow)| p.watched[f] && flow.done == p.done_at_look[f])
    }

    /// The starvation watchdog's look (see the module).
    #[cold]
    pub(in crate::sim) fn look_for_starvation(&mut self) {
        let now = self.now();
        let mut quiet = Vec::new();
        for (f, flow) in self.work.flows.iter().enumerate() {
            if !self.watch.progress.watched[f] {
                continue;
            }
            let p = &mut self.watch.progress;
            if flow.done != p.done_at_look[f] {
                p.done_at_look[f] = flow.done;
                p.progressed_at[f] = now;
                if let Some(e) = p.longest[f].as_mut() {
                    e.open = false;
                }
            } else {
                quiet.push(f);
            }
        }
        if !quiet.is_empty() {
            let oldest = self.oldest_waiting();
            for f in quiet {
                if let Some((tlp, place)) = oldest[f] {
                    self.note_starved(f, tlp, place, now);
                }
            }
        }
        self.q
            .schedule(now + self.watch.progress.period, Ev::Progress);
    }

    /// Flow `f` completed nothing since its last progress while its TLP `tlp` waits at
    /// `place`: its starvation begins or goes on.
    fn note_starved(&mut self, f: usize, tlp: u32, place: Waiting, now: SimTime) {
        let since = self.watch.progress.progressed_at[f];
        if let Some(e) = self.watch.progress.longest[f].as_mut().filter(|e| e.open) {
            e.until = now;
            return;
        }
        let (waits_on, detail) = self.describe(tlp, place);
        let e = Episode {
            since,
            until: now,
            open: true,
            waits_on,
            detail,
        };
        let longest = &mut self.watch.progress.longest[f];
        // A new starvation replaces an earlier one only when it already lasts longer.
        if longest
            .as_ref()
            .is_none_or(|l| l.until - l.since < e.until - e.since)
        {
            *longest = Some(e);
        }
    }

    /// Per flow, its oldest TLP (by when it was made) waiting in an egress queue or a root
    /// complex's shared outbound queue, and where.
    fn oldest_waiting(&self) -> Vec<Option<(u32, Waiting)>> {
        let mut out: Vec<Option<(u32, Waiting)>> = vec![None; self.work.flows.len()];
        let mut note = |sim: &Self, tlp: u32, place: Waiting| {
            let t = &sim.tlps[tlp as usize];
            let Some(f) = AnyNode::tlp_workload(sim, t) else {
                return;
            };
            let slot = &mut out[f as usize];
            if slot.is_none_or(|(old, _)| sim.tlps[old as usize].born > t.born) {
                *slot = Some((tlp, place));
            }
        };
        for n in 0..self.nodes.len() {
            for (tlp, posted_waiting) in self.outbound_waiting(n) {
                let node = n as u32;
                note(
                    self,
                    tlp,
                    Waiting::Outbound {
                        node,
                        posted_waiting,
                    },
                );
            }
        }
        for (c, ch) in self.chans.iter().enumerate() {
            for (class, tlp) in ch.arbiter.waiting() {
                let ch = c as u32;
                note(self, tlp, Waiting::Egress { ch, class });
            }
        }
        out
    }

    /// What TLP `tlp` waiting at `place` waits for: a resource name and a sentence.
    fn describe(&self, tlp: u32, place: Waiting) -> (String, String) {
        let kind = self.tlps[tlp as usize].kind;
        match place {
            Waiting::Outbound {
                node,
                posted_waiting,
            } => {
                let rc = &self.sys.nodes[node as usize].name;
                let why = if posted_waiting && kind != TlpKind::MWr {
                    "posted writes, which may pass it, keep going first"
                } else {
                    "its root port does not take more"
                };
                (
                    format!("{rc} shared outbound queue"),
                    format!("its {kind:?} waits in {rc}'s shared outbound queue: {why}"),
                )
            }
            Waiting::Egress { ch, class } => {
                let link = &self.sys.links[ch as usize / 2];
                let (tx, rx) = if ch % 2 == 0 {
                    (link.up, link.down)
                } else {
                    (link.down, link.up)
                };
                let (tx, rx) = (&self.sys.nodes[tx].name, &self.sys.nodes[rx].name);
                let c = &self.chans[ch as usize];
                match c.blocked {
                    Blocked::Credits(ty) if ty == class.header() || ty == class.data() => {
                        let adv = c.rx_credits.advertised(ty);
                        let adv = adv.map_or("infinite".to_string(), |a| a.to_string());
                        (
                            format!("{tx} -> {rx} {} credits", ty.name()),
                            format!(
                                "its {kind:?} waits at {tx} for {} credits toward {rx} ({rx} \
                                 advertises {adv})",
                                ty.name()
                            ),
                        )
                    }
                    _ => {
                        let dir = if ch % 2 == 0 { "down" } else { "up" };
                        (
                            format!("{} {dir}", link.name),
                            format!("its {kind:?} waits in {tx}'s egress queue toward {rx}"),
                        )
                    }
                }
            }
        }
    }

    /// The completion timeout check (see the module): gives up the read requests whose time
    /// is up and comes back at the next deadline, or after an eighth of the shortest timeout.
    #[cold]
    pub(in crate::sim) fn check_completion_timeouts(&mut self) {
        let now = self.now();
        let Some(every) = self.watch.progress.scan_every else {
            return;
        };
        let mut free = vec![false; self.work.reqs.len()];
        for &r in self.work.reqs.free_slots() {
            free[r as usize] = true;
        }
        let mut next = now + every;
        for (r, &is_free) in free.iter().enumerate() {
            let req = self.work.reqs[r];
            if is_free || req.timed_out {
                continue;
            }
            let source = self.work.flows[req.flow as usize].source as usize;
            let Some(limit) = self.sys.nodes[source].completion_timeout else {
                continue;
            };
            let due = req.made + limit;
            if due <= now {
                self.time_out(r as u32);
            } else {
                next = next.min(due);
            }
        }
        self.q.schedule(next, Ev::CplTimeout);
    }

    /// Whether [`Self::check_completion_timeouts`] would time a request out now (the lean
    /// kernel leaves that to the general engine).
    pub(in crate::sim) fn completion_timeout_due(&self) -> bool {
        let now = self.now();
        if self.watch.progress.scan_every.is_none() {
            return false;
        }
        let mut free = vec![false; self.work.reqs.len()];
        for &r in self.work.reqs.free_slots() {
            free[r as usize] = true;
        }
        free.iter().enumerate().any(|(r, &is_free)| {
            let req = self.work.reqs[r];
            let source = self.work.flows[req.flow as usize].source as usize;
            let limit = self.sys.nodes[source].completion_timeout;
            !is_free && !req.timed_out && limit.is_some_and(|l| req.made + l <= now)
        })
    }

    /// Read request `slot` timed out: its requester frees the tag and counts the error; its
    /// transfer goes on without the bytes it asked for.
    fn time_out(&mut self, slot: u32) {
        let req = &mut self.work.reqs[slot as usize];
        req.timed_out = true;
        req.first = false; // its transfer's slot may serve another before the MRd leaves
        let r = *req;
        let f = r.flow as usize;
        self.watch.progress.timeouts[f] += 1;
        // Outside its requester's handlers: the requester is in its slot.
        let rq = &mut Requester::InSlot(self.work.flows[f].source as usize);
        if let Some(free_tags) = rq.tags(&mut self.nodes) {
            *free_tags += 1;
        }
        if self.work.flows[f].engines.is_some() {
            self.engine_read_answered(rq, r.transfer, r.length);
            self.engine_tag_free(rq, f as u32);
            return;
        }
        let flow = &mut self.work.flows[f];
        let t = r.transfer as usize;
        flow.transfer_left[t] -= r.length as u64;
        if flow.transfer_left[t] == 0 {
            flow.close_transfer(t);
        }
        self.issue_reads(rq, f as u32);
    }

    /// A completion `id` (payload `payload`) came for read request `slot` after it timed
    /// out: discarded; the request's entry is free once all of them came.
    pub(in crate::sim) fn late_completion(&mut self, slot: u32, id: u32, payload: u32) {
        let req = &mut self.work.reqs[slot as usize];
        req.remaining -= payload.min(req.remaining);
        if req.remaining == 0 {
            self.work.reqs.release(slot);
        }
        self.deliver(id);
    }

    /// Flow `f`'s completion timeouts, its longest starvation and its verdict, for its
    /// result (the run ends at `end`): a flow still starved at the end is limited by what
    /// it starves on (kind "starved"), whatever `verdict` the busy shares gave.
    pub(in crate::sim) fn progress_of(
        &self,
        f: usize,
        name: &str,
        end: SimTime,
        verdict: Bottleneck,
    ) -> (u64, Option<Starved>, Bottleneck) {
        let us = |t: SimTime| t.as_ns_f64() / 1000.0;
        let timeouts = self.watch.progress.timeouts.get(f).copied().unwrap_or(0);
        let verdict = self.timeout_verdict(f, timeouts, verdict);
        let Some(e) = self.watch.progress.longest.get(f).cloned().flatten() else {
            return (timeouts, None, verdict);
        };
        let starved = Starved {
            flow: name.to_string(),
            since_us: us(e.since),
            until_us: (!e.open).then(|| us(e.until)),
            for_us: us(if e.open { end } else { e.until } - e.since),
            waits_on: e.waits_on,
            detail: e.detail,
        };
        if !e.open {
            return (timeouts, Some(starved), verdict);
        }
        let window = end.saturating_sub(self.sys.warmup);
        let quiet = end - e.since.max(self.sys.warmup);
        let verdict = Bottleneck {
            kind: "starved",
            resource: starved.waits_on.clone(),
            busy: quiet.ticks() as f64 / window.ticks().max(1) as f64,
            detail: format!(
                "it completed nothing from {:.3} us to the end: {}",
                starved.since_us, starved.detail
            ),
        };
        (timeouts, Some(starved), verdict)
    }

    /// Flow `f`'s verdict with `timeouts` completion timeouts: where the verdict says its
    /// requests in flight limit it (their latency), the timeouts are that latency, and the
    /// verdict names them.
    fn timeout_verdict(&self, f: usize, timeouts: u64, verdict: Bottleneck) -> Bottleneck {
        if timeouts == 0 || !matches!(verdict.kind, "requests" | "offered_load" | "iodepth") {
            return verdict;
        }
        let source = &self.sys.nodes[self.work.flows[f].source as usize];
        let limit = source.completion_timeout.map_or(String::new(), |t| {
            format!(" of {:.1} us", t.as_ns_f64() / 1000.0)
        });
        Bottleneck {
            kind: "completion_timeout",
            resource: format!("{} completion timeout", source.name),
            busy: verdict.busy,
            detail: format!(
                "{timeouts} of its reads timed out ({}'s completion timeout{limit}): their \
                 completions came later than the requester waits for them or not at all, \
                 and each held its tag until then; raise completion_timeout or make the \
                 completer answer sooner",
                source.name
            ),
        }
    }
}

/// Where a TLP waits.
#[derive(Debug, Clone, Copy)]
enum Waiting {
    /// In root complex `node`'s shared outbound queue (posted writes wait there too, or not).
    Outbound { node: u32, posted_waiting: bool },
    /// In the egress queue of channel `ch`, among TLPs of `class`.
    Egress { ch: u32, class: FcClass },
}
