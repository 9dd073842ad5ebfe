"""The simulator from Python and the CLI: scenario loading, errors, results, determinism."""

import json
import re
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import tlpsim

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "t5220-two-switches.toml"

FLOW_FIELDS = {"name", "bytes", "throughput_gbps", "latency_ns"}
#: The figures of each latency summary (ns): the design's mean, p50, p99, max, and p95, p99.9.
LATENCY_KEYS = {"mean", "p50", "p95", "p99", "p99_9", "max"}
LINK_FIELDS = {"name", "direction", "utilization", "payload_gbps", "tlps", "dllps", "replays", "credit_stall_fraction"}


def test_the_example_loads_and_runs_with_the_design_fields():
    result = tlpsim.run(tlpsim.load_scenario(EXAMPLE))
    d = result.to_dict()
    assert {"simulated_s", "wall_s", "events", "flows", "links"} <= d.keys()
    assert FLOW_FIELDS <= d["flows"][0].keys()
    assert set(d["flows"][0]["latency_ns"]) == LATENCY_KEYS
    assert all(LINK_FIELDS <= link.keys() for link in d["links"])
    assert d["audit"]["passed"]
    # Gen1 x8, 64-byte completions: the closed form's read ceiling bounds the flow.
    ceiling = tlpsim.link_bandwidth(1, 8, mps=128, payload=4096).read_gbps
    assert 0.97 * ceiling < result.flows[0]["throughput_gbps"] < 1.01 * ceiling


@pytest.mark.parametrize("path", sorted((ROOT / "scenarios").glob("*.toml")), ids=lambda p: p.name)
def test_every_gallery_scenario_runs_moves_data_on_every_flow_and_passes_its_audit(path):
    result = tlpsim.run(path)
    assert result.audit["passed"], result.audit
    assert all(f["bytes"] > 0 for f in result.flows), [f["name"] for f in result.flows if not f["bytes"]]
    assert not result.starved, result.starved


def test_the_gen5_server_gallery_names_the_bottlenecks_its_readme_sentences_give():
    """ACS redirect sends the in-switch peer copy through the root complex, whose forwarding
    then limits both peer copies; GDS stays on its drives' media, the bounce on the root link."""
    scenarios = ROOT / "scenarios"

    def verdicts(name):
        return {f["name"]: f["bottleneck"]["resource"] for f in tlpsim.run(scenarios / name).flows}

    assert verdicts("gen5-8gpu-server.toml") == {
        # gpu4 -> sw1 and sw1 -> gpu5 carry the copy at one rate; each receiver's UpdateFC
        # refresh leaves the egress wire a few DLLPs busier.
        "p2p-in-switch": "sw1-gpu5 down",
        "p2p-across-rc": "rc-sw0 down",
        "h2d-gpu3": "rc-sw0 down",
        "h2d-gpu7": "rc-sw1 down",
    }
    acs = verdicts("gen5-8gpu-acs.toml")
    assert acs["p2p-in-switch"] == acs["p2p-across-rc"] == "rc peer-to-peer forwarding"
    gds = verdicts("gen5-gds-vs-bounce.toml")
    assert gds["gds-nvme0"] == "nvme0 media (read)" and gds["nic-rx"] == "rc-sw0 up"


def test_a_memory_endpoint_paces_the_writes_a_host_makes_into_its_bar():
    result = tlpsim.run(ROOT / "scenarios" / "gpu-bar-through-switch.toml")
    writes, reads = result.flows
    assert writes["target"] == "gpu" and reads["target"] == "gpu"
    # write_rate = "4GB/s": 32 Gb/s of payload, and the verdict names the memory.
    assert writes["throughput_gbps"] == pytest.approx(32.0, rel=0.01)
    assert writes["bottleneck"]["resource"] == "gpu memory (write)"
    assert reads["bytes"] > 0 and result.to_dict()["audit"]["passed"]


