//! The last-level cache: set-associative, least recently used within a set, with the DDIO
//! ways device writes may allocate into.
//!
//! A line's set is its line number modulo the number of sets (the physical index bits; no
//! slice hash), so a contiguous buffer spreads over the sets evenly and the last `capacity`
//! bytes touched in order stay. Ways `0..ddio_ways` of every set are the DDIO ways. Each
//! line costs 24 bytes (tag with its dirty bit, recency stamp, the time a write to it takes
//! effect), all allocated when the cache is built. A dropped cache's storage is cleared and
//! kept for the next cache of its size built on the same thread ([`SPARE`]): short runs with
//! a large LLC (pcie-bench's cells, thousands per `tlpsim validate`) would otherwise spend
//! more time on the page faults of fresh zeroed memory than on simulating.

use std::cell::RefCell;

use crate::engine::SimTime;
use crate::host_memory_spec::{LlcSpec, LINE_BYTES};

/// The tag of an empty way (a line's tag is its number plus one, so that a new cache is
/// all zeros: the pages of a large LLC stay untouched until a set is used).
const EMPTY: u64 = 0;
/// The bit of a tag that marks the line dirty (written by a device, not yet in DRAM).
const DIRTY: u64 = 1 << 63;

/// The tag of `line`.
#[inline]
fn tag(line: u64) -> u64 {
    line + 1
}

/// Most ways a cache may have for its storage to be kept for reuse when it is dropped (64 MiB
/// of storage).
const SPARE_MAX_LINES: usize = (64 << 20) / 24;

/// A cache's storage: per way, tag, recency stamp and ready time (see [`Llc`]).
#[derive(Debug, Clone, Default)]
struct Store {
    tags: Vec<u64>,
    stamps: Vec<u64>,
    ready: Vec<u64>,
}

thread_local! {
    /// The storage of the last cache this thread dropped, all zeros again, for the next one
    /// of its size.
    static SPARE: RefCell<Store> = RefCell::new(Store::default());
}

impl Store {
    /// `lines` empty ways: the spare storage if it has that size, else fresh zeroed memory.
    fn empty(lines: usize) -> Self {
        let spare = SPARE
            .try_with(|s| {
                let mut s = s.borrow_mut();
                (s.tags.len() == lines).then(|| std::mem::take(&mut *s))
            })
            .ok()
            .flatten();
        if let Some(store) = spare {
            debug_assert!(store.tags.iter().all(|&t| t == EMPTY));
            debug_assert!(store.stamps.iter().chain(&store.ready).all(|&v| v == 0));
            return store;
        }
        Store {
            tags: vec![EMPTY; lines],
            stamps: vec![0; lines],
            ready: vec![0; lines],
        }
    }
}

/// What a device write found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum WriteLookup {
    /// The line is in the cache (way index): the write updates it in place.
    Hit(usize),
    /// The line was allocated in a DDIO way (index), evicting a dirty line if `writeback`.
    Allocated {
        /// The way's index in the cache.
        way: usize,
        /// The victim was dirty: its 64 bytes go back to DRAM.
        writeback: bool,
    },
    /// Not in the cache and not allocated: the write goes to DRAM.
    Bypass,
}

/// The last-level cache's lines.
#[derive(Debug, Clone)]
pub(super) struct Llc {
    sets: u64,
    ways: usize,
    ddio_ways: usize,
    write_allocate: bool,
    /// Per way (set-major): the line number, with [`DIRTY`], or [`EMPTY`].
    tags: Vec<u64>,
    /// Per way: when it was last used (0: empty; larger is more recent).
    stamps: Vec<u64>,
    /// Per way: when the last write to the line takes effect (a read waits for it), in
    /// ticks.
    ready: Vec<u64>,
    /// The recency clock.
    clock: u64,
    /// The lowest and highest set used so far (`lo > hi`: none), which are all that
    /// [`Drop`] clears.
    used: (u64, u64),
}

