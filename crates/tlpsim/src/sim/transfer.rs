//! DMA transfers run by a DMA endpoint's engines (or a GPU's copy engines): the path a flow
//! takes when its endpoint has limits of its own (`fabric::DmaDevice`: engines, costs,
//! latency, a memory word, reads in flight per engine) or its direction mixes reads and
//! writes in one stream (alternate, write-read).
//!
//! A transfer's life: the flow starts it when one of its stream's `outstanding` slots is
//! free, at the host address its window gives (`Flow::next_address`). It goes through
//! phases ([`Phase`]): its descriptor read if the endpoint has one, its data (a read, a
//! write, or a write and then a read of the same bytes), its status write if the endpoint
//! has one. A data phase spends its side's `latency` in the device (holding no engine) and
//! waits for an engine of its side, which spends `transfer_cost` (plus the longer of
//! `transfer_cost_per_kib` for each KiB of its data and `partial_unit_cost`
//! per device word it covers in part) and then `request_cost` per request TLP, issuing each
//! when its cost is spent and a tag and room under its engine's `reads_per_engine` (a read)
//! or room in the flow's write queue (a write) is there, and, for a data request, its
//! stream's `rate` allows it (`sim::pace`); a descriptor or status phase pays
//! `request_cost` per TLP only. A reading phase is over when its last completion is in, a
//! writing one when its last MWr has left the endpoint (posted). Requests are cut at MPS or `tlp_payload` (writes) and MRRS (reads),
//! in whole device words, never across a 4 KiB boundary.
//!
//! A read's latency counts from its transfer's start in the device (a write-read's from its
//! write's start), as the device would time it; so does a transfer's latency, to its last
//! byte in (a read, a write-read) or its last MWr out of the endpoint (a write, posted: when
//! its engine is done with it). A GPU's copy engines time a read request from when it leaves
//! instead (a copy is hundreds of MiB). Descriptors and statuses are not the flow's data:
//! their bytes and latencies are not counted.

use std::collections::VecDeque;

use super::flow::FlowTlp;
use super::node::dma::{READ, WRITE};
use super::node::requester::Requester;
use super::*;
use crate::engine::rng::Rng;
use crate::fabric::{AddressPattern, DmaDevice, DmaDirection, WorkloadSpec, CACHE_LINE};

/// The streams of a flow whose transfers its DMA endpoint's engines run.
#[derive(Debug)]
pub(in crate::sim) struct Streams {
    /// Read, write, both (a read stream and a write stream), alternate or write-read.
    direction: DmaDirection,
    /// Transfers in flight per stream (the first stream reads, or is the only one; with
    /// `both`, the second writes).
    active: [u32; 2],
    /// Transfers the first stream has started (alternate: even ones write, odd ones read).
    started: u64,
    /// The endpoint's memory word in bytes.
    unit: u32,
    /// (transfer, its MWr TLPs not yet left the endpoint), in the order they were made.
    leaving: VecDeque<(u32, u32)>,
    /// A read request's latency counts from its transfer's start in the device, as a DMA
    /// endpoint times it (pcie-bench); a GPU's copy (hundreds of MiB) times each request
    /// from when it leaves.
    device_timed: bool,
}

impl Streams {
    /// The streams of workload `w` if its transfers run through its endpoint's engines: a
    /// DMA endpoint with limits of its own, or a direction that mixes reads and writes.
    pub(in crate::sim) fn for_workload(sys: &System, w: &WorkloadSpec) -> Option<Box<Streams>> {
        let device = sys.nodes[w.source].kind.dma_device()?;
        if device.is_none() && !w.direction.mixed() {
            return None;
        }
        let device_timed = sys.nodes[w.source].kind.times_reads_in_device();
        Some(Box::new(Streams {
            direction: w.direction,
            active: [0; 2],
            started: 0,
            unit: device.unit,
            leaving: VecDeque::new(),
            device_timed,
        }))
    }

