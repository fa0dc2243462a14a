#!/usr/bin/env python3
"""The user's path on the GPU (docs/perf-notes.md, "The user's path"): problems drawn at random
(attention with masks, GQA/MQA, cross lengths, decoding, head dims 32 to 256, fp16/bf16/fp8;
products with random sizes, layouts, batches, epilogues and result types; MLP chains; rows over
either axis), each WRITTEN AS EINSUM TEXT, imported with no regions (`napkin-cli import`),
relabeled by `napkin-cli tune --apply` (the derivation), run (`napkin-cli run`: compiled,
checked against the fp32 reference, timed, predicted) — and the same problem drawn as the
examples draw it (bench/gpu/sweep-cases.py's builders, regions by hand) run beside it. The
torch baselines of the same call come from bench/gpu/sweep-baselines.py on the manifest.

  user-path.py --write DIR [--cases N] [--seed S] [--part I/N]   DIR/NAME.einsum,
          DIR/NAME.example.napkin and DIR/cases.json (sweep manifest entries + einsum, example)
  user-path.py --run --manifest DIR/cases.json --cli PATH --model ID --out OUT [...]
  user-path.py --retime-baselines --manifest DIR/cases.json --cli PATH --model ID --out OUT
          after the baselines: the cases slower than theirs, both sides timed again alternately
  user-path.py --table OUT [OUT...] [--manifest DIR/cases.json] [--model ID]
          the table of one or more calls, with each case's fraction of the speed of light
          (bench/gpu/sol.py; work from the run, or from the draw's manifest)

Standard library only (here and on the GPU machine)."""
import argparse, importlib.util, json, math, os, random, re, shutil, statistics, subprocess, sys, time

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sc = load("sweep_cases", "sweep-cases.py")    # the hand-drawn builders, manifest entries
sr = load("sweep_run", "sweep-run.py")        # running napkin-cli, reading its result
sol = load("sol", "sol.py")                   # the speed of light


def sol_work(case):
    """The work the speed of light counts for a manifest entry: its tensor FLOPs by operand
    type (attention with fp8 Q·Kᵀ and a 16-bit V: half of them at each rate; the pairs a
    mask keeps) and the bytes of its inputs and outputs once through device memory — for
    attention, only the keys some query sees (a window at the end of a decoding cache
    reads that window)."""
    f, dt = case.get("flops") or 0, case.get("dtype")
    a = case.get("attention") or {}
    v = a.get("v_dtype", dt)
    tensor = {dt: f} if v == dt else {dt: f / 2, v: f / 2}
    nbytes = case.get("bytes") or 0
    if a:
        d = case["dims"]
        eb = sc.DTYPE_BYTES.get
        nq, nk, hd = d["q"], d["k"], d["d"]
        lo, hi = 0, nk
        if a.get("mask") in ("causal", "window"):
            off, right = a.get("offset", 0), a.get("right", 0)
            hi = min(nk, nq - 1 + off + (right if right >= 0 else nk) + 1)
            if a.get("mask") == "window" and a.get("left", -1) >= 0:
                lo = max(0, off - a["left"])
        keys = max(0, hi - lo)
        qo = d["b"] * a["heads"] * nq * hd * (eb(dt) + eb(a.get("o_dtype", dt)))
        kv = d["b"] * a["kv_heads"] * keys * hd * (eb(dt) + eb(v))
        nbytes = qo + kv
    return {"tensor_flops": tensor, "bytes": nbytes}

FUNCTIONS = {"einsum", "softmax", "rmsnorm", "layernorm", "sum", "max", "mean", "add", "sub", "mul", "div", "min",
             "exp", "neg", "relu", "gelu", "silu", "sigmoid", "tanh", "square", "sqrt", "rsqrt", "scale", "cast",
             "causal", "window", "mask", "rearrange", "dtype", "output", "erf", "step", "log", "shift", "gelu_tanh"}


# ---- einsum text from a diagram ---------------------------------------------------------

def value_name(node_id):
    """A value's name in the text: the node's id, unless it is a word of the language."""
    return node_id + "_v" if node_id in FUNCTIONS else node_id


