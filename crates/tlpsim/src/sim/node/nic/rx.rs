//! A NIC's receive side: frames arrive from the wire into the port's FIFO, are written to
//! host memory with their descriptors, and raise an MSI.

use super::{NicEndpoint, NicTlp, DESCRIPTOR_BYTES};
use crate::engine::SimTime;
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::node::{Context, NodeEv};

impl NicEndpoint {
    /// The next frame reaches port `p`: into its FIFO if it fits (else dropped), the
    /// backlog sampled, the following frame scheduled.
    pub(super) fn frame_arrives<C: Context>(&mut self, cx: &mut C, p: u32) {
        let now = cx.now();
        let (fifo, mid) = (self.spec.rx_fifo, self.mid);
        let port = &mut self.ports[p as usize];
        port.arrivals += 1;
        let next = port.first.ticks() as f64 + port.arrivals as f64 * port.interval_ticks;
        if port.fifo_bytes + port.frame > fifo {
            port.dropped += 1;
        } else {
            port.received += 1;
            port.fifo_frames += 1;
            port.fifo_bytes += port.frame;
        }
        if self.measuring {
            let half = usize::from(now >= mid);
            let backlog = port.backlog() as f64;
            let w = &mut self.windows[p as usize];
            w.sums[half] += backlog;
            w.samples[half] += 1;
        }
        cx.schedule(SimTime::from_ticks(next.round() as u64), NodeEv::Frame(p));
        self.rx_dma(cx, p);
    }

    /// Starts writing the oldest frame of port `p`'s FIFO to host memory if a descriptor is
    /// free, then its descriptor back.
    pub(super) fn rx_dma<C: Context>(&mut self, cx: &mut C, p: u32) {
        let mps = cx.sys().pcie.mps;
        let port = &mut self.ports[p as usize];
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
            self.send(cx, TlpKind::MWr, piece, data);
        }
        self.send(cx, TlpKind::MWr, DESCRIPTOR_BYTES, NicTlp::RxWriteBack(p));
        self.unsignalled += 1;
        self.maybe_interrupt(cx);
    }

    /// The last TLP of the frame at the head of port `p`'s FIFO left: its space frees and
    /// the next frame may go.
    pub(super) fn frame_written<C: Context>(&mut self, cx: &mut C, p: u32) {
        let port = &mut self.ports[p as usize];
        port.fifo_frames -= 1;
        port.fifo_bytes -= port.frame;
        port.dma_active = false;
        self.rx_dma(cx, p);
    }

    /// Sends an MSI if interrupts are enabled, something was written back since the last
    /// one, and the moderation interval allows; otherwise arms the moderation timer.
    pub(super) fn maybe_interrupt<C: Context>(&mut self, cx: &mut C) {
        let now = cx.now();
        if !self.int_enabled || self.unsignalled == 0 {
            return;
        }
        let due = (self.last_int).map_or(now, |t| (t + self.spec.interrupt_interval).max(now));
        if due > now {
            if !self.int_timer {
                self.int_timer = true;
                cx.schedule(due, NodeEv::Interrupt);
            }
            return;
        }
        self.int_enabled = false;
        self.unsignalled = 0;
        self.last_int = Some(now);
        self.send(cx, TlpKind::MWr, 4, NicTlp::Msi);
    }

    /// Its MSI reached host memory: it queues on its core, unless it waits there already.
    pub(super) fn msi_written<C: Context>(&mut self, cx: &mut C) {
        if !self.queued_on_core {
            self.queued_on_core = true;
            cx.cpu_interrupt(self.root as usize, self.core, cx.node() as u32);
            self.run_nested(cx);
        }
    }
}
