#!/usr/bin/env python3
"""The sweep's table and summary (bench/gpu/sweep, docs/perf-notes.md "The sweep"): one row per
case from one or more result folders (each: work/cases.json, napkin.json, baselines.json, as
bench/gpu/sweep leaves them under $OUT), so that two calls of `sweep --part` print as one
table. Missing or broken files give rows with a status, never a traceback.

Usage: sweep-table.py OUT [OUT...] [--json FILE]
Standard library only."""
import argparse, collections, json, math, os, statistics, sys


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def num(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) and v > 0 else None


def paths_of(rec):
    """Kernels' paths, repeats counted: gemm-wgmma×2, rows+generic."""
    c = collections.Counter(rec.get("paths") or [])
    return "+".join(p if n == 1 else "%s×%d" % (p, n) for p, n in c.items()) or "-"


def status_of(rec):
    st = rec.get("status") or "missing"
    err = rec.get("max_rel")
    if st in ("ok", "wrong"):
        s = "%s %.1e" % (st, err) if err is not None else st
        if st == "wrong" and rec.get("bound"):
            s += " > %.0e" % rec["bound"]
        if rec.get("check_axes"):
            s += " (checked at %s)" % " ".join("%s=%d" % kv for kv in rec["check_axes"].items())
        elif not rec.get("checked"):
            s += " (unchecked)"
        return s
    return "%s: %s" % (st, (rec.get("message") or "").replace("\n", " ")[:70])


def rows_of(out):
    man = load(os.path.join(out, "work", "cases.json")) or {}
    nap = (load(os.path.join(out, "napkin.json")) or {}).get("cases", {})
    base = (load(os.path.join(out, "baselines.json")) or {}).get("results", {})
    cases = man.get("cases") or [{"name": n} for n in nap]
    rows = []
    for case in cases:
        name = case["name"]
        rec = nap.get(name) or {"status": "missing", "message": "no napkin result"}
        b = base.get(name) or {"error": "no baseline result"}
        t = num((rec.get("time_ms") or {}).get("median")) if rec.get("status") in ("ok", "wrong") else None
        p = num(rec.get("predicted_ms"))
        best = b.get("best") or {}
        comp = b.get("compile") or {}
        bt, ct = num(best.get("time_ms")), num(comp.get("time_ms"))
        cands = [(v, n) for v, n in ((bt, best.get("name")), (ct, "torch.compile")) if v]
        ref = min(cands) if cands else None
        row = {
            "case": name, "family": case.get("family"), "group": case.get("group"), "kind": case.get("kind"),
            "status": rec.get("status"),
            "napkin_ms": t, "predicted_ms": p,
            "pred_err": (t - p) / t if t and p else None,
            "meas_over_pred": t / p if t and p else None,
            "baseline_ms": bt, "baseline": best.get("name"), "baseline_error": b.get("error"),
            "compile_ms": ct, "compile_s": comp.get("compile_s"),
            "compile_note": comp.get("error") or comp.get("skipped"),
            "best_baseline_ms": ref[0] if ref else None, "best_baseline": ref[1] if ref else None,
            "ratio": ref[0] / t if ref and t and rec.get("status") == "ok" else None,
            "paths": rec.get("paths") or [], "path_text": paths_of(rec), "relabeled": rec.get("relabeled"),
            "as_drawn": rec.get("as_drawn"),
            "status_text": status_of(rec), "max_rel": rec.get("max_rel"),
            "flops": case.get("flops"), "bytes": case.get("bytes"),
            # the manifest's FLOPs (attention: 4·B·H·d per pair the mask keeps)
            "tflops": case["flops"] / (t * 1e9) if t and case.get("flops") else None,
        }
        rows.append(row)
    return rows


def fmt(v, f):
    return f % v if v is not None else "—"


def print_table(rows, head, file=sys.stdout):
    w = max([30] + [len(r["case"]) for r in rows])
    hdr = "%-*s %10s %10s %8s %7s  %-32s %10s %6s  %-22s %s" % (
        w, "case", "napkin ms", "pred ms", "pred err", "TFLOP/s", "baseline ms (name)", "compile ms", "ratio",
        "path(s)", "status / err")
    print(head, file=file)
    print(hdr, file=file)
    print("-" * len(hdr), file=file)
    for r in rows:
        bl = "%.4f (%s)" % (r["baseline_ms"], r["baseline"]) if r["baseline_ms"] else \
            "— (%s)" % (r["baseline_error"] or "none")[:26]
        cm = fmt(r["compile_ms"], "%.4f")
        path = r["path_text"] + ("*" if r["relabeled"] else " (drawn)" if r["as_drawn"] else "")
        print("%-*s %10s %10s %8s %7s  %-32s %10s %6s  %-22s %s" % (
            w, r["case"], fmt(r["napkin_ms"], "%.4f"), fmt(r["predicted_ms"], "%.4f"),
            fmt(None if r["pred_err"] is None else 100 * r["pred_err"], "%+.0f%%"), fmt(r["tflops"], "%.1f"), bl[:32], cm,
            fmt(r["ratio"], "%.2f"), path[:22], r["status_text"]), file=file)


