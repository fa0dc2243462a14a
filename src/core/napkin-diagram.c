/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <string.h>

#include "napkin-diagram.h"
#include "napkin-expr.h"
#include "napkin-error.h"

#define MAX_INPUTS 2

struct _NapkinDiagram
{
  GObject      parent_instance;

  char        *title;
  char        *description;
  GPtrArray   *items[NAPKIN_N_ITEM_KINDS];
  NapkinView   view;
  json_object *extra;
  NapkinGpusRegion *gpus;                    /* the level above device memory, or NULL */
  guint64      generation;
  guint        freeze_count;
  gboolean     changed_while_frozen;

  /* Derived data, rebuilt when cache_generation != generation. */
  guint64      cache_generation;
  gboolean     cache_valid;
  GHashTable  *index[NAPKIN_N_ITEM_KINDS];   /* key -> index + 1, first occurrence */
  int         *sources;                      /* node * MAX_INPUTS + port -> node or -1 */
  int         *source_wires;                 /* same, -> wire index or -1 */
  guint       *consumer_offsets;             /* n_nodes + 1 */
  guint       *consumers;
  guint       *topo;                         /* NULL when cyclic */
  NapkinTensorType *types;
};

G_DEFINE_FINAL_TYPE (NapkinDiagram, napkin_diagram, G_TYPE_OBJECT)
G_DEFINE_QUARK (napkin-document-error-quark, napkin_document_error)

enum {
  CHANGED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
clear_cache (NapkinDiagram *self)
{
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    g_clear_pointer (&self->index[k], g_hash_table_unref);
  g_clear_pointer (&self->sources, g_free);
  g_clear_pointer (&self->source_wires, g_free);
  g_clear_pointer (&self->consumer_offsets, g_free);
  g_clear_pointer (&self->consumers, g_free);
  g_clear_pointer (&self->topo, g_free);
  g_clear_pointer (&self->types, g_free);
  self->cache_valid = FALSE;
}

static void
free_axis (NapkinAxis *axis)
{
  g_free (axis->name);
  g_clear_pointer (&axis->extra, json_object_put);
  g_free (axis);
}

static void
free_tensor (NapkinTensor *tensor)
{
  g_free (tensor->name);
  g_strfreev (tensor->axes);
  g_clear_pointer (&tensor->extra, json_object_put);
  g_free (tensor);
}

static void
free_node (NapkinNode *node)
{
  g_free (node->id);
  g_free (node->label);
  g_free (node->tensor);
  g_strfreev (node->out);
  g_free (node->axis);
  g_free (node->rows);
  g_free (node->alpha_expr);
  g_clear_pointer (&node->extra, json_object_put);
  g_free (node);
}

static void
free_wire (NapkinWire *wire)
{
  g_free (wire->from);
  g_free (wire->to);
  g_clear_pointer (&wire->extra, json_object_put);
  g_free (wire);
}

static void
free_region (NapkinRegion *region)
{
  g_free (region->name);
  g_ptr_array_unref (region->nodes);
  g_clear_pointer (&region->node_set, g_hash_table_unref);
  for (guint i = 0; i < region->marks->len; i++)
    g_free (g_array_index (region->marks, NapkinMark, i).axis);
  g_array_unref (region->marks);
  g_clear_pointer (&region->extra, json_object_put);
  g_free (region);
}

void
napkin_item_free (NapkinItemKind kind,
                  gpointer       item)
{
  if (item == NULL)
    return;

  switch (kind)
    {
    case NAPKIN_ITEM_AXIS:   free_axis (item); break;
    case NAPKIN_ITEM_TENSOR: free_tensor (item); break;
    case NAPKIN_ITEM_NODE:   free_node (item); break;
    case NAPKIN_ITEM_WIRE:   free_wire (item); break;
    case NAPKIN_ITEM_REGION: free_region (item); break;
    case NAPKIN_N_ITEM_KINDS:
    default:
      g_assert_not_reached ();
    }
}

static json_object *
extra_ref (json_object *extra)
{
  /* Extras are never modified after loading, so copies share them. */
  return extra != NULL ? json_object_get (extra) : NULL;
}

gpointer
napkin_item_copy (NapkinItemKind kind,
                  gconstpointer  item)
{
  switch (kind)
    {
    case NAPKIN_ITEM_AXIS:
      {
        const NapkinAxis *src = item;
        NapkinAxis *dst = g_new0 (NapkinAxis, 1);

        dst->name = g_strdup (src->name);
        dst->size = src->size;
        dst->extra = extra_ref (src->extra);
        return dst;
      }
    case NAPKIN_ITEM_TENSOR:
      {
        const NapkinTensor *src = item;
        NapkinTensor *dst = g_new0 (NapkinTensor, 1);

        dst->name = g_strdup (src->name);
        dst->axes = g_strdupv (src->axes);
        dst->dtype = src->dtype;
        dst->extra = extra_ref (src->extra);
        return dst;
      }
    case NAPKIN_ITEM_NODE:
      {
        const NapkinNode *src = item;
        NapkinNode *dst = g_memdup2 (src, sizeof *src);

        dst->id = g_strdup (src->id);
        dst->label = g_strdup (src->label);
        dst->tensor = g_strdup (src->tensor);
        dst->out = g_strdupv (src->out);
        dst->axis = g_strdup (src->axis);
        dst->rows = g_strdup (src->rows);
        dst->alpha_expr = g_strdup (src->alpha_expr);
        dst->extra = extra_ref (src->extra);
        return dst;
      }
    case NAPKIN_ITEM_WIRE:
      {
        const NapkinWire *src = item;
        NapkinWire *dst = g_new0 (NapkinWire, 1);

        dst->from = g_strdup (src->from);
        dst->to = g_strdup (src->to);
        dst->port = src->port;
        dst->extra = extra_ref (src->extra);
        return dst;
      }
    case NAPKIN_ITEM_REGION:
      {
        const NapkinRegion *src = item;
        NapkinRegion *dst = g_memdup2 (src, sizeof *src);

        dst->name = g_strdup (src->name);
        dst->nodes = g_ptr_array_new_full (src->nodes->len, g_free);
        dst->node_set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
        for (guint i = 0; i < src->nodes->len; i++)
          {
            const char *id = g_ptr_array_index (src->nodes, i);

            g_ptr_array_add (dst->nodes, g_strdup (id));
            g_hash_table_add (dst->node_set, g_strdup (id));
          }
        dst->marks = g_array_sized_new (FALSE, FALSE, sizeof (NapkinMark), src->marks->len);
        for (guint i = 0; i < src->marks->len; i++)
          {
            NapkinMark mark = g_array_index (src->marks, NapkinMark, i);

            mark.axis = g_strdup (mark.axis);
            g_array_append_val (dst->marks, mark);
          }
        dst->extra = extra_ref (src->extra);
        return dst;
      }
    case NAPKIN_N_ITEM_KINDS:
    default:
      g_assert_not_reached ();
    }
}

char *
napkin_item_key (NapkinItemKind kind,
                 gconstpointer  item)
{
  switch (kind)
    {
    case NAPKIN_ITEM_AXIS:   return g_strdup (((const NapkinAxis *) item)->name);
    case NAPKIN_ITEM_TENSOR: return g_strdup (((const NapkinTensor *) item)->name);
    case NAPKIN_ITEM_NODE:   return g_strdup (((const NapkinNode *) item)->id);
    case NAPKIN_ITEM_REGION: return g_strdup (((const NapkinRegion *) item)->name);
    case NAPKIN_ITEM_WIRE:
      {
        const NapkinWire *wire = item;
        return g_strdup_printf ("%s:%u", wire->to ? wire->to : "", wire->port);
      }
    case NAPKIN_N_ITEM_KINDS:
    default:
      g_assert_not_reached ();
    }
}

NapkinNode *
napkin_node_new (const char   *id,
                 NapkinOpKind  kind)
{
  NapkinNode *node = g_new0 (NapkinNode, 1);

  node->id = g_strdup (id);
  node->kind = kind;
  node->alpha = 1.0;
  node->eps = 1e-5;
  node->left = -1;
  node->right = -1;
  return node;
}

NapkinRegion *
napkin_region_new (const char  *name,
                   NapkinLevel  level)
{
  NapkinRegion *region = g_new0 (NapkinRegion, 1);

  region->name = g_strdup (name);
  region->level = level;
  region->nodes = g_ptr_array_new_with_free_func (g_free);
  region->node_set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  region->marks = g_array_new (FALSE, FALSE, sizeof (NapkinMark));
  region->stages = 1;
  return region;
}

void
napkin_region_set_mark (NapkinRegion   *region,
                        const char     *axis,
                        NapkinMarkKind  kind,
                        gint64          tile)
{
  for (guint i = 0; i < region->marks->len; i++)
    {
      NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);

      if (g_strcmp0 (mark->axis, axis) == 0)
        {
          mark->kind = kind;
          mark->tile = tile;
          return;
        }
    }

