#!/bin/bash
# Session 23, call 5: derive with the rotary as one candidate (the Llama block: rotary one
# pass, plain gate/up GEMMs, one SiLU·mul pass) end to end against torch.compile; then
# build-aux/gpu-check on the tree (every example, incl. the GQA and sliding-window examples
# now drawn with 3 stages).
set -u
O=${OUT:-/tmp/s23c5}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 200 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  llama3_8b_block qwen3_attention gpt2_medium_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| |^  [a-z]" $O/zoo.log | head -40
rm -rf $O/zoo
( OUT=$O/check timeout 300 build-aux/gpu-check > $O/gpu-check.log 2>&1; echo "gpu-check rc=$?" )
rm -rf $O/check/work 2>/dev/null
grep -vE "^\s*$" $O/gpu-check.log | tail -40