def summary(rows):
    ok = [r for r in rows if r["status"] == "ok"]
    ratios = [r["ratio"] for r in ok if r["ratio"]]
    errs = [abs(r["pred_err"]) for r in ok if r["pred_err"] is not None]
    mp = [r["meas_over_pred"] for r in ok if r["meas_over_pred"]]
    ran = [r for r in rows if r["paths"]]
    generic = [r["case"] for r in ran if "generic" in r["paths"]]
    failed = [r for r in rows if r["status"] != "ok"]
    groups = {}
    for g in sorted({r["group"] for r in rows if r.get("group")}):
        gr = [r for r in ok if r["group"] == g]
        gx = [r["ratio"] for r in gr if r["ratio"]]
        ge = [abs(r["pred_err"]) for r in gr if r["pred_err"] is not None]
        groups[g] = {"cases": sum(1 for r in rows if r["group"] == g), "ok": len(gr), "with_ratio": len(gx),
                     "ratio_ge_090": sum(1 for x in gx if x >= 0.9), "lowest_ratio": min(gx) if gx else None,
                     "median_ratio": statistics.median(gx) if gx else None,
                     "median_abs_pred_err": statistics.median(ge) if ge else None}
    return {
        "groups": groups,
        "cases": len(rows), "ok": len(ok), "not_ok": len(failed),
        "ratio_ge_085": sum(1 for x in ratios if x >= 0.85), "with_ratio": len(ratios),
        "median_ratio": statistics.median(ratios) if ratios else None,
        "median_abs_pred_err": statistics.median(errs) if errs else None,
        "within_1_5x_of_prediction": sum(1 for x in mp if 1 / 1.5 <= x <= 1.5), "with_prediction": len(mp),
        "generic": len(generic), "generic_cases": generic, "with_kernels": len(ran),
        "failures": {r["case"]: r["status_text"] for r in failed},
    }


def print_summary(s, file=sys.stdout):
    p = lambda *a: print(*a, file=file)
    p()
    p("pred err = (napkin − predicted) / napkin; ratio = best baseline (eager or torch.compile) / napkin, "
      "> 1: Napkin faster;\n"
      "* = run relabeled a diagram drawn without regions (the model's best); (drawn) = the model proposed none, "
      "so it ran as drawn")
    p("cases: %d, ok %d, not ok %d" % (s["cases"], s["ok"], s["not_ok"]))
    p("at ≥ 0.85× the best baseline: %d of %d" % (s["ratio_ge_085"], s["with_ratio"]))
    p("median ratio: %s" % fmt(s["median_ratio"], "%.2f"))
    p("median |prediction error|: %s over %d" % (fmt(None if s["median_abs_pred_err"] is None
                                                    else 100 * s["median_abs_pred_err"], "%.1f%%"),
                                                s["with_prediction"]))
    p("within 1.5× of the prediction: %d of %d" % (s["within_1_5x_of_prediction"], s["with_prediction"]))
    p("on the generic path (any kernel): %d of %d%s" % (s["generic"], s["with_kernels"],
                                                        (": " + " ".join(s["generic_cases"])) if s["generic"] else ""))
    for g, x in s.get("groups", {}).items():
        p("%s: %d of %d ok, %d of %d at ≥ 0.9× the best baseline (lowest %s), median ratio %s, median |pred err| %s"
          % (g, x["ok"], x["cases"], x["ratio_ge_090"], x["with_ratio"], fmt(x["lowest_ratio"], "%.2f"),
             fmt(x["median_ratio"], "%.2f"),
             fmt(None if x["median_abs_pred_err"] is None else 100 * x["median_abs_pred_err"], "%.1f%%")))
    for name, why in s["failures"].items():
        p("  not ok: %s: %s" % (name, why))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("outs", nargs="+", metavar="OUT")
    ap.add_argument("--json", help="write the rows and the summary here")
    args = ap.parse_args(argv)
    rows, heads = [], []
    for out in args.outs:
        rows += rows_of(out)
        nap = load(os.path.join(out, "napkin.json")) or {}
        base = load(os.path.join(out, "baselines.json")) or {}
        gpu = base.get("gpu") or next((c.get("gpu") for c in (nap.get("cases") or {}).values() if c.get("gpu")), "?")
        heads.append("%s: %s, predictions %s, napkin repeats %s%s; baselines torch %s, median of %s" % (
            out, gpu, nap.get("model", "?"), nap.get("repeats", "?"),
            ", --plain" if nap.get("plain") else "", base.get("torch", "?"), base.get("repeats", "?")))
    if not rows:
        print("sweep-table.py: no cases in %s" % " ".join(args.outs), file=sys.stderr)
        return 1
    print_table(rows, "\n".join(heads))
    s = summary(rows)
    print_summary(s)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "summary": s}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
