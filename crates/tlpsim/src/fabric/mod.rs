//! A checked system: the nodes, links, host bridges and workloads a scenario describes, with
//! every value validated and every name resolved to an index.
//!
//! [`crate::scenario`] builds it from a TOML file; [`crate::sim`] runs it.

use crate::engine::SimTime;
use crate::pcie::phy::Generation;
use crate::pcie::tlp::Addressing;

pub use crate::pcie::flow_control::{CreditType, CREDIT_TYPES};

mod kind;
pub use kind::{Driver, NodeKind, TargetKind, WorkloadKind};

/// Index of a node in [`System::nodes`].
pub type NodeId = usize;

/// Credits a receiving port advertises per type (in the order of [`CREDIT_TYPES`]); `None`
/// is infinite.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Credits(pub [Option<u32>; 6]);

/// How a switch forwards a TLP.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Forwarding {
    /// Start sending on the egress port once the header is in (unless the egress is faster).
    CutThrough,
    /// Receive the whole TLP first.
    StoreAndForward,
}

/// When a receiver sends the Ack and UpdateFC DLLPs it owes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckPolicy {
    /// At the spec's Ack/UpdateFC latency interval, coalescing what arrived meanwhile.
    Timer,
    /// As soon as something is owed (each accepted TLP, each freed buffer), ahead of the next
    /// TLP; one still waiting for the wire takes the newer sequence number or credit count.
    Immediate,
}

/// A switch's internal fabric.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Core {
    /// Non-blocking: only egress ports contend.
    Crossbar,
    /// One shared bus every TLP crosses, at this many bytes per second.
    SharedBus(f64),
}

/// Which ingress port an egress port serves next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arbitration {
    /// One TLP per ingress port in turn.
    RoundRobin,
    /// `weights[port]` TLPs per turn (ports in order: the upstream port, then the downstream
    /// ports in the order of their links).
    Weighted(Vec<u32>),
    /// The oldest TLP any ingress port has ready (credits, ordering rules) goes first: the
    /// fixed egress arbitration of PLX ExpressLane switches (PEX 8532 data book, section 8.3,
    /// "Egress Port Arbitration").
    Oldest,
}

/// Completion sizes a completer uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CompletionRule {
    /// One completion per RCB-aligned block.
    Rcb,
    /// Completions up to MPS, split at RCB-aligned addresses.
    Mps,
}

/// An NVMe drive's controller and media, as the PCIe side sees them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NvmeSpec {
    /// I/O submission/completion queue pairs.
    pub queues: u32,
    /// Entries per queue (one is always left empty: at most `queue_depth - 1` commands).
    pub queue_depth: u32,
    /// Commands per second its command processor handles, if limited.
    pub command_rate: Option<f64>,
    /// Bytes/s the media reads at, if limited.
    pub read_bandwidth: Option<f64>,
    /// Bytes/s the media writes at, if limited.
    pub write_bandwidth: Option<f64>,
    /// Media time of each read command before its data streams.
    pub read_latency: SimTime,
    /// Media time of each write command after its data is in.
    pub write_latency: SimTime,
    /// Largest I/O one command moves (MDTS), if limited.
    pub max_transfer: Option<u64>,
    /// Bytes of write data it holds before the media has them (a write's data are fetched
    /// once they fit; one larger than the whole buffer waits for it to be empty).
    pub write_buffer: u64,
}

/// How a root complex forwards peer-to-peer TLPs between its root ports: store-and-forward,
/// after `latency`, through a data path of `bandwidth`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerForwarding {
    /// Bytes/s of TLP payload it forwards, if limited.
    pub bandwidth: Option<f64>,
    /// Added to each TLP it forwards, after its last byte is in.
    pub latency: SimTime,
}

/// One side (reads or writes) of a DMA endpoint: its engines and what they spend on a
/// transfer. The default (unlimited engines, no costs, no latency) leaves the fabric alone
/// to limit the endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct DmaEngines {
    /// Transfers it processes at once (None: as many as the workloads keep in flight).
    pub engines: Option<u32>,
    /// Engine time to issue each request TLP (MRd or MWr): one engine issues at most one
    /// request per this time.
    pub request_cost: SimTime,
    /// Engine time per transfer, before its first request.
    pub transfer_cost: SimTime,
    /// Device-internal time added to each transfer before it takes an engine (it holds no
    /// engine meanwhile).
    pub latency: SimTime,
    /// Device-internal time per KiB of a transfer's data, added to `latency` (it holds no
    /// engine either).
    pub latency_per_kib: SimTime,
    /// Engine time per KiB of a transfer's data (its engine's data rate), with
    /// `transfer_cost`.
    pub transfer_cost_per_kib: SimTime,
    /// Engine time per device memory word ([`DmaDevice::unit`]) that a transfer covers only
    /// in part (it overlaps the per-KiB time: the longer of the two counts).
    pub partial_unit_cost: SimTime,
    /// Read requests each transfer (the engine working on it) keeps in flight at most, on
    /// top of the endpoint's tags (None: the tags alone limit them).
    pub reads_per_engine: Option<u32>,
}

