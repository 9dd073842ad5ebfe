"""The pciebench pipeline: cells, scenarios, runner, fit, tlpsim fit and the validation system."""

import dataclasses
import json
import math
import shutil
import tomllib
from pathlib import Path

import pytest

import tlpsim
from tlpsim.pciebench import (
    Cell,
    Parameter,
    Selector,
    cells_of,
    fit,
    fit_device,
    host_keys,
    machine_of,
    not_modelled,
    pipeline,
    protocol,
    run_cells,
    scenario_text,
    short_name,
    simulate,
    toml_value,
)
from tlpsim.pciebench.model import DEFAULT_LLC
from tlpsim.pciebench.pipeline import protocol_setup, source_machine
from tlpsim.pciebench.shipped import shipped
from tlpsim.pciebench.summary import group_of, group_summaries

DATA = Path(__file__).resolve().parent.parent / "data" / "pcie-bench"
BDW = "nfp6000-1.2GHz_bdw-Xeon-E5-2630v4-dell-t430-s0-s0-s0"
HSW = "nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"
FIELDS = [
    "system", "table", "series", "column", "unit", "published", "simulated", "error", "role", "limit", "fold", "low",
    "high",
]  # fmt: skip
#: The protocol's device keys, as a scenario takes them (host keys: none, so that the
#: scenarios load on a core with or without the host memory model).
DEVICE = protocol.DEVICE
#: Short runs: the tests check the plumbing, not the model's accuracy.
QUICK = {"duration": "12us", "warmup": "2us"}


@pytest.fixture(scope="module")
def bdw():
    return tlpsim.import_pcie_bench(DATA / BDW)


@pytest.fixture(scope="module")
def bdw_machine(bdw):
    return machine_of(bdw, (DATA / BDW / "sys-lspci.txt").read_text())


def _cell(cells, test, file, size, measure="bw_gbps", **kw):
    return Selector(test, file, size, measure, **kw).pick(cells)


def test_shipped_data_is_the_data_folder():
    names = sorted(p.name for p in DATA.iterdir() if p.is_dir())
    assert [s.name for s in shipped()] == names
    for s in shipped()[:2]:
        on_disk = tlpsim.import_pcie_bench(DATA / s.name)
        assert s.data.measurements == on_disk.measurements and s.data.cdf == on_disk.cdf
        assert s.lspci == (DATA / s.name / "sys-lspci.txt").read_text()


def test_cells_of_a_real_directory(bdw):
    cells = cells_of(bdw)
    # 120 + 8 x 52 bandwidth cells; 30 + 128 + 2 x 48 + 16 latency rows, two cells each.
    assert len(cells) == 120 + 8 * 52 + 2 * (30 + 128 + 96 + 16) == 1076
    keys = [(c.table, c.series, c.column) for c in cells]
    assert len(set(keys)) == len(keys)
    by_key = {k: c for k, c in zip(keys, cells, strict=True)}
    c = by_key[("bdw-s0-s0-s0/bw_dma_sz_sweep", "BW_DMA_RD HWarm", "64B")]
    assert (c.published, c.unit, c.measure, c.window_bytes, c.pattern) == (31.906, "Gb/s", "bw_gbps", 8192, "Rand")
    c = by_key[("bdw-s0-s0-s0/bw_dma_win_sweep_rd_rnd_64", "BW_DMA_RD 64B Cold", "win 64MiB")]
    assert c.window_bytes == 64 << 20 and c.cache == "Cold"
    c = by_key[("bdw-s0-s0-s0/lat_dma_details", "LAT_DMA_RD win 8KiB Cold median", "64B")]
    assert (c.published, c.unit) == (600.0, "ns")
    assert ("bdw-s0-s0-s0/lat_dma_sizes", "LAT_DMA_WRRD HWarm p99.9", "2048B") in by_key
    reasons = {n.file: n.reason for n in not_modelled(bdw)}
    assert "command interface" in reasons["lat_cmd_sizes.txt"]
    assert "alignment" in reasons["bw_dma_off_rd.txt"] and "alignment" in reasons["lat_dma_off_wrrd.txt"]
    assert not any(f.startswith(("bw_dma_sz", "lat_dma_sizes")) for f in reasons)


def test_short_names():
    names = {short_name(s.data.host) for s in shipped()}
    assert names == {
        "bdw-s0-s0-s0", "bdw-s0-s0-s0-iommu-nosp", "bdw-s0-s0-s1", "bdw-s0-s1-s0", "bdw-s0-s1-s1",
        "bdw-s0-s1-s1-iommu-nosp", "hsw", "hsw-iommu", "hsw-iommu-nosp",
    }  # fmt: skip
    unseen = tlpsim.importers.parse_host_name("cx5_Xeon-Gold-6130_supermicro-x11-iommu")
    assert short_name(unseen) == "Xeon-Gold-6130-iommu"


