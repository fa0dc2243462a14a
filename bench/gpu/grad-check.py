#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The backward diagrams on the GPU against torch.autograd (docs/training.md, "The GPU check").

Each case is a forward diagram: a bundled example resized (data/examples), einsum text
imported (`napkin-cli import`), or a model-zoo graph imported (tests/import/zoo). Its
backward diagram (`napkin-cli grad`) is relabeled as a user's would be, with no region drawn
(`tune --apply`), and run (`napkin-cli run`) on fixed inputs: the forward's inputs and the
output gradients d_O, drawn from a seed and handed to the runner as raw fp32
(NAPKIN_INPUT_DIR); the gradients d_X it computes come back through NAPKIN_DUMP_DIR. The
forward printed as PyTorch (`codegen --target pytorch`) gives torch.autograd.grad of the
same inputs and output gradients, in fp32 (a copy of the forward with every type fp32) and
in the diagram's own types; forward + backward is timed eager and under torch.compile in
the same call, after Napkin's runs.

    bench/gpu/grad-check.py --cli .gpu/bin/napkin-cli --model h200 --out OUT [--budget S]
    bench/gpu/grad-check.py --dry-run --cli _build-fast/src/cli/napkin-cli --out OUT
    bench/gpu/grad-check.py --table OUT

--dry-run does every CPU step (import, grad, tune --apply, plan, analyze, codegen, the
input files) and checks what it can without torch: the printed modules parse and take the
arguments expected, every input has its d_X and every output its d_O. The parent process
keeps to the standard library; torch runs in a worker process (--torch-worker), restarted
past a case that kills it. Results: OUT/grad-check.json (rewritten after every step), the
table on standard output and in OUT/table.md; bulky files (inputs, dumps) stay in --work.

