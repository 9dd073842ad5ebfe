"""The validation suite: published seed-report numbers against tlpsim's."""

from __future__ import annotations

import re
import statistics
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlpsim import _core
from tlpsim.files import write_atomic

#: Field order of a validation row (DESIGN.md).
ROW_FIELDS = ("system", "table", "series", "column", "unit", "published", "simulated", "error", "role")


def systems() -> list[str]:
    """Every system ``validate(only=...)`` takes: the validation registry's, sorted by name
    (the folders of ``validation/``, ``pciebench`` among them)."""
    return _core.systems()


def front_system(name: str):
    """The front-end side of registry system ``name`` whose cells the ``tlpsim`` package
    computes (``validation/NAME/front.toml`` names the package; its
    ``validation_system(name)`` gives an object with ``cells()``, ``compute(progress)``,
    ``charts(details, directory)`` and ``summary_lines(rows)``)."""
    import importlib

    return importlib.import_module(dict(_core.front_systems())[name]).validation_system(name)


class _FrontEnd:
    """What :func:`validate` hands the core for the systems the front end computes: the core
    asks ``cells(system)`` for its progress total, then ``compute(system, step)`` for the rows
    and unmodelled lines; what else each system computed (``pciebench``: its fitted
    directories) stays in :attr:`details` for the report."""

    def __init__(self) -> None:
        self.details: dict[str, Any] = {}

    def cells(self, system: str) -> int:
        """How many cells ``system`` simulates."""
        return front_system(system).cells()

    def compute(self, system: str, step: Callable[[int], bool]) -> tuple[list[dict], list[str]]:
        """``system``'s rows and unmodelled lines; ``step(done)`` as cells finish, which says
        False when the core stops the validation (then no further cell starts)."""

        def progress(done: int, _total: int) -> None:
            if not step(done):
                raise KeyboardInterrupt

        rows, unmodelled, self.details[system] = front_system(system).compute(progress)
        return rows, unmodelled


class ValidationReport(list):
    """The validation rows (dicts with :data:`ROW_FIELDS` and ``limit``; a front-end system's
    with ``fold``, ``low`` and ``high`` too), plus the tables not modelled yet and what each
    front-end system computed besides its rows (``details``: ``pciebench``'s fitted
    directories, a list of :class:`tlpsim.pciebench.FitReport`, for its charts)."""

    def __init__(self, rows: list[dict], unmodelled_tables: list[str], details: dict[str, Any] | None = None):
        super().__init__(rows)
        self.unmodelled_tables = unmodelled_tables
        self.details = details or {}

    @property
    def pciebench(self) -> list:
        """The ``pciebench`` system's fitted directories (empty without its rows)."""
        return self.details.get("pciebench", [])

    def to_pandas(self):
        """The rows as a pandas DataFrame: one row per cell, the columns of
        :data:`ROW_FIELDS` first, then any other field the rows carry (``limit`` ...)."""
        import pandas as pd

        columns = dict.fromkeys(ROW_FIELDS)
        for r in self:
            columns.update(dict.fromkeys(r))
        return pd.DataFrame(list(self), columns=list(columns))

    def summaries(self) -> list[SystemSummary]:
        """One accuracy summary per system, over its predicted cells (a system with folds:
        its cross-host cells, the out-of-sample figures; its group lines give both folds)."""
        out_of_sample = [r for r in self if r.get("fold", "cross-host") == "cross-host"]
        return [summarize(system, [r for r in out_of_sample if r["system"] == system]) for system in _systems_in(self)]

    def group_lines(self) -> list[str]:
        """The front-end systems' own summary lines (``pciebench``: accuracy per test group,
        its IOMMU window sweeps' falls, its remote-socket penalties), one line each; empty
        without their rows."""
        fronts = dict(_core.front_systems())
        return [
            line
            for system in _systems_in(self)
            if system in fronts
            for line in front_system(system).summary_lines([r for r in self if r["system"] == system])
        ]