def test_machine_from_lspci_and_name(bdw_machine):
    m = bdw_machine
    assert (m.gen, m.width, m.mps, m.mrrs, m.tags) == (3, 8, 256, 4096, 32)
    assert "Device 6000" in m.device and m.llc_bytes == 25 << 20 and m.llc_ways == 20
    assert host_keys(m) == {"llc_size": "25MiB", "llc_ways": 20, "iommu": "off", "memory_socket": "local"}
    hsw = next(s for s in shipped() if s.name == f"{HSW}-iommu-nosp")
    mh = machine_of(hsw.data, hsw.lspci)
    assert (mh.mrrs, mh.addressing, mh.llc_bytes) == (512, 32, 15 << 20)
    assert host_keys(mh) == {
        "llc_size": "15MiB", "llc_ways": 20, "iommu": "on", "iommu_page_size": "4KiB", "memory_socket": "local",
    }  # fmt: skip
    remote = next(s for s in shipped() if s.name.endswith("s0-s1-s1"))
    mr = machine_of(remote.data, remote.lspci)
    assert mr.remote_memory and mr.remote_warm and host_keys(mr)["memory_socket"] == "remote"


def test_unknown_card_and_cpu_are_noted(bdw):
    text = (DATA / BDW / "sys-lspci.txt").read_text().replace("Netronome Systems, Inc. Device 6000", "Acme Device 1")
    data = dataclasses.replace(bdw, host={**bdw.host, "cpu": "Xeon-Mystery-1"})
    m = machine_of(data, text)
    assert (m.llc_bytes, m.llc_ways) == DEFAULT_LLC and host_keys(m)["llc_size"] == "25MiB"
    assert any("no Netronome NFP-6000" in n for n in m.notes)
    assert any(a.startswith("LLC 25MiB: assumed") for a in m.assumptions)
    # The protocol's LLC keys need an LLC: every test's scenario loads for such a host.
    setup = protocol_setup(m, protocol.DEVICE, protocol.HOST_PARAMETERS)
    for cell in {c.test: c for c in cells_of(bdw)}.values():
        tlpsim.load_scenario(setup.scenario(setup.start(), cell))


def test_toml_value_writer():
    values = {
        "a": "16ns", "b": 3, "c": 2.5, "d": True, "e": {"read": "16ns", "write": 2}, "f": 'q"uo\\te\n',
        "g": [1, "x"], "h-i": {},
    }  # fmt: skip
    text = "\n".join(f"{k} = {toml_value(v)}" for k, v in values.items())
    assert tomllib.loads(text) == values
    assert toml_value({"read": "16ns", "write": "21ns"}) == '{ read = "16ns", write = "21ns" }'
    for bad in (None, float("nan"), object()):
        with pytest.raises((TypeError, ValueError)):
            toml_value(bad)


def test_scenario_text_loads_for_every_test(bdw, bdw_machine):
    cells = cells_of(bdw)
    picked = {(c.test, c.cache): c for c in cells}
    for cell in picked.values():
        text = scenario_text(cell, bdw_machine, DEVICE, {}, **QUICK, cache_words={"warm", "cold"})
        tlpsim.load_scenario(text)
    rw = scenario_text(picked[("BW_DMA_RW", "HWarm")], bdw_machine, DEVICE, {"memory_read_latency": "155ns"})
    doc = tomllib.loads(rw)
    w = doc["workload"][0]
    assert (w["direction"], w["outstanding"], w["tlp_payload"], w["pattern"], w["window"]) == (
        "alternate", 64, "128B", "random", "8192B",
    )  # fmt: skip
    assert doc["root_complex"][0] == {"name": "rc", "completion": "mps", "memory_read_latency": "155ns"}
    assert doc["endpoint"][0]["request_cost"] == DEVICE["request_cost"]
    assert "write_tlp_payload" not in doc["endpoint"][0]
    assert (doc["pcie"]["mrrs"], doc["pcie"]["addressing"], doc["link"][0]["width"]) == (4096, 64, 8)
    lat = tomllib.loads(scenario_text(picked[("LAT_DMA_RD", "Cold")], bdw_machine, DEVICE, {}))["workload"][0]
    assert (lat["direction"], lat["outstanding"], lat["cache"]) == ("read", 1, "cold")
    assert "tlp_payload" not in lat
    dwarm = scenario_text(picked[("BW_DMA_RD", "DWarm")], bdw_machine, DEVICE, {})
    assert 'cache = "device-warm"' in dwarm
    assert 'cache = "warm"' in scenario_text(picked[("BW_DMA_RD", "DWarm")], bdw_machine, DEVICE, {},
                                             cache_words={"warm", "cold"})  # fmt: skip


