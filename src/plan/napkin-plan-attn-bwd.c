/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>

#include <string.h>

#include "napkin-plan-private.h"

/* The fused attention backward (docs/plan.md, "Attention backward"): the operations the
 * backward diagram of O = softmax (α·Q·Kᵀ, masked)·V computes dQ, dK and dV with when the
 * softmax is recomputed — Q·Kᵀ again, its scale and mask, the softmax, dP = dO·Vᵀ,
 * dV = Pᵀ·dO, the row term Σ dO⊙O, dS = P⊙(dP − row), the mask's gate and the scale's
 * adjoint, dQ = dS·K, dK = dSᵀ·Q — found by how the values flow and which axes each
 * product contracts, never by names, and run as one kernel of FlashAttention-2's shape
 * (kernels/attn-bwd-sm80.cu) that never writes a [q, k] value. */

typedef struct
{
  const NapkinPlanKernel *within;   /* the kernel whose nodes these are, or NULL: outside regions */
  const gboolean         *taken;    /* outside regions: nodes another kernel took, or NULL */
  GArray                 *nodes;
} Group;

typedef struct
{
  int    sm, qk, q, k, mask;
  double alpha;
  int    dv, dp, d_o, v, red, dq, dk;
  double d_alpha;
  /* score operands between Q·Kᵀ and the softmax (biases added, tensor masks), from the
   * softmax back: the operation, its operand's port and, for a bias, the scales after it */
  guint  n_scores;
  int    score[NAPKIN_ATTN_MAX_SCORES], score_port[NAPKIN_ATTN_MAX_SCORES];
  double score_after[NAPKIN_ATTN_MAX_SCORES];
  /* a bias's gradient asked for: the sums over the axes it lacks of d_bias_weight·dS,
   * the value that leaves the kernel (−1: none) */
  int    d_bias;
  double d_bias_weight;
} Roles;

static gboolean
free_node (NapkinPlanner *p,
           const Group   *g,
           int            n)
{
  if (n < 0)
    return FALSE;
  if (g->within != NULL)
    return _napkin_plan_member (p, g->within, n);
  return p->top[n] < 0 && (g->taken == NULL || !g->taken[n]);
}

static void
take (Group *g,
      int    n)
{
  guint u = (guint) n;

  for (guint i = 0; i < g->nodes->len; i++)
    if (g_array_index (g->nodes, guint, i) == u)
      return;
  g_array_append_val (g->nodes, u);
}

static int
only_consumer (NapkinPlanner *p,
               int            n)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, (guint) n, &n_consumers);

  return n_consumers == 1 ? (int) consumers[0] : -1;
}

static gboolean
is_map (NapkinPlanner *p,
        int            n,
        NapkinMapFn    fn)
{
  const NapkinNode *node = n >= 0 ? napkin_diagram_node (p->d, (guint) n) : NULL;

  return node != NULL && node->kind == NAPKIN_OP_MAP && node->fn == fn;
}

/* Back from `n` through casts the group may take (each read once): the value they cast. */
static int
under_casts (NapkinPlanner *p,
             Group         *g,
             int            n)
{
  while (is_map (p, n, NAPKIN_FN_CAST) && free_node (p, g, n) && only_consumer (p, n) >= 0)
    {
      take (g, n);
      n = napkin_diagram_input_source (p->d, (guint) n, 0);
    }
  return n;
}

/* The input of the two-input node `n` that is not `one`, or −1 where neither or both are. */
static int
other_input (NapkinPlanner *p,
             int            n,
             int            one)
{
  int a = napkin_diagram_input_source (p->d, (guint) n, 0), b = napkin_diagram_input_source (p->d, (guint) n, 1);

  if ((a == one) == (b == one))
    return -1;
  return a == one ? b : a;
}

static const NapkinTensorType *
type_of (NapkinPlanner *p,
         int            n)
{
  const NapkinTensorType *t = n >= 0 ? napkin_diagram_node_type (p->d, (guint) n) : NULL;

  return t != NULL && t->valid ? t : NULL;
}

/* Whether product `c` sums exactly the axes of `summed` (a bit per axis) and the other
 * operand is `other` (returned through *port: the port of `x`). */
static gboolean
sums (NapkinPlanner *p,
      int            c,
      int            x,
      guint64        summed,
      int           *other)
{
  const NapkinTensorType *tx, *ty, *to = type_of (p, c);
  guint64 seen = 0;
  int y;

  if (c < 0 || napkin_diagram_node (p->d, (guint) c)->kind != NAPKIN_OP_CONTRACT || to == NULL
      || (y = other_input (p, c, x)) < 0 || (tx = type_of (p, x)) == NULL || (ty = type_of (p, y)) == NULL)
    return FALSE;
  for (guint i = 0; i < tx->n_axes + ty->n_axes; i++)
    {
      guint axis = i < tx->n_axes ? tx->axes[i] : ty->axes[i - tx->n_axes];

      if (!napkin_tensor_type_has_axis (to, axis) && axis < 64)
        seen |= G_GUINT64_CONSTANT (1) << axis;
    }
  *other = y;
  return seen == summed;
}

static guint64
bit (int axis)
{
  return axis >= 0 && axis < 64 ? G_GUINT64_CONSTANT (1) << axis : 0;
}

/* The axes of `t` that `u` lacks, as bits. */
static guint64
lacking (const NapkinTensorType *t,
         const NapkinTensorType *u)
{
  guint64 b = 0;

  for (guint i = 0; i < t->n_axes; i++)
    if (!napkin_tensor_type_has_axis (u, t->axes[i]))
      b |= bit ((int) t->axes[i]);
  return b;
}

