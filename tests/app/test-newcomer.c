/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The newcomer's path (docs/editor.md, "Drawing from an empty document"): drawing
 * C[m,n] = Σ_k A[m,k]·B[k,n] from an empty document with real X input (xdotool:
 * clicks, drags, typed text, keys sent through the X server to this process's
 * window), and each fix the first try asked for, reproduced and checked. */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <string.h>
#include <sys/wait.h>

#include <gdk/x11/gdkx.h>
#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "napkin-analysis-pane.h"
#include "napkin-app-test.h"
#include "napkin-canvas-private.h"
#include "napkin-code-view.h"
#include "napkin-describe.h"
#include "napkin-edit.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-render.h"
#include "napkin-tile-default.h"
#include "napkin-tune.h"
#include "napkin-validate.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_blank (int width,
            int height)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autoptr(NapkinDiagram) blank = napkin_diagram_new ();

  napkin_window_set_document (window, blank, NULL);
  gtk_window_set_default_size (GTK_WINDOW (window), width, height);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  iterate (100);
  return window;
}

static void
close_window (NapkinWindow *window)
{
  gtk_window_destroy (GTK_WINDOW (window));
  iterate (20);
}

static NapkinAnalysisPane *
pane_of (NapkinWindow *window)
{
  return NAPKIN_ANALYSIS_PANE (napkin_window_get_analysis_pane (window));
}

/* The inspector rebuilds from an idle: polls for its field (up to 10 s). */
static GtkWidget *
field (NapkinWindow *window,
       const char   *name)
{
  GtkWidget *w = NULL;

  for (guint i = 0; i < 1000 && w == NULL; i++)
    {
      iterate (10);
      w = find_named (GTK_WIDGET (napkin_window_get_inspector (window)), name);
    }
  if (w == NULL)
    g_error ("inspector has no field “%s”", name);
  return w;
}

/* The name of the inspector field that has the keyboard focus, or NULL. */
static const char *
focused_field (NapkinWindow *window)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (window));

  for (GtkWidget *w = focus; w != NULL; w = gtk_widget_get_parent (w))
    if (g_str_has_prefix (gtk_widget_get_name (w), "field-") || g_str_has_prefix (gtk_widget_get_name (w), "axis-")
        || g_str_has_prefix (gtk_widget_get_name (w), "mark-"))
      return gtk_widget_get_name (w);
  return NULL;
}

static int
node_of_tensor (NapkinDiagram *d,
                const char    *tensor)
{
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    if (g_strcmp0 (napkin_diagram_node (d, n)->tensor, tensor) == 0)
      return n;
  return -1;
}

static int
node_of_kind (NapkinDiagram *d,
              NapkinOpKind   kind)
{
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    if (napkin_diagram_node (d, n)->kind == kind)
      return n;
  return -1;
}

static gboolean
strv_is (char       **strv,
         const char  *joined)
{
  g_autofree char *s = strv ? g_strjoinv (",", strv) : g_strdup ("");

  return g_str_equal (s, joined);
}

/* ---------------------------------------------------------------- real X input */

typedef struct
{
  NapkinWindow *window;
  char          wid[32];
  double        sx, sy;     /* the surface's shadow: window coordinates of widget (0, 0) */
  guint         actions;    /* what the user did: a click, a drag, a typed text, a key */
} Xdo;

static void
child_done_cb (GPid     pid,
               int      status,
               gpointer user_data)
{
  *(gboolean *) user_data = TRUE;
  g_spawn_close_pid (pid);
}

/* Runs xdotool while this process goes on dispatching its own events (the input
 * goes to this process's window). */
