//! A workload's streams: the TLPs per payload byte of its writes, its reads or its fio
//! I/Os on each resource, and the limits of its own (its rate, a read window over the
//! unloaded round trip, posted credits at each hop, an fio job set's I/Os in flight).

use super::duty::Duty;
use super::hol::Backlog;
use super::{secs, Hop, Limit, Mix, Model, Path, Refused, Stream};
use crate::fabric::{DmaDirection, FioSpec, NodeId, NodeKind, NvmeSpec, WorkloadSpec};
use crate::pcie::flow_control::FcClass;
use crate::pcie::tlp::TlpKind;
use crate::sim::WRITE_QUEUE_DEPTH;

/// What a reader's completion and request credits allow it.
pub(super) struct Held {
    /// Bytes per second: the least of its credit windows over their round trips.
    pub rate: f64,
    /// Each credit window on its way.
    pub windows: Vec<Window>,
}

/// One credit window on a reader's way, for [`Held::burst`].
#[derive(Debug, Clone, Copy)]
pub(super) struct Window {
    /// Bytes of the transfer one credit stands for: a completion's payload, or the bytes
    /// a read request asks for.
    pub per: f64,
    /// TLPs the window holds.
    pub tlps: f64,
    /// Seconds a credit takes round.
    pub rtt: f64,
    /// Seconds one of its TLPs takes on that link.
    pub ser: f64,
}

impl Held {
    /// The least seconds after a lone burst of `bytes` sends its first TLP that its
    /// credits let it send its last (0 where no window holds it): a window of `w` TLPs
    /// sends TLP `k` no sooner than the credit of TLP `k - w` comes back, so the last of
    /// `n` goes `floor((n - 1) / w)` round trips in, and the rest of its round at the
    /// link's pace after it. A burst within every window waits for none (seed 1732: a
    /// transfer's 64 completions in sw0's 64 CplH credits come back to back). TLPs are
    /// counted as `bytes` over a credit's bytes, so an unaligned transfer's extra
    /// completion at an RCB boundary is not.
    pub(super) fn burst(&self, bytes: f64) -> f64 {
        (self.windows.iter())
            .map(|w| {
                let n = (bytes / w.per).ceil().max(1.0);
                let rounds = ((n - 1.0) / w.tlps).floor();
                if rounds < 1.0 {
                    0.0
                } else {
                    rounds * w.rtt + (n - 1.0 - rounds * w.tlps) * w.ser
                }
            })
            .fold(0.0, f64::max)
    }
}

/// The ways the TLPs of an fio workload's I/Os take.
struct FioWays {
    /// The drive's root complex, whose memory holds the queues.
    host: NodeId,
    /// Host to drive: doorbells, and the completions of the drive's entry fetches.
    down: Path,
    /// Drive to host: entry fetches, completion entries, MSI-X.
    up: Path,
    /// The data's: drive to target for reads, target to drive for writes.
    data: Path,
    /// For writes, the drive's read requests for the data (drive to target).
    requests: Option<Path>,
}

