/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

/* Helpers shared by the app's Xvfb tests. */

#include <gtk/gtk.h>

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
