#!/usr/bin/env python3
"""Drawn GEMM files for the few-row products' A/B (session 29): each shape as einsum text,
imported, then one region around the product with 64-row tiles, BN columns and K streamed
by 64.  python3 make.py CLI OUTDIR"""
import json, os, subprocess, sys
cli, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
shapes = [(2, 8192, 14456), (16, 4096, 4096), (64, 11008, 4096), (8, 14336, 4096), (32, 4096, 14336)]
for m, n, k in shapes:
    for layout, eq, b in (("kn", "mk,kn->mn", "W[k,n]"), ("nk", "mk,nk->mn", "W[n,k]")):
        src = os.path.join(out, "g.einsum")
        open(src, "w").write("m=%d n=%d k=%d\ndtype bf16\nX[m,k] %s -> mm = einsum(\"%s\")\noutput mm\n" % (m, n, k, b, eq))
        base = os.path.join(out, "g.napkin")
        subprocess.run([cli, "import", src, "-o", base], check=True, capture_output=True)
        d = json.load(open(base))
        for bn in (64, 128, 256):
            d["regions"] = [{"name": "gemm1", "level": "smem", "nodes": ["mm"],
                             "marks": {"m": {"parallel": min(64, m)}, "n": {"parallel": bn}, "k": {"stream": 64}},
                             "stages": 4}]
            json.dump(d, open(os.path.join(out, "sk-%dx%dx%d-%s-%d.napkin" % (m, n, k, layout, bn)), "w"), indent=1)
    os.remove(src); os.remove(base)
