/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-import"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-error.h"
#include "napkin-describe.h"
#include "napkin-file.h"
#include "napkin-text.h"
#include "napkin-validate.h"
#include "napkin-import-private.h"

G_DEFINE_QUARK (napkin-import-error-quark, napkin_import_error)

/* Spacing of the layout, in canvas units: the examples' columns are 170–220 apart and
 * their rows 120–140 (data/examples). */
#define COLUMN   190.0
#define ROW      120.0
#define MARGIN    40.0

/* ---------------------------------------------------------------- the builder */

void
napkin_import_builder_init (NapkinImportBuilder *b,
                            NapkinDiagram       *d)
{
  memset (b, 0, sizeof *b);
  b->d = d;
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    b->names[k] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  b->sources = g_array_new (FALSE, FALSE, sizeof (int));
  b->types = g_array_new (FALSE, TRUE, sizeof (NapkinTensorType));
}

void
napkin_import_builder_clear (NapkinImportBuilder *b)
{
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    g_clear_pointer (&b->names[k], g_hash_table_unref);
  g_clear_pointer (&b->sources, g_array_unref);
  g_clear_pointer (&b->types, g_array_unref);
}

static void
add_item (NapkinImportBuilder *b,
          NapkinItemKind       kind,
          const char          *name,
          gpointer             item)
{
  guint index = napkin_diagram_count (b->d, kind);

  if (name != NULL && !g_hash_table_contains (b->names[kind], name))
    g_hash_table_insert (b->names[kind], g_strdup (name), GUINT_TO_POINTER (index + 1));
  napkin_diagram_insert_item (b->d, kind, index, item);
}

int
napkin_import_find (NapkinImportBuilder *b,
                    NapkinItemKind       kind,
                    const char          *name)
{
  gpointer v = name ? g_hash_table_lookup (b->names[kind], name) : NULL;

  return v ? (int) GPOINTER_TO_UINT (v) - 1 : -1;
}

void
napkin_import_add_axis (NapkinImportBuilder *b,
                        const char          *name,
                        gint64               size)
{
  NapkinAxis *axis = g_new0 (NapkinAxis, 1);

  axis->name = g_strdup (name);
  axis->size = size;
  add_item (b, NAPKIN_ITEM_AXIS, name, axis);
}

void
napkin_import_add_tensor (NapkinImportBuilder *b,
                          const char          *name,
                          char               **axes,
                          NapkinDtype          dtype,
                          json_object         *extra)
{
  NapkinTensor *tensor = g_new0 (NapkinTensor, 1);

  tensor->name = g_strdup (name);
  tensor->axes = g_strdupv (axes);
  tensor->dtype = dtype;
  tensor->extra = extra;
  add_item (b, NAPKIN_ITEM_TENSOR, name, tensor);
}

char *
napkin_import_fresh_name (NapkinImportBuilder *b,
                          NapkinItemKind       kind,
                          const char          *stem)
{
  GString *clean = g_string_new (NULL);

  /* Names reach generated code: keep [A-Za-z0-9_], never a leading digit
   * (docs/file-format.md). */
  for (const char *p = stem; p && *p && clean->len < NAPKIN_MAX_NAME_LEN - 8; p++)
    g_string_append_c (clean, g_ascii_isalnum (*p) || *p == '_' ? *p : '_');
  if (clean->len == 0 || g_ascii_isdigit (clean->str[0]))
    g_string_prepend_c (clean, 'v');
  if (napkin_import_find (b, kind, clean->str) < 0)
    return g_string_free (clean, FALSE);
  for (guint i = 2;; i++)
    {
      char *name = g_strdup_printf ("%s%u", clean->str, i);

      if (napkin_import_find (b, kind, name) < 0)
        {
          g_string_free (clean, TRUE);
          return name;
        }
      g_free (name);
    }
}

const char *
napkin_import_add_node (NapkinImportBuilder *b,
                        NapkinNode          *node,
                        const char          *stem)
{
  int none[2] = { -1, -1 };

  g_free (node->id);
  node->id = napkin_import_fresh_name (b, NAPKIN_ITEM_NODE, stem);
  g_array_append_vals (b->sources, none, 2);
  add_item (b, NAPKIN_ITEM_NODE, node->id, node);
  return node->id;
}

void
napkin_import_add_wire (NapkinImportBuilder *b,
                        const char          *from,
                        const char          *to,
                        guint                port)
{
  NapkinWire *wire = g_new0 (NapkinWire, 1);
  int f = napkin_import_find (b, NAPKIN_ITEM_NODE, from);
  int t = napkin_import_find (b, NAPKIN_ITEM_NODE, to);

  wire->from = g_strdup (from);
  wire->to = g_strdup (to);
  wire->port = port;
  add_item (b, NAPKIN_ITEM_WIRE, NULL, wire);
  /* the first wire on a port counts, as in the diagram's own index */
  if (f >= 0 && t >= 0 && port < 2 && g_array_index (b->sources, int, t * 2 + port) < 0)
    {
      g_array_index (b->sources, int, t * 2 + port) = f;
      b->typed = MIN (b->typed, (guint) t);
    }
}

void
napkin_import_replace_node (NapkinImportBuilder *b,
                            guint                index,
                            NapkinNode          *node)
{
  napkin_diagram_replace_item (b->d, NAPKIN_ITEM_NODE, index, node);
  b->typed = MIN (b->typed, index);
}

static int
builder_axis (gpointer    data,
              const char *name)
{
  return napkin_import_find (data, NAPKIN_ITEM_AXIS, name);
}

