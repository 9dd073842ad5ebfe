"""The front a person uses every day: --version, shell completion, examples in --help, the
Python API taking what the CLI takes, run --set, compare, counted endpoints, GB/s, and the
credit defaults written where a user looks."""

import json
import re
from importlib.metadata import version
from pathlib import Path

import pandas as pd
import pytest

import tlpsim
from tlpsim.validation import ROW_FIELDS

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "scenarios" / "t5220-two-switches.toml"

#: Three DMA engines written once, with count = 3, below one switch.
COUNTED = """
[simulation]
duration = "40us"

[[root_complex]]
name = "rc"

[[switch]]
name = "sw"

[[endpoint]]
name = "ex"
kind = "dma"
count = 3

[[link]]
between = ["rc", "sw"]
width = 8

[[link]]
between = ["sw", "ex"]
width = 4

[[workload]]
name = "reads"
kind = "dma"
endpoint = "ex"
direction = "read"
transfer_size = "4KiB"
"""


# --- item 9: version, completion, examples -------------------------------------------------


def test_version_prints_the_package_version(cli):
    proc = cli("--version")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == f"tlpsim {version('tlpsim')}"
    assert re.fullmatch(r"tlpsim \d+\.\d+\.\d+", proc.stdout.strip())


def test_completion_prints_a_bash_script(cli):
    proc = cli("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    assert "_TLPSIM_COMPLETE" in proc.stdout and "complete " in proc.stdout and "tlpsim" in proc.stdout


def test_completion_of_an_unknown_shell_is_one_line(cli):
    proc = cli("completion", "tcsh")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "tcsh" in proc.stderr


@pytest.mark.parametrize("command", [["link"], ["run"], ["sweep"], ["compare"], ["validate"], ["import", "lspci"]])
def test_help_ends_with_examples(cli, command):
    proc = cli(*command, "--help")
    assert proc.returncode == 0, proc.stderr
    tail = proc.stdout[proc.stdout.index("Examples:") :]
    assert f"tlpsim {' '.join(command)} " in tail


# --- item 10: the Python API takes what the CLI takes ---------------------------------------


def test_link_bandwidth_takes_size_strings():
    assert tlpsim.link_bandwidth(1, 8, payload="4KiB") == tlpsim.link_bandwidth(1, 8, payload=4096)
    assert tlpsim.link_bandwidth(3, 8, mps="256B", mrrs="1KiB") == tlpsim.link_bandwidth(3, 8, mps=256, mrrs=1024)
    assert tlpsim.link_bandwidth(1, 8, payload="4KB").payload_bytes == 4000
    m = tlpsim.message_bandwidth("16KiB", 90, gen=1, width=4, payload="64B")
    assert m == tlpsim.message_bandwidth(16384, 90, gen=1, width=4, payload=64)
    with pytest.raises(tlpsim.ConfigError, match='^mps "1x" is not allowed'):
        tlpsim.link_bandwidth(1, 8, mps="1x")


def test_sweep_takes_a_loaded_scenario():
    loaded = tlpsim.load_scenario(EXAMPLE)
    by_object = tlpsim.sweep(loaded, {"pcie.mps": [128, 256]}, jobs=1)
    by_path = tlpsim.sweep(EXAMPLE, {"pcie.mps": [128, 256]}, jobs=1)
    assert [r["throughput_gbps"] for r in by_object.rows] == [r["throughput_gbps"] for r in by_path.rows]
    assert by_object.rows[0]["throughput_gbps"] != by_object.rows[1]["throughput_gbps"]


def test_load_scenario_takes_set_values():
    loaded = tlpsim.load_scenario(EXAMPLE, values={"pcie.mps": 256, "link.sw2-ex.width": 4})
    swept = tlpsim.sweep(EXAMPLE, {"pcie.mps": [256], "link.sw2-ex.width": [4]}, jobs=1)
    assert tlpsim.run(loaded).flows[0]["throughput_gbps"] == swept.rows[0]["throughput_gbps"]
    with pytest.raises(tlpsim.ScenarioError, match="pcie.mps=100: .*128, 256"):
        tlpsim.load_scenario(EXAMPLE, values={"pcie.mps": 100})


def test_validate_to_pandas_has_the_row_columns():
    rows = tlpsim.validate("t5220")
    df = rows.to_pandas()
    assert isinstance(df, pd.DataFrame)
    assert list(df.columns[: len(ROW_FIELDS)]) == list(ROW_FIELDS)
    assert len(df) == len(rows)
    assert df["published"].tolist() == [r["published"] for r in rows]


# --- item 11: run --set, compare, count, GB/s, credit defaults ------------------------------


def test_run_set_changes_the_scenario_as_sweep_does(cli_json):
    base = cli_json("run", str(EXAMPLE))
    changed = cli_json("run", str(EXAMPLE), "--set", "pcie.mps=256", "--set", "workload.reads.outstanding=2")
    swept = tlpsim.sweep(EXAMPLE, {"pcie.mps": [256], "workload.reads.outstanding": [2]}, jobs=1)
    assert changed["flows"][0]["throughput_gbps"] == swept.rows[0]["throughput_gbps"]
    assert changed["flows"][0]["throughput_gbps"] != base["flows"][0]["throughput_gbps"]


@pytest.mark.parametrize(
    "setting, words",
    [
        ("wire.width=4", "wire.width=4: the key is not allowed; allowed: simulation.KEY"),
        ("link.rc-sw9.width=4", 'no [[link]] named "rc-sw9"'),
        ("pcie.mps=128,256", "run takes one value per key; try them all with tlpsim sweep --set pcie.mps=128,256"),
        ("pcie.mps", "allowed: KEY=V1,V2,..."),
    ],
)
def test_run_set_bad_key_is_one_line(cli, setting, words):
    proc = cli("run", str(EXAMPLE), "--set", setting)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and words in proc.stderr, proc.stderr


def test_compare_matches_flows_and_links_by_name(cli_json, tmp_path):
    text = EXAMPLE.read_text()
    renamed = tmp_path / "renamed.toml"
    renamed.write_text(text.replace('name = "reads"', 'name = "reads2"').replace("width = 8", "width = 4", 1))
    out = cli_json("compare", str(EXAMPLE), str(renamed))
    assert out["a"] == EXAMPLE.name and out["b"] == "renamed.toml"
    flows = {f["name"]: f for f in out["flows"]}
    assert flows["reads"]["in"] == "A only" and flows["reads"]["b_gbps"] is None
    assert flows["reads2"]["in"] == "B only" and flows["reads2"]["a_gbps"] is None
    alone = tlpsim.run(EXAMPLE)
    assert flows["reads"]["a_gbps"] == alone.flows[0]["throughput_gbps"]
    links = {(r["name"], r["direction"]): r for r in out["links"]}
    rc_down = links[("rc-sw1", "down")]
    assert rc_down["in"] == "both"
    assert rc_down["delta_utilization"] == pytest.approx(rc_down["b_utilization"] - rc_down["a_utilization"])
    assert out["audit_passed"] == {"a": True, "b": True}


def test_compare_table_shows_both_sides_with_the_change(cli, tmp_path):
    b = tmp_path / "mps256.toml"
    b.write_text(EXAMPLE.read_text().replace("mps = 128", "mps = 256"))
    proc = cli("compare", str(EXAMPLE), str(b))
    assert proc.returncode == 0, proc.stderr
    a_run, b_run = tlpsim.run(EXAMPLE), tlpsim.run(b)
    ga, gb = a_run.flows[0]["throughput_gbps"], b_run.flows[0]["throughput_gbps"]
    row = next(line for line in proc.stdout.splitlines() if "│ reads" in line)
    assert f"{ga:.3f}" in row and f"{gb:.3f}" in row and f"{gb - ga:+.3f}" in row
    assert f"{(gb - ga) / ga:+.2%}" in row
    assert "A limited by" in proc.stdout and "link (rc-sw1 down)" in row
    # A change of utilisation is a difference of percentages: percentage points.
    link = next(line for line in proc.stdout.splitlines() if "│ rc-sw1 " in line and "│ down" in line)
    assert link.rstrip("│ ").split("│")[-3].strip().endswith(" pt")


def test_counted_endpoint_expands_into_copies():
    loaded = tlpsim.load_scenario(COUNTED)
    assert loaded.nodes == ["rc", "sw", "ex0", "ex1", "ex2"]
    assert loaded.links == ["rc-sw", "sw-ex0", "sw-ex1", "sw-ex2"]
    assert loaded.workloads == ["reads0", "reads1", "reads2"]
    result = tlpsim.run(loaded)
    assert {f["name"] for f in result.flows} == {"reads0", "reads1", "reads2"}
    assert all(f["bytes"] > 0 for f in result.flows)


def test_counted_endpoint_with_a_bad_count_is_one_line(cli, tmp_path):
    path = tmp_path / "bad.toml"
    path.write_text(COUNTED.replace("count = 3", "count = 0"))
    proc = cli("run", str(path))
    assert proc.returncode == 2
    assert proc.stderr == f"tlpsim: error: {path}: [[endpoint]] 1 (ex): count 0 is not allowed; allowed: 1 to 1024\n"


def test_count_can_be_set_and_swept(cli_json, tmp_path):
    path = tmp_path / "counted.toml"
    path.write_text(COUNTED)
    out = cli_json("run", str(path), "--set", "endpoint.ex.count=2")
    assert [f["name"] for f in out["flows"]] == ["reads0", "reads1"]


def test_gbytes_per_s_next_to_gbits(cli, cli_json):
    run = cli_json("run", str(EXAMPLE))
    f = run["flows"][0]
    assert f["throughput_gbytes_per_s"] == pytest.approx(f["throughput_gbps"] / 8)
    proc = cli("run", str(EXAMPLE))
    assert "Gb/s" in proc.stdout and "GB/s" in proc.stdout
    row = next(line for line in proc.stdout.splitlines() if "│ reads" in line)
    assert f"{f['throughput_gbps']:.3f}" in row and f"{f['throughput_gbytes_per_s']:.3f}" in row
    link = cli_json("link", "--gen", "3", "--width", "8")[0]
    assert link["write_gbytes_per_s"] == pytest.approx(link["write_gbps"] / 8)
    assert link["read_gbytes_per_s"] == pytest.approx(link["read_gbps"] / 8)
    proc = cli("link", "--gen", "3", "--width", "8")
    assert "write GB/s" in proc.stdout and f"{link['write_gbytes_per_s']:.3f}" in proc.stdout


def _credit_table(text: str) -> dict[str, list[str]]:
    """A Markdown credit-defaults table's rows: node -> [ph, pd, nph, npd, cplh, cpld]."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0].startswith("[["):
            rows[cells[0].split()[0]] = cells[1:]
    return rows


def test_credit_defaults_are_in_the_schema_and_the_readme():
    schema = tlpsim.schema()
    in_schema = _credit_table(schema["$defs"]["CreditsSection"]["description"])
    order = ["ph", "pd", "nph", "npd", "cplh", "cpld"]

    def default_of(section: dict) -> list[str]:
        d = section["properties"]["credits"]["default"]
        return [str(d[k]) for k in order]

    defs = schema["$defs"]
    assert in_schema["[[root_complex]]"] == default_of(defs["RootComplexSection"])
    assert in_schema["[[switch]]"] == default_of(defs["SwitchSection"])
    assert in_schema["[[ntb]]"] == default_of(defs["NtbSection"])
    for kind in defs["EndpointSection"]["oneOf"]:
        assert in_schema["[[endpoint]]"] == default_of(kind)
    readme = _credit_table((ROOT / "README.md").read_text())
    assert readme == in_schema


def test_schema_documents_count():
    schema = json.loads(json.dumps(tlpsim.schema()))
    for kind in schema["$defs"]["EndpointSection"]["oneOf"]:
        assert "NAME0" in kind["properties"]["count"]["description"]


# --- issue 35, item 15: one --unit for run, sweep and compare ---------------------------------

UNITS = [("Gb/s", 1.0, ".3f"), ("GB/s", 0.125, ".3f"), ("MB/s", 125.0, ",.1f")]


def table_row(stdout: str, first: str) -> list[str]:
    """The cells of the table line whose first cell is ``first``."""
    line = next(line for line in stdout.splitlines() if line.startswith(f"│ {first} "))
    return [c.strip() for c in line.strip("│").split("│")]


def table_heading(stdout: str) -> list[str]:
    """The headings of the first table in ``stdout`` (one line each, a wide terminal)."""
    line = next(line for line in stdout.splitlines() if line.startswith("┃"))
    return [c.strip() for c in line.strip("┃").split("┃")]


@pytest.mark.parametrize(("unit", "factor", "spec"), UNITS)
def test_sweep_takes_a_throughput_unit(cli, unit, factor, spec):
    proc = cli("sweep", str(EXAMPLE), "--set", "pcie.mps=128,256", "--jobs", "1", "--unit", unit)
    assert proc.returncode == 0, proc.stderr
    assert unit in table_heading(proc.stdout)
    at = table_heading(proc.stdout).index(unit)
    for mps in (128, 256):
        gbps = tlpsim.run(tlpsim.load_scenario(EXAMPLE, values={"pcie.mps": mps})).flows[0]["throughput_gbps"]
        assert table_row(proc.stdout, str(mps))[at] == format(gbps * factor, spec)


@pytest.mark.parametrize(("unit", "factor", "spec"), UNITS)
def test_compare_takes_a_throughput_unit(cli, tmp_path, unit, factor, spec):
    b = tmp_path / "mps256.toml"
    b.write_text(EXAMPLE.read_text().replace("mps = 128", "mps = 256"))
    proc = cli("compare", str(EXAMPLE), str(b), "--unit", unit)
    assert proc.returncode == 0, proc.stderr
    ga, gb = tlpsim.run(EXAMPLE).flows[0]["throughput_gbps"], tlpsim.run(b).flows[0]["throughput_gbps"]
    assert table_heading(proc.stdout)[2:5] == [f"A {unit}", f"B {unit}", f"delta {unit}"]
    assert table_row(proc.stdout, "reads")[2:5] == [
        format(ga * factor, spec), format(gb * factor, spec), format((gb - ga) * factor, "+" + spec),
    ]  # fmt: skip
    assert f"A payload {unit}" in proc.stdout


def test_run_takes_the_same_unit(cli):
    proc = cli("run", str(EXAMPLE), "--unit", "MB/s")
    assert proc.returncode == 0, proc.stderr
    gbps = tlpsim.run(EXAMPLE).flows[0]["throughput_gbps"]
    assert table_heading(proc.stdout)[3] == "MB/s" and "Gb/s" not in table_heading(proc.stdout)
    assert table_row(proc.stdout, "reads")[3] == f"{gbps * 125:,.1f}"
    assert "payload MB/s" in proc.stdout


@pytest.mark.parametrize("command", [["sweep", "--set", "pcie.mps=128"], ["compare", str(EXAMPLE)], ["run"]])
def test_unit_leaves_json_and_csv_fields_as_named(cli, command, cli_json):
    name, *rest = command
    plain = cli(name, str(EXAMPLE), *rest, "--format", "csv")
    converted = cli(name, str(EXAMPLE), *rest, "--format", "csv", "--unit", "MB/s")
    assert plain.returncode == 0 and converted.returncode == 0, converted.stderr
    assert plain.stdout.splitlines()[0] == converted.stdout.splitlines()[0]
    assert plain.stdout.splitlines()[1].split(",")[:4] == converted.stdout.splitlines()[1].split(",")[:4]


def test_a_bad_unit_is_one_line(cli):
    proc = cli("sweep", str(EXAMPLE), "--set", "pcie.mps=128", "--unit", "kB/s")
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "'Gb/s', 'GB/s', 'MB/s'" in proc.stderr, proc.stderr


GPU_COPIES = ROOT / "scenarios" / "gpu-h2d-d2h-gen5.toml"


def test_a_gpu_copy_of_posted_writes_shows_no_first_byte_latency(cli, cli_json):
    proc = cli("run", str(GPU_COPIES))
    assert proc.returncode == 0, proc.stderr
    headings = table_heading(proc.stdout)
    first_byte = [headings.index(h) for h in ("first byte mean ns", "p50 ns", "p99 ns", "max ns")]
    d2h, h2d = table_row(proc.stdout, "copy.d2h"), table_row(proc.stdout, "copy.h2d")
    assert [d2h[i] for i in first_byte] == ["-"] * 4  # was 4.4, 4, 4, 4: one TLP's wire time
    assert all(h2d[i] != "-" and float(h2d[i]) > 1000 for i in first_byte)  # reads keep theirs
    assert "copy.d2h: no first-byte latency (-): a d2h copy posts writes" in proc.stdout
    # JSON keeps the core's figure, as the README defines it for a write.
    flows = {f["name"]: f for f in cli_json("run", str(GPU_COPIES))["flows"]}
    assert flows["copy.d2h"]["latency_ns"]["mean"] > 0


def test_a_sweep_shows_no_first_byte_latency_for_posted_write_copies(cli):
    proc = cli("sweep", str(GPU_COPIES), "--set", "workload.copy.direction=h2d,d2h", "--jobs", "1")
    assert proc.returncode == 0, proc.stderr
    at = table_heading(proc.stdout).index("first byte mean ns")
    assert table_row(proc.stdout, "d2h")[at] == "-"
    assert float(table_row(proc.stdout, "h2d")[at]) > 1000