def test_a_gpu_copies_both_ways_and_the_cli_prints_each_direction_in_gb_per_s(cli, cli_json):
    gpu = ROOT / "scenarios" / "gpu-h2d-d2h-gen5.toml"
    proc = cli("run", str(gpu))
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    out = " ".join(proc.stdout.split())
    assert "GPU copies (nvbandwidth's GB/s)" in out
    assert "copy.h2d" in out and "copy.d2h" in out
    flows = {f["name"]: f for f in cli_json("run", str(gpu))["flows"]}
    h2d, d2h = flows["copy.h2d"], flows["copy.d2h"]
    assert (h2d["memcpy"], d2h["memcpy"]) == ("h2d", "d2h")
    for f in (h2d, d2h):
        assert f["memcpy_gbytes_per_s"] == pytest.approx(f["throughput_gbps"] / 8)
        assert f"{f['memcpy_gbytes_per_s']:.2f}" in proc.stdout
    # Both ways at once: each direction close to Gen5 x16's closed form, less the other's
    # requests and DLLPs on its wire.
    bw = tlpsim.link_bandwidth(5, 16, mps=256, payload=1 << 20, dllp="none", completion="mps")
    assert 0.9 * bw.read_gbps < h2d["throughput_gbps"] < 1.01 * bw.read_gbps
    assert 0.9 * bw.write_gbps < d2h["throughput_gbps"] < 1.01 * bw.write_gbps
    # A flow of another kind has no memcpy fields.
    assert "memcpy" not in cli_json("run", str(EXAMPLE))["flows"][0]


def test_same_seed_same_json(tmp_path):
    a = tlpsim.run(EXAMPLE).to_dict()
    b = tlpsim.run(EXAMPLE).to_dict()
    a.pop("wall_s"), b.pop("wall_s")
    assert json.dumps(a) == json.dumps(b)


def test_every_flow_has_both_latencies_with_every_percentile(cli_json):
    flow = cli_json("run", str(EXAMPLE))["flows"][0]
    first, transfer = flow["latency_ns"], flow["transfer_latency_ns"]
    assert set(first) == set(transfer) == LATENCY_KEYS
    assert flow["requests"] > flow["transfers"] > 0
    for s in (first, transfer):
        assert s["p50"] <= s["p95"] <= s["p99"] <= s["p99_9"] <= s["max"]
    # 4 KiB transfers of eight 512 B requests: the last byte comes after the first by at least
    # the wire time of the other 3.5 KiB of data (2 bytes per ns at Gen1 x8).
    assert all(transfer[k] >= first[k] for k in LATENCY_KEYS)
    assert transfer["mean"] > first["mean"] + 7 * 512 / 2
    row = tlpsim.run(EXAMPLE).to_pandas().iloc[0]
    for name in ("latency_ns", "transfer_latency_ns"):
        assert all(f"{name}_{k}" in row.index for k in LATENCY_KEYS)
    assert row["transfer_latency_ns_p99_9"] == transfer["p99_9"]


def test_to_pandas():
    r = tlpsim.run(EXAMPLE)
    flows = r.to_pandas()
    assert list(flows["name"]) == ["reads"] and "latency_ns_p99" in flows.columns
    links = r.to_pandas("links")
    assert len(links) == 6 and set(links["direction"]) == {"up", "down"}


BASE = EXAMPLE.read_text()

