/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-plan-private.h"

/* The first steps of the plan's pipeline (docs/plan.md, "The pipeline"): casts become
 * the types of the values they cast, and the operations outside the drawn regions are
 * cut into kernels by the plan's own rules. A drawn region is the user's constraint and
 * tile hint; an operation outside every region is the plan's to place. Recognition is
 * by structure — which axes a value is contracted, reduced or masked along, and how the
 * values flow — never by the names of axes or operations. */

#define MAX_CHAIN 32

/* ---- casts as types ------------------------------------------------------------------- */

/* Whether `a` and `b` lie in the same drawn regions. */
static gboolean
same_regions (NapkinDiagram *d,
              guint          a,
              guint          b)
{
  const char *ida = napkin_diagram_node (d, a)->id, *idb = napkin_diagram_node (d, b)->id;

  for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
    {
      const NapkinRegion *region = napkin_diagram_region (d, r);

      if (napkin_region_has_node (region, ida) != napkin_region_has_node (region, idb))
        return FALSE;
    }
  return TRUE;
}

static NapkinDiagram *fold_casts (NapkinDiagram *d,
                                  GHashTable    *folded);

/* ---- layouts of the values between kernels ----------------------------------------------- */

/* The axes of `node`'s value in the order the product that alone reads it wants as a
 * GEMM operand: the batch axes (in both operands and the result) and the free ones (in
 * this operand and the result) in the result's order, then the contracted ones in the
 * other operand's order — each group one run (docs/plan.md, "The pipeline"). NULL where
 * the value already lies so, or may not move (an output's, one read inside its own region,
 * a producer without an axis order of its own). */
/* Whether the product `node` may store its result in the order `want`: its axes only in
 * its first operand (the GEMM's rows) and those only in its second (its columns) must each
 * stay one run; batch axes may go anywhere (the grid walks them). Else the new layout
 * would trade the consumer's GEMM for the producer's (a projection feeding attention's
 * QKᵀ, which reads any strides, would go generic). */
static gboolean
keeps_gemm_runs (NapkinDiagram   *d,
                 guint            node,
                 const GPtrArray *want)
{
  const NapkinTensorType *side[2] = { NULL, NULL }, *o = napkin_diagram_node_type (d, node);

  for (guint k = 0; k < 2; k++)
    {
      int src = napkin_diagram_input_source (d, node, k);

      if (src < 0 || (side[k] = napkin_diagram_node_type (d, (guint) src)) == NULL || !side[k]->valid)
        return FALSE;
    }
  for (guint k = 0; k < 2; k++)
    {
      int first = -1, last = -1, count = 0;

      /* (every axis of `want` is one of the result's) */
      for (guint i = 0; i < want->len; i++)
        {
          int axis = napkin_diagram_find_axis (d, g_ptr_array_index (want, i));

          if (_napkin_plan_product_role (side[0], side[1], o, axis) == (k == 0 ? NAPKIN_PLAN_ROLE_ROW
                                                                               : NAPKIN_PLAN_ROLE_COLUMN))
            {
              if (first < 0)
                first = (int) i;
              last = (int) i;
              count++;
            }
        }
      if (count > 0 && last - first + 1 != count)
        return FALSE;
    }
  return TRUE;
}

/* The axes of the product `node`'s result as its GEMM stores them: where element-wise
 * maps carry it to an output (a bias, then the module's result), the output tensor's
 * order, which the GEMM's epilogue writes; else its own. */
static guint
stored_axes (NapkinDiagram *d,
             guint          node,
             guint         *axes)
{
  const NapkinTensorType *o = napkin_diagram_node_type (d, node);
  guint cur = node;

  for (guint step = 0; step < 8; step++)
    {
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (d, cur, &n_consumers);
      const NapkinNode *next;

      if (n_consumers != 1)
        break;
      next = napkin_diagram_node (d, consumers[0]);
      if (next->kind == NAPKIN_OP_OUTPUT)
        {
          const NapkinTensor *t = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, next->tensor));
          guint n = 0;

          for (guint a = 0; t != NULL && t->axes[a] != NULL && n < NAPKIN_MAX_RANK; a++)
            {
              int axis = napkin_diagram_find_axis (d, t->axes[a]);

              if (axis < 0 || !napkin_tensor_type_has_axis (o, (guint) axis))
                break;
              axes[n++] = (guint) axis;
            }
          if (n == o->n_axes)
            return n;
          break;
        }
      if (next->kind != NAPKIN_OP_MAP || napkin_diagram_node_type (d, consumers[0]) == NULL
          || napkin_diagram_node_type (d, consumers[0])->n_axes != o->n_axes)
        break;
      /* a map whose order is its other operand's (the residual added to this product)
       * is stored in that order by the epilogue that fuses it */
      if (next->out == NULL && napkin_diagram_input_source (d, consumers[0], 0) != (int) cur)
        {
          const NapkinTensorType *m = napkin_diagram_node_type (d, consumers[0]);
          gboolean all = m->valid;

          for (guint i = 0; all && i < o->n_axes; i++)
            all = napkin_tensor_type_has_axis (m, o->axes[i]);
          if (all)
            {
              memcpy (axes, m->axes, sizeof (guint) * m->n_axes);
              return m->n_axes;
            }
          break;
        }
      cur = consumers[0];
    }
  memcpy (axes, o->axes, sizeof (guint) * o->n_axes);
  return o->n_axes;
}

/* Whether `n` is a step the attention kernel takes between its products: a scale, a cast,
 * a mask, an added operand (docs/plan.md, "Attention kernels"). */
static gboolean
score_step (const NapkinNode *n)
{
  return n->kind == NAPKIN_OP_MASK
         || (n->kind == NAPKIN_OP_MAP && (n->fn == NAPKIN_FN_SCALE || n->fn == NAPKIN_FN_CAST || n->fn == NAPKIN_FN_ADD
                                          || n->fn == NAPKIN_FN_SUB));
}

/* Whether what the softmax `sm` reads back to its product holds only what the attention
 * kernel takes (scales, casts, masks, added operands: docs/plan.md, "Attention
 * kernels"); a soft-cap's tanh (Gemma 2) leaves Q·Kᵀ, the softmax and P·V kernels of
 * their own, each GEMM storing its own order. */
static gboolean
scores_fuse (NapkinDiagram *d,
             guint          sm)
{
  int at = napkin_diagram_input_source (d, sm, 0);

  for (guint step = 0; at >= 0 && step < 16; step++)
    {
      const NapkinNode *n = napkin_diagram_node (d, (guint) at);

      if (n->kind == NAPKIN_OP_CONTRACT)
        return TRUE;
      if (!score_step (n))
        return FALSE;
      at = napkin_diagram_input_source (d, (guint) at, 0);
    }
  return FALSE;
}

/* Whether the product `node` weighs by a softmax (through maps) that nothing else reads:
 * attention's P·V, whose fused kernel stores O in any order. A backward's products that
 * read the saved probabilities (dV = Pᵀ·dO, dK = dSᵀ·Q through dS = P ⊙ …) share them
 * with other readers: no attention kernel holds them, they are GEMMs. */
static gboolean
reads_probabilities (NapkinDiagram *d,
                     guint          node)
{
  for (guint k = 0; k < 2; k++)
    {
      int src = napkin_diagram_input_source (d, node, k);

      for (guint step = 0; src >= 0 && step < 4; step++)
        {
          const NapkinNode *n = napkin_diagram_node (d, (guint) src);
          guint n_consumers;

          napkin_diagram_consumers (d, (guint) src, &n_consumers);
          if (n_consumers != 1)
            break;
          if (n->kind == NAPKIN_OP_SOFTMAX)
            return scores_fuse (d, (guint) src);
          if (n->kind != NAPKIN_OP_MAP && n->kind != NAPKIN_OP_MASK)
            break;
          src = napkin_diagram_input_source (d, (guint) src, 0);
        }
    }
  return FALSE;
}

