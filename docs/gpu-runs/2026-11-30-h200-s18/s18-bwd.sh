#!/bin/bash
# Session 18, one call on one H200 (pack first: build-aux/gpu-check --pack _build-fast;
# carry .gpu): the fused attention backward (kernels/attn-bwd-sm80.cu).
#  1. the kernel alone against an fp32 reference, and timed beside torch SDPA's flash
#     (FlashAttention-2) and cuDNN backward on the same shapes (bench/gpu/attn-bwd-alone.sh);
#  2. the user's path: an example's backward with the softmax recomputed (napkin-cli grad
#     --recompute softmax, no region drawn), run by the runner against its fp32 reference
#     at 1024 and timed at the example's size;
#  3. bench/gpu/grad-check against torch.autograd: the three backwards the row term in 16
#     bits made wrong (stored), and the attention cases with the softmax recomputed.
set -u
O=${OUT:-/tmp/s18}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
C=$PWD/.gpu/bin/napkin-cli
( export OUT=$O/alone; timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 ); tail -45 "$O/alone.txt"
summ () { python3 - "$1" <<'PY'
import json,sys
t=open(sys.argv[1]).read()
try:
  j,_=json.JSONDecoder().raw_decode(t[t.index("{"):])
except Exception as e:
  print("  unparsed:", t[:300].replace("\n"," ")); sys.exit()
e=j.get("error",{}); tm=j.get("time_ms",{}); p=j.get("prediction",{})
print("  status", j.get("status"), j.get("message",""), "| max_rel", e.get("max_rel"), json.dumps(e.get("outputs"))[:300])
print("  measured %s ms, predicted %s ms" % (tm.get("median"), p.get("time_ms")))
for k in p.get("kernels", []):
  print("    %-22s %-20s measured %s predicted %s" % (k.get("name"), k.get("kind"), k.get("measured_ms"), k.get("predicted_ms")))
for k in j.get("kernels", []):
  print("    %s %s grid %s regs %s local %s" % (k.get("name"), k.get("skeleton"), k.get("grid"), k.get("registers"), k.get("local_bytes")))
PY
}
for ex in flash-attention attention-causal-gqa; do
  $C grad data/examples/$ex.napkin --recompute softmax -o "$O/$ex-bwd.napkin" > /dev/null
  $C plan "$O/$ex-bwd.napkin" --arch h200 | grep -E "^[0-9]+\." | tr '\n' ' '; echo
  timeout 120 $C run --json --repeats 10 --reference-repeats 0 --no-energy --model h200 \
      --axis q=1024 --axis k=1024 "$O/$ex-bwd.napkin" > "$O/$ex-1k.json" 2> "$O/$ex-1k.err"
  echo "$ex backward, q = k = 1024:"; summ "$O/$ex-1k.json"
  timeout 120 $C run --json --repeats 20 --no-reference --no-energy --model h200 \
      "$O/$ex-bwd.napkin" > "$O/$ex-full.json" 2> "$O/$ex-full.err"
  echo "$ex backward, its own size:"; summ "$O/$ex-full.json"
  $C grad data/examples/$ex.napkin -o "$O/$ex-bwd-stored.napkin" > /dev/null
  timeout 120 $C run --json --repeats 20 --no-reference --no-energy --model h200 \
      "$O/$ex-bwd-stored.napkin" > "$O/$ex-stored.json" 2> "$O/$ex-stored.err"
  echo "$ex backward with the probabilities stored, its own size:"; summ "$O/$ex-stored.json" | head -3
done
rm -rf "$O/alone"/*-d* "$O/alone"/[a-e]-* 2>/dev/null
( export MODEL=h200 BUDGET=120 COMPILE=0
  OUT=$O/grad-store timeout 140 bench/gpu/grad-check --cases zoo-gpt2-block,zoo-torch-mha,zoo-bart-attention \
    > "$O/grad-store.log" 2>&1 ); tail -6 "$O/grad-store/table.md"
( export MODEL=h200 BUDGET=150 COMPILE=0 RECOMPUTE=softmax
  OUT=$O/grad-re timeout 170 bench/gpu/grad-check --cases attention,causal-attention,zoo-torch-mha,zoo-gpt2-block,zoo-bart-attention \
    > "$O/grad-re.log" 2>&1 ); tail -8 "$O/grad-re/table.md"
