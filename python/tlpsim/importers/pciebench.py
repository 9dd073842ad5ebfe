"""pcie-bench result directories as tables: :func:`import_pcie_bench`.

A pcie-bench directory (``<card>_<Host CPU>_<Model>_[<Topology>][_<Misc>]``) holds result
files ``bw_*.txt`` and ``lat_*.txt``: a header line naming the columns, then one line of
values per measurement, columns separated by spaces. Every file is read by its header, so a
directory with other files or other columns reads too: a column this module does not know
keeps its header (lower-cased, other characters as ``_``) and its values as numbers where
they are numbers. Latency distributions (``*_cdf.txt``: header ``cycles ns cdf``, sections
opened by ``test=... trans_sz=... win_sz=... cache=...``) go to a second table.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any, Literal

from tlpsim.importers.common import ImportFileError, parse_size, read_text

__all__ = ["PcieBenchData", "import_pcie_bench", "parse_host_name", "read_pcie_bench"]


def _text(s: str) -> str:
    return s


def _int(s: str) -> int:
    return int(s)


def _float(s: str) -> float:
    return float(s)


_DURATION = re.compile(r"(\d+(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(ns|us|µs|ms|s)")
_SECONDS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6), "ms": Fraction(1, 1000)}


def _duration(s: str) -> float:
    """Seconds of ``125.12ms``, ``3.2s``, ``800us``."""
    m = _DURATION.fullmatch(s)
    if m is None:
        raise ValueError(f"{s!r} is not a duration (allowed: a number with ns, us, ms or s)")
    return float(Fraction(m.group(1)) * _SECONDS.get(m.group(2), Fraction(1)))


#: Columns of pcie-bench's result files: header -> (column in the table, parser). Sizes are
#: bytes, times seconds, latencies cycles of the card's clock or ns as the header says.
COLUMNS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "Test": ("test", _text),  # BW_DMA_RD, BW_DMA_WR, BW_DMA_RW, LAT_DMA_RD, LAT_CMD_WRRD, ...
    "PAT": ("pattern", _text),  # access pattern over the window: Seq or Rand
    "Cache": ("cache", _text),  # host cache state: HWarm, DWarm, DThrash, Cold
    "HO": ("host_offset", _int),  # bytes from a cache line start, host side
    "DO": ("device_offset", _int),  # bytes from a 64 B boundary, device side
    "WinSZ": ("window_bytes", parse_size),  # host buffer the transfers range over
    "SZ": ("transfer_bytes", parse_size),  # bytes per DMA or command
    "Time(cyc)": ("time_cycles", _int),  # run length in the card's cycles
    "Time": ("time_s", _duration),
    "Bytes": ("total_bytes", parse_size),  # Trans x SZ
    "Trans": ("transactions", _int),
    # pcie-bench labels this column "BW (GB/s)", but it holds gigabits per second:
    # Bytes x 8 / Time / 1e9. 128 MB (134217728 B) in 125.12 ms is 8.58, and 1.07 were it
    # gigabytes; every row of data/pcie-bench agrees with Gb/s to 0.01 %.
    "BW (GB/s)": ("bw_gbps", _float),
    "Trans/s": ("transactions_per_s", _float),
    # Latency files: "TAvg" as pcie-bench names it (larger than the samples' average), then
    # the samples' average, median, minimum, maximum, 95th and 99.9th percentile, in the
    # card's cycles and, in the "(ns)" columns, in ns.
    "TAvg": ("tavg_cycles", _float),
    "Avg": ("latency_avg_cycles", _float),
    "Med": ("latency_median_cycles", _float),
    "Min": ("latency_min_cycles", _float),
    "Max": ("latency_max_cycles", _float),
    "95%": ("latency_p95_cycles", _float),
    "99.9%": ("latency_p99_9_cycles", _float),
    "TAvg(ns)": ("tavg_ns", _float),
    "Avg(ns)": ("latency_avg_ns", _float),
    "Med(ns)": ("latency_median_ns", _float),
    "Min(ns)": ("latency_min_ns", _float),
    "Max(ns)": ("latency_max_ns", _float),
    "95%(ns)": ("latency_p95_ns", _float),
    "99.9%(ns)": ("latency_p99_9_ns", _float),
    "#outliers": ("outliers", _int),
    "#samples": ("samples", _int),
}

#: Columns of the CDF files and the keys of their section lines.
CDF_COLUMNS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "cycles": ("latency_cycles", _float),
    "ns": ("latency_ns", _float),
    "cdf": ("cumulative_fraction", _float),  # share of samples at or below this latency
}
CDF_SECTION_KEYS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "test": ("test", _text),
    "trans_sz": ("transfer_bytes", parse_size),
    "win_sz": ("window_bytes", parse_size),
    "cache": ("cache", _text),
}
# The CDF files write the cache state in lower case; the table spells it as the result files.
_CACHE_WORDS = {"hwarm": "HWarm", "dwarm": "DWarm", "dthrash": "DThrash", "cold": "Cold"}

#: Columns that identify a measurement, first in every row.
ID_COLUMNS = (
    "file", "line", "test", "pattern", "cache", "host_offset", "device_offset", "window_bytes", "transfer_bytes",
)  # fmt: skip


def _column_name(header: str) -> str:
    """A table column for a header this module does not know: ``Foo(ns)`` -> ``foo_ns``."""
    name = header.replace("%", "pct").replace("#", "n_")
    name = re.sub(r"[^0-9A-Za-z]+", "_", name).strip("_").lower()
    return name or "column"


def _number_or_text(s: str) -> Any:
    for parse in (int, float):
        try:
            return parse(s)
        except ValueError:
            pass
    return s


def _header_fields(line: str) -> list[str]:
    """A header line's column names: split at spaces, a part in parentheses joining the
    name before it (``BW (GB/s)`` is one column)."""
    out: list[str] = []
    for word in line.split():
        if word.startswith("(") and out:
            out[-1] += " " + word
        else:
            out.append(word)
    return out


def _columns(names: list[str], known: dict[str, tuple[str, Callable[[str], Any]]]):
    """(column, parser) per header name; unknown names get a column of their own."""
    cols = [known.get(n, (_column_name(n), _number_or_text)) for n in names]
    seen: set[str] = set()
    for i, (col, parse) in enumerate(cols):
        if col in seen:
            cols[i] = (f"{col}_{i + 1}", parse)
        seen.add(cols[i][0])
    return cols


def _value(path: Path, lineno: int, header: str, parse: Callable[[str], Any], text: str) -> Any:
    try:
        return parse(text)
    except ValueError as e:
        why = str(e) if "allowed" in str(e) else f"{text!r} is not a number"
        raise ImportFileError(f"{path}:{lineno}: column {header}: {why}") from None


def _read_results(path: Path, lines: list[str], first: int, notes: list[str]) -> list[dict[str, Any]]:
    """The rows of a result file whose header is ``lines[first]``; a line with a value that
    is not finite is left out, with a note in ``notes``."""
    names = _header_fields(lines[first])
    cols = _columns(names, COLUMNS)
    rows = []
    for i in range(first + 1, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith("#") or _header_fields(line) == names:
            continue
        values = line.split()
        if len(values) != len(names):
            raise ImportFileError(
                f"{path}:{i + 1}: {len(values)} values where the header (line {first + 1}) names "
                f"{len(names)} columns ({' '.join(names)})"
            )
        row: dict[str, Any] = {"file": path.name, "line": i + 1}
        for name, (col, parse), text in zip(names, cols, values, strict=True):
            row[col] = _value(path, i + 1, name, parse, text)
        if _finite(path, i + 1, names, [row[col] for col, _ in cols], notes):
            rows.append(row)
    return rows


def _finite(path: Path, lineno: int, names: list[str], values: list[Any], notes: list[str]) -> bool:
    """Whether a line's ``values`` (under header ``names``) are all finite; if not, a note
    naming the file, the line and the column goes to ``notes`` and the line is left out
    (pcie-bench writes ``nan`` or ``inf`` for a run that measured nothing)."""
    bad = [(n, v) for n, v in zip(names, values, strict=True) if isinstance(v, float) and not math.isfinite(v)]
    if bad:
        what = ", ".join(f"column {n} is {v}" for n, v in bad)
        notes.append(f"{path}:{lineno}: {what}, not a measurement; the line is left out")
    return not bad


def _read_cdf(path: Path, lines: list[str], first: int, notes: list[str]) -> list[dict[str, Any]]:
    """The points of a latency-distribution file whose header is ``lines[first]``."""
    names = _header_fields(lines[first])
    cols = _columns(names, CDF_COLUMNS)
    section: dict[str, Any] | None = None
    rows = []
    for i in range(first + 1, len(lines)):
        line = lines[i].strip()
        if not line or line.startswith("#"):
            continue
        if "=" in line:
            section = {}
            for item in line.split():
                key, sep, text = item.partition("=")
                if not sep:
                    raise ImportFileError(
                        f"{path}:{i + 1}: {item!r} in a section line; expected KEY=VALUE items "
                        "(test=LAT_DMA_RD trans_sz=64 win_sz=8192 cache=cold)"
                    )
                col, parse = CDF_SECTION_KEYS.get(key, (_column_name(key), _number_or_text))
                value = _value(path, i + 1, key, parse, text)
                section[col] = _CACHE_WORDS.get(value, value) if col == "cache" else value
            continue
        if section is None:
            raise ImportFileError(
                f"{path}:{i + 1}: a point before any section line (test=... trans_sz=... win_sz=... cache=...)"
            )
        values = line.split()
        if len(values) != len(names):
            raise ImportFileError(
                f"{path}:{i + 1}: {len(values)} values where the header (line {first + 1}) names "
                f"{len(names)} columns ({' '.join(names)})"
            )
        row: dict[str, Any] = {"file": path.name, "line": i + 1, **section}
        for name, (col, parse), text in zip(names, cols, values, strict=True):
            row[col] = _value(path, i + 1, name, parse, text)
        if _finite(path, i + 1, names, [row[col] for col, _ in cols], notes):
            rows.append(row)
    return rows


def _read_file(path: Path, text: str, notes: list[str]) -> tuple[Literal["results", "cdf"], list[dict[str, Any]]]:
    """One result file (``text``, read from ``path``): which table its header says it belongs
    to, and its rows (a note in ``notes`` for each line left out)."""
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise ImportFileError(f"{path}: the file is empty; expected a header line naming the columns")
    names = _header_fields(lines[first])
    if "Test" in names:
        return "results", _read_results(path, lines, first, notes)
    if "cdf" in names:
        return "cdf", _read_cdf(path, lines, first, notes)
    raise ImportFileError(
        f"{path}:{first + 1}: the first line names no column pcie-bench writes; expected a header "
        "such as 'Test PAT Cache HO DO WinSZ SZ ...' or, for a latency distribution, 'cycles ns cdf'"
    )


def _uniform(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every row with every column (``None`` where its file has none): identifying
    columns first, then the others in order of first appearance."""
    keys: dict[str, None] = dict.fromkeys(k for k in ID_COLUMNS if any(k in r for r in rows))
    for r in rows:
        keys.update(dict.fromkeys(r))
    return [{k: r.get(k) for k in keys} for r in rows]


