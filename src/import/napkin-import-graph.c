/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-describe.h"
#include "napkin-import-private.h"
#include "napkin-json-scan.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* The exporter's graph JSON to a diagram (docs/import.md, "Graph JSON").
 *
 * Two passes. The first gives every dimension of every value an axis class and
 * unites classes that must be the same axis (a size flowing through an elementwise
 * operation, the two sides of a contraction); a reshape that splits or merges
 * dimensions makes a class a composite of others, so that q[b,s,4096] viewed as
 * [b,s,32,128] makes the projection's own output [b,s,h,d]: a view never becomes an
 * operation. The second pass names the atomic classes and emits the operations. */

#define MAX_DIMS    NAPKIN_MAX_RANK
#define MAX_GRAPH_NODES (4 * NAPKIN_MAX_NODES)
#define NONE        (-1)      /* a broadcast dimension of size 1 (unsqueeze): no axis */

typedef struct
{
  int     parent;
  gint64  size;
  GArray *kids;               /* int classes, NULL when atomic */
  char   *hint;
  int     prio;
  char   *axis;               /* pass 2: the napkin axis of an atomic root */
} Class;

typedef enum
{
  EMIT_SKIP,        /* no computation (an assertion), or absorbed into a pattern */
  EMIT_INPUT,
  EMIT_VIEW,        /* the same napkin value as args[0] */
  EMIT_CAST,
  EMIT_CONTRACT,    /* linear mm bmm matmul einsum addmm */
  EMIT_SOFTMAX,
  EMIT_NORM,
  EMIT_ATTENTION,
  EMIT_MAP1,
  EMIT_MAP2,
  EMIT_SCALE,
  EMIT_ROTATE,
  EMIT_GETITEM,
} Emit;

typedef struct
{
  char        *name;
  const char  *target;        /* "aten.linear.default" */
  char        *base;          /* "linear" */
  json_object *obj;
  json_object *args;
  json_object *kwargs;
  guint        line;
  const char  *file;
  const char  *code;
  guint        n_dims;
  gint64       shape[MAX_DIMS];
  int          dims[MAX_DIMS];
  gboolean     has_shape;
  gboolean     has_dtype;
  NapkinDtype  dtype;
  const char  *dtype_name;
  Emit         emit;
  int          src[3];        /* value indices of tensor operands */
  NapkinMapFn  fn;
  double       alpha;
  int          axis_dim;      /* softmax, norm, rotate: the torch dim */
  NapkinNormKind norm;
  double       eps;
  gboolean     causal;
  int          extra[4];      /* einsum/matmul/linear: bias value; attention: value of v */
  gboolean     absorbed;
  guint        users;
  guint        absorbed_users;
  char        *napkin;        /* pass 2: id of the node that makes it */
  /* contraction output: its dims are `dims`; attention: q, k, v in src */
  int          role;          /* placeholder: 0 input, 1 parameter, 2 buffer */
  const char  *param;         /* placeholder: parameter's or buffer's name */
  int          hint_dims;
  guint        index;         /* its place in the graph's nodes, for references */
} Value;

typedef struct
{
  const char    *source;
  GArray        *classes;     /* Class */
  GPtrArray     *values;      /* Value * */
  GHashTable    *by_name;     /* name → Value * */
  GError       **error;
  gboolean       failed;
  GString       *unsupported; /* every operation outside the covered set */
  guint          n_unsupported;
  guint          n_checks;    /* assertions left out */
  NapkinDiagram *d;
  NapkinImportBuilder *b;     /* the one index of what is added (napkin-import-private.h) */
  GHashTable    *rotations;   /* axis name → tensor name of its rotate-half matrix */
  GHashTable    *rotation_inputs;   /* tensor name → id of its input node */
  json_object   *outputs;
} G;

static void
value_free (Value *v)
{
  g_free (v->name);
  g_free (v->base);
  g_free (v->napkin);
  g_free (v);
}

static void
class_clear (Class *c)
{
  if (c->kids)
    g_array_unref (c->kids);
  g_free (c->hint);
  g_free (c->axis);
}

/* "file.py:41" or "node “add_3”" when the exporter found no source line. */
static char *
where (G     *g,
       Value *v)
{
  /* the graph's texts, escaped and cut: they come from someone else's file */
  g_autofree char *file = napkin_text_shown (v->file ? v->file : "forward", -1, 120);
  g_autofree char *code = v->code ? napkin_text_shown (v->code, -1, 80) : NULL;
  g_autofree char *name = napkin_text_quoted (v->name);

  if (v->line > 0 && code != NULL)
    return g_strdup_printf ("line %u (%s: %s)", v->line, file, code);
  if (v->line > 0)
    return g_strdup_printf (_("line %u of %s"), v->line, file);
  return g_strdup_printf (_("graph node %s"), name);
}

static void G_GNUC_PRINTF (3, 4)
fail (G          *g,
      Value      *v,
      const char *format,
      ...)
{
  va_list args;
  g_autofree char *msg = NULL;
  g_autofree char *shown = NULL;
  g_autofree char *place = NULL;

  if (g->failed)
    return;
  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  /* the message may quote the graph's names: escaped for a terminal and cut */
  shown = napkin_text_shown (msg, -1, 300);
  place = v ? where (g, v) : NULL;
  g_set_error (g->error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_INVALID, "%s%s%s%s%s",
               g->source ? g->source : "", g->source ? ": " : "", place ? place : "", place ? ": " : "", shown);
  g->failed = TRUE;
}

/* The first few operations outside the covered set are listed, the rest counted. */
#define MAX_UNSUPPORTED_LISTED 8

static void
unsupported (G          *g,
             Value      *v,
             const char *why)
{
  g_autofree char *place = NULL;
  g_autofree char *target = NULL;

  if (g->n_unsupported++ >= MAX_UNSUPPORTED_LISTED)
    return;
  place = where (g, v);
  target = napkin_text_shown (v->target ? v->target : v->base, -1, 80);
  if (g->n_unsupported > 1)
    g_string_append (g->unsupported, "; ");
  g_string_append_printf (g->unsupported, "%s at %s%s%s", target, place, why ? ": " : "", why ? why : "");
}

/* ---------------------------------------------------------------- axis classes */

static Class *
cls (G  *g,
     int c)
{
  return &g_array_index (g->classes, Class, c);
}

static int
new_class (G      *g,
           gint64  size)
{
  Class c = { (int) g->classes->len, size, NULL, NULL, -1, NULL };

  g_array_append_val (g->classes, c);
  return c.parent;
}

static int
find (G  *g,
      int c)
{
  while (cls (g, c)->parent != c)
    {
      cls (g, c)->parent = cls (g, cls (g, c)->parent)->parent;
      c = cls (g, c)->parent;
    }
  return c;
}

static void
hint (G          *g,
      int         c,
      const char *name,
      int         prio)
{
  Class *k;

  if (c == NONE)
    return;
  k = cls (g, find (g, c));
  if (prio > k->prio)
    {
      g_free (k->hint);
      k->hint = g_strdup (name);
      k->prio = prio;
    }
}

static void expand (G *g, int c, GArray *atoms);
static gboolean unite (G *g, Value *v, int a, int b);

/* Makes the atoms of one side and the other the same axes, splitting where one
 * side's axis is several of the other's: the common refinement of two factorings
 * of the same size. */
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
      gint64 sx = cls (g, find (g, x))->size, sy = cls (g, find (g, y))->size;

      if (sx == sy)
        {
          if (!unite (g, v, x, y))
            return FALSE;
          i++, j++;
        }
      else
        {
          /* the larger one is a composite of a run of the smaller side's */
          GArray *small = sx < sy ? a : b;
          guint *k = sx < sy ? &i : &j;
          int big = sx < sy ? y : x;
          gint64 want = MAX (sx, sy), have = 1;
          g_autoptr(GArray) run = g_array_new (FALSE, FALSE, sizeof (int));
          Class *root;

          while (*k < small->len && have < want)
            {
              int s = g_array_index (small, int, *k);

              have *= cls (g, find (g, s))->size;
              g_array_append_val (run, s);
              (*k)++;
            }
          if (have != want)
            {
              fail (g, v, _("the axes of sizes %lld and %lld are split in ways that do not line up"), (long long) sx, (long long) sy);
              return FALSE;
            }
          root = cls (g, find (g, big));
          g_assert (root->kids == NULL);
          root->kids = g_array_ref (run);
          if (sx < sy)
            j++;
          else
            i++;
        }
    }
  if (i != a->len || j != b->len)
    {
      fail (g, v, _("two factorings of one axis do not line up"));
      return FALSE;
    }
  return TRUE;
}

