/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The autosave store (src/core/napkin-autosave.c): write, list, load, claim,
 * remove; whose snapshots are offered; corrupt and foreign files; and SIGKILL in
 * the middle of autosave writes. */
/* kill () under -std=c17 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-autosave.h"
#include "napkin-error.h"
#include "napkin-file.h"

static const char *self_exe;

static NapkinDiagram *
load_example (const char *name)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), name, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);

  g_assert_no_error (error);
  return diagram;
}

static char *
make_dir (void)
{
  g_autoptr(GError) error = NULL;
  char *dir = g_dir_make_tmp ("napkin-autosave-XXXXXX", &error);

  g_assert_no_error (error);
  return dir;
}

static guint
count_files (const char *dir)
{
  g_autoptr(GDir) folder = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (folder != NULL && g_dir_read_name (folder) != NULL)
    n++;
  return n;
}

static void
remove_tree (const char *dir)
{
  g_autoptr(GDir) folder = g_dir_open (dir, 0, NULL);
  const char *name;

  while (folder != NULL && (name = g_dir_read_name (folder)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_DIR))
        remove_tree (path);
      else
        g_unlink (path);
    }
  g_rmdir (dir);
}

/* A pid that no process has: a child that has exited and been reaped. */
static int
dead_pid (void)
{
  const char *argv[] = { "/bin/true", NULL };
  g_autoptr(GError) error = NULL;
  GPid pid;
  int status;

  g_assert_true (g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  return pid;
}

/* Rewrites fields of a side file as another process would have written them. */
static void
set_owner (const char *dir,
           const char *id,
           int         pid,
           gint64      start_time,
           const char *boot_id)
{
  g_autofree char *name = g_strconcat (id, ".json", NULL);
  g_autofree char *path = g_build_filename (dir, name, NULL);
  json_object *root = json_object_from_file (path);

  g_assert_nonnull (root);
  json_object_object_add (root, "pid", json_object_new_int (pid));
  json_object_object_add (root, "start_time", json_object_new_int64 (start_time));
  if (boot_id != NULL)
    json_object_object_add (root, "boot_id", json_object_new_string (boot_id));
  g_assert_cmpint (json_object_to_file (path, root), ==, 0);
  json_object_put (root);
}

static void
test_write_list_load_remove (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *store = g_build_filename (dir, "state", "napkin", "autosave", NULL);
  g_autofree char *id = napkin_autosave_new_id ();
  g_autoptr(NapkinDiagram) original = load_example ("matmul.napkin");
  g_autoptr(NapkinDiagram) other = load_example ("softmax.napkin");
  g_autoptr(GPtrArray) entries = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *expected = napkin_diagram_save_to_data (original, NULL);
  g_autofree char *loaded_text = NULL;
  g_autoptr(NapkinDiagram) loaded = NULL;
  NapkinAutosaveEntry *entry;
  GStatBuf st;
  gint64 before = g_get_real_time () / G_USEC_PER_SEC;

  g_assert_true (g_uuid_string_is_valid (id));
  /* A missing folder: nothing to recover, no error. */
  entries = napkin_autosave_list_recoverable (store);
  g_assert_cmpuint (entries->len, ==, 0);
  g_clear_pointer (&entries, g_ptr_array_unref);

  /* Two writes: the second replaces the first. The folder is private. */
  g_assert_true (napkin_autosave_write (store, id, other, "/home/u/m.napkin", "m.napkin", &error));
  g_assert_no_error (error);
  g_assert_true (napkin_autosave_write (store, id, original, "/home/u/m.napkin", "m.napkin", &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (store, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 0777, ==, 0700);

  /* Owned by this live process: not offered. */
  entries = napkin_autosave_list_recoverable (store);
  g_assert_cmpuint (entries->len, ==, 0);
  g_clear_pointer (&entries, g_ptr_array_unref);

  /* Its owner gone: offered, with its path, title and time. */
  set_owner (store, id, dead_pid (), 0, NULL);
  entries = napkin_autosave_list_recoverable (store);
  g_assert_cmpuint (entries->len, ==, 1);
  entry = entries->pdata[0];
  g_assert_cmpstr (entry->id, ==, id);
  g_assert_cmpstr (entry->path, ==, "/home/u/m.napkin");
  g_assert_cmpstr (entry->title, ==, "m.napkin");
  g_assert_cmpint (entry->time, >=, before);
  g_assert_cmpint (entry->time, <=, before + 60);
  g_assert_cmpint (entry->pid, !=, getpid ());

  /* The last snapshot, byte for byte. */
  loaded = napkin_autosave_load (store, entry, &error);
  g_assert_no_error (error);
  loaded_text = napkin_diagram_save_to_data (loaded, NULL);
  g_assert_cmpstr (loaded_text, ==, expected);

  /* Claimed by this process (recovered into a window here): not offered again. */
  g_assert_true (napkin_autosave_claim (store, entry, &error));
  g_assert_no_error (error);
  g_clear_pointer (&entries, g_ptr_array_unref);
  entries = napkin_autosave_list_recoverable (store);
  g_assert_cmpuint (entries->len, ==, 0);

  /* Remove leaves nothing: snapshot, its backup, side file. Twice is fine. */
  g_assert_cmpuint (count_files (store), ==, 3);   /* ID.napkin, ID.napkin~, ID.json */
  g_assert_true (napkin_autosave_remove (store, id, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (count_files (store), ==, 0);
  g_assert_true (napkin_autosave_remove (store, id, &error));
  g_assert_no_error (error);
  remove_tree (dir);
}

static void
test_untitled_and_order (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *old_id = napkin_autosave_new_id ();
  g_autofree char *new_id = napkin_autosave_new_id ();
  g_autoptr(NapkinDiagram) diagram = load_example ("softmax.napkin");
  g_autoptr(GPtrArray) entries = NULL;
  g_autoptr(GError) error = NULL;
  int dead = dead_pid ();

  g_assert_true (napkin_autosave_write (dir, old_id, diagram, NULL, "Untitled Diagram", &error));
  g_assert_true (napkin_autosave_write (dir, new_id, diagram, "/tmp/x.napkin", "x.napkin", &error));
  g_assert_no_error (error);
  set_owner (dir, old_id, dead, 0, NULL);
  set_owner (dir, new_id, dead, 0, NULL);
  /* The first one a minute older. */
  {
    g_autofree char *path = g_build_filename (dir, old_id, NULL);
    g_autofree char *side = g_strconcat (path, ".json", NULL);
    json_object *root = json_object_from_file (side);

    json_object_object_add (root, "time",
                            json_object_new_int64 (g_get_real_time () / G_USEC_PER_SEC - 60));
    json_object_to_file (side, root);
    json_object_put (root);
  }
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 2);
  g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->id, ==, new_id);
  g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[1])->id, ==, old_id);
  g_assert_null (((NapkinAutosaveEntry *) entries->pdata[1])->path);
  g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[1])->title, ==, "Untitled Diagram");
  g_assert_true (napkin_autosave_remove (dir, old_id, NULL));
  g_assert_true (napkin_autosave_remove (dir, new_id, NULL));
  g_assert_cmpuint (count_files (dir), ==, 0);
  remove_tree (dir);
}

