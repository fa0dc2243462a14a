/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Printers of the plan's GEMM kernels (docs/plan.md, "GEMM tile primitives"): the
 * Hopper GEMM (kernels/gemm-sm90.cu on kernels/tile-sm90.cuh), the Ampere GEMM
 * (kernels/gemm-sm80.cu), the split-K reduction (kernels/split-reduce.cu) and the
 * operand repack (kernels/repack.cu). The plan has chosen the tiles; a printer checks
 * that its kernel can run them and says which field is out of range when not. */

#define MAX_DYNAMIC_SMEM (227 * 1024)

typedef NapkinSkeletonParam Param;

static gboolean
fail (GError    **error,
      const char *name,
      const char *format,
      ...) G_GNUC_PRINTF (3, 4);

static gboolean
fail (GError    **error,
      const char *name,
      const char *format,
      ...)
{
  va_list args;
  g_autofree char *text = NULL;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, "kernel %s: %s", name, text);
  return FALSE;
}

static char *
i64 (gint64 v)
{
  return g_strdup_printf ("%" G_GINT64_FORMAT, v);
}

/* The tile primitives a kernel builds on, once per module (their guards would drop a
 * second copy anyway; this keeps the source short). */
static void
print_once (GString    *out,
            const char *guard,
            const char *text)
{
  if (strstr (out->str, guard) == NULL)
    {
      g_string_append_c (out, '\n');
      g_string_append (out, text);
    }
}

static gboolean
is_16bit (NapkinDtype t)
{
  return t == NAPKIN_DTYPE_FP16 || t == NAPKIN_DTYPE_BF16;
}

static gboolean
is_fp8 (NapkinDtype t)
{
  return t == NAPKIN_DTYPE_FP8_E4M3 || t == NAPKIN_DTYPE_FP8_E5M2;
}


/* The CUDA pointer expression of a plan buffer, and its byte offset in its slot. */
static char *
buffer_expr (const NapkinPrintCtx   *ctx,
             const NapkinPlanBuffer *buffer,
             NapkinDtype             dtype,
             gint64                 *offset,
             GError                **error)
{
  NapkinCudaRef ref;

  if (!_napkin_cuda_ref (ctx, buffer, &ref, error))
    return NULL;
  if (offset != NULL)
    *offset = ref.offset;
  return _napkin_cuda_ref_expr (&ref, dtype);
}

/* The index of an epilogue operand at (b, m, `col`) through its strides; an operand
 * that varies only by the outer part of merged rows (a modulation [b, e] of rows
 * (b, s)) is at row m / row_div. */
static char *
operand_index (const NapkinPlanMap *map,
               const char          *col)
{
  GString *index = g_string_new (NULL);
  g_autofree char *row = map->row_div > 1 ? g_strdup_printf ("(m / %" G_GINT64_FORMAT "L)", map->row_div)
                                          : g_strdup ("m");
  const char *coord[3] = { "(long) b", row, col };

  for (int a = 0; a < 3; a++)
    if (map->stride[a] != 0)
      g_string_append_printf (index, "%s%s * %" G_GINT64_FORMAT "L", index->len ? " + " : "", coord[a],
                              map->stride[a]);
  if (index->len == 0)
    g_string_append (index, "0");
  return g_string_free (index, FALSE);
}

/* NAME_epi (args, b, m, n, x): the fused maps in order on the fp32 value x at (b, m, n),
 * other operands read through their strides. */
static char *
epilogue_function (const NapkinPrintCtx *ctx,
                   const char           *name,
                   const char           *kname,
                   const GArray         *maps,
                   GError              **error)
{
  g_autoptr(GString) s = g_string_new (NULL);

  g_string_append_printf (s, "__device__ __forceinline__ float\n"
                             "%s_epi (const NapkinArgs &args, int b, long m, long n, float x)\n"
                             "{\n"
                             "  (void) args; (void) b; (void) m; (void) n;\n", name);
  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (maps, NapkinPlanMap, i);
      g_autofree char *expr = NULL;

      if (map->fn >= NAPKIN_N_FNS)
        {
          fail (error, kname, "epilogue[%u]: unknown map function %d", i, (int) map->fn);
          return NULL;
        }
      if (map->has_other)
        {
          g_autofree char *other = NULL;
          g_autofree char *index = operand_index (map, "n");

          if (_napkin_cuda_ctype (map->other.dtype) == NULL)
            {
              fail (error, kname, "epilogue[%u]: the other operand's type %s cannot be read", i,
                    napkin_dtype_to_string (map->other.dtype));
              return NULL;
            }
          other = buffer_expr (ctx, &map->other, map->other.dtype, NULL, error);
          if (other == NULL)
            return NULL;
          expr = _napkin_cuda_map_expr (map, "x", "y");
          g_string_append_printf (s, "  { const float y = napkin_ld (&%s[%s]); x = %s; }\n", other, index, expr);
        }
      else
        {
          expr = _napkin_cuda_map_expr (map, "x", NULL);
          g_string_append_printf (s, "  x = %s;\n", expr);
        }
    }
  g_string_append (s, "  return x;\n}\n");
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* The Hopper staged epilogue's halves of the fused maps (kernels/gemm-sm90.cu): NAME_ldr
 * loads the bits of the other operands of 8 consecutive columns n … n + 7 of row m into
 * r (one 16-byte vector where the operand's rows and start are 16-byte aligned and the
 * chunks are, `dvec`; else element by element), with nothing waiting for them, so that
 * the epilogue keeps several pieces in flight; NAME_cvt turns them into y[q][0 … 7];
 * NAME_ap applies the chain to column e's value with them. *n_other: how many operands
 * the maps read; *n_words: the 32-bit words of r. */
