/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "napkin-import-graph-private.h"
#include "napkin-describe.h"
#include "napkin-validate.h"

/* Pass 2 of the graph importer: the diagram's operations (docs/import.md). */

/* ---------------------------------------------------------------- pass 2 */

char **
gi_atom_names (G     *g,
               Value *v)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
  char **names;

  for (guint i = 0; i < v->n_dims; i++)
    gi_expand (g, v->dims[i], atoms);
  names = g_new0 (char *, atoms->len + 1);
  for (guint i = 0; i < atoms->len; i++)
    names[i] = g_strdup (gi_cls (g, gi_find (g, g_array_index (atoms, int, i)))->axis);
  return names;
}

const char *
gi_axis_of_dim (G     *g,
                Value *v,
                int    dim)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));

  gi_expand (g, v->dims[dim], atoms);
  if (atoms->len != 1)
    {
      gi_fail (g, v, _("the operation runs over a dimension that is %u axes"), atoms->len);
      return NULL;
    }
  return gi_cls (g, g_array_index (atoms, int, 0))->axis;
}

Value *
gi_src (G     *g,
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
      Value *w = gi_src (g, v, 1);

      if (w && w->param && g_str_has_suffix (w->param, ".weight"))
        return g_strndup (w->param, strlen (w->param) - strlen (".weight"));
    }
  return g_strdup (v->name);
}

/* Adds a node whose inputs are the given node ids; fixes its element type to the
 * graph's when the format would infer another. */
