//! The validation suite: every published number of the seed reports that tlpsim models,
//! computed from the stated hardware and compared with the document.
//!
//! The suite is a registry of systems, one folder of `validation/` each: `reference.toml`
//! (the document's numbers, transcribed and never edited), `cells.toml` (what tlpsim
//! computes for each number, and with which measure) and `topologies/*.toml`
//! (the scenario templates its cells run), beside one shared device catalog
//! (`validation/catalog.toml`). `build.rs` finds the folders and compiles their files into
//! the library, so a fresh install validates without the source tree and a new system that
//! uses existing measures needs no Rust. A folder with a `front.toml` instead is a system
//! whose cells the front end computes (`pciebench`, [`Front`]): listed, selected and
//! reported like the others, its rows handed in by the caller. A published value is only
//! read to be compared; it never enters a model.

use crate::error::Result;
use serde::Deserialize;

mod catalog;
mod cell;
#[cfg(test)]
mod discover;
mod front;
mod measures;
mod reference;
mod registry;
mod runner;
pub mod simulated;
mod template;

pub use cell::{DllpSpec, LinkSpec};
pub use front::{Front, FrontRows, FrontSystem};

/// Whether a cell was used to fit a parameter or is a prediction.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The cell was used to fit a catalog parameter; not counted in accuracy.
    Calibrate,
    /// The cell is predicted from the stated hardware and the catalog.
    #[default]
    Predict,
}

impl Role {
    /// `"calibrate"` or `"predict"`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Calibrate => "calibrate",
            Role::Predict => "predict",
        }
    }
}

/// One compared cell, with the DESIGN.md field names.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationRow {
    /// Seed system (`pes24n3a`, `pes24t6`, `ntb`, `t5220`, `ixp12xx`).
    pub system: String,
    /// Table key within the system.
    pub table: String,
    /// Series (row) within the table.
    pub series: String,
    /// Column (x value) within the series.
    pub column: String,
    /// Unit of `published` and `simulated`.
    pub unit: String,
    /// The document's number.
    pub published: f64,
    /// tlpsim's number.
    pub simulated: f64,
    /// `(simulated - published) / published`.
    pub error: f64,
    /// Calibrate or predict.
    pub role: Role,
    /// What limited the simulation behind a throughput cell, e.g. "link rc-sw down
    /// (100 %)" or "cpu cpu core 0 (97 %)" (the flows' bottlenecks; for an RFC 2544 cell,
    /// those of its full-load trial); None where it does not apply.
    pub limit: Option<String>,
    /// The fold of a cross-validated system's row (`cross-host`, `in-sample`); None for a
    /// system without folds. A row with a fold also carries `band` (fields `low`, `high`).
    pub fold: Option<String>,
    /// The 90 % band `(low, high)` around a predicted row's value, where its system gives
    /// one; None for a calibrate row or a system without bands.
    pub band: Option<(f64, f64)>,
}

/// The rows of a validation run plus the published tables not modelled yet.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidationReport {
    /// Compared cells.
    pub rows: Vec<ValidationRow>,
    /// `system.table` keys of the reference files that no cell covers yet.
    pub unmodelled_tables: Vec<String>,
}

/// Every system's published numbers in one table (`system.table.series`), as transcribed.
pub fn reference() -> toml::Table {
    registry::embedded_reference()
        .expect("the validation/*/reference.toml files are valid (checked by tests)")
}

/// The published number a cell reference (`system.table.series[i]`) names, if any.
pub fn published(reference: &str) -> Option<f64> {
    reference::number(&self::reference(), reference)
}

/// The validated systems (the folders of `validation/`, the front end's systems among them),
/// sorted by name.
pub fn systems() -> Vec<String> {
    registry::embedded_systems()
}

/// The systems whose cells the front end computes (`validation/SYSTEM/front.toml`), by name.
pub fn front_systems() -> Vec<(String, FrontSystem)> {
    registry::Registry::embedded()
        .expect("the validation/ files are valid (checked by tests)")
        .fronts
        .into_iter()
        .collect()
}

