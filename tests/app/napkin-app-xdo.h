/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

/* Real X input to a test's own window (xdotool through the X server), for the app's
 * Xvfb tests: the test goes on dispatching its own events while xdotool runs. */

#include <math.h>
#include <stdarg.h>
#include <sys/wait.h>

#include <gdk/x11/gdkx.h>

#include "napkin-app-test.h"

typedef struct
{
  NapkinWindow *window;
  char          wid[32];
  double        sx, sy;     /* the surface's shadow: window coordinates of widget (0, 0) */
  guint         actions;    /* what the user did: a click, a drag, a typed text, a key */
} Xdo;

static inline void
child_done_cb (GPid     pid,
               int      status,
               gpointer user_data)
{
  *(gboolean *) user_data = TRUE;
  g_spawn_close_pid (pid);
}

/* Runs xdotool while this process goes on dispatching its own events (the input
 * goes to this process's window). */
static inline void
xdotool (const char *first,
         ...)
{
  g_autoptr(GPtrArray) argv = NULL;
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;
  va_list args;
  GPid pid;

  va_start (args, first);
  argv = xdotool_argv (first, args);
  va_end (args);
  g_assert_true (g_spawn_async (NULL, (char **) argv->pdata, NULL,
                                G_SPAWN_SEARCH_PATH | G_SPAWN_DO_NOT_REAP_CHILD | G_SPAWN_STDERR_TO_DEV_NULL
                                  | G_SPAWN_STDOUT_TO_DEV_NULL,
                                NULL, NULL, &pid, &error));
  g_assert_no_error (error);
  g_child_watch_add (pid, child_done_cb, &done);
  for (guint i = 0; i < 3000 && !done; i++)
    g_main_context_iteration (NULL, TRUE);
  g_assert_true (done);
}

/* Lets the app finish what the input started: the inspector's rebuild is an idle. */
static inline void
settle (void)
{
  iterate (120);
}

/* Polls (up to 10 s: slow under sanitizers) until `expr` holds. */
#define WAIT_FOR(expr) G_STMT_START { for (guint w_ = 0; w_ < 1000 && !(expr); w_++) iterate (10); } G_STMT_END

static inline void
window_point (Xdo        *x,
              GtkWidget  *widget,
              double      wx,
              double      wy,
              char        out_x[32],
              char        out_y[32])
{
  graphene_point_t p;

  g_assert_true (gtk_widget_compute_point (widget, GTK_WIDGET (x->window), &GRAPHENE_POINT_INIT (wx, wy), &p));
  g_snprintf (out_x, 32, "%d", (int) round (p.x + x->sx));
  g_snprintf (out_y, 32, "%d", (int) round (p.y + x->sy));
}

static inline void
click_widget (Xdo       *x,
              GtkWidget *widget)
{
  char px[32], py[32];

  window_point (x, widget, gtk_widget_get_width (widget) / 2.0, gtk_widget_get_height (widget) / 2.0, px, py);
  xdotool ("mousemove", "--window", x->wid, px, py, "click", "1", NULL);
  x->actions++;
  settle ();
}

static inline void
type_text (Xdo        *x,
           const char *text)
{
  xdotool ("type", "--delay", "15", text, NULL);
  x->actions++;
  settle ();
}

static inline void
key (Xdo        *x,
     const char *keys)
{
  xdotool ("key", keys, NULL);
  x->actions++;
  settle ();
}

/* Starts real input to `window`: its X window, its surface's offset, the focus. FALSE
 * (after a skip) where xdotool or an X11 display is missing. */
static inline gboolean
xdo_begin (Xdo          *x,
           NapkinWindow *window)
{
  g_autofree char *xdotool_path = g_find_program_in_path ("xdotool");

  if (xdotool_path == NULL || !GDK_IS_X11_DISPLAY (gdk_display_get_default ()))
    {
      g_test_skip ("xdotool (Debian package xdotool) or an X11 display is missing: real X input is not tested");
      return FALSE;
    }
  x->window = window;
  g_snprintf (x->wid, sizeof x->wid, "%lu",
              (unsigned long) gdk_x11_surface_get_xid (gtk_native_get_surface (GTK_NATIVE (window))));
  gtk_native_get_surface_transform (GTK_NATIVE (window), &x->sx, &x->sy);
  xdotool ("windowfocus", "--sync", x->wid, NULL);
  settle ();
  return TRUE;
}
