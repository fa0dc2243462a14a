/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>

#include <string.h>

#include "napkin-plan-private.h"
#include "napkin-error.h"

/* Fused attention (docs/plan.md, "Attention kernels"): Q·Kᵀ → [scale] → softmax over the
 * keys → ·V in one region, the keys streamed with the online softmax. Hopper runs it on
 * wgmma (kernels/attn-sm90.cu: a TMA producer warpgroup, one consumer warpgroup per 64
 * query rows), other GPUs on mma.sync (kernels/attn-sm80.cu). Any NQ and NKV (the edge
 * tiles masked in the kernel), head dims 8 to 256 in steps of 8, GQA and MQA (a group
 * axis in Q and O that K and V lack), cross-attention, masks, split-KV for few queries
 * against many keys, fp8 e4m3 on Hopper. Today's aligned shapes on mma.sync keep the
 * skeleton they were tuned with (kernels/flash-mma.cu; docs/plan.md, "The legacy
 * attention skeletons"). */

#define WGMMA_MAX_CONSUMERS 3
#define MMA_MAX_WARPS 16
#define SPLIT_MAX 128

static const char *mask_names[NAPKIN_N_ATTN_MASKS] = { "none", "causal", "window" };

const char *
napkin_attn_mask_to_string (NapkinAttnMask mask)
{
  g_return_val_if_fail (mask < NAPKIN_N_ATTN_MASKS, "none");
  return mask_names[mask];
}

static gint64
ceil_div (gint64 a,
          gint64 b)
{
  return (a + b - 1) / b;
}

/* A value as it lies in device memory (docs/plan.md, "Roles and layout"): the input's or
 * output's tensor, else (a value that one kernel stores and the next reads) its type, axes
 * in type order. `names` holds the axis names of the latter (NAPKIN_MAX_RANK + 1 slots). */
gboolean
_napkin_plan_attention_value (NapkinPlanner *p,
                              int            node,
                              NapkinTensor  *tmp,
                              const char   **names)
{
  const NapkinTensor *t = _napkin_plan_stored_tensor (p->d, node);
  NapkinPlanLayout l;

  if (t != NULL)
    {
      *tmp = *t;
      return TRUE;
    }
  if (!_napkin_plan_value_layout (p, node, &l))
    return FALSE;
  memset (tmp, 0, sizeof *tmp);
  for (guint i = 0; i < l.n; i++)
    names[i] = napkin_diagram_axis (p->d, l.axes[i])->name;
  names[l.n] = NULL;
  tmp->axes = (char **) names;
  tmp->dtype = l.dtype;
  return TRUE;
}

static int
axis_index (char      **axes,
            const char *name)
{
  for (int i = 0; axes[i] != NULL; i++)
    if (g_str_equal (axes[i], name))
      return i;
  return -1;
}

/* Element stride of axis `name` in a dense row-major tensor with these axes (−1: absent). */
static gint64
stride_of (NapkinPlanner *p,
           char         **axes,
           const char    *name)
{
  int at = axis_index (axes, name);
  gint64 s = 1;

  if (at < 0)
    return -1;
  for (int i = at + 1; axes[i] != NULL; i++)
    s *= napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, axes[i]));
  return s;
}

/* ---- masks and the tiles they leave ------------------------------------------------------- */

void
napkin_plan_attention_chunks (const NapkinPlanAttention *a,
                              gint64                     q0,
                              gint64                     q1,
                              gint64                    *first,
                              gint64                    *end,
                              gint64                    *masked)
{
  gint64 lo = 0, hi = a->NKV, full_lo = 0, full_hi = a->NKV, fv_lo, fv_hi, n;
  gboolean bounded_left = a->mask == NAPKIN_ATTN_MASK_WINDOW && a->window_left >= 0;
  gboolean bounded_right = a->mask == NAPKIN_ATTN_MASK_CAUSAL
                           || (a->mask == NAPKIN_ATTN_MASK_WINDOW && a->window_right >= 0);
  gint64 right = a->mask == NAPKIN_ATTN_MASK_CAUSAL ? 0 : a->window_right;

  /* keys some query of [q0, q1) sees, and keys every one of them sees */
  if (bounded_left)
    {
      lo = MAX (lo, q0 + a->mask_offset - a->window_left);
      full_lo = MAX (full_lo, q1 - 1 + a->mask_offset - a->window_left);
    }
  if (bounded_right)
    {
      hi = MIN (hi, q1 - 1 + a->mask_offset + right + 1);
      full_hi = MIN (full_hi, q0 + a->mask_offset + right + 1);
    }
  if (hi <= lo || q1 <= q0)
    {
      *first = *end = 0;
      if (masked)
        *masked = 0;
      return;
    }
  *first = lo / a->BKV;
  *end = ceil_div (hi, a->BKV);
  if (masked == NULL)
    return;
  fv_lo = ceil_div (MAX (full_lo, 0), a->BKV);
  fv_hi = full_hi > 0 ? full_hi / a->BKV : 0;
  n = MAX (0, MIN (*end, fv_hi) - MAX (*first, fv_lo));
  *masked = *end - *first - n;
}

void
_napkin_plan_attention_count_tiles (NapkinPlanAttention *a)
{
  gint64 q_tiles = ceil_div (a->NQ, a->BQ), chunks = ceil_div (a->NKV, a->BKV);

  a->tiles_total = q_tiles * chunks;
  a->tiles_computed = a->tiles_masked = a->chunks_most = 0;
  a->seen_lo = q_tiles;
  a->seen_hi = 0;
  for (gint64 t = 0; t < q_tiles; t++)
    {
      gint64 first, end, masked;

      napkin_plan_attention_chunks (a, t * a->BQ, MIN ((t + 1) * a->BQ, a->NQ), &first, &end, &masked);
      a->tiles_computed += MAX (0, end - first);
      a->tiles_masked += masked;
      a->chunks_most = MAX (a->chunks_most, end - first);
      if (end > first)
        {
          a->seen_lo = MIN (a->seen_lo, t);
          a->seen_hi = t + 1;
        }
    }
  if (a->seen_hi == 0)
    a->seen_lo = 0;
}

/* The block order under a mask (docs/plan.md, "Causal order"). The wgmma kernel runs one
 * block an SM, and the SMs take blocks in grid order as they free up. Causal query tiles
 * see 1 to n chunks; taken one head after another (each head's heaviest tile first) a
 * grid of a few waves ends on the last heads' heavy tiles: 16 heads × 16 tiles on 132
 * SMs end 1.64× after the even share. Bands of heads whose K and V fit in half of L2,
 * their heaviest tiles first across the band, end 1.03× after it, and keep a wave's
 * K/V reads in L2. A block's fixed cost counts as ATTN_BLOCK_CHUNKS chunks; beyond
 * ATTN_TAIL_WAVES waves the tail is under a few percent and not simulated. */
#define ATTN_BLOCK_CHUNKS 2
#define ATTN_TAIL_WAVES   16

/* The block's tile (its query tile before the kernel's reversal, and its (batch, head)
 * unit) in the grid's order, as kernels/attn-sm90.cu's a_band maps it. */
void
napkin_plan_attention_band_tile (gint64  block,
                                 gint64  q_tiles,
                                 gint64  units,
                                 gint64  band,
                                 gint64 *qt,
                                 gint64 *unit)
{
  if (band > 1)
    {
      gint64 first = block / (band * q_tiles) * band, n = MIN (band, units - first);
      gint64 within = block - first * q_tiles;

      *qt = within / n;
      *unit = first + within % n;
      return;
    }
  *qt = block % q_tiles;
  *unit = block / q_tiles;
}

static void
heap_push_min (double *heap,
               guint   n,
               double  v)
{
  guint i = n;

  heap[i] = v;
  while (i > 0 && heap[(i - 1) / 2] > heap[i])
    {
      double t = heap[i];

      heap[i] = heap[(i - 1) / 2];
      heap[(i - 1) / 2] = t;
      i = (i - 1) / 2;
    }
}

static double
heap_pop_min (double *heap,
              guint   n)
{
  double top = heap[0];
  guint i = 0;

  heap[0] = heap[n - 1];
  n--;
  for (;;)
    {
      guint l = 2 * i + 1, r = l + 1, m = i;

      if (l < n && heap[l] < heap[m])
        m = l;
      if (r < n && heap[r] < heap[m])
        m = r;
      if (m == i)
        break;
      double t = heap[i];
      heap[i] = heap[m];
      heap[m] = t;
      i = m;
    }
  return top;
}

/* How long after the start the grid's last block ends, over the even share: the SMs,
 * each taking the grid's next block in the kernel's order as it frees up (list
 * scheduling); a block of query tile t costs work[t]. */
static double
band_tail (const gint64 *work,
           gint64        q_tiles,
           gint64        units,
           gint64        band,
           guint         sms,
           double       *heap)
{
  double total = 0, end = 0;

  memset (heap, 0, sms * sizeof (double));
  for (gint64 b = 0; b < q_tiles * units; b++)
    {
      gint64 qt, unit;
      double start;

      napkin_plan_attention_band_tile (b, q_tiles, units, band, &qt, &unit);
      /* the kernel reverses the query tiles under a mask: the heaviest first */
      qt = q_tiles - 1 - qt;
      start = heap_pop_min (heap, sms);
      heap_push_min (heap, sms - 1, start + work[qt]);
      total += work[qt];
    }
  for (guint i = 0; i < sms; i++)
    end = MAX (end, heap[i]);
  return total > 0 ? MAX (1.0, end / (total / sms)) : 1.0;
}

/* Chooses the band and prices its tail. Bands as even as the L2 bound allows (16 heads
 * under a bound of 15: two of 8, not 15 and 1, whose last head ends 1.38×), the next few
 * counts of bands too, and one head after another: the shortest tail. */
static void
choose_band (const NapkinArch    *arch,
             NapkinPlanAttention *a,
             gint64               grid)
{
  const guint sms = MAX (1u, arch->sms);
  const gint64 q_tiles = ceil_div (a->NQ, MAX (1, a->BQ)), units = q_tiles > 0 ? grid / q_tiles : 0;
  const double l2 = arch->levels[NAPKIN_LEVEL_L2].capacity_bytes;
  double kv;
  gint64 most, bands;
  g_autofree double *heap = NULL;
  g_autofree gint64 *work = NULL;

  a->band = 0;
  a->tail = 1.0;
  if (a->mask == NAPKIN_ATTN_MASK_NONE || a->persist_tiles > 0 || a->split_kv > 1 || grid <= sms
      || grid > ATTN_TAIL_WAVES * (gint64) sms || units * q_tiles != grid)
    return;
  work = g_new (gint64, q_tiles);
  for (gint64 t = 0; t < q_tiles; t++)
    {
      gint64 first, stop;

      napkin_plan_attention_chunks (a, t * a->BQ, MIN ((t + 1) * a->BQ, a->NQ), &first, &stop, NULL);
      work[t] = MAX (0, stop - first) + ATTN_BLOCK_CHUNKS;
    }
  heap = g_new0 (double, sms);
  a->tail = band_tail (work, q_tiles, units, 0, sms, heap);
  /* K and V of one (batch, head) unit: a band's in half of L2 */
  kv = (double) a->NKV * a->D * (napkin_dtype_bytes (a->dtype) + napkin_dtype_bytes (a->v_dtype ? a->v_dtype : a->dtype));
  most = l2 > 0 && kv > 0 ? (gint64) CLAMP (l2 / 2 / kv, 1.0, (double) units) : 1;
  bands = ceil_div (units, most);
  for (gint64 n = bands; n < bands + 4 && n <= units; n++)
    {
      gint64 band = ceil_div (units, n);
      double tail;

      if (band <= 1)
        break;
      tail = band_tail (work, q_tiles, units, band, sms, heap);
      if (tail < a->tail - 0.005)
        {
          a->tail = tail;
          a->band = band;
        }
    }
}

