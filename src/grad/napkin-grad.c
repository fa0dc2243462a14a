/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-grad"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "napkin-describe.h"
#include "napkin-grad.h"
#include "napkin-import.h"
#include "napkin-validate.h"

/* Reverse-mode differentiation of a diagram into a diagram (docs/training.md). The
 * result starts as a copy of the forward, so the forward's node i is the result's node
 * i; every backward node is appended after them. Each operation's adjoint is written
 * with the format's own operations, so the backward diagram is an ordinary one that the
 * plan, the model and the interpreter read like any other. */

G_DEFINE_QUARK (napkin-grad-error-quark, napkin_grad_error)

/* C17 has no SQRT1_2 or TWO_SQRTPI */
#define SQRT1_2    0.70710678118654752440   /* 1/√2 */
#define TWO_SQRTPI 1.12837916709551257390   /* 2/√π */

typedef struct
{
  NapkinDiagram *fwd;
  NapkinDiagram *d;          /* the result */
  guint          n_fwd;
  gboolean      *needs;      /* per forward node: depends on an input asked for */
  gboolean      *live;       /* per forward node: some output depends on it */
  GPtrArray    **contribs;   /* per forward node: ids (in d) of its gradient's terms */
  GHashTable    *saved;      /* ids (in d) of the forward values the backward reads */
  GHashTable    *wrt;        /* tensor names asked for */
  gboolean      *recompute;  /* per forward node: the backward recomputes its value */
  const char   **copies;     /* per forward node: the id (in d) of its recomputed copy */
  const char   **grads;      /* per forward node: the id (in d) of its summed gradient */
} Grad;

/* ---- building blocks ---------------------------------------------------------------- */

/* The type a gradient of a value of type t is carried in: its own, but bf16 for fp8 —
 * an 8-bit float has no room for a gradient's range and sums (FP8 training keeps its
 * gradients in bf16), and no GEMM stores it (docs/training.md). */
static NapkinDtype
grad_dtype (NapkinDtype t)
{
  return t == NAPKIN_DTYPE_FP8_E4M3 || t == NAPKIN_DTYPE_FP8_E5M2 ? NAPKIN_DTYPE_BF16 : t;
}

static char *
fresh_name (NapkinDiagram  *d,
            NapkinItemKind  kind,
            const char     *stem)
{
  g_autofree char *base = g_strndup (stem, NAPKIN_MAX_NAME_LEN - 8);

  if (napkin_diagram_find (d, kind, base) < 0)
    return g_steal_pointer (&base);
  for (guint i = 2;; i++)
    {
      char *name = g_strdup_printf ("%s%u", base, i);

      if (napkin_diagram_find (d, kind, name) < 0)
        return name;
      g_free (name);
    }
}

static int
node_index (Grad       *G,
            const char *id)
{
  int i = napkin_diagram_find_node (G->d, id);

  g_assert (i >= 0);
  return i;
}

static const NapkinTensorType *
type_of (Grad       *G,
         const char *id)
{
  return napkin_diagram_node_type (G->d, node_index (G, id));
}

static const char *
axis_name (Grad  *G,
           guint  axis)
{
  return napkin_diagram_axis (G->d, axis)->name;
}

/* Appends `node` (taken) with a fresh id from `stem`; wires `srcs` to its ports. */
static const char *
add_node (Grad             *G,
          NapkinNode       *node,
          const char       *stem,
          const char *const srcs[],
          guint             n_srcs)
{
  g_free (node->id);
  node->id = fresh_name (G->d, NAPKIN_ITEM_NODE, stem);
  napkin_diagram_insert_item (G->d, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (G->d), node);
  for (guint p = 0; p < n_srcs; p++)
    {
      NapkinWire *wire = g_new0 (NapkinWire, 1);

      wire->from = g_strdup (srcs[p]);
      wire->to = g_strdup (node->id);
      wire->port = p;
      napkin_diagram_insert_item (G->d, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (G->d), wire);
    }
  return node->id;
}

static const char *
cast_to (Grad        *G,
         const char  *x,
         NapkinDtype  dtype,
         const char  *stem)
{
  NapkinNode *node;

  if (type_of (G, x)->dtype == dtype)
    return x;
  node = napkin_node_new (NULL, NAPKIN_OP_MAP);
  node->fn = NAPKIN_FN_CAST;
  node->has_dtype = TRUE;
  node->dtype = dtype;
  return add_node (G, node, stem, (const char *[]) { x }, 1);
}

static const char *
map1 (Grad        *G,
      NapkinMapFn  fn,
      const char  *x,
      const char  *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_MAP);

  node->fn = fn;
  return add_node (G, node, stem, (const char *[]) { x }, 1);
}

/* A scale (fn SCALE) or shift (fn SHIFT) by alpha, or by an expression of the axes. */
static const char *
affine (Grad        *G,
        NapkinMapFn  fn,
        const char  *x,
        double       alpha,
        const char  *alpha_expr,
        const char  *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_MAP);
  const char *id;

  node->fn = fn;
  node->alpha = alpha;
  node->alpha_expr = g_strdup (alpha_expr);
  /* inserting evaluates an expression at the axes' sizes */
  id = add_node (G, node, stem, (const char *[]) { x }, 1);
  return id;
}

/* A binary map; the second operand takes the first's element type (a map's operands
 * share one) — but an fp8 first operand takes the second's. The output carries a's
 * axes, then b's others. */
static const char *
map2 (Grad        *G,
      NapkinMapFn  fn,
      const char  *a,
      const char  *b,
      const char  *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_MAP);

  /* an fp8 value (the probabilities of an fp8 attention) meets a gradient in the
   * gradient's type, not the other way */
  if (grad_dtype (type_of (G, a)->dtype) != type_of (G, a)->dtype
      && grad_dtype (type_of (G, b)->dtype) == type_of (G, b)->dtype)
    a = cast_to (G, a, type_of (G, b)->dtype, stem);
  b = cast_to (G, b, type_of (G, a)->dtype, stem);
  node->fn = fn;
  return add_node (G, node, stem, (const char *[]) { a, b }, 2);
}

