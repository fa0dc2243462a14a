#!/bin/bash
# Session 16, after the ping-pong bound: the two short-K products the model had priced
# at half their time (swiglu-50 now derives two plain GEMMs and an element-wise SiLU·mul),
# on the user's path with the drawn examples and baselines.
set -u
O=${OUT:-/tmp/s16f}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 CASE_TIMEOUT=40 BUDGET=150
  ONLY="swiglu-50-8192x16384x128 bias-gelu-29-14944x2048x256 swiglu-11-4096x128x13818" \
  OUT=$O/u timeout 170 bench/gpu/user-path --seed 2026 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
grep -E "^\| (swiglu|bias)" $O/u/table.md | cut -d'|' -f2-12
tail -6 $O/u/table.md
