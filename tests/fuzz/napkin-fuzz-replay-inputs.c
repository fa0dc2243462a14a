/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Replays the einsum, graph and profile fuzz targets' seeds and every input they ever
 * failed on (tests/fuzz/regressions-*), with any compiler; under ASan and UBSan in
 * build-aux/ci-sanitize. */
#define G_LOG_DOMAIN "napkin-fuzz"

#include "config.h"

#include <glib.h>

#include "napkin-fuzz-inputs.h"

typedef void (*Harness) (const guint8 *data, gsize size);

typedef struct
{
  Harness  harness;
  char    *path;
} Replay;

static void
replay_free (gpointer data)
{
  Replay *r = data;

  g_free (r->path);
  g_free (r);
}

static void
replay_file (gconstpointer data)
{
  const Replay *r = data;
  g_autofree char *contents = NULL;
  g_autoptr(GError) error = NULL;
  gsize length;

  g_file_get_contents (r->path, &contents, &length, &error);
  g_assert_no_error (error);
  r->harness ((const guint8 *) contents, length);
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(char * const *) a, *(char * const *) b);
}

/* The files of `dir` ending in `suffix`, each a test of `harness`. */
static guint
add_dir (const char *dir,
         const char *suffix,
         const char *what,
         Harness     harness)
{
  g_autoptr(GDir) d = g_dir_open (dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  const char *name;

  if (d == NULL)
    return 0;
  while ((name = g_dir_read_name (d)) != NULL)
    if (g_str_has_suffix (name, suffix) && !g_str_has_suffix (name, ".md"))
      g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_names);
  for (guint i = 0; i < names->len; i++)
    {
      Replay *r = g_new0 (Replay, 1);
      g_autofree char *test = g_strdup_printf ("/fuzz/replay-inputs/%s/%s", what, (char *) names->pdata[i]);

      r->harness = harness;
      r->path = g_build_filename (dir, names->pdata[i], NULL);
      g_strcanon (test, G_CSET_a_2_z G_CSET_A_2_Z G_CSET_DIGITS "/-_.", '_');
      g_test_add_data_func_full (test, r, replay_file, replay_free);
    }
  return names->len;
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *imports = g_build_filename (NAPKIN_SOURCE_TESTDIR, "import", NULL);
  g_autofree char *archs = g_build_filename (NAPKIN_SOURCE_DATADIR, "archs", NULL);
  g_autofree char *einsum = g_build_filename (NAPKIN_SOURCE_TESTDIR, "fuzz", "regressions-einsum", NULL);
  g_autofree char *graph = g_build_filename (NAPKIN_SOURCE_TESTDIR, "fuzz", "regressions-graph", NULL);
  g_autofree char *profile = g_build_filename (NAPKIN_SOURCE_TESTDIR, "fuzz", "regressions-profile", NULL);
  guint n = 0;

  g_test_init (&argc, &argv, NULL);
  n += add_dir (imports, ".einsum", "einsum", napkin_fuzz_einsum);
  n += add_dir (imports, ".graph.json", "graph", napkin_fuzz_graph);
  n += add_dir (archs, ".json", "profile", napkin_fuzz_profile);
  n += add_dir (einsum, "", "einsum-regressions", napkin_fuzz_einsum);
  n += add_dir (graph, "", "graph-regressions", napkin_fuzz_graph);
  n += add_dir (profile, "", "profile-regressions", napkin_fuzz_profile);
  g_assert_cmpuint (n, >, 10);
  return g_test_run ();
}
