#!/bin/bash
# Session 28, call 3 (the final tree): causal attention in bands (the c 192 files: 16 heads of
# 2048, now one band), checked against fp32 and timed; then the user's path on the cases the
# model changes touch (persistent cross-attention, d 192, causal few-wave), baselines in the
# same call; everything tarred into one file ($OUT/call3.tgz: the device returns 8 files).
set -u
D=docs/gpu-runs/2026-12-01-s28
mkdir -p $OUT/c3
$D/run-files.sh $D/d192/*.napkin | tee $OUT/c3/d192-band.md
run () {  # SEED PART NAMES...
  local seed=$1 part=$2; shift 2
  ( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=170 ONLY="$*"
    OUT=$OUT/c3/u$seed-${part%/*} timeout 190 bench/gpu/user-path --seed $seed --cases 64 --part $part > /dev/null 2>&1 )
  rm -rf $OUT/c3/u$seed-${part%/*}/work $OUT/c3/u$seed-${part%/*}/archs
  grep -E "^\| [a-z]" $OUT/c3/u$seed-${part%/*}/table.md | cut -c1-260
}
run 2229 1/2 attn-cross-3-3x2x11549x77x32 attn-self-48-4x16x585x585x32 attn-self-60-1x8x1024x1024x32 attn-cross-1-1x16x1830x300x128
run 2229 2/2 attn-cross-6-4x4x16056x77x128 attn-self-62-2x4x4096x4096x192 attn-cross-63-1x16x3921x77x256 residual-34-128x1025x64
run 2230 1/2 attn-cross-24-3x16x9366x77x32 attn-self-3-2x128x4096x4096x256 attn-self-1-2x16x4096x4096x256 attn-self-28-4x4x4096x4096x128 attn-self-5-4x16x2979x2979x80
tar czf $OUT/call3.tgz -C $OUT c3 && rm -rf $OUT/c3
