#!/usr/bin/env python3
"""The sweep's baselines (bench/gpu/sweep, docs/perf-notes.md "The sweep"): for every case of
a manifest written by sweep-cases.py, the library code a user would compare with — cuBLAS
through torch.matmul / torch.addmm / F.linear, torch._scaled_mm for fp8, torch softmax,
F.layer_norm, F.rms_norm, F.gelu (erf form, as Napkin's), F.silu — and torch.compile of the
same function where it compiles within the per-case limit; for attention, torch SDPA with the
cuDNN and the flash backends and FlexAttention for windows (attention_variants()). One
process for all cases; torch is imported in main().

Random inputs (never all zero), CUDA events around each launch, warm-up, median of the
repeats; inputs rotate among copies when one set would sit in L2. A case that fails (out of
memory, an op this torch lacks) is recorded with its error and the next case runs.

Usage: sweep-baselines.py MANIFEST --json OUT [--repeats N] [--compile-limit S]
                          [--compile-budget S] [--deadline EPOCH] [--no-compile]"""
import argparse, gc, json, math, signal, statistics, sys, time

torch = F = DT = None


def import_torch():
    """torch on the GPU machine only: attention_variants() is tested without it."""
    global torch, F, DT
    import torch as _torch
    import torch.nn.functional as _F
    torch, F = _torch, _F
    DT = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32, "fp8-e4m3": torch.float8_e4m3fn}


def attention_variants(case):
    """What can run an attention case of the manifest (sweep-cases.py's "attention" entry), as
    data: {variant: how}, and why each other baseline does not. SDPA through the cuDNN and the
    flash backends (causal through is_causal, or the lower-right causal bias for an offset of
    k − q; GQA/MQA through enable_gqa), FlexAttention for windows (and masks SDPA has no form
    of; in fp16 for fp8 cases), compiled, its compile time counted out. fp8 is timed as cuDNN fp16 of the same shape
    (torch has no fp8 attention; docs/perf-notes.md, "The sweep")."""
    a, d = case["attention"], case["dims"]
    nq, nk = d["q"], d["k"]
    mask, off = a["mask"], a["offset"]
    sdpa = {}
    why = {}
    if mask == "none":
        sdpa = {}
    elif mask == "causal" and off == 0 and nq == nk:
        sdpa = {"is_causal": True}
    elif mask == "causal" and off == nk - nq:
        sdpa = {"causal": "lower_right"}
    else:
        sdpa = None
        why["sdpa"] = "SDPA has no form of a %s mask at offset %d (q %d, k %d)" % (mask, off, nq, nk)
    fp8 = case["dtype"].startswith("fp8")
    out = {}
    if sdpa is not None:
        backends = ["cudnn"] if fp8 else ["cudnn", "flash"]
        if fp8:
            why["sdpa-flash"] = "fp8 is compared with cuDNN fp16 only"
        for be in backends:
            out["sdpa-%s%s" % (be, "-fp16" if fp8 else "")] = dict(sdpa, backend=be, gqa=a["heads"] != a["kv_heads"],
                                                                  dtype="fp16" if fp8 else case["dtype"])
    # fp8 with a mask SDPA cannot express: FlexAttention in fp16, as for windows (else the
    # case had no baseline at all)
    if mask == "window" or sdpa is None:
        out["flex"] = {"mask": mask, "offset": off, "left": a.get("left", -1), "right": a.get("right", -1),
                       "gqa": a["heads"] != a["kv_heads"], "dtype": "fp16" if fp8 else case["dtype"]}
    return out, why


def rand(shape, dtype):
    x = torch.rand(shape, device="cuda", dtype=torch.float32) * 2 - 1
    return x.to(dtype)


def time_fn(fn, sets, repeats, warmup=5, warm_s=0.01):
    """(median, min, max) ms of fn(*args) over `repeats` launches, cycling through the sets,
    after `warmup` launches and `warm_s` seconds of them (napkin-runner's warm-up: the
    clocks up from idle for kernels of a few microseconds)."""
    t0 = time.monotonic()
    i = 0
    while i < warmup or time.monotonic() - t0 < warm_s:
        fn(*sets[i % len(sets)])
        torch.cuda.synchronize()
        i += 1
    times = []
    for i in range(repeats):
        args = sets[i % len(sets)]
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn(*args)
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times)


