//! Scenario files: the TOML format users write, its JSON Schema, and the checks that turn a
//! file into a runnable [`System`].
//!
//! Every error names the file, the section or key, what is wrong and what is allowed; the
//! TOML types reject unknown keys. Defaults for values the file leaves out are the
//! `DEFAULT_*` constants below.

mod set;

pub use set::set_value;

use std::collections::{BTreeMap, HashMap};
use std::fmt;

use schemars::JsonSchema;
use serde::Deserialize;

use crate::engine::rng::Latency;
use crate::engine::SimTime;
use crate::error::ConfigError;
use crate::fabric::AddressPath;
use crate::fabric::{
    AckPolicy, Arbitration, BridgeSpec, CompletionRule, Core, CpuSpec, Credits, DmaDirection,
    Doorbell, Forwarding, HostBridgeSpec, LinkSpec, MediaSpec, NicSpec, NodeId, NodeKind, NodeSpec,
    NtbSide, NtbWindow, PcieSettings, StorageMix, System, WorkloadSpec, SCRATCHPAD_BYTES,
};
use crate::pcie::phy::{self, Generation};
use crate::pcie::tlp::{self, Addressing};
use crate::units;

/// Credits an endpoint advertises unless told otherwise: PH, PD, NPH, NPD (CplH/CplD
/// infinite, as the spec requires of endpoints).
pub const DEFAULT_ENDPOINT_CREDITS: [Option<u32>; 6] =
    [Some(32), Some(512), Some(32), Some(32), None, None];
/// Credits a root port advertises unless told otherwise (completions infinite).
pub const DEFAULT_ROOT_CREDITS: [Option<u32>; 6] =
    [Some(64), Some(1024), Some(64), Some(64), None, None];
/// Credits a switch port advertises unless told otherwise (16 KiB of data per type).
pub const DEFAULT_SWITCH_CREDITS: [Option<u32>; 6] = [
    Some(64),
    Some(1024),
    Some(64),
    Some(64),
    Some(64),
    Some(1024),
];
/// Replay buffer bytes unless told otherwise.
pub const DEFAULT_REPLAY_BUFFER: &str = "16KiB";
/// Read tags an endpoint has unless told otherwise.
pub const DEFAULT_TAGS: u32 = 32;
/// Transfers a DMA workload keeps in flight unless told otherwise.
pub const DEFAULT_OUTSTANDING: u32 = 4;

/// A scenario file that could not be used: where, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct ScenarioError {
    /// The file's path, or `<text>` for a string.
    pub origin: String,
    /// One line: the key or section, the problem, what is allowed.
    pub message: String,
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for ScenarioError {}

/// `[simulation]`: how long to run and the seed.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulationSection {
    /// Simulated time including warmup, e.g. "200us" (default "100us").
    pub duration: Option<String>,
    /// Time before statistics start, e.g. "20us" (default 10 % of duration).
    pub warmup: Option<String>,
    /// RNG seed (default 1).
    pub seed: Option<u64>,
}

/// `[pcie]`: defaults for every link and device.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PcieSection {
    /// Max_Payload_Size in bytes (128–4096, default 128).
    pub mps: Option<i64>,
    /// Max_Read_Request_Size in bytes (128–4096, default 512).
    pub mrrs: Option<i64>,
    /// Read completion boundary in bytes (64 or 128, default 64).
    pub rcb: Option<i64>,
    /// Address bits of memory requests (32 or 64, default 64).
    pub addressing: Option<i64>,
    /// ECRC on every TLP (default false).
    pub ecrc: Option<bool>,
    /// Default generation of links (1–7, default 1).
    pub gen: Option<i64>,
    /// Default lane width of links (default 1).
    pub width: Option<i64>,
    /// Default SKP ordered sets on links (default true).
    pub skp: Option<bool>,
    /// Default bit error rate of links (default 0).
    pub ber: Option<f64>,
    /// Default one-way propagation delay of links (default "0ns").
    pub propagation: Option<String>,
    /// Default replay buffer of links (default "16KiB").
    pub replay_buffer: Option<String>,
    /// Default Ack policy of links: "timer" (the spec's Ack/UpdateFC latency interval,
    /// default) or "immediate" (an Ack or UpdateFC as soon as one is owed).
    pub ack: Option<String>,
}

/// A latency as written: "500ns", or a table naming a distribution.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum LatencyValue {
    /// A fixed value such as "500ns".
    Fixed(String),
    /// `{ distribution = "uniform", min = "400ns", max = "600ns" }` or
    /// `{ distribution = "exponential", min = "300ns", mean = "500ns" }`.
    Distribution(DistributionSection),
}

/// A latency distribution.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DistributionSection {
    /// "uniform" or "exponential".
    pub distribution: String,
    /// Smallest value.
    pub min: String,
    /// Largest value (uniform).
    pub max: Option<String>,
    /// Mean value (exponential).
    pub mean: Option<String>,
}

/// A credit count as written: a number or "infinite".
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum CreditValue {
    /// Credits (headers, or 16-byte data units).
    Count(i64),
    /// "infinite".
    Word(String),
}

/// Advertised credits of a device's ingress ports.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CreditsSection {
    /// Posted headers.
    pub ph: Option<CreditValue>,
    /// Posted data, 16-byte units.
    pub pd: Option<CreditValue>,
    /// Non-posted headers.
    pub nph: Option<CreditValue>,
    /// Non-posted data.
    pub npd: Option<CreditValue>,
    /// Completion headers.
    pub cplh: Option<CreditValue>,
    /// Completion data.
    pub cpld: Option<CreditValue>,
}

/// `[[root_complex]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RootComplexSection {
    /// Unique node name.
    pub name: String,
    /// Memory read latency (default "500ns").
    pub memory_read_latency: Option<LatencyValue>,
    /// Memory bandwidth shared by reads and writes, e.g. "2.5GB/s" (default unlimited).
    pub memory_bandwidth: Option<String>,
    /// Rate at which it sinks posted write data, before the memory, e.g. "1.6GB/s"
    /// (default unlimited).
    pub posted_write_rate: Option<String>,
    /// Name of a `[[host_bridge]]` between this root complex and memory.
    pub host_bridge: Option<String>,
    /// Completion sizes: "rcb" (one per RCB block, default) or "mps".
    pub completion: Option<String>,
    /// "per_port" (default: each root port queues its own TLPs) or "shared" (one queue in
    /// issue order feeds every root port; a TLP its port cannot take holds the rest back).
    pub outbound_queue: Option<String>,
    /// With a shared outbound queue: TLPs each root port holds beyond it (default 4).
    pub port_queue: Option<i64>,
    /// Credits its root ports advertise.
    pub credits: Option<CreditsSection>,
}

/// `[[switch]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SwitchSection {
    /// Unique node name.
    pub name: String,
    /// "cut-through" (default) or "store-and-forward".
    pub forwarding: Option<String>,
    /// Port-to-port latency (default "150ns").
    pub latency: Option<String>,
    /// Latency by the narrower port's width, e.g. { 4 = "200ns" }.
    pub latency_by_width: Option<BTreeMap<String, String>>,
    /// "crossbar" (default) or "shared-bus".
    pub core: Option<String>,
    /// Bandwidth of a shared-bus core, e.g. "4GB/s".
    pub core_bandwidth: Option<String>,
    /// "round-robin" (default), "weighted" or "oldest" (the oldest ready TLP of all ingress
    /// ports first).
    pub arbitration: Option<String>,
    /// Weighted arbitration: TLPs per turn by neighbour node name.
    pub weights: Option<BTreeMap<String, i64>>,
    /// Credits every port advertises.
    pub credits: Option<CreditsSection>,
}

/// `[[ntb]]`: a non-transparent bridge between two PCIe domains.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NtbSection {
    /// Unique node name.
    pub name: String,
    /// Port-to-port latency, window translation included (default "150ns").
    pub latency: Option<String>,
    /// Credits each side advertises.
    pub credits: Option<CreditsSection>,
    /// Memory windows (BARs) with their address translation (default none: cross-domain
    /// targets are then named, not addressed).
    #[serde(default)]
    pub window: Vec<NtbWindowSection>,
}

