//! What a run reports: per flow, per link direction, and the self-audit, with the JSON
//! field names of the design (`flows[].latency_ns.p99`, `links[].credit_stall_fraction`, ...).

use serde::ser::SerializeStruct;
use serde::{Serialize, Serializer};

use super::bottleneck::{Bottleneck, ResourceResult};
use crate::engine::SimTime;

/// Latency summary in nanoseconds; every field `None` (JSON null) when nothing was measured
/// in the window. The percentiles come from an HDR histogram of 3 significant digits (exact
/// to the nanosecond below 2,048 ns, within 0.1 % above); the mean is exact.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Mean (exact).
    pub mean: Option<f64>,
    /// Median.
    pub p50: Option<f64>,
    /// 95th percentile.
    pub p95: Option<f64>,
    /// 99th percentile.
    pub p99: Option<f64>,
    /// 99.9th percentile (JSON `p99_9`).
    pub p99_9: Option<f64>,
    /// Largest.
    pub max: Option<f64>,
}

/// One workload's results over the measured window (after warmup).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowResult {
    /// Workload name.
    pub name: String,
    /// Payload bytes delivered (write data at the target, read data at the requester; for
    /// an Ethernet bridging workload, the bytes of the frames it forwarded).
    pub bytes: u64,
    /// `bytes` per second, in Gb/s.
    pub throughput_gbps: f64,
    /// `bytes` per second, in GB/s (10^9 bytes per second): `throughput_gbps` / 8.
    pub throughput_gbytes_per_s: f64,
    /// First-byte latency of each request, as the validation uses it. A read request
    /// (MRd, at most MRRS bytes): from its first byte leaving the requester onto its link to
    /// the first byte of its first completion arriving at the requester. A posted write TLP:
    /// from its first byte leaving the writer to the instant it takes effect at the target
    /// (its last byte in, then through any host bridge, posted-write sink and memory write
    /// rate). Counted when that end instant falls in the measurement window.
    pub latency_ns: LatencySummary,
    /// Latency of each whole transfer (`transfer_size` bytes, a storage I/O's PCIe part):
    /// from the first byte of its first request (read) or write TLP (write) leaving the
    /// requester to the last byte of its last completion arriving at the requester (read),
    /// or to its last write TLP taking effect at the target as in `latency_ns` (write).
    /// Counted for transfers whose first TLP left inside the measurement window and that
    /// ended before the run did.
    pub transfer_latency_ns: LatencySummary,
    /// Requests measured (samples of `latency_ns`: read requests and write TLPs).
    pub requests: u64,
    /// Transfers measured (samples of `transfer_latency_ns`).
    pub transfers: u64,
    /// Interrupts the target took (MSIs a non-transparent bridge sent for its doorbells).
    pub interrupts: u64,
    /// The node whose memory the flow reads or writes.
    pub target: String,
    /// For a `target_address`: the address and each bridge's translation of it, e.g.
    /// "0x80001000 -> nt1 -> 0x20001000 -> nt2 -> 0x1000 (ep2)".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
    /// What limits its throughput, and why.
    pub bottleneck: Bottleneck,
    /// For a GPU's memcpy workload, what it copies: "h2d", "d2h", "p2p-write" or
    /// "p2p-read".
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcpy: Option<&'static str>,
    /// For a GPU's memcpy workload, its throughput in GB/s (10^9 bytes per second), as
    /// nvbandwidth prints it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub memcpy_gbytes_per_s: Option<f64>,
    /// Read requests its requester gave up on when their completion timeout expired (over
    /// the whole run, warmup included): each freed its tag and is an error.
    pub completion_timeouts: u64,
    /// It had TLPs waiting but completed nothing for a watchdog period or more (see
    /// [`RunResult::starved`]).
    pub starved: bool,
    /// What its oldest waiting TLP waited for while it starved, e.g. "rc shared outbound
    /// queue" or "rc -> sw NPH credits"; None when it did not starve.
    pub starved_on: Option<String>,
}

