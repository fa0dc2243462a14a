/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-import-graph-private.h"

/* Pass 1 of the graph importer, per operation (docs/import.md, "Covered operations"):
 * each value's dimensions from its operands', and what it becomes. */

gboolean
gi_parse_shape (G           *g,
                Value       *v,
                json_object *shape)
{
  if (shape == NULL || !json_object_is_type (shape, json_type_array))
    return TRUE;
  if (json_object_array_length (shape) > MAX_DIMS)
    {
      gi_fail (g, v, _("more than %d dimensions"), MAX_DIMS);
      return FALSE;
    }
  v->n_dims = json_object_array_length (shape);
  v->has_shape = TRUE;
  for (guint i = 0; i < v->n_dims; i++)
    {
      json_object *s = json_object_array_get_idx (shape, i);

      if (!json_object_is_type (s, json_type_int) || json_object_get_int64 (s) < 1
          || json_object_get_int64 (s) > NAPKIN_MAX_AXIS_SIZE)
        {
          gi_fail (g, v, _("dimension %u of the shape is not a size from 1 to 2^40"), i);
          return FALSE;
        }
      v->shape[i] = json_object_get_int64 (s);
    }
  return TRUE;
}

static double
default_eps (NapkinDtype dtype)
{
  /* torch.finfo(dtype).eps, rms_norm's default */
  switch (dtype)
    {
    case NAPKIN_DTYPE_BF16: return 0.0078125;
    case NAPKIN_DTYPE_FP16: return 0.0009765625;
    default:                return 1.1920928955078125e-07;
    }
}

/* Whether operand a can be read: refused once here when it cannot, silently when it
 * was refused itself (its own line is reported). */
gboolean
gi_need (G     *g,
         Value *v,
         Value *a,
         guint  rank_at_least)
{
  if (a == NULL)
    {
      gi_refuse (g, v, _("reads an operand that is not a tensor of the graph"), NULL);
      return FALSE;
    }
  if (a->poisoned || (a->emit == EMIT_SKIP && !a->absorbed))
    {
      v->poisoned = TRUE;
      return FALSE;
    }
  if (a->is_scalar)
    {
      gi_refuse (g, v, _("reads a number held in a tensor"), _("write the number itself"));
      return FALSE;
    }
  if (a->is_int && !v->is_bool)
    {
      gi_refuse (g, v, _("reads an integer tensor"),
                 _("integers are covered as 0/1 attention masks: masked_fill(mask == 0, -inf) or where(mask != 0, "
                   "x, -inf); pass what else reads them as float tensors"));
      return FALSE;
    }
  if (a->is_bool && !v->is_bool)
    {
      gi_refuse (g, v, _("reads a boolean tensor"),
                 _("booleans are covered as attention masks: masked_fill(~keep, -inf), where(keep, x, -inf) or "
                   "SDPA's attn_mask"));
      return FALSE;
    }
  if (a->n_dims < rank_at_least)
    {
      gi_refuse (g, v, _("reads an operand with too few dimensions"), NULL);
      return FALSE;
    }
  return TRUE;
}

void
gi_set_src (G     *g,
            Value *v,
            guint  i,
            Value *a)
{
  v->src[i] = a ? gi_value_index (g, a) : -1;
}


/* Operand `operand` of v reads its class `from` as `to` (the key axis). */
void
gi_add_rename (G     *g,
               Value *v,
               guint  operand,
               int    from,
               int    to)
{
  Rename r = { operand, gi_find (g, from), to };

  if (v->renames == NULL)
    v->renames = g_array_new (FALSE, FALSE, sizeof (Rename));
  g_array_append_val (v->renames, r);
}

/* The summed dimension of a product: one axis, unless one side is the key-axis copy
 * of the other's class (P·V reads V's positions as the keys). */
static gboolean
unite_or_rename (G     *g,
                 Value *v,
                 guint  operand,
                 int    mine,
                 int    other)
{
  if (gi_related (g, mine, other))
    {
      gi_add_rename (g, v, operand, mine, other);
      return TRUE;
    }
  return gi_unite (g, v, other, mine);
}

/* Whether x holds, in a dimension other than `skip`, the atoms of class c. */
static gboolean
holds_class (G     *g,
             Value *x,
             guint  skip,
             int    c)
{
  g_autoptr(GArray) want = g_array_new (FALSE, FALSE, sizeof (int));

  gi_expand (g, c, want);
  for (guint i = 0; i < x->n_dims; i++)
    {
      g_autoptr(GArray) have = g_array_new (FALSE, FALSE, sizeof (int));
      gboolean same;

      if (i == skip || x->dims[i] == NONE)
        continue;
      gi_expand (g, x->dims[i], have);
      same = have->len == want->len;
      for (guint k = 0; same && k < have->len; k++)
        same = gi_find (g, g_array_index (have, int, k)) == gi_find (g, g_array_index (want, int, k));
      if (same)
        return TRUE;
    }
  return FALSE;
}

/* Scores of a self-attention: the result would carry one class twice (queries and
 * keys over the same positions). The second operand's class becomes the key axis,
 * a renamed copy (docs/import.md, "Attention written out"). */
static gboolean
key_axis (G     *g,
          Value *v,
          guint  operand,
          int    row,
          int   *col)
{
  g_autoptr(GArray) ra = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr(GArray) ca = g_array_new (FALSE, FALSE, sizeof (int));
  int k;

  if (row == NONE || *col == NONE)
    return TRUE;
  gi_expand (g, row, ra);
  gi_expand (g, *col, ca);
  for (guint i = 0; i < ra->len; i++)
    for (guint j = 0; j < ca->len; j++)
      if (gi_find (g, g_array_index (ra, int, i)) == gi_find (g, g_array_index (ca, int, j)))
        {
          /* positions of several axes (an image's h and w flattened: SAGAN, the SD
           * VAE's AttnBlock) have one key axis of their size: the rename merges them */
          k = gi_alias (g, *col);
          gi_add_rename (g, v, operand, *col, k);
          gi_hint (g, row, "s", 1);
          *col = k;
          return TRUE;
        }
  return TRUE;
}

/* Names for written-out attention's scores: the batch dims' atoms b, h, g (grouped
 * heads), the summed one d, as SDPA's path names them. */
static void
attention_hints (G         *g,
                 const int *batch,
                 guint      nb,
                 int        summed)
{
  static const char *const names[] = { "b", "h", "g" };
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

  for (guint i = 0; i < nb; i++)
    gi_expand (g, batch[i], atoms);
  for (guint i = 0; i < atoms->len && i < G_N_ELEMENTS (names); i++)
    gi_hint (g, g_array_index (atoms, int, i), names[i], 1);
  gi_hint (g, summed, "d", 1);
}