    /// Streams of transfers (two for `both`).
    fn count(&self) -> usize {
        1 + (self.direction == DmaDirection::Both) as usize
    }

    /// What the next transfer of `stream` does: (writes, reads), a write-read both.
    fn next_kind(&self, stream: usize) -> (bool, bool) {
        match self.direction {
            DmaDirection::Read => (false, true),
            DmaDirection::Write => (true, false),
            DmaDirection::Both => (stream == 1, stream == 0),
            DmaDirection::Alternate => (self.started % 2 == 0, self.started % 2 == 1),
            DmaDirection::WriteRead => (true, true),
        }
    }
}

/// What a transfer is doing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    /// Reading its descriptor (an MRd of the endpoint's descriptor bytes).
    Descriptor,
    /// Writing its data.
    Write,
    /// Reading its data.
    Read,
    /// Writing its status (an MWr of the endpoint's status bytes).
    Status,
}

impl Phase {
    /// Whether it reads (on the read side, with tags).
    fn reads(self) -> bool {
        matches!(self, Phase::Descriptor | Phase::Read)
    }

    /// Whether it moves the flow's data (pays the device latency and transfer costs).
    fn data(self) -> bool {
        matches!(self, Phase::Write | Phase::Read)
    }
}

/// One transfer run by a DMA endpoint's engines.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct DmaTransfer {
    /// Its flow.
    flow: u32,
    /// The stream whose slot it holds.
    stream: u8,
    /// What it is doing.
    phase: Phase,
    /// It writes data (before it reads, if it does both).
    writes: bool,
    /// It reads data.
    reads: bool,
    /// Bytes of data.
    size: u64,
    /// Host and device address of its first byte.
    first: (u64, u64),
    /// Host and device address of the next byte to request.
    next: (u64, u64),
    /// Bytes of the phase not yet requested.
    left: u64,
    /// Bytes of a reading phase not yet arrived.
    unanswered: u64,
    /// Its read requests in flight (not yet wholly answered).
    reads_out: u32,
    /// When it started (a write-read's write), which a read's latency counts from.
    started: SimTime,
    /// When its engine may issue its next request.
    ready: SimTime,
}

/// Device words of `unit` bytes that bytes `[at, at + len)` of the device's memory cover
/// only in part (0, 1 or 2).
fn partial_units(at: u64, len: u64, unit: u64) -> u64 {
    if unit <= 1 || len == 0 {
        return 0;
    }
    let (head, tail) = (at % unit != 0, (at + len) % unit != 0);
    if at / unit == (at + len - 1) / unit {
        (head || tail) as u64
    } else {
        head as u64 + tail as u64
    }
}

/// Bytes of the next request of a transfer whose next byte is at host address `host` and
/// device address `device`, with `left` bytes to go: at most `max` bytes counted in whole
/// device words of `unit` bytes, cut as [`tlp::request_piece`] cuts.
fn request_bytes(next: (u64, u64), left: u64, max: u32, unit: u32) -> u32 {
    let (host, device) = next;
    let mut max = max as u64;
    if unit > 1 {
        let end = (device + max) & !(unit as u64 - 1);
        if end > device {
            max = end - device;
        }
    }
    tlp::request_piece(host, left, max as u32)
}

impl Flow {
    /// Opens a read transfer of `size` bytes at `addr` as the one its requests are cut
    /// from next, in a free transfer slot (a new one if none is free).
    pub(in crate::sim) fn open_read_transfer(&mut self, size: u64, addr: u64) {
        let slot = match self.free_transfers.pop() {
            Some(s) => s,
            None => {
                self.transfer_issued.push(SimTime::ZERO);
                self.transfer_left.push(0);
                (self.transfer_left.len() - 1) as u32
            }
        };
        self.transfer_left[slot as usize] = size;
        self.active += 1;
        self.current = Some((slot, size, addr));
    }

