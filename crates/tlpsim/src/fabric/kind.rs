//! What a node is ([`NodeKind`]) and what its kind answers links and workloads with, and
//! what a workload is ([`WorkloadKind`]).

use super::{
    Arbitration, BridgeSpec, CompletionRule, CopyDirection, Core, DmaDevice, FioSpec, Forwarding,
    MediaSpec, NicSpec, NtbWindow, NvmeSpec, PcieSettings, PeerForwarding, StorageMix,
};
use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::host_memory_spec::HostMemorySpec;

/// Port-to-port latency by the width of the narrower of the two ports.
pub type LatencyByWidth = [(u32, SimTime)];

/// What a node is.
#[derive(Debug, Clone, PartialEq)]
pub enum NodeKind {
    /// A root complex: completer for memory reads, sink for memory writes.
    RootComplex {
        /// Request to first data of the memory.
        read_latency: Latency,
        /// Memory bandwidth shared by read data and write data (bytes/s), if limited.
        memory_bandwidth: Option<f64>,
        /// Rate it sinks posted write data at, before the memory (bytes/s), if limited.
        posted_write_rate: Option<f64>,
        /// The host bridge the memory traffic crosses, if any.
        host_bridge: Option<usize>,
        /// Completion sizing.
        completion: CompletionRule,
        /// TLPs each root port holds when its TLPs share one outbound queue in issue order
        /// (a HyperTransport host bridge: responses do not pass posted writes); None when
        /// every root port has its own queue.
        shared_outbound: Option<u32>,
        /// Rate its read data path returns completion data at (bytes/s), LLC hits included,
        /// if limited.
        read_bandwidth: Option<f64>,
        /// Rate its data path passes read completion data and posted write data together
        /// (bytes/s), LLC hits included, if limited: reads and writes at once share it.
        data_path_bandwidth: Option<f64>,
        /// Its host memory system (LLC, IOMMU, remote socket); None: `read_latency` and
        /// `memory_bandwidth` alone.
        host_memory: Option<Box<HostMemorySpec>>,
        /// How it forwards peer-to-peer TLPs from one root port to another; None: it refuses
        /// them.
        p2p: Option<PeerForwarding>,
        /// Reads its CPUs keep outstanding at once (uncached reads of scratchpads, BARs and
        /// registers): the tags of its own read requests.
        read_tags: u32,
    },
    /// A switch.
    Switch {
        /// Cut-through or store-and-forward.
        forwarding: Forwarding,
        /// Port-to-port latency.
        latency: SimTime,
        /// Latency where the narrower of the two ports has this width.
        latency_by_width: Vec<(u32, SimTime)>,
        /// Internal fabric.
        core: Core,
        /// Egress arbitration.
        arbitration: Arbitration,
        /// Whether its downstream ports redirect peer-to-peer TLPs upstream (ACS P2P Request
        /// and Completion Redirect with Upstream Forwarding), unless a `[[link]]` says
        /// otherwise for its port.
        acs_redirect: bool,
    },
    /// A non-transparent bridge: joins the PCIe domain above it to the one below it (whose
    /// root complex is its downstream neighbour), translating memory windows; TLPs cross it
    /// cut-through after `latency`, each side's ingress buffer advertising its own credits.
    Ntb {
        /// Port-to-port latency, address translation included.
        latency: SimTime,
        /// Its memory windows (BARs) on either side, with their translations.
        windows: Vec<NtbWindow>,
    },
    /// A DMA endpoint: engines that read and write other nodes' memory.
    Dma {
        /// Read requests it may have outstanding (tags).
        tags: u32,
        /// Its engines' own limits.
        device: DmaDevice,
    },
    /// A storage HBA with its drives behind it.
    Storage {
        /// Read requests it may have outstanding (tags).
        tags: u32,
        /// The storage behind the HBA.
        media: MediaSpec,
    },
    /// A NIC: an Ethernet side that moves frames by DMA.
    Nic {
        /// Read requests it may have outstanding (tags).
        tags: u32,
        /// Its Ethernet side.
        nic: NicSpec,
    },
    /// An endpoint whose BAR is plain memory that other requesters write to and read from
    /// (a GPU's BAR, an NVMe drive's controller memory buffer, an FPGA's on-board RAM).
    Memory {
        /// Size of its memory BAR in bytes (a power of two).
        bar_size: u64,
        /// Read request to the first byte of its completion.
        read_latency: SimTime,
        /// Bytes/s its memory absorbs written data at, if limited.
        write_rate: Option<f64>,
    },
    /// An NVMe drive: a controller with I/O queue pairs that fetches its commands from host
    /// memory, moves their data by DMA and posts completions and MSI-X interrupts.
    Nvme {
        /// Read requests it may have outstanding (tags).
        tags: u32,
        /// Its controller and media.
        spec: NvmeSpec,
    },
    /// A GPU: copy engines that read and write other nodes' memory (a DMA requester with
    /// read tags and engines of its own) and a BAR of plain memory that other requesters
    /// write to and read from (a memory endpoint).
    Gpu {
        /// Read requests it may have outstanding (tags).
        tags: u32,
        /// Its copy engines as a DMA endpoint's engines: a read side and a write side.
        engines: DmaDevice,
        /// Size of its memory BAR in bytes (a power of two).
        bar_size: u64,
        /// Read request to the first byte of its completion.
        read_latency: SimTime,
        /// Bytes/s its memory absorbs written data at, if limited.
        write_rate: Option<f64>,
    },
    /// A CXL Type 3 memory expander: host-managed device memory that the host reads and
    /// writes with CXL.mem, modelled as a PCIe-attached memory completer (the link's own
    /// framing stands for CXL's) with separate read and write media rates and a
    /// load-to-use latency.
    CxlMemory {
        /// Size of its memory in bytes (a power of two).
        capacity: u64,
        /// Bytes/s its media returns read data at.
        media_read: f64,
        /// Bytes/s its media absorbs written data at.
        media_write: f64,
        /// A read request's arrival to its data's first byte leaving the device.
        media_latency: SimTime,
    },
}

