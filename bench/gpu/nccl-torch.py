#!/usr/bin/env python3
"""NCCL collectives through torch.distributed on every GPU of this machine (bf16), as the
baseline for the model's collective pricing (docs/model.md, "Collectives"). Sizes follow
nccl-tests: for all-reduce the buffer, for all-gather / reduce-scatter the whole (gathered)
buffer, for all-to-all the buffer each rank sends. Bus bandwidth = algbw × factor
(all-reduce 2(N-1)/N, the others (N-1)/N). Prints one JSON line per (op, size) and a table.

    python3 bench/gpu/nccl-torch.py [--gpus N] [--out FILE]
"""
import argparse, json, os, statistics, sys

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES = [1 << 20, 4 << 20, 16 << 20, 64 << 20, 128 << 20, 256 << 20, 1 << 30]
OPS = ["all_reduce", "all_gather", "reduce_scatter", "all_to_all"]


def bench(rank, world, out_path):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    torch.cuda.set_device(rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=torch.device("cuda", rank))
    rows = []
    for op in OPS:
        for size in SIZES:
            n = size // 2
            n -= n % world
            x = torch.ones(n, dtype=torch.bfloat16, device="cuda")
            if op == "all_reduce":
                fn = lambda: dist.all_reduce(x)
                factor = 2 * (world - 1) / world
            elif op == "all_gather":
                part = x[: n // world].clone()
                fn = lambda: dist.all_gather_into_tensor(x, part)
                factor = (world - 1) / world
            elif op == "reduce_scatter":
                part = torch.empty(n // world, dtype=torch.bfloat16, device="cuda")
                fn = lambda: dist.reduce_scatter_tensor(part, x)
                factor = (world - 1) / world
            else:
                y = torch.empty_like(x)
                fn = lambda: dist.all_to_all_single(y, x)
                factor = (world - 1) / world
            for _ in range(5):
                fn()
            torch.cuda.synchronize()
            times = []
            reps = 20 if size <= (256 << 20) else 10
            for _ in range(reps):
                a = torch.cuda.Event(enable_timing=True)
                b = torch.cuda.Event(enable_timing=True)
                dist.barrier()
                a.record()
                fn()
                b.record()
                b.synchronize()
                times.append(a.elapsed_time(b) * 1e-3)
            t = statistics.median(times)
            bytes_ = n * 2
            row = {"op": op, "bytes": bytes_, "gpus": world, "seconds": t,
                   "algbw_GBps": bytes_ / t / 1e9, "busbw_GBps": bytes_ / t / 1e9 * factor}
            rows.append(row)
            del x
    if rank == 0:
        with open(out_path, "w") as f:
            json.dump({"device": torch.cuda.get_device_name(0), "nccl": ".".join(map(str, torch.cuda.nccl.version())),
                       "rows": rows}, f, indent=1)
        print(f"{'op':<15} {'bytes':>12} {'time_us':>10} {'algbw':>8} {'busbw':>8}")
        for r in rows:
            print(f"{r['op']:<15} {r['bytes']:>12} {r['seconds']*1e6:>10.1f} {r['algbw_GBps']:>8.1f} {r['busbw_GBps']:>8.1f}")
    dist.destroy_process_group()


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--gpus", type=int, default=torch.cuda.device_count())
    p.add_argument("--out", default=os.path.join(os.environ.get("OUT", "/tmp"), "nccl-torch.json"))
    a = p.parse_args()
    if a.gpus < 2:
        sys.exit(f"nccl-torch: needs 2 or more GPUs, this machine has {torch.cuda.device_count()}")
    mp.spawn(bench, args=(a.gpus, a.out), nprocs=a.gpus)
