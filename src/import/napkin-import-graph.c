/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-describe.h"
#include "napkin-import-graph-private.h"
#include "napkin-json-scan.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* Views and assertions make no operation, so a graph may hold more nodes than a
 * diagram holds operations, but not many more. */
#define MAX_GRAPH_NODES (4 * NAPKIN_MAX_NODES)

/* The first refusals are listed, the rest counted (a graph of many unknown operations
 * would make an error of megabytes). */
#define MAX_REFUSALS_LISTED 20
#define MAX_REPORT_BYTES    3000

/* The exporter's graph JSON to a diagram (docs/import.md, "Graph JSON").
 *
 * Two passes. The first gives every dimension of every value an axis class and
 * unites classes that must be the same axis (a size flowing through an elementwise
 * operation, the two sides of a contraction); a reshape that splits or merges
 * dimensions makes a class a composite of others, so that q[b,s,4096] viewed as
 * [b,s,32,128] makes the projection's own output [b,s,h,d]: a view never becomes an
 * operation. The second pass names the atomic classes and emits the operations. */

static void
value_free (Value *v)
{
  g_free (v->name);
  g_free (v->base);
  g_free (v->napkin);
  g_free (v->stem);
  g_clear_pointer (&v->cuts, g_array_unref);
  g_clear_pointer (&v->renames, g_array_unref);
  g_clear_pointer (&v->readers, g_ptr_array_unref);
  g_free (v);
}

/* The graph cannot be read at all (not the exporter's format, or references that do
 * not hold), at `v` when not NULL. The message may quote the graph's names: escaped for
 * a terminal and cut. */
static void
fatal_valist (G          *g,
              Value      *v,
              const char *format,
              va_list     args)
{
  g_autofree char *msg = g_strdup_vprintf (format, args);
  g_autofree char *shown = napkin_text_shown (msg, -1, 300);
  g_autofree char *place = v ? gi_where (g, v) : NULL;

  if (!g->failed)
    g_set_error (g->error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX, "%s%s%s%s%s", g->source ? g->source : "",
                 g->source ? ": " : "", place ? place : "", place ? ": " : "", shown);
  g->failed = TRUE;
}

static void G_GNUC_PRINTF (2, 3)
fatal (G          *g,
       const char *format,
       ...)
{
  va_list args;

  va_start (args, format);
  fatal_valist (g, NULL, format, args);
  va_end (args);
}

