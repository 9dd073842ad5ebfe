//! Readers that move one transfer at a time: their links idle for a round trip at each
//! transfer's end, and the streams beside them take that time.
//!
//! A reader with one transfer in flight whose requests all fit its tags (a GPU copy engine
//! copying one buffer after another, a DMA reader with `outstanding = 1`) issues a
//! transfer's requests at once and starts the next transfer only when the last completion
//! is in (`sim/flow.rs`). Alone, a transfer takes its first completion's round trip, then
//! the rest of its completions back to back at the narrowest link's pace (the
//! whole-transfer limit of `streams.rs`). Beside other streams on a full link, its
//! completions get only their share of it while they flow, so the rest takes longer by
//! what it gets alone over that share, and in its gaps the others get what they get
//! without it.
//!
//! [`mix`] solves the phases apart, each with the max-min solve of the converged model:
//! every combination of these readers flowing or idle, weighted by their duties as if
//! independent. A reader's rate while flowing, `a`, is its mean over the phases it flows
//! in; its cycle is `first + rest × alone / a` (`rest`: its transfer's time after the
//! first completion at its own limits' rate; `alone`: its rate while flowing with nothing
//! else), its duty the part of the cycle its transfer's bytes take at `a`. The rates
//! are the phases' weighted mean, so a reader alone keeps the whole-transfer limit's rate
//! exactly and its neighbours are unchanged where it shares nothing.

use super::fifo::Fifo;
use super::solve::{solve, Bound, Demand};
use super::Stream;

/// The most readers of one transfer at a time taken apart (`2^MAX_DUTY` phases).
const MAX_DUTY: usize = 6;

/// Where a writer's posted writes can queue before one link direction of their way.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Room {
    /// The link direction (a resource index).
    pub link: usize,
    /// Bytes of the buffer that feeds it.
    pub buffer: f64,
    /// Seconds a write holds that buffer when nothing queues.
    pub hold: f64,
    /// The resources before it on the way (link directions, socket links, peer-to-peer
    /// forwarding and shared buses up to its transmitter): what may hold the writer
    /// while the link has room, so that what queued before the link can go.
    pub before: Vec<usize>,
}

/// One transfer at a time: what a reader's cycle is made of.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Duty {
    /// Payload bytes of one transfer.
    pub bytes: f64,
    /// Seconds from the transfer's first request to its first completion's arrival (an
    /// idle fabric's).
    pub first: f64,
    /// Its rate while it flows where nothing else holds it: its completion credits' (none
    /// where they are infinite) where all of a transfer's requests are out at once, its
    /// tags over a request's round trip where they are fewer.
    pub limit: f64,
}

impl Duty {
    /// The part of its cycle a reader spends flowing at `active` bytes per second, where
    /// alone it flows at `alone` and runs at `limit` on average (its own limits': the
    /// first completion's round trip, then the rest of the transfer, its completions back
    /// to back at the narrowest link's pace or its rounds of tags where those take longer).
    fn of(&self, active: f64, (alone, limit): (f64, f64)) -> f64 {
        self.cycle(active, (alone, limit))
            .map_or(1.0, |cycle| (self.bytes / active / cycle).clamp(0.0, 1.0))
    }

    /// Seconds of its cycle it flows and it is idle (`of`'s parts; all flowing where a
    /// rate is not finite).
    pub(super) fn times(&self, active: f64, (alone, limit): (f64, f64)) -> (f64, f64) {
        self.cycle(active, (alone, limit))
            .map_or((1.0, 0.0), |cycle| {
                let on = (self.bytes / active).min(cycle);
                (on, cycle - on)
            })
    }

    /// Seconds of one cycle at `active` (`of`'s terms), if every rate is finite.
    fn cycle(&self, active: f64, (alone, limit): (f64, f64)) -> Option<f64> {
        let finite = |x: f64| x > 0.0 && x.is_finite();
        if !finite(active) || !finite(alone) || !finite(limit) {
            return None;
        }
        let rest = (self.bytes / limit - self.first).max(0.0);
        Some(self.first + rest * alone / active)
    }
}

