/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "napkin-describe.h"

/* Places in a document in words (docs/file-format.md, "Error messages"). Core
 * messages are English in the source and translated through the gettext domain. */

char *
napkin_describe_ordinal (guint index)
{
  static const char *words[] = {
    NC_("ordinal", "first"), NC_("ordinal", "second"), NC_("ordinal", "third"), NC_("ordinal", "fourth"),
    NC_("ordinal", "fifth"), NC_("ordinal", "sixth"), NC_("ordinal", "seventh"), NC_("ordinal", "eighth"),
    NC_("ordinal", "ninth"), NC_("ordinal", "tenth"),
  };

  if (index < G_N_ELEMENTS (words))
    return g_strdup (g_dpgettext2 (GETTEXT_PACKAGE, "ordinal", words[index]));
  return g_strdup_printf (_("number %u"), index + 1);
}

const char *
napkin_describe_kind (NapkinOpKind kind)
{
  switch (kind)
    {
    case NAPKIN_OP_INPUT: return C_("operation kind", "input");
    case NAPKIN_OP_OUTPUT: return C_("operation kind", "output");
    case NAPKIN_OP_CONTRACT: return C_("operation kind", "contraction");
    case NAPKIN_OP_MAP: return C_("operation kind", "map");
    case NAPKIN_OP_REDUCE: return C_("operation kind", "reduction");
    case NAPKIN_OP_SOFTMAX: return C_("operation kind", "softmax");
    case NAPKIN_OP_NORMALIZE: return C_("operation kind", "normalization");
    case NAPKIN_OP_REARRANGE: return C_("operation kind", "rearrangement");
    case NAPKIN_OP_MASK: return C_("operation kind", "mask");
    case NAPKIN_N_OPS:
    default: return C_("operation kind", "operation");
    }
}

/* ---------------------------------------------------------------- lookups */

typedef struct
{
  json_object   *root;
  NapkinDiagram *diagram;
} Source;

static json_object *
json_item (json_object *root,
           const char  *list,
           guint        index)
{
  json_object *array = NULL;

  if (root == NULL || !json_object_is_type (root, json_type_object)
      || !json_object_object_get_ex (root, list, &array) || !json_object_is_type (array, json_type_array)
      || index >= json_object_array_length (array))
    return NULL;
  return json_object_array_get_idx (array, index);
}

static const char *
json_field (json_object *item,
            const char  *key)
{
  json_object *value = NULL;

  if (item == NULL || !json_object_is_type (item, json_type_object)
      || !json_object_object_get_ex (item, key, &value) || !json_object_is_type (value, json_type_string))
    return NULL;
  return json_object_get_string (value);
}

/* A name to quote: short, printable. */
static char *
quoted (const char *name)
{
  g_autofree char *shown = NULL;

  if (name == NULL || !g_utf8_validate (name, -1, NULL))
    return NULL;
  shown = g_strescape (name, NULL);
  if (g_utf8_strlen (shown, -1) > 40)
    {
      g_autofree char *cut = g_utf8_substring (shown, 0, 40);

      return g_strdup_printf (_("“%s…”"), cut);
    }
  return g_strdup_printf (_("“%s”"), shown);
}

