#!/bin/bash
# Session 14 call 1: seed 26's whole user's path (einsum + drawn example) after the
# persistent walk's balance and the bundled examples' tiles in the builders.
set -u
O=${OUT:-/tmp/s14a}; mkdir -p "$O"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=530
  OUT=$O/u26 timeout 570 bench/gpu/user-path --seed 26 --cases 64 > $O/u26.log 2>&1 )
rm -rf $O/u26/work
tail -5 $O/u26/table.md
grep -E "^\| " $O/u26/table.md | awk -F'|' '{print $2,$6,$10,$11,$12}' | head -70