const char *
gi_emit_node (G           *g,
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
      gi_fatal (g, v, "%s", why);
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

NapkinNode *
gi_map_node (NapkinMapFn fn,
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
char **
gi_stored_order (G          *g,
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
const char *
gi_rename_axis (G          *g,
                Value      *v,
                const char *in,
                char      **axes,
                const char *from,
                const char *to,
                const char *stem)
{
  NapkinNode *n = napkin_node_new ("r", NAPKIN_OP_REARRANGE);

  n->out = gi_stored_order (g, in, axes);
  for (guint i = 0; n->out[i]; i++)
    if (g_str_equal (n->out[i], from))
      {
        g_free (n->out[i]);
        n->out[i] = g_strdup (to);
      }
  n->label = g_strdup_printf ("%s→%s", from, to);
  return gi_emit_node (g, v, n, stem, in, NULL);
}

/* ---------------------------------------------------------------- parts and renames */

/* The cuts that touch v's atoms, as a key ("" for none). */
static char *
cuts_key (G      *g,
          Value  *v,
          GArray *cuts)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
  GString *key = g_string_new (NULL);

  for (guint i = 0; i < v->n_dims; i++)
    gi_expand (g, v->dims[i], atoms);
  for (guint c = 0; cuts != NULL && c < cuts->len; c++)
    {
      Restrict *r = &g_array_index (cuts, Restrict, c);

      for (guint i = 0; i < atoms->len; i++)
        if (gi_find (g, g_array_index (atoms, int, i)) == gi_find (g, r->atom))
          g_string_append_printf (key, "|%d:%" G_GINT64_FORMAT ":%" G_GINT64_FORMAT, gi_find (g, r->atom), r->start,
                                  r->end);
    }
  return g_string_free (key, FALSE);
}

static Restrict *
cut_of (G      *g,
        GArray *cuts,
        int     atom)
{
  for (guint c = 0; cuts != NULL && c < cuts->len; c++)
    if (gi_find (g, g_array_index (cuts, Restrict, c).atom) == gi_find (g, atom))
      return &g_array_index (cuts, Restrict, c);
  return NULL;
}

/* v's axes with the cut atoms dropped or replaced by their part's. */
static char **
cut_names (G      *g,
           Value  *v,
           GArray *cuts)
{
  g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
  GPtrArray *names = g_ptr_array_new ();

  for (guint i = 0; i < v->n_dims; i++)
    gi_expand (g, v->dims[i], atoms);
  for (guint i = 0; i < atoms->len; i++)
    {
      Restrict *r = cut_of (g, cuts, g_array_index (atoms, int, i));

      if (r == NULL)
        g_ptr_array_add (names, g_strdup (gi_cls (g, gi_find (g, g_array_index (atoms, int, i)))->axis));
      else if (r->repl != NONE)
        {
          g_autoptr(GArray) sub = g_array_new (FALSE, FALSE, sizeof (int));

          gi_expand (g, r->repl, sub);
          for (guint k = 0; k < sub->len; k++)
            {
              const char *axis = gi_cls (g, gi_find (g, g_array_index (sub, int, k)))->axis;

              /* a part taken of a part (GPT-NeoX's rotary on the first dims of each head
               * of a fused projection): the parts of parts are not covered */
              if (cut_of (g, cuts, g_array_index (sub, int, k)) != NULL || axis == NULL)
                {
                  if (!v->poisoned)
                    gi_refuse (g, v, _("is taken in parts of its parts (a partial rotary: x[..., :r] of a head split "
                                       "from a fused projection), which is not covered"),
                               _("rotate whole heads, or pass the rotated and the passed-through parts as inputs"));
                  v->poisoned = TRUE;
                  axis = "?";
                }
              g_ptr_array_add (names, g_strdup (axis));
            }
        }
    }
  g_ptr_array_add (names, NULL);
  return (char **) g_ptr_array_free (names, FALSE);
}

/* "_q" for the parts' names (the split's left-hand side), "" without cuts. */
static char *
cuts_tag (G      *g,
          Value  *v,
          GArray *cuts)
{
  g_autofree char *key = cuts_key (g, v, cuts);
  GString *tag = g_string_new (NULL);

  for (guint c = 0; key[0] && cuts != NULL && c < cuts->len; c++)
    {
      Restrict *r = &g_array_index (cuts, Restrict, c);
      g_autofree char *one = g_strdup_printf ("|%d:", gi_find (g, r->atom));

      g_autofree char *part = r->tag ? g_strconcat ("_", r->tag, NULL)
                                     : g_strdup_printf ("_%" G_GINT64_FORMAT, r->start);

      if (strstr (key, one) != NULL && strstr (tag->str, part) == NULL)
        g_string_append (tag, part);
    }
  return g_string_free (tag, FALSE);
}

static const char *value_node (G *g, Value *v, GArray *cuts);

/* The [start, end) of each dimension of a placeholder that its cuts keep, as the
 * tensor's "source" (docs/import.md, "Parts of a projection"). */
static json_object *
input_source (G      *g,
              Value  *v,
              GArray *cuts)
{
  json_object *src = json_object_new_object ();
  json_object *slices = json_object_new_array ();

  json_object_object_add (src, "node", json_object_new_string (v->name));
  for (guint k = 0; k < v->n_dims; k++)
    {
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
      gint64 lo[MAX_DIMS * 4], hi[MAX_DIMS * 4], size[MAX_DIMS * 4], start = 0, inner = 1;
      gboolean cut = FALSE, box = TRUE;
      guint n, p = 0;

      gi_expand (g, v->dims[k], atoms);
      n = MIN (atoms->len, G_N_ELEMENTS (lo));
      for (guint i = 0; i < n; i++)
        {
          int atom = g_array_index (atoms, int, i);
          Restrict *r = cut_of (g, cuts, atom);

          size[i] = gi_cls (g, gi_find (g, atom))->size;
          lo[i] = r ? r->start : 0;
          hi[i] = r ? r->end : size[i];
          cut |= r != NULL;
        }
      if (!cut)
        continue;
      /* a block: outer atoms at one index, one atom over a range, the inner ones whole */
      while (p + 1 < n && hi[p] - lo[p] == 1)
        p++;
      for (guint i = p + 1; i < n; i++)
        box &= hi[i] - lo[i] == size[i];
      if (atoms->len > n)
        {
          json_object_put (src);
          json_object_put (slices);
          return NULL;
        }
      if (!box)
        {
          /* not one block (BLOOM's and GPT-NeoX's fused projection viewed [h, 3, d] and
           * indexed in the middle): the dimension viewed as its atoms, a box of that */
          json_object *s = json_object_new_object ();
          json_object *view = json_object_new_array (), *los = json_object_new_array ();
          json_object *his = json_object_new_array ();

          for (guint i = 0; i < n; i++)
            {
              json_object_array_add (view, json_object_new_int64 (size[i]));
              json_object_array_add (los, json_object_new_int64 (lo[i]));
              json_object_array_add (his, json_object_new_int64 (hi[i]));
            }
          json_object_object_add (s, "dim", json_object_new_int (k));
          json_object_object_add (s, "view", view);
          json_object_object_add (s, "lo", los);
          json_object_object_add (s, "hi", his);
          json_object_array_add (slices, s);
          continue;
        }
      for (guint i = n; i > 0; i--)
        {
          start += lo[i - 1] * inner;
          if (i - 1 == p)
            {
              json_object *s = json_object_new_object ();

              json_object_object_add (s, "dim", json_object_new_int (k));
              json_object_object_add (s, "start", json_object_new_int64 (0));
              json_object_object_add (s, "end", json_object_new_int64 ((hi[p] - lo[p]) * inner));
              json_object_array_add (slices, s);
            }
          inner *= size[i - 1];
        }
      /* the block's start, now that every atom is counted */
      {
        json_object *s = json_object_array_get_idx (slices, json_object_array_length (slices) - 1);
        gint64 len = json_object_get_int64 (json_object_object_get (s, "end"));

        json_object_object_add (s, "start", json_object_new_int64 (start));
        json_object_object_add (s, "end", json_object_new_int64 (start + len));
      }
    }
  if (json_object_array_length (slices) > 0)
    json_object_object_add (src, "slices", slices);
  else
    json_object_put (slices);
  return src;
}

/* An input of the diagram for placeholder v (or the part of it the cuts keep). */
static const char *
emit_input (G      *g,
            Value  *v,
            GArray *cuts)
{
  g_auto(GStrv) axes = cut_names (g, v, cuts);
  g_autofree char *tag = cuts_tag (g, v, cuts);
  g_autofree char *stem = g_strconcat (v->stem ? v->stem : v->param ? v->param : v->name, tag, NULL);
  json_object *extra = json_object_new_object ();
  json_object *source = input_source (g, v, cuts);
  char *tensor;
  NapkinNode *n;

  if (source == NULL)
    {
      json_object_put (extra);
      gi_fail (g, v, _("a part of this tensor that is not one block of it"));
      return NULL;
    }
  json_object_object_add (extra, "source", source);
  g_strdelimit (stem, ".", '_');
  tensor = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, stem);
  if (v->hoisted)
    {
      g_autofree char *place = gi_where (g, v);

      gi_note (g, _("“%s” is computed from parameters alone at %s: an input of the diagram."), tensor, place);
    }
  else if (tag[0])
    gi_note (g, _("%s is used in parts: each is its own input (its “source” says which rows or columns)."),
             v->param ? v->param : v->name);
  napkin_import_add_tensor (g->b, tensor, axes, v->is_bool ? NAPKIN_DTYPE_INT8 : v->dtype, extra);
  n = napkin_node_new ("i", NAPKIN_OP_INPUT);
  n->tensor = tensor;
  n->label = g_strdup (tensor);
  return gi_emit_node (g, v, n, tensor, NULL, NULL);
}

/* A reshape that puts the axes `to` where the axes `from` are (each comma-separated;
 * `from` neighbours in `in`'s stored order, outermost first): several merged into one,
 * or one split into several; NULL (and v fails) where `from` are not neighbours. */
static const char *
merge_axes (G          *g,
            Value      *v,
            const char *in,
            char      **axes,
            const char *from,
            const char *to,
            const char *stem)
{
  g_auto(GStrv) names = g_strsplit (from, ",", -1);
  g_auto(GStrv) into = g_strsplit (to, ",", -1);
  g_auto(GStrv) order = gi_stored_order (g, in, axes);
  guint n = g_strv_length (names), at = 0, len = g_strv_length (order);
  GPtrArray *out = g_ptr_array_new ();
  NapkinNode *node;

  while (at < len && !g_str_equal (order[at], names[0]))
    at++;
  for (guint k = 0; k < n; k++)
    if (at + k >= len || !g_str_equal (order[at + k], names[k]))
      {
        g_ptr_array_free (out, TRUE);
        gi_fail (g, v, _("the positions %s are read as one key axis but are not stored together"), from);
        return NULL;
      }
  for (guint k = 0; k < len; k++)
    if (k == at)
      for (guint j = 0; into[j] != NULL; j++)
        g_ptr_array_add (out, g_strdup (into[j]));
    else if (k < at || k >= at + n)
      g_ptr_array_add (out, g_strdup (order[k]));
  g_ptr_array_add (out, NULL);
  node = napkin_node_new ("r", NAPKIN_OP_REARRANGE);
  node->out = (char **) g_ptr_array_free (out, FALSE);
  node->label = g_strdup_printf ("%s→%s", from, to);
  return gi_emit_node (g, v, node, stem, in, NULL);
}

/* Node id of operand i of v (under the cuts), renamed where v reads a class as the
 * key axis. */
static const char *
operand_node (G      *g,
              Value  *v,
              guint   i,
              GArray *cuts)
{
  Value *a = gi_src (g, v, i);
  const char *id;

  if (a == NULL)
    return NULL;
  id = value_node (g, a, cuts);
  for (guint r = 0; id != NULL && v->renames != NULL && r < v->renames->len; r++)
    {
      Rename *rn = &g_array_index (v->renames, Rename, r);
      const char *from = gi_cls (g, gi_find (g, rn->from))->axis, *to = gi_cls (g, gi_find (g, rn->to))->axis;
      g_autoptr(GArray) atoms = g_array_new (FALSE, FALSE, sizeof (int));
      g_autoptr(GString) froms = g_string_new (NULL), tos = g_string_new (NULL);
      g_autofree char *key = NULL;
      const char *have;

      if (rn->operand != i)
        continue;
      /* a class of several axes (h and w of flattened positions) merges into the key
       * axis, and the key axis splits back into them (P·V reads the keys as V's positions) */
      gi_expand (g, rn->from, atoms);
      for (guint k = 0; k < atoms->len; k++)
        g_string_append_printf (froms, "%s%s", k ? "," : "", gi_cls (g, gi_find (g, g_array_index (atoms, int, k)))->axis);
      g_array_set_size (atoms, 0);
      gi_expand (g, rn->to, atoms);
      for (guint k = 0; k < atoms->len; k++)
        g_string_append_printf (tos, "%s%s", k ? "," : "", gi_cls (g, gi_find (g, g_array_index (atoms, int, k)))->axis);
      if (from == NULL)
        from = froms->str;
      if (to == NULL)
        to = tos->str;
      key = g_strdup_printf ("rename|%s|%s|%s", id, from, to);
      if ((have = g_hash_table_lookup (g->variants, key)) == NULL)
        {
          g_auto(GStrv) axes = gi_atom_names (g, a);
          g_autofree char *stem = v->emit == EMIT_ATTENTION ? g_strdup (i == 1 ? "k_pos" : "v_pos")
                                                             : g_strconcat (a->name, "_pos", NULL);

          if (strchr (froms->str, ',') != NULL || strchr (tos->str, ',') != NULL)
            have = merge_axes (g, v, id, axes, froms->str, tos->str, stem);
          else
            have = gi_rename_axis (g, v, id, axes, from, to, stem);
          if (have == NULL)
            return NULL;
          g_hash_table_insert (g->variants, g_steal_pointer (&key), g_strdup (have));
        }
      id = have;
    }
  return id;
}

const char *
gi_operand (G     *g,
            Value *v,
            guint  i)
{
  return operand_node (g, v, i, NULL);
}

/* ---------------------------------------------------------------- operations */

/* Room for one more axis in a diagram Napkin loads, else the error at `v`. */
static gboolean
room_for_axis (G     *g,
               Value *v)
{
  g_autofree char *why = napkin_import_over_limit (g->b, NAPKIN_ITEM_AXIS, 1);

  if (why != NULL)
    gi_fatal (g, v, "%s", why);
  return why == NULL;
}

static const char *cast_to (G *g, Value *v, const char *in);

static void
emit_rotate (G     *g,
             Value *v)
{
  Value *x = gi_src (g, v, 0);
  const char *ax = gi_axis_of_dim (g, x, v->axis_dim);
  g_auto(GStrv) axes = gi_atom_names (g, x);
  const char *tensor, *in, *c;
  g_autofree char *ax2 = NULL;
  g_auto(GStrv) out = NULL;
  const char *rin = NULL;
  NapkinNode *n;

  if (ax == NULL)
    return;
  ax2 = g_strconcat (ax, "_rot", NULL);
  tensor = g_hash_table_lookup (g->rotations, ax);
  if (tensor == NULL)
    {
      g_autofree char *name = g_strconcat ("rotate_half_", ax, NULL);
      char *t;
      char *raxes[] = { (char *) ax, ax2, NULL };
      json_object *extra;
      NapkinNode *input;

      if (napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax2) < 0 && !room_for_axis (g, v))
        return;
      t = napkin_import_fresh_name (g->b, NAPKIN_ITEM_TENSOR, name);
      extra = json_object_new_object ();
      input = napkin_node_new ("r", NAPKIN_OP_INPUT);
      if (napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax2) < 0)
        napkin_import_add_axis (g->b, ax2,
                                napkin_diagram_axis (g->d, napkin_import_find (g->b, NAPKIN_ITEM_AXIS, ax))->size);
      json_object_object_add (extra, "constant", json_object_new_string ("rotate_half"));
      napkin_import_add_tensor (g->b, t, raxes, x->dtype, extra);
      input->tensor = g_strdup (t);
      input->label = g_strdup_printf ("rotate_half(%s)", ax);
      g_hash_table_insert (g->rotations, g_strdup (ax), t);
      tensor = t;
      g_hash_table_insert (g->rotation_inputs, g_strdup (t), g_strdup (gi_emit_node (g, v, input, t, NULL, NULL)));
    }
  /* the input node of this matrix */
  rin = g_hash_table_lookup (g->rotation_inputs, tensor);
  if (rin == NULL || g->failed)
    return;
  in = gi_operand (g, v, 0);
  n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
  n->out = gi_stored_order (g, in, axes);
  for (guint i = 0; n->out[i]; i++)
    if (g_str_equal (n->out[i], ax))
      {
        g_free (n->out[i]);
        n->out[i] = g_strdup (ax2);
      }
  n->label = g_strdup ("rotate_half");
  /* the diagram owns n once emitted, and replaces it where the result's type is cast */
  out = g_strdupv (n->out);
  c = gi_emit_node (g, v, n, v->name, in, rin);
  v->napkin = g_strdup (gi_rename_axis (g, v, c, out, ax2, ax, "unrotate"));
}

