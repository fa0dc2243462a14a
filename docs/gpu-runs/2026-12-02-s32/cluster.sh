#!/bin/bash
# Session 32: the Hopper GEMM in clusters of two blocks along M sharing B's chunks by TMA
# multicast (NAPKIN_GEMM_CLUSTER=2) against the same plan without (1), each file entered
# as einsum text with no regions, checked against the fp32 reference; alternated.
set -u
D=docs/gpu-runs/2026-12-02-s32
mkdir -p $OUT/cl
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/cl/gpu.txt 2>&1
NAPKIN_GATED_N_MAJOR=1 timeout ${CL_TIMEOUT:-540} bench/gpu/ab-env NAPKIN_GEMM_CLUSTER "${CL_VALUES:-1 2}" \
  ${CL_FILES:-$D/cluster/*.einsum} > $OUT/cl/ab.md 2> $OUT/cl/ab.err
cut -c1-400 $OUT/cl/ab.md
# how many clusters of the down projection's GEMM fit at once (the runner caps the grid there)
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
.gpu/bin/napkin-cli import $D/cluster/down-llama.einsum -o /tmp/down.napkin > /dev/null
NAPKIN_GEMM_CLUSTER=2 timeout 60 .gpu/bin/napkin-cli run /tmp/down.napkin --json --model h200 --no-reference \
  > $OUT/cl/down.json 2>&1
grep -o '"grid":[^,]*,[^,]*,[^,]*"cluster[^,]*,[^,]*' $OUT/cl/down.json