/// `rates` with each reader of one transfer at a time (not in a FIFO, whose delay already
/// holds its window, nor waiting behind another stream's backlog, `hol`) that a link
/// direction (one of the first `chans` resources) holds while it flows, taken as flowing
/// for its duty, at [`Duty::limit`] at most, and idle otherwise. Unchanged where there is
/// no such reader or more than [`MAX_DUTY`] in all.
pub(super) fn mix(
    (streams, rooms): (&[Stream], &[Vec<Room>]),
    (fifos, chans): (&[Fifo], usize),
    (cap, demands, hol): (&[f64], &[Demand], &[f64]),
    rates: Vec<f64>,
) -> Vec<f64> {
    let readers = readers(streams, (fifos, chans), (cap, demands, hol));
    if readers.is_empty() || readers.len() > MAX_DUTY {
        return rates;
    }
    let k = readers.len();
    // The readers flowing in `m` (bit j: reader j), the others at their converged limits
    // (`only`: no other stream at all).
    let phase = |m: usize, only: bool| -> Option<Vec<f64>> {
        let mut d = demands.to_vec();
        if only {
            for x in d.iter_mut() {
                x.limit = 0.0;
            }
        }
        for (j, &(s, duty)) in readers.iter().enumerate() {
            d[s].limit = if m & (1 << j) != 0 { duty.limit } else { 0.0 };
        }
        let (r, b) = solve(cap, &d);
        // A reader that nothing bounds while flowing has no rate to take apart.
        let unbound = |&(s, _): &(usize, Duty)| b[s] == Bound::Unbound && r[s] > 0.0;
        (!readers.iter().any(unbound)).then_some(r)
    };
    let Some(phases) = (0..1usize << k)
        .map(|m| phase(m, false))
        .collect::<Option<Vec<_>>>()
    else {
        return rates;
    };
    let Some(alone) = (0..k)
        .map(|j| phase(1 << j, true).map(|r| r[readers[j].0]))
        .collect::<Option<Vec<f64>>>()
    else {
        return rates;
    };
    let duty = duties(&readers, (&phases, &alone), demands);
    let w = weights(&duty);
    let mut mixed: Vec<f64> = (0..rates.len())
        .map(|i| {
            // A stream no reader touches keeps its rate to the last bit.
            if phases.iter().all(|r| r[i] == phases[0][i]) && readers.iter().all(|&(s, _)| s != i) {
                rates[i]
            } else {
                phases.iter().zip(&w).map(|(r, w)| w * r[i]).sum()
            }
        })
        .collect();
    // Each reader's gaps apart, beside all the others flowing.
    let all = (1usize << k) - 1;
    for (j, &(s, cycle)) in readers.iter().enumerate() {
        let active = active(j, s, (&phases, &w), alone[j]);
        let times = cycle.times(active, (alone[j], demands[s].limit));
        let both = (&phases[all][..], &phases[all ^ (1 << j)][..]);
        carry(
            &mut mixed,
            (streams, rooms, s),
            (cap, demands, &readers),
            both,
            times,
        );
    }
    mixed
}

/// Adds to each writer beside one reader of one transfer at a time what it carries from
/// the reader's flowing phase into its gap. Held by a link while the reader flows
/// (`phases.0`) and by something before that link while it is idle (`phases.1`: its
/// rate, or a resource [`Room::before`] it), it queues the difference before the link
/// during the reader's `times.0` seconds, as far as the buffer feeding the link holds
/// beyond what the writer keeps in it anyway (its rate over the buffer's hold), and sends
/// that backlog in the gap's `times.1` seconds as far as the link has room (the
/// simulator's root complex queues a peer-to-peer writer's writes past its forwarding
/// while the reader's completions share the link, and they go in its gaps).
fn carry(
    rates: &mut [f64],
    (streams, rooms, reader): (&[Stream], &[Vec<Room>], usize),
    (cap, demands, readers): (&[f64], &[Demand], &[(usize, Duty)]),
    (on, off): (&[f64], &[f64]),
    (t_on, t_off): (f64, f64),
) {
    let cycle = t_on + t_off;
    let (_, held) = solve(cap, &at_rates(demands, readers, on));
    let (_, free) = solve(cap, &at_rates(demands, readers, off));
    for (i, room) in rooms.iter().enumerate() {
        let Bound::Resource(link) = held[i] else {
            continue;
        };
        let Some(r) = room.iter().find(|r| r.link == link) else {
            continue;
        };
        let (buffer, hold) = (r.buffer, r.hold);
        // Held before the link in the gap (or by its own rate), not by it or after it.
        let before = match free[i] {
            Bound::Resource(x) => r.before.contains(&x),
            Bound::Limit => streams[i]
                .limits
                .iter()
                .any(|l| l.kind == "rate" && l.rate <= off[i]),
            Bound::Unbound => false,
        };
        if i == reader || !before || off[i] <= on[i] {
            continue;
        }
        let used: f64 = (demands.iter().zip(off))
            .flat_map(|(d, &r)| d.uses.iter().filter(|u| u.0 == link).map(move |u| r * u.1))
            .sum();
        let queued = (buffer - off[i] * hold).max(0.0);
        let carried = queued
            .min((off[i] - on[i]) * t_on)
            .min((cap[link] - used).max(0.0) * t_off);
        if cycle > 0.0 && carried > 0.0 {
            rates[i] += carried / cycle;
        }
    }
}

