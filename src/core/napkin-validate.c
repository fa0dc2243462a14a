/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <string.h>

#include <glib/gi18n-lib.h>

#include "napkin-describe.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-validate.h"

/* The meaning of a diagram (docs/design.md §1): operations get tensors they can use,
 * the graph has no cycle, regions are connected, nest properly, and stream only
 * where the operations have a streaming form. */

typedef struct
{
  NapkinDiagram *diagram;
  GPtrArray     *problems;
  GHashTable    *codes;   /* problem -> NapkinDocumentError, for validate () */
} Checker;

void
napkin_problem_free (NapkinProblem *problem)
{
  g_free (problem->path);
  g_free (problem->message);
  g_free (problem);
}

G_GNUC_PRINTF (5, 6)
static void
report (Checker        *checker,
        NapkinItemKind  kind,
        guint           index,
        const char     *path,
        const char     *format,
        ...)
{
  NapkinProblem *problem = g_new0 (NapkinProblem, 1);
  g_autofree char *text = NULL;
  va_list args;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);

  /* words a user knows; the path is kept apart (docs/file-format.md, "Error messages") */
  text[0] = g_ascii_toupper (text[0]);
  problem->kind = kind;
  problem->index = index;
  problem->path = g_strdup (path);
  problem->message = g_steal_pointer (&text);
  g_ptr_array_add (checker->problems, problem);
}

static char *
node_path (guint index)
{
  return g_strdup_printf ("nodes[%u]", index);
}

/* The path is built only when something is reported: most nodes are fine. */
G_GNUC_PRINTF (3, 4)
static void
report_node (Checker    *checker,
             guint       n,
             const char *format,
             ...)
{
  g_autofree char *path = node_path (n);
  g_autofree char *text = NULL;
  va_list args;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  report (checker, NAPKIN_ITEM_NODE, n, path, "%s", text);
}

static const char *
axis_name (NapkinDiagram *diagram,
           guint          axis)
{
  return napkin_diagram_axis (diagram, axis)->name;
}

static gboolean
type_axes_subset (const NapkinTensorType *a,
                  const NapkinTensorType *b)
{
  for (guint i = 0; i < a->n_axes; i++)
    if (!napkin_tensor_type_has_axis (b, a->axes[i]))
      return FALSE;
  return TRUE;
}

static void
check_tensors (Checker *checker)
{
  NapkinDiagram *d = checker->diagram;

  for (guint i = 0; i < napkin_diagram_n_tensors (d); i++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, i);
      g_autofree char *path = g_strdup_printf ("tensors[%u]", i);
      gint64 n = 1;
      gint64 bytes;

      for (guint a = 0; tensor->axes[a]; a++)
        {
          int axis = napkin_diagram_find_axis (d, tensor->axes[a]);

          if (axis >= 0 && !napkin_mul_checked (n, napkin_diagram_axis_size (d, axis), &n))
            {
              report (checker, NAPKIN_ITEM_TENSOR, i, path,
                      _("tensor “%s” has more elements than 64 bits can count"), tensor->name);
              n = -1;
              break;
            }
        }
      if (n > 0 && !napkin_mul_checked (n, napkin_dtype_bytes (tensor->dtype), &bytes))
        report (checker, NAPKIN_ITEM_TENSOR, i, path,
                _("tensor “%s” has more bytes than 64 bits can count"), tensor->name);
    }
}

static void
describe_type (Checker                *checker,
               const NapkinTensorType *type,
               GString                *out)
{
  g_autofree char *text = napkin_diagram_type_to_string (checker->diagram, type);
  g_string_append (out, text);
}

/* The node's input types into in[]; FALSE where one is unconnected (reported here) or
 * invalid (reported at its source). */
static gboolean
node_inputs (Checker                 *checker,
             guint                    n,
             const NapkinTensorType **in)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);
  guint n_inputs = napkin_op_n_inputs (node);
  const char *kind = napkin_describe_kind (node->kind);

  for (guint p = 0; p < n_inputs; p++)
    {
      int src = napkin_diagram_input_source (d, n, p);

      if (src < 0)
        {
          g_autofree char *ord = napkin_describe_ordinal (p);

          if (n_inputs == 1)
            report_node (checker, n, _("the input of the %s “%s” is not connected"), kind, node->id);
          else
            report_node (checker, n, _("the %s input of the %s “%s” is not connected"), ord, kind, node->id);
          return FALSE;
        }
      in[p] = napkin_diagram_node_type (d, src);
      if (!in[p]->valid)
        return FALSE;  /* reported at the source */
    }
  return TRUE;
}

