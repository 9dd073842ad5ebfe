//! The steps of an NVMe drive's I/Os: fetching the queue entry and PRP list, the command
//! processor and the media, the data in or out, the completion entry and MSI-X.

use super::{
    prp_list_bytes, NvmeDrive, NvmeTlp, Out, Read, ReadJob, Step, CQE_BYTES, DOORBELL_BYTES,
    MEDIA_UNIT, SQE_BYTES,
};
use crate::engine::SimTime;
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::channel::FcClass;
use crate::sim::node::{Context, NodeEv};
use crate::sim::{Tlp, WRITE_QUEUE_DEPTH};

impl NvmeDrive {
    /// A write of the drive's took effect at its target: a doorbell at the drive, data,
    /// completion entry or MSI-X in memory. Each stream's writes must arrive in order.
    pub(super) fn written<C: Context>(&mut self, cx: &mut C, t: &Tlp) {
        let now = cx.now();
        let (what, _) = NvmeTlp::of(t.owner.cookie, self.member_bits);
        let stream = match what {
            NvmeTlp::SqDoorbell(_) | NvmeTlp::CqDoorbell(_) => 2,
            NvmeTlp::Read(_) | NvmeTlp::Data(_) | NvmeTlp::Cqe(_) | NvmeTlp::Msi(_)
                if t.dst == self.root =>
            {
                0
            }
            NvmeTlp::Read(_) | NvmeTlp::Data(_) | NvmeTlp::Cqe(_) | NvmeTlp::Msi(_) => 1,
        };
        let misordered = t.order != self.expected[stream];
        self.expected[stream] = t.order + 1;
        let mut data_flow = None;
        match what {
            NvmeTlp::SqDoorbell(io) => {
                // The controller fetches the entry the doorbell announced.
                self.read_jobs.push_back(ReadJob {
                    io,
                    data: false,
                    addr: (io as u64 % 64) * SQE_BYTES as u64,
                    left: SQE_BYTES as u64,
                });
            }
            NvmeTlp::Data(io) => data_flow = Some(self.ios[io as usize].flow),
            NvmeTlp::CqDoorbell(_) | NvmeTlp::Read(_) | NvmeTlp::Cqe(_) | NvmeTlp::Msi(_) => {}
        }
        if misordered {
            cx.order_violation();
        }
        match what {
            NvmeTlp::SqDoorbell(_) => self.issue_reads(cx),
            NvmeTlp::Msi(io) => self.io_done(cx, io),
            NvmeTlp::CqDoorbell(_) | NvmeTlp::Read(_) | NvmeTlp::Data(_) | NvmeTlp::Cqe(_) => {}
        }
        if let Some(f) = data_flow {
            cx.flow_data(f, t.payload as u64, Some((now - t.born).as_ns_f64()));
        }
    }

    /// The drive issues its waiting reads (queue entries, PRP lists, write data: MRd of at
    /// most MRRS, never across 4 KiB) while it has tags.
    pub(super) fn issue_reads<C: Context>(&mut self, cx: &mut C) {
        let n = cx.node();
        let mrrs = cx.sys().pcie.mrrs;
        while self.free_tags > 0 {
            let Some(job) = self.read_jobs.front_mut() else {
                return;
            };
            let len = tlp::request_piece(job.addr, job.left, mrrs);
            let (io, data, addr) = (job.io, job.data, job.addr);
            job.addr += len as u64;
            job.left -= len as u64;
            if job.left == 0 {
                self.read_jobs.pop_front();
            }
            self.free_tags -= 1;
            let read = Read {
                io,
                data,
                remaining: len,
                next_offset: 0,
                issued: SimTime::ZERO,
                answered: false,
            };
            let r = self.reads.place(read);
            // Queue entries and PRP lists are in host memory; data where the workload says.
            let i = self.ios[io as usize];
            let dst = if data {
                cx.sys().workloads[i.flow as usize].target as u32
            } else {
                self.root
            };
            let owner = self.owner(n, NvmeTlp::Read(r), i.member);
            let id = cx.new_tlp(Tlp {
                addr: addr as u32,
                ..Tlp::at_source(TlpKind::MRd, n as u32, dst, len, owner)
            });
            let out = cx.toward(dst as usize);
            cx.send(out, id);
        }
    }

