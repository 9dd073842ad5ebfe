"""90 % prediction bands from cross-host residuals: symmetric split conformal per test group.

A predicted row's residual is ``ln(published / simulated)``. The residuals of the rows that
were predicted with the device fitted on another host (fold ``cross-host``) are the
calibration set. A family's band is ``[-a, a]``, ``a`` the order statistic
``ceil(0.9 (n + 1))`` of its n absolute residuals (split conformal on ``|residual|``: a new
cell of the family, exchangeable with the calibration set, falls inside with probability at
least 90 %), and a row's band is ``simulated * exp([-a, a])``. A family is a test group of
:mod:`tlpsim.pciebench.summary` (``bandwidth vs window``); one with fewer than
:data:`MIN_FAMILY` residuals takes the band of all residuals.

Why symmetric and per group: a host shifts a family's residuals as a whole, and the sign of
the shift differs between the shipped hosts (latency vs size, RD: -2 % on one, +5 % on the
other's remote-socket directories). An interval fitted to one host's signed residuals misses
the other's: held out host by host, signed intervals per group and test covered 79 % of the
cells, symmetric ones per group 87 % (docs/calibration.md has the measurements).

In-sample residuals never enter a band: they flatter. ``tlpsim validate`` builds each host's
bands from the other hosts' cross-host residuals only (leave one host out), so the coverage it
prints is out of sample; ``tlpsim fit`` uses the bands of every shipped host's cross-host
residuals (:data:`SHIPPED_BANDS_FILE`, checked against a fresh computation by the tests).
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from tlpsim.pciebench.summary import group_of

__all__ = [
    "COVERAGE",
    "Coverage",
    "band_table",
    "coverage",
    "family_of",
    "load_shipped_bands",
    "with_bands",
]

#: The band's nominal coverage.
COVERAGE = 0.90
#: Fewest residuals a family needs for a band of its own.
MIN_FAMILY = 20
#: The bands of the shipped hosts' cross-host residuals, as ``tlpsim fit`` uses them.
SHIPPED_BANDS_FILE = "bands.json"
#: The key of the band of every residual together.
ALL = "all"


def family_of(row: Mapping[str, Any]) -> str | None:
    """A row's family, its test group: ``bandwidth vs size, 64 B-2 KiB`` (None: no group)."""
    return group_of(dict(row))


def _residual(row: Mapping[str, Any]) -> float | None:
    p, s = row["published"], row["simulated"]
    if not (isinstance(p, (int, float)) and isinstance(s, (int, float))) or p <= 0 or s <= 0:
        return None
    r = math.log(p / s)
    return r if math.isfinite(r) else None


def _interval(residuals: Sequence[float]) -> tuple[float, float]:
    """The symmetric split-conformal interval of ``residuals`` at :data:`COVERAGE`."""
    spread = sorted(abs(r) for r in residuals)
    n = len(spread)
    a = spread[min(n, math.ceil(COVERAGE * (n + 1))) - 1]
    return -a, a


def band_table(rows: Iterable[Mapping[str, Any]]) -> dict[str, list[float]]:
    """Family (and group, and :data:`ALL`) -> ``[low, high]`` of ln(published / simulated),
    from the predicted ``cross-host`` rows among ``rows``."""
    by_key: dict[str, list[float]] = {}
    for r in rows:
        if r.get("fold") != "cross-host" or r["role"] != "predict":
            continue
        res = _residual(r)
        family = family_of(r)
        if res is None or family is None:
            continue
        for key in (family, ALL):
            by_key.setdefault(key, []).append(res)
    return {k: list(_interval(sorted(v))) for k, v in sorted(by_key.items()) if len(v) >= MIN_FAMILY}


def _band_of(row: Mapping[str, Any], table: Mapping[str, Sequence[float]]) -> Sequence[float] | None:
    family = family_of(row)
    return table.get(ALL) if family is None else table.get(family) or table.get(ALL)


def with_bands(rows: Iterable[dict[str, Any]], table: Mapping[str, Sequence[float]]) -> None:
    """Sets ``low`` and ``high`` on every predicted row of ``rows`` (None on calibrate rows
    and where ``table`` has no band for it)."""
    for r in rows:
        band = _band_of(r, table) if r["role"] == "predict" else None
        s = r["simulated"]
        ok = band is not None and isinstance(s, (int, float)) and math.isfinite(s)
        r["low"] = s * math.exp(band[0]) if ok else None
        r["high"] = s * math.exp(band[1]) if ok else None


@dataclass(frozen=True)
class Coverage:
    """How many predicted cells of one fold have their published value inside their band, and
    the median half-width of the band relative to the simulated value."""

    fold: str
    cells: int
    covered: int
    median_half_width: float

    @property
    def share(self) -> float:
        """Covered / cells."""
        return self.covered / self.cells if self.cells else 0.0

    def line(self, label: str = "pciebench") -> str:
        """One line of the figures."""
        return (
            f"{label} {100 * COVERAGE:.0f} % bands, {self.fold} cells: {self.covered} of {self.cells} covered "
            f"({100 * self.share:.1f} %), median half-width {100 * self.median_half_width:.1f} % of the value"
        )

    def to_dict(self) -> dict[str, Any]:
        """The figures as plain data."""
        return {"fold": self.fold, "cells": self.cells, "covered": self.covered, "coverage": self.share,
                "median_half_width": self.median_half_width}  # fmt: skip


def coverage(rows: Iterable[Mapping[str, Any]], fold: str = "cross-host") -> Coverage | None:
    """The :class:`Coverage` of the predicted ``fold`` rows of ``rows`` that have a band."""
    banded = [r for r in rows if r.get("fold") == fold and r["role"] == "predict" and r.get("low") is not None]
    if not banded:
        return None
    covered = sum(r["low"] <= r["published"] <= r["high"] for r in banded)
    widths = [(r["high"] - r["low"]) / 2 / r["simulated"] for r in banded if r["simulated"]]
    return Coverage(fold, len(banded), covered, statistics.median(widths) if widths else 0.0)


def load_shipped_bands() -> dict[str, list[float]]:
    """The shipped hosts' bands (:data:`SHIPPED_BANDS_FILE`)."""
    text = resources.files("tlpsim.pciebench").joinpath(SHIPPED_BANDS_FILE).read_text(encoding="utf-8")
    return {k: list(v) for k, v in json.loads(text)["bands"].items()}
