"""The protocol run end to end: the device fit on the shipped calibration directory
(:func:`fit_device`), a directory's host fit and predictions (:func:`fit_directory`), and
the nine shipped directories as validation rows (:func:`validate_reports`)."""

from __future__ import annotations

import copy
import functools
import os
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlpsim.importers.common import ImportFileError, read_text
from tlpsim.importers.pciebench import PcieBenchData, import_pcie_bench
from tlpsim.pciebench import protocol
from tlpsim.pciebench.cells import Cell, NotModelled, cells_of, not_modelled
from tlpsim.pciebench.facts import SYS_FILES
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
    "validate_cell_count",
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
    """The card's device keys with the fitted values, each fitted parameter (the device's
    and the calibration-only host ones), and notes."""

    device: dict[str, Any]
    fitted: tuple[Fitted, ...]
    notes: tuple[str, ...] = ()
    #: The calibration directory's fitted host parameters, as keys: where another directory
    #: has no calibrate cell for one (or the protocol does not fit it there), it takes this.
    host: dict[str, Any] = field(default_factory=dict)
    #: The directory it was fitted on (None: keys given, not fitted).
    directory: str | None = None
    #: The CPU model of that directory's host.
    host_cpu: str | None = None


def load_directory(path: str | os.PathLike[str], data: PcieBenchData | None = None) -> Source:
    """A pcie-bench directory read: its result files (``data`` when already imported) and
    ``sys-lspci.txt``. Raises :class:`ImportFileError` with one line when it is missing, not
    a pcie-bench directory or has no ``sys-lspci.txt``."""
    d = Path(path)
    data = import_pcie_bench(d) if data is None else data
    lspci = d / LSPCI_FILE
    if not lspci.is_file():
        raise ImportFileError(
            f"{d}: no {LSPCI_FILE} in the directory; tlpsim fit needs the host's lspci -vvv output there"
        )
    files = {name: read_text(d / name, name) for name in SYS_FILES if (d / name).is_file()}
    return Source(data, files[LSPCI_FILE] if LSPCI_FILE in files else read_text(lspci, "lspci -vvv"), str(d), files)


def source_machine(source: Source) -> Machine:
    """The :class:`Machine` of a directory read."""
    return machine_of(source.data, source.lspci, origin=f"{source.origin}/{LSPCI_FILE}", files=source.files)


def fit_device(source: Source | None = None) -> DeviceFit:
    """Fits the protocol's device parameters on the calibration directory (the shipped
    :data:`protocol.DEVICE_DIRECTORY` when ``source`` is None; each shipped directory's fit
    is made once per process), together with that directory's host parameters, which
    interact with them, and the host parameters fitted only there."""
    if source is None:
        return shipped_device_fit(protocol.DEVICE_DIRECTORY)
    machine = source_machine(source)
    params = (*protocol.HOST_PARAMETERS, *protocol.CALIBRATION_HOST_PARAMETERS, *protocol.DEVICE_PARAMETERS)
    setup = protocol_setup(machine, protocol.DEVICE, params)
    fitted = fit(setup.parameters, cells_of(source.data), setup.scenario, setup.start(), passes=protocol.PASSES)
    values = {name: f.value for name, f in fitted.items()}
    device, host = setup.keys(values)
    calibration_only = {p.name for p in protocol.CALIBRATION_HOST_PARAMETERS}
    mine = tuple(f for f in fitted.values() if f.parameter.where == "device" or f.parameter.name in calibration_only)
    host_params = {p.key for p in (*protocol.HOST_PARAMETERS, *protocol.CALIBRATION_HOST_PARAMETERS)}
    notes = tuple(text for where, text in setup.notes if where == "device")
    return DeviceFit(device, mine, notes, {k: v for k, v in host.items() if k in host_params}, source.name, machine.cpu)


@functools.cache
def shipped_device_fit(directory: str) -> DeviceFit:
    """The device fitted on shipped directory ``directory`` (once per process)."""
    by_name = {s.name: s for s in shipped()}
    if directory not in by_name:
        raise ImportFileError(f"the shipped data has no {directory} to fit the device on")
    return fit_device(by_name[directory])


