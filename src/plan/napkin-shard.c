/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plan"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-describe.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-shard.h"
#include "napkin-validate.h"

/* Several GPUs (docs/multi-gpu.md): where each value is across the GPUs, which
 * collective moves it where its consumer needs it, and what one GPU runs. */

typedef enum
{
  LAYOUT_NONE,        /* not computed (no consumer) */
  LAYOUT_REPLICATED,
  LAYOUT_SPLIT,       /* on `axis` (a diagram axis index) */
  LAYOUT_PARTIAL,
} LayoutKind;

typedef struct
{
  LayoutKind kind;
  int        axis;
} Layout;

typedef struct
{
  NapkinDiagram          *diagram;
  const NapkinGpusRegion *gr;
  guint                   gpus;
  int                     p;          /* the parallel axis */
  char                   *path;       /* "regions[i]" of the gpus region */
  Layout                 *have;       /* per node: the layout of its result */
  GPtrArray              *pending;    /* collectives before kernel indices are known */
  GArray                 *pending_node; /* per pending: (shard node, 0 input / 1 output / 2 cut) */
} Shard;

static gboolean
shard_fail (GError    **error,
            const char *path,
            const char *format,
            ...) G_GNUC_PRINTF (3, 4);

static gboolean
shard_fail (GError    **error,
            const char *path,
            const char *format,
            ...)
{
  g_autofree char *words = NULL;
  va_list args;

  va_start (args, format);
  words = g_strdup_vprintf (format, args);
  va_end (args);
  g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID, "%s (JSON path: %s)", words, path);
  return FALSE;
}

static gboolean
in_region (const Shard *s,
           guint        node)
{
  return napkin_region_has_node (s->gr->region, napkin_diagram_node (s->diagram, node)->id);
}

static int
type_dim (const NapkinTensorType *type,
          int                     axis)
{
  for (guint i = 0; i < type->n_axes; i++)
    if ((int) type->axes[i] == axis)
      return i;
  return -1;
}

static const char *
axis_name (NapkinDiagram *d,
           int            axis)
{
  return napkin_diagram_axis (d, axis)->name;
}

/* What an operation needs of the value on its input port. */
static Layout
need_of (const Shard *s,
         guint        node,
         guint        port)
{
  const NapkinNode *n = napkin_diagram_node (s->diagram, node);
  int src = napkin_diagram_input_source (s->diagram, node, port);
  const NapkinTensorType *type = napkin_diagram_node_type (s->diagram, src);

  if (n->kind == NAPKIN_OP_OUTPUT)
    {
      const NapkinPlacement *pl = napkin_gpus_region_placement (s->gr, n->tensor);

      if (pl != NULL && pl->split != NULL)
        return (Layout) { LAYOUT_SPLIT, napkin_diagram_find_axis (s->diagram, pl->split) };
      return (Layout) { LAYOUT_REPLICATED, -1 };
    }
  if (in_region (s, node) && napkin_tensor_type_has_axis (type, s->p))
    return (Layout) { LAYOUT_SPLIT, s->p };
  return (Layout) { LAYOUT_REPLICATED, -1 };
}

/* The layout an operation leaves, or FALSE with an error when it cannot run split. */
static gboolean
result_of (Shard   *s,
           guint    node,
           Layout  *out,
           GError **error)
{
  NapkinDiagram *d = s->diagram;
  const NapkinNode *n = napkin_diagram_node (d, node);
  const NapkinTensorType *type = napkin_diagram_node_type (d, node);
  gboolean carries_in = FALSE;
  const char *pname = axis_name (d, s->p);
  g_autofree char *npath = g_strdup_printf ("nodes[%u]", node);

  for (guint port = 0; port < napkin_op_n_inputs (n); port++)
    carries_in |= napkin_tensor_type_has_axis (napkin_diagram_node_type (d, napkin_diagram_input_source (d, node, port)), s->p);

  if (!in_region (s, node))
    {
      if (carries_in || napkin_tensor_type_has_axis (type, s->p))
        return shard_fail (error, npath, _("Operation “%s” is outside the gpus region “%s” but carries its parallel axis “%s”: "
                           "put it inside the region"), n->id, s->gr->region->name, pname);
      *out = (Layout) { LAYOUT_REPLICATED, -1 };
      return TRUE;
    }

  if (n->axis != NULL && napkin_diagram_find_axis (d, n->axis) == s->p
      && (n->kind == NAPKIN_OP_SOFTMAX || n->kind == NAPKIN_OP_NORMALIZE || n->kind == NAPKIN_OP_MASK
          || (n->kind == NAPKIN_OP_REDUCE && n->reduce != NAPKIN_REDUCE_SUM)))
    return shard_fail (error, npath, _("Operation “%s” (%s over %s) needs the whole axis “%s” on one GPU, "
                       "but the gpus region “%s” splits it"), n->id, napkin_op_kind_to_string (n->kind),
                       pname, pname, s->gr->region->name);
  if (n->kind == NAPKIN_OP_MASK && n->rows != NULL && napkin_diagram_find_axis (d, n->rows) == s->p)
    return shard_fail (error, npath, _("Mask “%s” counts rows along “%s”, which the gpus region “%s” splits: "
                       "its indices would be one GPU's"), n->id, pname, s->gr->region->name);

  if (napkin_tensor_type_has_axis (type, s->p))
    *out = (Layout) { LAYOUT_SPLIT, s->p };
  else if (carries_in && (n->kind == NAPKIN_OP_CONTRACT || n->kind == NAPKIN_OP_REDUCE))
    *out = (Layout) { LAYOUT_PARTIAL, -1 };
  else if (carries_in)
    return shard_fail (error, npath, _("Operation “%s” removes the axis “%s” that the gpus region “%s” splits "
                       "(only a contraction or a sum may)"), n->id, pname, s->gr->region->name);
  else
    *out = (Layout) { LAYOUT_REPLICATED, -1 };
  return TRUE;
}

