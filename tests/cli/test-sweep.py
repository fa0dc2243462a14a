#!/usr/bin/env python3
"""The GPU sweep without a GPU (TAP): every case file that bench/gpu/sweep-cases.py writes
validates and analyzes with napkin-cli, the selections (--quick, --only, --part) hold, and the
runner loop and the table survive each kind of failure, fed by tests/cli/sweep/fake-napkin-cli.

Usage: test-sweep.py NAPKIN_CLI SOURCE_ROOT"""
import json, math, os, re, subprocess, sys, tempfile, time

cli, root = sys.argv[1], sys.argv[2]
bench = os.path.join(root, "bench", "gpu")
fixture = os.path.join(root, "tests", "cli", "sweep")
fake = os.path.join(fixture, "fake-napkin-cli")
tmp = tempfile.mkdtemp(prefix="napkin-sweep-")
n = 0
failed = False


def report(ok, desc, why=""):
    global n, failed
    n += 1
    failed |= not ok
    print("%s %d - %s" % ("ok" if ok else "not ok", n, desc))
    if not ok and why:
        for line in str(why).splitlines()[-15:]:
            print("#   " + line)


def run(*cmd, **kw):
    return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def cases_tool(*args):
    return run(sys.executable, os.path.join(bench, "sweep-cases.py"), *args)


# 1. every case: written, valid, analyzable
work = os.path.join(tmp, "all")
p = cases_tool("--write", work)
report(p.returncode == 0, "sweep-cases.py --write", p.stderr)
man = json.load(open(os.path.join(work, "cases.json")))
cases = man["cases"]
names = [c["name"] for c in cases]
report(len(cases) >= 44, "at least 44 cases (%d)" % len(cases))
report(len(set(names)) == len(names), "case names unique")
kinds = {c["kind"] for c in cases}
want = {"matmul", "linear", "fp8", "bmm", "scores", "bias_gelu", "residual", "swiglu", "mlp", "softmax",
        "layernorm", "rmsnorm"}
report(kinds == want, "every kind present", "missing %s, extra %s" % (want - kinds, kinds - want))
files = sorted(c["file"] for c in cases)
report(all(os.path.exists(f) for f in files), "one .napkin per case")

p = run(cli, "validate", *files)
lines = p.stdout.splitlines()
bad = [l for l in lines if not l.endswith(": valid")]
report(p.returncode == 0 and len(lines) == len(files) and not bad, "napkin-cli validate: every case file valid",
       p.stderr + "\n".join(bad))

bad = []
for c in cases:
    p = run(cli, "analyze", "--format", "json", c["file"])
    try:
        a = json.loads(p.stdout)
        t = a["predicted_time_s"]
        if p.returncode != 0 or not a["feasible"] or not (math.isfinite(t) and t > 0):
            bad.append("%s: rc %d feasible %s time %r" % (c["name"], p.returncode, a["feasible"], t))
    except (ValueError, KeyError) as e:
        bad.append("%s: %s %s" % (c["name"], e, p.stderr[-200:]))
report(not bad, "napkin-cli analyze --format json: every case feasible with a time", "\n".join(bad))

# the drawn relabelings: one shared-memory region per product (4 stages) or per row
# operation with its maps
bad = []
for c in cases:
    d = json.load(open(c["file"]))
    rows = c["kind"] in ("layernorm", "rmsnorm")
    if c["fusion"] == "regions":
        if not d["regions"] or any(r["level"] != "smem" or (r.get("stages") != 4 and not rows) for r in d["regions"]):
            bad.append(c["name"])
    elif c["fusion"] == "plain" and d["regions"]:
        bad.append(c["name"])
report(not bad, "plain cases have no region, fused ones smem regions", bad)
report(all(c["check"] is None or c["reference_bytes"] > 60e9 for c in cases),
       "check axes only where the reference passes the limit")

# 2. selections
p = cases_tool("--list")
report(p.returncode == 0 and ("%d cases" % len(cases)) in p.stdout, "--list", p.stderr)
p = cases_tool("--list", "--quick")
fams = {c["family"] for c in cases}
report(p.returncode == 0 and ("%d cases" % len(fams)) in p.stdout, "--quick: one case per family (%d)" % len(fams),
       p.stdout[-300:])
