"""Parameter sweeps: one scenario run at every combination of some of its values, in
parallel (local processes by default, a Dask cluster when given a client)."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tlpsim import _core
from tlpsim._core import ConfigError, SimulationError
from tlpsim.files import refuse_input
from tlpsim.pool import run_jobs
from tlpsim.simulate import Scenario, scenario_text, value_text
from tlpsim.sweep_file import PointFile, header

__all__ = ["SweepResult", "split_values", "sweep"]


def split_values(text: str) -> list[str]:
    """``"128,256"`` -> ``["128", "256"]``; commas inside ``{}``, ``[]`` or quotes do not split
    (``"{ ph = 1, pd = 8 },{ ph = 4, pd = 32 }"`` is two values)."""
    out, depth, quote, cur = [], 0, "", ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "{[":
            depth += 1
        elif ch in "}]":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
            continue
        cur += ch
    out.append(cur.strip())
    return [v for v in out if v]


def _run_point(text: str, origin: str) -> dict[str, Any]:
    """Runs one point of a sweep (in a worker process): the run's result as a dict, or
    ``{"error": message}`` (the core's exceptions do not cross process boundaries)."""
    try:
        scenario = _core.load_scenario(text, origin)
        result, _ = _core.run_scenario(scenario, None, None)
    except (ConfigError, SimulationError) as e:
        return {"error": str(e)}
    return json.loads(result)


@dataclass(frozen=True)
class SweepResult:
    """A sweep's points, each with its run: ``rows`` has one row per point and workload.
    ``failed`` has the points that did not run (``keep_failed``), each with its ``error``;
    ``reused`` counts the points taken from the output file when resuming."""

    keys: list[str]
    points: list[dict[str, Any]]
    runs: list[dict[str, Any]]
    failed: list[dict[str, Any]] = field(default_factory=list)
    reused: int = 0

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Per point and workload: the swept values, then throughput, latency, bottleneck, the
        kinds of estimate a fluid rate rests on (:func:`estimate_kinds`) and its 90 % band
        against the simulator (``band_low_gbps``, ``band_high_gbps``; None on the DES), and
        for an Ethernet bridging workload the Mb/s it forwarded and the frames it lost (None
        for the others)."""
        out = []
        for point, run in zip(self.points, self.runs, strict=True):
            ethernet = {e["name"]: e for e in run.get("ethernet", [])}
            for f in run["flows"]:
                b = f["bottleneck"]
                e = ethernet.get(f["name"], {})
                low, high = f.get("throughput_band_gbps") or (None, None)
                out.append({
                    **point,
                    "flow": f["name"],
                    "throughput_gbps": f["throughput_gbps"],
                    "latency_ns_mean": f["latency_ns"]["mean"],
                    "latency_ns_p99": f["latency_ns"]["p99"],
                    "transfer_latency_ns_p99": f.get("transfer_latency_ns", {}).get("p99"),
                    "bottleneck": f"{b['kind'].replace('_', ' ')} {b['resource']}".strip(),
                    "bottleneck_busy": b["busy"],
                    "estimate_kinds": estimate_kinds(f["estimates"]) if "estimates" in f else None,
                    "band_low_gbps": low,
                    "band_high_gbps": high,
                    "forwarded_mbps": e.get("forwarded_mbps"),
                    "frames_dropped": e.get("dropped"),
                    "audit_passed": run["audit"]["passed"],
                })  # fmt: skip
        return out

    def to_pandas(self):
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def _json_kind(value: Any) -> str:
    """What JSON calls ``value``'s type, with an article: ``a string``, ``null``."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    kinds = ((dict, "an object"), (list, "a list"), (str, "a string"), ((int, float), "a number"))
    return next((name for t, name in kinds if isinstance(value, t)), type(value).__name__)


def run_problem(point: dict[str, Any], run: Any) -> str | None:
    """What keeps ``run``, read back from a points file, from being a point's run (one
    phrase, such as ``has no flows``), or None when :attr:`SweepResult.rows` can use it."""
    if not isinstance(run, dict):
        return f"is {_json_kind(run)}, not a run result"
    for needed, kind in (("flows", list), ("audit", dict)):
        if needed not in run:
            return f"has no {needed}: it is not a run result"
        if not isinstance(run[needed], kind):
            return f"has {_json_kind(run[needed])} for {needed}: it is not what tlpsim run writes"
    if "passed" not in run["audit"]:
        return "lacks the field 'passed' of audit that tlpsim run writes"
    try:
        _ = SweepResult(list(point), [point], [run]).rows
    except KeyError as e:
        return f"lacks the field {e.args[0]!r} that tlpsim run writes"
    except (TypeError, AttributeError, ValueError, IndexError):
        return "has a field of the wrong type: it is not what tlpsim run writes"
    return None


def sweep(
    scenario: Scenario | str | os.PathLike[str],
    values: Mapping[str, Sequence[Any]],
    jobs: int | None = None,
    client: Any = None,
    progress: Callable[[int, int], None] | None = None,
    output: str | os.PathLike[str] | None = None,
    resume: bool = False,
    overwrite: bool = False,
    retries: int = 1,
    keep_failed: bool = False,
    points: Sequence[Mapping[str, Any]] | None = None,
) -> SweepResult:
    """Runs ``scenario`` (a loaded :class:`Scenario`, a path or TOML text) at every combination of ``values``: keys as
    ``pcie.mps``, ``link.rc-sw1.width``, ``workload.reads.outstanding`` (see
    ``tlpsim.scenario.set_value`` in the core), each with the values to try.

    Every point is built and checked before any runs: a bad key or value raises
    :class:`ScenarioError` naming it. Points run on ``jobs`` local processes (default: one
    per core), or on a Dask cluster when ``client`` (a ``dask.distributed.Client``) is given.
    ``progress(done, total)`` is called as points finish. The result keeps the order of the
    points, whatever order they finish in. Ctrl-C stops the local workers (or cancels the
    Dask tasks).

    With ``output``, each point is appended to that JSON Lines file as it finishes (see
    :mod:`tlpsim.sweep_file`); an existing file is refused unless ``resume`` (run only the
    points it lacks) or ``overwrite``. A point whose local worker dies runs again on a fresh
    one up to ``retries`` times (on Dask, its scheduler re-runs it up to its
    ``allowed-failures``). A point that still fails, or whose run raised an error, raises
    :class:`SimulationError` once all others are done, or with ``keep_failed`` is returned
    in ``failed``.

    With ``points`` (each a mapping of every key of ``values`` to one value), only those
    points run, in that order.
    """
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs {jobs!r} is not allowed; allowed: a whole number of processes, 1 or more")
    if not isinstance(retries, int) or retries < 0:
        raise ConfigError(f"retries {retries!r} is not allowed; allowed: a whole number, 0 or more")
    text, origin = scenario_text(scenario)
    if output is not None and not isinstance(scenario, Scenario) and origin != "<text>":
        refuse_input(output, "sweep points", [origin])
    keys = list(values)
    for k in keys:
        if isinstance(values[k], (str, bytes)) or not isinstance(values[k], Sequence) or not values[k]:
            raise ConfigError(f"sweep values of {k} must be a non-empty list, not {values[k]!r}")
    if points is None:
        points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(values[k] for k in keys))]
    else:
        points = [{k: p[k] for k in keys} for p in points]
    texts = []
    for point in points:
        t = text
        for k, v in point.items():
            t = _core.set_scenario_value(t, origin, k, value_text(v))
        texts.append(t)
    total = len(texts)
    runs: list[dict[str, Any] | None] = [None] * total
    log, found = _open_output(output, resume, overwrite, header(origin, text, keys)) if output else (None, {})
    try:
        for i, point in enumerate(points):
            runs[i] = found.get(_point_key(keys, point))
        todo = [i for i in range(total) if runs[i] is None]
        reused = total - len(todo)
        done = [reused]

        def finish(i: int, run: dict[str, Any]) -> None:
            runs[i] = run
            if log is not None:
                log.write(points[i], run)
            done[0] += 1
            if progress:
                progress(done[0], total)

        if progress:
            progress(reused, total)
        if client is not None:
            _run_on_dask(client, [texts[i] for i in todo], origin, lambda j, run: finish(todo[j], run))
        elif len(todo) <= 1 or jobs == 1:
            for i in todo:
                finish(i, _run_point(texts[i], origin))
        else:
            run_jobs(
                _run_point, [(texts[i], origin) for i in todo], min(jobs or os.cpu_count() or 1, len(todo)),
                retries, lambda j, run: finish(todo[j], run), lambda j, msg: finish(todo[j], {"error": msg}),
            )  # fmt: skip
    finally:
        if log is not None:
            log.close()
    return _result(keys, points, runs, reused, keep_failed)


