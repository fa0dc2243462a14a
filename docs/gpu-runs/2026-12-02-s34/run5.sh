#!/bin/bash
# Session 34, call 5: seed 2242's wrong case (a window over one key: most query rows see
# no key; unfused, the rows kernel's softmax of an all-masked row gave NaN) on the fixed
# rows kernels, by the user's path: import, tune --apply, run (checked against fp32).
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=.gpu/bin/napkin-cli
f=docs/gpu-runs/2026-12-02-s34/attn/attn-cross-20-1x64x10006x1x256.einsum
$cli import $f -o /tmp/a.napkin > /dev/null && $cli tune /tmp/a.napkin --arch h200 --apply > /dev/null 2>&1
$cli plan /tmp/a.napkin --arch h200 | grep -E "^[0-9]\."
timeout 60 $cli run /tmp/a.napkin --repeats 10 2>&1 | tail -6