/* The most key chunks the queries of one query tile see (all of them without a mask):
 * what split-KV divides, each split that many chunks from the first the tile sees
 * (kernels/attn-sm90.cu). */
static gint64
visible_chunks (NapkinPlanAttention *a)
{
  _napkin_plan_attention_count_tiles (a);
  return MAX (1, a->chunks_most);
}

static char *
mask_text (const NapkinPlanAttention *a)
{
  switch (a->mask)
    {
    case NAPKIN_ATTN_MASK_CAUSAL:
      return g_strdup_printf (_("causal (diagonal offset %lld)"), (long long) a->mask_offset);
    case NAPKIN_ATTN_MASK_WINDOW:
      return g_strdup_printf (_("window of %lld left, %lld right (offset %lld)"), (long long) a->window_left, (long long) a->window_right, (long long) a->mask_offset);
    case NAPKIN_ATTN_MASK_NONE:
    case NAPKIN_N_ATTN_MASKS:
    default:
      return NULL;
    }
}

/* The score operands for the note: "a bias added (fp16, 16 rows a warp in 16-byte
 * pieces), keep flags applied (int8, one row a block, chunks it hides wholly skipped)". */
static void
scores_text (GString                   *s,
             const NapkinPlanAttention *a)
{
  for (guint i = 0; i < a->n_scores; i++)
    {
      const NapkinPlanAttnScore *sc = &a->scores[i];

      g_string_append (s, i == 0 ? "; " : ", ");
      g_string_append (s, sc->kind == NAPKIN_ATTN_SCORE_KEEP ? _("keep flags applied") : _("a bias added"));
      if (sc->rows == 1)
        g_string_append_printf (s, _(" (%s, one row a block%s)"), napkin_dtype_to_string (sc->dtype),
                                sc->scan ? _(", chunks it hides wholly skipped") : "");
      else
        g_string_append_printf (s, _(" (%s, 16 rows a warp in %u-byte pieces)"), napkin_dtype_to_string (sc->dtype),
                                sc->vec);
    }
}

/* The one-line note of an attention kernel. */
static void
attention_note (NapkinPlanKernel *k,
                const char       *extra)
{
  const NapkinPlanAttention *a = &k->u.att;
  g_autoptr(GString) s = g_string_new (NULL);
  g_autofree char *mask = mask_text (a);

  if (k->path == NAPKIN_PATH_WGMMA)
    g_string_append_printf (s, _("fused attention, %lld query rows a block (%u consumer warpgroup%s), "
                               "keys in chunks of %lld through %u stages, TMA loads, wgmma%s, online "
                               "softmax in registers"), (long long) a->rows, a->consumers, a->consumers == 1 ? "" : "s", (long long) a->BKV,
                            a->stages, a->dtype == NAPKIN_DTYPE_FP8_E4M3
                                         ? (a->v_dtype == NAPKIN_DTYPE_FP8_E4M3 ? " e4m3 for Q·Kᵀ and P·V"
                                                                                : " e4m3 for Q·Kᵀ")
                                         : "");
  else
    g_string_append_printf (s, _("fused attention, %lld query rows a block (%u warp%s), keys in chunks "
                               "of %lld (%s, cp.async), mma.sync, online softmax in registers"),
                            (long long) a->rows, a->consumers, a->consumers == 1 ? "" : "s", (long long) a->BKV,
                            a->stages == 1 ? _("one buffer") : _("double-buffered"));
  if (a->stages_asked > a->stages)
    g_string_append_printf (s, _("; %u stages asked, the %u that fit in shared memory used"), a->stages_asked,
                            a->stages);
  if (a->group > 1)
    g_string_append_printf (s, _("; %lld query heads per K/V head, %lld of them a "
                               "block"), (long long) a->group, (long long) a->group_tile);
  if (a->D * napkin_dtype_bytes (a->dtype) % 128 != 0 && k->path == NAPKIN_PATH_WGMMA)
    g_string_append_printf (s, _("; rows of %lld padded to %lld in shared memory"),
                            (long long) a->D, (long long) a->d_smem);
  if (mask)
    {
      g_string_append_printf (s, _("; %s mask: %lld of %lld tiles computed per head, %lld masked in registers"), mask, (long long) a->tiles_computed, (long long) a->tiles_total,
                              (long long) a->tiles_masked);
      if (a->band > 1)
        g_string_append_printf (s, _("; blocks in bands of %lld heads, each band's heaviest query tiles first"),
                                (long long) a->band);
    }
  else if (a->NKV % a->BKV || a->NQ % a->BQ)
    g_string_append (s, _("; edge tiles masked"));
  scores_text (s, a);
  if (a->split_kv > 1)
    g_string_append_printf (s, _("; keys split %u ways (%lld chunks each), partial outputs merged "
                               "by a second kernel"), a->split_kv, (long long) a->chunks_per_split);
  if (a->persist_tiles > 0)
    g_string_append_printf (s, _("; persistent: each block walks about %lld of the %lld tiles, their Q "
                               "copied up to %u tiles ahead"), (long long) ceil_div (a->persist_tiles, k->grid > 0 ? k->grid : 1),
                            (long long) a->persist_tiles, a->q_buffers - 1);
  if (a->bkv_asked > 0)
    g_string_append_printf (s, _("; the region's chunks of %lld keys taken as one of all %lld (%lld with the padding)"),
                            (long long) a->bkv_asked, (long long) a->NKV, (long long) a->BKV);
  if (a->exp_fma > 0)
    {
      /* whole blocks of 8 keys move: floor (BKV/8 · f) of every chunk's BKV/8 */
      gint64 blocks = MAX (1, a->BKV / 8), moved = (gint64) floor (a->exp_fma * blocks);

      g_string_append_printf (s, _("; exponentials of %lld of %lld key blocks "
                                 "(%.0f %%) as a polynomial on the FMA units"), (long long) moved, (long long) blocks, 100.0 * moved / blocks);
    }
  if (a->legacy)
    g_string_append (s, " (flash-mma)");
  if (extra)
    g_string_append_printf (s, "; %s", extra);
  g_free (k->note);
  k->note = g_strdup (s->str);
}

gboolean
napkin_plan_attention_set_mask (NapkinPlan       *plan,
                                NapkinPlanKernel *k,
                                NapkinAttnMask    mask,
                                gint64            offset,
                                gint64            left,
                                gint64            right,
                                GError          **error)
{
  NapkinPlanAttention *a;

  g_return_val_if_fail (plan != NULL && k != NULL, FALSE);
  g_return_val_if_fail (k->kind == NAPKIN_PLAN_ATTENTION, FALSE);

  a = &k->u.att;
  if (mask >= NAPKIN_N_ATTN_MASKS)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE, _("mask: unknown kind %d"), mask);
      return FALSE;
    }
  if (mask == NAPKIN_ATTN_MASK_WINDOW && (left < -1 || right < -1))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("mask: a window's sides are ≥ 0 keys (or −1: unbounded), not %lld and %lld"), (long long) left, (long long) right);
      return FALSE;
    }
  if (ABS (offset) > G_MAXINT32)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("mask: diagonal offset %lld out of range"), (long long) offset);
      return FALSE;
    }
  a->mask = mask;
  a->mask_offset = mask == NAPKIN_ATTN_MASK_NONE ? 0 : offset;
  a->window_left = mask == NAPKIN_ATTN_MASK_WINDOW ? left : -1;
  a->window_right = mask == NAPKIN_ATTN_MASK_WINDOW ? right : mask == NAPKIN_ATTN_MASK_CAUSAL ? 0 : -1;
  /* the skeleton of today's shapes masks nothing: the general kernel, with the same
   * tiles, stages and footprint, takes the masked kernel */
  if (mask != NAPKIN_ATTN_MASK_NONE)
    a->legacy = FALSE;
  _napkin_plan_attention_count_tiles (a);
  /* the splits divide the chunks the queries see: they must still cover them */
  if (a->split_kv > 1)
    a->chunks_per_split = ceil_div (visible_chunks (a), a->split_kv);
  if (k->path == NAPKIN_PATH_WGMMA)
    choose_band (plan->arch, a, k->grid);
  attention_note (k, NULL);
  for (guint i = 0; i + 1 < plan->kernels->len; i++)
    if (g_ptr_array_index (plan->kernels, i) == k)
      {
        NapkinPlanKernel *next = g_ptr_array_index (plan->kernels, i + 1);

        if (next->kind == NAPKIN_PLAN_ATTENTION_COMBINE)
          next->u.att = *a;
      }
  return TRUE;
}

/* ---- layouts ------------------------------------------------------------------------------ */

/* Q without its Q-only axes but `query` reads as K with the key axis replaced by `query`. */
static gboolean
aligns (char      **q_axes,
        char      **k_axes,
        char      **q_only,
        const char *query,
        const char *key)
{
  guint j = 0;

  for (guint i = 0; q_axes[i] != NULL; i++)
    {
      if (g_strv_contains ((const char * const *) q_only, q_axes[i]) && !g_str_equal (q_axes[i], query))
        continue;
      if (k_axes[j] == NULL)
        return FALSE;
      if (!(g_str_equal (q_axes[i], query) ? g_str_equal (k_axes[j], key) : g_str_equal (k_axes[j], q_axes[i])))
        return FALSE;
      j++;
    }
  return k_axes[j] == NULL;
}

typedef struct
{
  const char *query, *key, *group, *d;
  const char *dv;             /* V's and O's head axis: d, or another of d's size */
  gboolean    plain;          /* Q, K, V, O all [lead…, row, d] with one order of the lead axes */
} AttnAxes;

/* The TMA view of K and V: [lead…, k, d] is D × NKV rows in kv_batch planes (rows past
 * NKV read as zero); [outer…, k, inner…, d] is D × outer·NKV rows (ld inner·D) in
 * `inner` planes D apart (rows past NKV are the next outer index's, masked). */
static void
kv_tma_view (NapkinPlanAttention *a,
             gint64               outer,
             gint64               inner,
             const gboolean      *lead_inner)
{
  a->kv_tma = TRUE;
  if (inner == 1)
    {
      gint64 mult = 1;

      a->kv_rows = a->NKV;
      a->kv_ld = a->D;
      a->kv_planes = a->kv_batch;
      a->kv_plane_stride = a->NKV * a->D;
      for (int l = (int) a->n_lead - 1; l >= 0; l--)
        {
          a->kv_row_coef[l] = 0;
          a->kv_plane_coef[l] = mult;
          mult *= a->lead_size[l];
        }
    }
  else
    {
      gint64 row_mult = a->NKV, plane_mult = 1;

      a->kv_rows = outer * a->NKV;
      a->kv_ld = inner * a->D;
      a->kv_planes = inner;
      a->kv_plane_stride = a->D;
      for (int l = (int) a->n_lead - 1; l >= 0; l--)
        {
          a->kv_row_coef[l] = lead_inner[l] ? 0 : row_mult;
          a->kv_plane_coef[l] = lead_inner[l] ? plane_mult : 0;
          if (lead_inner[l])
            plane_mult *= a->lead_size[l];
          else
            row_mult *= a->lead_size[l];
        }
    }
  if (a->kv_rows > G_MAXINT32 || a->kv_planes > G_MAXINT32)
    a->kv_tma = FALSE;
}


