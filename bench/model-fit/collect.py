#!/usr/bin/env python3
"""The model's calibration dataset, rebuilt on the CPU from recorded GPU runs
(docs/perf-notes.md, "Model refit on recorded runs"): every kernel measurement whose problem
can be regenerated here, next to what the current model predicts for it, with the kernel's
family and shape.

  collect.py [--cli PATH] [--out DATASET.json] [--table] [--plans PLANS.json]

Sources (docs/gpu-runs/):
  zoo      2026-11-29-h200-s8-zoo-e2e: the imported modules' kernels, one row per kernel
           (measured per kernel by the runner), planned and priced on the run's calibrated
           profile (h200-measured of user-path-final: the same session's calibration)
  up1      2026-11-29-h200-s8-user-path-1: the user's path, seed 26, cases of part 1, one row
           per case (the case's kernels together), on the datasheet profile h200 (the run's)
  up2      2026-11-29-h200-s8-user-path-2: part 2, h200
  upf      2026-11-29-h200-s8-user-path-final: all 64 cases re-run on h200-measured
  strided  2026-11-29-h200-s8-score-operands-and-strided-rows/rows-strided.txt: the strided
           rows kernels (napkin-rows-gen --strided, h200)

Halves: "fit" holds zoo, up1 and the part-1 cases of upf, and the even-numbered strided
problems; "held" holds up2, the other upf cases and the odd-numbered strided problems.
Problems that ran a different kernel than the current plan makes (a generic kernel then) are
left out and listed.

Each case is rebuilt as the run built it: einsum text (bench/gpu/user-path.py --write, seed
26) or the stored graph (tests/import), `napkin-cli import`, `tune --apply` on the run's
profile, then `analyze --format json` and `plan --format json`. Standard library only."""
import argparse, json, os, re, shutil, statistics, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
RUNS = os.path.join(ROOT, "docs", "gpu-runs")
ZOO_DIR = os.path.join(RUNS, "2026-11-29-h200-s8-zoo-e2e")
MEASURED = os.path.join(RUNS, "2026-11-29-h200-s8-user-path-final", "h200-measured.json")
# zoo-e2e's module names → the stored graph
ZOO_GRAPH = {"gpt2_medium_block": "tests/import/zoo/hf_gpt2_block.graph.json",
             "vit_l16_block": "tests/import/zoo/timm_vit_block.graph.json",
             "llama3_8b_block": "tests/import/llama-block.graph.json"}
# the latest call that timed each module (the rotary views came last)
ZOO_LOGS = ["e2e-all-zoo-views.log", "e2e-rotary-views.log"]


def sh(cmd, env, timeout=600):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError("%s: %s" % (" ".join(cmd[:3]), (r.stderr or r.stdout).strip()[-600:]))
    return r.stdout


def derive(cli, source, arch, work, env):
    """import → tune --apply → (analyze, plan) JSON, as the runs did."""
    base = os.path.join(work, os.path.basename(source).split(".")[0] + "." + arch)
    path = base + ".napkin"
    sh([cli, "import", source, "-o", path], env)
    sh([cli, "tune", path, "--arch", arch, "--apply"], env)
    an = json.loads(sh([cli, "analyze", path, "--arch", arch, "--format", "json"], env))
    plan = json.loads(sh([cli, "plan", path, "--arch", arch, "--format", "json"], env))
    return path, an, plan


def family(pk, plan_kernels):
    """A kernel's family from its plan: what the model prices it as."""
    kind = pk.get("kind")
    note = pk.get("note", "")
    if kind == "gemm":
        repacked = any(k.get("kind") == "repack" and k.get("region") == pk.get("region") for k in plan_kernels)
        if repacked or "bounded" in note and "unaligned" in note:
            return "gemm-misaligned"
        if pk.get("fused"):
            return "gemm-epilogue"
        return "gemm"
    if kind == "attention":
        return "attention-split-kv" if pk.get("split_kv", 1) > 1 else "attention"
    if kind == "rows":
        if "over" in note and "apart" in note or "strided" in note:
            return "rows-strided"
        return "rows-1pass" if pk.get("one_pass") else "rows-2pass"
    return kind or "?"


def shape(pk):
    s = pk.get("shape")
    return "x".join(str(x) for x in s) if s else ""


