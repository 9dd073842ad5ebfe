"""Copy-bandwidth matrices in the shape of NVIDIA's nvbandwidth (``tlpsim matrix``): one
simulated run per cell, one memcpy (two for the bidirectional tests) on an otherwise idle
machine, the cells run in parallel on the sweep's worker processes."""

from __future__ import annotations

import json
import os
import tomllib
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from tlpsim import _core
from tlpsim._core import ConfigError, SimulationError
from tlpsim.output import Format, console, emit, emit_json
from tlpsim.pool import run_jobs
from tlpsim.simulate import Scenario, load_scenario

__all__ = ["TESTS", "CopyMatrix", "copy_matrices", "emit_matrices", "failed_cells"]

#: The tests, in nvbandwidth's order; ``all`` runs each of them.
TESTS = (
    "host_to_device",
    "device_to_host",
    "host_to_device_bidirectional",
    "device_to_host_bidirectional",
    "device_to_device_write",
    "device_to_device_read",
    "device_to_device_bidirectional",
)

#: Per test: what its rows and columns are ("host": root complexes' memories, "gpu": GPUs),
#: and who copies what in each cell.
_SHAPE = {
    "host_to_device": ("host", "gpu", "the column GPU's copy engines read the row's host memory"),
    "device_to_host": ("gpu", "host", "the row GPU's copy engines write the column's host memory"),
    "host_to_device_bidirectional": (
        "host", "gpu", "the column GPU's copy engines read the row's host memory while they write it back"
    ),
    "device_to_host_bidirectional": (
        "gpu", "host", "the row GPU's copy engines write the column's host memory while they read it back"
    ),
    "device_to_device_write": ("gpu", "gpu", "the row GPU's copy engines write the column GPU's BAR"),
    "device_to_device_read": ("gpu", "gpu", "the column GPU's copy engines read the row GPU's BAR"),
    "device_to_device_bidirectional": (
        "gpu", "gpu", "the row GPU writes the column GPU's BAR while the column GPU writes the row's"
    ),
}  # fmt: skip

#: The workload name a cell's copy takes (with a number added where the file has one so named).
CELL_NAME = "matrix"


@dataclass(frozen=True)
class CopyMatrix:
    """One test's matrix: ``matrix[i][j]`` is the copy from ``rows[i]`` to ``columns[j]`` in
    GB/s (10^9 bytes/s), None on the diagonal and where the cell has no figure;
    ``verdicts[i][j]`` is what limited it (``kind``, ``resource``, ``text``), None on the
    diagonal; a cell the scenario refuses (a root complex with ``p2p = "refuse"``) has kind
    ``refused``, one whose run failed kind ``error``, each with the message as ``text``."""

    test: str
    rows: list[str]
    columns: list[str]
    matrix: list[list[float | None]]
    verdicts: list[list[dict[str, Any] | None]]
    #: Whether every run's audit passed.
    audit_passed: bool = True

    @property
    def sum(self) -> float:
        """The sum of the cells that have a figure (nvbandwidth's SUM line)."""
        return sum(v for row in self.matrix for v in row if v is not None)

    @property
    def title(self) -> str:
        """What the table shows: ``memcpy CE GPU(row) -> GPU(column) bandwidth (GB/s), TEST ...``."""
        rows, columns, _ = _SHAPE[self.test]
        word = {"host": "host", "gpu": "GPU"}
        return f"memcpy CE {word[rows]}(row) -> {word[columns]}(column) bandwidth (GB/s), {self.test}"

    @property
    def how(self) -> str:
        """Who copies what in each cell, in words."""
        return _SHAPE[self.test][2]

    def to_dict(self) -> dict[str, Any]:
        """``{"test", "unit", "rows", "columns", "matrix", "sum", "verdicts"}``, JSON-ready."""
        return {
            "test": self.test,
            "unit": "GB/s",
            "rows": list(self.rows),
            "columns": list(self.columns),
            "matrix": [list(r) for r in self.matrix],
            "sum": self.sum,
            "verdicts": [[None if v is None else dict(v) for v in r] for r in self.verdicts],
        }

    def cells(self) -> list[dict[str, Any]]:
        """One flat row per cell off the diagonal (the CSV view): ``test, source,
        destination, gbytes_per_s, verdict_kind, verdict_resource, verdict_text``."""
        out = []
        for i, source in enumerate(self.rows):
            for j, destination in enumerate(self.columns):
                v = self.verdicts[i][j]
                if v is None:
                    continue
                out.append({
                    "test": self.test, "source": source, "destination": destination,
                    "gbytes_per_s": self.matrix[i][j], "verdict_kind": v["kind"],
                    "verdict_resource": v["resource"], "verdict_text": v["text"],
                })  # fmt: skip
        return out


