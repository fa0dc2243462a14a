#!/bin/bash
# Session 25, call 4: the split's second launch combining its chunks with all its threads
# (call 3 had each thread read every chunk), against the whole axis; then 128- against
# 256-byte lines where the columns are many (no split).
set -u
O=${OUT:-/tmp/call4}; mkdir -p "$O"
R=bench/gpu/rows-split
few="$R/softmax0-65536x1024 $R/softmax0-1000000x128 $R/softmax0-200000x96 $R/softmax0-8192x2048 $R/softmax0-50000x4096
     $R/layernorm0-30000x1024 $R/rmsnorm0-40000x512 $R/sum0-100000x1024 $R/max0-300000x64"
many="$R/softmax0-10672x48380 $R/softmax0-4096x32768 $R/softmax0-16384x16384 $R/softmax0-3000x65536
      $R/layernorm0-20000x20000 $R/softmax0-12000x24576 $R/sum0-30000x30000 $R/softmax0-2048x50257"
MODEL=h200 bench/gpu/ab-env NAPKIN_ROWS_SPLIT "1 0" $(for f in $few; do echo $f.einsum; done) > $O/split.md 2>&1
MODEL=h200 bench/gpu/ab-env NAPKIN_ROWS_LINE "128 256" $(for f in $many; do echo $f.einsum; done) > $O/line.md 2>&1
cat $O/split.md $O/line.md | python3 -c "
import sys
for l in sys.stdin:
    c=[x.strip() for x in l.strip().strip('|').split('|')]
    if len(c)<9: print(l.strip()); continue
    print(' | '.join(c[i] for i in (0,1,2,3,5,6,7)))"
