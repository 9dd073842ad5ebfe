//! The RFC 2544 measure (the switch reports' Gigabit Ethernet tables): the highest zero-loss
//! load of the cell's bridge workloads, found by binary search.

use super::super::cell::Cell;
use super::super::registry::Registry;
use super::super::template::scenario_text;
use super::{build, check_audit, conflict, limit_of, Computed};
use crate::error::Result;
use crate::sim;

/// Relative resolution of the RFC 2544 searches (1 %).
pub(crate) const RFC2544_RESOLUTION: f64 = 0.01;

/// Zero-loss throughput, Mb/s combined over the bridged ports, and what stops it going faster:
/// the line rate, or what saturates in the full-load trial.
pub(super) fn combined_mbps(cell: &Cell, registry: &Registry) -> Result<Computed> {
    let origin = cell.origin();
    let system = build(&scenario_text(cell, registry)?, &origin)?;
    let r = sim::rfc2544(&system, RFC2544_RESOLUTION)
        .map_err(|e| conflict(format!("{origin}: {e}")))?;
    if let Some(run) = &r.run {
        check_audit(run, &origin)?;
    }
    let limit = if r.load >= 1.0 {
        Some("line rate (zero loss at full load)".to_string())
    } else {
        r.full_load.as_ref().and_then(limit_of)
    };
    Ok((r.combined_mbps, limit))
}
