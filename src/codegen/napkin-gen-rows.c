/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Printers of the plan's rows and element-wise kernels (docs/plan.md, "Rows and
 * element-wise kernels"): kernels/rows-sm80.cu and kernels/elementwise.cu with their
 * sizes, forms and fused maps filled in from the plan. */

typedef NapkinSkeletonParam Param;

static void
append_helpers (GString *out)
{
  if (strstr (out->str, "#define NAPKIN_SIMT_HELPERS") == NULL)
    {
      g_string_append_c (out, '\n');
      g_string_append (out, napkin_kernel_simt_helpers);
    }
}

static char *
i64 (gint64 v)
{
  return g_strdup_printf ("%" G_GINT64_FORMAT, v);
}

/* `base + row·s1 + col·s2` as C, dropping zero terms. */
static char *
offset_expr (const char *base,
             const char *row,
             gint64      s1,
             const char *col,
             gint64      s2)
{
  GString *s = g_string_new (base);

  if (s1 != 0 && row != NULL)
    g_string_append_printf (s, " + %s * %" G_GINT64_FORMAT "L", row, s1);
  if (s2 == 1 && col != NULL)
    g_string_append_printf (s, " + %s", col);
  else if (s2 != 0 && col != NULL)
    g_string_append_printf (s, " + (%s) * %" G_GINT64_FORMAT "L", col, s2);
  return g_string_free (s, FALSE);
}

/* Declares `const T *__restrict__ NAME = …;` for a map's operand. */
static gboolean
declare_operand (const NapkinPrintCtx *ctx,
                 const NapkinPlanMap  *m,
                 const char           *name,
                 GString              *decls,
                 GError              **error)
{
  NapkinCudaRef ref;
  g_autofree char *expr = NULL;
  const char *ct = _napkin_cuda_ctype (m->other.dtype);

  if (ct == NULL)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "operand %s of %s: the CUDA backend does not read %s",
                   napkin_diagram_node (ctx->program->diagram, m->other.node)->id,
                   napkin_diagram_node (ctx->program->diagram, m->node)->id, napkin_dtype_to_string (m->other.dtype));
      return FALSE;
    }
  if (!_napkin_cuda_ref (ctx, &m->other, &ref, error))
    return FALSE;
  expr = _napkin_cuda_ref_expr (&ref, m->other.dtype);
  g_string_append_printf (decls, "  const %s *__restrict__ %s = %s;\n", ct, name, expr);
  return TRUE;
}

static char *
comment_id (const NapkinPrintCtx *ctx,
            int                   node)
{
  return napkin_codegen_escape_comment (napkin_diagram_node (ctx->program->diagram, node)->id);
}

/* ---- rows ------------------------------------------------------------------------------------ */

/* A map's comment (its id) and, when it has no operand, its code on v[k_] (`vector`) or
 * v; TRUE when that is all of it. */
static gboolean
map_head (const NapkinPrintCtx *ctx,
          const NapkinPlanMap  *m,
          gboolean              vector,
          const char           *indent,
          GString              *code)
{
  g_autofree char *id = comment_id (ctx, m->node);
  g_autofree char *e = NULL;

  g_string_append_printf (code, "%s/* %s */\n", indent, id);
  if (m->has_other)
    return FALSE;
  e = _napkin_cuda_map_expr (m, vector ? "v[k_]" : "v", NULL);
  if (vector)
    g_string_append_printf (code, "%sfor (int k_ = 0; k_ < VEC; k_++)\n%s  v[k_] = %s;\n", indent, indent, e);
  else
    g_string_append_printf (code, "%sv = %s;\n", indent, e);
  return TRUE;
}

/* The operand's row index: rr, or rr / row_div where it varies only by the outer row
 * axes (a modulation [b, e] of rows [b, s]). */
static char *
operand_row (const NapkinPlanMap *m)
{
  return m->row_div > 1 ? g_strdup_printf ("(rr / %" G_GINT64_FORMAT "L)", m->row_div) : g_strdup ("rr");
}

/* The code of one map on `w` elements v[0 … w) starting at column `c` of row rr
 * (vector: w = VEC), reading its operand NAME when it has one. */