/* Two instances: a snapshot whose owner runs is never offered to another; once
 * that owner is killed it is. A reused pid (another start time) or a reboot
 * (another boot id) does not keep a snapshot hidden. */
static void
test_live_owner (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *id = napkin_autosave_new_id ();
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_autoptr(GPtrArray) entries = NULL;
  g_autoptr(GError) error = NULL;
  const char *argv[] = { "/bin/sleep", "60", NULL };
  guint64 start_time;
  GPid pid;
  int status;

  g_assert_true (napkin_autosave_write (dir, id, diagram, NULL, "t", &error));
  g_assert_no_error (error);
  g_assert_true (g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  start_time = napkin_autosave_process_start_time (pid);
  g_assert_cmpuint (start_time, >, 0);
  g_assert_true (napkin_autosave_owner_is_alive (pid, start_time, NULL));

  /* The other instance runs: its snapshot stays its own. */
  set_owner (dir, id, pid, (gint64) start_time, NULL);
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 0);
  g_clear_pointer (&entries, g_ptr_array_unref);

  /* The same pid with another start time: a different process now has it. */
  set_owner (dir, id, pid, (gint64) start_time + 1, NULL);
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  g_clear_pointer (&entries, g_ptr_array_unref);

  /* Written before a reboot: whatever has that pid now is not its owner. */
  set_owner (dir, id, getpid (), (gint64) napkin_autosave_process_start_time (getpid ()),
             "00000000-0000-0000-0000-000000000000");
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  g_clear_pointer (&entries, g_ptr_array_unref);

  /* The other instance is killed: now it is a crash survivor. */
  set_owner (dir, id, pid, (gint64) start_time, NULL);
  g_assert_cmpint (kill (pid, SIGKILL), ==, 0);
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_spawn_close_pid (pid);
  g_assert_false (napkin_autosave_owner_is_alive (pid, start_time, NULL));
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  g_assert_cmpint (((NapkinAutosaveEntry *) entries->pdata[0])->pid, ==, pid);
  napkin_autosave_remove (dir, id, NULL);
  remove_tree (dir);
}

