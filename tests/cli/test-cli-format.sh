#!/bin/sh
# One spelling for machine output (docs/cli.md): every command with machine output takes
# --format json, --json is the same, a bad --format or a --json that disagrees is a usage
# error (2); validate's JSON gives each file's path, validity and error with its JSON
# path. TAP. Usage: test-cli-format.sh NAPKIN_CLI SOURCE_ROOT
CLI=$1
SRC=$2
EX="$SRC/data/examples"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
check () { desc=$1; shift; if "$@" > "$TMP/check.out" 2>&1; then ok "$desc"; else not_ok "$desc"; sed 's/^/# /' "$TMP/check.out" | head -20; fi; }
rc () { "$@" > "$TMP/out" 2> "$TMP/err"; echo $?; }

# A stand-in runner with a recorded H200 result, so that run answers without a GPU.
export NAPKIN_RUNNER="$SRC/tests/runner/fake-runner.sh" FAKE_MODE=recorded

# command and arguments, one per line
cat > "$TMP/cases" <<EOC
validate $EX/matmul.napkin $EX/softmax.napkin
info $EX/matmul-tiled.napkin
archs
analyze $EX/flash-attention.napkin
compare $EX/matmul-tiled.napkin --arch h100,a100
plan $EX/matmul-tiled.napkin
tune $EX/matmul-tiled.napkin --top 3
run $EX/matmul-tiled.napkin
EOC
while read -r cmd args; do
  # shellcheck disable=SC2086
  a=$(rc "$CLI" $cmd $args --format json); cp "$TMP/out" "$TMP/format.json"
  # shellcheck disable=SC2086
  b=$(rc "$CLI" $cmd $args --json); cp "$TMP/out" "$TMP/json.json"
  check "$cmd --format json exits 0 or 1 with JSON" sh -c "[ $a -le 1 ] && python3 -m json.tool '$TMP/format.json' > /dev/null"
  # the same answer, but for the time the search (or the run's steps) took
  check "$cmd --json is the same" sh -c "[ $a = $b ] && python3 -c '
import json, sys
def strip(v):
    if isinstance(v, dict):
        return {k: strip(x) for k, x in v.items() if k not in (\"seconds\", \"phases\")}
    return [strip(x) for x in v] if isinstance(v, list) else v
a, b = (strip(json.load(open(p))) for p in sys.argv[1:])
assert a == b' '$TMP/format.json' '$TMP/json.json'"
  # shellcheck disable=SC2086
  check "$cmd --format xml is a usage error" test "$(rc "$CLI" $cmd $args --format xml)" = 2
  check "  naming the formats" grep -q "expected text" "$TMP/err"
  # shellcheck disable=SC2086
  check "$cmd --json --format text is a usage error" test "$(rc "$CLI" $cmd $args --json --format text)" = 2
done < "$TMP/cases"
check "calibrate --format xml is a usage error" test "$(rc "$CLI" calibrate --format xml)" = 2

# Every command that prints JSON says so the same way in its --help (render's --format
# is the picture's file format: it prints no machine output; codegen prints code, import
# and grad a diagram).
for cmd in $("$CLI" --help | awk '/^Commands:/ { on = 1; next } on && /^  [a-z]/ { print $1 }'); do
  "$CLI" "$cmd" --help > "$TMP/help" 2>&1
  if grep -q -e '--json' "$TMP/help"; then
    check "$cmd --help: --format FORMAT beside --json" grep -q -e '--format=FORMAT' "$TMP/help"
    check "$cmd --help: --json is the alias" grep -q -e '--json *Same as --format json' "$TMP/help"
  elif [ "$cmd" != render ] && [ "$cmd" != codegen ] && [ "$cmd" != import ] \
       && [ "$cmd" != grad ]; then
    not_ok "$cmd has no --format json"
  fi
done

# validate's JSON
r=$(rc "$CLI" validate --format json "$EX/matmul.napkin" "$SRC/tests/bad/20-tensor-unknown-axis.napkin" \
       "$SRC/tests/bad/02-empty.napkin" "$TMP/missing.napkin")
check "validate --format json: exit 1 when a file is invalid" test "$r" = 1
check "validate --format json: each file's path, validity, error and its JSON path" python3 - "$TMP/out" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert d["valid"] is False, d
f = d["files"]
assert [x["valid"] for x in f] == [True, False, False, False], f
assert f[0]["path"].endswith("matmul.napkin") and "error" not in f[0], f[0]
e = f[1]["error"]
assert e == {"kind": "reference", "json_path": "tensors[0].axes[1]",
             "message": "The second axis of tensor “A”: unknown axis “q”"}, e
assert f[2]["error"]["kind"] == "parse", f[2]
assert f[3]["error"]["json_path"] is None and f[3]["error"]["kind"] == "io", f[3]
PY
check "validate --format json: every bad file's JSON path and message make its text error" sh -c "
  '$CLI' validate --format json '$SRC'/tests/bad/*.napkin | python3 -c '
import json, sys
exp = dict(l.rstrip(\"\\n\").split(\"\\t\", 1) for l in open(sys.argv[1]) if not l.startswith(\"#\"))
for f in json.load(sys.stdin)[\"files\"]:
    e = f[\"error\"]
    words, path = exp[f[\"path\"].rsplit(\"/\", 1)[1]].split(\"\\t\")
    assert e[\"message\"] == words, (f, words)
    assert e[\"json_path\"] == (None if path == \"-\" else path), (f, path)' '$SRC/tests/bad/expected.tsv'"
r=$(rc "$CLI" validate --format json "$EX/matmul.napkin")
check "validate --format json: exit 0 and valid when all are" sh -c "[ $r = 0 ] && python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))[\"valid\"]' '$TMP/out'"

echo "1..$n"
exit $fail
