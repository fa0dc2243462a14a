#!/usr/bin/env python3
"""Baselines for bench/gpu/run-bench, measured on the GPU machine in the same run as
Napkin's kernels: cuBLAS (through torch.matmul), PyTorch SDPA with the flash and cuDNN
backends, softmax, layer_norm and a device copy. Random inputs (never zeros), CUDA events, warm-up, median of
N repeats, inputs rotated so that repeats do not hit L2. Prints a table and writes JSON.

Usage: python3 bench/gpu/baselines.py [--json OUT] [--repeats N]"""
import argparse, json, statistics, sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


def time_fn(fn, sets, repeats, warmup=5):
    """Median ms of fn(*args) over `repeats` runs, cycling through input sets."""
    for i in range(warmup):
        fn(*sets[i % len(sets)])
    torch.cuda.synchronize()
    times = []
    for i in range(repeats):
        args = sets[i % len(sets)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def n_sets(bytes_per_set, l2=50 * 2**20):
    """Enough input sets that one pass over them does not fit in L2 (at most 4)."""
    return max(1, min(4, (3 * l2) // max(1, bytes_per_set) + 1))


def matmul(m, n, k, dtype, repeats):
    per = (m * k + k * n) * 2
    sets = [(torch.randn(m, k, device='cuda', dtype=dtype), torch.randn(k, n, device='cuda', dtype=dtype))
            for _ in range(n_sets(per))]
    med, lo, hi = time_fn(torch.matmul, sets, repeats)
    flops = 2 * m * n * k
    return dict(time_ms=med, min_ms=lo, max_ms=hi, tflops=flops / med / 1e9, flops=flops)


def attention(b, h, n, d, backend, repeats):
    shape = (b, h, n, d)
    per = 3 * b * h * n * d * 2
    sets = [tuple(torch.randn(shape, device='cuda', dtype=torch.float16) for _ in range(3))
            for _ in range(n_sets(per))]

    def run(q, k, v):
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v)
    try:
        med, lo, hi = time_fn(run, sets, repeats)
    except RuntimeError as e:
        return dict(error=str(e).splitlines()[0])
    flops = 4 * b * h * n * n * d
    return dict(time_ms=med, min_ms=lo, max_ms=hi, tflops=flops / med / 1e9, flops=flops)


def rowwise(name, rows, cols, repeats):
    per = rows * cols * 2
    sets = [(torch.randn(rows, cols, device='cuda', dtype=torch.float16),) for _ in range(n_sets(per))]
    if name == 'softmax':
        fn = lambda x: torch.softmax(x, dim=-1)
        moved = 2 * rows * cols * 2
    else:
        w = torch.randn(cols, device='cuda', dtype=torch.float16)
        bias = torch.randn(cols, device='cuda', dtype=torch.float16)
        fn = lambda x: F.layer_norm(x, (cols,), w, bias)
        moved = 2 * rows * cols * 2 + 2 * cols * 2
    med, lo, hi = time_fn(fn, sets, repeats)
    return dict(time_ms=med, min_ms=lo, max_ms=hi, gbps=moved / med / 1e6, bytes=moved)


def copy(nbytes, repeats):
    src = torch.randn(nbytes // 4, device='cuda')
    dst = torch.empty_like(src)
    med, lo, hi = time_fn(lambda a, b: b.copy_(a), [(src, dst)], repeats)
    return dict(time_ms=med, gbps=2 * nbytes / med / 1e6, bytes=2 * nbytes)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--json')
    ap.add_argument('--repeats', type=int, default=30)
    args = ap.parse_args()
    r = args.repeats
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    out = dict(gpu=props.name, sms=props.multi_processor_count, torch=torch.__version__,
               cuda=torch.version.cuda, results={})
    res = out['results']
    res['copy 1 GiB'] = copy(2**30, r)
    res['matmul bf16 4096^3 cublas'] = matmul(4096, 4096, 4096, torch.bfloat16, r)
    res['matmul bf16 8192^3 cublas'] = matmul(8192, 8192, 8192, torch.bfloat16, r)
    res['matmul bf16 16384x1024x16384 cublas'] = matmul(16384, 16384, 1024, torch.bfloat16, r)
    for (b, h, n, d) in [(4, 16, 4096, 64), (4, 16, 4096, 128), (2, 16, 16384, 128)]:
        for name, be in [('flash', SDPBackend.FLASH_ATTENTION), ('cudnn', SDPBackend.CUDNN_ATTENTION)]:
            res['attention B%d H%d N%d d%d %s' % (b, h, n, d, name)] = attention(b, h, n, d, be, r)
    res['softmax fp16 16384x16384 torch'] = rowwise('softmax', 16384, 16384, r)
    res['layernorm fp16 65536x4096 torch'] = rowwise('layernorm', 65536, 4096, r)

    print('%-44s %10s %12s' % ('baseline (%s)' % props.name, 'median ms', 'rate'))
    for k, v in res.items():
        if 'error' in v:
            print('%-44s %10s %s' % (k, '-', v['error'][:60]))
        elif 'tflops' in v:
            print('%-44s %10.3f %8.1f TFLOP/s' % (k, v['time_ms'], v['tflops']))
        else:
            print('%-44s %10.3f %8.1f GB/s' % (k, v['time_ms'], v['gbps']))
    if args.json:
        with open(args.json, 'w') as f:
            json.dump(out, f, indent=1)


if __name__ == '__main__':
    sys.exit(main())
