"""The cells of a pcie-bench directory: one published number each, named as validation rows.

A cell is one measurement of one DMA test (``BW_DMA_RD``, ``BW_DMA_WR``, ``BW_DMA_RW``,
``LAT_DMA_RD``, ``LAT_DMA_WRRD``) with what it measures: a bandwidth (``bw_gbps``, Gb/s: the
column pcie-bench heads "GB/s" holds gigabits per second, see docs/pcie-bench-data.md) or a
latency's median or 99.9th percentile (ns). Files of other tests are listed by
:func:`not_modelled` with the reason.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tlpsim.importers.common import format_size
from tlpsim.importers.pciebench import PcieBenchData

__all__ = ["Cell", "NotModelled", "TESTS", "cells_of", "not_modelled", "short_name"]

#: The DMA tests the pipeline models.
TESTS = ("BW_DMA_RD", "BW_DMA_WR", "BW_DMA_RW", "LAT_DMA_RD", "LAT_DMA_WRRD")

#: Result files whose cells are modelled, by the start of their stem.
MODELLED_FILES = (
    "bw_dma_sz_sweep", "bw_dma_win_sweep_", "lat_dma_sizes", "lat_dma_sweep_", "lat_dma_details",
)  # fmt: skip

#: Result files left out, by the start of their stem, and why.
UNMODELLED_FILES = {
    "bw_dma_off_": "offset grid: NFP-internal alignment effects, not PCIe or host ones",
    "lat_dma_off_": "offset grid: NFP-internal alignment effects, not PCIe or host ones",
    "lat_cmd_": "the NFP's command interface, not a DMA",
}

#: What a latency test's cells measure, and their label in a series name.
LATENCY_MEASURES = (("latency_median_ns", "median"), ("latency_p99_9_ns", "p99.9"))


@dataclass(frozen=True)
class Cell:
    """One published pcie-bench number and the row that names it."""

    #: The pcie-bench directory's name.
    directory: str
    #: BW_DMA_RD, BW_DMA_WR, BW_DMA_RW, LAT_DMA_RD or LAT_DMA_WRRD.
    test: str
    #: The result file and the line of the measurement in it.
    file: str
    line: int
    transfer_bytes: int
    window_bytes: int
    #: Seq or Rand.
    pattern: str
    #: HWarm, Cold, DWarm or DThrash.
    cache: str
    host_offset: int
    device_offset: int
    #: bw_gbps, latency_median_ns or latency_p99_9_ns.
    measure: str
    published: float
    #: Gb/s or ns.
    unit: str
    #: Row naming: ``bdw-s0-s0-s0/bw_dma_sz_sweep``, ``BW_DMA_RD HWarm``, ``64B``.
    table: str
    series: str
    column: str

    @property
    def stem(self) -> str:
        """The result file's name without ``.txt``: ``bw_dma_sz_sweep``."""
        return self.file.removesuffix(".txt")

    @property
    def is_bandwidth(self) -> bool:
        """A bandwidth test's cell (BW_DMA_*)."""
        return self.measure == "bw_gbps"


@dataclass(frozen=True)
class NotModelled:
    """A result file (or the part of one) whose measurements have no cells, and why."""

    file: str
    rows: int
    reason: str


def short_name(host: dict[str, Any]) -> str:
    """A directory's short name from what its name says (``parse_host_name``): the CPU
    architecture (else the CPU, else the whole name), the sockets of device, memory and
    warming CPU, then ``iommu``, ``nosp`` and any other word: ``bdw-s0-s0-s0``, ``hsw``,
    ``hsw-iommu-nosp``, ``bdw-s0-s1-s1-iommu-nosp``."""
    base = host.get("cpu_arch") or host.get("cpu") or host.get("name") or "host"
    words = [base]
    sockets = (host.get("device_socket"), host.get("memory_socket"), host.get("warming_socket"))
    if sockets[0] is not None:
        words += [f"s{s}" for s in sockets]
    if host.get("iommu"):
        words.append("iommu")
        if host.get("iommu_super_pages") is False:
            words.append("nosp")
    words += list(host.get("misc") or [])
    return "-".join(str(w) for w in words)


