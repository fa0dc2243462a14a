#!/bin/bash
# Session 16 call 2: DiT and BLOOM again (the gate's rows at m / s; BLOOM against the
# module in fp32), then the first half of a new draw of the user's path (seed 2026),
# with the drawn example also run after Suggest ▸ Apply.
set -u
O=${OUT:-/tmp/s16b}; mkdir -p "$O"
pack=$PWD/.gpu
( export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
  export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
  timeout 100 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo dit_block bloom_attention > $O/zoo.log 2>&1; echo "zoo rc=$?" )
grep -E "^\| [a-z]|^result" $O/zoo.log | head
rm -rf $O/zoo
( export CALIBRATE=0 MODEL=h200 CASE_TIMEOUT=40 BUDGET=${BUDGET:-440}
  OUT=$O/u timeout 470 bench/gpu/user-path --seed 2026 --cases 64 --part ${PART:-1/2} > $O/u.log 2>&1 )
rm -rf $O/u/work
tail -6 $O/u/table.md
