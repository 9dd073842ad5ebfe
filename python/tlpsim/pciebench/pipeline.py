"""The protocol run end to end: the device fit on the shipped calibration directory
(:func:`fit_device`), a directory's host fit and predictions (:func:`fit_directory`), and
the nine shipped directories as validation rows (:func:`validate_reports`)."""

from __future__ import annotations

import copy
import functools
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlpsim.importers.common import ImportFileError, format_size, read_text
from tlpsim.importers.pciebench import import_pcie_bench
from tlpsim.pciebench import protocol
from tlpsim.pciebench.cells import Cell, NotModelled, cells_of, not_modelled
from tlpsim.pciebench.fit import Fitted, Parameter, fit
from tlpsim.pciebench.model import CACHE_FALLBACK, Machine, ScenarioWriter, host_keys, machine_of
from tlpsim.pciebench.runner import Outcome, run_cells
from tlpsim.pciebench.shipped import LSPCI_FILE, Source, shipped
from tlpsim.pciebench.support import loader_keys

__all__ = [
    "SYSTEM",
    "DeviceFit",
    "FitReport",
    "Setup",
    "fit_device",
    "fit_directory",
    "fit_source",
    "load_directory",
    "protocol_setup",
    "source_machine",
    "validate_reports",
    "validate_rows",
]

#: The validation system's name in rows.
SYSTEM = "pciebench"

#: Worker threads that simulate cells.
WORKERS = 2

_SECTION = {"device": "[[endpoint]]", "host": "[[root_complex]]"}


def _applies(condition: str | None, machine: Machine) -> bool:
    """Whether a key or parameter marked ``only_if = condition`` applies to ``machine``."""
    return condition is None or bool(getattr(machine, condition))


@dataclass(frozen=True)
class Setup:
    """A machine's scenarios under the protocol: its device and host keys (those this
    tlpsim loads), the free parameters to fit among them, and notes on what was left out,
    each with what it is about (``device``, ``host``, ``workload``)."""

    machine: Machine
    device: dict[str, Any]
    host: dict[str, Any]
    parameters: tuple[Parameter, ...]
    notes: tuple[tuple[str, str], ...]

    def start(self) -> dict[str, float | None]:
        """The parameters' start values, from the keys (less the value of the parameter a
        ``plus`` one is added to)."""
        keys = {"device": self.device, "host": self.host}
        start = {p.name: p.read(keys[p.where]) for p in self.parameters}
        for p in self.parameters:
            base = start.get(p.plus) if p.plus else None
            if base is not None and start[p.name] is not None:
                start[p.name] -= base
        return start

    def keys(self, values: Mapping[str, float | None]) -> tuple[dict[str, Any], dict[str, Any]]:
        """(device keys, host keys) with the parameters at ``values``."""
        device, host = copy.deepcopy(self.device), copy.deepcopy(self.host)
        for p in self.parameters:
            if p.name in values:
                value = values[p.name]
                base = values.get(p.plus) if p.plus else None
                if value is not None and base is not None:
                    value += base
                p.write(device if p.where == "device" else host, value)
        return device, host

    def scenario(self, values: Mapping[str, float | None], cell: Cell) -> str:
        """The scenario of ``cell`` with the parameters at ``values``."""
        return self.scenario_for(values)(cell)

    def scenario_for(self, values: Mapping[str, float | None]) -> Callable[[Cell], str]:
        """The scenario of each cell with the parameters at ``values`` (the keys made once)."""
        writer = ScenarioWriter(self.machine, *self.keys(values), cache_words=loader_keys().cache)

        def scenario(cell: Cell) -> str:
            duration = protocol.BW_DURATION if cell.is_bandwidth else protocol.LAT_DURATION
            return writer.text(cell, duration, protocol.WARMUP, protocol.SEED)

        return scenario


def protocol_setup(
    machine: Machine,
    device: Mapping[str, Any],
    parameters: Iterable[Parameter],
    host_start: Mapping[str, Any] | None = None,
) -> Setup:
    """The :class:`Setup` of ``machine`` with device keys ``device``, the protocol's host
    keys (those in ``host_start`` instead, where given: the calibration directory's fitted
    host, for the parameters a directory cannot fit), and the ``parameters`` that apply to
    it and that this tlpsim loads."""
    accepts = loader_keys().accepts
    host = {**host_keys(machine)}
    defaults = {**protocol.HOST, **(host_start or {})}
    host.update({k: v for k, v in defaults.items() if _applies(protocol.HOST_ONLY_IF.get(k), machine)})
    notes: list[tuple[str, str]] = []
    kept: list[Parameter] = []
    for p in parameters:
        if not _applies(p.only_if, machine):
            continue
        if accepts(p.where, p.key):
            kept.append(p)
        else:
            notes.append((p.where, f"{p.name} not fitted: this tlpsim's {_SECTION[p.where]} has no key {p.key}"))
    for where, keys in (("device", device), ("host", host)):
        refused = [k for k in keys if not accepts(where, k)]
        if refused:
            notes.append((where, f"left out, this tlpsim's {_SECTION[where]} has no such keys: {', '.join(refused)}"))
    fallback = [f"{w} (as {CACHE_FALLBACK[w]})" for w in CACHE_FALLBACK if w not in loader_keys().cache]
    if fallback:
        notes.append(("workload", f"cache states this tlpsim does not know: {', '.join(fallback)}"))
    return Setup(
        machine=machine,
        device={k: v for k, v in device.items() if accepts("device", k)},
        host={k: v for k, v in host.items() if accepts("host", k)},
        parameters=tuple(kept),
        notes=tuple(notes),
    )


