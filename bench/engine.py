"""Engine speed: tlpsim's simulator against a SimPy model of one link, in one process.

The tlpsim scenario is a saturated three-port switch: two DMA endpoints (reads and writes
at once, so both directions of every link are busy) under a switch whose upstream port is
x8 Gen1. A TLP crossing one link counts as one hop. The SimPy model
(bench/simpy_link.py) is one saturated link with the same serialization, Ack and credit
rules. Build tlpsim in release mode first (`pip install .`).

    python bench/engine.py --json            # speed figures
    python bench/engine.py --memory --json   # peak memory at 1x and 10x simulated time
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
from pathlib import Path

import tlpsim

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SCENARIO = """
[simulation]
duration = "{duration}"
warmup = "10us"
seed = 1
[pcie]
mps = 128
mrrs = 512
gen = 1
[[root_complex]]
name = "rc"
memory_read_latency = "400ns"
[[switch]]
name = "sw"
forwarding = "cut-through"
latency = "150ns"
[[endpoint]]
name = "a"
kind = "dma"
[[endpoint]]
name = "b"
kind = "dma"
[[link]]
between = ["rc", "sw"]
width = 8
[[link]]
between = ["sw", "a"]
width = 8
[[link]]
between = ["sw", "b"]
width = 8
[[workload]]
name = "a"
kind = "dma"
endpoint = "a"
direction = "both"
transfer_size = "4KiB"
outstanding = 8
[[workload]]
name = "b"
kind = "dma"
endpoint = "b"
direction = "both"
transfer_size = "4KiB"
outstanding = 8
"""


def peak_rss_mb() -> float:
    """Peak resident memory of this process, MiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def tlpsim_speed(duration_ms: float, repeats: int = 3) -> dict:
    """Best of `repeats` runs of the switch scenario."""
    scenario = tlpsim.load_scenario(SCENARIO.format(duration=f"{duration_ms}ms"))
    best = None
    for _ in range(repeats):
        r = tlpsim.run(scenario)
        assert r.audit["passed"], r.audit
        if best is None or r.wall_s < best.wall_s:
            best = r
    return {
        "simulated_ms": duration_ms,
        "tlp_hops": best.tlp_hops,
        "events": best.events,
        "wall_s": best.wall_s,
        "tlp_hops_per_s": best.tlp_hops / best.wall_s,
        "events_per_s": best.events / best.wall_s,
        "flows_gbps": [round(f["throughput_gbps"], 3) for f in best.flows],
    }


def simpy_speed(duration_us: float, repeats: int = 3) -> dict:
    """Best of `repeats` runs of the SimPy link (the same best-of rule as tlpsim's)."""
    from simpy_link import run_simpy

    runs = [run_simpy(gen=1, width=8, mps=128, duration_us=duration_us) for _ in range(repeats)]
    return min(runs, key=lambda r: r["wall_s"])


def memory_point(duration_ms: float) -> float:
    """Peak RSS of a fresh interpreter that loads tlpsim and runs `duration_ms`."""
    code = (
        f"import sys; sys.path.insert(0, {str(HERE)!r}); import engine; "
        f"engine.tlpsim_speed({duration_ms!r}, repeats=1); print(engine.peak_rss_mb())"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--duration-ms", type=float, default=5.0, help="simulated time of the tlpsim run")
    p.add_argument("--memory", action="store_true", help="compare peak memory at 1x and 10x simulated time")
    args = p.parse_args()
    if args.memory:
        one = memory_point(args.duration_ms)
        ten = memory_point(10 * args.duration_ms)
        out = {"simulated_ms": [args.duration_ms, 10 * args.duration_ms], "peak_rss_mb": [one, ten],
               "growth": ten / one - 1}  # fmt: skip
    else:
        t = tlpsim_speed(args.duration_ms)
        s = simpy_speed(200.0)
        out = {
            "tlp_hops_per_s": t["tlp_hops_per_s"],
            "simpy_tlp_hops_per_s": s["tlp_hops_per_s"],
            "ratio": t["tlp_hops_per_s"] / s["tlp_hops_per_s"],
            "peak_rss_mb": peak_rss_mb(),
            "events_per_s": t["events_per_s"],
            "tlpsim": t,
            "simpy": s,
        }
    if args.json:
        print(json.dumps(out))
    else:
        for k, v in out.items():
            print(f"{k}: {v}")


if __name__ == "__main__":
    main()