static NapkinNode *causal_node (const char *rows, const char *axis, gint64 offset);

/* The mask node of what a tril, or a tril and a triu anded, keep over rows × axis. */
static NapkinNode *
kept_node (const char     *rows,
           const char     *axis,
           const MaskInfo *m)
{
  NapkinNode *n = causal_node (rows, axis, m->kind == MASK_TRIL || m->kind == MASK_BAND ? m->offset : 0);

  if (m->kind == MASK_BAND)
    {
      /* i + lower ≤ j ≤ i + offset: a window left of the diagonal δ = i + offset */
      n->mask = NAPKIN_MASK_WINDOW;
      n->left = m->offset - m->lower;
      n->right = 0;
      g_free (n->label);
      n->label = g_strdup ("window");
    }
  return n;
}

static NapkinNode *
causal_node (const char *rows,
             const char *axis,
             gint64      offset)
{
  NapkinNode *n = napkin_node_new ("m", NAPKIN_OP_MASK);

  n->mask = NAPKIN_MASK_CAUSAL;
  n->rows = g_strdup (rows);
  n->axis = g_strdup (axis);
  n->offset = offset;
  n->label = g_strdup ("causal");
  return n;
}

/* scaled_dot_product_attention: Q·Kᵀ → scale → [causal mask | tensor mask | + bias]
 * → softmax over the key axis → P·V (docs/import.md, "What attention becomes"). */
