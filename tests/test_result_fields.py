"""The Python result types accept fields a newer core adds, and keep them."""

import copy
import csv
import io
import json
from pathlib import Path

import pytest

import tlpsim
from tlpsim.cli import _run_rows
from tlpsim.output import Format, emit
from tlpsim.validation import ROW_FIELDS, write_report

EXAMPLE = Path(__file__).resolve().parent.parent / "scenarios" / "t5220-two-switches.toml"

#: A field no core has yet, with a nested value to show it is kept as it came.
NEW = {"queue_age_ns": {"mean": 1.5, "max": 7}}


def with_new_field(row: dict) -> dict:
    """``row`` with the new field added."""
    return {**row, "future_field": copy.deepcopy(NEW)}


def csv_rows(capsys, rows) -> list[dict]:
    """What ``--format csv`` prints for ``rows``, read back."""
    emit(rows, Format.csv, [])
    return list(csv.DictReader(io.StringIO(capsys.readouterr().out)))


@pytest.fixture(scope="module")
def run_dict() -> dict:
    """A run's JSON from the core, with a new field at the top and in every row of it."""
    d = tlpsim.run(EXAMPLE).to_dict()
    d = with_new_field(d)
    nested = ("latency_ns", "transfer_latency_ns", "bottleneck")
    d["flows"] = [
        with_new_field({k: with_new_field(v) if k in nested else v for k, v in f.items()}) for f in d["flows"]
    ]
    d["links"] = [with_new_field(link) for link in d["links"]]
    d["resources"] = [with_new_field(r) for r in d["resources"]] or [
        with_new_field({"name": "rc memory", "kind": "memory", "busy": 0.5})
    ]
    d["ethernet"] = [with_new_field({"name": d["flows"][0]["name"], "forwarded_mbps": 950.0, "dropped": 3})]
    d["audit"] = with_new_field(d["audit"])
    return d


@pytest.mark.parametrize(
    "kind, make",
    [
        (tlpsim.LinkBandwidth, lambda: tlpsim.link_bandwidth(gen=3, width=8, mps=256)),
        (tlpsim.MessageBandwidth, lambda: tlpsim.message_bandwidth(16384, 90, gen=1, width=4)),
    ],
)
def test_closed_form_results_keep_a_new_field(kind, make, capsys):
    data = with_new_field(make().to_dict())
    result = kind.from_dict(data)
    assert result.extra == {"future_field": NEW}
    assert result.to_dict() == data and list(result.to_dict())[-1] == "future_field"
    assert result == kind.from_dict(data) and hash(result) == hash(kind.from_dict(data))
    assert make().extra == {} and "extra" not in make().to_dict()
    (row,) = csv_rows(capsys, [result.to_dict()])
    assert row["future_field"] == str(NEW)


def test_a_run_result_keeps_new_fields_at_every_level(run_dict, capsys):
    result = tlpsim.RunResult.from_dict(run_dict)
    assert result.extra == {"future_field": NEW}
    assert result.to_dict() == run_dict
    assert json.loads(json.dumps(result.to_dict())) == run_dict
    assert all(f["future_field"] == NEW for f in result.flows)
    assert all(link["future_field"] == NEW for link in result.links)
    assert result.audit["future_field"] == NEW
    flat = result.flow_rows()[0]
    assert {"future_field", "latency_ns_future_field", "bottleneck_future_field"} <= flat.keys()
    assert {"transfer_latency_ns_future_field", "transfer_latency_ns_p99_9", "latency_ns_p95"} <= flat.keys()
    assert "future_field" in result.to_pandas().columns
    assert "future_field" in result.to_pandas("links").columns
    assert list(result.to_pandas("resources").columns) == ["name", "kind", "busy", "future_field"]
    rows = csv_rows(capsys, _run_rows(result))
    assert {r["kind"] for r in rows} == {"flow", "link", "resource"}
    assert all(r["future_field"] for r in rows)


def test_a_sweep_result_reads_runs_with_new_fields(run_dict):
    points = [{"pcie.mps": 128}, {"pcie.mps": 256}]
    result = tlpsim.SweepResult(["pcie.mps"], points, [run_dict, copy.deepcopy(run_dict)])
    rows = result.rows
    assert [r["pcie.mps"] for r in rows] == [128, 256]
    assert rows[0]["forwarded_mbps"] == 950.0 and rows[0]["frames_dropped"] == 3
    assert all(run["future_field"] == NEW for run in result.runs)
    assert all(run["flows"][0]["future_field"] == NEW for run in result.runs)
    assert len(result.to_pandas()) == 2


def test_a_validation_report_keeps_new_row_fields(tmp_path, capsys):
    def row(series, published, simulated, **more):
        return {
            "system": "s", "table": "t", "series": series, "column": "64", "unit": "Mb/s",
            "published": published, "simulated": simulated, "error": simulated / published - 1,
            "role": "predict", "limit": None, **more,
        }  # fmt: skip

    rows = [row("without_switch", 100.0, 100.0), with_new_field(row("with_switch", 120.0, 112.0))]
    report = tlpsim.ValidationReport(rows, ["t2"])
    assert report[1]["future_field"] == NEW
    (summary,) = report.summaries()
    assert summary.predicted == 2 and summary.switch_pairs == 1 and summary.switch_agree == 1
    assert "switch effect sign agrees in 1/1" in summary.line()
    assert write_report(report, tmp_path).is_file()
    printed = csv_rows(capsys, list(report))
    assert list(printed[0]) == [*ROW_FIELDS, "limit", "future_field"]
    assert printed[0]["future_field"] == "" and printed[1]["future_field"]
