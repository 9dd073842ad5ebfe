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
//! the host's doorbells included; its cookies are [`NvmeTlp`]'s, which also name the
//! workload a TLP belongs to (the trace asks while the drive's handler may be running).
//!
//! The drive is a [`Node`]: its I/Os' steps are in `io`, its fio jobs (submitting, pacing)
//! in `fio`. It reaches its workloads' flows only through its [`Context`]: their pacers,
//! their counters while measuring.

mod fio;
mod io;

use std::collections::VecDeque;

use super::{Context, Node, NodeEv};
use crate::engine::table::Pool;
use crate::engine::SimTime;
use crate::fabric::{NvmeSpec, System};
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::{Owner, Tlp};

/// Bytes the media reads before an I/O's data may start toward the host (a NAND page run):
/// a large read streams from there at the slower of the media and the link.
const MEDIA_UNIT: u64 = 16 * 1024;

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
    /// Its workload's place among the drive's fio workloads (`NvmeDrive::flows`).
    member: u32,
    /// Its queue pair.
    queue: u32,
    /// Its fio job (of its workload's).
    job: u32,
    /// When the host issued its submission doorbell.
    issued: SimTime,
    /// Where it is in its life.
    step: Step,
    /// Bytes of its current step's reads not yet in.
    awaiting: u64,
}

/// A read request of the drive in flight.
#[derive(Debug, Clone, Copy)]
struct Read {
    /// The I/O it reads for.
    io: u32,
    /// It reads a write I/O's data (not a queue entry or PRP list).
    data: bool,
    /// Bytes not yet in.
    remaining: u32,
    /// The offset its next completion must start at.
    next_offset: u64,
    /// When its first byte left the drive.
    issued: SimTime,
    /// A completion of it came in.
    answered: bool,
}

/// Reads waiting for a tag: the I/O, whether they are its data, the next address and the
/// bytes left.
#[derive(Debug, Clone, Copy)]
struct ReadJob {
    /// The I/O.
    io: u32,
    /// They read its data (not its queue entry or PRP list).
    data: bool,
    /// The next address.
    addr: u64,
    /// Bytes left.
    left: u64,
}

/// Posted writes waiting to leave, in order: a read I/O's data (from `addr`, `left` bytes
/// to go), then its completion entry and its MSI-X.
#[derive(Debug, Clone, Copy)]
enum Out {
    /// I/O `io`'s data from `addr`, `left` bytes to go.
    Data {
        /// The I/O.
        io: u32,
        /// The address of its next byte.
        addr: u64,
        /// Bytes to go.
        left: u64,
    },
    /// I/O's completion queue entry.
    Cqe(u32),
    /// I/O's MSI-X.
    Msi(u32),
}

/// An NVMe drive at run time.
#[derive(Debug)]
pub(in crate::sim) struct NvmeDrive {
    /// Its description.
    spec: NvmeSpec,
    /// Read tags not in use.
    free_tags: u32,
    /// The root complex of the host whose memory holds its queues.
    root: u32,
    /// The command processor, if its rate is limited.
    commands: Option<Throttle>,
    /// The media's read and write data paths, where limited.
    media_read: Option<Throttle>,
    /// The media's write data path, where limited.
    media_write: Option<Throttle>,
    /// Its I/Os in flight.
    ios: Pool<Io>,
    /// Its read requests in flight.
    reads: Pool<Read>,
    /// Reads waiting for a tag, oldest first.
    read_jobs: VecDeque<ReadJob>,
    /// Posted writes waiting to leave, in order.
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
    /// The order stamp each stream's next write must carry where it takes effect.
    expected: [u64; 3],
    /// Its fio workloads (their indices), in workload order: its TLPs' cookies name theirs
    /// by its place here.
    flows: Vec<u32>,
    /// Bits of a cookie's index that name the place of its workload in `flows`.
    member_bits: u32,
}

impl NvmeDrive {
    /// Drive `n` of `sys` as `spec` describes it, with `tags` read tags.
    pub(in crate::sim) fn new(sys: &System, n: usize, spec: NvmeSpec, tags: u32) -> Self {
        let mut root = n;
        while let Some(l) = sys.links.iter().find(|l| l.down == root) {
            root = l.up;
        }
        let flows = fio_flows(sys, n);
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
            member_bits: member_bits(flows.len()),
            flows,
        }
    }

    /// The workload TLP `t` of the drive belongs to, if any (for the trace).
    pub(in crate::sim) fn tlp_workload(&self, t: &Tlp) -> Option<u32> {
        let (what, member) = NvmeTlp::of(t.owner.cookie, self.member_bits);
        match what {
            NvmeTlp::CqDoorbell(_) => None,
            NvmeTlp::SqDoorbell(_)
            | NvmeTlp::Read(_)
            | NvmeTlp::Data(_)
            | NvmeTlp::Cqe(_)
            | NvmeTlp::Msi(_) => self.flows.get(member as usize).copied(),
        }
    }

    /// The owner of TLP `what` of I/O member `member` of the drive at node `n`.
    fn owner(&self, n: usize, what: NvmeTlp, member: u32) -> Owner {
        Owner {
            node: n as u32,
            cookie: what.cookie(member, self.member_bits),
        }
    }
}