/* The collective that turns `have` into `need`; FALSE when none is needed. */
static gboolean
collective_for (Layout                have,
                Layout                need,
                NapkinCollectiveKind *kind)
{
  switch (have.kind)
    {
    case LAYOUT_PARTIAL:
      *kind = need.kind == LAYOUT_SPLIT ? NAPKIN_COLLECTIVE_REDUCE_SCATTER : NAPKIN_COLLECTIVE_ALL_REDUCE;
      return TRUE;
    case LAYOUT_SPLIT:
      if (need.kind == LAYOUT_SPLIT && need.axis == have.axis)
        return FALSE;
      *kind = need.kind == LAYOUT_SPLIT ? NAPKIN_COLLECTIVE_ALL_TO_ALL : NAPKIN_COLLECTIVE_ALL_GATHER;
      return TRUE;
    case LAYOUT_REPLICATED:
    case LAYOUT_NONE:
    default:
      return FALSE;   /* replicated → anything: each GPU keeps its slice */
    }
}

static int
layout_dim (const NapkinTensorType *type,
            Layout                  layout)
{
  if (layout.kind == LAYOUT_PARTIAL)
    return NAPKIN_SHARD_PARTIAL;
  if (layout.kind == LAYOUT_SPLIT)
    return type_dim (type, layout.axis);
  return NAPKIN_SHARD_REPLICATED;
}

static void
free_tensor (gpointer p)
{
  NapkinShardTensor *t = p;

  g_free (t->tensor);
  g_free (t);
}

static void
free_collective (gpointer p)
{
  NapkinCollective *c = p;

  g_free (c->tensor);
  g_free (c->src);
  g_free (c->dst);
  g_free (c);
}

void
napkin_shard_plan_free (NapkinShardPlan *plan)
{
  if (plan == NULL)
    return;
  g_free (plan->region);
  g_free (plan->axis);
  g_free (plan->chunk_axis);
  g_clear_object (&plan->shard);
  g_clear_pointer (&plan->plan, napkin_plan_free);
  g_clear_pointer (&plan->tensors, g_ptr_array_unref);
  g_clear_pointer (&plan->collectives, g_ptr_array_unref);
  g_free (plan);
}

/* A type's whole shape (the original diagram's sizes) in its axis order. */
static gint64
fill_shape (NapkinDiagram          *d,
            const NapkinTensorType *type,
            guint                  *rank,
            gint64                 *shape)
{
  gint64 elements = 1;

  *rank = type->n_axes;
  for (guint i = 0; i < type->n_axes; i++)
    {
      shape[i] = napkin_diagram_axis_size (d, type->axes[i]);
      elements *= shape[i];
    }
  return elements;
}

static char *
fresh_name (NapkinDiagram *d,
            NapkinItemKind kind,
            const char    *base,
            const char    *suffix)
{
  g_autofree char *stem = g_strdup_printf ("%.50s%s", base, suffix);
  char *name = g_strdup (stem);

  for (guint i = 2; napkin_diagram_find (d, kind, name) >= 0; i++)
    {
      g_free (name);
      name = g_strdup_printf ("%s%u", stem, i);
    }
  return name;
}

/* Cuts the shard diagram at a pending sum that operations need whole: the producer
 * writes <id>_partial, its consumers read <id>_sum (docs/multi-gpu.md). */
