#!/bin/bash
# Session 21: the attention backward as users reach it — einsum text, grad, tune --apply,
# run (the wgmma backward now the default on Hopper) — against torch.autograd and beside
# torch's flash and cuDNN forward + backward at the same shapes; then the zoo attentions.
set -u
O=${OUT:-/tmp/s21e}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export MODEL=h200 BUDGET=${BUDGET:-330} COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21e-attn
  timeout 380 bench/gpu/grad-check --cases ${CASES:-attn-1k-d64,attn-4k-d128,attn-4k-d128-causal,attn-4k-d64-causal-gqa4,attn-16k-d128-causal,attn-8k-d64,attn-2k-d128-gqa8-causal,zoo-llama-sdpa-gqa,zoo-whisper,zoo-t5-bias,zoo-bert-mask} > "$O/attn.log" 2>&1 )
cp /tmp/s21e-attn/table.md "$O/attn-table.md"; cp /tmp/s21e-attn/grad-check.json "$O/" 2>/dev/null
cat "$O/attn-table.md"
