//! Head-of-line blocking: a stream whose TLPs back up behind a full resource downstream
//! holds the FIFOs it shares on its way there, and the streams in them wait behind it.
//!
//! In the simulator a switch holds a TLP in the ingress buffer it came into until it leaves
//! on its egress (`rx_release` in `sim/transmit.rs`), and an egress queue sends a TLP only
//! when the next hop has the credits for it. When a stream's bottleneck is a link (or a
//! target's write rate) some hops down its way and it keeps more in flight than that
//! bottleneck's queue buffers (a reader's completions beyond its round trip, a writer's
//! posted writes without end), its TLPs fill the buffer before the bottleneck, then the
//! egress queue of the hop before, and so back to its source. Another stream that joins one
//! of those queues through the same input and may not pass it (everything waits behind a
//! posted write; a completion waits behind a completion, `choose` in
//! `sim/channel/arbiter.rs`) waits behind the bytes queued there, which drain at the
//! blocking stream's rate, though its own way leaves before the bottleneck: a reader whose
//! completions leave the root complex behind a slow reader's (random fabric seeds 47 and
//! 75), read requests behind posted writes a device's memory takes slowly
//! (`gpu-bar-through-switch.toml`).

use std::collections::BTreeSet;

use super::duty::Room;
use super::fifo::{self, Fifo};
use super::{Bound, Model, Path, Stream};
use crate::pcie::flow_control::FcClass;
use crate::pcie::tlp::TlpKind;

/// What a stream keeps queued on its way when something downstream holds it.
#[derive(Clone)]
pub(super) struct Backlog {
    /// The way of its TLPs that queue (a writer's writes, a reader's completions).
    pub(super) path: Path,
    /// Their flow-control class.
    pub(super) class: FcClass,
    /// Payload bytes per TLP.
    pub(super) tlp: f64,
    /// Bytes its source keeps queued at its own egress at most (unbounded for a
    /// completer's completions).
    pub(super) source: f64,
    /// The share of its window in flight on average while it backs up.
    pub(super) share: f64,
    /// Seconds its first TLP takes to come in on an idle fabric (a read's first completion
    /// from its request out; infinite for a writer): what a link holding it down its way
    /// does not queue of its window.
    pub(super) first: f64,
}

/// A stream's longest wait behind another's backlog: `secs` behind stream `a`'s TLPs in
/// the egress queue of hop `k` of `a`'s way.
#[derive(Clone)]
pub(super) struct Wait {
    secs: f64,
    a: usize,
    k: usize,
}

/// Stream `b` waits behind stream `a`'s TLPs in the egress queue of hop `k` of `a`'s way.
pub(super) struct Victim {
    a: usize,
    k: usize,
    b: usize,
}

/// The bit of a flow-control class in a mix's classes per link direction.
pub(super) fn bit(class: FcClass) -> u8 {
    1 << class as u8
}

