#!/bin/sh
# napkin-cli archs/analyze/compare/tune: exit codes, formats, --write (TAP).
# Usage: test-cli-perf.sh NAPKIN_CLI EXAMPLES_DIR
CLI=$1
EX=$2
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
check () { desc=$1; shift; if "$@"; then ok "$desc"; else not_ok "$desc"; fi; }
rc () { "$@" > "$TMP/out" 2> "$TMP/err"; echo $?; }

check "archs lists six GPUs" sh -c "'$CLI' archs | grep -c -E '^(a100|h100|h200|l40s|rtx4090|b200) ' | grep -qx 6"
# Run from its build tree without NAPKIN_DATA_DIR, the program finds the source tree's
# data through the build tree's napkin-uninstalled.txt (docs/packaging.md).
check "uninstalled archs finds the source tree's profiles" sh -c "cd '$TMP' && env -u NAPKIN_DATA_DIR -u NAPKIN_ARCH_DIR '$CLI' archs --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert len(d) >= 6 and all(\"/data/archs/\" in a[\"path\"] for a in d), d'"
# A user's profile that hides the bundled one of its id is named where it is used.
mkdir -p "$TMP/xdg/napkin/archs"
SRC_H100=$("$CLI" archs --json | python3 -c 'import json,sys; print([a["path"] for a in json.load(sys.stdin) if a["id"] == "h100"][0])')
sed 's/"name": *"[^"]*"/"name": "My H100"/' "$SRC_H100" > "$TMP/xdg/napkin/archs/h100.json"
check "a user profile over the bundled one is named by analyze" sh -c "env -u NAPKIN_DATA_DIR XDG_DATA_HOME='$TMP/xdg' '$CLI' analyze '$EX/matmul.napkin' --arch h100 2>&1 >/dev/null | grep -q 'note: h100: your profile $TMP/xdg/napkin/archs/h100.json, used instead of $SRC_H100'"
check "and by compare, once" sh -c "env -u NAPKIN_DATA_DIR XDG_DATA_HOME='$TMP/xdg' '$CLI' compare '$EX/matmul.napkin' 2>&1 >/dev/null | grep -c 'your profile' | grep -qx 1"
check "archs --json parses" sh -c "'$CLI' archs --json | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) >= 6'"

