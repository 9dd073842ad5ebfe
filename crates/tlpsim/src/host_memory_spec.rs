//! The host memory system behind a root complex, as a run needs it: the last-level cache and
//! its DDIO share, the IOMMU, a remote NUMA socket and the memory controller (checked
//! values; the scenario loader builds them and calls [`HostMemorySpec::check`]).
//!
//! Defaults come from the pcie-bench measurements of an NFP-6000 in a Broadwell Xeon
//! (`docs/pcie-bench-data.md`); each field says which figure. `NodeKind::RootComplex` holds
//! one when its `[[root_complex]]` has any of the host memory keys.

use crate::engine::SimTime;
use crate::error::{ConfigError, Result};

/// Bytes in one cache line.
pub const LINE_BYTES: u64 = 64;

/// The host memory system of one root complex.
#[derive(Debug, Clone, PartialEq)]
pub struct HostMemorySpec {
    /// Request to first data of a read that misses the LLC (or of any read without an LLC):
    /// the DRAM latency. Default 155 ns: 54 ns above the LLC hit (pcie-bench Cold vs HWarm,
    /// 600 vs 546 ns per 64 B read).
    pub dram_latency: SimTime,
    /// Bytes per second the memory controller passes, read and write data together
    /// (`memory_bandwidth` of `[[root_complex]]`); None: unlimited.
    pub dram_bandwidth: Option<f64>,
    /// The last-level cache; None: every access goes to DRAM.
    pub llc: Option<LlcSpec>,
    /// The IOMMU; None: off (device addresses are host physical addresses).
    pub iommu: Option<IommuSpec>,
    /// The memory sits on the other socket; None: on the root complex's own socket.
    pub remote: Option<RemoteSocketSpec>,
    /// Added to the hit latency for a line the other socket's CPU holds in its cache (a
    /// workload with `cache = "remote-warm"`): a snoop there and back. Default 106 ns, twice
    /// the remote latency (pcie-bench s0-s1-s1 HWarm: 653 vs 546 ns per 64 B read).
    pub remote_cache_latency: SimTime,
}

/// A set-associative last-level cache with DDIO: device writes allocate into a few ways.
#[derive(Debug, Clone, PartialEq)]
pub struct LlcSpec {
    /// Capacity in bytes, rounded down to whole sets of `ways` 64-byte lines. Default
    /// 25 MiB (Xeon E5-2630 v4; the E5-2620 v3 has 15 MiB).
    pub capacity: u64,
    /// Ways per set. Default 20.
    pub ways: u32,
    /// Request to first data of a read whose line is in the LLC. Default 100 ns (pcie-bench
    /// measures only round trips; the split between device and host is not known).
    pub hit_latency: SimTime,
    /// From a device write's arrival until its line in the LLC holds the data (a read of
    /// the line waits for it; the write's credits do not). Default 0 ns.
    pub write_latency: SimTime,
    /// Ways of each set device writes may allocate into (DDIO); 0: device writes never
    /// allocate. Default 2 (of 20: 10 % of the LLC, Intel's default; pcie-bench's
    /// LAT_CMD_WRRD turns near 2× that capacity).
    pub ddio_ways: u32,
    /// Whether a device write that misses allocates its line (in the DDIO ways); else it
    /// goes to DRAM. Default true (pcie-bench WRRD is flat at every window).
    pub write_allocate: bool,
}

/// An IOMMU translating every device address through its IOTLB before the memory access.
#[derive(Debug, Clone, PartialEq)]
pub struct IommuSpec {
    /// IOTLB entries (fully associative, least recently used replaced). Default 64:
    /// pcie-bench's read knee between 256 and 512 KiB windows with 4 KiB pages.
    pub iotlb_entries: u32,
    /// Page size of the translations.
    pub page_size: PageSize,
    /// Time one page walk takes (a fixed time: the data do not tell the page-table caches
    /// apart from the memory reads). Default 280 ns (bdw: 600 → 880 ns at ≥ 1 MiB; hsw 226).
    pub walk_latency: SimTime,
    /// Page walks in progress at once; a miss waits for a free walker. Default 5 (about
    /// 19 M translations/s at a 64 MiB window × 280 ns).
    pub walkers: u32,
    /// Time a walk holds its walker; None: the whole walk. Shorter, a walker starts the next
    /// walk while the last one's page-table reads are still on their way: the walkers give
    /// `walkers / occupancy` walks per second, each still taking `walk_latency`.
    pub walk_occupancy: Option<SimTime>,
}

/// The page size of an IOMMU's translations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PageSize {
    /// 4 KiB pages (Linux `intel_iommu=on,sp_off`).
    #[default]
    Small,
    /// 2 MiB superpages (Linux's default with `intel_iommu=on`).
    Huge,
}

impl PageSize {
    /// log2 of the page's bytes.
    pub fn shift(self) -> u32 {
        match self {
            PageSize::Small => 12,
            PageSize::Huge => 21,
        }
    }

    /// Bytes in one page.
    pub fn bytes(self) -> u64 {
        1 << self.shift()
    }
}

/// Memory on the other socket: each access crosses the inter-socket link.
#[derive(Debug, Clone, PartialEq)]
pub struct RemoteSocketSpec {
    /// Added to every access that reaches the remote memory. Default 53 ns (pcie-bench
    /// s0-s1-s0 vs s0-s0-s0, Cold, 64 B reads: 653 vs 600 ns).
    pub remote_latency: SimTime,
    /// Bytes per second of the inter-socket link the remote data crosses (read data, write
    /// data and write-backs together); None: unlimited (pcie-bench never saw it limit).
    pub socket_link_bandwidth: Option<f64>,
}