/* The forward mask `m`'s gate on the adjoint after `at`: x·exp (mask (0·step (x))), which
 * is 1 where the mask keeps the key and 0 where it hides it — the identity on dS, whose
 * hidden entries are P's zeros. The gate's product, or −1. */
static int
mask_gate (NapkinPlanner *p,
           Group         *g,
           int            at,
           int            m)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, (guint) at, &n_consumers);
  int step = -1, mul = -1, zero, mask, e;
  const NapkinNode *fm, *gm;

  if (n_consumers != 2 || m < 0)
    return -1;
  for (guint i = 0; i < 2; i++)
    {
      if (is_map (p, (int) consumers[i], NAPKIN_FN_STEP))
        step = (int) consumers[i];
      else if (is_map (p, (int) consumers[i], NAPKIN_FN_MUL))
        mul = (int) consumers[i];
    }
  if (step < 0 || mul < 0 || !free_node (p, g, step) || !free_node (p, g, mul))
    return -1;
  zero = only_consumer (p, step);
  mask = zero >= 0 ? only_consumer (p, zero) : -1;
  e = mask >= 0 ? only_consumer (p, mask) : -1;
  if (!is_map (p, zero, NAPKIN_FN_SCALE) || napkin_diagram_node (p->d, (guint) zero)->alpha != 0.0
      || mask < 0 || napkin_diagram_node (p->d, (guint) mask)->kind != NAPKIN_OP_MASK
      || !is_map (p, e, NAPKIN_FN_EXP) || only_consumer (p, e) != mul || other_input (p, mul, at) != e
      || !free_node (p, g, zero) || !free_node (p, g, mask) || !free_node (p, g, e))
    return -1;
  fm = napkin_diagram_node (p->d, (guint) m);
  gm = napkin_diagram_node (p->d, (guint) mask);
  if (fm->mask != gm->mask || g_strcmp0 (fm->axis, gm->axis) != 0 || g_strcmp0 (fm->rows, gm->rows) != 0
      || fm->offset != gm->offset || fm->left != gm->left || fm->right != gm->right)
    return -1;
  /* a tensor mask's gate reads the forward's flags */
  if (fm->mask == NAPKIN_MASK_TENSOR
      && napkin_diagram_input_source (p->d, (guint) m, 1) != napkin_diagram_input_source (p->d, (guint) mask, 1))
    return -1;
  take (g, step);
  take (g, zero);
  take (g, mask);
  take (g, e);
  take (g, mul);
  return mul;
}

/* Whether the chain from `n` back reaches a product through the maps, masks and casts
 * the recomputed scores are made of (the scores' side of a bias's add, not its operand's). */
static gboolean
leads_to_product (NapkinPlanner *p,
                  Group         *g,
                  int            n,
                  guint         *budget)
{
  const NapkinNode *node;

  /* a bounded walk: a tree of maps in a hostile diagram must not make it exponential */
  if (n < 0 || *budget == 0 || !free_node (p, g, n) || only_consumer (p, n) < 0)
    return FALSE;
  (*budget)--;
  node = napkin_diagram_node (p->d, (guint) n);
  if (node->kind == NAPKIN_OP_CONTRACT)
    return TRUE;
  if (node->kind != NAPKIN_OP_MAP && node->kind != NAPKIN_OP_MASK)
    return FALSE;
  for (guint port = 0; port < napkin_op_n_inputs (node); port++)
    if (leads_to_product (p, g, napkin_diagram_input_source (p->d, (guint) n, port), budget))
      return TRUE;
  return FALSE;
}

/* A bias's gradient from the adjoint `c` reads: sums over the axes the bias lacks, casts
 * and scales, each read once, up to the value that leaves the kernel (an output's, or
 * another kernel's operand). That value, its weight (the scales' product) through
 * *weight, or −1. */
static int
bias_gradient (NapkinPlanner *p,
               Group         *g,
               int            c,
               double        *weight)
{
  guint start = g->nodes->len;
  int at = c, last = -1;

  *weight = 1.0;
  while (at >= 0 && free_node (p, g, at))
    {
      const NapkinNode *n = napkin_diagram_node (p->d, (guint) at);

      if (n->kind == NAPKIN_OP_REDUCE && n->reduce == NAPKIN_REDUCE_SUM)
        ;
      else if (is_map (p, at, NAPKIN_FN_SCALE))
        *weight *= n->alpha;
      else if (!is_map (p, at, NAPKIN_FN_CAST))
        break;
      take (g, at);
      last = at;
      at = only_consumer (p, at);
      if (at >= 0 && napkin_diagram_node (p->d, (guint) at)->kind == NAPKIN_OP_OUTPUT)
        break;
    }
  if (last < 0 || at < 0 || napkin_diagram_node (p->d, (guint) at)->kind != NAPKIN_OP_OUTPUT)
    {
      g_array_set_size (g->nodes, start);
      return -1;
    }
  return last;
}

/* 1 where `reader` reads the value of `n`, else 0. */
static int
is_reader (NapkinPlanner *p,
           int            n,
           int            reader)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, (guint) n, &n_consumers);

  for (guint i = 0; i < n_consumers; i++)
    if ((int) consumers[i] == reader)
      return 1;
  return 0;
}

/* NAPKIN_BWD_DEBUG=1: where the recogniser left a softmax (for reading a diagram's refusals) */
#define NOMATCH do { if (g_getenv ("NAPKIN_BWD_DEBUG")) g_printerr ("attention backward: %s not matched at line %d\n", \
                                                                   napkin_diagram_node (p->d, sm)->id, __LINE__); \
                     return FALSE; } while (0)