BAD = [
    (BASE.replace("seed = 7", "seed = 7\nspeed = 3"), ["line 6", "unknown field `speed`"]),
    (BASE.replace('between = ["sw2", "ex"]', 'between = ["sw2", "nic"]'), ['"nic"', "known nodes", "[[link]] 3"]),
    (
        BASE.replace('width = 8\n\n[[link]]\nbetween = ["sw2"', 'width = 3\n\n[[link]]\nbetween = ["sw2"'),
        ["width 3 is not allowed", "1, 2, 4, 8, 12, 16, 32"],
    ),
    (BASE.replace("mps = 128", "mps = 100"), ["[pcie]", "mps 100 is not allowed", "128, 256"]),
    (BASE.replace('between = ["rc", "sw1"]', 'between = ["sw2", "sw1"]'), ["loop", "tree"]),
    (BASE + '\n[[link]]\nbetween = ["sw1", "ex"]\n', ['"ex" already has an upstream link']),
    (
        BASE.replace('endpoint = "ex"', 'endpoint = "exerciser"'),
        ["[[workload]] 1 (reads)", '"exerciser" is not a node'],
    ),
    (
        BASE.replace('direction = "read"', 'direction = "sideways"'),
        ['direction "sideways" is not allowed', "read, write, both"],
    ),
    (BASE.replace('transfer_size = "4KiB"', 'transfer_size = "4 parsecs"'), ["transfer_size", "KiB"]),
    (
        BASE.replace('latency = "150ns"', "latency = 150", 1),
        ["line 19 (`latency = 150`)", "invalid type", "in quotes with its unit", '"150ns"'],
    ),
    (BASE.replace("seed = 7", "seed = -7"), ["seed = -7", "a whole number of 0 or more"]),
    (BASE.replace("mps = 128", 'mps = "128"'), ["a whole number without quotes"]),
    (BASE.replace("mps = 128", "mps = 128\nber = 2e-3"), ["ber 0.002 is not allowed", "0 to 1e-3"]),
    (
        BASE.replace("mps = 128", 'mps = 128\nack = "sometimes"'),
        ["[pcie]", 'ack "sometimes" is not allowed', "timer, immediate"],
    ),
    (
        BASE.replace('latency = "150ns"', 'latency = "150ns"\narbitration = "fifo"', 1),
        ['arbitration "fifo" is not allowed', "round-robin, weighted, oldest"],
    ),
    (BASE.replace('kind = "dma"', 'kind = "nic"', 1), ['"ex" is a NIC', 'kind = "bridge"']),
    (BASE.replace("memory_read_latency", 'memory_bandwidth = "1e-9B/s"\nmemory_read_latency', 1), ["at least 1KB/s"]),
    ("", ["no [[root_complex]]", "scenarios/"]),
    ("# nothing here\n[simulation]\n", ["no [[root_complex]]"]),
    (BASE[: BASE.index("[[workload]]")], ["no [[workload]]", "nothing would move"]),
]


@pytest.mark.parametrize(("text", "needles"), BAD)
def test_bad_files_get_one_clear_line(tmp_path, cli, text, needles):
    path = tmp_path / "bad.toml"
    path.write_text(text)
    with pytest.raises(tlpsim.ScenarioError) as e:
        tlpsim.load_scenario(path)
    message = str(e.value)
    assert message.startswith(str(path)), message
    for n in needles:
        assert n in message, message
    proc = cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert proc.stderr.startswith("tlpsim: error: ")


def test_missing_file_and_text_source(tmp_path, cli):
    with pytest.raises(tlpsim.ScenarioError, match="cannot read"):
        tlpsim.load_scenario(tmp_path / "nope.toml")
    proc = cli("run", str(tmp_path / "nope.toml"))
    assert proc.returncode == 2 and "cannot read the file" in proc.stderr
    s = tlpsim.load_scenario(BASE)
    assert s.origin == "<text>" and s.nodes == ["rc", "sw1", "sw2", "ex"]
    # A mistyped path is a path, not TOML text.
    for name in ["scenarios/t5220-two-switches.tom", "my_scenario", str(tmp_path)]:
        with pytest.raises(tlpsim.ScenarioError, match=f"^{name}: cannot read the file"):
            tlpsim.load_scenario(name)
    with pytest.raises(tlpsim.ScenarioError, match=r"^<text>: the scenario has no \[\[root_complex\]\]"):
        tlpsim.load_scenario("")


def test_the_largest_ber_allowed_loads():
    s = tlpsim.load_scenario(BASE.replace("mps = 128", "mps = 128\nber = 1e-3"))
    assert s.nodes == ["rc", "sw1", "sw2", "ex"]


def test_credits_that_could_only_deadlock_are_a_message_at_load(cli, tmp_path):
    # 4 PD credits hold 64 B, less than one MPS-sized (128 B) write: refused before running.
    text = BASE.replace('kind = "dma"\n\n[[link]]', 'kind = "dma"\ncredits = { nph = 1, ph = 1, pd = 4 }\n\n[[link]]')
    text = text.replace('direction = "read"', 'direction = "write"')
    path = tmp_path / "dl.toml"
    path.write_text(text.replace('endpoint = "ex"', 'endpoint = "rc"\ntarget = "ex"'))
    with pytest.raises(tlpsim.ScenarioError, match="credits.pd 4 is not allowed; allowed: at least 8"):
        tlpsim.run(path)
    proc = cli("run", str(path))
    assert proc.returncode != 0 and "credits.pd 4" in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def long_example(duration: str) -> str:
    """The example scenario run for `duration` of simulated time."""
    return BASE.replace('duration = "200us"', f'duration = "{duration}"', 1)