static gboolean
unite (G     *g,
       Value *v,
       int    a,
       int    b)
{
  int ra, rb;
  Class *x, *y;

  if (a == NONE || b == NONE)
    return TRUE;
  ra = find (g, a);
  rb = find (g, b);
  if (ra == rb)
    return TRUE;
  x = cls (g, ra);
  y = cls (g, rb);
  if (x->size != y->size)
    {
      fail (g, v, _("an axis of size %lld meets one of size %lld"), (long long) x->size, (long long) y->size);
      return FALSE;
    }
  if (x->kids != NULL && y->kids != NULL)
    {
      g_autoptr(GArray) ea = g_array_new (FALSE, FALSE, sizeof (int));
      g_autoptr(GArray) eb = g_array_new (FALSE, FALSE, sizeof (int));

      expand (g, ra, ea);
      expand (g, rb, eb);
      y->parent = ra;
      if (y->prio > x->prio)
        {
          g_free (x->hint);
          x->hint = g_steal_pointer (&y->hint);
          x->prio = y->prio;
        }
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
  y->parent = ra;
  if (y->prio > x->prio)
    {
      g_free (x->hint);
      x->hint = g_steal_pointer (&y->hint);
      x->prio = y->prio;
    }
  return TRUE;
}

/* Class c is, in row-major order, the classes in kids. */
static gboolean
split (G      *g,
       Value  *v,
       int     c,
       GArray *kids)
{
  int r = find (g, c);
  g_autoptr(GArray) atoms = NULL;

  if (cls (g, r)->kids == NULL)
    {
      g_autoptr(GArray) mine = g_array_new (FALSE, FALSE, sizeof (int));

      /* an atomic class becomes a composite; its atoms are the new ones */
      cls (g, r)->kids = g_array_ref (kids);
      (void) mine;
      return TRUE;
    }
  atoms = g_array_new (FALSE, FALSE, sizeof (int));
  expand (g, r, atoms);
  {
    g_autoptr(GArray) flat = g_array_new (FALSE, FALSE, sizeof (int));

    for (guint i = 0; i < kids->len; i++)
      expand (g, g_array_index (kids, int, i), flat);
    return refine (g, v, atoms, flat);
  }
}

static void
expand (G      *g,
        int     c,
        GArray *atoms)
{
  int r;

  if (c == NONE)
    return;
  r = find (g, c);
  if (cls (g, r)->kids == NULL)
    {
      g_array_append_val (atoms, r);
      return;
    }
  for (guint i = 0; i < cls (g, r)->kids->len; i++)
    expand (g, g_array_index (cls (g, r)->kids, int, i), atoms);
}

/* ---------------------------------------------------------------- JSON access */

static json_object *
member (json_object *obj,
        const char  *key)
{
  json_object *v = NULL;

  if (obj == NULL || !json_object_is_type (obj, json_type_object) || !json_object_object_get_ex (obj, key, &v))
    return NULL;
  return v;
}

static const char *
member_string (json_object *obj,
               const char  *key)
{
  json_object *v = member (obj, key);

  return v != NULL && json_object_is_type (v, json_type_string) ? json_object_get_string (v) : NULL;
}

static const char *
member_string_or (json_object *obj,
                  const char  *key,
                  const char  *fallback)
{
  const char *s = member_string (obj, key);

  return s != NULL ? s : fallback;
}

/* Positional argument i, else keyword `key`; NULL when absent or JSON null. */
static json_object *
arg (Value      *v,
     guint       i,
     const char *key)
{
  json_object *a = NULL;

  if (v->args != NULL && i < json_object_array_length (v->args))
    a = json_object_array_get_idx (v->args, i);
  else if (key != NULL)
    a = member (v->kwargs, key);
  return a;
}

static Value *
arg_value (G          *g,
           Value      *v,
           guint       i,
           const char *key)
{
  const char *name = member_string (arg (v, i, key), "node");

  return name ? g_hash_table_lookup (g->by_name, name) : NULL;
}

static int
value_index (G     *g,
             Value *v)
{
  (void) g;
  return (int) v->index;
}

static gboolean
arg_int (Value      *v,
         guint       i,
         const char *key,
         gint64      fallback,
         gint64     *out)
{
  json_object *a = arg (v, i, key);

  if (a == NULL || json_object_is_type (a, json_type_null))
    {
      *out = fallback;
      return TRUE;
    }
  if (!json_object_is_type (a, json_type_int))
    return FALSE;
  *out = json_object_get_int64 (a);
  return TRUE;
}

static gboolean
arg_double (Value      *v,
            guint       i,
            const char *key,
            double      fallback,
            double     *out)
{
  json_object *a = arg (v, i, key);

  if (a == NULL || json_object_is_type (a, json_type_null))
    {
      *out = fallback;
      return TRUE;
    }
  if (!json_object_is_type (a, json_type_int) && !json_object_is_type (a, json_type_double))
    return FALSE;
  *out = json_object_get_double (a);
  return TRUE;
}

static gboolean
arg_bool (Value      *v,
          guint       i,
          const char *key)
{
  json_object *a = arg (v, i, key);

  return a != NULL && json_object_is_type (a, json_type_boolean) && json_object_get_boolean (a);
}

static gboolean
arg_is_number (Value *v,
               guint  i)
{
  json_object *a = arg (v, i, NULL);

  return a != NULL && (json_object_is_type (a, json_type_int) || json_object_is_type (a, json_type_double));
}

/* A torch dim, negative from the end, as an index. */
static gboolean
norm_dim (gint64  dim,
          guint   rank,
          int    *out)
{
  if (dim < 0)
    dim += rank;
  if (dim < 0 || dim >= rank)
    return FALSE;
  *out = (int) dim;
  return TRUE;
}

/* ---------------------------------------------------------------- pass 1 */

static gint64
dim_size (G     *g,
          Value *v,
          guint  i)
{
  return v->dims[i] == NONE ? 1 : cls (g, find (g, v->dims[i]))->size;
}

/* Fresh classes for the dims of a value from its recorded shape. */
static void
fresh_dims (G     *g,
            Value *v)
{
  for (guint i = 0; i < v->n_dims; i++)
    v->dims[i] = v->shape[i] == 1 ? NONE : new_class (g, v->shape[i]);
}

static void
copy_dims (Value *dst,
           Value *src)
{
  dst->n_dims = src->n_dims;
  memcpy (dst->dims, src->dims, sizeof dst->dims);
}

/* Elementwise broadcast of a and b (right-aligned) into v. */
static gboolean
broadcast (G     *g,
           Value *v,
           Value *a,
           Value *b)
{
  if (v->n_dims != MAX (a->n_dims, b->n_dims))
    {
      fail (g, v, _("the result has %u dimensions, the broadcast of its operands %u"), v->n_dims,
            MAX (a->n_dims, b->n_dims));
      return FALSE;
    }
  for (guint i = 0; i < v->n_dims; i++)
    {
      int ia = (int) i - (int) (v->n_dims - a->n_dims), ib = (int) i - (int) (v->n_dims - b->n_dims);
      int da = ia >= 0 ? a->dims[ia] : NONE, db = ib >= 0 ? b->dims[ib] : NONE;
      gint64 sa = ia >= 0 ? dim_size (g, a, ia) : 1, sb = ib >= 0 ? dim_size (g, b, ib) : 1;

      if (da != NONE && db != NONE)
        {
          if (sa != sb)
            {
              fail (g, v, _("broadcasting an axis of size 1 against one of size %lld is not supported (unsqueeze it instead)"), (long long) (MAX (sa, sb)));
              return FALSE;
            }
          if (!unite (g, v, da, db))
            return FALSE;
        }
      v->dims[i] = da != NONE ? da : db;
    }
  return TRUE;
}

static gboolean
check_shape (G     *g,
             Value *v)
{
  for (guint i = 0; i < v->n_dims && v->has_shape; i++)
    if (dim_size (g, v, i) != v->shape[i])
      {
        fail (g, v, _("dimension %u has size %lld here, %lld in the graph"), i,
              (long long) (dim_size (g, v, i)), (long long) v->shape[i]);
        return FALSE;
      }
  return TRUE;
}

/* view/reshape: the recorded shape from the operand's, grouping dims by products. */
static gboolean
reshape (G     *g,
         Value *v,
         Value *a)
{
  int in[MAX_DIMS], out_idx[MAX_DIMS];
  guint n_in = 0, n_out = 0, i = 0, j = 0;
  guint in_units = 0, out_units = 0;

  for (guint k = 0; k < a->n_dims; k++)
    if (dim_size (g, a, k) == 1)
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
            if (dim_size (g, a, m) == 1 && seen++ == u)
              v->dims[k] = a->dims[m];
        u++;
      }

  while (i < n_in && j < n_out)
    {
      gint64 si = cls (g, find (g, in[i]))->size, so = v->shape[out_idx[j]];

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
                pi *= cls (g, find (g, in[i]))->size;
                g_array_append_val (ins, in[i]);
                i++;
              }
            else if (j < n_out)
              {
                int c = new_class (g, v->shape[out_idx[j]]);

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
            fail (g, v, _("cannot follow this reshape's axes"));
            return FALSE;
          }
        if (ins->len == 1)
          {
            if (!split (g, v, g_array_index (ins, int, 0), outs))
              return FALSE;
          }
        else if (outs->len == 1)
          {
            if (!split (g, v, g_array_index (outs, int, 0), ins))
              return FALSE;
          }
        else
          {
            g_autoptr(GArray) ea = g_array_new (FALSE, FALSE, sizeof (int));

            for (guint k = 0; k < ins->len; k++)
              expand (g, g_array_index (ins, int, k), ea);
            if (!refine (g, v, ea, outs))
              return FALSE;
          }
      }
    }
  if (i != n_in || j != n_out)
    {
      fail (g, v, _("cannot follow this reshape's axes"));
      return FALSE;
    }
  return TRUE;
}