static gboolean
match (NapkinPlanner *p,
       Group         *g,
       guint          sm,
       Roles         *r)
{
  const NapkinNode *sn = napkin_diagram_node (p->d, sm);
  const NapkinTensorType *ts = type_of (p, (int) sm), *tq, *tk, *tdo;
  guint n_consumers;
  const guint *consumers;
  int key, query = -1, at, ds = -1, rm = -1, sub, lhs, rhs, y, p_dv = (int) sm, bias_reader = -1;
  guint64 group_axes;

  memset (r, 0, sizeof *r);
  r->mask = r->dv = r->dq = r->dk = r->d_bias = -1;
  r->alpha = r->d_alpha = 1.0;
  if (sn->kind != NAPKIN_OP_SOFTMAX || ts == NULL || !free_node (p, g, (int) sm))
    NOMATCH;
  key = napkin_diagram_find_axis (p->d, sn->axis);
  r->sm = (int) sm;
  take (g, (int) sm);
  /* back to Q·Kᵀ: scales, casts and one causal or window mask, each read once */
  for (at = napkin_diagram_input_source (p->d, sm, 0); at >= 0;)
    {
      const NapkinNode *n = napkin_diagram_node (p->d, (guint) at);

      if (!free_node (p, g, at) || only_consumer (p, at) < 0)
        NOMATCH;
      take (g, at);
      if (n->kind == NAPKIN_OP_CONTRACT)
        break;
      if ((n->kind == NAPKIN_OP_MAP && (n->fn == NAPKIN_FN_ADD || n->fn == NAPKIN_FN_SUB))
          || (n->kind == NAPKIN_OP_MASK && n->mask == NAPKIN_MASK_TENSOR))
        {
          /* a score operand: the scores go on through one input, the operand is read */
          guint budget0 = 32, budget1 = 32;
          gboolean s0 = leads_to_product (p, g, napkin_diagram_input_source (p->d, (guint) at, 0), &budget0);
          gboolean s1 = n->kind == NAPKIN_OP_MAP
                        && leads_to_product (p, g, napkin_diagram_input_source (p->d, (guint) at, 1), &budget1);
          int port = s0 && !s1 ? 0 : s1 && !s0 ? 1 : -1;

          /* b − x negates the scores before it; a mask's flags must meet positive scores */
          if (port < 0 || r->n_scores >= NAPKIN_ATTN_MAX_SCORES || !(r->alpha > 0)
              || (n->kind == NAPKIN_OP_MAP && n->fn == NAPKIN_FN_SUB && port == 1))
            NOMATCH;
          r->score[r->n_scores] = at;
          r->score_port[r->n_scores] = 1 - port;
          r->score_after[r->n_scores] = n->kind == NAPKIN_OP_MAP && n->fn == NAPKIN_FN_SUB ? -r->alpha : r->alpha;
          r->n_scores++;
          at = napkin_diagram_input_source (p->d, (guint) at, port);
          continue;
        }
      if (n->kind == NAPKIN_OP_MAP && n->fn == NAPKIN_FN_SCALE)
        r->alpha *= n->alpha;
      else if (n->kind == NAPKIN_OP_MASK && r->mask < 0 && r->alpha > 0)
        r->mask = at;
      else if (!(n->kind == NAPKIN_OP_MAP && n->fn == NAPKIN_FN_CAST))
        NOMATCH;
      at = napkin_diagram_input_source (p->d, (guint) at, 0);
    }
  if (at < 0 || !(r->alpha > 0))
    NOMATCH;
  r->qk = at;
  r->q = napkin_diagram_input_source (p->d, (guint) at, 0);
  r->k = napkin_diagram_input_source (p->d, (guint) at, 1);
  if ((tq = type_of (p, r->q)) == NULL || (tk = type_of (p, r->k)) == NULL
      || napkin_tensor_type_has_axis (tq, (guint) key) || !napkin_tensor_type_has_axis (tk, (guint) key))
    NOMATCH;
  /* Q's axes K lacks: the query axis and the group's (GQA), summed by dK */
  group_axes = lacking (tq, tk);
  if (r->mask >= 0)
    query = napkin_diagram_find_axis (p->d, napkin_diagram_node (p->d, (guint) r->mask)->rows);
  if (group_axes == 0 || (query >= 0 && !(group_axes & bit (query))))
    NOMATCH;

  /* the softmax's readers: dV = Σ_q P·dO, dS = P⊙(…) and the row term's P⊙dP */
  consumers = napkin_diagram_consumers (p->d, sm, &n_consumers);
  if (n_consumers != 3)
    NOMATCH;
  for (guint i = 0; i < 3; i++)
    {
      int c = (int) consumers[i];

      if (!free_node (p, g, c))
        NOMATCH;
      if (napkin_diagram_node (p->d, (guint) c)->kind == NAPKIN_OP_CONTRACT)
        r->dv = c;
      else if (is_map (p, c, NAPKIN_FN_CAST) && only_consumer (p, c) >= 0
               && napkin_diagram_node (p->d, (guint) only_consumer (p, c))->kind == NAPKIN_OP_CONTRACT
               && free_node (p, g, only_consumer (p, c)))
        {
          /* an fp32 softmax cast to 16 bits for P·V (Llama, Qwen2): dV reads the cast */
          p_dv = c;
          r->dv = only_consumer (p, c);
        }
      else if (is_map (p, c, NAPKIN_FN_MUL) && other_input (p, c, (int) sm) >= 0)
        {
          int x = other_input (p, c, (int) sm);

          while (is_map (p, x, NAPKIN_FN_CAST))
            x = napkin_diagram_input_source (p->d, (guint) x, 0);
          if (is_map (p, x, NAPKIN_FN_SUB))
            ds = c;
          else
            rm = c;
        }
    }
  if (r->dv < 0 || ds < 0 || rm < 0 || !sums (p, r->dv, p_dv, group_axes, &r->d_o)
      || (tdo = type_of (p, r->d_o)) == NULL)
    NOMATCH;
  if (p_dv != (int) sm)
    take (g, p_dv);
  take (g, r->dv);
  take (g, ds);
  take (g, rm);
  /* dS = P⊙cast (cast (dP) − row): dP = Σ_e dO·V */
  sub = under_casts (p, g, other_input (p, ds, (int) sm));
  if (!is_map (p, sub, NAPKIN_FN_SUB) || !free_node (p, g, sub) || only_consumer (p, sub) < 0)
    NOMATCH;
  take (g, sub);
  lhs = under_casts (p, g, napkin_diagram_input_source (p->d, (guint) sub, 0));
  rhs = under_casts (p, g, napkin_diagram_input_source (p->d, (guint) sub, 1));
  /* dP widened once for both its readers (the sub and the row term's product: Llama's fp32
   * softmax) */
  while (is_map (p, lhs, NAPKIN_FN_CAST) && free_node (p, g, lhs))
    {
      guint n_readers;
      const guint *readers = napkin_diagram_consumers (p->d, (guint) lhs, &n_readers);

      if (n_readers != 2 || !((readers[0] == (guint) sub && readers[1] == (guint) rm)
                              || (readers[1] == (guint) sub && readers[0] == (guint) rm)))
        break;
      take (g, lhs);
      lhs = under_casts (p, g, napkin_diagram_input_source (p->d, (guint) lhs, 0));
    }
  r->dp = lhs;
  y = other_input (p, rm, (int) sm);
  while (is_map (p, y, NAPKIN_FN_CAST))
    y = napkin_diagram_input_source (p->d, (guint) y, 0);
  if (!free_node (p, g, r->dp) || !sums (p, r->dp, r->d_o, lacking (tdo, ts), &r->v) || y != r->dp)
    NOMATCH;
  take (g, r->dp);
  /* the row term: Σ_k P⊙dP over the keys */
  r->red = rhs;
  if (r->red < 0 || !free_node (p, g, r->red) || only_consumer (p, r->red) < 0)
    NOMATCH;
  {
    const NapkinNode *rn = napkin_diagram_node (p->d, (guint) r->red);

    if (rn->kind != NAPKIN_OP_REDUCE || rn->reduce != NAPKIN_REDUCE_SUM
        || napkin_diagram_find_axis (p->d, rn->axis) != key
        || under_casts (p, g, napkin_diagram_input_source (p->d, (guint) r->red, 0)) != rm)
      NOMATCH;
  }
  take (g, r->red);

  /* after dS: casts, the masks' gates, the scale's adjoint (a bias's is the identity;
   * where the bias's gradient is asked for, its sums fork here); then dQ and dK */
  for (at = ds;;)
    {
      int c = only_consumer (p, at), gate = -1;

      if (c < 0 && r->d_bias < 0 && r->n_scores > 0)
        {
          const guint *readers = napkin_diagram_consumers (p->d, (guint) at, &n_consumers);

          for (guint i = 0; i < n_consumers && (n_consumers == 2 || n_consumers == 3) && r->d_bias < 0; i++)
            if ((r->d_bias = bias_gradient (p, g, (int) readers[i], &r->d_bias_weight)) >= 0)
              {
                r->d_bias_weight *= r->d_alpha;
                bias_reader = (int) readers[i];
                if (n_consumers == 2)
                  c = (int) readers[1 - i];
                else
                  break;
              }
          if (r->d_bias >= 0 && n_consumers == 3)
            break;   /* dQ and dK read the same value */
        }

      if (c >= 0 && free_node (p, g, c) && is_map (p, c, NAPKIN_FN_SCALE))
        r->d_alpha *= napkin_diagram_node (p->d, (guint) c)->alpha;
      else if (!(c >= 0 && free_node (p, g, c) && is_map (p, c, NAPKIN_FN_CAST)))
        {
          gate = mask_gate (p, g, at, r->mask);
          for (guint i = 0; i < r->n_scores && gate < 0; i++)
            if (napkin_diagram_node (p->d, (guint) r->score[i])->kind == NAPKIN_OP_MASK)
              gate = mask_gate (p, g, at, r->score[i]);
          if (gate < 0)
            break;
          at = gate;
          continue;
        }
      take (g, c);
      at = c;
    }
  consumers = napkin_diagram_consumers (p->d, (guint) at, &n_consumers);
  if (n_consumers != 2u + (guint) (bias_reader >= 0 ? is_reader (p, at, bias_reader) : 0)
      || !(r->d_alpha > 0) || fabs (r->d_alpha - r->alpha) > 1e-6 * r->alpha)
    NOMATCH;
  for (guint i = 0; i < n_consumers; i++)
    {
      int c = (int) consumers[i];

      if (c == bias_reader)
        continue;
      if (!free_node (p, g, c))
        NOMATCH;
      if (sums (p, c, at, bit (key), &y) && y == r->k)
        r->dq = c;
      else if (sums (p, c, at, group_axes, &y) && y == r->q)
        r->dk = c;
    }
  if (r->dq < 0 || r->dk < 0)
    NOMATCH;
  take (g, r->dq);
  take (g, r->dk);
  /* every value but the three gradients stays in the kernel */
  for (guint i = 0; i < g->nodes->len; i++)
    {
      int n = (int) g_array_index (g->nodes, guint, i);

      if (n == r->dq || n == r->dk || n == r->dv || n == r->d_bias)
        continue;
      consumers = napkin_diagram_consumers (p->d, (guint) n, &n_consumers);
      for (guint c = 0; c < n_consumers; c++)
        {
          gboolean in = FALSE;

          for (guint j = 0; j < g->nodes->len && !in; j++)
            in = g_array_index (g->nodes, guint, j) == consumers[c];
          if (!in)
            NOMATCH;
        }
    }
  return TRUE;
}

