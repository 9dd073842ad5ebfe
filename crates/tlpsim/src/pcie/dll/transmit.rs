//! The transmitting end of the data link layer (PCI Express Base Specification, "Data
//! Integrity Mechanisms", §3.6.2): sequence numbers, the replay buffer and the replay timer.
//!
//! Every TLP sent for the first time gets the next sequence number (the spec's
//! NEXT_TRANSMIT_SEQ) and a copy in the replay buffer until the receiver acknowledges it.
//! An Ack purges the buffer up to its sequence number; a Nak purges the same way and then
//! replays everything left; the replay timer, running while anything is unacknowledged,
//! replays everything left when it expires. Sequence numbers here are cumulative `u64`s
//! (the spec's are 12 bits, modulo 4096) starting at 1, so "acknowledged" is `seq <= n`;
//! the spec's 12-bit limit still holds: at most [`MAX_UNACKED`] TLPs are unacknowledged.
//!
//! REPLAY_NUM counts the replays begun (by a Nak or the replay timer) since the last Ack
//! that acknowledged something; when it rolls over from 11b to 00b (the fourth replay of the
//! same TLP) the data link layer directs the physical layer to retrain the link (Recovery)
//! before the replay goes on ([`DllTransmitter::take_retrain`]).

use std::collections::VecDeque;

use crate::engine::SimTime;

/// The most TLPs a transmitter keeps unacknowledged: it must not send a new TLP while
/// (NEXT_TRANSMIT_SEQ - ACKD_SEQ) mod 4096 >= 2048 (PCI Express Base Specification, "Data
/// Integrity Mechanisms", transmitter rules), and that difference is one more than the TLPs
/// unacknowledged.
pub const MAX_UNACKED: usize = 2047;

/// Replays that roll REPLAY_NUM (2 bits) over to 00b: the fourth replay without progress.
const REPLAY_NUM_ROLLOVER: u8 = 4;

/// A sent TLP held until acknowledged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayEntry {
    /// Sequence number.
    pub seq: u64,
    /// The sender's handle for the TLP (the simulator's slab index, or on its lean kernel a
    /// packed write, never a slab index; only dereferenced if the receiver has not taken
    /// this sequence number).
    pub tlp: u32,
    /// Bytes on the wire, framing included.
    pub bytes: u32,
}

/// What the replay timer's event found when it fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayTimer {
    /// The timer is stopped (or expired with nothing left to replay): nothing to do.
    Idle,
    /// It was restarted since the event was scheduled: the event is due again at this time.
    Pending(SimTime),
    /// It expired with TLPs unacknowledged: every one of them is to be replayed.
    Expired,
}

/// The transmitter's data link layer of one link direction.
#[derive(Debug, Clone)]
pub struct DllTransmitter {
    /// Capacity of the replay buffer in bytes (`u32::MAX`: unlimited).
    pub capacity: u32,
    /// Replay timer limit (REPLAY_TIMER's expiry).
    pub timeout: SimTime,
    /// Next sequence number to assign (NEXT_TRANSMIT_SEQ).
    next_seq: u64,
    /// Sent, not yet acknowledged, oldest first.
    buffer: VecDeque<ReplayEntry>,
    /// Bytes in `buffer`.
    bytes: u32,
    /// Index into `buffer` of the next TLP to resend, while replaying.
    replay_next: Option<usize>,
    /// When the replay timer expires, if running.
    deadline: Option<SimTime>,
    /// A timer event is pending (scheduled for the deadline it had then, or earlier).
    event: bool,
    /// REPLAY_NUM: replays begun since an Ack or Nak last acknowledged something.
    replay_num: u8,
    /// REPLAY_NUM rolled over: the link is to retrain before the replay goes on.
    retrain: bool,
}

impl Default for DllTransmitter {
    fn default() -> Self {
        Self::new(u32::MAX, SimTime::ZERO)
    }
}

impl DllTransmitter {
    /// A transmitter with a replay buffer of `capacity` bytes and a replay timer of
    /// `timeout`; the first TLP gets sequence number 1.
    pub fn new(capacity: u32, timeout: SimTime) -> Self {
        DllTransmitter {
            capacity,
            timeout,
            next_seq: 1,
            buffer: VecDeque::new(),
            bytes: 0,
            replay_next: None,
            deadline: None,
            event: false,
            replay_num: 0,
            retrain: false,
        }
    }

