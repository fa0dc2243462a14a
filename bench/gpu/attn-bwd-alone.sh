#!/bin/sh
# The attention backward (kernels/attn-bwd-sm80.cu) on the GPU, alone: each case below
# compiled with bench/gpu/attn-bwd-alone.cu (all in parallel, for the local GPU's arch),
# run (pre, main, dq), checked against an fp32 reference and timed; then torch's
# scaled_dot_product_attention backward (flash and cuDNN backends) on the timing shapes,
# if torch imports. About 1–2 minutes; run from the repository root on the GPU machine:
#
#   sh bench/gpu/attn-bwd-alone.sh            (NO_TORCH=1: skip torch; NVCC=…: the compiler;
#                                             ONLY=REGEX: the cases whose names match)
#
# Cases (a)–(e) check correctness at odd sizes, masks, GQA and bf16, the v-* cases with K and
# V of a large common component (VBIAS 1: 3 + small noise), where a Drow inconsistent with
# the kernels' own dP (Σ dO·O from the 16-bit O) shows in dQ, the g-* cases with dQ, dK, dV
# in the other layout than Q, K, V (their own strides), the p-* cases with the tiles the plan
# takes where a block has 99 KiB of shared memory (Ada: 4 warps, BQ 32 or 16, the first
# launch on 2 warps); the t-* cases time
# B·H = 4×16, N 4096 at d 64 and 128, causal and not, at several tiles (WARPS, BQ: pick the
# best), checking the first K/V head only; WARPS H: the wgmma kernel (HA: dQ by atomics;
# H:N, HA:N: NKB_ABL=N, parts left out — the x-* cases, times only, their checks fail). Logs and binaries in $OUT (default
# /tmp/attn-bwd-alone); the table on stdout and in $OUT/table.txt.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
NVCC=${NVCC:-$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)}
OUT=${OUT:-/tmp/attn-bwd-alone}
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
arch=sm_${cc:-90}
[ "$arch" = sm_90 ] && arch=sm_90a   # the h-* cases' wgmma
rm -rf "$OUT"
mkdir -p "$OUT/napkin-fragment"
table="$OUT/table.txt"
: > "$table"

# The LEAD fragment (as the code generator prints it): blk = b·HK + hk, the K/V head first;
# the strides LD_* come from the harness.
cat > "$OUT/napkin-fragment/LEAD" <<'EOF'
  {
    const long i_ = blk % LD_HK;

    blk /= LD_HK;
    q_base += i_ * LD_QH;
    o_base += i_ * LD_QH;
    k_base += i_ * LD_KH;
    kv_flat += i_;
    dq_base += i_ * LD_DQH;
    dk_base += i_ * LD_DKH;
    dv_base += i_ * LD_DKH;
  }
  q_base += blk * LD_QB;
  o_base += blk * LD_QB;
  k_base += blk * LD_KB;
  kv_flat += blk * LD_HK;
  dq_base += blk * LD_QB;
  dk_base += blk * LD_KB;
  dv_base += blk * LD_KB;
EOF

# No score operands (the printer's BWSCORES fragment when the attention has none).
cat > "$OUT/napkin-fragment/BWSCORES" <<'EOF'
#define NKB_SC_GRAD 0
#define NKB_SC_ANY 0
#define NKB_SC_DECL
#define NKB_SC_BIAS(g_, q_, k_) 0.0f
#define NKB_SC_KEEP(g_, q_, k_) true
EOF