/// A flow that starved: its longest stretch without progress while its TLPs waited.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Starved {
    /// The workload.
    pub flow: String,
    /// It completed nothing from here (us of simulated time, warmup included)...
    pub since_us: f64,
    /// ...to here; None (JSON null) when it still completed nothing at the run's end.
    pub until_us: Option<f64>,
    /// How long, in us.
    pub for_us: f64,
    /// What its oldest waiting TLP waited for (as `FlowResult::starved_on`).
    pub waits_on: String,
    /// One sentence on why.
    pub detail: String,
}

/// One link direction's results over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LinkResult {
    /// Link name ("upstream-downstream").
    pub name: String,
    /// "down" (away from the root complex) or "up".
    pub direction: &'static str,
    /// Fraction of wire time busy (TLPs, DLLPs, SKP).
    pub utilization: f64,
    /// TLP payload carried, in Gb/s.
    pub payload_gbps: f64,
    /// New TLPs sent.
    pub tlps: u64,
    /// DLLPs sent.
    pub dllps: u64,
    /// TLPs sent again from the replay buffer.
    pub replays: u64,
    /// Times the transmitter's REPLAY_NUM rolled over (a fourth replay without progress)
    /// and the link retrained.
    pub retrains: u64,
    /// Fraction of the window the transmitter had TLPs waiting but no credits.
    pub credit_stall_fraction: f64,
    /// TLPs that arrived corrupted.
    pub bad_tlps: u64,
    /// DLLPs that arrived corrupted.
    pub bad_dllps: u64,
    /// TLPs sent nullified by a cut-through switch (begun before their bad LCRC arrived).
    pub nullified: u64,
    /// TLPs waiting in the transmitter's egress queues, averaged over the window.
    pub queue_mean_tlps: f64,
    /// Most TLPs waiting there at once within the window.
    pub queue_max_tlps: u64,
}

/// The end-of-run self-audit.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Audit {
    /// TLPs created by requesters and completers.
    pub tlps_created: u64,
    /// TLPs consumed at their destination.
    pub tlps_delivered: u64,
    /// TLPs still in queues or on wires at the end.
    pub tlps_in_flight: u64,
    /// Payload bytes created.
    pub payload_created: u64,
    /// Payload bytes delivered.
    pub payload_delivered: u64,
    /// Payload bytes in flight at the end.
    pub payload_in_flight: u64,
    /// TLPs delivered to a destination twice.
    pub duplicates: u64,
    /// Posted requests or completions delivered out of the order the rules require.
    pub order_violations: u64,
    /// Data link layer sequence numbers taken out of order.
    pub sequence_violations: u64,
    /// Credit counters that went negative (sent beyond the limit) or receive buffers
    /// filled beyond what they advertised.
    pub credit_violations: u64,
    /// Every check held.
    pub passed: bool,
}

impl Audit {
    /// Sets `passed` from the counters.
    pub fn conclude(&mut self) {
        self.passed = self.tlps_created == self.tlps_delivered + self.tlps_in_flight
            && self.payload_created == self.payload_delivered + self.payload_in_flight
            && self.duplicates == 0
            && self.order_violations == 0
            && self.sequence_violations == 0
            && self.credit_violations == 0;
    }
}

/// What an Ethernet bridging workload achieved over the measurement window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EthernetResult {
    /// The workload's name.
    pub name: String,
    /// Frame size, bytes.
    pub frame_size: u32,
    /// Offered load per port, fraction of line rate.
    pub load: f64,
    /// Frames per second offered, all ports of the workload.
    pub offered_fps: f64,
    /// Frames forwarded out of the other port wholly inside the window (first bit at or
    /// after its start, last bit before its end): never more than the line carries.
    pub forwarded_frames: u64,
    /// Frames per second forwarded out of the other port.
    pub forwarded_fps: f64,
    /// Forwarded rate in Mb/s on the wire (frame plus preamble and gap).
    pub forwarded_mbps: f64,
    /// Frames lost (RX FIFO overflow or a full transmit ring).
    pub dropped: u64,
    /// Mean backlog (frames received, not yet forwarded) in the window's second half minus
    /// the first: positive and large means the host cannot keep up.
    pub backlog_growth: f64,
    /// No frame lost and no backlog growth beyond tolerance (0.5 % of offered frames + 2).
    pub zero_loss: bool,
}

