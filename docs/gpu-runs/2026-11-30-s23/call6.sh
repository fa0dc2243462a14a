#!/bin/bash
# Session 23, call 6: softmax rows that fit one block's shared memory but not two — the
# row in shared memory, one block an SM (new) against the two-pass form
# (NAPKIN_ROWS_NO_SMEM=1) and torch.softmax, through the user's path (einsum, tune --apply).
set -u
O=${OUT:-/tmp/s23c6}; mkdir -p "$O/w"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
for shape in 8192x61366 7189x65536 4096x100000 2048x110000 1024x70000; do
  r=${shape%x*}; c=${shape#*x}
  printf 'r=%s c=%s\ndtype bf16\nX[r,c] -> sm = softmax(c)\noutput sm\n' $r $c > $O/w/$shape.einsum
  $cli import $O/w/$shape.einsum -o $O/w/$shape.napkin > /dev/null && $cli tune $O/w/$shape.napkin --arch h200 --apply > /dev/null
  for v in smem two-pass; do
    if [ $v = two-pass ]; then export NAPKIN_ROWS_NO_SMEM=1; else unset NAPKIN_ROWS_NO_SMEM; fi
    t=$(timeout 60 $cli run $O/w/$shape.napkin --model h200 --reference-repeats 0 --no-energy 2>&1 | grep -E "^  time|^  predicted|^  error" | tr -s ' ' | tr '\n' ' ')
    echo "$shape $v: $t"
  done
  unset NAPKIN_ROWS_NO_SMEM
  python3 - $r $c <<'PY'
import sys, torch
r, c = int(sys.argv[1]), int(sys.argv[2])
x = torch.randn(r, c, device="cuda", dtype=torch.bfloat16)
for _ in range(3): torch.softmax(x, -1)
s, e = torch.cuda.Event(True), torch.cuda.Event(True); ts = []
for _ in range(20):
    s.record(); torch.softmax(x, -1); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
print("%dx%d torch.softmax: %.4f ms" % (r, c, sorted(ts)[10]))
PY
done
