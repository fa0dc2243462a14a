#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Export a PyTorch module's graph for `napkin-cli import` (docs/import.md).

It traces the module with torch.export and writes the graph as JSON: one entry per
graph node with its ATen target, arguments, result shape and dtype, and the source
line it came from. It interprets nothing: the C importer decides what each operation
becomes in the diagram and reports what it does not cover.

As a program:

    python3 napkin_export.py MODEL.py [--factory build] [--kwargs '{"small": true}'] -o GRAPH.json
    napkin-cli import GRAPH.json -o MODEL.napkin

MODEL.py defines a function (default `build`) that returns (module, args) or
(module, args, dims), where dims maps an input's name to names for its axes, e.g.
{"x": ["b", "s", "e"]}. As a library: export_graph(module, args, dims=None) returns
the JSON object and write_graph(...) writes it.
"""

import argparse
import importlib.util
import json
import math
import os
import re
import sys

GRAPH_FORMAT = "napkin-graph"
GRAPH_VERSION = 1

_DTYPES = {
    "float32": "fp32",
    "bfloat16": "bf16",
    "float16": "fp16",
    "float8_e4m3fn": "fp8-e4m3",
    "float8_e5m2": "fp8-e5m2",
    "int8": "int8",
}

_FRAME = re.compile(r'File "([^"]+)", line (\d+), in (\S+)\n\s*(.*)')


def _dtype_name(dtype):
    name = str(dtype).replace("torch.", "")
    return _DTYPES.get(name, name)


def _relative(path):
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel


def _source_line(node, source_file):
    """The innermost frame of the module's own source file, else the last frame."""
    trace = node.meta.get("stack_trace") or ""
    frames = _FRAME.findall(trace)
    if not frames:
        return None
    pick = frames[-1]
    if source_file:
        own = [f for f in frames if os.path.abspath(f[0]) == os.path.abspath(source_file)]
        if own:
            pick = own[-1]
    return {"file": _relative(pick[0]), "line": int(pick[1]), "code": pick[3].strip()}


def _arg(value):
    import torch
    import torch.fx

    if isinstance(value, torch.fx.Node):
        return {"node": value.name}
    if isinstance(value, (list, tuple)):
        return [_arg(v) for v in value]
    if isinstance(value, dict):
        return {"dict": {str(k): _arg(v) for k, v in value.items()}}
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"repr": repr(value)}
    if isinstance(value, torch.dtype):
        return {"dtype": _dtype_name(value)}
    return {"repr": str(value)}


def _meta(node):
    """shape and dtype of a node's result, when it is one tensor."""
    val = node.meta.get("val", node.meta.get("example_value"))
    if val is None or not hasattr(val, "shape") or not hasattr(val, "dtype"):
        return {}
    try:
        shape = [int(s) for s in val.shape]
    except (TypeError, ValueError):  # a symbolic size: export with static shapes
        return {"symbolic_shape": [str(s) for s in val.shape], "dtype": _dtype_name(val.dtype)}
    return {"shape": shape, "dtype": _dtype_name(val.dtype)}


def _describe_constant(value):
    """What a buffer or constant holds, where the importer can use it without the data
    (docs/import.md, "Masks"): "value" for one element, "pattern" for tril/triu of ones."""
    import torch

    if not isinstance(value, torch.Tensor):
        return {}
    if value.numel() == 1:
        v = value.reshape(()).item()
        if isinstance(v, bool):
            v = 1.0 if v else 0.0
        return {"value": _arg(float(v))}
    if value.dim() < 2 or value.shape[-1] != value.shape[-2] or value.is_complex():
        return {}
    nz = value != 0
    ones = torch.ones(value.shape[-2:], dtype=torch.bool, device=value.device)
    for kind, fn in (("tril", torch.tril), ("triu", torch.triu)):
        for diagonal in (0, 1, -1):
            if torch.equal(nz, fn(ones, diagonal).expand_as(nz)):
                return {"pattern": {"kind": kind, "diagonal": diagonal}}
    return {}


def _target_name(target):
    name = str(target)
    if name.startswith("<built-in function "):
        return name[len("<built-in function "):-1]
    return name


