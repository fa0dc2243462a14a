#!/bin/bash
# Session 22, call 1: the user's-path cases outside 1.5× of their prediction, with each
# kernel's own time (the runner's per-kernel table), on the session's tree: a bias over N in
# the GEMM's registers (TMA store kept), persistent attention with one K/V stage at d 256,
# and A/B runs of both.
set -u
O=${OUT:-/tmp/s22c1}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=140
  ONLY="attn-decode-22-3x4x1x27160x192 attn-decode-8-4x16x4x37971x128 attn-cross-61-1x64x1204x77x256 matmul-at-51-8770x512x128 bias-gelu-29-14944x2048x256 swiglu-50-8192x16384x128 attn-decode-44-2x4x16x25356x32" \
  OUT=$O/u2026 timeout 160 bench/gpu/user-path --seed 2026 --cases 64 > $O/u2026.log 2>&1 )
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=100
  ONLY="softmax-56-64x50257 attn-decode-20-2x1x1x14859x96 attn-decode-46-2x16x1x51459x256 matmul-at-33-2x128x2048 bmm-12-48x16x315x32 residual-51-128x32x1024 attn-cross-42-2x4x1463x300x96 attn-self-41-1x32x1024x1024x64" \
  OUT=$O/u26 timeout 120 bench/gpu/user-path --seed 26 --cases 64 > $O/u26.log 2>&1 )
rm -rf $O/u2026/work $O/u26/work
# A/B by hand: the einsum text imported, tuned, run with a variant
W=/tmp/s22w; rm -rf $W; mkdir -p $W
python3 bench/gpu/user-path.py --write $W --seed 2026 --cases 64 > /dev/null
ab () {  # label file [env...] -- [run flags...]
  local label=$1 f=$2; shift 2
  local envs=() flags=()
  while [ $# -gt 0 ] && [ "$1" != -- ]; do envs+=("$1"); shift; done
  [ $# -gt 0 ] && shift
  flags=("$@")
  echo "=== $label"
  env "${envs[@]}" timeout 60 $cli run $f --model h200 --repeats 20 --reference-repeats 0 --no-energy "${flags[@]}" 2>&1 \
    | grep -E "kernel |time |error |predicted |per kernel|^              " | head -14
}
c61=$W/attn-cross-61-1x64x1204x77x256
$cli import $c61.einsum -o $c61.napkin >/dev/null && $cli tune $c61.napkin --arch h200 --apply > /dev/null
ab "cross-61 tuned (persistent?)" $c61.napkin
ab "cross-61 q=32" $c61.napkin -- --tile attention1.q=32
ab "cross-61 q=32 no persistent" $c61.napkin NAPKIN_NO_PERSISTENT_ATTENTION=1 -- --tile attention1.q=32
ab "cross-61 q=16 no persistent" $c61.napkin NAPKIN_NO_PERSISTENT_ATTENTION=1 -- --tile attention1.q=16
bg=$W/bias-gelu-29-14944x2048x256
$cli import $bg.einsum -o $bg.napkin >/dev/null && $cli tune $bg.napkin --arch h200 --apply > /dev/null
ab "bias-gelu-29 bias in registers" $bg.napkin
ab "bias-gelu-29 staged" $bg.napkin NAPKIN_GEMM_STAGED_MAPS=1
sw=$W/swiglu-50-8192x16384x128
$cli import $sw.einsum -o $sw.napkin >/dev/null && $cli tune $sw.napkin --arch h200 --apply > /dev/null
ab "swiglu-50 tuned" $sw.napkin
for d in u2026 u26; do echo "== $d"; grep -E "^\| " $O/$d/table.md | cut -d'|' -f2-7 ; done
python3 - "$O" <<'PY'
import json, sys, os
for d in ("u2026", "u26"):
    p = os.path.join(sys.argv[1], d, "user-path.json")
    if not os.path.exists(p): continue
    for n, c in json.load(open(p))["cases"].items():
        print(n, "%.4f" % (c.get("time_ms") or {}).get("median", float("nan")), "pred %.4f" % (c.get("predicted_ms") or float("nan")))
        for k in c.get("per_kernel") or []:
            print("    %-36s %-18s pred %s meas %s" % tuple(str(x) for x in k))
PY
