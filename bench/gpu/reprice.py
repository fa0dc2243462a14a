#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""Re-price recorded user's-path runs with this tree's model, on the CPU (docs/perf-notes.md,
"Session 22"): each recorded case's einsum text regenerated from its draw, imported,
`tune --apply`, `analyze --arch h200`, beside the time the GPU measured for it.

    bench/gpu/reprice.py --cli _build/src/cli/napkin-cli --out DIR RUN.json:SEED:CASES ...
    bench/gpu/reprice.py --compare A/reprice.json B/reprice.json

The plan may differ from the one that ran where the model's choice changed since; such
rows compare a new plan's price with an old plan's time (the --compare listing names
every case whose price moved by more than 3 %)."""
import argparse, concurrent.futures, importlib.util, json, os, statistics, subprocess, sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
_spec = importlib.util.spec_from_file_location("user_path", os.path.join(HERE, "user-path.py"))
up = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(up)       # its sweep-run module runs napkin-cli with a backstop


def reprice(args):
    os.environ.setdefault("NAPKIN_DATA_DIR", os.path.join(ROOT, "data"))
    os.makedirs(args.out, exist_ok=True)
    jobs = []
    for spec in args.runs:
        path, seed, n = spec.split(":")
        d = os.path.join(args.out, "seed" + seed)
        if not os.path.isdir(d):
            subprocess.run([sys.executable, os.path.join(HERE, "user-path.py"), "--write", d, "--seed", seed,
                            "--cases", n], stdout=subprocess.DEVNULL, check=True)
        for name, c in json.load(open(path))["cases"].items():
            if c.get("status") == "ok" and (c.get("time_ms") or {}).get("median"):
                jobs.append((d, name, c["time_ms"]["median"]))

    def one(job):
        d, name, measured = job
        einsum, napkin = os.path.join(d, name + ".einsum"), os.path.join(d, name + ".napkin")
        row = {"name": name, "measured_ms": measured, "predicted_ms": None, "kernels": []}
        if not os.path.exists(einsum):
            return row
        steps = [["import", einsum, "-o", napkin], ["tune", napkin, "--arch", args.arch, "--apply"]]
        for step in steps:
            if up.sr.run_cli([args.cli] + step, 300)[0] != 0:
                return row
        rc, out, _, _ = up.sr.run_cli([args.cli, "analyze", napkin, "--arch", args.arch, "--json"], 120)
        try:
            a = json.loads(out)
        except (TypeError, ValueError):
            return row
        row["predicted_ms"] = a["predicted_time_s"] * 1e3
        row["kernels"] = [[k["name"], k.get("plan"), k["time_s"] * 1e3] for k in a["kernels"]]
        return row

    with concurrent.futures.ThreadPoolExecutor(os.cpu_count() or 2) as ex:
        rows = list(ex.map(one, jobs))
    json.dump(rows, open(os.path.join(args.out, "reprice.json"), "w"), indent=1)
    summary(rows, args.out)


def ratios(rows):
    return {r["name"]: r["measured_ms"] / r["predicted_ms"] for r in rows if r["predicted_ms"]}


def summary(rows, label):
    x = ratios(rows)
    v = list(x.values())
    print("%s: %d cases, measured/predicted median %.3f, within 1.5× %d, within 1.25× %d"
          % (label, len(v), statistics.median(v), sum(1 / 1.5 <= r <= 1.5 for r in v),
             sum(1 / 1.25 <= r <= 1.25 for r in v)))
    for name, r in sorted(x.items(), key=lambda t: t[1]):
        if not 1 / 1.5 <= r <= 1.5:
            print("  outside 1.5×: %-44s %.2f" % (name, r))


def compare(a_path, b_path):
    a, b = json.load(open(a_path)), json.load(open(b_path))
    summary(a, a_path)
    summary(b, b_path)
    pa = {r["name"]: r for r in a}
    for r in b:
        o = pa.get(r["name"])
        if o and o["predicted_ms"] and r["predicted_ms"] and abs(r["predicted_ms"] / o["predicted_ms"] - 1) > 0.03:
            print("  moved %-44s measured %.4f  %.4f (%.2f) → %.4f (%.2f)"
                  % (r["name"], r["measured_ms"], o["predicted_ms"], r["measured_ms"] / o["predicted_ms"],
                     r["predicted_ms"], r["measured_ms"] / r["predicted_ms"]))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--cli", default=os.path.join(ROOT, "_build", "src", "cli", "napkin-cli"))
    ap.add_argument("--arch", default="h200")
    ap.add_argument("--out", default="/tmp/reprice")
    ap.add_argument("--compare", nargs=2, metavar=("A", "B"))
    ap.add_argument("runs", nargs="*", help="user-path.json:SEED:CASES")
    args = ap.parse_args()
    if args.compare:
        compare(*args.compare)
    elif args.runs:
        reprice(args)
    else:
        ap.error("runs to re-price, or --compare A B")


if __name__ == "__main__":
    main()