@dataclass(frozen=True)
class SystemSummary:
    """Accuracy of one system over its ``predict`` cells."""

    system: str
    predicted: int
    calibrated: int
    median_abs_error: float | None
    max_abs_error: float | None
    worst: dict | None = field(default=None, compare=False)
    #: Published with/without-switch pairs differing by more than 10 %, and how many of them
    #: the simulation moves the same way (see :func:`switch_effects`).
    switch_pairs: int = 0
    switch_agree: int = 0

    def line(self) -> str:
        """The one-line summary printed after the table."""
        if not self.predicted:
            return f"{self.system}: no predicted cells ({self.calibrated} calibrated)"
        return (
            f"{self.system}: {self.predicted} predicted cells, "
            f"median |error| {100 * self.median_abs_error:.1f} %, "
            f"max |error| {100 * self.max_abs_error:.1f} % "
            f"({self.worst['table']}.{self.worst['series']} @ {self.worst['column']})"
            + (f", {self.calibrated} calibrated" if self.calibrated else "")
            + (
                f", switch effect sign agrees in {self.switch_agree}/{self.switch_pairs} "
                f"({100 * self.switch_agree / self.switch_pairs:.0f} %)"
                if self.switch_pairs
                else ""
            )
        )


#: Published with/without difference that counts as a switch effect.
SWITCH_EFFECT = 0.10
#: Smallest simulated difference that counts as moving at all: the RFC 2544 search's
#: resolution (1 %); anything smaller is the search's noise.
SIMULATED_EFFECT = 0.01


@dataclass(frozen=True)
class SwitchEffect:
    """One published with-switch cell against its without-switch cell."""

    table: str
    series: str
    column: str
    published: float
    simulated: float

    @property
    def agrees(self) -> bool:
        """The simulated change has the published change's sign (and is over 1 %)."""
        return abs(self.simulated) >= SIMULATED_EFFECT and (self.simulated > 0) == (self.published > 0)


def switch_effects(rows: list[dict]) -> list[SwitchEffect]:
    """Relative with/without-switch differences, published and simulated, wherever the
    published ones exceed 10 %. A series named ``..with_switch..`` pairs with every series of
    its table named ``..without_switch..`` the same way (``without_switch_x4``,
    ``without_switch_x8``), cell by cell in the same column."""
    out = []
    for r in rows:
        if "with_switch" not in r["series"]:
            continue
        head, tail = r["series"].split("with_switch", 1)
        for base in rows:
            if (base["system"], base["table"], base["column"]) != (r["system"], r["table"], r["column"]):
                continue
            series = base["series"]
            if not (series.startswith(head + "without_switch") and series.endswith(tail)):
                continue
            published = r["published"] / base["published"] - 1
            if abs(published) <= SWITCH_EFFECT:
                continue
            simulated = r["simulated"] / base["simulated"] - 1
            out.append(SwitchEffect(r["table"], f"{r['series']} vs {series}", r["column"], published, simulated))
    return out


def _systems_in(rows: list[dict]) -> list[str]:
    return list(dict.fromkeys(r["system"] for r in rows))


def summarize(system: str, rows: list[dict]) -> SystemSummary:
    """Median and max |error| over the predicted cells of ``rows``."""
    predicted = [r for r in rows if r["role"] == "predict"]
    calibrated = len(rows) - len(predicted)
    if not predicted:
        return SystemSummary(system, 0, calibrated, None, None)
    errors = [abs(r["error"]) for r in predicted]
    worst = max(predicted, key=lambda r: abs(r["error"]))
    effects = switch_effects(rows)
    return SystemSummary(
        system, len(predicted), calibrated, statistics.median(errors), max(errors), worst,
        len(effects), sum(e.agrees for e in effects),
    )  # fmt: skip


