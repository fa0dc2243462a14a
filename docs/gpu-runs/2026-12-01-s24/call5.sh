#!/bin/bash
# Session 24 call 5: short-K products (K 1…256, one to four chunks a tile), whose time is
# their tiles' epilogues and fixed costs: cooperative against ping-pong consumers
# (NAPKIN_NO_PINGPONG=0 / 1), for refitting the model's one-chunk tiles next session.
set -u
timeout 500 bench/gpu/ab-env NAPKIN_NO_PINGPONG "0 1" docs/gpu-runs/2026-12-01-s24/shortk/*.einsum
