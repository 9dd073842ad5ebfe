//! A NIC's registers: the engine that absorbs one access at a time, what a register write
//! does (return receive descriptors, ring the transmit doorbell, re-enable interrupts), and
//! the rings the CPU's driver shares with the NIC.

use super::NicEndpoint;
use crate::pcie::tlp::TlpKind;
use crate::sim::node::{Context, NodeEv};
use crate::sim::Tlp;

/// What one register write of the CPU does when its NIC absorbs it: transmit descriptors
/// announced and receive descriptors returned per port, interrupts re-enabled.
#[derive(Debug, Clone, Copy, Default)]
pub(in crate::sim) struct RegisterWrite {
    tdt: [u32; 2],
    rdt: [u32; 2],
    enable: bool,
}

impl NicEndpoint {
    /// The driver takes the next received frame, looking at the ports from `start` on in
    /// turn: its port and size, and the port to look at first next time.
    pub(in crate::sim) fn take_received(&mut self, start: u32) -> Option<(u32, u32, u32)> {
        let ports = self.ports.len() as u32;
        let p = (0..ports)
            .map(|i| (start + i) % ports)
            .find(|&p| self.ports[p as usize].rx_ready > 0)?;
        let port = &mut self.ports[p as usize];
        port.rx_ready -= 1;
        port.rx_done += 1;
        Some((p, port.frame, (p + 1) % ports))
    }

    /// The driver posts the frame received on port `p` on the other port's transmit ring
    /// (the same port's with one port), or drops it if that ring is full.
    pub(in crate::sim) fn post_frame(&mut self, p: u32) {
        let ring = self.spec.tx_ring;
        let dest = if self.ports.len() == 2 { p ^ 1 } else { p };
        let port = &mut self.ports[dest as usize];
        if port.tx_in_ring < ring {
            port.tx_in_ring += 1;
            port.tx_posted += 1;
        } else {
            // The transmit ring is full: the bridge drops the frame.
            self.ports[p as usize].sw_dropped += 1;
        }
    }

    /// The driver's next register write: the transmit descriptors posted since the last
    /// doorbell (if it rings it, `doorbell`), the receive descriptors it is done with (if it
    /// returns them, `rdt`), interrupts re-enabled if `enable`.
    pub(in crate::sim) fn register_write(
        &mut self,
        (doorbell, rdt, enable): (bool, bool, bool),
    ) -> RegisterWrite {
        let mut w = RegisterWrite {
            enable,
            ..RegisterWrite::default()
        };
        for (p, port) in self.ports.iter_mut().enumerate() {
            if doorbell {
                w.tdt[p] = std::mem::take(&mut port.tx_posted);
            }
            if rdt {
                w.rdt[p] = std::mem::take(&mut port.rx_done);
            }
        }
        w
    }
}

impl NicEndpoint {
    /// A register write or read `id` reached it on channel `c`: the register engine takes
    /// one access at a time; the credit comes back after.
    pub(super) fn register_access<C: Context>(&mut self, cx: &mut C, c: u32, id: u32) {
        let done = cx.now().max(self.reg_free) + self.spec.register_time;
        self.reg_free = done;
        cx.tlp_mut(id).ingress = c;
        cx.schedule(done, NodeEv::Register(id));
    }

    /// Its register engine finished access `id`: a read is answered; a write takes effect
    /// (its writer, which knows what it wrote, hears of it); the credit frees.
    pub(super) fn register_done<C: Context>(&mut self, cx: &mut C, id: u32) {
        let n = cx.node() as u32;
        let t = *cx.tlp(id);
        cx.release(t.ingress, t.class(), 1, t.data_credits());
        if t.kind == TlpKind::MRd {
            let cpl = cx.new_tlp(Tlp::at_source(TlpKind::CplD, n, t.src, 4, t.owner));
            cx.deliver(id);
            let up = cx.toward(t.src as usize);
            cx.send(up, cpl);
            return;
        }
        cx.deliver(id);
        cx.written_by(&t, t.ingress);
        self.run_nested(cx);
    }

    /// Register write `w` took effect: per port, returned receive descriptors let the next
    /// frame go to memory and announced transmit descriptors are fetched; then interrupts
    /// are enabled if it says so.
    pub(super) fn apply_register_write<C: Context>(&mut self, cx: &mut C, w: RegisterWrite) {
        for p in 0..self.ports.len() {
            let port = &mut self.ports[p];
            port.rx_desc += w.rdt[p];
            port.tx_doorbelled += w.tdt[p];
            self.rx_dma(cx, p as u32);
            self.tx_fetch(cx, p as u32);
        }
        if w.enable {
            self.int_enabled = true;
            self.maybe_interrupt(cx);
        }
    }
}