static gboolean
parse_shape (G           *g,
             Value       *v,
             json_object *shape)
{
  if (shape == NULL || !json_object_is_type (shape, json_type_array))
    return TRUE;
  if (json_object_array_length (shape) > MAX_DIMS)
    {
      fail (g, v, _("more than %d dimensions"), MAX_DIMS);
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
          fail (g, v, _("dimension %u of the shape is not a size from 1 to 2^40"), i);
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

static gboolean
need (G     *g,
      Value *v,
      Value *a,
      guint  rank_at_least)
{
  if (a == NULL)
    {
      unsupported (g, v, "an operand that is not a tensor of the graph");
      return FALSE;
    }
  if (a->emit == EMIT_SKIP && !a->absorbed)
    return FALSE;  /* already reported */
  if (a->n_dims < rank_at_least)
    {
      unsupported (g, v, "an operand with too few dimensions");
      return FALSE;
    }
  return TRUE;
}

static void
set_src (G     *g,
         Value *v,
         guint  i,
         Value *a)
{
  v->src[i] = a ? value_index (g, a) : -1;
}

/* Contraction of a[..., n, k] and b[..., k, m] (batch dims broadcast). */
static gboolean
matmul_dims (G     *g,
             Value *v,
             Value *a,
             Value *b)
{
  guint nb = v->n_dims - 2;

  if (v->n_dims < 2 || a->n_dims < 2 || b->n_dims < 2)
    {
      unsupported (g, v, "a matrix product of vectors");
      return FALSE;
    }
  if (!unite (g, v, a->dims[a->n_dims - 1], b->dims[b->n_dims - 2]))
    return FALSE;
  for (guint i = 0; i < nb; i++)
    {
      int ia = (int) i - (int) (nb - (a->n_dims - 2)), ib = (int) i - (int) (nb - (b->n_dims - 2));
      int da = ia >= 0 ? a->dims[ia] : NONE, db = ib >= 0 ? b->dims[ib] : NONE;

      if (!unite (g, v, da, db))
        return FALSE;
      v->dims[i] = da != NONE ? da : db;
    }
  v->dims[nb] = a->dims[a->n_dims - 2];
  v->dims[nb + 1] = b->dims[b->n_dims - 1];
  return TRUE;
}

static gboolean
einsum_dims (G     *g,
             Value *v)
{
  const char *eq = json_object_get_string (arg (v, 0, "equation"));
  json_object *ops = arg (v, 1, "tensors");
  g_auto(GStrv) sides = NULL;
  g_auto(GStrv) ins = NULL;
  int letter[128];

  for (guint i = 0; i < 128; i++)
    letter[i] = -2;
  if (eq == NULL || ops == NULL || !json_object_is_type (ops, json_type_array) || strstr (eq, "...") != NULL
      || (sides = g_strsplit (eq, "->", 2))[1] == NULL)
    {
      unsupported (g, v, "an einsum without an explicit output or with an ellipsis");
      return FALSE;
    }
  ins = g_strsplit (sides[0], ",", -1);
  if (g_strv_length (ins) != 2 || json_object_array_length (ops) != 2)
    {
      unsupported (g, v, "an einsum of other than two operands");
      return FALSE;
    }
  for (guint k = 0; k < 2; k++)
    {
      const char *name = member_string (json_object_array_get_idx (ops, k), "node");
      Value *a = name ? g_hash_table_lookup (g->by_name, name) : NULL;
      const char *s = g_strstrip (ins[k]);

      if (!need (g, v, a, 0))
        return FALSE;
      if (strlen (s) != a->n_dims)
        {
          fail (g, v, _("einsum operand %u has %u dimensions, its letters “%s” %zu"), k + 1, a->n_dims, s, strlen (s));
          return FALSE;
        }
      set_src (g, v, k, a);
      for (guint i = 0; s[i]; i++)
        {
          int c = (unsigned char) s[i] & 127;
          char h[2] = { s[i], 0 };

          if (letter[c] == -2)
            letter[c] = a->dims[i];
          else if (letter[c] == NONE)
            letter[c] = a->dims[i];
          else if (!unite (g, v, letter[c], a->dims[i]))
            return FALSE;
          hint (g, a->dims[i], h, 2);
        }
    }
  {
    const char *s = g_strstrip (sides[1]);

    if (strlen (s) != v->n_dims)
      {
        fail (g, v, _("the einsum output “%s” does not match the result's %u dimensions"), s, v->n_dims);
        return FALSE;
      }
    for (guint i = 0; s[i]; i++)
      {
        int c = (unsigned char) s[i] & 127;

        v->dims[i] = letter[c] == -2 ? NONE : letter[c];
      }
  }
  return TRUE;
}

/* cat([neg(x[..., h:]), x[..., :h]], -1): Llama's rotate_half. Marks the slices
 * and the negation it absorbs. */
static gboolean
slice_of (G       *g,
          Value   *s,
          Value  **x,
          int     *dim,
          gint64  *start,
          gint64  *end)
{
  gint64 d, st, en, step;

  if (s == NULL || g_strcmp0 (s->base, "slice") != 0)
    return FALSE;
  *x = arg_value (g, s, 0, "self");
  if (*x == NULL || !arg_int (s, 1, "dim", 0, &d) || !arg_int (s, 2, "start", 0, &st)
      || !arg_int (s, 3, "end", INT64_MAX, &en) || !arg_int (s, 4, "step", 1, &step) || step != 1
      || !(*x)->has_shape || !norm_dim (d, (*x)->n_dims, dim))
    return FALSE;
  if (en > (*x)->shape[*dim])
    en = (*x)->shape[*dim];
  *start = st;
  *end = en;
  return TRUE;
}

static void
find_rotations (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];
      json_object *list;
      Value *neg, *s1, *s0, *x1, *x0;
      int d1, d0, dim;
      gint64 a1, b1, a0, b0, cd;

      if (g_strcmp0 (v->base, "cat") != 0)
        continue;
      list = arg (v, 0, "tensors");
      if (list == NULL || !json_object_is_type (list, json_type_array) || json_object_array_length (list) != 2)
        continue;
      neg = g_hash_table_lookup (g->by_name, member_string_or (json_object_array_get_idx (list, 0), "node", ""));
      s0 = g_hash_table_lookup (g->by_name, member_string_or (json_object_array_get_idx (list, 1), "node", ""));
      if (neg == NULL || g_strcmp0 (neg->base, "neg") != 0)
        continue;
      s1 = arg_value (g, neg, 0, "self");
      if (!slice_of (g, s1, &x1, &d1, &a1, &b1) || !slice_of (g, s0, &x0, &d0, &a0, &b0) || x0 != x1 || d0 != d1)
        continue;
      if (!arg_int (v, 1, "dim", 0, &cd) || !norm_dim (cd, v->n_dims, &dim) || dim != d0)
        continue;
      if (x0->shape[d0] % 2 != 0 || a0 != 0 || b0 != x0->shape[d0] / 2 || a1 != b0 || b1 != x0->shape[d0])
        continue;
      v->emit = EMIT_ROTATE;
      v->src[0] = value_index (g, x0);
      v->axis_dim = dim;
      neg->absorbed_users++;
      s1->absorbed_users++;
      s0->absorbed_users++;
    }
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      if (v->absorbed_users > 0 && v->absorbed_users == v->users)
        {
          v->absorbed = TRUE;
          v->emit = EMIT_SKIP;
        }
    }
}

static const char * const map1_names[][2] = {
  { "gelu", "gelu" }, { "silu", "silu" }, { "relu", "relu" }, { "sigmoid", "sigmoid" }, { "tanh", "tanh" },
  { "exp", "exp" }, { "neg", "neg" }, { "rsqrt", "rsqrt" }, { "sqrt", "sqrt" }, { "square", "square" },
};

static const char * const view_names[] = {
  "view", "reshape", "_unsafe_view", "unsqueeze", "squeeze", "transpose", "t", "permute", "contiguous",
  "clone", "alias", "detach", "lift_fresh_copy", "expand", "flatten",
};

static gboolean
in_list (const char         *base,
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
        copy_dims (v, a);
      return TRUE;
    }
  if (g_str_equal (v->base, "transpose"))
    {
      gint64 d0, d1;
      int i0, i1;

      if (!arg_int (v, 1, "dim0", 0, &d0) || !arg_int (v, 2, "dim1", 0, &d1) || !norm_dim (d0, a->n_dims, &i0)
          || !norm_dim (d1, a->n_dims, &i1))
        {
          fail (g, v, _("transpose needs two dimensions"));
          return FALSE;
        }
      copy_dims (v, a);
      v->dims[i0] = a->dims[i1];
      v->dims[i1] = a->dims[i0];
      return TRUE;
    }
  /* permute */
  {
    json_object *perm = arg (v, 1, "dims");

    if (perm == NULL || !json_object_is_type (perm, json_type_array) || json_object_array_length (perm) != a->n_dims)
      {
        fail (g, v, _("permute needs one index per dimension"));
        return FALSE;
      }
    for (guint i = 0; i < a->n_dims; i++)
      {
        int k;

        if (!norm_dim (json_object_get_int64 (json_object_array_get_idx (perm, i)), a->n_dims, &k))
          {
            fail (g, v, _("permute index out of range"));
            return FALSE;
          }
        v->dims[i] = a->dims[k];
      }
    return TRUE;
  }
}

/* A view, reshape, transpose, permute, expand or copy: the same data under new dims. */
static void
pass1_view (G     *g,
            Value *v,
            Value *a)
{
  const char *b = v->base;

  if (!need (g, v, a, 0))
    return;
  set_src (g, v, 0, a);
  v->emit = a->dtype != v->dtype ? EMIT_CAST : EMIT_VIEW;
  if (g_str_equal (b, "transpose") || g_str_equal (b, "t") || g_str_equal (b, "permute"))
    permute_dims (g, v, a);
  else if (g_str_equal (b, "expand"))
    {
      for (guint i = 0; i < a->n_dims; i++)
        if (a->dims[i] == NONE && v->shape[v->n_dims - a->n_dims + i] != 1)
          {
            unsupported (g, v, "an expand that repeats data (use enable_gqa for grouped heads)");
            return;
          }
      copy_dims (v, a);
    }
  else if (v->n_dims == a->n_dims && g_str_has_prefix (b, "_to") | g_str_equal (b, "to")
           | g_str_equal (b, "contiguous") | g_str_equal (b, "clone") | g_str_equal (b, "alias")
           | g_str_equal (b, "detach") | g_str_equal (b, "lift_fresh_copy"))
    copy_dims (v, a);
  else
    reshape (g, v, a);
}

/* A product of x and y, with an optional bias added after it. */
static void
set_contract (G     *g,
              Value *v,
              Value *x,
              Value *y,
              Value *bias)
{
  set_src (g, v, 0, x);
  set_src (g, v, 1, y);
  v->extra[0] = bias ? value_index (g, bias) : -1;
  v->emit = EMIT_CONTRACT;
}

