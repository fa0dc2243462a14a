#!/bin/bash
# The next device calls (written at the end of session 31):
#  1. FIRST: the gated GEMM now stores C by TMA where C's rows and the tile allow (the last
#     commit of session 31; every run of this session had the staged epilogue): check it on
#     the GPU — the six gated files, then the Llama block —
#        bash docs/gpu-runs/2026-12-02-s31/run.sh        (about 210 s)
#     and the N-major form (weights [k, n]), planned apart until it has run:
#        NAPKIN_GATED_N_MAJOR=1 with an einsum "se,ef->sf" pair through bench/gpu/gated.py
#  2. a fresh seed (SEED=2238) PART=1/2 then 2/2, each its own call (about 180 s each):
#        SEED=2238 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#  3. what is left to win on the Llama block (docs/perf-notes.md, "Session 31"): cuBLAS's
#     down projection 1.21 ms against ours 1.375–1.41 (its 1 × 2 clusters share B by TMA
#     multicast); cuDNN's causal GQA attention 0.257 ms against ours 0.37–0.38.
set -u
bash docs/gpu-runs/2026-12-02-s31/run.sh
