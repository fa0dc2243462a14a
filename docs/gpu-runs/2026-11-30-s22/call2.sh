#!/bin/bash
# Session 22, call 2: the epilogue re-priced (transcendental maps 0.32 clocks an element
# staged, 0.62 in registers) moves GELU/SiLU out of short-K GEMMs into an element-wise pass;
# d 256 cross-attention persistent with one K/V stage. The user's-path cases it changes
# (torch.compile baselines), and the zoo blocks whose derivation changed, end to end.
set -u
O=${OUT:-/tmp/s22c2}; mkdir -p "$O"
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64:${LD_LIBRARY_PATH:-}
export NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
( export CALIBRATE=0 MODEL=h200 COMPILE=1 CASE_TIMEOUT=60 BUDGET=200
  ONLY="swiglu-50-8192x16384x128 bias-gelu-29-14944x2048x256 attn-cross-61-1x64x1204x77x256 mlp-10-7115x2048x8192 mlp-13-3258x768x8192 mlp-32-1845x768x2048" \
  OUT=$O/u2026 timeout 230 bench/gpu/user-path --seed 2026 --cases 64 > $O/u2026.log 2>&1 )
( export CALIBRATE=0 MODEL=h200 COMPILE=1 CASE_TIMEOUT=60 BUDGET=100
  ONLY="swiglu-49-6556x9179x1178 bias-gelu-29-1024x14276x1024 mlp-14-620x1024x2048 mlp-31-6735x1024x2048 mlp-54-2176x2048x8192" \
  OUT=$O/u26 timeout 120 bench/gpu/user-path --seed 26 --cases 64 > $O/u26.log 2>&1 )
rm -rf $O/u2026/work $O/u26/work
timeout 230 python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out $O/zoo \
  llama3_8b_block gpt2_medium_block swiglu_fused mlp_mixer_block gemma_geglu_mlp > $O/zoo.log 2>&1; echo "zoo rc=$?"
for d in u2026 u26; do echo "== $d"; grep -E "^\| " $O/$d/table.md | cut -d'|' -f2-11; tail -n 7 $O/$d/table.md; done
tail -n 30 $O/zoo.log
