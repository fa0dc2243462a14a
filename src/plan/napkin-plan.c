/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <stdio.h>
#include <string.h>

#include "napkin-plan-private.h"
#include "napkin-error.h"
#include "napkin-validate.h"

/* The kernel plan (docs/plan.md). Kernels are cut as the lowering cuts them (src/lower):
 * each top-level region is one kernel, each operation outside every region is its own;
 * for each, the recognisers below decide a path of tile primitives, and what none of
 * them takes goes to the generic lowering with the reason the closest one gave. */

static const char *path_names[NAPKIN_N_PATHS] = { "wgmma", "mma", "simt", "generic" };
static const char *kind_names[NAPKIN_N_PLAN_KINDS] = {
  "gemm", "attention", "rows", "elementwise", "split-reduce", "repack", "generic", "attention-combine", "attention-backward",
};

const char *
napkin_path_to_string (NapkinPath path)
{
  g_return_val_if_fail (path < NAPKIN_N_PATHS, "generic");
  return path_names[path];
}

const char *
napkin_plan_kind_to_string (NapkinPlanKind kind)
{
  g_return_val_if_fail (kind < NAPKIN_N_PLAN_KINDS, "generic");
  return kind_names[kind];
}

gboolean
napkin_plan_kind_is_helper (NapkinPlanKind kind)
{
  return kind == NAPKIN_PLAN_REPACK || kind == NAPKIN_PLAN_SPLIT_REDUCE || kind == NAPKIN_PLAN_ATTENTION_COMBINE;
}

char *
napkin_plan_kernel_label (const char     *name,
                          NapkinPlanKind  kind)
{
  g_return_val_if_fail (name != NULL, NULL);

  if (!napkin_plan_kind_is_helper (kind))
    return g_strdup (name);
  return g_strdup_printf ("%s (%s)", name, napkin_plan_kind_to_string (kind));
}

char *
napkin_plan_target_for_arch (const NapkinArch *arch)
{
  int major = 8, minor = 0;

  g_return_val_if_fail (arch != NULL, NULL);

  if (arch->compute_capability == NULL || sscanf (arch->compute_capability, "%d.%d", &major, &minor) != 2)
    return g_strdup ("sm_80");
  /* the architecture-specific targets carry the warpgroup (9.0) and tcgen05 (10.0) instructions */
  if (major == 9 || major == 10)
    return g_strdup_printf ("sm_%d%da", major, minor);
  return g_strdup_printf ("sm_%d%d", major, minor);
}

static void
map_array_free (GArray **a)
{
  g_clear_pointer (a, g_array_unref);
}

void
_napkin_plan_kernel_free (gpointer data)
{
  NapkinPlanKernel *k = data;

  g_free (k->name);
  g_clear_pointer (&k->nodes, g_array_unref);
  g_free (k->reason);
  g_free (k->note);
  g_free (k->best_note);
  g_clear_pointer (&k->adjustments, g_ptr_array_unref);
  g_free (k->infeasible);
  switch (k->kind)
    {
    case NAPKIN_PLAN_GEMM:
    case NAPKIN_PLAN_SPLIT_REDUCE:
      map_array_free (&k->u.gemm.epilogue);
      map_array_free (&k->u.gemm.gate);
      break;
    case NAPKIN_PLAN_ROWS:
      map_array_free (&k->u.rows.prologue);
      map_array_free (&k->u.rows.epilogue);
      break;
    case NAPKIN_PLAN_ELEMENTWISE:
      map_array_free (&k->u.ew.maps);
      g_clear_pointer (&k->u.ew.other_strides, g_ptr_array_unref);
      break;
    default:
      break;
    }
  g_free (k);
}

NapkinPlanKernel *
_napkin_plan_kernel_new (const NapkinPlanKernel *like,
                         NapkinPlanKind          kind,
                         NapkinPath              path)
{
  NapkinPlanKernel *k = g_new0 (NapkinPlanKernel, 1);

  k->kind = kind;
  k->path = path;
  k->name = g_strdup (like ? like->name : "");
  k->region = like ? like->region : -1;
  k->node = like ? like->node : -1;
  k->nodes = g_array_new (FALSE, FALSE, sizeof (guint));
  k->adjustments = g_ptr_array_new_with_free_func (g_free);
  k->feasible = TRUE;
  k->blocks_per_sm = 1;
  return k;
}

void
napkin_plan_free (NapkinPlan *plan)
{
  if (plan == NULL)
    return;
  g_clear_pointer (&plan->arch, napkin_arch_unref);
  g_free (plan->target);
  g_clear_object (&plan->diagram);
  g_clear_pointer (&plan->folded, g_hash_table_unref);
  g_clear_pointer (&plan->kernels, g_ptr_array_unref);
  g_clear_pointer (&plan->scratch, g_array_unref);
  g_clear_pointer (&plan->scratch_offset, g_array_unref);
  g_clear_pointer (&plan->kernel_index, g_hash_table_unref);
  g_clear_pointer (&plan->fused_index, g_hash_table_unref);
  g_free (plan);
}

int
_napkin_plan_add_scratch (NapkinPlan *plan,
                          gint64      bytes)
{
  gint64 offset = (plan->scratch_bytes + 255) / 256 * 256;

  g_array_append_val (plan->scratch, bytes);
  g_array_append_val (plan->scratch_offset, offset);
  plan->scratch_bytes = offset + (bytes + 255) / 256 * 256;
  return (int) plan->scratch->len - 1;
}

NapkinDtype
_napkin_plan_dtype (NapkinPlanner *p,
                    int            node)
{
  const NapkinTensorType *t;

  if (p->options != NULL && p->options->has_dtype)
    return p->options->dtype;
  t = napkin_diagram_node_type (p->d, node);
  return t != NULL ? t->dtype : NAPKIN_DTYPE_FP32;
}

/* Whether the tensor `name` lists the axes of `type` in its order. */
static gboolean
stored_in_type_order (NapkinDiagram          *d,
                      const char             *name,
                      const NapkinTensorType *type)
{
  int t = name != NULL ? napkin_diagram_find_tensor (d, name) : -1;
  const NapkinTensor *tensor = t >= 0 ? napkin_diagram_tensor (d, t) : NULL;

  if (tensor == NULL || g_strv_length (tensor->axes) != type->n_axes)
    return FALSE;
  for (guint i = 0; i < type->n_axes; i++)
    if (!g_str_equal (tensor->axes[i], napkin_diagram_axis (d, type->axes[i])->name))
      return FALSE;
  return TRUE;
}

gboolean
_napkin_plan_env_flag (const char *name)
{
  const char *env = g_getenv (name);

  return env != NULL && *env != '\0' && !g_str_equal (env, "0");
}

