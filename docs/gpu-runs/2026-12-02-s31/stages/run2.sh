#!/bin/bash
# Stages of the plan's wgmma GEMMs outside regions (NAPKIN_GEMM_STAGES): the Llama MLP's
# gated gate/up and down projections at 3 and 4 stages, the ping-pong bias + GELU at 3, 4
# and 6, alternating; each from einsum text as the plan runs it.
set -u
D=docs/gpu-runs/2026-12-02-s31
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
CLI=.gpu/bin/napkin-cli
one () {  # label, args…
  local label=$1; shift
  $CLI run "$@" --json --no-reference --no-energy --model h200 > /tmp/st.json 2>/dev/null
  python3 -c "
import json,sys; r=json.load(open('/tmp/st.json')); print('%-40s %.4f ms (predicted %.4f)' % (sys.argv[1], r['time_ms']['median'], r['prediction']['time_ms']))" "$label"
}
prep () { $CLI import $1 -o $2 > /dev/null && $CLI tune $2 --apply --arch h200 > /dev/null; }
prep $D/gated/swiglu-llama.einsum /tmp/sw.napkin
prep $D/stages/down.einsum /tmp/down.napkin
prep $D/stages/bias-gelu-54-8644x11803x13767.einsum /tmp/bg.napkin
for rep in 1 2; do
  for st in 3 4; do NAPKIN_GEMM_STAGES=$st one "gated 8192x14336x4096 stages=$st" /tmp/sw.napkin; done
  for st in 3 4; do NAPKIN_GEMM_STAGES=$st one "down 8192x4096x14336 stages=$st" /tmp/down.napkin; done
  for st in 3 4 6; do NAPKIN_GEMM_STAGES=$st one "bias-gelu-54 (ping-pong) stages=$st" /tmp/bg.napkin; done
done
