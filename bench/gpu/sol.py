# SPDX-License-Identifier: GPL-3.0-or-later
"""Speed of light (docs/perf-notes.md, "Speed of light"): the time a kernel could not beat
on a GPU profile — its tensor-core FLOPs at the dense tensor peak of their type, its other
FLOPs at the CUDA cores' peak, and the device-memory bytes it must move at the memory's
peak — and the fraction of it a measurement reaches (1.0: at the bound). The peaks are the
datasheet figures of data/archs/ID.json (per-SM rates × SMs × the tensor clock), not a
calibration: a kernel measured at 0.8 runs at 80 % of what the hardware is sold to do.

    bound_s(arch, tensor_flops={"bf16": F}, bytes=B) -> (seconds, "tensor" | "hbm" | "cuda")
    fraction(arch, measured_s, ...) -> (fraction of the bound, its name)

Standard library only (here and on the GPU machine)."""
import json, os

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
_cache = {}


def peaks(arch_id):
    """{"tensor": {dtype: FLOP/s}, "cuda": FLOP/s, "hbm": B/s} from data/archs/ARCH.json."""
    if arch_id not in _cache:
        d = json.load(open(os.path.join(ROOT, "data", "archs", arch_id + ".json")))
        val = lambda x: x["value"] if isinstance(x, dict) else x
        sms, tclock = val(d["sms"]), val(d["tensor_clock_mhz"]) * 1e6
        clock = val(d["clock_mhz"]) * 1e6
        tensor = {k: val(v) * sms * tclock for k, v in d["tensor"].items() if not k.startswith("source")}
        tensor["fp8-e4m3"] = tensor["fp8-e5m2"] = tensor.get("fp8", 0)
        cuda = d["cuda"]
        cuda_rate = val(cuda.get("fp32", cuda)) if isinstance(cuda, dict) else cuda
        _cache[arch_id] = {"tensor": tensor, "cuda": cuda_rate * sms * clock,
                           "hbm": val(d["levels"]["hbm"]["bandwidth_bytes_per_s"])}
    return _cache[arch_id]


def bound_s(arch_id, tensor_flops=None, cuda_flops=0.0, bytes=0.0):
    """The speed-of-light time and the resource that sets it."""
    p = peaks(arch_id)
    times = {"tensor": sum(f / p["tensor"][t] for t, f in (tensor_flops or {}).items() if f),
             "cuda": cuda_flops / p["cuda"] if cuda_flops else 0.0,
             "hbm": bytes / p["hbm"] if bytes else 0.0}
    name = max(times, key=times.get)
    return times[name], name


def fraction(arch_id, measured_s, tensor_flops=None, cuda_flops=0.0, bytes=0.0):
    """(bound / measured, the bound's name); (None, None) without a measurement."""
    if not measured_s:
        return None, None
    t, name = bound_s(arch_id, tensor_flops, cuda_flops, bytes)
    return t / measured_s, name


def kernel_work(diagram, info, plan):
    """{kernel name: {"tensor_flops": {dtype: F}, "cuda_flops": F, "bytes": B}} for the
    plan's kernels (`napkin-cli plan --json`), from the diagram (.napkin JSON) and its
    `napkin-cli info --json`: each kernel's operations' FLOPs (tensor FLOPs in the type of
    the product's first operand), and the bytes of the values it reads from outside it and
    of those it makes that something outside reads, each once; an attention under a mask
    counts the products of the tiles it computes."""
    ops = {o["id"]: o for o in info["operations"]}
    srcs = {}
    for w in diagram["wires"]:
        srcs.setdefault(w["to"], []).append(w["from"])
    readers = {}
    for w in diagram["wires"]:
        readers.setdefault(w["from"], []).append(w["to"])
    work = {}
    for k in plan["kernels"]:
        inside = set(k.get("operations") or [])
        tensor, cuda, nbytes, seen = {}, 0.0, 0, set()
        for op in inside:
            o = ops.get(op)
            if o is None:
                continue
            f = o.get("flops") or {}
            if f.get("tensor"):
                first = (srcs.get(op) or [op])[0]
                dt = (ops.get(first) or o)["output"]["dtype"]
                tensor[dt] = tensor.get(dt, 0) + f["tensor"]
            cuda += f.get("cuda") or 0
            for s in srcs.get(op, []):
                if s not in inside and s not in seen and s in ops:
                    seen.add(s)
                    nbytes += ops[s]["output"]["bytes"]
            if any(r not in inside for r in readers.get(op, [])):
                nbytes += o["output"]["bytes"]
        # a mask: the products of the tiles the attention computes (whole masked tiles
        # skipped; a diagonal tile's masked half still counts)
        if k.get("tiles_total"):
            tensor = {dt: f * k["tiles_computed"] / k["tiles_total"] for dt, f in tensor.items()}
        # the same kernel name twice (a repack before its GEMM): work adds up
        w = work.setdefault(k["name"], {"tensor_flops": {}, "cuda_flops": 0.0, "bytes": 0})
        for dt, f in tensor.items():
            w["tensor_flops"][dt] = w["tensor_flops"].get(dt, 0) + f
        w["cuda_flops"] += cuda
        w["bytes"] += nbytes
    return work