/* Contraction of a[..., n, k] and b[..., k, m] (batch dims broadcast). */
static gboolean
matmul_dims (G     *g,
             Value *v,
             Value *a,
             Value *b)
{
  guint nb = v->n_dims - 2;
  int col;

  if (v->n_dims < 2 || a->n_dims < 2 || b->n_dims < 2)
    {
      gi_refuse (g, v, _("of vectors is not covered"), _("give both operands two dimensions or more (unsqueeze)"));
      return FALSE;
    }
  /* P·V renames V's positions as the keys: the second operand's where P comes first
   * (attn @ v), the first's where V does (SAGAN's bmm(v, attnᵀ), whose second operand
   * already holds the query positions) */
  if (gi_related (g, b->dims[b->n_dims - 2], a->dims[a->n_dims - 1])
      && holds_class (g, b, b->n_dims - 2, a->dims[a->n_dims - 1]))
    {
      gi_add_rename (g, v, 0, a->dims[a->n_dims - 1], b->dims[b->n_dims - 2]);
    }
  else if (!unite_or_rename (g, v, 1, b->dims[b->n_dims - 2], a->dims[a->n_dims - 1]))
    return FALSE;
  if (v->renames != NULL)
    gi_hint (g, b->dims[b->n_dims - 1], "dv", 1);   /* P·V: the values' own dimension */
  for (guint i = 0; i < nb; i++)
    {
      int ia = (int) i - (int) (nb - (a->n_dims - 2)), ib = (int) i - (int) (nb - (b->n_dims - 2));
      int da = ia >= 0 ? a->dims[ia] : NONE, db = ib >= 0 ? b->dims[ib] : NONE;

      if (!gi_unite (g, v, da, db))
        return FALSE;
      v->dims[i] = da != NONE ? da : db;
    }
  col = b->dims[b->n_dims - 1];
  if (!key_axis (g, v, 1, a->dims[a->n_dims - 2], &col))
    return FALSE;
  if (col != b->dims[b->n_dims - 1])
    attention_hints (g, v->dims, nb, a->dims[a->n_dims - 1]);
  v->dims[nb] = a->dims[a->n_dims - 2];
  v->dims[nb + 1] = col;
  return TRUE;
}

/* One side of an einsum equation, spaces removed and "..." spelled out as capital
 * letters for the leading dimensions of a tensor of `rank`. */
static char *
einsum_side (const char *s,
             guint       rank)
{
  GString *out = g_string_new (NULL);
  guint letters = 0;

  for (const char *p = s; *p; p++)
    letters += g_ascii_isalpha (*p);
  for (const char *p = s; *p; p++)
    {
      if (g_str_has_prefix (p, "..."))
        {
          for (guint i = 0; letters + i < rank; i++)
            g_string_append_c (out, (char) ('Z' - (rank - letters) + 1 + i));
          p += 2;
        }
      else if (g_ascii_isalpha (*p))
        g_string_append_c (out, *p);
    }
  return g_string_free (out, FALSE);
}

static gboolean
einsum_dims (G     *g,
             Value *v)
{
  const char *eq = json_object_get_string (gi_arg (v, 0, "equation"));
  json_object *ops = gi_arg (v, 1, "tensors");
  g_auto(GStrv) sides = NULL;
  g_auto(GStrv) ins = NULL;
  g_autofree char *outs = NULL;
  int letter[128];

  for (guint i = 0; i < 128; i++)
    letter[i] = -2;
  if (eq == NULL || ops == NULL || !json_object_is_type (ops, json_type_array)
      || (sides = g_strsplit (eq, "->", 2))[1] == NULL)
    {
      gi_refuse (g, v, _("without an explicit output is not covered"), _("write the output after “->”"));
      return FALSE;
    }
  ins = g_strsplit (sides[0], ",", -1);
  if (g_strv_length (ins) != 2 || json_object_array_length (ops) != 2)
    {
      gi_refuse (g, v, _("of other than two operands is not covered"), _("write it as a chain of two-operand einsums"));
      return FALSE;
    }
  for (guint k = 0; k < 2; k++)
    {
      Value *a = gi_value (g, json_object_array_get_idx (ops, k));
      g_autofree char *s = NULL;

      if (!gi_need (g, v, a, 0))
        return FALSE;
      s = einsum_side (ins[k], a->n_dims);
      if (strlen (s) != a->n_dims)
        {
          gi_fail (g, v, _("einsum operand %u has %u dimensions, its letters “%s” %zu"), k + 1, a->n_dims, s, strlen (s));
          return FALSE;
        }
      gi_set_src (g, v, k, a);
      for (guint i = 0; s[i]; i++)
        {
          int c = (unsigned char) s[i] & 127;
          char h[2] = { s[i], 0 };

          if (letter[c] == -2 || letter[c] == NONE)
            letter[c] = a->dims[i];
          else if (!unite_or_rename (g, v, k, a->dims[i], letter[c]))
            return FALSE;
          if (g_ascii_islower (s[i]))
            gi_hint (g, a->dims[i], h, 2);
        }
    }
  outs = einsum_side (sides[1], v->n_dims);
  if (strlen (outs) != v->n_dims)
    {
      gi_fail (g, v, _("the einsum output “%s” does not match the result's %u dimensions"), outs, v->n_dims);
      return FALSE;
    }
  for (guint i = 0; outs[i]; i++)
    v->dims[i] = letter[(unsigned char) outs[i] & 127] == -2 ? NONE : letter[(unsigned char) outs[i] & 127];
  /* the second operand's letters that repeat a class of the first's: the key axis */
  for (guint i = 0; outs[i]; i++)
    for (guint j = 0; j < i; j++)
      if (v->dims[i] != NONE && v->dims[j] != NONE && gi_find (g, v->dims[i]) == gi_find (g, v->dims[j]))
        {
          if (!key_axis (g, v, 1, v->dims[j], &v->dims[i]))
            return FALSE;
          attention_hints (g, v->dims, j, NONE);
        }
  return TRUE;
}

static const char * const map1_names[][2] = {
  { "gelu", "gelu" }, { "silu", "silu" }, { "relu", "relu" }, { "sigmoid", "sigmoid" }, { "tanh", "tanh" },
  { "exp", "exp" }, { "neg", "neg" }, { "rsqrt", "rsqrt" }, { "sqrt", "sqrt" }, { "square", "square" },
  { "log", "log" }, { "reciprocal", "reciprocal" },
};

static const char * const view_names[] = {
  "view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "transpose", "t", "permute", "contiguous",
  "clone", "alias", "detach", "lift_fresh_copy", "expand", "flatten", "unflatten", "_to_copy", "to", "type_as",
};

gboolean
gi_in_list (const char         *base,
            const char * const *list,
            gsize               n)
{
  for (gsize i = 0; i < n; i++)
    if (g_strcmp0 (base, list[i]) == 0)
      return TRUE;
  return FALSE;
}

/* Permutation views: the result's dims are the operand's, reordered. */
static gboolean
permute_dims (G     *g,
              Value *v,
              Value *a)
{
  if (g_str_equal (v->base, "t"))
    {
      if (a->n_dims == 2)
        v->dims[0] = a->dims[1], v->dims[1] = a->dims[0];
      else
        gi_copy_dims (v, a);
      return TRUE;
    }
  if (g_str_equal (v->base, "transpose"))
    {
      gint64 d0, d1;
      int i0, i1;

      if (!gi_arg_int (v, 1, "dim0", 0, &d0) || !gi_arg_int (v, 2, "dim1", 0, &d1) || !gi_norm_dim (d0, a->n_dims, &i0)
          || !gi_norm_dim (d1, a->n_dims, &i1))
        {
          gi_fail (g, v, _("transpose needs two dimensions"));
          return FALSE;
        }
      gi_copy_dims (v, a);
      v->dims[i0] = a->dims[i1];
      v->dims[i1] = a->dims[i0];
      return TRUE;
    }
  /* permute */
  {
    json_object *perm = gi_arg (v, 1, "dims");

    if (perm == NULL || !json_object_is_type (perm, json_type_array) || json_object_array_length (perm) != a->n_dims)
      {
        gi_fail (g, v, _("permute needs one index per dimension"));
        return FALSE;
      }
    for (guint i = 0; i < a->n_dims; i++)
      {
        int k;

        if (!gi_norm_dim (json_object_get_int64 (json_object_array_get_idx (perm, i)), a->n_dims, &k))
          {
            gi_fail (g, v, _("permute index out of range"));
            return FALSE;
          }
        v->dims[i] = a->dims[k];
      }
    return TRUE;
  }
}

