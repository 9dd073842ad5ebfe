//! Where a flow may go: the memory that holds its host buffer, the target its source may
//! move data to or from, and the path between them across domains and root complexes.

use super::error::{BuildError, Place};
use super::workload::Fabric;
use crate::fabric::{DmaDirection, NodeId, NodeKind, TargetKind, SCRATCHPAD_BYTES};

/// A workload's `memory`: the root complex whose memory holds its host buffer, checked to be
/// one and given without `others` (the keys naming a target instead).
pub(super) fn memory(
    place: &Place,
    memory: &Option<String>,
    others: [&Option<String>; 2],
    fabric: &Fabric,
) -> Result<Option<String>, BuildError> {
    let Some(name) = memory else {
        return Ok(None);
    };
    if others.iter().any(|o| o.is_some()) {
        return Err(BuildError::conflict(
            place,
            "give memory (the root complex holding the host buffer) or a target, not both",
        ));
    }
    let n = fabric.nodes.lookup(place, "memory", name)?;
    let kind = &fabric.node(n).kind;
    if !matches!(kind, NodeKind::RootComplex { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "memory = {name:?} is {}; memory names the root complex (socket) whose memory                  holds the host buffer",
                kind.noun()
            ),
        ));
    }
    Ok(Some(name.clone()))
}

/// Checks that `source` may move data to or from `target` this way: what each node is to
/// a workload is a property of its kind (`NodeKind::issues_requests`, `as_target`).
pub(super) fn check_pair(
    place: &Place,
    endpoint: &str,
    source: NodeId,
    target: NodeId,
    direction: DmaDirection,
    transfer_size: u64,
    fabric: &Fabric,
) -> Result<(), BuildError> {
    let source_kind = &fabric.node(source).kind;
    let target_name = &fabric.node(target).name;
    let from_root = matches!(source_kind, NodeKind::RootComplex { .. });
    let write = direction == DmaDirection::Write;
    let problem = match fabric.node(target).kind.as_target() {
        TargetKind::NicRegisters => Some(format!(
            "the target {target_name:?} is a NIC, whose registers take the [cpu]'s writes \
             only: write into a kind = \"dma\" endpoint or a root complex"
        )),
        _ if !source_kind.issues_requests() => Some(format!(
            "{endpoint:?} is {}, which issues no requests; a workload runs on an endpoint or \
             a root complex",
            source_kind.noun()
        )),
        TargetKind::HostMemory if !from_root || (write && source != target) => None,
        TargetKind::Scratchpad => {
            // The bridge's scratchpad registers: whole DWs, a few at a time.
            if transfer_size % 4 != 0 || !(4..=SCRATCHPAD_BYTES).contains(&transfer_size) {
                return Err(BuildError::not_allowed(
                    place,
                    "transfer_size",
                    format!("{transfer_size} B"),
                    format!(
                        "a multiple of 4 B up to {SCRATCHPAD_BYTES} B: the target \
                         {target_name:?} is a non-transparent bridge, whose scratchpad \
                         registers are read and written in DWs"
                    ),
                ));
            }
            None
        }
        TargetKind::WriteSink if from_root && !write => Some(format!(
            "the target {target_name:?} is {}, which takes a root complex's writes only \
             (direction = \"write\"); a root complex reads a kind = \"memory\" endpoint",
            fabric.node(target).kind.noun()
        )),
        TargetKind::BarMemory { bytes } if transfer_size > bytes => {
            return Err(BuildError::not_allowed(
                place,
                "transfer_size",
                format!("{transfer_size} B"),
                format!(
                    "at most the {bytes} B BAR of the memory endpoint {target_name:?}: a \
                     transfer stays inside the BAR"
                ),
            ));
        }
        TargetKind::WriteSink if from_root => None,
        // Peer-to-peer when the source is an endpoint.
        TargetKind::BarMemory { .. } => None,
        TargetKind::HostMemory | TargetKind::WriteSink | TargetKind::Nothing => Some(format!(
            "the target {target_name:?} must be a root complex (or, for a root complex's \
             writes, an endpoint or another domain's root complex; for its reads and writes, \
             a memory endpoint)"
        )),
    };
    if let Some(p) = problem {
        return Err(BuildError::conflict(place, p));
    }
    // Reads bring completions back from the target, on their own path.
    check_path(
        place,
        fabric,
        source,
        target,
        direction != DmaDirection::Write,
    )
}

