#!/bin/bash
# The next device calls (written at the end of session 33):
#  0. bench/gpu/tma-row-store.cu (written at the end of session 33, compiled here, never run):
#     does a one-row TMA store through a 1-D map over an unaligned C work, swizzled or not,
#     and at what rate against the aligned 2-D store (about 10 s):
#        nvcc -arch=sm_90a -O2 -o /tmp/t bench/gpu/tma-row-store.cu -lcuda && /tmp/t
#  1. seed 2240 part 2 (part 1 ran on this tree: 32/32 ≥ 0.8×, 32/32 within 1.5×), then a
#     fresh seed (2241) both parts, each its own call (about 170 s with the retiming):
#        SEED=2240 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#  2. what seed 2239 left (docs/perf-notes.md, "Session 33"):
#     - short-K products whose rows of C are not 16 bytes apart (bmm-30 44 × 2048 × 1946 ×
#       185: 0.392 ms against torch.compile 0.261; ncu: DRAM 24 %, no eligible warp 58 %):
#       store each row of a tile by TMA through a one-dimensional tensor map over C. First
#       a microtest of what TMA does with a one-row box stored from shared memory at
#       r × 128 bytes under the 128-byte swizzle (is the XOR taken from the address or from
#       the row within the box?) and from a 16-byte-aligned source without swizzle;
#     - softmax over axis 0 of 16384 × 512 split in 66 chunks (0.039 ms, priced 0.0216): the
#       two launches each last 16–21 µs for eight rows a thread (ncu: 1 TB/s, latency-bound);
#       time variants (chunks of 124 / 498, UNROLL 8) and fit the split's block lifetime;
#     - the SwiGLU's B repacks (rows of 14269): 0.35 ms of its 5.5.
#  3. d-192 cross-attention over 77 keys at 0.78× cuDNN (session 32), causal GQA attention in
#     the Llama block 1.44× cuDNN, #29's GEMM sweep and fp8 attention, #30.
set -u
mkdir -p $OUT/s2
SEED=2240 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh > $OUT/seed2.log 2>&1
tar czf $OUT/s2.tgz -C $OUT s2 && rm -rf $OUT/s2; tail -8 $OUT/seed2.log