static char *
epilogue_split_functions (const NapkinPrintCtx *ctx,
                          const char           *name,
                          const GArray         *maps,
                          gboolean              dvec,
                          gint64                batch,
                          guint                *n_other,
                          guint                *n_words,
                          GError              **error)
{
  g_autoptr(GString) ld = g_string_new (NULL);
  g_autoptr(GString) cvt = g_string_new (NULL);
  g_autoptr(GString) ap = g_string_new (NULL);
  guint q = 0, w = 0;

  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (maps, NapkinPlanMap, i);
      g_autofree char *expr = NULL;

      if (map->has_other)
        {
          g_autofree char *other = NULL;
          g_autofree char *y = g_strdup_printf ("y[%u][e]", q);
          g_autofree char *at_n = operand_index (map, "n");
          g_autofree char *at_ne = operand_index (map, "(n + e)");
          const char *ct = _napkin_cuda_ctype (map->other.dtype);
          const guint ob = napkin_dtype_bytes (map->other.dtype);
          NapkinCudaRef ref;
          gboolean vec;

          if (!_napkin_cuda_ref (ctx, &map->other, &ref, error))
            return NULL;
          other = _napkin_cuda_ref_expr (&ref, map->other.dtype);
          vec = dvec && map->stride[2] == 1 && (ob == 2 || map->other.dtype == NAPKIN_DTYPE_FP32)
                && ref.offset % 16 == 0 && (map->stride[1] * ob) % 16 == 0
                && (batch <= 1 || (map->stride[0] * ob) % 16 == 0);
          if (map->stride[2] == 0)
            {
              g_string_append_printf (ld, "  napkin_ldbits1 (&%s[%s], r + %u);\n", other, at_n, w);
              g_string_append_printf (cvt, "  { const float t = napkin_bits_f ((const %s *) 0, r[%u]);\n"
                                           "    for (int e = 0; e < 8; e++) y[%u][e] = t; }\n", ct, w, q);
              w += 1;
            }
          else if (vec && ob == 2)
            {
              g_string_append_printf (ld, "  napkin_ldbits16 (&%s[%s], r + %u);\n", other, at_n, w);
              g_string_append_printf (cvt, "#pragma unroll\n  for (int h = 0; h < 4; h++)\n"
                                           "    napkin_unpack2 ((const %s *) 0, r[%u + h], &y[%u][2 * h]);\n",
                                      ct, w, q);
              w += 4;
            }
          else if (vec)
            {
              g_string_append_printf (ld, "  napkin_ldbits16 (&%s[%s], r + %u);\n"
                                          "  napkin_ldbits16 (&%s[%s] + 4, r + %u);\n", other, at_n, w, other, at_n,
                                      w + 4);
              g_string_append_printf (cvt, "#pragma unroll\n  for (int e = 0; e < 8; e++)\n"
                                           "    y[%u][e] = __uint_as_float (r[%u + e]);\n", q, w);
              w += 8;
            }
          else
            {
              g_string_append_printf (ld, "#pragma unroll\n  for (int e = 0; e < 8; e++)\n"
                                          "    napkin_ldbits1 (&%s[%s], r + %u + e);\n", other, at_ne, w);
              g_string_append_printf (cvt, "#pragma unroll\n  for (int e = 0; e < 8; e++)\n"
                                           "    y[%u][e] = napkin_bits_f ((const %s *) 0, r[%u + e]);\n", q, ct, w);
              w += 8;
            }
          expr = _napkin_cuda_map_expr (map, "x", y);
          q++;
        }
      else
        expr = _napkin_cuda_map_expr (map, "x", NULL);
      g_string_append_printf (ap, "  x = %s;\n", expr);
    }
  *n_other = q;
  *n_words = w;
  return g_strdup_printf ("__device__ __forceinline__ void\n"
                          "%s_ldr (const NapkinArgs &args, int b, long m, long n, unsigned (&r)[%u])\n"
                          "{\n"
                          "  (void) args; (void) b; (void) m; (void) n; (void) r;\n"
                          "%s"
                          "}\n\n"
                          "__device__ __forceinline__ void\n"
                          "%s_cvt (const unsigned (&r)[%u], float (&y)[%u][8])\n"
                          "{\n"
                          "  (void) r; (void) y;\n"
                          "%s"
                          "}\n\n"
                          "__device__ __forceinline__ float\n"
                          "%s_ap (float x, const float (&y)[%u][8], int e)\n"
                          "{\n"
                          "  (void) y; (void) e;\n"
                          "%s"
                          "  return x;\n"
                          "}\n",
                          name, MAX (w, 1), ld->str, name, MAX (w, 1), MAX (q, 1), cvt->str, name, MAX (q, 1),
                          ap->str);
}

static const char *
maps_summary (const GArray *maps)
{
  return maps != NULL && maps->len > 0 ? "fused maps" : "no maps";
}

static NapkinCudaKernel *
add_kernel (const NapkinPrintCtx *ctx,
            const char           *name,
            const char           *skeleton)
{
  NapkinCudaKernel *ck = g_new0 (NapkinCudaKernel, 1);

  ck->name = g_strdup (name);
  ck->skeleton = g_strdup (skeleton);
  g_ptr_array_add (ctx->module->kernels, ck);
  return ck;
}

/* Checks shared by both GEMM paths: the problem's sizes, types and buffers. */
static gboolean
check_problem (const NapkinPlanGemm *g,
               const char           *kname,
               GError              **error)
{
  if (g->batch < 1 || g->M < 1 || g->N < 1 || g->K < 1)
    return fail (error, kname, "batch, M, N and K must be positive, not %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT ", %"
                 G_GINT64_FORMAT ", %" G_GINT64_FORMAT, g->batch, g->M, g->N, g->K);
  if (g->M > G_MAXINT32 || g->N > G_MAXINT32 || g->K > G_MAXINT32 || g->batch > G_MAXINT32)
    return fail (error, kname, "M, N, K and batch must stay below 2³¹ (coordinates are 32-bit)");
  if (g->lda < (g->a_kmajor ? g->K : g->M))
    return fail (error, kname, "lda = %" G_GINT64_FORMAT " is shorter than a row of A (%" G_GINT64_FORMAT ")",
                 g->lda, g->a_kmajor ? g->K : g->M);
  if (g->ldb < (g->b_kmajor ? g->K : g->N))
    return fail (error, kname, "ldb = %" G_GINT64_FORMAT " is shorter than a row of B (%" G_GINT64_FORMAT ")",
                 g->ldb, g->b_kmajor ? g->K : g->N);
  if (g->dual && g->ldb2 < (g->b_kmajor ? g->K : g->N))
    return fail (error, kname, "ldb2 = %" G_GINT64_FORMAT " is shorter than a row of B2 (%" G_GINT64_FORMAT ")",
                 g->ldb2, g->b_kmajor ? g->K : g->N);
  if (g->ldc < g->N)
    return fail (error, kname, "ldc = %" G_GINT64_FORMAT " is shorter than a row of C (%" G_GINT64_FORMAT ")",
                 g->ldc, g->N);
  if (g->batch > 1 && g->c_bstride == 0)
    return fail (error, kname, "c_bstride is 0 with batch %" G_GINT64_FORMAT ": every batch would write one C",
                 g->batch);
  if (g->a_bstride < 0 || g->b_bstride < 0 || g->c_bstride < 0)
    return fail (error, kname, "batch strides must not be negative");
  if (!napkin_plan_gemm_c_storable (g->c_dtype))
    return fail (error, kname, "c_dtype %s: C is stored as fp32, fp16 or bf16", napkin_dtype_to_string (g->c_dtype));
  if (g->split_k < 1)
    return fail (error, kname, "split_k must be at least 1");
  if (g->split_k > 1 && g->partials < 0)
    return fail (error, kname, "split_k = %u needs a scratch buffer of partials (partials is -1)", g->split_k);
  return TRUE;
}

/* An operand read in pieces of `piece` bytes (TMA and cp.async: 16; cp.async in place:
 * 8 or 4): the start, the rows and the batch stride must be multiples of it; the plan
 * repacks any other (NapkinPlanRepack). */
static gboolean
check_aligned (const char *kname,
               const char *what,
               gint64      offset,
               gint64      ld,
               gint64      bstride,
               NapkinDtype dtype,
               guint       piece,
               GError    **error)
{
  guint bytes = napkin_dtype_bytes (dtype);

  if (piece != 16 && piece != 8 && piece != 4)
    return fail (error, kname, "copies of %s are %u bytes wide: cp.async takes 4, 8 or 16", what, piece);
  if (offset % piece != 0)
    return fail (error, kname, "%s starts %" G_GINT64_FORMAT " bytes into its buffer, not a multiple of %u", what,
                 offset, piece);
  if ((ld * bytes) % piece != 0)
    return fail (error, kname, "the rows of %s are %" G_GINT64_FORMAT " bytes apart, not a multiple of %u (repack "
                 "it to an aligned copy)", what, ld * bytes, piece);
  if ((bstride * bytes) % piece != 0)
    return fail (error, kname, "the matrices of %s are %" G_GINT64_FORMAT " bytes apart, not a multiple of %u",
                 what, bstride * bytes, piece);
  return TRUE;
}

/* A printer's first check: the plan kernel is of the kind it prints (`what`). */
static gboolean
check_kind (const NapkinPlanKernel *kernel,
            NapkinPlanKind          kind,
            const char             *what,
            const char             *name,
            GError                **error)
{
  if (kernel->kind != kind)
    return fail (error, name, "not a %s (%s)", what, napkin_plan_kind_to_string (kernel->kind));
  return TRUE;
}

/* The slots of A, B and C, with A and B aligned for their copies (check_aligned):
 * 16-byte ones on wgmma (`wgmma`), the plan's pieces on mma.sync. */
