#!/bin/bash
# Session 33, call 6: swiglu-32 alternating with its baseline (alternate.py); Nsight Compute
# on the two kernels whose time the model misses (bmm-30's GEMM with rows of C not 16
# bytes apart, softmax0-38's two launches), clocks left alone.
set -u
D=docs/gpu-runs/2026-12-02-s33
export LD_LIBRARY_PATH=$PWD/.gpu/lib:/usr/local/cuda/lib64 NAPKIN_RUNNER=$PWD/.gpu/bin/napkin-runner \
  NAPKIN_DATA_DIR=$PWD/data NAPKIN_ARCH_DIR=$PWD/data/archs
cli=$PWD/.gpu/bin/napkin-cli
for n in swiglu-32-5765x14269x9696:gemm bmm-30-44x2048x1946x185:pp softmax0-38-16384x512:rows; do
  f=${n%%:*}; d=${n##*:}
  $cli import $D/$d/$f.einsum -o $OUT/$f.napkin > /dev/null && $cli tune $OUT/$f.napkin --arch h200 --apply > /dev/null 2>&1
done
timeout 150 python3 $D/alternate.py $cli $OUT/swiglu-32-5765x14269x9696.napkin 5765 14269 9696 > $OUT/alternate.log 2>&1
cat $OUT/alternate.log | grep -v Warning | tail -8
NCU="ncu --clock-control none --target-processes all --section SpeedOfLight --section MemoryWorkloadAnalysis --section WarpStateStats --section Occupancy --section LaunchStats --section SchedulerStats"
timeout 150 $NCU -k regex:napkin_k2 -c 1 $cli run $OUT/bmm-30-44x2048x1946x185.napkin --no-reference --repeats 1 --model h200 > $OUT/ncu-bmm30.txt 2>&1
grep -E "Duration|DRAM Throughput|Memory Throughput|L2 Cache Throughput|Compute \(SM\)|Issue Slots|Stall|Warp Cycles|Achieved Occupancy|No Eligible|Active Warps" $OUT/ncu-bmm30.txt | head -30
timeout 120 $NCU -k regex:napkin_k0 -c 2 $cli run $OUT/softmax0-38-16384x512.napkin --no-reference --repeats 1 --model h200 > $OUT/ncu-sm0.txt 2>&1
grep -E "napkin_k0|Duration|DRAM Throughput|Memory Throughput|Issue Slots|Warp Cycles|Achieved Occupancy|No Eligible|Registers|Waves" $OUT/ncu-sm0.txt | head -30