/* The order in which the product `c` reads its operand x (the other operand y) as a
 * GEMM operand: the axes x shares with c's result in the order c stores it (through
 * the maps its epilogue would fuse; `own_order`: its own), then the contracted ones in
 * y's order, into `want`. FALSE where x sums an axis alone. */
static gboolean
operand_want (NapkinDiagram          *d,
              guint                   c,
              const NapkinTensorType *x,
              const NapkinTensorType *y,
              gboolean                own_order,
              GPtrArray              *want)
{
  const NapkinTensorType *o = napkin_diagram_node_type (d, c);
  guint stored[NAPKIN_MAX_RANK], n_stored = own_order ? o->n_axes : stored_axes (d, c, stored);

  if (own_order)
    memcpy (stored, o->axes, sizeof (guint) * o->n_axes);

  for (guint i = 0; i < n_stored; i++)
    if (napkin_tensor_type_has_axis (x, stored[i]))
      g_ptr_array_add (want, (gpointer) napkin_diagram_axis (d, stored[i])->name);
  for (guint i = 0; i < y->n_axes; i++)
    if (_napkin_plan_product_role (x, y, o, y->axes[i]) == NAPKIN_PLAN_ROLE_CONTRACTED)
      g_ptr_array_add (want, (gpointer) napkin_diagram_axis (d, y->axes[i])->name);
  return want->len == x->n_axes;
}

static char **
operand_order (NapkinDiagram *d,
               guint          node)
{
  const NapkinNode *p = napkin_diagram_node (d, node);
  guint n_consumers, port;
  const guint *consumers = napkin_diagram_consumers (d, node, &n_consumers);
  const NapkinTensorType *x = napkin_diagram_node_type (d, node), *y, *o;
  g_autoptr(GPtrArray) want = g_ptr_array_new ();
  guint c;
  gboolean same = TRUE;

  if ((p->kind != NAPKIN_OP_CONTRACT && p->kind != NAPKIN_OP_REARRANGE) || n_consumers != 1 || x == NULL || !x->valid)
    return NULL;
  c = consumers[0];
  if (napkin_diagram_node (d, c)->kind != NAPKIN_OP_CONTRACT)
    return NULL;
  /* a value that stays inside its region keeps the region's layout; one that leaves it
   * for a product outside is stored by the region's epilogue in any order, as it would be
   * had the plan drawn the region (`tune --apply` must not lose the layout) */
  for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
    if (napkin_region_has_node (napkin_diagram_region (d, r), p->id)
        && napkin_region_has_node (napkin_diagram_region (d, r), napkin_diagram_node (d, c)->id))
      return NULL;
  port = napkin_diagram_input_source (d, c, 0) == (int) node ? 1 : 0;
  if (napkin_diagram_input_source (d, c, port) < 0)
    return NULL;
  y = napkin_diagram_node_type (d, (guint) napkin_diagram_input_source (d, c, port));
  o = napkin_diagram_node_type (d, c);
  if (y == NULL || o == NULL || !y->valid || !o->valid)
    return NULL;
  if (!operand_want (d, c, x, y, FALSE, want))
    return NULL;      /* an axis summed alone: not a GEMM operand */
  if (p->kind == NAPKIN_OP_CONTRACT && !reads_probabilities (d, node) && !keeps_gemm_runs (d, node, want))
    return NULL;      /* the producer's own GEMM would lose its rows or columns as one run */
  for (guint i = 0; i < x->n_axes; i++)
    same &= g_str_equal (napkin_diagram_axis (d, x->axes[i])->name, g_ptr_array_index (want, i));
  if (same)
    return NULL;
  g_ptr_array_add (want, NULL);
  return g_strdupv ((char **) want->pdata);
}

/* Whether everything downstream of `node` reads its value by axis name, so that its
 * order may change: a product or a map with its own order, a permutation, or (walked
 * on) an operation whose order follows its input's — a map without its own order, a
 * softmax, a norm, a mask, a reduction. A reshape reads the flat order, as does an
 * output, whose tensor declares its order. `depth` bounds the walk. */
/* Whether the rearrange `c` renames the axes of its input `x` by position (the same
 * count, the same sizes in order), without permuting them. */
static gboolean
positional_rename (NapkinDiagram          *d,
                   const NapkinNode       *c,
                   const NapkinTensorType *x)
{
  gboolean permutation = TRUE;

  if (c->kind != NAPKIN_OP_REARRANGE || c->out == NULL || g_strv_length (c->out) != x->n_axes)
    return FALSE;
  for (guint k = 0; c->out[k] != NULL; k++)
    {
      int axis = napkin_diagram_find_axis (d, c->out[k]);

      if (axis < 0 || napkin_diagram_axis_size (d, (guint) axis) != napkin_diagram_axis_size (d, x->axes[k]))
        return FALSE;
      permutation &= napkin_tensor_type_has_axis (x, (guint) axis);
    }
  return !permutation;
}

static gboolean
read_by_name_from (NapkinDiagram *d,
                   guint          node,
                   guint          depth)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, node, &n_consumers);
  const NapkinTensorType *x = napkin_diagram_node_type (d, node);

  if (n_consumers == 0 || depth > 16 || x == NULL || !x->valid)
    return FALSE;
  for (guint i = 0; i < n_consumers; i++)
    {
      const NapkinNode *c = napkin_diagram_node (d, consumers[i]);

      switch (c->kind)
        {
        case NAPKIN_OP_CONTRACT:
          break;
        case NAPKIN_OP_REARRANGE:
          /* a rename by position follows the new order (carry_renames), and so must
           * what reads it (a reshape after it reads the flat order) */
          if (positional_rename (d, c, x))
            {
              if (!read_by_name_from (d, consumers[i], depth + 1))
                return FALSE;
              break;
            }
          if (c->out == NULL || g_strv_length (c->out) != x->n_axes)
            return FALSE;
          for (guint k = 0; c->out[k] != NULL; k++)
            if (!napkin_tensor_type_has_axis (x, napkin_diagram_find_axis (d, c->out[k])))
              return FALSE;
          break;
        case NAPKIN_OP_MAP:
          /* a map with its own order, or whose order is its first operand's (the
           * residual's, where this value is added to it), reads this value by name */
          if (c->out != NULL || napkin_diagram_input_source (d, consumers[i], 0) != (int) node)
            break;
          G_GNUC_FALLTHROUGH;
        case NAPKIN_OP_SOFTMAX:
        case NAPKIN_OP_NORMALIZE:
        case NAPKIN_OP_MASK:
        case NAPKIN_OP_REDUCE:
          if (!read_by_name_from (d, consumers[i], depth + 1))
            return FALSE;
          break;
        default:
          return FALSE;
        }
    }
  return TRUE;
}

/* The same for `node` itself, whose value must also leave its region (one read inside
 * keeps the region's layout). */
static gboolean
read_by_name (NapkinDiagram *d,
              guint          node)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, node, &n_consumers);

  for (guint i = 0; i < n_consumers; i++)
    for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
      if (napkin_region_has_node (napkin_diagram_region (d, r), napkin_diagram_node (d, node)->id)
          && napkin_region_has_node (napkin_diagram_region (d, r), napkin_diagram_node (d, consumers[i])->id))
        return FALSE;
  return read_by_name_from (d, node, 0);
}

/* Whether the product `node`'s result order `x` already keeps its rows and its columns
 * each one run, in the order of the operand they come from. */
