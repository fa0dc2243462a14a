/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include <string.h>

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* The printer of the kernel plan's attention kernels (docs/plan.md, "Attention kernels"):
 * the Hopper kernel (kernels/attn-sm90.cu) and the mma.sync one (kernels/attn-sm80.cu)
 * with their parameters and the code that finds a block's heads from its index, the
 * split-KV combine (kernels/attn-combine.cu), and, for today's aligned shapes on
 * mma.sync, the skeleton they were measured with (kernels/flash-mma.cu). */

#define FAIL(...) do { g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED, __VA_ARGS__); \
                       return FALSE; } while (0)

static char *
int_text (gint64 v)
{
  return g_strdup_printf ("%" G_GINT64_FORMAT, v);
}

static char *
float_text (double v)
{
  char text[G_ASCII_DTOSTR_BUF_SIZE];

  return g_strdup (g_ascii_formatd (text, sizeof text, "%.9e", v));
}

static const char *
mma_type (NapkinDtype dtype)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP16: return "f16";
    case NAPKIN_DTYPE_BF16: return "bf16";
    case NAPKIN_DTYPE_FP8_E4M3: return "e4m3";
    default: return NULL;
    }
}

/* Which sums the block-index code keeps. */
enum
{
  LEAD_Q = 1 << 0,       /* q_base: Q's offset */
  LEAD_O = 1 << 1,       /* o_base: O's offset */
  LEAD_TMA = 1 << 2,     /* kv_row0, kv_plane: the K/V view's coordinates */
  LEAD_K = 1 << 3,       /* k_base: K's (and V's) offset */
  LEAD_FLAT = 1 << 4,    /* kv_flat: the flat index of the K/V matrix */
  LEAD_SC = 1 << 5,      /* scI_base: each score operand's offset */
  LEAD_GRADS = 1 << 6,   /* dq_base, dk_base, dv_base: the backward's gradients' offsets */
};

/* Code decomposing `blk` into the leading axes, innermost first (with `first`, the plan's
 * lead_first before them: blocks that read the same tiles of a score operand together),
 * adding each index times its stride to the sums `which` names; kv_flat is the K/V
 * matrix's flat index whatever the order; LEAD_GRADS takes the strides from `bwd`. */
