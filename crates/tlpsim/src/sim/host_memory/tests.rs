//! Unit and property tests of the host memory system.

use proptest::prelude::*;

use super::*;
use crate::engine::rng::Rng;
use crate::host_memory_spec::{IommuSpec, LlcSpec, PageSize, RemoteSocketSpec};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

fn ns(n: u64) -> SimTime {
    SimTime::from_ns(n)
}

/// A small LLC: 64 KiB, 16 ways (64 sets), 4 DDIO ways; hit 100 ns, DRAM 160 ns.
fn small() -> HostMemorySpec {
    HostMemorySpec {
        dram_latency: ns(160),
        dram_bandwidth: None,
        llc: Some(LlcSpec {
            capacity: 64 * KIB,
            ways: 16,
            hit_latency: ns(100),
            write_latency: ns(0),
            ddio_ways: 4,
            write_allocate: true,
        }),
        iommu: None,
        remote: None,
        remote_cache_latency: ns(106),
    }
}

fn with_iommu(entries: u32, page_size: PageSize, walkers: u32) -> HostMemorySpec {
    HostMemorySpec {
        iommu: Some(IommuSpec {
            iotlb_entries: entries,
            page_size,
            walk_latency: ns(280),
            walkers,
            walk_occupancy: None,
        }),
        ..small()
    }
}

/// Whether a read of `addr`'s line, at a quiet time, hits (its latency is the hit latency).
fn hits(m: &mut HostMemory, addr: u64) -> bool {
    let now = ns(1_000_000);
    m.read(now, addr, 64) == now + ns(100)
}

#[test]
fn a_hit_costs_the_hit_latency_a_miss_the_dram_latency_and_reads_do_not_allocate() {
    let mut m = HostMemory::new(&small());
    assert_eq!(m.read(ns(10), 0, 64), ns(170));
    assert_eq!(
        m.read(ns(10), 0, 64),
        ns(170),
        "a device read does not fill the LLC"
    );
    m.warm(0, 64);
    assert_eq!(m.read(ns(10), 0, 64), ns(110));
    // Two lines, one warm and one not: the missing one decides.
    assert_eq!(m.read(ns(10), 32, 64), ns(170));
    m.flush();
    assert_eq!(m.read(ns(10), 0, 64), ns(170));
    let s = m.stats();
    assert_eq!((s.read_lines, s.read_hits), (6, 2));
}

#[test]
fn no_llc_every_read_is_a_dram_read() {
    let mut m = HostMemory::new(&HostMemorySpec {
        llc: None,
        ..small()
    });
    m.warm(0, 4096);
    assert_eq!(m.read(ns(0), 0, 64), ns(160));
    assert_eq!(m.write(ns(5), 0, 64), ns(5));
    assert_eq!(m.llc_lines(), (0, 0));
}

#[test]
fn a_warm_set_larger_than_the_llc_keeps_its_last_part() {
    let mut m = HostMemory::new(&small());
    let cap = 64 * KIB;
    m.warm(MIB, 3 * cap);
    assert_eq!(m.llc_lines(), (1024, 1024));
    let kept = (0..cap / 64)
        .filter(|i| hits(&mut m, MIB + 2 * cap + i * 64))
        .count();
    assert_eq!(kept, 1024, "the last 64 KiB stay");
    let early = (0..2 * cap / 64)
        .filter(|i| hits(&mut m, MIB + i * 64))
        .count();
    assert_eq!(early, 0);
}

#[test]
fn a_ddio_write_then_a_read_of_the_line_hits() {
    let mut m = HostMemory::new(&small());
    // A whole line: allocated with no DRAM access, in effect at once.
    assert_eq!(m.write(ns(10), 4096, 64), ns(10));
    assert_eq!(m.read(ns(20), 4096, 64), ns(120));
    // Part of a line: the rest comes from DRAM first, and a read waits for it.
    assert_eq!(m.write(ns(10), 8192, 8), ns(170));
    assert_eq!(m.read(ns(20), 8192, 64), ns(170));
    assert_eq!(m.read(ns(500), 8192, 64), ns(600));
    let s = m.stats();
    assert_eq!((s.write_lines, s.write_allocs, s.writebacks), (2, 2, 0));
}

