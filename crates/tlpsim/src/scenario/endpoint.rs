//! `[[endpoint]]` sections, one section type per `kind`, and the nodes they become.
//!
//! Adding a kind: a word in [`EndpointKind`], a variant of [`EndpointSection`] with its
//! section type, one arm in [`Tagged::deserialize_kind`], [`EndpointSection::name`] and
//! [`endpoints`]' build.

use schemars::JsonSchema;
use serde::de::{Deserializer, IgnoredAny};
use serde::Deserialize;

use super::error::{BuildError, Place};
use super::file::Tagged;
use super::nodes::NodeTable;
use super::nvme::NvmeEndpointSection;
use super::tags::TagRequest;
use super::values::{self, defaults, words, CountSides, CreditsSection, DurationSides};
use super::DEFAULT_ENDPOINT_CREDITS;
use crate::engine::SimTime;
use crate::fabric::{DmaDevice, DmaEngines, MediaSpec, NicSpec, NodeKind, NodeSpec};
use crate::units;

defaults! {
    default_zero_ns: String = "0ns";
    default_zero_sides: DurationSides = "0ns";
    default_dma_unit: String = "1B";
    default_ports: i64 = 2;
    default_rx_fifo: String = "48KiB";
    default_ring: i64 = 256;
    default_register_time: String = "100ns";
    default_line_rate: String = "1Gb/s";
    default_bar_read_latency: String = "500ns";
    default_copy_engines: i64 = 2;
    default_engine_reads: i64 = 256;
    default_gpu_bar_size: String = "32GiB";
    default_completion_timeout: String = "50ms";
    default_cxl_capacity: String = "128GiB";
    default_cxl_media_latency: String = "170ns";
}

/// The credits of an endpoint, as a file would write them.
fn endpoint_credits() -> CreditsSection {
    CreditsSection::written(DEFAULT_ENDPOINT_CREDITS)
}

words! {
    /// What an endpoint is.
    pub enum EndpointKind for "kind" {
        /// A DMA engine.
        Dma = "dma",
        /// A storage HBA with its drives.
        Storage = "storage",
        /// A Gigabit Ethernet NIC.
        Nic = "nic",
        /// An endpoint whose BAR is plain memory (a GPU's BAR, a drive's controller memory).
        Memory = "memory",
        /// An NVMe drive: queue pairs, a command processor and media.
        Nvme = "nvme",
        /// A GPU: copy engines and a BAR of its memory.
        Gpu = "gpu",
        /// A CXL Type 3 memory expander: device memory the host reads and writes.
        CxlMemory = "cxl_memory",
    }
}

/// `[[endpoint]]`: the section of its `kind`.
// A file's sections are read once and dropped after the build: their size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, JsonSchema)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EndpointSection {
    /// `kind = "dma"`: a DMA engine.
    Dma(DmaEndpointSection),
    /// `kind = "storage"`: a storage HBA with its drives.
    Storage(StorageEndpointSection),
    /// `kind = "nic"`: a Gigabit Ethernet NIC.
    Nic(NicEndpointSection),
    /// `kind = "memory"`: an endpoint whose BAR is plain memory.
    Memory(MemoryEndpointSection),
    /// `kind = "nvme"`: an NVMe drive.
    Nvme(NvmeEndpointSection),
    /// `kind = "gpu"`: a GPU, with copy engines and a BAR of its memory.
    Gpu(GpuEndpointSection),
    /// `kind = "cxl_memory"`: a CXL Type 3 memory expander.
    CxlMemory(CxlMemorySection),
}

impl Tagged for EndpointSection {
    type Kind = EndpointKind;

