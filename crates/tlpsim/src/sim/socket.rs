//! Inter-socket links (`fabric::SocketLinkSpec`): TLPs between the trees of two root
//! complexes cross one, each direction a [`Throttle`] of the link's payload bandwidth and
//! then its latency. The root complex a TLP reaches on its own side hands it over
//! (`node/root.rs` `RootComplex::forward`: a peer-to-peer TLP after that root complex's own
//! forwarding, a DMA into the other socket's memory straight away; a completion from the
//! other socket's memory as `complete_read` makes it); the ingress buffer it came in on frees
//! when it is across. On the far side it arrives at that root complex as if on a root port
//! of its own, [`SOCKET`]: its memory takes it, or it forwards it down.

use super::bottleneck::{Resource, UsedBy};
use super::node::NodeEv;
use super::{Ev, Simulator, NONE};
use crate::engine::SimTime;
use crate::fabric::System;
use crate::sim::throttle::Throttle;

/// The `ingress` of a TLP that came in across a socket link: no receive buffer of a link
/// holds it (nothing frees when it leaves), and it is not its source's own.
pub(in crate::sim) const SOCKET: u32 = NONE - 1;

/// One socket link at run time.
#[derive(Debug)]
struct Crossing {
    /// Its two root complexes.
    ends: [u32; 2],
    latency: SimTime,
    /// Payload from `ends[0]` to `ends[1]`, and back.
    ways: [Throttle; 2],
}

/// Every socket link, and the root complex at the top of each node's tree.
#[derive(Debug, Default)]
pub(in crate::sim) struct SocketLinks {
    /// Per node, the root complex at the top of its tree.
    top: Vec<u32>,
    links: Vec<Crossing>,
}

impl SocketLinks {
    /// The socket links of `sys` (no table at all without one).
    pub(in crate::sim) fn new(sys: &System) -> Self {
        if sys.socket_links.is_empty() {
            return SocketLinks::default();
        }
        let top = sys.tree_tops().into_iter().map(|n| n as u32).collect();
        let links = sys
            .socket_links
            .iter()
            .map(|s| Crossing {
                ends: [s.a as u32, s.b as u32],
                latency: s.latency,
                ways: [Throttle::new(s.bandwidth), Throttle::new(s.bandwidth)],
            })
            .collect();
        SocketLinks { top, links }
    }

    /// The root complex at the top of `n`'s tree (`n` itself without socket links).
    pub(in crate::sim) fn top(&self, n: usize) -> usize {
        self.top.get(n).map_or(n, |&t| t as usize)
    }

    /// The link and direction from root complex `from` toward node `to`'s tree, if they are
    /// joined.
    fn way(&self, from: usize, to: usize) -> Option<(usize, usize)> {
        let to = self.top(to) as u32;
        self.links
            .iter()
            .enumerate()
            .find_map(|(i, l)| match l.ends {
                [a, b] if a == from as u32 && b == to => Some((i, 0)),
                [a, b] if b == from as u32 && a == to => Some((i, 1)),
                _ => None,
            })
    }

    /// The root complex across a link from root complex `from` toward node `to`, if `to` is
    /// in another tree joined to `from`'s.
    pub(in crate::sim) fn across(&self, from: usize, to: usize) -> Option<usize> {
        self.way(from, to).map(|_| self.top(to))
    }

    /// Each link direction as a resource for the bottleneck verdict, its service by `t`.
    pub(in crate::sim) fn resources(&self, sys: &System, t: SimTime, out: &mut Vec<Resource>) {
        for l in &self.links {
            for (d, way) in l.ways.iter().enumerate() {
                let (from, to) = (l.ends[d] as usize, l.ends[1 - d] as usize);
                let name = socket_way_name(sys, from, to);
                let used_by = UsedBy::Crossing { from, to };
                out.push(way.resource(from, used_by, "socket_link", name, t));
            }
        }
    }
}

/// The name of one direction of a socket link: "rc0->rc1 socket link".
pub(crate) fn socket_way_name(sys: &System, from: usize, to: usize) -> String {
    format!(
        "{}->{} socket link",
        sys.nodes[from].name, sys.nodes[to].name
    )
}

impl Simulator<'_> {
    /// Each socket link direction's use over the window, from its resource's busy share.
    pub(in crate::sim) fn socket_link_results(
        &self,
        resources: &[super::bottleneck::ResourceResult],
    ) -> Vec<super::result::SocketLinkResult> {
        let mut out = Vec::new();
        for (l, spec) in self.host.sockets.links.iter().zip(&self.sys.socket_links) {
            for d in 0..2 {
                let (from, to) = (l.ends[d] as usize, l.ends[1 - d] as usize);
                let name = socket_way_name(self.sys, from, to);
                let busy = resources
                    .iter()
                    .find(|r| r.name == name)
                    .map_or(0.0, |r| r.busy);
                out.push(super::result::SocketLinkResult {
                    name: spec.name.clone(),
                    direction: format!(
                        "{}->{}",
                        self.sys.nodes[from].name, self.sys.nodes[to].name
                    ),
                    utilization: busy,
                    payload_gbps: busy * spec.bandwidth * 8.0 / 1e9,
                    bandwidth_gbytes_per_s: spec.bandwidth / 1e9,
                });
            }
        }
        out
    }

    /// TLP `id`, at root complex `n` (it came in on channel `c`, or was made there), crosses
    /// the socket link toward its destination's tree from `at` on: the link's direction
    /// passes its payload, then its latency; it arrives at the far root complex
    /// ([`NodeEv::Socket`]), where the buffer of `c` frees. A TLP ready later waits for `at`
    /// by an event ([`NodeEv::SocketSend`]), so the link serves TLPs in the order they are
    /// ready, not the order they were booked. False if no link joins the two.
    pub(in crate::sim) fn socket_cross(&mut self, n: usize, c: u32, id: u32, at: SimTime) -> bool {
        let t = self.tlps[id as usize];
        let Some((l, d)) = self.host.sockets.way(n, t.dst as usize) else {
            return false;
        };
        self.tlps[id as usize].ingress = c;
        let node = n as u32;
        if at > self.now() {
            let ev = NodeEv::SocketSend(id);
            self.q.schedule(at, Ev::Node { node, ev });
            return true;
        }
        let link = &mut self.host.sockets.links[l];
        let arrive = link.ways[d].pass(at, t.payload) + link.latency;
        let far = link.ends[1 - d];
        let ev = NodeEv::Socket(id);
        self.q.schedule(arrive, Ev::Node { node: far, ev });
        true
    }
}