#[test]
fn ddio_ways_hold_writes_up_to_their_share_and_spare_the_other_ways() {
    let mut m = HostMemory::new(&small());
    let cap = 64 * KIB;
    let ddio = cap / 4; // 4 of 16 ways
    m.warm(0, cap);
    // Write twice the DDIO share of new lines, in order.
    for i in 0..2 * ddio / 64 {
        m.write(ns(0), cap + i * 64, 64);
    }
    let first = (0..ddio / 64)
        .filter(|i| hits(&mut m, cap + i * 64))
        .count();
    let last = (0..ddio / 64)
        .filter(|i| hits(&mut m, cap + ddio + i * 64))
        .count();
    assert_eq!((first, last), (0, 256), "the DDIO ways keep the last share");
    let warm = (0..cap / 64).filter(|i| hits(&mut m, i * 64)).count();
    assert_eq!(warm, 768, "12 of 16 ways of the warm buffer stay");
    // The first share's lines were dirty when the second evicted them.
    assert_eq!(m.stats().writebacks, 256);
}

#[test]
fn without_write_allocation_writes_go_to_dram_but_update_cached_lines() {
    let mut spec = small();
    spec.llc.as_mut().unwrap().write_allocate = false;
    spec.dram_bandwidth = Some(1e9); // 1 byte per ns
    let mut m = HostMemory::new(&spec);
    assert_eq!(m.write(ns(0), 0, 64), ns(64));
    assert!(!hits(&mut m, 0));
    m.warm(4096, 64);
    assert_eq!(
        m.write(ns(2000), 4096, 64),
        ns(2000),
        "a hit updates in place"
    );
    assert!(hits(&mut m, 4096));
}

/// Fraction of IOTLB lookups that miss for `n` random 64-byte reads over `window` bytes,
/// after `n` reads to warm the IOTLB.
fn miss_rate(spec: &HostMemorySpec, window: u64, n: u64) -> f64 {
    let mut m = HostMemory::new(spec);
    let mut rng = Rng::new(1);
    let mut pick = || (rng.unit() * (window / 64) as f64) as u64 * 64;
    for _ in 0..n {
        m.read(ns(0), pick(), 64);
    }
    let before = m.stats();
    let mut now = ns(0);
    for _ in 0..n {
        now = m.read(now, pick(), 64);
    }
    let after = m.stats();
    (after.iotlb_misses - before.iotlb_misses) as f64
        / (after.iotlb_lookups - before.iotlb_lookups) as f64
}

#[test]
fn iotlb_reach_is_entries_times_page_size() {
    let spec = with_iommu(64, PageSize::Small, 5);
    let reach = 64 * 4 * KIB;
    assert_eq!(miss_rate(&spec, reach, 20_000), 0.0);
    assert_eq!(miss_rate(&spec, 128 * KIB, 20_000), 0.0);
    for window in [512 * KIB, MIB, 4 * MIB, 64 * MIB] {
        let expected = 1.0 - reach as f64 / window as f64;
        let got = miss_rate(&spec, window, 50_000);
        assert!(
            (got - expected).abs() < 0.02,
            "{window}: {got} vs {expected}"
        );
    }
    // 2 MiB pages reach 128 MiB: a 64 MiB window stops missing.
    let huge = with_iommu(64, PageSize::Huge, 5);
    assert_eq!(miss_rate(&huge, 64 * MIB, 20_000), 0.0);
}

#[test]
fn a_miss_costs_a_walk_and_an_access_during_the_walk_waits_for_it() {
    let mut m = HostMemory::new(&with_iommu(64, PageSize::Small, 5));
    m.warm(0, 64 * KIB);
    assert_eq!(m.read(ns(0), 0, 64), ns(380));
    assert_eq!(
        m.read(ns(100), 64, 64),
        ns(380),
        "same page: waits for its walk"
    );
    assert_eq!(m.read(ns(1000), 128, 64), ns(1100));
    // A read crossing into the next page walks that page too.
    assert_eq!(m.read(ns(2000), 4096 - 32, 64), ns(2380));
    let s = m.stats();
    assert_eq!((s.iotlb_lookups, s.iotlb_misses), (5, 2));
}

