//! One direction of a link as the simulator sees it, in the parts of the spec's layers:
//!
//! - [`Arbiter`]: the transmitter's egress queues and the choice of the next TLP.
//! - [`FcTransmitter`] (`tx_credits`): the credits the receiver granted and those consumed.
//! - [`DllTransmitter`] (`tx_dll`): sequence numbers, replay buffer, replay timer.
//! - [`DllReceiver`] (`rx_dll`) and [`FcReceiver`] (`rx_credits`): the receiving end's next
//!   expected sequence number, Ack owed, Ack/UpdateFC timer, and credits allocated.
//! - [`Phy`]: the wire, its propagation delay and error rate, and what is in flight.
//!
//! The protocol state machines live in [`crate::pcie`] and know nothing of the simulator;
//! the simulator's transmit and receive code (`sim::transmit`, `sim::receive`) schedules
//! the events they ask for.
//!
//! Channel `2 × link` carries TLPs downstream, `2 × link + 1` upstream; DLLPs about a
//! channel's TLPs travel on the other channel of the same link.

mod arbiter;

use std::collections::VecDeque;

use crate::engine::rng::Rng;
use crate::engine::{OpenSpan, SimTime};
use crate::fabric::Credits;
use crate::pcie::dll::receive::DllReceiver;
use crate::pcie::dll::transmit::DllTransmitter;
use crate::pcie::flow_control::{CreditType, FcReceiver, FcTransmitter, PerCreditType};
use crate::pcie::wire::Wire;

pub use crate::pcie::dll::transmit::ReplayEntry;
pub use crate::pcie::dll::Dllp;
pub use crate::pcie::flow_control::{FcClass, CLASSES};
pub use arbiter::{Arbiter, Blocked, Queued};

/// A TLP on its way to the receiver (arrival events of one channel come in this order).
#[derive(Debug, Clone, Copy)]
pub struct Arrival {
    /// Sequence number.
    pub seq: u64,
    /// Slab index; on the lean kernel a packed write (payload and DW lead), which no
    /// general handler may read as an index.
    pub tlp: u32,
    /// Corrupted on the wire.
    pub bad: bool,
    /// A cut-through switch's nullified copy of a corrupted TLP (EDB, inverted LCRC): the
    /// receiver drops it silently.
    pub nullified: bool,
    /// Its arrival is also the moment the transmitter's wire frees (the arrival event then
    /// wakes the transmitter: no TxFree of its own). Set when it is sent on its way.
    pub frees_wire: bool,
    /// When its first byte reaches the receiver.
    pub head: SimTime,
    /// When its last byte reaches the receiver.
    pub tail: SimTime,
    /// A switch forwards it by a Forward event of its own (the data link layer takes it
    /// when its last byte arrives, the switch starts it on its egress at its own time).
    pub forwarded: bool,
}

/// Counters of one channel (whole run; the simulator subtracts a warmup snapshot).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
#[repr(C)] // the three counted per TLP first: the rest of its lines stay out of the cache
pub struct ChannelCounters {
    /// New TLPs sent.
    pub tlps: u64,
    /// TLP payload bytes sent (new TLPs).
    pub payload_bytes: u64,
    /// DLLPs sent.
    pub dllps: u64,
    /// TLPs waiting in the egress queues, integrated over time (TLP-ticks; brought up to
    /// date by [`Channel::account_queue`]).
    pub queue_area: u128,
    /// TLPs sent again from the replay buffer.
    pub replays: u64,
    /// Replay timer expiries.
    pub timeouts: u64,
    /// Times the transmitter's REPLAY_NUM rolled over and the link retrained (Recovery).
    pub retrains: u64,
    /// Naks received by the transmitter.
    pub naks: u64,
    /// TLPs the receiver found corrupted.
    pub bad_tlps: u64,
    /// DLLPs lost to errors.
    pub bad_dllps: u64,
    /// Ticks the transmitter had TLPs but no credits for the next one.
    pub credit_stall_ticks: u64,
    /// The same ticks by the credit type it waited for (the type lacking when the stall
    /// began).
    pub credit_stall_by_type: PerCreditType<u64>,
    /// Ticks the transmitter had a TLP the credits allowed but no replay buffer room.
    pub replay_stall_ticks: u64,
    /// TLPs a cut-through switch sent nullified (it had begun them before their bad LCRC
    /// arrived).
    pub nullified: u64,
    /// Wire ticks busy (TLPs, DLLPs, SKP).
    pub busy_ticks: u64,
}

