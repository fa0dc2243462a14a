#!/usr/bin/env python3
"""Random problems through `napkin-cli run`, each checked against the fp32 reference at
full size: shapes no list names. Families: attention (any length, head dim 8 to 256, fp16,
bf16 and fp8 with V in e4m3 or 16 bits, MHA, GQA, MQA, decoding, causal with an offset,
windows, tiles as the simple rule picks them or asked at random), gemm (plain products at
odd sizes, nn.Linear's layout, fp8, batched, epilogues drawn in the product's region: bias
+ GELU, a residual, SwiGLU) and rows (softmax, LayerNorm, RMSNorm of any width). A case
that faults, hangs, is wrong or falls to the generic lowering at tiles it did not ask for
is a bug.

  bench/gpu/shape-fuzz.py [--family F] [--cases N] [--seed S] [--out DIR]   on the GPU
      machine, from the repository root, after `bench/gpu/sweep --pack _build-gpu` here
  bench/gpu/shape-fuzz.py --write-only DIR [--family F] [--cases N] [--seed S]

Prints one line a case and a summary; DIR/fuzz.json holds every result."""
import argparse, importlib.util, json, math, os, random, sys

HERE = os.path.dirname(os.path.abspath(__file__))


def load(name, file):
    spec = importlib.util.spec_from_file_location(name, os.path.join(HERE, file))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


sc = load("sweep_cases", "sweep-cases.py")    # the diagram builders
sr = load("sweep_run", "sweep-run.py")        # running napkin-cli and reading its result

REF_LIMIT = 3e11        # fp32 reference work (FLOPs) a case may ask for: about 0.3 s generic


