"""Tables on a narrow terminal: numbers are never cut; columns that do not fit are named."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tlpsim.output import COLUMN_FRAME, fit_columns

ROOT = Path(__file__).resolve().parent.parent
GALLERY = ROOT / "scenarios" / "gen5-8gpu-server.toml"
ANSI = re.compile(r"\x1b\[[0-9;?]*[a-zA-Z]")


def terminal_cli(columns: int, *args: str) -> str:
    """The CLI's stdout as a terminal of ``columns`` characters shows it (escapes removed)."""
    env = {**os.environ, "TTY_COMPATIBLE": "1", "NO_COLOR": "1", "COLUMNS": str(columns)}
    proc = subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", *args], capture_output=True, text=True, timeout=120, env=env
    )
    assert proc.returncode == 0, proc.stderr
    return ANSI.sub("", proc.stdout)


@pytest.mark.parametrize("columns", [80, 60])
def test_run_table_keeps_every_number_whole(columns):
    shown = terminal_cli(columns, "run", str(GALLERY))
    assert "…" not in shown
    flows = json.loads(subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", "run", str(GALLERY), "--format", "json"],
        capture_output=True, text=True, timeout=120, check=True,
    ).stdout)["flows"]  # fmt: skip
    for flow in flows:
        assert f"{flow['throughput_gbps']:.3f}" in shown
        assert f"{flow['bytes']:,}" in shown
    assert max(len(line) for line in shown.splitlines()) <= columns
    assert "not shown at" in shown


@pytest.mark.parametrize("columns", [80, 60])
def test_link_table_keeps_every_number_whole(columns):
    shown = terminal_cli(columns, "link", "--gen", "5", "--width", "16", "--mps", "256")
    assert "…" not in shown
    assert max(len(line) for line in shown.splitlines()) <= columns


def test_a_wide_terminal_shows_every_column():
    shown = terminal_cli(200, "run", str(GALLERY))
    assert "not shown at" not in shown
    assert "requests" in shown


@given(
    st.lists(st.tuples(st.booleans(), st.text(alphabet="abc de", min_size=1, max_size=20)), min_size=1, max_size=12),
    st.lists(st.integers(min_value=0, max_value=10**12), min_size=1, max_size=5),
    st.integers(min_value=20, max_value=200),
)
def test_fitted_columns_fit_and_never_cut_a_number(spec, values, width):
    columns = [("f", (" " if text else "") + heading, "") for text, heading in spec]
    cells = [[f"{v:,}" for _ in columns] for v in values]
    keep, widths = fit_columns(columns, cells, width)
    assert 0 in keep
    for i in keep:
        if not columns[i][1].startswith(" "):
            assert widths[i] >= max(len(row[i]) for row in cells)
    if len(keep) > 1:
        assert 1 + sum(widths[i] + COLUMN_FRAME for i in keep) <= width
