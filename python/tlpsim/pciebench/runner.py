"""Simulating cells: each cell's scenario through the core, on worker threads, and the
number the cell compares (:func:`simulate`)."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from tlpsim import _core
from tlpsim._core import SimulationError
from tlpsim.pciebench.cells import Cell

__all__ = ["Outcome", "run_cells", "simulate", "simulated_value"]


@dataclass(frozen=True)
class Outcome:
    """A cell's simulated value, what limited its run (a bandwidth cell's bottleneck as
    ``kind resource (busy %)``; None for a latency cell) and its run's per-transfer
    latency summary (ns: ``mean``, ``p50``, ``p95``, ``p99``, ``p99_9``, ``max``)."""

    value: float
    limit: str | None
    latency: dict[str, float | None]


def _run(text: str) -> dict[str, Any]:
    """The one flow of a scenario's run (the core releases the GIL while it simulates)."""
    result = json.loads(_core.run_scenario(_core.load_scenario(text, "<pcie-bench cell>"), None, None)[0])
    if not result["audit"]["passed"]:
        raise SimulationError(f"a pcie-bench cell's run failed its audit: {result['audit']}")
    return result["flows"][0]


def simulated_value(cell: Cell, flow: dict[str, Any]) -> float:
    """What pcie-bench would have reported for ``cell`` from the flow of its run.

    Bandwidth: the flow's throughput in Gb/s; for BW_DMA_RW half of it, since pcie-bench
    counts Bytes = transactions x size with one write and one read per transaction (one
    direction's rate) while the alternating flow counts both. Latency: the median or 99.9th
    percentile of the flow's per-transfer latency (issue to last byte, as the card times
    it)."""
    if cell.measure == "bw_gbps":
        gbps = flow["throughput_gbps"]
        return gbps / 2 if cell.test == "BW_DMA_RW" else gbps
    percentile = {"latency_median_ns": "p50", "latency_p99_9_ns": "p99_9"}[cell.measure]
    value = flow["transfer_latency_ns"][percentile]
    if value is None:
        raise SimulationError(
            f"{cell.table} {cell.series} @ {cell.column}: no transfer finished in the measured window; "
            "lengthen the duration"
        )
    return float(value)


def _limit(flow: dict[str, Any]) -> str:
    """A flow's bottleneck as the validation rows write it: ``kind resource (busy %)``."""
    b = flow["bottleneck"]
    kind = b["kind"].replace("_", " ")
    return f"{kind} {b['resource']} ({100 * b['busy']:.0f} %)" if b["resource"] else kind


def simulate(
    cells: Sequence[Cell],
    scenario_for: Callable[[Cell], str],
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> list[float]:
    """The simulated value of each cell (:func:`simulated_value`), in the cells' order;
    see :func:`run_cells`."""
    return [o.value for o in run_cells(cells, scenario_for, workers, progress)]


def run_cells(
    cells: Sequence[Cell],
    scenario_for: Callable[[Cell], str],
    workers: int = 2,
    progress: Callable[[int, int], None] | None = None,
) -> list[Outcome]:
    """The :class:`Outcome` of each cell, in the cells' order.

    ``scenario_for(cell)`` gives a cell's scenario TOML; cells with the same text share one
    run. Runs go to ``workers`` threads (the core simulates without the GIL, so they run in
    parallel); the values do not depend on ``workers``. ``progress(done, total)`` is called
    in the calling thread as cells finish. On an error or Ctrl-C no further run starts."""
    if workers < 1:
        raise ValueError(f"workers {workers!r} is not allowed; allowed: 1 or more")
    texts = [scenario_for(c) for c in cells]
    users: dict[str, int] = {}
    for t in texts:
        users[t] = users.get(t, 0) + 1
    flows: dict[str, dict[str, Any]] = {}
    done = 0
    if workers == 1:
        for t, n in users.items():
            flows[t] = _run(t)
            done += n
            if progress:
                progress(done, len(cells))
    else:
        pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="tlpsim-pciebench")
        try:
            futures: dict[Future, str] = {pool.submit(_run, t): t for t in users}
            for f in as_completed(futures):
                t = futures[f]
                flows[t] = f.result()
                done += users[t]
                if progress:
                    progress(done, len(cells))
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
    return [
        Outcome(simulated_value(c, flows[t]), _limit(flows[t]) if c.is_bandwidth else None,
                dict(flows[t]["transfer_latency_ns"]))
        for c, t in zip(cells, texts, strict=True)
    ]  # fmt: skip
