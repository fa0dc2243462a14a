#!/usr/bin/env python3
"""Writes data/examples/*.napkin. The examples are data, kept in git; this script
is how they were first laid out and is kept so that a change to all of them is
one edit. Run: python3 build-aux/make-examples.py"""
import json, math, os, sys

OUT = os.path.join(os.path.dirname(__file__), '..', 'data', 'examples')

def doc(title, description, axes, tensors, nodes, wires, regions=()):
    return {
        "format": "napkin", "version": 1, "title": title, "description": description,
        "axes": [{"name": n, "size": s} for n, s in axes],
        "tensors": [{"name": n, "axes": a, "dtype": t} for n, a, t in tensors],
        "nodes": nodes,
        "wires": [{"from": f, "to": t, "port": p} for f, t, p in wires],
        "regions": list(regions),
        "view": {"zoom": 1, "scroll": [0, 0]},
    }

def node(id, kind, x, y, label=None, **kw):
    d = {"id": id, "kind": kind}
    if label: d["label"] = label
    d["x"] = x; d["y"] = y
    d.update(kw)
    return d

def region(name, level, nodes, marks, stages=1):
    r = {"name": name, "level": level, "nodes": nodes,
         "marks": {a: ("whole" if m == "whole" else {m[0]: m[1]}) for a, m in marks}}
    if stages != 1: r["stages"] = stages
    return r

def matmul(tiled=False, nested=False):
    axes = [("m", 4096), ("n", 4096), ("k", 4096)]
    tensors = [("A", ["m", "k"], "fp16"), ("B", ["k", "n"], "fp16"), ("C", ["m", "n"], "fp16")]
    nodes = [node("a", "input", 40, 60, "A", tensor="A"),
             node("b", "input", 40, 200, "B", tensor="B"),
             node("mm", "contract", 260, 130, "A·B", out=["m", "n"]),
             node("c", "output", 480, 130, "C", tensor="C")]
    wires = [("a", "mm", 0), ("b", "mm", 1), ("mm", "c", 0)]
    regions = []
    if tiled or nested:
        regions.append(region("block", "smem", ["mm"],
                              [("m", ("parallel", 128)), ("n", ("parallel", 128)), ("k", ("stream", 64))],
                              stages=3))
    if nested:
        regions.append(region("warp", "registers", ["mm"],
                              [("m", ("parallel", 64)), ("n", ("parallel", 32)), ("k", ("stream", 16))]))
    if nested:
        return doc("Matmul: shared memory tiles, warp tiles in registers",
                   "C[m,n] = Σ_k A[m,k]·B[k,n] with two nested relabelings: a 128×128 block tile "
                   "in shared memory streaming k in chunks of 64, and inside it 64×32 warp tiles in "
                   "registers streaming k in chunks of 16 (the tensor-core fragments).",
                   axes, tensors, nodes, wires, regions)
    if tiled:
        return doc("Tiled matmul",
                   "C[m,n] = Σ_k A[m,k]·B[k,n] relabeled onto shared memory: m and n are cut into "
                   "groups of 128 (one thread block each), k is streamed in chunks of 64 with three "
                   "pipeline stages. H = m·n·k·(1/128 + 1/128) + m·n elements.",
                   axes, tensors, nodes, wires, regions)
    return doc("Matmul", "C[m,n] = Σ_k A[m,k]·B[k,n], the plain diagram: everything in device memory.",
               axes, tensors, nodes, wires)

def softmax():
    return doc("Row-wise softmax",
               "Y[r,c] = softmax over c of X[r,c]. Each thread block holds 4 whole rows in shared memory.",
               [("r", 16384), ("c", 16384)],
               [("X", ["r", "c"], "fp16"), ("Y", ["r", "c"], "fp16")],
               [node("x", "input", 40, 100, "X", tensor="X"),
                node("sm", "softmax", 260, 100, "softmax", axis="c"),
                node("y", "output", 480, 100, "Y", tensor="Y")],
               [("x", "sm", 0), ("sm", "y", 0)],
               [region("rows", "smem", ["sm"], [("r", ("parallel", 4)), ("c", "whole")])])

