//! What each flow's fluid rate rests on beyond the closed-form solve: the queueing waits
//! and shared buffers the engine estimates, each named with where it acts.
//!
//! The max-min solve of link, node and buffer capacities, with windows over unloaded round
//! trips (Little's law), is closed form. Where a rate depends on a wait the engine
//! estimates from the solve's own rates (a FIFO's queueing delay shared by windows, a
//! stream's wait behind others' backlogs, a round-robin turn at a full link), on a switch's
//! completion buffer shared by readers at their unloaded holds, on the phases of readers
//! that move one transfer at a time, on a full node throttle that serves TLPs in the order
//! they come, on a window's wait behind other streams' bursts at a node throttle, on a
//! switch's round robin whose turns the credits' timing decides (`pointer`), or on its
//! workload's own rate, the flow carries a line naming it, and so does a flow
//! that shares its bottleneck with such a flow (its share is what the other leaves).
//! These are where the fluid engine is least sure against the simulator
//! (`bench/fluid_random.py` counts its misses with and without them); a flow with none
//! rests on the closed form alone.

use std::collections::BTreeSet;

use crate::pcie::flow_control::FcClass;

use super::fifo::{Fifo, THROTTLES};
use super::hol::Wait;
use super::pool::Pool;
use super::solve::Demand;
use super::{Bound, Model};

/// Round-robin turns at a full link.
const TURN: &str = "turn: waits for round-robin turns at a full link, estimated";
/// A wait behind others' backlogs.
const BACKLOG: &str =
    "backlog: waits behind other streams' queued TLPs, estimated from their rates";
/// A reader of one transfer at a time.
const DUTY: &str = "duty: reads one transfer at a time, its cycle estimated";
/// A window nearly as tight as the resource that bounds it.
const NEAR: &str = "near: a window of its own is within 5 % of the rate its bottleneck gives it";
/// Links shared with such readers.
const PHASES: &str = "phases: shares links with readers of one transfer at a time, by their duty";

/// 90 % band half-widths of the fluid rate against the simulator's, as |ln(simulator /
/// fluid)|, per kind of estimate (`none`: a flow without; `all`: every flow, which a kind
/// with fewer than 20 flows in the fit takes; a kind not listed takes the widest, [`band`]).
/// Split conformal: the order statistic ceil(0.9 (n + 1)) of the n residuals of the flows
/// with the kind among the 5,646 of random fabric seeds 100-1699 and, with host throttles
/// and rates, seeds 100-699 (`bench/fluid_random.py [--host] --duration 1ms --recheck 10ms
/// --errors`), fitted and printed by `bench/fluid_bands.py`. Out of sample: seeds 3500-3699,
/// 431 of 461 flows inside; with host throttles, seeds 1900-2099, 493 of 524
/// (docs/performance.md has every set).
const BANDS: [(&str, f64); 15] = [
    ("all", 0.01367),
    ("backlog", 0.05682),
    ("burst", 0.1487),
    ("duty", 0.03789),
    ("near", 0.02637),
    ("none", 0.001482),
    ("phases", 0.01367),
    ("pointer", 0.2515),
    ("pool", 0.1064),
    ("queue", 0.02729),
    ("rate", 0.005271),
    ("runs", 0.08709),
    ("shares", 0.04407),
    ("throttle", 0.06594),
    ("turn", 0.1648),
];

/// The kind of an estimate's line: the word before its colon ("queue: ..."), or its first
/// word ("shares rc-sw up with w1, ...").
pub(super) fn kind_of(line: &str) -> &str {
    let first = line.split(' ').next().unwrap_or("");
    first.strip_suffix(':').unwrap_or(first)
}

/// The half-width of a flow's 90 % band (a residual, see [`BANDS`]): the widest of its
/// estimates' kinds', `none`'s where it has none.
pub(super) fn band(estimates: &[String]) -> f64 {
    // A kind the table does not have (added after the fit) takes the widest band.
    let widest = BANDS.iter().map(|b| b.1).fold(0.0, f64::max);
    let of = |k: &str| BANDS.iter().find(|b| b.0 == k).map_or(widest, |b| b.1);
    let kinds = estimates.iter().map(|e| of(kind_of(e)));
    kinds.fold(of("none"), f64::max)
}

