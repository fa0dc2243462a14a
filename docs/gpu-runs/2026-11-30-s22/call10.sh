#!/bin/bash
# Session 22, call 10 (the last of the budget): the final tree on a draw no session has seen
# (seed 2224, the first 16 problems; eager baselines: a first try with 32 and torch.compile spent its budget on the baselines).
set -u
O=${OUT:-/tmp/s22c10}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=110
  OUT=$O/u timeout 120 bench/gpu/user-path --seed 2224 --cases 16 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -n 42 $O/u/table.md | cut -d'|' -f2-12
