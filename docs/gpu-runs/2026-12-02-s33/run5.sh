#!/bin/bash
# Session 33, call 5: what seed 2239 missed, each as an A/B from einsum text.
#  pp/: short-K products with rows of C not 16 bytes apart (bmm-30 of seed 2239, 0.66×
#       torch.compile): the cooperative kernel against ping-pong (NAPKIN_PINGPONG=1);
#  gemm/: swiglu-32's products (0.70×): B n-major against k-major, unaligned against
#       aligned sizes, beside torch (einsum-torch.py);
#  rows/: softmax over the first axis of few columns (softmax0-38 at 1.81× its price):
#       the split axis against whole, and lines of 128/64/32 bytes;
#  attn/: tune --measure over the candidates of three attention problems (the chunk
#       chain of masked one-wave grids).
set -u
D=docs/gpu-runs/2026-12-02-s33
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=.gpu/bin/napkin-cli
timeout 150 bench/gpu/ab-env NAPKIN_PINGPONG "0 1" $D/pp/*.einsum > $OUT/pp.md 2> $OUT/pp.err
cut -c1-250 $OUT/pp.md
timeout 100 bench/gpu/ab-env NAPKIN_PINGPONG "0" $D/gemm/kn-* $D/gemm/nk-* > $OUT/gemm.md 2> $OUT/gemm.err
cut -c1-250 $OUT/gemm.md
timeout 60 /opt/torch/.venv/bin/python bench/gpu/einsum-torch.py $D/gemm/kn-* $D/gemm/nk-* > $OUT/gemm-torch.md 2>&1
cat $OUT/gemm-torch.md | tail -8
timeout 60 bench/gpu/ab-env NAPKIN_ROWS_SPLIT "1 0" $D/rows/*.einsum > $OUT/rows-split.md 2> $OUT/rows.err
cut -c1-250 $OUT/rows-split.md
timeout 60 bench/gpu/ab-env NAPKIN_ROWS_LINE "128 64 32" $D/rows/*.einsum > $OUT/rows-line.md 2>> $OUT/rows.err
cut -c1-250 $OUT/rows-line.md
mkdir -p $OUT/attn
for f in $D/attn/*.einsum; do
  n=$(basename $f .einsum)
  $cli import $f -o $OUT/attn/$n.napkin > /dev/null && $cli tune $OUT/attn/$n.napkin --arch h200 --apply > /dev/null 2>&1
  timeout 100 $cli tune $OUT/attn/$n.napkin --arch h200 --measure 10 --spread --repeats 10 > $OUT/attn/$n.measure.txt 2> $OUT/attn/$n.err
  tail -16 $OUT/attn/$n.measure.txt
done
