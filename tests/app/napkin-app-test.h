/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

/* Helpers shared by the app's Xvfb tests. */

#include <adwaita.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <gtk/gtk.h>
#include <locale.h>
#include <string.h>
#include <stdio.h>
#include <signal.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "napkin-analysis-pane.h"
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

/* Runs the tests, lets the application go and removes the temporary folder where
 * the tests left it empty; returns g_test_run ()'s status. */
static inline int
napkin_app_test_run (NapkinApplication *app,
                     const char        *tmpdir)
{
  int status = g_test_run ();

  g_object_unref (app);
  g_rmdir (tmpdir);
  return status;
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

/* The path of the bundled example `name` (NAPKIN_EXAMPLES_DIR). */
static inline char *
example_path (const char *name)
{
  g_autofree char *file = g_strconcat (name, ".napkin", NULL);

  return g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
}

/* Presents the window at that size and waits until it is drawn once. */
static inline void
napkin_app_test_present (NapkinWindow *window,
                         int           width,
                         int           height)
{
  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  iterate (50);
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
  g_autofree char *path = example_path (name);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_load_file (window, file, &error));
  g_assert_no_error (error);
  napkin_app_test_present (window, width, height);
  return window;
}

static inline void
napkin_app_test_screenshot_done (GObject      *object,
                                 GAsyncResult *result,
                                 gpointer      user_data)
{
  gboolean *done = user_data;
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_screenshot_finish (NAPKIN_WINDOW (object), result, &error));
  g_assert_no_error (error);
  *done = TRUE;
}

static inline gboolean
napkin_app_test_tick (gpointer user_data)
{
  (void) user_data;
  return G_SOURCE_CONTINUE;
}

/* Saves a PNG of the window at `path` (napkin_window_screenshot_async), waiting up to 90 s
 * (the sanitizer build on two cores, while the window's analysis and code view are built
 * beside it and another test runs, took more than 30 s for the backward diagram's
 * window). The main loop blocks between events (a 50 ms tick wakes it to check the
 * clock) instead of spinning: a spinning test took a core from the threads it waits on. */
static inline void
napkin_app_test_screenshot (NapkinWindow *window,
                            const char   *path)
{
  gint64 end = g_get_monotonic_time () + 90 * G_USEC_PER_SEC;
  gboolean done = FALSE;
  guint tick = g_timeout_add (50, napkin_app_test_tick, NULL);

  napkin_window_screenshot_async (window, path, napkin_app_test_screenshot_done, &done);
  while (!done && g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, TRUE);
  g_source_remove (tick);
  g_assert_true (done);
}

/* Destroys the window and lets the main loop run a little. */
static inline void
close_window (NapkinWindow *window)
{
  gtk_window_destroy (GTK_WINDOW (window));
  iterate (20);
}

/* Destroys the window and waits (up to 5 s) until it is finalized: no reference is
 * left behind. */
static inline void
close_window_finalized (NapkinWindow *window)
{
  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *) &window);
  gtk_window_destroy (GTK_WINDOW (window));
  for (guint i = 0; i < 500 && window != NULL; i++)
    iterate (10);
  g_assert_null (window);
}

static inline NapkinAnalysisPane *
pane_of (NapkinWindow *window)
{
  GtkWidget *pane = napkin_window_get_analysis_pane (window);

  g_assert_nonnull (pane);
  return NAPKIN_ANALYSIS_PANE (pane);
}

/* Waits (up to 5 s) for the pane's own update (the frame clock), not a forced one. */
static inline void
wait_for_update (NapkinAnalysisPane *pane,
                 guint               before)
{
  for (guint i = 0; i < 500 && napkin_analysis_pane_get_n_updates (pane) == before; i++)
    iterate (10);
  g_assert_cmpuint (napkin_analysis_pane_get_n_updates (pane), >, before);
}

/* The inspector's field `name`: the inspector rebuilds from an idle after each change,
 * and idle-priority rebuilds wait on a busy machine, so this polls `tries` times 10 ms. */
static inline GtkWidget *
napkin_app_test_inspector_field (NapkinWindow *window,
                                 const char   *name,
                                 guint         tries)
{
  GtkWidget *w = NULL;

  for (guint i = 0; i < tries && w == NULL; i++)
    {
      iterate (10);
      w = find_named (GTK_WIDGET (napkin_window_get_inspector (window)), name);
    }
  if (w == NULL)
    g_error ("inspector has no field “%s”", name);
  return w;
}