/// `[[ntb.window]]`: a BAR of a non-transparent bridge and where it lands on the far side.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NtbWindowSection {
    /// "up" (a BAR in the domain above: TLPs into it cross downward) or "down" (a BAR the
    /// host below sees: TLPs into it cross upward).
    pub side: String,
    /// BAR address in that side's domain, e.g. "0x8000_0000" (a multiple of size).
    pub base: String,
    /// Window size, a power of two, e.g. "256MiB".
    pub size: String,
    /// Address on the far side that base maps to, e.g. "0x1_0000_0000" (a multiple of size).
    pub translate: String,
}

/// `[[endpoint]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct EndpointSection {
    /// Unique node name.
    pub name: String,
    /// "dma" (a DMA engine), "storage" (an HBA with its drives) or "nic" (a GE NIC).
    pub kind: String,
    /// Read tags (default 32).
    pub tags: Option<i64>,
    /// Credits it advertises.
    pub credits: Option<CreditsSection>,
    /// Storage only: rate the drives deliver reads, e.g. "800MB/s".
    pub media_read: Option<String>,
    /// Storage only: rate the drives absorb writes, e.g. "700MB/s".
    pub media_write: Option<String>,
    /// Storage only: time lost when the drives switch between reads and writes (default "0ns").
    pub media_turnaround: Option<String>,
    /// Storage only: reads and writes proceed at once, each at its own rate (default false).
    pub media_duplex: Option<bool>,
    /// Storage only: access time of a random I/O (default "0ns").
    pub media_seek: Option<String>,
    /// NIC only: Ethernet ports, 1 or 2 (default 2).
    pub ports: Option<i64>,
    /// NIC only: receive FIFO per port (default "48KiB"); frames that do not fit are dropped.
    pub rx_fifo: Option<String>,
    /// NIC only: receive descriptors per port (default 256).
    pub rx_ring: Option<i64>,
    /// NIC only: transmit descriptors per port (default 256).
    pub tx_ring: Option<i64>,
    /// NIC only: time to absorb a register write or answer a register read (default "100ns").
    pub register_time: Option<String>,
    /// NIC only: least time between interrupts (default "0ns": no moderation).
    pub interrupt_interval: Option<String>,
    /// NIC only: Ethernet line rate per port (default "1Gb/s").
    pub line_rate: Option<String>,
}

/// `[cpu]`: the host CPU and OS that bridge Ethernet frames.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CpuSection {
    /// The root complex the CPU sits behind (default: the first one).
    pub root: Option<String>,
    /// Cores taking NIC interrupts (default 1).
    pub cores: Option<i64>,
    /// Software cost per bridged frame, e.g. "2us".
    pub frame_cost: String,
    /// Software cost per byte, e.g. "1ns" (default "0ns").
    pub byte_cost: Option<String>,
    /// Cost of taking an interrupt (default "1us").
    pub interrupt_cost: Option<String>,
    /// Blocking register reads per interrupt (default 1).
    pub reads_per_interrupt: Option<i64>,
    /// Register writes per frame; the first rings the transmit doorbell (default 1).
    pub writes_per_frame: Option<i64>,
    /// Register writes at the end of an interrupt, at least 1 (default 2).
    pub writes_per_interrupt: Option<i64>,
    /// Register writes the root complex holds before the CPU stalls (default 16).
    pub posted_depth: Option<i64>,
}

/// `[[host_bridge]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HostBridgeSection {
    /// Unique name.
    pub name: String,
    /// Bandwidth shared by every root complex behind it, e.g. "2.5GB/s".
    pub bandwidth: String,
    /// Latency added each way (default "0ns").
    pub latency: Option<String>,
}

/// `[[link]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkSection {
    /// [upstream node, downstream node].
    pub between: Vec<String>,
    /// Generation 1–7 (default from the `[pcie]` section).
    pub gen: Option<i64>,
    /// Rate instead of gen, e.g. "8GT/s".
    pub rate: Option<String>,
    /// Lanes: 1, 2, 4, 8, 12, 16, 32.
    pub width: Option<i64>,
    /// One-way propagation delay.
    pub propagation: Option<String>,
    /// Bit error rate, e.g. 1e-9.
    pub ber: Option<f64>,
    /// Replay buffer size, e.g. "8KiB".
    pub replay_buffer: Option<String>,
    /// SKP ordered sets.
    pub skp: Option<bool>,
    /// Flit mode (on by default at Gen6+).
    pub flit: Option<bool>,
    /// When both ends send their Acks and UpdateFCs: "timer" or "immediate".
    pub ack: Option<String>,
}

/// `[[workload]]`.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkloadSection {
    /// Unique flow name.
    pub name: String,
    /// "dma" (DMA transfers), "storage" (Iometer-style I/Os on a storage endpoint) or
    /// "bridge" (Ethernet frames offered on a NIC's ports, bridged by the `[cpu]`).
    pub kind: String,
    /// The endpoint (or root complex, writes only) issuing the requests.
    pub endpoint: String,
    /// Whose memory: default the root complex above the endpoint.
    pub target: Option<String>,
    /// Instead of target: the address written or read, in the source's domain, e.g.
    /// "0x8000_0000"; non-transparent bridges' windows translate it into the domain whose
    /// root complex's memory it reaches.
    pub target_address: Option<String>,
    /// DMA only: "read", "write" or "both".
    pub direction: Option<String>,
    /// DMA only: bytes per transfer, e.g. "4KiB".
    pub transfer_size: Option<String>,
    /// Transfers (DMA) or storage-write I/Os (storage) in flight (default 4).
    pub outstanding: Option<i64>,
    /// Storage only: percent of I/Os that are reads, 0 to 100.
    pub read_percent: Option<i64>,
    /// Storage only: bytes per read I/O, e.g. "310KB".
    pub read_size: Option<String>,
    /// Storage only: bytes per write I/O, e.g. "2MB".
    pub write_size: Option<String>,
    /// Storage only: random rather than sequential access (default false).
    pub random: Option<bool>,
    /// Bridge only: Ethernet frame size in bytes with CRC, 64 to 9018 (jumbo frames).
    pub frame_size: Option<i64>,
    /// Bridge only: offered load per port, a fraction of line rate in (0, 1].
    pub load: Option<f64>,
    /// DMA writes only: largest write TLP payload, e.g. "64B" for an x86 CPU or DMA engine
    /// writing whole cache lines (default MPS).
    pub tlp_payload: Option<String>,
    /// DMA writes to a root complex behind a non-transparent bridge: ring the bridge's
    /// doorbell after every this many transfers (1 = a doorbell per frame); the bridge then
    /// sends an MSI to that root complex (default none).
    pub doorbell_every: Option<i64>,
}

/// A whole scenario file.
#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Run length and seed.
    pub simulation: Option<SimulationSection>,
    /// System-wide PCIe defaults.
    pub pcie: Option<PcieSection>,
    /// Root complexes.
    #[serde(default)]
    pub root_complex: Vec<RootComplexSection>,
    /// Switches.
    #[serde(default)]
    pub switch: Vec<SwitchSection>,
    /// Non-transparent bridges.
    #[serde(default)]
    pub ntb: Vec<NtbSection>,
    /// Endpoints.
    #[serde(default)]
    pub endpoint: Vec<EndpointSection>,
    /// Host bridges.
    #[serde(default)]
    pub host_bridge: Vec<HostBridgeSection>,
    /// Links (a tree: every node but a root complex has one upstream link).
    #[serde(default)]
    pub link: Vec<LinkSection>,
    /// Workloads.
    #[serde(default)]
    pub workload: Vec<WorkloadSection>,
    /// The host CPU (needed by bridge workloads).
    pub cpu: Option<CpuSection>,
}

