#!/bin/bash
# The next device call (written at the end of session 23):
# 1. seed 2225's 15 problems call 7 had no time for (the user's path on the final tree);
# 2. the Llama-3-8B block against torch.compile in max-autotune (the baseline; call 5
#    measured default compile only: 1.01×, inside compile's own 5.84–6.12 ms spread).
# Still to write: an A/B of the SwiGLU gate's SiLU in 128×256 cooperative tiles against
# 64×256 ping-pong at K 4096 (SiLU in cooperative registers measured ~0.65 clocks an
# element, priced 0.2) before its price changes.
set -u
O=${OUT:-/tmp/s24}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=150
  ONLY="bmm-49-40x91x512x32 fp8-50-32x5760x256 bias-gelu-51-128x64x3289 matmul-at-52-12020x736x162 swiglu-53-9623x5085x32 swiglu-54-12882x10153x1024 softmax-55-256x50257 softmax0-56-9638x32768 softmax0-57-8192x50257 softmax0-58-2184x128256 layernorm-59-5730x50257 attn-decode-60-4x64x1x20033x128 attn-self-61-3x16x2048x2048x128 attn-cross-62-1x1x12662x294x80 attn-self-63-2x4x1024x1024x80" \
  OUT=$O/u timeout 200 bench/gpu/user-path --seed 2225 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work; grep -E "^\| |^GPU|ratio|measured|einsum" $O/u/table.md | cut -d'|' -f2-14
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
timeout 300 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --compile-mode max-autotune \
  --out $O/zoo llama3_8b_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| |^  [a-z]" $O/zoo.log | head -20; rm -rf $O/zoo
