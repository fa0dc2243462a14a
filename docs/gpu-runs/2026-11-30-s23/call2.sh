#!/bin/bash
# Session 23, call 2: the blocks the import issue names, end to end against the module
# under torch.compile (GPT-2 medium, Llama-3-8B, ViT-L/16, T5 and BART attention).
set -u
O=${OUT:-/tmp/s23c2}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 420 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  gpt2_medium_block llama3_8b_block vit_l16_block t5_attention bart_attention > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| |^  [a-z]" $O/zoo.log
rm -rf $O/zoo
