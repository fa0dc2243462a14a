/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-lower"

#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-interp.h"

/* ---- element types ----------------------------------------------------------------------- */

/* Rounds to `mant` explicit mantissa bits, nearest-even, keeping fp32's exponent range
 * except for the smallest normal `min_exp` (below it, subnormal spacing). */
static double
round_bits (double x,
            int    mant,
            int    min_exp,
            double max_value)
{
  int e;
  double q;

  if (x == 0 || !isfinite (x))
    return x;
  frexp (x, &e);
  e -= 1;                         /* x = m · 2^e with 1 ≤ |m| < 2 */
  if (e < min_exp)
    e = min_exp;
  q = ldexp (1.0, e - mant);
  x = nearbyint (x / q) * q;
  if (fabs (x) > max_value)
    return copysign (INFINITY, x);
  return x;
}

double
napkin_round_to_dtype (double      value,
                       NapkinDtype dtype)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP32:
      return (double) (float) value;
    case NAPKIN_DTYPE_TF32:
      return round_bits (value, 10, -126, 3.4e38);
    case NAPKIN_DTYPE_FP16:
      return round_bits (value, 10, -14, 65504.0);
    case NAPKIN_DTYPE_BF16:
      return round_bits (value, 7, -126, 3.39e38);
    case NAPKIN_DTYPE_FP8_E4M3:
      return round_bits (value, 3, -6, 448.0);
    case NAPKIN_DTYPE_FP8_E5M2:
      return round_bits (value, 2, -14, 57344.0);
    case NAPKIN_DTYPE_INT8:
      return CLAMP (nearbyint (value), -128.0, 127.0);
    case NAPKIN_N_DTYPES:
    default:
      g_assert_not_reached ();
    }
}

double
napkin_dtype_tolerance (NapkinDtype dtype)
{
  switch (dtype)
    {
    case NAPKIN_DTYPE_FP32:
      return 1e-4;
    case NAPKIN_DTYPE_TF32:
      return 5e-3;
    case NAPKIN_DTYPE_FP16:
      return 1e-2;
    case NAPKIN_DTYPE_BF16:
      return 3e-2;
    case NAPKIN_DTYPE_FP8_E4M3:
    case NAPKIN_DTYPE_FP8_E5M2:
      return 1.5e-1;
    case NAPKIN_DTYPE_INT8:
      return 1e-2;
    case NAPKIN_N_DTYPES:
    default:
      g_assert_not_reached ();
    }
}

/* ---- cost ------------------------------------------------------------------------------- */

/* Element steps of statements under loops whose current extents are `extent`. */
static gboolean
count_steps (const NapkinIrProgram *prog,
             GPtrArray             *stmts,
             gint64                *extent,
             gint64                 trips,
             gint64                *steps)
{
  for (guint i = 0; i < stmts->len; i++)
    {
      const NapkinIrStmt *s = g_ptr_array_index (stmts, i);
      guint axes[NAPKIN_MAX_RANK * 5];
      guint n_axes = 0;
      gint64 n = 1;

      if (s->kind == NAPKIN_STMT_LOOP)
        {
          gint64 saved = extent[s->axis];
          gint64 count = s->tile > 0 ? (saved + s->tile - 1) / s->tile : 1;
          gint64 inner;
          gboolean ok;

          if (!napkin_mul_checked (trips, count, &inner))
            return FALSE;
          if (s->tile > 0)
            extent[s->axis] = MIN (s->tile, saved);
          ok = count_steps (prog, s->body, extent, inner, steps);
          extent[s->axis] = saved;
          if (!ok)
            return FALSE;
          continue;
        }
      if (s->dst < 0)
        continue;

      /* A computation visits the union of its operands' axes (a contraction: its
       * output times what it sums over); the others their destination. */
      for (int k = -1; k < (int) G_N_ELEMENTS (s->src); k++)
        {
          int id = k < 0 ? s->dst : s->src[k];
          const NapkinIrBuffer *b;

          if (id < 0 || (k >= 0 && s->kind != NAPKIN_STMT_COMPUTE))
            continue;
          b = napkin_ir_buffer (prog, id);
          for (guint a = 0; a < b->n_axes; a++)
            {
              gboolean seen = FALSE;

              for (guint j = 0; j < n_axes && !seen; j++)
                seen = axes[j] == b->axes[a];
              if (!seen)
                axes[n_axes++] = b->axes[a];
            }
        }
      for (guint a = 0; a < n_axes; a++)
        if (!napkin_mul_checked (n, extent[axes[a]], &n))
          return FALSE;
      if (!napkin_mul_checked (n, trips, &n) || !napkin_add_checked (*steps, n, steps))
        return FALSE;
    }
  return TRUE;
}

