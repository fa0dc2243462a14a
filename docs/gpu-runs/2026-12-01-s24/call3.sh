#!/bin/bash
# Session 24 call 3: the user's path on seed 2225's ten problems sessions 23 and 24 had no
# device time for (rows over long axes, attention, the large SwiGLU), torch.compile baselines.
set -u
O=${OUT:-/tmp/s24c3}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=420
  ONLY="swiglu-54-12882x10153x1024 softmax-55-256x50257 softmax0-56-9638x32768 softmax0-57-8192x50257 softmax0-58-2184x128256 layernorm-59-5730x50257 attn-decode-60-4x64x1x20033x128 attn-self-61-3x16x2048x2048x128 attn-cross-62-1x1x12662x294x80 attn-self-63-2x4x1024x1024x80" \
  OUT=$O/u timeout 450 bench/gpu/user-path --seed 2225 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^\| |^GPU|ratio|measured|einsum" $O/u/table.md | cut -d'|' -f2-14
