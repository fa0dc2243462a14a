#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model against the measured relabelings of bench/gpu/run-bench, offline.

Reads docs/gpu-runs/*-run-bench.json (per workload: every relabeling `tune --measure`
ran, its measured median time and the prediction of that day's model), rebuilds the
calibrated profile of each run (`napkin-cli calibrate` through a stand-in runner that
replays the run's calibration), predicts every relabeling again with today's model
(`napkin-cli analyze --format json`; --no-wgmma by default, since those runs used the
mma.sync skeletons), and prints per workload Spearman's rho of predicted vs measured
time and the prediction error of the best-measured relabeling — before (the JSON's
predictions) and now.

  bench/model-check.py [--cli _build/src/cli/napkin-cli] [--wgmma] [--markdown]

No GPU is needed. The H100 run kept its calibration (…-h100-calibrate.json); the H200
run's was not saved: it is rebuilt from the figures docs/perf-notes.md and
docs/model.md §7b quote (mma.sync 639 TFLOP/s, shared memory 87 B/clock/SM, launch
3.6 µs) and the device-memory bandwidth that reproduces that run's own prediction of
softmax r=1 (a single-resource kernel: bytes / bandwidth + launch)."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUNS = {
    'h100': os.path.join(ROOT, 'docs/gpu-runs/2026-11-22-h100-run-bench.json'),
    'h200': os.path.join(ROOT, 'docs/gpu-runs/2026-11-22-h200-run-bench.json'),
}
# As bench/gpu/run-bench defines them: file and axes (the N16384 attention's relabelings
# were measured at b=1 h=1, its best also at full size).
WORKLOADS = {
    'matmul bf16 4096^3': ('@bf16', 'm=4096 n=4096 k=4096', None),
    'matmul bf16 8192^3': ('@bf16', 'm=8192 n=8192 k=8192', None),
    'matmul bf16 16384x1024x16384': ('@bf16', 'm=16384 n=16384 k=1024', None),
    'attention B4 H16 N4096 d64': ('data/examples/flash-attention.napkin', 'b=4 h=16 q=4096 k=4096 d=64', None),
    'attention B4 H16 N4096 d128': ('data/examples/flash-attention.napkin', 'b=4 h=16 q=4096 k=4096 d=128', None),
    'attention B2 H16 N16384 d128': ('data/examples/flash-attention.napkin', 'b=2 h=16 q=16384 k=16384 d=128',
                                     'b=1 h=1 q=16384 k=16384 d=128'),
    'softmax fp16 16384x16384': ('data/examples/softmax.napkin', 'r=16384 c=16384', None),
    'layernorm fp16 65536x4096': ('data/examples/layernorm.napkin', 't=65536 h=4096', None),
}


def spearman(x, y):
    def ranks(v):
        return [sum(a < b for a in v) + (sum(a == b for a in v) + 1) / 2 for b in v]
    if len(x) < 3:
        return None
    rx, ry = ranks(x), ranks(y)
    mx, my = sum(rx) / len(rx), sum(ry) / len(ry)
    sxy = sum((a - mx) * (b - my) for a, b in zip(rx, ry))
    sxx = sum((a - mx) ** 2 for a in rx)
    syy = sum((b - my) ** 2 for b in ry)
    return sxy / (sxx * syy) ** 0.5 if sxx > 0 and syy > 0 else None


def first_json(path):
    text = open(path).read()
    return json.JSONDecoder().raw_decode(text)[0]


def calibrated_profiles(cli, work):
    """h100-measured and h200-measured in work/archs, written by napkin-cli calibrate."""
    archs = os.path.join(work, 'archs')
    os.makedirs(archs, exist_ok=True)
    h100 = first_json(os.path.join(ROOT, 'docs/gpu-runs/2026-11-22-h100-calibrate.json'))
    h200_run = json.load(open(RUNS['h200']))['workloads']['softmax fp16 16384x16384']
    r1 = [m for m in h200_run['measured'] if m['tiles'] == 'rows.r=1'][0]
    launch = 3.6e-6
    h200 = {'gpu': {'name': 'NVIDIA H200', 'sms': 132, 'clock_mhz': 1980}, 'arch': 'sm_90a', 'status': 'ok',
            'calibration': {'launch_overhead_s': launch,
                            'hbm_bytes_per_s': r1['hbm_bytes'] / (r1['predicted_time_s'] - launch),
                            'smem_bytes_per_clock_per_sm': 87.0,
                            'tensor': {k: {'flops_per_s': v * 1e12} for k, v in
                                       (('fp16', 639.0), ('bf16', 639.0), ('tf32', 319.5), ('int8', 1278.0))}}}
    for base, result in (('h100', h100), ('h200', h200)):
        replay = os.path.join(work, 'replay-%s.json' % base)
        json.dump(result, open(replay, 'w'))
        runner = os.path.join(work, 'runner-%s' % base)
        with open(runner, 'w') as f:
            f.write('#!/bin/sh\ncat %s\n' % replay)
        os.chmod(runner, 0o755)
        env = dict(os.environ, NAPKIN_RUNNER=runner)
        subprocess.run([cli, 'calibrate', '--base', base, '-o', os.path.join(archs, '%s-measured.json' % base)],
                       check=True, env=env, stdout=subprocess.DEVNULL)
    return archs


def bf16_matmul(work):
    d = json.load(open(os.path.join(ROOT, 'data/examples/matmul-nested.napkin')))
    for t in d['tensors']:
        t['dtype'] = 'bf16'
    path = os.path.join(work, 'matmul-bf16.napkin')
    json.dump(d, open(path, 'w'))
    return path


def predict(cli, archs, arch, path, axes, specs, wgmma):
    cmd = [cli, 'analyze', path, '--arch', arch, '--format', 'json']
    for a in axes.split():
        cmd += ['--axis', a]
    for s in specs:
        cmd += ['--tile', s]
    if not wgmma:
        cmd.append('--no-wgmma')
    out = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, NAPKIN_ARCH_DIR=archs))
    if out.returncode != 0 and not out.stdout:
        raise RuntimeError(out.stderr)
    return json.loads(out.stdout)['predicted_time_s']


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--cli', default=os.path.join(ROOT, '_build/src/cli/napkin-cli'))
    ap.add_argument('--wgmma', action='store_true', help='predict with the wgmma skeletons (not what ran)')
    ap.add_argument('--markdown', action='store_true')
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as work:
        archs = calibrated_profiles(args.cli, work)
        bf16 = bf16_matmul(work)
        rows = []
        for gpu, path in RUNS.items():
            run = json.load(open(path))
            for name, entry in run['workloads'].items():
                file, axes, check_axes = WORKLOADS[name]
                file = bf16 if file == '@bf16' else os.path.join(ROOT, file)
                ok = [m for m in entry['measured'] if m.get('status') == 'ok' and m.get('measured_time_s')]
                meas = [m['measured_time_s'] for m in ok]
                before = [m['predicted_time_s'] for m in ok]
                now = [predict(args.cli, archs, run['model'], file, check_axes or axes, m['specs'], args.wgmma)
                       for m in ok]
                best = entry.get('best') or min(ok, key=lambda m: m['measured_time_s'])
                best_now = predict(args.cli, archs, run['model'], file, axes, best['specs'], args.wgmma)
                err_before = (best['measured_time_s'] - best['predicted_time_s']) / best['measured_time_s']
                err_now = (best['measured_time_s'] - best_now) / best['measured_time_s']
                all_err = [abs(m - p) / m for m, p in zip(meas, now)]
                rows.append((gpu, name, len(ok), spearman(before, meas), spearman(now, meas),
                             err_before, err_now, statistics.median(all_err)))

    def f(v, fmt):
        return '—' if v is None else fmt % v
    if args.markdown:
        print('| GPU | workload | n | rho before | rho now | best: error before | best: error now | median \\|error\\| over n, now |')
        print('|---|---|---|---|---|---|---|---|')
        for r in rows:
            print('| %s | %s | %d | %s | %s | %s | %s | %s |' % (r[0], r[1], r[2], f(r[3], '%.2f'), f(r[4], '%.2f'),
                                                            f(100 * r[5], '%+.0f %%'), f(100 * r[6], '%+.0f %%'),
                                                            f(100 * r[7], '%.0f %%')))
    else:
        print('%-5s %-30s %2s %10s %8s %12s %10s %10s' % ('gpu', 'workload', 'n', 'rho before', 'rho now',
                                                        'err before', 'err now', 'med |err|'))
        for r in rows:
            print('%-5s %-30s %2d %10s %8s %12s %10s %10s' % (r[0], r[1], r[2], f(r[3], '%.2f'), f(r[4], '%.2f'),
                                                            f(100 * r[5], '%+.1f%%'), f(100 * r[6], '%+.1f%%'),
                                                            f(100 * r[7], '%.1f%%')))
    for gpu in RUNS:
        sel = [r for r in rows if r[0] == gpu]
        print('%s: median |error| of the best relabeling over %d workloads: before %.1f %%, now %.1f %%; '
              'rho >= 0.8 in %d (before %d) of %d' % (
                  gpu, len(sel), 100 * statistics.median(abs(r[5]) for r in sel),
                  100 * statistics.median(abs(r[6]) for r in sel),
                  sum(1 for r in sel if r[4] is not None and r[4] >= 0.8),
                  sum(1 for r in sel if r[3] is not None and r[3] >= 0.8), len(sel)))


if __name__ == '__main__':
    sys.exit(main())
