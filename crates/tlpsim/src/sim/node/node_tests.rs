//! Each kind of node behind [`Node`] driven through a context that records what it did
//! ([`Recorder`]), without a fabric: no channels, no event queue, no other nodes.

use super::context::{Call, Context};
use super::cpu::Cpu;
use super::cxl::CxlMemory;
use super::dma::{DmaEndpoint, READ, WRITE};
use super::gpu::GpuEndpoint;
use super::memory::MemoryEndpoint;
use super::nic::{NicEndpoint, RegisterWrite};
use super::ntb::Ntb;
use super::nvme::NvmeDrive;
use super::requester::Port;
use super::root::RootComplex;
use super::storage::StorageHba;
use super::switch::Switch;
use super::{AnyNode, Node, NodeEv};
use crate::engine::rng::{Latency, Rng};
use crate::engine::SimTime;
use crate::fabric::{CompletionRule, Core, DmaDevice, MediaSpec, NodeKind, System};
use crate::pcie::tlp::TlpKind;
use crate::sim::channel::FcClass;
use crate::sim::{Owner, Tlp, NONE};

/// A context that records every call a node makes, for a node at index `n` of `sys`.
struct Recorder {
    sys: System,
    n: usize,
    now: SimTime,
    tlps: Vec<Tlp>,
    /// (at, channel, TLP) of every TLP sent (now, at a time, or by an event).
    sent: Vec<(SimTime, u32, u32)>,
    /// (channel, TLP, input port) of TLPs sent as if they came in on a port.
    sent_from: Vec<(u32, u32, usize)>,
    scheduled: Vec<(SimTime, NodeEv)>,
    released: Vec<(u32, FcClass, u32, u32)>,
    delivered: Vec<u32>,
    written: Vec<(u32, u32)>,
    interrupts: Vec<(u32, u64)>,
    /// Order violations the node counted.
    misordered: u32,
    /// (flow, bytes, latency) the node counted for its flows.
    flow_data: Vec<(u32, u64, Option<f64>)>,
    /// (flow, latency) of transfers the node counted done.
    io_latencies: Vec<(u32, f64)>,
    /// (flow, stream, bytes) of requests the node offered its pacers (all may start).
    paced: Vec<(u32, u32, u64)>,
    /// What the node handed its flows through the requester port: each call's name, its
    /// arguments, and the tags the node lent with it (each such call takes one tag, as an
    /// issued read would, so that a test sees the node's own state change).
    flows: Vec<(&'static str, [u64; 3], u32)>,
    /// Calls that came for the node while its handler ran, to hand it by `next_call`.
    calls: Vec<Call>,
    /// (root, core, NIC) of NICs' interrupts handed to the host CPU.
    cpu_interrupts: Vec<(usize, u32, u32)>,
    /// NICs told their interrupt was taken.
    taken: Vec<usize>,
    /// (NIC, write) of register writes that took effect at a NIC.
    registers: Vec<(usize, RegisterWrite)>,
    /// What the NIC's driver finds received next (popped from the front).
    received: Vec<(u32, u32, u32)>,
    /// (NIC, port) of frames the driver posted for transmission.
    posted: Vec<(usize, u32)>,
    /// (NIC, what) of the driver's register writes.
    register_writes: Vec<(usize, (bool, bool, bool))>,
    /// Latencies the node drew from the run's random stream.
    samples: u32,
}

/// The channel a recorder's node sends on toward node `dst`: 100 + dst.
fn out_toward(dst: usize) -> u32 {
    100 + dst as u32
}

impl Recorder {
    fn new(sys: System, n: usize) -> Self {
        Recorder {
            sys,
            n,
            now: SimTime::from_ns(1_000),
            tlps: Vec::new(),
            sent: Vec::new(),
            sent_from: Vec::new(),
            scheduled: Vec::new(),
            released: Vec::new(),
            delivered: Vec::new(),
            written: Vec::new(),
            interrupts: Vec::new(),
            misordered: 0,
            flow_data: Vec::new(),
            io_latencies: Vec::new(),
            paced: Vec::new(),
            flows: Vec::new(),
            calls: Vec::new(),
            cpu_interrupts: Vec::new(),
            taken: Vec::new(),
            registers: Vec::new(),
            received: Vec::new(),
            posted: Vec::new(),
            register_writes: Vec::new(),
            samples: 0,
        }
    }
}

impl Context for Recorder {
    fn now(&self) -> SimTime {
        self.now
    }
    fn node(&self) -> usize {
        self.n
    }
    fn sys(&self) -> &System {
        &self.sys
    }
    fn schedule(&mut self, at: SimTime, ev: NodeEv) {
        self.scheduled.push((at, ev));
    }
    fn tlp(&self, id: u32) -> &Tlp {
        &self.tlps[id as usize]
    }
    fn tlp_mut(&mut self, id: u32) -> &mut Tlp {
        &mut self.tlps[id as usize]
    }
    fn new_tlp(&mut self, t: Tlp) -> u32 {
        self.tlps.push(t);
        self.tlps.len() as u32 - 1
    }
    fn toward(&self, dst: usize) -> u32 {
        out_toward(dst)
    }
    fn hop(&self, _came_in: u32, dst: usize) -> u32 {
        out_toward(dst)
    }
    /// Store-and-forward with no latency (what a shared bus then waits for is its own).
    fn crossing(&self, _came_in: u32, _out: u32) -> (bool, SimTime) {
        (false, SimTime::ZERO)
    }
    fn send(&mut self, c: u32, id: u32) {
        self.sent.push((self.now, c, id));
    }
    fn send_at(&mut self, at: SimTime, c: u32, id: u32) {
        self.sent.push((at.max(self.now), c, id));
    }
    fn send_by_event(&mut self, at: SimTime, c: u32, id: u32) {
        self.sent.push((at, c, id));
    }
    fn send_from(&mut self, c: u32, id: u32, input: usize) {
        self.sent_from.push((c, id, input));
    }
    fn release(&mut self, c: u32, class: FcClass, h: u32, d: u32) {
        self.released.push((c, class, h, d));
    }
    fn deliver(&mut self, id: u32) {
        self.delivered.push(id);
    }
    fn written_by(&mut self, t: &Tlp, c: u32) {
        self.written.push((t.owner.node, c));
    }
    fn cross_socket(&mut self, _c: u32, _id: u32, _at: SimTime) -> bool {
        false
    }
    fn flow_interrupt(&mut self, f: u32, order: u64) {
        self.interrupts.push((f, order));
    }
    /// Node `src`'s channel toward `dst`: 1000 * src + dst.
    fn toward_from(&self, src: usize, dst: usize) -> u32 {
        1000 * src as u32 + dst as u32
    }
    fn order_violation(&mut self) {
        self.misordered += 1;
    }
    fn flow_data(&mut self, f: u32, bytes: u64, latency: Option<f64>) {
        self.flow_data.push((f, bytes, latency));
    }
    fn flow_io_latency(&mut self, f: u32, ns: f64) {
        self.io_latencies.push((f, ns));
    }
    /// No rate: every request may start.
    fn pace_offer(&mut self, f: u32, s: u32, bytes: u64) -> bool {
        self.paced.push((f, s, bytes));
        true
    }
    /// No rate: nothing is ever held back.
    fn pace_next(&mut self, _f: u32, _s: u32, _bytes: u64) -> bool {
        false
    }
    fn next_call(&mut self) -> Option<Call> {
        (!self.calls.is_empty()).then(|| self.calls.remove(0))
    }
    fn cpu_interrupt(&mut self, root: usize, core: u32, nic: u32) {
        self.cpu_interrupts.push((root, core, nic));
    }
    fn interrupt_taken(&mut self, nic: usize) {
        self.taken.push(nic);
    }
    fn registers_written(&mut self, nic: usize, w: RegisterWrite) {
        self.registers.push((nic, w));
    }
    fn nic_take_received(&mut self, _nic: usize, _start: u32) -> Option<(u32, u32, u32)> {
        (!self.received.is_empty()).then(|| self.received.remove(0))
    }
    fn nic_post_frame(&mut self, nic: usize, p: u32) {
        self.posted.push((nic, p));
    }
    fn nic_register_write(&mut self, nic: usize, what: (bool, bool, bool)) -> RegisterWrite {
        self.register_writes.push((nic, what));
        RegisterWrite::default()
    }
    fn flow_received(&mut self, req: Port<'_>, c: u32, id: u32, _t: Tlp, _head: SimTime) {
        self.flows
            .push(("received", [c as u64, id as u64, 0], take_tag(req)));
    }
    fn engines_woken(&mut self, req: Port<'_>, side: usize) {
        assert!(req.engines.is_some(), "engines lent");
        self.flows
            .push(("engines", [side as u64, 0, 0], take_tag(req)));
    }
    fn flow_left(&mut self, req: Port<'_>, id: u32, start: SimTime) {
        self.flows
            .push(("left", [id as u64, start.ticks(), 0], take_tag(req)));
    }
    fn flow_written(&mut self, t: &Tlp, c: u32) {
        self.flows
            .push(("written", [t.owner.node as u64, c as u64, 0], 0));
    }
    fn media_write_done(&mut self, req: Port<'_>, f: u32, slot: u32) {
        assert!(req.drives.is_some(), "drives lent");
        self.flows
            .push(("media", [f as u64, slot as u64, 0], take_tag(req)));
    }
    fn host_bridge_pass(&mut self, _b: usize, _at: SimTime, _bytes: u32) -> SimTime {
        panic!("not expected: no host bridge here")
    }
    fn host_bridge_latency(&self, _b: usize) -> SimTime {
        panic!("not expected: no host bridge here")
    }
    fn sample_latency(&mut self, l: &Latency) -> SimTime {
        self.samples += 1;
        l.sample(&mut Rng::new(1))
    }
    fn tlp_workload(&self, _t: &Tlp) -> Option<u32> {
        // The tests' TLPs belong to no workload.
        None
    }
}

/// The tags a requester lent (before), taking one of them.
fn take_tag(req: Port<'_>) -> u32 {
    let before = *req.tags;
    *req.tags = before.saturating_sub(1);
    before
}

/// A root complex, a switch, two endpoints and an NTB's description (what the nodes read
/// of the system: PCIe settings, link rates).
fn system() -> System {
    let text = "[simulation]\nduration = \"1us\"\n\
        [pcie]\nmps = 256\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[switch]]\nname = \"sw\"\n\
        [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
        [[endpoint]]\nname = \"b\"\nkind = \"dma\"\n\
        [[link]]\nbetween = [\"rc\", \"sw\"]\ngen = 3\nwidth = 8\n\
        [[link]]\nbetween = [\"sw\", \"a\"]\ngen = 3\nwidth = 8\n\
        [[link]]\nbetween = [\"sw\", \"b\"]\ngen = 3\nwidth = 8\n\
        [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"a\"\ndirection = \"write\"\ntransfer_size = \"4KiB\"\n";
    crate::scenario::load_str(text, "<test>").expect("the system loads")
}

/// A TLP of `kind` from node 2 to node `dst` with `bytes`, at address 0x1000, owned by 2.
fn tlp(kind: TlpKind, dst: u32, bytes: u32) -> Tlp {
    let owner = Owner { node: 2, cookie: 7 };
    let t = Tlp::at_source(kind, 2, dst, bytes, owner);
    if kind == TlpKind::MRd {
        Tlp { addr: 0x1000, ..t }
    } else {
        t.data_at(0x1000)
    }
}

/// Puts `t` into the recorder's table as if it arrived; returns its id.
fn arrive(cx: &mut Recorder, t: Tlp) -> u32 {
    cx.new_tlp(t)
}

#[test]
fn a_crossbar_switch_sends_a_tlp_on_toward_its_destination_at_once() {
    let sys = system();
    let mut sw = Switch::new(Core::Crossbar);
    let mut cx = Recorder::new(sys, 1);
    let t = tlp(TlpKind::MWr, 3, 256);
    let id = arrive(&mut cx, t);
    sw.tlp_arrived(&mut cx, 1, id, t, SimTime::ZERO);
    assert_eq!(cx.sent, vec![(cx.now, out_toward(3), id)]);
    // It remembers the port it came in on (whose buffer frees when it leaves).
    assert_eq!(cx.tlps[id as usize].ingress, 1);
    assert!(cx.released.is_empty() && cx.delivered.is_empty());
}

#[test]
fn a_shared_bus_switch_holds_a_tlp_until_the_bus_has_carried_it() {
    let sys = system();
    // 1 GB/s: a 256-byte write's TLP (284 bytes with its header) takes 284 ns on the bus.
    let core = Core::SharedBus(1e9);
    let mut sw = Switch::new(core);
    let mut cx = Recorder::new(sys, 1);
    let t = tlp(TlpKind::MWr, 3, 256);
    let id = arrive(&mut cx, t);
    sw.tlp_arrived(&mut cx, 1, id, t, SimTime::ZERO);
    let (at, c, sent) = cx.sent[0];
    assert_eq!((c, sent), (out_toward(3), id));
    let bytes =
        crate::pcie::tlp::tlp_bytes(TlpKind::MWr, cx.sys.pcie.addressing, 256, cx.sys.pcie.ecrc);
    assert_eq!(at, cx.now + SimTime::from_ns(bytes as u64));
}

#[test]
fn a_memory_endpoint_answers_a_read_with_mps_sized_completions_after_its_latency() {
    let mut m = MemoryEndpoint::new(SimTime::from_ns(500), None, 256);
    let mut cx = Recorder::new(system(), 3);
    let t = tlp(TlpKind::MRd, 3, 512);
    let id = arrive(&mut cx, t);
    m.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    // Two completions of 256 bytes, ready together: one event queues both, as a chain.
    let ready = cx.now + SimTime::from_ns(500);
    assert_eq!(cx.sent.len(), 1);
    let (at, c, first) = cx.sent[0];
    assert_eq!((at, c), (ready, out_toward(2)));
    let second = cx.tlps[first as usize].next;
    assert_ne!(second, NONE);
    for (cpl, order) in [(first, 0), (second, 256)] {
        let x = &cx.tlps[cpl as usize];
        assert_eq!(
            (x.kind, x.payload, x.order, x.dst),
            (TlpKind::CplD, 256, order, 2)
        );
        assert_eq!(x.owner, t.owner);
    }
    // The request's buffer frees and it is done with.
    assert_eq!(cx.released, vec![(4, FcClass::NonPosted, 1, 0)]);
    assert_eq!(cx.delivered, vec![id]);
}

#[test]
fn a_memory_endpoint_counts_a_write_once_its_write_rate_has_absorbed_it() {
    // 1 GB/s: 256 bytes take 256 ns.
    let mut m = MemoryEndpoint::new(SimTime::ZERO, Some(1e9), 256);
    let mut cx = Recorder::new(system(), 3);
    let t = tlp(TlpKind::MWr, 3, 256);
    let id = arrive(&mut cx, t);
    m.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    assert_eq!(
        cx.scheduled,
        vec![(cx.now + SimTime::from_ns(256), NodeEv::Written(id))]
    );
    assert!(cx.written.is_empty() && cx.released.is_empty());
    cx.now += SimTime::from_ns(256);
    m.event(&mut cx, NodeEv::Written(id));
    // Its credits free, its writer (node 2) hears of it on the channel it came in on.
    assert_eq!(cx.released, vec![(4, FcClass::Posted, 1, 16)]);
    assert_eq!(cx.written, vec![(2, 4)]);
    assert_eq!(cx.delivered, vec![id]);
}

#[test]
fn a_bridge_answers_a_register_read_after_its_latency_and_forwards_the_rest() {
    let sys = system();
    let mut b = Ntb::new(SimTime::from_ns(300));
    let mut cx = Recorder::new(sys, 3);
    let read = tlp(TlpKind::MRd, 3, 4);
    let id = arrive(&mut cx, read);
    b.tlp_arrived(&mut cx, 1, id, read, SimTime::ZERO);
    let (at, c, cpl) = cx.sent[0];
    assert_eq!((at, c), (cx.now + SimTime::from_ns(300), out_toward(2)));
    assert_eq!(cx.tlps[cpl as usize].kind, TlpKind::CplD);
    assert_eq!(cx.delivered, vec![id]);
    // A TLP for another node crosses it.
    let through = tlp(TlpKind::MWr, 0, 64);
    let id = arrive(&mut cx, through);
    b.tlp_arrived(&mut cx, 1, id, through, SimTime::ZERO);
    assert_eq!(cx.sent[1], (cx.now, out_toward(0), id));
}

#[test]
fn a_bridge_sends_its_msi_behind_the_doorbell_and_tells_the_flow_when_it_lands() {
    let sys = system();
    let mut b = Ntb::new(SimTime::from_ns(300));
    let mut cx = Recorder::new(sys, 3);
    // The MSI of flow 5's doorbell that came in on port 1 (cookie: flow << 1 | port).
    let owner = Owner {
        node: 3,
        cookie: 5 << 1 | 1,
    };
    let msi = Tlp {
        order: 42,
        ..Tlp::at_source(TlpKind::MWr, 3, 0, 4, owner)
    };
    let id = cx.new_tlp(msi);
    b.event(&mut cx, NodeEv::BridgeMsi(id));
    assert_eq!(cx.sent_from, vec![(out_toward(0), id, 1)]);
    b.tlp_written(&mut cx, &msi, 9);
    assert_eq!(cx.interrupts, vec![(5, 42)]);
}

#[test]
fn a_rung_doorbell_makes_the_bridge_raise_its_msi_after_its_latency() {
    let mut b = Ntb::new(SimTime::from_ns(300));
    let mut cx = Recorder::new(system(), 3);
    let d = super::context::Doorbell {
        port: 1,
        flow: 5,
        target: 0,
        order: 42,
    };
    b.handle(&mut cx, Call::Doorbell(d));
    let (at, ev) = cx.scheduled[0];
    assert_eq!(at, cx.now + SimTime::from_ns(300));
    let NodeEv::BridgeMsi(id) = ev else {
        panic!("the MSI's event");
    };
    let msi = cx.tlps[id as usize];
    assert_eq!(
        (msi.kind, msi.src, msi.dst, msi.order),
        (TlpKind::MWr, 3, 0, 42)
    );
    assert_eq!(
        msi.owner,
        Owner {
            node: 3,
            cookie: 5 << 1 | 1
        }
    );
}

/// A root complex (node 0) and an NVMe drive (node 1) below it, with a 4 KiB random-read
/// fio workload (0) of one job and one I/O in flight, and a second of writes (1).
fn nvme_system() -> System {
    let text = "[simulation]\nduration = \"1us\"\n\
        [pcie]\nmps = 256\nmrrs = 512\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[endpoint]]\nname = \"ssd\"\nkind = \"nvme\"\nread_latency = \"10us\"\n\
        [[link]]\nbetween = [\"rc\", \"ssd\"]\ngen = 4\nwidth = 4\n\
        [[workload]]\nname = \"r\"\nkind = \"fio\"\nendpoint = \"ssd\"\nrw = \"randread\"\nbs = \"4KiB\"\n\
        [[workload]]\nname = \"w\"\nkind = \"fio\"\nendpoint = \"ssd\"\nrw = \"randwrite\"\nbs = \"4KiB\"\n";
    crate::scenario::load_str(text, "<test>").expect("the system loads")
}

/// The drive of [`nvme_system`] and its recorder, its read workload started: the host's
/// submission doorbell is sent (its TLP id returned).
fn nvme_started() -> (NvmeDrive, Recorder, u32) {
    let sys = nvme_system();
    let crate::fabric::NodeKind::Nvme { tags, spec } = sys.nodes[1].kind else {
        panic!("node 1 is the drive");
    };
    let mut d = NvmeDrive::new(&sys, 1, spec, tags);
    let mut cx = Recorder::new(sys, 1);
    d.workload_start(&mut cx, 0);
    assert_eq!(cx.paced, vec![(0, 0, 4096)]);
    // The host (node 0) writes the doorbell on its channel toward the drive.
    let (_, c, bell) = cx.sent[0];
    assert_eq!(c, cx.toward_from(0, 1));
    let t = cx.tlps[bell as usize];
    assert_eq!((t.kind, t.src, t.dst, t.payload), (TlpKind::MWr, 0, 1, 4));
    (d, cx, bell)
}

#[test]
fn an_nvme_doorbell_makes_the_drive_fetch_the_submission_queue_entry() {
    let (mut d, mut cx, bell) = nvme_started();
    let t = cx.tlps[bell as usize];
    let now = cx.now;
    d.tlp_arrived(&mut cx, 7, bell, t, now);
    // The doorbell is absorbed (its credits free, it is done with) and heard of at once.
    assert_eq!(cx.released, vec![(7, FcClass::Posted, 1, 1)]);
    assert_eq!(cx.delivered, vec![bell]);
    assert!(cx.written.is_empty());
    // The controller reads the 64-byte entry from host memory.
    let (_, c, fetch) = cx.sent[1];
    assert_eq!(c, out_toward(0));
    let r = cx.tlps[fetch as usize];
    assert_eq!((r.kind, r.src, r.dst, r.length), (TlpKind::MRd, 1, 0, 64));
    assert_eq!(r.owner.node, 1);
    // Its TLPs say their workload, from the TLP alone too (the trace asks).
    assert_eq!(d.tlp_workload(&r), Some(0));
    assert_eq!(super::nvme::tlp_workload(&cx.sys, 1, &r), Some(0));
    assert_eq!(super::nvme::tlp_workload(&cx.sys, 1, &t), Some(0));
}

#[test]
fn an_nvme_read_sends_its_data_as_mps_sized_writes_then_completes() {
    let (mut d, mut cx, bell) = nvme_started();
    let t = cx.tlps[bell as usize];
    let now = cx.now;
    d.tlp_arrived(&mut cx, 7, bell, t, now);
    let (_, _, fetch) = cx.sent[1];
    let now = cx.now;
    d.tlp_left(&mut cx, fetch, now);
    // The entry comes back: the command goes to the media, which takes its read latency.
    let r = cx.tlps[fetch as usize];
    let cpl = Tlp::at_source(TlpKind::CplD, 0, 1, 64, r.owner);
    let id = cx.new_tlp(cpl);
    let now = cx.now;
    d.tlp_arrived(&mut cx, 8, id, cpl, now);
    assert_eq!(cx.released[1], (8, FcClass::Completion, 1, 4));
    let (at, ev) = cx.scheduled[0];
    assert!(at >= cx.now + SimTime::from_ns(10_000));
    cx.now = at;
    d.event(&mut cx, ev);
    // Data in MPS-sized writes to host memory, two queued at the link at a time.
    let writes: Vec<_> = cx.sent[2..].iter().map(|s| cx.tlps[s.2 as usize]).collect();
    assert_eq!(writes.len(), 2);
    for (i, w) in writes.iter().enumerate() {
        assert_eq!((w.kind, w.dst, w.payload), (TlpKind::MWr, 0, 256));
        assert_eq!((w.addr, w.order), (256 * i as u32, i as u64));
    }
    // Each leaving makes room for the next: 16 data writes, the completion entry, MSI-X.
    let mut k = 2;
    while k < cx.sent.len() {
        let (_, _, w) = cx.sent[k];
        let now = cx.now;
        d.tlp_left(&mut cx, w, now);
        k += 1;
    }
    let sizes: Vec<_> = cx.sent[2..]
        .iter()
        .map(|s| cx.tlps[s.2 as usize].payload)
        .collect();
    assert_eq!(sizes, [vec![256; 16], vec![16, 4]].concat());
    // The data and the completion entry take effect in order; the data count.
    cx.now += SimTime::from_ns(500);
    let before = cx.sent.len();
    for k in 2..before - 1 {
        let w = cx.tlps[cx.sent[k].2 as usize];
        d.tlp_written(&mut cx, &w, 3);
    }
    assert_eq!(cx.flow_data.len(), 16);
    assert!(cx
        .flow_data
        .iter()
        .all(|&(f, b, l)| f == 0 && b == 256 && l.is_some()));
    // The MSI-X lands: the I/O is done, the host rings the completion doorbell and
    // submits the job's next I/O.
    let msi = cx.tlps[cx.sent[before - 1].2 as usize];
    d.tlp_written(&mut cx, &msi, 3);
    assert_eq!(cx.io_latencies.len(), 1);
    assert_eq!(cx.io_latencies[0].0, 0);
    assert_eq!(cx.paced.len(), 2);
    let rung: Vec<_> = cx.sent[before..]
        .iter()
        .map(|s| cx.tlps[s.2 as usize])
        .collect();
    assert_eq!(rung.len(), 2);
    assert!(rung
        .iter()
        .all(|b| b.kind == TlpKind::MWr && b.src == 0 && b.dst == 1));
    // The completion doorbell belongs to no workload, the next submission to the read's.
    assert_eq!(d.tlp_workload(&rung[0]), None);
    assert_eq!(d.tlp_workload(&rung[1]), Some(0));
    assert_eq!(cx.misordered, 0);
}

#[test]
fn an_nvme_drive_names_each_of_its_workloads_in_its_cookies() {
    let sys = nvme_system();
    let crate::fabric::NodeKind::Nvme { tags, spec } = sys.nodes[1].kind else {
        panic!("node 1 is the drive");
    };
    let mut d = NvmeDrive::new(&sys, 1, spec, tags);
    let mut cx = Recorder::new(sys, 1);
    d.workload_start(&mut cx, 1);
    d.workload_start(&mut cx, 0);
    let bells: Vec<_> = cx.sent.iter().map(|s| cx.tlps[s.2 as usize]).collect();
    let named: Vec<_> = bells.iter().map(|t| d.tlp_workload(t)).collect();
    assert_eq!(named, [Some(1), Some(0)]);
    let statically: Vec<_> = bells
        .iter()
        .map(|t| super::nvme::tlp_workload(&cx.sys, 1, t))
        .collect();
    assert_eq!(statically, named);
}

#[test]
fn a_dma_endpoint_lends_its_tags_and_engines_to_its_flows() {
    let mut d = DmaEndpoint::new(8, DmaDevice::default());
    let mut cx = Recorder::new(system(), 2);
    // Read data for it: its flow takes it, with the endpoint's own tags.
    let cpl = Tlp::at_source(TlpKind::CplD, 0, 2, 256, Owner { node: 2, cookie: 0 });
    let id = arrive(&mut cx, cpl);
    d.tlp_arrived(&mut cx, 4, id, cpl, SimTime::ZERO);
    // Its read engines' wake-up, a request of its leaving, a write of its taking effect.
    d.event(&mut cx, NodeEv::Engine(READ as u32));
    d.tlp_left(&mut cx, id, SimTime::from_ns(5));
    d.tlp_written(&mut cx, &cpl, 9);
    let start = SimTime::from_ns(5).ticks();
    assert_eq!(
        cx.flows,
        vec![
            ("received", [4, id as u64, 0], 8),
            ("engines", [READ as u64, 0, 0], 7),
            ("left", [id as u64, start, 0], 6),
            ("written", [2, 9, 0], 0),
        ]
    );
    // What the flows did with the tags stays in the endpoint.
    assert_eq!(d.free_tags, 5);
    // It neither answers nor frees anything itself: that is its flows' (`sim::flow`).
    assert!(cx.sent.is_empty() && cx.released.is_empty() && cx.delivered.is_empty());
}

#[test]
fn a_gpu_hands_its_reads_data_to_its_copy_engines_and_requests_to_its_bar() {
    let mut g = GpuEndpoint {
        engines: DmaEndpoint::new(4, DmaDevice::default()),
        bar: MemoryEndpoint::new(SimTime::from_ns(500), None, 256),
    };
    let mut cx = Recorder::new(system(), 2);
    // A read into its BAR: the BAR answers it after its latency; no flow hears of it.
    let read = tlp(TlpKind::MRd, 2, 256);
    let rid = arrive(&mut cx, read);
    g.tlp_arrived(&mut cx, 4, rid, read, SimTime::ZERO);
    assert_eq!(cx.sent.len(), 1);
    assert_eq!(cx.delivered, vec![rid]);
    assert!(cx.flows.is_empty());
    // Its copy engines' read data and wake-ups go to its flows, with the engines' tags.
    let cpl = Tlp::at_source(TlpKind::CplD, 0, 2, 256, Owner { node: 2, cookie: 0 });
    let cid = arrive(&mut cx, cpl);
    g.tlp_arrived(&mut cx, 4, cid, cpl, SimTime::ZERO);
    g.event(&mut cx, NodeEv::Engine(WRITE as u32));
    assert_eq!(
        cx.flows,
        vec![
            ("received", [4, cid as u64, 0], 4),
            ("engines", [WRITE as u64, 0, 0], 3),
        ]
    );
    assert_eq!(g.engines.free_tags, 2);
}

#[test]
fn a_storage_hba_frees_a_storage_writes_slot_when_its_media_is_done() {
    let spec = MediaSpec {
        read: 1e9,
        write: 1e9,
        turnaround: SimTime::ZERO,
        seek: SimTime::ZERO,
        duplex: false,
    };
    let mut s = StorageHba::new(16, &spec);
    let mut cx = Recorder::new(system(), 2);
    // Flow 3's storage write in transfer slot 7 runs until its media is done.
    let i = s.drives.finishing(3, 7);
    s.event(&mut cx, NodeEv::MediaDone(i));
    assert_eq!(cx.flows, vec![("media", [3, 7, 0], 16)]);
    assert_eq!(s.free_tags, 15);
    // Its entry is free again: the next storage write takes it.
    assert_eq!(s.drives.finishing(4, 1), i);
    // The data of a storage write reaches its flow with the HBA's tags and drives.
    let cpl = Tlp::at_source(TlpKind::CplD, 0, 2, 256, Owner { node: 2, cookie: 0 });
    let id = arrive(&mut cx, cpl);
    s.tlp_arrived(&mut cx, 4, id, cpl, SimTime::ZERO);
    assert_eq!(cx.flows[1], ("received", [4, id as u64, 0], 15));
}

/// A root complex with the host CPU behind it and a two-port NIC below, fed 64-byte frames
/// (one MWr each at MPS 256) by a bridge workload.
fn nic_system() -> System {
    let text = "[simulation]\nduration = \"1ms\"\n\
        [pcie]\nmps = 256\n\
        [[root_complex]]\nname = \"rc\"\n\
        [[endpoint]]\nname = \"nic\"\nkind = \"nic\"\nports = 2\nregister_time = \"100ns\"\n\
        [[link]]\nbetween = [\"rc\", \"nic\"]\ngen = 1\nwidth = 4\n\
        [cpu]\nframe_cost = \"2us\"\ninterrupt_cost = \"1us\"\nreads_per_interrupt = 1\n\
        writes_per_frame = 1\nwrites_per_interrupt = 1\nposted_depth = 1\n\
        [[workload]]\nname = \"frames\"\nkind = \"bridge\"\nendpoint = \"nic\"\nframe_size = 64\nload = 0.5\n";
    crate::scenario::load_str(text, "<test>").expect("the system loads")
}

/// The NIC (node 1) of [`nic_system`] and a recorder for it.
fn nic() -> (NicEndpoint, Recorder) {
    let sys = nic_system();
    let NodeKind::Nic { tags, nic } = sys.nodes[1].kind else {
        panic!("node 1 is the NIC");
    };
    (NicEndpoint::new(&sys, 1, nic, tags), Recorder::new(sys, 1))
}

/// (channel, kind, bytes (a read's length), destination) of every TLP the recorder's node
/// sent.
fn sent_tlps(cx: &Recorder) -> Vec<(u32, TlpKind, u32, u32)> {
    (cx.sent.iter())
        .map(|&(_, c, id)| {
            let t = &cx.tlps[id as usize];
            (c, t.kind, t.payload.max(t.length), t.dst)
        })
        .collect()
}

#[test]
fn a_frame_reaching_a_nic_is_written_to_host_memory_with_its_descriptor_and_an_msi() {
    let (mut nic, mut cx) = nic();
    nic.start(&mut cx);
    // Both ports' first frames come (the second half a frame time later).
    assert_eq!(cx.scheduled.len(), 2);
    assert_eq!(cx.scheduled[0].1, NodeEv::Frame(0));
    assert_eq!(cx.scheduled[1].1, NodeEv::Frame(1));
    nic.event(&mut cx, NodeEv::Frame(0));
    // The next frame on that port is due; the frame, its descriptor and the MSI go up.
    assert_eq!(cx.scheduled[2].1, NodeEv::Frame(0));
    let up = out_toward(0);
    assert_eq!(
        sent_tlps(&cx),
        vec![
            (up, TlpKind::MWr, 64, 0),
            (up, TlpKind::MWr, 16, 0),
            (up, TlpKind::MWr, 4, 0)
        ]
    );
    // Its MSI landing queues the NIC on its core of the CPU behind root complex 0, once.
    let msi = cx.tlps[cx.sent[2].2 as usize];
    nic.tlp_written(&mut cx, &msi, 7);
    nic.tlp_written(&mut cx, &msi, 7);
    assert_eq!(cx.cpu_interrupts, vec![(0, 0, 1)]);
}

#[test]
fn a_nic_whose_frame_left_at_once_sends_the_next_frame_before_the_write_back() {
    let (mut nic, mut cx) = nic();
    nic.event(&mut cx, NodeEv::Frame(0));
    let sent = cx.sent.len();
    // A second frame waits in the FIFO behind the one being written.
    nic.event(&mut cx, NodeEv::Frame(0));
    assert_eq!(cx.sent.len(), sent);
    // The first frame's data left: the second goes, its write-back behind it.
    let (first, now) = (cx.sent[0].2, cx.now);
    nic.tlp_left(&mut cx, first, now);
    let kinds: Vec<u32> = sent_tlps(&cx)[sent..].iter().map(|x| x.2).collect();
    assert_eq!(kinds, vec![64, 16]);
}

#[test]
fn a_nic_absorbs_the_cpus_register_write_then_fetches_the_announced_descriptors() {
    let (mut nic, mut cx) = nic();
    nic.event(&mut cx, NodeEv::Frame(0));
    // The write-back landed: the driver takes the frame and posts it on port 1.
    let wb = cx.tlps[cx.sent[1].2 as usize];
    nic.tlp_written(&mut cx, &wb, 7);
    assert_eq!(nic.take_received(0), Some((0, 64, 1)));
    nic.post_frame(0);
    let w = nic.register_write((true, true, true));
    // The CPU's write reaches the register engine, which takes `register_time`.
    let owner = Owner {
        node: 0,
        cookie: 1 << 31,
    };
    let write = cx.new_tlp(Tlp::at_source(TlpKind::MWr, 0, 1, 4, owner));
    let t = cx.tlps[write as usize];
    nic.tlp_arrived(&mut cx, 3, write, t, SimTime::ZERO);
    let done = cx.now + SimTime::from_ns(100);
    assert_eq!(cx.scheduled.last(), Some(&(done, NodeEv::Register(write))));
    cx.now = done;
    nic.event(&mut cx, NodeEv::Register(write));
    assert_eq!(cx.released, vec![(3, FcClass::Posted, 1, 1)]);
    assert_eq!(cx.written, vec![(0, 3)]);
    // Its writer tells it what it wrote: port 1 reads its one new descriptor.
    let sent = cx.sent.len();
    nic.handle(&mut cx, Call::RegistersWritten(w));
    assert_eq!(
        sent_tlps(&cx)[sent..],
        [(out_toward(0), TlpKind::MRd, 16, 0)]
    );
}

#[test]
fn a_cpu_core_takes_a_nic_interrupt_reads_its_cause_and_bridges_a_frame() {
    let sys = nic_system();
    let spec = sys.cpu.expect("a CPU");
    let mut cpu = Cpu::new(spec);
    let mut cx = Recorder::new(sys, 0);
    cpu.interrupt(&mut cx, 0, 1);
    assert_eq!(cx.taken, vec![1]);
    let after_entry = cx.now + SimTime::from_ns(1_000);
    assert_eq!(cx.scheduled, vec![(after_entry, NodeEv::Cpu(0))]);
    // After the interrupt's cost it reads the NIC's cause register, and waits.
    cx.now = after_entry;
    cpu.advance(&mut cx, 0);
    assert_eq!(sent_tlps(&cx), vec![(out_toward(1), TlpKind::MRd, 4, 1)]);
    // The read completes: the driver finds a 64-byte frame on port 0 and bridges it.
    cx.received.push((0, 64, 1));
    let cookie = cx.tlps[cx.sent[0].2 as usize].owner.cookie & !(1 << 31);
    cpu.read_done(&mut cx, cookie);
    let bridged = cx.now + SimTime::from_ns(2_000);
    assert_eq!(cx.scheduled.last(), Some(&(bridged, NodeEv::Cpu(0))));
    // Then it posts the frame and rings the doorbell: one posted write (its depth) ...
    cx.now = bridged;
    cpu.advance(&mut cx, 0);
    assert_eq!(cx.posted, vec![(1, 0)]);
    assert_eq!(cx.register_writes, vec![(1, (true, false, false))]);
    assert_eq!(sent_tlps(&cx)[1..], [(out_toward(1), TlpKind::MWr, 4, 1)]);
    // ... and waits for it to leave the root complex before the last write.
    let doorbell = cx.tlps[cx.sent[1].2 as usize];
    cpu.tlp_left(&mut cx, doorbell.owner.cookie & !(1 << 31));
    assert_eq!(cx.scheduled.last(), Some(&(cx.now, NodeEv::Cpu(0))));
    cpu.advance(&mut cx, 0);
    assert_eq!(cx.register_writes[1], (1, (false, true, true)));
    // The doorbell took effect at the NIC: the NIC hears what it was.
    cpu.tlp_written(&mut cx, &doorbell, doorbell.owner.cookie & !(1 << 31));
    assert_eq!(cx.registers.len(), 1);
    assert_eq!(cx.registers[0].0, 1);
}

#[test]
fn a_cxl_expander_answers_a_read_after_its_media_latency_at_its_read_rate() {
    // 170 ns to the media, then 1 GB/s: a 512-byte read's two 256-byte completions leave
    // 256 ns apart, the first once its bytes are read out.
    let mut x = CxlMemory::new(SimTime::from_ns(170), 1e9, 2e9, 256);
    let mut cx = Recorder::new(system(), 3);
    let t = tlp(TlpKind::MRd, 3, 512);
    let id = arrive(&mut cx, t);
    x.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    let first = cx.now + SimTime::from_ns(170 + 256);
    let times: Vec<_> = cx.sent.iter().map(|s| (s.0, s.1)).collect();
    assert_eq!(
        times,
        vec![
            (first, out_toward(2)),
            (first + SimTime::from_ns(256), out_toward(2))
        ]
    );
    for (_, _, cpl) in &cx.sent {
        let c = &cx.tlps[*cpl as usize];
        assert_eq!((c.kind, c.payload, c.dst), (TlpKind::CplD, 256, 2));
    }
    assert_eq!(cx.released, vec![(4, FcClass::NonPosted, 1, 0)]);
    assert_eq!(cx.delivered, vec![id]);
}

#[test]
fn a_cxl_expander_counts_a_write_once_its_write_media_has_absorbed_it() {
    // Its write media (2 GB/s) is not its read media: 256 bytes take 128 ns, then the
    // write counts and its writer hears of it.
    let mut x = CxlMemory::new(SimTime::from_ns(170), 1e9, 2e9, 256);
    let mut cx = Recorder::new(system(), 3);
    let t = tlp(TlpKind::MWr, 3, 256);
    let id = arrive(&mut cx, t);
    x.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    let done = cx.now + SimTime::from_ns(128);
    assert_eq!(cx.scheduled, vec![(done, NodeEv::Written(id))]);
    cx.now = done;
    x.event(&mut cx, NodeEv::Written(id));
    assert_eq!(cx.released, vec![(4, FcClass::Posted, 1, 16)]);
    assert_eq!(cx.written, vec![(2, 4)]);
    assert_eq!(cx.delivered, vec![id]);
}

/// A root complex of `sys` reading its memory after 500 ns, sinking posted writes at
/// `write_rate` bytes/s, completing in MPS-sized pieces, with 4 read tags.
fn root_complex(sys: &System, write_rate: Option<f64>) -> RootComplex {
    let latency = Latency::Fixed(SimTime::from_ns(500));
    let cpu = None;
    RootComplex::new(
        &sys.pcie,
        latency,
        None,
        write_rate,
        None,
        CompletionRule::Mps,
        cpu,
        None,
        None,
        None,
        None,
        4,
    )
}

#[test]
fn a_root_complex_answers_a_read_with_completions_after_its_read_latency() {
    let sys = system();
    let mut rc = root_complex(&sys, None);
    let mut cx = Recorder::new(sys, 0);
    let t = tlp(TlpKind::MRd, 0, 512);
    let id = arrive(&mut cx, t);
    rc.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    // Its memory's latency, drawn once: two 256-byte completions, ready together, queued
    // by one event as a chain toward the requester.
    assert_eq!(cx.samples, 1);
    let ready = cx.now + SimTime::from_ns(500);
    assert_eq!(cx.sent.len(), 1);
    let (at, c, first) = cx.sent[0];
    assert_eq!((at, c), (ready, out_toward(2)));
    let second = cx.tlps[first as usize].next;
    for (cpl, order) in [(first, 0), (second, 256)] {
        let x = &cx.tlps[cpl as usize];
        assert_eq!(
            (x.kind, x.payload, x.order, x.src, x.dst),
            (TlpKind::CplD, 256, order, 0, 2)
        );
        assert_eq!(x.owner, t.owner);
    }
    assert_eq!(cx.released, vec![(4, FcClass::NonPosted, 1, 0)]);
    assert_eq!(cx.delivered, vec![id]);
}

#[test]
fn a_root_complex_absorbs_a_posted_write_at_its_sinks_rate_then_counts_it() {
    // 1 GB/s: 256 bytes take 256 ns in its posted-write sink.
    let sys = system();
    let mut rc = root_complex(&sys, Some(1e9));
    let mut cx = Recorder::new(sys, 0);
    let t = tlp(TlpKind::MWr, 0, 256);
    let id = arrive(&mut cx, t);
    rc.tlp_arrived(&mut cx, 4, id, t, SimTime::ZERO);
    let done = cx.now + SimTime::from_ns(256);
    assert_eq!(cx.scheduled, vec![(done, NodeEv::Written(id))]);
    assert!(cx.released.is_empty() && cx.written.is_empty());
    cx.now = done;
    rc.event(&mut cx, NodeEv::Written(id));
    assert_eq!(cx.released, vec![(4, FcClass::Posted, 1, 16)]);
    assert_eq!(cx.written, vec![(2, 4)]);
    assert_eq!(cx.delivered, vec![id]);
    // A completion for one of its own flows' reads goes to its flow, with its tags lent.
    let owner = Owner { node: 0, cookie: 7 };
    let cpl = Tlp {
        owner,
        ..tlp(TlpKind::CplD, 0, 64)
    };
    let cid = arrive(&mut cx, cpl);
    rc.tlp_arrived(&mut cx, 4, cid, cpl, SimTime::ZERO);
    assert_eq!(cx.flows, vec![("received", [4, cid as u64, 0], 4)]);
}

#[test]
fn a_root_complex_hands_its_host_cpu_its_calls_and_sets_its_own_aside_meanwhile() {
    let sys = nic_system();
    let AnyNode::Root(mut rc) = AnyNode::build(&sys, 0) else {
        panic!("node 0 is a root complex");
    };
    let mut cx = Recorder::new(sys, 0);
    // The NIC's interrupt for core 0: the CPU takes it.
    rc.handle(&mut cx, Call::CpuInterrupt(0, 1));
    assert_eq!(cx.taken, vec![1]);
    let after_entry = cx.now + SimTime::from_ns(1_000);
    assert_eq!(cx.scheduled, vec![(after_entry, NodeEv::Cpu(0))]);
    // The core's event: the CPU reads the NIC's cause register, a TLP the root owns.
    cx.now = after_entry;
    rc.event(&mut cx, NodeEv::Cpu(0));
    assert_eq!(sent_tlps(&cx), vec![(out_toward(1), TlpKind::MRd, 4, 1)]);
    let read = cx.tlps[cx.sent[0].2 as usize];
    assert_eq!(read.owner.node, 0);
    // Its completion reaches the root complex: the CPU goes on and bridges a frame.
    cx.received.push((0, 64, 1));
    let cpl = Tlp::at_source(TlpKind::CplD, 1, 0, 4, read.owner);
    let id = arrive(&mut cx, cpl);
    rc.tlp_arrived(&mut cx, 5, id, cpl, SimTime::ZERO);
    assert_eq!(cx.delivered, vec![id]);
    let bridged = cx.now + SimTime::from_ns(2_000);
    assert_eq!(cx.scheduled.last(), Some(&(bridged, NodeEv::Cpu(0))));
    // Its doorbell write leaves at once, as does a read of the root complex's own flow,
    // while the CPU runs: the CPU hears of its write where it would have nested (so its one
    // posted slot frees for the last write), and the flow's read goes to the root complex.
    cx.now = bridged;
    let own = Owner { node: 0, cookie: 7 };
    let flow_read = arrive(&mut cx, Tlp::at_source(TlpKind::MRd, 0, 1, 64, own));
    let doorbell = cx.tlps.len() as u32;
    cx.calls.push(Call::Left(flow_read, cx.now));
    cx.calls.push(Call::Left(doorbell, cx.now));
    rc.event(&mut cx, NodeEv::Cpu(0));
    let writes: Vec<_> = cx.register_writes.iter().map(|w| w.1).collect();
    assert_eq!(writes, vec![(true, false, false), (false, true, true)]);
    // (It lends its read tags with it: 32 by default.)
    let left = [flow_read as u64, cx.now.ticks(), 0];
    assert_eq!(cx.flows, vec![("left", left, 32)]);
}
