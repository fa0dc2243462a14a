#!/usr/bin/env python3
"""bench/gpu/overlap's table and fit: reads the cases (name t f chunks sms env...) on
stdin and $OUT/run-NAME.json; prints every variant measured beside the model and fits
the figures docs/model.md ("SMs left to NCCL") prices with: the drain share β and the
GEMMs' loss (both over every variant, from the gains) and, per NCCL setting, the
per-CTA bus bandwidth (a bound when the fewest CTAs measured already reach the full
bus). The gain is the chunked run's (collectives on the compute stream) minus the
overlapped run's, measured and predicted alike; runs from before the runner reported it
so (gain_ms against the plain run) are read through serial_chunked_ms. Writes
$OUT/overlap-fit.json."""
import json, os, statistics, sys

out, arch_id = sys.argv[1], sys.argv[2]
arch = json.load(open(os.path.join("data/archs", arch_id + ".json")))["interconnect"]
alpha = arch["latency_us"]["value"] * 1e-6
bus = arch["bus_bandwidth_bytes_per_s"]["all_reduce"]["value"]


def load(name):
    try:
        return json.load(open(os.path.join(out, "run-%s.json" % name)))
    except Exception as e:
        return {"status": "no JSON", "message": str(e)}


def f(v, fmt="%.4f"):
    return fmt % v if isinstance(v, (int, float)) else "—"


def setting(envs):
    return " ".join(e for e in envs) or "default"




def num(*xs):
    return all(isinstance(x, (int, float)) for x in xs)


def model_gain(r, beta, loss):
    """The model's gain (docs/model.md, "SMs left to NCCL") on its own parts: c on every
    SM (the s = 0 variant's, whose kernels fill every SM), c' and m_a the variant's, m the
    chunk all-reduce on NCCL's own channels (s = 0's)."""
    k, c, c1, m, ma = r["chunks"], r["pc_all"], r["pc"], r["pm_all"], r["pma"]
    mb = ma + beta * c
    step = max(mb, c1 + loss * min(c1, mb))
    return k * (c + m) - (c1 + (k - 1) * step + ma)


rows = []
for line in sys.stdin:
    parts = line.split()
    if len(parts) < 5:
        continue
    name, t, fdim, k = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    r = load(name)
    ov = r.get("overlap") or {}
    if not ov.get("variants"):
        print("%-24s %s: %s" % (name, r.get("status"), (ov.get("note") or r.get("message") or "")[:160]))
        continue
    s0 = next((v for v in ov["variants"] if v.get("comm_sms") == 0), {})
    for v in ov["variants"]:
        serial, o = ov.get("serial_chunked_ms"), v.get("overlapped_ms")
        rows.append(dict(v, case=name, t=t, f=fdim, chunks=k, setting=setting(parts[5:]),
                         plain_ms=(r.get("time_ms") or {}).get("median"), serial_chunked_ms=serial,
                         gain_serial_ms=serial - o if num(serial, o) else None,
                         pc_all=s0.get("predicted_chunk_compute_ms"), pc=v.get("predicted_chunk_compute_ms"),
                         pm_all=s0.get("predicted_chunk_comm_alone_ms"), pma=v.get("predicted_chunk_comm_alone_ms")))

# β and the loss: least squares on the gains over every variant, the model's own parts
usable = [r for r in rows if num(r["gain_serial_ms"], r["pc_all"], r["pc"], r["pm_all"], r["pma"])]
beta, loss = None, None
if usable:
    grid = [i / 40 for i in range(41)]
    _, beta, loss = min((sum((model_gain(r, b, l) - r["gain_serial_ms"]) ** 2 for r in usable), b, l)
                        for b in grid for l in grid)
GAINING = 0.02   # ms: a measured gain above the run-to-run spread

print("%-24s %5s %3s %4s %8s %8s %8s | %8s %8s %8s %8s | %7s %7s %7s %7s %6s  %s" % (
    "case", "f", "k", "sms", "plain", "serial", "over", "gain", "gain run", "gain fit", "err",
    "c", "c pr", "m alone", "m besid", "β meas", "status"))