@dataclass(frozen=True)
class DeviceFit:
    """The card's device keys with the fitted values, each fitted parameter, and notes."""

    device: dict[str, Any]
    fitted: tuple[Fitted, ...]
    notes: tuple[str, ...] = ()
    #: The calibration directory's fitted host parameters, as keys: where another directory
    #: has no calibrate cell for one (or the protocol does not fit it there), it takes this.
    host: dict[str, Any] = field(default_factory=dict)


def load_directory(path: str | os.PathLike[str]) -> Source:
    """A pcie-bench directory read: its result files and ``sys-lspci.txt``. Raises
    :class:`ImportFileError` with one line when it is missing, not a pcie-bench directory
    or has no ``sys-lspci.txt``."""
    d = Path(path)
    data = import_pcie_bench(d)
    lspci = d / LSPCI_FILE
    if not lspci.is_file():
        raise ImportFileError(
            f"{d}: no {LSPCI_FILE} in the directory; tlpsim fit needs the host's lspci -vvv output there"
        )
    return Source(data, read_text(lspci, "the output of lspci -vvv"), str(d))


def source_machine(source: Source) -> Machine:
    """The :class:`Machine` of a directory read."""
    return machine_of(source.data, source.lspci, origin=f"{source.origin}/{LSPCI_FILE}")


def fit_device(source: Source | None = None) -> DeviceFit:
    """Fits the protocol's device parameters on the calibration directory (the shipped
    :data:`protocol.DEVICE_DIRECTORY` when ``source`` is None; that fit is made once per
    process), together with that directory's host parameters, which interact with them."""
    if source is None:
        return _shipped_device_fit()
    setup = protocol_setup(
        source_machine(source), protocol.DEVICE, (*protocol.HOST_PARAMETERS, *protocol.DEVICE_PARAMETERS)
    )
    fitted = fit(setup.parameters, cells_of(source.data), setup.scenario, setup.start(), passes=protocol.PASSES)
    values = {name: f.value for name, f in fitted.items()}
    device, host = setup.keys(values)
    mine = tuple(f for f in fitted.values() if f.parameter.where == "device")
    host_params = {p.key for p in protocol.HOST_PARAMETERS}
    notes = tuple(text for where, text in setup.notes if where == "device")
    return DeviceFit(device, mine, notes, {k: v for k, v in host.items() if k in host_params})


@functools.cache
def _shipped_device_fit() -> DeviceFit:
    by_name = {s.name: s for s in shipped()}
    if protocol.DEVICE_DIRECTORY not in by_name:
        raise ImportFileError(f"the shipped data has no {protocol.DEVICE_DIRECTORY} to fit the device on")
    return fit_device(by_name[protocol.DEVICE_DIRECTORY])


