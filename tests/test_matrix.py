"""tlpsim matrix: nvbandwidth's copy-engine tests, one simulated run per cell."""

import json
import tomllib
from pathlib import Path

import pytest

import tlpsim
from tlpsim.matrix import TESTS, cell_workloads, copy_matrices

SCENARIOS = Path(__file__).resolve().parent.parent / "scenarios"
SERVER = SCENARIOS / "gen5-8gpu-server.toml"  # two switches of four GPUs under one rc
#: A 20 us window (the file's 10 us warmup kept): within 0.03 % of the file's 50 us.
SHORT = {"simulation.duration": "30us"}
GPUS = [f"gpu{i}" for i in range(8)]


def same_switch(i: int, j: int) -> bool:
    """gpu0-3 sit under sw0, gpu4-7 under sw1."""
    return i // 4 == j // 4


@pytest.fixture(scope="module")
def write_matrix():
    (m,) = copy_matrices(SERVER, ["device_to_device_write"], values=SHORT, jobs=2)
    return m


def test_d2d_write_turns_in_the_switch_at_the_link_rate_and_crosses_the_rc_at_its_p2p_rate(write_matrix):
    m = write_matrix
    assert m.rows == GPUS and m.columns == GPUS
    assert [m.matrix[i][i] for i in range(8)] == [None] * 8
    assert [m.verdicts[i][i] for i in range(8)] == [None] * 8
    inside = [m.matrix[i][j] for i in range(8) for j in range(8) if i != j and same_switch(i, j)]
    across = [m.matrix[i][j] for i in range(8) for j in range(8) if not same_switch(i, j)]
    assert len(inside) == 24 and len(across) == 32
    assert len(set(inside)) == 1  # every pair under one switch alike
    # A one-way write carries no DLLPs on its own direction: the closed form's write figure
    # plus its DLLP share (0.6 % at Gen5 x16 MPS 256).
    closed = tlpsim.link_bandwidth(gen=5, width=16, mps=256)
    assert inside[0] == pytest.approx(closed.write_gbytes_per_s, rel=0.01)
    assert inside[0] > closed.write_gbytes_per_s
    assert across == pytest.approx([40.0] * 32, rel=0.002)  # the file's p2p_bandwidth = "40GB/s"
    assert {m.verdicts[0][j]["kind"] for j in (1, 2, 3)} == {"link"}
    # The writer's link up and the peer's link down, equally busy: the verdict names one.
    assert m.verdicts[0][1]["resource"] in ("sw0-gpu0 up", "sw0-gpu1 down")
    assert {m.verdicts[i][j]["resource"] for i in range(8) for j in range(8) if not same_switch(i, j)} == {
        "rc peer-to-peer forwarding"
    }
    assert m.sum == pytest.approx(sum(inside) + sum(across))


def test_host_to_device_has_the_root_complex_as_its_one_row():
    (m,) = copy_matrices(SERVER, ["host_to_device"], values=SHORT, jobs=1)
    assert m.rows == ["rc"] and m.columns == GPUS
    # The file's root complex completes in MPS-sized pieces: the closed form's read figure.
    closed = tlpsim.link_bandwidth(gen=5, width=16, mps=256, mrrs=512, completion="mps")
    assert m.matrix[0] == pytest.approx([closed.read_gbytes_per_s] * 8, rel=0.01)
    assert m.verdicts[0][3] == {
        "kind": "link", "resource": "sw0-gpu3 down", "text": m.verdicts[0][3]["text"]
    }  # fmt: skip


def test_cells_are_the_same_on_one_process_or_two(write_matrix):
    (serial,) = copy_matrices(SERVER, ["device_to_device_write"], values=SHORT, jobs=1)
    assert serial.to_dict() == write_matrix.to_dict()


def test_a_cell_is_its_copy_alone_with_the_right_engines():
    home = {"gpu0": "rc0", "gpu1": "rc1"}
    text, flow = cell_workloads("device_to_device_read", "gpu0", "gpu1", home, "m")
    (w,) = tomllib.loads(text)["workload"]
    assert (w["endpoint"], w["target"], w["direction"], flow) == ("gpu1", "gpu0", "read", "m")
    text, flow = cell_workloads("device_to_device_bidirectional", "gpu0", "gpu1", home, "m")
    there, back = tomllib.loads(text)["workload"]
    assert (there["endpoint"], there["target"], back["endpoint"], back["target"]) == ("gpu0", "gpu1", "gpu1", "gpu0")
    assert flow == "m"
    # Host memory: memory = "..." only where it is not the GPU's own root complex.
    (own,) = tomllib.loads(cell_workloads("host_to_device", "rc0", "gpu0", home, "m")[0])["workload"]
    assert own == {"name": "m", "kind": "memcpy", "endpoint": "gpu0", "direction": "h2d"}
    text, flow = cell_workloads("device_to_host_bidirectional", "gpu0", "rc1", home, "m")
    (other,) = tomllib.loads(text)["workload"]
    assert (other["direction"], other["memory"], flow) == ("both", "rc1", "m.d2h")


