#!/usr/bin/env python3
"""Session 33: is swiglu-32's 0.70× of seed 2239 the kernels or the moment they ran? The
same einsum file run by `napkin-cli run` (timing only, 20 repeats, as user-path times it)
and the seed's best baseline, torch.compile of silu(x@W1)*(x@W3), timed as
sweep-baselines.py times it (its time_fn), alternating, three rounds, then each side once
more after two seconds of the other side's back-to-back runs.

    python3 alternate.py CLI FILE.napkin M N K      (on the GPU machine)"""
import importlib.util, json, os, subprocess, sys, time
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location("sb", os.path.join(HERE, "..", "..", "..", "bench", "gpu", "sweep-baselines.py"))
sb = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sb)
sb.import_torch()
cli, path, M, N, K = sys.argv[1], sys.argv[2], *map(int, sys.argv[3:6])
dt = torch.bfloat16
x = torch.randn(M, K, device="cuda", dtype=dt)
w1 = torch.randn(K, N, device="cuda", dtype=dt) / K ** 0.5
w3 = torch.randn(K, N, device="cuda", dtype=dt) / K ** 0.5
fn = torch.compile(lambda x, w1, w3: F.silu(x @ w1) * (x @ w3))
fn(x, w1, w3); torch.cuda.synchronize()


def napkin():
    r = subprocess.run([cli, "run", path, "--json", "--no-reference", "--no-energy", "--model", "h200",
                        "--repeats", "20"], capture_output=True, text=True, timeout=120)
    try:
        j = json.loads(r.stdout)
        return j["time_ms"]["median"], [(k.get("name"), k.get("measured_ms")) for k in (j.get("prediction") or {}).get("kernels", [])]
    except Exception:
        return None, r.stderr[-300:]


def torch_side():
    return sb.time_fn(fn, [(x, w1, w3)], 20)[0]


def smi():
    r = subprocess.run(["nvidia-smi", "--query-gpu=clocks.sm,power.draw,temperature.gpu,clocks_throttle_reasons.active",
                        "--format=csv,noheader"], capture_output=True, text=True)
    return r.stdout.strip()


def hot(seconds, f):
    t0 = time.monotonic()
    while time.monotonic() - t0 < seconds:
        f()


for rnd in range(3):
    n, ks = napkin()
    t = torch_side()
    print("round %d: napkin %.4f ms  compile %.4f ms  compile/napkin %.2f  napkin kernels %s  [%s]" % (rnd, n or -1, t, t / n if n else 0, ks, smi()), flush=True)
hot(2.0, lambda: (fn(x, w1, w3), torch.cuda.synchronize()))
n, ks = napkin()
print("after 2 s of compile's runs: napkin %.4f" % (n or -1), ks, flush=True)
hot(2.0, lambda: (fn(x, w1, w3), torch.cuda.synchronize()))
print("after 2 more s: compile %.4f" % torch_side(), flush=True)
