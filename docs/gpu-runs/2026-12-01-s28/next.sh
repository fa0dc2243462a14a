#!/bin/bash
# The next device calls (written at the end of session 28):
#  1. the staged epilogue of short-K products with C's rows not 16 bytes apart (and one
#     aligned, 8192 × 16384 × 64): five tilings each of five shapes, checked and timed, to
#     fit a per-row and a one-consumer term beside GEMM_UNALIGNED_PLAIN_CLOCKS (session 28:
#     9536 × 13434 × 32 ran 0.299/0.244/0.230/0.289/0.335 ms at 128×128/128×192/128×256/
#     256×128/64×256; the model prices them alike);
#  2. a fresh seed (SEED=2233) PART=1/2 then 2/2 on the tree then current.
# Tar what a call writes under $OUT (the device returns at most 8 files).
set -u
D=docs/gpu-runs/2026-12-01-s28
mkdir -p $OUT/n
$D/run-files.sh $D/shortk/*.napkin | tee $OUT/n/shortk.md
for p in 1 2; do SEED=${SEED:-2233} PART=$p/2 OUT=$OUT/n/s$p bash docs/gpu-runs/2026-12-01-s27/seed.sh; done
tar czf $OUT/next.tgz -C $OUT n && rm -rf $OUT/n