static void
cut_value (NapkinDiagram          *shard,
           guint                   node,
           const NapkinTensorType *type,
           char                  **src_out,
           char                  **dst_out,
           int                    *out_node,
           int                    *in_node)
{
  const NapkinNode *producer = napkin_diagram_node (shard, node);
  g_autofree char *pid = g_strdup (producer->id);
  double x = producer->x, y = producer->y;
  char *src = fresh_name (shard, NAPKIN_ITEM_TENSOR, pid, "_partial");
  char *dst = fresh_name (shard, NAPKIN_ITEM_TENSOR, pid, "_sum");
  g_autofree char *src_id = fresh_name (shard, NAPKIN_ITEM_NODE, pid, "_partial");
  g_autofree char *dst_id = fresh_name (shard, NAPKIN_ITEM_NODE, pid, "_sum");

  for (guint t = 0; t < 2; t++)
    {
      NapkinTensor *tensor = g_new0 (NapkinTensor, 1);

      tensor->name = g_strdup (t == 0 ? src : dst);
      tensor->axes = g_new0 (char *, type->n_axes + 1);
      for (guint i = 0; i < type->n_axes; i++)
        tensor->axes[i] = g_strdup (napkin_diagram_axis (shard, type->axes[i])->name);
      tensor->dtype = type->dtype;
      napkin_diagram_insert_item (shard, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (shard), tensor);
    }
  {
    NapkinNode *out = napkin_node_new (src_id, NAPKIN_OP_OUTPUT);
    NapkinNode *in = napkin_node_new (dst_id, NAPKIN_OP_INPUT);

    out->tensor = g_strdup (src);
    out->x = x + 60, out->y = y + 60;
    in->tensor = g_strdup (dst);
    in->x = x + 120, in->y = y;
    napkin_diagram_insert_item (shard, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (shard), out);
    napkin_diagram_insert_item (shard, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (shard), in);
  }
  for (guint w = 0; w < napkin_diagram_n_wires (shard); w++)
    {
      NapkinWire *wire = napkin_diagram_get_item (shard, NAPKIN_ITEM_WIRE, w);

      if (strcmp (wire->from, pid) == 0)
        {
          g_free (wire->from);
          wire->from = g_strdup (dst_id);
        }
    }
  {
    NapkinWire *wire = g_new0 (NapkinWire, 1);

    wire->from = g_strdup (pid);
    wire->to = g_strdup (src_id);
    wire->port = 0;
    napkin_diagram_insert_item (shard, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (shard), wire);
  }
  napkin_diagram_changed (shard);
  *src_out = src;
  *dst_out = dst;
  *out_node = napkin_diagram_find_node (shard, src_id);
  *in_node = napkin_diagram_find_node (shard, dst_id);
}

static NapkinCollective *
collective_new (NapkinDiagram          *d,
                NapkinCollectiveKind    kind,
                const char             *tensor,
                const NapkinTensorType *type,
                Layout                  have,
                Layout                  need,
                guint                   gpus)
{
  NapkinCollective *c = g_new0 (NapkinCollective, 1);

  c->kind = kind;
  c->tensor = g_strdup (tensor);
  c->dtype = type->dtype;
  c->elements = fill_shape (d, type, &c->rank, c->shape);
  c->in_split = layout_dim (type, have);
  c->out_split = layout_dim (type, need);
  c->bytes = c->elements * napkin_dtype_bytes (type->dtype);
  if (kind == NAPKIN_COLLECTIVE_ALL_TO_ALL)
    c->bytes /= gpus;     /* nccl-tests' size: one rank's buffer */
  c->chunks = 1;
  return c;
}

/* Whether every node of a region of one GPU is in the gpus region, none, or some. */
static gboolean
check_nesting (Shard   *s,
               GError **error)
{
  NapkinDiagram *d = s->diagram;
  const NapkinRegion *g = s->gr->region;

  for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
    {
      const NapkinRegion *region = napkin_diagram_region (d, r);
      guint inside = 0, g_in_r = 0;
      g_autofree char *path = g_strdup_printf ("regions[%u].nodes", r);

      for (guint i = 0; i < region->nodes->len; i++)
        inside += napkin_region_has_node (g, g_ptr_array_index (region->nodes, i));
      for (guint i = 0; i < g->nodes->len; i++)
        g_in_r += napkin_region_has_node (region, g_ptr_array_index (g->nodes, i));
      if (g->nodes->len > 0 && g_in_r == g->nodes->len && inside < region->nodes->len)
        return shard_fail (error, s->path, _("A gpus region cannot be inside region “%s” (%s): "
                           "it is the outermost level"), region->name, napkin_level_to_string (region->level));
      if (inside > 0 && inside < region->nodes->len)
        return shard_fail (error, path, _("Region “%s” is partly inside the gpus region “%s”: "
                           "a region is wholly inside it or wholly outside"), region->name, g->name);
    }
  return TRUE;
}

