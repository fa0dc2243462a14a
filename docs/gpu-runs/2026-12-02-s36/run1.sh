#!/bin/bash
# Session 36, call 1: session 35's unrun call 4 (softmax over a long first axis, the
# axis split against the whole axis, seven shapes), then seed 2244's first half by the
# user's path on this tree.
set -u
bash docs/gpu-runs/2026-12-02-s35/run4.sh > $OUT/strided.txt 2>&1; tail -30 $OUT/strided.txt
SEED=2244 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
