//! NVMe drives (`[[endpoint]] kind = "nvme"`) under fio workloads (`[[workload]] kind =
//! "fio"`): a sequential read on a narrow link against the closed form, one 4 KiB random
//! read at a time against the sum of its parts, the verdicts of the IOPS-bound and
//! link-bound regimes, writes, GPUDirect Storage, determinism and the errors of bad keys.

use tlpsim::analytic::{CompletionSize, DllpPolicy, LinkRequest};
use tlpsim::pcie::tlp::{tlp_bytes, Addressing, TlpKind};
use tlpsim::scenario::load_str;
use tlpsim::sim::result::{FioResult, RunResult};
use tlpsim::sim::run;

/// A root complex (memory read latency 500 ns) and one NVMe drive `nvme` on one link of
/// `gen` x`width` (no SKP ordered sets, MPS 256 B, MRRS 512 B); `drive` adds the drive's
/// keys, `fio` the fio workload's.
fn one_drive(duration: &str, gen: u32, width: u32, drive: &str, fio: &str) -> String {
    format!(
        "[simulation]\nduration = \"{duration}\"\nwarmup = \"1ms\"\nseed = 5\n\
         [pcie]\nmps = 256\nmrrs = 512\nskp = false\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"500ns\"\n\
         [[endpoint]]\nname = \"nvme\"\nkind = \"nvme\"\n{drive}\n\
         [[link]]\nbetween = [\"rc\", \"nvme\"]\ngen = {gen}\nwidth = {width}\n\
         [[workload]]\nname = \"fio\"\nkind = \"fio\"\nendpoint = \"nvme\"\n{fio}"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap();
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

fn fio(r: &RunResult) -> &FioResult {
    r.fio()[0]
}

/// The build error of `text`, as the user reads it.
fn refused(text: &str) -> String {
    load_str(text, "<test>").unwrap_err().to_string()
}

#[test]
fn a_gen2_x1_sequential_read_of_1mib_is_link_bound_at_the_closed_form() {
    let r = simulate(&one_drive(
        "30ms",
        2,
        1,
        "",
        "rw = \"read\"\nbs = \"1MiB\"\niodepth = 4\n",
    ));
    // The data go up as MPS-sized MWr: the closed form's write figure. Their Acks and
    // UpdateFCs travel down, so no DLLP shares their direction.
    let req = LinkRequest {
        gen: 2,
        width: 1,
        mps: 256,
        payload: Some(1 << 20),
        completion: CompletionSize::Mps,
        dllp: DllpPolicy::None,
        skp: false,
        ..LinkRequest::default()
    };
    let closed = tlpsim::link_bandwidth(&req).unwrap().write_gbps;
    let f = fio(&r);
    let gbps = f.bandwidth_gb_per_s * 8.0;
    let err = gbps / closed - 1.0;
    assert!(err.abs() < 0.02, "{gbps} Gb/s against {closed}: {err:+.4}");
    assert!(err.abs() < 0.005, "{gbps} Gb/s against {closed}: {err:+.4}");
    let b = &r.flows[0].bottleneck;
    assert_eq!(
        (b.kind, b.resource.as_str()),
        ("link", "rc-nvme up"),
        "{b:?}"
    );
    // The flow counts the same bytes; IOPS are whole I/Os.
    assert!((r.flows[0].throughput_gbps - gbps).abs() < 1e-9);
    assert!((f.iops * (1 << 20) as f64 / 1e9 - f.bandwidth_gb_per_s).abs() < 0.02);
}

/// Nanoseconds a TLP of `kind` with `payload` bytes takes on a Gen2 x1 wire: 2 ns per byte
/// (5 GT/s, 8b/10b), header (4 DW for 64-bit requests, 3 DW for completions), data and 8 B
/// of framing (STP, sequence number, LCRC, END).
fn gen2_x1_ns(kind: TlpKind, payload: u32) -> f64 {
    2.0 * (tlp_bytes(kind, Addressing::A64, payload, false) + 8) as f64
}

#[test]
fn a_4kib_random_read_at_queue_depth_1_is_media_latency_plus_the_pcie_round_trips() {
    let r = simulate(&one_drive(
        "12ms",
        2,
        1,
        "read_latency = \"80us\"\ncommand_rate = 1000000",
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 1\n",
    ));
    let f = fio(&r);
    // Each part of one I/O, in order, on the Gen2 x1 link (no switch, no propagation):
    let cq_doorbell = gen2_x1_ns(TlpKind::MWr, 4); // the last I/O's CQ head doorbell, ahead
    let sq_doorbell = gen2_x1_ns(TlpKind::MWr, 4); // SQ tail doorbell, rc -> drive
    let sqe_request = gen2_x1_ns(TlpKind::MRd, 0); // SQE fetch: MRd 64 B up
    let memory = 500.0; // the root complex's memory read latency
    let sqe_data = gen2_x1_ns(TlpKind::CplD, 64); // its CplD of 64 B down
    let command = 1000.0; // the command processor: 1 / 1,000,000 commands per second
    let media = 80_000.0; // read_latency
    let data = 16.0 * gen2_x1_ns(TlpKind::MWr, 256); // 4 KiB as 16 MWr of MPS 256 B up
    let cqe = gen2_x1_ns(TlpKind::MWr, 16); // the 16 B completion entry up
    let msi = gen2_x1_ns(TlpKind::MWr, 4); // MSI-X up
    let sum = cq_doorbell
        + sq_doorbell
        + sqe_request
        + memory
        + sqe_data
        + command
        + media
        + data
        + cqe
        + msi;
    assert_eq!(
        sum,
        56.0 + 56.0 + 48.0 + 500.0 + 168.0 + 1000.0 + 80_000.0 + 8960.0 + 80.0 + 56.0
    );
    let mean = f.latency_ns.mean.unwrap();
    // A DLLP (Ack, UpdateFC: 16 ns each) may hold a TLP back now and then.
    assert!(
        mean >= sum && mean - sum < 50.0,
        "mean {mean} ns against the sum of the parts {sum} ns"
    );
    assert!(
        f.latency_ns.max.unwrap() - sum < 100.0,
        "{:?}",
        f.latency_ns
    );
    // One I/O at a time: IOPS is its inverse, and fio's own depth is the limit.
    assert!((f.iops * mean / 1e9 - 1.0).abs() < 0.02, "{} IOPS", f.iops);
    assert_eq!(
        r.flows[0].bottleneck.kind, "iodepth",
        "{:?}",
        r.flows[0].bottleneck
    );
}

#[test]
fn slow_commands_on_a_fast_link_make_the_command_processor_the_bottleneck() {
    let r = simulate(&one_drive(
        "4ms",
        4,
        4,
        "command_rate = 200000\nread_latency = \"50us\"",
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 32\nnumjobs = 2\n",
    ));
    let f = fio(&r);
    assert!((f.iops / 200_000.0 - 1.0).abs() < 0.01, "{} IOPS", f.iops);
    let b = &r.flows[0].bottleneck;
    assert_eq!(
        (b.kind, b.resource.as_str()),
        ("command_rate", "nvme command processor"),
        "{b:?}"
    );
}

#[test]
fn a_slow_media_is_named_for_random_reads_at_depth() {
    let r = simulate(&one_drive(
        "4ms",
        4,
        4,
        "read_bandwidth = \"1GB/s\"\nread_latency = \"50us\"",
        "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 64\n",
    ));
    let f = fio(&r);
    assert!((f.bandwidth_gb_per_s - 1.0).abs() < 0.02, "{f:?}");
    let b = &r.flows[0].bottleneck;
    assert_eq!(
        (b.kind, b.resource.as_str()),
        ("media", "nvme media (read)"),
        "{b:?}"
    );
}

#[test]
fn writes_read_their_data_and_prp_lists_and_are_link_bound_on_a_narrow_link() {
    let r = simulate(&one_drive(
        "20ms",
        2,
        1,
        "write_latency = \"10us\"",
        "rw = \"write\"\nbs = \"128KiB\"\niodepth = 8\n",
    ));
    // The write data come down as CplD of RCB-aligned 64 B pieces (the root complex's
    // default completions): the closed form's read figure, with the Acks and UpdateFCs of
    // the drive's MRds sharing the data's direction as the spec's timers send them.
    let req = LinkRequest {
        gen: 2,
        width: 1,
        mps: 256,
        mrrs: 512,
        payload: Some(128 << 10),
        completion: CompletionSize::Rcb,
        dllp: DllpPolicy::Spec,
        skp: false,
        ..LinkRequest::default()
    };
    let closed = tlpsim::link_bandwidth(&req).unwrap().read_gbps;
    let f = fio(&r);
    let gbps = f.bandwidth_gb_per_s * 8.0;
    assert!(
        (gbps / closed - 1.0).abs() < 0.01,
        "{gbps} Gb/s against {closed}"
    );
    assert_eq!(
        r.flows[0].bottleneck.kind, "link",
        "{:?}",
        r.flows[0].bottleneck
    );
    assert_eq!(f.rw, "write");
}

#[test]
fn gpudirect_storage_moves_the_data_peer_to_peer_under_a_switch() {
    let text = "[simulation]\nduration = \"3ms\"\nwarmup = \"500us\"\n\
         [pcie]\nmps = 256\n\
         [[root_complex]]\nname = \"rc\"\n\
         [[switch]]\nname = \"sw\"\n\
         [[endpoint]]\nname = \"gpu\"\nkind = \"memory\"\nbar_size = \"16GiB\"\n\
         [[endpoint]]\nname = \"nvme\"\nkind = \"nvme\"\nread_latency = \"20us\"\n\
         [[link]]\nbetween = [\"rc\", \"sw\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"gpu\"]\ngen = 4\nwidth = 16\n\
         [[link]]\nbetween = [\"sw\", \"nvme\"]\ngen = 4\nwidth = 4\n\
         [[workload]]\nname = \"gds\"\nkind = \"fio\"\nendpoint = \"nvme\"\nrw = \"read\"\n\
         bs = \"128KiB\"\niodepth = 16\ntarget = \"gpu\"\n";
    let r = simulate(text);
    let f = fio(&r);
    assert_eq!(f.target, "gpu");
    let link = |name: &str, dir: &str| {
        r.links
            .iter()
            .find(|l| l.name == name && l.direction == dir)
            .unwrap()
            .clone()
    };
    // The data cross the drive's link up and the GPU's link down; the root link carries
    // only the queue entries, completions and interrupts.
    assert!(link("sw-nvme", "up").utilization > 0.9);
    assert!(link("sw-gpu", "down").payload_gbps > 0.95 * link("sw-nvme", "up").payload_gbps);
    assert!(link("rc-sw", "up").payload_gbps < 0.01 * link("sw-gpu", "down").payload_gbps);
    // A write I/O reads its data from the GPU's BAR.
    let w = simulate(&text.replace("rw = \"read\"", "rw = \"write\""));
    assert!(w.fio()[0].ios > 0 && link("rc-sw", "down").payload_gbps < 1.0);
}

#[test]
fn the_same_seed_gives_the_same_result_and_jobs_share_queues() {
    let text = one_drive(
        "3ms",
        3,
        4,
        "queues = 2\nqueue_depth = 64\nread_bandwidth = \"3GB/s\"\ncommand_rate = 800000",
        "rw = \"randread\"\nbs = \"16KiB\"\niodepth = 16\nnumjobs = 4\n",
    );
    let (a, b) = (simulate(&text), simulate(&text));
    assert_eq!(a.fio(), b.fio());
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.links, b.links);
    let f = fio(&a);
    let [mean, p50, p95, p99, p99_9, max] = [
        f.latency_ns.mean,
        f.latency_ns.p50,
        f.latency_ns.p95,
        f.latency_ns.p99,
        f.latency_ns.p99_9,
        f.latency_ns.max,
    ]
    .map(|v| v.unwrap());
    assert!(p50 <= p95 && p95 <= p99 && p99 <= p99_9 && p99_9 <= max && mean <= max);
}

#[test]
fn bad_keys_get_one_clear_line() {
    let bad = |drive: &str, fio: &str| refused(&one_drive("2ms", 3, 4, drive, fio));
    let read = "rw = \"randread\"\n";
    let e = bad("queue_depth = 1", read);
    assert!(e.contains("queue_depth") && e.contains("2 to 65536"), "{e}");
    let e = bad("queue_depth = 32", "rw = \"read\"\niodepth = 32\n");
    assert!(e.contains("iodepth") && e.contains("1 to 31"), "{e}");
    let e = bad(
        "queues = 1\nqueue_depth = 32",
        "rw = \"read\"\niodepth = 16\nnumjobs = 2\n",
    );
    assert!(e.contains("share its 1 queue pairs"), "{e}");
    let e = bad("", "rw = \"randrw\"\n");
    assert!(e.contains("randread") && e.contains("randwrite"), "{e}");
    let e = bad("", "rw = \"read\"\nbs = \"1000B\"\n");
    assert!(e.contains("bs") && e.contains("multiple of 512 B"), "{e}");
    let e = bad(
        "max_transfer = \"128KiB\"",
        "rw = \"read\"\nbs = \"1MiB\"\n",
    );
    assert!(e.contains("max_transfer") && e.contains("128 KiB"), "{e}");
    let e = bad("command_rate = 0", read);
    assert!(e.contains("command_rate"), "{e}");
    let e = bad("media_read = \"1GB/s\"", read);
    assert!(e.contains("media_read"), "{e}");
    let e = bad("", "rw = \"read\"\ntransfer_size = \"4KiB\"\n");
    assert!(e.contains("transfer_size"), "{e}");
    let e = bad("", "rw = \"read\"\ntarget = \"rc\"\n");
    assert!(e.contains("memory endpoint"), "{e}");
    // A DMA workload on a drive, an fio workload on a DMA engine.
    let text = one_drive("2ms", 3, 4, "", read).replace(
        "kind = \"fio\"\nendpoint = \"nvme\"\nrw = \"randread\"",
        "kind = \"dma\"\nendpoint = \"nvme\"\ndirection = \"read\"\ntransfer_size = \"4KiB\"",
    );
    assert!(
        refused(&text).contains("kind = \"fio\""),
        "{}",
        refused(&text)
    );
    let text = one_drive("2ms", 3, 4, "", read).replace("kind = \"nvme\"", "kind = \"dma\"");
    assert!(refused(&text).contains("an fio workload runs on an NVMe drive"));
    for e in [bad("queue_depth = 1", read), refused(&text)] {
        assert_eq!(e.lines().count(), 1, "{e}");
    }
}

#[test]
fn a_root_complex_may_write_into_a_drives_bar_beside_fio() {
    let text = one_drive(
        "3ms",
        3,
        4,
        "",
        "rw = \"randwrite\"\nbs = \"8KiB\"\niodepth = 4\n",
    )
        + "[[workload]]\nname = \"cmb\"\nkind = \"dma\"\nendpoint = \"rc\"\ntarget = \"nvme\"\n\
         direction = \"write\"\ntransfer_size = \"4KiB\"\n";
    let r = simulate(&text);
    assert!(r.flows[1].bytes > 0 && r.fio()[0].ios > 0);
    assert_eq!(r.fio().len(), 1);
}

/// The shared reproduction of a faster link that is slower: a Gen `gen` x`width` fabric,
/// one drive behind a switch, 16 KiB random reads at depth 4, the root's memory at
/// `memory` (MPS 128, 64 posted header credits at the root).
fn behind_switch(gen: u32, width: u32, memory: &str) -> String {
    format!(
        "[simulation]\nduration = \"2ms\"\nwarmup = \"10us\"\nseed = 453\n\
         [pcie]\ngen = {gen}\nwidth = {width}\nmps = 128\nmrrs = 4096\nrcb = 64\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"800ns\"\ncompletion = \"rcb\"\n\
         memory_bandwidth = \"{memory}\"\n\
         [[switch]]\nname = \"sw\"\nlatency = \"100ns\"\n\
         [[link]]\nbetween = [\"rc\", \"sw\"]\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"nvme\"\nread_latency = \"10us\"\n\
         write_latency = \"10us\"\ncredits = {{ ph = 16, pd = 256, nph = 8, npd = 8 }}\n\
         [[link]]\nbetween = [\"sw\", \"ep\"]\n\
         [[workload]]\nname = \"w\"\nkind = \"fio\"\nendpoint = \"ep\"\nrw = \"randread\"\n\
         bs = \"16KiB\"\niodepth = 4\nnumjobs = 1\n"
    )
}

#[test]
fn a_faster_link_moves_the_posted_queue_into_the_switch_where_reads_wait_behind_it() {
    // The root's memory (8 GB/s) takes the drive's data slower than either link brings it,
    // so the root's posted credits run out and the data queue at a port. On a Gen3 drive
    // link much of that queue waits inside the drive, as data not yet sent, and the next
    // command's submission-entry fetch (MRd) leaves ahead of it; on Gen4 the drive's link
    // empties the drive into the switch, and there the fetch waits behind the queued writes
    // (PCIe ordering: a read request does not pass a posted write of the same requester).
    // Each I/O's latency grows by that wait: the faster link is slower. A real effect of the
    // ordering rules, not of the link: with memory that keeps up, Gen4 is the faster.
    let lat = |r: &RunResult| fio(r).latency_ns.mean.unwrap();
    let gen3 = simulate(&behind_switch(3, 16, "8GB/s"));
    let gen4 = simulate(&behind_switch(4, 16, "8GB/s"));
    assert!(
        lat(&gen4) > lat(&gen3) * 1.05,
        "{} vs {}",
        lat(&gen4),
        lat(&gen3)
    );
    // The verdict says why the credits run out: the root's memory holds them.
    let b = &gen4.flows[0].bottleneck;
    assert_eq!(
        (b.kind, b.resource.as_str()),
        ("credits", "sw -> rc PH credits")
    );
    assert!(
        b.detail.contains("memory (8.000 GB/s)") && b.detail.contains("does not pass"),
        "{b:?}"
    );
    let fast3 = simulate(&behind_switch(3, 16, "100GB/s"));
    let fast4 = simulate(&behind_switch(4, 16, "100GB/s"));
    assert!(
        lat(&fast4) < lat(&fast3),
        "{} vs {}",
        lat(&fast4),
        lat(&fast3)
    );
}

#[test]
fn writes_wait_for_write_buffer_room_and_fio_counts_whole_ios() {
    // 128 writes of 512 KiB in flight (64 MiB) against a 4 GB/s media: the drive fetches a
    // write's data only when its 8 MiB buffer has room, so the link carries what the media
    // programs, and fio's bandwidth is its IOPS times the block size.
    let text = "[simulation]\nduration = \"20ms\"\nwarmup = \"100us\"\nseed = 1\n\
        [pcie]\nmps = 256\nmrrs = 512\n\
        [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"500ns\"\n\
        [[endpoint]]\nname = \"nvme0\"\nkind = \"nvme\"\ncommand_rate = 1000000\n\
        read_bandwidth = \"7GB/s\"\nwrite_bandwidth = \"4GB/s\"\nread_latency = \"80us\"\n\
        write_latency = \"20us\"\nmax_transfer = \"512KiB\"\n\
        [[link]]\nbetween = [\"rc\", \"nvme0\"]\ngen = 4\nwidth = 4\n\
        [[workload]]\nname = \"f\"\nkind = \"fio\"\nendpoint = \"nvme0\"\nrw = \"write\"\n\
        bs = \"512KiB\"\niodepth = 32\nnumjobs = 4\n";
    let r = simulate(text);
    let f = fio(&r);
    assert!(
        f.bandwidth_gb_per_s <= 4.0 * 1.001,
        "{}",
        f.bandwidth_gb_per_s
    );
    assert!(f.bandwidth_gb_per_s > 3.9, "{}", f.bandwidth_gb_per_s);
    // Its bandwidth (bytes over the link) and IOPS x bs agree to the data of the I/Os in
    // flight at the window's edges: at most the buffer and one I/O.
    let from_iops = f.iops * 512.0 * 1024.0 / 1e9;
    let edge = (8.0 + 0.5) * 1048576.0 / 19.9e-3 / 1e9;
    assert!(
        (f.bandwidth_gb_per_s - from_iops).abs() <= edge,
        "{} vs {from_iops}",
        f.bandwidth_gb_per_s
    );
    // The data crossing the link in the window: at most the media's rate plus one buffer.
    let window = 19.9e-3;
    assert!(r.flows[0].bytes as f64 / window <= 4e9 + 8.0 * 1048576.0 / window);
    // A smaller buffer is a key; one below a page is refused.
    let small = simulate(&text.replace("max_transfer", "write_buffer = \"512KiB\"\nmax_transfer"));
    assert!(fio(&small).bandwidth_gb_per_s < f.bandwidth_gb_per_s);
    let e = refused(&text.replace("max_transfer", "write_buffer = \"1KiB\"\nmax_transfer"));
    assert!(e.contains("write_buffer") && !e.contains('\n'), "{e}");
}

#[test]
fn a_media_that_reads_ahead_of_its_link_is_busy_only_for_what_left() {
    // 7 GB/s media behind a Gen3 x4 link (about 3.5 GB/s of payload): the media reads each
    // I/O ahead, and its data then wait for the link. That wait is the link's time, not
    // the media's: the media is busy for the data that left (about half of its rate), and
    // the verdict names the link.
    let r = simulate(&one_drive(
        "2ms",
        3,
        4,
        "read_bandwidth = \"7GB/s\"\nread_latency = \"20us\"",
        "rw = \"read\"\nbs = \"128KiB\"\niodepth = 16\n",
    ));
    let media = r
        .resources
        .iter()
        .find(|m| m.name == "nvme media (read)")
        .unwrap();
    let delivered = fio(&r).bandwidth_gb_per_s / 7.0;
    assert!(
        (media.busy - delivered).abs() < 0.03,
        "{} vs {delivered}",
        media.busy
    );
    assert_eq!(
        r.flows[0].bottleneck.kind, "link",
        "{:?}",
        r.flows[0].bottleneck
    );
}

#[test]
fn a_window_shorter_than_one_io_warns_and_names_a_duration_that_would_do() {
    // An 80 us media read in a 50 us run: no I/O completes. The result warns, names a
    // longer duration, and the verdict does not claim a 0.0 us latency; at that duration
    // the I/Os complete and the warning goes.
    let text = |d: &str| {
        one_drive(
            d,
            4,
            4,
            "",
            "rw = \"randread\"\nbs = \"4KiB\"\niodepth = 4\n",
        )
        .replace("warmup = \"1ms\"", "warmup = \"10us\"")
    };
    let r = simulate(&text("50us"));
    assert_eq!(fio(&r).ios, 0);
    assert_eq!(r.warnings.len(), 1, "{:?}", r.warnings);
    let w = &r.warnings[0];
    assert!(
        w.contains("flow fio completed none of its I/Os") && w.contains("duration to about"),
        "{w}"
    );
    assert!(
        !r.flows[0].bottleneck.detail.contains("0.0 us"),
        "{:?}",
        r.flows[0].bottleneck
    );
    let us: f64 = w
        .split("about ")
        .nth(1)
        .unwrap()
        .split(' ')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let r = simulate(&text(&format!("{us}us")));
    assert!(
        fio(&r).ios >= 10 && r.warnings.is_empty(),
        "{} {:?}",
        fio(&r).ios,
        r.warnings
    );
}
