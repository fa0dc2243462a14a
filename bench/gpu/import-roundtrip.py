#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The body of bench/gpu/import-roundtrip (read its header). Each step is reported on
its own; a failing step does not stop the others. Exit status 1 if any failed."""

import argparse
import difflib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src", "import"))
MODEL = "tests/import/llama_block.py"

# stored graph → (factory, factory keyword arguments)
GRAPHS = {
    "llama-block.graph.json": ("build", {}),
    "mlp-swiglu.graph.json": ("build_mlp", {}),
    "unsupported.graph.json": ("build_unsupported", {}),
}

failures = []


def step(name):
    def wrap(fn):
        def run(*a, **k):
            t = time.time()
            print("== %s" % name, flush=True)
            try:
                r = fn(*a, **k)
                print("   ok (%.1f s)" % (time.time() - t), flush=True)
                return r
            except Exception as e:  # one failing step must not stop the rest
                failures.append(name)
                traceback.print_exc()
                print("   FAILED: %s" % e, flush=True)
                return None
        return run
    return wrap


def load(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def cli(args, out, check=True):
    r = subprocess.run([ARGS.cli] + args, capture_output=True, text=True, timeout=60)
    with open(out, "w") as f:
        f.write(r.stdout + r.stderr)
    if check and r.returncode != 0:
        raise RuntimeError("napkin-cli %s: %s" % (" ".join(args), r.stderr.strip()))
    return r


def export(napkin_export, models, factory, kwargs, path):
    made = getattr(models, factory)(**kwargs)
    graph = napkin_export.export_graph(made[0], made[1], dims=made[2] if len(made) > 2 else None,
                                       source_file=MODEL)
    napkin_export.write_graph(graph, path)
    return made


def regenerate(napkin_export, models, device):
    gdir = os.path.join(ARGS.out, "graphs")
    os.makedirs(gdir, exist_ok=True)
    for name, (factory, kwargs) in GRAPHS.items():
        @step("regenerate %s" % name)
        def one():
            kw = dict(kwargs, device=device)
            path = os.path.join(gdir, name)
            made = export(napkin_export, models, factory, kw, path)
            del made
            stored = os.path.join(ROOT, "tests", "import", name)
            new = open(path).read().splitlines()
            old = open(stored).read().splitlines() if os.path.exists(stored) else []
            # the torch version differs by machine; the rest should not
            diff = [l for l in difflib.unified_diff(old, new, "stored", "regenerated", lineterm="", n=1)
                    if '"torch":' not in l]
            print("   %s: %s" % (name, "same as stored" if len(diff) <= 4 else "DIFFERS from stored:"))
            if len(diff) > 4:
                print("\n".join("     " + l for l in diff[:60]))
            r = cli(["import", path, "-o", path.replace(".graph.json", ".napkin")],
                    path.replace(".graph.json", ".import.txt"), check=False)
            print("   napkin-cli import: exit %d %s" % (r.returncode, r.stderr.strip()[:400]))
            if name.startswith("unsupported"):
                if r.returncode == 0 or "cumsum" not in r.stderr:
                    raise RuntimeError("the unsupported op was not named")
            elif r.returncode != 0:
                raise RuntimeError("import failed")
            else:
                info = cli(["info", path.replace(".graph.json", ".napkin")],
                           path.replace(".graph.json", ".info.txt"))
                print("   " + "\n   ".join(info.stdout.splitlines()[:3]))
            if ARGS.regenerate:
                shutil.copy(path, stored)
                print("   written to %s" % stored)
        one()


def roundtrip(napkin_export, models, torch, label, factory, kwargs, tolerance):
    @step("round trip: %s" % label)
    def one():
        import torch.nn.functional  # noqa: F401

        tag = label.replace(" ", "-")
        gpath = os.path.join(ARGS.out, tag + ".graph.json")
        npath = os.path.join(ARGS.out, tag + ".napkin")
        ppath = os.path.join(ARGS.out, tag + "_reference.py")
        module, inputs = export(napkin_export, models, factory, kwargs, gpath)[:2]
        cli(["import", gpath, "-o", npath], os.path.join(ARGS.out, tag + ".import.txt"))
        cli(["codegen", "--target", "pytorch", npath, "-o", ppath], os.path.join(ARGS.out, tag + ".codegen.txt"))
        printed = load(ppath, "napkin_printed_" + tag.replace("-", "_"))
        with torch.no_grad():
            want = module(*inputs)
            # the printed function's arguments: the graph's input names; parameters as
            # their names with dots as underscores (the importer's tensor names)
            names = [p for p in printed.forward.__code__.co_varnames[:printed.forward.__code__.co_argcount]]
            params = {k.replace(".", "_"): v for k, v in module.named_parameters()}
            user = dict(zip(["x", "cos", "sin"], inputs))
            args = [params[n] if n in params else user[n] for n in names]
            got = printed.forward(*args)
            torch.cuda.synchronize() if torch.cuda.is_available() else None
        err = ((got.float() - want.float()).abs().max() / want.float().abs().max().clamp_min(1e-30)).item()
        print("   %s: max relative error %.3e (tolerance %.0e), output %s %s"
              % (label, err, tolerance, tuple(want.shape), str(want.dtype).replace("torch.", "")))
        if not err <= tolerance:
            raise RuntimeError("max relative error %.3e above %.0e" % (err, tolerance))
    one()


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--cli", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--regenerate", action="store_true")
    ARGS = p.parse_args()

    import torch
    import napkin_export
    models = load(os.path.join(ROOT, MODEL), "llama_block")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("torch %s on %s (%s)" % (torch.__version__, device,
                                    torch.cuda.get_device_name() if device == "cuda" else "no GPU"), flush=True)
    os.chdir(ROOT)  # source paths in the graphs are relative to the repository

    regenerate(napkin_export, models, device)
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    small = dict(small=True, batch=2, seq=16, device=device)
    roundtrip(napkin_export, models, torch, "llama small fp32", "build", dict(small, dtype="float32"), 1e-4)
    roundtrip(napkin_export, models, torch, "mlp small fp32", "build_mlp", dict(small, dtype="float32"), 1e-5)
    roundtrip(napkin_export, models, torch, "llama small bf16", "build", dict(small, dtype="bfloat16"), 3e-2)
    if device == "cuda":
        roundtrip(napkin_export, models, torch, "llama 4x2048 bf16", "build",
                  dict(batch=4, seq=2048, device=device, dtype="bfloat16"), 3e-2)
    print("\nresult: %s" % ("all steps ok" if not failures else "FAILED: " + ", ".join(failures)))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
