//! CXL Type 3 memory expanders: device memory (HDM) that the host reads and writes with
//! CXL.mem loads and stores, modelled as a memory completer on its link (as `memory`, with
//! `completer`): a read waits the media latency, then its data leaves as the media reads it
//! out at its read rate; a write counts, and frees its credits, once the media has absorbed
//! it at its write rate. The link's own framing stands for CXL's.
//!
//! Public figures the defaults and examples lean on: Samsung's 128 GB CXL 2.0 DRAM module
//! (press release, 12 May 2023) is PCIe 5.0 x8 with "up to 35 GB/s"; Pond (Li et al.,
//! ASPLOS 2023) puts CXL memory at roughly 70-90 ns more than local DRAM. The 170 ns media
//! latency the scenario defaults to is assumed, not a datasheet figure.

use super::{completer, Context, Node, NodeEv, NodeReport};
use crate::engine::SimTime;
use crate::fabric::{System, WorkloadKind};
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::result::{CxlResult, KindResult};
use crate::sim::throttle::Throttle;
use crate::sim::Tlp;

/// A CXL memory expander at run time.
#[derive(Debug)]
pub(in crate::sim) struct CxlMemory {
    /// A read request's arrival to its data's first byte leaving the media.
    media_latency: SimTime,
    /// What paces read data out of the media.
    read: Throttle,
    /// What paces written data into the media.
    write: Throttle,
    /// Largest completion it sends (MPS).
    cpl_size: u32,
    /// The read and write media's service when the measurement window opened.
    busy_at_window: (u64, u64),
}

impl CxlMemory {
    /// An expander whose media reads at `media_read` and writes at `media_write` bytes/s,
    /// answering reads `media_latency` after they arrive in pieces of up to `mps` bytes.
    pub(in crate::sim) fn new(
        media_latency: SimTime,
        media_read: f64,
        media_write: f64,
        mps: u32,
    ) -> Self {
        CxlMemory {
            media_latency,
            read: Throttle::new(media_read),
            write: Throttle::new(media_write),
            cpl_size: mps,
            busy_at_window: (0, 0),
        }
    }

    /// The fraction of the window from `warmup` to `end` that the read and the write media
    /// were busy.
    fn utilization(&self, warmup: SimTime, end: SimTime) -> (f64, f64) {
        let window = (end - warmup).ticks().max(1) as f64;
        let busy = |th: &Throttle, at: u64| th.busy_by(end).saturating_sub(at) as f64 / window;
        (
            busy(&self.read, self.busy_at_window.0).min(1.0),
            busy(&self.write, self.busy_at_window.1).min(1.0),
        )
    }
}

impl Node for CxlMemory {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, _head: SimTime) {
        let now = cx.now();
        match t.kind {
            TlpKind::MWr => {
                let done = self.write.pass(now, t.payload);
                completer::write_done_at(cx, c, id, done);
            }
            TlpKind::MRd => {
                let ready = now + self.media_latency;
                let read = &mut self.read;
                completer::complete_read(cx, c, id, t, ready, self.cpl_size, |_, piece, at| {
                    read.pass(at, piece)
                });
            }
            _ => {
                cx.release(c, t.class(), 1, t.data_credits());
                cx.deliver(id);
            }
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        if let NodeEv::Written(id) = ev {
            completer::on_written(cx, id);
        }
    }

    fn measure_from(&mut self, now: SimTime) {
        self.busy_at_window = (self.read.busy_by(now), self.write.busy_by(now));
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        let read = format!("{name} media (read)");
        out.push(self.read.resource(n, UsedBy::ReadsFrom, "media", read, t));
        let write = format!("{name} media (write)");
        out.push(
            self.write
                .resource(n, UsedBy::WritesInto, "media", write, t),
        );
    }

    /// A `cxl` row per flow of a `cxl_mem` workload that targets it: its media's side of
    /// the figures (the flow's own, its bandwidth and latency, join it at the end).
    fn report(&self, n: usize, sys: &System, out: &mut NodeReport) {
        let (read_busy, write_busy) = self.utilization(sys.warmup, sys.duration);
        for (f, w) in sys.workloads.iter().enumerate() {
            if w.target != n || w.kind != WorkloadKind::CxlMem {
                continue;
            }
            let reads = w.direction.reads();
            let (media, busy) = match reads {
                true => (&self.read, read_busy),
                false => (&self.write, write_busy),
            };
            let row = CxlResult {
                name: w.name.clone(),
                source: sys.nodes[w.source].name.clone(),
                expander: sys.nodes[n].name.clone(),
                op: if reads { "read" } else { "write" },
                size: w.transfer_size,
                outstanding: w.outstanding,
                bandwidth_gb_per_s: 0.0,
                accesses_per_s: 0.0,
                load_latency_ns_mean: None,
                load_latency_ns_p99: None,
                media_gb_per_s: media.bytes_per_s() / 1e9,
                media_utilization: busy,
            };
            out.kinds.push((f as u32, KindResult::Cxl(row)));
        }
    }
}