  {
    NapkinMark mark = { g_strdup (axis), kind, tile };
    g_array_append_val (region->marks, mark);
  }
}

NapkinMarkKind
napkin_region_mark (const NapkinRegion *region,
                    const char         *axis,
                    gint64             *tile)
{
  for (guint i = 0; i < region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);

      if (g_strcmp0 (mark->axis, axis) == 0)
        {
          if (tile != NULL)
            *tile = mark->tile;
          return mark->kind;
        }
    }

  if (tile != NULL)
    *tile = 0;
  return NAPKIN_MARK_WHOLE;
}

gboolean
napkin_diagram_node_uses_axis (NapkinDiagram *self,
                               guint          node,
                               guint          axis)
{
  const NapkinNode *op = napkin_diagram_node (self, node);

  if (napkin_tensor_type_has_axis (napkin_diagram_node_type (self, node), axis))
    return TRUE;
  for (guint p = 0; p < napkin_op_n_inputs (op); p++)
    {
      int src = napkin_diagram_input_source (self, node, p);

      if (src >= 0 && napkin_tensor_type_has_axis (napkin_diagram_node_type (self, src), axis))
        return TRUE;
    }
  return FALSE;
}

gboolean
napkin_region_uses_axis (NapkinDiagram      *self,
                         const NapkinRegion *region,
                         guint               axis)
{
  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (self, g_ptr_array_index (region->nodes, i));

      if (n >= 0 && napkin_diagram_node_uses_axis (self, n, axis))
        return TRUE;
    }
  return FALSE;
}

gboolean
napkin_region_sums_axis (NapkinDiagram      *self,
                         const NapkinRegion *region,
                         guint               axis,
                         guint              *n_products)
{
  gboolean summed = FALSE;
  guint products = 0;

  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (self, g_ptr_array_index (region->nodes, i));
      const NapkinTensorType *out;

      if (n < 0 || napkin_diagram_node (self, n)->kind != NAPKIN_OP_CONTRACT)
        continue;
      products++;
      out = napkin_diagram_node_type (self, n);
      for (guint p = 0; p < 2; p++)
        {
          int src = napkin_diagram_input_source (self, n, p);

          if (src >= 0 && napkin_tensor_type_has_axis (napkin_diagram_node_type (self, src), axis)
              && out->valid && !napkin_tensor_type_has_axis (out, axis))
            summed = TRUE;
        }
    }
  if (n_products != NULL)
    *n_products = products;
  return summed;
}

gboolean
napkin_region_reduces_axis (NapkinDiagram      *self,
                            const NapkinRegion *region,
                            const char         *axis)
{
  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (self, g_ptr_array_index (region->nodes, i));
      const NapkinNode *node = n >= 0 ? napkin_diagram_node (self, n) : NULL;

      if (node != NULL && g_strcmp0 (node->axis, axis) == 0
          && (node->kind == NAPKIN_OP_REDUCE || node->kind == NAPKIN_OP_SOFTMAX || node->kind == NAPKIN_OP_NORMALIZE))
        return TRUE;
    }
  return FALSE;
}

/* Membership is asked inside loops over operations (the model, tune, the lowering):
 * a scan of the list made analysing 100 000 operations in one region take 21 s. */
gboolean
napkin_region_has_node (const NapkinRegion *region,
                        const char         *id)
{
  if (id == NULL)
    return FALSE;
  /* A list changed behind the set's back is scanned, never re-indexed here: this
   * getter must stay safe to call from several threads. */
  if (G_LIKELY (region->node_set != NULL && g_hash_table_size (region->node_set) == region->nodes->len))
    return g_hash_table_contains (region->node_set, id);
  for (guint i = 0; i < region->nodes->len; i++)
    {
      if (g_strcmp0 (g_ptr_array_index (region->nodes, i), id) == 0)
        return TRUE;
    }
  return FALSE;
}

gboolean
napkin_region_add_node (NapkinRegion *region,
                        const char   *id)
{
  g_return_val_if_fail (region != NULL && id != NULL, FALSE);

  if (region->node_set == NULL)
    region->node_set = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  if (napkin_region_has_node (region, id))
    return FALSE;
  g_hash_table_add (region->node_set, g_strdup (id));
  g_ptr_array_add (region->nodes, g_strdup (id));
  return TRUE;
}

gboolean
napkin_region_remove_node (NapkinRegion *region,
                           const char   *id)
{
  g_return_val_if_fail (region != NULL && id != NULL, FALSE);

  for (guint i = 0; i < region->nodes->len; i++)
    if (g_strcmp0 (g_ptr_array_index (region->nodes, i), id) == 0)
      {
        if (region->node_set != NULL)
          g_hash_table_remove (region->node_set, id);
        g_ptr_array_remove_index (region->nodes, i);
        return TRUE;
      }
  return FALSE;
}

void
napkin_region_clear_nodes (NapkinRegion *region)
{
  g_return_if_fail (region != NULL);

  g_ptr_array_set_size (region->nodes, 0);
  if (region->node_set != NULL)
    g_hash_table_remove_all (region->node_set);
}

static void
napkin_diagram_finalize (GObject *object)
{
  NapkinDiagram *self = NAPKIN_DIAGRAM (object);

  clear_cache (self);
  g_clear_pointer (&self->title, g_free);
  g_clear_pointer (&self->description, g_free);
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    g_clear_pointer (&self->items[k], g_ptr_array_unref);
  g_clear_pointer (&self->view.extra, json_object_put);
  g_clear_pointer (&self->extra, json_object_put);
  g_clear_pointer (&self->gpus, napkin_gpus_region_free);

  G_OBJECT_CLASS (napkin_diagram_parent_class)->finalize (object);
}

