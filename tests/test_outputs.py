"""Files the CLI writes: never an input, never an existing file without --force, never half
a file (written to a temporary file, fsynced, renamed)."""

import errno
import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

import tlpsim
from tlpsim import ConfigError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "t5220-two-switches.toml"
LSPCI = sorted((ROOT / "data" / "pcie-bench").glob("*/sys-lspci.txt"))


@pytest.fixture
def scenario(tmp_path) -> Path:
    path = tmp_path / "s.toml"
    shutil.copy(EXAMPLE, path)
    return path


def test_a_trace_never_overwrites_the_scenario(cli, scenario):
    before = scenario.read_bytes()
    proc = cli("run", str(scenario), "--trace", str(scenario), "--force")
    assert proc.returncode == 2
    assert "would overwrite the input" in proc.stderr and proc.stderr.count("\n") == 1
    assert scenario.read_bytes() == before


def test_a_trace_through_a_symlink_to_the_scenario_is_refused(cli, scenario, tmp_path):
    link = tmp_path / "trace.json"
    link.symlink_to(scenario)
    before = scenario.read_bytes()
    proc = cli("run", str(scenario), "--trace", str(link))
    assert proc.returncode == 2
    assert scenario.read_bytes() == before


def test_an_existing_output_needs_force(cli, scenario, tmp_path):
    trace = tmp_path / "t.json"
    trace.write_text("keep me")
    proc = cli("run", str(scenario), "--trace", str(trace))
    assert proc.returncode == 2
    assert "exists: add --force" in proc.stderr
    assert trace.read_text() == "keep me"
    proc = cli("run", str(scenario), "--trace", str(trace), "--force")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(trace.read_text())["traceEvents"]


def test_force_replaces_a_symlink_and_leaves_its_target(cli, scenario, tmp_path):
    other = tmp_path / "other.txt"
    other.write_text("not mine")
    link = tmp_path / "t.json"
    link.symlink_to(other)
    proc = cli("run", str(scenario), "--trace", str(link), "--force")
    assert proc.returncode == 0, proc.stderr
    assert other.read_text() == "not mine"
    assert not link.is_symlink() and json.loads(link.read_text())["traceEvents"]


def test_a_full_disk_leaves_the_old_file_and_no_temporary(scenario, tmp_path, monkeypatch):
    trace = tmp_path / "t.json"
    trace.write_text("old")

    def full(fd):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(ConfigError, match="cannot write the trace: No space left on device"):
        tlpsim.run(tlpsim.load_scenario(scenario), trace=trace)
    assert trace.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "t.json"]


@pytest.mark.skipif(not LSPCI, reason="no lspci sample in data/pcie-bench")
def test_import_lspci_output_needs_force_and_never_overwrites_its_input(cli, tmp_path):
    source = tmp_path / "lspci.txt"
    shutil.copy(LSPCI[0], source)
    before = source.read_bytes()
    assert cli("import", "lspci", str(source), "-o", str(source), "--force").returncode == 2
    assert source.read_bytes() == before
    out = tmp_path / "s.toml"
    assert cli("import", "lspci", str(source), "-o", str(out)).returncode == 0
    assert cli("import", "lspci", str(source), "-o", str(out)).returncode == 2
    assert cli("import", "lspci", str(source), "-o", str(out), "--force").returncode == 0
    tlpsim.load_scenario(out)


def test_a_truncated_trace_says_so(cli, scenario, tmp_path):
    trace = tmp_path / "t.json"
    proc = cli("run", str(scenario), "--trace", str(trace), "--trace-limit", "100")
    assert proc.returncode == 0, proc.stderr
    dropped = json.loads(trace.read_text())["dropped"]
    assert dropped > 0
    assert f"truncated, the first 100 packets kept, {dropped:,} later ones dropped" in " ".join(proc.stderr.split())
    whole = tmp_path / "whole.json"
    proc = cli("run", str(scenario), "--trace", str(whole))
    assert "truncated," not in proc.stderr


