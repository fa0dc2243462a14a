#!/usr/bin/env python3
"""Runs the sweep's cases through `napkin-cli run` on the GPU machine (bench/gpu/sweep; the
cases come from sweep-cases.py --write). Every case becomes one record in OUT/napkin.json,
rewritten after each case so that a run cut short keeps what it measured: a case that fails,
times out, crashes the CLI or prints something that is not a sane result is a record with
its status, never a stop.

Usage: sweep-run.py --manifest DIR/cases.json --out OUT --cli PATH --model ID
                    [--repeats N] [--timeout S] [--margin S] [--deadline EPOCH] [--plain]
Standard library only."""
import argparse, json, math, os, signal, subprocess, sys, time

RELABEL_NOTE = "running the model's best on"        # napkin-cli run's notes on stderr
DRAWN_NOTE = "the model proposes none"


def parse_json(text):
    """The CLI prints one pretty JSON object; anything before it (a warning) is skipped."""
    start = text.find("{")
    if start < 0:
        return None, "no JSON in the output"
    try:
        return json.loads(text[start:]), None
    except ValueError as e:
        return None, "output is not JSON (%s)" % e


def number(v):
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None


def get(obj, *keys):
    for k in keys:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj


def run_cli(cmd, timeout):
    """(rc, stdout, stderr, wall seconds); rc None when the backstop had to kill it."""
    t0 = time.monotonic()
    try:
        # its own process group: the backstop must stop napkin-runner (its child) too
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    except OSError as e:
        return 127, "", "cannot start %s: %s" % (cmd[0], e), time.monotonic() - t0
    try:
        out, err = p.communicate(timeout=timeout)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        rc = None
    return rc, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), time.monotonic() - t0


def summarise(rc, out, err, wall):
    """One run of the CLI → the fields the table needs, and the status, checked for sanity."""
    r, why = parse_json(out)
    rec = {"rc": rc, "wall_s": round(wall, 2), "stderr_tail": err[-1500:]}
    if rc is None:
        rec.update(status="timeout", message="the sweep's backstop killed napkin-cli after %.0f s" % wall)
        return rec, r
    if r is None:
        said = " | ".join(x for x in (out.strip()[:200], err.strip()[-300:]) if x) or "nothing printed"
        how = "killed by signal %d" % -rc if rc < 0 else "rc=%d" % rc
        rec.update(status="no-json", message="napkin-cli %s, %s: %s" % (how, why, said))
        return rec, r
    status = r.get("status") if isinstance(r.get("status"), str) else "garbage"
    rec["status"] = status
    if r.get("message"):
        rec["message"] = str(r["message"])[:500]
    kernels = r.get("kernels") if isinstance(r.get("kernels"), list) else []
    rec["kernels"] = [{k: kn.get(k) for k in ("name", "skeleton", "grid", "threads", "registers", "shared_bytes",
                                                "local_bytes", "note") if k in kn}
                      for kn in kernels if isinstance(kn, dict)]
    rec["paths"] = [kn.get("skeleton") or "?" for kn in rec["kernels"]]
    rec["time_ms"] = {k: number(get(r, "time_ms", k)) for k in ("median", "min", "max", "repeats")}
    rec["max_rel"] = number(get(r, "error", "max_rel"))
    rec["bound"] = number(get(r, "error", "bound"))
    rec["checked"] = get(r, "error", "checked") is True
    rec["error_ok"] = get(r, "error", "ok") is True
    rec["predicted_ms"] = number(get(r, "prediction", "time_ms"))
    rec["prediction_arch"] = get(r, "prediction", "arch")
    rec["prediction_bound"] = get(r, "prediction", "bound")
    # each kernel of the plan: predicted beside the runner's time for it alone
    rec["per_kernel"] = [[k.get("name"), k.get("kind"), number(k.get("predicted_ms")), number(k.get("measured_ms"))]
                         for k in get(r, "prediction", "kernels") or [] if isinstance(k, dict)]
    rec["tflops"], rec["gbps"] = number(r.get("tflops")), number(r.get("gbps"))
    rec["compile_ms"] = number(get(r, "compile", "ms"))
    rec["gpu"] = get(r, "gpu", "name")
    if DRAWN_NOTE in err:
        # a diagram without regions for which the model proposed no relabeling: as drawn
        line = next(l for l in err.splitlines() if DRAWN_NOTE in l)
        rec["as_drawn"] = line.split(DRAWN_NOTE, 1)[1].strip(" :")[:200]
    if RELABEL_NOTE in err:
        # run replaced a diagram without regions by the model's best relabeling
        line = next(l for l in err.splitlines() if RELABEL_NOTE in l)
        rec["relabeled"] = line.split(": ", 2)[-1].split(" (pass --plain")[0]
    if status == "ok":
        t = rec["time_ms"]["median"]
        if t is None or t <= 0:
            rec.update(status="garbage", message="status ok but time_ms.median is %r" % get(r, "time_ms", "median"))
        elif rec["checked"] and (rec["max_rel"] is None or not rec["error_ok"]):
            rec.update(status="garbage", message="status ok but the check says max_rel %r, ok %r"
                       % (get(r, "error", "max_rel"), get(r, "error", "ok")))
        elif not rec["kernels"]:
            rec.update(status="garbage", message="status ok but no kernels listed")
    return rec, r


