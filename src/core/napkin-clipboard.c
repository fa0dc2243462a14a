/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <string.h>

#include "napkin-clipboard.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-file.h"

static gboolean
in_set (GHashTable *set,
        const char *key)
{
  return key != NULL && g_hash_table_contains (set, key);
}

static void
need_axis (NapkinDiagram *from,
           NapkinDiagram *to,
           const char    *name)
{
  int index;

  if (name == NULL || napkin_diagram_find_axis (to, name) >= 0)
    return;
  index = napkin_diagram_find_axis (from, name);
  if (index >= 0)
    napkin_diagram_insert_item (to, NAPKIN_ITEM_AXIS, napkin_diagram_n_axes (to),
                                napkin_item_copy (NAPKIN_ITEM_AXIS, napkin_diagram_axis (from, index)));
}

static void
need_axes (NapkinDiagram  *from,
           NapkinDiagram  *to,
           char          **names)
{
  for (guint i = 0; names && names[i]; i++)
    need_axis (from, to, names[i]);
}

char *
napkin_diagram_copy_nodes (NapkinDiagram     *self,
                           const char *const *ids,
                           gsize             *length)
{
  g_autoptr(NapkinDiagram) clip = napkin_diagram_new ();
  g_autoptr(GHashTable) chosen = g_hash_table_new (g_str_hash, g_str_equal);

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  for (guint i = 0; ids && ids[i]; i++)
    if (napkin_diagram_find_node (self, ids[i]) >= 0)
      g_hash_table_add (chosen, (gpointer) ids[i]);

  /* Axes first, in the source's order, then everything that refers to them. */
  for (guint n = 0; n < napkin_diagram_n_nodes (self); n++)
    {
      const NapkinNode *node = napkin_diagram_node (self, n);
      const NapkinTensorType *type = napkin_diagram_node_type (self, n);

      if (!in_set (chosen, node->id))
        continue;
      need_axes (self, clip, node->out);
      need_axis (self, clip, node->axis);
      need_axis (self, clip, node->rows);
      for (guint a = 0; type->valid && a < type->n_axes; a++)
        need_axis (self, clip, napkin_diagram_axis (self, type->axes[a])->name);
      if (node->tensor != NULL && napkin_diagram_find_tensor (clip, node->tensor) < 0)
        {
          int t = napkin_diagram_find_tensor (self, node->tensor);
          const NapkinTensor *tensor = napkin_diagram_tensor (self, t);

          need_axes (self, clip, tensor->axes);
          napkin_diagram_insert_item (clip, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (clip),
                                      napkin_item_copy (NAPKIN_ITEM_TENSOR, tensor));
        }
    }

  for (guint n = 0; n < napkin_diagram_n_nodes (self); n++)
    if (in_set (chosen, napkin_diagram_node (self, n)->id))
      napkin_diagram_insert_item (clip, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (clip),
                                  napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (self, n)));

  for (guint w = 0; w < napkin_diagram_n_wires (self); w++)
    {
      const NapkinWire *wire = napkin_diagram_wire (self, w);

      if (in_set (chosen, wire->from) && in_set (chosen, wire->to))
        napkin_diagram_insert_item (clip, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (clip),
                                    napkin_item_copy (NAPKIN_ITEM_WIRE, wire));
    }

  for (guint r = 0; r < napkin_diagram_n_regions (self); r++)
    {
      const NapkinRegion *region = napkin_diagram_region (self, r);
      gboolean all = region->nodes->len > 0;

      for (guint i = 0; i < region->nodes->len; i++)
        all &= in_set (chosen, g_ptr_array_index (region->nodes, i));
      if (!all)
        continue;
      for (guint m = 0; m < region->marks->len; m++)
        need_axis (self, clip, g_array_index (region->marks, NapkinMark, m).axis);
      napkin_diagram_insert_item (clip, NAPKIN_ITEM_REGION, napkin_diagram_n_regions (clip),
                                  napkin_item_copy (NAPKIN_ITEM_REGION, region));
    }

  return napkin_diagram_save_to_data (clip, length);
}

/* A name not yet used in `kind`: the name itself, else name_2, name_3, ... */
static char *
fresh_name (NapkinDiagram  *diagram,
            NapkinItemKind  kind,
            const char     *name)
{
  if (napkin_diagram_find (diagram, kind, name) < 0)
    return g_strdup (name);

  for (guint i = 2; ; i++)
    {
      g_autofree char *base = g_strndup (name, NAPKIN_MAX_NAME_LEN - 8);
      char *candidate = g_strdup_printf ("%s_%u", base, i);

      if (napkin_diagram_find (diagram, kind, candidate) < 0)
        return candidate;
      g_free (candidate);
    }
}

static void
rename_all (char       **names,
            GHashTable  *renames)
{
  for (guint i = 0; names && names[i]; i++)
    {
      const char *to = g_hash_table_lookup (renames, names[i]);

      if (to != NULL)
        {
          g_free (names[i]);
          names[i] = g_strdup (to);
        }
    }
}

static void
rename_one (char       **name,
            GHashTable  *renames)
{
  const char *to = *name ? g_hash_table_lookup (renames, *name) : NULL;

  if (to != NULL)
    {
      g_free (*name);
      *name = g_strdup (to);
    }
}

