#!/bin/bash
# The next device call (written at the end of session 24): the user's path on seed 2226 with
# the session's final tree. The torch.compile baselines of its 64 cases take ~220 s before the
# first case runs (call 12), so this call gives the whole 560 s to one part; the other half
# goes in a second call (--part 2/2).
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=540
  OUT=$O/u timeout 560 bench/gpu/user-path --seed 2226 --cases 64 --part 1/2 > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
