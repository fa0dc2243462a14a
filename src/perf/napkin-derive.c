/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-derive.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-validate.h"

/* Whole-diagram derivation (docs/plan.md, "Deriving a diagram"). Candidate kernels are
 * chains: an operation and the operations that alone consume its result, as the plan's
 * recognisers fuse them (a contraction and its epilogue maps; Q·Kᵀ, maps, mask, softmax,
 * ·V; maps, a row operation, maps; maps). Each candidate is priced on its own small
 * diagram (its operands read from device memory, its results written there) at a few
 * tiles; the partition is the cheapest cover of the operations by candidates, found by
 * a memoised search over the topological order. A kernel's time depends only on its own
 * operations, so the sum is the diagram's time. */

#define MAX_CHAIN 8
/* A rows region takes more rows a block only where priced this much faster (rows_variants) */
#define ROWS_MORE_GAIN 0.01
#define MAX_STATES 200000
/* The operations a derivation takes: its search and its memo grow faster than the
 * diagram, and the derived diagram has at most NAPKIN_MAX_REGIONS kernels of up to
 * MAX_CHAIN operations (docs/security.md, "Tune"). */
#define MAX_DERIVE_OPERATIONS (MAX_CHAIN * NAPKIN_MAX_REGIONS)

typedef struct
{
  guint        head;
  guint        nodes[MAX_CHAIN];
  guint        n;
  const char  *kind;        /* static */
  json_object *region;      /* the best variant; NULL: the lone operation outside regions */
  double       cost;
} Cand;

typedef struct
{
  NapkinDiagram   *d;
  NapkinArch      *arch;
  NapkinAnalyzeOptions options;
  GHashTable      *node_json;    /* id → json_object (borrowed from root) */
  json_object     *root;
  guint            n_nodes;
  guint           *pos;          /* node → topo position */
  gboolean        *compute;
  double          *single;       /* node → cost alone, outside regions */
  GPtrArray       *by_head;      /* node → GPtrArray of Cand * */
  GHashTable      *memo;         /* covered set → Memo */
  guint            words;
  guint            evaluated;
  guint            candidates;
  gboolean         overflow;
  GHashTable      *rotary;       /* node + 1: the plan's rotary passes (no region proposed) */
  /* node + 1 → join + 1: the gated pairs the plan runs as one GEMM outside regions (their
   * operations are offered in regions, or as that GEMM, never alone outside: the plan
   * would fuse them there) */
  GHashTable      *gated;
} Derive;

typedef struct
{
  double cost;
  Cand  *choice;
} Memo;

void
napkin_derivation_free (NapkinDerivation *r)
{
  if (r == NULL)
    return;
  g_clear_object (&r->derived);
  g_clear_pointer (&r->kernels, g_ptr_array_unref);
  g_free (r);
}

static void
kernel_free (NapkinDeriveKernel *k)
{
  g_free (k->name);
  g_strfreev (k->nodes);
  g_free (k->tiles);
  g_strfreev (k->specs);
  g_strfreev (k->writes);
  g_free (k->why);
  g_free (k);
}

static void
cand_free (Cand *c)
{
  if (c->region)
    json_object_put (c->region);
  g_free (c);
}

static const char *
axis_name (NapkinDiagram *d,
           guint          a)
{
  return napkin_diagram_axis (d, a)->name;
}

static json_object *
type_axes (NapkinDiagram          *d,
           const NapkinTensorType *t)
{
  json_object *axes = json_object_new_array ();

  for (guint i = 0; i < t->n_axes; i++)
    json_object_array_add (axes, json_object_new_string (axis_name (d, t->axes[i])));
  return axes;
}

static gboolean
in_set (const guint *nodes,
        guint        n,
        guint        node)
{
  for (guint i = 0; i < n; i++)
    if (nodes[i] == node)
      return TRUE;
  return FALSE;
}

/* Is the value of `node` read by an operation outside the set (or by an output)? */
static gboolean
leaves_set (NapkinDiagram *d,
            const guint   *nodes,
            guint          n,
            guint          node)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, node, &n_consumers);

  if (n_consumers == 0)
    return TRUE;
  for (guint i = 0; i < n_consumers; i++)
    if (!in_set (nodes, n, consumers[i]))
      return TRUE;
  return FALSE;
}

static void
add_value_tensor (NapkinDiagram *d,
                  json_object   *tensors,
                  const char    *name,
                  guint          node)
{
  const NapkinTensorType *t = napkin_diagram_node_type (d, node);
  json_object *tensor = json_object_new_object ();

  json_object_object_add (tensor, "name", json_object_new_string (name));
  json_object_object_add (tensor, "axes", type_axes (d, t));
  json_object_object_add (tensor, "dtype", json_object_new_string (napkin_dtype_to_string (t->dtype)));
  /* an input's constant (the rotary's rotate_half matrix) stays what it is */
  if (napkin_diagram_node (d, node)->kind == NAPKIN_OP_INPUT)
    {
      int ti = napkin_diagram_find_tensor (d, napkin_diagram_node (d, node)->tensor);
      const NapkinTensor *drawn = ti >= 0 ? napkin_diagram_tensor (d, (guint) ti) : NULL;

      if (drawn != NULL && napkin_tensor_get_constant (drawn) != NULL)
        json_object_object_add (tensor, "constant", json_object_new_string (napkin_tensor_get_constant (drawn)));
    }
  json_object_array_add (tensors, tensor);
}

/* The set's own diagram: every value it reads from outside is an input in device memory,
 * every value read after it an output; `region` (taken) around all of it, or none. */
static NapkinDiagram *
subdiagram (Derive      *dv,
            const guint *nodes,
            guint        n,
            json_object *region)
{
  NapkinDiagram *d = dv->d;
  g_autoptr(json_object) root = json_object_new_object ();
  json_object *tensors = json_object_new_array (), *list = json_object_new_array ();
  json_object *wires = json_object_new_array (), *regions = json_object_new_array ();
  json_object *axes;
  g_autoptr(GHashTable) inputs = g_hash_table_new (g_direct_hash, g_direct_equal);

  json_object_object_add (root, "format", json_object_new_string ("napkin"));
  json_object_object_add (root, "version", json_object_new_int (NAPKIN_FORMAT_VERSION));
  json_object_object_get_ex (dv->root, "axes", &axes);
  json_object_object_add (root, "axes", json_object_get (axes));
  for (guint i = 0; i < n; i++)
    {
      const NapkinNode *node = napkin_diagram_node (d, nodes[i]);
      json_object *copy = NULL;

      json_object_deep_copy (g_hash_table_lookup (dv->node_json, node->id), &copy, NULL);
      json_object_array_add (list, copy);
      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        {
          int src = napkin_diagram_input_source (d, nodes[i], p);
          json_object *w = json_object_new_object ();
          g_autofree char *in_id = NULL;

          if (src < 0)
            continue;
          in_id = g_strdup_printf ("in_%s", napkin_diagram_node (d, src)->id);
          if (!in_set (nodes, n, src) && !g_hash_table_contains (inputs, GINT_TO_POINTER (src + 1)))
            {
              json_object *in = json_object_new_object ();
              g_autofree char *tname = g_strdup_printf ("v_%s", napkin_diagram_node (d, src)->id);

              g_hash_table_add (inputs, GINT_TO_POINTER (src + 1));
              add_value_tensor (d, tensors, tname, src);
              json_object_object_add (in, "id", json_object_new_string (in_id));
              json_object_object_add (in, "kind", json_object_new_string ("input"));
              json_object_object_add (in, "tensor", json_object_new_string (tname));
              json_object_array_add (list, in);
            }
          json_object_object_add (w, "from", json_object_new_string (in_set (nodes, n, src)
                                                                      ? napkin_diagram_node (d, src)->id : in_id));
          json_object_object_add (w, "to", json_object_new_string (node->id));
          json_object_object_add (w, "port", json_object_new_int ((int) p));
          json_object_array_add (wires, w);
        }
      if (leaves_set (d, nodes, n, nodes[i]))
        {
          json_object *out = json_object_new_object (), *w = json_object_new_object ();
          g_autofree char *tname = g_strdup_printf ("r_%s", node->id);
          g_autofree char *out_id = g_strdup_printf ("out_%s", node->id);

          add_value_tensor (d, tensors, tname, nodes[i]);
          json_object_object_add (out, "id", json_object_new_string (out_id));
          json_object_object_add (out, "kind", json_object_new_string ("output"));
          json_object_object_add (out, "tensor", json_object_new_string (tname));
          json_object_array_add (list, out);
          json_object_object_add (w, "from", json_object_new_string (node->id));
          json_object_object_add (w, "to", json_object_new_string (out_id));
          json_object_object_add (w, "port", json_object_new_int (0));
          json_object_array_add (wires, w);
        }
    }
  json_object_object_add (root, "tensors", tensors);
  json_object_object_add (root, "nodes", list);
  json_object_object_add (root, "wires", wires);
  if (region != NULL)
    json_object_array_add (regions, region);
  json_object_object_add (root, "regions", regions);
  {
    g_autoptr(GError) error = NULL;
    NapkinDiagram *sub = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE,
                                                        &error);

    if (sub == NULL && g_getenv ("NAPKIN_DERIVE_DEBUG"))
      g_printerr ("  sub-diagram: %s\n", error->message);
    return sub;
  }
}

