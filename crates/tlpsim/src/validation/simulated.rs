//! Seed cells the TLP-level simulator computes: scenario templates from `validation/`,
//! filled with values from the device catalog, run with DMA workloads per cell.

use serde::Deserialize;

use super::{row_for, CellKey, Role, ValidationRow};
use crate::error::{ConfigError, Result};
use crate::scenario::load_str;
use crate::sim;

/// The cells (validation/simulated.toml).
pub const SIMULATED_TOML: &str = include_str!("../../../../validation/simulated.toml");
/// Relative resolution of the RFC 2544 searches (1 %).
pub const RFC2544_RESOLUTION: f64 = 0.01;
/// The device catalog (validation/catalog.toml).
pub const CATALOG_TOML: &str = include_str!("../../../../validation/catalog.toml");
/// Scenario templates by topology name.
pub const TOPOLOGIES: &[(&str, &str)] = &[
    (
        "t5220",
        include_str!("../../../../validation/t5220/t5220.toml"),
    ),
    (
        "t2000",
        include_str!("../../../../validation/t5220/t2000.toml"),
    ),
    (
        "pes24n3a_fc_direct",
        include_str!("../../../../validation/pes24n3a/fc_direct.toml"),
    ),
    (
        "pes24n3a_fc_switch",
        include_str!("../../../../validation/pes24n3a/fc_switch.toml"),
    ),
    (
        "pes24n3a_fc_ramdisk_direct",
        include_str!("../../../../validation/pes24n3a/fc_ramdisk_direct.toml"),
    ),
    (
        "pes24n3a_fc_ramdisk_switch",
        include_str!("../../../../validation/pes24n3a/fc_ramdisk_switch.toml"),
    ),
    (
        "pes24n3a_sas_direct_x4",
        include_str!("../../../../validation/pes24n3a/sas_direct_x4.toml"),
    ),
    (
        "pes24n3a_sas_direct_x8",
        include_str!("../../../../validation/pes24n3a/sas_direct_x8.toml"),
    ),
    (
        "pes24n3a_sas_switch",
        include_str!("../../../../validation/pes24n3a/sas_switch.toml"),
    ),
    (
        "pes24t6_fc_direct",
        include_str!("../../../../validation/pes24t6/fc_direct.toml"),
    ),
    (
        "pes24t6_fc_switch",
        include_str!("../../../../validation/pes24t6/fc_switch.toml"),
    ),
    (
        "pes24n3a_ge_direct",
        include_str!("../../../../validation/pes24n3a/ge_direct.toml"),
    ),
    (
        "pes24n3a_ge_switch",
        include_str!("../../../../validation/pes24n3a/ge_switch.toml"),
    ),
    (
        "pes24n3a_mixed_direct",
        include_str!("../../../../validation/pes24n3a/mixed_direct.toml"),
    ),
    (
        "pes24n3a_mixed_switch",
        include_str!("../../../../validation/pes24n3a/mixed_switch.toml"),
    ),
    (
        "pes24t6_ge_direct",
        include_str!("../../../../validation/pes24t6/ge_direct.toml"),
    ),
    (
        "pes24n3a_gpu_direct",
        include_str!("../../../../validation/pes24n3a/gpu_direct.toml"),
    ),
    (
        "pes24n3a_gpu_switch",
        include_str!("../../../../validation/pes24n3a/gpu_switch.toml"),
    ),
    (
        "pes24t6_ge_switch",
        include_str!("../../../../validation/pes24t6/ge_switch.toml"),
    ),
    (
        "ntb_system_interconnect",
        include_str!("../../../../validation/ntb/system_interconnect.toml"),
    ),
];

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimFile {
    cell: Vec<SimCell>,
}

/// One workload of a cell: a DMA exerciser run (`direction`) or an Iometer-style storage
/// run (`read_percent`, sizes, outstanding I/Os).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RunSpec {
    endpoint: String,
    direction: Option<String>,
    read_percent: Option<u32>,
    read_size: Option<String>,
    write_size: Option<String>,
    outstanding: Option<u32>,
    random: Option<bool>,
    /// Ethernet frame size: an RFC 2544 bridge workload on this NIC.
    frame_size: Option<u32>,
}