/* An output's wire carries the axes of the tensor it names. */
static void
check_output_node (Checker                *checker,
                   guint                   n,
                   const NapkinTensorType *in)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);
  const NapkinTensor *tensor = napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, node->tensor));
  NapkinTensorType want = { 0 };

  for (guint a = 0; tensor->axes[a] && a < NAPKIN_MAX_RANK; a++)
    want.axes[want.n_axes++] = napkin_diagram_find_axis (d, tensor->axes[a]);
  if (want.n_axes != in->n_axes || !type_axes_subset (&want, in))
    {
      g_autoptr(GString) got = g_string_new (NULL);
      g_autofree char *want_axes = g_strjoinv (",", tensor->axes);

      describe_type (checker, in, got);
      report_node (checker, n,
              _("the output “%s” expects tensor %s with axes [%s], but its wire carries %s"),
              node->id, tensor->name, want_axes, got->str);
    }
}

/* A contraction: one element type, output axes from its inputs, sums over shared axes. */
static void
check_contract_node (Checker                 *checker,
                     guint                    n,
                     const NapkinTensorType **in,
                     const NapkinTensorType  *out)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);
  NapkinTensorType all = *in[0];

  if (in[0]->dtype != in[1]->dtype)
    report_node (checker, n,
            _("the contraction “%s” multiplies %s by %s: cast one input so both have one element type"),
            node->id, napkin_dtype_to_string (in[0]->dtype), napkin_dtype_to_string (in[1]->dtype));
  for (guint i = 0; i < in[1]->n_axes; i++)
    if (!napkin_tensor_type_has_axis (&all, in[1]->axes[i]) && all.n_axes < NAPKIN_MAX_RANK)
      all.axes[all.n_axes++] = in[1]->axes[i];
  for (guint i = 0; i < out->n_axes; i++)
    if (!napkin_tensor_type_has_axis (&all, out->axes[i]))
      report_node (checker, n,
              _("the contraction “%s” outputs axis %s, which neither input carries"),
              node->id, axis_name (d, out->axes[i]));
  for (guint i = 0; i < all.n_axes; i++)
    {
      guint axis = all.axes[i];

      if (napkin_tensor_type_has_axis (out, axis))
        continue;
      if (!napkin_tensor_type_has_axis (in[0], axis) || !napkin_tensor_type_has_axis (in[1], axis))
        report_node (checker, n,
                _("the contraction “%s” sums over axis %s, but only its %s input carries it; "
                "a contraction sums over axes both inputs share (use a reduce first)"),
                node->id, axis_name (d, axis), napkin_tensor_type_has_axis (in[0], axis) ? "first" : "second");
    }
}

/* A map only broadcasts, and combines inputs of one element type. */
static void
check_map_node (Checker                 *checker,
                guint                    n,
                const NapkinTensorType **in,
                const NapkinTensorType  *out)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);
  guint n_inputs = napkin_op_n_inputs (node);

  if (node->fn == NAPKIN_FN_CAST && !node->has_dtype)
    report_node (checker, n, _("the cast “%s” needs a target element type (dtype)"), node->id);
  for (guint p = 0; p < n_inputs; p++)
    if (!type_axes_subset (in[p], out))
      report_node (checker, n,
              _("the %s input of the map “%s” carries axes its output (%s) lacks; a map only broadcasts"),
              p == 0 ? "first" : "second", node->id, node->out ? "as listed" : "as inferred");
  if (node->out != NULL)
    for (guint i = 0; i < out->n_axes; i++)
      {
        gboolean found = FALSE;

        for (guint p = 0; p < n_inputs; p++)
          found |= napkin_tensor_type_has_axis (in[p], out->axes[i]);
        if (!found)
          report_node (checker, n,
                  _("the map “%s” outputs axis %s, which no input carries"), node->id, axis_name (d, out->axes[i]));
      }
  if (n_inputs == 2 && in[0]->dtype != in[1]->dtype)
    report_node (checker, n,
            _("the map “%s” combines %s with %s: cast one input so both have one element type"),
            node->id, napkin_dtype_to_string (in[0]->dtype), napkin_dtype_to_string (in[1]->dtype));
  if (node->alpha_expr != NULL)
    {
      g_autoptr(GError) error = NULL;
      double value;

      /* a factor that follows the axes' sizes must name axes the diagram has */
      if (!napkin_diagram_eval_expr (d, node->alpha_expr, &value, &error))
        {
          g_autofree char *path = g_strdup_printf ("nodes[%u].alpha", n);

          report (checker, NAPKIN_ITEM_NODE, n, path, _("the factor of the map “%s”: %s"), node->id, error->message);
        }
    }
}

