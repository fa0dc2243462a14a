#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The kernels PyTorch runs for one module, eager and under torch.compile, with their CUDA
times (torch.profiler, 10 calls after warm-up): what Napkin's per-kernel table is compared
with (docs/perf-notes.md).

    python3 bench/gpu/torch-profile.py tests/import/llama_block.py build [max-autotune]"""
import importlib.util, os, sys

import torch

path, factory = sys.argv[1], sys.argv[2]
mode = sys.argv[3] if len(sys.argv) > 3 else "max-autotune"
spec = importlib.util.spec_from_file_location("profiled", path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
torch.manual_seed(0)
made = getattr(mod, factory)()
module, args = made[0].cuda().eval(), tuple(a.cuda() for a in made[1])
for name, fn in (("eager", module), ("compiled (%s)" % mode, torch.compile(module, mode=mode))):
    with torch.no_grad():
        for _ in range(5):
            fn(*args)
        torch.cuda.synchronize()
        with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
            for _ in range(10):
                fn(*args)
            torch.cuda.synchronize()
    print("==", name, "(times for 10 calls)")
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=20, max_name_column_width=90))
