#!/bin/bash
# The next device calls (written at the end of session 32):
#  1. FIRST: the rows kernel's half team (taken by the plan since session 32, never run):
#     layernorm 59062 × 8763 and 933 × 9023 at 256 threads a row (three blocks an SM)
#     against the old 512 (NAPKIN_ROWS_THREADS=512), alternating, checked:
#        bench/gpu/ab-env NAPKIN_ROWS_THREADS "256 512 256 512" docs/gpu-runs/2026-12-02-s32/rows/*.einsum
#     (256 is the half team the plan takes; any value set, even 0, turns the plan's own
#     half-team choice off, so name it). Expected 0.60–0.65 ms against 0.91 for the first; if
#     not, revert register_team (src/plan/napkin-plan-rows.c).
#  1b. what #27 still lacks, one call: the printed PyTorch of the two zoo modules added since
#     session 25's 46-of-46 check (se_block, linear_attention), then the five blocks on this
#     tree in one call against max-autotune:
#        python3 bench/gpu/zoo-roundtrip.py --cli .gpu/bin/napkin-cli --full --derive h200 \
#          --out /tmp/zr se_block linear_attention
#        /opt/torch/.venv/bin/python bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 \
#          --out /tmp/zoo --compile-mode max-autotune   (as docs/gpu-runs/2026-12-02-s31/run3.sh)
#  2. a fresh seed (SEED=2239) PART=1/2 then 2/2, each its own call (about 130 s each):
#        SEED=2239 PART=1/2 OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh
#  3. left on the user's path (docs/perf-notes.md, "Session 32"): d-192 cross-attention
#     with 77 keys at 0.78× cuDNN (the persistent walk streams Q and O at 1.96 TB/s); a
#     drawn attention example whose 128 × 128 tiles leave half the SMs idle where the
#     plan's own 64 × 64 do not (4 heads × 2048, d 32, 0.0126 against 0.0093 ms).
set -u
mkdir -p $OUT/rt
timeout 200 bench/gpu/ab-env NAPKIN_ROWS_THREADS "256 512 256 512" docs/gpu-runs/2026-12-02-s32/rows/*.einsum \
  > $OUT/rt/ab.md 2> $OUT/rt/ab.err
cut -c1-300 $OUT/rt/ab.md
