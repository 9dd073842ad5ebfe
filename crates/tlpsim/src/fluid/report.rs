//! The result record of a solve, under the simulator's names: each link direction's and
//! resource's load, each flow's (and fio job set's) rate with the verdict of what holds it
//! back, each socket link direction's load.

use super::{secs, Bound, FluidRun, Limit, Model, Stream};
use crate::fabric::{FioSpec, System, WorkloadSpec};
use crate::pcie::dll::DLLP_BYTES;
use crate::sim::bottleneck::{Bottleneck, ResourceResult};
use crate::sim::result::{
    Audit, FioResult, FlowResult, KindResult, LatencySummary, LinkResult, RunResult,
    SocketLinkResult,
};

/// What the solved rates put on each resource, per second.
struct Load<'c> {
    /// Units of each resource used.
    used: Vec<f64>,
    /// TLPs on each link direction.
    tlps: Vec<f64>,
    /// Payload bytes on each link direction.
    payload: Vec<f64>,
    /// Each resource's capacity, a link direction's without its DLLPs.
    cap: &'c [f64],
    /// DLLP bytes on each link direction.
    dllp: &'c [f64],
}

impl Model<'_> {
    /// The result record of a solve.
    pub(super) fn report(
        self,
        (rates, bounds): (Vec<f64>, Vec<Bound>),
        (cap, dllp): (&[f64], &[f64]),
        estimates: Vec<Vec<String>>,
    ) -> FluidRun {
        let sys = self.sys;
        let window = secs(sys.duration.saturating_sub(sys.warmup));
        let chans = sys.links.len() * 2;
        let load = self.load(&rates, cap, dllp);
        let links = self.link_results(&load, window);
        let mut flows = Vec::new();
        let mut kinds = Vec::new();
        for (i, w) in sys.workloads.iter().enumerate() {
            let (flow, rate) = self.flow_result(&load, &rates, &bounds, i, window);
            flows.push(flow);
            // The fluid engine refuses bridging; the others report their flow alone.
            if let Some(f) = w.kind.fio() {
                kinds.push(KindResult::Fio(fio_result(sys, w, f, rate, window)))
            }
        }
        let socket_links = self.socket_results(&load);
        let resources = (chans..self.res.len())
            .map(|k| ResourceResult {
                name: self.res[k].name.clone(),
                kind: self.res[k].kind,
                busy: self.busy(&load, k),
            })
            .collect();
        let mut audit = Audit::default();
        audit.conclude();
        FluidRun {
            result: RunResult {
                simulated_s: window,
                wall_s: 0.0,
                events: 0,
                tlp_hops: links.iter().map(|l| l.tlps).sum(),
                flows,
                links,
                socket_links,
                resources,
                kinds,
                starved: Vec::new(),
                warnings: Vec::new(),
                audit,
            },
            unloaded_latency_ns: self.unloaded,
            estimates,
        }
    }

    /// What the streams at `rates` use of each resource (a link direction's wire bytes per
    /// second); a stream nothing bounds (an infinite rate) counts as none.
    pub(super) fn used(&self, rates: &[f64]) -> Vec<f64> {
        let mut used = vec![0.0; self.res.len()];
        for (s, &r) in self.streams.iter().zip(rates) {
            let r = if r.is_finite() { r } else { 0.0 };
            for (&k, &a) in &s.mix.uses {
                used[k] += a * r;
            }
        }
        used
    }

    /// What the streams at `rates` put on each resource and link direction.
    fn load<'c>(&self, rates: &[f64], cap: &'c [f64], dllp: &'c [f64]) -> Load<'c> {
        let chans = self.sys.links.len() * 2;
        let used = self.used(rates);
        let mut tlps = vec![0.0; chans];
        let mut payload = vec![0.0; chans];
        for (s, &r) in self.streams.iter().zip(rates) {
            let r = if r.is_finite() { r } else { 0.0 };
            for (&c, &n) in &s.mix.tlps {
                tlps[c] += n * r;
            }
            for (&c, &p) in &s.mix.payload {
                payload[c] += p * r;
            }
        }
        Load {
            used,
            tlps,
            payload,
            cap,
            dllp,
        }
    }

    /// Fraction of resource `k` in use (of a link direction's time, SKP ordered sets and
    /// DLLPs included).
    fn busy(&self, load: &Load<'_>, k: usize) -> f64 {
        let (used, cap, dllp) = (&load.used, load.cap, load.dllp);
        if k < self.sys.links.len() * 2 {
            let l = &self.sys.links[k / 2];
            let skp = if l.skp {
                l.gen.encoding().skp_fraction()
            } else {
                0.0
            };
            let base = cap[k] + dllp[k];
            (skp + (1.0 - skp) * (used[k] + dllp[k]) / base).min(1.0)
        } else {
            (used[k] / self.res[k].cap).min(1.0)
        }
    }

    /// The record of each link direction over `window` seconds.
    fn link_results(&self, load: &Load<'_>, window: f64) -> Vec<LinkResult> {
        let sys = self.sys;
        (0..sys.links.len() * 2)
            .map(|c| LinkResult {
                name: sys.links[c / 2].name.clone(),
                direction: if c % 2 == 0 { "down" } else { "up" },
                utilization: self.busy(load, c),
                payload_gbps: load.payload[c] * 8.0 / 1e9,
                tlps: (load.tlps[c] * window).round() as u64,
                dllps: (load.dllp[c] / DLLP_BYTES as f64 * window).round() as u64,
                replays: 0,
                retrains: 0,
                credit_stall_fraction: 0.0,
                bad_tlps: 0,
                bad_dllps: 0,
                nullified: 0,
                queue_mean_tlps: 0.0,
                queue_max_tlps: 0,
            })
            .collect()
    }

    /// What holds back stream `s`, which the solve bound by `b` at `rate`.
    fn verdict(&self, load: &Load<'_>, s: &Stream, b: Bound, rate: f64) -> Bottleneck {
        let sys = self.sys;
        match b {
            Bound::Resource(k) if k < sys.links.len() * 2 => {
                let (tx, rx) = super::path::ends(sys, k);
                let busy = self.busy(load, k);
                // Not full on average where a reader of one transfer at a time leaves it
                // idle in its gaps (`duty`).
                let how = if busy < 0.995 {
                    format!("is busy {:.0} % of the time", busy * 100.0)
                } else {
                    "is full".to_string()
                };
                Bottleneck {
                    kind: "link",
                    resource: self.res[k].name.clone(),
                    busy,
                    detail: format!(
                        "the wire {} -> {} {how} ({:.3} Gb/s of TLP payload)",
                        sys.nodes[tx].name,
                        sys.nodes[rx].name,
                        load.payload[k] * 8.0 / 1e9
                    ),
                }
            }
            Bound::Resource(k) => Bottleneck {
                kind: self.res[k].kind,
                resource: self.res[k].name.clone(),
                busy: self.busy(load, k),
                detail: format!(
                    "{} is full at {:.3} {}",
                    self.res[k].name,
                    self.res[k].cap / 1e9,
                    if self.res[k].kind == "command_rate" {
                        "G commands/s"
                    } else {
                        "GB/s"
                    }
                ),
            },
            Bound::Limit if s.waits.is_some() => {
                let (resource, detail) = s.waits.clone().unwrap_or_default();
                Bottleneck {
                    kind: "credits",
                    resource,
                    busy: 1.0,
                    detail,
                }
            }
            Bound::Limit => {
                let l = s.limits.iter().fold(None::<&Limit>, |a, l| match a {
                    Some(a) if a.rate <= l.rate => Some(a),
                    _ => Some(l),
                });
                match l {
                    Some(l) => Bottleneck {
                        kind: l.kind,
                        resource: l.resource.clone(),
                        busy: 1.0,
                        detail: l.detail.clone(),
                    },
                    None => offered(rate),
                }
            }
            Bound::Unbound => offered(rate),
        }
    }

    /// The record of flow `i` over `window` seconds, and its rate in bytes per second: its
    /// streams' rates summed, the verdict of the one that moves the most.
    fn flow_result(
        &self,
        load: &Load<'_>,
        rates: &[f64],
        bounds: &[Bound],
        i: usize,
        window: f64,
    ) -> (FlowResult, f64) {
        let sys = self.sys;
        let w = &sys.workloads[i];
        let mine: Vec<usize> = (0..self.streams.len())
            .filter(|&s| self.streams[s].flow == i)
            .collect();
        let rate: f64 = mine
            .iter()
            .map(|&s| rates[s])
            .filter(|r| r.is_finite())
            .sum();
        let bytes = (rate * window).round() as u64;
        let requests: f64 = mine
            .iter()
            .map(|&s| rates[s] * self.streams[s].requests_per_byte)
            .sum();
        let interrupts: f64 = mine
            .iter()
            .map(|&s| rates[s] * self.streams[s].interrupts_per_byte)
            .sum();
        // The stream that moves the most speaks for the flow.
        let lead = mine.iter().copied().fold(None::<usize>, |a, s| match a {
            Some(a) if rates[a] >= rates[s] => Some(a),
            _ => Some(s),
        });
        let bottleneck = match lead {
            Some(s) => self.verdict(load, &self.streams[s], bounds[s], rate),
            None => offered(rate),
        };
        let unit = w.kind.fio().map_or(w.transfer_size, |f| f.bs) as f64;
        let flow = FlowResult {
            name: w.name.clone(),
            bytes,
            throughput_gbps: rate * 8.0 / 1e9,
            throughput_gbytes_per_s: rate / 1e9,
            latency_ns: LatencySummary::default(),
            transfer_latency_ns: LatencySummary::default(),
            requests: (requests * window).round() as u64,
            transfers: (rate * window / unit).floor() as u64,
            interrupts: (interrupts * window).round() as u64,
            target: sys.nodes[w.target].name.clone(),
            address: w.address.as_ref().map(|a| a.describe(&sys.nodes, w.target)),
            bottleneck,
            memcpy: w.kind.memcpy().map(|c| c.word()),
            memcpy_gbytes_per_s: w.kind.memcpy().map(|_| rate / 1e9),
            completion_timeouts: 0,
            starved: false,
            starved_on: None,
        };
        (flow, rate)
    }

    /// The record of each direction of each socket link.
    fn socket_results(&self, load: &Load<'_>) -> Vec<SocketLinkResult> {
        let sys = self.sys;
        let mut out = Vec::new();
        for s in &sys.socket_links {
            for (a, b) in [(s.a, s.b), (s.b, s.a)] {
                let dir = format!("{}->{}", sys.nodes[a].name, sys.nodes[b].name);
                let k = self.socket_res(a, b);
                out.push(SocketLinkResult {
                    name: s.name.clone(),
                    direction: dir,
                    utilization: k.map_or(0.0, |k| self.busy(load, k)),
                    payload_gbps: k.map_or(0.0, |k| load.used[k] * 8.0 / 1e9),
                    bandwidth_gbytes_per_s: s.bandwidth / 1e9,
                });
            }
        }
        out
    }
}

/// The record of fio workload `w` (job set `f`) at `rate` bytes per second over `window`
/// seconds.
fn fio_result(sys: &System, w: &WorkloadSpec, f: FioSpec, rate: f64, window: f64) -> FioResult {
    let iops = rate / f.bs as f64;
    FioResult {
        name: w.name.clone(),
        endpoint: sys.nodes[w.source].name.clone(),
        target: sys.nodes[w.target].name.clone(),
        rw: f.rw.word(),
        bs: f.bs,
        iodepth: f.iodepth,
        numjobs: f.numjobs,
        ios: (iops * window).floor() as u64,
        iops,
        bandwidth_mb_per_s: rate / 1e6,
        bandwidth_gb_per_s: rate / 1e9,
        latency_ns: LatencySummary::default(),
    }
}

/// The verdict of a flow nothing holds back but its own offer.
fn offered(rate: f64) -> Bottleneck {
    Bottleneck {
        kind: "offered_load",
        resource: String::new(),
        busy: 0.0,
        detail: format!(
            "nothing on its path is full and it has no limit of its own: {:.3} GB/s",
            rate / 1e9
        ),
    }
}