    /// Whether a new TLP of `bytes` on the wire may go now: it fits in the replay buffer and
    /// fewer than [`MAX_UNACKED`] TLPs are unacknowledged (the sequence number window).
    #[inline(always)]
    pub fn has_room(&self, bytes: u32) -> bool {
        self.bytes as u64 + bytes as u64 <= self.capacity as u64 && self.buffer.len() < MAX_UNACKED
    }

    /// Assigns the next sequence number to a new TLP (`tlp`, `bytes` on the wire) and keeps
    /// a copy in the replay buffer; returns that copy.
    #[inline(always)]
    pub fn push(&mut self, tlp: u32, bytes: u32) -> ReplayEntry {
        let e = ReplayEntry {
            seq: self.next_seq,
            tlp,
            bytes,
        };
        self.next_seq += 1;
        self.buffer.push_back(e);
        self.bytes += bytes;
        e
    }

    /// The next TLP to resend while a replay is under way (advancing it), else None.
    #[inline(always)]
    pub fn next_replay(&mut self) -> Option<ReplayEntry> {
        let i = self.replay_next?;
        let e = self.buffer[i];
        self.replay_next = (i + 1 < self.buffer.len()).then_some(i + 1);
        Some(e)
    }

    /// True while a replay is under way (TLPs of the buffer wait to be resent).
    #[inline(always)]
    pub fn is_replaying(&self) -> bool {
        self.replay_next.is_some()
    }

    /// TLPs sent and not yet acknowledged.
    pub fn unacked(&self) -> usize {
        self.buffer.len()
    }

    /// Bytes held in the replay buffer.
    pub fn bytes(&self) -> u32 {
        self.bytes
    }

    /// The sequence number the next new TLP gets.
    pub fn next_seq(&self) -> u64 {
        self.next_seq
    }

    /// When the replay timer expires, if it runs.
    pub fn deadline(&self) -> Option<SimTime> {
        self.deadline
    }

    /// REPLAY_NUM: replays begun since the last Ack or Nak that acknowledged something
    /// (0 to 3; it rolls over on the fourth).
    pub fn replay_num(&self) -> u8 {
        self.replay_num
    }

    /// True once after REPLAY_NUM rolled over: the link is to retrain (the caller holds the
    /// wire for the Recovery time, during which the replay waits).
    #[inline]
    pub fn take_retrain(&mut self) -> bool {
        std::mem::take(&mut self.retrain)
    }

    /// Begins a replay of the whole buffer from its oldest entry, counting it in REPLAY_NUM.
    fn begin_replay(&mut self) {
        self.replay_next = Some(0);
        self.replay_num += 1;
        if self.replay_num == REPLAY_NUM_ROLLOVER {
            self.replay_num = 0;
            self.retrain = true;
        }
    }

    /// Removes the acknowledged entries (sequence number ≤ `seq`); returns how many. A
    /// replay under way goes on from the same TLP.
    #[inline]
    fn purge(&mut self, seq: u64) -> usize {
        let mut n = 0;
        while self.buffer.front().is_some_and(|e| e.seq <= seq) {
            let e = self.buffer.pop_front().expect("front exists");
            self.bytes -= e.bytes;
            n += 1;
        }
        if n > 0 {
            self.replay_num = 0;
        }
        if let Some(i) = self.replay_next {
            self.replay_next = if self.buffer.is_empty() {
                None
            } else {
                Some(i.saturating_sub(n))
            };
        }
        n
    }

    /// Takes an Ack of everything up to `seq` at `now`: purges the replay buffer; if that
    /// freed anything, the replay timer stops (buffer empty) or restarts. Returns the time
    /// of a timer event to schedule, if one is needed (see [`Self::restart_timer`]).
    #[inline]
    pub fn on_ack(&mut self, seq: u64, now: SimTime) -> Option<SimTime> {
        if self.purge(seq) == 0 {
            return None;
        }
        if self.buffer.is_empty() {
            self.deadline = None;
            None
        } else {
            self.restart_timer(now)
        }
    }

