"""The ``tlpsim`` command line: ``link``, ``run``, ``sweep``, ``matrix``, ``schema``, ``validate``, ``fit``,
``import``."""

from __future__ import annotations

import enum
import io
import signal
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn, TypeVar

import click
import typer
from rich.console import Console

from tlpsim import ConfigError, _core, link_bandwidth, message_bandwidth, validate
from tlpsim.files import check_output, write_atomic
from tlpsim.output import Format, Unit, console, emit, emit_json, in_unit, unit_spec
from tlpsim.simulate import TRACE_LIMIT, RunResult, Scenario, SimulationError, load_scenario, schema
from tlpsim.simulate import run as run_scenario
from tlpsim.validation import display_unit, write_report
from tlpsim.validation import systems as validation_systems

if TYPE_CHECKING:
    from tlpsim.sweep import SweepResult

T = TypeVar("T")

app = typer.Typer(
    name="tlpsim",
    help="Performance model and simulator of PCI Express fabrics.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

#: How ``--set`` names what a plain ``SECTION.NAME.KEY`` cannot.
_SET_KEYS = (
    "A link by its two ends: link[UP,DOWN].KEY (link[a-b,c].width=1, where link.a-b-c would be ambiguous); "
    "a name holding a dot: SECTION[NAME].KEY (endpoint[gpu.0].tags=32)."
)

FormatOpt = Annotated[Format, typer.Option("--format", "-f", help="Output format.", case_sensitive=False)]


class Engine(str, enum.Enum):
    """``--engine``: which engine runs the scenario."""

    des = "des"
    fluid = "fluid"


#: ``--engine``: sets ``[simulation] engine`` before the run (the file's own when left out).
EngineOpt = Annotated[
    Engine | None,
    typer.Option(
        "--engine",
        help="des: TLP by TLP (the default); fluid: flow-level max-min sharing of closed-form capacities, "
        "in microseconds, no latencies (default: the scenario's [simulation] engine).",
        case_sensitive=False,
    ),
]


class SweepEngine(str, enum.Enum):
    """``tlpsim sweep --engine``: as ``--engine``, or ``auto`` (fluid everywhere, the DES on a sample)."""

    des = "des"
    fluid = "fluid"
    auto = "auto"


#: ``tlpsim sweep --engine``: ``--engine`` with ``auto``.
SweepEngineOpt = Annotated[
    SweepEngine | None,
    typer.Option(
        "--engine",
        help="des: TLP by TLP (the default); fluid: flow-level max-min sharing of closed-form capacities; "
        "auto: fluid at every point, and the DES at a few points spread over the sweep, with their "
        "agreement (default: the scenario's [simulation] engine).",
        case_sensitive=False,
    ),
]

#: ``--unit``: the throughput unit of `run`, `sweep` and `compare` tables (JSON and CSV keep
#: their fields, each in the unit its name says).
UnitOpt = Annotated[
    Unit,
    typer.Option("--unit", help="Throughput unit of the tables: Gb/s, GB/s (10^9 bytes/s) or MB/s (10^6 bytes/s)."),
]


def _print_version(value: bool) -> None:
    """``--version``: prints ``tlpsim X.Y.Z`` from the installed package's metadata and exits."""
    if value:
        from importlib.metadata import version

        print(f"tlpsim {version('tlpsim')}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool | None,
        typer.Option("--version", callback=_print_version, is_eager=True, help="Print the version and exit."),
    ] = None,
) -> None:
    """Performance model and simulator of PCI Express fabrics."""


class Shell(str, enum.Enum):
    """Shells ``tlpsim completion`` writes a script for."""

    bash = "bash"
    zsh = "zsh"
    fish = "fish"


@app.command(name="completion")
def completion_cmd(shell: Annotated[Shell, typer.Argument(help="The shell: bash, zsh or fish.")]) -> None:
    """Print the shell completion script for tlpsim (or let `tlpsim --install-completion`
    install it for the shell you run)."""
    from typer.completion import get_completion_script

    print(get_completion_script(prog_name="tlpsim", complete_var="_TLPSIM_COMPLETE", shell=shell.value))


def parse_sizes(text: str, name: str) -> list[int]:
    """Comma-separated byte counts, each as a scenario file writes one: ``64,128,4KiB``."""
    return [_core.parse_bytes(name, item.strip()) for item in text.split(",")]


@app.command()
def link(
    gen: Annotated[int, typer.Option(help="Generation, 1-7 (2.5 to 128 GT/s).")],
    width: Annotated[int, typer.Option(help="Lanes: 1, 2, 4, 8, 12, 16 or 32.")],
    mps: Annotated[int, typer.Option(help="Max_Payload_Size, bytes (128-4096).")] = 128,
    mrrs: Annotated[int, typer.Option(help="Max_Read_Request_Size, bytes (128-4096).")] = 512,
    rcb: Annotated[int, typer.Option(help="Read completion boundary, bytes (64 or 128).")] = 64,
    payload: Annotated[
        str | None, typer.Option(help="Transfer size(s), comma-separated (default: MPS); the TLP size with --message.")
    ] = None,
    addressing: Annotated[int, typer.Option(help="Address bits of memory requests: 32 or 64.")] = 64,
    ecrc: Annotated[bool, typer.Option("--ecrc", help="Add a 4-byte ECRC to every TLP.")] = False,
    dllp: Annotated[str, typer.Option(help="DLLP charge: spec, none, or bytes per TLP.")] = "spec",
    no_skp: Annotated[bool, typer.Option("--no-skp", help="Do not charge SKP ordered sets.")] = False,
    flit: Annotated[
        bool | None,
        typer.Option("--flit/--no-flit", help="Flit mode (default: only where the generation requires it)."),
    ] = None,
    completion: Annotated[str, typer.Option(help="Completion size: rcb (one per RCB block) or mps.")] = "rcb",
    message: Annotated[
        str | None, typer.Option(help="Message size(s) in bytes: report the message payload rate instead.")
    ] = None,
    header: Annotated[int, typer.Option(help="Protocol header bytes per message (with --message).")] = 0,
    format: FormatOpt = Format.table,
) -> None:
    """Closed-form bandwidth of one link, per direction (both directions busy)."""
    common = dict(
        gen=gen, width=width, mps=mps, mrrs=mrrs, rcb=rcb, addressing=addressing, ecrc=ecrc,
        dllp=dllp, skp=not no_skp, flit=flit, completion=completion,
    )  # fmt: skip
    if message is not None:
        payloads = parse_sizes(payload, "payload") if payload else [64]
        rows = [
            message_bandwidth(message=m, header=header, payload=p, **common).to_dict()
            for p in payloads
            for m in parse_sizes(message, "message")
        ]
        columns = [
            ("gen", "gen", ""), ("width", "width", ""), ("message_bytes", "message B", ""),
            ("header_bytes", "header B", ""), ("payload_bytes", "TLP payload B", ""),
            ("tlps_per_message", "TLPs/msg", ""), ("max_gbps", "max Gb/s", ".3f"),
            ("message_gbps", "message Gb/s", ".3f"), ("reduction", "reduction", "%"),
        ]  # fmt: skip
        emit(rows, format, columns, title="Message payload rate per direction")
        return
    payloads = parse_sizes(payload, "payload") if payload else [None]
    rows = [link_bandwidth(payload=p, **common).to_dict() for p in payloads]
    columns = [
        ("gen", "gen", ""), ("width", "width", ""), ("mps", "MPS", ""), ("payload_bytes", "payload B", ""),
        ("raw_gbps", "raw Gb/s", ".4g"), ("encoded_gbps", "encoded Gb/s", ".4f"),
        ("tlp_wire_bytes", "TLP wire B", ""), ("write_gbps", "write Gb/s", ".3f"),
        ("write_gbytes_per_s", "write GB/s", ".3f"), ("read_gbps", "read Gb/s", ".3f"),
        ("read_gbytes_per_s", "read GB/s", ".3f"), ("efficiency", "efficiency", "%"),
        ("dllp_fraction", "DLLP share", "%"), ("flit", "flit", ""),
    ]  # fmt: skip
    emit(rows, format, columns, title="Link bandwidth per direction")


