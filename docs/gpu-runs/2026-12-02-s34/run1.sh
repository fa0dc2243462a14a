#!/bin/bash
# Session 34, call 1: the 1-D TMA row-store microtest, then seed 2240 part 2 on this tree.
set -u
export PATH=/usr/local/cuda/bin:$PATH
nvcc -arch=sm_90a -O2 -o /tmp/t bench/gpu/tma-row-store.cu -lcuda > $OUT/tma.log 2>&1 && timeout 60 /tmp/t >> $OUT/tma.log 2>&1
echo "tma rc=$?" >> $OUT/tma.log
cat $OUT/tma.log
mkdir -p $OUT/s2
SEED=2240 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh > $OUT/seed2.log 2>&1
cp $OUT/s2/u/table.md $OUT/table-2240-p2.md 2>/dev/null
tar czf $OUT/s2.tgz -C $OUT s2 && rm -rf $OUT/s2; tail -8 $OUT/seed2.log
