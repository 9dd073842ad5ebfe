//! Root complexes, switches, host bridges and the host CPU: their sections and the nodes they
//! become, plus the table of nodes by name that links and workloads resolve against.

use std::collections::{BTreeMap, HashMap};

use schemars::JsonSchema;
use serde::Deserialize;

use super::error::{at, BuildError, Place};
use super::host_memory::{host_memory, IommuWord, PageSizeWord, SocketWord};
use super::links::Topology;
use super::values::{self, defaults, words, CreditsSection, LatencyValue};
use super::{DEFAULT_ROOT_CREDITS, DEFAULT_SWITCH_CREDITS};
use crate::engine::SimTime;
use crate::fabric::{
    Arbitration, CompletionRule, Core, CpuSpec, Forwarding, HostBridgeSpec, NodeId, NodeKind,
    NodeSpec, PeerForwarding,
};
use crate::pcie::phy;
use crate::units;

defaults! {
    default_port_queue: i64 = 4;
    default_completion_timeout: String = "50ms";
    default_switch_latency: String = "150ns";
    default_zero_ns: String = "0ns";
    default_one: i64 = 1;
    default_interrupt_cost: String = "1us";
    default_writes_per_interrupt: i64 = 2;
    default_posted_depth: i64 = 16;
    default_llc_ways: i64 = 20;
    default_llc_hit_latency: String = "100ns";
    default_ddio_ways: i64 = 2;
    default_true: bool = true;
    default_iotlb_entries: i64 = 64;
    default_walk_latency: String = "280ns";
    default_walkers: i64 = 5;
    default_root_tags: i64 = 32;
    default_remote_latency: String = "53ns";
}

/// The memory read latency of a root complex left without one.
fn default_read_latency() -> LatencyValue {
    LatencyValue::Fixed("500ns".into())
}

/// The credits of a root port, as a file would write them.
fn root_credits() -> CreditsSection {
    CreditsSection::written(DEFAULT_ROOT_CREDITS)
}

/// The credits of a switch port, as a file would write them.
fn switch_credits() -> CreditsSection {
    CreditsSection::written(DEFAULT_SWITCH_CREDITS)
}

words! {
    /// Completion sizes a root complex uses.
    pub enum CompletionWord for "completion" default Rcb => CompletionRule {
        /// One completion per RCB-aligned block.
        Rcb = "rcb",
        /// Completions up to MPS, split at RCB-aligned addresses.
        Mps = "mps",
    }
}

words! {
    /// How a root complex queues the TLPs of its root ports.
    pub enum OutboundQueueWord for "outbound_queue" default PerPort {
        /// Each root port queues its own TLPs.
        PerPort = "per_port",
        /// One queue in issue order feeds every root port.
        Shared = "shared",
    }
}

words! {
    /// What a root complex does with peer-to-peer TLPs between its root ports.
    pub enum P2pWord for "p2p" default Forward {
        /// Forward them, at `p2p_bandwidth` after `p2p_latency`.
        Forward = "forward",
        /// Refuse them: a workload whose path needs it is refused at load time.
        Refuse = "refuse",
    }
}

words! {
    /// How a switch forwards a TLP.
    pub enum ForwardingWord for "forwarding" default CutThrough => Forwarding {
        /// Start on the egress port once the header is in.
        CutThrough = "cut-through",
        /// Receive the whole TLP first.
        StoreAndForward = "store-and-forward",
    }
}

words! {
    /// A switch's internal fabric.
    pub enum CoreWord for "core" default Crossbar {
        /// Non-blocking: only egress ports contend.
        Crossbar = "crossbar",
        /// One shared bus every TLP crosses, at `core_bandwidth`.
        SharedBus = "shared-bus",
    }
}

words! {
    /// Which ingress port a switch's egress port serves next.
    pub enum ArbitrationWord for "arbitration" default RoundRobin {
        /// One TLP per ingress port in turn.
        RoundRobin = "round-robin",
        /// `weights` TLPs per turn.
        Weighted = "weighted",
        /// The oldest ready TLP of all ingress ports first.
        Oldest = "oldest",
    }
}

