#!/bin/bash
# The next device call (written at the end of session 22): the user's path on a draw no
# session has seen, on session 22's final tree (its rows rule and prices were measured case
# by case, not over a whole draw), then session 21's causal-GQA backward diagnosis.
set -u
O=${OUT:-/tmp/s23}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=400
  OUT=$O/u timeout 450 bench/gpu/user-path --seed 2224 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -n 8 $O/u/table.md
OUT=$O/bwd bash docs/gpu-runs/2026-11-30-s21/next.sh
