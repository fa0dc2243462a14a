#!/usr/bin/env python3
"""Times what a PyTorch user writes for each strided row problem on stdin (one per line:
NAME OP OUTER LEN INNER XDTYPE YDTYPE FLAGS, the op over LEN of X[OUTER, LEN, INNER] —
X[LEN, INNER] and dim 0 when OUTER is 1 —, FLAGS a subset of g b r, or -), eager and
under torch.compile (COMPILE=0: eager only), printing 'TORCH NAME EAGER_MS COMPILE_MS'
per line ('-' where one fails) for bench/gpu/rows-prims/check-strided. Norms compute in
fp32 and cast back, as model code does; γ and β run along LEN."""
import importlib.util
import os
import sys

try:
    import torch
except Exception as e:  # no torch: nothing to compare with
    print(f"TORCH-UNAVAILABLE {e}")
    sys.exit(0)

# the event-timed median of check's torch-times.py
_spec = importlib.util.spec_from_file_location('torch_times', os.path.join(os.path.dirname(__file__), 'torch-times.py'))
_times = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_times)
bench, DT = _times.bench, _times.DT
EPS = 1e-5


def problem(op, dim, yt, flags):
    """The function of (x, r, g, b) a PyTorch user writes for the problem."""
    def inp(x, r):
        return x + r if r is not None else x

    def affine(y, g, b):
        if g is not None:
            y = y * g
        if b is not None:
            y = y + b
        return y

    if op == 'softmax':
        return lambda x, r, g, b: torch.softmax(inp(x, r), dim, dtype=yt)
    if op == 'layernorm':
        def f(x, r, g, b):
            v = inp(x, r).float()
            mu = v.mean(dim, keepdim=True)
            var = v.var(dim, keepdim=True, unbiased=False)
            return affine((v - mu) * torch.rsqrt(var + EPS), g, b).to(yt)
        return f
    if op == 'rmsnorm':
        def f(x, r, g, b):
            v = inp(x, r).float()
            return affine(v * torch.rsqrt(v.pow(2).mean(dim, keepdim=True) + EPS), g, b).to(yt)
        return f
    if op == 'sum':
        return lambda x, r, g, b: torch.sum(inp(x, r), dim, dtype=yt)
    if op == 'mean':
        return lambda x, r, g, b: torch.mean(inp(x, r), dim, dtype=yt)
    return lambda x, r, g, b: torch.amax(inp(x, r), dim).to(yt)


compile_on = os.environ.get('COMPILE', '1') != '0'
for line in sys.stdin:
    parts = line.split()
    if len(parts) < 8:
        continue
    name, op, outer, length, inner, xd, yd, flags = parts[:8]
    outer, length, inner = int(outer), int(length), int(inner)
    x = r = g = b = None
    times = []
    try:
        xt, yt = DT[xd], DT[yd]
        shape = (length, inner) if outer == 1 else (outer, length, inner)
        dim = 0 if outer == 1 else 1
        bshape = [1] * len(shape)
        bshape[dim] = length
        x = torch.randn(*shape, device='cuda', dtype=xt)
        r = torch.randn(*shape, device='cuda', dtype=xt) if 'r' in flags else None
        g = (torch.rand(length, device='cuda', dtype=xt) + 0.5).view(bshape) if 'g' in flags else None
        b = (torch.rand(length, device='cuda', dtype=xt) - 0.5).view(bshape) if 'b' in flags else None
        f = problem(op, dim, yt, flags)
        times.append(f"{bench(lambda: f(x, r, g, b)):.5f}")
    except Exception as e:
        print(f"# {name} eager: {type(e).__name__}: {str(e)[:120]}", flush=True)
        times.append('-')
    try:
        if not compile_on or x is None:
            raise RuntimeError('torch.compile not asked for')
        fc = torch.compile(problem(op, dim, yt, flags), dynamic=False)
        times.append(f"{bench(lambda: fc(x, r, g, b)):.5f}")
    except Exception as e:
        print(f"# {name} compile: {type(e).__name__}: {str(e)[:120]}", flush=True)
        times.append('-')
    print(f"TORCH {name} {times[0]} {times[1]}", flush=True)
    x = r = g = b = None
    torch.cuda.empty_cache()