static char *
describe_item (const Source *src,
               const char   *list,
               guint         index)
{
  json_object *item = json_item (src->root, list, index);
  gboolean from_diagram = src->diagram != NULL;
  g_autofree char *ord = NULL;

  if (g_str_equal (list, "nodes"))
    {
      const char *id = NULL, *kind_text = NULL;
      NapkinOpKind kind = NAPKIN_N_OPS;
      g_autofree char *q = NULL;

      if (from_diagram && index < napkin_diagram_n_nodes (src->diagram))
        {
          id = napkin_diagram_node (src->diagram, index)->id;
          kind = napkin_diagram_node (src->diagram, index)->kind;
        }
      else
        {
          id = json_field (item, "id");
          kind_text = json_field (item, "kind");
          if (kind_text == NULL || !napkin_op_kind_from_string (kind_text, &kind))
            kind = NAPKIN_N_OPS;
        }
      q = quoted (id);
      if (q != NULL)
        return g_strdup_printf (_("the %s %s"), napkin_describe_kind (kind), q);
      ord = napkin_describe_ordinal (index);
      return g_strdup_printf (_("the %s operation"), ord);
    }
  if (g_str_equal (list, "wires"))
    {
      const char *from = NULL, *to = NULL;
      g_autofree char *qf = NULL, *qt = NULL;

      if (from_diagram && index < napkin_diagram_n_wires (src->diagram))
        {
          from = napkin_diagram_wire (src->diagram, index)->from;
          to = napkin_diagram_wire (src->diagram, index)->to;
        }
      else
        {
          from = json_field (item, "from");
          to = json_field (item, "to");
        }
      qf = quoted (from);
      qt = quoted (to);
      if (qf != NULL && qt != NULL)
        return g_strdup_printf (_("the wire from %s to %s"), qf, qt);
      ord = napkin_describe_ordinal (index);
      return g_strdup_printf (_("the %s wire"), ord);
    }

  {
    static const struct { const char *list; const char *noun; NapkinItemKind kind; const char *key; } named[] = {
      { "axes", "axis", NAPKIN_ITEM_AXIS, "name" },
      { "tensors", "tensor", NAPKIN_ITEM_TENSOR, "name" },
      { "regions", "region", NAPKIN_ITEM_REGION, "name" },
    };

    for (guint i = 0; i < G_N_ELEMENTS (named); i++)
      if (g_str_equal (list, named[i].list))
        {
          const char *name = NULL;
          g_autofree char *q = NULL;

          if (from_diagram && index < napkin_diagram_count (src->diagram, named[i].kind))
            {
              gconstpointer it = napkin_diagram_get_item (src->diagram, named[i].kind, index);
              g_autofree char *key = napkin_item_key (named[i].kind, it);

              q = quoted (key);
            }
          else
            {
              name = json_field (item, named[i].key);
              q = quoted (name);
            }
          if (q != NULL)
            return g_strdup_printf ("%s %s", named[i].noun, q);
          ord = napkin_describe_ordinal (index);
          return g_strdup_printf (_("the %s %s"), ord, named[i].noun);
        }
  }
  ord = napkin_describe_ordinal (index);
  return g_strdup_printf (_("the %s item of “%s”"), ord, list);
}