static void
emit_attention (G     *g,
                Value *v)
{
  Value *q = gi_src (g, v, 0);
  Value *mask = v->extra[0] >= 0 ? g->values->pdata[v->extra[0]] : NULL;
  guint nb = q->n_dims - 3;
  const char *qaxis = gi_axis_of_dim (g, q, nb + 1);
  const char *key = gi_cls (g, gi_find (g, v->extra[1]))->axis;
  g_autoptr(GPtrArray) sout = g_ptr_array_new ();
  g_auto(GStrv) oaxes = gi_atom_names (g, v);
  const char *kin = gi_operand (g, v, 1), *vin = gi_operand (g, v, 2), *cur;
  NapkinNode *n;

  if (qaxis == NULL || kin == NULL || vin == NULL)
    return;
  /* the graph's shapes may tie the key axis to one the result keeps */
  if (key == NULL || g_strv_contains ((const char *const *) oaxes, key))
    {
      gi_fail (g, v, _("the key axis %s of the attention is also an axis of its result: the keys must be an "
                       "axis of their own"), key ? key : "?");
      return;
    }
  /* scores: the output's axes up to the query's, then the key's */
  for (guint i = 0; oaxes[i]; i++)
    {
      g_ptr_array_add (sout, oaxes[i]);
      if (g_str_equal (oaxes[i], qaxis))
        break;
    }
  g_ptr_array_add (sout, (char *) key);
  g_ptr_array_add (sout, NULL);

  n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
  n->out = g_strdupv ((char **) sout->pdata);
  n->label = g_strdup ("Q·Kᵀ");
  cur = gi_emit_node (g, v, n, "scores", gi_operand (g, v, 0), kin);
  n = gi_map_node (NAPKIN_FN_SCALE, "scale");
  n->alpha = v->alpha;
  /* SDPA's own scale is 1/sqrt(d): kept as that expression, it follows d (docs/import.md) */
  if (v->default_scale && gi_axis_of_dim (g, q, nb + 2) != NULL)
    {
      n->alpha_expr = g_strdup_printf ("1/sqrt(%s)", gi_axis_of_dim (g, q, nb + 2));
      g_free (n->label);
      n->label = g_strdup_printf ("·1/√%s", gi_axis_of_dim (g, q, nb + 2));
    }
  cur = gi_emit_node (g, v, n, "scale", cur, NULL);
  if (v->causal)
    cur = gi_emit_node (g, v, kept_node (qaxis, key, &v->mask), v->mask.kind == MASK_BAND ? "window" : "causal",
                        cur, NULL);
  if (mask != NULL && mask->is_bool)
    {
      n = napkin_node_new ("m", NAPKIN_OP_MASK);
      n->mask = NAPKIN_MASK_TENSOR;
      n->label = g_strdup ("mask");
      cur = gi_emit_node (g, v, n, "mask", cur, value_node (g, mask, NULL));
    }
  else if (mask != NULL)
    cur = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_ADD, "+ mask"), "bias", cur,
                        cast_to (g, v, value_node (g, mask, NULL)));
  n = napkin_node_new ("s", NAPKIN_OP_SOFTMAX);
  n->axis = g_strdup (key);
  n->label = g_strdup ("softmax");
  cur = gi_emit_node (g, v, n, "probs", cur, NULL);
  /* O is stored token-major, [batch…, query, heads…, dv], as FlashAttention stores it:
   * the transpose and reshape that follow in a block then read the heads and dv as one
   * contiguous contracted run, and the output projection is a plain GEMM
   * (docs/import.md) */
  {
    g_autoptr(GArray) lead = g_array_new (FALSE, FALSE, sizeof (int));
    guint at = 0, n_lead;

    for (guint i = 0; i < nb; i++)
      gi_expand (g, v->dims[i], lead);
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
  v->napkin = g_strdup (gi_emit_node (g, v, n, v->name, cur, vin));
}

