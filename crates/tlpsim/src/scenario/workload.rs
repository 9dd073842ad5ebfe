//! `[[workload]]` sections, one section type per `kind`, and the flows they become: DMA
//! transfers, Iometer-style storage I/Os, Ethernet frames bridged by the host CPU, a GPU's
//! memory copies.

use schemars::JsonSchema;
use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;

use super::error::{at, BuildError, Place};
use super::file::Tagged;
use super::links::Topology;
use super::nodes::NodeTable;
use super::ntb::WindowMap;
use super::nvme::{fio, FioWorkloadSection};
use super::values::{self, defaults, words};
use super::DEFAULT_OUTSTANDING;
use crate::fabric::{
    AddressPath, AddressPattern, Addresses, BridgeSpec, CacheState, CopyDirection, DmaDirection,
    Doorbell, NodeId, NodeKind, NodeSpec, PcieSettings, SocketLinkSpec, StorageMix, TargetKind,
    WorkloadSpec, CACHE_LINE, SCRATCHPAD_BYTES,
};
use crate::pcie::tlp::Addressing;
use crate::units;

defaults! {
    default_outstanding: i64 = DEFAULT_OUTSTANDING;
    default_zero: i64 = 0;
    default_copy_size: String = "512MiB";
}

/// The largest window a workload's transfers may walk over (2 GiB: a TLP's address, an
/// offset into the buffer, stays below 4 GiB).
const MAX_WINDOW: u64 = 1 << 31;

words! {
    /// What a workload moves.
    pub enum WorkloadKind for "kind" {
        /// DMA transfers.
        Dma = "dma",
        /// Iometer-style I/Os on a storage endpoint.
        Storage = "storage",
        /// Ethernet frames offered on a NIC's ports, bridged by the `[cpu]`.
        Bridge = "bridge",
        /// fio jobs on an NVMe drive.
        Fio = "fio",
        /// A GPU's memory copies (cudaMemcpy by its copy engines).
        Memcpy = "memcpy",
    }
}

words! {
    /// What a GPU's memcpy workload copies.
    pub enum CopyWord for "direction" {
        /// Host to device: the GPU's copy engines read host memory.
        H2d = "h2d",
        /// Device to host: the GPU's copy engines write host memory.
        D2h = "d2h",
        /// Both at once, as two flows (NAME.h2d and NAME.d2h).
        Both = "both",
        /// Into the target peer's BAR: the copy engines write it.
        Write = "write",
        /// From the target peer's BAR: the copy engines read it.
        Read = "read",
    }
}

words! {
    /// What a DMA workload moves.
    pub enum DirectionWord for "direction" => DmaDirection {
        /// Reads from the target's memory.
        Read = "read",
        /// Writes to the target's memory.
        Write = "write",
        /// Both at once.
        Both = "both",
        /// One stream of transfers alternating write, read, write, ...
        Alternate = "alternate",
        /// Each transfer a write, then a read of the same address.
        WriteRead = "write-read",
    }
}

words! {
    /// The order in which transfers visit a window's slots.
    pub enum PatternWord for "pattern" default Sequential => AddressPattern {
        /// One slot after the other.
        Sequential = "sequential",
        /// A slot drawn at random (from the run's seed) for each transfer.
        Random = "random",
    }
}

words! {
    /// The host's caches for a workload's window at the start.
    pub enum CacheWord for "cache" default Warm => CacheState {
        /// The host CPU touched the window first.
        Warm = "warm",
        /// The host's caches were thrashed first.
        Cold = "cold",
        /// The device wrote the window first (its lines in the LLC's DDIO ways).
        DeviceWarm = "device-warm",
        /// The other socket's CPU touched the window first (its cache holds the lines).
        RemoteWarm = "remote-warm",
    }
}

/// `[[workload]]`: the section of its `kind`.
#[derive(Debug, Clone, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum WorkloadSection {
    /// `kind = "dma"`: DMA transfers.
    Dma(DmaWorkloadSection),
    /// `kind = "storage"`: Iometer-style I/Os on a storage endpoint.
    Storage(StorageWorkloadSection),
    /// `kind = "bridge"`: Ethernet frames offered on a NIC's ports, bridged by the `[cpu]`.
    Bridge(BridgeWorkloadSection),
    /// `kind = "fio"`: fio jobs on an NVMe drive.
    Fio(FioWorkloadSection),
    /// `kind = "memcpy"`: a GPU's memory copies.
    Memcpy(MemcpyWorkloadSection),
}

impl Tagged for WorkloadSection {
    type Kind = WorkloadKind;

    fn deserialize_kind<'de, D: Deserializer<'de>>(
        kind: WorkloadKind,
        d: D,
    ) -> Result<Self, D::Error> {
        Ok(match kind {
            WorkloadKind::Dma => WorkloadSection::Dma(Deserialize::deserialize(d)?),
            WorkloadKind::Storage => WorkloadSection::Storage(Deserialize::deserialize(d)?),
            WorkloadKind::Bridge => WorkloadSection::Bridge(Deserialize::deserialize(d)?),
            WorkloadKind::Fio => WorkloadSection::Fio(Deserialize::deserialize(d)?),
            WorkloadKind::Memcpy => WorkloadSection::Memcpy(Deserialize::deserialize(d)?),
        })
    }
}