/* Reads the axes and strides into `a`; NULL, or why not. */
static char *
attention_layout (NapkinPlanner       *p,
                  NapkinPlanAttention *a,
                  const NapkinTensor  *Q,
                  const NapkinTensor  *K,
                  const NapkinTensor  *V,
                  const NapkinTensor  *O,
                  const char          *key,
                  const char          *preferred,
                  AttnAxes            *ax)
{
  guint qr = g_strv_length (Q->axes), kr = g_strv_length (K->axes), orank = g_strv_length (O->axes);
  g_autoptr(GPtrArray) q_only = g_ptr_array_new ();
  const char *d = Q->axes[qr - 1], *dv;
  int key_at;
  gint64 outer = 1, inner = 1;
  gboolean lead_inner[NAPKIN_MAX_RANK] = { FALSE };

  memset (ax, 0, sizeof *ax);
  /* Q·Kᵀ contracts d; V and O carry their own head axis dv (it may be named apart from
   * d: an imported block names each projection's axes). The kernels hold one head size
   * for Q, K, V and O (docs/plan.md, "Attention kernels"). */
  if (qr < 2 || kr < 2 || !g_str_equal (K->axes[kr - 1], d) || g_strv_length (V->axes) != kr || orank < 2)
    return g_strdup (_("the head axes must be the last (contiguous) axes of Q and K (d), and of V and O (dv)"));
  dv = V->axes[kr - 1];
  if (!g_str_equal (O->axes[orank - 1], dv))
    return g_strdup_printf (_("the head axis of V (%s) must be the last (contiguous) axis of O, not %s"), dv,
                            O->axes[orank - 1]);
  if (!g_str_equal (dv, d))
    {
      gint64 nd = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, d));
      gint64 nv = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, dv));

      if (axis_index (Q->axes, dv) >= 0 || axis_index (K->axes, dv) >= 0 || axis_index (O->axes, d) >= 0)
        return g_strdup_printf (_("the head axes %s (Q·Kᵀ) and %s (·V) must each be only the head axis"), d, dv);
      if (nd != nv)
        return g_strdup_printf (_("V's head size (%s = %lld) differs from Q's and K's (%s = %lld): the attention "
                                  "kernels take one head size for Q, K, V and O"),
                                dv, (long long) nv, d, (long long) nd);
    }
  for (guint i = 0; i + 1 < kr; i++)
    if (!g_str_equal (K->axes[i], V->axes[i]))
      return g_strdup (_("V must have K's axes in K's order"));
  key_at = axis_index (K->axes, key);
  if (key_at < 0 || axis_index (Q->axes, key) >= 0 || axis_index (O->axes, key) >= 0)
    return g_strdup_printf (_("the softmax axis %s must be K's and V's key axis, absent from Q and O"), key);
  for (guint i = 0; i + 1 < qr; i++)
    if (axis_index (K->axes, Q->axes[i]) < 0)
      g_ptr_array_add (q_only, Q->axes[i]);
  g_ptr_array_add (q_only, NULL);
  if (q_only->len < 2 || q_only->len > 3)
    return g_strdup_printf (_("Q must have one query axis and at most one group axis that K lacks, not %u"),
                            q_only->len - 1);
  /* the query axis sits in Q where the key axis sits in K; where two do (multi-query
   * attention: K lacks both the heads and the queries), a mask's rows, else the
   * innermost (a region drawn for decoding marks the group's heads and one query) */
  if (preferred != NULL && g_strv_contains ((const char * const *) q_only->pdata, preferred)
      && aligns (Q->axes, K->axes, (char **) q_only->pdata, preferred, key))
    ax->query = preferred;
  for (int i = (int) q_only->len - 2; i >= 0 && ax->query == NULL; i--)
    if (aligns (Q->axes, K->axes, (char **) q_only->pdata, g_ptr_array_index (q_only, i), key))
      ax->query = g_ptr_array_index (q_only, i);
  if (ax->query == NULL)
    ax->query = g_ptr_array_index (q_only, q_only->len - 2);
  for (guint i = 0; i + 1 < q_only->len; i++)
    if (!g_str_equal (g_ptr_array_index (q_only, i), ax->query))
      ax->group = g_ptr_array_index (q_only, i);
  ax->key = key;
  ax->d = d;
  ax->dv = dv;
  if (orank != qr)
    return g_strdup (_("O must have Q's axes"));
  for (guint i = 0; i + 1 < qr; i++)
    if (axis_index (O->axes, Q->axes[i]) < 0)
      return g_strdup_printf (_("O lacks Q's axis %s"), Q->axes[i]);

  a->query_axis = napkin_diagram_find_axis (p->d, ax->query);
  a->group_axis = ax->group ? napkin_diagram_find_axis (p->d, ax->group) : -1;
  a->NQ = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, ax->query));
  a->NKV = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, key));
  a->D = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, d));
  a->group = ax->group ? napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, ax->group)) : 1;
  a->q_group = ax->group ? stride_of (p, Q->axes, ax->group) : 0;
  a->o_group = ax->group ? stride_of (p, O->axes, ax->group) : 0;
  a->q_row = stride_of (p, Q->axes, ax->query);
  a->o_row = stride_of (p, O->axes, ax->query);
  a->k_row = stride_of (p, K->axes, key);
  a->n_lead = 0;
  a->kv_batch = 1;
  for (guint i = 0; i + 1 < kr; i++)
    {
      guint l = a->n_lead;

      if ((int) i == key_at)
        continue;
      a->lead_size[l] = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, K->axes[i]));
      a->q_lead[l] = stride_of (p, Q->axes, K->axes[i]);
      a->o_lead[l] = stride_of (p, O->axes, K->axes[i]);
      a->k_lead[l] = stride_of (p, K->axes, K->axes[i]);
      if (a->q_lead[l] < 0 || a->o_lead[l] < 0)
        return g_strdup_printf (_("K's axis %s must also be an axis of Q and O"), K->axes[i]);
      a->lead_axis[l] = napkin_diagram_find_axis (p->d, K->axes[i]);
      a->kv_batch *= a->lead_size[l];
      lead_inner[l] = (int) i > key_at;
      if (lead_inner[l])
        inner *= a->lead_size[l];
      else
        outer *= a->lead_size[l];
      a->n_lead++;
    }
  a->batch = a->kv_batch * a->group;
  a->kv_heads = a->n_lead >= 2 ? a->lead_size[a->n_lead - 1] : 1;
  a->seqs = a->kv_batch / MAX (1, a->kv_heads);
  a->heads = a->kv_heads * a->group;
  kv_tma_view (a, outer, inner, lead_inner);

  /* Today's layout: every tensor [lead…, row, d], one order of the lead axes. */
  ax->plain = ax->group == NULL && key_at == (int) kr - 2 && axis_index (Q->axes, ax->query) == (int) qr - 2
              && axis_index (O->axes, ax->query) == (int) qr - 2 && qr == kr;
  for (guint i = 0; ax->plain && i + 2 < qr; i++)
    ax->plain = g_str_equal (Q->axes[i], K->axes[i]) && g_str_equal (O->axes[i], K->axes[i]);
  return NULL;
}

/* Each consumer warp's staging area for the chunk size `a->BKV`: per operand `rows` rows
 * of the chunk's keys, a row 16 bytes longer than the keys (eight rows read a 16-byte
 * piece each without bank conflicts; 32 for fp32, whose 8-byte reads take a half-warp's
 * four rows at a time), or one row where every row reads the same. */
static void
layout_scores (NapkinPlanAttention *a)
{
  gint64 at = 0;

  for (guint i = 0; i < a->n_scores; i++)
    {
      NapkinPlanAttnScore *sc = &a->scores[i];
      gint64 keys = a->BKV * napkin_dtype_bytes (sc->dtype);

      sc->pitch = sc->rows == 1 ? ceil_div (keys, 16) * 16 : keys + (napkin_dtype_bytes (sc->dtype) == 4 ? 32 : 16);
      sc->offset = at;
      at += sc->rows * sc->pitch;
    }
  a->score_warp_bytes = at;
}

/* Shared memory the score operands add to a block of `warps` consumer warps. */
static gint64
scores_smem (const NapkinPlanAttention *a,
             gint64                     warps)
{
  gboolean scan = FALSE;

  for (guint i = 0; i < a->n_scores; i++)
    scan |= a->scores[i].scan;
  return warps * a->score_warp_bytes + (scan ? 16 : 0);
}

/* Registers a consumer thread spends on the score operands: each one's offset (64 bits)
 * and, while a chunk's values are applied, a few for addresses and conversions. */
static gint64
score_registers (const NapkinPlanAttention *a)
{
  return a->n_scores > 0 ? 8 + 2 * (gint64) a->n_scores : 0;
}

/* ---- the kernels' limits ------------------------------------------------------------------ */

/* Rows of fp8 Vᵀ: D, and where the kernel reads Vᵀ made before and wgmma's N allows
 * (≤ 256), 8 more whose first is ones: P·V's column D is then each row's sum of P, the
 * additions the softmax skips (the sums of the P that P·V multiplies, rounded to e4m3;
 * docs/plan.md, "Attention kernels"). */
static gint64
vt_rows (const NapkinPlanAttention *a)
{
  if (a->v_dtype != NAPKIN_DTYPE_FP8_E4M3 || a->vt_in_kernel || a->D + 8 > 256)
    return a->D;
  return a->D + 8;
}

/* Shared memory of the Hopper kernel: 1 KB to align the 128-byte swizzle, Q (rows padded
 * to the consumers' 64), the stages of K and V (or Vᵀ for fp8 P·V), the mbarriers. */
static gint64
wgmma_smem (const NapkinPlanAttention *a)
{
  guint qe = napkin_dtype_bytes (a->dtype);
  gint64 ds = ceil_div (a->D * qe, 128);
  gint64 q = (gint64) a->consumers * 64 * ds * 128 * MAX (1u, a->q_buffers), kb = a->BKV * ds * 128, vb, bars;
  /* q_full for each Q buffer, and q_empty where they rotate (persistent) */
  gint64 qbars = a->persist_tiles > 0 ? 2 * (gint64) a->q_buffers : 1;

  if (a->v_dtype == NAPKIN_DTYPE_FP8_E4M3)
    vb = vt_rows (a) * a->BKV;
  else
    vb = a->BKV * ceil_div (a->D * 2, 128) * 128;
  /* V as stored beside its Vᵀ, and one more mbarrier a stage, where the kernel transposes */
  if (a->vt_in_kernel)
    vb += a->BKV * ceil_div (a->D, 128) * 128;
  bars = 8 * (qbars + (a->vt_in_kernel ? 4 : 3) * (gint64) a->stages);
  /* the score operands' staging after the mbarriers, 16-byte aligned, 4 warps a consumer */
  if (a->n_scores > 0)
    bars = ceil_div (bars, 16) * 16 + scores_smem (a, 4 * (gint64) a->consumers);
  return 1024 + q + (gint64) a->stages * (kb + vb) + bars;
}

/* What each of `consumers` warpgroups gets when the producer keeps `producer` (setmaxnreg:
 * a multiple of 8, at most 240). The warpgroups share what the block was launched with —
 * ptxas gives each thread the most __launch_bounds__ (threads, 1) allows (64K / threads,
 * down to a multiple of 8, at most 255) — not the whole 64K: a setmaxnreg.inc beyond that
 * waits forever (two consumers at 240 beside a producer at 32 hung on the H100; FA3's
 * split is 24/240). */
static gint64
consumer_registers (gint64 producer,
                    gint64 consumers)
{
  gint64 threads = 128 * (MAX (1, consumers) + 1), launch = MIN (255, 65536 / threads) / 8 * 8;

  return MIN (240, (launch * threads - 128 * producer) / (128 * MAX (1, consumers)) / 8 * 8);
}

