/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include "napkin-history.h"

struct _NapkinHistory
{
  GObject        parent_instance;

  NapkinDiagram *diagram;
  GPtrArray     *done;        /* NapkinCommand, oldest first */
  GPtrArray     *undone;      /* NapkinCommand, most recently undone last */
  NapkinCommand *group;       /* collects pushes between begin and end */
  guint          group_depth;
  gint64         saved_at;    /* depth of `done` when saved; -1 when that state is gone */
};

enum {
  PROP_0,
  PROP_DIAGRAM,
  PROP_CAN_UNDO,
  PROP_CAN_REDO,
  PROP_MODIFIED,
  N_PROPS
};

static GParamSpec *properties[N_PROPS];

G_DEFINE_FINAL_TYPE (NapkinHistory, napkin_history, G_TYPE_OBJECT)

static void
napkin_history_dispose (GObject *object)
{
  NapkinHistory *self = NAPKIN_HISTORY (object);

  g_clear_object (&self->group);
  g_clear_object (&self->diagram);

  G_OBJECT_CLASS (napkin_history_parent_class)->dispose (object);
}

static void
napkin_history_finalize (GObject *object)
{
  NapkinHistory *self = NAPKIN_HISTORY (object);

  g_clear_pointer (&self->done, g_ptr_array_unref);
  g_clear_pointer (&self->undone, g_ptr_array_unref);

  G_OBJECT_CLASS (napkin_history_parent_class)->finalize (object);
}

static void
napkin_history_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  NapkinHistory *self = NAPKIN_HISTORY (object);

  switch (prop_id)
    {
    case PROP_DIAGRAM:
      g_value_set_object (value, self->diagram);
      break;
    case PROP_CAN_UNDO:
      g_value_set_boolean (value, napkin_history_can_undo (self));
      break;
    case PROP_CAN_REDO:
      g_value_set_boolean (value, napkin_history_can_redo (self));
      break;
    case PROP_MODIFIED:
      g_value_set_boolean (value, napkin_history_get_modified (self));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_history_set_property (GObject      *object,
                             guint         prop_id,
                             const GValue *value,
                             GParamSpec   *pspec)
{
  NapkinHistory *self = NAPKIN_HISTORY (object);

  switch (prop_id)
    {
    case PROP_DIAGRAM:
      self->diagram = g_value_dup_object (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_history_class_init (NapkinHistoryClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = napkin_history_dispose;
  object_class->finalize = napkin_history_finalize;
  object_class->get_property = napkin_history_get_property;
  object_class->set_property = napkin_history_set_property;

  properties[PROP_DIAGRAM] =
    g_param_spec_object ("diagram", NULL, NULL, NAPKIN_TYPE_DIAGRAM,
                         (G_PARAM_READWRITE | G_PARAM_CONSTRUCT_ONLY | G_PARAM_STATIC_STRINGS));
  properties[PROP_CAN_UNDO] =
    g_param_spec_boolean ("can-undo", NULL, NULL, FALSE, (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  properties[PROP_CAN_REDO] =
    g_param_spec_boolean ("can-redo", NULL, NULL, FALSE, (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  properties[PROP_MODIFIED] =
    g_param_spec_boolean ("modified", NULL, NULL, FALSE, (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
napkin_history_init (NapkinHistory *self)
{
  self->done = g_ptr_array_new_with_free_func (g_object_unref);
  self->undone = g_ptr_array_new_with_free_func (g_object_unref);
}

NapkinHistory *
napkin_history_new (NapkinDiagram *diagram)
{
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  return g_object_new (NAPKIN_TYPE_HISTORY, "diagram", diagram, NULL);
}

NapkinDiagram *
napkin_history_get_diagram (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), NULL);
  return self->diagram;
}

static void
notify_state (NapkinHistory *self)
{
  g_object_freeze_notify (G_OBJECT (self));
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CAN_UNDO]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_CAN_REDO]);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODIFIED]);
  g_object_thaw_notify (G_OBJECT (self));
}

static void
record (NapkinHistory *self,
        NapkinCommand *command)
{
  if ((gint64) self->done->len < self->saved_at)
    self->saved_at = -1;  /* the saved state was in the redo list we drop */
  g_ptr_array_set_size (self->undone, 0);
  g_ptr_array_add (self->done, g_object_ref (command));
  notify_state (self);
}

void
napkin_history_push (NapkinHistory *self,
                     NapkinCommand *command)
{
  g_return_if_fail (NAPKIN_IS_HISTORY (self));
  g_return_if_fail (NAPKIN_IS_COMMAND (command));

  g_object_ref_sink (command);
  napkin_command_apply (command, self->diagram);

  if (self->group != NULL)
    napkin_command_append (self->group, command);
  else
    record (self, command);

  g_object_unref (command);
}

gboolean
napkin_history_can_undo (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), FALSE);
  return self->group == NULL && self->done->len > 0;
}

gboolean
napkin_history_can_redo (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), FALSE);
  return self->group == NULL && self->undone->len > 0;
}