def _interrupted(bar, progress: str) -> NoReturn:
    """Ends a command stopped by Ctrl-C: the progress bar goes, one line says how far the
    work got, exit code 130. A further Ctrl-C while it exits is ignored (it would kill the
    interpreter on its way out and lose the exit code)."""
    global _said_interrupted
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    bar.stop()
    print(f"tlpsim: interrupted after {progress}", file=sys.stderr)
    _said_interrupted = True
    raise typer.Exit(130) from None


#: `_interrupted` said how far the work got (a Ctrl-C elsewhere, e.g. while a scenario
#: loads, reaches `main` as exit code 130 with nothing said yet).
_said_interrupted = False


def _simulate(loaded: Scenario, name: str, trace: Path | None = None, trace_limit: int = TRACE_LIMIT) -> RunResult:
    """Runs a loaded scenario with a progress bar on stderr when it is a terminal; Ctrl-C
    stops it with one line saying how far it got (exit code 130)."""
    from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    total_us = loaded.duration_s * 1e6
    done = [0.0]
    with Progress(
        TextColumn(f"simulating {total_us:.0f} us of {name}"),
        BarColumn(),
        TaskProgressColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=True,
        disable=not err.is_terminal,
    ) as bar:
        task = bar.add_task("run", total=1.0)

        def progress(fraction: float) -> None:
            done[0] = fraction
            bar.update(task, completed=fraction)

        try:
            return run_scenario(loaded, progress=progress, trace=trace, trace_limit=trace_limit)
        except KeyboardInterrupt:
            _interrupted(bar, f"{done[0] * total_us:.0f} of {total_us:.0f} us simulated")


def _run_rows(result) -> list[dict]:
    """Flows and links as one list of flat rows (the CSV view)."""
    rows = [{"kind": "flow", "name": f.pop("name"), "direction": "", **f} for f in result.flow_rows()]
    for link in result.links:
        rows.append({"kind": "link", **link})
    for r in result.resources:
        others = {k: v for k, v in r.items() if k not in ("name", "kind", "busy")}
        rows.append({"kind": "resource", "name": r["name"], "resource_kind": r["kind"], "busy": r["busy"], **others})
    for f in result.fio:
        lat = {f"latency_ns_{k}": v for k, v in (f.get("latency_ns") or {}).items()}
        rows.append({"kind": "fio", **{k: v for k, v in f.items() if k != "latency_ns"}, **lat})
    for key, kind_rows in _kind_tables(result):
        rows.extend({"kind": key, **r} for r in kind_rows)
    keys: dict[str, None] = {}
    for r in rows:
        keys.update(dict.fromkeys(r))
    return [{k: r.get(k, "") for k in keys} for r in rows]


def _kind_tables(result) -> list[tuple[str, list[dict]]]:
    """The result lists of workload kinds this front does not name (a newer kind's own
    table, such as ``cxl``), each as its key and flat rows: a nested dict's fields become
    ``FIELD_KEY`` (``latency_ns_mean``)."""
    tables = []
    for key, rows in result.extra.items():
        if not (isinstance(rows, list) and rows and all(isinstance(r, dict) for r in rows)):
            continue
        flat = []
        for r in rows:
            row: dict = {}
            for k, v in r.items():
                row.update({f"{k}_{kk}": vv for kk, vv in v.items()} if isinstance(v, dict) else {k: v})
            flat.append(row)
        tables.append((key, flat))
    return tables


def _kind_columns(rows: list[dict]) -> list[tuple[str, str, str]]:
    """Table columns for rows of a kind's own results, from the fields of its first row,
    ``name`` first: text left-aligned, whole numbers with thousands separators, fractions
    named ``*utilization`` in percent, numbers of 100,000 or more whole, others to three
    decimals."""
    columns = []
    first = rows[0]
    for k in sorted(first, key=lambda k: k != "name"):
        v = first[k]
        heading = k.replace("_", " ")
        if isinstance(v, str) or v is None:
            columns.append((k, f" {heading}", ""))
        elif isinstance(v, bool) or isinstance(v, int):
            columns.append((k, heading, "" if isinstance(v, bool) else ","))
        else:
            big = abs(v) >= 1e5
            columns.append((k, heading, "%" if k.endswith("utilization") else ",.0f" if big else ".3f"))
    return columns


def _fio_rows(fio: list[dict]) -> list[dict]:
    """The fio results as table rows: latencies in microseconds, depth as ``iodepth x jobs``."""
    rows = []
    for f in fio:
        lat = f.get("latency_ns") or {}
        us = {f"{k}_us": (v / 1000 if v is not None else None) for k, v in lat.items()}
        rows.append({
            **f, "depth": f"{f['iodepth']} x {f['numjobs']}", "mb_per_s": f["bandwidth_mb_per_s"],
            "gb_per_s": f["bandwidth_gb_per_s"], **us,
        })  # fmt: skip
    return rows


#: GPU copies whose engines post writes (``flows[].memcpy``): nothing answers a posted write,
#: so they have no first-byte latency. The core's ``latency_ns`` for them, each TLP's first
#: byte out to its taking effect, is the TLP's own wire time where the target adds nothing
#: (4.4 ns for 256 B on Gen5 x16): the tables show "-", JSON and CSV keep the figure.
POSTED_COPIES = ("d2h", "p2p-write")

#: The first-byte latency fields the `run` and `sweep` tables show.
_FIRST_BYTE = ("latency_ns_mean", "latency_ns_p50", "latency_ns_p99", "latency_ns_max")


def _no_first_byte(rows: list[dict], copies: list[str | None]) -> list[dict]:
    """Table rows with the first-byte latency blank (shown "-") where ``copies`` (each row's
    ``memcpy``) names a copy of posted writes."""
    return [
        {**r, **dict.fromkeys((f for f in _FIRST_BYTE if f in r), None)} if c in POSTED_COPIES else r
        for r, c in zip(rows, copies, strict=True)
    ]


def _say_no_first_byte(flows: list[dict]) -> None:
    """One line per GPU copy of posted writes saying why its first-byte latency is "-"."""
    for f in flows:
        if f.get("memcpy") in POSTED_COPIES:
            console().print(
                f"{f['name']}: no first-byte latency (-): a {f['memcpy']} copy posts writes, which nothing answers; "
                "JSON's latency_ns is each write's time to take effect at the target",
                highlight=False, markup=False,
            )  # fmt: skip


def _say_trace_written(trace: Path, limit: int) -> None:
    """Says the trace was written and, when the limit cut it, how many packets it dropped
    (the file's ``dropped`` field says the same)."""
    import re

    with trace.open("rb") as f:
        f.seek(max(trace.stat().st_size - 200, 0))
        found = re.search(rb'"dropped":(\d+)', f.read())
    dropped = int(found.group(1)) if found else 0
    line = f"wrote {trace}"
    if dropped:
        line += f": truncated, the first {limit:,} packets kept, {dropped:,} later ones dropped (raise --trace-limit)"
    Console(stderr=True, highlight=False).print(line, markup=False)


#: ``--force``: the commands that write a file refuse an existing one without it.
ForceOpt = Annotated[bool, typer.Option("--force", help="Overwrite an existing output file.")]