/* A mask: a mask tensor within the scores' axes, or key and row axes the scores carry. */
static void
check_mask_node (Checker                 *checker,
                 guint                    n,
                 const NapkinTensorType **in)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);

  if (node->mask == NAPKIN_MASK_TENSOR)
    {
      if (napkin_op_n_inputs (node) == 2 && !type_axes_subset (in[1], in[0]))
        report_node (checker, n,
                _("the mask “%s” reads a mask tensor with an axis the scores lack; its axes must be "
                "a subset of its first input's (it is broadcast over the rest)"), node->id);
    }
  else
    {
      int axis = napkin_diagram_find_axis (d, node->axis);
      int rows = napkin_diagram_find_axis (d, node->rows);

      if (axis < 0 || !napkin_tensor_type_has_axis (in[0], axis)
          || rows < 0 || !napkin_tensor_type_has_axis (in[0], rows))
        {
          g_autoptr(GString) got = g_string_new (NULL);

          describe_type (checker, in[0], got);
          report_node (checker, n, _("the mask “%s” keeps keys along axis (%s) per row of axis rows (%s), "
                       "but its input is %s"), node->id, node->axis ? node->axis : "none",
                       node->rows ? node->rows : "none", got->str);
        }
      else if (axis == rows)
        report_node (checker, n, _("the mask “%s” has rows = axis = %s: rows names the query axis, "
                     "axis the key axis"), node->id, node->axis);
      if (node->mask == NAPKIN_MASK_WINDOW && (node->left < -1 || node->right < -1))
        report_node (checker, n, "the mask “%s” has a negative window side (left %" G_GINT64_FORMAT
                     ", right %" G_GINT64_FORMAT "); -1 means unbounded", node->id, node->left, node->right);
    }
}

static void
check_node (Checker *checker,
            guint    n)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinNode *node = napkin_diagram_node (d, n);
  const NapkinTensorType *in[2] = { NULL, NULL };
  const NapkinTensorType *out;
  const char *kind = napkin_describe_kind (node->kind);

  if (!node_inputs (checker, n, in))
    return;

  out = napkin_diagram_node_type (d, n);

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
      break;

    case NAPKIN_OP_OUTPUT:
      check_output_node (checker, n, in[0]);
      break;

    case NAPKIN_OP_CONTRACT:
      check_contract_node (checker, n, in, out);
      break;

    case NAPKIN_OP_MAP:
      check_map_node (checker, n, in, out);
      break;

    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      {
        int axis = napkin_diagram_find_axis (d, node->axis);

        if (axis < 0 || !napkin_tensor_type_has_axis (in[0], axis))
          {
            g_autoptr(GString) got = g_string_new (NULL);

            describe_type (checker, in[0], got);
            report_node (checker, n, _("the %s “%s” works over axis %s, but its input is %s"),
                    kind, node->id, node->axis, got->str);
          }
        break;
      }

    case NAPKIN_OP_MASK:
      check_mask_node (checker, n, in);
      break;

    case NAPKIN_OP_REARRANGE:
      {
        gint64 a = 0, b = 0;

        if (napkin_diagram_type_elements (d, in[0], &a) && napkin_diagram_type_elements (d, out, &b) && a != b)
          report_node (checker, n,
                  "the rearrangement “%s” turns %" G_GINT64_FORMAT " elements into %" G_GINT64_FORMAT
                  ": merged or split axes must keep the product of sizes", node->id, a, b);
        break;
      }

    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  if (out->valid)
    {
      NapkinFlops flops;
      gint64 elems;

      if (!napkin_diagram_type_elements (d, out, &elems) || !napkin_diagram_node_flops (d, n, &flops))
        report_node (checker, n,
                _("the %s “%s” is too large: its size overflows 64 bits"), kind, node->id);
    }
  else if (node->kind != NAPKIN_OP_INPUT)
    report_node (checker, n, _("Napkin cannot work out the tensor the %s “%s” produces"), kind, node->id);
}

static gboolean
inputs_reached (NapkinDiagram  *d,
                guint           n,
                const gboolean *reached)
{
  const NapkinNode *node = napkin_diagram_node (d, n);

  for (guint p = 0; p < napkin_op_n_inputs (node); p++)
    {
      int src = napkin_diagram_input_source (d, n, p);

      if (src >= 0 && !reached[src])
        return FALSE;
    }
  return TRUE;
}

