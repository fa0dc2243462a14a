#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Structural check of a diagram printed as PyTorch (no torch, no numpy): each argument of
forward() is first reshaped to its axes' sizes (INPUTS, AXES), and each tensor a module
holds (NAME=D0xD1x... on the command line) splits row-major into those axes: every module
dimension is the product of consecutive diagram axes. Exit 1 naming the first mismatch."""

import ast
import math
import sys


def main():
    tree = ast.parse(open(sys.argv[1]).read())
    top = {n.targets[0].id: n.value for n in tree.body if isinstance(n, ast.Assign)}
    axes = ast.literal_eval(top["AXES"])
    inputs = {k.value: [e.value for e in v.elts[0].elts] for k, v in zip(top["INPUTS"].keys, top["INPUTS"].values)}
    fwd = next(n for n in tree.body if isinstance(n, ast.FunctionDef) and n.name == "forward")
    args = [a.arg for a in fwd.args.args]
    if sorted(args) != sorted(inputs):
        sys.exit("forward's arguments %s are not INPUTS %s" % (args, sorted(inputs)))
    shaped = {}
    for st in fwd.body[:len(args)]:
        call = st.value
        if not (isinstance(st, ast.Assign) and isinstance(call, ast.Call) and call.func.attr == "reshape"
                and call.func.value.id == st.targets[0].id):
            sys.exit("line %d: expected “NAME = NAME.reshape(…)”" % st.lineno)
        shaped[st.targets[0].id] = [ast.literal_eval(a) for a in call.args]
    for name in args:
        want = [axes[a] for a in inputs[name]]
        if shaped.get(name) != want:
            sys.exit("%s: reshaped to %s, its axes %s are %s" % (name, shaped.get(name), inputs[name], want))
    for spec in sys.argv[2:]:
        name, dims = spec.split("=")
        held = [int(x) for x in dims.split("x")]
        sizes = shaped[name]
        i = 0
        for dim in held:  # row-major: consecutive axes multiply to each held dimension
            j = i
            while j < len(sizes) and math.prod(sizes[i:j]) < dim:
                j += 1
            if math.prod(sizes[i:j]) != dim:
                sys.exit("%s: the module's %s does not split row-major into %s" % (name, held, sizes))
            i = j
        if i != len(sizes):
            sys.exit("%s: the module's %s does not split row-major into %s" % (name, held, sizes))
        print("%s %s -> %s" % (name, held, sizes))


if __name__ == "__main__":
    main()