    /// Takes a Nak at `now`: everything up to `seq` arrived, the TLP after it did not.
    /// Purges as an Ack does, then replays the rest of the buffer from its oldest entry.
    /// Returns the time of a timer event to schedule, if one is needed.
    pub fn on_nak(&mut self, seq: u64, now: SimTime) -> Option<SimTime> {
        let at = self.on_ack(seq, now);
        if !self.buffer.is_empty() {
            self.begin_replay();
        }
        at
    }

    /// Starts the replay timer at `now` unless it runs already (a TLP was just sent).
    /// Returns the time of a timer event to schedule, if one is needed.
    #[inline(always)]
    pub fn start_timer(&mut self, now: SimTime) -> Option<SimTime> {
        if self.deadline.is_none() {
            self.restart_timer(now)
        } else {
            None
        }
    }

    /// (Re)starts the replay timer at `now`. Returns its new deadline if no timer event is
    /// pending (the caller schedules one then); a pending event, due no later than the new
    /// deadline, moves itself on when it fires ([`Self::on_timer`]).
    #[inline]
    pub fn restart_timer(&mut self, now: SimTime) -> Option<SimTime> {
        let deadline = now + self.timeout;
        self.deadline = Some(deadline);
        if self.event {
            None
        } else {
            self.event = true;
            Some(deadline)
        }
    }

