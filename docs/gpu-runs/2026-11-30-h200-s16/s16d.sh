#!/bin/bash
# Session 16 call 4: how relabelings of attention rank on the GPU against the model
# (tune --measure: key chunks of 16–256, stages 2–6) on the example at d 256 and on
# three drawn examples of seed 2026 that Suggest had moved to small chunks; the drawn
# examples after Suggest again (regions as hints, the chunk floor); the zoo's four blocks.
set -u
O=${OUT:-/tmp/s16d}; mkdir -p "$O"
pack=$PWD/.gpu
export LD_LIBRARY_PATH="$pack/lib:/usr/local/cuda/lib64:/usr/local/nvidia/lib64:${LD_LIBRARY_PATH:-}"
export NAPKIN_RUNNER="$pack/bin/napkin-runner" NAPKIN_ARCH_DIR="$PWD/data/archs" NAPKIN_DATA_DIR="$PWD/data"
cli=$pack/bin/napkin-cli
python3 bench/gpu/user-path.py --write $O/w --seed 2026 --cases 64 > /dev/null 2>&1
cp data/examples/attention-causal-d256.napkin $O/w/
for f in attention-causal-d256.napkin attn-self-63-4x64x4096x4096x128.example.napkin attn-self-25-2x64x4096x4096x80.example.napkin attn-cross-40-2x16x6158x300x256.example.napkin; do
  echo "== $f"
  timeout 100 $cli tune $O/w/$f --arch h200 --top 40 --measure 8 --spread --repeats 10 2>&1 | sed -n '/^rank .*predicted/,$p' | tee $O/measure-${f%%.*}.txt
done
( export CALIBRATE=0 MODEL=h200 COMPILE=0 CASE_TIMEOUT=40 BUDGET=200
  ONLY="attn-self-63-4x64x4096x4096x128 attn-self-25-2x64x4096x4096x80 attn-cross-47-4x8x3852x300x192 attn-cross-40-2x16x6158x300x256 attn-self-43-2x32x2048x2048x128 layernorm-36-5156x55028 bias-gelu-29-14944x2048x256 bias-gelu-14-64x11316x7765 mlp-32-1845x768x2048 residual-30-16384x512x960 attn-self-1-1x8x1024x1024x256 attn-self-28-2x4x1024x1024x128" \
  OUT=$O/u timeout 230 bench/gpu/user-path --seed 2026 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/w
tail -5 $O/u/table.md
timeout 200 python3 bench/gpu/zoo-e2e.py --cli $cli --model h200 --out $O/zoo llama3_8b_block gpt2_medium_block vit_l16_block bart_attention > $O/zoo.log 2>&1; echo "zoo rc=$?"
grep -E "^\| [a-z]|^result" $O/zoo.log
rm -rf $O/zoo
