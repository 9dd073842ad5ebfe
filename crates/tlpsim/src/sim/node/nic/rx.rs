//! A NIC's receive side: frames arrive from the wire into the port's FIFO, are written to
//! host memory with their descriptors, and raise an MSI.

use super::{nic_ev, NicTlp, DESCRIPTOR_BYTES};
use crate::engine::SimTime;
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::node::NodeEv;
use crate::sim::Simulator;

impl Simulator<'_> {
    /// The next frame reaches port `p` of NIC `n`: into its FIFO if it fits (else dropped),
    /// the backlog sampled, the following frame scheduled.
    pub(super) fn frame_arrives(&mut self, n: usize, p: u32) {
        let now = self.now();
        let measuring = self.window.measuring;
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let (fifo, mid) = (nic.spec.rx_fifo, nic.mid);
        let port = &mut nic.ports[p as usize];
        port.arrivals += 1;
        let next = port.first.ticks() as f64 + port.arrivals as f64 * port.interval_ticks;
        if port.fifo_bytes + port.frame > fifo {
            port.dropped += 1;
        } else {
            port.received += 1;
            port.fifo_frames += 1;
            port.fifo_bytes += port.frame;
        }
        if measuring {
            let half = usize::from(now >= mid);
            let backlog = port.backlog() as f64;
            let w = &mut nic.windows[p as usize];
            w.sums[half] += backlog;
            w.samples[half] += 1;
        }
        let at = SimTime::from_ticks(next.round() as u64);
        self.q.schedule(at, nic_ev(n, NodeEv::Frame(p)));
        self.rx_dma(n, p);
    }

    /// Starts writing the oldest frame of port `p`'s FIFO to host memory if a descriptor is
    /// free, then its descriptor back.
    pub(super) fn rx_dma(&mut self, n: usize, p: u32) {
        let mps = self.sys.pcie.mps;
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let root = nic.root;
        let port = &mut nic.ports[p as usize];
        if port.dma_active || port.fifo_frames == 0 || port.rx_desc == 0 {
            return;
        }
        port.dma_active = true;
        port.rx_desc -= 1;
        let frame = port.frame;
        let pieces: Vec<u32> = tlp::split(frame as u64, mps).collect();
        let last = pieces.len() - 1;
        for (i, piece) in pieces.into_iter().enumerate() {
            let data = NicTlp::RxData {
                port: p,
                last: i == last,
            };
            self.nic_send(n, TlpKind::MWr, root, piece, data);
        }
        let wb = NicTlp::RxWriteBack(p);
        self.nic_send(n, TlpKind::MWr, root, DESCRIPTOR_BYTES, wb);
        if let Some(nic) = self.nic_mut(n) {
            nic.unsignalled += 1;
        }
        self.maybe_interrupt(n);
    }

    /// The last TLP of the frame at the head of port `p`'s FIFO left NIC `n`: its space
    /// frees and the next frame may go.
    pub(super) fn frame_written(&mut self, n: usize, p: u32) {
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        let port = &mut nic.ports[p as usize];
        port.fifo_frames -= 1;
        port.fifo_bytes -= port.frame;
        port.dma_active = false;
        self.rx_dma(n, p);
    }

    /// NIC `n` sends an MSI if interrupts are enabled, something was written back since the
    /// last one, and the moderation interval allows; otherwise arms the moderation timer.
    pub(super) fn maybe_interrupt(&mut self, n: usize) {
        let now = self.now();
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        if !nic.int_enabled || nic.unsignalled == 0 {
            return;
        }
        let due = nic
            .last_int
            .map_or(now, |t| (t + nic.spec.interrupt_interval).max(now));
        if due > now {
            if !nic.int_timer {
                nic.int_timer = true;
                self.q.schedule(due, nic_ev(n, NodeEv::Interrupt));
            }
            return;
        }
        nic.int_enabled = false;
        nic.unsignalled = 0;
        nic.last_int = Some(now);
        let root = nic.root;
        self.nic_send(n, TlpKind::MWr, root, 4, NicTlp::Msi);
    }

    /// NIC `n`'s MSI reached host memory: the NIC queues on its core, unless it waits there
    /// already.
    pub(super) fn msi_written(&mut self, n: usize) {
        let Some(nic) = self.nic_mut(n) else {
            return;
        };
        if !nic.queued_on_core {
            nic.queued_on_core = true;
            let (root, core) = (nic.root as usize, nic.core);
            self.cpu_interrupt(root, core, n as u32);
        }
    }
}