/* The set's time alone (G_MAXDOUBLE: infeasible, or a region the plan leaves generic).
 * Without a region and with `one` set, only if the plan runs the whole set as one
 * kernel (it fuses the maps after an operation outside regions itself). */
static double
price_as (Derive      *dv,
          const guint *nodes,
          guint        n,
          json_object *region,
          gboolean     one)
{
  g_autoptr(NapkinDiagram) sub = subdiagram (dv, nodes, n, region);
  g_autoptr(NapkinAnalysis) a = NULL;

  if (sub == NULL)
    return G_MAXDOUBLE;
  {
    g_autoptr(GError) error = NULL;

    a = napkin_analyze (sub, dv->arch, &dv->options, &error);
    if (g_getenv ("NAPKIN_DERIVE_DEBUG") && a == NULL)
      g_printerr ("  analysis: %s\n", error->message);
    if (g_getenv ("NAPKIN_DERIVE_DEBUG") && a != NULL && a->errors->len)
      g_printerr ("  error: %s\n", (const char *) g_ptr_array_index (a->errors, 0));
  }
  dv->evaluated++;
  if (g_getenv ("NAPKIN_DERIVE_DEBUG") && a != NULL && region != NULL)
    for (guint i = 0; i < a->kernels->len; i++)
      {
        const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, i);

        g_printerr ("  %s: %s %s%s\n", kc->name, kc->plan_kind ? kc->plan_kind : "-", kc->reason ? kc->reason : "",
                    a->errors->len ? (const char *) g_ptr_array_index (a->errors, 0) : "");
      }
  if (a == NULL || !a->feasible || (region != NULL && a->generic_kernels > 0))
    return G_MAXDOUBLE;
  if (one)
    {
      guint main = 0;

      for (guint i = 0; a->plan != NULL && i < a->plan->kernels->len; i++)
        {
          const NapkinPlanKernel *k = g_ptr_array_index (a->plan->kernels, i);

          if (!napkin_plan_kind_is_helper (k->kind))
            main += k->kind == NAPKIN_PLAN_GENERIC ? 2 : 1;
        }
      if (main != 1)
        return G_MAXDOUBLE;
    }
  /* the kernels' own prices: where they start in a run is the whole cover's (below) */
  return a->predicted_time_s - a->launch_run_s;
}

static double
price (Derive      *dv,
       const guint *nodes,
       guint        n,
       json_object *region)
{
  return price_as (dv, nodes, n, region, FALSE);
}

static void
set_mark (json_object *marks,
          const char  *axis,
          const char  *kind,
          gint64       tile)
{
  json_object *m;

  if (kind == NULL)
    {
      json_object_object_add (marks, axis, json_object_new_string ("whole"));
      return;
    }
  m = json_object_new_object ();
  json_object_object_add (m, kind, json_object_new_int64 (tile));
  json_object_object_add (marks, axis, m);
}

static json_object *
region_new (Derive      *dv,
            const Cand  *c,
            guint        stages,
            json_object **marks)
{
  json_object *r = json_object_new_object (), *list = json_object_new_array ();

  json_object_object_add (r, "name", json_object_new_string ("k"));
  json_object_object_add (r, "level", json_object_new_string ("smem"));
  for (guint i = 0; i < c->n; i++)
    json_object_array_add (list, json_object_new_string (napkin_diagram_node (dv->d, c->nodes[i])->id));
  json_object_object_add (r, "nodes", list);
  *marks = json_object_new_object ();
  json_object_object_add (r, "marks", *marks);
  if (stages > 1)
    json_object_object_add (r, "stages", json_object_new_int ((int) stages));
  return r;
}

/* A tile of `tile` elements over a group of axes that a product flattens into one,
 * innermost first: axes it covers whole, the first it cuts in groups (or streamed
 * chunks), the axes outside that one at a time (the plan's group_tile reads it back). */
static gboolean
distribute (NapkinDiagram *d,
            json_object   *marks,
            const guint   *axes,
            guint          n,
            gint64         tile,
            const char    *kind)
{
  gint64 left = tile;

  for (int i = (int) n - 1; i >= 0; i--)
    {
      gint64 size = napkin_diagram_axis_size (d, axes[i]);

      if (left == 1)
        set_mark (marks, axis_name (d, axes[i]), kind, 1);
      else if (size > left)
        {
          set_mark (marks, axis_name (d, axes[i]), kind, left);
          left = 1;
        }
      else if (left % size == 0 || i == 0)
        {
          set_mark (marks, axis_name (d, axes[i]), NULL, 0);
          left = left % size == 0 ? left / size : 1;
        }
      else
        return FALSE;
    }
  return TRUE;
}

/* Keeps the variant if it is the cheapest so far. */
static void
try_variant (Derive      *dv,
             Cand        *c,
             json_object *region)
{
  json_object *copy = NULL;
  double t;

  json_object_deep_copy (region, &copy, NULL);
  t = price (dv, c->nodes, c->n, copy);
  if (g_getenv ("NAPKIN_DERIVE_DEBUG"))
    g_printerr ("%s %u: %s → %g\n", c->kind, c->n, json_object_to_json_string (region), t);
  if (t < c->cost)
    {
      if (c->region)
        json_object_put (c->region);
      c->region = region;
      c->cost = t;
    }
  else
    json_object_put (region);
}

static void
gemm_variants (Derive *dv,
               Cand   *c)
{
  /* the plan's own block shapes (choose_tile, src/plan/napkin-plan-gemm.c) */
  static const gint64 shapes[][2] = { { 128, 256 }, { 128, 128 }, { 256, 128 }, { 64, 256 },
                                      { 64, 128 }, { 128, 64 }, { 64, 64 }, { 128, 192 }, { 64, 192 } };
  NapkinDiagram *d = dv->d;
  guint mm = c->nodes[0];
  int xs = napkin_diagram_input_source (d, mm, 0), ys = napkin_diagram_input_source (d, mm, 1);
  const NapkinTensorType *x, *y, *o = napkin_diagram_node_type (d, mm);
  guint mg[NAPKIN_MAX_RANK], ng[NAPKIN_MAX_RANK], kg[NAPKIN_MAX_RANK], bg[NAPKIN_MAX_RANK];
  guint nm = 0, nn = 0, nk = 0, nb = 0;

  if (xs < 0 || ys < 0)
    return;
  x = napkin_diagram_node_type (d, xs);
  y = napkin_diagram_node_type (d, ys);
  for (guint i = 0; i < o->n_axes; i++)
    {
      guint a = o->axes[i];
      gboolean ix = napkin_tensor_type_has_axis (x, a), iy = napkin_tensor_type_has_axis (y, a);

      if (ix && iy)
        bg[nb++] = a;
      else if (ix)
        mg[nm++] = a;
      else if (iy)
        ng[nn++] = a;
      else
        return;
    }
  for (guint i = 0; i < x->n_axes; i++)
    if (!napkin_tensor_type_has_axis (o, x->axes[i]))
      {
        if (!napkin_tensor_type_has_axis (y, x->axes[i]))
          return;
        kg[nk++] = x->axes[i];
      }
  if (nm == 0 || nn == 0 || nk == 0)
    return;
  for (guint s = 0; s < G_N_ELEMENTS (shapes); s++)
    for (guint stages = 4; stages >= 2; stages--)
      {
        json_object *marks;
        json_object *r = region_new (dv, c, stages, &marks);

        for (guint i = 0; i < nb; i++)
          set_mark (marks, axis_name (d, bg[i]), "parallel", 1);
        if (!distribute (d, marks, mg, nm, shapes[s][0], "parallel")
            || !distribute (d, marks, ng, nn, shapes[s][1], "parallel")
            || !distribute (d, marks, kg, nk, 64, "stream"))
          {
            json_object_put (r);
            continue;
          }
        try_variant (dv, c, r);
      }
}

