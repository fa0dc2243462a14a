#!/bin/bash
# Session 14 call 4: the Llama MLP's GEMMs as their own diagrams (einsum, tune --apply,
# napkin-cli run) beside torch (cuBLAS; torch.compile for the fused maps); the strided
# softmax cases of both draws through the user's path.
set -u
O=${OUT:-/tmp/s14d}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
C=$pack/bin/napkin-cli
for f in .gpu-ab/mlp14/*.napkin; do
  n=$O/$(basename ${f%.napkin})
  for env in "" "NAPKIN_GEMM_STAGED_MAPS=1"; do
    env $env timeout 60 $C run $f --arch h200 --json --repeats 30 > $n.json 2> $n.err
    python3 - "$n" "$env" <<'PY'
import json, sys
n = sys.argv[1]
try:
    r = json.load(open(n + ".json"))
except Exception as e:
    print(n, "no json", open(n + ".err").read()[-300:]); sys.exit()
t = r.get("time_ms") or {}; e = r.get("error") or {}; p = r.get("prediction") or {}
print("napkin %-10s %-24s %-6s rel %-8.2g ms %-8.4f min %-8.4f pred %-8.4f" % (n.split("/")[-1], sys.argv[2], r.get("status"), e.get("max_rel") or -1,
      t.get("median") or -1, t.get("min") or -1, p.get("time_ms") or -1))
PY
  done
done
timeout 200 python3 .gpu-ab/mlp14/torch_base.py 2>&1 | grep -v Warning | tail -8
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=120
  OUT=$O/u113 ONLY="softmax0-17-36503x12736 softmax0-19-5807x50257" timeout 140 bench/gpu/user-path --seed 113 --cases 24 > $O/u113.log 2>&1
  OUT=$O/u26 ONLY="softmax0-35-64x128256 softmax0-37-256x50257 softmax0-58-8192x50257" timeout 140 bench/gpu/user-path --seed 26 --cases 64 > $O/u26.log 2>&1 )
for x in u113 u26; do grep -E "^\| soft" $O/$x/table.md | awk -F'|' '{printf "%-36s %8s %8s %6s %s %s\n",$2,$5,$6,$7,$9,$10}'; rm -rf $O/$x/work; done
rm -f $O/*.json $O/*.err