gboolean
napkin_ir_interpret_cost (const NapkinIrProgram *program,
                          gint64                *bytes,
                          gint64                *steps)
{
  NapkinDiagram *d;
  guint n_axes;
  g_autofree gint64 *extent = NULL;
  gint64 elements = 0;

  g_return_val_if_fail (program != NULL && bytes != NULL && steps != NULL, FALSE);

  d = program->diagram;
  n_axes = napkin_diagram_n_axes (d);
  *bytes = 0;
  *steps = 0;

  /* The tensor set, then the buffers: all float64. */
  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      gint64 n = 1;

      for (guint a = 0; tensor->axes[a]; a++)
        if (!napkin_mul_checked (n, napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, tensor->axes[a])), &n))
          return FALSE;
      if (!napkin_add_checked (elements, n, &elements))
        return FALSE;
    }
  for (guint b = 0; b < program->buffers->len; b++)
    {
      const NapkinIrBuffer *buf = napkin_ir_buffer (program, b);
      gint64 n = 1;

      for (guint a = 0; a < buf->n_axes; a++)
        if (!napkin_mul_checked (n, buf->extent[a], &n))
          return FALSE;
      if (!napkin_add_checked (elements, n, &elements))
        return FALSE;
    }
  if (!napkin_mul_checked (elements, sizeof (double), bytes))
    return FALSE;

  extent = g_new0 (gint64, n_axes + 1);
  for (guint k = 0; k < program->kernels->len; k++)
    {
      const NapkinIrKernel *kernel = g_ptr_array_index (program->kernels, k);

      for (guint a = 0; a < n_axes; a++)
        extent[a] = napkin_diagram_axis_size (d, a);
      if (!count_steps (program, kernel->body, extent, 1, steps))
        return FALSE;
    }
  return TRUE;
}

gboolean
napkin_ir_interpret_check_limits (const NapkinIrProgram *const *programs,
                                  guint                         n_programs,
                                  GError                      **error)
{
  gint64 bytes = 0, steps = 0;
  gboolean overflow = FALSE;
  NapkinDiagram *d;
  const NapkinTensor *largest = NULL;
  gint64 largest_n = 0;

  g_return_val_if_fail (programs != NULL && n_programs > 0, FALSE);

  for (guint i = 0; i < n_programs && !overflow; i++)
    {
      gint64 b, s;

      overflow = !napkin_ir_interpret_cost (programs[i], &b, &s)
                 || !napkin_add_checked (bytes, b, &bytes) || !napkin_add_checked (steps, s, &steps);
    }
  if (!overflow && bytes <= NAPKIN_INTERP_MAX_BYTES && steps <= NAPKIN_INTERP_MAX_STEPS)
    return TRUE;

  d = programs[0]->diagram;
  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      gint64 n = 1;

      for (guint a = 0; tensor->axes[a]; a++)
        if (!napkin_mul_checked (n, napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, tensor->axes[a])), &n))
          n = G_MAXINT64;
      if (largest == NULL || n > largest_n)
        largest = tensor, largest_n = n;
    }

  {
    g_autoptr(GString) shape = g_string_new (NULL);

    for (guint a = 0; largest != NULL && largest->axes[a]; a++)
      g_string_append_printf (shape, "%s%s=%" G_GINT64_FORMAT, a ? ", " : "", largest->axes[a],
                              napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, largest->axes[a])));
    if (overflow)
      g_set_error (error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_TOO_LARGE,
                   "too large for the CPU interpreter: its memory or work overflows 64 bits "
                   "(largest tensor %s[%s]); shrink the axes with --axis NAME=SIZE",
                   largest ? largest->name : "?", shape->str);
    else
      g_set_error (error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_TOO_LARGE,
                   "too large for the CPU interpreter: it would need %" G_GINT64_FORMAT " MB of memory "
                   "and %" G_GINT64_FORMAT " million element steps (at most %" G_GINT64_FORMAT " MB and %"
                   G_GINT64_FORMAT " million; largest tensor %s[%s], %" G_GINT64_FORMAT " elements); "
                   "shrink the axes with --axis NAME=SIZE",
                   (bytes + 999999) / 1000000, (steps + 999999) / 1000000, NAPKIN_INTERP_MAX_BYTES / 1000000,
                   NAPKIN_INTERP_MAX_STEPS / 1000000, largest ? largest->name : "?", shape->str, largest_n);
  }
  return FALSE;
}

/* ---- tensor sets ------------------------------------------------------------------------- */

/* The node whose value reaches `node` through shape-only steps (rearranges and casts),
 * so that a weight transposed or cast before its product still counts as its operand. */
static int
skip_reshapes (NapkinDiagram *diagram,
               int            node)
{
  while (node >= 0)
    {
      const NapkinNode *n = napkin_diagram_node (diagram, node);

      if (n->kind != NAPKIN_OP_REARRANGE && !(n->kind == NAPKIN_OP_MAP && n->fn == NAPKIN_FN_CAST))
        break;
      node = napkin_diagram_input_source (diagram, node, 0);
    }
  return node;
}

