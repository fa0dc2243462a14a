#!/bin/bash
# Session 22, call 4: the user's path on a draw the session's model was not fitted on
# (seed 2223, 64 problems, torch.compile baselines), then seed 2222's cases the fit moved.
set -u
O=${OUT:-/tmp/s22c4}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=400
  OUT=$O/u timeout 450 bench/gpu/user-path --seed 2223 --cases 64 > $O/u.log 2>&1 )
( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=80
  ONLY="attn-cross-27-1x64x14611x1x128 softmax-58-1024x19418 rmsnorm-18-512x2048" \
  OUT=$O/u2222 timeout 100 bench/gpu/user-path --seed 2222 --cases 64 > $O/u2222.log 2>&1 )
rm -rf $O/u/work $O/u2222/work
tail -n 75 $O/u/table.md | cut -d'|' -f2-14
grep -E "^\| " $O/u2222/table.md | cut -d'|' -f2-12
