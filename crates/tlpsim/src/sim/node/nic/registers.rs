//! A NIC's registers: the engine that absorbs one access at a time, what a register write
//! does (return receive descriptors, ring the transmit doorbell, re-enable interrupts), and
//! the rings the CPU's driver shares with the NIC.

use super::{nic_ev, NicEndpoint};
use crate::pcie::tlp::TlpKind;
use crate::sim::node::{AnyNode, NodeEv};
use crate::sim::{Simulator, Tlp};

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
        doorbell: bool,
        rdt: bool,
        enable: bool,
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

    /// Its core takes the interrupt it was queued for.
    pub(in crate::sim) fn interrupt_taken(&mut self) {
        self.queued_on_core = false;
    }
}

impl Simulator<'_> {
    /// A register write or read `id` reached NIC `n` on channel `c`: the register engine
    /// takes one access at a time; the credit comes back after.
    pub(super) fn register_access(&mut self, n: usize, c: u32, id: u32) {
        let now = self.now();
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let done = now.max(nic.reg_free) + nic.spec.register_time;
        nic.reg_free = done;
        self.tlps[id as usize].ingress = c;
        self.q.schedule(done, nic_ev(n, NodeEv::Register(id)));
    }

    /// NIC `n`'s register engine finished access `id`: a read is answered; a write takes
    /// effect (its writer, which knows what it wrote, hears of it); the credit frees.
    pub(super) fn register_done(&mut self, n: usize, id: u32) {
        let t = self.tlps[id as usize];
        self.rx_release(t.ingress, t.class(), 1, t.data_credits());
        if t.kind == TlpKind::MRd {
            let cpl = self.new_tlp(Tlp::at_source(TlpKind::CplD, n as u32, t.src, 4, t.owner));
            self.deliver(id);
            let up = self.route.next(n, t.src as usize);
            self.push(up, cpl);
            return;
        }
        self.deliver(id);
        AnyNode::tlp_written(self, &t, t.ingress);
    }

    /// Register write `w` took effect at NIC `n`: per port, returned receive descriptors
    /// let the next frame go to memory and announced transmit descriptors are fetched;
    /// then interrupts are enabled if it says so.
    pub(in crate::sim) fn registers_written(&mut self, n: usize, w: RegisterWrite) {
        let Some(ports) = self.nic_mut(n).map(|nic| nic.ports.len()) else {
            return;
        };
        for p in 0..ports {
            if let Some(nic) = self.nic_mut(n) {
                let port = &mut nic.ports[p];
                port.rx_desc += w.rdt[p];
                port.tx_doorbelled += w.tdt[p];
            }
            self.rx_dma(n, p as u32);
            self.tx_fetch(n, p as u32);
        }
        if w.enable {
            if let Some(nic) = self.nic_mut(n) {
                nic.int_enabled = true;
            }
            self.maybe_interrupt(n);
        }
    }
}