/* K of a contraction: the elements of the axes both operands carry and the result drops. */
static gint64
contracted_elements (NapkinDiagram *diagram,
                     guint          node)
{
  int a = napkin_diagram_input_source (diagram, node, 0), b = napkin_diagram_input_source (diagram, node, 1);
  const NapkinTensorType *ta, *tb, *out = napkin_diagram_node_type (diagram, node);
  gint64 k = 1;

  if (a < 0 || b < 0 || !out->valid)
    return 1;
  ta = napkin_diagram_node_type (diagram, a);
  tb = napkin_diagram_node_type (diagram, b);
  if (!ta->valid || !tb->valid)
    return 1;
  for (guint i = 0; i < ta->n_axes; i++)
    if (napkin_tensor_type_has_axis (tb, ta->axes[i]) && !napkin_tensor_type_has_axis (out, ta->axes[i]))
      k *= napkin_diagram_axis_size (diagram, ta->axes[i]);
  return k;
}

/* Whether a contraction's sum is already normalised by the diagram: its result is
 * scaled next (attention's α = 1/√d), or one operand is a softmax (rows summing to 1). */
static gboolean
product_normalised (NapkinDiagram *diagram,
                    guint          node,
                    const int      operand[2])
{
  guint n_consumers = 0;
  const guint *consumers = napkin_diagram_consumers (diagram, node, &n_consumers);

  for (guint c = 0; c < n_consumers; c++)
    {
      const NapkinNode *next = napkin_diagram_node (diagram, consumers[c]);

      if (next->kind == NAPKIN_OP_MAP && next->fn == NAPKIN_FN_SCALE)
        return TRUE;
    }
  for (guint p = 0; p < 2; p++)
    if (operand[p] >= 0 && napkin_diagram_node (diagram, operand[p])->kind == NAPKIN_OP_SOFTMAX)
      return TRUE;
  return FALSE;
}

double
napkin_input_scale (NapkinDiagram *diagram,
                    guint          tensor)
{
  const NapkinTensor *t = napkin_diagram_tensor (diagram, tensor);
  double scale = 1.0;

  if (t->dtype == NAPKIN_DTYPE_INT8)
    return 1.0;
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      int operand[2];
      gboolean is_input[2];
      int scaled;

      if (napkin_diagram_node (diagram, n)->kind != NAPKIN_OP_CONTRACT)
        continue;
      for (guint p = 0; p < 2; p++)
        {
          operand[p] = skip_reshapes (diagram, napkin_diagram_input_source (diagram, n, p));
          is_input[p] = operand[p] >= 0 && napkin_diagram_node (diagram, operand[p])->kind == NAPKIN_OP_INPUT;
        }
      /* one operand takes the whole 1/√K, as a weight does against an O(1) activation:
       * the second where both are inputs (x · W, as nn.Linear writes it) */
      scaled = is_input[1] ? 1 : is_input[0] ? 0 : -1;
      if (scaled < 0 || g_strcmp0 (napkin_diagram_node (diagram, operand[scaled])->tensor, t->name) != 0
          || product_normalised (diagram, n, operand))
        continue;
      scale = MIN (scale, 1.0 / sqrt ((double) contracted_elements (diagram, n)));
    }
  return scale;
}

NapkinTensorSet *
napkin_tensor_set_new_random (NapkinDiagram *diagram,
                              guint64        seed)
{
  NapkinTensorSet *set = g_new0 (NapkinTensorSet, 1);
  g_autoptr(GRand) rand = g_rand_new_with_seed ((guint32) (seed ^ (seed >> 32)));

  set->diagram = g_object_ref (diagram);
  set->n_tensors = napkin_diagram_n_tensors (diagram);
  set->values = g_new0 (double *, set->n_tensors + 1);
  set->elements = g_new0 (gint64, set->n_tensors + 1);
  for (guint t = 0; t < set->n_tensors; t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (diagram, t);
      gint64 n = 1;
      double scale;

      for (guint a = 0; tensor->axes[a]; a++)
        n *= napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, tensor->axes[a]));
      set->elements[t] = n;
      set->values[t] = g_new (double, n);
      scale = napkin_input_scale (diagram, t);
      for (gint64 i = 0; i < n; i++)
        {
          double v = g_rand_double_range (rand, -1.0, 1.0);

          if (tensor->dtype == NAPKIN_DTYPE_INT8)
            v *= 100;
          v = napkin_round_to_dtype (v * scale, tensor->dtype);
          set->values[t][i] = v != 0 ? v : napkin_round_to_dtype (0.5 * scale, tensor->dtype);
        }
      /* an imported rotary embedding's constant is the matrix the runner and the printed
       * PyTorch build (docs/import.md), not drawn; drawn above all the same, so the
       * other tensors' values do not depend on it */
      if (g_strcmp0 (napkin_tensor_get_constant (tensor), "rotate_half") == 0 && g_strv_length (tensor->axes) == 2
          && n == napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, tensor->axes[0]))
                  * napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, tensor->axes[0])))
        {
          gint64 m = napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, tensor->axes[0]));

          memset (set->values[t], 0, n * sizeof (double));
          for (gint64 i = 0; i < m / 2; i++)
            {
              set->values[t][(i + m / 2) * m + i] = -1.0;
              set->values[t][i * m + i + m / 2] = 1.0;
            }
        }
    }
  return set;
}

