/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include "napkin-command.h"

/* An entry of kind GPUS_ENTRY replaces the diagram's gpus region (kept apart from the
 * item lists, docs/multi-gpu.md): before and after are NapkinGpusRegion, either NULL. */
#define GPUS_ENTRY NAPKIN_N_ITEM_KINDS

typedef struct
{
  NapkinItemKind kind;
  guint          index;
  gpointer       before;
  gpointer       after;
} Entry;

struct _NapkinCommand
{
  GObject  parent_instance;

  char    *label;
  GArray  *entries;
};

G_DEFINE_FINAL_TYPE (NapkinCommand, napkin_command, G_TYPE_OBJECT)

static void
entry_clear (gpointer data)
{
  Entry *entry = data;

  if (entry->kind == GPUS_ENTRY)
    {
      napkin_gpus_region_free (entry->before);
      napkin_gpus_region_free (entry->after);
      return;
    }
  napkin_item_free (entry->kind, entry->before);
  napkin_item_free (entry->kind, entry->after);
}

static void
napkin_command_finalize (GObject *object)
{
  NapkinCommand *self = NAPKIN_COMMAND (object);

  g_clear_pointer (&self->label, g_free);
  g_clear_pointer (&self->entries, g_array_unref);

  G_OBJECT_CLASS (napkin_command_parent_class)->finalize (object);
}

static void
napkin_command_class_init (NapkinCommandClass *klass)
{
  G_OBJECT_CLASS (klass)->finalize = napkin_command_finalize;
}

static void
napkin_command_init (NapkinCommand *self)
{
  self->entries = g_array_new (FALSE, FALSE, sizeof (Entry));
  g_array_set_clear_func (self->entries, entry_clear);
}

NapkinCommand *
napkin_command_new (const char *label)
{
  NapkinCommand *self = g_object_new (NAPKIN_TYPE_COMMAND, NULL);

  self->label = g_strdup (label);
  return self;
}

const char *
napkin_command_get_label (NapkinCommand *self)
{
  g_return_val_if_fail (NAPKIN_IS_COMMAND (self), NULL);
  return self->label;
}

void
napkin_command_add (NapkinCommand  *self,
                    NapkinItemKind  kind,
                    guint           index,
                    gconstpointer   before,
                    gconstpointer   after)
{
  Entry entry;

  g_return_if_fail (NAPKIN_IS_COMMAND (self));
  g_return_if_fail (before != NULL || after != NULL);

  entry.kind = kind;
  entry.index = index;
  entry.before = before ? napkin_item_copy (kind, before) : NULL;
  entry.after = after ? napkin_item_copy (kind, after) : NULL;
  g_array_append_val (self->entries, entry);
}

void
napkin_command_add_gpus (NapkinCommand          *self,
                         const NapkinGpusRegion *before,
                         const NapkinGpusRegion *after)
{
  Entry entry;

  g_return_if_fail (NAPKIN_IS_COMMAND (self));
  g_return_if_fail (before != NULL || after != NULL);

  entry.kind = GPUS_ENTRY;
  entry.index = 0;
  entry.before = before ? napkin_gpus_region_copy (before, TRUE) : NULL;
  entry.after = after ? napkin_gpus_region_copy (after, TRUE) : NULL;
  g_array_append_val (self->entries, entry);
}

guint
napkin_command_get_length (NapkinCommand *self)
{
  g_return_val_if_fail (NAPKIN_IS_COMMAND (self), 0);
  return self->entries->len;
}

void
napkin_command_append (NapkinCommand *self,
                       NapkinCommand *other)
{
  g_return_if_fail (NAPKIN_IS_COMMAND (self));
  g_return_if_fail (NAPKIN_IS_COMMAND (other));

  for (guint i = 0; i < other->entries->len; i++)
    {
      const Entry *e = &g_array_index (other->entries, Entry, i);

      if (e->kind == GPUS_ENTRY)
        napkin_command_add_gpus (self, e->before, e->after);
      else
        napkin_command_add (self, e->kind, e->index, e->before, e->after);
    }
}

static void
put (NapkinDiagram  *diagram,
     NapkinItemKind  kind,
     guint           index,
     gconstpointer   from,
     gconstpointer   to)
{
  if (kind == GPUS_ENTRY)
    napkin_diagram_set_gpus (diagram, to ? napkin_gpus_region_copy (to, TRUE) : NULL);
  else if (from == NULL)
    napkin_diagram_insert_item (diagram, kind, index, napkin_item_copy (kind, to));
  else if (to == NULL)
    napkin_item_free (kind, napkin_diagram_steal_item (diagram, kind, index));
  else
    napkin_diagram_replace_item (diagram, kind, index, napkin_item_copy (kind, to));
}

void
napkin_command_apply (NapkinCommand *self,
                      NapkinDiagram *diagram)
{
  g_return_if_fail (NAPKIN_IS_COMMAND (self));

  napkin_diagram_freeze_changed (diagram);
  for (guint i = 0; i < self->entries->len; i++)
    {
      const Entry *e = &g_array_index (self->entries, Entry, i);

      put (diagram, e->kind, e->index, e->before, e->after);
    }
  napkin_diagram_thaw_changed (diagram);
}

void
napkin_command_revert (NapkinCommand *self,
                       NapkinDiagram *diagram)
{
  g_return_if_fail (NAPKIN_IS_COMMAND (self));

  napkin_diagram_freeze_changed (diagram);
  for (guint i = self->entries->len; i > 0; i--)
    {
      const Entry *e = &g_array_index (self->entries, Entry, i - 1);

      put (diagram, e->kind, e->index, e->after, e->before);
    }
  napkin_diagram_thaw_changed (diagram);
}