/* What an interrupted write leaves is never offered, never warned about, and goes
 * with its snapshot; another id's leftovers stay. */
static void
test_leftovers (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *id = napkin_autosave_new_id ();
  g_autofree char *other = napkin_autosave_new_id ();
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_autoptr(GPtrArray) entries = NULL;
  g_autofree char *temp = g_strdup_printf ("%s/.%s.napkin.Ab12Cd", dir, id);
  g_autofree char *temp_backup = g_strdup_printf ("%s/.%s.napkin~.Ab12Cd34", dir, id);
  g_autofree char *other_temp = g_strdup_printf ("%s/.%s.napkin.Zz99Yy", dir, other);
  g_autofree char *orphan_side = g_strdup_printf ("%s/%s.json", dir, other);

  g_assert_true (napkin_autosave_write (dir, id, diagram, NULL, "t", NULL));
  set_owner (dir, id, dead_pid (), 0, NULL);
  g_assert_true (g_file_set_contents (temp, "{\"form", -1, NULL));
  g_assert_true (g_file_set_contents (temp_backup, "", -1, NULL));
  g_assert_true (g_file_set_contents (other_temp, "{", -1, NULL));
  /* Killed after its side file, before its first snapshot: nothing to offer. */
  g_assert_true (napkin_autosave_write (dir, other, diagram, NULL, "t", NULL));
  set_owner (dir, other, dead_pid (), 0, NULL);
  {
    g_autofree char *snap = g_strdup_printf ("%s/%s.napkin", dir, other);
    g_autofree char *snap_backup = g_strdup_printf ("%s/%s.napkin~", dir, other);

    g_unlink (snap);
    g_unlink (snap_backup);
  }
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->id, ==, id);
  g_assert_true (napkin_autosave_remove (dir, id, NULL));
  g_assert_false (g_file_test (temp, G_FILE_TEST_EXISTS));
  g_assert_false (g_file_test (temp_backup, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (other_temp, G_FILE_TEST_EXISTS));
  g_assert_true (g_file_test (orphan_side, G_FILE_TEST_EXISTS));
  g_assert_true (napkin_autosave_remove (dir, other, NULL));
  g_assert_cmpuint (count_files (dir), ==, 0);
  remove_tree (dir);
}

/* Every corrupt or foreign file is skipped with one warning that names it; the
 * valid snapshot beside it is still offered. */
static void
test_corrupt_and_foreign (void)
{
  static const struct { const char *name; const char *contents; const char *warning; gssize length; } cases[] = {
    { "notes.txt", "hello", "*notes.txt: not an autosave of Napkin*" },
    { "not-a-uuid.json", "{}", "*not-a-uuid.json: not an autosave of Napkin*" },
    { "UUID.json", "", "*.json: not an autosave side file (not UTF-8 JSON text)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"vers", "*not JSON*" },
    { "UUID.json", "[1, 2]", "*($: not a JSON object)*" },
    { "UUID.json", "{\"format\": \"other\", \"version\": 1}", "*(format: not \"napkin-autosave\")*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 2}", "*(version: not 1)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": \"12\"}",
      "*(pid: missing or not an integer)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": -5}", "*(pid: not a process id)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 99999999999}",
      "*(pid: not a process id)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 5, \"time\": 1.5}",
      "*(time: missing or not an integer)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 5, \"time\": 1, \"path\": 3}",
      "*(path: neither a string nor null)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 5, \"time\": 1, "
                   "\"path\": \"../etc/passwd\", \"title\": \"t\"}", "*(path: not an absolute path)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 5, \"time\": 1, \"path\": null}",
      "*(title: missing or not a string)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"version\": 1, \"pid\": 5, \"time\": 1, "
                   "\"title\": \"t\", \"start_time\": \"x\"}", "*(start_time: not an integer)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\", \"title\": \"\xff\xfe\"}", "*(not UTF-8 JSON text)*" },
    { "UUID.json", "{\"format\": \"napkin-autosave\"}\0garbage", "*(not UTF-8 JSON text)*",
      sizeof "{\"format\": \"napkin-autosave\"}\0garbage" - 1 },
    { "UUID.json", NULL, "*(not a regular file)*" },        /* a folder */
    { "UUID.json", "BIG", "*(larger than 65536 bytes)*" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *dir = make_dir ();
      g_autofree char *good = napkin_autosave_new_id ();
      g_autofree char *bad_id = napkin_autosave_new_id ();
      g_autoptr(GString) name = g_string_new (cases[i].name);
      g_autofree char *path = NULL;
      g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
      g_autoptr(GPtrArray) entries = NULL;
      g_autoptr(GError) error = NULL;

      g_assert_true (napkin_autosave_write (dir, good, diagram, NULL, "good", &error));
      g_assert_no_error (error);
      set_owner (dir, good, dead_pid (), 0, NULL);

      g_string_replace (name, "UUID", bad_id, 1);
      path = g_build_filename (dir, name->str, NULL);
      if (cases[i].contents == NULL)
        g_assert_cmpint (g_mkdir (path, 0700), ==, 0);
      else if (g_str_equal (cases[i].contents, "BIG"))
        {
          g_autofree char *big = g_strnfill (70000, ' ');

          g_assert_true (g_file_set_contents (path, big, -1, NULL));
        }
      else
        {
          /* A length where the text holds a NUL. */
          gssize length = cases[i].length ? cases[i].length : -1;

          g_assert_true (g_file_set_contents (path, cases[i].contents, length, NULL));
        }
      /* A snapshot beside the bad side file: it must not be offered either. */
      {
        g_autofree char *snap = g_strdup_printf ("%s/%s.napkin", dir, bad_id);

        g_assert_true (napkin_diagram_save_to_file (diagram, snap, NULL));
      }

      g_test_expect_message ("napkin-autosave", G_LOG_LEVEL_WARNING, cases[i].warning);
      entries = napkin_autosave_list_recoverable (dir);
      g_test_assert_expected_messages ();
      g_assert_cmpuint (entries->len, ==, 1);
      g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->id, ==, good);
      remove_tree (dir);
    }
}