def layernorm():
    return doc("LayerNorm",
               "Y[t,h] = LayerNorm over h of X[t,h], then ·γ[h] + β[h]. Each block holds 4 rows.",
               [("t", 65536), ("h", 4096)],
               [("X", ["t", "h"], "fp16"), ("gamma", ["h"], "fp16"), ("beta", ["h"], "fp16"),
                ("Y", ["t", "h"], "fp16")],
               [node("x", "input", 40, 60, "X", tensor="X"),
                node("g", "input", 260, 200, "γ", tensor="gamma"),
                node("bt", "input", 480, 200, "β", tensor="beta"),
                node("ln", "normalize", 260, 60, "layernorm", norm="layernorm", axis="h", eps=1e-5),
                node("mul", "map", 480, 60, "·γ", fn="mul"),
                node("add", "map", 700, 60, "+β", fn="add"),
                node("y", "output", 920, 60, "Y", tensor="Y")],
               [("x", "ln", 0), ("ln", "mul", 0), ("g", "mul", 1), ("mul", "add", 0), ("bt", "add", 1),
                ("add", "y", 0)],
               [region("rows", "smem", ["ln", "mul", "add"], [("t", ("parallel", 4)), ("h", "whole")])])

def mlp():
    return doc("MLP block",
               "Y[t,e] = GELU(X[t,e]·W1[e,f])·W2[f,e]: two linear layers with a GELU between them.",
               [("t", 8192), ("e", 4096), ("f", 16384)],
               [("X", ["t", "e"], "bf16"), ("W1", ["e", "f"], "bf16"), ("W2", ["f", "e"], "bf16"),
                ("Y", ["t", "e"], "bf16")],
               [node("x", "input", 40, 60, "X", tensor="X"),
                node("w1", "input", 40, 200, "W1", tensor="W1"),
                node("lin1", "contract", 260, 120, "X·W1", out=["t", "f"]),
                node("act", "map", 480, 120, "GELU", fn="gelu"),
                node("w2", "input", 480, 260, "W2", tensor="W2"),
                node("lin2", "contract", 700, 160, "H·W2", out=["t", "e"]),
                node("y", "output", 920, 160, "Y", tensor="Y")],
               [("x", "lin1", 0), ("w1", "lin1", 1), ("lin1", "act", 0), ("act", "lin2", 0),
                ("w2", "lin2", 1), ("lin2", "y", 0)])

def attention(flash=False):
    d = 128
    axes = [("b", 4), ("h", 16), ("q", 4096), ("k", 4096), ("d", d)]
    tensors = [("Q", ["b", "h", "q", "d"], "fp16"), ("K", ["b", "h", "k", "d"], "fp16"),
               ("V", ["b", "h", "k", "d"], "fp16"), ("O", ["b", "h", "q", "d"], "fp16")]
    # 170 units apart: the first screen shows all of FlashAttention with 9 px strand
    # labels (docs/editor.md, "The first screen")
    nodes = [node("q_in", "input", 40, 40, "Q", tensor="Q"),
             node("k_in", "input", 40, 180, "K", tensor="K"),
             node("v_in", "input", 375, 300, "V", tensor="V"),
             node("qk", "contract", 205, 100, "Q·Kᵀ", out=["b", "h", "q", "k"]),
             node("scale", "map", 375, 100, "·1/√d", fn="scale", alpha="1/sqrt(d)"),
             node("sm", "softmax", 545, 100, "softmax", axis="k"),
             node("pv", "contract", 715, 160, "P·V", out=["b", "h", "q", "d"]),
             node("o", "output", 885, 160, "O", tensor="O")]
    wires = [("q_in", "qk", 0), ("k_in", "qk", 1), ("qk", "scale", 0), ("scale", "sm", 0),
             ("sm", "pv", 0), ("v_in", "pv", 1), ("pv", "o", 0)]
    if flash:
        return doc("FlashAttention",
                   "Attention as a relabeling (Abbott & Zardini, FlashAttention on a Napkin): queries "
                   "in groups of 128 per thread block, keys streamed in chunks of 128 through 3 stages "
                   "with the online softmax; the scores never reach device memory. H = 2·q·d + 2·k·d·q/128 per head.",
                   axes, tensors, nodes, wires,
                   [region("block", "smem", ["qk", "scale", "sm", "pv"],
                           [("b", ("parallel", 1)), ("h", ("parallel", 1)), ("q", ("parallel", 128)),
                            ("k", ("stream", 128)), ("d", "whole")], stages=3)])
    return doc("Attention",
               "O = softmax(Q·Kᵀ/√d)·V with the scores materialised in device memory: every operation "
               "reads and writes HBM.", axes, tensors, nodes, wires)