def test_a_trace_streams_to_its_file_and_ctrl_c_leaves_neither_it_nor_a_temporary(interrupt, scenario, tmp_path):
    # The trace goes to a temporary file beside the target as the run goes (it was built in
    # memory: 3.5 GB for a 1.25 GB file) and replaces the target only when whole.
    trace = tmp_path / "t.json"

    def streaming() -> bool:
        # Ctrl-C once the temporary file has grown past 1 MiB: the trace is on its way to disk.
        return any(p.name != "s.toml" and p.stat().st_size > 1 << 20 for p in tmp_path.iterdir())

    proc, _ = interrupt(
        "run",
        str(scenario),
        "--set",
        "simulation.duration=10s",
        "--trace",
        str(trace),
        "--trace-limit",
        "1000000000",
        until=streaming,
    )
    assert proc.returncode == 130, proc.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml"]


def test_a_streamed_trace_is_whole_json_with_every_packet_of_a_short_run(scenario, tmp_path):
    trace = tmp_path / "t.json"
    result = tlpsim.run(tlpsim.load_scenario(scenario), trace=trace)
    data = json.loads(trace.read_text())
    sent = sum(link["tlps"] + link["replays"] + link["dllps"] for link in result.links)
    slices = [e for e in data["traceEvents"] if e["ph"] == "X"]
    # No warmup in the count: the trace holds the whole run, the links the measured part.
    assert data["dropped"] == 0 and len(slices) >= sent > 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.toml", "t.json"]


#: Every command that writes a file, as (argv, the input its output is made to be): each
#: builder gets the temporary folder, the scenario, and the output path to use.
def _writers(tmp_path: Path, scenario: Path) -> dict[str, tuple[Callable[[Path], list[str]], Path]]:
    lspci = tmp_path / "lspci.txt"
    shutil.copy(LSPCI[0], lspci)
    tree = tmp_path / "tree.txt"
    tree.write_text("-[0000:00]---00.0  Intel Corporation Device 0000\n")
    bench = tmp_path / "bench"
    shutil.copytree(LSPCI[0].parent, bench)
    sweep = ["sweep", str(scenario), "--set", "pcie.mps=128,256", "--jobs", "1"]
    return {
        "run --trace": (lambda out: ["run", str(scenario), "--trace", str(out), "--force"], scenario),
        "sweep -o --force": (lambda out: [*sweep, "-o", str(out), "--force"], scenario),
        "sweep -o --resume": (lambda out: [*sweep, "-o", str(out), "--resume"], scenario),
        "import lspci -o": (lambda out: ["import", "lspci", str(lspci), "-o", str(out), "--force"], lspci),
        "import lspci --tree -o": (
            lambda out: ["import", "lspci", str(lspci), "--tree", str(tree), "-o", str(out), "--force"],
            tree,
        ),
        "fit -o": (lambda out: ["fit", str(bench), "-o", str(out), "--force"], bench / "sys-lspci.txt"),
        "fit --report": (
            lambda out: ["fit", str(bench), "--report", str(out.parent), "--force"],
            bench / "bw_dma_sz_sweep.txt",
        ),
    }


WRITERS = ["run --trace", "sweep -o --force", "sweep -o --resume", "import lspci -o", "import lspci --tree -o",
           "fit -o", "fit --report"]  # fmt: skip


@pytest.mark.skipif(not LSPCI, reason="no pcie-bench sample in data/pcie-bench")
@pytest.mark.parametrize("how", ["same path", "symlink", "hard link"])
@pytest.mark.parametrize("command", WRITERS)
def test_no_writing_command_overwrites_an_input_even_with_force(cli, scenario, tmp_path, command, how):
    argv, victim = _writers(tmp_path, scenario)[command]
    folder = tmp_path / "out"
    folder.mkdir()
    # fit --report writes report.md in the folder it is given: that file is the one made an input.
    out = folder / ("report.md" if command == "fit --report" else "out.txt")
    if how == "same path":
        if command == "fit --report":
            pytest.skip("a report folder is never a file; its report.md is linked instead")
        out = victim
    elif how == "symlink":
        out.symlink_to(victim)
    else:
        os.link(victim, out)
    before = victim.read_bytes()
    proc = cli(*argv(out))
    assert proc.returncode == 2, proc.stderr
    assert "would overwrite the input" in proc.stderr and proc.stderr.count("\n") == 1, proc.stderr
    assert victim.read_bytes() == before


def test_the_sweep_function_never_writes_its_points_over_the_scenario(scenario):
    before = scenario.read_bytes()
    with pytest.raises(ConfigError, match="would overwrite the input"):
        tlpsim.sweep(scenario, {"pcie.mps": [128, 256]}, jobs=1, output=scenario, overwrite=True)
    assert scenario.read_bytes() == before
