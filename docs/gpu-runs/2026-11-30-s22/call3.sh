#!/bin/bash
# Session 22, call 3: the user's path on a draw no session has seen (seed 2222, 64
# problems, torch.compile baselines), on the session's tree.
set -u
O=${OUT:-/tmp/s22c3}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=500
  OUT=$O/u timeout 560 bench/gpu/user-path --seed 2222 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -n 75 $O/u/table.md | cut -d'|' -f2-14