/// The JSON Schema of the scenario format, generated from [`ScenarioFile`].
pub fn json_schema() -> String {
    let schema = schemars::schema_for!(ScenarioFile);
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// Parses and checks scenario text; `origin` names it in errors.
pub fn load_str(text: &str, origin: &str) -> Result<System, ScenarioError> {
    let fail = |message: String| ScenarioError {
        origin: origin.to_string(),
        message,
    };
    let file: ScenarioFile = toml::from_str(text).map_err(|e| {
        let msg = with_type_hint(&e.message().trim().replace('\n', " "));
        fail(match e.span() {
            Some(span) => {
                let start = span.start.min(text.len());
                let line = text[..start].matches('\n').count() + 1;
                let source = text.lines().nth(line - 1).unwrap_or("").trim();
                format!("line {line} (`{source}`): {msg}")
            }
            None => msg,
        })
    })?;
    build(&file).map_err(fail)
}

/// A TOML type error with what to write instead: serde names only the Rust type it wanted.
fn with_type_hint(msg: &str) -> String {
    let hint = if !msg.starts_with("invalid type") && !msg.starts_with("invalid value") {
        None
    } else if msg.ends_with("expected a string") {
        Some("write the value in quotes with its unit, e.g. \"200us\", \"150ns\", \"4KiB\", \"2.5GB/s\"")
    } else if msg.starts_with("invalid value") && msg.contains("expected u") {
        Some("write a whole number of 0 or more")
    } else if ["i64", "u64", "u32", "u8"]
        .iter()
        .any(|t| msg.ends_with(&format!("expected {t}")))
    {
        Some("write a whole number without quotes or units, e.g. 8")
    } else if msg.contains("expected f64") {
        Some("write a number without quotes, e.g. ber = 1e-12")
    } else if msg.contains("expected a boolean") {
        Some("write true or false without quotes")
    } else {
        None
    };
    match hint {
        Some(h) => format!("{msg}: {h}"),
        None => msg.to_string(),
    }
}

/// Reads, parses and checks a scenario file.
pub fn load_path(path: &std::path::Path) -> Result<System, ScenarioError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        origin: origin.clone(),
        message: format!("cannot read the file: {e}"),
    })?;
    load_str(&text, &origin)
}

/// `where: error`.
fn at(place: &str) -> impl Fn(ConfigError) -> String + '_ {
    move |e| format!("{place}: {e}")
}

fn duration(
    place: &str,
    key: &'static str,
    v: &Option<String>,
    default: &str,
) -> Result<SimTime, String> {
    units::parse_duration(key, v.as_deref().unwrap_or(default)).map_err(at(place))
}

fn latency(place: &str, v: &Option<LatencyValue>, default: &str) -> Result<Latency, String> {
    let key = "memory_read_latency";
    match v {
        None => Ok(Latency::Fixed(
            units::parse_duration(key, default).map_err(at(place))?,
        )),
        Some(LatencyValue::Fixed(s)) => Ok(Latency::Fixed(
            units::parse_duration(key, s).map_err(at(place))?,
        )),
        Some(LatencyValue::Distribution(d)) => {
            let min = units::parse_duration("min", &d.min).map_err(at(place))?;
            let need = |name: &'static str, v: &Option<String>| -> Result<SimTime, String> {
                let s = v.as_ref().ok_or_else(|| {
                    format!(
                        "{place}: {key}: a {} distribution needs `{name}`",
                        d.distribution
                    )
                })?;
                units::parse_duration(name, s).map_err(at(place))
            };
            let lat = match d.distribution.as_str() {
                "uniform" => Latency::Uniform {
                    min,
                    max: need("max", &d.max)?,
                },
                "exponential" => Latency::Exponential {
                    min,
                    mean: need("mean", &d.mean)?,
                },
                other => {
                    return Err(at(place)(ConfigError::not_allowed(
                        "distribution",
                        format!("{other:?}"),
                        "uniform, exponential",
                    )))
                }
            };
            let (lo, hi) = match lat {
                Latency::Uniform { min, max } => (min, max),
                Latency::Exponential { min, mean } => (min, mean),
                Latency::Fixed(t) => (t, t),
            };
            if hi < lo {
                return Err(format!(
                    "{place}: {key}: the upper value must not be below `min`"
                ));
            }
            Ok(lat)
        }
    }
}

fn credits(
    place: &str,
    v: &Option<CreditsSection>,
    default: [Option<u32>; 6],
) -> Result<Credits, String> {
    let mut out = default;
    if let Some(c) = v {
        let given = [&c.ph, &c.pd, &c.nph, &c.npd, &c.cplh, &c.cpld];
        let names = ["ph", "pd", "nph", "npd", "cplh", "cpld"];
        for (i, g) in given.iter().enumerate() {
            out[i] = match g {
                None => out[i],
                Some(CreditValue::Word(w)) if w == "infinite" => None,
                Some(CreditValue::Count(n)) if (1..=1 << 20).contains(n) => Some(*n as u32),
                Some(other) => {
                    let shown = match other {
                        CreditValue::Count(n) => n.to_string(),
                        CreditValue::Word(w) => format!("{w:?}"),
                    };
                    return Err(format!(
                        "{place}: credits.{} {shown} is not allowed; allowed: 1 to 1048576, or \"infinite\"",
                        names[i]
                    ));
                }
            }
        }
    }
    Ok(Credits(out))
}

/// The Ack policy `v` names ("timer" or "immediate"), `default` when absent.
fn ack_policy(place: &str, v: &Option<String>, default: AckPolicy) -> Result<AckPolicy, String> {
    match v {
        None => Ok(default),
        Some(_) => words(
            place,
            "ack",
            v,
            &[
                ("timer", AckPolicy::Timer),
                ("immediate", AckPolicy::Immediate),
            ],
        ),
    }
}

fn words<T: Clone>(
    place: &str,
    key: &'static str,
    v: &Option<String>,
    choices: &[(&str, T)],
) -> Result<T, String> {
    let text = v.as_deref().unwrap_or(choices[0].0);
    choices
        .iter()
        .find(|(w, _)| *w == text)
        .map(|(_, t)| t.clone())
        .ok_or_else(|| {
            let allowed: Vec<&str> = choices.iter().map(|(w, _)| *w).collect();
            at(place)(ConfigError::not_allowed(
                key,
                format!("{text:?}"),
                allowed.join(", "),
            ))
        })
}

