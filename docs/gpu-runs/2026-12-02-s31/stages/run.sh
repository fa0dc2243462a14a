#!/bin/bash
# Ping-pong GEMM stages: the same drawn bias + GELU product (128 × 128 ping-pong tiles) at
# 4 and 6 stages, alternating, at three sizes; and the einsum file as the plan runs it.
set -u
D=docs/gpu-runs/2026-12-02-s31/stages
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
CLI=.gpu/bin/napkin-cli
one () {  # label, args…
  local label=$1; shift
  $CLI run "$@" --json --no-reference --no-energy --model h200 > /tmp/st.json 2>/dev/null
  python3 -c "
import json,sys; r=json.load(open('/tmp/st.json')); k=[x for x in r['prediction']['kernels'] if x['kind']=='gemm'][0]
print('%-58s total %.4f ms, gemm %.4f (predicted %.4f)' % (sys.argv[1], r['time_ms']['median'], k.get('measured_ms') or 0, k['predicted_ms']))" "$label"
}
for ax in "" "--axis m=8192 --axis n=16384 --axis k=4096" "--axis m=4096 --axis n=11008 --axis k=4096"; do
  for rep in 1 2; do
    for st in 4 6; do one "${ax:-8644x11803x13767} stages=$st" $D/bias-gelu-54.example.napkin $ax --tile block.stages=$st; done
  done
done
$CLI import $D/bias-gelu-54-8644x11803x13767.einsum -o /tmp/bg.napkin > /dev/null && $CLI tune /tmp/bg.napkin --apply --arch h200 > /dev/null
one "einsum, the plan's own (6 stages)" /tmp/bg.napkin
one "drawn, 4 stages" $D/bias-gelu-54.example.napkin --tile block.stages=4
one "einsum, the plan's own (6 stages)" /tmp/bg.napkin
