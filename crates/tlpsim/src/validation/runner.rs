//! Runs a validation: the selected cells' values (closed-form ones at once, simulated ones on
//! every core), each set beside its published number, in report order, then the rows of the
//! systems the front end computes.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

use super::cell::Cell;
use super::front::{rows_of, Front, FrontRows, FrontSystem};
use super::measures::{not_run_reason, Computed};
use super::reference::{row_for, system_and_table};
use super::registry::Registry;
use super::{ValidationReport, ValidationRow};
use crate::error::{ConfigError, Result};
use crate::fabric::Engine;

/// The rows of the cells of `only` (every system if None), and the reference tables no cell
/// covers. With `simulate` false only the closed-form cells are computed. The systems the
/// front end computes come after the others, from `front`; without one, `only` naming such
/// a system is an error and a validation of every system lists them as not run.
pub(crate) fn validate(
    registry: &Registry,
    only: Option<&str>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
    simulate: bool,
    front: Option<&dyn Front>,
) -> Result<ValidationReport> {
    let root = &registry.reference;
    if let Some(s) = only {
        if !registry.systems.iter().any(|k| k == s) {
            return Err(ConfigError::not_allowed(
                "system",
                s,
                registry.systems.join(", "),
            ));
        }
    }
    let fluid = registry.engine == Engine::Fluid;
    let fronts: Vec<(&String, &FrontSystem)> = registry
        .fronts
        .iter()
        .filter(|(name, _)| simulate && !fluid && only.is_none_or(|s| s == name.as_str()))
        .collect();
    if let (Some(s), None, Some((_, f))) = (only, front, fronts.first()) {
        return Err(ConfigError::Conflict(format!(
            "system {s} is computed by the front end ({}), and this validation was given none",
            f.computed_by
        )));
    }
    let selected: Vec<&Cell> = registry
        .cells
        .iter()
        .filter(|c| only.is_none_or(|s| s == c.system))
        .filter(|c| simulate || c.quantity.is_closed_form())
        .collect();
    let simulated: Vec<&Cell> = selected
        .iter()
        .copied()
        .filter(|c| !c.quantity.is_closed_form())
        .collect();
    let mut front_cells = Vec::with_capacity(fronts.len());
    for (name, _) in &fronts {
        front_cells.push(front.map_or(Ok(0), |f| f.cells(name))?);
    }
    let (values, computed) =
        compute_with_fronts(registry, &simulated, &fronts, &front_cells, front, progress);
    let mut values = values.into_iter();
    let mut rows = Vec::with_capacity(selected.len());
    let mut not_run = NotRun::default();
    for cell in selected {
        let computed = if cell.quantity.is_closed_form() {
            cell.quantity.compute(cell, registry)
        } else {
            values
                .next()
                .unwrap_or_else(|| Err(cell.error("was not run")))
        };
        if let Some(why) = computed.as_ref().err().and_then(not_run_reason) {
            not_run.add(cell, why);
            continue;
        }
        rows.push(row(root, cell, computed)?);
    }
    let mut unmodelled = unmodelled_tables(registry, only);
    unmodelled.extend(not_run.lines());
    if fluid {
        for name in registry
            .fronts
            .keys()
            .filter(|n| only.is_none_or(|s| s == n.as_str()))
        {
            unmodelled.push(format!(
                "{name}: not run by the fluid engine (its front end runs the simulator)"
            ));
        }
    }
    let mut computed = computed?.into_iter();
    for (name, system) in fronts {
        let Some(computed) = computed.next() else {
            unmodelled.push(format!(
                "{name}: not run (computed by the front end, {})",
                system.computed_by
            ));
            continue;
        };
        rows.extend(computed.rows);
        unmodelled.extend(computed.unmodelled);
    }
    Ok(ValidationReport {
        rows,
        unmodelled_tables: unmodelled,
    })
}