/// A DMA endpoint's own limits: its read side and its write side (each with its own
/// engines), its memory word, and the descriptor and status TLPs around each transfer.
/// The default is none of them: the endpoint is limited by the fabric alone.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DmaDevice {
    /// What its DMA reads (MRd out, CplD in) cost.
    pub read: DmaEngines,
    /// What its DMA writes (MWr out) cost.
    pub write: DmaEngines,
    /// Bytes in one word of its memory (a power of two; 1: no words): a request carries at
    /// most its maximum size in whole words, and a word covered only in part costs
    /// `partial_unit_cost`.
    pub unit: u32,
    /// Bytes of the descriptor it reads (an MRd to host memory) before each transfer; 0 for
    /// none.
    pub descriptor: u32,
    /// Bytes of the status it writes (an MWr to host memory) after each transfer; 0 for
    /// none.
    pub status_writeback: u32,
}

impl Default for DmaDevice {
    fn default() -> Self {
        DmaDevice {
            read: DmaEngines::default(),
            write: DmaEngines::default(),
            unit: 1,
            descriptor: 0,
            status_writeback: 0,
        }
    }
}

impl DmaDevice {
    /// Whether it limits nothing (the fabric alone limits the endpoint).
    pub fn is_none(&self) -> bool {
        *self == DmaDevice::default()
    }

    /// Its read side or its write side.
    pub fn side(&self, read: bool) -> &DmaEngines {
        if read {
            &self.read
        } else {
            &self.write
        }
    }
}

/// The side of a non-transparent bridge a memory window faces.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NtbSide {
    /// A BAR in the domain above the bridge: TLPs into it cross downward.
    Up,
    /// A BAR in the domain below the bridge: TLPs into it cross upward.
    Down,
}

/// A memory window of a non-transparent bridge: a BAR of `size` bytes at `base` in the
/// domain on `side`; a TLP addressed `base + offset` leaves on the other side addressed
/// `translate + offset`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NtbWindow {
    /// The domain whose address space holds the BAR.
    pub side: NtbSide,
    /// BAR address (a multiple of `size`).
    pub base: u64,
    /// Window size in bytes (a power of two).
    pub size: u64,
    /// Address in the other domain that `base` maps to (a multiple of `size`).
    pub translate: u64,
}

impl NtbWindow {
    /// The translated address of `[addr, addr + len)` if it lies wholly in this window;
    /// `Err(())` if it starts inside but runs past the end.
    pub fn translate(&self, addr: u64, len: u64) -> Option<Result<u64, ()>> {
        let off = addr.checked_sub(self.base).filter(|&o| o < self.size)?;
        Some(if off + len <= self.size {
            Ok(self.translate + off)
        } else {
            Err(())
        })
    }
}

/// Where a workload's `target_address` leads: the address in the source's domain and each
/// bridge crossed with the address on its far side (the last one lies in the target's
/// memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AddressPath {
    /// The address the source writes or reads, in its own domain.
    pub address: u64,
    /// Bridges crossed, in order, with the translated address beyond each.
    pub crossings: Vec<(NodeId, u64)>,
}

impl AddressPath {
    /// "0x80001000 -> nt1 -> 0x20001000 -> nt2 -> 0x1000 (ep2)": the address as each bridge
    /// passes it on, ending in `target`'s memory.
    pub fn describe(&self, nodes: &[NodeSpec], target: NodeId) -> String {
        let mut s = format!("{:#x}", self.address);
        for (b, a) in &self.crossings {
            s.push_str(&format!(" -> {} -> {a:#x}", nodes[*b].name));
        }
        s.push_str(&format!(" ({})", nodes[target].name));
        s
    }
}

