/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-import-private.h"

G_DEFINE_QUARK (napkin-import-error-quark, napkin_import_error)

/* Spacing of the layout, in canvas units: the examples' columns are 170–220 apart and
 * their rows 120–140 (data/examples). */
#define COLUMN   190.0
#define ROW      120.0
#define MARGIN    40.0

void
napkin_import_add_axis (NapkinDiagram *d,
                        const char    *name,
                        gint64         size)
{
  NapkinAxis *axis = g_new0 (NapkinAxis, 1);

  axis->name = g_strdup (name);
  axis->size = size;
  napkin_diagram_insert_item (d, NAPKIN_ITEM_AXIS, napkin_diagram_n_axes (d), axis);
}

void
napkin_import_add_tensor (NapkinDiagram *d,
                          const char    *name,
                          char         **axes,
                          NapkinDtype    dtype,
                          json_object   *extra)
{
  NapkinTensor *tensor = g_new0 (NapkinTensor, 1);

  tensor->name = g_strdup (name);
  tensor->axes = g_strdupv (axes);
  tensor->dtype = dtype;
  tensor->extra = extra;
  napkin_diagram_insert_item (d, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (d), tensor);
}

static gboolean
name_used (NapkinDiagram  *d,
           NapkinItemKind  kind,
           const char     *name)
{
  return napkin_diagram_find (d, kind, name) >= 0;
}

char *
napkin_import_fresh_name (NapkinDiagram  *d,
                          NapkinItemKind  kind,
                          const char     *stem)
{
  GString *clean = g_string_new (NULL);

  /* Names reach generated code: keep [A-Za-z0-9_], never a leading digit
   * (docs/file-format.md). */
  for (const char *p = stem; p && *p && clean->len < NAPKIN_MAX_NAME_LEN - 8; p++)
    g_string_append_c (clean, g_ascii_isalnum (*p) || *p == '_' ? *p : '_');
  if (clean->len == 0 || g_ascii_isdigit (clean->str[0]))
    g_string_prepend_c (clean, 'v');
  if (!name_used (d, kind, clean->str))
    return g_string_free (clean, FALSE);
  for (guint i = 2;; i++)
    {
      char *name = g_strdup_printf ("%s%u", clean->str, i);

      if (!name_used (d, kind, name))
        {
          g_string_free (clean, TRUE);
          return name;
        }
      g_free (name);
    }
}

const char *
napkin_import_add_node (NapkinDiagram *d,
                        NapkinNode    *node,
                        const char    *stem)
{
  g_free (node->id);
  node->id = napkin_import_fresh_name (d, NAPKIN_ITEM_NODE, stem);
  napkin_diagram_insert_item (d, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (d), node);
  return node->id;
}

void
napkin_import_add_wire (NapkinDiagram *d,
                        const char    *from,
                        const char    *to,
                        guint          port)
{
  NapkinWire *wire = g_new0 (NapkinWire, 1);

  wire->from = g_strdup (from);
  wire->to = g_strdup (to);
  wire->port = port;
  napkin_diagram_insert_item (d, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (d), wire);
}

/* ---------------------------------------------------------------- layout */

typedef struct
{
  guint  node;
  double key;
} Slot;

static int
slot_compare (gconstpointer a,
              gconstpointer b)
{
  const Slot *x = a, *y = b;

  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return x->node < y->node ? -1 : x->node > y->node;
}