/// Checks a parsed file and resolves its names.
fn build(f: &ScenarioFile) -> Result<System, String> {
    let sim = f.simulation.clone().unwrap_or_default();
    let duration_t = duration("[simulation]", "duration", &sim.duration, "100us")?;
    if duration_t == SimTime::ZERO {
        return Err("[simulation]: duration must be greater than 0".into());
    }
    let warmup_t = match &sim.warmup {
        Some(_) => duration("[simulation]", "warmup", &sim.warmup, "0ns")?,
        None => SimTime::from_ticks(duration_t.ticks() / 10),
    };
    if warmup_t >= duration_t {
        return Err(format!(
            "[simulation]: warmup ({warmup_t}) must be shorter than duration ({duration_t})"
        ));
    }
    let p = f.pcie.clone().unwrap_or_default();
    let place = "[pcie]";
    let pcie = PcieSettings {
        mps: tlp::check_size("mps", p.mps.unwrap_or(128)).map_err(at(place))?,
        mrrs: tlp::check_size("mrrs", p.mrrs.unwrap_or(512)).map_err(at(place))?,
        rcb: tlp::check_rcb(p.rcb.unwrap_or(64)).map_err(at(place))?,
        addressing: Addressing::from_bits(p.addressing.unwrap_or(64)).map_err(at(place))?,
        ecrc: p.ecrc.unwrap_or(false),
    };
    let default_gen = Generation::from_number(p.gen.unwrap_or(1)).map_err(at(place))?;
    let default_width = phy::check_width(p.width.unwrap_or(1)).map_err(at(place))?;
    let default_ber = check_ber(place, p.ber.unwrap_or(0.0))?;
    let default_prop = duration(place, "propagation", &p.propagation, "0ns")?;
    let default_replay = replay_buffer(place, &p.replay_buffer, DEFAULT_REPLAY_BUFFER)?;
    let default_ack = ack_policy(place, &p.ack, AckPolicy::Timer)?;

    // Host bridges first: root complexes name them.
    let mut host_bridges = Vec::new();
    for (i, b) in f.host_bridge.iter().enumerate() {
        let place = format!("[[host_bridge]] {} ({})", i + 1, b.name);
        if f.host_bridge[..i].iter().any(|o| o.name == b.name) {
            return Err(format!("{place}: the name {:?} is used twice", b.name));
        }
        host_bridges.push(HostBridgeSpec {
            name: b.name.clone(),
            bandwidth: units::parse_bandwidth("bandwidth", &b.bandwidth).map_err(at(&place))?,
            latency: duration(&place, "latency", &b.latency, "0ns")?,
        });
    }

    let mut nodes: Vec<NodeSpec> = Vec::new();
    let add = |nodes: &mut Vec<NodeSpec>, place: &str, node: NodeSpec| -> Result<(), String> {
        if nodes.iter().any(|n| n.name == node.name) {
            return Err(format!(
                "{place}: the node name {:?} is used twice",
                node.name
            ));
        }
        nodes.push(node);
        Ok(())
    };
    for (i, rc) in f.root_complex.iter().enumerate() {
        let place = format!("[[root_complex]] {} ({})", i + 1, rc.name);
        let host_bridge =
            match &rc.host_bridge {
                None => None,
                Some(name) => {
                    Some(
                        host_bridges
                            .iter()
                            .position(|b| &b.name == name)
                            .ok_or_else(|| {
                                let known: Vec<&str> =
                                    host_bridges.iter().map(|b| b.name.as_str()).collect();
                                format!(
                    "{place}: host_bridge {name:?} is not a [[host_bridge]]; known: {}",
                    if known.is_empty() { "none".to_string() } else { known.join(", ") }
                )
                            })?,
                    )
                }
            };
        // An optional rate: unlimited when not given.
        let rate = |key: &'static str, v: &Option<String>| {
            v.as_deref()
                .map(|s| units::parse_bandwidth(key, s))
                .transpose()
                .map_err(at(&place))
        };
        let kind = NodeKind::RootComplex {
            read_latency: latency(&place, &rc.memory_read_latency, "500ns")?,
            memory_bandwidth: rate("memory_bandwidth", &rc.memory_bandwidth)?,
            posted_write_rate: rate("posted_write_rate", &rc.posted_write_rate)?,
            host_bridge,
            completion: words(
                &place,
                "completion",
                &rc.completion,
                &[("rcb", CompletionRule::Rcb), ("mps", CompletionRule::Mps)],
            )?,
            shared_outbound: match words(
                &place,
                "outbound_queue",
                &rc.outbound_queue,
                &[("per_port", false), ("shared", true)],
            )? {
                true => Some(small_count(&place, "port_queue", rc.port_queue, 4, 1)?),
                false if rc.port_queue.is_some() => {
                    return Err(format!(
                        "{place}: port_queue applies only with outbound_queue = \"shared\""
                    ))
                }
                false => None,
            },
        };
        let credits = credits(&place, &rc.credits, DEFAULT_ROOT_CREDITS)?;
        add(
            &mut nodes,
            &place,
            NodeSpec {
                name: rc.name.clone(),
                kind,
                credits,
            },
        )?;
    }
    let mut switch_weights = Vec::new();
    for (i, sw) in f.switch.iter().enumerate() {
        let place = format!("[[switch]] {} ({})", i + 1, sw.name);
        let forwarding = words(
            &place,
            "forwarding",
            &sw.forwarding,
            &[
                ("cut-through", Forwarding::CutThrough),
                ("store-and-forward", Forwarding::StoreAndForward),
            ],
        )?;
        let mut latency_by_width = Vec::new();
        for (w, l) in sw.latency_by_width.iter().flatten() {
            let width = w
                .parse::<i64>()
                .map_err(|_| format!("{place}: latency_by_width key {w:?} is not a lane width; allowed: 1, 2, 4, 8, 12, 16, 32"))
                .and_then(|n| phy::check_width(n).map_err(at(&place)))?;
            latency_by_width.push((
                width,
                units::parse_duration("latency_by_width", l).map_err(at(&place))?,
            ));
        }
        let core = match words(
            &place,
            "core",
            &sw.core,
            &[("crossbar", false), ("shared-bus", true)],
        )? {
            false if sw.core_bandwidth.is_some() => {
                return Err(format!(
                    "{place}: core_bandwidth needs core = \"shared-bus\""
                ))
            }
            false => Core::Crossbar,
            true => Core::SharedBus(
                units::parse_bandwidth(
                    "core_bandwidth",
                    sw.core_bandwidth.as_deref().ok_or_else(|| {
                        format!(
                            "{place}: core = \"shared-bus\" needs core_bandwidth (e.g. \"4GB/s\")"
                        )
                    })?,
                )
                .map_err(at(&place))?,
            ),
        };
        // Weights are resolved to ports once every link is known.
        let arbitration = words(
            &place,
            "arbitration",
            &sw.arbitration,
            &[
                ("round-robin", Arbitration::RoundRobin),
                ("weighted", Arbitration::Weighted(Vec::new())),
                ("oldest", Arbitration::Oldest),
            ],
        )?;
        let weighted = matches!(arbitration, Arbitration::Weighted(_));
        if !weighted && sw.weights.is_some() {
            return Err(format!("{place}: weights need arbitration = \"weighted\""));
        }
        switch_weights.push((
            nodes.len(),
            weighted,
            sw.weights.clone().unwrap_or_default(),
            place.clone(),
        ));
        let kind = NodeKind::Switch {
            forwarding,
            latency: duration(&place, "latency", &sw.latency, "150ns")?,
            latency_by_width,
            core,
            arbitration,
        };
        let credits = credits(&place, &sw.credits, DEFAULT_SWITCH_CREDITS)?;
        add(
            &mut nodes,
            &place,
            NodeSpec {
                name: sw.name.clone(),
                kind,
                credits,
            },
        )?;
    }
    for (i, nt) in f.ntb.iter().enumerate() {
        let place = format!("[[ntb]] {} ({})", i + 1, nt.name);
        let kind = NodeKind::Ntb {
            latency: duration(&place, "latency", &nt.latency, "150ns")?,
            windows: ntb_windows(&place, &nt.window)?,
        };
        let credits = credits(&place, &nt.credits, DEFAULT_SWITCH_CREDITS)?;
        add(
            &mut nodes,
            &place,
            NodeSpec {
                name: nt.name.clone(),
                kind,
                credits,
            },
        )?;
    }
    for (i, ep) in f.endpoint.iter().enumerate() {
        let place = format!("[[endpoint]] {} ({})", i + 1, ep.name);
        let kind = words(
            &place,
            "kind",
            &Some(ep.kind.clone()),
            &[("dma", 0u8), ("storage", 1), ("nic", 2)],
        )?;
        let media = if kind == 1 {
            let rate = |key: &'static str, v: &Option<String>| -> Result<f64, String> {
                let v = v.as_ref().ok_or_else(|| {
                    format!("{place}: a storage endpoint needs {key} (a rate, e.g. \"800MB/s\")")
                })?;
                units::parse_bandwidth(key, v).map_err(at(&place))
            };
            Some(MediaSpec {
                read: rate("media_read", &ep.media_read)?,
                write: rate("media_write", &ep.media_write)?,
                turnaround: duration(&place, "media_turnaround", &ep.media_turnaround, "0ns")?,
                duplex: ep.media_duplex.unwrap_or(false),
                seek: duration(&place, "media_seek", &ep.media_seek, "0ns")?,
            })
        } else {
            if ep.media_read.is_some()
                || ep.media_write.is_some()
                || ep.media_turnaround.is_some()
                || ep.media_duplex.is_some()
                || ep.media_seek.is_some()
            {
                return Err(format!(
                    "{place}: media_read, media_write, media_turnaround, media_duplex and \
                     media_seek need kind = \"storage\""
                ));
            }
            None
        };
        let nic = if kind == 2 {
            let count = |key: &'static str, v: Option<i64>, default: i64, max: i64| {
                let v = v.unwrap_or(default);
                if (1..=max).contains(&v) {
                    Ok(v as u32)
                } else {
                    Err(at(&place)(ConfigError::not_allowed(
                        key,
                        v,
                        format!("1 to {max}"),
                    )))
                }
            };
            let rx_fifo = units::parse_bytes("rx_fifo", ep.rx_fifo.as_deref().unwrap_or("48KiB"))
                .map_err(at(&place))?;
            if !(2048..=1 << 24).contains(&rx_fifo) {
                return Err(at(&place)(ConfigError::not_allowed(
                    "rx_fifo",
                    ep.rx_fifo.clone().unwrap_or_default(),
                    "2 KiB to 16 MiB (at least one full-size frame)",
                )));
            }
            let line_rate =
                units::parse_bandwidth("line_rate", ep.line_rate.as_deref().unwrap_or("1Gb/s"))
                    .map_err(at(&place))?
                    * 8.0;
            Some(NicSpec {
                ports: count("ports", ep.ports, 2, 2)?,
                rx_fifo: rx_fifo as u32,
                rx_ring: count("rx_ring", ep.rx_ring, 256, 4096)?,
                tx_ring: count("tx_ring", ep.tx_ring, 256, 4096)?,
                register_time: duration(&place, "register_time", &ep.register_time, "100ns")?,
                interrupt_interval: duration(
                    &place,
                    "interrupt_interval",
                    &ep.interrupt_interval,
                    "0ns",
                )?,
                line_rate,
            })
        } else {
            if ep.ports.is_some()
                || ep.rx_fifo.is_some()
                || ep.rx_ring.is_some()
                || ep.tx_ring.is_some()
                || ep.register_time.is_some()
                || ep.interrupt_interval.is_some()
                || ep.line_rate.is_some()
            {
                return Err(format!(
                    "{place}: ports, rx_fifo, rx_ring, tx_ring, register_time, \
                     interrupt_interval and line_rate need kind = \"nic\""
                ));
            }
            None
        };
        let tags = match ep.tags {
            None => DEFAULT_TAGS,
            Some(t) if (1..=16384).contains(&t) => t as u32,
            Some(t) => {
                return Err(at(&place)(ConfigError::not_allowed(
                    "tags",
                    t,
                    "1 to 16384 (14-bit tags)",
                )))
            }
        };
        let credits = credits(&place, &ep.credits, DEFAULT_ENDPOINT_CREDITS)?;
        add(
            &mut nodes,
            &place,
            NodeSpec {
                name: ep.name.clone(),
                kind: NodeKind::Endpoint { tags, media, nic },
                credits,
            },
        )?;
    }
    let owned: Vec<String> = nodes.iter().map(|n| n.name.clone()).collect();
    let names: HashMap<&str, NodeId> = owned
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let known = || {
        let mut v: Vec<&str> = owned.iter().map(|n| n.as_str()).collect();
        v.sort();
        v.join(", ")
    };

    let mut links: Vec<LinkSpec> = Vec::new();
    let mut upstream_of: Vec<Option<usize>> = vec![None; nodes.len()];
    for (i, l) in f.link.iter().enumerate() {
        let shown = l.between.join(", ");
        let place = format!("[[link]] {} (between {shown})", i + 1);
        if l.between.len() != 2 {
            return Err(format!(
                "{place}: between needs exactly two node names, upstream first"
            ));
        }
        let mut ends = [0; 2];
        for (k, name) in l.between.iter().enumerate() {
            ends[k] = *names.get(name.as_str()).ok_or_else(|| {
                format!(
                    "{place}: between names {name:?}, which is not a node; known nodes: {}",
                    known()
                )
            })?;
        }
        let [up, down] = ends;
        if up == down {
            return Err(format!(
                "{place}: a link cannot join {:?} to itself",
                l.between[0]
            ));
        }
        if matches!(nodes[down].kind, NodeKind::RootComplex { .. })
            && !matches!(nodes[up].kind, NodeKind::Ntb { .. })
        {
            return Err(format!(
                "{place}: {:?} is a root complex and cannot be the downstream end (only below a \
                 non-transparent bridge, [[ntb]], that joins its domain); write the root complex first",
                l.between[1]
            ));
        }
        if matches!(nodes[up].kind, NodeKind::Ntb { .. }) && links.iter().any(|x| x.up == up) {
            return Err(format!(
                "{place}: the non-transparent bridge {:?} already has its downstream link; an \
                 NTB joins exactly two domains (one link above, one below)",
                l.between[0]
            ));
        }
        if matches!(nodes[up].kind, NodeKind::Endpoint { .. }) {
            return Err(format!(
                "{place}: {:?} is an endpoint and has no downstream ports; write the upstream node first",
                l.between[0]
            ));
        }
        if let Some(prev) = upstream_of[down] {
            return Err(format!(
                "{place}: {:?} already has an upstream link ([[link]] {}); a node has one upstream port",
                l.between[1],
                prev + 1
            ));
        }
        upstream_of[down] = Some(i);
        let gen = match (&l.gen, &l.rate) {
            (Some(_), Some(_)) => return Err(format!("{place}: give gen or rate, not both")),
            (Some(g), None) => Generation::from_number(*g).map_err(at(&place))?,
            (None, Some(r)) => Generation::from_number(
                units::parse_gt_per_s("rate", r).map_err(at(&place))? as i64,
            )
            .map_err(at(&place))?,
            (None, None) => default_gen,
        };
        let width = match l.width {
            Some(w) => phy::check_width(w).map_err(at(&place))?,
            None => default_width,
        };
        let flit = match l.flit {
            None => gen.requires_flit_mode(),
            Some(false) if gen.requires_flit_mode() => {
                return Err(format!(
                    "{place}: flit = false is not allowed at Gen{} (it runs only in flit mode)",
                    gen.number()
                ))
            }
            Some(f) => f,
        };
        let replay = match &l.replay_buffer {
            None => default_replay,
            Some(_) => replay_buffer(&place, &l.replay_buffer, DEFAULT_REPLAY_BUFFER)?,
        };
        let need = tlp::tlp_bytes(tlp::TlpKind::MWr, pcie.addressing, pcie.mps, pcie.ecrc) + 8;
        if replay < need {
            return Err(format!("{place}: replay_buffer {replay} B cannot hold one MPS-sized TLP ({need} B); allowed: at least {need} B"));
        }
        links.push(LinkSpec {
            name: format!("{}-{}", nodes[up].name, nodes[down].name),
            up,
            down,
            gen,
            width,
            flit,
            skp: l.skp.or(p.skp).unwrap_or(true),
            propagation: match &l.propagation {
                None => default_prop,
                Some(_) => duration(&place, "propagation", &l.propagation, "0ns")?,
            },
            ber: match l.ber {
                None => default_ber,
                Some(b) => check_ber(&place, b)?,
            },
            replay_buffer: replay,
            ack: ack_policy(&place, &l.ack, default_ack)?,
        });
    }
    // Tree checks: every non-root node reaches a root complex through upstream links.
    for (n, node) in nodes.iter().enumerate() {
        let is_root = matches!(node.kind, NodeKind::RootComplex { .. });
        if !is_root && upstream_of[n].is_none() {
            return Err(format!(
                "{:?} has no upstream link; add a [[link]] with between = [\"<upstream>\", {:?}]",
                node.name, node.name
            ));
        }
        let mut seen = vec![false; nodes.len()];
        let mut cur = n;
        while let Some(l) = upstream_of[cur] {
            if seen[cur] {
                let mut cycle: Vec<&str> = Vec::new();
                let mut c = cur;
                loop {
                    cycle.push(&nodes[c].name);
                    c = links[upstream_of[c].unwrap_or(0)].up;
                    if c == cur {
                        break;
                    }
                }
                return Err(format!("the links form a loop ({} -> {}); links must form a tree below each root complex", cycle.join(" -> "), cycle[0]));
            }
            seen[cur] = true;
            cur = links[l].up;
        }
    }
    for (n, node) in nodes.iter().enumerate() {
        if matches!(node.kind, NodeKind::Ntb { .. }) && !links.iter().any(|l| l.up == n) {
            return Err(format!(
                "the non-transparent bridge {:?} has no link below it; add a [[link]] with \
                 between = [{:?}, \"<the other domain's root complex or switch>\"]",
                node.name, node.name
            ));
        }
    }
    // Switch weights, resolved to port order: upstream first, then downstream links in file order.
    for (n, weighted, weights, place) in switch_weights {
        if !weighted {
            continue;
        }
        let mut ports: Vec<NodeId> = Vec::new();
        if let Some(l) = upstream_of[n] {
            ports.push(links[l].up);
        }
        ports.extend(links.iter().filter(|l| l.up == n).map(|l| l.down));
        for name in weights.keys() {
            if !ports.iter().any(|&p| nodes[p].name == *name) {
                return Err(format!(
                    "{place}: weights names {name:?}, which is not a neighbour of this switch"
                ));
            }
        }
        let mut w = Vec::new();
        for p in ports {
            let v = weights.get(&nodes[p].name).copied().unwrap_or(1);
            if !(1..=255).contains(&v) {
                return Err(at(&place)(ConfigError::not_allowed(
                    "weights",
                    v,
                    "1 to 255 TLPs per turn",
                )));
            }
            w.push(v as u32);
        }
        if let NodeKind::Switch { arbitration, .. } = &mut nodes[n].kind {
            *arbitration = Arbitration::Weighted(w);
        }
    }

    let window_map = WindowMap::new(&nodes, &links, &upstream_of)?;
    let mut workloads = Vec::new();
    for (i, w) in f.workload.iter().enumerate() {
        let place = format!("[[workload]] {} ({})", i + 1, w.name);
        if f.workload[..i].iter().any(|o| o.name == w.name) {
            return Err(format!(
                "{place}: the workload name {:?} is used twice",
                w.name
            ));
        }
        let wkind = words(
            &place,
            "kind",
            &Some(w.kind.clone()),
            &[("dma", 0u8), ("storage", 1), ("bridge", 2)],
        )?;
        let storage_kind = wkind == 1;
        let source = *names.get(w.endpoint.as_str()).ok_or_else(|| {
            format!(
                "{place}: endpoint {:?} is not a node; known nodes: {}",
                w.endpoint,
                known()
            )
        })?;
        if wkind == 2 {
            workloads.push(bridge_workload(
                &place,
                w,
                source,
                &nodes,
                f.cpu.is_some(),
                &upstream_of,
                &links,
            )?);
            continue;
        }
        if w.frame_size.is_some() || w.load.is_some() {
            return Err(format!(
                "{place}: frame_size and load need kind = \"bridge\""
            ));
        }
        if matches!(nodes[source].kind, NodeKind::Endpoint { nic: Some(_), .. }) {
            return Err(format!(
                "{place}: {:?} is a NIC, which moves Ethernet frames: give it a kind = \"bridge\" \
                 workload, or make the endpoint kind = \"dma\"",
                w.endpoint
            ));
        }
        let size = |key: &'static str, v: &Option<String>| -> Result<u64, String> {
            let v = v
                .as_ref()
                .ok_or_else(|| format!("{place}: {key} is missing (bytes, e.g. \"4KiB\")"))?;
            let b = units::parse_bytes(key, v).map_err(at(&place))?;
            if (1..=crate::analytic::MAX_TRANSFER_BYTES).contains(&b) {
                Ok(b)
            } else {
                Err(at(&place)(ConfigError::not_allowed(key, v, "1 B to 1 GiB")))
            }
        };
        let (direction, transfer_size, storage) = if storage_kind {
            if w.direction.is_some() || w.transfer_size.is_some() {
                return Err(format!(
                    "{place}: a storage workload takes read_percent, read_size and write_size \
                     instead of direction and transfer_size"
                ));
            }
            if !matches!(
                nodes[source].kind,
                NodeKind::Endpoint { media: Some(_), .. }
            ) {
                return Err(format!(
                    "{place}: {:?} is not a storage endpoint (kind = \"storage\" with media rates)",
                    w.endpoint
                ));
            }
            let read_percent = match w.read_percent {
                Some(p) if (0..=100).contains(&p) => p as u32,
                Some(p) => {
                    return Err(at(&place)(ConfigError::not_allowed(
                        "read_percent",
                        p,
                        "0 to 100",
                    )))
                }
                None => return Err(format!("{place}: read_percent is missing (0 to 100)")),
            };
            let read_size = if read_percent > 0 {
                size("read_size", &w.read_size)?
            } else {
                0
            };
            let write_size = if read_percent < 100 {
                size("write_size", &w.write_size)?
            } else {
                0
            };
            // Storage reads travel as DMA writes toward host memory, storage writes as reads.
            let direction = match read_percent {
                100 => DmaDirection::Write,
                0 => DmaDirection::Read,
                _ => DmaDirection::Both,
            };
            let mix = StorageMix {
                read_percent,
                read_size,
                write_size,
                random: w.random.unwrap_or(false),
            };
            (direction, read_size.max(write_size), Some(mix))
        } else {
            if w.read_percent.is_some()
                || w.read_size.is_some()
                || w.write_size.is_some()
                || w.random.is_some()
            {
                return Err(format!(
                    "{place}: read_percent, read_size, write_size and random need \
                     kind = \"storage\""
                ));
            }
            let direction = w
                .direction
                .as_ref()
                .ok_or_else(|| format!("{place}: direction is missing (read, write or both)"))?;
            let direction = words(
                &place,
                "direction",
                &Some(direction.clone()),
                &[
                    ("read", DmaDirection::Read),
                    ("write", DmaDirection::Write),
                    ("both", DmaDirection::Both),
                ],
            )?;
            (direction, size("transfer_size", &w.transfer_size)?, None)
        };
        let root_above = |mut n: NodeId| {
            while let Some(l) = upstream_of[n] {
                n = links[l].up;
            }
            n
        };
        let mut address = None;
        let target = match (&w.target, &w.target_address) {
            (Some(_), Some(_)) => {
                return Err(format!(
                    "{place}: give target (a node) or target_address (an address), not both"
                ))
            }
            (None, Some(text)) => {
                let a = units::parse_address("target_address", text).map_err(at(&place))?;
                let (t, path) =
                    window_map.resolve(&place, text, a, transfer_size, source, &nodes)?;
                // An address above 4 GiB on any bus the requests cross needs 4-DW headers.
                let above_4g =
                    |x: &u64| x.saturating_add(transfer_size.max(1) - 1) > u32::MAX as u64;
                let mut high = std::iter::once(a).chain(path.crossings.iter().map(|c| c.1));
                if let (Addressing::A32, Some(x)) = (pcie.addressing, high.find(above_4g)) {
                    return Err(format!(
                        "{place}: target_address {text} reaches {x:#x}, above 4 GiB, where \
                         memory requests need 4-DW (64-bit) headers; set [pcie] addressing = 64"
                    ));
                }
                address = Some(path);
                t
            }
            (Some(t), None) => *names.get(t.as_str()).ok_or_else(|| {
                format!(
                    "{place}: target {t:?} is not a node; known nodes: {}",
                    known()
                )
            })?,
            (None, None) => match nodes[source].kind {
                NodeKind::Endpoint { .. } => root_above(source),
                _ => {
                    return Err(format!(
                        "{place}: a workload on {:?} needs a target endpoint",
                        w.endpoint
                    ))
                }
            },
        };
        if matches!(nodes[target].kind, NodeKind::Endpoint { nic: Some(_), .. }) {
            return Err(format!(
                "{place}: the target {:?} is a NIC, whose registers take the [cpu]'s writes \
                 only: write into a kind = \"dma\" endpoint or a root complex",
                nodes[target].name
            ));
        }
        match (&nodes[source].kind, &nodes[target].kind) {
            (NodeKind::Endpoint { .. }, NodeKind::RootComplex { .. }) => {}
            (NodeKind::RootComplex { .. }, NodeKind::Endpoint { .. }) if direction != DmaDirection::Write => {
                return Err(format!("{place}: a root complex workload can only write (direction = \"write\")"))
            }
            (NodeKind::Endpoint { .. } | NodeKind::RootComplex { .. }, NodeKind::Ntb { .. }) => {
                // The bridge's scratchpad registers: whole DWs, a few at a time.
                if transfer_size % 4 != 0 || !(4..=SCRATCHPAD_BYTES).contains(&transfer_size) {
                    return Err(at(&place)(ConfigError::not_allowed(
                        "transfer_size",
                        format!("{transfer_size} B"),
                        format!("a multiple of 4 B up to {SCRATCHPAD_BYTES} B: the target {:?} is a non-transparent bridge, whose scratchpad registers are read and written in DWs", nodes[target].name),
                    )));
                }
            }
            (NodeKind::RootComplex { .. }, NodeKind::Endpoint { .. } | NodeKind::RootComplex { .. }) if direction == DmaDirection::Write && source != target => {}
            (NodeKind::Switch { .. } | NodeKind::Ntb { .. }, _) => return Err(format!("{place}: {:?} is a switch or bridge; a workload runs on an endpoint or a root complex", w.endpoint)),
            _ => return Err(format!("{place}: the target {:?} must be a root complex (or, for a root complex's writes, an endpoint or another domain's root complex)", nodes[target].name)),
        }
        if root_above(source) != root_above(target) {
            return Err(format!(
                "{place}: {:?} and {:?} are under different root complexes",
                nodes[source].name, nodes[target].name
            ));
        }
        let outstanding = match w.outstanding {
            None => DEFAULT_OUTSTANDING,
            Some(o) if (1..=4096).contains(&o) => o as u32,
            Some(o) => {
                return Err(at(&place)(ConfigError::not_allowed(
                    "outstanding",
                    o,
                    "1 to 4096",
                )))
            }
        };
        let tlp_payload = match &w.tlp_payload {
            None => pcie.mps,
            Some(v) => {
                let b = units::parse_bytes("tlp_payload", v).map_err(at(&place))?;
                if !(4..=pcie.mps as u64).contains(&b) || b % 4 != 0 {
                    return Err(at(&place)(ConfigError::not_allowed(
                        "tlp_payload",
                        v,
                        format!("a multiple of 4 B from 4 B to MPS ({} B)", pcie.mps),
                    )));
                }
                if direction == DmaDirection::Read {
                    return Err(format!(
                        "{place}: tlp_payload sizes writes; this workload only reads"
                    ));
                }
                b as u32
            }
        };
        let doorbell = match w.doorbell_every {
            None => None,
            Some(n) if (1..=65536).contains(&n) => {
                let ntb = upstream_of[target]
                    .map(|l| links[l].up)
                    .filter(|&u| matches!(nodes[u].kind, NodeKind::Ntb { .. }));
                let (Some(ntb), true) = (ntb, direction == DmaDirection::Write) else {
                    return Err(format!(
                        "{place}: doorbell_every needs direction = \"write\" and a target root \
                         complex directly below a non-transparent bridge ([[ntb]]), whose \
                         doorbell the writer rings; {:?} is not one",
                        nodes[target].name
                    ));
                };
                Some(Doorbell {
                    every: n as u32,
                    ntb,
                })
            }
            Some(n) => {
                return Err(at(&place)(ConfigError::not_allowed(
                    "doorbell_every",
                    n,
                    "1 to 65536 transfers per doorbell",
                )))
            }
        };
        workloads.push(WorkloadSpec {
            name: w.name.clone(),
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
        });
    }
    let cpu = match &f.cpu {
        Some(c) => Some(cpu_spec(c, &names, &nodes, known)?),
        None => None,
    };
    if f.root_complex.is_empty() {
        return Err(
            "the scenario has no [[root_complex]]: a fabric needs at least one, \
             with its [[link]]s and a [[workload]] (examples in scenarios/, the format \
             from `tlpsim schema`)"
                .into(),
        );
    }
    if workloads.is_empty() {
        return Err(
            "the scenario has no [[workload]]: nothing would move; add one \
             (kind = \"dma\", \"storage\" or \"bridge\", or a root complex's write \
             with endpoint = \"<root complex>\")"
                .into(),
        );
    }
    Ok(System {
        duration: duration_t,
        warmup: warmup_t,
        seed: sim.seed.unwrap_or(1),
        pcie,
        nodes,
        links,
        host_bridges,
        workloads,
        cpu,
    })
}

