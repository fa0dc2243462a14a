#!/bin/bash
# The next device calls (written at the end of session 35, whose last calls were refused):
#  0. run4.sh: softmax over a long first axis with few columns, the axis split against
#     whole (seed 2243's 45887 × 256 ran 2.2× its price with the axis in 132 chunks;
#     16384 × 512 1.81×). ~40 s:
#        bash docs/gpu-runs/2026-12-02-s35/run4.sh
#  1. a fresh seed (2244), both parts, each its own call (~200 s each), on this tree:
#        SEED=2244 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#  2. what seed 2243 left (docs/perf-notes.md, "Session 35"):
#     - wave quantisation of large GEMMs (8486 × 1024 × 16384: 272 tiles, three waves, the
#       third of 8 tiles; 0.79× cuBLAS): a split tail (the last partial wave's tiles cut
#       along K over all SMs) or stream-K in kernels/gemm-sm90.cu, priced by the model;
#     - GEMMs whose C rows are not 16 bytes apart feeding an element-wise pass (bias-gelu
#       13553 × 15362 × 32: 0.76× addmm+gelu): give the intermediate a 16-byte pitch so the
#       GEMM stores by TMA;
#     - 128-row attention blocks over 150–256 keys at d 96–256 (not persistent) run
#       1.27–1.42× their price (d 96 slower than d 128: 0.088 against 0.0675 ms, 1 × 16 ×
#       8192 × 256) — a kernel question first;
#     - empty attention blocks cost ~5 µs each at d 256 (their zero rows stored 4 bytes a
#       thread through the fragment layout): a coalesced 16-byte zero store, or the plan
#       leaving the unseen query tiles to a memset.
#  3. #29 (GEMM sweep, fp8 attention at FA3's rate, the Llama block 1.2×) and #30 (attention
#     backward 0.52–0.79× cuDNN at 4k–16k).
set -u
bash docs/gpu-runs/2026-12-02-s35/run4.sh