/* F.linear: x · Wᵀ (+ bias) over the last dimension. */
static void
pass1_linear (G     *g,
              Value *v,
              Value *a)
{
  Value *w = arg_value (g, v, 1, "weight"), *bias = arg_value (g, v, 2, "bias");

  if (!need (g, v, a, 1) || !need (g, v, w, 2) || (bias && !need (g, v, bias, 1)))
    return;
  if (w->n_dims != 2)
    {
      unsupported (g, v, "a weight that is not a matrix");
      return;
    }
  if (!unite (g, v, a->dims[a->n_dims - 1], w->dims[1]))
    return;
  for (guint i = 0; i + 1 < a->n_dims; i++)
    v->dims[i] = a->dims[i];
  v->dims[v->n_dims - 1] = w->dims[0];
  if (bias && !unite (g, v, bias->dims[bias->n_dims - 1], w->dims[0]))
    return;
  set_contract (g, v, a, w, bias);
}

/* mm, bmm, matmul, addmm: a product over the shared inner dimension. */
static void
pass1_matmul (G     *g,
              Value *v,
              Value *a)
{
  const char *b = v->base;
  gboolean addmm = g_str_equal (b, "addmm");
  Value *x = arg_value (g, v, addmm ? 1 : 0, addmm ? "mat1" : "self");
  Value *y = arg_value (g, v, addmm ? 2 : 1, addmm ? "mat2" : "other");
  Value *bias = addmm ? a : NULL;

  if (!need (g, v, x, 2) || !need (g, v, y, 2) || (addmm && !need (g, v, bias, 1)))
    return;
  if (addmm && (arg (v, 3, "beta") || arg (v, 4, "alpha")))
    {
      unsupported (g, v, "addmm with beta or alpha");
      return;
    }
  if (!matmul_dims (g, v, x, y))
    return;
  /* the bias broadcasts against the product, right-aligned */
  for (guint i = 0; bias && i < bias->n_dims && i < v->n_dims; i++)
    {
      guint bi = bias->n_dims - 1 - i, vi = v->n_dims - 1 - i;

      if (bias->dims[bi] != NONE && dim_size (g, bias, bi) == dim_size (g, v, vi)
          && !unite (g, v, bias->dims[bi], v->dims[vi]))
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

  if (!need (g, v, a, 1))
    return;
  if (!arg_int (v, 1, "dim", -1, &dim) || !norm_dim (dim, a->n_dims, &v->axis_dim))
    {
      fail (g, v, _("softmax over no dimension"));
      return;
    }
  copy_dims (v, a);
  set_src (g, v, 0, a);
  v->emit = EMIT_SOFTMAX;
}

/* layer_norm, native_layer_norm, rms_norm over the last dimension, with weight and bias. */
static void
pass1_norm (G     *g,
            Value *v,
            Value *a)
{
  const char *b = v->base;
  gboolean rms = g_str_equal (b, "rms_norm");
  json_object *shape = arg (v, 1, "normalized_shape");
  Value *w = arg_value (g, v, 2, "weight"), *bias = rms ? NULL : arg_value (g, v, 3, "bias");

  if (!need (g, v, a, 1))
    return;
  if (shape == NULL || !json_object_is_type (shape, json_type_array) || json_object_array_length (shape) != 1)
    {
      unsupported (g, v, "a norm over more than the last dimension");
      return;
    }
  v->norm = rms ? NAPKIN_NORM_RMSNORM : NAPKIN_NORM_LAYERNORM;
  if (!arg_double (v, rms ? 3 : 4, "eps", rms ? default_eps (a->dtype) : 1e-5, &v->eps) || !(v->eps > 0 && v->eps < 1))
    {
      fail (g, v, _("eps must be a number between 0 and 1"));
      return;
    }
  if (g_str_equal (b, "native_layer_norm"))
    v->n_dims = a->n_dims;
  copy_dims (v, a);
  v->axis_dim = a->n_dims - 1;
  hint (g, a->dims[a->n_dims - 1], "e", 1);
  if ((w && (!need (g, v, w, 1) || !unite (g, v, w->dims[w->n_dims - 1], a->dims[a->n_dims - 1])))
      || (bias && (!need (g, v, bias, 1) || !unite (g, v, bias->dims[bias->n_dims - 1], a->dims[a->n_dims - 1]))))
    return;
  set_src (g, v, 0, a);
  set_src (g, v, 1, w);
  set_src (g, v, 2, bias);
  v->emit = EMIT_NORM;
}

/* getitem: only native_layer_norm's output. */
static void
pass1_getitem (G     *g,
               Value *v,
               Value *a)
{
  gint64 index;

  if (a == NULL || !g_str_equal (a->base, "native_layer_norm") || !arg_int (v, 1, NULL, -1, &index) || index != 0)
    {
      unsupported (g, v, "an item of a result other than native_layer_norm's output");
      return;
    }
  /* a layer norm that was left out has no dimensions to take */
  if (!need (g, v, a, 0))
    return;
  copy_dims (v, a);
  set_src (g, v, 0, a);
  v->emit = EMIT_VIEW;
}

/* scaled_dot_product_attention: causal or not, grouped query heads through enable_gqa. */
static void
pass1_attention (G     *g,
                 Value *v,
                 Value *a)
{
  Value *q = a, *k = arg_value (g, v, 1, "key"), *vv = arg_value (g, v, 2, "value");
  double dropout;
  guint nb;
  int hq, hk, L, S, E, Ev;

  if (!need (g, v, q, 3) || !need (g, v, k, 3) || !need (g, v, vv, 3))
    return;
  if (arg (v, 3, "attn_mask") != NULL && !json_object_is_type (arg (v, 3, "attn_mask"), json_type_null))
    {
      unsupported (g, v, "attn_mask (is_causal is covered)");
      return;
    }
  if (!arg_double (v, 4, "dropout_p", 0, &dropout) || dropout != 0)
    {
      unsupported (g, v, "dropout_p other than 0");
      return;
    }
  if (q->n_dims != k->n_dims || k->n_dims != vv->n_dims)
    {
      unsupported (g, v, "query, key and value of different ranks");
      return;
    }
  nb = q->n_dims - 3;
  hq = q->dims[nb], L = q->dims[nb + 1], E = q->dims[nb + 2];
  hk = k->dims[nb], S = k->dims[nb + 1];
  Ev = vv->dims[nb + 2];
  for (guint i = 0; i < nb; i++)
    if (!unite (g, v, q->dims[i], k->dims[i]) || !unite (g, v, k->dims[i], vv->dims[i]))
      return;
  if (!unite (g, v, E, k->dims[nb + 2]) || !unite (g, v, S, vv->dims[nb + 1]) || !unite (g, v, hk, vv->dims[nb]))
    return;
  if (dim_size (g, q, nb) != dim_size (g, k, nb))
    {
      g_autoptr(GArray) kids = g_array_new (FALSE, FALSE, sizeof (int));
      gint64 group = dim_size (g, q, nb) / MAX (dim_size (g, k, nb), 1);
      int gc;

      if (!arg_bool (v, 6, "enable_gqa") || group * dim_size (g, k, nb) != dim_size (g, q, nb))
        {
          fail (g, v, _("%lld query heads and %lld key heads need enable_gqa=True"),
                (long long) (dim_size (g, q, nb)), (long long) (dim_size (g, k, nb)));
          return;
        }
      gc = new_class (g, group);
      g_array_append_val (kids, hk);
      g_array_append_val (kids, gc);
      if (!split (g, v, hq, kids))
        return;
      hint (g, gc, "g", 1);
    }
  else if (!unite (g, v, hq, hk))
    return;
  for (guint i = 0; i < nb; i++)
    v->dims[i] = q->dims[i];
  v->dims[nb] = hq;
  v->dims[nb + 1] = L;
  v->dims[nb + 2] = Ev;
  if (nb > 0)
    hint (g, q->dims[0], "b", 1);
  hint (g, hk, "h", 1);
  hint (g, L, "s", 1);
  hint (g, S, "s", 1);
  hint (g, E, "d", 1);
  hint (g, Ev, "dv", 1);
  v->causal = arg_bool (v, 5, "is_causal");
  if (!arg_double (v, 99, "scale", 1.0 / sqrt ((double) dim_size (g, q, nb + 2)), &v->alpha)
      || !isfinite (v->alpha) || fabs (v->alpha) > NAPKIN_MAX_NUMBER)
    {
      fail (g, v, _("scale must be a number of at most %g either way"), NAPKIN_MAX_NUMBER);
      return;
    }
  set_src (g, v, 0, q);
  set_src (g, v, 1, k);
  set_src (g, v, 2, vv);
  v->emit = EMIT_ATTENTION;
}

/* mul, add, sub, div: a binary map, or a scale by a constant. */
static void
pass1_arith (G     *g,
             Value *v,
             Value *a)
{
  const char *b = v->base;
  Value *y = arg_value (g, v, 1, "other");
  double alpha = 1;

  if (!need (g, v, a, 0))
    return;
  if (!arg_double (v, 2, "alpha", 1, &alpha))
    {
      fail (g, v, _("alpha must be a number"));
      return;
    }
  if (y == NULL)
    {
      double s;

      if (!arg_is_number (v, 1) || (!g_str_equal (b, "mul") && !g_str_equal (b, "div")))
        {
          unsupported (g, v, "adding a constant (the format scales by constants only)");
          return;
        }
      arg_double (v, 1, NULL, 1, &s);
      if (g_str_equal (b, "div") && s == 0)
        {
          fail (g, v, _("division by zero"));
          return;
        }
      v->alpha = g_str_equal (b, "div") ? 1.0 / s : s;
      if (!isfinite (v->alpha) || fabs (v->alpha) > NAPKIN_MAX_NUMBER)
        {
          fail (g, v, _("the factor %g is out of range (at most %g either way)"), v->alpha, NAPKIN_MAX_NUMBER);
          return;
        }
      copy_dims (v, a);
      set_src (g, v, 0, a);
      v->emit = EMIT_SCALE;
      return;
    }
  if (alpha != 1)
    {
      unsupported (g, v, "add or sub with alpha other than 1");
      return;
    }
  if (!need (g, v, y, 0) || !broadcast (g, v, a, y))
    return;
  napkin_fn_from_string (b, &v->fn);
  set_src (g, v, 0, a);
  set_src (g, v, 1, y);
  v->emit = EMIT_MAP2;
}
/* A unary map of map1_names[i] (gelu exact only). */
static void
pass1_map1 (G     *g,
            Value *v,
            Value *a,
            guint  i)
{
  const char *approx = member_string (v->kwargs, "approximate");

  if (!need (g, v, a, 0))
    return;
  if (approx == NULL && arg (v, 1, NULL) && json_object_is_type (arg (v, 1, NULL), json_type_string))
    approx = json_object_get_string (arg (v, 1, NULL));
  if (approx != NULL && !g_str_equal (approx, "none"))
    {
      unsupported (g, v, "gelu with approximate='tanh' (the format's gelu is the exact one)");
      return;
    }
  napkin_fn_from_string (map1_names[i][1], &v->fn);
  copy_dims (v, a);
  set_src (g, v, 0, a);
  v->emit = EMIT_MAP1;
  if (v->fn == NAPKIN_FN_GELU || v->fn == NAPKIN_FN_SILU || v->fn == NAPKIN_FN_RELU)
    hint (g, a->dims[a->n_dims - 1], "f", 1);
}

/* Pass 1 of one call: its dims from its arguments' (docs/import.md), by operation. */
static void
pass1_call (G     *g,
            Value *v)
{
  const char *b = v->base;
  Value *a = arg_value (g, v, 0, "self");

  if (g_str_has_prefix (b, "_assert") || g_str_has_prefix (b, "sym_"))
    {
      v->emit = EMIT_SKIP;
      v->absorbed = TRUE;
      g->n_checks++;
      return;
    }
  if (v->emit == EMIT_ROTATE)
    {
      Value *x = g->values->pdata[v->src[0]];

      if (!need (g, v, x, 1))
        return;
      copy_dims (v, x);
      return;
    }
  if (v->absorbed)
    return;
  if (v->has_shape && v->has_dtype == FALSE && g_strcmp0 (b, "getitem") != 0)
    {
      unsupported (g, v, "a result that is not a floating-point tensor");
      return;
    }

  if (in_list (b, view_names, G_N_ELEMENTS (view_names)) || g_str_equal (b, "_to_copy") || g_str_equal (b, "to"))
    {
      pass1_view (g, v, a);
      return;
    }

  if (g_str_equal (b, "linear"))
    {
      pass1_linear (g, v, a);
      return;
    }
  if (g_str_equal (b, "mm") || g_str_equal (b, "bmm") || g_str_equal (b, "matmul") || g_str_equal (b, "addmm"))
    {
      pass1_matmul (g, v, a);
      return;
    }
  if (g_str_equal (b, "einsum"))
    {
      if (einsum_dims (g, v))
        {
          v->extra[0] = -1;
          v->emit = EMIT_CONTRACT;
        }
      return;
    }
  if (g_str_equal (b, "softmax") || g_str_equal (b, "_softmax") || g_str_equal (b, "_safe_softmax"))
    {
      pass1_softmax (g, v, a);
      return;
    }
  if (g_str_equal (b, "layer_norm") || g_str_equal (b, "native_layer_norm") || g_str_equal (b, "rms_norm"))
    {
      pass1_norm (g, v, a);
      return;
    }
  if (g_str_equal (b, "getitem"))
    {
      pass1_getitem (g, v, a);
      return;
    }
  if (g_str_equal (b, "scaled_dot_product_attention"))
    {
      pass1_attention (g, v, a);
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (map1_names); i++)
    if (g_str_equal (b, map1_names[i][0]))
      {
        pass1_map1 (g, v, a, i);
        return;
      }
  if (g_str_equal (b, "mul") || g_str_equal (b, "add") || g_str_equal (b, "sub") || g_str_equal (b, "div"))
    {
      pass1_arith (g, v, a);
      return;
    }
  unsupported (g, v, NULL);
}

/* ---------------------------------------------------------------- pass 2 */

/* Room for one more axis in a diagram Napkin loads, else the error at `v`. */
static gboolean
room_for_axis (G     *g,
               Value *v)
{
  g_autofree char *why = napkin_import_over_limit (g->b, NAPKIN_ITEM_AXIS, 1);

  if (why != NULL)
    fail (g, v, "%s", why);
  return why == NULL;
}

static char **
atom_names (G     *g,
            Value *v)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
  char **names;

  for (guint i = 0; i < v->n_dims; i++)
    expand (g, v->dims[i], atoms);
  names = g_new0 (char *, atoms->len + 1);
  for (guint i = 0; i < atoms->len; i++)
    names[i] = g_strdup (cls (g, find (g, g_array_index (atoms, int, i)))->axis);
  return names;
}