    fn deserialize_kind<'de, D: Deserializer<'de>>(
        kind: EndpointKind,
        d: D,
    ) -> Result<Self, D::Error> {
        Ok(match kind {
            EndpointKind::Dma => EndpointSection::Dma(Deserialize::deserialize(d)?),
            EndpointKind::Storage => EndpointSection::Storage(Deserialize::deserialize(d)?),
            EndpointKind::Nic => EndpointSection::Nic(Deserialize::deserialize(d)?),
            EndpointKind::Memory => EndpointSection::Memory(Deserialize::deserialize(d)?),
            EndpointKind::Nvme => EndpointSection::Nvme(Deserialize::deserialize(d)?),
            EndpointKind::Gpu => EndpointSection::Gpu(Deserialize::deserialize(d)?),
            EndpointKind::CxlMemory => EndpointSection::CxlMemory(Deserialize::deserialize(d)?),
        })
    }
}

impl EndpointSection {
    /// The node name.
    pub fn name(&self) -> &str {
        match self {
            EndpointSection::Dma(s) => &s.name,
            EndpointSection::Storage(s) => &s.name,
            EndpointSection::Nic(s) => &s.name,
            EndpointSection::Memory(s) => &s.name,
            EndpointSection::Nvme(s) => &s.name,
            EndpointSection::Gpu(s) => &s.name,
            EndpointSection::CxlMemory(s) => &s.name,
        }
    }

    /// Its `count` key: how many copies it stands for (`None`: one, under its own name).
    pub fn count(&self) -> Option<i64> {
        match self {
            EndpointSection::Dma(s) => s.count,
            EndpointSection::Storage(s) => s.count,
            EndpointSection::Nic(s) => s.count,
            EndpointSection::Memory(s) => s.count,
            EndpointSection::Nvme(s) => s.count,
            EndpointSection::Gpu(s) => s.count,
            EndpointSection::CxlMemory(s) => s.count,
        }
    }

    /// One copy of a counted endpoint: the same section under `name`, without `count`.
    pub fn copy_named(&self, name: String) -> Self {
        let mut out = self.clone();
        let (own, count) = match &mut out {
            EndpointSection::Dma(s) => (&mut s.name, &mut s.count),
            EndpointSection::Storage(s) => (&mut s.name, &mut s.count),
            EndpointSection::Nic(s) => (&mut s.name, &mut s.count),
            EndpointSection::Memory(s) => (&mut s.name, &mut s.count),
            EndpointSection::Nvme(s) => (&mut s.name, &mut s.count),
            EndpointSection::Gpu(s) => (&mut s.name, &mut s.count),
            EndpointSection::CxlMemory(s) => (&mut s.name, &mut s.count),
        };
        *own = name;
        *count = None;
        out
    }
}

