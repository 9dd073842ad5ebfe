//! Non-transparent bridges at run time: doorbell writes and the MSI they raise, scratchpad
//! reads, and writes crossing into another domain's memory.

use super::switch::Crossing;
use super::{AnyNode, Node};
use crate::engine::SimTime;
use crate::fabric::{Forwarding, System};
use crate::pcie::tlp::TlpKind;
use crate::sim::{Ev, Role, Simulator, Tlp};

/// A non-transparent bridge at run time: a two-port crossing, cut-through unless the egress
/// side is the faster one, and the latency of its own registers.
#[derive(Debug)]
pub(in crate::sim) struct Ntb {
    /// Port to port.
    pub(in crate::sim) crossing: Crossing,
    /// Port-to-port latency, also the time its registers take to answer.
    latency: SimTime,
}

impl Ntb {
    /// A bridge whose ports are links `ports`.
    pub(in crate::sim) fn new(sys: &System, ports: &[usize], latency: SimTime) -> Self {
        Ntb {
            crossing: Crossing::new(sys, ports, Forwarding::CutThrough, latency, &[]),
            latency,
        }
    }
}

impl Node for Ntb {
    #[inline]
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, _head: SimTime) {
        if t.dst as usize == n {
            sim.at_ntb(n, c, id, t);
        } else {
            sim.forward(n, c, id, t);
        }
    }
}

impl Simulator<'_> {
    /// Writes the doorbell of bridge `dst` (above flow `f`'s target), behind the data TLP
    /// of order `order` (posted writes keep their order, so the doorbell follows the data).
    pub(in crate::sim) fn ring_doorbell(&mut self, f: u32, dst: u32, order: u64) {
        let src = self.flows[f as usize].source;
        let out = self.route[src as usize * self.sys.nodes.len() + dst as usize];
        let id = self.new_tlp(Tlp {
            order,
            ..Tlp::at_source(TlpKind::MWr, src, dst, 4, f, Role::Doorbell)
        });
        self.push(out, id);
    }

    /// A TLP addressed to bridge `n` itself: a doorbell (answered with an MSI into the
    /// domain below, after the bridge's latency), or a scratchpad register write or read
    /// (a read completes after the same latency).
    pub(in crate::sim) fn at_ntb(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let latency = match &self.nodes[n] {
            AnyNode::Ntb(b) => b.latency,
            _ => SimTime::ZERO,
        };
        self.rx_release(c, t.class(), 1, t.data_credits());
        self.deliver(id);
        let nodes = self.sys.nodes.len();
        let (kind, dst, payload, role, req) = match (t.kind, t.role) {
            (TlpKind::MWr, Role::Doorbell) => {
                let dst = self.flows[t.flow as usize].target;
                (TlpKind::MWr, dst, 4, Role::NtbMsi, c)
            }
            (TlpKind::MWr, _) => {
                self.write_arrived(t, now);
                return;
            }
            (TlpKind::MRd, _) => (TlpKind::CplD, t.src, t.length, t.role, t.req),
            _ => return,
        };
        let out = self.route[n * nodes + dst as usize];
        let reply = self.new_tlp(Tlp {
            req,
            order: if kind == TlpKind::CplD { 0 } else { t.order },
            ..Tlp::at_source(kind, n as u32, dst, payload, t.flow, role)
        });
        self.q.schedule(
            now + latency,
            Ev::Enqueue {
                ch: out,
                tlp: reply,
            },
        );
    }

    /// A bridge's MSI reached the root complex it interrupts: every data TLP the doorbell
    /// signalled must be there already.
    pub(in crate::sim) fn ntb_interrupt(&mut self, t: Tlp) {
        let flow = &mut self.flows[t.flow as usize];
        if flow.expected_order <= t.order {
            self.audit.order_violations += 1;
        }
        if self.measuring {
            flow.interrupts += 1;
        }
    }
}
