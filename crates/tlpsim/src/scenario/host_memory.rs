//! The host memory keys of `[[root_complex]]`: the last-level cache and its DDIO ways, the
//! IOMMU, the memory's NUMA socket. Each part is there only when its own key is: an LLC
//! with `llc_size`, an IOMMU with `iommu = "on"`, remote memory with `memory_socket =
//! "remote"`; any of them turns the host memory model on ([`HostMemorySpec`]). A key of a
//! part that is off is refused unless it holds its default. With the model on, `memory_read_latency` is the DRAM latency (a fixed
//! duration) and `memory_bandwidth` the memory controller's.

use super::error::{at, BuildError, Place};
use super::nodes::RootComplexSection;
use super::values::{self, words, LatencyValue};
use crate::engine::SimTime;
use crate::host_memory_spec::{
    HostMemorySpec, IommuSpec, LlcSpec, PageSize, RemoteSocketSpec, MAX_IOTLB_ENTRIES, MAX_WALKERS,
    MAX_WAYS,
};

words! {
    /// Whether a root complex translates device addresses through an IOMMU.
    pub enum IommuWord for "iommu" default Off {
        /// Device addresses are host physical addresses.
        Off = "off",
        /// Every access is translated through the IOTLB first.
        On = "on",
    }
}

words! {
    /// The page size of an IOMMU's translations.
    pub enum PageSizeWord for "iommu_page_size" default Small => PageSize {
        /// 4 KiB pages (Linux `intel_iommu=on,sp_off`).
        Small = "4KiB",
        /// 2 MiB superpages.
        Huge = "2MiB",
    }
}

words! {
    /// Which socket the memory behind a root complex sits on.
    pub enum SocketWord for "memory_socket" default Local {
        /// The root complex's own socket.
        Local = "local",
        /// The other socket: every memory access crosses the inter-socket link.
        Remote = "remote",
    }
}

/// Whether `rc` turns the host memory model on: an LLC, an IOMMU or remote memory.
fn wanted(rc: &RootComplexSection) -> bool {
    rc.llc_size.is_some()
        || rc.iommu == Some(IommuWord::On)
        || rc.memory_socket == Some(SocketWord::Remote)
}

/// A key of one part, set to other than its default while the part is off: a mistake (the
/// default written out is harmless).
fn needs<T: PartialEq>(
    place: &Place,
    key: &str,
    value: &Option<T>,
    default: T,
    part: &str,
) -> Result<(), BuildError> {
    match value {
        Some(v) if *v != default => Err(BuildError::conflict(
            place,
            format!("{key} applies only with {part}"),
        )),
        _ => Ok(()),
    }
}

/// The keys of the parts that are off (or of the whole model, when it is off) hold their
/// defaults.
fn check_unused(place: &Place, rc: &RootComplexSection) -> Result<(), BuildError> {
    let ns = |t: &Option<String>, key| values::optional_duration(place, key, t);
    let d = LlcSpec::default();
    if rc.llc_size.is_none() {
        let part = "llc_size (the last-level cache)";
        needs(place, "llc_ways", &rc.llc_ways, d.ways as i64, part)?;
        let hit = ns(&rc.llc_hit_latency, "llc_hit_latency")?;
        needs(place, "llc_hit_latency", &hit, d.hit_latency, part)?;
        let write = ns(&rc.llc_write_latency, "llc_write_latency")?;
        needs(place, "llc_write_latency", &write, d.write_latency, part)?;
        needs(place, "ddio_ways", &rc.ddio_ways, d.ddio_ways as i64, part)?;
        let alloc = &rc.ddio_write_allocate;
        needs(place, "ddio_write_allocate", alloc, d.write_allocate, part)?;
    }
    if rc.iommu != Some(IommuWord::On) {
        let d = IommuSpec::default();
        let part = "iommu = \"on\"";
        let entries = &rc.iotlb_entries;
        needs(
            place,
            "iotlb_entries",
            entries,
            d.iotlb_entries as i64,
            part,
        )?;
        needs(
            place,
            "iommu_page_size",
            &rc.iommu_page_size,
            PageSizeWord::Small,
            part,
        )?;
        let walk = ns(&rc.iommu_walk_latency, "iommu_walk_latency")?;
        needs(place, "iommu_walk_latency", &walk, d.walk_latency, part)?;
        needs(
            place,
            "iommu_walkers",
            &rc.iommu_walkers,
            d.walkers as i64,
            part,
        )?;
        let occupancy = ns(&rc.iommu_walk_occupancy, "iommu_walk_occupancy")?;
        if occupancy.is_some() {
            return Err(BuildError::conflict(
                place,
                format!("iommu_walk_occupancy applies only with {part}"),
            ));
        }
    }
    if rc.memory_socket != Some(SocketWord::Remote) && rc.socket_link_bandwidth.is_some() {
        return Err(BuildError::conflict(
            place,
            "socket_link_bandwidth applies only with memory_socket = \"remote\"",
        ));
    }
    if !wanted(rc) {
        let d = RemoteSocketSpec::default();
        let remote = ns(&rc.remote_latency, "remote_latency")?;
        let part = "the host memory model (llc_size, iommu = \"on\" or memory_socket = \"remote\")";
        needs(place, "remote_latency", &remote, d.remote_latency, part)?;
    }
    Ok(())
}

