"""The pcie-bench directories shipped with tlpsim (``data/pcie-bench``), as embedded in the
extension module at build time, so that an installed wheel has them."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field

from tlpsim import _core
from tlpsim.importers.pciebench import PcieBenchData, read_pcie_bench

__all__ = ["LSPCI_FILE", "Source", "shipped"]

#: The file of a pcie-bench directory with the host's ``lspci -vvv``.
LSPCI_FILE = "sys-lspci.txt"


@dataclass(frozen=True)
class Source:
    """One pcie-bench directory read: its results, its ``sys-lspci.txt`` text and the texts
    of the other ``sys-*.txt`` host descriptions it has (by file name), with ``origin``
    naming where they came from in messages."""

    data: PcieBenchData
    lspci: str
    origin: str
    files: Mapping[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        """The directory's name."""
        return self.data.directory


@functools.cache
def shipped() -> tuple[Source, ...]:
    """The nine shipped directories, by name (read once per process)."""
    by_dir: dict[str, dict[str, str]] = {}
    for path, text in _core.pcie_bench_files():
        directory, _, file = path.partition("/")
        by_dir.setdefault(directory, {})[file] = text
    out = []
    for name, files in sorted(by_dir.items()):
        origin = f"data/pcie-bench/{name}"
        sys_files = {f: text for f, text in files.items() if f.startswith("sys-")}
        out.append(Source(read_pcie_bench(name, files, origin=origin), files.get(LSPCI_FILE, ""), origin, sys_files))
    return tuple(out)