/// What an fio workload on an NVMe drive achieved over the measurement window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FioResult {
    /// The workload's name.
    pub name: String,
    /// The NVMe drive.
    pub endpoint: String,
    /// Whose memory its data went to or came from (the host's root complex, or a memory
    /// endpoint for GPUDirect Storage).
    pub target: String,
    /// "read", "write", "randread" or "randwrite".
    pub rw: &'static str,
    /// Bytes per I/O.
    pub bs: u64,
    /// I/Os each job keeps in flight.
    pub iodepth: u32,
    /// Jobs.
    pub numjobs: u32,
    /// I/Os completed in the window (their MSI-X reached the host).
    pub ios: u64,
    /// `ios` per second.
    pub iops: f64,
    /// Data bytes moved in the window (read data written to memory, write data read from
    /// it) per second, in MB/s (10^6 bytes, as fio prints it).
    pub bandwidth_mb_per_s: f64,
    /// The same in GB/s (10^9 bytes).
    pub bandwidth_gb_per_s: f64,
    /// Per I/O: from the host's submission queue doorbell write to its MSI-X reaching the
    /// host, for I/Os completed in the window.
    pub latency_ns: LatencySummary,
}

/// What a workload of a kind that reports more than its flow achieved: one variant per such
/// kind, as [`crate::fabric::WorkloadKind`] names them.
#[derive(Debug, Clone, PartialEq)]
pub enum KindResult {
    /// An Ethernet bridging workload's frames (JSON `ethernet[]`).
    Bridge(EthernetResult),
    /// An fio workload's I/Os (JSON `fio[]`).
    Fio(FioResult),
    /// A CXL memory workload's flow: its loads or stores (JSON `cxl[]`).
    Cxl(CxlResult),
}

/// What a CXL memory workload's flow (its loads or its stores) achieved over the
/// measurement window, with its expander's media (JSON `cxl[]`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CxlResult {
    /// The flow's name.
    pub name: String,
    /// The node issuing the accesses.
    pub source: String,
    /// The CXL memory expander.
    pub expander: String,
    /// "read" (loads) or "write" (stores).
    pub op: &'static str,
    /// Bytes per access.
    pub size: u64,
    /// Accesses in flight.
    pub outstanding: u32,
    /// Data bytes moved per second, in GB/s (10^9 bytes).
    pub bandwidth_gb_per_s: f64,
    /// Accesses completed per second.
    pub accesses_per_s: f64,
    /// Loads: mean from a read request's issue to its data's last byte in, in ns (None for
    /// stores, posted writes that nothing answers).
    pub load_latency_ns_mean: Option<f64>,
    /// Loads: the 99th percentile of the same, in ns.
    pub load_latency_ns_p99: Option<f64>,
    /// The rate of the expander's media side this flow uses (read or write), in GB/s.
    pub media_gb_per_s: f64,
    /// The fraction of the window that media side was busy (every flow's accesses).
    pub media_utilization: f64,
}

impl KindResult {
    /// The JSON list it goes in ("ethernet", "fio"): one key per kind.
    pub fn key(&self) -> &'static str {
        match self {
            KindResult::Bridge(_) => "ethernet",
            KindResult::Fio(_) => "fio",
            KindResult::Cxl(_) => "cxl",
        }
    }

    /// Whether its JSON list is in every result, empty or not (the lists the result had
    /// before kinds added their own: a newer kind's list is there when the run has one).
    fn always_listed(key: &str) -> bool {
        key == "ethernet" || key == "fio"
    }

    /// Takes what it reports from its workload's flow results (`flow`), if anything.
    pub(super) fn with_flow(&mut self, flow: &FlowResult) {
        match self {
            KindResult::Bridge(_) | KindResult::Fio(_) => {}
            KindResult::Cxl(c) => {
                c.bandwidth_gb_per_s = flow.throughput_gbytes_per_s;
                c.accesses_per_s = flow.throughput_gbytes_per_s * 1e9 / c.size as f64;
                if c.op == "read" {
                    c.load_latency_ns_mean = flow.transfer_latency_ns.mean;
                    c.load_latency_ns_p99 = flow.transfer_latency_ns.p99;
                }
            }
        }
    }

    /// Its frames, if it is a bridging workload's.
    pub fn ethernet(&self) -> Option<&EthernetResult> {
        match self {
            KindResult::Bridge(e) => Some(e),
            KindResult::Fio(_) | KindResult::Cxl(_) => None,
        }
    }

    /// Its I/Os, if it is an fio workload's.
    pub fn fio(&self) -> Option<&FioResult> {
        match self {
            KindResult::Fio(f) => Some(f),
            KindResult::Bridge(_) | KindResult::Cxl(_) => None,
        }
    }
}

