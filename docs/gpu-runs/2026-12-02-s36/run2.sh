#!/bin/bash
# Session 36, call 2: seed 2244's second half by the user's path on this tree.
set -u
SEED=2244 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh
grep -E "^\| " $OUT/s2/u/table.md > $OUT/table2.md 2>/dev/null
rm -f $OUT/s2/u/retime-*.json