gboolean
_napkin_plan_unit_product (NapkinDiagram *d,
                           guint          node)
{
  const NapkinTensorType *o = napkin_diagram_node_type (d, node);

  if (napkin_diagram_node (d, node)->kind != NAPKIN_OP_CONTRACT || o == NULL || !o->valid)
    return FALSE;
  /* every axis summed over (in an operand, not in the result) has size 1 */
  for (guint q = 0; q < 2; q++)
    {
      int src = napkin_diagram_input_source (d, node, q);
      const NapkinTensorType *x = src >= 0 ? napkin_diagram_node_type (d, (guint) src) : NULL;

      if (x == NULL || !x->valid)
        return FALSE;
      for (guint i = 0; i < x->n_axes; i++)
        if (!napkin_tensor_type_has_axis (o, x->axes[i]) && napkin_diagram_axis_size (d, x->axes[i]) != 1)
          return FALSE;
    }
  return TRUE;
}

gboolean
napkin_plan_unit_product (NapkinDiagram *diagram,
                          guint          node)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (node < napkin_diagram_n_nodes (diagram), FALSE);
  return _napkin_plan_unit_product (diagram, node);
}

gboolean
_napkin_plan_is_view (NapkinDiagram *d,
                      guint          node)
{
  const NapkinNode *n = napkin_diagram_node (d, node);
  const NapkinTensorType *x, *y;
  guint n_consumers, n_readers;
  const guint *readers;
  int src;

  if (n->kind != NAPKIN_OP_REARRANGE || (src = napkin_diagram_input_source (d, node, 0)) < 0)
    return FALSE;
  napkin_diagram_consumers (d, node, &n_consumers);
  x = napkin_diagram_node_type (d, (guint) src);
  y = napkin_diagram_node_type (d, node);
  if (n_consumers != 1 || x == NULL || y == NULL || !x->valid || !y->valid || x->n_axes != y->n_axes
      || x->dtype != y->dtype)
    return FALSE;
  for (guint i = 0; i < x->n_axes; i++)
    if (napkin_diagram_axis_size (d, x->axes[i]) != napkin_diagram_axis_size (d, y->axes[i]))
      return FALSE;
  /* the input's bytes lie in its type's order: an input's or output's tensor must say so */
  if (napkin_diagram_node (d, (guint) src)->kind == NAPKIN_OP_INPUT
      && !stored_in_type_order (d, napkin_diagram_node (d, (guint) src)->tensor, x))
    return FALSE;
  readers = napkin_diagram_consumers (d, (guint) src, &n_readers);
  for (guint i = 0; i < n_readers; i++)
    if (napkin_diagram_node (d, readers[i])->kind == NAPKIN_OP_OUTPUT
        && !stored_in_type_order (d, napkin_diagram_node (d, readers[i])->tensor, x))
      return FALSE;
  return TRUE;
}

gboolean
napkin_plan_node_is_input_copy (NapkinDiagram *diagram,
                                guint          node)
{
  int src;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (node < napkin_diagram_n_nodes (diagram), FALSE);

  if (napkin_diagram_node (diagram, node)->kind != NAPKIN_OP_OUTPUT)
    return FALSE;
  src = napkin_diagram_input_source (diagram, node, 0);
  return src >= 0 && napkin_diagram_node (diagram, (guint) src)->kind == NAPKIN_OP_INPUT;
}

gboolean
napkin_plan_node_is_view (NapkinDiagram *diagram,
                          guint          node)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (node < napkin_diagram_n_nodes (diagram), FALSE);

  return _napkin_plan_is_view (diagram, node);
}

gboolean
napkin_plan_attention_stacks (gint64 group,
                              gint64 nq,
                              gint64 nk,
                              gint64 rows)
{
  /* 71 heads of one multi-query K stacked would leave one query a block */
  return group * 16 <= rows || (nq <= 64 && nk >= 32 * nq);
}

int
napkin_plan_attention_query (NapkinDiagram *diagram,
                             guint          qk,
                             guint          sm,
                             guint          pv,
                             gint64        *group)
{
  int qs, ks, query = -1, at = (int) qk;
  const NapkinTensorType *q, *k, *o;
  gint64 g = 1;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), -1);
  if (group != NULL)
    *group = 1;
  qs = napkin_diagram_input_source (diagram, qk, 0);
  ks = napkin_diagram_input_source (diagram, qk, 1);
  if (qs < 0 || ks < 0)
    return -1;
  q = napkin_diagram_node_type (diagram, (guint) qs);
  k = napkin_diagram_node_type (diagram, (guint) ks);
  o = napkin_diagram_node_type (diagram, pv);
  if (q == NULL || k == NULL || o == NULL)
    return -1;
  /* a mask keeps keys per query: its rows are the queries (multi-query attention: K
   * lacks the heads as well, and 71 heads would otherwise pass for the queries of a
   * short sequence) */
  for (guint steps = 0; at >= 0 && at != (int) sm && steps < 32; steps++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, (guint) at);
      guint n_consumers;
      const guint *consumers;

      if (node->kind == NAPKIN_OP_MASK && node->mask != NAPKIN_MASK_TENSOR && node->rows != NULL)
        {
          int rows = napkin_diagram_find_axis (diagram, node->rows);

          if (rows >= 0 && napkin_tensor_type_has_axis (q, (guint) rows) && napkin_tensor_type_has_axis (o, (guint) rows)
              && !napkin_tensor_type_has_axis (k, (guint) rows))
            query = rows;
          break;
        }
      consumers = napkin_diagram_consumers (diagram, (guint) at, &n_consumers);
      at = n_consumers == 1 ? (int) consumers[0] : -1;
    }
  if (query < 0)
    for (guint a = 0; a < napkin_diagram_n_axes (diagram); a++)
      if (napkin_tensor_type_has_axis (q, a) && napkin_tensor_type_has_axis (o, a) && !napkin_tensor_type_has_axis (k, a)
          && (query < 0 || napkin_diagram_axis_size (diagram, a) > napkin_diagram_axis_size (diagram, (guint) query)))
        query = (int) a;
  if (query < 0)
    return -1;
  for (guint a = 0; a < napkin_diagram_n_axes (diagram); a++)
    if ((int) a != query && napkin_tensor_type_has_axis (q, a) && napkin_tensor_type_has_axis (o, a)
        && !napkin_tensor_type_has_axis (k, a))
      g *= napkin_diagram_axis_size (diagram, a);
  if (group != NULL)
    *group = g;
  return query;
}

