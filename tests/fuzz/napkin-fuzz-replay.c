/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Replays the fuzz target's inputs under any compiler, one test per file: the seed
 * corpus (examples, bad-input catalogue) and every crash the fuzzer ever found
 * (tests/fuzz/regressions). The sanitizer build runs it under ASan and UBSan. */
#define G_LOG_DOMAIN "napkin-fuzz"

#include "config.h"

#include <glib.h>

#include "napkin-fuzz-one.h"

static void
replay_file (gconstpointer data)
{
  const char *path = data;
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  gsize length;

  g_file_get_contents (path, &contents, &length, &error);
  g_assert_no_error (error);
  napkin_fuzz_one ((const guint8 *) contents, length);
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(char * const *) a, *(char * const *) b);
}

static guint
add_dir (const char *dir,
         const char *prefix)
{
  g_autoptr(GDir) d = NULL;
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  const char *name;

  d = g_dir_open (dir, 0, &error);
  g_assert_no_error (error);
  while ((name = g_dir_read_name (d)) != NULL)
    if (!g_str_has_suffix (name, ".py") && !g_str_has_suffix (name, ".tsv") && !g_str_has_suffix (name, ".md"))
      g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_names);

  for (guint i = 0; i < names->len; i++)
    {
      const char *file = g_ptr_array_index (names, i);
      g_autofree char *test = g_strdup_printf ("/fuzz/replay/%s/%s", prefix, file);

      /* Test paths are /-separated names: keep them printable. */
      g_strcanon (test, G_CSET_a_2_z G_CSET_A_2_Z G_CSET_DIGITS "/-_.", '_');
      g_test_add_data_func_full (test, g_build_filename (dir, file, NULL), replay_file, g_free);
    }
  return names->len;
}

int
main (int    argc,
      char **argv)
{
  const char *source = g_getenv ("NAPKIN_SOURCE_DIR");
  g_autofree char *examples = NULL;
  g_autofree char *bad = NULL;
  g_autofree char *regressions = NULL;

  g_test_init (&argc, &argv, NULL);
  g_assert_nonnull (source);

  examples = g_build_filename (source, "data", "examples", NULL);
  bad = g_build_filename (source, "tests", "bad", NULL);
  regressions = g_build_filename (source, "tests", "fuzz", "regressions", NULL);
  add_dir (examples, "examples");
  add_dir (bad, "bad");
  add_dir (regressions, "regressions");

  return g_test_run ();
}
