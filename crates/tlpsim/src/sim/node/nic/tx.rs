//! A NIC's transmit side: on the doorbell it reads the transmit descriptors, then each
//! frame's data (MRd with its tags), sends the frame on the Ethernet wire and writes its
//! descriptor back.

use super::{nic_ev, NicTlp, DESCRIPTOR_BYTES};
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::node::NodeEv;
use crate::sim::{Simulator, Tlp};

/// Descriptors a NIC fetches with one read.
const DESCRIPTOR_FETCH: u32 = 16;

impl Simulator<'_> {
    /// Completion `id` (a copy in `t`) of one of NIC `n`'s reads arrived on channel `c`:
    /// descriptors fetched, or a frame's data, which goes on the wire once all of it is in.
    pub(super) fn nic_read_data(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let mrrs = self.sys.pcie.mrrs;
        self.rx_release(c, t.class(), 1, t.data_credits());
        let Some(nic) = self.nic_mut(n) else {
            self.deliver(id);
            return;
        };
        match NicTlp::of(t.owner.cookie) {
            NicTlp::TxDesc(p) => {
                let port = &mut nic.ports[p as usize];
                port.tx_slots[0] -= t.payload.min(port.tx_slots[0]);
                if port.tx_slots[0] == 0 {
                    port.tx_fetching = false;
                    port.tx_to_read += port.tx_fetch_n;
                    nic.free_tags += 1;
                    self.deliver(id);
                    self.tx_fetch(n, p);
                    self.tx_read(n, p);
                    return;
                }
            }
            NicTlp::TxData { port: p, slot } => {
                let slot = slot as usize;
                let port = &mut nic.ports[p as usize];
                port.tx_slots[slot] -= t.payload.min(port.tx_slots[slot]);
                if port.tx_slots[slot] == 0 {
                    port.tx_free.push(slot as u32);
                    let start = now.max(port.wire_free);
                    let done = start + port.wire;
                    port.wire_free = done;
                    nic.free_tags += port.frame.div_ceil(mrrs);
                    self.q.schedule(done, nic_ev(n, NodeEv::TxDone(p)));
                    self.deliver(id);
                    self.tx_read(n, p);
                    return;
                }
            }
            _ => {}
        }
        self.deliver(id);
    }

    /// NIC `n` reads the next transmit descriptors of port `p` the doorbell announced (one
    /// read at a time, if a tag is free).
    pub(super) fn tx_fetch(&mut self, n: usize, p: u32) {
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let port = &nic.ports[p as usize];
        if port.tx_fetching || port.tx_doorbelled == 0 || nic.free_tags < 1 {
            return;
        }
        nic.free_tags -= 1;
        let root = nic.root;
        let port = &mut nic.ports[p as usize];
        let count = port.tx_doorbelled.min(DESCRIPTOR_FETCH);
        port.tx_doorbelled -= count;
        port.tx_fetching = true;
        port.tx_fetch_n = count;
        if port.tx_slots.is_empty() {
            port.tx_slots.push(0);
        }
        // Slot 0 tracks the descriptor read; data reads use slots 1 and up.
        port.tx_slots[0] = count * DESCRIPTOR_BYTES;
        let bytes = count * DESCRIPTOR_BYTES;
        self.nic_send(n, TlpKind::MRd, root, bytes, NicTlp::TxDesc(p));
    }

    /// NIC `n` requests the data of port `p`'s fetched transmit frames while tags last.
    pub(super) fn tx_read(&mut self, n: usize, p: u32) {
        let mrrs = self.sys.pcie.mrrs;
        loop {
            let Some(nic) = self.nic_mut(n) else {
                return;
            };
            let root = nic.root;
            let port = &mut nic.ports[p as usize];
            let frame = port.frame;
            let pieces = frame.div_ceil(mrrs);
            if port.tx_to_read == 0 || nic.free_tags < pieces {
                return;
            }
            nic.free_tags -= pieces;
            let port = &mut nic.ports[p as usize];
            port.tx_to_read -= 1;
            let slot = match port.tx_free.pop() {
                Some(s) => s,
                None => {
                    if port.tx_slots.is_empty() {
                        port.tx_slots.push(0);
                    }
                    port.tx_slots.push(0);
                    (port.tx_slots.len() - 1) as u32
                }
            };
            port.tx_slots[slot as usize] = frame;
            for len in tlp::split(frame as u64, mrrs) {
                self.nic_send(n, TlpKind::MRd, root, len, NicTlp::TxData { port: p, slot });
            }
        }
    }

    /// A frame left port `p` of NIC `n` on the wire: it counts as forwarded (on the port it
    /// came in on); the NIC writes its descriptor back.
    pub(super) fn tx_done(&mut self, n: usize, p: u32) {
        let (now, window_start) = (self.now(), self.sys.warmup);
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let root = nic.root;
        let port = &mut nic.ports[p as usize];
        port.tx_in_ring -= 1;
        // The measurement window starts at the warmup's end.
        let whole_in_window = now >= window_start + port.wire;
        // The frame came in on the other port; count it there (per-direction flow).
        let src = if nic.ports.len() == 2 { p ^ 1 } else { p };
        nic.ports[src as usize].forwarded += 1;
        nic.ports[src as usize].window_forwarded += u64::from(whole_in_window);
        let wb = NicTlp::TxWriteBack(p);
        self.nic_send(n, TlpKind::MWr, root, DESCRIPTOR_BYTES, wb);
    }
}
