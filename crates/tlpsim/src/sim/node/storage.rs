//! Storage HBAs: a DMA requester whose storage reads leave as MWr toward host memory once its
//! drives have read the data, and whose storage writes arrive as CplD that its drives absorb
//! (the [`Media`]: one resource serving reads and writes in turn, or both at once).

use super::{AnyNode, LegacyNode, NodeEv};
use crate::engine::table::Pool;
use crate::engine::SimTime;
use crate::fabric::MediaSpec;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::{Ev, Simulator, Tlp};

/// A storage HBA: read tags like a DMA engine, and the drives behind it.
#[derive(Debug)]
pub(in crate::sim) struct StorageHba {
    /// Read tags not in use.
    pub(in crate::sim) free_tags: u32,
    /// Its drives.
    pub(in crate::sim) media: Media,
    /// (flow, transfer slot) of storage writes whose media time is still running, by the
    /// index their `NodeEv::MediaDone` carries; free entries.
    media_writes: Pool<(u32, u32)>,
}

impl StorageHba {
    /// An HBA with `tags` read tags and the drives `spec` describes.
    pub(in crate::sim) fn new(tags: u32, spec: &MediaSpec) -> Self {
        StorageHba {
            free_tags: tags,
            media: Media::new(spec),
            media_writes: Pool::new(),
        }
    }
}

impl Simulator<'_> {
    /// Storage HBA `n`'s media finishes flow `f`'s storage write in transfer slot `slot` at
    /// `done`: the slot frees then.
    pub(in crate::sim) fn media_write_done_at(
        &mut self,
        n: usize,
        f: u32,
        slot: u32,
        done: SimTime,
    ) {
        let AnyNode::Storage(s) = &mut self.nodes[n] else {
            return;
        };
        let i = s.media_writes.place((f, slot));
        let ev = Ev::Node {
            node: n as u32,
            ev: NodeEv::MediaDone(i),
        };
        self.q.schedule(done, ev);
    }
}

impl LegacyNode for StorageHba {
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        sim.requester_received(n, c, id, t, head);
    }

    #[inline(always)]
    fn tlp_left(sim: &mut Simulator<'_>, _n: usize, id: u32, start: SimTime) {
        sim.flow_tlp_left(id, start);
    }

    #[inline(always)]
    fn tlp_written(sim: &mut Simulator<'_>, _n: usize, t: &Tlp, c: u32) {
        sim.flow_tlp_written(t, c);
    }

    fn tlp_workload(sim: &Simulator<'_>, _n: usize, t: &Tlp) -> Option<u32> {
        sim.flow_tlp_workload(t)
    }

    fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        let (NodeEv::MediaDone(i), AnyNode::Storage(s)) = (ev, &mut sim.nodes[n]) else {
            return;
        };
        let (f, slot) = s.media_writes[i as usize];
        s.media_writes.release(i);
        sim.transfer_done(f, slot);
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        let m = &self.media;
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
