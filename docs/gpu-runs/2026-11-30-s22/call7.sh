#!/bin/bash
# Session 22, call 7: softmax over 1024 rows of 19418 ran 2.2× its prediction with 1024
# threads a row (one block an SM: 57 registers × 1024). The same problem with 512 threads
# a row (73 registers, still one block an SM) and 256 (the row in shared memory, five
# blocks an SM), by NAPKIN_ROWS_THREADS.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
W=/tmp/s22c7; rm -rf $W; mkdir -p $W
python3 bench/gpu/user-path.py --write $W --seed 2222 --cases 64 > /dev/null
for n in softmax-58-1024x19418 softmax-35-1024x52034 softmax-56-2048x2048; do
  $cli import $W/$n.einsum -o $W/$n.napkin > /dev/null
  for t in "" 1024 512 256; do
    echo "=== $n threads=${t:-plan}"
    NAPKIN_ROWS_THREADS=$t timeout 60 $cli run $W/$n.napkin --model h200 --repeats 30 --reference-repeats 0 --no-energy 2>&1 \
      | grep -E "kernel |time |error |predicted "
  done
done
