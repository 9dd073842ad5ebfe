"""The fluid engine against the simulator on random fabrics.

    python bench/fluid_random.py N      # seeds 0 .. N-1

Each seed builds a tree (a root complex, up to three switches, one to four DMA endpoints
reading, writing or both, links of Gen1-Gen5 x1-x16) and runs it on both engines. A flow
misses when the fluid engine is more than 2 % off the simulator's throughput (5 % where the
simulator's verdict is a window: credits, requests). Prints each miss and a summary.
"""

import json
import random
import sys

from tlpsim import _core
from tlpsim.simulate import load_scenario, run

WINDOW_KINDS = {"credits", "requests", "iodepth", "replay_buffer", "sequence_window"}


def link(rng, up, down):
    """A link of a random generation and width."""
    gen, width = rng.randint(1, 5), rng.choice([1, 2, 4, 8, 16])
    return f'[[link]]\nbetween = ["{up}", "{down}"]\ngen = {gen}\nwidth = {width}\n'


def fabric(rng):
    lines = [
        '[simulation]\nduration = "120us"\nwarmup = "20us"\n',
        f"[pcie]\nmps = {rng.choice([128, 256, 512])}\nmrrs = {rng.choice([256, 512, 4096])}\n",
        '[[root_complex]]\nname = "rc"\n',
    ]
    nodes = ["rc"]
    for s in range(rng.randint(0, 3)):
        parent = rng.choice(nodes)
        name = f"sw{s}"
        fwd = rng.choice(["cut-through", "store-and-forward"])
        lines.append(f'[[switch]]\nname = "{name}"\nforwarding = "{fwd}"\n')
        lines.append(link(rng, parent, name))
        nodes.append(name)
    eps = rng.randint(1, 4)
    for e in range(eps):
        parent = rng.choice(nodes)
        lines.append(f'[[endpoint]]\nname = "ep{e}"\nkind = "dma"\ntags = {rng.choice([4, 16, 32, 256])}\n')
        lines.append(link(rng, parent, f"ep{e}"))
        d = rng.choice(["read", "write", "both"])
        lines.append(
            f'[[workload]]\nname = "w{e}"\nkind = "dma"\nendpoint = "ep{e}"\ndirection = "{d}"\n'
            f'transfer_size = "{rng.choice(["4KiB", "16KiB", "64KiB"])}"\noutstanding = {rng.choice([1, 2, 4, 8])}\n'
        )
    return "".join(lines)


def compare(text):
    des = run(load_scenario(text))
    fl = json.loads(_core.run_scenario(load_scenario(text, values={"simulation.engine": "fluid"}), None, None)[0])
    out = []
    for d, f in zip(des.flows, fl["flows"], strict=True):
        if d["throughput_gbps"] <= 0:
            continue
        err = (f["throughput_gbps"] - d["throughput_gbps"]) / d["throughput_gbps"]
        tol = 0.05 if d["bottleneck"]["kind"] in WINDOW_KINDS else 0.02
        out.append((d["name"], err, tol, d["bottleneck"]["kind"], f["bottleneck"]["kind"]))
    return out


if __name__ == "__main__":
    n = int(sys.argv[1])
    bad = 0
    errs = []
    for seed in range(n):
        rng = random.Random(seed)
        text = fabric(rng)
        try:
            res = compare(text)
        except Exception as e:
            print(seed, "ERR", str(e)[:150])
            continue
        for name, err, tol, dk, fk in res:
            errs.append(abs(err))
            if abs(err) > tol:
                bad += 1
                print(f"seed {seed} {name}: {err:+.2%} (tol {tol:.0%}) des={dk} fluid={fk}")
    errs.sort()
    print("flows", len(errs), "bad", bad, "median", errs[len(errs) // 2] if errs else None)