    /// A completion of one of the drive's reads arrived on channel `c` (first byte in at
    /// `head`): a write I/O's first data byte times its request; the read's tag frees once
    /// it is whole; the I/O moves on once its step's reads are all in.
    pub(super) fn read_data<C: Context>(
        &mut self,
        cx: &mut C,
        c: u32,
        id: u32,
        t: Tlp,
        head: SimTime,
    ) {
        cx.release(c, FcClass::Completion, 1, t.data_credits());
        cx.deliver(id);
        let (NvmeTlp::Read(r), _) = NvmeTlp::of(t.owner.cookie, self.member_bits) else {
            return;
        };
        let read = &mut self.reads[r as usize];
        let order_ok = t.order == read.next_offset;
        read.next_offset += t.payload as u64;
        read.remaining -= t.payload.min(read.remaining);
        let first = !read.answered;
        read.answered = true;
        let read = *read;
        if read.remaining == 0 {
            self.reads.release(r);
            self.free_tags += 1;
        }
        let io = &mut self.ios[read.io as usize];
        io.awaiting -= (t.payload as u64).min(io.awaiting);
        let (done, flow) = (io.awaiting == 0, io.flow);
        if !order_ok {
            cx.order_violation();
        }
        if read.data && first {
            cx.flow_data(flow, 0, Some((head - read.issued).as_ns_f64()));
        }
        if done {
            self.advance(cx, read.io);
        }
        self.issue_reads(cx);
    }

    /// I/O `io` is through its current step (its reads are in, or the event it waited for
    /// fired): it takes the next.
    pub(super) fn advance<C: Context>(&mut self, cx: &mut C, io: u32) {
        let now = cx.now();
        let i = self.ios[io as usize];
        let Some(fio) = cx.sys().workloads[i.flow as usize].kind.fio() else {
            return;
        };
        let reads = fio.rw.reads();
        let mut next = None;
        let mut programmed = None;
        match i.step {
            Step::Fetch if prp_list_bytes(fio.bs) > 0 => {
                let bytes = prp_list_bytes(fio.bs);
                next = Some((Step::Prp, bytes));
                self.read_jobs.push_back(ReadJob {
                    io,
                    data: false,
                    addr: 0,
                    left: bytes,
                });
            }
            Step::Fetch | Step::Prp => {
                // The command processor takes the command; a read goes on to the media.
                let t = self.commands.as_mut().map_or(now, |c| c.pass(now, 1));
                let at = if reads {
                    self.media_read_at(t, fio.bs)
                } else {
                    t
                };
                let step = if reads { Step::Media } else { Step::Command };
                self.ios[io as usize].step = step;
                if at > now {
                    cx.schedule(at, NodeEv::Io(io));
                } else {
                    self.advance(cx, io);
                }
                return;
            }
            Step::Command => {
                // The data come in only once the write buffer has room for them.
                self.buffer_wait.push_back(io);
                self.take_buffer(cx);
                return;
            }
            Step::DataIn => {
                let start = self
                    .media_write
                    .as_mut()
                    .map_or(now, |m| m.pass(now, fio.bs as u32));
                self.ios[io as usize].step = Step::MediaWrite;
                cx.schedule(start + self.spec.write_latency, NodeEv::Io(io));
                return;
            }
            Step::Media => self.out.push_back(Out::Data {
                io,
                addr: 0,
                left: fio.bs,
            }),
            Step::MediaWrite => {
                // Programmed: its data count (as fio counts a write: once it is done, not
                // as the buffer takes it), its buffer room frees, and the writes waiting
                // for room go on.
                programmed = Some(i.flow);
                self.buffer_free = (self.buffer_free + fio.bs).min(self.spec.write_buffer);
                self.out.push_back(Out::Cqe(io));
            }
            Step::Complete => return,
        }
        let e = &mut self.ios[io as usize];
        match next {
            Some((step, awaiting)) => {
                e.step = step;
                e.awaiting = awaiting;
                self.issue_reads(cx);
            }
            None => {
                e.step = Step::Complete;
                self.fill_posted(cx);
            }
        }
        if let Some(flow) = programmed {
            cx.flow_data(flow, fio.bs, None);
            self.take_buffer(cx);
        }
    }