/* One GPU: the diagram as it is, no collectives. */
static NapkinShardPlan *
single_gpu (NapkinDiagram *diagram,
            NapkinArch    *arch,
            GError       **error)
{
  g_autoptr(NapkinShardPlan) plan = g_new0 (NapkinShardPlan, 1);

  plan->gpus = 1;
  plan->chunks = 1;
  plan->shard = napkin_diagram_copy (diagram);
  napkin_diagram_set_gpus (plan->shard, NULL);
  plan->tensors = g_ptr_array_new_with_free_func (free_tensor);
  plan->collectives = g_ptr_array_new_with_free_func (free_collective);
  if (arch != NULL && !(plan->plan = napkin_plan_build (plan->shard, arch, NULL, error)))
    return NULL;
  return g_steal_pointer (&plan);
}

static int
first_kernel_of (const NapkinPlan *plan,
                 guint             node,
                 gboolean          last)
{
  int found = -1;

  for (guint k = 0; plan && k < plan->kernels->len; k++)
    {
      const NapkinPlanKernel *kernel = g_ptr_array_index (plan->kernels, k);

      for (guint i = 0; kernel->nodes && i < kernel->nodes->len; i++)
        if (g_array_index (kernel->nodes, guint, i) == node)
          {
            if (!last)
              return k;
            found = k;
          }
    }
  return found;
}

/* The first kernel that reads the value of node `node` (the number of kernels if none). */
static guint
first_reader (NapkinDiagram    *shard,
              const NapkinPlan *plan,
              guint             node)
{
  guint n_consumers, best;
  const guint *consumers = napkin_diagram_consumers (shard, node, &n_consumers);

  if (plan == NULL)
    return 0;
  best = plan->kernels->len;
  for (guint i = 0; i < n_consumers; i++)
    {
      int k = first_kernel_of (plan, consumers[i], FALSE);

      if (k >= 0 && (guint) k < best)
        best = k;
    }
  return best;
}

/* Just after the kernel that makes the value of `node` (0 for an input). */
static guint
after_writer (const NapkinPlan *plan,
              guint             node)
{
  int k = first_kernel_of (plan, node, TRUE);

  return k < 0 ? 0 : (guint) k + 1;
}

static gboolean check_overlap (Shard *s, NapkinArch *arch, GError **error);

/* The gpus region's own checks: one parallel axis that divides into the GPUs, its
 * nesting, the split placements and the overlap. Sets s->p. */
static gboolean
check_region (Shard      *s,
              NapkinArch *arch,
              GError    **error)
{
  NapkinDiagram *diagram = s->diagram;
  const NapkinGpusRegion *gr = s->gr;
  guint gpus = s->gpus, p_count = 0;

  for (guint i = 0; i < gr->region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (gr->region->marks, NapkinMark, i);

      if (mark->kind == NAPKIN_MARK_PARALLEL)
        {
          p_count++;
          s->p = napkin_diagram_find_axis (diagram, mark->axis);
        }
    }
  if (p_count != 1)
    {
      g_autofree char *mp = g_strdup_printf ("%s.marks", s->path);

      return shard_fail (error, mp, _("The gpus region “%s” must mark exactly one axis \"parallel\" across the GPUs; it marks %u"),
                         gr->region->name, p_count);
    }
  if (napkin_diagram_axis_size (diagram, s->p) % gpus != 0)
    {
      g_autofree char *mp = g_strdup_printf ("%s.marks.%s", s->path, axis_name (diagram, s->p));

      return shard_fail (error, mp, _("The axis “%s” (%lld) of the gpus region “%s” does not divide into %u GPUs"),
                         axis_name (diagram, s->p), (long long) (napkin_diagram_axis_size (diagram, s->p)), gr->region->name, gpus);
    }
  if (!check_nesting (s, error))
    return FALSE;
  for (guint i = 0; i < gr->placements->len; i++)
    {
      const NapkinPlacement *pl = &g_array_index (gr->placements, NapkinPlacement, i);
      int a;

      if (pl->split == NULL)
        continue;
      a = napkin_diagram_find_axis (diagram, pl->split);
      if (napkin_diagram_axis_size (diagram, a) % gpus != 0)
        {
          g_autofree char *pp = g_strdup_printf ("%s.placements.%s.split", s->path, pl->tensor);

          return shard_fail (error, pp, _("Tensor “%s” is stored split on “%s” (%lld), which does not divide into %u GPUs"),
                             pl->tensor, pl->split, (long long) (napkin_diagram_axis_size (diagram, a)), gpus);
        }
    }
  return check_overlap (s, arch, error);
}

/* The overlap: an axis other than the parallel one that divides into the chunks, and
 * fewer SMs left to NCCL than the GPU has. */
