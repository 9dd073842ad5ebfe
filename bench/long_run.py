"""Issue 38's long run: one saturated Gen5 x16 link (MPS 256, MRRS 512, 4 KiB DMA transfers,
eight outstanding), run for DURATION of simulated time, writes one way and reads plus writes
both ways. It prints each run's wall time, TLP hops, ns per hop and the wall time 1 s of
simulated time would take at that rate. Build tlpsim in release mode first (`pip install .`).

    python bench/long_run.py                 # 10 ms each, extrapolated to 1 s
    python bench/long_run.py --duration 1s   # the issue's figure itself
"""

from __future__ import annotations

import argparse
import json

import tlpsim

SCENARIO = """
[simulation]
duration = "{duration}"
warmup = "10us"
seed = 1
[pcie]
mps = 256
mrrs = 512
gen = 5
[[root_complex]]
name = "rc"
memory_read_latency = "400ns"
[[endpoint]]
name = "a"
kind = "dma"
[[link]]
between = ["rc", "a"]
width = 16
[[workload]]
name = "w"
kind = "dma"
endpoint = "a"
direction = "{direction}"
transfer_size = "4KiB"
outstanding = 8
"""


def measure(direction: str, duration: str) -> dict:
    """One run: its wall time, hops, ns per hop and the wall time of 1 s at that rate."""
    r = tlpsim.run(SCENARIO.format(direction=direction, duration=duration))
    assert r.audit["passed"], r.audit
    return {
        "direction": direction,
        "duration": duration,
        "wall_s": round(r.wall_s, 3),
        "tlp_hops": r.tlp_hops,
        "ns_per_hop": round(r.wall_s / r.tlp_hops * 1e9, 1),
        "gbps": round(sum(f["throughput_gbps"] for f in r.flows), 1),
        "wall_s_per_simulated_s": round(r.wall_s / r.simulated_s, 1),
    }


def main() -> None:
    """Runs both directions and prints a table or JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", default="10ms", help="simulated time per run (default 10ms)")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    rows = [measure(direction, args.duration) for direction in ("write", "both")]
    if args.json:
        print(json.dumps({"runs": rows}))
        return
    for r in rows:
        print(
            f"{r['direction']:>5}: {r['wall_s']:8.3f} s wall for {r['duration']}, {r['tlp_hops']:>11,} hops, "
            f"{r['ns_per_hop']:5.1f} ns/hop, {r['gbps']:6.1f} Gb/s -> "
            f"{r['wall_s_per_simulated_s']:6.1f} s per simulated s"
        )


if __name__ == "__main__":
    main()