/// The default of a workload's `enabled`: it runs.
pub(crate) fn default_enabled() -> bool {
    true
}

impl WorkloadSection {
    /// Whether it runs (`enabled`, default true).
    pub fn enabled(&self) -> bool {
        match self {
            WorkloadSection::Dma(w) => w.enabled,
            WorkloadSection::Storage(w) => w.enabled,
            WorkloadSection::Bridge(w) => w.enabled,
            WorkloadSection::Fio(w) => w.enabled,
            WorkloadSection::Memcpy(w) => w.enabled,
        }
    }

    /// The flow name.
    pub fn name(&self) -> &str {
        match self {
            WorkloadSection::Dma(w) => &w.name,
            WorkloadSection::Storage(w) => &w.name,
            WorkloadSection::Bridge(w) => &w.name,
            WorkloadSection::Fio(w) => &w.name,
            WorkloadSection::Memcpy(w) => &w.name,
        }
    }

    /// Its name, the node issuing its requests (`endpoint`) and the node it targets
    /// (`target`, where its kind has one), to rename when an endpoint is copied.
    pub fn names_mut(&mut self) -> (&mut String, &mut String, Option<&mut String>) {
        match self {
            WorkloadSection::Dma(w) => (&mut w.name, &mut w.endpoint, w.target.as_mut()),
            WorkloadSection::Storage(w) => (&mut w.name, &mut w.endpoint, w.target.as_mut()),
            WorkloadSection::Bridge(w) => (&mut w.name, &mut w.endpoint, None),
            WorkloadSection::Fio(w) => (&mut w.name, &mut w.endpoint, w.target.as_mut()),
            WorkloadSection::Memcpy(w) => (&mut w.name, &mut w.endpoint, w.target.as_mut()),
        }
    }

    /// The node issuing the requests.
    pub fn endpoint(&self) -> &str {
        match self {
            WorkloadSection::Dma(w) => &w.endpoint,
            WorkloadSection::Storage(w) => &w.endpoint,
            WorkloadSection::Bridge(w) => &w.endpoint,
            WorkloadSection::Fio(w) => &w.endpoint,
            WorkloadSection::Memcpy(w) => &w.endpoint,
        }
    }
}

/// `[[workload]]` with `kind = "dma"`: DMA transfers.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DmaWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name.
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The endpoint (or root complex, writes only) issuing the requests.
    pub endpoint: String,
    /// Whose memory (the root complex above the endpoint when left out).
    pub target: Option<String>,
    /// The root complex whose memory holds the host buffer, e.g. "rc1" (the root complex
    /// above the endpoint when left out); another socket's memory is reached across the
    /// `[[socket_link]]` between the two.
    pub memory: Option<String>,
    /// Instead of target: the address written or read, in the source's domain, e.g.
    /// "0x8000_0000"; non-transparent bridges' windows translate it into the domain whose
    /// root complex's memory it reaches.
    #[schemars(pattern(units::ADDRESS_PATTERN))]
    pub target_address: Option<String>,
    /// "read", "write", "both" (a read stream and a write stream), "alternate" (one stream:
    /// write, read, write, ...) or "write-read" (each transfer writes, then reads the same
    /// address); the last two run on a kind = "dma" endpoint.
    pub direction: DirectionWord,
    /// Bytes per transfer, e.g. "4KiB".
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub transfer_size: String,
    /// Transfers in flight (default 4), per stream; 1 with direction = "read" is
    /// pcie-bench's LAT_DMA_RD, with "write-read" its LAT_DMA_WRRD.
    #[serde(default = "default_outstanding")]
    pub outstanding: i64,
    /// Largest write TLP payload, e.g. "64B" for an x86 CPU or DMA engine writing whole
    /// cache lines (MPS when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub tlp_payload: Option<String>,
    /// Writes to a root complex behind a non-transparent bridge: ring the bridge's doorbell
    /// after every this many transfers (1 = a doorbell per frame); the bridge then sends an
    /// MSI to that root complex (no doorbell when left out).
    pub doorbell_every: Option<i64>,
    /// Bytes of host buffer the transfers walk over, e.g. "8KiB": slots of the transfer
    /// size plus `host_offset`, rounded up to 64 B, with a slot where a transfer would cross
    /// a 4 KiB boundary passed over (one slot, every transfer at the same address, when left
    /// out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub window: Option<String>,
    /// "sequential" or "random" (uniform over the window's slots, from the run's seed)
    /// (default "sequential").
    #[serde(default)]
    #[schemars(default = "PatternWord::default")]
    pub pattern: PatternWord,
    /// Bytes from the start of a slot (a 64 B-aligned address) to its transfer's first
    /// byte, 0 to 4095 (default 0).
    #[serde(default = "default_zero")]
    pub host_offset: i64,
    /// Address of a transfer's first byte in the device's memory, 0 to 4095 (default 0).
    #[serde(default = "default_zero")]
    pub device_offset: i64,
    /// The window's state at the start in the root complex's host memory model: "warm"
    /// (the host CPU touched it first), "cold" (its caches were thrashed), "device-warm" (in
    /// the LLC's DDIO ways) or "remote-warm" (the other socket's cache holds it); no effect
    /// on a root complex without that model (no `llc_size`, `iommu`, `memory_socket`)
    /// (default "warm").
    #[serde(default)]
    #[schemars(default = "CacheWord::default")]
    pub cache: CacheWord,
    /// Payload bytes per second each stream may offer, e.g. "50GB/s" or "400Gb/s", as fio's
    /// `rate`: "both" caps its read stream and its write stream at this each, "alternate"
    /// and "write-read" the reads and writes of their one stream together; a request waits
    /// until the bytes its stream requested before it would have taken this long at the
    /// rate, counted from the run's start (no cap when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub rate: Option<String>,
}