def validate(
    only: str | None = None, progress: Callable[[int, int], None] | None = None, engine: str = "des"
) -> ValidationReport:
    """Every modelled published number: rows with :data:`ROW_FIELDS`, plus ``limit``: what
    limited the simulation behind a throughput cell (each flow's bottleneck; for an RFC 2544
    cell, at full load), or None.

    ``only`` restricts the run to one system (one of :func:`systems`); an unknown name raises
    :class:`tlpsim.ConfigError`. Every system goes through the core's one path; the rows of
    those the front end computes (``pciebench``: the nine shipped pcie-bench directories,
    :mod:`tlpsim.pciebench`) come after the others'. ``progress(done, total)`` is called as
    simulated cells finish. Ctrl-C stops the validation: no further cell starts, and
    KeyboardInterrupt is raised once the running ones finish.

    ``engine="fluid"`` computes the simulated cells on the flow-level engine: the cells it
    does not compute (latencies, frame losses, systems it refuses, ``pciebench``) are not rows
    but entries of ``unmodelled`` naming their table and the reason.
    """
    front = _FrontEnd()
    rows, unmodelled = _core.validate(only, progress, front, engine)
    return ValidationReport(rows, unmodelled, front.details)


def write_charts(report: ValidationReport, directory: Path) -> list[Path]:
    """One PNG per published table, as the seed reports chart them: grouped bars per column
    of the table (frame size, workload ...), published (solid) beside tlpsim (hatched) for
    each series (with and without the switch ...), one panel per unit, labelled axes and the
    legend outside the bars; a front-end system's own charts (``pciebench``: one PNG per
    directory in the style of the pcie-bench paper), all in the order of the systems' rows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    fronts = dict(_core.front_systems())
    charted: set[str] = set()
    for system, table in dict.fromkeys((r["system"], r["table"]) for r in report):
        if system in fronts:
            if system not in charted and system in report.details:
                paths += front_system(system).charts(report.details[system], directory)
            charted.add(system)
            continue
        rows = [r for r in report if r["system"] == system and r["table"] == table]
        path = directory / f"{system}.{table}.png"
        _table_chart(plt, f"{system}.{table}", rows, path)
        paths.append(path)
    return paths


#: Characters a line of a column's name under its bars holds before it wraps.
TICK_WIDTH = 16

#: Width of one column's group of bars on the x axis (1 = touching the next group).
BAR_GROUP = 0.8


#: One spelling per rate, as the report and its charts show it, for each way the published
#: tables write it (the reference files keep theirs). MCDMA's "GBPS" is GiB/s (its bytes in
#: 5 s say so; validation/modern/sources.md), and its cell is simulated in GiB/s.
UNIT_SPELLING = {
    "Gbit/s": "Gb/s", "Gbps": "Gb/s", "Mbit/s": "Mb/s", "Mbps": "Mb/s", "GBps": "GB/s", "MBps": "MB/s",
    "GBPS": "GiB/s",
}  # fmt: skip

_SPELLED = re.compile(r"(?<![\w/])(" + "|".join(map(re.escape, UNIT_SPELLING)) + r")(?![\w/])")


def display_unit(unit: str) -> str:
    """``unit`` as the report shows it: each rate in its one spelling (``Gbit/s, TCP`` ->
    ``Gb/s, TCP``, ``MBps`` -> ``MB/s``), the rest as published."""
    return _SPELLED.sub(lambda m: UNIT_SPELLING[m[1]], unit)


#: The quantity a unit measures, by how the unit starts (the longest match wins): a chart's
#: axis reads "quantity (unit)". A unit not here names its quantity itself ("fraction of drops").
QUANTITY_OF_UNIT = {
    "Gb/s": "throughput", "GB/s": "throughput", "GiB/s": "throughput", "MB/s": "throughput",
    "Mb/s": "throughput", "kframe/s": "frame rate", "million TLP/s": "TLP rate", "ns": "latency",
    "us": "latency", "%": "share", "fraction": "share", "bytes": "size",
}  # fmt: skip


def axis_label(unit: str) -> str:
    """A chart axis label naming the quantity and its unit (in its one spelling, see
    :func:`display_unit`), wrapped to 45 characters a line."""
    unit = display_unit(unit)
    known = [u for u in QUANTITY_OF_UNIT if unit == u or unit.startswith((u + " ", u + ","))]
    label = f"{QUANTITY_OF_UNIT[max(known, key=len)]} ({unit})" if known else unit
    return textwrap.fill(label, 45)


def chart_panels(rows: list[dict]) -> dict[str, list[dict]]:
    """A table's rows by the axis they are drawn on: one axis label per unit, so no axis mixes
    units. A table whose unit is "per column" gets a panel per column's own measure
    (latency columns in one unit share one)."""
    panels: dict[str, list[dict]] = {}
    for row in rows:
        unit = row["unit"]
        if unit.startswith("per column"):
            latency = re.search(r"latency \((\w+)\)$", row["column"])
            label = f"latency ({latency[1]})" if latency else axis_label(row["column"])
        else:
            label = axis_label(unit)
        panels.setdefault(label, []).append(row)
    return panels


def _table_chart(plt, title: str, rows: list[dict], path: Path) -> None:
    """Draws one published table's rows as grouped bars (one panel per unit) into ``path``."""
    panels = chart_panels(rows)
    columns_most = max(len({r["column"] for r in panel}) for panel in panels.values())
    fig, axes = plt.subplots(
        len(panels), 1, figsize=(max(6.5, 1.3 * columns_most + 4), 3.8 * len(panels)), squeeze=False
    )
    for ax, (label, panel) in zip(axes[:, 0], panels.items(), strict=True):
        draw_panel(ax, label, panel)
    fig.suptitle(f"{title}: published vs tlpsim")
    fig.tight_layout()
    fig.savefig(path, dpi=110, bbox_inches="tight")
    plt.close(fig)


