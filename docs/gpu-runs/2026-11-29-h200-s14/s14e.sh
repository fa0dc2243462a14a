#!/bin/bash
# Session 14 call 5: the Llama-3-8B block's derived diagram run by napkin-cli itself (its
# own inputs) per kernel, against its MLP GEMMs as their own diagrams, clocks sampled.
set -u
O=${OUT:-/tmp/s14e}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
C=$pack/bin/napkin-cli
show() {
python3 - "$1" <<'PY'
import json, sys
n = sys.argv[1]
try:
    r = json.load(open(n + ".json"))
except Exception as e:
    print(n, "no json", open(n + ".err").read()[-600:]); sys.exit()
t = r.get("time_ms") or {}; e = r.get("error") or {}; p = r.get("prediction") or {}
print("%-14s %-6s rel %-8.2g ms %-8.4f pred %-8.4f" % (n.split("/")[-1], r.get("status"), e.get("max_rel") or -1, t.get("median") or -1, p.get("time_ms") or -1))
for k in r.get("kernels", []):
    print("   %-14s %-10s grid %-6s %8.4f ms  pred %s" % (k.get("name"), k.get("skeleton"), k.get("grid"), k.get("time_ms") or -1, k.get("predicted_ms")))
PY
}
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,clocks_throttle_reasons.active --format=csv,noheader -lms 20 > $O/clocks.csv 2>&1 &
smi=$!
timeout 200 $C run .gpu-ab/mlp14/llama-block.napkin --arch h200 --json --repeats 20 > $O/llama.json 2> $O/llama.err; show $O/llama
for n in gate-silu up-mul down-res; do timeout 60 $C run .gpu-ab/mlp14/$n.napkin --arch h200 --json --repeats 20 > $O/$n.json 2> $O/$n.err; show $O/$n; done
kill $smi
python3 - $O/clocks.csv <<'PY'
import sys, collections
rows = [l.strip().split(", ") for l in open(sys.argv[1]) if l.count(",") >= 4]
hist = collections.Counter()
for r in rows:
    try:
        sm = int(r[1].split()[0]); mem = int(r[2].split()[0]); pw = float(r[3].split()[0])
    except Exception:
        continue
    if pw < 150: continue
    hist[(sm // 50 * 50, mem, int(pw // 100 * 100), r[4])] += 1
for k, v in sorted(hist.items()):
    print("sm %4d MHz mem %d  power %3d W  reasons %s: %d" % (k[0], k[1], k[2], k[3], v))
PY
rm -f $O/*.json