gboolean
_napkin_plan_member (NapkinPlanner          *p,
                     const NapkinPlanKernel *kernel,
                     int                     node)
{
  if (node < 0 || (guint) node >= p->n_nodes)
    return FALSE;
  /* rebuilt when the kernel or its length changes (nodes are only appended) */
  if (p->member_of != kernel || p->member_len != kernel->nodes->len)
    {
      p->member_stamp++;
      for (guint i = 0; i < kernel->nodes->len; i++)
        {
          guint n = g_array_index (kernel->nodes, guint, i);

          if (n < p->n_nodes)
            p->member[n] = p->member_stamp;
        }
      p->member_of = kernel;
      p->member_len = kernel->nodes->len;
    }
  return p->member[node] == p->member_stamp;
}

/* Region nesting: a region inside another holds only nodes of it, at a faster level. */
void
_napkin_plan_find_parents (NapkinPlanner *p)
{
  guint n_regions = napkin_diagram_n_regions (p->d);

  g_free (p->top);
  g_free (p->parent);
  p->top = g_new (int, p->n_nodes + 1);
  p->parent = g_new (int, n_regions + 1);
  for (guint n = 0; n < p->n_nodes; n++)
    p->top[n] = -1;
  for (guint r = 0; r < n_regions; r++)
    {
      const NapkinRegion *region = napkin_diagram_region (p->d, r);

      p->parent[r] = -1;
      for (guint o = 0; o < n_regions; o++)
        {
          const NapkinRegion *outer = napkin_diagram_region (p->d, o);
          gboolean inside = o != r && outer->level < region->level && region->nodes->len > 0;

          for (guint i = 0; inside && i < region->nodes->len; i++)
            inside = napkin_region_has_node (outer, g_ptr_array_index (region->nodes, i));
          /* the innermost of the containing regions is the parent */
          if (inside && (p->parent[r] < 0 || napkin_diagram_region (p->d, p->parent[r])->level < outer->level))
            p->parent[r] = o;
        }
    }
  for (guint r = 0; r < n_regions; r++)
    {
      const NapkinRegion *region = napkin_diagram_region (p->d, r);
      int top = r;

      while (p->parent[top] >= 0)
        top = p->parent[top];
      if (top != (int) r)
        continue;
      for (guint i = 0; i < region->nodes->len; i++)
        {
          int n = napkin_diagram_find_node (p->d, g_ptr_array_index (region->nodes, i));

          if (n >= 0)
            p->top[n] = r;
        }
    }
}

gboolean
_napkin_plan_same_axes (const NapkinTensorType *a,
                        const NapkinTensorType *b)
{
  if (a == NULL || b == NULL || a->n_axes != b->n_axes)
    return FALSE;
  for (guint i = 0; i < a->n_axes; i++)
    if (!napkin_tensor_type_has_axis (b, a->axes[i]))
      return FALSE;
  return TRUE;
}

/* A widening cast whose one reader, a map, still waits for its other operand: planned
 * after it, so that the cast heads the map's element-wise kernel and the value is read as
 * stored instead of written again wider (the softmax adjoint's dP − Σ_k p⊙dP in fp32). */
static gboolean
waits_for_reader (NapkinPlanner  *p,
                  guint           n,
                  const gboolean *done)
{
  const NapkinNode *node = napkin_diagram_node (p->d, n);
  const NapkinTensorType *in, *out = napkin_diagram_node_type (p->d, n);
  guint n_consumers;
  const guint *consumers;
  int src = node->kind == NAPKIN_OP_MAP ? napkin_diagram_input_source (p->d, n, 0) : -1;

  if (node->kind != NAPKIN_OP_MAP || node->fn != NAPKIN_FN_CAST || src < 0 || out == NULL
      || (in = napkin_diagram_node_type (p->d, (guint) src)) == NULL
      || napkin_dtype_bytes (out->dtype) < 4 || napkin_dtype_bytes (out->dtype) <= napkin_dtype_bytes (in->dtype))
    return FALSE;
  consumers = napkin_diagram_consumers (p->d, n, &n_consumers);
  if (n_consumers != 1 || p->top[consumers[0]] >= 0 || napkin_diagram_node (p->d, consumers[0])->kind != NAPKIN_OP_MAP)
    return FALSE;
  for (guint q = 0; q < napkin_op_n_inputs (napkin_diagram_node (p->d, consumers[0])); q++)
    {
      int other = napkin_diagram_input_source (p->d, consumers[0], q);

      if (other >= 0 && other != (int) n && !done[other])
        return TRUE;
    }
  return FALSE;
}

/* Outside regions, maps that only finish an operation's value go into its kernel (an
 * epilogue): the next operation is a map, the value's only consumer and outside every
 * region, and its other operand is computed already — a GELU after a product, γ and β
 * after a normalisation, as anyone drawing them expects to run. docs/plan.md. */
static void
absorb_maps (NapkinPlanner    *p,
             NapkinPlanKernel *k,
             gboolean         *done)
{
  guint last = (guint) k->node;
  const NapkinNode *head = napkin_diagram_node (p->d, last);

  if (p->options != NULL && p->options->generic_only)
    return;
  gboolean head_mask = head->kind == NAPKIN_OP_MASK;

  /* a view (a rename by position) is read through by the maps after it: no copy; a
   * mask (causal, window, or a tensor read beside the value) is one step of an
   * element-wise chain */
  if (head->kind != NAPKIN_OP_CONTRACT && head->kind != NAPKIN_OP_SOFTMAX && head->kind != NAPKIN_OP_NORMALIZE
      && head->kind != NAPKIN_OP_MAP && !head_mask && !_napkin_plan_is_view (p->d, last))
    return;
  for (;;)
    {
      guint n_consumers, next;
      const guint *consumers = napkin_diagram_consumers (p->d, last, &n_consumers);
      const NapkinNode *nn;
      gboolean ready = TRUE;

      if (n_consumers != 1)
        return;
      next = consumers[0];
      nn = napkin_diagram_node (p->d, next);
      /* masks join an element-wise chain (a map's or a mask's), not a product's epilogue
       * or a norm's; a tensor mask where the chain's value is what it masks */
      gboolean mask = nn->kind == NAPKIN_OP_MASK
                      && (nn->mask != NAPKIN_MASK_TENSOR || napkin_diagram_input_source (p->d, next, 0) == (int) last)
                      && (head->kind == NAPKIN_OP_MAP || head_mask);

      if ((nn->kind != NAPKIN_OP_MAP && !mask) || p->top[next] >= 0 || done[next])
        return;
      /* a widening cast would have a product or a row operation store its value wider
       * (a gradient's dP in fp32 for the softmax's adjoint): the cast goes with its
       * readers, which take the value as it is stored */
      if (head->kind != NAPKIN_OP_MAP && !head_mask && waits_for_reader (p, next, done))
        return;
      /* a map whose other operand adds axes (DiT's (1 + scale[b, e]) · x[b, s, e]) makes
       * a larger value than the kernel computes: its own kernel */
      if (!_napkin_plan_same_axes (napkin_diagram_node_type (p->d, last), napkin_diagram_node_type (p->d, next)))
        return;
      for (guint q = 0; q < napkin_op_n_inputs (nn); q++)
        {
          int src = napkin_diagram_input_source (p->d, next, q);

          ready &= src == (int) last || (src >= 0 && done[src]);
        }
      if (!ready)
        return;
      g_array_append_val (k->nodes, next);
      done[next] = TRUE;
      last = next;
    }
}