@dataclass(frozen=True)
class FitReport:
    """A directory fitted and predicted: its machine, the device and host keys used, every
    fitted parameter (device ones from the device fit, then the host's) with its calibrate
    cell, the rows in the validation format, the cells with their outcomes, what was not
    modelled, and notes."""

    directory: str
    short: str
    #: ``in-sample`` (the device was fitted on this host) or ``cross-host``.
    fold: str
    #: The directory the device was fitted on (None: device keys given).
    device_directory: str | None
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
        from tlpsim.pciebench.bands import coverage
        from tlpsim.pciebench.summary import group_summaries

        cov = coverage(self.rows, self.fold)
        return {
            "directory": self.directory,
            "short": self.short,
            "fold": self.fold,
            "device_directory": self.device_directory,
            "machine": {
                "device": {"value": self.machine.device, "source": "sys-lspci.txt"},
                **self.machine.facts_dict(),
            },  # fmt: skip
            "assumptions": self.machine.assumptions,
            "band_coverage": None if cov is None else cov.to_dict(),
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


def _row(cell: Cell, outcome: Outcome, role: str, fold: str) -> dict[str, Any]:
    return {
        "system": SYSTEM, "table": cell.table, "series": cell.series, "column": cell.column, "unit": cell.unit,
        "published": cell.published, "simulated": outcome.value,
        "error": (outcome.value - cell.published) / cell.published, "role": role, "limit": outcome.limit,
        "fold": fold, "low": None, "high": None,
    }  # fmt: skip


def fold_of(machine: Machine, device: DeviceFit) -> str:
    """``in-sample`` when the device was fitted on this machine's host (the same CPU model),
    else ``cross-host``."""
    return "in-sample" if device.host_cpu is not None and machine.cpu == device.host_cpu else "cross-host"


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
    kept = {p.name for p in protocol.CALIBRATION_HOST_PARAMETERS}
    setup = protocol_setup(
        machine, device.device, (*protocol.HOST_PARAMETERS, *protocol.CALIBRATION_HOST_PARAMETERS), device.host
    )
    fitted = fit(setup.parameters, cells, setup.scenario, setup.start(), passes=protocol.PASSES, kept=kept)
    values = {name: f.value for name, f in fitted.items()}
    calibrate = {_key(f.cell) for f in fitted.values() if f.cell is not None}
    if source.name == device.directory:
        calibrate |= {_key(f.cell) for f in device.fitted if f.cell is not None}
    outcomes = run_cells(cells, setup.scenario_for(values), workers, progress)
    roles = ["calibrate" if _key(c) in calibrate else "predict" for c in cells]
    fold = fold_of(machine, device)
    rows = [_row(c, o, role, fold) for c, o, role in zip(cells, outcomes, roles, strict=True)]
    dev_keys, host_keys_used = setup.keys(values)
    notes = dict.fromkeys((*source.data.notes, *machine.notes, *device.notes, *(text for _, text in setup.notes)))
    return FitReport(
        directory=source.name, short=machine.short, fold=fold, device_directory=device.directory,
        machine=machine, device=dev_keys, host=host_keys_used,
        fitted=(*device.fitted, *(f for f in fitted.values() if f.parameter.name not in kept)),
        rows=rows, cells=tuple(cells), outcomes=tuple(outcomes),
        not_modelled=tuple(not_modelled(source.data)), notes=tuple(notes), cdf=source.data.cdf,
    )  # fmt: skip


def fit_directory(
    path: str | os.PathLike[str],
    device: DeviceFit | Mapping[str, Any] | None = None,
    progress: Callable[[int, int], None] | None = None,
    workers: int = WORKERS,
) -> FitReport:
    """Imports a pcie-bench directory (results and ``sys-*.txt``), fits its host's parameters
    on the protocol's host calibrate cells with the device set ``device`` (the device fitted
    on the shipped calibration directory when None), and predicts every other cell, each
    predicted row with its 90 % band from the shipped hosts' cross-host residuals
    (:mod:`tlpsim.pciebench.bands`). ``progress(done, total)`` is called as cells are
    simulated. Raises :class:`ImportFileError` (one line) for a directory that cannot be used."""
    from tlpsim.pciebench.bands import load_shipped_bands, with_bands

    report = fit_source(load_directory(path), device, progress, workers)
    with_bands(report.rows, load_shipped_bands())
    return report


def _host_of(source: Source) -> str | None:
    return source_machine(source).cpu


def _plan(sources: Sequence[Source]) -> list[tuple[Source, str]]:
    """(directory, calibration directory of its device fit) of each fold of each source:
    another host's calibration directory (``cross-host``) and its own host's (``in-sample``)
    where it has one, in that order."""
    plan: list[tuple[Source, str]] = []
    for s in sources:
        host = _host_of(s)
        others = [d for cpu, d in protocol.CALIBRATION_DIRECTORIES.items() if cpu != host]
        own = protocol.CALIBRATION_DIRECTORIES.get(host) if host is not None else None
        plan += [(s, d) for d in others[:1]] + ([(s, own)] if own is not None else [])
    return plan


def validate_cell_count(sources: Sequence[Source] | None = None) -> int:
    """How many cells :func:`validate_reports` simulates (each source's, once per fold),
    found without fitting anything."""
    return sum(len(cells_of(s.data)) for s, _ in _plan(shipped() if sources is None else sources))


def _fit_all(
    plan: Sequence[tuple[Source, DeviceFit]],
    progress: Callable[[int, int], None] | None,
    total: int,
    workers: int,
) -> list[FitReport]:
    """:func:`fit_source` of each (directory, device) of ``plan``, in its order, ``workers``
    of them at a time: a fit simulates one cell after another, so one fit alone keeps one
    core busy. Each fit is deterministic, so the reports do not depend on ``workers``.
    ``progress(done, total)`` counts the cells of all of them. Once one fails (or Ctrl-C
    reaches the calling thread) the others stop at their next cell."""
    done = [0] * len(plan)
    lock = threading.Lock()
    stopped = threading.Event()

    def step_of(k: int) -> Callable[[int, int], None]:
        def step(n: int, _total: int) -> None:
            if stopped.is_set():
                raise KeyboardInterrupt
            with lock:
                done[k] = n
                now = sum(done)
            if progress:
                progress(now, total)

        return step

    if workers == 1:
        return [fit_source(s, device, step_of(k), workers) for k, (s, device) in enumerate(plan)]
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tlpsim-pciebench-fit")
    try:
        futures = [pool.submit(fit_source, s, device, step_of(k), workers) for k, (s, device) in enumerate(plan)]
        return [f.result() for f in futures]
    except BaseException:
        stopped.set()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def validate_reports(
    progress: Callable[[int, int], None] | None = None,
    workers: int = WORKERS,
    sources: Sequence[Source] | None = None,
) -> list[FitReport]:
    """Every shipped directory (or each of ``sources``) predicted twice: with the device
    fitted on another host's calibration directory (``cross-host``, first) and on its own
    host's (``in-sample``), from :data:`protocol.CALIBRATION_DIRECTORIES`. Each predicted
    row carries its 90 % band, built from the cross-host residuals of the other hosts only.
    ``progress(done, total)`` counts the cells of all of them."""
    from tlpsim.pciebench.bands import band_table, with_bands

    sources = shipped() if sources is None else sources
    devices = {d: shipped_device_fit(d) for d in protocol.CALIBRATION_DIRECTORIES.values()}
    plan = [(s, devices[d]) for s, d in _plan(sources)]
    total = sum(len(cells_of(s.data)) for s, _ in plan)
    reports = _fit_all(plan, progress, total, workers)
    reports.sort(key=lambda r: r.fold != "cross-host")
    for host in {r.machine.cpu for r in reports}:
        table = band_table(row for r in reports if r.machine.cpu != host for row in r.rows)
        for r in reports:
            if r.machine.cpu == host:
                with_bands(r.rows, table)
    return reports


def shipped_band_table(reports: Sequence[FitReport] | None = None) -> dict[str, list[float]]:
    """The bands of every shipped host's cross-host residuals together: what
    ``tlpsim fit`` gives a new host (:data:`tlpsim.pciebench.bands.SHIPPED_BANDS_FILE`)."""
    from tlpsim.pciebench.bands import band_table

    reports = validate_reports() if reports is None else reports
    return band_table(row for r in reports for row in r.rows)


def validate_rows(progress: Callable[[int, int], None] | None = None, workers: int = WORKERS) -> list[dict[str, Any]]:
    """The ``pciebench`` validation rows of the nine shipped directories, cross-host and
    in-sample (see :func:`validate_reports`), in the validation format."""
    return [r for report in validate_reports(progress, workers) for r in report.rows]


def shipped_bands_text(reports: Sequence[FitReport] | None = None) -> str:
    """The text of :data:`tlpsim.pciebench.bands.SHIPPED_BANDS_FILE` as the shipped data
    give it now (``python -m tlpsim.pciebench.pipeline`` writes it; a test checks the
    shipped file against it)."""
    import json

    bands = {k: [round(v, 6) for v in band] for k, band in shipped_band_table(reports).items()}
    about = (
        "90 % symmetric split-conformal bands of ln(published / simulated), per test group, from the "
        "cross-host residuals of every shipped pcie-bench host; made by python -m tlpsim.pciebench.pipeline"
    )
    return json.dumps({"about": about, "bands": bands}, indent=1, sort_keys=True) + "\n"


if __name__ == "__main__":
    from tlpsim.pciebench.bands import SHIPPED_BANDS_FILE

    out = Path(__file__).with_name(SHIPPED_BANDS_FILE)
    out.write_text(shipped_bands_text(), encoding="utf-8")
    print(f"wrote {out}")