"$CLI" archs --json > "$TMP/archs.json"
for f in "$EX"/*.napkin; do
  for a in a100 h100 h200 l40s rtx4090 b200; do
    # --gpus 1: one GPU's whole diagram, also for a gpus region that stores a count
    r=$(rc "$CLI" analyze "$f" --arch $a --format json --gpus 1)
    if [ "$r" = 0 ] || [ "$r" = 1 ]; then
      python3 - "$TMP/out" "$r" "$TMP/archs.json" <<'PY' && ok "analyze $(basename "$f") --arch $a" || not_ok "analyze $(basename "$f") --arch $a"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert math.isfinite(d["predicted_time_s"]) and d["predicted_time_s"] > 0
assert d["feasible"] == (sys.argv[2] == "0")
assert d["feasible"] or d["errors"], "infeasible without a reason"
for key in ("flops", "bound", "levels", "regions", "errors"):
    assert key in d, key
# honest figures (docs/model.md §7): no share above 100 % of its peak or of the total,
# one time per level in every table, one footprint (the plan's) that "feasible" agrees with
arch = [x for x in json.load(open(sys.argv[3])) if x["id"] == d["arch"]][0]
t = d["predicted_time_s"]
eps = 1 + 1e-9
if d["flops_by_unit"]["tensor"] > 0:
    assert d["throughput_flops_per_s"] <= d["tensor_throughput_flops_per_s"] * eps, "throughput above the tensor cores' peak"
    assert d["tensor_throughput_flops_per_s"] <= max(arch["tensor_flops_per_s"].values()) * eps
for level in d["levels"]:
    assert level["time_s"] == d["resources_s"][level["level"]], (level, d["resources_s"])
    assert level["time_s"] <= t * eps, ("level above the total", level["level"], level["time_s"], t)
# the kernels, each priced as timed alone, and their launches in one run (docs/model.md, "Launches")
assert abs(sum(k["time_s"] for k in d["kernels"]) + d["launch_run_s"] - t) <= 1e-9 * t, "kernels do not add up to the total"
assert d["launches"] >= len(d["kernels"]), "fewer launches than kernels"
for k in d["kernels"]:
    assert 0 < k["fill"] <= 1 and k["time_s"] <= t * eps
    for res, rt in k["resources_s"].items():
        assert rt <= k["time_s"] * eps, ("a resource above its kernel's time", k["name"], res)
for r in d["regions"]:
    if "plan_shared_bytes" in r:
        assert r["footprint_bytes"] == r["plan_shared_bytes"] and r["footprint_source"] == "plan", r["name"]
    if r["level"] == "smem" and r["footprint_bytes"] > arch["smem_bytes_per_sm"]:
        assert not r["feasible"] and not d["feasible"], ("a footprint over the SM's shared memory is feasible", r["name"])
    if r["feasible"] and r["level"] == "smem" and r["per_sm"] >= 1:
        assert r["footprint_bytes"] * r["per_sm"] <= arch["smem_bytes_per_sm"], r["name"]
PY
    else
      not_ok "analyze $(basename "$f") --arch $a: exit $r"
    fi
  done
done

check "unknown arch is a usage error (2)" test "$(rc "$CLI" analyze "$EX/matmul.napkin" --arch v100)" = 2
check "it names the known ids" grep -q "known: " "$TMP/err"
check "bad dtype is a usage error (2)" test "$(rc "$CLI" analyze "$EX/matmul.napkin" --dtype fp12)" = 2
check "bad format is a usage error (2)" test "$(rc "$CLI" analyze "$EX/matmul.napkin" --format xml)" = 2
# a resized diagram is re-tiled where a tile no longer fits, and says so (docs/editor.md)
check "--axis below a tile re-tiles it and says so" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --axis k=77 --format json 2> '$TMP/refit.err' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"feasible\"], d[\"errors\"]' && grep -q 'tile k=128 is larger than the axis (77); re-tiled to 77' '$TMP/refit.err'"
check "infeasible tile exits 1" test "$(rc "$CLI" analyze "$EX/matmul-tiled.napkin" --tile block.m=100)" = 1
check "and says which constraint" grep -q "not a multiple of 16" "$TMP/out"
check "csv has a header" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --format csv | head -1 | grep -q '^section,name,level'"
check "md has a table" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --format md | grep -q '^| level |'"
check "compare: one row per arch and dtype" sh -c "'$CLI' compare '$EX/matmul-tiled.napkin' --arch h100,a100 --dtype fp8-e4m3 --format csv | tail -n +2 | wc -l | grep -qx 4"
# both times, labelled (docs/model.md, "Best path"): the B200's tcgen05 is marked not generated and
# beats its generated mma.sync code; the ranking on the best path follows FA3/FA4's figures
check "compare: best path and generated code, labelled" sh -c "'$CLI' compare '$EX/flash-attention.napkin' --arch b200 | grep -q 'b200     file .* sfu    tcgen05\\*' && '$CLI' compare '$EX/flash-attention.napkin' --arch b200 | grep -q 'tcgen05 is b200.s best tensor-core path; Napkin generates mma.sync here'"
check "compare: B200 > H200 >= H100 > A100 on the best path" sh -c "'$CLI' compare '$EX/flash-attention.napkin' --arch a100,h100,h200,b200 --json | python3 -c 'import json,sys; t={r[\"arch\"]: r[\"best_time_s\"] for r in json.load(sys.stdin)}; assert t[\"b200\"] < t[\"h200\"] <= t[\"h100\"] < t[\"a100\"], t'"
check "analyze: the best path's line" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --arch b200 | grep -q '^Best path .* on tcgen05, bound by sfu'"
check "analyze: a gpus region's own count when --gpus is not given" sh -c "'$CLI' analyze '$EX/tp-mlp.napkin' --format json 2> '$TMP/gpus.err' | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"gpus\"] == 2, d.get(\"gpus\")' && grep -q 'on its own count, 2 GPUs' '$TMP/gpus.err'"
check "analyze: --gpus 1 is one GPU's whole diagram" sh -c "'$CLI' analyze '$EX/tp-mlp.napkin' --gpus 1 --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert \"gpus\" not in d and d[\"predicted_time_s\"] > 0'"
check "plan: the region's count too" sh -c "'$CLI' plan '$EX/tp-mlp.napkin' 2>/dev/null | head -1 | grep -q 'on 2 GPUs'"
check "compare explains infeasible rows" sh -c "'$CLI' compare '$EX/matmul-tiled.napkin' --arch rtx4090 | grep -q 'rtx4090 file: regions\[0\]: 107520 bytes of shared memory per block'"

check "--paper: every tile from device memory (H = 2·4096³/128 + 4096² elements)" sh -c "'$CLI' analyze '$EX/matmul-tiled.napkin' --paper --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"model\"] == \"paper\"; assert d[\"levels\"][0][\"transfer_elements\"] == 2 * 4096**3 // 128 + 4096**2'"
check "without --paper, L2 sharing cuts device-memory traffic" sh -c "'$CLI' analyze '$EX/matmul-tiled.napkin' --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"levels\"][0][\"transfer_elements\"] < 2 * 4096**3 // 128'"
check "archs --json keeps every figure's source" sh -c "'$CLI' archs --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert all(len(a[\"sources\"]) >= 30 for a in d)'"

cp "$EX/matmul-tiled.napkin" "$TMP/m.napkin"
before=$("$CLI" analyze "$TMP/m.napkin" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_time_s"])')
check "tune --write succeeds" test "$(rc "$CLI" tune "$TMP/m.napkin" --top 3 --write)" = 0
after=$("$CLI" analyze "$TMP/m.napkin" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_time_s"])')
check "the written tiles are faster ($before s -> $after s)" python3 -c "assert $after < $before"
check "tune --json parses" sh -c "'$CLI' tune '$EX/flash-attention.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"best\"][0][\"predicted_time_s\"] <= d[\"current\"][\"predicted_time_s\"]'"
# A diagram without regions: tune derives its kernels, one or several (docs/plan.md, "Deriving a diagram").
check "tune without regions: a plain matmul is one GEMM the plan runs as drawn" sh -c "'$CLI' tune '$EX/matmul.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); k=d[\"kernels\"]; assert [x[\"nodes\"] for x in k] == [[\"mm\"]] and not k[0][\"region\"], k; assert d[\"derived_time_s\"] <= d[\"unfused_time_s\"], d'"
check "tune without regions: attention derives the flash-attention relabeling" sh -c "'$CLI' tune '$EX/attention.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); k=d[\"kernels\"]; assert len(k) == 1 and k[0][\"kind\"] == \"attention\" and k[0][\"region\"], k; assert k[0][\"tiles\"] == \"b=1 h=1 q=128 k~128 stages=3\", k[0]'"
# A diagram of several kernels without regions: tune derives the partition (docs/plan.md, "Deriving a diagram").
check "tune without regions: mlp derives two kernels, GELU in lin1's epilogue" sh -c "'$CLI' tune '$EX/mlp.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); k=d[\"kernels\"]; assert [x[\"nodes\"] for x in k] == [[\"lin1\",\"act\"],[\"lin2\"]], k; assert d[\"derived_time_s\"] < d[\"unfused_time_s\"], d; assert k[0][\"through_device_memory\"] == [\"act\"]'"
check "tune --derive on attention: one flash kernel, 5.29x the unfused (keys by 128 in 3 stages)" sh -c "'$CLI' tune --derive '$EX/attention.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); k=d[\"kernels\"]; assert len(k) == 1 and k[0][\"kind\"] == \"attention\" and k[0][\"region\"], k; assert abs(d[\"speedup\"] - 5.29) < 0.01, d[\"speedup\"]'"
cp "$EX/mlp.napkin" "$TMP/mlp.napkin"
check "tune --apply writes the derived diagram" test "$(rc "$CLI" tune "$TMP/mlp.napkin" --apply)" = 0
check "the written diagram analyzes to the derived total" sh -c "'$CLI' analyze '$TMP/mlp.napkin' --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert abs(d[\"predicted_time_s\"] - 2.8842e-3) < 1e-6, d[\"predicted_time_s\"]'"
python3 - "$EX/softmax.napkin" "$TMP/only-map.napkin" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d['regions'] = []
for n in d['nodes']:
    if n['kind'] == 'softmax':
        n['kind'] = 'map'; n['fn'] = 'gelu'; del n['axis']
json.dump(d, open(sys.argv[2], 'w'))
PY
check "tune with no region derives a lone map too (0)" test "$(rc "$CLI" tune "$TMP/only-map.napkin")" = 0
check "… as one element-wise kernel" sh -c "'$CLI' tune '$TMP/only-map.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); k=d[\"kernels\"]; assert len(k) == 1, k'"
cp "$EX/matmul.napkin" "$TMP/plain.napkin"
"$CLI" tune "$TMP/plain.napkin" --write > /dev/null 2>&1
check "tune --write on a plain matmul keeps it as drawn: the plan's own GEMM is best" python3 -c "import json; d = json.load(open('$TMP/plain.napkin')); assert d['regions'] == [], d['regions']"
cp "$EX/attention.napkin" "$TMP/plain-attention.napkin"
"$CLI" tune "$TMP/plain-attention.napkin" --write > /dev/null 2>&1
check "tune --write on a plain attention draws the attention region" python3 -c "import json; d = json.load(open('$TMP/plain-attention.napkin')); assert [r['name'] for r in d['regions']] == ['attention1'], d['regions']"

# tune --measure through a stand-in runner (no GPU needed): its "measured" time is
# 1 / (block.m · block.n), or a constant, read from the diagram file it is given.
cat > "$TMP/runner" <<'SH'
#!/bin/sh
for a in "$@"; do case "$a" in -*) ;; *) f=$a ;; esac; done
python3 - "$f" "$FAKE_MODE" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
marks = {r['name']: r['marks'] for r in d['regions']}['block']
size = lambda m: list(m.values())[0] if isinstance(m, dict) else 1
t = 1.0 if sys.argv[2] == 'constant' else 1e6 / (size(marks['m']) * size(marks['n']))
print(json.dumps({'status': 'ok', 'time_ms': {'median': t}, 'kernels': [{'name': 'napkin_k0'}],
                  'energy': {'joules_per_run': 0.5}, 'exit_status': 0}))
PY
SH
chmod +x "$TMP/runner"
measure () { NAPKIN_RUNNER="$TMP/runner" FAKE_MODE=$1 rc "$CLI" tune "$EX/matmul-tiled.napkin" --measure "$2" $3 --json; }
check "tune --measure runs K relabelings" sh -c "test \"\$(NAPKIN_RUNNER='$TMP/runner' FAKE_MODE=tiles '$CLI' tune '$EX/matmul-tiled.napkin' --measure 4 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); print(len([m for m in d[\"measured\"] if m[\"status\"] == \"ok\" and m[\"measured_time_s\"] > 0]))')\" = 4"
measure tiles 5 --spread > /dev/null
check "tune --measure --spread: the best first, the others spread over the ranking" python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
ranks = [m['rank'] for m in d['measured']]
assert ranks[0] == 1 and ranks == sorted(ranks) and ranks[-1] > 5, ranks
def ranks(v):
    return [sum(x < y for x in v) + (sum(x == y for x in v) + 1) / 2 for y in v]
p = ranks([m['predicted_time_s'] for m in d['measured']])
q = ranks([m['measured_time_s'] for m in d['measured']])
mp, mq = sum(p) / len(p), sum(q) / len(q)
num = sum((a - mp) * (b - mq) for a, b in zip(p, q))
den = (sum((a - mp) ** 2 for a in p) * sum((b - mq) ** 2 for b in q)) ** 0.5
assert abs(d['spearman'] - num / den) < 1e-9, (d['spearman'], num / den)
assert all(m['measured_energy_j'] == 0.5 and m['predicted_energy_j'] > 0 for m in d['measured'])
PY
check "tune --measure: equal measurements give no correlation (null)" sh -c "NAPKIN_RUNNER='$TMP/runner' FAKE_MODE=constant '$CLI' tune '$EX/matmul-tiled.napkin' --measure 3 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"spearman\"] is None and len(d[\"measured\"]) == 3'"
# run on a diagram without regions runs the model's best relabeling (--plain: as drawn);
# the stand-in runner reports the regions of the diagram it was given.
cat > "$TMP/regionrunner" <<'SH'
#!/bin/sh
for a in "$@"; do case "$a" in -*) ;; *) f=$a ;; esac; done
python3 - "$f" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
print(json.dumps({'status': 'ok', 'time_ms': {'median': 1.0}, 'kernels': [{'name': ','.join(r['name'] for r in d.get('regions', []))}],
                  'exit_status': 0}))
PY
SH
chmod +x "$TMP/regionrunner"
NAPKIN_RUNNER="$TMP/regionrunner" "$CLI" run "$EX/matmul.napkin" --tune --json > "$TMP/run-best.json" 2> "$TMP/run-best.err"
check "run --tune without regions runs the model's best and says so" sh -c "grep -q \"no relabeling in the file; running the model's best on h100: the plan's own kernels\" '$TMP/run-best.err' && python3 -c 'import json; d = json.load(open(\"$TMP/run-best.json\")); assert d[\"kernels\"][0][\"name\"] == \"\", d'"
NAPKIN_RUNNER="$TMP/regionrunner" "$CLI" run "$EX/attention.napkin" --tune --json > "$TMP/run-best-att.json" 2> "$TMP/run-best-att.err"
check "run --tune on a plain attention runs its derived region" sh -c "grep -q \"running the model's best on h100: attention1.q=128 attention1.k~\" '$TMP/run-best-att.err' && python3 -c 'import json; d = json.load(open(\"$TMP/run-best-att.json\")); assert d[\"kernels\"][0][\"name\"] == \"attention1\", d'"
NAPKIN_RUNNER="$TMP/regionrunner" "$CLI" run "$EX/matmul.napkin" --plain --json > "$TMP/run-plain.json" 2> "$TMP/run-plain.err"
check "run --plain runs the diagram as drawn" sh -c "! grep -q 'running the model' '$TMP/run-plain.err' && python3 -c 'import json; d = json.load(open(\"$TMP/run-plain.json\")); assert d[\"kernels\"][0][\"name\"] == \"\", d'"
check "tune --measure with --dtype is a usage error (2)" test "$(rc "$CLI" tune "$EX/matmul-tiled.napkin" --measure 2 --dtype bf16)" = 2

# Stages are a tile spec too; tune tries the wgmma skeletons' tiles and 2-6 stages, fast.
check "--tile REGION.stages=N sets the pipeline stages" sh -c "'$CLI' analyze '$EX/matmul-tiled.napkin' --tile block.stages=5 --format json | python3 -c 'import json,sys; r=json.load(sys.stdin)[\"regions\"][0]; assert r[\"stages\"] == 5 and r[\"paper_footprint_bytes\"] == 2 * (128 * 128 + 5 * 2 * 128 * 64) and r[\"footprint_bytes\"] == r[\"plan_shared_bytes\"]'"
check "--tile REGION.stages=9 is a usage error (2)" test "$(rc "$CLI" analyze "$EX/matmul-tiled.napkin" --tile block.stages=9)" = 2
# (the search also covers the plan's own kernel without the drawn block: regions are hints)
check "tune on flash-attention (4224 queries and keys, d 64): q tiles of 192, key chunks of 176, 2-6 stages" sh -c "'$CLI' tune '$EX/flash-attention.napkin' --axis q=4224 --axis k=4224 --axis d=64 --top 1000 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); t=[c[\"tiles\"] for c in d[\"best\"]]; assert d[\"seconds\"] > 0, d[\"seconds\"]; assert any(\".q=192\" in x for x in t) and any(\".k~176\" in x for x in t); assert {int(x.split(\".stages=\")[1]) for x in t} >= {2, 3, 4}, t'"
check "tune on flash-attention resized: its block, as fast as the plan's own kernel, stays first" sh -c "'$CLI' tune '$EX/flash-attention.napkin' --axis q=4224 --axis k=4224 --axis d=64 --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"regions_replaced\"] is False; assert d[\"best\"][0][\"tiles\"] == d[\"current\"][\"tiles\"], (d[\"best\"][0], d[\"current\"])'"

# calibrate through a stand-in runner: the H100 figures of docs/gpu-runs, with and without
# the wgmma loop's result. On Hopper mma.sync goes to tensor_mma_sync and tensor keeps the
# wgmma path: measured, or the datasheet's peak when the loop failed.
cat > "$TMP/calrunner" <<'SH'
#!/bin/sh
python3 - "$FAKE_WGMMA" <<'PY'
import json, sys
t = lambda f: {"flops_per_s": f * 1e12, "instruction": "mma.sync"}
cal = {"launch_overhead_s": 4.07e-6, "hbm_bytes_per_s": 2.809e12, "smem_bytes_per_clock_per_sm": 87.28,
       "tensor": {"fp16": t(645.1), "bf16": t(645.4), "tf32": t(322.7), "int8": t(1290.6)}}
if sys.argv[1] == "yes":
    cal["tensor_wgmma"] = {"fp16": {"flops_per_s": 812.5e12}, "bf16": {"flops_per_s": 810.0e12}}
else:
    cal["tensor_wgmma_error"] = "the wgmma loop did not compile: (stand-in)"
print(json.dumps({"gpu": {"name": "NVIDIA H100 80GB HBM3", "sms": 132, "clock_mhz": 1980}, "arch": "sm_90a",
                  "calibration": cal, "status": "ok", "exit_status": 0}))
PY
SH
chmod +x "$TMP/calrunner"
mkdir -p "$TMP/archs"
for w in yes no; do
  NAPKIN_RUNNER="$TMP/calrunner" FAKE_WGMMA=$w "$CLI" calibrate -o "$TMP/archs/h100-measured.json" > "$TMP/cal-$w.txt" 2>&1
  NAPKIN_ARCH_DIR="$TMP/archs" "$CLI" analyze "$EX/matmul-tiled.napkin" --arch h100-measured --format json > "$TMP/cal-$w.json" 2>&1
  check "calibrate (wgmma measured: $w): the profile loads, mma.sync in tensor_mma_sync, wgmma in tensor" python3 - "$TMP/archs/h100-measured.json" "$w" "$TMP/cal-$w.txt" <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); out = open(sys.argv[3]).read()
rate = lambda f: f["value"] * 132 * p["tensor_clock_mhz"]["value"] * 1e6 / 1e12
assert abs(rate(p["tensor_mma_sync"]["fp16"]) - 645.1) < 0.1, p["tensor_mma_sync"]
if sys.argv[2] == "yes":
    assert abs(rate(p["tensor"]["fp16"]) - 812.5) < 0.1 and "wgmma m64n256k16" in p["tensor"]["fp16"]["source"]
    assert "wgmma fp16 812 bf16 810 TFLOP/s (measured)" in out, out
else:
    assert abs(rate(p["tensor"]["fp16"]) - 989.4) < 0.5 and "the wgmma loop did not run" in p["tensor"]["fp16"]["source"]
    assert "wgmma not measured (the wgmma loop did not compile: (stand-in))" in out, out
assert abs(rate(p["tensor"]["tf32"]) - 494.7) < 0.5 and abs(rate(p["tensor_mma_sync"]["tf32"]) - 322.7) < 0.1
PY
  check "calibrate (wgmma measured: $w): wgmma regions at tensor, the others at tensor_mma_sync" python3 - "$TMP/cal-$w.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["arch"] == "h100-measured" and d["kernels"][0]["tensor_path"] == "wgmma", d["kernels"][0]
PY
done

# the datasheet profile comes from NAPKIN_ARCH_DIR first (as every other command reads
# profiles), so a packed napkin-cli calibrates away from its build tree
mkdir -p "$TMP/datasheets"
python3 - "$EX/../archs/h100.json" "$TMP/datasheets/h100.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["max_blocks_per_sm"]["source"] = "from NAPKIN_ARCH_DIR"; json.dump(d, open(sys.argv[2], "w"))
PY
NAPKIN_ARCH_DIR="$TMP/datasheets" NAPKIN_RUNNER="$TMP/calrunner" FAKE_WGMMA=yes "$CLI" calibrate -o "$TMP/cal-dir.json" > "$TMP/cal-dir.txt" 2>&1
check "calibrate reads the datasheet profile from NAPKIN_ARCH_DIR first" python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert d['max_blocks_per_sm']['source'] == 'from NAPKIN_ARCH_DIR', d['max_blocks_per_sm']" "$TMP/cal-dir.json"

echo "1..$n"
exit $fail
