#!/bin/bash
# Session 24 call 12: the user's path on a draw no session had seen (seed 2226), the final
# tree of the session, torch.compile baselines, as far as the device time left allows.
# What it got: the torch baselines of all 64 cases (call12/baselines.*, with torch.compile)
# took the 225 s budget before the first case ran; the next call can reuse them (the
# user-path runs baselines first: give it BUDGET ≥ 450, or COMPILE=0 and ONLY=…).
set -u
O=${OUT:-/tmp/s24c12}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=225
  OUT=$O/u timeout 240 bench/gpu/user-path --seed 2226 --cases 64 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
