//! Building a [`Simulator`] from a `System`: every node's ports, one [`Channel`] per link
//! direction (its egress arbiter, wire, data link layer timers and bit error stream), the
//! routes, the nodes and the DMA flows.

use super::*;
use crate::fabric::{Credits, LinkSpec, WorkloadSpec};

/// Each node's ports as indices of `sys.links`: its upstream link first, then its
/// downstream links in file order.
fn port_links(sys: &System) -> Vec<Vec<usize>> {
    let n = sys.nodes.len();
    let mut ports: Vec<Vec<usize>> = vec![Vec::new(); n];
    let mut up_link = vec![usize::MAX; n];
    for (i, l) in sys.links.iter().enumerate() {
        up_link[l.down] = i;
    }
    for (node, p) in ports.iter_mut().enumerate() {
        if up_link[node] != usize::MAX {
            p.push(up_link[node]);
        }
    }
    for (i, l) in sys.links.iter().enumerate() {
        ports[l.up].push(i);
    }
    ports
}

/// The egress arbiter of a node of `kind` with `ports` ports: its weights per input, and
/// whether it serves the oldest TLP first.
fn arbiter_inputs(kind: &NodeKind, ports: usize) -> (Vec<u32>, bool) {
    kind.arbiter_inputs(ports)
}

/// One direction of link `l` with the egress arbiter `(weights, oldest_first)`, toward a
/// receiver that advertises `credits`, at max payload `mps`, its bit errors drawn from
/// `errors`.
fn channel(
    l: &LinkSpec,
    (weights, oldest_first): (Vec<u32>, bool),
    credits: Credits,
    mps: u32,
    errors: Rng,
) -> Channel {
    let wire = Wire::new(l.gen, l.width, l.flit, l.skp);
    let mut ch = Channel::new(wire, l.flit, &weights, credits);
    ch.arbiter.oldest_first = oldest_first;
    ch.phy.prop = l.propagation;
    ch.phy.byte_error = -(8.0 * (-l.ber).ln_1p()); // -ln(1 - p_byte)
    ch.phy.rng = errors;
    let interval = dll::ack_latency_symbols(l.gen, l.width, mps) as u64 * symbol_ticks(l.gen);
    ch.rx_dll.ack_interval = match l.ack {
        AckPolicy::Timer => SimTime::from_ticks(interval),
        AckPolicy::Immediate => SimTime::ZERO,
    };
    ch.tx_dll.timeout = SimTime::from_ticks(3 * interval) + l.propagation + l.propagation;
    ch.tx_dll.capacity = l.replay_buffer;
    ch
}

/// The link directions of a system (channel `2 * link` down, `2 * link + 1` up) and, per
/// channel, the node it delivers to and the ports at both ends.
struct Channels {
    chans: Vec<Channel>,
    rx_node: Vec<u32>,
    rx_port: Vec<u32>,
    tx_port: Vec<u32>,
    /// The egress input of the TLPs that start at the transmitting node.
    own_input: Vec<u32>,
}

impl Channels {
    /// Every link direction of `sys`, whose nodes have the ports `ports`.
    fn new(sys: &System, ports: &[Vec<usize>]) -> Self {
        let port_of = |node: usize, link: usize| {
            ports[node].iter().position(|&p| p == link).unwrap_or(0) as u32
        };
        let mut error_streams = Rng::new(sys.seed);
        let mut out = Channels {
            chans: Vec::new(),
            rx_node: Vec::new(),
            rx_port: Vec::new(),
            tx_port: Vec::new(),
            own_input: Vec::new(),
        };
        for (i, l) in sys.links.iter().enumerate() {
            for (tx, rx) in [(l.up, l.down), (l.down, l.up)] {
                let arbiter = arbiter_inputs(&sys.nodes[tx].kind, ports[tx].len());
                let credits = sys.nodes[rx].credits;
                let errors = error_streams.next_stream();
                out.chans
                    .push(channel(l, arbiter, credits, sys.pcie.mps, errors));
                out.rx_node.push(rx as u32);
                out.rx_port.push(port_of(rx, i));
                out.tx_port.push(port_of(tx, i));
                let root = matches!(sys.nodes[tx].kind, NodeKind::RootComplex { .. });
                out.own_input
                    .push(if root { ports[tx].len() as u32 } else { 0 });
            }
        }
        out
    }
}

