#!/bin/bash
# Session 21: what in dQ's reduction costs (x32: no bulk issue, staging kept; x64: no
# wait for the staging's reads; x96: neither), and Nsight Compute's stall samples of the
# main launch as it now is (h-t-d128).
set -u
O=${OUT:-/tmp/s21g}; mkdir -p "$O"; A=/tmp/s21g-alone
( export OUT=$A NO_TORCH=1 ONLY='^(h-t-d128$|h-t-d64$|x1-d128|x32|x64|x96)'
  timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -v "^  .*spill stores" "$O/alone.txt"
b=$A/h-t-d128
if [ -x "$b" ] && command -v ncu > /dev/null; then
  timeout 200 ncu --clock-control none -k regex:bwd_main -c 1 --section WarpStateStats --section SourceCounters \
    --section SpeedOfLight --section MemoryWorkloadAnalysis --import-source no -o "$O/t128" "$b" > "$O/ncu.log" 2>&1
  ncu -i "$O/t128.ncu-rep" --page details > "$O/details.txt" 2>&1
  ncu -i "$O/t128.ncu-rep" --page source --csv --print-source sass > "$O/sass.csv" 2>&1
  rm -f "$O/t128.ncu-rep"
fi