static gboolean
gemm_refs (const NapkinPrintCtx *ctx,
           const NapkinPlanGemm *g,
           const char           *name,
           gboolean              wgmma,
           NapkinCudaRef        *ra,
           NapkinCudaRef        *rb,
           NapkinCudaRef        *rc,
           GError              **error)
{
  guint ap = !wgmma && g->a_piece > 0 ? g->a_piece : 16, bp = !wgmma && g->b_piece > 0 ? g->b_piece : 16;

  if (!_napkin_cuda_ref (ctx, &g->a, ra, error) || !_napkin_cuda_ref (ctx, &g->b, rb, error)
      || !_napkin_cuda_ref (ctx, &g->c, rc, error))
    return FALSE;
  if (wgmma && (g->a_piece % 16 != 0 || g->b_piece % 16 != 0))
    return fail (error, name, "wgmma reads its operands by TMA: copies of %u bytes are mma.sync's",
                 g->a_piece % 16 != 0 ? g->a_piece : g->b_piece);
  return check_aligned (name, "A", ra->offset, g->lda, g->batch > 1 ? g->a_bstride : 0, g->ab_dtype, ap, error)
         && check_aligned (name, "B", rb->offset, g->ldb, g->batch > 1 ? g->b_bstride : 0, g->ab_dtype, bp, error);
}

/* PREF: the fp32 partials of a split K (`split`), else a null pointer. */
static char *
partials_expr (const NapkinPrintCtx *ctx,
               const NapkinPlanGemm *g,
               gboolean              split,
               GError              **error)
{
  const NapkinPlanBuffer pb = { -1, g->partials, NAPKIN_DTYPE_FP32 };

  if (!split)
    return g_strdup ("((float *) 0)");
  return buffer_expr (ctx, &pb, NAPKIN_DTYPE_FP32, NULL, error);
}

/* Appends `template` instantiated with `params` (which it frees) under a comment naming
 * the plan kernel and what it runs. */
static void
print_skeleton (const NapkinPrintCtx   *ctx,
                const NapkinPlanKernel *kernel,
                const char             *template,
                GArray                 *params,
                const char             *what)
{
  g_autofree char *kname = napkin_codegen_escape_comment (kernel->name);
  g_autofree char *text = _napkin_skeleton_instantiate (template, (Param *) (void *) params->data, params->len);

  g_array_free (params, TRUE);
  g_string_append_printf (ctx->out, "\n/* Plan kernel %s: %s */\n", kname, what);
  g_string_append (ctx->out, text);
}

/* The problem's sizes and operand layouts, as both GEMM templates (gemm-sm90.cu,
 * gemm-sm80.cu) take them. */
static void
add_problem_params (GArray               *p,
                    const NapkinPlanGemm *g)
{
  Param t[] = {
    { "M", i64 (g->M) },
    { "N", i64 (g->N) },
    { "K", i64 (g->K) },
    { "BATCH", i64 (g->batch) },
    { "SPLIT", i64 (g->split_k) },
    { "A_KMAJOR", g_strdup (g->a_kmajor ? "1" : "0") },
    { "B_KMAJOR", g_strdup (g->b_kmajor ? "1" : "0") },
  };

  g_array_append_vals (p, t, G_N_ELEMENTS (t));
}

/* ---- Hopper: wgmma with TMA ---------------------------------------------------------------- */

/* A device function FNAME (float (&d)[n/2], desc_a, desc_b, int accumulate) issuing one
 * wgmma m64nN with fp32 accumulators from shared memory: k16 for fp16/bf16 (A M-major
 * and B N-major through the transpose bits), k32 for fp8 (both K-major). */
static char *
wgmma_function (const char *fname,
                gint64      n,
                NapkinDtype ab,
                gboolean    a_trans,
                gboolean    b_trans)
{
  const gint64 regs = n / 2;
  g_autoptr(GString) list = g_string_new (NULL);
  g_autoptr(GString) outs = g_string_new (NULL);
  g_autofree char *shape = NULL;
  const char *t = ab == NAPKIN_DTYPE_FP16 ? "f16" : ab == NAPKIN_DTYPE_BF16 ? "bf16"
                  : ab == NAPKIN_DTYPE_FP8_E4M3 ? "e4m3" : "e5m2";

  _napkin_wgmma_accumulators (regs, list, outs);
  if (is_fp8 (ab))
    shape = g_strdup_printf ("m64n%" G_GINT64_FORMAT "k32.f32.%s.%s {%s}, %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT
                             ", p, 1, 1", n, t, t, list->str, regs, regs + 1);
  else
    shape = g_strdup_printf ("m64n%" G_GINT64_FORMAT "k16.f32.%s.%s {%s}, %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT
                             ", p, 1, 1, %d, %d", n, t, t, list->str, regs, regs + 1, a_trans ? 1 : 0, b_trans ? 1 : 0);
  return g_strdup_printf ("__device__ __forceinline__ void\n"
                          "%s (float (&d)[%" G_GINT64_FORMAT "], unsigned long long da, unsigned long long db, int acc)\n"
                          "{\n"
                          "  asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%%" G_GINT64_FORMAT ", 0; \"\n"
                          "                \"wgmma.mma_async.sync.aligned.%s; }\"\n"
                          "                : %s\n"
                          "                : \"l\" (da), \"l\" (db), \"r\" (acc));\n"
                          "}\n",
                          fname, regs, regs + 2, shape, outs->str);
}

/* The Hopper GEMM's form as printed, from the plan's tiles. */
typedef struct
{
  gint64   KB;          /* elements in one 128-byte swizzle row */
  gint64   consumers;   /* consumer warpgroups */
  gint64   stages;      /* chunks of one swizzle row in flight */
  gint64   smem;
  gint64   cbytes;
  gboolean a_rank3, b_rank3, c_rank3;
  int      epi;         /* 0: TMA stores, 1: the staged epilogue, 2: fp32 partials */
  gboolean epu;         /* TMA stores with maps of the value alone applied first */
  gboolean dvec;        /* the staged epilogue's rows take 16-byte vectors */
} Sm90Form;

/* Checks the tiles against wgmma and TMA: the consumers, the accumulators, the stages
 * of one swizzle row and the shared memory they take. */
