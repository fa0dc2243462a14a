#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Scale benchmark (docs/security.md, "Scale"): time and peak memory of napkin-cli
validate, analyze, tune, codegen and render on large diagrams and large files.

  bench/scale-bench.py [BUILDDIR] [--quick] [--markdown]

Diagrams: a chain of 1 000, 10 000 and 100 000 elementwise maps in one shared-memory
region (the shape that made the lowering recurse and the model quadratic), and the
attention-like chain of tests/common at the same sizes (contractions, softmax,
streamed regions). Files of 1, 16 and 64 MB: the 10 000-map chain with long labels
(real items), and matmul with an unknown field holding an array of {} (the densest
JSON there is, kept for the round trip). The importers (einsum text and graph JSON chains) and tune of diagrams without regions
(the map and attention chains with their regions removed) at 1 000, 10 000 and 100 000
operations: goals 2 s and 10 s of CPU at 100 000, each within 1 GB (tune may refuse a
diagram too large to derive kernels for, with its message). Each command runs in its own process; its
peak memory is the child's maximum resident set (getrusage), its time the wall
clock and the CPU time (user and system; on a shared machine the time goals are
checked on CPU time); files are made by a child process, so that this one stays small (a child's
peak memory counts what its parent held when it forked). Goals (docs/security.md §7):
analyze of 100 000 operations under 1 s, tune under 10 s, and for the
1, 16 and 64 MB files peak memory of validate, analyze, tune and codegen under 20
times the file's size (beyond the memory of the same command on a 10-operation
file, printed as the baseline; the ratio is printed for every case). render
is reported with the size of what it wrote (an SVG of 10 000 operations is 17 times
its diagram's file). The time goals are for that section's shape, 100 000 operations in
one region; the attention chain (up to 256 regions) is shown beside it. A command
gets at most 120 s (tune over hundreds of regions takes longer: shown as a
timeout). --quick stops at 10 000 operations and 16 MB.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time

FNS = ["relu", "exp", "scale", "gelu"]


def map_chain(n, pad=0):
    label = "l" * pad
    parts = ['{"format": "napkin", "version": 1, "title": "Chain of maps", "axes": [{"name": "r", "size": 4096}, '
             '{"name": "c", "size": 256}], "tensors": [{"name": "X", "axes": ["r", "c"], "dtype": "fp16"}, '
             '{"name": "Y", "axes": ["r", "c"], "dtype": "fp16"}], "nodes": [{"id": "x", "kind": "input", '
             '"tensor": "X", "x": 0, "y": 0}']
    for i in range(n):
        parts.append(', {"id": "n%d", "kind": "map", "fn": "%s", "label": "%s", "x": %d, "y": %d}'
                     % (i, FNS[i % 4], label, 100 + 120 * (i % 1000), 120 * (i // 1000)))
    parts.append(', {"id": "y", "kind": "output", "tensor": "Y", "x": 0, "y": %d}], "wires": ['
                 % (120 * (n // 1000 + 1)))
    for i in range(n + 1):
        src = "x" if i == 0 else "n%d" % (i - 1)
        dst = "y" if i == n else "n%d" % i
        parts.append('%s{"from": "%s", "to": "%s", "port": 0}' % (", " if i else "", src, dst))
    parts.append('], "regions": [{"name": "rows", "level": "smem", "nodes": [')
    parts.append(", ".join('"n%d"' % i for i in range(n)))
    parts.append('], "marks": {"r": {"parallel": 4}, "c": "whole"}}]}')
    return "".join(parts)


def attention_chain(n_ops):
    """Blocks of q·kᵀ, scale, softmax over k, ·v; every other block relabeled with the
    keys streamed (the online softmax), as tests/common's attention chain."""
    axes = [{"name": "q", "size": 1024}, {"name": "k", "size": 1024}, {"name": "d", "size": 64}]
    tensors = [{"name": "X", "axes": ["q", "d"], "dtype": "fp16"}, {"name": "K", "axes": ["k", "d"], "dtype": "fp16"},
               {"name": "V", "axes": ["k", "d"], "dtype": "fp16"}, {"name": "Y", "axes": ["q", "d"], "dtype": "fp16"}]
    nodes = [{"id": "x", "kind": "input", "tensor": "X", "x": 0, "y": 0},
             {"id": "kk", "kind": "input", "tensor": "K", "x": 0, "y": 200},
             {"id": "vv", "kind": "input", "tensor": "V", "x": 0, "y": 400}]
    wires, regions = [], []
    prev = "x"
    blocks = max(1, (n_ops - 4) // 4)
    for b in range(blocks):
        s, sc, sm, o = "s%d" % b, "c%d" % b, "m%d" % b, "o%d" % b
        x0 = 200 + 500 * (b % 200)
        y0 = 600 * (b // 200)
        nodes += [{"id": s, "kind": "contract", "out": ["q", "k"], "x": x0, "y": y0},
                  {"id": sc, "kind": "map", "fn": "scale", "alpha": 0.125, "x": x0 + 100, "y": y0},
                  {"id": sm, "kind": "softmax", "axis": "k", "x": x0 + 200, "y": y0},
                  {"id": o, "kind": "contract", "out": ["q", "d"], "x": x0 + 300, "y": y0}]
        wires += [{"from": prev, "to": s, "port": 0}, {"from": "kk", "to": s, "port": 1},
                  {"from": s, "to": sc, "port": 0}, {"from": sc, "to": sm, "port": 0},
                  {"from": sm, "to": o, "port": 0}, {"from": "vv", "to": o, "port": 1}]
        if b % 2 == 0:
            regions.append({"name": "att%d" % b, "level": "smem", "nodes": [s, sc, sm, o],
                            "marks": {"q": {"parallel": 128}, "k": {"stream": 64}, "d": "whole"}})
        prev = o
    nodes.append({"id": "y", "kind": "output", "tensor": "Y", "x": 0, "y": 800})
    wires.append({"from": prev, "to": "y", "port": 0})
    doc = {"format": "napkin", "version": 1, "title": "Attention chain", "axes": axes, "tensors": tensors,
           "nodes": nodes, "wires": wires, "regions": regions[:256]}
    return json.dumps(doc)


def empty_objects(size, matmul):
    text = open(matmul).read()
    head = text[:text.rindex("}")] + ', "x_junk": [{}'
    count = max(0, (size - len(head) - 2) // 3)
    return head + ",{}" * count + "]}"


def padded_chain(size):
    """The 10 000-map chain with labels long enough to make the file `size` bytes."""
    base = len(map_chain(10000))
    pad = max(0, (size - base) // 10000)
    return map_chain(10000, pad)


def einsum_chain(n):
    """n operations of einsum text: an input, n − 2 maps and the output the import adds."""
    lines = ["r=4096 c=256", "x0[r,c] -> x1 = exp"]
    lines += ["x%d -> x%d = %s" % (i, i + 1, FNS[i % 4] if FNS[i % 4] != "scale" else "scale(0.5)")
              for i in range(1, n - 2)]
    return "\n".join(lines) + "\n"


def graph_chain(n):
    """n operations of the exporter's graph JSON: a placeholder, n − 2 calls, the output."""
    nodes = [{"name": "x", "op": "placeholder", "role": "input", "shape": [4096, 256], "dtype": "fp16",
              "dims": ["r", "c"]}]
    for i in range(n - 2):
        nodes.append({"name": "e%d" % i, "op": "call_function", "target": "aten.exp.default",
                      "args": [{"node": "x" if i == 0 else "e%d" % (i - 1)}], "kwargs": {}, "shape": [4096, 256],
                      "dtype": "fp16"})
    nodes.append({"name": "output", "op": "output", "outputs": [{"node": "e%d" % (n - 3)}]})
    return json.dumps({"format": "napkin-graph", "version": 1, "module": "Chain", "nodes": nodes})


def without_regions(text):
    doc = json.loads(text)
    doc["regions"] = []
    return json.dumps(doc)


def generate(kind, param, path):
    """Writes one case's file, in this (child) process."""
    source = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    matmul = os.path.join(source, "data", "examples", "matmul.napkin")
    makers = {"maps": lambda p: map_chain(p - 2), "attention": attention_chain, "labels": padded_chain,
              "empty": lambda p: empty_objects(p, matmul), "small": map_chain, "einsum": einsum_chain,
              "graph": graph_chain, "maps-bare": lambda p: without_regions(map_chain(p - 2)),
              "attention-bare": lambda p: without_regions(attention_chain(p))}
    with open(path, "w") as f:
        f.write(makers[kind](int(param)))


def run(cli, args, timeout):
    """Wall time (s), peak memory (KiB) and exit status of one command."""
    start = time.monotonic()
    with open(os.devnull, "wb") as null, tempfile.TemporaryFile() as errors:
        proc = subprocess.Popen([cli] + args, stdout=null, stderr=errors)
        try:
            _, status, usage = wait_with_timeout(proc, timeout)
        except TimeoutError:
            return None, None, "timeout", ""
        seconds = time.monotonic() - start
        errors.seek(0)
        err = errors.read().decode("utf-8", "replace").strip().splitlines()
    code = os.waitstatus_to_exitcode(status)
    return (seconds, usage.ru_utime + usage.ru_stime), usage.ru_maxrss, code, err[-1] if err else ""


def wait_with_timeout(proc, timeout):
    deadline = time.monotonic() + timeout
    while True:
        pid, status, usage = os.wait4(proc.pid, os.WNOHANG)
        if pid == proc.pid:
            return pid, status, usage
        if time.monotonic() > deadline:
            proc.kill()
            os.wait4(proc.pid, 0)
            raise TimeoutError
        time.sleep(0.01)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--generate":
        generate(sys.argv[2], sys.argv[3], sys.argv[4])
        return
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    quick = "--quick" in sys.argv
    markdown = "--markdown" in sys.argv
    build = args[0] if args else "_build"
    cli = os.path.join(build, "src", "cli", "napkin-cli")
    if not os.access(cli, os.X_OK):
        sys.exit("scale-bench: %s is not built" % cli)
    # an uninstalled build finds the architectures in the source tree's data/
    os.environ.setdefault("NAPKIN_DATA_DIR", os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data"))

    tmp = tempfile.mkdtemp(prefix="napkin-scale-")
    out_svg = os.path.join(tmp, "out.svg")
    commands = [("validate", []), ("analyze", []), ("tune", []), ("codegen", []), ("render", ["-o", out_svg])]
    cases = []
    for n in ([1000, 10000] if quick else [1000, 10000, 100000]):
        cases.append(("maps, one region", "%d ops" % n, "maps", n, n))
        cases.append(("attention chain", "%d ops" % n, "attention", n, n))
    for mb in ([1, 16] if quick else [1, 16, 64]):
        size = mb * 1024 * 1024 - (1 if mb == 64 else 0)   # the loader reads at most 64 MiB
        cases.append(("10k maps, long labels", "%d MB" % mb, "labels", size, None))
        cases.append(("matmul + [{}, …]", "%d MB" % mb, "empty", size, None))

    def make(kind, param, path):
        subprocess.run([sys.executable, os.path.abspath(__file__), "--generate", kind, str(param), path], check=True)

    # The memory a command takes on a small file: the process itself.
    small = os.path.join(tmp, "small.napkin")
    make("small", 10, small)
    baseline = {}
    for name, extra in commands:
        _, rss, _, _ = run(cli, [name, small] + extra, 60)
        baseline[name] = rss

    rows = []
    failures = []
    for kind, label, gen, param, n_ops in cases:
        path = os.path.join(tmp, "case.napkin")
        make(gen, param, path)
        size = os.path.getsize(path)
        for name, extra in commands:
            times, rss, code, err = run(cli, [name, path] + extra, 120)
            if code == "timeout":
                rows.append((kind, label, size, name, "> 120", "", "", "", "timeout"))
                if n_ops == 100000 and name in ("analyze", "tune") and gen == "maps":
                    failures.append("%s %s %s: timeout" % (kind, label, name))
                continue
            net = max(0, rss - baseline[name]) * 1024
            ratio = net / size
            note = "ok" if code == 0 else "exit %s: %s" % (code, err[:60])
            # a command that did not do its work measures nothing: a usage error or a crash is
            # a failure, not a goal met; exit 1 with its message is a refusal, shown in the
            # table (render past its output limit, codegen of a chain with more device-memory
            # buffers than a kernel's parameters hold: docs/security.md, "Scale")
            if code != 0 and not (name in ("render", "codegen") and code == 1):
                failures.append("%s %s %s: %s" % (kind, label, name, note))
            if name == "render" and code == 0 and os.path.exists(out_svg):
                note = "ok, wrote %.1f MB" % (os.path.getsize(out_svg) / 1e6)
                os.unlink(out_svg)
            seconds, cpu = times
            if name == "analyze" and n_ops == 100000 and gen == "maps" and cpu >= 1.0:
                failures.append("%s %s analyze: %.2f s of CPU (goal < 1 s)" % (kind, label, cpu))
            if name == "tune" and n_ops == 100000 and gen == "maps" and cpu >= 10.0:
                failures.append("%s %s tune: %.2f s of CPU (goal < 10 s)" % (kind, label, cpu))
            if name != "render" and n_ops is None and ratio >= 20:
                failures.append("%s %s %s: %.1f× the file (goal < 20×)" % (kind, label, name, ratio))
            rows.append((kind, label, size, name, "%.3f" % seconds, "%.3f" % cpu, "%.1f" % (rss / 1024.0),
                         "%.1f" % ratio, note))
        os.unlink(path)

    # The importers (einsum text, graph JSON) and tune of diagrams without regions
    # (docs/security.md, "Scale"): 100 000 operations import in 2 s and tune in 10 s of
    # CPU, each within 1 GB; tune may refuse a diagram too large to derive kernels for,
    # with its message (exit 1), in that time.
    out_napkin = os.path.join(tmp, "out.napkin")
    bounded = []
    for n in ([1000, 10000] if quick else [1000, 10000, 100000]):
        bounded += [("einsum chain", n, "einsum", ["import", "{in}", "-o", out_napkin], ".einsum", 2.0),
                    ("graph chain", n, "graph", ["import", "{in}", "-o", out_napkin], ".json", 2.0),
                    ("maps, no regions", n, "maps-bare", ["tune", "{in}"], ".napkin", 10.0),
                    ("attention, no regions", n, "attention-bare", ["tune", "{in}"], ".napkin", 10.0)]
    for kind, n, gen, argv, suffix, goal in bounded:
        path = os.path.join(tmp, "case" + suffix)
        make(gen, n, path)
        size = os.path.getsize(path)
        times, rss, code, err = run(cli, [a.replace("{in}", path) for a in argv], 120)
        label = "%d ops" % n
        if code == "timeout":
            rows.append((kind, label, size, argv[0], "> 120", "", "", "", "timeout"))
            failures.append("%s %s %s: timeout" % (kind, label, argv[0]))
            os.unlink(path)
            continue
        seconds, cpu = times
        note = "ok" if code == 0 else "exit %s: %s" % (code, err[:70])
        if code != 0 and not (argv[0] == "tune" and code == 1):
            failures.append("%s %s %s: %s" % (kind, label, argv[0], note))
        if n == 100000 and cpu > goal:
            failures.append("%s %s %s: %.2f s of CPU (goal ≤ %g s)" % (kind, label, argv[0], cpu, goal))
        if rss > 1024 * 1024:
            failures.append("%s %s %s: %.0f MB (goal ≤ 1 GB)" % (kind, label, argv[0], rss / 1024.0))
        rows.append((kind, label, size, argv[0], "%.3f" % seconds, "%.3f" % cpu, "%.1f" % (rss / 1024.0), "", note))
        os.unlink(path)
        if os.path.exists(out_napkin):
            os.unlink(out_napkin)

    header = ("case", "size", "bytes", "command", "wall s", "CPU s", "peak MB", "net ×file", "result")
    if markdown:
        print("| " + " | ".join(header) + " |")
        print("|" + "---|" * len(header))
        for r in rows:
            print("| " + " | ".join(str(c) for c in r) + " |")
    else:
        widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
        for r in [header] + rows:
            print("  ".join(str(c).ljust(widths[i]) for i, c in enumerate(r)).rstrip())
    print("baseline peak MB (a 10-operation file): " +
          ", ".join("%s %.1f" % (k, v / 1024.0) for k, v in baseline.items()))
    for name in os.listdir(tmp):
        os.unlink(os.path.join(tmp, name))
    os.rmdir(tmp)
    if failures:
        print("scale-bench: goals missed:\n  " + "\n  ".join(failures))
        sys.exit(1)
    print("scale-bench: every goal met")


if __name__ == "__main__":
    main()