    /// A request of `length` bytes of read transfer `t` is answered in full at `now`:
    /// whether that was the transfer's last byte (its latency then recorded, if the
    /// transfer began after `warmup`).
    pub(in crate::sim) fn read_answered(
        &mut self,
        t: usize,
        length: u32,
        warmup: SimTime,
        now: SimTime,
    ) -> bool {
        self.transfer_left[t] -= length as u64;
        if self.transfer_left[t] != 0 {
            return false;
        }
        let issued = self.transfer_issued[t];
        if issued >= warmup {
            self.transfer_latency.record((now - issued).as_ns_f64());
        }
        true
    }

    /// Closes transfer `t` (a read's, or a storage write's once its media is done): its
    /// slot is free for the next ([`Flow::open_read_transfer`]).
    pub(in crate::sim) fn close_transfer(&mut self, t: usize) {
        self.active -= 1;
        self.free_transfers.push(t as u32);
    }

    /// The host address of the next transfer of `size` bytes: the next slot of its window
    /// (in order, or drawn from `rng`), passing over a slot where a transfer that could fit
    /// between two 4 KiB boundaries would cross one, plus the host offset.
    pub(in crate::sim) fn next_address(&mut self, rng: &mut Rng, size: u64) -> u64 {
        let a = self.addresses;
        if a.window == a.slot {
            return a.host_offset;
        }
        let slots = a.slots();
        let avoid = size + a.host_offset <= tlp::REQUEST_BOUNDARY;
        loop {
            let i = match a.pattern {
                AddressPattern::Sequential => {
                    let i = self.next_slot % slots;
                    self.next_slot += 1;
                    i
                }
                AddressPattern::Random => rng.below(slots),
            };
            let addr = i * a.slot + a.host_offset;
            let crosses = (addr % tlp::REQUEST_BOUNDARY) + size > tlp::REQUEST_BOUNDARY;
            // Slot 0 never crosses when the transfer fits: the walk ends.
            if !(avoid && crosses) {
                return addr;
            }
        }
    }
}

// Slots are whole cache lines (`fabric::Addresses`).
const _: () = assert!(CACHE_LINE.is_power_of_two());