static gboolean
wgmma_shape (const NapkinPlanGemm *g,
             const char           *name,
             Sm90Form             *f,
             GError              **error)
{
  const guint ab_bytes = napkin_dtype_bytes (g->ab_dtype);
  const gint64 KB = 128 / MAX (ab_bytes, 1);
  gint64 consumers, MI, BK;

  f->KB = KB;
  if (!is_16bit (g->ab_dtype) && !is_fp8 (g->ab_dtype))
    return fail (error, name, "ab_dtype %s: wgmma takes fp16, bf16, fp8-e4m3 or fp8-e5m2",
                 napkin_dtype_to_string (g->ab_dtype));
  if (is_fp8 (g->ab_dtype) && (!g->a_kmajor || !g->b_kmajor))
    return fail (error, name, "fp8 wgmma reads both operands K-major; %s is not (the plan repacks it)",
                 !g->a_kmajor ? "A" : "B");
  consumers = f->consumers = g->consumers == 0 ? 2 : g->consumers;
  if (consumers != 1 && consumers != 2)
    return fail (error, name, "consumers = %u; 1 or 2 warpgroups", g->consumers);
  if (g->pingpong && consumers != 2)
    return fail (error, name, "ping-pong with %" G_GINT64_FORMAT " consumer warpgroup; it takes 2", consumers);
  if (g->pingpong && g->BM != 64 && g->BM != 128)
    return fail (error, name, "BM = %" G_GINT64_FORMAT " with ping-pong: each consumer takes the whole tile, 64 or "
                 "128 rows", g->BM);
  if (!g->pingpong && g->BM != 64 * consumers && g->BM != 128 * consumers)
    return fail (error, name, "BM = %" G_GINT64_FORMAT " with %" G_GINT64_FORMAT " consumer warpgroups: each takes 64 "
                 "or 128 rows (BM %" G_GINT64_FORMAT " or %" G_GINT64_FORMAT ")", g->BM, consumers, 64 * consumers,
                 128 * consumers);
  if (g->BN < 8 || g->BN > 256 || g->BN % 8)
    return fail (error, name, "BN = %" G_GINT64_FORMAT "; wgmma takes a multiple of 8 up to 256", g->BN);
  if (!g->b_kmajor && g->BN % 64)
    return fail (error, name, "BN = %" G_GINT64_FORMAT " with B N-major: B is loaded in boxes of 64 columns, so BN "
                 "must be a multiple of 64", g->BN);
  BK = g->BK > 0 ? g->BK : KB;
  if (BK % KB)
    return fail (error, name, "BK = %" G_GINT64_FORMAT "; a multiple of %" G_GINT64_FORMAT " (one 128-byte swizzle row "
                 "of %s)", BK, KB, napkin_dtype_to_string (g->ab_dtype));
  MI = g->pingpong ? g->BM / 64 : g->BM / consumers / 64;
  if (MI * g->BN / 2 * (g->dual ? 2 : 1) > 128)
    return fail (error, name, "a %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " tile%s needs %" G_GINT64_FORMAT
                 " accumulators per consumer thread; at most 128", g->BM, g->BN, g->dual ? " of a gated pair" : "",
                 MI * g->BN / 2 * (g->dual ? 2 : 1));
  {
    const char *no_cluster = napkin_plan_gemm_cluster_refusal (g, g->cluster_m);

    if (no_cluster != NULL)
      return fail (error, name, "clusters of %u: %s", g->cluster_m, no_cluster);
  }
  if (g->dual && (g->split_k > 1 || (g->batch > 1 && (g->b_bstride != 0) != (g->b2_bstride != 0))))
    return fail (error, name, "a gated pair's GEMM takes one slice of K and both B alike across the batch");
  /* a chunk of BK streams as BK/KB chunks of one swizzle row: the same shared memory */
  f->stages = (gint64) MAX (g->stages, 1) * (BK / KB);
  if (f->stages < 2)
    return fail (error, name, "stages = %u of %" G_GINT64_FORMAT "; at least 2 chunks must be in flight", g->stages, BK);
  f->smem = napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, g);
  if (f->smem > MAX_DYNAMIC_SMEM)
    return fail (error, name, "%" G_GINT64_FORMAT " stages of %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " and %"
                 G_GINT64_FORMAT "×%" G_GINT64_FORMAT " need %" G_GINT64_FORMAT " bytes of shared memory; at most %d",
                 f->stages, g->BM, KB, KB, g->BN, f->smem, MAX_DYNAMIC_SMEM);
  return TRUE;
}

/* How C leaves the kernel: TMA stores where C is aligned for them and the fused maps (if
 * any) need no operand — they run in registers first —, fp32 partials for a split K,
 * else the staged epilogue. */
static void
wgmma_store (const NapkinPlanGemm *g,
             gint64                c_off,
             Sm90Form             *f)
{
  gint64 cbytes = f->cbytes = napkin_dtype_bytes (g->c_dtype);
  gboolean tma_store;

  f->a_rank3 = g->batch > 1 && g->a_bstride != 0;
  f->b_rank3 = g->batch > 1 && g->b_bstride != 0;
  f->c_rank3 = g->batch > 1;
  tma_store = g->c_tma && napkin_plan_gemm_maps_unary (g) && g->split_k == 1
              && (g->ldc * cbytes) % 16 == 0 && c_off % 16 == 0 && (g->c_bstride * cbytes) % 16 == 0
              && g->BN % (128 / cbytes) == 0;
  f->epi = g->split_k > 1 ? 2 : tma_store ? 0 : 1;
  f->epu = f->epi == 0 && g->epilogue != NULL && g->epilogue->len > 0;
  /* the staged epilogue's destination rows all start 16-byte aligned (C, or the partials) */
  if (f->epi == 2)
    f->dvec = g->N % 4 == 0;
  else
    f->dvec = (g->ldc * cbytes) % 16 == 0 && c_off % 16 == 0 && (g->batch <= 1 || (g->c_bstride * cbytes) % 16 == 0);
}

/* EPIFN: for the staged epilogue, the fused maps whole and in the halves its store
 * calls (`n_other`: their operands); for the TMA store, the maps of the value alone
 * (none: ""); "" for the partials. */
static char *
wgmma_epilogue (const NapkinPrintCtx *ctx,
                const NapkinPlanGemm *g,
                const char           *name,
                const Sm90Form       *f,
                guint                *n_other,
                guint                *n_words,
                GError              **error)
{
  g_autofree char *per = NULL;
  g_autofree char *split_fns = NULL;

  if (f->epu)
    return epilogue_function (ctx, name, name, g->epilogue, error);
  if (f->epi != 1)
    return g_strdup ("");
  per = epilogue_function (ctx, name, name, g->epilogue, error);
  split_fns = per == NULL ? NULL : epilogue_split_functions (ctx, name, g->epilogue, f->dvec, g->batch, n_other, n_words,
                                                                     error);
  if (split_fns == NULL)
    return NULL;
  return g_strconcat (per, "\n", split_fns, NULL);
}

/* NAME_join (x, g): a gated pair's gate maps on its second product g, then the join with
 * the first's value x (kernels/gemm-sm90.cu, G_DUAL). */
static char *
join_function (const NapkinPlanGemm *g,
               const char           *name,
               GError              **error)
{
  g_autoptr(GString) s = g_string_new (NULL);
  g_autofree char *join = NULL;

  g_string_append_printf (s, "__device__ __forceinline__ float\n"
                             "%s_join (float x, float g)\n"
                             "{\n", name);
  for (guint i = 0; g->gate != NULL && i < g->gate->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (g->gate, NapkinPlanMap, i);
      g_autofree char *expr = NULL;

      if (map->fn >= NAPKIN_N_FNS || map->has_other)
        {
          fail (error, name, "gate[%u]: a gate map takes the value alone", i);
          return NULL;
        }
      expr = _napkin_cuda_map_expr (map, "g", NULL);
      g_string_append_printf (s, "  g = %s;\n", expr);
    }
  if (g->join.fn >= NAPKIN_N_FNS || !g->join.has_other)
    {
      fail (error, name, "the join takes two values");
      return NULL;
    }
  join = _napkin_cuda_map_expr (&g->join, "x", "g");
  g_string_append_printf (s, "  return %s;\n}\n", join);
  return g_string_free (g_steal_pointer (&s), FALSE);
}

