#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The torch baseline of einsum text files (the import format, docs/import.md): each file's
program run by PyTorch on the GPU in its dtype — contractions by torch.einsum (cuBLAS), the
element-wise maps by torch — timed by CUDA events (median of REPEATS after a warm-up), one
table row a file. Beside bench/gpu/ab-env, which runs the same files through Napkin.

    python3 bench/gpu/einsum-torch.py FILE.einsum...     (on the GPU machine)

Handles what the skinny-product files use: sizes, dtype, einsum lines, add/mul maps,
outputs."""
import re, statistics, sys

import torch

DTYPES = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}
MAPS = {"add": torch.add, "mul": torch.mul, "sub": torch.sub}


def parse(path):
    sizes, dtype, steps, outputs = {}, torch.float16, [], []
    for line in open(path):
        line = line.split("#")[0].strip()
        if not line:
            continue
        if line.startswith("dtype"):
            dtype = DTYPES[line.split()[1]]
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
    sizes, dtype, steps, outputs = parse(path)
    tensors = {}
    for name, op, operands, is_einsum in steps:
        for o in operands:
            m = re.match(r"(\w+)\[(.*)\]", o)
            if m and m.group(1) not in tensors:
                shape = [sizes[a.strip()] for a in m.group(2).split(",")]
                tensors[m.group(1)] = torch.randn(shape, device="cuda", dtype=dtype)

    def names(operands):
        return [re.match(r"(\w+)", o).group(1) for o in operands]

    def run():
        env = dict(tensors)
        for name, op, operands, is_einsum in steps:
            args = [env[n] for n in names(operands)]
            env[name] = torch.einsum(op, *args) if is_einsum else MAPS[op](*args)
        return [env[o] for o in outputs]
    return run


def time_ms(fn, repeats=20):
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(repeats):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def main():
    print("| case | torch ms |")
    print("|---|---|")
    for path in sys.argv[1:]:
        name = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
        try:
            print("| %s | %.4f |" % (name, time_ms(program(path))), flush=True)
        except Exception as e:   # a file this reader does not handle: say so, go on
            print("| %s | failed: %s |" % (name, str(e)[:80]), flush=True)


if __name__ == "__main__":
    main()
