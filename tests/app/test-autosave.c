/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Autosave and crash recovery in the editor (docs/security.md §4): the
 * idle snapshot, its removal on save, undo, close and discard, the recovery
 * dialog, and the real app SIGKILLed with unsaved changes then recovered. */
#define _POSIX_C_SOURCE 200809L   /* kill () */

#include "config.h"

#include <locale.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-app-test.h"
#include "napkin-application.h"
#include "napkin-autosave.h"
#include "napkin-file.h"

#define DELAY_MS 200

static NapkinApplication *app;
static char *tmpdir;
static char *autosave_dir;   /* this process's store ($NAPKIN_AUTOSAVE_DIR) */

static char *
copy_example (const char *example,
              const char *name)
{
  g_autofree char *src = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), example, NULL);
  g_autofree char *contents = NULL;
  char *path = g_build_filename (tmpdir, name, NULL);

  g_assert_true (g_file_get_contents (src, &contents, NULL, NULL));
  g_assert_true (g_file_set_contents (path, contents, -1, NULL));
  return path;
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

static char *
snapshot_of (const char *dir,
             const char *id)
{
  g_autofree char *name = g_strconcat (id, ".napkin", NULL);

  return g_build_filename (dir, name, NULL);
}

/* Polls (main loop running) until the condition holds or `ms` have passed. */
#define WAIT_UNTIL(cond, ms)                                                         \
  G_STMT_START {                                                                     \
    for (guint _i = 0; _i < (ms) / 10 && !(cond); _i++)                              \
      iterate (10);                                                                  \
  } G_STMT_END

static char *
document_text (NapkinDiagram *diagram)
{
  return napkin_diagram_save_to_data (diagram, NULL);
}

static char *
file_document_text (const char *path)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);

  g_assert_no_error (error);
  return document_text (diagram);
}

static NapkinWindow *
open_window (const char *path)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_load_file (window, file, &error));
  g_assert_no_error (error);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  return window;
}

static AdwMessageDialog *
find_dialog (void)
{
  GListModel *toplevels = gtk_window_get_toplevels ();

  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) w = g_list_model_get_item (toplevels, i);

      if (ADW_IS_MESSAGE_DIALOG (w) && gtk_widget_get_visible (GTK_WIDGET (w)))
        return ADW_MESSAGE_DIALOG (w);
    }
  return NULL;
}

/* In one window: the snapshot comes after the idle delay, holds the unsaved
 * document, is not offered while this process runs, and goes on undo back to the
 * saved state, on save, and on close with "Discard". */