/// `[[root_complex]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RootComplexSection {
    /// Unique node name.
    pub name: String,
    /// Memory read latency (default "500ns").
    #[serde(default = "default_read_latency")]
    pub memory_read_latency: LatencyValue,
    /// Memory bandwidth shared by reads and writes, e.g. "2.5GB/s" (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub memory_bandwidth: Option<String>,
    /// Rate at which it sinks posted write data, before the memory, e.g. "1.6GB/s"
    /// (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub posted_write_rate: Option<String>,
    /// Name of a `[[host_bridge]]` between this root complex and memory.
    pub host_bridge: Option<String>,
    /// Completion sizes: "rcb" (one per RCB block) or "mps" (default "rcb").
    #[serde(default)]
    pub completion: CompletionWord,
    /// "per_port" (each root port queues its own TLPs) or "shared" (one queue in issue order
    /// feeds every root port; a TLP its port cannot take holds the rest back); default
    /// "per_port".
    #[serde(default)]
    pub outbound_queue: OutboundQueueWord,
    /// With a shared outbound queue: TLPs each root port holds beyond it (default 4).
    #[schemars(default = "default_port_queue")]
    pub port_queue: Option<i64>,
    /// Reads its CPUs keep outstanding at once (uncached reads of a bridge's scratchpad, a
    /// memory endpoint's BAR or a device's registers), 1 to 768: the tags of its own read
    /// requests (default 32).
    #[schemars(default = "default_root_tags")]
    pub tags: Option<i64>,
    /// How long its CPU waits for the completions of a read (of a bridge's scratchpad)
    /// before it gives up on it, frees its tag and counts a completion timeout: 50us to
    /// 64s, or "off" (default "50ms", the top of the spec's default range).
    #[schemars(default = "default_completion_timeout")]
    #[schemars(pattern(units::DURATION_OR_OFF_PATTERN))]
    pub completion_timeout: Option<String>,
    /// Credits its root ports advertise.
    #[schemars(default = "root_credits")]
    pub credits: Option<CreditsSection>,
    /// Rate its read data path returns completion data at, LLC hits included, e.g.
    /// "7GB/s" (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub read_bandwidth: Option<String>,
    /// Rate its data path passes read completion data and posted write data together, LLC
    /// hits included, e.g. "11GB/s": DMA reads and writes at once run slower than either
    /// alone (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub data_path_bandwidth: Option<String>,
    /// Host memory model: the last-level cache's size, e.g. "25MiB" (no LLC when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub llc_size: Option<String>,
    /// The LLC's ways per set (default 20).
    #[schemars(default = "default_llc_ways")]
    pub llc_ways: Option<i64>,
    /// Request to first data of a read that hits the LLC (default "100ns").
    #[schemars(default = "default_llc_hit_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub llc_hit_latency: Option<String>,
    /// From a device write's arrival until its LLC line holds the data: a later read of
    /// the line waits for it (default "0ns").
    #[schemars(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub llc_write_latency: Option<String>,
    /// LLC ways per set that device writes allocate into (DDIO; default 2, 0 is off).
    #[schemars(default = "default_ddio_ways")]
    pub ddio_ways: Option<i64>,
    /// Whether a device write that misses the LLC allocates its line (default true).
    #[schemars(default = "default_true")]
    pub ddio_write_allocate: Option<bool>,
    /// "off" or "on": translate device addresses through an IOMMU (default "off").
    #[schemars(default = "IommuWord::default")]
    pub iommu: Option<IommuWord>,
    /// IOTLB entries, fully associative (default 64).
    #[schemars(default = "default_iotlb_entries")]
    pub iotlb_entries: Option<i64>,
    /// "4KiB" or "2MiB": the IOMMU's page size (default "4KiB").
    #[schemars(default = "PageSizeWord::default")]
    pub iommu_page_size: Option<PageSizeWord>,
    /// Time of one IOMMU page walk (default "280ns").
    #[schemars(default = "default_walk_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub iommu_walk_latency: Option<String>,
    /// Page walks in progress at once (default 5).
    #[schemars(default = "default_walkers")]
    pub iommu_walkers: Option<i64>,
    /// Time a walk holds its walker, e.g. "260ns" (default: the whole walk): the walkers
    /// give iommu_walkers / iommu_walk_occupancy walks per second, each still taking
    /// iommu_walk_latency.
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub iommu_walk_occupancy: Option<String>,
    /// "local" or "remote": the socket the memory sits on (default "local").
    #[schemars(default = "SocketWord::default")]
    pub memory_socket: Option<SocketWord>,
    /// Added to each access that crosses to the other socket (default "53ns"); a line the
    /// other socket's cache holds costs twice it.
    #[schemars(default = "default_remote_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub remote_latency: Option<String>,
    /// Rate of the inter-socket link remote memory data cross, e.g. "19.2GB/s" (unlimited
    /// when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub socket_link_bandwidth: Option<String>,
    /// "forward" or "refuse": peer-to-peer TLPs between its root ports (default "forward").
    #[schemars(default = "P2pWord::default")]
    pub p2p: Option<P2pWord>,
    /// Payload rate of the peer-to-peer TLPs it forwards, e.g. "12GB/s" (unlimited when left
    /// out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub p2p_bandwidth: Option<String>,
    /// Added to each peer-to-peer TLP it forwards, after its last byte is in (default "0ns").
    #[schemars(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub p2p_latency: Option<String>,
}

