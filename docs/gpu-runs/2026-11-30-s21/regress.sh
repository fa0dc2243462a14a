#!/bin/bash
# Session 21, last call: the training steps of the examples and the zoo through grad-check
# (the forward attention now writing the fused backward's statistics where it can), and
# the kernel alone's correctness cases, against regressions.
set -u
O=${OUT:-/tmp/s21i}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=/tmp/s21i-alone NO_TORCH=1 ONLY='^(h-a|h-b|h-c|h-d|h-e|h-g|h-v|h-s)'
  timeout 120 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -E "^h-|==" "$O/alone.txt"
( export MODEL=h200 BUDGET=${BUDGET:-330} COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21i-zoo
  timeout 390 bench/gpu/grad-check --cases ${CASES:-attention,causal-attention,zoo-gpt2-block,zoo-torch-mha,zoo-sdpa-bool-mask,zoo-bart-attention,zoo-llama-sdpa-gqa,zoo-clip,zoo-qwen3,zoo-qwen2,zoo-whisper,zoo-t5-bias,zoo-bert-mask,zoo-swin-bias,zoo-llama-attention,llama-block} > "$O/zoo.log" 2>&1 )
cp /tmp/s21i-zoo/table.md "$O/zoo-table.md"; cp /tmp/s21i-zoo/grad-check.json "$O/" 2>/dev/null; cat "$O/zoo-table.md"
