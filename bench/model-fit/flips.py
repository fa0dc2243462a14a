#!/usr/bin/env python3
"""Which plan choices a model change flips (docs/perf-notes.md, "Model refit on recorded
runs"): the user's-path cases (seed 26) and the zoo's stored graphs through `import` and
`tune --apply` with two napkin-cli builds, on h200 and on the run's h200-measured; prints
every case whose derived plan (kernels, paths, tiles, stages, split) differs, with both
builds' predictions of both plans.

  flips.py BEFORE-CLI AFTER-CLI"""
import json, os, shutil, subprocess, sys, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
MEASURED = os.path.join(ROOT, "docs", "gpu-runs", "2026-11-29-h200-s8-user-path-final", "h200-measured.json")


def run(cmd, env):
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if r.returncode != 0:
        raise RuntimeError(" ".join(cmd[:3]) + ": " + (r.stderr or r.stdout)[-400:])
    return r.stdout


def derived(cli, src, arch, path, env):
    run([cli, "import", src, "-o", path], env)
    run([cli, "tune", path, "--arch", arch, "--apply"], env)
    plan = json.loads(run([cli, "plan", path, "--arch", arch, "--format", "json"], env))
    sig = [(k.get("kind"), k.get("name"), k.get("path"), json.dumps(k.get("tiles"), sort_keys=True), k.get("stages"),
            k.get("split_k"), k.get("split_kv"), k.get("grid"), k.get("threads")) for k in plan["kernels"]]
    return sig


def predict(cli, path, arch, env):
    return json.loads(run([cli, "analyze", path, "--arch", arch, "--format", "json"], env))["predicted_time_s"] * 1e6


def main(before, after):
    work = tempfile.mkdtemp(prefix="napkin-flips-")
    env = dict(os.environ)
    os.makedirs(os.path.join(work, "archs"))
    shutil.copy(MEASURED, os.path.join(work, "archs", "h200-measured.json"))
    env["NAPKIN_ARCH_DIR"] = os.path.join(work, "archs") + ":" + os.path.join(ROOT, "data", "archs")
    up = os.path.join(work, "up")
    subprocess.run([sys.executable, os.path.join(ROOT, "bench", "gpu", "user-path.py"), "--write", up, "--cases", "64",
                    "--seed", "26"], capture_output=True, check=True)
    sources = sorted(os.path.join(up, f) for f in os.listdir(up) if f.endswith(".einsum"))
    zoo = os.path.join(ROOT, "tests", "import", "zoo")
    sources += sorted(os.path.join(zoo, f) for f in os.listdir(zoo) if f.endswith(".graph.json"))
    sources.append(os.path.join(ROOT, "tests", "import", "llama-block.graph.json"))
    flips = 0
    for arch in ("h200", "h200-measured", "h100"):
        for src in sources:
            name = os.path.basename(src).split(".")[0]
            pb, pa = os.path.join(work, name + ".b.napkin"), os.path.join(work, name + ".a.napkin")
            try:
                sb, sa = derived(before, src, arch, pb, env), derived(after, src, arch, pa, env)
            except RuntimeError as e:
                print("%s %s: %s" % (arch, name, e))
                continue
            if sb != sa:
                flips += 1
                print("%s %s: before's plan %.1f µs (after's model %.1f), after's plan %.1f µs (before's model %.1f)" % (
                    arch, name, predict(before, pb, arch, env), predict(after, pb, arch, env),
                    predict(after, pa, arch, env), predict(before, pa, arch, env)))
                for x, y in zip(sb, sa):
                    if x != y:
                        print("    - %s\n    + %s" % (x, y))
                if len(sb) != len(sa):
                    print("    kernels %d → %d" % (len(sb), len(sa)))
    print("%d derived plans changed" % flips)
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
