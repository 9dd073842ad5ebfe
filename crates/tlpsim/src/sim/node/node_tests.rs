//! Each kind of node behind [`Node`] driven through a context that records what it did
//! ([`Recorder`]), without a fabric: no channels, no event queue, no other nodes.

use super::context::Context;
use super::cxl::CxlMemory;
use super::memory::MemoryEndpoint;
use super::ntb::Ntb;
use super::switch::Switch;
use super::{Node, NodeEv};
use crate::engine::SimTime;
use crate::fabric::{Core, System};
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