static char *
lead_code (const NapkinPlanAttention    *a,
           const NapkinPlanAttnBackward *bwd,
           guint                         which,
           gboolean                      first,
           int                           indent)
{
  GString *s = g_string_new (NULL);
  gint64 mults[NAPKIN_MAX_RANK], mult = 1;
  int order[NAPKIN_MAX_RANK], n = 0;
  g_autofree char *pad = g_strnfill (indent, ' ');

  for (int l = (int) a->n_lead - 1; l >= 0; l--)
    {
      mults[l] = mult;
      mult *= a->lead_size[l];
    }
  if (first && a->lead_first >= 0)
    order[n++] = a->lead_first;
  for (int l = (int) a->n_lead - 1; l >= 0; l--)
    if (!(first && l == a->lead_first))
      order[n++] = l;
  for (int o = 0; o < n; o++)
    {
      const int l = order[o];

      mult = mults[l];
      g_string_append_printf (s, "%s{\n%s  const long i_ = blk %% %" G_GINT64_FORMAT "L;\n\n%s  blk /= %" G_GINT64_FORMAT
                              "L;\n", pad, pad, a->lead_size[l], pad, a->lead_size[l]);
      if (which & LEAD_Q)
        g_string_append_printf (s, "%s  q_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, a->q_lead[l]);
      if (which & LEAD_O)
        g_string_append_printf (s, "%s  o_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, a->o_lead[l]);
      if (which & LEAD_TMA)
        g_string_append_printf (s, "%s  kv_row0 += i_ * %" G_GINT64_FORMAT "L;\n%s  kv_plane += i_ * %" G_GINT64_FORMAT
                                "L;\n", pad, a->kv_row_coef[l], pad, a->kv_plane_coef[l]);
      if (which & LEAD_K)
        g_string_append_printf (s, "%s  k_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, a->k_lead[l]);
      if (which & LEAD_FLAT)
        g_string_append_printf (s, "%s  kv_flat += i_ * %" G_GINT64_FORMAT "L;\n", pad, mult);
      if (which & LEAD_GRADS)
        g_string_append_printf (s, "%s  dq_base += i_ * %" G_GINT64_FORMAT "L;\n%s  dk_base += i_ * %" G_GINT64_FORMAT
                                "L;\n%s  dv_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, bwd->dq_lead[l], pad,
                                bwd->dk_lead[l], pad, bwd->dv_lead[l]);
      if ((which & LEAD_GRADS) && bwd->d_bias.node >= 0 && bwd->d_bias_at.lead[l] != 0)
        g_string_append_printf (s, "%s  db_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, bwd->d_bias_at.lead[l]);
      for (guint i = 0; (which & LEAD_SC) && i < a->n_scores; i++)
        if (a->scores[i].lead[l] != 0)
          g_string_append_printf (s, "%s  sc%u_base += i_ * %" G_GINT64_FORMAT "L;\n", pad, i, a->scores[i].lead[l]);
      g_string_append_printf (s, "%s}\n", pad);
    }
  return g_string_free (s, FALSE);
}

/* The problem's sizes and batching, as both tiled templates (attn-sm90.cu, attn-sm80.cu)
 * take them. */
static void
add_size_params (GArray                    *p,
                 const NapkinPlanAttention *a)
{
  NapkinSkeletonParam t[] = {
    { "NQ", int_text (a->NQ) },
    { "NKV", int_text (a->NKV) },
    { "GROUP", int_text (a->group) },
    { "GROUP_TILE", int_text (a->group_tile) },
    { "KV_BATCH", int_text (a->kv_batch) },
  };

  g_array_append_vals (p, t, G_N_ELEMENTS (t));
}

/* The mask's edges as every attention template takes them (the backward's too). */
static void
add_mask_bounds (GArray                    *p,
                 const NapkinPlanAttention *a)
{
  gboolean lo = a->mask == NAPKIN_ATTN_MASK_WINDOW && a->window_left >= 0;
  gboolean hi = a->mask == NAPKIN_ATTN_MASK_CAUSAL || (a->mask == NAPKIN_ATTN_MASK_WINDOW && a->window_right >= 0);
  gint64 left = lo ? a->window_left : 0;
  gint64 right = a->mask == NAPKIN_ATTN_MASK_CAUSAL ? 0 : (hi ? a->window_right : 0);
  NapkinSkeletonParam t[] = {
    { "MASK_LO", g_strdup (lo ? "1" : "0") },
    { "MASK_HI", g_strdup (hi ? "1" : "0") },
    { "LEFT", int_text (left) },
    { "RIGHT", int_text (right) },
    { "OFFSET", int_text (a->mask_offset) },
  };

  g_array_append_vals (p, t, G_N_ELEMENTS (t));
}

/* The split over keys, the mask and the Q layout, as both tiled templates take them. */
static void
add_mask_params (GArray                    *p,
                 const NapkinPlanAttention *a)
{
  NapkinSkeletonParam t[] = {
    { "SPLIT", int_text (a->split_kv) },
    { "CPS", int_text (a->chunks_per_split) },
    { "REVERSE", g_strdup (a->mask != NAPKIN_ATTN_MASK_NONE ? "1" : "0") },
    { "BAND", int_text (a->band) },
    { "Q_GROUP", int_text (a->q_group) },
    { "Q_ROW", int_text (a->q_row) },
  };

  add_mask_bounds (p, a);
  g_array_append_vals (p, t, G_N_ELEMENTS (t));
}

/* Instantiates TEMPLATE with the parameters P (freed, values included) into the module's
 * text after the line COMMENT (freed). */
static void
emit (const NapkinPrintCtx *ctx,
      const char           *template,
      GArray               *p,
      char                 *comment)
{
  g_autofree char *text = _napkin_skeleton_instantiate (template, (NapkinSkeletonParam *) (void *) p->data, p->len);

  g_string_append (ctx->out, comment);
  g_string_append (ctx->out, text);
  g_array_free (p, TRUE);
  g_free (comment);
}

/* Appends to S the attention's device functions NAME_pv (o, a0…a3, desc_v): O += P·V with
 * P in registers and V from shared memory (16-bit: N-major through the transpose bit; v8:
 * Vᵀ e4m3, K-major), and NAME_fence_s / NAME_fence_o, the empty asm statements that pin
 * the BKV/2 and D/2 accumulators around a wait. */
static void
attn_pv_functions (GString    *s,
                   const char *name,
                   gint64      BKV,
                   gint64      D,
                   const char *mma,
                   gboolean    v8)
{
  const gint64 ns = BKV / 2, no = D / 2;
  g_autoptr(GString) regs_o = g_string_new (NULL);
  g_autoptr(GString) outs_s = g_string_new (NULL);
  g_autoptr(GString) outs_o = g_string_new (NULL);

  _napkin_wgmma_accumulators (ns, NULL, outs_s);
  _napkin_wgmma_accumulators (no, regs_o, outs_o);
  g_string_append_printf (s,
                          "__device__ __forceinline__ void\n"
                          "%s_pv (float (&d)[%" G_GINT64_FORMAT "], unsigned a0, unsigned a1, unsigned a2, unsigned a3, "
                          "unsigned long long db)\n"
                          "{\n"
                          "  asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%%" G_GINT64_FORMAT ", 0; \"\n"
                          "                \"wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k%d.f32.%s.%s {%s}, "
                          "{%%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT
                          "}, %%%" G_GINT64_FORMAT ", p, 1, 1%s; }\"\n"
                          "                : %s\n"
                          "                : \"r\" (a0), \"r\" (a1), \"r\" (a2), \"r\" (a3), \"l\" (db), \"r\" (1) : \"memory\");\n"
                          "}\n\n",
                          name, no, no + 5, D, v8 ? 32 : 16, mma, mma, regs_o->str,
                          no, no + 1, no + 2, no + 3, no + 4, v8 ? "" : ", 1", outs_o->str);
  g_string_append_printf (s,
                          "__device__ __forceinline__ void\n"
                          "%s_fence_s (float (&d)[%" G_GINT64_FORMAT "])\n"
                          "{\n"
                          "  asm volatile (\"\" : %s :: \"memory\");\n"
                          "}\n\n"
                          "__device__ __forceinline__ void\n"
                          "%s_fence_o (float (&d)[%" G_GINT64_FORMAT "])\n"
                          "{\n"
                          "  asm volatile (\"\" : %s :: \"memory\");\n"
                          "}\n",
                          name, ns, outs_s->str, name, no, outs_o->str);
}

/* The wgmma calls for these sizes (one asm operand per accumulator register) and the
 * empty asm statements that pin the accumulators around a wait:
 * NAME_qk (s, desc_q, desc_k, accumulate): S += Q·Kᵀ, both K-major from shared memory;
 * NAME_pv (o, a0…a3, desc_v): O += P·V, P in registers, V N-major (16 bits, the
 * transpose bit) or Vᵀ K-major (e4m3). */
static char *
wgmma_wrappers (const char *name,
                gint64      BKV,
                gint64      D,
                NapkinDtype qk_dtype,
                NapkinDtype v_dtype)
{
  GString *s = g_string_new (NULL);
  gboolean qk8 = qk_dtype == NAPKIN_DTYPE_FP8_E4M3, v8 = v_dtype == NAPKIN_DTYPE_FP8_E4M3;
  const gint64 ns = BKV / 2;
  g_autoptr(GString) regs_s = g_string_new (NULL);
  g_autoptr(GString) outs_s = g_string_new (NULL);

  _napkin_wgmma_accumulators (ns, regs_s, outs_s);
  g_string_append_printf (s,
                          "__device__ __forceinline__ void\n"
                          "%s_qk (float (&d)[%" G_GINT64_FORMAT "], unsigned long long da, unsigned long long db, "
                          "int acc)\n"
                          "{\n"
                          "  asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%%" G_GINT64_FORMAT ", 0; \"\n"
                          "                \"wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k%d.f32.%s.%s {%s}, "
                          "%%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", p, 1, 1%s; }\"\n"
                          "                : %s\n"
                          "                : \"l\" (da), \"l\" (db), \"r\" (acc) : \"memory\");\n"
                          "}\n\n",
                          name, ns, ns + 2, BKV, qk8 ? 32 : 16, mma_type (qk_dtype), mma_type (qk_dtype),
                          regs_s->str, ns, ns + 1, qk8 ? "" : ", 0, 0", outs_s->str);
  attn_pv_functions (s, name, BKV, D, mma_type (v_dtype), v8);
  return g_string_free (s, FALSE);
}

typedef struct
{
  NapkinCudaRef q, k, v, o, part, vt;
  NapkinCudaRef sc[NAPKIN_ATTN_MAX_SCORES];
  gboolean      has_part, has_vt;
} Refs;

static gboolean
resolve (const NapkinPrintCtx      *ctx,
         const NapkinPlanAttention *a,
         Refs                      *r,
         GError                   **error)
{
  memset (r, 0, sizeof *r);
  if (!_napkin_cuda_ref (ctx, &a->q, &r->q, error) || !_napkin_cuda_ref (ctx, &a->k, &r->k, error)
      || !_napkin_cuda_ref (ctx, &a->v, &r->v, error) || !_napkin_cuda_ref (ctx, &a->o, &r->o, error))
    return FALSE;
  for (guint i = 0; i < a->n_scores; i++)
    {
      if (!_napkin_cuda_ref (ctx, &a->scores[i].x, &r->sc[i], error))
        return FALSE;
      /* device buffers start 256-byte aligned: the plan's pieces need the same of offsets */
      if (r->sc[i].offset % a->scores[i].vec != 0)
        FAIL ("score operand %u lies at byte %" G_GINT64_FORMAT ", not on its %u-byte pieces", i, r->sc[i].offset,
              a->scores[i].vec);
    }
  if (a->split_kv > 1)
    {
      NapkinPlanBuffer part = { -1, a->partials, NAPKIN_DTYPE_FP32 };

      if (!_napkin_cuda_ref (ctx, &part, &r->part, error))
        return FALSE;
      r->has_part = TRUE;
    }
  if (a->v_t >= 0)
    {
      NapkinPlanBuffer vt = { -1, a->v_t, NAPKIN_DTYPE_FP8_E4M3 };

      if (!_napkin_cuda_ref (ctx, &vt, &r->vt, error))
        return FALSE;
      r->has_vt = TRUE;
    }
  return TRUE;
}

/* The bits of an element that hides its key (docs/plan.md, "Score operands"): a zero
 * flag, a bias of −∞. */
static const char *
hidden_bits (const NapkinPlanAttnScore *sc)
{
  if (sc->kind == NAPKIN_ATTN_SCORE_KEEP)
    return "0u";
  return sc->dtype == NAPKIN_DTYPE_FP32 ? "0xff800000u" : sc->dtype == NAPKIN_DTYPE_BF16 ? "0xff80u" : "0xfc00u";
}

/* The score operands as both tiled templates take them: their count, a warp's staging
 * bytes, the padding scan, and SCORES (X), one X (…) each (kernels/attn-sm90.cu). */
static void
add_score_params (GArray                    *p,
                  const NapkinPlanAttention *a,
                  const Refs                *r)
{
  GString *list = g_string_new ("#define NKP_SCORES(X)");
  gboolean scan = FALSE;

  for (guint i = 0; i < a->n_scores; i++)
    {
      const NapkinPlanAttnScore *sc = &a->scores[i];
      g_autofree char *coef = float_text (sc->kind == NAPKIN_ATTN_SCORE_BIAS ? sc->coef : 0.0);
      g_autofree char *ref = _napkin_cuda_ref_expr (&r->sc[i], sc->dtype);

      g_string_append_printf (list, " X (sc%u_base, %d, %s, %u, %u, %u, %" G_GINT64_FORMAT ", %" G_GINT64_FORMAT
                              ", %" G_GINT64_FORMAT "L, %" G_GINT64_FORMAT "L, %sf, %s, %d, %s)", i, sc->kind == NAPKIN_ATTN_SCORE_KEEP, _napkin_cuda_ctype (sc->dtype),
                              napkin_dtype_bytes (sc->dtype), sc->vec, sc->rows, sc->pitch, sc->offset, sc->group,
                              sc->row, coef, ref, sc->scan, hidden_bits (sc));
      scan |= sc->scan;
    }
  g_string_append_c (list, '\n');
  {
    NapkinSkeletonParam t[] = {
      { "N_SC", int_text (a->n_scores) },
      { "SC_WARP", int_text (a->score_warp_bytes) },
      { "SC_SCAN", g_strdup (scan ? "1" : "0") },
      { "SCORES", g_string_free (list, FALSE) },
    };

    g_array_append_vals (p, t, G_N_ELEMENTS (t));
  }
}

/* The backward's score operands (kernels/attn-bwd-sm80.cu, BWSCORES): their offsets, and
 * expressions that read them at (query head g of the group, row q, key k). */
static char *
backward_scores (const NapkinPlanAttnBackward *b,
                 const NapkinCudaRef          *refs,
                 const NapkinCudaRef          *d_bias,
                 const NapkinCudaRef          *acc)
{
  const NapkinPlanAttention *a = &b->a;
  GString *s = g_string_new (NULL), *decl = g_string_new (NULL);
  GString *bias = g_string_new ("(0.0f"), *keep = g_string_new ("(true");

  for (guint i = 0; i < a->n_scores; i++)
    {
      const NapkinPlanAttnScore *sc = &a->scores[i];
      g_autofree char *ref = _napkin_cuda_ref_expr (&refs[i], sc->dtype);
      g_autofree char *at = g_strdup_printf ("sc%u_base + (g_) * %" G_GINT64_FORMAT "L + (q_) * %" G_GINT64_FORMAT
                                             "L + (k_)", i, sc->group, sc->row);

      g_string_append_printf (decl, " long sc%u_base = 0;", i);
      if (sc->kind == NAPKIN_ATTN_SCORE_KEEP)
        g_string_append_printf (keep, " && (%s)[%s] != 0", ref, at);
      else
        {
          g_autofree char *coef = float_text (sc->coef);

          g_string_append_printf (bias, " + %sf * napkin_ld (&(%s)[%s])", coef, ref, at);
        }
    }
  /* a bias's gradient: its fp32 sums, then the value */
  if (b->d_bias.node >= 0)
    {
      g_autofree char *w = float_text (b->d_bias_weight);
      g_autofree char *acc_ref = _napkin_cuda_ref_expr (acc, NAPKIN_DTYPE_FP32);
      g_autofree char *out_ref = _napkin_cuda_ref_expr (d_bias, b->d_bias.dtype);

      g_string_append (decl, " long db_base = 0;");
      g_string_append_printf (s, "#define NKB_SC_GRAD 1\n#define NKB_DB_ELEMS %" G_GINT64_FORMAT "L\n#define NKB_DB_ACC (%s)\n"
                              "#define NKB_DB_OUT (%s)\n#define NKB_DB_ADD(g_, q_, k_, v_) atomicAdd (&NKB_DB_ACC[db_base "
                              "+ (g_) * %" G_GINT64_FORMAT "L + (q_) * %" G_GINT64_FORMAT "L + (k_)], %sf * (v_))\n",
                              b->d_bias_elems, acc_ref, out_ref, b->d_bias_at.group, b->d_bias_at.row, w);
    }
  else
    g_string_append (s, "#define NKB_SC_GRAD 0\n");
  g_string_append_printf (s, "#define NKB_SC_ANY %d\n#define NKB_SC_DECL%s\n#define NKB_SC_BIAS(g_, q_, k_) %s)\n"
                          "#define NKB_SC_KEEP(g_, q_, k_) %s)\n", a->n_scores > 0, decl->str, bias->str, keep->str);
  g_string_free (decl, TRUE);
  g_string_free (bias, TRUE);
  g_string_free (keep, TRUE);
  return g_string_free (s, FALSE);
}

static void
append_helpers (GString *out)
{
  if (strstr (out->str, "#define NAPKIN_ATTN_PRIMS") == NULL)
    {
      g_string_append_c (out, '\n');
      g_string_append (out, napkin_kernel_attn_prims);
    }
}

static NapkinCudaKernel *
cuda_kernel (const NapkinPlanKernel *kernel,
             const char             *name,
             const char             *skeleton,
             gint64                  smem)
{
  NapkinCudaKernel *ck = g_new0 (NapkinCudaKernel, 1);

  ck->name = g_strdup (name);
  ck->skeleton = g_strdup (skeleton);
  ck->grid = kernel->grid;
  ck->threads = kernel->threads;
  ck->smem_bytes = smem;
  ck->dynamic_smem = smem;
  ck->note = g_strdup (kernel->note);
  return ck;
}

/* Today's aligned shapes on mma.sync: the skeleton they were measured with
 * (kernels/flash-mma.cu; docs/plan.md, "The legacy attention skeletons"). */
static gboolean
print_legacy (const NapkinPrintCtx   *ctx,
              const NapkinPlanKernel *kernel,
              const Refs             *r,
              const char             *name,
              GError                **error)
{
  const NapkinPlanAttention *a = &kernel->u.att;
  const NapkinRegion *region = napkin_diagram_region (ctx->program->diagram, kernel->region);
  g_autofree char *rname = napkin_codegen_escape_comment (region->name);

  if (r->q.offset || r->k.offset || r->v.offset || r->o.offset)
    FAIL ("the flash-mma skeleton reads whole buffers, not scratch");
  {
    g_autofree char *text = NULL;
    NapkinSkeletonParam params[] = {
      { "NAME", g_strdup (name) },
      { "BQ", int_text (a->BQ) },
      { "BKV", int_text (a->BKV) },
      { "D", int_text (a->D) },
      { "NQ", int_text (a->NQ) },
      { "NKV", int_text (a->NKV) },
      { "ALPHA", float_text (a->alpha) },
      { "T", g_strdup (_napkin_cuda_ctype (a->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (a->o_dtype)) },
      { "MMA", g_strdup (mma_type (a->dtype)) },
      { "QS", g_strdup_printf ("%d", r->q.slot) },
      { "KS", g_strdup_printf ("%d", r->k.slot) },
      { "VS", g_strdup_printf ("%d", r->v.slot) },
      { "OS", g_strdup_printf ("%d", r->o.slot) },
    };
    gint64 smem = (a->BQ + 4 * a->BKV) * (a->D + 8) * 2;
    NapkinCudaKernel *ck;

    text = _napkin_skeleton_instantiate (napkin_kernel_flash_mma, params, G_N_ELEMENTS (params));
    g_string_append_printf (ctx->out, "\n/* Region %s at %s: fused attention as the flash-mma skeleton "
                                      "(kernels/flash-mma.cu) */\n", rname, napkin_level_to_string (region->level));
    g_string_append (ctx->out, text);
    ck = cuda_kernel (kernel, name, "flash-mma", smem);
    ck->threads = (guint) (a->BQ / 16 * 32);
    g_ptr_array_add (ctx->module->kernels, ck);
  }
  return TRUE;
}

/* Keys per slice of fp8 Vᵀ in shared memory (kernels/attn-sm90.cu): the widest swizzle
 * (128, 64 or 32 bytes) that divides the chunk, so chunks of 192 or 224 keys fit. */
static guint
vt_slice (const NapkinPlanAttention *a)
{
  return a->BKV % 128 == 0 ? 128 : a->BKV % 64 == 0 ? 64 : 32;
}

static gboolean
print_sm90 (const NapkinPrintCtx   *ctx,
            const NapkinPlanKernel *kernel,
            const Refs             *r,
            const char             *name,
            GError                **error)
{
  const NapkinPlanAttention *a = &kernel->u.att;
  gboolean fp8_v = a->v_dtype == NAPKIN_DTYPE_FP8_E4M3;
  guint qe = napkin_dtype_bytes (a->dtype);
  /* O's accumulator columns: Vᵀ's rows (D, or D + 8 with the row sums' ones) */
  gint64 dv = a->v_t_rows > 0 ? a->v_t_rows : a->D;
  NapkinCudaTensorMap maps[2];
  NapkinCudaKernel *ck;

  if (mma_type (a->dtype) == NULL || mma_type (a->v_dtype) == NULL)
    FAIL ("no wgmma for %s attention", napkin_dtype_to_string (a->dtype));
  if (fp8_v && !a->vt_in_kernel && !r->has_vt)
    FAIL ("fp8 P·V needs the plan's Vᵀ scratch");
  if (fp8_v && !a->vt_in_kernel)
    {
      /* Vᵀ, in P·V's key order, is the plan's repack kernel, printed just before this one */
      const NapkinCudaKernel *prev = ctx->module->kernels->len > 0
                                       ? g_ptr_array_index (ctx->module->kernels, ctx->module->kernels->len - 1) : NULL;

      if (prev == NULL || strstr (prev->skeleton, "repack") == NULL)
        FAIL ("fp8 P·V reads Vᵀ, which the plan's repack kernel before it makes: that kernel was not printed");
    }
  /* the fused backward's log-sum-exps and fp32 O, where the plan has this kernel write them */
  NapkinCudaRef s_lse = { 0 }, s_o32 = { 0 };

  if (a->stats_scratch >= 0)
    {
      NapkinPlanBuffer sb = { -1, a->stats_scratch, NAPKIN_DTYPE_FP32 }, ob = { -1, a->stats_o32, NAPKIN_DTYPE_FP32 };

      if (a->split_kv > 1)
        FAIL ("a split attention cannot write the backward's row statistics");
      if (!_napkin_cuda_ref (ctx, &sb, &s_lse, error) || !_napkin_cuda_ref (ctx, &ob, &s_o32, error))
        return FALSE;
      s_lse.offset += a->stats_lse_at * 4;
    }
  append_helpers (ctx->out);
  {
    NapkinSkeletonParam head[] = {
      { "WGMMA", wgmma_wrappers (name, a->BKV, dv, a->dtype, a->v_dtype) },
      { "LEAD", lead_code (a, NULL, LEAD_Q | LEAD_O | LEAD_TMA | LEAD_FLAT | LEAD_SC, TRUE, 4) },
      { "NAME", g_strdup (name) },
      { "ROWS", int_text (a->rows) },
      { "BQ", int_text (a->BQ) },
      { "CONSUMERS", int_text (a->consumers) },
      { "BKV", int_text (a->BKV) },
      { "D", int_text (a->D) },
      { "DV", int_text (dv) },
      { "STAGES", int_text (a->stages) },
    };
    NapkinSkeletonParam mid[] = {
      { "QK_BYTES", int_text (qe) },
      { "FP8_V", g_strdup (fp8_v ? "1" : "0") },
      { "OVERLAP", g_strdup (a->overlap ? "1" : "0") },
      { "EXP_FMA", float_text (a->exp_fma) },
      { "KV_RANK3", g_strdup (a->kv_planes > 1 ? "1" : "0") },
      { "VT_RANK3", g_strdup (a->kv_batch > 1 ? "1" : "0") },
      { "VT_SLICE", int_text (vt_slice (a)) },
      { "VT_IN", g_strdup (a->vt_in_kernel ? "1" : "0") },
      { "PERSIST", int_text (a->persist_tiles) },
      { "SEEN_LO", int_text (a->seen_lo) },
      { "SEEN_HI", int_text (a->seen_hi) },
      { "Q_BUFFERS", int_text (MAX (1u, a->q_buffers)) },
    };
    NapkinSkeletonParam tail[] = {
      { "O_GROUP", int_text (a->o_group) },
      { "O_ROW", int_text (a->o_row) },
      { "ALPHA", float_text (a->alpha * a->q_scale * a->k_scale) },
      { "V_SCALE", float_text (a->v_scale) },
      { "QT", g_strdup (_napkin_cuda_ctype (a->dtype)) },
      { "VT", g_strdup (_napkin_cuda_ctype (a->v_dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (a->o_dtype)) },
      { "QREF", _napkin_cuda_ref_expr (&r->q, a->dtype) },
      { "OREF", _napkin_cuda_ref_expr (&r->o, a->o_dtype) },
      { "PREF", r->has_part ? _napkin_cuda_ref_expr (&r->part, NAPKIN_DTYPE_FP32) : g_strdup ("0") },
      { "PRODUCER_REGS", int_text (a->producer_regs) },
      { "CONSUMER_REGS", int_text (a->consumer_regs) },
      { "STATS", g_strdup (a->stats_scratch >= 0 ? "1" : "0") },
      { "SLSEREF", a->stats_scratch >= 0 ? _napkin_cuda_ref_expr (&s_lse, NAPKIN_DTYPE_FP32) : g_strdup ("0") },
      { "SO32REF", a->stats_scratch >= 0 ? _napkin_cuda_ref_expr (&s_o32, NAPKIN_DTYPE_FP32) : g_strdup ("0") },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (kernel->name);
    GArray *p = _napkin_skeleton_params (head, G_N_ELEMENTS (head));

    add_size_params (p, a);
    g_array_append_vals (p, mid, G_N_ELEMENTS (mid));
    add_mask_params (p, a);
    add_score_params (p, a, r);
    g_array_append_vals (p, tail, G_N_ELEMENTS (tail));
    emit (ctx, napkin_kernel_attn_sm90, p,
          g_strdup_printf ("\n/* Region %s: attention on wgmma (kernels/attn-sm90.cu, sm_90a) */\n", rname));
  }

  /* K (and V, also fp8 V that the kernel transposes): D × rows in planes, boxes of one
   * 128-byte slice × BKV rows; fp8 Vᵀ made before: keys × D rows per K/V matrix, boxes of
   * one slice (128, 64 or 32 keys) × D */
  maps[0] = (NapkinCudaTensorMap) { r->k.slot, a->dtype, a->D, a->kv_rows, 128 / qe, (guint) a->BKV, 128,
                                    a->kv_ld, a->kv_planes, a->kv_plane_stride, r->k.offset };
  if (fp8_v && a->vt_in_kernel)
    maps[1] = (NapkinCudaTensorMap) { r->v.slot, a->v_dtype, a->D, a->kv_rows, 128, (guint) a->BKV, 128,
                                      a->kv_ld, a->kv_planes, a->kv_plane_stride, r->v.offset };
  else if (fp8_v)
    maps[1] = (NapkinCudaTensorMap) { r->vt.slot, NAPKIN_DTYPE_FP8_E4M3, a->v_t_ld, dv, vt_slice (a), (guint) dv,
                                      vt_slice (a),
                                      a->v_t_ld, a->kv_batch, dv * a->v_t_ld, r->vt.offset };
  else
    maps[1] = (NapkinCudaTensorMap) { r->v.slot, a->v_dtype, a->D, a->kv_rows, 64, (guint) a->BKV, 128,
                                      a->kv_ld, a->kv_planes, a->kv_plane_stride, r->v.offset };
  ck = cuda_kernel (kernel, name, "attn-sm90", kernel->smem_bytes);
  ck->tensor_maps = g_array_new (FALSE, FALSE, sizeof (NapkinCudaTensorMap));
  g_array_append_vals (ck->tensor_maps, maps, G_N_ELEMENTS (maps));
  g_ptr_array_add (ctx->module->kernels, ck);
  return TRUE;
}

static gboolean
print_sm80 (const NapkinPrintCtx   *ctx,
            const NapkinPlanKernel *kernel,
            const Refs             *r,
            const char             *name,
            GError                **error)
{
  const NapkinPlanAttention *a = &kernel->u.att;

  if (a->dtype != NAPKIN_DTYPE_FP16 && a->dtype != NAPKIN_DTYPE_BF16)
    FAIL ("mma.sync attention takes fp16 or bf16, not %s", napkin_dtype_to_string (a->dtype));
  append_helpers (ctx->out);
  {
    NapkinSkeletonParam head[] = {
      { "LEAD", lead_code (a, NULL, LEAD_Q | LEAD_O | LEAD_K | LEAD_FLAT | LEAD_SC, TRUE, 2) },
      { "NAME", g_strdup (name) },
      { "ROWS", int_text (a->rows) },
      { "BQ", int_text (a->BQ) },
      { "WARPS", int_text (a->consumers) },
      { "THREADS", int_text (kernel->threads) },
      { "Q_REGS", g_strdup (a->q_regs ? "1" : "0") },
      { "BKV", int_text (a->BKV) },
      { "STAGES", g_strdup (a->stages == 1 ? "1" : "2") },
      { "D", int_text (a->D) },
      { "DP", int_text (a->d_smem) },
    };
    NapkinSkeletonParam tail[] = {
      { "K_ROW", int_text (a->k_row) },
      { "O_GROUP", int_text (a->o_group) },
      { "O_ROW", int_text (a->o_row) },
      { "ALPHA", float_text (a->alpha) },
      { "T", g_strdup (_napkin_cuda_ctype (a->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (a->o_dtype)) },
      { "MMA", g_strdup (mma_type (a->dtype)) },
      { "QREF", _napkin_cuda_ref_expr (&r->q, a->dtype) },
      { "KREF", _napkin_cuda_ref_expr (&r->k, a->dtype) },
      { "VREF", _napkin_cuda_ref_expr (&r->v, a->dtype) },
      { "OREF", _napkin_cuda_ref_expr (&r->o, a->o_dtype) },
      { "PREF", r->has_part ? _napkin_cuda_ref_expr (&r->part, NAPKIN_DTYPE_FP32) : g_strdup ("0") },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (kernel->name);
    GArray *p = _napkin_skeleton_params (head, G_N_ELEMENTS (head));

    add_size_params (p, a);
    add_mask_params (p, a);
    add_score_params (p, a, r);
    g_array_append_vals (p, tail, G_N_ELEMENTS (tail));
    emit (ctx, napkin_kernel_attn_sm80, p,
          g_strdup_printf ("\n/* Region %s: attention on mma.sync (kernels/attn-sm80.cu) */\n", rname));
  }
  g_ptr_array_add (ctx->module->kernels, cuda_kernel (kernel, name, "attn-sm80", kernel->smem_bytes));
  return TRUE;
}

static gboolean
print_combine (const NapkinPrintCtx   *ctx,
               const NapkinPlanKernel *kernel,
               const Refs             *r,
               const char             *name,
               GError                **error)
{
  const NapkinPlanAttention *a = &kernel->u.att;

  if (!r->has_part || a->split_kv < 2)
    FAIL ("the combine kernel has no partial outputs to merge");
  append_helpers (ctx->out);
  {
    NapkinSkeletonParam params[] = {
      { "LEAD", lead_code (a, NULL, LEAD_O | LEAD_FLAT, FALSE, 4) },
      { "NAME", g_strdup (name) },
      { "SPLIT", int_text (a->split_kv) },
      { "D", int_text (a->D) },
      { "NQ", int_text (a->NQ) },
      { "GROUP", int_text (a->group) },
      { "KV_BATCH", int_text (a->kv_batch) },
      { "O_GROUP", int_text (a->o_group) },
      { "O_ROW", int_text (a->o_row) },
      { "OT", g_strdup (_napkin_cuda_ctype (a->o_dtype)) },
      { "OREF", _napkin_cuda_ref_expr (&r->o, a->o_dtype) },
      { "PREF", _napkin_cuda_ref_expr (&r->part, NAPKIN_DTYPE_FP32) },
    };

    emit (ctx, napkin_kernel_attn_combine, _napkin_skeleton_params (params, G_N_ELEMENTS (params)),
          g_strdup ("\n/* The split-KV combine of the attention above (kernels/attn-combine.cu) */\n"));
  }
  g_ptr_array_add (ctx->module->kernels, cuda_kernel (kernel, name, "attn-combine", 0));
  return TRUE;
}

/* The fused attention backward (kernels/attn-bwd-sm80.cu; docs/plan.md, "Attention
 * backward"): three kernels, launched in order — the log-sum-exps and row terms (and dQ's
 * accumulator zeroed), the gradients, dQ — from one instantiation. */
static gboolean
print_backward (const NapkinPrintCtx   *ctx,
                const NapkinPlanKernel *kernel,
                const char             *name,
                GError                **error)
{
  const NapkinPlanAttnBackward *b = &kernel->u.bwd;
  const NapkinPlanAttention *a = &b->a;
  NapkinCudaRef q, k, v, o, d_o, d_q, d_k, d_v, scratch, lse, drow, dqa, dba, dka, dva, d_bias, o32 = { 0 },
                sc[NAPKIN_ATTN_MAX_SCORES];
  NapkinPlanBuffer sb = { -1, b->scratch, NAPKIN_DTYPE_FP32 };
  const gint64 dp = (a->D + 15) / 16 * 16;
  g_autofree char *pre = g_strdup_printf ("%s_pre", name);
  g_autofree char *main_ = g_strdup_printf ("%s_main", name);
  g_autofree char *dq = g_strdup_printf ("%s_dq", name);
  NapkinCudaKernel *ck;

  if (!_napkin_cuda_ref (ctx, &a->q, &q, error) || !_napkin_cuda_ref (ctx, &a->k, &k, error)
      || !_napkin_cuda_ref (ctx, &a->v, &v, error) || !_napkin_cuda_ref (ctx, &a->o, &o, error)
      || !_napkin_cuda_ref (ctx, &b->d_o, &d_o, error) || !_napkin_cuda_ref (ctx, &b->d_q, &d_q, error)
      || !_napkin_cuda_ref (ctx, &b->d_k, &d_k, error) || !_napkin_cuda_ref (ctx, &b->d_v, &d_v, error)
      || !_napkin_cuda_ref (ctx, &sb, &scratch, error))
    return FALSE;
  for (guint i = 0; i < a->n_scores; i++)
    if (!_napkin_cuda_ref (ctx, &a->scores[i].x, &sc[i], error))
      return FALSE;
  memset (&d_bias, 0, sizeof d_bias);
  if (b->d_bias.node >= 0 && !_napkin_cuda_ref (ctx, &b->d_bias, &d_bias, error))
    return FALSE;
  if (!kernel->feasible)
    FAIL ("the plan's kernel is infeasible: %s", kernel->infeasible ? kernel->infeasible : "(no reason)");
  if (b->stats_given)
    {
      NapkinPlanBuffer ob = { -1, b->o32_scratch, NAPKIN_DTYPE_FP32 };

      if (!_napkin_cuda_ref (ctx, &ob, &o32, error))
        return FALSE;
    }
  lse = drow = dqa = dba = dka = dva = scratch;
  dka.offset += b->dkva_at * 4;
  dva.offset += (b->dkva_at + a->kv_batch * a->NKV * a->D) * 4;
  lse.offset += b->lse_at * 4;
  drow.offset += b->drow_at * 4;
  dqa.offset += b->dqa_at * 4;
  dba.offset += b->dbias_at * 4;
  append_helpers (ctx->out);
  {
    NapkinSkeletonParam params[] = {
      { "LEAD", lead_code (a, b, LEAD_Q | LEAD_O | LEAD_K | LEAD_FLAT | LEAD_GRADS | LEAD_SC, FALSE, 2) },
      { "BWSCORES", backward_scores (b, sc, &d_bias, &dba) },
      { "NAME_PRE", g_strdup (pre) },
      { "NAME_MAIN", g_strdup (main_) },
      { "NAME_DQ", g_strdup (dq) },
      { "D", int_text (a->D) },
      { "DP", int_text (dp) },
      { "Q_GROUP", int_text (a->q_group) },
      { "Q_ROW", int_text (a->q_row) },
      { "O_GROUP", int_text (a->o_group) },
      { "O_ROW", int_text (a->o_row) },
      { "K_ROW", int_text (a->k_row) },
      { "DQ_GROUP", int_text (b->dq_group) },
      { "DQ_ROW", int_text (b->dq_row) },
      { "DK_ROW", int_text (b->dk_row) },
      { "DV_ROW", int_text (b->dv_row) },
      { "ALPHA", float_text (a->alpha) },
      { "DALPHA", float_text (b->d_alpha) },
      { "T", g_strdup (_napkin_cuda_ctype (a->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (b->grad_dtype)) },
      { "MMA", g_strdup (mma_type (a->dtype)) },
      { "QREF", _napkin_cuda_ref_expr (&q, a->dtype) },
      { "KREF", _napkin_cuda_ref_expr (&k, a->dtype) },
      { "VREF", _napkin_cuda_ref_expr (&v, a->dtype) },
      { "OREF", _napkin_cuda_ref_expr (&o, a->dtype) },
      { "DOREF", _napkin_cuda_ref_expr (&d_o, a->dtype) },
      { "DQREF", _napkin_cuda_ref_expr (&d_q, b->grad_dtype) },
      { "DKREF", _napkin_cuda_ref_expr (&d_k, b->grad_dtype) },
      { "DVREF", _napkin_cuda_ref_expr (&d_v, b->grad_dtype) },
      { "LSEREF", _napkin_cuda_ref_expr (&lse, NAPKIN_DTYPE_FP32) },
      { "DROWREF", _napkin_cuda_ref_expr (&drow, NAPKIN_DTYPE_FP32) },
      { "DQAREF", _napkin_cuda_ref_expr (&dqa, NAPKIN_DTYPE_FP32) },
      { "WARPS", int_text (b->warps) },
      { "BQ", int_text (a->BQ) },
      { "PRE_WARPS", int_text (b->pre_warps) },
      { "MAIN_SM90", int_text (b->main_wgmma ? 1 : 0) },
      { "GSPLIT", int_text (b->gsplit) },
      { "STATS_GIVEN", g_strdup (b->stats_given ? "1" : "0") },
      { "O32REF", b->stats_given ? _napkin_cuda_ref_expr (&o32, NAPKIN_DTYPE_FP32) : g_strdup ("0") },
      { "DKAREF", _napkin_cuda_ref_expr (&dka, NAPKIN_DTYPE_FP32) },
      { "DVAREF", _napkin_cuda_ref_expr (&dva, NAPKIN_DTYPE_FP32) },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (kernel->name);
    GArray *p = _napkin_skeleton_params (params, G_N_ELEMENTS (params));

    add_size_params (p, a);
    add_mask_bounds (p, a);
    emit (ctx, napkin_kernel_attn_bwd_sm80, p,
          g_strdup_printf ("\n/* Region %s: attention backward, its main launch on %s (kernels/attn-bwd-sm80.cu) */\n",
                           rname, b->main_wgmma ? "wgmma" : "mma.sync"));
  }
  ck = cuda_kernel (kernel, pre, "attn-bwd-sm80", b->pre_smem);
  ck->grid = b->pre_grid;
  ck->threads = 32 * b->pre_warps;
  g_ptr_array_add (ctx->module->kernels, ck);
  g_ptr_array_add (ctx->module->kernels, cuda_kernel (kernel, main_, "attn-bwd-sm80", kernel->smem_bytes));
  ck = cuda_kernel (kernel, dq, "attn-bwd-sm80", 0);
  ck->grid = b->dq_grid;
  ck->threads = 256;
  g_ptr_array_add (ctx->module->kernels, ck);
  return TRUE;
}

gboolean
_napkin_print_attention (const NapkinPrintCtx   *ctx,
                         const NapkinPlanKernel *kernel,
                         const char             *name,
                         GError                **error)
{
  const NapkinPlanAttention *a = &kernel->u.att;
  Refs r;

  g_return_val_if_fail (kernel->kind == NAPKIN_PLAN_ATTENTION || kernel->kind == NAPKIN_PLAN_ATTENTION_COMBINE
                        || kernel->kind == NAPKIN_PLAN_ATTENTION_BACKWARD, FALSE);

  if (kernel->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
    return print_backward (ctx, kernel, name, error);
  if (!resolve (ctx, a, &r, error))
    return FALSE;
  if (!kernel->feasible)
    FAIL ("the plan's kernel is infeasible: %s", kernel->infeasible ? kernel->infeasible : "(no reason)");
  if (kernel->kind == NAPKIN_PLAN_ATTENTION_COMBINE)
    return print_combine (ctx, kernel, &r, name, error);
  if (a->legacy)
    return print_legacy (ctx, kernel, &r, name, error);
  if (kernel->path == NAPKIN_PATH_WGMMA)
    return print_sm90 (ctx, kernel, &r, name, error);
  if (kernel->path == NAPKIN_PATH_MMA)
    return print_sm80 (ctx, kernel, &r, name, error);
  FAIL ("no attention printer for the %s path", napkin_path_to_string (kernel->path));
}
