#!/bin/bash
# Session 34, call 4: the short batched product of seed 2241 (bmm-29, 57 × 4 × 1803 × 128:
# the repack and wgmma 0.039 ms against torch.matmul 0.029) on the skinny CUDA-core kernel
# against the plan's choice; then seed 2242, both parts, on this tree.
set -u
D=docs/gpu-runs/2026-12-02-s34
S=docs/gpu-runs/2026-12-01-s27/seed.sh
timeout 60 bench/gpu/ab-env NAPKIN_GEMM_SKINNY "0 force" $D/skinny/*.einsum > $OUT/skinny.md 2> $OUT/skinny.err
cut -c1-250 $OUT/skinny.md
for p in 1 2; do
  mkdir -p $OUT/s$p
  SEED=2242 PART=$p/2 OUT=$OUT/s$p bash $S > $OUT/seed$p.log 2>&1
  cp $OUT/s$p/u/table.md $OUT/table-2242-p$p.md 2>/dev/null
  rm -rf $OUT/s$p/u/work
  tar czf $OUT/s$p.tgz -C $OUT s$p && rm -rf $OUT/s$p; tail -6 $OUT/seed$p.log
done