static void
plan_kernel (NapkinPlanner    *p,
             NapkinPlanKernel *k)
{
  g_autofree char *why = NULL;
  gboolean (*recognisers[]) (NapkinPlanner *, NapkinPlanKernel *, char **) = {
    _napkin_plan_try_attention_backward, _napkin_plan_try_attention, _napkin_plan_try_gemm, _napkin_plan_try_rows,
    _napkin_plan_try_elementwise,
  };

  p->member_of = NULL;   /* a kernel freed before may have had this address */
  /* a rotary embedding's sum: its one pass, or the generic lowering of its operations */
  if (p->rotary != NULL && k->region < 0 && k->node >= 0
      && g_hash_table_lookup (p->rotary, GUINT_TO_POINTER (k->node + 1)) == GUINT_TO_POINTER (k->node + 1))
    {
      if (_napkin_plan_try_elementwise (p, k, &why))
        return;
    }
  else if (p->options == NULL || !p->options->generic_only)
    for (guint i = 0; i < G_N_ELEMENTS (recognisers); i++)
      {
        char *reason = NULL;

        if (recognisers[i] (p, k, &reason))
          {
            g_free (reason);
            return;
          }
        /* the first recogniser that knew the shape explains the fallback */
        if (reason != NULL && why == NULL)
          why = reason;
        else
          g_free (reason);
        /* a recogniser that refused may have queued helpers */
        g_ptr_array_set_size (p->before, 0);
        g_ptr_array_set_size (p->after, 0);
      }
  k->kind = NAPKIN_PLAN_GENERIC;
  k->path = NAPKIN_PATH_GENERIC;
  /* an attention chain the partition could not fuse says why first */
  for (guint i = 0; i < k->nodes->len && p->chain_refusal != NULL; i++)
    {
      const char *refusal = g_hash_table_lookup (p->chain_refusal, GUINT_TO_POINTER (g_array_index (k->nodes, guint, i)));

      if (refusal != NULL)
        {
          g_free (why);
          why = g_strdup (refusal);
          break;
        }
    }
  if (p->options != NULL && p->options->generic_only)
    k->reason = g_strdup (_("the generic lowering was asked for"));
  else
    k->reason = why != NULL ? g_steal_pointer (&why)
                            : g_strdup (_("no tile primitive computes this combination of operations yet"));
  k->note = g_strdup (_("generic lowering: one thread per element, tiles in shared memory or a workspace"));
  k->threads = 256;
}

/* A kernel outside regions whose absorbed maps leave no template able to run it (an
 * epilogue operand no stride of the product's rows can address: a positional [s, e]
 * over rows (b, s)) gives its last maps back, one at a time, to run in a kernel of
 * their own: a product and an element-wise pass, not one generic loop nest. Returns the
 * kernel planned (`k`, or the shorter one that replaced it). */
static NapkinPlanKernel *
trim_absorbed (NapkinPlanner    *p,
               NapkinPlanKernel *k,
               gboolean         *done)
{
  guint splits = p->split_operands != NULL ? g_hash_table_size (p->split_operands) : 0;

  /* an operand the product's copy would fix (recorded for the plan's second pass,
   * which keeps the maps in the epilogue) is no reason to give maps back */
  for (plan_kernel (p, k);
       k->path == NAPKIN_PATH_GENERIC && k->nodes->len > 1 && k->region < 0
       && (p->split_operands == NULL || g_hash_table_size (p->split_operands) == splits);
       plan_kernel (p, k))
    {
      NapkinPlanKernel *shorter = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);

      g_free (shorter->name);
      shorter->name = g_strdup (k->name);
      shorter->node = k->node;
      g_array_append_vals (shorter->nodes, k->nodes->data, k->nodes->len - 1);
      done[g_array_index (k->nodes, guint, k->nodes->len - 1)] = FALSE;
      _napkin_plan_kernel_free (k);
      k = shorter;
    }
  return k;
}

/* Adds a kernel planned already (plan_kernel) with the helpers it queued. */
static void
add_planned_kernel (NapkinPlanner    *p,
                    NapkinPlanKernel *k)
{
  for (guint i = 0; i < p->before->len; i++)
    g_ptr_array_add (p->plan->kernels, g_ptr_array_steal_index (p->before, i--));
  g_ptr_array_add (p->plan->kernels, k);
  for (guint i = 0; i < p->after->len; i++)
    g_ptr_array_add (p->plan->kernels, g_ptr_array_steal_index (p->after, i--));
  if (k->path == NAPKIN_PATH_GENERIC)
    p->plan->n_generic++;
}

static void
add_kernel (NapkinPlanner    *p,
            NapkinPlanKernel *k)
{
  plan_kernel (p, k);
  add_planned_kernel (p, k);
}

/* A gated pair's kernel (`k`, named for its join and holding it): the pair, the join
 * and the maps after it as one GEMM where the template takes them, else the gate with
 * its maps, the other product and the join (with what it absorbed) apart, as each would
 * be planned alone (docs/plan.md, "Gated GEMM"). */
static void
add_gated_kernels (NapkinPlanner    *p,
                   NapkinPlanKernel *k,
                   gboolean         *done)
{
  NapkinPlanGated r;
  g_autofree char *why = NULL;
  guint head;

  if (!_napkin_plan_gated_match (p, (guint) k->node, &r))
    {
      add_planned_kernel (p, trim_absorbed (p, k, done));
      return;
    }
  g_array_set_size (k->nodes, 0);
  g_array_append_val (k->nodes, r.gate);
  g_array_append_vals (k->nodes, r.maps, r.n_maps);
  g_array_append_val (k->nodes, r.up);
  g_array_append_val (k->nodes, r.join);
  head = k->nodes->len - 1;
  absorb_maps (p, k, done);
  p->member_of = NULL;
  if (_napkin_plan_try_gated_gemm (p, k, &r, &why))
    {
      add_planned_kernel (p, k);
      return;
    }
  for (guint part = 0; part < 2; part++)
    {
      guint first = part == 0 ? r.gate : r.up;
      NapkinPlanKernel *apart = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);

      g_free (apart->name);
      apart->name = g_strdup (napkin_diagram_node (p->d, first)->id);
      apart->node = (int) first;
      g_array_append_val (apart->nodes, first);
      if (part == 0)
        g_array_append_vals (apart->nodes, r.maps, r.n_maps);
      add_kernel (p, apart);
    }
  g_array_remove_range (k->nodes, 0, head);
  add_planned_kernel (p, trim_absorbed (p, k, done));
}

