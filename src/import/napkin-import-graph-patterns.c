/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-import-graph-private.h"

/* What spans several operations of the graph (docs/import.md): numbers held in
 * tensors, values computed from parameters alone, rotate_half, masks, RMSNorm and
 * GELU written out. A pattern rewrites its last operation to read what the pattern
 * reads (`rewritten`); what only the pattern read is then absorbed by the sweep. */

static const char *const view_like[] = {
  "view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "transpose", "t", "permute", "contiguous",
  "clone", "alias", "detach", "lift_fresh_copy", "expand", "flatten", "unflatten", "_to_copy", "to",
  "type_as", "dropout",
};

static gboolean
is_view_like (Value *v)
{
  return gi_in_list (v->base, view_like, G_N_ELEMENTS (view_like));
}

/* Through views and casts to what holds the data. */
Value *
gi_strip_views (G     *g,
                Value *v)
{
  while (v != NULL && v->target != NULL && is_view_like (v))
    {
      Value *a = gi_arg_value (g, v, 0, "self");

      if (a == NULL)
        a = gi_arg_value (g, v, 0, "input");
      if (a == NULL)
        break;
      v = a;
    }
  return v;
}

/* A number: a JSON number, "-inf"/"inf", or a graph value that holds one
 * (torch.full([], c), a one-element constant the exporter gave a "value"). */
gboolean
gi_scalar_of (G           *g,
              json_object *a,
              double      *out)
{
  const char *repr;
  Value *v;

  if (a == NULL)
    return FALSE;
  if (json_object_is_type (a, json_type_int) || json_object_is_type (a, json_type_double))
    {
      *out = json_object_get_double (a);
      return TRUE;
    }
  if (json_object_is_type (a, json_type_boolean))
    {
      *out = json_object_get_boolean (a) ? 1 : 0;
      return TRUE;
    }
  if ((repr = gi_member_string (a, "repr")) != NULL)
    {
      if (g_str_equal (repr, "-inf") || g_str_equal (repr, "inf") || g_str_equal (repr, "nan"))
        {
          *out = g_str_equal (repr, "-inf") ? -INFINITY : g_str_equal (repr, "inf") ? INFINITY : NAN;
          return TRUE;
        }
      return FALSE;
    }
  v = gi_value (g, a);
  if (v == NULL || !v->is_scalar)
    return FALSE;
  *out = v->scalar;
  return TRUE;
}

static gboolean
scalar_value (G     *g,
              Value *v)
{
  if (v->target == NULL)
    {
      json_object *value = gi_member (v->obj, "value");

      if (value == NULL || v->n_dims > 1 || (v->n_dims == 1 && v->shape[0] != 1))
        return FALSE;
      return gi_scalar_of (g, value, &v->scalar);
    }
  if ((g_str_equal (v->base, "full") || g_str_equal (v->base, "scalar_tensor")) && (v->n_dims == 0 || !v->has_shape))
    return gi_scalar_of (g, gi_arg (v, g_str_equal (v->base, "full") ? 1 : 0, "fill_value"), &v->scalar);
  if (is_view_like (v) && !g_str_equal (v->base, "expand"))
    {
      Value *a = gi_arg_value (g, v, 0, "self");

      if (a != NULL && a->is_scalar)
        {
          v->scalar = a->scalar;
          return TRUE;
        }
    }
  return FALSE;
}

/* Tensor references in a JSON argument, as values. */
static void
refs (G           *g,
      json_object *a,
      GPtrArray   *out)
{
  if (a == NULL)
    return;
  if (json_object_is_type (a, json_type_array))
    for (guint i = 0; i < json_object_array_length (a); i++)
      refs (g, json_object_array_get_idx (a, i), out);
  else if (json_object_is_type (a, json_type_object))
    {
      Value *v = gi_value (g, a);

      if (v != NULL)
        g_ptr_array_add (out, v);
      else if (gi_member (a, "dict") != NULL && json_object_is_type (gi_member (a, "dict"), json_type_object))
        {
          json_object_object_foreach (gi_member (a, "dict"), key, val)
            {
              (void) key;
              refs (g, val, out);
            }
        }
    }
}

/* What v reads: its pattern's operands once rewritten, its arguments otherwise;
 * numbers held in tensors are read as numbers. */
static GPtrArray *
operands (G     *g,
          Value *v)
{
  GPtrArray *out = g_ptr_array_new ();

  if (v->hoisted || v->target == NULL)
    return out;
  if (v->rewritten)
    {
      for (guint i = 0; i < 3; i++)
        if (v->src[i] >= 0)
          g_ptr_array_add (out, g->values->pdata[v->src[i]]);
      if (v->extra[0] >= 0)
        g_ptr_array_add (out, g->values->pdata[v->extra[0]]);
      return out;
    }
  refs (g, v->args, out);
  refs (g, v->kwargs, out);
  for (guint i = out->len; i > 0; i--)
    if (((Value *) out->pdata[i - 1])->is_scalar)
      g_ptr_array_remove_index (out, i - 1);
  return out;
}