static gboolean
keeps_gemm_runs_as (NapkinDiagram          *d,
                    guint                   node,
                    const NapkinTensorType *x)
{
  const NapkinTensorType *side[2];

  for (guint k = 0; k < 2; k++)
    side[k] = napkin_diagram_node_type (d, (guint) napkin_diagram_input_source (d, node, k));
  for (guint k = 0; k < 2; k++)
    {
      const NapkinTensorType *own = side[k];
      int first = -1, previous = -1;

      for (guint i = 0; i < own->n_axes; i++)
        {
          int at;

          if (_napkin_plan_product_role (side[0], side[1], x, own->axes[i]) != (k == 0 ? NAPKIN_PLAN_ROLE_ROW
                                                                                      : NAPKIN_PLAN_ROLE_COLUMN))
            continue;           /* batch, contracted or summed alone */
          at = _napkin_plan_axes_position (x->axes, x->n_axes, own->axes[i]);
          if (first >= 0 && at != previous + 1)
            return FALSE;
          if (first < 0)
            first = at;
          previous = at;
        }
    }
  return TRUE;
}

static gboolean operand_runs (NapkinDiagram *d, guint c, guint port);

/* The order in which the product `node` stores its result as one GEMM: batch axes in its
 * own order, then its rows in its first operand's order, then its columns in its
 * second's. NULL where it lies so already, or where a consumer reads its flat order. A
 * projection written after a transpose (nn.MultiheadAttention's [s, b, ...] from an
 * [b, s, e] input) would else split its rows. */
static char **
result_order (NapkinDiagram *d,
              guint          node)
{
  const NapkinNode *p = napkin_diagram_node (d, node);
  const NapkinTensorType *x = napkin_diagram_node_type (d, node), *side[2] = { NULL, NULL };
  g_autoptr(GPtrArray) want = g_ptr_array_new ();
  gboolean same = TRUE;
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, node, &n_consumers);

  /* a value one product reads is laid out for that product (operand_order); attention's
   * P·V stores O in any order */
  if (p->kind != NAPKIN_OP_CONTRACT || x == NULL || !x->valid || !read_by_name (d, node)
      || reads_probabilities (d, node))
    return NULL;
  /* read by one product: laid out for it where this product's GEMM keeps its runs
   * (operand_order); where not, for this product, and the reader gets a copy in front
   * (insert_operand_copies) */
  if (n_consumers == 1 && napkin_diagram_node (d, consumers[0])->kind == NAPKIN_OP_CONTRACT)
    {
      char **moved = operand_order (d, node);

      if (moved != NULL || operand_runs (d, consumers[0], napkin_diagram_input_source (d, consumers[0], 0) == (int) node
                                                           ? 0 : 1))
        {
          g_strfreev (moved);
          return NULL;
        }
    }
  for (guint k = 0; k < 2; k++)
    {
      int src = napkin_diagram_input_source (d, node, k);
      char **moved;

      if (src < 0 || (side[k] = napkin_diagram_node_type (d, (guint) src)) == NULL || !side[k]->valid)
        return NULL;
      /* an operand laid out for this product follows its result order, not the reverse */
      moved = operand_order (d, (guint) src);
      if (moved != NULL)
        {
          g_strfreev (moved);
          return NULL;
        }
    }
  for (guint i = 0; i < x->n_axes; i++)
    if (_napkin_plan_product_role (side[0], side[1], x, x->axes[i]) == NAPKIN_PLAN_ROLE_BATCH)
      g_ptr_array_add (want, (gpointer) napkin_diagram_axis (d, x->axes[i])->name);
  for (guint k = 0; k < 2; k++)
    for (guint i = 0; i < side[k]->n_axes; i++)
      if (_napkin_plan_product_role (side[0], side[1], x, side[k]->axes[i])
          == (k == 0 ? NAPKIN_PLAN_ROLE_ROW : NAPKIN_PLAN_ROLE_COLUMN))
        g_ptr_array_add (want, (gpointer) napkin_diagram_axis (d, side[k]->axes[i])->name);
  if (want->len != x->n_axes)
    return NULL;
  for (guint i = 0; i < x->n_axes; i++)
    same &= g_str_equal (napkin_diagram_axis (d, x->axes[i])->name, g_ptr_array_index (want, i));
  if (same || keeps_gemm_runs_as (d, node, x))
    return NULL;
  g_ptr_array_add (want, NULL);
  return g_strdupv ((char **) want->pdata);
}

/* After a product's result moved from the order `before` to `after` (axis names), the
 * renames by position downstream of it (through the operations whose order follows
 * their input's) take the same permutation, in `copy`: the same meaning, no copy. */
static void
carry_renames (NapkinDiagram *work,
               NapkinDiagram *copy,
               guint          node,
               GPtrArray     *before,
               GPtrArray     *after,
               guint          depth)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (work, node, &n_consumers);
  const NapkinTensorType *x = napkin_diagram_node_type (work, node);

  if (depth > 16 || x == NULL || !x->valid)
    return;
  for (guint i = 0; i < n_consumers; i++)
    {
      guint c = consumers[i];
      const NapkinNode *cn = napkin_diagram_node (work, c);

      if (napkin_diagram_input_source (work, c, 0) != (int) node)
        continue;     /* the order follows the other input */
      if (cn->kind == NAPKIN_OP_REARRANGE && positional_rename (work, cn, x))
        {
          NapkinNode *target = napkin_diagram_get_item (copy, NAPKIN_ITEM_NODE, c);
          g_auto(GStrv) old_out = g_strdupv (cn->out);

          for (guint j = 0; j < after->len; j++)
            for (guint k = 0; k < before->len; k++)
              if (g_str_equal (g_ptr_array_index (after, j), g_ptr_array_index (before, k)))
                {
                  g_free (target->out[j]);
                  target->out[j] = g_strdup (old_out[k]);
                }
        }
      else if ((cn->kind == NAPKIN_OP_MAP && cn->out == NULL) || cn->kind == NAPKIN_OP_SOFTMAX
               || cn->kind == NAPKIN_OP_NORMALIZE || cn->kind == NAPKIN_OP_MASK)
        carry_renames (work, copy, c, before, after, depth + 1);
      else if (cn->kind == NAPKIN_OP_REDUCE)
        {
          const NapkinTensorType *y = napkin_diagram_node_type (work, c);
          g_autoptr(GPtrArray) b = g_ptr_array_new (), a = g_ptr_array_new ();

          for (guint k = 0; y != NULL && k < before->len; k++)
            {
              if (napkin_tensor_type_has_axis (y, napkin_diagram_find_axis (work, g_ptr_array_index (before, k))))
                g_ptr_array_add (b, g_ptr_array_index (before, k));
              if (napkin_tensor_type_has_axis (y, napkin_diagram_find_axis (work, g_ptr_array_index (after, k))))
                g_ptr_array_add (a, g_ptr_array_index (after, k));
            }
          carry_renames (work, copy, c, b, a, depth + 1);
        }
    }
}

/* Whether the product `c` reads its operand on `port` with that side's own axes (its
 * rows or columns) and the contracted axes each one contiguous run of the operand's
 * order: a GEMM takes it as stored, or after a copy that moves its batch axes. */
static gboolean
operand_runs (NapkinDiagram *d,
              guint          c,
              guint          port)
{
  const NapkinTensorType *x = NULL, *y = NULL, *o = napkin_diagram_node_type (d, c);
  int xs = napkin_diagram_input_source (d, c, 0), ys = napkin_diagram_input_source (d, c, 1);

  if (xs < 0 || ys < 0 || o == NULL || !o->valid)
    return TRUE;
  x = napkin_diagram_node_type (d, (guint) xs);
  y = napkin_diagram_node_type (d, (guint) ys);
  if (x == NULL || y == NULL || !x->valid || !y->valid)
    return TRUE;
  {
    const NapkinTensorType *side = port == 0 ? x : y;
    NapkinPlanRole own = port == 0 ? NAPKIN_PLAN_ROLE_ROW : NAPKIN_PLAN_ROLE_COLUMN;
    const NapkinPlanRole roles[] = { own, NAPKIN_PLAN_ROLE_CONTRACTED };

    for (guint g = 0; g < G_N_ELEMENTS (roles); g++)
      {
        int first = -1, last = -1, count = 0;

        for (guint i = 0; i < side->n_axes; i++)
          if (_napkin_plan_product_role (x, y, o, side->axes[i]) == roles[g]
              && napkin_diagram_axis_size (d, side->axes[i]) > 1)
            {
              if (first < 0)
                first = (int) i;
              last = (int) i;
              count++;
            }
        /* size-1 axes between do not break a run */
        for (int i = first; first >= 0 && i <= last; i++)
          if (_napkin_plan_product_role (x, y, o, side->axes[i]) != roles[g]
              && napkin_diagram_axis_size (d, side->axes[i]) > 1)
            return FALSE;
      }
  }
  return TRUE;
}

