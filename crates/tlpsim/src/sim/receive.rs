//! The receive side of the simulator: the data link layer taking TLPs in order (Ack owed,
//! Nak on a bad one), credits freed back to the transmitter, and the transaction layer's
//! consumers: a switch's route to its egress, a root complex's memory, an endpoint.

use super::*;

impl Simulator<'_> {
    /// The receiver of channel `c` frees credits; an UpdateFC follows on the timer.
    pub(super) fn rx_release(&mut self, c: u32, class: FcClass, h: u32, d: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if ch.rx_credits.free(class, h, d) && ch.rx_dll.start_timer() {
            let at = now + ch.rx_dll.ack_interval;
            self.q.schedule(at, Ev::DllTimer(c));
        }
    }

    /// A TLP's last byte reaches channel `c`'s receiver: a nullified copy is dropped, any
    /// other goes through the data link layer and, if accepted and not forwarded by a
    /// switch's own event, to the transaction layer.
    pub(super) fn on_tlp(&mut self, c: u32, a: Arrival) {
        if a.nullified {
            // Dropped by the data link layer without a Nak or a sequence number; gone unless
            // a cut-through switch here sends it on (still nullified).
            if !a.forwarded {
                self.free_tlps.push(a.tlp);
            }
            return;
        }
        if self.dll_receive(c, &a) && !a.forwarded {
            self.tlp_receive(c, a.tlp, a.head);
        }
    }

    /// The data link layer of channel `c`'s receiver takes a TLP whose last byte has
    /// arrived: a corrupted one is Nak'd, a duplicate Ack'd again, the expected one accepted
    /// (Ack owed). Returns whether it was accepted.
    fn dll_receive(&mut self, c: u32, a: &Arrival) -> bool {
        use crate::pcie::dll::receive::Received;
        let &Arrival { seq, bad, tail, .. } = a;
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if bad {
            ch.counters.bad_tlps += 1;
        }
        match ch.rx_dll.receive(seq, bad) {
            Received::Accepted => {
                if ch.rx_dll.start_timer() {
                    let at = (tail + ch.rx_dll.ack_interval).max(now);
                    self.q.schedule(at, Ev::DllTimer(c));
                }
                true
            }
            Received::Nak(s) => {
                self.send_dllp(c, Dllp::Nak(s));
                false
            }
            Received::Duplicate(s) => {
                // A duplicate from a replay: discard, acknowledge again.
                self.send_dllp(c, Dllp::Ack(s));
                false
            }
            Received::Missing => {
                // A TLP is missing before this one.
                self.audit.sequence_violations += 1;
                false
            }
            Received::Dropped => false,
        }
    }

    /// The transaction layer of channel `c`'s receiver takes accepted TLP `id` (first byte
    /// arrived at `head`): into the receive buffer, then on to its egress (a switch) or its
    /// consumer.
    #[inline(always)]
    pub(super) fn tlp_receive(&mut self, c: u32, id: u32, head: SimTime) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        let t = self.tlps[id as usize];
        if !t.live {
            self.audit.duplicates += 1;
            return;
        }
        if !ch.rx_credits.take(t.class(), 1, t.data_credits()) {
            self.audit.credit_violations += 1;
        }
        let n = self.rx_node[c as usize] as usize;
        if t.dst as usize == n && matches!(self.nodes[n], NodeState::Switch { .. }) {
            self.at_ntb(n, c, id, t);
            return;
        }
        match &mut self.nodes[n] {
            NodeState::Switch { ports, table, bus } => {
                let out = self.route[n * self.sys.nodes.len() + t.dst as usize];
                self.tlps[id as usize].ingress = c;
                if let Some(bus) = bus {
                    let (ct, _) = table[self.rx_port[c as usize] as usize * *ports
                        + self.tx_port[out as usize] as usize];
                    let bytes = tlp::tlp_bytes(
                        t.kind,
                        self.sys.pcie.addressing,
                        t.payload,
                        self.sys.pcie.ecrc,
                    );
                    let (start, done) = bus.pass_span(now, bytes);
                    let ready = if ct { start } else { done };
                    if ready > now {
                        self.q.schedule(ready, Ev::Enqueue { ch: out, tlp: id });
                        return;
                    }
                }
                self.push(out, id);
            }
            NodeState::Root { .. } => self.at_root(n, c, id, t, head),
            NodeState::Endpoint { .. } => self.at_endpoint(n, c, id, t, head),
        }
    }

    fn at_root(&mut self, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        let now = self.now();
        let NodeState::Root {
            read_latency,
            memory,
            write_sink,
            bridge,
            cpl_size,
            ..
        } = &mut self.nodes[n]
        else {
            return;
        };
        match t.kind {
            TlpKind::MWr => {
                let mut done = now;
                if let Some(b) = bridge {
                    done = self.bridges[*b].0.pass(done, t.payload);
                }
                if let Some(w) = write_sink {
                    done = w.pass(done, t.payload);
                }
                if let Some(m) = memory {
                    done = m.pass(done, t.payload);
                }
                // The write counts, and its credits free, once the memory has it: a root
                // advertising infinite posted credits still takes data at its sink's and
                // memory's rates.
                if done > now {
                    self.q.schedule(done, Ev::Written { ch: c, tlp: id });
                } else {
                    self.written(c, id);
                }
            }
            TlpKind::MRd => {
                let bridge_lat = bridge.map_or(SimTime::ZERO, |b| self.bridges[b].1);
                let ready = now + read_latency.sample(&mut self.rng) + bridge_lat + bridge_lat;
                let size = *cpl_size;
                let out = self.route[n * self.sys.nodes.len() + t.src as usize];
                let mut offset = 0u64;
                // (time, last TLP) of the chain the latest Enqueue event will queue.
                let mut chain: Option<(SimTime, u32)> = None;
                for piece in tlp::split(t.length as u64, size) {
                    let NodeState::Root { memory, bridge, .. } = &mut self.nodes[n] else {
                        return;
                    };
                    let mut at = ready;
                    if let Some(m) = memory {
                        at = m.pass(at, piece);
                    }
                    if let Some(b) = bridge {
                        at = self.bridges[*b].0.pass(at, piece);
                    }
                    let cpl = self.new_tlp(Tlp {
                        req: t.req,
                        order: offset,
                        ..Tlp::at_source(TlpKind::CplD, n as u32, t.src, piece, t.flow, t.role)
                    });
                    offset += piece as u64;
                    match chain {
                        // Ready with the one before: queued right after it, by its event.
                        Some((t0, last)) if t0 == at => self.tlps[last as usize].next = cpl,
                        _ => self.q.schedule(at, Ev::Enqueue { ch: out, tlp: cpl }),
                    }
                    chain = Some((at, cpl));
                }
                self.rx_release(c, FcClass::NonPosted, 1, 0);
                self.deliver(id);
            }
            _ => {
                self.rx_release(c, t.class(), 1, t.data_credits());
                if t.kind == TlpKind::CplD && t.role == Role::Flow {
                    // The CPU's own read (of a bridge's scratchpads) completes.
                    self.completion_arrived(n, id, t, head);
                    return;
                }
                self.deliver(id);
                if t.role != Role::Flow {
                    self.nic_at_root(&t);
                }
            }
        }
    }

    /// Posted write `id`, received on channel `c`, is in the root complex's memory: its
    /// credits free and it takes effect (flow bytes, an NTB's interrupt, a NIC's DMA).
    pub(super) fn written(&mut self, c: u32, id: u32) {
        let t = self.tlps[id as usize];
        let now = self.now();
        self.rx_release(c, FcClass::Posted, 1, t.data_credits());
        match t.role {
            Role::Flow => self.write_arrived(t, now),
            Role::NtbMsi => self.ntb_interrupt(t),
            _ => self.nic_at_root(&t),
        }
        self.deliver(id);
    }

    fn at_endpoint(&mut self, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        if let Some(k) = self.nics.at(n) {
            self.at_nic(k, c, id, t);
            return;
        }
        let now = self.now();
        self.rx_release(c, t.class(), 1, t.data_credits());
        match t.kind {
            TlpKind::MWr => self.write_arrived(t, now),
            TlpKind::CplD => {
                self.completion_arrived(n, id, t, head);
                return;
            }
            _ => {}
        }
        self.deliver(id);
    }

    /// Read data for a flow reached its requester `n` (an endpoint, or a root complex reading
    /// a bridge's scratchpads): counts it, records the latency at the first completion, and
    /// frees the tag and transfer when the request is complete.
    fn completion_arrived(&mut self, n: usize, id: u32, t: Tlp, head: SimTime) {
        let now = self.now();
        let r = self.reqs[t.req as usize];
        let f = r.flow as usize;
        if t.order != r.next_offset {
            self.audit.order_violations += 1;
        }
        let measuring = self.measuring;
        // A storage write: the media takes the data as it arrives; its bytes count
        // when the media is done with them.
        let media_done = match &mut self.nodes[n] {
            NodeState::Endpoint { media: Some(m), .. } => Some(m.pass(now, t.payload, false)),
            _ => None,
        };
        let flow = &mut self.flows[f];
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
        let req = &mut self.reqs[t.req as usize];
        req.answered = true;
        req.next_offset += t.payload as u64;
        req.remaining -= t.payload.min(req.remaining);
        if req.remaining == 0 {
            self.free_reqs.push(t.req);
            if let NodeState::Endpoint { free_tags, .. } | NodeState::Root { free_tags, .. } =
                &mut self.nodes[n]
            {
                *free_tags += 1;
            }
            let slot = r.transfer as usize;
            let flow = &mut self.flows[f];
            flow.transfer_left[slot] -= r.length as u64;
            if flow.transfer_left[slot] == 0 {
                let done = media_done.unwrap_or(now);
                if done > now {
                    self.q.schedule(
                        done,
                        Ev::MediaDone {
                            flow: f as u32,
                            slot: slot as u32,
                        },
                    );
                } else {
                    let flow = &mut self.flows[f];
                    flow.active -= 1;
                    flow.free_transfers.push(slot as u32);
                }
            }
        }
        self.deliver(id);
        self.issue_reads(f as u32);
    }
}
