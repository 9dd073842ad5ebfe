//! `[[workload]]` sections, one section type per `kind`, and the flows they become: DMA
//! transfers, Iometer-style storage I/Os, Ethernet frames bridged by the host CPU, a GPU's
//! memory copies.

use schemars::JsonSchema;
use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;

use super::error::{BuildError, Place};
use super::file::Tagged;
use super::flows::{bridge, dma, size, storage, transfers, Transfers};
use super::links::Topology;
use super::memcpy::memcpy;
use super::nodes::NodeTable;
use super::ntb::WindowMap;
use super::nvme::{fio, FioWorkloadSection};
use super::values::{self, defaults, words};
use super::DEFAULT_OUTSTANDING;
use crate::fabric::{
    AddressPattern, CacheState, DmaDirection, NodeId, NodeKind, NodeSpec, PcieSettings,
    SocketLinkSpec, WorkloadSpec,
};
use crate::units;

defaults! {
    default_outstanding: i64 = DEFAULT_OUTSTANDING;
    default_zero: i64 = 0;
    default_copy_size: String = "512MiB";
    default_line: String = "64B";
    default_cxl_outstanding: i64 = 16;
    default_read_fraction: f64 = 1.0;
}

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
        /// Loads and stores of a CXL memory expander's memory.
        CxlMem = "cxl_mem",
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
    /// `kind = "cxl_mem"`: loads and stores of a CXL memory expander's memory.
    CxlMem(CxlMemWorkloadSection),
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
            WorkloadKind::CxlMem => WorkloadSection::CxlMem(Deserialize::deserialize(d)?),
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
            WorkloadSection::CxlMem(w) => w.enabled,
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
            WorkloadSection::CxlMem(w) => &w.name,
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
            WorkloadSection::CxlMem(w) => (&mut w.name, &mut w.endpoint, Some(&mut w.target)),
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
            WorkloadSection::CxlMem(w) => &w.endpoint,
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

/// `[[workload]]` with `kind = "cxl_mem"`: a requester's loads and stores of cache lines in a
/// CXL memory expander, each access one read request or one posted write of `size` bytes,
/// `outstanding` of them in flight at once; its results are its flows' and a `cxl` table.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CxlMemWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name (a mix of reads and writes makes two flows, NAME.read and
    /// NAME.write).
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The node issuing the loads and stores: a root complex (its CPUs) or an endpoint
    /// that issues requests.
    pub endpoint: String,
    /// The CXL memory expander (an `[[endpoint]]` with kind = "cxl_memory").
    pub target: String,
    /// The share of the accesses in flight that are reads, 0 to 1 (default 1: loads
    /// only): strictly between, reads and writes run as two streams, NAME.read with
    /// round(outstanding x read_fraction) accesses in flight (at least 1) and NAME.write
    /// with the rest (at least 1).
    #[serde(default = "default_read_fraction")]
    pub read_fraction: f64,
    /// Bytes per access, e.g. "64B" (default "64B": a cache line).
    #[serde(default = "default_line")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub size: String,
    /// Accesses in flight, 1 to 4096 (default 16, assumed: a few cores' worth of
    /// outstanding cache misses); a root complex's `read_tags` caps its reads.
    #[serde(default = "default_cxl_outstanding")]
    pub outstanding: i64,
}

/// A CXL memory workload: a read flow, a write flow, or both with `outstanding` split
/// between them by `read_fraction`, each a stream of `size`-byte accesses to the expander.
fn cxl_mem(
    place: &Place,
    c: &CxlMemWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<Vec<WorkloadSpec>, BuildError> {
    let target = fabric.nodes.lookup(place, "target", &c.target)?;
    if !matches!(fabric.node(target).kind, NodeKind::CxlMemory { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "the target {:?} is {}; a cxl_mem workload's target is a CXL memory expander \
                 (an [[endpoint]] with kind = \"cxl_memory\")",
                c.target,
                fabric.node(target).kind.noun()
            ),
        ));
    }
    let f = c.read_fraction;
    if !(0.0..=1.0).contains(&f) {
        return Err(BuildError::not_allowed(place, "read_fraction", f, "0 to 1"));
    }
    let outstanding = values::count(place, "outstanding", c.outstanding, 1..=4096, "1 to 4096")?;
    let mixed = f > 0.0 && f < 1.0;
    if mixed && outstanding < 2 {
        return Err(BuildError::conflict(
            place,
            "a read_fraction strictly between 0 and 1 runs a read and a write stream: give \
             outstanding = 2 or more",
        ));
    }
    let reads =
        ((outstanding as f64 * f).round() as u32).clamp(mixed as u32, outstanding - mixed as u32);
    let size = size(place, "size", &c.size)?;
    let name = |suffix: &str| {
        if mixed {
            format!("{}{suffix}", c.name)
        } else {
            c.name.clone()
        }
    };
    let streams = [
        (name(".read"), DmaDirection::Read, reads),
        (name(".write"), DmaDirection::Write, outstanding - reads),
    ];
    let target_name = Some(c.target.clone());
    let mut out = Vec::new();
    for (flow, direction, n) in streams.into_iter().filter(|s| s.2 > 0) {
        let keys = Transfers {
            name: &flow,
            endpoint: &c.endpoint,
            target: &target_name,
            target_address: &None,
            outstanding: n as i64,
            tlp_payload: &None,
            doorbell_every: None,
        };
        let kind = crate::fabric::WorkloadKind::CxlMem;
        out.push(transfers(
            place, &keys, source, direction, size, kind, fabric,
        )?);
    }
    Ok(out)
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
    /// The node `n`.
    pub(super) fn node(&self, n: NodeId) -> &NodeSpec {
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
            WorkloadSection::CxlMem(c) => cxl_mem(&place, c, source, fabric)?,
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
            if let Some(f) = spec.kind.fio() {
                *jobs.entry(spec.source).or_insert(0) += f.numjobs;
            }
            out.push(spec);
        }
    }
    Ok(out)
}
