#!/bin/bash
# Session 14 call 11: backward diagrams with the softmax recomputed and stored, run and
# checked against the fp32 reference on the GPU.
set -u
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
for f in .gpu-ab/grad14/*.napkin; do
  timeout 80 $pack/bin/napkin-cli run $f --arch h200 --json --repeats 10 --no-energy > /tmp/r.json 2> /tmp/r.err
  python3 - "$f" <<'PY'
import json, sys
try:
    r = json.load(open("/tmp/r.json"))
except Exception:
    print(sys.argv[1], "no json", open("/tmp/r.err").read()[-400:]); sys.exit()
e = r.get("error") or {}; t = r.get("time_ms") or {}; p = r.get("prediction") or {}
print("%-32s %-6s rel %-9.2g ms %-8.4f pred %-8.4f kernels %d %s" % (sys.argv[1].split("/")[-1], r.get("status"), e.get("max_rel") or -1,
      t.get("median") or -1, p.get("time_ms") or -1, len(r.get("kernels") or []), (r.get("message") or "")[:200]))
PY
done
