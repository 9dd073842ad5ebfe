//! The IOMMU: a fully associative IOTLB with least-recently-used replacement, and a pool of
//! page walkers, each taking a fixed time per walk.
//!
//! A miss takes the walker that frees first and enters the IOTLB at once with the walk's end
//! as its ready time, so a later access to the same page waits for that walk instead of
//! starting another (hits under a miss merge). Device addresses map to the same host
//! addresses (the IOVA-to-physical mapping does not change which lines are touched).

use crate::engine::SimTime;
use crate::host_memory_spec::IommuSpec;

/// The page number of an empty entry.
const EMPTY: u64 = u64::MAX;

/// The IOTLB and the page walkers.
#[derive(Debug, Clone)]
pub(super) struct Iommu {
    /// log2 of the page size.
    pub(super) page_shift: u32,
    walk: SimTime,
    /// Per entry: the page number, or [`EMPTY`].
    pages: Vec<u64>,
    /// Per entry: when it was last used (0: empty).
    stamps: Vec<u64>,
    /// Per entry: when its walk ends.
    ready: Vec<SimTime>,
    clock: u64,
    /// Per walker: when it is free.
    walkers: Vec<SimTime>,
    /// Ticks of walking booked so far, all walkers together.
    busy: u64,
    /// Translations looked up (one per page an access touches).
    pub(super) lookups: u64,
    /// Lookups that missed and walked.
    pub(super) misses: u64,
}

impl Iommu {
    /// An IOMMU with an empty IOTLB and idle walkers.
    pub(super) fn new(spec: &IommuSpec) -> Self {
        let n = spec.iotlb_entries as usize;
        Iommu {
            page_shift: spec.page_size.shift(),
            walk: spec.walk_latency,
            pages: vec![EMPTY; n],
            stamps: vec![0; n],
            ready: vec![SimTime::ZERO; n],
            clock: 0,
            walkers: vec![SimTime::ZERO; spec.walkers as usize],
            busy: 0,
            lookups: 0,
            misses: 0,
        }
    }

    /// When the translation of `page`, asked for at `now`, is known: at once on a hit (or at
    /// the end of the walk already under way), else after a walk on the first free walker.
    #[inline]
    pub(super) fn translate(&mut self, now: SimTime, page: u64) -> SimTime {
        self.lookups += 1;
        self.clock += 1;
        if let Some(i) = self.pages.iter().position(|&p| p == page) {
            self.stamps[i] = self.clock;
            return self.ready[i].max(now);
        }
        self.misses += 1;
        let (mut w, mut free) = (0, self.walkers[0]);
        for (j, &f) in self.walkers.iter().enumerate().skip(1) {
            if f < free {
                (w, free) = (j, f);
            }
        }
        let done = now.max(free) + self.walk;
        self.walkers[w] = done;
        self.busy += self.walk.ticks();
        let mut victim = 0;
        for (j, &s) in self.stamps.iter().enumerate() {
            if s < self.stamps[victim] {
                victim = j;
            }
        }
        self.pages[victim] = page;
        self.stamps[victim] = self.clock;
        self.ready[victim] = done;
        done
    }

    /// Number of walkers.
    pub(super) fn walkers(&self) -> usize {
        self.walkers.len()
    }

    /// Ticks the walkers have walked by `t`, all together, for `t` at or after every
    /// lookup so far: a walker is busy without a gap from `t` to when it frees, because a
    /// walk starts at its lookup or when the walker's last walk ends.
    pub(super) fn busy_by(&self, t: SimTime) -> u64 {
        let lead: u64 = self
            .walkers
            .iter()
            .map(|f| f.saturating_sub(t).ticks())
            .sum();
        self.busy.saturating_sub(lead)
    }
}
