/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "napkin-plan-private.h"
#include "napkin-test-gemm.h"

/* Problems for the GEMM printers (docs/plan.md, "GEMM tile primitives"): the brief's
 * edge cases (odd sizes, K not a multiple of the chunk, M = 1, skinny M with split-K,
 * N = 50257, batches with a shared B, every layout, fp8, the three epilogues) and the
 * aligned sizes whose speed we keep. */
static const char *table[] = {
  "name=odd-tn t=sm90 ab=bf16 c=fp32 m=37 n=53 k=29 a=k bl=n tile=128x128x64 stages=4",
  "name=odd-nt t=sm90 ab=fp16 c=bf16 m=37 n=53 k=29 a=m bl=k tile=128x64x64 stages=4",
  "name=odd-nn t=sm90 ab=bf16 c=bf16 m=37 n=53 k=29 a=m bl=n tile=64x64x64 cons=1 stages=3",
  "name=k4095 t=sm90 ab=bf16 c=bf16 m=1000 n=4096 k=4095 a=k bl=n tile=128x256x64 stages=4",
  "name=k4095-mk t=sm90 ab=fp16 c=fp32 m=1000 n=4096 k=4095 a=m bl=k tile=128x128x64 stages=5",
  "name=m1 t=sm90 ab=bf16 c=bf16 m=1 n=4096 k=4096 a=k bl=k tile=64x128x64 cons=1 stages=6",
  "name=m64-split4 t=sm90 ab=bf16 c=bf16 m=64 n=4096 k=4096 a=k bl=k split=4 tile=64x128x64 cons=1 stages=6",
  "name=lmhead t=sm90 ab=bf16 c=bf16 m=4096 n=50257 k=4096 a=k bl=k tile=128x256x64 stages=4",
  "name=n50257-nmajor t=sm90 ab=bf16 c=fp32 m=256 n=50257 k=1024 a=k bl=n tile=128x256x64 stages=4",
  "name=batch3-sharedb t=sm90 ab=bf16 c=bf16 b=3 m=512 n=384 k=256 a=k bl=n sharedb=1 tile=128x128x64 stages=4",
  "name=batch3-mn t=sm90 ab=fp16 c=fp32 b=3 m=300 n=200 k=136 a=m bl=n tile=128x64x64 stages=4",
  "name=e4m3 t=sm90 ab=e4m3 c=bf16 m=512 n=512 k=512 a=k bl=k tile=128x128x128 stages=4",
  "name=e4m3-odd-repack t=sm90 ab=e4m3 c=fp32 m=300 n=200 k=160 a=m bl=n tile=128x64x128 stages=3",
  "name=e5m2 t=sm90 ab=e5m2 c=fp32 b=2 m=1024 n=1024 k=1024 a=k bl=k tile=128x128x128 stages=4",
  "name=bias-gelu t=sm90 ab=bf16 c=bf16 m=1024 n=4096 k=1024 a=k bl=k epi=bias_gelu tile=128x256x64 stages=4",
  "name=residual-odd t=sm90 ab=fp16 c=fp16 m=777 n=1000 k=333 a=k bl=n epi=residual tile=128x128x64 stages=4",
  "name=silu-gate t=sm90 ab=bf16 c=bf16 m=2048 n=2048 k=512 a=k bl=k epi=silu_gate tile=128x128x64 stages=4",
  /* maps of the value alone: applied in registers, C still stored by TMA */
  "name=gelu-tma t=sm90 ab=bf16 c=bf16 m=1000 n=4096 k=1024 a=k bl=k epi=gelu tile=128x256x64 stages=4",
  "name=pp-gelu-tma t=sm90 ab=e4m3 c=bf16 m=2000 n=3072 k=2048 a=k bl=k epi=gelu tile=128x128x128 pp=1 stages=6",
  "name=split4-bias-gelu t=sm90 ab=bf16 c=bf16 m=128 n=1024 k=8192 a=k bl=k split=4 epi=bias_gelu tile=128x128x64 stages=4",
  "name=aligned-4096 t=sm90 ab=bf16 c=bf16 m=4096 n=4096 k=4096 a=k bl=n tile=128x256x64 stages=4",
  "name=aligned-4096-tn t=sm90 ab=bf16 c=bf16 m=4096 n=4096 k=4096 a=k bl=k tile=128x256x64 stages=4",
  "name=aligned-4096-f32 t=sm90 ab=fp16 c=fp32 m=4096 n=4096 k=4096 a=k bl=n tile=128x256x64 stages=4",
  "name=aligned-8192 t=sm90 ab=bf16 c=bf16 m=8192 n=8192 k=8192 a=k bl=n tile=128x256x64 stages=4",
  "name=mlp-11008 t=sm90 ab=bf16 c=bf16 m=8192 n=4096 k=11008 a=k bl=k tile=128x256x64 stages=4",
  "name=skinny-m1 t=sm90 ab=bf16 c=bf16 m=1 n=4096 k=4096 a=k bl=k split=4 tile=64x128x64 cons=1 stages=6",
  "name=skinny-m16 t=sm90 ab=bf16 c=bf16 m=16 n=4096 k=4096 a=k bl=k split=4 tile=64x128x64 cons=1 stages=6",
  "name=skinny-m64 t=sm90 ab=bf16 c=bf16 m=64 n=4096 k=4096 a=k bl=k tile=64x128x64 cons=1 stages=6",
  "name=skinny-m256 t=sm90 ab=bf16 c=bf16 m=256 n=4096 k=4096 a=k bl=k tile=128x128x64 stages=5",
  "name=bm256 t=sm90 ab=bf16 c=bf16 m=4096 n=4096 k=4096 a=k bl=n tile=256x128x64 stages=4",
  "name=one-consumer-bm128 t=sm90 ab=bf16 c=fp32 m=1000 n=1000 k=1000 a=m bl=k tile=128x128x64 cons=1 stages=4",
  "name=fp8-8192 t=sm90 ab=e4m3 c=bf16 m=8192 n=8192 k=8192 a=k bl=k tile=128x256x128 stages=4",
  "name=fp8-4096 t=sm90 ab=e4m3 c=bf16 m=4096 n=4096 k=4096 a=k bl=k tile=128x256x128 stages=4",
  "name=mma-odd t=sm80 ab=bf16 c=fp32 m=37 n=53 k=29 a=k bl=n tile=128x128x32 warp=64x32 stages=3",
  "name=mma-odd-mk t=sm80 ab=fp16 c=bf16 m=37 n=53 k=29 a=m bl=k tile=64x64x32 warp=32x32 stages=3",
  "name=mma-k4095 t=sm80 ab=bf16 c=bf16 m=1000 n=4096 k=4095 a=k bl=n tile=128x128x32 warp=64x32 stages=4",
  "name=mma-aligned-4096 t=sm80 ab=bf16 c=bf16 m=4096 n=4096 k=4096 a=k bl=n tile=128x128x32 warp=64x32 stages=4",
  "name=mma-aligned-4096-tn t=sm80 ab=fp16 c=fp16 m=4096 n=4096 k=4096 a=k bl=k tile=128x256x32 warp=64x64 stages=3",
  "name=mma-batch3-residual t=sm80 ab=bf16 c=bf16 b=3 m=512 n=384 k=256 a=k bl=n sharedb=1 epi=residual "
    "tile=128x128x32 warp=64x32 stages=4",
  "name=mma-split4-silu t=sm80 ab=bf16 c=bf16 m=64 n=4096 k=4096 a=k bl=k split=4 epi=silu_gate "
    "tile=64x128x32 warp=32x32 stages=4",
  "name=mma-n50257 t=sm80 ab=bf16 c=bf16 m=512 n=50257 k=1024 a=k bl=k epi=bias_gelu tile=128x128x32 warp=64x32 "
    "stages=4",
  "name=mma-16-warps t=sm80 ab=fp16 c=fp16 m=4096 n=4096 k=4096 a=k bl=n tile=128x256x32 warp=64x32 stages=3",
  "name=mma-mn t=sm80 ab=fp16 c=fp32 b=2 m=300 n=200 k=136 a=m bl=n tile=64x64x32 warp=32x32 stages=3",
  /* round 2: the repack near copy speed (its own time in the kernel column), the staged
   * epilogue (unaligned rows of C, the gate read as vectors, beside the plain GEMM of
   * the same shape), skinny shapes as the plan now cuts them beside the old choice, a
   * batched N-major B, BN in steps of 8 with B K-major */
  "name=repack-b-4097 t=sm90 ab=bf16 c=bf16 m=4095 n=4097 k=4096 a=k bl=n tile=256x128x64 stages=4",
  "name=repack-vocab-nmajor t=sm90 ab=bf16 c=bf16 m=1024 n=50257 k=4096 a=k bl=n tile=128x256x64 stages=4",
  "name=e4m3-transpose t=sm90 ab=e4m3 c=bf16 m=4096 n=4096 k=4096 a=m bl=n tile=128x256x128 stages=4",
  "name=mlp-up-plain t=sm90 ab=bf16 c=bf16 m=2048 n=11008 k=4096 a=k bl=k tile=128x256x64 stages=4",
  "name=mlp-up-swiglu t=sm90 ab=bf16 c=bf16 m=2048 n=11008 k=4096 a=k bl=k epi=silu_gate tile=128x256x64 stages=4",
  "name=mlp-up-bias-gelu t=sm90 ab=bf16 c=bf16 m=2048 n=11008 k=4096 a=k bl=k epi=bias_gelu tile=128x256x64 "
    "stages=4",
  "name=lmhead-gate t=sm90 ab=bf16 c=bf16 m=1024 n=50257 k=4096 a=k bl=k epi=silu_gate tile=128x256x64 stages=4",
  "name=lmhead-f32 t=sm90 ab=bf16 c=fp32 m=1024 n=50257 k=1024 a=k bl=k tile=128x256x64 stages=4",
  "name=skinny-m128-64x64 t=sm90 ab=bf16 c=bf16 m=128 n=4096 k=4096 a=k bl=k tile=64x64x64 cons=1 stages=4",
  "name=skinny-m128-split2 t=sm90 ab=bf16 c=bf16 m=128 n=4096 k=4096 a=k bl=k split=2 tile=64x128x64 cons=1 "
    "stages=4",
  "name=skinny-m1-split8 t=sm90 ab=bf16 c=bf16 m=1 n=4096 k=4096 a=k bl=k split=8 tile=64x256x64 cons=1 stages=4",
  /* ping-pong consumers (each takes whole tiles in turn): staged epilogues with operands,
   * unaligned rows of C, a TMA store, a K split, a batch, fp8, edges everywhere */
  "name=pp-residual-odd t=sm90 ab=bf16 c=bf16 m=2671 n=12014 k=128 a=k bl=k epi=residual tile=64x256x64 pp=1 "
    "stages=4",
  "name=pp-gate-128 t=sm90 ab=bf16 c=bf16 m=6556 n=9184 k=1216 a=k bl=k epi=silu_gate tile=128x128x64 pp=1 stages=6",
  "name=pp-bias-gelu-odd t=sm90 ab=bf16 c=bf16 m=1024 n=14276 k=1024 a=k bl=k epi=bias_gelu tile=64x256x64 pp=1 "
    "stages=4",
  "name=pp-tma t=sm90 ab=bf16 c=bf16 m=1000 n=4096 k=4095 a=k bl=n tile=128x128x64 pp=1 stages=6",
  "name=pp-split4 t=sm90 ab=bf16 c=bf16 m=128 n=1024 k=8192 a=k bl=k split=4 epi=bias_gelu tile=128x128x64 pp=1 "
    "stages=6",
  "name=pp-batch3 t=sm90 ab=fp16 c=fp32 b=3 m=300 n=200 k=136 a=m bl=n epi=residual tile=64x128x64 pp=1 stages=4",
  "name=pp-e4m3 t=sm90 ab=e4m3 c=bf16 m=1000 n=1000 k=1000 a=k bl=k epi=silu_gate tile=128x128x128 pp=1 stages=6",
  "name=skinny-m256-split4 t=sm90 ab=bf16 c=bf16 m=256 n=4096 k=4096 a=k bl=k split=4 tile=128x256x64 stages=4",
  "name=scores-batched t=sm90 ab=bf16 c=bf16 b=16 m=2048 n=2048 k=128 a=k bl=n tile=128x256x64 stages=4",
  "name=bn40-kmajor t=sm90 ab=bf16 c=bf16 m=1000 n=1000 k=512 a=k bl=k tile=128x40x64 stages=4",
};

