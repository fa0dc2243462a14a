#!/bin/bash
# Session 35, call 2: (a) seed 2242's two cases left open (the window over one key, checked
# on the fixed rows kernels; the persistent cross-attention whose drawn 128-query tiles
# ran 20 % slower, with 128-row blocks now priced at their measured stream); (b) why a
# windowed cross-attention with most query tiles empty ran 1.87× its price (seed 2243,
# fp8 Q·Kᵀ, 4 × 16 × 15789 × 300 d 256): the same problem with only the queries that see
# a key, and in fp16; (c) seed 2243 part 2.
set -u
D=docs/gpu-runs/2026-12-02-s35
S=docs/gpu-runs/2026-12-01-s27/seed.sh
ONLY="attn-cross-20-1x64x10006x1x256 attn-cross-46-1x16x10915x77x256" SEED=2242 PART=2/2 OUT=$OUT/o1 bash $S > $OUT/o1.log 2>&1
grep -h "attn-cross-20\|attn-cross-46" $OUT/o1/u/table.md; cp $OUT/o1/u/table.md $OUT/table-2242-p2-only.md; rm -rf $OUT/o1
echo "== empty tiles"
bench/gpu/ab-env NAPKIN_NONE "1" $D/empty/*.einsum
echo "== seed 2243 part 2"
SEED=2243 PART=2/2 OUT=$OUT/s2 bash $S > $OUT/seed2.log 2>&1
cp $OUT/s2/u/table.md $OUT/table-2243-p2.md 2>/dev/null; cp $OUT/s2/u/user-path.json $OUT/user-path-2243-p2.json 2>/dev/null
rm -rf $OUT/s2; tail -8 $OUT/seed2.log
