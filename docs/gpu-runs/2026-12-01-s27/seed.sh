#!/bin/bash
# The user's path on a fresh seed with this session's final tree (SEED, PART=I/2), the
# baselines in the same call.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=480
  OUT=$O/u timeout 500 bench/gpu/user-path --seed ${SEED:-2229} --cases 64 --part ${PART:-1/2} > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