/// `[[endpoint]]` with `kind = "dma"`: a DMA engine.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DmaEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Width of its Tag field: 5, 8 or 10 bits, for 32, 256 or 768 reads in flight (when
    /// left out: 5 bits at Gen1-2, 8 at Gen3-4, 10 from Gen5, by its link; or the narrowest
    /// that holds `tags`).
    pub tag_bits: Option<i64>,
    /// Read tags it uses, at most what its Tag field allows (all of them when left out).
    pub tags: Option<i64>,
    /// How long it waits for the completions of a read before it gives up on it, frees its
    /// tag and counts a completion timeout: 50us to 64s, or "off" (default "50ms", the top
    /// of the spec's default range).
    #[schemars(default = "default_completion_timeout")]
    #[schemars(pattern(units::DURATION_OR_OFF_PATTERN))]
    pub completion_timeout: Option<String>,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// DMA engines on each side (reads and writes have their own): transfers each side
    /// processes at once, e.g. 1, or `{ read = 2, write = 1 }` (as many as the workloads
    /// keep in flight when left out).
    pub dma_engines: Option<CountSides>,
    /// Engine time to issue each request TLP (an MRd or an MWr): one engine issues at most
    /// one request per this time, e.g. "17ns", or `{ read = "15ns", write = "17ns" }`
    /// (default "0ns").
    #[serde(default = "default_zero_sides")]
    pub request_cost: DurationSides,
    /// Engine time per transfer before its first request, for one side or each (default
    /// "0ns").
    #[serde(default = "default_zero_sides")]
    pub transfer_cost: DurationSides,
    /// Device-internal time added to each transfer before it takes an engine (it holds no
    /// engine meanwhile; a read's latency counts it), for one side or each (default "0ns").
    #[serde(default = "default_zero_sides")]
    pub latency: DurationSides,
    /// Device-internal time per KiB of a transfer's data, added to its `latency` (pipelined:
    /// it holds no engine), for one side or each, e.g. `{ write = "200ns" }` (default "0ns").
    #[serde(default = "default_zero_sides")]
    pub latency_per_kib: DurationSides,
    /// Engine time per KiB of a transfer's data (the engine's data rate), spent with
    /// `transfer_cost`, for one side or each, e.g. `{ read = "137ns" }` (default "0ns").
    #[serde(default = "default_zero_sides")]
    pub transfer_cost_per_kib: DurationSides,
    /// Bytes in one word of its memory, a power of two up to 4 KiB: a request carries at
    /// most its maximum size in whole words (default "1B": no words).
    #[serde(default = "default_dma_unit")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub dma_unit: String,
    /// Engine time per word of its memory (`dma_unit`) that a transfer covers only in part,
    /// overlapping its `transfer_cost_per_kib` time (the longer counts), for one side or each
    /// (default "0ns").
    #[serde(default = "default_zero_sides")]
    pub partial_unit_cost: DurationSides,
    /// Bytes of the descriptor it reads from host memory before each transfer, e.g. "16B"
    /// (no descriptor reads when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub descriptor: Option<String>,
    /// Bytes of the status it writes to host memory after each transfer, e.g. "16B" (no
    /// status writes when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub status_writeback: Option<String>,
}

/// `[[endpoint]]` with `kind = "storage"`: an HBA with its drives.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StorageEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Width of its Tag field: 5, 8 or 10 bits, for 32, 256 or 768 reads in flight (when
    /// left out: 5 bits at Gen1-2, 8 at Gen3-4, 10 from Gen5, by its link; or the narrowest
    /// that holds `tags`).
    pub tag_bits: Option<i64>,
    /// Read tags it uses, at most what its Tag field allows (all of them when left out).
    pub tags: Option<i64>,
    /// How long it waits for the completions of a read before it gives up on it, frees its
    /// tag and counts a completion timeout: 50us to 64s, or "off" (default "50ms", the top
    /// of the spec's default range).
    #[schemars(default = "default_completion_timeout")]
    #[schemars(pattern(units::DURATION_OR_OFF_PATTERN))]
    pub completion_timeout: Option<String>,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// Rate the drives deliver reads, e.g. "800MB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub media_read: String,
    /// Rate the drives absorb writes, e.g. "700MB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub media_write: String,
    /// Time lost when the drives switch between reads and writes (default "0ns").
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub media_turnaround: String,
    /// Reads and writes proceed at once, each at its own rate (default false).
    #[serde(default)]
    pub media_duplex: bool,
    /// Access time of a random I/O (default "0ns").
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub media_seek: String,
}

/// `[[endpoint]]` with `kind = "nic"`: a Gigabit Ethernet NIC.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NicEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Width of its Tag field: 5, 8 or 10 bits, for 32, 256 or 768 reads in flight (when
    /// left out: 5 bits at Gen1-2, 8 at Gen3-4, 10 from Gen5, by its link; or the narrowest
    /// that holds `tags`).
    pub tag_bits: Option<i64>,
    /// Read tags it uses, at most what its Tag field allows (all of them when left out).
    pub tags: Option<i64>,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// Ethernet ports, 1 or 2 (default 2).
    #[serde(default = "default_ports")]
    pub ports: i64,
    /// Receive FIFO per port (default "48KiB"); frames that do not fit are dropped.
    #[serde(default = "default_rx_fifo")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub rx_fifo: String,
    /// Receive descriptors per port (default 256).
    #[serde(default = "default_ring")]
    pub rx_ring: i64,
    /// Transmit descriptors per port (default 256).
    #[serde(default = "default_ring")]
    pub tx_ring: i64,
    /// Time to absorb a register write or answer a register read (default "100ns").
    #[serde(default = "default_register_time")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub register_time: String,
    /// Least time between interrupts (default "0ns": no moderation).
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub interrupt_interval: String,
    /// Ethernet line rate per port (default "1Gb/s").
    #[serde(default = "default_line_rate")]
    #[schemars(pattern(units::RATE_PATTERN))]
    pub line_rate: String,
}

