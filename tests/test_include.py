"""`include = ["base.toml"]` in scenario files: tables merge with the including file's keys
winning, [[sections]] append, includes nest, and every error names the file it came from."""

import json
from pathlib import Path

import pytest

import tlpsim
from tlpsim import ScenarioError

#: A fabric without a workload: a root complex, a switch and a DMA endpoint.
BASE = """
[simulation]
duration = "20us"
seed = 7

[pcie]
mps = 128
mrrs = 512

[[root_complex]]
name = "rc"

[[switch]]
name = "sw"

[[endpoint]]
name = "ex"
kind = "dma"

[[link]]
between = ["rc", "sw"]
gen = 3
width = 8

[[link]]
between = ["sw", "ex"]
gen = 3
width = 8
"""

#: A workload for BASE's endpoint.
READS = """
[[workload]]
name = "reads"
kind = "dma"
endpoint = "ex"
direction = "read"
transfer_size = "4KiB"
"""


def write(path: Path, text: str) -> Path:
    """Writes `text` to `path`, making its folder."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


@pytest.fixture
def top(tmp_path: Path) -> Path:
    """top.toml: includes base.toml, sets [pcie] mps and adds the workload."""
    write(tmp_path / "base.toml", BASE)
    return write(tmp_path / "top.toml", f'include = ["base.toml"]\n\n[pcie]\nmps = 256\n{READS}')


def test_the_including_file_overrides_a_key_and_keeps_the_rest(top):
    s = tlpsim.load_scenario(top)
    assert s.origin == str(top)
    assert s.nodes == ["rc", "sw", "ex"] and s.workloads == ["reads"]
    doc = s.text
    assert "include" not in doc and "mps = 256" in doc and "mrrs = 512" in doc and "seed = 7" in doc


def test_sections_append_after_the_included_ones(tmp_path):
    write(tmp_path / "base.toml", BASE)
    more = '\n[[endpoint]]\nname = "ex2"\nkind = "dma"\n\n[[link]]\nbetween = ["sw", "ex2"]\n'
    s = tlpsim.load_scenario(write(tmp_path / "top.toml", f'include = ["base.toml"]\n{more}{READS}'))
    assert s.nodes == ["rc", "sw", "ex", "ex2"]
    assert s.links == ["rc-sw", "sw-ex", "sw-ex2"]


def test_includes_nest_each_relative_to_its_own_file(tmp_path):
    write(tmp_path / "parts" / "fabric.toml", BASE)
    write(tmp_path / "parts" / "base.toml", 'include = ["fabric.toml"]\n[simulation]\nseed = 11\n')
    s = tlpsim.load_scenario(write(tmp_path / "top.toml", f'include = ["parts/base.toml"]\n{READS}'))
    assert "seed = 11" in s.text and 'duration = "20us"' in s.text
    # The text kept is self-contained: it loads alone from anywhere.
    assert tlpsim.load_scenario(s.text).nodes == ["rc", "sw", "ex"]


def test_text_includes_from_the_current_directory(tmp_path, monkeypatch):
    write(tmp_path / "base.toml", BASE)
    monkeypatch.chdir(tmp_path)
    s = tlpsim.load_scenario(f'include = ["base.toml"]\n{READS}')
    assert s.origin == "<text>" and s.nodes == ["rc", "sw", "ex"]
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(f'include = ["none.toml"]\n{READS}')
    assert str(e.value).startswith('<text>: include "none.toml": cannot read none.toml: ')
    assert str(e.value).endswith("check the path, which starts at the current directory")


def test_a_cycle_is_one_line_naming_the_chain(tmp_path):
    write(tmp_path / "a.toml", 'include = ["b.toml"]\n')
    write(tmp_path / "b.toml", 'include = ["a.toml"]\n')
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(a)
    assert str(e.value) == (
        f'{b} (included from {a}): include "a.toml" makes a cycle: {a} -> {b} -> {a}; remove one of these includes'
    )


def test_a_missing_file_names_the_including_file_and_the_path(tmp_path):
    top = write(tmp_path / "top.toml", f'include = ["parts/none.toml"]\n{READS}')
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(top)
    msg = str(e.value)
    assert msg.startswith(f'{top}: include "parts/none.toml": cannot read {tmp_path / "parts" / "none.toml"}: ')
    assert msg.endswith("check the path, which starts at this file's directory") and "\n" not in msg


def test_an_error_in_an_included_file_names_that_file_and_its_line(tmp_path):
    base = write(tmp_path / "base.toml", BASE.replace("mps = 128", 'mps = "big"'))
    top = write(tmp_path / "top.toml", f'include = ["base.toml"]\n{READS}')
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(top)
    assert str(e.value).startswith(f'{base} (included from {top}): line 7 (`mps = "big"`): [pcie]: invalid type')


def test_a_build_error_in_an_included_section_names_that_file(tmp_path):
    base = write(tmp_path / "base.toml", BASE.replace("width = 8", "width = 5", 1))
    top = write(tmp_path / "top.toml", f'include = ["base.toml"]\n{READS}')
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(top)
    assert str(e.value).startswith(f"{base} (included from {top}): [[link]] 1 (between rc, sw): width 5")


def test_a_name_used_twice_names_both_files(tmp_path):
    base = write(tmp_path / "base.toml", BASE)
    top = write(tmp_path / "top.toml", f'include = ["base.toml"]\n[[endpoint]]\nname = "ex"\nkind = "dma"\n{READS}')
    with pytest.raises(ScenarioError) as e:
        tlpsim.load_scenario(top)
    assert str(e.value) == (
        f'{top}: [[endpoint]] 1 (ex): the node name "ex" is used twice; the first is [[endpoint]] 1 (ex) in {base}'
    )


def test_tlpsim_run_runs_an_including_file(cli, top):
    proc = cli("run", str(top), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    flows = json.loads(proc.stdout)["flows"]
    assert [f["name"] for f in flows] == ["reads"] and flows[0]["bytes"] > 0


def test_set_changes_an_including_file(cli, top):
    s = tlpsim.load_scenario(top, values={"link.sw-ex.width": 1, "pcie.mps": 512})
    assert "mps = 512" in s.text and "width = 1" in s.text
    wide = tlpsim.run(tlpsim.load_scenario(top)).flows[0]["throughput_gbps"]
    narrow = tlpsim.run(s).flows[0]["throughput_gbps"]
    assert narrow < wide / 2
    proc = cli("run", str(top), "--set", "link.sw-ex.width=1", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["flows"][0]["throughput_gbps"] == pytest.approx(narrow)


def test_a_sweep_of_an_including_file_varies_its_keys(top):
    rows = tlpsim.sweep(top, {"link.sw-ex.width": [1, 8]}, jobs=1).rows
    gbps = [r["throughput_gbps"] for r in rows]
    assert len(gbps) == 2 and gbps[0] < gbps[1] / 2


def test_an_error_from_the_cli_is_one_line_naming_the_file(cli, tmp_path):
    top = write(tmp_path / "top.toml", f'include = ["base.toml"]\n{READS}')
    proc = cli("run", str(top))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert f'{top}: include "base.toml": cannot read' in proc.stderr


def test_the_schema_lists_include():
    schema = tlpsim.schema()
    include = schema["properties"]["include"]
    assert include["type"] == "array" and "relative to this file's directory" in include["description"]