p = cases_tool("--list", "--only", "^softmax-")
report(p.returncode == 0 and "5 cases" in p.stdout, "--only ^softmax-", p.stdout[-300:])
p = cases_tool("--list", "--only", "no-such-case")
report(p.returncode != 0 and "no case matches" in p.stderr, "--only matching nothing fails, saying so")
parts = []
for i in (1, 2):
    q = os.path.join(tmp, "part%d" % i)
    p = cases_tool("--write", q, "--part", "%d/2" % i)
    parts.append([c["name"] for c in json.load(open(os.path.join(q, "cases.json")))["cases"]])
report(sorted(parts[0] + parts[1]) == sorted(names) and not set(parts[0]) & set(parts[1]),
       "--part 1/2 and 2/2: disjoint, together every case")
p = cases_tool("--list", "--part", "3/2")
report(p.returncode != 0 and "--part" in p.stderr, "--part 3/2 refused")

# 3. the runner loop on every kind of failure (fake CLI), then the table
resp = json.load(open(os.path.join(fixture, "responses.json")))
fx = os.path.join(tmp, "fx")
p = cases_tool("--write", os.path.join(fx, "work"), "--only", "^(%s)$" % "|".join(map(re.escape, resp)))
m = json.load(open(os.path.join(fx, "work", "cases.json")))
for c in m["cases"]:
    if c["name"].startswith("scores-"):
        c["check"] = {"b": 1, "h": 1, "q": 4096, "k": 4096, "d": 128}
json.dump(m, open(os.path.join(fx, "work", "cases.json"), "w"))
env = dict(os.environ, SWEEP_FAKE_LOG=os.path.join(fx, "argv.log"))
t0 = time.monotonic()
p = run(sys.executable, os.path.join(bench, "sweep-run.py"), "--manifest", os.path.join(fx, "work", "cases.json"),
        "--out", fx, "--cli", fake, "--model", "h100-measured", "--timeout", "1", "--margin", "2", "--plain", env=env)
report(p.returncode == 0, "sweep-run.py survives every failure", p.stdout + p.stderr)
report(time.monotonic() - t0 < 30, "a hanging case is stopped by the backstop")
got = json.load(open(os.path.join(fx, "napkin.json")))["cases"]
expect = {"matmul-4096x4096x4096": "ok", "matmul-37x53x29": "ok", "skinny-1x4096x4096": "wrong",
          "vocab-4096x128256x4096": "timeout", "fp8-4096x4096x4096": "compile-error",
          "residual-4096x4096x11008": "timeout", "softmax-4096x1000": "ok", "layernorm-65536x1000": "no-json",
          "rmsnorm-65536x4000": "no-json", "bmm-16x512x512x64": "garbage", "mlp-gelu-regions": "ok",
          "scores-4x16x4096x4096x128": "ok", "layernorm-2048x128256": "ok"}
wrong = {k: (got.get(k) or {}).get("status") for k in expect if (got.get(k) or {}).get("status") != expect[k]}
report(not wrong, "each case's status", wrong)
argv = [json.loads(l) for l in open(os.path.join(fx, "argv.log"))]
plain_flag = {os.path.basename(a[1]).split(".")[0]: "--plain" in a for a in argv}
report(plain_flag["matmul-4096x4096x4096"] and not plain_flag["mlp-gelu-regions"],
       "--plain reaches diagrams without regions only")
sc = [a for a in argv if "scores-" in a[1]]
report(len(sc) == 2 and "--axis" in sc[0] and "--no-reference" not in sc[0] and "--no-reference" in sc[1],
       "a case with check axes: checked small, then timed full size without the reference", sc)
report(got["scores-4x16x4096x4096x128"].get("checked") is True, "the full-size row keeps the small check's result")
report(all("--model" in a and a[a.index("--model") + 1] == "h100-measured" and "--json" in a for a in argv),
       "every run asks for JSON and the given prediction profile")

import shutil
shutil.copy(os.path.join(fixture, "baselines.json"), os.path.join(fx, "baselines.json"))
p = run(sys.executable, os.path.join(bench, "sweep-table.py"), fx, "--json", os.path.join(fx, "sweep.json"))
report(p.returncode == 0, "sweep-table.py prints", p.stderr)
out = p.stdout
report(all(re.search(r"^%s\s" % re.escape(k), out, re.M) for k in expect), "one row per case", out)
for col in ("napkin ms", "pred ms", "pred err", "baseline ms (name)", "compile ms", "ratio", "path(s)", "status / err"):
    report(col in out, "column %s" % col)