def test_protocol_scenarios_load_with_every_accepted_key():
    # The protocol's keys as this build's loader takes them: once the host memory model's
    # keys load, they are in these scenarios (and the notes no longer name them).
    from tlpsim.pciebench.pipeline import protocol_setup, source_machine
    from tlpsim.pciebench.support import loader_keys

    keys = loader_keys()
    for source in shipped():
        setup = protocol_setup(source_machine(source), protocol.DEVICE, protocol.HOST_PARAMETERS)
        assert all(keys.accepts("host", k) for k in setup.host) and "memory_read_latency" in setup.host
        assert all(keys.accepts("device", k) for k in setup.device) and "request_cost" in setup.device
        values = setup.start()
        picked = {(c.test, c.cache): c for c in cells_of(source.data)}
        for cell in picked.values():
            tlpsim.load_scenario(setup.scenario(values, cell))
        for k in protocol.HOST:
            applies = getattr(setup.machine, protocol.HOST_ONLY_IF.get(k, "gen"))
            if applies and not keys.accepts("host", k):
                assert any(k in note for _, note in setup.notes), k


def test_remote_warm_cache_word():
    s = next(s for s in shipped() if s.name.endswith("s0-s0-s1"))
    m = machine_of(s.data, s.lspci)
    warm = next(c for c in cells_of(s.data) if c.cache == "HWarm")
    assert 'cache = "remote-warm"' in scenario_text(warm, m, DEVICE, {})


def test_runner_is_deterministic_and_shares_runs(bdw, bdw_machine):
    all_cells = cells_of(bdw)
    cells = [c for c in all_cells if c.stem == "bw_dma_sz_sweep"][::3] + [
        c for c in all_cells if c.stem == "lat_dma_details"
    ]

    def scenario(c):
        return scenario_text(c, bdw_machine, DEVICE, {}, **QUICK, cache_words={"warm", "cold"})

    seen = []
    one = simulate(cells, scenario, workers=1)
    two = simulate(cells, scenario, workers=2, progress=lambda done, total: seen.append((done, total)))
    assert one == two and all(v > 0 for v in one)
    assert seen[-1] == (len(cells), len(cells)) and len(seen) < len(cells)  # median and p99.9 share a run


def test_rw_counts_one_direction(bdw, bdw_machine):
    cell = _cell(cells_of(bdw), "BW_DMA_RW", "bw_dma_sz_sweep", 256)
    text = scenario_text(cell, bdw_machine, DEVICE, {}, **QUICK, cache_words={"warm", "cold"})
    [outcome] = run_cells([cell], lambda c: text, workers=1)
    result = tlpsim.run(text)
    both = result.flows[0]["throughput_gbps"]
    payload = {link["direction"]: link["payload_gbps"] for link in result.links}
    assert outcome.value == pytest.approx(both / 2)
    # The flow counts the writes' data (up) and the reads' (down); pcie-bench one of them.
    assert outcome.value == pytest.approx((payload["up"] + payload["down"]) / 2, rel=0.01)
    assert outcome.limit and outcome.latency["p50"] > 0


def test_fit_recovers_a_known_parameter(bdw, bdw_machine):
    cell = _cell(cells_of(bdw), "BW_DMA_WR", "bw_dma_sz_sweep", 64)
    param = Parameter("request_cost.write", "device", "request_cost", "write", "ns", 1, 60,
                      Selector("BW_DMA_WR", "bw_dma_sz_sweep", 64), rises=False)  # fmt: skip

    def scenario(values, c):
        device = json.loads(json.dumps(DEVICE))
        param.write(device, values["request_cost.write"])
        device["transfer_cost"] = "0ns"
        return scenario_text(c, bdw_machine, device, {}, **QUICK, cache_words={"warm", "cold"})

    truth = 23.0
    [measured] = simulate([cell], lambda c: scenario({"request_cost.write": truth}, c), workers=1)
    known = dataclasses.replace(cell, published=measured)
    fitted = fit([param], [known], scenario, {"request_cost.write": 10.0}, passes=1)["request_cost.write"]
    assert fitted.status == "fitted" and fitted.cell == known
    assert abs(fitted.error) <= 0.002
    assert fitted.value == pytest.approx(truth, rel=0.01)
    # A directory without the cell keeps the start value and says so.
    missing = fit([param], [], scenario, {"request_cost.write": 10.0})["request_cost.write"]
    assert (missing.value, missing.status, missing.cell) == (10.0, "no calibrate cell", None)
    # A target out of reach ends at the nearer bound.
    fast = dataclasses.replace(cell, published=1000.0)
    assert fit([param], [fast], scenario, {"request_cost.write": 10.0}, passes=1)["request_cost.write"].status == (
        "at lower bound"
    )