impl Model<'_> {
    /// The rate cap of a workload's `rate`, for `streams` streams.
    fn rate_limit(&self, w: &WorkloadSpec, streams: f64) -> Option<Limit> {
        let rate = w.rate?;
        let per = if streams > 1.0 {
            format!(" per stream, {streams} streams")
        } else {
            String::new()
        };
        Some(Limit {
            rate: rate * streams,
            window: None,
            at: None,
            paced: None,
            behind: Vec::new(),
            shared: None,
            hol: true,
            kind: "rate",
            resource: format!("{} rate", w.name),
            detail: format!("its rate of {:.3} GB/s{per} holds it back", rate / 1e9),
        })
    }

    /// The writes a source keeps queued at its own egress (the first link of `p`), `max`
    /// bytes each: a window behind that link's FIFO with no round trip of its own (the
    /// next is queued as one leaves, `tlp_left` in `sim/transmit.rs`), so it binds only
    /// there. The FIFO's delay is what a TLP coming at any moment waits: what is queued
    /// before it and the rest of the TLP on the wire, half of one on average; the writes
    /// queued are the window over the writer's rate without that rest (Little's law on the
    /// queue, not the wire), so the window's round trip is less half a write's wire time.
    fn queue_window(&self, p: &Path, max: u32) -> Option<Limit> {
        let Some(&Hop::Chan(c)) = p.hops.first() else {
            return None;
        };
        let window = WRITE_QUEUE_DEPTH as f64 * max as f64;
        let name = &self.sys.nodes[p.nodes[0]].name;
        Some(Limit {
            rate: f64::INFINITY,
            window: Some((window, -0.5 * self.ser(c, self.wire(c, TlpKind::MWr, max)))),
            at: Some(c),
            paced: None,
            behind: Vec::new(),
            shared: None,
            hol: false,
            kind: "link",
            resource: format!("{name}'s queued writes"),
            detail: format!(
                "{name} keeps {WRITE_QUEUE_DEPTH} writes of {max} B queued at its egress"
            ),
        })
    }

    /// A stream's credits of `class` (posted for writes, completion for a read's
    /// completions) at each hop of `p`, TLPs of `max` bytes, over that hop's credit round
    /// trip.
    fn credit_limits(&self, p: &Path, max: u32, class: FcClass) -> Vec<Limit> {
        let what = match class {
            FcClass::Completion => "completion",
            FcClass::Posted | FcClass::NonPosted => "posted",
        };
        let mut out = Vec::new();
        for (i, hop) in p.hops.iter().enumerate() {
            let Hop::Chan(c) = *hop else { continue };
            let (tx, rx) = (p.nodes[i], p.nodes[i + 1]);
            let Some((tlps, ty, mut rtt)) = self.hop_credits(p, i, max, class) else {
                continue;
            };
            let window = tlps * max as f64;
            // Held in the receiver's ingress buffer until it leaves on the next link (or
            // is across the socket link): a window behind that FIFO, if it is one.
            let mut behind = Vec::new();
            let at = match p.hops.get(i + 1) {
                // Completions: a window of the reader's own over the unloaded round trip.
                // How readers split a switch's completion buffer they share follows from
                // the order their completions come in (their own windows behind the FIFO
                // before it), not from their rates, so it is not split by them.
                _ if class == FcClass::Completion => None,
                Some(&Hop::Chan(next)) => Some(next),
                Some(&Hop::Socket { from, to, .. }) => self.socket_res(from, to),
                // The root complex frees a write's credits once its memory has it: a
                // window behind every throttle the write books, not only the slowest: its
                // memory and shared data path beside its posted-write sink
                // (`RootComplex::write`), which readers' windows may keep queued far longer
                // than the sink (random fabric `--host` seed 266: two 4 KiB readers beside
                // two readers of 128 KiB in flight through a 5 GB/s data path, +592 % while
                // the writes' credits waited behind their 2 GB/s sink alone). The delays
                // add, as in series; beside a sink the simulator waits for the longest of
                // them. Its round trip has the slowest one's time for the TLP.
                None if class == FcClass::Posted => self.write_throttle(rx).map(|(r, cap)| {
                    rtt += max as f64 / cap;
                    let names = self.target_names(rx, true);
                    behind = names.iter().filter_map(|s| self.named(s)).collect();
                    r
                }),
                None => None,
            };
            let names = &self.sys.nodes;
            out.push(Limit {
                rate: window / rtt,
                window: at.map(|_| (window, rtt)),
                at,
                paced: None,
                behind,
                shared: at.map(|_| (c, class)),
                hol: at.is_none(),
                kind: "credits",
                resource: format!("{} -> {} {ty} credits", names[tx].name, names[rx].name),
                detail: format!(
                    "{} advertises {tlps:.0} TLPs of {max} B of {what} credits toward {}, and \
                     their round trip is {:.0} ns: at most {:.3} GB/s",
                    names[rx].name,
                    names[tx].name,
                    rtt * 1e9,
                    window / rtt / 1e9
                ),
            });
        }
        out
    }

    /// The credits of `class` hop `i` of `p` (a link direction) gives TLPs of `max` bytes:
    /// how many TLPs, the credit type that sets it, and their round trip (`None` where
    /// the receiver advertises infinite credits).
    pub(super) fn hop_credits(
        &self,
        p: &Path,
        i: usize,
        max: u32,
        class: FcClass,
    ) -> Option<(f64, &'static str, f64)> {
        let (kind, names) = match class {
            FcClass::Completion => (TlpKind::CplD, ["CplH", "CplD"]),
            FcClass::Posted | FcClass::NonPosted => (TlpKind::MWr, ["PH", "PD"]),
        };
        let credits = self.sys.nodes[p.nodes[i + 1]].credits.0;
        let by_header = credits[2 * class as usize].map(|h| h as f64);
        let by_data =
            credits[2 * class as usize + 1].map(|d| (d as f64 / max.div_ceil(16) as f64).floor());
        let (tlps, ty) = match (by_header, by_data) {
            (None, None) => return None,
            (Some(h), None) => (h, names[0]),
            (None, Some(d)) => (d, names[1]),
            (Some(h), Some(d)) if h <= d => (h, names[0]),
            (Some(_), Some(d)) => (d, names[1]),
        };
        Some((tlps, ty, self.credit_round_trip(p, i, kind, max)))
    }

    /// A reader's credit windows (`Held::windows`): its completions' of `cs` bytes along
    /// `cpl`, and its requests' of `per_request` bytes where a switch holds them (their
    /// `request_credit_limits`).
    fn credit_windows(
        &self,
        cpl: &Path,
        cs: u32,
        (requests, per_request): (&[Limit], f64),
    ) -> Vec<Window> {
        let mut out = Vec::new();
        for (i, hop) in cpl.hops.iter().enumerate() {
            let Hop::Chan(c) = *hop else { continue };
            if let Some((tlps, _, rtt)) = self.hop_credits(cpl, i, cs, FcClass::Completion) {
                let ser = self.ser(c, self.wire(c, TlpKind::CplD, cs));
                let per = cs as f64;
                out.push(Window {
                    per,
                    tlps,
                    rtt,
                    ser,
                });
            }
        }
        for l in requests {
            if let (Some((window, rtt)), Some((c, _))) = (l.window, l.shared) {
                let ser = self.ser(c, self.wire(c, TlpKind::MRd, 0));
                let (per, tlps) = (per_request, window / per_request);
                out.push(Window {
                    per,
                    tlps,
                    rtt,
                    ser,
                });
            }
        }
        out
    }

    /// A reader's non-posted header credits at each switch its requests (along `p`, each
    /// for `per_request` bytes) come into: the switch holds each request's credit until it
    /// starts on its next link, so its NPH credits over that round trip, behind the FIFO
    /// of that link, bound the requests there and the bytes they ask for (random fabric
    /// seed 1176: a "both" endpoint's 256-byte requests and 512-byte writes share one
    /// input at `sw0`'s full link up in the ratio of its 64 NPH to its 32 writes of PD).
    fn request_credit_limits(&self, p: &Path, per_request: f64) -> Vec<Limit> {
        let np = FcClass::NonPosted as usize;
        let mut out = Vec::new();
        for (i, hop) in p.hops.iter().enumerate() {
            let Hop::Chan(c) = *hop else { continue };
            let (tx, rx) = (p.nodes[i], p.nodes[i + 1]);
            let Some(headers) = self.sys.nodes[rx].credits.0[2 * np].filter(|&h| h > 0) else {
                continue;
            };
            let Some(&Hop::Chan(next)) = p.hops.get(i + 1) else {
                continue;
            };
            if self.sys.nodes[rx].kind.holds_until_forwarded().is_none() {
                continue;
            }
            let rtt = self.credit_round_trip(p, i, TlpKind::MRd, 0);
            let window = headers as f64 * per_request;
            let names = &self.sys.nodes;
            out.push(Limit {
                rate: window / rtt,
                window: Some((window, rtt)),
                at: Some(next),
                paced: None,
                behind: Vec::new(),
                shared: Some((c, FcClass::NonPosted)),
                hol: false,
                kind: "credits",
                resource: format!("{} -> {} NPH credits", names[tx].name, names[rx].name),
                detail: format!(
                    "{} advertises {headers} NPH credits toward {}, each a read of {:.0} B, \
                     and their round trip is {:.0} ns: at most {:.3} GB/s",
                    names[rx].name,
                    names[tx].name,
                    per_request,
                    rtt * 1e9,
                    window / rtt / 1e9
                ),
            });
        }
        out
    }

    /// Seconds a credit of hop `i` of `p` (a link direction) is out for a TLP of `kind`
    /// with `max` bytes: [`Model::credit_return`] and what the receiver holds it for. A
    /// switch frees it as the TLP starts on its way out (`send_tlp` in `sim/transmit.rs`):
    /// its latency after the TLP's first byte if it cuts through, after its last
    /// otherwise (`Crossing` in `sim/node/switch.rs`); a root complex that passes it on,
    /// after its forwarding latency, or that hands a write to a socket link, once it is
    /// across (`socket_arrived` in `sim/node/root.rs`).
    pub(super) fn credit_round_trip(&self, p: &Path, i: usize, kind: TlpKind, max: u32) -> f64 {
        let Hop::Chan(c) = p.hops[i] else {
            return 0.0;
        };
        let rx = p.nodes[i + 1];
        let hold = match (
            self.sys.nodes[rx].kind.holds_until_forwarded(),
            p.hops.get(i + 1),
        ) {
            (_, Some(&Hop::Socket { link, .. })) => {
                let s = &self.sys.socket_links[link];
                max as f64 / s.bandwidth + secs(s.latency)
            }
            (Some(latency), Some(&Hop::Chan(next))) => {
                let ser = self.ser(c, self.wire(c, kind, max));
                secs(latency)
                    - if self.cuts_through(rx, c, next) {
                        ser
                    } else {
                        0.0
                    }
            }
            // A root complex passing it on (peer to peer): after its forwarding latency
            // (`forward` in `sim/node/root.rs`).
            (None, Some(&Hop::Chan(_))) => {
                secs(self.sys.nodes[rx].kind.forwarding_latency(self.peer(p)))
            }
            (Some(_), None) | (None, None) => 0.0,
        };
        self.credit_return(c, kind, max) + hold
    }

    /// Read tags of node `n`.
    fn tags(&self, n: NodeId) -> u32 {
        self.sys.nodes[n].kind.outstanding_reads()
    }

    /// The streams of workload `i`.
    pub(super) fn workload(&mut self, i: usize, w: &WorkloadSpec) -> Result<(), Refused> {
        // Storage mixes and bridging are refused before any stream.
        if let Some(fio) = w.kind.fio() {
            return self.fio(i, w, fio);
        }
        let (src, dst) = (w.source, w.target);
        let t = w.transfer_size;
        let streams = if w.direction == DmaDirection::Both {
            2.0
        } else {
            1.0
        };
        let _ = streams;
        if w.direction.writes() {
            let p = self.path(src, dst, w)?;
            let max = self.write_payload(w);
            let mut mix = Mix::default();
            let writes = self.add_writes(&mut mix, &p, t, max, 1.0);
            self.charge_target(&mut mix, dst, t as f64, true);
            let mut interrupts = 0.0;
            if let Some(db) = w.doorbell {
                let per = 1.0 / db.every.max(1) as f64;
                let to_bridge = self.path(src, db.ntb, w)?;
                self.add_tlp(&mut mix, &to_bridge, TlpKind::MWr, 4, per);
                let below = self
                    .sys
                    .links
                    .iter()
                    .find(|l| l.up == db.ntb && self.is_root(l.down));
                if let Some(l) = below {
                    let msi = self.path(db.ntb, l.down, w)?;
                    self.add_tlp(&mut mix, &msi, TlpKind::MWr, 4, per);
                }
                interrupts = per;
            }
            let mut limits: Vec<Limit> = self.rate_limit(w, 1.0).into_iter().collect();
            limits.extend(self.queue_window(&p, max));
            limits.extend(self.credit_limits(&p, max, FcClass::Posted));
            if self.unloaded[i].is_none() {
                self.unloaded[i] = Some(self.one_way(&p, TlpKind::MWr, max) * 1e9);
            }
            self.push(i, mix, t as f64, limits, writes, interrupts);
            let source = (WRITE_QUEUE_DEPTH * max) as f64;
            self.held_back(
                p,
                FcClass::Posted,
                (max as f64, source),
                (1.0, f64::INFINITY),
            );
        }
        if w.direction.reads() {
            let (req, cpl) = (self.path(src, dst, w)?, self.path(dst, src, w)?);
            let mut mix = Mix::default();
            let requests = self.add_read(&mut mix, &req, &cpl, t, 1.0);
            self.charge_target(&mut mix, dst, t as f64, false);
            let per_request = (t as f64 / requests).min(self.sys.pcie.mrrs as f64);
            let (first, _) = self.read_round_trip(&req, &cpl, per_request.ceil() as u32);
            self.unloaded[i] = Some(first * 1e9);
            let mut limits: Vec<Limit> = self.rate_limit(w, 1.0).into_iter().collect();
            let cs = self.cpl_size(dst).min(per_request.ceil() as u32);
            let mut credits = self.credit_limits(&cpl, cs, FcClass::Completion);
            let first_request = credits.len();
            credits.extend(self.request_credit_limits(&req, per_request));
            let held = Held {
                rate: credits.iter().map(|l| l.rate).fold(f64::INFINITY, f64::min),
                windows: self.credit_windows(&cpl, cs, (&credits[first_request..], per_request)),
            };
            let (window, share, duty) = self.read_window(w, (&req, &cpl), requests, &held);
            limits.extend(window);
            limits.extend(credits);
            self.push(i, mix, t as f64, limits, requests, 0.0);
            if let Some(s) = self.streams.last_mut() {
                s.duty = duty;
                // Only a reader whose transfers' requests all go out at once keeps less
                // than its whole window in flight on average (`read_window`).
                s.burst = if share < 1.0 { requests } else { 1.0 };
            }
            // `first` is that of one completion of `cs` bytes: what the read's first takes.
            self.held_back(
                cpl,
                FcClass::Completion,
                (cs as f64, f64::INFINITY),
                (share, first),
            );
        }
        Ok(())
    }

    /// The window of `w`'s reads (requests along `ways.0`, completions along `ways.1`,
    /// `requests` per transfer): the requests its tags, copy engines or transfers keep in
    /// flight, each over one request's round trip; where its transfers bind, at most its
    /// transfers over the round trip of a whole transfer (a transfer's slot frees only when
    /// its last completion is in, so on an idle fabric its requests do not go round
    /// independently), that round trip behind each FIFO its requests cross on their way
    /// out (a transfer's requests join the source's at once and wait there together, and
    /// in each queue after it behind other streams' writes; the FIFOs of its completions
    /// hold its own window, which its per-request window waits behind). With them, the share
    /// of its window in flight on average where its completions queue: a transfer-bound
    /// reader's next transfer waits for the last completion of one whose others came in one
    /// after another, so half a transfer is missing. And, for a reader of one transfer at a
    /// time, its cycle ([`Duty`]: its links idle at each transfer's end).
    fn read_window(
        &self,
        w: &WorkloadSpec,
        ways: (&Path, &Path),
        requests: f64,
        held: &Held,
    ) -> (Vec<Limit>, f64, Option<Duty>) {
        let (req, cpl, src, t) = (ways.0, ways.1, w.source, w.transfer_size);
        let per_request = (t as f64 / requests).min(self.sys.pcie.mrrs as f64);
        let (_, rtt) = self.read_round_trip(req, cpl, per_request.ceil() as u32);
        let device = self.sys.nodes[src].kind.dma_device();
        let transfers = w.outstanding.max(1) as f64;
        let engines = device
            .and_then(|d| d.read.engines)
            .map_or(transfers, |e| (e as f64).min(transfers));
        let mut in_flight = (transfers * requests).min(self.tags(src) as f64);
        let mut why = format!(
            "{} read transfers of {t} B (or {}'s {} tags)",
            w.outstanding,
            self.sys.nodes[src].name,
            self.tags(src)
        );
        match device.and_then(|d| d.read.reads_per_engine) {
            Some(rpe) if engines * rpe as f64 <= in_flight => {
                in_flight = engines * rpe as f64;
                why = format!(
                    "{engines} copy engine(s) of {} with {rpe} reads each",
                    self.sys.nodes[src].name
                );
            }
            _ => {}
        }
        let window = in_flight * per_request;
        let mut out = Vec::with_capacity(2);
        let mut share = 1.0;
        let mut duty = None;
        // A rate no slower than its narrowest link's wire cannot hold it: the reader runs
        // as one without (random fabric `--host` seed 133: a 4 GB/s cap on a Gen1 x16
        // reader hid its completions' backlog from the reader behind them, +181 %).
        let unpaced = w.rate.is_none_or(|r| r >= self.narrowest(cpl));
        if let (true, Some(&Hop::Chan(first))) = (
            requests > 1.0 && in_flight >= transfers * requests,
            req.hops.first(),
        ) {
            share = (transfers - 0.5) / transfers;
            let (first_in, whole) = self.read_round_trip(req, cpl, t.min(u32::MAX as u64) as u32);
            // The rest of its completions no sooner than its credits come back for them.
            let wait = held.burst(t as f64);
            let whole = whole.max(first_in + wait);
            if transfers == 1.0 && unpaced {
                // While it flows its credits hold it only where its transfer outruns them.
                duty = Some(Duty {
                    bytes: t as f64,
                    first: first_in,
                    limit: if wait > 0.0 {
                        t as f64 / wait
                    } else {
                        f64::INFINITY
                    },
                });
            }
            let detail = format!(
                "{} read transfers of {t} B in flight, each {:.0} ns from its first request \
                 to its last completion: throughput is bytes in flight over latency",
                w.outstanding,
                whole * 1e9
            );
            out.push(Limit {
                at: Some(first),
                behind: chans(req),
                ..read_limit(w, window, whole, detail)
            });
        }
        if let (true, Some(&Hop::Chan(first))) = (
            transfers == 1.0 && requests > in_flight && in_flight >= 1.0,
            req.hops.first(),
        ) {
            if unpaced {
                duty = Some(Duty {
                    bytes: t as f64,
                    first: self.read_round_trip(req, cpl, per_request.ceil() as u32).0,
                    limit: (window / rtt).min(held.rate),
                });
            }
            let n = (requests, in_flight, per_request);
            out.extend(self.drained_transfer(w, ways, n, held, first));
        }
        let detail = format!(
            "{why} keep {in_flight:.0} requests of {per_request:.0} B in flight over a {:.0} \
             ns round trip: throughput is bytes in flight over latency",
            rtt * 1e9
        );
        out.push(read_limit(w, window, rtt, detail));
        (out, share, duty)
    }

    /// A lone transfer whose requests outnumber its window `n` (`(requests, n, bytes per
    /// request)`; `held`: what its completion and request credits allow): it goes out in `m`
    /// rounds of its window, each waiting for the last round's completions, and the next
    /// transfer starts only when its last completion is in, so the window drains at every
    /// transfer's end: `m - 1` request round trips and the round trip of the last round's
    /// requests together, each round behind every FIFO on its way; and at least all its
    /// completions back to back (where they, not the window, pace it; none sooner than its
    /// credits come back for it), behind the FIFO its requests leave the source by, once.
    fn drained_transfer(
        &self,
        w: &WorkloadSpec,
        ways: (&Path, &Path),
        (requests, n, per_request): (f64, f64, f64),
        held: &Held,
        first: usize,
    ) -> [Limit; 2] {
        let (req, cpl) = ways;
        let bytes = |k: f64| (k * per_request).min(u32::MAX as f64) as u32;
        let rtt = self.read_round_trip(req, cpl, per_request.ceil() as u32).1;
        let m = (requests / n).ceil();
        let last = requests - (m - 1.0) * n;
        let rounds = (m - 1.0) * rtt + self.read_round_trip(req, cpl, bytes(last)).1;
        let (first_in, whole) = self.read_round_trip(req, cpl, bytes(requests));
        let window = requests * per_request;
        let whole = whole.max(first_in + held.burst(window));
        let limit = |t: f64, parts: f64, how: String| {
            let detail = format!(
                "one read transfer of {} B at a time, {n:.0} of its {requests:.0} requests in \
                 flight, {how} {:.0} ns from its first request to its last completion: \
                 throughput is bytes in flight over latency",
                w.transfer_size,
                t * 1e9
            );
            Limit {
                window: Some((window / parts, t / parts)),
                at: (parts == 1.0).then_some(first),
                paced: (parts == 1.0)
                    .then(|| self.pace(cpl, bytes(requests)))
                    .flatten(),
                ..read_limit(w, window, t, detail)
            }
        };
        [
            limit(rounds, m, format!("{m:.0} rounds of requests,")),
            limit(whole, 1.0, "its completions back to back,".into()),
        ]
    }

    /// The stream of an fio workload on an NVMe drive.
    fn fio(&mut self, i: usize, w: &WorkloadSpec, fio: FioSpec) -> Result<(), Refused> {
        let d = w.source;
        let NodeKind::Nvme { spec, .. } = &self.sys.nodes[d].kind else {
            return Err(Refused(format!(
                "{}: an fio workload runs on an NVMe drive",
                w.name
            )));
        };
        let spec = *spec;
        let ways = self.fio_ways(w, fio)?;
        let bs = fio.bs;
        let (mix, requests) = self.fio_mix(w, fio, &ways);
        let latency = self.fio_latency(w, fio, &spec, &ways);
        self.unloaded[i] = Some(latency * 1e9);
        let ios = (fio.iodepth * fio.numjobs) as f64;
        let mut limits: Vec<Limit> = self.rate_limit(w, fio.numjobs as f64).into_iter().collect();
        limits.push(Limit {
            rate: ios * bs as f64 / latency,
            window: Some((ios * bs as f64, latency)),
            at: None,
            paced: None,
            behind: Vec::new(),
            shared: None,
            hol: true,
            kind: "iodepth",
            resource: format!("{ios} I/O{} in flight", if ios == 1.0 { "" } else { "s" }),
            detail: format!(
                "fio keeps all {} x {} I/Os of {bs} B in flight: throughput is the I/Os in \
                 flight over the per-I/O latency (unloaded {:.1} us)",
                fio.iodepth,
                fio.numjobs,
                latency * 1e6
            ),
        });
        self.push(i, mix, bs as f64, limits, requests, 0.0);
        Ok(())
    }

    /// The ways the TLPs of fio workload `w`'s I/Os take.
    fn fio_ways(&self, w: &WorkloadSpec, fio: FioSpec) -> Result<FioWays, Refused> {
        let (d, t) = (w.source, w.target);
        let host = self.tree.top(d);
        let (down, up) = (self.path(host, d, w)?, self.path(d, host, w)?);
        let reads = fio.rw.reads();
        let data = if reads {
            self.path(d, t, w)?
        } else {
            self.path(t, d, w)?
        };
        let requests = if reads {
            None
        } else {
            Some(self.path(d, t, w)?)
        };
        Ok(FioWays {
            host,
            down,
            up,
            data,
            requests,
        })
    }

    /// Bytes of the PRP list an I/O of `bs` bytes has the drive fetch (none up to two
    /// pages).
    fn prp_bytes(bs: u64) -> u64 {
        if bs.div_ceil(4096) <= 2 {
            0
        } else {
            (bs.div_ceil(4096) - 1) * 8
        }
    }

    /// The TLP mix of one I/O of fio workload `w` and its data TLPs (or read requests).
    fn fio_mix(&self, w: &WorkloadSpec, fio: FioSpec, ways: &FioWays) -> (Mix, f64) {
        let (d, t, h) = (w.source, w.target, ways.host);
        let (down, up) = (&ways.down, &ways.up);
        let bs = fio.bs;
        let mut mix = Mix::default();
        // The host's doorbells, the entry (and PRP list) fetched, the completion entry and
        // the MSI-X.
        self.add_tlp(&mut mix, down, TlpKind::MWr, 4, 2.0);
        self.add_read(&mut mix, up, down, 64, 1.0);
        self.charge_target(&mut mix, h, 64.0, false);
        let prp = Self::prp_bytes(bs);
        if prp > 0 {
            self.add_read(&mut mix, up, down, prp, 1.0);
            self.charge_target(&mut mix, h, prp as f64, false);
        }
        self.add_tlp(&mut mix, up, TlpKind::MWr, 16, 1.0);
        self.add_tlp(&mut mix, up, TlpKind::MWr, 4, 1.0);
        self.charge_target(&mut mix, h, 16.0, true);
        let name = &self.sys.nodes[d].name;
        if let Some(r) = self.named(&format!("{name} command processor")) {
            *mix.uses.entry(r).or_default() += 1.0;
        }
        let reads = fio.rw.reads();
        let media = format!("{name} media ({})", if reads { "read" } else { "write" });
        if let Some(r) = self.named(&media) {
            *mix.uses.entry(r).or_default() += bs as f64;
        }
        let requests = match &ways.requests {
            None => self.add_writes(&mut mix, &ways.data, bs, self.write_payload(w), 1.0),
            Some(req) => self.add_read(&mut mix, req, &ways.data, bs, 1.0),
        };
        self.charge_target(&mut mix, t, bs as f64, reads);
        (mix, requests)
    }

    /// Seconds one I/O of fio workload `w` takes alone: doorbell, entry fetch, command,
    /// media, data, entry, MSI-X.
    fn fio_latency(&self, w: &WorkloadSpec, fio: FioSpec, spec: &NvmeSpec, ways: &FioWays) -> f64 {
        let (down, up, data) = (&ways.down, &ways.up, &ways.data);
        let bs = fio.bs;
        let prp = Self::prp_bytes(bs);
        let (_, sqe) = self.read_round_trip(up, down, 64);
        let prp_rtt = if prp > 0 {
            self.read_round_trip(up, down, prp as u32).1
        } else {
            0.0
        };
        let command = spec.command_rate.map_or(0.0, |r| 1.0 / r);
        let media_time = if fio.rw.reads() {
            secs(spec.read_latency) + spec.read_bandwidth.map_or(0.0, |b| bs as f64 / b)
        } else {
            secs(spec.write_latency) + spec.write_bandwidth.map_or(0.0, |b| bs as f64 / b)
        };
        let move_data = match &ways.requests {
            None => self.one_way(data, TlpKind::MWr, self.write_payload(w)),
            Some(req) => {
                self.read_round_trip(req, data, self.sys.pcie.mrrs).1
                    + bs as f64 / self.narrowest(data)
            }
        };
        self.one_way(down, TlpKind::MWr, 4)
            + sqe
            + prp_rtt
            + command
            + media_time
            + move_data
            + self.one_way(up, TlpKind::MWr, 16)
            + self.one_way(up, TlpKind::MWr, 4)
    }

    /// Notes what the last stream keeps queued along `path` when held downstream: TLPs of
    /// `class` with `tlp` payload bytes, at most `source` bytes at its own egress, `share`
    /// of its window in flight where they queue (`Backlog::share`), `first` seconds for its
    /// first TLP to come in (`Backlog::first`).
    fn held_back(
        &mut self,
        path: Path,
        class: FcClass,
        (tlp, source): (f64, f64),
        (share, first): (f64, f64),
    ) {
        if let Some(s) = self.streams.last_mut() {
            s.backlog = Some(Backlog {
                path,
                class,
                tlp,
                source,
                share,
                first,
            });
        }
    }

    /// Adds a stream of flow `flow` whose unit moves `bytes` of data.
    fn push(
        &mut self,
        flow: usize,
        mix: Mix,
        bytes: f64,
        limits: Vec<Limit>,
        requests: f64,
        interrupts: f64,
    ) {
        let mix = mix.per(bytes);
        let densest = mix.tlps.values().copied().fold(0.0, f64::max);
        let weight = if densest > 0.0 { 1.0 / densest } else { 1.0 };
        self.streams.push(Stream {
            flow,
            mix,
            weight,
            limits,
            requests_per_byte: requests / bytes,
            interrupts_per_byte: interrupts / bytes,
            backlog: None,
            duty: None,
            burst: 1.0,
            waits: None,
        });
    }
}

/// The link directions of `p`.
fn chans(p: &Path) -> Vec<usize> {
    (p.hops.iter())
        .filter_map(|h| match *h {
            Hop::Chan(c) => Some(c),
            Hop::Socket { .. } => None,
        })
        .collect()
}

/// A read window of workload `w`: `window` bytes in flight over a round trip of `t`
/// seconds, behind every FIFO its stream crosses and other streams' backlogs.
fn read_limit(w: &WorkloadSpec, window: f64, t: f64, detail: String) -> Limit {
    Limit {
        rate: window / t,
        window: Some((window, t)),
        at: None,
        paced: None,
        behind: Vec::new(),
        shared: None,
        hol: true,
        kind: "requests",
        resource: format!("{} read requests", w.name),
        detail,
    }
}
