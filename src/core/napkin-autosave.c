/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-autosave"
/* kill () and lstat () under -std=c17 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <glib/gi18n-lib.h>

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

#include <glib/gstdio.h>

#include "napkin-autosave.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"

#define SIDE_FORMAT   "napkin-autosave"
#define SIDE_VERSION  1
/* A side file is a few hundred bytes; anything much larger is not ours. */
#define SIDE_MAX_SIZE (64 * 1024)

void
napkin_autosave_entry_free (NapkinAutosaveEntry *entry)
{
  if (entry == NULL)
    return;
  g_free (entry->id);
  g_free (entry->path);
  g_free (entry->title);
  g_free (entry);
}

char *
napkin_autosave_default_dir (void)
{
  const char *dir = g_getenv ("NAPKIN_AUTOSAVE_DIR");

  if (dir != NULL && *dir != '\0')
    return g_strdup (dir);
  return g_build_filename (g_get_user_state_dir (), "napkin", "autosave", NULL);
}

char *
napkin_autosave_new_id (void)
{
  return g_uuid_string_random ();
}

/* ---------------------------------------------------------------- process identity */

/* A pid alone is not an identity: pids are reused. With the start time (field 22
 * of /proc/PID/stat) and the boot id, a reused pid or a reboot reads as "not
 * running". */
guint64
napkin_autosave_process_start_time (int pid)
{
  g_autofree char *name = g_strdup_printf ("/proc/%d/stat", pid);
  g_autofree char *text = NULL;
  g_auto(GStrv) fields = NULL;
  const char *after;

  if (!g_file_get_contents (name, &text, NULL, NULL))
    return 0;
  /* The command name is in parentheses and may hold spaces or ')'. */
  after = strrchr (text, ')');
  if (after == NULL)
    return 0;
  fields = g_strsplit (after + 1, " ", -1);
  /* fields[0] is empty (the space after ')'), fields[1] is field 3 (state): field
   * 22 is fields[20]. */
  if (g_strv_length (fields) < 21)
    return 0;
  return g_ascii_strtoull (fields[20], NULL, 10);
}

static char *
current_boot_id (void)
{
  char *text = NULL;

  if (!g_file_get_contents ("/proc/sys/kernel/random/boot_id", &text, NULL, NULL))
    return NULL;
  return g_strstrip (text);
}

gboolean
napkin_autosave_owner_is_alive (int         pid,
                                guint64     start_time,
                                const char *boot_id)
{
  g_autofree char *boot = NULL;
  guint64 now_start;

  if (pid <= 0)
    return FALSE;
  boot = current_boot_id ();
  if (boot != NULL && boot_id != NULL && *boot_id != '\0' && g_strcmp0 (boot, boot_id) != 0)
    return FALSE;
  now_start = napkin_autosave_process_start_time (pid);
  if (now_start != 0)
    return start_time == 0 || now_start == start_time;
  if (g_file_test ("/proc/self/stat", G_FILE_TEST_EXISTS))
    return FALSE;  /* /proc works and has no such process */
  /* No /proc: the pid is all there is. */
  return kill (pid, 0) == 0 || errno == EPERM;
}

/* ---------------------------------------------------------------- files */

static gboolean
id_is_valid (const char *id)
{
  return id != NULL && g_uuid_string_is_valid (id);
}

static char *
snapshot_path (const char *dir,
               const char *id)
{
  g_autofree char *name = g_strconcat (id, ".napkin", NULL);

  return g_build_filename (dir, name, NULL);
}

static char *
side_path (const char *dir,
           const char *id)
{
  g_autofree char *name = g_strconcat (id, ".json", NULL);

  return g_build_filename (dir, name, NULL);
}

