"""`tlpsim validate --report`: every table a real table, a page that renders, charts that
read, and the files written listed."""

import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import matplotlib.image
import numpy as np
import pytest

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")


class Tables(HTMLParser):
    """Counts <table> elements and collects the page's text outside tags."""

    def __init__(self):
        super().__init__()
        self.tables = 0
        self.text: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tables += tag == "table"

    def handle_data(self, data):
        self.text.append(data)


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess]:
    out = tmp_path_factory.mktemp("report")
    # The installed CLI in a fresh interpreter, as conftest's runner starts it: the
    # environment's `tlpsim` script need not be on PATH (a venv used without activating it).
    proc = subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", "validate", "--only", "pes24n3a", "--report", str(out)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return out, proc


def test_validate_report_lists_the_files_it_wrote(report):
    out, proc = report
    listed = [line.strip() for line in proc.stderr.splitlines() if line.startswith("  ")]
    assert str(out / "report.md") in listed and str(out / "report.html") in listed
    assert sorted(listed) == sorted(str(p) for p in out.iterdir())


def test_every_markdown_table_keeps_its_columns(report):
    out, _ = report
    lines = (out / "report.md").read_text().splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|---"):
            width = line.count("|")
            block = [lines[i - 1]]
            for row in lines[i + 1 :]:
                if not row.startswith("|"):
                    break
                block.append(row)
            for row in block:
                assert row.replace("\\|", "").count("|") == width, row


def test_every_html_table_is_a_table(report):
    out, _ = report
    md = (out / "report.md").read_text()
    page = Tables()
    page.feed((out / "report.html").read_text())
    assert page.tables == md.count("\n|---")
    assert "|---" not in "".join(page.text)


@pytest.mark.skipif(CHROMIUM is None and not os.environ.get("CI"), reason="no headless chromium here")
def test_the_page_renders_in_a_headless_browser(report, tmp_path):
    assert CHROMIUM, "CI needs chromium: .ci/run installs it"
    out, _ = report
    shot = tmp_path / "shot.png"
    subprocess.run(
        [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", f"--screenshot={shot}",
         "--window-size=1280,2400", (out / "report.html").as_uri()],
        capture_output=True, timeout=120, check=True,
    )  # fmt: skip
    pixels = matplotlib.image.imread(shot)[..., :3]
    ink = (pixels.min(axis=2) < 0.9).mean()
    colours = len(np.unique((pixels * 15).round().reshape(-1, 3), axis=0))
    assert ink > 0.03, f"only {ink:.1%} of the page is not white"
    assert colours > 20


def test_an_existing_report_needs_force(report, cli):
    out, _ = report
    before = (out / "report.md").read_bytes()
    proc = cli("validate", "--only", "pes24n3a", "--report", str(out))
    assert proc.returncode == 2
    assert "holds a report already: add --force" in proc.stderr
    assert (out / "report.md").read_bytes() == before


def test_no_chart_axis_mixes_units_and_each_names_its_quantity():
    import tlpsim
    from tlpsim.validation import axis_label, chart_panels

    rows = list(tlpsim.validate(only="modern"))
    nvme = chart_panels([r for r in rows if r["table"] == "nvme_optane_p4800x"])
    # One table, one "per column" unit: MB/s, thousands of IOPS and microseconds on their own axes.
    assert set(nvme) == {"throughput (MB/s)", "IOPS (k)", "latency (us)"}
    assert {r["column"] for r in nvme["latency (us)"]} >= {"mean latency (us)", "median latency (us)"}
    for table in {r["table"] for r in rows}:
        for panel in chart_panels([r for r in rows if r["table"] == table]).values():
            units = {r["unit"] for r in panel}
            assert len(units) == 1 or units == {"per column (MB/s, thousands of IOPS, us)"}
    assert axis_label("Gb/s") == "throughput (Gb/s)"
    assert axis_label("ns") == "latency (ns)"
    assert axis_label("million TLP/s") == "TLP rate (million TLP/s)"
    assert axis_label("3DMark05 score") == "3DMark05 score"


def test_each_column_draws_only_its_series_centred_on_its_tick():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from tlpsim.validation import draw_panel

    # Two columns, each published for a different series (modern.fpga_dma_intel_an690's shape).
    panel = [
        {"series": "writes", "column": "Signal Tap", "published": 7.1, "simulated": 7.2},
        {"series": "both", "column": "driver", "published": 12.9, "simulated": 14.0},
    ]
    fig, ax = plt.subplots()
    draw_panel(ax, "throughput (GBps)", panel)
    bars = [(p.get_x() + p.get_width() / 2, p.get_height()) for p in ax.patches]
    plt.close(fig)
    assert len(bars) == 4
    for tick in (0, 1):
        centres = [x for x, _ in bars if abs(x - tick) < 0.5]
        assert len(centres) == 2 and abs(sum(centres) / 2 - tick) < 1e-9
    assert ax.get_ylabel() == "throughput (GBps)"
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "writes (published)", "writes (tlpsim)", "both (published)", "both (tlpsim)"
    ]  # fmt: skip


# --- issue 35, item 15: one spelling per rate in the report -----------------------------------

#: Each spelling the reference files use for a rate, and the one the report shows.
SPELLINGS = [
    ("MBps", "MB/s"), ("GBps", "GB/s"), ("GBPS", "GiB/s"), ("Gbit/s", "Gb/s"), ("Mbit/s", "Mb/s"),
    ("Gbit/s, TCP stream, 10 s per point", "Gb/s, TCP stream, 10 s per point"),
    ("GE: Mbit/s per frame size; SAS: MB/s", "GE: Mb/s per frame size; SAS: MB/s"),
    ("fractional reduction of the 6.10 Gb/s maximum", "fractional reduction of the 6.10 Gb/s maximum"),
    ("Gb/s", "Gb/s"), ("ns", "ns"),
]  # fmt: skip


@pytest.mark.parametrize(("published", "shown"), SPELLINGS)
def test_a_rate_has_one_spelling_on_the_charts(published, shown):
    from tlpsim.validation import axis_label, display_unit

    assert display_unit(published) == shown
    assert axis_label(published) == axis_label(shown)
    if shown in ("MB/s", "GB/s", "GiB/s", "Gb/s", "Mb/s"):
        assert axis_label(published) == f"throughput ({shown})"


def test_one_rate_spelled_two_ways_shares_one_panel():
    from tlpsim.validation import chart_panels

    rows = [
        {"series": "a", "column": "x", "unit": "Gbit/s", "published": 1.0, "simulated": 1.0},
        {"series": "b", "column": "x", "unit": "Gb/s", "published": 2.0, "simulated": 2.0},
    ]
    assert list(chart_panels(rows)) == ["throughput (Gb/s)"]


def test_the_report_spells_units_once_and_the_rows_keep_the_published_ones(tmp_path):
    from tlpsim.validation import ValidationReport, write_report

    rows = [
        {"system": "modern", "table": f"t{i}", "series": "s", "column": "c", "unit": unit, "published": 1.0,
         "simulated": 1.1, "error": 0.1, "role": "predict", "limit": None}
        for i, (unit, _) in enumerate(SPELLINGS[:5])
    ]  # fmt: skip
    report = ValidationReport(rows, [])
    write_report(report, tmp_path)
    cells = (tmp_path / "report.md").read_text().split("## Cells", 1)[1]
    for published, shown in SPELLINGS[:5]:
        assert f"| {shown} |" in cells
        assert f"| {published} |" not in cells or published == shown
    assert [r["unit"] for r in report] == [u for u, _ in SPELLINGS[:5]]
