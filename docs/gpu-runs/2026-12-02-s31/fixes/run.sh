#!/bin/bash
# Seed 2237's two einsum-vs-drawn misses on this session's final tree: each from einsum text
# (import, tune --apply) and as drawn, alternating, timed without the reference.
set -u
D=docs/gpu-runs/2026-12-02-s31/fixes
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
CLI=.gpu/bin/napkin-cli
for n in layernorm-59-8192x50257 bias-gelu-54-8644x11803x13767; do
  $CLI import $D/$n.einsum -o /tmp/$n.napkin > /dev/null && $CLI tune /tmp/$n.napkin --apply --arch h200 > /dev/null
  for rep in 1 2; do
    for f in /tmp/$n.napkin $D/$n.example.napkin; do
      $CLI run $f --json --no-reference --no-energy --model h200 > /tmp/f.json 2>/dev/null
      python3 -c "
import json,sys; r=json.load(open('/tmp/f.json')); print('%-60s %.4f ms (predicted %.4f)' % (sys.argv[1], r['time_ms']['median'], r['prediction']['time_ms']))" "$f"
    done
  done
done
