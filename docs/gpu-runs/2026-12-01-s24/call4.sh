#!/bin/bash
# Session 24 call 4: a GEMM sweep at 40 shapes no session had seen (seed 2401, M, N, K
# uniform in 1…16384, bf16 and fp8, either major), written here with
#   bench/gpu/gemm-sweep.py --write DIR --cases 40 --seed 2401 --arch h200
# and run beside cuBLAS (as stored and on padded operands) on the current tree.
set -u
D=docs/gpu-runs/2026-12-01-s24
BUDGET=480 OUT=${OUT:-/tmp/s24c4} timeout 560 python3 bench/gpu/gemm-sweep.py --run $D/gs-work --arch h200 2>&1 | tail -70