static void best_path_note (NapkinPlanner *p, NapkinPlanKernel *k);

static NapkinPlan *plan_build (NapkinDiagram *diagram, NapkinArch *arch, const NapkinPlanOptions *options,
                               GHashTable *copies, GHashTable *splits, GError **error);

/* Every key of the set `from` into the set `into`. */
static void
add_keys (GHashTable *into,
          GHashTable *from)
{
  GHashTableIter iter;
  gpointer key;

  g_hash_table_iter_init (&iter, from);
  while (g_hash_table_iter_next (&iter, &key, NULL))
    g_hash_table_add (into, key);
}

NapkinPlan *
napkin_plan_build (NapkinDiagram           *diagram,
                   NapkinArch              *arch,
                   const NapkinPlanOptions *options,
                   GError                 **error)
{
  g_autoptr(GHashTable) splits = g_hash_table_new (g_direct_hash, g_direct_equal);
  NapkinPlan *plan = plan_build (diagram, arch, options, NULL, splits, error);

  /* products outside regions whose operands or result split their rows or the
   * contracted axes, or whose result does not lead with the batch axes (the GEMM refused
   * them, generic): planned again with a permuting copy in front of each such operand
   * and after each such result (docs/plan.md, "The pipeline"). A copy can uncover the
   * next refusal of the same product (its operand copied, its result's batch axes are
   * checked): a few rounds, each keeping the plan with the fewest generic kernels; the
   * operand copies take the order the product's epilogue stores, then, where that
   * leaves a product generic (its maps did not fuse), the order it keeps itself. */
  /* NAPKIN_PLAN_NO_COPIES=1 keeps the first plan (for A/B runs) */
  for (guint mode = 0; plan != NULL && plan->n_generic > 0 && g_hash_table_size (splits) > 0 && mode < 2
                       && !_napkin_plan_env_flag ("NAPKIN_PLAN_NO_COPIES"); mode++)
    {
      g_autoptr(GHashTable) keys = g_hash_table_new (g_direct_hash, g_direct_equal);
      guint tried = 0;

      add_keys (keys, splits);
      if (mode == 1)
        g_hash_table_add (keys, NAPKIN_PLAN_COPY_OWN_ORDER);
      for (guint round = 0; round < 3 && g_hash_table_size (keys) > tried && plan->n_generic > 0; round++)
        {
          g_autoptr(GHashTable) found = g_hash_table_new (g_direct_hash, g_direct_equal);
          NapkinPlan *again = plan_build (diagram, arch, options, keys, found, NULL);

          tried = g_hash_table_size (keys);
          if (again != NULL && again->n_generic < plan->n_generic)
            {
              napkin_plan_free (plan);
              plan = again;
            }
          else if (again != NULL)
            napkin_plan_free (again);
          add_keys (keys, found);
        }
    }
  return plan;
}

