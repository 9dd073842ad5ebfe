//! NVMe drives and the fio jobs that drive them, every step of an I/O a TLP through the
//! fabric.
//!
//! The life of one I/O: the host (the root complex, on fio's behalf) writes the queue's
//! submission queue tail doorbell (MWr 4 B into the drive's BAR); the controller fetches the
//! 64 B submission queue entry from host memory (MRd, CplD back); for a transfer over two
//! pages it reads the PRP list (8 B per page after the first); its command processor takes
//! the command (`command_rate`); a read waits the media's `read_latency` and streams its
//! bytes at the media's `read_bandwidth` (the data start once the first 16 KiB are read),
//! the controller writing them to memory (MWr of at most MPS, never across 4 KiB); a write reads its data from memory
//! (MRd of at most MRRS, the drive's tags), then passes it through `write_bandwidth` and
//! waits `write_latency`; the controller writes the 16 B completion queue entry (MWr) and
//! the MSI-X (MWr 4 B to the root complex); when the MSI-X is in, the I/O is done (its
//! latency counts from the doorbell's issue), the host writes the completion queue head
//! doorbell (MWr 4 B) and submits the job's next I/O. The drive owns every TLP of its I/Os,
//! the host's doorbells included; its cookies are [`NvmeTlp`]'s.

use std::collections::VecDeque;

use super::{AnyNode, LegacyNode, NodeEv};
use crate::engine::table::Pool;
use crate::engine::SimTime;
use crate::fabric::{NvmeSpec, System};
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::channel::FcClass;
use crate::sim::result::FioResult;
use crate::sim::throttle::Throttle;

/// Bytes the media reads before an I/O's data may start toward the host (a NAND page run):
/// a large read streams from there at the slower of the media and the link.
const MEDIA_UNIT: u64 = 16 * 1024;
use crate::sim::{Ev, Owner, Simulator, Tlp, WRITE_QUEUE_DEPTH};

/// Bytes of a submission queue entry.
pub const SQE_BYTES: u32 = 64;
/// Bytes of a completion queue entry.
pub const CQE_BYTES: u32 = 16;
/// Bytes of a doorbell write and of an MSI-X message.
pub const DOORBELL_BYTES: u32 = 4;
/// Bytes of one PRP list entry (a page's address).
pub const PRP_ENTRY_BYTES: u64 = 8;
/// The host memory page a PRP entry points to (CC.MPS = 0).
pub const PAGE: u64 = 4096;

/// Bytes of the PRP list an I/O of `bs` bytes at a page-aligned address needs: none for up
/// to two pages (PRP1 and PRP2 point to them), else one entry per page after the first.
pub fn prp_list_bytes(bs: u64) -> u64 {
    let pages = bs.div_ceil(PAGE);
    if pages > 2 {
        (pages - 1) * PRP_ENTRY_BYTES
    } else {
        0
    }
}

/// Where one I/O is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Its submission queue entry is being fetched.
    Fetch,
    /// Its PRP list is being read.
    Prp,
    /// A write waits for the command processor.
    Command,
    /// A read waits for the media.
    Media,
    /// A write's data is being read from memory.
    DataIn,
    /// A write's data is in the media.
    MediaWrite,
    /// Its data, completion entry and MSI-X are on their way.
    Complete,
}

/// One I/O in flight.
#[derive(Debug, Clone, Copy)]
struct Io {
    /// Its fio workload.
    flow: u32,
    /// Its queue pair.
    queue: u32,
    /// Its fio job (of its workload's).
    job: u32,
    /// When the host issued its submission doorbell.
    issued: SimTime,
    step: Step,
    /// Bytes of its current step's reads not yet in.
    awaiting: u64,
}

/// A read request of the drive in flight.
#[derive(Debug, Clone, Copy)]
struct Read {
    io: u32,
    /// It reads a write I/O's data (not a queue entry or PRP list).
    data: bool,
    remaining: u32,
    next_offset: u64,
    /// When its first byte left the drive.
    issued: SimTime,
    answered: bool,
}

/// Reads waiting for a tag: the I/O, whether they are its data, the next address and the
/// bytes left.
#[derive(Debug, Clone, Copy)]
struct ReadJob {
    io: u32,
    data: bool,
    addr: u64,
    left: u64,
}

