//! The registry of validated systems: the files of every `validation/SYSTEM/` folder (found
//! by `build.rs` and embedded in the library), parsed into the one list of systems, one
//! reference table, the cells in report order, the scenario templates by system, the systems
//! the front end computes (`front.toml`) and the shared device catalog.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::catalog;
use super::cell::{Cell, CellFile};
use super::front::FrontSystem;
use crate::error::{ConfigError, Result};
use crate::fabric::Engine;

/// The files of one system folder, as text.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SystemSource<'a> {
    /// The folder's name: the system (`pes24n3a`).
    pub(crate) name: &'a str,
    /// `reference.toml`: the published numbers, all under `[NAME.table]` keys (empty for a
    /// front system).
    pub(crate) reference: &'a str,
    /// `front.toml` of a system the front end computes (empty for one the core computes).
    pub(crate) front: &'a str,
    /// `cells.toml` (empty for a system without cells).
    pub(crate) cells: &'a str,
    /// `topologies/*.toml` as (file stem, text).
    pub(crate) topologies: &'a [(&'a str, &'a str)],
}

/// Every system folder of `validation/`, as `build.rs` found them.
const EMBEDDED: &[SystemSource<'static>] =
    include!(concat!(env!("OUT_DIR"), "/validation_systems.rs"));

/// The order of the tables in a report (validation/order.toml).
const ORDER_TOML: &str = include_str!("../../../../validation/order.toml");

/// validation/order.toml.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct Order {
    tables: Vec<String>,
}

fn conflict(m: String) -> ConfigError {
    ConfigError::Conflict(m)
}

/// The systems' cells, templates, published numbers and the device catalog.
#[derive(Debug, Clone)]
pub(crate) struct Registry {
    /// Every system, sorted by name: the one list `only` is checked against.
    pub(crate) systems: Vec<String>,
    /// The systems the front end computes, by name.
    pub(crate) fronts: BTreeMap<String, FrontSystem>,
    /// Every system's published numbers, keyed `system.table...`.
    pub(crate) reference: toml::Table,
    /// Every cell, in report order.
    pub(crate) cells: Vec<Cell>,
    /// Scenario templates by (system, name).
    topologies: BTreeMap<(String, String), String>,
    /// The device catalog.
    pub(crate) catalog: toml::Table,
    /// The engine that computes the simulated cells.
    pub(crate) engine: Engine,
}

/// The published numbers of the embedded systems, merged.
pub(crate) fn embedded_reference() -> Result<toml::Table> {
    merged_reference(EMBEDDED)
}

/// The names of the embedded systems, sorted (the folders of `validation/`).
pub(crate) fn embedded_systems() -> Vec<String> {
    EMBEDDED.iter().map(|s| s.name.to_string()).collect()
}

/// The reference files of `systems` in one table; each file may only hold its own system.
fn merged_reference(systems: &[SystemSource]) -> Result<toml::Table> {
    let mut root = toml::Table::new();
    for s in systems {
        let file = format!("validation/{}/reference.toml", s.name);
        let table: toml::Table = s
            .reference
            .parse()
            .map_err(|e| conflict(format!("{file}: {e}")))?;
        for (key, value) in table {
            if key != s.name {
                return Err(conflict(format!(
                    "{file}: holds [{key}.*]; a system's reference file holds only [{}.*] tables",
                    s.name
                )));
            }
            root.insert(key, value);
        }
    }
    Ok(root)
}

impl Registry {
    /// The systems compiled into the library.
    pub(crate) fn embedded() -> Result<Self> {
        Self::load(EMBEDDED, catalog::CATALOG_TOML, ORDER_TOML)
    }

