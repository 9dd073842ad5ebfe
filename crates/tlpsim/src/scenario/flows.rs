//! DMA, storage and bridge workloads as flows: their transfers, where they go, their write
//! TLP size and doorbells.

use super::error::{at, BuildError, Place};
use super::paths::{check_pair, memory};
use super::values;
use super::workload::{BridgeWorkloadSection, DmaWorkloadSection, Fabric, StorageWorkloadSection};
use crate::fabric::{
    AddressPath, Addresses, BridgeSpec, CacheState, DmaDirection, Doorbell, NodeId, NodeKind,
    StorageMix, TargetKind, WorkloadKind, WorkloadSpec, CACHE_LINE,
};
use crate::pcie::tlp::Addressing;
use crate::units;
/// The largest window a workload's transfers may walk over (2 GiB: a TLP's address, an
/// offset into the buffer, stays below 4 GiB).
const MAX_WINDOW: u64 = 1 << 31;

/// The keys a DMA and a storage workload share: where the requests go and how many.
pub(super) struct Transfers<'a> {
    pub(super) name: &'a str,
    pub(super) endpoint: &'a str,
    pub(super) target: &'a Option<String>,
    pub(super) target_address: &'a Option<String>,
    pub(super) outstanding: i64,
    pub(super) tlp_payload: &'a Option<String>,
    pub(super) doorbell_every: Option<i64>,
}

/// A DMA workload's address keys: its window, pattern and offsets.
fn addresses(
    place: &Place,
    d: &DmaWorkloadSection,
    transfer_size: u64,
) -> Result<Addresses, BuildError> {
    let offset = |key, v| values::count(place, key, v, 0..=4095, "0 to 4095 bytes");
    let host_offset = offset("host_offset", d.host_offset)? as u64;
    let device_offset = offset("device_offset", d.device_offset)? as u64;
    let mut a = Addresses::single(transfer_size + host_offset);
    a.pattern = d.pattern.into();
    a.host_offset = host_offset;
    a.device_offset = device_offset;
    if let Some(text) = &d.window {
        let w = values::bytes(place, "window", text)?;
        if w < a.slot || w > MAX_WINDOW {
            return Err(BuildError::not_allowed(
                place,
                "window",
                text,
                format!(
                    "{} B (one slot: transfer_size + host_offset rounded up to {CACHE_LINE} B) \
                     to 2 GiB",
                    a.slot
                ),
            ));
        }
        a.window = w / a.slot * a.slot;
    }
    Ok(a)
}

/// A DMA workload.
pub(super) fn dma(
    place: &Place,
    d: &DmaWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    refuse_nic(place, &d.endpoint, source, fabric)?;
    let transfer_size = size(place, "transfer_size", &d.transfer_size)?;
    let memory_target = memory(place, &d.memory, [&d.target, &d.target_address], fabric)?;
    let keys = Transfers {
        name: &d.name,
        endpoint: &d.endpoint,
        target: if d.memory.is_some() {
            &memory_target
        } else {
            &d.target
        },
        target_address: &d.target_address,
        outstanding: d.outstanding,
        tlp_payload: &d.tlp_payload,
        doorbell_every: d.doorbell_every,
    };
    let direction: DmaDirection = d.direction.into();
    let dma_engine = matches!(fabric.node(source).kind, NodeKind::Dma { .. });
    if direction.mixed() && !dma_engine {
        return Err(BuildError::conflict(
            place,
            format!(
                "direction = \"{}\" runs on a DMA endpoint (kind = \"dma\"); {:?} is {}",
                d.direction.word(),
                d.endpoint,
                fabric.node(source).kind.noun()
            ),
        ));
    }
    let addresses = addresses(place, d, transfer_size)?;
    let kind = WorkloadKind::Dma;
    let mut spec = transfers(place, &keys, source, direction, transfer_size, kind, fabric)?;
    if let (Some(text), TargetKind::BarMemory { bytes }) =
        (&d.window, fabric.node(spec.target).kind.as_target())
    {
        if addresses.window > bytes {
            return Err(BuildError::not_allowed(
                place,
                "window",
                text,
                format!(
                    "at most the {bytes} B BAR of the memory endpoint {:?}",
                    fabric.node(spec.target).name
                ),
            ));
        }
    }
    spec.addresses = addresses;
    spec.cache = d.cache.into();
    spec.rate = values::optional_rate(place, "rate", &d.rate)?;
    Ok(spec)
}