static void
rows_map_code (const NapkinPrintCtx *ctx,
               const NapkinPlanMap  *m,
               const char           *name,
               gboolean              vector,
               const char           *flag,
               GString              *code)
{
  g_autofree char *rr = operand_row (m);

  if (map_head (ctx, m, vector, "        ", code))
    return;
  if (!vector)
    {
      g_autofree char *at = offset_expr (name, rr, m->stride[1], "c", m->stride[2]);
      g_autofree char *ld = g_strdup_printf ("napkin_ld (%s)", at);
      g_autofree char *e = _napkin_cuda_map_expr (m, "v", ld);

      g_string_append_printf (code, "        v = %s;\n", e);
      return;
    }
  if (m->stride[2] == 0)
    {
      g_autofree char *at = offset_expr (name, rr, m->stride[1], NULL, 0);
      g_autofree char *e = _napkin_cuda_map_expr (m, "v[k_]", "o_");

      g_string_append_printf (code, "        {\n          const float o_ = napkin_ld (%s);\n\n"
                                    "          for (int k_ = 0; k_ < VEC; k_++)\n            v[k_] = %s;\n        }\n",
                              at, e);
    }
  else if (m->stride[2] == 1)
    {
      g_autofree char *at = offset_expr (name, rr, m->stride[1], "c", 1);
      g_autofree char *end = offset_expr (name, rr, m->stride[1], "COLS", 1);
      g_autofree char *e = _napkin_cuda_map_expr (m, "v[k_]", "o_[k_]");

      /* an operand the row's vectors meet off its alignment: whole aligned vectors,
       * shifted, within the operand's row (nk_ldv_any) */
      g_string_append_printf (code, "        {\n          float o_[VEC];\n\n"
                                    "          if (%s)\n            nk_ldv<VEC> (%s, o_, false);\n"
                                    "          else\n            nk_ldv_any<VEC> (%s, %s, o_);\n"
                                    "          for (int k_ = 0; k_ < VEC; k_++)\n            v[k_] = %s;\n        }\n",
                              flag, at, at, end, e);
    }
  else
    {
      g_autofree char *at = offset_expr (name, rr, m->stride[1], "c + k_", m->stride[2]);
      g_autofree char *ld = g_strdup_printf ("napkin_ld (%s)", at);
      g_autofree char *e = _napkin_cuda_map_expr (m, "v[k_]", ld);

      g_string_append_printf (code, "        for (int k_ = 0; k_ < VEC; k_++)\n          v[k_] = %s;\n", e);
    }
}

/* Whether every vector of an operand (row stride s1, element size `bytes`) starts on
 * the alignment of its load when every row of x does: buffers start 256-aligned. */
static gboolean
known_aligned (gboolean x_aligned,
               gint64   s1,
               guint    vec,
               guint    bytes)
{
  guint g = MIN (16, vec * bytes);

  return x_aligned && (s1 * bytes) % g == 0;
}

static void
row_flag (GString    *flags,
          const char *flag,
          gboolean    known,
          const char *at,
          guint       vec,
          guint       bytes)
{
  guint g = MIN (16, vec * bytes);

  /* below 4 bytes the loads are single elements anyway */
  if (known || g < 4)
    g_string_append_printf (flags, "      constexpr bool %s = true;\n", flag);
  else
    g_string_append_printf (flags, "      const bool %s = ((unsigned long long) (%s) & %uu) == 0;\n", flag, at, g - 1);
}

static gboolean
rows_maps (const NapkinPrintCtx *ctx,
           const GArray         *maps,
           const char           *prefix,
           gboolean              x_aligned,
           guint                 vec,
           GString              *decls,
           GString              *flags,
           GString              *code_v,
           GString              *code_s,
           GError              **error)
{
  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (maps, NapkinPlanMap, i);
      g_autofree char *name = g_strdup_printf ("%s%u", prefix, i);
      g_autofree char *flag = g_strdup_printf ("A_%s", name);

      if (m->has_other)
        {
          if (!declare_operand (ctx, m, name, decls, error))
            return FALSE;
          if (m->stride[2] == 1)
            {
              g_autofree char *rr = operand_row (m);
              g_autofree char *at = offset_expr (name, rr, m->stride[1], "h", 1);

              row_flag (flags, flag, known_aligned (x_aligned, m->stride[1], vec, napkin_dtype_bytes (m->other.dtype)),
                        at, vec, napkin_dtype_bytes (m->other.dtype));
            }
        }
      rows_map_code (ctx, m, name, TRUE, flag, code_v);
      rows_map_code (ctx, m, name, FALSE, flag, code_s);
    }
  return TRUE;
}

/* The skeletons' OP: softmax 0, layernorm 1, rmsnorm 2, sum 3, max 4, mean 5. */
static guint
rows_op_code (const NapkinPlanRows *r)
{
  switch (r->op)
    {
    case NAPKIN_OP_SOFTMAX: return 0;
    case NAPKIN_OP_NORMALIZE: return r->norm == NAPKIN_NORM_LAYERNORM ? 1 : 2;
    default: return r->reduce == NAPKIN_REDUCE_SUM ? 3 : r->reduce == NAPKIN_REDUCE_MAX ? 4 : 5;
    }
}

/* The parameters both rows skeletons take: name, launch bounds, types, form, x and y,
 * the operands and the maps. */
