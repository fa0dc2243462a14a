#!/bin/sh
# Messages in the user's language (docs/cli.md, "Language"): with LANGUAGE=fr,
# validate says why a file is invalid in French, and a usage error too; --format json
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

LANGUAGE=C "$CLI" validate "$SRC/tests/bad/50-region-empty.napkin" > "$TMP/out" 2>&1
expect "English without LANGUAGE=fr" "invalid: Region “block” holds no operation"

echo "1..$n"
exit $fail