# Host naming (pcie-bench's README): <card>_<Host CPU>_<Model>_[<Topology>][_<Misc>].
_ARCHITECTURES = {
    "nb": "Netburst", "core": "Core/Penryn", "nhm": "Nehalem/Westmere", "snb": "Sandy Bridge",
    "ib": "Ivy Bridge", "hsw": "Haswell", "bdw": "Broadwell", "sl": "Skylake",
}  # fmt: skip
_SOCKET = re.compile(r"s(\d+)")
_CLOCK = re.compile(r"(\d+(?:\.\d+)?)GHz", re.IGNORECASE)
# Misc words the convention names: an IOMMU, super pages off, a slot narrower than the card.
_MISC = re.compile(r"iommu|nosp|gen\d+x\d+", re.IGNORECASE)


def parse_host_name(name: str) -> dict[str, Any]:
    """What a pcie-bench directory name says about the host, as a dict: ``name``, ``card``,
    ``card_clock_ghz``, ``cpu`` (``hsw-Xeon-E5-2620v3``), ``cpu_arch`` (``hsw``),
    ``cpu_arch_name`` (``Haswell``), ``model`` (``dell-t630``), ``device_socket``,
    ``memory_socket``, ``warming_socket`` (``sX-sY-sZ``; ``None`` without one),
    ``remote_memory`` (the card and its buffer on different sockets), ``iommu``,
    ``iommu_super_pages`` (``None`` with the IOMMU off) and ``misc`` (other words of the
    last part).

    Names often join model, topology and misc with ``-`` instead of ``_``
    (``..._bdw-Xeon-E5-2630v4-dell-t430-s0-s1-s0``); then the topology is the first three
    ``sN`` words, the misc part starts at the first misc word (``iommu``, ``nosp``,
    ``gen2x4``), and the model is the last two words before them (vendor and model number,
    as the convention writes ``dell-t620``). A name that follows no part of the convention
    gives ``None`` where it says nothing.
    """
    parts = name.split("_")
    card = parts[0]
    clock = _CLOCK.search(card)
    if len(parts) >= 3:
        cpu_words, tail = parts[1].split("-"), "-".join(parts[2:]).split("-")
    else:
        cpu_words, tail = [], (parts[1].split("-") if len(parts) == 2 else [])
    sockets: list[int | None] = [None, None, None]
    misc: list[str] = []
    start = next(
        (i for i in range(len(tail) - 2) if all(_SOCKET.fullmatch(w) for w in tail[i : i + 3])),
        None,
    )
    if start is not None:
        sockets = [int(_SOCKET.fullmatch(w).group(1)) for w in tail[start : start + 3]]
        before, misc = tail[:start], tail[start + 3 :]
    else:
        cut = next((i for i, w in enumerate(tail) if _MISC.fullmatch(w)), len(tail))
        before, misc = tail[:cut], tail[cut:]
    if not cpu_words:
        # <Host CPU> and <Model> joined by "-": the model is vendor and model number.
        cpu_words, before = before[:-2], before[-2:]
        if not cpu_words:
            cpu_words, before = before, []
    misc_lower = [w.lower() for w in misc]
    iommu = "iommu" in misc_lower
    arch = cpu_words[0] if cpu_words and cpu_words[0].lower() in _ARCHITECTURES else None
    device, memory, warming = sockets
    return {
        "name": name,
        "card": card,
        "card_clock_ghz": float(clock.group(1)) if clock else None,
        "cpu": "-".join(cpu_words) or None,
        "cpu_arch": arch,
        "cpu_arch_name": _ARCHITECTURES.get(arch.lower()) if arch else None,
        "model": "-".join(before) or None,
        "device_socket": device,
        "memory_socket": memory,
        "warming_socket": warming,
        "remote_memory": None if device is None else device != memory,
        "iommu": iommu,
        "iommu_super_pages": ("nosp" not in misc_lower) if iommu else None,
        "misc": [w for w in misc if w.lower() not in ("iommu", "nosp")],
    }


