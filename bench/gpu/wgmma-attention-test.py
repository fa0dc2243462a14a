#!/usr/bin/env python3
"""Standalone check and timing of the Hopper attention skeleton (kernels/flash-wgmma.cu),
outside Napkin: instantiates the template for several tile configurations (the same
@PARAMETER@ substitution as src/codegen/napkin-skeleton-flash-wgmma.c), builds them with
bench/gpu/wgmma-attention-test.cu (fp32 reference on the GPU, events, median) and runs it.

  bench/gpu/wgmma-attention-test.py [--build-only] [--out DIR]

Needs nvcc (sm_90a); the run needs a Hopper GPU."""
import argparse, math, os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# (d, q tile, key tile, stages, overlap, tma, ping-pong); N = 4096 takes q and key tiles
# dividing it.
CONFIGS = [
    (128, 128, 128, 2, 0, 0, 0),
    (128, 128, 128, 3, 1, 0, 0),
    (128, 128, 128, 3, 0, 1, 0),
    (128, 128, 128, 3, 1, 1, 0),
    (128, 128, 128, 3, 1, 1, 1),
    (128, 128, 128, 2, 1, 1, 1),
    (128, 128, 64, 4, 1, 1, 1),
    (128, 128, 64, 2, 1, 1, 1),
    (64, 128, 128, 4, 0, 1, 0),
    (64, 128, 128, 4, 1, 1, 0),
    (64, 128, 128, 4, 1, 1, 1),
    (64, 128, 128, 2, 1, 1, 1),
    (64, 128, 64, 4, 1, 1, 1),
    (64, 128, 256, 3, 0, 1, 0),
    (64, 64, 128, 4, 1, 1, 1),
]
B, H, N = 4, 16, 4096


def registers(nwg):
    """setmaxnreg counts (producer, consumers) that fit 64K registers per block."""
    prod = 32 if nwg >= 3 else 56
    cons = min(240, (65536 - 128 * prod) // (128 * nwg) // 8 * 8)
    return prod, cons


def wgmma_wrappers(name, bkv, d, mma):
    """The two wgmma calls and the accumulator fences as inline functions (one operand per
    accumulator register, so the asm strings depend on the tile sizes)."""
    ns, no = bkv // 2, d // 2
    regs = lambda n, first=0: ", ".join(f"%{i + first}" for i in range(n))
    outs = lambda arr, n: ", ".join(f'"+f" ({arr}[{i}])' for i in range(n))
    return f"""static __device__ __forceinline__ void
{name}_qk (float (&d)[{ns}], unsigned long long da, unsigned long long db, int acc)
{{
  asm volatile ("{{ .reg .pred p; setp.ne.b32 p, %{ns + 2}, 0; "
                "wgmma.mma_async.sync.aligned.m64n{bkv}k16.f32.{mma}.{mma} {{{regs(ns)}}}, %{ns}, %{ns + 1}, p, 1, 1, 0, 0; }}"
                : {outs('d', ns)}
                : "l" (da), "l" (db), "r" (acc) : "memory");
}}

static __device__ __forceinline__ void
{name}_pv (float (&d)[{no}], unsigned a0, unsigned a1, unsigned a2, unsigned a3, unsigned long long db)
{{
  asm volatile ("{{ .reg .pred p; setp.ne.b32 p, %{no + 5}, 0; "
                "wgmma.mma_async.sync.aligned.m64n{d}k16.f32.{mma}.{mma} {{{regs(no)}}}, {{{regs(4, no)}}}, %{no + 4}, p, 1, 1, 1; }}"
                : {outs('d', no)}
                : "r" (a0), "r" (a1), "r" (a2), "r" (a3), "l" (db), "r" (1) : "memory");
}}

static __device__ __forceinline__ void
{name}_fence_s (float (&d)[{ns}])
{{
  asm volatile ("" : {outs('d', ns)} :: "memory");
}}

static __device__ __forceinline__ void
{name}_fence_o (float (&d)[{no}])
{{
  asm volatile ("" : {outs('d', no)} :: "memory");
}}
"""


def instantiate(template, name, d, bq, bkv, stages, overlap, tma, pingpong, nq, nkv):
    prod, cons = registers(bq // 64)
    params = {
        "WGMMA": wgmma_wrappers(name, bkv, d, "f16"),
        "NAME": name, "BQ": str(bq), "BKV": str(bkv), "D": str(d), "STAGES": str(stages),
        "OVERLAP": str(overlap), "TMA": str(tma), "PINGPONG": str(pingpong), "NQ": str(nq), "NKV": str(nkv),
        "ALPHA": "%.9e" % (1 / math.sqrt(d)), "T": "napkin_f16", "OT": "napkin_f16", "MMA": "f16",
        "QS": "0", "KS": "1", "VS": "2", "OS": "3",
        "PRODUCER_REGS": str(prod), "CONSUMER_REGS": str(cons),
    }
    text = template
    for k, v in params.items():
        text = text.replace("@%s@" % k, v)
    assert not re.search(r"@[A-Z_]+@", text), "unfilled parameter"
    return text


def smem_bytes(d, bq, bkv, stages):
    return 1024 + bq * d * 2 + 2 * stages * bkv * d * 2 + 8 * (1 + 3 * stages)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="/tmp/wgmma-attn")
    ap.add_argument("--build-only", action="store_true")
    ap.add_argument("--only", type=int, nargs="*")
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    template = open(os.path.join(ROOT, "kernels", "flash-wgmma.cu")).read()
    chosen = [c for i, c in enumerate(CONFIGS) if not a.only or i in a.only]
    parts, table = [], []
    for i, (d, bq, bkv, st, ov, tma, pp) in enumerate(chosen):
        name = "attn_c%d" % i
        parts.append(instantiate(template, name, d, bq, bkv, st, ov, tma, pp, N, N))
        table.append('  { "d%d q%d k%d st%d ov%d %s%s", (const void *) %s, %d, %d, %d, %d, %d, %d },'
                     % (d, bq, bkv, st, ov, "tma" if tma else "cp.async", " pp" if pp else "", name, tma, d, bq, bkv,
                        (bq // 64 + 1) * 128, smem_bytes(d, bq, bkv, st)))
    with open(os.path.join(a.out, "wgmma-attention-kernels.cuh"), "w") as f:
        f.write("\n".join(parts))
        f.write("\nstatic const Config configs[] = {\n%s\n};\n" % "\n".join(table))
        f.write("#define ATT_B %d\n#define ATT_H %d\n#define ATT_N %d\n" % (B, H, N))
    exe = os.path.join(a.out, "wgmma-attention-test")
    cmd = ["nvcc", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-Xptxas", "-v",
           "-I", a.out, os.path.join(ROOT, "bench", "gpu", "wgmma-attention-test.cu"), "-o", exe]
    print(" ".join(cmd), flush=True)
    r = subprocess.run(cmd, capture_output=True, text=True)
    log = r.stdout + r.stderr
    open(os.path.join(a.out, "ptxas.log"), "w").write(log)
    for line in log.splitlines():
        if any(w in line for w in ("error", "warning", "registers", "spill", "Compiling entry")):
            print(line)
    if r.returncode != 0:
        sys.exit("nvcc failed")
    if not a.build_only:
        sys.exit(subprocess.run([exe]).returncode)


if __name__ == "__main__":
    main()
