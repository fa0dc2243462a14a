#!/bin/bash
# Session 23, call 3: the rotary embedding as one element-wise pass — the Llama-3-8B block
# and the zoo's rotary modules end to end against the modules (correctness, torch.compile),
# then the bundled examples (gpu-check: correctness and meas/pred of every example).
set -u
O=${OUT:-/tmp/s23c3}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 330 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  llama3_8b_block hf_llama_attention hf_mistral_attention llama_sdpa_gqa phi3_attention qwen2_attention \
  qwen3_attention falcon_mqa_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| |^  [a-z]" $O/zoo.log | head -60
rm -rf $O/zoo
