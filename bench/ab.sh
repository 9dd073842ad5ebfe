#!/usr/bin/env bash
# Interleaved A/B timing of two builds of the `run` example on the engine bench scenario.
#
#   cargo build --release --example run && cp target/release/examples/run /tmp/run_new
#   bench/ab.sh /tmp/run_old /tmp/run_new [RUNS] [DURATION]
#
# Runs each binary RUNS times (default 10), alternating, on bench/engine.py's scenario at
# DURATION of simulated time (default 20ms), and prints each binary's best wall time and TLP
# hops per second. On a shared VM single timings swing by tens of percent; the best of
# interleaved runs is the figure to compare. Instruction counts are steadier still:
#   valgrind --tool=cachegrind --cache-sim=no BINARY SCENARIO
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs="${3:-10}"
duration="${4:-20ms}"
scenario="$(mktemp --suffix=.toml)"
trap 'rm -f "$scenario"' EXIT
python3 - "$here/engine.py" "$duration" > "$scenario" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
print(re.search(r'SCENARIO = """(.*?)"""', src, re.S).group(1).format(duration=sys.argv[2]))
PY
for _ in $(seq "$runs"); do
  for bin in "$1" "$2"; do
    "$bin" "$scenario" | python3 -c 'import json, sys; d = json.load(sys.stdin); print(sys.argv[1], d["wall_s"], d["tlp_hops"])' "$bin"
  done
done | sort -k1,1 -k2,2g | awk '!seen[$1]++ { printf "%s  best %.3f s  %.2f M TLP hops/s\n", $1, $2, $3 / $2 / 1e6 }'
