/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-import-graph-private.h"

/* Axis classes of the graph importer (docs/import.md, "Named axes"): every dimension of
 * every value has a class; classes that must be one axis are united, a reshape makes a
 * class a composite of others. */

/* ---------------------------------------------------------------- axis classes */

Class *
gi_cls (G  *g,
        int c)
{
  return &g_array_index (g->classes, Class, c);
}

int
gi_new_class (G      *g,
              gint64  size)
{
  Class c = { (int) g->classes->len, size, NULL, NULL, -1, NULL, NONE };

  g_array_append_val (g->classes, c);
  return c.parent;
}

int
gi_find (G  *g,
         int c)
{
  while (gi_cls (g, c)->parent != c)
    {
      gi_cls (g, c)->parent = gi_cls (g, gi_cls (g, c)->parent)->parent;
      c = gi_cls (g, c)->parent;
    }
  return c;
}

void
gi_hint (G          *g,
         int         c,
         const char *name,
         int         prio)
{
  Class *k;

  if (c == NONE)
    return;
  /* a composite's name goes to its outermost atom (the key heads of [h, g]) */
  while (gi_cls (g, gi_find (g, c))->kids != NULL)
    c = g_array_index (gi_cls (g, gi_find (g, c))->kids, int, 0);
  k = gi_cls (g, gi_find (g, c));
  if (prio > k->prio)
    {
      g_free (k->hint);
      k->hint = g_strdup (name);
      k->prio = prio;
    }
}

void gi_expand (G *g, int c, GArray *atoms);
gboolean gi_unite (G *g, Value *v, int a, int b);

/* Makes the atoms of one side and the other the same axes: the common refinement
 * of two row-major factorings of one size. From the outermost: two atoms of one size
 * are one axis; the larger of two others is split into the smaller and the rest, the
 * rest compared next ([2, 32] and [8, 8] become [2, 4, 8]). */
static gboolean
refine (G      *g,
        Value  *v,
        GArray *a,
        GArray *b)
{
  guint i = 0, j = 0;

  while (i < a->len && j < b->len)
    {
      int x = g_array_index (a, int, i), y = g_array_index (b, int, j);
      gint64 sx = gi_cls (g, gi_find (g, x))->size, sy = gi_cls (g, gi_find (g, y))->size;

      if (sx == sy)
        {
          if (!gi_unite (g, v, x, y))
            return FALSE;
          i++, j++;
        }
      else
        {
          gint64 big = MAX (sx, sy), small = MIN (sx, sy);
          int whole = gi_find (g, sx > sy ? x : y);
          g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));
          int outer, rest;

          if (big % small != 0)
            {
              gi_fail (g, v, _("an axis of size %lld is split here in a way that does not line up with "
                               "its split elsewhere (into %lld)"), (long long) big, (long long) small);
              return FALSE;
            }
          /* split already in this walk: one axis twice in a shape, which a diagram
           * cannot hold either (each value's axes are distinct) */
          if (gi_cls (g, whole)->kids != NULL)
            {
              gi_fail (g, v, _("an axis of size %lld would be split twice here; a value's dimensions "
                               "must be distinct axes"), (long long) big);
              return FALSE;
            }
          outer = gi_new_class (g, small);
          rest = gi_new_class (g, big / small);
          g_array_append_val (kids, outer);
          g_array_append_val (kids, rest);
          gi_cls (g, whole)->kids = g_array_ref (kids);
          if (!gi_unite (g, v, sx < sy ? x : y, outer))
            return FALSE;
          if (sx < sy)
            g_array_index (b, int, j) = rest, i++;
          else
            g_array_index (a, int, i) = rest, j++;
        }
    }
  if (i != a->len || j != b->len)
    {
      gi_fail (g, v, _("two splits of one axis do not line up"));
      return FALSE;
    }
  return TRUE;
}

/* y joins x (the root ra): the stronger name and the key-axis copy carry over. */
static void
merge (Class *x,
       int    ra,
       Class *y)
{
  y->parent = ra;
  if (x->alias == NONE)
    x->alias = y->alias;
  if (y->prio > x->prio)
    {
      g_free (x->hint);
      x->hint = g_steal_pointer (&y->hint);
      x->prio = y->prio;
    }
}