impl Serialize for KindResult {
    /// As the result of its kind alone (its JSON list says which kind).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            KindResult::Bridge(e) => e.serialize(serializer),
            KindResult::Fio(f) => f.serialize(serializer),
            KindResult::Cxl(c) => c.serialize(serializer),
        }
    }
}

/// Everything a run reports. Its JSON (see the `Serialize` impl) lists `kinds` by kind, as
/// `ethernet` and `fio`.
#[derive(Debug, Clone, PartialEq)]
pub struct RunResult {
    /// Simulated seconds measured (duration minus warmup).
    pub simulated_s: f64,
    /// Wall-clock seconds the run took.
    pub wall_s: f64,
    /// Events processed.
    pub events: u64,
    /// TLP transmissions on any link (a TLP crossing one link is one hop).
    pub tlp_hops: u64,
    /// Per workload.
    pub flows: Vec<FlowResult>,
    /// Per link and direction.
    pub links: Vec<LinkResult>,
    /// Per inter-socket link and direction.
    pub socket_links: Vec<SocketLinkResult>,
    /// Memory, host bridges, shared switch buses, storage media and CPU cores: how busy.
    pub resources: Vec<ResourceResult>,
    /// Per workload of a kind with results of its own (Ethernet bridging, fio), in
    /// workload order.
    pub kinds: Vec<KindResult>,
    /// The flows that starved (see [`FlowResult::starved`]), in workload order.
    pub starved: Vec<Starved>,
    /// One sentence per flow that completed fewer than [`FEW_UNITS`] of its units (I/Os,
    /// copies, transfers) in the window: its rate and latency rest on too few to mean much;
    /// each names a duration that would do.
    pub warnings: Vec<String>,
    /// The self-audit.
    pub audit: Audit,
}

/// One direction of an inter-socket link over the measured window.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SocketLinkResult {
    /// The link's name ("rc0-rc1").
    pub name: String,
    /// "rc0->rc1": the root complex the data leave, then the one they reach.
    pub direction: String,
    /// Fraction of the window it was busy passing payload.
    pub utilization: f64,
    /// Payload carried, in Gb/s.
    pub payload_gbps: f64,
    /// Its payload bandwidth, in GB/s.
    pub bandwidth_gbytes_per_s: f64,
}

/// Units (I/Os, copies, transfers) a flow completes in the window below which its figures
/// get a warning.
pub const FEW_UNITS: u64 = 10;

impl RunResult {
    /// The result as JSON text.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Per Ethernet bridging workload, in workload order (JSON `ethernet`).
    pub fn ethernet(&self) -> Vec<&EthernetResult> {
        self.kinds.iter().filter_map(KindResult::ethernet).collect()
    }

    /// Per fio workload on an NVMe drive, in workload order (JSON `fio`).
    pub fn fio(&self) -> Vec<&FioResult> {
        self.kinds.iter().filter_map(KindResult::fio).collect()
    }
}

