#!/bin/bash
# The next device calls (written at the end of session 30):
#  1. a fresh seed (SEED=2237) PART=1/2 then 2/2 on the tree then current, each its own call
#     (about 150 s each): the einsum path and the drawn example after Suggest are now
#     retimed where more than 10 % apart;
#  2. the mid-row products (midrows/files, midrows/align): 128 × 128 tiles of one wave are
#     priced 1.1–1.3× over what they run (L2 through TMA: 10.6 TB/s measured against the
#     profile's 8.63), and B's rows unaligned in place cost 2.9 µs where the model says 9.2;
#     a GEMM sweep with per-kernel times (bench/gpu/sweep) to refit the main loop's share
#     and L2 together (docs/perf-notes.md, "Session 30").
# Tar what a call writes under $OUT (the device returns at most 8 files); leave the zoo's
# dumps out of any tar.
#   call 1: SEED=2237 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#   call 2: SEED=2237 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#   call 3: docs/gpu-runs/2026-12-01-s30/next.sh gemm
set -u
D=docs/gpu-runs/2026-12-01-s30
case "${1:-gemm}" in
  gemm)
    mkdir -p $OUT/g
    bash $D/midrows/run.sh | tee $OUT/g/midrows.md
    docs/gpu-runs/2026-12-01-s28/run-files.sh $D/midrows/align/*.napkin | tee $OUT/g/align.md
    tar czf $OUT/gemm.tgz -C $OUT g && rm -rf $OUT/g ;;
esac
