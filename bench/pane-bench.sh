#!/bin/sh
# Speed of the live analysis pane (docs/analysis-pane.md): builds and runs bench/pane-bench.c
# under Xvfb. Usage: bench/pane-bench.sh   (from the repository root; build dir _build-pane)
set -e
BUILD=${BUILD:-_build-pane}
[ -d "$BUILD" ] || meson setup "$BUILD" -Dgui=enabled
ninja -C "$BUILD" -j2 bench/pane-bench
export NAPKIN_DATA_DIR="${NAPKIN_DATA_DIR:-$PWD/data}"   # an uninstalled build: the source tree's data
# the build's schema: the default architecture (h100), settings in memory
GSETTINGS_SCHEMA_DIR="$BUILD/data" GSK_RENDERER=cairo GTK_A11Y=none NO_AT_BRIDGE=1 GSETTINGS_BACKEND=memory \
  xvfb-run -a -s "-screen 0 1280x1024x24" "$BUILD/bench/pane-bench" "$@"
