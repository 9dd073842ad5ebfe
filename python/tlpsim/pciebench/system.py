"""The ``pciebench`` system of the validation registry (``validation/pciebench/front.toml``):
the part the front end computes. The core lists the system, checks ``--only`` against it,
counts its cells in the progress and places its rows; :func:`validation_system` gives it
what :mod:`tlpsim.validation` hands the core: the cell count, the rows (the nine shipped
directories, cross-host and in-sample, :func:`tlpsim.pciebench.pipeline.validate_reports`),
the lines of what is not modelled, and the fitted directories behind the charts and summary
lines of a report."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tlpsim.pciebench.pipeline import SYSTEM, FitReport, validate_cell_count, validate_reports

__all__ = ["PcieBenchSystem", "validation_system"]


class PcieBenchSystem:
    """The ``pciebench`` validation system as the registry's front interface asks:
    ``cells``, ``compute``, ``charts`` and ``summary_lines``."""

    name = SYSTEM

    def cells(self) -> int:
        """How many cells :meth:`compute` simulates: each shipped directory's, once per fold."""
        return validate_cell_count()

    def compute(self, progress: Callable[[int, int], None]) -> tuple[list[dict[str, Any]], list[str], list[FitReport]]:
        """(rows, what is not modelled, the fitted directories): the rows in the validation
        format (with ``fold``, ``low`` and ``high``), cross-host first;
        ``progress(done, total)`` as cells finish."""
        reports = validate_reports(progress)
        rows = [r for report in reports for r in report.rows]
        return rows, unmodelled_lines(reports), reports

    def charts(self, reports: Sequence[FitReport], directory: Path) -> list[Path]:
        """One PNG per fitted directory and fold, in the style of the pcie-bench paper."""
        from tlpsim.pciebench.charts import write_charts

        return write_charts(reports, directory)

    def summary_lines(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Its accuracy per test group and fold, IOMMU falls, remote penalties, band coverage."""
        from tlpsim.pciebench.summary import summary_lines

        return summary_lines(rows)


def unmodelled_lines(reports: Sequence[FitReport]) -> list[str]:
    """The pcie-bench result files without cells, one line per reason."""
    by_reason: dict[str, dict[str, None]] = {}
    for report in reports:
        for n in report.not_modelled:
            by_reason.setdefault(n.reason, {})[n.file.removesuffix(".txt")] = None
    return [f"{SYSTEM}: {', '.join(sorted(files))} ({reason})" for reason, files in by_reason.items()]


def validation_system(name: str) -> PcieBenchSystem:
    """The front-end side of validation system ``name`` (``pciebench``); any other name is an
    error of the registry, said in one line."""
    if name != SYSTEM:
        raise ValueError(f"tlpsim.pciebench computes validation system {SYSTEM}, not {name}")
    return PcieBenchSystem()