/// `[[workload]]` with `kind = "storage"`: Iometer-style I/Os on a storage endpoint.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StorageWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name.
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The storage endpoint issuing the DMA.
    pub endpoint: String,
    /// Whose memory (the root complex above the endpoint when left out).
    pub target: Option<String>,
    /// Instead of target: the address written or read, in the source's domain.
    #[schemars(pattern(units::ADDRESS_PATTERN))]
    pub target_address: Option<String>,
    /// Storage-write I/Os in flight (default 4).
    #[serde(default = "default_outstanding")]
    pub outstanding: i64,
    /// Percent of I/Os that are reads, 0 to 100.
    pub read_percent: i64,
    /// Bytes per read I/O, e.g. "310KB" (needed unless read_percent = 0).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub read_size: Option<String>,
    /// Bytes per write I/O, e.g. "2MB" (needed unless read_percent = 100).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub write_size: Option<String>,
    /// Random rather than sequential access (default false).
    #[serde(default)]
    pub random: bool,
    /// Largest write TLP payload, e.g. "64B" (MPS when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub tlp_payload: Option<String>,
    /// Ring a non-transparent bridge's doorbell after every this many transfers (no
    /// doorbell when left out).
    pub doorbell_every: Option<i64>,
}

/// `[[workload]]` with `kind = "bridge"`: Ethernet frames offered on both ports of a NIC.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BridgeWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name.
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The NIC whose ports the frames arrive on.
    pub endpoint: String,
    /// Ethernet frame size in bytes with CRC, 64 to 9018 (jumbo frames).
    pub frame_size: i64,
    /// Offered load per port, a fraction of line rate in (0, 1].
    pub load: f64,
}

/// `[[workload]]` with `kind = "memcpy"`: a GPU's copies, one after another in each
/// direction (a CUDA stream's cudaMemcpyAsync, as nvbandwidth runs them), each on one of
/// its copy engines.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemcpyWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name ("both" makes two flows, NAME.h2d and NAME.d2h).
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The GPU whose copy engines copy (an `[[endpoint]]` with kind = "gpu").
    pub endpoint: String,
    /// Without a target: "h2d" (its engines read host memory), "d2h" (they write it) or
    /// "both" (at once, two flows); with a target: "write" (into the peer's BAR) or "read"
    /// (from it) (default "write" with a target; needed without one).
    pub direction: Option<CopyWord>,
    /// A peer whose BAR the copies write or read (another GPU, or a kind = "memory"
    /// endpoint), peer to peer: through a switch both sit under, or across switches through
    /// a root complex with p2p = "forward"; host memory, the root complex above the GPU,
    /// when left out.
    pub target: Option<String>,
    /// Without a target: the root complex whose memory holds the host buffer, e.g. "rc1" (the root complex
    /// above the endpoint when left out); another socket's memory is reached across the
    /// `[[socket_link]]` between the two.
    pub memory: Option<String>,
    /// Bytes per copy, 1 B to 1 GiB; the copies repeat back to back for the whole run
    /// (default "512MiB", nvbandwidth's buffer).
    #[serde(default = "default_copy_size")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub size: String,
    /// Payload bytes per second each flow may copy, e.g. "20GB/s" (with "both", each of
    /// NAME.h2d and NAME.d2h): a request waits until the bytes before it would have taken
    /// this long at the rate, counted from the run's start (no cap when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub rate: Option<String>,
}

/// The fabric a workload runs on: every node, link and bridge window.
pub struct Fabric<'a> {
    /// The nodes by name.
    pub nodes: &'a NodeTable,
    /// The links.
    pub topology: &'a Topology,
    /// The inter-socket links between root complexes.
    pub socket_links: &'a [SocketLinkSpec],
    /// The bridges' windows, for `target_address`.
    pub windows: &'a WindowMap,
    /// MPS and addressing.
    pub pcie: &'a PcieSettings,
    /// Whether the scenario has a `[cpu]`.
    pub has_cpu: bool,
}

impl Fabric<'_> {
    fn node(&self, n: NodeId) -> &NodeSpec {
        &self.nodes.nodes()[n]
    }
}

