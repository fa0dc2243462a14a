#!/bin/bash
# Session 28, call 2: the d 192 key chunks (two shapes, chunks 64/80/96/112 and stages), then
# the user's path again on the seeds' cases whose einsum and drawn example differed by more
# than 10 % (after the persistent attention's per-tile term and the harness's retiming).
set -u
D=docs/gpu-runs/2026-12-01-s28
$D/run-files.sh $D/d192/*.napkin | tee $OUT/d192.md
run () {  # SEED PART NAMES...
  local seed=$1 part=$2; shift 2
  ( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=200 ONLY="$*"
    OUT=$OUT/u$seed-${part%/*} timeout 220 bench/gpu/user-path --seed $seed --cases 64 --part $part > /dev/null 2>&1 )
  rm -rf $OUT/u$seed-${part%/*}/work $OUT/u$seed-${part%/*}/archs
  grep -E "^\| attn|^\| layer" $OUT/u$seed-${part%/*}/table.md
}
run 2229 1/2 attn-cross-3-3x2x11549x77x32
run 2229 2/2 attn-cross-6-4x4x16056x77x128 attn-decode-41-4x8x1x20737x32 layernorm-59-64x64 attn-self-62-2x4x4096x4096x192
run 2230 1/2 attn-cross-24-3x16x9366x77x32 residual-32-12286x128x8192 bias-gelu-50-12265x4402x256 attn-cross-25-1x4x10242x1x128
