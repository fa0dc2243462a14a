#!/bin/bash
# Skinny products on CUDA cores (kernels/gemm-skinny.cu; docs/plan.md, "Skinny products on
# CUDA cores"): NAPKIN_GEMM_SKINNY=force (the CUDA-core kernel wherever M <= 16) against =0
# (the tensor-core path with its copies), each checked against fp32, torch in the same call.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
S=docs/gpu-runs/2026-12-01-s27/skinny
MODEL=h200 timeout 400 bench/gpu/ab-env NAPKIN_GEMM_SKINNY "${VALUES:-force 0}" $S/*.einsum > $O/ab.md 2>&1
timeout 100 python3 bench/gpu/einsum-torch.py $S/*.einsum > $O/torch.md 2>&1
cat $O/ab.md $O/torch.md
