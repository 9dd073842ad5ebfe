"""Fitting free parameters to calibrate cells: coordinate-wise bisection (:func:`fit`).

Each :class:`Parameter` has its own calibrate cell (a :class:`Selector`) and a monotone
effect on that cell's measure; :func:`fit` bisects each parameter in turn until its cell is
simulated within ``tolerance`` of the measured value, and repeats the round because the
parameters interact. Everything is deterministic: the same cells and start values give the
same fitted values.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from tlpsim.pciebench.cells import Cell
from tlpsim.pciebench.runner import simulate

__all__ = ["Fitted", "Parameter", "Selector", "fit", "parse_setting"]

#: Relative distance to the measured value at which a bisection stops.
TOLERANCE = 0.002
#: Most simulations one bisection takes (besides its two ends).
MAX_STEPS = 16


@dataclass(frozen=True)
class Selector:
    """Which cell of a directory calibrates a parameter: the cell of ``test`` in result
    file ``file`` (its stem) at transfer size ``size`` measuring ``measure``, at window
    ``window`` (bytes; ``"largest"``: the largest window of the matches; None: any) and
    cache state ``cache`` (None: any). The first match in file order is taken."""

    test: str
    file: str
    size: int
    measure: str = "bw_gbps"
    window: int | Literal["largest"] | None = None
    cache: str | None = None

    def pick(self, cells: Sequence[Cell]) -> Cell | None:
        """The selected cell of ``cells``, or None when there is none."""
        matches = [
            c
            for c in cells
            if (c.test, c.stem, c.transfer_bytes, c.measure) == (self.test, self.file, self.size, self.measure)
            and (self.cache is None or c.cache == self.cache)
            and (not isinstance(self.window, int) or c.window_bytes == self.window)
        ]
        if not matches:
            return None
        if self.window == "largest":
            return max(matches, key=lambda c: c.window_bytes)
        return matches[0]


@dataclass(frozen=True)
class Parameter:
    """A free parameter: the key (and side, for a ``{ read = ..., write = ... }`` value)
    of the ``device`` (DMA endpoint) or ``host`` (root complex) keys it sets, its unit as
    the scenario writes it (``"ns"``, ``"GB/s"``; ``""`` for a count), the range searched,
    its calibrate cell, and whether that cell's measure rises with it."""

    name: str
    where: Literal["device", "host"]
    key: str
    side: str | None
    unit: str
    lo: float
    hi: float
    cell: Selector
    rises: bool
    #: A whole number (engines, walkers): bisected over the integers.
    integer: bool = False
    #: Only for a machine with this property (``"iommu"``); None: every machine.
    only_if: str | None = None
    #: The parameter whose value is added to this one's in the key (a DRAM latency fitted
    #: as its excess over the LLC hit); None: the key holds this value alone.
    plus: str | None = None
    #: A discrete parameter's words (``("mps", "rcb")``): its value is the index of one,
    #: chosen as the word whose simulated cell comes nearest the measured one. Empty: a
    #: number, bisected over ``[lo, hi]``.
    choices: tuple[str, ...] = ()

    def setting(self, value: float) -> Any:
        """``value`` as the scenario writes it: ``"16.25ns"``, ``"7.5GB/s"``, ``5``, ``"rcb"``."""
        if self.choices:
            return self.choices[int(round(value))]
        if self.integer:
            return int(round(value))
        return f"{round(value, 4):g}{self.unit}"

    def read(self, keys: Mapping[str, Any]) -> float | None:
        """Its value in a dict of keys (None where the key, or its side, is left out)."""
        value = keys.get(self.key)
        if self.side is not None:
            value = value.get(self.side) if isinstance(value, Mapping) else value
        if value is not None and self.choices:
            if value not in self.choices:
                raise ValueError(f"{value!r} is not one of {', '.join(self.choices)}")
            return float(self.choices.index(value))
        return None if value is None else parse_setting(value, self.unit)

    def write(self, keys: dict[str, Any], value: float | None) -> None:
        """Sets its value in ``keys`` (a None value leaves the key out)."""
        if self.side is None:
            if value is None:
                keys.pop(self.key, None)
            else:
                keys[self.key] = self.setting(value)
            return
        sides = keys.get(self.key)
        sides = dict(sides) if isinstance(sides, Mapping) else {}
        if value is not None:
            sides[self.side] = self.setting(value)
        keys[self.key] = sides