def test_selectors_pick_the_protocol_cells(bdw):
    cells = cells_of(bdw)
    for p in (*protocol.DEVICE_PARAMETERS, *protocol.HOST_PARAMETERS):
        cell = p.cell.pick(cells)
        assert cell is not None, p.name
    iommu = next(s for s in shipped() if s.name.endswith("s0-s0-s0-iommu-nosp"))
    walk = next(p for p in protocol.HOST_PARAMETERS if p.name == "iommu_walk_latency").cell.pick(cells_of(iommu.data))
    assert (walk.window_bytes, walk.cache, walk.published) == (64 << 20, "Cold", 880.0)


def test_summary_groups():
    def row(table, series, column, error, role="predict"):
        return {"table": table, "series": series, "column": column, "error": error, "role": role}

    rows = [
        row("x/bw_dma_sz_sweep", "BW_DMA_RD HWarm", "64B", 0.01),
        row("x/bw_dma_sz_sweep", "BW_DMA_RD HWarm", "128B", -0.03),
        row("x/bw_dma_sz_sweep", "BW_DMA_RD HWarm", "32B", 0.5),
        row("x/bw_dma_sz_sweep", "BW_DMA_RD HWarm", "129B", 0.9, "calibrate"),
        row("x/lat_dma_sizes_byte_inc", "LAT_DMA_RD HWarm p99.9", "240B", 0.2),
        row("x/bw_dma_win_sweep_rd_rnd_64", "BW_DMA_RD 64B Cold", "win 8KiB", 0.1),
    ]
    assert group_of(rows[4]) == "latency vs size, p99.9" and group_of(rows[5]) == "bandwidth vs window"
    first = group_summaries(rows)[0]
    assert (first.group, first.predicted, first.calibrated) == ("bandwidth vs size, 64 B-2 KiB", 2, 1)
    assert first.median_abs_error == pytest.approx(0.02) and first.max_abs_error == pytest.approx(0.03)
    assert "2 predicted cells, median |error| 2.0 %, max |error| 3.0 % (x/bw_dma_sz_sweep" in first.line()


def test_iommu_knees_and_remote_penalties():
    from tlpsim.pciebench.summary import iommu_knees, remote_penalties, summary_lines

    def row(short, column, published, simulated, stem="bw_dma_win_sweep_rd_rnd_64", series="BW_DMA_RD 64B Cold"):
        error = simulated / published - 1
        return {"table": f"{short}/{stem}", "series": series, "column": column, "published": published,
                "simulated": simulated, "error": error, "role": "predict", "unit": "Gb/s"}  # fmt: skip

    windows = ["win 4KiB", "win 256KiB", "win 512KiB", "win 1MiB", "win 64MiB"]
    measured = [28.0, 27.6, 20.2, 14.3, 9.8]
    good = [28.0, 27.0, 27.0, 20.0, 10.5]  # falls one step late, plateau within 10 %
    bad = [28.0, 28.0, 28.0, 28.0, 28.0]
    rows = [row("bdw-s0-s0-s0-iommu-nosp", w, m, g) for w, m, g in zip(windows, measured, good, strict=True)]
    rows += [row("hsw-iommu", w, m, b, series="BW_DMA_RD 64B HWarm") for w, m, b in
             zip(windows, measured, bad, strict=True)]  # fmt: skip
    rows += [row("bdw-s0-s0-s0", w, 28.0, 28.0) for w in windows]  # no IOMMU: not counted
    knees = iommu_knees(rows)
    assert (knees.sweeps, knees.knee_within_step, knees.plateau_within) == (2, 1, 1)
    # Remote: s0-s1-s0 against s0-s0-s0, cell by cell.
    rows += [row("bdw-s0-s1-s0", w, 28.0 * f, 28.0 * g) for w, f, g in
             zip(windows, [0.9, 0.9, 1.0, 1.0, 1.005], [0.88, 1.0, 1.0, 0.8, 0.998], strict=True)]  # fmt: skip
    remote = remote_penalties(rows)
    assert (remote.pairs, remote.sign_agrees, remote.size_within) == (5, 3, 3)
    lines = summary_lines(rows)
    assert lines[-2].startswith("pciebench IOMMU window sweeps: 2 fall") and "3 (60 %)" in lines[-1]
    assert iommu_knees(rows[-5:]) is None and remote_penalties(rows[:5]) is None


@pytest.fixture(scope="module")
def small_dir(tmp_path_factory):
    """A copy of bdw-s0-s0-s0 with a few result files."""
    d = tmp_path_factory.mktemp("pb") / BDW
    d.mkdir()
    for f in ("bw_dma_sz_sweep.txt", "lat_dma_details.txt", "lat_dma_details_cdf.txt", "sys-lspci.txt"):
        shutil.copy(DATA / BDW / f, d / f)
    return d