static void
napkin_diagram_class_init (NapkinDiagramClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = napkin_diagram_finalize;

  /**
   * NapkinDiagram::changed:
   *
   * Emitted after any change to the diagram's items.
   */
  signals[CHANGED] = g_signal_new ("changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                   0, NULL, NULL, NULL, G_TYPE_NONE, 0);
}

static void item_free_axis (gpointer p)   { napkin_item_free (NAPKIN_ITEM_AXIS, p); }
static void item_free_tensor (gpointer p) { napkin_item_free (NAPKIN_ITEM_TENSOR, p); }
static void item_free_node (gpointer p)   { napkin_item_free (NAPKIN_ITEM_NODE, p); }
static void item_free_wire (gpointer p)   { napkin_item_free (NAPKIN_ITEM_WIRE, p); }
static void item_free_region (gpointer p) { napkin_item_free (NAPKIN_ITEM_REGION, p); }

static void
napkin_diagram_init (NapkinDiagram *self)
{
  static const GDestroyNotify frees[NAPKIN_N_ITEM_KINDS] = {
    item_free_axis, item_free_tensor, item_free_node, item_free_wire, item_free_region,
  };

  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    self->items[k] = g_ptr_array_new_with_free_func (frees[k]);
  self->view.zoom = 1.0;
  self->generation = 1;
}

NapkinDiagram *
napkin_diagram_new (void)
{
  return g_object_new (NAPKIN_TYPE_DIAGRAM, NULL);
}

NapkinDiagram *
napkin_diagram_copy (NapkinDiagram *self)
{
  NapkinDiagram *copy;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  copy = napkin_diagram_new ();
  copy->title = g_strdup (self->title);
  copy->description = g_strdup (self->description);
  copy->view = self->view;
  copy->view.extra = extra_ref (self->view.extra);
  copy->extra = extra_ref (self->extra);
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    for (guint i = 0; i < self->items[k]->len; i++)
      g_ptr_array_add (copy->items[k], napkin_item_copy (k, g_ptr_array_index (self->items[k], i)));
  if (self->gpus != NULL)
    copy->gpus = napkin_gpus_region_copy (self->gpus, TRUE);

  return copy;
}

/* Drops the slots from `len` on without freeing them (they were moved or freed). */
static void
shrink_items (GPtrArray *items,
              guint      len)
{
  while (items->len > len)
    g_ptr_array_steal_index_fast (items, items->len - 1);
}

NapkinDiagram *
napkin_diagram_copy_bypassing (NapkinDiagram  *self,
                               const gboolean *bypass)
{
  NapkinDiagram *copy;
  guint n_nodes, n_wires, kept = 0;
  g_autoptr(GHashTable) feeder = g_hash_table_new (g_str_hash, g_str_equal);
  GPtrArray *wires, *nodes;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail (bypass != NULL, NULL);

  copy = napkin_diagram_copy (self);
  wires = copy->items[NAPKIN_ITEM_WIRE];
  nodes = copy->items[NAPKIN_ITEM_NODE];
  n_nodes = nodes->len;
  n_wires = wires->len;
  /* what feeds each bypassed node's first input (the original's strings: they outlive
   * the copy's edits) */
  for (guint w = 0; w < n_wires; w++)
    {
      const NapkinWire *wire = napkin_diagram_wire (self, w);
      int to = napkin_diagram_find_node (self, wire->to);

      if (to >= 0 && bypass[to] && wire->port == 0)
        g_hash_table_insert (feeder, wire->to, wire->from);
    }
  /* wires out of a bypassed node leave from its feeder (through chains of them);
   * wires into one go */
  for (guint w = 0; w < n_wires; w++)
    {
      NapkinWire *wire = g_ptr_array_index (wires, w);
      int to = napkin_diagram_find_node (self, wire->to);
      const char *from = napkin_diagram_wire (self, w)->from;

      if (to >= 0 && bypass[to])
        {
          napkin_item_free (NAPKIN_ITEM_WIRE, wire);
          continue;
        }
      if (g_hash_table_contains (feeder, from))
        {
          while (g_hash_table_contains (feeder, from))
            from = g_hash_table_lookup (feeder, from);
          g_free (wire->from);
          wire->from = g_strdup (from);
        }
      g_ptr_array_index (wires, kept++) = wire;
    }
  shrink_items (wires, kept);
  kept = 0;
  for (guint n = 0; n < n_nodes; n++)
    {
      NapkinNode *node = g_ptr_array_index (nodes, n);

      if (!bypass[n])
        {
          g_ptr_array_index (nodes, kept++) = node;
          continue;
        }
      for (guint r = 0; r < copy->items[NAPKIN_ITEM_REGION]->len; r++)
        napkin_region_remove_node (g_ptr_array_index (copy->items[NAPKIN_ITEM_REGION], r), node->id);
      napkin_item_free (NAPKIN_ITEM_NODE, node);
    }
  shrink_items (nodes, kept);
  napkin_diagram_changed (copy);
  return copy;
}

const char *
napkin_tensor_get_constant (const NapkinTensor *tensor)
{
  json_object *c = NULL;

  g_return_val_if_fail (tensor != NULL, NULL);
  if (tensor->extra == NULL || !json_object_object_get_ex (tensor->extra, "constant", &c)
      || !json_object_is_type (c, json_type_string))
    return NULL;
  return json_object_get_string (c);
}

NapkinDiagram *
napkin_diagram_copy_without_extras (NapkinDiagram *self)
{
  NapkinDiagram *copy;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  copy = napkin_diagram_copy (self);
  g_clear_pointer (&copy->view.extra, json_object_put);
  g_clear_pointer (&copy->extra, json_object_put);
  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    for (guint i = 0; i < copy->items[k]->len; i++)
      {
        gpointer item = g_ptr_array_index (copy->items[k], i);
        json_object **extra = NULL;

        switch (k)
          {
          case NAPKIN_ITEM_AXIS:   extra = &((NapkinAxis *) item)->extra; break;
          case NAPKIN_ITEM_TENSOR: extra = &((NapkinTensor *) item)->extra; break;
          case NAPKIN_ITEM_NODE:   extra = &((NapkinNode *) item)->extra; break;
          case NAPKIN_ITEM_WIRE:   extra = &((NapkinWire *) item)->extra; break;
          case NAPKIN_ITEM_REGION: extra = &((NapkinRegion *) item)->extra; break;
          default: g_assert_not_reached ();
          }
        /* a tensor's constant (the rotary's rotate_half matrix: docs/import.md) is what
         * the tensor holds, not an unknown field: kept, in an object of the copy's own */
        if (k == NAPKIN_ITEM_TENSOR && napkin_tensor_get_constant (item) != NULL)
          {
            json_object *own = json_object_new_object ();

            json_object_object_add (own, "constant", json_object_new_string (napkin_tensor_get_constant (item)));
            json_object_put (*extra);
            *extra = own;
            continue;
          }
        g_clear_pointer (extra, json_object_put);
      }
  if (copy->gpus != NULL)
    {
      NapkinGpusRegion *bare = napkin_gpus_region_copy (copy->gpus, FALSE);

      napkin_gpus_region_free (copy->gpus);
      copy->gpus = bare;
    }
  return copy;
}

const char *
napkin_diagram_get_title (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  return self->title;
}

void
napkin_diagram_set_title (NapkinDiagram *self,
                          const char    *title)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  if (g_strcmp0 (self->title, title) == 0)
    return;
  g_free (self->title);
  self->title = g_strdup (title);
  napkin_diagram_changed (self);
}

const char *
napkin_diagram_get_description (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  return self->description;
}

void
napkin_diagram_set_description (NapkinDiagram *self,
                                const char    *description)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  if (g_strcmp0 (self->description, description) == 0)
    return;
  g_free (self->description);
  self->description = g_strdup (description);
  napkin_diagram_changed (self);
}

NapkinView *
napkin_diagram_get_view (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  return &self->view;
}

json_object *
napkin_diagram_get_extra (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  return self->extra;
}

void
napkin_diagram_set_extra (NapkinDiagram *self,
                          json_object   *extra)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  g_clear_pointer (&self->extra, json_object_put);
  self->extra = extra_ref (extra);
}