/* Node `in` in v's element type: torch promotes bf16 + fp32 to fp32, the format casts
 * explicitly (a cast node in front of the operand that differs). */
static const char *
cast_to (G          *g,
         Value      *v,
         const char *in)
{
  int index = napkin_import_find (g->b, NAPKIN_ITEM_NODE, in);
  const NapkinTensorType *type = index >= 0 ? napkin_import_node_type (g->b, index) : NULL;
  g_autofree char *stem = NULL;
  NapkinNode *n;

  if (type == NULL || !type->valid || !v->has_dtype || type->dtype == v->dtype)
    return in;
  stem = g_strconcat (in, "_", napkin_dtype_to_string (v->dtype), NULL);
  g_strdelimit (stem, "-", '_');
  n = gi_map_node (NAPKIN_FN_CAST, "cast");
  n->has_dtype = TRUE;
  n->dtype = v->dtype;
  return gi_emit_node (g, v, n, stem, in, NULL);
}

/* masked_fill / where as a mask: causal from a tril, a tensor mask from a boolean. */
static const char *
emit_mask (G     *g,
           Value *v)
{
  Value *x = gi_src (g, v, 0);
  const char *in = gi_operand (g, v, 0), *rows, *axis;
  NapkinNode *n;

  if (v->mask.kind == MASK_ONES || in == NULL)
    return in;   /* keeps everything */
  if (v->mask.kind == MASK_TENSOR)
    {
      const char *flags = gi_operand (g, v, 1);

      if (flags == NULL)
        return NULL;
      if (v->mask.invert)
        {
          /* 0/1 flags of the dropped positions: kept = 1 − dropped, as −(dropped − 1) */
          g_autofree char *stem = g_strconcat (v->name, "_keep", NULL);
          NapkinNode *shift = gi_map_node (NAPKIN_FN_SHIFT, "− 1");

          shift->alpha = -1;
          flags = gi_emit_node (g, gi_src (g, v, 1), shift, stem, flags, NULL);
          flags = gi_emit_node (g, gi_src (g, v, 1), gi_map_node (NAPKIN_FN_NEG, "1 − dropped"), stem, flags, NULL);
        }
      n = napkin_node_new ("m", NAPKIN_OP_MASK);
      n->mask = NAPKIN_MASK_TENSOR;
      n->label = g_strdup ("mask");
      return gi_emit_node (g, v, n, v->name, in, flags);
    }
  rows = gi_axis_of_dim (g, x, x->n_dims - 2);
  axis = gi_axis_of_dim (g, x, x->n_dims - 1);
  if (rows == NULL || axis == NULL)
    return NULL;
  return gi_emit_node (g, v, kept_node (rows, axis, &v->mask), v->name, in, NULL);
}

/* A binary map broadcasts to its first operand's axes then the second's others; where
 * the first lacks some that the second has with all the result's (gate[b, 1, e] ·
 * x[b, s, e]), PyTorch stores the result in the second's order, [b, s, e], not
 * [b, e, s]: the map names that order, so that what reads the value row by row reads
 * its rows. */