def topo(d):
    ins = {n["id"]: [] for n in d["nodes"]}
    for w in sorted(d["wires"], key=lambda w: w["port"]):
        ins[w["to"]].append(w["from"])
    done, order = set(), []

    def visit(i):
        if i in done:
            return
        for s in ins[i]:
            visit(s)
        done.add(i)
        order.append(i)
    for n in d["nodes"]:
        visit(n["id"])
    return order, ins


def einsum_text(d):
    """The diagram as a user writes it in einsum text (docs/import.md): no regions; a result
    type the diagram sets on an operation is a cast after it."""
    nodes = {n["id"]: n for n in d["nodes"]}
    tensors = {t["name"]: t for t in d["tensors"]}
    order, ins = topo(d)
    lines = [" ".join("%s=%d" % (a["name"], a["size"]) for a in d["axes"])]
    dtype = None
    declared = set()
    axes_of = {}                      # value → its axes, in order

    def operand(i):
        nonlocal dtype
        n = nodes[i]
        if n["kind"] != "input":
            return value_name(i)
        t = tensors[n["tensor"]]
        axes_of[i] = t["axes"]
        if i in declared:
            return t["name"]
        declared.add(i)
        if t["dtype"] != dtype:
            lines.append("dtype %s" % t["dtype"])
            dtype = t["dtype"]
        return "%s[%s]" % (t["name"], ",".join(t["axes"]))

    for i in order:
        n = nodes[i]
        kind = n["kind"]
        if kind in ("input", "output"):
            continue
        srcs = ins[i]
        ops = " ".join(operand(s) for s in srcs)
        v = value_name(i)
        if kind == "contract":
            spec = "%s->%s" % (",".join("".join(axes_of[s]) for s in srcs), "".join(n["out"]))
            rhs, axes_of[i] = 'einsum("%s")' % spec, n["out"]
        elif kind == "map":
            fn = n["fn"]
            rhs = {"scale": "scale(%.17g)" % n.get("alpha", 1.0),
                   "cast": "cast(%s)" % n.get("dtype", "fp32")}.get(fn, fn)
            axes_of[i] = list(dict.fromkeys(sum((axes_of[s] for s in srcs), [])))
        elif kind == "softmax":
            rhs, axes_of[i] = "softmax(%s)" % n["axis"], axes_of[srcs[0]]
        elif kind == "normalize":
            rhs, axes_of[i] = "%s(%s, eps=%.9g)" % (n["norm"], n["axis"], n.get("eps", 1e-5)), axes_of[srcs[0]]
        elif kind == "reduce":
            rhs, axes_of[i] = "%s(%s)" % (n["reduce"], n["axis"]), [a for a in axes_of[srcs[0]] if a != n["axis"]]
        elif kind == "mask":
            if n["mask"] == "causal":
                rhs = "causal(rows=%s, axis=%s, offset=%d)" % (n["rows"], n["axis"], n.get("offset", 0))
            else:
                rhs = "window(rows=%s, axis=%s, offset=%d, left=%d, right=%d)" % (
                    n["rows"], n["axis"], n.get("offset", 0), n.get("left", -1), n.get("right", -1))
            axes_of[i] = axes_of[srcs[0]]
        else:
            raise ValueError("%s: no einsum form for %s" % (i, kind))
        if kind == "contract" and n.get("dtype"):
            # the result's type set on the product: the product, then a cast
            lines.append("%s -> %s0 = %s" % (ops, v, rhs))
            lines.append("%s0 -> %s = cast(%s)" % (v, v, n["dtype"]))
        else:
            lines.append("%s -> %s = %s" % (ops, v, rhs))
    outs = [value_name(s) for i in order if nodes[i]["kind"] == "output" for s in ins[i]]
    lines.append("output " + ", ".join(outs))
    return "\n".join(lines) + "\n"


# ---- the problems -------------------------------------------------------------------------