static gboolean
write_side_file (const char  *dir,
                 const char  *id,
                 const char  *path,
                 const char  *title,
                 gint64       time,
                 GError     **error)
{
  g_autoptr(json_object) root = json_object_new_object ();
  g_autofree char *side = side_path (dir, id);
  g_autofree char *boot = current_boot_id ();
  int pid = getpid ();
  const char *text;

  json_object_object_add (root, "format", json_object_new_string (SIDE_FORMAT));
  json_object_object_add (root, "version", json_object_new_int (SIDE_VERSION));
  json_object_object_add (root, "path", path ? json_object_new_string (path) : NULL);
  json_object_object_add (root, "title", json_object_new_string (title ? title : ""));
  json_object_object_add (root, "time", json_object_new_int64 (time));
  json_object_object_add (root, "pid", json_object_new_int (pid));
  json_object_object_add (root, "start_time",
                          json_object_new_int64 ((gint64) napkin_autosave_process_start_time (pid)));
  json_object_object_add (root, "boot_id", boot ? json_object_new_string (boot) : NULL);
  text = json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE);
  /* g_file_set_contents_full writes a temporary file, fsyncs it and renames it. */
  if (!g_file_set_contents_full (side, text, -1, G_FILE_SET_CONTENTS_CONSISTENT | G_FILE_SET_CONTENTS_DURABLE,
                                 0600, error))
    return FALSE;
  return TRUE;
}

gboolean
napkin_autosave_write (const char     *dir,
                       const char     *id,
                       NapkinDiagram  *diagram,
                       const char     *path,
                       const char     *title,
                       GError        **error)
{
  g_autofree char *snapshot = NULL;

  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (id_is_valid (id), FALSE);
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);

  if (g_mkdir_with_parents (dir, 0700) != 0)
    {
      int saved = errno;

      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("could not autosave: creating the folder “%s”: %s"), dir, g_strerror (saved));
      return FALSE;
    }
  /* The side file first: from its first byte on disk, the snapshot has a live
   * owner, so another Napkin starting meanwhile never offers it. */
  if (!write_side_file (dir, id, path, title, g_get_real_time () / G_USEC_PER_SEC, error))
    {
      g_prefix_error (error, "could not autosave: ");
      return FALSE;
    }
  snapshot = snapshot_path (dir, id);
  return napkin_diagram_save_to_file (diagram, snapshot, error);
}

static gboolean
unlink_if_there (const char  *path,
                 GError     **error)
{
  /* ENOTDIR: a part of the path is not a folder, so the file cannot be there. */
  if (g_unlink (path) == 0 || errno == ENOENT || errno == ENOTDIR)
    return TRUE;
  {
    int saved = errno;

    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                 _("could not remove the autosave “%s”: %s"), path, g_strerror (saved));
  }
  return FALSE;
}

gboolean
napkin_autosave_remove (const char  *dir,
                        const char  *id,
                        GError     **error)
{
  g_autofree char *snapshot = NULL;
  g_autofree char *backup = NULL;
  g_autofree char *side = NULL;
  g_autofree char *temp_prefix = NULL;
  g_autofree char *side_temp_prefix = NULL;
  g_autoptr(GDir) folder = NULL;
  const char *name;

  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (id_is_valid (id), FALSE);

  snapshot = snapshot_path (dir, id);
  backup = g_strconcat (snapshot, "~", NULL);
  side = side_path (dir, id);
  /* The snapshot goes first: a side file without its snapshot is never offered. */
  if (!unlink_if_there (snapshot, error) || !unlink_if_there (backup, error) || !unlink_if_there (side, error))
    return FALSE;

  /* What an interrupted write of this snapshot left: `.ID.napkin.XXXXXX` and
   * `.ID.napkin~.XXXXXXXX` (napkin-file.c), `ID.json.XXXXXX` (GLib). Only this id's, so another process's
   * save in progress is never touched. */
  folder = g_dir_open (dir, 0, NULL);
  temp_prefix = g_strconcat (".", id, ".napkin", NULL);
  side_temp_prefix = g_strconcat (id, ".json.", NULL);
  while (folder != NULL && (name = g_dir_read_name (folder)) != NULL)
    if (g_str_has_prefix (name, temp_prefix) || g_str_has_prefix (name, side_temp_prefix))
      {
        g_autofree char *temp = g_build_filename (dir, name, NULL);

        if (!unlink_if_there (temp, error))
          return FALSE;
      }
  return TRUE;
}

/* ---------------------------------------------------------------- listing */

