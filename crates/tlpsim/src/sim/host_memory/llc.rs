//! The last-level cache: set-associative, least recently used within a set, with the DDIO
//! ways device writes may allocate into.
//!
//! A line's set is its line number modulo the number of sets (the physical index bits; no
//! slice hash), so a contiguous buffer spreads over the sets evenly and the last `capacity`
//! bytes touched in order stay. Ways `0..ddio_ways` of every set are the DDIO ways. Each
//! line costs 24 bytes (tag with its dirty bit, recency stamp, the time a write to it takes
//! effect), all allocated when the cache is built.

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
}

impl Llc {
    /// An empty cache as `spec` describes it.
    pub(super) fn new(spec: &LlcSpec) -> Self {
        let ways = spec.ways as usize;
        let sets = (spec.capacity / (LINE_BYTES * ways as u64)).max(1);
        let lines = sets as usize * ways;
        Llc {
            sets,
            ways,
            ddio_ways: spec.ddio_ways as usize,
            write_allocate: spec.write_allocate && spec.ddio_ways > 0,
            tags: vec![EMPTY; lines],
            stamps: vec![0; lines],
            ready: vec![0; lines],
            clock: 0,
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

    /// The first way of `line`'s set.
    #[inline]
    fn set_base(&self, line: u64) -> usize {
        (line % self.sets) as usize * self.ways
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
        let i = self.find(self.set_base(line), line)?;
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

    /// The host CPU touches `line`: it becomes the most recently used, allocated in any way
    /// if absent (a clean line; the victim's write-back is not timed).
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
    }
}