/// `[[endpoint]]` with `kind = "memory"`: an endpoint whose BAR is plain memory that a root
/// complex writes to and reads from (a GPU's BAR, an NVMe drive's controller memory buffer,
/// an FPGA's on-board RAM).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MemoryEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// Size of its memory BAR, a power of two, e.g. "256MiB"; a transfer stays inside it.
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub bar_size: String,
    /// Read request to the first byte of its completion (default "500ns").
    #[serde(default = "default_bar_read_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub read_latency: String,
    /// Rate its memory absorbs written data, e.g. "12GB/s" (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub write_rate: Option<String>,
}

/// `[[endpoint]]` with `kind = "cxl_memory"`: a CXL Type 3 memory expander (CXL 2.0 device
/// memory, HDM, that the host reads and writes with CXL.mem loads and stores), modelled as
/// a memory completer on its link: reads wait `media_latency`, then leave at `media_read`;
/// writes are absorbed at `media_write`. Its link is a PCIe link of the same generation and
/// width (CXL 2.0 runs on PCIe 5.0's physical layer); CXL's own flit framing is not modelled.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CxlMemorySection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// Size of its memory, a power of two, e.g. "256GiB" (default "128GiB", the size of
    /// Samsung's CXL 2.0 DRAM module of May 2023); an access stays inside it.
    #[serde(default = "default_cxl_capacity")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub capacity: String,
    /// Rate its media returns read data, e.g. "25GB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub media_read: String,
    /// Rate its media absorbs written data, e.g. "20GB/s".
    #[schemars(pattern(units::RATE_PATTERN))]
    pub media_write: String,
    /// A read request's arrival to its data's first byte leaving the device: its
    /// controller and DRAM (default "170ns", assumed: the low end of the load latencies
    /// quoted for CXL 2.0 expanders, whose host adds its own port and the link).
    #[serde(default = "default_cxl_media_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub media_latency: String,
}

/// `[[endpoint]]` with `kind = "gpu"`: a GPU. Its copy engines read and write host memory
/// or a peer's BAR (`[[workload]] kind = "memcpy"`); its BAR, a window on its memory, takes
/// other requesters' writes and reads as a `kind = "memory"` endpoint does.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpuEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Width of its Tag field: 5, 8 or 10 bits, for 32, 256 or 768 reads in flight (when
    /// left out: 5 bits at Gen1-2, 8 at Gen3-4, 10 from Gen5, by its link; or the narrowest
    /// that holds `tags`).
    pub tag_bits: Option<i64>,
    /// Read tags it uses, at most what its Tag field allows (all of them when left out).
    pub tags: Option<i64>,
    /// How long it waits for the completions of a read before it gives up on it, frees its
    /// tag and counts a completion timeout: 50us to 64s, or "off" (default "50ms", the top
    /// of the spec's default range).
    #[schemars(default = "default_completion_timeout")]
    #[schemars(pattern(units::DURATION_OR_OFF_PATTERN))]
    pub completion_timeout: Option<String>,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// Copy engines per direction, 1 to 64: copies it runs at once that read (host to
    /// device, peer reads) and, as many again, that write (device to host, peer writes);
    /// one copy takes one engine (default 2, the two engines CUDA needs to copy both ways
    /// at once).
    #[serde(default = "default_copy_engines")]
    pub copy_engines: i64,
    /// Read requests one copy engine keeps in flight, 1 to 768, within the GPU's tags
    /// (default 256: 128 KiB of 512 B reads, a Gen5 x16 link's data for 2.5 us).
    #[serde(default = "default_engine_reads")]
    pub engine_reads: i64,
    /// Copy engine time per copy before its first request, e.g. "2us": the copy's command
    /// taken from its channel and its end signalled before the next copy starts (default
    /// "0ns": copies back to back).
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub copy_setup: String,
    /// Size of its memory BAR, a power of two, e.g. "64GiB" (default "32GiB"); a transfer
    /// into it stays inside it.
    #[serde(default = "default_gpu_bar_size")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub bar_size: String,
    /// Read request into its BAR to the first byte of its completion (default "500ns").
    #[serde(default = "default_bar_read_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub read_latency: String,
    /// Rate its memory absorbs data written into its BAR, e.g. "40GB/s" (unlimited when
    /// left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub write_rate: Option<String>,
}