s = json.load(open(os.path.join(fx, "sweep.json")))
rows = {r["case"]: r for r in s["rows"]}
r = rows["matmul-4096x4096x4096"]
report(abs(r["ratio"] - 0.2050 / 0.2001) < 1e-9 and r["best_baseline"] == "torch.compile",
       "ratio = the best of eager and compiled over napkin", r)
report(abs(r["pred_err"] - (0.2001 - 0.2245) / 0.2001) < 1e-9, "pred err = (napkin - predicted) / napkin")
report(rows["mlp-gelu-regions"]["path_text"] == "gemm-wgmma×2", "paths counted")
report(rows["skinny-1x4096x4096"]["ratio"] is None, "no ratio for a wrong result")
su = s["summary"]
report(su["ok"] == 6 and su["not_ok"] == 7, "summary: ok / not ok", su)
report(sorted(su["generic_cases"]) == ["layernorm-2048x128256", "matmul-37x53x29"], "summary: the generic path counted",
       su["generic_cases"])
report(su["with_ratio"] == 5 and su["ratio_ge_085"] == 5, "summary: count at 0.85× the baseline", su)
report(su["within_1_5x_of_prediction"] == 5 and su["with_prediction"] == 6, "summary: within 1.5× of the prediction")
report(rows["layernorm-2048x128256"]["as_drawn"] and re.search(r"^layernorm-2048x128256 .*generic \(drawn\)", out, re.M),
       "a plain diagram the model proposes no relabeling for: marked as drawn", out)
report("median ratio: 1.02" in out, "summary: median ratio printed", out[-800:])

# 4. a spent budget: every case a skipped row; broken inputs: rows, no traceback
sk = os.path.join(tmp, "skip")
p = run(sys.executable, os.path.join(bench, "sweep-run.py"), "--manifest", os.path.join(fx, "work", "cases.json"),
        "--out", sk, "--cli", fake, "--model", "h100", "--deadline", str(time.time() - 1))
st = {c["status"] for c in json.load(open(os.path.join(sk, "napkin.json")))["cases"].values()}
report(p.returncode == 0 and st == {"skipped"}, "a spent budget: every case skipped", st)
os.makedirs(os.path.join(sk, "work"))
shutil.copy(os.path.join(fx, "work", "cases.json"), os.path.join(sk, "work", "cases.json"))
with open(os.path.join(sk, "baselines.json"), "w") as f:
    f.write("{ not json")
p = run(sys.executable, os.path.join(bench, "sweep-table.py"), sk, fx)
report(p.returncode == 0 and "skipped:" in p.stdout and "no baseline result" in p.stdout
       and p.stdout.count("matmul-4096x4096x4096 ") == 2, "table of two result folders, one broken", p.stdout + p.stderr)

# 5. the whole script with a fake pack: no GPU, no torch here, still a table
pack = os.path.join(tmp, "pack")
os.makedirs(os.path.join(pack, "bin"))
os.symlink(fake, os.path.join(pack, "bin", "napkin-cli"))
env = dict(os.environ, OUT=os.path.join(tmp, "whole"), NAPKIN_PACK=os.path.relpath(pack, root), CALIBRATE="0",
           MODEL="h100", COMPILE="0", BUDGET="120", CASE_TIMEOUT="5", PYTHONPATH="")
p = run("bash", os.path.join(bench, "sweep"), "--only", "^(matmul-4096x4096x4096|softmax-4096x1000)$", cwd=root, env=env)
try:
    whole = {r["case"]: r for r in json.load(open(os.path.join(tmp, "whole", "sweep.json")))["rows"]}
except (OSError, ValueError):
    whole = {}
report(p.returncode == 0 and "== done" in p.stdout and whole.get("matmul-4096x4096x4096", {}).get("status") == "ok"
       and whole.get("softmax-4096x1000", {}).get("napkin_ms") == 0.0215,
       "bench/gpu/sweep end to end with a fake pack", p.stdout[-1500:] + p.stderr[-500:])
report(re.search(r"^matmul-4096x4096x4096 .*— \(", p.stdout, re.M) is not None,
       "no torch: the baselines are missing, the rows stay", p.stdout[-1500:])
p = run("bash", os.path.join(bench, "sweep"), "--bogus", cwd=root)
report(p.returncode == 2 and "unknown argument" in p.stderr, "sweep: unknown argument refused")

shutil.rmtree(tmp, ignore_errors=True)
print("1..%d" % n)
sys.exit(1 if failed else 0)