/* A snapshot that is not a diagram (damaged on disk): offered, and loading it
 * says why it cannot be recovered. */
static void
test_corrupt_snapshot (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *id = napkin_autosave_new_id ();
  g_autofree char *snap = NULL;
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul.napkin");
  g_autoptr(NapkinDiagram) loaded = NULL;
  g_autoptr(GPtrArray) entries = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_autosave_write (dir, id, diagram, NULL, "t", NULL));
  set_owner (dir, id, dead_pid (), 0, NULL);
  snap = g_strdup_printf ("%s/%s.napkin", dir, id);
  g_assert_true (g_file_set_contents (snap, "{\"format\": \"napkin\", \"version\": 1, \"axes\": [", -1, NULL));
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  loaded = napkin_autosave_load (dir, entries->pdata[0], &error);
  g_assert_null (loaded);
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_PARSE);
  g_assert_nonnull (strstr (error->message, snap));
  napkin_autosave_remove (dir, id, NULL);
  remove_tree (dir);
}

/* The env override the app tests use. */
static void
test_default_dir (void)
{
  g_autofree char *dir = NULL;
  g_autofree char *old = g_strdup (g_getenv ("NAPKIN_AUTOSAVE_DIR"));

  g_setenv ("NAPKIN_AUTOSAVE_DIR", "/some/where", TRUE);
  dir = napkin_autosave_default_dir ();
  g_assert_cmpstr (dir, ==, "/some/where");
  g_clear_pointer (&dir, g_free);
  g_unsetenv ("NAPKIN_AUTOSAVE_DIR");
  dir = napkin_autosave_default_dir ();
  g_assert_true (g_str_has_prefix (dir, g_get_user_state_dir ()));
  g_assert_true (g_str_has_suffix (dir, "/napkin/autosave"));
  if (old != NULL)
    g_setenv ("NAPKIN_AUTOSAVE_DIR", old, TRUE);
}

/* Child mode: autosaves two documents under one id in turn, forever, printing
 * one line per finished write. */
static int
autosave_loop (const char *dir,
               const char *id)
{
  g_autoptr(NapkinDiagram) a = load_example ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) b = load_example ("mlp.napkin");
  g_autoptr(GError) error = NULL;

  for (guint64 i = 0;; i++)
    {
      if (!napkin_autosave_write (dir, id, i % 2 ? b : a, "/tmp/doc.napkin", "doc.napkin", &error))
        {
          fprintf (stderr, "autosave loop: %s\n", error->message);
          return 1;
        }
      printf ("%" G_GUINT64_FORMAT "\n", i);
      fflush (stdout);
    }
}

/* SIGKILL at random moments during autosave writes: after every kill the snapshot
 * is offered (its owner is dead) and is one of the two documents, complete. */
