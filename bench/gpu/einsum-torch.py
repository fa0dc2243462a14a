#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The torch baseline of einsum text files (the import format, docs/import.md): each file's
program run by PyTorch on the GPU in its dtype — contractions by torch.einsum (cuBLAS), the
element-wise maps by torch — timed as bench/gpu/sweep-baselines.py times every baseline
(its time_fn: warm-up, CUDA events, median; inputs rotated among copies where one set would
sit in L2), one table row a file. Beside bench/gpu/ab-env, which runs the same files
through Napkin.

    python3 bench/gpu/einsum-torch.py FILE.einsum...     (on the GPU machine)

Handles what the skinny-product files use: sizes, dtype, einsum lines, add/mul/sub maps,
outputs."""
import importlib.util, math, os, re, sys

HERE = os.path.dirname(os.path.abspath(__file__))
_spec = importlib.util.spec_from_file_location("sweep_baselines", os.path.join(HERE, "sweep-baselines.py"))
sb = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sb)
MAPS = ("add", "mul", "sub")


def parse(path):
    sizes, dtype, steps, outputs = {}, "fp16", [], []
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.startswith("dtype"):
            dtype = line.split()[1]
        elif line.startswith("output"):
            outputs += line.split()[1:]
        elif "->" in line:
            lhs, rhs = line.split("->", 1)
            name, op = [s.strip() for s in rhs.split("=", 1)]
            operands = lhs.split()
            m = re.match(r'einsum\("(.*)"\)', op)
            steps.append((name, m.group(1) if m else op, operands, bool(m)))
        else:
            for kv in line.split():
                k, v = kv.split("=")
                sizes[k] = int(v)
    return sizes, dtype, steps, outputs


def program(path):
    """The file's inputs (name → shape), its dtype, and fn(*inputs) giving its outputs."""
    sizes, dtype, steps, outputs = parse(path)
    shapes = {}
    for name, op, operands, is_einsum in steps:
        if not is_einsum and op not in MAPS:
            raise ValueError("map “%s”: this reader runs %s" % (op, ", ".join(MAPS)))
        for o in operands:
            m = re.match(r"(\w+)\[(.*)\]", o)
            if m and m.group(1) not in shapes:
                shapes[m.group(1)] = [sizes[a.strip()] for a in m.group(2).split(",")]
    names = list(shapes)

    def run(*tensors):
        env = dict(zip(names, tensors))
        for name, op, operands, is_einsum in steps:
            args = [env[re.match(r"(\w+)", o).group(1)] for o in operands]
            env[name] = sb.torch.einsum(op, *args) if is_einsum else getattr(sb.torch, op)(*args)
        return [env[o] for o in outputs]
    return shapes, dtype, run


def main():
    sb.import_torch()
    l2 = getattr(sb.torch.cuda.get_device_properties(0), "L2_cache_size", 50 * 2**20)
    print("| case | torch ms |")
    print("|---|---|")
    for path in sys.argv[1:]:
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        try:
            shapes, dtype, run = program(path)
            t = sb.DT[dtype]
            per = sum(math.prod(s) for s in shapes.values()) * sb.torch.empty((), dtype=t).element_size()
            sets = [tuple(sb.rand(s, t) for s in shapes.values()) for _ in range(sb.n_sets(per, l2))]
            print("| %s | %.4f |" % (name, sb.time_fn(run, sets, 20)[0]), flush=True)
        except Exception as e:   # a file this reader does not handle: say so, go on
            print("| %s | failed: %s |" % (name, str(e)[:80]), flush=True)


if __name__ == "__main__":
    main()
