//! Non-transparent bridges: their sections, their memory windows, and the resolution of a
//! workload's `target_address` through the windows to the memory it reaches.

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::{at, BuildError, Place};
use super::links::Topology;
use super::nodes::NodeTable;
use super::values::{self, defaults, words, CreditsSection};
use super::DEFAULT_SWITCH_CREDITS;
use crate::fabric::{AddressPath, NodeId, NodeKind, NodeSpec, NtbSide, NtbWindow};
use crate::units;

defaults! {
    default_ntb_latency: String = "150ns";
}

/// The credits of each side of a bridge, as a file would write them.
fn ntb_credits() -> CreditsSection {
    CreditsSection::written(DEFAULT_SWITCH_CREDITS)
}

words! {
    /// The side of a non-transparent bridge a memory window faces.
    pub enum SideWord for "side" => NtbSide {
        /// A BAR in the domain above: TLPs into it cross downward.
        Up = "up",
        /// A BAR the host below sees: TLPs into it cross upward.
        Down = "down",
    }
}

/// `[[ntb]]`: a non-transparent bridge between two PCIe domains.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NtbSection {
    /// Unique node name.
    pub name: String,
    /// Port-to-port latency, window translation included (default "150ns").
    #[serde(default = "default_ntb_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub latency: String,
    /// Credits each side advertises.
    #[schemars(default = "ntb_credits")]
    pub credits: Option<CreditsSection>,
    /// Memory windows (BARs) with their address translation (none when left out:
    /// cross-domain targets are then named, not addressed).
    #[serde(default)]
    pub window: Vec<NtbWindowSection>,
}

/// `[[ntb.window]]`: a BAR of a non-transparent bridge and where it lands on the far side.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NtbWindowSection {
    /// "up" (a BAR in the domain above: TLPs into it cross downward) or "down" (a BAR the
    /// host below sees: TLPs into it cross upward).
    pub side: SideWord,
    /// BAR address in that side's domain, e.g. "0x8000_0000" (a multiple of size).
    #[schemars(pattern(units::ADDRESS_PATTERN))]
    pub base: String,
    /// Window size, a power of two, e.g. "256MiB".
    #[schemars(pattern(units::ADDRESS_PATTERN))]
    pub size: String,
    /// Address on the far side that base maps to, e.g. "0x1_0000_0000" (a multiple of size).
    #[schemars(pattern(units::ADDRESS_PATTERN))]
    pub translate: String,
}

/// Adds the `[[ntb]]` sections to `nodes`.
pub fn ntbs(sections: &[NtbSection], nodes: &mut NodeTable) -> Result<(), BuildError> {
    for (i, nt) in sections.iter().enumerate() {
        let place = Place::element("ntb", i, &nt.name);
        let kind = NodeKind::Ntb {
            latency: values::duration(&place, "latency", &nt.latency)?,
            windows: windows(&place, &nt.window)?,
        };
        let credits = values::credits(&place, &nt.credits, DEFAULT_SWITCH_CREDITS)?;
        nodes.add(
            &place,
            NodeSpec {
                name: nt.name.clone(),
                kind,
                credits,
                completion_timeout: None,
            },
        )?;
    }
    Ok(())
}

/// An NTB's `[[ntb.window]]` tables, checked: a power-of-two size, and base and translation
/// aligned to it (a BAR is naturally aligned; the translation register ignores the bits below
/// the size). Overlaps are checked per domain, in [`WindowMap::new`].
fn windows(place: &Place, sections: &[NtbWindowSection]) -> Result<Vec<NtbWindow>, BuildError> {
    let mut out: Vec<NtbWindow> = Vec::new();
    for (k, w) in sections.iter().enumerate() {
        let place = place.window(k);
        let base = units::parse_address("base", &w.base).map_err(at(&place))?;
        let size = units::parse_address("size", &w.size).map_err(at(&place))?;
        let translate = units::parse_address("translate", &w.translate).map_err(at(&place))?;
        if !size.is_power_of_two() {
            return Err(BuildError::not_allowed(
                &place,
                "size",
                format!("{:?}", w.size),
                "a power of two (a BAR's size), e.g. \"1MiB\"",
            ));
        }
        for (key, v, text) in [
            ("base", base, &w.base),
            ("translate", translate, &w.translate),
        ] {
            if v % size != 0 || v.checked_add(size - 1).is_none() {
                return Err(BuildError::not_allowed(
                    &place,
                    key,
                    format!("{text:?}"),
                    format!(
                        "a multiple of the window size ({size:#x} B) that leaves room for it below 2^64"
                    ),
                ));
            }
        }
        out.push(NtbWindow {
            side: w.side.into(),
            base,
            size,
            translate,
        });
    }
    Ok(out)
}

/// The address domain of node `n`: the root complex it sits under (itself for a root
/// complex), or `nodes.len() + b` below a bridge `b` with no root complex in between.
fn domain_of(n: NodeId, nodes: &[NodeSpec], topology: &Topology) -> usize {
    let mut cur = n;
    loop {
        if matches!(nodes[cur].kind, NodeKind::RootComplex { .. }) {
            return cur;
        }
        let Some(up) = topology.up(cur) else {
            return cur;
        };
        if matches!(nodes[up].kind, NodeKind::Ntb { .. }) {
            return nodes.len() + up;
        }
        cur = up;
    }
}

/// A bridge's window with the domain its BAR sits in and the domain it leads to.
struct PlacedWindow {
    /// The bridge.
    bridge: NodeId,
    /// The window.
    window: NtbWindow,
    /// The domain of its BAR.
    here: usize,
    /// The domain beyond.
    there: usize,
}

