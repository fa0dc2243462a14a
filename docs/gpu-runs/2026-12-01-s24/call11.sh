#!/bin/bash
# Session 24 call 11: attention over one key on the user's path, now that a product over
# an axis of size 1 is an element-wise kernel (P·V) and derive no longer leaves an
# attention's P·V alone outside regions (where the plan would fuse the whole attention).
set -u
O=${OUT:-/tmp/s24c11}; mkdir -p "$O"
run () {  # seed names...
  local seed=$1; shift
  ( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=100 ONLY="$*"
    OUT=$O/$seed timeout 110 bench/gpu/user-path --seed $seed --cases 64 > $O/$seed.log 2>&1 )
  grep -E "^\| attn" $O/$seed/table.md | cut -d'|' -f2-14
  python3 - $O/$seed/user-path.json <<'PY'
import json, sys
for n, r in json.load(open(sys.argv[1]))["cases"].items():
    print("  ", n, [(k[0], k[1], round(k[2] * 1e3, 1), round(k[3] * 1e3, 1) if k[3] else None) for k in r.get("per_kernel") or []])
PY
  rm -rf $O/$seed/work $O/$seed/archs
}
run 2222 attn-cross-27-1x64x14611x1x128
run 2224 attn-cross-26-3x32x10291x1x128
run 2225 attn-cross-1-4x16x8565x1x192
