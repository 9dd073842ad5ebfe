//! Differential test of the lean kernel (`sim::lean`): random fabrics of its class (DMA
//! endpoints writing into, reading from or both a root complex over one link each, or
//! writing, reading or both through one switch (cut-through or store-and-forward, any latency, round-robin,
//! weighted or oldest-first arbitration, its own credits), any generation, width, MPS,
//! MRRS, RCB, completion rule, memory latency, tags, credits,
//! replay buffer, Ack policy, SKP, propagation, transfer size, outstanding transfers,
//! addresses and warmup) run on it and on the general engine must give the same
//! JSON, apart from `wall_s`, value for value; so must the lean peer's one-link scenario at
//! 5 ms. 48 cases by default; `PROPTEST_CASES=N` for more.

use proptest::prelude::*;
use tlpsim::scenario::load_str;
use tlpsim::sim::{lean_qualifies, run_on, Kernel};

/// One endpoint: (link generation, width index, propagation in ns (immediate Acks when
/// odd), replay buffer in KiB or 0 for the default, SKP), (transfer size, outstanding,
/// TLP payload index, host offset, window in slots or 0 for none, random slots), and (its
/// own posted header credits, finite when above 0: the root complex's UpdateFC refresh;
/// its direction, an index of `DIRECTIONS`; its tags, 0 for the default).
type EndpointGen = (
    (u32, usize, u32, u32, bool),
    (u32, u32, usize, u32, u32, bool),
    (u32, usize, u32),
);

/// The directions an endpoint's workload is drawn from.
const DIRECTIONS: [&str; 3] = ["write", "read", "both"];

/// The reads' settings: MRRS, RCB, completions at MPS (not RCB), a uniform memory latency.
type ReadGen = (u32, u32, bool, bool);

/// A switch every endpoint writes, reads or both through: cut-through, latency in ns, arbitration (index
/// into `ARBITRATIONS`), its upstream link's generation and width index, and its ports'
/// posted header credits (0: the default).
type SwitchGen = (bool, u32, usize, u32, usize, u32);

const ARBITRATIONS: [&str; 3] = ["round-robin", "weighted", "oldest"];

const WIDTHS: [u32; 5] = [1, 2, 4, 8, 16];
const PAYLOADS: [u32; 4] = [0, 64, 128, 256];

/// The scenario text of one drawn fabric.
fn fabric(
    mps: u32,
    (ph, pd_tlps, nph): (u32, u32, u32),
    (duration_us, warmup_us, seed): (u32, u32, u64),
    ecrc: bool,
    (mrrs, rcb, cpl_mps, uniform): ReadGen,
    switch: Option<SwitchGen>,
    endpoints: &[EndpointGen],
) -> String {
    let latency = if uniform {
        "{ distribution = \"uniform\", min = \"200ns\", max = \"900ns\" }"
    } else {
        "\"400ns\""
    };
    let completion = if cpl_mps { "mps" } else { "rcb" };
    // Few non-posted header credits make reads wait, and writes pass them.
    let nph = if nph > 0 {
        format!(", nph = {nph}")
    } else {
        String::new()
    };
    let mut t = format!(
        "[simulation]\nduration = \"{duration_us}us\"\nwarmup = \"{warmup_us}us\"\n\
         seed = {seed}\n[pcie]\nmps = {mps}\necrc = {ecrc}\nmrrs = {mrrs}\nrcb = {rcb}\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = {latency}\n\
         completion = \"{completion}\"\ncredits = {{ ph = {ph}, pd = {}{nph} }}\n",
        mps / 16 * pd_tlps
    );
    let parent = if switch.is_some() { "sw" } else { "rc" };
    if let Some((cut, latency, arb, gen, w, sw_ph)) = switch {
        t.push_str(&format!(
            "[[switch]]\nname = \"sw\"\nforwarding = \"{}\"\nlatency = \"{latency}ns\"\n\
             arbitration = \"{}\"\n",
            if cut {
                "cut-through"
            } else {
                "store-and-forward"
            },
            ARBITRATIONS[arb]
        ));
        if arb == 1 {
            let weights: Vec<String> = (0..endpoints.len())
                .map(|k| format!("ep{k} = {}", 1 + (k as u32 + latency) % 4))
                .collect();
            t.push_str(&format!("weights = {{ {} }}\n", weights.join(", ")));
        }
        if sw_ph > 0 {
            t.push_str(&format!(
                "credits = {{ ph = {sw_ph}, pd = {} }}\n",
                mps / 16 * sw_ph
            ));
        }
        t.push_str(&format!(
            "[[link]]\nbetween = [\"rc\", \"sw\"]\ngen = {gen}\nwidth = {}\n",
            WIDTHS[w]
        ));
    }
    for (k, &(link, work, (ep_ph, direction, tags))) in endpoints.iter().enumerate() {
        let (gen, w, prop, replay, skp) = link;
        let (size, outstanding, payload, host_offset, slots, random) = work;
        t.push_str(&format!("[[endpoint]]\nname = \"ep{k}\"\nkind = \"dma\"\n"));
        if tags > 0 {
            t.push_str(&format!("tags = {tags}\n"));
        }
        if ep_ph > 0 {
            t.push_str(&format!(
                "credits = {{ ph = {ep_ph}, pd = {} }}\n",
                mps / 16 * ep_ph
            ));
        }
        t.push_str(&format!(
            "[[link]]\nbetween = [\"{parent}\", \"ep{k}\"]\ngen = {gen}\nwidth = {}\n\
             propagation = \"{prop}ns\"\nskp = {skp}\n",
            WIDTHS[w]
        ));
        if replay > 0 {
            t.push_str(&format!("replay_buffer = \"{replay}KiB\"\n"));
        }
        if prop % 2 == 1 {
            t.push_str("ack = \"immediate\"\n");
        }
        t.push_str(&format!(
            "[[workload]]\nname = \"w{k}\"\nkind = \"dma\"\nendpoint = \"ep{k}\"\n\
             direction = \"{}\"\ntransfer_size = \"{size}B\"\noutstanding = {outstanding}\n\
             host_offset = {host_offset}\n",
            DIRECTIONS[direction]
        ));
        if direction != 1 && PAYLOADS[payload] > 0 && PAYLOADS[payload] <= mps {
            t.push_str(&format!("tlp_payload = \"{}B\"\n", PAYLOADS[payload]));
        }
        if slots > 0 {
            let slot = (size + host_offset).div_ceil(64) * 64;
            t.push_str(&format!(
                "window = \"{}B\"\npattern = \"{}\"\n",
                slot * slots,
                if random { "random" } else { "sequential" }
            ));
        }
    }
    t
}

