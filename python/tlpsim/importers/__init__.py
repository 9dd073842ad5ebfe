"""Importers: other tools' files as tlpsim scenarios and tables.

- :func:`import_lspci`: ``lspci -vvv`` output (optionally with ``lspci -tv``) as a scenario.
- :func:`import_pcie_bench`: a pcie-bench result directory as a measurement table.
"""

from tlpsim.importers.common import ImportFileError, format_size, parse_size
from tlpsim.importers.lspci import LspciImport, import_lspci
from tlpsim.importers.pciebench import PcieBenchData, import_pcie_bench, parse_host_name, read_pcie_bench

__all__ = [
    "ImportFileError",
    "LspciImport",
    "PcieBenchData",
    "format_size",
    "import_lspci",
    "import_pcie_bench",
    "parse_host_name",
    "parse_size",
    "read_pcie_bench",
]