static void
test_window_snapshots (void)
{
  g_autofree char *path = copy_example ("matmul.napkin", "window.napkin");
  NapkinWindow *window = open_window (path);
  NapkinAutosaver *autosaver = napkin_window_get_autosaver (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autofree char *snapshot = snapshot_of (autosave_dir, napkin_autosaver_get_id (autosaver));
  g_autofree char *side = g_strdup_printf ("%s/%s.json", autosave_dir, napkin_autosaver_get_id (autosaver));
  g_autofree char *expected = NULL;
  g_autofree char *got = NULL;
  g_autofree char *side_text = NULL;
  g_autoptr(GPtrArray) entries = NULL;
  g_autoptr(GError) error = NULL;
  gpointer watch = window;
  gint64 edited;

  g_assert_cmpstr (napkin_autosaver_get_dir (autosaver), ==, autosave_dir);
  g_assert_false (g_file_test (snapshot, G_FILE_TEST_EXISTS));

  /* An edit: nothing at once, the snapshot after the idle delay. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "reduce"));
  edited = g_get_monotonic_time ();
  g_assert_true (napkin_history_get_modified (history));
  iterate (DELAY_MS / 4);
  g_assert_false (g_file_test (snapshot, G_FILE_TEST_EXISTS));
  WAIT_UNTIL (napkin_autosaver_get_n_writes (autosaver) > 0, 10000);
  g_assert_cmpuint (napkin_autosaver_get_n_writes (autosaver), ==, 1);
  g_assert_cmpint (g_get_monotonic_time () - edited, >=, DELAY_MS * 1000);
  expected = document_text (diagram_of (window));
  got = file_document_text (snapshot);
  g_assert_cmpstr (got, ==, expected);
  /* The side file names the document's own file. */
  g_assert_true (g_file_get_contents (side, &side_text, NULL, NULL));
  g_assert_nonnull (strstr (side_text, path));
  /* The user's own file is untouched. */
  g_clear_pointer (&got, g_free);
  got = file_document_text (path);
  g_assert_cmpstr (got, !=, expected);
  /* Owned by this running process: never offered, here or to another instance. */
  entries = napkin_autosave_list_recoverable (autosave_dir);
  g_assert_cmpuint (entries->len, ==, 0);

  /* Undone back to what is on disk: the snapshot goes. */
  g_assert_true (napkin_history_undo (history));
  g_assert_false (napkin_history_get_modified (history));
  WAIT_UNTIL (!g_file_test (snapshot, G_FILE_TEST_EXISTS), 10000);
  g_assert_cmpuint (count_files (autosave_dir), ==, 0);

  /* Edited again, then saved: gone at once, and no late write brings it back. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "map"));
  WAIT_UNTIL (g_file_test (snapshot, G_FILE_TEST_EXISTS), 10000);
  g_assert_true (g_file_test (snapshot, G_FILE_TEST_EXISTS));
  {
    g_autoptr(GFile) file = g_file_new_for_path (path);

    g_assert_true (napkin_window_save_to_file (window, file, &error));
    g_assert_no_error (error);
  }
  g_assert_cmpuint (count_files (autosave_dir), ==, 0);
  iterate (3 * DELAY_MS);
  g_assert_cmpuint (count_files (autosave_dir), ==, 0);

  /* Edited, autosaved, closed with "Discard": nothing left to recover. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "softmax"));
  WAIT_UNTIL (g_file_test (snapshot, G_FILE_TEST_EXISTS), 10000);
  g_assert_true (g_file_test (snapshot, G_FILE_TEST_EXISTS));
  g_object_add_weak_pointer (G_OBJECT (window), &watch);
  gtk_window_close (GTK_WINDOW (window));
  WAIT_UNTIL (find_dialog () != NULL, 5000);
  g_assert_nonnull (find_dialog ());
  adw_message_dialog_response (find_dialog (), "discard");
  WAIT_UNTIL (watch == NULL, 5000);
  g_assert_null (watch);
  g_assert_cmpuint (count_files (autosave_dir), ==, 0);
}

/* A store that cannot be written (here a file stands where its folder would be,
 * which stops root too): the window says so in its banner, once, and the document
 * stays modified; saving it still works. */
static void
test_write_failure_shown (void)
{
  g_autofree char *path = copy_example ("softmax.napkin", "unwritable.napkin");
  g_autofree char *blocker = g_build_filename (tmpdir, "not-a-folder", NULL);
  g_autofree char *bad_dir = g_build_filename (blocker, "autosave", NULL);
  NapkinWindow *window;
  NapkinHistory *history;
  const char *banner;
  g_autoptr(GError) error = NULL;

  g_assert_true (g_file_set_contents (blocker, "", 0, NULL));
  g_setenv ("NAPKIN_AUTOSAVE_DIR", bad_dir, TRUE);
  window = open_window (path);
  g_setenv ("NAPKIN_AUTOSAVE_DIR", autosave_dir, TRUE);
  history = napkin_window_get_history (window);
  g_assert_cmpstr (napkin_autosaver_get_dir (napkin_window_get_autosaver (window)), ==, bad_dir);
  g_assert_null (napkin_window_get_banner_text (window));

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "reduce"));
  WAIT_UNTIL (napkin_window_get_banner_text (window) != NULL, 10000);
  banner = napkin_window_get_banner_text (window);
  g_assert_nonnull (banner);
  g_test_message ("banner: %s", banner);
  g_assert_true (g_str_has_prefix (banner, "Autosave failed: "));
  g_assert_nonnull (strstr (banner, "save the document to keep them"));
  g_assert_cmpuint (napkin_autosaver_get_n_writes (napkin_window_get_autosaver (window)), ==, 0);
  g_assert_true (napkin_history_get_modified (history));

  /* Said once: dismissed, a second failing write does not bring it back. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.dismiss-banner", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "map"));
  iterate (3 * DELAY_MS);
  g_assert_null (napkin_window_get_banner_text (window));

  /* The user's save is not the autosave: it works, and the document is clean. */
  {
    g_autoptr(GFile) file = g_file_new_for_path (path);
    g_autofree char *expected = document_text (diagram_of (window));
    g_autofree char *got = NULL;

    g_assert_true (napkin_window_save_to_file (window, file, &error));
    g_assert_no_error (error);
    got = file_document_text (path);
    g_assert_cmpstr (got, ==, expected);
  }
  g_assert_false (napkin_history_get_modified (history));
  gtk_window_destroy (GTK_WINDOW (window));
  g_unlink (blocker);
}