static gboolean
check_overlap (Shard      *s,
               NapkinArch *arch,
               GError    **error)
{
  const NapkinGpusRegion *gr = s->gr;
  int a;

  if (gr->chunks < 2)
    return TRUE;
  a = napkin_diagram_find_axis (s->diagram, gr->chunk_axis);
  {
    g_autofree char *ap = g_strdup_printf ("%s.overlap.axis", s->path);

    if (a == s->p)
      return shard_fail (error, ap, _("The overlap axis “%s” is the axis split across the GPUs; chunk another one"), gr->chunk_axis);
    if (napkin_diagram_axis_size (s->diagram, a) % gr->chunks != 0)
      return shard_fail (error, ap, _("The overlap axis “%s” (%lld) does not divide into %u chunks"),
                         gr->chunk_axis, (long long) (napkin_diagram_axis_size (s->diagram, a)), gr->chunks);
  }
  if (arch != NULL && gr->comm_sms >= arch->sms)
    {
      g_autofree char *sp = g_strdup_printf ("%s.overlap.comm_sms", s->path);

      return shard_fail (error, sp, _("The overlap leaves %u SMs to NCCL, but “%s” has %u"), gr->comm_sms, arch->id, arch->sms);
    }
  return TRUE;
}

/* Every node's layout across the GPUs, in topological order. */
static gboolean
compute_layouts (Shard       *s,
                 const guint *topo,
                 guint        n_nodes,
                 GError     **error)
{
  for (guint t = 0; t < n_nodes; t++)
    {
      guint node = topo[t];
      const NapkinNode *n = napkin_diagram_node (s->diagram, node);

      if (n->kind == NAPKIN_OP_INPUT)
        {
          const NapkinPlacement *pl = napkin_gpus_region_placement (s->gr, n->tensor);

          s->have[node] = pl != NULL && pl->split != NULL
                          ? (Layout) { LAYOUT_SPLIT, napkin_diagram_find_axis (s->diagram, pl->split) }
                          : (Layout) { LAYOUT_REPLICATED, -1 };
        }
      else if (n->kind == NAPKIN_OP_OUTPUT)
        s->have[node] = (Layout) { LAYOUT_NONE, -1 };
      else if (!result_of (s, node, &s->have[node], error))
        return FALSE;
    }
  return TRUE;
}

/* A collective waiting for its kernel index: its shard node and what it serves
 * (0 an input, 1 an output, 2 a cut value). */
static void
add_pending (Shard            *s,
             NapkinCollective *c,
             int               node,
             int               what)
{
  g_ptr_array_add (s->pending, c);
  g_array_append_val (s->pending_node, ((int[2]) { node, what }));
}

/* What the operations reading `node` need of its value: split, or whole when one of
 * them needs it whole. *any_op: some operation (not only outputs) reads it. */
static Layout
need_of_consumers (Shard    *s,
                   guint     node,
                   gboolean *any_op)
{
  NapkinDiagram *diagram = s->diagram;
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (diagram, node, &n_consumers);
  gboolean whole = FALSE;
  Layout need = { LAYOUT_NONE, -1 };

  *any_op = FALSE;
  for (guint i = 0; i < n_consumers; i++)
    {
      const NapkinNode *c = napkin_diagram_node (diagram, consumers[i]);

      if (c->kind == NAPKIN_OP_OUTPUT)
        continue;
      *any_op = TRUE;
      for (guint port = 0; port < napkin_op_n_inputs (c); port++)
        if ((guint) napkin_diagram_input_source (diagram, consumers[i], port) == node)
          {
            Layout l = need_of (s, consumers[i], port);

            if (l.kind == LAYOUT_REPLICATED)
              whole = TRUE;
            else
              need = l;
          }
    }
  return whole ? (Layout) { LAYOUT_REPLICATED, -1 } : need;
}

/* The outputs that read the value of `node`, against their declared placement. */
static void
output_collectives (Shard           *s,
                    NapkinShardPlan *plan,
                    guint            node)
{
  NapkinDiagram *diagram = s->diagram;
  const NapkinTensorType *type = napkin_diagram_node_type (diagram, node);
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (diagram, node, &n_consumers);
  NapkinCollectiveKind kind;

  for (guint i = 0; i < n_consumers; i++)
    {
      const NapkinNode *c = napkin_diagram_node (diagram, consumers[i]);
      NapkinShardTensor *st;
      Layout out_need;

      if (c->kind != NAPKIN_OP_OUTPUT)
        continue;
      out_need = need_of (s, consumers[i], 0);
      st = g_new0 (NapkinShardTensor, 1);
      st->tensor = g_strdup (c->tensor);
      st->node = consumers[i];
      st->is_output = TRUE;
      st->dtype = type->dtype;
      fill_shape (diagram, type, &st->rank, st->shape);
      st->stored = layout_dim (type, out_need);
      st->computed = layout_dim (type, s->have[node]);
      g_ptr_array_add (plan->tensors, st);
      if (collective_for (s->have[node], out_need, &kind))
        {
          NapkinCollective *col = collective_new (diagram, kind, c->tensor, type, s->have[node], out_need, s->gpus);

          col->src = g_strdup (c->tensor);
          col->dst = g_strdup (c->tensor);
          col->node = consumers[i];
          add_pending (s, col, consumers[i], 1);
        }
    }
}

