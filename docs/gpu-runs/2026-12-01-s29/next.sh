#!/bin/bash
# The next device calls (written at the end of session 29):
#  1. GQA groups packed in a block at d 64 (3 × 64 heads, 8 a K/V head, 4096²): keys in chunks
#     of 64 against 128, 2–5 stages, with the 1801-key window of seed 2234's attn-self-44 and
#     without it (next/*.napkin). Session 29: the window's 64-key chunks through 5 stages ran
#     0.896 ms, the 128-key through 3 0.789, the model prices them 0.738 and 0.768; a chunk
#     floor for packed groups (docs/model.md §14c) should come out of this table;
#  2. a fresh seed (SEED=2235) PART=1/2 then 2/2 on the tree then current, each its own call
#     (about 150 s each).
# Tar what a call writes under $OUT (the device returns at most 8 files); leave the zoo's
# dumps out of any tar (zoo-e2e.py writes hundreds of MB of them).
#   call 1: docs/gpu-runs/2026-12-01-s29/next.sh files
#   call 2: SEED=2235 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#   call 3: SEED=2235 PART=2/2 OUT=$OUT/s2 bash docs/gpu-runs/2026-12-01-s27/seed.sh
set -u
D=docs/gpu-runs/2026-12-01-s29
case "${1:-files}" in
  files)
    mkdir -p $OUT/n
    docs/gpu-runs/2026-12-01-s28/run-files.sh $D/next/*.napkin | tee $OUT/n/gqa.md
    tar czf $OUT/next.tgz -C $OUT n && rm -rf $OUT/n ;;
esac
