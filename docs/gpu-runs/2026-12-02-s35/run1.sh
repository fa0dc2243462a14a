#!/bin/bash
# Session 35, call 1: (a) seed 2242's wrong case (a window over one key) on the fixed rows
# kernels by the user's path; (b) the skinny-product decision with each wave's fixed costs
# in the tensor side's estimate: A/B against the copy + wgmma on the three products it
# moves; (c) cross-attention's 64- against 128-query blocks at head dims 64–256 (keys
# 77–1024), measured against their prices; (d) seed 2243 part 1.
set -u
D=docs/gpu-runs/2026-12-02-s35
S=docs/gpu-runs/2026-12-01-s27/seed.sh
bash docs/gpu-runs/2026-12-02-s34/run5.sh 2>&1 | tail -8
echo "== skinny"
bench/gpu/ab-env NAPKIN_GEMM_SKINNY "0 1" $D/skinny/*.einsum
echo "== cross-attention q tiles"
bench/gpu/ab-tile "attention1.q=64;attention1.q=128" $D/xattn/*.einsum
echo "== seed 2243 part 1"
SEED=2243 PART=1/2 OUT=$OUT/s1 bash $S > $OUT/seed1.log 2>&1
cp $OUT/s1/u/table.md $OUT/table-2243-p1.md 2>/dev/null; cp $OUT/s1/u/user-path.json $OUT/user-path-2243-p1.json 2>/dev/null
rm -rf $OUT/s1; tail -8 $OUT/seed1.log