/* The collectives the value of `node` needs: an input moved from how it is stored to
 * how its readers read it, a value made inside the program cut where a later kernel
 * needs it elsewhere, and the outputs it feeds. */
static void
node_collectives (Shard           *s,
                  NapkinShardPlan *plan,
                  guint            node)
{
  NapkinDiagram *diagram = s->diagram;
  const NapkinNode *n = napkin_diagram_node (diagram, node);
  const NapkinTensorType *type = napkin_diagram_node_type (diagram, node);
  gboolean any_op;
  Layout need = need_of_consumers (s, node, &any_op);
  NapkinCollectiveKind kind;

  if (n->kind == NAPKIN_OP_INPUT)
    {
      NapkinShardTensor *st = g_new0 (NapkinShardTensor, 1);

      st->tensor = g_strdup (n->tensor);
      st->node = node;
      st->dtype = type->dtype;
      fill_shape (diagram, type, &st->rank, st->shape);
      st->stored = layout_dim (type, s->have[node]);
      st->computed = any_op ? layout_dim (type, need) : st->stored;
      g_ptr_array_add (plan->tensors, st);
      if (any_op && collective_for (s->have[node], need, &kind))
        {
          NapkinCollective *c = collective_new (diagram, kind, n->tensor, type, s->have[node], need, s->gpus);

          c->src = g_strdup (n->tensor);
          c->dst = g_strdup (n->tensor);
          c->node = node;
          add_pending (s, c, node, 0);
        }
      /* what the shard's kernels see */
      s->have[node] = any_op ? need : s->have[node];
    }
  else if (any_op && collective_for (s->have[node], need, &kind))
    {
      /* a value made inside the program that a later kernel needs elsewhere: cut */
      NapkinCollective *c = collective_new (diagram, kind, n->id, type, s->have[node], need, s->gpus);
      int out_node, in_node;

      cut_value (plan->shard, node, type, &c->src, &c->dst, &out_node, &in_node);
      c->node = in_node;
      add_pending (s, c, out_node, 2);
      s->have[node] = need;
    }
  output_collectives (s, plan, node);
}

/* A pending collective placed and priced: the kernel it runs before, its seconds, and
 * its chunks when the region overlaps it (values made inside the program that carry
 * the chunk axis). */
static gboolean
place_collective (Shard            *s,
                  NapkinShardPlan  *plan,
                  NapkinArch       *arch,
                  NapkinCollective *c,
                  const int        *pn,
                  GError          **error)
{
  int node = pn[0];

  if (pn[1] == 0)
    c->before_kernel = first_reader (plan->shard, plan->plan, node);
  else
    c->before_kernel = after_writer (plan->plan, napkin_diagram_input_source (plan->shard, node, 0));
  if (arch != NULL)
    {
      c->seconds = napkin_arch_collective_seconds (arch, c->kind, s->gpus, c->bytes, &c->bus_bandwidth);
      if (c->seconds < 0)
        {
          g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                       _("Architecture “%s” has no interconnect figures for %u GPUs (its file's \"interconnect\")"),
                       arch->id, s->gpus);
          return FALSE;
        }
    }
  if (plan->chunks >= 2 && pn[1] != 0)
    {
      const NapkinTensorType *type = napkin_diagram_node_type (plan->shard, napkin_diagram_input_source (plan->shard, node, 0));

      if (napkin_tensor_type_has_axis (type, napkin_diagram_find_axis (s->diagram, plan->chunk_axis)))
        {
          c->chunks = plan->chunks;
          if (arch != NULL)
            c->chunk_seconds = napkin_arch_collective_seconds (arch, c->kind, s->gpus, (double) c->bytes / c->chunks, NULL);
        }
    }
  plan->comm_s += MAX (c->seconds, 0);
  return TRUE;
}

/* The collectives in run order: by kernel, then as found (a stable insertion sort:
 * few collectives). */
static void
sort_collectives (GPtrArray *a)
{
  for (guint i = 1; i < a->len; i++)
    for (guint j = i; j > 0; j--)
      {
        NapkinCollective *x = g_ptr_array_index (a, j - 1), *y = g_ptr_array_index (a, j);

        if (x->before_kernel <= y->before_kernel)
          break;
        a->pdata[j - 1] = y;
        a->pdata[j] = x;
      }
}

