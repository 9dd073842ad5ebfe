"""Charts of fitted pcie-bench directories in the style of the pcie-bench paper's figures:
one PNG per directory with bandwidth vs transfer size (with the link's limit), latency vs
transfer size, bandwidth vs window size, and latency distributions (:func:`write_charts`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tlpsim.importers.common import format_size
from tlpsim.link import link_bandwidth
from tlpsim.pciebench.cells import Cell
from tlpsim.pciebench.runner import Outcome

if TYPE_CHECKING:
    from tlpsim.pciebench.pipeline import FitReport

__all__ = ["write_charts"]

#: The simulated percentiles drawn against a measured distribution: (key, fraction).
_PERCENTILES = (("p50", 0.5), ("p95", 0.95), ("p99", 0.99), ("p99_9", 0.999), ("max", 1.0))


#: One cell drawn: the cell, its outcome and its validation row (with the band, ``low`` and ``high``).
Point = tuple[Cell, Outcome, dict[str, Any]]


def _series(ax, points: list[Point], x: str, color: str, label: str, marker: str = "o", ms: float = 3) -> None:
    """One series against ``x`` (``transfer_bytes`` or ``window_bytes``): measured as
    markers, tlpsim as a line, the 90 % band of its predicted cells shaded."""
    points = sorted(points, key=lambda p: getattr(p[0], x))
    if not points:
        return
    xs = [getattr(p[0], x) for p in points]
    ax.plot(xs, [p[0].published for p in points], marker, ms=ms, color=color, label=label)
    ax.plot(xs, [p[1].value for p in points], "-", lw=1, color=color)
    banded = [p for p in points if p[2].get("low") is not None]
    if banded:
        ax.fill_between(
            [getattr(p[0], x) for p in banded], [p[2]["low"] for p in banded], [p[2]["high"] for p in banded],
            color=color, alpha=0.15, lw=0,
        )  # fmt: skip


def _bandwidth_vs_size(ax, report: FitReport, pairs: list[Point]) -> None:
    cells = [p for p in pairs if p[0].stem == "bw_dma_sz_sweep"]
    for i, test in enumerate(("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW")):
        _series(ax, [p for p in cells if p[0].test == test], "transfer_bytes", f"C{i}", test[7:])
    sizes = sorted({p[0].transfer_bytes for p in cells})
    if sizes:
        m = report.machine
        link = [
            link_bandwidth(m.gen, m.width, mps=m.mps, payload=s, mrrs=m.mrrs, completion="mps", addressing=m.addressing)
            for s in sizes
        ]
        ax.plot(sizes, [b.write_gbps for b in link], "--", color="0.4", lw=1, label="link limit, writes")
        ax.plot(sizes, [b.read_gbps for b in link], ":", color="0.4", lw=1, label="link limit, reads")
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("bandwidth (Gb/s)")
    ax.set_title("bandwidth vs transfer size (8 KiB window, warm)")


def _latency_vs_size(ax, pairs: list[Point]) -> None:
    cells = [p for p in pairs if p[0].stem.startswith("lat_dma_sizes")]
    i = 0
    for test in ("LAT_DMA_RD", "LAT_DMA_WRRD"):
        for measure, label in (("latency_median_ns", "median"), ("latency_p99_9_ns", "p99.9")):
            series = [p for p in cells if (p[0].test, p[0].measure) == (test, measure)]
            _series(ax, series, "transfer_bytes", f"C{i}", f"{test[8:]} {label}", ms=2.5)
            i += 1
    ax.set_xlabel("transfer size (bytes)")
    ax.set_ylabel("latency (ns)")
    ax.set_title("latency vs transfer size (one DMA in flight)")


def _bandwidth_vs_window(ax, pairs: list[Point]) -> None:
    cells = [p for p in pairs if p[0].stem.startswith("bw_dma_win_sweep_") and p[0].cache == "Cold"]
    series = sorted({(p[0].test, p[0].transfer_bytes) for p in cells})
    for i, (test, size) in enumerate(series):
        one = [p for p in cells if (p[0].test, p[0].transfer_bytes) == (test, size)]
        marker = "o" if test.endswith("RD") else "s"
        _series(ax, one, "window_bytes", f"C{i}", f"{test[7:]} {size}B", marker)
    ax.set_xscale("log", base=2)
    windows = sorted({p[0].window_bytes for p in cells})
    if windows:
        # Every other power of two: 4 KiB, 16 KiB, 64 KiB ... (the sweep's steps crowd the axis).
        ticks = [w for w in windows if w & (w - 1) == 0 and (w.bit_length() - 1) % 2 == 0]
        ax.set_xticks(ticks)
        ax.set_xticklabels([format_size(w) for w in ticks], fontsize=7)
    ax.set_xlabel("window (host buffer touched)")
    ax.set_ylabel("bandwidth (Gb/s)")
    ax.set_title("bandwidth vs window size (Cold)")


def _latency_cdf(ax, report: FitReport, pairs: list[Point]) -> None:
    sections: dict[tuple, list[tuple[float, float]]] = {}
    for p in report.cdf:
        if p.get("test") == "LAT_DMA_RD" and p.get("transfer_bytes") == 64:
            key = (p["transfer_bytes"], p["window_bytes"], p["cache"])
            sections.setdefault(key, []).append((p["latency_ns"], p["cumulative_fraction"]))
    details = {
        (c.transfer_bytes, c.window_bytes, c.cache): o
        for c, o, _ in pairs
        if c.stem == "lat_dma_details" and c.test == "LAT_DMA_RD"
    }
    right = 0.0
    for i, (key, points) in enumerate(sorted(sections.items())):
        size, window, cache = key
        points.sort()
        ax.step([x for x, _ in points], [y for _, y in points], where="post", color=f"C{i}", lw=1,
                label=f"{size}B, {format_size(window)} window, {cache}")  # fmt: skip
        right = max(right, next((x for x, y in points if y >= 0.999), points[-1][0]))
        outcome = details.get(key)
        if outcome is not None:
            sim = [(outcome.latency[k], f) for k, f in _PERCENTILES if outcome.latency.get(k) is not None]
            ax.plot([x for x, _ in sim], [f for _, f in sim], "x", color=f"C{i}")
            right = max(right, outcome.latency.get("p99_9") or 0.0)
    if right:
        ax.set_xlim(right=1.15 * right)  # the measured tails run to tens of us: up to p99.9 shown
    ax.set_xlabel("read latency (ns)")
    ax.set_ylabel("cumulative fraction of DMAs")
    ax.set_title("LAT_DMA_RD 64 B distribution (x: tlpsim p50, p95, p99, p99.9, max)")


def chart_name(report: FitReport) -> str:
    """The file name of a fitted directory's chart: ``pciebench.SHORT.FOLD.png``."""
    return f"pciebench.{report.short}.{report.fold}.png"


def write_charts(reports: Sequence[FitReport], directory: Path) -> list[Path]:
    """One PNG per fitted directory and fold, :func:`chart_name` in ``directory``: four
    panels, measured as markers, tlpsim as lines and its 90 % band shaded, each panel in
    one unit."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for report in reports:
        pairs = list(zip(report.cells, report.outcomes, report.rows, strict=True))
        fig, axes = plt.subplots(2, 2, figsize=(13, 9))
        _bandwidth_vs_size(axes[0][0], report, pairs)
        _latency_vs_size(axes[0][1], pairs)
        _bandwidth_vs_window(axes[1][0], pairs)
        _latency_cdf(axes[1][1], report, pairs)
        for ax in axes.flat:
            ax.grid(alpha=0.3)
            if ax.get_legend_handles_labels()[0]:
                ax.legend(fontsize=6, loc="best")
        fig.suptitle(
            f"pciebench {report.short} ({report.fold}): measured (markers) vs tlpsim (lines, 90 % band shaded)"
        )
        fig.tight_layout()
        path = directory / chart_name(report)
        fig.savefig(path, dpi=100)
        plt.close(fig)
        paths.append(path)
    return paths
