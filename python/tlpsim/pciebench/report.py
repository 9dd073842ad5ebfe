"""The report of ``tlpsim fit DIR --report OUT``: a fitted pcie-bench directory as one
Markdown page and its self-contained HTML twin, with the assumptions block first, the machine
facts with their sources, the fitted parameters, the accuracy and band coverage, the
paper-style chart with the 90 % bands, and every cell (:func:`write_fit_report`)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from tlpsim.files import write_atomic
from tlpsim.pciebench.charts import write_charts
from tlpsim.pciebench.summary import summary_lines
from tlpsim.validation import md_row, write_html

if TYPE_CHECKING:
    from tlpsim.pciebench.pipeline import FitReport

__all__ = ["write_fit_report"]


def _number(value: float | None, spec: str = ".6g") -> str:
    return "" if value is None else format(value, spec)


def fit_report_text(report: FitReport, charts: list[Path]) -> str:
    """The Markdown of :func:`write_fit_report`, the charts named by file."""
    m = report.machine
    lines = [f"# tlpsim fit: {report.directory}", "", "## Assumptions", ""]
    assumed = m.assumptions
    lines += (
        [f"- {a}" for a in assumed]
        if assumed
        else ["Nothing assumed: every machine fact comes from the directory's sys-*.txt files."]
    )
    device = report.device_directory or "device keys given, not fitted"
    lines += ["", f"Device parameters fitted on {device} ({report.fold}); host parameters fitted on this directory.",
              "", "## Machine", "", md_row(["fact", "value", "source"]), "|---|---|---|"]  # fmt: skip
    lines += [md_row([f["fact"], f["value"], f["source"]]) for f in m.fact_rows()]
    lines += ["", "## Accuracy (predicted cells)", ""]
    lines += [f"- {line}" for line in summary_lines(report.rows, report.short)]
    lines += ["", "## Fitted parameters", "",
              md_row(["parameter", "in", "value", "fit", "calibrate cell", "published", "simulated", "error"]),
              "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for f in report.fitted_rows():
        error = "" if f["error"] is None else f"{100 * f['error']:+.2f} %"
        lines.append(md_row([
            f["parameter"], f["where"], f["value"], f["status"], f["cell"] or "", _number(f["published"]),
            _number(f["simulated"]), error,
        ]))  # fmt: skip
    lines += ["", "## Charts", "", "Measured as markers, tlpsim as lines, its 90 % band shaded.", ""]
    lines += [f"![{p.stem}]({p.name})" for p in charts]
    fields = ["table", "series", "column", "unit", "published", "simulated", "error", "role", "90 % low", "90 % high"]
    lines += ["", "## Cells", "", md_row(fields), "|" + "---|" * len(fields)]
    for r in report.rows:
        lines.append(md_row([
            r["table"], r["series"], r["column"], r["unit"], _number(r["published"]), _number(r["simulated"]),
            f"{100 * r['error']:+.2f} %", r["role"], _number(r.get("low")), _number(r.get("high")),
        ]))  # fmt: skip
    skipped = [f"{n.file} ({n.rows} rows): {n.reason}" for n in report.not_modelled]
    if skipped or report.notes:
        lines += ["", "## Not modelled, and notes", ""]
        lines += [f"- not modelled: {s}" for s in skipped] + [f"- note: {n}" for n in report.notes]
    return "\n".join(lines) + "\n"


def write_fit_report(report: FitReport, directory: Path, written: list[Path] | None = None) -> Path:
    """Writes ``directory/report.md``, its chart and ``directory/report.html`` (the same as
    one self-contained page) for a fitted directory; every file written is appended to
    ``written`` when given. Returns the Markdown file's path."""
    directory.mkdir(parents=True, exist_ok=True)
    charts = write_charts([report], directory)
    out = directory / "report.md"
    text = fit_report_text(report, charts)
    write_atomic(out, text, "report")
    html = write_html(text, directory / "report.html", directory, title=f"tlpsim fit: {report.short}")
    if written is not None:
        written += [out, html, *charts]
    return out
