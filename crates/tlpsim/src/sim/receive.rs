//! The receive side of the simulator: the data link layer taking TLPs in order (Ack owed,
//! Nak on a bad one), credits freed back to the transmitter, and the transaction layer
//! handing each accepted TLP to the node it reached.

use super::*;

impl Simulator<'_> {
    /// The receiver of channel `c` frees credits; an UpdateFC follows on the timer.
    pub(in crate::sim) fn rx_release(&mut self, c: u32, class: FcClass, h: u32, d: u32) {
        if c == socket::SOCKET {
            // Came across a socket link: its buffer freed as it crossed.
            return;
        }
        self.rx_free(c, class, h, d);
    }

    /// [`Self::rx_release`] on a link's channel (the lean kernel's, which has no socket
    /// link): the credits freed, the Ack/UpdateFC timer started if it was stopped.
    #[inline(always)]
    pub(in crate::sim) fn rx_free(&mut self, c: u32, class: FcClass, h: u32, d: u32) {
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if ch.rx_credits.free(class, h, d) && ch.rx_dll.start_timer() {
            let at = now + ch.rx_dll.ack_interval;
            self.q.schedule(at, Ev::DllTimer(c));
        }
    }

    /// A TLP's last byte reaches channel `c`'s receiver: a nullified copy is dropped, any
    /// other goes through the data link layer and, if accepted and not forwarded by a
    /// switch's own event, to the transaction layer.
    pub(in crate::sim) fn on_tlp(&mut self, c: u32, a: Arrival) {
        if a.nullified {
            // Dropped by the data link layer without a Nak or a sequence number; gone unless
            // a cut-through switch here sends it on (still nullified).
            if !a.forwarded {
                self.tlps.release(a.tlp);
            }
            return;
        }
        if self.dll_receive(c, &a) && !a.forwarded {
            self.tlp_receive(c, a.tlp, a.head);
        }
    }

    /// The data link layer of channel `c`'s receiver takes a TLP whose last byte has
    /// arrived: a corrupted one is Nak'd, a duplicate Ack'd again, the expected one accepted
    /// (Ack owed). Returns whether it was accepted.
    fn dll_receive(&mut self, c: u32, a: &Arrival) -> bool {
        use crate::pcie::dll::receive::Received;
        let &Arrival { seq, bad, tail, .. } = a;
        let now = self.now();
        let ch = &mut self.chans[c as usize];
        if bad {
            ch.counters.bad_tlps += 1;
        }
        match ch.rx_dll.receive(seq, bad) {
            Received::Accepted => {
                if ch.rx_dll.start_timer() {
                    let at = (tail + ch.rx_dll.ack_interval).max(now);
                    self.q.schedule(at, Ev::DllTimer(c));
                }
                true
            }
            Received::Nak(s) => {
                self.send_dllp(c, Dllp::Nak(s));
                false
            }
            Received::Duplicate(s) => {
                // A duplicate from a replay: discard, acknowledge again.
                self.send_dllp(c, Dllp::Ack(s));
                false
            }
            Received::Missing => {
                // A TLP is missing before this one.
                self.audit.sequence_violations += 1;
                false
            }
            Received::Dropped => false,
        }
    }

    /// The transaction layer of channel `c`'s receiver takes accepted TLP `id` (first byte
    /// arrived at `head`) into the receive buffer and hands it to the node there.
    #[inline(always)]
    pub(in crate::sim) fn tlp_receive(&mut self, c: u32, id: u32, head: SimTime) {
        let ch = &mut self.chans[c as usize];
        let t = self.tlps[id as usize];
        if !t.live {
            self.audit.duplicates += 1;
            return;
        }
        if !ch.rx_credits.take(t.class(), 1, t.data_credits()) {
            self.audit.credit_violations += 1;
        }
        let n = self.ends.rx_node[c as usize] as usize;
        AnyNode::tlp_arrived(self, n, c, id, t, head);
    }
}
