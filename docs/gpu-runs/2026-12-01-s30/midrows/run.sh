#!/bin/bash
# Products of 256–1024 rows with bias + GELU on the H200 (session 30): each drawn file of
# files/ (make.py) at K split 1, 2 and 4, checked and timed beside its prediction, then
# torch.matmul on each shape, by session 29's script.
#   docs/gpu-runs/2026-12-01-s30/midrows/run.sh
D=docs/gpu-runs/2026-12-01-s30/midrows \
SHAPES="256,7784,4096 512,4096,4096 384,11008,4096 768,14336,2048 1024,8192,8192" \
  exec bash docs/gpu-runs/2026-12-01-s29/skinny/run.sh
