"""A workload's `rate`: the offered-load cap on DMA, memcpy and fio workloads (as fio's)."""

import pytest

import tlpsim

#: A GPU on a Gen5 x16 link copies host memory to itself (about 55.7 GB/s uncapped).
MEMCPY = """
[simulation]
duration = "40us"
warmup = "10us"
[pcie]
mps = 256
mrrs = 512
[[root_complex]]
name = "rc"
memory_read_latency = "600ns"
completion = "mps"
[[endpoint]]
name = "gpu0"
kind = "gpu"
[[link]]
between = ["rc", "gpu0"]
gen = 5
width = 16
[[workload]]
name = "copy"
kind = "memcpy"
endpoint = "gpu0"
direction = "{direction}"
size = "1MiB"
"""

#: A NIC-like DMA engine on a Gen4 x16 link writes (or reads) host memory.
DMA = """
[simulation]
duration = "40us"
warmup = "10us"
[pcie]
mps = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "nic"
kind = "dma"
[[link]]
between = ["rc", "nic"]
gen = 4
width = 16
[[workload]]
name = "nic"
kind = "dma"
endpoint = "nic"
direction = "{direction}"
transfer_size = "4KiB"
outstanding = 8
"""

#: Two fio jobs of 4 KiB random reads at depth 8 on a Gen3 x4 NVMe drive.
FIO = """
[simulation]
duration = "2ms"
warmup = "200us"
[pcie]
mps = 256
[[root_complex]]
name = "rc"
[[endpoint]]
name = "ssd"
kind = "nvme"
command_rate = 500000
read_latency = "60us"
[[link]]
between = ["rc", "ssd"]
gen = 3
width = 4
[[workload]]
name = "fio"
kind = "fio"
endpoint = "ssd"
rw = "{direction}"
bs = "4KiB"
iodepth = 8
numjobs = 2
"""

#: (scenario, direction, workload, streams the rate caps each: both ways, or fio's jobs).
CASES = {
    "memcpy-h2d": (MEMCPY, "h2d", "copy", 1),
    "memcpy-d2h": (MEMCPY, "d2h", "copy", 1),
    "dma-write": (DMA, "write", "nic", 1),
    "dma-read": (DMA, "read", "nic", 1),
    "dma-both": (DMA, "both", "nic", 2),
    "fio-randread": (FIO, "randread", "fio", 2),
    "fio-randwrite": (FIO, "randwrite", "fio", 2),
}


def _run(case: str, rate: str | None = None) -> dict:
    """The one flow of `case`, capped at `rate` (set as --set would) where given."""
    text, direction, name, _ = CASES[case]
    values = {f"workload.{name}.rate": rate} if rate else None
    result = tlpsim.run(tlpsim.load_scenario(text.format(direction=direction), values))
    assert result.audit["passed"], result.audit
    (flow,) = result.flows
    return flow


def _bytes_per_s(flow: dict) -> float:
    return flow["throughput_gbytes_per_s"] * 1e9


@pytest.mark.parametrize("share", [0.3, 0.7])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_rate_below_capacity_is_met_within_one_percent_and_named_the_limit(case, share):
    streams = CASES[case][3]
    uncapped = _bytes_per_s(_run(case))
    rate = share * uncapped / streams
    flow = _run(case, f"{rate / 1e9:.6f}GB/s")
    assert _bytes_per_s(flow) == pytest.approx(rate * streams, rel=0.01)
    verdict = flow["bottleneck"]
    assert (verdict["kind"], verdict["resource"]) == ("rate", f"{CASES[case][2]} rate")
    assert verdict["busy"] >= 0.98 and "held it back" in verdict["detail"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_rate_above_capacity_leaves_the_flow_as_it_runs_uncapped(case):
    uncapped = _run(case)
    rate = 1.5 * _bytes_per_s(uncapped) / CASES[case][3]
    flow = _run(case, f"{rate / 1e9:.6f}GB/s")
    # A paced fio job's first I/Os go out spread over their first microseconds, not at
    # once: the same throughput, with the window's edges elsewhere in the I/Os' rhythm.
    assert _bytes_per_s(flow) == pytest.approx(_bytes_per_s(uncapped), rel=0.01)
    assert flow["bottleneck"]["kind"] == uncapped["bottleneck"]["kind"] != "rate"


def test_memcpy_both_caps_each_direction_and_bits_per_second_read_as_bytes():
    text = MEMCPY.format(direction="both")
    runs = [tlpsim.run(tlpsim.load_scenario(text, {"workload.copy.rate": r})) for r in ("20GB/s", "160Gb/s")]
    assert runs[0].flows == runs[1].flows
    for flow in runs[0].flows:
        assert flow["throughput_gbytes_per_s"] == pytest.approx(20, rel=0.01)
        assert flow["memcpy_gbytes_per_s"] == pytest.approx(20, rel=0.01)
        assert flow["bottleneck"]["kind"] == "rate"


def test_a_rate_in_the_file_runs_the_same_every_time():
    text = DMA.format(direction="read") + 'rate = "10GB/s"\n'
    a, b = (tlpsim.run(text).to_dict() for _ in range(2))
    a.pop("wall_s"), b.pop("wall_s")
    assert a == b


@pytest.mark.parametrize("value", ['"0GB/s"', '"-5GB/s"', '"fast"', '"50GB"', "5"])
@pytest.mark.parametrize("case", ["memcpy-h2d", "dma-write", "fio-randread"])
def test_a_bad_rate_is_one_line_naming_the_key(case, value):
    text, direction, _, _ = CASES[case]
    with pytest.raises(tlpsim.ScenarioError) as e:
        tlpsim.load_scenario(text.format(direction=direction) + f"rate = {value}\n")
    message = str(e.value)
    assert "rate" in message and len(message.splitlines()) == 1, message
    assert "GB/s" in message  # what to write instead


def test_the_cli_sets_the_rate_and_refuses_a_bad_one_in_one_line(tmp_path, cli, cli_json):
    path = tmp_path / "nic.toml"
    path.write_text(DMA.format(direction="write"))
    d = cli_json("run", str(path), "--set", "workload.nic.rate=400Gb/s")
    (flow,) = d["flows"]
    # 400 Gb/s is more than a Gen4 x16 link carries: the link limits it.
    assert flow["bottleneck"]["kind"] == "link"
    d = cli_json("run", str(path), "--set", "workload.nic.rate=80Gb/s")
    assert d["flows"][0]["throughput_gbps"] == pytest.approx(80, rel=0.01)
    assert d["flows"][0]["bottleneck"]["kind"] == "rate"
    proc = cli("run", str(path), "--set", "workload.nic.rate=0Gb/s")
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "rate" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_the_schema_documents_rate_on_dma_memcpy_and_fio_only():
    variants = tlpsim.schema()["$defs"]["WorkloadSection"]["oneOf"]
    with_rate = {v["properties"]["kind"]["const"] for v in variants if "rate" in v["properties"]}
    assert with_rate == {"dma", "memcpy", "fio"}
