"""Load and run time and peak memory of one switch with thousands of ports.

One root complex, one Gen4 switch on an x16 root link and N x4 DMA endpoints below it,
every endpoint reading 4 KiB transfers, 1 us simulated: the fabric size the peer-to-peer
issue asks to load and run in under 2 GB and 30 s at N = 10,000. Each N runs in a child
process so that its peak resident memory is its own. Build tlpsim in release mode first
(`pip install .`).

    python bench/big_switch.py                 # N = 1,000, 3,000 and 10,000
    python bench/big_switch.py 10000 --json    # one N, one JSON object per line
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def scenario(ports: int) -> str:
    """The scenario text for `ports` endpoints below one switch."""
    parts = [
        '[simulation]\nduration = "1us"\n[pcie]\ngen = 4\n'
        '[[root_complex]]\nname = "rc"\n[[switch]]\nname = "sw"\n'
        '[[link]]\nbetween = ["rc", "sw"]\nwidth = 16\n'
    ]
    for i in range(ports):
        parts.append(f'[[endpoint]]\nname = "e{i}"\nkind = "dma"\n[[link]]\nbetween = ["sw", "e{i}"]\nwidth = 4\n')
    for i in range(ports):
        parts.append(
            f'[[workload]]\nname = "w{i}"\nkind = "dma"\nendpoint = "e{i}"\n'
            'direction = "read"\ntransfer_size = "4KiB"\noutstanding = 4\n'
        )
    return "".join(parts)


def child(ports: int) -> None:
    """Loads and runs one size in this process and prints its figures as JSON."""
    import tlpsim

    text = scenario(ports)
    start = time.perf_counter()
    loaded = tlpsim.load_scenario(text)
    loaded_at = time.perf_counter()
    result = tlpsim.run(loaded)
    done = time.perf_counter()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(
        json.dumps(
            {
                "endpoints": ports,
                "load_s": round(loaded_at - start, 2),
                "run_s": round(done - loaded_at, 2),
                "peak_mb": round(peak_kib / 1024),
                "audit_passed": result.audit["passed"],
            }
        )
    )


def main() -> None:
    """Runs each size in a child process and prints a table or JSON lines."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[1000, 3000, 10000])
    parser.add_argument("--json", action="store_true", help="one JSON object per size")
    parser.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        child(args.child)
        return
    for n in args.sizes:
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n)],
            check=True,
            capture_output=True,
            text=True,
        ).stdout
        row = json.loads(out)
        if args.json:
            print(json.dumps(row))
        else:
            print(
                f"{row['endpoints']:>6} endpoints: load {row['load_s']:6.2f} s, "
                f"run {row['run_s']:6.2f} s, peak {row['peak_mb']:5d} MB, "
                f"audit {'passed' if row['audit_passed'] else 'FAILED'}"
            )


if __name__ == "__main__":
    main()