static NapkinPlan *
plan_build (NapkinDiagram           *diagram,
            NapkinArch              *arch,
            const NapkinPlanOptions *options,
            GHashTable              *copies,
            GHashTable              *splits,
            GError                 **error)
{
  g_autoptr(NapkinPlan) plan = g_new0 (NapkinPlan, 1);
  NapkinPlanner p = { 0 };
  const guint *topo;
  guint n_regions;
  g_autofree gboolean *done = NULL;
  g_autofree gboolean *region_done = NULL;
  int major = 8, minor = 0;
  gboolean as_drawn;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  g_return_val_if_fail (arch != NULL, NULL);

  if ((options == NULL || !options->trusted) && !napkin_diagram_validate (diagram, error))
    return NULL;
  if (napkin_diagram_topo_order (diagram) == NULL)
    {
      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                           _("nodes: the diagram has a cycle"));
      return NULL;
    }

  plan->arch = napkin_arch_ref (arch);
  plan->target = napkin_plan_target_for_arch (arch);
  plan->kernels = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  plan->scratch = g_array_new (FALSE, FALSE, sizeof (gint64));
  plan->scratch_offset = g_array_new (FALSE, FALSE, sizeof (gint64));
  plan->folded = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  plan->drawn_regions = napkin_diagram_n_regions (diagram);
  plan->feasible = TRUE;

  if (arch->compute_capability != NULL)
    sscanf (arch->compute_capability, "%d.%d", &major, &minor);
  /* the pipeline's first steps: casts as types, the plan's own kernels outside the
   * drawn regions (docs/plan.md, "The pipeline") */
  as_drawn = options != NULL && (options->generic_only || options->as_drawn);
  plan->diagram = as_drawn ? NULL : _napkin_plan_canonical (diagram, plan->folded, copies);
  p.d = plan->diagram != NULL ? plan->diagram : diagram;
  p.arch = arch;
  p.plan = plan;
  p.options = options;
  p.sm = (guint) (major * 10 + minor);
  p.n_nodes = napkin_diagram_n_nodes (p.d);
  p.member = g_new0 (guint, p.n_nodes + 1);
  p.before = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  p.after = g_ptr_array_new_with_free_func (_napkin_plan_kernel_free);
  p.chain_refusal = g_hash_table_new_full (g_direct_hash, g_direct_equal, NULL, g_free);
  p.split_operands = as_drawn ? NULL : splits;
  _napkin_plan_find_parents (&p);
  if (!as_drawn)
    {
      NapkinDiagram *copy = _napkin_plan_partition (&p, plan->diagram == NULL);

      if (copy != NULL)
        plan->diagram = copy;
    }
  if (plan->diagram == NULL)
    plan->diagram = g_object_ref (diagram);
  topo = napkin_diagram_topo_order (p.d);
  n_regions = napkin_diagram_n_regions (p.d);

  /* a rotary embedding's operations go with its sum, one element-wise pass */
  p.rotary = _napkin_plan_rotary_table (&p);
  /* a gated pair's products and maps go with its join, one GEMM */
  p.gated = _napkin_plan_gated_table (&p);

  /* Kernels in an order that respects every wire between them (as the lowering orders
   * them): a region starts once every source of every member outside it is done. */
  done = g_new0 (gboolean, p.n_nodes + 1);
  region_done = g_new0 (gboolean, n_regions + 1);
  for (gboolean progress = TRUE, patient = TRUE; progress;)
    {
      progress = FALSE;
      for (guint i = 0; i < p.n_nodes; i++)
        {
          guint n = topo[i];
          const NapkinNode *node = napkin_diagram_node (p.d, n);
          int r = p.top[n];
          gboolean ready = TRUE;
          NapkinPlanKernel *k;
          guint rotary, gated;

          if (done[n])
            continue;
          if (r < 0)
            {
              for (guint q = 0; q < napkin_op_n_inputs (node); q++)
                ready &= done[napkin_diagram_input_source (p.d, n, q)];
              if (!ready || (patient && waits_for_reader (&p, n, done)))
                continue;
              done[n] = progress = TRUE;
              /* an output wired straight from an input is a copy kernel of its own (as
               * the lowering runs it); other inputs and outputs are no work */
              if (node->kind == NAPKIN_OP_INPUT
                  || (node->kind == NAPKIN_OP_OUTPUT && !napkin_plan_node_is_input_copy (p.d, n)))
                continue;
              rotary = GPOINTER_TO_UINT (g_hash_table_lookup (p.rotary, GUINT_TO_POINTER (n + 1)));
              if (rotary != 0 && rotary != n + 1)
                continue;   /* computed in its sum's kernel */
              gated = GPOINTER_TO_UINT (g_hash_table_lookup (p.gated, GUINT_TO_POINTER (n + 1)));
              if (gated != 0 && gated != n + 1)
                continue;   /* computed in its join's kernel (or planned apart there) */
              k = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);
              g_free (k->name);
              k->name = g_strdup (node->id);
              k->node = n;
              if (gated != 0)
                {
                  add_gated_kernels (&p, k, done);
                  continue;
                }
              if (rotary != 0)
                {
                  NapkinPlanRotary rot;

                  _napkin_plan_rotary_match (&p, n, &rot);
                  g_array_append_vals (k->nodes, rot.parts, G_N_ELEMENTS (rot.parts));
                }
              g_array_append_val (k->nodes, n);
              if (node->kind != NAPKIN_OP_OUTPUT && rotary == 0)
                absorb_maps (&p, k, done);
              if (rotary != 0)
                plan_kernel (&p, k);   /* whole or generic: its parts have no kernels of their own */
              add_planned_kernel (&p, rotary != 0 ? k : trim_absorbed (&p, k, done));
              continue;
            }
          if (region_done[r])
            continue;
          {
            const NapkinRegion *region = napkin_diagram_region (p.d, r);

            for (guint j = 0; j < p.n_nodes && ready; j++)
              {
                if (p.top[j] != r)
                  continue;
                for (guint q = 0; q < napkin_op_n_inputs (napkin_diagram_node (p.d, j)); q++)
                  {
                    int src = napkin_diagram_input_source (p.d, j, q);

                    ready &= p.top[src] == r || done[src];
                  }
              }
            if (!ready)
              continue;
            k = _napkin_plan_kernel_new (NULL, NAPKIN_PLAN_GENERIC, NAPKIN_PATH_GENERIC);
            g_free (k->name);
            k->name = g_strdup (region->name);
            k->region = r;
            for (guint j = 0; j < p.n_nodes; j++)
              {
                guint m = topo[j];

                if (p.top[m] == r)
                  {
                    g_array_append_val (k->nodes, m);
                    done[m] = TRUE;
                  }
              }
            region_done[r] = progress = TRUE;
            add_kernel (&p, k);
          }
        }
      if (!progress && patient)
        {
          patient = FALSE;
          progress = TRUE;
        }
    }

  for (guint i = 0; i < plan->kernels->len; i++)
    {
      NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

      plan->feasible &= k->feasible;
      best_path_note (&p, k);
    }
  _napkin_plan_attention_link_stats (plan);
  g_free (p.top);
  g_free (p.member);
  g_free (p.parent);
  g_ptr_array_unref (p.before);
  g_ptr_array_unref (p.after);
  g_hash_table_unref (p.chain_refusal);
  g_hash_table_unref (p.rotary);
  g_hash_table_unref (p.gated);
  return g_steal_pointer (&plan);
}

/* Where the generator's path for a kernel's products is not the GPU's best one
 * (Blackwell: tcgen05, which Napkin does not generate; fp8 left on the generic lowering),
 * the plan says so; the model prices both (docs/model.md, "Best path"). */
static void
best_path_note (NapkinPlanner    *p,
                NapkinPlanKernel *k)
{
  NapkinTensorPathKind best = NAPKIN_TENSOR_PATH_MMA_SYNC;
  const char *generated;
  gboolean tensor = FALSE;

  for (guint i = 0; i < k->nodes->len; i++)
    {
      guint n = g_array_index (k->nodes, guint, i);
      const NapkinNode *node = napkin_diagram_node (p->d, n);
      NapkinTensorClass klass;
      NapkinDtype d0, d1;

      /* a product over axes of size 1 is element-wise: no tensor-core work */
      if (node->kind != NAPKIN_OP_CONTRACT || _napkin_plan_unit_product (p->d, n))
        continue;
      d0 = _napkin_plan_dtype (p, napkin_diagram_input_source (p->d, n, 0));
      d1 = _napkin_plan_dtype (p, napkin_diagram_input_source (p->d, n, 1));
      if (!napkin_tensor_class_for_dtype (napkin_dtype_bytes (d0) >= napkin_dtype_bytes (d1) ? d0 : d1, &klass))
        continue;
      best = MAX (best, napkin_arch_best_path (p->arch, klass, FALSE, NULL));
      tensor = TRUE;
    }
  /* helpers (operand repacks, split reductions, the attention's combine) carry their
   * kernel's nodes but compute none of its products */
  /* helpers compute none of the products; a skinny product is on CUDA cores by choice */
  if (!tensor || napkin_plan_kind_is_helper (k->kind) || (k->kind == NAPKIN_PLAN_GEMM && k->path == NAPKIN_PATH_SIMT))
    return;
  generated = k->path == NAPKIN_PATH_WGMMA ? "wgmma" : k->path == NAPKIN_PATH_MMA ? "mma.sync" : NULL;
  if (g_strcmp0 (generated, napkin_tensor_path_to_string (best)) == 0
      || (k->region < 0 && k->kind == NAPKIN_PLAN_GENERIC))
    return;   /* on its best path, or a plain operation priced as a library kernel */
  k->best_path = napkin_tensor_path_to_string (best);
  k->best_note = g_strdup_printf (_("%s is %s's best tensor-core path for these products; this kernel is "
                                  "generated on %s%s"), k->best_path, p->arch->id,
                                  generated ? generated : _("the generic lowering"),
                                  p->arch->tensor_paths[best].generated
                                  ? "" : (best == NAPKIN_TENSOR_PATH_TCGEN05
                                          ? _(" (tcgen05 is not generated until it is verified on a B200)")
                                          : _(" (not generated until it is verified on this GPU)")));
}

