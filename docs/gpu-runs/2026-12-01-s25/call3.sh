#!/bin/bash
# Session 25, call 3: rows over a long axis with few columns split into chunks (two
# launches) against the whole axis per block (NAPKIN_ROWS_SPLIT=0, narrower lines), and the
# line width of the strided blocks (NAPKIN_ROWS_LINE) where the columns are many.
set -u
O=${OUT:-/tmp/call3}; mkdir -p "$O"
R=bench/gpu/rows-split
MODEL=h200 bench/gpu/ab-env NAPKIN_ROWS_SPLIT "1 0" $R/*.einsum > $O/split.md 2>&1
MODEL=h200 bench/gpu/ab-env NAPKIN_ROWS_LINE "128 256 512 64" $R/softmax0-10672x48380.einsum \
  $R/softmax0-50000x4096.einsum $R/softmax0-2048x50257.einsum $R/softmax0-8192x2048.einsum > $O/line.md 2>&1
cat $O/split.md $O/line.md
