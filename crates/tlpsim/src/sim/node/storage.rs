//! Storage HBAs: a DMA requester whose storage reads leave as MWr toward host memory once its
//! drives have read the data, and whose storage writes arrive as CplD that its drives absorb
//! (the [`Media`]: one resource serving reads and writes in turn, or both at once).

use super::requester::Port;
use super::{Context, Node, NodeEv};
use crate::engine::table::Pool;
use crate::engine::SimTime;
use crate::fabric::MediaSpec;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::Tlp;

/// A storage HBA: read tags like a DMA engine, and the drives behind it.
#[derive(Debug)]
pub(in crate::sim) struct StorageHba {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
    /// Its drives.
    pub(in crate::sim) drives: Drives,
}

/// The drives behind a storage HBA and the storage writes they are finishing.
#[derive(Debug)]
pub(in crate::sim) struct Drives {
    /// The drives.
    pub(in crate::sim) media: Media,
    /// (flow, transfer slot) of storage writes whose media time is still running, by the
    /// index their `NodeEv::MediaDone` carries; free entries.
    writes: Pool<(u32, u32)>,
}

impl Drives {
    /// Flow `f`'s storage write in transfer slot `slot` runs until the media is done with
    /// it: the index its `NodeEv::MediaDone` carries.
    pub(in crate::sim) fn finishing(&mut self, f: u32, slot: u32) -> u32 {
        self.writes.place((f, slot))
    }
}

impl StorageHba {
    /// An HBA with `tags` read tags and the drives `spec` describes.
    pub(in crate::sim) fn new(tags: u32, spec: &MediaSpec) -> Self {
        StorageHba {
            free_tags: tags,
            drives: Drives {
                media: Media::new(spec),
                writes: Pool::new(),
            },
        }
    }

    /// Its tags and drives, lent to the flow code of its flows.
    #[inline(always)]
    pub(in crate::sim) fn port(&mut self) -> Port<'_> {
        Port {
            tags: &mut self.free_tags,
            engines: None,
            drives: Some(&mut self.drives),
        }
    }
}

impl Node for StorageHba {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime) {
        cx.flow_received(self.port(), c, id, t, head);
    }

    #[inline(always)]
    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, start: SimTime) {
        cx.flow_left(self.port(), id, start);
    }

    #[inline(always)]
    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, c: u32) {
        cx.flow_written(t, c);
    }

    /// A storage write's media time is over: its transfer slot takes the next I/O.
    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        let NodeEv::MediaDone(i) = ev else {
            return;
        };
        let (f, slot) = self.drives.writes[i as usize];
        self.drives.writes.release(i);
        cx.media_write_done(self.port(), f, slot);
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        let m = &self.drives.media;
        if m.duplex {
            let sides = [
                (UsedBy::Writes, "read", &m.read),
                (UsedBy::Reads, "write", &m.write),
            ];
            for (used_by, what, th) in sides {
                out.push(th.resource(n, used_by, "media", format!("{name} media ({what})"), t));
            }
        } else {
            out.push(Resource::of_node(
                n,
                UsedBy::Every,
                "media",
                format!("{name} media"),
                m.read.busy_by(t) + m.write.busy_by(t),
                None,
            ));
        }
    }
}

/// The drives behind a storage endpoint: one resource serving reads and writes in turn.
#[derive(Debug, Clone, Copy)]
pub(in crate::sim) struct Media {
    pub(in crate::sim) read: Throttle,
    pub(in crate::sim) write: Throttle,
    turnaround: SimTime,
    seek: SimTime,
    pub(in crate::sim) duplex: bool,
    free_at: SimTime,
    /// Whether the last work was a read (None before any).
    last_read: Option<bool>,
}

impl Media {
    fn new(spec: &MediaSpec) -> Self {
        Media {
            read: Throttle::new(spec.read),
            write: Throttle::new(spec.write),
            turnaround: spec.turnaround,
            seek: spec.seek,
            duplex: spec.duplex,
            free_at: SimTime::ZERO,
            last_read: None,
        }
    }

    /// An I/O starts at `t`: a shared media pays its turnaround when the direction changes,
    /// and a random I/O its seek.
    pub(in crate::sim) fn begin_io(&mut self, t: SimTime, read: bool, random: bool) {
        let seek = if random { self.seek } else { SimTime::ZERO };
        if self.duplex {
            let th = if read {
                &mut self.read
            } else {
                &mut self.write
            };
            th.free_at = t.max(th.free_at) + seek;
            th.busy += seek.ticks();
            return;
        }
        let mut penalty = seek;
        if self.last_read.is_some_and(|r| r != read) {
            penalty += self.turnaround;
        }
        self.last_read = Some(read);
        self.free_at = t.max(self.free_at) + penalty;
        // The drives are busy seeking and turning around too (counted on the I/O's side).
        if read {
            self.read.busy += penalty.ticks();
        } else {
            self.write.busy += penalty.ticks();
        }
    }

    /// The media reads (`read`) or writes `bytes` from `t` on; returns when it is done.
    pub(in crate::sim) fn pass(&mut self, t: SimTime, bytes: u32, read: bool) -> SimTime {
        if self.duplex {
            let th = if read {
                &mut self.read
            } else {
                &mut self.write
            };
            return th.pass(t, bytes);
        }
        let start = t.max(self.free_at);
        let th = if read {
            &mut self.read
        } else {
            &mut self.write
        };
        th.free_at = start;
        self.free_at = th.pass(start, bytes);
        self.free_at
    }
}