    /// When a read of `bs` bytes whose command the processor took at `t` has its data
    /// start toward the host: the media streams, the data leave once its first unit is
    /// read, and the media's rate paces the I/Os that follow.
    fn media_read_at(&mut self, t: SimTime, bs: u64) -> SimTime {
        let start = t + self.spec.read_latency;
        self.media_read.as_mut().map_or(start, |m| {
            let (begin, _) = m.pass_span(start, bs as u32);
            let first = bs.min(MEDIA_UNIT) as f64 / m.bytes_per_s();
            begin + SimTime::from_ps((first * 1e12).round() as u64)
        })
    }

    /// The drive's writes waiting for write-buffer room take it, oldest first, while the
    /// next fits (one larger than the whole buffer once it is empty), and fetch their data.
    fn take_buffer<C: Context>(&mut self, cx: &mut C) {
        let mut took = false;
        while let Some(&io) = self.buffer_wait.front() {
            let bs = cx.sys().workloads[self.ios[io as usize].flow as usize]
                .kind
                .fio()
                .map_or(0, |f| f.bs);
            if self.buffer_free < bs && self.buffer_free != self.spec.write_buffer {
                break;
            }
            self.buffer_wait.pop_front();
            self.buffer_free = self.buffer_free.saturating_sub(bs);
            let e = &mut self.ios[io as usize];
            e.step = Step::DataIn;
            e.awaiting = bs;
            self.read_jobs.push_back(ReadJob {
                io,
                data: true,
                addr: 0,
                left: bs,
            });
            took = true;
        }
        if took {
            self.issue_reads(cx);
        }
    }

    /// Keeps the drive's posted writes queued ahead of its link: a read I/O's data (MWr of
    /// at most MPS, never across 4 KiB), then its completion entry and MSI-X.
    pub(super) fn fill_posted<C: Context>(&mut self, cx: &mut C) {
        let n = cx.node();
        let mps = cx.sys().pcie.mps;
        while self.posted_queued < WRITE_QUEUE_DEPTH {
            let Some(front) = self.out.front_mut() else {
                return;
            };
            let (what, io, bytes, addr) = match *front {
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
                    self.read_data_sent += size as u64;
                    (NvmeTlp::Data(io), io, size, addr)
                }
                Out::Cqe(io) => {
                    *front = Out::Msi(io);
                    let addr = (io as u64 % 256) * CQE_BYTES as u64;
                    (NvmeTlp::Cqe(io), io, CQE_BYTES, addr)
                }
                Out::Msi(io) => {
                    self.out.pop_front();
                    (NvmeTlp::Msi(io), io, DOORBELL_BYTES, 0)
                }
            };
            let i = self.ios[io as usize];
            let dst = match what {
                NvmeTlp::Data(_) => cx.sys().workloads[i.flow as usize].target as u32,
                NvmeTlp::SqDoorbell(_)
                | NvmeTlp::CqDoorbell(_)
                | NvmeTlp::Read(_)
                | NvmeTlp::Cqe(_)
                | NvmeTlp::Msi(_) => self.root,
            };
            let stream = usize::from(dst != self.root);
            let order = self.next_order[stream];
            self.next_order[stream] += 1;
            self.posted_queued += 1;
            let owner = self.owner(n, what, i.member);
            let t = Tlp::at_source(TlpKind::MWr, n as u32, dst, bytes, owner);
            let id = cx.new_tlp(Tlp { order, ..t }.data_at(addr));
            let out = cx.toward(dst as usize);
            cx.send(out, id);
        }
    }

    /// The MSI-X of I/O `io` reached the host: the I/O is done (its latency counts if the
    /// measurement window is open); the host writes the completion queue head doorbell and
    /// submits the job's next I/O on the same queue (once its `rate` allows).
    fn io_done<C: Context>(&mut self, cx: &mut C, io: u32) {
        let now = cx.now();
        let i = self.ios[io as usize];
        self.ios.release(io);
        cx.flow_io_latency(i.flow, (now - i.issued).as_ns_f64());
        self.doorbell(cx, NvmeTlp::CqDoorbell(i.queue), i.member);
        self.fio_offer(cx, i.flow, i.job);
    }
}
