"""The pcie-bench directories shipped with tlpsim (``data/pcie-bench``), as embedded in the
extension module at build time, so that an installed wheel has them."""

from __future__ import annotations

import functools
from dataclasses import dataclass

from tlpsim import _core
from tlpsim.importers.pciebench import PcieBenchData, read_pcie_bench

__all__ = ["LSPCI_FILE", "Source", "shipped"]

#: The file of a pcie-bench directory with the host's ``lspci -vvv``.
LSPCI_FILE = "sys-lspci.txt"


@dataclass(frozen=True)
class Source:
    """One pcie-bench directory read: its results and its ``sys-lspci.txt`` text, with
    ``origin`` naming where they came from in messages."""

    data: PcieBenchData
    lspci: str
    origin: str

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
        out.append(Source(read_pcie_bench(name, files, origin=origin), files.get(LSPCI_FILE, ""), origin))
    return tuple(out)
