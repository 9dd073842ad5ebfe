//! The netperf measure (the NTB note's Figures 4-9): TCP_STREAM user data rate between two
//! hosts of the catalog, over loopback, a wire, Ethernet, or the System Interconnect's
//! virtual Ethernet on PCIe, whose path rate is simulated on the cell's topology.

use super::super::catalog;
use super::super::cell::{Cell, NetperfSpec};
use super::super::registry::Registry;
use super::super::template::scenario_text;
use super::{build, conflict, run_audited};
use crate::error::Result;
use crate::netperf::{pcie_frame_bytes, tcp_stream, Host, Interface};
use crate::units;

/// The `netperf` stream's rate, Gb/s, or its ratio to the `over` stream.
pub(super) fn gbps_or_ratio(cell: &Cell, registry: &Registry) -> Result<f64> {
    let spec = cell.needs(&cell.netperf, "netperf")?;
    let value = stream_gbps(cell, registry, spec)?;
    match &cell.over {
        Some(over) => Ok(value / stream_gbps(cell, registry, over)?),
        None => Ok(value),
    }
}

/// A host's network stack from its catalog section.
pub(crate) fn host(catalog: &toml::Table, section: &str) -> Result<Host> {
    let key = |k: &str| format!("{section}.{k}");
    let host = Host {
        packet_cost: catalog::parsed(catalog, &key("packet_cost"), |v| {
            Ok(units::parse_duration("packet_cost", v)?.as_secs_f64())
        })?,
        copy_rate: catalog::parsed(catalog, &key("copy_rate"), |v| {
            units::parse_bandwidth("copy_rate", v)
        })?,
        cores: catalog::parsed(catalog, &key("cores"), |v| {
            v.parse()
                .map_err(|_| conflict(format!("{section}.cores is not a count")))
        })?,
        dma_engine: catalog::parsed(catalog, &key("dma_engine"), |v| Ok(v == "true"))?,
    };
    host.check(section)?;
    Ok(host)
}

/// The System Interconnect's virtual Ethernet framing: (header bytes per frame, bytes per
/// write TLP).
pub(crate) fn virtual_ethernet(catalog: &toml::Table) -> Result<(u32, u64)> {
    let header = catalog::number(catalog, "system_interconnect.header", "a byte count")?;
    let line = catalog::parsed(catalog, "system_interconnect.line", |v| {
        units::parse_bytes("system_interconnect.line", v)
    })?;
    Ok((header, line))
}

/// One netperf stream's user data rate, Gb/s.
fn stream_gbps(cell: &Cell, registry: &Registry, spec: &NetperfSpec) -> Result<f64> {
    let catalog = &registry.catalog;
    let need = |v: &Option<String>, what: &str| {
        v.clone()
            .ok_or_else(|| cell.error(format!("netperf needs {what}")))
    };
    let (header, line) = virtual_ethernet(catalog)?;
    let from = spec.from.clone().unwrap_or_else(|| "ep1".into());
    let to = spec.to.clone().unwrap_or_else(|| "ep2".into());
    let path = PciePath {
        cell,
        registry,
        from: &from,
        to: &to,
    };
    if spec.interface == "max_effective" {
        // Plain line-sized writes, no headers: the most the path carries.
        return Ok(path.rate(64 * line, line, false)? * 8.0 / 1e9);
    }
    let message = spec
        .message
        .ok_or_else(|| cell.error("netperf needs message"))?;
    let tx = host(catalog, &need(&spec.sender, "sender")?)?;
    let rx = match &spec.receiver {
        Some(r) => host(catalog, r)?,
        None => tx,
    };
    let interface = match spec.interface.as_str() {
        "loopback" => Interface::Loopback,
        "wire" => Interface::Wire,
        "ethernet" => {
            let nic = need(&spec.nic, "nic")?;
            Interface::Ethernet {
                mss: catalog::number(catalog, &format!("{nic}.mss"), "a byte count")?,
                line_rate: catalog::parsed(catalog, &format!("{nic}.line_rate"), |v| {
                    units::parse_bandwidth("line_rate", v).map(|b| b * 8.0)
                })?,
            }
        }
        "pcie" => {
            let frame = pcie_frame_bytes(message, header, line as u32);
            Interface::Pcie {
                header,
                line: line as u32,
                path_rate: path.rate(frame, line, true)?,
            }
        }
        other => {
            return Err(cell.error(format!(
                "netperf interface {other:?}; allowed: loopback, wire, ethernet, pcie, \
                 max_effective"
            )))
        }
    };
    Ok(tcp_stream(&tx, &rx, interface, message).gbps)
}

