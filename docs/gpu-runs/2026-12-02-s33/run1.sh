#!/bin/bash
# Session 33, first call: the rows kernel's half team against the old full team
# (alternating, checked), then the printed PyTorch of the two zoo modules added
# since session 25, run on the GPU against their modules.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
mkdir -p $OUT/rt
timeout 200 bench/gpu/ab-env NAPKIN_ROWS_THREADS "256 512 256 512" docs/gpu-runs/2026-12-02-s32/rows/*.einsum \
  > $OUT/rt/ab.md 2> $OUT/rt/ab.err
cut -c1-300 $OUT/rt/ab.md; tail -5 $OUT/rt/ab.err
timeout 150 python3 bench/gpu/zoo-roundtrip.py --cli .gpu/bin/napkin-cli --full --derive h200 \
  --out $OUT/zr se_block linear_attention > $OUT/zr.log 2>&1
tail -20 $OUT/zr.log