for r in rows:
    g = r["gain_serial_ms"]
    r["gain_fit_ms"] = model_gain(r, beta, loss) if beta is not None and r in usable else None
    r["within_20"] = num(g, r["gain_fit_ms"]) and g > GAINING and abs(r["gain_fit_ms"] - g) <= 0.2 * g
    c, ma, mb = r.get("chunk_compute_ms"), r.get("chunk_comm_alone_ms"), r.get("chunk_comm_beside_ms")
    print("%-24s %5d %3d %4s %8s %8s %8s | %8s %8s %8s %8s | %7s %7s %7s %7s %6s  %s" % (
        r["case"], r["f"], r["chunks"], r.get("comm_sms"), f(r["plain_ms"]), f(r["serial_chunked_ms"]),
        f(r.get("overlapped_ms")), f(g), f(r.get("predicted_gain_ms")), f(r["gain_fit_ms"]),
        "%+.0f%%" % (100 * (r["gain_fit_ms"] / g - 1)) if num(g, r["gain_fit_ms"]) and abs(g) > 1e-6 else "—",
        f(c), f(r.get("predicted_chunk_compute_ms")), f(ma), f(mb),
        f((mb - ma) / c, "%.2f") if num(c, ma, mb) and c > 0 else "—",
        "ok %.1e" % r["max_rel"] if isinstance(r.get("max_rel"), float) else "—"))

# per NCCL setting: the per-CTA bus bandwidth
fits = {}
for s in sorted({r["setting"] for r in rows}):
    mine = [r for r in rows if r["setting"] == s]
    alone0 = {r["case"]: r.get("chunk_comm_alone_ms") for r in mine if r.get("comm_sms") == 0}
    per = []
    for r in mine:
        ma, sms = r.get("chunk_comm_alone_ms"), r.get("comm_sms") or 0
        if sms > 0 and num(ma) and ma * 1e-3 > 2 * alpha:
            per.append((sms, r["t"] * 4096 * 2 / r["chunks"] / (ma * 1e-3 - 2 * alpha), alone0.get(r["case"]), ma))
    fit = {}
    # the fewest CTAs that still reach the full bus (alone within 20% of s = 0's) bound
    # the per-CTA bandwidth from below; fewer that do not, measure it
    slow = [bw / s for s, bw, m0, ma in per if m0 and ma > 1.2 * m0]
    fast = [bw / s for s, bw, m0, ma in per if m0 and ma <= 1.2 * m0]
    if slow:
        fit["cta_bus_bandwidth_bytes_per_s"] = statistics.median(slow)
    elif fast:
        fit["cta_bus_bandwidth_bytes_per_s"] = max(fast)
        fit["cta_bus_bandwidth_is_lower_bound"] = True
    fits[s] = fit

print()
print("figures for data/archs/%s.json interconnect:" % arch_id)
if beta is not None:
    print("  every variant (%d): overlap_drain_share %.3f, overlap_compute_loss %.3f (least squares on the gains)"
          % (len(usable), beta, loss))
for s, fit in fits.items():
    if fit:
        print("  %-60s cta_bus_bandwidth_bytes_per_s %.4g%s" % (s, fit["cta_bus_bandwidth_bytes_per_s"],
                                                             " (a lower bound)" if fit.get("cta_bus_bandwidth_is_lower_bound") else ""))
gaining = [r for r in rows if num(r["gain_serial_ms"]) and r["gain_serial_ms"] > GAINING]
print("gaining variants (gain > %.2f ms) predicted within 20%%: %d of %d" % (GAINING, sum(r["within_20"] for r in gaining),
                                                                          len(gaining)))
signed = [r for r in rows if num(r["gain_serial_ms"], r["gain_fit_ms"])]
print("gain sign (> %.2f ms) predicted right in %d of %d variants" % (
    GAINING, sum((r["gain_serial_ms"] > GAINING) == (r["gain_fit_ms"] > GAINING) for r in signed), len(signed)))
json.dump({"arch": arch_id, "overlap_drain_share": beta, "overlap_compute_loss": loss, "fits": fits, "rows": rows},
          open(os.path.join(out, "overlap-fit.json"), "w"), indent=1)
