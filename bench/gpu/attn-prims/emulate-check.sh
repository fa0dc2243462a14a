#!/bin/sh
# The printed attention kernels' index arithmetic against a float64 attention, on the CPU
# (bench/gpu/attn-prims/emulate.py): small problems of both paths (h100: attn-sm90, a100:
# attn-sm80) with score operands — T5's bias, padding masks of 0 / −∞ (one sequence wholly
# padded), keep flags at random, as padding and as a lower triangle, GQA, multi-query
# with a head a block under a causal mask, decoding with a
# split (and under a window: the splits divide the chunks it leaves), cross-attention
# to 77 keys walked by persistent blocks (h100; with a window, eight heads a block under a
# window that leaves most tiles empty, fp8 P·V, and d 256 with one K/V stage), an fp8 O, an fp32 bias — and a plain one. Skips without numpy (NAPKIN_PYTHON names a
# Python that has it).
# Usage: emulate-check.sh ATTN_PRIMS EMULATE_PY   (TAP output)
gen=$1
emulate=$2
py=${NAPKIN_PYTHON:-python3}
if ! "$py" -c 'import numpy' 2> /dev/null; then
  echo "1..0 # SKIP numpy not installed (set NAPKIN_PYTHON)"
  exit 0
fi
out=$(mktemp -d) || exit 1
trap 'rm -rf "$out"' EXIT
specs='name=plain b=2 h=4 nq=300 nkv=300 d=64 t=bf16 bq=128 bkv=128 st=2
name=t5 b=2 h=4 nq=300 nkv=300 d=64 t=bf16 bq=128 bkv=128 st=2 bias=h,q,k first=1 alpha=1
name=pad b=4 h=4 nq=200 nkv=333 d=64 t=fp16 bq=128 bkv=64 st=2 bias=b,k bfill=pad
name=bhqk-odd b=2 h=2 nq=150 nkv=150 d=32 t=fp16 bq=64 bkv=64 st=2 bias=b,h,q,k
name=keys77 b=2 h=2 nq=200 nkv=77 d=64 t=fp16 bq=128 bkv=64 st=2 bias=q,k
name=tril b=2 h=4 nq=256 nkv=256 d=128 t=fp16 bq=128 bkv=128 st=2 keep=q,k kfill=tril
name=keep-bqk b=2 h=2 nq=192 nkv=256 d=64 t=bf16 bq=64 bkv=64 st=2 keep=b,q,k
name=bias-keep b=3 h=2 nq=128 nkv=300 d=64 t=bf16 bq=128 bkv=64 st=2 bias=h,q,k first=1 alpha=1 keep=b,k kfill=pad
name=gqa b=2 h=8 hk=2 nq=130 nkv=200 d=64 t=bf16 bq=64 bkv=64 st=2 bias=b,h,g,q,k keep=b,k kfill=pad
name=mqa-causal b=2 h=6 hk=1 nq=200 nkv=200 d=64 t=bf16 bq=64 bkv=64 st=2 gt=1 mask=causal
name=decode b=3 h=8 hk=2 nq=1 nkv=2048 d=64 t=bf16 bq=0 bkv=64 st=2 gt=4 keep=b,k kfill=pad
name=decode-window b=2 h=8 hk=2 nq=1 nkv=3000 d=64 t=bf16 bq=0 bkv=64 st=2 gt=4 mask=window off=2999 left=700 right=0
name=cross-persist b=2 h=16 nq=1100 nkv=77 d=32 t=fp16 bq=128 bkv=64 st=2
name=cross-persist-window b=2 h=16 nq=1100 nkv=77 d=32 t=bf16 bq=128 bkv=64 st=2 mask=window off=0 left=600 right=29
name=cross-persist-packed b=2 h=8 hk=1 nq=3000 nkv=77 d=32 t=bf16 bq=16 bkv=64 st=2 gt=8 mask=window off=0 left=300 right=0
name=cross-persist-fp8 b=2 h=16 nq=1100 nkv=77 d=64 t=fp8-e4m3 v=fp8-e4m3 o=bf16 bq=128 bkv=64 st=2
name=cross-persist-d256 b=2 h=32 hk=8 nq=600 nkv=77 d=256 t=bf16 bq=128 bkv=32 st=2 mask=causal
name=fp8-o b=2 h=4 nq=300 nkv=200 d=64 t=fp8-e4m3 v=fp8-e4m3 o=fp8-e4m3 bq=128 bkv=64 st=2
name=fp32-bias b=2 h=2 nq=200 nkv=256 d=128 t=fp16 bq=128 bkv=128 st=2 bias=h,q,k bt=fp32 keep=b,k kfill=pad'
n=$(echo "$specs" | wc -l)
echo "1..$((2 * n))"
i=0
echo "$specs" | while IFS= read -r spec; do
  for arch in h100 a100; do
    i=$((i + 1))
    name=$(echo "$spec" | sed 's/name=\([^ ]*\).*/\1/')
    case "$spec $arch" in
      *t=fp8*a100) echo "ok $i - $name on $arch # SKIP fp8 attention runs on Hopper's wgmma only"; continue ;;
    esac
    if ! "$gen" "$spec arch=$arch" > "$out/$name-$arch.cuh" 2> "$out/err"; then
      echo "not ok $i - $name on $arch: $(head -c 300 "$out/err")"
      continue
    fi
    line=$("$py" "$emulate" "$out/$name-$arch.cuh" 2>&1 | tail -1)
    case $line in
      *" ok "*) echo "ok $i - $name on $arch: $line" ;;
      *) echo "not ok $i - $name on $arch: $line" ;;
    esac
  done
done
