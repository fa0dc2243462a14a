#!/bin/bash
# Session 21, third call: the main launches with the key block the fast index (a head's
# Q, dO and dQ accumulator in L2), both kernels, atomics against bulk reductions; torch's
# backwards in the same call.
set -u
O=${OUT:-/tmp/s21c}; mkdir -p "$O"; A=/tmp/s21c-alone
( export OUT=$A ONLY="${ONLY:-^(h-|x1-|t-d128-w8q32$|t-d128-causal-w8q32|t-d64-w8q64$|t-d64-causal-w8q64|a-|b-causal-d128-1000|c-|e-|g-)}"
  timeout 300 bash bench/gpu/attn-bwd-alone.sh > "$O/alone.txt" 2>&1 )
grep -v "^  .*spill stores" "$O/alone.txt"
