#!/bin/bash
# Session 33: the five blocks end to end against the module under torch.compile
# max-autotune (bench/gpu/zoo-e2e.py), on this tree.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 560 /opt/torch/.venv/bin/python bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $OUT/zoo \
  --compile-mode max-autotune > $OUT/zoo.log 2>&1
grep -v "AUTOTUNE\|triton_\|^  [a-z_]*mm\|nvjet\|^$" $OUT/zoo.log | tail -60
