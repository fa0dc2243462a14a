/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include "napkin-data-dirs.h"

static void
add_unique (GPtrArray  *dirs,
            const char *dir)
{
  g_autofree char *canonical = NULL;

  if (dir == NULL || *dir == '\0')
    return;
  canonical = g_canonicalize_filename (dir, NULL);
  for (guint i = 0; i < dirs->len; i++)
    if (g_str_equal (g_ptr_array_index (dirs, i), canonical))
      return;
  g_ptr_array_add (dirs, g_steal_pointer (&canonical));
}

/* The build tree's marker (docs/packaging.md, "Uninstalled runs"): meson writes
 * NAPKIN_UNINSTALLED_MARKER at the root of the build tree, naming the source tree's
 * data/ and docs/ one a line. A program finds it above its own executable, as GIMP
 * and Inkscape builds find their data from where they run; an installed program has
 * none above it, and no source path is compiled into it. Line `line` (0: data, 1:
 * docs), or NULL. */
static char *
uninstalled_dir (guint line)
{
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *dir = exe ? g_path_get_dirname (exe) : NULL;

  /* the programs lie at most three folders down (src/cli/napkin-cli, tests/app/…) */
  for (guint up = 0; dir != NULL && up < 4; up++)
    {
      g_autofree char *marker = g_build_filename (dir, NAPKIN_UNINSTALLED_MARKER, NULL);
      g_autofree char *text = NULL;
      char *parent;

      if (g_file_get_contents (marker, &text, NULL, NULL))
        {
          g_auto(GStrv) lines = g_strsplit (text, "\n", -1);

          return line < g_strv_length (lines) && *g_strstrip (lines[line]) != '\0' ? g_strdup (lines[line]) : NULL;
        }
      parent = g_path_get_dirname (dir);
      if (g_str_equal (parent, dir))
        {
          g_free (parent);
          break;
        }
      g_free (dir);
      dir = parent;
    }
  return NULL;
}

char *
napkin_uninstalled_dir (const char *what)
{
  g_return_val_if_fail (g_strcmp0 (what, "data") == 0 || g_strcmp0 (what, "docs") == 0, NULL);

  return uninstalled_dir (g_str_equal (what, "docs") ? 1 : 0);
}

GStrv
napkin_data_dirs (void)
{
  GPtrArray *dirs = g_ptr_array_new ();
  const char * const *system = g_get_system_data_dirs ();
  const char *env = g_getenv ("NAPKIN_DATA_DIR");
  g_autofree char *uninstalled = env != NULL && *env != '\0' ? NULL : uninstalled_dir (0);

  /* The XDG order: the user's folder before the system's (docs/packaging.md); a build
   * tree's source data/ stands where the installed datadir would, after the user's. */
  add_unique (dirs, env);
  {
    g_autofree char *user = g_build_filename (g_get_user_data_dir (), "napkin", NULL);

    add_unique (dirs, user);
  }
  add_unique (dirs, uninstalled);
  for (guint i = 0; system[i] != NULL; i++)
    {
      g_autofree char *dir = g_build_filename (system[i], "napkin", NULL);

      add_unique (dirs, dir);
    }
  /* A prefix outside $XDG_DATA_DIRS (/opt, a home directory) still finds its own data. */
  add_unique (dirs, NAPKIN_DATADIR);
  g_ptr_array_add (dirs, NULL);
  return (GStrv) g_ptr_array_free (dirs, FALSE);
}

char *
napkin_data_find (const char *relative)
{
  g_auto(GStrv) dirs = napkin_data_dirs ();

  g_return_val_if_fail (relative != NULL, NULL);

  for (guint i = 0; dirs[i] != NULL; i++)
    {
      g_autofree char *path = g_build_filename (dirs[i], relative, NULL);

      if (g_file_test (path, G_FILE_TEST_EXISTS))
        return g_steal_pointer (&path);
    }
  return NULL;
}