/// The Ethernet side of a Gigabit Ethernet NIC: ports, receive FIFO, descriptor rings,
/// register access time and interrupt moderation.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct NicSpec {
    /// Ethernet ports (1 or 2); a bridge workload forwards port 0 <-> port 1.
    pub ports: u32,
    /// Receive FIFO per port in bytes: a frame that does not fit is dropped.
    pub rx_fifo: u32,
    /// Receive descriptors per port.
    pub rx_ring: u32,
    /// Transmit descriptors per port.
    pub tx_ring: u32,
    /// Time the NIC takes to absorb one register write or answer one register read; the
    /// posted credit of a write comes back only after it.
    pub register_time: SimTime,
    /// Interrupt moderation: least time between two interrupts (zero: none).
    pub interrupt_interval: SimTime,
    /// Ethernet line rate per port, bits per second.
    pub line_rate: f64,
}

/// The host CPU and OS that bridge Ethernet frames between NIC ports.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CpuSpec {
    /// The root complex the CPU sits behind (its MMIO goes out of this root's ports).
    pub root: NodeId,
    /// Cores taking NIC interrupts (NIC i goes to core i mod cores).
    pub cores: u32,
    /// Software cost per bridged frame.
    pub frame_cost: SimTime,
    /// Software cost per byte of a bridged frame, picoseconds.
    pub byte_cost_ps: f64,
    /// Cost of taking one interrupt (entry, exit, scheduling the handler).
    pub interrupt_cost: SimTime,
    /// Blocking register reads per interrupt (the interrupt cause register).
    pub reads_per_interrupt: u32,
    /// Register writes per frame (the first rings the transmit doorbell).
    pub writes_per_frame: u32,
    /// Register writes at the end of each interrupt (at least one: it returns the receive
    /// descriptors, rings the doorbell if no per-frame write does, and re-enables interrupts).
    pub writes_per_interrupt: u32,
    /// Register writes the root complex can hold before the CPU stalls on the next one.
    pub posted_depth: u32,
}

/// An Ethernet bridging workload: frames offered on both ports of a NIC, bridged by the host
/// CPU to the other port (RFC 2544 style, constant frame size and rate).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BridgeSpec {
    /// Ethernet frame size in bytes (64 to 1518, CRC included).
    pub frame_size: u32,
    /// Offered load per port as a fraction of line rate (0 to 1].
    pub load: f64,
}

/// The drives (or RAM disks) behind a storage HBA, as the PCIe side sees them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MediaSpec {
    /// Bytes/s the media delivers for storage reads (the HBA writes them to host memory).
    pub read: f64,
    /// Bytes/s the media absorbs for storage writes (the HBA reads them from host memory).
    pub write: f64,
    /// Time lost each time the media switches between reads and writes.
    pub turnaround: SimTime,
    /// Access time of a random I/O (seek and rotation, spread over the drives).
    pub seek: SimTime,
    /// Reads and writes proceed at once, each at its own rate (RAM disks, full-duplex
    /// links); otherwise the media serves one at a time.
    pub duplex: bool,
}

/// An Iometer-style storage access mix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StorageMix {
    /// Percent of I/Os that are storage reads (0–100).
    pub read_percent: u32,
    /// Bytes per storage read I/O.
    pub read_size: u64,
    /// Bytes per storage write I/O.
    pub write_size: u64,
    /// Random rather than sequential access: every I/O pays the media's seek.
    pub random: bool,
}

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    /// Its name in the scenario.
    pub name: String,
    /// What it is.
    pub kind: NodeKind,
    /// Credits each of its ingress ports advertises.
    pub credits: Credits,
    /// How long it waits for the completions of a read it made before it gives up on the
    /// read (a requester's Completion Timeout); None: never (disabled, or not a requester).
    pub completion_timeout: Option<SimTime>,
}

/// One link, upstream node first.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkSpec {
    /// "up-down".
    pub name: String,
    /// Upstream node.
    pub up: NodeId,
    /// Downstream node.
    pub down: NodeId,
    /// Generation.
    pub gen: Generation,
    /// Lanes.
    pub width: u32,
    /// Flit mode.
    pub flit: bool,
    /// SKP ordered sets sent.
    pub skp: bool,
    /// One-way propagation delay.
    pub propagation: SimTime,
    /// Time in Recovery when the link retrains (REPLAY_NUM rollover).
    pub recovery: SimTime,
    /// Bit error rate applied to TLPs and DLLPs.
    pub ber: f64,
    /// Replay buffer capacity in bytes.
    pub replay_buffer: u32,
    /// When the receivers on this link send their Acks and UpdateFCs.
    pub ack: AckPolicy,
    /// Whether the switch port at its upper end redirects peer-to-peer TLPs it receives
    /// upstream (ACS); false where the upper end is not a switch.
    pub acs_redirect: bool,
}