/// `[[switch]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchSection {
    /// Unique node name.
    pub name: String,
    /// "cut-through" or "store-and-forward" (default "cut-through").
    #[serde(default)]
    pub forwarding: ForwardingWord,
    /// Port-to-port latency (default "150ns").
    #[serde(default = "default_switch_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub latency: String,
    /// Latency by the narrower port's width, e.g. { 4 = "200ns" }.
    #[schemars(extend("additionalProperties" = { "type": "string", "pattern": units::DURATION_PATTERN }))]
    pub latency_by_width: Option<BTreeMap<String, String>>,
    /// "crossbar" or "shared-bus" (default "crossbar").
    #[serde(default)]
    pub core: CoreWord,
    /// Bandwidth of a shared-bus core, e.g. "4GB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub core_bandwidth: Option<String>,
    /// "round-robin", "weighted" or "oldest" (the oldest ready TLP of all ingress ports
    /// first); default "round-robin".
    #[serde(default)]
    pub arbitration: ArbitrationWord,
    /// Weighted arbitration: TLPs per turn by neighbour node name (1 for a neighbour left
    /// out).
    pub weights: Option<BTreeMap<String, i64>>,
    /// Credits every port advertises.
    #[schemars(default = "switch_credits")]
    pub credits: Option<CreditsSection>,
    /// Whether its downstream ports send peer-to-peer TLPs up toward the root complex (ACS
    /// redirect) instead of across (default false; a `[[link]]` below may set its own port).
    #[serde(default)]
    pub acs_redirect: bool,
}

/// `[[host_bridge]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostBridgeSection {
    /// Unique name.
    pub name: String,
    /// Bandwidth shared by every root complex behind it, e.g. "2.5GB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub bandwidth: String,
    /// Latency added each way (default "0ns").
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub latency: String,
}

/// `[cpu]`: the host CPU and OS that bridge Ethernet frames.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuSection {
    /// The root complex the CPU sits behind (the first one when left out).
    pub root: Option<String>,
    /// Cores taking NIC interrupts (default 1).
    #[serde(default = "default_one")]
    pub cores: i64,
    /// Software cost per bridged frame, e.g. "2us".
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub frame_cost: String,
    /// Software cost per byte, e.g. "1ns" (default "0ns").
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub byte_cost: String,
    /// Cost of taking an interrupt (default "1us").
    #[serde(default = "default_interrupt_cost")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub interrupt_cost: String,
    /// Blocking register reads per interrupt (default 1).
    #[serde(default = "default_one")]
    pub reads_per_interrupt: i64,
    /// Register writes per frame; the first rings the transmit doorbell (default 1).
    #[serde(default = "default_one")]
    pub writes_per_frame: i64,
    /// Register writes at the end of an interrupt, at least 1 (default 2).
    #[serde(default = "default_writes_per_interrupt")]
    pub writes_per_interrupt: i64,
    /// Register writes the root complex holds before the CPU stalls (default 16).
    #[serde(default = "default_posted_depth")]
    pub posted_depth: i64,
}

/// The nodes built so far, in file order, with their names.
#[derive(Default)]
pub struct NodeTable {
    nodes: Vec<NodeSpec>,
    ids: HashMap<String, NodeId>,
}

