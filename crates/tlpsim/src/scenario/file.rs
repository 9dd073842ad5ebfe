//! The file format: the whole scenario file, its once-only sections, and the parse that reads
//! every `[[endpoint]]` and `[[workload]]` as the section of its `kind`.
//!
//! serde reads an enum tagged by `kind` through a buffer that loses TOML's position of each
//! key, so the kinds are read ahead from the plain TOML tree and each table is then read
//! straight into its kind's section type: a key of another kind is refused at its own line.

use std::fmt;
use std::marker::PhantomData;

use schemars::JsonSchema;
use serde::de::{self, DeserializeOwned, DeserializeSeed, Deserializer, MapAccess, SeqAccess};
use serde::Deserialize;

use super::endpoint::EndpointSection;
use super::links::{AckWord, LinkSection};
use super::nodes::{CpuSection, HostBridgeSection, RootComplexSection, SwitchSection};
use super::ntb::NtbSection;
use super::sockets::SocketLinkSection;
use super::values::defaults;
use super::workload::WorkloadSection;
use super::DEFAULT_REPLAY_BUFFER;

use crate::units;

defaults! {
    default_duration: String = "100us";
    default_seed: u64 = 1u64;
    default_mps: i64 = 128;
    default_mrrs: i64 = 512;
    default_rcb: i64 = 64;
    default_addressing: i64 = 64;
    default_gen: i64 = 1;
    default_width: i64 = 1;
    default_true: bool = true;
    default_zero_ns: String = "0ns";
    default_replay_buffer: String = DEFAULT_REPLAY_BUFFER;
}

/// `[simulation]`: how long to run and the seed.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SimulationSection {
    /// Simulated time including warmup, e.g. "200us" (default "100us").
    #[serde(default = "default_duration")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub duration: String,
    /// Time before statistics start, e.g. "20us" (when left out: a tenth of duration).
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub warmup: Option<String>,
    /// RNG seed (default 1).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// The engine that runs it: "des" (TLP by TLP, the default) or "fluid" (flow-level
    /// max-min sharing of closed-form capacities; no latencies).
    #[serde(default)]
    pub engine: EngineWord,
}

/// `[simulation] engine`: which engine runs the scenario.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum EngineWord {
    /// The TLP-level discrete-event simulator.
    #[default]
    Des,
    /// The flow-level model.
    Fluid,
}

impl Default for SimulationSection {
    fn default() -> Self {
        SimulationSection {
            duration: default_duration(),
            warmup: None,
            seed: default_seed(),
            engine: EngineWord::Des,
        }
    }
}

/// `[pcie]`: defaults for every link and device.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PcieSection {
    /// Max_Payload_Size in bytes (128–4096, default 128).
    #[serde(default = "default_mps")]
    pub mps: i64,
    /// Max_Read_Request_Size in bytes (128–4096, default 512).
    #[serde(default = "default_mrrs")]
    pub mrrs: i64,
    /// Read completion boundary in bytes (64 or 128, default 64).
    #[serde(default = "default_rcb")]
    pub rcb: i64,
    /// Address bits of memory requests (32 or 64, default 64).
    #[serde(default = "default_addressing")]
    pub addressing: i64,
    /// ECRC on every TLP (default false).
    #[serde(default)]
    pub ecrc: bool,
    /// Default generation of links (1–7, default 1).
    #[serde(default = "default_gen")]
    pub gen: i64,
    /// Default lane width of links (default 1).
    #[serde(default = "default_width")]
    pub width: i64,
    /// Default SKP ordered sets on links (default true).
    #[serde(default = "default_true")]
    pub skp: bool,
    /// Default bit error rate of links (default 0).
    #[serde(default)]
    pub ber: f64,
    /// Default one-way propagation delay of links (default "0ns").
    #[serde(default = "default_zero_ns")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub propagation: String,
    /// Default replay buffer of links (default "16KiB").
    #[serde(default = "default_replay_buffer")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub replay_buffer: String,
    /// Default time links spend in Recovery when they retrain, e.g. "2us" (default: the
    /// spec's shortest Recovery at each link's rate, plus its round trip).
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub recovery: Option<String>,
    /// Default Ack policy of links: "timer" (at the spec's Ack/UpdateFC latency interval) or
    /// "immediate" (an Ack or UpdateFC as soon as one is owed); default "timer".
    #[serde(default)]
    pub ack: AckWord,
}

impl Default for PcieSection {
    fn default() -> Self {
        PcieSection {
            mps: default_mps(),
            mrrs: default_mrrs(),
            rcb: default_rcb(),
            addressing: default_addressing(),
            ecrc: false,
            gen: default_gen(),
            width: default_width(),
            skp: default_true(),
            ber: 0.0,
            propagation: default_zero_ns(),
            replay_buffer: default_replay_buffer(),
            recovery: None,
            ack: AckWord::default(),
        }
    }
}

/// A whole scenario file.
#[derive(Debug, Clone, Default, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Scenario files read first, paths relative to this file's directory (they may include
    /// others): their tables merge under this file's (its keys win) and their [[sections]]
    /// come before its own, e.g. include = ["base.toml"].
    #[serde(default)]
    pub include: Vec<String>,
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
    /// Endpoints, each the section of its `kind`.
    #[serde(default)]
    pub endpoint: Vec<EndpointSection>,
    /// Host bridges.
    #[serde(default)]
    pub host_bridge: Vec<HostBridgeSection>,
    /// Links (a tree: every node but a root complex has one upstream link).
    #[serde(default)]
    pub link: Vec<LinkSection>,
    /// Inter-socket links (UPI, Infinity Fabric) joining two root complexes.
    #[serde(default)]
    pub socket_link: Vec<SocketLinkSection>,
    /// Workloads, each the section of its `kind`.
    #[serde(default)]
    pub workload: Vec<WorkloadSection>,
    /// The host CPU (needed by bridge workloads).
    pub cpu: Option<CpuSection>,
}

