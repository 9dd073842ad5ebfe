//! The host memory system behind a root complex: what a device's DMA read or write of host
//! addresses costs. An access is translated first (the IOMMU, if on), then served by the
//! last-level cache or the DRAM, across the inter-socket link when the memory is remote.
//!
//! - **LLC** ([`llc`]): set-associative, LRU within a set, 64-byte lines. A device read
//!   that hits is ready after `hit_latency`; one that misses reads DRAM (`dram_latency`,
//!   then the memory controller's bandwidth) and does not allocate (Intel DDIO: device reads
//!   never fill the LLC). A device write that hits updates the line in place; one that misses
//!   allocates the least recently used of the `ddio_ways` ways of its set (write allocation),
//!   whose dirty victim is written back to DRAM (booked on the memory controller and the
//!   socket link, off the writer's path). A write allocating a line it covers only in part
//!   first reads the rest from DRAM (or, where the other socket's cache holds the line, from
//!   there); one covering it whole needs only ownership (the remote latency when the memory
//!   is remote). Without write allocation a missing write goes to
//!   DRAM. [`HostMemory::warm`] is the host CPU touching a buffer (any way, clean lines);
//!   [`HostMemory::device_warm`] a device writing it (the DDIO ways);
//!   [`HostMemory::flush`] empties the cache.
//! - **The other socket's cache**: [`HostMemory::warm_remote`] is the other socket's CPU
//!   touching a buffer: a device read of a line it holds (and the local LLC does not) is
//!   ready after the hit latency plus `remote_cache_latency` (a snoop there and back),
//!   without DRAM.
//! - **IOMMU** ([`iommu`]): a fully associative LRU IOTLB of `iotlb_entries` pages of 4 KiB
//!   or 2 MiB; a miss waits for the first free of `walkers` walkers and takes `walk_latency`
//!   (a fixed time), holding its walker for `walk_occupancy` (the whole walk by default).
//!   Every page an access touches is translated before the access starts.
//! - **Remote socket**: every access that reaches the memory (a miss, a write-back, a
//!   non-allocating write, a line's ownership) adds `remote_latency`, and its data cross a
//!   link of `socket_link_bandwidth` ([`Throttle`]). LLC hits stay local.
//! - **Memory controller**: read data, write data and write-backs share one [`Throttle`] of
//!   `dram_bandwidth` bytes/s, in the order they are booked. It takes over the root
//!   complex's `memory_bandwidth`; LLC hits do not cross it.
//!
//! There is no random draw: the same accesses give the same times.
//!
//! The `[[root_complex]]` keys that describe it are in `scenario::host_memory`.

mod iommu;
mod llc;
#[cfg(test)]
mod tests;

use crate::engine::SimTime;
use crate::host_memory_spec::{HostMemorySpec, LINE_BYTES};
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use iommu::Iommu;
use llc::{Llc, WriteLookup};

/// Counts of what the accesses found (for tests and reports).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(in crate::sim) struct HostMemoryStats {
    /// Lines device reads touched.
    pub(in crate::sim) read_lines: u64,
    /// Of those, lines found in the LLC.
    pub(in crate::sim) read_hits: u64,
    /// Lines device writes touched.
    pub(in crate::sim) write_lines: u64,
    /// Of those, lines found in the LLC.
    pub(in crate::sim) write_hits: u64,
    /// Lines device writes allocated in the DDIO ways.
    pub(in crate::sim) write_allocs: u64,
    /// Dirty lines evicted and written back to DRAM.
    pub(in crate::sim) writebacks: u64,
    /// IOTLB lookups (one per page an access touches).
    pub(in crate::sim) iotlb_lookups: u64,
    /// IOTLB lookups that missed and walked.
    pub(in crate::sim) iotlb_misses: u64,
}

/// The remote socket an access crosses to reach the memory.
#[derive(Debug, Clone)]
struct Remote {
    latency: SimTime,
    link: Option<Throttle>,
}

