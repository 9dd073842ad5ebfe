//! `[[link]]` sections: the links they become, with `[pcie]`'s defaults, and the checks that
//! the links form a tree below each root complex.

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::{at, BuildError, Place};
use super::file::PcieSection;
use super::nodes::NodeTable;
use super::values::{self, words};
use crate::engine::SimTime;
use crate::fabric::{AckPolicy, LinkSpec, NodeId, NodeKind, NodeSpec, PcieSettings};
use crate::pcie::ltssm;
use crate::pcie::phy::{self, Generation};
use crate::pcie::tlp;
use crate::units;

words! {
    /// When a link's receivers send the Acks and UpdateFCs they owe.
    pub enum AckWord for "ack" default Timer => AckPolicy {
        /// At the spec's Ack/UpdateFC latency interval.
        Timer = "timer",
        /// As soon as one is owed.
        Immediate = "immediate",
    }
}

/// `[[link]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    /// [upstream node, downstream node].
    pub between: Vec<String>,
    /// Generation 1–7 (`[pcie]` gen when left out).
    pub gen: Option<i64>,
    /// Rate instead of gen, e.g. "8GT/s".
    #[schemars(pattern(units::GT_PER_S_PATTERN))]
    pub rate: Option<String>,
    /// Lanes: 1, 2, 4, 8, 12, 16, 32 (`[pcie]` width when left out).
    pub width: Option<i64>,
    /// One-way propagation delay (`[pcie]` propagation when left out).
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub propagation: Option<String>,
    /// Bit error rate, e.g. 1e-9 (`[pcie]` ber when left out).
    pub ber: Option<f64>,
    /// Replay buffer size, e.g. "8KiB" (`[pcie]` replay_buffer when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub replay_buffer: Option<String>,
    /// Time the link spends in Recovery when it retrains, e.g. "2us" (`[pcie]` recovery
    /// when left out; by default the spec's shortest Recovery at its rate, plus a round trip).
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub recovery: Option<String>,
    /// SKP ordered sets (`[pcie]` skp when left out).
    pub skp: Option<bool>,
    /// Flit mode (on when left out at Gen6 and above, where it is the only mode).
    pub flit: Option<bool>,
    /// When both ends send their Acks and UpdateFCs: "timer" or "immediate" (`[pcie]` ack
    /// when left out).
    pub ack: Option<AckWord>,
    /// Whether the switch port at its upper end redirects peer-to-peer TLPs upstream (ACS;
    /// the switch's `acs_redirect` when left out).
    pub acs_redirect: Option<bool>,
}

/// What a link takes from `[pcie]` when its own section leaves it out.
pub struct LinkDefaults {
    gen: Generation,
    width: u32,
    ber: f64,
    propagation: SimTime,
    replay_buffer: u32,
    recovery: Option<SimTime>,
    ack: AckPolicy,
    skp: bool,
}

impl LinkDefaults {
    /// The link defaults of `[pcie]`, checked.
    pub fn new(p: &PcieSection) -> Result<Self, BuildError> {
        let place = Place::table("pcie");
        Ok(LinkDefaults {
            gen: Generation::from_number(p.gen).map_err(at(&place))?,
            width: phy::check_width(p.width).map_err(at(&place))?,
            ber: values::ber(&place, p.ber)?,
            propagation: values::duration(&place, "propagation", &p.propagation)?,
            replay_buffer: values::replay_buffer(&place, &p.replay_buffer)?,
            recovery: p
                .recovery
                .as_ref()
                .map(|r| values::duration(&place, "recovery", r))
                .transpose()?,
            ack: p.ack.into(),
            skp: p.skp,
        })
    }
}

/// The links, with each node's upstream link.
pub struct Topology {
    /// Links in file order.
    pub links: Vec<LinkSpec>,
    /// The index in `links` of each node's upstream link (None for a root complex).
    upstream_of: Vec<Option<usize>>,
}

impl Topology {
    /// The node above `n`, if any.
    pub fn up(&self, n: NodeId) -> Option<NodeId> {
        self.upstream_of[n].map(|l| self.links[l].up)
    }