/// Adds the `[[endpoint]]` sections to `nodes`; returns the requesters whose tags wait for
/// their link's generation (see [`super::tags::default_tags`]).
pub fn endpoints(
    sections: &[EndpointSection],
    nodes: &mut NodeTable,
) -> Result<Vec<TagRequest>, BuildError> {
    let mut open = Vec::new();
    for (i, ep) in sections.iter().enumerate() {
        let place = Place::element("endpoint", i, ep.name());
        let request = |bits, tags| TagRequest {
            node: nodes.nodes().len(),
            bits,
            tags,
            place: place.clone(),
        };
        let (tags, mut kind, credits, timeout) = match ep {
            EndpointSection::Dma(s) => (
                Some(request(s.tag_bits, s.tags)),
                NodeKind::Dma {
                    tags: 0,
                    device: device(&place, s)?,
                },
                &s.credits,
                Some(&s.completion_timeout),
            ),
            EndpointSection::Storage(s) => (
                Some(request(s.tag_bits, s.tags)),
                NodeKind::Storage {
                    tags: 0,
                    media: media(&place, s)?,
                },
                &s.credits,
                Some(&s.completion_timeout),
            ),
            EndpointSection::Nic(s) => (
                Some(request(s.tag_bits, s.tags)),
                NodeKind::Nic {
                    tags: 0,
                    nic: nic(&place, s)?,
                },
                &s.credits,
                None,
            ),
            EndpointSection::Memory(s) => (None, memory(&place, s)?, &s.credits, None),
            EndpointSection::Nvme(s) => (
                Some(request(s.tag_bits, s.tags)),
                super::nvme::nvme(&place, s)?,
                &s.credits,
                None,
            ),
            EndpointSection::Gpu(s) => (
                Some(request(s.tag_bits, s.tags)),
                gpu(&place, s)?,
                &s.credits,
                Some(&s.completion_timeout),
            ),
            EndpointSection::CxlMemory(s) => (None, cxl_memory(&place, s)?, &s.credits, None),
        };
        if let (Some(r), Some(t)) = (tags, kind.read_tags_mut()) {
            match r.settled()? {
                Some(n) => *t = n,
                None => open.push(r),
            }
        }
        let credits = values::credits(&place, credits, DEFAULT_ENDPOINT_CREDITS)?;
        nodes.add(
            &place,
            NodeSpec {
                name: ep.name().to_string(),
                kind,
                credits,
                completion_timeout: match timeout {
                    Some(t) => values::completion_timeout(&place, t)?,
                    None => None,
                },
            },
        )?;
    }
    Ok(open)
}