gboolean
_napkin_plan_attention_backward_group (NapkinPlanner  *p,
                                       guint           sm,
                                       const gboolean *taken,
                                       GArray         *nodes)
{
  Group g = { NULL, taken, nodes };
  Roles r;

  g_array_set_size (nodes, 0);
  if (!match (p, &g, sm, &r))
    {
      g_array_set_size (nodes, 0);
      return FALSE;
    }
  return TRUE;
}

/* ---- the kernel ---------------------------------------------------------------------------- */

/* The main kernel's shared memory (kernels/attn-bwd-sm80.cu's formula). */
static gint64
main_smem (gint64 dp,
           gint64 warps,
           gint64 bq)
{
  const gint64 s = dp + 8;

  return 2 * (32 * warps * s + 4 * bq * s + 16 * warps * (bq + 8)) + 16 * bq;
}

/* … and the wgmma main's (NKB_MAIN_SM90): K and V, two stages of Q and dO, dSᵀ, the
 * stages' log-sum-exps and row terms, each warpgroup's staged dQ in two stages (64 × 64
 * floats each, the accumulator's chunk as it lies), 1 KiB to align the swizzled tiles. */
static gint64
main9_smem (gint64 d)
{
  return 1024 + 2 * 128 * d * 2 + 4 * 64 * d * 2 + 128 * 128 + 4 * 64 * 4 + 4 * 64 * 64 * 4;
}

