#!/bin/bash
# Few-row products on the H200 (session 29): each drawn file of files/ (make.py) at K split
# 1, 2 and 4 (NAPKIN_GEMM_SPLIT, where the plan allows it), checked and timed, its prediction
# beside; then torch.matmul on each shape.   docs/gpu-runs/2026-12-01-s29/skinny/run.sh
# D=DIR SHAPES="M,N,K M,N,K ..." run the same over DIR/files and those shapes (session 30's
# midrows/run.sh).
set -u
D=${D:-docs/gpu-runs/2026-12-01-s29/skinny}
export SHAPES=${SHAPES:-"2,8192,14456 16,4096,4096 64,11008,4096 8,14336,4096 32,4096,14336"}
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$pack/bin/napkin-cli
tmp=$(mktemp -d)
echo "| file | split | plan | ms | predicted | meas/pred | max rel |"
for f in $D/files/*.napkin; do
  prev=""
  for s in 1 2 4; do
    plan=$(NAPKIN_GEMM_SPLIT=$s "$cli" plan "$f" --arch h200 | grep -o "blocks [0-9]*×[0-9]*\|split in [0-9]*\|[0-9] stages" | tr '\n' ' ')
    [ "$plan" = "$prev" ] && continue
    prev=$plan
    NAPKIN_GEMM_SPLIT=$s timeout 100 "$cli" run "$f" --json --model h200 --repeats 30 > $tmp/r.json 2>$tmp/r.err
    python3 - $tmp/r.json "$(basename $f .napkin)" "$s" "$plan" <<'PY'
import json, sys
try: r = json.load(open(sys.argv[1]))
except Exception: print("| %s | %s | %s | failed | | | |" % tuple(sys.argv[2:5])); sys.exit()
t = (r.get("time_ms") or {}).get("median"); p = (r.get("prediction") or {}).get("time_ms"); e = r.get("error") or {}
print("| %s | %s | %s | %s | %s | %s | %s |" % (sys.argv[2], sys.argv[3], sys.argv[4], "%.4f" % t if t else r.get("status"),
      "%.4f" % p if p else "-", "%.2f" % (t / p) if t and p else "-", "%.1e%s" % (e.get("max_rel") or 0, "" if e.get("ok", True) else " BAD")))
PY
  done
done
python3 - <<'PY'
import os, torch
shapes = [tuple(int(v) for v in s.split(",")) for s in os.environ["SHAPES"].split()]
print("\n| shape | torch kn ms | torch nk ms |")
for m, n, k in shapes:
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    row = []
    for w in (torch.randn(k, n, device="cuda", dtype=torch.bfloat16), torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()):
        for _ in range(5): x @ w
        ts = []
        for _ in range(30):
            a, b = torch.cuda.Event(True), torch.cuda.Event(True); a.record(); x @ w; b.record(); torch.cuda.synchronize(); ts.append(a.elapsed_time(b))
        ts.sort(); row.append("%.4f" % ts[len(ts) // 2])
    print("| %dx%dx%d | %s | %s |" % (m, n, k, row[0], row[1]))
PY
