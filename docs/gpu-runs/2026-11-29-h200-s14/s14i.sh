#!/bin/bash
# Session 14 call 10: seed 26's whole user's path on the session's final tree.
set -u
O=${OUT:-/tmp/s14i}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=300
  OUT=$O/u26 timeout 330 bench/gpu/user-path --seed 26 --cases 64 > $O/u26.log 2>&1 )
rm -rf $O/u26/work
tail -5 $O/u26/table.md
grep -E "^\| " $O/u26/table.md | awk -F'|' '{printf "%-38s %8s %8s %6s %8s %6s\n",$2,$5,$6,$7,$11,$12}' | awk '$6 != "-" && ($6 < 0.9 || $6 > 1.1) || $4 > 1.5 || $4 < 0.667'
