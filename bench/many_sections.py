"""Load time of a scenario with tens of thousands of one kind of section.

A small fabric (root complex, one endpoint, a DMA workload) plus N extra sections of one
kind: ``host_bridge`` (N ``[[host_bridge]]`` sections, the first named by the root
complex), ``workload`` (N DMA workloads on the endpoint) or ``endpoint`` (N endpoints below
one switch, each with its link). Loading must stay linear (or n log n) in N: the figure is
the load time at N and at N / 4. Build tlpsim in release mode first (`pip install .`).

    python bench/many_sections.py                         # host_bridge at 16,384 and 65,536
    python bench/many_sections.py 65536 --kind workload
    python bench/many_sections.py 65536 --write big.toml  # only write the file
"""

from __future__ import annotations

import argparse
import json
import time

#: The fabric every generated file starts with.
BASE = (
    '[simulation]\nduration = "1us"\n'
    '[[root_complex]]\nname = "rc"\n{host_bridge}'
    '[[switch]]\nname = "sw"\n[[link]]\nbetween = ["rc", "sw"]\nwidth = 8\n'
    '[[endpoint]]\nname = "ep"\nkind = "dma"\n[[link]]\nbetween = ["sw", "ep"]\nwidth = 8\n'
    '[[workload]]\nname = "w"\nkind = "dma"\nendpoint = "ep"\ndirection = "read"\ntransfer_size = "4KiB"\n'
)


def scenario(n: int, kind: str = "host_bridge") -> str:
    """The scenario text with `n` extra sections of `kind`."""
    parts = [BASE.format(host_bridge='host_bridge = "hb0"\n' if kind == "host_bridge" else "")]
    for i in range(n):
        if kind == "host_bridge":
            parts.append(f'[[host_bridge]]\nname = "hb{i}"\nbandwidth = "2GB/s"\nlatency = "100ns"\n')
        elif kind == "workload":
            parts.append(
                f'[[workload]]\nname = "w{i}"\nkind = "dma"\nendpoint = "ep"\ndirection = "read"\n'
                'transfer_size = "4KiB"\noutstanding = 1\n'
            )
        elif kind == "endpoint":
            parts.append(f'[[endpoint]]\nname = "e{i}"\nkind = "dma"\n[[link]]\nbetween = ["sw", "e{i}"]\nwidth = 1\n')
        else:
            raise ValueError(f"kind {kind!r} is not allowed; allowed: host_bridge, workload, endpoint")
    return "".join(parts)


def load_seconds(n: int, kind: str) -> float:
    """Seconds `tlpsim.load_scenario` takes on the text with `n` sections of `kind`."""
    import tlpsim

    text = scenario(n, kind)
    start = time.perf_counter()
    tlpsim.load_scenario(text)
    return time.perf_counter() - start


def main() -> None:
    """Prints the load time per size as one JSON object per line (or writes one file)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sizes", nargs="*", type=int, default=[16384, 65536])
    parser.add_argument("--kind", default="host_bridge", choices=["host_bridge", "workload", "endpoint"])
    parser.add_argument("--write", help="Write the scenario of the first size to this file instead.")
    args = parser.parse_args()
    if args.write:
        with open(args.write, "w", encoding="utf-8") as f:
            f.write(scenario(args.sizes[0], args.kind))
        return
    for n in args.sizes:
        print(json.dumps({"kind": args.kind, "sections": n, "load_s": round(load_seconds(n, args.kind), 3)}))


if __name__ == "__main__":
    main()