static NapkinShardPlan *
shard_plan_new (Shard *s)
{
  NapkinShardPlan *plan = g_new0 (NapkinShardPlan, 1);
  const NapkinGpusRegion *gr = s->gr;

  plan->gpus = s->gpus;
  plan->region = g_strdup (gr->region->name);
  plan->axis = g_strdup (axis_name (s->diagram, s->p));
  plan->axis_size = napkin_diagram_axis_size (s->diagram, s->p);
  plan->chunks = gr->chunks >= 2 ? gr->chunks : 1;
  plan->chunk_axis = gr->chunks >= 2 ? g_strdup (gr->chunk_axis) : NULL;
  plan->comm_sms = gr->chunks >= 2 ? gr->comm_sms : 0;
  plan->tensors = g_ptr_array_new_with_free_func (free_tensor);
  plan->collectives = g_ptr_array_new_with_free_func (free_collective);
  plan->shard = napkin_diagram_copy (s->diagram);
  napkin_diagram_set_gpus (plan->shard, NULL);
  return plan;
}

NapkinShardPlan *
napkin_shard_plan_build (NapkinDiagram *diagram,
                         NapkinArch    *arch,
                         guint          gpus,
                         GError       **error)
{
  g_autoptr(NapkinShardPlan) plan = NULL;
  g_autofree Layout *have = NULL;
  Shard s = { 0 };
  const NapkinGpusRegion *gr;
  const guint *topo;
  guint n_nodes;
  g_autofree char *path = NULL;
  g_autoptr(GPtrArray) pending = g_ptr_array_new ();   /* collectives before kernel indices are known */
  g_autoptr(GArray) pending_node = g_array_new (FALSE, FALSE, sizeof (int) * 2);

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  gr = napkin_diagram_get_gpus (diagram);
  if (gpus == 0)
    gpus = gr != NULL && gr->gpus > 0 ? gr->gpus : 1;
  if (gr == NULL || gpus == 1)
    {
      plan = single_gpu (diagram, arch, error);
      if (plan != NULL && gr != NULL)
        plan->region = g_strdup (gr->region->name);
      return g_steal_pointer (&plan);
    }

  path = g_strdup_printf ("regions[%u]", napkin_diagram_n_regions (diagram));
  s.diagram = diagram;
  s.gr = gr;
  s.gpus = gpus;
  s.p = -1;
  s.path = path;
  s.pending = pending;
  s.pending_node = pending_node;
  if (!check_region (&s, arch, error))
    return NULL;
  n_nodes = napkin_diagram_n_nodes (diagram);
  topo = napkin_diagram_topo_order (diagram);
  have = g_new0 (Layout, n_nodes);
  s.have = have;
  if (!compute_layouts (&s, topo, n_nodes, error))
    return NULL;

  plan = shard_plan_new (&s);
  /* the collectives, in topological order of the values they move */
  for (guint t = 0; t < n_nodes; t++)
    if (napkin_diagram_node (diagram, topo[t])->kind != NAPKIN_OP_OUTPUT)
      node_collectives (&s, plan, topo[t]);

  /* one GPU's slice of the parallel axis */
  ((NapkinAxis *) napkin_diagram_get_item (plan->shard, NAPKIN_ITEM_AXIS, s.p))->size /= gpus;
  napkin_diagram_changed (plan->shard);
  if (arch != NULL && !(plan->plan = napkin_plan_build (plan->shard, arch, NULL, error)))
    return NULL;
  for (guint i = 0; i < pending->len; i++)
    {
      NapkinCollective *c = g_ptr_array_index (pending, i);

      g_ptr_array_add (plan->collectives, c);   /* owned by the plan from here */
      if (!place_collective (&s, plan, arch, c, &g_array_index (pending_node, int, 2 * i), error))
        return NULL;
    }
  sort_collectives (plan->collectives);
  return g_steal_pointer (&plan);
}

const NapkinShardTensor *
napkin_shard_plan_tensor (const NapkinShardPlan *plan,
                          const char            *tensor)
{
  g_return_val_if_fail (plan != NULL && tensor != NULL, NULL);

  for (guint i = 0; i < plan->tensors->len; i++)
    {
      const NapkinShardTensor *t = g_ptr_array_index (plan->tensors, i);

      if (strcmp (t->tensor, tensor) == 0)
        return t;
    }
  return NULL;
}

static json_object *
shape_json (guint         rank,
            const gint64 *shape)
{
  json_object *a = json_object_new_array ();

  for (guint i = 0; i < rank; i++)
    json_object_array_add (a, json_object_new_int64 (shape[i]));
  return a;
}