/// A storage workload: storage reads travel as DMA writes toward host memory, storage writes
/// as DMA reads.
pub(super) fn storage(
    place: &Place,
    s: &StorageWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    refuse_nic(place, &s.endpoint, source, fabric)?;
    if !matches!(fabric.node(source).kind, NodeKind::Storage { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is not a storage endpoint (kind = \"storage\" with media rates)",
                s.endpoint
            ),
        ));
    }
    let read_percent = values::count(place, "read_percent", s.read_percent, 0..=100, "0 to 100")?;
    let sized = |key: &'static str, v: &Option<String>| match v {
        Some(v) => size(place, key, v),
        None => Err(BuildError::Missing {
            place: place.clone(),
            key,
            hint: "bytes, e.g. \"4KiB\"",
        }),
    };
    let read_size = if read_percent > 0 {
        sized("read_size", &s.read_size)?
    } else {
        0
    };
    let write_size = if read_percent < 100 {
        sized("write_size", &s.write_size)?
    } else {
        0
    };
    let direction = match read_percent {
        100 => DmaDirection::Write,
        0 => DmaDirection::Read,
        _ => DmaDirection::Both,
    };
    let mix = StorageMix {
        read_percent,
        read_size,
        write_size,
        random: s.random,
    };
    let keys = Transfers {
        name: &s.name,
        endpoint: &s.endpoint,
        target: &s.target,
        target_address: &s.target_address,
        outstanding: s.outstanding,
        tlp_payload: &s.tlp_payload,
        doorbell_every: s.doorbell_every,
    };
    let transfer_size = read_size.max(write_size);
    transfers(
        place,
        &keys,
        source,
        direction,
        transfer_size,
        WorkloadKind::Storage(mix),
        fabric,
    )
}

/// A NIC moves Ethernet frames: a DMA or storage workload on one is refused.
fn refuse_nic(
    place: &Place,
    endpoint: &str,
    source: NodeId,
    fabric: &Fabric,
) -> Result<(), BuildError> {
    if matches!(fabric.node(source).kind, NodeKind::Nic { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{endpoint:?} is a NIC, which moves Ethernet frames: give it a kind = \"bridge\" \
                 workload, or make the endpoint kind = \"dma\""
            ),
        ));
    }
    Ok(())
}

/// A transfer size: 1 B to 1 GiB.
pub(super) fn size(place: &Place, key: &'static str, text: &str) -> Result<u64, BuildError> {
    let b = values::bytes(place, key, text)?;
    if (1..=crate::analytic::MAX_TRANSFER_BYTES).contains(&b) {
        Ok(b)
    } else {
        Err(BuildError::not_allowed(place, key, text, "1 B to 1 GiB"))
    }
}

/// A DMA, storage or memcpy workload's flow of `kind`: its target, checked against its
/// source, and the transfers in flight, write TLP size and doorbell.
pub(super) fn transfers(
    place: &Place,
    keys: &Transfers,
    source: NodeId,
    direction: DmaDirection,
    transfer_size: u64,
    kind: WorkloadKind,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    let (target, address) = target(place, keys, source, transfer_size, fabric)?;
    check_pair(
        place,
        keys.endpoint,
        source,
        target,
        direction,
        transfer_size,
        fabric,
    )?;
    let outstanding = values::count(
        place,
        "outstanding",
        keys.outstanding,
        1..=4096,
        "1 to 4096",
    )?;
    let tlp_payload = match keys.tlp_payload {
        None => fabric.pcie.mps,
        Some(v) => tlp_payload(place, v, direction, fabric.pcie.mps)?,
    };
    let doorbell = match keys.doorbell_every {
        None => None,
        Some(n) => Some(doorbell(place, n, target, direction, fabric)?),
    };
    Ok(WorkloadSpec {
        name: keys.name.to_string(),
        source,
        target,
        direction,
        transfer_size,
        outstanding,
        kind,
        tlp_payload,
        doorbell,
        address,
        addresses: Addresses::single(transfer_size),
        cache: CacheState::Warm,
        rate: None,
    })
}

