"""Scenario files and simulation runs: :func:`load_scenario`, :func:`run`, :class:`RunResult`."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from tlpsim import _core
from tlpsim._core import ConfigError, Scenario, ScenarioError, SimulationError
from tlpsim._records import CoreRecord
from tlpsim.files import MAX_INPUT_BYTES, atomic_output, read_capped

__all__ = ["Scenario", "ScenarioError", "SimulationError", "RunResult", "load_scenario", "run", "schema"]


def _looks_like_path(text: str) -> bool:
    """True if ``text`` names a file rather than holding TOML (a comment, a section header
    or a key makes it TOML, as do several lines)."""
    t = text.strip()
    return bool(t) and "\n" not in text.rstrip("\n") and "=" not in t and not t.startswith(("[", "#"))


#: The largest scenario file read; a bigger one (or /dev/zero) is refused in one line.
MAX_SCENARIO_BYTES = MAX_INPUT_BYTES


def scenario_text(source: Scenario | str | os.PathLike[str]) -> tuple[str, str]:
    """(TOML text, origin for messages) of a scenario given as a loaded :class:`Scenario`, a
    path to a TOML file or the TOML text itself. A string is TOML text if it spans lines,
    holds a ``=`` or starts with a ``[`` section header (or is empty); any other string is a
    path.

    A scenario that includes others (``include = ["base.toml"]``, paths relative to the
    file's directory, or to the current directory for text) comes back with them merged in:
    self-contained text that loads, sweeps and runs in worker processes alone. Raises
    :class:`ScenarioError` if the file or a file it includes cannot be read or merged, the
    message naming that file."""
    if isinstance(source, Scenario):
        return source.text, source.origin
    if isinstance(source, os.PathLike) or (isinstance(source, str) and _looks_like_path(source)):
        path = Path(source)
        try:
            data = read_capped(
                path, "a scenario (a 10,000-endpoint system is 2 MiB)", MAX_SCENARIO_BYTES, ScenarioError
            )
            text = data.decode("utf-8")
        except OSError as e:
            raise ScenarioError(_core.one_line(f"{path}: cannot read the file: {e.strerror or e}")) from None
        except UnicodeDecodeError:
            raise ScenarioError(_core.one_line(f"{path}: the file is not UTF-8 text")) from None
        return _core.expand_includes(text, str(path), str(path)), str(path)
    if not isinstance(source, str):
        raise TypeError(f"a scenario is a path or TOML text, not {type(source).__name__}")
    return _core.expand_includes(source, "<text>"), "<text>"


def value_text(v: Any) -> str:
    """A Python value as the text a scenario key is set to (TOML, or a bare string such as
    ``4KiB``): ``True`` -> ``true``, ``256`` -> ``256``."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    return str(v)


def load_scenario(source: Scenario | str | os.PathLike[str], values: Mapping[str, Any] | None = None) -> Scenario:
    """Loads and checks a scenario: a path to a TOML file, or the TOML text itself.

    ``values``, if given, sets keys before the load, named as :func:`tlpsim.sweep` and
    ``--set`` name them (``{"pcie.mps": 256, "link.rc-sw1.width": 4}``; ``"link[a-b,c].width"``
    for a link by its two ends, ``"endpoint[gpu.0].tags"`` for a name holding a dot), one value each.
    Raises :class:`ScenarioError` (a ``ValueError``) with one line naming the file, the
    key and what is allowed.
    """
    text, origin = scenario_text(source)
    for key, value in (values or {}).items():
        text = _core.set_scenario_value(text, origin, key, value_text(value))
    return _core.load_scenario(text, origin)


#: A flow's fields that hold a dict: the two latency summaries (``mean``, ``p50``, ``p95``,
#: ``p99``, ``p99_9``, ``max`` in ns: ``latency_ns`` per request to its first byte,
#: ``transfer_latency_ns`` per transfer to its last) and the bottleneck verdict.
_NESTED = ("latency_ns", "transfer_latency_ns", "bottleneck")
#: A fluid flow's band, two columns in :meth:`RunResult.flow_rows`.
_BAND = ("throughput_band_gbps",)


@dataclass(frozen=True)
class RunResult(CoreRecord):
    """A run's results; field names as in the design's JSON (``flows``, ``links``).

    Build one from the core's JSON with :meth:`from_dict`: top-level fields this version
    does not name go to ``extra``; rows of ``flows``, ``links`` ... are dicts and keep every
    field. :meth:`to_dict` gives all of them back."""

    simulated_s: float
    wall_s: float
    events: int
    tlp_hops: int
    flows: list[dict[str, Any]]
    links: list[dict[str, Any]]
    audit: dict[str, Any] = field(default_factory=dict)
    ethernet: list[dict[str, Any]] = field(default_factory=list)
    #: Per fio workload on an NVMe drive: ``{"name", "endpoint", "target", "rw", "bs",
    #: "iodepth", "numjobs", "ios", "iops", "bandwidth_mb_per_s", "bandwidth_gb_per_s",
    #: "latency_ns"}``, the latency per I/O from its doorbell to its MSI-X (ns).
    fio: list[dict[str, Any]] = field(default_factory=list)
    #: Per inter-socket link and direction: ``{"name", "direction" ("rc0->rc1"),
    #: "utilization", "payload_gbps", "bandwidth_gbytes_per_s"}``.
    socket_links: list[dict[str, Any]] = field(default_factory=list)
    #: Memory, host bridges, shared switch buses, storage media and CPU cores:
    #: ``{"name", "kind", "busy"}`` with ``busy`` the fraction of the window.
    resources: list[dict[str, Any]] = field(default_factory=list)
    #: The flows that completed nothing for a watchdog period or more while their TLPs
    #: waited: ``{"flow", "since_us", "until_us", "for_us", "waits_on", "detail"}``,
    #: ``until_us`` None when the flow still completed nothing at the run's end.
    starved: list[dict[str, Any]] = field(default_factory=list)
    #: One sentence per flow that completed fewer than 10 of its units (I/Os, copies,
    #: transfers) in the window, naming a duration that would give 10 or more.
    warnings: list[str] = field(default_factory=list)
    #: The engine that produced it: ``"des"`` (TLP by TLP) or ``"fluid"`` (flow-level: no
    #: latencies, each flow's ``unloaded_latency_ns`` instead, and its ``estimates``: what its
    #: rate rests on beyond the closed form); None for a record without it.
    engine: str | None = None
    #: Top-level fields of the core's result this version does not name, kept as they came.
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The result as plain JSON-ready data."""
        return {
            "simulated_s": self.simulated_s,
            "wall_s": self.wall_s,
            "events": self.events,
            "tlp_hops": self.tlp_hops,
            "flows": [{k: dict(v) if k in _NESTED else v for k, v in f.items()} for f in self.flows],
            "links": [dict(link) for link in self.links],
            "socket_links": [dict(s) for s in self.socket_links],
            "resources": [dict(r) for r in self.resources],
            "ethernet": [dict(e) for e in self.ethernet],
            "fio": [{k: dict(v) if k == "latency_ns" else v for k, v in f.items()} for f in self.fio],
            "starved": [dict(s) for s in self.starved],
            "warnings": list(self.warnings),
            "audit": dict(self.audit),
            **({} if self.engine is None else {"engine": self.engine}),
            **self.extra,
        }

    def flow_rows(self) -> list[dict[str, Any]]:
        """The flows as flat rows: ``latency_ns`` becomes ``latency_ns_mean``, ``_p50``,
        ``_p95``, ``_p99``, ``_p99_9``, ``_max``; ``transfer_latency_ns`` likewise
        ``transfer_latency_ns_mean`` ...; ``bottleneck`` becomes ``bottleneck_kind``,
        ``bottleneck_resource`` ...; a fluid flow's ``estimates`` become one text, "; "
        between them, and its ``throughput_band_gbps`` ``band_low_gbps`` and
        ``band_high_gbps``."""
        return [
            {
                **{k: "; ".join(v) if k == "estimates" else v for k, v in f.items() if k not in _NESTED + _BAND},
                **dict(zip(("band_low_gbps", "band_high_gbps"), f.get("throughput_band_gbps") or [], strict=False)),
                **{f"{n}_{k}": v for n in _NESTED for k, v in f.get(n, {}).items()},
            }
            for f in self.flows
        ]

    def to_pandas(self, what: Literal["flows", "links", "resources"] = "flows"):
        """A pandas DataFrame of the flows (one row per flow, as :meth:`flow_rows`: the
        first-byte latency per request as ``latency_ns_mean``, ``latency_ns_p50`` ..., the
        latency per transfer as ``transfer_latency_ns_mean`` ...), the links or the other
        resources."""
        import pandas as pd

        if what == "flows":
            return pd.DataFrame(self.flow_rows())
        if what == "links":
            return pd.DataFrame(self.links)
        if what == "resources":
            columns = dict.fromkeys(["name", "kind", "busy"])
            for r in self.resources:
                columns.update(dict.fromkeys(r))
            return pd.DataFrame(self.resources, columns=list(columns))
        raise ValueError(f"what {what!r} is not allowed; allowed: flows, links, resources")


#: Packets a trace keeps unless told otherwise (the core's default).
TRACE_LIMIT: int = _core.TRACE_LIMIT


def run(
    scenario: Scenario | str | os.PathLike[str],
    progress: Callable[[float], None] | None = None,
    trace: str | os.PathLike[str] | None = None,
    trace_limit: int = TRACE_LIMIT,
) -> RunResult:
    """Simulates a scenario (or a path / TOML text, loaded first) and returns its results.

    ``progress(fraction)``, if given, is called now and then with the share of the simulated
    time done (0 to 1, ending at 1); an exception it raises stops the run and propagates.
    Ctrl-C stops a run within a fraction of a second (KeyboardInterrupt). Raises
    :class:`SimulationError` if the run deadlocks on credits.

    ``trace``, if given, is a file to write the first ``trace_limit`` packets put on any
    wire to (TLPs, replays, DLLPs), as Chrome trace event JSON: open it in Perfetto
    (ui.perfetto.dev) or chrome://tracing, one track per link direction. Tracing changes no
    result.
    """
    if not isinstance(scenario, Scenario):
        scenario = load_scenario(scenario)
    if trace is not None:
        if not isinstance(trace_limit, int) or trace_limit < 1:
            raise ConfigError(
                f"trace_limit {trace_limit!r} is not allowed; allowed: a whole number of packets, 1 or more"
            )
        # Checked before the run, so that a long run is not lost to a typo in the path.
        path = Path(trace)
        parent = path.parent
        why = (
            "it is a folder" if path.is_dir()
            else f"folder {parent} does not exist" if not parent.is_dir()
            else f"folder {parent} is not writable" if not os.access(parent, os.W_OK)
            else f"{path.name} is not writable" if path.exists() and not os.access(path, os.W_OK)
            else None
        )  # fmt: skip
        if why:
            raise ConfigError(f"{path}: cannot write the trace: {why}")
    if trace is None:
        text, _ = _core.run_scenario(scenario, progress)
    else:
        # The core streams the trace into a temporary file as the run goes; it replaces
        # `path` only once the run and the trace are whole.
        with atomic_output(path, "trace") as tmp:
            text, _ = _core.run_scenario(scenario, progress, trace_limit, tmp)
    return RunResult.from_dict(json.loads(text))


def schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format, generated from the core's types."""
    return json.loads(_core.scenario_schema())