const char *
napkin_history_get_undo_label (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), NULL);
  if (self->done->len == 0)
    return NULL;
  return napkin_command_get_label (g_ptr_array_index (self->done, self->done->len - 1));
}

const char *
napkin_history_get_redo_label (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), NULL);
  if (self->undone->len == 0)
    return NULL;
  return napkin_command_get_label (g_ptr_array_index (self->undone, self->undone->len - 1));
}

gboolean
napkin_history_undo (NapkinHistory *self)
{
  NapkinCommand *command;

  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), FALSE);

  if (!napkin_history_can_undo (self))
    return FALSE;

  command = g_ptr_array_steal_index (self->done, self->done->len - 1);
  napkin_command_revert (command, self->diagram);
  g_ptr_array_add (self->undone, command);
  notify_state (self);
  return TRUE;
}

gboolean
napkin_history_redo (NapkinHistory *self)
{
  NapkinCommand *command;

  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), FALSE);

  if (!napkin_history_can_redo (self))
    return FALSE;

  command = g_ptr_array_steal_index (self->undone, self->undone->len - 1);
  napkin_command_apply (command, self->diagram);
  g_ptr_array_add (self->done, command);
  notify_state (self);
  return TRUE;
}

void
napkin_history_begin_group (NapkinHistory *self,
                            const char    *label)
{
  g_return_if_fail (NAPKIN_IS_HISTORY (self));

  if (self->group_depth++ == 0)
    {
      self->group = napkin_command_new (label);
      notify_state (self);
    }
}

void
napkin_history_end_group (NapkinHistory *self)
{
  g_autoptr(NapkinCommand) group = NULL;

  g_return_if_fail (NAPKIN_IS_HISTORY (self));
  g_return_if_fail (self->group_depth > 0);

  if (--self->group_depth > 0)
    return;

  group = g_steal_pointer (&self->group);
  if (napkin_command_get_length (group) > 0)
    record (self, group);
  else
    notify_state (self);
}

void
napkin_history_cancel_group (NapkinHistory *self)
{
  g_autoptr(NapkinCommand) group = NULL;

  g_return_if_fail (NAPKIN_IS_HISTORY (self));
  g_return_if_fail (self->group_depth > 0);

  self->group_depth = 0;
  group = g_steal_pointer (&self->group);
  napkin_command_revert (group, self->diagram);
  notify_state (self);
}

void
napkin_history_set_saved (NapkinHistory *self)
{
  g_return_if_fail (NAPKIN_IS_HISTORY (self));

  self->saved_at = self->done->len;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODIFIED]);
}

void
napkin_history_set_unsaved (NapkinHistory *self)
{
  g_return_if_fail (NAPKIN_IS_HISTORY (self));

  /* no depth of the stack is the saved state any more */
  self->saved_at = -1;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MODIFIED]);
}

gboolean
napkin_history_get_modified (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), FALSE);
  return self->group != NULL || self->saved_at != (gint64) self->done->len;
}

guint
napkin_history_get_depth (NapkinHistory *self)
{
  g_return_val_if_fail (NAPKIN_IS_HISTORY (self), 0);
  return self->done->len;
}