/// Posted writes waiting to leave, in order: a read I/O's data (from `addr`, `left` bytes
/// to go), then its completion entry and its MSI-X.
#[derive(Debug, Clone, Copy)]
enum Out {
    Data { io: u32, addr: u64, left: u64 },
    Cqe(u32),
    Msi(u32),
}

/// An NVMe drive at run time.
#[derive(Debug)]
pub(in crate::sim) struct NvmeDrive {
    spec: NvmeSpec,
    /// Read tags not in use.
    free_tags: u32,
    /// The root complex of the host whose memory holds its queues.
    root: u32,
    /// The command processor, if its rate is limited.
    commands: Option<Throttle>,
    /// The media's read and write data paths, where limited.
    media_read: Option<Throttle>,
    media_write: Option<Throttle>,
    ios: Pool<Io>,
    reads: Pool<Read>,
    read_jobs: VecDeque<ReadJob>,
    out: VecDeque<Out>,
    /// Its posted writes queued at its link, not yet left.
    posted_queued: u32,
    /// Bytes of read I/Os' data it has sent toward their destination: what its media's read
    /// side has delivered (data read ahead and waiting for the link is not its busy time).
    read_data_sent: u64,
    /// Bytes of its write buffer not holding a write's data.
    buffer_free: u64,
    /// Write I/Os whose command is processed, waiting for buffer room, oldest first.
    buffer_wait: VecDeque<u32>,
    /// Order stamp of its next posted write and the next expected, toward host memory (0)
    /// and toward a GPUDirect Storage target (1); then the host's doorbells into it (2).
    next_order: [u64; 3],
    expected: [u64; 3],
}

impl NvmeDrive {
    /// Drive `n` of `sys` as `spec` describes it, with `tags` read tags.
    pub(in crate::sim) fn new(sys: &System, n: usize, spec: NvmeSpec, tags: u32) -> Self {
        let mut root = n;
        while let Some(l) = sys.links.iter().find(|l| l.down == root) {
            root = l.up;
        }
        NvmeDrive {
            spec,
            free_tags: tags,
            root: root as u32,
            commands: spec.command_rate.map(Throttle::new),
            media_read: spec.read_bandwidth.map(Throttle::new),
            media_write: spec.write_bandwidth.map(Throttle::new),
            ios: Pool::new(),
            reads: Pool::new(),
            read_jobs: VecDeque::new(),
            out: VecDeque::new(),
            posted_queued: 0,
            read_data_sent: 0,
            buffer_free: spec.write_buffer,
            buffer_wait: VecDeque::new(),
            next_order: [0; 3],
            expected: [0; 3],
        }
    }
}

/// What a TLP of an NVMe drive's I/Os is to it: the cookie of its [`Owner`], encoded and
/// decoded only here.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NvmeTlp {
    /// The host's submission queue tail doorbell for I/O `io`.
    SqDoorbell(u32),
    /// The host's completion queue head doorbell of queue `q`.
    CqDoorbell(u32),
    /// A read request in slot `r` of the drive's reads, and its completions.
    Read(u32),
    /// Read data of I/O `io` written to memory.
    Data(u32),
    /// The completion queue entry of I/O `io`.
    Cqe(u32),
    /// The MSI-X of I/O `io`.
    Msi(u32),
}

impl NvmeTlp {
    /// The index part of a cookie.
    const INDEX: u32 = (1 << 28) - 1;

    /// Its cookie: the variant in bits 28 to 30, the index below.
    fn cookie(self) -> u32 {
        let (tag, i) = match self {
            NvmeTlp::SqDoorbell(i) => (0, i),
            NvmeTlp::CqDoorbell(i) => (1, i),
            NvmeTlp::Read(i) => (2, i),
            NvmeTlp::Data(i) => (3, i),
            NvmeTlp::Cqe(i) => (4, i),
            NvmeTlp::Msi(i) => (5, i),
        };
        debug_assert!(i <= Self::INDEX);
        tag << 28 | i
    }