/* Which values are numbers, and which depend on the module's inputs. */
void
gi_find_constants (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];
      g_autoptr(GPtrArray) ops = NULL;

      v->is_scalar = scalar_value (g, v);
      if (v->target == NULL)
        {
          v->user_dep = v->emit == EMIT_INPUT && v->role == 0;
          continue;
        }
      ops = operands (g, v);
      for (guint k = 0; k < ops->len; k++)
        v->user_dep |= ((Value *) ops->pdata[k])->user_dep;
    }
}

/* ---------------------------------------------------------------- rotate_half */

/* x[..., a:b] as a slice, or as an item of chunk/split of x over one dimension. */
static gboolean
slice_of (G       *g,
          Value   *s,
          Value  **x,
          int     *dim,
          gint64  *start,
          gint64  *end)
{
  gint64 d, st, en, step;

  if (s != NULL && g_strcmp0 (s->base, "getitem") == 0)
    {
      Value *t = gi_arg_value (g, s, 0, NULL);
      gint64 index, size;

      if (t == NULL || !gi_arg_int (s, 1, NULL, -1, &index) || index < 0 || !s->has_shape)
        return FALSE;
      *x = gi_arg_value (g, t, 0, "self");
      if (*x == NULL || !(*x)->has_shape)
        return FALSE;
      if ((g_str_equal (t->base, "chunk") || g_str_equal (t->base, "split")) && gi_arg_int (t, 2, "dim", 0, &d)
          && gi_norm_dim (d, (*x)->n_dims, dim))
        {
          size = s->shape[*dim];
          *start = index * size;
          *end = MIN (*start + size, (*x)->shape[*dim]);
          return TRUE;
        }
      return FALSE;
    }
  if (s == NULL || g_strcmp0 (s->base, "slice") != 0)
    return FALSE;
  *x = gi_arg_value (g, s, 0, "self");
  if (*x == NULL || !gi_arg_int (s, 1, "dim", 0, &d) || !gi_arg_int (s, 2, "start", 0, &st)
      || !gi_arg_int (s, 3, "end", INT64_MAX, &en) || !gi_arg_int (s, 4, "step", 1, &step) || step != 1
      || !(*x)->has_shape || !gi_norm_dim (d, (*x)->n_dims, dim))
    return FALSE;
  if (en > (*x)->shape[*dim])
    en = (*x)->shape[*dim];
  *start = st;
  *end = en;
  return TRUE;
}

/* cat([neg(x[..., h:]), x[..., :h]], -1): rotate_half (docs/import.md, "Rotary embedding"). */
static void
find_rotation (G     *g,
               Value *v)
{
  json_object *list = gi_arg (v, 0, "tensors");
  Value *neg, *s1, *s0, *x1, *x0;
  int d1, d0, dim;
  gint64 a1, b1, a0, b0, cd;

  if (list == NULL || !json_object_is_type (list, json_type_array) || json_object_array_length (list) != 2)
    return;
  neg = gi_value (g, json_object_array_get_idx (list, 0));
  s0 = gi_value (g, json_object_array_get_idx (list, 1));
  if (neg == NULL || g_strcmp0 (neg->base, "neg") != 0)
    return;
  s1 = gi_arg_value (g, neg, 0, "self");
  if (!slice_of (g, s1, &x1, &d1, &a1, &b1) || !slice_of (g, s0, &x0, &d0, &a0, &b0) || x0 != x1 || d0 != d1)
    return;
  if (!gi_arg_int (v, 1, "dim", 0, &cd) || !gi_norm_dim (cd, v->n_dims, &dim) || dim != d0)
    return;
  if (x0->shape[d0] % 2 != 0 || a0 != 0 || b0 != x0->shape[d0] / 2 || a1 != b0 || b1 != x0->shape[d0])
    return;
  v->emit = EMIT_ROTATE;
  v->src[0] = gi_value_index (g, x0);
  v->axis_dim = dim;
  v->rewritten = TRUE;
}

/* ---------------------------------------------------------------- masks */

static gboolean
is_fill_of (G     *g,
            Value *v,
            double want)
{
  double c;

  if (v == NULL || v->target == NULL)
    return FALSE;
  if (g_str_equal (v->base, "ones") || g_str_equal (v->base, "ones_like") || g_str_equal (v->base, "new_ones"))
    return want == 1;
  if (g_str_equal (v->base, "full") || g_str_equal (v->base, "full_like") || g_str_equal (v->base, "new_full"))
    return gi_scalar_of (g, gi_arg (v, 1, "fill_value"), &c) && (c == want || (want == 1 && c != 0));
  return FALSE;
}

