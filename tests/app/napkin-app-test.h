/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

/* Helpers shared by the app's Xvfb tests. */

#include <adwaita.h>
#include <glib/gi18n.h>
#include <gtk/gtk.h>
#include <locale.h>

#include "napkin-application.h"
#include "napkin-history.h"
#include "napkin-window.h"

/* Runs the main loop for `ms` milliseconds, without blocking on an empty queue. */
static inline void
iterate (guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, FALSE);
}

static inline NapkinDiagram *
diagram_of (NapkinWindow *window)
{
  return napkin_history_get_diagram (napkin_window_get_history (window));
}

/* The first widget below root (root included) with that widget name. */
static inline GtkWidget *
find_named (GtkWidget  *root,
            const char *name)
{
  if (g_strcmp0 (gtk_widget_get_name (root), name) == 0)
    return root;
  for (GtkWidget *child = gtk_widget_get_first_child (root); child; child = gtk_widget_get_next_sibling (child))
    {
      GtkWidget *found = find_named (child, name);

      if (found)
        return found;
    }
  return NULL;
}

/* The start every app test shares: locale and message catalogue (as main.c: _() is
 * gettext ()), g_test, a temporary folder from `tmp_template`, and a display. Returns FALSE
 * when GTK cannot open a display: the caller then returns g_test_run (), which reports the
 * skip (CI runs these under xvfb-run, where a skip counts as a failure). */
static inline gboolean
napkin_app_test_init (int         *argc,
                      char      ***argv,
                      const char  *tmp_template,
                      char       **tmpdir)
{
  g_autoptr(GError) error = NULL;

  setlocale (LC_ALL, "");
  textdomain (GETTEXT_PACKAGE);
  g_test_init (argc, argv, NULL);
  *tmpdir = g_dir_make_tmp (tmp_template, &error);
  g_assert_no_error (error);
  if (!gtk_init_check ())
    {
      g_test_skip ("no display: run under xvfb-run (GTK could not open one)");
      return FALSE;
    }
  adw_init ();
  return TRUE;
}

/* The application under test, registered as a non-unique instance (tests never talk to a
 * running Napkin), with `extra` flags. */
static inline NapkinApplication *
napkin_app_test_register (GApplicationFlags extra)
{
  g_autoptr(GError) error = NULL;
  NapkinApplication *app = napkin_application_new ();

  g_application_set_flags (G_APPLICATION (app), G_APPLICATION_NON_UNIQUE | extra);
  g_assert_true (g_application_register (G_APPLICATION (app), NULL, &error));
  g_assert_no_error (error);
  return app;
}

/* The header's architecture selector (its index is the arch registry's). */
static inline GtkDropDown *
find_arch_dropdown (NapkinWindow *window)
{
  GtkWidget *found = NULL;
  GPtrArray *stack = g_ptr_array_new ();

  g_ptr_array_add (stack, GTK_WIDGET (window));
  while (stack->len > 0 && found == NULL)
    {
      GtkWidget *top = g_ptr_array_steal_index (stack, stack->len - 1);

      if (GTK_IS_DROP_DOWN (top)
          && g_strcmp0 (gtk_widget_get_tooltip_text (top), _("GPU architecture for the performance model")) == 0)
        found = top;
      for (GtkWidget *c = gtk_widget_get_first_child (top); c; c = gtk_widget_get_next_sibling (c))
        g_ptr_array_add (stack, c);
    }
  g_ptr_array_unref (stack);
  return found ? GTK_DROP_DOWN (found) : NULL;
}

/* A window on the bundled example `name` (NAPKIN_EXAMPLES_DIR), presented at that size
 * and drawn once. */
static inline NapkinWindow *
open_example_sized (NapkinApplication *app,
                    const char        *name,
                    int                width,
                    int                height)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autofree char *file_name = g_strconcat (name, ".napkin", NULL);
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file_name, NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_load_file (window, file, &error));
  g_assert_no_error (error);
  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  iterate (50);
  return window;
}
