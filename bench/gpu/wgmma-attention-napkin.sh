#!/bin/bash
# bench/gpu/run-bench's attention workloads through Napkin on a Hopper GPU, at the tiles
# the flash-wgmma skeleton was measured with (retired 2026-11-29: the wgmma runs are the
# general kernel, kernels/attn-sm90.cu; docs/plan.md, "The legacy attention skeletons"):
# each run checked against the runner's fp32 reference (the N16384 one at B1 H1, then
# timed at B2 H16 without it), the same tiles on mma.sync (runner --arch sm_90: no wgmma;
# the flash-mma skeleton) and PyTorch SDPA flash / cuDNN, all in one call.
#   here:           NAPKIN_PACK=.gpu-attn build-aux/gpu-check --pack _build-attn
#   on the GPU:     NAPKIN_PACK=.gpu-attn bench/gpu/wgmma-attention-napkin.sh   (logs under $OUT)
set -u
OUT=${OUT:-/tmp/wgmma-attention}
mkdir -p "$OUT"
pack=$PWD/${NAPKIN_PACK:-.gpu}
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner"
export NAPKIN_ARCH_DIR="$PWD/data/archs"
f=data/examples/flash-attention.napkin
table="$OUT/table.txt"
: > "$table"

# name, then the arguments of napkin-cli run (or of the runner itself when the first is --runner)
run () {
  local name=$1; shift
  if [ "$1" = --runner ]; then
    shift; "$NAPKIN_RUNNER" "$f" --reference-repeats 0 "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
  else
    "$pack/bin/napkin-cli" run "$f" --json --reference-repeats 0 "$@" > "$OUT/$name.json" 2> "$OUT/$name.err"
  fi
  python3 - "$OUT/$name.json" "$name" <<'PY' | tee -a "$table"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print('%-22s no JSON (%s)' % (sys.argv[2], e)); sys.exit()
k = (r.get('kernels') or [{}])[0]
e = r.get('error') or {}
t = (r.get('time_ms') or {}).get('median')
print('%-22s %-8s %-12s err %-9s %-5s %9s ms %7s TFLOP/s  %s' % (sys.argv[2], r.get('status'), k.get('skeleton'),
      '%.1e' % e['max_rel'] if 'max_rel' in e else '-', e.get('ok'), '%.4f' % t if t else '-',
      '%.1f' % r['tflops'] if 'tflops' in r else '-', (r.get('message') or k.get('note') or '')[:150]))
PY
}

N4=(--axis b=4 --axis h=16 --axis q=4096 --axis k=4096)
run d128-k128-s3 "${N4[@]}" --axis d=128 --tile block.k=128 --tile block.stages=3
run d128-k64-s2 "${N4[@]}" --axis d=128
run d128-mma-k64-s2 --runner "${N4[@]}" --axis d=128 --arch sm_90
run d64-k128-s4 "${N4[@]}" --axis d=64 --tile block.k=128 --tile block.stages=4
run d64-k128-s2 "${N4[@]}" --axis d=64 --tile block.k=128 --tile block.stages=2
run d64-mma-k64-s2 --runner "${N4[@]}" --axis d=64 --arch sm_90
run n16k-check-b1h1 --axis b=1 --axis h=1 --axis q=16384 --axis k=16384 --axis d=128 --tile block.k=128 --tile block.stages=3
run n16k-b2h16 --axis b=2 --axis h=16 --axis q=16384 --axis k=16384 --axis d=128 --tile block.k=128 --tile block.stages=3 \
    --no-reference
# Shapes beyond the benchmark (EDGE=1): bf16, an fp32 output, two chunks, q ≠ k, one and
# three consumer warpgroups, chunks of 16 keys; each checked against the fp32 reference.
if [ "${EDGE:-0}" = 1 ]; then
  for v in "bf16 bf16" "bf16 fp32"; do
    set -- $v
    python3 - "$f" "$OUT/fa-$1-$2.napkin" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for t in d['tensors']:
    t['dtype'] = sys.argv[4] if t['name'] == 'O' else sys.argv[3]
