"""Shared helpers for the Python test suite."""

import json
import subprocess
import sys

import pytest


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Runs the installed CLI as a user would, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.fixture
def cli():
    """The CLI runner."""
    return run_cli


@pytest.fixture
def cli_json():
    """Runs the CLI with --format json and parses stdout (asserting exit 0)."""

    def go(*args: str):
        proc = run_cli(*args, "--format", "json")
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    return go