gboolean
gi_unite (G     *g,
          Value *v,
          int    a,
          int    b)
{
  int ra, rb;
  Class *x, *y;

  if (a == NONE || b == NONE)
    return TRUE;
  ra = gi_find (g, a);
  rb = gi_find (g, b);
  if (ra == rb)
    return TRUE;
  x = gi_cls (g, ra);
  y = gi_cls (g, rb);
  if (x->size != y->size)
    {
      gi_fail (g, v, _("an axis of size %lld meets one of size %lld"), (long long) x->size, (long long) y->size);
      return FALSE;
    }
  if (x->kids != NULL && y->kids != NULL)
    {
      g_autoptr(GArray) ea = g_array_new (FALSE, FALSE, sizeof (int));
      g_autoptr(GArray) eb = g_array_new (FALSE, FALSE, sizeof (int));

      gi_expand (g, ra, ea);
      gi_expand (g, rb, eb);
      merge (x, ra, y);
      return refine (g, v, ea, eb);
    }
  /* the composite side (if any) stays the root; the older class otherwise */
  if (y->kids != NULL || (x->kids == NULL && rb < ra))
    {
      Class *t = x;
      int r = ra;

      x = y, ra = rb;
      y = t, rb = r;
    }
  merge (x, ra, y);
  return TRUE;
}

/* Class c is, in row-major order, the classes in kids. */
gboolean
gi_split (G      *g,
          Value  *v,
          int     c,
          GArray *kids)
{
  int r = gi_find (g, c);
  g_autoptr(GArray) atoms = NULL;

  if (gi_cls (g, r)->kids == NULL)
    {
      /* an atomic class becomes a composite; its atoms are the new ones */
      gi_cls (g, r)->kids = g_array_ref (kids);
      return TRUE;
    }
  atoms = g_array_new (FALSE, FALSE, sizeof (int));
  gi_expand (g, r, atoms);
  {
    g_autoptr(GArray) flat = g_array_new (FALSE, FALSE, sizeof (int));

    for (guint i = 0; i < kids->len; i++)
      gi_expand (g, g_array_index (kids, int, i), flat);
    return refine (g, v, atoms, flat);
  }
}

void
gi_expand (G      *g,
           int     c,
           GArray *atoms)
{
  int r;

  if (c == NONE)
    return;
  r = gi_find (g, c);
  if (gi_cls (g, r)->kids == NULL)
    {
      g_array_append_val (atoms, r);
      return;
    }
  for (guint i = 0; i < gi_cls (g, r)->kids->len; i++)
    gi_expand (g, g_array_index (gi_cls (g, r)->kids, int, i), atoms);
}


/* ---------------------------------------------------------------- pass 1 */

gint64
gi_dim_size (G     *g,
             Value *v,
             guint  i)
{
  return v->dims[i] == NONE ? 1 : gi_cls (g, gi_find (g, v->dims[i]))->size;
}

/* Fresh classes for the dims of a value from its recorded shape. */
void
gi_fresh_dims (G     *g,
               Value *v)
{
  for (guint i = 0; i < v->n_dims; i++)
    v->dims[i] = v->shape[i] == 1 ? NONE : gi_new_class (g, v->shape[i]);
}

void
gi_copy_dims (Value *dst,
              Value *src)
{
  dst->n_dims = src->n_dims;
  memcpy (dst->dims, src->dims, sizeof dst->dims);
}

/* Elementwise broadcast of a and b (right-aligned) into v. */
gboolean
gi_broadcast (G     *g,
              Value *v,
              Value *a,
              Value *b)
{
  if (v->n_dims != MAX (a->n_dims, b->n_dims))
    {
      gi_fail (g, v, _("the result has %u dimensions, the broadcast of its operands %u"), v->n_dims,
            MAX (a->n_dims, b->n_dims));
      return FALSE;
    }
  for (guint i = 0; i < v->n_dims; i++)
    {
      int ia = (int) i - (int) (v->n_dims - a->n_dims), ib = (int) i - (int) (v->n_dims - b->n_dims);
      int da = ia >= 0 ? a->dims[ia] : NONE, db = ib >= 0 ? b->dims[ib] : NONE;
      gint64 sa = ia >= 0 ? gi_dim_size (g, a, ia) : 1, sb = ib >= 0 ? gi_dim_size (g, b, ib) : 1;

      if (da != NONE && db != NONE)
        {
          if (sa != sb)
            {
              gi_fail (g, v, _("broadcasting an axis of size 1 against one of size %lld is not supported (unsqueeze it instead)"), (long long) (MAX (sa, sb)));
              return FALSE;
            }
          if (!gi_unite (g, v, da, db))
            return FALSE;
        }
      v->dims[i] = da != NONE ? da : db;
    }
  return TRUE;
}

gboolean
gi_check_shape (G     *g,
                Value *v)
{
  for (guint i = 0; i < v->n_dims && v->has_shape; i++)
    if (gi_dim_size (g, v, i) != v->shape[i])
      {
        gi_fail (g, v, _("dimension %u has size %lld here, %lld in the graph"), i,
              (long long) (gi_dim_size (g, v, i)), (long long) v->shape[i]);
        return FALSE;
      }
  return TRUE;
}