/// An NTB's `[[ntb.window]]` tables, checked: a side, a power-of-two size, and base and
/// translation aligned to it (a BAR is naturally aligned; the translation register ignores
/// the bits below the size). Overlaps are checked per domain, in [`WindowMap::new`].
fn ntb_windows(place: &str, sections: &[NtbWindowSection]) -> Result<Vec<NtbWindow>, String> {
    let mut out: Vec<NtbWindow> = Vec::new();
    for (k, w) in sections.iter().enumerate() {
        let place = format!("{place} window {}", k + 1);
        let side = words(
            &place,
            "side",
            &Some(w.side.clone()),
            &[("up", NtbSide::Up), ("down", NtbSide::Down)],
        )?;
        let base = units::parse_address("base", &w.base).map_err(at(&place))?;
        let size = units::parse_address("size", &w.size).map_err(at(&place))?;
        let translate = units::parse_address("translate", &w.translate).map_err(at(&place))?;
        if !size.is_power_of_two() {
            return Err(at(&place)(ConfigError::not_allowed(
                "size",
                format!("{:?}", w.size),
                "a power of two (a BAR's size), e.g. \"1MiB\"",
            )));
        }
        for (key, v, text) in [
            ("base", base, &w.base),
            ("translate", translate, &w.translate),
        ] {
            if v % size != 0 || v.checked_add(size - 1).is_none() {
                return Err(at(&place)(ConfigError::not_allowed(
                    key,
                    format!("{text:?}"),
                    format!("a multiple of the window size ({size:#x} B) that leaves room for it below 2^64"),
                )));
            }
        }
        out.push(NtbWindow {
            side,
            base,
            size,
            translate,
        });
    }
    Ok(out)
}

