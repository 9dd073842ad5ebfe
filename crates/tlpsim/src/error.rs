//! Errors a user can cause: every message names the setting, the bad value and what is allowed.

use thiserror::Error;

/// A configuration value outside what PCI Express (or tlpsim) allows.
#[derive(Debug, Clone, PartialEq, Error)]
pub enum ConfigError {
    /// A setting with a value outside its allowed set.
    #[error("{setting} {value} is not allowed; allowed: {allowed}")]
    NotAllowed {
        /// The setting's name as the user wrote it (e.g. `width`).
        setting: &'static str,
        /// The offending value, printed as given.
        value: String,
        /// The allowed values or range, in words.
        allowed: String,
    },
    /// Two settings that cannot be used together.
    #[error("{0}")]
    Conflict(String),
}

impl ConfigError {
    /// Shorthand for [`ConfigError::NotAllowed`].
    pub fn not_allowed(
        setting: &'static str,
        value: impl ToString,
        allowed: impl ToString,
    ) -> Self {
        ConfigError::NotAllowed {
            setting,
            value: value.to_string(),
            allowed: allowed.to_string(),
        }
    }
}

/// Result type of every fallible tlpsim call.
pub type Result<T, E = ConfigError> = std::result::Result<T, E>;