/* Prints the Hopper GEMM: its skeleton with the form's parameters (kernels/gemm-sm90.cu). */
static void
wgmma_print (const NapkinPrintCtx   *ctx,
             const NapkinPlanKernel *kernel,
             const char             *name,
             const Sm90Form         *f,
             const char             *cref,
             const char             *pref,
             const char             *epifn,
             guint                   n_other,
             guint                   n_words)
{
  /* pieces of the operands in flight (two rows of n_words each): 4, or fewer where they
   * would take more than 48 registers, at least 2 */
  const guint depth = n_words == 0 ? 1 : CLAMP (24 / n_words, 2, 4);

  const NapkinPlanGemm *g = &kernel->u.gemm;
  g_autofree char *fname = g_strdup_printf ("%s_wgmma", name);
  Param head[] = {
    { "NAME", g_strdup (name) },
    { "BM", i64 (g->BM) },
    { "BN", i64 (g->BN) },
    { "CWG", i64 (f->consumers) },
    { "PP", g_strdup (g->pingpong ? "1" : "0") },
    { "STAGES", i64 (f->stages) },
    { "KB", i64 (f->KB) },
    { "KSTEP", g_strdup (is_fp8 (g->ab_dtype) ? "32" : "16") },
  };
  Param tail[] = {
    { "A_RANK3", g_strdup (f->a_rank3 ? "1" : "0") },
    { "B_RANK3", g_strdup (f->b_rank3 ? "1" : "0") },
    { "C_RANK3", g_strdup (f->c_rank3 ? "1" : "0") },
    { "A_BATCH_ARG", g_strdup (f->a_rank3 ? "b, " : "") },
    { "B_BATCH_ARG", g_strdup (f->b_rank3 ? "b, " : "") },
    { "EPI", i64 (f->epi) },
    { "EPU", g_strdup (f->epu ? "1" : "0") },
    { "DVEC", g_strdup (f->dvec ? "1" : "0") },
    { "NY", i64 (MAX (n_other, 1)) },
    { "LDY", g_strdup (n_other > 0 ? "1" : "0") },
    { "NW", i64 (MAX (n_words, 1)) },
    { "RD", i64 (depth) },
    { "LDC", i64 (g->ldc) },
    { "CBS", i64 (g->c_bstride) },
    { "CT", g_strdup (_napkin_cuda_ctype (g->c_dtype)) },
    { "CREF", g_strdup (cref) },
    { "PREF", g_strdup (pref) },
    { "CPARAM", g_strdup (f->epi == 0 ? ",\n        const __grid_constant__ NapkinTensorMap tma_c" : "") },
    { "DUAL", g_strdup (g->dual ? "1" : "0") },
    { "B2PARAM", g_strdup (g->dual ? ",\n        const __grid_constant__ NapkinTensorMap tma_b2" : "") },
    { "CM", i64 (napkin_plan_gemm_cluster (g)) },
    { "EPIFN", g_strdup (epifn) },
    { "WGMMA", wgmma_function (fname, g->BN, g->ab_dtype, !g->a_kmajor, !g->b_kmajor) },
  };
  GArray *p = _napkin_skeleton_params (head, G_N_ELEMENTS (head));

  add_problem_params (p, g);
  g_array_append_vals (p, tail, G_N_ELEMENTS (tail));
  print_once (ctx->out, "#define NAPKIN_TILE_STORE", napkin_kernel_tile_store);
  print_once (ctx->out, "#define NAPKIN_TILE_SM90", napkin_kernel_tile_sm90);
  print_skeleton (ctx, kernel, napkin_kernel_gemm_sm90, p, "GEMM on wgmma (kernels/gemm-sm90.cu, sm_90a)");
}

/* The TMA descriptors: A K-major: rows of K, boxes KB × BM; M-major: rows of M, boxes
 * 64 × KB. B likewise, K-major boxes of BN/cluster rows (each block of a cluster copies
 * its share). C (TMA stores): rows of N, boxes of one 128-byte row × 64. */
static void
wgmma_tensor_maps (const NapkinPlanGemm *g,
                   const Sm90Form       *f,
                   const NapkinCudaRef  *ra,
                   const NapkinCudaRef  *rb,
                   const NapkinCudaRef  *rc,
                   const NapkinCudaRef  *rb2,
                   NapkinCudaTensorMap  *maps)
{
  const gint64 KB = f->KB;

  maps[0] = (NapkinCudaTensorMap) {
    .slot = ra->slot, .dtype = g->ab_dtype, .swizzle = 128, .ld = g->lda, .offset = ra->offset,
    .inner = g->a_kmajor ? g->K : g->M, .outer = g->a_kmajor ? g->M : g->K,
    .box_inner = g->a_kmajor ? (guint) KB : 64, .box_outer = g->a_kmajor ? (guint) g->BM : (guint) KB,
    .batch = f->a_rank3 ? g->batch : 1, .batch_stride = f->a_rank3 ? g->a_bstride : 0,
  };
  maps[1] = (NapkinCudaTensorMap) {
    .slot = rb->slot, .dtype = g->ab_dtype, .swizzle = 128, .ld = g->ldb, .offset = rb->offset,
    .inner = g->b_kmajor ? g->K : g->N, .outer = g->b_kmajor ? g->N : g->K,
    .box_inner = g->b_kmajor ? (guint) KB : 64,
    .box_outer = g->b_kmajor ? (guint) (g->BN / napkin_plan_gemm_cluster (g)) : (guint) KB,
    .batch = f->b_rank3 ? g->batch : 1, .batch_stride = f->b_rank3 ? g->b_bstride : 0,
  };
  maps[2] = (NapkinCudaTensorMap) {
    .slot = rc->slot, .dtype = g->c_dtype, .swizzle = 128, .ld = g->ldc, .offset = rc->offset,
    .inner = g->N, .outer = g->M, .box_inner = (guint) (128 / f->cbytes), .box_outer = 64,
    .batch = f->c_rank3 ? g->batch : 1, .batch_stride = f->c_rank3 ? g->c_bstride : 0,
  };
  /* a gated pair's B2: B's boxes from its own rows */
  maps[3] = maps[1];
  if (rb2 != NULL)
    {
      maps[3].slot = rb2->slot;
      maps[3].offset = rb2->offset;
      maps[3].ld = g->ldb2;
      maps[3].batch_stride = f->b_rank3 ? g->b2_bstride : 0;
    }
}

gboolean
_napkin_print_gemm_wgmma (const NapkinPrintCtx   *ctx,
                          const NapkinPlanKernel *kernel,
                          const char             *name,
                          GError                **error)
{
  const NapkinPlanGemm *g = &kernel->u.gemm;
  Sm90Form f = { 0 };
  gint64 tiles;
  guint n_other = 0, n_words = 0;
  g_autofree char *cref = NULL;
  g_autofree char *pref = NULL;
  g_autofree char *epifn = NULL;
  NapkinCudaTensorMap maps[4];
  NapkinCudaRef ra, rb, rc, rb2;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (ctx != NULL && kernel != NULL && name != NULL, FALSE);

  if (!check_kind (kernel, NAPKIN_PLAN_GEMM, "GEMM", name, error) || !check_problem (g, name, error)
      || !wgmma_shape (g, name, &f, error) || !gemm_refs (ctx, g, name, TRUE, &ra, &rb, &rc, error))
    return FALSE;
  wgmma_store (g, rc.offset, &f);
  cref = _napkin_cuda_ref_expr (&rc, g->c_dtype);
  pref = partials_expr (ctx, g, f.epi == 2, error);
  if (pref == NULL)
    return FALSE;
  if (g->dual
      && (!_napkin_cuda_ref (ctx, &g->b2, &rb2, error)
          || !check_aligned (name, "B2", rb2.offset, g->ldb2, g->batch > 1 ? g->b2_bstride : 0, g->ab_dtype, 16, error)))
    return FALSE;
  epifn = wgmma_epilogue (ctx, g, name, &f, &n_other, &n_words, error);
  if (epifn == NULL)
    return FALSE;
  if (g->dual)
    {
      g_autofree char *join = join_function (g, name, error);

      if (join == NULL)
        return FALSE;
      char *both = g_strconcat (epifn, "\n", join, NULL);

      g_free (epifn);
      epifn = both;
    }
  wgmma_print (ctx, kernel, name, &f, cref, pref, epifn, n_other, n_words);
  tiles = napkin_plan_gemm_blocks (g);
  wgmma_tensor_maps (g, &f, &ra, &rb, &rc, g->dual ? &rb2 : NULL, maps);

  ck = add_kernel (ctx, name, "gemm-wgmma");
  ck->grid = tiles;   /* launched as MIN (tiles, SMs), whole clusters */
  ck->persistent = TRUE;
  ck->cluster = napkin_plan_gemm_cluster (g);
  ck->threads = (guint) (128 * (1 + f.consumers));
  ck->smem_bytes = f.smem;
  ck->dynamic_smem = f.smem;
  ck->tensor_maps = g_array_new (FALSE, FALSE, sizeof (NapkinCudaTensorMap));
  g_array_append_vals (ck->tensor_maps, maps, f.epi == 0 ? 3 : 2);
  if (g->dual)
    g_array_append_val (ck->tensor_maps, maps[3]);
  ck->note = g_strdup_printf ("block %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ", %" G_GINT64_FORMAT " stages of %"
                              G_GINT64_FORMAT " (TMA, 128-byte swizzle), A %s-major, B %s-major, 1 producer + %"
                              G_GINT64_FORMAT " consumer warpgroups%s, wgmma m64n%" G_GINT64_FORMAT "k%s, %"
                              G_GINT64_FORMAT " tiles on a persistent grid%s%s, %s",
                              g->BM, g->BN, f.stages, f.KB, g->a_kmajor ? "K" : "M", g->b_kmajor ? "K" : "N",
                              f.consumers, g->pingpong ? " (ping-pong)" : "", g->BN,
                              is_fp8 (g->ab_dtype) ? "32" : "16", tiles,
                              ck->cluster > 1 ? ", clusters of 2 along M sharing B by multicast" : "",
                              g->split_k > 1 ? ", split-K partials" : g->dual ? ", a gated pair (B2 beside B)" : "",
                              f.epi == 0 ? "TMA stores" : f.epi == 2 ? "fp32 partials stored"
                                                                     : maps_summary (g->epilogue));
  return TRUE;
}