def export_program(module, args, kwargs=None):
    """torch.export of module(*args, **kwargs) in eval mode, as export_graph reads it."""
    import torch

    module.eval()
    with torch.no_grad():
        return torch.export.export(module, tuple(args), kwargs=kwargs or {}, strict=False)


def export_graph(module, args, kwargs=None, dims=None, source_file=None, output_names=None, program=None):
    """The graph JSON object of module(*args, **kwargs) (docs/import.md, "Graph JSON");
    `program` is its torch.export program when the caller made it already."""
    import torch

    ep = program if program is not None else export_program(module, args, kwargs)
    roles = {}
    constants = {}
    for spec in ep.graph_signature.input_specs:
        kind = str(spec.kind).split(".")[-1].lower()
        role = {"user_input": "input", "parameter": "parameter", "buffer": "buffer",
                "constant_tensor": "buffer"}.get(kind, kind)
        roles[spec.arg.name] = (role, spec.target)
        if role == "buffer" and spec.target is not None:
            value = ep.state_dict.get(spec.target, ep.constants.get(spec.target))
            constants[spec.arg.name] = _describe_constant(value)
    user_outputs = [spec.arg.name for spec in ep.graph_signature.output_specs
                    if str(spec.kind).split(".")[-1].lower() == "user_output"]

    nodes = []
    for node in ep.graph.nodes:
        entry = {"name": node.name, "op": node.op}
        if node.op == "placeholder":
            role, target = roles.get(node.name, ("input", None))
            entry["role"] = role
            if target is not None:
                entry["target"] = target
            entry.update(_meta(node))
            if dims and role == "input" and node.name in dims:
                entry["dims"] = list(dims[node.name])
            entry.update(constants.get(node.name, {}))
        elif node.op == "call_function":
            entry["target"] = _target_name(node.target)
            entry["args"] = _arg(list(node.args))
            entry["kwargs"] = {k: _arg(v) for k, v in node.kwargs.items()}
            entry.update(_meta(node))
            where = _source_line(node, source_file)
            if where:
                entry.update(where)
        elif node.op == "output":
            results = node.args[0] if isinstance(node.args[0], (list, tuple)) else [node.args[0]]
            outs = []
            for i, r in enumerate(results):
                if r is None or getattr(r, "name", None) not in user_outputs:
                    continue
                name = output_names[i] if output_names and i < len(output_names) else (
                    "out" if len(results) == 1 else "out%d" % i)
                outs.append({"node": r.name, "name": name})
            entry["outputs"] = outs
        else:
            # get_attr, call_module, call_method: kept, so the importer names them
            entry["target"] = _target_name(node.target)
            where = _source_line(node, source_file)
            if where:
                entry.update(where)
        nodes.append(entry)

    return {
        "format": GRAPH_FORMAT,
        "version": GRAPH_VERSION,
        "module": type(module).__name__,
        "source": _relative(source_file) if source_file else None,
        "torch": torch.__version__,
        "nodes": nodes,
    }


def write_graph(graph, path):
    text = json.dumps(graph, indent=1, allow_nan=False) + "\n"
    if path == "-":
        sys.stdout.write(text)
        return
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
    os.replace(tmp, path)


def _load(path):
    spec = importlib.util.spec_from_file_location("napkin_model", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules["napkin_model"] = mod
    spec.loader.exec_module(mod)
    return mod


def main(argv=None):
    p = argparse.ArgumentParser(description="Export a PyTorch module's graph for napkin-cli import")
    p.add_argument("model", help="a .py file defining the factory")
    p.add_argument("--factory", default="build",
                   help="function returning (module, args) or (module, args, dims); default build")
    p.add_argument("--kwargs", default="{}", help="JSON object of keyword arguments for the factory")
    p.add_argument("-o", "--output", default="-", help="where to write the graph JSON (default stdout)")
    a = p.parse_args(argv)

    mod = _load(a.model)
    factory = getattr(mod, a.factory, None)
    if factory is None:
        p.error("%s defines no function %s" % (a.model, a.factory))
    made = factory(**json.loads(a.kwargs))
    module, args = made[0], made[1]
    dims = made[2] if len(made) > 2 else None
    write_graph(export_graph(module, args, dims=dims, source_file=a.model), a.output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
