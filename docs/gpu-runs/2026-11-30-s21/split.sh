#!/bin/bash
# Session 21: the group split (a K/V head's query heads over several blocks where the key
# blocks alone leave SMs idle: MQA, few heads) and the d 64 dQ partials summed in shared
# memory before one bulk reduction; the kernel alone (h-*), then the user's path.
set -u
O=${OUT:-/tmp/s21f}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=/tmp/s21f-alone ONLY="${ONLY:-^h-}"
  timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -v "^  .*spill stores" "$O/alone.txt"
( export MODEL=h200 BUDGET=${BUDGET:-300} COMPILE=0 RECOMPUTE=softmax OUT=/tmp/s21f-attn
  timeout 360 bench/gpu/grad-check --cases ${CASES:-attn-1k-d64,attn-4k-d128,attn-4k-d128-causal,attn-4k-d64-causal-gqa4,attn-8k-d64,attn-2k-d128-gqa8-causal,attn-16k-d128-causal,zoo-llama-sdpa-gqa,zoo-qwen2,zoo-llama-mask-frozen} > "$O/attn.log" 2>&1 )
cp /tmp/s21f-attn/table.md "$O/attn-table.md"; cp /tmp/s21f-attn/grad-check.json "$O/" 2>/dev/null
cat "$O/attn-table.md"