/* expand: a dimension of size 1 repeated is an axis the value does not store (Hugging
 * Face's repeat_kv: the key heads' group axis, docs/import.md "Grouped heads"). */
static void
expand_dims (G     *g,
             Value *v,
             Value *a)
{
  guint lead = v->n_dims - a->n_dims;

  for (guint i = 0; i < v->n_dims; i++)
    {
      int d = i >= lead ? a->dims[i - lead] : NONE;

      if (d == NONE && v->shape[i] != 1)
        {
          d = gi_new_class (g, v->shape[i]);
          gi_hint (g, d, "g", 0);
        }
      v->dims[i] = d;
    }
}

/* A view, reshape, transpose, permute, expand or copy: the same data under new dims. */
static void
pass1_view (G     *g,
            Value *v,
            Value *a)
{
  const char *b = v->base;

  if (!gi_need (g, v, a, 0))
    return;
  gi_set_src (g, v, 0, a);
  v->emit = a->dtype != v->dtype ? EMIT_CAST : EMIT_VIEW;
  if (g_str_equal (b, "transpose") || g_str_equal (b, "t") || g_str_equal (b, "permute"))
    permute_dims (g, v, a);
  else if (g_str_equal (b, "expand"))
    expand_dims (g, v, a);
  else if (v->n_dims == a->n_dims && (g_str_has_prefix (b, "_to") || g_str_equal (b, "to") || g_str_equal (b, "type_as")
                                      || g_str_equal (b, "contiguous") || g_str_equal (b, "clone")
                                      || g_str_equal (b, "alias") || g_str_equal (b, "detach")
                                      || g_str_equal (b, "lift_fresh_copy")))
    gi_copy_dims (v, a);
  else
    gi_reshape (g, v, a);
}

/* repeat_interleave(x, n, dim): each element n times, the repeats an axis the value
 * does not store ([h, g], as expand + reshape make it). */
static void
pass1_repeat (G     *g,
              Value *v,
              Value *a)
{
  gint64 n, d;
  int dim, rep;
  g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));

  if (!gi_need (g, v, a, 1))
    return;
  if (!gi_arg_int (v, 1, "repeats", 0, &n) || n < 1 || !gi_arg_int (v, 2, "dim", G_MININT64, &d)
      || d == G_MININT64 || !gi_norm_dim (d, a->n_dims, &dim))
    {
      gi_refuse (g, v, _("is covered with a number of repeats and a dimension only"),
                 _("write repeat_interleave(n, dim=…)"));
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_VIEW;
  if (n == 1)
    return;
  rep = gi_new_class (g, n);
  gi_hint (g, rep, "g", 0);
  if (a->dims[dim] != NONE)
    g_array_append_val (kids, a->dims[dim]);
  g_array_append_val (kids, rep);
  v->dims[dim] = gi_composite (g, kids);
}

/* A product of x and y, with an optional bias added after it. */
static void
set_contract (G     *g,
              Value *v,
              Value *x,
              Value *y,
              Value *bias)
{
  gi_set_src (g, v, 0, x);
  gi_set_src (g, v, 1, y);
  v->extra[0] = bias ? gi_value_index (g, bias) : -1;
  v->emit = EMIT_CONTRACT;
}

/* The result's class for a product's output axis `out` of weight w: `out`, or where the
 * graph makes w's two axes one (x + W(x), found on the first reading), a class of its
 * own that the product's result is renamed to after the product and its bias. */
static int
square_out (G     *g,
            Value *v,
            Value *w,
            int    out)
{
  int o;

  if (g->square == NULL || w->param == NULL || !g_hash_table_contains (g->square, w->param))
    return out;
  o = gi_new_class (g, gi_cls (g, gi_find (g, out))->size);
  v->out_from = out;
  return o;
}

/* F.linear: x · Wᵀ (+ bias) over the last dimension. */
static void
pass1_linear (G     *g,
              Value *v,
              Value *a)
{
  Value *w = gi_arg_value (g, v, 1, "weight"), *bias = gi_arg_value (g, v, 2, "bias");

  if (!gi_need (g, v, a, 1) || !gi_need (g, v, w, 2) || (bias && !gi_need (g, v, bias, 1)))
    return;
  if (w->n_dims != 2)
    {
      gi_refuse (g, v, _("with a weight that is not a matrix is not covered"), NULL);
      return;
    }
  if (!gi_unite (g, v, a->dims[a->n_dims - 1], w->dims[1]))
    return;
  for (guint i = 0; i + 1 < a->n_dims; i++)
    v->dims[i] = a->dims[i];
  v->dims[v->n_dims - 1] = square_out (g, v, w, w->dims[0]);
  if (bias && !gi_unite (g, v, bias->dims[bias->n_dims - 1], w->dims[0]))
    return;
  set_contract (g, v, a, w, bias);
}

/* Element `k` of an int-list argument (a convolution's stride [2, 2], padding [0, 0]):
 * the list's, or the one number given for every dimension, or `fallback` where absent
 * (or the list is shorter); G_MININT64 where it is something else (padding="same"). */
static gint64
int_list_at (Value      *v,
             guint       i,
             const char *key,
             guint       k,
             gint64      fallback)
{
  json_object *a = gi_arg (v, i, key);

  if (a == NULL || json_object_is_type (a, json_type_null))
    return fallback;
  if (json_object_is_type (a, json_type_array))
    {
      if (k >= json_object_array_length (a))
        return fallback;
      a = json_object_array_get_idx (a, k);
    }
  return json_object_is_type (a, json_type_int) ? json_object_get_int64 (a) : G_MININT64;
}

/* conv1d/2d/3d with a 1×1 kernel (stride 1, no padding, one group): a product over the
 * channels, dimension 1 (Stable Diffusion's q, k, v and proj_out, a UNet's proj_in):
 * the weight [out, in, 1, 1] contracted with x [b, in, h, w] into [b, out, h, w]; or
 * with its stride its kernel (a ViT's patch embedding): x's h and w each split into
 * (patches, within a patch), contracted with the channels and the kernel. */
static void
pass1_conv (G     *g,
            Value *v,
            Value *a)
{
  Value *w = gi_arg_value (g, v, 1, "weight"), *bias = gi_arg_value (g, v, 2, "bias");
  gint64 groups = 1;
  gboolean pointwise = TRUE, patches = TRUE, padded = FALSE;

  if (!gi_need (g, v, a, 3) || !gi_need (g, v, w, 3) || (bias && !gi_need (g, v, bias, 1)))
    return;
  for (guint k = 2; k < w->n_dims && w->n_dims == a->n_dims; k++)
    {
      gint64 stride = int_list_at (v, 3, "stride", k - 2, 1);

      padded |= int_list_at (v, 4, "padding", k - 2, 0) != 0;
      pointwise &= w->shape[k] == 1 && stride == 1;
      patches &= w->shape[k] == stride && a->shape[k] % stride == 0;
    }
  if (w->n_dims != a->n_dims || !gi_arg_int (v, 6, "groups", 1, &groups) || groups != 1 || padded)
    {
      gi_refuse (g, v, _("with padding or groups is not covered"),
                 _("a 1×1 convolution, or one whose stride is its kernel (patches)"));
      return;
    }
  if (!pointwise && !patches)
    {
      gi_refuse (g, v, _("with a kernel other than 1×1 or its stride is not covered"),
                 _("a 1×1 convolution, or one whose stride is its kernel (a ViT's patch embedding)"));
      return;
    }
  if (!gi_unite (g, v, a->dims[1], w->dims[1]))
    return;
  for (guint i = 0; i < a->n_dims; i++)
    v->dims[i] = i == 1 ? square_out (g, v, w, w->dims[0]) : a->dims[i];
  /* patches (ViT): each spatial dimension of x is (patches, within a patch), the weight's
   * kernel the second, contracted with the channels; the result's the first */
  for (guint k = 2; !pointwise && k < a->n_dims; k++)
    {
      g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));
      int outer = gi_new_class (g, a->shape[k] / w->shape[k]), inner = gi_new_class (g, w->shape[k]);

      g_array_append_val (kids, outer);
      g_array_append_val (kids, inner);
      if (!gi_split (g, v, a->dims[k], kids) || !gi_unite (g, v, inner, w->dims[k]))
        return;
      v->dims[k] = outer;
    }
  if (bias && !gi_unite (g, v, bias->dims[bias->n_dims - 1], w->dims[0]))
    return;
  set_contract (g, v, a, w, bias);
}

