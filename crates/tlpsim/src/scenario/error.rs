//! What can be wrong with a parsed scenario, and where: the typed errors the build steps
//! return before [`super::load_str`] turns them into a [`super::ScenarioError`] line.

use std::fmt;

use thiserror::Error;

use crate::error::ConfigError;

/// Where in a scenario file a value sits, as messages name it: `[pcie]`,
/// `[[switch]] 2 (sw1)`, `[[link]] 3 (between sw2, ex)`, `[[ntb]] 1 (nt1) window 2`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place(String);

impl Place {
    /// A table that appears once: `[pcie]`.
    pub fn table(name: &str) -> Self {
        Place(format!("[{name}]"))
    }

    /// Element `index` (from 0) of a repeated section, with what tells it apart:
    /// `[[switch]] 2 (sw1)`.
    pub fn element(section: &str, index: usize, label: &str) -> Self {
        Place(format!("[[{section}]] {} ({label})", index + 1))
    }

    /// Element `index` (from 0) of a repeated section that has no name: `[[switch]] 2`.
    pub fn nth(section: &str, index: usize) -> Self {
        Place(format!("[[{section}]] {}", index + 1))
    }

    /// A repeated section's element by its name alone: `[[ntb]] "nt1"`.
    pub fn named(section: &str, name: &str) -> Self {
        Place(format!("[[{section}]] {name:?}"))
    }

    /// Window `index` (from 0) of a non-transparent bridge: `[[ntb]] 1 (nt1) window 2`.
    pub fn window(&self, index: usize) -> Self {
        Place(format!("{} window {}", self.0, index + 1))
    }
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A scenario that parsed but cannot be built: the place, what is wrong, what is allowed.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum BuildError {
    /// A value outside what PCI Express or tlpsim allows (the key, the value, the range).
    #[error("{place}: {source}")]
    Value {
        /// Where the value is.
        place: Place,
        /// The key, the value and what is allowed.
        #[source]
        source: ConfigError,
    },
    /// A key the section needs in this combination of keys, left out.
    #[error("{place}: {key} is missing ({hint})")]
    Missing {
        /// The section.
        place: Place,
        /// The key.
        key: &'static str,
        /// What to write, e.g. `bytes, e.g. "4KiB"`.
        hint: &'static str,
    },
    /// A key whose value should name a node and does not.
    #[error("{place}: {key} {name:?} is not a node; known nodes: {known}{guess}")]
    UnknownNode {
        /// The section.
        place: Place,
        /// The key (`endpoint`, `target`, `between`, `root`).
        key: &'static str,
        /// The name as written.
        name: String,
        /// Every node name, sorted.
        known: String,
        /// `; did you mean "NAME"?` for the closest node name, or empty.
        guess: String,
    },
    /// A name given to two sections that must be told apart.
    #[error("{place}: the {what} {name:?} is used twice")]
    Duplicate {
        /// The second section with the name.
        place: Place,
        /// What kind of name: `node name`, `workload name`, `name`.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// Keys, nodes or links that do not go together: what is wrong and what would do.
    #[error("{place}: {problem}")]
    Conflict {
        /// The section.
        place: Place,
        /// The problem and the way out, in words.
        problem: String,
    },
    /// The fabric as a whole: a loop, a node without its upstream link, no root complex.
    #[error("{0}")]
    Fabric(String),
}

impl BuildError {
    /// A [`BuildError::Conflict`] at `place`.
    pub fn conflict(place: &Place, problem: impl Into<String>) -> Self {
        BuildError::Conflict {
            place: place.clone(),
            problem: problem.into(),
        }
    }

    /// A [`BuildError::Value`] at `place`: `key value is not allowed; allowed: ...`.
    pub fn not_allowed(
        place: &Place,
        key: &'static str,
        value: impl ToString,
        allowed: impl ToString,
    ) -> Self {
        BuildError::Value {
            place: place.clone(),
            source: ConfigError::not_allowed(key, value, allowed),
        }
    }
}

/// Turns a [`ConfigError`] of a value at `place` into a [`BuildError`].
pub fn at(place: &Place) -> impl Fn(ConfigError) -> BuildError + '_ {
    move |source| BuildError::Value {
        place: place.clone(),
        source,
    }
}