/// A write stream between two root complexes of a cell's topology.
pub(crate) struct PciePath<'a> {
    pub(crate) cell: &'a Cell,
    pub(crate) registry: &'a Registry,
    pub(crate) from: &'a str,
    pub(crate) to: &'a str,
}

impl PciePath<'_> {
    /// The payload rate (bytes/s) of `transfer`-byte writes of `line`-byte TLPs, simulated;
    /// with `doorbells`, the writer rings the receiving bridge's doorbell as the catalog's
    /// virtual Ethernet driver does.
    pub(crate) fn rate(&self, transfer: u64, line: u64, doorbells: bool) -> Result<f64> {
        let (cell, from, to) = (self.cell, self.from, self.to);
        let doorbell = if doorbells {
            let every: u32 = catalog::number(
                &self.registry.catalog,
                "system_interconnect.doorbell_every",
                "a frame count",
            )?;
            format!("doorbell_every = {every}\n")
        } else {
            String::new()
        };
        let mut text = scenario_text(cell, self.registry)?;
        text.push_str(&format!(
            "\n[[workload]]\nname = \"stream\"\nkind = \"dma\"\nendpoint = \"{from}\"\n\
             target = \"{to}\"\ndirection = \"write\"\ntransfer_size = \"{transfer}B\"\n\
             outstanding = 4\ntlp_payload = \"{line}B\"\n{doorbell}"
        ));
        let origin = cell.origin();
        let system = build(&text, &origin)?;
        Ok(
            run_audited(&system, &origin, self.registry.engine)?.flows[0].throughput_gbps * 1e9
                / 8.0,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analytic::{DllpPolicy, LinkRequest};

    fn value(registry: &Registry, reference: &str) -> f64 {
        let cell = registry.find(reference).unwrap();
        cell.quantity.compute(cell, registry).unwrap().0
    }

    /// Figure 9 of the NTB note: the System Interconnect's 90 bytes of headers per message,
    /// sent in whole 64-byte TLPs, computed in closed form and by simulating the path.
    #[test]
    fn figure9_reductions_agree_in_closed_form_and_simulation() {
        let registry = Registry::embedded().unwrap();
        let path = PciePath {
            cell: registry
                .find("ntb.netperf.pcie_intel_to_intel_approx[0]")
                .unwrap(),
            registry: &registry,
            from: "ep1",
            to: "ep2",
        };
        let max = path.rate(64 * 64, 64, false).unwrap();
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
            let frame = pcie_frame_bytes(m, 36, 64);
            let rate = path.rate(frame, 64, false).unwrap();
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
        let registry = Registry::embedded().unwrap();
        for i in 0..6 {
            let intel = value(
                &registry,
                &format!("ntb.netperf.pcie_intel_to_intel_approx[{i}]"),
            );
            let amd = value(&registry, &format!("ntb.netperf.pcie_to_amd_approx[{i}]"));
            assert!(
                intel > amd,
                "size index {i}: Intel {intel:.2} <= AMD {amd:.2}"
            );
            if i >= 4 {
                let ten_ge =
                    crate::validation::published(&format!("ntb.netperf.ten_ge_approx[{i}]"))
                        .unwrap();
                assert!(
                    intel > ten_ge,
                    "size index {i}: PCIe {intel:.2} <= 10GE {ten_ge:.2}"
                );
            }
        }
    }
}
