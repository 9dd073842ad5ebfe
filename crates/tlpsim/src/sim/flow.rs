//! DMA flows: the write and read streams of DMA and storage workloads (transfers at their
//! window's addresses, outstanding requests, tags, requests cut at MPS or MRRS and 4 KiB)
//! at their requester (a DMA engine, a storage HBA or a root complex), and their data
//! arriving at the target. A flow whose DMA endpoint has limits of its own, or whose
//! direction mixes reads and writes, has its transfers run by the endpoint's engines
//! instead (`sim::transfer`); its TLPs come back here when they leave and arrive.
//!
//! The requester's own state (its tags, engines, drives) stays in the node: its handler
//! lends it ([`Requester::Lent`]); flow code run outside its handlers reaches the node in
//! its slot ([`Requester::InSlot`]).

use super::node::requester::Requester;
use super::pace::{READS, WRITES};
use super::*;

/// What a DMA flow's TLP is to its requester (a DMA engine, a storage HBA or a root
/// complex): the cookie of its [`Owner`], encoded and decoded only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(in crate::sim) enum FlowTlp {
    /// A posted write of flow `f`'s data.
    Data(u32),
    /// The write that rings flow `f`'s bridge doorbell.
    Doorbell(u32),
    /// A read request in slot `r` of `Simulator::reqs`, or a completion of it.
    Request(u32),
    /// The status write of a transfer of flow `f` (run by its endpoint's engines).
    Status(u32),
}

impl FlowTlp {
    /// The index part of a cookie.
    const INDEX: u32 = (1 << 29) - 1;

    /// Its cookie: the index below bit 29, the variant in bits 29 and 30 (bit 31 is left
    /// clear for the requester node's own use).
    pub(in crate::sim) fn cookie(self) -> u32 {
        let (tag, i) = match self {
            FlowTlp::Data(f) => (0, f),
            FlowTlp::Doorbell(f) => (1, f),
            FlowTlp::Request(r) => (2, r),
            FlowTlp::Status(f) => (3, f),
        };
        debug_assert!(i <= Self::INDEX);
        tag << 29 | i
    }

    /// The flow TLP a cookie made by [`Self::cookie`] stands for.
    #[inline(always)]
    pub(in crate::sim) fn of(cookie: u32) -> Self {
        let i = cookie & Self::INDEX;
        match cookie >> 29 & 3 {
            0 => FlowTlp::Data(i),
            1 => FlowTlp::Doorbell(i),
            2 => FlowTlp::Request(i),
            _ => FlowTlp::Status(i),
        }
    }

    /// The request slot of a completion's cookie (a `Request`'s).
    #[inline(always)]
    fn request_slot(cookie: u32) -> u32 {
        debug_assert!(matches!(Self::of(cookie), FlowTlp::Request(_)));
        cookie & Self::INDEX
    }

    /// The owner of this TLP of a flow whose requester is node `src`.
    fn owner(self, src: u32) -> Owner {
        Owner {
            node: src,
            cookie: self.cookie(),
        }
    }
}