/// The address domain of node `n`: the root complex it sits under (itself for a root
/// complex), or `nodes.len() + b` below a bridge `b` with no root complex in between.
fn domain_of(
    n: NodeId,
    nodes: &[NodeSpec],
    links: &[LinkSpec],
    upstream_of: &[Option<usize>],
) -> usize {
    let mut cur = n;
    loop {
        if matches!(nodes[cur].kind, NodeKind::RootComplex { .. }) {
            return cur;
        }
        let Some(l) = upstream_of[cur] else {
            return cur;
        };
        let up = links[l].up;
        if matches!(nodes[up].kind, NodeKind::Ntb { .. }) {
            return nodes.len() + up;
        }
        cur = up;
    }
}

/// Every bridge window with the domain it sits in and the domain it leads to.
struct WindowMap {
    /// (bridge, window, domain of its BAR, domain beyond).
    windows: Vec<(NodeId, NtbWindow, usize, usize)>,
    /// The domain of each node.
    domain: Vec<usize>,
}

impl WindowMap {
    fn new(
        nodes: &[NodeSpec],
        links: &[LinkSpec],
        upstream_of: &[Option<usize>],
    ) -> Result<Self, String> {
        let domain: Vec<usize> = (0..nodes.len())
            .map(|n| domain_of(n, nodes, links, upstream_of))
            .collect();
        let mut windows: Vec<(NodeId, NtbWindow, usize, usize)> = Vec::new();
        for (b, node) in nodes.iter().enumerate() {
            let NodeKind::Ntb { windows: ws, .. } = &node.kind else {
                continue;
            };
            let above = domain[b];
            let below = links
                .iter()
                .find(|l| l.up == b)
                .map_or(nodes.len() + b, |l| domain[l.down]);
            for w in ws {
                let (here, there) = match w.side {
                    NtbSide::Up => (above, below),
                    NtbSide::Down => (below, above),
                };
                if let Some(o) = windows.iter().find(|o| {
                    o.2 == here && o.1.base < w.base + w.size && w.base < o.1.base + o.1.size
                }) {
                    return Err(format!(
                        "[[ntb]] {:?}: its window at {:#x} overlaps a window of {:?} at {:#x} in the \
                         same address domain; BARs in one domain need disjoint ranges",
                        node.name, w.base, nodes[o.0].name, o.1.base
                    ));
                }
                windows.push((b, *w, here, there));
            }
        }
        Ok(WindowMap { windows, domain })
    }