static void build_index (NapkinPlan *plan);

gboolean
napkin_plan_region_planned (const NapkinPlan *plan,
                            int               region)
{
  g_return_val_if_fail (plan != NULL, FALSE);
  return region >= (int) plan->drawn_regions;
}

const NapkinPlanKernel *
napkin_plan_kernel_for (const NapkinPlan *plan,
                        int               region,
                        int               node)
{
  NapkinPlan *index = (NapkinPlan *) plan;   /* the index is a cache, not the plan's state */

  g_return_val_if_fail (plan != NULL, NULL);

  /* The model asks once per region and per node: a linear scan made analyze quadratic
   * (100 000 operations in 256 regions took 94 s). The first kernel for each key wins,
   * as the scan did; the index is rebuilt if kernels were added since. */
  build_index (index);
  if (region < 0 && node < 0)
    return NULL;
  return g_hash_table_lookup (index->kernel_index, GINT_TO_POINTER (region >= 0 ? region : -2 - node));
}

/* The rotary table of `diagram`, or (`gated`) its gated pairs', outside a plan. */
static GHashTable *
node_table (NapkinDiagram *diagram,
            gboolean       gated)
{
  NapkinPlanner p = { 0 };
  GHashTable *table;

  p.d = diagram;
  p.n_nodes = napkin_diagram_n_nodes (diagram);
  _napkin_plan_find_parents (&p);
  p.rotary = _napkin_plan_rotary_table (&p);
  table = gated ? _napkin_plan_gated_table (&p) : g_hash_table_ref (p.rotary);
  g_hash_table_unref (p.rotary);
  g_free (p.top);
  g_free (p.parent);
  return table;
}

GHashTable *
napkin_plan_rotary_nodes (NapkinDiagram *diagram)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  return node_table (diagram, FALSE);
}

GHashTable *
napkin_plan_gated_nodes (NapkinDiagram *diagram)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  return node_table (diagram, TRUE);
}

gboolean
napkin_plan_node_fused_away (const NapkinPlan *plan,
                             guint             node)
{
  g_return_val_if_fail (plan != NULL, FALSE);

  build_index ((NapkinPlan *) plan);
  return g_hash_table_contains (plan->fused_index, GUINT_TO_POINTER (node));
}

static void
build_index (NapkinPlan *index)
{
  const NapkinPlan *plan = index;

  if (index->kernel_index == NULL || index->indexed != plan->kernels->len)
    {
      g_clear_pointer (&index->kernel_index, g_hash_table_unref);
      g_clear_pointer (&index->fused_index, g_hash_table_unref);
      index->kernel_index = g_hash_table_new (g_direct_hash, g_direct_equal);
      index->fused_index = g_hash_table_new (g_direct_hash, g_direct_equal);
      for (guint i = 0; i < plan->kernels->len; i++)
        {
          NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);
          int key;

          if (k->region < 0 && k->nodes != NULL)
            for (guint j = 0; j < k->nodes->len; j++)
              if (g_array_index (k->nodes, guint, j) != (guint) k->node)
                g_hash_table_add (index->fused_index, GUINT_TO_POINTER (g_array_index (k->nodes, guint, j)));

          /* the main kernel, not a repack or reduction queued beside it */
          if (napkin_plan_kind_is_helper (k->kind))
            continue;
          key = k->region >= 0 ? k->region : -2 - k->node;
          if (k->region < 0 && k->node < 0)
            continue;
          if (!g_hash_table_contains (index->kernel_index, GINT_TO_POINTER (key)))
            g_hash_table_insert (index->kernel_index, GINT_TO_POINTER (key), k);
        }
      index->indexed = plan->kernels->len;
    }
}

/* ---- JSON ---------------------------------------------------------------------------------- */

static json_object *
buffer_json (NapkinDiagram          *d,
             const NapkinPlanBuffer *b)
{
  if (b->node >= 0)
    {
      const NapkinNode *node = napkin_diagram_node (d, b->node);

      return json_object_new_string (node->kind == NAPKIN_OP_INPUT ? node->tensor : node->id);
    }
  return json_object_new_string_len ("scratch", 7);
}

static json_object *
maps_json (NapkinDiagram *d,
           const GArray  *maps)
{
  json_object *a = json_object_new_array ();

  for (guint i = 0; maps != NULL && i < maps->len; i++)
    {
      const NapkinPlanMap *m = &g_array_index (maps, NapkinPlanMap, i);
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "op", json_object_new_string (napkin_diagram_node (d, m->node)->id));
      json_object_object_add (o, "fn", json_object_new_string (m->is_mask ? napkin_mask_to_string (m->mask)
                                                                         : napkin_fn_info (m->fn)->name));
      if (m->has_other)
        json_object_object_add (o, "with", buffer_json (d, &m->other));
      json_object_array_add (a, o);
    }
  return a;
}

static json_object *
int_array (const gint64 *v,
           guint         n)
{
  json_object *a = json_object_new_array ();

  for (guint i = 0; i < n; i++)
    json_object_array_add (a, json_object_new_int64 (v[i]));
  return a;
}

