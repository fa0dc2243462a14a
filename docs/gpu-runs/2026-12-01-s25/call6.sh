#!/bin/bash
# Session 25, call 6: the zoo's five blocks end to end on this tree (GPT-2-medium, Llama-3-8B,
# ViT-L/16, T5 and BART attention) against the module under torch.compile max-autotune, with
# every kernel's measured / predicted time.
set -u
O=${OUT:-/tmp/call6}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 570 python3 bench/gpu/zoo-e2e.py --cli $pack/bin/napkin-cli --model h200 --out /tmp/zoo-e2e \
  --compile-mode max-autotune > $O/e2e.log 2>&1
echo rc=$?
grep -A30 "^| module" $O/e2e.log
