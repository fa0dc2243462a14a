#!/bin/bash
# Session 34, call 2:
#  tma: bench/gpu/tma-row-store.cu one case a process (call 1's "swz" trapped and poisoned
#       the rest);
#  attn/: tune --measure over the relabelings of three unmasked attention problems whose
#       grid is one wave or less (the key-chunk chain of a block is not shared by idle SMs);
#  then seed 2241 part 1 on this tree.
set -u
D=docs/gpu-runs/2026-12-02-s34
export PATH=/usr/local/cuda/bin:$PATH
nvcc -arch=sm_90a -O2 -o /tmp/t bench/gpu/tma-row-store.cu -lcuda > $OUT/tma.log 2>&1
for c in plain row1d-plain tile2d p16 swz row1d; do timeout 30 /tmp/t $c >> $OUT/tma.log 2>&1; echo "$c rc=$?" >> $OUT/tma.log; done
cat $OUT/tma.log
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=.gpu/bin/napkin-cli
mkdir -p $OUT/attn
for f in $D/attn/*.einsum; do
  n=$(basename $f .einsum)
  $cli import $f -o $OUT/attn/$n.napkin > /dev/null && $cli tune $OUT/attn/$n.napkin --arch h200 --apply > /dev/null 2>&1
  timeout 100 $cli tune $OUT/attn/$n.napkin --arch h200 --measure 10 --spread --repeats 10 > $OUT/attn/$n.measure.txt 2> $OUT/attn/$n.err
  tail -14 $OUT/attn/$n.measure.txt
done
mkdir -p $OUT/s1
SEED=2241 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh > $OUT/seed1.log 2>&1
cp $OUT/s1/u/table.md $OUT/table-2241-p1.md 2>/dev/null
tar czf $OUT/s1.tgz -C $OUT s1 && rm -rf $OUT/s1; tail -8 $OUT/seed1.log