impl Serialize for RunResult {
    /// The design's fields in their order, `kinds` as one list per kind (`ethernet`, `fio`).
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut r = serializer.serialize_struct("RunResult", 13)?;
        r.serialize_field("simulated_s", &self.simulated_s)?;
        r.serialize_field("wall_s", &self.wall_s)?;
        r.serialize_field("events", &self.events)?;
        r.serialize_field("tlp_hops", &self.tlp_hops)?;
        r.serialize_field("flows", &self.flows)?;
        r.serialize_field("links", &self.links)?;
        r.serialize_field("socket_links", &self.socket_links)?;
        r.serialize_field("resources", &self.resources)?;
        r.serialize_field("ethernet", &self.ethernet())?;
        r.serialize_field("fio", &self.fio())?;
        // Then each newer kind's list, in the order of their first workloads.
        let mut keys: Vec<&'static str> = Vec::new();
        for k in self.kinds.iter().map(KindResult::key) {
            if !KindResult::always_listed(k) && !keys.contains(&k) {
                keys.push(k);
            }
        }
        for key in keys {
            let list: Vec<&KindResult> = self.kinds.iter().filter(|k| k.key() == key).collect();
            r.serialize_field(key, &list)?;
        }
        r.serialize_field("starved", &self.starved)?;
        r.serialize_field("warnings", &self.warnings)?;
        r.serialize_field("audit", &self.audit)?;
        r.end()
    }
}

/// Longest latency a recorder tells apart, in nanoseconds (an hour); longer ones count as it.
const LATENCY_MAX_NS: u64 = 3_600_000_000_000;

/// A latency recorder: exact mean, histogram percentiles, constant memory.
///
/// Samples are counted in buckets of 3 significant digits laid out as `hdrhistogram`'s
/// (2,048 sub-buckets from 1 ns, each further bucket twice as wide), indexed with a shift
/// and a leading-zero count; the percentiles are read off the counts once, at the end, as
/// an `hdrhistogram` of them gives them (a proptest checks them against one).
#[derive(Debug, Clone)]
pub struct LatencyRecorder {
    /// Samples per bucket, grown as far as the largest sample needs (at most up to
    /// `LATENCY_MAX_NS`, 270 KB): a flow's recorders cost little until they hold samples.
    counts: Vec<u64>,
    sum_ns: f64,
    count: u64,
    /// The last span `record_span` took, and the samples of it since, not yet in `counts`
    /// and `count`.
    last: LastSpan,
}

/// A span in ticks, its nanoseconds and bucket, and the samples of it not yet counted.
#[derive(Debug, Clone, Copy)]
struct LastSpan {
    ticks: u64,
    ns: f64,
    index: usize,
    run: u64,
}

impl LastSpan {
    /// No samples yet of `span`.
    fn of(span: SimTime) -> Self {
        let ns = span.as_ns_f64();
        LastSpan {
            ticks: span.ticks(),
            ns,
            index: bucket_of(ns),
            run: 0,
        }
    }
}

impl Default for LatencyRecorder {
    fn default() -> Self {
        LatencyRecorder {
            counts: Vec::new(),
            sum_ns: 0.0,
            count: 0,
            last: LastSpan::of(SimTime::ZERO),
        }
    }
}

/// log2 of the half count of sub-buckets: 3 significant digits need 2,048 sub-buckets.
const HALF_BUCKET_BITS: u32 = 10;

/// The bucket index of `ns` (at least 1), as `hdrhistogram` lays out 3 significant digits
/// from 1 ns: bucket `b` holds values of `11 + b` bits at a resolution of `2^b`.
#[inline]
fn bucket_index(ns: u64) -> usize {
    let sub_bucket_mask = (2u64 << HALF_BUCKET_BITS) - 1;
    let b = 64 - HALF_BUCKET_BITS - 1 - (ns | sub_bucket_mask).leading_zeros();
    (((b + 1) << HALF_BUCKET_BITS) as u64 + (ns >> b) - (1 << HALF_BUCKET_BITS)) as usize
}

/// The lowest value that bucket `index` holds (the inverse of [`bucket_index`]).
fn bucket_value(index: usize) -> u64 {
    let half = 1u64 << HALF_BUCKET_BITS;
    let b = (index >> HALF_BUCKET_BITS) as i64 - 1;
    let sub = (index as u64 & (half - 1)) + half;
    if b < 0 {
        sub - half
    } else {
        sub << b
    }
}