Exit status 0 when every case ran and agreed with autograd within its bound (or, with
--dry-run, when every case was prepared), else 1."""

import argparse
import ast
import importlib.util
import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
HERE = os.path.dirname(os.path.abspath(__file__))

# The relative error bound of d_X against fp32 autograd, per diagram type (zoo-e2e's);
# a case also passes within twice the error torch itself makes in the diagram's types.
BOUND = {"fp32": 1e-4, "fp16": 1e-2, "bf16": 3e-2}

# ---- the cases ---------------------------------------------------------------------------

CAUSAL_ATTENTION = """\
b=2 h=8 n=1024 m=1024 d=64
dtype bf16
q[b,h,n,d] k[b,h,m,d] -> s[b,h,n,m] = einsum("bhnd,bhmd->bhnm")
s -> t = scale("1/sqrt(d)")
t -> u = causal(rows=n, axis=m, offset=0)
u -> p = softmax(m)
p v[b,h,m,d] -> o[b,h,n,d] = einsum("bhnm,bhmd->bhnd")
output o
"""

RMSNORM = """\
t=4096 e=2048
dtype bf16
x[t,e] -> y = rmsnorm(e, eps=1e-6)
y g[e] -> z = mul
output z
"""

GELU_MLP = """\
t=2048 e=1024 f=4096
dtype fp16
x[t,e] w1[e,f] -> a[t,f] = einsum("te,ef->tf")
a b1[f] -> ab = add
ab -> act = gelu
act w2[f,e] -> y[t,e] = einsum("tf,fe->te")
output y
"""

# name → (kind, source, axes, small axes): kind "example" (a data/examples file resized),
# "einsum" (text; the axes are its first line's), "zoo" (a tests/import/zoo graph imported
# at these axes). --small (trying the script on a CPU) takes the small axes, and the zoo's
# .small.json graphs (fp32).
CASES = [
    ("matmul", "example", "data/examples/matmul.napkin", {"m": 2048, "n": 2048, "k": 2048},
     {"m": 24, "n": 40, "k": 32}),
    ("softmax", "example", "data/examples/softmax.napkin", {"r": 4096, "c": 4096}, {"r": 16, "c": 48}),
    ("layernorm", "example", "data/examples/layernorm.napkin", {"t": 8192, "h": 2048}, {"t": 16, "h": 64}),
    ("mlp", "example", "data/examples/mlp.napkin", {"t": 2048, "e": 1024, "f": 4096}, {"t": 16, "e": 32, "f": 64}),
    ("attention", "example", "data/examples/attention.napkin", {"b": 2, "h": 8, "q": 1024, "k": 1024, "d": 64},
     {"b": 2, "h": 2, "q": 16, "k": 24, "d": 8}),
    ("causal-attention", "einsum", CAUSAL_ATTENTION, {}, {"b": 1, "h": 2, "n": 16, "m": 16, "d": 8}),
    ("rmsnorm", "einsum", RMSNORM, {}, {"t": 16, "e": 64}),
    ("gelu-mlp", "einsum", GELU_MLP, {}, {"t": 16, "e": 32, "f": 64}),
    ("zoo-gpt2-block", "zoo", "tests/import/zoo/hf_gpt2_block.graph.json", {"b": 2, "s": 512, "k": 512}, None),
    ("zoo-llama-attention", "zoo", "tests/import/zoo/hf_llama_attention.graph.json", {"b": 1, "s": 1024, "k": 1024},
     None),
    # session 17: result copies (a gradient stored [b, k, h, d]), tensor masks in the
    # element-wise kernel, grouped queries' g·s copied
    ("zoo-torch-mha", "zoo", "tests/import/zoo/torch_mha.graph.json", {"b": 2, "s": 512, "k": 512}, None),
    ("zoo-sdpa-bool-mask", "zoo", "tests/import/zoo/sdpa_bool_mask.graph.json", {"b": 2, "s": 512, "k": 512}, None),
    ("zoo-bart-attention", "zoo", "tests/import/zoo/bart_attention.graph.json", {"b": 2, "s": 512}, None),
    ("zoo-llama-sdpa-gqa", "zoo", "tests/import/zoo/llama_sdpa_gqa.graph.json", {"b": 1, "s": 1024, "k": 1024},
     None),
    # session 19: gradients laid apart from Q, K, V ([b, s, h, d]); score operands (a bias,
    # keep flags) in the fused backward; an fp32 softmax cast for P·V. A sixth entry names
    # inputs trained without a gradient (torch's requires_grad=False: masks, rotary tables).
    ("zoo-clip", "zoo", "tests/import/zoo/clip_encoder_layer.graph.json", {"b": 4, "s": 257, "k": 257}, None),
    ("zoo-qwen3", "zoo", "tests/import/zoo/qwen3_attention.graph.json", {"b": 1, "s": 1024, "k": 1024}, None),
    ("zoo-qwen2", "zoo", "tests/import/zoo/qwen2_attention.graph.json", {"b": 1, "s": 1024, "k": 1024}, None),
    ("zoo-whisper", "zoo", "tests/import/zoo/whisper_encoder_attention.graph.json", {"b": 2, "s": 1500, "k": 1500},
     None),
    ("zoo-llama-mask-frozen", "zoo", "tests/import/zoo/hf_llama_attention.graph.json", {"b": 1, "s": 1024, "k": 1024},
     None, ["attention_mask", "cos", "sin"]),
    # a bias's gradient summed by the fused backward (T5's trained position bias over the
    # batch, BERT's additive mask over heads and queries, Swin's over the windows)
    ("zoo-t5-bias", "zoo", "tests/import/zoo/t5_attention.graph.json", {"b": 2, "s": 512, "k": 512}, None),
    ("zoo-bert-mask", "zoo", "tests/import/zoo/bert_self_attention.graph.json", {"b": 4, "s": 512, "k": 512}, None),
    ("zoo-swin-bias", "zoo", "tests/import/zoo/swin_window_attention.graph.json", {"w": 256}, None),
    # a Llama-3-8B block's training step (RMSNorm, GQA attention with rotary, SwiGLU MLP)
    ("llama-block", "zoo", "tests/import/llama-block.graph.json", {"b": 1, "s": 2048, "k": 2048}, None,
     ["cos", "sin"]),
]



def attention_case(name, b, h, g, n, d, causal, dtype="fp16", m=None):
    """An attention as a user writes it in einsum text (h K/V heads, g query heads each:
    GQA where g > 1), with torch's fused attention (flash and cuDNN backends) timed beside
    it, forward + backward at the same shape: the baselines the attention backward is
    held to (docs/training.md)."""
    m = m or n
    text = ("b=%d h=%d g=%d n=%d m=%d d=%d\ndtype %s\n"
            'q[b,h,g,n,d] k[b,h,m,d] -> s[b,h,g,n,m] = einsum("bhgnd,bhmd->bhgnm")\n'
            's -> t = scale("1/sqrt(d)")\n' % (b, h, g, n, m, d, dtype))
    text += "t -> u = causal(rows=n, axis=m, offset=0)\nu -> p = softmax(m)\n" if causal else "t -> p = softmax(m)\n"
    text += 'p v[b,h,m,d] -> o[b,h,g,n,d] = einsum("bhgnm,bhmd->bhgnd")\noutput o\n'
    sdpa = {"b": b, "h": h, "g": g, "n": n, "m": m, "d": d, "causal": causal, "dtype": dtype}
    return (name, "einsum", text, {}, {"b": 1, "h": 2, "g": min(g, 2), "n": 16, "m": 16, "d": 8}, [], {"sdpa": sdpa})


# the attention backward's bar (N 1k–16k, d 64 and 128, causal and not, GQA), each case
# imported from einsum text with no region, grad, tune --apply, run
CASES += [
    attention_case("attn-1k-d64", 4, 16, 1, 1024, 64, False),
    attention_case("attn-4k-d128", 2, 16, 1, 4096, 128, False),
    attention_case("attn-4k-d128-causal", 2, 16, 1, 4096, 128, True),
    attention_case("attn-4k-d64-causal-gqa4", 2, 4, 4, 4096, 64, True, "bf16"),
    attention_case("attn-16k-d128-causal", 1, 8, 1, 16384, 128, True),
    attention_case("attn-8k-d64", 1, 16, 1, 8192, 64, False, "bf16"),
    attention_case("attn-2k-d128-gqa8-causal", 2, 1, 8, 2048, 128, True, "bf16"),
]

TORCH_DTYPES = {"fp32": "float32", "fp16": "float16", "bf16": "bfloat16", "int8": "int8"}


# ---- small helpers -----------------------------------------------------------------------

def log(*words):
    print(*words, flush=True)


def run_cli(cmd, timeout, env=None):
    """(rc, stdout, stderr, wall seconds); rc None when the backstop killed it."""
    t0 = time.monotonic()
    try:
        # its own process group: the backstop must stop napkin-runner (its child) too
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                             env=env)
    except OSError as e:
        return 127, "", "cannot start %s: %s" % (cmd[0], e), time.monotonic() - t0
    try:
        out, err = p.communicate(timeout=max(1, timeout))
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        out, err = p.communicate()
        rc = None
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - t0


def cli(args, argv, timeout=120, env=None):
    """napkin-cli ARGV: its standard output, or RuntimeError with its words."""
    rc, out, err, _ = run_cli([args.cli] + argv, timeout, env)
    if rc != 0:
        raise RuntimeError("napkin-cli %s: %s" % (" ".join(argv[:1]), ((err or out).strip() or "rc=%s" % rc)[-600:]))
    return out


def parse_json(text):
    start = text.find("{")
    if start < 0:
        return None
    try:
        return json.loads(text[start:])
    except ValueError:
        return None


def number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def get(obj, *keys):
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def save_json(path, obj):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(obj, f, indent=1)
    os.replace(tmp, path)


def load_json(path, default=None):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return default


# ---- diagrams (the file format's JSON) -----------------------------------------------------

def sizes_of(d):
    return {a["name"]: a["size"] for a in d["axes"]}


def tensor_of(d, name):
    return next(t for t in d["tensors"] if t["name"] == name)


def input_tensors(d):
    """The tensors some input operation reads, in the order of the tensors (the printed
    module's arguments and INPUTS, constants left out)."""
    read = {n.get("tensor") for n in d["nodes"] if n["kind"] == "input"}
    return [t for t in d["tensors"] if t["name"] in read]


def output_tensors(d):
    written = [n.get("tensor") for n in d["nodes"] if n["kind"] == "output"]
    return [tensor_of(d, name) for name in written]


def elements(d, t):
    s = sizes_of(d)
    return math.prod(s[a] for a in t["axes"])


def input_scale(d, tensor):
    """A Python form of napkin_input_scale (src/lower/napkin-interp.c): the second operand
    of a product that both inputs feed, else the input one, takes 1/√K, as a weight does
    against an O(1) activation, unless the product is normalised (a scale follows it, or an
    operand is a softmax)."""
    t = tensor_of(d, tensor)
    if t["dtype"] == "int8":
        return 1.0
    nodes = {n["id"]: n for n in d["nodes"]}
    src = {(w["to"], w.get("port", 0)): w["from"] for w in d["wires"]}
    consumers = {}
    for w in d["wires"]:
        consumers.setdefault(w["from"], []).append(w["to"])
    sizes = sizes_of(d)

    def skip(i):
        while i in nodes and (nodes[i]["kind"] == "rearrange" or (nodes[i]["kind"] == "map"
                                                                   and nodes[i].get("fn") == "cast")):
            i = src.get((i, 0))
        return i

    scale = 1.0
    for n in d["nodes"]:
        if n["kind"] != "contract":
            continue
        ops = [skip(src.get((n["id"], p))) for p in (0, 1)]
        is_input = [o in nodes and nodes[o]["kind"] == "input" for o in ops]
        scaled = 1 if is_input[1] else 0 if is_input[0] else -1
        if scaled < 0 or nodes[ops[scaled]].get("tensor") != tensor:
            continue
        if any(nodes[c]["kind"] == "map" and nodes[c].get("fn") == "scale" for c in consumers.get(n["id"], [])):
            continue
        if any(o in nodes and nodes[o]["kind"] == "softmax" for o in ops):
            continue
        k = math.prod(sizes[a] for a in t["axes"] if a not in n.get("out", []))
        scale = min(scale, 1.0 / math.sqrt(max(k, 1)))
    return scale


def all_fp32(d):
    """The same diagram with every floating-point type fp32 (the fp32 reference)."""
    d = json.loads(json.dumps(d))
    for t in d["tensors"]:
        if t.get("dtype") != "int8":
            t["dtype"] = "fp32"
    for n in d["nodes"]:
        if "dtype" in n and n["dtype"] != "int8":
            n["dtype"] = "fp32"
    return d


def one_output(d, keep):
    """The diagram with only the output operation that writes tensor `keep`."""
    d = json.loads(json.dumps(d))
    drop = {n["id"] for n in d["nodes"] if n["kind"] == "output" and n.get("tensor") != keep}
    names = {n.get("tensor") for n in d["nodes"] if n["id"] in drop}
    d["nodes"] = [n for n in d["nodes"] if n["id"] not in drop]
    d["wires"] = [w for w in d["wires"] if w["to"] not in drop]
    d["tensors"] = [t for t in d["tensors"] if t["name"] not in names]
    return d


# ---- inputs --------------------------------------------------------------------------------

def write_values(path, n, scale, rng, ones=False):
    """n raw little-endian fp32 values: a random sign and mantissa under one exponent, so
    that |v| lies in [s/4, s) for the scale s (the standard library makes 10⁸ a second of
    these with bytes.translate; a value a draw would be 100× slower). `ones`: all 1 (a
    boolean mask that keeps everything)."""
    if ones:
        with open(path, "wb") as f:
            f.write(b"\x00\x00\x80\x3f" * n)
        return
    e = max(-126, min(126, math.floor(math.log2(scale)) - 1)) + 127
    raw = bytearray(rng.randbytes(4 * n) if hasattr(rng, "randbytes")       # Python ≥ 3.9
                    else rng.getrandbits(32 * n).to_bytes(4 * n, "little") if n else b"")
    hi = bytes((b & 0x80) | (e >> 1) for b in range(256))
    mid = bytes(((e & 1) << 7) | (b & 0x7F) for b in range(256))
    raw[3::4] = raw[3::4].translate(hi)
    raw[2::4] = raw[2::4].translate(mid)
    with open(path, "wb") as f:
        f.write(raw)


# ---- preparing a case (CPU) ------------------------------------------------------------------

def printed_args(path):
    """The printed module's INPUTS keys, in order (its forward's arguments), read with ast."""
    tree = ast.parse(open(path).read(), path)
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "INPUTS" for t in node.targets):
            return [k.value for k in node.value.keys]
    raise RuntimeError("%s: no INPUTS" % path)


