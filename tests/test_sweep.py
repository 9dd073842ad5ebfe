"""tlpsim sweep: every combination of some scenario values, run in parallel, in order."""

from pathlib import Path

import pytest

import tlpsim
from tlpsim.sweep import split_values

EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "t5220-two-switches.toml"


def test_a_sweep_over_tags_shows_where_reads_stop_being_latency_bound():
    r = tlpsim.sweep(EXAMPLE, {"endpoint.ex.tags": [1, 2, 4, 8, 32]}, jobs=2)
    rows = r.rows
    assert [row["endpoint.ex.tags"] for row in rows] == [1, 2, 4, 8, 32]  # the points' order
    gbps = [row["throughput_gbps"] for row in rows]
    assert gbps == sorted(gbps) and gbps[1] == pytest.approx(2 * gbps[0], rel=0.01)
    assert rows[0]["bottleneck"].startswith("requests") and rows[-1]["bottleneck"].startswith("link")
    assert all(row["audit_passed"] for row in rows)
    # Local processes or one at a time: the same numbers.
    serial = tlpsim.sweep(EXAMPLE, {"endpoint.ex.tags": [1, 2, 4, 8, 32]}, jobs=1)
    assert serial.rows == rows
    frame = r.to_pandas()
    assert list(frame.columns[:2]) == ["endpoint.ex.tags", "flow"] and len(frame) == 5


def test_every_combination_runs():
    # On a real Dask cluster: tests/test_sweep_recovery.py.
    values = {"pcie.mps": [128, 256], "link.sw2-ex.width": [4, 8]}
    local = tlpsim.sweep(EXAMPLE, values)
    assert [(p["pcie.mps"], p["link.sw2-ex.width"]) for p in local.points] == [(128, 4), (128, 8), (256, 4), (256, 8)]
    # An x4 last link halves what the x8 one carries.
    x4, x8 = local.rows[0]["throughput_gbps"], local.rows[1]["throughput_gbps"]
    assert x4 == pytest.approx(x8 / 2, rel=0.02)


def test_bad_keys_and_values_are_refused_before_anything_runs():
    with pytest.raises(tlpsim.ScenarioError, match=r'no \[\[link\]\] named "rc-sw9"'):
        tlpsim.sweep(EXAMPLE, {"pcie.mps": [128], "link.rc-sw9.width": [4]})
    with pytest.raises(tlpsim.ScenarioError, match="mps 100 is not allowed"):
        tlpsim.sweep(EXAMPLE, {"pcie.mps": [128, 100]})
    with pytest.raises(tlpsim.ConfigError, match="non-empty list"):
        tlpsim.sweep(EXAMPLE, {"pcie.mps": "128"})
    with pytest.raises(tlpsim.ConfigError, match="jobs -1 is not allowed"):
        tlpsim.sweep(EXAMPLE, {"pcie.mps": [128]}, jobs=-1)


def test_values_split_on_commas_outside_braces_and_quotes():
    assert split_values("128, 256") == ["128", "256"]
    assert split_values("{ ph = 1, pd = 8 },{ ph = 4, pd = 32 }") == ["{ ph = 1, pd = 8 }", "{ ph = 4, pd = 32 }"]
    assert split_values('"a,b",c') == ['"a,b"', "c"]


def test_cli_sweep(cli):
    proc = cli("sweep", str(EXAMPLE), "--set", "endpoint.ex.tags=1,16", "--format", "csv")
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("endpoint.ex.tags,flow,throughput_gbps") and len(lines) == 3
    proc = cli("sweep", str(EXAMPLE), "--set", "endpoint.ex.tags=1,16")
    assert proc.returncode == 0 and "requests reads read requests" in proc.stdout
    for bad in (
        ["--set", "pcie.mps"],
        ["--set", "link.x-y.width=4"],
        ["--set", "pcie.mps=128", "--scheduler", "tcp://localhost:1"],
        ["--set", "pcie.mps=128", "--set", "pcie.mps=256"],
    ):
        proc = cli("sweep", str(EXAMPLE), *bad)
        assert proc.returncode == 2 and proc.stderr.startswith("tlpsim: error:") and "Traceback" not in proc.stderr, (
            proc.stderr
        )
    proc = cli("sweep", str(EXAMPLE), "--set", "pcie.mps=128", "--set", "pcie.mps=256")
    assert "pcie.mps is given twice" in proc.stderr


def test_ctrl_c_stops_a_sweep_with_one_line(tmp_path, interrupt):
    path = tmp_path / "long.toml"
    path.write_text(EXAMPLE.read_text().replace('duration = "200us"', 'duration = "2s"'))
    proc, took = interrupt("sweep", str(path), "--set", "endpoint.ex.tags=1,2,4,8")
    # One line from the parent; the workers (which got the Ctrl-C too) print nothing.
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr == "tlpsim: interrupted after 0 of 4 points\n" and proc.stdout == ""
    assert took < 15


