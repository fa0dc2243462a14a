#!/bin/bash
# The next device calls (written at the end of session 27):
#  1. PART=1/2 then PART=2/2 of a fresh seed (SEED=2230) on the tree then current
#     (docs/gpu-runs/2026-12-01-s27/seed.sh), the baselines in the same call;
#  2. docs/gpu-runs/2026-12-01-s27/skinny-final.sh again after any change to the skinny
#     kernel (kernels/gemm-skinny.cu) or its estimate: the plan's choice against the
#     tensor-core path on 23 skinny products, each checked against fp32.
# Open experiments for the skinny kernel (each an A/B of one call): 16 rows with B's rows
# 8 bytes apart at VEC 4 (residual-34, 16 × 8650 × 8676, still 0.73× on the copy);
# rows 2 bytes apart read as aligned 4-byte words shifted into place (three products at
# 0.6–1.7 TB/s with 2-byte loads).
set -u
SEED=${SEED:-2230} PART=${PART:-1/2} OUT=${OUT:-/tmp/next} bash docs/gpu-runs/2026-12-01-s27/seed.sh
