"""Shared helpers for the Python test suite."""

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest


def run_cli(*args: str) -> subprocess.CompletedProcess:
    """Runs the installed CLI as a user would, in a fresh interpreter."""
    return subprocess.run(
        [sys.executable, "-m", "tlpsim.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def interrupt_cli(
    *args: str, after: float = 3.0, twice: bool = False, until: Callable[[], bool] | None = None
) -> tuple[subprocess.CompletedProcess, float]:
    """Starts the CLI as a user would, sends SIGINT (Ctrl-C) to its whole process group, as a
    terminal does, `after` seconds, or as soon as `until()` holds where given (and, with
    `twice`, again 0.15 s later, as an impatient user does), and returns what it did with the
    seconds it took from start to exit."""
    started = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tlpsim.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        # A child of a non-interactive shell may inherit SIGINT ignored.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
        # Its own process group, with any workers it starts: Ctrl-C goes to all of them.
        start_new_session=True,
    )
    if until is None:
        time.sleep(after)  # past interpreter start and import, well inside the work
    else:
        # A condition, not a delay: a faster machine must not finish the work first.
        deadline = started + 60
        while not until():
            assert proc.poll() is None, f"the CLI ended before the moment to interrupt it: {proc.communicate()}"
            assert time.monotonic() < deadline, "the moment to interrupt never came"
            time.sleep(0.02)
    os.killpg(proc.pid, signal.SIGINT)
    if twice:
        time.sleep(0.15)
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err), time.monotonic() - started


@pytest.fixture
def interrupt():
    """The CLI runner that presses Ctrl-C partway (see `interrupt_cli`)."""
    return interrupt_cli


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