def test_progress_rises_to_one_and_an_exception_in_it_stops_the_run():
    text = long_example("12ms")
    seen: list[float] = []
    plain = tlpsim.run(text)
    reported = tlpsim.run(text, progress=seen.append)
    assert len(seen) >= 3 and seen == sorted(seen) and seen[-1] == 1.0, seen
    assert reported.flows == plain.flows and reported.events == plain.events

    class Enough(Exception):
        pass

    def stop(fraction: float) -> None:
        raise Enough(fraction)

    with pytest.raises(Enough):
        tlpsim.run(text, progress=stop)


def test_ctrl_c_stops_a_long_run_with_one_line(tmp_path, interrupt):
    path = tmp_path / "long.toml"
    path.write_text(long_example("2s"))
    proc, took = interrupt("run", str(path))
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.startswith("tlpsim: interrupted after ") and "us simulated" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "" and took < 15


def test_cli_run_formats(cli, cli_json):
    d = cli_json("run", str(EXAMPLE))
    assert d["flows"][0]["name"] == "reads" and d["audit"]["passed"]
    proc = cli("run", str(EXAMPLE), "--format", "csv")
    assert proc.returncode == 0 and proc.stdout.startswith("kind,name,direction")
    proc = cli("run", str(EXAMPLE))
    assert proc.returncode == 0 and "audit passed" in proc.stdout and "sw2-ex" in proc.stdout


def test_a_flow_with_no_completed_read_shows_no_latency(tmp_path, cli, cli_json):
    # Reads slower than the run: latency is null in JSON and a dash in the table, not 0 ns.
    path = tmp_path / "slow.toml"
    path.write_text(BASE.replace('memory_read_latency = "500ns"', 'memory_read_latency = "1ms"'))
    flow = cli_json("run", str(path))["flows"][0]
    nothing = dict.fromkeys(LATENCY_KEYS)
    assert flow["bytes"] == 0 and flow["latency_ns"] == nothing and flow["transfer_latency_ns"] == nothing
    assert (flow["requests"], flow["transfers"]) == (0, 0)
    flows = tlpsim.run(path).to_pandas()
    assert flows["latency_ns_mean"].isna().all() and flows["transfer_latency_ns_p99"].isna().all()
    table = cli("run", str(path)).stdout
    row = next(line for line in table.splitlines() if "reads" in line and "│" in line)
    # After Gb/s and GB/s: first byte mean, p50, p99, max; transfer p50, p99.
    assert [c.strip() for c in row.split("│")[6:12]] == ["-"] * 6


MEMORY_BOUND = """
[simulation]
duration = "100us"
warmup = "10us"
[pcie]
mps = 128
[[root_complex]]
name = "rc"
memory_read_latency = "500ns"
memory_bandwidth = "1GB/s"
[[endpoint]]
name = "ep"
kind = "dma"
[[link]]
between = ["rc", "ep"]
width = 8
[[workload]]
name = "reads"
kind = "dma"
endpoint = "ep"
direction = "read"
transfer_size = "4KiB"
outstanding = 16
"""


def test_each_flow_names_its_bottleneck(tmp_path, cli, cli_json):
    r = tlpsim.run(MEMORY_BOUND)
    b = r.flows[0]["bottleneck"]
    assert (b["kind"], b["resource"]) == ("memory", "rc memory") and b["busy"] > 0.99
    assert "1.000 GB/s" in b["detail"]
    resources = r.to_pandas("resources")
    assert list(resources["name"]) == ["rc memory"] and resources["busy"][0] > 0.99
    assert r.to_pandas()["bottleneck_kind"][0] == "memory"
    # A link-bound run names a link direction that carries the completions (all three carry
    # them at one rate; which is busiest is a matter of a few DLLPs, e.g. UpdateFC refreshes).
    b = tlpsim.run(EXAMPLE).flows[0]["bottleneck"]
    assert b["kind"] == "link" and b["resource"] in {"rc-sw1 down", "sw1-sw2 down", "sw2-ex down"}
    path = tmp_path / "memory.toml"
    path.write_text(MEMORY_BOUND)
    proc = cli("run", str(path))
    assert proc.returncode == 0 and "reads: limited by memory (rc memory)" in proc.stdout, proc.stdout
    assert "other resources" in proc.stdout
    assert cli_json("run", str(path))["flows"][0]["bottleneck"]["kind"] == "memory"
    rows = cli("run", str(path), "--format", "csv").stdout.splitlines()
    assert "bottleneck_kind" in rows[0] and rows[-1].startswith("resource,rc memory,")