impl NodeTable {
    /// Adds `node`, whose section is at `place`; its name must be new.
    pub fn add(&mut self, place: &Place, node: NodeSpec) -> Result<NodeId, BuildError> {
        if self.ids.contains_key(&node.name) {
            return Err(BuildError::Duplicate {
                place: place.clone(),
                what: "node name",
                name: node.name,
            });
        }
        let id = self.nodes.len();
        self.ids.insert(node.name.clone(), id);
        self.nodes.push(node);
        Ok(id)
    }

    /// The node called `name`, if any.
    pub fn id(&self, name: &str) -> Option<NodeId> {
        self.ids.get(name).copied()
    }

    /// The node that `key` at `place` names, or an error listing the known nodes.
    pub fn lookup(
        &self,
        place: &Place,
        key: &'static str,
        name: &str,
    ) -> Result<NodeId, BuildError> {
        self.id(name).ok_or_else(|| BuildError::UnknownNode {
            place: place.clone(),
            key,
            name: name.to_string(),
            known: self.known(),
            guess: crate::error::did_you_mean(name, self.nodes.iter().map(|n| n.name.as_str())),
        })
    }

    /// Every node name, sorted, for messages.
    pub fn known(&self) -> String {
        let mut v: Vec<&str> = self.nodes.iter().map(|n| n.name.as_str()).collect();
        v.sort();
        v.join(", ")
    }

    /// The nodes, indexed by [`NodeId`].
    pub fn nodes(&self) -> &[NodeSpec] {
        &self.nodes
    }

    /// The nodes, for the last touches once the links are known.
    pub fn nodes_mut(&mut self) -> &mut [NodeSpec] {
        &mut self.nodes
    }

    /// The finished list of nodes.
    pub fn into_nodes(self) -> Vec<NodeSpec> {
        self.nodes
    }
}

/// Checks the `[[host_bridge]]` sections.
pub fn host_bridges(sections: &[HostBridgeSection]) -> Result<Vec<HostBridgeSpec>, BuildError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::with_capacity(sections.len());
    for (i, b) in sections.iter().enumerate() {
        let place = Place::element("host_bridge", i, &b.name);
        if !seen.insert(b.name.as_str()) {
            return Err(BuildError::Duplicate {
                place,
                what: "name",
                name: b.name.clone(),
            });
        }
        out.push(HostBridgeSpec {
            name: b.name.clone(),
            bandwidth: values::rate(&place, "bandwidth", &b.bandwidth)?,
            latency: values::duration(&place, "latency", &b.latency)?,
        });
    }
    Ok(out)
}

/// Adds the `[[root_complex]]` sections to `nodes`.
pub fn root_complexes(
    sections: &[RootComplexSection],
    host_bridges: &[HostBridgeSpec],
    nodes: &mut NodeTable,
) -> Result<(), BuildError> {
    for (i, rc) in sections.iter().enumerate() {
        let place = Place::element("root_complex", i, &rc.name);
        let host_bridge = match &rc.host_bridge {
            None => None,
            Some(name) => Some(host_bridge_of(&place, name, host_bridges)?),
        };
        let memory_bandwidth =
            values::optional_rate(&place, "memory_bandwidth", &rc.memory_bandwidth)?;
        let host_memory = host_memory(&place, rc, memory_bandwidth)?;
        let kind = NodeKind::RootComplex {
            read_latency: values::latency(&place, &rc.memory_read_latency)?,
            memory_bandwidth: memory_bandwidth.filter(|_| host_memory.is_none()),
            read_bandwidth: values::optional_rate(&place, "read_bandwidth", &rc.read_bandwidth)?,
            data_path_bandwidth: values::optional_rate(
                &place,
                "data_path_bandwidth",
                &rc.data_path_bandwidth,
            )?,
            host_memory,
            p2p: peer_forwarding(&place, rc)?,
            posted_write_rate: values::optional_rate(
                &place,
                "posted_write_rate",
                &rc.posted_write_rate,
            )?,
            host_bridge,
            completion: rc.completion.into(),
            shared_outbound: match (rc.outbound_queue, rc.port_queue) {
                (OutboundQueueWord::Shared, q) => Some(values::small_count(
                    &place,
                    "port_queue",
                    q.unwrap_or_else(default_port_queue),
                    1,
                )?),
                (OutboundQueueWord::PerPort, Some(_)) => {
                    return Err(BuildError::conflict(
                        &place,
                        "port_queue applies only with outbound_queue = \"shared\"",
                    ))
                }
                (OutboundQueueWord::PerPort, None) => None,
            },
            read_tags: values::count(
                &place,
                "tags",
                rc.tags.unwrap_or_else(default_root_tags),
                1..=768,
                "1 to 768 (10-bit tags)",
            )?,
        };
        let credits = values::credits(&place, &rc.credits, DEFAULT_ROOT_CREDITS)?;
        nodes.add(
            &place,
            NodeSpec {
                name: rc.name.clone(),
                kind,
                credits,
                completion_timeout: values::completion_timeout(&place, &rc.completion_timeout)?,
            },
        )?;
    }
    Ok(())
}