def hopper_attention():
    # The paper's Hopper sketch: Q·Kᵀ on fp8 tensor cores, P·V in fp16; a thread block
    # of 128 queries holds two consumer warpgroups of 64 queries each.
    d = 128
    axes = [("b", 4), ("h", 16), ("q", 4096), ("k", 4096), ("d", d)]
    tensors = [("Q", ["b", "h", "q", "d"], "fp8-e4m3"), ("K", ["b", "h", "k", "d"], "fp8-e4m3"),
               ("V", ["b", "h", "k", "d"], "fp16"), ("O", ["b", "h", "q", "d"], "fp16")]
    nodes = [node("q_in", "input", 40, 40, "Q", tensor="Q"),
             node("k_in", "input", 40, 180, "K", tensor="K"),
             node("v_in", "input", 480, 300, "V", tensor="V"),
             node("qk", "contract", 260, 100, "Q·Kᵀ (fp8)", out=["b", "h", "q", "k"], dtype="fp16"),
             node("scale", "map", 480, 100, "·1/√d", fn="scale", alpha="1/sqrt(d)"),
             node("sm", "softmax", 700, 100, "softmax", axis="k"),
             node("pv", "contract", 920, 160, "P·V (fp16)", out=["b", "h", "q", "d"]),
             node("o", "output", 1140, 160, "O", tensor="O")]
    wires = [("q_in", "qk", 0), ("k_in", "qk", 1), ("qk", "scale", 0), ("scale", "sm", 0),
             ("sm", "pv", 0), ("v_in", "pv", 1), ("pv", "o", 0)]
    block = region("block", "smem", ["qk", "scale", "sm", "pv"],
                   [("b", ("parallel", 1)), ("h", ("parallel", 1)), ("q", ("parallel", 128)),
                    ("k", ("stream", 128)), ("d", "whole")], stages=2)
    block["threads"] = 256
    warpgroup = region("warpgroup", "registers", ["qk", "scale", "sm", "pv"],
                       [("q", ("parallel", 64)), ("k", "whole"), ("d", "whole")])
    warpgroup["threads"] = 128
    return doc("Hopper attention: fp8 Q·Kᵀ, fp16 P·V",
               "The paper's Hopper sketch (Abbott & Zardini, FlashAttention on a Napkin, §5): the first "
               "product runs on fp8 tensor cores, the second in fp16; blocks of 128 queries stream keys "
               "in chunks of 128, and each warpgroup (128 threads) keeps 64 queries in registers. "
               "Ideal tensor-core throughput on H100: 2/(1/1979 + 1/989) ≈ 1.32 PFLOP/s.",
               axes, tensors, nodes, wires, [block, warpgroup])

