#!/bin/bash
# Session 34, call 3: the two einsum-vs-drawn misses of seeds 2240/2241 on this tree's model
# (attention in one wave: a long key-chunk chain is its block's; a GEMM grid of fewer blocks
# than SMs draws L2 through its own SMs), each by the user's path alone (ONLY) and by
# tune --measure over its relabelings; then seed 2241 part 2.
set -u
D=docs/gpu-runs/2026-12-02-s34
S=docs/gpu-runs/2026-12-01-s27/seed.sh
mkdir -p $OUT/o1 $OUT/o2 $OUT/s2 $OUT/m
ONLY="attn-self-48-2x1x4724x4724x256" SEED=2240 PART=2/2 OUT=$OUT/o1 bash $S > $OUT/o1.log 2>&1
ONLY="residual-10-5807x128x8192" SEED=2241 PART=1/2 OUT=$OUT/o2 bash $S > $OUT/o2.log 2>&1
grep -h "attn-self-48\|residual-10" $OUT/o1/u/table.md $OUT/o2/u/table.md
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=.gpu/bin/napkin-cli
for f in $D/gemm/*.einsum $D/attn/attn-self-48*.einsum; do
  n=$(basename $f .einsum)
  $cli import $f -o $OUT/m/$n.napkin > /dev/null && $cli tune $OUT/m/$n.napkin --arch h200 --apply > /dev/null 2>&1
  timeout 90 $cli tune $OUT/m/$n.napkin --arch h200 --measure 10 --spread --repeats 10 > $OUT/m/$n.measure.txt 2> $OUT/m/$n.err
  tail -14 $OUT/m/$n.measure.txt
done
rm -f $OUT/m/*~
SEED=2241 PART=2/2 OUT=$OUT/s2 bash $S > $OUT/seed2.log 2>&1
cp $OUT/s2/u/table.md $OUT/table-2241-p2.md 2>/dev/null
tar czf $OUT/s2.tgz -C $OUT s2 && rm -rf $OUT/s2; tail -8 $OUT/seed2.log