static const char *
axis_of_dim (G     *g,
             Value *v,
             int    dim)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

  expand (g, v->dims[dim], atoms);
  if (atoms->len != 1)
    {
      fail (g, v, _("the operation runs over a dimension that is %u axes"), atoms->len);
      return NULL;
    }
  return cls (g, g_array_index (atoms, int, 0))->axis;
}

static Value *
src (G     *g,
     Value *v,
     guint  i)
{
  return v->src[i] >= 0 ? g->values->pdata[v->src[i]] : NULL;
}

static char *
label_of (G     *g,
          Value *v)
{
  if (v->emit == EMIT_CONTRACT && g_str_equal (v->base, "linear"))
    {
      Value *w = src (g, v, 1);

      if (w && w->param && g_str_has_suffix (w->param, ".weight"))
        return g_strndup (w->param, strlen (w->param) - strlen (".weight"));
    }
  return g_strdup (v->name);
}

/* Adds a node whose inputs are the given node ids; fixes its element type to the
 * graph's when the format would infer another. */
static const char *
emit_node (G           *g,
           Value       *v,
           NapkinNode  *node,
           const char  *stem,
           const char  *in0,
           const char  *in1)
{
  g_autofree char *why = napkin_import_over_limit (g->b, NAPKIN_ITEM_NODE, 1);
  const char *id;
  guint index;
  const NapkinTensorType *type;

  if (why != NULL)
    {
      /* the limit is checked as the graph is read: no diagram the loader refuses */
      fail (g, v, "%s", why);
      napkin_item_free (NAPKIN_ITEM_NODE, node);
      return in0 ? in0 : "";
    }
  id = napkin_import_add_node (g->b, node, stem);
  if (in0)
    napkin_import_add_wire (g->b, in0, id, 0);
  if (in1)
    napkin_import_add_wire (g->b, in1, id, 1);
  index = napkin_import_find (g->b, NAPKIN_ITEM_NODE, id);
  type = napkin_import_node_type (g->b, index);
  if (type->valid && v->has_dtype && type->dtype != v->dtype)
    {
      NapkinNode *copy = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (g->d, index));

      copy->has_dtype = TRUE;
      copy->dtype = v->dtype;
      napkin_import_replace_node (g->b, index, copy);
    }
  return napkin_diagram_node (g->d, index)->id;
}

static NapkinNode *
map_node (NapkinMapFn fn,
          const char *label)
{
  NapkinNode *n = napkin_node_new ("m", NAPKIN_OP_MAP);

  n->fn = fn;
  n->label = g_strdup (label);
  return n;
}

/* The axes of node `in`'s value in the order it is stored (its inferred type), else
 * `fallback`: a step that keeps that order maps each element to itself, and a product
 * that keeps it is one GEMM (the rows one contiguous run, docs/plan.md "GEMM"). */
static char **
stored_order (G          *g,
              const char *in,
              char      **fallback)
{
  int index = napkin_import_find (g->b, NAPKIN_ITEM_NODE, in);
  const NapkinTensorType *type = index >= 0 ? napkin_import_node_type (g->b, index) : NULL;
  char **out;

  if (type == NULL || !type->valid)
    return g_strdupv (fallback);
  out = g_new0 (char *, type->n_axes + 1);
  for (guint i = 0; i < type->n_axes; i++)
    out[i] = g_strdup (napkin_diagram_axis (g->d, type->axes[i])->name);
  return out;
}

/* A rearrange that only renames the axis `from` to `to` in place. */
static const char *
rename_axis (G          *g,
             Value      *v,
             const char *in,
             char      **axes,
             const char *from,
             const char *to,
             const char *stem)
{
  NapkinNode *n = napkin_node_new ("r", NAPKIN_OP_REARRANGE);

  n->out = stored_order (g, in, axes);
  for (guint i = 0; n->out[i]; i++)
    if (g_str_equal (n->out[i], from))
      {
        g_free (n->out[i]);
        n->out[i] = g_strdup (to);
      }
  n->label = g_strdup_printf ("%s→%s", from, to);
  return emit_node (g, v, n, stem, in, NULL);
}