    /// The nodes below `n`, in link order.
    pub fn below(&self, n: NodeId) -> impl Iterator<Item = NodeId> + '_ {
        self.links.iter().filter(move |l| l.up == n).map(|l| l.down)
    }

    /// The link above `n`, if it has one.
    pub fn upstream_link(&self, n: NodeId) -> Option<&LinkSpec> {
        self.upstream_of[n].map(|l| &self.links[l])
    }

    /// The nodes a TLP from `from` to `to` passes through on its way, in order (neither end):
    /// down toward `to` where it lies below, up otherwise, and up from a switch port with ACS
    /// redirect (as the simulator routes it).
    pub fn path_between(&self, from: NodeId, to: NodeId) -> Vec<NodeId> {
        let mut out = Vec::new();
        let (mut at, mut came_up_link) = (from, None::<usize>);
        while at != to && out.len() <= self.upstream_of.len() {
            // The child of `at` whose subtree holds `to`, if any.
            let mut child = to;
            while self.up(child).is_some_and(|p| p != at) {
                child = self.up(child).unwrap_or(child);
            }
            let below = self.up(child) == Some(at);
            let redirect = came_up_link.is_some_and(|l| self.links[l].acs_redirect);
            let (next, up_link) = if below && !redirect {
                (child, None)
            } else {
                match self.upstream_of[at] {
                    Some(l) => (self.links[l].up, Some(l)),
                    None => break,
                }
            };
            if next != to {
                out.push(next);
            }
            (at, came_up_link) = (next, up_link);
        }
        out
    }

    /// The top of `n`'s tree: the root complex above it (or across no bridge).
    pub fn root_above(&self, mut n: NodeId) -> NodeId {
        while let Some(up) = self.up(n) {
            n = up;
        }
        n
    }
}

/// Builds the `[[link]]` sections between `nodes`.
pub fn links(
    sections: &[LinkSection],
    nodes: &NodeTable,
    pcie: &PcieSettings,
    defaults: &LinkDefaults,
) -> Result<Topology, BuildError> {
    let mut topology = Topology {
        links: Vec::new(),
        upstream_of: vec![None; nodes.nodes().len()],
    };
    for (i, l) in sections.iter().enumerate() {
        let place = Place::element("link", i, &format!("between {}", l.between.join(", ")));
        let (up, down) = ends(&place, l, nodes, &topology)?;
        topology.upstream_of[down] = Some(i);
        let link = link(
            &place,
            l,
            pcie,
            defaults,
            &nodes.nodes()[up],
            &nodes.nodes()[down],
        )?;
        topology.links.push(LinkSpec { up, down, ..link });
    }
    Ok(topology)
}

/// The two ends of link `l`, checked: two nodes, upstream first, one upstream link each.
fn ends(
    place: &Place,
    l: &LinkSection,
    nodes: &NodeTable,
    topology: &Topology,
) -> Result<(NodeId, NodeId), BuildError> {
    let [a, b] = l.between.as_slice() else {
        return Err(BuildError::conflict(
            place,
            "between needs exactly two node names, upstream first",
        ));
    };
    let up = nodes.lookup(place, "between", a)?;
    let down = nodes.lookup(place, "between", b)?;
    let fail = |problem: String| Err(BuildError::conflict(place, problem));
    let kind = |n: NodeId| &nodes.nodes()[n].kind;
    if up == down {
        return fail(format!("a link cannot join {a:?} to itself"));
    }
    let up_is_ntb = matches!(kind(up), NodeKind::Ntb { .. });
    if matches!(kind(down), NodeKind::RootComplex { .. }) && !up_is_ntb {
        return fail(format!(
            "{b:?} is a root complex and cannot be the downstream end (only below a \
             non-transparent bridge, [[ntb]], that joins its domain); write the root complex first"
        ));
    }
    if up_is_ntb && topology.below(up).next().is_some() {
        return fail(format!(
            "the non-transparent bridge {a:?} already has its downstream link; an \
             NTB joins exactly two domains (one link above, one below)"
        ));
    }
    if !kind(up).has_downstream_ports() {
        return fail(format!(
            "{a:?} is {} and has no downstream ports; write the upstream node first",
            kind(up).noun()
        ));
    }
    if let Some(prev) = topology.upstream_of[down] {
        return fail(format!(
            "{b:?} already has an upstream link ([[link]] {}); a node has one upstream port",
            prev + 1
        ));
    }
    Ok((up, down))
}