/// The host memory system of `rc`, if it has any host memory key; `memory_bandwidth` is its
/// memory controller's rate.
pub fn host_memory(
    place: &Place,
    rc: &RootComplexSection,
    memory_bandwidth: Option<f64>,
) -> Result<Option<Box<HostMemorySpec>>, BuildError> {
    check_unused(place, rc)?;
    if !wanted(rc) {
        return Ok(None);
    }
    let dram_latency = match &rc.memory_read_latency {
        LatencyValue::Fixed(t) => values::duration(place, "memory_read_latency", t)?,
        LatencyValue::Distribution(_) => {
            return Err(BuildError::conflict(
                place,
                "memory_read_latency must be one duration (the DRAM latency) with the host \
                 memory keys (llc_size, iommu, memory_socket, ...)",
            ))
        }
    };
    let llc = match &rc.llc_size {
        None => None,
        Some(size) => Some(llc(place, rc, size, dram_latency)?),
    };
    let iommu = match rc.iommu.unwrap_or_default() {
        IommuWord::Off => None,
        IommuWord::On => Some(iommu(place, rc)?),
    };
    let d = RemoteSocketSpec::default();
    let remote_latency = duration_or(
        place,
        "remote_latency",
        &rc.remote_latency,
        d.remote_latency,
    )?;
    let socket_link_bandwidth =
        values::optional_rate(place, "socket_link_bandwidth", &rc.socket_link_bandwidth)?;
    let remote = match rc.memory_socket.unwrap_or_default() {
        SocketWord::Local => None,
        SocketWord::Remote => Some(RemoteSocketSpec {
            remote_latency,
            socket_link_bandwidth,
        }),
    };
    let spec = HostMemorySpec {
        dram_latency,
        dram_bandwidth: memory_bandwidth,
        llc,
        iommu,
        remote,
        remote_cache_latency: remote_latency + remote_latency,
    };
    spec.check().map_err(at(place))?;
    Ok(Some(Box::new(spec)))
}

/// A count key of the host memory model in `min..=max`, `default` when left out. The bounds
/// are the spec's own (`HostMemorySpec::check` holds them too); here they keep a file's
/// number inside a u32 and name the key's place.
fn bounded(
    place: &Place,
    key: &'static str,
    v: Option<i64>,
    min: u32,
    max: u32,
    default: u32,
) -> Result<u32, BuildError> {
    match v {
        Some(v) => values::count(
            place,
            key,
            v,
            min as i64..=max as i64,
            &format!("{min} to {max}"),
        ),
        None => Ok(default),
    }
}

/// A duration key of the host memory model, `default` when left out.
fn duration_or(
    place: &Place,
    key: &'static str,
    t: &Option<String>,
    default: SimTime,
) -> Result<SimTime, BuildError> {
    Ok(values::optional_duration(place, key, t)?.unwrap_or(default))
}

/// `rc`'s last-level cache of `size` bytes (its hit latency by default at most
/// `dram_latency`).
fn llc(
    place: &Place,
    rc: &RootComplexSection,
    size: &str,
    dram_latency: SimTime,
) -> Result<LlcSpec, BuildError> {
    let d = LlcSpec::default();
    Ok(LlcSpec {
        capacity: values::bytes(place, "llc_size", size)?,
        ways: bounded(place, "llc_ways", rc.llc_ways, 1, MAX_WAYS, d.ways)?,
        hit_latency: duration_or(
            place,
            "llc_hit_latency",
            &rc.llc_hit_latency,
            d.hit_latency.min(dram_latency),
        )?,
        write_latency: duration_or(
            place,
            "llc_write_latency",
            &rc.llc_write_latency,
            d.write_latency,
        )?,
        ddio_ways: match rc.ddio_ways {
            Some(w) => {
                let ways = 0..=MAX_WAYS as i64;
                values::count(place, "ddio_ways", w, ways, "0 to llc_ways")?
            }
            None => d.ddio_ways,
        },
        write_allocate: rc.ddio_write_allocate.unwrap_or(d.write_allocate),
    })
}

/// `rc`'s IOMMU.
fn iommu(place: &Place, rc: &RootComplexSection) -> Result<IommuSpec, BuildError> {
    let d = IommuSpec::default();
    Ok(IommuSpec {
        iotlb_entries: bounded(
            place,
            "iotlb_entries",
            rc.iotlb_entries,
            1,
            MAX_IOTLB_ENTRIES,
            d.iotlb_entries,
        )?,
        page_size: rc.iommu_page_size.unwrap_or_default().into(),
        walk_latency: duration_or(
            place,
            "iommu_walk_latency",
            &rc.iommu_walk_latency,
            d.walk_latency,
        )?,
        walkers: bounded(
            place,
            "iommu_walkers",
            rc.iommu_walkers,
            1,
            MAX_WALKERS,
            d.walkers,
        )?,
        walk_occupancy: values::optional_duration(
            place,
            "iommu_walk_occupancy",
            &rc.iommu_walk_occupancy,
        )?,
    })
}