/// Whose memory a flow reaches: a named node, an address through the bridges' windows, or
/// the root complex above an endpoint.
fn target(
    place: &Place,
    keys: &Transfers,
    source: NodeId,
    transfer_size: u64,
    fabric: &Fabric,
) -> Result<(NodeId, Option<AddressPath>), BuildError> {
    match (keys.target, keys.target_address) {
        (Some(_), Some(_)) => Err(BuildError::conflict(
            place,
            "give target (a node) or target_address (an address), not both",
        )),
        (None, Some(text)) => {
            let a = units::parse_address("target_address", text).map_err(at(place))?;
            let nodes = fabric.nodes.nodes();
            let (t, path) = fabric
                .windows
                .resolve(place, text, a, transfer_size, source, nodes)?;
            // An address above 4 GiB on any bus the requests cross needs 4-DW headers.
            let above_4g = |x: &u64| x.saturating_add(transfer_size.max(1) - 1) > u32::MAX as u64;
            let mut high = std::iter::once(a).chain(path.crossings.iter().map(|c| c.1));
            if let (Addressing::A32, Some(x)) = (fabric.pcie.addressing, high.find(above_4g)) {
                return Err(BuildError::conflict(
                    place,
                    format!(
                        "target_address {text} reaches {x:#x}, above 4 GiB, where memory \
                         requests need 4-DW (64-bit) headers; set [pcie] addressing = 64"
                    ),
                ));
            }
            Ok((t, Some(path)))
        }
        (Some(t), None) => Ok((fabric.nodes.lookup(place, "target", t)?, None)),
        (None, None) if fabric.node(source).kind.is_root_complex() => Err(BuildError::conflict(
            place,
            format!("a workload on {:?} needs a target endpoint", keys.endpoint),
        )),
        // Those that issue no requests are refused by `check_pair`.
        (None, None) => Ok((fabric.topology.root_above(source), None)),
    }
}

/// The largest write TLP payload `text` allows: a multiple of 4 B up to MPS.
fn tlp_payload(
    place: &Place,
    text: &str,
    direction: DmaDirection,
    mps: u32,
) -> Result<u32, BuildError> {
    let b = values::bytes(place, "tlp_payload", text)?;
    if !(4..=mps as u64).contains(&b) || b % 4 != 0 {
        return Err(BuildError::not_allowed(
            place,
            "tlp_payload",
            text,
            format!("a multiple of 4 B from 4 B to MPS ({mps} B)"),
        ));
    }
    if direction == DmaDirection::Read {
        return Err(BuildError::conflict(
            place,
            "tlp_payload sizes writes; this workload only reads",
        ));
    }
    Ok(b as u32)
}

/// The doorbell rung after every `every` transfers: the bridge directly above the target.
fn doorbell(
    place: &Place,
    every: i64,
    target: NodeId,
    direction: DmaDirection,
    fabric: &Fabric,
) -> Result<Doorbell, BuildError> {
    if !(1..=65536).contains(&every) {
        return Err(BuildError::not_allowed(
            place,
            "doorbell_every",
            every,
            "1 to 65536 transfers per doorbell",
        ));
    }
    let ntb = fabric
        .topology
        .up(target)
        .filter(|&u| matches!(fabric.node(u).kind, NodeKind::Ntb { .. }));
    match (ntb, direction) {
        (Some(ntb), DmaDirection::Write) => Ok(Doorbell {
            every: every as u32,
            ntb,
        }),
        _ => Err(BuildError::conflict(
            place,
            format!(
                "doorbell_every needs direction = \"write\" and a target root complex directly \
                 below a non-transparent bridge ([[ntb]]), whose doorbell the writer rings; {:?} \
                 is not one",
                fabric.node(target).name
            ),
        )),
    }
}

/// An Ethernet bridging workload: frames on both ports of a NIC, bridged by the `[cpu]`.
pub(super) fn bridge(
    place: &Place,
    b: &BridgeWorkloadSection,
    source: NodeId,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    if !matches!(fabric.node(source).kind, NodeKind::Nic { .. }) {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is not a NIC (an [[endpoint]] with kind = \"nic\")",
                b.endpoint
            ),
        ));
    }
    if !fabric.has_cpu {
        return Err(BuildError::conflict(
            place,
            "a bridge workload needs a [cpu] section (frame_cost, ...) to bridge the frames",
        ));
    }
    let frame_size = values::count(
        place,
        "frame_size",
        b.frame_size,
        64..=9018,
        "64 to 9018 bytes (Ethernet frame with CRC)",
    )?;
    if !(b.load > 0.0 && b.load <= 1.0) {
        return Err(BuildError::not_allowed(
            place,
            "load",
            b.load,
            "a fraction of line rate in (0, 1]",
        ));
    }
    Ok(WorkloadSpec {
        name: b.name.clone(),
        source,
        target: fabric.topology.root_above(source),
        direction: DmaDirection::Both,
        transfer_size: frame_size as u64,
        outstanding: 1,
        kind: WorkloadKind::Bridge(BridgeSpec {
            frame_size,
            load: b.load,
        }),
        tlp_payload: u32::MAX, // NIC writes are MPS-sized
        doorbell: None,
        address: None,
        addresses: Addresses::single(frame_size as u64),
        cache: CacheState::Warm,
        rate: None,
    })
}
