//! What every completer does, whatever holds its memory (a root complex, a memory endpoint,
//! a GPU's BAR): read requests answered by completions split at RCB-aligned addresses,
//! posted writes that take effect once the memory has them.

use super::{Context, NodeEv};
use crate::engine::SimTime;
use crate::pcie::tlp::{self, TlpKind};
use crate::sim::channel::FcClass;
use crate::sim::{Tlp, NONE};

/// The completer answers read request `id`, received on channel `c`, with completions of at
/// most `size` bytes, split at RCB-aligned addresses from the request's address
/// ([`tlp::completion_piece`]), whose data is ready from `ready` on, each as `pace` (given
/// the context, its bytes and when it could go) says it is through the completer's memory;
/// completions ready at one instant are queued by one event, as a chain.
#[allow(clippy::too_many_arguments)]
pub(in crate::sim) fn complete_read<C: Context>(
    cx: &mut C,
    c: u32,
    id: u32,
    t: Tlp,
    ready: SimTime,
    size: u32,
    mut pace: impl FnMut(&mut C, u32, SimTime) -> SimTime,
) {
    let n = cx.node();
    let out = cx.toward(t.src as usize);
    // Toward a requester under another root complex: across the socket link.
    let across = out == NONE;
    let rcb = cx.sys().pcie.rcb.min(size);
    let mut offset = 0u64;
    // (time, last TLP) of the chain the latest event will queue.
    let mut chain: Option<(SimTime, u32)> = None;
    while offset < t.length as u64 {
        let addr = t.addr as u64 + offset;
        let piece = tlp::completion_piece(addr, t.length - offset as u32, size, rcb);
        let at = pace(cx, piece, ready);
        let cpl = cx.new_tlp(
            Tlp {
                order: offset,
                ..Tlp::at_source(TlpKind::CplD, n as u32, t.src, piece, t.owner)
            }
            .data_at(addr),
        );
        offset += piece as u64;
        if across {
            cx.cross_socket(NONE, cpl, at);
            continue;
        }
        match chain {
            // Ready with the one before: queued right after it, by its event.
            Some((t0, last)) if t0 == at => cx.tlp_mut(last).next = cpl,
            _ => cx.send_by_event(at, out, cpl),
        }
        chain = Some((at, cpl));
    }
    cx.release(c, FcClass::NonPosted, 1, 0);
    cx.deliver(id);
}

/// Posted write `id`, received on channel `c`, will be in the memory at `done`: it takes
/// effect then ([`written`]), by an event of the completer's own if that is later.
pub(in crate::sim) fn write_done_at<C: Context>(cx: &mut C, c: u32, id: u32, done: SimTime) {
    if done > cx.now() {
        cx.tlp_mut(id).ingress = c;
        cx.schedule(done, NodeEv::Written(id));
    } else {
        written(cx, c, id);
    }
}

/// Posted write `id`, received on channel `c`, is in the memory: its credits free and its
/// writer hears of it (a flow's bytes, a bridge's interrupt, a NIC's DMA).
pub(in crate::sim) fn written<C: Context>(cx: &mut C, c: u32, id: u32) {
    let t = *cx.tlp(id);
    cx.release(c, FcClass::Posted, 1, t.data_credits());
    cx.written_by(&t, c);
    cx.deliver(id);
}

/// A completer's own event: a posted write it delayed ([`write_done_at`]) is in its memory.
pub(in crate::sim) fn on_written<C: Context>(cx: &mut C, id: u32) {
    let c = cx.tlp(id).ingress;
    written(cx, c, id);
}
