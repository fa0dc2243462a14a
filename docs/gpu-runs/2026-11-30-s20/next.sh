#!/bin/bash
# The next device call (written in session 20, which had no device time: nothing here
# has run yet). Pack first: build-aux/gpu-check --pack _build-fast; carry .gpu.
#  1. the attention backward's main launch on wgmma (kernels/attn-bwd-sm80.cu with
#     NKB_MAIN_SM90), alone: the h-* cases for correctness and time, beside the mma.sync
#     kernel's best tiles and torch's flash and cuDNN backwards in the same call;
#  2. the same kernel as the plan prints it (NAPKIN_BWD_WGMMA=1), through grad-check
#     against torch.autograd: an example and five zoo attentions (d 64 and 128, GQA, causal,
#     a padding mask read, T5's bias with its gradient);
#  3. session 19's leftovers: the bias's gradient (T5, BERT, Swin, Llama) and the p-* tiles.
# If 1 and 2 pass: the plan takes the wgmma main without the variable (src/plan/
# napkin-plan-attn-bwd.c), and NAPKIN_ATTN_BWD_WGMMA_EFFICIENCY is fitted to 1's times.
set -u
O=${OUT:-/tmp/s21}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=$O/alone ONLY='^(h-|t-d128-w8q32$|t-d128-causal-w8q32|t-d64-w8q64$|t-d64-causal-w8q64)'
  timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
tail -24 "$O/alone.txt"
( export MODEL=h200 BUDGET=150 COMPILE=0 RECOMPUTE=softmax NAPKIN_BWD_WGMMA=1
  OUT=$O/wgmma timeout 180 bench/gpu/grad-check \
    --cases attention,zoo-llama-sdpa-gqa,zoo-whisper,zoo-clip,zoo-t5-bias,zoo-llama-mask-frozen > "$O/wgmma.log" 2>&1 ); tail -8 "$O/wgmma/table.md"
( export MODEL=h200 BUDGET=150 COMPILE=0 RECOMPUTE=softmax
  OUT=$O/bias timeout 180 bench/gpu/grad-check \
    --cases zoo-t5-bias,zoo-bert-mask,zoo-swin-bias,zoo-llama-mask-frozen > "$O/bias.log" 2>&1 ); tail -8 "$O/bias/table.md"
( export OUT=$O/p NO_TORCH=1 ONLY='^p-'; timeout 60 bash bench/gpu/attn-bwd-alone.sh > "$O/p.txt" 2>&1 ); tail -4 "$O/p.txt"