/* mm, bmm, matmul, addmm (GPT-2's Conv1D: a weight [in, out]), baddbmm (BLOOM's
 * ALiBi: bias + alpha · a @ b): a product over the shared inner dimension. */
static void
pass1_matmul (G     *g,
              Value *v,
              Value *a)
{
  const char *b = v->base;
  gboolean addmm = g_str_equal (b, "addmm"), baddbmm = g_str_equal (b, "baddbmm");
  gboolean with_bias = addmm || baddbmm;
  Value *x = gi_arg_value (g, v, with_bias ? 1 : 0, addmm ? "mat1" : baddbmm ? "batch1" : "self");
  Value *y = gi_arg_value (g, v, with_bias ? 2 : 1, addmm ? "mat2" : baddbmm ? "batch2" : "other");
  Value *bias = with_bias ? a : NULL;
  double beta = 1, alpha = 1;

  if (!gi_need (g, v, x, 2) || !gi_need (g, v, y, 2) || (with_bias && !gi_need (g, v, bias, 1)))
    return;
  if (with_bias && (!gi_arg_double (v, 3, "beta", 1, &beta) || !gi_arg_double (v, 4, "alpha", 1, &alpha) || beta != 1
                    || (addmm && alpha != 1)))
    {
      gi_refuse (g, v, beta != 1 ? _("with beta ≠ 1 is not covered") : _("with alpha is not covered"),
                 _("write bias + x @ w, scaled where needed"));
      return;
    }
  /* the product scaled, then the bias added (a scale the attention kernel folds in) */
  v->product_alpha = alpha != 1 ? alpha : 0;
  if (!matmul_dims (g, v, x, y))
    return;
  /* the bias broadcasts against the product, right-aligned */
  for (guint i = 0; bias && i < bias->n_dims && i < v->n_dims; i++)
    {
      guint bi = bias->n_dims - 1 - i, vi = v->n_dims - 1 - i;

      if (bias->dims[bi] != NONE && gi_dim_size (g, bias, bi) == gi_dim_size (g, v, vi)
          && !gi_unite (g, v, bias->dims[bi], v->dims[vi]))
        return;
    }
  set_contract (g, v, x, y, bias);
}

/* softmax over one dimension. */
static void
pass1_softmax (G     *g,
               Value *v,
               Value *a)
{
  gint64 dim;

  if (!gi_need (g, v, a, 1))
    return;
  if (!gi_arg_int (v, 1, "dim", -1, &dim) || !gi_norm_dim (dim, a->n_dims, &v->axis_dim))
    {
      gi_fail (g, v, _("softmax over no dimension"));
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_SOFTMAX;
  /* the scores of a written-out attention: their product's axes named as SDPA's are */
  while (a != NULL && a->src[0] >= 0 && a->emit != EMIT_CONTRACT
         && (a->emit == EMIT_VIEW || a->emit == EMIT_CAST || a->emit == EMIT_SCALE || a->emit == EMIT_MASK
             || a->emit == EMIT_MAP2 || a->emit == EMIT_MAP1))
    a = gi_src (g, a, 0);
  if (a != NULL && a->emit == EMIT_CONTRACT && a->n_dims >= 3 && gi_src (g, a, 0) != NULL
      && !g_str_equal (a->base, "linear"))
    {
      Value *q = gi_src (g, a, 0);

      attention_hints (g, a->dims, a->n_dims - 2, q->dims[q->n_dims - 1]);
      gi_hint (g, a->dims[a->n_dims - 2], "s", 0);
    }
}

/* A norm's weight and bias (either may be absent) run along the class `along`. */
static gboolean
unite_affine (G     *g,
              Value *v,
              Value *w,
              Value *bias,
              int    along)
{
  return (w == NULL || (gi_need (g, v, w, 1) && gi_unite (g, v, w->dims[w->n_dims - 1], along)))
         && (bias == NULL || (gi_need (g, v, bias, 1) && gi_unite (g, v, bias->dims[bias->n_dims - 1], along)));
}

/* layer_norm, native_layer_norm, rms_norm over the last dimension, with weight and bias. */
static void
pass1_norm (G     *g,
            Value *v,
            Value *a)
{
  const char *b = v->base;
  gboolean rms = g_str_equal (b, "rms_norm");
  json_object *shape = gi_arg (v, 1, "normalized_shape");
  Value *w = gi_arg_value (g, v, 2, "weight"), *bias = rms ? NULL : gi_arg_value (g, v, 3, "bias");

  if (!gi_need (g, v, a, 1))
    return;
  if (shape == NULL || !json_object_is_type (shape, json_type_array) || json_object_array_length (shape) != 1)
    {
      gi_refuse (g, v, _("over more than the last dimension is not covered"),
                 _("normalize over the last dimension (reshape first)"));
      return;
    }
  v->norm = rms ? NAPKIN_NORM_RMSNORM : NAPKIN_NORM_LAYERNORM;
  if (!gi_arg_double (v, rms ? 3 : 4, "eps", rms ? default_eps (a->dtype) : 1e-5, &v->eps) || !(v->eps > 0 && v->eps < 1))
    {
      gi_fail (g, v, _("eps must be a number between 0 and 1"));
      return;
    }
  if (g_str_equal (b, "native_layer_norm"))
    v->n_dims = a->n_dims;
  gi_copy_dims (v, a);
  v->axis_dim = a->n_dims - 1;
  gi_hint (g, a->dims[a->n_dims - 1], "e", 1);
  if (!unite_affine (g, v, w, bias, a->dims[a->n_dims - 1]))
    return;
  gi_set_src (g, v, 0, a);
  gi_set_src (g, v, 1, w);
  gi_set_src (g, v, 2, bias);
  v->emit = EMIT_NORM;
}

/* group_norm (x [b, C, spatial…], G groups, weight and bias [C]): a layernorm of each
 * sample's group of C/G channels with all their positions (docs/import.md). */
static void
pass1_group_norm (G     *g,
                  Value *v,
                  Value *a)
{
  Value *w = gi_arg_value (g, v, 2, "weight"), *bias = gi_arg_value (g, v, 3, "bias");
  gint64 groups = 0;

  if (!gi_need (g, v, a, 2) || (w && !gi_need (g, v, w, 1)) || (bias && !gi_need (g, v, bias, 1)))
    return;
  if (!gi_arg_int (v, 1, "num_groups", 0, &groups) || groups <= 0 || a->shape[1] % groups != 0)
    {
      gi_fail (g, v, _("num_groups must divide the channels"));
      return;
    }
  if (!gi_arg_double (v, 4, "eps", 1e-5, &v->eps) || !(v->eps > 0 && v->eps < 1))
    {
      gi_fail (g, v, _("eps must be a number between 0 and 1"));
      return;
    }
  gi_copy_dims (v, a);
  if (!unite_affine (g, v, w, bias, a->dims[1]))
    return;
  v->extra[1] = (int) groups;
  gi_set_src (g, v, 0, a);
  gi_set_src (g, v, 1, w);
  gi_set_src (g, v, 2, bias);
  v->emit = EMIT_GROUP_NORM;
}

/* split, split_with_sizes, chunk, unbind: a tuple whose items are parts. Equal parts
 * split the dimension's class into [part, rest], so that the parts share the rest's
 * axes (q, k and v of a fused projection: each [h, d]). */
static void
pass1_tuple (G     *g,
             Value *v,
             Value *a)
{
  gint64 d, n = 0, size = 0;
  int dim;
  gboolean unbind = g_str_equal (v->base, "unbind");

  if (!gi_need (g, v, a, 1))
    return;
  if (!gi_arg_int (v, unbind ? 1 : 2, "dim", 0, &d) || !gi_norm_dim (d, a->n_dims, &dim))
    {
      gi_fail (g, v, _("a split over no dimension"));
      return;
    }
  gi_set_src (g, v, 0, a);
  v->axis_dim = dim;
  v->emit = EMIT_TUPLE;
  if (g_str_equal (v->base, "chunk") && gi_arg_int (v, 1, "chunks", 0, &n) && n > 0)
    size = (a->shape[dim] + n - 1) / n;
  else if (g_str_equal (v->base, "split") && gi_arg_is_number (v, 1))
    gi_arg_int (v, 1, "split_size", 0, &size);
  else if (g_str_equal (v->base, "split_with_sizes") || g_str_equal (v->base, "split"))
    {
      json_object *sizes = gi_arg (v, 1, "split_sizes");

      for (guint i = 0; sizes && json_object_is_type (sizes, json_type_array) && i < json_object_array_length (sizes); i++)
        if (i == 0)
          size = json_object_get_int64 (json_object_array_get_idx (sizes, 0));
        else if (json_object_get_int64 (json_object_array_get_idx (sizes, i)) != size)
          size = 0;
    }
  if (!unbind && size > 1 && size < a->shape[dim] && a->shape[dim] % size == 0 && a->dims[dim] != NONE)
    {
      g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));
      int part = gi_new_class (g, a->shape[dim] / size), rest = gi_new_class (g, size);

      g_array_append_val (kids, part);
      g_array_append_val (kids, rest);
      gi_split (g, v, a->dims[dim], kids);
    }
}

