#!/bin/bash
# Session 22, call 5: build-aux/gpu-check on the session's final tree (every example
# checked and timed beside its prediction, containment, standalone exports).
set -u
O=${OUT:-/tmp/s22c5}; mkdir -p "$O"
( OUT=$O/check timeout 330 build-aux/gpu-check > $O/gpu-check.log 2>&1; echo "gpu-check rc=$?" )
rm -rf $O/check/work 2>/dev/null
grep -vE "^\s*$" $O/gpu-check.log | tail -60