def test_fit_cli_json(cli_json, small_dir):
    report = cli_json("fit", str(small_dir))
    assert report["short"] == "bdw-s0-s0-s0" and report["machine"]["mrrs"]["value"] == 4096
    assert report["machine"]["mrrs"]["source"] == "sys-lspci.txt: 03:00.0 DevCtl MaxReadReq"
    assert all(set(f) == {"value", "source"} and f["source"] for f in report["machine"].values())
    assert report["fold"] == "in-sample" and report["assumptions"]
    rows = report["rows"]
    assert len(rows) == 120 + 2 * 16 and all(list(r) == FIELDS for r in rows)
    assert {r["system"] for r in rows} == {"pciebench"}
    for r in rows:
        assert r["error"] == pytest.approx((r["simulated"] - r["published"]) / r["published"])
    fitted = {f["parameter"]: f for f in report["fitted"]}
    assert fitted["llc_hit_latency"]["cell"] == "bdw-s0-s0-s0/bw_dma_sz_sweep BW_DMA_RD HWarm @ 64B"
    assert fitted["dram_over_llc"]["cell"].startswith("bdw-s0-s0-s0/lat_dma_details LAT_DMA_RD win 8KiB Cold")
    assert fitted["request_cost.write"]["cell"] == "bdw-s0-s0-s0/bw_dma_sz_sweep BW_DMA_WR HWarm @ 129B"
    # The copy is the calibration directory: its device cells and host cells calibrate.
    calibrate = {(r["series"], r["column"]) for r in rows if r["role"] == "calibrate"}
    assert ("BW_DMA_RD HWarm", "64B") in calibrate and ("BW_DMA_WR HWarm", "129B") in calibrate
    assert ("LAT_DMA_RD win 8KiB Cold median", "64B") in calibrate
    assert report["summary"][0]["group"] == "bandwidth vs size, 64 B-2 KiB"


def test_fit_cli_table_csv_and_output(cli, small_dir, tmp_path):
    proc = cli("fit", str(small_dir))
    assert proc.returncode == 0, proc.stderr
    assert "fitted parameters" in proc.stdout and "llc_hit_latency" in proc.stdout
    assert "bdw-s0-s0-s0 in-sample bandwidth vs size, 64 B-2 KiB:" in proc.stdout
    assert proc.stdout.startswith("assumed (no file of the directory states these):\n")
    assert "90 % bands, in-sample cells:" in proc.stdout
    out = tmp_path / "rows.csv"
    proc = cli("fit", str(small_dir), "--format", "csv", "-o", str(out))
    assert proc.returncode == 0 and proc.stdout == "" and f"wrote {out}" in proc.stderr
    lines = out.read_text().splitlines()
    assert lines[0] == ",".join(FIELDS) and len(lines) == 1 + 152


def test_fit_cli_bad_directories(cli, tmp_path):
    for path, words in (
        (tmp_path / "missing", "no such directory"),
        (DATA.parent.parent / "docs", "no pcie-bench result files"),
    ):
        proc = cli("fit", str(path))
        assert proc.returncode == 2 and words in proc.stderr, proc.stderr
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    no_lspci = tmp_path / "no-lspci"
    no_lspci.mkdir()
    shutil.copy(DATA / BDW / "lat_dma_sizes.txt", no_lspci)
    proc = cli("fit", str(no_lspci))
    assert proc.returncode == 2 and "no sys-lspci.txt" in proc.stderr and proc.stderr.count("\n") == 1
    only_cmd = tmp_path / "only-cmd"
    only_cmd.mkdir()
    for f in ("lat_cmd_sizes.txt", "sys-lspci.txt"):
        shutil.copy(DATA / BDW / f, only_cmd)
    proc = cli("fit", str(only_cmd))
    assert proc.returncode == 2 and "no DMA test results" in proc.stderr


def test_device_fit_reaches_its_cells():
    device = fit_device()
    assert device is fit_device()  # once per process
    for f in device.fitted:
        assert f.cell.directory == protocol.DEVICE_DIRECTORY
        assert abs(f.error) <= 0.01, (f.parameter.name, f.error)


@pytest.fixture(scope="module")
def validation():
    return tlpsim.validate("pciebench")