static const char *
reduce_sum (Grad       *G,
            const char *x,
            guint       axis,
            const char *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_REDUCE);

  node->reduce = NAPKIN_REDUCE_SUM;
  node->axis = g_strdup (axis_name (G, axis));
  return add_node (G, node, stem, (const char *[]) { x }, 1);
}

static char **
axes_names (Grad                   *G,
            const NapkinTensorType *type)
{
  char **names = g_new0 (char *, type->n_axes + 1);

  for (guint i = 0; i < type->n_axes; i++)
    names[i] = g_strdup (axis_name (G, type->axes[i]));
  return names;
}

/* Σ a·b over the axes `out` lacks, of out's element type (b is cast to a's type; where a
 * is fp8 and b, a gradient, is not, a is cast to b's: a gradient is never rounded to 8
 * bits to meet an fp8 operand). */
static const char *
contract (Grad                   *G,
          const char             *a,
          const char             *b,
          const NapkinTensorType *out,
          const char             *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_CONTRACT);

  if (grad_dtype (type_of (G, a)->dtype) != type_of (G, a)->dtype
      && grad_dtype (type_of (G, b)->dtype) == type_of (G, b)->dtype)
    a = cast_to (G, a, type_of (G, b)->dtype, stem);
  b = cast_to (G, b, type_of (G, a)->dtype, stem);
  node->out = axes_names (G, out);
  if (out->dtype != type_of (G, a)->dtype)
    {
      node->has_dtype = TRUE;
      node->dtype = out->dtype;
    }
  return add_node (G, node, stem, (const char *[]) { a, b }, 2);
}

/* A tensor of zeros shaped like the value x, made as 0·step(x): the format has no
 * operation that broadcasts a value along an axis without reading a value that has
 * the axis (no constants, no broadcast), and every arithmetic one carries ±∞ or NaN
 * through a product with 0 — 0·x is NaN where x is ±∞. step is a comparison: 0 or 1
 * for every x, NaN included, so 0·step(x) is exactly 0 (docs/training.md). It still
 * reads x, for its shape only, so x is not counted among the saved values. */
static const char *
zeros_like (Grad       *G,
            const char *x,
            const char *stem)
{
  return affine (G, NAPKIN_FN_SCALE, map1 (G, NAPKIN_FN_STEP, x, stem), 0, NULL, stem);
}

static const char *recomputed (Grad *G, guint v);

/* The forward node v as an operand of the backward: a value it keeps, or its copy where
 * the backward recomputes it. */
static const char *
saved (Grad  *G,
       guint  v)
{
  const NapkinNode *node = napkin_diagram_node (G->d, v);

  if (v < G->n_fwd && G->recompute[v])
    return recomputed (G, v);
  if (node->kind != NAPKIN_OP_INPUT)
    g_hash_table_add (G->saved, node->id);
  return node->id;
}

/* What a recomputed value is made from again: maps, masks, softmaxes and rearranges, back
 * to a contraction (copied too; its operands are stored); anything else is stored. */
static gboolean
recomputable (const NapkinNode *node)
{
  switch (node->kind)
    {
    case NAPKIN_OP_MAP:
    case NAPKIN_OP_MASK:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_REARRANGE:
    case NAPKIN_OP_CONTRACT:
      return TRUE;
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_NORMALIZE:
    case NAPKIN_N_OPS:
    default:
      return FALSE;
    }
}

/* The backward's own copy of forward value v (made once), its operands recomputed in
 * turn up to and including the first contraction on each path. */
static const char *
recomputed (Grad  *G,
            guint  v)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  guint n = napkin_op_n_inputs (node);
  g_autofree const char **srcs = g_new0 (const char *, n + 1);
  g_autofree char *stem = NULL;
  NapkinNode *copy;

  if (G->copies[v] != NULL)
    return G->copies[v];
  for (guint p = 0; p < n; p++)
    {
      int src = napkin_diagram_input_source (G->fwd, v, p);
      const NapkinNode *s = napkin_diagram_node (G->fwd, src);

      srcs[p] = node->kind != NAPKIN_OP_CONTRACT && recomputable (s) ? recomputed (G, src) : saved (G, src);
    }
  copy = napkin_item_copy (NAPKIN_ITEM_NODE, node);
  g_clear_pointer (&copy->label, g_free);
  if (copy->extra != NULL)
    json_object_put (g_steal_pointer (&copy->extra));
  stem = g_strdup_printf ("%s_re", node->id);
  G->copies[v] = add_node (G, copy, stem, srcs, n);
  return G->copies[v];
}

static const char *
source (Grad  *G,
        guint  v,
        guint  port)
{
  int src = napkin_diagram_input_source (G->fwd, v, port);

  g_assert (src >= 0);
  return saved (G, src);
}

static void
contribute (Grad       *G,
            guint       v,
            const char *term)
{
  g_ptr_array_add (G->contribs[v], (gpointer) term);
}

/* `term` with the axes `want` lacks summed away. */
static const char *
sum_to (Grad                   *G,
        const char             *term,
        const NapkinTensorType *want,
        const char             *stem)
{
  NapkinTensorType have = *type_of (G, term);

  for (guint i = 0; i < have.n_axes; i++)
    if (!napkin_tensor_type_has_axis (want, have.axes[i]))
      term = reduce_sum (G, term, have.axes[i], stem);
  return term;
}

/* The gradient of forward value v with the axes of `type` that the value lacks summed
 * away (the operand of a broadcasting map), contributed to v. */
static void
contribute_reduced (Grad       *G,
                    guint       v,
                    const char *term,
                    const char *stem)
{
  contribute (G, v, sum_to (G, term, napkin_diagram_node_type (G->fwd, v), stem));
}

/* The sum of v's gradient terms, in v's element type; NULL when it has none. */
static const char *
gradient (Grad  *G,
          guint  v)
{
  GPtrArray *terms = G->contribs[v];
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  g_autofree char *stem = g_strdup_printf ("d_%s", node->id);
  const char *sum;

  if (terms->len == 0)
    return NULL;
  sum = cast_to (G, g_ptr_array_index (terms, 0), grad_dtype (napkin_diagram_node_type (G->fwd, v)->dtype), stem);
  for (guint i = 1; i < terms->len; i++)
    sum = map2 (G, NAPKIN_FN_ADD, sum, g_ptr_array_index (terms, i), stem);
  return sum;
}