def attention_case(rng, i):
    dtype = rng.choice(["fp16", "fp16", "bf16", "bf16", "fp8-e4m3"])
    fp8 = dtype == "fp8-e4m3"
    d = rng.choice([64, 128, 128, 256]) if fp8 else rng.choice([32, 64, 80, 96, 128, 128, 192, 256])
    layout = rng.choice(["mha", "mha", "gqa", "gqa", "mqa"])
    shape = rng.choice(["self", "self", "cross", "decode"])
    if shape == "decode":
        nq, nk = rng.choice([1, 1, 4, 16]), rng.randint(2048, 65536)
    elif shape == "cross":
        nq, nk = rng.randint(1, 16384), rng.choice([1, 77, 77, 300, rng.randint(1, 16384)])
    else:
        nq = nk = rng.choice([1024, 2048, 4096, rng.randint(100, 8192)])
    b, h = rng.randint(1, 4), rng.choice([1, 4, 8, 16])
    g = rng.choice([2, 4, 8]) if layout == "gqa" else None
    if layout == "mqa":
        h = max(h, 4)
    # at most ~6e12 FLOPs and 8 GB of inputs a case
    while 4 * b * h * (g or 1) * nq * nk * d > 6e12 and b * h > 1:
        if b > 1:
            b -= 1
        else:
            h = max(1, h // 2)
    opts = {"layout": layout} if layout == "mqa" else {}
    if fp8:
        opts.update(v="fp16", o="fp16")     # P·V in 16 bits, as hopper-attention-fp8.napkin
    r = rng.random()
    if r < 0.35 and nq > 1:
        opts.update(mask="causal", offset=max(0, nk - nq) if (nk > nq or rng.random() < 0.3) else 0)
    elif r < 0.55:
        opts.update(mask="window", offset=max(0, nk - nq) if nk > nq else 0, left=rng.randint(16, 4096),
                    right=rng.choice([0, 0, rng.randint(1, 64)]))
    dims = sc.A(b, h, nq, nk, d, g)
    name = "attn-%s-%d-%dx%dx%dx%dx%d" % (shape, i, b, h * (g or 1), nq, nk, d)
    return (name, "attention", dims, dtype, "regions", None, opts)


def gemm_case(rng, i):
    kind = rng.choice(["matmul", "linear", "matmul_at", "fp8", "bmm", "bias_gelu", "residual", "swiglu", "mlp"])
    dtype = "fp8-e4m3" if kind == "fp8" else rng.choice(["fp16", "bf16"])
    size = lambda lo, hi: rng.choice([rng.randint(lo, hi), 2 ** rng.randint(max(1, lo.bit_length()), hi.bit_length() - 1)])
    if kind == "mlp":
        dims = {"t": size(1, 8192), "e": rng.choice([768, 1024, 2048, 4096]), "f": rng.choice([2048, 3072, 8192, 11008])}
        return ("mlp-%d-%dx%dx%d" % (i, dims["t"], dims["e"], dims["f"]), kind, dims, dtype, "regions", None, {})
    if kind == "bmm":
        dims = {"b": rng.randint(1, 64), "m": size(1, 2048), "n": size(16, 2048), "k": size(16, 2048)}
        return ("bmm-%d-%dx%dx%dx%d" % (i, dims["b"], dims["m"], dims["n"], dims["k"]), kind, dims, dtype, "plain",
                None, {})
    m, n, k = size(1, 16384), size(16, 16384), size(16, 16384)
    while 2 * m * n * k > 4e12:
        m, n, k = max(1, m // 2), max(16, n // 2), max(16, k // 2)
    if kind == "fp8":
        n, k = (n + 15) // 16 * 16, (k + 15) // 16 * 16       # torch._scaled_mm's rows: 16-byte aligned
    fusion = "regions" if kind in ("bias_gelu", "residual", "swiglu") else "plain"
    return ("%s-%d-%dx%dx%d" % (kind.replace("_", "-"), i, m, n, k), kind, {"m": m, "n": n, "k": k}, dtype, fusion,
            None, {})


def rows_case(rng, i):
    kind = rng.choice(["softmax", "softmax", "softmax0", "layernorm", "rmsnorm"])
    dtype = rng.choice(["fp16", "bf16"])
    r = rng.choice([rng.randint(1, 65536), 2 ** rng.randint(4, 16)])
    c = rng.choice([rng.randint(8, 65536), 2 ** rng.randint(6, 16), 50257, 128256])
    while r * c > 2 ** 29:
        r = max(1, r // 2)
    if kind in ("softmax", "softmax0"):
        dims, fusion = {"r": r, "c": c}, "plain"
    else:
        dims, fusion = {"t": r, "h": c}, "regions"
    return ("%s-%d-%dx%d" % (kind, i, r, c), kind, dims, dtype, fusion, None, {})


def draw(n, seed):
    """n problems, in the issue's proportions: attention first (about 45 %), then products and
    chains, then rows."""
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        f = i % 20
        make = attention_case if f < 9 else gemm_case if f < 15 else rows_case
        cases.append(make(rng, i))
    return cases


def write(args):
    os.makedirs(args.write, exist_ok=True)
    cases = draw(args.cases, args.seed)
    entries = []
    for case in cases:
        name = case[0]
        d = sc.diagram(case, os.path.join(HERE, "..", ".."))
        example = os.path.join(args.write, name + ".example.napkin")
        with open(example, "w") as f:
            json.dump(d, f, indent=1)
        plain = dict(d, regions=[])
        text = einsum_text(plain)
        with open(os.path.join(args.write, name + ".einsum"), "w") as f:
            f.write(text)
        e = sc.manifest_entry(case, d, os.path.join(args.write, name + ".napkin"))
        e.update(einsum=os.path.join(args.write, name + ".einsum"), example=example, plain=False)
        entries.append(e)
    if args.part:
        cases, entries = sc.split(cases, entries, args.part)
    with open(os.path.join(args.write, "cases.json"), "w") as f:
        json.dump({"cases": entries, "seed": args.seed}, f, indent=1)
    for e in entries:
        print("%-44s %-10s %s" % (e["name"], e["kind"], e["dtype"]))
    print("%d cases, host %.0f s + baselines %.0f s estimated" % (
        len(entries), sum(e["host_s"] for e in entries), sum(e["baseline_s"] for e in entries)))
    return 0


# ---- on the GPU machine -------------------------------------------------------------------

def plan_kernels(cli, path, model):
    """The plan of the relabeled file: [(name, kind, path)] or None."""
    rc, out, err, _ = sr.run_cli([cli, "plan", path, "--arch", model, "--json"], 60)
    r, _ = sr.parse_json(out)
    if r is None:
        return None
    return [(k.get("name"), k.get("kind"), k.get("path")) for k in r.get("kernels", [])]


def time_only(path, args, deadline):
    """The median of one timing-only call of `napkin-cli run` (no reference), or None."""
    left = int(max(1, min(args.timeout, deadline - time.time())))
    rc, out, err, _ = sr.run_cli([args.cli, "run", path, "--json", "--no-reference", "--no-energy",
                                  "--model", args.model, "--repeats", str(args.repeats),
                                  "--timeout", str(left)], left + args.margin)
    r, _ = sr.parse_json(out)
    return ((r or {}).get("time_ms") or {}).get("median")


def retime_twins(rec, case, args, deadline, key="example", other=None):
    """Two runs of the same problem more than 10 % apart: timed again twice, alternating
    (einsum, other, einsum, other), each side's fastest median kept. Problems of a few
    microseconds differ by 10–30 % between two calls of the same plan (session 28: the same
    layernorm 64 × 64 plan 6.7 and 7.4 µs, the same decode plan 11.6 and 13.0 µs; session
    30: the same SwiGLU plan 0.031 and 0.036 ms). `key` is the other run's record (the
    drawn example, or the example after Suggest ▸ Apply at file `other`)."""
    ex = rec.get(key) or {}
    mine, theirs = sr.get(rec, "time_ms", "median"), (ex.get("time_ms") or {}).get("median")
    if rec.get("status") != "ok" or ex.get("status") != "ok" or not mine or not theirs \
            or 0.9 <= mine / theirs <= 1.1:
        return
    times = {"einsum": [mine], key: [theirs]}
    for _ in range(2):
        for side, path in (("einsum", case["file"]), (key, other or case["example"])):
            if time.time() > deadline - 15:
                break
            t = time_only(path, args, deadline)
            if t:
                times[side].append(t)
    rec.setdefault("retimed", {}).update(times if key == "example" else {key: times[key], "einsum_" + key: times["einsum"]})
    rec["time_ms"]["median"] = min(times["einsum"])
    ex["time_ms"]["median"] = min(times[key])


def run_one(case, args, deadline):
    rec = {"name": case["name"], "started": time.strftime("%H:%M:%S"), "sol_work": sol_work(case)}
    rc, out, err, wall = sr.run_cli([args.cli, "import", case["einsum"], "-o", case["file"]], 60)
    if rc != 0:
        rec.update(status="import-failed", message=(err or out).strip()[-400:])
        return rec
    rc, out, err, wall = sr.run_cli([args.cli, "tune", case["file"], "--arch", args.model, "--apply"], 300)
    rec["tune_wall_s"] = round(wall, 2)
    rec["derivation"] = out.strip()[-1500:]
    if rc != 0:
        rec.update(status="tune-failed", message=(err or out).strip()[-400:])
        return rec
    rec["plan"] = plan_kernels(args.cli, case["file"], args.model)
    rec["generic"] = sum(1 for k in rec["plan"] or [] if k[2] == "generic")
    user, _ = sr.run_case(case, args, deadline)
    rec.update(user)
    # the drawn example of a plain kind is the same plain diagram: nothing to compare
    if case.get("fusion") != "plain" and time.time() < deadline - 15:
        twin = dict(case, file=case["example"], plain=False)
        ex, _ = sr.run_case(twin, args, deadline)
        rec["example"] = {k: ex.get(k) for k in ("status", "time_ms", "max_rel", "predicted_ms", "paths", "message")}
        rec["example_plan"] = plan_kernels(args.cli, case["example"], args.model)
        retime_twins(rec, case, args, deadline)
        # what a user who resized the example does next: Suggest Tiles ▸ Apply. Run only where
        # the suggestion changes the drawn file (else it is the row just measured).
        tuned = case["example"].replace(".example.napkin", ".example-suggested.napkin")
        shutil.copyfile(case["example"], tuned)
        rc, out, err, _ = sr.run_cli([args.cli, "tune", tuned, "--arch", args.model, "--apply"], 300)
        if rc == 0 and open(tuned, "rb").read() != open(case["example"], "rb").read() \
                and time.time() < deadline - 15:
            sug, _ = sr.run_case(dict(case, file=tuned, plain=False), args, deadline)
            rec["example_suggested"] = {k: sug.get(k) for k in ("status", "time_ms", "max_rel", "predicted_ms")}
            retime_twins(rec, case, args, deadline, "example_suggested", tuned)
        elif rc == 0:
            rec["example_suggested"] = {"same": True}
    return rec


def run(args):
    cases = json.load(open(args.manifest))["cases"]
    deadline = args.deadline or time.time() + 1e9
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "user-path.json")
    result = {"model": args.model, "cases": {}}
    for i, case in enumerate(cases, 1):
        if time.time() > deadline - 20:
            rec = {"name": case["name"], "status": "skipped", "message": "time budget"}
        else:
            try:
                rec = run_one(case, args, deadline)
            except Exception as e:
                rec = {"name": case["name"], "status": "bench-error", "message": repr(e)[:300]}
        result["cases"][case["name"]] = rec
        t = sr.get(rec, "time_ms", "median")
        print("[%2d/%d] %-40s %-9s %10s ms  generic %s  %s" % (
            i, len(cases), case["name"], rec.get("status"), "%.4f" % t if t else "-", rec.get("generic"),
            (rec.get("message") or "")[:120]), flush=True)
        with open(path + ".tmp", "w") as f:
            json.dump(result, f, indent=1)
        os.replace(path + ".tmp", path)
    return 0


def best_of(b):
    """(ms, name) of a baselines.json record's fastest variant or compile, or None."""
    best = [(v["time_ms"], k) for k, v in (b or {}).get("variants", {}).items() if "time_ms" in v]
    if "time_ms" in (b or {}).get("compile", {}):
        best.append((b["compile"]["time_ms"], "compile(%s)" % b["compile"].get("of")))
    return min(best) if best else None


def retime_baselines(args):
    """Cases slower than their best baseline, timed again against it: Napkin's run and the
    baselines (bench/gpu/sweep-baselines.py on those cases alone) alternately, twice each,
    each side's fastest median kept. The call times every Napkin run first and every
    baseline after, so a long GPU-bound case met the two at different clocks: seed 2239's
    SwiGLU of 5765 × 14269 × 9696 ran 6.89 ms in the first half of the call, 5.53–5.55
    alternating with its baseline (4.87–5.04) in another (docs/perf-notes.md, "Session 33")."""
    deadline = args.deadline or time.time() + 1e9
    path = os.path.join(args.out, "user-path.json")
    bpath = os.path.join(args.out, "baselines.json")
    res, base = json.load(open(path)), json.load(open(bpath))
    cases = {c["name"]: c for c in json.load(open(args.manifest))["cases"]}
    slow = []
    for name, rec in res["cases"].items():
        b, t = best_of(base["results"].get(name)), sr.get(rec, "time_ms", "median")
        if rec.get("status") == "ok" and b and t and b[0] < t and name in cases:
            slow.append(name)
            rec["retimed_baseline"] = {"napkin": [t], "baseline": [b[0]], "of": b[1]}
    print("retiming against the baseline: %s" % (" ".join(slow) or "none"), flush=True)
    sub = os.path.join(args.out, "retime-cases.json")
    json.dump({"cases": [cases[n] for n in slow]}, open(sub, "w"))
    for rnd in range(2):
        if not slow or time.time() > deadline - 30:
            break
        for name in slow:
            if time.time() > deadline - 30:
                break
            t = time_only(cases[name]["file"], args, deadline)
            if t:
                res["cases"][name]["retimed_baseline"]["napkin"].append(t)
        out = os.path.join(args.out, "retime-baselines-%d.json" % rnd)
        left = int(deadline - time.time() - 10)
        if left < 20:
            break
        try:
            subprocess.run([sys.executable, os.path.join(HERE, "sweep-baselines.py"), sub, "--json", out,
                            "--repeats", str(args.repeats), "--deadline", str(deadline - 10),
                            "--compile-budget", str(max(0, left - 20))],
                           capture_output=True, text=True, timeout=left)
        except subprocess.TimeoutExpired:
            pass
        got = json.load(open(out)).get("results", {}) if os.path.exists(out) else {}
        for name in slow:
            b = best_of(got.get(name))
            if b:
                res["cases"][name]["retimed_baseline"]["baseline"].append(b[0])
    for name in slow:
        rt = res["cases"][name]["retimed_baseline"]
        res["cases"][name]["time_ms"]["median"] = min(rt["napkin"])
        print("  %-40s napkin %s  baseline %s" % (name, " ".join("%.4f" % x for x in rt["napkin"]),
                                                   " ".join("%.4f" % x for x in rt["baseline"])), flush=True)
    with open(path + ".tmp", "w") as f:
        json.dump(res, f, indent=1)
    os.replace(path + ".tmp", path)
    return 0


# ---- the table ------------------------------------------------------------------------------

def table(outs, manifest=None, model=None):
    rows = []
    # the speed of light's work for runs that did not record it: from the draw's manifest
    work = {c["name"]: sol_work(c) for c in json.load(open(manifest))["cases"]} if manifest else {}
    for out in outs:
        res = json.load(open(os.path.join(out, "user-path.json")))
        model = model or res.get("model")
        base = json.load(open(os.path.join(out, "baselines.json"))) if os.path.exists(
            os.path.join(out, "baselines.json")) else {"results": {}}
        gpu = None
        for name, r in res["cases"].items():
            best = best_of(base.get("results", {}).get(name))
            rt = r.get("retimed_baseline")
            if best and rt and rt.get("baseline"):
                best = (min(rt["baseline"]), best[1] + "†")
            t = sr.get(r, "time_ms", "median")
            ex = sr.get(r, "example", "time_ms", "median")
            # the drawn example after Suggest ▸ Apply: the drawn time where it changed nothing
            sug = ex if sr.get(r, "example_suggested", "same") else sr.get(r, "example_suggested", "time_ms", "median")
            gpu = gpu or r.get("gpu")
            rows.append({"name": name, "status": r.get("status"), "err": r.get("max_rel"), "ms": t,
                         "retimed": "example" in (r.get("retimed") or {}),
                         "retimed_sug": bool((r.get("retimed") or {}).get("example_suggested")),
                         "pred": r.get("predicted_ms"), "base": best, "example": ex, "suggested": sug,
                         "generic": r.get("generic"), "example_status": sr.get(r, "example", "status"),
                         "paths": "+".join(sorted(set(k[2] for k in r.get("plan") or []))), "gpu": gpu,
                         "message": r.get("message"), "work": r.get("sol_work") or work.get(name)})
    f = lambda v, fmt: fmt % v if isinstance(v, (int, float)) else "-"
    print("| case | status | rel. error | Napkin ms | predicted ms | meas/pred | best baseline | baseline ms | "
          "ratio | drawn example ms | einsum/example | drawn + Suggest ms | einsum/suggested | paths | speed of light |")
    print("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|")
    ratios, preds, twins, sols, generic, ok = [], [], [], [], 0, 0
    twins_sug = []
    for r in rows:
        ratio = r["base"][0] / r["ms"] if r["base"] and r["ms"] else None
        pred = r["ms"] / r["pred"] if r["ms"] and r["pred"] else None
        twin = r["ms"] / r["example"] if r["ms"] and r["example"] else None
        twin_sug = r["ms"] / r["suggested"] if r["ms"] and r["suggested"] else None
        ok += r["status"] == "ok"
        generic += bool(r["generic"])
        frac, bound = (None, None)
        if r["work"] and r["ms"] and model and r["status"] == "ok":
            frac, bound = sol.fraction(model, r["ms"] * 1e-3, r["work"]["tensor_flops"], bytes=r["work"]["bytes"])
        if r["status"] == "ok":
            ratios += [ratio] if ratio else []
            preds += [pred] if pred else []
            twins += [twin] if twin else []
            twins_sug += [twin_sug] if twin_sug else []
            sols += [frac] if frac else []
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["name"], r["status"] if r["status"] == "ok" else "%s: %s" % (r["status"], (r["message"] or "")[:60]),
            f(r["err"], "%.1e"), f(r["ms"], "%.4f"), f(r["pred"], "%.4f"), f(pred, "%.2f"),
            r["base"][1] if r["base"] else "-", f(r["base"][0] if r["base"] else None, "%.4f"), f(ratio, "%.2f"),
            f(r["example"], "%.4f"), f(twin, "%.2f") + ("*" if r["retimed"] else ""), f(r["suggested"], "%.4f"), f(twin_sug, "%.2f") + ("*" if r["retimed_sug"] else ""), r["paths"], "%.2f (%s)" % (frac, bound) if frac else "-"))
    print()
    print("GPU: %s; %d cases, %d ok, %d with a generic kernel" % (rows[0]["gpu"] if rows else "?", len(rows), ok,
                                                                 generic))
    if ratios:
        print("ratio to the best baseline: min %.2f, median %.2f; %d of %d at ≥ 0.8× († slower than "
              "the baseline in the call, then both timed twice more, alternating; the fastest median of "
              "each side)" % (min(ratios), statistics.median(ratios), sum(x >= 0.8 for x in ratios), len(ratios)))
    if preds:
        print("measured / predicted: median %.2f; %d of %d within 1.5×" % (
            statistics.median(preds), sum(1 / 1.5 <= x <= 1.5 for x in preds), len(preds)))
    if twins:
        print("einsum path / drawn example: %d of %d within 10 %%, %d of %d no more than 10 %% slower "
              "(* retimed: more than 10 %% apart in the checked runs, then timed twice more each, "
              "alternating; the fastest median of each side)" % (
            sum(0.9 <= x <= 1.1 for x in twins), len(twins), sum(x <= 1.1 for x in twins), len(twins)))
    if twins_sug:
        print("einsum path / drawn example after Suggest ▸ Apply: %d of %d within 10 %% (* retimed as above)" % (
            sum(0.9 <= x <= 1.1 for x in twins_sug), len(twins_sug)))
    if sols:
        print("speed of light (%s datasheet peaks, bench/gpu/sol.py): median %.2f, from %.2f to %.2f" % (
            model, statistics.median(sols), min(sols), max(sols)))
    return 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--write", metavar="DIR")
    ap.add_argument("--cases", type=int, default=64)
    ap.add_argument("--seed", type=int, default=26)
    ap.add_argument("--part", help="I/N: the I-th of N parts of similar device time")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--manifest")
    ap.add_argument("--cli")
    ap.add_argument("--model")
    ap.add_argument("--out")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=120)
    ap.add_argument("--margin", type=float, default=30)
    ap.add_argument("--deadline", type=float, default=0)
    ap.add_argument("--table", nargs="+", metavar="OUT")
    ap.add_argument("--retime-baselines", action="store_true",
                    help="with --manifest, --cli, --model, --out: the cases slower than their baseline, again")
    args = ap.parse_args(argv)
    args.plain = False
    if args.write:
        return write(args)
    if args.run:
        return run(args)
    if args.table:
        return table(args.table, args.manifest, args.model)
    if args.retime_baselines:
        return retime_baselines(args)
    ap.error("one of --write, --run, --table, --retime-baselines")


if __name__ == "__main__":
    sys.exit(main())