impl LinkSpec {
    /// Bit rate of the link after encoding (and flit packing), Gb/s: what a switch port
    /// compares to decide whether it cuts through.
    pub fn port_gbps(&self) -> f64 {
        use crate::pcie::{flit, phy};
        phy::encoded_gbps(self.gen, self.width) * if self.flit { flit::tlp_fraction() } else { 1.0 }
    }
}

/// A bandwidth-capped, latency-adding hop between root complexes and memory.
#[derive(Debug, Clone, PartialEq)]
pub struct HostBridgeSpec {
    /// Its name.
    pub name: String,
    /// Bytes per second, shared by every root complex behind it, both directions.
    pub bandwidth: f64,
    /// Latency added each way.
    pub latency: SimTime,
}

/// An inter-socket link (UPI, Infinity Fabric) between two root complexes: TLPs between
/// their trees cross it, each direction paced at `bandwidth` and delayed by `latency`.
#[derive(Debug, Clone, PartialEq)]
pub struct SocketLinkSpec {
    /// "a-b", the two root complexes' names.
    pub name: String,
    /// One root complex.
    pub a: NodeId,
    /// The other.
    pub b: NodeId,
    /// Payload bytes per second in each direction.
    pub bandwidth: f64,
    /// One-way latency.
    pub latency: SimTime,
}

/// What a DMA workload moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DmaDirection {
    /// Reads from the target's memory (MRd out, CplD back).
    Read,
    /// Writes to the target's memory (MWr).
    Write,
    /// Both at once: a read stream and a write stream, each with its own transfers.
    Both,
    /// One stream of transfers that alternate: a write, a read, a write, ... (pcie-bench's
    /// BW_DMA_RW).
    Alternate,
    /// Each transfer writes, then reads the same host address once the write has left
    /// (pcie-bench's LAT_DMA_WRRD); the read's latency counts from the write's start.
    WriteRead,
}

impl DmaDirection {
    /// Whether it reads the target's memory.
    pub fn reads(self) -> bool {
        self != DmaDirection::Write
    }

    /// Whether it writes the target's memory.
    pub fn writes(self) -> bool {
        self != DmaDirection::Read
    }

    /// Whether its transfers are one stream mixing reads and writes (alternate,
    /// write-read).
    pub fn mixed(self) -> bool {
        matches!(self, DmaDirection::Alternate | DmaDirection::WriteRead)
    }
}

/// The order in which a workload's transfers visit the slots of its window.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressPattern {
    /// One slot after the other, wrapping at the window's end.
    Sequential,
    /// A slot drawn uniformly from the run's seeded random numbers for each transfer.
    Random,
}

/// Bytes of a cache line: a window's slots are whole cache lines.
pub const CACHE_LINE: u64 = 64;

/// Where a workload's transfers lie: host addresses (offsets into its buffer, which starts
/// on a 4 KiB boundary) and the device address. The window holds `window / slot` slots of
/// `slot` bytes (the transfer size plus the host offset, rounded up to a cache line), and
/// each transfer starts `host_offset` bytes into its slot; a slot where a transfer of at
/// most 4 KiB would cross a 4 KiB boundary is passed over (pcie-bench lays its window
/// out this way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Addresses {
    /// Bytes of host buffer the transfers walk over (a whole number of slots).
    pub window: u64,
    /// Bytes of one slot.
    pub slot: u64,
    /// Sequential or random.
    pub pattern: AddressPattern,
    /// Bytes from a slot's start to its transfer's first byte.
    pub host_offset: u64,
    /// Address of a transfer's first byte in the device's memory.
    pub device_offset: u64,
}

impl Addresses {
    /// Every transfer of `transfer_size` bytes at the start of one slot, the same each
    /// time: what a workload with no address keys does.
    pub fn single(transfer_size: u64) -> Self {
        let slot = transfer_size.div_ceil(CACHE_LINE) * CACHE_LINE;
        Addresses {
            window: slot,
            slot,
            pattern: AddressPattern::Sequential,
            host_offset: 0,
            device_offset: 0,
        }
    }

    /// Slots in the window.
    pub fn slots(&self) -> u64 {
        self.window / self.slot
    }
}