# name B HK G NQ NKV D LO HI LEFT RIGHT OFF BF16 BSHD WARPS BQ NREF [VBIAS [GSHD [PRE_WARPS [GSPLIT]]]]
cases='
a-nomask-d64            1 2  1 1024 1024  64 0 0   0 0   0 0 0 8 64 2
b-causal-d128-1000      1 2  1 1000 1000 128 0 1   0 0   0 0 0 8 32 2
b-causal-d128-w4q64     1 2  1 1000 1000 128 0 1   0 0   0 0 0 4 64 2
c-gqa4-causal-bf16      2 2  4  512  512 128 0 1   0 0   0 1 1 8 32 4
d-cross-d80-nomask      1 3  1  300  700  80 0 0   0 0   0 0 1 8 64 3
d-cross-d80-hi          1 3  1  300  700  80 0 1   0 0 400 0 1 8 64 3
e-window-gqa2-bf16      1 2  2  777  777  64 1 1 200 0   0 1 0 8 32 2
v-biased-d64            1 2  1  300  300  64 0 0   0 0   0 0 0 8 32 2 1
v-biased-d128-causal    1 1  1  300  300 128 0 1   0 0   0 0 0 8 32 1 1
v-biased-d80-cross-bf16 1 2  2  200  333  80 0 1   0 0 100 1 1 4 64 2 1
g-grads-bshd-gqa-causal 2 2  2  300  300  64 0 1   0 0   0 0 0 4 64 4 0 1
g-grads-bhsd-d80-bf16   1 3  1  250  410  80 0 0   0 0   0 1 1 8 64 3 0 0
p-ada-d128-causal       1 2  2  700  700 128 0 1   0 0   0 0 0 4 32 2 0 0 2
p-d64-bq16-pw2-bf16     1 2  1  333  500  64 0 0   0 0   0 1 1 4 16 2 0 1 2
t-d64-w8q64             4 16 1 4096 4096  64 0 0   0 0   0 0 0 8 64 1
t-d64-w4q64             4 16 1 4096 4096  64 0 0   0 0   0 0 0 4 64 1
t-d64-causal-w8q64      4 16 1 4096 4096  64 0 1   0 0   0 0 0 8 64 1
t-d64-causal-w4q64      4 16 1 4096 4096  64 0 1   0 0   0 0 0 4 64 1
t-d128-w8q32            4 16 1 4096 4096 128 0 0   0 0   0 0 0 8 32 1
t-d128-w8q64            4 16 1 4096 4096 128 0 0   0 0   0 0 0 8 64 1
t-d128-w4q64            4 16 1 4096 4096 128 0 0   0 0   0 0 0 4 64 1
t-d128-w4q32            4 16 1 4096 4096 128 0 0   0 0   0 0 0 4 32 1
t-d128-causal-w8q32     4 16 1 4096 4096 128 0 1   0 0   0 0 0 8 32 1
t-d128-causal-w8q64     4 16 1 4096 4096 128 0 1   0 0   0 0 0 8 64 1
t-d128-causal-w4q64     4 16 1 4096 4096 128 0 1   0 0   0 0 0 4 64 1
t-d128-causal-w4q32     4 16 1 4096 4096 128 0 1   0 0   0 0 0 4 32 1
h-a-nomask-d64          1 2  1 1024 1024  64 0 0   0 0   0 0 0 H 64 2
h-b-causal-d128-1000    1 2  1 1000 1000 128 0 1   0 0   0 0 0 H 64 2
h-b-nomask-d128-333     1 2  1  333  333 128 0 0   0 0   0 0 0 H 64 2
h-c-gqa4-causal-bf16    2 2  4  512  512 128 0 1   0 0   0 1 1 H 64 4
h-d-cross-d64-hi        1 3  1  300  700  64 0 1   0 0 400 0 1 H 64 3
h-d-cross-d128-bf16     1 2  1  200  333 128 0 0   0 0   0 1 1 H 64 2
h-e-window-gqa2-bf16    1 2  2  777  777  64 1 1 200 0   0 1 0 H 64 2
h-v-biased-d128-causal  1 1  1  300  300 128 0 1   0 0   0 0 0 H 64 1 1
h-g-grads-bshd-gqa-c    2 2  2  300  300  64 0 1   0 0   0 0 0 H 64 4 0 1
h-t-d64                 4 16 1 4096 4096  64 0 0   0 0   0 0 0 H 64 1
h-t-d64-causal          4 16 1 4096 4096  64 0 1   0 0   0 0 0 H 64 1
h-t-d128                4 16 1 4096 4096 128 0 0   0 0   0 0 0 H 64 1
h-t-d128-causal         4 16 1 4096 4096 128 0 1   0 0   0 0 0 H 64 1
h-ta-d64                4 16 1 4096 4096  64 0 0   0 0   0 0 0 HA 64 1
h-ta-d128               4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA 64 1
h-ta-d128-causal        4 16 1 4096 4096 128 0 1   0 0   0 0 0 HA 64 1
h-t-gqa4-d128-causal    4 4  4 4096 4096 128 0 1   0 0   0 0 0 H 64 1
h-t-gqa4-d128           4 4  4 4096 4096 128 0 0   0 0   0 0 0 H 64 1
h-t-gqa4-d64-causal     4 4  4 4096 4096  64 0 1   0 0   0 0 0 H 64 1
h-s-mqa8-causal-d128    2 1  8 2048 2048 128 0 1   0 0   0 1 0 H 64 1 0 0 4 8
h-s-gqa4-d64-split2     1 2  4  700  500  64 0 0   0 0   0 0 1 H 64 2 0 1 4 2
h-n-mqa8-causal-d128    2 1  8 2048 2048 128 0 1   0 0   0 1 0 H 64 1 0 0 4 1
x1-d128                 4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA:1 64 1
x32-d128                4 16 1 4096 4096 128 0 0   0 0   0 0 0 H:32 64 1
x64-d128                4 16 1 4096 4096 128 0 0   0 0   0 0 0 H:64 64 1
x32-d64                 4 16 1 4096 4096  64 0 0   0 0   0 0 0 H:32 64 1
x96-d128                4 16 1 4096 4096 128 0 0   0 0   0 0 0 H:96 64 1
x2-d128                 4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA:3 64 1
x4-d128                 4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA:4 64 1
x8-d128                 4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA:8 64 1
x16-d128                4 16 1 4096 4096 128 0 0   0 0   0 0 0 HA:16 64 1
x1-d64                  4 16 1 4096 4096  64 0 0   0 0   0 0 0 HA:1 64 1
'