/// The bucket of a latency of `ns` nanoseconds.
#[inline(always)]
fn bucket_of(ns: f64) -> usize {
    // Rounded half up, as `f64::round` rounds a positive value, without its libm call:
    // latencies are whole ticks (1/64,000 ns apart), so `ns + 0.5` is never rounded up
    // to the next integer; a negative or NaN value gives 0 either way.
    bucket_index(((ns + 0.5) as u64).clamp(1, LATENCY_MAX_NS))
}

impl LatencyRecorder {
    /// Records one latency in nanoseconds.
    pub fn record(&mut self, ns: f64) {
        self.sum_ns += ns;
        self.count += 1;
        let i = bucket_of(ns);
        if i >= self.counts.len() {
            self.counts.resize(i + 1, 0);
        }
        self.counts[i] += 1;
    }

    /// Records one latency of `span`, as `record(span.as_ns_f64())` would: a span equal to
    /// the last one this took adds its nanoseconds to the sum and counts it later.
    #[inline(always)]
    pub fn record_span(&mut self, span: SimTime) {
        if span.ticks() == self.last.ticks {
            // The sum grows sample by sample, so that it stays `record`'s to the last bit.
            self.sum_ns += self.last.ns;
            self.last.run += 1;
        } else {
            self.record_new_span(span);
        }
    }

    /// `record_span`'s span unlike the last: the last one's samples counted, this one's
    /// recorded and kept as the last.
    #[cold]
    #[inline(never)]
    fn record_new_span(&mut self, span: SimTime) {
        let last = LastSpan::of(span);
        self.count_last();
        self.record(last.ns);
        self.last = last;
    }

    /// Puts the last span's uncounted samples into `counts` and `count`.
    fn count_last(&mut self) {
        let LastSpan { index, run, .. } = self.last;
        if run > 0 {
            if index >= self.counts.len() {
                // Only the first span, zero ticks, is counted before `record` took it.
                self.counts.resize(index + 1, 0);
            }
            self.counts[index] += run;
            self.count += run;
            self.last.run = 0;
        }
    }

    /// Samples recorded.
    pub fn count(&self) -> u64 {
        self.count + self.last.run
    }

    /// Mean, p50, p95, p99, p99.9, max (all `None` when nothing was recorded), as an
    /// `hdrhistogram` of the samples, each at its bucket's lowest value, gives them: a
    /// quantile `q` is the highest value equivalent to the first bucket whose running count
    /// reaches `ceil(q * count)` (at least 1), the max the highest value equivalent to the
    /// last bucket holding a sample. One pass over the buckets, no histogram built (building
    /// one took 2.4 % of a 40 us pcie-bench cell's instructions).
    pub fn summary(&self) -> LatencySummary {
        const QUANTILES: [f64; 4] = [0.5, 0.95, 0.99, 0.999];
        let count = self.count();
        if count == 0 {
            return LatencySummary::default();
        }
        let targets = QUANTILES.map(|q| ((q * count as f64).ceil() as u64).max(1));
        let pending = |i: usize| {
            if i == self.last.index {
                self.last.run
            } else {
                0
            }
        };
        let len = self.counts.len().max(self.last.index + 1);
        let samples = |i: usize| self.counts.get(i).copied().unwrap_or(0) + pending(i);
        let mut found = [0u64; 4];
        let (mut next, mut running, mut last) = (0, 0u64, 0);
        for i in 0..len {
            let n = samples(i);
            if n == 0 {
                continue;
            }
            last = i;
            running += n;
            while next < targets.len() && running >= targets[next] {
                found[next] = highest_equivalent(i);
                next += 1;
            }
        }
        let at = |k: usize| Some(found[k] as f64);
        LatencySummary {
            mean: Some(self.sum_ns / count as f64),
            p50: at(0),
            p95: at(1),
            p99: at(2),
            p99_9: at(3),
            max: Some(highest_equivalent(last) as f64),
        }
    }
}

