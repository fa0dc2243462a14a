#!/bin/bash
# Session 16 call 1: session 15's plan and import changes (never run on a GPU) — every
# example through build-aux/gpu-check, then the modules session 15 added to the zoo, end
# to end against the modules themselves.
set -u
O=${OUT:-/tmp/s16a}; mkdir -p "$O"
( OUT=$O/check timeout 290 build-aux/gpu-check > $O/gpu-check.log 2>&1; echo "gpu-check rc=$?" )
grep -E "^[a-z0-9-]+ +(ok|FAIL|fail|error)|contain|standalone|alone" $O/gpu-check.log | head -40
rm -rf $O/check/work 2>/dev/null
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
timeout 270 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  falcon_mqa_block dit_block clip_encoder_layer gemma2_attention vit_patch_embed bloom_attention \
  sdpa_window_mask mlp_mixer_block > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| [a-z]|^== " $O/zoo.log | cut -c1-220 | head -40
rm -rf $O/zoo
