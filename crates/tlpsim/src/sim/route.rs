//! Routing through the tree of links: the channel a node sends a TLP on toward another node,
//! in state linear in the number of nodes.
//!
//! Every node but a tree's top has one upstream link. A depth-first walk numbers the nodes
//! so that each node's subtree is one interval of numbers; a TLP for a node inside that
//! interval goes down the child link whose interval holds it (a binary search over the
//! node's children), any other goes up. This is what a switch's address windows and bus
//! number ranges do (memory requests by address, completions by requester ID): each
//! downstream port claims exactly what lies below it.
//!
//! Up to [`DENSE_NODES`] nodes the answers are also kept in one table (at most 1 MiB), the
//! faster lookup for the systems most runs simulate; the state stays linear beyond it.

use super::node::switch::Crossing;
use super::NONE;
use crate::fabric::System;

/// Systems of at most this many nodes also keep every answer in a table.
const DENSE_NODES: usize = 512;

/// The next channel from any node toward any other.
#[derive(Debug)]
pub(in crate::sim) struct Routes {
    /// Depth-first number of each node.
    enter: Vec<u32>,
    /// The largest number in each node's subtree.
    exit: Vec<u32>,
    /// Each node's upstream channel (toward its parent), or `NONE` at a tree's top.
    up: Vec<u32>,
    /// Where each node's children start in `children` (one more entry than nodes).
    first_child: Vec<u32>,
    /// (child's number, downstream channel to it), per node in number order.
    children: Vec<(u32, u32)>,
    /// Every answer, by `node × nodes + dst`, in a small system.
    dense: Option<Vec<u32>>,
    /// How TLPs cross each node that forwards them (a switch, a bridge), port to port.
    crossings: Vec<Option<Crossing>>,
    /// Whether the switch port at each link's upper end redirects peer-to-peer TLPs
    /// upstream (ACS); empty when no port does.
    acs: Vec<bool>,
}

impl Routes {
    /// The routes of `sys`'s links (channel `2 l` runs down link `l`, `2 l + 1` up it).
    pub(in crate::sim) fn new(sys: &System) -> Self {
        let n = sys.nodes.len();
        let mut up = vec![NONE; n];
        let mut child_links: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (i, l) in sys.links.iter().enumerate() {
            up[l.down] = 2 * i as u32 + 1;
            child_links[l.up].push(i);
        }
        // Depth-first numbering, without recursion (a chain of switches may be deep).
        let mut enter = vec![0u32; n];
        let mut exit = vec![0u32; n];
        let mut next = 0u32;
        let mut stack: Vec<(usize, usize)> = Vec::new();
        for top in (0..n).filter(|&i| up[i] == NONE) {
            enter[top] = next;
            next += 1;
            stack.push((top, 0));
            while let Some((node, k)) = stack.pop() {
                if let Some(&l) = child_links[node].get(k) {
                    stack.push((node, k + 1));
                    let child = sys.links[l].down;
                    enter[child] = next;
                    next += 1;
                    stack.push((child, 0));
                } else {
                    exit[node] = next - 1;
                }
            }
        }
        let mut first_child = Vec::with_capacity(n + 1);
        let mut children = Vec::with_capacity(sys.links.len());
        for links in &child_links {
            first_child.push(children.len() as u32);
            // Links in file order reach children numbered in that order.
            children.extend(
                links
                    .iter()
                    .map(|&l| (enter[sys.links[l].down], 2 * l as u32)),
            );
        }
        first_child.push(children.len() as u32);
        let mut routes = Routes {
            enter,
            exit,
            up,
            first_child,
            children,
            dense: None,
            crossings: Vec::new(),
            acs: if sys.links.iter().any(|l| l.acs_redirect) {
                sys.links.iter().map(|l| l.acs_redirect).collect()
            } else {
                Vec::new()
            },
        };
        if n <= DENSE_NODES {
            let table = (0..n * n).map(|i| routes.search(i / n, i % n)).collect();
            routes.dense = Some(table);
        }
        routes
    }

    /// These routes with how TLPs cross each node (`crossings`, one per node: `Crossing::of`).
    pub(in crate::sim) fn with_crossings(mut self, crossings: Vec<Option<Crossing>>) -> Self {
        self.crossings = crossings;
        self
    }