static void
check_nodes (Checker *checker)
{
  NapkinDiagram *d = checker->diagram;
  const guint *topo = napkin_diagram_topo_order (d);
  guint n_nodes = napkin_diagram_n_nodes (d);

  if (topo == NULL)
    {
      /* Name one operation on the cycle: one that is not in the acyclic prefix.
       * Reached operations pass it on to their consumers: linear time, where
       * sweeping until nothing changes took minutes on a long chain listed backwards. */
      g_autofree gboolean *reached = g_new0 (gboolean, n_nodes + 1);
      GQueue queue = G_QUEUE_INIT;

      for (guint n = 0; n < n_nodes; n++)
        if (inputs_reached (d, n, reached))
          {
            reached[n] = TRUE;
            g_queue_push_tail (&queue, GUINT_TO_POINTER (n));
          }
      while (!g_queue_is_empty (&queue))
        {
          guint n = GPOINTER_TO_UINT (g_queue_pop_head (&queue));
          guint n_consumers;
          const guint *consumers = napkin_diagram_consumers (d, n, &n_consumers);

          for (guint c = 0; c < n_consumers; c++)
            if (!reached[consumers[c]] && inputs_reached (d, consumers[c], reached))
              {
                reached[consumers[c]] = TRUE;
                g_queue_push_tail (&queue, GUINT_TO_POINTER (consumers[c]));
              }
        }
      for (guint n = 0; n < n_nodes; n++)
        if (!reached[n])
          {
            g_autofree char *path = node_path (n);

            report_node (checker, n,
                    _("the %s “%s” is part of a cycle: a diagram flows one way"),
                    napkin_describe_kind (napkin_diagram_node (d, n)->kind), napkin_diagram_node (d, n)->id);
            return;
          }
      return;
    }

  for (guint i = 0; i < n_nodes; i++)
    check_node (checker, topo[i]);
}

/* ---- regions -------------------------------------------------------------------------- */

typedef struct
{
  GHashTable *members;   /* node index set */
} RegionInfo;

static gboolean
region_member (GHashTable *members,
               int         node)
{
  return node >= 0 && g_hash_table_contains (members, GINT_TO_POINTER (node + 1));
}

/* Does node n finish a reduction over `axis`? (Its output no longer needs more chunks.) */
static gboolean
reduces_over (NapkinDiagram *d,
              guint          n,
              guint          axis)
{
  const NapkinNode *node = napkin_diagram_node (d, n);
  int src = napkin_diagram_input_source (d, n, 0);

  switch (node->kind)
    {
    case NAPKIN_OP_CONTRACT:
      return napkin_diagram_node_uses_axis (d, n, axis) && !napkin_tensor_type_has_axis (napkin_diagram_node_type (d, n), axis);
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
      return src >= 0 && napkin_diagram_find_axis (d, node->axis) == (int) axis;
    default:
      return FALSE;
    }
}

/* A narrowing cast of the softmax's probabilities (HF attention's `.to(q.dtype)`): a type
 * on the edge, which the plan folds into the softmax (docs/plan.md, "The pipeline"), so
 * the online softmax passes through it to the contraction after it. */
static gboolean
linear_unary (NapkinDiagram *d,
              guint          n)
{
  const NapkinNode *node = napkin_diagram_node (d, n);
  int src = napkin_diagram_input_source (d, n, 0);
  const NapkinTensorType *from = src >= 0 ? napkin_diagram_node_type (d, (guint) src) : NULL;

  return node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_CAST && node->has_dtype && from != NULL && from->valid
         && napkin_dtype_narrows (from->dtype, node->dtype);
}

/* Whether every consumer of softmax (or of a linear map after it) `n` is, through linear
 * maps in the region, a contraction over the axis: the online softmax. */
static gboolean
online_consumers (NapkinDiagram *d,
                  GHashTable    *members,
                  guint          n,
                  guint          axis,
                  guint          depth)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, n, &n_consumers);
  gboolean ok = n_consumers > 0 && depth < 8;

  for (guint c = 0; c < n_consumers && ok; c++)
    {
      const NapkinNode *consumer = napkin_diagram_node (d, consumers[c]);

      if (!region_member (members, consumers[c]))
        ok = FALSE;
      else if (linear_unary (d, consumers[c]))
        ok = online_consumers (d, members, consumers[c], axis, depth + 1);
      else
        ok = consumer->kind == NAPKIN_OP_CONTRACT && reduces_over (d, consumers[c], axis);
    }
  return ok;
}

/* `ordered` holds the region's operations in topological order; `after` is scratch
 * space of one flag per operation, cleared here for the region's operations. */