    /// The TLP a cookie made by [`Self::cookie`] stands for.
    fn of(cookie: u32) -> Self {
        let i = cookie & Self::INDEX;
        match cookie >> 28 & 7 {
            0 => NvmeTlp::SqDoorbell(i),
            1 => NvmeTlp::CqDoorbell(i),
            2 => NvmeTlp::Read(i),
            3 => NvmeTlp::Data(i),
            4 => NvmeTlp::Cqe(i),
            _ => NvmeTlp::Msi(i),
        }
    }

    /// The owner of this TLP of the drive at node `n`.
    fn owner(self, n: usize) -> Owner {
        Owner {
            node: n as u32,
            cookie: self.cookie(),
        }
    }
}

impl LegacyNode for NvmeDrive {
    fn tlp_arrived(sim: &mut Simulator<'_>, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        match t.kind {
            TlpKind::CplD if t.owner.node == n as u32 => sim.nvme_read_data(n, c, id, t, head),
            TlpKind::MWr => {
                // A doorbell (the drive hears of its own) or a root complex's write into its
                // BAR: absorbed at once.
                sim.rx_release(c, t.class(), 1, t.data_credits());
                AnyNode::tlp_written(sim, &t, c);
                sim.deliver(id);
            }
            _ => {
                sim.rx_release(c, t.class(), 1, t.data_credits());
                sim.deliver(id);
            }
        }
    }

    fn event(sim: &mut Simulator<'_>, n: usize, ev: NodeEv) {
        if let NodeEv::Io(io) = ev {
            sim.nvme_advance(n, io);
        }
    }

    fn tlp_left(sim: &mut Simulator<'_>, n: usize, id: u32, start: SimTime) {
        let what = NvmeTlp::of(sim.tlps[id as usize].owner.cookie);
        let Some(d) = sim.nvme_mut(n) else { return };
        match what {
            NvmeTlp::Read(r) => d.reads[r as usize].issued = start,
            NvmeTlp::Data(_) | NvmeTlp::Cqe(_) | NvmeTlp::Msi(_) => {
                d.posted_queued -= 1;
                sim.nvme_fill_posted(n);
            }
            NvmeTlp::SqDoorbell(_) | NvmeTlp::CqDoorbell(_) => {}
        }
    }

    fn tlp_written(sim: &mut Simulator<'_>, n: usize, t: &Tlp, _c: u32) {
        sim.nvme_written(n, t);
    }

    fn tlp_workload(sim: &Simulator<'_>, n: usize, t: &Tlp) -> Option<u32> {
        let AnyNode::Nvme(d) = &sim.nodes[n] else {
            return None;
        };
        let io = match NvmeTlp::of(t.owner.cookie) {
            NvmeTlp::SqDoorbell(io) | NvmeTlp::Data(io) | NvmeTlp::Cqe(io) | NvmeTlp::Msi(io) => io,
            NvmeTlp::Read(r) => d.reads.get(r as usize)?.io,
            NvmeTlp::CqDoorbell(_) => return None,
        };
        d.ios.get(io as usize).map(|io| io.flow)
    }

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        if let Some(c) = &self.commands {
            let what = format!("{name} command processor");
            let busy = c.busy_by(t);
            out.push(Resource::of_node(
                n,
                UsedBy::Every,
                "command_rate",
                what,
                busy,
                None,
            ));
        }
        // A read I/O's data leaves the drive as DMA writes, a write I/O's arrives as reads.
        let sides = [
            (UsedBy::Writes, "read", &self.media_read),
            (UsedBy::Reads, "write", &self.media_write),
        ];
        for (used_by, what, th) in sides {
            if let Some(th) = th {
                let mut r = th.resource(n, used_by, "media", format!("{name} media ({what})"), t);
                if what == "read" {
                    // Its service counts as far as its data have left: time the data of a
                    // read done early spend waiting for the link is the link's, not its.
                    let sent = self.read_data_sent as f64 / th.bytes_per_s();
                    r.busy = r.busy.min(SimTime::from_ps((sent * 1e12) as u64).ticks());
                }
                out.push(r);
            }
        }
    }
}

/// The event of I/O `io` of the drive at node `n`.
fn io_ev(n: usize, io: u32) -> Ev {
    Ev::Node {
        node: n as u32,
        ev: NodeEv::Io(io),
    }
}