@dataclass(frozen=True)
class PcieBenchData:
    """One pcie-bench directory, read: the host its name describes and its two tables.

    ``measurements``: one row per line of data of the ``bw_*.txt`` and ``lat_*.txt`` files,
    every row with the same columns (``None`` where its file has no such column): ``file``,
    ``line``, ``test``, ``pattern``, ``cache``, ``host_offset``, ``device_offset``,
    ``window_bytes``, ``transfer_bytes``, then what the files measure: bandwidth files
    ``time_cycles``, ``time_s``, ``total_bytes``, ``transactions``, ``bw_gbps`` (gigabits
    per second, whatever pcie-bench's header says), ``transactions_per_s``; latency files
    ``latency_avg_ns``, ``latency_median_ns``, ``latency_min_ns``, ``latency_max_ns``,
    ``latency_p95_ns``, ``latency_p99_9_ns``, ``tavg_ns``, the same in the card's cycles
    (``..._cycles``), ``outliers`` and ``samples``.

    ``cdf``: the latency distributions of the ``*_cdf.txt`` files, one row per point:
    ``file``, ``line``, ``test``, ``transfer_bytes``, ``window_bytes``, ``cache``,
    ``latency_cycles``, ``latency_ns``, ``cumulative_fraction``.
    """

    directory: str
    host: dict[str, Any]
    measurements: list[dict[str, Any]]
    cdf: list[dict[str, Any]]
    #: The result files read, in order.
    files: list[str] = field(default_factory=list)
    #: One line per line of data left out (``FILE:LINE: column ... is nan``), in file order.
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """Everything as plain JSON-ready data."""
        return {
            "directory": self.directory,
            "host": dict(self.host),
            "files": list(self.files),
            "notes": list(self.notes),
            "measurements": [dict(r) for r in self.measurements],
            "cdf": [dict(r) for r in self.cdf],
        }

    def to_pandas(self, what: Literal["measurements", "cdf", "host"] = "measurements"):
        """A pandas DataFrame of the measurements, the latency distributions, or the host
        (one row)."""
        import pandas as pd

        if what == "measurements":
            return pd.DataFrame(self.measurements)
        if what == "cdf":
            return pd.DataFrame(self.cdf)
        if what == "host":
            return pd.DataFrame([{**self.host, "misc": ",".join(self.host["misc"])}])
        raise ValueError(f"what {what!r} is not allowed; allowed: measurements, cdf, host")