def test_validate_pciebench_rows(validation):
    # Each cell twice: cross-host (the device fitted on the other host) first, in-sample after.
    assert [r["fold"] for r in validation][0] == "cross-host"
    assert {r["fold"] for r in validation} == {"cross-host", "in-sample"}
    for fold in ("cross-host", "in-sample"):
        rows = [r for r in validation if r["fold"] == fold]
        assert len(rows) == sum(len(cells_of(s.data)) for s in shipped())
        assert len({(r["table"], r["series"], r["column"]) for r in rows}) == len(rows)
    rows = [r for r in validation if r["fold"] == "in-sample"]
    assert all(list(r) == FIELDS and r["system"] == "pciebench" for r in validation)
    # Every predicted row has its band, around its simulated value; calibrate rows have none.
    for r in validation:
        if r["role"] == "predict":
            assert r["low"] <= r["high"] and r["low"] > 0
        else:
            assert r["low"] is None and r["high"] is None
    tables = {r["table"].split("/")[0] for r in rows}
    assert len(tables) == 9 and "hsw-iommu-nosp" in tables
    # Calibrate: the device's cells in bdw-s0-s0-s0 and each directory's own host cells.
    calibrate = {(r["table"], r["series"], r["column"]) for r in rows if r["role"] == "calibrate"}
    possible = set()
    for directory in protocol.CALIBRATION_DIRECTORIES.values():
        own = cells_of(next(s for s in shipped() if s.name == directory).data)
        params = (*protocol.DEVICE_PARAMETERS, *protocol.CALIBRATION_HOST_PARAMETERS)
        possible |= {(c.table, c.series, c.column) for p in params if (c := p.cell.pick(own))}
    for s in shipped():
        cells = cells_of(s.data)
        possible |= {(c.table, c.series, c.column) for p in protocol.HOST_PARAMETERS if (c := p.cell.pick(cells))}
    assert 9 <= len(calibrate) and calibrate <= possible
    assert [line.split(":")[0] for line in validation.group_lines()][:2] == [
        "pciebench cross-host bandwidth vs size, 64 B-2 KiB", "pciebench cross-host bandwidth vs size, under 64 B",
    ]  # fmt: skip
    assert any(line.startswith("pciebench 90 % bands, cross-host cells:") for line in validation.group_lines())
    assert any(t.startswith("pciebench: lat_cmd_details") for t in validation.unmodelled_tables)


def test_validate_only_other_system_runs_no_pciebench():
    rows = tlpsim.validate("ntb")
    assert {r["system"] for r in rows} == {"ntb"} and not rows.pciebench and not rows.group_lines()
    with pytest.raises(tlpsim.ConfigError, match="pciebench"):
        tlpsim.validate("pciebench2")


def test_report_charts(validation, tmp_path):
    from tlpsim.pciebench.charts import write_charts

    [path] = write_charts(validation.pciebench[:1], tmp_path)
    assert path.name == "pciebench.bdw-s0-s0-s0.cross-host.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    # Both folds of a directory get their own chart (neither overwrites the other).
    names = {p.name for p in write_charts(validation.pciebench, tmp_path)}
    assert len(names) == len(validation.pciebench) == 18


def test_charts_shade_the_band_of_the_predicted_cells(validation):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.collections import PolyCollection

    from tlpsim.pciebench import charts

    report = validation.pciebench[0]
    pairs = list(zip(report.cells, report.outcomes, report.rows, strict=True))
    fig, ax = plt.subplots()
    charts._bandwidth_vs_size(ax, report, pairs)
    shaded = [c for c in ax.collections if isinstance(c, PolyCollection)]
    assert len(shaded) == 3  # RD, WR and RW
    plt.close(fig)


def test_fit_report_opens_with_the_assumptions_and_draws_the_bands(cli, small_dir, tmp_path):
    out = tmp_path / "report"
    proc = cli("fit", str(small_dir), "--report", str(out))
    assert proc.returncode == 0, proc.stderr
    text = (out / "report.md").read_text()
    lines = text.splitlines()
    assert lines[0] == f"# tlpsim fit: {BDW}" and lines[2] == "## Assumptions"
    # The copy has no sys-cpuinfo.txt: its CPU and LLC are assumed, and the block says so first.
    assert lines[4] == "- CPU E5-2630 v4: assumed: the directory's name (no sys-cpuinfo.txt)"
    assert "| link width | 8 | sys-lspci.txt: 03:00.0 LnkSta |" in text
    assert "![pciebench.bdw-s0-s0-s0.in-sample](pciebench.bdw-s0-s0-s0.in-sample.png)" in text
    assert "| 90 % low | 90 % high |" in text and "90 % bands, in-sample cells:" in text
    assert (out / "pciebench.bdw-s0-s0-s0.in-sample.png").read_bytes()[:4] == b"\x89PNG"
    assert "data:image/png;base64," in (out / "report.html").read_text()
    assert "wrote 3 files" in proc.stderr
    # A second report into the same folder needs --force; a file is refused.
    proc = cli("fit", str(small_dir), "--report", str(out))
    assert proc.returncode == 2 and "--force" in proc.stderr and "Traceback" not in proc.stderr
    (tmp_path / "file").write_text("x")
    proc = cli("fit", str(small_dir), "--report", str(tmp_path / "file"))
    assert proc.returncode == 2 and "not a folder" in proc.stderr