static void
attention_variants (Derive *dv,
                    Cand   *c)
{
  NapkinDiagram *d = dv->d;
  guint qk = c->nodes[0], pv = c->nodes[c->n - 1], sm = c->nodes[c->n - 2];
  int qs = napkin_diagram_input_source (d, qk, 0), ks = napkin_diagram_input_source (d, qk, 1);
  int vs = napkin_diagram_input_source (d, pv, 1);
  const NapkinTensorType *q, *k, *v, *o = napkin_diagram_node_type (d, pv), *s = napkin_diagram_node_type (d, qk);
  int key = napkin_diagram_find_axis (d, napkin_diagram_node (d, sm)->axis), query;
  gint64 group = 1;

  if (qs < 0 || ks < 0 || vs < 0 || key < 0)
    return;
  q = napkin_diagram_node_type (d, qs);
  k = napkin_diagram_node_type (d, ks);
  v = napkin_diagram_node_type (d, vs);
  /* the query axis as the plan reads it; the others (the query heads of a GQA group)
   * whole, their rows stacked on the query tile, or a head a block where the plan's
   * rule says so */
  query = napkin_plan_attention_query (d, qk, sm, pv, &group);
  if (query < 0)
    return;
  /* 3 or 2 stages, keys by 128 first: keys by 128 in 3 is the Hopper kernel's best
   * measured (docs/perf-notes.md), and the model ties it with keys by 64 in 3 */
  for (gint64 rows = 128; rows >= 64; rows /= 2)
    for (guint variant = 4; variant-- > 0;)
      {
        const gint64 keys = variant & 1 ? 128 : 64;
        const guint stages = variant & 2 ? 3 : 2;
        const gboolean stack = napkin_plan_attention_stacks (group, napkin_diagram_axis_size (d, (guint) query),
                                                             napkin_diagram_axis_size (d, (guint) key), rows);
        json_object *marks;
        json_object *r;

        if (stack && rows % group != 0)
          continue;
        r = region_new (dv, c, stages, &marks);
        for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
          {
            gboolean in_q = napkin_tensor_type_has_axis (q, a), in_k = napkin_tensor_type_has_axis (k, a);
            gboolean in_v = napkin_tensor_type_has_axis (v, a), in_o = napkin_tensor_type_has_axis (o, a);
            gboolean in_s = napkin_tensor_type_has_axis (s, a);

            if (!in_q && !in_k && !in_v && !in_o && !in_s)
              continue;
            if ((int) a == key)
              set_mark (marks, axis_name (d, a), "stream", MIN (keys, napkin_diagram_axis_size (d, a)));
            else if ((int) a == query)
              set_mark (marks, axis_name (d, a), "parallel", stack ? rows / group : rows);
            else if (in_q && in_k && in_o && in_s)
              set_mark (marks, axis_name (d, a), "parallel", 1);    /* batch, kv heads */
            else if (!stack && in_q && in_o && in_s)
              set_mark (marks, axis_name (d, a), "parallel", 1);    /* a query head a block */
            else
              set_mark (marks, axis_name (d, a), NULL, 0);          /* d, the query heads of a group */
          }
        try_variant (dv, c, r);
      }
}

static void
rows_variants (Derive *dv,
               Cand   *c,
               guint   op)
{
  NapkinDiagram *d = dv->d;
  int src = napkin_diagram_input_source (d, op, 0);
  int axis = napkin_diagram_find_axis (d, napkin_diagram_node (d, op)->axis);
  const NapkinTensorType *x;

  if (src < 0 || axis < 0)
    return;
  x = napkin_diagram_node_type (d, src);
  /* More rows a block only where the model sees them pay (ROWS_MORE_GAIN): it prices
   * 1–8 rows of a long row within 0.5 % of each other, and rows of 50257 unaligned
   * elements ran 1.08× (2 a block) and 1.11× (8) the one-row plan on an H200
   * (docs/perf-notes.md, "Session 31"). */
  {
    json_object *best = NULL;
    double best_t = G_MAXDOUBLE;

    for (gint64 g = 1; g <= 8; g *= 2)
      {
        json_object *marks, *copy = NULL;
        json_object *r = region_new (dv, c, 1, &marks);
        gboolean inner = TRUE;
        double t;

        for (int i = (int) x->n_axes - 1; i >= 0; i--)
          {
            if ((int) x->axes[i] == axis)
              set_mark (marks, axis_name (d, x->axes[i]), NULL, 0);
            else
              {
                set_mark (marks, axis_name (d, x->axes[i]), "parallel", inner ? g : 1);
                inner = FALSE;
              }
          }
        json_object_deep_copy (r, &copy, NULL);
        t = price (dv, c->nodes, c->n, copy);
        if (t < best_t * (best != NULL ? 1 - ROWS_MORE_GAIN : 1))
          {
            g_clear_pointer (&best, json_object_put);
            best = r;
            best_t = t;
          }
        else
          json_object_put (r);
      }
    if (best != NULL)
      try_variant (dv, c, best);
  }
}

static void
elementwise_variants (Derive *dv,
                      Cand   *c)
{
  NapkinDiagram *d = dv->d;
  const NapkinTensorType *o = napkin_diagram_node_type (d, c->nodes[c->n - 1]);

  for (gint64 g = 256; g <= 1024; g *= 4)
    {
      json_object *marks;
      json_object *r = region_new (dv, c, 1, &marks);

      for (int i = (int) o->n_axes - 1; i >= 0; i--)
        set_mark (marks, axis_name (d, o->axes[i]), "parallel",
                  i == (int) o->n_axes - 1 ? MIN (g, napkin_diagram_axis_size (d, o->axes[i])) : 1);
      try_variant (dv, c, r);
    }
}

/* The one consumer of `node` that computes (not an output), or -1. */
static int
chain_next (Derive *dv,
            guint   node)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (dv->d, node, &n_consumers);

  return n_consumers == 1 && dv->compute[consumers[0]] ? (int) consumers[0] : -1;
}

/* Whether the contraction at u is the product with V that ends an attention the plan
 * fuses outside regions (Q·Kᵀ, maps and masks, a softmax, then u: the chain
 * candidates_at proposes from Q·Kᵀ). Left outside regions with the rest, u would be
 * fused with them, so its lone price is not what runs; in a region it cuts the chain. */
static gboolean
attention_tail (Derive *dv,
                guint   u)
{
  int at = napkin_diagram_input_source (dv->d, u, 0);

  if (at < 0 || napkin_diagram_node (dv->d, at)->kind != NAPKIN_OP_SOFTMAX || chain_next (dv, at) != (int) u)
    return FALSE;
  for (guint n = 0; n < MAX_CHAIN; n++)
    {
      const NapkinNode *node = napkin_diagram_node (dv->d, at);
      int back = -1;

      for (guint q = 0; q < napkin_op_n_inputs (node); q++)
        {
          int src = napkin_diagram_input_source (dv->d, at, q);

          if (src >= 0 && chain_next (dv, src) == at)
            back = src;
        }
      if (back < 0)
        return FALSE;
      if (napkin_diagram_node (dv->d, back)->kind == NAPKIN_OP_CONTRACT)
        return TRUE;
      if (napkin_diagram_node (dv->d, back)->kind != NAPKIN_OP_MAP
          && napkin_diagram_node (dv->d, back)->kind != NAPKIN_OP_MASK)
        return FALSE;
      at = back;
    }
  return FALSE;
}