impl ScenarioFile {
    /// Parses scenario text: TOML whose tables are the sections above, each `[[endpoint]]`
    /// and `[[workload]]` read as the section of its `kind`.
    pub fn parse(text: &str) -> Result<Self, toml::de::Error> {
        let kinds = Kinds::scan(text);
        FileSeed { kinds: &kinds }.deserialize(toml::Deserializer::new(text))
    }
}

/// A repeated section whose keys depend on its `kind`: one section type per kind.
pub trait Tagged: Sized {
    /// The words `kind` takes.
    type Kind: DeserializeOwned + Copy + fmt::Debug;

    /// Reads the table `d` as the section of `kind`.
    fn deserialize_kind<'de, D: Deserializer<'de>>(
        kind: Self::Kind,
        d: D,
    ) -> Result<Self, D::Error>;
}

/// The `kind` of each `[[endpoint]]` and `[[workload]]` table, in file order, read from the
/// plain TOML tree (empty when the text is not TOML: the typed parse then says why).
#[derive(Default)]
struct Kinds {
    endpoint: Vec<Option<toml::Value>>,
    workload: Vec<Option<toml::Value>>,
}

impl Kinds {
    fn scan(text: &str) -> Self {
        let Ok(doc) = text.parse::<toml::Table>() else {
            return Kinds::default();
        };
        let list = |section: &str| {
            doc.get(section)
                .and_then(toml::Value::as_array)
                .map(|a| a.iter().map(|t| t.get("kind").cloned()).collect())
                .unwrap_or_default()
        };
        Kinds {
            endpoint: list("endpoint"),
            workload: list("workload"),
        }
    }
}

/// The top-level keys of a scenario file.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "snake_case")]
enum Key {
    Include,
    Simulation,
    Pcie,
    RootComplex,
    Switch,
    Ntb,
    Endpoint,
    HostBridge,
    Link,
    SocketLink,
    Workload,
    Cpu,
}

/// Reads a [`ScenarioFile`], the tagged sections by the kinds read ahead.
struct FileSeed<'k> {
    kinds: &'k Kinds,
}

impl<'de> DeserializeSeed<'de> for FileSeed<'_> {
    type Value = ScenarioFile;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<ScenarioFile, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> de::Visitor<'de> for FileSeed<'_> {
    type Value = ScenarioFile;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a scenario: TOML tables such as [simulation], [[switch]], [[link]]")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<ScenarioFile, A::Error> {
        let mut f = ScenarioFile::default();
        while let Some(key) = map.next_key::<Key>()? {
            match key {
                Key::Include => f.include = map.next_value()?,
                Key::Simulation => f.simulation = Some(map.next_value()?),
                Key::Pcie => f.pcie = Some(map.next_value()?),
                Key::RootComplex => f.root_complex = map.next_value()?,
                Key::Switch => f.switch = map.next_value()?,
                Key::Ntb => f.ntb = map.next_value()?,
                Key::Endpoint => {
                    f.endpoint = map.next_value_seed(List::new(&self.kinds.endpoint))?
                }
                Key::HostBridge => f.host_bridge = map.next_value()?,
                Key::Link => f.link = map.next_value()?,
                Key::SocketLink => f.socket_link = map.next_value()?,
                Key::Workload => {
                    f.workload = map.next_value_seed(List::new(&self.kinds.workload))?
                }
                Key::Cpu => f.cpu = Some(map.next_value()?),
            }
        }
        Ok(f)
    }
}

/// Reads an array of tagged tables, table `i` as the section of `kinds[i]`.
struct List<'k, T> {
    kinds: &'k [Option<toml::Value>],
    section: PhantomData<T>,
}

impl<'k, T> List<'k, T> {
    fn new(kinds: &'k [Option<toml::Value>]) -> Self {
        List {
            kinds,
            section: PhantomData,
        }
    }
}

impl<'de, T: Tagged> DeserializeSeed<'de> for List<'_, T> {
    type Value = Vec<T>;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: Tagged> de::Visitor<'de> for List<'_, T> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("an array of tables")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::new();
        loop {
            let kind = self.kinds.get(out.len()).and_then(Option::as_ref);
            match seq.next_element_seed(Element::<T> {
                kind,
                section: PhantomData,
            })? {
                Some(t) => out.push(t),
                None => return Ok(out),
            }
        }
    }
}

/// Reads one tagged table whose `kind` was read ahead.
struct Element<'k, T> {
    kind: Option<&'k toml::Value>,
    section: PhantomData<T>,
}

/// Only the `kind` of a table: read when the kind read ahead is missing or not a word, so
/// that the error comes with the table's line or the `kind` key's.
#[derive(Deserialize)]
struct KindOnly<K> {
    kind: K,
}

impl<'de, T: Tagged> DeserializeSeed<'de> for Element<'_, T> {
    type Value = T;

    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<T, D::Error> {
        if let Some(kind) = self.kind.and_then(|k| T::Kind::deserialize(k.clone()).ok()) {
            return T::deserialize_kind(kind, d);
        }
        let KindOnly { kind } = KindOnly::<T::Kind>::deserialize(d)?;
        Err(de::Error::custom(format!(
            "kind {kind:?} could not be read ahead of the table"
        )))
    }
}
