#!/bin/bash
# (Ran a tree with NAPKIN_GEMM_IN_PLACE and cp.async pieces of 4 and 8 bytes in
# kernels/gemm-sm80.cu, reverted after this call: docs/perf-notes.md, session 24.)
# Session 24 call 1: operands whose rows are 4 or 8 bytes apart (not 16) read in place by
# cp.async pieces on mma.sync against copied to aligned rows first (then wgmma), A/B per
# shape (NAPKIN_GEMM_IN_PLACE=1 / 0), then the user's path on the seed-2224 cases the
# change touches (checked, beside the torch baselines).
set -u
O=${OUT:-/tmp/s24c1}; mkdir -p "$O"
D=docs/gpu-runs/2026-12-01-s24
timeout 330 bench/gpu/ab-env NAPKIN_GEMM_IN_PLACE "1 0" $D/ab/*.einsum 2>&1 | tee $O/ab.md
( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=200
  ONLY="bias-gelu-54-256x256x8270 matmul-9-15270x512x15434 swiglu-49-16x2048x7700 residual-34-16x8650x8676" \
  OUT=$O/u timeout 230 bench/gpu/user-path --seed 2224 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^\| |^GPU|ratio|measured|einsum" $O/u/table.md | cut -d'|' -f2-14