guint64
napkin_diagram_get_generation (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), 0);
  return self->generation;
}

void
napkin_diagram_changed (NapkinDiagram *self)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  self->generation++;
  if (self->freeze_count > 0)
    self->changed_while_frozen = TRUE;
  else
    g_signal_emit (self, signals[CHANGED], 0);
}

void
napkin_diagram_freeze_changed (NapkinDiagram *self)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));
  self->freeze_count++;
}

void
napkin_diagram_thaw_changed (NapkinDiagram *self)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));
  g_return_if_fail (self->freeze_count > 0);

  if (--self->freeze_count == 0 && self->changed_while_frozen)
    {
      self->changed_while_frozen = FALSE;
      g_signal_emit (self, signals[CHANGED], 0);
    }
}

guint
napkin_diagram_count (NapkinDiagram  *self,
                      NapkinItemKind  kind)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), 0);
  g_return_val_if_fail ((guint) kind < NAPKIN_N_ITEM_KINDS, 0);
  return self->items[kind]->len;
}

gpointer
napkin_diagram_get_item (NapkinDiagram  *self,
                         NapkinItemKind  kind,
                         guint           index)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail ((guint) kind < NAPKIN_N_ITEM_KINDS, NULL);
  g_return_val_if_fail (index < self->items[kind]->len, NULL);
  return g_ptr_array_index (self->items[kind], index);
}

static gboolean
axis_size_lookup (const char *name,
                  double     *value,
                  gpointer    user_data)
{
  NapkinDiagram *self = user_data;
  int a = napkin_diagram_find_axis (self, name);

  if (a < 0)
    return FALSE;
  *value = (double) napkin_diagram_axis_size (self, a);
  return TRUE;
}

gboolean
napkin_diagram_eval_expr (NapkinDiagram  *self,
                          const char     *text,
                          double         *value,
                          GError        **error)
{
  g_autoptr(NapkinExpr) expr = NULL;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);
  g_return_val_if_fail (text != NULL, FALSE);

  expr = napkin_expr_parse (text, error);
  return expr != NULL && napkin_expr_eval (expr, axis_size_lookup, self, value, error);
}

gboolean
napkin_diagram_eval_alpha (NapkinDiagram  *self,
                           NapkinNode     *node,
                           GError        **error)
{
  double value;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);
  g_return_val_if_fail (node != NULL, FALSE);

  if (node->alpha_expr == NULL)
    return TRUE;
  if (!napkin_diagram_eval_expr (self, node->alpha_expr, &value, error))
    return FALSE;
  node->alpha = value;
  return TRUE;
}

/* A parameter written as an expression of axis sizes follows them (napkin-expr.h):
 * after an axis changes, every such node; after an operation changes, that one. */
static void
follow_axes (NapkinDiagram  *self,
             NapkinItemKind  kind,
             gpointer        item)
{
  /* the change is made but not yet counted (napkin_diagram_changed): the index, which
   * borrows the items' names, may hold one just freed, so the lookups rebuild it */
  clear_cache (self);
  if (kind == NAPKIN_ITEM_NODE)
    napkin_diagram_eval_alpha (self, item, NULL);
  else if (kind == NAPKIN_ITEM_AXIS)
    for (guint n = 0; n < self->items[NAPKIN_ITEM_NODE]->len; n++)
      {
        NapkinNode *node = g_ptr_array_index (self->items[NAPKIN_ITEM_NODE], n);

        if (node->alpha_expr != NULL)
          napkin_diagram_eval_alpha (self, node, NULL);
      }
}

void
napkin_diagram_insert_item (NapkinDiagram  *self,
                            NapkinItemKind  kind,
                            guint           index,
                            gpointer        item)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));
  g_return_if_fail (index <= self->items[kind]->len);

  g_ptr_array_insert (self->items[kind], index, item);
  follow_axes (self, kind, item);
  napkin_diagram_changed (self);
}

gpointer
napkin_diagram_steal_item (NapkinDiagram  *self,
                           NapkinItemKind  kind,
                           guint           index)
{
  gpointer item;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail (index < self->items[kind]->len, NULL);

  item = g_ptr_array_steal_index (self->items[kind], index);
  napkin_diagram_changed (self);
  return item;
}

void
napkin_diagram_replace_item (NapkinDiagram  *self,
                             NapkinItemKind  kind,
                             guint           index,
                             gpointer        item)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));
  g_return_if_fail (index < self->items[kind]->len);

  napkin_item_free (kind, g_ptr_array_index (self->items[kind], index));
  g_ptr_array_index (self->items[kind], index) = item;
  follow_axes (self, kind, item);
  napkin_diagram_changed (self);
}

/* ---- derived data ---------------------------------------------------------------------- */

guint
napkin_op_n_inputs (const NapkinNode *node)
{
  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
      return 0;
    case NAPKIN_OP_CONTRACT:
      return 2;
    case NAPKIN_OP_MASK:
      return node->mask == NAPKIN_MASK_TENSOR ? 2 : 1;
    case NAPKIN_OP_MAP:
      return napkin_fn_info (node->fn)->arity;
    case NAPKIN_OP_OUTPUT:
    case NAPKIN_OP_REDUCE:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
    case NAPKIN_OP_REARRANGE:
      return 1;
    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }
}

static gboolean
axes_to_type (const NapkinTypeLookup *lookup,
              char                  **names,
              NapkinTensorType       *type)
{
  guint n = names ? g_strv_length (names) : 0;

  if (n > NAPKIN_MAX_RANK)
    return FALSE;

  type->n_axes = n;
  for (guint i = 0; i < n; i++)
    {
      int axis = lookup->axis (lookup->data, names[i]);

      if (axis < 0)
        return FALSE;
      type->axes[i] = axis;
    }

  return TRUE;
}

gboolean
napkin_tensor_type_has_axis (const NapkinTensorType *type,
                             guint                   axis)
{
  for (guint i = 0; i < type->n_axes; i++)
    if (type->axes[i] == axis)
      return TRUE;
  return FALSE;
}

void
napkin_node_infer_type (const NapkinNode              *node,
                        const NapkinTensorType * const *inputs,
                        const NapkinTypeLookup         *lookup,
                        NapkinTensorType               *type)
{
  const NapkinTensorType *in[MAX_INPUTS] = { NULL, NULL };
  guint n_inputs = napkin_op_n_inputs (node);

  memset (type, 0, sizeof *type);

  for (guint p = 0; p < n_inputs && p < MAX_INPUTS; p++)
    {
      if (inputs[p] == NULL || !inputs[p]->valid)
        return;
      in[p] = inputs[p];
    }

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
      {
        const NapkinTensor *tensor = node->tensor ? lookup->tensor (lookup->data, node->tensor) : NULL;

        if (tensor == NULL || !axes_to_type (lookup, tensor->axes, type))
          return;
        type->dtype = tensor->dtype;
        break;
      }

    case NAPKIN_OP_OUTPUT:
    case NAPKIN_OP_SOFTMAX:
    case NAPKIN_OP_NORMALIZE:
    case NAPKIN_OP_MASK:
      *type = *in[0];
      break;

    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_REARRANGE:
      if (!axes_to_type (lookup, node->out, type))
        return;
      type->dtype = in[0]->dtype;
      break;

    case NAPKIN_OP_MAP:
      if (node->out != NULL)
        {
          if (!axes_to_type (lookup, node->out, type))
            return;
        }
      else
        {
          /* Broadcast: the first operand's axes, then those only the second has. */
          *type = *in[0];
          for (guint p = 1; p < n_inputs; p++)
            for (guint i = 0; i < in[p]->n_axes; i++)
              if (!napkin_tensor_type_has_axis (type, in[p]->axes[i]))
                {
                  if (type->n_axes == NAPKIN_MAX_RANK)
                    return;
                  type->axes[type->n_axes++] = in[p]->axes[i];
                }
        }
      type->dtype = in[0]->dtype;
      break;

    case NAPKIN_OP_REDUCE:
      {
        int axis = node->axis ? lookup->axis (lookup->data, node->axis) : -1;

        if (axis < 0)
          return;
        type->n_axes = 0;
        for (guint i = 0; i < in[0]->n_axes; i++)
          if (in[0]->axes[i] != (guint) axis)
            type->axes[type->n_axes++] = in[0]->axes[i];
        type->dtype = in[0]->dtype;
        break;
      }

    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }

  if (node->has_dtype)
    type->dtype = node->dtype;
  type->valid = TRUE;
}