def _point_key(keys: Sequence[str], point: Mapping[str, Any]) -> tuple[str, ...]:
    """What identifies a point in the output file: its values as scenario text, in key order."""
    return tuple(value_text(point[k]) for k in keys)


def _open_output(
    output: str | os.PathLike[str], resume: bool, overwrite: bool, head: dict[str, Any]
) -> tuple[PointFile, dict[Any, dict[str, Any]]]:
    """The output file to append points to, and the runs it already holds (by point key)."""
    path = Path(output)
    if resume and overwrite:
        raise ConfigError("resume and overwrite are exclusive: resume keeps the output file's points")
    if resume:
        return PointFile.resume(path, head, lambda point: _point_key(head["keys"], point), run_problem)
    if path.exists() and not overwrite:
        raise ConfigError(
            f"{path} exists: resume (--resume) to run only the points it lacks, or overwrite it (--force)"
        )
    return PointFile.create(path, head), {}


def _run_on_dask(client: Any, texts: list[str], origin: str, finish: Callable[[int, dict[str, Any]], None]) -> None:
    """Runs each text on the Dask cluster behind ``client``; ``finish(j, run)`` as each comes
    back (``{"error": ...}`` for a task that raised or whose workers all died). Ctrl-C, or
    any other exception here, cancels the tasks not yet back."""
    from distributed import as_completed

    futures = client.map(_run_point, texts, [origin] * len(texts), pure=False)
    index = {f.key: j for j, f in enumerate(futures)}
    try:
        for future in as_completed(futures):
            try:
                run = future.result()
            except Exception as e:  # KilledWorker: the scheduler gave up re-running it
                run = {"error": " ".join(f"on Dask: {type(e).__name__}: {e}".split())}
            finish(index[future.key], run)
            future.release()
    except BaseException:
        client.cancel(futures)
        raise


