//! The receiving end of the data link layer (PCI Express Base Specification, "Data
//! Integrity Mechanisms", §3.6.3): which TLPs it accepts, when it Naks, and the Ack owed.
//!
//! The receiver expects one sequence number next (the spec's NEXT_RCV_SEQ). A TLP that
//! arrives intact with it is accepted and an Ack becomes owed (sent when the Ack/UpdateFC
//! latency timer fires, coalescing what arrived meanwhile). A corrupted TLP is dropped and
//! Nak'd, once: until a good TLP arrives (NAK_SCHEDULED), further bad ones are dropped
//! silently. A TLP with an older sequence number is a duplicate from a replay: dropped and
//! Ack'd again, so the transmitter stops replaying what already arrived.

use crate::engine::SimTime;

/// What the receiver does with a TLP that arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Received {
    /// The expected TLP, intact: it goes to the transaction layer, an Ack is owed.
    Accepted,
    /// Corrupted: dropped; send this Nak (the last sequence number accepted).
    Nak(u64),
    /// A duplicate from a replay: dropped; send this Ack (the last sequence number accepted).
    Duplicate(u64),
    /// Dropped without a DLLP: corrupted or out of order while a Nak is outstanding.
    Dropped,
    /// Intact but later than expected with no Nak outstanding: a TLP went missing, which
    /// the data link layer never allows (the simulator's audit counts it).
    Missing,
}

/// The receiver's data link layer of one link direction.
#[derive(Debug, Clone)]
pub struct DllReceiver {
    /// Interval of the Ack/UpdateFC latency timer (zero: Ack and UpdateFC at once).
    pub ack_interval: SimTime,
    /// Next sequence number expected (NEXT_RCV_SEQ).
    expected: u64,
    /// A Nak was sent and no good TLP has arrived since (NAK_SCHEDULED).
    nak_scheduled: bool,
    /// TLPs accepted and not yet acknowledged.
    ack_owed: bool,
    /// The Ack/UpdateFC timer runs.
    timer: bool,
}

impl Default for DllReceiver {
    fn default() -> Self {
        Self::new(SimTime::ZERO)
    }
}

impl DllReceiver {
    /// A receiver expecting sequence number 1, with an Ack/UpdateFC timer of `ack_interval`.
    pub fn new(ack_interval: SimTime) -> Self {
        DllReceiver {
            ack_interval,
            expected: 1,
            nak_scheduled: false,
            ack_owed: false,
            timer: false,
        }
    }

    /// The next sequence number expected.
    #[inline(always)]
    pub fn expected(&self) -> u64 {
        self.expected
    }

    /// A Nak was sent and no good TLP has arrived since.
    pub fn nak_scheduled(&self) -> bool {
        self.nak_scheduled
    }

    /// Takes a TLP with sequence number `seq` that arrived corrupted (`bad`: LCRC error) or
    /// intact; says what follows.
    #[inline]
    pub fn receive(&mut self, seq: u64, bad: bool) -> Received {
        if bad {
            if self.nak_scheduled {
                return Received::Dropped;
            }
            self.nak_scheduled = true;
            return Received::Nak(self.expected - 1);
        }
        if seq != self.expected {
            return if seq < self.expected {
                Received::Duplicate(self.expected - 1)
            } else if self.nak_scheduled {
                Received::Dropped
            } else {
                Received::Missing
            };
        }
        self.expected += 1;
        self.nak_scheduled = false;
        self.ack_owed = true;
        Received::Accepted
    }

    /// The Ack owed, if any (the last sequence number accepted), clearing it.
    #[inline]
    pub fn take_ack(&mut self) -> Option<u64> {
        std::mem::take(&mut self.ack_owed).then(|| self.expected - 1)
    }

    /// Starts the Ack/UpdateFC timer unless it runs; true if it was stopped (the caller
    /// schedules its expiry).
    #[inline(always)]
    pub fn start_timer(&mut self) -> bool {
        if self.timer {
            false
        } else {
            self.timer = true;
            true
        }
    }

    /// Stops the Ack/UpdateFC timer (it expired with nothing owed).
    #[inline]
    pub fn stop_timer(&mut self) {
        self.timer = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_in_order_and_owes_one_coalesced_ack() {
        let mut rx = DllReceiver::default();
        assert_eq!(rx.take_ack(), None);
        for seq in 1..=3 {
            assert_eq!(rx.receive(seq, false), Received::Accepted);
        }
        assert_eq!(rx.expected(), 4);
        assert_eq!(rx.take_ack(), Some(3));
        assert_eq!(rx.take_ack(), None, "taking the Ack clears it");
    }

    #[test]
    fn naks_a_bad_tlp_once_and_accepts_the_replayed_one() {
        let mut rx = DllReceiver::default();
        assert_eq!(rx.receive(1, false), Received::Accepted);
        // TLP 2 corrupted: Nak 1. TLP 3, sent before the Nak reached the transmitter, is
        // dropped without a second Nak, as is another corrupted one.
        assert_eq!(rx.receive(2, true), Received::Nak(1));
        assert!(rx.nak_scheduled());
        assert_eq!(rx.receive(3, false), Received::Dropped);
        assert_eq!(rx.receive(4, true), Received::Dropped);
        // The replay: 2 and 3 accepted; a good TLP clears the Nak.
        assert_eq!(rx.receive(2, false), Received::Accepted);
        assert!(!rx.nak_scheduled());
        assert_eq!(rx.receive(3, false), Received::Accepted);
        assert_eq!(rx.take_ack(), Some(3));
        // A later corruption is Nak'd again.
        assert_eq!(rx.receive(4, true), Received::Nak(3));
    }

    #[test]
    fn re_acks_a_duplicate() {
        let mut rx = DllReceiver::default();
        for seq in 1..=2 {
            rx.receive(seq, false);
        }
        assert_eq!(rx.take_ack(), Some(2));
        // The Ack was lost; the transmitter's replay timer resends 1 and 2.
        assert_eq!(rx.receive(1, false), Received::Duplicate(2));
        assert_eq!(rx.receive(2, false), Received::Duplicate(2));
        assert_eq!(rx.expected(), 3);
        assert_eq!(rx.take_ack(), None, "a duplicate owes no timer Ack");
    }

    #[test]
    fn a_gap_without_a_nak_is_a_missing_tlp() {
        let mut rx = DllReceiver::default();
        assert_eq!(rx.receive(2, false), Received::Missing);
        assert_eq!(rx.expected(), 1);
    }

    #[test]
    fn timer_starts_once() {
        let mut rx = DllReceiver::new(SimTime::from_ns(268));
        assert!(rx.start_timer());
        assert!(!rx.start_timer());
        rx.stop_timer();
        assert!(rx.start_timer());
    }
}
