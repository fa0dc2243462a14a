#!/bin/bash
# Session 24 call 7: block tiles 192 columns wide among the plan's own (128 × 192, 64 × 192):
# the eleven recorded user's-path problems whose plan it changes, run by the tree without
# them (.gpu-old) and with them (.gpu), in one call.
set -u
O=${OUT:-/tmp/s24c7}; mkdir -p "$O"
run () {  # pack seed names...
  local pack=$1 seed=$2; shift 2
  ( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=150 NAPKIN_PACK=$pack ONLY="$*"
    OUT=$O/$pack-$seed timeout 170 bench/gpu/user-path --seed $seed --cases 64 > $O/$pack-$seed.log 2>&1 )
  rm -rf $O/$pack-$seed/work $O/$pack-$seed/archs
  grep -E "^\| [a-z]" $O/$pack-$seed/table.md | cut -d'|' -f2-7 | sed "s/^/$pack /"
}
for pack in .gpu-old .gpu; do
  run $pack 2222 mlp-11-2188x2048x2048 mlp-9-3366x768x3072
  run $pack 2223 mlp-34-512x2048x3072 swiglu-54-1024x689x15778
  run $pack 2224 fp8-31-3430x7456x256 swiglu-49-16x2048x7700
  run $pack 2225 residual-33-7977x352x4096
  run $pack 2026 bmm-12-48x16x315x32 fp8-52-10872x512x2048 mlp-13-3258x768x8192 mlp-32-1845x768x2048
done