/* A slice of the last two dimensions moves the diagonal. */
static gboolean
mask_slice (G        *g,
            Value    *v,
            MaskInfo *m)
{
  Value *a = gi_arg_value (g, v, 0, "self");
  gint64 d, st, en, step;
  int dim;

  if (a == NULL || !gi_arg_int (v, 1, "dim", 0, &d) || !gi_arg_int (v, 2, "start", 0, &st)
      || !gi_arg_int (v, 3, "end", INT64_MAX, &en) || !gi_arg_int (v, 4, "step", 1, &step) || step != 1
      || !gi_norm_dim (d, a->n_dims, &dim) || !gi_mask_of (g, a, m))
    return FALSE;
  if (m->kind == MASK_TENSOR)
    return st == 0 && en >= a->shape[dim];  /* only a whole slice of a tensor */
  if (st < 0)
    st += a->shape[dim];
  if (dim == (int) a->n_dims - 2)
    m->offset += st;
  else if (dim == (int) a->n_dims - 1)
    m->offset -= st;
  return TRUE;
}

/* What a boolean value keeps (docs/import.md, "Masks"): torch.tril/triu of ones and
 * buffers holding them (the exporter says so in "pattern"), their slices, negations
 * and comparisons with 0; a boolean tensor of the graph keeps where it is true. */
gboolean
gi_mask_of (G        *g,
            Value    *v,
            MaskInfo *m)
{
  const char *b = v->base;
  double c;

  memset (m, 0, sizeof *m);
  m->tensor = -1;
  if (v->target == NULL)
    {
      json_object *pattern = gi_member (v->obj, "pattern");
      const char *kind = gi_member_string (pattern, "kind");
      gint64 diag = 0;

      if (kind != NULL && gi_member (pattern, "diagonal") != NULL)
        diag = json_object_get_int64 (gi_member (pattern, "diagonal"));
      if (g_strcmp0 (kind, "tril") == 0 || g_strcmp0 (kind, "triu") == 0)
        {
          m->kind = g_str_equal (kind, "tril") ? MASK_TRIL : MASK_TRIU;
          m->offset = diag;
          return TRUE;
        }
      if (!v->is_bool)
        return FALSE;
      m->kind = MASK_TENSOR;
      m->tensor = gi_value_index (g, v);
      return TRUE;
    }
  if (is_fill_of (g, v, 1))
    {
      m->kind = MASK_ONES;
      return TRUE;
    }
  if (g_str_equal (b, "tril") || g_str_equal (b, "triu"))
    {
      Value *a = gi_arg_value (g, v, 0, "self");
      gint64 diag;

      if (a == NULL || !gi_arg_int (v, 1, "diagonal", 0, &diag) || !gi_mask_of (g, a, m) || m->kind != MASK_ONES
          || m->invert)
        return FALSE;
      m->kind = g_str_equal (b, "tril") ? MASK_TRIL : MASK_TRIU;
      m->offset = diag;
      return TRUE;
    }
  if (g_str_equal (b, "slice"))
    return mask_slice (g, v, m);
  if (g_str_equal (b, "bitwise_and") || g_str_equal (b, "logical_and") || g_str_equal (b, "__and__"))
    {
      /* ones.tril(a) & ones.triu(b): a band, i + b ≤ j ≤ i + a (sliding-window attention) */
      Value *x = gi_arg_value (g, v, 0, "self"), *y = gi_arg_value (g, v, 1, "other");
      MaskInfo mx, my;

      if (x == NULL || y == NULL || !gi_mask_of (g, x, &mx) || !gi_mask_of (g, y, &my) || mx.invert || my.invert)
        return FALSE;
      if (mx.kind == MASK_TRIU && my.kind == MASK_TRIL)
        {
          MaskInfo t = mx;

          mx = my;
          my = t;
        }
      if (mx.kind != MASK_TRIL || my.kind != MASK_TRIU || my.offset > mx.offset)
        return FALSE;
      m->kind = MASK_BAND;
      m->offset = mx.offset;
      m->lower = my.offset;
      return TRUE;
    }
  if (g_str_equal (b, "logical_not") || g_str_equal (b, "bitwise_not"))
    {
      Value *a = gi_arg_value (g, v, 0, "self");

      if (a == NULL || !gi_mask_of (g, a, m))
        return FALSE;
      m->invert = !m->invert;
      return TRUE;
    }
  if ((g_str_equal (b, "eq") || g_str_equal (b, "ne")) && gi_scalar_of (g, gi_arg (v, 1, "other"), &c)
      && (c == 0 || c == 1))
    {
      Value *a = gi_arg_value (g, v, 0, "self");

      if (a == NULL || !gi_mask_of (g, a, m))
        return FALSE;
      /* x == 0 keeps where x does not; x != 0 and x == 1 keep where it does */
      if (g_str_equal (b, "eq") == (c == 0))
        m->invert = !m->invert;
      return TRUE;
    }
  if (is_view_like (v) && !g_str_equal (b, "transpose") && !g_str_equal (b, "permute") && !g_str_equal (b, "t"))
    {
      Value *a = gi_arg_value (g, v, 0, "self");

      if (a == NULL || !gi_mask_of (g, a, m))
        return FALSE;
      /* a tensor mask is read as the view lays it out (pad[:, None, None, :]) */
      if (m->kind == MASK_TENSOR && v->is_bool)
        m->tensor = gi_value_index (g, v);
      return TRUE;
    }
  if (v->is_bool && !v->user_dep)
    {
      /* a boolean computed from parameters alone: an input of the diagram */
      m->kind = MASK_TENSOR;
      m->tensor = gi_value_index (g, v);
      return TRUE;
    }
  return FALSE;
}

