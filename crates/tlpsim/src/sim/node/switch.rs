//! Switches: routing to the egress port, cut-through or store-and-forward per port pair
//! (store-and-forward forced where the egress link is the faster one), a port-to-port
//! latency by width, and a crossbar or one shared bus every TLP crosses.

use super::{AnyNode, Node};
use crate::engine::SimTime;
use crate::fabric::{Core, Forwarding, System};
use crate::pcie::{flit, phy, tlp};
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::{Ev, Simulator, Tlp};

/// How TLPs cross a switch-like node (a switch, a non-transparent bridge) from one port to
/// another: cut-through or not, and the port-to-port latency, per (ingress, egress) pair.
#[derive(Debug)]
pub(in crate::sim) struct Crossing {
    ports: usize,
    /// (cut-through, latency) by [ingress port × ports + egress port].
    table: Vec<(bool, SimTime)>,
}

impl Crossing {
    /// The crossing of a node whose ports are links `ports` (upstream first): store-and-forward
    /// where asked or where the egress link is the faster one; `latency` unless the narrower
    /// port's width has its own in `by_width`.
    pub(in crate::sim) fn new(
        sys: &System,
        ports: &[usize],
        forwarding: Forwarding,
        latency: SimTime,
        by_width: &[(u32, SimTime)],
    ) -> Self {
        let rate = |link: usize| {
            let l = &sys.links[link];
            phy::encoded_gbps(l.gen, l.width) * if l.flit { flit::tlp_fraction() } else { 1.0 }
        };
        let mut table = Vec::with_capacity(ports.len().pow(2));
        for &a in ports {
            for &b in ports {
                let narrow = sys.links[a].width.min(sys.links[b].width);
                let lat = by_width
                    .iter()
                    .find(|(w, _)| *w == narrow)
                    .map_or(latency, |x| x.1);
                let ct = forwarding == Forwarding::CutThrough && rate(b) <= rate(a) + 1e-9;
                table.push((ct, lat));
            }
        }
        Crossing {
            ports: ports.len(),
            table,
        }
    }

    /// (cut-through, latency) from ingress port `from` to egress port `to`.
    #[inline(always)]
    pub(in crate::sim) fn hop(&self, from: u32, to: u32) -> (bool, SimTime) {
        self.table[from as usize * self.ports + to as usize]
    }
}

/// A switch at run time.
#[derive(Debug)]
pub(in crate::sim) struct Switch {
    /// Port to port.
    pub(in crate::sim) crossing: Crossing,
    /// The shared bus every TLP crosses (None: a crossbar).
    bus: Option<Throttle>,
}

impl Switch {
    /// A switch whose ports are links `ports`.
    pub(in crate::sim) fn new(
        sys: &System,
        ports: &[usize],
        forwarding: Forwarding,
        latency: SimTime,
        by_width: &[(u32, SimTime)],
        core: Core,
    ) -> Self {
        Switch {
            crossing: Crossing::new(sys, ports, forwarding, latency, by_width),
            bus: match core {
                Core::Crossbar => None,
                Core::SharedBus(bw) => Some(Throttle::new(bw)),
            },
        }
    }
}

impl Node for Switch {
    #[inline(always)]
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, _head: SimTime) {
        sim.forward(n, c, id, t);
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        if let Some(b) = &self.bus {
            out.push(b.resource(
                n,
                UsedBy::Every,
                "switch_bus",
                format!("{name} shared bus"),
                t,
            ));
        }
    }
}

impl Simulator<'_> {
    /// Switch-like node `n` takes TLP `id`, accepted on channel `c`, toward its egress port
    /// (across its shared bus first, if it has one).
    #[inline(always)]
    pub(in crate::sim) fn forward(&mut self, n: usize, c: u32, id: u32, t: Tlp) {
        let now = self.now();
        let out = self.route.next(n, t.dst as usize);
        self.tlps[id as usize].ingress = c;
        if let AnyNode::Switch(Switch {
            crossing,
            bus: Some(bus),
        }) = &mut self.nodes[n]
        {
            let (ct, _) = crossing.hop(self.rx_port[c as usize], self.tx_port[out as usize]);
            let bytes = tlp::tlp_bytes(
                t.kind,
                self.sys.pcie.addressing,
                t.payload + t.dw_lead as u32,
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
}