json_object *
napkin_plan_to_json (const NapkinPlan *plan)
{
  json_object *root;
  json_object *kernels;
  NapkinDiagram *d;

  g_return_val_if_fail (plan != NULL, NULL);

  root = json_object_new_object ();
  kernels = json_object_new_array ();
  d = plan->diagram;

  json_object_object_add (root, "arch", json_object_new_string (plan->arch->id));
  json_object_object_add (root, "target", json_object_new_string (plan->target));
  json_object_object_add (root, "feasible", json_object_new_boolean (plan->feasible));
  json_object_object_add (root, "generic_kernels", json_object_new_int (plan->n_generic));
  json_object_object_add (root, "scratch_bytes", json_object_new_int64 (plan->scratch_bytes));
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);
      json_object *o = json_object_new_object ();
      json_object *ops = json_object_new_array ();
      json_object *tiles = json_object_new_object ();

      json_object_object_add (o, "name", json_object_new_string (k->name));
      json_object_object_add (o, "kind", json_object_new_string (napkin_plan_kind_to_string (k->kind)));
      json_object_object_add (o, "path", json_object_new_string (napkin_path_to_string (k->path)));
      if (k->region >= 0)
        json_object_object_add (o, "region", json_object_new_string (napkin_diagram_region (d, k->region)->name));
      for (guint j = 0; j < k->nodes->len; j++)
        json_object_array_add (ops, json_object_new_string (napkin_diagram_node (d, g_array_index (k->nodes, guint, j))->id));
      json_object_object_add (o, "operations", ops);
      if (k->reason != NULL)
        json_object_object_add (o, "reason", json_object_new_string (k->reason));
      if (k->note != NULL)
        json_object_object_add (o, "note", json_object_new_string (k->note));
      if (k->best_note != NULL)
        {
          json_object_object_add (o, "best_path", json_object_new_string (k->best_path));
          json_object_object_add (o, "best_path_note", json_object_new_string (k->best_note));
        }
      json_object_object_add (o, "grid", json_object_new_int64 (k->grid));
      json_object_object_add (o, "threads", json_object_new_int (k->threads));
      json_object_object_add (o, "shared_bytes", json_object_new_int64 (k->smem_bytes));
      json_object_object_add (o, "registers", json_object_new_int (k->registers));
      json_object_object_add (o, "blocks_per_sm", json_object_new_int (k->blocks_per_sm));
      json_object_object_add (o, "feasible", json_object_new_boolean (k->feasible));
      if (k->infeasible != NULL)
        json_object_object_add (o, "infeasible", json_object_new_string (k->infeasible));
      if (k->adjustments->len > 0)
        {
          json_object *adj = json_object_new_array ();

          for (guint j = 0; j < k->adjustments->len; j++)
            json_object_array_add (adj, json_object_new_string (g_ptr_array_index (k->adjustments, j)));
          json_object_object_add (o, "adjustments", adj);
        }
      switch (k->kind)
        {
        case NAPKIN_PLAN_GEMM:
        case NAPKIN_PLAN_SPLIT_REDUCE:
          {
            const NapkinPlanGemm *g = &k->u.gemm;
            gint64 shape[4] = { g->batch, g->M, g->N, g->K };

            json_object_object_add (o, "shape", int_array (shape, 4));
            json_object_object_add (o, "a", buffer_json (d, &g->a));
            json_object_object_add (o, "b", buffer_json (d, &g->b));
            json_object_object_add (o, "c", buffer_json (d, &g->c));
            json_object_object_add (o, "layout", json_object_new_string (g->a_kmajor ? (g->b_kmajor ? "TN" : "TT")
                                                                                      : (g->b_kmajor ? "NN" : "NT")));
            json_object_object_add (tiles, "m", json_object_new_int64 (g->BM));
            json_object_object_add (tiles, "n", json_object_new_int64 (g->BN));
            json_object_object_add (tiles, "k", json_object_new_int64 (g->BK));
            json_object_object_add (o, "stages", json_object_new_int (g->stages));
            json_object_object_add (o, "split_k", json_object_new_int (g->split_k));
            json_object_object_add (o, "fused", maps_json (d, g->epilogue));
            break;
          }
        case NAPKIN_PLAN_ROWS:
          {
            const NapkinPlanRows *r = &k->u.rows;
            json_object *fused = maps_json (d, r->prologue);
            json_object *after = maps_json (d, r->epilogue);

            for (size_t j = 0; j < json_object_array_length (after); j++)
              json_object_array_add (fused, json_object_get (json_object_array_get_idx (after, j)));
            json_object_put (after);
            json_object_object_add (o, "shape", int_array ((gint64[]) { r->rows, r->cols }, 2));
            json_object_object_add (tiles, "rows", json_object_new_int64 (r->rows_per_block));
            if (r->inner > 1)   /* the strided form: rows = outer × inner (docs/plan.md) */
              {
                json_object_object_add (o, "strided", int_array ((gint64[]) { r->outer, r->inner }, 2));
                if (r->split > 1)
                  json_object_object_add (o, "split", int_array ((gint64[]) { r->split, r->chunk }, 2));
              }
            json_object_object_add (o, "one_pass", json_object_new_boolean (r->one_pass));
            json_object_object_add (o, "fused", fused);
            break;
          }
        case NAPKIN_PLAN_ELEMENTWISE:
          json_object_object_add (o, "shape", int_array (k->u.ew.dims, k->u.ew.rank));
          json_object_object_add (o, "fused", maps_json (d, k->u.ew.maps));
          break;
        case NAPKIN_PLAN_ATTENTION:
        case NAPKIN_PLAN_ATTENTION_COMBINE:
          {
            const NapkinPlanAttention *a = &k->u.att;
            g_autofree char *types = g_strjoin (",", napkin_dtype_to_string (a->dtype),
                                                napkin_dtype_to_string (a->v_dtype),
                                                napkin_dtype_to_string (a->o_dtype), NULL);

            json_object_object_add (o, "shape", int_array ((gint64[]) { a->batch, a->NQ, a->NKV, a->D }, 4));
            json_object_object_add (o, "heads", int_array ((gint64[]) { a->seqs, a->heads, a->kv_heads }, 3));
            json_object_object_add (o, "group", json_object_new_int64 (a->group));
            json_object_object_add (o, "dtypes", json_object_new_string (types));
            json_object_object_add (tiles, "q", json_object_new_int64 (a->BQ));
            json_object_object_add (tiles, "k", json_object_new_int64 (a->BKV));
            json_object_object_add (tiles, "group", json_object_new_int64 (a->group_tile));
            json_object_object_add (tiles, "rows", json_object_new_int64 (a->rows));
            json_object_object_add (o, "stages", json_object_new_int (a->stages));
            json_object_object_add (o, "mask", json_object_new_string (napkin_attn_mask_to_string (a->mask)));
            json_object_object_add (o, "scores", _napkin_plan_attention_scores_json (plan, a));
            json_object_object_add (o, "tiles_computed", json_object_new_int64 (a->tiles_computed));
            json_object_object_add (o, "tiles_total", json_object_new_int64 (a->tiles_total));
            json_object_object_add (o, "split_kv", json_object_new_int (a->split_kv));
            break;
          }
        case NAPKIN_PLAN_ATTENTION_BACKWARD:
          {
            const NapkinPlanAttnBackward *b = &k->u.bwd;

            json_object_object_add (o, "shape", int_array ((gint64[]) { b->a.batch, b->a.NQ, b->a.NKV, b->a.D }, 4));
            json_object_object_add (o, "group", json_object_new_int64 (b->a.group));
            json_object_object_add (o, "dtypes", json_object_new_string (napkin_dtype_to_string (b->a.dtype)));
            json_object_object_add (tiles, "q", json_object_new_int64 (b->a.BQ));
            json_object_object_add (tiles, "k", json_object_new_int64 (b->a.BKV));
            json_object_object_add (o, "mask", json_object_new_string (napkin_attn_mask_to_string (b->a.mask)));
            json_object_object_add (o, "pairs", json_object_new_int64 (b->pairs));
            break;
          }
        default:
          break;
        }
      json_object_object_add (o, "tiles", tiles);
      json_object_array_add (kernels, o);
    }
  json_object_object_add (root, "kernels", kernels);
  return root;
}