#[test]
fn walkers_serialise_misses_at_walkers_per_walk_latency() {
    for walkers in [1u32, 5] {
        let mut m = HostMemory::new(&with_iommu(64, PageSize::Small, walkers));
        // 1000 misses to distinct pages, all asked for at once.
        let last = (0..1000u64)
            .map(|p| m.read(ns(0), p * 4096, 64))
            .max()
            .unwrap();
        let walks = 1000u64.div_ceil(walkers as u64);
        assert_eq!(last, ns(walks * 280 + 160));
        let rate = 1000.0 / (last - ns(160)).as_secs_f64();
        let want = walkers as f64 / 280e-9;
        assert!((rate / want - 1.0).abs() < 0.01, "{rate} vs {want}");
        let mut out = Vec::new();
        m.resources(0, "rc", last, &mut out);
        assert_eq!(out.len(), 1);
    }
}

#[test]
fn a_walker_held_for_less_than_a_walk_gives_walkers_per_occupancy() {
    // Five walkers, each walk 280 ns but holding its walker 260 ns: 19.2 M walks/s (five
    // walkers held for whole walks give 17.9 M/s), each translation still 280 ns after its
    // walk starts.
    let mut spec = with_iommu(64, PageSize::Small, 5);
    spec.iommu.as_mut().unwrap().walk_occupancy = Some(ns(260));
    let mut m = HostMemory::new(&spec);
    let first = m.read(ns(0), 0, 64);
    assert_eq!(first, ns(280 + 160), "a lone miss waits the whole walk");
    let last = (1..1000u64)
        .map(|p| m.read(ns(0), p * 4096, 64))
        .max()
        .unwrap();
    // The 1000th walk starts when a walker frees for the 199th time: 199 x 260 ns.
    assert_eq!(last, ns(199 * 260 + 280 + 160));
    let rate = 1000.0 / (last - ns(280 + 160) + ns(260)).as_secs_f64();
    assert!((rate / (5.0 / 260e-9) - 1.0).abs() < 0.01, "{rate}");
}

#[test]
fn a_remote_socket_adds_its_latency_to_memory_accesses_only() {
    let remote = HostMemorySpec {
        remote: Some(RemoteSocketSpec {
            remote_latency: ns(53),
            socket_link_bandwidth: None,
        }),
        ..small()
    };
    let (mut near, mut far) = (HostMemory::new(&small()), HostMemory::new(&remote));
    for (addr, len) in [(0, 64), (4096, 2048), (100_000, 8)] {
        let t = ns(7);
        assert_eq!(far.read(t, addr, len), near.read(t, addr, len) + ns(53));
    }
    far.warm(0, 64);
    assert_eq!(
        far.read(ns(0), 0, 64),
        ns(100),
        "a line in the local LLC stays local"
    );
    // A whole-line write needs the line's ownership from the remote home.
    assert_eq!(far.write(ns(0), 8192, 64), ns(53));
    assert_eq!(near.write(ns(0), 8192, 64), ns(0));
}

#[test]
fn the_socket_link_caps_remote_bandwidth() {
    let spec = HostMemorySpec {
        llc: None,
        remote: Some(RemoteSocketSpec {
            remote_latency: ns(53),
            socket_link_bandwidth: Some(4e9),
        }),
        ..small()
    };
    let mut m = HostMemory::new(&spec);
    // 10 000 reads of 256 B asked for every 10 ns (25.6 GB/s offered).
    let mut last = SimTime::ZERO;
    for i in 0..10_000u64 {
        last = m.read(ns(10 * i), i * 256, 256);
    }
    let rate = 10_000.0 * 256.0 / last.as_secs_f64();
    assert!((rate / 4e9 - 1.0).abs() < 0.01, "{rate}");
    let mut out = Vec::new();
    m.resources(0, "rc", last, &mut out);
    assert_eq!(out.len(), 1, "the socket link only");
}

#[test]
fn reads_and_writes_share_the_memory_controller() {
    let spec = HostMemorySpec {
        llc: None,
        dram_bandwidth: Some(10e9),
        ..small()
    };
    let mut m = HostMemory::new(&spec);
    let (mut r, mut w) = (SimTime::ZERO, SimTime::ZERO);
    for i in 0..10_000u64 {
        r = m.read(ns(5 * i), i * 128, 128);
        w = m.write(ns(5 * i), (1 << 30) + i * 128, 128);
    }
    // 2.56 MB of reads and writes through 10 GB/s: 256 µs (reads also wait 160 ns).
    let end = r.max(w).as_secs_f64();
    assert!((end / 256e-6 - 1.0).abs() < 0.01, "{end}");
}

