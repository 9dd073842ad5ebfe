//! A validation cell as a system's `cells.toml` writes it: the published number it is compared
//! with, the measure that computes tlpsim's value, and the inputs that measure reads.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::measures::Measure;
use super::reference::CellKey;
use super::Role;
use crate::analytic::{CompletionSize, DllpPolicy, LinkRequest};
use crate::error::{ConfigError, Result};

/// The cells of one `cells.toml`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct CellFile {
    #[serde(default)]
    pub(crate) cell: Vec<Cell>,
}

/// One cell. Closed-form measures read `link` (and `message`, `scale`); simulated measures
/// read `topology` and `run`, and `netperf`, `over`, `router` or `devices` where theirs need
/// them.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Cell {
    /// The system whose folder holds the cell (from the folder, not the file).
    #[serde(skip)]
    pub(crate) system: String,
    /// The published number: `system.table.series`, `[i]` picking an array element.
    pub(crate) reference: String,
    /// Series name when the reference path does not give a good one.
    pub(crate) series: Option<String>,
    /// Column name when the table's `columns` do not give it.
    pub(crate) column: Option<String>,
    /// Unit when the table's `unit` does not fit the cell.
    pub(crate) unit: Option<String>,
    /// What the cell reads off the model (`quantity` in the file).
    pub(crate) quantity: Measure,
    /// Multiplier of a closed-form rate (2 = both directions).
    #[serde(default = "one")]
    pub(crate) scale: f64,
    /// Closed form: the link as the document states it.
    pub(crate) link: Option<LinkSpec>,
    /// Closed form: a netperf message over the link.
    pub(crate) message: Option<MessageSpec>,
    /// Simulated: the scenario template (`topologies/NAME.toml` of the cell's system).
    pub(crate) topology: Option<String>,
    /// Simulated: one workload per entry.
    #[serde(default)]
    pub(crate) run: Vec<RunSpec>,
    /// netperf: the stream measured.
    pub(crate) netperf: Option<NetperfSpec>,
    /// netperf: the stream the first is divided by, for a ratio.
    pub(crate) over: Option<NetperfSpec>,
    /// IXP1240 router: its inputs.
    pub(crate) router: Option<RouterCell>,
    /// Calibrate or predict.
    #[serde(default)]
    pub(crate) role: Role,
    /// Template aliases: `${alias.key}` in the topology reads `${section.key}` of the
    /// catalog (the OS, host or NIC a cell uses).
    #[serde(default)]
    pub(crate) devices: BTreeMap<String, String>,
    /// Scenario values the cell sets on its topology, by key as `tlpsim sweep --set` takes
    /// them (`link.rc-ep.width = "4"`, `workload.copy.direction = "read"`): the setup the
    /// source states for this cell, where one template serves several.
    #[serde(default)]
    pub(crate) set: BTreeMap<String, String>,
    /// Throughput measures: count only the workloads of these names (all when empty), where
    /// the source reports one direction of a run that moves data both ways.
    #[serde(default)]
    pub(crate) flows: Vec<String>,
}

fn one() -> f64 {
    1.0
}

impl Cell {
    /// What identifies the cell's row.
    pub(crate) fn key(&self) -> CellKey<'_> {
        CellKey {
            reference: &self.reference,
            series: self.series.as_deref(),
            column: self.column.as_deref(),
            unit: self.unit.as_deref(),
            role: self.role,
        }
    }

    /// Where the cell's scenario comes from, for messages: its template and its reference.
    pub(crate) fn origin(&self) -> String {
        format!(
            "validation/{}/topologies/{}.toml for {}",
            self.system,
            self.topology.as_deref().unwrap_or("-"),
            self.reference
        )
    }

    /// An error naming the cell.
    pub(crate) fn error(&self, why: impl std::fmt::Display) -> ConfigError {
        ConfigError::Conflict(format!("cell {}: {why}", self.reference))
    }

    /// An optional table the cell's measure needs, or an error naming it.
    pub(crate) fn needs<'a, T>(&self, table: &'a Option<T>, name: &str) -> Result<&'a T> {
        table
            .as_ref()
            .ok_or_else(|| self.error(format!("needs a {name} table")))
    }
}