/// The fio workloads that drive `n` of `sys` runs, in workload order.
fn fio_flows(sys: &System, n: usize) -> Vec<u32> {
    let ours =
        |(_, w): &(usize, &crate::fabric::WorkloadSpec)| w.source == n && w.kind.fio().is_some();
    let flows = sys.workloads.iter().enumerate().filter(ours);
    flows.map(|(f, _)| f as u32).collect()
}

/// Bits that tell `members` workloads apart (none for one).
fn member_bits(members: usize) -> u32 {
    members.max(1).next_power_of_two().trailing_zeros()
}

/// The workload TLP `t` of drive `n` of `sys` belongs to, if any, from the TLP alone: the
/// trace asks while the drive's handler runs (it is out of its table then).
pub(in crate::sim) fn tlp_workload(sys: &System, n: usize, t: &Tlp) -> Option<u32> {
    let flows = fio_flows(sys, n);
    let (what, member) = NvmeTlp::of(t.owner.cookie, member_bits(flows.len()));
    match what {
        NvmeTlp::CqDoorbell(_) => None,
        NvmeTlp::SqDoorbell(_)
        | NvmeTlp::Read(_)
        | NvmeTlp::Data(_)
        | NvmeTlp::Cqe(_)
        | NvmeTlp::Msi(_) => flows.get(member as usize).copied(),
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
    /// The bits of a cookie below its variant: the workload's place among the drive's,
    /// then the index.
    const LOW: u32 = 28;

    /// Its cookie for a TLP of the drive's workload `member` (of `bits` bits): the variant
    /// in bits 28 to 30, the member above the index below.
    fn cookie(self, member: u32, bits: u32) -> u32 {
        let (tag, i) = match self {
            NvmeTlp::SqDoorbell(i) => (0, i),
            NvmeTlp::CqDoorbell(i) => (1, i),
            NvmeTlp::Read(i) => (2, i),
            NvmeTlp::Data(i) => (3, i),
            NvmeTlp::Cqe(i) => (4, i),
            NvmeTlp::Msi(i) => (5, i),
        };
        let index_bits = Self::LOW - bits;
        debug_assert!(i < 1 << index_bits && member < 1 << bits);
        tag << Self::LOW | member << index_bits | i
    }

    /// The TLP a cookie made by [`Self::cookie`] with `bits` stands for, and its member.
    fn of(cookie: u32, bits: u32) -> (Self, u32) {
        let index_bits = Self::LOW - bits;
        let i = cookie & ((1 << index_bits) - 1);
        let member = (cookie & ((1 << Self::LOW) - 1)) >> index_bits;
        let what = match cookie >> Self::LOW & 7 {
            0 => NvmeTlp::SqDoorbell(i),
            1 => NvmeTlp::CqDoorbell(i),
            2 => NvmeTlp::Read(i),
            3 => NvmeTlp::Data(i),
            4 => NvmeTlp::Cqe(i),
            _ => NvmeTlp::Msi(i),
        };
        (what, member)
    }
}

impl Node for NvmeDrive {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, head: SimTime) {
        let n = cx.node() as u32;
        match t.kind {
            TlpKind::CplD if t.owner.node == n => self.read_data(cx, c, id, t, head),
            TlpKind::MWr => {
                // A doorbell (the drive hears of its own at once) or a root complex's write
                // into its BAR: absorbed at once.
                cx.release(c, t.class(), 1, t.data_credits());
                if t.owner.node == n {
                    self.written(cx, &t);
                } else {
                    cx.written_by(&t, c);
                }
                cx.deliver(id);
            }
            TlpKind::MRd | TlpKind::CplD | TlpKind::Cpl | TlpKind::Msg | TlpKind::MsgD => {
                cx.release(c, t.class(), 1, t.data_credits());
                cx.deliver(id);
            }
        }
    }

    fn event<C: Context>(&mut self, cx: &mut C, ev: NodeEv) {
        if let NodeEv::Io(io) = ev {
            self.advance(cx, io);
        }
    }

    fn tlp_left<C: Context>(&mut self, cx: &mut C, id: u32, start: SimTime) {
        let (what, _) = NvmeTlp::of(cx.tlp(id).owner.cookie, self.member_bits);
        match what {
            NvmeTlp::Read(r) => self.reads[r as usize].issued = start,
            NvmeTlp::Data(_) | NvmeTlp::Cqe(_) | NvmeTlp::Msi(_) => {
                self.posted_queued -= 1;
                self.fill_posted(cx);
            }
            NvmeTlp::SqDoorbell(_) | NvmeTlp::CqDoorbell(_) => {}
        }
    }

    fn tlp_written<C: Context>(&mut self, cx: &mut C, t: &Tlp, _c: u32) {
        self.written(cx, t);
    }

    fn workload_start<C: Context>(&mut self, cx: &mut C, f: u32) {
        self.fio_start(cx, f);
    }

    fn paced<C: Context>(&mut self, cx: &mut C, f: u32, s: u32) {
        self.fio_paced(cx, f, s);
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