static void
emit_rotate (G     *g,
             Value *v)
{
  Value *x = src (g, v, 0);
  const char *ax = axis_of_dim (g, x, v->axis_dim);
  g_auto(GStrv) axes = atom_names (g, x);
  const char *tensor, *in;
  g_autofree char *ax2 = NULL;
  g_autofree char *rin = NULL;
  NapkinNode *n;
  const char *c;

  if (ax == NULL)
    return;
  ax2 = g_strconcat (ax, "_rot", NULL);
  tensor = g_hash_table_lookup (g->rotations, ax);
  if (tensor == NULL)
    {
      g_autofree char *name = g_strconcat ("rotate_half_", ax, NULL);
      char *t = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, name);
      char *raxes[] = { (char *) ax, ax2, NULL };
      json_object *extra = json_object_new_object ();
      NapkinNode *input = napkin_node_new ("r", NAPKIN_OP_INPUT);

      if (napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax2) < 0 && !room_for_axis (g, v))
        return;
      if (napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax2) < 0)
        napkin_import_add_axis (g->b, ax2, napkin_diagram_axis (g->d, napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax))->size);
      json_object_object_add (extra, "constant", json_object_new_string ("rotate_half"));
      napkin_import_add_tensor (g->b, t, raxes, x->dtype, extra);
      input->tensor = g_strdup (t);
      input->label = g_strdup_printf ("rotate_half(%s)", ax);
      g_hash_table_insert (g->rotations, g_strdup (ax), t);
      tensor = t;
      g_hash_table_insert (g->rotation_inputs, g_strdup (t), g_strdup (emit_node (g, v, input, t, NULL, NULL)));
    }
  /* the input node of this matrix */
  rin = g_strdup (g_hash_table_lookup (g->rotation_inputs, tensor));
  if (rin == NULL || g->failed)
    return;
  in = x->napkin;
  n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
  n->out = stored_order (g, in, axes);
  for (guint i = 0; n->out[i]; i++)
    if (g_str_equal (n->out[i], ax))
      {
        g_free (n->out[i]);
        n->out[i] = g_strdup (ax2);
      }
  n->label = g_strdup ("rotate_half");
  c = emit_node (g, v, n, v->name, in, rin);
  v->napkin = g_strdup (rename_axis (g, v, c, n->out, ax2, ax, "unrotate"));
}

static void
emit_attention (G     *g,
                Value *v)
{
  Value *q = src (g, v, 0), *k = src (g, v, 1), *vv = src (g, v, 2);
  guint nb = q->n_dims - 3;
  const char *qaxis = axis_of_dim (g, q, nb + 1);
  const char *saxis = axis_of_dim (g, k, nb + 1);
  g_autofree char *key = NULL;
  g_auto(GStrv) kaxes = atom_names (g, k);
  g_auto(GStrv) vaxes = atom_names (g, vv);
  g_autoptr(GPtrArray) sout = g_ptr_array_new ();
  g_auto(GStrv) oaxes = atom_names (g, v);
  const char *kin = k->napkin, *vin = vv->napkin, *cur;
  NapkinNode *n;

  if (qaxis == NULL || saxis == NULL)
    return;
  if (g_str_equal (qaxis, saxis))
    {
      /* self-attention: the keys' positions become their own axis, so that the
       * scores are [.., query, key] */
      if (!room_for_axis (g, v))
        return;
      key = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, "k");
      napkin_import_add_axis (g->b, key, napkin_diagram_axis (g->d, napkin_import_find (g->b, NAPKIN_ITEM_AXIS, saxis))->size);
      kin = rename_axis (g, v, kin, kaxes, saxis, key, "k_pos");
      vin = rename_axis (g, v, vin, vaxes, saxis, key, "v_pos");
    }
  else
    key = g_strdup (saxis);

  /* scores: the output's axes up to the query's, then the key's */
  for (guint i = 0; oaxes[i]; i++)
    {
      g_ptr_array_add (sout, oaxes[i]);
      if (g_str_equal (oaxes[i], qaxis))
        break;
    }
  g_ptr_array_add (sout, key);
  g_ptr_array_add (sout, NULL);

  n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
  n->out = g_strdupv ((char **) sout->pdata);
  n->label = g_strdup ("Q·Kᵀ");
  cur = emit_node (g, v, n, "scores", q->napkin, kin);
  n = map_node (NAPKIN_FN_SCALE, "scale");
  n->alpha = v->alpha;
  cur = emit_node (g, v, n, "scale", cur, NULL);
  if (v->causal)
    {
      n = napkin_node_new ("m", NAPKIN_OP_MASK);
      n->mask = NAPKIN_MASK_CAUSAL;
      n->rows = g_strdup (qaxis);
      n->axis = g_strdup (key);
      n->label = g_strdup ("causal");
      cur = emit_node (g, v, n, "causal", cur, NULL);
    }
  n = napkin_node_new ("s", NAPKIN_OP_SOFTMAX);
  n->axis = g_strdup (key);
  n->label = g_strdup ("softmax");
  cur = emit_node (g, v, n, "probs", cur, NULL);
  /* O is stored token-major, [batch…, query, heads…, dv], as FlashAttention stores it:
   * the transpose and reshape that follow in a block then read the heads and dv as one
   * contiguous contracted run, and the output projection is a plain GEMM
   * (docs/import.md) */
  {
    g_autoptr(GArray) lead = g_array_new (FALSE, FALSE, sizeof (int));
    guint at = 0, n_lead;

    for (guint i = 0; i < nb; i++)
      expand (g, v->dims[i], lead);
    n_lead = lead->len;
    n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
    n->out = g_new0 (char *, g_strv_length (oaxes) + 1);
    for (guint i = 0; i < n_lead && oaxes[i]; i++)
      n->out[at++] = g_strdup (oaxes[i]);
    n->out[at++] = g_strdup (qaxis);
    for (guint i = n_lead; oaxes[i]; i++)
      if (!g_str_equal (oaxes[i], qaxis))
        n->out[at++] = g_strdup (oaxes[i]);
  }
  n->label = g_strdup ("P·V");
  v->napkin = g_strdup (emit_node (g, v, n, v->name, cur, vin));
}

static void
pass2_value (G     *g,
             Value *v)
{
  Value *a = src (g, v, 0);
  g_autofree char *label = label_of (g, v);
  NapkinNode *n = NULL;

  switch (v->emit)
    {
    case EMIT_SKIP:
    case EMIT_INPUT:
      return;
    case EMIT_VIEW:
    case EMIT_GETITEM:
      v->napkin = g_strdup (a->napkin);
      return;
    case EMIT_CAST:
      n = map_node (NAPKIN_FN_CAST, "cast");
      n->has_dtype = TRUE;
      n->dtype = v->dtype;
      v->napkin = g_strdup (emit_node (g, v, n, v->name, a->napkin, NULL));
      return;
    case EMIT_CONTRACT:
      {
        const char *id;

        n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
        n->out = atom_names (g, v);
        n->label = g_strdup (label);
        id = emit_node (g, v, n, v->name, a->napkin, src (g, v, 1)->napkin);
        if (v->extra[0] >= 0)
          {
            Value *bias = g->values->pdata[v->extra[0]];
            g_autofree char *stem = g_strconcat (v->name, "_bias", NULL);

            n = map_node (NAPKIN_FN_ADD, "+ bias");
            id = emit_node (g, v, n, stem, id, bias->napkin);
          }
        v->napkin = g_strdup (id);
        return;
      }
    case EMIT_SOFTMAX:
      n = napkin_node_new ("s", NAPKIN_OP_SOFTMAX);
      if ((n->axis = g_strdup (axis_of_dim (g, a, v->axis_dim))) == NULL)
        {
          napkin_node_free (n);
          return;
        }
      n->label = g_strdup ("softmax");
      v->napkin = g_strdup (emit_node (g, v, n, v->name, a->napkin, NULL));
      return;
    case EMIT_NORM:
      {
        Value *w = src (g, v, 1), *bias = src (g, v, 2);
        const char *id;

        n = napkin_node_new ("n", NAPKIN_OP_NORMALIZE);
        n->norm = v->norm;
        n->eps = v->eps;
        if ((n->axis = g_strdup (axis_of_dim (g, a, v->axis_dim))) == NULL)
          {
            napkin_node_free (n);
            return;
          }
        n->label = g_strdup (v->norm == NAPKIN_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
        id = emit_node (g, v, n, v->name, a->napkin, NULL);
        if (w)
          {
            g_autofree char *stem = g_strconcat (v->name, "_weight", NULL);

            id = emit_node (g, v, map_node (NAPKIN_FN_MUL, "· weight"), stem, id, w->napkin);
          }
        if (bias)
          {
            g_autofree char *stem = g_strconcat (v->name, "_bias", NULL);

            id = emit_node (g, v, map_node (NAPKIN_FN_ADD, "+ bias"), stem, id, bias->napkin);
          }
        v->napkin = g_strdup (id);
        return;
      }
    case EMIT_ATTENTION:
      emit_attention (g, v);
      return;
    case EMIT_MAP1:
      n = map_node (v->fn, napkin_fn_info (v->fn)->name);
      v->napkin = g_strdup (emit_node (g, v, n, v->name, a->napkin, NULL));
      return;
    case EMIT_MAP2:
      {
        static const char *const signs[] = { "+", "−", "·", "÷" };

        n = map_node (v->fn, v->fn <= NAPKIN_FN_DIV ? signs[v->fn] : napkin_fn_info (v->fn)->name);
        v->napkin = g_strdup (emit_node (g, v, n, v->name, a->napkin, src (g, v, 1)->napkin));
        return;
      }
    case EMIT_SCALE:
      n = map_node (NAPKIN_FN_SCALE, "scale");
      n->alpha = v->alpha;
      g_free (n->label);
      n->label = g_strdup_printf ("·%g", v->alpha);
      v->napkin = g_strdup (emit_node (g, v, n, v->name, a->napkin, NULL));
      return;
    case EMIT_ROTATE:
      emit_rotate (g, v);
      return;
    default:
      g_assert_not_reached ();
    }
}

/* ---------------------------------------------------------------- naming */

/* An unhinted axis of the same size as a named one is called after it (e2 beside e):
 * a linear layer's output beside its input. */
static const char *
same_size_name (G         *g,
                GPtrArray *roots,
                Class     *c)
{
  for (guint i = 0; i < roots->len; i++)
    {
      Class *o = cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

      if (o != c && o->axis != NULL && o->hint != NULL && o->size == c->size)
        return o->hint;
    }
  return NULL;
}

static void
name_axes (G *g)
{
  static const char *const fallback = "ijklmnoptuvwxyzacr";
  g_autoptr(GPtrArray) roots = g_ptr_array_new ();
  g_autoptr(GHashTable) seen = g_hash_table_new (NULL, NULL);
  guint next = 0;

  /* the atomic classes that some value uses, in the order they were made */
  for (guint j = 0; j < 2 * g->values->len; j++)
    {
      /* the module's own inputs first (b, s, e before the weights' axes) */
      Value *v = g->values->pdata[j % g->values->len];
      gboolean user_input = v->emit == EMIT_INPUT && v->role == 0;
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

      if (v->emit == EMIT_SKIP || (j < g->values->len) != user_input)
        continue;
      for (guint k = 0; k < v->n_dims; k++)
        expand (g, v->dims[k], atoms);
      for (guint k = 0; k < atoms->len; k++)
        {
          int r = g_array_index (atoms, int, k);

          if (g_hash_table_add (seen, GINT_TO_POINTER (r + 1)))
            g_ptr_array_add (roots, GINT_TO_POINTER (r + 1));
        }
    }
  /* the limit before the names: naming compares classes in pairs */
  if (roots->len > NAPKIN_MAX_AXES)
    {
      fail (g, NULL, _("the graph's values have %u distinct dimensions; a diagram has at most %d axes"),
            roots->len, NAPKIN_MAX_AXES);
      return;
    }
  /* hinted ones first, by priority, so that a strong hint keeps its name */
  for (int prio = 3; prio >= -1; prio--)
    for (guint i = 0; i < roots->len; i++)
      {
        Class *c = cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

        if (c->axis != NULL || c->prio != prio)
          continue;
        if (c->hint != NULL)
          c->axis = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, c->hint);
        else if (same_size_name (g, roots, c) != NULL)
          c->axis = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, same_size_name (g, roots, c));
        else
          {
            char stem[2] = { 0, 0 };

            do
              stem[0] = fallback[next++ % strlen (fallback)];
            while (napkin_import_find (g->b, NAPKIN_ITEM_AXIS, stem) >= 0 && next < 64);
            c->axis = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, stem);
          }
        napkin_import_add_axis (g->b, c->axis, c->size);
      }
  /* the diagram lists axes in the order values first use them */
  {
    g_autoptr(GPtrArray) axes = g_ptr_array_new ();

    while (napkin_diagram_n_axes (g->d) > 0)
      g_ptr_array_add (axes, napkin_diagram_steal_item (g->d, NAPKIN_ITEM_AXIS, napkin_diagram_n_axes (g->d) - 1));
    g_hash_table_remove_all (g->b->names[NAPKIN_ITEM_AXIS]);
    for (guint i = 0; i < roots->len; i++)
      {
        Class *c = cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

        for (guint k = 0; k < axes->len; k++)
          if (axes->pdata[k] != NULL && g_str_equal (((NapkinAxis *) axes->pdata[k])->name, c->axis))
            {
              NapkinAxis *axis = axes->pdata[k];

              napkin_import_add_axis (g->b, axis->name, axis->size);
              napkin_item_free (NAPKIN_ITEM_AXIS, axis);
              axes->pdata[k] = NULL;
            }
      }
  }
}