def test_cell_is_hashable_and_frozen(bdw):
    c = cells_of(bdw)[0]
    assert isinstance(c, Cell) and c in {c}
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.published = 1.0  # type: ignore[misc]


def test_wrrd_measures_the_lines_its_own_writes_left_in_the_llc():
    # LAT_DMA_WRRD writes each line before reading it, and its 2,097,152 samples revisit the
    # window: the measured state is device-warm whatever the cache state before the test.
    # With remote memory, a line the DDIO ways already hold needs no ownership from the other
    # socket, so the write-read latency is the local one (measured 773 ns both, 1 MiB window).
    s = next(s for s in shipped() if s.name.endswith("s0-s1-s0"))
    remote = machine_of(s.data, s.lspci)
    local = dataclasses.replace(remote, memory_socket=remote.device_socket)
    cells = {(c.test, c.cache, c.window_bytes): c for c in cells_of(s.data) if c.stem.startswith("lat_dma_sweep")}
    wrrd = cells[("LAT_DMA_WRRD", "Cold", 1 << 20)]
    assert 'cache = "device-warm"' in scenario_text(wrrd, remote, DEVICE, {})
    assert 'cache = "cold"' in scenario_text(cells[("LAT_DMA_RD", "Cold", 1 << 20)], remote, DEVICE, {})

    def median(machine):
        result = tlpsim.run(tlpsim.load_scenario(scenario_text(wrrd, machine, DEVICE, {}, **QUICK)))
        return result.flows[0]["transfer_latency_ns"]["p50"]

    assert median(remote) == median(local)


def test_every_machine_fact_of_the_shipped_directories_names_its_source():
    # Where a sys-*.txt file states a fact, the directory's name is never its source.
    stated = {"cpu", "sockets", "llc_bytes", "iommu", "super_pages", "device_socket", "gen", "width", "mps", "mrrs"}
    for source in shipped():
        m = source_machine(source)
        for key, fact in m.facts.items():
            assert fact.source, (source.name, key)
            if key in stated:
                assert not fact.assumed, (source.name, key, fact.source)
        # The buffer's socket comes from its physical addresses wherever the IOMMU is off.
        assert m.facts["memory_socket"].assumed == (m.iommu and m.facts["sockets"].value > 1), source.name
    by_short = {source_machine(s).short: source_machine(s) for s in shipped()}
    assert by_short["bdw-s0-s1-s0"].facts["memory_socket"].value == 1
    assert by_short["bdw-s0-s1-s0"].facts["memory_socket"].source.startswith("sys-dma-addrs.txt and sys-dmesg.txt")
    assert by_short["hsw-iommu"].super_pages is True and by_short["hsw-iommu-nosp"].super_pages is False
    assert by_short["hsw"].llc_bytes == 15 << 20 and by_short["hsw"].cpu == "E5-2620 v3"


def test_facts_come_from_the_files_not_the_name():
    from tlpsim.pciebench.facts import host_facts

    cpuinfo = "model name\t: Intel(R) Xeon(R) CPU E5-2690 0 @ 2.90GHz\ncache size\t: 20480 KB\nphysical id\t: 0\n"
    files = {
        "sys-cpuinfo.txt": cpuinfo,
        "sys-kernel-cmdline.txt": "BOOT_IMAGE=/vmlinuz ro intel_iommu=on",
        "sys-dmesg.txt": "[0.2] dmar: IOMMU 0: reg_base_addr fbffc000 ver 1:0 cap d20780106f0466 ecap f0205b\n",
    }
    # The name says Haswell with super pages; the files say a Sandy Bridge whose IOMMU has none.
    name = {"cpu": "hsw-Xeon-E5-2620v3", "iommu": True, "iommu_super_pages": True}
    facts = host_facts(files, name, "03:00.0", {})
    assert (facts["cpu"].value, facts["cpu"].source) == ("E5-2690", "sys-cpuinfo.txt: model name")
    assert (facts["llc_bytes"].value, facts["llc_bytes"].source) == (20 << 20, "sys-cpuinfo.txt: cache size")
    assert facts["iommu"].value is True and facts["iommu"].source == "sys-kernel-cmdline.txt: intel_iommu=on"
    assert facts["super_pages"].value is False and "SLLPS" in facts["super_pages"].source
    assert facts["device_socket"].value == 0 and facts["sockets"].value == 1
    # Nothing at all: every fact says it was assumed.
    bare = host_facts({}, {"cpu": "bdw-Xeon-E5-2630v4"}, "03:00.0", {"E5-2630 v4": (25 << 20, 20)})
    assert bare["cpu"].value == "E5-2630 v4" and all(f.assumed for f in bare.values())