/* The cache's own lookups, through its index. */
static int
cache_axis (gpointer    data,
            const char *name)
{
  NapkinDiagram *self = data;
  gpointer v = g_hash_table_lookup (self->index[NAPKIN_ITEM_AXIS], name);

  return v ? (int) GPOINTER_TO_UINT (v) - 1 : -1;
}

static const NapkinTensor *
cache_tensor (gpointer    data,
              const char *name)
{
  NapkinDiagram *self = data;
  gpointer v = g_hash_table_lookup (self->index[NAPKIN_ITEM_TENSOR], name);

  return v ? g_ptr_array_index (self->items[NAPKIN_ITEM_TENSOR], GPOINTER_TO_UINT (v) - 1) : NULL;
}

static void
infer_type (NapkinDiagram *self,
            guint          n)
{
  const NapkinTypeLookup lookup = { cache_axis, cache_tensor, self };
  const NapkinTensorType *in[MAX_INPUTS];

  for (guint p = 0; p < MAX_INPUTS; p++)
    {
      int src = self->sources[n * MAX_INPUTS + p];

      in[p] = src >= 0 ? &self->types[src] : NULL;
    }
  napkin_node_infer_type (g_ptr_array_index (self->items[NAPKIN_ITEM_NODE], n), in, &lookup, &self->types[n]);
}

/* The name an axis, tensor, node or region is found by (napkin_item_key without the
 * copy). */
static const char *
item_name (NapkinItemKind kind,
           gconstpointer  item)
{
  switch (kind)
    {
    case NAPKIN_ITEM_AXIS:   return ((const NapkinAxis *) item)->name;
    case NAPKIN_ITEM_TENSOR: return ((const NapkinTensor *) item)->name;
    case NAPKIN_ITEM_NODE:   return ((const NapkinNode *) item)->id;
    case NAPKIN_ITEM_REGION: return ((const NapkinRegion *) item)->name;
    case NAPKIN_ITEM_WIRE:
    case NAPKIN_N_ITEM_KINDS:
    default:
      g_assert_not_reached ();
    }
}

/* The wires by "to:port", on first use after a change: only the editor asks. */
static void
index_wires (NapkinDiagram *self)
{
  if (self->index[NAPKIN_ITEM_WIRE] != NULL)
    return;
  self->index[NAPKIN_ITEM_WIRE] = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, NULL);
  for (guint i = 0; i < self->items[NAPKIN_ITEM_WIRE]->len; i++)
    {
      char *key = napkin_item_key (NAPKIN_ITEM_WIRE, g_ptr_array_index (self->items[NAPKIN_ITEM_WIRE], i));

      if (g_hash_table_contains (self->index[NAPKIN_ITEM_WIRE], key))
        g_free (key);
      else
        g_hash_table_insert (self->index[NAPKIN_ITEM_WIRE], key, GUINT_TO_POINTER (i + 1));
    }
}

static void
ensure_cache (NapkinDiagram *self)
{
  guint n_nodes, n_wires;
  guint *in_degree;
  guint *fill;
  GQueue queue = G_QUEUE_INIT;
  guint n_sorted = 0;

  if (self->cache_valid && self->cache_generation == self->generation)
    return;

  clear_cache (self);

  for (guint k = 0; k < NAPKIN_N_ITEM_KINDS; k++)
    if (k != NAPKIN_ITEM_WIRE)   /* wires: built when one is looked up (index_wires) */
      {
        /* The keys are the items' own names: the index is rebuilt after any change,
         * before an item that was freed could be looked up through it. */
        self->index[k] = g_hash_table_new (g_str_hash, g_str_equal);
        for (guint i = 0; i < self->items[k]->len; i++)
          {
            const char *key = item_name (k, g_ptr_array_index (self->items[k], i));

            if (key != NULL && !g_hash_table_contains (self->index[k], key))
              g_hash_table_insert (self->index[k], (gpointer) key, GUINT_TO_POINTER (i + 1));
          }
      }

  n_nodes = self->items[NAPKIN_ITEM_NODE]->len;
  n_wires = self->items[NAPKIN_ITEM_WIRE]->len;
  self->sources = g_new (int, (gsize) n_nodes * MAX_INPUTS + 1);
  self->source_wires = g_new (int, (gsize) n_nodes * MAX_INPUTS + 1);
  for (guint i = 0; i < n_nodes * MAX_INPUTS; i++)
    self->sources[i] = self->source_wires[i] = -1;

  self->consumer_offsets = g_new0 (guint, n_nodes + 1);
  in_degree = g_new0 (guint, n_nodes + 1);

  for (guint w = 0; w < n_wires; w++)
    {
      const NapkinWire *wire = g_ptr_array_index (self->items[NAPKIN_ITEM_WIRE], w);
      gpointer from = g_hash_table_lookup (self->index[NAPKIN_ITEM_NODE], wire->from);
      gpointer to = g_hash_table_lookup (self->index[NAPKIN_ITEM_NODE], wire->to);
      guint f, t;

      if (from == NULL || to == NULL || wire->port >= MAX_INPUTS)
        continue;
      f = GPOINTER_TO_UINT (from) - 1;
      t = GPOINTER_TO_UINT (to) - 1;
      if (self->sources[t * MAX_INPUTS + wire->port] >= 0)
        continue;  /* a second wire on one port: validation reports it */
      self->sources[t * MAX_INPUTS + wire->port] = (int) f;
      self->source_wires[t * MAX_INPUTS + wire->port] = (int) w;
      self->consumer_offsets[f + 1]++;
    }

  for (guint i = 0; i < n_nodes; i++)
    self->consumer_offsets[i + 1] += self->consumer_offsets[i];
  self->consumers = g_new (guint, self->consumer_offsets[n_nodes] + 1);
  fill = g_memdup2 (self->consumer_offsets, sizeof (guint) * (n_nodes + 1));

  for (guint t = 0; t < n_nodes; t++)
    for (guint p = 0; p < MAX_INPUTS; p++)
      {
        int f = self->sources[t * MAX_INPUTS + p];

        if (f < 0)
          continue;
        self->consumers[fill[f]++] = t;
        in_degree[t]++;
      }

  /* Kahn's algorithm, stable in file order. */
  self->topo = g_new (guint, n_nodes + 1);
  for (guint i = 0; i < n_nodes; i++)
    if (in_degree[i] == 0)
      g_queue_push_tail (&queue, GUINT_TO_POINTER (i));
  while (!g_queue_is_empty (&queue))
    {
      guint n = GPOINTER_TO_UINT (g_queue_pop_head (&queue));

      self->topo[n_sorted++] = n;
      for (guint c = self->consumer_offsets[n]; c < self->consumer_offsets[n + 1]; c++)
        if (--in_degree[self->consumers[c]] == 0)
          g_queue_push_tail (&queue, GUINT_TO_POINTER (self->consumers[c]));
    }
  if (n_sorted != n_nodes)
    g_clear_pointer (&self->topo, g_free);

  self->types = g_new0 (NapkinTensorType, n_nodes + 1);
  if (self->topo != NULL)
    for (guint i = 0; i < n_nodes; i++)
      infer_type (self, self->topo[i]);

  g_free (fill);
  g_free (in_degree);
  self->cache_generation = self->generation;
  self->cache_valid = TRUE;
}