static void
xdotool (const char *first,
         ...)
{
  g_autoptr(GPtrArray) argv = g_ptr_array_new ();
  g_autoptr(GError) error = NULL;
  gboolean done = FALSE;
  va_list args;
  GPid pid;

  g_ptr_array_add (argv, (char *) "xdotool");
  va_start (args, first);
  for (const char *a = first; a; a = va_arg (args, const char *))
    g_ptr_array_add (argv, (char *) a);
  va_end (args);
  g_ptr_array_add (argv, NULL);
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
static void
settle (void)
{
  iterate (200);
}

static void
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

static void
click_widget (Xdo       *x,
              GtkWidget *widget)
{
  char px[32], py[32];

  window_point (x, widget, gtk_widget_get_width (widget) / 2.0, gtk_widget_get_height (widget) / 2.0, px, py);
  xdotool ("mousemove", "--window", x->wid, px, py, "click", "1", NULL);
  x->actions++;
  settle ();
}

static void
canvas_point (Xdo    *x,
              double  doc_x,
              double  doc_y,
              char    px[32],
              char    py[32])
{
  NapkinCanvas *canvas = napkin_window_get_canvas (x->window);
  double cx, cy;

  _napkin_canvas_doc_to_widget (canvas, doc_x, doc_y, &cx, &cy);
  g_assert_cmpfloat (cx, >, 0);
  g_assert_cmpfloat (cy, >, 0);
  g_assert_cmpfloat (cx, <, gtk_widget_get_width (GTK_WIDGET (canvas)));
  g_assert_cmpfloat (cy, <, gtk_widget_get_height (GTK_WIDGET (canvas)));
  window_point (x, GTK_WIDGET (canvas), cx, cy, px, py);
}

static void
click_node (Xdo  *x,
            int   node)
{
  NapkinRect r;
  char px[32], py[32];

  napkin_render_node_rect (diagram_of (x->window), node, &r);
  canvas_point (x, r.x + r.width / 2, r.y + r.height / 2, px, py);
  xdotool ("mousemove", "--window", x->wid, px, py, "click", "1", NULL);
  x->actions++;
  settle ();
}

/* A real drag from a node's output port onto another node's glyph. */
static void
drag_wire (Xdo *x,
           int  from,
           int  to)
{
  NapkinDiagram *d = diagram_of (x->window);
  double ox, oy;
  NapkinRect r;
  char px[32], py[32], qx[32], qy[32];

  g_assert_true (napkin_render_port_point (d, from, -1, &ox, &oy));
  napkin_render_node_rect (d, to, &r);
  canvas_point (x, ox, oy, px, py);
  canvas_point (x, r.x + r.width / 2, r.y + r.height / 2, qx, qy);
  xdotool ("mousemove", "--window", x->wid, px, py, "mousedown", "1", NULL);
  iterate (50);
  for (guint i = 1; i <= 6; i++)
    {
      char mx[32], my[32];

      g_snprintf (mx, sizeof mx, "%d", atoi (px) + (atoi (qx) - atoi (px)) * (int) i / 6);
      g_snprintf (my, sizeof my, "%d", atoi (py) + (atoi (qy) - atoi (py)) * (int) i / 6);
      xdotool ("mousemove", "--window", x->wid, mx, my, NULL);
      iterate (30);
    }
  xdotool ("mouseup", "1", NULL);
  x->actions++;
  settle ();
}

static void
type_text (Xdo        *x,
           const char *text)
{
  xdotool ("type", "--delay", "15", text, NULL);
  x->actions++;
  settle ();
}

static void
key (Xdo        *x,
     const char *keys)
{
  xdotool ("key", keys, NULL);
  x->actions++;
  settle ();
}

static GtkWidget *
palette (NapkinWindow *window,
         const char   *kind)
{
  g_autofree char *name = g_strdup_printf ("palette-%s", kind);
  GtkWidget *button = find_named (GTK_WIDGET (window), name);

  g_assert_nonnull (button);
  return button;
}

/* The whole first try, in at most 20 actions to draw and 6 to tile, with the focus
 * checked where the user types. */
static void
test_x11_matmul_from_empty (void)
{
  g_autofree char *xdotool_path = g_find_program_in_path ("xdotool");
  Xdo x = { 0 };
  NapkinDiagram *d;
  int a, b, mm, c;
  guint drawn;
  const NapkinRegion *region;
  const NapkinAnalysis *analysis;
  gint64 tile;

  if (xdotool_path == NULL)
    {
      g_test_skip ("xdotool is not installed (Debian package xdotool): real X input is not tested");
      return;
    }
  if (!GDK_IS_X11_DISPLAY (gdk_display_get_default ()))
    {
      g_test_skip ("not an X11 display");
      return;
    }
  x.window = open_blank (1280, 960);
  d = diagram_of (x.window);
  g_snprintf (x.wid, sizeof x.wid, "%lu",
              (unsigned long) gdk_x11_surface_get_xid (gtk_native_get_surface (GTK_NATIVE (x.window))));
  gtk_native_get_surface_transform (GTK_NATIVE (x.window), &x.sx, &x.sy);
  xdotool ("windowfocus", "--sync", x.wid, NULL);
  settle ();

  /* A: a new input's name is what the user types first; Tab moves on to its axes,
   * which may define the axes in place. */
  click_widget (&x, palette (x.window, "input"));
  g_assert_cmpstr (focused_field (x.window), ==, "field-name");
  type_text (&x, "A");
  key (&x, "Tab");
  g_assert_cmpstr (focused_field (x.window), ==, "field-tensor-axes");
  type_text (&x, "m=4096, k=4096");
  key (&x, "Return");
  /* Enter applied and the focus stayed: the next text goes where it is typed */
  g_assert_cmpstr (focused_field (x.window), ==, "field-tensor-axes");
  a = node_of_tensor (d, "A");
  g_assert_cmpint (a, >=, 0);
  g_assert_true (strv_is (napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, "A"))->axes, "m,k"));
  /* the canvas's placeholder axis went once the user's replaced it */
  g_assert_cmpint (napkin_diagram_find_axis (d, "i"), <, 0);

  /* B */
  click_widget (&x, palette (x.window, "input"));
  g_assert_cmpstr (focused_field (x.window), ==, "field-name");
  type_text (&x, "B");
  key (&x, "Tab");
  type_text (&x, "k, n=4096");
  key (&x, "Return");
  g_assert_cmpstr (focused_field (x.window), ==, "field-tensor-axes");
  b = node_of_tensor (d, "B");
  g_assert_cmpint (b, >=, 0);
  g_assert_true (strv_is (napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, "B"))->axes, "k,n"));
  /* what was typed for B renamed nothing else (the first try's focus bug) */
  g_assert_cmpint (node_of_tensor (d, "A"), ==, a);

  /* The contraction, added with A selected: wired from A; B dragged onto it. */
  click_node (&x, a);
  click_widget (&x, palette (x.window, "contract"));
  mm = node_of_kind (d, NAPKIN_OP_CONTRACT);
  g_assert_cmpint (mm, >=, 0);
  g_assert_cmpint (napkin_diagram_input_source (d, mm, 0), ==, a);
  drag_wire (&x, b, mm);
  g_assert_cmpint (napkin_diagram_input_source (d, mm, 1), ==, b);
  /* its output axes follow from the wires: the union less the summed k */
  g_assert_true (strv_is (napkin_diagram_node (d, mm)->out, "m,n"));

  /* The output, added with the contraction selected: wired, with its axes. */
  click_widget (&x, palette (x.window, "output"));
  g_assert_cmpstr (focused_field (x.window), ==, "field-name");
  type_text (&x, "C");
  key (&x, "Return");
  g_assert_cmpstr (focused_field (x.window), ==, "field-name");
  drawn = x.actions;
  g_test_message ("drawn in %u actions", drawn);
  g_assert_cmpuint (drawn, <=, 20);

  c = node_of_tensor (d, "C");
  g_assert_cmpint (c, >=, 0);
  g_assert_cmpint (napkin_diagram_node (d, c)->kind, ==, NAPKIN_OP_OUTPUT);
  g_assert_cmpint (napkin_diagram_input_source (d, c, 0), ==, mm);
  g_assert_true (strv_is (napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, "C"))->axes, "m,n"));
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 4);
  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 3);
  for (guint i = 0; i < 3; i++)
    g_assert_cmpint (napkin_diagram_axis (d, i)->size, ==, 4096);
  g_assert_true (napkin_diagram_validate (d, NULL));

  /* Into shared memory: select the product, Ctrl+R. The region starts with the
   * marks the product suggests and tune's tiles. */
  click_node (&x, mm);
  key (&x, "ctrl+r");
  g_test_message ("tiled in %u more actions", x.actions - drawn);
  g_assert_cmpuint (x.actions - drawn, <=, 6);
  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 1);
  region = napkin_diagram_region (d, 0);
  g_assert_cmpint (region->level, ==, NAPKIN_LEVEL_SMEM);
  g_assert_cmpuint (region->nodes->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (region->nodes, 0), ==, napkin_diagram_node (d, mm)->id);
  g_assert_cmpint (napkin_region_mark (region, "m", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, >, 1);
  g_assert_cmpint (napkin_region_mark (region, "n", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, >, 1);
  g_assert_cmpint (napkin_region_mark (region, "k", &tile), ==, NAPKIN_MARK_STREAM);
  g_assert_cmpint (tile, >, 1);
  g_assert_true (napkin_diagram_validate (d, NULL));

  /* The pane prices it: what the model says for this document on this GPU. */
  napkin_analysis_pane_flush (pane_of (x.window));
  analysis = napkin_analysis_pane_get_analysis (pane_of (x.window));
  g_assert_nonnull (analysis);
  g_assert_true (analysis->feasible);
  {
    NapkinAnalyzeOptions options = { analysis->has_dtype, analysis->dtype, FALSE, FALSE };
    g_autoptr(NapkinAnalysis) expected = napkin_analyze (d, napkin_analysis_pane_get_arch (pane_of (x.window)),
                                                         &options, NULL);
    const char *shown = napkin_analysis_pane_get_text (pane_of (x.window), "time.predicted.value");
    g_autofree char *want = napkin_format_si (expected->predicted_time_s, "s");

    g_assert_nonnull (expected);
    g_assert_cmpfloat (analysis->predicted_time_s, ==, expected->predicted_time_s);
    g_assert_cmpfloat (analysis->predicted_time_s, >, 0);
    g_assert_cmpstr (shown, ==, want);
    g_test_message ("predicted %s on %s", shown, napkin_analysis_pane_get_arch (pane_of (x.window))->id);
  }
  napkin_history_set_saved (napkin_window_get_history (x.window));
  close_window (x.window);
}

int
main (int    argc,
      char **argv)
{
  int status;

  if (!napkin_app_test_init (&argc, &argv, "napkin-newcomer-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (G_APPLICATION_HANDLES_OPEN);

  g_test_add_func ("/newcomer/x11/matmul-from-empty", test_x11_matmul_from_empty);
  status = g_test_run ();
  g_object_unref (app);
  return status;
}