@app.command(name="run")
def run_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario TOML file (see `tlpsim schema`).")],
    format: FormatOpt = Format.table,
    trace: Annotated[
        Path | None,
        typer.Option(
            help="Write the packets on every wire (TLPs, replays, DLLPs) to this file as Chrome trace JSON, "
            "for Perfetto or chrome://tracing."
        ),
    ] = None,
    trace_limit: Annotated[int, typer.Option(help="Packets the trace keeps (the first ones).", min=1)] = TRACE_LIMIT,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="KEY=VALUE to change before the run, keys as `tlpsim sweep --set` takes them, e.g. pcie.mps=256, "
            f"link.rc-sw1.width=4, endpoint.gpu.count=8. {_SET_KEYS} Repeat for more keys.",
        ),
    ] = None,
    force: ForceOpt = False,
    unit: Annotated[
        Unit | None,
        typer.Option(
            "--unit",
            help="Throughput unit of the tables: Gb/s, GB/s (10^9 bytes/s) or MB/s (10^6 bytes/s) "
            "(default: flows in Gb/s and GB/s, links in Gb/s).",
        ),
    ] = None,
    engine: EngineOpt = None,
) -> None:
    """Simulate a scenario at the TLP level: throughput and latency per flow, per link direction."""
    if trace is not None:
        check_output(trace, "trace", inputs=[scenario], force=force)
    values = _run_set_values(set_ or [])
    if engine is not None:
        values["simulation.engine"] = engine.value
    loaded = load_scenario(scenario, values=values)
    result = _simulate(loaded, scenario.name, trace, trace_limit)
    if trace is not None:
        _say_trace_written(trace, trace_limit)
    if format is Format.json:
        emit_json(result.to_dict())
    elif format is Format.csv:
        emit(_run_rows(result), format, [])
    else:
        # Completion timeouts only get a column when a requester gave up on a read.
        timeouts = (
            [("completion_timeouts", "completion timeouts", ",")]
            if any(f.get("completion_timeouts") for f in result.flows)
            else []
        )
        rates = (
            [("throughput_gbps", "Gb/s", ".3f"), ("throughput_gbytes_per_s", "GB/s", ".3f")]
            if unit is None
            else [("throughput_gbps", unit.value, unit_spec(unit))]
        )
        flow_rows = _no_first_byte(result.flow_rows(), [f.get("memcpy") for f in result.flows])
        emit(in_unit(flow_rows, ["throughput_gbps"], unit or Unit.gbps), format, [
            ("name", " flow", ""), ("target", " target", ""), ("bytes", "bytes", ","), *rates,
            ("latency_ns_mean", "first byte mean ns", ".1f"),
            ("latency_ns_p50", "p50 ns", ".0f"), ("latency_ns_p99", "p99 ns", ".0f"),
            ("latency_ns_max", "max ns", ".0f"), ("transfer_latency_ns_p50", "transfer p50 ns", ".0f"),
            ("transfer_latency_ns_p99", "transfer p99 ns", ".0f"), ("requests", "requests", ","), *timeouts,
        ], title=f"{scenario.name}: flows (latency per request to its first byte, transfer to its last)")  # fmt: skip
        if result.fio:
            emit(_fio_rows(result.fio), format, [
                ("name", " fio", ""), ("endpoint", " drive", ""), ("rw", " rw", ""), ("bs", "bs", ","),
                ("depth", "iodepth x jobs", ""), ("ios", "I/Os", ","), ("iops", "IOPS", ",.0f"),
                ("mb_per_s", "MB/s", ",.1f"),
                ("gb_per_s", "GB/s", ".3f"), ("mean_us", "lat mean us", ".1f"), ("p50_us", "p50 us", ".1f"),
                ("p99_us", "p99 us", ".1f"), ("p99_9_us", "p99.9 us", ".1f"), ("max_us", "max us", ".1f"),
            ], title="fio (latency per I/O: submission doorbell to MSI-X)")  # fmt: skip
        for key, rows in _kind_tables(result):
            emit(rows, format, _kind_columns(rows), title=key)
        _say_no_first_byte(result.flows)
        copies = [f for f in result.flows if f.get("memcpy")]
        if copies:
            emit(copies, format, [
                ("name", " flow", ""), ("memcpy", " copy", ""), ("target", " target", ""),
                ("memcpy_gbytes_per_s", "GB/s", ".2f"),
            ], title="GPU copies (nvbandwidth's GB/s)")  # fmt: skip
        for f in result.flows:
            if f.get("address"):
                console().print(f"{f['name']}: address {f['address']}")
        for f in result.flows:
            b = f["bottleneck"]
            console().print(
                f"{f['name']}: limited by {b['kind'].replace('_', ' ')} ({b['resource'] or 'none'}): {b['detail']}"
            )
        band_unit = unit or Unit.gbps
        spec = unit_spec(band_unit)
        for f in result.flows:
            if "throughput_band_gbps" in f:
                lo, hi = f["throughput_band_gbps"]
                band = in_unit([{"lo": lo, "hi": hi}], ["lo", "hi"], band_unit)[0]
                lines = "; ".join(f["estimates"])
                why = f"estimates (--engine des checks them): {lines}" if lines else "the closed form alone"
                console().print(
                    f"{f['name']}: 90 % band against the simulator {band['lo']:{spec}}-{band['hi']:{spec}} "
                    f"{band_unit.value}; rests on {why}"
                )
        # Retrains (REPLAY_NUM rollovers) only get a column when a link retrained.
        retrains = [("retrains", "retrains", ",")] if any(lk.get("retrains") for lk in result.links) else []
        link_unit = unit or Unit.gbps
        emit(in_unit(result.links, ["payload_gbps"], link_unit), format, [
            ("name", " link", ""), ("direction", " dir", ""), ("utilization", "utilization", "%"),
            ("payload_gbps", f"payload {link_unit.value}", unit_spec(link_unit)), ("tlps", "TLPs", ","),
            ("dllps", "DLLPs", ","), ("replays", "replays", ","), *retrains,
            ("credit_stall_fraction", "credit stall", "%"), ("queue_mean_tlps", "queued TLPs mean", ".1f"),
            ("queue_max_tlps", "max", ","),
        ], title="links", keys=2)  # fmt: skip
        if result.socket_links:
            emit(in_unit(result.socket_links, ["payload_gbps"], link_unit), format, [
                ("name", " socket link", ""), ("direction", " dir", ""), ("utilization", "utilization", "%"),
                ("payload_gbps", f"payload {link_unit.value}", unit_spec(link_unit)),
                ("bandwidth_gbytes_per_s", "bandwidth GB/s", ".1f"),
            ], title="socket links", keys=2)  # fmt: skip
        # Resources that did no work (65,536 idle host bridges took 14 s to draw) are
        # counted, not listed; JSON and CSV list every one.
        working = [r for r in result.resources if r["busy"] > 0]
        if working:
            emit(working, format, [("name", " resource", ""), ("kind", " kind", ""), ("busy", "busy", "%")],
                 title="other resources")  # fmt: skip
        idle = len(result.resources) - len(working)
        if idle:
            plural = "s" if idle > 1 else ""
            line = f"{idle:,} more resource{plural} idle (busy 0 %), not shown; --format json or csv lists all"
            console().print(line)
        a = result.audit
        conserved = a["payload_created"] == a["payload_delivered"] + a["payload_in_flight"]
        if result.engine == "fluid":
            console().print(
                f"fluid engine: flow rates solved from the links' closed forms and the nodes' limits, "
                f"no TLP-level audit (run --engine des for one); {result.simulated_s * 1e6:.1f} us "
                f"window, solved in {result.wall_s:.4f} s"
            )
        else:
            console().print(
                f"audit {'passed' if a['passed'] else 'FAILED'}: {a['tlps_created']:,} TLPs created, "
                f"{a['tlps_delivered']:,} delivered, {a['tlps_in_flight']:,} in flight at the end; "
                f"payload {'conserved' if conserved else 'NOT conserved'}; "
                f"{a['order_violations']} ordering and {a['credit_violations']} credit violations. "
                f"{result.simulated_s * 1e6:.1f} us measured after warmup, "
                f"{result.events:,} events in {result.wall_s:.3f} s"
            )
    _warn_starved(result)
    if not result.audit["passed"]:
        Console(stderr=True).print(f"tlpsim: audit FAILED: {result.audit}")
        raise typer.Exit(1)


