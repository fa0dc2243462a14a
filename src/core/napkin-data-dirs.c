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

GStrv
napkin_data_dirs (void)
{
  GPtrArray *dirs = g_ptr_array_new ();
  const char * const *system = g_get_system_data_dirs ();
  const char *uninstalled = g_getenv ("NAPKIN_DATA_DIR");

  /* The XDG order: the user's folder before the system's (docs/packaging.md). */
  add_unique (dirs, uninstalled);
  {
    g_autofree char *user = g_build_filename (g_get_user_data_dir (), "napkin", NULL);

    add_unique (dirs, user);
  }
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