static void
check_stream (Checker    *checker,
              guint       r,
              guint       axis,
              GHashTable *members,
              GArray     *ordered,
              gboolean   *after)
{
  NapkinDiagram *d = checker->diagram;
  const char *x = axis_name (d, axis);
  const char *rname = napkin_diagram_region (d, r)->name;
  g_autofree char *path = g_strdup_printf ("regions[%u].marks.%s", r, x);
  /* the region's linear maps of softmax probabilities */
  g_autoptr(GHashTable) softmax_like = g_hash_table_new (NULL, NULL);

  /* after[n]: n's result depends on a reduction over x that is complete only at
   * the end of the stream. Using such a value beside x itself needs the whole axis,
   * except for softmax feeding a contraction over x: the online-softmax rescaling. */
  for (guint i = 0; i < ordered->len; i++)
    after[g_array_index (ordered, guint, i)] = FALSE;

  for (guint i = 0; i < ordered->len; i++)
    {
      guint n = g_array_index (ordered, guint, i);
      const NapkinNode *node = napkin_diagram_node (d, n);
      gboolean uses_x = napkin_diagram_node_uses_axis (d, n, axis);

      if (node->kind == NAPKIN_OP_NORMALIZE && reduces_over (d, n, axis))
        {
          report (checker, NAPKIN_ITEM_REGION, r, path,
                  _("in region “%s”, operation “%s” (%s over %s) cannot stream over %s: it needs the "
                  "statistics of the whole axis before it writes any element; mark %s whole or parallel"),
                  rname, node->id, napkin_norm_to_string (node->norm), x, x, x);
          return;
        }

      if (node->kind == NAPKIN_OP_SOFTMAX && reduces_over (d, n, axis))
        {
          if (!online_consumers (d, members, n, axis, 0))
            {
              report (checker, NAPKIN_ITEM_REGION, r, path,
                      _("in region “%s”, operation “%s” (softmax over %s) cannot stream over %s: softmax "
                      "streams only when a contraction over %s in the same region consumes it (online softmax)"),
                      rname, node->id, x, x, x);
              return;
            }
        }

      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        {
          int src = napkin_diagram_input_source (d, n, p);
          gboolean online, probabilities;

          if (src < 0 || !region_member (members, src))
            continue;
          /* the softmax's probabilities, maybe through linear maps, into the contraction */
          probabilities = napkin_diagram_node (d, src)->kind == NAPKIN_OP_SOFTMAX
                          || g_hash_table_contains (softmax_like, GINT_TO_POINTER (src + 1));
          if (linear_unary (d, n) && probabilities)
            {
              g_hash_table_add (softmax_like, GINT_TO_POINTER (n + 1));
              continue;
            }
          online = probabilities && node->kind == NAPKIN_OP_CONTRACT && reduces_over (d, n, axis);
          if ((after[src] || (reduces_over (d, src, axis) && !online)) && uses_x && !online)
            {
              report (checker, NAPKIN_ITEM_REGION, r, path,
                      _("in region “%s”, operation “%s” (%s) cannot stream over %s: it combines the result "
                      "of a reduction over %s with %s itself, which needs the whole axis"),
                      rname, node->id, napkin_op_kind_to_string (node->kind), x, x, x);
              return;
            }
          if (after[src] || reduces_over (d, src, axis))
            after[n] = TRUE;
        }
    }
}

static int
compare_topo (gconstpointer a,
              gconstpointer b,
              gpointer      data)
{
  const guint *topo_pos = data;
  guint x = topo_pos[*(const guint *) a], y = topo_pos[*(const guint *) b];

  return (x > y) - (x < y);
}

/* Inputs and outputs live in device memory, outside every region. */
static void
check_region_io (Checker    *checker,
                 guint       r,
                 const char *path)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, r);

  for (guint i = 0; i < region->nodes->len; i++)
    {
      const char *id = g_ptr_array_index (region->nodes, i);
      const NapkinNode *node = napkin_diagram_node (d, napkin_diagram_find_node (d, id));

      if (node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT)
        {
          g_autofree char *p = g_strdup_printf ("%s.nodes[%u]", path, i);

          report (checker, NAPKIN_ITEM_REGION, r, p,
                  _("region “%s” holds “%s”, an %s: inputs and outputs live in device memory, "
                  "outside every region"), region->name, id, napkin_op_kind_to_string (node->kind));
        }
    }
}

/* The flood's step: a member not seen yet joins the queue. */
static void
flood_visit (GHashTable *members,
             GHashTable *seen,
             GQueue     *queue,
             int         m)
{
  if (region_member (members, m) && !g_hash_table_contains (seen, GINT_TO_POINTER (m + 1)))
    {
      g_hash_table_add (seen, GINT_TO_POINTER (m + 1));
      g_queue_push_tail (queue, GINT_TO_POINTER (m));
    }
}

/* Connected: flood over wires between members, ignoring direction. */
static void
check_region_connected (Checker    *checker,
                        guint       r,
                        const char *path,
                        GHashTable *members)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, r);
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);
  GQueue queue = G_QUEUE_INIT;

  g_queue_push_tail (&queue, GINT_TO_POINTER (napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, 0))));
  g_hash_table_add (seen, GINT_TO_POINTER (1 + GPOINTER_TO_INT (g_queue_peek_head (&queue))));
  while (!g_queue_is_empty (&queue))
    {
      int n = GPOINTER_TO_INT (g_queue_pop_head (&queue));
      const NapkinNode *node = napkin_diagram_node (d, n);
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (d, n, &n_consumers);
      int neighbours[2];
      guint n_neighbours = 0;

      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        neighbours[n_neighbours++] = napkin_diagram_input_source (d, n, p);
      for (guint c = 0; c < n_consumers; c++)
        flood_visit (members, seen, &queue, consumers[c]);
      for (guint k = 0; k < n_neighbours; k++)
        flood_visit (members, seen, &queue, neighbours[k]);
    }
  if (g_hash_table_size (seen) != g_hash_table_size (members))
    {
      for (guint i = 0; i < region->nodes->len; i++)
        {
          int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));

          if (!g_hash_table_contains (seen, GINT_TO_POINTER (n + 1)))
            {
              report (checker, NAPKIN_ITEM_REGION, r, path,
                      _("region “%s” is not connected: “%s” has no wire to “%s” through the region"),
                      region->name, (const char *) g_ptr_array_index (region->nodes, i),
                      (const char *) g_ptr_array_index (region->nodes, 0));
              break;
            }
        }
    }
}