impl Simulator<'_> {
    /// The NVMe drive at node `n`, if it is one.
    fn nvme_mut(&mut self, n: usize) -> Option<&mut NvmeDrive> {
        self.nodes[n].nvme_mut()
    }

    /// fio workload `f` starts: each job keeps its `iodepth` I/Os in flight on its queue.
    pub(in crate::sim) fn fio_start(&mut self, f: u32) {
        let w = &self.sys.workloads[f as usize];
        let (n, Some(fio)) = (w.source, w.kind.fio()) else {
            return;
        };
        for j in 0..fio.numjobs {
            for _ in 0..fio.iodepth {
                self.fio_offer(n, f, j);
            }
        }
    }

    /// Job `job` of fio workload `f` on drive `n` has an I/O to submit: it does so now, or,
    /// behind the I/Os its `rate` already holds, once the rate allows (`pace`).
    fn fio_offer(&mut self, n: usize, f: u32, job: u32) {
        let now = self.now();
        let bs = self.sys.workloads[f as usize]
            .kind
            .fio()
            .map_or(0, |fio| fio.bs);
        let Some(p) = self.work.flows[f as usize].pace.get_mut(job as usize) else {
            return self.nvme_submit(n, f, job);
        };
        if p.waiting == 0 && p.ready(now) {
            p.take(bs);
            self.nvme_submit(n, f, job);
        } else {
            p.waiting += 1;
            self.pace_hold(f, job as usize);
        }
    }

    /// Job `job` of fio workload `f` may go on (`Ev::Pace`): it submits the I/Os its `rate`
    /// held back while the rate allows, and waits again for the rest.
    pub(in crate::sim) fn fio_paced(&mut self, f: u32, job: u32) {
        let now = self.now();
        let w = &self.sys.workloads[f as usize];
        let (n, bs) = (w.source, w.kind.fio().map_or(0, |fio| fio.bs));
        loop {
            let p = &mut self.work.flows[f as usize].pace[job as usize];
            if p.waiting == 0 {
                return;
            }
            if !p.ready(now) {
                self.pace_hold(f, job as usize);
                return;
            }
            p.waiting -= 1;
            p.take(bs);
            self.nvme_submit(n, f, job);
        }
    }

    /// The host submits an I/O of job `job` of workload `f` on the job's queue of drive `n`:
    /// it writes the submission queue entry to its memory (no PCIe traffic) and rings the
    /// tail doorbell.
    fn nvme_submit(&mut self, n: usize, f: u32, job: u32) {
        let now = self.now();
        let first_queue = self.sys.workloads[f as usize]
            .kind
            .fio()
            .map_or(0, |fio| fio.first_queue);
        let Some(d) = self.nvme_mut(n) else { return };
        let io = Io {
            flow: f,
            queue: (first_queue + job) % d.spec.queues,
            job,
            issued: now,
            step: Step::Fetch,
            awaiting: SQE_BYTES as u64,
        };
        let io = d.ios.place(io);
        self.nvme_doorbell(n, NvmeTlp::SqDoorbell(io));
    }

    /// The host writes a doorbell of drive `n` (its owner is the drive, which hears of it
    /// when it takes effect there).
    fn nvme_doorbell(&mut self, n: usize, what: NvmeTlp) {
        let Some(d) = self.nvme_mut(n) else { return };
        let (root, order) = (d.root, d.next_order[2]);
        d.next_order[2] += 1;
        let t = Tlp::at_source(TlpKind::MWr, root, n as u32, DOORBELL_BYTES, what.owner(n));
        let id = self.new_tlp(Tlp { order, ..t });
        let out = self.route.next(root as usize, n);
        self.push(out, id);
    }

    /// A write of drive `n`'s took effect at its target: a doorbell at the drive, data,
    /// completion entry or MSI-X in memory. Each stream's writes must arrive in order.
    fn nvme_written(&mut self, n: usize, t: &Tlp) {
        let now = self.now();
        let measuring = self.window.measuring;
        let Some(d) = self.nvme_mut(n) else { return };
        let what = NvmeTlp::of(t.owner.cookie);
        let stream = match what {
            NvmeTlp::SqDoorbell(_) | NvmeTlp::CqDoorbell(_) => 2,
            _ if t.dst == d.root => 0,
            _ => 1,
        };
        let misordered = t.order != d.expected[stream];
        d.expected[stream] = t.order + 1;
        let mut data_flow = None;
        match what {
            NvmeTlp::SqDoorbell(io) => {
                // The controller fetches the entry the doorbell announced.
                d.read_jobs.push_back(ReadJob {
                    io,
                    data: false,
                    addr: (io as u64 % 64) * SQE_BYTES as u64,
                    left: SQE_BYTES as u64,
                });
            }
            NvmeTlp::Data(io) => data_flow = Some(d.ios[io as usize].flow as usize),
            _ => {}
        }
        if misordered {
            self.audit.order_violations += 1;
        }
        match what {
            NvmeTlp::SqDoorbell(_) => self.nvme_issue_reads(n),
            NvmeTlp::Msi(io) => self.nvme_io_done(n, io),
            _ => {}
        }
        if let (Some(f), true) = (data_flow, measuring) {
            let flow = &mut self.work.flows[f];
            flow.bytes += t.payload as u64;
            flow.latency.record((now - t.born).as_ns_f64());
        }
    }

    /// Drive `n` issues its waiting reads (queue entries, PRP lists, write data: MRd of at
    /// most MRRS, never across 4 KiB) while it has tags.
    fn nvme_issue_reads(&mut self, n: usize) {
        let sys = self.sys;
        let mrrs = sys.pcie.mrrs;
        loop {
            let Some(d) = self.nvme_mut(n) else { return };
            if d.free_tags == 0 {
                return;
            }
            let Some(job) = d.read_jobs.front_mut() else {
                return;
            };
            let len = tlp::request_piece(job.addr, job.left, mrrs);
            let (io, data, addr) = (job.io, job.data, job.addr);
            job.addr += len as u64;
            job.left -= len as u64;
            if job.left == 0 {
                d.read_jobs.pop_front();
            }
            d.free_tags -= 1;
            let read = Read {
                io,
                data,
                remaining: len,
                next_offset: 0,
                issued: SimTime::ZERO,
                answered: false,
            };
            let r = d.reads.place(read);
            // Queue entries and PRP lists are in host memory; data where the workload says.
            let flow = d.ios[io as usize].flow as usize;
            let dst = if data {
                sys.workloads[flow].target as u32
            } else {
                d.root
            };
            let owner = NvmeTlp::Read(r).owner(n);
            let id = self.new_tlp(Tlp {
                addr: addr as u32,
                ..Tlp::at_source(TlpKind::MRd, n as u32, dst, len, owner)
            });
            let out = self.route.next(n, dst as usize);
            self.push(out, id);
        }
    }

    /// A completion of one of drive `n`'s reads arrived on channel `c` (first byte in at
    /// `head`): a write I/O's first data byte times its request; the read's tag frees once
    /// it is whole; the I/O moves on once its step's reads are all in.
    fn nvme_read_data(&mut self, n: usize, c: u32, id: u32, t: Tlp, head: SimTime) {
        self.rx_release(c, FcClass::Completion, 1, t.data_credits());
        self.deliver(id);
        let measuring = self.window.measuring;
        let Some(d) = self.nvme_mut(n) else { return };
        let NvmeTlp::Read(r) = NvmeTlp::of(t.owner.cookie) else {
            return;
        };
        let read = &mut d.reads[r as usize];
        let order_ok = t.order == read.next_offset;
        read.next_offset += t.payload as u64;
        read.remaining -= t.payload.min(read.remaining);
        let first = !read.answered;
        read.answered = true;
        let read = *read;
        if read.remaining == 0 {
            d.reads.release(r);
            d.free_tags += 1;
        }
        let io = &mut d.ios[read.io as usize];
        io.awaiting -= (t.payload as u64).min(io.awaiting);
        let (done, flow) = (io.awaiting == 0, io.flow as usize);
        if !order_ok {
            self.audit.order_violations += 1;
        }
        if read.data && measuring && first {
            let flow = &mut self.work.flows[flow];
            flow.latency.record((head - read.issued).as_ns_f64());
        }
        if done {
            self.nvme_advance(n, read.io);
        }
        self.nvme_issue_reads(n);
    }

    /// I/O `io` of drive `n` is through its current step (its reads are in, or the event
    /// it waited for fired): it takes the next.
    fn nvme_advance(&mut self, n: usize, io: u32) {
        let now = self.now();
        let sys = self.sys;
        let Some(d) = self.nvme_mut(n) else { return };
        let i = d.ios[io as usize];
        let Some(fio) = sys.workloads[i.flow as usize].kind.fio() else {
            return;
        };
        let reads = fio.rw.reads();
        let mut next = None;
        let mut programmed = None;
        match i.step {
            Step::Fetch if prp_list_bytes(fio.bs) > 0 => {
                let bytes = prp_list_bytes(fio.bs);
                next = Some((Step::Prp, bytes));
                d.read_jobs.push_back(ReadJob {
                    io,
                    data: false,
                    addr: 0,
                    left: bytes,
                });
            }
            Step::Fetch | Step::Prp => {
                // The command processor takes the command; a read goes on to the media.
                let t = d.commands.as_mut().map_or(now, |c| c.pass(now, 1));
                let at = if reads {
                    // The media streams: the data leave once its first unit is read, and
                    // the media's rate paces the I/Os that follow.
                    let start = t + d.spec.read_latency;
                    d.media_read.as_mut().map_or(start, |m| {
                        let (begin, _) = m.pass_span(start, fio.bs as u32);
                        let first = fio.bs.min(MEDIA_UNIT) as f64 / m.bytes_per_s();
                        begin + SimTime::from_ps((first * 1e12).round() as u64)
                    })
                } else {
                    t
                };
                let step = if reads { Step::Media } else { Step::Command };
                d.ios[io as usize].step = step;
                if at > now {
                    self.q.schedule(at, io_ev(n, io));
                } else {
                    self.nvme_advance(n, io);
                }
                return;
            }
            Step::Command => {
                // The data come in only once the write buffer has room for them.
                d.buffer_wait.push_back(io);
                self.nvme_take_buffer(n);
                return;
            }
            Step::DataIn => {
                let start = d
                    .media_write
                    .as_mut()
                    .map_or(now, |m| m.pass(now, fio.bs as u32));
                d.ios[io as usize].step = Step::MediaWrite;
                let at = start + d.spec.write_latency;
                self.q.schedule(at, io_ev(n, io));
                return;
            }
            Step::Media => d.out.push_back(Out::Data {
                io,
                addr: 0,
                left: fio.bs,
            }),
            Step::MediaWrite => {
                // Programmed: its data count (as fio counts a write: once it is done, not
                // as the buffer takes it), its buffer room frees, and the writes waiting
                // for room go on.
                programmed = Some(i.flow as usize);
                d.buffer_free = (d.buffer_free + fio.bs).min(d.spec.write_buffer);
                d.out.push_back(Out::Cqe(io));
            }
            Step::Complete => return,
        }
        let e = &mut d.ios[io as usize];
        match next {
            Some((step, awaiting)) => {
                e.step = step;
                e.awaiting = awaiting;
                self.nvme_issue_reads(n);
            }
            None => {
                e.step = Step::Complete;
                self.nvme_fill_posted(n);
            }
        }
        if let Some(flow) = programmed {
            if self.window.measuring {
                self.work.flows[flow].bytes += fio.bs;
            }
            self.nvme_take_buffer(n);
        }
    }

    /// Drive `n`'s writes waiting for write-buffer room take it, oldest first, while the
    /// next fits (one larger than the whole buffer once it is empty), and fetch their data.
    fn nvme_take_buffer(&mut self, n: usize) {
        let sys = self.sys;
        let Some(d) = self.nvme_mut(n) else { return };
        let mut took = false;
        while let Some(&io) = d.buffer_wait.front() {
            let bs = sys.workloads[d.ios[io as usize].flow as usize]
                .kind
                .fio()
                .map_or(0, |f| f.bs);
            if d.buffer_free < bs && d.buffer_free != d.spec.write_buffer {
                break;
            }
            d.buffer_wait.pop_front();
            d.buffer_free = d.buffer_free.saturating_sub(bs);
            let e = &mut d.ios[io as usize];
            e.step = Step::DataIn;
            e.awaiting = bs;
            d.read_jobs.push_back(ReadJob {
                io,
                data: true,
                addr: 0,
                left: bs,
            });
            took = true;
        }
        if took {
            self.nvme_issue_reads(n);
        }
    }

    /// Keeps drive `n`'s posted writes queued ahead of its link: a read I/O's data (MWr of
    /// at most MPS, never across 4 KiB), then its completion entry and MSI-X.
    fn nvme_fill_posted(&mut self, n: usize) {
        let sys = self.sys;
        let mps = sys.pcie.mps;
        loop {
            let Some(d) = self.nvme_mut(n) else { return };
            if d.posted_queued >= WRITE_QUEUE_DEPTH {
                return;
            }
            let Some(front) = d.out.front_mut() else {
                return;
            };
            let root = d.root;
            let (what, bytes, addr) = match *front {
                Out::Data { io, addr, left } => {
                    let size = tlp::request_piece(addr, left, mps);
                    *front = if left > size as u64 {
                        Out::Data {
                            io,
                            addr: addr + size as u64,
                            left: left - size as u64,
                        }
                    } else {
                        Out::Cqe(io)
                    };
                    d.read_data_sent += size as u64;
                    (NvmeTlp::Data(io), size, addr)
                }
                Out::Cqe(io) => {
                    *front = Out::Msi(io);
                    let addr = (io as u64 % 256) * CQE_BYTES as u64;
                    (NvmeTlp::Cqe(io), CQE_BYTES, addr)
                }
                Out::Msi(io) => {
                    d.out.pop_front();
                    (NvmeTlp::Msi(io), DOORBELL_BYTES, 0)
                }
            };
            let dst = match what {
                NvmeTlp::Data(io) => sys.workloads[d.ios[io as usize].flow as usize].target as u32,
                _ => root,
            };
            let stream = usize::from(dst != root);
            let order = d.next_order[stream];
            d.next_order[stream] += 1;
            d.posted_queued += 1;
            let t = Tlp::at_source(TlpKind::MWr, n as u32, dst, bytes, what.owner(n));
            let id = self.new_tlp(Tlp { order, ..t }.data_at(addr));
            let out = self.route.next(n, dst as usize);
            self.push(out, id);
        }
    }

    /// The MSI-X of I/O `io` of drive `n` reached the host: the I/O is done (its latency
    /// counts if the measurement window is open); the host writes the completion queue head
    /// doorbell and submits the job's next I/O on the same queue (once its `rate` allows).
    fn nvme_io_done(&mut self, n: usize, io: u32) {
        let now = self.now();
        let measuring = self.window.measuring;
        let Some(d) = self.nvme_mut(n) else { return };
        let i = d.ios[io as usize];
        d.ios.release(io);
        if measuring {
            let latency = (now - i.issued).as_ns_f64();
            self.work.flows[i.flow as usize]
                .transfer_latency
                .record(latency);
        }
        self.nvme_doorbell(n, NvmeTlp::CqDoorbell(i.queue));
        self.fio_offer(n, i.flow, i.job);
    }

    /// The fio results over a window of `window` seconds, in workload order.
    pub(in crate::sim) fn fio_results(&self, window: f64) -> Vec<FioResult> {
        let nodes = &self.sys.nodes;
        self.sys
            .workloads
            .iter()
            .zip(self.work.flows.iter())
            .filter_map(|(w, f)| {
                let fio = w.kind.fio()?;
                let ios = f.transfer_latency.count();
                let per_s = f.bytes as f64 / window;
                Some(FioResult {
                    name: w.name.clone(),
                    endpoint: nodes[w.source].name.clone(),
                    target: nodes[w.target].name.clone(),
                    rw: fio.rw.word(),
                    bs: fio.bs,
                    iodepth: fio.iodepth,
                    numjobs: fio.numjobs,
                    ios,
                    iops: ios as f64 / window,
                    bandwidth_mb_per_s: per_s / 1e6,
                    bandwidth_gb_per_s: per_s / 1e9,
                    latency_ns: f.transfer_latency.summary(),
                })
            })
            .collect()
    }
}