def test_the_cell_is_appended_after_whatever_the_file_ends_with():
    # The file ends inside a plain table, with a comment and no newline.
    text = SERVER.read_text().replace('[simulation]\nduration = "50us"\nwarmup = "10us"\nseed = 1\n', "")
    text += '\n[simulation]\nduration = "30us"\nwarmup = "10us" # the window'
    (m,) = copy_matrices(text, ["device_to_host"], jobs=1)
    assert m.rows == GPUS and m.columns == ["rc"] and all(row[0] > 50 for row in m.matrix)


def test_a_workload_already_named_matrix_is_kept_out_of_the_way():
    text = SERVER.read_text().replace('name = "h2d-gpu7"', 'name = "matrix"')
    (m,) = copy_matrices(text, ["host_to_device"], values=SHORT, jobs=1)
    assert m.matrix[0][7] == pytest.approx(57.9, rel=0.01)  # not shared with the file's own copy


def test_cells_a_root_complex_refuses_are_na_with_the_reason():
    text = SERVER.read_text()
    text = text.replace('p2p_bandwidth = "40GB/s"', 'p2p = "refuse"').replace('p2p_latency = "200ns"\n', "")
    start = text.index('[[workload]]\nname = "p2p-across-rc"')
    text = text[:start] + text[text.index("[[workload]]", start + 1) :]
    (m,) = copy_matrices(text, ["device_to_device_read"], values=SHORT, jobs=2)
    assert m.matrix[0][4] is None and m.verdicts[0][4]["kind"] == "refused"
    assert 'p2p = "refuse"' in m.verdicts[0][4]["text"]
    assert m.matrix[0][1] > 50 and m.verdicts[0][1]["kind"] == "link"


def test_cli_table_json_and_csv(cli):
    args = ("matrix", str(SERVER), "--test", "device_to_device_write", "--set", "simulation.duration=30us")
    proc = cli(*args)
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0] == "memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s), device_to_device_write"
    row = next(line for line in lines if line.startswith("│ gpu0"))
    assert row.split("│")[2].strip() == "N/A" and row.split("│")[3].strip() == "57.46"
    assert any(line.startswith("SUM device_to_device_write 2659.") for line in lines)
    proc = cli(*args, "--format", "json", "--jobs", "1")
    data = json.loads(proc.stdout)
    assert list(data) == ["test", "unit", "rows", "columns", "matrix", "sum", "verdicts"]
    assert data["unit"] == "GB/s" and data["matrix"][2][2] is None and data["verdicts"][2][2] is None
    assert data["verdicts"][0][5]["kind"] == "p2p"
    again = cli(*args, "--format", "json", "--jobs", "2")
    assert again.stdout == proc.stdout  # deterministic, whatever the jobs
    proc = cli(*args, "--format", "csv")
    lines = proc.stdout.splitlines()
    assert lines[0] == "test,source,destination,gbytes_per_s,verdict_kind,verdict_resource,verdict_text"
    assert len(lines) == 1 + 56


def test_cli_all_gives_every_test_in_order(cli, tmp_path):
    out = tmp_path / "m.json"
    proc = cli("matrix", str(SERVER), "--set", "simulation.duration=20us", "--format", "json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    data = json.loads(out.read_text())
    assert [d["test"] for d in data] == list(TESTS)
    assert [(len(d["rows"]), len(d["columns"])) for d in data] == [(1, 8), (8, 1)] * 2 + [(8, 8)] * 3
    assert cli("matrix", str(SERVER), "-o", str(out)).returncode == 2  # no --force


@pytest.mark.parametrize(
    ("scenario", "args", "says"),
    [
        ("gpu-h2d-d2h-gen5.toml", ["--test", "device_to_device_write"], "has one GPU (gpu0): the device_to_device"),
        ("t5220-two-switches.toml", [], "has no GPU"),
        ("gen5-8gpu-server.toml", ["--test", "host_to_gpu"], "'host_to_gpu' is not one of 'host_to_device'"),
        ("gen5-8gpu-server.toml", ["--set", "pcie.mps=100"], "mps 100 is not allowed"),
    ],
)
def test_cli_errors_are_one_line(cli, scenario, args, says):
    proc = cli("matrix", str(SCENARIOS / scenario), *args)
    assert proc.returncode == 2 and proc.stdout == ""
    assert proc.stderr.startswith("tlpsim: error: ") and says in proc.stderr
    assert len(proc.stderr.splitlines()) == 1


def test_cli_all_on_one_gpu_runs_the_host_tests(cli):
    proc = cli(
        "matrix", str(SCENARIOS / "gpu-h2d-d2h-gen5.toml"), "--format", "json", "--set", "simulation.duration=30us"
    )
    assert proc.returncode == 0, proc.stderr
    assert [d["test"] for d in json.loads(proc.stdout)] == list(TESTS[:4])
    assert "device_to_device tests are left out" in proc.stderr