/// The highest value that bucket `index` holds, as `hdrhistogram`'s `highest_equivalent`
/// gives it for the bucket's lowest value: buckets below 2,048 hold one value each, bucket
/// `b` above them `2^b`.
fn highest_equivalent(index: usize) -> u64 {
    let b = (index >> HALF_BUCKET_BITS).saturating_sub(1);
    bucket_value(index) + (1u64 << b) - 1
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::SimTime;
    use hdrhistogram::Histogram;
    use proptest::prelude::*;

    proptest! {
        /// A latency of whole ticks lands in the bucket of its value rounded as
        /// `f64::round` rounds it.
        #[test]
        fn latencies_of_whole_ticks_round_as_f64_round(ticks in 0u64..(1 << 50)) {
            let ns = SimTime::from_ticks(ticks).as_ns_f64();
            prop_assert_eq!((ns + 0.5) as u64, ns.round() as u64);
        }
    }

    proptest! {
        /// Spans recorded by `record_span`, runs of one span among them and `record`s in
        /// between, summarise as `record` alone summarises them, the mean to the last bit.
        #[test]
        fn spans_recorded_in_runs_summarise_as_recorded_one_by_one(
            spans in proptest::collection::vec((0u64..(1 << 40), 1usize..6, any::<bool>()), 1..40),
        ) {
            let (mut runs, mut each) = (LatencyRecorder::default(), LatencyRecorder::default());
            for (ticks, times, plain) in spans {
                let span = SimTime::from_ticks(ticks);
                for _ in 0..times {
                    if plain {
                        runs.record(span.as_ns_f64());
                    } else {
                        runs.record_span(span);
                    }
                    each.record(span.as_ns_f64());
                }
            }
            let (got, want) = (runs.summary(), each.summary());
            prop_assert_eq!(got.mean.map(f64::to_bits), want.mean.map(f64::to_bits));
            prop_assert_eq!(
                [got.p50, got.p95, got.p99, got.p99_9, got.max],
                [want.p50, want.p95, want.p99, want.p99_9, want.max]
            );
            prop_assert_eq!(runs.count(), each.count());
        }

        /// A first span of zero ticks, repeated, counts in the bucket of 1 ns.
        #[test]
        fn zero_spans_first_count_as_recorded(times in 1usize..5, ns in 0u64..3) {
            let (mut runs, mut each) = (LatencyRecorder::default(), LatencyRecorder::default());
            for _ in 0..times {
                runs.record_span(SimTime::ZERO);
                each.record(0.0);
            }
            runs.record_span(SimTime::from_ticks(ns * 64_000));
            each.record(SimTime::from_ticks(ns * 64_000).as_ns_f64());
            prop_assert_eq!(runs.summary(), each.summary());
            prop_assert_eq!(runs.count(), each.count());
        }
    }

    proptest! {
        /// Counting samples in buckets gives the summary that an `hdrhistogram` of every
        /// sample gives.
        #[test]
        fn bucket_counts_summarise_as_an_hdr_histogram_of_every_sample(
            samples in proptest::collection::vec((1u64..LATENCY_MAX_NS, 1usize..4), 1..60),
            small in proptest::collection::vec((1u64..5_000, 1usize..20), 0..60),
        ) {
            let mut r = LatencyRecorder::default();
            let mut every = Histogram::<u64>::new(3).unwrap();
            for (ns, times) in samples.into_iter().chain(small) {
                for _ in 0..times {
                    r.record(ns as f64);
                    every.record(ns).unwrap();
                }
            }
            let s = r.summary();
            for (got, q) in [(s.p50, 0.5), (s.p95, 0.95), (s.p99, 0.99), (s.p99_9, 0.999)] {
                prop_assert_eq!(got, Some(every.value_at_quantile(q) as f64));
            }
            prop_assert_eq!(s.max, Some(every.max() as f64));
            prop_assert_eq!(r.count(), every.len());
        }
    }

    #[test]
    fn a_half_nanosecond_rounds_up() {
        let mut r = LatencyRecorder::default();
        r.record(2.5);
        assert_eq!(r.summary().max, Some(3.0));
    }
}