static GArray *
rows_params (const NapkinPlanKernel *kernel,
             const char             *name,
             const NapkinCudaRef    *xref,
             const NapkinCudaRef    *yref,
             guint                   mode,
             const char             *operands,
             const char             *epi_v,
             const char             *epi_s)
{
  const NapkinPlanRows *r = &kernel->u.rows;
  gboolean fp32_cache = r->prologue != NULL && r->prologue->len > 0;
  char eps[G_ASCII_DTOSTR_BUF_SIZE];
  NapkinSkeletonParam common[] = {
    { "NAME", g_strdup (name) },
    { "THREADS", g_strdup_printf ("%u", r->threads) },
    { "MINBLOCKS", g_strdup_printf ("%u", MAX (kernel->blocks_per_sm, 1)) },
    { "T", g_strdup (_napkin_cuda_ctype (r->x_dtype)) },
    { "OT", g_strdup (_napkin_cuda_ctype (r->y_dtype)) },
    { "CT", g_strdup (fp32_cache ? "float" : _napkin_cuda_ctype (r->x_dtype)) },
    { "VEC", g_strdup_printf ("%u", r->vec) },
    { "MODE", g_strdup_printf ("%u", mode) },
    { "OP", g_strdup_printf ("%u", rows_op_code (r)) },
    { "LDX", i64 (r->ldx) },
    { "LDY", i64 (r->ldy) },
    { "EPS", g_strdup (g_ascii_formatd (eps, sizeof eps, "%.9e", r->op == NAPKIN_OP_NORMALIZE ? r->eps : 0.0)) },
    { "XREF", _napkin_cuda_ref_expr (xref, r->x_dtype) },
    { "YREF", _napkin_cuda_ref_expr (yref, r->y_dtype) },
    { "OPERANDS", g_strdup (operands) },
    { "EPI_V", g_strdup (epi_v) },
    { "EPI_S", g_strdup (epi_s) },
  };

  return _napkin_skeleton_params (common, G_N_ELEMENTS (common));
}

/* Instantiates `template` with `params` (freed), prints it after the helpers with a
 * comment naming the skeleton's `file`, and appends the module's kernel. */
static void
rows_emit (const NapkinPrintCtx   *ctx,
           const NapkinPlanKernel *kernel,
           const char             *name,
           const char             *template,
           const char             *skeleton,
           const char             *file,
           GArray                 *params,
           gint64                  grid,
           gint64                  smem_static,
           gint64                  smem_dynamic)
{
  g_autofree char *text = _napkin_skeleton_instantiate (template, (NapkinSkeletonParam *) params->data, params->len);
  g_autofree char *place = napkin_codegen_escape_comment (kernel->name);
  g_autofree char *fid = comment_id (ctx, kernel->u.rows.node);
  g_autofree char *note = napkin_codegen_escape_comment (kernel->note != NULL ? kernel->note : "");
  NapkinCudaKernel *ck;

  g_array_unref (params);
  append_helpers (ctx->out);
  g_string_append_printf (ctx->out, "\n/* %s: %s as the %s skeleton (%s): %s */\n", place, fid,
                          g_str_equal (skeleton, "rows") ? "rows" : "strided rows", file, note);
  g_string_append (ctx->out, text);

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_strdup (name);
  ck->skeleton = g_strdup (skeleton);
  ck->grid = grid;
  ck->threads = kernel->u.rows.threads;
  ck->smem_bytes = smem_static + smem_dynamic;
  ck->dynamic_smem = smem_dynamic;
  ck->note = g_strdup (kernel->note);
  g_ptr_array_add (ctx->module->kernels, ck);
}

#define PARAM(k, v) g_array_append_val (params, ((NapkinSkeletonParam) { (k), (v) }))

/* ---- rows over any axis (the strided form) ------------------------------------------------- */

/* `NAME + oo·s0 + C·s1 + j·s2`: an operand's element at (o, c, j) as C, zero terms dropped. */
static char *
strided_at (const char *name,
            gint64      s0,
            const char *c,
            gint64      s1,
            gint64      s2)
{
  GString *s = g_string_new (name);

  if (s0 != 0)
    g_string_append_printf (s, " + oo * %" G_GINT64_FORMAT "L", s0);
  if (s1 == 1)
    g_string_append_printf (s, " + %s", c);
  else if (s1 != 0)
    g_string_append_printf (s, " + (%s) * %" G_GINT64_FORMAT "L", c, s1);
  if (s2 != 0)
    g_string_append_printf (s, " + j * %" G_GINT64_FORMAT "L", s2);
  return g_string_free (s, FALSE);
}

/* The code of one map on VEC values v[k_] at columns c … c + VEC of row j (`vector`), or
 * on one value v at (c, j): a vector load where the operand runs along the columns with
 * strides that keep vectors aligned (known when printed: buffers start 256-aligned),
 * one load where it is constant along them, single loads otherwise. */