/* view/reshape: the recorded shape from the operand's, grouping dims by products. */
gboolean
gi_reshape (G     *g,
            Value *v,
            Value *a)
{
  int in[MAX_DIMS], out_idx[MAX_DIMS];
  guint n_in = 0, n_out = 0, i = 0, j = 0;
  guint in_units = 0, out_units = 0;

  for (guint k = 0; k < a->n_dims; k++)
    if (gi_dim_size (g, a, k) == 1)
      in_units++;
    else
      in[n_in++] = a->dims[k];
  for (guint k = 0; k < v->n_dims; k++)
    if (v->shape[k] == 1)
      out_units++;
    else
      out_idx[n_out++] = (int) k;
  /* size-1 dims: kept in order when as many come out as went in, else broadcast */
  for (guint k = 0, u = 0; k < v->n_dims; k++)
    if (v->shape[k] == 1)
      {
        v->dims[k] = NONE;
        if (in_units == out_units)
          for (guint m = 0, seen = 0; m < a->n_dims; m++)
            if (gi_dim_size (g, a, m) == 1 && seen++ == u)
              v->dims[k] = a->dims[m];
        u++;
      }

  while (i < n_in && j < n_out)
    {
      gint64 si = gi_cls (g, gi_find (g, in[i]))->size, so = v->shape[out_idx[j]];

      if (si == so)
        {
          v->dims[out_idx[j]] = in[i];
          i++, j++;
          continue;
        }
      {
        g_autoptr(GArray) ins = g_array_new (FALSE, FALSE, sizeof (int));
        g_autoptr(GArray) outs = g_array_new (FALSE, FALSE, sizeof (int));
        gint64 pi = 1, po = 1;

        do
          {
            if (pi <= po && i < n_in)
              {
                pi *= gi_cls (g, gi_find (g, in[i]))->size;
                g_array_append_val (ins, in[i]);
                i++;
              }
            else if (j < n_out)
              {
                int c = gi_new_class (g, v->shape[out_idx[j]]);

                po *= v->shape[out_idx[j]];
                v->dims[out_idx[j]] = c;
                g_array_append_val (outs, c);
                j++;
              }
            else
              break;
          }
        while (pi != po);
        if (pi != po)
          {
            gi_fail (g, v, _("cannot follow this reshape's axes"));
            return FALSE;
          }
        if (ins->len == 1)
          {
            if (!gi_split (g, v, g_array_index (ins, int, 0), outs))
              return FALSE;
          }
        else if (outs->len == 1)
          {
            if (!gi_split (g, v, g_array_index (outs, int, 0), ins))
              return FALSE;
          }
        else
          {
            g_autoptr(GArray) ea = g_array_new (FALSE, FALSE, sizeof (int));

            for (guint k = 0; k < ins->len; k++)
              gi_expand (g, g_array_index (ins, int, k), ea);
            if (!refine (g, v, ea, outs))
              return FALSE;
          }
      }
    }
  if (i != n_in || j != n_out)
    {
      gi_fail (g, v, _("cannot follow this reshape's axes"));
      return FALSE;
    }
  return TRUE;
}

/* A class that is, row-major, the classes in kids (NONE for none, the one for one). */
int
gi_composite (G      *g,
              GArray *kids)
{
  gint64 size = 1;
  int c;

  if (kids->len == 0)
    return NONE;
  if (kids->len == 1)
    return g_array_index (kids, int, 0);
  for (guint i = 0; i < kids->len; i++)
    size *= gi_cls (g, gi_find (g, g_array_index (kids, int, i)))->size;
  c = gi_new_class (g, size);
  gi_cls (g, c)->kids = g_array_copy (kids);
  return c;
}

/* The key axis of a written-out self-attention: a class of the same size as c that
 * the scores carry beside it (docs/import.md, "Attention written out"); one per class. */
int
gi_alias (G  *g,
          int c)
{
  int r = gi_find (g, c), k;

  if (gi_cls (g, r)->alias != NONE)
    return gi_find (g, gi_cls (g, r)->alias);
  k = gi_new_class (g, gi_cls (g, r)->size);
  gi_cls (g, r)->alias = k;
  gi_cls (g, k)->alias = r;
  gi_hint (g, k, "k", 1);
  return k;
}