def _warn_starved(result) -> None:
    """One warning line on stderr per flow that completed nothing for a watchdog period or
    more while its TLPs waited (``starved`` in the result), and per flow that completed too
    few of its units for its figures to mean much (``warnings``), whatever the output format."""
    err = Console(stderr=True, highlight=False)
    for w in result.warnings:
        err.print(f"tlpsim: warning: {w}", soft_wrap=True, markup=False)
    for s in result.starved:
        until = "the end" if s["until_us"] is None else f"{s['until_us']:,.3f} us"
        err.print(
            f"tlpsim: warning: flow {s['flow']} starved: it completed nothing from {s['since_us']:,.3f} us "
            f"to {until} ({s['for_us']:,.3f} us): {s['detail']}",
            soft_wrap=True,
            markup=False,
        )


def _dask_client(address: str):
    """A Dask client for ``--scheduler``; one clear line when dask.distributed is missing."""
    try:
        from dask.distributed import Client
    except ImportError:
        raise ConfigError("--scheduler needs dask.distributed: pip install 'tlpsim[dask]'") from None
    try:
        return Client(address)
    except OSError as e:
        raise ConfigError(f"--scheduler {address}: cannot reach the Dask scheduler: {e}") from None


def parse_set(items: list[str]) -> dict[str, list[str]]:
    """``--set`` options as ``{key: [values]}``: each ``KEY=V1,V2,...`` (commas inside ``{}``,
    ``[]`` or quotes do not split), a key at most once; ConfigError naming a bad one."""
    from tlpsim.sweep import split_values

    values: dict[str, list[str]] = {}
    for item in items:
        key, sep, rest = item.partition("=")
        if not sep or not key.strip() or not split_values(rest):
            raise ConfigError(f"--set {item!r} is not allowed; allowed: KEY=V1,V2,... such as pcie.mps=128,256")
        if key.strip() in values:
            raise ConfigError(
                f"--set {key.strip()} is given twice; give all its values in one --set {key.strip()}=V1,V2,..."
            )
        values[key.strip()] = split_values(rest)
    return values


def _run_set_values(items: list[str]) -> dict[str, str]:
    """``tlpsim run --set`` options, parsed as sweep's, as ``{key: value}``: one value per key
    (several are a sweep, and the error says so)."""
    values = parse_set(items)
    for key, vs in values.items():
        if len(vs) > 1:
            raise ConfigError(
                f"--set {key}={','.join(vs)}: run takes one value per key; "
                f"try them all with tlpsim sweep --set {key}={','.join(vs)}"
            )
    return {key: vs[0] for key, vs in values.items()}


@app.command(name="sweep")
def sweep_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario TOML file (see `tlpsim schema`).")],
    set_: Annotated[
        list[str],
        typer.Option(
            "--set",
            help="KEY=V1,V2,... to try, e.g. pcie.mps=128,256, link.rc-sw1.width=4,8, "
            f"workload.reads.outstanding=1,4,16, endpoint.ex.tags=8,32. {_SET_KEYS} Repeat for more keys: "
            "every combination runs.",
        ),
    ],
    jobs: Annotated[int | None, typer.Option(help="Local processes (default: one per core).", min=1)] = None,
    scheduler: Annotated[str | None, typer.Option(help="Run on this Dask scheduler (tcp://host:8786) instead.")] = None,
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", help="Append each point to this JSON Lines file as it finishes."),
    ] = None,
    resume: Annotated[
        bool, typer.Option("--resume", help="Run only the points --output lacks (after a stop, kill or failure).")
    ] = False,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing --output file.")] = False,
    engine: SweepEngineOpt = None,
    format: FormatOpt = Format.table,
    unit: UnitOpt = Unit.gbps,
) -> None:
    """Run one scenario at every combination of some of its values: throughput, latency and
    bottleneck per point and workload."""
    # Imported here: process pools register exit handlers every other command can do without.
    from tlpsim.sweep import but_engine, with_des
    from tlpsim.sweep import sweep as run_sweep

    values = parse_set(set_)
    auto = engine is SweepEngine.auto
    if engine is not None:
        values["simulation.engine"] = ["fluid" if auto else engine.value]
    if output is not None:
        # The input first: --force (or --resume) must never turn the scenario into points.
        check_output(output, "sweep points", inputs=[scenario], force=True)
    _check_sweep_output(output, resume, force)
    client = _dask_client(scheduler) if scheduler else None
    try:
        result = _with_count_bar(
            f"sweeping {scenario.name}", "points",
            lambda step: run_sweep(
                scenario, values, jobs=jobs, client=client, progress=step, output=output, resume=resume,
                overwrite=force, keep_failed=True,
            ),
        )  # fmt: skip
    except typer.Exit as e:
        if e.exit_code == 130 and output is not None:
            print(f"tlpsim: the finished points are in {output}; add --resume to run the rest", file=sys.stderr)
        raise
    if result.reused:
        print(f"tlpsim: {result.reused} points were already in {output}", file=sys.stderr)
    checked = _check_on_des(scenario, values, result, jobs, client) if auto else None
    columns = [(k, f" {k}", "") for k in result.keys] + [
        ("flow", " flow", ""), ("throughput_gbps", unit.value, unit_spec(unit)),
        ("latency_ns_mean", "first byte mean ns", ".1f"),
        ("latency_ns_p99", "p99 ns", ".0f"), ("transfer_latency_ns_p99", "transfer p99 ns", ".0f"),
        ("bottleneck", " bottleneck", ""), ("bottleneck_busy", "busy", "%"),
    ]  # fmt: skip
    if any(r["forwarded_mbps"] is not None for r in result.rows):
        columns += [("forwarded_mbps", "forwarded Mb/s", ".1f"), ("frames_dropped", "dropped", "")]
    rows = result.rows
    if checked is not None and format is not Format.table:
        rows = with_des(rows, but_engine(result.keys), checked)
    if format is Format.table:
        copies = [f.get("memcpy") for run in result.runs for f in run["flows"]]
        rows = in_unit(_no_first_byte(rows, copies), ["throughput_gbps"], unit)
    emit(rows, format, columns, title=f"{scenario.name}: sweep", keys=len(result.keys) + 1)
    if checked is not None and format is Format.table:
        _print_agreement(checked, but_engine(result.keys), unit)
    for point in result.failed:
        where = ", ".join(f"{k}={point[k]}" for k in result.keys)
        print(f"tlpsim: sweep point {where} failed: {point['error']}", file=sys.stderr)
    if result.failed:
        again = f"; add --resume to run them again (the others are in {output})" if output else ""
        total = len(result.failed) + len(result.points)
        print(f"tlpsim: {len(result.failed)} of {total} points failed{again}", file=sys.stderr)
        raise typer.Exit(3)
    if not all(r["audit_passed"] for r in result.rows):
        Console(stderr=True).print("tlpsim: audit FAILED in some points (column audit_passed)")
        raise typer.Exit(1)


def _check_on_des(scenario: Path, values: dict, fluid: SweepResult, jobs: int | None, client: object) -> list[dict]:
    """``sweep --engine auto``: runs a few of the fluid sweep's points on the DES; the
    agreement per checked point and workload (``tlpsim.sweep.agreement``)."""
    from tlpsim.sweep import agreement, but_engine, check_points
    from tlpsim.sweep import sweep as run_sweep

    picked = [{**fluid.points[i], "simulation.engine": "des"} for i in check_points(len(fluid.points))]
    des_values = {**values, "simulation.engine": ["des"]}
    des = _with_count_bar(
        f"checking {len(picked)} points on the DES", "points",
        lambda step: run_sweep(scenario, des_values, jobs=jobs, client=client, progress=step, keep_failed=True,
                               points=picked),
    )  # fmt: skip
    for point in des.failed:
        where = ", ".join(f"{k}={point[k]}" for k in but_engine(des.keys))
        print(f"tlpsim: the DES check of point {where} failed: {point['error']}", file=sys.stderr)
    return agreement(fluid, des, but_engine(fluid.keys))


