//! From a parsed [`ScenarioFile`] to a checked [`System`]: counted endpoints copied, the run
//! settings, then the nodes, the links, the tree, and last the workloads, which resolve
//! against all of them.

use super::endpoint;
use super::error::{at, BuildError, Place};
use super::expand;
use super::file::{PcieSection, ScenarioFile, SimulationSection};
use super::links::{self, LinkDefaults};
use super::nodes::{self, NodeTable};
use super::ntb::{self, WindowMap};
use super::sockets;
use super::tags;
use super::values;
use super::workload::{self, Fabric, WorkloadKind};
use crate::engine::SimTime;
use crate::fabric::{PcieSettings, System};
use crate::pcie::tlp::{self, Addressing};

/// Checks a parsed file and resolves its names.
pub fn build(f: &ScenarioFile) -> Result<System, BuildError> {
    // Counted endpoints first: every later step sees their copies as if written out.
    let f = &*expand::expand(f)?;
    let sim = f.simulation.clone().unwrap_or_default();
    let (duration, warmup) = run_length(&sim)?;
    let p = f.pcie.clone().unwrap_or_default();
    let pcie = pcie_settings(&p)?;
    let link_defaults = LinkDefaults::new(&p)?;

    // Host bridges first: root complexes name them.
    let host_bridges = nodes::host_bridges(&f.host_bridge)?;
    let mut nodes = NodeTable::default();
    nodes::root_complexes(&f.root_complex, &host_bridges, &mut nodes)?;
    let weights = nodes::switches(&f.switch, &mut nodes)?;
    ntb::ntbs(&f.ntb, &mut nodes)?;
    let open_tags = endpoint::endpoints(&f.endpoint, &mut nodes)?;
    check_data_credits(&nodes, pcie.mps)?;

    let topology = links::links(&f.link, &nodes, &pcie, &link_defaults)?;
    links::check_tree(nodes.nodes(), &topology)?;
    tags::default_tags(&open_tags, &mut nodes, &topology);
    nodes::resolve_weights(weights, &mut nodes, &topology)?;

    let socket_links = sockets::socket_links(&f.socket_link, &nodes, &topology)?;
    let windows = WindowMap::new(nodes.nodes(), &topology)?;
    let fabric = Fabric {
        nodes: &nodes,
        topology: &topology,
        socket_links: &socket_links,
        windows: &windows,
        pcie: &pcie,
        has_cpu: f.cpu.is_some(),
    };
    let workloads = workload::workloads(&f.workload, &fabric)?;
    let cpu = match &f.cpu {
        Some(c) => Some(nodes::cpu(c, &nodes)?),
        None => None,
    };
    if f.root_complex.is_empty() {
        return Err(BuildError::Fabric(
            "the scenario has no [[root_complex]]: a fabric needs at least one, with its \
             [[link]]s and a [[workload]] (examples in scenarios/, the format from \
             `tlpsim schema`)"
                .into(),
        ));
    }
    if workloads.is_empty() && !f.workload.is_empty() {
        return Err(BuildError::Fabric(format!(
            "every [[workload]] has enabled = false ({}): nothing would move; enable one \
             (enabled = true, or --set workload.NAME.enabled=true)",
            f.workload
                .iter()
                .map(|w| w.name())
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    if workloads.is_empty() {
        let kinds: Vec<String> = WorkloadKind::WORDS
            .iter()
            .map(|(w, _)| format!("{w:?}"))
            .collect();
        let (last, rest) = kinds.split_last().expect("there are workload kinds");
        return Err(BuildError::Fabric(format!(
            "the scenario has no [[workload]]: nothing would move; add one (kind = {} or {last}, \
             or a root complex's write with endpoint = \"<root complex>\")",
            rest.join(", ")
        )));
    }
    Ok(System {
        engine: match sim.engine {
            super::file::EngineWord::Des => crate::fabric::Engine::Des,
            super::file::EngineWord::Fluid => crate::fabric::Engine::Fluid,
        },
        duration,
        warmup,
        seed: sim.seed,
        pcie,
        nodes: nodes.into_nodes(),
        links: topology.links,
        host_bridges,
        socket_links,
        workloads,
        cpu,
    })
}

/// `[simulation]`'s duration and warmup (a tenth of the duration when left out).
fn run_length(sim: &SimulationSection) -> Result<(SimTime, SimTime), BuildError> {
    let place = Place::table("simulation");
    let duration = values::duration(&place, "duration", &sim.duration)?;
    if duration == SimTime::ZERO {
        return Err(BuildError::conflict(
            &place,
            "duration must be greater than 0",
        ));
    }
    let warmup = match &sim.warmup {
        Some(w) => values::duration(&place, "warmup", w)?,
        None => SimTime::from_ticks(duration.ticks() / 10),
    };
    if warmup >= duration {
        return Err(BuildError::conflict(
            &place,
            format!("warmup ({warmup}) must be shorter than duration ({duration})"),
        ));
    }
    Ok((duration, warmup))
}

/// `[pcie]`'s transaction-layer settings.
fn pcie_settings(p: &PcieSection) -> Result<PcieSettings, BuildError> {
    let place = Place::table("pcie");
    Ok(PcieSettings {
        mps: tlp::check_size("mps", p.mps).map_err(at(&place))?,
        mrrs: tlp::check_size("mrrs", p.mrrs).map_err(at(&place))?,
        rcb: tlp::check_rcb(p.rcb).map_err(at(&place))?,
        addressing: Addressing::from_bits(p.addressing).map_err(at(&place))?,
        ecrc: p.ecrc,
    })
}

/// Refuses posted or completion data credits that cannot hold one MPS-sized TLP: the spec's
/// minimum initial advertisement of PD and CplD is Max_Payload_Size / 16 (PCIe Base
/// Specification, "Minimum Initial Flow Control Advertisements"), and below it such a TLP
/// never fits, so the run could only deadlock.
fn check_data_credits(nodes: &NodeTable, mps: u32) -> Result<(), BuildError> {
    let need = mps / 16;
    let mut seen = [0usize; 4];
    for node in nodes.nodes() {
        let (section, k) = node.kind.section();
        let place = Place::element(section, seen[k], &node.name);
        seen[k] += 1;
        for (key, i) in [("credits.pd", 1), ("credits.cpld", 5)] {
            if let Some(n) = node.credits.0[i].filter(|&n| n < need) {
                return Err(BuildError::not_allowed(
                    &place,
                    key,
                    n.to_string(),
                    format!(
                        "at least {need} (one MPS-sized TLP: MPS {mps} B in 16 B credits), or \
                         \"infinite\""
                    ),
                ));
            }
        }
    }
    Ok(())
}
