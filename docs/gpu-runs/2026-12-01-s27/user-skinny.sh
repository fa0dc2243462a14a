#!/bin/bash
# The user's path (einsum text, no region, tune --apply, run) on the three skinny products
# the earlier seeds left under 0.8x their baseline, now planned on CUDA cores
# (kernels/gemm-skinny.cu), beside their torch and torch.compile baselines.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 COMPILE_BUDGET=20 BUDGET=120
  OUT=$O/u1 ONLY="residual-52-8x13206x4594" timeout 130 bench/gpu/user-path --seed 2228 --cases 64 > $O/u1.log 2>&1
  OUT=$O/u2 ONLY="bmm-49-39x2x1518x880" timeout 130 bench/gpu/user-path --seed 2227 --cases 64 > $O/u2.log 2>&1
  OUT=$O/u3 ONLY="residual-34-16x8650x8676" timeout 130 bench/gpu/user-path --seed 2224 --cases 64 > $O/u3.log 2>&1 )
for u in u1 u2 u3; do rm -rf $O/$u/work $O/$u/archs $O/$u/user-path.log; done
grep -hE "^\| (bmm|residual)" $O/u1/table.md $O/u2/table.md $O/u3/table.md
