//! The end of a run: every link direction's, flow's and node's results over the measured
//! window, the bottleneck verdicts, the warnings and the concluded audit, as a
//! [`RunResult`] (the types are `result`'s).

use super::*;
use crate::fabric::WorkloadSpec;
use bottleneck::Bottleneck;
use result::{EthernetResult, FioResult, KindResult, Starved};

impl Simulator<'_> {
    /// What the nodes report (see `node::Node::report`), in workload order.
    fn node_reports(&self) -> NodeReport {
        let mut out = NodeReport::default();
        for (n, node) in self.nodes.iter().enumerate() {
            node.report(n, self.sys, &mut out);
        }
        out.ethernet.sort_by_key(|e| e.0);
        out.kinds.sort_by_key(|e| e.0);
        out
    }

    /// The results of the run, which took `wall_s` seconds of wall time.
    pub(super) fn finish(mut self, wall_s: f64) -> RunResult {
        let now = self.sys.duration;
        let window = (self.sys.duration - self.sys.warmup).as_secs_f64();
        let (links, hops) = self.link_results(now, window);
        let at_warmup = std::mem::take(&mut self.window.busy_at_warmup);
        let (resources, bottlenecks) = self.bottlenecks(now, &at_warmup, &links);
        let mut kinds = self.kind_results(window);
        let ethernet: Vec<_> = kinds.iter().filter_map(|k| k.1.ethernet()).collect();
        let mut starved = Vec::new();
        let flows: Vec<FlowResult> = bottlenecks
            .into_iter()
            .enumerate()
            .map(|(i, bottleneck)| {
                let (flow, starving) = self.flow_result(i, bottleneck, &ethernet, window);
                starved.extend(starving);
                flow
            })
            .collect();
        for (i, k) in &mut kinds {
            k.with_flow(&flows[*i]);
        }
        let kinds = kinds.into_iter().map(|k| k.1).collect();
        for t in self.tlps.iter().filter(|t| t.live) {
            self.audit.tlps_in_flight += 1;
            self.audit.payload_in_flight += t.payload as u64;
        }
        self.audit.conclude();
        let warnings = self.few_units_warnings(&flows, window);
        let socket_links = self.socket_link_results(&resources);
        RunResult {
            simulated_s: window,
            wall_s,
            events: self.q.events(),
            tlp_hops: hops,
            flows,
            links,
            socket_links,
            resources,
            kinds,
            starved,
            warnings,
            audit: self.audit,
        }
    }

    /// The results of the workloads whose kind has its own over the `window` seconds
    /// measured, each with its workload's index, in workload order: what the nodes report
    /// (a bridging workload's frames from its NIC, ...), an fio workload's I/Os.
    fn kind_results(&self, window: f64) -> Vec<(usize, KindResult)> {
        let mut reported = vec![None; self.sys.workloads.len()];
        let reports = self.node_reports();
        for (f, e) in reports.ethernet {
            reported[f as usize] = Some(KindResult::Bridge(e));
        }
        for (f, k) in reports.kinds {
            reported[f as usize] = Some(k);
        }
        // One per fio workload, in workload order.
        let mut fio = self.fio_results(window).into_iter();
        let mut out = Vec::new();
        for (i, w) in self.sys.workloads.iter().enumerate() {
            let r = match w.kind.fio() {
                Some(_) => fio.next().map(KindResult::Fio),
                None => reported[i].take(),
            };
            out.extend(r.map(|r| (i, r)));
        }
        out
    }

    /// The fio results over a window of `window` seconds, in workload order.
    fn fio_results(&self, window: f64) -> Vec<FioResult> {
        let nodes = &self.sys.nodes;
        self.sys
            .workloads
            .iter()
            .zip(self.work.flows.iter())
            .filter_map(|(w, f)| {
                let fio = w.kind.fio()?;
                let ios = f.transfer_latency.count();
                let per_s = f.bytes as f64 / window;
                Some(FioResult {
                    name: w.name.clone(),
                    endpoint: nodes[w.source].name.clone(),
                    target: nodes[w.target].name.clone(),
                    rw: fio.rw.word(),
                    bs: fio.bs,
                    iodepth: fio.iodepth,
                    numjobs: fio.numjobs,
                    ios,
                    iops: ios as f64 / window,
                    bandwidth_mb_per_s: per_s / 1e6,
                    bandwidth_gb_per_s: per_s / 1e9,
                    latency_ns: f.transfer_latency.summary(),
                })
            })
            .collect()
    }

    /// Every link direction's results over the `window` seconds measured, which ends at
    /// `now` (its open stalls and queue accounting closed there), and the TLP hops of the
    /// whole run.
    fn link_results(&mut self, now: SimTime, window: f64) -> (Vec<LinkResult>, u64) {
        let mut links = Vec::new();
        let mut hops = 0;
        for (c, ch) in self.chans.iter_mut().enumerate() {
            ch.end_stall(now);
            ch.end_replay_stall(now);
            ch.account_queue(now);
            ch.counters.busy_ticks = ch.phy.wire.busy_ticks();
            hops += ch.counters.tlps + ch.counters.replays;
            let a = ch.counters;
            let b = self.window.snapshot[c];
            let window_ticks = (self.sys.duration - self.sys.warmup).ticks() as f64;
            links.push(LinkResult {
                name: self.sys.links[c / 2].name.clone(),
                direction: if c % 2 == 0 { "down" } else { "up" },
                utilization: ((a.busy_ticks - b.busy_ticks) as f64 / window_ticks).min(1.0),
                payload_gbps: (a.payload_bytes - b.payload_bytes) as f64 * 8.0 / window / 1e9,
                tlps: a.tlps - b.tlps,
                dllps: a.dllps - b.dllps,
                replays: a.replays - b.replays,
                retrains: a.retrains - b.retrains,
                credit_stall_fraction: ((a.credit_stall_ticks - b.credit_stall_ticks) as f64
                    / window_ticks)
                    .min(1.0),
                bad_tlps: a.bad_tlps - b.bad_tlps,
                bad_dllps: a.bad_dllps - b.bad_dllps,
                nullified: a.nullified - b.nullified,
                queue_mean_tlps: (a.queue_area - b.queue_area) as f64 / window_ticks,
                queue_max_tlps: ch.arbiter.queue_max as u64,
            });
        }
        (links, hops)
    }

    /// Flow `i`'s results over the `window` seconds measured, given its `bottleneck` and
    /// the run's Ethernet results, and its starvation if it starved.
    fn flow_result(
        &self,
        i: usize,
        bottleneck: Bottleneck,
        ethernet: &[&EthernetResult],
        window: f64,
    ) -> (FlowResult, Option<Starved>) {
        let (f, w): (&Flow, &WorkloadSpec) = (&self.work.flows[i], &self.sys.workloads[i]);
        let (completion_timeouts, starving, bottleneck) =
            self.progress_of(i, &w.name, self.sys.duration, bottleneck);
        // A bridging workload's bytes are those of the frames it forwarded.
        let bytes = match ethernet.iter().find(|e| e.name == w.name) {
            Some(e) => e.forwarded_frames * e.frame_size as u64,
            None => f.bytes + f.media_bytes,
        };
        let flow = FlowResult {
            name: w.name.clone(),
            bytes,
            throughput_gbps: bytes as f64 * 8.0 / window / 1e9,
            throughput_gbytes_per_s: bytes as f64 / window / 1e9,
            latency_ns: f.latency.summary(),
            transfer_latency_ns: f.transfer_latency.summary(),
            requests: f.latency.count(),
            transfers: f.transfer_latency.count(),
            interrupts: f.interrupts,
            target: self.sys.nodes[w.target].name.clone(),
            address: w
                .address
                .as_ref()
                .map(|a| a.describe(&self.sys.nodes, w.target)),
            bottleneck,
            memcpy: w.kind.memcpy().map(|d| d.word()),
            memcpy_gbytes_per_s: w.kind.memcpy().map(|_| bytes as f64 / window / 1e9),
            completion_timeouts,
            starved: starving.is_some(),
            starved_on: starving.as_ref().map(|s| s.waits_on.clone()),
        };
        (flow, starving)
    }

    /// A warning per flow (not Ethernet bridging, counted in frames) that completed fewer
    /// than [`result::FEW_UNITS`] units in the `window` seconds measured, with a duration
    /// that would give that many: in proportion where some completed, else ten times this
    /// one.
    fn few_units_warnings(&self, flows: &[FlowResult], window: f64) -> Vec<String> {
        let us = |s: f64| s * 1e6;
        let warmup = self.sys.warmup.as_ns_f64() / 1e9;
        let mut out = Vec::new();
        for (f, w) in flows.iter().zip(&self.sys.workloads) {
            let Some(unit) = w.kind.unit_noun() else {
                continue;
            };
            if f.transfers >= result::FEW_UNITS {
                continue;
            }
            let (what, why, needed) = match f.transfers {
                0 => (
                    "none",
                    "it has no rate or latency to report".to_string(),
                    warmup + 10.0 * (window + warmup),
                ),
                done => (
                    "only a few",
                    format!("its rate and latency rest on {done}"),
                    warmup + window * 1.2 * result::FEW_UNITS as f64 / done as f64,
                ),
            };
            out.push(format!(
                "flow {} completed {what} of its {unit} in the {:.1} us measured ({} in all): \
                 {why}; set [simulation] duration to about {:.0} us or more for {} or more",
                w.name,
                us(window),
                f.transfers,
                us(needed).ceil(),
                result::FEW_UNITS
            ));
        }
        out
    }
}
