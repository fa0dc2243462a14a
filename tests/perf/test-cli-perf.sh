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
check "archs --json parses" sh -c "'$CLI' archs --json | python3 -c 'import json,sys; assert len(json.load(sys.stdin)) >= 6'"

for f in "$EX"/*.napkin; do
  for a in a100 h100 h200 l40s rtx4090 b200; do
    r=$(rc "$CLI" analyze "$f" --arch $a --format json)
    if [ "$r" = 0 ] || [ "$r" = 1 ]; then
      python3 - "$TMP/out" "$r" <<'PY' && ok "analyze $(basename "$f") --arch $a" || not_ok "analyze $(basename "$f") --arch $a"
import json, math, sys
d = json.load(open(sys.argv[1]))
assert math.isfinite(d["predicted_time_s"]) and d["predicted_time_s"] > 0
assert d["feasible"] == (sys.argv[2] == "0")
assert d["feasible"] or d["errors"], "infeasible without a reason"
for key in ("flops", "bound", "levels", "regions", "errors"):
    assert key in d, key
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
check "infeasible tile exits 1" test "$(rc "$CLI" analyze "$EX/matmul-tiled.napkin" --tile block.m=100)" = 1
check "and says which constraint" grep -q "not a multiple of 16" "$TMP/out"
check "csv has a header" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --format csv | head -1 | grep -q '^section,name,level'"
check "md has a table" sh -c "'$CLI' analyze '$EX/flash-attention.napkin' --format md | grep -q '^| level |'"
check "compare: one row per arch and dtype" sh -c "'$CLI' compare '$EX/matmul-tiled.napkin' --arch h100,a100 --dtype fp8-e4m3 --format csv | tail -n +2 | wc -l | grep -qx 4"
check "compare explains infeasible rows" sh -c "'$CLI' compare '$EX/matmul-tiled.napkin' --arch rtx4090 | grep -q 'rtx4090 file: regions\[0\]: footprint'"

check "--paper: every tile from device memory (H = 2·4096³/128 + 4096² elements)" sh -c "'$CLI' analyze '$EX/matmul-tiled.napkin' --paper --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"model\"] == \"paper\"; assert d[\"levels\"][0][\"transfer_elements\"] == 2 * 4096**3 // 128 + 4096**2'"
check "without --paper, L2 sharing cuts device-memory traffic" sh -c "'$CLI' analyze '$EX/matmul-tiled.napkin' --format json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"levels\"][0][\"transfer_elements\"] < 2 * 4096**3 // 128'"
check "archs --json keeps every figure's source" sh -c "'$CLI' archs --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert all(len(a[\"sources\"]) >= 30 for a in d)'"

cp "$EX/matmul-tiled.napkin" "$TMP/m.napkin"
before=$("$CLI" analyze "$TMP/m.napkin" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_time_s"])')
check "tune --write succeeds" test "$(rc "$CLI" tune "$TMP/m.napkin" --top 3 --write)" = 0
after=$("$CLI" analyze "$TMP/m.napkin" --format json | python3 -c 'import json,sys; print(json.load(sys.stdin)["predicted_time_s"])')
check "the written tiles are faster ($before s -> $after s)" python3 -c "assert $after < $before"
check "tune --json parses" sh -c "'$CLI' tune '$EX/flash-attention.napkin' --json | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d[\"best\"][0][\"predicted_time_s\"] <= d[\"current\"][\"predicted_time_s\"]'"
check "tune without regions fails clearly" test "$(rc "$CLI" tune "$EX/matmul.napkin")" = 1

echo "1..$n"
exit $fail
