"""Files the CLI writes: checked before the work (never an input, never an existing file
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

__all__ = ["atomic_output", "check_output", "refuse_input", "write_atomic"]


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
