//! Scenario files: the TOML format users write, its JSON Schema, and the checks that turn a
//! file into a runnable [`System`].
//!
//! Every error names the file, the line or section, the key, what is wrong and what is
//! allowed; the section types reject unknown keys, and `[[endpoint]]` and `[[workload]]`
//! tables are read as the section of their `kind`, so a key of another kind is refused too.
//! Defaults for values the file leaves out are serde defaults on the section types (the
//! schema shows them) and the `DEFAULT_*` constants below.
//!
//! One module per job: `file` (the format and its parse), `values` (words, units,
//! latencies, credits), `nodes` (root complexes, switches, host bridges, the CPU),
//! `endpoint` and `workload` (one section type per kind: a new kind is a word, a variant, a
//! section type and its build function; a workload's in `flows`, `memcpy` or `nvme`, the
//! checks of where it goes in `paths`), `ntb` (bridges, their windows,
//! address resolution), `links` (links and the tree), `build` (the order of the steps),
//! `expand` (an endpoint's `count` as copies), `error` (what can be wrong, and where),
//! `located` (a TOML error as one line), `set` (one key replaced, for sweeps) and `include`
//! (the files a file includes, merged in, errors traced back to their file).

mod build;
mod endpoint;
mod error;
mod expand;
mod file;
mod flows;
mod host_memory;
mod include;
mod links;
mod located;
mod memcpy;
mod nodes;
mod ntb;
mod nvme;
mod paths;
mod set;
mod sockets;
mod tags;
mod values;
mod workload;

use std::fmt;

pub use endpoint::{
    DmaEndpointSection, EndpointKind, EndpointSection, NicEndpointSection, StorageEndpointSection,
};
pub use file::{PcieSection, ScenarioFile, SimulationSection};
pub use include::expand_includes;
pub use links::{AckWord, LinkSection};
pub use nodes::{
    ArbitrationWord, CompletionWord, CoreWord, CpuSection, ForwardingWord, HostBridgeSection,
    OutboundQueueWord, RootComplexSection, SwitchSection,
};
pub use ntb::{NtbSection, NtbWindowSection, SideWord};
pub use nvme::{FioWorkloadSection, NvmeEndpointSection, RwWord, NVME_PAGE};
pub use set::set_value;
pub use sockets::{SocketLinkSection, DEFAULT_SOCKET_BANDWIDTH};
pub use values::{
    CreditValue, CreditsSection, DistributionSection, DistributionWord, LatencyValue,
};
pub use workload::{
    BridgeWorkloadSection, DirectionWord, DmaWorkloadSection, StorageWorkloadSection, WorkloadKind,
    WorkloadSection,
};

use crate::fabric::System;

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

/// What a scenario error says where its message gives no reason (empty, or ending in `:`).
const NO_REASON: &str = "the scenario cannot be used, and no reason was found; compare it with \
                         `tlpsim schema` and the files in scenarios/";

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let message = self.message.trim();
        let message = if message.is_empty() {
            NO_REASON.to_string()
        } else if message.ends_with(':') {
            format!("{message} {NO_REASON}")
        } else {
            message.to_string()
        };
        f.write_str(&crate::error::one_line(&format!(
            "{}: {message}",
            self.origin
        )))
    }
}

impl std::error::Error for ScenarioError {}

/// The JSON Schema of the scenario format, generated from [`ScenarioFile`], with the
/// default credits of every node kind written into `CreditsSection`'s description as a
/// table.
pub fn json_schema() -> String {
    let mut schema = serde_json::to_value(schemars::schema_for!(ScenarioFile)).unwrap_or_default();
    if let Some(desc) = schema.pointer_mut("/$defs/CreditsSection/description") {
        let text = desc.as_str().unwrap_or_default();
        *desc = serde_json::Value::String(format!("{text}\n\n{}", credit_defaults_table()));
    }
    serde_json::to_string_pretty(&schema).unwrap_or_default()
}

/// The credits each node kind advertises unless told otherwise, as a Markdown table (data
/// credits in 16-byte units; "infinite" where the spec lets a receiver advertise no limit).
pub fn credit_defaults_table() -> String {
    let rows = [
        ("[[endpoint]] (every kind)", DEFAULT_ENDPOINT_CREDITS),
        ("[[root_complex]] (each root port)", DEFAULT_ROOT_CREDITS),
        ("[[switch]] (every port)", DEFAULT_SWITCH_CREDITS),
        ("[[ntb]] (each side)", DEFAULT_SWITCH_CREDITS),
    ];
    let mut out = String::from(
        "Default credits (data in 16-byte units):\n\n\
         | node | ph | pd | nph | npd | cplh | cpld |\n\
         |---|---|---|---|---|---|---|\n",
    );
    for (node, credits) in rows {
        let cells: Vec<String> = credits
            .iter()
            .map(|c| c.map_or_else(|| "infinite".to_string(), |n| n.to_string()))
            .collect();
        out += &format!("| {node} | {} |\n", cells.join(" | "));
    }
    out
}

/// Parses and checks scenario text; `origin` names it in errors.
pub fn load_str(text: &str, origin: &str) -> Result<System, ScenarioError> {
    let fail = |message: String| ScenarioError {
        origin: origin.to_string(),
        message,
    };
    let file = ScenarioFile::parse(text).map_err(|e| fail(located::describe(text, &e)))?;
    if !file.include.is_empty() {
        return Err(fail(include::NEEDS_A_PATH.into()));
    }
    build::build(&file).map_err(|e| fail(e.to_string()))
}

/// [`load_str`] for text tlpsim wrote (a scenario with a `--set` key replaced): its errors
/// name the section, not a line, since the lines are not those of the user's file.
fn load_rewritten(text: &str, origin: &str) -> Result<System, ScenarioError> {
    let fail = |message: String| ScenarioError {
        origin: origin.to_string(),
        message,
    };
    let file =
        ScenarioFile::parse(text).map_err(|e| fail(located::describe_unlocated(text, &e)))?;
    build::build(&file).map_err(|e| fail(e.to_string()))
}

/// Reads, parses and checks a scenario file, and the files it includes (`include = [...]`,
/// paths relative to its directory).
pub fn load_path(path: &std::path::Path) -> Result<System, ScenarioError> {
    let origin = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ScenarioError {
        origin: origin.clone(),
        message: format!("cannot read the file: {e}"),
    })?;
    match include::load_included(&text, &origin, path)? {
        Some(system) => Ok(system),
        None => load_str(&text, &origin),
    }
}