static json_object *
read_side_file (const char  *path,
                GError     **error)
{
  g_autofree char *text = NULL;
  json_object *root;
  enum json_tokener_error jerr = json_tokener_success;
  GStatBuf st;
  gsize length;

  if (g_lstat (path, &st) != 0 || !S_ISREG (st.st_mode))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_FORMAT, _("not a regular file"));
      return NULL;
    }
  if (st.st_size > SIDE_MAX_SIZE)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                   _("larger than %d bytes"), SIDE_MAX_SIZE);
      return NULL;
    }
  if (!(text = napkin_file_read_bounded (path, SIDE_MAX_SIZE, &length, error)))
    return NULL;
  if (length == 0 || strlen (text) != length || !g_utf8_validate (text, length, NULL))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE, _("not UTF-8 JSON text"));
      return NULL;
    }
  root = json_tokener_parse_verbose (text, &jerr);
  if (root == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE, _("not JSON: %s"),
                   json_tokener_error_desc (jerr));
      return NULL;
    }
  return root;
}

static gboolean
field_is (json_object *root,
          const char  *key,
          json_type    type)
{
  json_object *value = NULL;

  return json_object_object_get_ex (root, key, &value) && json_object_is_type (value, type);
}

/* Reads one side file into an entry; `boot_id` and `start_time` come back for the
 * liveness check. */
static NapkinAutosaveEntry *
parse_entry (json_object  *root,
             const char   *id,
             guint64      *start_time,
             char        **boot_id,
             GError      **error)
{
  g_autoptr(NapkinAutosaveEntry) entry = g_new0 (NapkinAutosaveEntry, 1);
  json_object *value;
  gint64 pid;

#define BAD_FIELD(field, what)                                                                    \
  G_STMT_START {                                                                                  \
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_FORMAT, "%s: %s", field, what); \
    return NULL;                                                                                  \
  } G_STMT_END

  if (!json_object_is_type (root, json_type_object))
    BAD_FIELD ("$", "not a JSON object");
  if (!field_is (root, "format", json_type_string)
      || g_strcmp0 (json_object_get_string (json_object_object_get (root, "format")), SIDE_FORMAT) != 0)
    BAD_FIELD ("format", "not \"" SIDE_FORMAT "\"");
  if (!field_is (root, "version", json_type_int)
      || json_object_get_int64 (json_object_object_get (root, "version")) != SIDE_VERSION)
    BAD_FIELD ("version", "not 1");
  if (!field_is (root, "pid", json_type_int))
    BAD_FIELD ("pid", "missing or not an integer");
  pid = json_object_get_int64 (json_object_object_get (root, "pid"));
  if (pid <= 0 || pid > G_MAXINT)
    BAD_FIELD ("pid", "not a process id");
  if (!field_is (root, "time", json_type_int))
    BAD_FIELD ("time", "missing or not an integer");
  value = json_object_object_get (root, "path");
  if (value != NULL && !json_object_is_type (value, json_type_string))
    BAD_FIELD ("path", "neither a string nor null");
  if (value != NULL && !g_path_is_absolute (json_object_get_string (value)))
    BAD_FIELD ("path", "not an absolute path");
  if (!field_is (root, "title", json_type_string))
    BAD_FIELD ("title", "missing or not a string");
  if (json_object_object_get_ex (root, "start_time", &value) && value != NULL
      && !json_object_is_type (value, json_type_int))
    BAD_FIELD ("start_time", "not an integer");
#undef BAD_FIELD

  entry->id = g_strdup (id);
  value = json_object_object_get (root, "path");
  entry->path = value ? g_strdup (json_object_get_string (value)) : NULL;
  entry->title = g_strdup (json_object_get_string (json_object_object_get (root, "title")));
  entry->time = json_object_get_int64 (json_object_object_get (root, "time"));
  entry->pid = (int) pid;
  value = json_object_object_get (root, "start_time");
  *start_time = value ? (guint64) json_object_get_int64 (value) : 0;
  value = json_object_object_get (root, "boot_id");
  *boot_id = value && json_object_is_type (value, json_type_string) ? g_strdup (json_object_get_string (value))
                                                                    : NULL;
  return g_steal_pointer (&entry);
}