NFP_LIKE = """
[simulation]
duration = "60us"
warmup = "10us"
[pcie]
gen = 3
mps = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "nfp"
kind = "dma"
dma_engines = 1
request_cost = { read = "15ns", write = "17ns" }
transfer_cost = { write = "4.1ns" }
[[link]]
between = ["rc", "nfp"]
width = 8
[[workload]]
name = "bw-dma-wr"
kind = "dma"
endpoint = "nfp"
direction = "write"
transfer_size = "64B"
window = "8KiB"
pattern = "random"
"""


def test_a_dma_engines_request_rate_limits_small_writes(cli, tmp_path):
    # One write engine: 4.1 + 17 ns per 64 B transfer is 47.4 M/s, pcie-bench's NFP-6000 rate.
    r = tlpsim.run(NFP_LIKE)
    flow = r.flows[0]
    assert flow["throughput_gbps"] == pytest.approx(64 * 8 / 21.1, rel=0.002)
    assert (flow["bottleneck"]["kind"], flow["bottleneck"]["resource"]) == ("dma_engines", "nfp write engines")
    resources = r.to_pandas("resources")
    assert list(resources["kind"]) == ["dma_engines", "dma_engines"]
    # The same stream alternating with reads keeps its writes' rate and adds the reads'.
    alternate = 'direction = "alternate"\noutstanding = 64'
    both = tlpsim.run(NFP_LIKE.replace('direction = "write"', alternate))
    assert both.flows[0]["throughput_gbps"] == pytest.approx(2 * flow["throughput_gbps"], rel=0.01)
    path = tmp_path / "nfp.toml"
    path.write_text(NFP_LIKE.replace('pattern = "random"', 'pattern = "diagonal"'))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and 'pattern "diagonal" is not allowed; allowed: sequential, random' in proc.stderr


def test_schema_comes_from_the_core_types(cli):
    schema = tlpsim.schema()
    assert {"simulation", "pcie", "root_complex", "switch", "endpoint", "link", "workload"} <= schema[
        "properties"
    ].keys()
    link = schema["$defs"]["LinkSection"]
    assert "width" in link["properties"] and link["additionalProperties"] is False
    proc = cli("schema")
    assert proc.returncode == 0 and json.loads(proc.stdout) == schema


@settings(max_examples=25, deadline=None)
@given(
    gen=st.integers(1, 6),
    width=st.sampled_from([1, 2, 4, 8, 16]),
    mps=st.sampled_from([128, 256, 512]),
    direction=st.sampled_from(["read", "write", "both"]),
    forwarding=st.sampled_from(["cut-through", "store-and-forward"]),
    ph=st.integers(1, 64),
    ber=st.sampled_from([0.0, 1e-7]),
)
def test_any_small_tree_passes_the_audit_within_link_capacity(gen, width, mps, direction, forwarding, ph, ber):
    text = f"""
[simulation]
duration = "30us"
warmup = "5us"
[pcie]
mps = {mps}
ber = {ber}
[[root_complex]]
name = "rc"
[[switch]]
name = "sw"
forwarding = "{forwarding}"
credits = {{ ph = {ph}, pd = {max(ph * 8, mps // 16)} }}
[[endpoint]]
name = "a"
kind = "dma"
[[endpoint]]
name = "b"
kind = "dma"
[[link]]
between = ["rc", "sw"]
gen = {gen}
width = {width}
[[link]]
between = ["sw", "a"]
gen = {gen}
width = {width}
[[link]]
between = ["sw", "b"]
gen = 1
width = 1
[[workload]]
name = "a"
kind = "dma"
endpoint = "a"
direction = "{direction}"
transfer_size = "8KiB"
[[workload]]
name = "b"
kind = "dma"
endpoint = "b"
direction = "{direction}"
transfer_size = "1KiB"
"""
    r = tlpsim.run(text)
    assert r.audit["passed"], r.audit
    cap = tlpsim.link_bandwidth(gen, width, mps=mps).encoded_gbps
    assert sum(f["throughput_gbps"] for f in r.flows) <= 2 * cap
    for link in r.links:
        assert 0 <= link["utilization"] <= 1 and 0 <= link["credit_stall_fraction"] <= 1


