//! The fio jobs on an NVMe drive: each keeps its `iodepth` I/Os in flight on its queue,
//! submitting through the host's doorbells, held back by its `rate` (the workload's pacer,
//! reached through the [`Context`]).

use super::{Io, NvmeDrive, NvmeTlp, Step, DOORBELL_BYTES, SQE_BYTES};
use crate::pcie::tlp::TlpKind;
use crate::sim::node::Context;
use crate::sim::Tlp;

impl NvmeDrive {
    /// fio workload `f` starts: each job keeps its `iodepth` I/Os in flight on its queue.
    pub(super) fn fio_start<C: Context>(&mut self, cx: &mut C, f: u32) {
        let Some(fio) = cx.sys().workloads[f as usize].kind.fio() else {
            return;
        };
        for j in 0..fio.numjobs {
            for _ in 0..fio.iodepth {
                self.fio_offer(cx, f, j);
            }
        }
    }

    /// Job `job` of fio workload `f` has an I/O to submit: it does so now, or, behind the
    /// I/Os its `rate` already holds, once the rate allows (`paced`).
    pub(super) fn fio_offer<C: Context>(&mut self, cx: &mut C, f: u32, job: u32) {
        let bs = bs(cx, f);
        if cx.pace_offer(f, job, bs) {
            self.submit(cx, f, job);
        }
    }

    /// Job `job` of fio workload `f` may go on (its rate's wake-up): it submits the I/Os
    /// its `rate` held back while the rate allows, and waits again for the rest.
    pub(super) fn fio_paced<C: Context>(&mut self, cx: &mut C, f: u32, job: u32) {
        let bs = bs(cx, f);
        while cx.pace_next(f, job, bs) {
            self.submit(cx, f, job);
        }
    }

    /// The host submits an I/O of job `job` of workload `f` on the job's queue: it writes
    /// the submission queue entry to its memory (no PCIe traffic) and rings the tail
    /// doorbell.
    fn submit<C: Context>(&mut self, cx: &mut C, f: u32, job: u32) {
        let first_queue = cx.sys().workloads[f as usize]
            .kind
            .fio()
            .map_or(0, |fio| fio.first_queue);
        let member = self.flows.iter().position(|&x| x == f).unwrap_or(0) as u32;
        let io = Io {
            flow: f,
            member,
            queue: (first_queue + job) % self.spec.queues,
            job,
            issued: cx.now(),
            step: Step::Fetch,
            awaiting: SQE_BYTES as u64,
        };
        let io = self.ios.place(io);
        self.doorbell(cx, NvmeTlp::SqDoorbell(io), member);
    }

    /// The host writes a doorbell of the drive, for a workload `member` of its (its owner
    /// is the drive, which hears of it when it takes effect there).
    pub(super) fn doorbell<C: Context>(&mut self, cx: &mut C, what: NvmeTlp, member: u32) {
        let n = cx.node();
        let (root, order) = (self.root, self.next_order[2]);
        self.next_order[2] += 1;
        let owner = self.owner(n, what, member);
        let t = Tlp::at_source(TlpKind::MWr, root, n as u32, DOORBELL_BYTES, owner);
        let id = cx.new_tlp(Tlp { order, ..t });
        let out = cx.toward_from(root as usize, n);
        cx.send(out, id);
    }
}

/// The block size of fio workload `f`.
fn bs<C: Context>(cx: &C, f: u32) -> u64 {
    cx.sys().workloads[f as usize]
        .kind
        .fio()
        .map_or(0, |fio| fio.bs)
}
