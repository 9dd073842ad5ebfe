"""Accuracy of the ``pciebench`` rows per test group (:func:`group_summaries`): the figures
the issue's acceptance names, for ``tlpsim fit`` and ``tlpsim validate`` alike."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GROUPS", "GroupSummary", "group_of", "group_summaries"]


def _stem(row: dict[str, Any]) -> str:
    return row["table"].rsplit("/", 1)[-1]


def _size(row: dict[str, Any]) -> int | None:
    m = re.fullmatch(r"(\d+)B", row["column"])
    return int(m.group(1)) if m else None


def _p99_9(row: dict[str, Any]) -> bool:
    return row["series"].endswith(" p99.9")


#: The groups, in order: (name, whether a row belongs). A row belongs to the first that
#: takes it; rows none takes are not summarised.
GROUPS: tuple[tuple[str, Callable[[dict[str, Any]], bool]], ...] = (
    ("bandwidth vs size, 64 B-2 KiB",
     lambda r: _stem(r) == "bw_dma_sz_sweep" and (_size(r) or 0) >= 64),
    ("bandwidth vs size, under 64 B", lambda r: _stem(r) == "bw_dma_sz_sweep"),
    ("latency vs size, median", lambda r: _stem(r).startswith("lat_dma_sizes") and not _p99_9(r)),
    ("latency vs size, p99.9", lambda r: _stem(r).startswith("lat_dma_sizes") and _p99_9(r)),
    ("bandwidth vs window", lambda r: _stem(r).startswith("bw_dma_win_sweep_")),
    ("latency vs window, median", lambda r: _stem(r).startswith("lat_dma_sweep_") and not _p99_9(r)),
    ("latency vs window, p99.9", lambda r: _stem(r).startswith("lat_dma_sweep_") and _p99_9(r)),
    ("latency details, median", lambda r: _stem(r) == "lat_dma_details" and not _p99_9(r)),
    ("latency details, p99.9", lambda r: _stem(r) == "lat_dma_details" and _p99_9(r)),
)  # fmt: skip


def group_of(row: dict[str, Any]) -> str | None:
    """The name of the group a ``pciebench`` row belongs to (None: none)."""
    return next((name for name, takes in GROUPS if takes(row)), None)


@dataclass(frozen=True)
class GroupSummary:
    """Median and max |error| of one group's predicted cells."""

    group: str
    predicted: int
    calibrated: int
    median_abs_error: float | None
    max_abs_error: float | None
    worst: dict[str, Any] | None = field(default=None, compare=False)

    def line(self, system: str = "pciebench") -> str:
        """``pciebench bandwidth vs window: 832 predicted cells, median |error| 2.1 %, ...``."""
        head = f"{system} {self.group}: "
        if not self.predicted:
            return head + f"no predicted cells ({self.calibrated} calibrated)"
        w = self.worst
        return (
            head + f"{self.predicted} predicted cells, median |error| {100 * self.median_abs_error:.1f} %, "
            f"max |error| {100 * self.max_abs_error:.1f} % ({w['table']} {w['series']} @ {w['column']})"
            + (f", {self.calibrated} calibrated" if self.calibrated else "")
        )

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain data."""
        w = self.worst
        return {
            "group": self.group, "predicted": self.predicted, "calibrated": self.calibrated,
            "median_abs_error": self.median_abs_error, "max_abs_error": self.max_abs_error,
            "worst": None if w is None else f"{w['table']} {w['series']} @ {w['column']}",
        }  # fmt: skip


def group_summaries(rows: Sequence[dict[str, Any]]) -> list[GroupSummary]:
    """One :class:`GroupSummary` per group that has rows, in :data:`GROUPS` order."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        name = group_of(r)
        if name is not None:
            by_group.setdefault(name, []).append(r)
    out = []
    for name, _ in GROUPS:
        members = by_group.get(name)
        if not members:
            continue
        predicted = [r for r in members if r["role"] == "predict"]
        errors = [abs(r["error"]) for r in predicted]
        worst = max(predicted, key=lambda r: abs(r["error"])) if predicted else None
        out.append(
            GroupSummary(
                name,
                len(predicted),
                len(members) - len(predicted),
                statistics.median(errors) if errors else None,
                max(errors) if errors else None,
                worst,
            )  # fmt: skip
        )
    return out
