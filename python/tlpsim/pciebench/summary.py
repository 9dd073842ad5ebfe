"""Accuracy of the ``pciebench`` rows: per test group (:func:`group_summaries`), the IOMMU
window sweeps' falls (:func:`iommu_knees`) and the remote-socket penalties
(:func:`remote_penalties`): the figures the issue's acceptance names, for ``tlpsim fit`` and
``tlpsim validate`` alike (:func:`summary_lines`)."""

from __future__ import annotations

import re
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "GROUPS",
    "GroupSummary",
    "KneeSummary",
    "RemoteSummary",
    "group_of",
    "group_summaries",
    "iommu_knees",
    "remote_penalties",
    "summary_lines",
]


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
    #: Median |error| of the predicted cells of each test (``BW_DMA_RD``), in test order.
    by_test: dict[str, float] = field(default_factory=dict, compare=False)

    def line(self, system: str = "pciebench") -> str:
        """``pciebench bandwidth vs window: 832 predicted cells, median |error| 2.1 %, ...``."""
        head = f"{system} {self.group}: "
        if not self.predicted:
            return head + f"no predicted cells ({self.calibrated} calibrated)"
        w = self.worst
        tests = ""
        if len(self.by_test) > 1:
            tests = " (" + ", ".join(f"{t.split('_')[-1]} {100 * e:.1f} %" for t, e in self.by_test.items()) + ")"
        return (
            head + f"{self.predicted} predicted cells, median |error| {100 * self.median_abs_error:.1f} %{tests}, "
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
            "median_abs_error_by_test": dict(self.by_test),
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
        tests: dict[str, list[float]] = {}
        for r in predicted:
            tests.setdefault(r["series"].split()[0], []).append(abs(r["error"]))
        by_test = {t: statistics.median(e) for t, e in tests.items()}
        out.append(
            GroupSummary(
                name,
                len(predicted),
                len(members) - len(predicted),
                statistics.median(errors) if errors else None,
                max(errors) if errors else None,
                worst,
                by_test,
            )  # fmt: skip
        )
    return out


#: A window sweep "falls" where its bandwidth drops this far below its smallest window's.
KNEE_DROP = 0.10
#: How close a plateau (the largest window) must come: the acceptance's 10 %.
PLATEAU_TOLERANCE = 0.10
#: A remote-socket penalty below this is no penalty (its sign is noise).
NO_PENALTY = 0.01
#: How close a simulated penalty must come to the measured one: 5 points.
PENALTY_TOLERANCE = 0.05

_SOCKETS = re.compile(r"-s(\d+)-s(\d+)-s(\d+)")


def _short(row: dict[str, Any]) -> str:
    return row["table"].rsplit("/", 1)[0]


def _window(row: dict[str, Any]) -> int | None:
    from tlpsim.importers.common import parse_size

    m = re.fullmatch(r"win (\S+)", row["column"])
    return parse_size(m.group(1)) if m else None


def _knee(values: Sequence[float]) -> int | None:
    """The first index whose value falls KNEE_DROP below the first one's, if any."""
    return next((i for i, v in enumerate(values) if v < (1 - KNEE_DROP) * values[0]), None)


@dataclass(frozen=True)
class KneeSummary:
    """The IOMMU directories' bandwidth window sweeps that fall: how many, in how many the
    simulated fall starts within one window step of the measured one, in how many the
    plateau (the largest window) is within 10 %."""

    sweeps: int
    knee_within_step: int
    plateau_within: int

    def line(self, system: str = "pciebench") -> str:
        """One line of the figures."""
        return (
            f"{system} IOMMU window sweeps: {self.sweeps} fall by over {100 * KNEE_DROP:.0f} %; the fall starts "
            f"within one window step in {self.knee_within_step}, the plateau is within "
            f"{100 * PLATEAU_TOLERANCE:.0f} % in {self.plateau_within}"
        )


def iommu_knees(rows: Sequence[dict[str, Any]]) -> KneeSummary | None:
    """The :class:`KneeSummary` of the ``bw_dma_win_sweep_*`` rows of directories whose
    short name has ``iommu``; None without such a sweep that falls."""
    sweeps: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for r in rows:
        if "iommu" in _short(r).split("-") and _stem(r).startswith("bw_dma_win_sweep_") and _window(r):
            sweeps.setdefault((r["table"], r["series"]), []).append((_window(r), r["published"], r["simulated"]))
    falls = knees = plateaus = 0
    for points in sweeps.values():
        points.sort()
        measured = _knee([p for _, p, _ in points])
        if measured is None:
            continue
        falls += 1
        simulated = _knee([s for _, _, s in points])
        knees += simulated is not None and abs(simulated - measured) <= 1
        _, published, last = points[-1]
        plateaus += abs(last - published) <= PLATEAU_TOLERANCE * published
    return KneeSummary(falls, knees, plateaus) if falls else None


@dataclass(frozen=True)
class RemoteSummary:
    """Remote-socket directories against their local twin, cell by cell: how many pairs,
    in how many the simulated penalty has the measured one's sign (both under 1 % counting
    as none), in how many it is within 5 points."""

    pairs: int
    sign_agrees: int
    size_within: int

    def line(self, system: str = "pciebench") -> str:
        """One line of the figures."""
        return (
            f"{system} remote socket vs local: {self.pairs} cell pairs; the penalty's sign agrees in "
            f"{self.sign_agrees} ({100 * self.sign_agrees / self.pairs:.0f} %), its size is within "
            f"{100 * PENALTY_TOLERANCE:.0f} points in {self.size_within} ({100 * self.size_within / self.pairs:.0f} %)"
        )


def _sign(x: float) -> int:
    return 0 if abs(x) < NO_PENALTY else 1 if x > 0 else -1


def remote_penalties(rows: Sequence[dict[str, Any]]) -> RemoteSummary | None:
    """The :class:`RemoteSummary` of every directory whose memory or warming socket differs
    from the card's (``bdw-s0-s1-s0``) against the directory with all three on the card's
    socket and the same rest of the name (``bdw-s0-s0-s0``); None without such pairs."""
    by_dir: dict[str, dict[tuple[str, str, str], dict[str, Any]]] = {}
    for r in rows:
        by_dir.setdefault(_short(r), {})[(_stem(r), r["series"], r["column"])] = r
    pairs = signs = sizes = 0
    for short, cells in by_dir.items():
        m = _SOCKETS.search(short)
        if not m or len(set(m.groups())) == 1:
            continue
        local = by_dir.get(_SOCKETS.sub(f"-s{m.group(1)}-s{m.group(1)}-s{m.group(1)}", short, count=1))
        for key, r in cells.items() if local else ():
            base = local.get(key)
            if base is None:
                continue
            measured = r["published"] / base["published"] - 1
            simulated = r["simulated"] / base["simulated"] - 1
            pairs += 1
            signs += _sign(measured) == _sign(simulated)
            sizes += abs(simulated - measured) <= PENALTY_TOLERANCE
    return RemoteSummary(pairs, signs, sizes) if pairs else None


#: The folds in the order their figures are reported: out of sample first.
FOLDS = ("cross-host", "in-sample")


def summary_lines(rows: Sequence[dict[str, Any]], system: str = "pciebench") -> list[str]:
    """The ``pciebench`` summary, per fold (``cross-host`` first, then ``in-sample``; rows
    without one as one set): a line per test group (:func:`group_summaries`), the IOMMU
    window sweeps (:func:`iommu_knees`) and the remote-socket penalties
    (:func:`remote_penalties`) where the rows have them, then the 90 % bands' coverage of the
    cross-host cells."""
    from tlpsim.pciebench.bands import coverage

    folds = [f for f in FOLDS if any(r.get("fold") == f for r in rows)]
    lines: list[str] = []
    for fold in folds or [None]:
        own = [r for r in rows if fold is None or r.get("fold") == fold]
        label = system if fold is None else f"{system} {fold}"
        lines += [g.line(label) for g in group_summaries(own)]
        lines += [s.line(label) for s in (iommu_knees(own), remote_penalties(own)) if s is not None]
    for fold in folds:
        cov = coverage(rows, fold)
        if cov is not None:
            lines.append(cov.line(system))
    return lines