/* The range an item of a split, chunk or unbind covers. */
static gboolean
item_range (G      *g,
            Value  *t,
            gint64  index,
            gint64 *start,
            gint64 *end)
{
  Value *a = gi_src (g, t, 0);
  gint64 n = a->shape[t->axis_dim], size;

  if (g_str_equal (t->base, "unbind"))
    size = 1;
  else if (g_str_equal (t->base, "chunk"))
    {
      gint64 chunks = 1;

      gi_arg_int (t, 1, "chunks", 1, &chunks);
      size = (n + chunks - 1) / MAX (chunks, 1);
    }
  else if (gi_arg_is_number (t, 1))
    gi_arg_int (t, 1, "split_size", 1, &size);
  else
    {
      json_object *sizes = gi_arg (t, 1, "split_sizes");
      gint64 at = 0;

      if (sizes == NULL || !json_object_is_type (sizes, json_type_array) || index >= (gint64) json_object_array_length (sizes))
        return FALSE;
      for (gint64 i = 0; i < index; i++)
        at += json_object_get_int64 (json_object_array_get_idx (sizes, i));
      *start = at;
      *end = at + json_object_get_int64 (json_object_array_get_idx (sizes, index));
      return *end <= n;
    }
  *start = index * size;
  *end = MIN (*start + size, n);
  return *start < n;
}

/* getitem: native_layer_norm's output, or an item of a split. */
static void
pass1_getitem (G     *g,
               Value *v,
               Value *a)
{
  gint64 index, start, end;

  if (a != NULL && a->emit == EMIT_TUPLE && gi_arg_int (v, 1, NULL, -1, &index) && index >= 0)
    {
      if (!item_range (g, a, index, &start, &end))
        {
          gi_fail (g, v, _("no item %lld of this split"), (long long) index);
          return;
        }
      gi_set_src (g, v, 0, gi_src (g, a, 0));
      v->emit = EMIT_PART;
      /* the parts are named from the line that splits where it names each of them
       * (q, k, v = …); not after what a call on that line returns (nn.MultiheadAttention's
       * "attn_output, attn_output_weights = …" splits its projection inside torch) */
      {
        gint64 items = 0, s0, e0;

        while (items < 64 && item_range (g, a, items, &s0, &e0))
          items++;
        if (gi_lhs_name_count (a->code) == items)
          v->stem = gi_lhs_name (a->code, index);
      }
      gi_restrict_dim (g, v, gi_src (g, a, 0), a->axis_dim, start, end, g_str_equal (a->base, "unbind"));
      return;
    }
  if (a != NULL && a->poisoned)
    {
      v->poisoned = TRUE;
      return;
    }
  if (a == NULL || !g_str_equal (a->base, "native_layer_norm") || !gi_arg_int (v, 1, NULL, -1, &index) || index != 0)
    {
      gi_refuse (g, v, _("of a result other than a split or a norm is not covered"), NULL);
      return;
    }
  /* a layer norm that was left out has no dimensions to take */
  if (!gi_need (g, v, a, 0))
    return;
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_VIEW;
}

/* select, slice, narrow: one index or a range of one dimension (a whole slice is a view). */
static void
pass1_part (G     *g,
            Value *v,
            Value *a)
{
  gboolean sel = g_str_equal (v->base, "select"), narrow = g_str_equal (v->base, "narrow");
  gint64 d, start = 0, end = 0, step = 1;
  int dim;

  if (!gi_need (g, v, a, 1))
    return;
  if (!gi_arg_int (v, 1, "dim", 0, &d) || !gi_norm_dim (d, a->n_dims, &dim))
    {
      gi_fail (g, v, _("a slice over no dimension"));
      return;
    }
  if (sel)
    {
      gi_arg_int (v, 2, "index", 0, &start);
      if (start < 0)
        start += a->shape[dim];
      end = start + 1;
    }
  else if (narrow)
    {
      gi_arg_int (v, 2, "start", 0, &start);
      gi_arg_int (v, 3, "length", 1, &end);
      end += start;
    }
  else if (!gi_arg_int (v, 2, "start", 0, &start) || !gi_arg_int (v, 3, "end", G_MAXINT64, &end)
           || !gi_arg_int (v, 4, "step", 1, &step))
    {
      gi_fail (g, v, _("a slice with bounds that are not numbers"));
      return;
    }
  if (step != 1)
    {
      gi_refuse (g, v, _("with a step is not covered"), _("slice with step 1"));
      return;
    }
  if (start < 0)
    start = MAX (start + a->shape[dim], 0);
  if (end < 0)
    end += a->shape[dim];
  end = MIN (end, a->shape[dim]);
  gi_set_src (g, v, 0, a);
  if (!sel && start == 0 && end == a->shape[dim])
    {
      gi_copy_dims (v, a);
      v->emit = EMIT_VIEW;
      return;
    }
  v->emit = EMIT_PART;
  /* a select names its part from the line only where that line names every item */
  if (!sel || gi_lhs_name_count (v->code) == a->shape[dim])
    v->stem = gi_lhs_name (v->code, sel ? start : -1);
  gi_restrict_dim (g, v, a, dim, start, end, sel);
}

