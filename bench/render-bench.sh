#!/bin/sh
# Prints the editor's median frame time for a 500-operation diagram (issue 4): full
# redraws at the default window's canvas size and at 1600×1000, and a cached frame.
# Usage: bench/render-bench.sh [BUILDDIR] [--case NAME] [--frames N] [OUT.png]
set -e
build=${1:-_build}
[ $# -gt 0 ] && shift
exec "$build/bench/render-bench" "$@"