impl Simulator<'_> {
    /// The streams of flow `f` (one whose transfers run through engines).
    fn streams(&mut self, f: u32) -> &mut Streams {
        self.work.flows[f as usize]
            .engines
            .as_deref_mut()
            .expect("a flow run by engines")
    }

    /// Starts flow `f`'s transfers while its streams have free slots.
    #[inline(never)]
    pub(in crate::sim) fn start_transfers(&mut self, rq: &mut Requester<'_>, f: u32) {
        let now = self.now();
        for stream in 0..self.streams(f).count() {
            loop {
                let outstanding = self.work.flows[f as usize].outstanding;
                let st = self.streams(f);
                if st.active[stream] >= outstanding {
                    break;
                }
                st.active[stream] += 1;
                let (writes, reads) = st.next_kind(stream);
                if stream == 0 {
                    st.started += 1;
                }
                self.new_transfer(rq, f, stream as u8, writes, reads);
            }
        }
        // Every slot of the first stream is in use (the bottleneck's "requests").
        self.work.flows[f as usize].window_full.open(now);
    }

    /// Flow `f` starts a transfer on `stream` that `writes` and (then) `reads` its data.
    fn new_transfer(
        &mut self,
        rq: &mut Requester<'_>,
        f: u32,
        stream: u8,
        writes: bool,
        reads: bool,
    ) {
        let now = self.now();
        let flow = &mut self.work.flows[f as usize];
        let size = flow.transfer_size;
        let host = flow.next_address(&mut self.rng, size);
        let first = (host, flow.addresses.device_offset);
        let t = DmaTransfer {
            flow: f,
            stream,
            phase: Phase::Descriptor,
            writes,
            reads,
            size,
            first,
            next: first,
            left: 0,
            unanswered: 0,
            reads_out: 0,
            started: now,
            ready: now,
        };
        let id = self.work.dma.place(t);
        let descriptor = self.device(rq).descriptor;
        if descriptor > 0 {
            self.enter_phase(rq, id, Phase::Descriptor, descriptor as u64);
        } else {
            self.data_phase(rq, id);
        }
    }

    /// The limits of endpoint `rq`.
    fn device(&mut self, rq: &mut Requester<'_>) -> DmaDevice {
        rq.engines(&mut self.nodes)
            .map_or_else(DmaDevice::default, |e| e.device)
    }

    /// Transfer `t` moves its data: it writes first if it writes, else it reads.
    fn data_phase(&mut self, rq: &mut Requester<'_>, t: u32) {
        let tr = self.work.dma[t as usize];
        let phase = if tr.writes { Phase::Write } else { Phase::Read };
        self.enter_phase(rq, t, phase, tr.size);
    }

    /// Transfer `t`'s data is moved (its last byte in, or its last MWr out of the
    /// endpoint): its latency, then its status write if the endpoint has one, else done.
    fn data_moved(&mut self, rq: &mut Requester<'_>, t: u32) {
        let tr = self.work.dma[t as usize];
        if tr.started >= self.sys.warmup {
            let ns = (self.now() - tr.started).as_ns_f64();
            self.work.flows[tr.flow as usize]
                .transfer_latency
                .record(ns);
        }
        let status = self.device(rq).status_writeback;
        if status > 0 {
            self.enter_phase(rq, t, Phase::Status, status as u64);
        } else {
            self.dma_transfer_done(rq, t);
        }
    }

    /// Transfer `t` starts `phase` of `bytes` bytes (data at its own addresses; a descriptor
    /// or status at address 0 of a place of its own) on its side of its endpoint.
    fn enter_phase(&mut self, rq: &mut Requester<'_>, t: u32, phase: Phase, bytes: u64) {
        let tr = &mut self.work.dma[t as usize];
        tr.phase = phase;
        tr.next = if phase.data() { tr.first } else { (0, 0) };
        tr.left = bytes;
        tr.unanswered = if phase.reads() { bytes } else { 0 };
        self.enter_device(rq, t);
    }

    /// Transfer `t` enters its side of its endpoint: its device latency (a data phase),
    /// then an engine.
    fn enter_device(&mut self, rq: &mut Requester<'_>, t: u32) {
        let now = self.now();
        let tr = self.work.dma[t as usize];
        let n = self.work.flows[tr.flow as usize].source as usize;
        let side = if tr.phase.reads() { READ } else { WRITE };
        let s = rq.side(&mut self.nodes, side);
        let latency = if tr.phase.data() {
            s.spec.latency + per_kib(s.spec.latency_per_kib, tr.size)
        } else {
            SimTime::ZERO
        };
        if latency > SimTime::ZERO {
            // Ready in time order: a size-dependent latency can make a later transfer ready
            // first (the search from the back is one step when the latencies are equal).
            let at = now + latency;
            let i = s.delayed.partition_point(|&(ready, _)| ready <= at);
            s.delayed.insert(i, (at, t));
            self.wake_engines(rq, n, side, now + latency);
        } else {
            s.waiting.push_back(t);
        }
        self.run_engines(rq, n, side);
    }

    /// Makes sure side `side` of endpoint `n` is woken at `at` (or earlier).
    fn wake_engines(&mut self, rq: &mut Requester<'_>, n: usize, side: usize, at: SimTime) {
        let s = rq.side(&mut self.nodes, side);
        if s.wake.is_none_or(|w| at < w) {
            s.wake = Some(at);
            let ev = Ev::Node {
                node: n as u32,
                ev: NodeEv::Engine(side as u32),
            };
            self.q.schedule(at, ev);
        }
    }

    /// A wake-up of side `side` of endpoint `n` fired (see `NodeEv::Engine`).
    #[inline(never)]
    pub(in crate::sim) fn engines_woken(&mut self, rq: &mut Requester<'_>, n: usize, side: usize) {
        let now = self.now();
        let s = rq.side(&mut self.nodes, side);
        if s.wake.is_some_and(|w| w <= now) {
            s.wake = None;
        }
        self.run_engines(rq, n, side);
    }

    /// Side `side` of endpoint `n` does what it can now: transfers whose latency is over
    /// wait for an engine, free engines take them, engines issue the requests that are due
    /// and have a tag or write-queue room. A call from within (a TLP sent synchronously
    /// wakes its owner) only asks for another round.
    fn run_engines(&mut self, rq: &mut Requester<'_>, n: usize, side: usize) {
        let s = rq.side(&mut self.nodes, side);
        if s.running {
            s.again = true;
            return;
        }
        s.running = true;
        loop {
            rq.side(&mut self.nodes, side).again = false;
            self.engines_round(rq, n, side);
            let s = rq.side(&mut self.nodes, side);
            if !s.again {
                s.running = false;
                return;
            }
        }
    }

    /// Free engines of side `side` of endpoint `n` take the transfers waiting, oldest first
    /// (those whose device latency is over join the wait first).
    fn take_engines(&mut self, rq: &mut Requester<'_>, n: usize, side: usize) {
        let now = self.now();
        let unit = rq
            .engines(&mut self.nodes)
            .map_or(1, |e| e.device.unit as u64);
        let s = rq.side(&mut self.nodes, side);
        while s.delayed.front().is_some_and(|&(at, _)| at <= now) {
            let (_, t) = s.delayed.pop_front().expect("checked");
            s.waiting.push_back(t);
        }
        if let Some(&(at, _)) = s.delayed.front() {
            self.wake_engines(rq, n, side, at);
        }
        loop {
            let s = rq.side(&mut self.nodes, side);
            if s.free == 0 {
                return;
            }
            let Some(t) = s.waiting.pop_front() else {
                return;
            };
            s.busy.push(t);
            if s.free != u32::MAX {
                s.free -= 1;
            }
            let spec = s.spec;
            let tr = &mut self.work.dma[t as usize];
            let overhead = if tr.phase.data() {
                let partial = partial_units(tr.first.1, tr.size, unit);
                // The data's time and the partial words' time overlap (the partial words
                // are read, merged and written back while the data streams): the longer
                // counts.
                let data = per_kib(spec.transfer_cost_per_kib, tr.size);
                let merge = SimTime::from_ticks(partial * spec.partial_unit_cost.ticks());
                spec.transfer_cost + data.max(merge)
            } else {
                SimTime::ZERO
            };
            tr.ready = now + overhead + spec.request_cost;
            rq.side(&mut self.nodes, side).work(overhead);
        }
    }

    /// One round of [`Self::run_engines`].
    fn engines_round(&mut self, rq: &mut Requester<'_>, n: usize, side: usize) {
        let now = self.now();
        let mut i = 0;
        loop {
            self.take_engines(rq, n, side);
            let Some(&t) = rq.side(&mut self.nodes, side).busy.get(i) else {
                return;
            };
            let tr = self.work.dma[t as usize];
            if tr.ready > now {
                self.wake_engines(rq, n, side, tr.ready);
                i += 1;
                continue;
            }
            if let Some(due) = self.paced_until(&tr, now) {
                // Its stream's rate holds its data requests; another flow's may go.
                self.wake_engines(rq, n, side, due);
                i += 1;
                continue;
            }
            let room = if side == READ {
                matches!(rq.tags(&mut self.nodes), Some(free) if *free > 0)
            } else {
                self.work.flows[tr.flow as usize].write_queued < WRITE_QUEUE_DEPTH
            };
            if !room {
                if side == READ {
                    return; // no tag: no read transfer can issue
                }
                i += 1; // this flow's write queue is full; another flow's may not be
                continue;
            }
            if side == READ
                && (rq.side(&mut self.nodes, side).spec.reads_per_engine)
                    .is_some_and(|m| tr.reads_out >= m)
            {
                i += 1; // its engine has all the reads it keeps in flight; another may not
                continue;
            }
            let (out, id) = self.make_request(rq, t);
            let tr = self.work.dma[t as usize];
            // The doorbell after every few transfers' data, behind it.
            let doorbell = match self.work.flows[tr.flow as usize].doorbell {
                Some(d) if tr.left == 0 && tr.phase == Phase::Write => {
                    let flow = &mut self.work.flows[tr.flow as usize];
                    flow.transfers_queued += 1;
                    let order = self.tlps[id as usize].order;
                    (flow.transfers_queued % d.every as u64 == 0).then_some((d.ntb, order))
                }
                _ => None,
            };
            if tr.left == 0 {
                // Its last request: the engine is free.
                let s = rq.side(&mut self.nodes, side);
                s.busy.remove(i);
                s.free = s.free.saturating_add(1); // u32::MAX: unlimited
            }
            self.push(out, id);
            if let Some((ntb, order)) = doorbell {
                self.ring_doorbell(tr.flow, ntb as u32, order);
            }
        }
    }

    /// When transfer `tr`'s next data request may start, if its stream's `rate` holds it
    /// back at `now` (counted while measuring; `pace`).
    fn paced_until(&mut self, tr: &DmaTransfer, now: SimTime) -> Option<SimTime> {
        if !tr.phase.data() {
            return None;
        }
        let measuring = self.window.measuring;
        let p = self.work.flows[tr.flow as usize]
            .pace
            .get_mut(tr.stream as usize)
            .filter(|p| !p.ready(now))?;
        if measuring {
            p.held += 1;
        }
        Some(p.due())
    }

    /// Transfer `tr`'s data request of `len` bytes starts: its stream's `rate` counts it.
    fn pace_request(&mut self, tr: &DmaTransfer, len: u32) {
        if tr.phase.data() {
            if let Some(p) = self.work.flows[tr.flow as usize]
                .pace
                .get_mut(tr.stream as usize)
            {
                p.take(len as u64);
            }
        }
    }

    /// Makes transfer `t`'s next request TLP at endpoint `rq` (taking a tag for a read, a
    /// place in the write queue for a write) and returns (channel, TLP) to push.
    fn make_request(&mut self, rq: &mut Requester<'_>, t: u32) -> (u32, u32) {
        let now = self.now();
        let tr = self.work.dma[t as usize];
        let f = tr.flow;
        let flow = &mut self.work.flows[f as usize];
        let (src, dst, out) = (flow.source, flow.target, flow.out);
        let (unit, device_timed) = flow
            .engines
            .as_ref()
            .map_or((1, true), |s| (s.unit, s.device_timed));
        let reads = tr.phase.reads();
        let s = rq.side(&mut self.nodes, if reads { READ } else { WRITE });
        let cost = s.spec.request_cost;
        s.work(cost);
        let id = if reads {
            let len = request_bytes(tr.next, tr.left, self.sys.pcie.mrrs, unit);
            if let Some(free) = rq.tags(&mut self.nodes) {
                *free -= 1;
            }
            self.work.dma[t as usize].reads_out += 1;
            self.pace_request(&tr, len);
            let req = Req {
                issued: tr.started,
                from_start: device_timed,
                descriptor: tr.phase == Phase::Descriptor,
                ..Req::new(f, t, len, false, now)
            };
            let r = self.work.reqs.place(req);
            let owner = Owner {
                node: src,
                cookie: FlowTlp::Request(r).cookie(),
            };
            self.requested(t, len, now + cost);
            self.new_tlp(Tlp {
                addr: tr.next.0 as u32,
                ..Tlp::at_source(TlpKind::MRd, src, dst, len, owner)
            })
        } else {
            let flow = &mut self.work.flows[f as usize];
            let len = request_bytes(tr.next, tr.left, flow.tlp_payload as u32, unit);
            self.pace_request(&tr, len);
            let flow = &mut self.work.flows[f as usize];
            let order = flow.next_order;
            flow.next_order += 1;
            flow.write_queued += 1;
            let st = self.streams(f);
            match st.leaving.back_mut() {
                Some((last, k)) if *last == t => *k += 1,
                _ => st.leaving.push_back((t, 1)),
            }
            let purpose = if tr.phase == Phase::Status {
                FlowTlp::Status(f)
            } else {
                FlowTlp::Data(f)
            };
            let owner = Owner {
                node: src,
                cookie: purpose.cookie(),
            };
            self.requested(t, len, now + cost);
            self.new_tlp(
                Tlp {
                    order,
                    ..Tlp::at_source(TlpKind::MWr, src, dst, len, owner)
                }
                .data_at(tr.next.0),
            )
        };
        (out, id)
    }

    /// Transfer `t` has requested `len` more bytes; its next request is due at `ready`.
    fn requested(&mut self, t: u32, len: u32, ready: SimTime) {
        let tr = &mut self.work.dma[t as usize];
        tr.left -= len as u64;
        tr.next.0 += len as u64;
        tr.next.1 += len as u64;
        tr.ready = ready;
    }

    /// An MWr of flow `f` (run by engines) left its endpoint: the write queue has room, and
    /// the transfer whose last MWr it was is through its writing phase.
    #[inline(never)]
    pub(in crate::sim) fn engine_write_left(&mut self, rq: &mut Requester<'_>, f: u32) {
        let st = self.streams(f);
        let front = st
            .leaving
            .front_mut()
            .expect("an MWr of this flow was made");
        front.1 -= 1;
        if front.1 == 0 {
            let t = front.0;
            st.leaving.pop_front();
            if self.work.dma[t as usize].left == 0 {
                self.transfer_written(rq, t);
            }
        }
        let n = self.work.flows[f as usize].source as usize;
        self.run_engines(rq, n, WRITE);
    }

    /// Transfer `t`'s writes of its phase have all left its endpoint: after its data, a
    /// write-read goes on to read the same bytes; after its status it is done.
    fn transfer_written(&mut self, rq: &mut Requester<'_>, t: u32) {
        let tr = self.work.dma[t as usize];
        match tr.phase {
            Phase::Write if tr.reads => self.enter_phase(rq, t, Phase::Read, tr.size),
            Phase::Write => self.data_moved(rq, t),
            _ => self.dma_transfer_done(rq, t),
        }
    }

    /// A read request of transfer `t` has all its `len` bytes in: its descriptor is read
    /// (its data phase follows) or its data.
    #[inline(never)]
    pub(in crate::sim) fn engine_read_answered(
        &mut self,
        rq: &mut Requester<'_>,
        t: u32,
        len: u32,
    ) {
        let tr = &mut self.work.dma[t as usize];
        tr.unanswered -= len as u64;
        tr.reads_out -= 1;
        if tr.unanswered == 0 {
            match tr.phase {
                Phase::Descriptor => self.data_phase(rq, t),
                _ => self.data_moved(rq, t),
            }
        }
    }

    /// Transfer `t` is done: its slot takes the next transfer.
    fn dma_transfer_done(&mut self, rq: &mut Requester<'_>, t: u32) {
        let now = self.now();
        let tr = self.work.dma[t as usize];
        let f = tr.flow;
        self.work.dma.release(t);
        self.streams(f).active[tr.stream as usize] -= 1;
        let flow = &mut self.work.flows[f as usize];
        flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
        self.start_transfers(rq, f);
    }

    /// A read tag of endpoint `n` (whose flow `f` runs by engines) is free again.
    #[inline(never)]
    pub(in crate::sim) fn engine_tag_free(&mut self, rq: &mut Requester<'_>, f: u32) {
        let n = self.work.flows[f as usize].source as usize;
        self.run_engines(rq, n, READ);
    }
}

/// `cost_per_kib` for `size` bytes, rounded down to a tick.
fn per_kib(cost_per_kib: SimTime, size: u64) -> SimTime {
    SimTime::from_ticks((cost_per_kib.ticks() as u128 * size as u128 / 1024) as u64)
}
