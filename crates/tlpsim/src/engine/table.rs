//! A vector for the simulator's hot tables, indexed without a bounds check in release
//! builds.
//!
//! The simulator indexes its channels, TLP slab, request slots, nodes and routing table
//! with numbers it created itself, millions of times a second; a bounds check on each
//! access cost about 8 % of the engine's instructions. A [`Table`] checks every index in
//! debug builds (every test run) and trusts it in release builds. Everything else is a
//! plain `Vec` (through `Deref`). The module is private to the crate: no index from outside
//! it can reach the unchecked access.

use std::ops::{Deref, DerefMut, Index, IndexMut};

/// A `Vec` whose `[i]` is checked only in debug builds.
#[derive(Debug, Clone, Default)]
pub struct Table<T>(Vec<T>);

impl<T> Table<T> {
    /// An empty table.
    pub fn new() -> Self {
        Table(Vec::new())
    }
}

/// Puts `item` in an entry of `items` that `free` lists as reusable, or at the end; returns
/// its index ([`Pool::place`]).
#[inline(always)]
fn place<T>(items: &mut Vec<T>, free: &mut Vec<u32>, item: T) -> u32 {
    match free.pop() {
        Some(i) => {
            items[i as usize] = item;
            i
        }
        None => {
            items.push(item);
            (items.len() - 1) as u32
        }
    }
}

/// A slab: a [`Table`] whose freed entries are listed for reuse. The simulator's slabs (TLPs,
/// read requests, DMA transfers, NVMe I/Os and reads, media writes, CPU register writes)
/// are pools.
#[derive(Debug, Clone, Default)]
pub struct Pool<T> {
    items: Table<T>,
    free: Vec<u32>,
}

impl<T> Pool<T> {
    /// An empty pool.
    pub fn new() -> Self {
        Pool {
            items: Table::new(),
            free: Vec::new(),
        }
    }

    /// Puts `item` in a freed entry, or at the end; returns its index.
    #[inline(always)]
    pub fn place(&mut self, item: T) -> u32 {
        place(&mut self.items, &mut self.free, item)
    }

    /// Entry `i` is free for reuse.
    #[inline(always)]
    pub fn release(&mut self, i: u32) {
        self.free.push(i);
    }

    /// The entries free for reuse.
    pub fn free_slots(&self) -> &[u32] {
        &self.free
    }
}

impl<T> Deref for Pool<T> {
    type Target = Table<T>;
    fn deref(&self) -> &Table<T> {
        &self.items
    }
}

impl<T> DerefMut for Pool<T> {
    fn deref_mut(&mut self) -> &mut Table<T> {
        &mut self.items
    }
}

impl<T> Deref for Table<T> {
    type Target = Vec<T>;
    fn deref(&self) -> &Vec<T> {
        &self.0
    }
}

impl<T> DerefMut for Table<T> {
    fn deref_mut(&mut self) -> &mut Vec<T> {
        &mut self.0
    }
}

impl<T> From<Vec<T>> for Table<T> {
    fn from(v: Vec<T>) -> Self {
        Table(v)
    }
}

impl<T> FromIterator<T> for Table<T> {
    fn from_iter<I: IntoIterator<Item = T>>(iter: I) -> Self {
        Table(iter.into_iter().collect())
    }
}

impl<T> Index<usize> for Table<T> {
    type Output = T;
    #[inline(always)]
    fn index(&self, i: usize) -> &T {
        assert!(
            !cfg!(debug_assertions) || i < self.0.len(),
            "{}",
            oob(i, self.0.len())
        );
        // SAFETY: every index the simulator uses is one it took from this table's own
        // length (a slab entry, a channel, node or request number it created); debug
        // builds, which run every test, check that above.
        unsafe { self.0.get_unchecked(i) }
    }
}

impl<T> IndexMut<usize> for Table<T> {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut T {
        assert!(
            !cfg!(debug_assertions) || i < self.0.len(),
            "{}",
            oob(i, self.0.len())
        );
        // SAFETY: as for `index`.
        unsafe { self.0.get_unchecked_mut(i) }
    }
}

/// The message of an index past the end (debug builds).
#[cold]
fn oob(i: usize, len: usize) -> String {
    format!("table index {i} out of range (length {len})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_like_a_vec() {
        let mut t: Table<u32> = vec![1, 2, 3].into();
        t[1] = 7;
        assert_eq!((t[0], t[1], t[2], t.len()), (1, 7, 3, 3));
        t.push(4);
        assert_eq!(t.iter().sum::<u32>(), 15);
    }

    #[test]
    #[cfg(debug_assertions)]
    #[should_panic(expected = "table index 3 out of range (length 3)")]
    fn an_index_past_the_end_panics_in_debug_builds() {
        let t: Table<u32> = vec![1, 2, 3].into();
        let _ = t[3];
    }
}