def prepare(case, args, seed):
    name, kind, source, axes, small = case[:5]
    frozen = case[5] if len(case) > 5 else []
    extra = case[6] if len(case) > 6 else {}
    if args.small:
        axes = small or {}
        if kind == "einsum":
            source = " ".join("%s=%d" % kv for kv in axes.items()) + "\n" + source.split("\n", 1)[1]
        elif kind == "zoo":
            source = source.replace(".graph.json", ".small.json")
    work = os.path.join(args.work, name)
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(os.path.join(work, "inputs"))
    fwd, bwd = os.path.join(work, "fwd.napkin"), os.path.join(work, "bwd.napkin")
    rec = {"name": name, "kind": kind, "source": source if kind != "einsum" else "einsum text", "work": work}
    if extra.get("sdpa") and not args.small:
        rec["sdpa"] = extra["sdpa"]
    t0 = time.monotonic()

    # the forward
    if kind == "example":
        d = load_json(os.path.join(ROOT, source))
        for a in d["axes"]:
            if a["name"] in axes:
                a["size"] = axes[a["name"]]
        d["regions"] = []
        d.pop("gpus", None)
        d.pop("runs", None)
        with open(fwd, "w") as f:
            json.dump(d, f, indent=1)
        cli(args, ["validate", "-q", fwd])
    elif kind == "einsum":
        text = os.path.join(work, "fwd.einsum")
        with open(text, "w") as f:
            f.write(source)
        cli(args, ["import", text, "-o", fwd])
    else:
        argv = ["import", os.path.join(ROOT, source), "-o", fwd]
        for a, v in axes.items():
            argv += ["--axis", "%s=%d" % (a, v)]
        cli(args, argv)
    d = load_json(fwd)
    rec["axes"] = sizes_of(d)
    outs = output_tensors(d)
    ins = input_tensors(d)
    rec["dtype"] = outs[0]["dtype"] if outs else "fp32"
    rec["forward_outputs"] = [t["name"] for t in outs]
    rec["forward_inputs"] = [{"name": t["name"], "axes": t["axes"], "dtype": t["dtype"],
                              "constant": "constant" in t} for t in ins]
    wrt = [t["name"] for t in ins if t["dtype"] != "int8" and "constant" not in t and t["name"] not in frozen]
    rec["wrt"] = wrt

    # the backward, relabeled as the user's path does
    # every float input but constants (rotate_half); RECOMPUTE=softmax|auto recomputes
    # the softmaxes as FlashAttention does (the fused attention backward)
    recompute = os.environ.get("RECOMPUTE")
    cli(args, ["grad", fwd, "-o", bwd] + (["--recompute", recompute, "--arch", args.model] if recompute else [])
        + (["--wrt", ",".join(wrt)] if frozen else []))
    tune = cli(args, ["tune", bwd, "--arch", args.model, "--apply"], timeout=300)
    rec["derivation"] = tune.strip().splitlines()[-1][:300] if tune.strip() else ""
    b = load_json(bwd)
    plan = parse_json(cli(args, ["plan", bwd, "--arch", args.model, "--json"]))
    kernels = (plan or {}).get("kernels", [])
    rec["kernels"] = len(kernels)
    rec["generic"] = [k.get("name") for k in kernels if k.get("path") == "generic"]
    rec["paths"] = sorted({"%s-%s" % (k.get("kind"), k.get("path")) for k in kernels})
    an = parse_json(cli(args, ["analyze", bwd, "--arch", args.model, "--json"]))
    rec["predicted_ms"] = number((number(get(an, "predicted_time_s")) or 0) * 1e3) or None
    rec["predicted_bound"] = get(an, "bound")
    fa = parse_json(cli(args, ["analyze", fwd, "--arch", args.model, "--json"]))
    rec["forward_predicted_ms"] = number((number(get(fa, "predicted_time_s")) or 0) * 1e3) or None

    # what the backward must hold: d_X for each input asked for, d_O for each output
    b_out = {t["name"] for t in output_tensors(b)}
    b_in = {t["name"] for t in input_tensors(b)}
    missing = ["d_" + x for x in wrt if "d_" + x not in b_out]
    missing += ["d_" + o["name"] for o in outs if o["axes"] and "d_" + o["name"] not in b_in]
    if missing:
        raise RuntimeError("the backward lacks %s" % ", ".join(missing))
    rec["gradients"] = ["d_" + x for x in wrt]
    rec["seeds"] = ["d_" + o["name"] for o in outs if o["axes"]]

    # the forward as PyTorch: in its own types and all in fp32, one module per output
    modules = []
    for o in outs:
        one = d if len(outs) == 1 else one_output(d, o["name"])
        pair = {}
        for tag, diagram in (("own", one), ("fp32", all_fp32(one))):
            path = os.path.join(work, "fwd-%s-%s.napkin" % (o["name"], tag))
            with open(path, "w") as f:
                json.dump(diagram, f, indent=1)
            py = os.path.join(work, "torch_%s_%s.py" % (name.replace("-", "_"), tag))
            py = py if len(outs) == 1 else py.replace(".py", "_%d.py" % len(modules))
            cli(args, ["codegen", "--target", "pytorch", path, "-o", py])
            got = printed_args(py)
            want = [t["name"] for t in input_tensors(diagram) if "constant" not in t]
            if len(got) != len(want):
                raise RuntimeError("%s takes %s; the diagram's inputs are %s" % (py, got, want))
            pair[tag] = py
        modules.append({"output": o["name"], "own": pair["own"], "fp32": pair["fp32"],
                        "args": [t["name"] for t in input_tensors(one) if "constant" not in t]})
    rec["modules"] = modules

    # the inputs: the forward's (scaled as the runner scales its own) and the d_O
    rng = random.Random("%s/%d" % (name, seed))
    inputs = os.path.join(work, "inputs")
    written = 0
    for t in input_tensors(b):
        if "constant" in t:
            continue
        n = elements(b, t)
        scale = input_scale(d, t["name"]) if t["name"] in rec["wrt"] or t["dtype"] == "int8" else 1.0
        write_values(os.path.join(inputs, t["name"] + ".f32"), n, scale, rng, ones=t["dtype"] == "int8")
        written += n
    rec["inputs"] = inputs
    rec["input_elements"] = written
    rec["dump"] = os.path.join(work, "dump")
    rec["prepare_s"] = round(time.monotonic() - t0, 2)
    rec["status"] = "prepared"
    return rec


