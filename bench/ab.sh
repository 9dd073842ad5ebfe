#!/usr/bin/env bash
# A/B timing of two builds of the `run` example on the engine bench scenario.
#
#   cargo build --release --example run && cp target/release/examples/run /tmp/run_new
#   bench/ab.sh /tmp/run_old /tmp/run_new [RUNS] [DURATION]
#
# Each of RUNS rounds (default 10) runs both binaries on bench/engine.py's scenario at
# DURATION of simulated time (default 20ms): first one after the other, then (where
# `taskset` and two cores exist) both at once, each pinned to its own core, the cores
# swapped every round. It prints each binary's best wall time and TLP hops per second from
# the sequential runs, and the median and quartiles of NEW's wall time over OLD's from the
# simultaneous pairs. On a shared VM single timings swing by tens of percent as the host's
# load changes; a pair run at the same moment sees the same host, so the paired ratio is
# the steadiest figure (on a 2-core VM its quartiles still span about +-5 %). Instruction
# counts are steadier still:
#   valgrind --tool=cachegrind --cache-sim=no BINARY SCENARIO
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs="${3:-10}"
duration="${4:-20ms}"
scenario="$(mktemp --suffix=.toml)"
out_a="$(mktemp)"
out_b="$(mktemp)"
trap 'rm -f "$scenario" "$out_a" "$out_b"' EXIT
python3 - "$here/engine.py" "$duration" > "$scenario" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
print(re.search(r'SCENARIO = """(.*?)"""', src, re.S).group(1).format(duration=sys.argv[2]))
PY
wall() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["wall_s"])' "$1"; }
for _ in $(seq "$runs"); do
  for bin in "$1" "$2"; do
    "$bin" "$scenario" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(sys.argv[1], d["wall_s"], d["tlp_hops"])' "$bin"
  done
done | sort -k1,1 -k2,2g | awk '!seen[$1]++ { printf "%s  best %.3f s  %.2f M TLP hops/s\n", $1, $2, $3 / $2 / 1e6 }'
if command -v taskset > /dev/null && [ "$(nproc)" -ge 2 ]; then
  for i in $(seq "$runs"); do
    ca=$((i % 2)); cb=$((1 - i % 2))
    taskset -c "$ca" "$1" "$scenario" > "$out_a" &
    taskset -c "$cb" "$2" "$scenario" > "$out_b" &
    wait
    echo "$(wall "$out_a") $(wall "$out_b")"
  done | python3 -c '
import statistics, sys
r = sorted(float(b) / float(a) for a, b in (line.split() for line in sys.stdin))
q = lambda f: r[min(len(r) - 1, int(f * len(r)))]
print(f"simultaneous pairs: NEW/OLD wall time median {statistics.median(r):.3f} (quartiles {q(0.25):.3f} .. {q(0.75):.3f}, {len(r)} pairs)")'
fi