/// Whether a `wait` added to window `l`'s round trip would hold it 1 % below `solved`, the
/// rate the solve gave its stream (the test of each untimed `burst` wait).
fn slowed(l: &super::Limit, wait: f64, solved: f64) -> bool {
    l.window
        .is_some_and(|(_, t)| l.rate * t / (t + wait) < 0.99 * solved)
}

/// The solve's end state that the estimates are read from.
pub(super) struct End<'a> {
    /// The FIFOs.
    pub(super) fifos: &'a [Fifo],
    /// Their queueing delays (s).
    pub(super) q: &'a [f64],
    /// Each stream's longest wait behind another's backlog, where it waits behind one.
    pub(super) waits: &'a [Option<Wait>],
    /// Each stream's wait for its turns at full links (s), as the last round found it.
    pub(super) turns: &'a [f64],
    /// Each stream's demand in the last solve: its limit there is the least of its own
    /// limits with the waits in it.
    pub(super) demands: &'a [Demand],
    /// The completion buffers that several readers share.
    pub(super) pools: &'a [Pool],
    /// Every resource's capacity.
    pub(super) cap: &'a [f64],
    /// The rates of the solve.
    pub(super) solved: &'a [f64],
    /// The rates after the phases of readers of one transfer at a time.
    pub(super) rates: &'a [f64],
    /// What bounds each stream in the solve.
    pub(super) bounds: &'a [Bound],
}