/* Whether the candidate may run outside regions as the plan runs it: not a part of a
 * gated pair the plan fuses (it would run as that pair's GEMM), the whole pair yes. */
static gboolean
plain_ok (Derive     *dv,
          const Cand *c)
{
  if (dv->gated == NULL || g_strcmp0 (c->kind, "gated") == 0)
    return TRUE;
  for (guint i = 0; i < c->n; i++)
    if (g_hash_table_contains (dv->gated, GUINT_TO_POINTER (c->nodes[i] + 1)))
      return FALSE;
  return TRUE;
}

static void
add_cand (Derive      *dv,
          const guint *nodes,
          guint        n,
          const char  *kind)
{
  Cand *c = g_new0 (Cand, 1);

  memcpy (c->nodes, nodes, n * sizeof (guint));
  c->n = n;
  c->head = nodes[0];
  c->kind = kind;
  c->cost = G_MAXDOUBLE;
  dv->candidates++;
  if (g_strcmp0 (kind, "gemm") == 0)
    gemm_variants (dv, c);
  else if (g_strcmp0 (kind, "attention") == 0)
    attention_variants (dv, c);
  else if (g_strcmp0 (kind, "elementwise") == 0)
    elementwise_variants (dv, c);
  else
    for (guint i = 0; i < n; i++)
      {
        NapkinOpKind k = napkin_diagram_node (dv->d, nodes[i])->kind;

        if (k == NAPKIN_OP_SOFTMAX || k == NAPKIN_OP_NORMALIZE || k == NAPKIN_OP_REDUCE)
          rows_variants (dv, c, nodes[i]);
      }
  /* A lone operation may also stay outside regions, as the plan runs it (not the product
   * with V that ends an attention, which the plan would fuse there: attention_tail); so may a
   * chain that the plan fuses into one kernel by itself (a GEMM and the maps after it,
   * an attention at the plan's own tiles: docs/plan.md, "The pipeline").
   * The model prices an operation outside regions on the plan's own tiles with L2
   * sharing, a region on its tiles' transfers (docs/plan.md, "Deriving a diagram"). */
  if (g_strcmp0 (kind, "gemm") == 0 && attention_tail (dv, nodes[0]))
    ;
  else if (!plain_ok (dv, c))
    ;
  else if (n == 1 && dv->single[nodes[0]] < c->cost * (1 - 1e-9))
    {
      g_clear_pointer (&c->region, json_object_put);
      c->cost = dv->single[nodes[0]];
    }
  else if (n > 1)
    {
      double t = price_as (dv, nodes, n, NULL, TRUE);

      if (t < c->cost * (1 - 1e-9))
        {
          g_clear_pointer (&c->region, json_object_put);
          c->cost = t;
        }
    }
  if (c->cost == G_MAXDOUBLE && n > 1)
    {
      cand_free (c);
      return;
    }
  g_ptr_array_add (g_ptr_array_index (dv->by_head, nodes[0]), c);
}

/* The operations `table` (node + 1 → group + 1: the rotary passes, the gated pairs) puts
 * in group `group`, at most MAX_CHAIN, into `nodes` in the diagram's order. */
static guint
group_members (Derive     *dv,
               GHashTable *table,
               gpointer    group,
               guint      *nodes)
{
  GHashTableIter it;
  gpointer key, value;
  guint n = 0;

  g_hash_table_iter_init (&it, table);
  while (g_hash_table_iter_next (&it, &key, &value) && n < MAX_CHAIN)
    if (value == group)
      nodes[n++] = GPOINTER_TO_UINT (key) - 1;
  for (guint i = 1; i < n; i++)
    for (guint j = i; j > 0 && dv->pos[nodes[j]] < dv->pos[nodes[j - 1]]; j--)
      {
        guint t = nodes[j];

        nodes[j] = nodes[j - 1];
        nodes[j - 1] = t;
      }
  return n;
}

/* The gated pairs the plan fuses into one GEMM (priced whole as one kernel; a pair the
 * template refuses runs apart, its operations candidates like any). NULL: none. */
static GHashTable *
gated_fused (Derive *dv)
{
  GHashTable *pairs = napkin_plan_gated_nodes (dv->d);
  g_autoptr(GHashTable) refused = g_hash_table_new (g_direct_hash, g_direct_equal);
  GHashTableIter it;
  gpointer key, join;

  g_hash_table_iter_init (&it, pairs);
  while (g_hash_table_iter_next (&it, &key, &join))
    if (key == join)
      {
        guint nodes[MAX_CHAIN], n = group_members (dv, pairs, join, nodes);

        if (price_as (dv, nodes, n, NULL, TRUE) == G_MAXDOUBLE)
          g_hash_table_add (refused, join);
      }
  g_hash_table_iter_init (&it, pairs);
  while (g_hash_table_iter_next (&it, &key, &join))
    if (g_hash_table_contains (refused, join))
      g_hash_table_iter_remove (&it);
  if (g_hash_table_size (pairs) == 0)
    g_clear_pointer (&pairs, g_hash_table_unref);
  return pairs;
}

static void
candidates_at (Derive *dv,
               guint   u)
{
  NapkinDiagram *d = dv->d;
  const NapkinNode *node = napkin_diagram_node (d, u);
  guint chain[MAX_CHAIN];
  guint n = 0;
  int at;

  /* a rotary embedding runs as the plan's one pass, a candidate of its sum's with no
   * region (a region would cut it in pieces) */
  if (dv->rotary != NULL && g_hash_table_contains (dv->rotary, GUINT_TO_POINTER (u + 1)))
    {
      if (g_hash_table_lookup (dv->rotary, GUINT_TO_POINTER (u + 1)) == GUINT_TO_POINTER (u + 1))
        {
          /* in the diagram's order: the sum last */
          n = group_members (dv, dv->rotary, GUINT_TO_POINTER (u + 1), chain);
          add_cand (dv, chain, n, "rotary");
        }
      return;
    }
  /* a gated pair the plan fuses: its one GEMM, a candidate of its first operation's
   * (then its operations as ever, in regions only: plain_ok) */
  if (dv->gated != NULL && g_hash_table_contains (dv->gated, GUINT_TO_POINTER (u + 1)))
    {
      guint pair[MAX_CHAIN];
      guint m = group_members (dv, dv->gated, g_hash_table_lookup (dv->gated, GUINT_TO_POINTER (u + 1)), pair);

      if (m > 0 && pair[0] == u)
        add_cand (dv, pair, m, "gated");
    }
  chain[n++] = u;
  switch (node->kind)
    {
    case NAPKIN_OP_CONTRACT:
      add_cand (dv, chain, 1, "gemm");
      /* attention: Q·Kᵀ, maps and masks, softmax, ·V */
      for (at = chain_next (dv, u); at >= 0 && n < MAX_CHAIN - 1; at = chain_next (dv, at))
        {
          NapkinOpKind k = napkin_diagram_node (d, at)->kind;

          if (k != NAPKIN_OP_MAP && k != NAPKIN_OP_MASK && k != NAPKIN_OP_SOFTMAX)
            break;
          chain[n++] = at;
          if (k == NAPKIN_OP_SOFTMAX)
            {
              int pv = chain_next (dv, at);

              if (pv >= 0 && napkin_diagram_node (d, pv)->kind == NAPKIN_OP_CONTRACT
                  && napkin_diagram_input_source (d, pv, 0) == (int) at)
                {
                  chain[n++] = pv;
                  add_cand (dv, chain, n, "attention");
                }
              break;
            }
        }
      /* a GEMM with the maps after it */
      n = 1;
      for (at = chain_next (dv, u); at >= 0 && n < MAX_CHAIN && napkin_diagram_node (d, at)->kind == NAPKIN_OP_MAP;
           at = chain_next (dv, at))
        {
          chain[n++] = at;
          add_cand (dv, chain, n, "gemm");
        }
      break;
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
    case NAPKIN_OP_REDUCE:
      add_cand (dv, chain, 1, "rows");
      for (at = chain_next (dv, u); at >= 0 && n < MAX_CHAIN && napkin_diagram_node (d, at)->kind == NAPKIN_OP_MAP;
           at = chain_next (dv, at))
        {
          chain[n++] = at;
          add_cand (dv, chain, n, "rows");
        }
      break;
    case NAPKIN_OP_MAP:
      {
        gboolean row = FALSE;

        add_cand (dv, chain, 1, "elementwise");
        for (at = chain_next (dv, u); at >= 0 && n < MAX_CHAIN; at = chain_next (dv, at))
          {
            NapkinOpKind k = napkin_diagram_node (d, at)->kind;

            if (k == NAPKIN_OP_SOFTMAX || k == NAPKIN_OP_NORMALIZE || k == NAPKIN_OP_REDUCE)
              {
                if (row)
                  break;
                row = TRUE;
              }
            else if (k != NAPKIN_OP_MAP)
              break;
            chain[n++] = at;
            add_cand (dv, chain, n, row ? "rows" : "elementwise");
          }
        break;
      }
    default:
      add_cand (dv, chain, 1, "other");
      break;
    }
}

