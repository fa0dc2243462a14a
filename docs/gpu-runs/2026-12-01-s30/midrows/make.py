#!/usr/bin/env python3
"""Products of 256–1024 rows (session 30): each shape + bias + exact GELU as einsum text,
imported, then one region around the chain with 128-row tiles and 128, 192 or 256 columns,
K streamed by 64 through 4 stages.   python3 make.py CLI OUTDIR"""
import json, os, subprocess, sys
cli, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
shapes = [(256, 7784, 4096), (512, 4096, 4096), (384, 11008, 4096), (768, 14336, 2048), (1024, 8192, 8192)]
for m, n, k in shapes:
    src = os.path.join(out, "g.einsum")
    open(src, "w").write("m=%d n=%d k=%d\ndtype bf16\nX[m,k] W[k,n] -> mm = einsum(\"mk,kn->mn\")\n"
                         "mm bias[n] -> add_v = add\nadd_v -> act = gelu\noutput act\n" % (m, n, k))
    base = os.path.join(out, "g.napkin")
    subprocess.run([cli, "import", src, "-o", base], check=True, capture_output=True)
    d = json.load(open(base))
    for bn in (128, 192, 256):
        d["regions"] = [{"name": "gemm1", "level": "smem", "nodes": ["mm", "add_v", "act"],
                         "marks": {"m": {"parallel": 128}, "n": {"parallel": bn}, "k": {"stream": 64}},
                         "stages": 4}]
        json.dump(d, open(os.path.join(out, "mr-%dx%dx%d-%d.napkin" % (m, n, k, bn)), "w"), indent=1)
    os.remove(src); os.remove(base)