def _result(
    keys: list[str], points: list[dict[str, Any]], runs: list[dict[str, Any] | None], reused: int, keep_failed: bool
) -> SweepResult:
    """The sweep's result; a failed point raises :class:`SimulationError` unless ``keep_failed``."""
    ok = [(p, r) for p, r in zip(points, runs, strict=True) if r is not None and "error" not in r]
    failed = [{**p, "error": r["error"]} for p, r in zip(points, runs, strict=True) if r is not None and "error" in r]
    if failed and not keep_failed:
        first = failed[0]
        where = ", ".join(f"{k}={first[k]}" for k in keys)
        more = f" ({len(failed) - 1} more points failed)" if len(failed) > 1 else ""
        raise SimulationError(f"sweep point {where}: {first['error']}{more}")
    return SweepResult(keys, [p for p, _ in ok], [r for _, r in ok], failed, reused)


def estimate_kind(line: str) -> str:
    """The kind of one of a fluid flow's ``estimates`` lines, as the engine's bands take it:
    its first word without a trailing colon ("queue: shares the FIFO ..." is ``queue``,
    "shares rc-sw up with w1 ..." is ``shares``)."""
    first = line.split(" ", 1)[0]
    return first.removesuffix(":")


def estimate_kinds(estimates: Sequence[str]) -> str:
    """The kinds of a fluid flow's ``estimates`` (:func:`estimate_kind`), comma-separated in
    their order, each once; "" for a rate on the closed form alone."""
    return ",".join(dict.fromkeys(estimate_kind(e) for e in estimates))


#: ``tlpsim sweep --engine auto``: at most this many points also run on the DES.
AUTO_CHECKS = 8


def check_points(total: int, checks: int = AUTO_CHECKS) -> list[int]:
    """The indices of the points ``--engine auto`` also runs on the DES: ``checks`` of the
    ``total`` points (all if fewer), spread evenly from the first to the last."""
    if total <= checks:
        return list(range(total))
    if checks == 1:
        return [0]
    return sorted({round(i * (total - 1) / (checks - 1)) for i in range(checks)})


def but_engine(keys: Sequence[str]) -> list[str]:
    """The swept keys but ``simulation.engine``: what matches a fluid point with its DES run."""
    return [k for k in keys if k != "simulation.engine"]


def _row_key(keys: Sequence[str]) -> Callable[[Mapping[str, Any]], tuple[Any, ...]]:
    """What matches a row of one engine's sweep with the same point and workload of the other."""
    return lambda row: (tuple(value_text(row[k]) for k in keys), row["flow"])


def agreement(fluid: SweepResult, des: SweepResult, keys: Sequence[str]) -> list[dict[str, Any]]:
    """Per point the DES ran and workload, matched on ``keys`` (the swept keys but the
    engine): the fluid and DES throughputs, the fluid's difference in per cent of the DES
    (None where the DES moved nothing), the kinds of estimate the fluid rate rests on and its
    band."""
    key = _row_key(keys)
    by = {key(r): r["throughput_gbps"] for r in des.rows}
    out = []
    for r in fluid.rows:
        d = by.get(key(r))
        if d is None:
            continue
        diff = (r["throughput_gbps"] - d) / d * 100 if d > 0 else None
        out.append({
            **{k: r[k] for k in keys}, "flow": r["flow"], "fluid_gbps": r["throughput_gbps"],
            "des_gbps": d, "fluid_vs_des_percent": diff, "estimate_kinds": r.get("estimate_kinds"),
            "band_low_gbps": r.get("band_low_gbps"), "band_high_gbps": r.get("band_high_gbps"),
        })  # fmt: skip
    return out


def with_des(rows: list[dict[str, Any]], keys: Sequence[str], checked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``rows`` with the DES's throughput and the fluid's difference from it where the DES ran
    (None elsewhere): ``checked`` is :func:`agreement`'s, matched on ``keys``."""
    key = _row_key(keys)
    by = {key(c): c for c in checked}
    return [
        {**r, "des_throughput_gbps": c.get("des_gbps"), "fluid_vs_des_percent": c.get("fluid_vs_des_percent")}
        for r in rows
        for c in [by.get(key(r), {})]
    ]
