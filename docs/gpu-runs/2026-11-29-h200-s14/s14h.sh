#!/bin/bash
# Session 14 call 8: the zoo's four blocks end to end, Napkin timed after a rest as torch is.
set -u
O=${OUT:-/tmp/s14h}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
timeout 420 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo llama3_8b_block gpt2_medium_block vit_l16_block bart_attention > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| [a-z]|^  [a-z_0-9]+ +[a-z]+ |per kernel" $O/zoo.log | head -60
grep -o '"checked_run_ms": [0-9.]*' $O/zoo.log
rm -rf $O/zoo