/* Whether the product `c` is a product of an attention the plan fuses (its Q·Kᵀ or its
 * P·V): the attention kernel reads its operands through any strides. */
static gboolean
in_attention (NapkinDiagram *d,
              guint          c)
{
  guint at = c;

  if (reads_probabilities (d, c))
    return TRUE;
  for (guint step = 0; step < 16; step++)
    {
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (d, at, &n_consumers);
      const NapkinNode *n;

      if (n_consumers != 1)
        return FALSE;
      at = consumers[0];
      n = napkin_diagram_node (d, at);
      if (n->kind == NAPKIN_OP_SOFTMAX)
        {
          consumers = napkin_diagram_consumers (d, at, &n_consumers);
          return scores_fuse (d, at) && n_consumers == 1
                 && napkin_diagram_node (d, consumers[0])->kind == NAPKIN_OP_CONTRACT;
        }
      if (!score_step (n))
        return FALSE;
    }
  return FALSE;
}

/* Product c stores its result in the order a GEMM writes it — batch axes, then its rows,
 * then its columns (each in its operand's order) — and a permuting rearrange after it
 * puts the value back in the drawn order for its readers (a gradient stored [b, k, h, d]
 * as its input was: the product writes [b, h, k, d]). FALSE where the order is already
 * that one or an axis is summed alone. */
static gboolean
insert_result_copy (NapkinDiagram *copy,
                    guint          c)
{
  NapkinNode *cn = napkin_diagram_get_item (copy, NAPKIN_ITEM_NODE, c);
  int xs = napkin_diagram_input_source (copy, c, 0), ys = napkin_diagram_input_source (copy, c, 1);
  const NapkinTensorType *x, *y, *o = napkin_diagram_node_type (copy, c);
  g_autoptr(GPtrArray) order = g_ptr_array_new ();
  g_auto(GStrv) drawn = NULL;
  g_autofree char *id = NULL;
  gboolean same = TRUE;
  NapkinNode *perm;
  NapkinWire *wire;
  guint n_wires;

  if (xs < 0 || ys < 0 || o == NULL || !o->valid)
    return FALSE;
  x = napkin_diagram_node_type (copy, (guint) xs);
  y = napkin_diagram_node_type (copy, (guint) ys);
  /* batch axes (in both operands), then x's own, in x's order; then y's own */
  for (guint pass = 0; pass < 3; pass++)
    {
      const NapkinTensorType *side = pass == 2 ? y : x;

      for (guint i = 0; i < side->n_axes; i++)
        {
          guint axis = side->axes[i];
          gboolean in_other = napkin_tensor_type_has_axis (pass == 2 ? x : y, axis);

          if (!napkin_tensor_type_has_axis (o, axis) || (pass == 0) != in_other)
            continue;
          g_ptr_array_add (order, (gpointer) napkin_diagram_axis (copy, axis)->name);
        }
    }
  if (order->len != o->n_axes)
    return FALSE;
  for (guint i = 0; i < o->n_axes; i++)
    same &= g_str_equal (g_ptr_array_index (order, i), napkin_diagram_axis (copy, o->axes[i])->name);
  if (same)
    return FALSE;
  drawn = g_new0 (char *, o->n_axes + 1);
  for (guint i = 0; i < o->n_axes; i++)
    drawn[i] = g_strdup (napkin_diagram_axis (copy, o->axes[i])->name);
  g_ptr_array_add (order, NULL);
  {
    g_autofree char *stem = g_strdup_printf ("%s_out", cn->id);

    id = g_strdup (stem);
    for (guint k = 2; napkin_diagram_find_node (copy, id) >= 0; k++)
      {
        g_free (id);
        id = g_strdup_printf ("%s_%u", stem, k);
      }
  }
  /* the readers read the copy */
  n_wires = napkin_diagram_n_wires (copy);
  for (guint i = 0; i < n_wires; i++)
    if (g_str_equal (napkin_diagram_wire (copy, i)->from, cn->id))
      {
        wire = napkin_item_copy (NAPKIN_ITEM_WIRE, napkin_diagram_wire (copy, i));
        g_free (wire->from);
        wire->from = g_strdup (id);
        napkin_diagram_replace_item (copy, NAPKIN_ITEM_WIRE, i, wire);
      }
  g_strfreev (cn->out);
  cn->out = g_strdupv ((char **) order->pdata);
  perm = napkin_node_new (id, NAPKIN_OP_REARRANGE);
  perm->out = g_steal_pointer (&drawn);
  perm->label = g_strdup (_("result copy"));
  napkin_diagram_insert_item (copy, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (copy), perm);
  wire = g_new0 (NapkinWire, 1);
  wire->from = g_strdup (napkin_diagram_node (copy, c)->id);
  wire->to = g_strdup (id);
  napkin_diagram_insert_item (copy, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (copy), wire);
  return TRUE;
}

/* A product outside every region whose operand split its own or its contracted axes in
 * the first plan (Gemma's queries [b, s, h, g, d] read as [b, h, (g, s), d] after
 * repeat_kv; `copies` says which), where the operand's producer cannot store it
 * otherwise: a permuting rearrange in front of it, which the plan runs as an
 * element-wise copy, and then one GEMM (docs/plan.md, "The pipeline"). The copy takes
 * the order operand_order would have asked for. */