def n_sets(bytes_per_set, l2):
    """Enough copies that one pass over them does not fit in L2 (at most 4); one copy for
    inputs larger than L2 already."""
    if bytes_per_set >= 2 * l2:
        return 1
    return max(1, min(4, (3 * l2) // max(1, bytes_per_set) + 1))


def shapes(case):
    """The inputs (in the diagram's memory layouts) and the functions a user would call.
    Returns (list of (name, shape, dtype)), {variant name: fn}, the variant to compile."""
    k, d, dt = case["kind"], case["dims"], DT[case["dtype"]]
    g = d.get
    if k == "attention":
        return attention_shapes(case)
    if k in ("matmul", "linear", "fp8", "bias_gelu", "residual", "swiglu", "matmul_at"):
        m, n, r = list(d)                       # row, col, reduced (sweep-cases.py axes3)
        M, N, K = d[m], d[n], d[r]
    if k == "matmul":
        return [("A", (M, K), dt), ("B", (K, N), dt)], {"torch.matmul": torch.matmul}, "torch.matmul"
    if k == "matmul_at":
        # A stored [k,m]: what a user calls on it
        return [("A", (K, M), dt), ("B", (K, N), dt)], {"torch.matmul(A.t(), B)": lambda a, b: a.t() @ b}, \
            "torch.matmul(A.t(), B)"
    if k == "linear":
        return [("A", (M, K), dt), ("W", (N, K), dt)], {"F.linear": F.linear}, "F.linear"
    if k == "fp8":
        one = torch.ones((), device="cuda", dtype=torch.float32)

        def scaled(a, b):
            # b is stored [n,k]: b.t() is the column-major [k,n] operand _scaled_mm wants
            return torch._scaled_mm(a, b.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
        return [("A", (M, K), dt), ("B", (N, K), dt)], {"_scaled_mm": scaled}, "_scaled_mm"
    if k == "bias_gelu":
        fns = {"addmm+gelu": lambda x, w, b: F.gelu(torch.addmm(b, x, w)),
               "matmul+bias+gelu": lambda x, w, b: F.gelu(x @ w + b)}
        return [("X", (M, K), dt), ("W", (K, N), dt), ("bias", (N,), dt)], fns, "matmul+bias+gelu"
    if k == "residual":
        fns = {"matmul+add": lambda x, w, res: x @ w + res, "addmm": lambda x, w, res: torch.addmm(res, x, w)}
        return [("X", (M, K), dt), ("W", (K, N), dt), ("R", (M, N), dt)], fns, "matmul+add"
    if k == "swiglu":
        fns = {"silu(x@W1)*(x@W3)": lambda x, w1, w3: F.silu(x @ w1) * (x @ w3)}
        return [("X", (M, K), dt), ("W1", (K, N), dt), ("W3", (K, N), dt)], fns, "silu(x@W1)*(x@W3)"
    if k == "mlp":
        fns = {"gelu(x@W1)@W2": lambda x, w1, w2: F.gelu(x @ w1) @ w2}
        return [("X", (g("t"), g("e")), dt), ("W1", (g("e"), g("f")), dt), ("W2", (g("f"), g("e")), dt)], \
            fns, "gelu(x@W1)@W2"
    if k == "bmm":
        return [("A", (g("b"), g("m"), g("k")), dt), ("B", (g("b"), g("k"), g("n")), dt)], \
            {"torch.matmul": torch.matmul}, "torch.matmul"
    if k == "scores":
        return [("Q", (g("b"), g("h"), g("q"), g("d")), dt), ("Kt", (g("b"), g("h"), g("d"), g("k")), dt)], \
            {"torch.matmul": torch.matmul}, "torch.matmul"
    eps = case.get("eps", 1e-5)
    if k == "softmax":
        return [("X", (g("r"), g("c")), dt)], {"torch.softmax": lambda x: torch.softmax(x, dim=-1)}, "torch.softmax"
    if k == "softmax0":
        return [("X", (g("r"), g("c")), dt)], {"torch.softmax(dim=0)": lambda x: torch.softmax(x, dim=0)}, \
            "torch.softmax(dim=0)"
    if k == "layernorm":
        h = g("h")
        fns = {"F.layer_norm": lambda x, w, b: F.layer_norm(x, (h,), w, b, eps)}
        return [("X", (g("t"), h), dt), ("gamma", (h,), dt), ("beta", (h,), dt)], fns, "F.layer_norm"
    if k == "rmsnorm":
        h = g("h")
        fns = {"F.rms_norm": lambda x, w: F.rms_norm(x, (h,), w, eps)}
        return [("X", (g("t"), h), dt), ("gamma", (h,), dt)], fns, "F.rms_norm"
    raise ValueError("unknown kind %s" % k)


def attention_shapes(case):
    """Q [b, Hq, q, d], K and V [b, Hk, k, d] (the diagram's Q[b,h,g,q,d] is this memory:
    query head h·G + g, whose K/V head is h, as enable_gqa pairs them). fp8 cases: fp16."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    a, d = case["attention"], case["dims"]
    variants, why = attention_variants(case)
    dt = DT["fp16"] if case["dtype"].startswith("fp8") else DT[case["dtype"]]
    vt = DT["fp16"] if a["v_dtype"].startswith("fp8") else DT[a["v_dtype"]]
    b, hq, hk, nq, nk, hd = d["b"], a["heads"], a["kv_heads"], d["q"], d["k"], d["d"]
    inputs = [("Q", (b, hq, nq, hd), dt), ("K", (b, hk, nk, hd), dt), ("V", (b, hk, nk, hd), vt)]
    backend = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION}
    fns = {}
    for name, how in variants.items():
        if name == "flex":
            continue                    # compiled: attention_flex(), timed apart
        kw = {"scale": a["scale"]}
        if how.get("gqa"):
            kw["enable_gqa"] = True
        if how.get("is_causal"):
            kw["is_causal"] = True
        if how.get("causal") == "lower_right":
            from torch.nn.attention.bias import causal_lower_right
            kw["attn_mask"] = causal_lower_right(nq, nk)

        def fn(q, k, v, _be=backend[how["backend"]], _kw=kw):
            with sdpa_kernel([_be]):
                return F.scaled_dot_product_attention(q, k, v, **_kw)
        fns[name] = fn
    return inputs, fns, None


def attention_flex(case, sets, args, limit):
    """FlexAttention (compiled; its block mask and compile before the clock) for the masks
    SDPA has no form of: {time_ms, min_ms, max_ms, compile_s} or {error}."""
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    a, d = case["attention"], case["dims"]
    how = attention_variants(case)[0]["flex"]
    off, left, right, mask = how["offset"], how["left"], how["right"], how["mask"]

    def keep(bi, hi, qi, ki):
        # docs/plan.md, "Masks": causal keeps j ≤ i + offset; a window i + offset − left ≤ j ≤
        # i + offset + right, −1 unbounded
        ok = ki >= 0
        if mask == "causal":
            ok = ok & (ki <= qi + off)
        if mask == "window" and right >= 0:
            ok = ok & (ki <= qi + off + right)
        if mask == "window" and left >= 0:
            ok = ok & (ki >= qi + off - left)
        return ok
    t0 = time.monotonic()
    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(int(max(1, limit)))
    try:
        bm = create_block_mask(keep, None, None, d["q"], d["k"], device="cuda")
        flex = torch.compile(flex_attention)
        fn = lambda q, k, v: flex(q, k, v, block_mask=bm, scale=a["scale"], enable_gqa=how["gqa"])
        fn(*sets[0])
        torch.cuda.synchronize()
        signal.alarm(0)
        compile_s = time.monotonic() - t0
        med, lo, hi = time_fn(fn, sets, args.repeats)
        return {"time_ms": med, "min_ms": lo, "max_ms": hi, "compile_s": round(compile_s, 2)}
    except CompileTimeout:
        return {"error": "did not compile within %d s" % limit, "compile_s": round(time.monotonic() - t0, 2)}
    except Exception as e:
        return {"error": (str(e).strip().splitlines() or [repr(e)])[0][:200],
                "compile_s": round(time.monotonic() - t0, 2)}
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)
        torch._dynamo.reset()


class CompileTimeout(Exception):
    pass


def on_alarm(signum, frame):
    raise CompileTimeout()


def one_case(case, args, l2, compile_left):
    inputs, fns, to_compile = shapes(case)
    per = sum(math.prod(s) * torch.empty((), dtype=t).element_size() for _, s, t in inputs)
    sets = [tuple(rand(s, t) for _, s, t in inputs) for _ in range(n_sets(per, l2))]
    res = {"input_sets": len(sets), "variants": {}}
    if case["kind"] == "attention":
        res["unsupported"] = attention_variants(case)[1]
        if "flex" in attention_variants(case)[0]:
            if compile_left <= 0 or args.no_compile:
                res["variants"]["flex"] = {"error": "not compiled: %s" % ("--no-compile" if args.no_compile
                                                                         else "compile budget spent")}
            else:
                res["variants"]["flex"] = attention_flex(case, sets, args, min(args.compile_limit, compile_left))
                res["compile"] = {"skipped": "FlexAttention is compiled (its compile time is counted out)",
                                  "compile_s": res["variants"]["flex"].get("compile_s", 0)}
    for name, fn in fns.items():
        try:
            med, lo, hi = time_fn(fn, sets, args.repeats)
            res["variants"][name] = {"time_ms": med, "min_ms": lo, "max_ms": hi}
        except Exception as e:
            res["variants"][name] = {"error": (str(e).strip().splitlines() or [repr(e)])[0][:200]}
        torch.cuda.synchronize()
    if case["kind"] == "attention":
        # SDPA is one fused kernel: torch.compile of it is the same kernel
        res.setdefault("compile", {"skipped": "attention: SDPA is one kernel already"})
    elif args.no_compile:
        res["compile"] = {"skipped": "--no-compile"}
    elif compile_left <= 0:
        res["compile"] = {"skipped": "compile budget spent"}
    else:
        torch._dynamo.reset()           # fresh caches: no recompile limit, no shape reuse
        fn = fns[to_compile]
        # a Python frame around the call: dynamo traces frames, and a builtin has none
        cfn = torch.compile(lambda *a: fn(*a), dynamic=False)
        limit = int(max(1, min(args.compile_limit, compile_left)))
        t0 = time.monotonic()
        old = signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(limit)
        try:
            cfn(*sets[0])
            torch.cuda.synchronize()
            signal.alarm(0)
            compile_s = time.monotonic() - t0
            med, lo, hi = time_fn(cfn, sets, args.repeats)
            res["compile"] = {"of": to_compile, "time_ms": med, "min_ms": lo, "max_ms": hi,
                              "compile_s": round(compile_s, 2)}
        except CompileTimeout:
            res["compile"] = {"of": to_compile, "error": "did not compile within %d s" % limit,
                              "compile_s": round(time.monotonic() - t0, 2)}
        except Exception as e:
            signal.alarm(0)
            res["compile"] = {"of": to_compile, "error": (str(e).strip().splitlines() or [repr(e)])[0][:200],
                              "compile_s": round(time.monotonic() - t0, 2)}
        finally:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
            torch._dynamo.reset()
    ok = [(v["time_ms"], n) for n, v in res["variants"].items() if "time_ms" in v]
    if ok:
        res["best"] = {"name": min(ok)[1], "time_ms": min(ok)[0]}
    del sets
    return res


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("manifest")
    ap.add_argument("--json", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--compile-limit", type=float, default=60, help="seconds for one case's torch.compile")
    ap.add_argument("--compile-budget", type=float, default=180, help="seconds for all compiles together")
    ap.add_argument("--deadline", type=float, default=0, help="epoch seconds; later cases are skipped")
    ap.add_argument("--no-compile", action="store_true")
    args = ap.parse_args(argv)
    import_torch()
    man = json.load(open(args.manifest))
    deadline = args.deadline or time.time() + 1e9
    torch.manual_seed(0)
    props = torch.cuda.get_device_properties(0)
    l2 = getattr(props, "L2_cache_size", 50 * 2**20)
    out = {"gpu": props.name, "sms": props.multi_processor_count, "torch": torch.__version__,
           "cuda": torch.version.cuda, "repeats": args.repeats, "results": {}}
    compile_spent = 0.0
    for case in man["cases"]:
        case = dict(case, eps=man.get("eps", 1e-5))
        name = case["name"]
        if time.time() > deadline - 5:
            out["results"][name] = {"error": "the sweep's time budget ran out before this case"}
        else:
            try:
                left = min(args.compile_budget - compile_spent, deadline - time.time() - 20)
                out["results"][name] = r = one_case(case, args, l2, left)
                compile_spent += (r.get("compile") or {}).get("compile_s", 0)
            except Exception as e:
                out["results"][name] = {"error": (str(e).strip().splitlines() or [repr(e)])[0][:300]}
        gc.collect()
        torch.cuda.empty_cache()
        r = out["results"][name]
        best = r.get("best") or {}
        c = r.get("compile") or {}
        print("%-30s %-18s %10s   compile %10s %6s   %s" % (
            name, best.get("name", "-"), "%.4f" % best["time_ms"] if best else "-",
            "%.4f" % c["time_ms"] if "time_ms" in c else "-",
            "%.1fs" % c["compile_s"] if "compile_s" in c else "", r.get("error") or c.get("error") or ""),
            flush=True)
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
