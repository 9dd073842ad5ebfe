"""tlpsim validate: rows, roles, summaries, report."""

import pytest

import tlpsim

FIELDS = ["system", "table", "series", "column", "unit", "published", "simulated", "error", "role", "limit"]


def test_rows_have_design_fields_and_consistent_error():
    rows = tlpsim.validate("t5220")
    assert len(rows) >= 20
    for row in rows:
        assert list(row) == FIELDS
        assert row["role"] in ("calibrate", "predict")
        assert row["error"] == pytest.approx((row["simulated"] - row["published"]) / row["published"])


def test_only_one_system():
    rows = tlpsim.validate("ntb")
    assert {r["system"] for r in rows} == {"ntb"}
    with pytest.raises(tlpsim.ConfigError, match="pes24n3a"):
        tlpsim.validate("nope")


def test_summary_lines(cli):
    proc = cli("validate", "--only", "ntb")
    assert proc.returncode == 0, proc.stderr
    assert "ntb: 33 predicted cells, median |error|" in proc.stdout
    assert "6 calibrated" in proc.stdout
    # Every published table is modelled.
    assert "not modelled yet" not in proc.stdout


def test_json_and_report(cli_json, tmp_path, cli):
    rows = cli_json("validate", "--only", "pes24t6")
    assert rows and all(list(r) == FIELDS for r in rows)
    proc = cli("validate", "--only", "pes24t6", "--report", str(tmp_path / "out"))
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "out" / "report.md").read_text()
    assert "| pes24t6 | link_efficiency |" in text
    # RFC 2544 cells name what saturates at full load (the Windows host's one core).
    assert "| predict | cpu cpu core 0 (100 %) |" in text
    # One chart per table, linked from the report.
    assert "## Per table (predicted cells)" in text and "| pes24t6.ge_windows | 7 |" in text
    assert "## Switch effects" in text and "| pes24t6.fc | with_switch vs without_switch |" in text
    for table in ("link_efficiency", "capacity", "ge_windows", "ge_linux", "fc"):
        png = tmp_path / "out" / f"pes24t6.{table}.png"
        assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert f"({png.name})" in text
    # The same report as one self-contained HTML page: tables rendered, charts embedded.
    page = (tmp_path / "out" / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<table>" in page and "<td>pes24t6</td>" in page
    assert page.count('src="data:image/png;base64,') == 5 and '.png"' not in page


def test_ctrl_c_stops_validate_with_one_line(interrupt):
    # Pressed twice: the second must not swallow the line the first one earns.
    proc, took = interrupt("validate", twice=True)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.startswith("tlpsim: interrupted after ") and "simulated cells" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "" and took < 20


def test_ctrl_c_stops_the_front_ends_system_at_once(interrupt):
    # pciebench's fits and runs are the Python front end's, on the main thread: Ctrl-C stops
    # them there, not after the device fit or the fold in progress.
    proc, took = interrupt("validate", "--only", "pciebench", twice=True)
    assert proc.returncode == 130, proc.stderr
    assert proc.stderr.startswith("tlpsim: interrupted after ") and "simulated cells" in proc.stderr, proc.stderr
    assert "Traceback" not in proc.stderr and proc.stdout == "" and took < 10


def test_unknown_system_exit_2(cli):
    proc = cli("validate", "--only", "t5221")
    assert proc.returncode == 2 and "t5220" in proc.stderr


def test_t5220_rows_come_from_the_simulator(cli_json):
    rows = cli_json("validate", "--only", "t5220")
    assert len(rows) == 30
    assert {r["system"] for r in rows} == {"t5220"}
    assert set(rows[0]) == set(FIELDS)
    # Throughput cells say what limited the simulation; latency cells do not.
    limit = {(r["series"], r["column"]): r["limit"] for r in rows}
    assert limit[("t5220_x8_slot", "simultaneous read and write")] == "memory t2 memory (100 %)"
    assert limit[("t5220_x8_slot", "DMA read only")].startswith("link sw0-pcie2 down")
    assert limit[("t2000_three_slots_dual_leaf", "DMA write only")].startswith("host bridge jbus host bridge")
    assert all(r["limit"] is None for r in rows if r["table"] == "dma_read_latency")
    calibrate = [r for r in rows if r["role"] == "calibrate"]
    assert {r["series"] for r in calibrate} == {"t5220_x8_slot", "t5220_pcie2"} and len(calibrate) == 4
    for r in rows:
        assert r["error"] == pytest.approx((r["simulated"] - r["published"]) / r["published"])
    # Two switch levels take longer than one; store-and-forward T2000 longer than both.
    lat = {r["series"]: r["simulated"] for r in rows if r["table"] == "dma_read_latency"}
    assert lat["t5220_pcie2"] < lat["t5220_pcie5"] < lat["t2000_x8"]


def _row(series, column, published, simulated, table="t"):
    return {
        "system": "s", "table": table, "series": series, "column": column, "unit": "u",
        "published": published, "simulated": simulated, "error": simulated / published - 1, "role": "predict",
    }  # fmt: skip


def test_switch_effects_pair_cells_and_judge_the_sign():
    from tlpsim.validation import summarize, switch_effects

    rows = [
        _row("without_switch", "64", 100, 100), _row("with_switch", "64", 130, 120),  # +30 % vs +20 %: agrees
        _row("without_switch", "128", 100, 100), _row("with_switch", "128", 80, 99.5),  # -20 % vs -0.5 %: too small
        _row("without_switch", "256", 100, 100), _row("with_switch", "256", 105, 50),  # 5 %: not a switch effect
        _row("ge_without_switch", "64", 100, 100), _row("ge_with_switch", "64", 50, 150),  # wrong sign
        _row("without_switch_x4", "r", 100, 100), _row("without_switch_x8", "r", 200, 200),
        _row("with_switch", "r", 150, 150),  # +50 % vs x4 (agrees), -25 % vs x8 (agrees)
    ]  # fmt: skip
    effects = switch_effects(rows)
    got = {(e.series, e.column): e.agrees for e in effects}
    assert got == {
        ("with_switch vs without_switch", "64"): True,
        ("with_switch vs without_switch", "128"): False,
        ("ge_with_switch vs ge_without_switch", "64"): False,
        ("with_switch vs without_switch_x4", "r"): True,
        ("with_switch vs without_switch_x8", "r"): True,
    }
    line = summarize("s", rows).line()
    assert line.endswith("switch effect sign agrees in 3/5 (60 %)"), line


def test_table_view_shows_a_large_systems_worst_rows_only():
    from tlpsim.cli import TABLE_ROWS_PER_SYSTEM, WORST_ROWS_SHOWN, _table_rows

    def row(system, i, role="predict"):
        return {"system": system, "error": (-1) ** i * i / 1000, "role": role, "column": str(i)}

    small = [row("seed", i) for i in range(10)]
    big = [row("big", i) for i in range(TABLE_ROWS_PER_SYSTEM + 100)] + [row("big", 10**6, "calibrate")]
    shown, lines = _table_rows(small + big)
    assert shown[:10] == small
    kept = shown[10:]
    assert len(kept) == WORST_ROWS_SHOWN and all(r["role"] == "predict" for r in kept)
    # The worst by |error|, in their original order.
    assert [int(r["column"]) for r in kept] == list(
        range(TABLE_ROWS_PER_SYSTEM + 100 - WORST_ROWS_SHOWN, TABLE_ROWS_PER_SYSTEM + 100)
    )
    assert len(lines) == 1 and lines[0].startswith(f"big: the {WORST_ROWS_SHOWN} worst predicted of 601 rows")


def test_h100_reference_numbers_are_the_medians_of_the_raw_runs():
    # modern.gpu_memcpy_h100 is this project's own measurement: every number in
    # reference.toml is the median of the three raw runs, rounded to 0.01 GB/s.
    import json
    import statistics
    import tomllib
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    raw = root / "data" / "measured" / "h100-gen5-vm"
    runs = [json.loads((raw / f"copy-run{i}.json").read_text())["rows"] for i in (1, 2, 3)]
    table = tomllib.loads((root / "validation" / "modern" / "reference.toml").read_text())["modern"]["gpu_memcpy_h100"]
    sizes = [r["size"] for r in runs[0]]
    assert all([r["size"] for r in run] == sizes for run in runs)
    assert len(table["columns"]) == len(sizes)
    for series in ("host_to_device", "device_to_host", "bidirectional_h2d", "bidirectional_d2h"):
        medians = [round(statistics.median(run[i][series] for run in runs), 2) for i in range(len(sizes))]
        assert table[series] == pytest.approx(medians, abs=1e-9), series


def test_the_registry_lists_pciebench_once_and_runs_it_through_the_core(monkeypatch):
    from tlpsim import _core, validation

    assert validation.systems() == _core.systems() and _core.systems().count("pciebench") == 1
    assert _core.front_systems() == [("pciebench", "tlpsim.pciebench")]
    row = {
        "system": "pciebench", "table": "hsw/bw_dma_sz_sweep", "series": "BW_DMA_RD HWarm", "column": "64B",
        "unit": "Gb/s", "published": 10.0, "simulated": 11.0, "error": 0.1, "role": "predict", "limit": None,
        "fold": "cross-host", "low": 9.5, "high": 12.5,
    }  # fmt: skip

    class Fixed:
        """The pciebench system's front-end side, answering with one fixed row."""

        def cells(self):
            return 2

        def compute(self, progress):
            progress(1, 2)
            progress(2, 2)
            return [dict(row)], ["pciebench: lat_cmd_details (not a DMA)"], ["fitted"]

        def summary_lines(self, rows):
            return [f"{len(rows)} pciebench rows"]

    monkeypatch.setattr(validation, "front_system", lambda name: Fixed())
    steps = []
    report = tlpsim.validate("pciebench", lambda done, total: steps.append((done, total)))
    # The row went through the core's one path, field for field and in order.
    assert list(report) == [row] and list(report[0]) == list(row)
    assert report.unmodelled_tables == ["pciebench: lat_cmd_details (not a DMA)"]
    assert report.details == {"pciebench": ["fitted"]} and report.pciebench == ["fitted"]
    assert report.group_lines() == ["1 pciebench rows"]
    # The core counts the front end's cells in the progress it reports (its counts passed on
    # at most every 0.1 s, the last one always).
    assert steps[0] == (0, 2) and steps[-1] == (2, 2) and steps == sorted(steps)
    # The core alone does not compute the system, and says so in one line.
    with pytest.raises(tlpsim.ConfigError, match="^system pciebench is computed by the front end"):
        _core.validate("pciebench")


def test_validate_on_the_fluid_engine_lists_what_it_does_not_compute(cli):
    from tlpsim.validation import validate as validate_on

    des = {(r["table"], r["series"], r["column"]): r for r in validate_on("t5220")}
    fluid = validate_on("t5220", engine="fluid")
    tables = {r["table"] for r in fluid}
    # Throughputs are computed, latencies are not rows but one line per table with the reason.
    assert "dma_bandwidth" in tables and "dma_read_latency" not in tables
    assert "t5220.dma_read_latency: 6 cells not run by the fluid engine (it gives no latencies" in " ".join(
        fluid.unmodelled_tables
    )
    # On these DMA cells the two engines agree within 5 % (2.0 % at most, where reads and writes share the memory).
    for r in fluid:
        d = des[(r["table"], r["series"], r["column"])]
        assert r["simulated"] == pytest.approx(d["simulated"], rel=0.05), (r["table"], r["series"], r["column"])
    with pytest.raises(tlpsim.ConfigError, match='engine "lp" is not allowed; allowed: des, fluid'):
        validate_on("t5220", engine="lp")
    out = cli("validate", "--only", "t5220", "--engine", "fluid").stdout
    assert "cells not run by the fluid engine" in out and "t5220: " in out
