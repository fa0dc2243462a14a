#!/bin/bash
# Session 25, call 8: call 7's two misses again — the Annotated Transformer's attention now
# built in bf16 (fp16 PyTorch refuses its -1e9), BLOOM judged against its module in fp32
# as zoo-e2e.py judges Napkin's kernels.
set -u
O=${OUT:-/tmp/call8}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 300 python3 bench/gpu/zoo-roundtrip.py --cli $pack/bin/napkin-cli --full --derive h200 --out /tmp/zr \
  annotated_attention bloom_attention > $O/roundtrip.log 2>&1
echo rc=$?
grep -E "max relative|FAILED|^result|Error" $O/roundtrip.log