/// What lies behind the LLC: the memory controller and, for remote memory, the socket link.
#[derive(Debug, Clone)]
struct Backing {
    latency: SimTime,
    dram: Option<Throttle>,
    remote: Option<Remote>,
}

impl Backing {
    /// When `bytes` read from the memory, asked for at `t`, are all at the root complex:
    /// the DRAM latency, the memory controller, then the socket link and its latency.
    #[inline]
    fn read(&mut self, t: SimTime, bytes: u64) -> SimTime {
        let mut at = t + self.latency;
        if let Some(m) = &mut self.dram {
            at = m.pass(at, bytes as u32);
        }
        if let Some(r) = &mut self.remote {
            if let Some(link) = &mut r.link {
                at = link.pass(at, bytes as u32);
            }
            at += r.latency;
        }
        at
    }

    /// When `bytes` written to the memory at `t` are in it: the socket link and its latency,
    /// then the memory controller (a local write has no latency of its own, as a root
    /// complex's memory today).
    #[inline]
    fn write(&mut self, t: SimTime, bytes: u64) -> SimTime {
        let mut at = t;
        if let Some(r) = &mut self.remote {
            if let Some(link) = &mut r.link {
                at = link.pass(at, bytes as u32);
            }
            at += r.latency;
        }
        if let Some(m) = &mut self.dram {
            at = m.pass(at, bytes as u32);
        }
        at
    }

    /// When a line asked for at `t` is owned (its home agent is remote: the remote latency).
    #[inline]
    fn own(&self, t: SimTime) -> SimTime {
        t + self.remote.as_ref().map_or(SimTime::ZERO, |r| r.latency)
    }
}

/// The host memory system of one root complex at run time.
#[derive(Debug, Clone)]
pub(in crate::sim) struct HostMemory {
    hit_latency: SimTime,
    /// A device write's time to its LLC line (0 without an LLC).
    write_latency: SimTime,
    memory: Backing,
    llc: Option<Llc>,
    iommu: Option<Iommu>,
    /// Byte ranges `[start, end)` whose lines the other socket's cache holds.
    remote_cached: Vec<(u64, u64)>,
    remote_cache_latency: SimTime,
    stats: HostMemoryStats,
}

/// The line numbers `[addr, addr + len)` touches (at least one line).
#[inline]
fn lines(addr: u64, len: u32) -> std::ops::RangeInclusive<u64> {
    let last = addr + (len.max(1) as u64 - 1);
    (addr / LINE_BYTES)..=(last / LINE_BYTES)
}

/// Bytes of line `line` that `[addr, addr + len)` covers.
#[inline]
fn covered(line: u64, addr: u64, len: u32) -> u64 {
    let (start, end) = (line * LINE_BYTES, (line + 1) * LINE_BYTES);
    end.min(addr + len as u64) - start.max(addr)
}

/// Whether `line` lies in one of the byte ranges `[start, end)` of `held`.
#[inline]
fn held_in(held: &[(u64, u64)], line: u64) -> bool {
    let a = line * LINE_BYTES;
    held.iter().any(|&(s, e)| a >= s && a < e)
}

impl HostMemory {
    /// A host memory as `spec` (checked) describes it: an empty LLC and IOTLB, idle links.
    pub(in crate::sim) fn new(spec: &HostMemorySpec) -> Self {
        HostMemory {
            hit_latency: spec
                .llc
                .as_ref()
                .map_or(spec.dram_latency, |l| l.hit_latency),
            write_latency: spec.llc.as_ref().map_or(SimTime::ZERO, |l| l.write_latency),
            memory: Backing {
                latency: spec.dram_latency,
                dram: spec.dram_bandwidth.map(Throttle::new),
                remote: spec.remote.as_ref().map(|r| Remote {
                    latency: r.remote_latency,
                    link: r.socket_link_bandwidth.map(Throttle::new),
                }),
            },
            llc: spec.llc.as_ref().map(Llc::new),
            iommu: spec.iommu.as_ref().map(Iommu::new),
            remote_cached: Vec::new(),
            remote_cache_latency: spec.remote_cache_latency,
            stats: HostMemoryStats::default(),
        }
    }

