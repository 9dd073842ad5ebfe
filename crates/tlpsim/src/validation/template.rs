//! A simulated cell's scenario: its system's topology template with the device aliases
//! resolved and the catalog values filled in, plus one workload per `run` entry.

use super::catalog::{catalog_value, render};
use super::cell::{Cell, RunSpec};
use super::measures::Workloads;
use super::registry::Registry;
use crate::error::Result;

/// The scenario text of one cell: its topology plus one workload per `run` entry.
pub(crate) fn scenario_text(cell: &Cell, registry: &Registry) -> Result<String> {
    let catalog = &registry.catalog;
    let mut template = registry.topology(cell)?.to_string();
    for (alias, section) in &cell.devices {
        template = template.replace(&format!("${{{alias}."), &format!("${{{section}."));
    }
    let mut text = render(&template, catalog)?;
    let style = cell.quantity.workloads();
    let (size, outstanding) = match style {
        // The document's latency: one 64 B read at a time.
        Workloads::LatencyProbe => ("64B".to_string(), "1".to_string()),
        Workloads::Exerciser | Workloads::FrameWrites => (
            catalog_value(catalog, "exerciser.transfer_size").unwrap_or_default(),
            catalog_value(catalog, "exerciser.outstanding").unwrap_or_default(),
        ),
    };
    for r in &cell.run {
        let e = &r.endpoint;
        if style == Workloads::FrameWrites {
            let bytes = catalog_value(catalog, "gpu_frame.bytes").unwrap_or_default();
            text.push_str(&format!(
                "\n[[workload]]\nname = \"{e}\"\nkind = \"dma\"\nendpoint = \"host\"\n\
                 target = \"{e}\"\ndirection = \"write\"\ntransfer_size = \"{bytes}\"\n\
                 outstanding = 1\n"
            ));
            continue;
        }
        if let Some(size) = r.frame_size {
            text.push_str(&format!(
                "\n[[workload]]\nname = \"{e}\"\nkind = \"bridge\"\nendpoint = \"{e}\"\n\
                 frame_size = {size}\nload = 1.0\n"
            ));
            continue;
        }
        match (&r.direction, r.read_percent) {
            (Some(d), None) => text.push_str(&format!(
                "\n[[workload]]\nname = \"{e}\"\nkind = \"dma\"\nendpoint = \"{e}\"\n\
                 direction = \"{d}\"\ntransfer_size = \"{size}\"\noutstanding = {outstanding}\n"
            )),
            (None, Some(p)) => storage_workload(&mut text, r, p),
            _ => {
                return Err(
                    cell.error("each run needs either direction (DMA) or read_percent (storage)")
                )
            }
        }
    }
    for (key, value) in &cell.set {
        let value = render(value, catalog)?;
        text = crate::scenario::set_value(&text, &cell.origin(), key, &value)
            .map_err(|e| cell.error(e.message))?;
    }
    Ok(text)
}

/// An Iometer-style access on a storage HBA: `read_percent` reads, the rest writes.
fn storage_workload(text: &mut String, r: &RunSpec, read_percent: u32) {
    let e = &r.endpoint;
    text.push_str(&format!(
        "\n[[workload]]\nname = \"{e}\"\nkind = \"storage\"\nendpoint = \"{e}\"\n\
         read_percent = {read_percent}\noutstanding = {}\n",
        r.outstanding.unwrap_or(4)
    ));
    for (key, v) in [("read_size", &r.read_size), ("write_size", &r.write_size)] {
        if let Some(v) = v {
            text.push_str(&format!("{key} = \"{v}\"\n"));
        }
    }
    if let Some(random) = r.random {
        text.push_str(&format!("random = {random}\n"));
    }
}
