#!/bin/bash
# The final tree's skinny products: both sets (session 26's and this session's skinny
# einsum files, and the recorded user's-path problems the new plan moves onto CUDA
# cores), the plan as it decides (=1) against the tensor-core path (=0), torch beside.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
MODEL=h200 timeout 500 bench/gpu/ab-env NAPKIN_GEMM_SKINNY "1 0" docs/gpu-runs/2026-12-01-s27/skinny-recorded/*.einsum \
  docs/gpu-runs/2026-12-01-s27/skinny/*.einsum > $O/ab.md 2>&1
cut -c1-150 $O/ab.md
