/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Saves that cannot lose data (docs/security.md §4): the backup, permissions,
 * links, errors, and a save loop killed with SIGKILL at random moments. */
#define _GNU_SOURCE  /* kill, symlink under -std=c17 */
#define G_LOG_DOMAIN "napkin-test"

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <glib.h>
#include <glib/gstdio.h>

#include "napkin-error.h"
#include "napkin-file.h"

typedef struct
{
  char          *dir;
  char          *file;
  char          *backup;
  NapkinDiagram *a;
  NapkinDiagram *b;
  char          *a_text;   /* what a save of a / b writes, byte for byte */
  char          *b_text;
} Fixture;

/* A large description makes a save long enough for kills to land inside it. */
static NapkinDiagram *
load_example (const char *name,
              char        fill)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), name, NULL);
  g_autoptr(GError) error = NULL;
  g_autofree char *description = NULL;
  NapkinDiagram *diagram;

  diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  description = g_strnfill (256 * 1024, fill);
  napkin_diagram_set_description (diagram, description);
  return diagram;
}

static void
fixture_set_up (Fixture       *f,
                gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  f->dir = g_dir_make_tmp ("napkin-save-XXXXXX", &error);
  g_assert_no_error (error);
  f->file = g_build_filename (f->dir, "doc.napkin", NULL);
  f->backup = g_strconcat (f->file, "~", NULL);
  f->a = load_example ("matmul-tiled.napkin", 'a');
  f->b = load_example ("flash-attention.napkin", 'b');
  f->a_text = napkin_diagram_save_to_data (f->a, NULL);
  f->b_text = napkin_diagram_save_to_data (f->b, NULL);
}

static void
remove_tree (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  const char *name;

  while (d != NULL && (name = g_dir_read_name (d)) != NULL)
    {
      g_autofree char *path = g_build_filename (dir, name, NULL);
      g_unlink (path);
    }
  g_rmdir (dir);
}

static void
fixture_tear_down (Fixture       *f,
                   gconstpointer  data)
{
  remove_tree (f->dir);
  g_free (f->dir);
  g_free (f->file);
  g_free (f->backup);
  g_clear_object (&f->a);
  g_clear_object (&f->b);
  g_free (f->a_text);
  g_free (f->b_text);
}

static char *
read_file (const char *path)
{
  char *contents = NULL;

  if (!g_file_get_contents (path, &contents, NULL, NULL))
    return NULL;
  return contents;
}

static void
assert_file_is (const char *path,
                const char *text)
{
  g_autofree char *contents = read_file (path);

  g_assert_nonnull (contents);
  g_assert_true (strcmp (contents, text) == 0);
}

static guint
count_entries (const char *dir)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  guint n = 0;

  while (d != NULL && g_dir_read_name (d) != NULL)
    n++;
  return n;
}

static void
test_backup (Fixture       *f,
             gconstpointer  data)
{
  g_autoptr(GError) error = NULL;

  /* A new file has nothing to back up. */
  g_assert_true (napkin_diagram_save_to_file (f->a, f->file, &error));
  g_assert_no_error (error);
  assert_file_is (f->file, f->a_text);
  g_assert_false (g_file_test (f->backup, G_FILE_TEST_EXISTS));

  g_assert_true (napkin_diagram_save_to_file (f->b, f->file, &error));
  assert_file_is (f->file, f->b_text);
  assert_file_is (f->backup, f->a_text);

  g_assert_true (napkin_diagram_save_to_file (f->a, f->file, &error));
  assert_file_is (f->file, f->a_text);
  assert_file_is (f->backup, f->b_text);

  /* Nothing else is left in the folder: no temporary files. */
  g_assert_cmpuint (count_entries (f->dir), ==, 2);
}