/* "name" → the field's noun in "the … of X". */
static const char *
field_noun (const char *list,
            const char *field)
{
  static const struct { const char *list; const char *field; const char *noun; } nouns[] = {
    { "axes", "size", "the size" },
    { "axes", "name", "the name" },
    { "tensors", "name", "the name" },
    { "tensors", "axes", "the axes" },
    { "tensors", "dtype", "the element type" },
    { "nodes", "id", "the name" },
    { "nodes", "kind", "the kind" },
    { "nodes", "label", "the label" },
    { "nodes", "x", "the position" },
    { "nodes", "y", "the position" },
    { "nodes", "tensor", "the tensor" },
    { "nodes", "out", "the output axes" },
    { "nodes", "axis", "the axis" },
    { "nodes", "fn", "the function" },
    { "nodes", "alpha", "the factor" },
    { "nodes", "reduce", "the reduction" },
    { "nodes", "norm", "the normalization" },
    { "nodes", "eps", "the eps" },
    { "nodes", "dtype", "the element type" },
    { "wires", "from", "the start" },
    { "wires", "to", "the end" },
    { "wires", "port", "the input number" },
    { "regions", "name", "the name" },
    { "regions", "level", "the level" },
    { "regions", "nodes", "the operations" },
    { "regions", "marks", "the axis marks" },
    { "regions", "stages", "the pipeline stages" },
    { "regions", "threads", "the threads" },
    { "regions", "rect", "the rectangle" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (nouns); i++)
    if (g_str_equal (nouns[i].list, list) && g_str_equal (nouns[i].field, field))
      return nouns[i].noun;
  return NULL;
}

/* What the list items of a field are called: "the second output axis". */
static const char *
element_noun (const char *list,
              const char *field)
{
  if (g_str_equal (field, "out"))
    return "output axis";
  if (g_str_equal (field, "axes"))
    return "axis";
  if (g_str_equal (list, "regions") && g_str_equal (field, "nodes"))
    return C_("operation kind", "operation");
  if (g_str_equal (field, "rect"))
    return "number";
  return "item";
}

char *
napkin_describe_place (json_object   *root,
                       NapkinDiagram *diagram,
                       const char    *path)
{
  static const char *lists[] = { "axes", "tensors", "nodes", "wires", "regions", NULL };
  Source src = { root, diagram };
  g_autofree char *list = NULL;
  g_autofree char *item = NULL;
  const char *p;
  char *end;
  guint64 index;

  if (path == NULL || *path == '\0' || g_str_equal (path, "$"))
    return g_strdup ("the file");
  if (g_str_equal (path, "format"))
    return g_strdup ("the file’s “format” field");
  if (g_str_equal (path, "version"))
    return g_strdup ("the file’s format version");
  if (g_str_equal (path, "view.zoom"))
    return g_strdup ("the saved zoom");
  if (g_str_has_prefix (path, "view"))
    return g_strdup ("the saved view");

  for (guint i = 0; lists[i]; i++)
    if (g_str_has_prefix (path, lists[i]))
      {
        list = g_strdup (lists[i]);
        break;
      }
  if (list == NULL)
    return g_strdup_printf (_("the “%s” field"), path);

  p = path + strlen (list);
  if (*p == '\0')
    {
      static const char *whole[] = { "the list of axes", "the list of tensors", "the list of operations",
                                     "the list of wires", "the list of regions" };

      for (guint i = 0; lists[i]; i++)
        if (g_str_equal (lists[i], list))
          return g_strdup (whole[i]);
    }
  if (*p != '[')
    return g_strdup_printf (_("the “%s” field"), path);
  index = g_ascii_strtoull (p + 1, &end, 10);
  if (end == p + 1 || *end != ']' || index > G_MAXUINT)
    return g_strdup_printf (_("the “%s” field"), path);
  item = describe_item (&src, list, (guint) index);
  p = end + 1;
  if (*p == '\0')
    return g_steal_pointer (&item);
  if (*p != '.')
    return g_strdup_printf (_("%s (at %s)"), item, p);
  p++;

  /* region marks: "marks.AXIS[.kind]" */
  if (g_str_equal (list, "regions") && g_str_has_prefix (p, "marks."))
    {
      g_autofree char *axis = g_strdup (p + strlen ("marks."));
      char *dot = strchr (axis, '.');

      if (dot != NULL)
        *dot = '\0';
      return g_strdup_printf (_("the mark on axis %s in %s"), axis, item);
    }

  {
    g_autofree char *field = g_strdup (p);
    char *bracket = strchr (field, '[');
    const char *noun;

    if (bracket != NULL)
      {
        guint64 sub = g_ascii_strtoull (bracket + 1, &end, 10);

        *bracket = '\0';
        if (end != bracket + 1 && *end == ']' && sub <= G_MAXUINT)
          {
            g_autofree char *ord = napkin_describe_ordinal ((guint) sub);

            return g_strdup_printf (_("the %s %s of %s"), ord, element_noun (list, field), item);
          }
      }
    noun = field_noun (list, field);
    if (noun != NULL)
      return g_strdup_printf (_("%s of %s"), noun, item);
    return g_strdup_printf (_("the “%s” field of %s"), field, item);
  }
}

/* ---------------------------------------------------------------- messages */

char *
napkin_error_with_path (const char *words,
                        const char *path)
{
  if (path == NULL || *path == '\0')
    return g_strdup (words);
  return g_strdup_printf ("%s" NAPKIN_ERROR_PATH_START "%s)", words, path);
}

/* The details are the last thing in a message: a name quoted earlier cannot forge them. */
static const char *
find_details (const char *message)
{
  const char *found = NULL;

  if (message == NULL || !g_str_has_suffix (message, ")"))
    return NULL;
  for (const char *p = strstr (message, NAPKIN_ERROR_PATH_START); p; p = strstr (p + 1, NAPKIN_ERROR_PATH_START))
    found = p;
  return found;
}

char *
napkin_error_summary (const char *message)
{
  const char *details = find_details (message);

  if (message == NULL)
    return NULL;
  return details ? g_strndup (message, details - message) : g_strdup (message);
}

char *
napkin_error_path (const char *message)
{
  const char *details = find_details (message);
  gsize length;

  if (details == NULL)
    return NULL;
  details += strlen (NAPKIN_ERROR_PATH_START);
  length = strlen (details);
  return g_strndup (details, length - 1);
}
