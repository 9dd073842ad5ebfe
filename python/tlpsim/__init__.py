"""tlpsim: performance model and simulator of PCI Express fabrics.

Public API (names fixed by DESIGN.md):

- :func:`link_bandwidth` - closed-form bandwidth of one link, per direction.
- :func:`message_bandwidth` - payload rate of messages segmented into TLPs.
- :func:`load_scenario`, :func:`run` - the TLP-level simulator on a scenario file.
- :func:`validate` - every modelled seed-report number, published vs computed.
- :func:`sweep` - one scenario at every combination of some of its values, in parallel.
- :func:`compare` - two scenarios run and set side by side, flow by flow and link by link.
- :func:`import_lspci` - ``lspci -vvv`` output as a scenario.
- :func:`import_pcie_bench` - a pcie-bench result directory as a measurement table.
"""

from tlpsim._core import ConfigError
from tlpsim.compare import Comparison, compare
from tlpsim.importers import ImportFileError, LspciImport, PcieBenchData, import_lspci, import_pcie_bench
from tlpsim.link import LinkBandwidth, MessageBandwidth, link_bandwidth, message_bandwidth
from tlpsim.simulate import (
    RunResult,
    Scenario,
    ScenarioError,
    SimulationError,
    load_scenario,
    run,
    schema,
)
from tlpsim.sweep import SweepResult, sweep
from tlpsim.validation import ValidationReport, validate

__all__ = [
    "Comparison",
    "ConfigError",
    "ImportFileError",
    "LinkBandwidth",
    "LspciImport",
    "MessageBandwidth",
    "PcieBenchData",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "SweepResult",
    "ValidationReport",
    "compare",
    "import_lspci",
    "import_pcie_bench",
    "link_bandwidth",
    "load_scenario",
    "message_bandwidth",
    "run",
    "schema",
    "sweep",
    "validate",
]
__version__ = "0.1.0"
