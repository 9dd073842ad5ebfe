//! The host memory keys of `[[root_complex]]` in whole runs: warm against cold reads, the
//! IOTLB's reach and its walks, the remote socket and the other socket's cache, the read
//! data path, and the load-time checks. Latencies are exact: one transfer in flight, fixed
//! times, so each key adds exactly its own time.

use tlpsim::scenario::load_str;
use tlpsim::sim::result::RunResult;
use tlpsim::sim::run;

/// A root complex with keys `host` and one DMA endpoint (32 tags) on a Gen3 x8 link, reading
/// or writing `size` bytes per transfer over `window` with `outstanding` in flight.
fn scenario(host: &str, workload: &str) -> String {
    format!(
        "[simulation]\nduration = \"60us\"\nwarmup = \"10us\"\nseed = 3\n\
         [pcie]\ngen = 3\nmps = 256\nmrrs = 4096\n\
         [[root_complex]]\nname = \"rc\"\ncompletion = \"mps\"\n\
         memory_read_latency = \"155ns\"\n{host}\n\
         [[endpoint]]\nname = \"ep\"\nkind = \"dma\"\ntags = 32\n\
         [[link]]\nbetween = [\"rc\", \"ep\"]\nwidth = 8\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"ep\"\n\
         pattern = \"random\"\n{workload}"
    )
}

fn simulate(text: &str) -> RunResult {
    let sys = load_str(text, "<test>").unwrap_or_else(|e| panic!("{e}\n{text}"));
    let r = run(&sys).unwrap();
    assert!(r.audit.passed, "audit failed: {:?}", r.audit);
    r
}

/// One 64 B read in flight over `window` with `cache`: its median latency in ns.
fn read_latency(host: &str, window: &str, cache: &str) -> f64 {
    let w = format!(
        "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 1\n\
         window = \"{window}\"\ncache = \"{cache}\"\n"
    );
    simulate(&scenario(host, &w)).flows[0]
        .transfer_latency_ns
        .p50
        .unwrap()
}

/// 64 B reads, 32 tags' worth in flight, over `window` (cold): Gb/s and the verdict's kind.
fn read_rate(host: &str, window: &str) -> (f64, String) {
    let w = format!(
        "direction = \"read\"\ntransfer_size = \"64B\"\noutstanding = 64\n\
         window = \"{window}\"\ncache = \"cold\"\n"
    );
    let r = simulate(&scenario(host, &w));
    (
        r.flows[0].throughput_gbps,
        r.flows[0].bottleneck.kind.to_string(),
    )
}

const LLC: &str = "llc_size = \"25MiB\"\nllc_hit_latency = \"100ns\"";

#[test]
fn a_cold_read_costs_the_dram_latency_a_warm_one_the_hit_latency() {
    let warm = read_latency(LLC, "8KiB", "warm");
    let cold = read_latency(LLC, "8KiB", "cold");
    assert!((cold - warm - 55.0).abs() <= 1.0, "warm {warm} cold {cold}");
    // Without the host memory keys the read costs memory_read_latency, warm or not.
    let plain = read_latency("", "8KiB", "warm");
    assert!((plain - cold).abs() <= 1.0, "plain {plain} cold {cold}");
    // A window larger than the LLC keeps only its last part warm: random reads over twice
    // the LLC hit about half the time, so the median sits at either end.
    let big = read_latency(LLC, "64MiB", "warm");
    assert!(big >= warm - 1.0 && big <= cold + 1.0);
    // A device write leaves its lines in the DDIO ways: a small window is warm, ...
    let device = read_latency(LLC, "8KiB", "device-warm");
    assert!((device - warm).abs() <= 1.0, "device-warm {device}");
    // ... one larger than the DDIO ways (2 of 20 ways: 2.5 MiB) mostly not.
    let device = read_latency(LLC, "64MiB", "device-warm");
    assert!((device - cold).abs() <= 1.0, "device-warm 64 MiB {device}");
}

