#!/bin/bash
# Session 21, fourth call: dQ's accumulator in tiles, each warpgroup's 64×64 partial
# added by one 16 KiB bulk reduction (h-t) against atomics into the same tiles (h-ta);
# then the plan's printed code with NAPKIN_BWD_WGMMA=1 through grad-check.
set -u
O=${OUT:-/tmp/s21d}; mkdir -p "$O"; A=/tmp/s21d-alone
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=$A ONLY="${ONLY:-^(h-|x1-d128)}"
  timeout 300 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -v "^  .*spill stores" "$O/alone.txt"
( export MODEL=h200 BUDGET=150 COMPILE=0 RECOMPUTE=softmax NAPKIN_BWD_WGMMA=1
  OUT=/tmp/s21d-wgmma timeout 200 bench/gpu/grad-check \
    --cases attention,zoo-llama-sdpa-gqa,zoo-whisper,zoo-clip,zoo-t5-bias,zoo-llama-mask-frozen > "$O/wgmma.log" 2>&1 )
cp /tmp/s21d-wgmma/table.md "$O/wgmma-table.md" 2>/dev/null; tail -9 "$O/wgmma-table.md"
