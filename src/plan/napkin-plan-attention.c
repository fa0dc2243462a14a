/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <string.h>

#include "napkin-plan-private.h"

/* Fused attention (docs/plan.md, "Attention"): Q·Kᵀ → [scale] → softmax over the keys →
 * ·V in one region, the keys streamed with the online softmax. Hopper runs it on wgmma
 * (flash-wgmma: TMA, a producer warpgroup, one consumer warpgroup per 64 queries),
 * other GPUs on mma.sync (flash-mma). The limits below are those kernels'. */

#define FLASH_WGMMA_MAX_CONSUMERS 3

static gboolean
same_prefix (char **a,
             char **b,
             guint  n)
{
  for (guint i = 0; i < n; i++)
    if (!g_str_equal (a[i], b[i]))
      return FALSE;
  return TRUE;
}

static const NapkinTensor *
tensor_of (NapkinPlanner *p,
           int            node)
{
  return napkin_diagram_tensor (p->d, napkin_diagram_find_tensor (p->d, napkin_diagram_node (p->d, node)->tensor));
}

/* The flash-wgmma kernel's limits, or why not (NULL: it takes the shape). */
static char *
wgmma_refusal (NapkinPlanner             *p,
               const NapkinPlanAttention *a,
               gint64                    *smem,
               guint                     *threads)
{
  gint64 consumers = a->BQ / 64, producer = consumers >= 3 ? 32 : 56;
  gint64 consumer_regs = MIN (240, (65536 - 128 * producer) / (128 * MAX (1, consumers)) / 8 * 8);
  gint64 need = 3 * a->BKV / 4 + a->D / 2 + 32;

  *smem = 1024 + a->BQ * a->D * 2 + 2 * (gint64) a->stages * a->BKV * a->D * 2 + 8 * (1 + 3 * (gint64) a->stages);
  *threads = (guint) (128 * (1 + consumers));
  if (a->D != 64 && a->D != 128)
    return g_strdup_printf ("head size %" G_GINT64_FORMAT "; the attention kernels take 64 or 128", a->D);
  if (a->BQ % 64 || a->BKV % 16 || a->BKV > 256)
    return g_strdup_printf ("groups of %" G_GINT64_FORMAT " queries and chunks of %" G_GINT64_FORMAT " keys: the "
                            "queries must be a multiple of 64 (one consumer warpgroup each) and the keys a multiple "
                            "of 16, at most 256", a->BQ, a->BKV);
  if (a->NQ % a->BQ || a->NKV % a->BKV)
    return g_strdup_printf ("%" G_GINT64_FORMAT " queries and %" G_GINT64_FORMAT " keys must be multiples of the "
                            "groups (%" G_GINT64_FORMAT ") and chunks (%" G_GINT64_FORMAT ")", a->NQ, a->NKV, a->BQ,
                            a->BKV);
  if (*smem > (gint64) p->arch->smem_max_per_block)
    return g_strdup_printf ("Q (%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ") and %u stages of K and V chunks need %"
                            G_GINT64_FORMAT " bytes of shared memory; %s allows %.0f", a->BQ, a->D, a->stages, *smem,
                            p->arch->id, p->arch->smem_max_per_block);
  if (consumers > FLASH_WGMMA_MAX_CONSUMERS)
    return g_strdup_printf ("%" G_GINT64_FORMAT " queries per block need %" G_GINT64_FORMAT " consumer warpgroups; "
                            "at most %d share the 64K registers", a->BQ, consumers, FLASH_WGMMA_MAX_CONSUMERS);
  if (need > consumer_regs)
    return g_strdup_printf ("chunks of %" G_GINT64_FORMAT " keys at d = %" G_GINT64_FORMAT " need about %"
                            G_GINT64_FORMAT " registers per consumer thread; %" G_GINT64_FORMAT " consumer "
                            "warpgroups get %" G_GINT64_FORMAT, a->BKV, a->D, need, consumers, consumer_regs);
  if (a->batch * MAX (a->NQ, a->NKV) > G_MAXINT32)
    return g_strdup ("tensor-map coordinates are 32-bit: batch × sequence must stay below 2³¹ rows");
  return NULL;
}

static char *
mma_refusal (NapkinPlanner             *p,
             const NapkinPlanAttention *a,
             gint64                    *smem,
             guint                     *threads)
{
  *smem = (a->BQ + 4 * a->BKV) * (a->D + 8) * 2;
  *threads = (guint) (a->BQ / 16 * 32);
  if (a->D != 64 && a->D != 128)
    return g_strdup_printf ("head size %" G_GINT64_FORMAT "; the attention kernels take 64 or 128", a->D);
  if (a->BQ % 16 || a->BQ / 16 > 16 || a->BKV % 16 || a->NQ % a->BQ || a->NKV % a->BKV)
    return g_strdup_printf ("groups of %" G_GINT64_FORMAT " queries and chunks of %" G_GINT64_FORMAT " keys must "
                            "be multiples of 16 dividing %" G_GINT64_FORMAT " and %" G_GINT64_FORMAT " (and at most "
                            "256 queries)", a->BQ, a->BKV, a->NQ, a->NKV);
  if (*smem > (gint64) p->arch->smem_max_per_block)
    return g_strdup_printf ("%" G_GINT64_FORMAT " bytes of shared memory; %s allows %.0f", *smem, p->arch->id,
                            p->arch->smem_max_per_block);
  return NULL;
}