/* ---- Ampere: mma.sync with cp.async -------------------------------------------------------- */

gboolean
_napkin_print_gemm_mma (const NapkinPrintCtx   *ctx,
                        const NapkinPlanKernel *kernel,
                        const char             *name,
                        GError                **error)
{
  const NapkinPlanGemm *g = &kernel->u.gemm;
  gint64 WM, WN, warps, stages, smem, tiles, cbytes;
  gboolean cvec;
  int epi;
  NapkinCudaRef ra, rb, rc;
  g_autofree char *pref = NULL;
  g_autofree char *epifn = NULL;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (ctx != NULL && kernel != NULL && name != NULL, FALSE);

  if (!check_kind (kernel, NAPKIN_PLAN_GEMM, "GEMM", name, error) || !check_problem (g, name, error))
    return FALSE;
  if (g->dual)
    return fail (error, name, "a gated pair's two products run as one GEMM on wgmma (sm_90a) only");
  if (is_fp8 (g->ab_dtype))
    return fail (error, name, "ab_dtype %s: the mma path (sm_80) has no fp8 tensor-core instructions; fp8 needs the "
                 "wgmma path (sm_90a)", napkin_dtype_to_string (g->ab_dtype));
  if (!is_16bit (g->ab_dtype))
    return fail (error, name, "ab_dtype %s: mma.sync takes fp16 or bf16", napkin_dtype_to_string (g->ab_dtype));
  WM = g->WM > 0 ? g->WM : MIN (g->BM, 64);
  WN = g->WN > 0 ? g->WN : MIN (g->BN, 32);
  if (g->BK < 16 || g->BK % 16 || WM % 16 || WN % 16 || WM < 16 || WN < 16 || g->BM % WM || g->BN % WN)
    return fail (error, name, "BK = %" G_GINT64_FORMAT " must be a multiple of 16 and the warp tile (WM %"
                 G_GINT64_FORMAT " × WN %" G_GINT64_FORMAT ") a multiple of 16×16 dividing the block tile (%"
                 G_GINT64_FORMAT "×%" G_GINT64_FORMAT ")", g->BK, WM, WN, g->BM, g->BN);
  warps = (g->BM / WM) * (g->BN / WN);
  if (warps > 16)
    return fail (error, name, "%" G_GINT64_FORMAT " warps per block; at most 16", warps);
  if (WM * WN / 32 > 128)
    return fail (error, name, "a %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " warp tile needs %" G_GINT64_FORMAT
                 " accumulator registers per thread; at most 128", WM, WN, WM * WN / 32);
  stages = MAX (g->stages, 2);
  smem = napkin_plan_gemm_smem (NAPKIN_PATH_MMA, g);
  if (smem > MAX_DYNAMIC_SMEM)
    return fail (error, name, "%" G_GINT64_FORMAT " stages of %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " and %"
                 G_GINT64_FORMAT "×%" G_GINT64_FORMAT " tiles need %" G_GINT64_FORMAT " bytes of shared memory; at "
                 "most %d", stages, g->BM, g->BK, g->BK, g->BN, smem, MAX_DYNAMIC_SMEM);
  if (!gemm_refs (ctx, g, name, FALSE, &ra, &rb, &rc, error))
    return FALSE;
  cbytes = napkin_dtype_bytes (g->c_dtype);
  epi = g->split_k > 1 ? 2 : 1;
  cvec = g->ldc % 2 == 0 && g->c_bstride % 2 == 0 && rc.offset % (2 * cbytes) == 0;
  pref = partials_expr (ctx, g, epi == 2, error);
  epifn = pref == NULL ? NULL : epi == 2 ? g_strdup ("") : epilogue_function (ctx, name, name, g->epilogue, error);
  if (epifn == NULL)
    return FALSE;
  tiles = ((g->M + g->BM - 1) / g->BM) * ((g->N + g->BN - 1) / g->BN) * g->batch * g->split_k;
  if (tiles > G_MAXINT32)
    return fail (error, name, "%" G_GINT64_FORMAT " tiles; a grid holds at most 2³¹ − 1 blocks", tiles);

  {
    Param head[] = {
      { "NAME", g_strdup (name) },
      { "BM", i64 (g->BM) },
      { "BN", i64 (g->BN) },
      { "BK", i64 (g->BK) },
      { "WM", i64 (WM) },
      { "WN", i64 (WN) },
      { "STAGES", i64 (stages) },
      /* two blocks per SM when their shared memory fits and each thread keeps 128 registers */
      { "MINBLOCKS", g_strdup (2 * (smem + 1024) <= 228 * 1024 && WM * WN / 32 <= 64 && warps <= 8 ? "2" : "1") },
    };
    Param tail[] = {
      { "AVEC", i64 ((g->a_piece > 0 ? g->a_piece : 16) / 2) },
      { "BVEC", i64 ((g->b_piece > 0 ? g->b_piece : 16) / 2) },
      { "LDA", i64 (g->lda) },
      { "LDB", i64 (g->ldb) },
      { "ABS", i64 (g->a_bstride) },
      { "BBS", i64 (g->b_bstride) },
      { "EPI", i64 (epi) },
      { "CVEC", g_strdup (cvec ? "1" : "0") },
      { "LDC", i64 (g->ldc) },
      { "CBS", i64 (g->c_bstride) },
      { "AT", g_strdup (_napkin_cuda_ctype (g->ab_dtype)) },
      { "CT", g_strdup (_napkin_cuda_ctype (g->c_dtype)) },
      { "AREF", _napkin_cuda_ref_expr (&ra, g->ab_dtype) },
      { "BREF", _napkin_cuda_ref_expr (&rb, g->ab_dtype) },
      { "CREF", _napkin_cuda_ref_expr (&rc, g->c_dtype) },
      { "PREF", g_strdup (pref) },
      { "EPIFN", g_strdup (epifn) },
    };

    GArray *p = _napkin_skeleton_params (head, G_N_ELEMENTS (head));

    add_problem_params (p, g);
    g_array_append_vals (p, tail, G_N_ELEMENTS (tail));
    print_once (ctx->out, "#define NAPKIN_TILE_STORE", napkin_kernel_tile_store);
    print_skeleton (ctx, kernel, napkin_kernel_gemm_sm80, p, "GEMM on mma.sync (kernels/gemm-sm80.cu, sm_80)");
  }

  ck = add_kernel (ctx, name, "gemm-mma");
  ck->grid = tiles;
  ck->threads = (guint) (warps * 32);
  ck->smem_bytes = smem;
  ck->dynamic_smem = smem;
  {
    g_autofree char *pieces = g->a_piece % 16 == 0 && g->b_piece % 16 == 0
      ? g_strdup ("")
      : g_strdup_printf (" of %u and %u bytes, in place", g->a_piece > 0 ? g->a_piece : 16,
                         g->b_piece > 0 ? g->b_piece : 16);

    ck->note = g_strdup_printf ("block %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ", chunk %" G_GINT64_FORMAT ", %"
                                G_GINT64_FORMAT " stages (cp.async%s, zero-filled edges), A %s-major, B %s-major, %"
                                G_GINT64_FORMAT " warps of %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT
                                ", mma.sync m16n8k16%s, %s",
                                g->BM, g->BN, g->BK, stages, pieces, g->a_kmajor ? "K" : "M", g->b_kmajor ? "K" : "N",
                                warps, WM, WN, g->split_k > 1 ? ", split-K partials" : "",
                                epi == 2 ? "fp32 partials stored" : maps_summary (g->epilogue));
  }
  return TRUE;
}