static const char *
keep_torch_order (G          *g,
                  const char *id,
                  const char *in0,
                  const char *in1)
{
  int index = napkin_import_find (g->b, NAPKIN_ITEM_NODE, id);
  int first = in0 != NULL ? napkin_import_find (g->b, NAPKIN_ITEM_NODE, in0) : -1;
  int second = in1 != NULL ? napkin_import_find (g->b, NAPKIN_ITEM_NODE, in1) : -1;
  const NapkinTensorType *type = index >= 0 ? napkin_import_node_type (g->b, index) : NULL;
  const NapkinTensorType *x = first >= 0 ? napkin_import_node_type (g->b, first) : NULL;
  const NapkinTensorType *y = second >= 0 ? napkin_import_node_type (g->b, second) : NULL;
  NapkinNode *copy;

  if (type == NULL || x == NULL || y == NULL || !type->valid || !x->valid || !y->valid
      || x->n_axes >= type->n_axes || y->n_axes != type->n_axes)
    return id;
  for (guint i = 0; i < type->n_axes; i++)
    if (!napkin_tensor_type_has_axis (y, type->axes[i]))
      return id;
  if (memcmp (type->axes, y->axes, sizeof (type->axes[0]) * type->n_axes) == 0)
    return id;
  copy = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (g->d, (guint) index));
  copy->out = g_new0 (char *, y->n_axes + 1);
  for (guint i = 0; i < y->n_axes; i++)
    copy->out[i] = g_strdup (napkin_diagram_axis (g->d, y->axes[i])->name);
  napkin_import_replace_node (g->b, (guint) index, copy);
  return napkin_diagram_node (g->d, (guint) index)->id;
}

/* A norm's weight (· operand 1) and bias (+ operand 2) after node `id`, where v has them. */
static const char *
norm_affine (G          *g,
             Value      *v,
             const char *id,
             const char *stem,
             GArray     *cuts)
{
  if (gi_src (g, v, 1) != NULL)
    {
      g_autofree char *wstem = g_strconcat (stem, "_weight", NULL);

      id = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_MUL, "· weight"), wstem, id, operand_node (g, v, 1, cuts));
    }
  if (gi_src (g, v, 2) != NULL)
    {
      g_autofree char *bstem = g_strconcat (stem, "_bias", NULL);

      id = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_ADD, "+ bias"), bstem, id, operand_node (g, v, 2, cuts));
    }
  return id;
}

/* group_norm: x in its logical order [b, C, spatial…], reshaped (the flat index kept) to
 * [b, groups, rest] — rest the group's C/G channels with every position —, a layernorm
 * over rest, reshaped back, then the weight and bias per channel (docs/import.md). */
static const char *
emit_group_norm (G          *g,
                 Value      *v,
                 const char *in0,
                 const char *stem,
                 GArray     *cuts)
{
  Value *x = gi_src (g, v, 0);
  g_auto(GStrv) logical = gi_atom_names (g, x);
  g_auto(GStrv) stored = gi_stored_order (g, in0, logical);
  g_autoptr(GArray) lead = g_array_new (FALSE, FALSE, sizeof (int));
  gint64 groups = v->extra[1], rest = 1;
  g_autofree char *gname = NULL, *rname = NULL;
  GPtrArray *grouped = g_ptr_array_new ();
  const char *id = in0;
  NapkinNode *n;
  guint n_lead;

  if (cuts != NULL || logical == NULL || x->n_dims < 2)
    {
      g_ptr_array_free (grouped, TRUE);
      gi_fail (g, v, _("a part of a group norm's input is not covered"));
      return NULL;
    }
  gi_expand (g, x->dims[0], lead);
  n_lead = lead->len;
  for (guint i = 1; i < x->n_dims; i++)
    rest *= gi_dim_size (g, x, i);
  rest /= groups;
  /* the logical order first, where the input is stored otherwise */
  if (!g_strv_equal ((const char * const *) logical, (const char * const *) stored))
    {
      g_autofree char *pstem = g_strconcat (stem, "_nchw", NULL);

      n = napkin_node_new ("r", NAPKIN_OP_REARRANGE);
      n->out = g_strdupv (logical);
      n->label = g_strdup (_("channels first"));
      id = gi_emit_node (g, v, n, pstem, id, NULL);
    }
  if (!room_for_axis (g, v) || g_strv_length (logical) <= n_lead)
    {
      g_ptr_array_free (grouped, TRUE);
      return NULL;
    }
  gname = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, "groups");
  napkin_import_add_axis (g->b, gname, groups);
  if (!room_for_axis (g, v))
    {
      g_ptr_array_free (grouped, TRUE);
      return NULL;
    }
  rname = napkin_import_fresh_name (g->b, NAPKIN_ITEM_AXIS, "group");
  napkin_import_add_axis (g->b, rname, rest);
  for (guint i = 0; i < n_lead; i++)
    g_ptr_array_add (grouped, g_strdup (logical[i]));
  g_ptr_array_add (grouped, g_strdup (gname));
  g_ptr_array_add (grouped, g_strdup (rname));
  g_ptr_array_add (grouped, NULL);
  {
    g_autofree char *rstem = g_strconcat (stem, "_groups", NULL);

    n = napkin_node_new ("r", NAPKIN_OP_REARRANGE);
    n->out = (char **) g_ptr_array_free (grouped, FALSE);
    n->label = g_strdup_printf (_("%lld groups"), (long long) groups);
    id = gi_emit_node (g, v, n, rstem, id, NULL);
  }
  n = napkin_node_new ("n", NAPKIN_OP_NORMALIZE);
  n->norm = NAPKIN_NORM_LAYERNORM;
  n->eps = v->eps;
  n->axis = g_strdup (rname);
  n->label = g_strdup ("GroupNorm");
  id = gi_emit_node (g, v, n, stem, id, NULL);
  {
    g_autofree char *bstem = g_strconcat (stem, "_back", NULL);

    n = napkin_node_new ("r", NAPKIN_OP_REARRANGE);
    n->out = g_strdupv (logical);
    n->label = g_strdup (_("channels back"));
    id = gi_emit_node (g, v, n, bstem, id, NULL);
  }
  return norm_affine (g, v, id, stem, NULL);
}

