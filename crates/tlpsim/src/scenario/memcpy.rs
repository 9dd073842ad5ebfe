//! A GPU's memcpy workload: its copy engines' flows, one per direction.

use super::error::{BuildError, Place};
use super::flows::{size, transfers, Transfers};
use super::paths::memory;
use super::values;
use super::workload::{CopyWord, Fabric, MemcpyWorkloadSection};
use crate::fabric::{CopyDirection, DmaDirection, NodeId, TargetKind, WorkloadKind, WorkloadSpec};

/// A GPU's memcpy workload: one flow per direction it copies, each a stream of `size`-byte
/// transfers one after another, run by the GPU's copy engines.
pub(super) fn memcpy(
    place: &Place,
    m: &MemcpyWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<Vec<WorkloadSpec>, BuildError> {
    let kind = &fabric.node(source).kind;
    if !kind.runs_memcpy() {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is {}; a memcpy workload runs on a GPU (an [[endpoint]] with kind = \"gpu\")",
                m.endpoint,
                kind.noun()
            ),
        ));
    }
    let size = size(place, "size", &m.size)?;
    let memory_target = memory(place, &m.memory, [&m.target, &None], fabric)?;
    let name = |suffix: &str| format!("{}{suffix}", m.name);
    use {CopyDirection as C, CopyWord as W, DmaDirection as D};
    let copies = match (&m.target, m.direction) {
        (None, Some(W::H2d)) => vec![(name(""), D::Read, C::HostToDevice)],
        (None, Some(W::D2h)) => vec![(name(""), D::Write, C::DeviceToHost)],
        (None, Some(W::Both)) => vec![
            (name(".h2d"), D::Read, C::HostToDevice),
            (name(".d2h"), D::Write, C::DeviceToHost),
        ],
        (Some(_), None | Some(W::Write)) => vec![(name(""), D::Write, C::PeerWrite)],
        (Some(_), Some(W::Read)) => vec![(name(""), D::Read, C::PeerRead)],
        (None, None) => {
            return Err(BuildError::Missing {
                place: place.clone(),
                key: "direction",
                hint: "\"h2d\", \"d2h\" or \"both\" (or a target peer to write or read)",
            })
        }
        (None, Some(w)) => {
            return Err(BuildError::conflict(
                place,
                format!(
                    "direction = \"{}\" copies to or from a peer: give its target, or copy \
                     host memory with \"h2d\", \"d2h\" or \"both\"",
                    w.word()
                ),
            ))
        }
        (Some(t), Some(w)) => {
            return Err(BuildError::conflict(
                place,
                format!(
                    "direction = \"{}\" copies host memory; toward the target {t:?} a copy is \
                     \"write\" or \"read\"",
                    w.word()
                ),
            ))
        }
    };
    if let Some(t) = &m.target {
        let target = fabric.nodes.lookup(place, "target", t)?;
        let kind = &fabric.node(target).kind;
        if target == source || !matches!(kind.as_target(), TargetKind::BarMemory { .. }) {
            return Err(BuildError::conflict(
                place,
                format!(
                    "the target {t:?} is {}; a memcpy's target is a peer with a memory BAR (a \
                     GPU or a kind = \"memory\" endpoint other than {:?})",
                    if target == source {
                        "the GPU itself"
                    } else {
                        kind.noun()
                    },
                    m.endpoint
                ),
            ));
        }
    }
    let rate = values::optional_rate(place, "rate", &m.rate)?;
    let mut out = Vec::new();
    for (flow, direction, copy) in copies {
        let keys = Transfers {
            name: &flow,
            endpoint: &m.endpoint,
            target: if m.memory.is_some() {
                &memory_target
            } else {
                &m.target
            },
            target_address: &None,
            outstanding: 1,
            tlp_payload: &None,
            doorbell_every: None,
        };
        let kind = WorkloadKind::Memcpy(copy);
        let mut spec = transfers(place, &keys, source, direction, size, kind, fabric)?;
        spec.rate = rate;
        out.push(spec);
    }
    Ok(out)
}
