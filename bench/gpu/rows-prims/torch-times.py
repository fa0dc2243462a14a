#!/usr/bin/env python3
"""Times what a PyTorch user writes for each row problem on stdin (one per line:
NAME OP ROWS COLS XDTYPE YDTYPE FLAGS, FLAGS a subset of g b r, or -), printing
'TORCH NAME MS' per line (bench/gpu/rows-prims/check). A problem that fails prints
'TORCH NAME -' and the rest go on."""
import sys

try:
    import torch
    import torch.nn.functional as F
except Exception as e:  # no torch: nothing to compare with
    print(f"TORCH-UNAVAILABLE {e}")
    sys.exit(0)

DT = {'fp16': torch.float16, 'bf16': torch.bfloat16, 'fp32': torch.float32}


def bench(f, n=30):
    for _ in range(3):
        f()
    torch.cuda.synchronize()
    ts = []
    for _ in range(n):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); f(); b.record(); torch.cuda.synchronize()
        ts.append(a.elapsed_time(b))
    ts.sort()
    return ts[len(ts) // 2]


def main():
    for line in sys.stdin:
        parts = line.split()
        if len(parts) < 7:
            continue
        name, op, rows, cols, xd, yd, flags = parts[:7]
        rows, cols = int(rows), int(cols)
        try:
            xt, yt = DT[xd], DT[yd]
            x = torch.randn(rows, cols, device='cuda', dtype=xt)
            r = torch.randn(rows, cols, device='cuda', dtype=xt) if 'r' in flags else None
            g = torch.rand(cols, device='cuda', dtype=xt) + 0.5 if 'g' in flags else None
            b = torch.rand(cols, device='cuda', dtype=xt) - 0.5 if 'b' in flags else None
            inp = (lambda: x + r) if r is not None else (lambda: x)
            cast = (lambda t: t) if yt == xt else (lambda t: t.to(yt))
            if op == 'softmax':
                f = lambda: torch.softmax(inp(), -1, dtype=yt)
            elif op == 'layernorm':
                f = lambda: cast(F.layer_norm(inp(), (cols,), g, b, 1e-5))
            elif op == 'rmsnorm':
                f = lambda: cast(F.rms_norm(inp(), (cols,), g, 1e-5))
            elif op == 'sum':
                f = lambda: torch.sum(inp(), -1, dtype=yt)
            elif op == 'mean':
                f = lambda: torch.mean(inp(), -1, dtype=yt)
            else:
                f = lambda: cast(torch.amax(inp(), -1))
            print(f"TORCH {name} {bench(f):.5f}", flush=True)
        except Exception as e:
            print(f"TORCH {name} - ({type(e).__name__}: {str(e)[:80]})", flush=True)
        finally:
            x = r = g = b = None
            torch.cuda.empty_cache()


if __name__ == '__main__':
    main()