def draw_panel(ax, label: str, panel: list[dict]) -> None:
    """Draws rows of one unit on ``ax``: a group of bars per column of the published table,
    published (solid) beside tlpsim (hatched) for each series the column has, centred on the
    column's tick; ``label`` names the y axis; the legend sits right of the axes."""
    columns = list(dict.fromkeys(r["column"] for r in panel))
    series = list(dict.fromkeys(r["series"] for r in panel))
    # Each column's group holds only the series it has, centred on its tick.
    present = [[r for r in panel if r["column"] == c] for c in columns]
    bar = BAR_GROUP / (2 * max(map(len, present)))
    for x, group in enumerate(present):
        for j, row in enumerate(sorted(group, key=lambda r: series.index(r["series"]))):
            i = series.index(row["series"])
            color = f"C{i % 10}"
            for k, (key, source) in enumerate((("published", "published"), ("simulated", "tlpsim"))):
                ax.bar(
                    x - len(group) * bar + (2 * j + k + 0.5) * bar, row[key], bar,
                    color=color if k == 0 else "white", edgecolor=color, hatch="///" if k else None,
                    label=f"{i:04d}{k}{row['series']} ({source})",
                )  # fmt: skip
    # One legend entry per series and source, in series order (the label's prefix sorts it).
    entries = dict(zip(*reversed(ax.get_legend_handles_labels()), strict=True))
    keys = sorted(entries)
    # Long column names wrap under their bars rather than slant into the next ones.
    ax.set_xticks(range(len(columns)))
    ax.set_xticklabels([textwrap.fill(c, TICK_WIDTH) for c in columns], fontsize=8)
    ax.set_xlabel("column of the published table")
    ax.set_ylabel(label)
    ax.grid(axis="y", alpha=0.3)
    ax.set_axisbelow(True)
    ax.legend(
        [entries[k] for k in keys],
        [k[5:] for k in keys],
        fontsize=7,
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        frameon=False,
    )