/* masked_fill(x, drop, -inf), where(keep, x, -inf) and where(drop, -inf, x): a mask
 * node on x when what is dropped is a mask the diagram has (docs/import.md, "Masks"). */
static void
find_mask (G     *g,
           Value *v)
{
  gboolean fill = g_str_equal (v->base, "masked_fill");
  Value *cond = gi_arg_value (g, v, fill ? 1 : 0, fill ? "mask" : "condition");
  Value *x;
  double c;
  gboolean keep_true;
  MaskInfo m;

  if (cond == NULL)
    return;
  if (fill)
    {
      x = gi_arg_value (g, v, 0, "self");
      if (!gi_scalar_of (g, gi_arg (v, 2, "value"), &c))
        return;
      keep_true = FALSE;
    }
  else if (gi_scalar_of (g, gi_arg (v, 2, "other"), &c))
    x = gi_arg_value (g, v, 1, "self"), keep_true = TRUE;
  else if (gi_scalar_of (g, gi_arg (v, 1, "self"), &c))
    x = gi_arg_value (g, v, 2, "other"), keep_true = FALSE;
  else
    return;
  if (x == NULL || !(c <= -1e4) || !gi_mask_of (g, cond, &m))
    return;
  if (!keep_true)
    m.invert = !m.invert;
  /* what is kept: tril(k) is causal with offset k; not triu(k) is tril(k - 1) */
  if (m.kind == MASK_TRIU && m.invert)
    m.kind = MASK_TRIL, m.offset -= 1, m.invert = FALSE;
  /* flags of what is dropped (BLOOM's boolean mask, nn.MultiheadAttention's
   * key_padding_mask) are turned into kept flags by the diagram (emit_mask) */
  if ((m.invert && m.kind != MASK_TENSOR) || m.kind == MASK_TRIU)
    return;
  v->mask = m;
  v->emit = EMIT_MASK;
  v->src[0] = gi_value_index (g, x);
  v->src[1] = m.kind == MASK_TENSOR ? m.tensor : -1;
  v->rewritten = TRUE;
}

/* scores + torch.full((s, s), -inf).triu(1) (a causal mask written additively, as
 * Llama's reference code builds it): `mask causal` keeping j ≤ i + k − 1. Views that
 * keep the last two dimensions are allowed; slices are not. */
static void
find_additive_causal (G     *g,
                      Value *v)
{
  for (guint side = 0; side < 2; side++)
    {
      Value *x = gi_arg_value (g, v, side, side ? "other" : "self");
      Value *m = gi_strip_views (g, gi_arg_value (g, v, 1 - side, side ? "self" : "other"));
      Value *full;
      gint64 diag;
      double c;

      if (x == NULL || m == NULL || !x->user_dep || m->user_dep || m->target == NULL || !g_str_equal (m->base, "triu")
          || !gi_arg_int (m, 1, "diagonal", 0, &diag) || (full = gi_arg_value (g, m, 0, "self")) == NULL
          || full->target == NULL || !g_str_equal (full->base, "full")
          || !gi_scalar_of (g, gi_arg (full, 1, "fill_value"), &c) || !(c <= -1e4))
        continue;
      v->mask.kind = MASK_TRIL;
      v->mask.offset = diag - 1;
      v->mask.tensor = -1;
      v->emit = EMIT_MASK;
      v->src[0] = gi_value_index (g, x);
      v->src[1] = -1;
      v->rewritten = TRUE;
      return;
    }
}

