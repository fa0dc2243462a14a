#!/bin/bash
# Session 21: the forward writes the log-sum-exps and its fp32 O; the backward's first
# launch makes Σ dO⊙O from them (no product) — also in a training step, where dO comes
# after the forward (the Llama block).
set -u
O=${OUT:-/tmp/s21j}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export MODEL=h200 BUDGET=${BUDGET:-200} COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21j-attn
  timeout 250 bench/gpu/grad-check --cases ${CASES:-attention,attn-4k-d128,attn-4k-d128-causal,attn-4k-d64-causal-gqa4,attn-2k-d128-gqa8-causal,llama-block,zoo-whisper,zoo-qwen3} > "$O/attn.log" 2>&1 )
cp /tmp/s21j-attn/table.md "$O/attn-table.md"; cp /tmp/s21j-attn/grad-check.json "$O/" 2>/dev/null; cat "$O/attn-table.md"