static void
strided_map_code (const NapkinPrintCtx *ctx,
                  const NapkinPlanMap  *m,
                  const char           *name,
                  gboolean              vector,
                  guint                 vec,
                  gint64                outer,
                  GString              *code)
{
  gint64 s0 = outer > 1 ? m->stride[0] : 0, s1 = m->stride[1], s2 = m->stride[2];

  if (map_head (ctx, m, vector, "      ", code))
    return;
  if (!vector || s1 == 0)
    {
      g_autofree char *at = strided_at (name, s0, "c", s1, s2);
      g_autofree char *e = _napkin_cuda_map_expr (m, vector ? "v[k_]" : "v", "o_");

      g_string_append_printf (code, "      {\n        const float o_ = napkin_ld (%s);\n\n", at);
      if (vector)
        g_string_append_printf (code, "        for (int k_ = 0; k_ < VEC; k_++)\n          v[k_] = %s;\n      }\n", e);
      else
        g_string_append_printf (code, "        v = %s;\n      }\n", e);
    }
  else
    {
      gboolean aligned = s1 == 1 && s0 % vec == 0 && s2 % vec == 0;
      g_autofree char *at = strided_at (name, s0, s1 == 1 ? "c" : "c + k_", s1, s2);
      g_autofree char *e = _napkin_cuda_map_expr (m, "v[k_]", "o_[k_]");

      g_string_append (code, "      {\n        float o_[VEC];\n\n");
      if (aligned)
        g_string_append_printf (code, "        nk_ldv<VEC> (%s, o_, false);\n", at);
      else
        g_string_append_printf (code, "        for (int k_ = 0; k_ < VEC; k_++)\n          o_[k_] = napkin_ld (%s%s);\n",
                                at, s1 == 1 ? " + k_" : "");
      g_string_append_printf (code, "        for (int k_ = 0; k_ < VEC; k_++)\n          v[k_] = %s;\n      }\n", e);
    }
}

static gboolean
strided_maps (const NapkinPrintCtx *ctx,
              const NapkinPlanRows *r,
              const GArray         *maps,
              const char           *prefix,
              GString              *decls,
              GString              *code_v,
              GString              *code_s,
              GError              **error)
{
  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (maps, NapkinPlanMap, i);
      g_autofree char *name = g_strdup_printf ("%s%u", prefix, i);

      if (m->has_other && !declare_operand (ctx, m, name, decls, error))
        return FALSE;
      strided_map_code (ctx, m, name, TRUE, r->vec, r->outer, code_v);
      if (code_s != NULL)
        strided_map_code (ctx, m, name, FALSE, r->vec, r->outer, code_s);
    }
  return TRUE;
}

/* The strided form (docs/plan.md, "Rows over any axis"): kernels/rows-strided-sm80.cu. */
static gboolean
print_rows_strided (const NapkinPrintCtx   *ctx,
                    const NapkinPlanKernel *kernel,
                    const char             *name,
                    const NapkinCudaRef    *xref,
                    const NapkinCudaRef    *yref,
                    GError                **error)
{
  const NapkinPlanRows *r = &kernel->u.rows;
  g_autoptr(GString) decls = g_string_new (NULL);
  g_autoptr(GString) pro_v = g_string_new (NULL);
  g_autoptr(GString) epi_v = g_string_new (NULL);
  g_autoptr(GString) epi_s = g_string_new (NULL);
  guint tc = (guint) (r->cols_per_block / r->vec), tr = r->threads_per_row, mode, nr = 0;
  guint prows = tc >= 32 ? tr : r->threads / 32;
  gboolean fp32_cache = r->prologue != NULL && r->prologue->len > 0;
  gboolean y_vec = (r->outer == 1 || r->ldy % r->vec == 0) && (r->op == NAPKIN_OP_REDUCE || r->y_stride % r->vec == 0);
  gint64 smem_dynamic = 0, strips;
  NapkinCudaRef pref;
  g_autofree char *pexpr = NULL;
  GArray *params;

  mode = r->op == NAPKIN_OP_REDUCE ? 3 : !r->one_pass ? 2 : r->smem_row ? 1 : 0;
  if (mode == 0)
    nr = (guint) ((r->cols + tr - 1) / tr);
  if (mode == 1)
    smem_dynamic = r->cols * r->cols_per_block * (fp32_cache ? 4 : napkin_dtype_bytes (r->x_dtype));
  if (!strided_maps (ctx, r, r->prologue, "P", decls, pro_v, NULL, error)
      || !strided_maps (ctx, r, r->epilogue, "E", decls, epi_v, epi_s, error))
    return FALSE;

  if (r->split > 1)
    {
      NapkinPlanBuffer pb = { -1, r->partials, NAPKIN_DTYPE_FP32 };

      if (r->partials < 0)
        {
          g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                       "%s: the axis in %u chunks needs a scratch buffer of partials (partials is -1)",
                       kernel->name, r->split);
          return FALSE;
        }
      if (!_napkin_cuda_ref (ctx, &pb, &pref, error))
        return FALSE;
      pexpr = _napkin_cuda_ref_expr (&pref, NAPKIN_DTYPE_FP32);
    }
  strips = r->outer * ((r->inner + r->cols_per_block - 1) / r->cols_per_block);
  /* split: the chunks' statistics (PHASE 1), then the output (PHASE 2, the plan's kernel) */
  for (guint phase = r->split > 1 ? 1 : 0; phase <= (r->split > 1 ? 2u : 0u); phase++)
    {
      g_autofree char *kname = phase == 1 ? g_strdup_printf ("%s_part", name) : g_strdup (name);
      gboolean chunked = phase == 1 || (phase == 2 && mode == 2);

      params = rows_params (kernel, kname, xref, yref, mode, decls->str, epi_v->str, epi_s->str);
      PARAM ("TC", g_strdup_printf ("%u", tc));
      PARAM ("TR", g_strdup_printf ("%u", tr));
      PARAM ("NR", g_strdup_printf ("%u", nr));
      PARAM ("OUTER", i64 (r->outer));
      PARAM ("LEN", i64 (r->cols));
      PARAM ("INNER", i64 (r->inner));
      PARAM ("YS", i64 (r->y_stride));
      PARAM ("Y_VEC", g_strdup (y_vec ? "true" : "false"));
      PARAM ("PRO_V", g_strdup (pro_v->str));
      PARAM ("SPLIT", g_strdup_printf ("%u", MAX (r->split, 1)));
      PARAM ("PHASE", g_strdup_printf ("%u", phase));
      PARAM ("CHUNK", i64 (r->split > 1 ? r->chunk : r->cols));
      PARAM ("PREF", g_strdup (pexpr != NULL ? pexpr : "((float *) nullptr)"));
      rows_emit (ctx, kernel, kname, napkin_kernel_rows_strided_sm80, "rows-strided", "kernels/rows-strided-sm80.cu",
                 params, strips * (chunked ? r->split : 1), (gint64) (prows + 1) * r->cols_per_block * 2 * 4,
                 smem_dynamic);
    }
  return TRUE;
}

