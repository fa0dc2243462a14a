#!/bin/bash
# Session 35, call 4 (call 3 without its seed: the device time left after refused starts
# would not cover it): softmax over a long first axis with few columns, the split against
# the whole axis (NAPKIN_ROWS_SPLIT=0) over seven shapes.
set -u
D=docs/gpu-runs/2026-12-02-s35
bench/gpu/ab-env NAPKIN_ROWS_SPLIT "0 1" $D/strided/*.einsum