#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(rename_all = "snake_case")]
enum SimQuantity {
    ThroughputGbytes,
    ThroughputMbytes,
    LatencyNs,
    /// RFC 2544 zero-loss throughput of the bridge workloads, Mb/s combined over ports.
    GeCombinedMbps,
    /// A 3DMark-style score: points per fps over (render time + the frame's PCIe time).
    GraphicsScore,
    /// netperf TCP_STREAM user data rate, Gb/s (`netperf`), or its ratio to another stream
    /// (`over`).
    Netperf,
    /// IXP1240 router (`router`): cells sent on OC-12, percent of its capacity.
    AtmTxPercent,
    /// IXP1240 router: frames per second of the slowest Ethernet port, thousands.
    EthTxKfpsLow,
    /// IXP1240 router: frames per second of the fastest Ethernet port, thousands.
    EthTxKfpsHigh,
    /// IXP1240 router: share of the dropped ATM-received packets lost at full Ethernet
    /// transmit queues.
    DropShareEthTxQueue,
    /// IXP1240 router: share of the dropped ATM-received packets lost at the IP router's
    /// full input queue.
    DropShareIpRouter,
    /// DMA read latency of each `run` endpoint alone, with the topology's switches as built
    /// (cut-through) and all store-and-forward: the smallest reduction `1 - ct / saf`.
    CutThroughReductionLow,
    /// As `CutThroughReductionLow`, the largest reduction.
    CutThroughReductionHigh,
}

/// The IXP1240 router run of a cell: Ethernet ports receiving at line rate.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct RouterCell {
    inputs: u32,
}

/// One netperf stream of a cell: the sending and receiving hosts (catalog sections), what
/// joins them, the message size, and for PCIe the two root complexes of the topology.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct NetperfSpec {
    sender: Option<String>,
    receiver: Option<String>,
    /// "loopback", "wire", "ethernet" (catalog section `nic`), "pcie", or "max_effective"
    /// (the simulated payload rate of line-sized writes on the PCIe path, no stack at all).
    interface: String,
    message: Option<u32>,
    nic: Option<String>,
    from: Option<String>,
    to: Option<String>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
struct SimCell {
    reference: String,
    series: Option<String>,
    column: Option<String>,
    unit: Option<String>,
    topology: String,
    #[serde(default)]
    run: Vec<RunSpec>,
    quantity: SimQuantity,
    netperf: Option<NetperfSpec>,
    over: Option<NetperfSpec>,
    router: Option<RouterCell>,
    #[serde(default)]
    role: Role,
    /// Template aliases: `${alias.key}` in the topology reads `${section.key}` of the
    /// catalog (the OS, host or NIC a cell uses).
    #[serde(default)]
    devices: std::collections::BTreeMap<String, String>,
}

impl SimCell {
    /// A rough relative cost, to start the slowest cells first.
    fn cost(&self) -> u32 {
        match self.quantity {
            SimQuantity::GeCombinedMbps => 10,
            _ => 1,
        }
    }
}

fn conflict(m: String) -> ConfigError {
    ConfigError::Conflict(m)
}

/// The catalog's `value` of `section.key`, as TOML text to paste into a template.
pub fn catalog_value(catalog: &toml::Table, path: &str) -> Option<String> {
    let (section, key) = path.split_once('.')?;
    let v = catalog
        .get(section)?
        .as_table()?
        .get(key)?
        .as_table()?
        .get("value")?;
    Some(match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    })
}