/* Each mark: an axis the region uses, a tile within it, a stream the operations allow.
 * topo_pos is NULL where the diagram has a cycle. */
static void
check_region_marks (Checker     *checker,
                    guint        r,
                    const char  *path,
                    GHashTable  *members,
                    const guint *topo_pos,
                    gboolean    *after)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, r);
  gboolean acyclic = topo_pos != NULL;
  g_autoptr(GArray) ordered = NULL;

  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);
      int axis = napkin_diagram_find_axis (d, mark->axis);
      g_autofree char *mp = g_strdup_printf ("%s.marks.%s", path, mark->axis);
      gboolean used = FALSE;
      gint64 size;

      if (axis < 0)
        continue;
      size = napkin_diagram_axis_size (d, axis);
      used = acyclic && napkin_region_uses_axis (d, region, axis);
      if (acyclic && !used)
        {
          report (checker, NAPKIN_ITEM_REGION, r, mp,
                  _("no operation in region “%s” uses axis %s"), region->name, mark->axis);
          continue;
        }
      if (mark->kind == NAPKIN_MARK_WHOLE)
        continue;
      if (mark->tile <= 0)
        report (checker, NAPKIN_ITEM_REGION, r, mp,
                "in region “%s”, the tile size of axis %s must be positive, not %" G_GINT64_FORMAT,
                region->name, mark->axis, mark->tile);
      else if (mark->tile > size)
        report (checker, NAPKIN_ITEM_REGION, r, mp,
                "in region “%s”, tile size %" G_GINT64_FORMAT " is larger than axis %s (%" G_GINT64_FORMAT ")",
                region->name, mark->tile, mark->axis, size);
      else if (mark->kind == NAPKIN_MARK_STREAM && acyclic)
        {
          if (ordered == NULL)
            {
              ordered = g_array_new (FALSE, FALSE, sizeof (guint));
              for (guint i = 0; i < region->nodes->len; i++)
                {
                  guint n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));
                  g_array_append_val (ordered, n);
                }
              g_array_sort_with_data (ordered, compare_topo, (gpointer) topo_pos);
            }
          check_stream (checker, r, axis, members, ordered, after);
        }
    }
}

/* One region on its own; its members go into info, for the nesting check. */
static void
check_region (Checker     *checker,
              guint        r,
              RegionInfo  *info,
              const guint *topo_pos,
              gboolean    *after)
{
  NapkinDiagram *d = checker->diagram;
  const NapkinRegion *region = napkin_diagram_region (d, r);
  g_autofree char *path = g_strdup_printf ("regions[%u]", r);
  GHashTable *members = g_hash_table_new (NULL, NULL);

  info->members = members;
  for (guint i = 0; i < region->nodes->len; i++)
    g_hash_table_add (members, GINT_TO_POINTER (napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i)) + 1));

  if (region->level == NAPKIN_LEVEL_HBM)
    {
      report (checker, NAPKIN_ITEM_REGION, r, path,
              _("region “%s” is at hbm, where the whole diagram already lives; choose l2, smem or registers"),
              region->name);
      return;
    }
  if (region->nodes->len == 0)
    {
      report (checker, NAPKIN_ITEM_REGION, r, path, _("region “%s” holds no operation"), region->name);
      return;
    }
  check_region_io (checker, r, path);
  check_region_connected (checker, r, path, members);
  check_region_marks (checker, r, path, members, topo_pos, after);
}

/* The pairs of regions that share an operation, as (a << 32 | b) with a < b. Only
 * those can break the nesting, so pairs come from the regions of each operation
 * rather than from all pairs. */
