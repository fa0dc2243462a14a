#!/bin/bash
# Session 22, call 8: a register row that leaves one block an SM now gives way to the row
# in shared memory at 256 threads (the plan's rule, from call 7): the user's path on the
# rows of 16K–32K columns it moves, and one it does not.
set -u
O=${OUT:-/tmp/s22c8}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=60
  ONLY="softmax-58-1024x19418 softmax-56-2048x2048" OUT=$O/u2222 timeout 80 bench/gpu/user-path --seed 2222 --cases 64 > $O/u2222.log 2>&1 )
( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=60
  ONLY="softmax-18-512x29508" OUT=$O/u26 timeout 80 bench/gpu/user-path --seed 2026 --cases 64 > $O/u26.log 2>&1 )
rm -rf $O/*/work
for d in u2222 u26; do grep -E "^\| " $O/$d/table.md | cut -d'|' -f2-10; done