/* Editing without a pause still autosaves: at the latest ten delays after the
 * first unsaved change. */
static void
test_continuous_editing (void)
{
  g_autofree char *path = copy_example ("matmul.napkin", "busy.napkin");
  NapkinWindow *window = open_window (path);
  NapkinAutosaver *autosaver = napkin_window_get_autosaver (window);
  gint64 start = g_get_monotonic_time ();
  gint64 written_after = -1;

  for (guint i = 0; i < 60 && written_after < 0; i++)
    {
      /* A change every half delay: the idle timer alone would never fire. */
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-in", NULL));
      g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "map"));
      iterate (DELAY_MS / 2);
      if (napkin_autosaver_get_n_writes (autosaver) > 0)
        written_after = g_get_monotonic_time () - start;
    }
  g_assert_cmpint (written_after, >, 0);
  g_test_message ("first snapshot %.2f s into continuous editing (delay %d ms)", written_after / 1e6, DELAY_MS);
  g_assert_cmpint (written_after, >=, 10 * DELAY_MS * 1000);
  g_assert_cmpint (written_after, <, 10 * DELAY_MS * 1000 + 3 * G_USEC_PER_SEC);
  /* Destroyed while modified without asking (only tests and a replaced document
   * do that; a crash never runs it): gone from this process, so no snapshot. */
  {
    g_autofree char *snapshot = snapshot_of (autosave_dir, napkin_autosaver_get_id (autosaver));

    WAIT_UNTIL (g_file_test (snapshot, G_FILE_TEST_EXISTS), 5000);
    g_assert_true (g_file_test (snapshot, G_FILE_TEST_EXISTS));
    gtk_window_destroy (GTK_WINDOW (window));
    WAIT_UNTIL (count_files (autosave_dir) == 0, 5000);
    g_assert_cmpuint (count_files (autosave_dir), ==, 0);
  }
}

/* A pid that no process has. */
static int
dead_pid (void)
{
  const char *argv[] = { "/bin/true", NULL };
  GPid pid;
  int status;

  g_assert_true (g_spawn_async (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL, &pid, NULL));
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  return pid;
}

/* A snapshot as a Napkin that has since crashed left it. */
static char *
crashed_snapshot (NapkinDiagram *diagram,
                  const char    *path,
                  const char    *title,
                  gint64         age_s)
{
  char *id = napkin_autosave_new_id ();
  g_autofree char *side = g_strdup_printf ("%s/%s.json", autosave_dir, id);
  json_object *root;

  g_assert_true (napkin_autosave_write (autosave_dir, id, diagram, path, title, NULL));
  root = json_object_from_file (side);
  json_object_object_add (root, "pid", json_object_new_int (dead_pid ()));
  json_object_object_add (root, "time", json_object_new_int64 (g_get_real_time () / G_USEC_PER_SEC - age_s));
  g_assert_cmpint (json_object_to_file (side, root), ==, 0);
  json_object_put (root);
  return id;
}

/* At startup: one question per crashed snapshot, newest first. "Recover" opens it
 * as modified under its own file, "Discard" deletes it; saving the recovered
 * document empties the store. */
