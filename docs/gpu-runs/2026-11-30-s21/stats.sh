#!/bin/bash
# Session 21: the forward attention kernel writes the fused backward's log-sum-exps and
# row terms (Σ dO⊙O from its fp32 O): the backward's first launch only zeroes. The user's
# path (einsum text → grad → tune --apply → run) against torch; then three cases again
# with NAPKIN_BWD_FWD_STATS=0 (the first launch computing them) in the same call.
set -u
O=${OUT:-/tmp/s21h}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export MODEL=h200 BUDGET=${BUDGET:-260} COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21h-attn
  timeout 320 bench/gpu/grad-check --cases ${CASES:-attention,causal-attention,attn-1k-d64,attn-4k-d128,attn-4k-d128-causal,attn-4k-d64-causal-gqa4,attn-8k-d64,attn-2k-d128-gqa8-causal,attn-16k-d128-causal} > "$O/attn.log" 2>&1 )
cp /tmp/s21h-attn/table.md "$O/attn-table.md"; cat "$O/attn-table.md"
( export MODEL=h200 BUDGET=120 COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21h-off NAPKIN_BWD_FWD_STATS=0
  timeout 160 bench/gpu/grad-check --cases attn-4k-d128,attn-4k-d128-causal,attn-8k-d64 > "$O/off.log" 2>&1 )
cp /tmp/s21h-off/table.md "$O/off-table.md"; cat "$O/off-table.md"
