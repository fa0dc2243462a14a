#!/bin/bash
# The next device calls (written at the end of session 34, which ran out of device time):
#  0. run5.sh: seed 2242's wrong case (cross-attention to one key under a window, left
#     unfused; the rows kernels' softmax of an all-masked row gave NaN, fixed and checked on
#     the CPU emulator only) by the user's path on the GPU (~20 s):
#        bash docs/gpu-runs/2026-12-02-s34/run5.sh
#     then the same case in its seed's table:
#        ONLY="attn-cross-20-1x64x10006x1x256" SEED=2242 PART=2/2 OUT=$OUT/o bash docs/gpu-runs/2026-12-01-s27/seed.sh
#  1. a fresh seed (2243), both parts, each its own call (~170 s each), on this tree.
#  2. what seeds 2241–2242 left (docs/perf-notes.md, "Session 34"):
#     - short batched products whose B rows are not 16 bytes apart (bmm-29 57 × 4 × 1803 ×
#       128: 0.039 ms against torch.matmul 0.029): the skinny kernel ran 0.0336
#       (NAPKIN_GEMM_SKINNY=force), priced 0.0347, but the plan's own estimate keeps the
#       repack + wgmma (priced 0.050 by the model). Move that decision onto the model's
#       prices, then A/B it over the recorded decode/skinny products;
#     - persistent cross-attention at D ≥ 96: 128-query blocks run a median 1.07–1.12× their
#       price, 64-query ones 0.94–1.02 (drawn + Suggest 0.82× the einsum path on 1 × 16 ×
#       10915 × 77 d 256): `tune --measure` over q=64/128 at D 96–256 to refit;
#     - bmm-30-type short-K products with an unaligned C (TMA row stores trap; see perf-notes).
#  3. #29 (GEMM sweep, fp8 attention at FA3's rate, the Llama block 1.2×) and #30 (attention
#     backward 0.52–0.79× cuDNN at 4k–16k).
set -u
bash docs/gpu-runs/2026-12-02-s34/run5.sh
