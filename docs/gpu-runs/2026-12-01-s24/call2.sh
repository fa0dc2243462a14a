#!/bin/bash
# Session 24 call 2: is mma.sync slow on the H200, or its narrow pieces? The tiled matmul
# example on mma.sync (blocks 96 columns wide: no wgmma), aligned (16-byte pieces) against
# rows 8 or 4 bytes apart read in place (NAPKIN_GEMM_IN_PLACE=1) or copied first (=0).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=.gpu/bin/napkin-cli
f=data/examples/matmul-tiled.napkin
one () {  # label, env value, args...
  local label=$1 v=$2; shift 2
  NAPKIN_GEMM_IN_PLACE=$v timeout 120 $cli run $f --json --model h200 --repeats 20 "$@" > /tmp/r.json 2>/tmp/r.err
  python3 - "$label" <<'PY'
import json, sys
try: r = json.load(open("/tmp/r.json"))
except Exception: print("| %s | failed | %s |" % (sys.argv[1], open("/tmp/r.err").read()[-200:].replace("\n", " "))); sys.exit()
t = (r.get("time_ms") or {}).get("median"); p = (r.get("prediction") or {}).get("time_ms"); e = r.get("error") or {}
print("| %s | %s | %s | %s |" % (sys.argv[1], t, p, e.get("max_rel")))
PY
}
echo "| case | ms | predicted | max rel |"
one "4096³ wgmma 128×128×64" 0
one "4096³ mma 128×96×64 aligned" 0 --tile block.n=parallel:96
one "4096³ mma 128×160×64 aligned" 0 --tile block.n=parallel:160
one "4096×4096×4100 mma A 8-byte pieces" 1 --tile block.n=parallel:96 --axis k=4100
one "4096×4096×4100 mma A copied" 0 --tile block.n=parallel:96 --axis k=4100
one "4096×4100×4096 mma B 8-byte pieces" 1 --tile block.n=parallel:96 --axis n=4100
one "16×8656×8672 mma aligned" 0 --tile block.n=parallel:96 --axis m=16 --axis n=8656 --axis k=8672
one "16×8650×8672 mma B 4-byte pieces" 1 --tile block.n=parallel:96 --axis m=16 --axis n=8650 --axis k=8672
one "16×8652×8672 mma B 8-byte pieces" 1 --tile block.n=parallel:96 --axis m=16 --axis n=8652 --axis k=8672
one "16×8656×8672 wgmma aligned" 0 --axis m=16 --axis n=8656 --axis k=8672