/// Builds the `[[workload]]` sections.
pub fn workloads(
    sections: &[WorkloadSection],
    fabric: &Fabric,
) -> Result<Vec<WorkloadSpec>, BuildError> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::with_capacity(sections.len());
    // Flow names built so far, and fio jobs per drive: sets, so a file of many workloads
    // loads in linear time.
    let mut flows = std::collections::HashSet::with_capacity(sections.len());
    let mut jobs: std::collections::HashMap<usize, u32> = std::collections::HashMap::new();
    for (i, w) in sections.iter().enumerate() {
        let place = Place::element("workload", i, w.name());
        if !seen.insert(w.name()) {
            return Err(BuildError::Duplicate {
                place,
                what: "workload name",
                name: w.name().to_string(),
            });
        }
        if !w.enabled() {
            continue;
        }
        let source = fabric.nodes.lookup(&place, "endpoint", w.endpoint())?;
        let nvme = matches!(fabric.node(source).kind, NodeKind::Nvme { .. });
        if nvme && !matches!(w, WorkloadSection::Fio(_)) {
            return Err(BuildError::conflict(
                &place,
                format!(
                    "{:?} is an NVMe drive, which runs fio I/Os: give it a kind = \"fio\" \
                     workload",
                    w.endpoint()
                ),
            ));
        }
        // The jobs of earlier fio workloads on the same drive hold its first queue pairs.
        let earlier_jobs = jobs.get(&source).copied().unwrap_or(0);
        let built = match w {
            WorkloadSection::Dma(d) => vec![dma(&place, d, source, fabric)?],
            WorkloadSection::Storage(s) => vec![storage(&place, s, source, fabric)?],
            WorkloadSection::Bridge(b) => vec![bridge(&place, b, source, fabric)?],
            WorkloadSection::Memcpy(m) => memcpy(&place, m, source, fabric)?,
            WorkloadSection::Fio(f) => vec![fio(&place, f, source, earlier_jobs, fabric)?],
        };
        for spec in built {
            // A flow a memcpy names (NAME.h2d) may be another workload's name.
            if !flows.insert(spec.name.clone()) {
                return Err(BuildError::Duplicate {
                    place,
                    what: "workload name",
                    name: spec.name,
                });
            }
            if let Some(f) = spec.fio {
                *jobs.entry(spec.source).or_insert(0) += f.numjobs;
            }
            out.push(spec);
        }
    }
    Ok(out)
}

/// The keys a DMA and a storage workload share: where the requests go and how many.
struct Transfers<'a> {
    name: &'a str,
    endpoint: &'a str,
    target: &'a Option<String>,
    target_address: &'a Option<String>,
    outstanding: i64,
    tlp_payload: &'a Option<String>,
    doorbell_every: Option<i64>,
}

/// A DMA workload's address keys: its window, pattern and offsets.
fn addresses(
    place: &Place,
    d: &DmaWorkloadSection,
    transfer_size: u64,
) -> Result<Addresses, BuildError> {
    let offset = |key, v| values::count(place, key, v, 0..=4095, "0 to 4095 bytes");
    let host_offset = offset("host_offset", d.host_offset)? as u64;
    let device_offset = offset("device_offset", d.device_offset)? as u64;
    let mut a = Addresses::single(transfer_size + host_offset);
    a.pattern = d.pattern.into();
    a.host_offset = host_offset;
    a.device_offset = device_offset;
    if let Some(text) = &d.window {
        let w = values::bytes(place, "window", text)?;
        if w < a.slot || w > MAX_WINDOW {
            return Err(BuildError::not_allowed(
                place,
                "window",
                text,
                format!(
                    "{} B (one slot: transfer_size + host_offset rounded up to {CACHE_LINE} B) \
                     to 2 GiB",
                    a.slot
                ),
            ));
        }
        a.window = w / a.slot * a.slot;
    }
    Ok(a)
}

/// A DMA workload.
fn dma(
    place: &Place,
    d: &DmaWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    refuse_nic(place, &d.endpoint, source, fabric)?;
    let transfer_size = size(place, "transfer_size", &d.transfer_size)?;
    let memory_target = memory(place, &d.memory, [&d.target, &d.target_address], fabric)?;
    let keys = Transfers {
        name: &d.name,
        endpoint: &d.endpoint,
        target: if d.memory.is_some() {
            &memory_target
        } else {
            &d.target
        },
        target_address: &d.target_address,
        outstanding: d.outstanding,
        tlp_payload: &d.tlp_payload,
        doorbell_every: d.doorbell_every,
    };
    let direction: DmaDirection = d.direction.into();
    let dma_engine = matches!(
        fabric.node(source).kind,
        NodeKind::Endpoint {
            media: None,
            nic: None,
            ..
        }
    );
    if direction.mixed() && !dma_engine {
        return Err(BuildError::conflict(
            place,
            format!(
                "direction = \"{}\" runs on a DMA endpoint (kind = \"dma\"); {:?} is {}",
                d.direction.word(),
                d.endpoint,
                fabric.node(source).kind.noun()
            ),
        ));
    }
    let addresses = addresses(place, d, transfer_size)?;
    let mut spec = transfers(place, &keys, source, direction, transfer_size, None, fabric)?;
    if let (Some(text), TargetKind::BarMemory { bytes }) =
        (&d.window, fabric.node(spec.target).kind.as_target())
    {
        if addresses.window > bytes {
            return Err(BuildError::not_allowed(
                place,
                "window",
                text,
                format!(
                    "at most the {bytes} B BAR of the memory endpoint {:?}",
                    fabric.node(spec.target).name
                ),
            ));
        }
    }
    spec.addresses = addresses;
    spec.cache = d.cache.into();
    spec.rate = values::optional_rate(place, "rate", &d.rate)?;
    Ok(spec)
}

