"""What the importers share: their error, reading a text file, sizes as other tools write them."""

from __future__ import annotations

import functools
import os
import re
from fractions import Fraction
from pathlib import Path

from tlpsim._core import ConfigError
from tlpsim.files import read_capped

__all__ = ["ImportFileError", "format_size", "parse_size", "read_text"]


class ImportFileError(ConfigError):
    """A file given to an importer cannot be read as what it should be. The message is one
    line naming the file (and the line, where there is one), what is wrong and what was
    expected; the CLI prints it and exits with code 2."""


def read_text(path: str | os.PathLike[str], what: str) -> str:
    """The text of ``path``, or :class:`ImportFileError` naming it and ``what`` it should
    hold when it is missing, a folder, unreadable, not text or over
    :data:`tlpsim.files.MAX_INPUT_BYTES` (``/dev/zero`` included)."""
    p = Path(path)
    if p.is_dir():
        raise ImportFileError(f"{p}: is a folder; give the file with {what}")
    try:
        data = read_capped(p, what, error=ImportFileError)
    except FileNotFoundError:
        raise ImportFileError(f"{p}: no such file; give the file with {what}") from None
    except OSError as e:
        raise ImportFileError(f"{p}: cannot read the file: {e.strerror or e}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        # lspci and pcie-bench write ASCII; Latin-1 keeps an odd vendor string readable.
        text = data.decode("latin-1")
        if "\x00" in text:
            raise ImportFileError(f"{p}: is not a text file; give the file with {what}") from None
        return text


# Binary multiples: pcie-bench writes them "KB", "MB" (its 8KB window is 8192 bytes, the
# same window its CDF files write as win_sz=8192), and "KiB", "MiB" are accepted too.
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(?:([KMGT])i?)?B?", re.IGNORECASE)
_MULTIPLE = {None: 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


# Cached: a pcie-bench directory repeats a few dozen sizes in tens of thousands of rows.
@functools.lru_cache(maxsize=4096)
def parse_size(text: str) -> int:
    """Bytes of a size as pcie-bench writes it: ``64``, ``8KB`` (8192), ``1.5MB``
    (1572864), ``4KiB``. ``KB``, ``MB``, ``GB`` are binary here, as pcie-bench means them;
    a fractional byte count is rounded. Raises ``ValueError`` for anything else."""
    m = _SIZE.fullmatch(text.strip())
    if m is None:
        raise ValueError(f"{text!r} is not a size (allowed: bytes, or a number with KB, MB, GB: 8KB, 1.5MB)")
    unit = m.group(2).upper() if m.group(2) else None
    return round(Fraction(m.group(1)) * _MULTIPLE[unit])


def format_size(n: int) -> str:
    """``n`` bytes as tlpsim writes sizes (binary multiples spelled ``KiB``, ``MiB``, ``GiB``):
    ``8KiB``, ``1.5MiB``, ``100B``; :func:`parse_size` reads it back to ``n``. The unit is the
    largest that writes ``n`` exactly with at most three decimals."""
    for unit, mult in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= mult and (n * 1000) % mult == 0:
            whole, thousandths = divmod(n * 1000 // mult, 1000)
            decimals = f".{thousandths:03d}".rstrip("0") if thousandths else ""
            return f"{whole}{decimals}{unit}"
    return f"{n}B"
