#!/bin/bash
# Session 25, calls 9–13: the user's path on a new seed (2227) with the session's final tree.
# Call 9: part 1 of 2 (BUDGET 540). Call 10: part 2 with BUDGET 200, too little: 10 of 32
# ran. Call 11: a mistyped no-op. Call 12: the 22 skipped (ONLY, call13/only.txt) with
# BUDGET 150: the baselines' reserve left nothing. Call 13: the same with COMPILE_BUDGET 20
# and BUDGET 165: 19 of 22 ran (rmsnorm-58, attn-self-60 and one more skipped).
set -u
O=${OUT:-/tmp/call9}; mkdir -p "$O"
export CALIBRATE=0 MODEL=h200 COMPILE=1
case ${CALL:-9} in
  9) BUDGET=540 OUT=$O/u timeout 580 bench/gpu/user-path --seed 2227 --cases 64 --part 1/2 > $O/u.log 2>&1 ;;
  10) BUDGET=200 OUT=$O/u timeout 250 bench/gpu/user-path --seed 2227 --cases 64 --part 2/2 > $O/u.log 2>&1 ;;
  13) COMPILE_BUDGET=20 BUDGET=165 ONLY="$(cat docs/gpu-runs/2026-12-01-s25/call13/only.txt)" OUT=$O/u \
        timeout 170 bench/gpu/user-path --seed 2227 --cases 64 > $O/u.log 2>&1 ;;
esac
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