/// Replaces every `${section.key}` in `template` with its catalog value.
pub fn render(template: &str, catalog: &toml::Table) -> Result<String> {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(i) = rest.find("${") {
        out.push_str(&rest[..i]);
        let end = rest[i..]
            .find('}')
            .ok_or_else(|| conflict("unterminated ${ in a validation template".into()))?;
        let key = &rest[i + 2..i + end];
        let value = catalog_value(catalog, key)
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no value for {key}")))?;
        out.push_str(&value);
        rest = &rest[i + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// The scenario text of one cell: its topology plus one DMA workload per `run` entry.
fn scenario_text(cell: &SimCell, catalog: &toml::Table) -> Result<String> {
    let template = TOPOLOGIES
        .iter()
        .find(|(n, _)| *n == cell.topology)
        .map(|(_, t)| *t)
        .ok_or_else(|| {
            conflict(format!(
                "cell {}: no topology {:?}",
                cell.reference, cell.topology
            ))
        })?;
    let mut template = template.to_string();
    for (alias, section) in &cell.devices {
        template = template.replace(&format!("${{{alias}."), &format!("${{{section}."));
    }
    let mut text = render(&template, catalog)?;
    let (size, outstanding) = match cell.quantity {
        // The document's latency: one 64 B read at a time.
        SimQuantity::LatencyNs
        | SimQuantity::CutThroughReductionLow
        | SimQuantity::CutThroughReductionHigh => ("64B".to_string(), "1".to_string()),
        _ => (
            catalog_value(catalog, "exerciser.transfer_size").unwrap_or_default(),
            catalog_value(catalog, "exerciser.outstanding").unwrap_or_default(),
        ),
    };
    for r in &cell.run {
        let e = &r.endpoint;
        if let SimQuantity::GraphicsScore = cell.quantity {
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
            (None, Some(p)) => {
                text.push_str(&format!(
                    "\n[[workload]]\nname = \"{e}\"\nkind = \"storage\"\nendpoint = \"{e}\"\n\
                     read_percent = {p}\noutstanding = {}\n",
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
            _ => {
                return Err(conflict(format!(
                    "cell {}: each run needs either direction (DMA) or read_percent (storage)",
                    cell.reference
                )))
            }
        }
    }
    Ok(text)
}

/// A catalog value parsed by `parse`, with a message naming the key.
fn catalog_parsed<T>(
    catalog: &toml::Table,
    key: &str,
    parse: impl FnOnce(&str) -> Result<T>,
) -> Result<T> {
    let v = catalog_value(catalog, key)
        .ok_or_else(|| conflict(format!("validation/catalog.toml has no {key}")))?;
    parse(&v)
}

/// A host's network stack from its catalog section.
fn netperf_host(catalog: &toml::Table, section: &str) -> Result<crate::netperf::Host> {
    use crate::units;
    let key = |k: &str| format!("{section}.{k}");
    let host = crate::netperf::Host {
        packet_cost: catalog_parsed(catalog, &key("packet_cost"), |v| {
            Ok(units::parse_duration("packet_cost", v)?.as_secs_f64())
        })?,
        copy_rate: catalog_parsed(catalog, &key("copy_rate"), |v| {
            units::parse_bandwidth("copy_rate", v)
        })?,
        cores: catalog_parsed(catalog, &key("cores"), |v| {
            v.parse()
                .map_err(|_| conflict(format!("{section}.cores is not a count")))
        })?,
        dma_engine: catalog_parsed(catalog, &key("dma_engine"), |v| Ok(v == "true"))?,
    };
    host.check(section)?;
    Ok(host)
}

/// The payload rate (bytes/s) of `transfer`-byte writes of `line`-byte TLPs from one root
/// complex of the cell's topology to another, simulated; with `doorbells`, the writer rings
/// the receiving bridge's doorbell as the catalog's virtual Ethernet driver does.
fn pcie_path_rate(
    cell: &SimCell,
    catalog: &toml::Table,
    from: &str,
    to: &str,
    transfer: u64,
    line: u64,
    doorbells: bool,
) -> Result<f64> {
    let doorbell = if doorbells {
        let every = catalog_parsed(catalog, "system_interconnect.doorbell_every", |v| {
            v.parse::<u32>().map_err(|_| {
                conflict("system_interconnect.doorbell_every is not a frame count".into())
            })
        })?;
        format!("doorbell_every = {every}\n")
    } else {
        String::new()
    };
    let mut text = scenario_text(cell, catalog)?;
    text.push_str(&format!(
        "\n[[workload]]\nname = \"stream\"\nkind = \"dma\"\nendpoint = \"{from}\"\n\
         target = \"{to}\"\ndirection = \"write\"\ntransfer_size = \"{transfer}B\"\n\
         outstanding = 4\ntlp_payload = \"{line}B\"\n{doorbell}"
    ));
    let origin = format!("validation/{} for {}", cell.topology, cell.reference);
    let system = load_str(&text, &origin).map_err(|e| conflict(e.to_string()))?;
    Ok(run_audited(&system, &origin)?.flows[0].throughput_gbps * 1e9 / 8.0)
}

/// Runs a cell's system; a failed self-audit is an error naming the cell.
fn run_audited(system: &crate::fabric::System, origin: &str) -> Result<sim::result::RunResult> {
    let result = sim::run(system).map_err(|e| conflict(format!("{origin}: {e}")))?;
    check_audit(&result, origin)?;
    Ok(result)
}

fn check_audit(run: &sim::result::RunResult, origin: &str) -> Result<()> {
    if run.audit.passed {
        Ok(())
    } else {
        Err(conflict(format!(
            "{origin}: the simulator's audit failed: {:?}",
            run.audit
        )))
    }
}

/// One netperf stream's user data rate, Gb/s.
fn netperf_gbps(cell: &SimCell, catalog: &toml::Table, spec: &NetperfSpec) -> Result<f64> {
    use crate::netperf::{pcie_frame_bytes, tcp_stream, Interface};
    let need = |v: &Option<String>, what: &str| {
        v.clone()
            .ok_or_else(|| conflict(format!("cell {}: netperf needs {what}", cell.reference)))
    };
    let (header, line) = virtual_ethernet(catalog)?;
    let from = spec.from.clone().unwrap_or_else(|| "ep1".into());
    let to = spec.to.clone().unwrap_or_else(|| "ep2".into());
    if spec.interface == "max_effective" {
        // Plain line-sized writes, no headers: the most the path carries.
        return Ok(pcie_path_rate(cell, catalog, &from, &to, 64 * line, line, false)? * 8.0 / 1e9);
    }
    let message = spec
        .message
        .ok_or_else(|| conflict(format!("cell {}: netperf needs message", cell.reference)))?;
    let tx = netperf_host(catalog, &need(&spec.sender, "sender")?)?;
    let rx = match &spec.receiver {
        Some(r) => netperf_host(catalog, r)?,
        None => tx,
    };
    let interface = match spec.interface.as_str() {
        "loopback" => Interface::Loopback,
        "wire" => Interface::Wire,
        "ethernet" => {
            let nic = need(&spec.nic, "nic")?;
            Interface::Ethernet {
                mss: catalog_parsed(catalog, &format!("{nic}.mss"), |v| {
                    v.parse()
                        .map_err(|_| conflict(format!("{nic}.mss is not a byte count")))
                })?,
                line_rate: catalog_parsed(catalog, &format!("{nic}.line_rate"), |v| {
                    crate::units::parse_bandwidth("line_rate", v).map(|b| b * 8.0)
                })?,
            }
        }
        "pcie" => {
            let frame = pcie_frame_bytes(message, header, line as u32);
            Interface::Pcie {
                header,
                line: line as u32,
                path_rate: pcie_path_rate(cell, catalog, &from, &to, frame, line, true)?,
            }
        }
        other => {
            return Err(conflict(format!(
                "cell {}: netperf interface {other:?}; allowed: loopback, wire, ethernet, pcie, \
                 max_effective",
                cell.reference
            )))
        }
    };
    Ok(tcp_stream(&tx, &rx, interface, message).gbps)
}

/// The IXP1240 router of the catalog (section `ixp1240`) with `inputs` Ethernet inputs.
pub(crate) fn router_spec(catalog: &toml::Table, inputs: u32) -> Result<crate::np::RouterSpec> {
    use crate::np::{RouterSpec, StageCycles, StageThreads};
    let num = |k: &str| -> Result<f64> {
        catalog_parsed(catalog, &format!("ixp1240.{k}"), |v| {
            v.parse::<f64>()
                .map_err(|_| conflict(format!("ixp1240.{k} is not a number: {v}")))
        })
    };
    let count = |k: &str| -> Result<u32> { Ok(num(k)? as u32) };
    let secs = |k: &str| -> Result<f64> {
        catalog_parsed(catalog, &format!("ixp1240.{k}"), |v| {
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

fn compute_router(cell: &SimCell, catalog: &toml::Table) -> Result<f64> {
    let inputs = cell
        .router
        .as_ref()
        .ok_or_else(|| conflict(format!("cell {}: needs a router table", cell.reference)))?
        .inputs;
    let r = crate::np::run(&router_spec(catalog, inputs)?);
    let d = r.drops;
    let atm_dropped = (d.atm_rx_fifo + d.ip_router_queue + d.eth_tx_queue).max(1) as f64;
    let ports = r.eth_tx_fps.iter().copied();
    Ok(match cell.quantity {
        SimQuantity::AtmTxPercent => r.atm_tx_percent,
        SimQuantity::EthTxKfpsLow => ports.fold(f64::INFINITY, f64::min) / 1e3,
        SimQuantity::EthTxKfpsHigh => ports.fold(0.0, f64::max) / 1e3,
        SimQuantity::DropShareEthTxQueue => d.eth_tx_queue as f64 / atm_dropped,
        SimQuantity::DropShareIpRouter => d.ip_router_queue as f64 / atm_dropped,
        _ => unreachable!("router quantities only"),
    })
}

fn compute(cell: &SimCell, catalog: &toml::Table) -> Result<f64> {
    compute_limited(cell, catalog).map(|(value, _)| value)
}

/// What limited a run's flows: each distinct bottleneck as "kind resource (busy %)", joined
/// by "; " (None for a run without flows).
fn limit_of(result: &sim::result::RunResult) -> Option<String> {
    let mut seen: Vec<String> = Vec::new();
    for f in &result.flows {
        let b = &f.bottleneck;
        let text = if b.resource.is_empty() {
            b.kind.replace('_', " ")
        } else {
            format!(
                "{} {} ({:.0} %)",
                b.kind.replace('_', " "),
                b.resource,
                b.busy * 100.0
            )
        };
        if !seen.contains(&text) {
            seen.push(text);
        }
    }
    (!seen.is_empty()).then(|| seen.join("; "))
}

/// A simulated value and what limited the simulation behind it (throughput cells).
type Computed = (f64, Option<String>);

/// A cell's simulated value and, for throughput cells, what limited the simulation.
fn compute_limited(cell: &SimCell, catalog: &toml::Table) -> Result<Computed> {
    if matches!(
        cell.quantity,
        SimQuantity::AtmTxPercent
            | SimQuantity::EthTxKfpsLow
            | SimQuantity::EthTxKfpsHigh
            | SimQuantity::DropShareEthTxQueue
            | SimQuantity::DropShareIpRouter
    ) {
        return Ok((compute_router(cell, catalog)?, None));
    }
    if let SimQuantity::Netperf = cell.quantity {
        let spec = cell
            .netperf
            .as_ref()
            .ok_or_else(|| conflict(format!("cell {}: needs a netperf table", cell.reference)))?;
        let value = netperf_gbps(cell, catalog, spec)?;
        return match &cell.over {
            Some(over) => Ok((value / netperf_gbps(cell, catalog, over)?, None)),
            None => Ok((value, None)),
        };
    }
    if let SimQuantity::CutThroughReductionLow | SimQuantity::CutThroughReductionHigh =
        cell.quantity
    {
        let reductions = cut_through_latencies(cell, catalog)?
            .into_iter()
            .map(|(_, ct, saf)| 1.0 - ct / saf);
        let value = match cell.quantity {
            SimQuantity::CutThroughReductionLow => reductions.fold(f64::INFINITY, f64::min),
            _ => reductions.fold(f64::NEG_INFINITY, f64::max),
        };
        return Ok((value, None));
    }
    let text = scenario_text(cell, catalog)?;
    let origin = format!("validation/{} for {}", cell.topology, cell.reference);
    let system = load_str(&text, &origin).map_err(|e| conflict(e.to_string()))?;
    if let SimQuantity::GeCombinedMbps = cell.quantity {
        let r = sim::rfc2544(&system, RFC2544_RESOLUTION)
            .map_err(|e| conflict(format!("{origin}: {e}")))?;
        if let Some(run) = &r.run {
            check_audit(run, &origin)?;
        }
        // What stops it going faster: the line rate, or what saturates at full load.
        let limit = if r.load >= 1.0 {
            Some("line rate (zero loss at full load)".to_string())
        } else {
            r.full_load.as_ref().and_then(limit_of)
        };
        return Ok((r.combined_mbps, limit));
    }
    let result = run_audited(&system, &origin)?;
    let limit = match cell.quantity {
        SimQuantity::ThroughputGbytes | SimQuantity::ThroughputMbytes => limit_of(&result),
        _ => None,
    };
    // DMA and storage flows; an Ethernet bridging workload beside them is background.
    let bridging = |name: &str| result.ethernet.iter().any(|e| e.name == name);
    let dma_gbps: f64 = result
        .flows
        .iter()
        .filter(|f| !bridging(&f.name))
        .map(|f| f.throughput_gbps)
        .sum();
    let value = match cell.quantity {
        SimQuantity::ThroughputGbytes => dma_gbps / 8.0,
        SimQuantity::ThroughputMbytes => dma_gbps / 8.0 * 1000.0,
        SimQuantity::LatencyNs => mean_latency(&result, &origin)?,
        SimQuantity::GeCombinedMbps
        | SimQuantity::Netperf
        | SimQuantity::AtmTxPercent
        | SimQuantity::EthTxKfpsLow
        | SimQuantity::EthTxKfpsHigh
        | SimQuantity::DropShareEthTxQueue
        | SimQuantity::DropShareIpRouter
        | SimQuantity::CutThroughReductionLow
        | SimQuantity::CutThroughReductionHigh => unreachable!("handled above"),
        SimQuantity::GraphicsScore => {
            let value = |key: &str| {
                catalog_value(catalog, key)
                    .ok_or_else(|| conflict(format!("validation/catalog.toml has no {key}")))
            };
            let bytes = crate::units::parse_bytes("gpu_frame.bytes", &value("gpu_frame.bytes")?)?;
            let render = crate::units::parse_duration(
                "gpu_frame.render_time",
                &value("gpu_frame.render_time")?,
            )?;
            let ppf: f64 = value("gpu_frame.points_per_fps")?
                .parse()
                .map_err(|_| conflict("gpu_frame.points_per_fps is not a number".into()))?;
            // Both cards receive their bytes at once; the frame waits for the slower.
            let slowest = result
                .flows
                .iter()
                .map(|f| f.throughput_gbps)
                .fold(f64::INFINITY, f64::min);
            let pcie_s = bytes as f64 * 8.0 / (slowest * 1e9);
            ppf / (render.as_secs_f64() + pcie_s)
        }
    };
    Ok((value, limit))
}

/// The first flow's mean latency in ns; an error naming the scenario if no request of it
/// completed in the measured window.
fn mean_latency(result: &sim::result::RunResult, origin: &str) -> Result<f64> {
    result.flows[0].latency_ns.mean.ok_or_else(|| {
        conflict(format!(
            "{origin}: no request of flow {} completed in the measured window; lengthen the duration",
            result.flows[0].name
        ))
    })
}

/// For each `run` endpoint of the cell alone: (endpoint, DMA read latency in ns with the
/// topology's switches cut-through as built, with the same switches store-and-forward).
fn cut_through_latencies(cell: &SimCell, catalog: &toml::Table) -> Result<Vec<(String, f64, f64)>> {
    let origin = format!("validation/{} for {}", cell.topology, cell.reference);
    let latency = |text: &str| -> Result<f64> {
        let system = load_str(text, &origin).map_err(|e| conflict(e.to_string()))?;
        mean_latency(&run_audited(&system, &origin)?, &origin)
    };
    let mut out = Vec::new();
    for r in &cell.run {
        let one = SimCell {
            run: vec![r.clone()],
            ..cell.clone()
        };
        let text = scenario_text(&one, catalog)?;
        let saf_text = text.replace(
            "forwarding = \"cut-through\"",
            "forwarding = \"store-and-forward\"",
        );
        if saf_text == text {
            return Err(conflict(format!(
                "cell {}: topology {} has no cut-through switch",
                cell.reference, cell.topology
            )));
        }
        out.push((r.endpoint.clone(), latency(&text)?, latency(&saf_text)?));
    }
    Ok(out)
}

/// A cut-through reduction cell's per-endpoint latencies: (endpoint, cut-through ns,
/// store-and-forward ns).
pub fn cell_cut_through_latencies(reference: &str) -> Result<Vec<(String, f64, f64)>> {
    let (file, catalog) = load()?;
    cut_through_latencies(find(&file, reference)?, &catalog)
}

/// The System Interconnect's virtual Ethernet framing: (header bytes per frame, bytes per
/// write TLP).
fn virtual_ethernet(catalog: &toml::Table) -> Result<(u32, u64)> {
    let header = catalog_parsed(catalog, "system_interconnect.header", |v| {
        v.parse::<u32>()
            .map_err(|_| conflict("system_interconnect.header is not a byte count".into()))
    })?;
    let line = catalog_parsed(catalog, "system_interconnect.line", |v| {
        crate::units::parse_bytes("system_interconnect.line", v)
    })?;
    Ok((header, line))
}

/// The catalog's virtual Ethernet framing: (header bytes per frame, bytes per write TLP).
pub fn catalog_virtual_ethernet() -> Result<(u32, u32)> {
    let (_, catalog) = load()?;
    virtual_ethernet(&catalog).map(|(h, l)| (h, l as u32))
}

/// A host network stack from the device catalog (`xeon_e5310`, `athlon64_3500`).
pub fn catalog_host(section: &str) -> Result<crate::netperf::Host> {
    let (_, catalog) = load()?;
    netperf_host(&catalog, section)
}

/// The simulated cells and the device catalog, parsed.
fn load() -> Result<(SimFile, toml::Table)> {
    let file: SimFile = toml::from_str(SIMULATED_TOML)
        .map_err(|e| conflict(format!("validation/simulated.toml: {e}")))?;
    let catalog: toml::Table = CATALOG_TOML
        .parse()
        .map_err(|e| conflict(format!("validation/catalog.toml: {e}")))?;
    Ok((file, catalog))
}

/// (system, table, row) per simulated cell; the row only for cells of `only` (all if None),
/// so unselected systems cost no simulation. Cells run in parallel on every core;
/// `progress(done, total)` is called as each finishes.
pub fn rows(
    root: &toml::Table,
    only: Option<&str>,
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Result<Vec<(String, String, Option<ValidationRow>)>> {
    let (file, catalog) = load()?;
    let system_of = |c: &SimCell| {
        c.reference
            .split('.')
            .next()
            .unwrap_or_default()
            .to_string()
    };
    let selected: Vec<usize> = (0..file.cell.len())
        .filter(|&i| only.is_none_or(|s| s == system_of(&file.cell[i])))
        .collect();
    let mut values = compute_all(&file, &catalog, &selected, progress);
    let mut out = Vec::new();
    for (i, cell) in file.cell.iter().enumerate() {
        let mut parts = cell.reference.split('.');
        let system = parts.next().unwrap_or_default().to_string();
        let table = parts.next().unwrap_or_default().to_string();
        let row = match selected.binary_search(&i) {
            Ok(k) => {
                let key = CellKey {
                    reference: &cell.reference,
                    series: cell.series.as_deref(),
                    column: cell.column.as_deref(),
                    unit: cell.unit.as_deref(),
                    role: cell.role,
                };
                let (value, limit) = match std::mem::replace(&mut values[k], Ok((0.0, None))) {
                    Ok((v, l)) => (Ok(v), l),
                    Err(e) => (Err(e), None),
                };
                let mut row = row_for(root, &key, move || value)?;
                row.limit = limit;
                Some(row)
            }
            Err(_) => None,
        };
        out.push((system, table, row));
    }
    Ok(out)
}

/// Computes the `selected` cells on every available core (each cell is deterministic, so
/// the order of work does not change any value). When `progress` returns false no further
/// cell starts, and the cells left out come back as errors saying so.
fn compute_all(
    file: &SimFile,
    catalog: &toml::Table,
    selected: &[usize],
    progress: &(dyn Fn(usize, usize) -> bool + Sync),
) -> Vec<Result<Computed>> {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    use std::sync::Mutex;
    let total = selected.len();
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(total.max(1));
    // Slowest cells first so that the threads finish together.
    let mut order: Vec<usize> = (0..total).collect();
    order.sort_by_key(|&k| std::cmp::Reverse(file.cell[selected[k]].cost()));
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
                let value = compute_limited(&file.cell[selected[k]], catalog);
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
                Err(conflict(format!(
                    "validation stopped after {finished} of {total} simulated cells"
                )))
            })
        })
        .collect()
}

/// The scenario text a cell runs (for inspection and for `tlpsim run`).
pub fn cell_scenario(reference: &str) -> Result<String> {
    cell_scenario_with(reference, &[])
}

/// A cell's simulated value with some catalog values replaced (`section.key`, TOML value
/// text): the calibration tool's probe.
pub fn cell_value_with(reference: &str, overrides: &[(&str, &str)]) -> Result<f64> {
    let (file, catalog) = load_with(overrides)?;
    let cell = find(&file, reference)?;
    compute(cell, &catalog)
}

fn find<'f>(file: &'f SimFile, reference: &str) -> Result<&'f SimCell> {
    file.cell
        .iter()
        .find(|c| c.reference == reference)
        .ok_or_else(|| conflict(format!("no simulated cell {reference}")))
}

fn load_with(overrides: &[(&str, &str)]) -> Result<(SimFile, toml::Table)> {
    let (file, mut catalog) = load()?;
    for (path, value) in overrides {
        let entry = path
            .split_once('.')
            .and_then(|(s, k)| {
                catalog
                    .get_mut(s)?
                    .as_table_mut()?
                    .get_mut(k)?
                    .as_table_mut()
            })
            .ok_or_else(|| conflict(format!("validation/catalog.toml has no {path}")))?;
        let v: toml::Value = format!("v = {value}")
            .parse::<toml::Table>()
            .ok()
            .and_then(|mut t| t.remove("v"))
            .unwrap_or_else(|| toml::Value::String(value.to_string()));
        entry.insert("value".into(), v);
    }
    Ok((file, catalog))
}

/// The scenario text of a cell with some catalog values replaced.
pub fn cell_scenario_with(reference: &str, overrides: &[(&str, &str)]) -> Result<String> {
    let (file, catalog) = load_with(overrides)?;
    scenario_text(find(&file, reference)?, &catalog)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytic::{DllpPolicy, LinkRequest};

    fn ntb_cell(file: &SimFile) -> &SimCell {
        find(file, "ntb.netperf.pcie_intel_to_intel_approx[0]").unwrap()
    }

    /// Figure 9 of the NTB note: the System Interconnect's 90 bytes of headers per message,
    /// sent in whole 64-byte TLPs, computed in closed form and by simulating the path.
    #[test]
    fn figure9_reductions_agree_in_closed_form_and_simulation() {
        let (file, catalog) = load().unwrap();
        let cell = ntb_cell(&file);
        let max = pcie_path_rate(cell, &catalog, "ep1", "ep2", 64 * 64, 64, false).unwrap();
        let link = LinkRequest {
            gen: 1,
            width: 4,
            payload: Some(64),
            addressing: 32,
            dllp: DllpPolicy::None,
            skp: false,
            ..LinkRequest::default()
        }
        .check()
        .unwrap();
        for m in [16384u32, 8192, 4096, 512] {
            let closed = link.message(m as i64, 90).unwrap().reduction;
            let frame = crate::netperf::pcie_frame_bytes(m, 36, 64);
            let rate = pcie_path_rate(cell, &catalog, "ep1", "ep2", frame, 64, false).unwrap();
            let simulated = 1.0 - (m as f64 / frame as f64) * rate / max;
            assert!(
                (simulated - closed).abs() < 0.002,
                "{m} B: simulated {simulated:.4}, closed form {closed:.4}"
            );
        }
    }

    /// The orderings the NTB note reports: Intel receivers above the AMD one at every size,
    /// and the PCIe interconnect above the 10GE figures (below 2 and 1.55 Gb/s) at 1K and 512.
    #[test]
    fn ntb_netperf_orderings_hold() {
        let (file, catalog) = load().unwrap();
        for i in 0..6 {
            let intel = compute(
                find(
                    &file,
                    &format!("ntb.netperf.pcie_intel_to_intel_approx[{i}]"),
                )
                .unwrap(),
                &catalog,
            )
            .unwrap();
            let amd = compute(
                find(&file, &format!("ntb.netperf.pcie_to_amd_approx[{i}]")).unwrap(),
                &catalog,
            )
            .unwrap();
            assert!(
                intel > amd,
                "size index {i}: Intel {intel:.2} <= AMD {amd:.2}"
            );
            if i >= 4 {
                let ten_ge =
                    super::super::published(&format!("ntb.netperf.ten_ge_approx[{i}]")).unwrap();
                assert!(
                    intel > ten_ge,
                    "size index {i}: PCIe {intel:.2} <= 10GE {ten_ge:.2}"
                );
            }
        }
    }
}