/* fp8 V: transposed by a separate pass into scratch before the kernel (docs/plan.md,
 * "Attention kernels"). NAPKIN_ATTN_VT_IN_KERNEL asks for the kernel's producer to
 * transpose it instead: measured slower (H200, fp8 4·16·4096·128: 0.803 ms against 0.708
 * for the pass; docs/perf-notes.md), kept for the GPU A/B scripts. */
static gboolean
vt_in_kernel_asked (void)
{
  const char *env = g_getenv ("NAPKIN_ATTN_VT_IN_KERNEL");

  return env != NULL && *env != '\0' && !g_str_equal (env, "0");
}

/* fp8 chunks of up to 128 keys take at least 3 stages where they fit: fp8 N4096 d128 ran
 * 0.710 ms in 3 stages against 0.724 in 2 on the H100, 0.708 against 0.729 on the H200
 * (docs/perf-notes.md). */
static void
fp8_stage_floor (NapkinPlanner       *p,
                 NapkinPlanAttention *a)
{
  guint had = a->stages;

  if (a->dtype != NAPKIN_DTYPE_FP8_E4M3 || a->BKV > 128 || a->stages >= 3)
    return;
  a->stages = 3;
  if (wgmma_smem (a) > (gint64) p->arch->smem_max_per_block)
    a->stages = had;
}

/* The Hopper kernel's limits (kernels/attn-sm90.cu), or why not; fills the layout numbers. */
static char *
wgmma_refusal (NapkinPlanner       *p,
               NapkinPlanAttention *a)
{
  gboolean fp8_v = a->v_dtype == NAPKIN_DTYPE_FP8_E4M3, fp8 = a->dtype == NAPKIN_DTYPE_FP8_E4M3;
  gint64 need, smem, rows_pad;
  guint asked;

  a->vt_in_kernel = fp8_v && vt_in_kernel_asked ();
  layout_scores (a);

  if (a->D % 8 || a->D < 8 || a->D > 256 || (fp8 && a->D % 16))
    return g_strdup_printf (_("head size %lld: the Hopper attention kernel takes 8 to 256 in steps "
                              "of 8 (16 for fp8)"), (long long) a->D);
  if (a->BKV % 16 || a->BKV > 256 || (fp8_v && a->BKV % 32))
    return g_strdup_printf (_("chunks of %lld keys: wgmma takes multiples of 16 up to 256%s"), (long long) a->BKV,
                            fp8_v ? _(" (fp8 P·V: multiples of 32, one k-step of e4m3)") : "");
  rows_pad = ceil_div (a->rows, 64) * 64;
  a->consumers = (guint) (rows_pad / 64);
  if (a->consumers > WGMMA_MAX_CONSUMERS)
    return g_strdup_printf (_("%lld query rows per block need %u consumer warpgroups; at most %d "
                              "share the 64K registers"), (long long) a->rows, a->consumers, WGMMA_MAX_CONSUMERS);
  a->d_smem = ceil_div (a->D * napkin_dtype_bytes (a->dtype), 128) * 128 / napkin_dtype_bytes (a->dtype);
  /* per consumer thread: the scores (BKV/2), P (BKV/4 in 16 bits, BKV/8 in fp8), O (D/2),
   * and 32 for addresses, the running max and sum (ptxas: docs/plan.md) */
  a->v_t_rows = vt_rows (a);
  need = a->BKV / 2 + (fp8_v ? a->BKV / 8 : a->BKV / 4) + a->v_t_rows / 2 + 32 + score_registers (a);
  /* the producer keeps 56 registers (its Q copy's addresses) unless the consumers need
   * more than that leaves them: at 32 two consumer warpgroups get 232, at 24 240 (FA3's
   * split), three get 160 */
  a->producer_regs = 56;
  a->consumer_regs = (guint) consumer_registers (a->producer_regs, a->consumers);
  if (a->consumers >= 3 || need > a->consumer_regs)
    {
      a->producer_regs = 32;
      a->consumer_regs = (guint) consumer_registers (a->producer_regs, a->consumers);
    }
  /* the producer's TMA issue and Q copy fit in 24 (its transposes, with VT_IN, do not) */
  if (need > a->consumer_regs && !a->vt_in_kernel)
    {
      a->producer_regs = 24;
      a->consumer_regs = (guint) consumer_registers (a->producer_regs, a->consumers);
    }
  if (need > a->consumer_regs)
    return g_strdup_printf (_("chunks of %lld keys at d = %lld need about %lld registers per consumer thread; "
                              "%u consumer warpgroups get %u"),
                            (long long) a->BKV, (long long) a->D, (long long) need, a->consumers, a->consumer_regs);
  /* the stages are a hint: the most (at least 2) that fit (docs/plan.md) */
  asked = a->stages;
  while ((smem = wgmma_smem (a)) > (gint64) p->arch->smem_max_per_block && a->stages > 2)
    a->stages--;
  if (smem > (gint64) p->arch->smem_max_per_block)
    {
      a->stages = asked;
      return g_strdup_printf (_("%lld query rows (%lld×%lld) and 2 stages of K and V chunks need %lld bytes of "
                                "shared memory; %s allows %.0f"), (long long) a->rows, (long long) rows_pad,
                              (long long) a->d_smem, (long long) smem, p->arch->id, p->arch->smem_max_per_block);
    }
  a->stages_asked = a->stages < asked ? asked : 0;
  fp8_stage_floor (p, a);
  if (!a->kv_tma)
    return g_strdup (_("tensor-map coordinates are 32-bit: K and V must have fewer than 2³¹ rows and planes"));
  if (fp8_v && !a->vt_in_kernel && a->kv_plane_stride != a->NKV * a->D)
    return g_strdup (_("fp8 V must be stored [lead…, k, d] (Vᵀ is made by one batched transpose)"));
  return NULL;
}

/* Shared memory of the mma.sync kernel: Q, `buffers` K and V chunks, rows padded by 8, then
 * the score operands' staging, a warp's after another. */
static gint64
mma_smem (const NapkinPlanAttention *a,
          gint64                     rows_pad,
          guint                      buffers)
{
  return (rows_pad + 2 * (gint64) buffers * a->BKV) * (ceil_div (a->D, 16) * 16 + 8) * 2
         + scores_smem (a, rows_pad / 16);
}

static char *
mma_refusal (NapkinPlanner       *p,
             NapkinPlanAttention *a)
{
  gint64 rows_pad = ceil_div (a->rows, 16) * 16, d16 = ceil_div (a->D, 16) * 16, smem, need, avail;

  layout_scores (a);
  if (a->dtype != NAPKIN_DTYPE_FP16 && a->dtype != NAPKIN_DTYPE_BF16)
    return g_strdup_printf (_("%s attention needs Hopper's wgmma (sm_90a)"), napkin_dtype_to_string (a->dtype));
  if (a->D % 8 || a->D < 8 || a->D > 256)
    return g_strdup_printf (_("head size %lld: the attention kernels take 8 to 256 in steps of 8"),
                            (long long) a->D);
  a->consumers = (guint) (rows_pad / 16);
  if (a->BKV % 16 || a->BKV > 256 || a->consumers > MMA_MAX_WARPS)
    return g_strdup_printf (_("%lld query rows and chunks of %lld keys: mma.sync "
                            "takes at most 256 rows (16 warps) and chunks of 16 to 256 keys in steps of 16"),
                            (long long) a->rows, (long long) a->BKV);
  a->d_smem = d16;
  /* per thread: O (D/2), the scores (BKV/2) and 64 for addresses, the softmax and P; Q's
   * fragments (D/4) stay in registers where they fit what the block's threads may have */
  avail = MIN (255, 65536 / (MAX (a->consumers, 4u) * 32) / 8 * 8);
  /* ptxas (sm_80, 8 warps) keeps more live than that for wide tiles: above d 128 about
   * d/8 (d 192 by 96 keys: 235 used; d 256 by 64 spills at 255), and d 128 by 128 keys
   * spills at 255 even with Q read from shared memory: 64 more */
  need = d16 / 2 + a->BKV / 2 + 64 + (d16 > 128 ? d16 / 8 : 0)
         + (d16 >= 128 && a->BKV >= 128 && a->consumers >= 8 ? 64 : 0) + score_registers (a);
  if (need > avail)
    return g_strdup_printf (_("chunks of %lld keys at d = %lld need about %lld registers per thread; %u warps may have %lld"),
                            (long long) a->BKV, (long long) a->D, (long long) need, a->consumers, (long long) avail);
  a->q_regs = need + d16 / 4 <= avail;
  a->consumer_regs = (guint) (a->q_regs ? need + d16 / 4 : need);
  /* two buffers of K and V chunks, or one where two do not fit (the stages are a hint:
   * docs/plan.md); one buffer loads each chunk after the last is consumed */
  smem = mma_smem (a, rows_pad, 2);
  if (smem > (gint64) p->arch->smem_max_per_block && mma_smem (a, rows_pad, 1) <= (gint64) p->arch->smem_max_per_block)
    {
      a->stages_asked = a->stages;
      a->stages = 1;
      smem = mma_smem (a, rows_pad, 1);
    }
  if (smem > (gint64) p->arch->smem_max_per_block)
    return g_strdup_printf (_("%lld bytes of shared memory; %s allows %.0f"), (long long) smem, p->arch->id,
                            p->arch->smem_max_per_block);
  return NULL;
}

/* The mma.sync kernel's plan: a chunk of 128 or more keys that it cannot hold (about 256
 * registers a thread at d 128 × 128 keys × 8 warps spill) or only in one buffer is run as
 * two halves, each the kernel's chunk, double-buffered (docs/plan.md, "Attention kernels"):
 * the relabeling tuned for Hopper (keys by 128, 3 stages) then runs on Ampere as keys by 64
 * in two buffers, the shape measured there. NULL, or why not. */
static char *
mma_plan (NapkinPlanner       *p,
          NapkinPlanAttention *a)
{
  NapkinPlanAttention whole = *a, half;
  char *why = mma_refusal (p, a), *why_half;

  a->bkv_parts = 1;
  if ((why == NULL && a->stages > 1) || whole.BKV < 128 || whole.BKV % 32)
    return why;
  half = whole;
  half.BKV = whole.BKV / 2;
  why_half = mma_refusal (p, &half);
  if (why_half != NULL || half.stages < 2)
    {
      g_free (why_half);
      return why;
    }
  g_free (why);
  *a = half;
  a->bkv_parts = 2;
  a->stages = 2;   /* the kernel's two buffers of halves */
  a->stages_asked = 0;
  _napkin_plan_attention_count_tiles (a);
  return NULL;
}

/* Few blocks for the GPU (decoding: a few queries against a long KV cache): the key
 * chunks are cut into ranges computed by separate blocks (split-KV), their partial
 * outputs merged by a second kernel. */
static void
choose_split (NapkinPlanner       *p,
              NapkinPlanAttention *a,
              gint64               base,
              gint64               per_sm)
{
  gint64 chunks = visible_chunks (a), slots = (gint64) p->arch->sms * MAX (1, per_sm), s;

  a->split_kv = 1;
  a->chunks_per_split = chunks;
  if (base * 2 > slots || chunks < 4)
    return;
  s = MIN (MIN (slots / base, chunks / 2), SPLIT_MAX);
  if (s < 2)
    return;
  a->chunks_per_split = ceil_div (chunks, s);
  a->split_kv = (guint) ceil_div (chunks, a->chunks_per_split);
}