/* Whether a and b are a class and its key-axis copy. */
gboolean
gi_related (G  *g,
            int a,
            int b)
{
  int ra, rb;

  if (a == NONE || b == NONE)
    return FALSE;
  ra = gi_find (g, a);
  rb = gi_find (g, b);
  if (ra == rb)
    return FALSE;
  if ((gi_cls (g, ra)->alias != NONE && gi_find (g, gi_cls (g, ra)->alias) == rb)
      || (gi_cls (g, rb)->alias != NONE && gi_find (g, gi_cls (g, rb)->alias) == ra))
    return TRUE;
  /* positions of several axes flattened twice by two views (SAGAN's q and v: each
   * view(b, c, h * w) its own class of the same h and w): the key copy of one is the
   * key copy of the other */
  for (guint side = 0; side < 2; side++)
    {
      int key = side ? rb : ra, other = side ? ra : rb, target;
      g_autoptr(GArray) x = g_array_new (FALSE, FALSE, sizeof (int));
      g_autoptr(GArray) y = g_array_new (FALSE, FALSE, sizeof (int));
      gboolean same;

      if (gi_cls (g, key)->alias == NONE)
        continue;
      target = gi_find (g, gi_cls (g, key)->alias);
      gi_expand (g, target, x);
      gi_expand (g, other, y);
      same = x->len > 1 && x->len == y->len;
      for (guint i = 0; same && i < x->len; i++)
        same = gi_find (g, g_array_index (x, int, i)) == gi_find (g, g_array_index (y, int, i));
      if (same)
        return TRUE;
    }
  return FALSE;
}

static void
add_cut (G      *g,
         Value  *v,
         int     atom,
         gint64  start,
         gint64  end,
         int     repl)
{
  Restrict r = { gi_find (g, atom), start, end, repl, v->stem };

  if (v->cuts == NULL)
    v->cuts = g_array_new (FALSE, FALSE, sizeof (Restrict));
  g_array_append_val (v->cuts, r);
}

/* v is [start, end) of dimension `dim` of a (a split's part, a slice, a select when
 * `drop`): the atoms of that dimension outside the range are cut (docs/import.md,
 * "Parts of a projection"). The range must be a box of the dimension's atoms: some
 * outer atoms at one index, one atom over a range, the inner ones whole. */
gboolean
gi_restrict_dim (G      *g,
                 Value  *v,
                 Value  *a,
                 int     dim,
                 gint64  start,
                 gint64  end,
                 gboolean drop)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
  g_autoptr(GArray) rest = g_array_new (FALSE, FALSE, sizeof (int));
  gint64 inner = 1;
  guint k;

  gi_copy_dims (v, a);
  gi_expand (g, a->dims[dim], atoms);
  for (guint i = 0; i < atoms->len; i++)
    inner *= gi_cls (g, gi_find (g, g_array_index (atoms, int, i)))->size;
  /* the outermost atom k whose blocks the range is made of, the atoms before it at one index */
  for (k = 0; k < atoms->len; k++)
    {
      gint64 size = gi_cls (g, gi_find (g, g_array_index (atoms, int, k)))->size;

      inner /= size;
      if (start % inner == 0 && end % inner == 0 && (start / inner) / size == (end / inner - 1) / size)
        break;
    }
  if (atoms->len > 0 && k == atoms->len)
    {
      gi_fail (g, v, _("this part of a dimension is not a block of its axes"));
      return FALSE;
    }
  for (guint i = 0; i < k; i++)
    {
      /* the outer atoms at one index */
      gint64 below = inner;

      for (guint j = i + 1; j <= k; j++)
        below *= gi_cls (g, gi_find (g, g_array_index (atoms, int, j)))->size;
      {
        gint64 index = (start / below) % gi_cls (g, gi_find (g, g_array_index (atoms, int, i)))->size;

        add_cut (g, v, g_array_index (atoms, int, i), index, index + 1, NONE);
      }
    }
  if (k < atoms->len)
    {
      int atom = g_array_index (atoms, int, k);
      gint64 size = gi_cls (g, gi_find (g, atom))->size;
      gint64 lo = (start / inner) % size, hi = lo + (end - start) / inner;

      if (hi - lo == size)
        g_array_append_val (rest, atom);
      else
        {
          int repl = hi - lo == 1 ? NONE : gi_new_class (g, hi - lo);

          add_cut (g, v, atom, lo, hi, repl);
          if (repl != NONE)
            g_array_append_val (rest, repl);
        }
      for (guint i = k + 1; i < atoms->len; i++)
        g_array_append_val (rest, g_array_index (atoms, int, i));
    }
  if (drop)
    {
      for (guint i = (guint) dim; i + 1 < v->n_dims; i++)
        v->dims[i] = v->dims[i + 1];
      v->n_dims--;
      if (rest->len > 0)
        {
          gi_fail (g, v, _("a select of a dimension that is several axes"));
          return FALSE;
        }
    }
  else
    v->dims[dim] = gi_composite (g, rest);
  return TRUE;
}