static void
test_permissions (Fixture       *f,
                  gconstpointer  data)
{
  g_autoptr(GError) error = NULL;
  struct stat st;

  g_assert_true (napkin_diagram_save_to_file (f->a, f->file, &error));
  g_assert_cmpint (g_chmod (f->file, 0600), ==, 0);
  g_assert_true (napkin_diagram_save_to_file (f->b, f->file, &error));
  g_assert_no_error (error);
  g_assert_cmpint (g_stat (f->file, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0600);
  g_assert_cmpint (g_stat (f->backup, &st), ==, 0);
  g_assert_cmpint (st.st_mode & 07777, ==, 0600);
}

static void
test_symlink (Fixture       *f,
              gconstpointer  data)
{
  g_autofree char *link = g_build_filename (f->dir, "link.napkin", NULL);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_diagram_save_to_file (f->a, f->file, &error));
  g_assert_cmpint (symlink ("doc.napkin", link), ==, 0);

  /* Saving through a link replaces its target and keeps the link. */
  g_assert_true (napkin_diagram_save_to_file (f->b, link, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_test (link, G_FILE_TEST_IS_SYMLINK));
  assert_file_is (f->file, f->b_text);
  assert_file_is (f->backup, f->a_text);
}

static void
test_errors (Fixture       *f,
             gconstpointer  data)
{
  g_autofree char *missing = g_build_filename (f->dir, "no-such-folder", "doc.napkin", NULL);
  g_autoptr(GError) error = NULL;

  g_assert_false (napkin_diagram_save_to_file (f->a, missing, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, missing));
  g_clear_error (&error);

  /* A folder where the file should be: refused, the folder untouched. */
  g_assert_false (napkin_diagram_save_to_file (f->a, f->dir, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "not a regular file"));
  g_assert_true (g_file_test (f->dir, G_FILE_TEST_IS_DIR));
  g_clear_error (&error);

  /* A backup that cannot be made stops the save before the file is touched. */
  g_assert_true (napkin_diagram_save_to_file (f->a, f->file, &error));
  g_assert_cmpint (g_mkdir (f->backup, 0755), ==, 0);
  g_assert_false (napkin_diagram_save_to_file (f->b, f->file, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, f->backup));
  assert_file_is (f->file, f->a_text);
  g_assert_cmpint (g_rmdir (f->backup), ==, 0);
  g_clear_error (&error);
  /* and leaves no temporary file behind */
  g_assert_cmpuint (count_entries (f->dir), ==, 1);
}

/* Reads what the child printed so far; returns the number of finished saves. */
static guint
read_lines (int      fd,
            GString *buffer)
{
  char chunk[4096];
  gssize n;
  guint lines = 0;

  while ((n = read (fd, chunk, sizeof chunk)) > 0)
    g_string_append_len (buffer, chunk, n);
  for (const char *p = buffer->str; *p; p++)
    lines += *p == '\n';
  return lines;
}

static void
test_kill_during_save (Fixture       *f,
                       gconstpointer  data)
{
  g_autofree char *helper = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "tests", "security",
                                              "napkin-save-loop", NULL);
  g_autofree char *a_path = g_build_filename (f->dir, "a.src", NULL);
  g_autofree char *b_path = g_build_filename (f->dir, "b.src", NULL);
  g_autoptr(GError) error = NULL;
  guint iterations = 120, total_saves = 0, torn_windows = 0;
  double save_us;
  const char *env = g_getenv ("NAPKIN_KILL_ITERATIONS");
  GRand *rand = g_rand_new_with_seed (g_test_rand_int ());

  if (env != NULL)
    iterations = (guint) g_ascii_strtoull (env, NULL, 10);

  g_assert_true (g_file_set_contents (a_path, f->a_text, -1, NULL));
  g_assert_true (g_file_set_contents (b_path, f->b_text, -1, NULL));

  /* How long a save takes here (sanitizers and load slow it down many times): the
   * kills are spread over the next three saves of the loop. */
  {
    g_autoptr(GTimer) timer = g_timer_new ();

    for (guint i = 0; i < 4; i++)
      g_assert_true (napkin_diagram_save_to_file (i % 2 ? f->b : f->a, f->file, &error));
    save_us = MAX (g_timer_elapsed (timer, NULL) / 4 * G_USEC_PER_SEC, 100);
  }

  for (guint i = 0; i < iterations; i++)
    {
      const char *argv[] = { helper, f->file, a_path, b_path, NULL };
      g_autoptr(GString) out = g_string_new (NULL);
      g_autofree char *contents = NULL;
      g_autofree char *backup = NULL;
      g_autoptr(NapkinDiagram) loaded = NULL;
      GPid pid;
      int out_fd, status;
      guint saves;
      char c;

      g_spawn_async_with_pipes (NULL, (char **) argv, NULL, G_SPAWN_DO_NOT_REAP_CHILD, NULL, NULL,
                                &pid, NULL, &out_fd, NULL, &error);
      g_assert_no_error (error);

      /* Let the loop get going (first save done), then kill it anywhere in the next
       * three saves. */
      if (read (out_fd, &c, 1) == 1)
        g_string_append_c (out, c);
      g_usleep (g_rand_int_range (rand, 0, (gint32) (3 * save_us)));
      g_assert_cmpint (kill (pid, SIGKILL), ==, 0);
      g_assert_cmpint (waitpid (pid, &status, 0), ==, pid);
      g_assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
      saves = read_lines (out_fd, out);
      close (out_fd);
      g_spawn_close_pid (pid);
      total_saves += saves;

      /* The file: always one of the two documents, complete, and it loads. */
      contents = read_file (f->file);
      g_assert_nonnull (contents);
      if (strcmp (contents, f->a_text) != 0 && strcmp (contents, f->b_text) != 0)
        g_error ("after kill %u the file is neither document (%zu bytes)", i, strlen (contents));
      loaded = napkin_diagram_load_from_file (f->file, NAPKIN_LOAD_VALIDATE, &error);
      g_assert_no_error (error);

      /* The backup too, once there is one. */
      backup = read_file (f->backup);
      if (backup != NULL && strcmp (backup, f->a_text) != 0 && strcmp (backup, f->b_text) != 0)
        g_error ("after kill %u the backup is neither document", i);

      /* Killed after the rename but before the child said so: the kill hit a save. */
      if (saves > 0 && strcmp (contents, (saves - 1) % 2 ? f->b_text : f->a_text) != 0)
        torn_windows++;
    }

  g_test_message ("%u kills within 3 saves (%.1f ms each) of the first: %u saves finished, %u kills "
                  "inside a save's final steps, %u entries in the folder (temporary files of killed "
                  "saves are left behind)", iterations, save_us / 1000, total_saves, torn_windows,
                  count_entries (f->dir));
  /* The test did its job only if kills interrupted saves: each such kill leaves a
   * temporary file beside doc.napkin, doc.napkin~, a.src and b.src. */
  g_assert_cmpuint (count_entries (f->dir), >, 4);
  g_assert_cmpuint (total_saves, >=, iterations);
  g_rand_free (rand);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add ("/security/save/backup", Fixture, NULL, fixture_set_up, test_backup, fixture_tear_down);
  g_test_add ("/security/save/permissions", Fixture, NULL, fixture_set_up, test_permissions, fixture_tear_down);
  g_test_add ("/security/save/symlink", Fixture, NULL, fixture_set_up, test_symlink, fixture_tear_down);
  g_test_add ("/security/save/errors", Fixture, NULL, fixture_set_up, test_errors, fixture_tear_down);
  g_test_add ("/security/save/kill-during-save", Fixture, NULL, fixture_set_up, test_kill_during_save,
              fixture_tear_down);

  return g_test_run ();
}