/* ---- adjoints ------------------------------------------------------------------------- */

/* dy/dx of a unary map as a value shaped like x, or NULL where the adjoint is not a
 * product with the gradient (scale, shift, neg, cast, step: handled by the caller). */
static const char *
unary_derivative (Grad       *G,
                  guint       v,
                  const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  const char *x = NULL, *y = NULL, *t, *s;

  /* what each derivative reads: the input, or the output (as torch saves them) */
  switch (node->fn)
    {
    case NAPKIN_FN_EXP:
    case NAPKIN_FN_RELU:
    case NAPKIN_FN_SIGMOID:
    case NAPKIN_FN_TANH:
    case NAPKIN_FN_SQRT:
    case NAPKIN_FN_RSQRT:
    case NAPKIN_FN_ELU:
    case NAPKIN_FN_RECIPROCAL:
      y = saved (G, v);
      break;
    default:
      x = source (G, v, 0);
      break;
    }

  switch (node->fn)
    {
    case NAPKIN_FN_EXP:                  /* y */
      return y;
    case NAPKIN_FN_RELU:                 /* 1[y > 0] */
      return map1 (G, NAPKIN_FN_STEP, y, stem);
    case NAPKIN_FN_SIGMOID:              /* y (1 − y) */
      t = affine (G, NAPKIN_FN_SHIFT, map1 (G, NAPKIN_FN_NEG, y, stem), 1, NULL, stem);
      return map2 (G, NAPKIN_FN_MUL, y, t, stem);
    case NAPKIN_FN_TANH:                 /* 1 − y² */
      t = map1 (G, NAPKIN_FN_NEG, map1 (G, NAPKIN_FN_SQUARE, y, stem), stem);
      return affine (G, NAPKIN_FN_SHIFT, t, 1, NULL, stem);
    case NAPKIN_FN_SQRT:                 /* 1 / (2y) */
      t = affine (G, NAPKIN_FN_SCALE, y, 2, NULL, stem);
      return t;                          /* the caller divides */
    case NAPKIN_FN_RSQRT:                /* −y³ / 2 */
      t = map2 (G, NAPKIN_FN_MUL, y, map1 (G, NAPKIN_FN_SQUARE, y, stem), stem);
      return affine (G, NAPKIN_FN_SCALE, t, -0.5, NULL, stem);
    case NAPKIN_FN_ELU:                  /* 1 where y > 0, else y + 1 (= eˣ): y − 1[y > 0]·y + 1 */
      t = map2 (G, NAPKIN_FN_MUL, map1 (G, NAPKIN_FN_STEP, y, stem), y, stem);
      return affine (G, NAPKIN_FN_SHIFT, map2 (G, NAPKIN_FN_SUB, y, t, stem), 1, NULL, stem);
    case NAPKIN_FN_RECIPROCAL:           /* −y² */
      return map1 (G, NAPKIN_FN_NEG, map1 (G, NAPKIN_FN_SQUARE, y, stem), stem);
    case NAPKIN_FN_SQUARE:               /* 2x */
      return affine (G, NAPKIN_FN_SCALE, x, 2, NULL, stem);
    case NAPKIN_FN_SILU:                 /* σ(x) (1 + x (1 − σ(x))) */
      s = map1 (G, NAPKIN_FN_SIGMOID, x, stem);
      t = affine (G, NAPKIN_FN_SHIFT, map1 (G, NAPKIN_FN_NEG, s, stem), 1, NULL, stem);
      t = affine (G, NAPKIN_FN_SHIFT, map2 (G, NAPKIN_FN_MUL, x, t, stem), 1, NULL, stem);
      return map2 (G, NAPKIN_FN_MUL, s, t, stem);
    case NAPKIN_FN_GELU:                 /* Φ(x) + x φ(x) */
      {
        const char *cdf, *pdf;

        cdf = map1 (G, NAPKIN_FN_ERF, affine (G, NAPKIN_FN_SCALE, x, SQRT1_2, NULL, stem), stem);
        cdf = affine (G, NAPKIN_FN_SHIFT, affine (G, NAPKIN_FN_SCALE, cdf, 0.5, NULL, stem), 0.5, NULL, stem);
        pdf = affine (G, NAPKIN_FN_SCALE, map1 (G, NAPKIN_FN_SQUARE, x, stem), -0.5, NULL, stem);
        pdf = affine (G, NAPKIN_FN_SCALE, map1 (G, NAPKIN_FN_EXP, pdf, stem), 0.5 * TWO_SQRTPI * SQRT1_2, NULL, stem);
        return map2 (G, NAPKIN_FN_ADD, cdf, map2 (G, NAPKIN_FN_MUL, x, pdf, stem), stem);
      }
    case NAPKIN_FN_GELU_TANH:
      {
        /* u = c (x + k x³), t = tanh u: ½ (1 + t) + ½ x (1 − t²) c (1 + 3k x²) */
        const double c = sqrt (2.0 / G_PI), k = 0.044715;
        const char *x2 = map1 (G, NAPKIN_FN_SQUARE, x, stem);
        const char *u, *a, *b, *du;

        u = map2 (G, NAPKIN_FN_MUL, x2, x, stem);
        u = map2 (G, NAPKIN_FN_ADD, x, affine (G, NAPKIN_FN_SCALE, u, k, NULL, stem), stem);
        t = map1 (G, NAPKIN_FN_TANH, affine (G, NAPKIN_FN_SCALE, u, c, NULL, stem), stem);
        a = affine (G, NAPKIN_FN_SHIFT, affine (G, NAPKIN_FN_SCALE, t, 0.5, NULL, stem), 0.5, NULL, stem);
        b = map1 (G, NAPKIN_FN_NEG, map1 (G, NAPKIN_FN_SQUARE, t, stem), stem);
        b = affine (G, NAPKIN_FN_SHIFT, b, 1, NULL, stem);
        du = affine (G, NAPKIN_FN_SHIFT, affine (G, NAPKIN_FN_SCALE, x2, 3 * k, NULL, stem), 1, NULL, stem);
        du = affine (G, NAPKIN_FN_SCALE, du, 0.5 * c, NULL, stem);
        b = map2 (G, NAPKIN_FN_MUL, map2 (G, NAPKIN_FN_MUL, x, b, stem), du, stem);
        return map2 (G, NAPKIN_FN_ADD, a, b, stem);
      }
    case NAPKIN_FN_ERF:                  /* 2/√π e^(−x²) */
      t = map1 (G, NAPKIN_FN_NEG, map1 (G, NAPKIN_FN_SQUARE, x, stem), stem);
      return affine (G, NAPKIN_FN_SCALE, map1 (G, NAPKIN_FN_EXP, t, stem), TWO_SQRTPI, NULL, stem);
    default:
      g_assert_not_reached ();
    }
}

