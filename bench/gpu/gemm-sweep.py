#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""GEMMs at shapes no list names, on the user's path (docs/perf-notes.md, "GEMM sweep"):
M, N and K drawn uniformly from 1 to 16384 (not rounded), bf16 or fp8 e4m3 (fp8 products
cast to bf16, as torch._scaled_mm's out_dtype), A stored [m, k] or [k, m], B [k, n] or
[n, k]; each written as einsum text, imported with no regions and relabeled by
`tune --apply` (here, on the CPU: --write), then run on the GPU by `napkin-cli run`
(checked against the fp32 reference, timed, predicted on the profile given) beside cuBLAS
in the same call: torch.matmul (bf16) or torch._scaled_mm (fp8) on the same layouts where
torch takes them, and on operands padded to 16-byte rows (what a kernel engineer would
write where rows are not aligned); the better of the two is the baseline.

  bench/gpu/gemm-sweep.py --write DIR [--cases N] [--seed S] [--arch ID]   here: einsum,
        the derived diagrams and DIR/cases.json
  bench/gpu/gemm-sweep.py --run DIR [--arch ID]     on the GPU machine, from the repository
        root, with the packed CLI of build-aux/gpu-check --pack in .gpu/ (NAPKIN_PACK):
        one line a case, then the summary and the table with each case's fraction of the
        speed of light (bench/gpu/sol.py), Napkin's and cuBLAS's; DIR/results.json (OUT:
        where results go)
  bench/gpu/gemm-sweep.py --table FILE [--arch ID]  the table of a stored gemm-sweep.json
"""
import argparse, json, os, random, subprocess, sys, time

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import sol   # noqa: E402  (bench/gpu/sol.py: the speed of light)


def best_baseline(c):
    """The better of cuBLAS on the operands as stored and on padded ones (ms), or None."""
    times = [x for x in (c.get("cublas_ms"), c.get("padded_ms")) if x]
    return min(times) if times else None


def speed_of_light(c, arch):
    """Napkin's and the baseline's fractions of the speed of light: 2·M·N·K at the dense
    tensor peak of the operands' type, or A, B (as stored) and C (bf16) once through
    device memory, whichever is longer."""
    eb = 1 if c["dtype"] != "bf16" else 2
    flops = 2.0 * c["m"] * c["n"] * c["k"]
    nbytes = (c["m"] * c["k"] + c["k"] * c["n"]) * eb + c["m"] * c["n"] * 2
    base = best_baseline(c)
    f = lambda ms: sol.fraction(arch, ms * 1e-3 if ms else None, {c["dtype"]: flops}, bytes=nbytes)
    (c["sol"], c["sol_bound"]), (c["base_sol"], _) = f(c.get("napkin_ms")), f(base)


def table(cases, arch):
    """The sweep's table from its results (a run's, or a stored gemm-sweep.json)."""
    fmt = lambda v, f: (f % v) if isinstance(v, (int, float)) else "-"
    print("%-36s %-7s %9s %9s %9s %9s %7s %7s %6s %6s %-6s" % ("case", "status", "napkin", "pred", "cublas", "padded",
                                                              "base/np", "np/pred", "SOL", "SOL cb", "bound"))
    for c in cases:
        speed_of_light(c, arch)
        print("%-36s %-7s %9s %9s %9s %9s %7s %7s %6s %6s %-6s" % (
            c["name"], str(c.get("status"))[:7], fmt(c.get("napkin_ms"), "%.4f"), fmt(c.get("pred_ms"), "%.4f"),
            fmt(c.get("cublas_ms"), "%.4f"), fmt(c.get("padded_ms"), "%.4f"), fmt(c.get("ratio"), "%.2f"),
            fmt(c.get("meas_pred"), "%.2f"), fmt(c.get("sol"), "%.2f"), fmt(c.get("base_sol"), "%.2f"),
            c.get("sol_bound") or "-"))
    sols = sorted(c["sol"] for c in cases if c.get("sol"))
    bsols = sorted(c["base_sol"] for c in cases if c.get("base_sol"))
    if sols:
        print("== speed of light (%s datasheet peaks): Napkin median %.2f, from %.2f to %.2f; cuBLAS median %s" % (
            arch, sols[len(sols) // 2], sols[0], sols[-1], fmt(bsols[len(bsols) // 2] if bsols else None, "%.2f")))


def draw(n, seed):
    rng = random.Random(seed)
    cases = []
    for i in range(n):
        m, nn, k = rng.randint(1, 16384), rng.randint(1, 16384), rng.randint(1, 16384)
        dtype = "fp8-e4m3" if rng.random() < 0.3 else "bf16"
        a_km, b_nk = rng.random() < 0.5, rng.random() < 0.5
        cases.append({"name": "g%02d-%s-%dx%dx%d-%s%s" % (i, "f8" if dtype != "bf16" else "bf", m, nn, k,
                                                          "km" if a_km else "mk", "nk" if b_nk else "kn"),
                      "m": m, "n": nn, "k": k, "dtype": dtype, "a_km": a_km, "b_nk": b_nk})
    return cases


def einsum(c):
    a = "A[k,m]" if c["a_km"] else "A[m,k]"
    b = "B[n,k]" if c["b_nk"] else "B[k,n]"
    spec = "%s,%s->mn" % ("km" if c["a_km"] else "mk", "nk" if c["b_nk"] else "kn")
    lines = ["m=%d n=%d k=%d" % (c["m"], c["n"], c["k"]), "dtype %s" % c["dtype"]]
    if c["dtype"] == "bf16":
        lines.append('%s %s -> C = einsum("%s")' % (a, b, spec))
    else:
        lines.append('%s %s -> C0 = einsum("%s")' % (a, b, spec))
        lines.append("C0 -> C = cast(bf16)")
    lines.append("output C")
    return "\n".join(lines) + "\n"


def cli_run(cli, args, env=None):
    return subprocess.run([cli] + args, capture_output=True, text=True, env=env)


def write(args):
    cli = args.cli or os.path.join(ROOT, "_build", "src", "cli", "napkin-cli")
    env = dict(os.environ, NAPKIN_DATA_DIR=os.path.join(ROOT, "data"))
    os.makedirs(args.write, exist_ok=True)
    cases = draw(args.cases, args.seed)
    for c in cases:
        src = os.path.join(args.write, c["name"] + ".einsum")
        dst = os.path.join(args.write, c["name"] + ".napkin")
        open(src, "w").write(einsum(c))
        for cmd in (["import", src, "-o", dst], ["tune", dst, "--arch", args.arch, "--apply"]):
            r = cli_run(cli, cmd, env)
            if r.returncode != 0:
                c["error"] = "%s: %s" % (cmd[0], (r.stderr or r.stdout)[-300:])
                break
        if "error" not in c:
            plan = json.loads(cli_run(cli, ["plan", dst, "--arch", args.arch, "--format", "json"], env).stdout)
            c["kernels"] = ["%s/%s" % (k.get("kind"), k.get("path")) for k in plan["kernels"]]
            c["generic"] = sum(1 for k in plan["kernels"] if k.get("kind") == "generic")
        print("%-36s %s" % (c["name"], c.get("error") or " ".join(c["kernels"])))
    json.dump(cases, open(os.path.join(args.write, "cases.json"), "w"), indent=1)


def baselines(c):
    """cuBLAS through torch on the case's layouts, and on operands padded to 16-byte rows;
    (direct ms or None, padded ms)."""
    import torch

    def bench(f, n=20):
        for _ in range(3):
            f()
        torch.cuda.synchronize()
        ts = []
        for _ in range(n):
            s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            s.record(); f(); e.record(); torch.cuda.synchronize()
            ts.append(s.elapsed_time(e))
        ts.sort()
        return ts[len(ts) // 2]

    m, n, k = c["m"], c["n"], c["k"]
    dev = "cuda"
    pad = lambda x, q: (x + q - 1) // q * q
    if c["dtype"] == "bf16":
        t = torch.bfloat16
        A = torch.randn(k, m, device=dev, dtype=t).t() if c["a_km"] else torch.randn(m, k, device=dev, dtype=t)
        B = torch.randn(n, k, device=dev, dtype=t).t() if c["b_nk"] else torch.randn(k, n, device=dev, dtype=t)
        direct = bench(lambda: torch.matmul(A, B))
        kp, np_, mp = pad(k, 8), pad(n, 8), pad(m, 8)
        Ap = torch.zeros(mp, kp, device=dev, dtype=t)
        Bp = torch.zeros(kp, np_, device=dev, dtype=t)
        padded = bench(lambda: torch.matmul(Ap, Bp))
        del A, B, Ap, Bp
        return direct, padded
    f8 = torch.float8_e4m3fn
    one = torch.ones((), device=dev, dtype=torch.float32)
    direct = None
    # _scaled_mm: A row-major [m, k], B column-major [k, n], k and n multiples of 16
    if k % 16 == 0 and n % 16 == 0 and not c["a_km"] and c["b_nk"]:
        A = torch.randn(m, k, device=dev).to(f8)
        B = torch.randn(n, k, device=dev).to(f8).t()
        direct = bench(lambda: torch._scaled_mm(A, B, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
        del A, B
    kp, np_ = pad(k, 16), pad(n, 16)
    Ap = torch.zeros(m, kp, device=dev).to(f8)
    Bp = torch.zeros(np_, kp, device=dev).to(f8).t()
    padded = bench(lambda: torch._scaled_mm(Ap, Bp, scale_a=one, scale_b=one, out_dtype=torch.bfloat16))
    del Ap, Bp
    return direct, padded


def run(args):
    pack = os.path.join(ROOT, os.environ.get("NAPKIN_PACK", ".gpu"))
    cli = os.path.join(pack, "bin", "napkin-cli")
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = ":".join([os.path.join(pack, "lib"), "/usr/local/cuda/lib64", "/usr/local/nvidia/lib64",
                                       env.get("LD_LIBRARY_PATH", "")])
    env["NAPKIN_RUNNER"] = os.path.join(pack, "bin", "napkin-runner")
    env.setdefault("NAPKIN_ARCH_DIR", os.path.join(ROOT, "data", "archs"))
    out = os.environ.get("OUT", args.run)
    os.makedirs(out, exist_ok=True)
    cases = json.load(open(os.path.join(args.run, "cases.json")))
    deadline = time.time() + float(os.environ.get("BUDGET", "420"))
    print("%-36s %-7s %9s %9s %9s %9s %9s %7s %7s  %s" % ("case", "status", "rel_err", "napkin", "pred", "cublas",
                                                        "padded", "base/np", "np/pred", "kernels"), flush=True)
    for c in cases:
        if "error" in c:
            c["status"] = "import/tune failed"
            print("%-36s %s" % (c["name"], c["error"][:200]), flush=True)
            continue
        if time.time() > deadline:
            c["status"] = "skipped (budget)"
            continue
        f = os.path.join(args.run, c["name"] + ".napkin")
        r = cli_run(cli, ["run", f, "--arch", args.arch, "--json", "--repeats", "20", "--reference-repeats", "0",
                          "--timeout", "120", "--no-energy"], env)
        try:
            j = json.loads(r.stdout)
            c["status"] = j.get("status")
            c["napkin_ms"] = j["time_ms"]["median"]
            c["pred_ms"] = j["prediction"]["time_ms"]
            c["rel_err"] = (j.get("error") or {}).get("max_rel")
            c["run_kernels"] = [k.get("skeleton") for k in j.get("kernels") or []]
        except Exception as e:    # one case's failure is reported and the others go on
            c["status"] = "no result: %s %s" % (e, (r.stderr or "")[-300:])
        try:
            c["cublas_ms"], c["padded_ms"] = baselines(c)
        except Exception as e:
            c["baseline_error"] = str(e)[:300]
        base = best_baseline(c)
        c["ratio"] = base / c["napkin_ms"] if base and c.get("napkin_ms") else None
        c["meas_pred"] = c["napkin_ms"] / c["pred_ms"] if c.get("napkin_ms") and c.get("pred_ms") else None
        fmt = lambda v, f: (f % v) if isinstance(v, (int, float)) else "-"
        print("%-36s %-7s %9s %9s %9s %9s %9s %7s %7s  %s" % (
            c["name"], str(c.get("status"))[:7], fmt(c.get("rel_err"), "%.2e"), fmt(c.get("napkin_ms"), "%.4f"),
            fmt(c.get("pred_ms"), "%.4f"), fmt(c.get("cublas_ms"), "%.4f"), fmt(c.get("padded_ms"), "%.4f"),
            fmt(c.get("ratio"), "%.2f"), fmt(c.get("meas_pred"), "%.2f"), " ".join(c.get("run_kernels") or [])),
            flush=True)
    ratios = sorted(c["ratio"] for c in cases if c.get("ratio"))
    mp = sorted(c["meas_pred"] for c in cases if c.get("meas_pred"))
    ok = sum(1 for c in cases if c.get("status") == "ok")
    print("== %d cases, %d ok" % (len(cases), ok))
    if ratios:
        print("== best cuBLAS / Napkin: min %.2f, median %.2f, %d of %d at >= 0.95" % (
            ratios[0], ratios[len(ratios) // 2], sum(1 for x in ratios if x >= 0.95), len(ratios)))
    if mp:
        print("== measured / predicted: median %.2f, from %.2f to %.2f, %d of %d within 1.25x" % (
            mp[len(mp) // 2], mp[0], mp[-1], sum(1 for x in mp if 1 / 1.25 <= x <= 1.25), len(mp)))
    print()
    table(cases, args.arch)
    json.dump(cases, open(os.path.join(out, "gemm-sweep.json"), "w"), indent=1)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--write")
    p.add_argument("--run")
    p.add_argument("--cases", type=int, default=40)
    p.add_argument("--seed", type=int, default=29)
    p.add_argument("--arch", default="h200")
    p.add_argument("--cli")
    p.add_argument("--table", help="print the table (speed of light included) of a stored gemm-sweep.json")
    args = p.parse_args()
    if args.write:
        write(args)
    elif args.run:
        run(args)
    elif args.table:
        table(json.load(open(args.table)), args.arch)
    else:
        p.error("--write DIR, --run DIR or --table FILE")


if __name__ == "__main__":
    main()