void
napkin_tensor_set_free (NapkinTensorSet *set)
{
  if (set == NULL)
    return;
  for (guint t = 0; t < set->n_tensors; t++)
    g_free (set->values[t]);
  g_free (set->values);
  g_free (set->elements);
  g_clear_object (&set->diagram);
  g_free (set);
}

double
napkin_tensor_set_rel_error (const NapkinTensorSet *a,
                             const NapkinTensorSet *b,
                             guint                  tensor)
{
  double diff = 0, norm = 0;

  g_return_val_if_fail (tensor < a->n_tensors && tensor < b->n_tensors, INFINITY);
  for (gint64 i = 0; i < b->elements[tensor]; i++)
    {
      double x = a->values[tensor][i], y = b->values[tensor][i];

      if (isnan (x) || isnan (y))
        return INFINITY;
      diff = MAX (diff, fabs (x - y));
      norm = MAX (norm, fabs (y));
    }
  return norm > 0 ? diff / norm : diff;
}

/* ---- the interpreter --------------------------------------------------------------------- */

typedef struct
{
  const NapkinIrProgram *prog;
  NapkinDiagram         *d;
  guint                  n_axes;
  gint64                *offset;   /* current range per axis */
  gint64                *extent;
  gint64                *coord;    /* the element being computed */
  double               **data;     /* per buffer */
  gint64               **base;     /* per buffer, per buffer axis */
  const char            *kernel;
  GError               **error;
  gboolean               failed;
  gboolean               float64;  /* nothing rounded to a stored type, casts included */
} Interp;

static double *
at (Interp *I,
    int     id)
{
  const NapkinIrBuffer *b = napkin_ir_buffer (I->prog, id);
  gint64 index = 0;

  if (I->data[id] == NULL)
    {
      if (!I->failed)
        g_set_error (I->error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_RUNTIME,
                     "%s: buffer %s (%s) used before it is declared", I->kernel, b->name, b->what);
      I->failed = TRUE;
      return NULL;
    }

  for (guint a = 0; a < b->n_axes; a++)
    {
      gint64 local = I->coord[b->axes[a]] - I->base[id][a];

      if (local < 0 || local >= b->extent[a])
        {
          if (!I->failed)
            g_set_error (I->error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_RUNTIME,
                         "%s: buffer %s (%s at %s) accessed outside its tile: axis %s at %" G_GINT64_FORMAT
                         ", the tile holds %" G_GINT64_FORMAT "..%" G_GINT64_FORMAT,
                         I->kernel, b->name, b->what, napkin_level_to_string (b->level),
                         napkin_diagram_axis (I->d, b->axes[a])->name, I->coord[b->axes[a]],
                         I->base[id][a], I->base[id][a] + b->extent[a] - 1);
          I->failed = TRUE;
          return NULL;
        }
      index = index * b->extent[a] + local;
    }
  return &I->data[id][index];
}

static double
get (Interp *I,
     int     id)
{
  double *p = at (I, id);

  return p ? *p : NAN;
}

static void
put (Interp *I,
     int     id,
     double  value)
{
  double *p = at (I, id);
  const NapkinIrBuffer *b = napkin_ir_buffer (I->prog, id);

  if (p == NULL)
    return;
  *p = b->level == NAPKIN_LEVEL_HBM && !I->float64 ? napkin_round_to_dtype (value, b->dtype) : value;
}

/* Iterates the current range of a set of axes, setting I->coord. */
typedef struct
{
  guint  n;
  guint  axes[NAPKIN_MAX_RANK * 3];
} Iter;

static gboolean
iter_begin (Interp *I,
            Iter   *it)
{
  for (guint i = 0; i < it->n; i++)
    {
      if (I->extent[it->axes[i]] <= 0)
        return FALSE;
      I->coord[it->axes[i]] = I->offset[it->axes[i]];
    }
  return TRUE;
}

static gboolean
iter_next (Interp *I,
           Iter   *it)
{
  for (int i = (int) it->n - 1; i >= 0; i--)
    {
      guint a = it->axes[i];

      if (++I->coord[a] < I->offset[a] + I->extent[a])
        return TRUE;
      I->coord[a] = I->offset[a];
    }
  return FALSE;
}

