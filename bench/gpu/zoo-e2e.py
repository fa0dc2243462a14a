#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The zoo end to end on the GPU (docs/import.md, "The model zoo"), entering where a user
enters: each module, at the size people run it, is exported (src/import/napkin_export.py),
imported (`napkin-cli import`), derived and applied as Suggest Tiles does (`tune --apply`,
no regions drawn by hand), and run (`napkin-cli run`) on the module's own parameters and
inputs (NAPKIN_INPUT_DIR); its output (NAPKIN_DUMP_DIR) is compared with the module's, and
the module is timed in eager PyTorch and under torch.compile in the same call. Prints
one table: kernels, predicted and measured ms, the module's times, the ratio (best
PyTorch / Napkin, > 1: Napkin faster), the error against the module, and each kernel's
measured over predicted time.

    bench/gpu/sweep --pack here, then on the GPU machine:
    python3 bench/gpu/zoo-e2e.py --cli .gpu/bin/napkin-cli --model h200 [NAME ... | all]

Without names: the five blocks (GPT-2-medium, Llama-3-8B, ViT-L/16, T5 and BART
attention); `all`: every module of tests/import/zoo too.

Correct: within the dtype's bound of the module run in fp32, or no further from it than
the module in its own dtype is. Exit status 1 if any module failed or was not correct."""

import argparse
import copy
import importlib.util
import json
import os
import subprocess
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
ZOO = os.path.join(ROOT, "tests", "import", "zoo")
sys.path.insert(0, os.path.join(ROOT, "bench", "gpu"))
import sol as SOL   # noqa: E402  (the speed of light)
sys.path.insert(0, os.path.join(ROOT, "src", "import"))
sys.path.insert(0, os.path.dirname(__file__))

# name → (file, factory): the blocks people ask about first, then the rest of the zoo
MODULES = {
    "gpt2_medium_block": ("tests/import/zoo/hf_gpt2_block.py", "build"),
    "llama3_8b_block": ("tests/import/llama_block.py", "build"),
    "vit_l16_block": ("tests/import/zoo/timm_vit_block.py", "build"),
    "t5_attention": ("tests/import/zoo/t5_attention.py", "build"),
    "bart_attention": ("tests/import/zoo/bart_attention.py", "build"),
}
for _f in sorted(os.listdir(ZOO)):
    if _f.endswith(".py") and _f != "regenerate.py" and _f[:-3] not in ("hf_gpt2_block", "timm_vit_block",
                                                                       "t5_attention", "bart_attention"):
        MODULES[_f[:-3]] = ("tests/import/zoo/" + _f, "build")
BOUND = {"float16": 1e-2, "bfloat16": 3e-2, "float32": 1e-4}


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, os.path.join(ROOT, path))
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


# seconds of back-to-back runs before each timed measurement (Napkin's, eager, compiled)
SUSTAIN_S = 1.0


def bench(fn, args, reps=20):
    import torch
    with torch.no_grad():
        # as napkin-runner warms up here: 3 calls, then SUSTAIN_S of them (the first one
        # compiles, for a compiled module: the clock starts after it)
        fn(*args)
        torch.cuda.synchronize()
        t0, n = time.monotonic(), 1
        while n < 3 or time.monotonic() - t0 < SUSTAIN_S:
            fn(*args)
            torch.cuda.synchronize()
            n += 1
        ts = []
        for _ in range(reps):
            a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            fn(*args)
            z.record()
            torch.cuda.synchronize()
            ts.append(a.elapsed_time(z))
    return sorted(ts)[len(ts) // 2]


def one(name, cli, model, out, compile_mode):
    import torch
    import napkin_export
    rt = load("bench/gpu/zoo-roundtrip.py", "zoo_roundtrip")
    argument, node_values = rt.argument, rt.node_values

    path, factory = MODULES[name]
    mod = load(path, "e2e_" + name)
    torch.manual_seed(0)
    made = getattr(mod, factory)()
    module, args, dims = made[0].cuda().eval(), tuple(a.cuda() for a in made[1]), made[2]
    dtype = str(next(module.parameters()).dtype).replace("torch.", "")
    res = {"name": name, "dtype": dtype}
    t0 = time.time()
    ep = napkin_export.export_program(module, args)
    graph = napkin_export.export_graph(module, args, dims=dims, program=ep, source_file=path)
    gpath, npath = os.path.join(out, name + ".graph.json"), os.path.join(out, name + ".napkin")
    napkin_export.write_graph(graph, gpath)
    for cmd in (["import", gpath, "-o", npath], ["tune", npath, "--apply", "--arch", model]):
        r = subprocess.run([cli] + cmd, capture_output=True, text=True, timeout=300)
        if r.returncode != 0:
            raise RuntimeError("napkin-cli %s: %s" % (cmd[0], r.stderr.strip()[-2000:]))
    res["export_import_tune_s"] = time.time() - t0
    diagram = json.load(open(npath))
    outputs = {n.get("tensor") for n in diagram["nodes"] if n.get("kind") == "output"}
    given = os.path.join(out, name + "-inputs")
    dump = os.path.join(out, name + "-dump")
    os.makedirs(given, exist_ok=True)
    env = node_values(ep, args)
    for t in diagram["tensors"]:
        if t["name"] in outputs or "constant" in t or not (t.get("source") or {}).get("node"):
            continue
        argument(env, t).detach().float().cpu().numpy().tofile(os.path.join(given, t["name"] + ".f32"))
    del env
    with torch.no_grad():
        want = module(*args)
        # the module itself in fp32: the reference both its own dtype and Napkin are
        # held to (a bf16 module can be far from it: BLOOM's ALiBi at position 2047 in
        # bf16 is off by up to 4 in the scores)
        m32 = copy.deepcopy(module).float()
        want32 = m32(*[a.float() if torch.is_tensor(a) and a.is_floating_point() else a for a in args])
        del m32
    want = want[0] if isinstance(want, tuple) else want
    want32 = want32[0] if isinstance(want32, tuple) else want32
    torch.cuda.empty_cache()
    r = subprocess.run([cli, "run", npath, "--model", model, "--repeats", "20", "--reference-repeats", "1",
                        "--no-energy", "--format", "json"], capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, NAPKIN_INPUT_DIR=given, NAPKIN_DUMP_DIR=dump))
    try:
        run = json.loads(r.stdout)
    except Exception:
        raise RuntimeError("napkin-cli run (exit %d): %s %s" % (r.returncode, r.stdout[-1500:], r.stderr[-1500:]))
    json.dump(run, open(os.path.join(out, name + ".run.json"), "w"), indent=1)
    res["status"] = run.get("status")
    res["message"] = run.get("message", "")
    res["checked_run_ms"] = (run.get("time_ms") or {}).get("median")
    # The times: a second run without the fp32 reference, each side (Napkin, eager,
    # compiled) after SUSTAIN_S of back-to-back runs: a GPU kept busy lowers its clocks
    # under the power limit (an 8192×14336×4096 GEMM: 1.38 ms on a rested H200, 1.63
    # after 0.2 s of them; cuBLAS 1.24 → 1.40; docs/perf-notes.md "Session 14"), so
    # whichever side ran after a rest (torch after its compile) or after a load (Napkin
    # after the reference) was favoured or not by chance
    r = subprocess.run([cli, "run", npath, "--model", model, "--repeats", "20", "--no-reference", "--no-energy",
                        "--format", "json"], capture_output=True, text=True, timeout=400,
                       env=dict(os.environ, NAPKIN_INPUT_DIR=given, NAPKIN_WARM_MS=str(1000 * SUSTAIN_S)))
    try:
        timed = json.loads(r.stdout)
        if (timed.get("time_ms") or {}).get("median") is not None:
            run = timed
    except Exception:
        pass
    res["measured_ms"] = (run.get("time_ms") or {}).get("median")
    pred = run.get("prediction") or {}
    res["predicted_ms"] = pred.get("time_ms") or pred.get("predicted_ms")
    res["vs_fp32_reference"] = (run.get("error") or {}).get("max_rel")
    ks = [k for k in pred.get("kernels", []) if k.get("measured_ms") is not None]
    res["kernels"] = len(pred.get("kernels", []))
    # each kernel's fraction of the speed of light (bench/gpu/sol.py): its work from the
    # plan and the diagram's operations, at the profile's datasheet peaks
    work = {}
    try:
        info, plan = (json.loads(subprocess.run([cli] + c, capture_output=True, text=True, timeout=120).stdout)
                      for c in (["info", npath, "--json"], ["plan", npath, "--arch", model, "--json"]))
        work = SOL.kernel_work(diagram, info, plan)
    except Exception as e:
        print("  speed of light: %s" % e, flush=True)
    sol_of = lambda name, ms: SOL.fraction(model, ms * 1e-3, work[name]["tensor_flops"], work[name]["cuda_flops"],
                                           work[name]["bytes"]) if name in work and ms else (None, None)
    res["per_kernel"] = [(k["name"], k["kind"], k["predicted_ms"], k["measured_ms"], k["measured_over_predicted"])
                         + sol_of(k["name"], k["measured_ms"]) for k in ks]
    res["within_1_5"] = sum(1 for k in ks if 1 / 1.5 <= k["measured_over_predicted"] <= 1.5)
    res["timed_kernels"] = len(ks)
    # Napkin's output against the module's
    man = json.load(open(os.path.join(dump, "manifest.json")))
    sizes = {a["name"]: a["size"] for a in diagram["axes"]}
    for t in man:
        if t["role"] != "output":
            continue
        raw = open(os.path.join(dump, t["name"] + ".bin"), "rb").read()
        tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[t["dtype"]]
        got = torch.frombuffer(bytearray(raw), dtype=tdt).reshape([sizes[a] for a in t["axes"]]).cuda()
        got = got.reshape(want.shape).float()
        res["vs_module"] = ((got - want.float()).abs().max() / want.float().abs().max()).item()
        res["vs_module_fp32"] = ((got - want32).abs().max() / want32.abs().max()).item()
        res["module_vs_fp32"] = ((want.float() - want32).abs().max() / want32.abs().max()).item()
    res["bound"] = BOUND.get(dtype, 3e-2)
    del want32
    res["eager_ms"] = bench(module, args)
    try:
        t0 = time.time()
        compiled = torch.compile(module, mode=compile_mode) if compile_mode else torch.compile(module)
        res["compile_ms"] = bench(compiled, args)
        res["compile_s"] = time.time() - t0
        del compiled
    except Exception as e:
        print("  torch.compile failed:", str(e)[:300], flush=True)
    del module
    torch.cuda.empty_cache()
    return res


def correct(res):
    """Napkin's output is the module's: within the dtype's bound of the module in fp32, or
    no further from it than the module in its own dtype is."""
    err = res.get("vs_module_fp32", res.get("vs_module", 1e9))
    return err <= res["bound"] or err <= res.get("module_vs_fp32", 0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*")
    p.add_argument("--cli", required=True)
    p.add_argument("--model", default="h200", help="the prediction's profile (a calibrated one, or a GPU name)")
    p.add_argument("--out", default="/tmp/zoo-e2e")
    p.add_argument("--compile-mode", default="", help="torch.compile mode (default: its default)")
    a = p.parse_args()
    import torch
    os.makedirs(a.out, exist_ok=True)
    os.chdir(ROOT)
    print("torch %s on %s; profile %s; files in %s" % (torch.__version__, torch.cuda.get_device_name(), a.model, a.out),
          flush=True)
    results, failed = [], []
    names = list(MODULES) if a.names == ["all"] else a.names or list(MODULES)[:5]
    for name in names:
        t0 = time.time()
        try:
            res = one(name, os.path.abspath(a.cli), a.model, a.out, a.compile_mode)
            results.append(res)
            print("== %s (%.0f s): %s" % (name, time.time() - t0, json.dumps(res)), flush=True)
            if res.get("status") != "ok" or not correct(res):
                failed.append(name)
        except Exception as e:  # one module must not stop the rest
            traceback.print_exc()
            print("== %s FAILED: %s" % (name, e), flush=True)
            failed.append(name)
    print()
    print("| module | dtype | kernels | predicted ms | napkin ms | eager ms | compile ms | best torch / napkin "
          "| max rel vs module (bound) | vs fp32 module (module's own) | kernels within 1.5× of prediction "
          "| measured/predicted range |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    f = lambda v, fmt="%.3f": fmt % v if isinstance(v, (int, float)) else "—"
    for r in results:
        best = min([v for v in (r.get("eager_ms"), r.get("compile_ms")) if v]) if r.get("eager_ms") else None
        ratio = best / r["measured_ms"] if best and r.get("measured_ms") else None
        mops = [k[4] for k in r.get("per_kernel", [])]
        print("| %s | %s | %s | %s | %s | %s | %s | %s | %s (%s) | %s (%s) | %s of %s | %s |" % (
            r["name"], r["dtype"], r.get("kernels"), f(r.get("predicted_ms")), f(r.get("measured_ms")),
            f(r.get("eager_ms")), f(r.get("compile_ms")), f(ratio, "%.2f×"), f(r.get("vs_module"), "%.2e"),
            f(r.get("bound"), "%.0e"), f(r.get("vs_module_fp32"), "%.2e"), f(r.get("module_vs_fp32"), "%.2e"),
            r.get("within_1_5"), r.get("timed_kernels"),
            "%.2f–%.2f" % (min(mops), max(mops)) if mops else "—"))
    for r in results:
        print("\n%s per kernel (predicted → measured ms, ratio; fraction of the speed of light):" % r["name"])
        for k in r.get("per_kernel", []):
            print("  %-28s %-11s %8.4f → %8.4f  %.2f  %s" % (tuple(k[:5]) + (
                "%.2f (%s)" % (k[5], k[6]) if len(k) > 6 and k[5] else "—",)))
    print("result: %s" % ("all %d ok" % len(results) if not failed else "FAILED: " + ", ".join(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
