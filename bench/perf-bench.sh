#!/bin/sh
# Speed of the performance model (issue 3): builds and runs bench/perf-bench.c.
# Usage: bench/perf-bench.sh [ARCH]   (from the repository root; build dir _build-perf)
set -e
BUILD=${BUILD:-_build-perf}
[ -d "$BUILD" ] || meson setup "$BUILD" -Dgui=disabled
ninja -C "$BUILD" -j2 tests/perf/perf-bench
"$BUILD/tests/perf/perf-bench" "$@"