/* The mask or bias of an attention's scores (dims [batch…, heads, L, K]) broadcast
 * onto them, right-aligned. */
static gboolean
unite_onto (G     *g,
            Value *v,
            Value *m,
            int   *scores,
            guint  n)
{
  if (m->n_dims > n)
    {
      gi_fail (g, v, _("the mask has more dimensions than the scores"));
      return FALSE;
    }
  for (guint i = 0; i < m->n_dims; i++)
    {
      int d = m->dims[m->n_dims - 1 - i], s = scores[n - 1 - i];
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

      if (d == NONE)
        continue;
      gi_expand (g, s, atoms);
      if (!gi_unite (g, v, d, s))
        return FALSE;
    }
  return TRUE;
}

/* scaled_dot_product_attention: causal or not, grouped query heads through
 * enable_gqa, a boolean attn_mask (a mask) or a float one (added to the scores). */
static void
pass1_attention (G     *g,
                 Value *v)
{
  Value *q = gi_src (g, v, 0), *k = gi_src (g, v, 1), *vv = gi_src (g, v, 2);
  Value *mask = v->extra[0] >= 0 ? g->values->pdata[v->extra[0]] : NULL;
  double dropout;
  guint nb;
  int hq, hk, L, S, E, Ev, K;

  if (!gi_need (g, v, q, 3) || !gi_need (g, v, k, 3) || !gi_need (g, v, vv, 3)
      || (mask != NULL && !mask->is_bool && !gi_need (g, v, mask, 1)))
    return;
  if (!gi_arg_double (v, 4, "dropout_p", 0, &dropout) || dropout != 0)
    {
      gi_refuse (g, v, _("with dropout_p other than 0 is not covered"),
                 _("export the module in eval mode (model.eval()) or pass dropout_p=0"));
      return;
    }
  if (q->n_dims != k->n_dims || k->n_dims != vv->n_dims)
    {
      gi_refuse (g, v, _("of query, key and value of different ranks is not covered"), NULL);
      return;
    }
  nb = q->n_dims - 3;
  hq = q->dims[nb], L = q->dims[nb + 1], E = q->dims[nb + 2];
  hk = k->dims[nb], S = k->dims[nb + 1];
  Ev = vv->dims[nb + 2];
  for (guint i = 0; i < nb; i++)
    if (!gi_unite (g, v, q->dims[i], k->dims[i]) || !gi_unite (g, v, k->dims[i], vv->dims[i]))
      return;
  if (!gi_unite (g, v, E, k->dims[nb + 2]) || !gi_unite (g, v, S, vv->dims[nb + 1]) || !gi_unite (g, v, hk, vv->dims[nb]))
    return;
  if (gi_dim_size (g, q, nb) != gi_dim_size (g, k, nb))
    {
      g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));
      gint64 group = gi_dim_size (g, q, nb) / MAX (gi_dim_size (g, k, nb), 1);
      int gc;

      if (!gi_arg_bool (v, 6, "enable_gqa") || group * gi_dim_size (g, k, nb) != gi_dim_size (g, q, nb))
        {
          gi_refuse (g, v, _("with fewer key heads than query heads needs enable_gqa"),
                     _("pass enable_gqa=True, or repeat the key and value heads (repeat_kv)"));
          return;
        }
      gc = gi_new_class (g, group);
      g_array_append_val (kids, hk);
      g_array_append_val (kids, gc);
      if (!gi_split (g, v, hq, kids))
        return;
      gi_hint (g, gc, "g", 1);
    }
  else if (!gi_unite (g, v, hq, hk))
    return;
  /* self-attention: the keys' positions are their own axis, so that the scores are
   * […, query, key] (docs/import.md, "Named axes") */
  K = S;
  if (gi_find (g, L) == gi_find (g, S))
    {
      K = gi_alias (g, S);
      gi_add_rename (g, v, 1, S, K);
      gi_add_rename (g, v, 2, S, K);
    }
  v->extra[1] = K;
  for (guint i = 0; i < nb; i++)
    v->dims[i] = q->dims[i];
  v->dims[nb] = hq;
  v->dims[nb + 1] = L;
  v->dims[nb + 2] = Ev;
  if (mask != NULL)
    {
      int scores[MAX_DIMS + 1];

      memcpy (scores, v->dims, sizeof (int) * (nb + 2));
      scores[nb + 2] = K;
      if (!unite_onto (g, v, mask, scores, nb + 3))
        return;
    }
  if (nb > 0)
    gi_hint (g, q->dims[0], "b", 1);
  gi_hint (g, hk, "h", 1);
  gi_hint (g, L, "s", 1);
  gi_hint (g, S, "s", 1);
  gi_hint (g, E, "d", 1);
  gi_hint (g, Ev, "dv", 1);
  v->causal = gi_arg_bool (v, 5, "is_causal") || v->mask.kind == MASK_TRIL || v->mask.kind == MASK_BAND;
  v->default_scale = json_object_get_type (gi_arg (v, 99, "scale")) == json_type_null;
  if (!gi_arg_double (v, 99, "scale", 1.0 / sqrt ((double) gi_dim_size (g, q, nb + 2)), &v->alpha)
      || !isfinite (v->alpha) || fabs (v->alpha) > NAPKIN_MAX_NUMBER)
    {
      gi_fail (g, v, _("scale must be a number of at most %g either way"), NAPKIN_MAX_NUMBER);
      return;
    }
  v->emit = EMIT_ATTENTION;
}

/* masked_fill / where recognised as a mask (napkin-import-graph-patterns.c): the
 * scores' dims; a tensor mask broadcast onto them. */
static void
pass1_mask (G     *g,
            Value *v)
{
  Value *x = gi_src (g, v, 0), *m = gi_src (g, v, 1);

  if (!gi_need (g, v, x, 2))
    return;
  gi_copy_dims (v, x);
  if (m != NULL && !unite_onto (g, v, m, v->dims, v->n_dims))
    return;
}

