#!/bin/bash
# Session 33, the last call: a fresh seed (2240, part 1 of 2) on this session's tree — the
# attention chain priced by its longest block under a mask, and the user's path now timing
# again, alternately, every case slower than its baseline (user-path.py --retime-baselines).
# As docs/gpu-runs/2026-12-01-s27/seed.sh, with what device time was left (BUDGET 330).
set -u
O=$OUT/s1; mkdir -p $O
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=330
  OUT=$O/u timeout 345 bench/gpu/user-path --seed 2240 --cases 64 --part 1/2 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs
grep -A12 "retiming" $O/u.log | head -14
grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
tar czf $OUT/s1.tgz -C $OUT s1 && rm -rf $O