void
napkin_import_layout (NapkinDiagram *d)
{
  guint n = napkin_diagram_n_nodes (d);
  const guint *order = napkin_diagram_topo_order (d);
  g_autofree int *level = g_new0 (int, n);
  g_autofree double *y = g_new0 (double, n);
  g_autofree gboolean *placed = g_new0 (gboolean, n);
  int max_level = 0;

  if (order == NULL || n == 0)
    return;

  /* Operations: one column past their latest input (the longest path from the
   * diagram's inputs). Inputs: one column before their first consumer, so a weight
   * sits beside the operation that reads it, as the examples draw them. */
  for (guint i = 0; i < n; i++)
    {
      guint v = order[i];
      const NapkinNode *node = napkin_diagram_node (d, v);
      guint arity = napkin_op_n_inputs (node);

      level[v] = node->kind == NAPKIN_OP_INPUT ? 0 : 1;
      for (guint p = 0; p < arity; p++)
        {
          int src = napkin_diagram_input_source (d, v, p);

          if (src >= 0 && napkin_diagram_node (d, src)->kind != NAPKIN_OP_INPUT)
            level[v] = MAX (level[v], level[src] + 1);
        }
      max_level = MAX (max_level, level[v]);
    }
  for (guint v = 0; v < n; v++)
    if (napkin_diagram_node (d, v)->kind == NAPKIN_OP_INPUT)
      {
        guint n_consumers;
        const guint *consumers = napkin_diagram_consumers (d, v, &n_consumers);
        int first = max_level + 1;

        for (guint c = 0; c < n_consumers; c++)
          first = MIN (first, level[consumers[c]]);
        level[v] = n_consumers > 0 ? MAX (first - 1, 0) : 0;
      }

  /* Rows: the operations column by column, each at the mean row of the operations
   * it reads (a barycentre sweep); then each input beside its first consumer (above
   * it for the first port, below for the second); then, in every column, each item
   * pushed down until it clears the one above. */
  for (int pass = 0; pass < 2; pass++)
    for (int l = 0; l <= max_level; l++)
      {
        g_autoptr(GArray) column = g_array_new (FALSE, FALSE, sizeof (Slot));
        double next = MARGIN;

        for (guint i = 0; i < n; i++)
          {
            guint v = order[i];
            const NapkinNode *node = napkin_diagram_node (d, v);
            gboolean is_input = node->kind == NAPKIN_OP_INPUT;
            Slot slot = { v, next + column->len * ROW };
            double sum = 0;
            guint count = 0;

            if (level[v] != l || (pass == 0 && is_input))
              continue;
            if (pass == 1 && !is_input)
              slot.key = y[v];
            else if (is_input)
              {
                guint n_consumers;
                const guint *consumers = napkin_diagram_consumers (d, v, &n_consumers);

                if (n_consumers > 0)
                  {
                    guint c = consumers[0];

                    for (guint p = 0; p < napkin_op_n_inputs (napkin_diagram_node (d, c)); p++)
                      if (napkin_diagram_input_source (d, c, p) == (int) v)
                        {
                          slot.key = y[c] + (p == 0 ? -0.5 : 0.5) * ROW;
                          break;
                        }
                  }
              }
            else
              {
                for (guint p = 0; p < napkin_op_n_inputs (node); p++)
                  {
                    int src = napkin_diagram_input_source (d, v, p);

                    if (src >= 0 && placed[src])
                      {
                        sum += y[src];
                        count++;
                      }
                  }
                if (count > 0)
                  slot.key = sum / count;
              }
            g_array_append_val (column, slot);
          }
        g_array_sort (column, slot_compare);
        for (guint i = 0; i < column->len; i++)
          {
            Slot *slot = &g_array_index (column, Slot, i);

            y[slot->node] = MAX (slot->key, next);
            next = y[slot->node] + ROW;
            placed[slot->node] = TRUE;
          }
      }

  for (guint v = 0; v < n; v++)
    {
      NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, v));

      node->x = MARGIN + level[v] * COLUMN;
      node->y = y[v];
      napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, v, node);
    }
}

/* ---------------------------------------------------------------- files */

NapkinDiagram *
napkin_import_file (const char  *path,
                    GError     **error)
{
  g_autofree char *text = NULL;
  gsize length = 0;
  const char *p;

  if (!(text = napkin_file_read_bounded (path, NAPKIN_MAX_FILE_SIZE, &length, error)))
    return NULL;
  for (p = text; p < text + length && g_ascii_isspace (*p); p++)
    ;
  if (p < text + length && *p == '{')
    return napkin_import_graph (text, length, path, error);
  if (memchr (text, '\0', length) != NULL || !g_utf8_validate (text, length, NULL))
    {
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s: not UTF-8 text"), path);
      return NULL;
    }
  return napkin_import_einsum (text, path, error);
}