NTB_SCENARIO = ROOT / "scenarios" / "ntb-four-endpoints-to-root.toml"


def test_ntb_doorbells_interrupt_the_receiving_host(tmp_path, cli):
    """ep1 streams 1536-byte frames into ep2's memory, ringing ep2's NTB doorbell per frame."""
    text = NTB_SCENARIO.read_text()
    text = text[: text.index("[[workload]]")] + (
        '[[workload]]\nname = "ep1-to-ep2"\nkind = "dma"\nendpoint = "ep1"\ntarget = "ep2"\n'
        'direction = "write"\ntransfer_size = "1536B"\ntlp_payload = "64B"\ndoorbell_every = 1\n'
    )
    r = tlpsim.run(tlpsim.load_scenario(text)).to_dict()
    assert r["audit"]["passed"] and r["audit"]["order_violations"] == 0
    flow = r["flows"][0]
    frames = flow["bytes"] // 1536
    assert abs(flow["interrupts"] - frames) <= 2 and frames > 100
    # The root processor's NTB has no domain below it to interrupt: one clear line.
    path = tmp_path / "bad.toml"
    path.write_text(text.replace('target = "ep2"', 'target = "rp"'))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "doorbell_every" in proc.stderr and "non-transparent bridge" in proc.stderr


def test_ntb_windows_translate_an_address_into_another_hosts_memory(tmp_path, cli):
    """ep1 writes 0xC000_1000: nt1 and nt2 translate it into ep2's memory (the CLI shows how)."""
    scenario = NTB_SCENARIO.parent / "ntb-windows.toml"
    proc = cli("run", str(scenario))
    assert proc.returncode == 0, proc.stderr
    assert "0xc0001000 -> nt1 -> 0xa0001000 -> nt2 -> 0x10001000 (ep2)" in proc.stdout
    flow = tlpsim.run(tlpsim.load_scenario(scenario)).to_dict()["flows"][0]
    assert flow["target"] == "ep2" and flow["bytes"] > 0
    # An address no window claims is the writer's own memory: one line naming the windows.
    path = tmp_path / "bad.toml"
    path.write_text(scenario.read_text().replace('"0xC000_1000"', '"0xB000_0000"'))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "own memory" in proc.stderr and "0xc0000000..0xd0000000" in proc.stderr


def test_a_run_can_be_traced_for_perfetto(tmp_path, cli):
    path = tmp_path / "trace.json"
    plain = tlpsim.run(EXAMPLE).to_dict()
    traced = tlpsim.run(EXAMPLE, trace=path, trace_limit=500).to_dict()
    plain.pop("wall_s"), traced.pop("wall_s")
    assert plain == traced  # tracing changes no result
    doc = json.loads(path.read_text())
    slices = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    tracks = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"}
    assert len(slices) == 500 and doc["dropped"] > 0 and doc["displayTimeUnit"] == "ns"
    assert tracks[1] == "rc-sw1 down" and len(tracks) == 6
    assert {e["cat"] for e in slices} <= {"tlp", "dllp", "replay"}
    assert any(e["name"] == "MRd 512 B" and e["args"]["flow"] == "reads" for e in slices)
    out = tmp_path / "cli.json"
    proc = cli("run", str(EXAMPLE), "--trace", str(out), "--trace-limit", "50")
    assert proc.returncode == 0 and f"wrote {out}" in proc.stderr, proc.stderr
    assert len([e for e in json.loads(out.read_text())["traceEvents"] if e["ph"] == "X"]) == 50
    proc = cli("run", str(EXAMPLE), "--trace", str(out), "--trace-limit", "0")
    assert proc.returncode == 2 and "trace-limit" in proc.stderr and "Traceback" not in proc.stderr
    proc = cli("run", str(EXAMPLE), "--trace", str(tmp_path / "no" / "such.json"))
    assert proc.returncode == 2 and "folder" in proc.stderr and "does not exist" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == ""  # refused before the run
    with pytest.raises(tlpsim.ConfigError, match="trace_limit"):
        tlpsim.run(EXAMPLE, trace=path, trace_limit=0)


