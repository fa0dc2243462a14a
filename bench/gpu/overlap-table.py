#!/usr/bin/env python3
"""bench/gpu/overlap's table and fit: reads the cases (name t f chunks sms env...) on
stdin and $OUT/run-NAME.json; prints every variant measured beside the model, the
sign agreement of the gains, and per NCCL setting the figures docs/model.md ("SMs left
to NCCL") prices with: the contention (all-reduce beside the GEMMs over alone), the
GEMMs' loss (share of the time NCCL runs beside them) and the per-CTA bus bandwidth
(a bound when the fewest CTAs measured already reach the full bus). Writes
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


print("%-24s %5s %3s %4s %8s %8s | %8s %8s | %8s %8s %5s | %7s %7s %7s %7s  %s" % (
    "case", "f", "k", "sms", "plain", "serial", "over", "over pr", "gain", "gain pr", "sign",
    "c", "c pr", "m alone", "m besid", "status"))
rows = []
for line in sys.stdin:
    parts = line.split()
    if len(parts) < 5:
        continue
    name, t, fdim, k = parts[0], int(parts[1]), int(parts[2]), int(parts[3])
    envs = parts[5:]
    r = load(name)
    plain = (r.get("time_ms") or {}).get("median")
    ov = r.get("overlap") or {}
    if not ov.get("variants"):
        print("%-24s %s: %s" % (name, r.get("status"), (ov.get("note") or r.get("message") or "")[:160]))
        continue
    for v in ov["variants"]:
        g, gp = v.get("gain_ms"), v.get("predicted_gain_ms")
        agree = None
        if isinstance(g, float) and isinstance(gp, float):
            agree = (g > 0.01) == (gp > 0.01)
        print("%-24s %5d %3d %4s %8s %8s | %8s %8s | %8s %8s %5s | %7s %7s %7s %7s  %s" % (
            name, fdim, k, v.get("comm_sms"), f(plain), f(ov.get("serial_chunked_ms")),
            f(v.get("overlapped_ms")), f(v.get("predicted_overlapped_ms")), f(g), f(gp),
            {True: "ok", False: "WRONG", None: "—"}[agree],
            f(v.get("chunk_compute_ms")), f(v.get("predicted_chunk_compute_ms")),
            f(v.get("chunk_comm_alone_ms")), f(v.get("chunk_comm_beside_ms")),
            "ok %.1e" % v["max_rel"] if isinstance(v.get("max_rel"), float) else r.get("status")))
        rows.append(dict(v, case=name, t=t, f=fdim, chunks=k, setting=setting(envs), plain_ms=plain,
                         serial_chunked_ms=ov.get("serial_chunked_ms"), sign_ok=agree))

# per NCCL setting: the figures the model prices with
fits = {}
for s in sorted({r["setting"] for r in rows}):
    mine = [r for r in rows if r["setting"] == s]
    cont, loss, per = [], [], []
    full, alone0 = {}, {}   # per case: c on every SM and the all-reduce alone at s = 0
    for r in mine:
        if r.get("comm_sms") == 0:
            full[r["case"]], alone0[r["case"]] = r.get("chunk_compute_ms"), r.get("chunk_comm_alone_ms")
    for r in mine:
        c, ma, mb, o, k = (r.get(x) for x in ("chunk_compute_ms", "chunk_comm_alone_ms", "chunk_comm_beside_ms",
                                              "overlapped_ms", "chunks"))
        if not all(isinstance(x, (int, float)) and x > 0 for x in (c, ma, mb, o)):
            continue
        cont.append(mb / ma)
        call = full.get(r["case"]) or c
        # the GEMMs' loss where their grid leaves no SM idle (c within 5% of every SM's)
        if c <= 1.05 * call:
            loss.append((o - (c + (k - 1) * max(c, mb) + ma)) / ((k - 1) * min(c, mb)))
        # per CTA: the chunk's bytes over its time alone less 2 latency steps, over s
        chunk_bytes = r["t"] * 4096 * 2 / k
        sms = r.get("comm_sms") or 0
        if sms > 0 and ma * 1e-3 > 2 * alpha:
            per.append((sms, chunk_bytes / (ma * 1e-3 - 2 * alpha), alone0.get(r["case"]), ma))
    fit = {}
    if cont:
        fit["overlap_contention"] = max(1.0, statistics.median(cont))
    if loss:
        fit["overlap_compute_loss"] = min(1.0, max(0.0, statistics.median(loss)))
    if per:
        # the fewest CTAs that still reach the full bus (alone within 20% of s = 0's)
        # bound the per-CTA bandwidth from below; fewer that do not, measure it
        slow = [bw / s for s, bw, m0, ma in per if m0 and ma > 1.2 * m0]
        fast = [bw / s for s, bw, m0, ma in per if m0 and ma <= 1.2 * m0]
        if slow:
            fit["cta_bus_bandwidth_bytes_per_s"] = statistics.median(slow)
        elif fast:
            fit["cta_bus_bandwidth_bytes_per_s"] = max(fast)
            fit["cta_bus_bandwidth_is_lower_bound"] = True
    fits[s] = fit

print()
print("figures for data/archs/%s.json interconnect, per NCCL setting (medians over its variants):" % arch_id)
for s, fit in fits.items():
    print("  %-60s %s" % (s, ", ".join("%s %.4g" % kv for kv in fit.items() if not isinstance(kv[1], bool))
                          + (" (per CTA: a lower bound)" if fit.get("cta_bus_bandwidth_is_lower_bound") else "")
                          or "nothing to fit"))
signed = [r for r in rows if r["sign_ok"] is not None]
print("gain sign (> 0.01 ms) predicted right in %d of %d variants" % (sum(r["sign_ok"] for r in signed), len(signed)))
gains = sorted((r for r in rows if isinstance(r.get("gain_ms"), float) and r["gain_ms"] > 0.01),
               key=lambda r: -r["gain_ms"])
print("measured gains: " + ("; ".join("%s s=%s %+.3f ms (pred %s)" % (r["case"], r["comm_sms"], r["gain_ms"],
                                                                       f(r.get("predicted_gain_ms"), "%+.3f"))
                                      for r in gains[:8]) or "none"))
json.dump({"arch": arch_id, "fits": fits, "rows": rows}, open(os.path.join(out, "overlap-fit.json"), "w"), indent=1)
