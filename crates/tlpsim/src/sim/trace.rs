//! A bounded record of what crossed each wire (TLPs, replays, DLLPs), written as Chrome trace
//! event JSON for Perfetto (ui.perfetto.dev) or chrome://tracing: one track per link
//! direction, one slice per packet from its first to its last byte on the wire.
//!
//! A trace either keeps its packets in memory ([`Trace::new`], for tests and tools that
//! look at them) or streams them to a writer as the run goes ([`Trace::streaming`], what
//! `tlpsim run --trace` uses): memory stays flat however long the trace, and the file is
//! complete JSON once [`Trace::finish`] has written its end.

use std::io::{self, BufWriter, Write};

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
pub struct Trace {
    limit: usize,
    /// Packets kept so far.
    kept: usize,
    sink: Sink,
    /// Packets not kept once the limit was reached.
    pub dropped: u64,
}

/// Where a trace's packets go.
enum Sink {
    /// Kept in memory.
    Memory(Vec<WireEvent>),
    /// Written as Chrome trace JSON as they come.
    Stream(ChromeWriter<BufWriter<Box<dyn Write + Send>>>),
}

impl std::fmt::Debug for Trace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trace")
            .field("limit", &self.limit)
            .field("kept", &self.kept)
            .field("streaming", &matches!(self.sink, Sink::Stream(_)))
            .field("dropped", &self.dropped)
            .finish()
    }
}

/// What a streamed trace wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Written {
    /// Packets written.
    pub kept: usize,
    /// Packets left out once the limit was reached (the file's `dropped` field).
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

impl Trace {
    /// An empty trace that keeps at most `limit` packets in memory.
    pub fn new(limit: usize) -> Self {
        Trace {
            limit,
            kept: 0,
            sink: Sink::Memory(Vec::new()),
            dropped: 0,
        }
    }

    /// A trace that writes at most `limit` packets to `out` as they come, as Chrome trace
    /// JSON with tracks and workloads named after `system`'s links and workloads; call
    /// [`Trace::finish`] at the end. An error writing stops the writing, not the run, and
    /// is returned by `finish`.
    pub fn streaming(limit: usize, system: &System, out: Box<dyn Write + Send>) -> Self {
        let out = BufWriter::with_capacity(1 << 20, out);
        Trace {
            limit,
            kept: 0,
            sink: Sink::Stream(ChromeWriter::start(out, system)),
            dropped: 0,
        }
    }

    /// Notes `packet` on channel `chan`'s wire from `start` to `end` (or counts it as dropped
    /// past the limit). Kept out of line: the simulator calls it only when tracing.
    #[cold]
    #[inline(never)]
    pub fn record(&mut self, chan: u32, start: SimTime, end: SimTime, packet: Packet) {
        if self.kept >= self.limit {
            self.dropped += 1;
            return;
        }
        self.kept += 1;
        let e = WireEvent {
            chan,
            start,
            end,
            packet,
        };
        match &mut self.sink {
            Sink::Memory(events) => events.push(e),
            Sink::Stream(w) => w.event(&e),
        }
    }

    /// The packets kept in memory, in the order they were sent (none for a streamed trace).
    pub fn events(&self) -> &[WireEvent] {
        match &self.sink {
            Sink::Memory(events) => events,
            Sink::Stream(_) => &[],
        }
    }

    /// Ends a streamed trace: writes the end of the JSON and flushes it. For a trace in
    /// memory, nothing to write.
    pub fn finish(self) -> io::Result<Written> {
        if let Sink::Stream(w) = self.sink {
            w.finish(self.dropped)?.flush()?;
        }
        Ok(Written {
            kept: self.kept,
            dropped: self.dropped,
        })
    }

    /// The packets kept in memory as Chrome trace event JSON, tracks and workloads named
    /// after `system`'s links ("rc-sw down") and workloads (empty for a streamed trace).
    pub fn to_chrome_json(&self, system: &System) -> String {
        let mut w = ChromeWriter::start(Vec::new(), system);
        for e in self.events() {
            w.event(e);
        }
        match w.finish(self.dropped) {
            Ok(bytes) => String::from_utf8(bytes).unwrap_or_default(),
            Err(_) => String::new(), // a Vec takes every write
        }
    }
}

/// Writes Chrome trace JSON one event at a time: `{"traceEvents":[` and a named track per
/// link direction first, a slice per packet, then `],"displayTimeUnit":"ns","dropped":N}`.
struct ChromeWriter<W: Write> {
    json: Events<W>,
    /// Workload names, by index.
    flows: Vec<String>,
}

/// The output of a [`ChromeWriter`]: events separated by commas, the first error kept.
struct Events<W: Write> {
    out: W,
    /// An event was written (the next one needs a comma).
    any: bool,
    /// The first error writing; nothing more is written after it.
    error: Option<io::Error>,
}

impl<W: Write> Events<W> {
    /// Runs `write` on the output unless an earlier write failed; keeps its error.
    fn put(&mut self, write: impl FnOnce(&mut W) -> io::Result<()>) {
        if self.error.is_none() {
            if let Err(e) = write(&mut self.out) {
                self.error = Some(e);
            }
        }
    }

    /// Writes one event, after a comma when it is not the first.
    fn event(&mut self, event: &ChromeEvent) {
        let comma = std::mem::replace(&mut self.any, true);
        self.put(|out| {
            if comma {
                out.write_all(b",")?;
            }
            serde_json::to_writer(&mut *out, event).map_err(io::Error::from)
        });
    }
}

impl<W: Write> ChromeWriter<W> {
    /// Opens the JSON on `out` with one named track per link direction of `system`.
    fn start(out: W, system: &System) -> Self {
        let mut json = Events {
            out,
            any: false,
            error: None,
        };
        json.put(|out| out.write_all(b"{\"traceEvents\":["));
        let channels = system
            .links
            .iter()
            .flat_map(|l| [format!("{} down", l.name), format!("{} up", l.name)]);
        for (c, name) in channels.enumerate() {
            json.event(&ChromeEvent {
                name: "thread_name".into(),
                cat: "__metadata",
                ph: "M",
                ts: 0.0,
                dur: None,
                pid: 1,
                tid: c as u32 + 1,
                args: Some(Args {
                    name: Some(name),
                    seq: None,
                    flow: None,
                }),
            });
        }
        ChromeWriter {
            json,
            flows: system.workloads.iter().map(|w| w.name.clone()).collect(),
        }
    }

    /// Writes one packet's slice.
    fn event(&mut self, e: &WireEvent) {
        let us = |t: SimTime| t.as_ns_f64() / 1000.0;
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
                flow.and_then(|f| self.flows.get(f as usize)),
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
        self.json.event(&ChromeEvent {
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
                flow: flow.map(String::as_str),
            }),
        });
    }

    /// Closes the JSON with the count of packets left out; the output back, or the first
    /// error writing.
    fn finish(mut self, dropped: u64) -> io::Result<W> {
        self.json
            .put(|out| write!(out, "],\"displayTimeUnit\":\"ns\",\"dropped\":{dropped}}}"));
        match self.json.error {
            Some(e) => Err(e),
            None => Ok(self.json.out),
        }
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