/// The physical side of one link direction: the wire's timing, its propagation delay and
/// error rate, and the packets in flight.
#[derive(Debug)]
#[repr(C)] // its random stream, drawn from only on a wire with errors, last
pub struct Phy {
    /// The wire.
    pub wire: Wire,
    /// Propagation delay.
    pub prop: SimTime,
    /// Probability that one byte on this wire is corrupted (from the BER).
    pub byte_error: f64,
    /// DLLPs waiting for this wire (non-flit); they go ahead of TLPs.
    pub dllp_out: VecDeque<Dllp>,
    /// TLPs on the wire toward the receiver, oldest first.
    pub arriving: VecDeque<Arrival>,
    /// The sequence number the receiver will expect once every TLP now on the wire is
    /// taken: a TLP is accepted if it arrives intact and carries it (the receiver's data
    /// link layer sees TLPs in the order they were sent, so this is known when one is sent).
    pub predicted_seq: u64,
    /// DLLPs about this channel's TLPs on their way back to the transmitter (on the other
    /// direction's wire), oldest first: (DLLP, corrupted, last of a back-to-back burst that
    /// arrives as one event).
    pub dllps_arriving: VecDeque<(Dllp, bool, bool)>,
    /// Framing bytes per TLP.
    pub framing: u32,
    /// Flit mode (DLLPs ride in the flit's DLP bytes, no per-TLP framing).
    pub flit: bool,
    /// The random stream its bit errors draw from (its own: errors on one wire change no
    /// other draw of the run).
    pub rng: Rng,
}

impl Phy {
    /// A wire with no propagation delay and no errors, nothing in flight.
    pub fn new(wire: Wire, flit: bool) -> Self {
        Phy {
            wire,
            flit,
            prop: SimTime::ZERO,
            byte_error: 0.0,
            rng: Rng::new(0),
            framing: if flit {
                0
            } else {
                crate::pcie::dll::TLP_FRAMING_BYTES
            },
            dllp_out: VecDeque::new(),
            arriving: VecDeque::new(),
            predicted_seq: 1,
            dllps_arriving: VecDeque::new(),
        }
    }
}

impl Phy {
    /// Whether `bytes` bytes crossing this wire arrive corrupted (`byte_error` is the
    /// per-byte error rate as -ln(1 - p)); draws from its stream only on a wire with errors.
    #[inline(always)]
    pub fn corrupts(&mut self, bytes: u32) -> bool {
        self.byte_error > 0.0 && self.rng.chance(-(-self.byte_error * bytes as f64).exp_m1())
    }
}

/// One direction of a link.
///
/// Laid out in a fixed order, from a cache line's start: what a TLP's transmission, arrival
/// and acknowledgement touch on its first 14 lines, then its wire's random stream and the
/// counters not counted per TLP, which a run without errors never reads per TLP.
#[derive(Debug)]
#[repr(C, align(64))]
pub struct Channel {
    /// The transmitter's data link layer: sequence numbers, replay buffer and timer.
    pub tx_dll: DllTransmitter,
    /// The transmitter's credits (limit and consumed per type).
    pub tx_credits: FcTransmitter,
    /// The transmitter's egress queues and arbiter.
    pub arbiter: Arbiter,
    /// The transmitter's stall on credits, while it lasts.
    pub stall: OpenSpan,
    /// The transmitter's wait for replay buffer room, while it lasts.
    pub replay_stall: OpenSpan,
    /// Latest Forward event time scheduled.
    pub last_forward: SimTime,
    /// A TxFree event, or an arrival that frees the wire (`Arrival::frees_wire`), is pending.
    pub tx_event: bool,
    /// The credit type it lacked when that stall began.
    pub stall_type: CreditType,
    /// What blocked the arbiter last.
    pub blocked: Blocked,
    /// TLPs a switch has accepted and will forward, each with when its first byte
    /// arrived, oldest first (Forward events come in this order).
    pub forwarding: VecDeque<(u32, SimTime)>,
    /// The receiver's data link layer: next expected sequence number, Ack owed, Nak sent,
    /// the Ack/UpdateFC timer.
    pub rx_dll: DllReceiver,
    /// The receiver's credits: advertised, allocated, in use, UpdateFCs owed.
    pub rx_credits: FcReceiver,
    /// The wire and what is in flight on it.
    pub phy: Phy,
    /// Counters.
    pub counters: ChannelCounters,
}