def _toml_string(text: str) -> str:
    """``text`` as a TOML basic string (JSON's escapes are TOML's, non-ASCII kept as is)."""
    return json.dumps(text, ensure_ascii=False)


def _memcpy(name: str, gpu: str, **keys: str) -> str:
    """A ``[[workload]]`` block of kind memcpy on ``gpu`` with ``keys`` (strings)."""
    lines = ["", "[[workload]]", f"name = {_toml_string(name)}", 'kind = "memcpy"', f"endpoint = {_toml_string(gpu)}"]
    lines += [f"{k} = {_toml_string(v)}" for k, v in keys.items()]
    return "\n".join(lines) + "\n"


def cell_workloads(test: str, source: str, destination: str, home: dict[str, str], name: str) -> tuple[str, str]:
    """The ``[[workload]]`` text of one cell (data from ``source`` to ``destination``) and
    the flow it reports. ``home`` maps each GPU to the root complex above it: a host copy
    to or from another root complex's memory names it in ``memory``."""
    if test in ("host_to_device", "host_to_device_bidirectional"):
        gpu, host = destination, source
    elif test in ("device_to_host", "device_to_host_bidirectional"):
        gpu, host = source, destination
    else:
        gpu = host = ""
    memory = {"memory": host} if gpu and host != home[gpu] else {}
    if test == "host_to_device":
        return _memcpy(name, gpu, direction="h2d", **memory), name
    if test == "device_to_host":
        return _memcpy(name, gpu, direction="d2h", **memory), name
    if test == "host_to_device_bidirectional":
        return _memcpy(name, gpu, direction="both", **memory), f"{name}.h2d"
    if test == "device_to_host_bidirectional":
        return _memcpy(name, gpu, direction="both", **memory), f"{name}.d2h"
    if test == "device_to_device_write":
        return _memcpy(name, source, target=destination, direction="write"), name
    if test == "device_to_device_read":
        return _memcpy(name, destination, target=source, direction="read"), name
    if test == "device_to_device_bidirectional":
        there = _memcpy(name, source, target=destination, direction="write")
        back = _memcpy(f"{name}-back", destination, target=source, direction="write")
        return there + back, name
    raise ConfigError(f"test {test!r} is not allowed; allowed: {', '.join(TESTS)}, all")


def _run_cell(text: str, origin: str, disable: Sequence[str], flow: str) -> dict[str, Any]:
    """Runs one cell (in a worker process): ``text`` with each workload of ``disable`` off;
    ``{"gbytes_per_s", "bottleneck", "audit_passed"}`` of ``flow``, or ``{"refused": message}``
    when the scenario refuses the copy, ``{"error": message}`` when its run fails."""
    try:
        for name in disable:
            text = _core.set_scenario_value(text, origin, f"workload[{name}].enabled", "false")
        scenario = _core.load_scenario(text, origin)
    except ConfigError as e:
        return {"refused": str(e)}
    try:
        result, _ = _core.run_scenario(scenario, None, None)
    except SimulationError as e:
        return {"error": str(e)}
    run = json.loads(result)
    f = next(f for f in run["flows"] if f["name"] == flow)
    return {
        "gbytes_per_s": f["memcpy_gbytes_per_s"],
        "bottleneck": f["bottleneck"],
        "audit_passed": run["audit"]["passed"],
    }


