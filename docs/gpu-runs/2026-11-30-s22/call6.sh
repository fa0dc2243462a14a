#!/bin/bash
# Session 22, call 6: GELU/SiLU in cooperative tiles' registers priced at 0.2 clocks an
# element (0.62 in ping-pong tiles): the MLP example back on 128 × 256 cooperative tiles;
# the zoo blocks it moves, end to end against torch.compile.
set -u
O=${OUT:-/tmp/s22c6}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
for ex in mlp tp-mlp; do
  echo "=== $ex"
  timeout 60 $cli run data/examples/$ex.napkin --model h200 --reference-repeats 0 --no-energy 2>&1 \
    | grep -E "kernel |time |error |predicted |per kernel|^              "
done
timeout 200 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  llama3_8b_block falcon_mqa_block gpt2_medium_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| " $O/zoo.log
rm -rf $O/zoo