static char *
set_key (const guint64 *set,
         guint          words)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < words; i++)
    g_string_append_printf (s, "%016" G_GINT64_MODIFIER "x", set[i]);
  return g_string_free (s, FALSE);
}

#define SET_HAS(set, i) (((set)[(i) / 64] >> ((i) % 64)) & 1)
#define SET_ADD(set, i) ((set)[(i) / 64] |= G_GUINT64_CONSTANT (1) << ((i) % 64))

/* Equal costs (within rounding): the longer kernel, then the earlier candidate. */
static gboolean
better (double t,
        Cand  *c,
        double best,
        Cand  *choice)
{
  if (choice == NULL)
    return TRUE;
  if (fabs (t - best) > 1e-9 * MAX (t, best))
    return t < best;
  return c->n > choice->n;
}

static double
solve (Derive        *dv,
       const guint   *topo,
       const guint64 *covered)
{
  g_autofree char *key = set_key (covered, dv->words);
  g_autofree guint64 *next = g_new (guint64, dv->words);
  Memo *memo = g_hash_table_lookup (dv->memo, key);
  double best = G_MAXDOUBLE;
  Cand *choice = NULL;
  int u = -1;
  GPtrArray *cands;

  if (memo != NULL)
    return memo->cost;
  for (guint i = 0; i < dv->n_nodes && u < 0; i++)
    if (dv->compute[topo[i]] && !SET_HAS (covered, topo[i]))
      u = (int) topo[i];
  if (u < 0)
    return 0;
  if (g_hash_table_size (dv->memo) > MAX_STATES)
    dv->overflow = TRUE;
  cands = g_ptr_array_index (dv->by_head, u);
  for (guint i = 0; i < cands->len; i++)
    {
      Cand *c = g_ptr_array_index (cands, i);
      gboolean free = TRUE;
      double t;

      for (guint j = 0; j < c->n && free; j++)
        free = !SET_HAS (covered, c->nodes[j]);
      if (!free || c->cost == G_MAXDOUBLE)
        continue;
      if (dv->overflow && choice != NULL)
        {
          /* too many states: greedy, the candidate that saves the most */
          double saved_c = -c->cost, saved_b = -choice->cost;

          for (guint j = 0; j < c->n; j++)
            saved_c += dv->single[c->nodes[j]];
          for (guint j = 0; j < choice->n; j++)
            saved_b += dv->single[choice->nodes[j]];
          if (saved_c <= saved_b)
            continue;
        }
      memcpy (next, covered, dv->words * sizeof (guint64));
      for (guint j = 0; j < c->n; j++)
        SET_ADD (next, c->nodes[j]);
      if (dv->overflow)
        {
          choice = c;
          continue;
        }
      t = solve (dv, topo, next);
      if (t < G_MAXDOUBLE && better (c->cost + t, c, best, choice))
        {
          best = c->cost + t;
          choice = c;
        }
    }
  if (dv->overflow && choice != NULL && best == G_MAXDOUBLE)
    {
      memcpy (next, covered, dv->words * sizeof (guint64));
      for (guint j = 0; j < choice->n; j++)
        SET_ADD (next, choice->nodes[j]);
      best = choice->cost + solve (dv, topo, next);
    }
  memo = g_new (Memo, 1);
  memo->cost = best;
  memo->choice = choice;
  g_hash_table_insert (dv->memo, g_steal_pointer (&key), memo);
  return best;
}

static char **
ids_of (NapkinDiagram *d,
        const Cand    *c)
{
  GStrvBuilder *b = g_strv_builder_new ();
  char **v;

  for (guint i = 0; i < c->n; i++)
    g_strv_builder_add (b, napkin_diagram_node (d, c->nodes[i])->id);
  v = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return v;
}

/* "t=128 f=256 e~64 stages=4" and the --tile specs of the region. */
static void
describe_region (json_object  *region,
                 char        **tiles,
                 char       ***specs)
{
  GString *s = g_string_new (NULL);
  GStrvBuilder *b = g_strv_builder_new ();
  const char *name = json_object_get_string (json_object_object_get (region, "name"));
  json_object *stages;

  json_object_object_foreach (json_object_object_get (region, "marks"), axis, mark)
    {
      if (json_object_is_type (mark, json_type_string))
        {
          g_string_append_printf (s, "%s%s=whole", s->len ? " " : "", axis);
          g_autofree char *spec = g_strdup_printf ("%s.%s=whole", name, axis);

          g_strv_builder_add (b, spec);
          continue;
        }
      json_object_object_foreach (mark, kind, v)
        {
          gboolean stream = strcmp (kind, "stream") == 0;
          g_autofree char *spec = g_strdup_printf ("%s.%s=%s:%" G_GINT64_FORMAT, name, axis, kind,
                                                   json_object_get_int64 (v));

          g_string_append_printf (s, "%s%s%s%" G_GINT64_FORMAT, s->len ? " " : "", axis, stream ? "~" : "=",
                                  json_object_get_int64 (v));
          g_strv_builder_add (b, spec);
        }
    }
  if (json_object_object_get_ex (region, "stages", &stages))
    {
      g_string_append_printf (s, " stages=%d", json_object_get_int (stages));
      g_autofree char *spec = g_strdup_printf ("%s.stages=%d", name, json_object_get_int (stages));

      g_strv_builder_add (b, spec);
    }
  *tiles = g_string_free (s, FALSE);
  *specs = g_strv_builder_end (b);
  g_strv_builder_unref (b);
}

static char *
explain (Derive             *dv,
         const Cand         *c,
         NapkinDeriveKernel *k)
{
  NapkinDiagram *d = dv->d;
  GString *s = g_string_new (NULL);
  gint64 kept = 0;

  /* what stays on chip: every value made and used inside the kernel */
  for (guint i = 0; i + 1 < c->n; i++)
    {
      gint64 e = 0;

      if (napkin_diagram_type_elements (d, napkin_diagram_node_type (d, c->nodes[i]), &e))
        kept += e * napkin_dtype_bytes (napkin_diagram_node_type (d, c->nodes[i])->dtype);
    }
  if (g_strcmp0 (c->kind, "attention") == 0)
    g_string_append (s, _("flash attention: keys streamed with the online softmax, the scores never leave the chip"));
  else if (g_strcmp0 (c->kind, "gated") == 0)
    g_string_append (s, _("gated GEMM: the two products of one operand in the same tiles, the gate's maps and their "
                        "product in the epilogue"));
  else if (c->n > 1 && g_strcmp0 (c->kind, "gemm") == 0)
    g_string_append_printf (s, _("GEMM with %u map%s fused into its epilogue"), c->n - 1, c->n > 2 ? "s" : "");
  else if (c->n > 1 && g_strcmp0 (c->kind, "rows") == 0)
    g_string_append (s, _("row operation with its maps fused (each row read once)"));
  else if (c->n > 1)
    g_string_append_printf (s, _("%u maps in one pass"), c->n);
  else if (c->region != NULL)
    g_string_append (s, _("its own kernel, relabeled"));
  else
    g_string_append (s, _("its own kernel, as the plan runs it outside regions"));
  if (c->region == NULL && c->n > 1)
    g_string_append (s, _(" (left outside regions: the plan fuses the chain itself and picks the tiles, priced "
                        "below every region tiling tried)"));
  if (kept > 0)
    g_string_append_printf (s, _("; %.1f MB of intermediates stay on chip"), kept / 1e6);
  if (c->n > 1 && k->unfused_s > 0)
    g_string_append_printf (s, _("; %.1f µs vs %.1f µs as %u kernels"), k->predicted_s * 1e6, k->unfused_s * 1e6, c->n);
  /* the longest fusion at this head that lost, and by how much */
  if (c->n == 1)
    {
      GPtrArray *cands = g_ptr_array_index (dv->by_head, c->head);
      const Cand *alt = NULL;

      for (guint i = 0; i < cands->len; i++)
        {
          const Cand *o = g_ptr_array_index (cands, i);

          if (o->n > 1 && o->cost < G_MAXDOUBLE && (alt == NULL || o->n > alt->n))
            alt = o;
        }
      if (alt != NULL)
        {
          double apart = 0;

          for (guint i = 1; i < alt->n; i++)
            apart += dv->single[alt->nodes[i]];
          g_string_append_printf (s, _("; fusing through %s was priced %.1f µs, not better than apart"),
                                  napkin_diagram_node (d, alt->nodes[alt->n - 1])->id, alt->cost * 1e6);
        }
    }
  return g_string_free (s, FALSE);
}

