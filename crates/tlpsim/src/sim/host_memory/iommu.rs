//! The IOMMU: a fully associative IOTLB with least-recently-used replacement, and a pool of
//! page walkers: a walk takes a fixed time and holds its walker for a fixed time (the whole
//! walk by default; less where a walker overlaps the page-table reads of walks in turn).
//!
//! A miss takes the walker that frees first and enters the IOTLB at once with the walk's end
//! as its ready time, so a later access to the same page waits for that walk instead of
//! starting another (hits under a miss merge). Device addresses map to the same host
//! addresses (the IOVA-to-physical mapping does not change which lines are touched).
//!
//! The IOTLB finds a page in constant time: an open-addressing table (linear probing, at
//! most half full, deletion by backward shift) from page to entry, and the entries in a
//! doubly linked list from most to least recently used.

use crate::engine::SimTime;
use crate::host_memory_spec::IommuSpec;

/// No entry (an empty table slot, the end of the list).
const NIL: u32 = u32::MAX;

/// One IOTLB entry.
#[derive(Debug, Clone, Copy)]
struct Entry {
    /// Its page number.
    page: u64,
    /// When its walk ends.
    ready: SimTime,
    /// The next more recently used entry.
    prev: u32,
    /// The next less recently used entry.
    next: u32,
}

/// The IOTLB and the page walkers.
#[derive(Debug, Clone)]
pub(super) struct Iommu {
    /// log2 of the page size.
    pub(super) page_shift: u32,
    walk: SimTime,
    /// How long a walk holds its walker.
    occupancy: SimTime,
    /// The entries in use are the first `used`.
    entries: Vec<Entry>,
    used: usize,
    /// Most and least recently used entries.
    head: u32,
    tail: u32,
    /// Open-addressing table: entry index or [`NIL`].
    slots: Vec<u32>,
    /// log2 of the table's size.
    slot_bits: u32,
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
        let table = (2 * n).next_power_of_two().max(4);
        let empty = Entry {
            page: 0,
            ready: SimTime::ZERO,
            prev: NIL,
            next: NIL,
        };
        Iommu {
            page_shift: spec.page_size.shift(),
            walk: spec.walk_latency,
            occupancy: spec.walk_occupancy.unwrap_or(spec.walk_latency),
            entries: vec![empty; n],
            used: 0,
            head: NIL,
            tail: NIL,
            slots: vec![NIL; table],
            slot_bits: table.trailing_zeros(),
            walkers: vec![SimTime::ZERO; spec.walkers as usize],
            busy: 0,
            lookups: 0,
            misses: 0,
        }
    }

    /// The table slot `page` hashes to.
    #[inline]
    fn home(&self, page: u64) -> usize {
        (page.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - self.slot_bits)) as usize
    }

    /// The slot holding `page`'s entry, or the empty slot where it would go.
    #[inline]
    fn probe(&self, page: u64) -> usize {
        let mask = self.slots.len() - 1;
        let mut s = self.home(page);
        while self.slots[s] != NIL && self.entries[self.slots[s] as usize].page != page {
            s = (s + 1) & mask;
        }
        s
    }

    /// Takes the slot `s` out of the table, moving later entries of its probe run back.
    fn remove_slot(&mut self, s: usize) {
        let mask = self.slots.len() - 1;
        let (mut hole, mut j) = (s, s);
        loop {
            j = (j + 1) & mask;
            let e = self.slots[j];
            if e == NIL {
                break;
            }
            let home = self.home(self.entries[e as usize].page);
            // It stays if its home lies cyclically in (hole, j].
            let stays = if hole <= j {
                hole < home && home <= j
            } else {
                hole < home || home <= j
            };
            if !stays {
                self.slots[hole] = e;
                hole = j;
            }
        }
        self.slots[hole] = NIL;
    }

    /// Takes entry `e` out of the recency list.
    #[inline]
    fn unlink(&mut self, e: u32) {
        let Entry { prev, next, .. } = self.entries[e as usize];
        match prev {
            NIL => self.head = next,
            p => self.entries[p as usize].next = next,
        }
        match next {
            NIL => self.tail = prev,
            n => self.entries[n as usize].prev = prev,
        }
    }

    /// Puts entry `e` at the front of the recency list.
    #[inline]
    fn push_front(&mut self, e: u32) {
        self.entries[e as usize].prev = NIL;
        self.entries[e as usize].next = self.head;
        match self.head {
            NIL => self.tail = e,
            h => self.entries[h as usize].prev = e,
        }
        self.head = e;
    }

    /// When the translation of `page`, asked for at `now`, is known: at once on a hit (or at
    /// the end of the walk already under way), else after a walk on the first free walker.
    #[inline]
    pub(super) fn translate(&mut self, now: SimTime, page: u64) -> SimTime {
        self.lookups += 1;
        let s = self.probe(page);
        if self.slots[s] != NIL {
            let e = self.slots[s];
            if self.head != e {
                self.unlink(e);
                self.push_front(e);
            }
            return self.entries[e as usize].ready.max(now);
        }
        self.misses += 1;
        let (mut w, mut free) = (0, self.walkers[0]);
        for (j, &f) in self.walkers.iter().enumerate().skip(1) {
            if f < free {
                (w, free) = (j, f);
            }
        }
        let start = now.max(free);
        let done = start + self.walk;
        self.walkers[w] = start + self.occupancy;
        self.busy += self.occupancy.ticks();
        self.insert(page, done);
        done
    }

    /// Enters `page`, not in the IOTLB, as its most recently used entry, valid from `ready`
    /// (the least recently used entry leaves when it is full).
    fn insert(&mut self, page: u64, ready: SimTime) {
        let e = if self.used < self.entries.len() {
            self.used += 1;
            (self.used - 1) as u32
        } else {
            let e = self.tail;
            let old = self.probe(self.entries[e as usize].page);
            self.remove_slot(old);
            self.unlink(e);
            e
        };
        self.entries[e as usize].page = page;
        self.entries[e as usize].ready = ready;
        self.push_front(e);
        let s = self.probe(page);
        self.slots[s] = e;
    }

    /// Translations of `pages`, in order, known before the run (no walk, not counted): the
    /// IOTLB ends holding the last of them that fit, the last the most recently used.
    pub(super) fn prefill(&mut self, pages: std::ops::RangeInclusive<u64>) {
        let n = self.entries.len() as u64;
        let first = (*pages.start()).max(pages.end().saturating_sub(n - 1));
        for page in first..=*pages.end() {
            let s = self.probe(page);
            if self.slots[s] == NIL {
                self.insert(page, SimTime::ZERO);
            } else {
                let e = self.slots[s];
                if self.head != e {
                    self.unlink(e);
                    self.push_front(e);
                }
            }
        }
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