/// What a workload finds at the node it targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetKind {
    /// Host memory behind a root complex: endpoints read and write it, another root
    /// complex writes it.
    HostMemory,
    /// An endpoint's memory BAR of `bytes`: a root complex reads and writes it, and so do other
    /// endpoints (peer-to-peer).
    BarMemory {
        /// The BAR's size.
        bytes: u64,
    },
    /// A DMA engine's or storage HBA's BAR: it takes a root complex's writes only.
    WriteSink,
    /// A NIC's registers: they take the `[cpu]`'s writes only.
    NicRegisters,
    /// A non-transparent bridge's scratchpad registers, read and written in DWs.
    Scratchpad,
    /// Nothing: a switch forwards TLPs and is never a target.
    Nothing,
}

impl NodeKind {
    /// What it is, in words, for messages ("a switch").
    pub fn noun(&self) -> &'static str {
        match self {
            NodeKind::RootComplex { .. } => "a root complex",
            NodeKind::Switch { .. } => "a switch",
            NodeKind::Ntb { .. } => "a non-transparent bridge",
            NodeKind::Storage { .. } => "a storage endpoint",
            NodeKind::Nic { .. } => "a NIC",
            NodeKind::Dma { .. } => "a DMA endpoint",
            NodeKind::Memory { .. } => "a memory endpoint",
            NodeKind::Nvme { .. } => "an NVMe drive",
            NodeKind::Gpu { .. } => "a GPU",
            NodeKind::CxlMemory { .. } => "a CXL memory expander",
        }
    }

    /// Its kind as one word, the scenario's `kind` where it has one ("root_complex",
    /// "switch", "ntb", "storage", "nic", "dma", "memory", "nvme", "gpu").
    pub fn word(&self) -> &'static str {
        match self {
            NodeKind::RootComplex { .. } => "root_complex",
            NodeKind::Switch { .. } => "switch",
            NodeKind::Ntb { .. } => "ntb",
            NodeKind::Storage { .. } => "storage",
            NodeKind::Nic { .. } => "nic",
            NodeKind::Dma { .. } => "dma",
            NodeKind::Memory { .. } => "memory",
            NodeKind::Nvme { .. } => "nvme",
            NodeKind::Gpu { .. } => "gpu",
            NodeKind::CxlMemory { .. } => "cxl_memory",
        }
    }

    /// Whether a workload may run on it: it issues memory reads and writes.
    pub fn issues_requests(&self) -> bool {
        matches!(
            self,
            NodeKind::RootComplex { .. }
                | NodeKind::Dma { .. }
                | NodeKind::Storage { .. }
                | NodeKind::Nic { .. }
                | NodeKind::Nvme { .. }
                | NodeKind::Gpu { .. }
        )
    }

    /// Whether links may hang below it (a root complex, a switch, a bridge).
    pub fn has_downstream_ports(&self) -> bool {
        match self {
            NodeKind::RootComplex { .. } | NodeKind::Switch { .. } | NodeKind::Ntb { .. } => true,
            NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => false,
        }
    }

    /// What a workload targeting it finds there.
    pub fn as_target(&self) -> TargetKind {
        match self {
            NodeKind::RootComplex { .. } => TargetKind::HostMemory,
            NodeKind::Switch { .. } => TargetKind::Nothing,
            NodeKind::Ntb { .. } => TargetKind::Scratchpad,
            NodeKind::Nic { .. } => TargetKind::NicRegisters,
            NodeKind::Dma { .. } | NodeKind::Storage { .. } | NodeKind::Nvme { .. } => {
                TargetKind::WriteSink
            }
            NodeKind::Memory { bar_size, .. } | NodeKind::Gpu { bar_size, .. } => {
                TargetKind::BarMemory { bytes: *bar_size }
            }
            NodeKind::CxlMemory { capacity, .. } => TargetKind::BarMemory { bytes: *capacity },
        }
    }

    /// Its read tags, if it is an endpoint that issues requests (for the loader to give it
    /// the default of its link's generation).
    pub fn read_tags_mut(&mut self) -> Option<&mut u32> {
        match self {
            NodeKind::Dma { tags, .. }
            | NodeKind::Storage { tags, .. }
            | NodeKind::Nic { tags, .. }
            | NodeKind::Nvme { tags, .. }
            | NodeKind::Gpu { tags, .. } => Some(tags),
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Memory { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// The engines of a DMA endpoint or a GPU's copy engines, whose transfers
    /// `sim::transfer` runs (None for other nodes, storage HBAs and NICs included).
    pub fn dma_device(&self) -> Option<&DmaDevice> {
        match self {
            NodeKind::Dma { device, .. } => Some(device),
            NodeKind::Gpu { engines, .. } => Some(engines),
            NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }
}

/// What the simulator, the fluid engine and the loader ask of a node's kind: every match over
/// the kinds is here, so a new kind answers each question in this one file.
impl NodeKind {
    /// Whether it is a root complex.
    #[inline]
    pub fn is_root_complex(&self) -> bool {
        match self {
            NodeKind::RootComplex { .. } => true,
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => false,
        }
    }

    /// The scenario section that describes it and that section's index among the four
    /// (`root_complex` 0, `switch` 1, `ntb` 2, `endpoint` 3).
    #[inline]
    pub fn section(&self) -> (&'static str, usize) {
        match self {
            NodeKind::RootComplex { .. } => ("root_complex", 0),
            NodeKind::Switch { .. } => ("switch", 1),
            NodeKind::Ntb { .. } => ("ntb", 2),
            NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => ("endpoint", 3),
        }
    }

    /// How TLPs cross it port to port, if it passes them on between its own ports (a switch,
    /// a bridge): its forwarding, latency and latency by the narrower port's width.
    #[inline]
    pub fn crossing(&self) -> Option<(Forwarding, SimTime, &LatencyByWidth)> {
        match self {
            NodeKind::Switch {
                forwarding,
                latency,
                latency_by_width,
                ..
            } => Some((*forwarding, *latency, latency_by_width)),
            NodeKind::Ntb { latency, .. } => Some((Forwarding::CutThrough, *latency, &[])),
            NodeKind::RootComplex { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Whether it takes a TLP's last byte in before it passes the TLP on (a store-and-forward
    /// switch, a root complex, an endpoint), rather than cut-through.
    #[inline]
    pub fn stores_and_forwards(&self) -> bool {
        match self {
            NodeKind::Switch { forwarding, .. } => *forwarding == Forwarding::StoreAndForward,
            NodeKind::Ntb { .. } => false,
            NodeKind::RootComplex { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => true,
        }
    }

    /// The latency it adds passing a TLP on: a switch's or bridge's port-to-port latency, a
    /// root complex's peer-to-peer latency where the TLP goes `peer` to peer, else zero.
    #[inline]
    pub fn forwarding_latency(&self, peer: bool) -> SimTime {
        match self {
            NodeKind::Switch { latency, .. } | NodeKind::Ntb { latency, .. } => *latency,
            NodeKind::RootComplex { p2p, .. } if peer => p2p.map_or(SimTime::ZERO, |q| q.latency),
            NodeKind::RootComplex { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => SimTime::ZERO,
        }
    }

    /// The latency for which it holds a received TLP's buffer before passing the TLP on, if
    /// it holds the buffer until the TLP has left it (a switch).
    #[inline]
    pub fn holds_until_forwarded(&self) -> Option<SimTime> {
        match self {
            NodeKind::Switch { latency, .. } => Some(*latency),
            NodeKind::RootComplex { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Its egress arbiter with `ports` ports: its weights per input, and whether it serves
    /// the oldest TLP first.
    #[inline]
    pub fn arbiter_inputs(&self, ports: usize) -> (Vec<u32>, bool) {
        match self {
            NodeKind::Switch {
                arbitration: Arbitration::Weighted(w),
                ..
            } => (w.clone(), false),
            NodeKind::Switch { arbitration, .. } => {
                (vec![1; ports], *arbitration == Arbitration::Oldest)
            }
            NodeKind::Ntb { .. } => (vec![1; ports], false),
            // The peer-to-peer TLPs a root complex forwards come in on their root port's
            // input, its own TLPs on one more after them.
            NodeKind::RootComplex { .. } => (vec![1; ports + 1], false),
            // An endpoint's one port.
            NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => (vec![1], false),
        }
    }

    /// The rate of a switch's shared bus, if it is a switch with one.
    #[inline]
    pub fn shared_bus(&self) -> Option<f64> {
        match self {
            NodeKind::Switch {
                core: Core::SharedBus(rate),
                ..
            } => Some(*rate),
            NodeKind::Switch { .. }
            | NodeKind::RootComplex { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// A switch's default for whether its downstream ports redirect peer-to-peer TLPs
    /// upstream (None: it is no switch).
    #[inline]
    pub fn switch_acs_redirect(&self) -> Option<bool> {
        match self {
            NodeKind::Switch { acs_redirect, .. } => Some(*acs_redirect),
            NodeKind::RootComplex { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Reads it may have outstanding at once: an endpoint's tags, a root complex's own read
    /// tags, unlimited for nodes that issue no reads.
    #[inline]
    pub fn outstanding_reads(&self) -> u32 {
        match self {
            NodeKind::RootComplex { read_tags, .. } => *read_tags,
            NodeKind::Dma { tags, .. }
            | NodeKind::Storage { tags, .. }
            | NodeKind::Nic { tags, .. }
            | NodeKind::Nvme { tags, .. }
            | NodeKind::Gpu { tags, .. } => *tags,
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Memory { .. }
            | NodeKind::CxlMemory { .. } => u32::MAX,
        }
    }

    /// Whether its engines time a read request from its transfer's start in the device (a
    /// DMA endpoint, as pcie-bench does) rather than from when it leaves (a GPU's copy).
    #[inline]
    pub fn times_reads_in_device(&self) -> bool {
        match self {
            NodeKind::Gpu { .. } => false,
            NodeKind::Dma { .. }
            | NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::CxlMemory { .. } => true,
        }
    }

    /// Whether a memcpy workload may run on it (a GPU's copy engines).
    #[inline]
    pub fn runs_memcpy(&self) -> bool {
        match self {
            NodeKind::Gpu { .. } => true,
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::CxlMemory { .. } => false,
        }
    }

    /// Whether every TLP it owns is a DMA flow's (a DMA endpoint, a storage HBA, a GPU's
    /// copy engines): the flow code, not the node, says which workload one belongs to.
    #[inline]
    pub fn owns_only_flow_tlps(&self) -> bool {
        match self {
            NodeKind::Dma { .. } | NodeKind::Storage { .. } | NodeKind::Gpu { .. } => true,
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::CxlMemory { .. } => false,
        }
    }

    /// Its Ethernet side, if it is a NIC.
    #[inline]
    pub fn nic(&self) -> Option<&NicSpec> {
        match self {
            NodeKind::Nic { nic, .. } => Some(nic),
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Its controller and media, if it is an NVMe drive.
    #[inline]
    pub fn nvme(&self) -> Option<&NvmeSpec> {
        match self {
            NodeKind::Nvme { spec, .. } => Some(spec),
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// The rate at which the posted write data it sinks leaves its receive buffer, if a
    /// root complex's memory or posted-write sink limits it.
    #[inline]
    pub fn posted_sink_rate(&self) -> Option<f64> {
        match self {
            NodeKind::RootComplex {
                memory_bandwidth,
                posted_write_rate,
                ..
            } => memory_bandwidth.or(*posted_write_rate),
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// The rate its BAR memory absorbs written data at, if it is a memory endpoint or a GPU
    /// with a limit.
    #[inline]
    pub fn bar_write_rate(&self) -> Option<f64> {
        match self {
            NodeKind::Memory { write_rate, .. } | NodeKind::Gpu { write_rate, .. } => *write_rate,
            NodeKind::CxlMemory { media_write, .. } => Some(*media_write),
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Nvme { .. } => None,
        }
    }

    /// The host bridge its memory traffic crosses, if it is a root complex behind one.
    #[inline]
    pub fn host_bridge(&self) -> Option<usize> {
        match self {
            NodeKind::RootComplex { host_bridge, .. } => *host_bridge,
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Mean read request to first completion data of its memory, host bridge aside (zero
    /// for nodes with no memory).
    #[inline]
    pub fn read_latency(&self) -> SimTime {
        match self {
            NodeKind::RootComplex { read_latency, .. } => read_latency.mean(),
            NodeKind::Memory { read_latency, .. } | NodeKind::Gpu { read_latency, .. } => {
                *read_latency
            }
            NodeKind::CxlMemory { media_latency, .. } => *media_latency,
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Nvme { .. } => SimTime::ZERO,
        }
    }

    /// The completion payload size it answers reads with under `pcie`.
    #[inline]
    pub fn completion_size(&self, pcie: &PcieSettings) -> u32 {
        match self {
            NodeKind::RootComplex {
                completion: CompletionRule::Rcb,
                ..
            } => pcie.rcb.min(pcie.mps),
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => pcie.mps,
        }
    }

    /// The depth of its shared outbound queue (TLPs per root port), if it is a root complex
    /// with one.
    #[inline]
    pub fn shared_outbound(&self) -> Option<u32> {
        match self {
            NodeKind::RootComplex {
                shared_outbound, ..
            } => *shared_outbound,
            NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. }
            | NodeKind::CxlMemory { .. } => None,
        }
    }

    /// Why the fluid engine cannot model it, if it cannot (a root complex with a host memory
    /// model or a shared outbound queue), completing "NAME ...".
    #[inline]
    pub fn fluid_refusal(&self) -> Option<&'static str> {
        match self {
            NodeKind::RootComplex {
                host_memory: Some(_),
                ..
            } => Some("has a host memory model (LLC, IOMMU)"),
            NodeKind::RootComplex {
                shared_outbound: Some(_),
                ..
            } => Some("has a shared outbound queue (head-of-line order)"),
            NodeKind::CxlMemory { .. } => {
                Some("is a CXL memory expander (read media not modelled)")
            }
            NodeKind::RootComplex { .. }
            | NodeKind::Switch { .. }
            | NodeKind::Ntb { .. }
            | NodeKind::Dma { .. }
            | NodeKind::Storage { .. }
            | NodeKind::Nic { .. }
            | NodeKind::Memory { .. }
            | NodeKind::Nvme { .. }
            | NodeKind::Gpu { .. } => None,
        }
    }
}

/// What drives a workload's requests, as [`WorkloadKind::driver`] answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Driver {
    /// Its flow's write and read streams, or its endpoint's engines (`sim::transfer`).
    Streams,
    /// Its NVMe drive's fio jobs.
    FioJobs,
    /// Its NIC's Ethernet frames.
    Frames,
}

/// What a workload is (its `[[workload]]` section's `kind`), with the settings only that
/// kind has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum WorkloadKind {
    /// DMA transfers by an endpoint or a root complex (`kind = "dma"`).
    Dma,
    /// A storage HBA's I/O mix (`kind = "storage"`): DMA writes carry the storage reads,
    /// DMA reads the storage writes.
    Storage(StorageMix),
    /// Ethernet bridging (`kind = "bridge"`): frames on both ports of the NIC that is its
    /// source, bridged by the `[cpu]`.
    Bridge(BridgeSpec),
    /// fio on the NVMe drive that is its source (`kind = "fio"`): its jobs' I/Os.
    Fio(FioSpec),
    /// One direction of a GPU's memcpy (`kind = "memcpy"`): what its copy engines copy
    /// (results report it in GB/s).
    Memcpy(CopyDirection),
    /// A requester's loads or stores of cache lines in a CXL memory expander
    /// (`kind = "cxl_mem"`): its reads or its writes (results of its own, `cxl`).
    CxlMem,
}

impl WorkloadKind {
    /// The access mix of a storage workload (None for other kinds).
    pub fn storage(&self) -> Option<StorageMix> {
        match self {
            WorkloadKind::Storage(m) => Some(*m),
            WorkloadKind::Dma
            | WorkloadKind::Bridge(_)
            | WorkloadKind::Fio(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => None,
        }
    }

    /// The frames of an Ethernet bridging workload (None for other kinds).
    pub fn bridge(&self) -> Option<BridgeSpec> {
        match self {
            WorkloadKind::Bridge(b) => Some(*b),
            WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Fio(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => None,
        }
    }

    /// The jobs of an fio workload (None for other kinds).
    pub fn fio(&self) -> Option<FioSpec> {
        match self {
            WorkloadKind::Fio(f) => Some(*f),
            WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Bridge(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => None,
        }
    }

    /// What a memcpy flow copies (None for other kinds).
    pub fn memcpy(&self) -> Option<CopyDirection> {
        match self {
            WorkloadKind::Memcpy(c) => Some(*c),
            WorkloadKind::CxlMem
            | WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Bridge(_)
            | WorkloadKind::Fio(_) => None,
        }
    }

    /// The frames of an Ethernet bridging workload, to change (None for other kinds).
    #[inline]
    pub fn bridge_mut(&mut self) -> Option<&mut BridgeSpec> {
        match self {
            WorkloadKind::Bridge(b) => Some(b),
            WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Fio(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => None,
        }
    }

    /// Whether its source's reads are answered whatever its direction (a NIC's descriptor
    /// and frame reads, an NVMe drive's command and data reads).
    #[inline]
    pub fn answered(&self) -> bool {
        match self {
            WorkloadKind::Bridge(_) | WorkloadKind::Fio(_) => true,
            WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => false,
        }
    }

    /// What its results count, in words ("transfers", "I/Os", "copies"); None for bridging,
    /// whose frames its Ethernet results count.
    #[inline]
    pub fn unit_noun(&self) -> Option<&'static str> {
        match self {
            WorkloadKind::Bridge(_) => None,
            WorkloadKind::Fio(_) => Some("I/Os"),
            WorkloadKind::Memcpy(_) => Some("copies"),
            WorkloadKind::CxlMem => Some("accesses"),
            WorkloadKind::Dma | WorkloadKind::Storage(_) => Some("transfers"),
        }
    }

    /// What drives its requests: its flow's streams, its drive's fio jobs or its NIC's
    /// frames (the simulator starts and paces it accordingly).
    #[inline]
    pub fn driver(&self) -> Driver {
        match self {
            WorkloadKind::Fio(_) => Driver::FioJobs,
            WorkloadKind::Bridge(_) => Driver::Frames,
            WorkloadKind::Dma
            | WorkloadKind::Storage(_)
            | WorkloadKind::Memcpy(_)
            | WorkloadKind::CxlMem => Driver::Streams,
        }
    }
}
