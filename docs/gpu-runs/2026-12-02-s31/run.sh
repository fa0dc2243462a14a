#!/bin/bash
# Session 31, one device call: the gated pairs (bench/gpu/gated.py on gated/*.einsum), then
# the Llama-3-8B block end to end against the module (bench/gpu/zoo-e2e.py).
set -u
D=docs/gpu-runs/2026-12-02-s31
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
PY=/opt/torch/.venv/bin/python
mkdir -p $OUT/r
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv > $OUT/r/gpu.txt 2>&1
$PY bench/gpu/gated.py --cli .gpu/bin/napkin-cli --model h200 --out /tmp/gated $D/gated/*.einsum > $OUT/r/gated.log 2>&1
tail -12 $OUT/r/gated.log
if [ "${ZOO:-1}" = 1 ]; then
  $PY bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 --out /tmp/zoo --compile-mode max-autotune \
    ${ZOO_NAMES:-llama3_8b_block} > $OUT/r/zoo.log 2>&1
  tail -25 $OUT/r/zoo.log
fi
tar czf $OUT/r.tgz -C $OUT r && rm -rf $OUT/r
