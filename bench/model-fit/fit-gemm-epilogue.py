#!/usr/bin/env python3
"""Least squares for the staged GEMM epilogue's constants (docs/model.md §14) on the fit
half of a dataset written by collect.py --out: each wgmma GEMM kernel's time the model
leaves out (measured − predicted, per wave of tiles on the SMs) against
  a · chunks per tile                                   (what the per-chunk cost misses)
  + BM·BN/clock · (s · staged + o · operand maps + t · transcendental maps)
where staged is 1 for the staged epilogue (fused maps or no TMA store), operand maps read
a second tensor, transcendental maps are gelu/gelu_tanh/silu/sigmoid/tanh/exp/erf.
Prints the constants in clocks; the model takes s, o and t (a is reported only).

  fit-gemm-epilogue.py DATASET.json"""
import json, math, sys
import numpy as np

TRANS = {"gelu", "gelu_tanh", "silu", "sigmoid", "tanh", "exp", "erf", "log"}
CLOCK = 1.98e9


def features(r, sms=132):
    p = r["plan"] if isinstance(r["plan"], dict) else r["plan"][0]
    b, M, N, K = [int(x) for x in r["shape"].split()[0].split("x")]
    BM, BN, BK = p["tiles"]["m"], p["tiles"]["n"], p["tiles"]["k"]
    if p.get("split_k", 1) > 1:
        return None
    tiles = b * math.ceil(M / BM) * math.ceil(N / BN)
    waves = math.ceil(tiles / sms)
    fused = p.get("fused", [])
    staged = 1.0 if fused or "unaligned" in r["note"] else 0.0
    ops = sum(1 for f in fused if f.get("with"))
    tr = sum(1 for f in fused if f.get("fn") in TRANS)
    e = BM * BN / CLOCK * 1e6       # µs per clock per element
    return waves, [math.ceil(K / BK) / CLOCK * 1e6, e * staged, e * ops, e * tr]


def main(path):
    rows = [r for r in json.load(open(path))["rows"] if r["half"] == "fit" and r["family"] in ("gemm", "gemm-epilogue")
            and r["source"] in ("zoo", "up1")]
    X, y = [], []
    for r in rows:
        f = features(r)
        if f is None:
            continue
        waves, x = f
        X.append(x)
        y.append((r["measured_ms"] - r["predicted_ms"]) * 1e3 / waves)
    X, y = np.array(X), np.array(y)
    c, *_ = np.linalg.lstsq(X, y, rcond=None)
    print("n %d: a %.0f clocks a chunk, staged %.3f, operand %.3f, transcendental %.3f clocks an element"
          % (len(y), *c))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
