"""The ``pciebench`` validation system and ``tlpsim fit``: a pcie-bench directory's host
calibrated from a few cells, every other measurement predicted.

- :func:`fit_directory` - fit a directory's host, predict its other cells (a :class:`FitReport`).
- :func:`validate_rows` - the nine shipped directories as validation rows.
- :func:`validation_system` - the ``pciebench`` system of the validation registry, as the
  core's one validation path asks for it (``validation/pciebench/front.toml``).
- :func:`cells_of`, :func:`scenario_text`, :func:`simulate`, :func:`fit` - the steps.

The protocol (free parameters, calibrate cells, fixed values) is :mod:`tlpsim.pciebench.protocol`.
"""

from tlpsim.pciebench.cells import Cell, NotModelled, cells_of, not_modelled, short_name
from tlpsim.pciebench.fit import Fitted, Parameter, Selector, fit
from tlpsim.pciebench.model import Machine, host_keys, machine_of, scenario_text, toml_value
from tlpsim.pciebench.pipeline import (
    SYSTEM,
    DeviceFit,
    FitReport,
    fit_device,
    fit_directory,
    fit_source,
    load_directory,
    validate_reports,
    validate_rows,
)
from tlpsim.pciebench.runner import Outcome, run_cells, simulate
from tlpsim.pciebench.summary import GroupSummary, group_summaries
from tlpsim.pciebench.system import validation_system

__all__ = [
    "SYSTEM",
    "Cell",
    "DeviceFit",
    "FitReport",
    "Fitted",
    "GroupSummary",
    "Machine",
    "NotModelled",
    "Outcome",
    "Parameter",
    "Selector",
    "cells_of",
    "fit",
    "fit_device",
    "fit_directory",
    "fit_source",
    "group_summaries",
    "host_keys",
    "load_directory",
    "machine_of",
    "not_modelled",
    "run_cells",
    "scenario_text",
    "short_name",
    "simulate",
    "toml_value",
    "validate_reports",
    "validate_rows",
    "validation_system",
]
