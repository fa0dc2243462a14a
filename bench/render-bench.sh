#!/bin/sh
# Prints the editor's median frame time for a 500-operation diagram (docs/editor.md): full
# redraws at the default window's canvas size and at 1600×1000, and a cached frame.
# Usage: bench/render-bench.sh [BUILDDIR] [--case NAME] [--frames N] [OUT.png]
set -e
build=${1:-_build}
[ $# -gt 0 ] && shift
export NAPKIN_DATA_DIR="${NAPKIN_DATA_DIR:-$PWD/data}"   # an uninstalled build: the source tree's data
exec "$build/bench/render-bench" "$@"
