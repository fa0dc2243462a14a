#!/bin/bash
# Session 31, second call: seed 2237 part 1/2 of the user's path; the Llama block's attention
# at other tiles (GQA group packed or not); PyTorch's kernels for the block.
set -u
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
PY=/opt/torch/.venv/bin/python
CLI=.gpu/bin/napkin-cli
mkdir -p $OUT/r2
SEED=${SEED:-2237} PART=${PART:-1/2} OUT=$OUT/s1 bash docs/gpu-runs/2026-12-01-s27/seed.sh > $OUT/r2/seed.log 2>&1
tar czf $OUT/s1.tgz -C $OUT s1 && rm -rf $OUT/s1
tail -5 $OUT/r2/seed.log
$CLI import tests/import/llama-block.graph.json -o /tmp/ll.napkin && $CLI tune /tmp/ll.napkin --apply --arch h200 > /dev/null
for t in "" "--tile attention1.g=parallel:1 --tile attention1.s=128" "--tile attention1.g=parallel:2 --tile attention1.s=64" \
         "--tile attention1.g=parallel:1 --tile attention1.s=64" "--tile attention1.k=64"; do
  $CLI run /tmp/ll.napkin --json --no-reference --no-energy --model h200 $t > /tmp/att.json 2>/dev/null
  $PY - "$t" <<'PYEOF' | tee -a $OUT/r2/attention.txt
import json, sys
r = json.load(open("/tmp/att.json"))
k = [k for k in r["prediction"]["kernels"] if k["name"] == "attention1"]
print("%-60s total %.3f ms; attention1 predicted %.4f measured %s" % (sys.argv[1] or "(the plan's tiles)", r["time_ms"]["median"],
      k[0]["predicted_ms"], k[0].get("measured_ms")))
PYEOF
done
$PY bench/gpu/torch-profile.py tests/import/llama_block.py build max-autotune > $OUT/r2/torch-profile.txt 2>&1
grep -A25 "== compiled" $OUT/r2/torch-profile.txt | head -30
tar czf $OUT/r2.tgz -C $OUT r2 && rm -rf $OUT/r2
