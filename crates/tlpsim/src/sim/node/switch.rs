//! Switches: routing to the egress port, cut-through or store-and-forward per port pair
//! (store-and-forward forced where the egress link is the faster one), a port-to-port
//! latency by width, and a crossbar or one shared bus every TLP crosses.

use super::{Context, Node};
use crate::engine::SimTime;
use crate::fabric::{Core, Forwarding, System};
use crate::pcie::tlp;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::Tlp;

/// Switch-like nodes of at most this many ports keep every port pair's crossing in a table.
const DENSE_PORTS: usize = 64;

/// How TLPs cross a switch-like node (a switch, a non-transparent bridge) from one port to
/// another: cut-through or not, and the port-to-port latency, per (ingress, egress) pair.
/// State linear in ports: each port's rate and width, the pair worked out when asked (a
/// node of up to [`DENSE_PORTS`] ports also keeps every pair in a table).
#[derive(Debug)]
pub(in crate::sim) struct Crossing {
    /// Bit rate of each port's link after encoding (and flit overhead).
    rate: Vec<f64>,
    /// Lanes of each port's link.
    width: Vec<u32>,
    /// Whether it cuts through where the egress is not the faster port.
    cut_through: bool,
    /// Port-to-port latency.
    latency: SimTime,
    /// Latency where the narrower port has this width.
    by_width: Vec<(u32, SimTime)>,
    /// (cut-through, latency) by [ingress port × ports + egress port], for a few ports.
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
        let rate = |link: usize| sys.links[link].port_gbps();
        let mut c = Crossing {
            rate: ports.iter().map(|&p| rate(p)).collect(),
            width: ports.iter().map(|&p| sys.links[p].width).collect(),
            cut_through: forwarding == Forwarding::CutThrough,
            latency,
            by_width: by_width.to_vec(),
            table: Vec::new(),
        };
        let n = ports.len();
        if n <= DENSE_PORTS {
            c.table = (0..n * n).map(|i| c.work_out(i / n, i % n)).collect();
        }
        c
    }

    /// (cut-through, latency) from port `a` to port `b`, from the ports' rates and widths.
    fn work_out(&self, a: usize, b: usize) -> (bool, SimTime) {
        let narrow = self.width[a].min(self.width[b]);
        let lat = self
            .by_width
            .iter()
            .find(|(w, _)| *w == narrow)
            .map_or(self.latency, |x| x.1);
        let ct = self.cut_through && self.rate[b] <= self.rate[a] + 1e-9;
        (ct, lat)
    }

    /// (cut-through, latency) from ingress port `from` to egress port `to`.
    #[inline(always)]
    pub(in crate::sim) fn hop(&self, from: u32, to: u32) -> (bool, SimTime) {
        let n = self.rate.len();
        if self.table.is_empty() {
            self.work_out(from as usize, to as usize)
        } else {
            self.table[from as usize * n + to as usize]
        }
    }
}

impl Crossing {
    /// How TLPs cross node `n` of `sys`, whose ports are links `ports`, if it forwards them
    /// (a switch, a non-transparent bridge): the routing keeps it (`sim::route`).
    pub(in crate::sim) fn of(sys: &System, n: usize, ports: &[usize]) -> Option<Crossing> {
        let (forwarding, latency, by_width) = sys.nodes[n].kind.crossing()?;
        Some(Crossing::new(sys, ports, forwarding, latency, by_width))
    }
}

/// A switch at run time (how TLPs cross it port to port is the routing's: [`Crossing`]).
#[derive(Debug)]
pub(in crate::sim) struct Switch {
    /// The shared bus every TLP crosses (None: a crossbar).
    bus: Option<Throttle>,
}

impl Switch {
    /// A switch with a crossbar or one shared bus (`core`).
    pub(in crate::sim) fn new(core: Core) -> Self {
        Switch {
            bus: match core {
                Core::Crossbar => None,
                Core::SharedBus(bw) => Some(Throttle::new(bw)),
            },
        }
    }
}

impl Node for Switch {
    #[inline(always)]
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, _head: SimTime) {
        forward(cx, self.bus.as_mut(), c, id, t);
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

/// A switch-like node takes TLP `id`, accepted on channel `c`, toward its egress port
/// (across its shared `bus` first, if it has one).
#[inline(always)]
pub(in crate::sim) fn forward<C: Context>(
    cx: &mut C,
    bus: Option<&mut Throttle>,
    c: u32,
    id: u32,
    t: Tlp,
) {
    let now = cx.now();
    let out = cx.hop(c, t.dst as usize);
    cx.tlp_mut(id).ingress = c;
    if let Some(bus) = bus {
        let (ct, _) = cx.crossing(c, out);
        let pcie = &cx.sys().pcie;
        let bytes = tlp::tlp_bytes(
            t.kind,
            pcie.addressing,
            t.payload + t.dw_lead as u32,
            pcie.ecrc,
        );
        let (start, done) = bus.pass_span(now, bytes);
        cx.send_at(if ct { start } else { done }, out, id);
        return;
    }
    cx.send(out, id);
}