static GArray *
sharing_pairs (NapkinDiagram    *d,
               const RegionInfo *infos)
{
  g_autoptr(GHashTable) pairs = g_hash_table_new_full (g_int64_hash, g_int64_equal, g_free, NULL);
  GArray *keys = g_array_new (FALSE, FALSE, sizeof (gint64));
  g_autofree GArray **by_node = g_new0 (GArray *, napkin_diagram_n_nodes (d) + 1);

  for (guint r = 0; r < napkin_diagram_n_regions (d); r++)
    {
      GHashTableIter iter;
      gpointer key;

      g_hash_table_iter_init (&iter, infos[r].members);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        {
          int n = GPOINTER_TO_INT (key) - 1;

          if (n < 0)
            continue;
          if (by_node[n] == NULL)
            by_node[n] = g_array_new (FALSE, FALSE, sizeof (guint));
          for (guint i = 0; i < by_node[n]->len; i++)
            {
              gint64 pair = ((gint64) g_array_index (by_node[n], guint, i) << 32) | r;

              if (!g_hash_table_contains (pairs, &pair))
                {
                  g_array_append_val (keys, pair);
                  g_hash_table_add (pairs, g_memdup2 (&pair, sizeof pair));
                }
            }
          g_array_append_val (by_node[n], r);
        }
    }
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    g_clear_pointer (&by_node[n], g_array_unref);
  return keys;
}

/* Nesting: two regions are disjoint or one lies inside the other at a faster level. */
static void
check_nesting (Checker          *checker,
               const RegionInfo *infos)
{
  NapkinDiagram *d = checker->diagram;
  g_autoptr(GArray) keys = sharing_pairs (d, infos);

  for (guint p = 0; p < keys->len; p++)
    {
      gint64 pair = g_array_index (keys, gint64, p);
      guint a = pair >> 32, b = pair & 0xffffffff;
      const NapkinRegion *ra = napkin_diagram_region (d, a);
      const NapkinRegion *rb = napkin_diagram_region (d, b);
      guint common = 0;
      guint na = g_hash_table_size (infos[a].members);
      guint nb = g_hash_table_size (infos[b].members);
      GHashTableIter iter;
      gpointer key;
      g_autofree char *path = g_strdup_printf ("regions[%u]", b);

      g_hash_table_iter_init (&iter, infos[a].members);
      while (g_hash_table_iter_next (&iter, &key, NULL))
        common += g_hash_table_contains (infos[b].members, key);

      if (common != na && common != nb)
        report (checker, NAPKIN_ITEM_REGION, b, path,
                _("regions “%s” and “%s” overlap without one containing the other"),
                ra->name, rb->name);
      else if (na == nb && ra->level == rb->level)
        report (checker, NAPKIN_ITEM_REGION, b, path,
                _("regions “%s” and “%s” hold the same operations at the same level"), ra->name, rb->name);
      else
        {
          /* The one with more operations (or the slower level, when equal) is outside. */
          gboolean a_outer = na > nb || (na == nb && ra->level < rb->level);
          const NapkinRegion *outer = a_outer ? ra : rb;
          const NapkinRegion *inner = a_outer ? rb : ra;

          if (inner->level <= outer->level)
            report (checker, NAPKIN_ITEM_REGION, b, path,
                    _("region “%s” (%s) lies inside “%s” (%s): an inner region must be at a faster level"),
                    inner->name, napkin_level_to_string (inner->level), outer->name,
                    napkin_level_to_string (outer->level));
        }
    }
}

static void
check_regions (Checker *checker)
{
  NapkinDiagram *d = checker->diagram;
  guint n_regions = napkin_diagram_n_regions (d);
  g_autofree RegionInfo *infos = g_new0 (RegionInfo, n_regions + 1);
  const guint *topo = napkin_diagram_topo_order (d);
  gboolean acyclic = topo != NULL;
  guint n_nodes = napkin_diagram_n_nodes (d);
  g_autofree guint *topo_pos = g_new0 (guint, n_nodes + 1);
  g_autofree gboolean *after = g_new0 (gboolean, n_nodes + 1);

  for (guint i = 0; acyclic && i < n_nodes; i++)
    topo_pos[topo[i]] = i;

  for (guint r = 0; r < n_regions; r++)
    check_region (checker, r, &infos[r], acyclic ? topo_pos : NULL, after);
  check_nesting (checker, infos);

  for (guint r = 0; r < n_regions; r++)
    g_clear_pointer (&infos[r].members, g_hash_table_unref);
}

GPtrArray *
napkin_diagram_check (NapkinDiagram *self)
{
  Checker checker = { self, g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_problem_free), NULL };

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  check_tensors (&checker);
  check_nodes (&checker);
  check_regions (&checker);
  return checker.problems;
}

gboolean
napkin_diagram_validate (NapkinDiagram  *self,
                         GError        **error)
{
  g_autoptr(GPtrArray) problems = NULL;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);

  if (napkin_diagram_n_nodes (self) == 0)
    {
      g_autofree char *message = napkin_error_with_path (_("The diagram has no operations"), "nodes");

      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID, message);
      return FALSE;
    }

  problems = napkin_diagram_check (self);
  if (problems->len > 0)
    {
      const NapkinProblem *first = g_ptr_array_index (problems, 0);
      g_autofree char *message = napkin_error_with_path (first->message, first->path);

      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID, message);
      return FALSE;
    }

  return TRUE;
}