def masked_attention(title, description, B, H, HK, NQ, NKV, D, mask, BQ, BKV, stages,
                     group_tile=1, dtype="fp16", v_dtype=None):
    """Attention with a mask operation on the scores (docs/file-format.md, "mask"): GQA
    when HK < H (Q[b, h, g, q, d], K[b, h, k, d]; docs/plan.md "Attention kernels")."""
    fp8 = dtype.startswith("fp8")
    vt = v_dtype or dtype
    ot = "fp16" if fp8 else dtype
    group = HK < H
    axes = [("b", B), ("h", HK)] + ([("g", H // HK)] if group else []) + [("q", NQ), ("k", NKV), ("d", D)]
    lead = ["b", "h"] + (["g"] if group else [])
    tensors = [("Q", lead + ["q", "d"], dtype), ("K", ["b", "h", "k", "d"], dtype),
               ("V", ["b", "h", "k", "d"], vt), ("O", lead + ["q", "d"], ot)]
    qk_extra = {"dtype": vt} if fp8 else {}
    nodes = [node("q_in", "input", 40, 40, "Q", tensor="Q"),
             node("k_in", "input", 40, 180, "K", tensor="K"),
             node("v_in", "input", 545, 300, "V", tensor="V"),
             node("qk", "contract", 205, 100, "Q·Kᵀ", out=lead + ["q", "k"], **qk_extra),
             node("scale", "map", 375, 100, "·1/√d", fn="scale", alpha="1/sqrt(d)"),
             node("mask", "mask", 545, 100, mask.pop("label"), axis="k", rows="q", **mask),
             node("sm", "softmax", 715, 100, "softmax", axis="k"),
             node("pv", "contract", 885, 160, "P·V", out=lead + ["q", "d"], **({"dtype": ot} if fp8 else {})),
             node("o", "output", 1055, 160, "O", tensor="O")]
    wires = [("q_in", "qk", 0), ("k_in", "qk", 1), ("qk", "scale", 0), ("scale", "mask", 0),
             ("mask", "sm", 0), ("sm", "pv", 0), ("v_in", "pv", 1), ("pv", "o", 0)]
    marks = [("b", ("parallel", 1)), ("h", ("parallel", 1))]
    if group:
        # whole: the heads of a group share each K/V tile in one block
        marks.append(("g", ("parallel", group_tile) if group_tile else "whole"))
    marks += [("q", ("parallel", BQ) if BQ else "whole"), ("k", ("stream", BKV)), ("d", "whole")]
    return doc(title, description, axes, tensors, nodes, wires,
               [region("block", "smem", ["qk", "scale", "mask", "sm", "pv"], marks, stages=stages)])

def llama_causal_gqa():
    return masked_attention(
        "Causal GQA prefill (Llama-3-8B)",
        "Causal attention with grouped queries at Llama-3-8B's shape: 32 query heads share 8 key/value "
        "heads (the group axis g is in Q and O, not in K and V), d 128, one sequence of 4096 tokens. "
        "A block takes the 4 query heads of a key/value head × 32 queries (128 rows), so each K/V tile "
        "is loaded once per group, through 3 stages (with 2, the two consumer warpgroups hold both). The mask keeps key k for query q when k ≤ q: blocks compute only "
        "the key chunks their queries see and mask the diagonal ones in registers.",
        1, 32, 8, 4096, 4096, 128, {"label": "causal", "mask": "causal"}, 32, 128, 3, group_tile=0)

def llama_decode():
    return masked_attention(
        "Decoding against a 32k KV cache (GQA 32/8)",
        "One new token of Llama-3-8B attends to a KV cache of 32768 keys: q = 1, offset 32767 so the "
        "query sits at the end of the cache (the causal mask keeps every key). The 4 query heads of a "
        "key/value head share one block (g whole), and the plan splits the keys across blocks "
        "(flash-decoding), merging the partial results in a second kernel.",
        1, 32, 8, 1, 32768, 128, {"label": "causal", "mask": "causal", "offset": 32767}, 0, 128, 2,
        group_tile=4)

def sliding_window():
    return masked_attention(
        "Sliding-window attention (4096 back)",
        "Mistral-style sliding window: query q sees keys q − 4096 … q (window left 4096, right 0) in a "
        "sequence of 8192, 32 query heads on 8 key/value heads, d 128, a block holding the 4 heads of a "
        "group × 32 queries. Blocks skip the key chunks wholly outside their window.",
        1, 32, 8, 8192, 8192, 128, {"label": "window", "mask": "window", "left": 4096, "right": 0},
        32, 128, 3, group_tile=0)

def causal_d256():
    return masked_attention(
        "Causal attention, head dim 256",
        "Causal multi-head attention with d 256 (Gemma-style heads): 4 sequences of 4096, 16 heads. At "
        "this head dim a consumer's registers bound the key chunk: 128 queries by 64 keys, 2 stages.",
        4, 16, 16, 4096, 4096, 256, {"label": "causal", "mask": "causal"}, 128, 64, 2)

def causal_fp8():
    return masked_attention(
        "Causal fp8 attention (e4m3)",
        "Causal attention with Q, K and V in fp8 e4m3 on Hopper: both products on fp8 tensor cores "
        "(V transposed once so that P·V reads it K-major), the P tile converted to fp8 in registers, "
        "output fp16. 4 sequences of 4096, 16 heads, d 128; keys in chunks of 128.",
        4, 16, 16, 4096, 4096, 128, {"label": "causal", "mask": "causal"}, 128, 128, 2,
        dtype="fp8-e4m3", v_dtype="fp8-e4m3")

EXAMPLES = {
    "matmul.napkin": matmul(),
    "matmul-tiled.napkin": matmul(tiled=True),
    "matmul-nested.napkin": matmul(nested=True),
    "softmax.napkin": softmax(),
    "layernorm.napkin": layernorm(),
    "mlp.napkin": mlp(),
    "attention.napkin": attention(),
    "flash-attention.napkin": attention(flash=True),
    "hopper-attention-fp8.napkin": hopper_attention(),
    "attention-causal-gqa.napkin": llama_causal_gqa(),
    "attention-decode.napkin": llama_decode(),
    "attention-sliding-window.napkin": sliding_window(),
    "attention-causal-d256.napkin": causal_d256(),
    "attention-causal-fp8.napkin": causal_fp8(),
}

if __name__ == "__main__":
    os.makedirs(OUT, exist_ok=True)
    for name, d in EXAMPLES.items():
        with open(os.path.join(OUT, name), "w") as f:
            json.dump(d, f, indent=2, ensure_ascii=False)
            f.write("\n")
    print("wrote", len(EXAMPLES), "examples")