/// `demands` with each of the `readers` at its rate in `rates` (a phase's): the solve of
/// that phase again, for its bounds.
fn at_rates(demands: &[Demand], readers: &[(usize, Duty)], rates: &[f64]) -> Vec<Demand> {
    let mut d = demands.to_vec();
    for &(s, _) in readers {
        d[s].limit = rates[s];
    }
    d
}

/// The readers of one transfer at a time to take apart (stream, cycle): not in a FIFO, not
/// behind a backlog, and held by a link direction (one of the first `chans` resources) when
/// all of them flow. A link's egress serves its inputs in turn, one TLP each, which the
/// max-min solve is; a node's throttle (a memory, a peer-to-peer path) serves TLPs in the
/// order they come, where a reader's transfer goes through faster than its share.
fn readers(
    streams: &[Stream],
    (fifos, chans): (&[Fifo], usize),
    (cap, demands, hol): (&[f64], &[Demand], &[f64]),
) -> Vec<(usize, Duty)> {
    let candidates: Vec<(usize, Duty)> = (streams.iter().enumerate())
        .filter(|(s, _)| fifos.iter().all(|f| !f.holds(*s)) && hol[*s] == 0.0)
        .filter_map(|(s, st)| st.duty.map(|d| (s, d)))
        .collect();
    if candidates.is_empty() {
        return candidates;
    }
    let mut flowing = demands.to_vec();
    for &(s, duty) in &candidates {
        flowing[s].limit = duty.limit;
    }
    let (_, bound) = solve(cap, &flowing);
    (candidates.into_iter())
        .filter(|&(s, _)| matches!(bound[s], Bound::Resource(r) if r < chans))
        .collect()
}

/// Reader `j`'s (stream `s`) mean rate over the `phases` it flows in at weights `w`, its
/// rate `alone` where it flows in none.
fn active(j: usize, s: usize, (phases, w): (&[Vec<f64>], &[f64]), alone: f64) -> f64 {
    let (mut sum, mut on) = (0.0, 0.0);
    for (m, r) in phases.iter().enumerate().filter(|(m, _)| m & (1 << j) != 0) {
        sum += w[m] * r[s];
        on += w[m];
    }
    if on > 0.0 {
        sum / on
    } else {
        alone
    }
}

/// Each phase's weight (phase `m`: bit j set where reader j flows) at the readers' `duty`.
fn weights(duty: &[f64]) -> Vec<f64> {
    let k = duty.len();
    (0..1usize << k)
        .map(|m| {
            (0..k)
                .map(|j| {
                    if m & (1 << j) != 0 {
                        duty[j]
                    } else {
                        1.0 - duty[j]
                    }
                })
                .product()
        })
        .collect()
}

/// The readers' duties: the fixed point, from all flowing, of each duty from its reader's
/// mean rate over the `phases` it flows in (its rate `alone` where it flows in none).
fn duties(
    readers: &[(usize, Duty)],
    (phases, alone): (&[Vec<f64>], &[f64]),
    demands: &[Demand],
) -> Vec<f64> {
    let mut duty = vec![1.0; readers.len()];
    for _ in 0..200 {
        let w = weights(&duty);
        let mut moved = 0.0f64;
        for (j, &(s, cycle)) in readers.iter().enumerate() {
            let active = active(j, s, (phases, &w), alone[j]);
            let d = cycle.of(active, (alone[j], demands[s].limit));
            moved = moved.max((d - duty[j]).abs());
            duty[j] = d;
        }
        if moved < 1e-12 {
            break;
        }
    }
    duty
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reader_alone_keeps_its_limit_and_half_a_link_stretches_the_rest_of_its_transfer() {
        // 64 KiB: 1 us to the first completion, the rest 1 us back to back.
        let d = Duty {
            bytes: 65536.0,
            first: 1e-6,
            limit: f64::INFINITY,
        };
        let limit = 65536.0 / 2e-6;
        let alone = 65536.0 / 1e-6;
        let mean = |active: f64| d.of(active, (alone, limit)) * active;
        assert!((mean(alone) - limit).abs() < 1e-9 * limit);
        // At half its rate alone the rest takes 2 us: one transfer in 3 us.
        assert!((mean(alone / 2.0) - 65536.0 / 3e-6).abs() < 1e-9 * limit);
        // No rate while flowing: always flowing, nothing to take apart.
        assert_eq!(d.of(0.0, (alone, limit)), 1.0);
        // Its cycle's parts: at half its rate alone, 2 us flowing (its 64 KiB at 32.8 GB/s)
        // and the rest of the 3 us idle; the duty is their ratio.
        let (on, off) = d.times(alone / 2.0, (alone, limit));
        assert!((on - 2e-6).abs() < 1e-15 && (on + off - 3e-6).abs() < 1e-15);
        assert!((d.of(alone / 2.0, (alone, limit)) - on / (on + off)).abs() < 1e-12);
        assert_eq!(d.times(0.0, (alone, limit)), (1.0, 0.0));
    }
}