def parse_setting(value: Any, unit: str) -> float:
    """A setting's number in ``unit``: ``"16ns"`` -> 16.0, ``5`` -> 5.0."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    if isinstance(value, str) and value.endswith(unit):
        return float(value[: len(value) - len(unit)] if unit else value)
    raise ValueError(f"{value!r} is not a number of {unit or 'units'}")


@dataclass(frozen=True)
class Fitted:
    """One parameter after :func:`fit`: its value, the cell it was fitted on (None when
    the directory has none: the start value is kept), the cell's simulated value there, and
    how it ended (``fitted``, ``chosen``, ``at lower bound``, ``at upper bound``, ``no
    calibrate cell``, ``from the calibration directory``)."""

    parameter: Parameter
    value: float | None
    cell: Cell | None
    simulated: float | None
    status: str

    @property
    def error(self) -> float | None:
        """(simulated - published) / published of the calibrate cell."""
        if self.cell is None or self.simulated is None:
            return None
        return (self.simulated - self.cell.published) / self.cell.published


def _choose(p: Parameter, cell: Cell, measure: Callable[[float], float]) -> tuple[float, float, str]:
    """(value, simulated, status) of a discrete parameter: the word whose simulated cell
    comes nearest the measured one (the first of equals)."""
    tried = {float(i): measure(float(i)) for i in range(len(p.choices))}
    best = min(tried, key=lambda i: (abs(tried[i] - cell.published), i))
    return best, tried[best], "chosen"


def _bisect(p: Parameter, cell: Cell, measure: Callable[[float], float], tolerance: float) -> tuple[float, float, str]:
    """(value, simulated, status) of one parameter's bisection on its cell."""
    if p.choices:
        return _choose(p, cell, measure)
    target = cell.published
    tried: dict[float, float] = {}

    def at(x: float) -> float:
        if x not in tried:
            tried[x] = measure(x)
        return tried[x]

    lo, hi = (float(round(p.lo)), float(round(p.hi))) if p.integer else (p.lo, p.hi)
    # Where the measure at both ends misses the target on the same side, the end nearer it.
    for end, status in ((lo, "at lower bound"), (hi, "at upper bound")):
        below = at(end) < target
        if below == (p.rises == (end == hi)) and abs(at(end) - target) > tolerance * target:
            return end, at(end), status
    for _ in range(MAX_STEPS):
        if p.integer and hi - lo <= 1:
            break
        mid = float((lo + hi) // 2) if p.integer else (lo + hi) / 2
        if abs(at(mid) - target) <= tolerance * target:
            return mid, at(mid), "fitted"
        if (at(mid) < target) == p.rises:
            lo = mid
        else:
            hi = mid
    best = min(tried, key=lambda x: (abs(tried[x] - target), x))
    return best, tried[best], "fitted"


def fit(
    parameters: Sequence[Parameter],
    cells: Sequence[Cell],
    scenario_for_params: Callable[[Mapping[str, float | None], Cell], str],
    start: Mapping[str, float | None],
    passes: int = 2,
    tolerance: float = TOLERANCE,
    kept: Collection[str] = (),
) -> dict[str, Fitted]:
    """Fits each parameter on its calibrate cell among ``cells``, one after the other,
    ``passes`` times over, and returns them by name.

    ``scenario_for_params(values, cell)`` is the scenario of ``cell`` with every parameter
    at ``values[name]``; ``start`` holds the values to begin with (None: the key left out).
    A parameter is bisected over ``[lo, hi]`` (integers for an integer one) until its cell
    is simulated within ``tolerance`` of the published value, at most ``MAX_STEPS`` runs;
    where no value in the range gets there it ends at the nearer bound; a discrete one takes
    the word nearest the measured value. A parameter whose cell ``cells`` lack, or whose
    name is in ``kept`` (fitted elsewhere: on the calibration directory), keeps its start
    value."""
    values: dict[str, float | None] = {p.name: start.get(p.name) for p in parameters}
    results: dict[str, Fitted] = {}
    for _ in range(passes):
        for p in parameters:
            if p.name in kept:
                results[p.name] = Fitted(p, values[p.name], None, None, "from the calibration directory")
                continue
            cell = p.cell.pick(cells)
            if cell is None:
                results[p.name] = Fitted(p, values[p.name], None, None, "no calibrate cell")
                continue

            def measure(x: float, p: Parameter = p, cell: Cell = cell) -> float:
                trial = {**values, p.name: x}
                return simulate([cell], lambda c: scenario_for_params(trial, c), workers=1)[0]

            value, simulated, status = _bisect(p, cell, measure, tolerance)
            values[p.name] = value
            results[p.name] = Fitted(p, value, cell, simulated, status)
    return results