def _reason(stem: str, test: str | None) -> str | None:
    """Why a row of file ``stem`` has no cell, or None when it is modelled."""
    for start, why in UNMODELLED_FILES.items():
        if stem.startswith(start):
            return why
    if not stem.startswith(MODELLED_FILES):
        return "a result file this pipeline does not know"
    if test not in TESTS:
        return f"test {test} is not one of the DMA tests modelled ({', '.join(TESTS)})"
    return None


def _row_reason(row: dict[str, Any]) -> str | None:
    """Why a measurement has no cell, or None when it has."""
    why = _reason(row["file"].removesuffix(".txt"), row.get("test"))
    if why:
        return why
    needed = ("transfer_bytes", "window_bytes", "pattern", "cache")
    if any(row.get(k) is None for k in needed):
        return "a row without size, window, pattern or cache"
    measures = ("bw_gbps",) if row["test"].startswith("BW_") else tuple(m for m, _ in LATENCY_MEASURES)
    if not all(isinstance(row.get(m), (int, float)) and math.isfinite(row[m]) and row[m] > 0 for m in measures):
        return "a row without a positive, finite value to compare with"
    return None


def not_modelled(data: PcieBenchData) -> list[NotModelled]:
    """The directory's measurements that have no cells: per file and reason, with the
    number of rows."""
    counts = Counter((r["file"], why) for r in data.measurements if (why := _row_reason(r)))
    return [NotModelled(file, n, why) for (file, why), n in counts.items()]


def _varies(rows: list[dict[str, Any]], key: str) -> bool:
    return len({r.get(key) for r in rows}) > 1


def _names(rows: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(series without the measure, column) of each row of one file: the column is the
    transfer size where it varies in the file, else the window; the series the test and
    whatever else tells the file's rows apart."""
    by_size = _varies(rows, "transfer_bytes")
    by_window = by_size and _varies(rows, "window_bytes")
    by_pattern = _varies(rows, "pattern")
    by_offset = _varies(rows, "host_offset") or _varies(rows, "device_offset")
    out = []
    for r in rows:
        words = [r["test"]]
        if not by_size:
            words.append(f"{r['transfer_bytes']}B")
        if by_window:
            words.append(f"win {format_size(r['window_bytes'])}")
        words.append(r["cache"])
        if by_pattern:
            words.append(r["pattern"])
        if by_offset or r["host_offset"] or r["device_offset"]:
            words.append(f"HO {r['host_offset']} DO {r['device_offset']}")
        column = f"{r['transfer_bytes']}B" if by_size else f"win {format_size(r['window_bytes'])}"
        out.append((" ".join(words), column))
    return out


def cells_of(data: PcieBenchData) -> list[Cell]:
    """The cells of the directory's DMA tests, in file order: one per bandwidth measurement
    (``bw_gbps``), two per latency measurement (``latency_median_ns``,
    ``latency_p99_9_ns``). ``table`` is ``SHORT/FILE_STEM`` (:func:`short_name`); series and
    column are unique within a table."""
    short = short_name(data.host)
    by_file: dict[str, list[dict[str, Any]]] = {}
    for r in data.measurements:
        if _row_reason(r) is None:
            by_file.setdefault(r["file"], []).append(r)
    cells: list[Cell] = []
    for file, rows in by_file.items():
        stem = file.removesuffix(".txt")
        names = _names(rows)
        repeated = {n for n, k in Counter(names).items() if k > 1}
        for r, (series, column) in zip(rows, names, strict=True):
            if (series, column) in repeated:
                column = f"{column} (line {r['line']})"
            bandwidth = r["test"].startswith("BW_")
            measures = [("bw_gbps", None)] if bandwidth else list(LATENCY_MEASURES)
            for measure, label in measures:
                cells.append(
                    Cell(
                        directory=data.directory, test=r["test"], file=file, line=r["line"],
                        transfer_bytes=r["transfer_bytes"], window_bytes=r["window_bytes"],
                        pattern=r["pattern"], cache=r["cache"], host_offset=r["host_offset"] or 0,
                        device_offset=r["device_offset"] or 0, measure=measure, published=float(r[measure]),
                        unit="Gb/s" if bandwidth else "ns", table=f"{short}/{stem}",
                        series=series if label is None else f"{series} {label}", column=column,
                    )
                )  # fmt: skip
    return cells