    /// Follows `addr` (a transfer of `len` bytes issued in `source`'s domain) through the
    /// bridges' windows to the root complex whose memory it reaches.
    fn resolve(
        &self,
        place: &str,
        text: &str,
        addr: u64,
        len: u64,
        source: NodeId,
        nodes: &[NodeSpec],
    ) -> Result<(NodeId, AddressPath), String> {
        let mut dom = self.domain[source];
        let mut a = addr;
        let mut crossings: Vec<(NodeId, u64)> = Vec::new();
        let path = |crossings: &[(NodeId, u64)]| {
            crossings
                .iter()
                .map(|(b, _)| nodes[*b].name.as_str())
                .collect::<Vec<_>>()
                .join(" -> ")
        };
        while let Some((b, w, there, next)) = self
            .windows
            .iter()
            .filter(|o| o.2 == dom)
            .find_map(|o| Some((o.0, o.1, o.3, o.1.translate(a, len)?)))
        {
            let Ok(next) = next else {
                return Err(format!(
                    "{place}: the {len}-byte transfer at {a:#x} runs past the end of {:?}'s window \
                     {:#x}..{:#x}; move target_address or enlarge the window",
                    nodes[b].name,
                    w.base,
                    w.base + w.size
                ));
            };
            crossings.push((b, next));
            if crossings.len() > self.windows.len() {
                return Err(format!(
                    "{place}: target_address {text} is translated round in a loop by the bridges' \
                     windows ({})",
                    path(&crossings)
                ));
            }
            dom = there;
            a = next;
        }
        if dom == source {
            return Err(if crossings.is_empty() {
                format!(
                    "{place}: target_address {text} is {:?}'s own memory: no window of a \
                     non-transparent bridge in its domain claims it (windows there: {})",
                    nodes[source].name,
                    self.listing(dom)
                )
            } else {
                format!(
                    "{place}: target_address {text} comes back to {:?}'s own memory through {}; a \
                     flow must leave its domain",
                    nodes[source].name,
                    path(&crossings)
                )
            });
        }
        if dom >= nodes.len() {
            return Err(format!(
                "{place}: target_address {text} reaches the domain below {:?} at {a:#x}, which \
                 has no root complex whose memory it could be",
                nodes[dom - nodes.len()].name
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

    /// The windows whose BARs lie in domain `dom`, for messages.
    fn listing(&self, dom: usize) -> String {
        let v: Vec<String> = self
            .windows
            .iter()
            .filter(|o| o.2 == dom)
            .map(|o| format!("{:#x}..{:#x}", o.1.base, o.1.base + o.1.size))
            .collect();
        if v.is_empty() {
            "none".to_string()
        } else {
            v.join(", ")
        }
    }
}

/// Checks an Ethernet bridging workload: a NIC, a frame size, a load, and a `[cpu]`.
fn bridge_workload(
    place: &str,
    w: &WorkloadSection,
    source: NodeId,
    nodes: &[NodeSpec],
    has_cpu: bool,
    upstream_of: &[Option<usize>],
    links: &[LinkSpec],
) -> Result<WorkloadSpec, String> {
    if w.direction.is_some()
        || w.transfer_size.is_some()
        || w.read_percent.is_some()
        || w.read_size.is_some()
        || w.write_size.is_some()
        || w.random.is_some()
        || w.outstanding.is_some()
    {
        return Err(format!(
            "{place}: a bridge workload takes frame_size and load only"
        ));
    }
    if !matches!(nodes[source].kind, NodeKind::Endpoint { nic: Some(_), .. }) {
        return Err(format!(
            "{place}: {:?} is not a NIC (an [[endpoint]] with kind = \"nic\")",
            w.endpoint
        ));
    }
    if !has_cpu {
        return Err(format!(
            "{place}: a bridge workload needs a [cpu] section (frame_cost, ...) to bridge the frames"
        ));
    }
    let frame_size = match w.frame_size {
        Some(s) if (64..=9018).contains(&s) => s as u32,
        Some(s) => {
            return Err(at(place)(ConfigError::not_allowed(
                "frame_size",
                s,
                "64 to 9018 bytes (Ethernet frame with CRC)",
            )))
        }
        None => return Err(format!("{place}: frame_size is missing (bytes, e.g. 64)")),
    };
    let load = match w.load {
        Some(l) if l > 0.0 && l <= 1.0 => l,
        Some(l) => {
            return Err(at(place)(ConfigError::not_allowed(
                "load",
                l,
                "a fraction of line rate in (0, 1]",
            )))
        }
        None => {
            return Err(format!(
                "{place}: load is missing (a fraction of line rate, e.g. 0.5)"
            ))
        }
    };
    let mut root = source;
    while let Some(l) = upstream_of[root] {
        root = links[l].up;
    }
    Ok(WorkloadSpec {
        name: w.name.clone(),
        source,
        target: root,
        direction: DmaDirection::Both,
        transfer_size: frame_size as u64,
        outstanding: 1,
        storage: None,
        bridge: Some(BridgeSpec { frame_size, load }),
        tlp_payload: u32::MAX, // NIC writes are MPS-sized
        doorbell: None,
        address: None,
    })
}

/// Checks the `[cpu]` section.
fn cpu_spec(
    c: &CpuSection,
    names: &HashMap<&str, NodeId>,
    nodes: &[NodeSpec],
    known: impl Fn() -> String,
) -> Result<CpuSpec, String> {
    let place = "[cpu]";
    let root = match &c.root {
        Some(r) => *names.get(r.as_str()).ok_or_else(|| {
            format!(
                "{place}: root {r:?} is not a node; known nodes: {}",
                known()
            )
        })?,
        None => nodes
            .iter()
            .position(|n| matches!(n.kind, NodeKind::RootComplex { .. }))
            .ok_or_else(|| format!("{place}: the scenario has no [[root_complex]]"))?,
    };
    if !matches!(nodes[root].kind, NodeKind::RootComplex { .. }) {
        return Err(format!(
            "{place}: root {:?} is not a root complex",
            nodes[root].name
        ));
    }
    let count = |key, v, default, min| small_count(place, key, v, default, min);
    let byte_cost = duration(place, "byte_cost", &c.byte_cost, "0ns")?;
    Ok(CpuSpec {
        root,
        cores: count("cores", c.cores, 1, 1)?,
        frame_cost: duration(place, "frame_cost", &Some(c.frame_cost.clone()), "0ns")?,
        byte_cost_ps: byte_cost.ticks() as f64 / SimTime::TICKS_PER_PS as f64,
        interrupt_cost: duration(place, "interrupt_cost", &c.interrupt_cost, "1us")?,
        reads_per_interrupt: count("reads_per_interrupt", c.reads_per_interrupt, 1, 0)?,
        writes_per_frame: count("writes_per_frame", c.writes_per_frame, 1, 0)?,
        writes_per_interrupt: count("writes_per_interrupt", c.writes_per_interrupt, 2, 1)?,
        posted_depth: count("posted_depth", c.posted_depth, 16, 1)?,
    })
}

/// A count key of `place` (`default` when absent) that must lie in `min..=1024`.
fn small_count(
    place: &str,
    key: &'static str,
    v: Option<i64>,
    default: i64,
    min: i64,
) -> Result<u32, String> {
    let v = v.unwrap_or(default);
    if (min..=1024).contains(&v) {
        Ok(v as u32)
    } else {
        Err(at(place)(ConfigError::not_allowed(
            key,
            v,
            format!("{min} to 1024"),
        )))
    }
}

fn check_ber(place: &str, ber: f64) -> Result<f64, String> {
    if (0.0..=1e-3).contains(&ber) {
        Ok(ber)
    } else {
        Err(at(place)(ConfigError::not_allowed(
            "ber",
            ber,
            "0 to 1e-3 (errors per bit)",
        )))
    }
}

fn replay_buffer(place: &str, v: &Option<String>, default: &str) -> Result<u32, String> {
    let b =
        units::parse_bytes("replay_buffer", v.as_deref().unwrap_or(default)).map_err(at(place))?;
    u32::try_from(b)
        .map_err(|_| at(place)(ConfigError::not_allowed("replay_buffer", b, "up to 4 GiB")))
}