/* The combine kernel after a split-KV attention. */
static void
add_combine (NapkinPlanner    *p,
             NapkinPlanKernel *k)
{
  NapkinPlanAttention *a = &k->u.att;
  NapkinPlanKernel *c;
  gint64 rows = a->batch * a->NQ;

  a->partials = _napkin_plan_add_scratch (p->plan, (gint64) a->split_kv * rows * (a->D + 1) * 4);
  c = _napkin_plan_kernel_new (k, NAPKIN_PLAN_ATTENTION_COMBINE, NAPKIN_PATH_SIMT);
  c->u.att = *a;
  c->threads = 128;
  c->grid = ceil_div (rows, 4);
  c->smem_bytes = 0;
  c->registers = 64;
  c->note = g_strdup_printf (_("merges %u partial outputs per query row (weights from their log-sum-exps), one "
                             "warp a row"), a->split_kv);
  g_array_append_vals (c->nodes, k->nodes->data, k->nodes->len);
  g_ptr_array_add (p->after, c);
}

/* fp8 P·V reads V K-major: one batched transpose into scratch first. */
static void
add_v_transpose (NapkinPlanner    *p,
                 NapkinPlanKernel *k)
{
  NapkinPlanAttention *a = &k->u.att;
  NapkinPlanKernel *r = _napkin_plan_kernel_new (k, NAPKIN_PLAN_REPACK, NAPKIN_PATH_SIMT);
  NapkinPlanRepack *rp = &r->u.repack;

  a->v_t_ld = ceil_div (a->NKV, 16) * 16;
  rp->src = a->v;
  rp->dtype = NAPKIN_DTYPE_FP8_E4M3;
  rp->batch = a->kv_batch;
  rp->rows = a->NKV;
  rp->cols = a->D;
  rp->ld_src = a->D;
  rp->ld_dst = a->v_t_ld;
  rp->src_bstride = a->NKV * a->D;
  rp->dst_bstride = a->v_t_rows * a->v_t_ld;
  rp->transpose = TRUE;
  rp->pv_key_order = TRUE;
  rp->ones_row = a->v_t_rows > a->D;
  a->v_t = _napkin_plan_add_scratch (p->plan, a->kv_batch * a->v_t_rows * a->v_t_ld);
  rp->dst = (NapkinPlanBuffer) { -1, a->v_t, NAPKIN_DTYPE_FP8_E4M3 };
  /* the repack printer's launch (kernels/repack.cu): a launch of its own here made the
   * printer refuse it, and the slower fallback transpose ran instead */
  napkin_plan_helper_launch (r);
  r->note = g_strdup_printf (_("transposes V (each of %lld %lld×%lld) so that fp8 P·V reads it K-major"), (long long) a->kv_batch, (long long) a->NKV, (long long) a->D);
  g_ptr_array_add (p->before, r);
}

/* The diagram's mask operation as the kernel's mask (docs/plan.md, "Attention kernels"):
 * rows the query axis, axis the key axis. NULL, or why the kernel cannot run it. */
static char *
read_mask (NapkinPlanAttention *a,
           const NapkinNode    *mask,
           const AttnAxes      *ax,
           gboolean             then_negative)
{
  if (g_strcmp0 (mask->axis, ax->key) != 0 || g_strcmp0 (mask->rows, ax->query) != 0)
    return g_strdup_printf (_("attention: the mask “%s” must keep keys along %s per query of %s, not along %s per %s"),
                            mask->id, ax->key, ax->query, mask->axis, mask->rows);
  /* masking before a negative scale would turn −∞ into +∞ */
  if (then_negative)
    return g_strdup_printf (_("attention: the mask “%s” comes before a scale that is not positive"), mask->id);
  if (ABS (mask->offset) > G_MAXINT32)
    return g_strdup_printf (_("attention: the mask “%s” has offset %lld, out of the kernel's range"),
                            mask->id, (long long) mask->offset);
  a->mask = mask->mask == NAPKIN_MASK_CAUSAL ? NAPKIN_ATTN_MASK_CAUSAL : NAPKIN_ATTN_MASK_WINDOW;
  a->mask_offset = mask->offset;
  a->window_left = mask->mask == NAPKIN_MASK_WINDOW ? mask->left : -1;
  a->window_right = mask->mask == NAPKIN_MASK_WINDOW ? mask->right : 0;
  return NULL;
}

/* Today's aligned shapes on mma.sync run the skeleton they were tuned with
 * (kernels/flash-mma.cu), which measured 2.8 and 6.5 % faster than attn-sm80.cu on the
 * H200. On wgmma the general kernel takes every shape: the flash-wgmma skeleton, retired,
 * ran 1.0–5.0 % slower than attn-sm90.cu (docs/plan.md, "The legacy attention skeletons"). */
static gboolean
legacy_shape (const NapkinPlanAttention *a,
              const AttnAxes            *ax)
{
  return ax->plain && a->mask == NAPKIN_ATTN_MASK_NONE && a->n_scores == 0 && a->split_kv <= 1 && a->group == 1
         && a->exp_fma == 0 && a->stages >= 2 && (a->D == 64 || a->D == 128)
         && (a->dtype == NAPKIN_DTYPE_FP16 || a->dtype == NAPKIN_DTYPE_BF16) && a->v_dtype == a->dtype
         && a->NQ % a->BQ == 0 && a->NKV % a->BKV == 0 && a->BQ % 16 == 0;
}

/* A score operand of the chain: the map or mask `node` reads it on input `port`; its
 * weight in the score the softmax sees is the product of the scales after it (−1 for
 * a subtrahend). */
typedef struct
{
  int                 node, port;
  NapkinAttnScoreKind kind;
  double              weight;
  gboolean            then_negative;  /* keep flags before a scale that is not positive */
} ChainScore;

/* The kernel's operations as one attention: qk → scales, casts, at most one causal or
 * window mask, and score operands (biases added or subtracted, tensor masks) in any
 * order → softmax → pv. */
typedef struct
{
  int        qk, sm, pv, mask;
  int        k_view, v_view;    /* a view (a rename) of K or V the kernel reads through, or −1 */
  int        q_src, k_src;      /* Q and K: qk's operands, or the inputs of scales before Q·Kᵀ
                                   (folded into α) */
  gboolean   read_after;        /* pv's value is used (an output, or later kernels) */
  double     alpha;             /* the product of the scales (and signs) */
  gboolean   mask_then_negative;/* the mask comes before a scale that is not positive */
  guint      n_scores;
  ChainScore scores[NAPKIN_ATTN_MAX_SCORES];
} AttnChain;

/* Which input of `node` (a map add or sub, a tensor mask) carries the chain — the one
 * computed in the kernel — while the other, its score operand, is read from device
 * memory: the input port of the chain, or −1. */
static int
chain_port (NapkinPlanner    *p,
            NapkinPlanKernel *k,
            const NapkinNode *node,
            int               at)
{
  gboolean in0 = _napkin_plan_member (p, k, napkin_diagram_input_source (p->d, at, 0));
  gboolean in1 = _napkin_plan_member (p, k, napkin_diagram_input_source (p->d, at, 1));

  if (node->kind == NAPKIN_OP_MASK)
    return in0 && !in1 ? 0 : -1;
  return in0 == in1 ? -1 : in0 ? 0 : 1;
}

/* Walks one link of the chain back from the softmax: `at` is a scale, a cast, a mask or
 * a score operand's map; `after` is the product of the scales after it (toward the
 * softmax). The input the chain continues on, or −1 where `at` is none of those. */
static int
chain_link (NapkinPlanner    *p,
            NapkinPlanKernel *k,
            AttnChain        *c,
            int               at,
            double           *after)
{
  const NapkinNode *node = napkin_diagram_node (p->d, at);
  gboolean score = (node->kind == NAPKIN_OP_MAP && (node->fn == NAPKIN_FN_ADD || node->fn == NAPKIN_FN_SUB))
                   || (node->kind == NAPKIN_OP_MASK && node->mask == NAPKIN_MASK_TENSOR);
  int port = 0;

  if (score)
    {
      ChainScore *sc = &c->scores[c->n_scores];
      NapkinDtype type;

      port = chain_port (p, k, node, at);
      if (port < 0 || c->n_scores >= NAPKIN_ATTN_MAX_SCORES)
        return -1;
      sc->node = at;
      sc->port = 1 - port;
      /* the type as drawn: int8 flags stay flags under a --dtype that prices the rest */
      type = napkin_diagram_node_type (p->d, napkin_diagram_input_source (p->d, at, sc->port)) != NULL
             ? napkin_diagram_node_type (p->d, napkin_diagram_input_source (p->d, at, sc->port))->dtype
             : NAPKIN_DTYPE_FP32;
      /* a mask's flags in another type keep where nonzero too, which the kernel's
       * int8 flags do not read: not the kernel's */
      if (node->kind == NAPKIN_OP_MASK && type != NAPKIN_DTYPE_INT8)
        return -1;
      sc->kind = node->kind == NAPKIN_OP_MASK ? NAPKIN_ATTN_SCORE_KEEP : NAPKIN_ATTN_SCORE_BIAS;
      /* x − b weighs b by −1; b − x also negates the chain before it */
      sc->weight = node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SUB && port == 0 ? -*after : *after;
      sc->then_negative = !(*after > 0);
      if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SUB && port == 1)
        *after = -*after;
      c->n_scores++;
    }
  else if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SCALE)
    *after *= node->alpha;
  else if (node->kind == NAPKIN_OP_MASK && c->mask < 0)
    {
      c->mask = at;
      c->mask_then_negative = !(*after > 0);
    }
  else if (!(node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_CAST))
    return -1;
  return napkin_diagram_input_source (p->d, at, port);
}

/* Whether the kernel's nodes are one attention chain, each link used once, Q, K and V read
 * from device memory (inputs, or values an earlier kernel stored) and O stored there (an
 * output, or a value later kernels read). Casts between Q·Kᵀ and the softmax change
 * nothing the kernel computes (its scores are fp32); the plan folds narrowing casts into
 * the values they cast (docs/plan.md, "The pipeline"). Score operands are read from
 * device memory too: values outside the kernel. */