def run_case(case, args, deadline):
    base = [args.cli, "run", case["file"], "--json", "--reference-repeats", "0", "--no-energy", "--model", args.model]
    if args.plain and case["plain"]:
        base.append("--plain")
    base += case.get("run_flags", [])
    left = deadline - time.time()
    limit = int(max(1, min(args.timeout, left)))
    backstop = limit + args.margin
    rec = {"name": case["name"], "started": time.strftime("%H:%M:%S")}
    raws = {}
    if case.get("check"):
        # the full size's reference does not fit: check the same diagram at smaller axes,
        # then time the full size without the reference (as run-bench does)
        axes = [a for k, v in case["check"].items() for a in ("--axis", "%s=%d" % (k, v))]
        chk, raws["check"] = summarise(*run_cli(base + axes + ["--repeats", "3", "--timeout", str(limit)], backstop))
        rec["check"] = chk
        rec["check_axes"] = case["check"]
        if chk["status"] != "ok":
            rec.update({k: chk.get(k) for k in ("status", "message", "kernels", "paths", "max_rel", "bound")})
            rec["message"] = "checked at %s: %s" % (" ".join("%s=%d" % kv for kv in case["check"].items()),
                                                   chk.get("message") or chk["status"])
            return rec, raws
        left = deadline - time.time()
        if left < 10:
            rec.update(status="skipped", message="checked ok; no time left for the full size")
            return rec, raws
        limit = int(max(1, min(args.timeout, left)))
        full, raws["full"] = summarise(*run_cli(base + ["--no-reference", "--repeats", str(args.repeats),
                                                        "--timeout", str(limit)], limit + args.margin))
        rec.update(full)
        rec["max_rel"], rec["bound"], rec["checked"] = chk.get("max_rel"), chk.get("bound"), True
        rec["error_ok"] = chk.get("error_ok")
    else:
        one, raws["run"] = summarise(*run_cli(base + ["--repeats", str(args.repeats), "--timeout", str(limit)],
                                              backstop))
        rec.update(one)
    return rec, raws


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--manifest", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--cli", required=True)
    ap.add_argument("--model", required=True, help="architecture profile of the prediction (run --model)")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--timeout", type=int, default=120, help="seconds per case")
    ap.add_argument("--margin", type=float, default=30,
                    help="seconds past --timeout before the sweep kills napkin-cli itself")
    ap.add_argument("--deadline", type=float, default=0, help="epoch seconds; later cases are skipped")
    ap.add_argument("--plain", action="store_true", help="pass --plain: diagrams without regions run as drawn")
    args = ap.parse_args(argv)
    cases = json.load(open(args.manifest))["cases"]
    deadline = args.deadline or time.time() + 1e9
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "napkin.json")
    result = {"model": args.model, "repeats": args.repeats, "plain": args.plain, "cases": {}, "raw": {}}
    for i, case in enumerate(cases, 1):
        if time.time() > deadline - 10:
            rec, raws = {"name": case["name"], "status": "skipped",
                         "message": "the sweep's time budget ran out before this case (run it with --only)"}, {}
        else:
            try:
                rec, raws = run_case(case, args, deadline)
            except Exception as e:      # the sweep itself: still a row, never a stop
                rec, raws = {"name": case["name"], "status": "sweep-error", "message": repr(e)[:300]}, {}
        result["cases"][case["name"]] = rec
        result["raw"][case["name"]] = raws
        t = get(rec, "time_ms", "median")
        print("[%2d/%d] %-30s %-9s %10s ms  %-24s %5.1f s  %s" % (
            i, len(cases), case["name"], rec.get("status"), "%.4f" % t if t else "-",
            "+".join(rec.get("paths") or []) or "-", rec.get("wall_s") or 0,
            (rec.get("message") or "")[:100]), flush=True)
        tmp = path + ".tmp"
        with open(tmp, "w") as f:
            json.dump(result, f, indent=1)
        os.replace(tmp, path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