static void
test_recovery_dialog (void)
{
  g_autofree char *path = copy_example ("matmul.napkin", "recovered.napkin");
  g_autoptr(NapkinDiagram) edited = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
  g_autoptr(NapkinDiagram) untitled = napkin_diagram_new ();
  g_autofree char *edited_id = NULL;
  g_autofree char *untitled_id = NULL;
  g_autofree char *again_path = copy_example ("softmax.napkin", "again.napkin");
  g_autoptr(NapkinDiagram) again = napkin_diagram_load_from_file (again_path, NAPKIN_LOAD_DEFAULT, NULL);
  g_autofree char *again_id = NULL;
  g_autofree char *again_expected = NULL;
  NapkinWindow *open_again;
  gpointer open_again_watch;
  g_autofree char *expected = NULL;
  g_autofree char *got = NULL;
  g_autoptr(GError) error = NULL;
  NapkinWindow *parent = napkin_window_new (GTK_APPLICATION (app));
  NapkinWindow *window;
  AdwMessageDialog *dialog;

  /* The unsaved edit: a title the file on disk does not have. */
  napkin_diagram_set_title (edited, "Edited before the crash");
  expected = document_text (edited);
  edited_id = crashed_snapshot (edited, path, "recovered.napkin", 0);
  untitled_id = crashed_snapshot (untitled, NULL, "", 60);
  /* A file that is open again (`napkin FILE` after the crash), unchanged. */
  open_again = open_window (again_path);
  napkin_diagram_set_title (again, "Edited too");
  again_expected = document_text (again);
  again_id = crashed_snapshot (again, again_path, "again.napkin", 30);

  /* The untouched window the first recovered document goes into. */
  napkin_window_load_default (parent);
  gtk_window_present (GTK_WINDOW (parent));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (parent));
  g_assert_cmpuint (napkin_application_offer_recovery (app), ==, 0);
  /* Once per process. */
  g_assert_cmpuint (napkin_application_offer_recovery (app), ==, 0);

  WAIT_UNTIL (find_dialog () != NULL, 5000);
  dialog = find_dialog ();
  g_assert_nonnull (dialog);
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "recovered.napkin"));
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), path));
  {
    gpointer first = dialog;

    g_object_add_weak_pointer (G_OBJECT (dialog), &first);
    /* What a click does: the response, then the dialog goes. */
    adw_message_dialog_response (dialog, "recover");
    gtk_window_destroy (GTK_WINDOW (dialog));
    WAIT_UNTIL (first == NULL, 5000);
    g_assert_null (first);
  }

  window = NAPKIN_WINDOW (gtk_application_get_active_window (GTK_APPLICATION (app)));
  g_assert_true (window == parent);   /* the pristine example window was reused */
  g_assert_nonnull (napkin_window_get_file (window));
  {
    g_autofree char *shown = g_file_get_path (napkin_window_get_file (window));

    g_assert_cmpstr (shown, ==, path);
  }
  g_assert_true (napkin_history_get_modified (napkin_window_get_history (window)));
  g_assert_true (g_str_has_prefix (gtk_window_get_title (GTK_WINDOW (window)), "• recovered.napkin"));
  got = document_text (diagram_of (window));
  g_assert_cmpstr (got, ==, expected);
  g_assert_cmpstr (napkin_autosaver_get_id (napkin_window_get_autosaver (window)), ==, edited_id);
  /* Claimed: this running process owns it now. */
  {
    g_autoptr(GPtrArray) entries = napkin_autosave_list_recoverable (autosave_dir);

    g_assert_cmpuint (entries->len, ==, 2);
    g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->id, ==, again_id);
    g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[1])->id, ==, untitled_id);
  }

  /* The second question: the file open again goes into its own window. */
  WAIT_UNTIL (find_dialog () != NULL, 5000);
  dialog = find_dialog ();
  g_assert_nonnull (dialog);
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), "again.napkin"));
  {
    guint n_windows = g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
    gpointer second = dialog;

    g_object_add_weak_pointer (G_OBJECT (dialog), &second);
    adw_message_dialog_response (dialog, "recover");
    gtk_window_destroy (GTK_WINDOW (dialog));
    WAIT_UNTIL (second == NULL, 5000);
    g_assert_cmpuint (g_list_length (gtk_application_get_windows (GTK_APPLICATION (app))), ==, n_windows);
  }
  g_clear_pointer (&got, g_free);
  got = document_text (diagram_of (open_again));
  g_assert_cmpstr (got, ==, again_expected);
  g_assert_true (napkin_history_get_modified (napkin_window_get_history (open_again)));
  /* The third: the untitled one, discarded. */
  WAIT_UNTIL (find_dialog () != NULL, 5000);
  dialog = find_dialog ();
  g_assert_nonnull (dialog);
  g_assert_nonnull (strstr (adw_message_dialog_get_body (dialog), _("Untitled Diagram")));
  adw_message_dialog_response (dialog, "discard");
  gtk_window_destroy (GTK_WINDOW (dialog));
  iterate (50);
  {
    g_autofree char *snapshot = snapshot_of (autosave_dir, untitled_id);

    g_assert_false (g_file_test (snapshot, G_FILE_TEST_EXISTS));
  }
  g_assert_null (find_dialog ());

  /* Closed with Discard: its snapshot goes. */
  open_again_watch = open_again;
  g_object_add_weak_pointer (G_OBJECT (open_again), &open_again_watch);
  gtk_window_close (GTK_WINDOW (open_again));
  WAIT_UNTIL (find_dialog () != NULL, 5000);
  adw_message_dialog_response (find_dialog (), "discard");
  WAIT_UNTIL (open_again_watch == NULL, 5000);
  g_assert_null (open_again_watch);
  {
    g_autofree char *snapshot = snapshot_of (autosave_dir, again_id);

    g_assert_false (g_file_test (snapshot, G_FILE_TEST_EXISTS));
  }

  /* Save writes the original file, and the store is empty. */
  g_assert_true (napkin_window_save_to_file (window, napkin_window_get_file (window), &error));
  g_assert_no_error (error);
  g_clear_pointer (&got, g_free);
  got = file_document_text (path);
  g_assert_cmpstr (got, ==, expected);
  g_assert_cmpuint (count_files (autosave_dir), ==, 0);
  gtk_window_destroy (GTK_WINDOW (window));
  iterate (20);
}