int
napkin_diagram_find (NapkinDiagram  *self,
                     NapkinItemKind  kind,
                     const char     *key)
{
  gpointer v;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), -1);

  if (key == NULL)
    return -1;
  ensure_cache (self);
  if (kind == NAPKIN_ITEM_WIRE)
    index_wires (self);
  v = g_hash_table_lookup (self->index[kind], key);
  return v ? (int) GPOINTER_TO_UINT (v) - 1 : -1;
}

int napkin_diagram_find_axis (NapkinDiagram *self, const char *name) { return napkin_diagram_find (self, NAPKIN_ITEM_AXIS, name); }
int napkin_diagram_find_node (NapkinDiagram *self, const char *id) { return napkin_diagram_find (self, NAPKIN_ITEM_NODE, id); }
int napkin_diagram_find_region (NapkinDiagram *self, const char *name) { return napkin_diagram_find (self, NAPKIN_ITEM_REGION, name); }
int napkin_diagram_find_tensor (NapkinDiagram *self, const char *name) { return napkin_diagram_find (self, NAPKIN_ITEM_TENSOR, name); }

gint64
napkin_diagram_axis_size (NapkinDiagram *self,
                          guint          axis)
{
  g_return_val_if_fail (axis < self->items[NAPKIN_ITEM_AXIS]->len, 0);
  return ((const NapkinAxis *) g_ptr_array_index (self->items[NAPKIN_ITEM_AXIS], axis))->size;
}

int
napkin_diagram_input_source (NapkinDiagram *self,
                             guint          node,
                             guint          port)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), -1);
  g_return_val_if_fail (node < self->items[NAPKIN_ITEM_NODE]->len, -1);

  if (port >= MAX_INPUTS)
    return -1;
  ensure_cache (self);
  return self->sources[node * MAX_INPUTS + port];
}

int
napkin_diagram_wire_for_port (NapkinDiagram *self,
                              guint          node,
                              guint          port)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), -1);
  g_return_val_if_fail (node < self->items[NAPKIN_ITEM_NODE]->len, -1);

  if (port >= MAX_INPUTS)
    return -1;
  ensure_cache (self);
  return self->source_wires[node * MAX_INPUTS + port];
}

const guint *
napkin_diagram_consumers (NapkinDiagram *self,
                          guint          node,
                          guint         *n_consumers)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail (node < self->items[NAPKIN_ITEM_NODE]->len, NULL);

  ensure_cache (self);
  *n_consumers = self->consumer_offsets[node + 1] - self->consumer_offsets[node];
  return self->consumers + self->consumer_offsets[node];
}

const guint *
napkin_diagram_topo_order (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  ensure_cache (self);
  return self->topo;
}

const NapkinTensorType *
napkin_diagram_node_type (NapkinDiagram *self,
                          guint          node)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail (node < self->items[NAPKIN_ITEM_NODE]->len, NULL);

  ensure_cache (self);
  return &self->types[node];
}

gboolean
napkin_diagram_type_elements (NapkinDiagram          *self,
                              const NapkinTensorType *type,
                              gint64                 *elements)
{
  gint64 n = 1;

  for (guint i = 0; i < type->n_axes; i++)
    if (!napkin_mul_checked (n, napkin_diagram_axis_size (self, type->axes[i]), &n))
      return FALSE;

  *elements = n;
  return TRUE;
}

char **
napkin_diagram_infer_contract_out (NapkinDiagram *self,
                                   guint          node)
{
  const NapkinTensorType *in[2];
  GPtrArray *out;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  g_return_val_if_fail (node < napkin_diagram_n_nodes (self), NULL);

  for (guint p = 0; p < 2; p++)
    {
      int src = napkin_diagram_input_source (self, node, p);

      if (src < 0 || !(in[p] = napkin_diagram_node_type (self, src))->valid)
        return NULL;
    }
  out = g_ptr_array_new ();
  for (guint p = 0; p < 2; p++)
    for (guint i = 0; i < in[p]->n_axes; i++)
      if (!napkin_tensor_type_has_axis (in[1 - p], in[p]->axes[i]))
        g_ptr_array_add (out, g_strdup (napkin_diagram_axis (self, in[p]->axes[i])->name));
  g_ptr_array_add (out, NULL);
  return (char **) g_ptr_array_free (out, FALSE);
}

char *
napkin_diagram_type_to_string (NapkinDiagram          *self,
                               const NapkinTensorType *type)
{
  GString *str = g_string_new ("[");

  if (!type->valid)
    return g_string_free (g_string_assign (str, "?"), FALSE);

  for (guint i = 0; i < type->n_axes; i++)
    {
      const NapkinAxis *axis = g_ptr_array_index (self->items[NAPKIN_ITEM_AXIS], type->axes[i]);

      g_string_append_printf (str, "%s%s", i ? "," : "", axis->name);
    }
  g_string_append_printf (str, "] %s", napkin_dtype_to_string (type->dtype));
  return g_string_free (str, FALSE);
}

/* FLOP counts per operation; docs/model.md gives the table and why. */
gboolean
napkin_diagram_node_flops (NapkinDiagram *self,
                           guint          n,
                           NapkinFlops   *flops)
{
  const NapkinNode *node;
  const NapkinTensorType *out;
  const NapkinTensorType *in = NULL;
  gint64 out_elems = 0, in_elems = 0;
  int src;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);

  memset (flops, 0, sizeof *flops);
  node = g_ptr_array_index (self->items[NAPKIN_ITEM_NODE], n);
  out = napkin_diagram_node_type (self, n);
  if (!out->valid)
    return FALSE;
  if (!napkin_diagram_type_elements (self, out, &out_elems))
    return FALSE;

  src = napkin_diagram_input_source (self, n, 0);
  if (src >= 0)
    {
      in = &self->types[src];
      if (!napkin_diagram_type_elements (self, in, &in_elems))
        return FALSE;
    }

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
    case NAPKIN_OP_REARRANGE:
      return TRUE;

    case NAPKIN_OP_CONTRACT:
      {
        /* 2 × the product of every axis involved (docs/design.md §1). */
        NapkinTensorType all = *out;
        gint64 product;
        int src1 = napkin_diagram_input_source (self, n, 1);

        for (int p = 0; p < 2; p++)
          {
            const NapkinTensorType *t = &self->types[p == 0 ? src : src1];

            for (guint i = 0; i < t->n_axes; i++)
              if (!napkin_tensor_type_has_axis (&all, t->axes[i]))
                {
                  if (all.n_axes == NAPKIN_MAX_RANK)
                    return FALSE;
                  all.axes[all.n_axes++] = t->axes[i];
                }
          }
        if (!napkin_diagram_type_elements (self, &all, &product))
          return FALSE;
        return napkin_mul_checked (2, product, &flops->tensor);
      }

    case NAPKIN_OP_MAP:
      {
        const NapkinFnInfo *info = napkin_fn_info (node->fn);

        return napkin_mul_checked (out_elems, info->flops, &flops->cuda)
               && napkin_mul_checked (out_elems, info->sfu, &flops->sfu);
      }

    case NAPKIN_OP_REDUCE:
      flops->cuda = in_elems;
      if (node->reduce == NAPKIN_REDUCE_MEAN)
        return napkin_add_checked (flops->cuda, out_elems, &flops->cuda);
      return TRUE;

    case NAPKIN_OP_MASK:
      /* one compare (and select) per element on CUDA cores */
      flops->cuda = in_elems;
      return TRUE;

    case NAPKIN_OP_SOFTMAX:
      /* max, subtract, sum, divide per element; one exp per element */
      flops->sfu = in_elems;
      return napkin_mul_checked (in_elems, 4, &flops->cuda);

    case NAPKIN_OP_NORMALIZE:
      {
        gpointer v = g_hash_table_lookup (self->index[NAPKIN_ITEM_AXIS], node->axis);
        gint64 rows = in_elems;

        if (v != NULL)
          rows = in_elems / MAX (1, napkin_diagram_axis_size (self, GPOINTER_TO_UINT (v) - 1));
        /* layernorm: mean (1), variance (3), normalise and scale (3); rmsnorm: 2 + 2 */
        flops->sfu = rows;
        return napkin_mul_checked (in_elems, node->norm == NAPKIN_NORM_LAYERNORM ? 7 : 4,
                                   &flops->cuda);
      }

    case NAPKIN_N_OPS:
    default:
      g_assert_not_reached ();
    }
}