def import_pcie_bench(directory: str | os.PathLike[str]) -> PcieBenchData:
    """Reads every ``bw_*.txt`` and ``lat_*.txt`` of a pcie-bench directory by its header
    line, and the host from the directory's name (:func:`parse_host_name`); see
    :class:`PcieBenchData` for the columns. Raises :class:`ImportFileError` with one line
    naming the file and line when the directory or a file cannot be read."""
    d = Path(directory)
    if not d.exists():
        raise ImportFileError(f"{d}: no such directory; give a pcie-bench directory (with bw_*.txt, lat_*.txt)")
    if not d.is_dir():
        raise ImportFileError(f"{d}: is a file; give the pcie-bench directory that holds bw_*.txt and lat_*.txt")
    paths = sorted(p for p in d.iterdir() if _is_result_file(p.name) and p.is_file())
    if not paths:
        raise ImportFileError(f"{d}: no pcie-bench result files (bw_*.txt, lat_*.txt) in the directory")
    return read_pcie_bench(d.resolve().name, {p.name: read_text(p, "pcie-bench results") for p in paths}, origin=d)


def _is_result_file(name: str) -> bool:
    """A pcie-bench result file's name: ``bw_*.txt`` or ``lat_*.txt``."""
    return name.startswith(("bw_", "lat_")) and name.endswith(".txt")


def read_pcie_bench(name: str, files: Mapping[str, str], origin: str | os.PathLike[str] | None = None) -> PcieBenchData:
    """A pcie-bench directory given as its name and its files' texts (file name -> text):
    what :func:`import_pcie_bench` makes of the directory ``name`` holding those files. Files
    other than ``bw_*.txt`` and ``lat_*.txt`` are passed over; errors name ``origin`` (the
    name when left out) and the file."""
    where = Path(origin if origin is not None else name)
    names = sorted(f for f in files if _is_result_file(f))
    if not names:
        raise ImportFileError(f"{where}: no pcie-bench result files (bw_*.txt, lat_*.txt) in the directory")
    results: list[dict[str, Any]] = []
    cdf: list[dict[str, Any]] = []
    notes: list[str] = []
    for file in names:
        table, rows = _read_file(where / file, files[file], notes)
        (results if table == "results" else cdf).extend(rows)
    return PcieBenchData(
        directory=name,
        host=parse_host_name(name),
        measurements=_uniform(results),
        cdf=_uniform(cdf),
        files=names,
        notes=notes,
    )