/* … and the wgmma first launch's: Q and dO (128 rows), two buffers of K and V chunks. */
static gint64
pre9_smem (gint64 d)
{
  return 1024 + 2 * 128 * d * 2 + 4 * 64 * d * 2;
}

gboolean
_napkin_plan_try_attention_backward (NapkinPlanner    *p,
                                     NapkinPlanKernel *k,
                                     char            **why)
{
  NapkinPlanAttnBackward *b = &k->u.bwd;
  NapkinPlanAttention *a = &b->a;
  g_autoptr(GArray) nodes = NULL;
  NapkinTensor tq, tk, tv, to, tmp;
  const char *nq[NAPKIN_MAX_RANK + 1], *nk[NAPKIN_MAX_RANK + 1], *nv[NAPKIN_MAX_RANK + 1], *no[NAPKIN_MAX_RANK + 1];
  const char *gnames[NAPKIN_MAX_RANK + 1];
  const char *query = NULL;
  char *reason;
  Group g;
  Roles r;
  int sm = -1;
  gint64 dp, kv_blocks, q_tiles;

  if (k->region < 0)
    return FALSE;
  for (guint i = 0; i < k->nodes->len && sm < 0; i++)
    if (napkin_diagram_node (p->d, g_array_index (k->nodes, guint, i))->kind == NAPKIN_OP_SOFTMAX)
      sm = (int) g_array_index (k->nodes, guint, i);
  if (sm < 0)
    return FALSE;
  nodes = g_array_new (FALSE, FALSE, sizeof (guint));
  g.within = k;
  g.taken = NULL;
  g.nodes = nodes;
  if (!match (p, &g, (guint) sm, &r) || nodes->len != k->nodes->len)
    return FALSE;

  if (p->sm < 80)
    {
      *why = g_strdup (_("attention backward: the fused kernel needs mma.sync (compute capability 8.0 or later)"));
      return FALSE;
    }
  if (!_napkin_plan_attention_value (p, r.q, &tq, nq) || !_napkin_plan_attention_value (p, r.k, &tk, nk)
      || !_napkin_plan_attention_value (p, r.v, &tv, nv) || !_napkin_plan_attention_value (p, r.d_o, &to, no))
    {
      *why = g_strdup (_("attention backward: Q, K, V and dO need known types"));
      return FALSE;
    }
  memset (b, 0, sizeof *b);
  a->partials = a->v_t = a->stats_scratch = a->stats_o32 = -1;
  b->o32_scratch = -1;
  a->lead_first = -1;
  a->bkv_parts = 1;
  a->split_kv = 1;
  a->q_scale = a->k_scale = a->v_scale = 1.0;
  a->window_left = a->window_right = -1;
  reason = _napkin_plan_attention_layout (p, a, &tq, &tk, &tv, &to, napkin_diagram_node (p->d, (guint) sm)->axis,
                                          r.mask >= 0 ? napkin_diagram_node (p->d, (guint) r.mask)->rows : NULL, &query);
  if (reason != NULL)
    {
      *why = g_strdup_printf (_("attention backward: %s"), reason);
      g_free (reason);
      memset (&k->u, 0, sizeof k->u);
      return FALSE;
    }
  if (r.mask >= 0
      && (reason = _napkin_plan_attention_read_mask (a, napkin_diagram_node (p->d, (guint) r.mask),
                                                     napkin_diagram_node (p->d, (guint) sm)->axis, query)) != NULL)
    {
      *why = reason;
      memset (&k->u, 0, sizeof k->u);
      return FALSE;
    }
  a->dtype = _napkin_plan_value_dtype (p, r.q);
  a->v_dtype = a->o_dtype = a->dtype;
  b->grad_dtype = _napkin_plan_value_dtype (p, r.dq);
  {
    const int same[] = { r.k, r.v, r.d_o };
    const int grads[] = { r.dk, r.dv };

    for (guint i = 0; i < G_N_ELEMENTS (same); i++)
      if (_napkin_plan_value_dtype (p, same[i]) != a->dtype)
        reason = g_strdup (_("Q, K, V and dO must share one type"));
    for (guint i = 0; i < G_N_ELEMENTS (grads); i++)
      if (_napkin_plan_value_dtype (p, grads[i]) != b->grad_dtype)
        reason = g_strdup (_("dQ, dK and dV must share one type"));
  }
  if (reason == NULL && a->dtype != NAPKIN_DTYPE_FP16 && a->dtype != NAPKIN_DTYPE_BF16)
    reason = g_strdup_printf (_("the fused kernel takes fp16 or bf16, not %s"), napkin_dtype_to_string (a->dtype));
  if (reason == NULL && b->grad_dtype != NAPKIN_DTYPE_FP16 && b->grad_dtype != NAPKIN_DTYPE_BF16)
    reason = g_strdup_printf (_("the gradients must be fp16 or bf16, not %s"), napkin_dtype_to_string (b->grad_dtype));
  /* dQ, dK and dV each with their own strides: an imported block's gradients lie as the
   * projections that consume them do ([b, s, h, d]), not as Q, K and V ([b, h, s, d]) */
  {
    const int grad[] = { r.dq, r.dk, r.dv };
    const NapkinTensor *like[] = { &tq, &tk, &tv };
    const char *names[] = { "dQ", "dK", "dV" }, *like_names[] = { "Q", "K", "V" };
    const int key = napkin_diagram_find_axis (p->d, napkin_diagram_node (p->d, (guint) sm)->axis);
    const int rows[] = { a->query_axis, key, key };
    gint64 *lead[] = { b->dq_lead, b->dk_lead, b->dv_lead }, *row[] = { &b->dq_row, &b->dk_row, &b->dv_row };

    for (guint i = 0; i < G_N_ELEMENTS (grad) && reason == NULL; i++)
      if (!_napkin_plan_attention_value (p, grad[i], &tmp, gnames))
        reason = g_strdup_printf (_("%s needs a known layout"), names[i]);
      else
        reason = _napkin_plan_attention_strides (p, a, &tmp, like[i], names[i], like_names[i], rows[i],
                                                 a->group_axis, lead[i], row[i], i == 0 ? &b->dq_group : NULL);
  }
  /* biases and tensor masks, read by both kernels that make the scores */
  a->alpha = r.alpha;
  for (guint i = 0; i < r.n_scores && reason == NULL; i++)
    reason = _napkin_plan_attention_add_score (p, a, r.score[i], r.score_port[i], r.score_after[i], &tk,
                                               napkin_diagram_node (p->d, (guint) sm)->axis);
  /* a bias's gradient: the bias of its axes */
  b->d_bias = (NapkinPlanBuffer) { -1, -1, NAPKIN_DTYPE_FP32 };
  if (reason == NULL && r.d_bias >= 0)
    {
      const NapkinTensorType *tg = type_of (p, r.d_bias);
      int which = -1;

      for (guint i = 0; i < a->n_scores && tg != NULL; i++)
        {
          const NapkinTensorType *tx = type_of (p, a->scores[i].x.node);
          gboolean same = a->scores[i].kind == NAPKIN_ATTN_SCORE_BIAS && tx != NULL && tx->n_axes == tg->n_axes;

          for (guint j = 0; same && j < tg->n_axes; j++)
            same = napkin_tensor_type_has_axis (tx, tg->axes[j]);
          if (same)
            which = which < 0 ? (int) i : -2;
        }
      if (which < 0)
        reason = g_strdup (_("a bias's gradient that is not one bias's"));
      else if (tg->dtype != NAPKIN_DTYPE_FP16 && tg->dtype != NAPKIN_DTYPE_BF16 && tg->dtype != NAPKIN_DTYPE_FP32)
        reason = g_strdup_printf (_("the bias's gradient is %s; the kernel writes fp16, bf16 or fp32"),
                                  napkin_dtype_to_string (tg->dtype));
      else if ((reason = _napkin_plan_attention_score_strides (p, a, r.d_bias, &tk,
                                                               napkin_diagram_node (p->d, (guint) sm)->axis,
                                                               napkin_diagram_node (p->d, (guint) r.d_bias)->id,
                                                               &b->d_bias_at)) == NULL)
        {
          b->d_bias = (NapkinPlanBuffer) { r.d_bias, -1, tg->dtype };
          b->d_bias_weight = r.d_bias_weight;
          b->d_bias_elems = 1;
          for (guint j = 0; j < tg->n_axes; j++)
            b->d_bias_elems *= napkin_diagram_axis_size (p->d, tg->axes[j]);
        }
    }
  if (reason == NULL && (a->D % 8 != 0 || a->D > 128))
    reason = g_strdup_printf (_("head size %lld: the fused kernel takes multiples of 8 up to 128"), (long long) a->D);
  if (reason != NULL)
    {
      *why = g_strdup_printf (_("attention backward: %s"), reason);
      g_free (reason);
      memset (&k->u, 0, sizeof k->u);
      return FALSE;
    }

  a->alpha = r.alpha;
  b->d_alpha = r.d_alpha;
  a->q = (NapkinPlanBuffer) { r.q, -1, a->dtype };
  a->k = (NapkinPlanBuffer) { r.k, -1, a->dtype };
  a->v = (NapkinPlanBuffer) { r.v, -1, a->dtype };
  a->o = (NapkinPlanBuffer) { r.d_o, -1, a->dtype };   /* the layout's O: dO's (no kernel reads O) */
  b->d_o = (NapkinPlanBuffer) { r.d_o, -1, a->dtype };
  b->d_q = (NapkinPlanBuffer) { r.dq, -1, b->grad_dtype };
  b->d_k = (NapkinPlanBuffer) { r.dk, -1, b->grad_dtype };
  b->d_v = (NapkinPlanBuffer) { r.dv, -1, b->grad_dtype };
  /* the tiles that ran fastest on an H200 (docs/perf-notes.md, "Session 18"; all compile
   * without spills): 64 queries a tile, 8 warps of 16 keys above d 64, 4 from d 64 down */
  dp = (a->D + 15) / 16 * 16;
  /* smaller tiles where a block's shared memory is less (an L40S's or an RTX 4090's
   * 99 KiB): the first of these that fits, each compiling without spills (the kernel's
   * head comment) */
  {
    static const struct { guint warps; gint64 bq; guint pre_warps; } tiles[] = {
      { 8, 64, 4 }, { 4, 64, 4 }, { 8, 32, 4 }, { 4, 32, 4 }, { 4, 32, 2 }, { 4, 16, 2 },
    };
    const gint64 limit = (gint64) p->arch->smem_max_per_block;
    guint t = dp > 64 ? 0 : 1;

    while (t + 1 < G_N_ELEMENTS (tiles)
           && (main_smem (dp, tiles[t].warps, tiles[t].bq) > limit
               || 4 * (16 * (gint64) tiles[t].pre_warps + 128) * (dp + 8) > limit))
      t++;
    b->warps = tiles[t].warps;
    b->pre_warps = tiles[t].pre_warps;
    a->BQ = tiles[t].bq;
  }
  /* Hopper: the first and main launches on wgmma (kernels/attn-bwd-sm80.cu, NKB_MAIN_SM90) at head
   * sizes 64 and 128 (a bias's gradient at 64: at 128 its atomics' addresses spill);
   * NAPKIN_BWD_WGMMA=0 keeps mma.sync there (the A/B; docs/plan.md, "The backward on
   * wgmma"). */
  b->main_wgmma = p->sm >= 90 && p->sm < 100 && !(p->options && p->options->no_wgmma)
                  && (a->D == 64 || (a->D == 128 && b->d_bias.node < 0))
                  && main9_smem (a->D) <= (gint64) p->arch->smem_max_per_block
                  && g_strcmp0 (g_getenv ("NAPKIN_BWD_WGMMA"), "0") != 0;
  if (b->main_wgmma)
    a->BQ = 64;
  a->BKV = b->main_wgmma ? 128 : 16 * b->warps;
  a->group_tile = 1;
  a->rows = a->BQ;
  a->stages = 2;
  a->consumers = b->warps;
  _napkin_plan_attention_count_tiles (a);
  kv_blocks = (a->NKV + a->BKV - 1) / a->BKV;
  q_tiles = (a->NQ + a->BQ - 1) / a->BQ;
  b->pairs = a->tiles_computed * a->batch;
  /* the block with the most: a key block's query tiles, every head of its group */
  {
    g_autofree gint64 *per_block = g_new0 (gint64, kv_blocks);

    for (gint64 t = 0; t < q_tiles; t++)
      {
        gint64 first, end;

        napkin_plan_attention_chunks (a, t * a->BQ, MIN ((t + 1) * a->BQ, a->NQ), &first, &end, NULL);
        for (gint64 j = first; j < end && j < kv_blocks; j++)
          per_block[j]++;
      }
    /* the group split: the fewest blocks of a key block (a divisor of the group) that
     * fill the SMs */
    b->gsplit = 1;
    if (b->main_wgmma)
      while (b->gsplit < a->group && a->kv_batch * kv_blocks * b->gsplit < (gint64) p->arch->sms)
        {
          b->gsplit++;
          while (a->group % b->gsplit != 0)
            b->gsplit++;
        }
    for (gint64 j = 0; j < kv_blocks; j++)
      b->longest = MAX (b->longest, per_block[j] * a->group / b->gsplit);
  }
  b->lse_at = 0;
  b->drow_at = a->batch * a->NQ;
  b->dqa_at = (2 * a->batch * a->NQ + 3) / 4 * 4;
  /* the wgmma main's accumulator lies in tiles of 64 query rows, a head's last padded */
  b->dbias_at = (b->dqa_at + a->batch * (b->main_wgmma ? (a->NQ + 63) / 64 * 64 : a->NQ) * a->D + 3) / 4 * 4;
  b->dkva_at = (b->dbias_at + (b->d_bias.node >= 0 ? b->d_bias_elems : 0) + 3) / 4 * 4;
  b->scratch = _napkin_plan_add_scratch (p->plan, (b->dkva_at + (b->gsplit > 1 ? 2 * a->kv_batch * a->NKV * a->D : 0))
                                                    * 4);
  /* the first launch on wgmma with the main one: 128 query rows a block, 256 threads */
  if (b->main_wgmma)
    b->pre_warps = 8;
  b->pre_grid = a->batch * ((a->NQ + 16 * b->pre_warps - 1) / (16 * b->pre_warps));
  b->dq_grid = a->batch * ((a->NQ + 63) / 64);
  b->pre_smem = b->main_wgmma ? pre9_smem (a->D) : 4 * (16 * b->pre_warps + 128) * (dp + 8);
  k->kind = NAPKIN_PLAN_ATTENTION_BACKWARD;
  k->path = b->main_wgmma ? NAPKIN_PATH_WGMMA : NAPKIN_PATH_MMA;
  k->grid = a->kv_batch * kv_blocks * b->gsplit;
  k->threads = b->main_wgmma ? 256 : 32 * b->warps;
  k->smem_bytes = b->main_wgmma ? main9_smem (a->D) : main_smem (dp, b->warps, a->BQ);
  k->registers = 255;
  k->blocks_per_sm = 1;
  g_free (k->note);
  if (b->main_wgmma)
    k->note = g_strdup_printf (_("fused attention backward (FlashAttention-3's products): 128 keys a block (two "
                                 "warpgroups of 64), query tiles of 64 through two cp.async stages, the scores "
                                 "recomputed from each row's log-sum-exp, Sᵀ, dPᵀ, dV, dK and dQ on wgmma, dK and dV in "
                                 "registers, dQ added in fp32 by the copy engine's bulk reductions; %lld of %lld key "
                                 "blocks × query tiles "
                                 "computed per head; 3 launches (log-sum-exps and row terms, the gradients, dQ)%s"),
                               (long long) a->tiles_computed, (long long) (kv_blocks * q_tiles),
                               b->gsplit > 1 ? _("; the query heads of a K/V head split over blocks to fill the SMs, "
                                                 "dK and dV added up in fp32") : "");
  else
    k->note = g_strdup_printf (_("fused attention backward (FlashAttention-2's shape): %lld keys a block (%u warps of 16), "
                                 "query tiles of %lld through two cp.async buffers, the scores recomputed from each "
                                 "row's log-sum-exp, dK and dV in registers, dQ added in fp32 (atomics); %lld of %lld "
                                 "key blocks × query tiles computed per head; 3 launches (log-sum-exps and row terms, "
                                 "the gradients, dQ)"),
                               (long long) a->BKV, b->warps, (long long) a->BQ, (long long) a->tiles_computed,
                               (long long) (kv_blocks * q_tiles));
  if (a->n_scores > 0)
    {
      char *more = g_strdup_printf (_("%s; %u score operand(s) read where the scores are made%s"), k->note,
                                    a->n_scores, b->d_bias.node >= 0
                                    ? _(", the bias's gradient summed in fp32 (atomics) and rounded by the last launch")
                                    : "");

      g_free (k->note);
      k->note = more;
    }
  return TRUE;
}