static gboolean
same_strv (char **a,
           char **b)
{
  guint n = a ? g_strv_length (a) : 0;

  if (n != (b ? g_strv_length (b) : 0))
    return FALSE;
  for (guint i = 0; i < n; i++)
    if (strcmp (a[i], b[i]) != 0)
      return FALSE;
  return TRUE;
}

gboolean
napkin_edit_paste (NapkinHistory  *history,
                   const char     *data,
                   gssize          length,
                   double          dx,
                   double          dy,
                   GPtrArray     **new_ids,
                   GError        **error)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (history);
  g_autoptr(NapkinDiagram) clip = NULL;
  g_autoptr(GHashTable) axis_renames = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) tensor_renames = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GHashTable) node_renames = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  g_autoptr(GPtrArray) ids = g_ptr_array_new_with_free_func (g_free);
  gboolean ok = TRUE;

  clip = napkin_diagram_load_from_data (data, length, NAPKIN_LOAD_DEFAULT, error);
  if (clip == NULL)
    return FALSE;

  napkin_history_begin_group (history, "Paste");

  /* Axes: same name and size is the same axis; a different size gets a new name. */
  for (guint i = 0; ok && i < napkin_diagram_n_axes (clip); i++)
    {
      const NapkinAxis *axis = napkin_diagram_axis (clip, i);
      int existing = napkin_diagram_find_axis (diagram, axis->name);
      g_autofree char *name = NULL;

      if (existing >= 0 && napkin_diagram_axis (diagram, existing)->size == axis->size)
        continue;
      name = fresh_name (diagram, NAPKIN_ITEM_AXIS, axis->name);
      if (strcmp (name, axis->name) != 0)
        g_hash_table_insert (axis_renames, g_strdup (axis->name), g_strdup (name));
      ok = napkin_edit_add_axis (history, name, axis->size, error);
    }

  /* Tensors: the same declaration is shared, anything else is added under a fresh name. */
  for (guint i = 0; ok && i < napkin_diagram_n_tensors (clip); i++)
    {
      NapkinTensor *tensor = napkin_item_copy (NAPKIN_ITEM_TENSOR, napkin_diagram_tensor (clip, i));
      int existing;

      rename_all (tensor->axes, axis_renames);
      existing = napkin_diagram_find_tensor (diagram, tensor->name);
      if (existing < 0 || !same_strv (napkin_diagram_tensor (diagram, existing)->axes, tensor->axes)
          || napkin_diagram_tensor (diagram, existing)->dtype != tensor->dtype)
        {
          char *name = fresh_name (diagram, NAPKIN_ITEM_TENSOR, tensor->name);

          if (strcmp (name, tensor->name) != 0)
            g_hash_table_insert (tensor_renames, g_strdup (tensor->name), g_strdup (name));
          g_free (tensor->name);
          tensor->name = name;
          ok = napkin_edit_add_tensor (history, tensor, error);
        }
      napkin_item_free (NAPKIN_ITEM_TENSOR, tensor);
    }

  for (guint i = 0; ok && i < napkin_diagram_n_nodes (clip); i++)
    {
      const NapkinNode *src = napkin_diagram_node (clip, i);
      char *id = fresh_name (diagram, NAPKIN_ITEM_NODE, src->id);

      /* Reserve the new id before the next node picks one. */
      g_hash_table_insert (node_renames, g_strdup (src->id), id);
      {
        NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, src);

        g_free (node->id);
        node->id = g_strdup (id);
        node->x += dx;
        node->y += dy;
        rename_all (node->out, axis_renames);
        rename_one (&node->axis, axis_renames);
        rename_one (&node->rows, axis_renames);
        rename_one (&node->tensor, tensor_renames);
        ok = napkin_edit_add_node (history, node, error);
        napkin_item_free (NAPKIN_ITEM_NODE, node);
      }
      g_ptr_array_add (ids, g_strdup (id));
    }

  for (guint i = 0; ok && i < napkin_diagram_n_wires (clip); i++)
    {
      const NapkinWire *wire = napkin_diagram_wire (clip, i);

      ok = napkin_edit_connect (history, g_hash_table_lookup (node_renames, wire->from),
                                g_hash_table_lookup (node_renames, wire->to), wire->port, error);
    }

  for (guint i = 0; ok && i < napkin_diagram_n_regions (clip); i++)
    {
      NapkinRegion *region = napkin_item_copy (NAPKIN_ITEM_REGION, napkin_diagram_region (clip, i));
      char *name = fresh_name (diagram, NAPKIN_ITEM_REGION, region->name);

      g_free (region->name);
      region->name = name;
      for (guint n = 0; n < region->nodes->len; n++)
        {
          char **slot = (char **) &g_ptr_array_index (region->nodes, n);
          rename_one (slot, node_renames);
        }
      for (guint m = 0; m < region->marks->len; m++)
        rename_one (&g_array_index (region->marks, NapkinMark, m).axis, axis_renames);
      region->x += dx;
      region->y += dy;
      ok = napkin_edit_add_region (history, region, error);
      napkin_item_free (NAPKIN_ITEM_REGION, region);
    }

  if (!ok)
    {
      napkin_history_cancel_group (history);
      return FALSE;
    }

  napkin_history_end_group (history);
  if (new_ids != NULL)
    *new_ids = g_steal_pointer (&ids);
  return TRUE;
}