    /// Parses the files of `systems`, the catalog and the report order (`order.toml` text;
    /// empty for none).
    pub(crate) fn load(systems: &[SystemSource], catalog: &str, order: &str) -> Result<Self> {
        let reference = merged_reference(systems)?;
        let mut cells = Vec::new();
        let mut topologies = BTreeMap::new();
        let mut fronts = BTreeMap::new();
        for s in systems.iter().filter(|s| !s.front.is_empty()) {
            if !s.cells.is_empty() || !s.topologies.is_empty() {
                return Err(conflict(format!(
                    "validation/{}: a front system's cells are the front end's; it holds no \
                     cells.toml or topologies/",
                    s.name
                )));
            }
            fronts.insert(s.name.to_string(), FrontSystem::parse(s.name, s.front)?);
        }
        for s in systems {
            for (name, text) in s.topologies {
                topologies.insert((s.name.to_string(), name.to_string()), text.to_string());
            }
            let file: CellFile = toml::from_str(s.cells)
                .map_err(|e| conflict(format!("validation/{}/cells.toml: {e}", s.name)))?;
            for mut cell in file.cell {
                cell.system = s.name.to_string();
                cells.push(cell);
            }
        }
        let mut names: Vec<String> = systems.iter().map(|s| s.name.to_string()).collect();
        names.sort();
        let registry = Registry {
            systems: names,
            fronts,
            reference,
            cells: in_report_order(cells, order)?,
            topologies,
            catalog: catalog::parse(catalog)?,
            engine: Engine::Des,
        };
        for cell in &registry.cells {
            registry.check(cell)?;
        }
        Ok(registry)
    }

    /// A cell belongs to its folder's system, and names a template of it if its measure runs
    /// one.
    fn check(&self, cell: &Cell) -> Result<()> {
        let (system, _) = super::reference::system_and_table(&cell.reference);
        if system != cell.system {
            return Err(cell.error(format!(
                "validation/{}/cells.toml may only compare numbers of {}",
                cell.system, cell.system
            )));
        }
        cell.quantity.check(cell)?;
        if let Some(name) = &cell.topology {
            self.template(cell, name)?;
        }
        Ok(())
    }

    /// The scenario template `name` of the cell's system.
    fn template(&self, cell: &Cell, name: &str) -> Result<&str> {
        self.topologies
            .get(&(cell.system.clone(), name.to_string()))
            .map(String::as_str)
            .ok_or_else(|| {
                let known: Vec<_> = self
                    .topologies
                    .keys()
                    .filter(|(s, _)| *s == cell.system)
                    .map(|(_, n)| n.as_str())
                    .collect();
                cell.error(format!(
                    "no topology {name:?} in validation/{}/topologies/ (there: {})",
                    cell.system,
                    known.join(", ")
                ))
            })
    }

    /// The template a simulated cell runs.
    pub(crate) fn topology(&self, cell: &Cell) -> Result<&str> {
        let name = cell.topology.as_deref().ok_or_else(|| {
            cell.error(if cell.quantity.is_closed_form() {
                "a closed-form cell runs no scenario"
            } else {
                "names no topology"
            })
        })?;
        self.template(cell, name)
    }

    /// The cell comparing the number `reference` names.
    pub(crate) fn find(&self, reference: &str) -> Result<&Cell> {
        self.cells
            .iter()
            .find(|c| c.reference == reference)
            .ok_or_else(|| conflict(format!("no validation cell {reference}")))
    }

    /// The registry with some catalog values replaced (`section.key`, TOML value text).
    pub(crate) fn with_catalog_values(mut self, overrides: &[(&str, &str)]) -> Result<Self> {
        catalog::set_values(&mut self.catalog, overrides)?;
        Ok(self)
    }
}