impl Model<'_> {
    /// Per flow, a line for each estimate its rate rests on (sorted, no repeats).
    pub(super) fn estimates(&self, e: &End<'_>) -> Vec<Vec<String>> {
        let name = |c: usize| &self.res[c].name;
        let mut own: Vec<BTreeSet<String>> = vec![BTreeSet::new(); self.streams.len()];
        // A wait counts where the solve leaves the stream to a full resource too: the
        // simulator often finds it binding there (random fabric seeds 275, 1437, 1478:
        // readers the fluid engine gives their link, the simulator its credits). Counting
        // waits only where a window binds left 22 flows without an estimate off the
        // simulator over seeds 0-1699, against 6.
        for (s, lines) in own.iter_mut().enumerate() {
            for (f, &q) in e.fifos.iter().zip(e.q) {
                if q > 0.0 && f.holds(s) {
                    let c = name(f.chan);
                    lines.insert(format!(
                        "queue: shares the FIFO egress queue of {c} by its window, at an \
                         estimated delay"
                    ));
                }
            }
            let solved = e.solved[s];
            let marks = [
                (e.turns[s] > 0.0, TURN),
                (e.waits[s].is_some(), BACKLOG),
                (self.streams[s].duty.is_some(), DUTY),
                ((e.rates[s] - solved).abs() > 1e-9 * solved.abs(), PHASES),
            ];
            lines.extend(marks.iter().filter(|m| m.0).map(|m| m.1.to_string()));
        }
        // Every reader of a shared completion buffer, full at the solve or not: its readers
        // hold it at their unloaded holds, and the simulator holds it for as long as their
        // completions wait after the switch (random fabric seed 642 `w1`, +76 %: a reader's
        // completions wait for credits that held readers' completions fill). Only where
        // full: 2,024 flows without an estimate over seeds 100-1699, 6 of them off; every
        // reader: 1,990, 2 off.
        for p in e.pools {
            let c = name(p.chan);
            for &(s, _, _) in &p.users {
                own[s].insert(format!(
                    "pool: shares the switch's completion buffer after {c} with other readers, \
                     taken at their unloaded holds"
                ));
            }
        }
        // The readers whose runs take a buffer in turn: how long a run holds the FIFO up
        // is estimated from the buffer and the window alone.
        for p in e.pools {
            let c = name(p.chan);
            for &(s, _, _) in p.serial.iter().filter(|u| u.1 > 0.0) {
                own[s].insert(format!(
                    "runs: takes the switch's completion buffer after {c} in turn with other \
                     readers' runs, estimated"
                ));
            }
        }
        let used = self.used(e.solved);
        self.throttles_and_rates(e, &used, &mut own);
        for (s, own) in own.iter_mut().enumerate() {
            self.link_bursts(e, s, &used, own);
        }
        self.pointers(e, &used, &mut own);
        // A stream bound by a resource that another flow's stream with an estimate uses.
        let mut all = own.clone();
        for (s, b) in e.bounds.iter().enumerate() {
            let Bound::Resource(r) = *b else { continue };
            for (o, st) in self.streams.iter().enumerate() {
                let other = st.flow != self.streams[s].flow;
                if other && !own[o].is_empty() && st.mix.uses.contains_key(&r) {
                    let flow = &self.sys.workloads[st.flow].name;
                    all[s].insert(format!(
                        "shares {} with {flow}, whose rate is estimated",
                        name(r)
                    ));
                }
            }
        }
        let mut out = vec![BTreeSet::new(); self.sys.workloads.len()];
        for (st, lines) in self.streams.iter().zip(all) {
            out[st.flow].extend(lines);
        }
        out.into_iter().map(|s| s.into_iter().collect()).collect()
    }

    /// Each stream's node throttles: one it crosses that is full (served in the order TLPs
    /// come, `fifo`) or that its window's round trip shares; and its workload's own rate.
    fn throttles_and_rates(&self, e: &End<'_>, used: &[f64], own: &mut [BTreeSet<String>]) {
        let name = |c: usize| &self.res[c].name;
        for (s, st) in self.streams.iter().enumerate() {
            // Its rate limit is the limit the solve held it to (not a window with waits).
            let held = e.demands[s].limit * (1.0 + 1e-9);
            let rate = st.limits.iter().any(|l| l.kind == "rate" && l.rate <= held);
            if e.bounds[s] == Bound::Limit && rate {
                own[s].insert(
                    "rate: its workload's rate, which the simulator meets in transfers".into(),
                );
            }
            // A window of its own within 5 % of the rate a resource bounds it at: the
            // simulator's window goes in bursts, so both bind in part (random fabric seed
            // with host throttles 188 `w1`, +9.5 %: four reads of 256 B against a full
            // Gen1 x4 link the simulator finds 92 % busy).
            let near = |l: &super::Limit| l.window.is_some() && l.rate <= 1.05 * e.solved[s];
            if matches!(e.bounds[s], Bound::Resource(_)) && st.limits.iter().any(near) {
                own[s].insert(NEAR.to_string());
            }
            // Each node throttle it crosses: full, it serves TLPs in the order they come
            // (`fifo`); or a window whose round trip crosses it, where other streams'
            // bursts keep its TLPs waiting, which the solve does not time, long enough to
            // hold it 1 % below its rate (random fabric seeds with host throttles 207 `w0`
            // and 394 `w1`, +7 and +15 %: reads behind another reader's transfers at a
            // root complex's memory; 180 `w1`, +19 %: a reader the fluid engine gives its
            // link). The windows whose loop crosses the throttle: a read's or an fio job's
            // (its round trip ends at the target), and posted credits the throttle frees.
            for &r in st.mix.uses.keys() {
                if !THROTTLES.contains(&self.res[r].kind) {
                    continue;
                }
                if used[r] >= 0.999 * e.cap[r] && e.cap[r] > 0.0 {
                    let n = name(r);
                    own[s].insert(format!(
                        "throttle: crosses {n}, full, in the order TLPs come"
                    ));
                }
                let wait = self.burst_wait(e, s, r, used[r]);
                let crosses = |l: &super::Limit| {
                    matches!(l.kind, "requests" | "iodepth")
                        || l.at == Some(r)
                        || l.behind.contains(&r)
                };
                let held = |l: &super::Limit| crosses(l) && slowed(l, wait, e.solved[s]);
                if wait > 0.0 && st.limits.iter().any(held) {
                    own[s].insert(format!(
                        "burst: its window's round trip crosses {}, where other streams' \
                         bursts keep it about {:.0} ns, not timed by the solve",
                        name(r),
                        wait * 1e9
                    ));
                }
                // Posted credits the throttle frees: a burst booked there longer than what
                // the window has in hand stops the writer (random fabric `--host` seed 1541
                // `w0`, +2.6 %: a reader's 64 KiB transfers book a root complex's data path
                // 3.3 us at a time against 0.3 us of a Gen3 x16 writer's credits).
                let stall = |l: &super::Limit| match l.window {
                    Some((w, t)) if l.behind.contains(&r) && e.solved[s] > 0.0 => {
                        self.burst_stall(e, s, r, (w / e.solved[s] - t).max(0.0))
                    }
                    _ => 0.0,
                };
                let most = st.limits.iter().map(stall).fold(0.0, f64::max);
                if most > 0.01 {
                    own[s].insert(format!(
                        "burst: its posted credits wait behind {}, which other streams' \
                         bursts hold longer than its credits last, {:.1} % of the time, not \
                         timed by the solve",
                        name(r),
                        most * 100.0
                    ));
                }
            }
        }
    }

    /// A `burst` line for each link direction reader `s`'s completions cross, not full,
    /// where other readers' completions come in bursts (a transfer's, its requests sent at
    /// once) that the link drains for longer than the reader's window allows for: its
    /// completions wait behind them, which the solve does not time (random fabric `--host`
    /// seed 1867 `w0`, +54 %: a 4-tag reader's completions wait 0.6-6.4 us at a switch's
    /// Gen2 x1 egress behind other readers' 4 KiB transfers).
    fn link_bursts(&self, e: &End<'_>, s: usize, used: &[f64], own: &mut BTreeSet<String>) {
        let st = &self.streams[s];
        let name = |c: usize| &self.res[c].name;
        let chans = self.sys.links.len() * 2;
        let completions = super::hol::bit(FcClass::Completion);
        let reads = |l: &super::Limit| matches!(l.kind, "requests" | "iodepth");
        for &c in st.mix.uses.keys().filter(|&&c| c < chans) {
            let cpl = st
                .mix
                .classes
                .get(&c)
                .is_some_and(|&k| k & completions != 0);
            if !cpl || used[c] >= 0.999 * e.cap[c] {
                continue;
            }
            let wait = self.burst_wait(e, s, c, used[c]);
            let held = |l: &super::Limit| reads(l) && slowed(l, wait, e.solved[s]);
            if wait > 0.0 && st.limits.iter().any(held) {
                own.insert(format!(
                    "burst: its completions cross {}, where other readers' completion \
                     bursts keep them about {:.0} ns, not timed by the solve",
                    name(c),
                    wait * 1e9
                ));
            }
        }
    }

    /// Posted writers that a switch's round robin serves in turns decided by credits: at a
    /// link direction out of a switch, not full, writers from two or more inputs held by
    /// one resource beyond it (their posted credits come back one TLP at a time) while
    /// another input's requests or completions, which other credits let go, take turns in
    /// between. Each such turn moves the round robin on, so which writer the next credit
    /// goes to depends on the order of the ports and the credits' timing: random fabric
    /// seed 3373, three writers behind a full Gen2 x1 link beside a reader's MRds, the
    /// simulator gives one of them nothing after 120 us and the fluid engine a third each;
    /// `gen5-8gpu-acs.toml`'s writers 175 against 145 Gb/s.
    fn pointers(&self, e: &End<'_>, used: &[f64], own: &mut [BTreeSet<String>]) {
        let posted = super::hol::bit(FcClass::Posted);
        let chans = self.sys.links.len() * 2;
        for c in 0..chans {
            let (tx, _) = super::path::ends(self.sys, c);
            let switch = matches!(
                self.sys.nodes[tx].kind,
                crate::fabric::NodeKind::Switch { .. }
            );
            if !switch || used[c] >= 0.999 * e.cap[c] {
                continue;
            }
            let on = |s: usize| self.streams[s].mix.inputs.get(&c);
            let class = |s: usize| self.streams[s].mix.classes.get(&c).copied().unwrap_or(0);
            // Writers held beyond `c` (a full link direction or throttle of theirs), by that
            // resource, and their inputs.
            let full = |r: usize| r != c && e.cap[r] > 0.0 && used[r] >= 0.999 * e.cap[r];
            let mut held: Vec<(usize, usize, &BTreeSet<usize>)> = Vec::new();
            for s in 0..self.streams.len() {
                let Some(ins) = on(s).filter(|_| class(s) == posted) else {
                    continue;
                };
                for &r in self.streams[s].mix.uses.keys().filter(|&&r| full(r)) {
                    held.push((s, r, ins));
                }
            }
            let beyond: BTreeSet<usize> = held.iter().map(|h| h.1).collect();
            for r in beyond {
                let writers: Vec<_> = held.iter().filter(|h| h.1 == r).collect();
                let inputs: BTreeSet<&BTreeSet<usize>> = writers.iter().map(|h| h.2).collect();
                let passing = (0..self.streams.len())
                    .any(|s| on(s).is_some_and(|i| !inputs.contains(i)) && class(s) & !posted != 0);
                if inputs.len() < 2 || !passing {
                    continue;
                }
                let (c_name, r_name) = (&self.res[c].name, &self.res[r].name);
                for &&(s, ..) in &writers {
                    own[s].insert(format!(
                        "pointer: waits at {c_name} for posted credits that {r_name} holds, \
                         in round-robin turns that other classes' TLPs move on: the \
                         simulator may favour one writer there, or starve one"
                    ));
                }
            }
        }
    }

    /// The part of the time stream `s`'s posted credits are all out behind throttle `r`:
    /// each other stream's burst there (what it sends back to back, `Stream::burst`) holds
    /// `r` for its bytes at `r`'s capacity, and the credits in hand last `slack` seconds.
    fn burst_stall(&self, e: &End<'_>, s: usize, r: usize, slack: f64) -> f64 {
        let cap = e.cap[r];
        if cap <= 0.0 {
            return 0.0;
        }
        (self.bursts(e, s, r))
            .map(|(_, rate, bytes, a)| rate / bytes * (bytes * a / cap - slack).max(0.0))
            .sum()
    }

    /// The other streams' bursts at resource `r`, seen from stream `s`: each stream that
    /// sends requests, with its rate at the end of the solve, the payload bytes it sends back
    /// to back (`Stream::burst`) and what it uses of `r` per payload byte.
    fn bursts<'b>(
        &'b self,
        e: &'b End<'_>,
        s: usize,
        r: usize,
    ) -> impl Iterator<Item = (&'b super::Stream, f64, f64, f64)> + 'b {
        (self.streams.iter().enumerate())
            .filter(move |&(o, st)| o != s && st.requests_per_byte > 0.0 && e.solved[o].is_finite())
            .map(move |(o, st)| {
                (
                    st,
                    e.solved[o],
                    st.burst / st.requests_per_byte,
                    st.mix.use_of(r),
                )
            })
    }

    /// Seconds stream `s`'s TLPs wait on average at resource `r` (`used` of its capacity
    /// used) behind the bursts of the other streams there, served in the order they come:
    /// the mean residual service of an M/G/1 queue, the sum of each burst rate times its
    /// service squared over two, over the part of `r` left free; and no more than the
    /// others' windows take of it (they cannot queue more). A stream's burst is what it
    /// sends back to back: a transfer's read requests where they go out at once
    /// (`Stream::burst`), else one request or write.
    fn burst_wait(&self, e: &End<'_>, s: usize, r: usize, used: f64) -> f64 {
        let cap = e.cap[r];
        if cap <= 0.0 || used >= cap {
            return 0.0;
        }
        let (mut residual, mut most) = (0.0, 0.0);
        for (st, rate, bytes, a) in self.bursts(e, s, r) {
            residual += rate * bytes * (a / cap).powi(2) / 2.0;
            let window =
                (st.limits.iter().filter_map(|l| l.window.map(|w| w.0))).fold(bytes, f64::max);
            most += window * a / cap;
        }
        (residual / (1.0 - used / cap)).min(most)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_flows_band_is_its_widest_kinds_and_the_closed_forms_without_any() {
        let lines = |l: &[&str]| l.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let of = |k: &str| BANDS.iter().find(|b| b.0 == k).unwrap().1;
        assert_eq!(band(&[]), of("none"));
        let two = lines(&["queue: shares the FIFO ...", "turn: waits for ..."]);
        assert_eq!(band(&two), of("queue").max(of("turn")));
        assert_eq!(
            kind_of("shares rc-sw up with r, whose rate is estimated"),
            "shares"
        );
        assert_eq!(kind_of("queue:x"), "queue:x");
        assert_eq!(band(&lines(&["rate: its workload's rate"])), of("rate"));
        // A kind the table does not know takes the widest band.
        let widest = BANDS.iter().map(|b| b.1).fold(0.0, f64::max);
        assert_eq!(band(&lines(&["later: a kind added after the fit"])), widest);
        assert!(
            BANDS.iter().all(|b| b.1 >= of("none")),
            "the closed form is the narrowest"
        );
    }

    /// Three writers into one switch behind a full Gen2 x1 link, with a reader's MRds
    /// through the same egress or without them (the pattern of
    /// `tests/data/round_robin_pointer_starves_a_writer.toml`, on equal links).
    fn writers_behind_a_full_link(reader: bool) -> crate::fabric::System {
        let mut text = String::from(
            "[pcie]\nmps = 512\nmrrs = 512\n[[root_complex]]\nname = \"rc\"\n\
             [[switch]]\nname = \"sw0\"\n[[link]]\nbetween = [\"rc\", \"sw0\"]\ngen = 2\nwidth = 1\n\
             [[switch]]\nname = \"sw1\"\n[[link]]\nbetween = [\"sw0\", \"sw1\"]\ngen = 2\nwidth = 4\n",
        );
        for (i, direction) in ["write", "write", "read", "write"].iter().enumerate() {
            let direction = if reader { direction } else { "write" };
            text += &format!(
                "[[endpoint]]\nname = \"ep{i}\"\nkind = \"dma\"\n[[link]]\n\
                 between = [\"sw1\", \"ep{i}\"]\ngen = 2\nwidth = 4\n[[workload]]\n\
                 name = \"w{i}\"\nkind = \"dma\"\nendpoint = \"ep{i}\"\n\
                 direction = \"{direction}\"\ntransfer_size = \"16KiB\"\noutstanding = 2\n"
            );
        }
        super::super::tests::system(&text)
    }

    #[test]
    fn a_readers_completions_behind_others_completion_bursts_name_the_wait() {
        let text = include_str!("../../../../tests/data/completions_behind_completion_bursts.toml");
        let named = |text: &str| -> Vec<bool> {
            let out = super::super::run(&super::super::tests::system(text)).expect("runs");
            (out.estimates.iter())
                .map(|e| {
                    e.iter()
                        .any(|l| l.starts_with("burst: its completions cross sw0-sw2"))
                })
                .collect()
        };
        assert_eq!(named(text), [true, false, false]);
        // The others writing only: no completions of theirs to wait behind.
        assert_eq!(named(&text.replace("\"both\"", "\"write\"")), [false; 3]);
    }

    #[test]
    fn writers_whose_turns_other_classes_move_on_name_the_pointer() {
        let named = |sys: &crate::fabric::System| -> Vec<bool> {
            let out = super::super::run(sys).expect("runs");
            (out.estimates.iter())
                .map(|e| {
                    e.iter()
                        .any(|l| l.starts_with("pointer: waits at sw0-sw1 up"))
                })
                .collect()
        };
        assert_eq!(
            named(&writers_behind_a_full_link(true)),
            [true, true, false, true]
        );
        assert_eq!(named(&writers_behind_a_full_link(false)), [false; 4]);
        assert!(BANDS.iter().any(|b| b.0 == "pointer" && b.1 > 0.2));
    }
}