/* scaled_dot_product_attention reads q, k, v and its mask: a tril (causal), a
 * boolean tensor (a mask), a float tensor (added to the scores). */
static void
find_attention (G     *g,
                Value *v)
{
  json_object *m = gi_arg (v, 3, "attn_mask");
  Value *mask = gi_value (g, m);
  MaskInfo info = { MASK_NONE, 0, FALSE, -1 };

  if (m != NULL && !json_object_is_type (m, json_type_null))
    {
      if (mask == NULL)
        return;
      /* a float mask is added to the scores whatever it holds; a boolean one keeps */
      if (mask->is_bool && (!gi_mask_of (g, mask, &info) || info.invert || info.kind == MASK_TRIU))
        return;
    }
  v->emit = EMIT_ATTENTION;
  v->src[0] = gi_value_index (g, gi_arg_value (g, v, 0, "query"));
  v->src[1] = gi_value_index (g, gi_arg_value (g, v, 1, "key"));
  v->src[2] = gi_value_index (g, gi_arg_value (g, v, 2, "value"));
  if (info.kind == MASK_TENSOR)
    v->extra[0] = info.tensor;
  else if (info.kind == MASK_NONE && mask != NULL)
    v->extra[0] = gi_value_index (g, mask);
  v->mask = info;
  v->rewritten = TRUE;
}

/* ---------------------------------------------------------------- RMSNorm and GELU written out */

static Value *
operand (G     *g,
         Value *v,
         guint  i)
{
  return gi_arg_value (g, v, i, NULL);
}

/* Through casts only (same shape). */
static Value *
strip_casts (G     *g,
             Value *v)
{
  while (v != NULL && v->target != NULL
         && (g_str_equal (v->base, "_to_copy") || g_str_equal (v->base, "to") || g_str_equal (v->base, "type_as")))
    v = operand (g, v, 0);
  return v;
}

/* x², as pow(x, 2), square(x) or x * x: x, else NULL. */
static Value *
square_of (G     *g,
           Value *v)
{
  double e;

  if (v == NULL || v->target == NULL)
    return NULL;
  if (g_str_equal (v->base, "pow") && gi_scalar_of (g, gi_arg (v, 1, "exponent"), &e) && e == 2)
    return operand (g, v, 0);
  if (g_str_equal (v->base, "square"))
    return operand (g, v, 0);
  if (g_str_equal (v->base, "mul") && operand (g, v, 0) != NULL && operand (g, v, 0) == operand (g, v, 1))
    return operand (g, v, 0);
  return NULL;
}

/* x · rsqrt(mean(x², -1, keepdim) + eps), or x / sqrt(…): RMSNorm written out (Llama's,
 * T5's), one normalize over the last dimension. */
static void
find_rmsnorm (G     *g,
              Value *v)
{
  gboolean div = g_str_equal (v->base, "div");

  for (guint side = 0; side < (div ? 1u : 2u); side++)
    {
      Value *x = operand (g, v, side), *r = operand (g, v, 1 - side), *add, *mean, *sq = NULL;
      json_object *dims;
      double eps = 0;

      if (x == NULL || r == NULL || !g_str_equal (r->base, div ? "sqrt" : "rsqrt") || x->n_dims == 0)
        continue;
      add = operand (g, r, 0);
      if (add == NULL || !g_str_equal (add->base, "add"))
        continue;
      mean = operand (g, add, 0);
      if (mean == NULL || !gi_scalar_of (g, gi_arg (add, 1, "other"), &eps) || !(eps > 0 && eps < 1))
        continue;
      dims = gi_arg (mean, 1, "dim");
      if (!g_str_equal (mean->base, "mean") || dims == NULL || !json_object_is_type (dims, json_type_array)
          || json_object_array_length (dims) != 1 || !gi_arg_bool (mean, 2, "keepdim"))
        continue;
      {
        gint64 d = json_object_get_int64 (json_object_array_get_idx (dims, 0));

        if (d != -1 && d != (gint64) x->n_dims - 1)
          continue;
      }
      sq = square_of (g, operand (g, mean, 0));
      if (sq == NULL || strip_casts (g, sq) != strip_casts (g, x))
        continue;
      v->emit = EMIT_NORM;
      v->norm = NAPKIN_NORM_RMSNORM;
      v->eps = eps;
      v->src[0] = gi_value_index (g, x);
      v->axis_dim = x->n_dims - 1;
      v->rewritten = TRUE;
      return;
    }
}