/// The run's JSON on `kernel`, without its wall time.
fn json_on(text: &str, kernel: Kernel) -> Result<String, TestCaseError> {
    let sys =
        load_str(text, "<lean fabric>").map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let r = run_on(&sys, kernel).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    let mut v: serde_json::Value = serde_json::from_str(&r.to_json()).expect("JSON");
    v.as_object_mut().expect("an object").remove("wall_s");
    Ok(v.to_string())
}

/// Whether the run's JSON names a starved flow.
fn starved(json: &str) -> bool {
    let v: serde_json::Value = serde_json::from_str(json).expect("JSON");
    v["flows"]
        .as_array()
        .expect("flows")
        .iter()
        .any(|f| f["starved"] == serde_json::Value::Bool(true))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(
        std::env::var("PROPTEST_CASES").ok().and_then(|n| n.parse().ok()).unwrap_or(48)
    ))]
    #[test]
    fn the_lean_kernel_gives_the_general_engines_json(
        mps in prop::sample::select(vec![128u32, 256, 512, 1024]),
        credits in (1u32..=32, 1u32..=16, prop::sample::select(vec![0u32, 1, 2, 4])),
        time in (20u32..=300, 0u32..=15, 0u64..1000),
        ecrc in any::<bool>(),
        reads in (prop::sample::select(vec![128u32, 256, 512, 4096]),
                  prop::sample::select(vec![64u32, 128]), any::<bool>(), any::<bool>()),
        switch in prop::option::of((any::<bool>(), 0u32..=400, 0usize..ARBITRATIONS.len(),
                  1u32..=5, 0usize..WIDTHS.len(), prop::sample::select(vec![0u32, 1, 4]))),
        endpoints in prop::collection::vec(
            ((1u32..=5, 0usize..WIDTHS.len(), 0u32..=400, prop::sample::select(vec![0u32, 2, 4, 16]),
              any::<bool>()),
             (4u32..=16384, 1u32..=8, 0usize..PAYLOADS.len(), 0u32..=4, 0u32..=6, any::<bool>()),
             (prop::sample::select(vec![0u32, 1, 4]), 0usize..DIRECTIONS.len(),
              prop::sample::select(vec![0u32, 1, 3, 32]))),
            1..=4),
    ) {
        let text = fabric(mps, credits, time, ecrc, reads, switch, &endpoints);
        let sys = load_str(&text, "<lean fabric>")
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        prop_assert!(lean_qualifies(&sys), "not of the lean class\n{}", text);
        let general = json_on(&text, Kernel::General)?;
        match json_on(&text, Kernel::LeanOrError) {
            Ok(lean) => prop_assert!(lean == general, "the kernels differ on\n{}", text),
            // Through a switch a flow can starve (round-robin or weighted turns, few
            // credits): the lean kernel gives up at the look that finds it quiet, and the
            // general engine, which describes it, runs the scenario again.
            Err(e) => {
                prop_assert!(
                    switch.is_some() && starved(&general),
                    "the lean kernel gave up on\n{}\n{:?}",
                    text,
                    e
                );
                let auto = json_on(&text, Kernel::Auto)?;
                prop_assert!(auto == general, "the restart differs on\n{}", text);
            }
        }
    }
}

