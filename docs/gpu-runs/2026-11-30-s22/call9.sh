#!/bin/bash
# Session 22, call 9: call 8's seed-2222 rows (skipped there: its budget), by hand on the
# user's path: einsum text → import → tune --apply → run.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
W=/tmp/s22c9; rm -rf $W; mkdir -p $W
python3 bench/gpu/user-path.py --write $W --seed 2222 --cases 64 > /dev/null
for n in softmax-58-1024x19418 softmax-56-2048x2048; do
  $cli import $W/$n.einsum -o $W/$n.napkin > /dev/null && $cli tune $W/$n.napkin --arch h200 --apply > /dev/null
  echo "=== $n"
  timeout 60 $cli run $W/$n.napkin --model h200 --repeats 30 --reference-repeats 0 --no-energy 2>&1 | grep -E "kernel |time |error |predicted "
done