impl Drop for Llc {
    /// Clears the sets used and keeps the storage for the next cache of its size built on
    /// this thread. A set's filled ways are always its first ones (an allocation takes the
    /// first empty way of its range, and ways never empty again), so clearing stops at a
    /// set's first empty way.
    fn drop(&mut self) {
        if self.tags.len() > SPARE_MAX_LINES {
            return;
        }
        let (lo, hi) = self.used;
        for set in lo..hi.saturating_add(1) {
            let base = set as usize * self.ways;
            for i in base..base + self.ways {
                if self.tags[i] == EMPTY {
                    break;
                }
                (self.tags[i], self.stamps[i], self.ready[i]) = (EMPTY, 0, 0);
            }
        }
        let store = Store {
            tags: std::mem::take(&mut self.tags),
            stamps: std::mem::take(&mut self.stamps),
            ready: std::mem::take(&mut self.ready),
        };
        let _ = SPARE.try_with(|s| *s.borrow_mut() = store);
    }
}

impl Llc {
    /// An empty cache as `spec` describes it.
    pub(super) fn new(spec: &LlcSpec) -> Self {
        let ways = spec.ways as usize;
        let sets = (spec.capacity / (LINE_BYTES * ways as u64)).max(1);
        let store = Store::empty(sets as usize * ways);
        Llc {
            sets,
            ways,
            ddio_ways: spec.ddio_ways as usize,
            write_allocate: spec.write_allocate && spec.ddio_ways > 0,
            tags: store.tags,
            stamps: store.stamps,
            ready: store.ready,
            clock: 0,
            used: (u64::MAX, 0),
        }
    }

    /// Lines it holds at most.
    pub(super) fn capacity_lines(&self) -> usize {
        self.tags.len()
    }

    /// Lines it holds now.
    #[cfg(test)]
    pub(super) fn occupied_lines(&self) -> usize {
        self.tags.iter().filter(|&&t| t != EMPTY).count()
    }

    /// The first way of `line`'s set, noted as used.
    #[inline]
    fn set_base(&mut self, line: u64) -> usize {
        let set = line % self.sets;
        self.used = (self.used.0.min(set), self.used.1.max(set));
        set as usize * self.ways
    }

    /// The way holding `line` in the set starting at `base`, if any.
    #[inline]
    fn find(&self, base: usize, line: u64) -> Option<usize> {
        self.tags[base..base + self.ways]
            .iter()
            .position(|&t| t & !DIRTY == tag(line))
            .map(|w| base + w)
    }