static gboolean
insert_operand_copies (NapkinDiagram *copy,
                       GHashTable    *copies)
{
  guint n_nodes = napkin_diagram_n_nodes (copy);
  gboolean any = FALSE;

  for (guint c = 0; c < n_nodes; c++)
    {
      const NapkinNode *cn = napkin_diagram_node (copy, c);
      gboolean drawn = FALSE;

      if (cn->kind != NAPKIN_OP_CONTRACT || in_attention (copy, c))
        continue;
      for (guint r = 0; r < napkin_diagram_n_regions (copy) && !drawn; r++)
        drawn = napkin_region_has_node (napkin_diagram_region (copy, r), cn->id);
      if (drawn)
        continue;
      /* the result's order first: the operands' copies follow it */
      if (g_hash_table_contains (copies, NAPKIN_PLAN_COPY_KEY (c, NAPKIN_PLAN_COPY_RESULT)) && insert_result_copy (copy, c))
        {
          napkin_diagram_changed (copy);
          cn = napkin_diagram_node (copy, c);
          any = TRUE;
        }
      for (guint port = 0; port < 2; port++)
        {
          int src = napkin_diagram_input_source (copy, c, port), other = napkin_diagram_input_source (copy, c, 1 - port);
          const NapkinTensorType *x, *y;
          g_autoptr(GPtrArray) want = g_ptr_array_new ();
          g_autofree char *id = NULL;
          NapkinNode *perm;
          NapkinWire *in, *out;
          int w = -1;

          if (src < 0 || other < 0 || !g_hash_table_contains (copies, NAPKIN_PLAN_COPY_KEY (c, port)))
            continue;
          x = napkin_diagram_node_type (copy, (guint) src);
          y = napkin_diagram_node_type (copy, (guint) other);
          if (!operand_want (copy, c, x, y, g_hash_table_contains (copies, NAPKIN_PLAN_COPY_OWN_ORDER), want))
            continue;     /* an axis summed alone: not a GEMM operand */
          {
            gboolean same = TRUE;

            for (guint i = 0; i < x->n_axes; i++)
              same &= g_str_equal (g_ptr_array_index (want, i), napkin_diagram_axis (copy, x->axes[i])->name);
            if (same)
              continue;   /* already in that order (the result's copy moved the product) */
          }
          g_ptr_array_add (want, NULL);
          for (guint i = 0; i < napkin_diagram_n_wires (copy) && w < 0; i++)
            if (g_str_equal (napkin_diagram_wire (copy, i)->to, cn->id) && napkin_diagram_wire (copy, i)->port == port)
              w = (int) i;
          if (w < 0)
            continue;
          {
            g_autofree char *stem = g_strdup_printf ("%s_in%u", cn->id, port);

            id = g_strdup (stem);
            for (guint k = 2; napkin_diagram_find_node (copy, id) >= 0; k++)
              {
                g_free (id);
                id = g_strdup_printf ("%s_%u", stem, k);
              }
          }
          perm = napkin_node_new (id, NAPKIN_OP_REARRANGE);
          perm->out = g_strdupv ((char **) want->pdata);
          perm->label = g_strdup (_("operand copy"));
          napkin_diagram_insert_item (copy, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (copy), perm);
          in = napkin_item_copy (NAPKIN_ITEM_WIRE, napkin_diagram_wire (copy, (guint) w));
          out = napkin_item_copy (NAPKIN_ITEM_WIRE, napkin_diagram_wire (copy, (guint) w));
          g_free (in->to);
          in->to = g_strdup (id);
          in->port = 0;
          g_free (out->from);
          out->from = g_strdup (id);
          napkin_diagram_replace_item (copy, NAPKIN_ITEM_WIRE, (guint) w, in);
          napkin_diagram_insert_item (copy, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (copy), out);
          cn = napkin_diagram_node (copy, c);
          any = TRUE;
        }
    }
  return any;
}

NapkinDiagram *
_napkin_plan_canonical (NapkinDiagram *d,
                        GHashTable    *folded,
                        GHashTable    *copies)
{
  NapkinDiagram *copy = fold_casts (d, folded);
  NapkinDiagram *work = copy != NULL ? copy : d;
  guint n_nodes = napkin_diagram_n_nodes (work);

  /* a value one product alone reads, laid out as that product's operand: a permutation
   * of the axes it is computed over, so the same function (the attention's O before its
   * output projection, stored [b, s, h, d]). Twice: a product whose operand moved in
   * the first pass (Gemma's scores, laid out for Q·Kᵀ) may then want its own result
   * moved (P·V's rows follow P's new order). */
  for (guint pass = 0; pass < 2; pass++)
  {
  g_autoptr(GPtrArray) orders = g_ptr_array_new_with_free_func ((GDestroyNotify) g_strfreev);
  gboolean moved = FALSE;

  for (guint n = 0; n < n_nodes; n++)
    {
      char **order = operand_order (work, n);

      g_ptr_array_add (orders, order != NULL ? order : result_order (work, n));
      moved |= g_ptr_array_index (orders, n) != NULL;
    }
  if (!moved)
    break;
  for (guint n = 0; n < n_nodes; n++)
    {
      NapkinNode *node;

      if (g_ptr_array_index (orders, n) == NULL)
        continue;
      if (copy == NULL)
        work = copy = napkin_diagram_copy (d);
      node = napkin_diagram_get_item (copy, NAPKIN_ITEM_NODE, n);
      if (node->kind == NAPKIN_OP_REARRANGE && node->out != NULL)
        {
          /* a reshape's axis order is its meaning (the flat index): only permutations move */
          const NapkinTensorType *in = napkin_diagram_node_type (copy, napkin_diagram_input_source (copy, n, 0));
          gboolean permutation = in != NULL && in->valid && in->n_axes == g_strv_length (node->out);

          for (guint i = 0; permutation && node->out[i] != NULL; i++)
            permutation = napkin_tensor_type_has_axis (in, napkin_diagram_find_axis (copy, node->out[i]));
          if (!permutation)
            continue;
        }
      if (node->kind == NAPKIN_OP_CONTRACT)
        {
          const NapkinTensorType *was = napkin_diagram_node_type (work, n);
          g_autoptr(GPtrArray) before = g_ptr_array_new (), after = g_ptr_array_new ();
          char **order = g_ptr_array_index (orders, n);

          for (guint i = 0; i < was->n_axes; i++)
            g_ptr_array_add (before, (gpointer) napkin_diagram_axis (work, was->axes[i])->name);
          for (guint i = 0; order[i] != NULL; i++)
            g_ptr_array_add (after, order[i]);
          carry_renames (work, copy, n, before, after, 0);
        }
      g_strfreev (node->out);
      node->out = g_strdupv (g_ptr_array_index (orders, n));
    }
  if (copy != NULL)
    napkin_diagram_changed (copy);
  }
  /* operands no order of their producer serves: a copy in front of the product */
  if (copies != NULL && g_hash_table_size (copies) > 0)
  {
    NapkinDiagram *trial = copy != NULL ? copy : napkin_diagram_copy (d);

    if (insert_operand_copies (trial, copies))
      {
        napkin_diagram_changed (trial);
        copy = trial;
      }
    else if (trial != copy)
      g_object_unref (trial);
  }
  return copy;
}

static NapkinDiagram *
fold_casts (NapkinDiagram *d,
            GHashTable    *folded)
{
  guint n_nodes = napkin_diagram_n_nodes (d);
  const guint *topo = napkin_diagram_topo_order (d);
  g_autofree gboolean *bypass = g_new0 (gboolean, n_nodes + 1);
  g_autofree NapkinDtype *type = g_new0 (NapkinDtype, n_nodes + 1);
  g_autofree int *into = g_new (int, n_nodes + 1);
  NapkinDiagram *copy;
  gboolean any = FALSE;

  for (guint i = 0; i < n_nodes; i++)
    {
      guint n = topo[i];
      const NapkinNode *node = napkin_diagram_node (d, n);
      const NapkinTensorType *t = napkin_diagram_node_type (d, n);
      int src = napkin_op_n_inputs (node) > 0 ? napkin_diagram_input_source (d, n, 0) : -1;
      guint n_consumers;

      type[n] = t != NULL && t->valid ? t->dtype : NAPKIN_DTYPE_FP32;
      into[n] = -1;
      if (node->kind != NAPKIN_OP_MAP || node->fn != NAPKIN_FN_CAST || !node->has_dtype || src < 0)
        continue;
      /* a cast folds into what it casts, itself maybe a cast folded further up */
      if (into[src] >= 0)
        src = into[src];
      napkin_diagram_consumers (d, (guint) src, &n_consumers);
      if (napkin_diagram_node (d, src)->kind == NAPKIN_OP_INPUT || n_consumers != 1 || !napkin_dtype_narrows (type[src], node->dtype)
          || !same_regions (d, (guint) src, n))
        continue;
      bypass[n] = any = TRUE;
      into[n] = src;
      type[src] = node->dtype;
    }
  if (!any)
    return NULL;
  copy = napkin_diagram_copy_bypassing (d, bypass);
  for (guint n = 0; n < n_nodes; n++)
    if (bypass[n])
      {
        const char *producer = napkin_diagram_node (d, into[n])->id;
        NapkinNode *target = napkin_diagram_get_item (copy, NAPKIN_ITEM_NODE, napkin_diagram_find_node (copy, producer));

        target->has_dtype = TRUE;
        target->dtype = type[into[n]];
        g_hash_table_insert (folded, g_strdup (napkin_diagram_node (d, n)->id), g_strdup (producer));
      }
  napkin_diagram_changed (copy);
  return copy;
}

