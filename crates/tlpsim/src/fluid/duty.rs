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
use super::pool::{self, Pool};
use super::solve::{Bound, Demand};
use super::Stream;

/// The max-min solve of demands over capacities, bounds named by link (`pool::solve`).
type Solve<'a> = dyn Fn(&[f64], &[Demand]) -> (Vec<f64>, Vec<Bound>) + 'a;

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
    /// The link direction whose receiver's buffer it is (`None`: the writer's own queue at
    /// its source): the writers that come in over one link share it.
    pub feed: Option<usize>,
    /// Payload bytes of one of its writes (the round robin's turn).
    pub tlp: f64,
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
    (fifos, chans, pools): (&[Fifo], usize, &[Pool]),
    (cap, demands, hol): (&[f64], &[Demand], &[f64]),
    rates: Vec<f64>,
) -> Vec<f64> {
    let solve = |cap: &[f64], d: &[Demand]| pool::solve(pools, cap, d);
    let readers = readers(streams, (fifos, chans), (cap, demands, hol), &solve);
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
            &solve,
        );
    }
    mixed
}

/// Adds to each writer beside one reader of one transfer at a time what it carries from
/// the reader's flowing phase into its gap. Held by a link while the reader flows
/// (`phases.0`) and by something before that link while it is idle (`phases.1`: its
/// rate, or a resource [`Room::before`] it), it queues the difference before the link
/// during the reader's `times.0` seconds, as far as the buffer feeding the link holds
/// beyond what the writers keep in it anyway (their rates over the buffer's hold), and
/// sends that backlog in the gap's `times.1` seconds as far as the link has room (the
/// simulator's root complex queues a peer-to-peer writer's writes past its forwarding
/// while the reader's completions share the link, and they go in its gaps). Writers that
/// share a buffer share its room, and writers that carry into one link share its gap, each
/// by its turns of the round robin (`share`).
fn carry(
    rates: &mut [f64],
    (streams, rooms, reader): (&[Stream], &[Vec<Room>], usize),
    (cap, demands, readers): (&[f64], &[Demand], &[(usize, Duty)]),
    (on, off): (&[f64], &[f64]),
    (t_on, t_off): (f64, f64),
    solve: &Solve<'_>,
) {
    let cycle = t_on + t_off;
    if cycle <= 0.0 {
        return;
    }
    let (_, held) = solve(cap, &at_rates(demands, readers, on));
    let (_, free) = solve(cap, &at_rates(demands, readers, off));
    // Each writer that carries: its stream, its room before the link, what it falls behind.
    let mut carriers: Vec<(usize, &Room)> = Vec::new();
    for (i, room) in rooms.iter().enumerate() {
        let Bound::Resource(link) = held[i] else {
            continue;
        };
        let Some(r) = room.iter().find(|r| r.link == link) else {
            continue;
        };
        // Held before the link in the gap (or by its own rate), not by it or after it.
        let before = match free[i] {
            Bound::Resource(x) => r.before.contains(&x),
            Bound::Limit => streams[i]
                .limits
                .iter()
                .any(|l| l.kind == "rate" && l.rate <= off[i]),
            Bound::Unbound => false,
        };
        if i != reader && before && off[i] > on[i] {
            carriers.push((i, r));
        }
    }
    let mut carried: Vec<f64> = carriers
        .iter()
        .map(|&(i, _)| (off[i] - on[i]) * t_on)
        .collect();
    let turns: Vec<f64> = carriers.iter().map(|(_, r)| r.tlp).collect();
    // The buffer before the link, less what its writers hold of it anyway; one writer's own
    // queue at its source is its alone.
    share(
        &mut carried,
        &turns,
        |a, b| {
            let (ra, rb) = (carriers[a].1, carriers[b].1);
            a == b || (ra.feed.is_some() && ra.feed == rb.feed)
        },
        |group| {
            let buffer = group
                .iter()
                .map(|&k| carriers[k].1.buffer)
                .fold(f64::INFINITY, f64::min);
            let held: f64 = group
                .iter()
                .map(|&k| off[carriers[k].0] * carriers[k].1.hold)
                .sum();
            (buffer - held).max(0.0)
        },
    );
    // The link's room in the gap, with every stream at its rate there.
    share(
        &mut carried,
        &turns,
        |a, b| carriers[a].1.link == carriers[b].1.link,
        |group| {
            let link = carriers[group[0]].1.link;
            let used: f64 = (demands.iter().zip(off))
                .flat_map(|(d, &r)| d.uses.iter().filter(|u| u.0 == link).map(move |u| r * u.1))
                .sum();
            (cap[link] - used).max(0.0) * t_off
        },
    );
    for (&(i, _), c) in carriers.iter().zip(carried) {
        if c > 0.0 {
            rates[i] += c / cycle;
        }
    }
}

/// Cuts `want` to what each group (the members `same` joins) has room for (`room` of the
/// group), shared max-min in proportion to `turns`: a member that wants less than its
/// part keeps what it wants and leaves the rest to the others.
fn share(
    want: &mut [f64],
    turns: &[f64],
    same: impl Fn(usize, usize) -> bool,
    room: impl Fn(&[usize]) -> f64,
) {
    let mut done = vec![false; want.len()];
    for first in 0..want.len() {
        if done[first] {
            continue;
        }
        let mut group: Vec<usize> = (first..want.len())
            .filter(|&k| !done[k] && same(first, k))
            .collect();
        for &k in &group {
            done[k] = true;
        }
        let mut left = room(&group);
        let mut weight: f64 = group.iter().map(|&k| turns[k]).sum();
        group.sort_by(|&a, &b| (want[a] / turns[a]).total_cmp(&(want[b] / turns[b])));
        for k in group {
            let part = if weight > 0.0 {
                left * turns[k] / weight
            } else {
                0.0
            };
            want[k] = want[k].min(part).max(0.0);
            left -= want[k];
            weight -= turns[k];
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
    solve: &Solve<'_>,
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

    #[test]
    fn writers_share_a_room_by_their_turns_and_keep_what_they_want_below_their_part() {
        // One group of three with room for 9: the first wants 1 (below its quarter), the
        // third has two turns to the second's one, so it gets its 5 and the second the rest.
        let mut want = [1.0, 5.0, 5.0];
        share(&mut want, &[1.0, 1.0, 2.0], |_, _| true, |_| 9.0);
        assert_eq!(want, [1.0, 3.0, 5.0]);
        // Each alone: its own room, none shared.
        let mut want = [4.0, 4.0];
        share(&mut want, &[1.0, 1.0], |a, b| a == b, |g| [3.0, 5.0][g[0]]);
        assert_eq!(want, [3.0, 4.0]);
        // No room: nothing carried.
        let mut want = [2.0, 2.0];
        share(&mut want, &[1.0, 1.0], |_, _| true, |_| 0.0);
        assert_eq!(want, [0.0, 0.0]);
    }
}