/* Marks node n and, through the wires, everything it feeds. */
static void
mark_downstream (NapkinDiagram *d,
                 guint          n,
                 gboolean      *out)
{
  GQueue queue = G_QUEUE_INIT;

  if (out[n])
    return;
  out[n] = TRUE;
  g_queue_push_tail (&queue, GUINT_TO_POINTER (n));
  while (!g_queue_is_empty (&queue))
    {
      guint m = GPOINTER_TO_UINT (g_queue_pop_head (&queue));
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (d, m, &n_consumers);

      for (guint c = 0; c < n_consumers; c++)
        if (!out[consumers[c]])
          {
            out[consumers[c]] = TRUE;
            g_queue_push_tail (&queue, GUINT_TO_POINTER (consumers[c]));
          }
    }
}

NapkinDiagram *
napkin_diagram_copy_valid_part (NapkinDiagram   *self,
                                char          ***left_out_nodes,
                                char          ***left_out_regions)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinHistory) history = NULL;
  g_autoptr(GStrvBuilder) nodes = g_strv_builder_new ();
  g_autoptr(GStrvBuilder) regions = g_strv_builder_new ();

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  copy = napkin_diagram_copy (self);
  history = napkin_history_new (copy);
  /* each round removes something, and removing can only settle problems (a region that
   * lost an operation may be fine now, or newly disconnected: one more round) */
  for (guint round = 0; round <= napkin_diagram_n_nodes (self) + napkin_diagram_n_regions (self); round++)
    {
      g_autoptr(GPtrArray) problems = napkin_diagram_check (copy);
      guint n_nodes = napkin_diagram_n_nodes (copy);
      g_autofree gboolean *out = g_new0 (gboolean, n_nodes + 1);
      g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
      g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
      gboolean node_problems = FALSE;

      if (problems->len == 0)
        break;
      if (napkin_diagram_topo_order (copy) == NULL)
        {
          /* a cycle: nothing downstream of it can be priced */
          for (guint i = 0; i < problems->len; i++)
            {
              const NapkinProblem *p = g_ptr_array_index (problems, i);

              if (p->kind == NAPKIN_ITEM_NODE)
                mark_downstream (copy, p->index, out);
            }
        }
      /* operations first: a region may be fine once its incomplete operations are out */
      for (guint i = 0; i < problems->len; i++)
        {
          const NapkinProblem *p = g_ptr_array_index (problems, i);

          node_problems |= p->kind != NAPKIN_ITEM_REGION;
        }
      for (guint i = 0; i < problems->len; i++)
        {
          const NapkinProblem *p = g_ptr_array_index (problems, i);

          if (p->kind == NAPKIN_ITEM_NODE && p->index < n_nodes)
            mark_downstream (copy, p->index, out);
          else if (p->kind == NAPKIN_ITEM_REGION && !node_problems && p->index < napkin_diagram_n_regions (copy))
            {
              const char *name = napkin_diagram_region (copy, p->index)->name;

              if (!g_ptr_array_find_with_equal_func (names, name, g_str_equal, NULL))
                g_ptr_array_add (names, g_strdup (name));
            }
          else if (p->kind == NAPKIN_ITEM_TENSOR && p->index < napkin_diagram_n_tensors (copy))
            {
              const char *tensor = napkin_diagram_tensor (copy, p->index)->name;

              for (guint n = 0; n < n_nodes; n++)
                if (g_strcmp0 (napkin_diagram_node (copy, n)->tensor, tensor) == 0)
                  mark_downstream (copy, n, out);
            }
        }
      for (guint n = 0; n < n_nodes; n++)
        if (out[n])
          g_ptr_array_add (ids, g_strdup (napkin_diagram_node (copy, n)->id));
      if (ids->len == 0 && names->len == 0)
        return NULL;   /* a problem this cannot remove */
      for (guint i = 0; i < names->len; i++)
        {
          g_strv_builder_add (regions, g_ptr_array_index (names, i));
          napkin_edit_remove_region (history, g_ptr_array_index (names, i), NULL);
        }
      for (guint i = 0; i < ids->len; i++)
        {
          g_strv_builder_add (nodes, g_ptr_array_index (ids, i));
          napkin_edit_remove_node (history, g_ptr_array_index (ids, i), NULL);
        }
    }
  if (left_out_nodes != NULL)
    *left_out_nodes = g_strv_builder_end (nodes);
  if (left_out_regions != NULL)
    *left_out_regions = g_strv_builder_end (regions);
  return g_steal_pointer (&copy);
}