def random_case(rng, i):
    dtype = rng.choice(["fp16", "fp16", "bf16", "bf16", "fp8-e4m3", "fp8-e4m3"])
    fp8 = dtype == "fp8-e4m3"
    d = rng.randrange(16, 257, 16) if fp8 else rng.randrange(8, 257, 8)
    layout = rng.choice(["mha", "mha", "gqa", "mqa"])
    decode = rng.random() < 0.25
    nq = rng.randint(1, 64) if decode else rng.randint(1, 3000)
    nk = rng.randint(1024, 20000) if decode else rng.randint(1, 5000)
    b, h = rng.randint(1, 3), rng.randint(1, 8)
    g = rng.choice([2, 4, 8]) if layout == "gqa" else None
    opts = {}
    if layout == "mqa":
        opts["layout"] = "mqa"
    if fp8:
        opts["v"] = rng.choice(["fp8-e4m3", "fp8-e4m3", "fp16"])
        opts["o"] = rng.choice(["fp16", "bf16"])
    r = rng.random()
    if r < 0.3:
        opts.update(mask="causal", offset=max(0, nk - nq) if rng.random() < 0.5 else 0)
    elif r < 0.45:
        opts.update(mask="window", offset=max(0, nk - nq) if rng.random() < 0.5 else 0,
                    left=rng.randint(0, 2000), right=rng.choice([0, 0, rng.randint(1, 100)]))
    asked = rng.random() < 0.4
    if asked:
        step = 32 if fp8 and opts.get("v") == "fp8-e4m3" else 16
        opts["k"] = rng.choice([k for k in (32, 64, 96, 128, 160, 192, 224) if k % step == 0])
        opts["stages"] = rng.randint(1, 4)
    dims = sc.A(b, h, nq, nk, d, g=g)
    heads = b * h * (g or 1)
    while 4.0 * heads * nq * nk * d > REF_LIMIT and heads > 1:
        dims["b"] = 1
        heads = h * (g or 1)
        if 4.0 * heads * nq * nk * d > REF_LIMIT:
            dims["h"] = h = max(1, h // 2)
            heads = h * (g or 1)
    name = "fuzz%03d-%s-%s%s-%dx%dx%dx%dx%d%s%s" % (
        i, dtype.replace("-e4m3", ""), layout, "" if g is None else str(g), dims["b"], dims["h"], nq, nk, d,
        "-" + opts["mask"] if "mask" in opts else "", "-k%ds%d" % (opts["k"], opts["stages"]) if asked else "")
    return name, dims, dtype, opts, asked


def odd(rng, lo, hi):
    """A size in [lo, hi], often one that no tile divides."""
    v = rng.randint(lo, hi)
    return v if rng.random() < 0.6 else max(lo, v // 64 * 64)


def random_gemm(rng, i):
    kind = rng.choice(["matmul", "matmul", "linear", "fp8", "bmm", "bias_gelu", "residual", "swiglu"])
    dtype = "fp8-e4m3" if kind == "fp8" else rng.choice(["bf16", "fp16"])
    if kind == "bmm":
        dims = dict(b=rng.randint(1, 16), m=odd(rng, 1, 2048), n=odd(rng, 1, 2048), k=odd(rng, 1, 1024))
    else:
        m, n, k = odd(rng, 1, 6000), odd(rng, 1, 8000), odd(rng, 1, 6000)
        if kind in ("matmul", "linear", "fp8"):
            dims = dict(m=m, n=n, k=k)
        elif kind == "residual":
            dims = dict(t=m, e=n, f=k)
        else:
            dims = dict(t=m, f=n, e=k)
    while 2.0 * math.prod(dims.values()) > REF_LIMIT:
        big = max((a for a in dims if a != "b"), key=lambda a: dims[a])
        dims[big] = max(1, dims[big] // 2)
    name = "fuzz%03d-%s-%s-%s" % (i, kind, dtype.replace("-e4m3", ""), "x".join(str(v) for v in dims.values()))
    fusion = "regions" if kind in ("bias_gelu", "residual", "swiglu") else "plain"
    return name, sc.diagram((name, kind, dims, dtype, fusion, None), os.getcwd()), False


def random_rows(rng, i):
    kind = rng.choice(["softmax", "layernorm", "rmsnorm"])
    dtype = rng.choice(["bf16", "fp16"])
    width = rng.choice([odd(rng, 1, 4096), odd(rng, 4096, 160000)])
    rows = max(1, min(rng.randint(1, 65536), int(5e7 // width)))
    dims = dict(r=rows, c=width) if kind == "softmax" else dict(t=rows, h=width)
    name = "fuzz%03d-%s-%s-%dx%d" % (i, kind, dtype, rows, width)
    fusion = "plain" if kind == "softmax" else "regions"
    return name, sc.diagram((name, kind, dims, dtype, fusion, None), os.getcwd()), False


def random_attention(rng, i):
    name, dims, dtype, opts, asked = random_case(rng, i)
    return name, sc.attention(name, dims, dtype, opts), asked


FAMILIES = {"attention": random_attention, "gemm": random_gemm, "rows": random_rows}


def run(cli, path, timeout):
    """One run as the sweep does it (sweep-run.py: its own process group, killed whole at
    the timeout; the result read and checked for sanity)."""
    rec, _ = sr.summarise(*sr.run_cli([cli, "run", path, "--json", "--repeats", "3", "--reference-repeats", "0"],
                                      timeout))
    return rec


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=sorted(FAMILIES) + ["all"], default="attention")
    ap.add_argument("--cases", type=int, default=60)
    ap.add_argument("--seed", type=int, default=20261126)
    ap.add_argument("--out", default=os.environ.get("OUT", "/tmp/attn-fuzz"))
    ap.add_argument("--write-only", metavar="DIR")
    ap.add_argument("--timeout", type=float, default=60)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    out = args.write_only or args.out
    os.makedirs(out, exist_ok=True)
    cases = []
    families = sorted(FAMILIES) if args.family == "all" else [args.family]
    for i in range(args.cases):
        name, doc, asked = FAMILIES[families[i % len(families)]](rng, i)
        path = os.path.join(out, name + ".napkin")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(doc, f, indent=1, ensure_ascii=False)
        cases.append(dict(name=name, file=path, asked=asked))
    if args.write_only:
        print("wrote %d cases to %s" % (len(cases), out))
        return 0
    pack = os.path.join(os.getcwd(), os.environ.get("NAPKIN_PACK", ".gpu"))
    os.environ["LD_LIBRARY_PATH"] = ":".join([os.path.join(pack, "lib"), "/usr/local/cuda/lib64",
                                              "/usr/local/nvidia/lib64", os.environ.get("LD_LIBRARY_PATH", "")])
    os.environ["NAPKIN_RUNNER"] = os.path.join(pack, "bin", "napkin-runner")
    os.environ.setdefault("NAPKIN_ARCH_DIR", os.path.join(os.getcwd(), "data", "archs"))
    cli = os.path.join(pack, "bin", "napkin-cli")
    bad = []
    for c in cases:
        r = run(cli, c["file"], args.timeout)
        c.update(r)
        generic = any(k and "generic" in k for k in r.get("paths") or [])
        # summarise calls a checked result outside its bound "garbage"
        verdict = ("ok" if r["status"] == "ok" else
                   "WRONG" if r["status"] == "garbage" and r.get("max_rel") is not None and not r.get("error_ok")
                   else r["status"].upper())
        if generic:
            # tiles asked at random may not fit (the plan says why and runs the generic
            # lowering); the rule's own tiles must
            verdict += "+generic" if c["asked"] else "+GENERIC"
        c["verdict"] = verdict
        if verdict not in ("ok", "ok+generic"):
            bad.append(c)
        median = (r.get("time_ms") or {}).get("median")
        print("%-62s %-14s %9s %8s  %s" % (c["name"], verdict,
                                           "%.3e" % r["max_rel"] if r.get("max_rel") is not None else "—",
                                           "%.4f" % median if median else "—",
                                           "+".join(r.get("paths") or []) or
                                           (r.get("message") or r.get("stderr_tail", ""))[-120:].replace("\n", " ")),
              flush=True)
    with open(os.path.join(out, "fuzz.json"), "w", encoding="utf-8") as f:
        json.dump(cases, f, indent=1)
    print("\n%d cases (seed %d): %d ok, %d not: %s" % (len(cases), args.seed, len(cases) - len(bad), len(bad),
                                                        ", ".join("%s %s" % (c["name"], c["verdict"]) for c in bad) or "none"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