#[test]
fn the_remote_socket_adds_its_latency_and_the_other_cache_twice_it() {
    let local = read_latency(LLC, "8KiB", "cold");
    let remote = format!("{LLC}\nmemory_socket = \"remote\"\nremote_latency = \"60ns\"");
    let far = read_latency(&remote, "8KiB", "cold");
    assert!(
        (far - local - 60.0).abs() <= 1.0,
        "local {local} remote {far}"
    );
    // A line warm in the local LLC stays local.
    let warm = read_latency(LLC, "8KiB", "warm");
    assert!((read_latency(&remote, "8KiB", "warm") - warm).abs() <= 1.0);
    // A line the other socket's CPU holds: the hit plus a snoop there and back.
    let snoop = read_latency(&remote, "8KiB", "remote-warm");
    assert!((snoop - warm - 120.0).abs() <= 1.0, "remote-warm {snoop}");
}

#[test]
fn the_iotlb_reach_is_its_entries_times_the_page_size() {
    let iommu =
        format!("{LLC}\niommu = \"on\"\niotlb_entries = 64\niommu_walk_latency = \"280ns\"");
    // 64 entries x 4 KiB = 256 KiB: a window within it never walks (its pages are
    // translated before the run) ...
    let cold = read_latency(LLC, "8KiB", "cold");
    let inside = read_latency(&iommu, "256KiB", "cold");
    assert!((inside - cold).abs() <= 1.0, "inside {inside} cold {cold}");
    // ... one 256 times larger misses almost every time, and a miss waits for its walk.
    let outside = read_latency(&iommu, "64MiB", "cold");
    assert!((outside - cold - 280.0).abs() <= 1.0, "outside {outside}");
    // 2 MiB pages reach 128 MiB.
    let huge = format!("{iommu}\niommu_page_size = \"2MiB\"");
    assert!((read_latency(&huge, "64MiB", "cold") - cold).abs() <= 1.0);
    // The bandwidth knee: flat to the reach, then down; far past it the walkers limit
    // (2 walkers x 280 ns: 7.1 M walks/s, 3.7 Gb/s of 64 B reads).
    let two = format!("{iommu}\niommu_walkers = 2");
    let (at_reach, _) = read_rate(&two, "256KiB");
    let (plain, _) = read_rate(LLC, "256KiB");
    assert!(
        (at_reach / plain - 1.0).abs() < 0.01,
        "{at_reach} vs {plain}"
    );
    let (past, kind) = read_rate(&two, "64MiB");
    let walks = 2.0 / 280e-9 * 64.0 * 8.0 / 1e9;
    assert!(
        past < walks * 1.01 && past > walks * 0.95,
        "{past} vs {walks}"
    );
    assert_eq!(kind, "iommu");
    // Walkers held for 140 ns of each 280 ns walk translate twice as fast.
    let overlapped = format!("{two}\niommu_walk_occupancy = \"140ns\"");
    let (past, _) = read_rate(&overlapped, "64MiB");
    assert!(
        past < 2.0 * walks * 1.01 && past > 2.0 * walks * 0.95,
        "{past} vs {}",
        2.0 * walks
    );
}

#[test]
fn the_read_data_path_caps_reads_and_names_itself() {
    let w = "direction = \"read\"\ntransfer_size = \"2KiB\"\noutstanding = 16\n";
    let host = "read_bandwidth = \"4GB/s\"";
    let r = simulate(&scenario(host, w));
    let gbps = r.flows[0].throughput_gbps;
    assert!((gbps / 32.0 - 1.0).abs() < 0.01, "{gbps} Gb/s");
    assert_eq!(r.flows[0].bottleneck.kind, "read_path");
    // Writes do not cross it.
    let w = "direction = \"write\"\ntransfer_size = \"2KiB\"\noutstanding = 16\n";
    let r = simulate(&scenario(host, w));
    assert!(r.flows[0].throughput_gbps > 40.0);
}