@dataclass(frozen=True)
class FitReport:
    """A directory fitted and predicted: its machine, the device and host keys used, every
    fitted parameter (device ones from the device fit, then the host's) with its calibrate
    cell, the rows in the validation format, the cells with their outcomes, what was not
    modelled, and notes."""

    directory: str
    short: str
    machine: Machine
    device: dict[str, Any]
    host: dict[str, Any]
    fitted: tuple[Fitted, ...]
    rows: list[dict[str, Any]]
    cells: tuple[Cell, ...]
    outcomes: tuple[Outcome, ...]
    not_modelled: tuple[NotModelled, ...]
    notes: tuple[str, ...]
    #: The directory's latency distributions (``PcieBenchData.cdf``).
    cdf: list[dict[str, Any]]

    def fitted_rows(self) -> list[dict[str, Any]]:
        """One row per fitted parameter: its name, section, value as the scenario writes
        it, how the fit ended, and its calibrate cell with the published and simulated value."""
        out = []
        for f in self.fitted:
            p, c = f.parameter, f.cell
            out.append({
                "parameter": p.name, "where": p.where,
                "value": None if f.value is None else p.setting(f.value), "status": f.status,
                "directory": None if c is None else c.directory,
                "cell": None if c is None else f"{c.table} {c.series} @ {c.column}",
                "unit": None if c is None else c.unit, "published": None if c is None else c.published,
                "simulated": f.simulated, "error": f.error,
            })  # fmt: skip
        return out

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready data (without the cells and outcomes, which the
        rows repeat)."""
        from tlpsim.pciebench.summary import group_summaries

        m = self.machine
        return {
            "directory": self.directory,
            "short": self.short,
            "machine": {
                "gen": m.gen,
                "width": m.width,
                "mps": m.mps,
                "mrrs": m.mrrs,
                "tags": m.tags,
                "device": m.device,
                "cpu": m.cpu,
                "llc": None if m.llc_bytes is None else format_size(m.llc_bytes),
                "llc_ways": m.llc_ways,
                "iommu": m.iommu,
                "super_pages": m.super_pages,
                "device_socket": m.device_socket,
                "memory_socket": m.memory_socket,
                "warming_socket": m.warming_socket,
            },  # fmt: skip
            "device": self.device,
            "host": self.host,
            "fitted": self.fitted_rows(),
            "rows": self.rows,
            "summary": [g.to_dict() for g in group_summaries(self.rows)],
            "not_modelled": [{"file": n.file, "rows": n.rows, "reason": n.reason} for n in self.not_modelled],
            "notes": list(self.notes),
        }


def _key(cell: Cell) -> tuple[str, str, int, str]:
    return (cell.directory, cell.file, cell.line, cell.measure)


def _row(cell: Cell, outcome: Outcome, role: str) -> dict[str, Any]:
    return {
        "system": SYSTEM, "table": cell.table, "series": cell.series, "column": cell.column, "unit": cell.unit,
        "published": cell.published, "simulated": outcome.value,
        "error": (outcome.value - cell.published) / cell.published, "role": role, "limit": outcome.limit,
    }  # fmt: skip


def fit_source(
    source: Source,
    device: DeviceFit | Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = WORKERS,
) -> FitReport:
    """:func:`fit_directory` on a directory already read."""
    machine = source_machine(source)
    cells = cells_of(source.data)
    if not cells:
        raise ImportFileError(
            f"{source.origin}: no DMA test results to fit (bw_dma_sz_sweep, bw_dma_win_sweep_*, lat_dma_sizes*, "
            "lat_dma_sweep_*, lat_dma_details)"
        )
    if device is None:
        device = fit_device()
    elif not isinstance(device, DeviceFit):
        device = DeviceFit(dict(device), (), ("device keys given, not fitted",))
    setup = protocol_setup(machine, device.device, protocol.HOST_PARAMETERS, device.host)
    fitted = fit(setup.parameters, cells, setup.scenario, setup.start(), passes=protocol.PASSES)
    values = {name: f.value for name, f in fitted.items()}
    calibrate = {_key(f.cell) for f in fitted.values() if f.cell is not None}
    if source.name == protocol.DEVICE_DIRECTORY:
        calibrate |= {_key(f.cell) for f in device.fitted if f.cell is not None}
    outcomes = run_cells(cells, setup.scenario_for(values), workers, progress)
    roles = ["calibrate" if _key(c) in calibrate else "predict" for c in cells]
    rows = [_row(c, o, role) for c, o, role in zip(cells, outcomes, roles, strict=True)]
    dev_keys, host_keys_used = setup.keys(values)
    notes = dict.fromkeys((*machine.notes, *device.notes, *(text for _, text in setup.notes)))
    return FitReport(
        directory=source.name, short=machine.short, machine=machine, device=dev_keys, host=host_keys_used,
        fitted=(*device.fitted, *fitted.values()), rows=rows, cells=tuple(cells), outcomes=tuple(outcomes),
        not_modelled=tuple(not_modelled(source.data)), notes=tuple(notes), cdf=source.data.cdf,
    )  # fmt: skip


def fit_directory(
    path: str | os.PathLike[str],
    device: DeviceFit | Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = WORKERS,
) -> FitReport:
    """Imports a pcie-bench directory (results and ``sys-lspci.txt``), fits its host's
    parameters on the protocol's host calibrate cells with the device set ``device`` (the
    device fitted on the shipped calibration directory when None), and predicts every
    other cell. ``progress(done, total)`` is called as cells are simulated. Raises
    :class:`ImportFileError` (one line) for a directory that cannot be used."""
    return fit_source(load_directory(path), device, progress, workers)


def validate_reports(
    progress: Callable[[int, int], None] | None = None,
    workers: int = WORKERS,
    sources: Sequence[Source] | None = None,
) -> list[FitReport]:
    """The device fit once, then :func:`fit_source` on each shipped directory (or each of
    ``sources``). ``progress(done, total)`` counts the cells of all of them."""
    sources = shipped() if sources is None else sources
    total = sum(len(cells_of(s.data)) for s in sources)
    device = fit_device()
    reports = []
    offset = 0
    for s in sources:

        def step(done: int, _total: int, offset: int = offset) -> None:
            if progress:
                progress(offset + done, total)

        report = fit_source(s, device, step, workers)
        offset += len(report.cells)
        reports.append(report)
    return reports


def validate_rows(progress: Callable[[int, int], None] | None = None, workers: int = WORKERS) -> list[dict[str, Any]]:
    """The ``pciebench`` validation rows of the nine shipped directories (see
    :func:`validate_reports`), in the validation format."""
    return [r for report in validate_reports(progress, workers) for r in report.rows]