/// Where a transfer ends up after the windows it crosses.
struct Landing {
    /// The domain it reaches.
    domain: usize,
    /// Its address there.
    address: u64,
    /// Each bridge crossed, with the address beyond it.
    crossings: Vec<(NodeId, u64)>,
}

/// Every bridge window with the domain it sits in and the domain it leads to.
pub struct WindowMap {
    windows: Vec<PlacedWindow>,
    /// The domain of each node.
    domain: Vec<usize>,
}

impl WindowMap {
    /// Places every window; windows in one domain must not overlap.
    pub fn new(nodes: &[NodeSpec], topology: &Topology) -> Result<Self, BuildError> {
        let domain: Vec<usize> = (0..nodes.len())
            .map(|n| domain_of(n, nodes, topology))
            .collect();
        let mut windows: Vec<PlacedWindow> = Vec::new();
        for (b, node) in nodes.iter().enumerate() {
            let NodeKind::Ntb { windows: ws, .. } = &node.kind else {
                continue;
            };
            let above = domain[b];
            let below = topology
                .below(b)
                .next()
                .map_or(nodes.len() + b, |d| domain[d]);
            for w in ws {
                let (here, there) = match w.side {
                    NtbSide::Up => (above, below),
                    NtbSide::Down => (below, above),
                };
                if let Some(o) = windows.iter().find(|o| {
                    o.here == here
                        && o.window.base < w.base + w.size
                        && w.base < o.window.base + o.window.size
                }) {
                    return Err(BuildError::conflict(
                        &Place::named("ntb", &node.name),
                        format!(
                            "its window at {:#x} overlaps a window of {:?} at {:#x} in the same \
                             address domain; BARs in one domain need disjoint ranges",
                            w.base, nodes[o.bridge].name, o.window.base
                        ),
                    ));
                }
                windows.push(PlacedWindow {
                    bridge: b,
                    window: *w,
                    here,
                    there,
                });
            }
        }
        Ok(WindowMap { windows, domain })
    }

    /// Follows `addr` (a transfer of `len` bytes issued in `source`'s domain) through the
    /// bridges' windows to the root complex whose memory it reaches.
    pub fn resolve(
        &self,
        place: &Place,
        text: &str,
        addr: u64,
        len: u64,
        source: NodeId,
        nodes: &[NodeSpec],
    ) -> Result<(NodeId, AddressPath), BuildError> {
        let Landing {
            domain: dom,
            address: a,
            crossings,
        } = self.cross(place, text, addr, len, self.domain[source], nodes)?;
        if dom == source {
            let problem = if crossings.is_empty() {
                format!(
                    "target_address {text} is {:?}'s own memory: no window of a \
                     non-transparent bridge in its domain claims it (windows there: {})",
                    nodes[source].name,
                    self.listing(dom)
                )
            } else {
                format!(
                    "target_address {text} comes back to {:?}'s own memory through {}; a \
                     flow must leave its domain",
                    nodes[source].name,
                    bridge_path(&crossings, nodes)
                )
            };
            return Err(BuildError::conflict(place, problem));
        }
        if dom >= nodes.len() {
            return Err(BuildError::conflict(
                place,
                format!(
                    "target_address {text} reaches the domain below {:?} at {a:#x}, which \
                     has no root complex whose memory it could be",
                    nodes[dom - nodes.len()].name
                ),
            ));
        }
        Ok((
            dom,
            AddressPath {
                address: addr,
                crossings,
            },
        ))
    }

    /// Crosses windows from domain `dom` while one claims the transfer: the domain and the
    /// address it ends in, and each bridge crossed with the address beyond it.
    fn cross(
        &self,
        place: &Place,
        text: &str,
        addr: u64,
        len: u64,
        mut dom: usize,
        nodes: &[NodeSpec],
    ) -> Result<Landing, BuildError> {
        let mut a = addr;
        let mut crossings: Vec<(NodeId, u64)> = Vec::new();
        while let Some((o, next)) = self
            .windows
            .iter()
            .filter(|o| o.here == dom)
            .find_map(|o| Some((o, o.window.translate(a, len)?)))
        {
            let Ok(next) = next else {
                return Err(BuildError::conflict(
                    place,
                    format!(
                        "the {len}-byte transfer at {a:#x} runs past the end of {:?}'s window \
                         {:#x}..{:#x}; move target_address or enlarge the window",
                        nodes[o.bridge].name,
                        o.window.base,
                        o.window.base + o.window.size
                    ),
                ));
            };
            crossings.push((o.bridge, next));
            if crossings.len() > self.windows.len() {
                return Err(BuildError::conflict(
                    place,
                    format!(
                        "target_address {text} is translated round in a loop by the bridges' \
                         windows ({})",
                        bridge_path(&crossings, nodes)
                    ),
                ));
            }
            dom = o.there;
            a = next;
        }
        Ok(Landing {
            domain: dom,
            address: a,
            crossings,
        })
    }

    /// The windows whose BARs lie in domain `dom`, for messages.
    fn listing(&self, dom: usize) -> String {
        let v: Vec<String> = self
            .windows
            .iter()
            .filter(|o| o.here == dom)
            .map(|o| format!("{:#x}..{:#x}", o.window.base, o.window.base + o.window.size))
            .collect();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    }
}

/// The bridges crossed, for messages: "nt1 -> nt2".
fn bridge_path(crossings: &[(NodeId, u64)], nodes: &[NodeSpec]) -> String {
    crossings
        .iter()
        .map(|(b, _)| nodes[*b].name.as_str())
        .collect::<Vec<_>>()
        .join(" -> ")
}
