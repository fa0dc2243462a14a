#!/bin/bash
# Session 25, calls 1 and 2: the user's path on seed 2226 with session 24's final tree (its
# next.sh), part 1 of 2 (call 1) and part 2 (call 2), baselines in the same call.
set -u
O=${OUT:-/tmp/call1}; mkdir -p "$O"
PART=${PART:-1/2}
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=540
  OUT=$O/u timeout 580 bench/gpu/user-path --seed 2226 --cases 64 --part $PART > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