/* Names that belong to the store without being a side file: snapshots, their
 * backups and what an interrupted write leaves (hidden temporary files). */
static gboolean
is_store_file (const char *name)
{
  g_autofree char *stem = NULL;
  const char *rest;

  if (name[0] == '.')
    return TRUE;
  if (strlen (name) < 36)
    return FALSE;
  stem = g_strndup (name, 36);
  rest = name + 36;
  /* ID.json.XXXXXX: g_file_set_contents's temporary file, left by a kill. */
  return id_is_valid (stem)
         && (g_str_equal (rest, ".napkin") || g_str_equal (rest, ".napkin~") || g_str_has_prefix (rest, ".json."));
}

static int
compare_newest_first (gconstpointer a,
                      gconstpointer b)
{
  const NapkinAutosaveEntry *x = *(NapkinAutosaveEntry **) a;
  const NapkinAutosaveEntry *y = *(NapkinAutosaveEntry **) b;

  if (x->time != y->time)
    return x->time > y->time ? -1 : 1;
  return g_strcmp0 (x->id, y->id);
}

GPtrArray *
napkin_autosave_list_recoverable (const char *dir)
{
  GPtrArray *entries = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_autosave_entry_free);
  g_autoptr(GDir) folder = NULL;
  const char *name;

  g_return_val_if_fail (dir != NULL, entries);

  folder = g_dir_open (dir, 0, NULL);
  while (folder != NULL && (name = g_dir_read_name (folder)) != NULL)
    {
      g_autofree char *side = g_build_filename (dir, name, NULL);
      g_autofree char *id = NULL;
      g_autofree char *snapshot = NULL;
      g_autofree char *boot_id = NULL;
      g_autoptr(json_object) root = NULL;
      g_autoptr(NapkinAutosaveEntry) entry = NULL;
      g_autoptr(GError) error = NULL;
      guint64 start_time = 0;
      GStatBuf st;

      if (is_store_file (name))
        continue;
      if (!g_str_has_suffix (name, ".json")
          || !id_is_valid ((id = g_strndup (name, strlen (name) - strlen (".json")))))
        {
          g_warning ("%s: not an autosave of Napkin; skipped", side);
          continue;
        }
      root = read_side_file (side, &error);
      if (root != NULL)
        entry = parse_entry (root, id, &start_time, &boot_id, &error);
      if (entry == NULL)
        {
          g_warning ("%s: not an autosave side file (%s); skipped", side, error->message);
          continue;
        }
      if (napkin_autosave_owner_is_alive (entry->pid, start_time, boot_id))
        continue;  /* another window's, in a running Napkin (or this one) */
      snapshot = snapshot_path (dir, id);
      if (g_lstat (snapshot, &st) != 0 || !S_ISREG (st.st_mode))
        {
          /* Killed between the side file and its first snapshot: nothing to recover. */
          g_debug ("%s: no snapshot beside it; skipped", side);
          continue;
        }
      g_ptr_array_add (entries, g_steal_pointer (&entry));
    }
  g_ptr_array_sort (entries, compare_newest_first);
  return entries;
}

NapkinDiagram *
napkin_autosave_load (const char                 *dir,
                      const NapkinAutosaveEntry  *entry,
                      GError                    **error)
{
  g_autofree char *snapshot = NULL;
  NapkinDiagram *diagram;

  g_return_val_if_fail (dir != NULL, NULL);
  g_return_val_if_fail (entry != NULL && id_is_valid (entry->id), NULL);

  snapshot = snapshot_path (dir, entry->id);
  diagram = napkin_diagram_load_from_file (snapshot, NAPKIN_LOAD_DEFAULT, error);
  if (diagram == NULL)
    g_prefix_error (error, "autosave “%s”: ", snapshot);
  return diagram;
}

gboolean
napkin_autosave_claim (const char                 *dir,
                       const NapkinAutosaveEntry  *entry,
                       GError                    **error)
{
  g_return_val_if_fail (dir != NULL, FALSE);
  g_return_val_if_fail (entry != NULL && id_is_valid (entry->id), FALSE);

  return write_side_file (dir, entry->id, entry->path, entry->title, entry->time, error);
}