/// The cells sorted by their table's place in `order` (the text of order.toml); cells of a
/// table not named there follow in the order given, and one table's cells keep theirs.
fn in_report_order(mut cells: Vec<Cell>, order: &str) -> Result<Vec<Cell>> {
    let order: Order = if order.trim().is_empty() {
        Order::default()
    } else {
        toml::from_str(order).map_err(|e| conflict(format!("validation/order.toml: {e}")))?
    };
    let place = |cell: &Cell| {
        let (system, table) = super::reference::system_and_table(&cell.reference);
        order
            .tables
            .iter()
            .position(|t| t.split_once('.') == Some((system, table)))
            .unwrap_or(usize::MAX)
    };
    for table in &order.tables {
        if !cells.iter().any(|c| {
            super::reference::system_and_table(&c.reference)
                == table.split_once('.').unwrap_or_default()
        }) {
            return Err(conflict(format!(
                "validation/order.toml: no cell compares a number of {table}"
            )));
        }
    }
    cells.sort_by_key(place);
    Ok(cells)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::discover::{discover, generate, SystemDir};
    use crate::validation::runner;
    use std::path::{Path, PathBuf};

    /// A system folder's files read into memory, as `build.rs` embeds them.
    struct Owned {
        name: String,
        reference: String,
        front: String,
        cells: String,
        topologies: Vec<(String, String)>,
    }

    fn read(dirs: &[SystemDir]) -> Vec<Owned> {
        let text = |p: &Path| std::fs::read_to_string(p).unwrap();
        dirs.iter()
            .map(|d| Owned {
                name: d.name.clone(),
                reference: d.reference.as_deref().map(text).unwrap_or_default(),
                front: d.front.as_deref().map(text).unwrap_or_default(),
                cells: d.cells.as_deref().map(text).unwrap_or_default(),
                topologies: d
                    .topologies
                    .iter()
                    .map(|(n, p)| (n.clone(), text(p)))
                    .collect(),
            })
            .collect()
    }

    fn load_owned(owned: &[Owned], order: &str) -> Result<Registry> {
        let topologies: Vec<Vec<(&str, &str)>> = owned
            .iter()
            .map(|o| {
                o.topologies
                    .iter()
                    .map(|(n, t)| (n.as_str(), t.as_str()))
                    .collect()
            })
            .collect();
        let sources: Vec<SystemSource> = owned
            .iter()
            .zip(&topologies)
            .map(|(o, t)| SystemSource {
                name: &o.name,
                reference: &o.reference,
                front: &o.front,
                cells: &o.cells,
                topologies: t,
            })
            .collect();
        Registry::load(&sources, catalog::CATALOG_TOML, order)
    }

    fn validation_folder() -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../validation")
    }

    #[test]
    fn the_embedded_systems_are_the_folders_of_validation() {
        let (dirs, skipped) = discover(&validation_folder()).unwrap();
        assert!(skipped.is_empty(), "{skipped:?}");
        let found: Vec<(String, Vec<String>)> = dirs
            .iter()
            .map(|d| {
                let names = d.topologies.iter().map(|(n, _)| n.clone()).collect();
                (d.name.clone(), names)
            })
            .collect();
        let embedded: Vec<(String, Vec<String>)> = EMBEDDED
            .iter()
            .map(|s| {
                let names = s.topologies.iter().map(|(n, _)| n.to_string()).collect();
                (s.name.to_string(), names)
            })
            .collect();
        assert_eq!(found, embedded);
        let names: Vec<_> = found.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(
            names,
            [
                "ixp12xx",
                "modern",
                "ntb",
                "pciebench",
                "pes24n3a",
                "pes24t6",
                "t5220"
            ]
        );
        // Read from the folders or compiled in, the registry is the same.
        let from_disk = load_owned(&read(&dirs), ORDER_TOML).unwrap();
        let embedded = Registry::embedded().unwrap();
        assert_eq!(from_disk.reference, embedded.reference);
        assert_eq!(from_disk.topologies, embedded.topologies);
        let refs =
            |r: &Registry| -> Vec<String> { r.cells.iter().map(|c| c.reference.clone()).collect() };
        assert_eq!(refs(&from_disk), refs(&embedded));
    }

    #[test]
    fn every_template_is_run_by_a_cell_of_its_system() {
        let registry = Registry::embedded().unwrap();
        for (system, name) in registry.topologies.keys() {
            assert!(
                registry
                    .cells
                    .iter()
                    .any(|c| c.system == *system && c.topology.as_deref() == Some(name)),
                "validation/{system}/topologies/{name}.toml is run by no cell"
            );
        }
    }

    #[test]
    fn a_reference_file_holds_only_its_own_system() {
        let bad = SystemSource {
            name: "abc",
            reference: "[xyz.table]\nvalue = 1\n",
            front: "",
            cells: "",
            topologies: &[],
        };
        let e = Registry::load(&[bad], catalog::CATALOG_TOML, "")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("validation/abc/reference.toml: holds [xyz.*]"),
            "{e}"
        );
    }

    #[test]
    fn a_cell_names_a_template_of_its_own_system() {
        let e = |cells: &str| {
            let s = SystemSource {
                name: "abc",
                reference: "[abc.table]\nunit = \"GB/s\"\nvalue = 1\n",
                front: "",
                cells,
                topologies: &[("one", "")],
            };
            Registry::load(&[s], catalog::CATALOG_TOML, "")
                .unwrap_err()
                .to_string()
        };
        let cell = "[[cell]]\nreference = \"abc.table.value\"\ncolumn = \"c\"\n";
        let missing = e(&format!(
            "{cell}quantity = \"throughput_gbytes\"\ntopology = \"two\"\n"
        ));
        assert_eq!(
            missing,
            "cell abc.table.value: no topology \"two\" in validation/abc/topologies/ (there: one)"
        );
        let none = e(&format!("{cell}quantity = \"throughput_gbytes\"\n"));
        assert!(
            none.ends_with("a simulated measure needs a `topology`"),
            "{none}"
        );
        let unknown = e(&format!("{cell}quantity = \"bogus\"\n"));
        assert!(
            unknown.starts_with("validation/abc/cells.toml: "),
            "{unknown}"
        );
    }

    /// A new system is a folder: its published numbers, its cells (existing measures) and a
    /// scenario template. Discovery finds it, the build script's table names its files, and
    /// the registry validates it, with no Rust written for it.
    #[test]
    fn a_new_system_folder_needs_no_rust() {
        /// Removes the folder when the test ends, passed or failed.
        struct TempDir(PathBuf);
        impl Drop for TempDir {
            fn drop(&mut self) {
                let _ = std::fs::remove_dir_all(&self.0);
            }
        }
        let tmp =
            TempDir(std::env::temp_dir().join(format!("tlpsim-new-system-{}", std::process::id())));
        let root = &tmp.0;
        let dir = root.join("example_sys");
        std::fs::create_dir_all(dir.join("topologies")).unwrap();
        std::fs::create_dir_all(root.join("notes")).unwrap();
        let write = |path: &str, text: &str| std::fs::write(dir.join(path), text).unwrap();
        write(
            "reference.toml",
            "[example_sys.capacity]\nunit = \"Gbit/s\"\nraw_x4 = 10.0\n\n\
             [example_sys.dma]\nunit = \"GB/s\"\n\
             columns = [\"DMA read only\", \"DMA write only\"]\nx4_slot = [0.8, 0.85]\n",
        );
        write(
            "cells.toml",
            "[[cell]]\nreference = \"example_sys.capacity.raw_x4\"\ncolumn = \"Gen1 x4\"\n\
             quantity = \"raw_gbps\"\nlink = { gen = 1, width = 4 }\n\n\
             [[cell]]\nreference = \"example_sys.dma.x4_slot[1]\"\ntopology = \"one_link\"\n\
             run = [{ endpoint = \"ex\", direction = \"write\" }]\n\
             quantity = \"throughput_gbytes\"\n",
        );
        write(
            "topologies/one_link.toml",
            "[simulation]\nduration = \"40us\"\nwarmup = \"4us\"\n\n\
             [[root_complex]]\nname = \"rc\"\n\
             memory_read_latency = \"${t2_root_complex.memory_read_latency}\"\n\n\
             [[endpoint]]\nname = \"ex\"\nkind = \"dma\"\n\n\
             [[link]]\nbetween = [\"rc\", \"ex\"]\ngen = 1\nwidth = 4\n",
        );
        let (dirs, skipped) = discover(root).unwrap();
        assert_eq!(skipped, [root.join("notes")]);
        assert_eq!(dirs.len(), 1);
        assert_eq!(dirs[0].name, "example_sys");
        assert_eq!(dirs[0].topologies[0].0, "one_link");
        let table = generate(&dirs);
        assert!(table.contains("name: \"example_sys\""), "{table}");
        assert!(table.contains("(\"one_link\", include_str!("), "{table}");

        let owned = read(&dirs);
        let registry = load_owned(&owned, "").unwrap();
        let report = crate::validation::runner::validate(
            &registry,
            Some("example_sys"),
            &|_, _| true,
            true,
            None,
        )
        .unwrap();
        assert!(report.unmodelled_tables.is_empty());
        let [raw, dma] = &report.rows[..] else {
            panic!("{:?}", report.rows)
        };
        assert_eq!(
            (raw.table.as_str(), raw.series.as_str(), raw.column.as_str()),
            ("capacity", "raw_x4", "Gen1 x4")
        );
        assert_eq!(
            (raw.published, raw.simulated, raw.unit.as_str()),
            (10.0, 10.0, "Gbit/s")
        );
        assert_eq!(
            (dma.series.as_str(), dma.column.as_str(), dma.unit.as_str()),
            ("x4_slot", "DMA write only", "GB/s")
        );
        // A Gen1 x4 link carries at most 1 GB/s of payload per direction.
        assert!(0.5 < dma.simulated && dma.simulated < 1.0, "{dma:?}");
        assert!(dma.limit.is_some(), "{dma:?}");
    }

    #[test]
    fn tables_outside_the_report_order_follow_it_by_system() {
        let new = SystemSource {
            name: "aaa",
            reference: "[aaa.capacity]\nunit = \"Gbit/s\"\nraw = 2.5\n",
            front: "",
            cells: "[[cell]]\nreference = \"aaa.capacity.raw\"\ncolumn = \"x1\"\n\
                    quantity = \"raw_gbps\"\nlink = { gen = 1, width = 1 }\n",
            topologies: &[],
        };
        let mut systems = vec![new];
        systems.extend_from_slice(EMBEDDED);
        let registry = Registry::load(&systems, catalog::CATALOG_TOML, ORDER_TOML).unwrap();
        let embedded = Registry::embedded().unwrap();
        assert_eq!(registry.cells.len(), embedded.cells.len() + 1);
        // Listed tables keep their place; the unlisted one comes last, though its system
        // sorts first.
        assert_eq!(registry.cells.last().unwrap().reference, "aaa.capacity.raw");
        let e = Registry::load(EMBEDDED, catalog::CATALOG_TOML, "tables = [\"t5220.nope\"]")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "validation/order.toml: no cell compares a number of t5220.nope"
        );
    }

    /// A front end answering with fixed rows, as the Python package does for `pciebench`.
    struct FakeFront {
        rows: Vec<crate::validation::ValidationRow>,
    }

    impl crate::validation::Front for FakeFront {
        fn cells(&self, system: &str) -> Result<usize> {
            assert_eq!(system, "aaa");
            Ok(3)
        }
        fn compute(
            &self,
            system: &str,
            progress: &dyn Fn(usize) -> bool,
        ) -> Result<crate::validation::FrontRows> {
            assert_eq!(system, "aaa");
            assert!(progress(1) && progress(3));
            Ok(crate::validation::FrontRows {
                rows: self.rows.clone(),
                unmodelled: vec!["aaa: lat_cmd (not a DMA)".into()],
            })
        }
    }

    fn front_row(system: &str) -> crate::validation::ValidationRow {
        crate::validation::ValidationRow {
            system: system.into(),
            table: "host/bw".into(),
            series: "BW_DMA_RD".into(),
            column: "64B".into(),
            unit: "Gb/s".into(),
            published: 10.0,
            simulated: 11.0,
            error: 0.1,
            role: crate::validation::Role::Predict,
            limit: None,
            fold: Some("cross-host".into()),
            band: Some((9.0, 12.0)),
        }
    }

    /// A front system (`front.toml`, like `pciebench`) is one of the registry's systems: in
    /// the one list `only` is checked against, its cells counted in the progress, its rows
    /// and unmodelled lines after the other systems' (though its name sorts first).
    #[test]
    fn a_front_system_goes_through_the_one_path() {
        let front = SystemSource {
            name: "aaa",
            reference: "",
            front: "about = \"fixed rows\"\ncomputed_by = \"a test\"\n",
            cells: "",
            topologies: &[],
        };
        let closed = SystemSource {
            name: "zzz",
            reference: "[zzz.capacity]\nunit = \"Gbit/s\"\nraw = 2.5\n\n[zzz.other]\nx = 1\n",
            front: "",
            cells: "[[cell]]\nreference = \"zzz.capacity.raw\"\ncolumn = \"x1\"\n\
                    quantity = \"raw_gbps\"\nlink = { gen = 1, width = 1 }\n",
            topologies: &[],
        };
        let registry = Registry::load(&[front, closed], catalog::CATALOG_TOML, "").unwrap();
        assert_eq!(registry.systems, ["aaa", "zzz"]);
        let fake = FakeFront {
            rows: vec![front_row("aaa")],
        };
        let seen = std::sync::Mutex::new(Vec::new());
        let progress = |d: usize, t: usize| {
            seen.lock().unwrap().push((d, t));
            true
        };
        let run = |only| runner::validate(&registry, only, &progress, true, Some(&fake));
        let all = run(None).unwrap();
        let systems: Vec<_> = all.rows.iter().map(|r| r.system.as_str()).collect();
        assert_eq!(systems, ["zzz", "aaa"]);
        assert_eq!(all.rows[1], front_row("aaa"));
        assert_eq!(
            all.unmodelled_tables,
            ["zzz.other", "aaa: lat_cmd (not a DMA)"]
        );
        // No simulated cell of its own: the front's three cells are the whole count.
        assert_eq!(*seen.lock().unwrap(), [(0, 3), (1, 3), (3, 3)]);
        let only = run(Some("aaa")).unwrap();
        assert_eq!(only.rows, [front_row("aaa")]);
        // Without a front end, the system is refused by name, or listed as not run.
        let none = runner::validate(&registry, Some("aaa"), &progress, true, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            none,
            "system aaa is computed by the front end (a test), and this validation was given none"
        );
        let all = runner::validate(&registry, None, &progress, true, None).unwrap();
        assert_eq!(all.rows.len(), 1);
        assert_eq!(
            all.unmodelled_tables,
            [
                "zzz.other",
                "aaa: not run (computed by the front end, a test)"
            ]
        );
        // A front end's row must be its system's.
        let stray = FakeFront {
            rows: vec![front_row("zzz")],
        };
        let e = runner::validate(&registry, None, &progress, true, Some(&stray))
            .unwrap_err()
            .to_string();
        assert_eq!(e, "the front end's rows of aaa hold a row of system zzz");
        // A front system's folder holds no cells of its own.
        let with_cells = SystemSource {
            cells: "[[cell]]\n",
            ..front
        };
        let e = Registry::load(&[with_cells], catalog::CATALOG_TOML, "")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("validation/aaa: a front system's cells"),
            "{e}"
        );
    }

    #[test]
    fn pciebench_is_a_system_of_the_registry() {
        let registry = Registry::embedded().unwrap();
        assert_eq!(
            registry
                .systems
                .iter()
                .filter(|s| *s == "pciebench")
                .count(),
            1
        );
        assert_eq!(crate::validation::systems(), registry.systems);
        let front = &registry.fronts["pciebench"];
        assert_eq!(front.computed_by, "tlpsim.pciebench");
        assert_eq!(registry.fronts.len(), 1);
    }

    /// A folder with a `front.toml` is found as a front system; one with both files is an
    /// error.
    #[test]
    fn discovery_finds_front_systems() {
        let root = std::env::temp_dir().join(format!("tlpsim-front-system-{}", std::process::id()));
        let dir = root.join("bench");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(
            dir.join("front.toml"),
            "about = \"x\"\ncomputed_by = \"y\"\n",
        )
        .unwrap();
        let found = discover(&root);
        std::fs::write(dir.join("reference.toml"), "").unwrap();
        let both = discover(&root);
        let _ = std::fs::remove_dir_all(&root);
        let (dirs, skipped) = found.unwrap();
        assert!(skipped.is_empty());
        assert_eq!(dirs[0].name, "bench");
        assert!(dirs[0].reference.is_none() && dirs[0].front.is_some());
        assert!(generate(&dirs).contains("front: include_str!("));
        let e = both.unwrap_err();
        assert!(
            e.ends_with("holds a reference.toml or a front.toml, not both"),
            "{e}"
        );
    }
}