/// Runs every validation cell (of one system if `only` is given) that the core computes; the
/// front end's systems are listed in `unmodelled_tables` as not run (see [`validate_with`]).
pub fn validate(only: Option<&str>) -> Result<ValidationReport> {
    validate_with_progress(only, &|_, _| true)
}

/// [`validate`], calling `progress(done, total)` as simulated cells finish; when it returns
/// false no further cell starts and the validation ends with an error saying how far it got.
pub fn validate_with_progress(
    only: Option<&str>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<ValidationReport> {
    validate_with(only, progress, None)
}

/// [`validate_with_progress`] with the front end's systems computed by `front` (their rows
/// after the others', their cells counted in `progress`); without one, `only` naming such a
/// system is an error.
pub fn validate_with(
    only: Option<&str>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
    front: Option<&dyn Front>,
) -> Result<ValidationReport> {
    validate_on(only, progress, front, crate::fabric::Engine::Des)
}

/// [`validate_with`] with the simulated cells computed by `engine`. On the fluid engine the
/// cells it does not compute (latencies, frame losses, systems it refuses, the front end's
/// systems) are not rows: `unmodelled_tables` lists them per table, with the reason.
pub fn validate_on(
    only: Option<&str>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
    front: Option<&dyn Front>,
    engine: crate::fabric::Engine,
) -> Result<ValidationReport> {
    let mut registry = registry::Registry::embedded()?;
    registry.engine = engine;
    runner::validate(&registry, only, progress, true, front)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    #[test]
    fn every_cell_resolves_and_computes() {
        let report = validate(None).unwrap();
        // Closed form 22, T5220 30, storage 34, GE 56, mixed 64, graphics 2, netperf 32,
        // IXP12xx 13; modern: FPGA DMA 22, GPU copies 40, H100 copies 16, NVMe 16.
        assert_eq!(
            report.rows.len(),
            22 + 30 + 34 + 56 + 64 + 2 + 32 + 13 + 22 + 40 + 16 + 16
        );
        // Only the GPU peer-to-peer matrices wait for a model (docs/validation-gaps.md); the
        // front end's pciebench is not run without a front end.
        assert_eq!(
            report.unmodelled_tables,
            [
                "modern.gpu_p2p",
                "pciebench: not run (computed by the front end, tlpsim.pciebench)"
            ]
        );
        for row in &report.rows {
            assert!(
                row.published.is_finite() && row.simulated.is_finite(),
                "{row:?}"
            );
            assert!(!row.unit.is_empty() && !row.column.is_empty(), "{row:?}");
        }
        assert!(!report
            .unmodelled_tables
            .contains(&"t5220.dma_bandwidth".to_string()));
        assert!(!report.unmodelled_tables.contains(&"pes24t6.fc".to_string()));
        assert!(!report
            .unmodelled_tables
            .contains(&"ntb.netperf".to_string()));
        assert!(!report
            .unmodelled_tables
            .contains(&"pes24t6.ge_windows".to_string()));
        assert!(!report
            .unmodelled_tables
            .contains(&"ntb.protocol_overhead".to_string()));
    }

    #[test]
    fn a_progress_callback_can_stop_the_validation() {
        let stopped = validate_with_progress(Some("t5220"), &|_, _| false).unwrap_err();
        assert!(
            stopped
                .to_string()
                .starts_with("validation stopped after 0 of 30 simulated cells"),
            "{stopped}"
        );
        // Stopping as the first cell finishes leaves the rest unstarted: only the cells
        // already running on the other threads still finish.
        let calls = std::sync::atomic::AtomicUsize::new(0);
        let e = validate_with_progress(Some("t5220"), &|done, _| {
            calls.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            done == 0
        })
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("validation stopped after "), "{e}");
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
        assert!(calls.into_inner() <= 1 + threads, "too many cells ran");
    }

    #[test]
    fn only_filters_and_rejects_unknown_systems() {
        let ntb = validate(Some("ntb")).unwrap();
        assert!(ntb.rows.iter().all(|r| r.system == "ntb"));
        assert_eq!(ntb.rows.len(), 7 + 32);
        let e = validate(Some("pes24")).unwrap_err().to_string();
        assert!(
            e.contains("ixp12xx, modern, ntb, pciebench, pes24n3a, pes24t6, t5220"),
            "{e}"
        );
    }

    #[test]
    fn t5220_calibrate_cells_hold_their_fit_and_roles_are_marked() {
        let rows = validate(Some("t5220")).unwrap().rows;
        assert_eq!(rows.len(), 30);
        let calibrate: Vec<_> = rows.iter().filter(|r| r.role == Role::Calibrate).collect();
        // Only the single PCI-E2 slot: its three bandwidths and its latency.
        assert_eq!(calibrate.len(), 4);
        assert!(calibrate
            .iter()
            .all(|r| r.series == "t5220_x8_slot" || r.series == "t5220_pcie2"));
        let latency = calibrate
            .iter()
            .find(|r| r.series == "t5220_pcie2")
            .unwrap();
        assert!(latency.error.abs() < 0.01, "{latency:?}");
        let both = calibrate
            .iter()
            .find(|r| r.column.starts_with("simultaneous"))
            .unwrap();
        assert!(both.error.abs() < 0.01, "{both:?}");
        // The simultaneous cell is the calibrated memory bandwidth, and says so.
        assert_eq!(both.limit.as_deref(), Some("memory t2 memory (100 %)"));
        // Store-and-forward switches only ever add latency: each slot's reduction lies in
        // (0, 1), the smallest no larger than the largest.
        let reduction: Vec<f64> = rows
            .iter()
            .filter(|r| r.series == "cut_through_vs_store_and_forward_latency_reduction")
            .map(|r| r.simulated)
            .collect();
        assert_eq!(reduction.len(), 2);
        assert!(0.0 < reduction[0] && reduction[0] <= reduction[1] && reduction[1] < 1.0);
    }

    #[test]
    fn figure9_column_names_come_from_the_table() {
        let ntb = validate(Some("ntb")).unwrap();
        let cols: Vec<_> = ntb
            .rows
            .iter()
            .filter(|r| r.series.starts_with("reduction"))
            .map(|r| r.column.as_str())
            .collect();
        assert_eq!(cols, ["16384", "8192", "4096", "512"]);
    }

    #[test]
    fn closed_form_cells_agree_with_the_documents_arithmetic() {
        // These published figures are pure arithmetic in their documents, so the model
        // must land within rounding, except where the document rounds loosely
        // ("close to 75 %", "approximately 8 Gbps", "25 % lost in framing").
        let loose = [
            "example_x8_64B_wire_efficiency",
            "x8_64B_framing_overhead_gbps",
            "loss_breakdown_x8_64B.framing",
            "reduction",
        ];
        // Tables the simulator computes are checked elsewhere.
        let registry = registry::Registry::embedded().unwrap();
        let simulated: BTreeSet<(&str, &str)> = registry
            .cells
            .iter()
            .filter(|c| !c.quantity.is_closed_form())
            .map(|c| reference::system_and_table(&c.reference))
            .collect();
        let closed_form = runner::validate(&registry, None, &|_, _| true, false, None).unwrap();
        assert_eq!(closed_form.rows.len(), 22);
        for row in closed_form
            .rows
            .into_iter()
            .filter(|r| !simulated.contains(&(r.system.as_str(), r.table.as_str())))
        {
            let tol = if loose.iter().any(|l| row.series.starts_with(l)) {
                0.06
            } else {
                0.005
            };
            assert!(row.error.abs() <= tol, "{row:?}");
        }
    }
}
