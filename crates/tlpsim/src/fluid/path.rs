//! The way a TLP goes from one node to another: the link directions (channels) it crosses
//! in the tree of links, the socket links between trees, and every node on the way.

use crate::fabric::{NodeId, NodeKind, System};

/// One step of a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hop {
    /// A link direction: link `c / 2`, down (away from the root) when `c` is even, as the
    /// simulator numbers its channels.
    Chan(usize),
    /// Socket link `link`, from root complex `from` to root complex `to`.
    Socket {
        /// Index in [`System::socket_links`].
        link: usize,
        /// The root complex the TLP leaves.
        from: NodeId,
        /// The one it reaches.
        to: NodeId,
    },
}

/// The node that transmits on link direction `c` and the one that receives (down, from the
/// link's upper end, when `c` is even).
pub fn ends(sys: &System, c: usize) -> (NodeId, NodeId) {
    let l = &sys.links[c / 2];
    if c % 2 == 0 {
        (l.up, l.down)
    } else {
        (l.down, l.up)
    }
}

/// A path: its hops in order and the nodes it visits, both ends included (`nodes[i]` sends
/// on `hops[i]`, `nodes[i + 1]` receives).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Path {
    /// Hops in order.
    pub hops: Vec<Hop>,
    /// Nodes in order, both ends included.
    pub nodes: Vec<NodeId>,
}

/// The parent link of every node and the socket links, for finding paths.
pub struct Tree<'a> {
    sys: &'a System,
    /// The link above each node, if any.
    above: Vec<Option<usize>>,
    /// The top of each node's tree.
    tops: Vec<NodeId>,
}

impl<'a> Tree<'a> {
    /// The tree of `sys`'s links.
    pub fn new(sys: &'a System) -> Self {
        let mut above = vec![None; sys.nodes.len()];
        for (l, link) in sys.links.iter().enumerate() {
            above[link.down] = Some(l);
        }
        Tree {
            sys,
            above,
            tops: sys.tree_tops(),
        }
    }

    /// The node above `n`, if any.
    fn parent(&self, n: NodeId) -> Option<NodeId> {
        self.above[n].map(|l| self.sys.links[l].up)
    }

    /// The top of `n`'s tree: the node with no link above it.
    pub fn top(&self, n: NodeId) -> NodeId {
        self.tops[n]
    }

    /// The nodes from `n` up to the top of its tree, `n` first.
    fn chain(&self, mut n: NodeId) -> Vec<NodeId> {
        let mut out = vec![n];
        while let Some(p) = self.parent(n) {
            if out.len() > self.sys.nodes.len() {
                break;
            }
            out.push(p);
            n = p;
        }
        out
    }

    /// The path from `a` to `b`: up to their common ancestor (past a switch whose port
    /// redirects peer-to-peer TLPs upstream, ACS), down to `b`; across socket links where
    /// they lie in different trees (the fewest socket links, the first listed among equals).
    /// None when no way joins them.
    pub fn path(&self, a: NodeId, b: NodeId) -> Option<Path> {
        let (ta, tb) = (self.top(a), self.top(b));
        if ta == tb {
            return Some(self.tree_path(a, b));
        }
        let sockets = self.socket_route(ta, tb)?;
        let mut p = self.tree_path(a, ta);
        for (link, from, to) in sockets {
            debug_assert_eq!(p.nodes.last(), Some(&from));
            p.hops.push(Hop::Socket { link, from, to });
            p.nodes.push(to);
        }
        let down = self.tree_path(tb, b);
        p.hops.extend(down.hops);
        p.nodes.extend(down.nodes.into_iter().skip(1));
        Some(p)
    }

    /// The socket links from root complex `a` to root complex `b`, fewest first.
    fn socket_route(&self, a: NodeId, b: NodeId) -> Option<Vec<(usize, NodeId, NodeId)>> {
        let n = self.sys.nodes.len();
        let mut from: Vec<Option<(usize, NodeId)>> = vec![None; n];
        let mut seen = vec![false; n];
        seen[a] = true;
        let mut frontier = vec![a];
        while !frontier.is_empty() && !seen[b] {
            let mut next = Vec::new();
            for &x in &frontier {
                for (i, s) in self.sys.socket_links.iter().enumerate() {
                    let y = if s.a == x {
                        s.b
                    } else if s.b == x {
                        s.a
                    } else {
                        continue;
                    };
                    if !seen[y] {
                        seen[y] = true;
                        from[y] = Some((i, x));
                        next.push(y);
                    }
                }
            }
            frontier = next;
        }
        if !seen[b] {
            return None;
        }
        let mut out = Vec::new();
        let mut y = b;
        while y != a {
            let (i, x) = from[y]?;
            out.push((i, x, y));
            y = x;
        }
        out.reverse();
        Some(out)
    }

    /// The path from `a` to `b` in one tree.
    fn tree_path(&self, a: NodeId, b: NodeId) -> Path {
        let (ca, cb) = (self.chain(a), self.chain(b));
        // The lowest common ancestor: the first of a's chain on b's.
        let mut ia = ca
            .iter()
            .position(|x| cb.contains(x))
            .unwrap_or(ca.len() - 1);
        let mut ib = cb.iter().position(|&x| x == ca[ia]).unwrap_or(cb.len() - 1);
        // ACS: a TLP that came up into a switch port that redirects goes on up (a turn in
        // a switch only: both ends below it).
        while ia > 0 && ib > 0 && ia + 1 < ca.len() {
            let s = ca[ia];
            let came_up = self.above[ca[ia - 1]].map(|l| &self.sys.links[l]);
            let redirect = matches!(self.sys.nodes[s].kind, NodeKind::Switch { .. })
                && came_up.is_some_and(|l| l.acs_redirect);
            if !redirect {
                break;
            }
            ia += 1;
            ib += 1;
        }
        let mut p = Path::default();
        for w in ca[..=ia].windows(2) {
            p.nodes.push(w[0]);
            p.hops
                .push(Hop::Chan(self.above[w[0]].unwrap_or(0) * 2 + 1));
        }
        p.nodes.push(ca[ia]);
        for i in (0..ib).rev() {
            p.hops.push(Hop::Chan(self.above[cb[i]].unwrap_or(0) * 2));
            p.nodes.push(cb[i]);
        }
        p
    }
}
