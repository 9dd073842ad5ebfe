//! DMA sources: the write and read streams of DMA and storage workloads (transfers,
//! outstanding requests, tags, MRRS splitting), and their media.

use super::*;

impl Simulator<'_> {
    /// A storage-write transfer left the media: its slot takes the next I/O.
    pub(super) fn transfer_done(&mut self, f: u32, slot: u32) {
        let flow = &mut self.flows[f as usize];
        flow.active -= 1;
        flow.free_transfers.push(slot);
        self.issue_reads(f);
    }

    /// Keeps flow `f`'s write stream queued ahead of its link: MPS-sized MWr TLPs of the
    /// current transfer (a storage read's data once its media has read it), and a doorbell
    /// after every `doorbell_every` transfers.
    pub(super) fn fill_writes(&mut self, f: u32) {
        let mps = self.flows[f as usize].tlp_payload;
        let now = self.now();
        let mut started_io = false;
        while self.flows[f as usize].write_queued < WRITE_QUEUE_DEPTH {
            let flow = &mut self.flows[f as usize];
            if flow.write_left == 0 {
                if flow.next_io_is_read() == Some(false) {
                    break; // the mix's next I/O is a storage write
                }
                flow.write_left = flow.write_transfer();
                flow.ios += 1;
                started_io = true;
                let random = flow.storage.is_some_and(|m| m.random);
                if let NodeState::Endpoint { media: Some(m), .. } =
                    &mut self.nodes[flow.source as usize]
                {
                    m.begin_io(now, true, random);
                }
            }
            let size = flow.write_left.min(mps) as u32;
            flow.write_left -= size as u64;
            flow.write_queued += 1;
            let order = flow.next_order;
            flow.next_order += 1;
            let (src, dst, out) = (flow.source, flow.target, flow.out);
            let id = self.new_tlp(Tlp {
                order,
                ..Tlp::at_source(TlpKind::MWr, src, dst, size, f, Role::Flow)
            });
            // A storage read: the data exists once the media has read it.
            let ready = match &mut self.nodes[src as usize] {
                NodeState::Endpoint { media: Some(m), .. } => m.pass(now, size, true),
                _ => now,
            };
            if ready > now {
                self.q.schedule(ready, Ev::Enqueue { ch: out, tlp: id });
            } else {
                self.push(out, id);
            }
            let flow = &mut self.flows[f as usize];
            if let (0, Some(d)) = (flow.write_left, flow.doorbell) {
                flow.transfers_queued += 1;
                if flow.transfers_queued % d.every as u64 == 0 {
                    self.ring_doorbell(f, d.ntb as u32, order);
                }
            }
        }
        if started_io && self.flows[f as usize].reads {
            self.issue_reads(f);
        }
    }

    /// Issues flow `f`'s read requests (MRRS-sized MRd TLPs) while a tag and a transfer slot
    /// are free, noting how long the flow waits for them.
    #[inline]
    pub(super) fn issue_reads(&mut self, f: u32) {
        // With no tag free and the flow's wait for one already noted, issuing would change
        // nothing (most completions of a tag-bound stream): answered here, inline.
        let flow = &self.flows[f as usize];
        let no_tag = matches!(
            self.nodes[flow.source as usize],
            NodeState::Endpoint { free_tags: 0, .. } | NodeState::Root { free_tags: 0, .. }
        );
        if !(no_tag && flow.window_full.is_open()) {
            self.issue_reads_now(f);
        }
    }

    /// [`Self::issue_reads`] once it may have something to do.
    #[inline(never)]
    fn issue_reads_now(&mut self, f: u32) {
        let mrrs = self.sys.pcie.mrrs as u64;
        let now = self.q.now();
        loop {
            let flow = &mut self.flows[f as usize];
            let (free_tags, media) = match &mut self.nodes[flow.source as usize] {
                NodeState::Endpoint { free_tags, media } => (free_tags, media.as_mut()),
                NodeState::Root { free_tags, .. } => (free_tags, None),
                NodeState::Switch { .. } => return,
            };
            if *free_tags == 0 {
                flow.window_full.open(now);
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
                        self.fill_writes(f);
                    }
                    return;
                }
                let size = flow.read_transfer();
                flow.ios += 1;
                if let Some(m) = media {
                    m.begin_io(now, false, flow.storage.is_some_and(|m| m.random));
                }
                let slot = match flow.free_transfers.pop() {
                    Some(s) => s,
                    None => {
                        flow.transfer_left.push(0);
                        (flow.transfer_left.len() - 1) as u32
                    }
                };
                flow.transfer_left[slot as usize] = size;
                flow.active += 1;
                flow.current = Some((slot, size));
            }
            flow.window_ticks += flow.window_full.close(now).unwrap_or(0);
            let (slot, left) = flow.current.expect("set above");
            let len = left.min(mrrs);
            flow.current = (left > len).then_some((slot, left - len));
            *free_tags -= 1;
            let (src, dst, out) = (flow.source, flow.target, flow.out);
            let req = Req {
                flow: f,
                transfer: slot,
                length: len as u32,
                remaining: len as u32,
                next_offset: 0,
                issued: SimTime::ZERO,
                answered: false,
            };
            let r = match self.free_reqs.pop() {
                Some(i) => {
                    self.reqs[i as usize] = req;
                    i
                }
                None => {
                    self.reqs.push(req);
                    (self.reqs.len() - 1) as u32
                }
            };
            let id = self.new_tlp(Tlp {
                req: r,
                ..Tlp::at_source(TlpKind::MRd, src, dst, len as u32, f, Role::Flow)
            });
            self.push(out, id);
        }
    }
}