/* The number a label starts with, its digits grouped by commas:
 * "3,254,779,904 B (3.255 GB)" → 3254779904. */
static inline gint64
leading_number (const char *text)
{
  g_autoptr(GString) digits = g_string_new (NULL);

  g_assert_nonnull (text);
  for (const char *p = text; *p && *p != ' '; p++)
    if (g_ascii_isdigit (*p))
      g_string_append_c (digits, *p);
    else
      g_assert_true (*p == ',');
  g_assert_cmpuint (digits->len, >, 0);
  return g_ascii_strtoll (digits->str, NULL, 10);
}

/* The widget as drawn now, through the window's renderer (GSK_RENDERER=cairo). */
static inline GdkTexture *
shoot (GtkWidget *widget)
{
  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new (widget);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);
  GskRenderer *renderer = gtk_native_get_renderer (gtk_widget_get_native (widget));

  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  g_assert_cmpint (width, >, 100);
  g_assert_cmpint (height, >, 100);
  /* A widget not yet mapped or drawn snapshots to nothing (seen under
   * AddressSanitizer, where the main loop lags): let the loop turn and try again. */
  for (;;)
    {
      gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), width, height);
      node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
      if (node != NULL || g_get_monotonic_time () > end)
        break;
      iterate (20);
      snapshot = gtk_snapshot_new ();
    }
  g_assert_nonnull (node);
  return gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
}

/* The window with its popover drawn where it shows on screen, as one PNG. */
static inline GdkTexture *
screenshot_with_popover (NapkinWindow *window,
                         GtkPopover   *popover,
                         const char   *path)
{
  GtkWidget *widget = GTK_WIDGET (window);
  g_autoptr(GdkPaintable) window_paint = gtk_widget_paintable_new (widget);
  g_autoptr(GdkPaintable) popover_paint = gtk_widget_paintable_new (GTK_WIDGET (popover));
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  GdkTexture *texture;
  GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (popover));
  double wx, wy, px, py;
  int width = gtk_widget_get_width (widget), height = gtk_widget_get_height (widget);

  gint64 end = g_get_monotonic_time () + 10 * G_USEC_PER_SEC;

  g_assert_true (GDK_IS_POPUP (surface));
  /* As in screenshot(): under AddressSanitizer the window or the popover may
   * not be drawn yet and snapshot to nothing; let the main loop turn until both
   * give a picture. */
  for (;;)
    {
      g_autoptr(GtkSnapshot) probe = gtk_snapshot_new ();
      g_autoptr(GskRenderNode) window_node = NULL, popover_node = NULL;

      gdk_paintable_snapshot (window_paint, GDK_SNAPSHOT (probe), width, height);
      window_node = gtk_snapshot_free_to_node (g_steal_pointer (&probe));
      probe = gtk_snapshot_new ();
      gdk_paintable_snapshot (popover_paint, GDK_SNAPSHOT (probe), gtk_widget_get_width (GTK_WIDGET (popover)),
                              gtk_widget_get_height (GTK_WIDGET (popover)));
      popover_node = gtk_snapshot_free_to_node (g_steal_pointer (&probe));
      if ((window_node != NULL && popover_node != NULL) || g_get_monotonic_time () > end)
        break;
      iterate (20);
    }
  gtk_native_get_surface_transform (GTK_NATIVE (window), &wx, &wy);
  gtk_native_get_surface_transform (GTK_NATIVE (popover), &px, &py);
  gdk_paintable_snapshot (window_paint, GDK_SNAPSHOT (snapshot), width, height);
  gtk_snapshot_save (snapshot);
  /* popover widget → its surface → the window's surface → the window widget */
  gtk_snapshot_translate (snapshot, &GRAPHENE_POINT_INIT (gdk_popup_get_position_x (GDK_POPUP (surface)) + px - wx,
                                                          gdk_popup_get_position_y (GDK_POPUP (surface)) + py - wy));
  gdk_paintable_snapshot (popover_paint, GDK_SNAPSHOT (snapshot), gtk_widget_get_width (GTK_WIDGET (popover)),
                          gtk_widget_get_height (GTK_WIDGET (popover)));
  gtk_snapshot_restore (snapshot);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  g_assert_nonnull (node);
  texture = gsk_renderer_render_texture (gtk_native_get_renderer (GTK_NATIVE (window)), node,
                                         &GRAPHENE_RECT_INIT (0, 0, width, height));
  g_assert_true (gdk_texture_save_to_png (texture, path));
  return texture;
}