static void
iter_add (Iter        *it,
          const guint *axes,
          guint        n)
{
  for (guint i = 0; i < n; i++)
    {
      gboolean seen = FALSE;

      for (guint k = 0; k < it->n; k++)
        seen |= it->axes[k] == axes[i];
      if (!seen)
        it->axes[it->n++] = axes[i];
    }
}

/* The axes that srcs carry and dst lacks. */
static void
iter_reduced (Interp *I,
              Iter   *it,
              int     dst,
              const int *srcs,
              guint   n_srcs)
{
  const NapkinIrBuffer *d = napkin_ir_buffer (I->prog, dst);

  it->n = 0;
  for (guint s = 0; s < n_srcs; s++)
    {
      const NapkinIrBuffer *b = napkin_ir_buffer (I->prog, srcs[s]);

      for (guint i = 0; i < b->n_axes; i++)
        {
          gboolean in_dst = FALSE;

          for (guint k = 0; k < d->n_axes; k++)
            in_dst |= d->axes[k] == b->axes[i];
          if (!in_dst)
            iter_add (it, &b->axes[i], 1);
        }
    }
}

static double
apply_fn (const NapkinNode *node,
          gboolean          float64,
          double            x,
          double            y)
{
  switch (node->fn)
    {
    case NAPKIN_FN_ADD: return x + y;
    case NAPKIN_FN_SUB: return x - y;
    case NAPKIN_FN_MUL: return x * y;
    case NAPKIN_FN_DIV: return x / y;
    case NAPKIN_FN_MAX: return MAX (x, y);
    case NAPKIN_FN_MIN: return MIN (x, y);
    case NAPKIN_FN_SCALE: return node->alpha * x;
    case NAPKIN_FN_EXP: return exp (x);
    case NAPKIN_FN_NEG: return -x;
    case NAPKIN_FN_RELU: return x > 0 ? x : 0;
    case NAPKIN_FN_GELU: return 0.5 * x * (1.0 + erf (x / sqrt (2.0)));
    case NAPKIN_FN_SILU: return x / (1.0 + exp (-x));
    case NAPKIN_FN_SIGMOID: return 1.0 / (1.0 + exp (-x));
    case NAPKIN_FN_TANH: return tanh (x);
    case NAPKIN_FN_SQUARE: return x * x;
    case NAPKIN_FN_SQRT: return sqrt (x);
    case NAPKIN_FN_RSQRT: return 1.0 / sqrt (x);
    case NAPKIN_FN_CAST: return float64 ? x : napkin_round_to_dtype (x, node->dtype);
    case NAPKIN_FN_GELU_TANH: return 0.5 * x * (1.0 + tanh (0.7978845608028654 * (x + 0.044715 * x * x * x)));
    case NAPKIN_FN_SHIFT: return x + node->alpha;
    case NAPKIN_FN_STEP: return x > 0 ? 1.0 : 0.0;
    case NAPKIN_FN_ERF: return erf (x);
    case NAPKIN_FN_LOG: return log (x);
    case NAPKIN_FN_ELU: return x > 0 ? x : expm1 (x);
    case NAPKIN_FN_RECIPROCAL: return 1.0 / x;
    case NAPKIN_N_FNS:
    default:
      g_assert_not_reached ();
    }
}

static void run_stmts (Interp *I, GPtrArray *stmts);

static void
run_rearrange (Interp             *I,
               const NapkinIrStmt *s)
{
  const NapkinIrBuffer *d = napkin_ir_buffer (I->prog, s->dst);
  const NapkinIrBuffer *b = napkin_ir_buffer (I->prog, s->src[0]);
  gboolean same = d->n_axes == b->n_axes;
  Iter it = { 0 };

  for (guint i = 0; i < b->n_axes && same; i++)
    {
      gboolean found = FALSE;

      for (guint k = 0; k < d->n_axes; k++)
        found |= d->axes[k] == b->axes[i];
      same = found;
    }

  if (!same)
    for (guint i = 0; i < d->n_axes; i++)
      if (I->offset[d->axes[i]] != 0 || I->extent[d->axes[i]] != napkin_diagram_axis_size (I->d, d->axes[i]))
        {
          g_set_error (I->error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_UNSUPPORTED,
                       "%s: a rearrange that merges or splits axes needs whole axes", I->kernel);
          I->failed = TRUE;
          return;
        }

  iter_add (&it, d->axes, d->n_axes);
  if (!iter_begin (I, &it))
    return;
  do
    {
      double v;

      if (same)
        v = get (I, s->src[0]);
      else
        {
          /* Row-major flat index in the output's order, unflattened in the input's. */
          gint64 flat = 0;
          g_autofree gint64 *saved = g_memdup2 (I->coord, sizeof (gint64) * I->n_axes);

          for (guint i = 0; i < d->n_axes; i++)
            flat = flat * napkin_diagram_axis_size (I->d, d->axes[i]) + I->coord[d->axes[i]];
          for (int i = b->n_axes - 1; i >= 0; i--)
            {
              gint64 size = napkin_diagram_axis_size (I->d, b->axes[i]);

              I->coord[b->axes[i]] = flat % size;
              flat /= size;
            }
          v = get (I, s->src[0]);
          memcpy (I->coord, saved, sizeof (gint64) * I->n_axes);
        }
      put (I, s->dst, v);
    }
  while (!I->failed && iter_next (I, &it));
}

