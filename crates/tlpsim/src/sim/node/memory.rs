//! Memory endpoints: a BAR of plain memory that other requesters write to and read from.
//! Writes count, and free their credits, once the memory has absorbed them at its write
//! rate; reads are answered after the read latency with MPS-sized completions.

use super::{completer, Context, Node, NodeEv};
use crate::engine::SimTime;
use crate::pcie::tlp::TlpKind;
use crate::sim::bottleneck::{Resource, UsedBy};
use crate::sim::throttle::Throttle;
use crate::sim::Tlp;

/// A memory endpoint at run time.
#[derive(Debug)]
pub(in crate::sim) struct MemoryEndpoint {
    /// Read request to the first byte of its completion.
    read_latency: SimTime,
    /// What paces written data into the memory, if its rate is limited.
    write: Option<Throttle>,
    /// Largest completion it sends (MPS).
    cpl_size: u32,
}

impl MemoryEndpoint {
    /// A memory answering reads after `read_latency`, absorbing writes at `write_rate`
    /// bytes/s (unlimited if None), completing in pieces of up to `mps` bytes.
    pub(in crate::sim) fn new(read_latency: SimTime, write_rate: Option<f64>, mps: u32) -> Self {
        MemoryEndpoint {
            read_latency,
            write: write_rate.map(Throttle::new),
            cpl_size: mps,
        }
    }
}

impl Node for MemoryEndpoint {
    fn tlp_arrived<C: Context>(&mut self, cx: &mut C, c: u32, id: u32, t: Tlp, _head: SimTime) {
        let now = cx.now();
        match t.kind {
            TlpKind::MWr => {
                let done = self.write.as_mut().map_or(now, |w| w.pass(now, t.payload));
                completer::write_done_at(cx, c, id, done);
            }
            TlpKind::MRd => {
                let ready = now + self.read_latency;
                completer::complete_read(cx, c, id, t, ready, self.cpl_size, |_, _, at| at);
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

    fn resources(&self, n: usize, name: &str, t: SimTime, out: &mut Vec<Resource>) {
        if let Some(w) = &self.write {
            out.push(w.resource(
                n,
                UsedBy::WritesInto,
                "memory",
                format!("{name} memory (write)"),
                t,
            ));
        }
    }
}
