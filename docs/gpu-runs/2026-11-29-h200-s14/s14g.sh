#!/bin/bash
# Session 14 call 7: sustained (2.5 s) GEMM throughput, cuBLAS and Napkin, after a rest.
set -u
O=${OUT:-/tmp/s14g}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
C=$pack/bin/napkin-cli
timeout 100 python3 .gpu-ab/mlp14/torch_sustained.py 2>&1 | grep -v -i warn | tail -3
for n in gate gate-silu; do
  sleep 3
  timeout 120 $C run .gpu-ab/mlp14/$n.napkin --arch h200 --json --repeats 400 > $O/$n.json 2> $O/$n.err
  python3 -c "
import json,sys; r=json.load(open('$O/$n.json')); t=r.get('time_ms') or {}
print('napkin $n', r.get('status'), 'median', t.get('median'), 'min', t.get('min'), {k: v for k, v in t.items() if k not in ('median','min')})
e = r.get('energy') or {}
print('   energy', e)"
done
rm -f $O/*.json