def _print_agreement(checked: list[dict], keys: list[str], unit: Unit) -> None:
    """The table of the points the DES checked, and one line with the spread."""
    columns = [(k, f" {k}", "") for k in keys] + [
        ("flow", " flow", ""), ("fluid_gbps", f"fluid {unit.value}", unit_spec(unit)),
        ("des_gbps", f"DES {unit.value}", unit_spec(unit)), ("fluid_vs_des_percent", "fluid vs DES %", "+.2f"),
    ]  # fmt: skip
    emit(in_unit(checked, ["fluid_gbps", "des_gbps"], unit), Format.table, columns,
         title="fluid against the DES at the checked points", keys=len(keys) + 1)  # fmt: skip
    diffs = sorted(abs(c["fluid_vs_des_percent"]) for c in checked if c["fluid_vs_des_percent"] is not None)
    if diffs:
        median = statistics.median(diffs)
        points = len({tuple(str(c[k]) for k in keys) for c in checked})
        print(f"fluid vs DES at {points} points, {len(diffs)} flows: median |difference| {median:.2f} %, "
              f"largest {diffs[-1]:.2f} %")  # fmt: skip
        banded = [c for c in checked if c.get("band_low_gbps") is not None]
        inside = sum(c["band_low_gbps"] <= c["des_gbps"] <= c["band_high_gbps"] for c in banded)
        if banded:
            print(f"  {inside} of {len(banded)} inside their fluid 90 % bands")
        # The flows on the closed form alone apart from those whose rate rests on estimates.
        for plain, label in ((True, "without estimates"), (False, "with estimates")):
            part = sorted(abs(c["fluid_vs_des_percent"]) for c in checked
                          if c["fluid_vs_des_percent"] is not None and (not c["estimate_kinds"]) == plain)  # fmt: skip
            if part and len(part) < len(diffs):
                print(f"  {len(part)} flows {label}: median |difference| {statistics.median(part):.2f} %, "
                      f"largest {part[-1]:.2f} %")  # fmt: skip


@app.command(name="compare")
def compare_cmd(
    a: Annotated[Path, typer.Argument(help="Scenario A (the baseline).")],
    b: Annotated[Path, typer.Argument(help="Scenario B (the change).")],
    format: FormatOpt = Format.table,
    unit: UnitOpt = Unit.gbps,
) -> None:
    """Run two scenarios and set them side by side: throughput per flow with the change,
    utilisation per link direction, and what limits each flow in both."""
    from tlpsim.compare import compare_results

    results = [_simulate(load_scenario(path), path.name) for path in (a, b)]
    names = (a.name, b.name) if a.name != b.name else (str(a), str(b))
    cmp = compare_results(*results, *names)
    if format is Format.json:
        emit_json(cmp.to_dict())
    elif format is Format.csv:
        emit([{"kind": "flow", **f} for f in cmp.flows] + [{"kind": "link", **link} for link in cmp.links], format, [])
    else:
        _print_comparison(cmp, unit)
    if not (cmp.a_audit_passed and cmp.b_audit_passed):
        Console(stderr=True).print("tlpsim: audit FAILED in A or B (see tlpsim run)")
        raise typer.Exit(1)


class MatrixTest(str, enum.Enum):
    """``tlpsim matrix --test``: nvbandwidth's copy-engine tests, or all of them."""

    host_to_device = "host_to_device"
    device_to_host = "device_to_host"
    host_to_device_bidirectional = "host_to_device_bidirectional"
    device_to_host_bidirectional = "device_to_host_bidirectional"
    device_to_device_write = "device_to_device_write"
    device_to_device_read = "device_to_device_read"
    device_to_device_bidirectional = "device_to_device_bidirectional"
    all = "all"


@app.command(name="matrix")
def matrix_cmd(
    scenario: Annotated[Path, typer.Argument(help='Scenario TOML file with GPUs (endpoints of kind = "gpu").')],
    test: Annotated[
        MatrixTest,
        typer.Option(
            "--test",
            case_sensitive=False,
            help="host_to_device and device_to_host: rows or columns are the host memories (each root complex's; "
            "another root complex's through the workload's memory key); the _bidirectional ones run the copy back "
            "at once and report the named direction; device_to_device_write: the row GPU's engines write the "
            "column GPU's BAR; _read: the column GPU's engines read the row GPU's (nvbandwidth puts the reader in "
            "the row, so its read matrix is this one turned over); _bidirectional: both writes at once, the cell "
            "the row-to-column one; all: every test (those between GPUs where there are two or more).",
        ),
    ] = MatrixTest.all,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="KEY=VALUE to change before the cells are made, as `tlpsim run --set` takes them, e.g. "
            "simulation.duration=20us for shorter cells, link.rc-sw1.width=8. Repeat for more keys.",
        ),
    ] = None,
    jobs: Annotated[int | None, typer.Option(help="Local processes (default: one per core).", min=1)] = None,
    format: FormatOpt = Format.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the output here (default: stdout).")
    ] = None,
    force: ForceOpt = False,
    engine: EngineOpt = None,
) -> None:
    """Copy-bandwidth matrices as nvbandwidth's copy-engine tests print them: rows are where
    the data come from, columns where they go, in GB/s (10^9 bytes/s), N/A on the diagonal,
    then the SUM. Each cell is its own run of the file with its workloads off and one memcpy
    added (two for device_to_device_bidirectional), of 512 MiB copies back to back for the
    file's [simulation] duration (a cell's figure is the bytes moved in the measured window);
    cells run in parallel. JSON and CSV give each cell's verdict (what limited it)."""
    import contextlib

    from tlpsim.matrix import copy_matrices, emit_matrices, failed_cells

    if output is not None:
        check_output(output, "output", inputs=[scenario], force=force)
    values = _run_set_values(set_ or [])
    if engine is not None:
        values["simulation.engine"] = engine.value
    matrices = _with_count_bar(
        f"matrix {scenario.name}", "cells",
        lambda step: copy_matrices(scenario, [test.value], values=values, jobs=jobs, progress=step),
    )  # fmt: skip
    if test is MatrixTest.all and not any(m.test.startswith("device_to_device") for m in matrices):
        print("tlpsim: note: one GPU: the device_to_device tests are left out", file=sys.stderr)
    with contextlib.ExitStack() as stack:
        if output is not None:
            buffer = stack.enter_context(io.StringIO())
            stack.enter_context(contextlib.redirect_stdout(buffer))
        emit_matrices(matrices, format, single=test is not MatrixTest.all)
        if output is not None:
            text = buffer.getvalue()
    if output is not None:
        write_atomic(output, text, "output")
        Console(stderr=True).print(f"wrote {output}")
    failed = failed_cells(matrices)
    for line in failed:
        print(f"tlpsim: {line}", file=sys.stderr)
    if failed:
        raise typer.Exit(3)
    if not all(m.audit_passed for m in matrices):
        Console(stderr=True).print("tlpsim: audit FAILED in some cells (see tlpsim run)")
        raise typer.Exit(1)


#: A link direction busy less than this in both runs is left out of `tlpsim compare`'s table.
IDLE_UTILIZATION = 0.001


