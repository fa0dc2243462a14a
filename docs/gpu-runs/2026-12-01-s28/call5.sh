#!/bin/bash
# Session 28, call 5: matrix-vector products as one-row GEMMs (wgmma, and the skinny
# CUDA-core kernel forced), each checked against fp32; linear attention imported from
# fast-transformers and tuned (elu, reciprocal, the three-operand einsum as two products).
set -u
D=docs/gpu-runs/2026-12-01-s28
bench/gpu/ab-env NAPKIN_GEMM_SKINNY "1 force" $D/mv/*.einsum | tee $OUT/mv.md
$D/run-files.sh $D/ab4/linear-attention-tuned.napkin | tee $OUT/la.md