/// The link a section describes (its ends still to fill in), `[pcie]` filling the gaps.
fn link(
    place: &Place,
    l: &LinkSection,
    pcie: &PcieSettings,
    defaults: &LinkDefaults,
    up: &NodeSpec,
    down: &NodeSpec,
) -> Result<LinkSpec, BuildError> {
    let gen = match (&l.gen, &l.rate) {
        (Some(_), Some(_)) => {
            return Err(BuildError::conflict(place, "give gen or rate, not both"))
        }
        (Some(g), None) => Generation::from_number(*g).map_err(at(place))?,
        (None, Some(r)) => {
            let gt = units::parse_gt_per_s("rate", r).map_err(at(place))?;
            Generation::from_number(gt as i64).map_err(at(place))?
        }
        (None, None) => defaults.gen,
    };
    let width = match l.width {
        Some(w) => phy::check_width(w).map_err(at(place))?,
        None => defaults.width,
    };
    let flit = match l.flit {
        None => gen.requires_flit_mode(),
        Some(false) if gen.requires_flit_mode() => {
            return Err(BuildError::conflict(
                place,
                format!(
                    "flit = false is not allowed at Gen{} (it runs only in flit mode)",
                    gen.number()
                ),
            ))
        }
        Some(f) => f,
    };
    let replay = match &l.replay_buffer {
        None => defaults.replay_buffer,
        Some(r) => values::replay_buffer(place, r)?,
    };
    let need = tlp::tlp_bytes(tlp::TlpKind::MWr, pcie.addressing, pcie.mps, pcie.ecrc) + 8;
    if replay < need {
        return Err(BuildError::conflict(
            place,
            format!(
                "replay_buffer {replay} B cannot hold one MPS-sized TLP ({need} B); allowed: at \
                 least {need} B"
            ),
        ));
    }
    let propagation = match &l.propagation {
        None => defaults.propagation,
        Some(p) => values::duration(place, "propagation", p)?,
    };
    let recovery = match &l.recovery {
        Some(r) => values::duration(place, "recovery", r)?,
        None => defaults
            .recovery
            .unwrap_or_else(|| ltssm::recovery_time(gen, propagation)),
    };
    Ok(LinkSpec {
        name: format!("{}-{}", up.name, down.name),
        up: 0,
        down: 0,
        gen,
        width,
        flit,
        skp: l.skp.unwrap_or(defaults.skp),
        propagation,
        recovery,
        ber: match l.ber {
            None => defaults.ber,
            Some(b) => values::ber(place, b)?,
        },
        replay_buffer: replay,
        ack: l.ack.map_or(defaults.ack, AckPolicy::from),
        acs_redirect: acs_redirect(place, up, l.acs_redirect)?,
    })
}

/// Whether the port of `up` at the top of a link redirects peer-to-peer TLPs upstream: `set`
/// or, unset, its switch's default; `set` on a port of anything but a switch is refused.
fn acs_redirect(place: &Place, up: &NodeSpec, set: Option<bool>) -> Result<bool, BuildError> {
    match (up.kind.switch_acs_redirect(), set) {
        (Some(default), set) => Ok(set.unwrap_or(default)),
        (None, Some(_)) => Err(BuildError::conflict(
            place,
            format!(
                "acs_redirect applies to a switch's downstream port; {:?} is {}",
                up.name,
                up.kind.noun()
            ),
        )),
        (None, None) => Ok(false),
    }
}

/// Checks that every node but a root complex reaches a root complex through upstream links,
/// without a loop, and that every bridge has its link below.
pub fn check_tree(nodes: &[NodeSpec], topology: &Topology) -> Result<(), BuildError> {
    for (n, node) in nodes.iter().enumerate() {
        let is_root = matches!(node.kind, NodeKind::RootComplex { .. });
        if !is_root && topology.upstream_of[n].is_none() {
            return Err(BuildError::Fabric(format!(
                "{:?} has no upstream link; add a [[link]] with between = [\"<upstream>\", {:?}]",
                node.name, node.name
            )));
        }
        let mut seen = vec![false; nodes.len()];
        let mut cur = n;
        while let Some(up) = topology.up(cur) {
            if seen[cur] {
                return Err(loop_error(cur, nodes, topology));
            }
            seen[cur] = true;
            cur = up;
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        if matches!(node.kind, NodeKind::Ntb { .. }) && topology.below(n).next().is_none() {
            return Err(BuildError::Fabric(format!(
                "the non-transparent bridge {:?} has no link below it; add a [[link]] with \
                 between = [{:?}, \"<the other domain's root complex or switch>\"]",
                node.name, node.name
            )));
        }
    }
    Ok(())
}

/// The loop of upstream links through `start`, in words.
fn loop_error(start: NodeId, nodes: &[NodeSpec], topology: &Topology) -> BuildError {
    let mut cycle: Vec<&str> = Vec::new();
    let mut c = start;
    loop {
        cycle.push(&nodes[c].name);
        c = topology.up(c).unwrap_or(start);
        if c == start {
            break;
        }
    }
    BuildError::Fabric(format!(
        "the links form a loop ({} -> {}); links must form a tree below each root complex",
        cycle.join(" -> "),
        cycle[0]
    ))
}