def md_row(cells) -> str:
    """One Markdown table row; a ``|`` inside a cell is escaped so it cannot split the cell."""
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def write_report(report: ValidationReport, directory: Path, written: list[Path] | None = None) -> Path:
    """Writes ``directory/report.md`` (summaries, a chart per table, every row, what is not
    modelled yet), the charts next to it, and ``directory/report.html``: the same as one
    self-contained page. Every file written is appended to ``written`` when given."""
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / "report.md"
    charts = write_charts(report, directory)
    lines = ["# tlpsim validation report", "", "## Summary (predicted cells)", ""]
    lines += [f"- {s.line()}" for s in report.summaries()]
    lines += [f"- {line}" for line in report.group_lines()]
    lines += ["", "## Per table (predicted cells)", ""]
    lines += [md_row(["table", "predicted", "median |error|"]), "|---|---|---|"]
    tables = dict.fromkeys((r["system"], r["table"]) for r in report)
    for system, table in tables:
        errors = [
            abs(r["error"]) for r in report if (r["system"], r["table"]) == (system, table) and r["role"] == "predict"
        ]
        if errors:
            lines.append(md_row([f"{system}.{table}", len(errors), f"{100 * statistics.median(errors):.1f} %"]))
    effects = [
        (system, e)
        for system in _systems_in(report)
        for e in switch_effects([r for r in report if r["system"] == system])
    ]
    if effects:
        lines += ["", "## Switch effects (published with/without difference over 10 %)", ""]
        lines += ["| table | series | column | published | tlpsim | same sign |", "|---|---|---|---|---|---|"]
        for system, e in effects:
            lines.append(md_row([
                f"{system}.{e.table}", e.series, e.column, f"{100 * e.published:+.1f} %",
                f"{100 * e.simulated:+.1f} %", "yes" if e.agrees else "no",
            ]))  # fmt: skip
    lines += ["", "## Charts", ""]
    lines += [f"![{p.stem}]({p.name})" for p in charts]
    fields = (*ROW_FIELDS, "limit")
    note = (
        "What limited the simulation is given for throughput cells: "
        "each flow's bottleneck (for an RFC 2544 cell, at full load)."
    )
    lines += ["", "## Cells", "", note, "", md_row(fields), "|" + "---|" * len(fields)]
    for r in report:
        cells = [
            r["system"], r["table"], r["series"], r["column"], display_unit(r["unit"]),
            f"{r['published']:.6g}", f"{r['simulated']:.6g}", f"{100 * r['error']:+.2f} %", r["role"],
            r.get("limit") or "",
        ]  # fmt: skip
        lines.append(md_row(cells))
    if report.unmodelled_tables:
        lines += ["", "## Published tables not modelled yet", ""]
        lines += [f"- {t}" for t in report.unmodelled_tables]
    text = "\n".join(lines) + "\n"
    write_atomic(out, text, "report")
    write_html(text, directory / "report.html", directory)
    if written is not None:
        written += [out, directory / "report.html", *charts]
    return out


def write_html(markdown: str, out: Path, images: Path, title: str = "tlpsim validation report") -> Path:
    """Writes ``markdown`` as one self-contained HTML page: tables rendered, every chart
    (a PNG in ``images``) embedded, so that the page can be mailed or archived alone."""
    import base64
    import html
    import re

    from markdown_it import MarkdownIt

    body = MarkdownIt("commonmark").enable("table").render(markdown)

    def embed(m: re.Match) -> str:
        path = images / html.unescape(m.group(1))
        if not path.is_file():
            return m.group(0)
        return f'src="data:image/png;base64,{base64.b64encode(path.read_bytes()).decode()}"'

    body = re.sub(r'src="([^"]+\.png)"', embed, body)
    style = (
        "body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em}"
        "table{border-collapse:collapse;font-size:90%}td,th{border:1px solid #ccc;padding:2px 6px}"
        "img{max-width:100%}"
    )
    write_atomic(
        out,
        f'<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>{html.escape(title)}</title>'
        f"<style>{style}</style></head><body>\n{body}</body></html>\n",
        "report",
    )
    return out