# ---- Napkin on the GPU ---------------------------------------------------------------------

def run_napkin(rec, args, limit):
    shutil.rmtree(rec["dump"], ignore_errors=True)
    env = dict(os.environ, NAPKIN_INPUT_DIR=rec["inputs"], NAPKIN_DUMP_DIR=rec["dump"])
    cmd = [args.cli, "run", os.path.join(rec["work"], "bwd.napkin"), "--json", "--model", args.model,
           "--repeats", str(args.repeats), "--reference-repeats", "0", "--no-energy", "--timeout", str(int(limit))]
    rc, out, err, wall = run_cli(cmd, limit + 30, env)
    r = parse_json(out)
    if r is not None and "of device memory" in str(r.get("message", "")):
        # the runner's own fp32 reference does not fit (16k queries): torch's is the check
        rc, out, err, wall = run_cli(cmd + ["--no-reference"], limit + 30, env)
        r = parse_json(out)
    res = {"rc": rc, "wall_s": round(wall, 1), "stderr_tail": err[-800:]}
    if r is None:
        res.update(status="no-json", message=("napkin-cli run rc=%s: %s" % (rc, (err or out).strip()[-400:])))
        return res
    res["status"] = r.get("status") if isinstance(r.get("status"), str) else "garbage"
    if r.get("message"):
        res["message"] = str(r["message"])[:500]
    res["time_ms"] = number(get(r, "time_ms", "median"))
    res["runner_max_rel"] = number(get(r, "error", "max_rel"))
    res["runner_bound"] = number(get(r, "error", "bound"))
    res["run_predicted_ms"] = number(get(r, "prediction", "time_ms"))
    res["nvrtc_ms"] = number(get(r, "compile", "ms"))
    res["gpu"] = get(r, "gpu", "name")
    res["phases"] = r.get("phases")
    res["module_kernels"] = len(r.get("kernels") or [])
    res["per_kernel"] = [[k.get("name"), k.get("kind"), number(k.get("predicted_ms")), number(k.get("measured_ms"))]
                         for k in get(r, "prediction", "kernels") or [] if isinstance(k, dict)]
    res["dumped"] = os.path.exists(os.path.join(rec["dump"], "manifest.json"))
    return res


