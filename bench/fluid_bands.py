"""The fluid engine's 90 % bands against the simulator, per kind of estimate.

    python bench/fluid_random.py 1700 --start 100 --duration 1ms --recheck 10ms --errors cal.jsonl
    python bench/fluid_random.py 2100 --start 1900 --duration 1ms --recheck 10ms --errors new.jsonl
    python bench/fluid_bands.py cal.jsonl new.jsonl

Each flow's residual is |ln(simulator / fluid)|. A kind's band (`queue`, `pool`, ...; `none`
for the flows without estimates) is the order statistic ceil(0.9 (n + 1)) of the n residuals
of the calibration file's flows with that kind (split conformal, as the pcie-bench bands are:
a new flow of the kind, exchangeable with those, falls inside with probability at least
90 %); a kind with fewer than 20 flows takes the band of every flow. A flow's band is the
widest of its kinds'. Prints the table as `fluid/estimates.rs` keeps it, then, for each
other file, the share of its flows inside their bands, per kind too, and the median
half-width.
"""

import argparse
import json
import math

#: Fewest flows a kind needs for a band of its own.
MIN_KIND = 20


def load(path):
    """The flows of an `--errors` file."""
    with open(path) as f:
        return [json.loads(line) for line in f]


def residual(flow):
    """|ln(simulator / fluid)| of a flow (infinite where the fluid engine gives it nothing)."""
    return abs(math.log(1 + flow["error"])) if flow["error"] > -1 else math.inf


def order_90(values):
    """The split conformal 90 % order statistic of `values`."""
    values = sorted(values)
    k = math.ceil(0.9 * (len(values) + 1))
    return values[min(k, len(values)) - 1]


def kinds_of(flow):
    """A flow's kinds, `none` for one without estimates."""
    return flow["kinds"] or ["none"]


def bands(flows):
    """Each kind's band half-width (a residual), and the pooled one under `all`."""
    out = {"all": order_90([residual(f) for f in flows])}
    for kind in sorted({k for f in flows for k in kinds_of(f)}):
        mine = [residual(f) for f in flows if kind in kinds_of(f)]
        out[kind] = order_90(mine) if len(mine) >= MIN_KIND else out["all"]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("calibration", help="the --errors file the bands are fitted on")
    ap.add_argument("others", nargs="*", help="--errors files to measure their coverage on")
    args = ap.parse_args()
    cal = load(args.calibration)
    table = bands(cal)
    for kind, a in table.items():
        n = sum(kind in kinds_of(f) for f in cal) if kind != "all" else len(cal)
        print(f'    ("{kind}", {a:.4g}), // {n} flows')
    for path in [args.calibration, *args.others]:
        flows = load(path)
        width = [max(table.get(k, table["all"]) for k in kinds_of(f)) for f in flows]
        inside = [residual(f) <= w * (1 + 1e-9) for f, w in zip(flows, width, strict=True)]
        print(f"{path}: {sum(inside)} of {len(flows)} inside ({sum(inside) / len(flows):.1%}), "
              f"median half-width {sorted(width)[len(width) // 2]:.2%}")  # fmt: skip
        for kind in sorted({k for f in flows for k in kinds_of(f)}):
            mine = [i for f, i in zip(flows, inside, strict=True) if kind in kinds_of(f)]
            print(f"  {kind}: {sum(mine)} of {len(mine)} ({sum(mine) / len(mine):.1%})")


if __name__ == "__main__":
    main()