/* ---------------------------------------------------------------- the real app, killed */

/* napkin on `arg`, autosaving into `dir` 300 ms after each change. */
static GPid
spawn_with_autosave (const char *dir,
                     const char *arg)
{
  char **envp = g_get_environ ();

  envp = g_environ_setenv (envp, "NAPKIN_AUTOSAVE_DIR", dir, TRUE);
  envp = g_environ_setenv (envp, "NAPKIN_AUTOSAVE_DELAY_MS", "300", TRUE);
  return spawn_napkin (envp, arg);
}

/* The one snapshot in `dir`, if there is one and it loads. */
static NapkinDiagram *
load_only_snapshot (const char *dir)
{
  g_autoptr(GDir) folder = g_dir_open (dir, 0, NULL);
  const char *name;

  while (folder != NULL && (name = g_dir_read_name (folder)) != NULL)
    if (g_str_has_suffix (name, ".napkin"))
      {
        g_autofree char *path = g_build_filename (dir, name, NULL);

        return napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
      }
  return NULL;
}

/* The real app with unsaved changes, SIGKILLed: the next `napkin --recover-all`
 * opens the edited document under its own name, Ctrl+S writes it there, Ctrl+Q
 * quits cleanly, and no autosave is left. Meanwhile this process, another Napkin
 * instance, never sees the running app's snapshot as recoverable. */
