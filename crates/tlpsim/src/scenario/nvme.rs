//! NVMe drives and fio: the `[[endpoint]]` section of `kind = "nvme"` and the `[[workload]]`
//! section of `kind = "fio"`, and the node and workload they become.

use schemars::JsonSchema;
use serde::de::IgnoredAny;
use serde::Deserialize;

use super::error::{BuildError, Place};
use super::values::{self, defaults, words, CreditsSection};
use super::workload::Fabric;
use crate::fabric::{
    Addresses, CacheState, DmaDirection, FioRw, FioSpec, NodeId, NodeKind, NvmeSpec, TargetKind,
    WorkloadKind, WorkloadSpec,
};
use crate::units;

defaults! {
    default_queues: i64 = 64;
    default_queue_depth: i64 = 1024;
    default_read_latency: String = "80us";
    default_write_latency: String = "20us";
    default_bs: String = "4KiB";
    default_one: i64 = 1;
}

/// The size of one memory page of the host as the drive sees it (CC.MPS = 0: 4 KiB): a PRP
/// entry points to one page.
pub const NVME_PAGE: u64 = 4096;

/// Bytes of a logical block: an I/O is a whole number of them.
const LBA_BYTES: u64 = 512;

/// The most queue pairs and entries per queue the NVMe specification allows (16-bit queue
/// identifiers and sizes).
const MAX_QUEUES: i64 = 65535;
const MAX_QUEUE_DEPTH: i64 = 65536;

/// The credits of an endpoint, as a file would write them.
fn endpoint_credits() -> CreditsSection {
    CreditsSection::written(super::DEFAULT_ENDPOINT_CREDITS)
}

/// `[[endpoint]]` with `kind = "nvme"`: an NVMe drive.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NvmeEndpointSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique node name.
    pub name: String,
    /// Width of its Tag field: 5, 8 or 10 bits, for 32, 256 or 768 reads in flight (when
    /// left out: 5 bits at Gen1-2, 8 at Gen3-4, 10 from Gen5, by its link; or the narrowest
    /// that holds `tags`).
    pub tag_bits: Option<i64>,
    /// Read tags it uses, at most what its Tag field allows (all of them when left out).
    pub tags: Option<i64>,
    /// Credits it advertises.
    #[schemars(default = "endpoint_credits")]
    pub credits: Option<CreditsSection>,
    /// Copies of this endpoint, 1 to 1024: they are named NAME0, NAME1 ..., each with its
    /// own copy of the `[[link]]` and of every `[[workload]]` that names it (one endpoint,
    /// named NAME, when left out).
    pub count: Option<i64>,
    /// I/O submission and completion queue pairs, 1 to 65535 (default 64); each fio job
    /// takes the next one.
    #[serde(default = "default_queues")]
    pub queues: i64,
    /// Entries per queue, 2 to 65536 (default 1024); a queue holds at most one fewer
    /// commands.
    #[serde(default = "default_queue_depth")]
    pub queue_depth: i64,
    /// Commands per second the controller processes, e.g. 1500000 (unlimited when left
    /// out).
    pub command_rate: Option<f64>,
    /// Rate the media reads at, e.g. "7GB/s" (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub read_bandwidth: Option<String>,
    /// Rate the media writes at, e.g. "5GB/s" (unlimited when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub write_bandwidth: Option<String>,
    /// Media time of each read before its data streams out (default "80us").
    #[serde(default = "default_read_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub read_latency: String,
    /// Media time of each write once its data is in (default "20us").
    #[serde(default = "default_write_latency")]
    #[schemars(pattern(units::DURATION_PATTERN))]
    pub write_latency: String,
    /// Largest I/O one command moves (MDTS), e.g. "128KiB" (unlimited when left out).
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub max_transfer: Option<String>,
    /// Bytes of host write data the controller holds before the media has programmed it
    /// (default "8MiB"): a write's data are fetched only once there is room for them.
    #[serde(default = "default_write_buffer")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub write_buffer: String,
}

fn default_write_buffer() -> String {
    "8MiB".to_string()
}

words! {
    /// What an fio job does.
    pub enum RwWord for "rw" => FioRw {
        /// Sequential reads.
        Read = "read",
        /// Sequential writes.
        Write = "write",
        /// Random reads.
        RandRead = "randread",
        /// Random writes.
        RandWrite = "randwrite",
    }
}