impl Channel {
    /// A channel whose transmitter arbitrates among `weights.len()` inputs and whose receiver
    /// advertises `credits`.
    pub fn new(wire: Wire, flit: bool, weights: &[u32], credits: Credits) -> Self {
        let adv = PerCreditType(credits.0);
        Channel {
            arbiter: Arbiter::new(weights),
            tx_credits: FcTransmitter::new(adv),
            tx_dll: DllTransmitter::default(),
            rx_dll: DllReceiver::default(),
            rx_credits: FcReceiver::new(adv),
            phy: Phy::new(wire, flit),
            tx_event: false,
            blocked: Blocked::Empty,
            stall: OpenSpan::default(),
            stall_type: CreditType::Ph,
            replay_stall: OpenSpan::default(),
            forwarding: VecDeque::new(),
            last_forward: SimTime::ZERO,
            counters: ChannelCounters::default(),
        }
    }

    /// Brings `counters.queue_area` up to `now`: each TLP counts from when it joined to when
    /// it left (or `now`, if it still waits).
    pub fn account_queue(&mut self, now: SimTime) {
        self.counters.queue_area = self.arbiter.queue_area(now);
    }

    /// The arbiter's choice of the next TLP among those the credits and the replay buffer
    /// allow (see [`Arbiter::pick`]).
    #[inline(always)] // the empty case (about half the calls) without a call
    pub fn pick(&mut self, now: SimTime) -> Result<(Queued, FcClass), Blocked> {
        if self.arbiter.queued == 0 {
            return Err(Blocked::Empty);
        }
        self.pick_queued(now)
    }

    /// [`Self::pick`] with TLPs queued.
    #[inline(never)]
    fn pick_queued(&mut self, now: SimTime) -> Result<(Queued, FcClass), Blocked> {
        self.arbiter.pick(now, &self.tx_credits, &self.tx_dll)
    }

    /// Ends a credit stall at `now`, adding its time to the counters; true if one was running.
    pub fn end_stall(&mut self, now: SimTime) -> bool {
        match self.stall.close(now) {
            Some(ticks) => {
                self.counters.credit_stall_ticks += ticks;
                self.counters.credit_stall_by_type[self.stall_type] += ticks;
                true
            }
            None => false,
        }
    }

    /// Ends a wait for replay buffer room at `now`, adding its time to the counters; true
    /// if one was running.
    pub fn end_replay_stall(&mut self, now: SimTime) -> bool {
        match self.replay_stall.close(now) {
            Some(ticks) => {
                self.counters.replay_stall_ticks += ticks;
                true
            }
            None => false,
        }
    }

    /// Notes why the arbiter found nothing to send at `now`, starting or ending the stall
    /// timers: a credit stall runs while TLPs wait for credits, a replay stall while one
    /// waits for replay buffer room.
    pub fn note_blocked(&mut self, b: Blocked, now: SimTime) {
        self.blocked = b;
        match b {
            Blocked::Credits(ty) => {
                self.end_replay_stall(now);
                if !self.stall.is_open() {
                    self.stall.open(now);
                    self.stall_type = ty;
                }
            }
            Blocked::ReplayBuffer => {
                self.end_stall(now);
                self.replay_stall.open(now);
            }
            Blocked::Empty => {
                self.end_stall(now);
                self.end_replay_stall(now);
            }
        }
    }