/// The lean peer's link (`link1_50.toml`: Gen1 x8, MPS 128) for `duration`, one DMA
/// stream in `direction`.
fn peers_link(duration: &str, direction: &str) -> String {
    format!(
        "[simulation]\nduration = \"{duration}\"\nwarmup = \"10us\"\nseed = 1\n\
         [pcie]\nmps = 128\ngen = 1\nskp = false\n\
         [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"400ns\"\n\
         credits = {{ ph = 32, pd = 256 }}\n\
         [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
         [[link]]\nbetween = [\"rc\", \"a\"]\nwidth = 8\n\
         [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"a\"\n\
         direction = \"{direction}\"\ntransfer_size = \"4KiB\"\noutstanding = 8\n"
    )
}

/// `text` is of the lean class and runs to the same JSON on both kernels.
fn assert_same_json_on_both_kernels(text: &str) {
    assert!(lean_qualifies(&load_str(text, "<link1>").expect("loads")));
    let lean = json_on(text, Kernel::LeanOrError).expect("runs");
    let general = json_on(text, Kernel::General).expect("runs");
    assert_eq!(lean, general);
}

#[test]
fn the_lean_peers_link_gives_the_same_json_on_both_kernels() {
    assert_same_json_on_both_kernels(&peers_link("5ms", "write"));
}

#[test]
fn a_lean_run_that_gives_up_starts_again_on_the_general_engine_with_the_same_json() {
    // Long enough to reach a progress call, where `LeanGiveUp` abandons the lean run.
    let text = "[simulation]\nduration = \"25ms\"\nseed = 3\n\
                [pcie]\nmps = 256\ngen = 2\n\
                [[root_complex]]\nname = \"rc\"\n\
                [[endpoint]]\nname = \"a\"\nkind = \"dma\"\n\
                [[link]]\nbetween = [\"rc\", \"a\"]\nwidth = 4\n\
                [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"a\"\n\
                direction = \"write\"\ntransfer_size = \"64KiB\"\n";
    assert!(lean_qualifies(&load_str(text, "<restart>").expect("loads")));
    let restarted = json_on(text, Kernel::LeanGiveUp).expect("runs");
    let general = json_on(text, Kernel::General).expect("runs");
    let events = serde_json::from_str::<serde_json::Value>(&general).expect("JSON")["events"]
        .as_u64()
        .expect("an event count");
    assert!(
        events > tlpsim::sim::PROGRESS_EVERY,
        "{events} events: the run gives up never"
    );
    assert_eq!(restarted, general);
}

#[test]
fn the_lean_peers_link_read_gives_the_same_json_on_both_kernels() {
    assert_same_json_on_both_kernels(&peers_link("2ms", "read"));
}

#[test]
fn the_lean_peers_link_both_ways_gives_the_same_json_on_both_kernels() {
    assert_same_json_on_both_kernels(&peers_link("2ms", "both"));
}

#[test]
fn a_read_that_times_out_hands_the_run_to_the_general_engine_with_the_same_json() {
    // The memory answers after the requester's completion timeout: the lean kernel gives
    // up at the first timeout, and the general engine describes it.
    let text = "[simulation]\nduration = \"400us\"\nseed = 2\n\
                [[root_complex]]\nname = \"rc\"\nmemory_read_latency = \"80us\"\n\
                [[endpoint]]\nname = \"a\"\nkind = \"dma\"\ncompletion_timeout = \"50us\"\n\
                [[link]]\nbetween = [\"rc\", \"a\"]\nwidth = 4\n\
                [[workload]]\nname = \"w\"\nkind = \"dma\"\nendpoint = \"a\"\n\
                direction = \"read\"\ntransfer_size = \"4KiB\"\n";
    assert!(lean_qualifies(&load_str(text, "<timeout>").expect("loads")));
    let auto = json_on(text, Kernel::Auto).expect("runs");
    let general = json_on(text, Kernel::General).expect("runs");
    assert!(
        !general.contains("\"completion_timeouts\":0"),
        "no timeout counted: {general}"
    );
    assert_eq!(auto, general);
    assert!(
        json_on(text, Kernel::LeanOrError).is_err(),
        "the lean kernel gave up"
    );
}

/// A root complex with `direct` endpoints of its own (each `(name, direction)`) and a
/// switch (`switch`: its own TOML lines) whose endpoints `below` write through it.
fn with_switch(direct: &[(&str, &str)], switch: &str, below: &[(&str, u32)]) -> String {
    let mut t = "[simulation]\nduration = \"300us\"\nwarmup = \"20us\"\nseed = 5\n\
                 [pcie]\nmps = 256\ngen = 3\n\
                 [[root_complex]]\nname = \"rc\"\n"
        .to_string();
    t.push_str(&format!("[[switch]]\nname = \"sw\"\n{switch}"));
    t.push_str("[[link]]\nbetween = [\"rc\", \"sw\"]\nwidth = 8\n");
    let eps = direct
        .iter()
        .map(|&(n, d)| (n, d, "rc", 4))
        .chain(below.iter().map(|&(n, w)| (n, "write", "sw", w)));
    for (name, direction, parent, width) in eps {
        t.push_str(&format!(
            "[[endpoint]]\nname = \"{name}\"\nkind = \"dma\"\n\
             [[link]]\nbetween = [\"{parent}\", \"{name}\"]\nwidth = {width}\n\
             [[workload]]\nname = \"w{name}\"\nkind = \"dma\"\nendpoint = \"{name}\"\n\
             direction = \"{direction}\"\ntransfer_size = \"8KiB\"\noutstanding = 4\n"
        ));
    }
    t
}

#[test]
fn a_switch_beside_direct_links_with_latency_by_width_gives_the_same_json() {
    let switch = "forwarding = \"store-and-forward\"\nlatency = \"120ns\"\n\
                  latency_by_width = { 4 = \"310ns\" }\n";
    let text = with_switch(
        &[("d0", "write"), ("d1", "read")],
        switch,
        &[("s0", 4), ("s1", 8), ("s2", 2)],
    );
    assert_same_json_on_both_kernels(&text);
}

#[test]
fn shapes_through_a_switch_the_kernel_does_not_take_stay_on_the_general_engine() {
    let shared = "core = \"shared-bus\"\ncore_bandwidth = \"4GB/s\"\n";
    let bus = with_switch(&[], shared, &[("s0", 4), ("s1", 4)]);
    let chained = with_switch(&[], "", &[("s0", 4)])
        .replace("between = [\"sw\", \"s0\"]", "between = [\"sw2\", \"s0\"]")
        + "[[switch]]\nname = \"sw2\"\n[[link]]\nbetween = [\"sw\", \"sw2\"]\nwidth = 8\n";
    for text in [&bus, &chained] {
        let sys = load_str(text, "<not lean>").expect("loads");
        assert!(!lean_qualifies(&sys), "of the lean class:\n{text}");
        let auto = json_on(text, Kernel::Auto).expect("runs");
        assert_eq!(auto, json_on(text, Kernel::General).expect("runs"));
    }
    let plain = with_switch(&[], "", &[("s0", 4), ("s1", 4)]);
    assert!(lean_qualifies(&load_str(&plain, "<lean>").expect("loads")));
}

#[test]
fn reads_and_both_ways_through_a_switch_give_the_same_json() {
    // The bench's shape (bench/engine.py): two endpoints both ways behind one switch,
    // and readers beside a writer, one of them with two tags.
    let both = with_switch(
        &[("d0", "both")],
        "latency = \"150ns\"\n",
        &[("s0", 8), ("s1", 8)],
    )
    .replace("\"write\"", "\"both\"");
    assert_same_json_on_both_kernels(&both);
    let read = with_switch(&[], "arbitration = \"oldest\"\n", &[("s0", 4), ("s1", 2)])
        .replacen("\"write\"", "\"read\"", 1)
        .replacen("kind = \"dma\"\n", "kind = \"dma\"\ntags = 2\n", 1);
    assert_same_json_on_both_kernels(&read);
}