/* The kernel one chosen candidate makes: its name, its region (appended to `regions`)
 * or the operation it runs as drawn, and the tensors it writes for later kernels. */
/* An attention region takes the views its K and V come through (the importer's s → k):
 * the plan's kernel reads their inputs, so they cost nothing there, where left outside
 * they would run as copies (docs/plan.md, "Views"). */
static void
add_views (NapkinDiagram *d,
           const Cand    *c,
           json_object   *region)
{
  json_object *nodes = json_object_object_get (region, "nodes");
  guint qk = c->nodes[0], pv = c->nodes[c->n - 1];
  int views[2] = { napkin_diagram_input_source (d, qk, 1), napkin_diagram_input_source (d, pv, 1) };

  for (guint i = 0; i < 2 && nodes != NULL; i++)
    if (views[i] >= 0 && (i == 0 || views[1] != views[0]) && napkin_plan_node_is_view (d, (guint) views[i]))
      json_object_array_add (nodes, json_object_new_string (napkin_diagram_node (d, (guint) views[i])->id));
}

static NapkinDeriveKernel *
derived_kernel (Derive      *dv,
                const Cand  *c,
                guint       *counts,
                json_object *regions)
{
  NapkinDiagram *diagram = dv->d;
  NapkinDeriveKernel *k = g_new0 (NapkinDeriveKernel, 1);
  GStrvBuilder *b = g_strv_builder_new ();

  k->nodes = ids_of (diagram, c);
  k->predicted_s = c->cost;
  for (guint j = 0; j < c->n; j++)
    k->unfused_s += dv->single[c->nodes[j]];
  if (c->region != NULL)
    {
      static const char *kinds[] = { "gemm", "attention", "rows", "elementwise", "other" };
      /* a product over axes of size 1 runs element-wise (docs/plan.md) */
      const char *kind = g_strcmp0 (c->kind, "gemm") == 0 && napkin_plan_unit_product (diagram, c->head)
                         ? "elementwise" : c->kind;
      guint which = 0;
      json_object *region = NULL;

      while (which < G_N_ELEMENTS (kinds) - 1 && g_strcmp0 (kinds[which], kind) != 0)
        which++;
      k->name = g_strdup_printf ("%s%u", kinds[which], ++counts[which]);
      json_object_deep_copy (c->region, &region, NULL);
      json_object_object_add (region, "name", json_object_new_string (k->name));
      if (g_strcmp0 (c->kind, "attention") == 0)
        add_views (diagram, c, region);
      describe_region (region, &k->tiles, &k->specs);
      json_object_array_add (regions, region);
      k->kind = kind;
    }
  else
    {
      /* a gated pair's GEMM is named for its join, its last operation, as the plan names it */
      k->name = g_strdup (napkin_diagram_node (diagram, g_strcmp0 (c->kind, "gated") == 0 ? c->nodes[c->n - 1]
                                                                                          : c->head)->id);
      k->kind = g_strcmp0 (c->kind, "gated") == 0 ? "gemm"
                : c->n > 1 ? c->kind : napkin_op_kind_to_string (napkin_diagram_node (diagram, c->head)->kind);
    }
  for (guint j = 0; j < c->n; j++)
    {
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (diagram, c->nodes[j], &n_consumers);
      gboolean later = FALSE;

      for (guint q = 0; q < n_consumers; q++)
        later |= dv->compute[consumers[q]] && !in_set (c->nodes, c->n, consumers[q]);
      if (later)
        g_strv_builder_add (b, napkin_diagram_node (diagram, c->nodes[j])->id);
    }
  k->writes = g_strv_builder_end (b);
  g_strv_builder_unref (b);
  return k;
}

/* Whether plan kernel `pk` computes `node`. */
static gboolean
in_kernel (const NapkinPlanKernel *pk,
           guint                   node)
{
  for (guint j = 0; j < pk->nodes->len; j++)
    if (g_array_index (pk->nodes, guint, j) == node)
      return TRUE;
  return FALSE;
}

/* The model's time of plan kernel `pk` with the helpers the plan launches for it. */
static double
plan_kernel_time (const NapkinAnalysis   *a,
                  const NapkinPlanKernel *pk)
{
  g_autofree char *prefix = g_strdup_printf ("%s (", pk->name);
  double t = 0;

  for (guint i = 0; i < a->kernels->len; i++)
    {
      const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, i);

      if (g_str_equal (kc->name, pk->name) || g_str_has_prefix (kc->name, prefix))
        t += kc->time_s_predicted;
    }
  return t;
}

/* One derived kernel for each main kernel of the plan of the diagram as it stands: the
 * plan's own partition (docs/plan.md, "The pipeline"), its regions drawn in `drawn`. The
 * operations are the drawn diagram's (a cast the plan folded counts with its operation). */
static void
plan_partition_kernels (Derive               *dv,
                        const NapkinAnalysis *a,
                        NapkinDiagram        *drawn,
                        GPtrArray            *kernels,
                        double                derived_s)
{
  const NapkinPlan *plan = a->plan;
  g_autoptr(json_object) root = napkin_diagram_to_json (drawn);
  json_object *regions = json_object_object_get (root, "regions");

  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (plan->kernels, i);
      NapkinDeriveKernel *k;
      GStrvBuilder *ids, *writes;
      GHashTableIter iter;
      gpointer cast, into;
      int r;

      if (napkin_plan_kind_is_helper (pk->kind))
        continue;
      k = g_new0 (NapkinDeriveKernel, 1);
      ids = g_strv_builder_new ();
      writes = g_strv_builder_new ();
      k->name = g_strdup (pk->name);
      k->kind = napkin_plan_kind_to_string (pk->kind);
      k->predicted_s = plan_kernel_time (a, pk);
      for (guint j = 0; j < pk->nodes->len; j++)
        {
          guint n = g_array_index (pk->nodes, guint, j);
          const char *id = napkin_diagram_node (plan->diagram, n)->id;
          guint n_consumers;
          const guint *consumers = napkin_diagram_consumers (plan->diagram, n, &n_consumers);
          gboolean later = FALSE;

          g_strv_builder_add (ids, id);
          for (guint q = 0; q < n_consumers; q++)
            later |= napkin_diagram_node (plan->diagram, consumers[q])->kind != NAPKIN_OP_OUTPUT
                     && !in_kernel (pk, consumers[q]);
          if (later)
            g_strv_builder_add (writes, id);
        }
      g_hash_table_iter_init (&iter, plan->folded);
      while (g_hash_table_iter_next (&iter, &cast, &into))
        for (guint j = 0; j < pk->nodes->len; j++)
          if (g_str_equal (napkin_diagram_node (plan->diagram, g_array_index (pk->nodes, guint, j))->id, into))
            g_strv_builder_add (ids, cast);
      k->nodes = g_strv_builder_end (ids);
      k->writes = g_strv_builder_end (writes);
      g_strv_builder_unref (ids);
      g_strv_builder_unref (writes);
      for (guint j = 0; k->nodes[j] != NULL; j++)
        {
          int n = napkin_diagram_find_node (dv->d, k->nodes[j]);

          if (n >= 0)
            k->unfused_s += dv->single[n];
        }
      r = pk->region >= 0 ? napkin_diagram_find_region (drawn, napkin_diagram_region (plan->diagram, pk->region)->name) : -1;
      if (r >= 0)
        describe_region (json_object_array_get_idx (regions, (size_t) r), &k->tiles, &k->specs);
      k->why = g_strdup_printf (_("the plan's own kernel: its partition and layouts of the whole diagram are "
                                  "priced below the kernels derived one by one (%.1f µs against %.1f µs in all)"),
                                a->predicted_time_s * 1e6, derived_s * 1e6);
      g_ptr_array_add (kernels, k);
    }
}