/// The state of the host's caches for a workload's window when the run starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CacheState {
    /// The host CPU touched the window first (pcie-bench's HWarm).
    Warm,
    /// The host's caches were thrashed first (pcie-bench's Cold, DThrash).
    Cold,
    /// The device wrote the window first: its lines are in the DDIO ways (pcie-bench's
    /// DWarm).
    DeviceWarm,
    /// The other socket's CPU touched the window first: its cache holds the lines
    /// (pcie-bench's HWarm with the program on the other socket).
    RemoteWarm,
}

/// A workload: one flow of requests from its source to its target.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadSpec {
    /// Its name (the flow's name in results).
    pub name: String,
    /// The node that issues the requests.
    pub source: NodeId,
    /// The node whose memory is read or written.
    pub target: NodeId,
    /// Read, write or both.
    pub direction: DmaDirection,
    /// Bytes per transfer.
    pub transfer_size: u64,
    /// Transfers in flight at once (per direction).
    pub outstanding: u32,
    /// What kind of workload it is, with the settings only that kind has.
    pub kind: WorkloadKind,
    /// Largest write TLP payload the source sends; MPS caps it (an x86 CPU or DMA engine
    /// writing whole 64-byte cache lines sends 64).
    pub tlp_payload: u32,
    /// Writes into another domain: the doorbell rung after every few transfers.
    pub doorbell: Option<Doorbell>,
    /// The target given as an address: the windows it crosses (None when named).
    pub address: Option<AddressPath>,
    /// Where its transfers lie in host and device memory.
    pub addresses: Addresses,
    /// The host's caches for its window when the run starts (with a host memory model).
    pub cache: CacheState,
    /// Its `rate`: payload bytes per second each stream (each fio job) may offer, paced
    /// from the run's start (no cap when None).
    pub rate: Option<f64>,
}

/// What an fio job does: `rw`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FioRw {
    /// Sequential reads.
    Read,
    /// Sequential writes.
    Write,
    /// Random reads.
    RandRead,
    /// Random writes.
    RandWrite,
}

impl FioRw {
    /// Whether its I/Os read the drive (their data goes to memory as the drive's MWr).
    pub fn reads(self) -> bool {
        matches!(self, FioRw::Read | FioRw::RandRead)
    }

    /// Its word, as fio and a scenario file write it.
    pub fn word(self) -> &'static str {
        match self {
            FioRw::Read => "read",
            FioRw::Write => "write",
            FioRw::RandRead => "randread",
            FioRw::RandWrite => "randwrite",
        }
    }
}

/// An fio workload on an NVMe drive: `numjobs` jobs, each keeping `iodepth` I/Os of `bs`
/// bytes in flight on its own queue pair.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FioSpec {
    /// Reads or writes, sequential or random.
    pub rw: FioRw,
    /// Bytes per I/O.
    pub bs: u64,
    /// I/Os each job keeps in flight.
    pub iodepth: u32,
    /// Jobs.
    pub numjobs: u32,
    /// The drive's queue pair of its first job (job `j` uses `(first_queue + j) % queues`).
    pub first_queue: u32,
}

/// What the flow of a GPU's memcpy workload copies (nvbandwidth's copy patterns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyDirection {
    /// Host to device: the GPU's copy engines read host memory.
    HostToDevice,
    /// Device to host: the GPU's copy engines write host memory.
    DeviceToHost,
    /// Peer to peer: the GPU's copy engines write another endpoint's BAR.
    PeerWrite,
    /// Peer to peer: the GPU's copy engines read another endpoint's BAR.
    PeerRead,
}

impl CopyDirection {
    /// Its word in results ("h2d", "d2h", "p2p-write", "p2p-read").
    pub fn word(self) -> &'static str {
        match self {
            CopyDirection::HostToDevice => "h2d",
            CopyDirection::DeviceToHost => "d2h",
            CopyDirection::PeerWrite => "p2p-write",
            CopyDirection::PeerRead => "p2p-read",
        }
    }
}

/// A non-transparent bridge's doorbell, rung by a writer after every `every` transfers; the
/// bridge answers with an MSI to the root complex below it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Doorbell {
    /// Transfers per doorbell (1 = one per frame).
    pub every: u32,
    /// The bridge whose doorbell register is written.
    pub ntb: NodeId,
}

/// Bytes of scratchpad registers a non-transparent bridge offers (eight 32-bit registers).
pub const SCRATCHPAD_BYTES: u64 = 32;

