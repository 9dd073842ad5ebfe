//! Non-transparent bridges at run time: writes crossing into another domain's memory, their
//! registers (scratchpads, and the doorbell whose MSI they raise into the domain below).

use super::context::Doorbell;
use super::switch::forward;
use super::{Context, Node, NodeEv};
use crate::engine::SimTime;
use crate::pcie::tlp::TlpKind;
use crate::sim::{Owner, Tlp};

/// A non-transparent bridge at run time: the latency of its own registers (TLPs cross it
/// cut-through unless the egress side is the faster one: its `Crossing`, which the routing
/// keeps).
#[derive(Debug)]
pub(in crate::sim) struct Ntb {
    /// Port-to-port latency, also the time its registers take to answer.
    latency: SimTime,
}

impl Ntb {
    /// A bridge whose registers answer after `latency`.
    pub(in crate::sim) fn new(latency: SimTime) -> Self {
        Ntb { latency }
    }
}

/// The cookie of a bridge's MSI: the flow whose doorbell raised it, and the bridge's port
/// the doorbell came in on (the MSI queues behind the data that came that way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Msi {
    flow: u32,
    port: u32,
}

impl Msi {
    /// The cookie: the port in bit 0 (a bridge has two), the flow above it.
    fn cookie(self) -> u32 {
        debug_assert!(self.port < 2 && self.flow < 1 << 31);
        self.flow << 1 | self.port
    }

    /// The MSI a cookie made by [`Self::cookie`] stands for.
    fn of(cookie: u32) -> Self {
        Msi {
            flow: cookie >> 1,
            port: cookie & 1,
        }
    }
}

impl Node for Ntb {
    #[inline]
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, _head: SimTime) {
        if t.dst as usize == cx.node() {
            self.registers(cx, c, id, t);
        } else {
            forward(cx, None, c, id, t);
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        if let NodeEv::BridgeMsi(id) = ev {
            // Queued at the egress as if it came in with the doorbell.
            let t = cx.tlp(id);
            let input = Msi::of(t.owner.cookie).port as usize;
            let out = cx.toward(t.dst as usize);
            cx.send_from(out, id, input);
        }
    }

    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, _c: u32) {
        // Its MSI reached the domain below.
        cx.flow_interrupt(Msi::of(t.owner.cookie).flow, t.order);
    }

    /// After the bridge's latency it sends an MSI to the flow's target in the domain below,
    /// carrying the order of the last write the doorbell signals.
    fn doorbell<C: Context>(&mut self, cx: &mut C, d: Doorbell) {
        let n = cx.node() as u32;
        let owner = Owner {
            node: n,
            cookie: Msi {
                flow: d.flow,
                port: d.port,
            }
            .cookie(),
        };
        let id = cx.new_tlp(Tlp {
            order: d.order,
            ..Tlp::at_source(TlpKind::MWr, n, d.target, 4, owner)
        });
        let at = cx.now() + self.latency;
        cx.schedule(at, NodeEv::BridgeMsi(id));
    }
}

impl Ntb {
    /// A TLP addressed to the bridge itself, a write or read of its registers: a write takes
    /// effect (its writer knows which register it wrote: a scratchpad, or the doorbell, see
    /// [`Node::doorbell`]); a read completes after the bridge's latency.
    fn registers<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp) {
        let now = cx.now();
        cx.release(c, t.class(), 1, t.data_credits());
        cx.deliver(id);
        match t.kind {
            TlpKind::MWr => cx.written_by(&t, c),
            TlpKind::MRd => {
                let n = cx.node() as u32;
                let out = cx.toward(t.src as usize);
                let cpl = Tlp::at_source(TlpKind::CplD, n, t.src, t.length, t.owner)
                    .data_at(t.addr as u64);
                let reply = cx.new_tlp(cpl);
                cx.send_by_event(now + self.latency, out, reply);
            }
            _ => {}
        }
    }
}