def kernel_rows(an, plan):
    """analyze's kernels joined with the plan's (a repack or a combine joins its main kernel)."""
    pks = plan.get("kernels", [])
    out = []
    for k in an.get("kernels", []):
        name = k["name"]
        base = re.sub(r" \((repack|attention-combine|split-reduce)\)$", "", name)
        helper = base != name
        main = [p for p in pks if (p.get("region") == base or p.get("name") == base)
                and p.get("kind") not in ("repack", "attention-combine", "split-reduce")]
        pk = main[0] if main else {}
        out.append({"kernel": name, "base": base, "helper": helper, "pred_s": k["time_s"],
                    "latency_s": k.get("latency_s", 0), "bound": k.get("bound"),
                    "family": family(pk, pks) if pk else (k.get("plan") or "elementwise"),
                    "shape": shape(pk), "note": pk.get("note", k.get("note", "")),
                    "plan": {x: pk[x] for x in ("kind", "grid", "tiles", "fused", "split_kv", "stages", "split_k",
                                                "one_pass", "threads", "blocks_per_sm", "layout") if x in pk}})
    return out


def zoo_measured():
    got = {}
    for log in ZOO_LOGS:
        for line in open(os.path.join(ZOO_DIR, log)):
            m = re.match(r"== (\S+) \([0-9]+ s\): (\{.*\})\s*$", line)
            if m:
                rec = json.loads(m.group(2))
                if rec.get("status") == "ok":
                    got[rec["name"]] = rec
    return got


def read_table(path):
    rows = {}
    for line in open(path):
        p = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(p) > 11 and p[1] == "ok":
            rows[p[0]] = {"ms": float(p[3]), "pred_ms_then": float(p[4]), "paths": p[11]}
    return rows


def collect(cli, work):
    env = dict(os.environ)
    archdir = os.path.join(work, "archs")
    os.makedirs(archdir, exist_ok=True)
    shutil.copy(MEASURED, os.path.join(archdir, "h200-measured.json"))
    env["NAPKIN_ARCH_DIR"] = archdir + ":" + os.path.join(ROOT, "data", "archs")
    rows, left = [], []

    # the zoo: one row per kernel
    for name, rec in sorted(zoo_measured().items()):
        graph = os.path.join(ROOT, ZOO_GRAPH.get(name, "tests/import/zoo/%s.graph.json" % name))
        _, an, plan = derive(cli, graph, "h200-measured", work, env)
        ks = kernel_rows(an, plan)
        for kname, kfam, pred_then, meas, _ in rec["per_kernel"]:
            mine = [k for k in ks if k["base"] == kname]
            if not mine:
                left.append("zoo %s %s: no such kernel in today's plan" % (name, kname))
                continue
            main = [k for k in mine if not k["helper"]][0]
            rows.append({"source": "zoo", "half": "fit", "case": name, "kernel": kname,
                         "family": main["family"], "shape": main["shape"], "arch": "h200-measured",
                         "measured_ms": meas * 1, "predicted_ms": sum(k["pred_s"] for k in mine) * 1e3,
                         "predicted_then_ms": pred_then, "note": main["note"], "plan": main["plan"]})

    # the user's path: one row per case
    updir = os.path.join(work, "user-path")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu", "user-path.py"), "--write", updir,
                    "--cases", "64", "--seed", "26"], capture_output=True, check=True)
    t1 = read_table(os.path.join(RUNS, "2026-11-29-h200-s8-user-path-1", "table.md"))
    t2 = read_table(os.path.join(RUNS, "2026-11-29-h200-s8-user-path-2", "table-part2.md"))
    tf = read_table(os.path.join(RUNS, "2026-11-29-h200-s8-user-path-final", "table.md"))
    cache = {}
    for src, table, arch in (("up1", t1, "h200"), ("up2", t2, "h200"), ("upf", tf, "h200-measured")):
        for case, rec in table.items():
            half = "fit" if case in t1 else "held"
            if "generic" in rec["paths"]:
                left.append("%s %s: ran a generic kernel then" % (src, case))
                continue
            key = (case, arch)
            if key not in cache:
                cache[key] = derive(cli, os.path.join(updir, case + ".einsum"), arch, work, env)
            _, an, plan = cache[key]
            ks = kernel_rows(an, plan)
            mains = [k for k in ks if not k["helper"]]
            fams = {k["family"] for k in mains}
            fam = sorted(fams)[0] if len(fams) == 1 else "+".join(sorted(fams))
            if any(k["helper"] and "repack" in k["kernel"] for k in ks):
                fam = "gemm-misaligned"
            if fam.startswith("gemm") and "unaligned" in " ".join(k["note"] for k in mains):
                fam = "gemm-misaligned"
            rows.append({"source": src, "half": half, "case": case, "kernel": "+".join(k["kernel"] for k in ks),
                         "family": fam, "shape": " ".join(k["shape"] for k in mains), "arch": arch,
                         "measured_ms": rec["ms"], "predicted_ms": an["predicted_time_s"] * 1e3,
                         "predicted_then_ms": rec["pred_ms_then"], "note": " | ".join(k["note"] for k in mains),
                         "plan": [k["plan"] for k in mains]})

    # the strided rows kernels, predicted by the generator the check used
    gen = os.path.join(os.path.dirname(os.path.dirname(cli)), "..", "bench", "gpu", "rows-prims", "napkin-rows-gen")
    text = open(os.path.join(RUNS, "2026-11-29-h200-s8-score-operands-and-strided-rows", "rows-strided.txt")).read()
    check = os.path.join(ROOT, "bench", "gpu", "rows-prims", "check-strided")
    problems = re.search(r"<<'TABLE'\n(.*?)\nTABLE", open(check).read(), re.S).group(1).splitlines()
    i = 0
    for line in problems:
        if line.startswith("#") or not line.strip():
            continue
        name, op, outer, length, inner, x, y, flags = line.split()
        m = re.search(r"^%s: status=ok ms=([0-9.]+)" % re.escape(name), text, re.M)
        i += 1
        if not m:
            left.append("strided %s: not ok then" % name)
            continue
        args = [gen, "--op", op, "--cols", length, "--rows", inner, "--x", x, "--y", y, "--arch", "h200",
                "--strided"]
        if int(outer) > 1:
            args += ["--batch", outer]
        args += ["--gamma"] if "g" in flags else []
        args += ["--beta"] if "b" in flags else []
        args += ["--residual", "--fuse"] if "r" in flags else []
        out = sh(args, env)
        pred = float(re.search(r"H_PREDICTED_MS\s+\(?([0-9.eE+-]+)", out).group(1))
        plan_note = (re.search(r"/\* plan: (.*?) \*/", out) or re.search(r"$^", "")).group(1) if "/* plan:" in out else ""
        then = re.search(r"^%s: .*predicted=([0-9.]+)" % re.escape(name), text, re.M)
        rows.append({"source": "strided", "half": "fit" if i % 2 == 1 else "held", "case": name, "kernel": op,
                     "family": "rows-strided", "shape": "%sx%sx%s" % (outer, length, inner), "arch": "h200",
                     "measured_ms": float(m.group(1)), "predicted_ms": pred,
                     "predicted_then_ms": float(then.group(1)) if then else None, "note": plan_note})
    return rows, left