# 1. torch's baselines in the background while the cases compile (the GPU is idle then)
if [ "${NO_TORCH:-0}" = 1 ] || ! python3 -c 'import torch' 2> /dev/null; then
  echo "torch: not available (or NO_TORCH=1), no baselines" > "$OUT/torch.txt"
else
  timeout 150 python3 - > "$OUT/torch.txt" 2> "$OUT/torch.log" <<'EOF' &
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def timed(fn, reps=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


backends = [getattr(SDPBackend, n, None) for n in ('FLASH_ATTENTION', 'CUDNN_ATTENTION')]
for d in (64, 128):
    for causal in (False, True):
        B, H, N = 4, 16, 4096
        key = "d%d%s" % (d, "-causal" if causal else "")
        res = []
        for be in backends:
            try:
                if be is None:
                    raise RuntimeError("backend not in this torch")
                q, k, v = (torch.randn(B, H, N, d, device='cuda', dtype=torch.float16, requires_grad=True)
                           for _ in range(3))
                with sdpa_kernel([be]):
                    out = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
                do = torch.randn_like(out)
                res.append("%.3f" % timed(lambda: torch.autograd.grad(out, (q, k, v), do, retain_graph=True)))
                del q, k, v, out, do
            except Exception as e:
                res.append("-")
                print("torch %s %s: %s" % (key, be, str(e)[:200]), file=sys.stderr)
        print(key, *res, flush=True)
EOF
fi

# 2. compile every case, in parallel (then wait for torch too: the runs want the GPU alone)
echo "$cases" | {
  while read -r name B HK G NQ NKV D LO HI LEFT RIGHT OFF BF16 BSHD W BQ NREF VB GS PW SPL; do
    [ -n "$name" ] || continue
    echo "$name" | grep -Eq "${ONLY:-.}" || continue
    alpha=$(awk -v d="$D" 'BEGIN { printf "%.9e", 1 / sqrt (d) }')
    sm90=0 atom=0 abl=0
    case "$W" in *:*) abl=${W#*:}; W=${W%%:*} ;; esac
    [ "$W" = H ] && { sm90=1; W=8; }
    [ "$W" = HA ] && { sm90=1; W=8; atom=1; }
    "$NVCC" -O3 -std=c++17 -gencode=arch=compute_${arch#sm_},code=$arch -Xptxas -v -I "$root/kernels" -I "$OUT" \
      -DC_NAME="\"$name\"" -DC_B="$B" -DC_HK="$HK" -DC_G="$G" -DC_NQ="$NQ" -DC_NKV="$NKV" -DC_D="$D" \
      -DC_LO="$LO" -DC_HI="$HI" -DC_LEFT="$LEFT" -DC_RIGHT="$RIGHT" -DC_OFF="$OFF" -DC_ALPHA="$alpha" \
      -DC_BF16="$BF16" -DC_BSHD="$BSHD" -DC_WARPS="$W" -DC_SM90="$sm90" -DNKB_DQ_ATOMICS="$atom" -DNKB_ABL="$abl" -DC_BQ="$BQ" -DC_PW="${PW:-4}" -DC_GS="${SPL:-1}" -DC_NREF="$NREF" -DC_VBIAS="${VB:-0}" -DC_GSHD="${GS:-$BSHD}" \
      -o "$OUT/$name" "$here/attn-bwd-alone.cu" > "$OUT/$name.log" 2>&1 &
  done
  wait
}
wait
echo "compiled for $arch ($(date +%T)); ptxas, bwd_main:"
for f in "$OUT"/*.log; do
  n=${f##*/}
  n=${n%.log}
  [ "$n" = torch ] && continue
  r=$(grep -A3 "Compiling entry function 'bwd_main'" "$f" | tail -2 | sed 's/ptxas info *: //' | tr -s ' \n' ' ')
  echo "  $n:$r"
done

# 3. run them one at a time (the GPU to itself)
echo "case, max |err| / max |ref| of each gradient, the check, median ms of the three kernels and of main" \
  "alone, TFLOP/s (2.5 × the forward's flops), registers of pre/main/dq, local memory bytes:" | tee -a "$table"
echo "$cases" | while read -r name rest; do
  [ -n "$name" ] || continue
  echo "$name" | grep -Eq "${ONLY:-.}" || continue
  if [ ! -x "$OUT/$name" ]; then
    echo "$name: did not compile:" | tee -a "$table"
    grep -m 5 -i error "$OUT/$name.log" | sed 's/^/  /' | tee -a "$table"
    continue
  fi
  timeout 60 "$OUT/$name" 2>> "$OUT/run.log" | tee -a "$table" || echo "$name: rc=$? (see $OUT/run.log)" | tee -a "$table"
done

# 4. torch beside the timing cases (TFLOP/s on the same count)
echo
echo "torch SDPA backward, fp16, B·H 4×16, N 4096 (median ms of 20; TFLOP/s as above):"
if [ -s "$OUT/torch.txt" ]; then
  awk '
    /^d[0-9]/ {
      d = substr ($1, 2) + 0; f = 2.5 * 4 * 64 * 4096 * 4096 * d / ($1 ~ /causal/ ? 2 : 1)
      fl = ($2 == "-") ? "-" : sprintf ("%.3f ms %6.1f TFLOP/s", $2, f / ($2 * 1e-3) / 1e12)
      cu = ($3 == "-") ? "-" : sprintf ("%.3f ms %6.1f TFLOP/s", $3, f / ($3 * 1e-3) / 1e12)
      printf "  %-12s flash %-28s cudnn %s\n", $1, fl, cu; next }
    { print "  " $0 }' "$OUT/torch.txt" | tee -a "$table"
else
  echo "  (none: $OUT/torch.log)" | tee -a "$table"
fi
if grep -v '^x' "$table" | grep -qE 'FAIL|error|rc=|did not compile'; then
  echo "== some cases failed (table: $table, logs: $OUT/*.log, $OUT/run.log)"
else
  echo "== all checks passed; table: $table"
fi
