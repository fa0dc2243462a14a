#!/bin/bash
# The next device call (written at the end of session 25): the user's path on seed 2228 with
# this session's final tree, part 1 of 2 (the other half in a second call: PART=2/2), then the
# three problems of seed 2227 the time budget skipped. Give a part the whole 560 s: the
# torch.compile baselines of 32 cases take about a minute before the first case runs.
set -u
O=${OUT:-/tmp/next}; mkdir -p "$O"
( export CALIBRATE=0 MODEL=h200 COMPILE=1 BUDGET=480
  OUT=$O/u timeout 500 bench/gpu/user-path --seed 2228 --cases 64 --part ${PART:-1/2} > $O/u.log 2>&1 )
rm -rf $O/u/work $O/u/archs; grep -E "^GPU|ratio|measured|einsum" $O/u/table.md