/* ---------------------------------------------------------------- reading */

/* Counts the uses of each value that `a` (an argument of `user`, or the outputs when
 * `user` is NULL) refers to; a graph lists every node after those it reads, so a
 * reference to an unknown node, to the node itself or to a later one is an error. */
static void
count_refs (G           *g,
            Value       *user,
            json_object *a)
{
  if (a == NULL || g->failed)
    return;
  if (json_object_is_type (a, json_type_array))
    for (guint i = 0; i < json_object_array_length (a); i++)
      count_refs (g, user, json_object_array_get_idx (a, i));
  else if (json_object_is_type (a, json_type_object))
    {
      const char *name = member_string (a, "node");
      Value *v = name ? g_hash_table_lookup (g->by_name, name) : NULL;
      g_autofree char *shown = name ? napkin_text_quoted (name) : NULL;

      if (name != NULL && v == NULL && user == NULL)
        fail (g, NULL, _("the graph's outputs name %s, which is no node of the graph"), shown);
      else if (name != NULL && v == NULL)
        fail (g, user, _("it reads %s, which is no node of the graph"), shown);
      else if (v != NULL && user != NULL && v == user)
        fail (g, user, _("it reads itself (%s): a graph node reads only the nodes before it"), shown);
      else if (v != NULL && user != NULL && v->index > user->index)
        fail (g, user, _("it reads %s, which comes later in the graph: a graph node reads only the nodes "
                         "before it"), shown);
      else if (v)
        v->users++;
    }
}

static const char *
base_of (const char *target,
         char      **out)
{
  const char *t = target;
  const char *dot;

  if (g_str_has_prefix (t, "torch.ops."))
    t += strlen ("torch.ops.");
  if (g_str_has_prefix (t, "aten."))
    t += strlen ("aten.");
  dot = strchr (t, '.');
  *out = dot ? g_strndup (t, dot - t) : g_strdup (t);
  return *out;
}

static gboolean
read_values (G           *g,
             json_object *root)
{
  json_object *nodes = member (root, "nodes");
  const char *file = member_string (root, "source");

  if (nodes == NULL || !json_object_is_type (nodes, json_type_array))
    {
      fail (g, NULL, _("the graph has no “nodes” list"));
      return FALSE;
    }
  /* Views and assertions make no operation, so a graph may hold more nodes than a
   * diagram holds operations; beyond this many it cannot fit, and is not read. */
  if (json_object_array_length (nodes) > MAX_GRAPH_NODES)
    {
      fail (g, NULL, _("the graph has %zu nodes; Napkin reads at most %d (a diagram holds at most %d operations)"),
            json_object_array_length (nodes), MAX_GRAPH_NODES, NAPKIN_MAX_NODES);
      return FALSE;
    }
  for (guint i = 0; i < json_object_array_length (nodes); i++)
    {
      json_object *obj = json_object_array_get_idx (nodes, i);
      const char *name = member_string (obj, "name"), *op = member_string (obj, "op");
      Value *v;

      if (name == NULL || op == NULL)
        {
          fail (g, NULL, _("node %u of the graph has no “name” or “op”"), i + 1);
          return FALSE;
        }
      if (g_str_equal (op, "output"))
        {
          g->outputs = member (obj, "outputs");
          continue;
        }
      if (g_hash_table_contains (g->by_name, name))
        {
          g_autofree char *shown = napkin_text_quoted (name);

          fail (g, NULL, _("two graph nodes are called %s"), shown);
          return FALSE;
        }
      v = g_new0 (Value, 1);
      v->index = g->values->len;
      v->name = g_strdup (name);
      v->obj = obj;
      v->src[0] = v->src[1] = v->src[2] = -1;
      v->extra[0] = -1;
      v->file = member_string_or (obj, "file", file);
      v->code = member_string (obj, "code");
      if (member (obj, "line") && json_object_is_type (member (obj, "line"), json_type_int))
        v->line = (guint) CLAMP (json_object_get_int64 (member (obj, "line")), 0, G_MAXUINT);
      g_ptr_array_add (g->values, v);
      g_hash_table_insert (g->by_name, v->name, v);
      if (!parse_shape (g, v, member (obj, "shape")))
        return FALSE;
      if ((v->dtype_name = member_string (obj, "dtype")) != NULL)
        v->has_dtype = napkin_dtype_from_string (v->dtype_name, &v->dtype);
      if (g_str_equal (op, "placeholder"))
        {
          const char *role = member_string (obj, "role");

          v->emit = EMIT_INPUT;
          v->base = g_strdup ("placeholder");
          v->role = g_strcmp0 (role, "parameter") == 0 ? 1 : g_strcmp0 (role, "buffer") == 0 ? 2 : 0;
          v->param = member_string (obj, "target");
        }
      else if (g_str_equal (op, "call_function"))
        {
          v->target = member_string (obj, "target");
          if (v->target == NULL)
            {
              fail (g, v, _("a call without a “target”"));
              return FALSE;
            }
          base_of (v->target, &v->base);
          v->args = member (obj, "args");
          v->kwargs = member (obj, "kwargs");
          if (v->args != NULL && !json_object_is_type (v->args, json_type_array))
            v->args = NULL;
        }
      else
        {
          v->base = g_strdup (op);
          v->target = op;
          v->emit = EMIT_SKIP;
          unsupported (g, v, "a graph node that is not a placeholder, a call or the output");
        }
    }
  for (guint i = 0; i < g->values->len && !g->failed; i++)
    {
      Value *v = g->values->pdata[i];

      count_refs (g, v, v->args);
      count_refs (g, v, v->kwargs);
    }
  count_refs (g, NULL, g->outputs);
  return !g->failed;
}

static void
pass1 (G *g)
{
  find_rotations (g);
  for (guint i = 0; i < g->values->len && !g->failed; i++)
    {
      Value *v = g->values->pdata[i];

      if (v->emit == EMIT_INPUT)
        {
          json_object *dims = member (v->obj, "dims");

          if (!v->has_dtype && v->users > v->absorbed_users)
            unsupported (g, v, "an input that is not a floating-point tensor");
          fresh_dims (g, v);
          for (guint k = 0; k < v->n_dims; k++)
            {
              if (dims && json_object_is_type (dims, json_type_array) && k < json_object_array_length (dims)
                  && json_object_is_type (json_object_array_get_idx (dims, k), json_type_string))
                hint (g, v->dims[k], json_object_get_string (json_object_array_get_idx (dims, k)), 3);
              else if (v->role == 0 && v->n_dims >= 2)
                {
                  static const char *const guess[] = { "b", "s", "e" };
                  int from_end = (int) v->n_dims - 1 - (int) k;

                  if (from_end <= 2)
                    hint (g, v->dims[k], guess[2 - from_end], 0);
                }
            }
          continue;
        }
      if (v->emit == EMIT_SKIP && !v->absorbed && v->target == NULL)
        continue;
      if (!v->has_shape && g_strcmp0 (v->base, "native_layer_norm") == 0)
        {
          /* a tuple (output, mean, rstd): the output is shaped as the input */
          Value *a = arg_value (g, v, 0, "input");

          if (a != NULL && a->has_shape)
            {
              v->n_dims = a->n_dims;
              memcpy (v->shape, a->shape, sizeof v->shape);
              v->has_shape = TRUE;
              v->has_dtype = a->has_dtype;
              v->dtype = a->dtype;
            }
        }
      if (!v->has_shape && !g_str_has_prefix (v->base, "_assert") && !g_str_has_prefix (v->base, "sym_"))
        {
          unsupported (g, v, "a result that is not one tensor");
          v->emit = EMIT_SKIP;
          continue;
        }
      pass1_call (g, v);
      if (!g->failed && v->emit != EMIT_SKIP && v->emit != EMIT_INPUT)
        check_shape (g, v);
    }
}