def _free_name(taken: Sequence[str]) -> str:
    """:data:`CELL_NAME`, or it with the first number that no workload name starts with."""
    n = 0
    while True:
        name = CELL_NAME if n == 0 else f"{CELL_NAME}-{n}"
        if not any(t.startswith(name) for t in taken):
            return name
        n += 1


def machine(scenario: Scenario) -> tuple[list[str], list[str], dict[str, str]]:
    """The GPUs (nodes of kind "gpu", in file order), the host memories (the root
    complexes, in file order) and the root complex above each GPU."""
    nodes = json.loads(scenario.topology_json)["nodes"]
    gpus = [n["name"] for n in nodes if n["kind"] == "gpu"]
    hosts = [n["name"] for n in nodes if n["kind"] == "root_complex"]
    return gpus, hosts, {n["name"]: n["root_complex"] for n in nodes if n["kind"] == "gpu"}


def copy_matrices(
    scenario: Scenario | str | os.PathLike[str],
    tests: Sequence[str],
    values: dict[str, Any] | None = None,
    jobs: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> list[CopyMatrix]:
    """Runs each of ``tests`` (names of :data:`TESTS`; ``all``: every one, those between
    GPUs only where there are two or more) on ``scenario`` (a loaded scenario,
    a path or TOML text, with ``values`` set as ``load_scenario`` sets them): every cell is
    its own run of the file with its workloads off and the cell's copy added.

    Cells run on ``jobs`` local processes (default: one per core); ``progress(done, total)``
    is called as they finish. The result is the same whatever ``jobs`` is. Raises
    :class:`ConfigError` for a scenario without GPUs, or a device-to-device test with fewer
    than two."""
    if jobs is not None and (not isinstance(jobs, int) or isinstance(jobs, bool) or jobs < 1):
        raise ConfigError(f"jobs {jobs!r} is not allowed; allowed: a whole number of processes, 1 or more")
    for test in tests:
        if test not in (*TESTS, "all"):
            raise ConfigError(f"test {test!r} is not allowed; allowed: {', '.join(TESTS)}, all")
    loaded = load_scenario(scenario, values)
    gpus, hosts, home = machine(loaded)
    if not gpus:
        raise ConfigError(f'{loaded.origin} has no GPU (an [[endpoint]] with kind = "gpu"): no copy to measure')
    if "all" in tests:
        tests = [t for t in TESTS if len(gpus) > 1 or not t.startswith("device_to_device")]
    if len(gpus) < 2 and any(t.startswith("device_to_device") for t in tests):
        raise ConfigError(
            f"{loaded.origin} has one GPU ({gpus[0]}): the device_to_device tests need two or more; "
            "run a host test (--test host_to_device)"
        )
    existing = [w.get("name") for w in tomllib.loads(loaded.text).get("workload", []) if isinstance(w, dict)]
    existing = [n for n in existing if isinstance(n, str)]
    name = _free_name(existing)
    axes = {"host": hosts, "gpu": gpus}
    shapes, jobs_args = [], []
    for test in tests:
        rows, columns = axes[_SHAPE[test][0]], axes[_SHAPE[test][1]]
        shapes.append((test, rows, columns))
        for r in rows:
            for c in columns:
                if r != c:
                    block, flow = cell_workloads(test, r, c, home, name)
                    jobs_args.append((loaded.text + block, loaded.origin, existing, flow))
    results: list[dict[str, Any] | None] = [None] * len(jobs_args)
    done = [0]

    def finish(i: int, result: dict[str, Any]) -> None:
        results[i] = result
        done[0] += 1
        if progress:
            progress(done[0], len(jobs_args))

    if progress:
        progress(0, len(jobs_args))
    if jobs == 1 or len(jobs_args) <= 1:
        for i, args in enumerate(jobs_args):
            finish(i, _run_cell(*args))
    else:
        workers = min(jobs or os.cpu_count() or 1, len(jobs_args))
        run_jobs(_run_cell, jobs_args, workers, 1, finish, lambda i, msg: finish(i, {"error": msg}))
    out, k = [], 0
    for test, rows, columns in shapes:
        matrix: list[list[float | None]] = []
        verdicts: list[list[dict[str, Any] | None]] = []
        audit = True
        for r in rows:
            matrix.append([])
            verdicts.append([])
            for c in columns:
                value, verdict = None, None
                if r != c:
                    cell = results[k]
                    k += 1
                    assert cell is not None
                    value, verdict = _cell(cell)
                    audit = audit and cell.get("audit_passed", True)
                matrix[-1].append(value)
                verdicts[-1].append(verdict)
        out.append(CopyMatrix(test, list(rows), list(columns), matrix, verdicts, audit))
    return out


def _cell(result: dict[str, Any]) -> tuple[float | None, dict[str, Any]]:
    """A cell's figure and verdict from what :func:`_run_cell` returned."""
    if "refused" in result:
        return None, {"kind": "refused", "resource": "", "text": result["refused"]}
    if "error" in result:
        return None, {"kind": "error", "resource": "", "text": result["error"]}
    b = result["bottleneck"]
    return result["gbytes_per_s"], {"kind": b["kind"], "resource": b["resource"], "text": b["detail"]}


def emit_matrices(matrices: Sequence[CopyMatrix], fmt: Format, single: bool = False) -> None:
    """Prints ``matrices``: a table each with its SUM line and what limited the cells, JSON
    (one object when ``single``, else a list) or CSV (one row per cell)."""
    if fmt is Format.json:
        data = [m.to_dict() for m in matrices]
        emit_json(data[0] if single and len(data) == 1 else data)
        return
    if fmt is Format.csv:
        emit([cell for m in matrices for cell in m.cells()], fmt, [])
        return
    out = console()
    for n, m in enumerate(matrices):
        if n:
            out.print()
        columns = [("source", " ", "")] + [(f"c{j}", c, ".2f") for j, c in enumerate(m.columns)]
        rows = [
            {"source": r, **{f"c{j}": "N/A" if v is None else v for j, v in enumerate(values)}}
            for r, values in zip(m.rows, m.matrix, strict=True)
        ]
        # The title on a line of its own: a one-column matrix is too narrow to hold it.
        out.print(m.title, highlight=False, markup=False)
        emit(rows, fmt, columns)
        out.print(f"SUM {m.test} {m.sum:.2f}", highlight=False, markup=False)
        out.print(f"each cell alone on the machine: {m.how}", style="dim", highlight=False, markup=False)
        for line in _verdict_lines(m):
            out.print(line, style="dim", highlight=False, markup=False)


def _verdict_lines(m: CopyMatrix) -> list[str]:
    """What limited the cells, by kind (``limited by: link 48 cells, p2p 8 cells``), and a
    line per kind of cell without a figure, with the first one's message."""
    kinds: dict[str, int] = {}
    missing: dict[str, list[tuple[str, str, str]]] = {}
    for r, verdicts in zip(m.rows, m.verdicts, strict=True):
        for c, v in zip(m.columns, verdicts, strict=True):
            if v is None:
                continue
            if v["kind"] in ("refused", "error"):
                missing.setdefault(v["kind"], []).append((r, c, v["text"]))
            else:
                kinds[v["kind"]] = kinds.get(v["kind"], 0) + 1
    lines = []
    if kinds:
        counts = ", ".join(f"{k.replace('_', ' ')} {n} cell{'s' * (n != 1)}" for k, n in kinds.items())
        lines.append(f"limited by: {counts} (--format json gives each cell's verdict)")
    for kind, cells in missing.items():
        r, c, text = cells[0]
        why = "the scenario refuses the copy" if kind == "refused" else "the run failed"
        more = f" ({len(cells) - 1} more)" if len(cells) > 1 else ""
        lines.append(f"N/A: {why}: {r} -> {c}: {_core.one_line(text)}{more}")
    return lines


def failed_cells(matrices: Sequence[CopyMatrix]) -> list[str]:
    """One line per cell whose run failed (``matrix TEST cell SOURCE -> DESTINATION failed: ...``)."""
    return [
        f"matrix {m.test} cell {c['source']} -> {c['destination']} failed: {_core.one_line(c['verdict_text'])}"
        for m in matrices
        for c in m.cells()
        if c["verdict_kind"] == "error"
    ]
