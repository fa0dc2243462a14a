#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Gated pairs on the GPU (docs/plan.md, "Gated GEMM"), entering where a user enters: each
einsum file (two projections of one x, an activation on one, their product) is imported,
relabeled by `tune --apply` and run with the fp32 check; then the same file is timed with
the pair planned apart (NAPKIN_NO_GATED=1: two GEMMs and an element-wise pass) and the
same computation in PyTorch, eager and under torch.compile, in the same call. Prints one
table (ms; ratios > 1: Napkin faster).

    python3 bench/gpu/gated.py --cli .gpu/bin/napkin-cli --model h200 DIR/*.einsum"""
import argparse, json, os, re, sys, time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import importlib
sr = importlib.import_module("sweep-run")

ACT = {"silu": "silu", "gelu": "gelu", "relu": "relu"}


def torch_times(path, dtype_name, fn):
    import torch
    import torch.nn.functional as F
    text = open(path).read()
    sizes = dict((k, int(v)) for k, v in re.findall(r"(\w+)=(\d+)", text.splitlines()[0]))
    s, e, f = sizes["s"], sizes["e"], sizes["f"]
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[dtype_name]
    x = torch.randn(s, e, device="cuda", dtype=dt)
    wg = torch.randn(f, e, device="cuda", dtype=dt) / e ** 0.5
    wu = torch.randn(f, e, device="cuda", dtype=dt) / e ** 0.5
    act = getattr(F, fn)

    def glu(x, wg, wu):
        return act(x @ wg.t()) * (x @ wu.t())

    def bench(g):
        for _ in range(3):
            g(x, wg, wu)
        torch.cuda.synchronize()
        t0 = time.monotonic()
        while time.monotonic() - t0 < 0.5:
            g(x, wg, wu)
        torch.cuda.synchronize()
        ts = []
        for _ in range(20):
            a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            g(x, wg, wu)
            z.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(z))
        return sorted(ts)[len(ts) // 2]

    with torch.no_grad():
        eager = bench(glu)
        t0 = time.time()
        compiled = torch.compile(glu, mode="max-autotune-no-cudagraphs")
        comp = bench(compiled)
    return eager, comp, time.time() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", default="h200")
    ap.add_argument("--out", default="/tmp/gated")
    ap.add_argument("files", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for src in args.files:
        name = os.path.basename(src)[:-len(".einsum")]
        text = open(src).read()
        dtype = re.search(r"^dtype (\w+)", text, re.M).group(1)
        fn = re.search(r"-> a = (\w+)", text).group(1)
        path = os.path.join(args.out, name + ".napkin")
        rec = {"name": name}
        for cmd in (["import", src, "-o", path], ["tune", path, "--apply", "--arch", args.model]):
            rc, out, err, _ = sr.run_cli([args.cli] + cmd, 300)
            if rc != 0:
                rec["status"] = "%s failed: %s" % (cmd[0], (err or out).strip()[-300:])
        if "status" not in rec:
            rc, out, err, wall = sr.run_cli([args.cli, "run", path, "--json", "--model", args.model, "--no-energy",
                                             "--reference-repeats", "0"], 400)
            r, _ = sr.summarise(rc, out, err, wall)
            rec.update(status=r.get("status"), err=r.get("max_rel"), bound=r.get("bound"),
                       ms=sr.get(r, "time_ms", "median"), pred=r.get("predicted_ms"),
                       kernels=[k.get("note", "")[:160] for k in r.get("kernels", [])], message=r.get("message"))
            env = dict(os.environ, NAPKIN_NO_GATED="1")
            os.environ["NAPKIN_NO_GATED"] = "1"
            rc, out, err, wall = sr.run_cli([args.cli, "run", path, "--json", "--model", args.model, "--no-energy",
                                             "--no-reference"], 400)
            del os.environ["NAPKIN_NO_GATED"]
            r2, _ = sr.summarise(rc, out, err, wall)
            rec.update(apart_ms=sr.get(r2, "time_ms", "median"), apart_pred=r2.get("predicted_ms"),
                       apart_status=r2.get("status"))
            try:
                rec["eager_ms"], rec["compile_ms"], rec["compile_s"] = torch_times(src, dtype, fn)
            except Exception as e:  # noqa: BLE001 (a baseline that fails is a row, not a stop)
                rec["torch_error"] = str(e)[-300:]
        rows.append(rec)
        print("==", json.dumps(rec), flush=True)
    print()
    print("| case | status | max rel (bound) | Napkin gated ms | predicted | meas/pred | apart ms (pred) | "
          "eager ms | compile ms | apart / gated | best torch / gated |")
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        ms, pred, ap_, eg, cp = (r.get(k) for k in ("ms", "pred", "apart_ms", "eager_ms", "compile_ms"))
        f = lambda v, p=4: ("%.*f" % (p, v)) if isinstance(v, (int, float)) else "–"
        best = min(v for v in (eg, cp) if v) if (eg or cp) else None
        print("| %s | %s | %s (%s) | %s | %s | %s | %s (%s) | %s | %s | %s | %s |" % (
            r["name"], r.get("status"), f(r.get("err"), 6), f(r.get("bound"), 4), f(ms), f(pred),
            f(ms / pred if ms and pred else None, 2), f(ap_), f(r.get("apart_pred")), f(eg), f(cp),
            f(ap_ / ms if ms and ap_ else None, 2), f(best / ms if ms and best else None, 2)))
    return 0 if all(r.get("status") == "ok" for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
