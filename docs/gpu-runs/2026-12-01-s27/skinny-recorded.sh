#!/bin/bash
# The recorded user's-path problems (seeds 2026, 2222-2224, 2227, 2228) whose plan now
# takes the skinny product on CUDA cores: the new plan (=1) against the old (=0), each
# checked against fp32, torch in the same call.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
S=docs/gpu-runs/2026-12-01-s27/skinny-recorded
MODEL=h200 timeout 300 bench/gpu/ab-env NAPKIN_GEMM_SKINNY "1 0" $S/*.einsum > $O/ab.md 2>&1
timeout 100 python3 bench/gpu/einsum-torch.py $S/*.einsum > $O/torch.md 2>&1
cut -c1-150 $O/ab.md; cat $O/torch.md
