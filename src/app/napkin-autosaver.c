/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-autosaver"

#include "config.h"

#include "napkin-autosave.h"
#include "napkin-autosaver.h"
#include "napkin-file.h"

#define DEFAULT_DELAY_MS 3000
/* Editing without a pause still autosaves, every this many delays. */
#define MAX_WAIT_DELAYS  10

/* What the main thread and the writer threads share, under `lock`. Writes are
 * numbered as they are asked for; a write asked for before the last discard, or
 * older than one already written, is dropped, so a slow writer can never bring a
 * removed snapshot back or replace a newer one. */
typedef struct
{
  GMutex   lock;
  char    *dir;
  char    *id;
  guint64  next_seq;
  guint64  discarded_upto;
  guint64  written_seq;
} Slot;

static void
slot_clear (Slot *slot)
{
  g_mutex_clear (&slot->lock);
  g_free (slot->dir);
  g_free (slot->id);
}

static Slot *
slot_ref (Slot *slot)
{
  return g_atomic_rc_box_acquire (slot);
}

static void
slot_unref (Slot *slot)
{
  g_atomic_rc_box_release_full (slot, (GDestroyNotify) slot_clear);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC (Slot, slot_unref)

typedef struct
{
  Slot    *slot;
  guint64  seq;
  char    *data;   /* the document as JSON: the worker builds its own copy */
  char    *path;
  char    *title;
} Write;

static void
write_free (Write *w)
{
  slot_unref (w->slot);
  g_free (w->data);
  g_free (w->path);
  g_free (w->title);
  g_free (w);
}

enum
{
  FAILED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

struct _NapkinAutosaver
{
  GObject        parent_instance;

  NapkinHistory *history;
  GFile         *file;
  Slot          *slot;
  guint          delay_ms;
  guint          timeout_id;
  gint64         pending_since;   /* monotonic µs of the first change not yet written; 0: none */
  gulong         changed_id;
  gulong         modified_id;
  guint          n_writes;
  gboolean       warned;
};

G_DEFINE_FINAL_TYPE (NapkinAutosaver, napkin_autosaver, G_TYPE_OBJECT)

static guint
delay_from_env (void)
{
  const char *env = g_getenv ("NAPKIN_AUTOSAVE_DELAY_MS");
  guint64 value;

  if (env == NULL || *env == '\0')
    return DEFAULT_DELAY_MS;
  if (!g_ascii_string_to_unsigned (env, 10, 1, 3600 * 1000, &value, NULL))
    {
      g_message ("NAPKIN_AUTOSAVE_DELAY_MS=%s: not a number of milliseconds from 1 to 3600000; using %d",
                 env, DEFAULT_DELAY_MS);
      return DEFAULT_DELAY_MS;
    }
  return (guint) value;
}

/* ---------------------------------------------------------------- the writer thread */

static void
write_thread (GTask        *task,
              gpointer      source_object,
              gpointer      task_data,
              GCancellable *cancellable)
{
  Write *w = task_data;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  gboolean written = FALSE;

  /* Parsed here, not shared: the diagram's json-c parts are not thread-safe. */
  diagram = napkin_diagram_load_from_data (w->data, -1, NAPKIN_LOAD_DEFAULT, &error);
  if (diagram != NULL)
    {
      g_mutex_lock (&w->slot->lock);
      if (w->seq > w->slot->discarded_upto && w->seq > w->slot->written_seq)
        {
          written = napkin_autosave_write (w->slot->dir, w->slot->id, diagram, w->path, w->title, &error);
          if (written)
            w->slot->written_seq = w->seq;
        }
      g_mutex_unlock (&w->slot->lock);
    }
  if (error != NULL)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_boolean (task, written);
}

static void
write_done_cb (GObject      *object,
               GAsyncResult *result,
               gpointer      user_data)
{
  g_autoptr(NapkinAutosaver) self = user_data;
  g_autoptr(GError) error = NULL;

  if (g_task_propagate_boolean (G_TASK (result), &error))
    {
      self->n_writes++;
      self->warned = FALSE;   /* working again: a later failure is news */
    }
  else if (error != NULL && !self->warned)
    {
      /* Once per run of failures: a full disk would otherwise repeat it every few
       * seconds. The window says it where the user looks (docs/security.md §4). */
      g_message ("autosave failed: %s", error->message);
      self->warned = TRUE;
      g_signal_emit (self, signals[FAILED], 0, error->message);
    }
}

static void
write_snapshot (NapkinAutosaver *self)
{
  NapkinDiagram *diagram = napkin_history_get_diagram (self->history);
  g_autoptr(GTask) task = NULL;
  Write *w = g_new0 (Write, 1);

  w->slot = slot_ref (self->slot);
  g_mutex_lock (&self->slot->lock);
  w->seq = ++self->slot->next_seq;
  g_mutex_unlock (&self->slot->lock);
  w->data = napkin_diagram_save_to_data (diagram, NULL);
  w->path = self->file ? g_file_get_path (self->file) : NULL;
  if (self->file != NULL)
    w->title = g_file_get_basename (self->file);
  else
    w->title = g_strdup (napkin_diagram_get_title (diagram));

  task = g_task_new (NULL, NULL, write_done_cb, g_object_ref (self));
  g_task_set_source_tag (task, (gpointer) (guintptr) write_snapshot);
  g_task_set_task_data (task, w, (GDestroyNotify) write_free);
  g_task_run_in_thread (task, write_thread);
}

/* ---------------------------------------------------------------- the idle timer */

static gboolean
idle_timeout_cb (gpointer user_data)
{
  NapkinAutosaver *self = user_data;

  self->timeout_id = 0;
  self->pending_since = 0;
  if (napkin_history_get_modified (self->history))
    write_snapshot (self);
  else
    napkin_autosaver_discard (self);   /* undone back to what is on disk */
  return G_SOURCE_REMOVE;
}

static void
schedule (NapkinAutosaver *self)
{
  gint64 now = g_get_monotonic_time ();
  gint64 max_wait_us = (gint64) self->delay_ms * MAX_WAIT_DELAYS * 1000;
  gint64 delay_us = (gint64) self->delay_ms * 1000;

  /* Each change restarts the wait, but never past ten delays after the first. */
  if (self->pending_since == 0)
    self->pending_since = now;
  delay_us = MIN (delay_us, MAX (0, self->pending_since + max_wait_us - now));
  g_clear_handle_id (&self->timeout_id, g_source_remove);
  self->timeout_id = g_timeout_add ((guint) (delay_us / 1000), idle_timeout_cb, self);
}

static void
changed_cb (NapkinAutosaver *self)
{
  schedule (self);
}

/* ---------------------------------------------------------------- API */

NapkinAutosaver *
napkin_autosaver_new (NapkinHistory *history)
{
  NapkinAutosaver *self;

  g_return_val_if_fail (NAPKIN_IS_HISTORY (history), NULL);

  self = g_object_new (NAPKIN_TYPE_AUTOSAVER, NULL);
  self->history = g_object_ref (history);
  self->changed_id = g_signal_connect_object (napkin_history_get_diagram (history), "changed",
                                              G_CALLBACK (changed_cb), self, G_CONNECT_SWAPPED);
  /* Changes kept outside the undo stack (runs) mark the history only. */
  self->modified_id = g_signal_connect_object (history, "notify::modified", G_CALLBACK (changed_cb), self,
                                               G_CONNECT_SWAPPED);
  return self;
}

void
napkin_autosaver_set_file (NapkinAutosaver *self,
                           GFile           *file)
{
  g_return_if_fail (NAPKIN_IS_AUTOSAVER (self));
  g_return_if_fail (file == NULL || G_IS_FILE (file));

  g_set_object (&self->file, file);
}

void
napkin_autosaver_adopt (NapkinAutosaver *self,
                        const char      *id)
{
  g_return_if_fail (NAPKIN_IS_AUTOSAVER (self));
  g_return_if_fail (id != NULL && g_uuid_string_is_valid (id));

  g_mutex_lock (&self->slot->lock);
  g_free (self->slot->id);
  self->slot->id = g_strdup (id);
  g_mutex_unlock (&self->slot->lock);
}

void
napkin_autosaver_discard (NapkinAutosaver *self)
{
  g_autoptr(GError) error = NULL;

  g_return_if_fail (NAPKIN_IS_AUTOSAVER (self));

  g_clear_handle_id (&self->timeout_id, g_source_remove);
  self->pending_since = 0;
  /* Waits for a write in progress (a few milliseconds), then no older write runs. */
  g_mutex_lock (&self->slot->lock);
  self->slot->discarded_upto = self->slot->next_seq;
  if (!napkin_autosave_remove (self->slot->dir, self->slot->id, &error))
    g_message ("%s", error->message);
  g_mutex_unlock (&self->slot->lock);
}

const char *
napkin_autosaver_get_id (NapkinAutosaver *self)
{
  g_return_val_if_fail (NAPKIN_IS_AUTOSAVER (self), NULL);

  return self->slot->id;
}

const char *
napkin_autosaver_get_dir (NapkinAutosaver *self)
{
  g_return_val_if_fail (NAPKIN_IS_AUTOSAVER (self), NULL);

  return self->slot->dir;
}

guint
napkin_autosaver_get_n_writes (NapkinAutosaver *self)
{
  g_return_val_if_fail (NAPKIN_IS_AUTOSAVER (self), 0);

  return self->n_writes;
}

/* ---------------------------------------------------------------- class */

static void
napkin_autosaver_dispose (GObject *object)
{
  NapkinAutosaver *self = NAPKIN_AUTOSAVER (object);

  g_clear_handle_id (&self->timeout_id, g_source_remove);
  if (self->history != NULL)
    {
      /* The document is gone from this process in an orderly way (its window
       * closed, or another document replaced it): nothing to recover. A crash or a
       * kill never gets here, which is what leaves a snapshot behind. */
      napkin_autosaver_discard (self);
      g_clear_signal_handler (&self->changed_id, napkin_history_get_diagram (self->history));
      g_clear_signal_handler (&self->modified_id, self->history);
    }
  g_clear_object (&self->history);
  g_clear_object (&self->file);
  G_OBJECT_CLASS (napkin_autosaver_parent_class)->dispose (object);
}

static void
napkin_autosaver_finalize (GObject *object)
{
  NapkinAutosaver *self = NAPKIN_AUTOSAVER (object);

  g_clear_pointer (&self->slot, slot_unref);
  G_OBJECT_CLASS (napkin_autosaver_parent_class)->finalize (object);
}

static void
napkin_autosaver_class_init (NapkinAutosaverClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->dispose = napkin_autosaver_dispose;
  object_class->finalize = napkin_autosaver_finalize;

  /* A snapshot could not be written (the message says why); emitted once until a
   * write succeeds again. */
  signals[FAILED] = g_signal_new ("failed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                  G_TYPE_NONE, 1, G_TYPE_STRING);
}

static void
napkin_autosaver_init (NapkinAutosaver *self)
{
  self->slot = g_atomic_rc_box_new0 (Slot);
  g_mutex_init (&self->slot->lock);
  self->slot->dir = napkin_autosave_default_dir ();
  self->slot->id = napkin_autosave_new_id ();
  self->delay_ms = delay_from_env ();
}
