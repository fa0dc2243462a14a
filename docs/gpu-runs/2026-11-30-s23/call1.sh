#!/bin/bash
# Session 23, call 1: the user's path on session 22's next draw (seed 2224, 64 problems,
# torch.compile baselines) on this session's tree: two-stage ping-pong attention priced,
# the GQA examples drawn with 3 stages.
set -u
O=${OUT:-/tmp/s23c1}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=440
  OUT=$O/u timeout 500 bench/gpu/user-path --seed 2224 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -n 75 $O/u/table.md | cut -d'|' -f2-14