/* A number as the other operand of add, sub, mul, div (rsub: the number first). */
static void
arith_scalar (G     *g,
              Value *v,
              Value *a,
              double s)
{
  const char *b = v->base;

  if (g_str_equal (b, "div") && s == 0)
    {
      gi_fail (g, v, _("division by zero"));
      return;
    }
  v->alpha = g_str_equal (b, "div") ? 1.0 / s : g_str_equal (b, "sub") ? -s : s;
  /* the diagram's numbers are those of the file format */
  if (!isfinite (v->alpha) || fabs (v->alpha) > NAPKIN_MAX_NUMBER)
    {
      gi_fail (g, v, _("the number %g is out of range (at most %g either way)"), v->alpha, NAPKIN_MAX_NUMBER);
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  if (g_str_equal (b, "mul") || g_str_equal (b, "div"))
    {
      v->emit = EMIT_SCALE;
      return;
    }
  v->fn = NAPKIN_FN_SHIFT;
  v->emit = EMIT_MAP1;
}

/* mul, add, sub, div: a binary map, a scale or a shift by a number. */
static void
pass1_arith (G     *g,
             Value *v,
             Value *a)
{
  const char *b = v->base;
  Value *y = gi_arg_value (g, v, 1, "other");
  double alpha = 1, s;

  if (a == NULL && gi_scalar_of (g, gi_arg (v, 0, "self"), &s) && y != NULL
      && (g_str_equal (b, "mul") || g_str_equal (b, "add")))
    {
      /* 2 * x: the number first */
      if (gi_need (g, v, y, 0))
        arith_scalar (g, v, y, s);
      return;
    }
  if (!gi_need (g, v, a, 0))
    return;
  if (!gi_arg_double (v, 2, "alpha", 1, &alpha) || alpha != 1)
    {
      gi_refuse (g, v, _("with alpha other than 1 is not covered"), _("write x + alpha * y"));
      return;
    }
  if (gi_scalar_of (g, gi_arg (v, 1, "other"), &s))
    {
      arith_scalar (g, v, a, s);
      return;
    }
  if (!gi_need (g, v, y, 0) || !gi_broadcast (g, v, a, y))
    return;
  napkin_fn_from_string (b, &v->fn);
  gi_set_src (g, v, 0, a);
  gi_set_src (g, v, 1, y);
  v->emit = EMIT_MAP2;
}

/* A unary map of map1_names[i]; gelu's tanh form is its own function. */
static void
pass1_map1 (G     *g,
            Value *v,
            Value *a,
            guint  i)
{
  const char *approx = gi_member_string (v->kwargs, "approximate");

  if (!gi_need (g, v, a, 0))
    return;
  if (approx == NULL && gi_arg (v, 1, NULL) && json_object_is_type (gi_arg (v, 1, NULL), json_type_string))
    approx = json_object_get_string (gi_arg (v, 1, NULL));
  napkin_fn_from_string (map1_names[i][1], &v->fn);
  if (approx != NULL && g_str_equal (approx, "tanh"))
    v->fn = NAPKIN_FN_GELU_TANH;
  else if (approx != NULL && !g_str_equal (approx, "none"))
    {
      gi_refuse (g, v, _("with this approximation is not covered"), _("use approximate='none' or 'tanh'"));
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_MAP1;
  /* an activation's last axis is a hidden size, "f" (a scalar has none) */
  if (a->n_dims > 0
      && (v->fn == NAPKIN_FN_GELU || v->fn == NAPKIN_FN_GELU_TANH || v->fn == NAPKIN_FN_SILU || v->fn == NAPKIN_FN_RELU))
    gi_hint (g, a->dims[a->n_dims - 1], "f", 1);
}

/* elu(x, alpha, scale, input_scale): the format's elu is torch's default, all three 1
 * (linear attention's feature map elu(x) + 1). */
static void
pass1_elu (G     *g,
           Value *v,
           Value *a)
{
  static const char *const keys[] = { "alpha", "scale", "input_scale" };

  if (!gi_need (g, v, a, 0))
    return;
  for (guint i = 0; i < G_N_ELEMENTS (keys); i++)
    {
      double x = 1;

      if (!gi_arg_double (v, i + 1, keys[i], 1, &x) || x != 1)
        {
          g_autofree char *what = g_strdup_printf (_("with %s other than 1 is not covered"), keys[i]);

          gi_refuse (g, v, what, _("use F.elu with alpha 1 (the default), or write it with the covered operations"));
          return;
        }
    }
  v->fn = NAPKIN_FN_ELU;
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_MAP1;
}

/* pow(x, p): square, sqrt, rsqrt, x·x² for p = 3, x itself for 1. */
static void
pass1_pow (G     *g,
           Value *v,
           Value *a)
{
  double p;

  if (!gi_need (g, v, a, 0))
    return;
  if (!gi_scalar_of (g, gi_arg (v, 1, "exponent"), &p) || (p != 2 && p != 0.5 && p != -0.5 && p != 3 && p != 1))
    {
      gi_refuse (g, v, _("is covered for the exponents 1, 2, 3, 0.5 and -0.5"),
                 _("write the power with exp and log outside the module"));
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = p == 1 ? EMIT_VIEW : EMIT_MAP1;
  v->fn = p == 0.5 ? NAPKIN_FN_SQRT : p == -0.5 ? NAPKIN_FN_RSQRT : NAPKIN_FN_SQUARE;
  v->alpha = p;   /* 3: the square times x (pass 2) */
}

/* mean, sum, amax over one dimension or several (keepdim or not): several are one
 * reduction node each, in turn (a mean of means over equal counts is the mean). */
static void
reduce_over (G      *g,
             Value  *v,
             Value  *a,
             guint64 mask)
{
  gboolean first = TRUE;

  v->reduce = g_str_equal (v->base, "sum") ? NAPKIN_REDUCE_SUM
              : g_str_equal (v->base, "amax") ? NAPKIN_REDUCE_MAX : NAPKIN_REDUCE_MEAN;
  v->reduce_more = 0;
  for (guint i = 0, o = 0; i < a->n_dims; i++)
    if (!(mask & (G_GUINT64_CONSTANT (1) << i)))
      v->dims[o++] = a->dims[i];
    else
      {
        if (v->n_dims == a->n_dims)
          v->dims[o++] = NONE;  /* keepdim */
        if (first)
          v->axis_dim = (int) i;
        else
          v->reduce_more |= G_GUINT64_CONSTANT (1) << i;
        first = FALSE;
      }
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_REDUCE;
}

static void
pass1_reduce (G     *g,
              Value *v,
              Value *a)
{
  json_object *dims = gi_arg (v, 1, "dim");
  guint64 mask = 0;
  int dim;

  if (!gi_need (g, v, a, 1))
    return;
  if (dims != NULL && json_object_is_type (dims, json_type_array) && json_object_array_length (dims) >= 1)
    for (gsize i = 0; i < json_object_array_length (dims); i++)
      {
        if (!gi_norm_dim (json_object_get_int64 (json_object_array_get_idx (dims, i)), a->n_dims, &dim))
          {
            gi_fail (g, v, _("a reduction over no dimension"));
            return;
          }
        mask |= G_GUINT64_CONSTANT (1) << dim;
      }
  else if (dims != NULL && json_object_is_type (dims, json_type_int))
    {
      if (!gi_norm_dim (json_object_get_int64 (dims), a->n_dims, &dim))
        {
          gi_fail (g, v, _("a reduction over no dimension"));
          return;
        }
      mask = G_GUINT64_CONSTANT (1) << dim;
    }
  else
    {
      gi_refuse (g, v, _("over all dimensions is not covered"), _("name the dimensions it reduces (dim=...)"));
      return;
    }
  reduce_over (g, v, a, mask);
}

/* adaptive_avg_pool1d/2d/3d to an output of size 1 (global average pooling, as a
 * squeeze-and-excitation block writes it) is a mean over the pooled dimensions, kept. */
static void
pass1_adaptive_pool (G     *g,
                     Value *v,
                     Value *a)
{
  json_object *size = gi_arg (v, 1, "output_size");
  guint64 mask = 0;
  gsize n = 0;

  if (!gi_need (g, v, a, 1))
    return;
  if (size != NULL && json_object_is_type (size, json_type_array))
    n = json_object_array_length (size);
  else if (size != NULL && json_object_is_type (size, json_type_int))
    n = 1;
  for (gsize i = 0; i < n; i++)
    {
      json_object *s = json_object_is_type (size, json_type_array) ? json_object_array_get_idx (size, i) : size;

      if (s == NULL || !json_object_is_type (s, json_type_int) || json_object_get_int64 (s) != 1)
        n = 0;
    }
  if (n == 0 || n > a->n_dims || v->n_dims != a->n_dims)
    {
      gi_refuse (g, v, _("to an output larger than 1 is not covered"),
                 _("pool to size 1 (global average pooling), or write the windows' mean with reshape and mean"));
      return;
    }
  for (gsize i = 0; i < n; i++)
    mask |= G_GUINT64_CONSTANT (1) << (a->n_dims - 1 - i);
  reduce_over (g, v, a, mask);
  v->reduce = NAPKIN_REDUCE_MEAN;
}

/* dropout in eval mode (train=False, or p = 0) is the identity: left out, with a note. */
static void
pass1_dropout (G     *g,
               Value *v,
               Value *a)
{
  double p = 0;
  json_object *train = gi_arg (v, 2, "train");

  if (!gi_need (g, v, a, 0))
    return;
  gi_arg_double (v, 1, "p", 0, &p);
  if (p != 0 && train != NULL && json_object_is_type (train, json_type_boolean) && json_object_get_boolean (train))
    {
      gi_refuse (g, v, _("in training mode is not covered"), _("export the module in eval mode (model.eval())"));
      return;
    }
  gi_copy_dims (v, a);
  gi_set_src (g, v, 0, a);
  v->emit = EMIT_VIEW;
  g->n_dropouts++;
}

/* A pattern's result (napkin-import-graph-patterns.c): its dims from what it reads. */
static void
pass1_rewritten (G     *g,
                 Value *v)
{
  Value *x = gi_src (g, v, 0);

  switch (v->emit)
    {
    case EMIT_ATTENTION:
      pass1_attention (g, v);
      return;
    case EMIT_MASK:
      pass1_mask (g, v);
      return;
    case EMIT_ROTATE:
    case EMIT_MAP1:
    case EMIT_NORM:
      if (!gi_need (g, v, x, 1))
        return;
      gi_copy_dims (v, x);
      if (v->emit == EMIT_NORM)
        {
          Value *w = gi_src (g, v, 1);

          gi_hint (g, x->dims[v->axis_dim], "e", 1);
          /* a weight found in a norm written out runs along the normalised axis */
          if (w != NULL && (!gi_need (g, v, w, 1) || !gi_unite (g, v, w->dims[w->n_dims - 1], x->dims[v->axis_dim])))
            return;
        }
      else if (v->emit == EMIT_MAP1)
        gi_hint (g, x->dims[x->n_dims - 1], "f", 1);
      return;
    default:
      g_assert_not_reached ();
    }
}

/* What to write instead of an operation outside the covered set. */
static const char *
instead_of (const char *base)
{
  static const char *const table[][2] = {
    { "embedding", N_("pass the embedded tokens to the module as its input") },
    { "index", N_("slice with fixed bounds, or pass the gathered tensor as an input") },
    { "index_select", N_("slice with fixed bounds, or pass the gathered tensor as an input") },
    { "gather", N_("pass the gathered tensor as an input") },
    { "cat", N_("concatenation is covered in rotate_half only (cat(-x2, x1)); pass the parts as separate inputs") },
    { "stack", N_("pass the parts as separate inputs") },
    { "var", N_("use F.layer_norm") },
    { "var_mean", N_("use F.layer_norm") },
    { "std", N_("use F.layer_norm") },
    { "log_softmax", N_("return the scores and take log_softmax outside the module") },
    { "masked_fill", N_("write masked_fill(~keep, -inf) (or finfo.min) with keep a tril (buffer or torch.tril) "
                        "or a boolean tensor of the kept positions") },
    { "where", N_("write where(keep, scores, -inf) (or finfo.min) with keep a tril (buffer or torch.tril) or "
                  "a boolean tensor of the kept positions") },
    { "cumsum", N_("compute it outside the module") },
  };

  for (guint i = 0; i < G_N_ELEMENTS (table); i++)
    if (g_str_equal (base, table[i][0]))
      return _(table[i][1]);
  return _("write it with the covered operations (docs/import.md, “Covered operations”) or outside the module");
}

/* Pass 1 of one call: its dims from its arguments' (docs/import.md), by operation. */
void
gi_pass1_call (G     *g,
               Value *v)
{
  const char *b = v->base;
  Value *a = gi_arg_value (g, v, 0, "self");

  if (v->absorbed)
    return;
  if (v->rewritten)
    {
      pass1_rewritten (g, v);
      return;
    }
  if (a == NULL)
    a = gi_arg_value (g, v, 0, "input");
  if (v->has_shape && v->has_dtype == FALSE && g_strcmp0 (b, "getitem") != 0)
    {
      gi_refuse (g, v, _("gives a result that is not a floating-point tensor"), instead_of (b));
      return;
    }
  if (gi_in_list (b, view_names, G_N_ELEMENTS (view_names)))
    pass1_view (g, v, a);
  else if (g_str_equal (b, "linear"))
    pass1_linear (g, v, a);
  else if (g_str_equal (b, "group_norm"))
    pass1_group_norm (g, v, a);
  else if (g_str_equal (b, "conv2d") || g_str_equal (b, "conv1d") || g_str_equal (b, "conv3d")
           || g_str_equal (b, "convolution"))
    pass1_conv (g, v, a);
  else if (g_str_equal (b, "mm") || g_str_equal (b, "bmm") || g_str_equal (b, "matmul") || g_str_equal (b, "addmm")
           || g_str_equal (b, "baddbmm"))
    pass1_matmul (g, v, a);
  else if (g_str_equal (b, "einsum"))
    {
      if (einsum_dims (g, v))
        {
          v->extra[0] = -1;
          v->emit = EMIT_CONTRACT;
        }
    }
  else if (g_str_equal (b, "softmax") || g_str_equal (b, "_softmax") || g_str_equal (b, "_safe_softmax"))
    pass1_softmax (g, v, a);
  else if (g_str_equal (b, "layer_norm") || g_str_equal (b, "native_layer_norm") || g_str_equal (b, "rms_norm"))
    pass1_norm (g, v, a);
  else if (g_str_equal (b, "getitem"))
    pass1_getitem (g, v, a);
  else if (g_str_equal (b, "split") || g_str_equal (b, "split_with_sizes") || g_str_equal (b, "chunk")
           || g_str_equal (b, "unbind"))
    pass1_tuple (g, v, a);
  else if (g_str_equal (b, "select") || g_str_equal (b, "slice") || g_str_equal (b, "narrow"))
    pass1_part (g, v, a);
  else if (g_str_equal (b, "repeat_interleave"))
    pass1_repeat (g, v, a);
  else if (g_str_equal (b, "scaled_dot_product_attention"))
    gi_refuse (g, v, _("with this attn_mask is not covered"),
               _("pass a boolean mask (True keeps) or a float one (added to the scores)"));
  else if (g_str_equal (b, "mul") || g_str_equal (b, "add") || g_str_equal (b, "sub") || g_str_equal (b, "div"))
    pass1_arith (g, v, a);
  else if (g_str_equal (b, "pow"))
    pass1_pow (g, v, a);
  else if (g_str_equal (b, "elu"))
    pass1_elu (g, v, a);
  else if (g_str_equal (b, "mean") || g_str_equal (b, "sum") || g_str_equal (b, "amax"))
    pass1_reduce (g, v, a);
  else if (g_str_equal (b, "adaptive_avg_pool1d") || g_str_equal (b, "adaptive_avg_pool2d")
           || g_str_equal (b, "adaptive_avg_pool3d") || g_str_equal (b, "_adaptive_avg_pool2d")
           || g_str_equal (b, "_adaptive_avg_pool3d"))
    pass1_adaptive_pool (g, v, a);
  else if (g_str_equal (b, "dropout") || g_str_equal (b, "feature_dropout") || g_str_equal (b, "alpha_dropout"))
    pass1_dropout (g, v, a);
  else
    {
      for (guint i = 0; i < G_N_ELEMENTS (map1_names); i++)
        if (g_str_equal (b, map1_names[i][0]))
          {
            pass1_map1 (g, v, a, i);
            return;
          }
      gi_refuse (g, v, NULL, instead_of (b));
    }
}