gboolean
_napkin_plan_try_attention (NapkinPlanner    *p,
                            NapkinPlanKernel *k,
                            char            **why)
{
  NapkinPlanAttention *a = &k->u.att;
  const NapkinRegion *region;
  int qk = -1, scale = -1, sm = -1, pv = -1, contracts = 0;
  guint n_consumers, rank;
  const guint *consumers;
  const NapkinNode *qn, *kn, *vn, *on;
  const NapkinTensor *Q, *K, *V, *O;
  gint64 smem = 0;
  guint threads = 0;
  g_autofree char *hopper = NULL;
  char *mma;

  if (k->region < 0)
    return FALSE;
  region = napkin_diagram_region (p->d, k->region);
  for (guint i = 0; i < k->nodes->len; i++)
    {
      guint n = g_array_index (k->nodes, guint, i);
      const NapkinNode *node = napkin_diagram_node (p->d, n);

      if (node->kind == NAPKIN_OP_SOFTMAX)
        sm = n;
      else if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SCALE && scale < 0)
        scale = n;
      else if (node->kind == NAPKIN_OP_CONTRACT)
        contracts++;
      else
        return FALSE;
    }
  if (sm < 0 || contracts != 2 || k->nodes->len != (scale >= 0 ? 4u : 3u))
    return FALSE;
  consumers = napkin_diagram_consumers (p->d, sm, &n_consumers);
  if (n_consumers != 1)
    return FALSE;
  pv = consumers[0];
  qk = napkin_diagram_input_source (p->d, scale >= 0 ? scale : sm, 0);
  if (scale >= 0 && napkin_diagram_input_source (p->d, sm, 0) != scale)
    return FALSE;
  if (qk < 0 || napkin_diagram_node (p->d, qk)->kind != NAPKIN_OP_CONTRACT
      || napkin_diagram_node (p->d, pv)->kind != NAPKIN_OP_CONTRACT || !_napkin_plan_in_kernel (k, qk)
      || !_napkin_plan_in_kernel (k, pv) || napkin_diagram_input_source (p->d, pv, 0) != sm)
    return FALSE;
  qn = napkin_diagram_node (p->d, napkin_diagram_input_source (p->d, qk, 0));
  kn = napkin_diagram_node (p->d, napkin_diagram_input_source (p->d, qk, 1));
  vn = napkin_diagram_node (p->d, napkin_diagram_input_source (p->d, pv, 1));
  consumers = napkin_diagram_consumers (p->d, pv, &n_consumers);
  if (qn->kind != NAPKIN_OP_INPUT || kn->kind != NAPKIN_OP_INPUT || vn->kind != NAPKIN_OP_INPUT || n_consumers != 1
      || napkin_diagram_node (p->d, consumers[0])->kind != NAPKIN_OP_OUTPUT)
    {
      *why = g_strdup ("attention: Q, K and V must be inputs and the output one tensor");
      return FALSE;
    }
  on = napkin_diagram_node (p->d, consumers[0]);
  Q = tensor_of (p, napkin_diagram_input_source (p->d, qk, 0));
  K = tensor_of (p, napkin_diagram_input_source (p->d, qk, 1));
  V = tensor_of (p, napkin_diagram_input_source (p->d, pv, 1));
  O = tensor_of (p, consumers[0]);
  (void) on;
  rank = g_strv_length (Q->axes);
  if (rank < 2 || g_strv_length (K->axes) != rank || g_strv_length (V->axes) != rank || g_strv_length (O->axes) != rank
      || !same_prefix (Q->axes, K->axes, rank - 2) || !same_prefix (Q->axes, V->axes, rank - 2)
      || !same_prefix (Q->axes, O->axes, rank - 1) || !g_str_equal (Q->axes[rank - 1], K->axes[rank - 1])
      || !g_str_equal (K->axes[rank - 2], V->axes[rank - 2]) || !g_str_equal (Q->axes[rank - 1], V->axes[rank - 1])
      || !g_str_equal (Q->axes[rank - 1], O->axes[rank - 1])
      || !g_str_equal (napkin_diagram_node (p->d, sm)->axis, K->axes[rank - 2]))
    {
      *why = g_strdup ("attention: the layouts must be Q[…,q,d], K[…,k,d], V[…,k,d], O[…,q,d] with softmax over k");
      return FALSE;
    }
  a->dtype = p->options && p->options->has_dtype ? p->options->dtype : Q->dtype;
  a->o_dtype = p->options && p->options->has_dtype ? p->options->dtype : O->dtype;
  if ((a->dtype != NAPKIN_DTYPE_FP16 && a->dtype != NAPKIN_DTYPE_BF16)
      || (!(p->options && p->options->has_dtype) && (K->dtype != Q->dtype || V->dtype != Q->dtype)))
    {
      *why = g_strdup_printf ("attention: Q, K and V must all be fp16 or all bf16 (fp8 attention is not generated "
                              "yet), not %s", napkin_dtype_to_string (Q->dtype));
      return FALSE;
    }
  if (a->o_dtype != a->dtype && a->o_dtype != NAPKIN_DTYPE_FP32)
    {
      *why = g_strdup ("attention: O must have Q's type or fp32");
      return FALSE;
    }
  a->batch = 1;
  for (guint i = 0; i + 2 < rank; i++)
    {
      gint64 g = 0;
      NapkinMarkKind mk = napkin_region_mark (region, Q->axes[i], &g);
      gint64 size = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, Q->axes[i]));

      if (!(mk == NAPKIN_MARK_PARALLEL && g == 1) && size != 1)
        {
          *why = g_strdup_printf ("attention: batch axis %s must be parallel in groups of 1", Q->axes[i]);
          return FALSE;
        }
      a->batch *= size;
    }
  if (napkin_region_mark (region, Q->axes[rank - 2], &a->BQ) != NAPKIN_MARK_PARALLEL
      || napkin_region_mark (region, K->axes[rank - 2], &a->BKV) != NAPKIN_MARK_STREAM
      || napkin_region_mark (region, Q->axes[rank - 1], NULL) != NAPKIN_MARK_WHOLE)
    {
      *why = g_strdup_printf ("attention: region “%s” must group %s, stream %s and keep %s whole", region->name,
                              Q->axes[rank - 2], K->axes[rank - 2], Q->axes[rank - 1]);
      return FALSE;
    }
  if (region->level != NAPKIN_LEVEL_SMEM)
    {
      *why = g_strdup_printf ("attention: region “%s” is at %s, not shared memory", region->name,
                              napkin_level_to_string (region->level));
      return FALSE;
    }
  a->NQ = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, Q->axes[rank - 2]));
  a->NKV = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, K->axes[rank - 2]));
  a->D = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, Q->axes[rank - 1]));
  a->BQ = MIN (a->BQ, a->NQ);
  a->BKV = MIN (a->BKV, a->NKV);
  a->stages = MAX (2u, region->stages);
  a->alpha = scale >= 0 ? napkin_diagram_node (p->d, scale)->alpha : 1.0;
  a->q = (NapkinPlanBuffer) { napkin_diagram_input_source (p->d, qk, 0), -1, a->dtype };
  a->k = (NapkinPlanBuffer) { napkin_diagram_input_source (p->d, qk, 1), -1, a->dtype };
  a->v = (NapkinPlanBuffer) { napkin_diagram_input_source (p->d, pv, 1), -1, a->dtype };
  a->o = (NapkinPlanBuffer) { pv, -1, a->o_dtype };

  if (p->sm >= 90 && p->sm < 100 && !(p->options && p->options->no_wgmma))
    {
      hopper = wgmma_refusal (p, a, &smem, &threads);
      if (hopper == NULL)
        {
          k->kind = NAPKIN_PLAN_ATTENTION;
          k->path = NAPKIN_PATH_WGMMA;
          k->grid = a->batch * (a->NQ / a->BQ);
          k->threads = threads;
          k->smem_bytes = smem;
          k->registers = a->BQ / 64 >= 3 ? 160 : 224;
          k->note = g_strdup_printf ("fused attention, %" G_GINT64_FORMAT " queries a block, keys in chunks of %"
                                     G_GINT64_FORMAT " through %u stages, TMA loads, wgmma, online softmax in "
                                     "registers", a->BQ, a->BKV, a->stages);
          return TRUE;
        }
    }
  mma = mma_refusal (p, a, &smem, &threads);
  if (mma == NULL)
    {
      k->kind = NAPKIN_PLAN_ATTENTION;
      k->path = NAPKIN_PATH_MMA;
      k->grid = a->batch * (a->NQ / a->BQ);
      k->threads = threads;
      k->smem_bytes = smem;
      k->registers = 175;
      k->note = g_strdup_printf ("fused attention, %" G_GINT64_FORMAT " queries a block, keys in chunks of %"
                                 G_GINT64_FORMAT " (double-buffered), mma.sync, online softmax in registers%s%s",
                                 a->BQ, a->BKV, hopper ? "; wgmma not used: " : "", hopper ? hopper : "");
      return TRUE;
    }
  *why = g_strdup_printf ("attention: %s", hopper ? hopper : mma);
  g_free (mma);
  memset (&k->u, 0, sizeof k->u);
  return FALSE;
}
