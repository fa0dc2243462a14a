#!/bin/bash
# Session 24 call 10: what the 192-column tiles (plan and derive) change end to end: mlp-11 of
# seed 2222 on the user's path, and the zoo modules whose derivation moved (nanogpt, DiT,
# phi-3, einsum attention), each by the tree without them (.gpu-old) and with them (.gpu).
set -u
O=${OUT:-/tmp/s24c10}; mkdir -p "$O"
for pack in .gpu-old .gpu; do
  ( export CALIBRATE=0 MODEL=h200 COMPILE=0 BUDGET=100 NAPKIN_PACK=$pack ONLY="mlp-11-2188x2048x2048"
    OUT=$O/$pack-u timeout 110 bench/gpu/user-path --seed 2222 --cases 64 > $O/$pack-u.log 2>&1 )
  grep -E "^\| mlp" $O/$pack-u/table.md | cut -d'|' -f2-7 | sed "s/^/$pack /"
  rm -rf $O/$pack-u/work $O/$pack-u/archs
done
for pack in .gpu .gpu-old; do
  ( export LD_LIBRARY_PATH=$PWD/$pack/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
    export NAPKIN_RUNNER=$PWD/$pack/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
    timeout 200 python3 bench/gpu/zoo-e2e.py --cli $pack/bin/napkin-cli --model h200 --out $O/zoo$pack \
      nanogpt_block dit_block phi3_attention einsum_attention > $O/zoo$pack.log 2>&1 )
  grep -E "^\| [a-z]" $O/zoo$pack.log | sed "s/^/$pack /"; rm -rf $O/zoo$pack
done