static gboolean
same_buffer (const NapkinPlanBuffer *x,
             const NapkinPlanBuffer *y)
{
  return x->node == y->node && x->scratch == y->scratch && x->dtype == y->dtype;
}

/* Whether forward attention `f` computes the scores and softmax backward `b` recomputes,
 * with each query row where b's first launch puts it. */
static gboolean
forward_matches (const NapkinPlanAttention    *f,
                 const NapkinPlanAttnBackward *b)
{
  const NapkinPlanAttention *a = &b->a;

  if (!same_buffer (&f->q, &a->q) || !same_buffer (&f->k, &a->k) || !same_buffer (&f->v, &a->v)
      || f->dtype != a->dtype || f->v_dtype != a->dtype
      || f->NQ != a->NQ || f->NKV != a->NKV || f->D != a->D || f->group != a->group
      || f->kv_batch != a->kv_batch || f->n_lead != a->n_lead || f->split_kv > 1
      || f->mask != a->mask || f->mask_offset != a->mask_offset || f->window_left != a->window_left
      || f->window_right != a->window_right || f->n_scores != 0 || a->n_scores != 0
      || f->q_scale != 1.0 || f->k_scale != 1.0 || f->v_scale != 1.0
      || fabs (f->alpha - a->alpha) > 1e-12 * fabs (a->alpha))
    return FALSE;
  for (guint l = 0; l < a->n_lead; l++)
    if (f->lead_size[l] != a->lead_size[l])
      return FALSE;
  return TRUE;
}

