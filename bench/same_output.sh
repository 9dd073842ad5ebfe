#!/usr/bin/env bash
# Captures what a refactor must leave unchanged, for a before/after comparison:
# `tlpsim validate --format json`, `tlpsim run --format json` of every TOML scenario the
# repository ships (examples, gallery, test scenarios) and the engine bench scenario at
# 2 ms, each with `wall_s` removed.
#
#   bench/same_output.sh /tmp/before          # on the old build
#   bench/same_output.sh /tmp/after           # on the new build
#   bench/same_output.sh --compare /tmp/before /tmp/after   # silent when identical
#
# Uses the `python` on PATH with tlpsim importable (the project's venv). About a minute on
# two cores.
set -euo pipefail
if [ "${1:-}" = "--compare" ]; then
  status=0
  for f in "$2"/*.json; do
    b=$(basename "$f")
    if ! cmp -s "$f" "$3/$b"; then echo "differs: $b"; status=1; fi
  done
  exit $status
fi
out="$1"
mkdir -p "$out"
cd "$(dirname "$0")/.."
strip='
import json, sys
text = sys.stdin.read()
try:
    value = json.loads(text)
except ValueError:
    print(text, end=""); sys.exit()
def strip(o):
    if isinstance(o, dict):
        o.pop("wall_s", None); [strip(x) for x in o.values()]
    elif isinstance(o, list):
        [strip(x) for x in o]
strip(value); print(json.dumps(value, indent=0))'
python -m tlpsim.cli validate --format json 2>&1 | python -c "$strip" > "$out/validate.json" &
for f in $(git ls-files '*.toml' | grep -v -e Cargo.toml -e pyproject.toml); do
  timeout 120 python -m tlpsim.cli run "$f" --format json 2>&1 | python -c "$strip" > "$out/$(echo "$f" | tr / _).json" || true
done
bench=$(mktemp --suffix=.toml)
python - bench/engine.py 2ms > "$bench" <<'PY'
import re, sys
src = open(sys.argv[1]).read()
print(re.search(r'SCENARIO = """(.*?)"""', src, re.S).group(1).format(duration=sys.argv[2]))
PY
python -m tlpsim.cli run "$bench" --format json 2>&1 | python -c "$strip" > "$out/bench.json"
rm -f "$bench"
wait
