#!/bin/sh
# The installed Napkin stands on its own (docs/packaging.md): `meson install --destdir`
# into a fresh root, then the installed napkin-cli, run from another folder with the
# environment cleared, analyzes an installed example with the installed profiles; no
# installed program names the source tree's data; the installed napkin-runner finds
# libnvrtc through its RUNPATH. TAP.
# Usage: test-install.sh BUILD_DIR SOURCE_DIR PREFIX BINDIR LIBEXECDIR DATADIR MANDIR CUDA_LIBDIR|""
BUILD=$1
SRC=$2
PREFIX=$3
BINDIR=$4
LIBEXECDIR=$5
DATADIR=$6
MANDIR=$7
CUDA_LIBDIR=$8
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
n=0
fail=0
ok () { n=$((n + 1)); echo "ok $n - $1"; }
not_ok () { n=$((n + 1)); fail=1; echo "not ok $n - $1"; }
check () { desc=$1; shift; if "$@" > "$TMP/check.out" 2>&1; then ok "$desc"; else not_ok "$desc"; sed 's/^/# /' "$TMP/check.out"; fi; }
# A run with nothing from the caller's environment: no NAPKIN_*, no LD_LIBRARY_PATH;
# only a sanitizer build's own settings (build-aux/ci-sanitize) pass through.
SAN=""
for v in ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS; do
  eval "val=\${$v:-}"
  [ -n "$val" ] && SAN="$SAN $v=$val"
done
clean () { (cd "$TMP/elsewhere" && env -i HOME="$TMP/home" PATH=/usr/bin:/bin XDG_DATA_HOME="$TMP/home/.local/share" \
                                     XDG_CACHE_HOME="$TMP/home/.cache" $SAN "$@"); }

mkdir -p "$TMP/home" "$TMP/elsewhere" "$TMP/empty"
ROOT="$TMP/root"
if meson install -C "$BUILD" --destdir "$ROOT" > "$TMP/install.log" 2>&1; then
  ok "meson install --destdir"
else
  not_ok "meson install --destdir"
  sed 's/^/# /' "$TMP/install.log"
  echo "1..$n"
  exit 1
fi
P="$ROOT$PREFIX"
CLI="$P/$BINDIR/napkin-cli"
RUNNER="$P/$LIBEXECDIR/napkin-runner"
SHARE="$P/$DATADIR"

check "napkin-cli installed" test -x "$CLI"
for f in "$SRC"/data/examples/*.napkin; do
  check "example $(basename "$f") installed" cmp "$f" "$SHARE/napkin/examples/$(basename "$f")"
done
check "the file format's JSON Schema installed" cmp "$SRC/data/napkin.schema.json" "$SHARE/napkin/napkin.schema.json"
for f in "$SRC"/data/archs/*.json; do
  check "profile $(basename "$f") installed" cmp "$f" "$SHARE/napkin/archs/$(basename "$f")"
done

# Manual pages and the completion, where man and bash-completion look.
for page in napkin-cli.1 napkin.1; do
  [ -f "$BUILD/docs/man/$page" ] || continue
  check "man page $page installed" test -s "$P/$MANDIR/man1/$page"
done
check "bash completion for napkin-cli installed" sh -c "find '$ROOT' -path '*/bash-completion/completions/napkin-cli' | grep -q ."

# Nothing installed carries the build machine's data folder.
for exe in "$CLI" "$RUNNER" "$P/$BINDIR/napkin"; do
  [ -e "$exe" ] || continue
  check "$(basename "$exe") does not name $SRC/data" sh -c "! grep -a -q -F '$SRC/data' '$exe'"
done

# The installed CLI, its data from the installed datadir only ($XDG_DATA_DIRS as a
# desktop session sets it for a prefix).
check "installed napkin-cli validate finds the installed schema" sh -c "
  env -i HOME='$TMP/home' PATH=/usr/bin:/bin XDG_DATA_HOME='$TMP/home/.local/share' XDG_DATA_DIRS='$SHARE' $SAN \
    '$CLI' validate '$SHARE/napkin/examples/matmul.napkin' > '$TMP/validate.out' 2>&1;
  grep -q ': valid' '$TMP/validate.out' && ! grep -q 'without the JSON Schema' '$TMP/validate.out'"
check "installed napkin-cli analyze on an installed example" \
  clean XDG_DATA_DIRS="$SHARE" "$CLI" analyze "$SHARE/napkin/examples/flash-attention.napkin" --arch h100 --format json
cp "$TMP/check.out" "$TMP/analyze.json"
check "its answer is the model's" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
assert d['predicted_time_s'] > 0 and d['feasible'], d" "$TMP/analyze.json"
check "archs come from the installed datadir" sh -c "
  env -i HOME='$TMP/home' PATH=/usr/bin:/bin XDG_DATA_HOME='$TMP/home/.local/share' XDG_DATA_DIRS='$SHARE' $SAN \
    '$CLI' archs --format json | python3 -c '
import json, sys
paths = [a[\"path\"] for a in json.load(sys.stdin)]
assert paths and all(p.startswith(sys.argv[1]) for p in paths), paths' '$SHARE/napkin/archs/'"
# With no data dir holding profiles it fails plainly, so it did not fall back on the
# source tree (unless Napkin is really installed in this prefix on this machine).
if [ ! -d "$PREFIX/$DATADIR/napkin" ]; then
  check "without the installed data it finds no profile" sh -c "
    cd '$TMP/elsewhere' && env -i HOME='$TMP/home' PATH=/usr/bin:/bin XDG_DATA_HOME='$TMP/empty' XDG_DATA_DIRS='$TMP/empty' $SAN \
      '$CLI' analyze '$SHARE/napkin/examples/matmul.napkin' 2>&1 | grep -q 'no architecture profiles found'"
fi
# XDG_DATA_HOME comes first: a user's own profile is found.
mkdir -p "$TMP/home/.local/share/napkin/archs"
sed 's/"id": *"h100"/"id": "mine"/' "$SRC/data/archs/h100.json" > "$TMP/home/.local/share/napkin/archs/mine.json"
check "a profile in XDG_DATA_HOME/napkin/archs is found" \
  clean XDG_DATA_DIRS="$SHARE" "$CLI" analyze "$SHARE/napkin/examples/matmul.napkin" --arch mine

if [ -n "$CUDA_LIBDIR" ]; then
  check "napkin-runner installed" test -x "$RUNNER"
  check "installed napkin-runner has RUNPATH $CUDA_LIBDIR" sh -c \
    "readelf -d '$RUNNER' | grep -E '\\((RUNPATH|RPATH)\\)' | grep -q -F '$CUDA_LIBDIR'"
  check "installed napkin-cli has RUNPATH $CUDA_LIBDIR" sh -c \
    "readelf -d '$CLI' | grep -E '\\((RUNPATH|RPATH)\\)' | grep -q -F '$CUDA_LIBDIR'"
  check "libnvrtc resolves through it with a clean environment" sh -c \
    "env -i PATH=/usr/bin:/bin ldd '$RUNNER' | grep 'libnvrtc' | grep -q -F '$CUDA_LIBDIR/'"
  check "the installed runner starts" clean "$RUNNER" --help
else
  ok "# SKIP built without NVRTC: no runner to check"
fi

echo "1..$n"
exit $fail