impl Default for HostMemorySpec {
    fn default() -> Self {
        HostMemorySpec {
            dram_latency: SimTime::from_ns(155),
            dram_bandwidth: None,
            llc: Some(LlcSpec::default()),
            iommu: None,
            remote: None,
            remote_cache_latency: SimTime::from_ns(106),
        }
    }
}

impl Default for LlcSpec {
    fn default() -> Self {
        LlcSpec {
            capacity: 25 << 20,
            ways: 20,
            hit_latency: SimTime::from_ns(100),
            write_latency: SimTime::ZERO,
            ddio_ways: 2,
            write_allocate: true,
        }
    }
}

impl Default for IommuSpec {
    fn default() -> Self {
        IommuSpec {
            iotlb_entries: 64,
            page_size: PageSize::Small,
            walk_latency: SimTime::from_ns(280),
            walkers: 5,
            walk_occupancy: None,
        }
    }
}

impl Default for RemoteSocketSpec {
    fn default() -> Self {
        RemoteSocketSpec {
            remote_latency: SimTime::from_ns(53),
            socket_link_bandwidth: None,
        }
    }
}

/// Largest IOTLB the model scans (it looks entries up one by one).
pub const MAX_IOTLB_ENTRIES: u32 = 4096;
/// Largest number of page walkers.
pub const MAX_WALKERS: u32 = 256;
/// Largest LLC associativity.
pub const MAX_WAYS: u32 = 64;
/// Largest LLC (bytes): the model keeps 24 bytes per line.
pub const MAX_LLC_BYTES: u64 = 1 << 30;

/// `value` as an error unless it is a finite positive rate.
fn check_rate(setting: &'static str, value: Option<f64>) -> Result<()> {
    match value {
        Some(r) if !(r.is_finite() && r > 0.0) => Err(ConfigError::not_allowed(
            setting,
            r,
            "a positive number of bytes per second",
        )),
        _ => Ok(()),
    }
}

impl HostMemorySpec {
    /// Checks every value; the error names the setting as `[[root_complex]]` would.
    pub fn check(&self) -> Result<()> {
        check_rate("memory_bandwidth", self.dram_bandwidth)?;
        if let Some(llc) = &self.llc {
            if !(1..=MAX_WAYS).contains(&llc.ways) {
                return Err(ConfigError::not_allowed(
                    "llc_ways",
                    llc.ways,
                    format!("1 to {MAX_WAYS}"),
                ));
            }
            let set = LINE_BYTES * llc.ways as u64;
            if !(set..=MAX_LLC_BYTES).contains(&llc.capacity) {
                return Err(ConfigError::not_allowed(
                    "llc_size",
                    llc.capacity,
                    format!(
                        "{set} (one set of {} lines) to {MAX_LLC_BYTES} bytes",
                        llc.ways
                    ),
                ));
            }
            if llc.ddio_ways > llc.ways {
                return Err(ConfigError::not_allowed(
                    "ddio_ways",
                    llc.ddio_ways,
                    format!("0 to llc_ways ({})", llc.ways),
                ));
            }
            if llc.hit_latency > self.dram_latency {
                return Err(ConfigError::Conflict(format!(
                    "llc_hit_latency {} is above dram_latency {}: a hit cannot be slower than DRAM",
                    llc.hit_latency, self.dram_latency
                )));
            }
        }
        if let Some(mmu) = &self.iommu {
            if !(1..=MAX_IOTLB_ENTRIES).contains(&mmu.iotlb_entries) {
                return Err(ConfigError::not_allowed(
                    "iotlb_entries",
                    mmu.iotlb_entries,
                    format!("1 to {MAX_IOTLB_ENTRIES}"),
                ));
            }
            if !(1..=MAX_WALKERS).contains(&mmu.walkers) {
                return Err(ConfigError::not_allowed(
                    "iommu_walkers",
                    mmu.walkers,
                    format!("1 to {MAX_WALKERS}"),
                ));
            }
            if mmu.walk_occupancy == Some(SimTime::ZERO) {
                return Err(ConfigError::not_allowed(
                    "iommu_walk_occupancy",
                    "0ns",
                    "a time above 0 (a walk holds its walker for some time)",
                ));
            }
        }
        if let Some(remote) = &self.remote {
            check_rate("socket_link_bandwidth", remote.socket_link_bandwidth)?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_check_and_bad_values_name_their_setting() {
        let mut spec = HostMemorySpec {
            iommu: Some(IommuSpec::default()),
            remote: Some(RemoteSocketSpec::default()),
            ..HostMemorySpec::default()
        };
        spec.check().unwrap();
        assert_eq!(PageSize::Huge.bytes(), 2 << 20);
        spec.llc.as_mut().unwrap().ddio_ways = 21;
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .starts_with("ddio_ways 21"));
        spec.llc.as_mut().unwrap().ddio_ways = 2;
        spec.llc.as_mut().unwrap().capacity = 640;
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .starts_with("llc_size 640"));
        spec.llc.as_mut().unwrap().capacity = 1280;
        spec.iommu.as_mut().unwrap().walkers = 0;
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .contains("iommu_walkers"));
        spec.iommu.as_mut().unwrap().walkers = 1;
        spec.remote.as_mut().unwrap().socket_link_bandwidth = Some(f64::NAN);
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .contains("socket_link"));
        spec.remote = None;
        spec.dram_latency = SimTime::from_ns(50);
        assert!(spec
            .check()
            .unwrap_err()
            .to_string()
            .contains("above dram_latency"));
    }
}
