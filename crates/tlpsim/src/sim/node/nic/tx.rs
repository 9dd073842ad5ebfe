//! A NIC's transmit side: on the doorbell it reads the transmit descriptors, then each
//! frame's data (MRd with its tags), sends the frame on the Ethernet wire and writes its
//! descriptor back.

use super::{NicEndpoint, NicTlp, DESCRIPTOR_BYTES};
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::node::{Context, NodeEv};
use crate::sim::Tlp;

/// Descriptors a NIC fetches with one read.
const DESCRIPTOR_FETCH: u32 = 16;

impl NicEndpoint {
    /// Completion `id` (a copy in `t`) of one of its reads arrived on channel `c`:
    /// descriptors fetched, or a frame's data, which goes on the wire once all of it is in.
    pub(super) fn read_data<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp) {
        let now = cx.now();
        let mrrs = cx.sys().pcie.mrrs;
        cx.release(c, t.class(), 1, t.data_credits());
        match NicTlp::of(t.owner.cookie) {
            NicTlp::TxDesc(p) => {
                let port = &mut self.ports[p as usize];
                port.tx_slots[0] -= t.payload.min(port.tx_slots[0]);
                if port.tx_slots[0] == 0 {
                    port.tx_fetching = false;
                    port.tx_to_read += port.tx_fetch_n;
                    self.free_tags += 1;
                    cx.deliver(id);
                    self.tx_fetch(cx, p);
                    self.tx_read(cx, p);
                    return;
                }
            }
            NicTlp::TxData { port: p, slot } => {
                let slot = slot as usize;
                let port = &mut self.ports[p as usize];
                port.tx_slots[slot] -= t.payload.min(port.tx_slots[slot]);
                if port.tx_slots[slot] == 0 {
                    port.tx_free.push(slot as u32);
                    let start = now.max(port.wire_free);
                    let done = start + port.wire;
                    port.wire_free = done;
                    self.free_tags += port.frame.div_ceil(mrrs);
                    cx.schedule(done, NodeEv::TxDone(p));
                    cx.deliver(id);
                    self.tx_read(cx, p);
                    return;
                }
            }
            NicTlp::RxData { .. }
            | NicTlp::RxWriteBack(_)
            | NicTlp::TxWriteBack(_)
            | NicTlp::Msi => {}
        }
        cx.deliver(id);
    }

    /// Reads the next transmit descriptors of port `p` the doorbell announced (one read at
    /// a time, if a tag is free).
    pub(super) fn tx_fetch<C: Context>(&mut self, cx: &mut C, p: u32) {
        let port = &mut self.ports[p as usize];
        if port.tx_fetching || port.tx_doorbelled == 0 || self.free_tags < 1 {
            return;
        }
        self.free_tags -= 1;
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
        self.send(cx, TlpKind::MRd, bytes, NicTlp::TxDesc(p));
    }

    /// Requests the data of port `p`'s fetched transmit frames while tags last.
    pub(super) fn tx_read<C: Context>(&mut self, cx: &mut C, p: u32) {
        let mrrs = cx.sys().pcie.mrrs;
        loop {
            let port = &mut self.ports[p as usize];
            let frame = port.frame;
            let pieces = frame.div_ceil(mrrs);
            if port.tx_to_read == 0 || self.free_tags < pieces {
                return;
            }
            self.free_tags -= pieces;
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
                self.send(cx, TlpKind::MRd, len, NicTlp::TxData { port: p, slot });
            }
        }
    }

    /// A frame left port `p` on the wire: it counts as forwarded (on the port it came in
    /// on); the NIC writes its descriptor back.
    pub(super) fn tx_done<C: Context>(&mut self, cx: &mut C, p: u32) {
        let (now, window_start) = (cx.now(), cx.sys().warmup);
        let port = &mut self.ports[p as usize];
        port.tx_in_ring -= 1;
        // The measurement window starts at the warmup's end.
        let whole_in_window = now >= window_start + port.wire;
        // The frame came in on the other port; count it there (per-direction flow).
        let src = if self.ports.len() == 2 { p ^ 1 } else { p };
        self.ports[src as usize].forwarded += 1;
        self.ports[src as usize].window_forwarded += u64::from(whole_in_window);
        self.send(cx, TlpKind::MWr, DESCRIPTOR_BYTES, NicTlp::TxWriteBack(p));
    }
}
