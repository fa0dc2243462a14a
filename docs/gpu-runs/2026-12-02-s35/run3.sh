#!/bin/bash
# Session 35, call 3: (a) softmax over a long first axis with few columns (seed 2243's
# 45887 × 256 ran 2.2× its price, 0.058 ms, with the axis split in 132 chunks): the split
# against the whole axis (NAPKIN_ROWS_SPLIT=0) over seven shapes; (b) seed 2244 part 1 on
# this tree.
set -u
D=docs/gpu-runs/2026-12-02-s35
S=docs/gpu-runs/2026-12-01-s27/seed.sh
echo "== strided split"
bench/gpu/ab-env NAPKIN_ROWS_SPLIT "0 1" $D/strided/*.einsum
echo "== seed 2244 part 1"
SEED=2244 PART=1/2 OUT=$OUT/s1 bash $S > $OUT/seed1.log 2>&1
cp $OUT/s1/u/table.md $OUT/table-2244-p1.md 2>/dev/null; cp $OUT/s1/u/user-path.json $OUT/user-path-2244-p1.json 2>/dev/null
rm -rf $OUT/s1; tail -8 $OUT/seed1.log