/* mean(x, [d], keepdim=True): x, and d in *dim (normalised); else NULL. */
static Value *
mean_over (G     *g,
           Value *m,
           int   *dim)
{
  json_object *dims;
  Value *x;
  gint64 d;

  if (m == NULL || m->target == NULL || !g_str_equal (m->base, "mean") || (x = operand (g, m, 0)) == NULL
      || x->n_dims == 0)
    return NULL;
  dims = gi_arg (m, 1, "dim");
  if (dims == NULL || !json_object_is_type (dims, json_type_array) || json_object_array_length (dims) != 1
      || !gi_arg_bool (m, 2, "keepdim"))
    return NULL;
  d = json_object_get_int64 (json_object_array_get_idx (dims, 0));
  if (d < 0)
    d += x->n_dims;
  if (d < 0 || d >= (gint64) x->n_dims)
    return NULL;
  *dim = (int) d;
  return x;
}

/* x − mean(x, [d], keepdim=True): x, d in *dim; else NULL. */
static Value *
centred (G     *g,
         Value *c,
         int   *dim)
{
  Value *x;

  if (c == NULL || c->target == NULL || !g_str_equal (c->base, "sub") || (x = operand (g, c, 0)) == NULL)
    return NULL;
  return mean_over (g, operand (g, c, 1), dim) == x ? x : NULL;
}

/* (x − μ) / sqrt(σ² + eps), or · rsqrt(…), with μ = mean(x, d, keepdim) and σ² the
 * biased variance — x.var(d, keepdim=True, unbiased=False) or mean((x − μ)², d,
 * keepdim=True): a LayerNorm written out (tutorials; ConvNeXt's channels-first norm,
 * over dimension 1), one normalize over d. The Bessel-corrected std (x.std(), the
 * Annotated Transformer's) is another function and stays refused. */
static void
find_layernorm (G     *g,
                Value *v)
{
  gboolean div = g_str_equal (v->base, "div");

  for (guint side = 0; side < (div ? 1u : 2u); side++)
    {
      Value *c = operand (g, v, side), *r = operand (g, v, 1 - side), *add, *var, *x, *vx = NULL, *w = NULL;
      int d = -1, dv = -1;
      double eps = 0, corr = 1;

      if (c == NULL || r == NULL || r->target == NULL || !g_str_equal (r->base, div ? "sqrt" : "rsqrt"))
        continue;
      /* γ · (x − μ) / σ (the Annotated Transformer's order): γ the norm's weight */
      if ((x = centred (g, c, &d)) == NULL && c->target != NULL && g_str_equal (c->base, "mul"))
        for (guint k = 0; k < 2 && x == NULL; k++)
          if ((x = centred (g, operand (g, c, k), &d)) != NULL)
            w = operand (g, c, 1 - k);
      if (x == NULL || (w != NULL && (w->user_dep || w->n_dims != 1)))
        continue;
      add = operand (g, r, 0);
      if (add == NULL || add->target == NULL || !g_str_equal (add->base, "add")
          || !gi_scalar_of (g, gi_arg (add, 1, "other"), &eps) || !(eps > 0 && eps < 1))
        continue;
      var = operand (g, add, 0);
      if (var == NULL || var->target == NULL)
        continue;
      if (g_str_equal (var->base, "var"))
        {
          json_object *dims = gi_arg (var, 1, "dim");
          gboolean keep;

          if (strstr (var->target, "correction") != NULL)
            {
              /* var.correction (x, dims, *, correction=1, keepdim=False) */
              json_object *kc = gi_member (var->kwargs, "correction");

              if (kc != NULL && !gi_scalar_of (g, kc, &corr))
                continue;
              keep = gi_arg_bool (var, 99, "keepdim");
            }
          else
            {
              /* var.dim (x, dims, unbiased=True, keepdim=False) */
              json_object *ub = gi_arg (var, 2, "unbiased");

              corr = ub == NULL || !json_object_is_type (ub, json_type_boolean) || json_object_get_boolean (ub);
              keep = gi_arg_bool (var, 3, "keepdim");
            }
          if (corr != 0 || !keep || operand (g, var, 0) != x || dims == NULL
              || !json_object_is_type (dims, json_type_array) || json_object_array_length (dims) != 1)
            continue;
          dv = (int) json_object_get_int64 (json_object_array_get_idx (dims, 0));
          if (dv < 0)
            dv += (int) x->n_dims;
          vx = x;
        }
      else
        {
          Value *sq = square_of (g, mean_over (g, var, &dv));

          vx = centred (g, sq, &dv) == x ? x : NULL;
        }
      if (vx != x || dv != d)
        continue;
      if (w != NULL && d != (int) x->n_dims - 1)
        continue;
      v->emit = EMIT_NORM;
      v->norm = NAPKIN_NORM_LAYERNORM;
      v->eps = eps;
      v->src[0] = gi_value_index (g, x);
      v->src[1] = w != NULL ? gi_value_index (g, w) : -1;
      v->axis_dim = (guint) d;
      v->rewritten = TRUE;
      return;
    }
}