gboolean
_napkin_print_rows (const NapkinPrintCtx   *ctx,
                    const NapkinPlanKernel *kernel,
                    const char             *name,
                    GError                **error)
{
  const NapkinPlanRows *r;
  NapkinCudaRef xref, yref;
  g_autoptr(GString) decls = g_string_new (NULL);
  g_autoptr(GString) flags = g_string_new (NULL);
  g_autoptr(GString) pro_v = g_string_new (NULL);
  g_autoptr(GString) pro_s = g_string_new (NULL);
  g_autoptr(GString) epi_v = g_string_new (NULL);
  g_autoptr(GString) epi_s = g_string_new (NULL);
  guint xb, yb, tpr, teams, nv = 0, ns = 0, n_scalars, mode;
  gboolean aligned, y_aligned;
  gint64 smem_dynamic = 0, smem_static;
  g_autofree char *why = NULL;
  GArray *params;

  g_return_val_if_fail (kernel->kind == NAPKIN_PLAN_ROWS, FALSE);
  r = &kernel->u.rows;
  xb = napkin_dtype_bytes (r->x_dtype);
  yb = napkin_dtype_bytes (r->y_dtype);
  tpr = r->threads_per_row;
  /* the plan's rules (napkin_plan_rows_printable): a plan made by them always prints */
  if (!napkin_plan_rows_printable (r, &why) || _napkin_cuda_ctype (r->x_dtype) == NULL
      || _napkin_cuda_ctype (r->y_dtype) == NULL)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, "%s: %s", kernel->name,
                   why != NULL ? why : "the CUDA backend does not read or write its element types");
      return FALSE;
    }
  if (!_napkin_cuda_ref (ctx, &r->x, &xref, error) || !_napkin_cuda_ref (ctx, &r->y, &yref, error))
    return FALSE;
  if (r->inner > 1)
    return print_rows_strided (ctx, kernel, name, &xref, &yref, error);
  teams = r->threads / tpr;
  aligned = (r->ldx * xb) % 16 == 0;
  n_scalars = aligned ? (guint) (r->cols % r->vec) : (guint) MIN (r->cols, 2 * (r->vec - 1));
  if (r->op == NAPKIN_OP_REDUCE)
    mode = 3;
  else if (!r->one_pass)
    mode = 2;
  else if (r->smem_row)
    mode = 1;
  else
    {
      mode = 0;
      nv = (guint) ((r->cols / r->vec + tpr - 1) / tpr);
      ns = (n_scalars + tpr - 1) / tpr;
    }
  if (mode == 1)
    smem_dynamic = (r->cols + 2 * r->vec) * (r->prologue != NULL && r->prologue->len > 0 ? 4 : xb);
  smem_static = (gint64) teams * MAX (tpr / 32, 1) * 2 * 4;

  if (!rows_maps (ctx, r->prologue, "P", aligned, r->vec, decls, flags, pro_v, pro_s, error)
      || !rows_maps (ctx, r->epilogue, "E", aligned, r->vec, decls, flags, epi_v, epi_s, error))
    return FALSE;
  y_aligned = r->op == NAPKIN_OP_REDUCE || known_aligned (aligned, r->ldy, r->vec, yb);
  row_flag (flags, "A_Y", y_aligned, "y + h", r->vec, yb);

  params = rows_params (kernel, name, &xref, &yref, mode, decls->str, epi_v->str, epi_s->str);
  PARAM ("TPR", g_strdup_printf ("%u", tpr));
  PARAM ("TEAMS", g_strdup_printf ("%u", teams));
  PARAM ("NV", g_strdup_printf ("%u", nv));
  PARAM ("NS", g_strdup_printf ("%u", ns));
  PARAM ("COLS", i64 (r->cols));
  PARAM ("ROWS", i64 (r->rows));
  PARAM ("RPB", i64 (r->rows_per_block));
  PARAM ("X_ALIGNED", g_strdup (aligned ? "true" : "false"));
  PARAM ("ROW_FLAGS", g_strdup (flags->str));
  PARAM ("PRO_V", g_strdup (pro_v->str));
  PARAM ("PRO_S", g_strdup (pro_s->str));
  rows_emit (ctx, kernel, name, napkin_kernel_rows_sm80, "rows", "kernels/rows-sm80.cu", params,
             (r->rows + r->rows_per_block - 1) / r->rows_per_block, smem_static, smem_dynamic);
  return TRUE;
}