static void
map_adjoint (Grad       *G,
             guint       v,
             const char *gy,
             const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  int a = napkin_diagram_input_source (G->fwd, v, 0);
  int b = napkin_op_n_inputs (node) > 1 ? napkin_diagram_input_source (G->fwd, v, 1) : -1;

  switch (node->fn)
    {
    case NAPKIN_FN_SCALE:
      if (G->needs[a])
        contribute (G, a, affine (G, NAPKIN_FN_SCALE, gy, node->alpha, node->alpha_expr, stem));
      return;
    case NAPKIN_FN_SHIFT:
      if (G->needs[a])
        contribute (G, a, gy);
      return;
    case NAPKIN_FN_NEG:
      if (G->needs[a])
        contribute (G, a, map1 (G, NAPKIN_FN_NEG, gy, stem));
      return;
    case NAPKIN_FN_CAST:
      if (G->needs[a])
        contribute (G, a, cast_to (G, gy, grad_dtype (napkin_diagram_node_type (G->fwd, a)->dtype), stem));
      return;
    case NAPKIN_FN_STEP:
      return;                            /* zero almost everywhere */
    case NAPKIN_FN_SQRT:
      if (G->needs[a])
        contribute (G, a, map2 (G, NAPKIN_FN_DIV, gy, unary_derivative (G, v, stem), stem));
      return;
    case NAPKIN_FN_LOG:                  /* g / x */
      if (G->needs[a])
        contribute (G, a, map2 (G, NAPKIN_FN_DIV, gy, source (G, v, 0), stem));
      return;
    case NAPKIN_FN_ADD:
    case NAPKIN_FN_SUB:
      if (G->needs[a])
        contribute_reduced (G, a, gy, stem);
      if (G->needs[b])
        contribute_reduced (G, b, node->fn == NAPKIN_FN_SUB ? map1 (G, NAPKIN_FN_NEG, gy, stem) : gy, stem);
      return;
    case NAPKIN_FN_MUL:
      if (G->needs[a])
        contribute_reduced (G, a, map2 (G, NAPKIN_FN_MUL, gy, source (G, v, 1), stem), stem);
      if (G->needs[b])
        contribute_reduced (G, b, map2 (G, NAPKIN_FN_MUL, gy, source (G, v, 0), stem), stem);
      return;
    case NAPKIN_FN_DIV:
      /* y = a / b: da = g / b, db = −g y / b */
      if (G->needs[a])
        contribute_reduced (G, a, map2 (G, NAPKIN_FN_DIV, gy, source (G, v, 1), stem), stem);
      if (G->needs[b])
        {
          const char *t = map2 (G, NAPKIN_FN_MUL, gy, saved (G, v), stem);

          t = map2 (G, NAPKIN_FN_DIV, t, source (G, v, 1), stem);
          contribute_reduced (G, b, map1 (G, NAPKIN_FN_NEG, t, stem), stem);
        }
      return;
    case NAPKIN_FN_MAX:
    case NAPKIN_FN_MIN:
      {
        /* the gradient goes to a where a wins strictly (max: a − b > 0, min: b − a > 0),
         * else to b */
        const char *first = source (G, v, node->fn == NAPKIN_FN_MAX ? 0 : 1);
        const char *second = source (G, v, node->fn == NAPKIN_FN_MAX ? 1 : 0);
        const char *wins = map1 (G, NAPKIN_FN_STEP, map2 (G, NAPKIN_FN_SUB, first, second, stem), stem);
        if (G->needs[a])
          contribute_reduced (G, a, map2 (G, NAPKIN_FN_MUL, gy, wins, stem), stem);
        if (G->needs[b])
          {
            const char *loses = affine (G, NAPKIN_FN_SHIFT, map1 (G, NAPKIN_FN_NEG, wins, stem), 1, NULL, stem);

            contribute_reduced (G, b, map2 (G, NAPKIN_FN_MUL, gy, loses, stem), stem);
          }
        return;
      }
    default:
      if (G->needs[a])
        contribute (G, a, map2 (G, NAPKIN_FN_MUL, gy, unary_derivative (G, v, stem), stem));
      return;
    }
}

/* y = a·b summed over the axes out lacks: da = Σ g·b over what a lacks, db = Σ a·g. */
static void
contract_adjoint (Grad       *G,
                  guint       v,
                  const char *gy,
                  const char *stem)
{
  int a = napkin_diagram_input_source (G->fwd, v, 0);
  int b = napkin_diagram_input_source (G->fwd, v, 1);
  NapkinTensorType ta = *napkin_diagram_node_type (G->fwd, a), tb = *napkin_diagram_node_type (G->fwd, b);

  ta.dtype = grad_dtype (ta.dtype);
  tb.dtype = grad_dtype (tb.dtype);
  if (G->needs[a])
    contribute (G, a, contract (G, gy, source (G, v, 1), &ta, stem));
  if (G->needs[b])
    contribute (G, b, contract (G, source (G, v, 0), gy, &tb, stem));
}

/* A float narrower than fp32 (fp16, bf16, fp8). */
static gboolean
narrow_float (NapkinDtype t)
{
  return napkin_dtype_is_float (t) && napkin_dtype_bytes (t) < 4;
}

/* x in fp32 where it is a narrower float: the softmax's adjoint works in fp32 up to its
 * result, as the fused backward kernels do on chip. */
static const char *
wide (Grad       *G,
      const char *x,
      const char *stem)
{
  return narrow_float (type_of (G, x)->dtype) ? cast_to (G, x, NAPKIN_DTYPE_FP32, stem) : x;
}