void
gi_fatal (G          *g,
          Value      *v,
          const char *format,
          ...)
{
  va_list args;

  va_start (args, format);
  fatal_valist (g, v, format, args);
  va_end (args);
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
char *
gi_where (G     *g,
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

static void
refusal (G          *g,
         Value      *v,
         const char *text)
{
  g_autofree char *place = NULL;
  g_autofree char *line = NULL;

  if (v != NULL)
    v->poisoned = TRUE;
  /* the first few are listed (report), the rest counted */
  if (g->n_refusals++ >= MAX_REFUSALS_LISTED)
    return;
  place = v ? gi_where (g, v) : NULL;
  /* the text may quote the graph's names: escaped for a terminal and cut */
  line = g_strdup_printf ("%s%s%s", place ? place : "", place ? ": " : "", text);
  g_ptr_array_add (g->refusals, napkin_text_shown (line, -1, 400));
}

/* Shapes or axes that do not fit together at v: recorded, and pass 1 goes on, so
 * that every problem of the graph is reported at once. */
void
gi_fail (G          *g,
         Value      *v,
         const char *format,
         ...)
{
  va_list args;
  g_autofree char *msg = NULL;

  if (v != NULL && v->poisoned)
    return;
  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  refusal (g, v, msg);
}

/* An operation outside the covered set, or a form of it that is: why, and what to
 * write instead (both optional; docs/import.md, "Covered operations"). */
void
gi_refuse (G          *g,
           Value      *v,
           const char *why,
           const char *instead)
{
  g_autofree char *text = NULL;

  if (v->poisoned)
    return;
  text = g_strdup_printf ("%s %s%s%s", v->base ? v->base : v->name,
                          why ? why : _("is outside the covered set"), instead ? "; " : "",
                          instead ? instead : "");
  refusal (g, v, text);
}

void
gi_note (G          *g,
         const char *format,
         ...)
{
  va_list args;
  char *msg;

  va_start (args, format);
  msg = g_strdup_vprintf (format, args);
  va_end (args);
  for (guint i = 0; i < g->notes->len; i++)
    if (g_str_equal (g->notes->pdata[i], msg))
      {
        g_free (msg);
        return;
      }
  g_ptr_array_add (g->notes, msg);
}

/* ---------------------------------------------------------------- JSON access */

json_object *
gi_member (json_object *obj,
           const char  *key)
{
  json_object *v = NULL;

  if (obj == NULL || !json_object_is_type (obj, json_type_object) || !json_object_object_get_ex (obj, key, &v))
    return NULL;
  return v;
}

const char *
gi_member_string (json_object *obj,
                  const char  *key)
{
  json_object *v = gi_member (obj, key);

  return v != NULL && json_object_is_type (v, json_type_string) ? json_object_get_string (v) : NULL;
}

const char *
gi_member_string_or (json_object *obj,
                     const char  *key,
                     const char  *fallback)
{
  const char *s = gi_member_string (obj, key);

  return s != NULL ? s : fallback;
}

/* Positional argument i, else keyword `key`; NULL when absent or JSON null. */
json_object *
gi_arg (Value      *v,
        guint       i,
        const char *key)
{
  json_object *a = NULL;

  if (v->args != NULL && i < json_object_array_length (v->args))
    a = json_object_array_get_idx (v->args, i);
  else if (key != NULL)
    a = gi_member (v->kwargs, key);
  return a;
}

/* The value a {"node": NAME} argument refers to, or NULL. */
Value *
gi_value (G           *g,
          json_object *ref)
{
  const char *name = gi_member_string (ref, "node");

  return name ? g_hash_table_lookup (g->by_name, name) : NULL;
}

Value *
gi_arg_value (G          *g,
              Value      *v,
              guint       i,
              const char *key)
{
  return gi_value (g, gi_arg (v, i, key));
}

/* The names on the left-hand side of a line of code ("q, k, v = …"), or NULL. */
static char **
lhs_names (const char *code)
{
  g_autoptr(GRegex) re = NULL;
  g_autoptr(GMatchInfo) m = NULL;
  g_autofree char *lhs = NULL;

  if (code == NULL)
    return NULL;
  re = g_regex_new ("^\\s*([A-Za-z_][A-Za-z0-9_]*(\\s*,\\s*[A-Za-z_][A-Za-z0-9_]*)*)\\s*,?\\s*=[^=]", 0, 0, NULL);
  if (re == NULL || !g_regex_match (re, code, 0, &m))
    return NULL;
  lhs = g_match_info_fetch (m, 1);
  return g_strsplit (lhs, ",", -1);
}

/* The name a line of code gives the index-th value it makes: `q, k, v = …` → "k" for
 * index 1; with index −1, `x1 = …` → "x1"; NULL otherwise. */
char *
gi_lhs_name (const char *code,
             gint64      index)
{
  g_auto(GStrv) names = lhs_names (code);

  if (names == NULL)
    return NULL;
  if (g_strv_length (names) == 1 && index < 0)
    return g_strstrip (g_strdup (names[0]));
  if (g_strv_length (names) == 1 || index < 0 || index >= g_strv_length (names))
    return NULL;
  return g_strstrip (g_strdup (names[index]));
}

/* How many names the line's left-hand side has (0 without one). */
gint64
gi_lhs_name_count (const char *code)
{
  g_auto(GStrv) names = lhs_names (code);

  return names != NULL ? g_strv_length (names) : 0;
}

int
gi_value_index (G     *g,
                Value *v)
{
  (void) g;
  /* a missing argument (an SDPA without its query, say) is no value: the caller
   * refuses it with the node's name */
  return v != NULL ? (int) v->index : -1;
}

gboolean
gi_arg_int (Value      *v,
            guint       i,
            const char *key,
            gint64      fallback,
            gint64     *out)
{
  json_object *a = gi_arg (v, i, key);

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

gboolean
gi_arg_double (Value      *v,
               guint       i,
               const char *key,
               double      fallback,
               double     *out)
{
  json_object *a = gi_arg (v, i, key);

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

gboolean
gi_arg_bool (Value      *v,
             guint       i,
             const char *key)
{
  json_object *a = gi_arg (v, i, key);

  return a != NULL && json_object_is_type (a, json_type_boolean) && json_object_get_boolean (a);
}

gboolean
gi_arg_is_number (Value *v,
                  guint  i)
{
  json_object *a = gi_arg (v, i, NULL);

  return a != NULL && (json_object_is_type (a, json_type_int) || json_object_is_type (a, json_type_double));
}

/* A torch dim, negative from the end, as an index. */
gboolean
gi_norm_dim (gint64  dim,
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
      Class *o = gi_cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

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

      if (v->emit == EMIT_SKIP || v->emit == EMIT_TUPLE || v->lazy || v->poisoned || (j < g->values->len) != user_input)
        continue;
      for (guint k = 0; k < v->n_dims; k++)
        gi_expand (g, v->dims[k], atoms);
      for (guint k = 0; v->renames != NULL && k < v->renames->len; k++)
        gi_expand (g, g_array_index (v->renames, Rename, k).to, atoms);
      if (v->emit == EMIT_ATTENTION)
        gi_expand (g, v->extra[1], atoms);
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
      gi_fatal (g, NULL, _("the graph's values have %u distinct dimensions; a diagram has at most %d axes"),
                roots->len, NAPKIN_MAX_AXES);
      return;
    }
  /* hinted ones first, by priority, so that a strong hint keeps its name */
  for (int prio = 3; prio >= -1; prio--)
    for (guint i = 0; i < roots->len; i++)
      {
        Class *c = gi_cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

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
        Class *c = gi_cls (g, GPOINTER_TO_INT (roots->pdata[i]) - 1);

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
  else if (json_object_is_type (a, json_type_object) && gi_member (a, "node") == NULL)
    {
      /* keyword arguments, or an argument that holds references */
      json_object_object_foreach (a, key, member)
        {
          (void) key;
          count_refs (g, user, member);
        }
    }
  else if (json_object_is_type (a, json_type_object))
    {
      const char *name = gi_member_string (a, "node");
      Value *v = name ? g_hash_table_lookup (g->by_name, name) : NULL;
      g_autofree char *shown = name ? napkin_text_quoted (name) : NULL;

      if (name != NULL && v == NULL && user == NULL)
        gi_fatal (g, NULL, _("the graph's outputs name %s, which is no node of the graph"), shown);
      else if (name != NULL && v == NULL)
        gi_fatal (g, user, _("it reads %s, which is no node of the graph"), shown);
      else if (v != NULL && user != NULL && v == user)
        gi_fatal (g, user, _("it reads itself (%s): a graph node reads only the nodes before it"), shown);
      else if (v != NULL && user != NULL && v->index > user->index)
        gi_fatal (g, user, _("it reads %s, which comes later in the graph: a graph node reads only the nodes "
                             "before it"), shown);
      else if (v)
        {
          v->users++;
          v->is_output |= user == NULL;
        }
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
  /* an in-place operation is its functional form (export has already made the data flow explicit) */
  {
    static const char *const in_place[] = { "add_", "sub_", "mul_", "div_", "masked_fill_", "detach_", "relu_",
                                            "silu_", "sigmoid_", "tanh_", "exp_", "neg_", "sqrt_", "rsqrt_",
                                            "pow_", "gelu_", "clamp_", "clamp_min_" };

    if (gi_in_list (*out, in_place, G_N_ELEMENTS (in_place)))
      (*out)[strlen (*out) - 1] = 0;
  }
  return *out;
}

static gboolean
read_values (G           *g,
             json_object *root)
{
  json_object *nodes = gi_member (root, "nodes");
  const char *file = gi_member_string (root, "source");

  if (nodes == NULL || !json_object_is_type (nodes, json_type_array))
    {
      fatal (g, _("the graph has no “nodes” list"));
      return FALSE;
    }
  /* Views and assertions make no operation, so a graph may hold more nodes than a
   * diagram holds operations; beyond this many it cannot fit, and is not read. */
  if (json_object_array_length (nodes) > MAX_GRAPH_NODES)
    {
      fatal (g, _("the graph has %zu nodes; Napkin reads at most %d (a diagram holds at most %d operations)"),
             json_object_array_length (nodes), MAX_GRAPH_NODES, NAPKIN_MAX_NODES);
      return FALSE;
    }
  for (guint i = 0; i < json_object_array_length (nodes); i++)
    {
      json_object *obj = json_object_array_get_idx (nodes, i);
      const char *name = gi_member_string (obj, "name"), *op = gi_member_string (obj, "op");
      Value *v;

      if (name == NULL || op == NULL)
        {
          fatal (g, _("node %u of the graph has no “name” or “op”"), i + 1);
          return FALSE;
        }
      if (g_str_equal (op, "output"))
        {
          g->outputs = gi_member (obj, "outputs");
          continue;
        }
      if (g_hash_table_contains (g->by_name, name))
        {
          g_autofree char *shown = napkin_text_quoted (name);

          fatal (g, _("two graph nodes are called %s"), shown);
          return FALSE;
        }
      v = g_new0 (Value, 1);
      v->index = g->values->len;
      v->name = g_strdup (name);
      v->obj = obj;
      v->src[0] = v->src[1] = v->src[2] = -1;
      v->extra[0] = v->extra[1] = -1;
      v->out_from = NONE;
      v->mask.tensor = -1;
      v->file = gi_member_string_or (obj, "file", file);
      v->code = gi_member_string (obj, "code");
      if (gi_member (obj, "line") && json_object_is_type (gi_member (obj, "line"), json_type_int))
        v->line = (guint) CLAMP (json_object_get_int64 (gi_member (obj, "line")), 0, G_MAXUINT);
      g_ptr_array_add (g->values, v);
      g_hash_table_insert (g->by_name, v->name, v);
      gi_parse_shape (g, v, gi_member (obj, "shape"));
      if ((v->dtype_name = gi_member_string (obj, "dtype")) != NULL)
        v->has_dtype = napkin_dtype_from_string (v->dtype_name, &v->dtype);
      if (g_strcmp0 (v->dtype_name, "bool") == 0)
        {
          /* a boolean tensor: a mask of kept positions, int8 in the diagram */
          v->is_bool = v->has_dtype = TRUE;
          v->dtype = NAPKIN_DTYPE_INT8;
        }
      else if (v->dtype_name != NULL && !v->has_dtype
               && (g_str_has_prefix (v->dtype_name, "int") || g_str_has_prefix (v->dtype_name, "uint")))
        {
          /* an integer tensor: the Annotated Transformer's 0/1 mask (mask == 0 dropped),
           * read as the boolean it is compared into; int8 in the diagram */
          v->is_bool = v->is_int = v->has_dtype = TRUE;
          v->dtype = NAPKIN_DTYPE_INT8;
        }
      if (g_str_equal (op, "placeholder"))
        {
          const char *role = gi_member_string (obj, "role");

          v->emit = EMIT_INPUT;
          v->base = g_strdup ("placeholder");
          v->role = g_strcmp0 (role, "parameter") == 0 ? 1 : g_strcmp0 (role, "buffer") == 0 ? 2 : 0;
          v->param = gi_member_string (obj, "target");
        }
      else if (g_str_equal (op, "call_function"))
        {
          v->target = gi_member_string (obj, "target");
          if (v->target == NULL)
            {
              gi_fatal (g, v, _("a call without a “target”"));
              return FALSE;
            }
          base_of (v->target, &v->base);
          v->args = gi_member (obj, "args");
          v->kwargs = gi_member (obj, "kwargs");
          if (v->args != NULL && !json_object_is_type (v->args, json_type_array))
            v->args = NULL;
        }
      else
        {
          v->base = g_strdup (op);
          v->target = op;
          v->emit = EMIT_SKIP;
          gi_refuse (g, v, _("is a graph node that is not a placeholder, a call or the output"),
                     _("export with torch.export (napkin_export.py)"));
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

/* The axes of an input: its "dims" names, else b, s, e guessed from the end. */
static void
input_dims (G     *g,
            Value *v)
{
  json_object *dims = gi_member (v->obj, "dims");

  if (!v->has_dtype)
    gi_refuse (g, v, _("is an input that is not a floating-point tensor"),
               _("pass it as a float tensor, or compute what reads it outside the module"));
  gi_fresh_dims (g, v);
  for (guint k = 0; k < v->n_dims; k++)
    {
      if (dims && json_object_is_type (dims, json_type_array) && k < json_object_array_length (dims)
          && json_object_is_type (json_object_array_get_idx (dims, k), json_type_string))
        gi_hint (g, v->dims[k], json_object_get_string (json_object_array_get_idx (dims, k)), 3);
      else if (v->role == 0 && v->n_dims >= 2)
        {
          static const char *const guess[] = { "b", "s", "e" };
          int from_end = (int) v->n_dims - 1 - (int) k;

          if (from_end <= 2)
            gi_hint (g, v->dims[k], guess[2 - from_end], 0);
        }
    }
}

static void
pass1 (G *g)
{
  gi_find_constants (g);
  gi_find_patterns (g);
  gi_sweep (g);
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      if (v->absorbed)
        continue;
      if (v->emit == EMIT_INPUT)
        {
          if (v->hoisted)
            v->stem = gi_lhs_name (v->code, -1);
          input_dims (g, v);
          continue;
        }
      if (v->emit == EMIT_SKIP && v->target == NULL)
        continue;
      if (!v->has_shape && g_strcmp0 (v->base, "native_layer_norm") == 0)
        {
          /* a tuple (output, mean, rstd): the output is shaped as the input */
          Value *a = gi_arg_value (g, v, 0, "input");

          if (a != NULL && a->has_shape)
            {
              v->n_dims = a->n_dims;
              memcpy (v->shape, a->shape, sizeof v->shape);
              v->has_shape = TRUE;
              v->has_dtype = a->has_dtype;
              v->dtype = a->dtype;
            }
        }
      if (!v->has_shape && !v->rewritten)
        {
          static const char *const tuples[] = { "split", "split_with_sizes", "chunk", "unbind" };

          if (!gi_in_list (v->base, tuples, G_N_ELEMENTS (tuples)))
            {
              static const char *const selections[] = { "topk", "sort", "max", "min", "kthvalue", "mode",
                                                        "median", "argsort" };

              /* a data-dependent selection (a router's top-k) has no place in a diagram: say
               * where it goes instead */
              gi_refuse (g, v, _("gives a result that is not one tensor"),
                         gi_in_list (v->base, selections, G_N_ELEMENTS (selections))
                         ? _("a data-dependent selection is not a diagram's operation: compute it outside "
                             "the module (a router's top-k before the experts) and pass what it selects in")
                         : _("return one tensor from it, or leave it outside the module"));
              v->emit = EMIT_SKIP;
              continue;
            }
        }
      gi_pass1_call (g, v);
      if (v->poisoned)
        v->emit = EMIT_SKIP;
      else if (v->emit != EMIT_SKIP && v->emit != EMIT_INPUT && v->emit != EMIT_TUPLE)
        gi_check_shape (g, v);
    }
  if (!g->failed)
    gi_find_lazy (g);
}

/* Every value's axes must be distinct: x + x.T on a square x would need one axis twice;
 * and at most NAPKIN_MAX_RANK, as the file format holds them. */
static void
check_distinct (G *g)
{
  for (guint j = 0; j < 2 * g->values->len; j++)
    {
      /* operations first: their source lines say where the axes met */
      Value *v = g->values->pdata[j % g->values->len];
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
      gboolean twice = FALSE;

      if (v->emit == EMIT_SKIP || v->emit == EMIT_TUPLE || v->poisoned
          || (j < g->values->len) == (v->emit == EMIT_INPUT))
        continue;
      for (guint k = 0; k < v->n_dims; k++)
        gi_expand (g, v->dims[k], atoms);
      if (atoms->len > NAPKIN_MAX_RANK)
        {
          g_autofree char *shown = napkin_text_quoted (v->name);

          /* one report: what follows from it has the same cause */
          gi_fail (g, v, _("%s would have %u axes (its dimensions split by reshapes); a tensor has at most %d"),
                   shown, atoms->len, NAPKIN_MAX_RANK);
          return;
        }
      for (guint a = 0; a < atoms->len; a++)
        for (guint b = a + 1; b < atoms->len; b++)
          twice |= gi_find (g, g_array_index (atoms, int, a)) == gi_find (g, g_array_index (atoms, int, b));
      /* a weight whose two axes met (x + W(x)): read again with its product's result
       * an axis of its own */
      if (twice && v->emit == EMIT_INPUT && v->role == 1 && g->square_found != NULL && v->param != NULL
          && (g->square == NULL || !g_hash_table_contains (g->square, v->param)))
        {
          g_hash_table_add (g->square_found, g_strdup (v->param));
          continue;
        }
      if (twice)
        {
          gi_refuse (g, v, _("would give a result with one axis twice (x + x.T of a square x)"),
                     _("the covered case is attention's scores (q @ k.T), whose keys get their own axis"));
          return;
        }
    }
}

static void
emit_outputs (G *g)
{
  guint n_out = g->outputs && json_object_is_type (g->outputs, json_type_array)
                  ? json_object_array_length (g->outputs) : 0;

  if (n_out == 0)
    {
      fatal (g, _("the graph has no outputs"));
      return;
    }
  for (guint i = 0; i < n_out; i++)
    {
      json_object *o = json_object_array_get_idx (g->outputs, i);
      const char *want = gi_member_string (o, "name");
      Value *v = gi_value (g, o);
      g_auto(GStrv) axes = NULL;
      g_autofree char *tensor = NULL;
      g_autofree char *stem = NULL;
      NapkinNode *n;

      if (v == NULL || v->napkin == NULL)
        {
          const char *name = gi_member_string (o, "node");
          g_autofree char *shown = napkin_text_quoted (name ? name : "");

          if (name == NULL)
            fatal (g, _("output %u names no graph node (expected {\"node\": NAME})"), i + 1);
          else if (v == NULL || !v->poisoned)
            gi_fatal (g, v, _("output %u, %s, is not a tensor the diagram computes (a view, an assertion or a "
                              "value left out)"), i + 1, shown);
          return;
        }
      axes = gi_atom_names (g, v);
      tensor = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, want ? want : v->name);
      {
        json_object *extra = json_object_new_object ();
        json_object *source = json_object_new_object ();

        /* the graph value it holds (docs/import.md, "Graph JSON") */
        json_object_object_add (source, "node", json_object_new_string (v->name));
        json_object_object_add (extra, "source", source);
        napkin_import_add_tensor (g->b, tensor, axes, v->dtype, extra);
      }
      n = napkin_node_new ("o", NAPKIN_OP_OUTPUT);
      n->tensor = g_strdup (tensor);
      n->label = g_strdup (tensor);
      stem = g_strconcat (tensor, "_out", NULL);
      gi_emit_node (g, v, n, stem, v->napkin, NULL);
    }
}

/* Every refusal in one error (docs/import.md, "Errors"): one line each, naming the
 * source line, the operation and what to write instead. */
static void
report (G *g)
{
  GString *s = g_string_new (NULL);
  guint i;

  g_string_append_printf (s, g->n_refusals == 1 ? _("%s%s%u operation cannot be imported (docs/import.md):")
                                                : _("%s%s%u operations cannot be imported (docs/import.md):"),
                          g->source ? g->source : "", g->source ? ": " : "", g->n_refusals);
  /* within a few kilobytes: the lines are cut, and the first ones listed */
  for (i = 0; i < g->refusals->len; i++)
    {
      const char *line = g->refusals->pdata[i];

      if (i > 0 && s->len + strlen (line) + 3 > MAX_REPORT_BYTES)
        break;
      g_string_append_printf (s, "\n  %s", line);
    }
  if (g->n_refusals > i)
    g_string_append_printf (s, _("\n  and %u more"), g->n_refusals - i);
  g_set_error_literal (g->error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_UNSUPPORTED, s->str);
  g_string_free (s, TRUE);
  g->failed = TRUE;
}

/* What the import did, for the diagram's description. */
static char *
description (G           *g,
             json_object *root)
{
  const char *module = gi_member_string (root, "module");
  GString *s = g_string_new (NULL);

  g_string_append_printf (s, _("Imported from the PyTorch graph of %s%s%s (docs/import.md)."),
                          module ? module : "a module", gi_member_string (root, "source") ? " in " : "",
                          gi_member_string_or (root, "source", ""));
  if (g->n_dropouts > 0)
    g_string_append_printf (s, g->n_dropouts == 1 ? _(" Left out: %u dropout in eval mode (an identity).")
                                                  : _(" Left out: %u dropouts in eval mode (identities)."),
                            g->n_dropouts);
  if (g->n_checks > 0)
    g_string_append (s, _(" The graph's shape assertions are left out."));
  for (guint i = 0; i < g->notes->len; i++)
    g_string_append_printf (s, " %s", (char *) g->notes->pdata[i]);
  return g_string_free (s, FALSE);
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
  format = gi_member_string (root, "format");
  if (g_strcmp0 (format, "napkin-graph") != 0)
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s%sformat: expected “napkin-graph” (the output of napkin_export.py)%s"),
                   source ? source : "", source ? ": " : "",
                   g_strcmp0 (format, "napkin") == 0 ? "; this is a diagram already: open it" : "");
      json_object_put (root);
      return NULL;
    }
  if (gi_member (root, "version") == NULL || !json_object_is_type (gi_member (root, "version"), json_type_int)
      || json_object_get_int64 (gi_member (root, "version")) != 1)
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s%sversion: this Napkin reads graph version 1"), source ? source : "", source ? ": " : "");
      json_object_put (root);
      return NULL;
    }
  return root;
}

/* The args [eq, [{"node": a}, {"node": b}]] of a two-operand einsum. */
static json_object *
einsum_args (const char *eq,
             const char *a,
             const char *b)
{
  json_object *args = json_object_new_array (), *ops = json_object_new_array ();
  json_object *ra = json_object_new_object (), *rb = json_object_new_object ();

  json_object_object_add (ra, "node", json_object_new_string (a));
  json_object_object_add (rb, "node", json_object_new_string (b));
  json_object_array_add (ops, ra);
  json_object_array_add (ops, rb);
  json_object_array_add (args, json_object_new_string (eq));
  json_object_array_add (args, ops);
  return args;
}

/* A node {"name", "op", "target", "args": [eq, [a, b]], "kwargs": {}, "shape", "dtype",
 * "file", "line", "code"} of einsum `eq` over the nodes named a and b, the others of
 * `like` copied. */
static json_object *
einsum_pair_node (json_object  *like,
                  const char   *name,
                  const char   *eq,
                  const char   *a,
                  const char   *b,
                  const gint64 *shape,
                  guint         rank)
{
  static const char *const copied[] = { "op", "target", "dtype", "file", "line", "code" };
  json_object *node = json_object_new_object (), *dims = json_object_new_array ();

  json_object_object_add (node, "name", json_object_new_string (name));
  for (guint i = 0; i < G_N_ELEMENTS (copied); i++)
    if (gi_member (like, copied[i]) != NULL)
      json_object_object_add (node, copied[i], json_object_get (gi_member (like, copied[i])));
  json_object_object_add (node, "args", einsum_args (eq, a, b));
  json_object_object_add (node, "kwargs", json_object_new_object ());
  for (guint i = 0; i < rank; i++)
    json_object_array_add (dims, json_object_new_int64 (shape[i]));
  json_object_object_add (node, "shape", dims);
  return node;
}

/* The sizes of the letters of `ins` (n operand sides) from the shapes of the nodes `ops`
 * names; FALSE where an operand is not a node with a shape of its letters' length. */
static gboolean
einsum_sizes (char * const *ins,
              json_object  *ops,
              guint         n,
              GHashTable   *shape_of,
              gint64       *size)
{
  for (guint k = 0; k < n; k++)
    {
      const char *src = gi_member_string (json_object_array_get_idx (ops, k), "node");
      json_object *sh = src ? g_hash_table_lookup (shape_of, src) : NULL;
      guint r = 0;

      if (sh == NULL)
        return FALSE;
      for (const char *c = ins[k]; *c; c++)
        if (g_ascii_isalpha (*c))
          {
            if (r >= json_object_array_length (sh))
              return FALSE;
            size[(unsigned char) *c & 127] = json_object_get_int64 (json_object_array_get_idx (sh, r++));
          }
      if (r != json_object_array_length (sh))
        return FALSE;
    }
  return TRUE;
}

/* The steps of einsum node `obj` (sides `ins` → `result`, operands `ops`) appended to
 * `out`: each step keeps the letters of its two operands that the result or a later
 * operand reads, the last one is `obj` itself with its name, shape and uses. */
static void
einsum_chain (json_object  *obj,
              char * const *ins,
              const char   *result,
              json_object  *ops,
              guint         n,
              const gint64 *size,
              GHashTable   *names,
              json_object  *out)
{
  const char *name = gi_member_string (obj, "name");
  g_autofree char *acc = g_strdup (ins[0]);
  g_autofree char *acc_name = g_strdup (gi_member_string (json_object_array_get_idx (ops, 0), "node"));
  json_object *last = json_object_new_object ();
  g_autofree char *eq = NULL;

  for (guint k = 1; k + 1 < n; k++)
    {
      const char *b = gi_member_string (json_object_array_get_idx (ops, k), "node");
      g_autofree char *both = g_strconcat (acc, ins[k], NULL);
      g_autofree char *pair = NULL;
      GString *keep = g_string_new (NULL);
      char *step = g_strdup_printf ("%s_step%u", name, k);
      gint64 shape[128];
      guint rank = 0;

      for (const char *c = both; *c; c++)
        {
          gboolean later = strchr (result, *c) != NULL;

          if (!g_ascii_isalpha (*c) || strchr (keep->str, *c) != NULL)
            continue;
          for (guint j = k + 1; j < n && !later; j++)
            later = strchr (ins[j], *c) != NULL;
          if (later)
            {
              g_string_append_c (keep, *c);
              shape[rank++] = size[(unsigned char) *c & 127];
            }
        }
      /* a name no node has */
      while (g_hash_table_contains (names, step))
        {
          char *t = g_strconcat (step, "_", NULL);

          g_free (step);
          step = t;
        }
      g_hash_table_add (names, g_strdup (step));
      pair = g_strdup_printf ("%s,%s->%s", acc, ins[k], keep->str);
      json_object_array_add (out, einsum_pair_node (obj, step, pair, acc_name, b, shape, rank));
      g_free (acc);
      acc = g_string_free (keep, FALSE);
      g_free (acc_name);
      acc_name = step;
    }
  json_object_object_foreach (obj, key, val)
    if (!g_str_equal (key, "args") && !g_str_equal (key, "kwargs"))
      json_object_object_add (last, key, json_object_get (val));
  eq = g_strdup_printf ("%s,%s->%s", acc, ins[n - 1], result);
  json_object_object_add (last, "args",
                          einsum_args (eq, acc_name, gi_member_string (json_object_array_get_idx (ops, n - 1), "node")));
  json_object_object_add (last, "kwargs", json_object_new_object ());
  json_object_array_add (out, last);
}

/* An einsum of three or more operands as a chain of two-operand ones, left to right
 * (torch's own order without a path; einsum_chain): linear attention's
 * einsum("nlhd,nhmd,nlh->nlhm", Q, KV, Z) is Q·KV over d, then times Z. The steps are
 * graph nodes NAME_step1, NAME_step2, … (a name no node has), the last one NAME itself;
 * `root`'s "nodes" is replaced where anything was split. Operands written with "..."
 * are left as they are (refused later with a remedy). */
static void
split_einsums (json_object *root)
{
  json_object *nodes = gi_member (root, "nodes");
  json_object *out = NULL;
  g_autoptr(GHashTable) shape_of = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) names = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);

  if (nodes == NULL || !json_object_is_type (nodes, json_type_array))
    return;
  for (guint i = 0; i < json_object_array_length (nodes); i++)
    if (gi_member_string (json_object_array_get_idx (nodes, i), "name") != NULL)
      g_hash_table_add (names, g_strdup (gi_member_string (json_object_array_get_idx (nodes, i), "name")));
  for (guint i = 0; i < json_object_array_length (nodes); i++)
    {
      json_object *obj = json_object_array_get_idx (nodes, i);
      const char *name = gi_member_string (obj, "name"), *target = gi_member_string (obj, "target");
      json_object *args = gi_member (obj, "args"), *ops = NULL, *shape;
      const char *eq = NULL;
      g_auto(GStrv) sides = NULL;
      g_auto(GStrv) ins = NULL;
      guint n = 0;
      gint64 size[128] = { 0 };
      gboolean split;

      if (name != NULL && (shape = gi_member (obj, "shape")) != NULL && json_object_is_type (shape, json_type_array))
        g_hash_table_insert (shape_of, (gpointer) name, shape);
      split = name != NULL && target != NULL
              && (g_str_has_prefix (target, "aten.einsum") || g_str_has_prefix (target, "torch.ops.aten.einsum"))
              && args != NULL && json_object_is_type (args, json_type_array) && json_object_array_length (args) >= 2
              && json_object_is_type (json_object_array_get_idx (args, 0), json_type_string)
              && json_object_is_type ((ops = json_object_array_get_idx (args, 1)), json_type_array)
              && (n = json_object_array_length (ops)) >= 3
              && strstr ((eq = json_object_get_string (json_object_array_get_idx (args, 0))), "...") == NULL
              && (sides = g_strsplit (eq, "->", 2))[1] != NULL
              && g_strv_length ((ins = g_strsplit (sides[0], ",", -1))) == n
              && einsum_sizes (ins, ops, n, shape_of, size);
      if (split && out == NULL)
        {
          out = json_object_new_array ();
          for (guint j = 0; j < i; j++)
            json_object_array_add (out, json_object_get (json_object_array_get_idx (nodes, j)));
        }
      if (split)
        einsum_chain (obj, ins, sides[1], ops, n, size, names, out);
      else if (out != NULL)
        json_object_array_add (out, json_object_get (obj));
    }
  if (out != NULL)
    json_object_object_add (root, "nodes", out);
}

/* Both passes, then the outputs, the title and the description. */
static void
build (G           *g,
       json_object *root)
{
  split_einsums (root);
  if (read_values (g, root))
    pass1 (g);
  if (!g->failed)
    check_distinct (g);
  if (!g->failed && g->n_refusals > 0)
    report (g);
  if (!g->failed)
    {
      name_axes (g);
      if (!g->failed)
        gi_emit_inputs (g);
      for (guint i = 0; i < g->values->len && !g->failed; i++)
        gi_pass2_value (g, g->values->pdata[i]);
      /* a value refused here leaves the outputs after it uncomputed: its reason first */
      if (!g->failed && g->n_refusals > 0)
        report (g);
      if (!g->failed)
        emit_outputs (g);
    }
  if (!g->failed && g->n_refusals > 0)
    report (g);
  if (!g->failed)
    {
      const char *module = gi_member_string (root, "module");
      g_autofree char *desc = description (g, root);

      napkin_diagram_set_title (g->d, module ? module : "Imported graph");
      napkin_diagram_set_description (g->d, desc);
    }
}

static NapkinDiagram *import_graph_once (const char *json_text, gsize length, const char *source,
                                         GHashTable *square, GHashTable *square_found, GError **error);

NapkinDiagram *
napkin_import_graph (const char  *json_text,
                     gsize        length,
                     const char  *source,
                     GError     **error)
{
  g_autoptr(GHashTable) found = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  g_autoptr(GError) first_error = NULL;
  NapkinDiagram *d = import_graph_once (json_text, length, source, NULL, found, &first_error);

  /* square weights whose two axes the residual made one: read again, their products'
   * results on axes of their own */
  if (g_hash_table_size (found) > 0)
    {
      g_clear_object (&d);
      g_clear_error (&first_error);
      return import_graph_once (json_text, length, source, found, NULL, error);
    }
  if (first_error != NULL)
    g_propagate_error (error, g_steal_pointer (&first_error));
  return d;
}

static NapkinDiagram *
import_graph_once (const char  *json_text,
                   gsize        length,
                   const char  *source,
                   GHashTable  *square,
                   GHashTable  *square_found,
                   GError     **error)
{
  g_autoptr(NapkinDiagram) d = NULL;
  g_autoptr(GArray) classes = g_array_new (FALSE, TRUE, sizeof (Class));
  g_autoptr(GPtrArray) values = g_ptr_array_new_with_free_func ((GDestroyNotify) value_free);
  g_autoptr(GHashTable) by_name = g_hash_table_new (g_str_hash, g_str_equal);
  g_autoptr(GHashTable) rotations = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) rotation_inputs = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) variants = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) refusals = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) notes = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *shown_source = source ? napkin_text_shown (source, -1, 200) : NULL;
  NapkinImportBuilder b;
  json_object *root;
  G g = {
    .source = shown_source,
    .classes = classes,
    .values = values,
    .by_name = by_name,
    .error = error,
    .refusals = refusals,
    .notes = notes,
    .b = &b,
    .rotations = rotations,
    .rotation_inputs = rotation_inputs,
    .variants = variants,
    .square = square,
    .square_found = square_found,
  };

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