/* The derived kernels as the plan of the derived diagram runs and prices them (one
 * cut's price alone misses the layouts chosen across kernels): the table and its total
 * say what `analyze` of the derived diagram says. Each keeps the reason for its cut. */
static void
reprice_as_planned (Derive               *dv,
                    const NapkinAnalysis *a,
                    NapkinDerivation     *r)
{
  g_autoptr(GPtrArray) cut = g_steal_pointer (&r->kernels);

  r->kernels = g_ptr_array_new_with_free_func ((GDestroyNotify) kernel_free);
  plan_partition_kernels (dv, a, r->derived, r->kernels, r->derived_s);
  for (guint i = 0; i < r->kernels->len; i++)
    {
      NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);
      NapkinDeriveKernel *was = NULL;

      for (guint j = 0; was == NULL && j < cut->len; j++)
        if (g_str_equal (((NapkinDeriveKernel *) g_ptr_array_index (cut, j))->name, k->name))
          was = g_ptr_array_index (cut, j);
      g_free (k->why);
      k->why = was != NULL ? g_strdup (was->why) : g_strdup (_("its own kernel, as the plan runs it outside regions"));
    }
  r->derived_s = a->predicted_time_s;
  r->launch_run_s = a->launch_run_s;
}

/* Keeps the derivation, or — where the plan of the diagram as it stands (its own
 * partition and the layouts of the values between kernels, which the one-by-one
 * pricing cannot see) is priced no higher — that plan, its regions drawn, and its kernels
 * priced as it runs them: a derivation is
 * never slower than the diagram without regions (docs/plan.md, "Deriving a diagram"). */
static gboolean
keep_the_faster (Derive           *dv,
                 NapkinDerivation *r,
                 GError          **error)
{
  g_autoptr(NapkinAnalysis) plain = napkin_analyze (dv->d, dv->arch, &dv->options, error);

  if (plain == NULL)
    return FALSE;
  dv->evaluated++;
  if (!(plain->predicted_time_s <= r->analyzed_s * (1 + 1e-9)))
    return TRUE;
  g_clear_object (&r->derived);
  r->derived = napkin_plan_with_regions (plain->plan, dv->d);
  g_ptr_array_set_size (r->kernels, 0);
  plan_partition_kernels (dv, plain, r->derived, r->kernels, r->derived_s);
  r->derived_s = r->analyzed_s = plain->predicted_time_s;
  r->launch_run_s = plain->launch_run_s;
  return TRUE;
}

/* The derived regions' tiles searched as `tune` searches drawn ones (every combination
 * of their tile sizes, stages and threads, ranked by the same model), so that a diagram
 * without regions reaches the tiles a drawn region of the same kernel would: the
 * candidates above try a few tile shapes a kernel, the search every legal one. The best
 * is taken where the derivation's own are not within the model's resolution of it
 * (NAPKIN_TUNE_RESOLUTION, the rule Suggest applies to drawn tiles; docs/plan.md,
 * "Deriving a diagram"). */
static gboolean
refine_tiles (Derive           *dv,
              NapkinDerivation *r,
              GError          **error)
{
  /* a kernel at a time past a thousand combinations (each kernel's tiles apart) */
  NapkinTuneOptions options = { .top_k = 1, .max_evaluations = 1000, .has_dtype = dv->options.has_dtype,
                                .dtype = dv->options.dtype };
  g_autoptr(NapkinTuneResult) search = NULL;
  g_autoptr(NapkinDiagram) relabeled = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(GPtrArray) before = NULL;
  double was = r->analyzed_s;

  if (napkin_diagram_n_regions (r->derived) == 0)
    return TRUE;
  search = napkin_tune (r->derived, dv->arch, &options, NULL);
  if (search == NULL || search->best->len == 0)
    return TRUE;
  dv->evaluated += search->evaluated;
  if (!(((NapkinTuneCandidate *) g_ptr_array_index (search->best, 0))->predicted_time_s
        < was * (1 - NAPKIN_TUNE_RESOLUTION)))
    return TRUE;
  relabeled = napkin_tune_result_relabel (search, r->derived, 0, NULL);
  if (relabeled == NULL)
    return TRUE;
  a = napkin_analyze (relabeled, dv->arch, &dv->options, error);
  if (a == NULL)
    return FALSE;
  dv->evaluated++;
  if (!(a->predicted_time_s < was))
    return TRUE;
  before = g_ptr_array_ref (r->kernels);
  g_set_object (&r->derived, relabeled);
  r->analyzed_s = a->predicted_time_s;
  reprice_as_planned (dv, a, r);
  for (guint i = 0; i < r->kernels->len; i++)
    {
      NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);

      for (guint j = 0; j < before->len; j++)
        {
          const NapkinDeriveKernel *old = g_ptr_array_index (before, j);
          char *why;

          if (!g_str_equal (old->name, k->name) || g_strcmp0 (old->tiles, k->tiles) == 0)
            continue;
          why = g_strdup_printf (_("%s; its tiles from the search of the derived regions' tiles (%s before: "
                                   "%.1f µs against %.1f µs in all)"), k->why, old->tiles ? old->tiles : _("the plan's own"),
                                 a->predicted_time_s * 1e6, was * 1e6);
          g_free (k->why);
          k->why = why;
        }
    }
  return TRUE;
}