/* exp (v − m) that is 0 for a masked score (−∞), also when the whole row so far is
 * masked (m = −∞), where exp would give NaN. */
static inline double
exp_masked (double v,
            double m)
{
  return v == -INFINITY ? 0.0 : exp (v - m);
}

static double
apply_mask (Interp             *I,
            const NapkinIrStmt *s,
            const NapkinNode   *node)
{
  double v = get (I, s->src[0]);

  if (node->mask == NAPKIN_MASK_TENSOR)
    {
      double m = get (I, s->src[1]);

      int src = napkin_diagram_input_source (I->d, s->node, 1);

      /* tiles are fp32 whatever the tensor: ask the diagram for the mask's type */
      if (napkin_dtype_is_float (napkin_diagram_node_type (I->d, src)->dtype))
        return v + m;
      return m != 0 ? v : -INFINITY;
    }
  if (!napkin_mask_keeps (node->mask, I->coord[napkin_diagram_find_axis (I->d, node->rows)], I->coord[s->axis],
                          node->offset, node->left, node->right))
    return -INFINITY;
  return v;
}

/* One element of a contraction or a reduction: the sum (or max) over `red`. */
static double
reduce_element (Interp             *I,
                const NapkinIrStmt *s,
                const NapkinNode   *node,
                Iter               *red)
{
  gboolean is_max = s->op == NAPKIN_COMPUTE_REDUCE && node->reduce == NAPKIN_REDUCE_MAX;
  double acc = s->accumulate ? get (I, s->dst) : (is_max ? -INFINITY : 0.0);

  if (iter_begin (I, red))
    do
      {
        double v = get (I, s->src[0]);

        if (s->op == NAPKIN_COMPUTE_CONTRACT)
          acc += v * get (I, s->src[1]);
        else if (is_max)
          acc = MAX (acc, v);
        else
          acc += v;
      }
    while (!I->failed && iter_next (I, red));
  for (guint k = 0; k < red->n; k++)
    I->coord[red->axes[k]] = I->offset[red->axes[k]];
  return acc;
}

/* A row statistic (max, Σ exp, mean, 1/std) over the statement's axis. */
static double
row_statistic (Interp             *I,
               const NapkinIrStmt *s,
               Iter               *row)
{
  guint x = s->axis;
  double acc = s->op == NAPKIN_COMPUTE_ROW_MAX ? -INFINITY : 0.0;
  double center = 0;
  gint64 count = I->extent[x];

  if (s->op == NAPKIN_COMPUTE_ROW_SUMEXP || (s->op == NAPKIN_COMPUTE_ROW_RSTD && s->src[1] >= 0))
    center = get (I, s->src[1]);
  if (iter_begin (I, row))
    do
      {
        double v = get (I, s->src[0]);

        switch (s->op)
          {
          case NAPKIN_COMPUTE_ROW_MAX: acc = MAX (acc, v); break;
          case NAPKIN_COMPUTE_ROW_SUMEXP: acc += exp_masked (v, center); break;
          case NAPKIN_COMPUTE_ROW_MEAN: acc += v; break;
          default: acc += (v - center) * (v - center); break;
          }
      }
    while (!I->failed && iter_next (I, row));
  I->coord[x] = I->offset[x];
  if (s->op == NAPKIN_COMPUTE_ROW_MEAN)
    acc /= count;
  else if (s->op == NAPKIN_COMPUTE_ROW_RSTD)
    acc = 1.0 / sqrt (acc / count + s->value);
  return acc;
}

/* The online softmax's statistics for one row and one chunk of scores: the running
 * max (dst), the running sum (src1) and the correction of earlier chunks (src2). */
static void
online_stats (Interp             *I,
              const NapkinIrStmt *s,
              Iter               *row)
{
  guint x = s->axis;
  double m = get (I, s->dst), mx = -INFINITY, m_new, c, l = 0;

  if (iter_begin (I, row))
    do
      mx = MAX (mx, get (I, s->src[0]));
    while (!I->failed && iter_next (I, row));
  m_new = MAX (m, mx);
  c = m_new == -INFINITY ? 1.0 : exp (m - m_new);
  if (iter_begin (I, row))
    do
      l += exp_masked (get (I, s->src[0]), m_new);
    while (!I->failed && iter_next (I, row));
  I->coord[x] = I->offset[x];
  put (I, s->src[1], get (I, s->src[1]) * c + l);
  put (I, s->src[2], c);
  put (I, s->dst, m_new);
}