/// A root complex's peer-to-peer forwarding: None where it refuses it (then its bandwidth
/// and latency keys are refused too).
fn peer_forwarding(
    place: &Place,
    rc: &RootComplexSection,
) -> Result<Option<PeerForwarding>, BuildError> {
    if rc.p2p == Some(P2pWord::Refuse) {
        if let Some(key) = [("p2p_bandwidth", rc.p2p_bandwidth.is_some())]
            .into_iter()
            .chain([("p2p_latency", rc.p2p_latency.is_some())])
            .find_map(|(k, set)| set.then_some(k))
        {
            return Err(BuildError::conflict(
                place,
                format!("{key} applies only with p2p = \"forward\""),
            ));
        }
        return Ok(None);
    }
    Ok(Some(PeerForwarding {
        bandwidth: values::optional_rate(place, "p2p_bandwidth", &rc.p2p_bandwidth)?,
        latency: match &rc.p2p_latency {
            Some(l) => values::duration(place, "p2p_latency", l)?,
            None => SimTime::ZERO,
        },
    }))
}

/// The index of the host bridge called `name`.
fn host_bridge_of(
    place: &Place,
    name: &str,
    bridges: &[HostBridgeSpec],
) -> Result<usize, BuildError> {
    bridges.iter().position(|b| b.name == name).ok_or_else(|| {
        let known: Vec<&str> = bridges.iter().map(|b| b.name.as_str()).collect();
        let known = if known.is_empty() {
            "none".to_string()
        } else {
            known.join(", ")
        };
        BuildError::conflict(
            place,
            format!("host_bridge {name:?} is not a [[host_bridge]]; known: {known}"),
        )
    })
}

/// A weighted switch's weights by neighbour name, resolved to ports once the links are known.
pub struct PendingWeights {
    switch: NodeId,
    weights: BTreeMap<String, i64>,
    place: Place,
}

/// Adds the `[[switch]]` sections to `nodes`; returns the weights still to resolve.
pub fn switches(
    sections: &[SwitchSection],
    nodes: &mut NodeTable,
) -> Result<Vec<PendingWeights>, BuildError> {
    let mut pending = Vec::new();
    for (i, sw) in sections.iter().enumerate() {
        let place = Place::element("switch", i, &sw.name);
        let latency_by_width = latency_by_width(&place, &sw.latency_by_width)?;
        let core = match (sw.core, &sw.core_bandwidth) {
            (CoreWord::Crossbar, Some(_)) => {
                return Err(BuildError::conflict(
                    &place,
                    "core_bandwidth needs core = \"shared-bus\"",
                ))
            }
            (CoreWord::Crossbar, None) => Core::Crossbar,
            (CoreWord::SharedBus, Some(b)) => {
                Core::SharedBus(values::rate(&place, "core_bandwidth", b)?)
            }
            (CoreWord::SharedBus, None) => {
                return Err(BuildError::conflict(
                    &place,
                    "core = \"shared-bus\" needs core_bandwidth (e.g. \"4GB/s\")",
                ))
            }
        };
        // Weights are resolved to ports once every link is known.
        let arbitration = match sw.arbitration {
            ArbitrationWord::RoundRobin => Arbitration::RoundRobin,
            ArbitrationWord::Weighted => Arbitration::Weighted(Vec::new()),
            ArbitrationWord::Oldest => Arbitration::Oldest,
        };
        let weighted = sw.arbitration == ArbitrationWord::Weighted;
        if !weighted && sw.weights.is_some() {
            return Err(BuildError::conflict(
                &place,
                "weights need arbitration = \"weighted\"",
            ));
        }
        let kind = NodeKind::Switch {
            forwarding: sw.forwarding.into(),
            latency: values::duration(&place, "latency", &sw.latency)?,
            latency_by_width,
            core,
            arbitration,
            acs_redirect: sw.acs_redirect,
        };
        let credits = values::credits(&place, &sw.credits, DEFAULT_SWITCH_CREDITS)?;
        let id = nodes.add(
            &place,
            NodeSpec {
                name: sw.name.clone(),
                kind,
                credits,
                completion_timeout: None,
            },
        )?;
        if weighted {
            pending.push(PendingWeights {
                switch: id,
                weights: sw.weights.clone().unwrap_or_default(),
                place,
            });
        }
    }
    Ok(pending)
}