/// A storage workload: storage reads travel as DMA writes toward host memory, storage writes
/// as DMA reads.
fn storage(
    place: &Place,
    s: &StorageWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    refuse_nic(place, &s.endpoint, source, fabric)?;
    if !matches!(
        fabric.node(source).kind,
        NodeKind::Endpoint { media: Some(_), .. }
    ) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is not a storage endpoint (kind = \"storage\" with media rates)",
                s.endpoint
            ),
        ));
    }
    let read_percent = values::count(place, "read_percent", s.read_percent, 0..=100, "0 to 100")?;
    let sized = |key: &'static str, v: &Option<String>| match v {
        Some(v) => size(place, key, v),
        None => Err(BuildError::Missing {
            place: place.clone(),
            key,
            hint: "bytes, e.g. \"4KiB\"",
        }),
    };
    let read_size = if read_percent > 0 {
        sized("read_size", &s.read_size)?
    } else {
        0
    };
    let write_size = if read_percent < 100 {
        sized("write_size", &s.write_size)?
    } else {
        0
    };
    let direction = match read_percent {
        100 => DmaDirection::Write,
        0 => DmaDirection::Read,
        _ => DmaDirection::Both,
    };
    let mix = StorageMix {
        read_percent,
        read_size,
        write_size,
        random: s.random,
    };
    let keys = Transfers {
        name: &s.name,
        endpoint: &s.endpoint,
        target: &s.target,
        target_address: &s.target_address,
        outstanding: s.outstanding,
        tlp_payload: &s.tlp_payload,
        doorbell_every: s.doorbell_every,
    };
    let transfer_size = read_size.max(write_size);
    transfers(
        place,
        &keys,
        source,
        direction,
        transfer_size,
        Some(mix),
        fabric,
    )
}

/// A GPU's memcpy workload: one flow per direction it copies, each a stream of `size`-byte
/// transfers one after another, run by the GPU's copy engines.
fn memcpy(
    place: &Place,
    m: &MemcpyWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<Vec<WorkloadSpec>, BuildError> {
    let kind = &fabric.node(source).kind;
    if !matches!(kind, NodeKind::Gpu { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is {}; a memcpy workload runs on a GPU (an [[endpoint]] with kind = \"gpu\")",
                m.endpoint,
                kind.noun()
            ),
        ));
    }
    let size = size(place, "size", &m.size)?;
    let memory_target = memory(place, &m.memory, [&m.target, &None], fabric)?;
    let name = |suffix: &str| format!("{}{suffix}", m.name);
    use {CopyDirection as C, CopyWord as W, DmaDirection as D};
    let copies = match (&m.target, m.direction) {
        (None, Some(W::H2d)) => vec![(name(""), D::Read, C::HostToDevice)],
        (None, Some(W::D2h)) => vec![(name(""), D::Write, C::DeviceToHost)],
        (None, Some(W::Both)) => vec![
            (name(".h2d"), D::Read, C::HostToDevice),
            (name(".d2h"), D::Write, C::DeviceToHost),
        ],
        (Some(_), None | Some(W::Write)) => vec![(name(""), D::Write, C::PeerWrite)],
        (Some(_), Some(W::Read)) => vec![(name(""), D::Read, C::PeerRead)],
        (None, None) => {
            return Err(BuildError::Missing {
                place: place.clone(),
                key: "direction",
                hint: "\"h2d\", \"d2h\" or \"both\" (or a target peer to write or read)",
            })
        }
        (None, Some(w)) => {
            return Err(BuildError::conflict(
                place,
                format!(
                    "direction = \"{}\" copies to or from a peer: give its target, or copy \
                     host memory with \"h2d\", \"d2h\" or \"both\"",
                    w.word()
                ),
            ))
        }
        (Some(t), Some(w)) => {
            return Err(BuildError::conflict(
                place,
                format!(
                    "direction = \"{}\" copies host memory; toward the target {t:?} a copy is \
                     \"write\" or \"read\"",
                    w.word()
                ),
            ))
        }
    };
    if let Some(t) = &m.target {
        let target = fabric.nodes.lookup(place, "target", t)?;
        let kind = &fabric.node(target).kind;
        if target == source || !matches!(kind.as_target(), TargetKind::BarMemory { .. }) {
            return Err(BuildError::conflict(
                place,
                format!(
                    "the target {t:?} is {}; a memcpy's target is a peer with a memory BAR (a \
                     GPU or a kind = \"memory\" endpoint other than {:?})",
                    if target == source {
                        "the GPU itself"
                    } else {
                        kind.noun()
                    },
                    m.endpoint
                ),
            ));
        }
    }
    let rate = values::optional_rate(place, "rate", &m.rate)?;
    let mut out = Vec::new();
    for (flow, direction, copy) in copies {
        let keys = Transfers {
            name: &flow,
            endpoint: &m.endpoint,
            target: if m.memory.is_some() {
                &memory_target
            } else {
                &m.target
            },
            target_address: &None,
            outstanding: 1,
            tlp_payload: &None,
            doorbell_every: None,
        };
        let mut spec = transfers(place, &keys, source, direction, size, None, fabric)?;
        spec.memcpy = Some(copy);
        spec.rate = rate;
        out.push(spec);
    }
    Ok(out)
}