static void
test_kill_during_autosave (void)
{
  g_autofree char *dir = make_dir ();
  g_autofree char *id = napkin_autosave_new_id ();
  g_autoptr(NapkinDiagram) a = load_example ("flash-attention.napkin");
  g_autoptr(NapkinDiagram) b = load_example ("mlp.napkin");
  g_autofree char *a_text = napkin_diagram_save_to_data (a, NULL);
  g_autofree char *b_text = napkin_diagram_save_to_data (b, NULL);
  GRand *rand = g_rand_new_with_seed (g_test_rand_int ());
  guint kills = 40, writes = 0, as_a = 0, as_b = 0;
  double write_us;

  {
    g_autoptr(GTimer) timer = g_timer_new ();

    for (guint i = 0; i < 4; i++)
      g_assert_true (napkin_autosave_write (dir, id, i % 2 ? b : a, NULL, "t", NULL));
    write_us = MAX (g_timer_elapsed (timer, NULL) / 4 * G_USEC_PER_SEC, 100);
    g_assert_true (napkin_autosave_remove (dir, id, NULL));
    /* The editor's main thread only serialises; the write is a worker's. */
    g_timer_start (timer);
    for (guint i = 0; i < 20; i++)
      g_free (napkin_diagram_save_to_data (a, NULL));
    g_test_message ("main-thread share of an autosave of flash-attention (serialising): %.0f us; "
                    "the write with its fsyncs: %.2f ms", g_timer_elapsed (timer, NULL) / 20 * 1e6,
                    write_us / 1000);
  }

  for (guint i = 0; i < kills; i++)
    {
      const char *argv[] = { self_exe, "--autosave-loop", dir, id, NULL };
      g_autoptr(GPtrArray) entries = NULL;
      g_autoptr(NapkinDiagram) loaded = NULL;
      g_autoptr(GError) error = NULL;
      g_autofree char *text = NULL;
      char buffer[4096];
      GPid pid;
      int out_fd, status;
      ssize_t n;

      g_assert_true (g_spawn_async_with_pipes (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                               &pid, NULL, &out_fd, NULL, &error));
      g_assert_no_error (error);
      /* After its first write, anywhere in the next three. */
      g_assert_cmpint (read (out_fd, buffer, 1), ==, 1);
      g_usleep (g_rand_int_range (rand, 0, (gint32) (3 * write_us)));
      g_assert_cmpint (kill (pid, SIGKILL), ==, 0);
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
      writes++;
      while ((n = read (out_fd, buffer, sizeof buffer)) > 0)
        for (ssize_t k = 0; k < n; k++)
          writes += buffer[k] == '\n';
      close (out_fd);
      g_spawn_close_pid (pid);

      entries = napkin_autosave_list_recoverable (dir);
      g_assert_cmpuint (entries->len, ==, 1);
      g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->path, ==, "/tmp/doc.napkin");
      loaded = napkin_autosave_load (dir, entries->pdata[0], &error);
      g_assert_no_error (error);
      text = napkin_diagram_save_to_data (loaded, NULL);
      if (g_str_equal (text, a_text))
        as_a++;
      else if (g_str_equal (text, b_text))
        as_b++;
      else
        g_error ("after kill %u the snapshot is neither document", i);
    }
  g_test_message ("%u kills within 3 autosave writes (%.2f ms each): %u writes finished; recovered "
                  "document A %u times, B %u times", kills, write_us / 1000, writes, as_a, as_b);
  g_assert_cmpuint (writes, >=, kills);
  g_assert_true (napkin_autosave_remove (dir, id, NULL));
  /* Remove also took the temporary files the kills left. */
  g_assert_cmpuint (count_files (dir), ==, 0);
  g_rand_free (rand);
  remove_tree (dir);
}

int
main (int    argc,
      char **argv)
{
  if (argc == 4 && g_str_equal (argv[1], "--autosave-loop"))
    return autosave_loop (argv[2], argv[3]);

  self_exe = argv[0];
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/core/autosave/write-list-load-claim-remove", test_write_list_load_remove);
  g_test_add_func ("/core/autosave/untitled-and-newest-first", test_untitled_and_order);
  g_test_add_func ("/core/autosave/live-owner-not-offered", test_live_owner);
  g_test_add_func ("/core/autosave/interrupted-write-leftovers", test_leftovers);
  g_test_add_func ("/core/autosave/corrupt-and-foreign-files", test_corrupt_and_foreign);
  g_test_add_func ("/core/autosave/corrupt-snapshot", test_corrupt_snapshot);
  g_test_add_func ("/core/autosave/default-dir", test_default_dir);
  g_test_add_func ("/core/autosave/kill-during-autosave", test_kill_during_autosave);
  return g_test_run ();
}
