#!/bin/bash
# Session 25, call 7: the printed PyTorch of every derived zoo diagram (exported at the
# sizes people run, imported, relabeled by `tune --apply --arch h200`, printed by
# `codegen --target pytorch`) run on the GPU against its module, in the module's dtype.
set -u
O=${OUT:-/tmp/call7}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 540 python3 bench/gpu/zoo-roundtrip.py --cli $pack/bin/napkin-cli --full --derive h200 --out /tmp/zr \
  > $O/roundtrip.log 2>&1
echo rc=$?
grep -E "max relative|FAILED|^result" $O/roundtrip.log