gboolean
napkin_diagram_total_flops (NapkinDiagram *self,
                            NapkinFlops   *total)
{
  memset (total, 0, sizeof *total);

  for (guint n = 0; n < self->items[NAPKIN_ITEM_NODE]->len; n++)
    {
      NapkinFlops f;

      if (!napkin_diagram_node_flops (self, n, &f))
        return FALSE;
      if (!napkin_add_checked (total->tensor, f.tensor, &total->tensor)
          || !napkin_add_checked (total->cuda, f.cuda, &total->cuda)
          || !napkin_add_checked (total->sfu, f.sfu, &total->sfu))
        return FALSE;
    }

  return TRUE;
}

/* Pairs (query, key) a causal or window mask keeps out of nq × nkv: key j of query i
 * is kept when i + offset − left ≤ j ≤ i + offset + right (causal: right 0, left
 * unbounded; −1: unbounded). A tensor mask keeps an unknown set: all of them. */
static gint64
mask_kept_pairs (const NapkinNode *node,
                 gint64            nq,
                 gint64            nkv)
{
  gint64 right = node->mask == NAPKIN_MASK_CAUSAL ? 0 : node->right;
  gint64 left = node->mask == NAPKIN_MASK_CAUSAL ? -1 : node->left;
  gint64 kept = 0;

  if (node->mask == NAPKIN_MASK_TENSOR)
    return nq * nkv;
  for (gint64 i = 0; i < nq; i++)
    {
      gint64 lo = left >= 0 ? MAX (0, i + node->offset - left) : 0;
      gint64 hi = right >= 0 ? MIN (nkv, i + node->offset + right + 1) : nkv;

      kept += MAX (0, hi - lo);
    }
  return kept;
}

/* A positional mask's axes and the share of their pairs it keeps. */
typedef struct
{
  int    key, row;
  double keep;
} KeptPart;

gboolean
napkin_diagram_computed_flops (NapkinDiagram *self,
                               NapkinFlops   *total)
{
  guint n_nodes;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);

  if (!napkin_diagram_total_flops (self, total))
    return FALSE;
  n_nodes = self->items[NAPKIN_ITEM_NODE]->len;
  /* every operation whose iteration space holds a mask's two axes does only the kept part;
   * under several masks (a backward holds the forward's, its recomputed copy and the
   * gates), the part the tightest of them keeps, taken off once */
  g_autoptr(GArray) masks = g_array_new (FALSE, FALSE, sizeof (KeptPart));

  for (guint m = 0; m < n_nodes; m++)
    {
      const NapkinNode *mask = g_ptr_array_index (self->items[NAPKIN_ITEM_NODE], m);
      KeptPart part;
      gint64 nq, nkv;

      if (mask->kind != NAPKIN_OP_MASK || mask->mask == NAPKIN_MASK_TENSOR || mask->axis == NULL
          || mask->rows == NULL)
        continue;
      part.key = napkin_diagram_find_axis (self, mask->axis);
      part.row = napkin_diagram_find_axis (self, mask->rows);
      if (part.key < 0 || part.row < 0)
        continue;
      nq = napkin_diagram_axis_size (self, part.row);
      nkv = napkin_diagram_axis_size (self, part.key);
      if (nq <= 0 || nkv <= 0)
        continue;
      part.keep = (double) mask_kept_pairs (mask, nq, nkv) / ((double) nq * (double) nkv);
      if (part.keep < 1.0)
        g_array_append_val (masks, part);
    }
  for (guint n = 0; n < n_nodes && masks->len > 0; n++)
    {
      const NapkinTensorType *types[3] = { napkin_diagram_node_type (self, n), NULL, NULL };
      double keep = 1.0;
      NapkinFlops f;

      for (guint port = 0; port < 2; port++)
        {
          int src = napkin_diagram_input_source (self, n, port);

          if (src >= 0)
            types[1 + port] = napkin_diagram_node_type (self, (guint) src);
        }
      for (guint m = 0; m < masks->len; m++)
        {
          const KeptPart *part = &g_array_index (masks, KeptPart, m);
          gboolean has_key = FALSE, has_row = FALSE;

          for (guint t = 0; t < 3; t++)
            if (types[t] != NULL && types[t]->valid)
              {
                has_key = has_key || napkin_tensor_type_has_axis (types[t], (guint) part->key);
                has_row = has_row || napkin_tensor_type_has_axis (types[t], (guint) part->row);
              }
          if (has_key && has_row)
            keep = MIN (keep, part->keep);
        }
      if (keep >= 1.0 || !napkin_diagram_node_flops (self, n, &f))
        continue;
      total->tensor -= f.tensor - (gint64) (f.tensor * keep + 0.5);
      total->cuda -= f.cuda - (gint64) (f.cuda * keep + 0.5);
      total->sfu -= f.sfu - (gint64) (f.sfu * keep + 0.5);
    }

  return TRUE;
}

/* ---- command-line overrides -------------------------------------------------------------- */

static gboolean
parse_size (const char  *text,
            const char  *what,
            gint64      *out,
            GError     **error)
{
  guint64 v;

  if (!g_ascii_string_to_unsigned (text, 10, 1, NAPKIN_MAX_AXIS_SIZE, &v, NULL))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   "%s: size “%s” must be an integer from 1 to %" G_GINT64_FORMAT,
                   what, text, NAPKIN_MAX_AXIS_SIZE);
      return FALSE;
    }

  *out = (gint64) v;
  return TRUE;
}

gboolean
napkin_diagram_override_axis (NapkinDiagram  *self,
                              const char     *spec,
                              GError        **error)
{
  g_auto(GStrv) parts = NULL;
  NapkinAxis *axis;
  gint64 size;
  int index;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);

  parts = g_strsplit (spec, "=", 2);
  if (g_strv_length (parts) != 2)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--axis %s: expected NAME=SIZE"), spec);
      return FALSE;
    }

  index = napkin_diagram_find_axis (self, parts[0]);
  if (index < 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--axis %s: the diagram has no axis “%s”"), spec, parts[0]);
      return FALSE;
    }

  if (!parse_size (parts[1], "--axis", &size, error))
    return FALSE;

  axis = g_ptr_array_index (self->items[NAPKIN_ITEM_AXIS], index);
  axis->size = size;
  follow_axes (self, NAPKIN_ITEM_AXIS, axis);
  napkin_diagram_changed (self);
  return TRUE;
}