/* ---- attention chains ------------------------------------------------------------------ */

typedef struct
{
  guint nodes[MAX_CHAIN];
  guint n;
  guint qk, sm, pv;
} Chain;

/* The one consumer of `node`, an operation outside every drawn region, or −1. */
static int
next_outside (NapkinPlanner *p,
              guint          node)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (p->d, node, &n_consumers);

  if (n_consumers != 1 || p->top[consumers[0]] >= 0)
    return -1;
  return (int) consumers[0];
}

/* Whether `node` applies an operand to the chain's value `from` (a map add or sub of
 * another value, a tensor mask): the operand, read from device memory, carries only
 * axes of the scores (a bias [h, q, k], a padding mask [b, k]), so the kernel reads it
 * per (row, key) as it goes (docs/plan.md, "Score operands"). */
static gboolean
score_operand (NapkinPlanner    *p,
               const NapkinNode *node,
               guint             at,
               guint             from)
{
  int in0 = napkin_diagram_input_source (p->d, at, 0), in1 = napkin_diagram_input_source (p->d, at, 1);
  int other = in0 == (int) from ? in1 : in0;
  const NapkinTensorType *scores = napkin_diagram_node_type (p->d, from), *x;

  if (!((node->kind == NAPKIN_OP_MAP && (node->fn == NAPKIN_FN_ADD || node->fn == NAPKIN_FN_SUB))
        || (node->kind == NAPKIN_OP_MASK && node->mask == NAPKIN_MASK_TENSOR && in0 == (int) from)))
    return FALSE;
  if (in0 < 0 || in1 < 0 || in0 == in1 || scores == NULL)
    return FALSE;
  x = napkin_diagram_node_type (p->d, (guint) other);
  if (x == NULL || !x->valid)
    return FALSE;
  for (guint i = 0; i < x->n_axes; i++)
    if (!napkin_tensor_type_has_axis (scores, x->axes[i]))
      return FALSE;
  return TRUE;
}

/* Q·Kᵀ, then scales, casts, masks of keys per query and score operands (biases, tensor
 * masks), a softmax, then ·V, each value read only by the next: what the attention
 * kernel may take (its recogniser decides). */
static gboolean
attention_chain (NapkinPlanner *p,
                 guint          qk,
                 Chain         *c)
{
  int at = (int) qk;
  guint prev = qk;

  if (napkin_diagram_node (p->d, qk)->kind != NAPKIN_OP_CONTRACT || p->top[qk] >= 0)
    return FALSE;
  c->n = 0;
  c->qk = qk;
  c->nodes[c->n++] = qk;
  /* Q or K scaled before Q·Kᵀ, read by it alone: the scale goes with the kernel (into α);
   * `prev` is the chain's value before each operation (the scales are beside it) */
  for (guint port = 0; port < 2; port++)
    {
      int x = napkin_diagram_input_source (p->d, qk, port);

      if (x >= 0 && p->top[x] < 0 && next_outside (p, (guint) x) == (int) qk)
        {
          const NapkinNode *xn = napkin_diagram_node (p->d, (guint) x);

          if (xn->kind == NAPKIN_OP_MAP && xn->fn == NAPKIN_FN_SCALE && napkin_diagram_input_source (p->d, (guint) x, 0) >= 0)
            c->nodes[c->n++] = (guint) x;
        }
    }
  while ((at = next_outside (p, (guint) at)) >= 0 && c->n < MAX_CHAIN - 1)
    {
      const NapkinNode *node = napkin_diagram_node (p->d, at);

      c->nodes[c->n++] = (guint) at;
      if (node->kind == NAPKIN_OP_SOFTMAX)
        {
          int pv = next_outside (p, (guint) at);

          if (pv < 0 || napkin_diagram_node (p->d, pv)->kind != NAPKIN_OP_CONTRACT)
            return FALSE;
          c->sm = (guint) at;
          c->pv = (guint) pv;
          c->nodes[c->n++] = (guint) pv;
          /* renames of K and V (the importer's s → k) go with the kernel as views: it
           * reads their inputs' bytes, no copy kernel (docs/plan.md, "Views") */
          for (guint port = 0; port < 2; port++)
            {
              int view = napkin_diagram_input_source (p->d, port == 0 ? qk : (guint) pv, 1);

              if (view >= 0 && p->top[view] < 0 && _napkin_plan_is_view (p->d, (guint) view) && c->n < MAX_CHAIN)
                c->nodes[c->n++] = (guint) view;
            }
          return TRUE;
        }
      if (!(node->kind == NAPKIN_OP_MAP && (node->fn == NAPKIN_FN_SCALE || node->fn == NAPKIN_FN_CAST))
          && !(node->kind == NAPKIN_OP_MASK && node->mask != NAPKIN_MASK_TENSOR)
          && !score_operand (p, node, (guint) at, prev))
        return FALSE;
      prev = (guint) at;
    }
  return FALSE;
}

/* The type of the value feeding `node`'s input `port`. */
static const NapkinTensorType *
operand_type (NapkinPlanner *p,
              guint          node,
              guint          port)
{
  int src = napkin_diagram_input_source (p->d, node, port);

  return src >= 0 ? napkin_diagram_node_type (p->d, (guint) src) : NULL;
}

/* The tiles the plan gives an attention chain: `rows` query rows a block (with `stack`,
 * the query heads of a GQA group stacked on them; else a head a block), keys streamed
 * by `keys` in `stages` stages, every other axis of K parallel in groups of 1, the head
 * axes whole — the relabeling of FlashAttention (docs/plan.md, "The pipeline"). NULL
 * where the axes do not take that form (the recogniser then says why). */
static NapkinRegion *
attention_region (NapkinPlanner *p,
                  const Chain   *c,
                  const char    *name,
                  gint64         rows,
                  gint64         keys,
                  guint          stages,
                  gboolean       stack)
{
  NapkinDiagram *d = p->d;
  const NapkinTensorType *q = operand_type (p, c->qk, 0), *k = operand_type (p, c->qk, 1);
  const NapkinTensorType *o = napkin_diagram_node_type (d, c->pv), *s = napkin_diagram_node_type (d, c->qk);
  const NapkinTensorType *v = operand_type (p, c->pv, napkin_diagram_input_source (d, c->pv, 0) == (int) c->sm ? 1 : 0);
  int key = napkin_diagram_find_axis (d, napkin_diagram_node (d, c->sm)->axis), query;
  gint64 group = 1, nq, bq;
  NapkinRegion *region;

  if (q == NULL || k == NULL || v == NULL || o == NULL || s == NULL || key < 0)
    return NULL;
  /* the query axis; the others Q and O have and K lacks are the query heads of a
   * group (GQA), stacked on the query tile or a head a block */
  query = napkin_plan_attention_query (d, c->qk, c->sm, c->pv, &group);
  if (query < 0)
    return NULL;
  if (!stack)
    group = 1;
  if (group > rows)
    return NULL;
  nq = napkin_diagram_axis_size (d, query);
  bq = MAX (1, rows / group);

  region = napkin_region_new (name, NAPKIN_LEVEL_SMEM);
  region->stages = stages;
  for (guint i = 0; i < c->n; i++)
    napkin_region_add_node (region, napkin_diagram_node (d, c->nodes[i])->id);
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      const char *axis = napkin_diagram_axis (d, a)->name;
      gboolean in_q = napkin_tensor_type_has_axis (q, a), in_k = napkin_tensor_type_has_axis (k, a);
      gboolean in_o = napkin_tensor_type_has_axis (o, a), in_s = napkin_tensor_type_has_axis (s, a);
      gint64 size = napkin_diagram_axis_size (d, a);

      if (!in_q && !in_k && !in_o && !in_s && !napkin_tensor_type_has_axis (v, a))
        continue;
      if ((int) a == key)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_STREAM, MIN (keys, size));
      else if ((int) a == query && bq < nq)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_PARALLEL, bq);
      else if (in_q && in_k && in_o && in_s)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_PARALLEL, 1);   /* batch, KV heads */
      else if (!stack && in_q && in_o && in_s && (int) a != query)
        napkin_region_set_mark (region, axis, NAPKIN_MARK_PARALLEL, 1);   /* a query head a block */
      /* else whole: the head axes, a group, a query axis within one tile */
    }
  return region;
}