    /// When the data of a device read of host bytes `[addr, addr + len)`, arriving at `now`,
    /// are all at the root complex: translation, then each line from the LLC or DRAM (and
    /// the remote socket). Call it once per completion, in order, for each completion's
    /// own bytes, so that completions leave as their data come.
    pub(in crate::sim) fn read(&mut self, now: SimTime, addr: u64, len: u32) -> SimTime {
        let t = self.translate(now, addr, len);
        let mut ready = t + self.hit_latency;
        let mut missed = 0u64;
        for line in lines(addr, len) {
            self.stats.read_lines += 1;
            match self.llc.as_mut().and_then(|c| c.read(line)) {
                Some(valid) => {
                    self.stats.read_hits += 1;
                    ready = ready.max(valid);
                }
                None if self.held_remotely(line) => {
                    ready = ready.max(t + self.hit_latency + self.remote_cache_latency);
                }
                None => missed += 1,
            }
        }
        if missed > 0 {
            ready = ready.max(self.memory.read(t, missed * LINE_BYTES));
        }
        ready
    }

    /// When a device's posted write of host bytes `[addr, addr + len)`, arriving at `now`,
    /// has taken effect: translation, then each line updated or allocated in the LLC (DDIO)
    /// or written to DRAM.
    pub(in crate::sim) fn write(&mut self, now: SimTime, addr: u64, len: u32) -> SimTime {
        let t = self.translate(now, addr, len);
        let span = lines(addr, len);
        let Some(llc) = &mut self.llc else {
            self.stats.write_lines += span.end() - span.start() + 1;
            return self.memory.write(t, len as u64);
        };
        let mut done = t;
        let mut to_dram = 0u64;
        for line in span {
            self.stats.write_lines += 1;
            let (way, at) = match llc.write(line) {
                WriteLookup::Hit(way) => {
                    // The new data replace the line's: no wait for an earlier write.
                    self.stats.write_hits += 1;
                    (way, t)
                }
                WriteLookup::Allocated { way, writeback } => {
                    self.stats.write_allocs += 1;
                    if writeback {
                        self.stats.writebacks += 1;
                        self.memory.write(t, LINE_BYTES);
                    }
                    let at = if covered(line, addr, len) == LINE_BYTES {
                        self.memory.own(t)
                    } else if held_in(&self.remote_cached, line) {
                        // The rest of the line comes from the other socket's cache (a snoop
                        // there and back), not from DRAM.
                        t + self.remote_cache_latency
                    } else {
                        self.memory.read(t, LINE_BYTES)
                    };
                    (way, at)
                }
                WriteLookup::Bypass => {
                    to_dram += covered(line, addr, len);
                    continue;
                }
            };
            llc.set_ready(way, at + self.write_latency);
            done = done.max(at);
        }
        if to_dram > 0 {
            done = done.max(self.memory.write(t, to_dram));
        }
        done
    }

    /// The host CPU touched `[addr, addr + len)`: its lines are in the LLC, clean, the most
    /// recently used; of a buffer larger than the LLC the last part stays (pcie-bench's
    /// HWarm). Untimed: it sets up the state a run starts from.
    pub(in crate::sim) fn warm(&mut self, addr: u64, len: u64) {
        self.fill(addr, len, false);
    }

    /// A device wrote `[addr, addr + len)` before the run: its lines are in the LLC's DDIO
    /// ways (of a buffer larger than they hold, the last part), clean. Untimed.
    pub(in crate::sim) fn device_warm(&mut self, addr: u64, len: u64) {
        self.fill(addr, len, true);
    }

    /// Puts each line of `[addr, addr + len)` in the LLC, in order, as the host CPU
    /// touching it (`ddio` false) or a device writing it (`ddio` true): [`Llc::fill`].
    fn fill(&mut self, addr: u64, len: u64, ddio: bool) {
        let Some(llc) = &mut self.llc else { return };
        if len == 0 {
            return;
        }
        llc.fill(addr / LINE_BYTES, (addr + len - 1) / LINE_BYTES, ddio);
    }

