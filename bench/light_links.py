"""Issue 38's ports figure against the lean peer's own: one Gen1 x8 link of posted writes
(the peer's `link1_50.toml`) with 32, 2 and 1 PH credits at the receiver. With one or two
credits each TLP waits for an UpdateFC, so each Ack interval carries one or two TLPs, as an
endpoint link under a full upstream at 128 ports does. It prints events and wall time per
TLP hop for tlpsim and, given `--peer PATH` (the peer's `rust/target/release/lean`), for
the peer with the same credits, each the best of `--repeats` interleaved runs. Build
tlpsim in release mode first (`pip install .`); instruction counts come from running the
printed scenarios under `valgrind --tool=cachegrind --cache-sim=no`.

    python bench/light_links.py --peer ../shared/peers/lean-des/rust/target/release/lean
"""

from __future__ import annotations

import argparse
import json
import subprocess

import tlpsim

SCENARIO = """
[simulation]
duration = "{duration_ms}ms"
warmup = "10us"
seed = 1
[pcie]
mps = 128
gen = 1
skp = false
[[root_complex]]
name = "rc"
memory_read_latency = "400ns"
credits = {{ ph = {ph}, pd = {pd} }}
[[endpoint]]
name = "a"
kind = "dma"
[[link]]
between = ["rc", "a"]
width = 8
[[workload]]
name = "w"
kind = "dma"
endpoint = "a"
direction = "write"
transfer_size = "4KiB"
outstanding = 8
"""

CREDITS = (32, 2, 1)


def scenario(ph: int, duration_ms: float) -> str:
    """The one link with `ph` PH credits and the data credits of `ph` whole TLPs."""
    return SCENARIO.format(ph=ph, pd=ph * 8, duration_ms=duration_ms)


def tlpsim_run(ph: int, duration_ms: float) -> tuple[float, float]:
    """tlpsim's events per hop and wall ns per hop."""
    r = tlpsim.run(scenario(ph, duration_ms))
    assert r.audit["passed"], r.audit
    return r.events / r.tlp_hops, r.wall_s / r.tlp_hops * 1e9


def peer_run(peer: str, ph: int, duration_ms: float) -> tuple[float, float]:
    """The peer's events per hop and wall ns per hop (its arguments: us, gen, width, MPS, PH)."""
    out = subprocess.run(
        [peer, str(duration_ms * 1000), "1", "8", "128", str(ph)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    d = json.loads(out)
    return d["events_per_hop"], d["ns_per_hop"]


def main() -> None:
    """Runs each credit count and prints the table, each ratio against 32 credits."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", help="path of the lean peer's binary (optional)")
    parser.add_argument("--duration-ms", type=float, default=50.0, help="simulated ms (default 50)")
    parser.add_argument("--repeats", type=int, default=3, help="runs of each, best kept (default 3)")
    parser.add_argument("--print-scenario", type=int, metavar="PH", help="print the scenario and stop")
    args = parser.parse_args()
    if args.print_scenario is not None:
        print(scenario(args.print_scenario, args.duration_ms), end="")
        return
    best: dict[tuple[str, int], tuple[float, float]] = {}
    for _ in range(args.repeats):
        for ph in CREDITS:
            runs = [("tlpsim", tlpsim_run(ph, args.duration_ms))]
            if args.peer:
                runs.append(("peer", peer_run(args.peer, ph, args.duration_ms)))
            for who, (ev, ns) in runs:
                old = best.get((who, ph))
                best[(who, ph)] = (ev, ns if old is None else min(ns, old[1]))
    for who in ("tlpsim", "peer"):
        if (who, 32) not in best:
            continue
        base = best[(who, 32)][1]
        for ph in CREDITS:
            ev, ns = best[(who, ph)]
            print(f"{who:>6} PH {ph:>2}: {ev:5.2f} events/hop, {ns:6.1f} ns/hop ({ns / base:4.2f}x)")


if __name__ == "__main__":
    main()
