#!/bin/bash
# Session 21, second call: where the wgmma backward's main launch spends its time.
#  1. the harness's h-t (dQ by double-buffered bulk reductions, issued by a warp),
#     h-ta (atomics) and x-* cases (NKB_ABL: parts left out; times only);
#  2. Nsight Compute on h-ta-d128's main launch (one launch, the full set): the details
#     page and the per-instruction stall samples (SASS) as CSV.
set -u
O=${OUT:-/tmp/s21b}; mkdir -p "$O"; A=/tmp/s21b-alone
( export OUT=$A NO_TORCH=1 ONLY='^(h-a|h-b|h-c|h-d|h-e|h-g|h-v|h-t-|h-ta-|x)'
  timeout 200 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -v "^  " "$O/alone.txt" | tail -30
b=$A/h-ta-d128
if [ -x "$b" ] && command -v ncu > /dev/null; then
  timeout 240 ncu --clock-control none -k regex:bwd_main -c 1 --set full --import-source no \
    -o "$O/ta128" "$b" > "$O/ncu.log" 2>&1
  tail -3 "$O/ncu.log"
  ncu -i "$O/ta128.ncu-rep" --page details > "$O/details.txt" 2>&1
  ncu -i "$O/ta128.ncu-rep" --page source --csv --print-source sass > "$O/sass.csv" 2>&1
  rm -f "$O/ta128.ncu-rep"
  grep -E "Duration|Compute \(SM\) Throughput|Memory Throughput|Issue Slots Busy|No Eligible|Warp Cycles Per Issued|Stall|L2 Hit|Achieved Occupancy" "$O/details.txt" | head -40
  wc -l "$O/sass.csv"
fi
# the atomics' dQ stalls: bulk version under ncu too, details only
b=$A/h-t-d128
if [ -x "$b" ] && command -v ncu > /dev/null; then
  timeout 120 ncu --clock-control none -k regex:bwd_main -c 1 --section SpeedOfLight --section WarpStateStats \
    --section SchedulerStats "$b" > "$O/details-bulk.txt" 2>&1
  grep -E "Duration|Issue Slots Busy|No Eligible|Warp Cycles Per Issued" "$O/details-bulk.txt" | head
fi
cat $A/*.log | grep -A3 "bwd_main" | grep -E "spill|Used" > "$O/ptxas.txt"