#undef PARAM

/* ---- element-wise ------------------------------------------------------------------------------ */

/* Σ i_d · strides[d] over the merged axes (`flat`: the strides are y's own, the offset
 * is e). */
static char *
ew_offset (const NapkinPlanElementwise *e,
           const gint64                *strides)
{
  GString *s = g_string_new (NULL);
  gint64 acc = 1;
  gboolean flat = TRUE;

  for (int d = (int) e->rank - 1; d >= 0; d--)
    {
      flat &= strides[d] == acc;
      acc *= e->dims[d];
    }
  if (flat)
    {
      g_string_append (s, "e");
      return g_string_free (s, FALSE);
    }
  for (guint d = 0; d < e->rank; d++)
    if (strides[d] != 0)
      g_string_append_printf (s, "%si%u * %" G_GINT64_FORMAT "L", s->len > 0 ? " + " : "", d, strides[d]);
  if (s->len == 0)
    g_string_append (s, "0L");
  return g_string_free (s, FALSE);
}

/* Loads an operand (strides over the merged axes) into float arrays `dst[k_]` for
 * k_ < w: a vector load where it runs along the inner axis with aligned outer strides,
 * one load where it is constant along it, single loads otherwise. */
static void
ew_load_at (const NapkinPlanElementwise *e,
            const char                  *ptr,
            const gint64                *strides,
            const char                  *shift,
            const char                  *dst,
            guint                        w,
            GString                     *code)
{
  g_autofree char *flat = ew_offset (e, strides);
  g_autofree char *off = shift != NULL ? g_strdup_printf ("(%s) + (%s)", flat, shift) : g_strdup (flat);
  gint64 inner = strides[e->rank - 1];
  gboolean vec_ok = w > 1 && inner == 1;

  for (guint d = 0; d + 1 < e->rank && vec_ok; d++)
    vec_ok = strides[d] % w == 0;
  if (vec_ok)
    g_string_append_printf (code, "      nk_ldv<%u> (%s + %s, %s, false);\n", w, ptr, off, dst);
  else if (inner == 0 || w == 1)
    g_string_append_printf (code, "      {\n        const float b_ = napkin_ld (%s + %s);\n\n"
                                  "        for (int k_ = 0; k_ < %u; k_++)\n          %s[k_] = b_;\n      }\n",
                            ptr, off, w, dst);
  else
    g_string_append_printf (code, "      for (int k_ = 0; k_ < %u; k_++)\n"
                                  "        %s[k_] = napkin_ld (%s + %s + k_ * %" G_GINT64_FORMAT "L);\n",
                            w, dst, ptr, off, inner);
}

static void
ew_load (const NapkinPlanElementwise *e,
         const char                  *ptr,
         const gint64                *strides,
         const char                  *dst,
         guint                        w,
         GString                     *code)
{
  ew_load_at (e, ptr, strides, NULL, dst, w, code);
}