NapkinRegion *
napkin_region_refit (NapkinDiagram      *self,
                     const NapkinRegion *region,
                     GString            *notes)
{
  NapkinRegion *copy = NULL;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);

  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);
      int axis = napkin_diagram_find_axis (self, mark->axis);
      gint64 size = axis >= 0 ? napkin_diagram_axis_size (self, axis) : 0;

      if (mark->kind == NAPKIN_MARK_WHOLE || axis < 0 || size <= 0 || mark->tile <= size)
        continue;
      if (copy == NULL)
        copy = napkin_item_copy (NAPKIN_ITEM_REGION, region);
      g_array_index (copy->marks, NapkinMark, m).tile = size;
      if (notes != NULL)
        g_string_append_printf (notes, _("%sRegion “%s”: its tile %s=%" G_GINT64_FORMAT " is larger than the "
                                         "axis (%" G_GINT64_FORMAT "); re-tiled to %" G_GINT64_FORMAT "."),
                                notes->len ? " " : "", region->name, mark->axis, mark->tile, size, size);
    }
  return copy;
}

guint
napkin_diagram_refit_tiles (NapkinDiagram *self,
                            GString       *notes)
{
  guint cut = 0;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), 0);

  for (guint r = 0; r < self->items[NAPKIN_ITEM_REGION]->len; r++)
    {
      NapkinRegion *region = g_ptr_array_index (self->items[NAPKIN_ITEM_REGION], r);
      g_autoptr(NapkinRegion) fitted = napkin_region_refit (self, region, notes);

      if (fitted == NULL)
        continue;
      for (guint m = 0; m < region->marks->len; m++)
        g_array_index (region->marks, NapkinMark, m).tile = g_array_index (fitted->marks, NapkinMark, m).tile;
      cut++;
    }
  if (cut > 0)
    napkin_diagram_changed (self);
  return cut;
}

gboolean
napkin_diagram_override_tile (NapkinDiagram  *self,
                              const char     *spec,
                              GError        **error)
{
  g_auto(GStrv) parts = NULL;
  g_auto(GStrv) target = NULL;
  NapkinRegion *region;
  NapkinMarkKind kind;
  const char *value;
  const char *colon;
  gint64 size = 0;
  int index;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), FALSE);

  parts = g_strsplit (spec, "=", 2);
  if (g_strv_length (parts) == 2)
    target = g_strsplit (parts[0], ".", 2);
  if (target == NULL || g_strv_length (target) != 2)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--tile %s: expected REGION.AXIS=SIZE (or =parallel:SIZE, =stream:SIZE, =whole)"),
                   spec);
      return FALSE;
    }

  index = napkin_diagram_find_region (self, target[0]);
  if (index < 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--tile %s: the diagram has no region “%s”"), spec, target[0]);
      return FALSE;
    }
  if (napkin_diagram_find_axis (self, target[1]) < 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--tile %s: the diagram has no axis “%s”"), spec, target[1]);
      return FALSE;
    }

  region = g_ptr_array_index (self->items[NAPKIN_ITEM_REGION], index);
  kind = napkin_region_mark (region, target[1], NULL);
  value = parts[1];
  colon = strchr (value, ':');

  if (g_strcmp0 (value, "whole") == 0)
    kind = NAPKIN_MARK_WHOLE;
  else
    {
      if (colon != NULL)
        {
          g_autofree char *name = g_strndup (value, colon - value);

          if (!napkin_mark_from_string (name, &kind) || kind == NAPKIN_MARK_WHOLE)
            {
              g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                           _("--tile %s: “%s” is not parallel or stream"), spec, name);
              return FALSE;
            }
          value = colon + 1;
        }
      else if (kind == NAPKIN_MARK_WHOLE)
        {
          g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                       _("--tile %s: axis %s is whole in region %s; write =parallel:SIZE or =stream:SIZE"),
                       spec, target[1], target[0]);
          return FALSE;
        }
      if (!parse_size (value, "--tile", &size, error))
        return FALSE;
    }

  napkin_region_set_mark (region, target[1], kind, size);
  napkin_diagram_changed (self);
  return TRUE;
}

/* ---- the gpus region (docs/multi-gpu.md) ------------------------------------------- */

const NapkinGpusRegion *
napkin_diagram_get_gpus (NapkinDiagram *self)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (self), NULL);
  return self->gpus;
}

void
napkin_diagram_set_gpus (NapkinDiagram    *self,
                         NapkinGpusRegion *gpus)
{
  g_return_if_fail (NAPKIN_IS_DIAGRAM (self));

  if (self->gpus == gpus)
    return;
  g_clear_pointer (&self->gpus, napkin_gpus_region_free);
  self->gpus = gpus;
  napkin_diagram_changed (self);
}

static void
clear_placement (gpointer p)
{
  NapkinPlacement *placement = p;

  g_free (placement->tensor);
  g_free (placement->split);
}

NapkinGpusRegion *
napkin_gpus_region_new (const char *name)
{
  NapkinGpusRegion *gpus = g_new0 (NapkinGpusRegion, 1);

  gpus->region = napkin_region_new (name, NAPKIN_LEVEL_HBM);
  gpus->placements = g_array_new (FALSE, TRUE, sizeof (NapkinPlacement));
  g_array_set_clear_func (gpus->placements, clear_placement);
  return gpus;
}

NapkinGpusRegion *
napkin_gpus_region_copy (const NapkinGpusRegion *gpus,
                         gboolean                with_extras)
{
  NapkinGpusRegion *copy;

  g_return_val_if_fail (gpus != NULL, NULL);

  copy = napkin_gpus_region_new (gpus->region->name);
  napkin_region_free (copy->region);
  copy->region = napkin_item_copy (NAPKIN_ITEM_REGION, gpus->region);
  if (!with_extras)
    g_clear_pointer (&copy->region->extra, json_object_put);
  copy->position = gpus->position;
  copy->gpus = gpus->gpus;
  copy->chunks = gpus->chunks;
  copy->chunk_axis = g_strdup (gpus->chunk_axis);
  copy->comm_sms = gpus->comm_sms;
  for (guint i = 0; i < gpus->placements->len; i++)
    {
      const NapkinPlacement *src = &g_array_index (gpus->placements, NapkinPlacement, i);
      NapkinPlacement dst = { g_strdup (src->tensor), g_strdup (src->split) };

      g_array_append_val (copy->placements, dst);
    }
  if (with_extras)
    copy->overlap_extra = extra_ref (gpus->overlap_extra);
  return copy;
}

void
napkin_gpus_region_free (NapkinGpusRegion *gpus)
{
  if (gpus == NULL)
    return;
  g_clear_pointer (&gpus->region, napkin_region_free);
  g_free (gpus->chunk_axis);
  g_array_unref (gpus->placements);
  g_clear_pointer (&gpus->overlap_extra, json_object_put);
  g_free (gpus);
}

const NapkinPlacement *
napkin_gpus_region_placement (const NapkinGpusRegion *gpus,
                              const char             *tensor)
{
  g_return_val_if_fail (gpus != NULL && tensor != NULL, NULL);

  for (guint i = 0; i < gpus->placements->len; i++)
    {
      const NapkinPlacement *p = &g_array_index (gpus->placements, NapkinPlacement, i);

      if (strcmp (p->tensor, tensor) == 0)
        return p;
    }
  return NULL;
}