/// A DMA endpoint's own limits: its engines, costs, latency, memory word and the descriptor
/// and status TLPs around each transfer.
fn device(place: &Place, s: &DmaEndpointSection) -> Result<DmaDevice, BuildError> {
    let zero = SimTime::ZERO;
    let (read_engines, write_engines) = match &s.dma_engines {
        Some(v) => values::count_sides(place, "dma_engines", v, 1..=4096, "1 to 4096")?,
        None => (None, None),
    };
    let cost = |key, v| values::duration_sides(place, key, v, zero);
    let (read_request, write_request) = cost("request_cost", &s.request_cost)?;
    let (read_transfer, write_transfer) = cost("transfer_cost", &s.transfer_cost)?;
    let (read_latency, write_latency) = cost("latency", &s.latency)?;
    let (read_latency_kib, write_latency_kib) = cost("latency_per_kib", &s.latency_per_kib)?;
    let (read_per_kib, write_per_kib) = cost("transfer_cost_per_kib", &s.transfer_cost_per_kib)?;
    let (read_partial, write_partial) = cost("partial_unit_cost", &s.partial_unit_cost)?;
    let unit = values::bytes(place, "dma_unit", &s.dma_unit)?;
    if !unit.is_power_of_two() || unit > 4096 {
        return Err(BuildError::not_allowed(
            place,
            "dma_unit",
            &s.dma_unit,
            "a power of two from 1 B to 4 KiB",
        ));
    }
    let tlp_bytes = |key: &'static str, v: &Option<String>| -> Result<u32, BuildError> {
        let Some(text) = v else { return Ok(0) };
        let b = values::bytes(place, key, text)?;
        if !(4..=4096).contains(&b) || b % 4 != 0 {
            return Err(BuildError::not_allowed(
                place,
                key,
                text,
                "a multiple of 4 B from 4 B to 4 KiB",
            ));
        }
        Ok(b as u32)
    };
    Ok(DmaDevice {
        read: DmaEngines {
            engines: read_engines,
            request_cost: read_request,
            transfer_cost: read_transfer,
            latency: read_latency,
            latency_per_kib: read_latency_kib,
            transfer_cost_per_kib: read_per_kib,
            partial_unit_cost: read_partial,
            reads_per_engine: None,
        },
        write: DmaEngines {
            engines: write_engines,
            request_cost: write_request,
            transfer_cost: write_transfer,
            latency: write_latency,
            latency_per_kib: write_latency_kib,
            transfer_cost_per_kib: write_per_kib,
            partial_unit_cost: write_partial,
            reads_per_engine: None,
        },
        unit: unit as u32,
        descriptor: tlp_bytes("descriptor", &s.descriptor)?,
        status_writeback: tlp_bytes("status_writeback", &s.status_writeback)?,
    })
}

/// The drives behind a storage endpoint.
fn media(place: &Place, s: &StorageEndpointSection) -> Result<MediaSpec, BuildError> {
    Ok(MediaSpec {
        read: values::rate(place, "media_read", &s.media_read)?,
        write: values::rate(place, "media_write", &s.media_write)?,
        turnaround: values::duration(place, "media_turnaround", &s.media_turnaround)?,
        duplex: s.media_duplex,
        seek: values::duration(place, "media_seek", &s.media_seek)?,
    })
}

/// The Ethernet side of a NIC endpoint.
fn nic(place: &Place, s: &NicEndpointSection) -> Result<NicSpec, BuildError> {
    let count = |key, v, max: i64| values::count(place, key, v, 1..=max, &format!("1 to {max}"));
    let rx_fifo = values::bytes(place, "rx_fifo", &s.rx_fifo)?;
    if !(2048..=1 << 24).contains(&rx_fifo) {
        return Err(BuildError::not_allowed(
            place,
            "rx_fifo",
            &s.rx_fifo,
            "2 KiB to 16 MiB (at least one full-size frame)",
        ));
    }
    let line_rate = values::rate(place, "line_rate", &s.line_rate)? * 8.0;
    Ok(NicSpec {
        ports: count("ports", s.ports, 2)?,
        rx_fifo: rx_fifo as u32,
        rx_ring: count("rx_ring", s.rx_ring, 4096)?,
        tx_ring: count("tx_ring", s.tx_ring, 4096)?,
        register_time: values::duration(place, "register_time", &s.register_time)?,
        interrupt_interval: values::duration(place, "interrupt_interval", &s.interrupt_interval)?,
        line_rate,
    })
}

