#!/bin/bash
# Session 14 call 6: clocks and power while the Llama block runs for a few seconds,
# against its gate GEMM alone for as long; the board's power limit.
set -u
O=${OUT:-/tmp/s14f}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
C=$pack/bin/napkin-cli
nvidia-smi -q -d POWER | grep -i -E "limit|draw" | head -12
summ() {
python3 - "$1" <<'PY'
import sys, collections
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l.count(",") >= 4]
hist = collections.Counter()
for r in rows:
    try:
        sm = int(r[1].split()[0]); pw = float(r[3].split()[0])
    except Exception:
        continue
    if pw < 120: continue
    hist[(sm // 100 * 100, int(pw // 100 * 100), r[4][-2:])] += 1
print(" ".join("%d MHz/%d W/%s:%d" % (k[0], k[1], k[2], v) for k, v in sorted(hist.items())))
PY
}
for n in llama-block gate-silu; do
  nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 10 > $O/$n.csv 2>&1 &
  smi=$!
  timeout 120 $C run .gpu-ab/mlp14/$n.napkin --arch h200 --json --repeats 400 > $O/$n.json 2> $O/$n.err
  kill $smi
  python3 -c "
import json,sys; r=json.load(open('$O/$n.json')); t=r.get('time_ms') or {}
print('$n', r.get('status'), 'median', t.get('median'), 'min', t.get('min'), 'runs', t.get('runs') or t.get('repeats'))
print('  kernels', [(k.get('name'), round(k.get('time_ms') or -1, 4)) for k in r.get('kernels', []) if (k.get('time_ms') or 0) > 0.3])"
  summ $O/$n.csv
done
rm -f $O/*.json