/* softmax over k: dx = p (g − Σ_k p g) */
static void
softmax_adjoint (Grad       *G,
                 guint       v,
                 const char *gy,
                 const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  int x = napkin_diagram_input_source (G->fwd, v, 0);
  const char *p = saved (G, v);
  const char *row;

  if (!G->needs[x])
    return;
  /* Σ_k p⊙g, the products as g is stored, their sum in fp32: the sum of the very g it is
   * subtracted from, so that Σ_k dx stays 0 (docs/training.md, "The row term"; the fused
   * backward computes it on chip from P and dP) */
  {
    NapkinNode *r = napkin_node_new (NULL, NAPKIN_OP_REDUCE);
    const char *pg = map2 (G, NAPKIN_FN_MUL, p, gy, stem);

    r->reduce = NAPKIN_REDUCE_SUM;
    r->axis = g_strdup (node->axis);
    if (narrow_float (type_of (G, pg)->dtype))
      {
        r->has_dtype = TRUE;
        r->dtype = NAPKIN_DTYPE_FP32;
      }
    row = add_node (G, r, stem, (const char *[]) { pg }, 1);
  }
  /* g − Σ_k p g in fp32, rounded after: g is close to the row's sum where the keys'
   * values are alike (a bias in V), and the sum rounded to 16 bits is an error shared by
   * the whole row, which the products after sum up (docs/training.md, "The row term") */
  contribute (G, x, map2 (G, NAPKIN_FN_MUL, p,
                          cast_to (G, map2 (G, NAPKIN_FN_SUB, wide (G, gy, stem), wide (G, row, stem), stem),
                                   type_of (G, gy)->dtype, stem), stem));
}

static const char *
row_mean (Grad       *G,
          const char *x,
          const char *axis,
          const char *stem)
{
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_REDUCE);

  node->reduce = NAPKIN_REDUCE_MEAN;
  node->axis = g_strdup (axis);
  return add_node (G, node, stem, (const char *[]) { x }, 1);
}

/* y = (x − μ) r with r = 1/√(var + ε) (rmsnorm: μ = 0, var the mean square):
 * dx = r (g − mean g − y mean (g y)), without the mean g for rmsnorm. The forward's
 * row statistic r is recomputed beside it and kept (it is what a training forward
 * stores). */
static void
normalize_adjoint (Grad       *G,
                   guint       v,
                   const char *gy,
                   const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  int xi = napkin_diagram_input_source (G->fwd, v, 0);
  g_autofree char *stat_stem = g_strdup_printf ("%s_rstd", node->id);
  const char *x, *y, *centred, *r, *t;

  if (!G->needs[xi])
    return;
  x = source (G, v, 0);
  y = saved (G, v);
  centred = x;
  if (node->norm == NAPKIN_NORM_LAYERNORM)
    centred = map2 (G, NAPKIN_FN_SUB, x, row_mean (G, x, node->axis, stat_stem), stat_stem);
  r = row_mean (G, map1 (G, NAPKIN_FN_SQUARE, centred, stat_stem), node->axis, stat_stem);
  r = map1 (G, NAPKIN_FN_RSQRT, affine (G, NAPKIN_FN_SHIFT, r, node->eps, NULL, stat_stem), stat_stem);
  g_hash_table_add (G->saved, (gpointer) r);

  t = map2 (G, NAPKIN_FN_SUB, gy, map2 (G, NAPKIN_FN_MUL, y, row_mean (G, map2 (G, NAPKIN_FN_MUL, gy, y, stem),
                                                                       node->axis, stem), stem), stem);
  if (node->norm == NAPKIN_NORM_LAYERNORM)
    t = map2 (G, NAPKIN_FN_SUB, t, row_mean (G, gy, node->axis, stem), stem);
  contribute (G, xi, map2 (G, NAPKIN_FN_MUL, t, r, stem));
}

static void
reduce_adjoint (Grad       *G,
                guint       v,
                const char *gy,
                const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  int x = napkin_diagram_input_source (G->fwd, v, 0);
  const char *dx;

  if (!G->needs[x])
    return;
  switch (node->reduce)
    {
    case NAPKIN_REDUCE_SUM:
    case NAPKIN_REDUCE_MEAN:
      /* the gradient copied along the axis: added to zeros shaped like x */
      dx = map2 (G, NAPKIN_FN_ADD, zeros_like (G, napkin_diagram_node (G->d, x)->id, stem), gy, stem);
      if (node->reduce == NAPKIN_REDUCE_MEAN)
        {
          g_autofree char *expr = g_strdup_printf ("1/%s", node->axis);

          dx = affine (G, NAPKIN_FN_SCALE, dx, 0, expr, stem);
        }
      break;
    case NAPKIN_REDUCE_MAX:
      {
        /* to every element equal to the maximum: 1 − step (max − x) */
        const char *ties = map2 (G, NAPKIN_FN_SUB, saved (G, v), source (G, v, 0), stem);

        ties = map1 (G, NAPKIN_FN_NEG, map1 (G, NAPKIN_FN_STEP, ties, stem), stem);
        dx = map2 (G, NAPKIN_FN_MUL, affine (G, NAPKIN_FN_SHIFT, ties, 1, NULL, stem), gy, stem);
        break;
      }
    default:
      g_assert_not_reached ();
    }
  contribute (G, x, dx);
}

/* A causal or window mask keeps what it keeps of the gradient, zero elsewhere: the same
 * mask turns zeros into 0 or −∞, and exp of that is the 1/0 indicator. An additive
 * tensor mask passes the gradient to both operands; a boolean (int8) one has none. */
static void
mask_adjoint (Grad       *G,
              guint       v,
              const char *gy,
              const char *stem)
{
  const NapkinNode *node = napkin_diagram_node (G->fwd, v);
  int x = napkin_diagram_input_source (G->fwd, v, 0);
  int m = node->mask == NAPKIN_MASK_TENSOR ? napkin_diagram_input_source (G->fwd, v, 1) : -1;
  gboolean additive = m >= 0 && napkin_dtype_is_float (napkin_diagram_node_type (G->fwd, m)->dtype);

  if (G->needs[x])
    {
      if (additive)
        contribute (G, x, gy);
      else
        {
          NapkinNode *copy = napkin_item_copy (NAPKIN_ITEM_NODE, node);
          const char *zeros = zeros_like (G, gy, stem);
          const char *kept;

          g_clear_pointer (&copy->label, g_free);
          if (copy->extra != NULL)
            json_object_put (g_steal_pointer (&copy->extra));
          copy->has_dtype = FALSE;
          if (m >= 0)
            kept = add_node (G, copy, stem, (const char *[]) { zeros, source (G, v, 1) }, 2);
          else
            kept = add_node (G, copy, stem, (const char *[]) { zeros }, 1);
          kept = map1 (G, NAPKIN_FN_EXP, kept, stem);
          contribute (G, x, map2 (G, NAPKIN_FN_MUL, gy, kept, stem));
        }
    }
  if (m >= 0 && additive && G->needs[m])
    contribute_reduced (G, m, gy, stem);
}

