"""Files the CLI reads and writes. Every input is read through :func:`read_capped`, so that
a device that never ends (``/dev/zero``) or a file far too big is refused in one line
instead of filling the memory. Outputs are checked before the work (never an input, never an existing file
without ``--force``) and written atomically (a temporary file in the same folder, flushed
to disk, then renamed over the target), so a full disk or a kill never leaves half a file
and a symlink at the target is replaced, not followed."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tlpsim._core import ConfigError

__all__ = ["MAX_INPUT_BYTES", "atomic_output", "check_output", "read_capped", "refuse_input", "write_atomic"]

#: The largest input file read (a scenario, lspci output, a pcie-bench result file); a
#: bigger one, or a device such as /dev/zero, is refused in one line.
MAX_INPUT_BYTES = 64 << 20


def read_capped(
    path: str | os.PathLike[str],
    what: str,
    limit: int = MAX_INPUT_BYTES,
    error: type[ConfigError] = ConfigError,
) -> bytes:
    """The bytes of ``path``, reading at most ``limit`` + 1 of them: a longer file (or a
    device that never ends) raises ``error`` in one line naming it and ``what`` it should
    hold. An OSError (missing, unreadable) is left to the caller, which knows what to say."""
    with Path(path).open("rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        size = next((f"{limit >> s} {u}" for s, u in ((30, "GiB"), (20, "MiB")) if limit >> s), f"{limit:,} bytes")
        raise error(f"{path}: the file is over {size}, too big for {what}: is it the right file?")
    return data


def refuse_input(path: str | os.PathLike[str], what: str, inputs: Iterable[str | os.PathLike[str]]) -> None:
    """Refuses, in one line, an output ``path`` that is one of ``inputs``: the same file by
    name, through a symlink or as a hard link (same device and inode)."""
    path = Path(path)
    for source in inputs:
        try:
            if path.exists() and Path(source).exists() and os.path.samefile(path, source):
                raise ConfigError(f"{path}: the {what} would overwrite the input {source}; choose another file")
        except OSError:
            continue


def check_output(path: Path, what: str, inputs: Iterable[Path] = (), force: bool = False) -> None:
    """Refuses, in one line, an output ``path`` that is one of ``inputs`` (whatever
    ``force`` says), that exists without ``force``, or whose folder is missing."""
    refuse_input(path, what, inputs)
    if path.is_dir():
        raise ConfigError(f"{path}: cannot write the {what}: it is a folder")
    if not path.parent.is_dir():
        raise ConfigError(f"{path}: cannot write the {what}: folder {path.parent} does not exist")
    if (path.exists() or path.is_symlink()) and not force:
        raise ConfigError(f"{path} exists: add --force to overwrite it with the {what}")


@contextmanager
def atomic_output(path: Path, what: str) -> Iterator[Path]:
    """A temporary file in ``path``'s folder to write the ``what`` into; on leaving the
    block it is fsynced and renamed over ``path``. On any error (an exception in the block
    included) the temporary file is removed and ``path`` is left as it was; an OSError
    becomes one line naming the file."""
    path = Path(path)
    tmp = None
    try:
        fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        os.close(fd)
        tmp = Path(name)
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(tmp, path)
        tmp = None
    except OSError as e:
        raise ConfigError(f"{path}: cannot write the {what}: {e.strerror or e}") from None
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass


def write_atomic(path: Path, text: str, what: str) -> None:
    """Writes ``text`` to ``path`` through a temporary file in the same folder, fsynced and
    renamed over ``path``; on any error the temporary file is removed, ``path`` is left as
    it was, and one line naming the file is raised."""
    with atomic_output(path, what) as tmp, open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