NapkinDerivation *
napkin_derive (NapkinDiagram            *diagram,
               NapkinArch               *arch,
               const NapkinTuneOptions  *options,
               GError                  **error)
{
  g_autoptr(NapkinDerivation) r = NULL;
  g_autoptr(json_object) root = NULL;
  g_autoptr(GHashTable) node_json = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GPtrArray) by_head = NULL;
  g_autoptr(GHashTable) memo = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autofree guint *pos = NULL;
  g_autofree gboolean *compute = NULL;
  g_autofree double *single = NULL;
  g_autofree guint64 *covered = NULL;
  json_object *nodes, *regions;
  const guint *topo;
  Derive dv = { 0 };
  guint n_compute = 0;
  guint counts[8] = { 0 };

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  if (napkin_diagram_n_regions (diagram) > 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("regions: the diagram already has regions; derivation starts from a diagram without them"));
      return NULL;
    }
  root = napkin_diagram_to_json (diagram);
  json_object_object_get_ex (root, "nodes", &nodes);
  for (size_t i = 0; i < json_object_array_length (nodes); i++)
    {
      json_object *n = json_object_array_get_idx (nodes, i);

      g_hash_table_insert (node_json, (gpointer) json_object_get_string (json_object_object_get (n, "id")), n);
    }
  dv.d = diagram;
  dv.arch = arch;
  dv.options.trusted = FALSE;
  dv.options.has_dtype = options && options->has_dtype;
  dv.options.dtype = options ? options->dtype : NAPKIN_DTYPE_FP16;
  dv.root = root;
  dv.node_json = node_json;
  dv.n_nodes = napkin_diagram_n_nodes (diagram);
  dv.words = (dv.n_nodes + 63) / 64;
  topo = napkin_diagram_topo_order (diagram);
  pos = g_new0 (guint, dv.n_nodes + 1);
  compute = g_new0 (gboolean, dv.n_nodes + 1);
  single = g_new0 (double, dv.n_nodes + 1);
  by_head = g_ptr_array_new_with_free_func ((GDestroyNotify) g_ptr_array_unref);
  for (guint i = 0; i < dv.n_nodes; i++)
    {
      NapkinOpKind k = napkin_diagram_node (diagram, i)->kind;

      pos[topo[i]] = i;
      compute[i] = k != NAPKIN_OP_INPUT && k != NAPKIN_OP_OUTPUT;
      n_compute += compute[i];
      g_ptr_array_add (by_head, g_ptr_array_new_with_free_func ((GDestroyNotify) cand_free));
    }
  if (n_compute == 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("nodes: the diagram has no operation to derive kernels for"));
      return NULL;
    }
  if (n_compute > MAX_DERIVE_OPERATIONS)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("nodes: %u operations; kernels are derived for a diagram without regions of at most %d: "
                     "draw regions around what to tune (tune then searches their tiles)"), n_compute,
                   MAX_DERIVE_OPERATIONS);
      return NULL;
    }
  dv.pos = pos;
  dv.compute = compute;
  dv.single = single;
  dv.by_head = by_head;
  dv.memo = memo;

  /* every operation alone: the unfused baseline, and the lone candidates */
  r = g_new0 (NapkinDerivation, 1);
  r->kernels = g_ptr_array_new_with_free_func ((GDestroyNotify) kernel_free);
  for (guint i = 0; i < dv.n_nodes; i++)
    if (compute[topo[i]])
      {
        guint u = topo[i];

        single[u] = price (&dv, &u, 1, NULL);
        if (single[u] == G_MAXDOUBLE)
          {
            g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                         _("nodes: operation “%s” cannot be priced on its own on %s"), napkin_diagram_node (diagram, u)->id,
                         arch->id);
            return NULL;
          }
        r->unfused_s += single[u];
      }
  /* outputs wired straight from inputs: a copy kernel each, the same in every cover;
   * priced as the plan runs them, so that the baseline counts them as the result does */
  for (guint i = 0; i < dv.n_nodes; i++)
    if (napkin_plan_node_is_input_copy (diagram, i))
      {
        g_autoptr(NapkinAnalysis) alone = napkin_analyze (diagram, arch, &dv.options, error);

        if (alone == NULL)
          return NULL;
        dv.evaluated++;
        for (guint u = 0; u < dv.n_nodes; u++)
          if (napkin_plan_node_is_input_copy (diagram, u))
            {
              for (guint k = 0; k < alone->kernels->len; k++)
                if (g_str_equal (g_array_index (alone->kernels, NapkinKernelCost, k).name,
                                 napkin_diagram_node (diagram, u)->id))
                  single[u] = g_array_index (alone->kernels, NapkinKernelCost, k).time_s_predicted;
              r->unfused_s += single[u];
            }
        break;
      }
  /* every operation its own kernel, in one run (docs/model.md, "Launches") */
  {
    guint launches = 0;

    for (guint u = 0; u < dv.n_nodes; u++)
      launches += single[u] > 0 && single[u] < G_MAXDOUBLE;
    r->unfused_s += napkin_run_launches_s (arch, launches, dv.options.paper);
  }
  dv.rotary = napkin_plan_rotary_nodes (diagram);
  dv.gated = gated_fused (&dv);
  for (guint i = 0; i < dv.n_nodes; i++)
    if (compute[topo[i]])
      candidates_at (&dv, topo[i]);
  g_clear_pointer (&dv.rotary, g_hash_table_unref);
  g_clear_pointer (&dv.gated, g_hash_table_unref);

  covered = g_new0 (guint64, dv.words);
  r->derived_s = solve (&dv, topo, covered);
  r->exact = !dv.overflow;
  r->candidates = dv.candidates;

  /* walk the chosen cover and build the regions */
  regions = json_object_new_array ();
  for (;;)
    {
      g_autofree char *key = set_key (covered, dv.words);
      Memo *m = g_hash_table_lookup (memo, key);
      NapkinDeriveKernel *k;
      Cand *c;

      if (m == NULL || m->choice == NULL)
        break;
      c = m->choice;
      if (g_getenv ("NAPKIN_DERIVE_DEBUG"))
        g_printerr ("cover: %s %s ×%u %g %s\n", c->kind, napkin_diagram_node (dv.d, c->nodes[0])->id, c->n, c->cost,
                    c->region ? "region" : "outside regions");
      for (guint j = 0; j < c->n; j++)
        SET_ADD (covered, c->nodes[j]);
      k = derived_kernel (&dv, c, counts, regions);
      k->why = explain (&dv, c, k);
      g_ptr_array_add (r->kernels, k);
    }
  json_object_object_add (root, "regions", regions);
  if (json_object_array_length (regions) > NAPKIN_MAX_REGIONS)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("nodes: the derivation fuses these operations into %zu kernels; a diagram holds at most %d "
                     "regions: draw regions around what to tune (tune then searches their tiles)"),
                   json_object_array_length (regions), NAPKIN_MAX_REGIONS);
      return NULL;
    }
  r->derived = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, error);
  if (r->derived == NULL)
    return NULL;
  {
    g_autoptr(NapkinAnalysis) a = napkin_analyze (r->derived, arch, &dv.options, error);

    if (a == NULL)
      return NULL;
    dv.evaluated++;
    r->analyzed_s = a->predicted_time_s;
    /* the kernels the plan fuses by itself get its regions drawn, so that what is
     * applied shows (and reproduces) every kernel */
    if (napkin_diagram_n_regions (a->plan->diagram) > a->plan->drawn_regions)
      {
        NapkinDiagram *drawn = napkin_plan_with_regions (a->plan, r->derived);

        g_object_unref (r->derived);
        r->derived = drawn;
      }
    reprice_as_planned (&dv, a, r);
  }
  if (!keep_the_faster (&dv, r, error)
      || (!(options != NULL && options->derive_unsearched) && !refine_tiles (&dv, r, error)))
    return NULL;
  r->evaluated = dv.evaluated;
  return g_steal_pointer (&r);
}

json_object *
napkin_derivation_to_json (const NapkinDerivation *r)
{
  json_object *root = json_object_new_object (), *kernels = json_object_new_array ();

  json_object_object_add (root, "unfused_time_s", json_object_new_double (r->unfused_s));
  json_object_object_add (root, "derived_time_s", json_object_new_double (r->derived_s));
  json_object_object_add (root, "analyzed_time_s", json_object_new_double (r->analyzed_s));
  json_object_object_add (root, "launch_run_s", json_object_new_double (r->launch_run_s));
  json_object_object_add (root, "speedup", json_object_new_double (r->derived_s > 0 ? r->unfused_s / r->derived_s : 0));
  json_object_object_add (root, "candidates", json_object_new_int ((int) r->candidates));
  json_object_object_add (root, "evaluated", json_object_new_int ((int) r->evaluated));
  json_object_object_add (root, "exact", json_object_new_boolean (r->exact));
  for (guint i = 0; i < r->kernels->len; i++)
    {
      const NapkinDeriveKernel *k = g_ptr_array_index (r->kernels, i);
      json_object *o = json_object_new_object (), *list = json_object_new_array (), *w = json_object_new_array ();

      json_object_object_add (o, "name", json_object_new_string (k->name));
      json_object_object_add (o, "kind", json_object_new_string (k->kind));
      json_object_object_add (o, "region", json_object_new_boolean (k->tiles != NULL));
      for (guint j = 0; k->nodes[j]; j++)
        json_object_array_add (list, json_object_new_string (k->nodes[j]));
      json_object_object_add (o, "nodes", list);
      if (k->tiles)
        json_object_object_add (o, "tiles", json_object_new_string (k->tiles));
      json_object_object_add (o, "predicted_time_s", json_object_new_double (k->predicted_s));
      json_object_object_add (o, "unfused_time_s", json_object_new_double (k->unfused_s));
      for (guint j = 0; k->writes[j]; j++)
        json_object_array_add (w, json_object_new_string (k->writes[j]));
      json_object_object_add (o, "through_device_memory", w);
      json_object_object_add (o, "why", json_object_new_string (k->why));
      json_object_array_add (kernels, o);
    }
  json_object_object_add (root, "kernels", kernels);
  return root;
}