/// A switch's `latency_by_width`: lane widths and their latencies.
fn latency_by_width(
    place: &Place,
    table: &Option<BTreeMap<String, String>>,
) -> Result<Vec<(u32, SimTime)>, BuildError> {
    let mut out = Vec::new();
    for (w, l) in table.iter().flatten() {
        let width = w
            .parse::<i64>()
            .map_err(|_| {
                BuildError::conflict(
                    place,
                    format!(
                        "latency_by_width key {w:?} is not a lane width; allowed: 1, 2, 4, 8, 12, 16, 32"
                    ),
                )
            })
            .and_then(|n| phy::check_width(n).map_err(at(place)))?;
        out.push((width, values::duration(place, "latency_by_width", l)?));
    }
    Ok(out)
}

/// Resolves weighted switches' weights to ports: the upstream port first, then the downstream
/// links in file order; a neighbour left out gets 1.
pub fn resolve_weights(
    pending: Vec<PendingWeights>,
    nodes: &mut NodeTable,
    topology: &Topology,
) -> Result<(), BuildError> {
    for PendingWeights {
        switch,
        weights,
        place,
    } in pending
    {
        let ports: Vec<NodeId> = topology
            .up(switch)
            .into_iter()
            .chain(topology.below(switch))
            .collect();
        let name = |p: NodeId| nodes.nodes()[p].name.as_str();
        if let Some(stranger) = weights
            .keys()
            .find(|w| !ports.iter().any(|&p| name(p) == *w))
        {
            return Err(BuildError::conflict(
                &place,
                format!("weights names {stranger:?}, which is not a neighbour of this switch"),
            ));
        }
        let w = ports
            .iter()
            .map(|&p| {
                let v = weights.get(name(p)).copied().unwrap_or(1);
                values::count(&place, "weights", v, 1..=255, "1 to 255 TLPs per turn")
            })
            .collect::<Result<Vec<u32>, _>>()?;
        if let NodeKind::Switch { arbitration, .. } = &mut nodes.nodes_mut()[switch].kind {
            *arbitration = Arbitration::Weighted(w);
        }
    }
    Ok(())
}

/// Checks the `[cpu]` section.
pub fn cpu(c: &CpuSection, nodes: &NodeTable) -> Result<CpuSpec, BuildError> {
    let place = Place::table("cpu");
    let is_root = |n: &NodeSpec| matches!(n.kind, NodeKind::RootComplex { .. });
    let root =
        match &c.root {
            Some(r) => nodes.lookup(&place, "root", r)?,
            None => nodes.nodes().iter().position(is_root).ok_or_else(|| {
                BuildError::conflict(&place, "the scenario has no [[root_complex]]")
            })?,
        };
    if !is_root(&nodes.nodes()[root]) {
        return Err(BuildError::conflict(
            &place,
            format!("root {:?} is not a root complex", nodes.nodes()[root].name),
        ));
    }
    let count = |key, v, min| values::small_count(&place, key, v, min);
    let byte_cost = values::duration(&place, "byte_cost", &c.byte_cost)?;
    Ok(CpuSpec {
        root,
        cores: count("cores", c.cores, 1)?,
        frame_cost: values::duration(&place, "frame_cost", &c.frame_cost)?,
        byte_cost_ps: byte_cost.ticks() as f64 / SimTime::TICKS_PER_PS as f64,
        interrupt_cost: values::duration(&place, "interrupt_cost", &c.interrupt_cost)?,
        reads_per_interrupt: count("reads_per_interrupt", c.reads_per_interrupt, 0)?,
        writes_per_frame: count("writes_per_frame", c.writes_per_frame, 0)?,
        writes_per_interrupt: count("writes_per_interrupt", c.writes_per_interrupt, 1)?,
        posted_depth: count("posted_depth", c.posted_depth, 1)?,
    })
}