/// The times and counts of a random mix of accesses.
fn random_run(seed: u64, spec: &HostMemorySpec) -> (Vec<SimTime>, HostMemoryStats) {
    let mut m = HostMemory::new(spec);
    let mut rng = Rng::new(seed);
    m.warm(0, 8 * MIB);
    let mut now = SimTime::ZERO;
    let mut times = Vec::new();
    for _ in 0..20_000 {
        now += ns((rng.unit() * 20.0) as u64);
        let addr = (rng.unit() * (32 * MIB) as f64) as u64;
        let len = 1 + (rng.unit() * 512.0) as u32;
        times.push(if rng.chance(0.5) {
            m.read(now, addr, len)
        } else {
            m.write(now, addr, len)
        });
    }
    (times, m.stats())
}

fn everything() -> HostMemorySpec {
    HostMemorySpec {
        dram_bandwidth: Some(20e9),
        remote: Some(RemoteSocketSpec {
            remote_latency: ns(53),
            socket_link_bandwidth: Some(15e9),
        }),
        ..with_iommu(64, PageSize::Small, 5)
    }
}

#[test]
fn the_same_accesses_give_the_same_times() {
    let spec = everything();
    assert_eq!(random_run(3, &spec), random_run(3, &spec));
    assert_ne!(random_run(3, &spec).0, random_run(4, &spec).0);
}

/// Nanoseconds per access of `ops` (address, length, write) on `m`, one after another.
fn time_accesses(m: &mut HostMemory, ops: &[(u64, u32, bool)]) -> f64 {
    let start = std::time::Instant::now();
    let mut now = SimTime::ZERO;
    for &(addr, len, write) in ops {
        let done = if write {
            m.write(now, addr, len)
        } else {
            m.read(now, addr, len)
        };
        now = std::hint::black_box(done).max(now);
    }
    start.elapsed().as_secs_f64() * 1e9 / ops.len() as f64
}

/// Prints the cost of one access (run with `--release --nocapture`; not a timed test).
#[test]
fn cost_per_access() {
    let mut rng = Rng::new(9);
    let mut draw = |window: u64, max_len: f64| {
        (0..200_000)
            .map(|_| {
                let addr = (rng.unit() * window as f64) as u64;
                (addr, 1 + (rng.unit() * max_len) as u32, rng.chance(0.5))
            })
            .collect::<Vec<_>>()
    };
    let small_ops = draw(32 * MIB, 0.0);
    let big_ops = draw(32 * MIB, 511.0);
    for (what, spec) in [
        ("LLC", HostMemorySpec::default()),
        (
            "IOMMU only",
            HostMemorySpec {
                iommu: Some(IommuSpec::default()),
                llc: None,
                ..HostMemorySpec::default()
            },
        ),
        (
            "LLC+IOMMU",
            HostMemorySpec {
                iommu: Some(IommuSpec::default()),
                ..HostMemorySpec::default()
            },
        ),
        (
            "LLC+IOMMU+remote+DRAM bw",
            HostMemorySpec {
                iommu: Some(IommuSpec::default()),
                remote: Some(RemoteSocketSpec {
                    socket_link_bandwidth: Some(20e9),
                    ..RemoteSocketSpec::default()
                }),
                dram_bandwidth: Some(20e9),
                ..HostMemorySpec::default()
            },
        ),
    ] {
        let mut m = HostMemory::new(&spec);
        m.warm(0, 16 * MIB);
        let one = time_accesses(&mut m, &small_ops);
        let many = time_accesses(&mut m, &big_ops);
        println!(
            "host memory, {what}: {one:.1} ns per 1-byte access, {many:.1} ns per 1-512 B \
             access (random over 32 MiB, half writes, 25 MiB LLC)"
        );
    }
}