static void
ew_body (const NapkinPrintCtx        *ctx,
         const NapkinPlanElementwise *e,
         guint                        w,
         GString                     *index,
         GString                     *load,
         GString                     *maps)
{
  g_string_append (index, "      long t_ = e;\n");
  for (int d = (int) e->rank - 1; d > 0; d--)
    g_string_append_printf (index, "      const long i%d = t_ %% %" G_GINT64_FORMAT "L;\n      t_ /= %" G_GINT64_FORMAT "L;\n",
                            d, e->dims[d], e->dims[d]);
  g_string_append (index, "      const long i0 = t_;\n      (void) i0;\n");
  for (guint d = 1; d < e->rank; d++)
    g_string_append_printf (index, "      (void) i%u;\n", d);
  ew_load (e, "X", e->x_strides, "v", w, load);
  for (guint i = 0; i < e->maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (e->maps, NapkinPlanMap, i);
      const gint64 *os = g_ptr_array_index (e->other_strides, i);
      g_autofree char *id = comment_id (ctx, m->node);

      g_string_append_printf (maps, "      /* %s */\n", id);
      if (m->is_mask && m->mask == NAPKIN_MASK_TENSOR && m->has_other && os != NULL)
        {
          /* the mask tensor, broadcast by its strides: added (float), or tested */
          g_autofree char *name = g_strdup_printf ("O%u", i);

          g_string_append_printf (maps, "      {\n      float o_[%u];\n", w);
          ew_load (e, name, os, "o_", w, maps);
          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        v[k_] = %s;\n      }\n", w,
                                  napkin_dtype_is_float (m->other.dtype) ? "v[k_] + o_[k_]"
                                                                          : "(o_[k_] != 0.0f ? v[k_] : NAPKIN_NEG_INF)");
        }
      else if (m->is_mask)
        {
          /* the element's row and column from its flat index in y (e + k_) */
          g_autofree char *keep = NULL, *lo = NULL, *hi = NULL;

          lo = m->mask == NAPKIN_MASK_WINDOW && m->mask_left >= 0
               ? g_strdup_printf ("c_ >= r_ - %" G_GINT64_FORMAT "L", m->mask_left) : g_strdup ("true");
          hi = m->mask == NAPKIN_MASK_CAUSAL ? g_strdup ("c_ <= r_")
               : m->mask_right >= 0 ? g_strdup_printf ("c_ <= r_ + %" G_GINT64_FORMAT "L", m->mask_right)
                                    : g_strdup ("true");
          keep = g_strdup_printf ("%s && %s", lo, hi);
          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        {\n"
                                        "          const long r_ = (e + k_) / %" G_GINT64_FORMAT "L %% %" G_GINT64_FORMAT
                                        "L + %" G_GINT64_FORMAT "L;\n"
                                        "          const long c_ = (e + k_) / %" G_GINT64_FORMAT "L %% %" G_GINT64_FORMAT
                                        "L;\n\n          if (!(%s))\n            v[k_] = NAPKIN_NEG_INF;\n        }\n",
                                  w, m->mask_row_stride, m->mask_rows, m->mask_offset, m->mask_col_stride, m->mask_cols,
                                  keep);
        }
      else if (m->has_other && os != NULL && m->other_rotate > 0)
        {
          /* rotate_half along the innermost axis (docs/plan.md, "Rotary as one pass"):
           * element j of a run of n reads j + n/2 negated below n/2, j − n/2 above; a
           * vector lies in one half (the plan's vector divides n/2) */
          const gint64 n = m->other_rotate, inner = os[e->rank - 1];
          const gint64 *os2 = m->has_other2 ? g_ptr_array_index (e->other_strides, m->other2_index) : NULL;
          g_autofree char *name = g_strdup_printf ("O%u", i);
          g_autofree char *name2 = g_strdup_printf ("O%ub", i);
          g_autofree char *shift = g_strdup_printf ("lo_ ? %" G_GINT64_FORMAT "L : -%" G_GINT64_FORMAT "L",
                                                    n / 2 * inner, n / 2 * inner);
          g_autofree char *expr = _napkin_cuda_map_expr (m, "v[k_]", "o_[k_]");

          g_string_append_printf (maps, "      {\n      float o_[%u];\n      const bool lo_ = i%u %% %" G_GINT64_FORMAT
                                        "L < %" G_GINT64_FORMAT "L;\n\n", w, e->rank - 1, n, n / 2);
          ew_load_at (e, name, os, shift, "o_", w, maps);
          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        o_[k_] = lo_ ? -o_[k_] : o_[k_];\n", w);
          if (os2 != NULL)
            {
              g_string_append_printf (maps, "      {\n      float o2_[%u];\n", w);
              ew_load (e, name2, os2, "o2_", w, maps);
              g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        o_[k_] *= o2_[k_];\n      }\n", w);
            }
          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        v[k_] = %s;\n      }\n", w,
                                  expr);
        }
      else if (m->has_other && os != NULL)
        {
          g_autofree char *name = g_strdup_printf ("O%u", i);
          g_autofree char *expr = _napkin_cuda_map_expr (m, "v[k_]", "o_[k_]");

          g_string_append_printf (maps, "      {\n      float o_[%u];\n", w);
          ew_load (e, name, os, "o_", w, maps);
          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        v[k_] = %s;\n      }\n", w,
                                  expr);
        }
      else
        {
          g_autofree char *expr = _napkin_cuda_map_expr (m, "v[k_]", NULL);

          g_string_append_printf (maps, "      for (int k_ = 0; k_ < %u; k_++)\n        v[k_] = %s;\n", w, expr);
        }
    }
}

