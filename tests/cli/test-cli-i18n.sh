#!/bin/sh
# Messages in the user's language (docs/cli.md, "Language"): with LANGUAGE=fr,
# validate says why a file is invalid in French, and a usage error too; analyze gives
# the model's warnings, errors and bound in French, plan its reasons; --format json
# stays English. Only C locales exist on the build machines: LANG=C.UTF-8 makes
# gettext read LANGUAGE. TAP. Usage: test-cli-i18n.sh NAPKIN_CLI SOURCE_ROOT BUILD_ROOT
CLI=$1
SRC=$2
export LANG=C.UTF-8 LC_ALL= LANGUAGE=fr NAPKIN_LOCALEDIR="$3/po"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; sed 's/^/# /' "$TMP/out" | head -10; }
expect () { if grep -qF -- "$2" "$TMP/out"; then ok "$1"; else not_ok "$1 (wanted: $2)"; fi; }

"$CLI" validate "$SRC/tests/bad/50-region-empty.napkin" > "$TMP/out" 2>&1
[ $? -eq 1 ] && ok "validate exits 1 on an invalid file" || not_ok "validate exits 1 on an invalid file"
expect "the validator's error in French" "invalide : La région « block » ne contient aucune opération"
expect "the JSON path stays as it is" "(JSON path: regions[0])"

"$CLI" validate "$SRC/tests/bad/47-region-not-connected.napkin" > "$TMP/out" 2>&1
expect "another validation error in French" "n’est pas connexe"

"$CLI" validate "$SRC/tests/bad/20-tensor-unknown-axis.napkin" > "$TMP/out" 2>&1
expect "a loader error in French" "axe inconnu « "

"$CLI" validate > "$TMP/out" 2>&1
expect "a usage error in French" "aucun FICHIER indiqué"

"$CLI" validate --format json "$SRC/tests/bad/50-region-empty.napkin" > "$TMP/out" 2>&1
expect "JSON output stays English" "\"message\": \"Region “block” holds no operation\""
if grep -q "région" "$TMP/out"; then not_ok "no French in JSON"; else ok "no French in JSON"; fi

# the performance model: a warning (the example's earlier tiles: 2 stages leave loads
# exposed), the bound, and a region that does not fit
"$CLI" analyze "$SRC/data/examples/flash-attention.napkin" --tile block.k=64 --tile block.stages=2 > "$TMP/out" 2>&1
expect "analyze's verdict in French" "réalisable : chaque région tient"
expect "the model's warning in French" "note : région « block » : avec 2 étages, les morceaux en vol"
expect "the bound's name in French" "limité par L2"
"$CLI" analyze "$SRC/data/examples/matmul-tiled.napkin" --tile block.m=1024 --tile block.n=1024 > "$TMP/out" 2>&1
expect "the model's error in French, its JSON path kept" "IRRÉALISABLE : regions[0]: demande environ 1056 registres par thread"
expect "the binding limit in French" "pas une seule instance ne tient sur un SM : limite mémoire partagée"
"$CLI" analyze --format json "$SRC/data/examples/matmul-tiled.napkin" --tile block.m=1024 --tile block.n=1024 > "$TMP/out" 2>&1
expect "the model's errors stay English in JSON" "\"regions[0]: needs about 1056 registers per thread"
if grep -q "registres\|réalisable\|mémoire" "$TMP/out"; then not_ok "no French in analyze's JSON"; else ok "no French in analyze's JSON"; fi
"$CLI" analyze --format json "$SRC/data/examples/flash-attention.napkin" --tile block.k=64 --tile block.stages=2 \
  > "$TMP/out" 2>&1
expect "the model's warnings and plan notes stay English in JSON" "\"region “block”: with 2 stages"
expect "the bound stays a key word in JSON" "\"bound\": \"l2\""

# the planner's reason and note
"$CLI" plan --generic "$SRC/data/examples/matmul-tiled.napkin" > "$TMP/out" 2>&1
expect "the planner's reason in French" "l’abaissement générique a été demandé"
expect "the best-path note in French" "est le meilleur chemin tenseur de h100 pour ces produits ; ce noyau est généré sur l’abaissement générique"

LANGUAGE=C "$CLI" validate "$SRC/tests/bad/50-region-empty.napkin" > "$TMP/out" 2>&1
expect "English without LANGUAGE=fr" "invalid: Region “block” holds no operation"

echo "1..$n"
exit $fail