/* A node for v computed on its operands under the cuts (a part of a fused projection
 * computes only its part). */
static const char *
emit_value (G      *g,
            Value  *v,
            GArray *cuts)
{
  g_autofree char *label = label_of (g, v);
  g_autofree char *tag = cuts_tag (g, v, cuts);
  g_autofree char *stem = g_strconcat (v->name, tag, NULL);
  gboolean cut = tag[0] != 0;
  const char *in0, *id;
  NapkinNode *n = NULL;

  if (cut && (v->emit == EMIT_ATTENTION || v->emit == EMIT_ROTATE || v->emit == EMIT_MASK
              || ((v->emit == EMIT_SOFTMAX || v->emit == EMIT_NORM || v->emit == EMIT_REDUCE)
                  && gi_src (g, v, 0)->dims[v->axis_dim] != NONE
                  && cut_of (g, cuts, gi_src (g, v, 0)->dims[v->axis_dim]) != NULL)))
    {
      gi_fail (g, v, _("a part of this result is taken later; take the part before this operation"));
      return NULL;
    }
  switch (v->emit)
    {
    case EMIT_SKIP:
    case EMIT_TUPLE:
      return NULL;
    case EMIT_INPUT:
      return emit_input (g, v, cuts);
    case EMIT_VIEW:
    case EMIT_GETITEM:
      return operand_node (g, v, 0, cuts);
    case EMIT_PART:
      {
        g_autoptr(GArray) all = g_array_new (FALSE, FALSE, sizeof (Restrict));

        if (cuts != NULL)
          g_array_append_vals (all, cuts->data, cuts->len);
        g_array_append_vals (all, v->cuts->data, v->cuts->len);
        return operand_node (g, v, 0, all);
      }
    case EMIT_ATTENTION:
      emit_attention (g, v);
      return v->napkin;
    case EMIT_ROTATE:
      emit_rotate (g, v);
      return v->napkin;
    case EMIT_MASK:
      return emit_mask (g, v);
    default:
      break;
    }
  if ((in0 = operand_node (g, v, 0, cuts)) == NULL)
    return NULL;
  switch (v->emit)
    {
    case EMIT_CAST:
      n = gi_map_node (NAPKIN_FN_CAST, "cast");
      n->has_dtype = TRUE;
      n->dtype = v->dtype;
      return gi_emit_node (g, v, n, stem, in0, NULL);
    case EMIT_CONTRACT:
      n = napkin_node_new ("c", NAPKIN_OP_CONTRACT);
      n->out = cut_names (g, v, cuts);
      n->label = g_strdup (label);
      if (v->out_from != NONE)
        {
          /* a square weight's product: its own output axis, renamed after the bias */
          const char *own = gi_cls (g, gi_find (g, v->out_from))->axis;
          const char *mine = gi_cls (g, gi_find (g, v->dims[v->emit == EMIT_CONTRACT && g_str_equal (v->base, "linear")
                                                          ? v->n_dims - 1 : 1]))->axis;

          for (guint i = 0; n->out[i] != NULL && own != NULL && mine != NULL; i++)
            if (g_str_equal (n->out[i], mine))
              {
                g_free (n->out[i]);
                n->out[i] = g_strdup (own);
              }
        }
      id = gi_emit_node (g, v, n, stem, in0, operand_node (g, v, 1, cuts));
      if (v->product_alpha != 0)
        {
          g_autofree char *sstem = g_strconcat (stem, "_scale", NULL);

          n = gi_map_node (NAPKIN_FN_SCALE, "scale");
          n->alpha = v->product_alpha;
          g_free (n->label);
          n->label = g_strdup_printf ("·%g", v->product_alpha);
          id = gi_emit_node (g, v, n, sstem, id, NULL);
        }
      if (v->extra[0] >= 0)
        {
          g_autofree char *bstem = g_strconcat (stem, "_bias", NULL);

          id = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_ADD, "+ bias"), bstem, id,
                             value_node (g, g->values->pdata[v->extra[0]], cuts));
        }
      if (v->out_from != NONE)
        {
          g_auto(GStrv) axes = cut_names (g, v, cuts);
          const char *own = gi_cls (g, gi_find (g, v->out_from))->axis;
          const char *mine = gi_cls (g, gi_find (g, v->dims[g_str_equal (v->base, "linear") ? v->n_dims - 1 : 1]))->axis;
          g_autofree char *rstem = g_strconcat (stem, "_out", NULL);

          if (own != NULL && mine != NULL)
            id = gi_rename_axis (g, v, id, axes, own, mine, rstem);
        }
      return id;
    case EMIT_SOFTMAX:
    case EMIT_REDUCE:
      n = napkin_node_new ("s", v->emit == EMIT_SOFTMAX ? NAPKIN_OP_SOFTMAX : NAPKIN_OP_REDUCE);
      if ((n->axis = g_strdup (gi_axis_of_dim (g, gi_src (g, v, 0), v->axis_dim))) == NULL)
        {
          napkin_node_free (n);
          return NULL;
        }
      n->reduce = v->reduce;
      n->label = g_strdup (v->emit == EMIT_SOFTMAX ? "softmax" : napkin_reduce_to_string (v->reduce));
      if (v->emit == EMIT_REDUCE && v->reduce_more != 0)
        {
          /* over several dimensions: one reduction after the other, by axis name */
          Value *a = gi_src (g, v, 0);

          id = gi_emit_node (g, v, n, stem, in0, NULL);
          for (guint i = 0; i < a->n_dims && i < 64; i++)
            if (v->reduce_more & (G_GUINT64_CONSTANT (1) << i))
              {
                const char *axis = gi_axis_of_dim (g, a, (int) i);

                if (axis == NULL)
                  return NULL;
                n = napkin_node_new ("s", NAPKIN_OP_REDUCE);
                n->axis = g_strdup (axis);
                n->reduce = v->reduce;
                n->label = g_strdup (napkin_reduce_to_string (v->reduce));
                id = gi_emit_node (g, v, n, stem, id, NULL);
              }
          return id;
        }
      return gi_emit_node (g, v, n, stem, in0, NULL);
    case EMIT_NORM:
      {
        n = napkin_node_new ("n", NAPKIN_OP_NORMALIZE);
        n->norm = v->norm;
        n->eps = v->eps;
        if ((n->axis = g_strdup (gi_axis_of_dim (g, gi_src (g, v, 0), v->axis_dim))) == NULL)
          {
            napkin_node_free (n);
            return NULL;
          }
        n->label = g_strdup (v->norm == NAPKIN_NORM_RMSNORM ? "RMSNorm" : "LayerNorm");
        id = gi_emit_node (g, v, n, stem, in0, NULL);
        return norm_affine (g, v, id, stem, cuts);
      }
    case EMIT_GROUP_NORM:
      return emit_group_norm (g, v, in0, stem, cuts);
    case EMIT_MAP1:
      if (v->fn == NAPKIN_FN_SHIFT)
        {
          g_autofree char *l = g_strdup_printf ("+ %g", v->alpha);

          n = gi_map_node (v->fn, l);
          n->alpha = v->alpha;
          return gi_emit_node (g, v, n, stem, in0, NULL);
        }
      if (v->fn == NAPKIN_FN_SILU && v->alpha != 0 && v->alpha != 1)
        {
          /* x · sigmoid(c·x) = silu(c·x) / c (quick_gelu: c = 1.702) */
          g_autofree char *pre = g_strconcat (stem, "_in", NULL);
          g_autofree char *post = g_strconcat (stem, "_out", NULL);

          n = gi_map_node (NAPKIN_FN_SCALE, "scale");
          n->alpha = v->alpha;
          g_free (n->label);
          n->label = g_strdup_printf ("·%g", v->alpha);
          id = gi_emit_node (g, v, n, pre, in0, NULL);
          id = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_SILU, "x·σ(x)"), stem, id, NULL);
          n = gi_map_node (NAPKIN_FN_SCALE, "scale");
          n->alpha = 1 / v->alpha;
          g_free (n->label);
          n->label = g_strdup_printf ("÷%g", v->alpha);
          return gi_emit_node (g, v, n, post, id, NULL);
        }
      n = gi_map_node (v->fn, napkin_fn_info (v->fn)->name);
      id = gi_emit_node (g, v, n, stem, in0, NULL);
      if (g_str_equal (v->base, "pow") && v->alpha == 3)
        {
          g_autofree char *cstem = g_strconcat (stem, "_cube", NULL);

          id = gi_emit_node (g, v, gi_map_node (NAPKIN_FN_MUL, "·"), cstem, id, in0);
        }
      return id;
    case EMIT_MAP2:
      {
        static const char *const signs[] = { "+", "−", "·", "÷" };
        const char *in1 = operand_node (g, v, 1, cuts);

        if (in1 == NULL)
          return NULL;
        n = gi_map_node (v->fn, v->fn <= NAPKIN_FN_DIV ? signs[v->fn] : napkin_fn_info (v->fn)->name);
        in0 = cast_to (g, v, in0);
        in1 = cast_to (g, v, in1);
        id = gi_emit_node (g, v, n, stem, in0, in1);
        return keep_torch_order (g, id, in0, in1);
      }
    case EMIT_SCALE:
      n = gi_map_node (NAPKIN_FN_SCALE, "scale");
      n->alpha = v->alpha;
      g_free (n->label);
      n->label = g_strdup_printf ("·%g", v->alpha);
      return gi_emit_node (g, v, n, stem, in0, NULL);
    default:
      g_assert_not_reached ();
    }
}