gboolean
_napkin_print_elementwise (const NapkinPrintCtx   *ctx,
                           const NapkinPlanKernel *kernel,
                           const char             *name,
                           GError                **error)
{
  const NapkinPlanElementwise *e;
  NapkinCudaRef xref, yref;
  g_autoptr(GString) decls = g_string_new (NULL);
  g_autoptr(GString) index_v = g_string_new (NULL), load_v = g_string_new (NULL), maps_v = g_string_new (NULL);
  g_autoptr(GString) index_s = g_string_new (NULL), load_s = g_string_new (NULL), maps_s = g_string_new (NULL);
  gint64 n = 1;
  NapkinCudaKernel *ck;

  g_return_val_if_fail (kernel->kind == NAPKIN_PLAN_ELEMENTWISE, FALSE);
  e = &kernel->u.ew;
  for (guint d = 0; d < e->rank; d++)
    n *= e->dims[d];
  if (_napkin_cuda_ctype (e->x_dtype) == NULL || _napkin_cuda_ctype (e->y_dtype) == NULL || e->rank == 0
      || e->vec == 0 || (e->rank > 1 && e->dims[e->rank - 1] % e->vec != 0) || e->threads == 0 || e->threads > 1024)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "%s: the element-wise kernel cannot print %s → %s over %u axes with %u-element vectors",
                   kernel->name, napkin_dtype_to_string (e->x_dtype), napkin_dtype_to_string (e->y_dtype), e->rank,
                   e->vec);
      return FALSE;
    }
  if (!_napkin_cuda_ref (ctx, &e->x, &xref, error) || !_napkin_cuda_ref (ctx, &e->y, &yref, error))
    return FALSE;
  for (guint i = 0; i < e->maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (e->maps, NapkinPlanMap, i);
      g_autofree char *oname = g_strdup_printf ("O%u", i);

      if (m->has_other && !declare_operand (ctx, m, oname, decls, error))
        return FALSE;
      if (m->has_other2)
        {
          /* the second operand declared as a map's other would be */
          NapkinPlanMap m2 = *m;
          g_autofree char *oname2 = g_strdup_printf ("O%ub", i);

          m2.other = m->other2;
          if (!declare_operand (ctx, &m2, oname2, decls, error))
            return FALSE;
        }
    }
  ew_body (ctx, e, e->vec, index_v, load_v, maps_v);
  ew_body (ctx, e, 1, index_s, load_s, maps_s);

  {
    g_autofree char *xexpr = _napkin_cuda_ref_expr (&xref, e->x_dtype);
    g_autofree char *yexpr = _napkin_cuda_ref_expr (&yref, e->y_dtype);
    Param params[] = {
      { "NAME", g_strdup (name) },
      { "THREADS", g_strdup_printf ("%u", e->threads) },
      { "T", g_strdup (_napkin_cuda_ctype (e->x_dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (e->y_dtype)) },
      { "VEC", g_strdup_printf ("%u", e->vec) },
      { "N", i64 (n) },
      { "XREF", g_strdup (xexpr) },
      { "YREF", g_strdup (yexpr) },
      { "OPERANDS", g_strdup (decls->str) },
      { "INDEX_V", g_strdup (index_v->str) },
      { "LOAD_V", g_strdup (load_v->str) },
      { "MAPS_V", g_strdup (maps_v->str) },
      { "INDEX_S", g_strdup (index_s->str) },
      { "LOAD_S", g_strdup (load_s->str) },
      { "MAPS_S", g_strdup (maps_s->str) },
    };
    g_autofree char *text = NULL;
    g_autofree char *place = napkin_codegen_escape_comment (kernel->name);
    g_autofree char *note = napkin_codegen_escape_comment (kernel->note != NULL ? kernel->note : "");

    text = _napkin_skeleton_instantiate (napkin_kernel_elementwise, params, G_N_ELEMENTS (params));
    append_helpers (ctx->out);
    g_string_append_printf (ctx->out, "\n/* %s: element-wise maps as the elementwise skeleton "
                                      "(kernels/elementwise.cu): %s */\n", place, note);
    g_string_append (ctx->out, text);
  }

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_strdup (name);
  ck->skeleton = g_strdup ("elementwise");
  ck->grid = MAX (kernel->grid, 1);
  ck->threads = e->threads;
  ck->note = g_strdup (kernel->note);
  g_ptr_array_add (ctx->module->kernels, ck);
  return TRUE;
}