void
_napkin_plan_attention_link_stats (NapkinPlan *plan)
{
  if (g_strcmp0 (g_getenv ("NAPKIN_BWD_FWD_STATS"), "0") == 0)
    return;
  for (guint j = 0; j < plan->kernels->len; j++)
    {
      NapkinPlanKernel *bk = g_ptr_array_index (plan->kernels, j);
      NapkinPlanAttnBackward *b = &bk->u.bwd;

      if (bk->kind != NAPKIN_PLAN_ATTENTION_BACKWARD || !b->main_wgmma || b->stats_given || !bk->feasible)
        continue;
      for (guint i = 0; i < j; i++)
        {
          NapkinPlanKernel *fk = g_ptr_array_index (plan->kernels, i);
          NapkinPlanAttention *f = &fk->u.att;

          if (fk->kind != NAPKIN_PLAN_ATTENTION || fk->path != NAPKIN_PATH_WGMMA || !fk->feasible
              || f->stats_scratch >= 0 || !forward_matches (f, b))
            continue;
          f->stats_scratch = b->scratch;
          f->stats_lse_at = b->lse_at;
          f->stats_o32 = b->o32_scratch = _napkin_plan_add_scratch (plan, b->a.batch * b->a.NQ * b->a.D * 4);
          b->stats_given = TRUE;
          b->pre_smem = 0;   /* the first launch: no shared memory */
          {
            char *note = g_strdup_printf (_("%s; the log-sum-exps and the fp32 O written by %s, the row terms "
                                            "Σ dO⊙O a pass over memory"), bk->note ? bk->note : "", fk->name);

            g_free (bk->note);
            bk->note = note;
          }
          break;
        }
    }
}