impl Flow {
    /// The state of workload `w`'s flow before it starts, its TLPs leaving on channel `out`.
    fn new(sys: &System, w: &WorkloadSpec, out: u32) -> Self {
        // A bridging workload has no streams of its own: its NIC's frames drive it.
        let streams = w.kind.bridge().is_none();
        Flow {
            source: w.source as u32,
            target: w.target as u32,
            out,
            reads: streams && w.direction.reads(),
            writes: streams && w.direction.writes(),
            transfer_size: w.transfer_size,
            tlp_payload: w.tlp_payload.min(sys.pcie.mps) as u64,
            outstanding: w.outstanding,
            write_queued: 0,
            write_left: 0,
            next_order: 0,
            expected_order: 0,
            active: 0,
            transfer_left: Vec::new(),
            free_transfers: Vec::new(),
            current: None,
            addresses: w.addresses,
            next_slot: 0,
            write_addr: 0,
            engines: transfer::Streams::for_workload(sys, w),
            write_read: w.direction == DmaDirection::WriteRead,
            bytes: 0,
            latency: LatencyRecorder::default(),
            transfer_latency: LatencyRecorder::default(),
            transfer_issued: Vec::new(),
            write_taken: 0,
            write_issued: SimTime::ZERO,
            storage: w.kind.storage(),
            ios: 0,
            media_bytes: 0,
            doorbell: w.doorbell,
            transfers_queued: 0,
            interrupts: 0,
            done: 0,
            window_full: OpenSpan::default(),
            window_ticks: 0,
            pace: pace::pacers(w),
        }
    }
}

/// The deadlock watchdog's period: twice the longest of the link timers that recover lost
/// DLLPs and TLPs (the UpdateFC refresh, each replay timer) plus a retrain, so every
/// recovery they start ends within one period, whatever the run's length.
fn watchdog_period(chans: &[Channel], sys: &System) -> SimTime {
    let longest = chans
        .iter()
        .zip(sys.links.iter().flat_map(|l| [l, l]))
        .map(|(c, l)| c.tx_dll.timeout + l.recovery)
        .fold(FC_REFRESH, SimTime::max);
    longest + longest
}

impl<'a> Simulator<'a> {
    /// Builds the runtime state of `sys`.
    pub fn new(sys: &'a System) -> Self {
        let ports = port_links(sys);
        let ch = Channels::new(sys, &ports);
        let crossings = (0..sys.nodes.len()).map(|i| node::switch::Crossing::of(sys, i, &ports[i]));
        let route = route::Routes::new(sys).with_crossings(crossings.collect());
        let nodes = node::context::Nodes::new((0..sys.nodes.len()).map(|i| AnyNode::build(sys, i)));
        let flows = sys
            .workloads
            .iter()
            .map(|w| Flow::new(sys, w, route.next(w.source, w.target)))
            .collect();
        let watchdog = watchdog_period(&ch.chans, sys);
        let mut sim = Simulator {
            sys,
            q: EventQueue::new(),
            rng: Rng::new(sys.seed),
            tlps: Pool::new(),
            window: Window {
                measuring: false,
                snapshot: vec![ChannelCounters::default(); ch.chans.len()],
                busy_at_warmup: Vec::new(),
            },
            chans: ch.chans.into(),
            ends: ChannelEnds {
                rx_node: ch.rx_node.into(),
                rx_port: ch.rx_port.into(),
                own_input: ch.own_input.into(),
                tx_port: ch.tx_port.into(),
            },
            nodes,
            route,
            work: Work {
                flows,
                reqs: Pool::new(),
                dma: Pool::new(),
            },
            audit: Audit::default(),
            watch: Watch {
                sent_at_watchdog: Vec::new(),
                delivered_at_watchdog: 0,
                watchdog,
                progress: progress::Progress::default(),
            },
            host: HostSide {
                bridges: sys
                    .host_bridges
                    .iter()
                    .map(|b| (Calendar::new(b.bandwidth), b.latency))
                    .collect(),
                draining: false,
                sockets: socket::SocketLinks::new(sys),
                outbound: super::outbound::Outbound::of_system(sys),
            },
            trace: None,
            errors: false,
            kernel: Kernel::Auto,
            lean: lean::Lean::default(),
        };
        sim.errors = sim.chans.iter().any(|c| c.phy.byte_error > 0.0);
        sim
    }
}
