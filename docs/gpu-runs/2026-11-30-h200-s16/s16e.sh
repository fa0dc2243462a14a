#!/bin/bash
# Session 16, last call: the whole draw of seed 2026 (64 problems) on the session's final
# tree — the einsum path, the drawn example, and the drawn example after Suggest ▸ Apply
# (regions as hints, the key chunk's floor), beside torch's baselines in the same call.
set -u
O=${OUT:-/tmp/s16e}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 CASE_TIMEOUT=40 BUDGET=${BUDGET:-470}
  OUT=$O/u timeout 530 bench/gpu/user-path --seed 2026 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -7 $O/u/table.md