    /// The other socket's CPU touched `[addr, addr + len)`: its cache holds the last part
    /// that fits in an LLC as large as this one (all of it without an LLC model). Untimed.
    pub(in crate::sim) fn warm_remote(&mut self, addr: u64, len: u64) {
        let held = self
            .llc
            .as_ref()
            .map_or(len, |c| len.min(c.capacity_lines() as u64 * LINE_BYTES));
        self.remote_cached.push((addr + len - held, addr + len));
    }

    /// Whether the other socket's cache holds `line`.
    #[inline]
    fn held_remotely(&self, line: u64) -> bool {
        held_in(&self.remote_cached, line)
    }

    /// The IOMMU translated every page of `[addr, addr + len)` before the run (a long run's
    /// steady state): the IOTLB holds the last pages that fit. Untimed.
    pub(in crate::sim) fn warm_iotlb(&mut self, addr: u64, len: u64) {
        let Some(mmu) = &mut self.iommu else { return };
        if len == 0 {
            return;
        }
        let shift = mmu.page_shift;
        mmu.prefill((addr >> shift)..=((addr + len - 1) >> shift));
    }

    /// Empties the LLC (pcie-bench's Cold); the IOTLB keeps its entries.
    #[cfg(test)]
    pub(in crate::sim) fn flush(&mut self) {
        if let Some(llc) = &mut self.llc {
            llc.flush();
        }
    }

    /// What the accesses so far found.
    #[cfg(test)]
    pub(in crate::sim) fn stats(&self) -> HostMemoryStats {
        let mut s = self.stats;
        if let Some(mmu) = &self.iommu {
            (s.iotlb_lookups, s.iotlb_misses) = (mmu.lookups, mmu.misses);
        }
        s
    }

    /// Lines the LLC holds now, and at most (0 and 0 without an LLC).
    #[cfg(test)]
    pub(in crate::sim) fn llc_lines(&self) -> (usize, usize) {
        self.llc
            .as_ref()
            .map_or((0, 0), |c| (c.occupied_lines(), c.capacity_lines()))
    }

    /// Its resources for the bottleneck verdict, with the service each gave by `t` (at or
    /// after every access so far): the memory controller ("memory"), the inter-socket link
    /// ("socket_link") and the IOMMU's walkers ("iommu": walking ticks over the walkers, so
    /// all walkers busy is 100 %), those it has, of root complex `n` named `name`.
    pub(in crate::sim) fn resources(
        &self,
        n: usize,
        name: &str,
        t: SimTime,
        out: &mut Vec<Resource>,
    ) {
        if let Some(m) = &self.memory.dram {
            let name = format!("{name} memory");
            out.push(m.resource(n, UsedBy::Every, "memory", name, t));
        }
        if let Some(link) = self.memory.remote.as_ref().and_then(|r| r.link.as_ref()) {
            let name = format!("{name} socket link");
            out.push(link.resource(n, UsedBy::Every, "socket_link", name, t));
        }
        if let Some(mmu) = &self.iommu {
            let busy = mmu.busy_by(t) / mmu.walkers() as u64;
            let name = format!("{name} IOMMU walkers");
            out.push(Resource::of_node(
                n,
                UsedBy::Every,
                "iommu",
                name,
                busy,
                None,
            ));
        }
    }

    /// When every page `[addr, addr + len)` touches is translated, asked at `now`.
    #[inline]
    fn translate(&mut self, now: SimTime, addr: u64, len: u32) -> SimTime {
        let Some(mmu) = &mut self.iommu else {
            return now;
        };
        let shift = mmu.page_shift;
        let last = addr + (len.max(1) as u64 - 1);
        let mut t = now;
        for page in (addr >> shift)..=(last >> shift) {
            t = t.max(mmu.translate(now, page));
        }
        t
    }
}