/* Every value's axes must be distinct: x + x.T on a square x would need one axis twice;
 * and at most NAPKIN_MAX_RANK, as the file format holds them. */
static gboolean
check_distinct (G *g)
{
  for (guint j = 0; j < 2 * g->values->len; j++)
    {
      /* operations first: their source lines say where the axes met */
      Value *v = g->values->pdata[j % g->values->len];
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

      if (v->emit == EMIT_SKIP || (j < g->values->len) == (v->emit == EMIT_INPUT))
        continue;
      for (guint k = 0; k < v->n_dims; k++)
        expand (g, v->dims[k], atoms);
      if (atoms->len > NAPKIN_MAX_RANK)
        {
          g_autofree char *shown = napkin_text_quoted (v->name);

          fail (g, v, _("%s would have %u axes (its dimensions split by reshapes); a tensor has at most %d"),
                shown, atoms->len, NAPKIN_MAX_RANK);
          return FALSE;
        }
      for (guint a = 0; a < atoms->len; a++)
        for (guint b = a + 1; b < atoms->len; b++)
          if (find (g, g_array_index (atoms, int, a)) == find (g, g_array_index (atoms, int, b)))
            {
              fail (g, v, _("two dimensions of “%s” would be the same axis"), v->name);
              return FALSE;
            }
    }
  return TRUE;
}

static void
emit_inputs (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];
      g_auto(GStrv) axes = NULL;
      g_autofree char *stem = NULL;
      char *tensor;
      NapkinNode *n;

      if (v->emit != EMIT_INPUT || v->users == 0)
        continue;
      axes = atom_names (g, v);
      stem = g_strdup (v->param ? v->param : v->name);
      g_strdelimit (stem, ".", '_');
      tensor = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, stem);
      napkin_import_add_tensor (g->b, tensor, axes, v->dtype, NULL);
      n = napkin_node_new ("i", NAPKIN_OP_INPUT);
      n->tensor = tensor;
      n->label = g_strdup (v->param ? v->param : v->name);
      v->napkin = g_strdup (emit_node (g, v, n, stem, NULL, NULL));
    }
}

static void
emit_outputs (G *g)
{
  guint n_out = g->outputs && json_object_is_type (g->outputs, json_type_array)
                  ? json_object_array_length (g->outputs) : 0;

  if (n_out == 0)
    {
      fail (g, NULL, _("the graph has no outputs"));
      return;
    }
  for (guint i = 0; i < n_out && !g->failed; i++)
    {
      json_object *o = json_object_array_get_idx (g->outputs, i);
      const char *name = member_string (o, "node"), *want = member_string (o, "name");
      Value *v = name ? g_hash_table_lookup (g->by_name, name) : NULL;
      g_auto(GStrv) axes = NULL;
      g_autofree char *tensor = NULL;
      g_autofree char *stem = NULL;
      NapkinNode *n;

      if (v == NULL || v->napkin == NULL)
        {
          g_autofree char *shown = napkin_text_quoted (name ? name : "");

          if (name == NULL)
            fail (g, NULL, _("output %u names no graph node (expected {\"node\": NAME})"), i + 1);
          else
            fail (g, v, _("output %u, %s, is not a tensor the diagram computes (a view, an assertion or a "
                          "value left out)"), i + 1, shown);
          return;
        }
      axes = atom_names (g, v);
      tensor = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, want ? want : v->name);
      napkin_import_add_tensor (g->b, tensor, axes, v->dtype, NULL);
      n = napkin_node_new ("o", NAPKIN_OP_OUTPUT);
      n->tensor = g_strdup (tensor);
      n->label = g_strdup (tensor);
      stem = g_strconcat (tensor, "_out", NULL);
      emit_node (g, v, n, stem, v->napkin, NULL);
    }
}

/* The graph's JSON: strict syntax (the line and column of the first fault), then the
 * format and the version. NULL with the error set. */
static json_object *
read_graph_json (const char  *json_text,
                 gsize        length,
                 const char  *source,
                 GError     **error)
{
  g_autoptr(GError) local = NULL;
  gsize root_start, root_end;
  json_object *root;
  json_tokener *tok;
  const char *format;

  if (!napkin_json_check (json_text, length, &root_start, &root_end, &local))
    {
      /* the scanner's path holds the graph's own field names: escaped and cut */
      g_autofree char *shown = napkin_text_shown (local->message, -1, 300);

      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX, _("%s%sthe graph is %s"),
                   source ? source : "", source ? ": " : "", shown);
      return NULL;
    }
  tok = json_tokener_new_ex (NAPKIN_JSON_MAX_DEPTH);
  root = json_tokener_parse_ex (tok, json_text, (int) MIN (length, G_MAXINT));
  json_tokener_free (tok);
  if (root == NULL || !json_object_is_type (root, json_type_object))
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s%sthe graph is not a JSON object (the output of napkin_export.py)"),
                   source ? source : "", source ? ": " : "");
      json_object_put (root);
      return NULL;
    }
  format = member_string (root, "format");
  if (g_strcmp0 (format, "napkin-graph") != 0)
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s%sformat: expected “napkin-graph” (the output of napkin_export.py)%s"),
                   source ? source : "", source ? ": " : "",
                   g_strcmp0 (format, "napkin") == 0 ? "; this is a diagram already: open it" : "");
      json_object_put (root);
      return NULL;
    }
  if (member (root, "version") == NULL || !json_object_is_type (member (root, "version"), json_type_int)
      || json_object_get_int64 (member (root, "version")) != 1)
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s%sversion: this Napkin reads graph version 1"), source ? source : "", source ? ": " : "");
      json_object_put (root);
      return NULL;
    }
  return root;
}

/* Both passes, then the outputs, the title and the description. */
static void
build (G           *g,
       json_object *root)
{
  if (read_values (g, root))
    pass1 (g);
  if (!g->failed && g->n_unsupported > 0)
    {
      g_autofree char *more = g->n_unsupported > MAX_UNSUPPORTED_LISTED
                              ? g_strdup_printf (_("; and %u more"), g->n_unsupported - MAX_UNSUPPORTED_LISTED)
                              : g_strdup ("");

      g_set_error (g->error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_UNSUPPORTED,
                   _("%s%s%u operation%s outside the covered set (docs/import.md): %s%s"), g->source ? g->source : "",
                   g->source ? ": " : "", g->n_unsupported, g->n_unsupported == 1 ? "" : "s", g->unsupported->str,
                   more);
      g->failed = TRUE;
    }
  if (!g->failed && check_distinct (g))
    {
      name_axes (g);
      if (!g->failed)
        emit_inputs (g);
      for (guint i = 0; i < g->values->len && !g->failed; i++)
        pass2_value (g, g->values->pdata[i]);
      if (!g->failed)
        emit_outputs (g);
    }
  if (!g->failed)
    {
      const char *module = member_string (root, "module");
      g_autofree char *desc = NULL;

      napkin_diagram_set_title (g->d, module ? module : "Imported graph");
      desc = g_strdup_printf (_("Imported from the PyTorch graph of %s%s%s (docs/import.md)%s."),
                              module ? module : "a module", member_string (root, "source") ? " in " : "",
                              member_string_or (root, "source", ""),
                              g->n_checks > 0 ? "; the graph's shape assertions are left out" : "");
      napkin_diagram_set_description (g->d, desc);
    }
}

NapkinDiagram *
napkin_import_graph (const char  *json_text,
                     gsize        length,
                     const char  *source,
                     GError     **error)
{
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(GArray) classes = g_array_new (FALSE, TRUE, sizeof (Class));
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func ((GDestroyNotify) value_free);
  g_autoptr(GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) rotations = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) rotation_inputs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GString) unsup = g_string_new (NULL);
  g_autofree char *shown_source = source ? napkin_text_shown (source, -1, 200) : NULL;
  NapkinImportBuilder b;
  json_object *root;
  G g = { shown_source, classes, values, by_name, error, FALSE, unsup, 0, 0, NULL, &b, rotations,
          rotation_inputs, NULL };

  g_array_set_clear_func (classes, (GDestroyNotify) class_clear);

  if ((root = read_graph_json (json_text, length, shown_source, error)) == NULL)
    return NULL;

  d = napkin_diagram_new ();
  g.d = d;
  napkin_import_builder_init (&b, d);
  napkin_diagram_freeze_changed (d);
  build (&g, root);
  json_object_put (root);
  napkin_import_builder_clear (&b);
  if (g.failed)
    return NULL;

  {
    NapkinItemKind kind;
    guint index;
    g_autofree char *why = napkin_import_check (d, &kind, &index);

    if (why != NULL)
      {
        g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_INVALID,
                     _("%s%sthe graph makes a diagram Napkin would refuse: %s"), shown_source ? shown_source : "",
                     shown_source ? ": " : "", why);
        return NULL;
      }
  }
  napkin_import_layout (d);
  napkin_diagram_thaw_changed (d);
  return g_steal_pointer (&d);
}
