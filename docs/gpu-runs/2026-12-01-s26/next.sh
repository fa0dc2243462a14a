#!/bin/bash
# The next device call (written in session 26, which had no device time): skinny products that
# read an unaligned operand in place on mma.sync with 16/32-row tiles, 4 blocks an SM and
# split K (docs/plan.md, "Reading unaligned operands in place"; opt-in), A/B against the copy
# to aligned rows (NAPKIN_GEMM_IN_PLACE=1 / 0), each checked against the fp32 reference,
# beside torch (cuBLAS) in the same call; then the two user's-path cases they are about, with
# the switch on, beside their torch.compile baselines. Session 24 measured the idea with 64-row
# tiles slower than the copy everywhere. Look at: the in-place time against the prediction (16
# narrow copies an SM a clock and 4 skinny blocks an SM are assumptions), and whether it beats
# the copy and torch; make it the default only if it does. The call after: the session-25
# next.sh (seed 2228).
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
S=docs/gpu-runs/2026-12-01-s26/skinny
MODEL=h200 timeout 200 bench/gpu/ab-env NAPKIN_GEMM_IN_PLACE "1 0" $S/*.einsum > $O/ab.md 2>&1
timeout 60 python3 bench/gpu/einsum-torch.py $S/*.einsum > $O/torch.md 2>&1
cat $O/ab.md $O/torch.md
( export CALIBRATE=0 MODEL=h200 COMPILE=1 COMPILE_BUDGET=20 BUDGET=120 NAPKIN_GEMM_IN_PLACE=1
  OUT=$O/u1 ONLY="bmm-49-39x2x1518x880" timeout 130 bench/gpu/user-path --seed 2227 --cases 64 > $O/u1.log 2>&1
  OUT=$O/u2 ONLY="residual-34-16x8650x8676" timeout 130 bench/gpu/user-path --seed 2224 --cases 64 > $O/u2.log 2>&1 )
rm -rf $O/u1/work $O/u2/work $O/u1/archs $O/u2/archs
grep -hE "^\| (bmm|residual)" $O/u1/table.md $O/u2/table.md
