"""A sweep's output file, JSON Lines: a header line naming the scenario and the swept keys,
then one line per finished point (``{"point": {...}, "run": {...}}``, or ``{"point": {...},
"error": "..."}`` for a point that failed), each appended and flushed as the point finishes.
A killed sweep so leaves whole records, and at most one partial last line, which resuming
drops."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any

from tlpsim._core import ConfigError
from tlpsim._records import finite
from tlpsim.files import read_capped

__all__ = ["PointFile", "header"]

#: The largest points file resumed (a point of an 8-GPU server is about 20 KB: 50,000 of
#: them); a bigger one, or a device such as /dev/zero, is refused in one line.
MAX_SWEEP_FILE_BYTES = 1 << 30

#: The header's format marker and version.
FORMAT_KEY = "tlpsim_sweep"
FORMAT_VERSION = 1


def header(origin: str, text: str, keys: Sequence[str]) -> dict[str, Any]:
    """The header line of a sweep of scenario ``text`` (read from ``origin``) over ``keys``."""
    return {
        FORMAT_KEY: FORMAT_VERSION,
        "scenario": origin,
        "scenario_sha256": hashlib.sha256(text.encode()).hexdigest(),
        "keys": list(keys),
    }


def _line(record: dict[str, Any]) -> str:
    """One record as one line of JSON (values JSON lacks, as their text; NaN and infinities
    as null)."""
    return json.dumps(finite(record), separators=(",", ":"), default=str, allow_nan=False) + "\n"


def _read(path: Path) -> tuple[dict[str, Any] | None, list[tuple[int, dict[str, Any]]], bool]:
    """The header (None for an empty file or one cut inside its header), the point records
    with their line numbers, and whether a partial last line was dropped. A bad line before
    the last is refused."""
    not_ours = ConfigError(f"{path} is not a tlpsim sweep file: give another output file, or overwrite it (--force)")
    lines = read_capped(path, "a sweep points file", MAX_SWEEP_FILE_BYTES).split(b"\n")
    last = lines.pop()  # text after the last newline: a line cut by a hard kill
    if not lines:
        if last and not last.startswith(f'{{"{FORMAT_KEY}":'.encode()):
            raise not_ours
        return None, [], bool(last)
    parsed: list[tuple[int, dict[str, Any]]] = []
    for n, raw in enumerate(lines, 1):
        try:
            value = json.loads(raw)
        except (ValueError, RecursionError):
            value = None
        if n == 1 and not _is_header(value):
            raise not_ours
        if not isinstance(value, dict) or (n > 1 and not isinstance(value.get("point"), dict)):
            raise ConfigError(
                f"{path} line {n} is not a sweep record: give another output file, or overwrite it (--force)"
            )
        parsed.append((n, value))
    return parsed[0][1], parsed[1:], bool(last)


def _is_header(value: Any) -> bool:
    """Whether a first line's value is a sweep file's header: the format marker and the
    swept keys as a list of names."""
    return (
        isinstance(value, dict)
        and value.get(FORMAT_KEY) == FORMAT_VERSION
        and isinstance(value.get("keys"), list)
        and all(isinstance(k, str) for k in value["keys"])
    )


def _check_header(path: Path, found: dict[str, Any], wanted: dict[str, Any]) -> None:
    """Refuses to resume into a file of another scenario text or other swept keys."""
    if sorted(found.get("keys", [])) != sorted(wanted["keys"]):
        raise ConfigError(
            f"{path} holds a sweep over {', '.join(found.get('keys', []))}, not {', '.join(wanted['keys'])}: "
            "give another output file, or overwrite it (--force)"
        )
    if found.get("scenario_sha256") != wanted["scenario_sha256"]:
        raise ConfigError(
            f"{path} holds a sweep of another scenario text ({found.get('scenario')}, changed since?): "
            "give another output file, or overwrite it (--force)"
        )


class PointFile:
    """An open sweep output file that points are appended to."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._handle = path.open("a", encoding="utf-8", newline="\n")

    @classmethod
    def create(cls, path: str | os.PathLike[str], head: dict[str, Any]) -> PointFile:
        """A new file holding only ``head`` (an existing one is overwritten)."""
        path = Path(path)
        _replace(path, [head])
        return cls(path)

    @classmethod
    def resume(
        cls,
        path: str | os.PathLike[str],
        head: dict[str, Any],
        key: Callable[[dict[str, Any]], Hashable],
        check: Callable[[dict[str, Any], Any], str | None] = lambda point, run: None,
    ) -> tuple[PointFile, dict[Hashable, dict[str, Any]]]:
        """Opens ``path`` to go on with the sweep ``head`` describes (a missing or empty file
        starts afresh) and returns it with the runs it already holds, by ``key(point)``.
        Failed points, repeats of a point and a partial last line are dropped (the file is
        rewritten without them, atomically), so those points run again. ``check(point, run)``
        says what is wrong with a run read back (None: nothing); such a record is refused in
        one line naming the file and line."""
        path = Path(path)
        if not path.exists():
            return cls.create(path, head), {}
        found, records, partial = _read(path)
        if found is None:
            return cls.create(path, head), {}
        _check_header(path, found, head)
        runs: dict[Hashable, dict[str, Any]] = {}
        kept = [found]
        for n, r in records:
            if set(r["point"]) != set(head["keys"]):
                raise ConfigError(
                    f"{path} line {n}: the point {_short(r['point'])} lacks some of the keys "
                    f"{', '.join(head['keys'])}: give another output file, or overwrite it (--force)"
                )
            problem = check(r["point"], r["run"]) if "run" in r else None
            if problem is not None:
                raise ConfigError(
                    f"{path} line {n}: the run of point {_short(r['point'])} {problem}: "
                    "give another output file, or overwrite it (--force)"
                )
            k = key(r["point"])
            if "run" in r and k not in runs:
                runs[k] = r["run"]
                kept.append(r)
        if partial or len(kept) != len(records) + 1:
            _replace(path, kept)
        return cls(path), runs

    def write(self, point: dict[str, Any], run: dict[str, Any]) -> None:
        """Appends one point and its run (``{"error": ...}`` for a failed point), flushed to
        the operating system before it returns."""
        record = {"point": point, **({"error": run["error"]} if "error" in run else {"run": run})}
        self._handle.write(_line(record))
        self._handle.flush()

    def close(self) -> None:
        """Closes the file."""
        self._handle.close()


def _short(value: Any, limit: int = 200) -> str:
    """A record's value as JSON for a message, cut to ``limit`` characters."""
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _replace(path: Path, records: list[dict[str, Any]]) -> None:
    """Writes ``records`` to ``path`` atomically: a file beside it, synced, then renamed over it."""
    tmp = path.with_name(f".{path.name}.tmp")
    with tmp.open("w", encoding="utf-8", newline="\n") as f:
        f.writelines(_line(r) for r in records)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