/// `[[workload]]` with `kind = "fio"`: fio jobs on an NVMe drive.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FioWorkloadSection {
    /// The `kind` key, already read.
    #[serde(rename = "kind", default)]
    #[schemars(skip)]
    _kind: IgnoredAny,
    /// Unique flow name.
    pub name: String,
    /// Whether it runs (default true): `enabled = false` keeps it in the file, settable with
    /// `--set workload.NAME.enabled=false`, and leaves it out of the run.
    #[serde(default = "crate::scenario::workload::default_enabled")]
    pub enabled: bool,
    /// The NVMe drive (an `[[endpoint]]` with kind = "nvme").
    pub endpoint: String,
    /// "read", "write", "randread" or "randwrite".
    pub rw: RwWord,
    /// Bytes per I/O, a multiple of 512 B (default "4KiB").
    #[serde(default = "default_bs")]
    #[schemars(pattern(units::BYTES_PATTERN))]
    pub bs: String,
    /// I/Os each job keeps in flight, at most the queue's entries less one (default 1).
    #[serde(default = "default_one")]
    pub iodepth: i64,
    /// Jobs, each on its own queue pair while there are enough (default 1).
    #[serde(default = "default_one")]
    pub numjobs: i64,
    /// A GPU or memory endpoint whose BAR the data go to and come from instead of host
    /// memory (GPUDirect Storage), peer to peer: through a switch both sit under, or across
    /// switches through a root complex with p2p = "forward"; host memory when left out.
    pub target: Option<String>,
    /// Without a target: the root complex whose memory holds the I/O buffers, e.g. "rc1"
    /// (the drive's own when left out; its queues stay there); another socket's memory is
    /// reached across the `[[socket_link]]`.
    pub memory: Option<String>,
    /// Data bytes per second each job may move, e.g. "500MB/s" (fio's `rate`, per job: the
    /// workload moves up to numjobs times this): a job submits an I/O once the bytes it
    /// submitted before would have taken this long at the rate, counted from the run's
    /// start (no cap when left out).
    #[schemars(pattern(units::RATE_PATTERN))]
    pub rate: Option<String>,
}

/// An NVMe drive's node kind (its tags are settled by the caller).
pub fn nvme(place: &Place, s: &NvmeEndpointSection) -> Result<NodeKind, BuildError> {
    let queues = values::count(place, "queues", s.queues, 1..=MAX_QUEUES, "1 to 65535")?;
    let queue_depth = values::count(
        place,
        "queue_depth",
        s.queue_depth,
        2..=MAX_QUEUE_DEPTH,
        "2 to 65536",
    )?;
    let command_rate = match s.command_rate {
        None => None,
        Some(r) if r.is_finite() && r >= 1.0 => Some(r),
        Some(r) => {
            return Err(BuildError::not_allowed(
                place,
                "command_rate",
                r,
                "commands per second, at least 1, e.g. 1500000",
            ))
        }
    };
    let max_transfer = match &s.max_transfer {
        None => None,
        Some(text) => {
            let b = values::bytes(place, "max_transfer", text)?;
            if b < NVME_PAGE || b % NVME_PAGE != 0 {
                return Err(BuildError::not_allowed(
                    place,
                    "max_transfer",
                    text,
                    "a whole number of 4 KiB pages, e.g. \"128KiB\"",
                ));
            }
            Some(b)
        }
    };
    Ok(NodeKind::Nvme {
        tags: 0,
        spec: NvmeSpec {
            queues,
            queue_depth,
            command_rate,
            read_bandwidth: values::optional_rate(place, "read_bandwidth", &s.read_bandwidth)?,
            write_bandwidth: values::optional_rate(place, "write_bandwidth", &s.write_bandwidth)?,
            read_latency: values::duration(place, "read_latency", &s.read_latency)?,
            write_latency: values::duration(place, "write_latency", &s.write_latency)?,
            max_transfer,
            write_buffer: match values::bytes(place, "write_buffer", &s.write_buffer)? {
                b if b >= NVME_PAGE => b,
                _ => {
                    return Err(BuildError::not_allowed(
                        place,
                        "write_buffer",
                        &s.write_buffer,
                        "at least one 4 KiB page, e.g. \"8MiB\"",
                    ))
                }
            },
        },
    })
}