/// A workload's `memory`: the root complex whose memory holds its host buffer, checked to be
/// one and given without `others` (the keys naming a target instead).
pub(super) fn memory(
    place: &Place,
    memory: &Option<String>,
    others: [&Option<String>; 2],
    fabric: &Fabric,
) -> Result<Option<String>, BuildError> {
    let Some(name) = memory else {
        return Ok(None);
    };
    if others.iter().any(|o| o.is_some()) {
        return Err(BuildError::conflict(
            place,
            "give memory (the root complex holding the host buffer) or a target, not both",
        ));
    }
    let n = fabric.nodes.lookup(place, "memory", name)?;
    let kind = &fabric.node(n).kind;
    if !matches!(kind, NodeKind::RootComplex { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "memory = {name:?} is {}; memory names the root complex (socket) whose memory                  holds the host buffer",
                kind.noun()
            ),
        ));
    }
    Ok(Some(name.clone()))
}

/// A NIC moves Ethernet frames: a DMA or storage workload on one is refused.
fn refuse_nic(
    place: &Place,
    endpoint: &str,
    source: NodeId,
    fabric: &Fabric,
) -> Result<(), BuildError> {
    if matches!(
        fabric.node(source).kind,
        NodeKind::Endpoint { nic: Some(_), .. }
    ) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{endpoint:?} is a NIC, which moves Ethernet frames: give it a kind = \"bridge\" \
                 workload, or make the endpoint kind = \"dma\""
            ),
        ));
    }
    Ok(())
}

/// A transfer size: 1 B to 1 GiB.
fn size(place: &Place, key: &'static str, text: &str) -> Result<u64, BuildError> {
    let b = values::bytes(place, key, text)?;
    if (1..=crate::analytic::MAX_TRANSFER_BYTES).contains(&b) {
        Ok(b)
    } else {
        Err(BuildError::not_allowed(place, key, text, "1 B to 1 GiB"))
    }
}

/// A DMA or storage workload's flow: its target, checked against its source, and the
/// transfers in flight, write TLP size and doorbell.
fn transfers(
    place: &Place,
    keys: &Transfers,
    source: NodeId,
    direction: DmaDirection,
    transfer_size: u64,
    storage: Option<StorageMix>,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    let (target, address) = target(place, keys, source, transfer_size, fabric)?;
    check_pair(
        place,
        keys.endpoint,
        source,
        target,
        direction,
        transfer_size,
        fabric,
    )?;
    let outstanding = values::count(
        place,
        "outstanding",
        keys.outstanding,
        1..=4096,
        "1 to 4096",
    )?;
    let tlp_payload = match keys.tlp_payload {
        None => fabric.pcie.mps,
        Some(v) => tlp_payload(place, v, direction, fabric.pcie.mps)?,
    };
    let doorbell = match keys.doorbell_every {
        None => None,
        Some(n) => Some(doorbell(place, n, target, direction, fabric)?),
    };
    Ok(WorkloadSpec {
        name: keys.name.to_string(),
        source,
        target,
        direction,
        transfer_size,
        outstanding,
        storage,
        bridge: None,
        tlp_payload,
        doorbell,
        address,
        addresses: Addresses::single(transfer_size),
        cache: CacheState::Warm,
        fio: None,
        memcpy: None,
        rate: None,
    })
}

/// Whose memory a flow reaches: a named node, an address through the bridges' windows, or
/// the root complex above an endpoint.
fn target(
    place: &Place,
    keys: &Transfers,
    source: NodeId,
    transfer_size: u64,
    fabric: &Fabric,
) -> Result<(NodeId, Option<AddressPath>), BuildError> {
    match (keys.target, keys.target_address) {
        (Some(_), Some(_)) => Err(BuildError::conflict(
            place,
            "give target (a node) or target_address (an address), not both",
        )),
        (None, Some(text)) => {
            let a = units::parse_address("target_address", text).map_err(at(place))?;
            let nodes = fabric.nodes.nodes();
            let (t, path) = fabric
                .windows
                .resolve(place, text, a, transfer_size, source, nodes)?;
            // An address above 4 GiB on any bus the requests cross needs 4-DW headers.
            let above_4g = |x: &u64| x.saturating_add(transfer_size.max(1) - 1) > u32::MAX as u64;
            let mut high = std::iter::once(a).chain(path.crossings.iter().map(|c| c.1));
            if let (Addressing::A32, Some(x)) = (fabric.pcie.addressing, high.find(above_4g)) {
                return Err(BuildError::conflict(
                    place,
                    format!(
                        "target_address {text} reaches {x:#x}, above 4 GiB, where memory \
                         requests need 4-DW (64-bit) headers; set [pcie] addressing = 64"
                    ),
                ));
            }
            Ok((t, Some(path)))
        }
        (Some(t), None) => Ok((fabric.nodes.lookup(place, "target", t)?, None)),
        (None, None) => match fabric.node(source).kind {
            NodeKind::RootComplex { .. } => Err(BuildError::conflict(
                place,
                format!("a workload on {:?} needs a target endpoint", keys.endpoint),
            )),
            _ => Ok((fabric.topology.root_above(source), None)),
        },
    }
}

