#!/bin/bash
# For the next device call (written in session 19 after its device time ran out; pack
# first: build-aux/gpu-check --pack _build-fast; carry .gpu): the bias's gradient summed
# by the fused attention backward (docs/plan.md, "Attention backward"), not yet run on a
# GPU — grad-check against torch.autograd with the softmax recomputed on T5's trained
# position bias, BERT's and Llama's additive masks (their gradients asked for, as `grad`
# does by default) and Swin's relative position bias; and one case of session 19 again.
# First the kernel alone at the tiles the plan takes where shared memory is 99 KiB.
set -u
O=${OUT:-/tmp/s20}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=$O/alone NO_TORCH=1 ONLY='^(p-|g-|a-|c-)'; timeout 150 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
tail -10 "$O/alone.txt"   # p-*: the tiles the plan takes on a 99 KiB GPU (L40S, RTX 4090)
( export MODEL=h200 BUDGET=200 COMPILE=0 RECOMPUTE=softmax
  OUT=$O/bias timeout 230 bench/gpu/grad-check \
    --cases zoo-t5-bias,zoo-bert-mask,zoo-swin-bias,zoo-llama-attention,zoo-llama-mask-frozen \
    > "$O/bias.log" 2>&1 ); tail -8 "$O/bias/table.md"
