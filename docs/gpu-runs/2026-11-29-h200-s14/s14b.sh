#!/bin/bash
# Session 14 call 2: seed 113's user's path (cross-1's balanced walk, the examples' tiles);
# the Llama-3-8B block with the SM clock and power sampled every 100 ms.
set -u
O=${OUT:-/tmp/s14b}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=200
  OUT=$O/u113 timeout 230 bench/gpu/user-path --seed 113 --cases 24 > $O/u113.log 2>&1 )
rm -rf $O/u113/work
tail -5 $O/u113/table.md
grep -E "^\| " $O/u113/table.md | awk -F'|' '{printf "%-40s %8s %8s %6s %8s %6s\n",$2,$5,$6,$7,$11,$12}'
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv,noheader -lms 100 > $O/clocks.csv 2>&1 &
smi=$!
timeout 200 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo llama3_8b_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
kill $smi
grep -E "^\| [a-z]|^  [a-z_0-9]+ +[a-z]+ " $O/zoo.log | head -30
python3 - $O/clocks.csv <<'PY'
import sys, collections
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l.count(",") >= 5]
print("samples", len(rows))
hist = collections.Counter()
for r in rows:
    try:
        sm = int(r[1].split()[0]); pw = float(r[3].split()[0])
    except Exception:
        continue
    hist[(sm // 100 * 100, int(pw // 100 * 100), r[5])] += 1
for k, v in sorted(hist.items()):
    print("sm %4d-%4d MHz  power %3d-%3d W  reasons %s: %d samples" % (k[0], k[0] + 99, k[1], k[1] + 99, k[2], v))
PY
rm -rf $O/zoo
