#!/usr/bin/env python3
"""One operand's rows not 128 bytes apart (session 30): plain bf16 products with B as
W[k,n] (rows N long) or W[n,k] (rows K long), so that A, B, both or neither have a pitch
that is not a multiple of 128 bytes; one region, 128 × 128 or 128 × 256 tiles, K by 64
through 4 stages.   python3 make-align.py CLI OUTDIR"""
import json, os, subprocess, sys
cli, out = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
cases = [  # m, n, k, B layout: B unaligned (kn, n=7784), aligned control (nk), A unaligned (k=4100), both
    (256, 7784, 4096, "kn"), (256, 7784, 4096, "nk"), (256, 4096, 4100, "kn"), (256, 7784, 4100, "kn"),
    (2048, 7784, 4096, "kn"), (2048, 7784, 4096, "nk"), (2048, 4096, 4100, "kn"), (2048, 7784, 4100, "kn")]
for m, n, k, lay in cases:
    src = os.path.join(out, "g.einsum")
    b, eq = ("W[k,n]", "mk,kn->mn") if lay == "kn" else ("W[n,k]", "mk,nk->mn")
    open(src, "w").write("m=%d n=%d k=%d\ndtype bf16\nX[m,k] %s -> mm = einsum(\"%s\")\noutput mm\n" % (m, n, k, b, eq))
    base = os.path.join(out, "g.napkin")
    subprocess.run([cli, "import", src, "-o", base], check=True, capture_output=True)
    d = json.load(open(base))
    for bn in (128, 256):
        d["regions"] = [{"name": "gemm1", "level": "smem", "nodes": ["mm"],
                         "marks": {"m": {"parallel": 128}, "n": {"parallel": bn}, "k": {"stream": 64}}, "stages": 4}]
        json.dump(d, open(os.path.join(out, "al-%dx%dx%d-%s-%d.napkin" % (m, n, k, lay, bn)), "w"), indent=1)
    os.remove(src); os.remove(base)
