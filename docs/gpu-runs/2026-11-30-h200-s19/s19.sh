#!/bin/bash
# Session 19, one call on one H200 (pack first: build-aux/gpu-check --pack _build-fast;
# carry .gpu): the fused attention backward's new reach.
#  1. the kernel alone against its fp32 reference, correctness cases only (a–e, v-*, and
#     g-*: dQ, dK, dV laid apart from Q, K, V — their own strides);
#  2. bench/gpu/grad-check against torch.autograd, the softmax recomputed, on the zoo
#     modules that newly take the fused backward: gradients in [b, s, h, d] (CLIP, Qwen3,
#     Whisper at 1500 keys), an fp32 softmax cast for P·V with GQA (Qwen2), a bias score
#     operand (Llama's additive mask, frozen), keep flags (SDPA's boolean mask), and
#     Llama SDPA GQA again.
set -u
O=${OUT:-/tmp/s19}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export OUT=$O/alone NO_TORCH=1 ONLY='^[a-g]-'; timeout 150 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
tail -16 "$O/alone.txt"
rm -rf "$O/alone"/[a-g]-* 2>/dev/null
( export MODEL=h200 BUDGET=230 COMPILE=0 RECOMPUTE=softmax
  OUT=$O/grad-re timeout 250 bench/gpu/grad-check \
    --cases zoo-llama-mask-frozen,zoo-sdpa-bool-mask,zoo-clip,zoo-qwen2,zoo-qwen3,zoo-whisper,zoo-llama-sdpa-gqa \
    > "$O/grad-re.log" 2>&1 ); tail -10 "$O/grad-re/table.md"