impl Simulator<'_> {
    /// A TLP of a flow left its requester `rq` (see `node::Node::tlp_left`): a write makes
    /// room for the next; a read request's latency (and its transfer's, for the transfer's
    /// first request) counts from now.
    #[inline(always)]
    pub(in crate::sim) fn flow_left(&mut self, rq: &mut Requester<'_>, id: u32, start: SimTime) {
        let t = &self.tlps[id as usize];
        match (t.kind, FlowTlp::of(t.owner.cookie)) {
            (TlpKind::MWr, FlowTlp::Data(f)) => {
                let flow = &mut self.work.flows[f as usize];
                flow.write_queued -= 1;
                if flow.engines.is_some() {
                    self.engine_write_left(rq, f);
                } else {
                    self.fill_writes(rq, f);
                }
            }
            (TlpKind::MWr, FlowTlp::Status(f)) => {
                self.work.flows[f as usize].write_queued -= 1;
                self.engine_write_left(rq, f);
            }
            (TlpKind::MRd, FlowTlp::Request(r)) => {
                let req = &mut self.work.reqs[r as usize];
                if !req.from_start {
                    req.issued = start;
                }
                if req.first {
                    self.work.flows[req.flow as usize].transfer_issued[req.transfer as usize] =
                        start;
                }
            }
            _ => {}
        }
    }

    /// A posted write of a flow took effect at its target, which received it on channel `c`
    /// (see `node::Node::tlp_written`): data counts for its flow; a doorbell makes its
    /// bridge raise an MSI.
    #[inline(always)]
    pub(in crate::sim) fn flow_tlp_written(&mut self, t: &Tlp, c: u32) {
        match FlowTlp::of(t.owner.cookie) {
            FlowTlp::Data(f) => self.write_arrived(f, t),
            FlowTlp::Doorbell(f) => {
                // The bridge (whose handler took the write, so it hears of it as that
                // handler returns) raises the MSI.
                let d = node::context::Doorbell {
                    port: self.ends.rx_port[c as usize],
                    flow: f,
                    target: self.work.flows[f as usize].target,
                    order: t.order,
                };
                AnyNode::call(self, t.dst as usize, node::context::Call::Doorbell(d));
            }
            FlowTlp::Status(f) => {
                // In order behind the transfer's data; not the flow's data.
                let flow = &mut self.work.flows[f as usize];
                flow.done += 1;
                if t.order != flow.expected_order {
                    self.audit.order_violations += 1;
                }
                flow.expected_order = t.order + 1;
            }
            FlowTlp::Request(_) => {}
        }
    }

    /// The flow a TLP of a flow belongs to (None for its doorbells), for the trace.
    pub(in crate::sim) fn flow_tlp_workload(&self, t: &Tlp) -> Option<u32> {
        match FlowTlp::of(t.owner.cookie) {
            FlowTlp::Data(f) | FlowTlp::Status(f) => Some(f),
            FlowTlp::Doorbell(_) => None,
            FlowTlp::Request(r) => Some(self.work.reqs[r as usize].flow),
        }
    }

    /// Writes the doorbell of bridge `ntb` (above flow `f`'s target), behind the data TLP
    /// of order `order` (posted writes keep their order, so the doorbell follows the data).
    pub(in crate::sim) fn ring_doorbell(&mut self, f: u32, ntb: u32, order: u64) {
        let src = self.work.flows[f as usize].source;
        let out = self.route.next(src as usize, ntb as usize);
        let owner = FlowTlp::Doorbell(f).owner(src);
        let id = self.new_tlp(Tlp {
            order,
            ..Tlp::at_source(TlpKind::MWr, src, ntb, 4, owner)
        });
        self.push(out, id);
    }

    /// The MSI a bridge raised for flow `f`'s doorbell (which signalled its writes up to
    /// order `order`) reached the flow's target: every write it signals must be there.
    pub(in crate::sim) fn doorbell_interrupt(&mut self, f: u32, order: u64) {
        let flow = &mut self.work.flows[f as usize];
        if flow.expected_order <= order {
            self.audit.order_violations += 1;
        }
        if self.window.measuring {
            flow.interrupts += 1;
        }
    }

    /// A storage-write transfer of flow `f` (whose requester is `rq`) left the media: its
    /// slot takes the next I/O.
    pub(in crate::sim) fn transfer_done(&mut self, rq: &mut Requester<'_>, f: u32, slot: u32) {
        self.work.flows[f as usize].close_transfer(slot as usize);
        self.issue_reads(rq, f);
    }

    /// Keeps flow `f`'s write stream queued ahead of its link: MWr TLPs of at most MPS (or
    /// the workload's TLP payload) of the current transfer, never across 4 KiB (a storage
    /// read's data once its media has read it), and a doorbell after every `doorbell_every`
    /// transfers; each once its `rate` allows (`pace`). `rq` is its requester.
    pub(in crate::sim) fn fill_writes(&mut self, rq: &mut Requester<'_>, f: u32) {
        let mps = self.work.flows[f as usize].tlp_payload;
        let now = self.now();
        let mut started_io = false;
        while self.work.flows[f as usize].write_queued < WRITE_QUEUE_DEPTH {
            let flow = &mut self.work.flows[f as usize];
            if flow.pace.get(WRITES).is_some_and(|p| !p.ready(now)) {
                self.pace_hold(f, WRITES);
                break;
            }
            if flow.write_left == 0 {
                if flow.next_io_is_read() == Some(false) {
                    break; // the mix's next I/O is a storage write
                }
                flow.write_left = flow.write_transfer();
                flow.write_addr = flow.next_address(&mut self.rng, flow.write_left);
                flow.ios += 1;
                started_io = true;
                let random = flow.storage.is_some_and(|m| m.random);
                if let Some(d) = rq.drives(&mut self.nodes) {
                    d.media.begin_io(now, true, random);
                }
            }
            let addr = flow.write_addr;
            let size = tlp::request_piece(addr, flow.write_left, mps as u32);
            if let Some(p) = flow.pace.get_mut(WRITES) {
                p.take(size as u64);
            }
            flow.write_left -= size as u64;
            flow.write_addr += size as u64;
            flow.write_queued += 1;
            let order = flow.next_order;
            flow.next_order += 1;
            let (src, dst, out) = (flow.source, flow.target, flow.out);
            let owner = FlowTlp::Data(f).owner(src);
            let id = self.new_tlp(
                Tlp {
                    order,
                    ..Tlp::at_source(TlpKind::MWr, src, dst, size, owner)
                }
                .data_at(addr),
            );
            // A storage read: the data exists once the media has read it.
            let ready = match rq.drives(&mut self.nodes) {
                Some(d) => d.media.pass(now, size, true),
                None => now,
            };
            self.push_at(ready, out, id);
            let flow = &mut self.work.flows[f as usize];
            if let (0, Some(d)) = (flow.write_left, flow.doorbell) {
                flow.transfers_queued += 1;
                if flow.transfers_queued % d.every as u64 == 0 {
                    self.ring_doorbell(f, d.ntb as u32, order);
                }
            }
        }
        if started_io && self.work.flows[f as usize].reads {
            self.issue_reads(rq, f);
        }
    }

    /// Issues flow `f`'s read requests (MRd TLPs of at most MRRS, never across 4 KiB) while
    /// a tag and a transfer slot are free and its `rate` allows (`pace`), noting how long
    /// the flow waits for a tag or slot. `rq` is its requester.
    #[inline]
    pub(in crate::sim) fn issue_reads(&mut self, rq: &mut Requester<'_>, f: u32) {
        // With no tag free and the flow's wait for one already noted, issuing would change
        // nothing (most completions of a tag-bound stream): answered here, inline.
        let no_tag = matches!(rq.tags(&mut self.nodes), Some(0));
        if !(no_tag && self.work.flows[f as usize].window_full.is_open()) {
            self.issue_reads_now(rq, f);
        }
    }

    /// [`Self::issue_reads`] once it may have something to do.
    #[inline(never)]
    fn issue_reads_now(&mut self, rq: &mut Requester<'_>, f: u32) {
        if self.work.flows[f as usize].engines.is_some() {
            self.engine_tag_free(rq, f);
            return;
        }
        let mrrs = self.sys.pcie.mrrs;
        let now = self.q.now();
        loop {
            let mut first = false;
            let flow = &mut self.work.flows[f as usize];
            let Some(port) = rq.port(&mut self.nodes) else {
                return;
            };
            let free_tags = port.tags;
            if *free_tags == 0 {
                flow.window_full.open(now);
                return;
            }
            let paced = flow.pace.get(READS).is_some_and(|p| !p.ready(now));
            if paced && (flow.current.is_some() || flow.active < flow.outstanding) {
                // A tag and a slot are free: the rate, not the window, holds it.
                flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
                self.pace_hold(f, READS);
                return;
            }
            if flow.current.is_none() {
                if flow.active >= flow.outstanding {
                    flow.window_full.open(now);
                } else {
                    // A slot and a tag are free (even if the mix's next I/O is no read).
                    flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
                }
                if flow.active >= flow.outstanding || flow.next_io_is_read() == Some(true) {
                    if flow.writes && flow.storage.is_some() {
                        self.fill_writes(rq, f);
                    }
                    return;
                }
                let size = flow.read_transfer();
                let addr = flow.next_address(&mut self.rng, size);
                flow.ios += 1;
                if let Some(d) = port.drives {
                    d.media
                        .begin_io(now, false, flow.storage.is_some_and(|m| m.random));
                }
                flow.open_read_transfer(size, addr);
                first = true;
            }
            flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
            let (slot, left, addr) = flow.current.expect("set above");
            let len = tlp::request_piece(addr, left, mrrs) as u64;
            if let Some(p) = flow.pace.get_mut(READS) {
                p.take(len);
            }
            flow.current = (left > len).then_some((slot, left - len, addr + len));
            *free_tags -= 1;
            let (src, dst, out) = (flow.source, flow.target, flow.out);
            let req = Req::new(f, slot, len as u32, first, now);
            let r = self.work.reqs.place(req);
            let owner = FlowTlp::Request(r).owner(src);
            let id = self.new_tlp(Tlp {
                addr: addr as u32,
                ..Tlp::at_source(TlpKind::MRd, src, dst, len as u32, owner)
            });
            self.push(out, id);
        }
    }

    /// Flow `f`'s posted write `t` reached its target: order check, bytes and latency, and
    /// its transfer's latency if it ends the transfer (a flow's writes arrive in order, so
    /// the bytes taken tell where its transfers end).
    #[inline]
    fn write_arrived(&mut self, f: u32, t: &Tlp) {
        let now = self.now();
        let measuring = self.window.measuring;
        let warmup = self.sys.warmup;
        let flow = &mut self.work.flows[f as usize];
        if t.order != flow.expected_order {
            self.audit.order_violations += 1;
        }
        flow.expected_order = t.order + 1;
        flow.done += 1;
        if measuring {
            flow.bytes += t.payload as u64;
            // A write-read flow's latency is its pairs' (from the write's start to the
            // read's data).
            if !flow.write_read {
                flow.latency.record((now - t.born).as_ns_f64());
            }
        }
        if flow.engines.is_some() {
            return; // its engines time its transfers (`sim::transfer`)
        }
        if flow.write_taken == 0 {
            flow.write_issued = t.born;
        }
        flow.write_taken += t.payload as u64;
        if flow.write_taken >= flow.write_transfer() {
            flow.write_taken = 0;
            if flow.write_issued >= warmup {
                let ns = (now - flow.write_issued).as_ns_f64();
                flow.transfer_latency.record(ns);
            }
        }
    }

    /// A DMA requester `n` (a DMA engine or storage HBA, its state `rq`) takes TLP `id`,
    /// accepted on channel `c` with its first byte in at `head`: a write into it takes effect
    /// (its writer hears of it), read data completes its request.
    pub(in crate::sim) fn requester_received(
        &mut self,
        rq: &mut Requester<'_>,
        n: usize,
        c: u32,
        id: u32,
        t: Tlp,
        head: SimTime,
    ) {
        self.rx_release(c, t.class(), 1, t.data_credits());
        match t.kind {
            TlpKind::MWr => AnyNode::tlp_written(self, &t, c),
            TlpKind::CplD => {
                self.completion_by(rq, n, id, t, head);
                return;
            }
            _ => {}
        }
        self.deliver(id);
    }

    /// A completion for read request `slot` that is not a flow's data reached requester
    /// `rq`: one that came after the request timed out (discarded), or one of a transfer's
    /// descriptor.
    #[cold]
    fn unusual_completion(&mut self, rq: &mut Requester<'_>, slot: u32, id: u32, t: Tlp) {
        if self.work.reqs[slot as usize].timed_out {
            self.late_completion(slot, id, t.payload);
        } else {
            self.descriptor_arrived(rq, slot, id, t);
        }
    }

    /// A completion of a transfer's descriptor read reached DMA endpoint `rq`: not the
    /// flow's data; the whole descriptor lets the transfer go on.
    fn descriptor_arrived(&mut self, rq: &mut Requester<'_>, slot: u32, id: u32, t: Tlp) {
        let req = &mut self.work.reqs[slot as usize];
        self.work.flows[req.flow as usize].done += 1;
        let req = &mut self.work.reqs[slot as usize];
        if t.order != req.next_offset {
            self.audit.order_violations += 1;
        }
        req.next_offset += t.payload as u64;
        req.remaining -= t.payload.min(req.remaining);
        let r = *req;
        self.deliver(id);
        if r.remaining == 0 {
            self.work.reqs.release(slot);
            if let Some(free_tags) = rq.tags(&mut self.nodes) {
                *free_tags += 1;
            }
            self.engine_read_answered(rq, r.transfer, r.length);
            self.engine_tag_free(rq, r.flow);
        }
    }

    /// Read data for a flow reached its requester `n` (an endpoint, or a root complex reading
    /// a bridge's scratchpads), whose state is `rq`: counts it, records the latency at the
    /// first completion, and frees the tag and transfer when the request is complete.
    fn completion_by(&mut self, rq: &mut Requester<'_>, n: usize, id: u32, t: Tlp, head: SimTime) {
        let now = self.now();
        let slot = FlowTlp::request_slot(t.owner.cookie);
        let r = self.work.reqs[slot as usize];
        if r.descriptor | r.timed_out {
            return self.unusual_completion(rq, slot, id, t);
        }
        let f = r.flow as usize;
        debug_assert_eq!(
            self.work.flows[f].source as usize, n,
            "a flow's own requester"
        );
        self.work.flows[f].done += 1;
        if t.order != r.next_offset {
            self.audit.order_violations += 1;
        }
        let measuring = self.window.measuring;
        // A storage write: the media takes the data as it arrives; its bytes count
        // when the media is done with them.
        let media_done = rq
            .drives(&mut self.nodes)
            .map(|d| d.media.pass(now, t.payload, false));
        let flow = &mut self.work.flows[f];
        if let Some(done) = media_done {
            if done >= self.sys.warmup && done < self.sys.duration {
                flow.media_bytes += t.payload as u64;
            }
        } else if measuring {
            flow.bytes += t.payload as u64;
        }
        if measuring && !r.answered {
            flow.latency.record((head - r.issued).as_ns_f64());
        }
        let req = &mut self.work.reqs[slot as usize];
        req.answered = true;
        req.next_offset += t.payload as u64;
        req.remaining -= t.payload.min(req.remaining);
        if req.remaining == 0 {
            self.work.reqs.release(slot);
            if let Some(free_tags) = rq.tags(&mut self.nodes) {
                *free_tags += 1;
            }
            if self.work.flows[f].engines.is_some() {
                self.engine_read_answered(rq, r.transfer, r.length);
                self.deliver(id);
                self.engine_tag_free(rq, f as u32);
                return;
            }
            let slot = r.transfer as usize;
            let flow = &mut self.work.flows[f];
            if flow.read_answered(slot, r.length, self.sys.warmup, now) {
                let done = media_done.unwrap_or(now);
                if done > now {
                    // Its slot frees when the media is done (`NodeEv::MediaDone`).
                    if let Some(d) = rq.drives(&mut self.nodes) {
                        let i = d.finishing(f as u32, slot as u32);
                        let ev = Ev::Node {
                            node: n as u32,
                            ev: NodeEv::MediaDone(i),
                        };
                        self.q.schedule(done, ev);
                    }
                } else {
                    self.work.flows[f].close_transfer(slot);
                }
            }
        }
        self.deliver(id);
        self.issue_reads(rq, f as u32);
    }
}
