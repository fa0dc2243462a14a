#!/bin/bash
# Runs each .napkin file given (regions as drawn) with `napkin-cli run` on the GPU: checked
# against fp32, timed (median of 20), beside the model's prediction; one table row a file.
#   docs/gpu-runs/2026-12-01-s28/run-files.sh FILE.napkin...   (repository root, .gpu packed)
set -u
pack=$PWD/${NAPKIN_PACK:-.gpu}
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$pack/bin/napkin-cli
tmp=$(mktemp -d)
echo "| file | ms | predicted | meas/pred | max rel | plan |"
for f in "$@"; do
  timeout 200 "$cli" run "$f" --json --model "${MODEL:-h200}" --repeats 20 > "$tmp/r.json" 2> "$tmp/r.err"
  plan=$("$cli" plan "$f" --arch "${MODEL:-h200}" | grep -o "[0-9]* query rows a block\|persistent: each block walks about [0-9]* of the [0-9]* tiles\|grid [0-9]* × [0-9]*" | tr '\n' ';')
  python3 - "$tmp/r.json" "$(basename "$f" .napkin)" "$plan" <<'PY'
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception:
    print("| %s | failed | | | | |" % sys.argv[2]); sys.exit(0)
t = (r.get("time_ms") or {}).get("median")
p = (r.get("prediction") or {}).get("time_ms")
e = r.get("error") or {}
print("| %s | %s | %s | %s | %s%s | %s |" % (sys.argv[2], "%.4f" % t if t else r.get("status"), "%.4f" % p if p else "-",
      "%.2f" % (t / p) if t and p else "-", "%.1e" % e["max_rel"] if e.get("max_rel") is not None else "-",
      "" if e.get("ok", True) else " BAD", sys.argv[3]))
PY
done
