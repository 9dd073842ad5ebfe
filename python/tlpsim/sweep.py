"""Parameter sweeps: one scenario run at every combination of some of its values, in
parallel (local processes by default, a Dask cluster when given a client)."""

from __future__ import annotations

import itertools
import json
import os
import signal
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tlpsim import _core
from tlpsim._core import ConfigError, SimulationError
from tlpsim.simulate import Scenario, scenario_text, value_text

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


def _ignore_ctrl_c() -> None:
    """Pool worker start: leave Ctrl-C to the parent."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _run_indexed(job: tuple[int, str, str]) -> tuple[int, dict[str, Any]]:
    """(index, text, origin) -> (index, its run): one point in a pool worker."""
    i, text, origin = job
    return i, _run_point(text, origin)


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
    """A sweep's points, each with its run: ``rows`` has one row per point and workload."""

    keys: list[str]
    points: list[dict[str, Any]]
    runs: list[dict[str, Any]]

    @property
    def rows(self) -> list[dict[str, Any]]:
        """Per point and workload: the swept values, then throughput, latency, bottleneck, and
        for an Ethernet bridging workload the Mb/s it forwarded and the frames it lost (None
        for the others)."""
        out = []
        for point, run in zip(self.points, self.runs, strict=True):
            ethernet = {e["name"]: e for e in run.get("ethernet", [])}
            for f in run["flows"]:
                b = f["bottleneck"]
                e = ethernet.get(f["name"], {})
                out.append({
                    **point,
                    "flow": f["name"],
                    "throughput_gbps": f["throughput_gbps"],
                    "latency_ns_mean": f["latency_ns"]["mean"],
                    "latency_ns_p99": f["latency_ns"]["p99"],
                    "transfer_latency_ns_p99": f.get("transfer_latency_ns", {}).get("p99"),
                    "bottleneck": f"{b['kind'].replace('_', ' ')} {b['resource']}".strip(),
                    "bottleneck_busy": b["busy"],
                    "forwarded_mbps": e.get("forwarded_mbps"),
                    "frames_dropped": e.get("dropped"),
                    "audit_passed": run["audit"]["passed"],
                })  # fmt: skip
        return out

    def to_pandas(self):
        """The rows as a pandas DataFrame."""
        import pandas as pd

        return pd.DataFrame(self.rows)


def sweep(
    scenario: Scenario | str | os.PathLike[str],
    values: Mapping[str, Sequence[Any]],
    jobs: int | None = None,
    client: Any = None,
    progress: Callable[[int, int], None] | None = None,
) -> SweepResult:
    """Runs ``scenario`` (a loaded :class:`Scenario`, a path or TOML text) at every combination of ``values``: keys as
    ``pcie.mps``, ``link.rc-sw1.width``, ``workload.reads.outstanding`` (see
    ``tlpsim.scenario.set_value`` in the core), each with the values to try.

    Every point is built and checked before any runs: a bad key or value raises
    :class:`ScenarioError` naming it. Points run on ``jobs`` local processes (default: one
    per core), or on a Dask cluster when ``client`` (a ``dask.distributed.Client``) is given.
    ``progress(done, total)`` is called as points finish (on a Dask cluster: at the start and
    once all are back). The result keeps the order of the points, whatever order they finish
    in. Ctrl-C stops the local workers.
    """
    if jobs is not None and (not isinstance(jobs, int) or jobs < 1):
        raise ConfigError(f"jobs {jobs!r} is not allowed; allowed: a whole number of processes, 1 or more")
    text, origin = scenario_text(scenario)
    keys = list(values)
    for k in keys:
        if isinstance(values[k], (str, bytes)) or not isinstance(values[k], Sequence) or not values[k]:
            raise ConfigError(f"sweep values of {k} must be a non-empty list, not {values[k]!r}")
    points = [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*(values[k] for k in keys))]
    texts = []
    for point in points:
        t = text
        for k, v in point.items():
            t = _core.set_scenario_value(t, origin, k, value_text(v))
        texts.append(t)
    total = len(texts)
    runs: list[dict[str, Any] | None] = [None] * total
    if progress:
        progress(0, total)
    if client is not None:
        futures = client.map(_run_point, texts, [origin] * total, pure=False)
        runs = list(client.gather(futures))
        if progress:
            progress(total, total)
    elif total == 1 or jobs == 1:
        for i, t in enumerate(texts):
            runs[i] = _run_point(t, origin)
            if progress:
                progress(i + 1, total)
    else:
        # Imported here: a process pool registers exit handlers the rest of tlpsim does without.
        import multiprocessing

        workers = min(jobs or os.cpu_count() or 1, total)
        # Workers ignore Ctrl-C (a terminal sends it to the whole process group): the parent
        # alone handles it, by terminating this pool's workers.
        with multiprocessing.Pool(workers, initializer=_ignore_ctrl_c) as pool:
            for done, (i, run) in enumerate(
                pool.imap_unordered(_run_indexed, [(i, t, origin) for i, t in enumerate(texts)]), 1
            ):
                runs[i] = run
                if progress:
                    progress(done, total)
    for point, run in zip(points, runs, strict=True):
        if run is not None and "error" in run:
            where = ", ".join(f"{k}={v}" for k, v in point.items())
            raise SimulationError(f"sweep point {where}: {run['error']}")
    return SweepResult(keys, points, [r for r in runs if r is not None])