#[test]
fn reads_and_writes_at_once_share_the_data_path() {
    let host = "data_path_bandwidth = \"8GB/s\"";
    let rate = |direction: &str| {
        let w =
            format!("direction = \"{direction}\"\ntransfer_size = \"1KiB\"\noutstanding = 16\n");
        let r = simulate(&scenario(host, &w));
        (
            r.flows[0].throughput_gbps,
            r.flows[0].bottleneck.kind.to_string(),
        )
    };
    // Alone, reads and writes run at the link's rate, well under 8 GB/s.
    let (read, _) = rate("read");
    let (write, _) = rate("write");
    assert!(read > 50.0 && write > 50.0, "{read} {write}");
    // Both at once: 8 GB/s of read and write data together, 32 Gb/s each way (the flow
    // counts both), named as the data path.
    let (both, kind) = rate("alternate");
    assert!((both / 64.0 - 1.0).abs() < 0.01, "{both} Gb/s");
    assert_eq!(kind, "data_path");
    // Without the key, the same run is faster.
    let w = "direction = \"alternate\"\ntransfer_size = \"1KiB\"\noutstanding = 16\n";
    assert!(simulate(&scenario("", w)).flows[0].throughput_gbps > 1.3 * both);
}

#[test]
fn host_memory_keys_are_checked_at_load_time() {
    let w = "direction = \"read\"\ntransfer_size = \"64B\"\n";
    for (host, says) in [
        ("llc_ways = 16", "llc_ways applies only with llc_size"),
        (
            "iotlb_entries = 32",
            "iotlb_entries applies only with iommu = \"on\"",
        ),
        ("iommu = \"maybe\"", "iommu"),
        ("llc_size = \"25MiB\"\nddio_ways = 30", "ddio_ways 30"),
        (
            "llc_size = \"25MiB\"\nllc_hit_latency = \"200ns\"",
            "a hit cannot be slower",
        ),
        (
            "socket_link_bandwidth = \"10GB/s\"",
            "applies only with memory_socket",
        ),
        ("iommu = \"on\"\niommu_walkers = 0", "iommu_walkers 0"),
        (
            "iommu_walk_occupancy = \"100ns\"",
            "iommu_walk_occupancy applies only with iommu = \"on\"",
        ),
        (
            "iommu = \"on\"\niommu_walk_occupancy = \"0ns\"",
            "iommu_walk_occupancy 0ns",
        ),
    ] {
        let e = load_str(&scenario(host, w), "<test>")
            .unwrap_err()
            .to_string();
        assert!(e.contains(says), "{host}: {e}");
        assert!(!e.contains('\n'), "one line: {e}");
    }
    let text = scenario("llc_size = \"25MiB\"", w).replace(
        "memory_read_latency = \"155ns\"",
        "memory_read_latency = { distribution = \"uniform\", min = \"100ns\", max = \"200ns\" }",
    );
    let e = load_str(&text, "<test>").unwrap_err().to_string();
    assert!(e.contains("must be one duration"), "{e}");
}

#[test]
fn a_read_of_a_line_just_written_waits_for_the_write_to_reach_the_llc() {
    // LAT_DMA_WRRD: a 64 B write, then a read of it. The read's data wait until the write
    // is in its LLC line: 2 us after it arrived.
    let w = "direction = \"write-read\"\ntransfer_size = \"64B\"\noutstanding = 1\n\
             window = \"8KiB\"\ncache = \"warm\"\n";
    let lat = |host: &str| {
        simulate(&scenario(host, w)).flows[0]
            .transfer_latency_ns
            .p50
            .unwrap()
    };
    let quick = lat(LLC);
    let slow = lat(&format!("{LLC}\nllc_write_latency = \"2us\""));
    assert!(quick < 1000.0, "{quick}");
    assert!(slow > 2000.0 && slow < 2000.0 + quick, "{slow}");
    // Streaming writes do not wait for it: their credits free on arrival.
    let w = "direction = \"write\"\ntransfer_size = \"256B\"\noutstanding = 16\n";
    let rate = |host: &str| simulate(&scenario(host, w)).flows[0].throughput_gbps;
    let slow_host = format!("{LLC}\nllc_write_latency = \"2us\"");
    assert!((rate(&slow_host) / rate(LLC) - 1.0).abs() < 0.001);
}
