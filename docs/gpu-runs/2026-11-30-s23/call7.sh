#!/bin/bash
# Session 23, call 7: the user's path on a draw no session has seen (seed 2225, 64
# problems, torch.compile baselines) on the session's final tree.
set -u
O=${OUT:-/tmp/s23c7}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=380
  OUT=$O/u timeout 420 bench/gpu/user-path --seed 2225 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -n 75 $O/u/table.md | cut -d'|' -f2-14