/// A memory endpoint: its BAR, read latency and write rate.
fn memory(place: &Place, s: &MemoryEndpointSection) -> Result<NodeKind, BuildError> {
    let (bar_size, read_latency, write_rate) =
        bar(place, &s.bar_size, &s.read_latency, &s.write_rate)?;
    Ok(NodeKind::Memory {
        bar_size,
        read_latency,
        write_rate,
    })
}

/// A CXL memory expander: its capacity, media rates and latency, checked.
fn cxl_memory(place: &Place, s: &CxlMemorySection) -> Result<NodeKind, BuildError> {
    let capacity = values::bytes(place, "capacity", &s.capacity)?;
    if !capacity.is_power_of_two() || capacity < 4096 {
        return Err(BuildError::not_allowed(
            place,
            "capacity",
            &s.capacity,
            "a power of two of at least 4 KiB, e.g. \"128GiB\"",
        ));
    }
    Ok(NodeKind::CxlMemory {
        capacity,
        media_read: values::rate(place, "media_read", &s.media_read)?,
        media_write: values::rate(place, "media_write", &s.media_write)?,
        media_latency: values::duration(place, "media_latency", &s.media_latency)?,
    })
}

/// A memory BAR's size, read latency and write rate, checked.
fn bar(
    place: &Place,
    size: &str,
    read_latency: &str,
    write_rate: &Option<String>,
) -> Result<(u64, SimTime, Option<f64>), BuildError> {
    let bar_size = values::bytes(place, "bar_size", size)?;
    // A memory BAR's low four bits are its type bits, so the smallest is 16 B (PCI Local
    // Bus Specification 3.0, section 6.2.5.1); a BAR is naturally aligned to its power of two.
    if !bar_size.is_power_of_two() || bar_size < 16 {
        return Err(BuildError::not_allowed(
            place,
            "bar_size",
            size,
            "a power of two of at least 16 B, e.g. \"256MiB\"",
        ));
    }
    let write_rate = match write_rate {
        Some(r) => Some(values::rate(place, "write_rate", r)?),
        None => None,
    };
    Ok((
        bar_size,
        values::duration(place, "read_latency", read_latency)?,
        write_rate,
    ))
}

/// A GPU: its copy engines (a DMA endpoint's engines, `copy_engines` on each side, each
/// keeping at most `engine_reads` reads in flight and spending `copy_setup` on each copy)
/// and its BAR.
fn gpu(place: &Place, s: &GpuEndpointSection) -> Result<NodeKind, BuildError> {
    let engines = values::count(place, "copy_engines", s.copy_engines, 1..=64, "1 to 64")?;
    let reads = values::count(
        place,
        "engine_reads",
        s.engine_reads,
        1..=768,
        "1 to 768 read requests (at most a 10-bit Tag field's)",
    )?;
    let side = DmaEngines {
        engines: Some(engines),
        transfer_cost: values::duration(place, "copy_setup", &s.copy_setup)?,
        ..DmaEngines::default()
    };
    let (bar_size, read_latency, write_rate) =
        bar(place, &s.bar_size, &s.read_latency, &s.write_rate)?;
    Ok(NodeKind::Gpu {
        tags: 0,
        engines: DmaDevice {
            read: DmaEngines {
                reads_per_engine: Some(reads),
                ..side
            },
            write: side,
            ..DmaDevice::default()
        },
        bar_size,
        read_latency,
        write_rate,
    })
}