/* ---- CUDA cores: a skinny product ------------------------------------------------------------ */

gboolean
_napkin_print_gemm_skinny (const NapkinPrintCtx   *ctx,
                           const NapkinPlanKernel *kernel,
                           const char             *name,
                           GError                **error)
{
  const NapkinPlanGemm *g = &kernel->u.gemm;
  const guint bytes = napkin_dtype_bytes (g->ab_dtype);
  NapkinCudaRef ra, rb, rc;
  g_autofree char *pref = NULL;
  gint64 vec, blocks, tiles, smem;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (ctx != NULL && kernel != NULL && name != NULL, FALSE);

  if (!check_kind (kernel, NAPKIN_PLAN_GEMM, "GEMM", name, error) || !check_problem (g, name, error))
    return FALSE;
  if (g->dual)
    return fail (error, name, "a gated pair's two products run as one GEMM on wgmma (sm_90a) only");
  if (!is_16bit (g->ab_dtype))
    return fail (error, name, "ab_dtype %s: the skinny product on CUDA cores takes fp16 or bf16",
                 napkin_dtype_to_string (g->ab_dtype));
  if (g->M > NAPKIN_PLAN_GEMM_SKINNY_MAX_M)
    return fail (error, name, "M = %" G_GINT64_FORMAT ": the skinny product keeps at most %d rows' sums a thread",
                 g->M, NAPKIN_PLAN_GEMM_SKINNY_MAX_M);
  if (g->split_k < 2 || g->partials < 0)
    return fail (error, name, "split_k = %u with partials %d: the skinny product writes fp32 partials for the split-K "
                 "reduction (at least 2 slices)", g->split_k, g->partials);
  if (g->BK < 1 || g->BK % 8 || (g->K + g->BK - 1) / g->BK != g->split_k)
    return fail (error, name, "slices of %" G_GINT64_FORMAT " along K (a multiple of 8) must cut K = %" G_GINT64_FORMAT
                 " into the %u of the split", g->BK, g->K, g->split_k);
  /* A's slice in fp32, its rows padded to 4 where B is N-major (float4 reads) */
  if (napkin_plan_gemm_skinny_a_bytes (g) > 24 * 1024)
    return fail (error, name, "%" G_GINT64_FORMAT " rows × %" G_GINT64_FORMAT " of A in fp32 need more than 24576 "
                 "bytes of shared memory", g->M, g->BK);
  if (g->b_piece > 0 && (g->b_piece % bytes || (g->b_piece & (g->b_piece - 1)) || g->b_piece / bytes * g->M > 32))
    return fail (error, name, "loads of %u bytes of B: a power of two, a whole number of elements, at most 32 sums "
                 "a thread (%" G_GINT64_FORMAT " rows)", g->b_piece, g->M);
  smem = napkin_plan_gemm_skinny_smem (g);
  if (!_napkin_cuda_ref (ctx, &g->a, &ra, error) || !_napkin_cuda_ref (ctx, &g->b, &rb, error)
      || !_napkin_cuda_ref (ctx, &g->c, &rc, error))
    return FALSE;
  pref = partials_expr (ctx, g, TRUE, error);
  if (pref == NULL)
    return FALSE;
  /* the plan's width, narrower where B's start does not allow it */
  vec = napkin_plan_gemm_skinny_vec (rb.offset, g->ldb, g->batch > 1 ? g->b_bstride : 0, bytes,
                                     g->b_piece > 0 ? g->b_piece / bytes : 1);
  blocks = napkin_plan_gemm_skinny_column_blocks (g, vec);
  tiles = blocks * g->batch * g->split_k;
  if (tiles > G_MAXINT32)
    return fail (error, name, "%" G_GINT64_FORMAT " blocks; a grid holds at most 2³¹ − 1", tiles);

  {
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "M", i64 (g->M) },
      { "N", i64 (g->N) },
      { "K", i64 (g->K) },
      { "BATCH", i64 (g->batch) },
      { "SPLIT", i64 (g->split_k) },
      { "KS", i64 (g->BK) },
      { "A_KMAJOR", g_strdup (g->a_kmajor ? "1" : "0") },
      { "B_KMAJOR", g_strdup (g->b_kmajor ? "1" : "0") },
      { "VEC", i64 (vec) },
      { "LDA", i64 (g->lda) },
      { "LDB", i64 (g->ldb) },
      { "ABS", i64 (g->a_bstride) },
      { "BBS", i64 (g->b_bstride) },
      { "AT", g_strdup (_napkin_cuda_ctype (g->ab_dtype)) },
      { "AREF", _napkin_cuda_ref_expr (&ra, g->ab_dtype) },
      { "BREF", _napkin_cuda_ref_expr (&rb, g->ab_dtype) },
      { "PREF", g_strdup (pref) },
    };

    print_skeleton (ctx, kernel, napkin_kernel_gemm_skinny, _napkin_skeleton_params (params, G_N_ELEMENTS (params)),
                    "skinny GEMM on CUDA cores (kernels/gemm-skinny.cu)");
  }

  ck = add_kernel (ctx, name, "gemm-simt");
  ck->grid = tiles;
  ck->threads = 256;
  ck->smem_bytes = smem;
  ck->note = g_strdup_printf ("%" G_GINT64_FORMAT " rows on CUDA cores, B %s-major read in place with %" G_GINT64_FORMAT
                              "-element loads, K in %u slices of %" G_GINT64_FORMAT ", fp32 partials stored",
                              g->M, g->b_kmajor ? "K" : "N", vec, g->split_k, g->BK);
  return TRUE;
}

/* ---- helper kernels: the plan's launch ------------------------------------------------------- */

/* A repack's or split-K reduction's launch is the plan's (napkin_plan_helper_launch):
 * the printed kernel runs the grid, threads and shared memory the plan states. */
static gboolean
check_helper_launch (const NapkinPlanKernel *kernel,
                     const char             *name,
                     GError                **error)
{
  NapkinPlanKernel want = *kernel;

  napkin_plan_helper_launch (&want);
  if (kernel->grid != want.grid || kernel->threads != want.threads || kernel->smem_bytes != want.smem_bytes)
    return fail (error, name, "the plan launches grid %" G_GINT64_FORMAT ", %u threads, %" G_GINT64_FORMAT
                 " bytes of shared memory; the kernel runs grid %" G_GINT64_FORMAT ", %u threads, %" G_GINT64_FORMAT,
                 kernel->grid, kernel->threads, kernel->smem_bytes, want.grid, want.threads, want.smem_bytes);
  return TRUE;
}

/* ---- split-K reduction ---------------------------------------------------------------------- */