#: Values a user might mistype into any key: wrong types, signs, units, sizes, overflows.
MANGLED_VALUES = [
    "0",
    "-1",
    "3",
    "1e308",
    "nan",
    "inf",
    '"-5ns"',
    '"abc"',
    '""',
    '"1fs"',
    '"3B"',
    "18446744073709551616",
    "4294967296",
    '"0GB/s"',
    '"1TB/s"',
    "true",
    "[]",
    "{}",
]
#: Keys a user might add in the wrong section.
STRAY_KEYS = ["mps", "width", "latency", "credits", "ber", "outstanding", "tags", "memory_bandwidth"]


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_a_mangled_scenario_runs_and_passes_its_audit_or_gets_one_clear_line(data):
    """Never a panic or a traceback for a user mistake: edit, drop, copy or add lines of
    the example scenarios at random; each result either runs and passes its self-audit or
    is refused with tlpsim's one-line error."""
    source = data.draw(st.sampled_from(sorted((ROOT / "scenarios").glob("*.toml"))), label="scenario")
    lines = source.read_text().splitlines()
    for _ in range(data.draw(st.integers(1, 3), label="edits")):
        i = data.draw(st.integers(0, len(lines) - 1), label="line")
        edit = data.draw(st.sampled_from(["value", "drop", "copy", "stray"]), label="edit")
        if edit == "value" and "=" in lines[i] and not lines[i].lstrip().startswith("["):
            lines[i] = lines[i].split("=")[0] + "= " + data.draw(st.sampled_from(MANGLED_VALUES), label="value")
        elif edit == "drop":
            del lines[i]
        elif edit == "copy":
            lines.insert(data.draw(st.integers(0, len(lines)), label="to"), lines[i])
        elif edit == "stray":
            key, value = data.draw(st.sampled_from(STRAY_KEYS)), data.draw(st.sampled_from(MANGLED_VALUES))
            lines.insert(i, f"{key} = {value}")
        if not lines:
            lines = [""]
    # Short runs: the point is what the loader and the engine make of the edits.
    text = "\n".join(lines) + "\n"
    text = re.sub(r'(?m)^duration\s*=\s*"[^"]*"', 'duration = "20us"', text)
    text = re.sub(r'(?m)^warmup\s*=\s*"[^"]*"', 'warmup = "2us"', text)
    try:
        r = tlpsim.run(text)
    except (tlpsim.ConfigError, tlpsim.SimulationError) as e:
        message = str(e).strip()
        assert message and "\n" not in message, repr(message)
    else:
        assert r.audit["passed"], r.audit


def test_idle_resources_are_counted_not_drawn_in_the_table(cli, cli_json, tmp_path):
    # 65,536 idle host bridges took 14 s to draw, one row each; JSON and CSV keep them all.
    bridges = "".join(f'[[host_bridge]]\nname = "hb{i}"\nbandwidth = "2GB/s"\nlatency = "100ns"\n' for i in range(200))
    path = tmp_path / "bridges.toml"
    path.write_text(
        '[simulation]\nduration = "2us"\n[[root_complex]]\nname = "rc"\nhost_bridge = "hb0"\n'
        '[[endpoint]]\nname = "ep"\nkind = "dma"\n[[link]]\nbetween = ["rc", "ep"]\nwidth = 8\n'
        '[[workload]]\nname = "w"\nkind = "dma"\nendpoint = "ep"\ndirection = "read"\n'
        'transfer_size = "4KiB"\n' + bridges
    )
    proc = cli("run", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "hb0 host bridge" in proc.stdout and "hb1 host bridge" not in proc.stdout
    assert "199 more resources idle (busy 0 %), not shown; --format json or csv lists all" in proc.stdout
    assert len(cli_json("run", str(path))["resources"]) == 200