/* The online softmax's accumulator: dst·c + Σ exp (s − m)·v over `red`. */
static double
online_acc (Interp             *I,
            const NapkinIrStmt *s,
            Iter               *red)
{
  double acc = get (I, s->dst) * get (I, s->src[3]);

  if (iter_begin (I, red))
    do
      acc += exp_masked (get (I, s->src[0]), get (I, s->src[2])) * get (I, s->src[1]);
    while (!I->failed && iter_next (I, red));
  for (guint k = 0; k < red->n; k++)
    I->coord[red->axes[k]] = I->offset[red->axes[k]];
  return acc;
}

/* One element of a compute statement, at the current coordinates. */
static void
compute_element (Interp             *I,
                 const NapkinIrStmt *s,
                 const NapkinNode   *node,
                 Iter               *row,
                 Iter               *red)
{
  switch (s->op)
    {
    case NAPKIN_COMPUTE_MAP:
      put (I, s->dst, apply_fn (node, I->float64, get (I, s->src[0]), s->src[1] >= 0 ? get (I, s->src[1]) : 0));
      break;

    case NAPKIN_COMPUTE_MASK:
      put (I, s->dst, apply_mask (I, s, node));
      break;

    case NAPKIN_COMPUTE_CONTRACT:
    case NAPKIN_COMPUTE_REDUCE:
      put (I, s->dst, reduce_element (I, s, node, red));
      break;

    case NAPKIN_COMPUTE_ROW_MAX:
    case NAPKIN_COMPUTE_ROW_SUMEXP:
    case NAPKIN_COMPUTE_ROW_MEAN:
    case NAPKIN_COMPUTE_ROW_RSTD:
      put (I, s->dst, row_statistic (I, s, row));
      break;

    case NAPKIN_COMPUTE_SOFTMAX:
      {
        double l = get (I, s->src[2]);

        /* a row with every key masked gives 0, as FlashAttention does */
        put (I, s->dst, l > 0 ? exp_masked (get (I, s->src[0]), get (I, s->src[1])) / l : 0.0);
        break;
      }

    case NAPKIN_COMPUTE_NORMALIZE:
      put (I, s->dst, (get (I, s->src[0]) - (s->src[1] >= 0 ? get (I, s->src[1]) : 0)) * get (I, s->src[2]));
      break;

    case NAPKIN_COMPUTE_ONLINE_STATS:
      online_stats (I, s, row);
      break;

    case NAPKIN_COMPUTE_ONLINE_ACC:
      put (I, s->dst, online_acc (I, s, red));
      break;

    case NAPKIN_COMPUTE_DIVIDE:
      {
        double l = get (I, s->src[0]);

        put (I, s->dst, l > 0 ? get (I, s->dst) / l : 0.0);
      }
      break;

    case NAPKIN_COMPUTE_SCALE:
      put (I, s->dst, get (I, s->dst) * s->value);
      break;

    case NAPKIN_COMPUTE_REARRANGE:
    case NAPKIN_N_COMPUTES:
    default:
      g_assert_not_reached ();
    }
}

static void
run_compute (Interp             *I,
             const NapkinIrStmt *s)
{
  const NapkinIrBuffer *d = napkin_ir_buffer (I->prog, s->dst);
  const NapkinNode *node = napkin_diagram_node (I->d, s->node);
  Iter it = { 0 }, red = { 0 };
  Iter row = { 1, { s->axis } };

  if (s->op == NAPKIN_COMPUTE_REARRANGE)
    {
      run_rearrange (I, s);
      return;
    }

  iter_add (&it, d->axes, d->n_axes);
  if (s->op == NAPKIN_COMPUTE_CONTRACT || s->op == NAPKIN_COMPUTE_REDUCE)
    iter_reduced (I, &red, s->dst, s->src, s->op == NAPKIN_COMPUTE_CONTRACT ? 2 : 1);
  else if (s->op == NAPKIN_COMPUTE_ONLINE_ACC)
    iter_reduced (I, &red, s->dst, (int[]) { s->src[0], s->src[1] }, 2);

  if (!iter_begin (I, &it))
    return;
  do
    compute_element (I, s, node, &row, &red);
  while (!I->failed && iter_next (I, &it));
}

