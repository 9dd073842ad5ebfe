//! The IXP1240 router measures (IXP12xx report, Figure 5): the network-processor model with
//! the cell's Ethernet inputs at line rate, its parameters from the catalog section `ixp1240`.

use super::super::catalog;
use super::super::cell::Cell;
use super::super::registry::Registry;
use super::conflict;
use crate::error::Result;
use crate::np::{RouterResult, RouterSpec, StageCycles, StageThreads};

/// The IXP1240 router of the catalog (section `ixp1240`) with `inputs` Ethernet inputs.
fn spec(catalog: &toml::Table, inputs: u32) -> Result<RouterSpec> {
    let num = |k: &str| -> Result<f64> {
        catalog::parsed(catalog, &format!("ixp1240.{k}"), |v| {
            v.parse::<f64>()
                .map_err(|_| conflict(format!("ixp1240.{k} is not a number: {v}")))
        })
    };
    let count = |k: &str| -> Result<u32> { Ok(num(k)? as u32) };
    let secs = |k: &str| -> Result<f64> {
        catalog::parsed(catalog, &format!("ixp1240.{k}"), |v| {
            Ok(crate::units::parse_duration("ixp1240 time", v)?.as_secs_f64())
        })
    };
    Ok(RouterSpec {
        clock_hz: num("clock_mhz")? * 1e6,
        ethernet_ports: count("ethernet_ports")?,
        ethernet_inputs: inputs,
        cycles: StageCycles {
            atm_rx: num("atm_rx_cycles")?,
            ip_route: num("ip_route_cycles")?,
            eth_tx: num("eth_tx_cycles")?,
            eth_rx: num("eth_rx_cycles")?,
            atm_tx: num("atm_tx_cycles")?,
        },
        threads: StageThreads {
            atm_rx: count("atm_rx_threads")?,
            ip_route: count("ip_route_threads")?,
            eth_tx: count("eth_tx_threads")?,
            eth_rx: count("eth_rx_threads")?,
            atm_tx: count("atm_tx_threads")?,
        },
        msgq_depth: count("msgq_depth")?,
        tx_queue_depth: count("tx_queue_depth")?,
        atm_rx_fifo: count("atm_rx_fifo")?,
        eth_rx_fifo: count("eth_rx_fifo")?,
        tx_fifo: count("tx_fifo")?,
        dram_access: secs("dram_access")?,
        duration: secs("duration")?,
        warmup: secs("warmup")?,
    })
}

/// Runs the router the cell's `router` table describes.
fn run(cell: &Cell, registry: &Registry) -> Result<RouterResult> {
    let inputs = cell.needs(&cell.router, "router")?.inputs;
    Ok(crate::np::run(&spec(&registry.catalog, inputs)?))
}

/// Cells sent on OC-12, percent of its capacity.
pub(super) fn atm_tx_percent(cell: &Cell, registry: &Registry) -> Result<f64> {
    Ok(run(cell, registry)?.atm_tx_percent)
}

/// Frames per second of the slowest Ethernet port, thousands.
pub(super) fn eth_tx_kfps_low(cell: &Cell, registry: &Registry) -> Result<f64> {
    let r = run(cell, registry)?;
    Ok(r.eth_tx_fps.iter().copied().fold(f64::INFINITY, f64::min) / 1e3)
}

/// Frames per second of the fastest Ethernet port, thousands.
pub(super) fn eth_tx_kfps_high(cell: &Cell, registry: &Registry) -> Result<f64> {
    let r = run(cell, registry)?;
    Ok(r.eth_tx_fps.iter().copied().fold(0.0, f64::max) / 1e3)
}

/// The ATM-received packets dropped anywhere (at least one, to divide by).
fn atm_dropped(r: &RouterResult) -> f64 {
    let d = &r.drops;
    (d.atm_rx_fifo + d.ip_router_queue + d.eth_tx_queue).max(1) as f64
}

/// Share of the dropped ATM-received packets lost at full Ethernet transmit queues.
pub(super) fn drop_share_eth_tx_queue(cell: &Cell, registry: &Registry) -> Result<f64> {
    let r = run(cell, registry)?;
    Ok(r.drops.eth_tx_queue as f64 / atm_dropped(&r))
}

/// Share of the dropped ATM-received packets lost at the IP router's full input queue.
pub(super) fn drop_share_ip_router(cell: &Cell, registry: &Registry) -> Result<f64> {
    let r = run(cell, registry)?;
    Ok(r.drops.ip_router_queue as f64 / atm_dropped(&r))
}
