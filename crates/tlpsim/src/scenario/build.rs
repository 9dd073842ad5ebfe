//! From a parsed [`ScenarioFile`] to a checked [`System`]: the run settings, then the nodes,
//! the links, the tree, and last the workloads, which resolve against all of them.

use super::endpoint;
use super::error::{at, BuildError, Place};
use super::file::{PcieSection, ScenarioFile, SimulationSection};
use super::links::{self, LinkDefaults};
use super::nodes::{self, NodeTable};
use super::ntb::{self, WindowMap};
use super::tags;
use super::values;
use super::workload::{self, Fabric};
use crate::engine::SimTime;
use crate::fabric::{PcieSettings, System};
use crate::pcie::tlp::{self, Addressing};

/// Checks a parsed file and resolves its names.
pub fn build(f: &ScenarioFile) -> Result<System, BuildError> {
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

    let topology = links::links(&f.link, &nodes, &pcie, &link_defaults)?;
    links::check_tree(nodes.nodes(), &topology)?;
    tags::default_tags(&open_tags, &mut nodes, &topology);
    nodes::resolve_weights(weights, &mut nodes, &topology)?;

    let windows = WindowMap::new(nodes.nodes(), &topology)?;
    let fabric = Fabric {
        nodes: &nodes,
        topology: &topology,
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
    if workloads.is_empty() {
        return Err(BuildError::Fabric(
            "the scenario has no [[workload]]: nothing would move; add one (kind = \"dma\", \
             \"storage\", \"bridge\" or \"fio\", or a root complex's write with endpoint = \
             \"<root complex>\")"
                .into(),
        ));
    }
    Ok(System {
        duration,
        warmup,
        seed: sim.seed,
        pcie,
        nodes: nodes.into_nodes(),
        links: topology.links,
        host_bridges,
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
