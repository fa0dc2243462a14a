#!/bin/bash
# Session 32, call 1: the gated GEMM with C by TMA store (six pairs and the Llama block),
# the N-major gated form (weights [e, f]) with NAPKIN_GATED_N_MAJOR=1. Seed 2238 part 1 is
# its own call (docs/gpu-runs/2026-12-01-s27/seed.sh).
set -u
S=docs/gpu-runs/2026-12-02-s32
timeout 260 bash docs/gpu-runs/2026-12-02-s31/run.sh
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
mkdir -p $OUT/nm
NAPKIN_GATED_N_MAJOR=1 timeout 200 /opt/torch/.venv/bin/python bench/gpu/gated.py --cli .gpu/bin/napkin-cli \
  --model h200 --out /tmp/nmajor $S/nmajor/*.einsum > $OUT/nm/gated.log 2>&1
tail -4 $OUT/nm/gated.log
