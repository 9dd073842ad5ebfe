//! Systems of the registry whose cells the front end computes: a folder of `validation/` with
//! a `front.toml` instead of a `reference.toml` (`pciebench`, whose published numbers are the
//! shipped pcie-bench directories and whose cells a fit per host decides). The core lists
//! such a system with the others, checks `only` against it, counts its cells in the progress,
//! places its rows after the other systems' and its unmodelled lines after theirs; the front
//! end computes its rows through [`Front`], which the caller hands in. The core imports
//! nothing of the front end: a caller without one gets a line saying so.

use serde::Deserialize;

use super::ValidationRow;
use crate::error::{ConfigError, Result};

/// `validation/SYSTEM/front.toml`: what a front system compares and who computes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrontSystem {
    /// What the system compares, one line.
    pub about: String,
    /// The front-end package that computes its cells (`tlpsim.pciebench`).
    pub computed_by: String,
}

impl FrontSystem {
    /// Parses `validation/NAME/front.toml`.
    pub(crate) fn parse(name: &str, text: &str) -> Result<Self> {
        toml::from_str(text)
            .map_err(|e| ConfigError::Conflict(format!("validation/{name}/front.toml: {e}")))
    }
}

/// What the front end computed for one of its systems.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FrontRows {
    /// The system's rows, in its own order; each row's `system` is the system's name.
    pub rows: Vec<ValidationRow>,
    /// One line per part of its published data that no cell covers (`pciebench:
    /// lat_cmd_details (...)`), placed after the other systems' unmodelled tables.
    pub unmodelled: Vec<String>,
}

/// The front end's computation of the registry's front systems, handed to
/// [`super::validate_with`]. The core calls it from a thread of its own, one system at a
/// time, while it computes its own systems' cells on the others.
pub trait Front: Sync {
    /// How many cells `system` computes: its share of the progress total.
    fn cells(&self, system: &str) -> Result<usize>;
    /// `system`'s rows, calling `progress(done)` as its cells finish; once that returns
    /// false the front end starts no further cell and returns an error.
    fn compute(&self, system: &str, progress: &dyn Fn(usize) -> bool) -> Result<FrontRows>;
}

/// The rows of `system` from `front`, checked: every row is the system's.
pub(crate) fn rows_of(
    front: &dyn Front,
    system: &str,
    progress: &dyn Fn(usize) -> bool,
) -> Result<FrontRows> {
    let computed = front.compute(system, progress)?;
    if let Some(r) = computed.rows.iter().find(|r| r.system != system) {
        return Err(ConfigError::Conflict(format!(
            "the front end's rows of {system} hold a row of system {}",
            r.system
        )));
    }
    Ok(computed)
}