json.dump(d, open(sys.argv[2], 'w'))
PY
  done
  E=(--axis b=2 --axis h=4 --axis q=2048 --axis k=2048)
  f0=$f
  f=$OUT/fa-bf16-bf16.napkin run edge-bf16-d128 "${E[@]}" --axis d=128 --tile block.k=128 --tile block.stages=3
  f=$OUT/fa-bf16-fp32.napkin run edge-bf16-fp32-d64 "${E[@]}" --axis d=64 --tile block.k=128 --tile block.stages=4
  f=$OUT/fa-bf16-fp32.napkin run edge-bf16-fp32-mma --runner "${E[@]}" --axis d=64 --arch sm_90
  f=$f0
  run edge-two-chunks --axis b=1 --axis h=2 --axis q=128 --axis k=256 --axis d=64 --tile block.k=128 --tile block.stages=3
  run edge-q-ne-k --axis b=1 --axis h=4 --axis q=1024 --axis k=4096 --axis d=128 --tile block.k=128 --tile block.stages=3
  run edge-q64 --axis b=1 --axis h=4 --axis q=2048 --axis k=2048 --axis d=128 --tile block.q=64 --tile block.k=128 \
      --tile block.stages=3
  run edge-q192-d64 --axis b=1 --axis h=4 --axis q=3072 --axis k=3072 --axis d=64 --tile block.q=192 --tile block.k=128 \
      --tile block.stages=3
  run edge-q192-d128 --axis b=1 --axis h=4 --axis q=3072 --axis k=3072 --axis d=128 --tile block.q=192 --tile block.k=64 \
      --tile block.stages=3
  run edge-k16 --axis b=1 --axis h=2 --axis q=1024 --axis k=1024 --axis d=128 --tile block.k=16 --tile block.stages=4
fi

# What the model's search picks and how its picks measure (TUNE=0 skips)
if [ "${TUNE:-1}" = 1 ]; then
  for d in 128 64; do
    "$pack/bin/napkin-cli" tune "$f" "${N4[@]}" --axis d=$d --arch h100 --measure 3 --repeats 20 --timeout 200 --json \
      > "$OUT/tune-d$d.json" 2> "$OUT/tune-d$d.err"
    python3 - "$OUT/tune-d$d.json" $d <<'PY' | tee -a "$table"
import json, sys
try:
    r = json.load(open(sys.argv[1]))
except Exception as e:
    print('tune d%s: no JSON (%s)' % (sys.argv[2], e)); sys.exit()
for m in r.get('measured', []):
    print('tune d%s %-8s %-12s pred %7.4f ms meas %s  %s' % (sys.argv[2], m.get('status'), m.get('kernel'),
          1e3 * (m.get('predicted_time_s') or 0), '%.4f ms' % (1e3 * m['measured_time_s']) if m.get('measured_time_s') else '-',
          m.get('tiles')))
print('tune d%s spearman %s' % (sys.argv[2], r.get('spearman')))
PY
  done
fi

PYTHONUNBUFFERED=1 python3 - <<'PY' 2>&1 | tee -a "$table"
import sys; sys.path.insert(0, 'bench/gpu')
import baselines as b
from torch.nn.attention import SDPBackend as S
for (bb, h, n, d) in [(4, 16, 4096, 64), (4, 16, 4096, 128), (2, 16, 16384, 128)]:
    for name, be in (('flash', S.FLASH_ATTENTION), ('cudnn', S.CUDNN_ATTENTION)):
        r = b.attention(bb, h, n, d, be, 30)
        print('sdpa B%d H%d N%d d%d %-5s %9.4f ms %7.1f TFLOP/s' % (bb, h, n, d, name, r.get('time_ms', 0), r.get('tflops', 0)))
PY