    /// Marks way `i` the most recently used.
    #[inline]
    fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.stamps[i] = self.clock;
    }

    /// The least recently used of ways `base..base + n` (an empty one first).
    #[inline]
    fn victim(&self, base: usize, n: usize) -> usize {
        let stamps = &self.stamps[base..base + n];
        let mut best = 0;
        for (w, &s) in stamps.iter().enumerate() {
            if s < stamps[best] {
                best = w;
            }
        }
        base + best
    }

    /// A device read of `line`: when its data is valid if it hits (the line becomes the most
    /// recently used), None on a miss (device reads do not allocate).
    #[inline]
    pub(super) fn read(&mut self, line: u64) -> Option<SimTime> {
        let base = self.set_base(line);
        let i = self.find(base, line)?;
        self.touch(i);
        Some(SimTime::from_ticks(self.ready[i]))
    }

    /// A device write of `line` (DDIO): a hit updates the line wherever it is; a miss
    /// allocates the least recently used DDIO way when write allocation is on.
    #[inline]
    pub(super) fn write(&mut self, line: u64) -> WriteLookup {
        let base = self.set_base(line);
        if let Some(i) = self.find(base, line) {
            self.tags[i] |= DIRTY;
            self.touch(i);
            return WriteLookup::Hit(i);
        }
        if !self.write_allocate {
            return WriteLookup::Bypass;
        }
        let i = self.victim(base, self.ddio_ways);
        let writeback = self.tags[i] != EMPTY && self.tags[i] & DIRTY != 0;
        self.tags[i] = tag(line) | DIRTY;
        self.touch(i);
        WriteLookup::Allocated { way: i, writeback }
    }

    /// Sets when the write to the line in way `i` takes effect.
    #[inline]
    pub(super) fn set_ready(&mut self, i: usize, at: SimTime) {
        self.ready[i] = at.ticks();
    }

    /// Puts lines `first..=last` in the cache, in order, each as the host CPU touching it
    /// (`ddio` false: the most recently used, allocated in any way if absent, clean) or as a
    /// device having written it before the run (`ddio` true: allocated in the least recently
    /// used DDIO way if absent, clean; without DDIO ways only a line already there is
    /// touched). Untimed: it sets up the state a run starts from (pcie-bench's HWarm and
    /// DWarm).
    ///
    /// The state is the same as putting one line after the other, in time proportional to
    /// the sets touched rather than the lines: the k-th line is stamped `clock + k + 1`; a
    /// set that holds none of the lines takes its misses in the order of its ways' stamps,
    /// over and over, so only its last lines (as many as it has ways to allocate) are
    /// written (an empty set's ways in order, unsorted); a set that holds one of them takes
    /// its lines one by one.
    pub(super) fn fill(&mut self, first: u64, last: u64, ddio: bool) {
        let ways = if ddio { self.ddio_ways } else { self.ways };
        if ways == 0 {
            for line in first..=last {
                let base = self.set_base(line);
                if let Some(i) = self.find(base, line) {
                    self.touch(i);
                }
            }
            return;
        }
        let (clock, sets) = (self.clock, self.sets);
        let stamp = |line: u64| clock + (line - first) + 1;
        let mut order = Vec::with_capacity(ways);
        for f in first..first + (last - first + 1).min(sets) {
            let base = self.set_base(f);
            let count = (last - f) / sets + 1;
            if self.tags[base] == EMPTY {
                // An empty set (filled ways come first): its ways, all stamped 0, in order.
                for j in count.saturating_sub(ways as u64)..count {
                    let (i, line) = (base + (j % ways as u64) as usize, f + j * sets);
                    (self.tags[i], self.stamps[i], self.ready[i]) = (tag(line), stamp(line), 0);
                }
                continue;
            }
            let held = self.tags[base..base + self.ways]
                .iter()
                .any(|&t| t & !DIRTY != EMPTY && (first..=last).contains(&((t & !DIRTY) - 1)));
            if held {
                for line in (0..count).map(|j| f + j * sets) {
                    self.put(base, line, ways, stamp(line));
                }
                continue;
            }
            order.clear();
            order.extend(base..base + ways);
            order.sort_by_key(|&i| (self.stamps[i], i));
            for j in count.saturating_sub(ways as u64)..count {
                let (i, line) = (order[(j % ways as u64) as usize], f + j * sets);
                (self.tags[i], self.stamps[i], self.ready[i]) = (tag(line), stamp(line), 0);
            }
        }
        self.clock = clock + (last - first + 1);
    }

    /// Puts `line` of the set starting at `base` with recency `stamp`: where it is, or in the
    /// least recently used of the set's first `ways` ways, clean.
    fn put(&mut self, base: usize, line: u64, ways: usize, stamp: u64) {
        let i = match self.find(base, line) {
            Some(i) => i,
            None => {
                let i = self.victim(base, ways);
                (self.tags[i], self.ready[i]) = (tag(line), 0);
                i
            }
        };
        self.stamps[i] = stamp;
    }

    /// The host CPU touches `line`: it becomes the most recently used, allocated in any way
    /// if absent (a clean line; the victim's write-back is not timed). [`Llc::fill`] one
    /// line at a time.
    #[cfg(test)]
    pub(super) fn warm(&mut self, line: u64) {
        let base = self.set_base(line);
        let i = match self.find(base, line) {
            Some(i) => i,
            None => {
                let i = self.victim(base, self.ways);
                self.tags[i] = tag(line);
                self.ready[i] = 0;
                i
            }
        };
        self.touch(i);
    }

    /// A device wrote `line` before the run (pcie-bench's DWarm): it is in a DDIO way (the
    /// least recently used one of its set), clean, the most recently used. Untimed.
    /// [`Llc::fill`] one line at a time.
    #[cfg(test)]
    pub(super) fn device_warm(&mut self, line: u64) {
        let base = self.set_base(line);
        let i = match self.find(base, line) {
            Some(i) => i,
            None if self.ddio_ways == 0 => return,
            None => {
                let i = self.victim(base, self.ddio_ways);
                self.tags[i] = tag(line);
                self.ready[i] = 0;
                i
            }
        };
        self.touch(i);
    }

    /// Empties the cache (pcie-bench's Cold: the host thrashed it; dirty lines are dropped
    /// untimed). New zeroed storage: no page is touched until a set is used again.
    #[cfg(test)]
    pub(super) fn flush(&mut self) {
        let lines = self.tags.len();
        self.tags = vec![EMPTY; lines];
        self.stamps = vec![0; lines];
        self.ready = vec![0; lines];
        self.clock = 0;
        self.used = (u64::MAX, 0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A cache of `sets` sets of `ways` ways, `ddio` of them DDIO ways.
    fn cache(sets: u64, ways: u32, ddio: u32) -> Llc {
        Llc::new(&LlcSpec {
            capacity: sets * ways as u64 * LINE_BYTES,
            ways,
            hit_latency: SimTime::ZERO,
            write_latency: SimTime::ZERO,
            ddio_ways: ddio,
            write_allocate: true,
        })
    }

    /// The next of a small linear congruential sequence.
    fn next(x: &mut u64) -> u64 {
        *x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        *x >> 33
    }

    fn state(c: &Llc) -> (Vec<u64>, Vec<u64>, Vec<u64>, u64) {
        (c.tags.clone(), c.stamps.clone(), c.ready.clone(), c.clock)
    }

    #[test]
    fn a_fill_leaves_the_state_that_one_line_at_a_time_leaves() {
        let mut x = 7;
        for case in 0..3000 {
            let sets = 1 + next(&mut x) % 6;
            let ways = 1 + (next(&mut x) % 5) as u32;
            let ddio = (next(&mut x) % (ways as u64 + 1)) as u32;
            let mut c = cache(sets, ways, ddio);
            // Some lines there already: read, written (dirty), warmed.
            for _ in 0..next(&mut x) % 40 {
                let line = next(&mut x) % 64;
                match next(&mut x) % 4 {
                    0 => {
                        let _ = c.read(line);
                    }
                    1 => {
                        if let WriteLookup::Allocated { way, .. } = c.write(line) {
                            c.set_ready(way, SimTime::from_ticks(next(&mut x)));
                        }
                    }
                    2 => c.warm(line),
                    _ => c.device_warm(line),
                }
            }
            let first = next(&mut x) % 64;
            let last = first + next(&mut x) % 80;
            let ddio_fill = case % 2 == 1;
            let mut by_line = c.clone();
            for line in first..=last {
                if ddio_fill {
                    by_line.device_warm(line);
                } else {
                    by_line.warm(line);
                }
            }
            c.fill(first, last, ddio_fill);
            assert_eq!(state(&c), state(&by_line), "case {case}");
        }
    }

    #[test]
    fn a_cache_built_after_one_was_dropped_starts_empty() {
        let mut c = cache(64, 8, 2);
        c.fill(0, 1000, false);
        c.fill(5000, 5100, true);
        let _ = c.write(77_777);
        drop(c);
        let c = cache(64, 8, 2);
        assert_eq!(c.occupied_lines(), 0);
        assert!(c.stamps.iter().chain(&c.ready).all(|&v| v == 0));
    }
}