def _print_comparison(cmp, unit: Unit = Unit.gbps) -> None:
    """A comparison as two tables, flows and links (those idle in both runs left out, with a
    line saying how many), with A and B named above them; rates in ``unit``."""
    out = console()
    out.print(f"A = {cmp.a}, B = {cmp.b}", highlight=False, markup=False)
    u, spec = unit.value, unit_spec(unit)
    emit(in_unit(cmp.flows, ["a_gbps", "b_gbps", "delta_gbps"], unit), Format.table, [
        ("name", " flow", ""), ("in", " in", ""), ("a_gbps", f"A {u}", spec), ("b_gbps", f"B {u}", spec),
        ("delta_gbps", f"delta {u}", unit_spec(unit, signed=True)), ("change", "change", "+.2%"),
        ("a_bottleneck", " A limited by", ""), ("b_bottleneck", " B limited by", ""),
    ], title="flows: throughput")  # fmt: skip
    busy = [r for r in cmp.links if max(r["a_utilization"] or 0, r["b_utilization"] or 0) >= IDLE_UTILIZATION]
    emit(in_unit(busy, ["a_payload_gbps", "b_payload_gbps"], unit), Format.table, [
        ("name", " link", ""), ("direction", " dir", ""), ("in", " in", ""), ("a_utilization", "A utilization", "%"),
        ("b_utilization", "B utilization", "%"), ("delta_utilization", "change", "pt"),
        ("a_payload_gbps", f"A payload {u}", spec), ("b_payload_gbps", f"B payload {u}", spec),
    ], title="links: utilization per direction", keys=2)  # fmt: skip
    if len(busy) < len(cmp.links):
        out.print(
            f"{len(cmp.links) - len(busy)} link directions idle in both runs (under {IDLE_UTILIZATION:.1%}) "
            "not shown; --format json or csv lists every one",
            style="dim", highlight=False, markup=False,
        )  # fmt: skip


def _check_sweep_output(output: Path | None, resume: bool, force: bool) -> None:
    """Refuses --resume or --force without --output, both at once, and an existing --output
    without either (one line naming both)."""
    if output is None and (resume or force):
        raise ConfigError(f"{'--resume' if resume else '--force'} needs --output FILE, the file of the points")
    if resume and force:
        raise ConfigError("--resume and --force do not go together: --resume keeps the points, --force drops them")
    if output is not None and output.exists() and not (resume or force):
        raise ConfigError(f"{output} exists: add --resume to run only the points it lacks, or --force to overwrite it")


