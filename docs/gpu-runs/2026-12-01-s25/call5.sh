#!/bin/bash
# Session 25, call 5: persistent attention over one chunk of keys, Q copied further ahead
# (three Q buffers, one K/V stage) against two K/V stages (NAPKIN_PERSIST_Q_FIRST, a switch of
# this call only: slower, 0.653 against 0.554 ms at d 192, and removed), and the
# split rows re-checked on the final rule; then the model's seen-tiles term on one key.
set -u
O=${OUT:-/tmp/call5}; mkdir -p "$O"
MODEL=h200 bench/gpu/ab-env NAPKIN_PERSIST_Q_FIRST "0 1" docs/gpu-runs/2026-12-01-s25/call5/persist-q/*.einsum > $O/persist.md 2>&1
R=bench/gpu/rows-split
MODEL=h200 bench/gpu/ab-env NAPKIN_ROWS_SPLIT "1" $R/*.einsum > $O/rows.md 2>&1
cat $O/persist.md $O/rows.md | python3 -c "
import sys
for l in sys.stdin:
    c=[x.strip() for x in l.strip().strip('|').split('|')]
    if len(c)<5: print(l.strip()); continue
    print(' | '.join(c[i] for i in range(len(c)) if i%4!=0 or i==0))" | cut -c1-400