static gboolean
find_chain (NapkinPlanner    *p,
            NapkinPlanKernel *k,
            AttnChain        *c)
{
  guint n_consumers, n_uses, links = 0;
  const guint *consumers;
  double after = 1.0;
  int at;

  memset (c, 0, sizeof *c);
  c->qk = c->sm = c->pv = c->mask = c->k_view = c->v_view = c->q_src = c->k_src = -1;
  c->alpha = 1.0;
  for (guint i = 0; i < k->nodes->len; i++)
    {
      guint n = g_array_index (k->nodes, guint, i);

      if (napkin_diagram_node (p->d, n)->kind != NAPKIN_OP_SOFTMAX)
        continue;
      if (c->sm >= 0)
        return FALSE;
      c->sm = n;
    }
  if (c->sm < 0)
    return FALSE;
  consumers = napkin_diagram_consumers (p->d, c->sm, &n_consumers);
  if (n_consumers != 1)
    return FALSE;
  c->pv = consumers[0];
  for (at = napkin_diagram_input_source (p->d, c->sm, 0); at >= 0;)
    {
      napkin_diagram_consumers (p->d, at, &n_uses);
      if (!_napkin_plan_member (p, k, at) || n_uses != 1)
        return FALSE;
      if (napkin_diagram_node (p->d, at)->kind == NAPKIN_OP_CONTRACT)
        {
          c->qk = at;
          break;
        }
      if ((at = chain_link (p, k, c, at, &after)) < 0)
        return FALSE;
      links++;
    }
  c->alpha = after;
  /* the walk met the operands from the softmax back: chain order is the reverse */
  for (guint i = 0; i < c->n_scores / 2; i++)
    {
      ChainScore t = c->scores[i];

      c->scores[i] = c->scores[c->n_scores - 1 - i];
      c->scores[c->n_scores - 1 - i] = t;
    }
  if (c->qk < 0 || napkin_diagram_node (p->d, c->pv)->kind != NAPKIN_OP_CONTRACT
      || !_napkin_plan_member (p, k, c->pv) || napkin_diagram_input_source (p->d, c->pv, 0) != c->sm)
    return FALSE;
  /* Q or K scaled before Q·Kᵀ ((α·Q)·Kᵀ = α·(Q·Kᵀ)): the scale joins α, the kernel reads
   * Q or K itself (a scaled K read through a view stays its own pass) */
  for (guint port = 0; port < 2; port++)
    {
      int src = napkin_diagram_input_source (p->d, c->qk, port), *operand = port == 0 ? &c->q_src : &c->k_src;
      const NapkinNode *sn;

      *operand = src;
      if (src < 0 || !_napkin_plan_member (p, k, src))
        continue;
      sn = napkin_diagram_node (p->d, src);
      if (sn->kind != NAPKIN_OP_MAP || sn->fn != NAPKIN_FN_SCALE)
        {
          if (port == 0)
            return FALSE;
          continue;   /* a view of K: below */
        }
      napkin_diagram_consumers (p->d, src, &n_uses);
      if (n_uses != 1 || napkin_diagram_input_source (p->d, src, 0) < 0
          || _napkin_plan_member (p, k, napkin_diagram_input_source (p->d, src, 0)))
        return FALSE;
      c->alpha *= sn->alpha;
      *operand = napkin_diagram_input_source (p->d, src, 0);
      links++;
    }
  /* K and V may come through views the kernel holds: it reads their inputs' bytes */
  {
    int kv = napkin_diagram_input_source (p->d, c->qk, 1), vv = napkin_diagram_input_source (p->d, c->pv, 1);

    if (c->k_src == kv && _napkin_plan_member (p, k, kv) && _napkin_plan_is_view (p->d, (guint) kv)
        && !_napkin_plan_member (p, k, napkin_diagram_input_source (p->d, kv, 0)))
      c->k_view = kv;
    if (vv != kv && _napkin_plan_member (p, k, vv) && _napkin_plan_is_view (p->d, (guint) vv)
        && !_napkin_plan_member (p, k, napkin_diagram_input_source (p->d, vv, 0)))
      c->v_view = vv;
  }
  if (k->nodes->len != links + 3 + (c->k_view >= 0) + (c->v_view >= 0))
    return FALSE;
  consumers = napkin_diagram_consumers (p->d, c->pv, &n_consumers);
  for (guint i = 0; i < n_consumers; i++)
    if (_napkin_plan_member (p, k, consumers[i]))
      return FALSE;
  c->read_after = n_consumers > 0;
  return TRUE;
}

/* ---- score operands (docs/plan.md, "Score operands") ---------------------------------------- */

/* The operand's strides along the scores' axes into `sc`: every axis of X must be one of
 * the scores' (K's leading axes, the group, the queries, the keys), the keys last. NULL,
 * or why not. */
static char *
score_layout (NapkinPlanner       *p,
              NapkinPlanAttnScore *sc,
              const NapkinTensor  *X,
              const NapkinTensor  *K,
              const AttnAxes      *ax,
              const char          *id)
{
  guint xr = g_strv_length (X->axes), kr = g_strv_length (K->axes), l = 0;

  for (guint i = 0; i < xr; i++)
    {
      const char *name = X->axes[i];

      if (g_str_equal (name, ax->key) || g_str_equal (name, ax->query) || g_strcmp0 (name, ax->group) == 0)
        continue;
      if (axis_index (K->axes, name) < 0 || g_str_equal (name, K->axes[kr - 1]))
        return g_strdup_printf (_("attention: the operand of “%s” has the axis %s, which the scores lack"), id, name);
    }
  if (xr == 0 || !g_str_equal (X->axes[xr - 1], ax->key))
    return g_strdup_printf (_("attention: the operand of “%s” must have the key axis %s last (contiguous)"), id,
                            ax->key);
  for (guint i = 0; i + 1 < kr; i++)
    if (!g_str_equal (K->axes[i], ax->key))
      sc->lead[l++] = MAX (0, stride_of (p, X->axes, K->axes[i]));
  sc->group = ax->group ? MAX (0, stride_of (p, X->axes, ax->group)) : 0;
  sc->row = MAX (0, stride_of (p, X->axes, ax->query));
  return NULL;
}

/* The widest piece (16, 8, 4, 2 or 1 bytes, at least an element) every row of the
 * operand starts on: the copies into shared memory move pieces of it, cp.async from 4. */
static guint
score_vec (const NapkinPlanAttention *a,
           const NapkinPlanAttnScore *sc)
{
  guint es = napkin_dtype_bytes (sc->dtype);

  for (guint v = 16; v > es; v /= 2)
    {
      gboolean ok = (sc->group * es) % v == 0 && (sc->row * es) % v == 0;

      for (guint l = 0; l < a->n_lead; l++)
        ok &= (sc->lead[l] * es) % v == 0;
      if (ok)
        return v;
    }
  return es;
}

json_object *
_napkin_plan_attention_scores_json (const NapkinPlan          *plan,
                                    const NapkinPlanAttention *a)
{
  json_object *list = json_object_new_array ();

  for (guint i = 0; i < a->n_scores; i++)
    {
      const NapkinPlanAttnScore *sc = &a->scores[i];
      json_object *o = json_object_new_object (), *lead = json_object_new_array ();

      for (guint l = 0; l < a->n_lead; l++)
        json_object_array_add (lead, json_object_new_int64 (sc->lead[l]));
      json_object_object_add (o, "kind", json_object_new_string (sc->kind == NAPKIN_ATTN_SCORE_KEEP ? "keep" : "bias"));
      json_object_object_add (o, "operation", json_object_new_string (napkin_diagram_node (plan->diagram, sc->node)->id));
      json_object_object_add (o, "operand", json_object_new_string (napkin_diagram_node (plan->diagram, sc->x.node)->id));
      json_object_object_add (o, "dtype", json_object_new_string (napkin_dtype_to_string (sc->dtype)));
      json_object_object_add (o, "factor", json_object_new_double (sc->coef));
      json_object_object_add (o, "lead_strides", lead);
      json_object_object_add (o, "group_stride", json_object_new_int64 (sc->group));
      json_object_object_add (o, "query_stride", json_object_new_int64 (sc->row));
      json_object_object_add (o, "rows", json_object_new_int (sc->rows));
      json_object_object_add (o, "piece_bytes", json_object_new_int (sc->vec));
      json_object_object_add (o, "scan", json_object_new_boolean (sc->scan));
      json_object_array_add (list, o);
    }
  return list;
}

/* The chain's score operands into `a` (after the marks: a row shared by a block depends
 * on its group tile). NULL, or why not. */
static char *
read_scores (NapkinPlanner       *p,
             NapkinPlanAttention *a,
             const AttnChain     *c,
             const NapkinTensor  *K,
             const AttnAxes      *ax)
{
  gboolean has_dtype = p->options && p->options->has_dtype;

  if (c->n_scores > 0 && !(c->alpha != 0))
    return g_strdup (_("attention: scores scaled by 0 take no bias or tensor mask"));
  for (guint i = 0; i < c->n_scores; i++)
    {
      const ChainScore *cs = &c->scores[i];
      NapkinPlanAttnScore *sc = &a->scores[a->n_scores];
      const NapkinNode *node = napkin_diagram_node (p->d, cs->node);
      int src = napkin_diagram_input_source (p->d, cs->node, cs->port);
      const char *names[NAPKIN_MAX_RANK + 1];
      NapkinTensor x;
      char *why;

      if (!_napkin_plan_attention_value (p, src, &x, names))
        return g_strdup_printf (_("attention: the operand of “%s” needs a known type"), node->id);
      memset (sc, 0, sizeof *sc);
      sc->kind = cs->kind;
      sc->node = cs->node;
      sc->dtype = napkin_diagram_node_type (p->d, src)->dtype;
      if (sc->kind == NAPKIN_ATTN_SCORE_KEEP && cs->then_negative)
        return g_strdup_printf (_("attention: the mask “%s” comes before a scale that is not positive"), node->id);
      if (sc->kind == NAPKIN_ATTN_SCORE_BIAS && has_dtype)
        sc->dtype = p->options->dtype == NAPKIN_DTYPE_BF16 || p->options->dtype == NAPKIN_DTYPE_FP32
                    ? p->options->dtype : NAPKIN_DTYPE_FP16;
      if (sc->kind == NAPKIN_ATTN_SCORE_BIAS && sc->dtype != NAPKIN_DTYPE_FP16 && sc->dtype != NAPKIN_DTYPE_BF16
          && sc->dtype != NAPKIN_DTYPE_FP32)
        return g_strdup_printf (_("attention: the bias of “%s” is %s; the kernels add fp16, bf16 or fp32 "
                                  "(int8 flags mask through a tensor mask)"), node->id,
                                napkin_dtype_to_string (sc->dtype));
      if ((why = score_layout (p, sc, &x, K, ax, node->id)) != NULL)
        return why;
      sc->x = (NapkinPlanBuffer) { src, -1, sc->dtype };
      sc->coef = sc->kind == NAPKIN_ATTN_SCORE_BIAS ? cs->weight / c->alpha : 0;
      sc->vec = score_vec (a, sc);
      sc->rows = sc->row == 0 && (sc->group == 0 || a->group_tile == 1) ? 1 : 16;
      a->n_scores++;
    }
  /* the blocks of the sequences (or heads) an operand of rows lacks run together, so
   * that L2 serves its tiles to all but the first of them */
  for (guint i = 0; i < a->n_scores && a->lead_first < 0; i++)
    for (guint l = 0; l < a->n_lead && a->lead_first < 0; l++)
      if (a->scores[i].rows > 1 && a->scores[i].lead[l] == 0 && a->lead_size[l] > 1)
        a->lead_first = (int) l;
  /* a padding mask (one row a block) lets a block skip the chunks it hides wholly */
  for (guint i = 0; i < a->n_scores; i++)
    if (a->scores[i].rows == 1 && a->NKV > a->BKV)
      {
        a->scores[i].scan = TRUE;
        break;
      }
  layout_scores (a);
  return NULL;
}

/* Element types into `a`: Q and K alike (fp16, bf16 or fp8 e4m3); V as Q in 16 bits, or
 * any of the three under fp8 Q and K; O 16 or 32 bits. NULL, or why not. */
static char *
read_dtypes (NapkinPlanner       *p,
             NapkinPlanAttention *a,
             const NapkinTensor  *Q,
             const NapkinTensor  *K,
             const NapkinTensor  *V,
             const NapkinTensor  *O)
{
  gboolean has_dtype = p->options && p->options->has_dtype;

  a->dtype = has_dtype ? p->options->dtype : Q->dtype;
  a->v_dtype = has_dtype ? p->options->dtype : V->dtype;
  a->o_dtype = has_dtype ? p->options->dtype : O->dtype;
  /* every tensor in fp8 (--dtype): O stays in 16 bits, as FlashAttention-3 keeps it (an
   * fp8 O would round the output the softmax was computed in fp32 for) */
  if (has_dtype && a->o_dtype == NAPKIN_DTYPE_FP8_E4M3)
    a->o_dtype = NAPKIN_DTYPE_FP16;
  if ((a->dtype != NAPKIN_DTYPE_FP16 && a->dtype != NAPKIN_DTYPE_BF16 && a->dtype != NAPKIN_DTYPE_FP8_E4M3)
      || (!has_dtype && K->dtype != Q->dtype)
      || (a->dtype != NAPKIN_DTYPE_FP8_E4M3 && a->v_dtype != a->dtype)
      || (a->dtype == NAPKIN_DTYPE_FP8_E4M3 && a->v_dtype != NAPKIN_DTYPE_FP8_E4M3
          && a->v_dtype != NAPKIN_DTYPE_FP16 && a->v_dtype != NAPKIN_DTYPE_BF16))
    return g_strdup_printf (_("attention: Q and K must be both fp16, bf16 or fp8-e4m3 and V of Q's type (or, "
                            "with fp8 Q and K, fp8-e4m3, fp16 or bf16), not %s, %s and %s"),
                            napkin_dtype_to_string (Q->dtype), napkin_dtype_to_string (K->dtype),
                            napkin_dtype_to_string (V->dtype));
  /* an fp8 O of fp8 Q and K: the diagram asked for it (a cast to 16 bits usually follows,
   * its own element-wise kernel); the kernel rounds each value as the interpreter does */
  if (a->o_dtype != NAPKIN_DTYPE_FP32 && a->o_dtype != NAPKIN_DTYPE_FP16 && a->o_dtype != NAPKIN_DTYPE_BF16
      && !(a->o_dtype == NAPKIN_DTYPE_FP8_E4M3 && a->dtype == NAPKIN_DTYPE_FP8_E4M3))
    return g_strdup_printf (_("attention: O must be fp16, bf16 or fp32 (or, with fp8 Q and K, fp8-e4m3), not %s"),
                            napkin_dtype_to_string (a->o_dtype));
  if (a->dtype != NAPKIN_DTYPE_FP8_E4M3 && a->o_dtype != a->dtype && a->o_dtype != NAPKIN_DTYPE_FP32)
    return g_strdup (_("attention: O must have Q's type or fp32"));
  return NULL;
}