/// A netperf message of a closed-form cell: payload bytes plus header bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct MessageSpec {
    pub(crate) size: i64,
    pub(crate) header: i64,
}

/// One workload of a cell: a DMA exerciser run (`direction`), an Iometer-style storage
/// run (`read_percent`, sizes, outstanding I/Os) or an RFC 2544 bridge (`frame_size`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RunSpec {
    pub(crate) endpoint: String,
    pub(crate) direction: Option<String>,
    pub(crate) read_percent: Option<u32>,
    pub(crate) read_size: Option<String>,
    pub(crate) write_size: Option<String>,
    pub(crate) outstanding: Option<u32>,
    pub(crate) random: Option<bool>,
    /// Ethernet frame size: an RFC 2544 bridge workload on this NIC.
    pub(crate) frame_size: Option<u32>,
}

/// The IXP1240 router run of a cell: Ethernet ports receiving at line rate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct RouterCell {
    pub(crate) inputs: u32,
}

/// One netperf stream of a cell: the sending and receiving hosts (catalog sections), what
/// joins them, the message size, and for PCIe the two root complexes of the topology.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct NetperfSpec {
    pub(crate) sender: Option<String>,
    pub(crate) receiver: Option<String>,
    /// "loopback", "wire", "ethernet" (catalog section `nic`), "pcie", or "max_effective"
    /// (the simulated payload rate of line-sized writes on the PCIe path, no stack at all).
    pub(crate) interface: String,
    pub(crate) message: Option<u32>,
    pub(crate) nic: Option<String>,
    pub(crate) from: Option<String>,
    pub(crate) to: Option<String>,
}

/// Link inputs of a cell, as in a scenario's `[[link]]` (every field optional).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkSpec {
    /// Generation number.
    pub gen: Option<i64>,
    /// Lanes.
    pub width: Option<i64>,
    /// Max_Payload_Size.
    pub mps: Option<i64>,
    /// Max_Read_Request_Size.
    pub mrrs: Option<i64>,
    /// Read completion boundary.
    pub rcb: Option<i64>,
    /// Transfer (or TLP) payload size.
    pub payload: Option<i64>,
    /// Address bits.
    pub addressing: Option<i64>,
    /// ECRC on.
    pub ecrc: Option<bool>,
    /// `"spec"`, `"none"` or bytes per TLP.
    pub dllp: Option<DllpSpec>,
    /// SKP charged.
    pub skp: Option<bool>,
    /// Flit mode.
    pub flit: Option<bool>,
    /// `"rcb"` or `"mps"`.
    pub completion: Option<String>,
}

/// A DLLP setting as written in TOML: a word or a number of bytes.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum DllpSpec {
    /// `"spec"` or `"none"`.
    Word(String),
    /// Bytes per TLP.
    Bytes(f64),
}

impl LinkSpec {
    /// The request these settings describe, defaults filled in.
    pub fn to_request(&self) -> Result<LinkRequest> {
        let d = LinkRequest::default();
        let dllp = match &self.dllp {
            None => d.dllp,
            Some(DllpSpec::Word(w)) => DllpPolicy::parse(w)?,
            Some(DllpSpec::Bytes(b)) => DllpPolicy::parse(&b.to_string())?,
        };
        let completion = match &self.completion {
            None => d.completion,
            Some(c) => CompletionSize::parse(c)?,
        };
        Ok(LinkRequest {
            gen: self.gen.unwrap_or(d.gen),
            width: self.width.unwrap_or(d.width),
            mps: self.mps.unwrap_or(d.mps),
            mrrs: self.mrrs.unwrap_or(d.mrrs),
            rcb: self.rcb.unwrap_or(d.rcb),
            payload: self.payload.or(d.payload),
            addressing: self.addressing.unwrap_or(d.addressing),
            ecrc: self.ecrc.unwrap_or(d.ecrc),
            dllp,
            skp: self.skp.unwrap_or(d.skp),
            flit: self.flit.or(d.flit),
            completion,
        })
    }
}