static void
test_sigkill_and_recover (void)
{
  g_autofree char *xdotool_path = g_find_program_in_path ("xdotool");
  g_autofree char *path = copy_example ("matmul.napkin", "crash.napkin");
  g_autofree char *dir = g_build_filename (tmpdir, "crash-autosave", NULL);
  g_autofree char *wid = NULL;
  g_autofree char *snapshot_text = NULL;
  g_autofree char *saved_text = NULL;
  g_autoptr(NapkinDiagram) original = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
  g_autoptr(NapkinDiagram) snapshot = NULL;
  g_autoptr(GPtrArray) entries = NULL;
  guint n_original = napkin_diagram_n_nodes (original);
  int status = -1;
  GPid pid;

  if (xdotool_path == NULL)
    {
      g_test_skip ("xdotool is not installed (Debian package xdotool): the crash is not tested");
      return;
    }
  g_assert_cmpuint (n_original, >, 0);

  /* A real edit through the keyboard: select all, delete. Sent again until the
   * app shows it in a snapshot (a slow build may miss keys before its first frame). */
  pid = spawn_with_autosave (dir, path);
  wid = wait_window ("crash.napkin");
  for (guint attempt = 0; attempt < 5 && snapshot == NULL; attempt++)
    {
      g_free (xdotool_output ("windowfocus", "--sync", wid, NULL));
      g_free (xdotool_output ("key", "ctrl+a", NULL));
      g_usleep (300 * 1000);
      g_free (xdotool_output ("key", "Delete", NULL));
      for (guint i = 0; i < 50 && snapshot == NULL; i++)
        {
          g_usleep (100 * 1000);
          snapshot = load_only_snapshot (dir);
          if (snapshot != NULL && napkin_diagram_n_nodes (snapshot) == n_original)
            g_clear_object (&snapshot);
        }
    }
  g_assert_nonnull (snapshot);
  g_assert_cmpuint (napkin_diagram_n_nodes (snapshot), ==, 0);
  snapshot_text = document_text (snapshot);
  /* The file itself still holds the operations: the edit exists only unsaved. */
  g_assert_cmpuint (napkin_diagram_n_nodes (original), ==, n_original);

  /* Two instances: the running app's snapshot is not offered here. */
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 0);
  g_clear_pointer (&entries, g_ptr_array_unref);

  g_assert_cmpint (kill (pid, SIGKILL), ==, 0);
  g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
  g_spawn_close_pid (pid);
  g_assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
  g_clear_pointer (&wid, g_free);

  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 1);
  g_assert_cmpstr (((NapkinAutosaveEntry *) entries->pdata[0])->path, ==, path);

  /* Recovered without asking, titled as the original file, marked modified. */
  pid = spawn_with_autosave (dir, "--recover-all");
  wid = wait_window ("• crash.napkin");
  /* Owned by the new process: not offered to a third. */
  g_clear_pointer (&entries, g_ptr_array_unref);
  entries = napkin_autosave_list_recoverable (dir);
  g_assert_cmpuint (entries->len, ==, 0);

  /* Ctrl+S writes the original file (retried: keys sent before the first frame). */
  for (guint attempt = 0; attempt < 5; attempt++)
    {
      g_free (xdotool_output ("windowfocus", "--sync", wid, NULL));
      g_free (xdotool_output ("key", "ctrl+s", NULL));
      for (guint i = 0; i < 30; i++)
        {
          g_autoptr(NapkinDiagram) saved = NULL;

          g_usleep (100 * 1000);
          saved = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
          if (saved != NULL && napkin_diagram_n_nodes (saved) == 0)
            {
              saved_text = document_text (saved);
              break;
            }
        }
      if (saved_text != NULL)
        break;
    }
  g_assert_nonnull (saved_text);
  g_assert_cmpstr (saved_text, ==, snapshot_text);
  /* Saved: the snapshot is gone at once. */
  g_assert_cmpuint (count_files (dir), ==, 0);

  g_free (xdotool_output ("key", "ctrl+q", NULL));
  status = -1;
  for (guint i = 0; i < 600; i++)
    {
      if (waitpid (pid, &status, WNOHANG) == pid)
        break;
      status = -1;
      g_usleep (100 * 1000);
    }
  g_spawn_close_pid (pid);
  /* Nothing unsaved, so Quit asked nothing and the process ended cleanly... */
  g_assert_true (status != -1 && WIFEXITED (status) && WEXITSTATUS (status) == 0);
  /* ...leaving no autosave behind. */
  g_assert_cmpuint (count_files (dir), ==, 0);
}

int
main (int    argc,
      char **argv)
{
  int status;
  gboolean display = napkin_app_test_init (&argc, &argv, "napkin-autosave-app-XXXXXX", &tmpdir);

  autosave_dir = g_build_filename (tmpdir, "autosave", NULL);
  g_setenv ("NAPKIN_AUTOSAVE_DIR", autosave_dir, TRUE);
  g_setenv ("NAPKIN_AUTOSAVE_DELAY_MS", G_STRINGIFY (DELAY_MS), TRUE);
  if (!display)
    return g_test_run ();
  app = napkin_app_test_register (G_APPLICATION_HANDLES_OPEN);

  g_test_add_func ("/autosave/window/idle-snapshot-undo-save-discard", test_window_snapshots);
  g_test_add_func ("/autosave/window/continuous-editing-and-destroy", test_continuous_editing);
  g_test_add_func ("/autosave/window/write-failure-shown", test_write_failure_shown);
  g_test_add_func ("/autosave/recovery/dialog-recover-discard-save", test_recovery_dialog);
  g_test_add_func ("/autosave/crash/sigkill-then-recover-all", test_sigkill_and_recover);
  status = g_test_run ();
  g_object_unref (app);
  remove_tree (tmpdir);
  return status;
}