/* The factors of a product tree (mul of tensors, mul/div by numbers), depth-limited. */
static void
factors (G         *g,
         Value     *v,
         GPtrArray *out,
         double    *k,
         int        depth)
{
  double c;

  if (depth > 0 && v->target != NULL && g_str_equal (v->base, "mul"))
    {
      Value *a = operand (g, v, 0), *b = operand (g, v, 1);

      if (a != NULL && gi_scalar_of (g, gi_arg (v, 1, "other"), &c))
        {
          *k *= c;
          factors (g, a, out, k, depth - 1);
          return;
        }
      if (a == NULL && b != NULL && gi_scalar_of (g, gi_arg (v, 0, "self"), &c))
        {
          *k *= c;
          factors (g, b, out, k, depth - 1);
          return;
        }
      if (a != NULL && b != NULL)
        {
          factors (g, a, out, k, depth - 1);
          factors (g, b, out, k, depth - 1);
          return;
        }
    }
  g_ptr_array_add (out, v);
}

static gboolean
close_to (double a,
          double b)
{
  return fabs (a - b) <= 1e-6 * fabs (b);
}

/* x + 0.044715·x³ times √(2/π): whether u is that of x. */
static gboolean
gelu_inner (G     *g,
            Value *u,
            Value *x)
{
  g_autoptr(GPtrArray) outer = g_ptr_array_new ();
  double k = 1, k3 = 1;
  Value *sum, *p, *cube = NULL;

  factors (g, u, outer, &k, 3);
  if (outer->len != 1 || !close_to (k, 0.7978845608028654))
    return FALSE;
  sum = outer->pdata[0];
  if (!g_str_equal (sum->base, "add") || operand (g, sum, 0) == NULL || operand (g, sum, 1) == NULL)
    return FALSE;
  p = operand (g, sum, 0) == x ? operand (g, sum, 1) : operand (g, sum, 0);
  if (operand (g, sum, 0) != x && operand (g, sum, 1) != x)
    return FALSE;
  {
    g_autoptr(GPtrArray) f = g_ptr_array_new ();
    double e;

    factors (g, p, f, &k3, 3);
    if (f->len == 1 && g_str_equal (((Value *) f->pdata[0])->base, "pow")
        && gi_scalar_of (g, gi_arg (f->pdata[0], 1, "exponent"), &e) && e == 3)
      cube = operand (g, f->pdata[0], 0);
    else if (f->len == 3 && f->pdata[0] == x && f->pdata[1] == x && f->pdata[2] == x)
      cube = x;
  }
  return cube == x && close_to (k3, 0.044715);
}

/* 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))): GPT-2's gelu_new, one gelu_tanh map. */
static void
find_gelu_tanh (G     *g,
                Value *v)
{
  g_autoptr(GPtrArray) f = g_ptr_array_new ();
  double k = 1;

  factors (g, v, f, &k, 3);
  if (f->len != 2 || !close_to (k, 0.5))
    return;
  for (guint side = 0; side < 2; side++)
    {
      Value *x = f->pdata[side], *one = f->pdata[1 - side], *t;
      double c;

      if (!g_str_equal (one->base, "add") || !gi_scalar_of (g, gi_arg (one, 1, "other"), &c) || c != 1)
        continue;
      t = operand (g, one, 0);
      if (t == NULL || !g_str_equal (t->base, "tanh") || operand (g, t, 0) == NULL || !gelu_inner (g, operand (g, t, 0), x))
        continue;
      v->emit = EMIT_MAP1;
      v->fn = NAPKIN_FN_GELU_TANH;
      v->src[0] = gi_value_index (g, x);
      v->rewritten = TRUE;
      return;
    }
}

/* x · sigmoid(c·x): SiLU for c = 1, CLIP's quick_gelu for c = 1.702 — as
 * silu(c·x) / c, three unary maps a GEMM's epilogue takes (gelu's x is read twice:
 * as a product of two maps it would be a kernel of its own). */
static void
find_sigmoid_gate (G     *g,
                   Value *v)
{
  for (guint side = 0; side < 2; side++)
    {
      Value *x = operand (g, v, side), *s = operand (g, v, 1 - side), *u;
      g_autoptr(GPtrArray) f = g_ptr_array_new ();
      double c = 1;

      if (x == NULL || s == NULL || s->target == NULL || !g_str_equal (s->base, "sigmoid")
          || (u = operand (g, s, 0)) == NULL)
        continue;
      factors (g, u, f, &c, 3);
      if (f->len != 1 || f->pdata[0] != x || !(c > 0) || !isfinite (c))
        continue;
      v->emit = EMIT_MAP1;
      v->fn = NAPKIN_FN_SILU;
      v->alpha = c;
      v->src[0] = gi_value_index (g, x);
      v->rewritten = TRUE;
      return;
    }
}

