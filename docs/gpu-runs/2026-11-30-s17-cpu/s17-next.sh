#!/bin/bash
# Session 17 had no device time: what its CPU work needs measured, in one call of about
# 9 minutes on one H200 (pack first here: build-aux/gpu-check --pack _build-fast; carry .gpu).
#  1. the examples and templates (gpu-check), the new plans included;
#  2. the backward diagrams the plan now runs without generic kernels: result copies
#     (torch_mha, BART), tensor masks in the element-wise kernel (SDPA bool mask), g·s copies
#     (Llama SDPA GQA), against torch.autograd (bench/gpu/grad-check);
#  3. the GEMM refit: the short-K unaligned products the model had priced at 0.65–0.74×
#     their time, and the user's path cases left outside 1.5× (swiglu-50 derives fused again).
set -u
O=${OUT:-/tmp/s17}; mkdir -p "$O"
( timeout 200 build-aux/gpu-check > "$O/gpu-check.log" 2>&1 ); tail -25 "$O/gpu-check.log"
( export MODEL=h200 BUDGET=200
  OUT=$O/grad timeout 230 bench/gpu/grad-check \
    --cases causal-attention,zoo-gpt2-block,zoo-llama-attention,zoo-torch-mha,zoo-sdpa-bool-mask,zoo-bart-attention,zoo-llama-sdpa-gqa \
    > "$O/grad.log" 2>&1 ); tail -14 "$O/grad/table.md"
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=100
  ONLY="swiglu-50-8192x16384x128 bias-gelu-29-14944x2048x256 matmul-at-51-8770x512x128 matmul-53-13424x11143x1024 attn-decode-22-3x4x1x27160x192" \
  OUT=$O/u timeout 120 bench/gpu/user-path --seed 2026 --cases 64 > "$O/u.log" 2>&1 )
rm -rf "$O/u/work"; grep -E "^\| (swiglu|bias|matmul|attn)" "$O/u/table.md" | cut -d'|' -f2-8