/* y = rearrange (x): x's gradient is the same rearrangement undone. A merge or split
 * reads its input in its own order, so the gradient is put in y's order first. */
static void
rearrange_adjoint (Grad       *G,
                   guint       v,
                   const char *gy,
                   const char *stem)
{
  int x = napkin_diagram_input_source (G->fwd, v, 0);
  const NapkinTensorType *ty = napkin_diagram_node_type (G->fwd, v);
  NapkinTensorType have = *type_of (G, gy);
  NapkinNode *node;

  if (!G->needs[x])
    return;
  if (memcmp (have.axes, ty->axes, sizeof (guint) * ty->n_axes) != 0 || have.n_axes != ty->n_axes)
    {
      node = napkin_node_new (NULL, NAPKIN_OP_REARRANGE);
      node->out = axes_names (G, ty);
      gy = add_node (G, node, stem, (const char *[]) { gy }, 1);
    }
  node = napkin_node_new (NULL, NAPKIN_OP_REARRANGE);
  node->out = axes_names (G, napkin_diagram_node_type (G->fwd, x));
  contribute (G, x, add_node (G, node, stem, (const char *[]) { gy }, 1));
}

/* ---- the transform -------------------------------------------------------------------- */

static gboolean
refuse (GError          **error,
        NapkinGradError   code,
        NapkinDiagram    *d,
        guint             v,
        const char       *why)
{
  const NapkinNode *node = napkin_diagram_node (d, v);
  g_autofree char *path = g_strdup_printf ("nodes[%u]", v);
  g_autofree char *words = g_strdup_printf (_("The %s “%s” cannot be differentiated: %s"),
                                            napkin_describe_kind (node->kind), node->id, why);
  g_autofree char *message = napkin_error_with_path (words, path);

  g_set_error_literal (error, NAPKIN_GRAD_ERROR, code, message);
  return FALSE;
}

gboolean
napkin_grad_input_has_gradient (NapkinDiagram  *forward,
                                const char     *name,
                                char          **why)
{
  int t = napkin_diagram_find_tensor (forward, name);
  const NapkinTensor *tensor = t >= 0 ? napkin_diagram_tensor (forward, (guint) t) : NULL;

  if (why != NULL)
    *why = NULL;
  if (tensor == NULL)
    {
      if (why != NULL)
        *why = g_strdup_printf (_("“%s” is not a tensor of the diagram"), name);
      return FALSE;
    }
  if (napkin_tensor_get_constant (tensor) != NULL)
    {
      if (why != NULL)
        *why = g_strdup_printf (_("a constant (%s): it has no gradient"), napkin_tensor_get_constant (tensor));
      return FALSE;
    }
  if (!napkin_dtype_is_float (tensor->dtype))
    {
      if (why != NULL)
        *why = g_strdup_printf (_("%s: it has no gradient"), napkin_dtype_to_string (tensor->dtype));
      return FALSE;
    }
  return TRUE;
}

static gboolean
choose_inputs (Grad               *G,
               const char * const *wrt,
               GString            *notes,
               GError            **error)
{
  guint n = napkin_diagram_n_nodes (G->fwd);
  g_autoptr(GPtrArray) names = g_ptr_array_new ();

  for (guint v = 0; v < n; v++)
    {
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);

      if (node->kind == NAPKIN_OP_INPUT && !g_ptr_array_find_with_equal_func (names, node->tensor, g_str_equal, NULL))
        g_ptr_array_add (names, node->tensor);
    }

  if (wrt == NULL)
    {
      for (guint i = 0; i < names->len; i++)
        {
          const char *name = g_ptr_array_index (names, i);
          g_autofree char *why = NULL;

          if (napkin_grad_input_has_gradient (G->fwd, name, &why))
            g_hash_table_add (G->wrt, (gpointer) name);
          else if (notes != NULL)
            g_string_append_printf (notes, _("The input “%s” is %s.\n"), name, why);
        }
      return TRUE;
    }

  for (guint i = 0; wrt[i] != NULL; i++)
    {
      int t = napkin_diagram_find_tensor (G->fwd, wrt[i]);

      if (!g_ptr_array_find_with_equal_func (names, wrt[i], g_str_equal, NULL))
        {
          g_autoptr(GString) list = g_string_new (NULL);

          for (guint k = 0; k < names->len; k++)
            g_string_append_printf (list, "%s%s", k ? ", " : "", (char *) g_ptr_array_index (names, k));
          g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_UNKNOWN_INPUT,
                       _("“%s” is not an input of the diagram (its inputs: %s)"), wrt[i], list->str);
          return FALSE;
        }
      if (napkin_tensor_get_constant (napkin_diagram_tensor (G->fwd, t)) != NULL)
        {
          g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE,
                       _("The input “%s” is a constant (%s): it has no gradient"), wrt[i],
                       napkin_tensor_get_constant (napkin_diagram_tensor (G->fwd, t)));
          return FALSE;
        }
      if (!napkin_dtype_is_float (napkin_diagram_tensor (G->fwd, t)->dtype))
        {
          g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE,
                       _("The input “%s” is %s: an integer tensor has no gradient"), wrt[i],
                       napkin_dtype_to_string (napkin_diagram_tensor (G->fwd, t)->dtype));
          return FALSE;
        }
      g_hash_table_add (G->wrt, (gpointer) napkin_diagram_tensor (G->fwd, t)->name);
    }
  return TRUE;
}

/* Which forward values depend on the inputs asked for and feed an output, and whether
 * each of those has a derivative. */