    /// True when the credits the blocked transmitter lacks can never come: its receiver
    /// holds nothing of that type, has reported every credit it allocated, and no TLP or
    /// DLLP is on its way between them (a credit supply below one TLP, for one).
    pub fn starved_for_good(&self) -> bool {
        let Blocked::Credits(ty) = self.blocked else {
            return false;
        };
        self.rx_credits.used(ty) == 0
            && self.tx_credits.limit(ty) == self.rx_credits.allocated(ty)
            && self.phy.arriving.is_empty()
            && self.forwarding.is_empty()
            && self.phy.dllps_arriving.is_empty()
    }

    /// True when the blocked transmitter's receiver has allocated more of the credits it
    /// lacks than the transmitter knows of: an UpdateFC was lost (or is on its way), and the
    /// receiver's UpdateFC refresh (at least every 30 us) will bring them. Pending work, not
    /// a deadlock.
    pub fn awaits_update_fc(&self) -> bool {
        let Blocked::Credits(ty) = self.blocked else {
            return false;
        };
        self.tx_credits.limit(ty) < self.rx_credits.allocated(ty)
    }

    /// True when the transmitter has something it may try to send: DLLPs, a replay, or
    /// queued TLPs.
    #[inline(always)]
    pub fn has_work(&self) -> bool {
        self.arbiter.queued > 0 || !self.phy.dllp_out.is_empty() || self.tx_dll.is_replaying()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pcie::phy::Generation;

    #[test]
    fn a_new_channel_starts_every_layer_at_its_initial_state() {
        let wire = Wire::new(Generation::Gen1, 8, false, false);
        let mut adv = [None; 6];
        adv[CreditType::Pd as usize] = Some(32);
        let ch = Channel::new(wire, false, &[1, 1], Credits(adv));
        assert_eq!(ch.tx_dll.next_seq(), 1);
        assert_eq!(ch.rx_dll.expected(), 1);
        assert_eq!(ch.phy.predicted_seq, 1);
        assert_eq!(ch.phy.framing, crate::pcie::dll::TLP_FRAMING_BYTES);
        assert_eq!(ch.tx_credits.limit(CreditType::Pd), 32);
        assert_eq!(ch.tx_credits.limit(CreditType::Ph), u64::MAX);
        assert_eq!(ch.rx_credits.allocated(CreditType::Pd), 32);
        assert!(!ch.has_work());
    }

    #[test]
    fn what_a_tlp_touches_lies_on_a_channels_first_fourteen_lines() {
        use std::mem::{align_of, offset_of, size_of};
        assert_eq!((size_of::<Channel>(), align_of::<Channel>()), (1024, 64));
        let counted = offset_of!(Channel, counters) + offset_of!(ChannelCounters, dllps);
        let rng = offset_of!(Channel, phy) + offset_of!(Phy, rng);
        assert!(counted + 8 <= 14 * 64, "{counted}");
        assert!(
            rng >= offset_of!(Channel, phy) + offset_of!(Phy, flit),
            "{rng}"
        );
    }

    #[test]
    fn a_credit_stall_counts_against_the_type_it_began_on() {
        let wire = Wire::new(Generation::Gen1, 8, true, false);
        let mut ch = Channel::new(wire, true, &[1], Credits([None; 6]));
        assert_eq!(ch.phy.framing, 0);
        let t = SimTime::from_ticks;
        ch.note_blocked(Blocked::Credits(CreditType::Pd), t(10));
        // Still stalled, now on headers: the stall keeps its first type.
        ch.note_blocked(Blocked::Credits(CreditType::Ph), t(20));
        ch.note_blocked(Blocked::ReplayBuffer, t(50));
        ch.note_blocked(Blocked::Empty, t(60));
        let c = ch.counters;
        assert_eq!(c.credit_stall_ticks, 40);
        assert_eq!(c.credit_stall_by_type[CreditType::Pd], 40);
        assert_eq!(c.credit_stall_by_type[CreditType::Ph], 0);
        assert_eq!(c.replay_stall_ticks, 10);
    }
}