def test_a_discrete_parameter_takes_the_word_nearest_its_cell():
    from tlpsim.pciebench.fit import Parameter, Selector, _choose

    p = Parameter("completion", "host", "completion", None, "", 0, 1, Selector("BW_DMA_RD", "x", 1024), True,
                  choices=("mps", "rcb"))  # fmt: skip
    cell = dataclasses.replace(cells_of(next(s for s in shipped() if s.name == BDW).data)[0], published=47.0)
    value, simulated, status = _choose(p, cell, lambda x: {0.0: 55.0, 1.0: 47.5}[x])
    assert (p.setting(value), simulated, status) == ("rcb", 47.5, "chosen")
    assert p.read({"completion": "mps"}) == 0.0
    with pytest.raises(ValueError, match="not one of mps, rcb"):
        p.read({"completion": "line"})


def test_the_hosts_choose_their_completions_and_share_a_data_path():
    devices = {cpu: pipeline.shipped_device_fit(d) for cpu, d in protocol.CALIBRATION_DIRECTORIES.items()}
    # Broadwell coalesces read data up to MPS; Haswell's 1 KiB reads run nearer 64 B completions.
    assert devices["E5-2630 v4"].host["completion"] == "mps"
    assert devices["E5-2620 v3"].host["completion"] == "rcb"
    for d in devices.values():
        # Reads and writes at once: about 11 GB/s together on both hosts.
        assert 10.0 <= float(d.host["data_path_bandwidth"].removesuffix("GB/s")) <= 12.0


def test_split_conformal_bands():
    from tlpsim.pciebench import bands

    rows = [
        {"table": "h/bw_dma_sz_sweep", "series": "BW_DMA_RD HWarm", "column": "1024B", "published": 100.0,
         "simulated": 100.0 * math.exp(-r / 100), "role": "predict", "fold": "cross-host"}
        for r in range(-50, 50)
    ]  # fmt: skip
    table = bands.band_table(rows)
    low, high = table["bandwidth vs size, 64 B-2 KiB"]
    # 100 residuals -0.50..0.49; |residual| sorted: 0, .01, .01, .02, .02 ...; order statistic
    # ceil(0.9 * 101) = 91 of them is 0.45.
    assert (low, high) == pytest.approx((-0.45, 0.45))
    bands.with_bands(rows, table)
    cov = bands.coverage(rows)
    assert cov.cells == 100 and cov.covered == 91
    # In-sample residuals never make a band.
    assert bands.band_table([{**r, "fold": "in-sample"} for r in rows]) == {}


def test_the_shipped_bands_are_those_the_shipped_data_give(validation):
    from importlib import resources

    from tlpsim.pciebench.bands import SHIPPED_BANDS_FILE

    shipped_text = resources.files("tlpsim.pciebench").joinpath(SHIPPED_BANDS_FILE).read_text(encoding="utf-8")
    assert shipped_text == pipeline.shipped_bands_text(validation.pciebench), (
        "python/tlpsim/pciebench/bands.json is stale: run python -m tlpsim.pciebench.pipeline"
    )


def test_an_infinite_calibrate_cell_is_left_out_with_a_note_not_fitted(cli, tmp_path):
    # An "inf" in the cell llc_hit_latency is fitted on was "fitted" with error NaN, exit 0.
    d = tmp_path / HSW
    shutil.copytree(DATA / HSW, d)
    sweep = d / "bw_dma_sz_sweep.txt"
    lines = sweep.read_text().splitlines(keepends=True)
    assert lines[4].split()[6] == "64" and lines[4].split()[11] == "32.019"
    lines[4] = lines[4].replace("32.019", "inf")
    sweep.write_text("".join(lines))
    proc = cli("fit", str(d), "--format", "json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout, parse_constant=lambda c: pytest.fail(f"{c} in the JSON"))
    note = f"{sweep}:5: column BW (GB/s) is inf, not a measurement; the line is left out"
    assert note in report["notes"] and f"tlpsim: note: {note}" in proc.stderr
    fitted = {f["parameter"]: f for f in report["fitted"]}
    assert fitted["llc_hit_latency"]["status"] == "no calibrate cell"
    assert all(f["error"] is None or abs(f["error"]) < 1 for f in report["fitted"])
    assert not any(r["series"] == "BW_DMA_RD HWarm" and r["column"] == "64B" for r in report["rows"])


def test_no_cell_is_made_of_a_non_finite_measurement(bdw):
    from dataclasses import replace

    rows = [dict(r) for r in bdw.measurements]
    first = next(i for i, r in enumerate(rows) if r["test"] == "BW_DMA_RD" and r["file"] == "bw_dma_sz_sweep.txt")
    rows[first]["bw_gbps"] = float("inf")
    cells = cells_of(replace(bdw, measurements=rows))
    assert len(cells) == len(cells_of(bdw)) - 1
    assert all(math.isfinite(c.published) for c in cells)
