#!/bin/bash
# Session 24 call 6: residual-33 of seed 2225 (7977 × 352 × 4096 + a residual, 0.78× matmul+add),
# the drawn example run at several block tiles: is 128 × 256 (512 columns for 352) the cause?
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
f=docs/gpu-runs/2026-12-01-s24/r33.napkin
echo "| tiles | ms | predicted | per kernel (pred→meas) |"
for t in "m=128 n=128" "m=128 n=192" "m=128 n=256" "m=256 n=128" "m=64 n=192" "m=64 n=128" "m=128 n=64" "m=64 n=256"; do
  set -- $t
  timeout 120 .gpu/bin/napkin-cli run $f --json --model h200 --repeats 30 --tile block.$1 --tile block.$2 > /tmp/r.json 2>/tmp/r.err
  python3 - "$t" <<'PY'
import json, sys
try: r = json.load(open("/tmp/r.json"))
except Exception: print("| %s | failed | %s |" % (sys.argv[1], open("/tmp/r.err").read()[-200:].replace("\n", " "))); sys.exit()
p = r.get("prediction") or {}
ks = "; ".join("%s %.4f→%s" % (k.get("kind"), k.get("predicted_ms") or 0, "%.4f" % k["measured_ms"] if k.get("measured_ms") else "-") for k in p.get("kernels") or [])
print("| %s | %.4f | %.4f | %s |" % (sys.argv[1], r["time_ms"]["median"], p.get("time_ms") or 0, ks))
PY
done