/* Whether `recognise` takes `nodes` as region `r` of p->d; else *why. */
static gboolean
recogniser_takes (NapkinPlanner *p,
                  gboolean     (*recognise) (NapkinPlanner *, NapkinPlanKernel *, char **),
                  const guint   *nodes,
                  guint          n,
                  int            r,
                  char         **why)
{
  NapkinPlanner trial = *p;
  NapkinPlan scratch = { 0 };
  NapkinPlanKernel *k = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);
  gboolean ok;

  /* the recogniser may queue helpers and scratch buffers: they go with the trial */
  scratch.arch = p->arch;
  scratch.scratch = g_array_new (FALSE, FALSE, sizeof (gint64));
  scratch.scratch_offset = g_array_new (FALSE, FALSE, sizeof (gint64));
  trial.plan = &scratch;
  trial.before = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  trial.after = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  trial.member_of = NULL;
  k->region = r;
  g_array_append_vals (k->nodes, nodes, n);
  ok = recognise (&trial, k, why);
  if (!ok && *why == NULL)
    *why = g_strdup (_("its operations are not one attention"));
  p->member_stamp = trial.member_stamp;
  _napkin_plan_kernel_free (k);
  g_ptr_array_unref (trial.before);
  g_ptr_array_unref (trial.after);
  g_array_unref (scratch.scratch);
  g_array_unref (scratch.scratch_offset);
  return ok;
}

/* A region name the diagram does not use yet. */
static char *
fresh_name (NapkinDiagram *d,
            const char    *stem)
{
  for (guint i = 1;; i++)
    {
      g_autofree char *name = g_strdup_printf ("%s%u", stem, i);

      if (napkin_diagram_find_region (d, name) < 0)
        return g_steal_pointer (&name);
    }
}

/* The chain's sizes the tile rule reads: the contracted head size, the keys, the
 * queries of a block's group and whether V is 8 bits. */
typedef struct
{
  gint64   d, nq, nk, group;
  gboolean fp8_pv, fp8;
} ChainSizes;

static void
chain_sizes (NapkinPlanner *p,
             const Chain   *c,
             ChainSizes    *z)
{
  const NapkinTensorType *q = operand_type (p, c->qk, 0), *k = operand_type (p, c->qk, 1);
  const NapkinTensorType *v = operand_type (p, c->pv, napkin_diagram_input_source (p->d, c->pv, 0) == (int) c->sm ? 1 : 0);
  const NapkinTensorType *s = napkin_diagram_node_type (p->d, c->qk), *o = napkin_diagram_node_type (p->d, c->pv);
  gboolean has_dtype = p->options != NULL && p->options->has_dtype;

  memset (z, 0, sizeof *z);
  z->group = 1;
  if (q == NULL || k == NULL || v == NULL || s == NULL || o == NULL)
    return;
  for (guint i = 0; i < q->n_axes; i++)
    if (!napkin_tensor_type_has_axis (s, q->axes[i]))
      z->d = MAX (z->d, napkin_diagram_axis_size (p->d, q->axes[i]));   /* contracted: the head */
  /* the queries, and the query heads of a group (GQA) */
  {
    int query = napkin_plan_attention_query (p->d, c->qk, c->sm, c->pv, &z->group);

    z->nq = query >= 0 ? napkin_diagram_axis_size (p->d, (guint) query) : 0;
  }
  z->nk = napkin_diagram_axis_size (p->d, napkin_diagram_find_axis (p->d, napkin_diagram_node (p->d, c->sm)->axis));
  z->fp8 = has_dtype ? napkin_dtype_bytes (p->options->dtype) == 1 : napkin_dtype_bytes (q->dtype) == 1;
  z->fp8_pv = has_dtype ? z->fp8 : napkin_dtype_bytes (v->dtype) == 1;
}

/* The plan's region for the chain at the first tiles the kernel takes. First the tiles
 * of the rule the drawn examples follow (docs/plan.md, "Attention kernels"): 128 query
 * rows a block (decoding: the group's heads stacked on the queries), keys by 128 up to
 * d 128, 112 to d 192, 80 above (fp8 P·V: 128), 3 stages up to d 128 and in decoding,
 * else 2; then smaller ones. FALSE with *why from the last refusal. */
static gboolean
place_attention (NapkinPlanner *p,
                 const Chain   *c,
                 char         **why)
{
  ChainSizes z;
  g_autofree char *name = fresh_name (p->d, "attention");
  struct { gint64 rows, keys; guint stages; } tiles[] = {
    { 128, 128, 3 }, { 128, 64, 2 }, { 64, 128, 2 }, { 64, 64, 2 }, { 64, 32, 2 },
  };
  gboolean decode;

  chain_sizes (p, c, &z);
  decode = z.nq <= 64 && z.nk >= 32 * z.nq;
  tiles[0].keys = z.d <= 128 || z.fp8_pv ? 128 : z.d <= 192 ? 112 : 80;
  tiles[0].stages = z.d <= 128 || decode ? 3 : 2;
  if (z.fp8 && !decode)
    tiles[0].stages = 2;

  for (guint t = 0; t < G_N_ELEMENTS (tiles); t++)
    for (guint second = 0; second < 2; second++)
      {
        /* a group's heads stacked on the queries share each K and V chunk; else a head
         * a block, as FlashAttention runs many query heads per K/V head */
        gboolean stack_first = napkin_plan_attention_stacks (z.group, z.nq, z.nk, tiles[t].rows);
        NapkinRegion *region;
        guint r = napkin_diagram_n_regions (p->d);

        if (second && z.group == 1)
          break;
        region = attention_region (p, c, name, tiles[t].rows, tiles[t].keys, tiles[t].stages,
                                   second ? !stack_first : stack_first);
        if (region == NULL)
          continue;
        napkin_diagram_insert_item (p->d, NAPKIN_ITEM_REGION, r, region);
        g_clear_pointer (why, g_free);
        if (recogniser_takes (p, _napkin_plan_try_attention, c->nodes, c->n, (int) r, why))
          return TRUE;
        napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (p->d, NAPKIN_ITEM_REGION, r));
      }
  if (*why == NULL)
    *why = g_strdup (_("no query tile holds a whole group of query heads"));
  return FALSE;
}

/* Whether `axis` is a batch axis of the product `qk` (in both operands): the K/V heads,
 * which the backward kernel's blocks split; the queries and a GQA group are summed by dK
 * and dV. */
static gboolean
qk_batch_axis (NapkinDiagram *d,
               int            qk,
               guint          axis)
{
  for (guint port = 0; qk >= 0 && port < 2; port++)
    {
      int src = napkin_diagram_input_source (d, (guint) qk, port);
      const NapkinTensorType *t = src >= 0 ? napkin_diagram_node_type (d, (guint) src) : NULL;

      if (t == NULL || !napkin_tensor_type_has_axis (t, axis))
        return FALSE;
    }
  return qk >= 0;
}

/* The fused backward of an attention (docs/plan.md, "Attention backward"): its
 * operations as one region of the plan's, the keys cut into the kernel's blocks, the
 * queries streamed. TRUE where the kernel takes them (else the region is taken back and
 * the operations stay the plan's to place one by one, with the refusal noted). */