/// The core's `simulated` cells ([`compute_all`]) and the rows of the `fronts` systems
/// (`front_cells` cells each) from `front`, computed at once: the front systems on a thread
/// of their own while the core's cells run on the others (the front end's fits run one
/// simulation at a time, and the cores they leave idle take the core's cells). `progress`
/// gets the sum of both under one lock, from 0 and then only when it grows, so that its
/// calls do not depend on how the two threads interleave (a report that adds nothing gets
/// the last answer). Without `front` no front system is computed.
fn compute_with_fronts(
    registry: &Registry,
    simulated: &[&Cell],
    fronts: &[(&String, &FrontSystem)],
    front_cells: &[usize],
    front: Option<&dyn Front>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> (Vec<Result<Computed>>, Result<Vec<FrontRows>>) {
    let total = simulated.len() + front_cells.iter().sum::<usize>();
    // Cells done by the core and by the front, and the last sum reported with its answer.
    let done = Mutex::new((0usize, 0usize, 0usize, progress(0, total)));
    let report = |core: Option<usize>, front: Option<usize>| {
        let Ok(mut d) = done.lock() else { return true };
        (d.0, d.1) = (core.unwrap_or(d.0), front.unwrap_or(d.1));
        if d.0 + d.1 > d.2 {
            (d.2, d.3) = (d.0 + d.1, progress(d.0 + d.1, total));
        }
        d.3
    };
    std::thread::scope(|scope| {
        let fronts_run = scope.spawn(|| {
            let mut computed = Vec::with_capacity(fronts.len());
            let mut before = 0;
            for ((name, _), cells) in fronts.iter().zip(front_cells) {
                let Some(front) = front else { break };
                computed.push(rows_of(front, name, &|d| report(None, Some(before + d)))?);
                before += cells;
            }
            Ok(computed)
        });
        let values = compute_all(registry, simulated, &|d, _| report(Some(d), None));
        let computed = fronts_run
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        (values, computed)
    })
}

/// Per table, the cells the validation's engine did not compute, and why.
#[derive(Default)]
struct NotRun(Vec<(String, usize, String)>);

impl NotRun {
    /// `cell` was not run, for `why`.
    fn add(&mut self, cell: &Cell, why: &str) {
        let (system, table) = system_and_table(&cell.reference);
        let table = format!("{system}.{table}");
        match self.0.iter_mut().find(|(t, _, w)| *t == table && w == why) {
            Some(entry) => entry.1 += 1,
            None => self.0.push((table, 1, why.to_string())),
        }
    }

    /// One line per table and reason.
    fn lines(self) -> impl Iterator<Item = String> {
        self.0.into_iter().map(|(table, n, why)| {
            let cells = if n == 1 { "cell" } else { "cells" };
            format!("{table}: {n} {cells} not run by the fluid engine ({why})")
        })
    }
}

/// The `system.table` keys of the reference (of `only` if given) that no cell compares.
fn unmodelled_tables(registry: &Registry, only: Option<&str>) -> Vec<String> {
    let covered: BTreeSet<(&str, &str)> = registry
        .cells
        .iter()
        .map(|c| system_and_table(&c.reference))
        .collect();
    registry
        .reference
        .iter()
        .filter(|(s, _)| only.is_none_or(|o| o == s.as_str()))
        .flat_map(|(s, t)| {
            t.as_table()
                .into_iter()
                .flat_map(move |t| t.keys().map(move |k| (s.as_str(), k.as_str())))
        })
        .filter(|k| !covered.contains(k))
        .map(|(s, k)| format!("{s}.{k}"))
        .collect()
}

/// The cell's row: its published number, its computed value and what limited it.
fn row(root: &toml::Table, cell: &Cell, computed: Result<Computed>) -> Result<ValidationRow> {
    let (value, limit) = match computed {
        Ok((v, l)) => (Ok(v), l),
        Err(e) => (Err(e), None),
    };
    let mut row = row_for(root, &cell.key(), move || value)?;
    row.limit = limit;
    Ok(row)
}

/// Computes `cells` on every available core (each cell is deterministic, so the order of work
/// does not change any value), calling `progress(done, total)` as each finishes. When
/// `progress` returns false no further cell starts, and the cells left out come back as
/// errors saying so.
fn compute_all(
    registry: &Registry,
    cells: &[&Cell],
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Vec<Result<Computed>> {
    let total = cells.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(total.max(1));
    // Slowest cells first so that the threads finish together.
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(cells[k].quantity.cost()));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Result<Computed>>>> =
        Mutex::new((0..total).map(|_| None).collect());
    let stop = AtomicBool::new(!progress(0, total));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| loop {
                if stop.load(Ordering::Relaxed) {
                    break;
                }
                let i = next.fetch_add(1, Ordering::Relaxed);
                let Some(&k) = order.get(i) else { break };
                let value = cells[k].quantity.compute(cells[k], registry);
                if let Ok(mut r) = results.lock() {
                    r[k] = Some(value);
                }
                if !progress(done.fetch_add(1, Ordering::Relaxed) + 1, total) {
                    stop.store(true, Ordering::Relaxed);
                }
            });
        }
    });
    let finished = done.load(Ordering::Relaxed);
    results
        .into_inner()
        .unwrap_or_default()
        .into_iter()
        .map(|v| {
            v.unwrap_or_else(|| {
                Err(ConfigError::Conflict(format!(
                    "validation stopped after {finished} of {total} simulated cells"
                )))
            })
        })
        .collect()
}