    /// How TLPs cross node `n`, if it forwards them (a switch, a bridge).
    #[inline(always)]
    pub(in crate::sim) fn crossing(&self, n: usize) -> Option<&Crossing> {
        self.crossings[n].as_ref()
    }

    /// The channel `node` sends a TLP for `dst` on: down toward a descendant, up otherwise;
    /// `NONE` when `node` is `dst` or has no way toward it.
    #[inline(always)]
    pub(in crate::sim) fn next(&self, node: usize, dst: usize) -> u32 {
        match &self.dense {
            Some(table) if dst < self.enter.len() => table[node * self.enter.len() + dst],
            _ => self.search(node, dst),
        }
    }

    /// The channel `node` sends a TLP for `dst` on that came in on channel `came_in`
    /// ([`NONE`] for one it starts): as [`Routes::next`], but a TLP that came up into a switch
    /// port with ACS redirect goes on up instead of down another port.
    #[inline(always)]
    pub(in crate::sim) fn hop(&self, node: usize, came_in: u32, dst: usize) -> u32 {
        let out = self.next(node, dst);
        // Odd channels run up their link: `came_in` reached `node` from below.
        let redirect = !self.acs.is_empty()
            && came_in != NONE
            && came_in % 2 == 1
            && out != NONE
            && out % 2 == 0
            && self.acs[came_in as usize / 2];
        if redirect {
            self.up[node]
        } else {
            out
        }
    }

    /// [`Routes::next`] from the depth-first numbers.
    fn search(&self, node: usize, dst: usize) -> u32 {
        if node == dst || dst >= self.enter.len() {
            return NONE;
        }
        let at = self.enter[dst];
        if at <= self.enter[node] || at > self.exit[node] {
            return self.up[node];
        }
        let kids =
            &self.children[self.first_child[node] as usize..self.first_child[node + 1] as usize];
        // The last child numbered at or before `dst`: its subtree holds `dst`.
        let k = kids.partition_point(|&(e, _)| e <= at);
        kids[k - 1].1
    }

    /// The same answers without the table (for tests of a large system's path).
    #[cfg(test)]
    fn without_table(mut self) -> Self {
        self.dense = None;
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::load_str;

    /// A tree of switches: the searched answers equal the table's, and every route leads to
    /// its destination.
    #[test]
    fn search_agrees_with_table_and_reaches_every_node() {
        let mut text =
            String::from("[simulation]\nduration = \"1us\"\n[[root_complex]]\nname = \"rc\"\n");
        let mut links = String::new();
        for s in 0..4 {
            let up = if s < 2 {
                "rc".to_string()
            } else {
                format!("s{}", s - 2)
            };
            text += &format!("[[switch]]\nname = \"s{s}\"\n");
            links += &format!("[[link]]\nbetween = [\"{up}\", \"s{s}\"]\ngen = 3\nwidth = 4\n");
            for e in 0..3 {
                text += &format!("[[endpoint]]\nname = \"e{s}_{e}\"\nkind = \"dma\"\n");
                links +=
                    &format!("[[link]]\nbetween = [\"s{s}\", \"e{s}_{e}\"]\ngen = 3\nwidth = 4\n");
            }
        }
        let work = "[[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"e3_2\"\ndirection = \"write\"\ntransfer_size = \"256B\"\n";
        let sys = load_str(&(text + &links + work), "tree.toml").expect("the tree loads");
        let n = sys.nodes.len();
        let table = Routes::new(&sys);
        let search = Routes::new(&sys).without_table();
        for a in 0..n {
            for d in 0..n {
                assert_eq!(table.next(a, d), search.next(a, d), "{a} -> {d}");
                // Follow the channels: each hop is down or up a link, ending at `d`.
                let mut at = a;
                for _ in 0..n {
                    let c = search.next(at, d);
                    if c == NONE {
                        break;
                    }
                    let l = &sys.links[c as usize / 2];
                    at = if c % 2 == 0 { l.down } else { l.up };
                }
                assert_eq!(at, d, "{a} reaches {d}");
            }
        }
    }
}
