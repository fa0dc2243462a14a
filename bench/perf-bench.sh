#!/bin/sh
# Speed of the performance model (docs/model.md §10): builds and runs bench/perf-bench.c.
# Usage: bench/perf-bench.sh [ARCH]   (from the repository root; build dir _build-perf)
set -e
BUILD=${BUILD:-_build-perf}
[ -d "$BUILD" ] || meson setup "$BUILD" -Dgui=disabled
ninja -C "$BUILD" -j2 tests/perf/perf-bench
export NAPKIN_DATA_DIR="${NAPKIN_DATA_DIR:-$PWD/data}"   # an uninstalled build: the source tree's data
"$BUILD/tests/perf/perf-bench" "$@"