gboolean
_napkin_print_split_reduce (const NapkinPrintCtx   *ctx,
                            const NapkinPlanKernel *kernel,
                            const char             *name,
                            GError                **error)
{
  const NapkinPlanGemm *g = &kernel->u.gemm;
  NapkinCudaRef rc;
  g_autofree char *pref = NULL;
  g_autofree char *epifn = NULL;
  gint64 cbytes;
  gboolean cvec;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (ctx != NULL && kernel != NULL && name != NULL, FALSE);

  if (!check_kind (kernel, NAPKIN_PLAN_SPLIT_REDUCE, "split-K reduction", name, error))
    return FALSE;
  if (g->split_k < 2 || g->partials < 0)
    return fail (error, name, "split_k = %u with partials %d: a reduction needs at least 2 splits and their buffer",
                 g->split_k, g->partials);
  if (g->batch < 1 || g->M < 1 || g->N < 1)
    return fail (error, name, "batch, M and N must be positive");
  if (g->ldc < g->N || (g->batch > 1 && g->c_bstride == 0))
    return fail (error, name, "ldc = %" G_GINT64_FORMAT " and c_bstride = %" G_GINT64_FORMAT " do not hold C",
                 g->ldc, g->c_bstride);
  if (!napkin_plan_gemm_c_storable (g->c_dtype))
    return fail (error, name, "c_dtype %s: C is stored as fp32, fp16 or bf16", napkin_dtype_to_string (g->c_dtype));
  if (!_napkin_cuda_ref (ctx, &g->c, &rc, error))
    return FALSE;
  pref = partials_expr (ctx, g, TRUE, error);
  if (pref == NULL)
    return FALSE;
  epifn = epilogue_function (ctx, name, name, g->epilogue, error);
  if (epifn == NULL)
    return FALSE;
  if (!check_helper_launch (kernel, name, error))
    return FALSE;
  cbytes = napkin_dtype_bytes (g->c_dtype);
  cvec = g->ldc % 4 == 0 && g->c_bstride % 4 == 0 && rc.offset % (4 * cbytes) == 0;

  {
    g_autofree char *what = g_strdup_printf ("split-K reduction of %u partials (kernels/split-reduce.cu)", g->split_k);
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "M", i64 (g->M) },
      { "N", i64 (g->N) },
      { "BATCH", i64 (g->batch) },
      { "SPLIT", i64 (g->split_k) },
      { "CVEC", g_strdup (cvec ? "1" : "0") },
      { "LDC", i64 (g->ldc) },
      { "CBS", i64 (g->c_bstride) },
      { "CT", g_strdup (_napkin_cuda_ctype (g->c_dtype)) },
      { "CREF", _napkin_cuda_ref_expr (&rc, g->c_dtype) },
      { "PREF", g_strdup (pref) },
      { "EPIFN", g_strdup (epifn) },
    };

    print_once (ctx->out, "#define NAPKIN_TILE_STORE", napkin_kernel_tile_store);
    print_skeleton (ctx, kernel, napkin_kernel_split_reduce, _napkin_skeleton_params (params, G_N_ELEMENTS (params)), what);
  }

  ck = add_kernel (ctx, name, "split-reduce");
  ck->grid = kernel->grid;
  ck->threads = kernel->threads;
  ck->note = g_strdup_printf ("sums %u fp32 partials, 4 columns per thread, %s", g->split_k,
                              maps_summary (g->epilogue));
  return TRUE;
}

/* ---- repack ---------------------------------------------------------------------------------- */

gboolean
_napkin_print_repack (const NapkinPrintCtx   *ctx,
                      const NapkinPlanKernel *kernel,
                      const char             *name,
                      GError                **error)
{
  const NapkinPlanRepack *r = &kernel->u.repack;
  const char *rt;
  NapkinCudaRef rs, rd;
  gint64 width, es;
  gboolean svec;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (ctx != NULL && kernel != NULL && name != NULL, FALSE);

  if (!check_kind (kernel, NAPKIN_PLAN_REPACK, "repack", name, error))
    return FALSE;
  switch (napkin_dtype_bytes (r->dtype))
    {
    case 1: rt = "unsigned char"; break;
    case 2: rt = "unsigned short"; break;
    case 4: rt = "unsigned"; break;
    default:
      return fail (error, name, "dtype %s: a repack moves elements of 1, 2 or 4 bytes",
                   napkin_dtype_to_string (r->dtype));
    }
  if (r->batch < 1 || r->rows < 1 || r->cols < 1)
    return fail (error, name, "batch, rows and cols must be positive");
  if ((r->pv_key_order || r->ones_row) && (r->dtype != NAPKIN_DTYPE_FP8_E4M3 || !r->transpose))
    return fail (error, name, "the fp8 P·V key order and row of ones are for a transposed copy of e4m3 elements");
  if (r->ld_src < r->cols)
    return fail (error, name, "ld_src = %" G_GINT64_FORMAT " is shorter than a row (%" G_GINT64_FORMAT ")",
                 r->ld_src, r->cols);
  width = r->transpose ? r->rows : r->cols;
  if (r->ld_dst < width)
    return fail (error, name, "ld_dst = %" G_GINT64_FORMAT " is shorter than a copied row (%" G_GINT64_FORMAT ")",
                 r->ld_dst, width);
  if (r->batch > 1 && (r->dst_bstride < ((r->transpose ? r->cols : r->rows) + (r->ones_row ? 8 : 0)) * r->ld_dst
                       || r->src_bstride < 0))
    return fail (error, name, "dst_bstride = %" G_GINT64_FORMAT " would overlap the copies", r->dst_bstride);
  if (!_napkin_cuda_ref (ctx, &r->src, &rs, error) || !_napkin_cuda_ref (ctx, &r->dst, &rd, error))
    return FALSE;
  /* the destination is written in 16-byte vectors */
  es = napkin_dtype_bytes (r->dtype);
  if ((r->ld_dst * es) % 16 != 0 || rd.offset % 16 != 0 || (r->batch > 1 && (r->dst_bstride * es) % 16 != 0))
    return fail (error, name, "the destination's rows (ld_dst = %" G_GINT64_FORMAT ", dst_bstride = %"
                 G_GINT64_FORMAT ", offset %" G_GINT64_FORMAT ") must start 16-byte aligned", r->ld_dst,
                 r->dst_bstride, rd.offset);
  if (!check_helper_launch (kernel, name, error))
    return FALSE;
  if (r->batch_inner > 1 && (r->batch % r->batch_inner != 0 || r->src_bstride_inner < 0))
    return fail (error, name, "a batch of %" G_GINT64_FORMAT " is not a whole number of inner batches of %"
                 G_GINT64_FORMAT, r->batch, r->batch_inner);
  svec = (r->ld_src * es) % 16 == 0 && rs.offset % 16 == 0 && (r->batch <= 1 || (r->src_bstride * es) % 16 == 0)
         && (r->batch_inner <= 1 || (r->src_bstride_inner * es) % 16 == 0);

  {
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "ROWS", i64 (r->rows) },
      { "COLS", i64 (r->cols) },
      { "LDS", i64 (r->ld_src) },
      { "LDD", i64 (r->ld_dst) },
      { "SBS", i64 (r->src_bstride) },
      { "DBS", i64 (r->dst_bstride) },
      { "BATCH", i64 (r->batch) },
      { "B2", i64 (MAX (1, r->batch_inner)) },
      { "SBS2", i64 (r->batch_inner > 1 ? r->src_bstride_inner : 0) },
      { "TRANSPOSE", g_strdup (r->transpose ? "1" : "0") },
      { "PV_ORDER", g_strdup (r->pv_key_order ? "1" : "0") },
      { "ONES", g_strdup (r->ones_row ? "1" : "0") },
      { "SVEC", g_strdup (svec ? "1" : "0") },
      { "RT", g_strdup (rt) },
      { "SREF", g_strdup_printf ("((const %s *) ((const char *) args.p[%d] + %" G_GINT64_FORMAT "))", rt, rs.slot,
                                 rs.offset) },
      { "DREF", g_strdup_printf ("((%s *) ((char *) args.p[%d] + %" G_GINT64_FORMAT "))", rt, rd.slot, rd.offset) },
    };

    print_skeleton (ctx, kernel, napkin_kernel_repack, _napkin_skeleton_params (params, G_N_ELEMENTS (params)),
                    r->transpose ? "repack, transposed (kernels/repack.cu)" : "repack (kernels/repack.cu)");
  }

  ck = add_kernel (ctx, name, "repack");
  ck->grid = kernel->grid;
  ck->threads = kernel->threads;
  ck->smem_bytes = kernel->smem_bytes;
  ck->note = g_strdup_printf ("%s %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT " × %" G_GINT64_FORMAT
                              " elements to rows of %" G_GINT64_FORMAT "%s", r->transpose ? "transposes" : "copies",
                              r->batch, r->rows, r->cols, r->ld_dst,
                              r->transpose ? " through 64 × 64 shared-memory tiles" : " in 16-byte chunks");
  return TRUE;
}