static gboolean
place_attention_backward (NapkinPlanner *p,
                          GArray        *nodes)
{
  NapkinDiagram *d = p->d;
  g_autofree char *name = fresh_name (d, "attention_backward");
  NapkinRegion *region = napkin_region_new (name, NAPKIN_LEVEL_SMEM);
  guint r = napkin_diagram_n_regions (d);
  g_autofree char *why = NULL;
  int sm = -1;

  region->stages = 2;   /* Q and dO through two cp.async buffers */

  for (guint i = 0; i < nodes->len; i++)
    {
      guint n = g_array_index (nodes, guint, i);

      napkin_region_add_node (region, napkin_diagram_node (d, n)->id);
      if (napkin_diagram_node (d, n)->kind == NAPKIN_OP_SOFTMAX)
        sm = (int) n;
    }
  /* marks the lowering can run as written (the kernel's own tiles are the plan's): the
   * K/V heads parallel, the queries streamed (dK and dV sum over them, and over a GQA
   * group, kept whole), the keys whole (the softmax's axis) */
  {
    const NapkinTensorType *s = napkin_diagram_node_type (d, (guint) sm);
    int key = napkin_diagram_find_axis (d, napkin_diagram_node (d, (guint) sm)->axis);
    int query = -1, qk = napkin_diagram_input_source (d, (guint) sm, 0);

    /* Q·Kᵀ, back through the scale, casts and mask */
    while (qk >= 0 && napkin_diagram_node (d, (guint) qk)->kind != NAPKIN_OP_CONTRACT)
      qk = napkin_diagram_input_source (d, (guint) qk, 0);
    /* the queries: the axis the mask's rows name, else the scores' last but one */
    for (guint i = 0; i < nodes->len && query < 0; i++)
      {
        const NapkinNode *n = napkin_diagram_node (d, g_array_index (nodes, guint, i));

        if (n->kind == NAPKIN_OP_MASK && n->rows != NULL)
          query = napkin_diagram_find_axis (d, n->rows);
      }
    if (query < 0 && s != NULL && s->n_axes >= 2)
      query = (int) s->axes[s->n_axes - 2];
    for (guint i = 0; s != NULL && i < s->n_axes; i++)
      {
        guint a = s->axes[i];

        if ((int) a == key)
          continue;
        if ((int) a == query)
          napkin_region_set_mark (region, napkin_diagram_axis (d, a)->name, NAPKIN_MARK_STREAM,
                                  MIN (32, napkin_diagram_axis_size (d, a)));
        else if (qk_batch_axis (d, qk, a))
          {
            /* a bias's gradient sums over the heads or the batch it lacks: streamed */
            gboolean summed = FALSE;

            for (guint j = 0; j < nodes->len && !summed; j++)
              {
                const NapkinNode *n = napkin_diagram_node (d, g_array_index (nodes, guint, j));

                summed = n->kind == NAPKIN_OP_REDUCE && napkin_diagram_find_axis (d, n->axis) == (int) a;
              }
            napkin_region_set_mark (region, napkin_diagram_axis (d, a)->name,
                                    summed ? NAPKIN_MARK_STREAM : NAPKIN_MARK_PARALLEL, 1);
          }
      }
  }
  napkin_diagram_insert_item (d, NAPKIN_ITEM_REGION, r, region);
  if (recogniser_takes (p, _napkin_plan_try_attention_backward, (const guint *) (void *) nodes->data, nodes->len,
                        (int) r, &why))
    return TRUE;
  napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (d, NAPKIN_ITEM_REGION, r));
  if (g_getenv ("NAPKIN_BWD_DEBUG") != NULL)
    g_printerr ("attention backward around %s refused: %s\n", napkin_diagram_node (d, (guint) sm)->id, why);
  for (guint i = 0; i < nodes->len; i++)
    if (!g_hash_table_contains (p->chain_refusal, GUINT_TO_POINTER (g_array_index (nodes, guint, i))))
      g_hash_table_insert (p->chain_refusal, GUINT_TO_POINTER (g_array_index (nodes, guint, i)),
                           g_strdup_printf (_("the attention backward around %s cannot run as one kernel: %s"),
                                            napkin_diagram_node (d, (guint) sm)->id,
                                            why != NULL ? why : _("its operations are not one")));
  return FALSE;
}

NapkinDiagram *
_napkin_plan_partition (NapkinPlanner *p,
                        gboolean       shared)
{
  NapkinDiagram *copy = NULL;
  /* a copy: adding a region rebuilds the diagram's caches */
  g_autofree guint *topo = g_memdup2 (napkin_diagram_topo_order (p->d), sizeof (guint) * (p->n_nodes + 1));
  g_autofree gboolean *taken = g_new0 (gboolean, p->n_nodes + 1);
  guint placed = 0;

  /* attention backwards first: their recomputed Q·Kᵀ → softmax is no forward chain */
  for (guint i = 0; i < p->n_nodes; i++)
    {
      g_autoptr(GArray) nodes = g_array_new (FALSE, FALSE, sizeof (guint));

      if (napkin_diagram_node (p->d, topo[i])->kind != NAPKIN_OP_SOFTMAX || taken[topo[i]]
          || !_napkin_plan_attention_backward_group (p, topo[i], taken, nodes))
        continue;
      if (shared && copy == NULL)
        {
          copy = napkin_diagram_copy (p->d);
          p->d = copy;
        }
      if (place_attention_backward (p, nodes))
        {
          for (guint j = 0; j < nodes->len; j++)
            taken[g_array_index (nodes, guint, j)] = TRUE;
          placed++;
        }
    }

  for (guint i = 0; i < p->n_nodes; i++)
    {
      Chain c;
      g_autofree char *why = NULL;

      if (taken[topo[i]] || !attention_chain (p, topo[i], &c))
        continue;
      if (shared && copy == NULL)
        {
          /* node and region indices stay those of the drawn diagram */
          copy = napkin_diagram_copy (p->d);
          p->d = copy;
        }
      if (place_attention (p, &c, &why))
        {
          for (guint j = 0; j < c.n; j++)
            taken[c.nodes[j]] = TRUE;
          placed++;
          continue;
        }
      for (guint j = 0; j < c.n; j++)
        if (!g_hash_table_contains (p->chain_refusal, GUINT_TO_POINTER (c.nodes[j])))
          g_hash_table_insert (p->chain_refusal, GUINT_TO_POINTER (c.nodes[j]),
                               g_strdup_printf (_("the attention %s → … → %s cannot run as one kernel: %s"),
                                                napkin_diagram_node (p->d, c.qk)->id,
                                                napkin_diagram_node (p->d, c.pv)->id, why));
    }
  if (placed > 0)
    _napkin_plan_find_parents (p);
  return copy;
}

NapkinDiagram *
napkin_plan_with_regions (const NapkinPlan *plan,
                          NapkinDiagram    *drawn)
{
  NapkinDiagram *copy;

  g_return_val_if_fail (plan != NULL, NULL);
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (drawn), NULL);

  copy = napkin_diagram_copy (drawn);
  for (guint r = plan->drawn_regions; r < napkin_diagram_n_regions (plan->diagram); r++)
    {
      NapkinRegion *region = napkin_item_copy (NAPKIN_ITEM_REGION, napkin_diagram_region (plan->diagram, r));
      GHashTableIter iter;
      gpointer cast, into;

      /* a cast folded into one of its operations lies in it as drawn */
      g_hash_table_iter_init (&iter, plan->folded);
      while (g_hash_table_iter_next (&iter, &cast, &into))
        {
          const char *target = into;

          /* through chains of folded casts to the operation that stayed */
          while (g_hash_table_contains (plan->folded, target))
            target = g_hash_table_lookup (plan->folded, target);
          if (napkin_region_has_node (region, target))
            napkin_region_add_node (region, cast);
        }
      region->has_rect = FALSE;
      napkin_diagram_insert_item (copy, NAPKIN_ITEM_REGION, napkin_diagram_n_regions (copy), region);
    }
  return copy;
}
