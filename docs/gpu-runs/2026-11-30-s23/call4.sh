#!/bin/bash
# Session 23, call 4: SiLU and sigmoid with the reciprocal instead of an IEEE division
# (the Llama gate's fused SiLU ran 0.21 ms over its plain GEMM in call 3): the Llama block,
# the SwiGLU modules and examples end to end; then the bundled examples (gpu-check).
set -u
O=${OUT:-/tmp/s23c4}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
timeout 200 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  llama3_8b_block swiglu_fused mixtral_expert_mlp > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| |^  [a-z]" $O/zoo.log | head -40
rm -rf $O/zoo
for ex in swiglu-block mlp; do
  f=data/examples/$ex.napkin; [ -f "$f" ] || f=tests/data/derive/$ex.napkin
  echo "=== $ex"
  timeout 60 $cli run $f --model h200 --reference-repeats 0 --no-energy 2>&1 \
    | grep -E "kernel |time |error |predicted |per kernel|^              "
done
