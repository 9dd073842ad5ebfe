"""tlpsim: performance model and simulator of PCI Express fabrics.

Public API (names fixed by DESIGN.md):

- :func:`link_bandwidth` - closed-form bandwidth of one link, per direction.
- :func:`message_bandwidth` - payload rate of messages segmented into TLPs.
- :func:`load_scenario`, :func:`run` - the TLP-level simulator on a scenario file.
- :func:`validate` - every modelled seed-report number, published vs computed.
- :func:`sweep` - one scenario at every combination of some of its values, in parallel.
"""

from tlpsim._core import ConfigError
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
    "ConfigError",
    "LinkBandwidth",
    "MessageBandwidth",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "SimulationError",
    "SweepResult",
    "ValidationReport",
    "link_bandwidth",
    "load_scenario",
    "message_bandwidth",
    "run",
    "schema",
    "sweep",
    "validate",
]
__version__ = "0.1.0"