/* How many of the width × height pixels (B G R A, native-endian ARGB as
 * gdk_texture_download gives them) are within `tolerance` of the colour "#rrggbb" in
 * each channel. */
static inline guint
napkin_app_test_count_near (const guint8 *pixels,
                            int           width,
                            int           height,
                            const char   *hex,
                            int           tolerance)
{
  guint r, g, b, count = 0;

  g_assert_true (sscanf (hex, "#%02x%02x%02x", &r, &g, &b) == 3);
  for (int i = 0; i < width * height; i++)
    {
      const guint8 *p = pixels + 4 * i;

      if (ABS (p[2] - (int) r) <= tolerance && ABS (p[1] - (int) g) <= tolerance
          && ABS (p[0] - (int) b) <= tolerance)
        count++;
    }
  return count;
}

/* ---------------------------------------------------------------- real X input */

/* xdotool's argv: "xdotool", `first` and the arguments in `args` up to NULL, NULL. */
static inline GPtrArray *
xdotool_argv (const char *first,
              va_list     args)
{
  GPtrArray *argv = g_ptr_array_new ();

  g_ptr_array_add (argv, (char *) "xdotool");
  for (const char *a = first; a; a = va_arg (args, const char *))
    g_ptr_array_add (argv, (char *) a);
  g_ptr_array_add (argv, NULL);
  return argv;
}

/* Runs xdotool with the arguments up to NULL (XTEST input to the X server) and
 * returns what it printed. */
static inline char *
xdotool_output (const char *first,
                ...)
{
  g_autoptr(GPtrArray) argv = NULL;
  g_autoptr(GError) error = NULL;
  char *out = NULL;
  int status;
  va_list args;

  va_start (args, first);
  argv = xdotool_argv (first, args);
  va_end (args);
  g_assert_true (g_spawn_sync (NULL, (char **) argv->pdata, NULL, G_SPAWN_SEARCH_PATH | G_SPAWN_STDERR_TO_DEV_NULL,
                               NULL, NULL, &out, NULL, &status, &error));
  g_assert_no_error (error);
  return out;
}

/* The X window of a visible window whose title contains `name` (up to a minute:
 * under AddressSanitizer the app takes ~10 s to show). */
static inline char *
wait_window (const char *name)
{
  char *wid = NULL;

  for (guint i = 0; i < 600 && (wid == NULL || *wid == '\0'); i++)
    {
      g_free (wid);
      g_usleep (100 * 1000);
      wid = xdotool_output ("search", "--onlyvisible", "--name", name, NULL);
    }
  g_assert_true (wid != NULL && *wid != '\0');
  *strchr (wid, '\n') = '\0';
  return wid;
}

/* In the child, before exec: it dies with the test (a test that fails half-way must not
 * leave an app holding the test runner's output pipe open: meson would wait for it). */
static inline void
spawn_napkin_child_setup (gpointer data)
{
  (void) data;
#ifdef __linux__
  prctl (PR_SET_PDEATHSIG, SIGKILL);
#endif
}

/* Starts the built napkin with one argument in the environment `envp` (taken), as a
 * separate process. Under AddressSanitizer the child's exit would report GTK 4.8's own
 * X11 display objects (made in gdk_x11_display_open, never freed at exit): leaks of
 * ours are checked in the test's process, where windows must finalize. */
static inline GPid
spawn_napkin (char       **envp,
              const char  *arg)
{
  g_autofree char *exe = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "src", "app", "napkin", NULL);
  g_autoptr(GError) error = NULL;
  const char *argv[] = { exe, arg, NULL };
  GPid pid;

  if (g_environ_getenv (envp, "ASAN_OPTIONS") != NULL)
    {
      g_autofree char *asan = g_strconcat (g_environ_getenv (envp, "ASAN_OPTIONS"), ":detect_leaks=0", NULL);

      envp = g_environ_setenv (envp, "ASAN_OPTIONS", asan, TRUE);
    }
  g_assert_true (g_spawn_async (NULL, (char **) argv, envp, G_SPAWN_DO_NOT_REAP_CHILD, spawn_napkin_child_setup, NULL,
                                &pid, &error));
  g_assert_no_error (error);
  g_strfreev (envp);
  return pid;
}
