#!/bin/bash
# Session 14 call 3: strided softmax (over axis 0): lines of 16/32 B (the plan's narrowing
# for two blocks an SM) against 64 and 128 B (NAPKIN_ROWS_LINE_MIN).
set -u
O=${OUT:-/tmp/s14c}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
C=$pack/bin/napkin-cli
for f in .gpu-ab/rows14/*.napkin; do
  for line in 0 64 128; do
    n=$O/$(basename ${f%.napkin})-$line
    NAPKIN_ROWS_LINE_MIN=$line timeout 60 $C run $f --arch h200 --json --repeats 30 > $n.json 2> $n.err
    python3 - "$n" <<'PY'
import json, sys
n = sys.argv[1]
try:
    r = json.load(open(n + ".json"))
except Exception as e:
    print(n, "no json", open(n + ".err").read()[-300:]); sys.exit()
t = r.get("time_ms") or {}; e = r.get("error") or {}; p = r.get("prediction") or {}
print("%-26s %-6s rel %-8.2g ms %-8.4f pred %-8.4f %s" % (n.split("/")[-1], r.get("status"), e.get("max_rel") or -1,
      t.get("median") or -1, p.get("time_ms") or -1, [(k.get("grid"), k.get("threads")) for k in r.get("kernels", [])][:2]))
PY
  done
done
rm -f $O/*.json $O/*.err
