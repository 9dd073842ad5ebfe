//! A bounded record of what crossed each wire (TLPs, replays, DLLPs), written as Chrome trace
//! event JSON for Perfetto (ui.perfetto.dev) or chrome://tracing: one track per link
//! direction, one slice per packet from its first to its last byte on the wire.

use serde::Serialize;

use crate::engine::SimTime;
use crate::fabric::System;
use crate::pcie::dll::Dllp;
use crate::pcie::tlp::TlpKind;

/// Packets a trace keeps unless told otherwise.
pub const DEFAULT_LIMIT: usize = 200_000;

/// What went over the wire.
#[derive(Debug, Clone, Copy)]
pub enum Packet {
    /// A TLP: its type, payload (or requested length), sequence number, whether it is a
    /// replay, and the index of the workload it belongs to (None for NIC and CPU traffic).
    Tlp {
        /// TLP type.
        kind: TlpKind,
        /// Payload bytes (MWr, CplD) or bytes requested (MRd).
        bytes: u32,
        /// Data link layer sequence number.
        seq: u64,
        /// Sent again from the replay buffer.
        replay: bool,
        /// The workload's index.
        flow: Option<u32>,
        /// The address of its first byte (an offset into its workload's buffer; 0 for NIC
        /// and CPU traffic).
        addr: u32,
    },
    /// A replay of a TLP the receiver had already taken (it will discard it): its sequence
    /// number and bytes on the wire.
    Duplicate {
        /// Data link layer sequence number.
        seq: u64,
        /// Bytes on the wire, framing included.
        wire_bytes: u32,
    },
    /// A cut-through switch's nullified copy of a corrupted TLP (EDB, inverted LCRC).
    Nullified {
        /// TLP type.
        kind: TlpKind,
        /// Payload bytes (MWr, CplD) or bytes requested (MRd).
        bytes: u32,
    },
    /// A DLLP.
    Dllp(Dllp),
}

/// One packet on one channel's wire.
#[derive(Debug, Clone, Copy)]
pub struct WireEvent {
    /// Channel (2 × link for down, 2 × link + 1 for up).
    pub chan: u32,
    /// First byte on the wire.
    pub start: SimTime,
    /// Last byte on the wire.
    pub end: SimTime,
    /// What it was.
    pub packet: Packet,
}

/// The packets of a run, the first `limit` of them.
#[derive(Debug, Clone)]
pub struct Trace {
    limit: usize,
    events: Vec<WireEvent>,
    /// Packets not kept once the limit was reached.
    pub dropped: u64,
}

/// One Chrome trace event.
#[derive(Serialize)]
struct ChromeEvent<'a> {
    name: String,
    cat: &'static str,
    ph: &'static str,
    /// Microseconds.
    ts: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    dur: Option<f64>,
    pid: u32,
    tid: u32,
    #[serde(skip_serializing_if = "Option::is_none")]
    args: Option<Args<'a>>,
}

/// Arguments shown with a slice, or a track's name.
#[derive(Serialize)]
struct Args<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    name: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    seq: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    flow: Option<&'a str>,
}

/// The whole file.
#[derive(Serialize)]
struct ChromeTrace<'a> {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<ChromeEvent<'a>>,
    #[serde(rename = "displayTimeUnit")]
    display_time_unit: &'static str,
    /// Packets left out once the limit was reached.
    dropped: u64,
}

impl Trace {
    /// An empty trace that keeps at most `limit` packets.
    pub fn new(limit: usize) -> Self {
        Trace {
            limit,
            events: Vec::new(),
            dropped: 0,
        }
    }

    /// Notes `packet` on channel `chan`'s wire from `start` to `end` (or counts it as dropped
    /// past the limit). Kept out of line: the simulator calls it only when tracing.
    #[cold]
    #[inline(never)]
    pub fn record(&mut self, chan: u32, start: SimTime, end: SimTime, packet: Packet) {
        if self.events.len() < self.limit {
            self.events.push(WireEvent {
                chan,
                start,
                end,
                packet,
            });
        } else {
            self.dropped += 1;
        }
    }

    /// The packets kept, in the order they were sent.
    pub fn events(&self) -> &[WireEvent] {
        &self.events
    }

    /// The trace as Chrome trace event JSON, tracks and workloads named after `system`'s
    /// links ("rc-sw down") and workloads.
    pub fn to_chrome_json(&self, system: &System) -> String {
        let channels: Vec<String> = system
            .links
            .iter()
            .flat_map(|l| [format!("{} down", l.name), format!("{} up", l.name)])
            .collect();
        let flows: Vec<&str> = system.workloads.iter().map(|w| w.name.as_str()).collect();
        let us = |t: SimTime| t.as_ns_f64() / 1000.0;
        let mut out: Vec<ChromeEvent> = channels
            .iter()
            .enumerate()
            .map(|(c, name)| ChromeEvent {
                name: "thread_name".into(),
                cat: "__metadata",
                ph: "M",
                ts: 0.0,
                dur: None,
                pid: 1,
                tid: c as u32 + 1,
                args: Some(Args {
                    name: Some(name.clone()),
                    seq: None,
                    flow: None,
                }),
            })
            .collect();
        out.reserve(self.events.len());
        for e in &self.events {
            let (name, cat, seq, flow) = match e.packet {
                Packet::Tlp {
                    kind,
                    bytes,
                    seq,
                    replay,
                    flow,
                    ..
                } => (
                    format!("{}{kind:?} {bytes} B", if replay { "replay " } else { "" }),
                    if replay { "replay" } else { "tlp" },
                    Some(seq),
                    flow.and_then(|f| flows.get(f as usize).copied()),
                ),
                Packet::Duplicate { seq, wire_bytes } => (
                    format!("replay (duplicate) {wire_bytes} B on the wire"),
                    "replay",
                    Some(seq),
                    None,
                ),
                Packet::Nullified { kind, bytes } => (
                    format!("nullified {kind:?} {bytes} B"),
                    "nullified",
                    None,
                    None,
                ),
                Packet::Dllp(d) => (dllp_name(d), "dllp", None, None),
            };
            out.push(ChromeEvent {
                name,
                cat,
                ph: "X",
                ts: us(e.start),
                dur: Some(us(e.end.saturating_sub(e.start))),
                pid: 1,
                tid: e.chan + 1,
                args: Some(Args {
                    name: None,
                    seq,
                    flow,
                }),
            });
        }
        serde_json::to_string(&ChromeTrace {
            trace_events: out,
            display_time_unit: "ns",
            dropped: self.dropped,
        })
        .unwrap_or_default()
    }
}

/// A DLLP as a slice name: "Ack 41", "Nak 7", "UpdateFC-P".
fn dllp_name(d: Dllp) -> String {
    match d {
        Dllp::Ack(s) => format!("Ack {s}"),
        Dllp::Nak(s) => format!("Nak {s}"),
        Dllp::UpdateFc(class, ..) => format!("UpdateFC-{}", class.name()),
    }
}