/* The region's marks into `a`: every K axis but the keys parallel in groups of 1, the
 * group axis parallel (or whole), the queries parallel (or whole), the keys streamed, d
 * whole, at shared memory; then the mask. NULL, or why not. */
static char *
read_marks (NapkinPlanner       *p,
            NapkinPlanAttention *a,
            const NapkinRegion  *region,
            const NapkinTensor  *K,
            const AttnAxes      *ax,
            const AttnChain     *c)
{
  gint64 mark_tile = 0;
  NapkinMarkKind mk;

  a->n_unit_axes = 0;
  for (guint i = 0; i + 1 < g_strv_length (K->axes); i++)
    {
      gint64 g = 0;
      const char *name = K->axes[i];
      int axis;

      if (g_str_equal (name, ax->key))
        continue;
      axis = napkin_diagram_find_axis (p->d, name);
      if (a->n_unit_axes < NAPKIN_MAX_RANK)
        a->unit_axes[a->n_unit_axes++] = axis;
      mk = napkin_region_mark (region, name, &g);
      if (!(mk == NAPKIN_MARK_PARALLEL && g == 1) && napkin_diagram_axis_size (p->d, axis) != 1)
        return g_strdup_printf (_("attention: batch axis %s must be parallel in groups of 1"), name);
    }
  a->group_tile = 1;
  if (ax->group != NULL)
    {
      mk = napkin_region_mark (region, ax->group, &mark_tile);
      if (mk == NAPKIN_MARK_STREAM)
        return g_strdup_printf (_("attention: the group axis %s must be parallel or whole, not streamed"), ax->group);
      a->group_tile = mk == NAPKIN_MARK_PARALLEL ? MIN (mark_tile, a->group) : a->group;
    }
  a->n_whole_axes = 0;
  a->whole_axes[a->n_whole_axes++] = napkin_diagram_find_axis (p->d, ax->d);
  if (!g_str_equal (ax->d, ax->dv))
    a->whole_axes[a->n_whole_axes++] = napkin_diagram_find_axis (p->d, ax->dv);
  mk = napkin_region_mark (region, ax->query, &a->BQ);
  if (mk == NAPKIN_MARK_WHOLE)
    a->BQ = a->NQ;
  if (mk == NAPKIN_MARK_STREAM || napkin_region_mark (region, ax->key, &a->BKV) != NAPKIN_MARK_STREAM
      || napkin_region_mark (region, ax->d, NULL) != NAPKIN_MARK_WHOLE
      || napkin_region_mark (region, ax->dv, NULL) != NAPKIN_MARK_WHOLE)
    {
      g_autofree char *heads = g_str_equal (ax->d, ax->dv) ? g_strdup (ax->d) : g_strdup_printf ("%s and %s", ax->d, ax->dv);

      return g_strdup_printf (_("attention: region “%s” must group %s, stream %s and keep %s whole"), region->name,
                              ax->query, ax->key, heads);
    }
  if (region->level != NAPKIN_LEVEL_SMEM)
    return g_strdup_printf (_("attention: region “%s” is at %s, not shared memory"), region->name,
                            napkin_level_to_string (region->level));
  if (c->mask >= 0)
    return read_mask (a, napkin_diagram_node (p->d, c->mask), ax, c->mask_then_negative);
  return NULL;
}

/* A key chunk the Hopper kernel cannot hold (the consumers' registers, shared memory) run
 * as 2 to 8 equal parts, each the kernel's chunk (a multiple of 16 keys, 32 for fp8 P·V),
 * as the mma.sync kernel runs halves: the same online softmax over the same keys, so the
 * region's stream tile is a hint like its stages, and the model prices the parts. TRUE
 * with *a the parts' plan. */
static gboolean
wgmma_parts (NapkinPlanner       *p,
             NapkinPlanAttention *a)
{
  const gint64 step = a->v_dtype == NAPKIN_DTYPE_FP8_E4M3 ? 32 : 16;

  for (guint parts = 2; parts <= 8; parts++)
    {
      NapkinPlanAttention part = *a;
      g_autofree char *why = NULL;

      if (a->BKV % parts || (a->BKV / parts) % step)
        continue;
      part.BKV = a->BKV / parts;
      why = wgmma_refusal (p, &part);
      if (why != NULL)
        continue;
      *a = part;
      a->bkv_parts = parts;
      _napkin_plan_attention_count_tiles (a);
      return TRUE;
    }
  return FALSE;
}

/* Persistent attention (docs/plan.md, "Attention kernels"): where all the keys are one
 * chunk (a mask hides keys of it, or whole tiles, which are skipped) and nothing cuts them
 * or adds to the scores, a block's time is mostly its Q arriving and its O
 * leaving, which one block an SM does not overlap with anything. Then one block an SM
 * walks a range of the tiles, copying the Q of the next ones (as many buffers, up to 4, as
 * fit) while it computes this one; K and V are loaded once per matrix its range reaches.
 * Taken from two waves of tiles up. The region's chunk of keys is a hint here too: keys
 * it cuts into a few chunks (77 text tokens by 64) are taken as one chunk where the
 * kernel holds it (up to 256 keys), since one tile a block of two chunks ran 1.3–1.7×
 * slower than the persistent walk (docs/perf-notes.md, "Session 12").
 * NAPKIN_NO_PERSISTENT_ATTENTION=1 keeps one tile a block (for A/B runs). */
#define PERSIST_MAX_Q_BUFFERS 4

static void
choose_persistent (NapkinPlanner       *p,
                   NapkinPlanAttention *a,
                   gint64               base)
{
  NapkinPlanAttention t = *a;

  a->persist_tiles = 0;
  a->q_buffers = 1;
  a->bkv_asked = 0;
  if (_napkin_plan_env_flag ("NAPKIN_NO_PERSISTENT_ATTENTION") || a->n_scores > 0 || a->split_kv > 1
      || a->vt_in_kernel || a->bkv_parts > 1 || base < 2 * (gint64) p->arch->sms)
    return;
  if (a->NKV > a->BKV)
    {
      const gint64 step = a->v_dtype == NAPKIN_DTYPE_FP8_E4M3 ? 32 : 16;
      g_autofree char *why = NULL;

      t.BKV = ceil_div (a->NKV, step) * step;
      if (t.BKV > 256)
        return;
      t.stages = 2;
      why = wgmma_refusal (p, &t);
      if (why != NULL)
        return;
      t.bkv_asked = a->BKV;
      _napkin_plan_attention_count_tiles (&t);
    }
  /* one stage holds the K/V in use, the other the next matrix's; where two stages and two
   * Q buffers do not fit (D 256: a K/V stage of 77 keys is 40 KiB), one stage: the next
   * matrix's K/V waits for the consumers to finish the last, once in a range (a block's
   * range reaches one or two matrices), while Q stays copied ahead */
  t.persist_tiles = base;
  for (t.stages = 2; t.stages >= 1; t.stages--)
    for (t.q_buffers = PERSIST_MAX_Q_BUFFERS; t.q_buffers >= 2; t.q_buffers--)
      if (wgmma_smem (&t) <= (gint64) p->arch->smem_max_per_block)
        {
          t.stages_asked = 0;
          *a = t;
          return;
        }
}

/* The Hopper kernel where it takes the attention; else FALSE and *hopper says why. */
static gboolean
plan_hopper (NapkinPlanner    *p,
             NapkinPlanKernel *k,
             const AttnChain  *c,
             gint64            base,
             char            **hopper)
{
  NapkinPlanAttention *a = &k->u.att;

  if (!(p->sm >= 90 && p->sm < 100 && !(p->options && p->options->no_wgmma)))
    return FALSE;
  *hopper = wgmma_refusal (p, a);
  if (*hopper != NULL && !wgmma_parts (p, a))
    return FALSE;
  g_clear_pointer (hopper, g_free);
  k->kind = NAPKIN_PLAN_ATTENTION;
  k->path = NAPKIN_PATH_WGMMA;
  /* the consumers' setmaxnreg takes the register file: one block an SM */
  choose_split (p, a, base, 1);
  choose_persistent (p, a, base);
  /* exp on the FMA units: generated on this path only (kernels/attn-sm90.cu) */
  a->exp_fma = napkin_diagram_node (p->d, c->sm)->exp_fma;
  a->legacy = FALSE;   /* every shape on the general kernel (legacy_shape) */
  a->overlap = a->stages >= 3 || a->BKV >= 128;
  k->grid = a->persist_tiles > 0 ? MIN (base, (gint64) p->arch->sms) : base * a->split_kv;
  choose_band (p->arch, a, k->grid);
  k->threads = 128 * (1 + a->consumers);
  k->smem_bytes = wgmma_smem (a);
  k->registers = a->consumer_regs;
  if (a->v_dtype == NAPKIN_DTYPE_FP8_E4M3 && !a->vt_in_kernel)
    add_v_transpose (p, k);
  if (a->split_kv > 1)
    add_combine (p, k);
  {
    g_autofree char *parts = a->bkv_parts > 1
                             ? g_strdup_printf (_("the region's chunks of %lld keys run as %u of %lld (registers "
                                                  "and shared memory)"),
                                                (long long) (a->BKV * a->bkv_parts), a->bkv_parts, (long long) a->BKV)
                             : NULL;

    attention_note (k, parts);
  }
  return TRUE;
}