/// Checks that `source` may move data to or from `target` this way: what each node is to
/// a workload is a property of its kind (`NodeKind::issues_requests`, `as_target`).
fn check_pair(
    place: &Place,
    endpoint: &str,
    source: NodeId,
    target: NodeId,
    direction: DmaDirection,
    transfer_size: u64,
    fabric: &Fabric,
) -> Result<(), BuildError> {
    let source_kind = &fabric.node(source).kind;
    let target_name = &fabric.node(target).name;
    let from_root = matches!(source_kind, NodeKind::RootComplex { .. });
    let write = direction == DmaDirection::Write;
    let problem = match fabric.node(target).kind.as_target() {
        TargetKind::NicRegisters => Some(format!(
            "the target {target_name:?} is a NIC, whose registers take the [cpu]'s writes \
             only: write into a kind = \"dma\" endpoint or a root complex"
        )),
        _ if !source_kind.issues_requests() => Some(format!(
            "{endpoint:?} is {}, which issues no requests; a workload runs on an endpoint or \
             a root complex",
            source_kind.noun()
        )),
        TargetKind::HostMemory if !from_root || (write && source != target) => None,
        TargetKind::Scratchpad => {
            // The bridge's scratchpad registers: whole DWs, a few at a time.
            if transfer_size % 4 != 0 || !(4..=SCRATCHPAD_BYTES).contains(&transfer_size) {
                return Err(BuildError::not_allowed(
                    place,
                    "transfer_size",
                    format!("{transfer_size} B"),
                    format!(
                        "a multiple of 4 B up to {SCRATCHPAD_BYTES} B: the target \
                         {target_name:?} is a non-transparent bridge, whose scratchpad \
                         registers are read and written in DWs"
                    ),
                ));
            }
            None
        }
        TargetKind::WriteSink if from_root && !write => Some(format!(
            "the target {target_name:?} is {}, which takes a root complex's writes only \
             (direction = \"write\"); a root complex reads a kind = \"memory\" endpoint",
            fabric.node(target).kind.noun()
        )),
        TargetKind::BarMemory { bytes } if transfer_size > bytes => {
            return Err(BuildError::not_allowed(
                place,
                "transfer_size",
                format!("{transfer_size} B"),
                format!(
                    "at most the {bytes} B BAR of the memory endpoint {target_name:?}: a \
                     transfer stays inside the BAR"
                ),
            ));
        }
        TargetKind::WriteSink if from_root => None,
        // Peer-to-peer when the source is an endpoint.
        TargetKind::BarMemory { .. } => None,
        _ => Some(format!(
            "the target {target_name:?} must be a root complex (or, for a root complex's \
             writes, an endpoint or another domain's root complex; for its reads and writes, \
             a memory endpoint)"
        )),
    };
    if let Some(p) = problem {
        return Err(BuildError::conflict(place, p));
    }
    // Reads bring completions back from the target, on their own path.
    check_path(
        place,
        fabric,
        source,
        target,
        direction != DmaDirection::Write,
    )
}