fn spec_strategy() -> impl Strategy<Value = HostMemorySpec> {
    (
        1u32..=16,
        0u32..=4,
        prop::bool::ANY,
        prop::option::of((1u32..=64, prop::bool::ANY, 1u32..=4)),
        prop::option::of(prop::option::of(1e8f64..1e11)),
        prop::option::of(1e8f64..1e11),
    )
        .prop_map(|(ways, ddio, alloc, mmu, remote, dram)| HostMemorySpec {
            dram_latency: ns(160),
            dram_bandwidth: dram,
            llc: Some(LlcSpec {
                capacity: 16 * KIB,
                ways,
                hit_latency: ns(90),
                write_latency: ns(0),
                ddio_ways: ddio.min(ways),
                write_allocate: alloc,
            }),
            iommu: mmu.map(|(entries, huge, walkers)| IommuSpec {
                iotlb_entries: entries,
                page_size: if huge {
                    PageSize::Huge
                } else {
                    PageSize::Small
                },
                walk_latency: ns(280),
                walkers,
                walk_occupancy: None,
            }),
            remote: remote.map(|bw| RemoteSocketSpec {
                remote_latency: ns(53),
                socket_link_bandwidth: bw,
            }),
            remote_cache_latency: ns(106),
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// A read never takes less than the hit latency, a write never takes effect before it
    /// arrived, and the LLC never holds more lines than it has.
    #[test]
    fn times_never_run_back_and_the_llc_stays_bounded(
        spec in spec_strategy(),
        ops in prop::collection::vec((0u64..20, 0u64..(1 << 22), 1u32..4096, 0u8..4), 1..300),
    ) {
        prop_assert!(spec.check().is_ok());
        let mut m = HostMemory::new(&spec);
        let (_, lines) = m.llc_lines();
        let mut now = SimTime::ZERO;
        for (step, addr, len, op) in ops {
            now += ns(step);
            match op {
                0 | 1 => prop_assert!(m.read(now, addr, len) >= now + ns(90)),
                2 => prop_assert!(m.write(now, addr, len) >= now),
                _ => m.warm(addr, len as u64),
            }
            let (held, most) = m.llc_lines();
            prop_assert!(held <= most && most == lines);
        }
        let s = m.stats();
        prop_assert!(s.read_hits <= s.read_lines && s.write_hits <= s.write_lines);
        prop_assert!(s.iotlb_misses <= s.iotlb_lookups);
    }
}

#[test]
fn the_other_sockets_cache_and_the_ddio_ways_warm_what_they_should() {
    let mut m = HostMemory::new(&small());
    // The other socket holds a 1 MiB buffer's last 64 KiB (an LLC as large as this one).
    m.warm_remote(0, MIB);
    assert_eq!(m.read(ns(0), MIB - 64, 64), ns(206), "hit + snoop");
    assert_eq!(m.read(ns(0), 0, 64), ns(160), "not held there: DRAM");
    // A partial write allocating a line held there takes the rest of it by the snoop, not
    // from DRAM; one not held there reads DRAM.
    assert_eq!(
        m.write(ns(0), MIB - 128, 4),
        ns(106),
        "partial, held remotely: snoop"
    );
    assert_eq!(m.write(ns(0), 0, 4), ns(160), "partial, not held: DRAM");
    assert_eq!(
        m.write(ns(0), MIB - 256, 64),
        ns(0),
        "whole line: ownership only"
    );
    // A device-warmed buffer sits in the 4 DDIO ways of 16: 16 KiB of the 64 KiB LLC.
    let mut d = HostMemory::new(&small());
    d.device_warm(0, 64 * KIB);
    assert!(hits(&mut d, 64 * KIB - 64));
    assert!(!hits(&mut d, 0));
    assert_eq!(d.llc_lines().0, 256);
}

#[test]
fn a_prefilled_iotlb_holds_the_last_pages_that_fit() {
    let mut m = HostMemory::new(&with_iommu(4, PageSize::Small, 1));
    m.warm_iotlb(0, 10 * 4096);
    // Pages 6..=9 are translated; page 5 walks.
    assert_eq!(m.read(ns(0), 9 * 4096, 64), ns(160));
    assert_eq!(m.read(ns(0), 6 * 4096, 64), ns(160));
    assert_eq!(m.read(ns(0), 5 * 4096, 64), ns(280 + 160));
    assert_eq!(m.stats().iotlb_misses, 1);
}
