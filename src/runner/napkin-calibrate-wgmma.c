/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"

#include "config.h"

#include "napkin-calibrate-wgmma.h"

/* One kernel per element type. The 128 accumulators of a thread (64 × 256 fp32 over a
 * warpgroup) are asm operands, as CUTLASS writes them; the descriptors use no swizzle,
 * core matrices of 8 rows × 16 bytes (leading offset 128 B along k, stride 256 B along
 * m or n), which keeps every access inside the 2 KB A tile and the 8 KB B tile. What
 * the tiles hold does not change the rate; they are filled with a small constant so
 * that the sums stay finite. Two warpgroups per block: while one waits for its group,
 * the other keeps the tensor cores fed. */
static void
append_kernel (GString    *s,
               const char *name,
               const char *type,
               int         k)
{
  g_string_append_printf (s,
    "extern \"C\" __global__ void __launch_bounds__ (%d, 1)\n"
    "%s (float *out, int iters)\n"
    "{\n"
    "  __shared__ __align__ (1024) unsigned short tile[(64 + 256) * 16];\n"
    "  for (int i = threadIdx.x; i < (64 + 256) * 16; i += blockDim.x)\n"
    "    tile[i] = 0x2000;\n"
    "  __syncthreads ();\n"
    "  asm volatile (\"fence.proxy.async.shared::cta;\" ::: \"memory\");\n"
    "  unsigned base;\n"
    "  asm (\"{ .reg .u64 t; cvta.to.shared.u64 t, %%1; cvt.u32.u64 %%0, t; }\" : \"=r\" (base) : \"l\" (tile));\n"
    "  const unsigned long long da = napkin_cal_desc (base), db = napkin_cal_desc (base + 64 * 16 * 2);\n"
    "  float d[128];\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 128; i++)\n"
    "    d[i] = 0.0f;\n"
    "  for (int it = 0; it < iters; it++)\n"
    "    {\n"
    "      asm volatile (\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n"
    "#pragma unroll\n"
    "      for (int j = 0; j < %d; j++)\n"
    "        asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%130, 0;\\n\"\n"
    "                      \"wgmma.mma_async.sync.aligned.m64n256k%d.f32.%s.%s {",
    NAPKIN_CAL_WGMMA_THREADS, name, NAPKIN_CAL_WGMMA_PER_ITER, k, type, type);
  for (int i = 0; i < 128; i++)
    g_string_append_printf (s, "%s%%%d", i ? ", " : "", i);
  /* 8-bit operands are K-major only: the instruction has no transpose flags */
  g_string_append (s, k == 32 ? "}, %128, %129, p, 1, 1; }\"\n                      : "
                              : "}, %128, %129, p, 1, 1, 0, 0; }\"\n                      : ");
  for (int i = 0; i < 128; i++)
    g_string_append_printf (s, "%s\"+f\" (d[%d])", i ? ", " : "", i);
  g_string_append (s,
    "\n                      : \"l\" (da), \"l\" (db), \"r\" (1));\n"
    "      asm volatile (\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n"
    "      asm volatile (\"wgmma.wait_group.sync.aligned 0;\" ::: \"memory\");\n"
    "    }\n"
    "  float t = 0.0f;\n"
    "#pragma unroll\n"
    "  for (int i = 0; i < 128; i++)\n"
    "    t += d[i];\n"
    "  if (t == -1.0f)\n"
    "    out[threadIdx.x] = t;\n"
    "}\n");
}

char *
napkin_calibrate_wgmma_source (void)
{
  GString *s = g_string_new (NULL);

  /* sm_90 shared-memory matrix descriptor: start, leading and stride byte offsets (>> 4),
   * layout 0 (no swizzle) in bits 62-63 */
  g_string_append (s,
    "static __device__ __forceinline__ unsigned long long\n"
    "napkin_cal_desc (unsigned addr)\n"
    "{\n"
    "  return (unsigned long long) ((addr & 0x3FFFF) >> 4)\n"
    "         | ((unsigned long long) (128 >> 4) << 16)\n"
    "         | ((unsigned long long) (256 >> 4) << 32);\n"
    "}\n");
  append_kernel (s, "cal_wgmma_fp16", "f16", 16);
  append_kernel (s, "cal_wgmma_bf16", "bf16", 16);
  append_kernel (s, "cal_wgmma_fp8", "e4m3", 32);
  return g_string_free (s, FALSE);
}

double
napkin_calibrate_wgmma_flops (guint blocks,
                              int   iters)
{
  /* per block: two warpgroups, each PER_ITER instructions an iteration */
  return (double) blocks * (NAPKIN_CAL_WGMMA_THREADS / 128) * iters * NAPKIN_CAL_WGMMA_PER_ITER
         * NAPKIN_CAL_WGMMA_FLOPS;
}