const char **
napkin_test_gemm_table (guint *n)
{
  *n = G_N_ELEMENTS (table);
  return table;
}

void
napkin_test_gemm_free (NapkinTestGemm *t)
{
  if (t == NULL)
    return;
  g_free (t->name);
  g_free (t->spec);
  napkin_plan_free (t->plan);
  napkin_cuda_module_free (t->module);
  g_free (t);
}

static gboolean
parse_dtype (const char  *s,
             NapkinDtype *out)
{
  static const struct { const char *name; NapkinDtype t; } names[] = {
    { "fp32", NAPKIN_DTYPE_FP32 }, { "fp16", NAPKIN_DTYPE_FP16 }, { "bf16", NAPKIN_DTYPE_BF16 },
    { "e4m3", NAPKIN_DTYPE_FP8_E4M3 }, { "e5m2", NAPKIN_DTYPE_FP8_E5M2 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    if (g_str_equal (s, names[i].name))
      {
        *out = names[i].t;
        return TRUE;
      }
  return FALSE;
}

static gboolean
parse_int (const char *s,
           gint64     *out)
{
  char *end = NULL;
  gint64 v = g_ascii_strtoll (s, &end, 10);

  if (end == s || *end != '\0' || v < 0)
    return FALSE;
  *out = v;
  return TRUE;
}

static gint64
round_up (gint64 v,
          gint64 to)
{
  return (v + to - 1) / to * to;
}

/* An operand in a new scratch buffer: batch matrices of rows × cols, dense rows. */
static NapkinTestOperand
operand (NapkinPlan *plan,
         gint64      batch,
         gint64      rows,
         gint64      cols,
         gint64      ld,
         NapkinDtype dtype)
{
  NapkinTestOperand o = { 0 };

  o.rows = rows;
  o.cols = cols;
  o.ld = ld;
  o.bstride = batch > 1 ? rows * ld : 0;
  o.scratch = _napkin_plan_add_scratch (plan, MAX (batch, 1) * rows * ld * napkin_dtype_bytes (dtype));
  o.offset = g_array_index (plan->scratch_offset, gint64, o.scratch);
  return o;
}

static NapkinPlanBuffer
buffer (int         scratch,
        NapkinDtype dtype)
{
  return (NapkinPlanBuffer) { -1, scratch, dtype };
}

/* The operand a GEMM reads: `o` itself, or a repack of it (queued) when the kernel
 * needs aligned rows or (fp8) K-major. Returns the scratch index, ld and batch stride. */
static void
gemm_operand (NapkinPlan              *plan,
              const NapkinTestOperand *o,
              gint64                   batch,
              NapkinDtype              dtype,
              gboolean                 transpose,
              int                     *scratch,
              gint64                  *ld,
              gint64                  *bstride)
{
  const gint64 per16 = 16 / napkin_dtype_bytes (dtype);
  const gint64 width = transpose ? o->rows : o->cols, height = transpose ? o->cols : o->rows;
  const gint64 copies = o->bstride == 0 ? 1 : batch;
  NapkinPlanKernel *k;
  NapkinPlanRepack *r;

  if (!transpose && o->ld % per16 == 0)
    {
      *scratch = o->scratch;
      *ld = o->ld;
      *bstride = o->bstride;
      return;
    }
  k = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_REPACK, NAPKIN_PATH_SIMT);
  g_free (k->name);
  k->name = g_strdup (transpose ? "transpose" : "align");
  r = &k->u.repack;
  r->dtype = dtype;
  r->batch = copies;
  r->rows = o->rows;
  r->cols = o->cols;
  r->ld_src = o->ld;
  r->src_bstride = o->bstride;
  r->ld_dst = round_up (width, per16);
  r->dst_bstride = copies > 1 ? height * r->ld_dst : 0;
  r->transpose = transpose;
  r->src = buffer (o->scratch, dtype);
  r->dst = buffer (_napkin_plan_add_scratch (plan, copies * height * r->ld_dst * napkin_dtype_bytes (dtype)), dtype);
  napkin_plan_helper_launch (k);
  g_ptr_array_add (plan->kernels, k);
  *scratch = r->dst.scratch;
  *ld = r->ld_dst;
  *bstride = r->dst_bstride;
}

static void
add_map (GArray     *maps,
         NapkinMapFn fn,
         int         other,
         NapkinDtype dtype,
         gint64      s0,
         gint64      s1,
         gint64      s2)
{
  NapkinPlanMap m = { 0 };

  m.node = -1;
  m.fn = fn;
  m.alpha = 1.0;
  m.dtype = NAPKIN_DTYPE_FP32;
  if (other >= 0)
    {
      m.has_other = TRUE;
      m.other = buffer (other, dtype);
      m.stride[0] = s0;
      m.stride[1] = s1;
      m.stride[2] = s2;
    }
  g_array_append_val (maps, m);
}

NapkinTestGemm *
napkin_test_gemm_new (const char *spec,
                      GError    **error)
{
  g_autoptr(NapkinTestGemm) t = g_new0 (NapkinTestGemm, 1);
  g_auto(GStrv) words = g_strsplit (spec, " ", -1);
  gint64 BM = 128, BN = 128, BK = 64, WM = 0, WN = 0, stages = 4, consumers = 2, ctma = 1, split = 1, pp = 0;
  NapkinPlanKernel *k, *gk;
  NapkinPlanGemm *g;
  GArray *epilogue;

  t->spec = g_strdup (spec);
  t->sm90 = TRUE;
  t->ab_dtype = NAPKIN_DTYPE_BF16;
  t->c_dtype = NAPKIN_DTYPE_BF16;
  t->batch = 1;
  t->a_kmajor = TRUE;
  t->b_kmajor = FALSE;
  for (guint i = 0; words[i] != NULL; i++)
    {
      const char *w = words[i];
      const char *eq = strchr (w, '=');
      g_autofree char *key = NULL;
      const char *v;
      gboolean ok = TRUE;

      if (*w == '\0')
        continue;
      if (eq == NULL)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "“%s”: not key=value", w);
          return NULL;
        }
      key = g_strndup (w, eq - w);
      v = eq + 1;
      if (g_str_equal (key, "name"))
        t->name = g_strdup (v);
      else if (g_str_equal (key, "t"))
        ok = (t->sm90 = g_str_equal (v, "sm90")) || g_str_equal (v, "sm80");
      else if (g_str_equal (key, "ab"))
        ok = parse_dtype (v, &t->ab_dtype);
      else if (g_str_equal (key, "c"))
        ok = parse_dtype (v, &t->c_dtype);
      else if (g_str_equal (key, "b"))
        ok = parse_int (v, &t->batch) && t->batch > 0;
      else if (g_str_equal (key, "m"))
        ok = parse_int (v, &t->M);
      else if (g_str_equal (key, "n"))
        ok = parse_int (v, &t->N);
      else if (g_str_equal (key, "k"))
        ok = parse_int (v, &t->K);
      else if (g_str_equal (key, "a"))
        ok = (t->a_kmajor = g_str_equal (v, "k")) || g_str_equal (v, "m");
      else if (g_str_equal (key, "bl"))
        ok = (t->b_kmajor = g_str_equal (v, "k")) || g_str_equal (v, "n");
      else if (g_str_equal (key, "sharedb"))
        t->shared_b = g_str_equal (v, "1");
      else if (g_str_equal (key, "split"))
        ok = parse_int (v, &split) && split > 0;
      else if (g_str_equal (key, "stages"))
        ok = parse_int (v, &stages);
      else if (g_str_equal (key, "cons"))
        ok = parse_int (v, &consumers);
      else if (g_str_equal (key, "pp"))
        ok = parse_int (v, &pp);
      else if (g_str_equal (key, "ctma"))
        ok = parse_int (v, &ctma);
      else if (g_str_equal (key, "tile"))
        ok = sscanf (v, "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, &BM, &BN, &BK) == 3;
      else if (g_str_equal (key, "warp"))
        ok = sscanf (v, "%" G_GINT64_FORMAT "x%" G_GINT64_FORMAT, &WM, &WN) == 2;
      else if (g_str_equal (key, "epi"))
        {
          if (g_str_equal (v, "none"))
            t->epi = NAPKIN_TEST_EPI_NONE;
          else if (g_str_equal (v, "bias_gelu"))
            t->epi = NAPKIN_TEST_EPI_BIAS_GELU;
          else if (g_str_equal (v, "residual"))
            t->epi = NAPKIN_TEST_EPI_RESIDUAL;
          else if (g_str_equal (v, "silu_gate"))
            t->epi = NAPKIN_TEST_EPI_SILU_GATE;
          else if (g_str_equal (v, "gelu"))
            t->epi = NAPKIN_TEST_EPI_GELU;
          else
            ok = FALSE;
        }
      else
        ok = FALSE;
      if (!ok)
        {
          g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "“%s”: unknown key or bad value", w);
          return NULL;
        }
    }
  if (t->M < 1 || t->N < 1 || t->K < 1)
    {
      g_set_error (error, G_OPTION_ERROR, G_OPTION_ERROR_BAD_VALUE, "m, n and k must be given and positive");
      return NULL;
    }
  if (t->name == NULL)
    t->name = g_strdup ("gemm");
  t->split_k = (guint) split;
  t->x_dtype = t->c_dtype;

  t->plan = g_new0 (NapkinPlan, 1);
  t->plan->target = g_strdup (t->sm90 ? "sm_90a" : "sm_80");
  t->plan->kernels = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  t->plan->scratch = g_array_new (FALSE, FALSE, sizeof (gint64));
  t->plan->scratch_offset = g_array_new (FALSE, FALSE, sizeof (gint64));
  t->plan->feasible = TRUE;

  /* The operands as stored: dense rows. */
  t->a = operand (t->plan, t->batch, t->a_kmajor ? t->M : t->K, t->a_kmajor ? t->K : t->M,
                  t->a_kmajor ? t->K : t->M, t->ab_dtype);
  t->b = operand (t->plan, t->shared_b ? 1 : t->batch, t->b_kmajor ? t->N : t->K, t->b_kmajor ? t->K : t->N,
                  t->b_kmajor ? t->K : t->N, t->ab_dtype);
  t->c = operand (t->plan, t->batch, t->M, t->N, t->N, t->c_dtype);
  if (t->epi == NAPKIN_TEST_EPI_BIAS_GELU)
    t->x = operand (t->plan, 1, 1, t->N, t->N, t->x_dtype);
  else if (t->epi != NAPKIN_TEST_EPI_NONE && t->epi != NAPKIN_TEST_EPI_GELU)
    t->x = operand (t->plan, t->batch, t->M, t->N, t->N, t->x_dtype);
  else
    t->x.scratch = -1;

  epilogue = g_array_new (FALSE, TRUE, sizeof (NapkinPlanMap));
  switch (t->epi)
    {
    case NAPKIN_TEST_EPI_BIAS_GELU:
      add_map (epilogue, NAPKIN_FN_ADD, t->x.scratch, t->x_dtype, 0, 0, 1);
      add_map (epilogue, NAPKIN_FN_GELU, -1, 0, 0, 0, 0);
      break;
    case NAPKIN_TEST_EPI_RESIDUAL:
      add_map (epilogue, NAPKIN_FN_ADD, t->x.scratch, t->x_dtype, t->M * t->N, t->N, 1);
      break;
    case NAPKIN_TEST_EPI_SILU_GATE:
      add_map (epilogue, NAPKIN_FN_SILU, -1, 0, 0, 0, 0);
      add_map (epilogue, NAPKIN_FN_MUL, t->x.scratch, t->x_dtype, t->M * t->N, t->N, 1);
      break;
    case NAPKIN_TEST_EPI_GELU:
      add_map (epilogue, NAPKIN_FN_GELU, -1, 0, 0, 0, 0);
      break;
    case NAPKIN_TEST_EPI_NONE:
    default:
      break;
    }

  /* The GEMM, after the repacks its operands need. */
  gk = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GEMM, t->sm90 ? NAPKIN_PATH_WGMMA : NAPKIN_PATH_MMA);
  g_free (gk->name);
  gk->name = g_strdup (t->name);
  g = &gk->u.gemm;
  g->node = -1;
  g->ab_dtype = t->ab_dtype;
  g->c_dtype = t->c_dtype;
  g->batch = t->batch;
  g->M = t->M;
  g->N = t->N;
  g->K = t->K;
  {
    const gboolean fp8 = napkin_dtype_bytes (t->ab_dtype) == 1;
    int sa, sb;

    gemm_operand (t->plan, &t->a, t->batch, t->ab_dtype, fp8 && !t->a_kmajor, &sa, &g->lda, &g->a_bstride);
    gemm_operand (t->plan, &t->b, t->batch, t->ab_dtype, fp8 && !t->b_kmajor, &sb, &g->ldb, &g->b_bstride);
    g->a_kmajor = t->a_kmajor || fp8;
    g->b_kmajor = t->b_kmajor || fp8;
    g->a = buffer (sa, t->ab_dtype);
    g->b = buffer (sb, t->ab_dtype);
  }
  g->ldc = t->N;
  g->c_bstride = t->c.bstride;
  g->c = buffer (t->c.scratch, t->c_dtype);
  g->BM = BM;
  g->BN = BN;
  g->BK = BK;
  g->WM = WM;
  g->WN = WN;
  g->stages = (guint) stages;
  g->consumers = (guint) consumers;
  g->pingpong = pp != 0;
  g->split_k = t->split_k;
  g->partials = -1;
  g->persistent = t->sm90;
  g->c_tma = ctma != 0;
  if (t->split_k > 1)
    {
      g->partials = _napkin_plan_add_scratch (t->plan, (gint64) t->split_k * t->batch * t->M * t->N * 4);
      g->epilogue = g_array_new (FALSE, TRUE, sizeof (NapkinPlanMap));
    }
  else
    g->epilogue = g_array_ref (epilogue);
  g_ptr_array_add (t->plan->kernels, gk);
  if (t->split_k > 1)
    {
      k = _napkin_plan_kernel_new (gk, NAPKIN_PLAN_SPLIT_REDUCE, NAPKIN_PATH_SIMT);
      k->u.gemm = *g;
      k->u.gemm.epilogue = g_array_ref (epilogue);
      napkin_plan_helper_launch (k);
      g_ptr_array_add (t->plan->kernels, k);
    }
  g_array_unref (epilogue);

  /* The module: every buffer in the workspace, slot 0. */
  t->module = g_new0 (NapkinCudaModule, 1);
  t->module->kernels = g_ptr_array_new_with_free_func (_napkin_cuda_kernel_free);
  t->module->args = g_array_new (FALSE, FALSE, sizeof (int));
  t->module->workspace_slot = 0;
  t->module->workspace_bytes = t->plan->scratch_bytes;
  t->module->flags = t->sm90 ? NAPKIN_CODEGEN_SM90A : NAPKIN_CODEGEN_DEFAULT;
  {
    GString *out = g_string_new (NULL);
    g_autofree char *prelude = _napkin_cuda_prelude ();
    const NapkinPrintCtx ctx = { t->plan, NULL, t->module, NULL, out };

    g_string_append (out, prelude);
    g_string_append_printf (out, "/* Problem %s: %s */\n", t->name, spec);
    for (guint i = 0; i < t->plan->kernels->len; i++)
      {
        const NapkinPlanKernel *pk = g_ptr_array_index (t->plan->kernels, i);
        g_autofree char *kname = g_strdup_printf ("np_%s_k%u", t->name, i);
        gboolean ok;

        for (char *c = kname; *c; c++)
          if (!g_ascii_isalnum (*c))
            *c = '_';
        switch (pk->kind)
          {
          case NAPKIN_PLAN_REPACK:
            ok = _napkin_print_repack (&ctx, pk, kname, error);
            break;
          case NAPKIN_PLAN_SPLIT_REDUCE:
            ok = _napkin_print_split_reduce (&ctx, pk, kname, error);
            break;
          case NAPKIN_PLAN_GEMM:
            ok = t->sm90 ? _napkin_print_gemm_wgmma (&ctx, pk, kname, error)
                         : _napkin_print_gemm_mma (&ctx, pk, kname, error);
            break;
          default:
            g_assert_not_reached ();
          }
        if (!ok)
          {
            g_string_free (out, TRUE);
            return NULL;
          }
      }
    t->module->source = g_string_free (out, FALSE);
  }
  return g_steal_pointer (&t);
}