static void
run_stmt (Interp             *I,
          const NapkinIrStmt *s)
{
  const NapkinIrBuffer *d = s->dst >= 0 ? napkin_ir_buffer (I->prog, s->dst) : NULL;
  Iter it = { 0 };

  switch (s->kind)
    {
    case NAPKIN_STMT_LOOP:
      {
        gint64 off = I->offset[s->axis], ext = I->extent[s->axis];

        for (gint64 c = 0; c < ext && !I->failed; c += s->tile)
          {
            I->offset[s->axis] = off + c;
            I->extent[s->axis] = MIN (s->tile, ext - c);
            run_stmts (I, s->body);
          }
        I->offset[s->axis] = off;
        I->extent[s->axis] = ext;
        break;
      }

    case NAPKIN_STMT_DECL:
      {
        gint64 n = napkin_ir_buffer_elements (d);

        g_free (I->data[s->dst]);
        I->data[s->dst] = g_new (double, n);
        for (gint64 i = 0; i < n; i++)
          I->data[s->dst][i] = NAN;
        for (guint a = 0; a < d->n_axes; a++)
          I->base[s->dst][a] = I->offset[d->axes[a]];
        break;
      }

    case NAPKIN_STMT_FILL:
    case NAPKIN_STMT_COPY:
      iter_add (&it, d->axes, d->n_axes);
      if (!iter_begin (I, &it))
        break;
      do
        put (I, s->dst, s->kind == NAPKIN_STMT_FILL ? s->value : get (I, s->src[0]));
      while (!I->failed && iter_next (I, &it));
      break;

    case NAPKIN_STMT_COMPUTE:
      run_compute (I, s);
      break;

    default:
      g_assert_not_reached ();
    }
}

static void
run_stmts (Interp    *I,
           GPtrArray *stmts)
{
  for (guint i = 0; i < stmts->len && !I->failed; i++)
    run_stmt (I, g_ptr_array_index (stmts, i));
}

static gboolean
interpret (const NapkinIrProgram  *program,
           NapkinTensorSet        *set,
           gboolean                float64,
           GError                **error)
{
  Interp I = { 0 };
  guint n_buffers = program->buffers->len;

  g_return_val_if_fail (program != NULL && set != NULL, FALSE);
  g_return_val_if_fail (set->n_tensors == napkin_diagram_n_tensors (program->diagram), FALSE);

  I.prog = program;
  I.d = program->diagram;
  I.n_axes = napkin_diagram_n_axes (I.d);
  I.offset = g_new0 (gint64, I.n_axes + 1);
  I.extent = g_new0 (gint64, I.n_axes + 1);
  I.coord = g_new0 (gint64, I.n_axes + 1);
  I.data = g_new0 (double *, n_buffers + 1);
  I.base = g_new0 (gint64 *, n_buffers + 1);
  I.error = error;
  I.float64 = float64;

  for (guint b = 0; b < n_buffers; b++)
    {
      const NapkinIrBuffer *buf = napkin_ir_buffer (program, b);
      gint64 n = napkin_ir_buffer_elements (buf);

      I.base[b] = g_new0 (gint64, NAPKIN_MAX_RANK);
      if (buf->role == NAPKIN_BUF_TILE)
        continue;
      I.data[b] = g_new (double, n);
      if (buf->role == NAPKIN_BUF_INPUT)
        memcpy (I.data[b], set->values[buf->tensor], n * sizeof (double));
      else
        for (gint64 i = 0; i < n; i++)
          I.data[b][i] = NAN;  /* poison: a kernel that skips an element leaves NaN */
    }

  for (guint k = 0; k < program->kernels->len && !I.failed; k++)
    {
      const NapkinIrKernel *kernel = g_ptr_array_index (program->kernels, k);

      I.kernel = kernel->name;
      for (guint a = 0; a < I.n_axes; a++)
        {
          I.offset[a] = 0;
          I.extent[a] = napkin_diagram_axis_size (I.d, a);
        }
      run_stmts (&I, kernel->body);
    }

  for (guint b = 0; b < n_buffers && !I.failed; b++)
    {
      const NapkinIrBuffer *buf = napkin_ir_buffer (program, b);

      if (buf->role == NAPKIN_BUF_OUTPUT)
        memcpy (set->values[buf->tensor], I.data[b], napkin_ir_buffer_elements (buf) * sizeof (double));
    }

  for (guint b = 0; b < n_buffers; b++)
    {
      g_free (I.data[b]);
      g_free (I.base[b]);
    }
  g_free (I.data);
  g_free (I.base);
  g_free (I.offset);
  g_free (I.extent);
  g_free (I.coord);
  return !I.failed;
}

gboolean
napkin_ir_interpret (const NapkinIrProgram  *program,
                     NapkinTensorSet        *set,
                     GError                **error)
{
  return interpret (program, set, FALSE, error);
}

gboolean
napkin_ir_interpret_float64 (const NapkinIrProgram  *program,
                             NapkinTensorSet        *set,
                             GError                **error)
{
  return interpret (program, set, TRUE, error);
}