static gboolean
mark_paths (Grad    *G,
            GError **error)
{
  const guint *order = napkin_diagram_topo_order (G->fwd);
  guint n = G->n_fwd;
  gboolean any_output = FALSE;

  for (guint i = 0; i < n; i++)
    {
      guint v = order[i];
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);

      if (node->kind == NAPKIN_OP_INPUT)
        G->needs[v] = g_hash_table_contains (G->wrt, node->tensor);
      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        G->needs[v] |= G->needs[napkin_diagram_input_source (G->fwd, v, p)];
    }
  for (int i = n - 1; i >= 0; i--)
    {
      guint v = order[i];
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (G->fwd, v, &n_consumers);

      G->live[v] = node->kind == NAPKIN_OP_OUTPUT;
      any_output |= G->live[v];
      for (guint c = 0; c < n_consumers; c++)
        G->live[v] |= G->live[consumers[c]];
    }
  if (!any_output)
    {
      g_set_error_literal (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NO_OUTPUTS,
                           _("The diagram has no outputs: there is nothing to differentiate"));
      return FALSE;
    }

  for (guint v = 0; v < n; v++)
    {
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);
      const NapkinTensorType *type = napkin_diagram_node_type (G->fwd, v);

      if (!G->needs[v] || !G->live[v] || node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT)
        continue;
      if (!napkin_dtype_is_float (type->dtype))
        {
          g_autofree char *why = g_strdup_printf (_("its result is %s, an integer, which has no gradient"),
                                                  napkin_dtype_to_string (type->dtype));

          return refuse (error, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE, G->fwd, v, why);
        }
    }
  return TRUE;
}

static const char *
add_input (Grad                   *G,
           const char             *stem,
           const NapkinTensorType *type)
{
  NapkinTensor *tensor = g_new0 (NapkinTensor, 1);
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_INPUT);

  tensor->name = fresh_name (G->d, NAPKIN_ITEM_TENSOR, stem);
  tensor->axes = axes_names (G, type);
  tensor->dtype = type->dtype;
  node->tensor = g_strdup (tensor->name);
  napkin_diagram_insert_item (G->d, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (G->d), tensor);
  return add_node (G, node, tensor->name, NULL, 0);
}

static void
add_output (Grad                   *G,
            const char             *stem,
            const char             *value,
            char                  **axes,
            NapkinDtype             dtype)
{
  NapkinTensor *tensor = g_new0 (NapkinTensor, 1);
  NapkinNode *node = napkin_node_new (NULL, NAPKIN_OP_OUTPUT);

  /* a gradient that is an output's gradient unchanged (through a shift, an add) is
   * wired straight from the input d_O: the lowering and the plan copy it */
  value = cast_to (G, value, dtype, stem);
  tensor->name = fresh_name (G->d, NAPKIN_ITEM_TENSOR, stem);
  tensor->axes = axes;
  tensor->dtype = dtype;
  node->tensor = g_strdup (tensor->name);
  napkin_diagram_insert_item (G->d, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (G->d), tensor);
  add_node (G, node, tensor->name, (const char *[]) { value }, 1);
}

/* Each output's gradient: the input d_O, or 1 for an output of no axes (a loss). */
static void
seed_outputs (Grad *G)
{
  for (guint v = 0; v < G->n_fwd; v++)
    {
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);
      int src;
      g_autofree char *stem = NULL;
      const NapkinTensorType *type;

      if (node->kind != NAPKIN_OP_OUTPUT)
        continue;
      src = napkin_diagram_input_source (G->fwd, v, 0);
      if (!G->needs[src])
        continue;
      type = napkin_diagram_node_type (G->fwd, src);
      stem = g_strdup_printf ("d_%s", node->tensor);
      if (type->n_axes == 0)
        {
          /* 0·step(L) + 1: a diagram has no constants, so the one is made from the loss */
          const char *one = zeros_like (G, napkin_diagram_node (G->d, src)->id, stem);

          contribute (G, src, affine (G, NAPKIN_FN_SHIFT, one, 1, NULL, stem));
        }
      else
        {
          const NapkinTensor *t = napkin_diagram_tensor (G->fwd, napkin_diagram_find_tensor (G->fwd, node->tensor));
          NapkinTensorType seed = *type;

          /* the gradient lies in memory as the output does */
          for (guint i = 0; i < seed.n_axes; i++)
            seed.axes[i] = napkin_diagram_find_axis (G->fwd, t->axes[i]);
          seed.dtype = grad_dtype (t->dtype);
          contribute (G, src, add_input (G, stem, &seed));
        }
    }
}

static void
backward (Grad *G)
{
  /* the forward is never edited, so its cached order stays valid */
  const guint *order = napkin_diagram_topo_order (G->fwd);

  for (int i = G->n_fwd - 1; i >= 0; i--)
    {
      guint v = order[i];
      const NapkinNode *node = napkin_diagram_node (G->fwd, v);
      g_autofree char *stem = g_strdup_printf ("d_%s", node->id);
      const char *gy;

      if (!G->needs[v] || !G->live[v] || node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT)
        continue;
      gy = gradient (G, v);
      if (gy == NULL)
        continue;
      G->grads[v] = gy;
      switch (node->kind)
        {
        case NAPKIN_OP_CONTRACT: contract_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_MAP: map_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_REDUCE: reduce_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_SOFTMAX: softmax_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_NORMALIZE: normalize_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_REARRANGE: rearrange_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_MASK: mask_adjoint (G, v, gy, stem); break;
        case NAPKIN_OP_INPUT:
        case NAPKIN_OP_OUTPUT:
        case NAPKIN_N_OPS:
        default:
          g_assert_not_reached ();
        }
    }
}