    /// The timer event fires at `now`: it is due again later if the timer was restarted,
    /// else the timer expires and, if anything is unacknowledged, a replay of all of it
    /// begins.
    pub fn on_timer(&mut self, now: SimTime) -> ReplayTimer {
        self.event = false;
        match self.deadline {
            None => ReplayTimer::Idle,
            Some(d) if d > now => {
                self.event = true;
                ReplayTimer::Pending(d)
            }
            Some(_) => {
                self.deadline = None;
                if self.buffer.is_empty() {
                    ReplayTimer::Idle
                } else {
                    self.begin_replay();
                    ReplayTimer::Expired
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TIMEOUT: SimTime = SimTime::from_ns(1000);

    fn ns(n: u64) -> SimTime {
        SimTime::from_ns(n)
    }

    /// A transmitter that sent `n` TLPs of 100 bytes (handles 0..n, sequence numbers 1..=n)
    /// at time zero, its replay timer started by the first.
    fn sent(n: u32) -> DllTransmitter {
        let mut tx = DllTransmitter::new(u32::MAX, TIMEOUT);
        for k in 0..n {
            let e = tx.push(k, 100);
            assert_eq!(e.seq, k as u64 + 1);
            let at = tx.start_timer(SimTime::ZERO);
            assert_eq!(at, (k == 0).then_some(TIMEOUT), "one timer event");
        }
        tx
    }

    /// The sequence numbers a replay sends, to its end.
    fn replayed(tx: &mut DllTransmitter) -> Vec<u64> {
        std::iter::from_fn(|| tx.next_replay().map(|e| e.seq)).collect()
    }

    #[test]
    fn ack_purges_the_replay_buffer_up_to_its_sequence_number() {
        let mut tx = sent(5);
        assert_eq!(tx.bytes(), 500);
        // The timer restarts (the pending event moves itself on, so nothing to schedule).
        assert_eq!(tx.on_ack(3, ns(200)), None);
        assert_eq!((tx.unacked(), tx.bytes()), (2, 200));
        assert_eq!(tx.deadline(), Some(ns(200) + TIMEOUT));
        assert!(!tx.is_replaying());
        // A stale Ack frees nothing and leaves the timer alone.
        assert_eq!(tx.on_ack(2, ns(300)), None);
        assert_eq!(tx.deadline(), Some(ns(200) + TIMEOUT));
        // Acknowledging everything stops the timer.
        assert_eq!(tx.on_ack(5, ns(400)), None);
        assert_eq!((tx.unacked(), tx.deadline()), (0, None));
        assert_eq!(tx.push(9, 100).seq, 6);
    }

    #[test]
    fn nak_purges_then_replays_from_the_next() {
        let mut tx = sent(5);
        // Nak 2: TLPs 1 and 2 arrived, 3 was corrupted: 3, 4, 5 go again, in order.
        tx.on_nak(2, ns(100));
        assert!(tx.is_replaying());
        assert_eq!(tx.unacked(), 3);
        assert_eq!(replayed(&mut tx), [3, 4, 5]);
        // The replayed copies stay until acknowledged.
        assert_eq!(tx.unacked(), 3);
        // A Nak with nothing left unacknowledged replays nothing.
        let mut tx = sent(2);
        tx.on_nak(2, ns(100));
        assert!(!tx.is_replaying());
    }

    #[test]
    fn ack_during_a_replay_skips_what_it_acknowledges() {
        let mut tx = sent(5);
        tx.on_nak(1, ns(100));
        assert_eq!(tx.next_replay().map(|e| e.seq), Some(2));
        // The receiver had 2..=3 after all: the replay goes on with 4.
        tx.on_ack(3, ns(200));
        assert_eq!(replayed(&mut tx), [4, 5]);
    }

    #[test]
    fn replay_timer_expiry_replays_everything_unacknowledged() {
        let mut tx = sent(4);
        tx.on_ack(1, ns(400));
        // The event scheduled for the first deadline finds the timer restarted.
        assert_eq!(
            tx.on_timer(TIMEOUT),
            ReplayTimer::Pending(ns(400) + TIMEOUT)
        );
        assert_eq!(tx.on_timer(ns(400) + TIMEOUT), ReplayTimer::Expired);
        assert_eq!(replayed(&mut tx), [2, 3, 4]);
        assert_eq!(tx.deadline(), None);
        // The first replayed TLP starts the timer again, with a fresh event.
        assert_eq!(tx.start_timer(ns(1500)), Some(ns(1500) + TIMEOUT));
        // Acknowledged in the meantime: the timer stops and its event finds nothing to do.
        tx.on_ack(4, ns(1600));
        assert_eq!(tx.on_timer(ns(1500) + TIMEOUT), ReplayTimer::Idle);
    }

    #[test]
    fn replay_buffer_room_counts_bytes_held() {
        let mut tx = DllTransmitter::new(250, TIMEOUT);
        assert!(tx.has_room(250));
        tx.push(0, 100);
        tx.push(1, 100);
        assert!(tx.has_room(50));
        assert!(!tx.has_room(51));
        tx.on_ack(1, ns(10));
        assert!(tx.has_room(150));
    }

    #[test]
    fn no_more_than_2047_tlps_go_unacknowledged() {
        // (NEXT_TRANSMIT_SEQ - ACKD_SEQ) mod 4096 >= 2048 stops the transmitter.
        let mut tx = sent(MAX_UNACKED as u32 - 1);
        assert!(tx.has_room(100));
        tx.push(9999, 100);
        assert_eq!(tx.unacked(), 2047);
        assert_eq!(tx.next_seq(), 2048, "ACKD_SEQ 0, NEXT_TRANSMIT_SEQ 2048");
        assert!(!tx.has_room(100), "2048 - 0 >= 2048: blocked");
        tx.on_ack(1, ns(10));
        assert!(tx.has_room(100));
    }

    #[test]
    fn the_fourth_replay_without_progress_retrains_the_link() {
        let mut tx = sent(3);
        for k in 1..=3 {
            tx.on_nak(0, ns(100 * k));
            assert_eq!(tx.replay_num(), k as u8);
            assert!(!tx.take_retrain());
        }
        // The replay timer's expiry is a replay too: REPLAY_NUM rolls over from 11b to 00b.
        let d = tx.deadline().unwrap();
        assert_eq!(tx.on_timer(d), ReplayTimer::Expired);
        assert_eq!(tx.replay_num(), 0);
        assert!(tx.take_retrain());
        assert!(!tx.take_retrain(), "once per rollover");
        assert_eq!(replayed(&mut tx), [1, 2, 3], "the replay goes on after it");
    }

    #[test]
    fn an_ack_that_acknowledges_something_resets_replay_num() {
        let mut tx = sent(3);
        tx.on_nak(0, ns(100));
        tx.on_nak(0, ns(200));
        // A stale Ack is no progress.
        tx.on_ack(0, ns(250));
        assert_eq!(tx.replay_num(), 2);
        // A Nak that acknowledges TLP 1 resets the count, then begins its own replay.
        tx.on_nak(1, ns(300));
        assert_eq!(tx.replay_num(), 1);
        tx.on_ack(2, ns(400));
        assert_eq!(tx.replay_num(), 0);
        assert!(!tx.take_retrain());
    }
}
