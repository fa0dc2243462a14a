#!/bin/sh
# Prints the editor's median frame time for a 500-operation diagram (issue 4).
# Usage: bench/render-bench.sh [BUILDDIR] [OUT.png]
set -e
build=${1:-_build}
exec "$build/bench/render-bench" ${2:+"$2"}