@app.command(name="draw")
def draw_cmd(
    scenario: Annotated[Path, typer.Argument(help="Scenario TOML file (see `tlpsim schema`).")],
    output: Annotated[
        Path, typer.Option("--output", "-o", help="The picture: FILE.svg, FILE.png or FILE.dot (Graphviz source).")
    ],
    run: Annotated[
        bool,
        typer.Option("--run", help="Run the scenario first: links coloured by utilisation, bottlenecks marked."),
    ] = False,
    set_: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help=f"KEY=VALUE to change before drawing (and running), as `tlpsim run --set` takes it. {_SET_KEYS}",
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Draw a scenario's topology with Graphviz: root complexes, socket links, switches and
    endpoints, each link with its generation and width; with --run, utilisation and bottlenecks."""
    import json

    from tlpsim.draw import check_dot, picture_format, render, topology_graph
    from tlpsim.files import atomic_output

    fmt = picture_format(output)
    check_output(output, "picture", inputs=[scenario], force=force)
    if fmt != "dot":
        check_dot()
    loaded = load_scenario(scenario, values=_run_set_values(set_ or []))
    result = _simulate(loaded, scenario.name) if run else None
    title = scenario.name if result is None else f"{scenario.name}: {result.simulated_s * 1e6:.1f} us measured"
    graph = topology_graph(json.loads(loaded.topology_json), None if result is None else result.to_dict(), title)
    picture = render(graph, fmt)
    with atomic_output(output, "picture") as tmp:
        tmp.write_bytes(picture)
    Console(stderr=True, highlight=False).print(f"wrote {output}", markup=False)
    if result is not None:
        _warn_starved(result)
        if not result.audit["passed"]:
            Console(stderr=True).print(f"tlpsim: audit FAILED: {result.audit}")
            raise typer.Exit(1)


@app.command(name="schema")
def schema_cmd() -> None:
    """Print the JSON Schema of the scenario file format."""
    emit_json(schema())


def _with_count_bar(label: str, unit: str, work: Callable[[Callable[[int, int], None]], T]) -> T:
    """Runs ``work(step)`` with a done-of-total progress bar on stderr when it is a terminal
    (``step(done, total)`` moves it); Ctrl-C stops the work with one line saying how many
    ``unit`` were done (exit code 130)."""
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    err = Console(stderr=True)
    count = [0, 0]
    with Progress(
        TextColumn(label), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=err, transient=True, disable=not err.is_terminal,
    ) as bar:  # fmt: skip
        task = bar.add_task(unit, total=None)

        def step(done: int, total: int) -> None:
            count[:] = [done, total]
            bar.update(task, completed=done, total=total)

        try:
            return work(step)
        except KeyboardInterrupt:
            _interrupted(bar, f"{count[0]} of {count[1]} {unit}")


#: The table columns of validation rows (`tlpsim validate`, `tlpsim fit`).
_VALIDATE_COLUMNS = [
    ("system", " system", ""), ("table", " table", ""), ("series", " series", ""), ("column", " column", ""),
    ("unit", " unit", ""), ("published", "published", ".6g"), ("simulated", "simulated", ".6g"),
    ("error", "error", "+.2%"), ("role", " role", ""),
]  # fmt: skip

#: The leading columns of `_VALIDATE_COLUMNS` that identify a row (with its unit: a number
#: means nothing without it); a narrow terminal keeps them.
_VALIDATE_KEYS = 5


def _validate_with_bar(only: str | None, engine: str = "des"):
    """Runs the validation with a progress bar; Ctrl-C stops it as the next cell finishes."""
    return _with_count_bar("simulating cells", "simulated cells", lambda step: validate(only, step, engine))


#: A system with more rows than this shows only its worst predicted rows in the table view
#: (the seed systems have at most about 120; pciebench has over 9,000).
TABLE_ROWS_PER_SYSTEM = 500
#: How many of its worst predicted rows such a system shows.
WORST_ROWS_SHOWN = 40


def _table_rows(rows: list[dict]) -> tuple[list[dict], list[str]]:
    """The rows the table view shows: every row of a system with at most
    :data:`TABLE_ROWS_PER_SYSTEM`, else its :data:`WORST_ROWS_SHOWN` worst predicted rows;
    and a line per system cut so, saying how to see the rest."""
    by_system: dict[str, list[dict]] = {}
    for r in rows:
        by_system.setdefault(r["system"], []).append(r)
    shown: list[dict] = []
    lines: list[str] = []
    for system, own in by_system.items():
        if len(own) <= TABLE_ROWS_PER_SYSTEM:
            shown += own
            continue
        predicted = [r for r in own if r["role"] == "predict" and r["error"] is not None]
        worst = sorted(predicted, key=lambda r: -abs(r["error"]))[:WORST_ROWS_SHOWN]
        keep = {id(r) for r in worst}
        shown += [r for r in own if id(r) in keep]
        lines.append(
            f"{system}: the {len(worst)} worst predicted of {len(own):,} rows shown; "
            f"--format csv or json gives every row (tlpsim validate --only {system} --format csv)"
        )
    return shown, lines


@app.command(name="validate")
def validate_cmd(
    only: Annotated[str | None, typer.Option(help=f"One system: {', '.join(validation_systems())}.")] = None,
    report: Annotated[
        Path | None, typer.Option(help="Write DIR/report.md, DIR/report.html and a chart per table.")
    ] = None,
    format: FormatOpt = Format.table,
    force: ForceOpt = False,
    engine: EngineOpt = None,
) -> None:
    """Every modelled number of the seed reports: published vs tlpsim, with the error."""
    _check_report_folder(report, force)
    rows = _validate_with_bar(only, engine.value if engine else "des")
    shown, cut = _table_rows(rows) if format is Format.table else (rows, [])
    if format is Format.table:  # one spelling per rate; JSON and CSV keep the published one
        shown = [{**r, "unit": display_unit(r["unit"])} for r in shown]
    emit(shown, format, _VALIDATE_COLUMNS, title="tlpsim validate", keys=_VALIDATE_KEYS)
    if format is Format.table:
        out = console()
        for line in cut:
            out.print(line, style="dim", highlight=False, markup=False)
        for summary in rows.summaries():
            out.print(summary.line())
        for line in rows.group_lines():
            out.print(line, highlight=False, markup=False)
        not_run = [t for t in rows.unmodelled_tables if "not run by the fluid engine" in t]
        unmodelled = [t for t in rows.unmodelled_tables if t not in not_run]
        if unmodelled:
            out.print(
                f"not modelled yet ({len(unmodelled)} published tables): " + ", ".join(unmodelled),
                style="dim",
            )
        for line in not_run:
            out.print(line, style="dim", highlight=False, markup=False)
    if report is not None:
        files: list[Path] = []
        write_report(rows, report, written=files)
        _say_written(report, files)


def _check_report_folder(report: Path | None, force: bool, inputs: list[Path] | None = None) -> None:
    """Refuses a --report folder that is a file, or holds a report already without --force,
    and one whose report files would overwrite one of ``inputs`` (whatever --force says)."""
    if report is not None and report.is_dir():
        for name in REPORT_FILES:
            check_output(report / name, "report", inputs=inputs or [], force=True)
    if report is not None and report.is_dir() and (report / "report.md").exists() and not force:
        raise ConfigError(f"{report} holds a report already: add --force to overwrite it, or name another folder")
    if report is not None and report.exists() and not report.is_dir():
        raise ConfigError(f"{report}: cannot write the report there: it is a file, not a folder")


#: The files a --report folder gets besides its charts.
REPORT_FILES = ("report.md", "report.html")


def _say_written(folder: Path, files: list[Path]) -> None:
    """Lists the files a --report wrote, on stderr."""
    err = Console(stderr=True, highlight=False)
    err.print(f"wrote {len(files)} files in {folder}:", markup=False)
    for path in files:
        err.print(f"  {path}", markup=False)


def _print_fit(report) -> None:
    """A fitted directory as tables: the machine, the fitted values, the rows, the summary."""
    from tlpsim.pciebench.summary import summary_lines

    m = report.machine
    out = console()
    iommu = "off" if not m.iommu else "on, 2 MiB pages" if m.super_pages else "on, 4 KiB pages only"
    sockets = (
        f"card on socket {m.device_socket}, memory on {m.memory_socket}, caches warmed from {m.warming_socket}"
        if m.device_socket is not None
        else "one socket"
    )
    llc = f"LLC {m.llc_bytes >> 20} MiB, {m.llc_ways} ways" if m.llc_bytes else "LLC unknown"
    assumptions = m.assumptions
    out.print(
        "assumed (no file of the directory states these):"
        if assumptions
        else "assumed: nothing (every machine fact comes from the directory's sys-*.txt files)",
        highlight=False,
        markup=False,
    )
    for line in assumptions:
        out.print(f"  {line}", highlight=False, markup=False)
    out.print(
        f"{report.directory} ({report.short}): {m.device}, Gen{m.gen} x{m.width}, MPS {m.mps}, MRRS {m.mrrs}, "
        f"{m.tags} tags; CPU {m.cpu or 'not named'} ({llc}); IOMMU {iommu}; {sockets}",
        highlight=False,
        markup=False,
    )
    emit(report.fitted_rows(), Format.table, [
        ("parameter", " parameter", ""), ("where", " in", ""), ("value", " value", ""), ("status", " fit", ""),
        ("cell", " calibrate cell", ""), ("published", "published", ".6g"), ("simulated", "simulated", ".6g"),
        ("error", "error", "+.2%"),
    ], title="fitted parameters (device: on the calibration directory; host: on this one)")  # fmt: skip
    columns = [*_VALIDATE_COLUMNS, ("low", "90 % low", ".6g"), ("high", "90 % high", ".6g")]
    emit(
        report.rows, Format.table, columns, title=f"{report.short}: published vs tlpsim ({report.fold})",
        keys=_VALIDATE_KEYS,
    )  # fmt: skip
    for line in summary_lines(report.rows, report.short):
        out.print(line, highlight=False, markup=False)
    by_reason: dict[str, list[str]] = {}
    for n in report.not_modelled:
        by_reason.setdefault(n.reason, []).append(f"{n.file} ({n.rows})")
    for reason, files in by_reason.items():
        out.print(f"not modelled ({reason}): {', '.join(files)}", style="dim", highlight=False, markup=False)
    for note in report.notes:
        out.print(f"note: {note}", style="dim", highlight=False, markup=False)


@app.command(name="fit")
def fit_cmd(
    directory: Annotated[
        Path, typer.Argument(help="A pcie-bench result directory (bw_*.txt, lat_*.txt and sys-lspci.txt).")
    ],
    format: FormatOpt = Format.table,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the output here (default: stdout).")
    ] = None,
    force: ForceOpt = False,
    report: Annotated[
        Path | None,
        typer.Option(help="Write DIR/report.md, DIR/report.html and the paper-style chart with the 90 % bands."),
    ] = None,
) -> None:
    """Fit a pcie-bench directory's host on the protocol's calibrate cells and predict every
    other measurement: the assumptions, the fitted values with their cells, then rows as
    `tlpsim validate` writes them (with 90 % bands), then the accuracy per test group."""
    import contextlib

    from tlpsim.pciebench import fit_directory

    inputs = sorted(directory.glob("*")) if directory.is_dir() else []
    if output is not None:
        check_output(output, "output", inputs=inputs, force=force)
    _check_report_folder(report, force, inputs)
    fit = _with_count_bar(
        f"fitting {directory.name}", "simulated cells", lambda step: fit_directory(directory, progress=step)
    )
    if format is not Format.table:
        _say_notes(fit.notes)
    with contextlib.ExitStack() as stack:
        if output is not None:
            buffer = stack.enter_context(io.StringIO())
            stack.enter_context(contextlib.redirect_stdout(buffer))
        if format is Format.json:
            emit_json(fit.to_dict())
        elif format is Format.csv:
            emit(fit.rows, format, [])
        else:
            _print_fit(fit)
        if output is not None:
            text = buffer.getvalue()
    if output is not None:
        write_atomic(output, text, "output")
        Console(stderr=True).print(f"wrote {output}")
    if report is not None:
        from tlpsim.pciebench.report import write_fit_report

        files: list[Path] = []
        write_fit_report(fit, report, written=files)
        _say_written(report, files)


def _say_notes(notes: list[str] | tuple[str, ...]) -> None:
    """Each note (a line of input left out, and why) as ``tlpsim: note: ...`` on stderr."""
    for note in notes:
        print(f"tlpsim: note: {note}", file=sys.stderr)


import_app = typer.Typer(
    help="Read other tools' files: lspci output as a scenario, pcie-bench results as a table.",
    no_args_is_help=True,
)
app.add_typer(import_app, name="import")


@import_app.command(name="lspci")
def import_lspci_cmd(
    file: Annotated[
        Path, typer.Argument(help="Output of `lspci -vvv` (run as root, so that it shows the capabilities).")
    ],
    tree: Annotated[
        Path | None, typer.Option("--tree", help="Output of `lspci -tv` of the same machine, to cross-check the tree.")
    ] = None,
    output: Annotated[
        Path | None, typer.Option("--output", "-o", help="Write the scenario here (default: stdout).")
    ] = None,
    device: Annotated[
        str | None,
        typer.Option(
            help="Address (03:00.0) of the endpoint whose DevCtl gives [pcie] mps and mrrs and that the placeholder "
            "workload uses (default: the endpoint with the fastest link)."
        ),
    ] = None,
    force: ForceOpt = False,
) -> None:
    """Make a scenario of `lspci -vvv` output: root complex, switches, endpoints, links
    (generation and width from LnkSta), MPS and MRRS (DevCtl), tags (ExtTag, 10BitTagReq)."""
    from tlpsim.importers import import_lspci

    if output is not None:
        check_output(output, "scenario", inputs=[file, *([tree] if tree else [])], force=force)
    result = import_lspci(file, tree=tree, device=device)
    for warning in result.warnings:
        print(f"tlpsim: warning: {warning}", file=sys.stderr)
    if output is None:
        sys.stdout.write(result.scenario)
        return
    result.write(output)
    roles = [d["role"] for d in result.devices]
    endpoints, switches = roles.count("endpoint"), roles.count("switch")
    print(
        f"wrote {output}: {endpoints} endpoint{'s' * (endpoints != 1)}, {switches} switch{'es' * (switches != 1)}; "
        f"[pcie] mps, mrrs and the placeholder workload from {result.focus}",
        file=sys.stderr,
    )


@import_app.command(name="pcie-bench")
def import_pcie_bench_cmd(
    directory: Annotated[Path, typer.Argument(help="A pcie-bench result directory (bw_*.txt, lat_*.txt).")],
    cdf: Annotated[bool, typer.Option("--cdf", help="Show the latency distributions (*_cdf.txt) instead.")] = False,
    format: FormatOpt = Format.table,
) -> None:
    """Read a pcie-bench directory's results into one table (bandwidth in Gb/s, latency in
    ns), with the machine facts its sys-*.txt files state (each with its source) and the
    host its name describes. JSON holds everything; table and CSV the measurements, or the
    latency distributions with --cdf."""
    from tlpsim.importers import ImportFileError, format_size, import_pcie_bench
    from tlpsim.pciebench.pipeline import load_directory, source_machine

    data = import_pcie_bench(directory)
    _say_notes(data.notes)
    machine, why = None, "no sys-lspci.txt"
    if (directory / "sys-lspci.txt").is_file():
        try:
            machine = source_machine(load_directory(directory, data))
        except ImportFileError as e:  # the results still import; only the facts are missing
            why = str(e)
    if format is Format.json:
        emit_json({**data.to_dict(), "machine": None if machine is None else machine.facts_dict()})
        return
    rows = data.cdf if cdf else data.measurements
    if format is Format.csv:
        emit(rows, format, [])
        return
    h = data.host
    out = console()
    sockets = (
        f"card on socket {h['device_socket']}, memory on {h['memory_socket']}, caches warmed from {h['warming_socket']}"
        if h["device_socket"] is not None
        else "one socket or not named"
    )
    iommu = "off" if not h["iommu"] else "on" if h["iommu_super_pages"] else "on, no super pages"
    out.print(
        f"{data.directory}: card {h['card']}, CPU {h['cpu']} ({h['cpu_arch_name'] or 'unknown architecture'}), "
        f"model {h['model']}; {sockets}; IOMMU {iommu} (as its name says)",
        highlight=False,
        markup=False,
    )
    if machine is None:
        out.print(f"machine facts not read: {why}", style="dim", highlight=False, markup=False)
    else:
        emit(machine.fact_rows(), format, [("fact", " fact", ""), ("value", " value", ""), ("source", " source", "")],
             title="machine facts (what tlpsim fit uses)")  # fmt: skip
    view = [{**r, "window": None if r.get("window_bytes") is None else format_size(r["window_bytes"])} for r in rows]
    if cdf:
        columns = [
            ("file", " file", ""), ("test", " test", ""), ("cache", " cache", ""), ("window", "window", ""),
            ("transfer_bytes", "size B", ""), ("latency_ns", "latency ns", ".0f"),
            ("cumulative_fraction", "cumulative", ".6f"),
        ]  # fmt: skip
        emit(view, format, columns, title="latency distributions")
    else:
        columns = [
            ("file", " file", ""), ("test", " test", ""), ("pattern", " pattern", ""), ("cache", " cache", ""),
            ("host_offset", "host off", ""), ("device_offset", "dev off", ""), ("window", "window", ""),
            ("transfer_bytes", "size B", ""), ("bw_gbps", "Gb/s", ".3f"),
            ("transactions_per_s", "transactions/s", ",.0f"), ("latency_avg_ns", "avg ns", ".1f"),
            ("latency_median_ns", "median ns", ".0f"), ("latency_p99_9_ns", "p99.9 ns", ".0f"),
            ("samples", "samples", ","),
        ]  # fmt: skip
        emit(view, format, [c for c in columns if any(r.get(c[0]) is not None for r in view)], title="measurements")
    out.print(
        f"{len(data.measurements):,} measurements and {len(data.cdf):,} latency-distribution points "
        f"from {len(data.files)} files",
        highlight=False,
        markup=False,
    )


#: Example command lines at the end of each command's --help.
EXAMPLES: dict[str, list[str]] = {
    "link": ["tlpsim link --gen 3 --width 8", "tlpsim link --gen 5 --width 16 --mps 256 --payload 64,4KiB"],
    "run": [
        "tlpsim run scenarios/t5220-two-switches.toml",
        "tlpsim run scenarios/t5220-two-switches.toml --set pcie.mps=256 --format json",
    ],
    "sweep": ["tlpsim sweep scenarios/t5220-two-switches.toml --set workload.reads.outstanding=1,4,16"],
    "matrix": [
        "tlpsim matrix scenarios/gen5-8gpu-server.toml --test device_to_device_write",
        "tlpsim matrix scenarios/gen5-8gpu-server.toml --format json -o matrices.json",
    ],
    "compare": ["tlpsim compare scenarios/gen5-8gpu-server.toml scenarios/gen5-8gpu-acs.toml"],
    "completion": ["tlpsim completion bash > ~/.local/share/bash-completion/completions/tlpsim"],
    "schema": ["tlpsim schema > scenario.schema.json"],
    "draw": [
        "tlpsim draw scenarios/gen5-8gpu-server.toml -o server.svg",
        "tlpsim draw scenarios/gen5-8gpu-server.toml -o server.svg --run --set pcie.mps=512",
    ],
    "validate": ["tlpsim validate", "tlpsim validate --only t5220 --format csv"],
    "fit": ["tlpsim fit data/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"],
    "lspci": ["sudo lspci -vvv > lspci.txt && tlpsim import lspci lspci.txt -o my-host.toml"],
    "pcie-bench": ["tlpsim import pcie-bench data/pcie-bench/nfp6000-1.2GHz_hsw-Xeon-E5-2620v3_dell-t630"],
}


def _add_examples(typer_app: typer.Typer, examples: dict[str, list[str]]) -> None:
    """Ends the --help of each of ``typer_app``'s commands with its lines of ``examples``
    (kept here, apart from the commands, so that one table holds them all)."""
    for info in typer_app.registered_commands:
        lines = examples.get(info.name or info.callback.__name__)
        if lines:
            # Rich help joins single newlines; a blank line keeps each example on its own line.
            info.epilog = "Examples:\n\n" + "\n\n".join(f"  {line}" for line in lines)
    for group in typer_app.registered_groups:
        _add_examples(group.typer_instance, examples)


_add_examples(app, EXAMPLES)


def main(argv: list[str] | None = None) -> int:
    """Entry point: runs the app; bad arguments give one line on stderr and exit code 2."""
    try:
        result = app(args=argv, standalone_mode=False, prog_name="tlpsim")
        if result == 130 and not _said_interrupted:
            # Typer turns a Ctrl-C outside a run's progress (loading, writing) into 130.
            print("tlpsim: interrupted", file=sys.stderr)
        return result if isinstance(result, int) else 0
    except ConfigError as e:
        print(f"tlpsim: error: {_core.one_line(str(e))}", file=sys.stderr)
        return 2
    except SimulationError as e:
        print(f"tlpsim: error: {_core.one_line(str(e))}", file=sys.stderr)
        return 3
    except click.UsageError as e:
        print(f"tlpsim: error: {_core.one_line(e.format_message())} (see --help)", file=sys.stderr)
        return 2
    except click.exceptions.Abort:
        print("tlpsim: aborted", file=sys.stderr)
        return 130


def run() -> None:
    """Console-script entry point."""
    sys.exit(main())


if __name__ == "__main__":
    run()