impl Model<'_> {
    /// The pairs of streams and hops where one may wait behind another's backlog: both
    /// join that hop's egress through the same one input, and the waiting stream's TLPs
    /// there may not pass the other's, and it has a window to be held back.
    pub(super) fn victims(&self) -> Vec<Victim> {
        let mut out = Vec::new();
        for (a, sa) in self.streams.iter().enumerate() {
            let Some(bl) = &sa.backlog else { continue };
            for (k, hop) in bl.path.hops.iter().enumerate() {
                let super::Hop::Chan(c) = *hop else { continue };
                let Some(input) = sa.mix.inputs.get(&c).filter(|i| i.len() == 1) else {
                    continue;
                };
                for (b, sb) in self.streams.iter().enumerate() {
                    let classes = sb.mix.classes.get(&c).copied().unwrap_or(0);
                    let blocked = match bl.class {
                        FcClass::Posted => classes != 0,
                        FcClass::Completion => classes & bit(FcClass::Completion) != 0,
                        FcClass::NonPosted => false,
                    };
                    let windowed = (sb.limits.iter()).any(|l| l.window.is_some() && l.at.is_none());
                    if b != a && blocked && windowed && sb.mix.inputs.get(&c) == Some(input) {
                        out.push(Victim { a, k, b });
                    }
                }
            }
        }
        out
    }

    /// Bytes node `n`'s ingress buffer holds of TLPs of `class` with `tlp` payload bytes
    /// each (infinite where it advertises infinite credits).
    pub(super) fn buffer(&self, n: usize, class: FcClass, tlp: f64) -> f64 {
        self.fits(n, class, tlp, (0.0, 0.0)).0
    }

    /// Bytes of TLPs of `class` with `tlp` payload bytes each that node `n`'s ingress
    /// buffer holds beside `used` of its credits (headers, data units), and whether its
    /// header credits, not its data credits, bound that.
    fn fits(&self, n: usize, class: FcClass, tlp: f64, used: (f64, f64)) -> (f64, bool) {
        let credits = self.sys.nodes[n].credits.0;
        let (h, d) = (credits[2 * class as usize], credits[2 * class as usize + 1]);
        let units = data_units(tlp);
        let by_header = h.map_or(f64::INFINITY, |h| (h as f64 - used.0).max(0.0));
        let by_data = d.map_or(f64::INFINITY, |d| {
            ((d as f64 - used.1) / units).floor().max(0.0)
        });
        (by_header.min(by_data) * tlp, by_header <= by_data)
    }

    /// Per stream, the room its posted writes have to queue before each link direction of
    /// their way, and what lies before it. The buffer is the ingress buffer of the link's
    /// transmitter (its writes queued at the source for the first link), held over the
    /// credit round trip into it. None where no reader moves one transfer at a time: only
    /// such a reader has gaps to carry writes into.
    pub(super) fn rooms(&self) -> Vec<Vec<Room>> {
        if self.streams.iter().all(|s| s.duty.is_none()) {
            return Vec::new();
        }
        (self.streams.iter())
            .map(|st| match st.backlog.as_ref() {
                Some(bl) if bl.class == FcClass::Posted => self.rooms_of(bl),
                _ => Vec::new(),
            })
            .collect()
    }

    /// [`Self::rooms`] of one writer's backlog.
    fn rooms_of(&self, bl: &Backlog) -> Vec<Room> {
        let p = &bl.path;
        let mut before = Vec::new();
        let mut out = Vec::new();
        for (h, hop) in p.hops.iter().enumerate() {
            let name = &self.sys.nodes[p.nodes[h]].name;
            for what in ["peer-to-peer forwarding", "shared bus"] {
                before.extend(self.named(&format!("{name} {what}")));
            }
            let link = match *hop {
                super::Hop::Chan(c) => c,
                super::Hop::Socket { from, to, .. } => {
                    before.extend(self.socket_res(from, to));
                    continue;
                }
            };
            let (buffer, hold) = if h == 0 {
                (bl.source, 0.0)
            } else {
                let hold = self.credit_round_trip(p, h - 1, TlpKind::MWr, bl.tlp as u32);
                (self.buffer(p.nodes[h], FcClass::Posted, bl.tlp), hold)
            };
            let feed = match h.checked_sub(1).map(|k| p.hops[k]) {
                Some(super::Hop::Chan(c)) => Some(c),
                _ => None,
            };
            out.push(Room {
                link,
                buffer,
                hold,
                feed,
                tlp: bl.tlp,
                before: before.clone(),
            });
            before.push(link);
        }
        out
    }

    /// Seconds each stream's round trip waits behind other streams' backlogs, at the
    /// rates and bounds of the last solve, and where it waits longest.
    pub(super) fn hol(
        &self,
        victims: &[Victim],
        rates: &[f64],
        bounds: &[Bound],
    ) -> (Vec<f64>, Vec<Option<Wait>>) {
        // A "both" workload's reads whose requests queue with its own writes in one input of
        // a link that holds the writes and serves other inputs too, round robin: a
        // transfer's requests leave one per turn of that input, at its TLP rate there, not
        // all at once (used for a reader its own window holds, `held`).
        let mut trickle = vec![0.0; self.streams.len()];
        for v in victims {
            let (sa, sb) = (&self.streams[v.a], &self.streams[v.b]);
            let posted = (sa.backlog.as_ref()).is_some_and(|b| b.class == FcClass::Posted);
            let Bound::Resource(r) = bounds[v.a] else {
                continue;
            };
            let Some(input) = sa.mix.inputs.get(&r).filter(|i| i.len() == 1) else {
                continue;
            };
            let others = (self.streams.iter().zip(rates)).any(|(st, &rate)| {
                rate > 0.0 && st.mix.inputs.get(&r).is_some_and(|i| i.is_disjoint(input))
            });
            let same = sb.mix.inputs.get(&r) == Some(input);
            if posted && sa.flow == sb.flow && same && others {
                trickle[v.b] =
                    rates[v.a] * sa.requests_per_byte + rates[v.b] * sb.requests_per_byte;
            }
        }
        let mut out = vec![0.0; self.streams.len()];
        let mut longest: Vec<Option<Wait>> = vec![None; self.streams.len()];
        let mut held: Vec<Option<Vec<f64>>> = vec![None; self.streams.len()];
        for v in victims {
            // Two streams held at one link share it, and its queue is in their windows.
            if matches!(bounds[v.a], Bound::Resource(_)) && bounds[v.b] == bounds[v.a] {
                continue;
            }
            let h =
                held[v.a].get_or_insert_with(|| self.held(v.a, rates, (bounds[v.a], trickle[v.a])));
            if let Some(&bytes) = h.get(v.k) {
                if bytes > 0.0 && rates[v.a] > 0.0 {
                    let secs = bytes / rates[v.a];
                    out[v.b] += secs;
                    if longest[v.b].as_ref().is_none_or(|w| w.secs < secs) {
                        let (a, k) = (v.a, v.k);
                        longest[v.b] = Some(Wait { secs, a, k });
                    }
                }
            }
        }
        (out, longest)
    }

    /// Notes on each stream that its window's wait behind another's backlog (`waits`, with
    /// the FIFOs, their delays and each stream's wait `hol`) binds, where `bounds` left
    /// it to its own limits, the credits it waits for.
    pub(super) fn name_waits(
        &mut self,
        waits: Vec<Option<Wait>>,
        (fifos, q, hol): (&[Fifo], &[f64], &[f64]),
        bounds: &[Bound],
    ) {
        for (s, w) in waits.into_iter().enumerate() {
            let Some(w) = w.filter(|_| bounds[s] == Bound::Limit) else {
                continue;
            };
            let st = &self.streams[s];
            let unheld = fifo::limit_at(fifos, q, (s, 0.0), st);
            if fifo::limit_at(fifos, q, (s, hol[s]), st) < unheld {
                self.streams[s].waits = self.credit_wait(&w);
            }
        }
    }

    /// The credits a stream waits for behind `w`'s backlog, as the simulator names them
    /// (`tx -> rx CplH credits`), and a line on why.
    pub(super) fn credit_wait(&self, w: &Wait) -> Option<(String, String)> {
        let bl = self.streams[w.a].backlog.as_ref()?;
        let (tx, rx) = (bl.path.nodes[w.k], bl.path.nodes[w.k + 1]);
        let ty = self.credit_type(rx, bl.class, bl.tlp);
        let names = &self.sys.nodes;
        let flow = &self.sys.workloads[self.streams[w.a].flow].name;
        Some((
            format!("{} -> {} {ty} credits", names[tx].name, names[rx].name),
            format!(
                "waits {:.0} ns in {}'s egress queue behind {flow}'s TLPs, which hold {}'s \
                 {ty} credits while a link further down holds them",
                w.secs * 1e9,
                names[tx].name,
                names[rx].name
            ),
        ))
    }

    /// The credit type of `class` that bounds what node `n`'s ingress buffer holds of TLPs
    /// of `tlp` payload bytes, as the simulator names it (`PH`, `PD`, `CplH`, `CplD`).
    pub(super) fn credit_type(&self, n: usize, class: FcClass, tlp: f64) -> &'static str {
        match (class, self.fits(n, class, tlp, (0.0, 0.0)).1) {
            (FcClass::Posted, true) => "PH",
            (FcClass::Posted, false) => "PD",
            (_, true) => "CplH",
            (_, false) => "CplD",
        }
    }

    /// Whether `h` crosses the socket link direction that is resource `r`.
    fn is_socket(&self, h: super::Hop, r: usize) -> bool {
        matches!(h, super::Hop::Socket { from, to, .. } if self.socket_res(from, to) == Some(r))
    }

    /// The bytes stream `a` (at `rate`, bound by `bound`; its requests going out at most
    /// one per turn of an input that serves `trickle` TLPs a second, 0 where not) keeps queued
    /// at each hop of its way before the one its bound holds it at: empty where nothing
    /// downstream holds it.
    fn held(&self, a: usize, rates: &[f64], (bound, trickle): (Bound, f64)) -> Vec<f64> {
        let rate = rates[a];
        let st = &self.streams[a];
        let Some(bl) = &st.backlog else {
            return Vec::new();
        };
        let chans = self.sys.links.len() * 2;
        let hops = &bl.path.hops;
        let j = match bound {
            Bound::Resource(r) if r < chans => {
                match hops.iter().position(|h| *h == super::Hop::Chan(r)) {
                    Some(j) => j,
                    None => return Vec::new(),
                }
            }
            // A socket link direction: they back up from the root complex that hands them
            // to it.
            Bound::Resource(r) if hops.iter().any(|h| self.is_socket(*h, r)) => {
                hops.iter().take_while(|h| !self.is_socket(**h, r)).count()
            }
            // A target's write rate: the writes back up from its own ingress buffer.
            Bound::Resource(r) if bl.class == FcClass::Posted && st.mix.uses.contains_key(&r) => {
                hops.len()
            }
            // Its own window, a reader of one transfer at a time whose narrowest link paces
            // each transfer and who keeps more in flight than its round trip holds: its
            // completions queue before that link within each transfer.
            Bound::Limit
                if bl.class == FcClass::Completion
                    && st
                        .duty
                        .as_ref()
                        .is_some_and(|d| d.limit > self.narrowest(&bl.path))
                    && backlog(st, rate, bl.share, f64::INFINITY) > 0.0 =>
            {
                let c = self.narrowest_chan(&bl.path);
                match hops
                    .iter()
                    .position(|h| c.is_some_and(|c| *h == super::Hop::Chan(c)))
                {
                    Some(j) => j,
                    None => return Vec::new(),
                }
            }
            Bound::Resource(_) | Bound::Limit | Bound::Unbound => return Vec::new(),
        };
        let mut rest = match (bl.class, bound) {
            (FcClass::Posted, _) => f64::INFINITY,
            // Held at a link: what it carries of each request's completions after the first
            // waits before it, so only the first one's round trip is out of the queues.
            (_, Bound::Resource(_)) => backlog(st, rate, bl.share, bl.first),
            // Its requests leave one per turn of their input on a link that holds its writes:
            // where their completions come slower than its narrowest link takes them, only
            // one request's are queued at a time (random fabric seed 1483: a "both"
            // endpoint's reads behind its writes, one input of three on a full link, leave
            // no backlog); where faster, the transfer's pile up as before.
            _ if trickle > 0.0 && trickle / st.requests_per_byte < self.narrowest(&bl.path) => {
                backlog(st, rate, bl.share, f64::INFINITY).min(1.0 / st.requests_per_byte)
            }
            _ => backlog(st, rate, bl.share, f64::INFINITY),
        };
        let mut out = vec![0.0; j];
        for i in (1..=j).rev() {
            // The buffer is short of what arrives over its credits' return.
            let refill = match hops[i - 1] {
                // From a TLP leaving the buffer to the next taking its place.
                super::Hop::Chan(c) => rate * self.credit_return(c, TlpKind::MWr, bl.tlp as u32),
                super::Hop::Socket { .. } => 0.0,
            };
            let room = match hops[i - 1] {
                super::Hop::Chan(c) => self.room(bl.path.nodes[i], c, (a, bl), rates) - refill,
                super::Hop::Socket { .. } => self.buffer(bl.path.nodes[i], bl.class, bl.tlp),
            }
            .max(0.0);
            let here = rest.min(room);
            rest -= here;
            if i < j {
                out[i] = here;
            }
        }
        if j > 0 {
            out[0] = rest.min(bl.source);
        }
        out
    }

    /// Bytes of stream `a`'s TLPs (`bl`) that node `n`'s ingress buffer from link
    /// direction `c` has room for beside what the other streams of `bl`'s class coming in
    /// over `c` hold of it, at `rates`: each holds its TLPs' credits over their credit
    /// round trip (the simulator's switch pools one buffer per ingress port and class).
    pub(super) fn room(
        &self,
        n: usize,
        c: usize,
        (a, bl): (usize, &Backlog),
        rates: &[f64],
    ) -> f64 {
        let (mut headers, mut units) = (0.0, 0.0);
        let kind = match bl.class {
            FcClass::Posted => TlpKind::MWr,
            _ => TlpKind::CplD,
        };
        for (s, st) in self.streams.iter().enumerate() {
            let Some(other) = st
                .backlog
                .as_ref()
                .filter(|o| s != a && o.class == bl.class)
            else {
                continue;
            };
            let Some(m) = other
                .path
                .hops
                .iter()
                .position(|h| *h == super::Hop::Chan(c))
            else {
                continue;
            };
            let tlps = st.mix.tlps_on(c) * rates[s];
            let hold = self.credit_round_trip(&other.path, m, kind, other.tlp as u32);
            headers += tlps * hold;
            units += tlps * hold * data_units(other.tlp);
        }
        self.fits(n, bl.class, bl.tlp, (headers, units)).0
    }
}