/// Refuses a path from `source` to `target` across two domains, or one that crosses a root
/// complex with `p2p = "refuse"` (one not at either end: peer-to-peer); with `returns`, the
/// path of the TLPs the target sends back (completions) too, which ACS redirect at the
/// target's port can send up through a root complex that the requests never cross.
pub(super) fn check_path(
    place: &Place,
    fabric: &Fabric,
    source: NodeId,
    target: NodeId,
    returns: bool,
) -> Result<(), BuildError> {
    let target_name = &fabric.node(target).name;
    let (top_s, top_t) = (
        fabric.topology.root_above(source),
        fabric.topology.root_above(target),
    );
    let joined = fabric
        .socket_links
        .iter()
        .any(|l| (l.a, l.b) == (top_s, top_t) || (l.a, l.b) == (top_t, top_s));
    if top_s != top_t && !joined {
        let names = fabric.nodes.nodes();
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} and {target_name:?} are under different root complexes ({:?} and {:?}) \
                 with no [[socket_link]] between them; add one (between = [{:?}, {:?}])",
                fabric.node(source).name,
                names[top_s].name,
                names[top_t].name,
                names[top_s].name,
                names[top_t].name
            ),
        ));
    }
    if top_s != top_t && matches!(fabric.node(source).kind, NodeKind::RootComplex { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "a root complex's own requests stay on its socket; {target_name:?} is under \
                 another root complex: run the workload on {:?}'s own root complex",
                target_name
            ),
        ));
    }
    // A root complex on the way (not an end) forwards peer-to-peer, or refuses it.
    let refuses = |n: &NodeId| {
        matches!(
            fabric.node(*n).kind,
            NodeKind::RootComplex { p2p: None, .. }
        )
    };
    // Across a socket link: up to the source's root complex, across, down from the other;
    // both root complexes forward a peer-to-peer TLP, while a DMA into (or completions from)
    // a root complex's own memory cross without its peer-to-peer forwarding.
    let path = |from: NodeId, to: NodeId| {
        let (top_from, top_to) = (
            fabric.topology.root_above(from),
            fabric.topology.root_above(to),
        );
        if top_from == top_to {
            return fabric.topology.path_between(from, to);
        }
        let peer = from != top_from && to != top_to;
        let mut p = fabric.topology.path_between(from, top_from);
        if peer {
            p.extend([top_from, top_to]);
        }
        p.extend(fabric.topology.path_between(top_to, to));
        p
    };
    let there = path(source, target).into_iter().find(refuses);
    let back = returns
        .then(|| path(target, source).into_iter().find(refuses))
        .flatten();
    let source_name = &fabric.node(source).name;
    let what = match (there, back) {
        (Some(rc), _) => format!(
            "peer-to-peer from {source_name:?} to {target_name:?} crosses root complex {:?}",
            fabric.node(rc).name
        ),
        (None, Some(rc)) => format!(
            "the completions of peer-to-peer reads from {source_name:?} to {target_name:?} \
             come back through root complex {:?} (ACS redirect at {target_name:?}'s port sends \
             them up)",
            fabric.node(rc).name
        ),
        (None, None) => return Ok(()),
    };
    Err(BuildError::conflict(
        place,
        format!(
            "{what}, which has p2p = \"refuse\"; set p2p = \"forward\" there, or put both \
             under one switch without acs_redirect"
        ),
    ))
}