/* d_X for each input asked for: the sum over the input operations that read X. */
static void
gradient_outputs (Grad *G)
{
  guint n_tensors = napkin_diagram_n_tensors (G->fwd);

  for (guint t = 0; t < n_tensors; t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (G->fwd, t);
      g_autofree char *stem = g_strdup_printf ("d_%s", tensor->name);
      const char *sum = NULL, *first = NULL;

      if (!g_hash_table_contains (G->wrt, tensor->name))
        continue;
      for (guint v = 0; v < G->n_fwd; v++)
        {
          const NapkinNode *node = napkin_diagram_node (G->fwd, v);
          const char *g;

          if (node->kind != NAPKIN_OP_INPUT || g_strcmp0 (node->tensor, tensor->name) != 0)
            continue;
          first = first ? first : node->id;
          g = gradient (G, v);
          if (g != NULL)
            sum = sum ? map2 (G, NAPKIN_FN_ADD, sum, g, stem) : g;
        }
      /* an input no output depends on: its gradient is zero */
      if (sum == NULL)
        sum = zeros_like (G, first, stem);
      add_output (G, stem, sum, g_strdupv (tensor->axes), grad_dtype (tensor->dtype));
    }
}

/* The forward values the backward reads, as outputs `saved_<id>` (what a training
 * forward stores), unless an output writes them already. */
static void
saved_outputs (Grad *G)
{
  guint n = napkin_diagram_n_nodes (G->d);

  for (guint v = 0; v < n; v++)
    {
      const NapkinNode *node;
      guint n_consumers;
      const guint *consumers;
      gboolean written = FALSE;
      g_autofree char *stem = NULL;
      const NapkinTensorType *type;

      if (!g_hash_table_contains (G->saved, napkin_diagram_node (G->d, v)->id))
        continue;
      consumers = napkin_diagram_consumers (G->d, v, &n_consumers);
      for (guint c = 0; c < n_consumers; c++)
        written |= napkin_diagram_node (G->d, consumers[c])->kind == NAPKIN_OP_OUTPUT;
      if (written)
        continue;
      node = napkin_diagram_node (G->d, v);
      type = napkin_diagram_node_type (G->d, v);
      stem = g_strdup_printf ("saved_%s", node->id);
      add_output (G, stem, node->id, axes_names (G, type), type->dtype);
    }
}

NapkinDiagram *
napkin_grad_diagram (NapkinDiagram       *forward,
                     const char * const  *wrt,
                     GString             *notes,
                     GError             **error)
{
  return napkin_grad_diagram_recompute (forward, wrt, NULL, notes, error);
}

/* Marks the forward operations named in `names` as recomputed; FALSE with an error
 * naming one that is not an operation the backward can make again. */
static gboolean
choose_recompute (Grad               *G,
                  const char * const *names,
                  GError            **error)
{
  for (guint i = 0; names != NULL && names[i] != NULL; i++)
    {
      int v = napkin_diagram_find (G->fwd, NAPKIN_ITEM_NODE, names[i]);

      if (v < 0 || !recomputable (napkin_diagram_node (G->fwd, v)))
        {
          g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE,
                       _("“%s” is not an operation whose value the backward can recompute (a product, map, mask, "
                         "softmax or rearrangement)"), names[i]);
          return FALSE;
        }
      G->recompute[v] = TRUE;
    }
  return TRUE;
}

NapkinDiagram *
napkin_grad_diagram_recompute (NapkinDiagram       *forward,
                               const char * const  *wrt,
                               const char * const  *recompute,
                               GString             *notes,
                               GError             **error)
{
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(GError) invalid = NULL;
  Grad G = { 0 };
  gboolean ok = FALSE;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (forward), NULL);
  g_return_val_if_fail (error == NULL || *error == NULL, NULL);

  if (!napkin_diagram_validate (forward, &invalid))
    {
      g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_INVALID, "%s", invalid->message);
      return NULL;
    }

  d = napkin_diagram_copy_without_extras (forward);
  /* a tensor keeps what it says of its values (a constant the runner and the printers
   * make, the graph value it holds): the backward reads the same tensors */
  for (guint t = 0; t < napkin_diagram_n_tensors (forward); t++)
    if (napkin_diagram_tensor (forward, t)->extra != NULL)
      napkin_diagram_replace_item (d, NAPKIN_ITEM_TENSOR, t,
                                   napkin_item_copy (NAPKIN_ITEM_TENSOR, napkin_diagram_tensor (forward, t)));
  while (napkin_diagram_n_regions (d) > 0)
    napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (d, NAPKIN_ITEM_REGION, 0));
  napkin_diagram_set_gpus (d, NULL);

  G.fwd = forward;
  G.d = d;
  G.n_fwd = napkin_diagram_n_nodes (forward);
  G.needs = g_new0 (gboolean, G.n_fwd);
  G.live = g_new0 (gboolean, G.n_fwd);
  G.contribs = g_new0 (GPtrArray *, G.n_fwd);
  for (guint v = 0; v < G.n_fwd; v++)
    G.contribs[v] = g_ptr_array_new ();
  G.wrt = g_hash_table_new (g_str_hash, g_str_equal);
  G.saved = g_hash_table_new (g_str_hash, g_str_equal);
  G.recompute = g_new0 (gboolean, G.n_fwd);
  G.copies = g_new0 (const char *, G.n_fwd);
  G.grads = g_new0 (const char *, G.n_fwd);

  if (!choose_recompute (&G, recompute, error) || !choose_inputs (&G, wrt, notes, error) || !mark_paths (&G, error))
    goto out;

  seed_outputs (&G);
  backward (&G);
  gradient_outputs (&G);
  saved_outputs (&G);

  {
    const char *title = napkin_diagram_get_title (forward);
    g_autofree char *new_title = g_strdup_printf (_("%s — backward"), title && *title ? title : _("Diagram"));

    napkin_diagram_set_title (d, new_title);
    napkin_diagram_set_description (d, _("The forward operations, the values they keep for the backward "
                                         "(saved_*), and the gradients d_* of the inputs (docs/training.md)."));
  }
  napkin_import_layout (d);

  if (!napkin_diagram_validate (d, &invalid))
    {
      g_set_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_FAILED,
                   "The backward diagram does not validate (a defect of Napkin): %s", invalid->message);
      goto out;
    }
  ok = TRUE;

out:
  for (guint v = 0; v < G.n_fwd; v++)
    g_ptr_array_unref (G.contribs[v]);
  g_free (G.contribs);
  g_free (G.recompute);
  g_free (G.copies);
  g_free (G.grads);
  g_free (G.needs);
  g_free (G.live);
  g_hash_table_unref (G.saved);
  g_hash_table_unref (G.wrt);
  return ok ? g_steal_pointer (&d) : NULL;
}
