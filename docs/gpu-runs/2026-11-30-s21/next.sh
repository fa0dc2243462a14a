#!/bin/bash
# The next device call (written at the end of session 21): why the model under-predicts the
# causal GQA backward (1.5–1.9× per kernel) — the kernel alone at 4 × 16 query heads, 4096²,
# GQA 4 causal / not / d 64 beside the MHA timing cases (h-t-*), pre and main apart; then
# grad-check's GQA cases with the per-kernel table (grad-check.json's per_kernel).
set -u
O=${OUT:-/tmp/s22}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=/tmp/s22-alone ONLY='^(h-t-|x1-d128)'
  timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -E "^h-|^x|==|flash" "$O/alone.txt"
( export MODEL=h200 BUDGET=200 COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s22-gqa
  timeout 250 bench/gpu/grad-check --cases attn-4k-d64-causal-gqa4,attn-2k-d128-gqa8-causal,zoo-qwen3,llama-block,attn-4k-d128-causal > "$O/gqa.log" 2>&1 )
cp /tmp/s22-gqa/table.md "$O/gqa-table.md"; cp /tmp/s22-gqa/grad-check.json "$O/"; cat "$O/gqa-table.md"
