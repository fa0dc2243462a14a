#!/bin/bash
# Session 24 call 9: the two shapes of call 4's GEMM sweep whose plan the 192-column tiles
# change (g23 256 × 128 → 128 × 192, g34 128 × 256 → 128 × 192), old tree and new, twice each.
# gs-old and gs-new held those two cases of call 4's sweep (cases.json, .einsum, .napkin), written
# by `gemm-sweep.py --write` with the old and new CLIs; not kept.
set -u
D=docs/gpu-runs/2026-12-01-s24
for r in 1 2; do
  NAPKIN_PACK=.gpu-old OUT=/tmp/s24c9-old python3 bench/gpu/gemm-sweep.py --run $D/gs-old --arch h200 2>&1 | grep -E "^g[0-9]" | head -2 | sed 's/^/old /'
  NAPKIN_PACK=.gpu OUT=/tmp/s24c9-new python3 bench/gpu/gemm-sweep.py --run $D/gs-new --arch h200 2>&1 | grep -E "^g[0-9]" | head -2 | sed 's/^/new /'
done