/// Refuses a path from `source` to `target` across two domains, or one that crosses a root
/// complex with `p2p = "refuse"` (one not at either end: peer-to-peer); with `returns`, the
/// path of the TLPs the target sends back (completions) too, which ACS redirect at the
/// target's port can send up through a root complex that the requests never cross.
pub(super) fn check_path(
    place: &Place,
    fabric: &Fabric,
    source: NodeId,
    target: NodeId,
    returns: bool,
) -> Result<(), BuildError> {
    let target_name = &fabric.node(target).name;
    let (top_s, top_t) = (
        fabric.topology.root_above(source),
        fabric.topology.root_above(target),
    );
    let joined = fabric
        .socket_links
        .iter()
        .any(|l| (l.a, l.b) == (top_s, top_t) || (l.a, l.b) == (top_t, top_s));
    if top_s != top_t && !joined {
        let names = fabric.nodes.nodes();
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} and {target_name:?} are under different root complexes ({:?} and {:?}) \
                 with no [[socket_link]] between them; add one (between = [{:?}, {:?}])",
                fabric.node(source).name,
                names[top_s].name,
                names[top_t].name,
                names[top_s].name,
                names[top_t].name
            ),
        ));
    }
    if top_s != top_t && matches!(fabric.node(source).kind, NodeKind::RootComplex { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "a root complex's own requests stay on its socket; {target_name:?} is under \
                 another root complex: run the workload on {:?}'s own root complex",
                target_name
            ),
        ));
    }
    // A root complex on the way (not an end) forwards peer-to-peer, or refuses it.
    let refuses = |n: &NodeId| {
        matches!(
            fabric.node(*n).kind,
            NodeKind::RootComplex { p2p: None, .. }
        )
    };
    // Across a socket link: up to the source's root complex, across, down from the other;
    // both root complexes forward a peer-to-peer TLP, while a DMA into (or completions from)
    // a root complex's own memory cross without its peer-to-peer forwarding.
    let path = |from: NodeId, to: NodeId| {
        let (top_from, top_to) = (
            fabric.topology.root_above(from),
            fabric.topology.root_above(to),
        );
        if top_from == top_to {
            return fabric.topology.path_between(from, to);
        }
        let peer = from != top_from && to != top_to;
        let mut p = fabric.topology.path_between(from, top_from);
        if peer {
            p.extend([top_from, top_to]);
        }
        p.extend(fabric.topology.path_between(top_to, to));
        p
    };
    let there = path(source, target).into_iter().find(refuses);
    let back = returns
        .then(|| path(target, source).into_iter().find(refuses))
        .flatten();
    let source_name = &fabric.node(source).name;
    let what = match (there, back) {
        (Some(rc), _) => format!(
            "peer-to-peer from {source_name:?} to {target_name:?} crosses root complex {:?}",
            fabric.node(rc).name
        ),
        (None, Some(rc)) => format!(
            "the completions of peer-to-peer reads from {source_name:?} to {target_name:?} \
             come back through root complex {:?} (ACS redirect at {target_name:?}'s port sends \
             them up)",
            fabric.node(rc).name
        ),
        (None, None) => return Ok(()),
    };
    Err(BuildError::conflict(
        place,
        format!(
            "{what}, which has p2p = \"refuse\"; set p2p = \"forward\" there, or put both \
             under one switch without acs_redirect"
        ),
    ))
}

/// The largest write TLP payload `text` allows: a multiple of 4 B up to MPS.
fn tlp_payload(
    place: &Place,
    text: &str,
    direction: DmaDirection,
    mps: u32,
) -> Result<u32, BuildError> {
    let b = values::bytes(place, "tlp_payload", text)?;
    if !(4..=mps as u64).contains(&b) || b % 4 != 0 {
        return Err(BuildError::not_allowed(
            place,
            "tlp_payload",
            text,
            format!("a multiple of 4 B from 4 B to MPS ({mps} B)"),
        ));
    }
    if direction == DmaDirection::Read {
        return Err(BuildError::conflict(
            place,
            "tlp_payload sizes writes; this workload only reads",
        ));
    }
    Ok(b as u32)
}

/// The doorbell rung after every `every` transfers: the bridge directly above the target.
fn doorbell(
    place: &Place,
    every: i64,
    target: NodeId,
    direction: DmaDirection,
    fabric: &Fabric,
) -> Result<Doorbell, BuildError> {
    if !(1..=65536).contains(&every) {
        return Err(BuildError::not_allowed(
            place,
            "doorbell_every",
            every,
            "1 to 65536 transfers per doorbell",
        ));
    }
    let ntb = fabric
        .topology
        .up(target)
        .filter(|&u| matches!(fabric.node(u).kind, NodeKind::Ntb { .. }));
    match (ntb, direction) {
        (Some(ntb), DmaDirection::Write) => Ok(Doorbell {
            every: every as u32,
            ntb,
        }),
        _ => Err(BuildError::conflict(
            place,
            format!(
                "doorbell_every needs direction = \"write\" and a target root complex directly \
                 below a non-transparent bridge ([[ntb]]), whose doorbell the writer rings; {:?} \
                 is not one",
                fabric.node(target).name
            ),
        )),
    }
}

/// An Ethernet bridging workload: frames on both ports of a NIC, bridged by the `[cpu]`.
fn bridge(
    place: &Place,
    b: &BridgeWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    if !matches!(
        fabric.node(source).kind,
        NodeKind::Endpoint { nic: Some(_), .. }
    ) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is not a NIC (an [[endpoint]] with kind = \"nic\")",
                b.endpoint
            ),
        ));
    }
    if !fabric.has_cpu {
        return Err(BuildError::conflict(
            place,
            "a bridge workload needs a [cpu] section (frame_cost, ...) to bridge the frames",
        ));
    }
    let frame_size = values::count(
        place,
        "frame_size",
        b.frame_size,
        64..=9018,
        "64 to 9018 bytes (Ethernet frame with CRC)",
    )?;
    if !(b.load > 0.0 && b.load <= 1.0) {
        return Err(BuildError::not_allowed(
            place,
            "load",
            b.load,
            "a fraction of line rate in (0, 1]",
        ));
    }
    Ok(WorkloadSpec {
        name: b.name.clone(),
        source,
        target: fabric.topology.root_above(source),
        direction: DmaDirection::Both,
        transfer_size: frame_size as u64,
        outstanding: 1,
        storage: None,
        bridge: Some(BridgeSpec {
            frame_size,
            load: b.load,
        }),
        tlp_payload: u32::MAX, // NIC writes are MPS-sized
        doorbell: None,
        address: None,
        addresses: Addresses::single(frame_size as u64),
        cache: CacheState::Warm,
        fio: None,
        memcpy: None,
        rate: None,
    })
}