void
gi_find_patterns (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      if (v->target == NULL || !v->user_dep)
        continue;
      if (g_str_equal (v->base, "cat"))
        find_rotation (g, v);
      else if (g_str_equal (v->base, "masked_fill") || g_str_equal (v->base, "where"))
        find_mask (g, v);
      else if (g_str_equal (v->base, "scaled_dot_product_attention"))
        find_attention (g, v);
      else if (g_str_equal (v->base, "add"))
        find_additive_causal (g, v);
      else if (g_str_equal (v->base, "mul") || g_str_equal (v->base, "div"))
        {
          find_rmsnorm (g, v);
          if (!v->rewritten)
            find_layernorm (g, v);
          if (!v->rewritten && g_str_equal (v->base, "mul"))
            find_gelu_tanh (g, v);
          if (!v->rewritten && g_str_equal (v->base, "mul"))
            find_sigmoid_gate (g, v);
        }
    }
}

/* ---------------------------------------------------------------- the sweep */

/* A view of a parameter, a buffer or an input, through views only. */
static gboolean
view_of_placeholder (G     *g,
                     Value *v)
{
  Value *r = gi_strip_views (g, v);

  return r != NULL && r->target == NULL;
}

/* From the last value to the first: what nothing needs is absorbed (left out: a
 * pattern's inside, dead code, the shape assertions); a value computed from
 * parameters alone that the rest needs becomes an input of the diagram (T5's
 * position bias, a slice of a cos/sin cache), and what only it read is absorbed. */
void
gi_sweep (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      g_clear_pointer (&v->readers, g_ptr_array_unref);
      v->readers = g_ptr_array_new ();
    }
  for (guint i = g->values->len; i > 0; i--)
    {
      Value *v = g->values->pdata[i - 1];
      gboolean needed = v->is_output;
      g_autoptr(GPtrArray) ops = NULL;

      for (guint k = 0; k < v->readers->len && !needed; k++)
        needed = !((Value *) v->readers->pdata[k])->absorbed;
      if (!needed)
        {
          if (v->target != NULL && (g_str_has_prefix (v->base, "_assert") || g_str_has_prefix (v->base, "sym_")))
            g->n_checks++;
          v->absorbed = TRUE;
          v->emit = EMIT_SKIP;
          continue;
        }
      if (v->target != NULL && !v->user_dep && !v->is_scalar && !view_of_placeholder (g, v))
        {
          v->hoisted = TRUE;
          v->emit = EMIT_INPUT;
          v->role = 3;
          continue;
        }
      ops = operands (g, v);
      for (guint k = 0; k < ops->len; k++)
        g_ptr_array_add (((Value *) ops->pdata[k])->readers, v);
    }
}

/* After pass 1: a value read only by splits and parts (a fused projection) is not
 * emitted whole; its parts are (docs/import.md, "Parts of a projection"). */
static gboolean
carries_cut (G          *g,
             Value      *v,
             GHashTable *cut)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

  for (guint i = 0; i < v->n_dims; i++)
    gi_expand (g, v->dims[i], atoms);
  for (guint i = 0; i < atoms->len; i++)
    if (g_hash_table_contains (cut, GINT_TO_POINTER (gi_find (g, g_array_index (atoms, int, i)) + 1)))
      return TRUE;
  return FALSE;
}

void
gi_find_lazy (G *g)
{
  g_autoptr(GHashTable) cut = g_hash_table_new (NULL, NULL);

  /* the atoms some part cuts: only what carries one is computed in parts */
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      for (guint k = 0; v->emit == EMIT_PART && v->cuts != NULL && k < v->cuts->len; k++)
        g_hash_table_add (cut, GINT_TO_POINTER (gi_find (g, g_array_index (v->cuts, Restrict, k).atom) + 1));
    }
  for (guint i = g->values->len; i > 0; i--)
    {
      Value *v = g->values->pdata[i - 1];
      gboolean whole;

      /* a skipped value (refused, or failed before its axes were classed) has no
       * classes to look at */
      if (v->emit == EMIT_SKIP || v->emit == EMIT_TUPLE)
        continue;
      whole = v->is_output || v->readers->len == 0 || !carries_cut (g, v, cut);
      for (guint k = 0; k < v->readers->len && !whole; k++)
        {
          Value *r = v->readers->pdata[k];

          whole = !(r->emit == EMIT_PART || r->emit == EMIT_TUPLE || r->lazy || r->absorbed);
        }
      v->lazy = !whole;
    }
}