/* The axis name of a split dim of a node's value in the shard diagram. */
static json_object *
node_dim_axis (NapkinDiagram *d,
               int            node,
               int            dim)
{
  const NapkinTensorType *type;

  if (dim < 0 || node < 0)
    return NULL;
  type = napkin_diagram_node_type (d, node);
  if (!type->valid || (guint) dim >= type->n_axes)
    return NULL;
  return json_object_new_string (napkin_diagram_axis (d, type->axes[dim])->name);
}

json_object *
napkin_shard_plan_to_json (const NapkinShardPlan *plan)
{
  json_object *root, *tensors, *collectives;

  g_return_val_if_fail (plan != NULL, NULL);

  root = json_object_new_object ();
  json_object_object_add (root, "gpus", json_object_new_int (plan->gpus));
  json_object_object_add (root, "region", plan->region ? json_object_new_string (plan->region) : NULL);
  json_object_object_add (root, "axis", plan->axis ? json_object_new_string (plan->axis) : NULL);
  json_object_object_add (root, "axis_size", json_object_new_int64 (plan->axis_size));
  json_object_object_add (root, "chunks", json_object_new_int (plan->chunks));
  json_object_object_add (root, "chunk_axis", plan->chunk_axis ? json_object_new_string (plan->chunk_axis) : NULL);
  json_object_object_add (root, "comm_s", json_object_new_double (plan->comm_s));

  tensors = json_object_new_array ();
  for (guint i = 0; i < plan->tensors->len; i++)
    {
      const NapkinShardTensor *t = g_ptr_array_index (plan->tensors, i);
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "tensor", json_object_new_string (t->tensor));
      json_object_object_add (o, "node", json_object_new_string (napkin_diagram_node (plan->shard, t->node)->id));
      json_object_object_add (o, "output", json_object_new_boolean (t->is_output));
      json_object_object_add (o, "dtype", json_object_new_string (napkin_dtype_to_string (t->dtype)));
      json_object_object_add (o, "shape", shape_json (t->rank, t->shape));
      json_object_object_add (o, "stored", json_object_new_int (t->stored));
      json_object_object_add (o, "computed", json_object_new_int (t->computed));
      json_object_object_add (o, "stored_axis", node_dim_axis (plan->shard, t->is_output
                                                               ? napkin_diagram_input_source (plan->shard, t->node, 0)
                                                               : t->node, t->stored));
      json_object_object_add (o, "computed_axis", node_dim_axis (plan->shard, t->is_output
                                                                 ? napkin_diagram_input_source (plan->shard, t->node, 0)
                                                                 : t->node, t->computed));
      json_object_array_add (tensors, o);
    }
  json_object_object_add (root, "tensors", tensors);

  collectives = json_object_new_array ();
  for (guint i = 0; i < plan->collectives->len; i++)
    {
      const NapkinCollective *c = g_ptr_array_index (plan->collectives, i);
      const NapkinNode *n = napkin_diagram_node (plan->shard, c->node);
      int value = n->kind == NAPKIN_OP_OUTPUT ? napkin_diagram_input_source (plan->shard, c->node, 0) : c->node;
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "kind", json_object_new_string (napkin_collective_to_string (c->kind)));
      json_object_object_add (o, "tensor", json_object_new_string (c->tensor));
      json_object_object_add (o, "src", json_object_new_string (c->src));
      json_object_object_add (o, "dst", json_object_new_string (c->dst));
      json_object_object_add (o, "node", json_object_new_string (n->id));
      json_object_object_add (o, "before_kernel", json_object_new_int (c->before_kernel));
      json_object_object_add (o, "in_split", json_object_new_int (c->in_split));
      json_object_object_add (o, "out_split", json_object_new_int (c->out_split));
      json_object_object_add (o, "in_axis", node_dim_axis (plan->shard, value, c->in_split));
      json_object_object_add (o, "out_axis", node_dim_axis (plan->shard, value, c->out_split));
      json_object_object_add (o, "dtype", json_object_new_string (napkin_dtype_to_string (c->dtype)));
      json_object_object_add (o, "shape", shape_json (c->rank, c->shape));
      json_object_object_add (o, "elements", json_object_new_int64 (c->elements));
      json_object_object_add (o, "bytes", json_object_new_int64 (c->bytes));
      json_object_object_add (o, "seconds", json_object_new_double (c->seconds));
      json_object_object_add (o, "bus_bandwidth", json_object_new_double (c->bus_bandwidth));
      json_object_object_add (o, "chunks", json_object_new_int (c->chunks));
      json_object_object_add (o, "chunk_seconds", json_object_new_double (c->chunk_seconds));
      json_object_array_add (collectives, o);
    }
  json_object_object_add (root, "collectives", collectives);
  json_object_object_add (root, "kernels", json_object_new_int (plan->plan ? plan->plan->kernels->len : 0));
  json_object_object_add (root, "shard", napkin_diagram_to_json (plan->shard));
  return root;
}