/// The data credits (16-byte units, at least one) of a TLP of `tlp` payload bytes.
pub(super) fn data_units(tlp: f64) -> f64 {
    (tlp / 16.0).ceil().max(1.0)
}

/// The bytes a windowed stream at `rate` keeps in flight beyond its round trips, `share`
/// of each window in flight: the least over its windows.
fn backlog(st: &Stream, rate: f64, share: f64, first: f64) -> f64 {
    st.limits
        .iter()
        .filter(|l| l.at.is_none())
        .filter_map(|l| l.window)
        .map(|(w, t)| w * share - rate * t.min(first))
        .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.min(x))))
        .map_or(0.0, |x| x.max(0.0))
}

impl Model<'_> {
    /// Seconds each stream's round trip waits at the rates, bounds and capacities of the
    /// last solve: behind other streams' backlogs ([`Model::hol`], with readers held behind
    /// full FIFOs, `fifos` at delays `q`, as held there) and for its turns at full links
    /// ([`Model::turn_waits`]); where it waits longest behind a backlog; and its turn
    /// waits alone.
    pub(super) fn waits(
        &self,
        victims: &[Victim],
        (fifos, q): (&[Fifo], &[f64]),
        (rates, bounds, cap): (&[f64], &[Bound], &[f64]),
    ) -> (Vec<f64>, Vec<Option<Wait>>, Vec<f64>) {
        let (mut out, longest) = if victims.is_empty() {
            (
                vec![0.0; self.streams.len()],
                vec![None; self.streams.len()],
            )
        } else {
            let held_at = fifo::held_at(fifos, q, &self.streams, bounds);
            self.hol(victims, rates, &held_at)
        };
        let turns = self.turn_waits((rates, bounds, cap));
        for (h, t) in out.iter_mut().zip(&turns) {
            *h += t;
        }
        (out, longest, turns)
    }

    /// Seconds each reader's round trip waits for its turns at full link directions its
    /// TLPs cross where nothing holds it and no stream shares its input (the egress serves
    /// its inputs round robin): at each, half a turn of the other inputs with TLPs there,
    /// each one TLP of their mean size (random fabric seeds 510, 636, 1282, 1460: readers
    /// of four tags beside a "both" endpoint's writes on a full link, 2-9 % high without
    /// it; the simulator waits about four times as long, which this does not reach).
    pub(super) fn turn_waits(&self, (rates, bounds, cap): (&[f64], &[Bound], &[f64])) -> Vec<f64> {
        let chans = self.sys.links.len() * 2;
        let load = self.used(rates);
        let mut out = vec![0.0; self.streams.len()];
        for (i, st) in self.streams.iter().enumerate() {
            let read = (st.backlog.as_ref()).is_some_and(|b| b.class == FcClass::Completion);
            if !read || rates[i] <= 0.0 {
                continue;
            }
            for (&c, mine) in st.mix.inputs.iter() {
                let full = c < chans && cap[c] > 0.0 && load[c] >= 0.999 * cap[c];
                if !full || bounds[i] == Bound::Resource(c) {
                    continue;
                }
                // The other inputs with TLPs here, and their streams' bytes and TLPs; a FIFO
                // it shares with streams in its own input already holds its wait.
                let mut others: BTreeSet<usize> = BTreeSet::new();
                let (mut bytes, mut tlps, mut queued) = (0.0, 0.0, false);
                for (s, o) in self.streams.iter().enumerate() {
                    let Some(inp) = o.mix.inputs.get(&c).filter(|_| s != i && rates[s] > 0.0)
                    else {
                        continue;
                    };
                    queued |= inp == mine;
                    if inp.is_disjoint(mine) {
                        others.extend(inp.iter().copied());
                        bytes += rates[s] * o.mix.use_of(c);
                        tlps += rates[s] * o.mix.tlps_on(c);
                    }
                }
                if tlps > 0.0 && !queued {
                    out[i] += others.len() as f64 / 2.0 * (bytes / tlps) / cap[c];
                }
            }
        }
        out
    }
}