/* The node of v under the cuts that touch it: made once per (value, part). */
static const char *
value_node (G      *g,
            Value  *v,
            GArray *cuts)
{
  g_autofree char *ck = cuts_key (g, v, cuts);
  g_autofree char *key = NULL;
  const char *have, *id;

  if (ck[0] == 0 && v->napkin != NULL)
    return v->napkin;
  key = g_strconcat (v->name, ck, NULL);
  if ((have = g_hash_table_lookup (g->variants, key)) != NULL)
    return have;
  id = emit_value (g, v, ck[0] ? cuts : NULL);
  if (id == NULL)
    {
      g_debug ("no node for %s (emit %d)", v->name, v->emit);
      return NULL;
    }
  if (ck[0] == 0 && v->napkin == NULL)
    v->napkin = g_strdup (id);
  g_hash_table_insert (g->variants, g_strdup (key), g_strdup (id));
  return g_hash_table_lookup (g->variants, key);
}

void
gi_pass2_value (G     *g,
                Value *v)
{
  if (v->lazy || v->absorbed || v->emit == EMIT_SKIP || v->emit == EMIT_TUPLE)
    return;
  value_node (g, v, NULL);
}

/* The module's parameters, buffers and inputs that some operation reads whole. */
void
gi_emit_inputs (G *g)
{
  for (guint i = 0; i < g->values->len; i++)
    {
      Value *v = g->values->pdata[i];

      if (v->emit != EMIT_INPUT || v->lazy || v->absorbed || v->readers->len == 0)
        continue;
      value_node (g, v, NULL);
    }
}
