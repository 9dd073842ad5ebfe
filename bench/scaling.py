"""Engine cost against fabric size: wall time per TLP hop as a switch gets more ports.

One root complex, one switch, N DMA endpoints each reading and writing 4 KiB transfers at
once (every link direction busy), N = 2 to 32. If the engine's cost grows linearly with the
TLPs simulated and the ports, the time per hop stays flat as N grows (the arbiter of the
switch's upstream egress chooses among N inputs). Build tlpsim in release mode first
(`pip install .`).

    python bench/scaling.py            # a table
    python bench/scaling.py --json     # one JSON object
"""

from __future__ import annotations

import argparse
import json

import tlpsim

HEAD = """
[simulation]
duration = "{duration}"
warmup = "10us"
seed = 1
[pcie]
mps = 128
mrrs = 512
gen = 3
[[root_complex]]
name = "rc"
memory_read_latency = "400ns"
[[switch]]
name = "sw"
forwarding = "cut-through"
latency = "150ns"
[[link]]
between = ["rc", "sw"]
width = 16
"""

ENDPOINT = """
[[endpoint]]
name = "ep{i}"
kind = "dma"
[[link]]
between = ["sw", "ep{i}"]
width = 2
[[workload]]
name = "w{i}"
kind = "dma"
endpoint = "ep{i}"
direction = "both"
transfer_size = "4KiB"
outstanding = 8
"""


def scenario(ports: int, duration_ms: float) -> str:
    """The switch with `ports` downstream endpoints, run for `duration_ms`."""
    return HEAD.format(duration=f"{duration_ms}ms") + "".join(ENDPOINT.format(i=i) for i in range(ports))


def measure(ports: int, duration_ms: float, repeats: int = 3) -> dict:
    """Best of `repeats` runs: hops, events and wall time per hop."""
    loaded = tlpsim.load_scenario(scenario(ports, duration_ms))
    best = min((tlpsim.run(loaded) for _ in range(repeats)), key=lambda r: r.wall_s)
    assert best.audit["passed"], best.audit
    return {
        "ports": ports,
        "tlp_hops": best.tlp_hops,
        "events_per_hop": best.events / best.tlp_hops,
        "ns_per_hop": best.wall_s / best.tlp_hops * 1e9,
        "tlp_hops_per_s": best.tlp_hops / best.wall_s,
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--duration-ms", type=float, default=1.0, help="simulated time per run")
    args = p.parse_args()
    rows = [measure(n, args.duration_ms) for n in (2, 4, 8, 16, 32)]
    if args.json:
        print(json.dumps({"duration_ms": args.duration_ms, "points": rows}))
        return
    print(f"{'ports':>5} {'TLP hops':>10} {'events/hop':>10} {'ns/hop':>8} {'M hops/s':>9}")
    for r in rows:
        print(f"{r['ports']:>5} {r['tlp_hops']:>10,} {r['events_per_hop']:>10.2f} {r['ns_per_hop']:>8.1f} "
              f"{r['tlp_hops_per_s'] / 1e6:>9.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
