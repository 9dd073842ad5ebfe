//! tlpsim: performance model and simulator of PCI Express fabrics.
//!
//! The core library: protocol arithmetic by spec layer ([`pcie`]), the closed-form link
//! model ([`analytic`]) and the validation suite against published measurements
//! ([`validation`]). It never depends on Python; `tlpsim-py` binds it.

#![warn(missing_docs)]

pub mod analytic;
pub mod engine;
pub mod error;
pub mod fabric;
pub mod fluid;
pub mod host_memory_spec;
pub mod netperf;
pub mod np;
pub mod pcie;
pub mod scenario;
pub mod sim;
pub mod units;
pub mod validation;

pub use analytic::{link_bandwidth, CompletionSize, DllpPolicy, LinkBandwidth, LinkRequest};
pub use error::ConfigError;