BRIDGE = """
[simulation]
duration = "3ms"
warmup = "500us"
[pcie]
mps = 128
[[root_complex]]
name = "rc"
[[endpoint]]
name = "nic"
kind = "nic"
interrupt_interval = "50us"
[[link]]
between = ["rc", "nic"]
width = 4
[cpu]
frame_cost = "2us"
[[workload]]
name = "bridge"
kind = "bridge"
endpoint = "nic"
frame_size = 64
load = 0.5
"""


def test_bridging_points_report_what_they_forwarded(tmp_path, cli):
    rows = tlpsim.sweep(BRIDGE, {"workload.bridge.load": [0.05, 0.5]}).rows
    light, heavy = rows
    assert light["frames_dropped"] == 0 and light["bottleneck"].startswith("offered load")
    assert heavy["frames_dropped"] > 0 and heavy["bottleneck"] == "cpu cpu core 0"
    # 2 us a frame on one core: at most 500 k frames/s of 84 B on the wire.
    assert heavy["forwarded_mbps"] == pytest.approx(500e3 * 84 * 8 / 1e6, rel=0.02)
    assert tlpsim.sweep(EXAMPLE, {"pcie.mps": [128]}).rows[0]["forwarded_mbps"] is None
    path = tmp_path / "bridge.toml"
    path.write_text(BRIDGE)
    proc = cli("sweep", str(path), "--set", "workload.bridge.load=0.05,0.5")
    assert proc.returncode == 0 and "forwarded Mb/s" in proc.stdout, proc.stderr


def test_auto_checks_a_few_points_spread_from_the_first_to_the_last():
    from tlpsim.sweep import AUTO_CHECKS, check_points

    assert check_points(5) == [0, 1, 2, 3, 4]
    picked = check_points(1000)
    assert len(picked) == AUTO_CHECKS and picked[0] == 0 and picked[-1] == 999
    gaps = {b - a for a, b in zip(picked, picked[1:], strict=False)}
    assert max(gaps) - min(gaps) <= 1
    assert check_points(3, checks=1) == [0]


def test_sweep_engine_auto_runs_fluid_everywhere_and_the_des_on_a_sample(cli, cli_json):
    gallery = Path(__file__).parent.parent / "scenarios" / "gen5-8gpu-server.toml"
    sizes = ",".join(f"{k}MiB" for k in (1, 2, 4, 8, 16, 32, 64, 128, 256, 512))
    rows = cli_json("sweep", str(gallery), "--set", f"workload.h2d-gpu3.size={sizes}", "--engine", "auto")
    assert {r["simulation.engine"] for r in rows} == {"fluid"}
    checked = [r for r in rows if r["des_throughput_gbps"] is not None]
    # Eight of the ten points, each with all four workloads, the first and the last among them.
    assert len(checked) == 8 * 4
    assert {r["workload.h2d-gpu3.size"] for r in checked} >= {"1MiB", "512MiB"}
    for r in checked:
        want = (r["throughput_gbps"] - r["des_throughput_gbps"]) / r["des_throughput_gbps"] * 100
        assert r["fluid_vs_des_percent"] == pytest.approx(want)
    # Large copies: the fluid engine within 3.1 % of the DES on every workload.
    big = [r for r in checked if r["workload.h2d-gpu3.size"] == "512MiB"]
    assert max(abs(r["fluid_vs_des_percent"]) for r in big) < 3.1
    unchecked = [r for r in rows if r["des_throughput_gbps"] is None]
    assert all(r["fluid_vs_des_percent"] is None for r in unchecked) and len(unchecked) == 2 * 4
    out = cli("sweep", str(gallery), "--set", "workload.h2d-gpu3.size=1MiB,64MiB", "--engine", "auto").stdout
    assert "fluid against the DES at the checked points" in out
    assert "fluid vs DES at 2 points, 8 flows: median |difference|" in out
    # The agreement apart for the flows whose fluid rate rests on estimates and the others.
    assert "2 flows without estimates: median |difference|" in out
    assert "6 flows with estimates: median |difference|" in out
    assert "8 of 8 inside their fluid 90 % bands" in out
    # The simulator's rate at every checked point lies inside the fluid band.
    assert all(r["band_low_gbps"] <= r["des_throughput_gbps"] <= r["band_high_gbps"] for r in checked)
    assert {r["estimate_kinds"] for r in rows if r["flow"] == "p2p-in-switch"} == {""}
    assert all("phases" in r["estimate_kinds"] for r in rows if r["flow"] == "p2p-across-rc")
    # Only a sweep has auto.
    proc = cli("run", str(gallery), "--engine", "auto")
    assert proc.returncode == 2 and "auto" in proc.stderr


def test_estimate_kinds_names_each_kind_once_in_order() -> None:
    from tlpsim.sweep import estimate_kinds

    lines = [
        "queue: shares the FIFO egress queue of rc-sw down by its window, at an estimated delay",
        "shares rc-sw up with r, whose rate is estimated",
        "queue: shares the FIFO egress queue of sw-ep down by its window, at an estimated delay",
    ]
    assert estimate_kinds(lines) == "queue,shares"
    assert estimate_kinds([]) == ""
    # The engine's rule (`fluid::estimates::kind_of`): the first word, a trailing colon off.
    assert estimate_kinds(["queue:x y"]) == "queue:x"
