"""Peak memory of `tlpsim run --trace` against the size of the trace it writes.

Runs the T5220 example (`scenarios/t5220-two-switches.toml`) for DURATION with a trace of
up to LIMIT packets, in a fresh process, and prints the trace file's size and the process's
peak resident memory beside the same run without a trace. A trace kept in memory grows the
peak with the file (3.5 GB for a 1.25 GB file); a streamed one leaves it flat. Build
tlpsim in release mode first (`pip install .`).

    python bench/trace_memory.py                   # 50 ms, up to 10,000,000 packets
    python bench/trace_memory.py --duration 1ms --limit 1000000
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def peak_mib(args: list[str]) -> float:
    """Runs the tlpsim CLI with `args` in a fresh process; its peak resident memory in MiB."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    subprocess.run([sys.executable, "-m", "tlpsim.cli", *args], check=True, capture_output=True)
    after = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if after <= before:
        raise SystemExit("the run's peak was below an earlier child's: run one measurement per process")
    return after / 1024


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", default="50ms", help="simulated time (default 50ms)")
    parser.add_argument("--limit", type=int, default=10_000_000, help="packets the trace keeps")
    parser.add_argument("--no-trace", action="store_true", help="measure the run without a trace only")
    args = parser.parse_args()
    scenario = ROOT / "scenarios" / "t5220-two-switches.toml"
    with tempfile.TemporaryDirectory() as tmp:
        run = ["run", str(scenario), "--set", f"simulation.duration={args.duration}", "--format", "json"]
        if args.no_trace:
            print(f"no trace: peak {peak_mib(run):,.0f} MiB")
            return
        out = Path(tmp) / "trace.json"
        peak = peak_mib([*run, "--trace", str(out), "--trace-limit", str(args.limit)])
        size = os.path.getsize(out) / 2**20
        print(f"trace {size:,.0f} MiB ({args.duration}, limit {args.limit:,}): peak {peak:,.0f} MiB")


if __name__ == "__main__":
    main()
