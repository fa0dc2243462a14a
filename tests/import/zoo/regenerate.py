#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Regenerates the zoo's stored exporter output (docs/import.md, "The model zoo").

For each module here (a .py file with build(small=False, dtype=...)), writes
  NAME.graph.json   its graph at the sizes people run it (src/import/napkin_export.py);
  NAME.small.json   its graph at small sizes in fp32 with a "check" section: the values
                    of its inputs and buffers, of what it computes from parameters alone,
                    and of its outputs, with the parameters filled by the formula below,
                    so that the CI test (tests/import/test-zoo.c) can run the imported
                    diagram in the interpreter (src/lower) and compare, without torch.

Parameters are filled, not stored: element i of the parameter whose graph node is
NAME is u·scale, u = 2·(splitmix64(fnv1a64(NAME) + (i+1)·0x9E3779B97F4A7C15) >> 11)·2⁻⁵³ − 1,
scale 1/√(last dimension) for matrices, 1 + 0.1·u for vectors named *.weight and 0.1·u
for other vectors. test-zoo.c computes the same.

Run from the repository root, with any PyTorch ≥ 2.5 (CPU is enough):
    python3 tests/import/zoo/regenerate.py [NAME ...] [--out DIR]
"""

import argparse
import importlib.util
import json
import math
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "src", "import"))

import napkin_export  # noqa: E402

M64 = (1 << 64) - 1


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for c in text.encode():
        h = ((h ^ c) * 0x100000001B3) & M64
    return h


def uniform(name, n):
    h = fnv1a64(name)
    out = []
    for i in range(n):
        z = (h + (i + 1) * 0x9E3779B97F4A7C15) & M64
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        z ^= z >> 31
        out.append((z >> 11) * 2.0 ** -53 * 2.0 - 1.0)
    return out


def param_fill(name, target, shape, dtype):
    import torch

    n = math.prod(shape)
    u = uniform(name, n)
    if len(shape) >= 2:
        s = 1.0 / math.sqrt(shape[-1])
        vals = [x * s for x in u]
    elif len(shape) == 1 and target.endswith("weight"):
        vals = [1.0 + 0.1 * x for x in u]
    elif len(shape) == 1:
        vals = [0.1 * x for x in u]
    else:
        vals = u
    return torch.tensor(vals, dtype=torch.float64).reshape(shape).to(dtype)


def number(x):
    if math.isfinite(x):
        return float("%.8g" % x)
    return "-inf" if x < 0 else "inf" if x > 0 else "nan"


def flat(t):
    import torch

    return [number(x) for x in t.detach().to(torch.float64).reshape(-1).tolist()]


def check_section(ep, args):
    """Runs the exported program on filled parameters and the factory's inputs."""
    import torch
    import torch.fx

    sig = ep.graph_signature
    flat_args, user, keep = [], iter(args), {}
    for spec in sig.input_specs:
        kind = str(spec.kind).split(".")[-1].lower()
        node = spec.arg.name
        if kind == "parameter":
            p = ep.state_dict[spec.target]
            flat_args.append(param_fill(node, spec.target, list(p.shape), p.dtype))
        elif kind in ("buffer", "constant_tensor"):
            value = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
            flat_args.append(value)
            keep[node] = value
        else:
            value = next(user)
            flat_args.append(value)
            keep[node] = value
    interp = torch.fx.Interpreter(ep.graph_module, garbage_collect_values=False)
    with torch.no_grad():
        interp.run(*flat_args)
    env = {n.name: v for n, v in interp.env.items()}
    # what depends on the module's inputs; values computed from parameters alone that
    # an input-dependent value reads (the importer makes them inputs of the diagram)
    user_names = {s.arg.name for s in sig.input_specs if str(s.kind).split(".")[-1].lower() == "user_input"}
    dep = set(user_names)
    for node in ep.graph.nodes:
        if node.op == "call_function" and any(a.name in dep for a in node.all_input_nodes):
            dep.add(node.name)
    for node in ep.graph.nodes:
        if node.op != "call_function" or node.name in dep:
            continue
        value = env.get(node.name)
        if (isinstance(value, torch.Tensor) and value.numel() <= 65536
                and any(u.name in dep for u in node.users)):
            keep[node.name] = value
    for spec in sig.output_specs:
        if str(spec.kind).split(".")[-1].lower() == "user_output":
            keep[spec.arg.name] = env[spec.arg.name]
    return {"fill": "splitmix64", "values": {k: flat(v) for k, v in keep.items() if isinstance(v, torch.Tensor)}}


def load(path):
    name = os.path.splitext(os.path.basename(path))[0]
    spec = importlib.util.spec_from_file_location("zoo_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def regenerate(name, out):
    import torch

    path = os.path.join(HERE, name + ".py")
    rel = os.path.relpath(path, ROOT)
    mod = load(path)
    torch.manual_seed(0)
    module, args, dims = mod.build(small=False)
    graph = napkin_export.export_graph(module, args, dims=dims, source_file=rel)
    graph["source"] = rel
    napkin_export.write_graph(graph, os.path.join(out, name + ".graph.json"))
    torch.manual_seed(0)
    module, args, dims = mod.build(small=True, dtype="float32")
    ep = napkin_export.export_program(module, args)
    graph = napkin_export.export_graph(module, args, dims=dims, source_file=rel, program=ep)
    graph["source"] = rel
    graph["check"] = check_section(ep, args)
    napkin_export.write_graph(graph, os.path.join(out, name + ".small.json"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("names", nargs="*", help="modules to regenerate (default: all)")
    p.add_argument("--out", default=HERE, help="where to write (default: tests/import/zoo)")
    a = p.parse_args(argv)
    os.chdir(ROOT)
    names = a.names or sorted(f[:-3] for f in os.listdir(HERE) if f.endswith(".py") and f != "regenerate.py")
    os.makedirs(a.out, exist_ok=True)
    for name in names:
        regenerate(name, a.out)
        print("regenerated", name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