/// Transaction-layer settings shared by the whole system.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PcieSettings {
    /// Max_Payload_Size.
    pub mps: u32,
    /// Max_Read_Request_Size.
    pub mrrs: u32,
    /// Read completion boundary.
    pub rcb: u32,
    /// Memory request addressing.
    pub addressing: Addressing,
    /// ECRC on every TLP.
    pub ecrc: bool,
}

/// Which engine runs a system: the TLP-level simulator or the flow-level model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Engine {
    /// The discrete-event simulator (`sim`).
    #[default]
    Des,
    /// The flow-level model (`fluid`).
    Fluid,
}

/// A checked, runnable system.
#[derive(Debug, Clone, PartialEq)]
pub struct System {
    /// The engine its `[simulation]` asks for.
    pub engine: Engine,
    /// Simulated time to run, warmup included.
    pub duration: SimTime,
    /// Time before statistics start.
    pub warmup: SimTime,
    /// RNG seed.
    pub seed: u64,
    /// Transaction-layer settings.
    pub pcie: PcieSettings,
    /// Nodes.
    pub nodes: Vec<NodeSpec>,
    /// Links.
    pub links: Vec<LinkSpec>,
    /// Host bridges.
    pub host_bridges: Vec<HostBridgeSpec>,
    /// Inter-socket links between root complexes.
    pub socket_links: Vec<SocketLinkSpec>,
    /// Workloads.
    pub workloads: Vec<WorkloadSpec>,
    /// The host CPU that bridges Ethernet frames, if the scenario has one.
    pub cpu: Option<CpuSpec>,
}

impl System {
    /// The index of the node called `name`.
    pub fn node(&self, name: &str) -> Option<NodeId> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// The node at the top of each node's tree (the one with no link above it: a root
    /// complex, for a checked system), indexed by node.
    pub fn tree_tops(&self) -> Vec<NodeId> {
        let mut above: Vec<Option<NodeId>> = vec![None; self.nodes.len()];
        for l in &self.links {
            above[l.down] = Some(l.up);
        }
        (0..self.nodes.len())
            .map(|mut n| {
                // A checked system's links form trees; the bound only guards a loop.
                for _ in 0..=self.nodes.len() {
                    match above[n] {
                        Some(up) => n = up,
                        None => break,
                    }
                }
                n
            })
            .collect()
    }

    /// Its shape as JSON, for pictures and matrices: `nodes` (`name`, `kind` as
    /// [`NodeKind::word`], `root_complex`: the root complex above it), `links` (`name`, `up`,
    /// `down`, `gen`, `width`), `socket_links` (`name`, `between`, `bandwidth` in bytes/s, `latency_ns`), `workloads`
    /// that run (`name`, `source`, `target`).
    pub fn topology_json(&self) -> serde_json::Value {
        use serde_json::json;
        let mut above: Vec<Option<NodeId>> = vec![None; self.nodes.len()];
        for l in &self.links {
            above[l.down] = Some(l.up);
        }
        let root = |mut n: NodeId| {
            let mut hops = 0;
            while let Some(up) = above[n] {
                if matches!(self.nodes[n].kind, NodeKind::RootComplex { .. })
                    || hops > self.nodes.len()
                {
                    break;
                }
                n = up;
                hops += 1;
            }
            matches!(self.nodes[n].kind, NodeKind::RootComplex { .. })
                .then(|| self.nodes[n].name.clone())
        };
        let nodes: Vec<_> = self
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| json!({"name": n.name, "kind": n.kind.word(), "root_complex": root(i)}))
            .collect();
        let links: Vec<_> = self
            .links
            .iter()
            .map(|l| {
                json!({
                    "name": l.name,
                    "up": self.nodes[l.up].name,
                    "down": self.nodes[l.down].name,
                    "gen": l.gen.number(),
                    "width": l.width,
                })
            })
            .collect();
        let workloads: Vec<_> = self
            .workloads
            .iter()
            .map(|w| {
                json!({
                    "name": w.name,
                    "source": self.nodes[w.source].name,
                    "target": self.nodes[w.target].name,
                })
            })
            .collect();
        let sockets: Vec<_> = self
            .socket_links
            .iter()
            .map(|s| {
                json!({
                    "name": s.name,
                    "between": [self.nodes[s.a].name, self.nodes[s.b].name],
                    "bandwidth": s.bandwidth,
                    "latency_ns": s.latency.as_ns_f64(),
                })
            })
            .collect();
        json!({"nodes": nodes, "links": links, "socket_links": sockets, "workloads": workloads})
    }
}