/// An fio workload on NVMe drive `source`, whose earlier fio workloads run `earlier_jobs`
/// jobs (this one's jobs take the queue pairs after theirs).
pub fn fio(
    place: &Place,
    w: &FioWorkloadSection,
    source: NodeId,
    earlier_jobs: u32,
    fabric: &Fabric,
) -> Result<WorkloadSpec, BuildError> {
    let node = &fabric.nodes.nodes()[source];
    let NodeKind::Nvme { spec, .. } = &node.kind else {
        return Err(BuildError::conflict(
            place,
            format!(
                "{:?} is {}: an fio workload runs on an NVMe drive ([[endpoint]] with kind = \
                 \"nvme\")",
                w.endpoint,
                node.kind.noun()
            ),
        ));
    };
    let bs = values::bytes(place, "bs", &w.bs)?;
    let max = spec
        .max_transfer
        .unwrap_or(crate::analytic::MAX_TRANSFER_BYTES);
    if bs == 0 || bs % LBA_BYTES != 0 || bs > max {
        return Err(BuildError::not_allowed(
            place,
            "bs",
            &w.bs,
            format!(
                "a multiple of 512 B up to {} ({})",
                units_text(max),
                if spec.max_transfer.is_some() {
                    "the drive's max_transfer"
                } else {
                    "1 GiB"
                }
            ),
        ));
    }
    let (numjobs, iodepth) = jobs(place, w, spec, earlier_jobs)?;
    let root = fabric.topology.root_above(source);
    let memory = super::paths::memory(place, &w.memory, [&w.target, &None], fabric)?;
    let target = match &w.target {
        None => match memory {
            Some(m) => {
                let m = fabric.nodes.lookup(place, "memory", &m)?;
                super::paths::check_path(place, fabric, source, m, true)?;
                m
            }
            None => root,
        },
        Some(t) => gpu_target(place, t, source, bs, fabric)?,
    };
    let rw: FioRw = w.rw.into();
    let rate = values::optional_rate(place, "rate", &w.rate)?;
    Ok(WorkloadSpec {
        name: w.name.clone(),
        source,
        target,
        // A read I/O writes its data to memory; a write I/O reads it from there.
        direction: if rw.reads() {
            DmaDirection::Write
        } else {
            DmaDirection::Read
        },
        transfer_size: bs,
        outstanding: iodepth * numjobs,
        kind: WorkloadKind::Fio(FioSpec {
            rw,
            bs,
            iodepth,
            numjobs,
            first_queue: earlier_jobs % spec.queues,
        }),
        tlp_payload: fabric.pcie.mps,
        doorbell: None,
        address: None,
        addresses: Addresses::single(bs),
        cache: CacheState::Warm,
        rate,
    })
}

/// An fio workload's `numjobs` and `iodepth`, checked to fit the drive's queues with the
/// `earlier_jobs` of its earlier fio workloads.
fn jobs(
    place: &Place,
    w: &FioWorkloadSection,
    spec: &NvmeSpec,
    earlier_jobs: u32,
) -> Result<(u32, u32), BuildError> {
    let numjobs = values::count(place, "numjobs", w.numjobs, 1..=4096, "1 to 4096")?;
    let entries = spec.queue_depth - 1;
    let iodepth = values::count(
        place,
        "iodepth",
        w.iodepth,
        1..=entries as i64,
        format!(
            "1 to {entries} (the drive's queue_depth {} less the one entry a queue keeps \
             empty)",
            spec.queue_depth
        )
        .as_str(),
    )?;
    // Jobs share queue pairs once every pair has one: a shared queue holds all their I/Os.
    let jobs = earlier_jobs + numjobs;
    let per_queue = jobs.div_ceil(spec.queues);
    if per_queue as u64 * iodepth as u64 > entries as u64 {
        return Err(BuildError::conflict(
            place,
            format!(
                "{jobs} fio jobs on {:?} share its {} queue pairs, {per_queue} on one queue \
                 of {entries} usable entries: iodepth {iodepth} x {per_queue} does not fit; \
                 lower iodepth or numjobs, or give the drive more queues or a deeper \
                 queue_depth",
                w.endpoint, spec.queues
            ),
        ));
    }
    Ok((numjobs, iodepth))
}

/// `bytes` as a size a person reads: "128 KiB", "1 GiB", "4096 B".
fn units_text(bytes: u64) -> String {
    match bytes {
        b if b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

/// The endpoint `name` that GPUDirect Storage moves drive `source`'s data to and from: a
/// GPU or a `kind = "memory"` endpoint whose BAR holds an I/O, in the drive's domain, on a
/// peer-to-peer path no root complex refuses.
fn gpu_target(
    place: &Place,
    name: &str,
    source: NodeId,
    bs: u64,
    fabric: &Fabric,
) -> Result<NodeId, BuildError> {
    let t = fabric.nodes.lookup(place, "target", name)?;
    let nodes = fabric.nodes.nodes();
    let TargetKind::BarMemory { bytes: bar_size } = nodes[t].kind.as_target() else {
        return Err(BuildError::conflict(
            place,
            format!(
                "the target {name:?} is {}: an fio workload's target is a GPU or a memory \
                 endpoint (kind = \"memory\") for GPUDirect Storage, or left out for host \
                 memory",
                nodes[t].kind.noun()
            ),
        ));
    };
    if bs > bar_size {
        return Err(BuildError::not_allowed(
            place,
            "bs",
            format!("{bs} B"),
            format!("at most the {bar_size} B BAR of {name:?}"),
        ));
    }
    // The drive reads the BAR for writes: those completions come back on their own path.
    super::paths::check_path(place, fabric, source, t, true)?;
    Ok(t)
}
