"""NVMe drives under fio from Python and the CLI: the fio results in every format."""

import csv
import io

import pytest

import tlpsim

#: One Gen3 x4 NVMe drive under a root complex, 4 KiB random reads at depth 8.
SCENARIO = """
[simulation]
duration = "1ms"
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
name = "4k"
kind = "fio"
endpoint = "ssd"
rw = "randread"
bs = "4KiB"
iodepth = 8
numjobs = 2
"""


@pytest.fixture
def scenario(tmp_path):
    path = tmp_path / "nvme.toml"
    path.write_text(SCENARIO)
    return path


def test_fio_results_come_back_with_iops_bandwidth_and_latency(scenario):
    result = tlpsim.run(scenario)
    (fio,) = result.fio
    assert fio["endpoint"] == "ssd" and fio["rw"] == "randread" and fio["iodepth"] == 8
    # 16 I/Os in flight over a latency a little above the media's 60 us.
    assert 16 / 70e-6 < fio["iops"] < 16 / 60e-6
    assert fio["bandwidth_mb_per_s"] == pytest.approx(fio["iops"] * 4096 / 1e6, rel=0.02)
    assert fio["bandwidth_gb_per_s"] == pytest.approx(fio["bandwidth_mb_per_s"] / 1000)
    lat = fio["latency_ns"]
    assert 60_000 < lat["p50"] <= lat["p99"] <= lat["p99_9"] <= lat["max"]
    assert result.flows[0]["bottleneck"]["kind"] == "iodepth"
    assert result.to_dict()["fio"] == result.fio and result.audit["passed"]


def test_the_cli_prints_the_fio_table_json_and_csv(scenario, cli, cli_json):
    proc = cli("run", str(scenario))
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    for needle in ("fio (latency per I/O", "IOPS", "MB/s", "p99.9 us", "randread", "8 x 2", "audit passed"):
        assert needle in proc.stdout, needle
    d = cli_json("run", str(scenario))
    assert {"iops", "bandwidth_mb_per_s", "bandwidth_gb_per_s", "latency_ns", "ios"} <= d["fio"][0].keys()
    proc = cli("run", str(scenario), "--format", "csv")
    rows = list(csv.DictReader(io.StringIO(proc.stdout)))
    (fio,) = [r for r in rows if r["kind"] == "fio"]
    assert float(fio["iops"]) > 0 and float(fio["latency_ns_p99"]) > 60_000


def test_a_bad_fio_key_is_one_line(tmp_path, cli):
    path = tmp_path / "bad.toml"
    path.write_text(SCENARIO.replace("iodepth = 8", "iodepth = 1024"))
    proc = cli("run", str(path))
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert "iodepth" in proc.stderr and "1 to 1023" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_the_schema_lists_the_nvme_and_fio_words():
    schema = tlpsim.schema()
    defs = schema["$defs"]

    def section(name: str, kind: str) -> dict:
        (one,) = [v for v in defs[name]["oneOf"] if v["properties"]["kind"].get("const") == kind]
        return one["properties"]

    nvme = section("EndpointSection", "nvme")
    assert {"queues", "queue_depth", "command_rate", "read_bandwidth", "write_bandwidth"} <= nvme.keys()
    assert {"read_latency", "write_latency", "max_transfer", "tag_bits"} <= nvme.keys()
    assert nvme["queue_depth"]["default"] == 1024 and nvme["read_latency"]["default"] == "80us"
    fio = section("WorkloadSection", "fio")
    assert {"endpoint", "rw", "bs", "iodepth", "numjobs", "target"} <= fio.keys()
    assert set(defs["RwWord"]["enum"]) == {"read", "write", "randread", "randwrite"}