/* The mma.sync kernel where it takes the attention; else why not (newly allocated). */
static char *
plan_ampere (NapkinPlanner    *p,
             NapkinPlanKernel *k,
             const AttnAxes   *ax,
             gint64            base,
             const char       *hopper)
{
  NapkinPlanAttention *a = &k->u.att;
  g_autofree char *halves = NULL;
  g_autofree char *extra = NULL;
  char *mma = mma_plan (p, a);

  if (mma != NULL)
    return mma;
  if (a->bkv_parts > 1)
    halves = g_strdup_printf (_("the region's chunks of %lld keys run as %u of %lld (registers)"),
                              (long long) (a->BKV * a->bkv_parts), a->bkv_parts, (long long) a->BKV);
  extra = hopper ? g_strdup_printf (_("wgmma not used: %s%s%s"), hopper, halves ? "; " : "", halves ? halves : "")
                 : g_steal_pointer (&halves);
  k->kind = NAPKIN_PLAN_ATTENTION;
  k->path = NAPKIN_PATH_MMA;
  /* a warp per 16 rows; at least 4 warps copy the chunks (decoding) */
  k->threads = MAX (a->consumers, 4u) * 32;
  k->registers = a->consumer_regs;
  k->smem_bytes = mma_smem (a, ceil_div (a->rows, 16) * 16, a->stages == 1 ? 1 : 2);
  /* blocks an SM holds: registers, shared memory, threads */
  k->blocks_per_sm = MAX (1, MIN (MIN (p->arch->registers_per_sm / (k->threads * k->registers),
                                       (guint) (p->arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes
                                                / (k->smem_bytes + p->arch->smem_reserved_per_block))),
                                  MIN (p->arch->max_threads_per_sm / k->threads,
                                       MAX (1u, p->arch->max_blocks_per_sm))));
  choose_split (p, a, base, k->blocks_per_sm);
  a->legacy = legacy_shape (a, ax);
  if (a->legacy)
    k->threads = a->consumers * 32;   /* the skeleton's: a warp per 16 rows */
  k->grid = base * a->split_kv;
  if (a->split_kv > 1)
    add_combine (p, k);
  attention_note (k, extra);
  return NULL;
}

/* Refuses the kernel with `why` (taken): the attention fields cleared. */
static gboolean
refuse (NapkinPlanKernel *k,
        char            **why,
        char             *reason)
{
  *why = reason;
  memset (&k->u, 0, sizeof k->u);
  return FALSE;
}

gboolean
_napkin_plan_try_attention (NapkinPlanner    *p,
                            NapkinPlanKernel *k,
                            char            **why)
{
  NapkinPlanAttention *a = &k->u.att;
  const NapkinRegion *region;
  NapkinTensor tq, tk, tv, to;
  const char *nq[NAPKIN_MAX_RANK + 1], *nk[NAPKIN_MAX_RANK + 1], *nv[NAPKIN_MAX_RANK + 1], *no[NAPKIN_MAX_RANK + 1];
  g_autofree char *hopper = NULL;
  char *reason, *mma;
  AttnChain c;
  AttnAxes ax;
  gint64 base;

  if (k->region < 0 || !find_chain (p, k, &c))
    return FALSE;
  region = napkin_diagram_region (p->d, k->region);
  if (!c.read_after || !_napkin_plan_attention_value (p, c.q_src, &tq, nq)
      || !_napkin_plan_attention_value (p, c.k_src, &tk, nk)
      || !_napkin_plan_attention_value (p, napkin_diagram_input_source (p->d, c.pv, 1), &tv, nv) || !_napkin_plan_attention_value (p, c.pv, &to, no))
    {
      *why = g_strdup (_("attention: Q, K, V and the output need known types"));
      return FALSE;
    }

  memset (a, 0, sizeof *a);
  a->partials = a->v_t = a->stats_scratch = a->stats_o32 = -1;
  a->lead_first = -1;
  a->bkv_parts = 1;
  a->q_scale = a->k_scale = a->v_scale = 1.0;
  a->window_left = a->window_right = -1;
  reason = attention_layout (p, a, &tq, &tk, &tv, &to, napkin_diagram_node (p->d, c.sm)->axis,
                             c.mask >= 0 ? napkin_diagram_node (p->d, c.mask)->rows : NULL, &ax);
  if (reason != NULL)
    {
      g_autofree char *layout = reason;

      return refuse (k, why, g_strdup_printf ("attention: %s", layout));
    }
  if ((reason = read_dtypes (p, a, &tq, &tk, &tv, &to)) != NULL
      || (reason = read_marks (p, a, region, &tk, &ax, &c)) != NULL)
    return refuse (k, why, reason);
  a->BQ = MIN (a->BQ, a->NQ);
  a->rows = a->group_tile * a->BQ;
  /* the key chunk is a hint: one the tensor cores cannot take (40 keys; all 77 keys of a
   * text encoder) runs as the next multiple of the kernel's step, the keys past the axis
   * masked like any edge (as a GEMM tile over a whole axis: docs/plan.md) */
  {
    const gint64 step = a->v_dtype == NAPKIN_DTYPE_FP8_E4M3 ? 32 : 16;
    const gint64 up = (a->BKV + step - 1) / step * step;

    if (a->BKV % step != 0)
      {
        g_ptr_array_add (k->adjustments,
                         a->BKV >= a->NKV
                           ? g_strdup_printf (_("the chunk of all %lld keys runs as one of %lld, the keys past %lld "
                                                "masked"), (long long) a->BKV, (long long) up, (long long) a->NKV)
                           : g_strdup_printf (_("chunks of %lld keys run as chunks of %lld (the tensor cores take "
                                                "multiples of %lld)"), (long long) a->BKV, (long long) up,
                                              (long long) step));
        a->BKV = up;
      }
  }
  if ((reason = read_scores (p, a, &c, &tk, &ax)) != NULL)
    return refuse (k, why, reason);
  a->stages = MAX (2u, region->stages);
  a->alpha = c.alpha;
  a->q = (NapkinPlanBuffer) { c.q_src, -1, a->dtype };
  a->k = (NapkinPlanBuffer) { c.k_view >= 0 ? napkin_diagram_input_source (p->d, c.k_view, 0) : c.k_src, -1,
                              a->dtype };
  a->v = (NapkinPlanBuffer) { c.v_view >= 0 ? napkin_diagram_input_source (p->d, c.v_view, 0)
                                             : napkin_diagram_input_source (p->d, c.pv, 1), -1, a->v_dtype };
  a->o = (NapkinPlanBuffer) { c.pv, -1, a->o_dtype };
  _napkin_plan_attention_count_tiles (a);
  base = a->kv_batch * ceil_div (a->group, a->group_tile) * ceil_div (a->NQ, a->BQ);

  if (plan_hopper (p, k, &c, base, &hopper))
    return TRUE;
  a->stages = MAX (2u, region->stages);
  a->stages_asked = 0;
  mma = plan_ampere (p, k, &ax, base, hopper);
  if (mma == NULL)
    return TRUE;
  reason = g_strdup_printf ("attention: %s", hopper ? hopper : mma);
  g_free (mma);
  return refuse (k, why, reason);
}

/* ---- shared with the backward's recogniser (src/plan/napkin-plan-attn-bwd.c) -------------- */

char *
_napkin_plan_attention_layout (NapkinPlanner       *p,
                               NapkinPlanAttention *a,
                               const NapkinTensor  *Q,
                               const NapkinTensor  *K,
                               const NapkinTensor  *V,
                               const NapkinTensor  *O,
                               const char          *key,
                               const char          *preferred,
                               const char         **query)
{
  AttnAxes ax;
  char *why = attention_layout (p, a, Q, K, V, O, key, preferred, &ax);

  *query = ax.query;
  return why;
}

char *
_napkin_plan_attention_strides (NapkinPlanner             *p,
                                const NapkinPlanAttention *a,
                                const NapkinTensor        *t,
                                const NapkinTensor        *like,
                                const char                *t_name,
                                const char                *like_name,
                                int                        row_axis,
                                int                        group_axis,
                                gint64                    *lead,
                                gint64                    *row,
                                gint64                    *group)
{
  guint rank = g_strv_length (t->axes);

  if (rank != g_strv_length (like->axes) || !g_str_equal (t->axes[rank - 1], like->axes[rank - 1]))
    return g_strdup_printf (_("%s must have %s's axes, %s last"), t_name, like_name, like->axes[rank - 1]);
  for (guint i = 0; i + 1 < rank; i++)
    if (axis_index (t->axes, like->axes[i]) < 0)
      return g_strdup_printf (_("%s lacks %s's axis %s"), t_name, like_name, like->axes[i]);
  for (guint l = 0; l < a->n_lead; l++)
    lead[l] = stride_of (p, t->axes, napkin_diagram_axis (p->d, (guint) a->lead_axis[l])->name);
  *row = stride_of (p, t->axes, napkin_diagram_axis (p->d, (guint) row_axis)->name);
  if (group != NULL)
    *group = group_axis >= 0 ? stride_of (p, t->axes, napkin_diagram_axis (p->d, (guint) group_axis)->name) : 0;
  return NULL;
}

char *
_napkin_plan_attention_score_strides (NapkinPlanner             *p,
                                      const NapkinPlanAttention *a,
                                      int                        value,
                                      const NapkinTensor        *K,
                                      const char                *key,
                                      const char                *id,
                                      NapkinPlanAttnScore       *sc)
{
  const char *names[NAPKIN_MAX_RANK + 1];
  AttnAxes ax = { 0 };
  NapkinTensor x;

  if (!_napkin_plan_attention_value (p, value, &x, names))
    return g_strdup_printf (_("attention: the operand of “%s” needs a known type"), id);
  ax.key = key;
  ax.query = napkin_diagram_axis (p->d, (guint) a->query_axis)->name;
  ax.group = a->group_axis >= 0 ? napkin_diagram_axis (p->d, (guint) a->group_axis)->name : NULL;
  return score_layout (p, sc, &x, K, &ax, id);
}

char *
_napkin_plan_attention_add_score (NapkinPlanner       *p,
                                  NapkinPlanAttention *a,
                                  int                  node,
                                  int                  port,
                                  double               weight,
                                  const NapkinTensor  *K,
                                  const char          *key)
{
  NapkinPlanAttnScore *sc = &a->scores[a->n_scores];
  const NapkinNode *n = napkin_diagram_node (p->d, (guint) node);
  int src = napkin_diagram_input_source (p->d, (guint) node, (guint) port);
  const NapkinTensorType *type = src >= 0 ? napkin_diagram_node_type (p->d, (guint) src) : NULL;
  char *why;

  if (a->n_scores >= NAPKIN_ATTN_MAX_SCORES)
    return g_strdup_printf (_("attention: more than %d score operands"), NAPKIN_ATTN_MAX_SCORES);
  if (type == NULL)
    return g_strdup_printf (_("attention: the operand of “%s” needs a known type"), n->id);
  memset (sc, 0, sizeof *sc);
  sc->kind = n->kind == NAPKIN_OP_MASK ? NAPKIN_ATTN_SCORE_KEEP : NAPKIN_ATTN_SCORE_BIAS;
  sc->node = node;
  sc->dtype = type->dtype;
  if (sc->kind == NAPKIN_ATTN_SCORE_KEEP && sc->dtype != NAPKIN_DTYPE_INT8)
    return g_strdup_printf (_("attention: the mask “%s” keeps by %s flags; the kernels read int8"), n->id,
                            napkin_dtype_to_string (sc->dtype));
  if (sc->kind == NAPKIN_ATTN_SCORE_BIAS && sc->dtype != NAPKIN_DTYPE_FP16 && sc->dtype != NAPKIN_DTYPE_BF16
      && sc->dtype != NAPKIN_DTYPE_FP32)
    return g_strdup_printf (_("attention: the bias of “%s” is %s; the kernels add fp16, bf16 or fp32"), n->id,
                            napkin_dtype_to_string (sc->dtype));
  if ((why = _napkin_plan_attention_score_strides (p, a, src, K, key, n->id, sc)) != NULL)
    return why;
  sc->x = (NapkinPlanBuffer) { src, -1, sc->dtype };
  sc->coef = sc->kind == NAPKIN_ATTN_SCORE_BIAS ? weight / a->alpha : 0;
  sc->rows = 16;
  sc->vec = napkin_dtype_bytes (sc->dtype);
  a->n_scores++;
  return NULL;
}

char *
_napkin_plan_attention_read_mask (NapkinPlanAttention *a,
                                  const NapkinNode    *mask,
                                  const char          *key,
                                  const char          *query)
{
  AttnAxes ax = { 0 };

  ax.key = key;
  ax.query = query;
  return read_mask (a, mask, &ax, FALSE);
}