# ---- torch (the worker process) --------------------------------------------------------------

def load_module(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    # registered and importable by name: torch.compile's tracer imports the module of the
    # code it compiles again (it failed with "No module named …" without this)
    sys.modules[name] = mod
    if os.path.dirname(os.path.abspath(path)) not in sys.path:
        sys.path.insert(0, os.path.dirname(os.path.abspath(path)))
    spec.loader.exec_module(mod)
    return mod


def median_ms(step, repeats, dev):
    """step() timed: three warm-up runs, then the median of `repeats` in ms (CUDA events on
    the GPU, the wall clock elsewhere)."""
    import torch

    for _ in range(3):
        step()
    if dev == "cuda":
        torch.cuda.synchronize()
    ts = []
    for _ in range(repeats):
        if dev == "cuda":
            a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            z.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(z))
        else:
            t0 = time.perf_counter()
            step()
            ts.append((time.perf_counter() - t0) * 1e3)
    return sorted(ts)[len(ts) // 2]


def torch_case(rec, repeats, compile_only, deadline, dev):
    import torch

    tdt = lambda s: getattr(torch, TORCH_DTYPES[s])
    sizes = rec["axes"]
    dump = rec["dump"]
    manifest = {m["name"]: m for m in load_json(os.path.join(dump, "manifest.json"), [])}

    def value(name, axes, dtype):
        """A tensor as the kernel saw it: the runner's dump in its type, else our file rounded."""
        shape = [sizes[a] for a in axes]
        m = manifest.get(name)
        path = os.path.join(dump, name + ".bin")
        if m is not None and os.path.exists(path):
            raw = bytearray(open(path, "rb").read())
            return torch.frombuffer(raw, dtype=tdt(m["dtype"])).reshape(shape).to(dev).to(tdt(dtype))
        raw = bytearray(open(os.path.join(rec["inputs"], name + ".f32"), "rb").read())
        return torch.frombuffer(raw, dtype=torch.float32).reshape(shape).to(dev).to(tdt(dtype))

    info = {t["name"]: t for t in rec["forward_inputs"]}
    base = {n: value(n, t["axes"], t["dtype"]) for n, t in info.items() if not t["constant"]}
    fwd_d = load_json(os.path.join(rec["work"], "fwd.napkin"))
    out_t = {t["name"]: t for t in output_tensors(fwd_d)}
    seeds = {o: value("d_" + o, out_t[o]["axes"], out_t[o]["dtype"]) for o in rec["forward_outputs"]
             if out_t[o]["axes"]}
    res = {}

    def setup(tag):
        """(function of the leaves → outputs, leaves, the leaves asked for, grad_outputs)."""
        fp32 = tag == "fp32"
        leaves = {}
        for n, v in base.items():
            v = v.float() if fp32 and v.is_floating_point() else v
            v = v.clone().detach()
            if n in rec["wrt"]:
                v.requires_grad_(True)
            leaves[n] = v
        mods = [load_module(m[tag], "grad_check_%s_%s_%d" % (rec["name"].replace("-", "_"), tag, i))
                for i, m in enumerate(rec["modules"])]

        def forward(*vals):
            byname = dict(zip(list(leaves), vals))
            outs = []
            for m, spec in zip(mods, rec["modules"]):
                o = m.forward(*[byname[a] for a in spec["args"]])
                outs.append(o[0] if isinstance(o, (tuple, list)) else o)
            return outs

        grads_out = []
        for spec in rec["modules"]:
            o = spec["output"]
            if o in seeds:
                grads_out.append(seeds[o].float() if fp32 else seeds[o])
            else:
                grads_out.append(None)   # a loss: its gradient is 1
        return forward, leaves, grads_out

    def gradients(forward, leaves, grads_out):
        outs = forward(*leaves.values())
        wrt = [leaves[n] for n in rec["wrt"]]
        gs = torch.autograd.grad(outs, wrt, grad_outputs=[g if g is not None else torch.ones_like(o)
                                                          for g, o in zip(grads_out, outs)], allow_unused=True)
        return {n: (g if g is not None else torch.zeros_like(leaves[n])) for n, g in zip(rec["wrt"], gs)}

    def rel(a, b, floor):
        """max |a − b| / max |b| over the elements, as float64 (NaN or ∞: ∞); max |b| at
        least `floor`, so that a gradient zero in exact arithmetic (GPT-2's key bias: its
        terms cancel in the softmax) is measured against the others, not its own rounding."""
        a, b = a.double(), b.double()
        den = max(b.abs().max().item(), floor)
        err = (a - b).abs().max().item()
        if not math.isfinite(err):
            return float("inf")
        return err / den if den > 0 else err

    def bench(forward, leaves, grads_out):
        args = list(leaves.values())
        wrt = [leaves[n] for n in rec["wrt"]]

        def step():
            outs = forward(*args)
            torch.autograd.grad(outs, wrt, grad_outputs=[g if g is not None else torch.ones_like(o)
                                                         for g, o in zip(grads_out, outs)], allow_unused=True)
        return median_ms(step, repeats, dev)

    own = setup("own")
    if compile_only:
        if time.time() > deadline - 45:
            return {"compile_status": "skipped: time budget"}
        t0 = time.time()
        torch._dynamo.reset()
        compiled = torch.compile(own[0])
        res["compile_ms"] = bench(compiled, own[1], own[2])
        res["compile_s"] = round(time.time() - t0, 1)
        res["compile_status"] = "ok"
        del compiled
        torch._dynamo.reset()
        return res

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    ref = gradients(*setup("fp32"))
    mine = gradients(*own)
    floor = 1e-3 * max([ref[n].abs().max().item() for n in rec["wrt"]] or [0])
    res["torch_dtype_err"] = max([rel(mine[n], ref[n], floor) for n in rec["wrt"]] or [0])
    per = {}
    napkin = {}
    for n in rec["wrt"]:
        m = manifest.get("d_" + n)
        path = os.path.join(dump, "d_" + n + ".bin")
        if m is None or not os.path.exists(path):
            continue
        raw = bytearray(open(path, "rb").read())
        got = torch.frombuffer(raw, dtype=tdt(m["dtype"])).reshape(ref[n].shape).to(dev)
        napkin[n] = got
        per["d_" + n] = rel(got, ref[n], floor)
    if rec["wrt"] and len(napkin) == len(rec["wrt"]):
        res["max_rel"] = max(per.values())
    elif rec["wrt"]:
        res["napkin_missing"] = ["d_" + n for n in rec["wrt"] if n not in napkin]
    res["per_gradient"] = per
    res["vs_torch_dtype"] = max([rel(napkin[n], mine[n], floor) for n in napkin] or [0]) if napkin else None
    del ref, mine, napkin
    res["eager_ms"] = bench(*own)
    res["torch_status"] = "ok"
    if rec.get("sdpa") and dev == "cuda":
        res.update(sdpa_times(rec["sdpa"], repeats))
    if dev == "cuda":
        torch.cuda.empty_cache()
    return res


def sdpa_times(sp, repeats):
    """torch's fused attention forward + backward (flash, cuDNN) at the case's shape, in
    ms (median); K and V expanded to the query heads outside the timing where g > 1 (the
    backends' own GQA support varies), so the baselines do the work of all heads."""
    import torch
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel

    dt = getattr(torch, TORCH_DTYPES[sp["dtype"]])
    H = sp["h"] * sp["g"]
    out = {}
    for key, be in (("flash_ms", "FLASH_ATTENTION"), ("cudnn_ms", "CUDNN_ATTENTION")):
        try:
            q = torch.randn(sp["b"], H, sp["n"], sp["d"], device="cuda", dtype=dt, requires_grad=True)
            k = torch.randn(sp["b"], H, sp["m"], sp["d"], device="cuda", dtype=dt, requires_grad=True)
            v = torch.randn(sp["b"], H, sp["m"], sp["d"], device="cuda", dtype=dt, requires_grad=True)
            do = torch.randn(sp["b"], H, sp["n"], sp["d"], device="cuda", dtype=dt)

            def step():
                o = F.scaled_dot_product_attention(q, k, v, is_causal=sp["causal"])
                torch.autograd.grad(o, (q, k, v), do)
            with sdpa_kernel([getattr(SDPBackend, be)]):
                out[key] = median_ms(step, repeats, "cuda")
            del q, k, v, do
        except Exception as e:
            out[key.replace("_ms", "_status")] = repr(e)[:200]
    torch.cuda.empty_cache()
    return out


def torch_worker(args):
    """Runs the torch part of each case of the manifest, writing its results after each."""
    import torch

    state = load_json(args.state)
    results = load_json(args.results, {}) or {}
    log("torch %s on %s" % (torch.__version__, torch.cuda.get_device_name() if args.device == "cuda" else args.device))
    for rec in state["cases"]:
        name = rec["name"]
        key = name + (":compile" if args.compile else "")
        if key in results or rec.get("status") != "ran" or name in (args.skip or "").split(","):
            continue
        results["_started"] = key
        save_json(args.results, results)
        t0 = time.time()
        try:
            if time.time() > args.deadline - (45 if args.compile else 15):
                res = {("compile_status" if args.compile else "torch_status"): "skipped: time budget"}
            else:
                torch.manual_seed(0)
                res = torch_case(rec, args.repeats, args.compile, args.deadline, args.device)
        except Exception as e:  # one case must not stop the others
            traceback.print_exc()
            res = {("compile_status" if args.compile else "torch_status"): "error: %s" % repr(e)[:300]}
        res["torch_s"] = round(time.time() - t0, 1)
        results[key] = res
        results.pop("_started", None)
        save_json(args.results, results)
        log("  torch %-24s %s" % (key, json.dumps({k: v for k, v in res.items() if k != "per_gradient"})[:300]))
        try:
            if args.device == "cuda":
                torch.cuda.empty_cache()
        except Exception:
            pass
    return 0


def torch_phase(args, state_path, results_path, compile_, deadline):
    """Runs the worker until every case has a result, restarting it past a case that
    killed it."""
    skip = []
    for _ in range(12):
        left = deadline - time.time()
        if left < 10:
            break
        cmd = [sys.executable, os.path.abspath(__file__), "--torch-worker", "--state", state_path,
               "--results", results_path, "--deadline", str(deadline), "--repeats", str(args.repeats),
               "--skip", ",".join(skip), "--device", args.device] + (["--compile"] if compile_ else [])
        try:
            p = subprocess.Popen(cmd, start_new_session=True)
            rc = p.wait(timeout=max(5, left))
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            rc = "killed at the deadline"
        results = load_json(results_path, {}) or {}
        started = results.pop("_started", None)
        if rc == 0:
            return
        log("torch worker exited (%s)%s" % (rc, " in " + started if started else ""))
        if started is None:
            return
        results[started] = {("compile_status" if compile_ else "torch_status"):
                            "stopped: the worker exited (%s) in this case" % rc}
        save_json(results_path, results)
        skip.append(started.split(":")[0])


# ---- the table -----------------------------------------------------------------------------

def verdict(c):
    bound = BOUND.get(c.get("dtype"), 3e-2)
    tde = number(c.get("torch_dtype_err"))
    limit = max(bound, 2 * tde) if tde is not None else bound
    err = number(c.get("max_rel"))
    return err is not None and err <= limit, limit


def generic_cell(c):
    if "generic" not in c:
        return "—"
    g = c["generic"]
    if not g:
        return "none"
    return "%d: %s%s" % (len(g), ", ".join(g[:4]), ", …" if len(g) > 4 else "")


def table(state, out=None):
    f = lambda v, fmt: fmt % v if number(v) is not None else "—"
    lines = ["| case | dtype | kernels | generic | max rel. err. vs fp32 autograd (bound) | torch in dtype vs fp32 "
             "| Napkin ms | eager fwd+bwd ms | torch.compile fwd+bwd ms | SDPA fwd+bwd ms (flash / cuDNN) "
             "| best library / Napkin | predicted ms | meas/pred | status |",
             "|---|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    ok = 0
    for c in state["cases"]:
        good, limit = verdict(c)
        ok += good
        ms, pred = number(c.get("time_ms")), number(c.get("predicted_ms"))
        status = c.get("status", "?")
        if status == "ran":
            status = "ok" if good else ("DIFFERENT" if number(c.get("max_rel")) is not None
                                        else c.get("torch_status") or "no comparison")
            if c.get("run_status") not in (None, "ok"):
                status += " (runner: %s)" % c.get("run_status")
        elif c.get("message"):
            status += ": " + c["message"][:80]
        libs = [number(c.get(x)) for x in ("flash_ms", "cudnn_ms") if number(c.get(x)) is not None]
        lines.append("| %s | %s | %s | %s | %s (%s) | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            c["name"], c.get("dtype", "—"), c.get("kernels", "—"),
            generic_cell(c),
            f(c.get("max_rel"), "%.1e"), f(limit, "%.0e"), f(c.get("torch_dtype_err"), "%.1e"), f(ms, "%.3f"),
            f(c.get("eager_ms"), "%.3f"), f(c.get("compile_ms"), "%.3f"),
            "%s / %s" % (f(c.get("flash_ms"), "%.3f"), f(c.get("cudnn_ms"), "%.3f")) if "sdpa" in c else "—",
            f(min(libs) / ms if libs and ms else None, "%.2f"), f(pred, "%.3f"),
            f(ms / pred if ms and pred else None, "%.2f"), status))
    text = "\n".join(lines)
    if state.get("dry_run"):
        text += "\n\ndry run: %d cases, nothing run or compared (no GPU, no torch)" % len(state["cases"])
    else:
        text += "\n\n%s; %d cases, %d within their bound against autograd" % (state.get("gpu") or "GPU ?",
                                                                             len(state["cases"]), ok)
    if out:
        with open(os.path.join(out, "table.md"), "w") as fh:
            fh.write(text + "\n")
    return text


# ---- the whole call ------------------------------------------------------------------------

def main_run(args):
    start = time.time()
    deadline = start + args.budget
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(args.work, exist_ok=True)
    state_path = os.path.join(args.out, "grad-check.json")
    state = {"model": args.model, "budget_s": args.budget, "seed": args.seed, "dry_run": args.dry_run,
             "cli": args.cli, "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "cases": []}
    chosen = [c for c in CASES if not args.cases or c[0] in args.cases.split(",")]
    log("grad-check: %d cases, model %s, budget %d s%s" % (len(chosen), args.model, args.budget,
                                                            " (dry run: CPU steps only)" if args.dry_run else ""))

    # 1. every CPU step first
    for case in chosen:
        t0 = time.monotonic()
        try:
            rec = prepare(case, args, args.seed)
        except Exception as e:
            rec = {"name": case[0], "kind": case[1], "status": "prepare-failed", "message": str(e)[:600]}
            if args.verbose:
                traceback.print_exc()
        state["cases"].append(rec)
        save_json(state_path, state)
        log("[prep] %-22s %-15s %5.1f s  kernels %s, generic %s, predicted %s ms%s" % (
            rec["name"], rec["status"], time.monotonic() - t0, rec.get("kernels"), len(rec.get("generic") or []),
            "%.3f" % rec["predicted_ms"] if number(rec.get("predicted_ms")) else "—",
            ("  " + rec["message"][:200]) if rec.get("message") else ""))
    if args.dry_run:
        log("")
        log(table(state, args.out))
        bad = [c["name"] for c in state["cases"] if c["status"] != "prepared"]
        log("dry run: %s" % ("every case prepared" if not bad else "FAILED: " + ", ".join(bad)))
        return 1 if bad else 0

    # 2. Napkin's runs, leaving time for torch's check of what ran
    reserve = 40 + 4 * len(chosen)
    for rec in state["cases"]:
        if rec["status"] != "prepared":
            continue
        left = deadline - reserve - time.time()
        if left < 20:
            rec.update(status="skipped", message="time budget (before napkin-cli run)")
            save_json(state_path, state)
            continue
        try:
            res = run_napkin(rec, args, min(args.case_timeout, left))
        except Exception as e:
            res = {"status": "bench-error", "message": repr(e)[:300]}
        rec["run_status"] = res.pop("status")
        rec.update(res)
        state["gpu"] = state.get("gpu") or res.get("gpu")
        rec["status"] = "ran" if rec.get("dumped") else "run-failed"
        save_json(state_path, state)
        log("[napkin] %-22s %-8s %s ms (predicted %s), runner's check %s, %s s%s" % (
            rec["name"], rec["run_status"], "%.3f" % rec["time_ms"] if rec.get("time_ms") else "—",
            "%.3f" % rec["predicted_ms"] if rec.get("predicted_ms") else "—",
            "%.1e" % rec["runner_max_rel"] if rec.get("runner_max_rel") is not None else "—", rec.get("wall_s"),
            ("  " + rec["message"][:200]) if rec.get("message") else ""))

    # 3. torch: the autograd reference and eager times; 4. torch.compile while time is left
    results_path = os.path.join(args.work, "torch-results.json")
    if os.path.exists(results_path):
        os.remove(results_path)
    if any(c["status"] == "ran" for c in state["cases"]):
        torch_phase(args, state_path, results_path, False, deadline - 15)
        if not args.no_compile:
            torch_phase(args, state_path, results_path, True, deadline - 15)
    results = load_json(results_path, {}) or {}
    for rec in state["cases"]:
        rec.update(results.get(rec["name"], {}))
        rec.update(results.get(rec["name"] + ":compile", {}))
    state["wall_s"] = round(time.time() - start, 1)
    save_json(state_path, state)
    log("")
    log(table(state, args.out))
    log("grad-check: %.0f s" % (time.time() - start))
    return 0 if all(verdict(c)[0] for c in state["cases"]) else 1


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0], allow_abbrev=False)
    p.add_argument("--cli", default=os.path.join(ROOT, ".gpu", "bin", "napkin-cli"))
    p.add_argument("--model", default="h200", help="the architecture profile tune, plan and analyze use")
    p.add_argument("--out", default="/tmp/grad-check")
    p.add_argument("--work", default=None, help="inputs, dumps and diagrams (default: a folder beside OUT)")
    p.add_argument("--budget", type=float, default=320, help="seconds for the whole call")
    p.add_argument("--case-timeout", type=float, default=120)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--cases", default="", help="comma-separated names (default: all)")
    p.add_argument("--no-compile", action="store_true", help="no torch.compile timings")
    p.add_argument("--dry-run", action="store_true", help="the CPU steps only: no torch, no GPU")
    p.add_argument("--verbose", action="store_true")
    p.add_argument("--small", action="store_true",
                   help="every case at small axes, the zoo's .small.json graphs (trying the script on a CPU)")
    p.add_argument("--device", default="cuda", help="torch's device (cpu: trying the script without a GPU)")
    p.add_argument("--table", metavar="OUT", help="print the table of OUT/grad-check.json")
    # the worker's
    p.add_argument("--torch-worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--state", help=argparse.SUPPRESS)
    p.add_argument("--results", help=argparse.SUPPRESS)
    p.add_argument("--deadline", type=float, default=0, help=argparse.SUPPRESS)
    p.add_argument("--compile", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--skip", default="", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.torch_worker:
        return torch_worker(args)
    if args.table:
        state = load_json(os.path.join(args.table, "grad-check.json"))
        if state is None:
            print("no %s/grad-check.json" % args.table)
            return 1
        print(table(state))
        return 0
    args.cli = os.path.abspath(args.cli)
    args.out = os.path.abspath(args.out)
    args.work = os.path.abspath(args.work or args.out.rstrip("/") + "-work")
    if not os.access(args.cli, os.X_OK):
        print("grad-check: no napkin-cli at %s" % args.cli)
        return 1
    os.chdir(ROOT)
    return main_run(args)


if __name__ == "__main__":
    sys.exit(main())