static const NapkinTensor *
builder_tensor (gpointer    data,
                const char *name)
{
  NapkinImportBuilder *b = data;
  int index = napkin_import_find (b, NAPKIN_ITEM_TENSOR, name);

  return index >= 0 ? napkin_diagram_tensor (b->d, index) : NULL;
}

const NapkinTensorType *
napkin_import_node_type (NapkinImportBuilder *b,
                         guint                node)
{
  const NapkinTypeLookup lookup = { builder_axis, builder_tensor, b };

  g_return_val_if_fail (node < napkin_diagram_n_nodes (b->d), NULL);

  if (b->types->len < napkin_diagram_n_nodes (b->d))
    g_array_set_size (b->types, napkin_diagram_n_nodes (b->d));
  /* In the order the nodes were added, which is an order of their wires: a source
   * added later than its consumer counts as unknown. */
  for (; b->typed <= node; b->typed++)
    {
      const NapkinTensorType *in[2] = { NULL, NULL };

      for (guint p = 0; p < 2; p++)
        {
          int src = g_array_index (b->sources, int, b->typed * 2 + p);

          in[p] = src >= 0 && (guint) src < b->typed ? &g_array_index (b->types, NapkinTensorType, src) : NULL;
        }
      napkin_node_infer_type (napkin_diagram_node (b->d, b->typed), in, &lookup,
                              &g_array_index (b->types, NapkinTensorType, b->typed));
    }
  return &g_array_index (b->types, NapkinTensorType, node);
}

char *
napkin_import_over_limit (NapkinImportBuilder *b,
                          NapkinItemKind       kind,
                          guint                more)
{
  guint have = napkin_diagram_count (b->d, kind);

  if (kind == NAPKIN_ITEM_AXIS && have + more > NAPKIN_MAX_AXES)
    return g_strdup_printf (_("more than %d axes, the most a diagram may have"), NAPKIN_MAX_AXES);
  if (kind == NAPKIN_ITEM_NODE && have + more > NAPKIN_MAX_NODES)
    return g_strdup_printf (_("more than %d operations, the most a diagram may have"), NAPKIN_MAX_NODES);
  return NULL;
}

char *
napkin_import_check (NapkinDiagram  *d,
                     NapkinItemKind *kind,
                     guint          *index)
{
  g_autoptr(GPtrArray) problems = napkin_diagram_check (d);
  NapkinProblem *problem;

  *kind = NAPKIN_N_ITEM_KINDS;
  *index = 0;
  if (problems->len == 0)
    return NULL;
  problem = problems->pdata[0];
  *kind = problem->kind;
  *index = problem->index;
  return napkin_error_summary (problem->message);
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
  g_autofree guint *column_start = NULL;
  g_autofree guint *by_column = NULL;
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

  /* The nodes of each column in topological order, found once (a scan of every node
   * per column made a long chain quadratic). */
  column_start = g_new0 (guint, max_level + 2);
  by_column = g_new (guint, n);
  for (guint v = 0; v < n; v++)
    column_start[level[v] + 1]++;
  for (int l = 0; l <= max_level; l++)
    column_start[l + 1] += column_start[l];
  {
    g_autofree guint *fill = g_memdup2 (column_start, sizeof (guint) * (max_level + 2));

    for (guint i = 0; i < n; i++)
      by_column[fill[level[order[i]]]++] = order[i];
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

        for (guint i = column_start[l]; i < column_start[l + 1]; i++)
          {
            guint v = by_column[i];
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

  /* In place: the diagram is the import's own, shared with no one and in no history
   * (a copy per operation made a large import slower). */
  for (guint v = 0; v < n; v++)
    {
      NapkinNode *node = napkin_diagram_get_item (d, NAPKIN_ITEM_NODE, v);

      node->x = MARGIN + level[v] * COLUMN;
      node->y = y[v];
    }
  napkin_diagram_changed (d);
}

/* ---------------------------------------------------------------- files */

NapkinDiagram *
napkin_import_file (const char  *path,
                    GError     **error)
{
  g_autofree char *text = NULL;
  gsize length = 0, start;
  const char *p;

  g_autofree char *shown = NULL;
  gssize bad;

  if (!(text = napkin_file_read_bounded (path, NAPKIN_MAX_FILE_SIZE, &length, error)))
    return NULL;
  /* A byte-order mark is not text: JSON and einsum alike start after it. */
  start = length >= 3 && memcmp (text, "\xef\xbb\xbf", 3) == 0 ? 3 : 0;
  for (p = text + start; p < text + length && g_ascii_isspace (*p); p++)
    ;
  /* JSON of any shape is a graph (a root that is not an object gets the graph's
   * error), everything else einsum text */
  if (p < text + length && (*p == '{' || *p == '['))
    return napkin_import_graph (text + start, length - start, path, error);
  if (memchr (text, '\0', length) != NULL || !g_utf8_validate (text, length, NULL))
    {
      bad = memchr (text, '\0', length) ? (char *) memchr (text, '\0', length) - text : 0;
      if (bad == 0)
        {
          const char *end = NULL;

          g_utf8_validate (text, length, &end);
          bad = end - text;
        }
      shown = napkin_text_shown (path, -1, 200);
      g_set_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                   _("%s: not UTF-8 text (byte %" G_GSSIZE_FORMAT ")"), shown, bad + 1);
      return NULL;
    }
  return napkin_import_einsum (text + start, path, error);
}
