#!/usr/bin/env python3
"""The GPU sweep's cases (bench/gpu/sweep, docs/perf-notes.md "The sweep"): GEMM-family and
row workloads at the shapes users meet, as data. Each case becomes one .napkin file, drawn as
a user would draw it, and one manifest entry that the sweep and its baselines read.

  sweep-cases.py --list [--only PATTERN] [--quick]     the cases, one a line
  sweep-cases.py --write DIR [--only PATTERN] [--quick] the .napkin files and DIR/cases.json
  sweep-cases.py --estimate [--only PATTERN] [--quick]  the runner's expected host time
  --part I/N: the I-th of N parts balanced by that estimate (one device call each)

Standard library only (it runs here and on the GPU machine)."""
import argparse, json, math, os, re, sys

# One row per case: name, kind, dims, dtype, fusion, check.
#   name   family-SHAPE; SHAPE of products is M×N×K (rows×cols×reduced), of rows R×C
#   kind   matmul (B[k,n]) | linear (B[n,k], as F.linear) | bmm | scores | fp8 (B[n,k], bf16 out)
#          | bias_gelu | residual | swiglu | mlp | softmax | layernorm | rmsnorm
#   dims   axis sizes, by the diagram's axis names (below)
#   dtype  element type of the inputs and outputs
#   fusion "plain" (no region: what a user first draws; `run` may relabel it, see the sweep),
#          "regions" (the relabeling drawn: one shared-memory region per product and its maps),
#          or "file:PATH" (a file from the repository as it is)
#   check  None, or the axis sizes at which the tiles are checked when the full size's fp32
#          reference does not fit in device memory (the full size then runs --no-reference).
#          Filled in automatically where the estimate passes REFERENCE_LIMIT; give it by hand
#          to force it.
CASES = [
    # plain products C[m,n] = A[m,k]·B[k,n]
    ("matmul-4096x4096x4096", "matmul", dict(m=4096, n=4096, k=4096), "bf16", "plain", None),
    ("matmul-8192x8192x8192", "matmul", dict(m=8192, n=8192, k=8192), "bf16", "plain", None),
    ("matmul-8000x8000x8000", "matmul", dict(m=8000, n=8000, k=8000), "bf16", "plain", None),
    ("matmul-4095x4097x4096", "matmul", dict(m=4095, n=4097, k=4096), "bf16", "plain", None),
    ("matmul-1000x4096x4096", "matmul", dict(m=1000, n=4096, k=4096), "bf16", "plain", None),
    ("matmul-37x53x29", "matmul", dict(m=37, n=53, k=29), "bf16", "plain", None),
    ("matmul-1000x4096x4095", "matmul", dict(m=1000, n=4096, k=4095), "bf16", "plain", None),
    ("matmul-16384x16384x1024", "matmul", dict(m=16384, n=16384, k=1024), "bf16", "plain", None),
    # skinny M (decode: a few tokens against a weight)
    ("skinny-1x4096x4096", "matmul", dict(m=1, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-8x4096x4096", "matmul", dict(m=8, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-16x4096x4096", "matmul", dict(m=16, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-64x4096x4096", "matmul", dict(m=64, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-128x4096x4096", "matmul", dict(m=128, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-256x4096x4096", "matmul", dict(m=256, n=4096, k=4096), "bf16", "plain", None),
    ("skinny-1x11008x4096", "matmul", dict(m=1, n=11008, k=4096), "bf16", "plain", None),
    ("skinny-64x11008x4096", "matmul", dict(m=64, n=11008, k=4096), "bf16", "plain", None),
    # vocabulary projections: logits[t,v] = X[t,e]·W[e,v] (or W[v,e], as nn.Linear stores it)
    ("vocab-4096x50257x4096", "matmul", dict(t=4096, v=50257, e=4096), "bf16", "plain", None),
    ("vocab-4096x128256x4096", "matmul", dict(t=4096, v=128256, e=4096), "bf16", "plain", None),
    ("vocab-linear-4096x50257x4096", "linear", dict(t=4096, v=50257, e=4096), "bf16", "plain", None),
    # LLM MLP layers: up H[t,f] = X[t,e]·W[e,f]; down Y[t,e] = H[t,f]·W[f,e]
    ("mlp-up-4096x11008x4096", "matmul", dict(t=4096, f=11008, e=4096), "bf16", "plain", None),
    ("mlp-up-4096x13824x5120", "matmul", dict(t=4096, f=13824, e=5120), "bf16", "plain", None),
    ("mlp-up-8192x28672x8192", "matmul", dict(t=8192, f=28672, e=8192), "bf16", "plain", None),
    ("mlp-down-4096x4096x11008", "matmul", dict(t=4096, e=4096, f=11008), "bf16", "plain", None),
    ("mlp-down-4096x5120x13824", "matmul", dict(t=4096, e=5120, f=13824), "bf16", "plain", None),
    ("mlp-down-8192x8192x28672", "matmul", dict(t=8192, e=8192, f=28672), "bf16", "plain", None),
    # epilogues drawn in the region of their product
    ("bias-gelu-4096x11008x4096", "bias_gelu", dict(t=4096, f=11008, e=4096), "bf16", "regions", None),
    ("residual-4096x4096x11008", "residual", dict(t=4096, e=4096, f=11008), "bf16", "regions", None),
    ("swiglu-4096x11008x4096", "swiglu", dict(t=4096, f=11008, e=4096), "bf16", "regions", None),
    ("swiglu-8192x14336x4096", "swiglu", dict(t=8192, f=14336, e=4096), "bf16", "regions", None),
    ("mlp-gelu-drawn", "mlp", dict(t=8192, e=4096, f=16384), "bf16", "file:data/examples/mlp.napkin", None),
    ("mlp-gelu-regions", "mlp", dict(t=8192, e=4096, f=16384), "bf16", "regions", None),
    # fp8 e4m3 in, B stored [n,k] (K-major, as torch._scaled_mm takes it), bf16 out
    ("fp8-4096x4096x4096", "fp8", dict(m=4096, n=4096, k=4096), "fp8-e4m3", "plain", None),
    ("fp8-8192x8192x8192", "fp8", dict(m=8192, n=8192, k=8192), "fp8-e4m3", "plain", None),
    ("fp8-8192x14336x4096", "fp8", dict(m=8192, n=14336, k=4096), "fp8-e4m3", "plain", None),
    # batched: C[b,m,n] = A[b,m,k]·B[b,k,n]; attention scores S[b,h,q,k] = Q[b,h,q,d]·Kt[b,h,d,k]
    ("bmm-16x512x512x64", "bmm", dict(b=16, m=512, n=512, k=64), "bf16", "plain", None),
    ("scores-4x16x4096x4096x128", "scores", dict(b=4, h=16, q=4096, k=4096, d=128), "bf16", "plain", None),
    # rows: Y[r,c] = softmax over c; LayerNorm / RMSNorm over h, then ·γ (+β)
    ("softmax-4096x1000", "softmax", dict(r=4096, c=1000), "fp16", "plain", None),
    ("softmax-4096x4000", "softmax", dict(r=4096, c=4000), "fp16", "plain", None),
    ("softmax-4096x50257", "softmax", dict(r=4096, c=50257), "fp16", "plain", None),
    ("softmax-1024x128256", "softmax", dict(r=1024, c=128256), "fp16", "plain", None),
    ("softmax-16384x16384", "softmax", dict(r=16384, c=16384), "fp16", "plain", None),
    ("layernorm-65536x1000", "layernorm", dict(t=65536, h=1000), "fp16", "regions", None),
    ("layernorm-65536x4000", "layernorm", dict(t=65536, h=4000), "fp16", "regions", None),
    ("layernorm-8192x50257", "layernorm", dict(t=8192, h=50257), "fp16", "regions", None),
    ("layernorm-2048x128256", "layernorm", dict(t=2048, h=128256), "fp16", "regions", None),
    ("layernorm-65536x4096", "layernorm", dict(t=65536, h=4096), "fp16", "regions", None),
    ("rmsnorm-65536x4000", "rmsnorm", dict(t=65536, h=4000), "bf16", "regions", None),
    ("rmsnorm-65536x4096", "rmsnorm", dict(t=65536, h=4096), "bf16", "regions", None),
    ("rmsnorm-8192x50257", "rmsnorm", dict(t=8192, h=50257), "bf16", "regions", None),
    ("rmsnorm-2048x128256", "rmsnorm", dict(t=2048, h=128256), "bf16", "regions", None),
]

# Attention, drawn as a user draws and relabels it (attention() below): one shared-memory
# region over Q·Kᵀ → ·1/√d → [mask] → softmax → ·V, queries parallel, keys streamed. Names
# are family-B×Hq×Nq×Nk×d (Hq: query heads). Dims: b, h (K/V heads), g (query heads per K/V
# head, GQA only), q, k, d; MQA has no g (K and V lack h). The seventh field: the mask
# (causal with an offset, or a window), V's and O's types (default: Q's), the layout.
A = lambda b, h, q, k, d, g=None: dict(b=b, h=h, q=q, k=k, d=d) if g is None else dict(b=b, h=h, g=g, q=q, k=k, d=d)
CAUSAL = {"mask": "causal", "offset": 0}
ATTENTION = [
    # MHA, no mask: N 128 to 32k, non-dividing lengths, head dims 64 to 256
    ("attn-4x16x4096x4096x128", A(4, 16, 4096, 4096, 128), "fp16", {}),
    ("attn-2x16x8192x8192x128", A(2, 16, 8192, 8192, 128), "bf16", {}),
    ("attn-1x16x32768x32768x128", A(1, 16, 32768, 32768, 128), "bf16", {}),
    ("attn-32x16x128x128x64", A(32, 16, 128, 128, 64), "fp16", {}),
    ("attn-4x16x4096x4096x64", A(4, 16, 4096, 4096, 64), "fp16", {}),
    ("attn-4x16x4096x4096x80", A(4, 16, 4096, 4096, 80), "bf16", {}),
    ("attn-4x16x4096x4096x96", A(4, 16, 4096, 4096, 96), "fp16", {}),
    ("attn-4x16x2047x2047x112", A(4, 16, 2047, 2047, 112), "bf16", {}),
    ("attn-2x16x8192x8192x192", A(2, 16, 8192, 8192, 192), "bf16", {}),
    ("attn-2x16x8192x8192x256", A(2, 16, 8192, 8192, 256), "bf16", {}),
    ("attn-4x16x4000x4000x128", A(4, 16, 4000, 4000, 128), "fp16", {}),
    ("attn-16x16x1000x1000x128", A(16, 16, 1000, 1000, 128), "fp16", {}),
    ("attn-4x16x3000x3000x64", A(4, 16, 3000, 3000, 64), "fp16", {}),
    # causal (the offset 0: key j kept for query i when j ≤ i)
    ("attn-causal-4x16x4096x4096x128", A(4, 16, 4096, 4096, 128), "fp16", CAUSAL),
    ("attn-causal-2x16x8192x8192x128", A(2, 16, 8192, 8192, 128), "bf16", CAUSAL),
    ("attn-causal-1x16x16384x16384x128", A(1, 16, 16384, 16384, 128), "bf16", CAUSAL),
    ("attn-causal-1x16x32768x32768x128", A(1, 16, 32768, 32768, 128), "bf16", CAUSAL),
    ("attn-causal-16x16x1000x1000x64", A(16, 16, 1000, 1000, 64), "fp16", CAUSAL),
    ("attn-causal-4x16x2047x2047x256", A(4, 16, 2047, 2047, 256), "bf16", CAUSAL),
    # GQA (Llama-3-8B: 32 query heads on 8 K/V heads), MQA; the KV-cache prefill's offset
    ("attn-gqa-2x32x4096x4096x128", A(2, 8, 4096, 4096, 128, g=4), "bf16", {}),
    ("attn-gqa-causal-2x32x4096x4096x128", A(2, 8, 4096, 4096, 128, g=4), "bf16", CAUSAL),
    ("attn-gqa-prefill-2x32x1024x4096x128", A(2, 8, 1024, 4096, 128, g=4), "bf16",
     {"mask": "causal", "offset": 3072}),
    ("attn-mqa-2x16x4096x4096x128", A(2, 16, 4096, 4096, 128), "fp16", {"layout": "mqa"}),
    # cross-attention (q ≠ k)
    ("attn-cross-4x16x1024x8192x128", A(4, 16, 1024, 8192, 128), "fp16", {}),
    ("attn-cross-2x8x4096x77x64", A(2, 8, 4096, 77, 64), "fp16", {}),
    # sliding windows (Mistral's 4096 on GQA; 1024), causal on the right
    ("attn-window-2x32x8192x8192x128", A(2, 8, 8192, 8192, 128, g=4), "bf16",
     {"mask": "window", "offset": 0, "left": 4096, "right": 0}),
    ("attn-window-2x16x4096x4096x128", A(2, 16, 4096, 4096, 128), "fp16",
     {"mask": "window", "offset": 0, "left": 1024, "right": 0}),
    # decoding: 1 or 8 queries against a KV cache of 4k to 128k, batch 1 to 64 (GQA 32/8, MQA)
    ("attn-decode-64x32x1x4096x128", A(64, 8, 1, 4096, 128, g=4), "bf16", {}),
    ("attn-decode-8x32x1x16384x128", A(8, 8, 1, 16384, 128, g=4), "bf16", {}),
    ("attn-decode-1x32x1x32768x128", A(1, 8, 1, 32768, 128, g=4), "bf16", {}),
    ("attn-decode-2x32x1x100000x128", A(2, 8, 1, 100000, 128, g=4), "bf16", {}),
    ("attn-decode-1x32x1x131072x128", A(1, 8, 1, 131072, 128, g=4), "bf16", {}),
    ("attn-decode-4x32x8x8192x128", A(4, 8, 8, 8192, 128, g=4), "fp16", {"mask": "causal", "offset": 8184}),
    ("attn-decode-mqa-2x16x1x16384x128", A(2, 16, 1, 16384, 128), "fp16", {"layout": "mqa"}),
    # fp8 e4m3 Q and K; V fp8 (P·V on fp8 wgmma, V transposed once) or fp16 (P·V in 16 bits)
    ("attn-fp8-4x16x4096x4096x128", A(4, 16, 4096, 4096, 128), "fp8-e4m3", {"v": "fp8-e4m3", "o": "fp16"}),
    ("attn-fp8-qk-4x16x4096x4096x128", A(4, 16, 4096, 4096, 128), "fp8-e4m3", {"v": "fp16", "o": "fp16"}),
    ("attn-fp8-causal-4x16x4096x4096x128", A(4, 16, 4096, 4096, 128), "fp8-e4m3",
     dict(CAUSAL, v="fp8-e4m3", o="bf16")),
    ("attn-fp8-4x16x2000x2000x64", A(4, 16, 2000, 2000, 64), "fp8-e4m3", {"v": "fp8-e4m3", "o": "fp16"}),
    ("attn-fp8-1x16x8192x8192x128", A(1, 16, 8192, 8192, 128), "fp8-e4m3", {"v": "fp8-e4m3", "o": "fp16"}),
    # fp8 beyond the one shape: other head dims (d 256: no room for P·V's row-sum column),
    # GQA with a causal mask, a window, cross lengths that do not divide, split-KV decoding
    ("attn-fp8-4x16x4096x4096x96", A(4, 16, 4096, 4096, 96), "fp8-e4m3", {"v": "fp8-e4m3", "o": "bf16"}),
    ("attn-fp8-2x16x4096x4096x256", A(2, 16, 4096, 4096, 256), "fp8-e4m3", {"v": "fp8-e4m3", "o": "bf16"}),
    ("attn-fp8-gqa-causal-2x32x4096x4096x128", A(2, 8, 4096, 4096, 128, g=4), "fp8-e4m3",
     dict(CAUSAL, v="fp8-e4m3", o="bf16")),
    ("attn-fp8-window-2x16x4096x4096x128", A(2, 16, 4096, 4096, 128), "fp8-e4m3",
     {"mask": "window", "offset": 0, "left": 1024, "right": 0, "v": "fp8-e4m3", "o": "fp16"}),
    ("attn-fp8-cross-4x16x1000x3000x128", A(4, 16, 1000, 3000, 128), "fp8-e4m3", {"v": "fp8-e4m3", "o": "fp16"}),
    ("attn-fp8-decode-8x32x1x16384x128", A(8, 8, 1, 16384, 128, g=4), "fp8-e4m3", {"v": "fp8-e4m3", "o": "bf16"}),
]
CASES += [(name, "attention", dims, dtype, "regions", None, opts) for name, dims, dtype, opts in ATTENTION]
# the examples as they are in the repository
CASES += [
    ("attn-example-4x16x4096x4096x128", "attention", A(4, 16, 4096, 4096, 128), "fp16",
     "file:data/examples/flash-attention.napkin", None, {}),
    ("attn-fp8-example-4x16x4096x4096x128", "attention", A(4, 16, 4096, 4096, 128), "fp8-e4m3",
     "file:data/examples/hopper-attention-fp8.napkin", None, {"v": "fp16", "o": "fp16"}),
    # attention as first drawn, run as Suggest ▸ Apply would leave it (run --tune: the
    # model's best relabeling, FlashAttention's); as drawn it runs its two GEMMs and the
    # softmax rows through device memory (0.36× cuDNN on the H200, docs/perf-notes.md)
    ("attn-plain-4x16x4096x4096x128", "attention", A(4, 16, 4096, 4096, 128), "fp16",
     "file:data/examples/attention.napkin", None, {"run_flags": ["--tune"]}),
]

EPS = 1e-5                      # layernorm and rmsnorm, the same in the baselines
REFERENCE_LIMIT = 60e9          # device bytes the runner may ask for on an 80 GB card
# The runner's host time (docs/gpu-runs, H100 session 3): ~29 ns per input element
# (seeded fill, conversion, copy), ~13 ns per output element checked (two read-backs and
# the comparison), ~3 s per case otherwise (lowering, NVRTC, 0.5 s of energy launches).
HOST_NS_IN, HOST_NS_OUT, HOST_FIXED_S = 29, 13, 3.0
# Attention's reference is the plain diagram on the generic path: ~0.9 TFLOP/s (H100, B4 H16
# N4096 d128 in 0.62 s, docs/perf-notes.md); past REFERENCE_SECONDS a case is checked smaller.
REF_ATTN_FLOPS, REFERENCE_SECONDS = 0.9e12, 3.0
# The baselines' share of a device call (sweep-baselines.py): inputs, warm-up, 20 launches of
# each variant and torch.compile (5 s a case, 180 s a call: ~3 s a case); FlexAttention compiles a window in ~15 s.
BASE_FIXED_S, BASE_COMPILE_S, FLEX_COMPILE_S = 2.0, 3.0, 15.0
# What one device call may spend on cases (bench/gpu/sweep's BUDGET 450 s, less calibrate
# and the reserve): --estimate says how many parts the selection needs.
PART_S = 330
DTYPE_BYTES = {"fp32": 4, "tf32": 4, "fp16": 2, "bf16": 2, "fp8-e4m3": 1, "fp8-e5m2": 1, "int8": 1}
FAMILY = lambda name: re.sub(r"-[0-9x]+$", "", name).replace("-drawn", "").replace("-regions", "")
# --family: a group (gemm, rows, attention) or a family (attn-decode, softmax, …)
GROUP = lambda kind: "attention" if kind == "attention" else \
    "rows" if kind in ("softmax", "softmax0", "layernorm", "rmsnorm") else "gemm"


# ---- diagrams ---------------------------------------------------------------------------

def doc(title, description, dims, tensors, nodes, wires, regions=()):
    return {
        "format": "napkin", "version": 1, "title": title, "description": description,
        "axes": [{"name": n, "size": s} for n, s in dims.items()],
        "tensors": [{"name": n, "axes": a, "dtype": t} for n, a, t in tensors],
        "nodes": nodes,
        "wires": [{"from": f, "to": t, "port": p} for f, t, p in wires],
        "regions": list(regions),
        "view": {"zoom": 1, "scroll": [0, 0]},
    }


def node(id, kind, x, y, label=None, **kw):
    d = {"id": id, "kind": kind}
    if label:
        d["label"] = label
    d["x"], d["y"] = x, y
    d.update(kw)
    return d


def gemm_region(name, nodes, m, n, k, dims):
    """The brief's epilogue relabeling: shared memory, m by 128, n by 256 (128 where 256 does
    not divide n), k streamed by 64 through 4 stages."""
    bn = 256 if dims[n] % 256 == 0 else 128
    marks = {m: {"parallel": min(128, dims[m])}, n: {"parallel": min(bn, dims[n])},
             k: {"stream": min(64, dims[k])}}
    return {"name": name, "level": "smem", "nodes": nodes, "marks": marks, "stages": 4}


def axes3(kind, dims):
    """(row, col, reduced) axis names of a product case, in the names its dims use."""
    for names in (("m", "n", "k"), ("t", "v", "e"), ("t", "f", "e"), ("t", "e", "f")):
        if set(names) == set(dims) and list(dims) == list(names):
            return names
    raise ValueError("dims %r: expected m,n,k or t,v,e or t,f,e or t,e,f in that order" % (dims,))


def product(name, kind, dims, dtype):
    i, j, r = axes3(kind, dims)
    b_axes = [j, r] if kind in ("linear", "fp8") else [r, j]
    a_axes = [r, i] if kind == "matmul_at" else [i, r]
    out_dtype = "bf16" if kind == "fp8" else dtype
    mm = node("mm", "contract", 260, 130, "A·B", out=[i, j])
    if kind == "fp8":
        mm["dtype"] = "bf16"
    what = {"matmul": "B stored [%s,%s]" % (r, j), "linear": "B stored [%s,%s], as nn.Linear's weight" % (j, r),
            "matmul_at": "A stored [%s,%s] (M-major), B [%s,%s]" % (r, i, r, j),
            "fp8": "fp8 e4m3 inputs, B stored [%s,%s] (K-major), bf16 output" % (j, r)}[kind]
    return doc("%s (%s)" % (name, dtype),
               "C[%s,%s] = Σ_%s A[%s,%s]·B; %s. The plain diagram: no relabeling drawn." % (i, j, r, i, r, what),
               dims,
               [("A", a_axes, dtype), ("B", b_axes, dtype), ("C", [i, j], out_dtype)],
               [node("a", "input", 40, 60, "A", tensor="A"), node("b", "input", 40, 200, "B", tensor="B"), mm,
                node("c", "output", 480, 130, "C", tensor="C")],
               [("a", "mm", 0), ("b", "mm", 1), ("mm", "c", 0)])


def batched(name, kind, dims, dtype):
    if kind == "bmm":
        tensors = [("A", ["b", "m", "k"], dtype), ("B", ["b", "k", "n"], dtype), ("C", ["b", "m", "n"], dtype)]
        out, text = ["b", "m", "n"], "C[b,m,n] = Σ_k A[b,m,k]·B[b,k,n]"
    else:
        tensors = [("Q", ["b", "h", "q", "d"], dtype), ("Kt", ["b", "h", "d", "k"], dtype),
                   ("S", ["b", "h", "q", "k"], dtype)]
        out, text = ["b", "h", "q", "k"], "S[b,h,q,k] = Σ_d Q[b,h,q,d]·Kt[b,h,d,k] (attention scores, K stored transposed)"
    a, b, c = (t[0] for t in tensors)
    return doc("%s (%s)" % (name, dtype), text + ". The plain diagram: no relabeling drawn.", dims, tensors,
               [node("a", "input", 40, 60, a, tensor=a), node("b", "input", 40, 200, b, tensor=b),
                node("mm", "contract", 260, 130, "%s·%s" % (a, b), out=out),
                node("c", "output", 480, 130, c, tensor=c)],
               [("a", "mm", 0), ("b", "mm", 1), ("mm", "c", 0)])


def epilogue(name, kind, dims, dtype):
    i, j, r = axes3(kind, dims)
    x, w, mm = (node("x", "input", 40, 60, "X", tensor="X"), node("w", "input", 40, 200, "W", tensor="W"),
                node("mm", "contract", 260, 130, "X·W", out=[i, j]))
    if kind == "bias_gelu":
        return doc("%s (%s)" % (name, dtype), "Y = GELU(X·W + bias): the bias and the GELU (erf form) in the product's region.",
                   dims, [("X", [i, r], dtype), ("W", [r, j], dtype), ("bias", [j], dtype), ("Y", [i, j], dtype)],
                   [x, w, mm, node("bias", "input", 260, 260, "bias", tensor="bias"),
                    node("add", "map", 480, 130, "+bias", fn="add"), node("act", "map", 700, 130, "GELU", fn="gelu"),
                    node("y", "output", 920, 130, "Y", tensor="Y")],
                   [("x", "mm", 0), ("w", "mm", 1), ("mm", "add", 0), ("bias", "add", 1), ("add", "act", 0),
                    ("act", "y", 0)],
                   [gemm_region("block", ["mm", "add", "act"], i, j, r, dims)])
    if kind == "residual":
        return doc("%s (%s)" % (name, dtype), "Y = X·W + R: the residual added in the product's region.",
                   dims, [("X", [i, r], dtype), ("W", [r, j], dtype), ("R", [i, j], dtype), ("Y", [i, j], dtype)],
                   [x, w, mm, node("res", "input", 260, 260, "R", tensor="R"),
                    node("add", "map", 480, 130, "+R", fn="add"), node("y", "output", 700, 130, "Y", tensor="Y")],
                   [("x", "mm", 0), ("w", "mm", 1), ("mm", "add", 0), ("res", "add", 1), ("add", "y", 0)],
                   [gemm_region("block", ["mm", "add"], i, j, r, dims)])
    if kind == "swiglu":
        return doc("%s (%s)" % (name, dtype),
                   "Y = SiLU(X·W1) ⊙ (X·W3), two regions: {X·W1, SiLU} and {X·W3, ⊙}; the gate goes "
                   "through device memory between them.",
                   dims, [("X", [i, r], dtype), ("W1", [r, j], dtype), ("W3", [r, j], dtype), ("Y", [i, j], dtype)],
                   [node("x", "input", 40, 130, "X", tensor="X"), node("w1", "input", 40, 20, "W1", tensor="W1"),
                    node("w3", "input", 40, 260, "W3", tensor="W3"),
                    node("mm1", "contract", 260, 60, "X·W1", out=[i, j]), node("act", "map", 480, 60, "SiLU", fn="silu"),
                    node("mm3", "contract", 260, 220, "X·W3", out=[i, j]), node("mul", "map", 700, 140, "⊙", fn="mul"),
                    node("y", "output", 920, 140, "Y", tensor="Y")],
                   [("x", "mm1", 0), ("w1", "mm1", 1), ("mm1", "act", 0), ("x", "mm3", 0), ("w3", "mm3", 1),
                    ("act", "mul", 0), ("mm3", "mul", 1), ("mul", "y", 0)],
                   [gemm_region("gate", ["mm1", "act"], i, j, r, dims),
                    gemm_region("up", ["mm3", "mul"], i, j, r, dims)])
    raise ValueError(kind)


def mlp(name, dims, dtype):
    """data/examples/mlp.napkin with its relabeling drawn: {X·W1, GELU} and {H·W2}."""
    t, e, f = "t", "e", "f"
    return doc("%s (%s)" % (name, dtype),
               "Y[t,e] = GELU(X[t,e]·W1[e,f])·W2[f,e] (mlp.napkin) relabeled: the first product and its "
               "GELU in one region, the second in another; H goes through device memory.",
               dims, [("X", [t, e], dtype), ("W1", [e, f], dtype), ("W2", [f, e], dtype), ("Y", [t, e], dtype)],
               [node("x", "input", 40, 60, "X", tensor="X"), node("w1", "input", 40, 200, "W1", tensor="W1"),
                node("lin1", "contract", 260, 120, "X·W1", out=[t, f]), node("act", "map", 480, 120, "GELU", fn="gelu"),
                node("w2", "input", 480, 260, "W2", tensor="W2"), node("lin2", "contract", 700, 160, "H·W2", out=[t, e]),
                node("y", "output", 920, 160, "Y", tensor="Y")],
               [("x", "lin1", 0), ("w1", "lin1", 1), ("lin1", "act", 0), ("act", "lin2", 0), ("w2", "lin2", 1),
                ("lin2", "y", 0)],
               [gemm_region("up", ["lin1", "act"], t, f, e, dims), gemm_region("down", ["lin2"], t, e, f, dims)])


def rows(name, kind, dims, dtype):
    if kind in ("softmax", "softmax0"):
        axis = "c" if kind == "softmax" else "r"
        return doc("%s (%s)" % (name, dtype), "Y[r,c] = softmax over %s of X[r,c]. The plain diagram." % axis, dims,
                   [("X", ["r", "c"], dtype), ("Y", ["r", "c"], dtype)],
                   [node("x", "input", 40, 100, "X", tensor="X"), node("sm", "softmax", 260, 100, "softmax", axis=axis),
                    node("y", "output", 480, 100, "Y", tensor="Y")],
                   [("x", "sm", 0), ("sm", "y", 0)])
    tensors = [("X", ["t", "h"], dtype), ("gamma", ["h"], dtype)]
    nodes = [node("x", "input", 40, 60, "X", tensor="X"), node("g", "input", 260, 200, "γ", tensor="gamma"),
             node("ln", "normalize", 260, 60, kind, norm=kind, axis="h", eps=EPS),
             node("mul", "map", 480, 60, "·γ", fn="mul")]
    wires = [("x", "ln", 0), ("ln", "mul", 0), ("g", "mul", 1)]
    last = "mul"
    if kind == "layernorm":
        tensors.append(("beta", ["h"], dtype))
        nodes += [node("bt", "input", 480, 200, "β", tensor="beta"), node("add", "map", 700, 60, "+β", fn="add")]
        wires += [("mul", "add", 0), ("bt", "add", 1)]
        last = "add"
    tensors.append(("Y", ["t", "h"], dtype))
    nodes.append(node("y", "output", 920, 60, "Y", tensor="Y"))
    wires.append((last, "y", 0))
    # γ and β belong to the normalisation's kernel: drawn as the examples draw it, one
    # shared-memory region over the row operation and its maps (4 rows a block, 1 when a
    # row no longer fits a thread's registers)
    region = {"name": "rows", "level": "smem", "nodes": ["ln", "mul"] + (["add"] if kind == "layernorm" else []),
              "marks": {"t": {"parallel": 4 if dims["h"] <= 16384 else 1}}, "stages": 1}
    return doc("%s (%s)" % (name, dtype), "Y[t,h] = %s over h of X[t,h], then ·γ[h]%s, in one region."
               % (kind, " + β[h]" if kind == "layernorm" else ""), dims, tensors, nodes, wires, [region])


def attn_tiles(dims, dtype, opts):
    """The tiles of the bundled example a user resizes (data/examples): 128 queries a block,
    keys in chunks of 128 through 3 stages (flash-attention.napkin, at any head dim: the plan
    cuts the chunk where d is larger and runs the stages that fit, docs/plan.md "Attention
    kernels"), through 2 in fp8 (attention-causal-fp8.napkin); the heads that share a K/V
    head whole with 128 / G queries a block, where that leaves 16 queries or more
    (attention-causal-gqa.napkin: G = 4, 32 queries), else one head a block;
    decoding: every head of a group, and as many queries as keep the block at 128 rows.
    opts "k" and "stages" override (the GPU A/B scripts)."""
    decode = dims["q"] <= 64 and dims["k"] >= 32 * dims["q"]
    chunk = opts.get("k", 128)
    while chunk > dims["k"] and chunk > 16:       # a tile is at most its axis (k = 77: 64)
        chunk //= 2
    chunk = min(chunk, dims["k"])                 # k = 1: the whole axis (the plan rounds it up)
    heads = dims.get("g") or (dims["h"] if opts.get("layout") == "mqa" else 1)
    packed = not decode and 1 < heads <= 8
    stages = opts.get("stages", 2 if dtype == "fp8-e4m3" else 3)
    if decode:
        q = "whole" if heads * dims["q"] <= 128 else max(1, 128 // heads)
        return {"q": q, "g": "whole", "k": chunk, "stages": stages, "decode": True}
    if packed:
        return {"q": min(128 // heads, dims["q"]), "g": "whole", "k": chunk, "stages": stages, "decode": False}
    return {"q": min(128, dims["q"]), "g": 1, "k": chunk, "stages": stages, "decode": False}


def attention(name, dims, dtype, opts):
    """O = softmax(Q·Kᵀ/√d [masked])·V drawn as flash-attention.napkin is: one shared-memory
    region, the leading axes parallel by 1, the queries parallel, the keys streamed, d whole.
    GQA: Q[b,h,g,q,d] against K[b,h,k,d] (query head h·G + g reads K/V head h); MQA:
    Q[b,h,q,d] against K[b,k,d] (docs/plan.md, "Attention kernels", the diagram convention).
    A mask is the operation between the scale and the softmax, inside the region."""
    mqa = opts.get("layout") == "mqa"
    qax = ["b", "h", "g", "q", "d"] if "g" in dims else ["b", "h", "q", "d"]
    kax = ["b", "k", "d"] if mqa else ["b", "h", "k", "d"]
    sax = [a for a in qax if a != "d"] + ["k"]
    v, o = opts.get("v", dtype), opts.get("o", dtype)
    t = attn_tiles(dims, dtype, opts)
    mask = opts.get("mask")
    nodes = [node("q_in", "input", 40, 40, "Q", tensor="Q"), node("k_in", "input", 40, 180, "K", tensor="K"),
             node("v_in", "input", 545, 300, "V", tensor="V"),
             node("qk", "contract", 205, 100, "Q·Kᵀ", out=sax,
                  # fp8 Q·Kᵀ with V in 16 bits: the scores in V's type, as hopper-attention-fp8.napkin
                  **({"dtype": v} if v != dtype else {})),
             node("scale", "map", 375, 100, "·1/√d", fn="scale", alpha=1 / math.sqrt(dims["d"]))]
    chain = ["qk", "scale"]
    if mask:
        m = {"mask": mask, "axis": "k", "rows": "q", "offset": opts.get("offset", 0)}
        if mask == "window":
            m.update(left=opts["left"], right=opts["right"])
        label = "causal" if mask == "causal" else "window %d/%d" % (opts["left"], opts["right"])
        nodes.append(node(mask, "mask", 545, 100, label, **m))
        chain.append(mask)
    nodes += [node("sm", "softmax", 715, 100, "softmax", axis="k"),
              node("pv", "contract", 885, 160, "P·V", out=qax), node("o", "output", 1055, 160, "O", tensor="O")]
    chain += ["sm", "pv"]
    wires = [("q_in", "qk", 0), ("k_in", "qk", 1)] + [(a, b, 0) for a, b in zip(chain, chain[1:])] + \
        [("v_in", "pv", 1), ("pv", "o", 0)]
    marks = {"b": {"parallel": 1}}
    if mqa:
        marks["h"] = "whole" if t["g"] == "whole" else {"parallel": 1}
    else:
        marks["h"] = {"parallel": 1}
    if "g" in dims:
        marks["g"] = "whole" if t["g"] == "whole" else {"parallel": t["g"]}
    marks["q"] = "whole" if t["q"] == "whole" else {"parallel": t["q"]}
    marks["k"] = {"stream": t["k"]}
    marks["d"] = "whole"
    region = {"name": "block", "level": "smem", "nodes": chain, "marks": marks, "stages": t["stages"]}
    what = ("GQA %d/%d" % (dims["h"] * dims["g"], dims["h"]) if "g" in dims else
            "MQA %d/1" % dims["h"] if mqa else "%d heads" % dims["h"])
    how = {None: "no mask", "causal": "causal, offset %d" % opts.get("offset", 0)}.get(
        mask, "window %s left, %s right" % (opts.get("left"), opts.get("right")))
    return doc("%s (%s%s)" % (name, dtype, ", V %s" % v if v != dtype else ""),
               "FlashAttention relabeled: %s, %s; %s queries a block, keys streamed by %d through %d stages, "
               "the scores never reach device memory." % (what, how, "every" if t["q"] == "whole" else t["q"],
                                                          t["k"], t["stages"]),
               dims, [("Q", qax, dtype), ("K", kax, dtype), ("V", kax, v), ("O", qax, o)], nodes, wires, [region])


def unpack(case):
    """name, kind, dims, dtype, fusion, check, opts (the seventh field, attention only)."""
    return tuple(case[:6]) + ((case[6] if len(case) > 6 else {}),)


def diagram(case, root):
    name, kind, dims, dtype, fusion, _, opts = unpack(case)
    if fusion.startswith("file:"):
        d = json.load(open(os.path.join(root, fusion[5:]), encoding="utf-8"))
        sizes = {a["name"]: a["size"] for a in d["axes"]}
        if sizes != dims:
            raise ValueError("%s: %s has axes %r, the case says %r" % (name, fusion[5:], sizes, dims))
        return d
    if kind in ("matmul", "linear", "fp8", "matmul_at"):
        d = product(name, kind, dims, dtype)
    elif kind in ("bmm", "scores"):
        d = batched(name, kind, dims, dtype)
    elif kind in ("bias_gelu", "residual", "swiglu"):
        d = epilogue(name, kind, dims, dtype)
    elif kind == "mlp":
        d = mlp(name, dims, dtype)
    elif kind in ("softmax", "softmax0", "layernorm", "rmsnorm"):
        d = rows(name, kind, dims, dtype)
    elif kind == "attention":
        d = attention(name, dims, dtype, opts)
    else:
        raise ValueError("%s: unknown kind %s" % (name, kind))
    if (fusion == "regions") != bool(d["regions"]):
        raise ValueError("%s: fusion %s, but the %s diagram has %d regions" % (name, fusion, kind, len(d["regions"])))
    return d


# ---- what each case moves and computes --------------------------------------------------

def elements(d, dims=None):
    """(input elements, output elements, intermediate elements) of a diagram at dims."""
    sizes = {a["name"]: a["size"] for a in d["axes"]}
    sizes.update(dims or {})
    tens = {t["name"]: math.prod(sizes[a] for a in t["axes"]) for t in d["tensors"]}
    by_id = {n["id"]: n for n in d["nodes"]}
    ins = sum(tens[n["tensor"]] for n in d["nodes"] if n["kind"] == "input")
    outs = sum(tens[n["tensor"]] for n in d["nodes"] if n["kind"] == "output")
    # every operation's result in the plain (reference) lowering: a contraction's result
    # has its out axes, anything else the axes of its first input
    shape = {}

    def axes_of(nid):
        if nid in shape:
            return shape[nid]
        n = by_id[nid]
        if n["kind"] == "input":
            r = next(t["axes"] for t in d["tensors"] if t["name"] == n["tensor"])
        elif n["kind"] == "contract":
            r = n["out"]
        else:
            srcs = sorted((w for w in d["wires"] if w["to"] == nid), key=lambda w: w["port"])
            r = list(axes_of(srcs[0]["from"]))
            for w in srcs[1:]:
                r += [a for a in axes_of(w["from"]) if a not in r]
        shape[nid] = r
        return r
    inter = sum(math.prod(sizes[a] for a in axes_of(n["id"])) for n in d["nodes"]
                if n["kind"] not in ("input", "output"))
    return ins, outs, inter


def flops(kind, dims, opts=None):
    g = dims.get
    if kind in ("matmul", "linear", "fp8", "bias_gelu", "residual", "matmul_at"):
        return 2 * math.prod(dims.values())
    if kind == "swiglu":
        return 4 * math.prod(dims.values())
    if kind == "mlp":
        return 4 * g("t") * g("e") * g("f")
    if kind == "bmm":
        return 2 * g("b") * g("m") * g("n") * g("k")
    if kind == "scores":
        return 2 * g("b") * g("h") * g("q") * g("k") * g("d")
    if kind == "attention":
        return 4 * g("b") * query_heads(dims) * kept_pairs(g("q"), g("k"), opts or {}) * g("d")
    return 0


def query_heads(dims):
    return dims["h"] * dims.get("g", 1)


def kept_pairs(nq, nk, opts):
    """(query, key) pairs a mask keeps (docs/plan.md, "Masks"): causal keeps key j for query i
    when j ≤ i + offset; a window when i + offset − left ≤ j ≤ i + offset + right (−1:
    unbounded). Attention's FLOPs are 4·B·H·d per kept pair (causal N×N: the lower half and
    its diagonal)."""
    mask = opts.get("mask")
    if not mask:
        return nq * nk
    off = opts.get("offset", 0)
    left = opts.get("left", -1) if mask == "window" else -1
    right = opts.get("right", -1) if mask == "window" else 0
    total = 0
    for i in range(nq):
        lo = max(0, i + off - left) if left >= 0 else 0
        hi = min(nk - 1, i + off + right) if right >= 0 else nk - 1
        total += max(0, hi - lo + 1)
    return total


def attention_seconds(dims):
    """The fp32 reference of a plain attention diagram: the generic lowering at about
    REF_ATTN_FLOPS, every score computed (the reference ignores the mask's savings)."""
    return 4 * dims["b"] * query_heads(dims) * dims["q"] * dims["k"] * dims["d"] / REF_ATTN_FLOPS


def io_bytes(d):
    sizes = {a["name"]: a["size"] for a in d["axes"]}
    return sum(math.prod(sizes[a] for a in t["axes"]) * DTYPE_BYTES[t["dtype"]] for t in d["tensors"])


def reference_bytes(d, dims=None):
    """What the runner allocates: the kernel's tensors in their types, the reference's
    tensors and every intermediate in fp32 (docs/perf-notes.md, Method), one input copy."""
    ins, outs, inter = elements(d, dims)
    return 2 * (ins + outs) + 4 * (ins + outs + inter)


def host_seconds(d, dims=None, checked=True, kind=None):
    ins, outs, _ = elements(d, dims)
    t = HOST_FIXED_S + HOST_NS_IN * 1e-9 * ins + (HOST_NS_OUT * 1e-9 * outs if checked else 0)
    if kind == "attention" and checked:
        sizes = {a["name"]: a["size"] for a in d["axes"]}
        sizes.update(dims or {})
        t += attention_seconds(sizes)
    return t


def attention_check(name, d, dims, opts):
    """Check axes for an attention case whose reference is too big or too slow: the batch,
    then the K/V heads, halved to 1 (the same tiles, masks and edges), then q and k together
    for self-attention without an offset; the group axis and d stay (they shape the block)."""
    check = dict(dims)
    too_big = lambda c: reference_bytes(d, c) > REFERENCE_LIMIT or attention_seconds(c) > REFERENCE_SECONDS
    while too_big(check):
        if check["b"] > 1:
            check["b"] = max(1, check["b"] // 2)
        elif check["h"] > 1:
            check["h"] = max(1, check["h"] // 2)
        elif check["q"] == check["k"] and not opts.get("offset") and check["q"] % 2 == 0 and check["q"] > 1024:
            check["q"] //= 2
            check["k"] //= 2
        else:
            raise ValueError("%s: the reference needs %.0f GB and %.0f s even at %r; give check axes by hand"
                             % (name, reference_bytes(d, check) / 1e9, attention_seconds(check), check))
    return check if check != dims else None


def baseline_seconds(kind, dims, opts):
    if kind != "attention":
        return BASE_FIXED_S + BASE_COMPILE_S
    kernel = 4 * dims["b"] * query_heads(dims) * dims["q"] * dims["k"] * dims["d"] / 400e12
    return BASE_FIXED_S + 2 * 25 * kernel + (FLEX_COMPILE_S if opts.get("mask") == "window" else 0)


def manifest_entry(case, d, path):
    name, kind, dims, dtype, fusion, check, opts = unpack(case)
    if check is None and kind == "attention":
        check = attention_check(name, d, dims, opts)
    elif check is None and reference_bytes(d) > REFERENCE_LIMIT:
        # shrink the largest even axis until the reference fits; odd sizes stay as drawn,
        # so their boundary tiles are the ones checked
        check = dict(dims)
        while reference_bytes(d, check) > REFERENCE_LIMIT:
            even = [a for a in check if check[a] % 2 == 0 and check[a] > 64]
            if not even:
                raise ValueError("%s: the reference needs %.0f GB even at %r; give check axes by hand"
                                 % (name, reference_bytes(d, check) / 1e9, check))
            a = max(even, key=lambda a: check[a])
            check[a] //= 2
    ins, outs, inter = elements(d)
    host = host_seconds(d, checked=check is None, kind=kind)
    if check:
        # the small checked run, then the full size timed without the reference
        host += host_seconds(d, check, kind=kind)
    e = {
        "name": name, "family": FAMILY(name), "group": GROUP(kind), "kind": kind, "dims": dims, "dtype": dtype,
        "fusion": fusion, "plain": not d["regions"], "file": path, "check": check, "flops": flops(kind, dims, opts),
        "bytes": io_bytes(d), "elements": {"in": ins, "out": outs, "intermediate": inter},
        "reference_bytes": reference_bytes(d), "host_s": round(host, 1),
        "baseline_s": round(baseline_seconds(kind, dims, opts), 1),
        "run_flags": list(opts.get("run_flags", [])),
    }
    if kind == "attention":
        mqa = opts.get("layout") == "mqa"
        e["attention"] = {
            "heads": query_heads(dims), "kv_heads": 1 if mqa else dims["h"],
            "layout": "mqa" if mqa else "gqa" if "g" in dims else "mha",
            "mask": opts.get("mask") or "none", "offset": opts.get("offset", 0),
            "left": opts.get("left", -1), "right": opts.get("right", -1 if opts.get("mask") != "causal" else 0),
            "v_dtype": opts.get("v", dtype), "o_dtype": opts.get("o", dtype),
            "scale": 1 / math.sqrt(dims["d"]),
        }
        if any(n["kind"] == "mask" for n in d["nodes"]):
            # the mask operation is new in the file format: until napkin-cli knows it, these
            # files fail to validate (tests/cli/test-sweep.py skips them, saying so)
            e["needs"] = "mask"
    return e


def select(only=None, quick=False, family=None):
    cases = [c for c in CASES if not only or re.search(only, c[0])]
    if family:
        cases = [c for c in cases if family in (GROUP(c[1]), FAMILY(c[0]))]
    if quick:
        seen, kept = set(), []
        for c in cases:
            if FAMILY(c[0]) not in seen:
                seen.add(FAMILY(c[0]))
                kept.append(c)
        cases = kept
    return cases


def split(cases, entries, part):
    """The I-th of N parts, balanced by the estimated device time of a case (the runner's
    host work, the reference, the baselines; longest first into the lightest part), each in
    the table's order."""
    try:
        i, n = (int(x) for x in part.split("/"))
    except ValueError:
        raise SystemExit("sweep-cases.py: --part takes I/N (e.g. 1/2), not %r" % part)
    if not 1 <= i <= n:
        raise SystemExit("sweep-cases.py: --part %s: I must be from 1 to N" % part)
    load = [0.0] * n
    owner = {}
    for e in sorted(entries, key=lambda e: -cost(e)):
        b = load.index(min(load))
        owner[e["name"]] = b
        load[b] += cost(e)
    keep = [k for k, e in enumerate(entries) if owner[e["name"]] == i - 1]
    return [cases[k] for k in keep], [entries[k] for k in keep]


def cost(e):
    return e["host_s"] + e.get("baseline_s", 0)


def check_table():
    names = [c[0] for c in CASES]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise ValueError("case names repeat: %s" % ", ".join(sorted(dup)))
    for c in CASES:
        if not re.fullmatch(r"[a-z0-9][a-z0-9x.-]*", c[0]):
            raise ValueError("%s: case names are lower-case words, digits, x and dashes (they name files)" % c[0])
        if c[1] == "attention":
            shape = [int(x) for x in c[0].rsplit("-", 1)[1].split("x")]
            dims = c[2]
            if shape != [dims["b"], query_heads(dims), dims["q"], dims["k"], dims["d"]]:
                raise ValueError("%s: attention names end in B×Hq×Nq×Nk×d, the dims say %r" % (c[0], dims))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    act = ap.add_mutually_exclusive_group(required=True)
    act.add_argument("--list", action="store_true", help="print the cases")
    act.add_argument("--write", metavar="DIR", help="write DIR/NAME.napkin and DIR/cases.json")
    act.add_argument("--estimate", action="store_true", help="the runner's expected host seconds per case")
    ap.add_argument("--only", metavar="PATTERN", help="cases whose name matches this regular expression")
    ap.add_argument("--quick", action="store_true", help="the first case of each family")
    ap.add_argument("--family", metavar="NAME", help="one group (gemm, rows, attention) or family (attn-decode, …)")
    ap.add_argument("--part", metavar="I/N", help="the I-th of N parts of similar runner time")
    ap.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."),
                    help="repository root (for file: cases)")
    args = ap.parse_args(argv)
    check_table()
    cases = select(args.only, args.quick, args.family)
    if not cases:
        print("sweep-cases.py: no case matches %s" % " and ".join(
            x for x in ("%r" % args.only if args.only else "", "family %r" % args.family if args.family else "") if x)
            or "", file=sys.stderr)
        return 1
    entries, docs = [], []
    for c in cases:
        d = diagram(c, args.root)
        path = os.path.join(args.write, c[0] + ".napkin") if args.write else None
        entries.append(manifest_entry(c, d, path))
        docs.append(d)
    if args.part:
        keep = {e["name"] for e in split(cases, entries, args.part)[1]}
        docs = [d for d, e in zip(docs, entries) if e["name"] in keep]
        entries = [e for e in entries if e["name"] in keep]
    for d, e in zip(docs, entries):
        if args.write:
            os.makedirs(args.write, exist_ok=True)
            with open(e["file"], "w", encoding="utf-8") as f:
                json.dump(d, f, indent=1, ensure_ascii=False)
                f.write("\n")
    if args.write:
        with open(os.path.join(args.write, "cases.json"), "w", encoding="utf-8") as f:
            json.dump({"eps": EPS, "cases": entries}, f, indent=1)
        print("wrote %d cases to %s" % (len(entries), args.write))
    elif args.list:
        w = max(30, max(len(e["name"]) for e in entries))
        print("%-*s %-10s %-9s %-11s %-40s %s" % (w, "case", "kind", "dtype", "fusion", "dims", "checked at"))
        for e in entries:
            dims = " ".join("%s=%d" % kv for kv in e["dims"].items())
            at = e.get("attention")
            if at:
                dims += " %s" % at["mask"] + ("+%d" % at["offset"] if at["offset"] else "") + (
                    " L%d R%d" % (at["left"], at["right"]) if at["mask"] == "window" else "") + (
                    " V:%s" % at["v_dtype"] if at["v_dtype"] != e["dtype"] else "")
            chk = " ".join("%s=%d" % kv for kv in e["check"].items()) if e["check"] else "full size"
            fus = e["fusion"] if not e["fusion"].startswith("file:") else os.path.basename(e["fusion"])
            print("%-*s %-10s %-9s %-11s %-40s %s%s" % (w, e["name"], e["kind"], e["dtype"], fus, dims, chk,
                                                       " (needs %s)" % e["needs"] if e.get("needs") else ""))
        print("%d cases" % len(entries))
    else:
        total = base = 0
        for e in entries:
            total += e["host_s"]
            base += e["baseline_s"]
            print("%-36s %6.1f s + baselines %5.1f s  %7.0f M elements in, %7.0f M out, reference %5.1f GB" % (
                e["name"], e["host_s"], e["baseline_s"], e["elements"]["in"] / 1e6, e["elements"]["out"] / 1e6,
                e["reference_bytes"] / 1e9))
        print("%d cases, about %.0f s of runner host time (fill, reference, check, compile) and %.0f s of "
              "baselines; at %d s a device call: --part I/%d" % (len(entries), total, base, PART_S,
                                                               max(1, math.ceil((total + base) / PART_S))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