def summary(rows, key="predicted_ms"):
    """family → half → (n, median measured/predicted, share within 1.5×)"""
    out = {}
    for r in rows:
        ratio = r["measured_ms"] / r[key] if r[key] else float("inf")
        for fam in (r["family"], "all"):
            out.setdefault(fam, {}).setdefault(r["half"], []).append(ratio)
    return {f: {h: (len(v), statistics.median(v), sum(1 for x in v if 1 / 1.5 <= x <= 1.5) / len(v))
                for h, v in hs.items()} for f, hs in out.items()}


def print_table(rows, before=None):
    s = summary(rows)
    b = summary(before) if before else None
    print("| family | half | n | median measured/predicted | within 1.5× |" + (" before: median | before: within 1.5× |" if b else ""))
    print("|---|---|---:|---:|---:|" + ("---:|---:|" if b else ""))
    for fam in sorted(s, key=lambda f: (f == "all", f)):
        for half in ("fit", "held"):
            if half not in s[fam]:
                continue
            n, med, within = s[fam][half]
            line = "| %s | %s | %d | %.2f | %d of %d |" % (fam, half, n, med, round(within * n), n)
            if b:
                bb = b.get(fam, {}).get(half)
                line += " %.2f | %d of %d |" % (bb[1], round(bb[2] * bb[0]), bb[0]) if bb else " - | - |"
            print(line)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "_build", "src", "cli", "napkin-cli"))
    ap.add_argument("--out", help="write the dataset (JSON rows) here")
    ap.add_argument("--before", help="a dataset written before a change: print both")
    ap.add_argument("--rows", action="store_true", help="print every row")
    a = ap.parse_args(argv)
    work = tempfile.mkdtemp(prefix="napkin-model-fit-")
    try:
        rows, left = collect(os.path.abspath(a.cli), work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if a.out:
        with open(a.out, "w") as f:
            json.dump({"rows": rows, "left_out": left}, f, indent=1)
    if a.rows:
        for r in sorted(rows, key=lambda r: (r["family"], r["half"], r["case"])):
            print("%-18s %-4s %-7s %-40s %-22s %9.4f %9.4f %5.2f" % (
                r["family"], r["half"], r["source"], r["case"][:40], r["kernel"][:22], r["measured_ms"],
                r["predicted_ms"], r["measured_ms"] / r["predicted_ms"]))
    before = json.load(open(a.before))["rows"] if a.before else None
    print_table(rows, before)
    for l in left:
        print("left out:", l)
    return 0


if __name__ == "__main__":
    sys.exit(main())
