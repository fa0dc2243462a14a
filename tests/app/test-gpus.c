/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The gpus level in the editor under Xvfb (docs/multi-gpu.md, docs/editor.md "Several
 * GPUs"): the canvas draws the region as the outermost teal box, the analysis pane's
 * "Several GPUs" section shows the collectives napkin_shard_analyze derives, and a
 * gpus region is created, edited, undone, saved and reloaded through the editor.
 * With NAPKIN_SCREENSHOT_DIR=DIR the window is saved there as editor-gpus.png. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-app-test.h"
#include "napkin-analysis-pane.h"
#include "napkin-canvas.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-render.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_example (const char *name)
{
  NapkinWindow *window = open_example_sized (app, name, 1280, 860);

  gtk_test_widget_wait_for_draw (GTK_WIDGET (napkin_window_get_canvas (window)));
  iterate (100);
  return window;
}

static guint
count_near (GdkTexture *texture,
            const char *hex)
{
  int w = gdk_texture_get_width (texture), h = gdk_texture_get_height (texture);
  g_autofree guint8 *pixels = g_malloc ((gsize) w * h * 4);

  gdk_texture_download (texture, pixels, w * 4);
  return napkin_app_test_count_near (pixels, w, h, hex, 20);
}

static void
wait_for_count (NapkinAnalysisPane *pane,
                const char         *count)
{
  for (guint i = 0; i < 500 && g_strcmp0 (napkin_analysis_pane_get_text (pane, "gpus.count"), count) != 0; i++)
    iterate (10);
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "gpus.count"), ==, count);
}

/* The pane's collective against the model run here on the same diagram. */
static void
check_collective (NapkinAnalysisPane *pane,
                  NapkinDiagram      *diagram,
                  guint               gpus,
                  guint               index,
                  const char         *kind,
                  gint64              bytes)
{
  NapkinAnalyzeOptions options = { 0 };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinShardAnalysis) sa = napkin_shard_analyze (diagram, napkin_analysis_pane_get_arch (pane), gpus,
                                                            &options, &error);
  g_autofree char *key = g_strdup_printf ("gpus.collective.%u", index);
  g_autofree char *k_kind = g_strconcat (key, ".kind", NULL);
  g_autofree char *k_bytes = g_strconcat (key, ".bytes", NULL);
  g_autofree char *k_time = g_strconcat (key, ".time", NULL);
  g_autofree char *k_bus = g_strconcat (key, ".bus", NULL);
  const NapkinCollective *c;
  g_autofree char *t = NULL;
  g_autofree char *bw = NULL;

  g_assert_no_error (error);
  g_assert_cmpuint (sa->shard->collectives->len, >, index);
  c = g_ptr_array_index (sa->shard->collectives, index);
  t = napkin_format_si (c->seconds, "s");
  bw = napkin_format_si (c->bus_bandwidth, "B/s");
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, k_kind), ==, kind);
  g_assert_cmpint (leading_number (napkin_analysis_pane_get_text (pane, k_bytes)), ==, bytes);
  g_assert_cmpint (c->bytes, ==, bytes);
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, k_time), ==, t);
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, k_bus), ==, bw);
  /* a real price: latency plus bytes over a bus of hundreds of GB/s */
  g_assert_cmpfloat (c->seconds, >, (double) bytes / 2e12);
  g_assert_cmpfloat (c->seconds, <, (double) bytes / 1e10);
  {
    g_autofree char *total = napkin_format_si (sa->total_s, "s");
    g_autofree char *compute = napkin_format_si (sa->compute_s, "s");

    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "gpus.total"), ==, total);
    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "gpus.compute"), ==, compute);
    g_assert_cmpfloat (sa->total_s, >, sa->compute_s);
  }
}

/* tp-mlp: the teal box on the canvas, the all-reduce of Y in the pane (8192 × 4096 bf16:
 * 67,108,864 B per rank), and the count from the pane's selector. */
static void
test_tp_mlp (void)
{
  NapkinWindow *window = open_example ("tp-mlp");
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  GtkWidget *section, *dropdown;
  g_autoptr(GdkTexture) shot = NULL;
  g_autoptr(GdkTexture) canvas_shot = NULL;
  NapkinRect rect;
  NapkinHit hit;

  napkin_analysis_pane_flush (pane);
  iterate (50);

  /* the canvas: the region is the outermost box, picked by its border */
  g_assert_true (napkin_render_gpus_rect (diagram_of (window), &rect));
  hit = napkin_render_hit (diagram_of (window), rect.x + 1, rect.y + rect.height - 30, 2);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_GPUS);
  canvas_shot = shoot (GTK_WIDGET (canvas));
  /* the dash-dot border (3 px around the box), the title and the legend's row */
  g_assert_cmpuint (count_near (canvas_shot, napkin_render_gpus_hex (napkin_canvas_get_dark (canvas))), >, 1000);

  /* the pane's section, with the region's count (2) */
  section = find_named (GTK_WIDGET (pane), "gpus-count");
  g_assert_nonnull (section);
  g_assert_true (gtk_widget_get_visible (gtk_widget_get_parent (gtk_widget_get_parent (section))));
  wait_for_count (pane, "2");
  g_assert_nonnull (napkin_analysis_pane_get_shard_analysis (pane));
  check_collective (pane, diagram_of (window), 2, 0, "all-reduce", 67108864);
  g_assert_nonnull (napkin_analysis_pane_get_text (pane, "gpus.kernel.0"));
  g_assert_nonnull (napkin_analysis_pane_get_text (pane, "gpus.kernel.1"));
  g_assert_null (napkin_analysis_pane_get_text (pane, "gpus.collective.1"));

  /* the picture for docs/editor.md: the whole diagram, the region in the inspector */
  napkin_canvas_zoom_to_fit (canvas);
  napkin_canvas_select_region (canvas, "tp");
  /* the inspector rebuilds on a later main-loop turn (slowly under AddressSanitizer): poll */
  napkin_app_test_inspector_field (window, "gpus-placement-W1", 1000);
  iterate (200);
  shot = shoot (GTK_WIDGET (window));
  if (g_getenv ("NAPKIN_SCREENSHOT_DIR"))
    {
      g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SCREENSHOT_DIR"), "editor-gpus.png", NULL);

      g_assert_true (gdk_texture_save_to_png (shot, path));
    }

  /* 8 GPUs from the selector: the same bytes per rank, a ring of 8 (more steps) */
  dropdown = find_named (GTK_WIDGET (pane), "gpus-count");
  gtk_drop_down_set_selected (GTK_DROP_DOWN (dropdown), 2);
  wait_for_count (pane, "8");
  check_collective (pane, diagram_of (window), 8, 0, "all-reduce", 67108864);
  /* the document keeps its own count: the selector is the analysis's */
  g_assert_cmpuint (napkin_diagram_get_gpus (diagram_of (window))->gpus, ==, 2);
  close_window (window);
}

static void
set_dropdown (NapkinWindow *window,
              const char   *name,
              guint         position)
{
  GtkWidget *w = napkin_app_test_inspector_field (window, name, 200);

  gtk_drop_down_set_selected (GTK_DROP_DOWN (w), position);
  iterate (20);
}

static void
set_entry (NapkinWindow *window,
           const char   *name,
           const char   *text)
{
  GtkWidget *w = napkin_app_test_inspector_field (window, name, 200);

  gtk_editable_set_text (GTK_EDITABLE (w), text);
  g_signal_emit_by_name (w, "activate");
  iterate (20);
}

static const char *
placement_of (NapkinDiagram *diagram,
              const char    *tensor)
{
  const NapkinPlacement *p = napkin_gpus_region_placement (napkin_diagram_get_gpus (diagram), tensor);

  return p ? p->split : NULL;
}

static const char *
parallel_axis (const NapkinGpusRegion *gpus)
{
  for (guint m = 0; m < gpus->region->marks->len; m++)
    if (g_array_index (gpus->region->marks, NapkinMark, m).kind == NAPKIN_MARK_PARALLEL)
      return g_array_index (gpus->region->marks, NapkinMark, m).axis;
  return NULL;
}

/* matmul: a gpus region around the selection from the Region menu's action, edited in
 * the inspector, each step undone and redone, saved and loaded back. */
static void
test_create (void)
{
  NapkinWindow *window = open_example ("matmul");
  NapkinDiagram *d = diagram_of (window);
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  g_autofree char *path = g_build_filename (tmpdir, "matmul-gpus.napkin", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) loaded = NULL;
  const NapkinGpusRegion *gpus;
  guint depth;

  g_assert_null (napkin_diagram_get_gpus (d));
  /* nothing selected: refused, nothing changed */
  napkin_canvas_clear_selection (canvas);
  depth = napkin_history_get_depth (napkin_window_get_history (window));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-region", "s", "gpus"));
  g_assert_null (napkin_diagram_get_gpus (d));
  g_assert_cmpuint (napkin_history_get_depth (napkin_window_get_history (window)), ==, depth);

  /* the inputs and output in the selection stay in device memory */
  napkin_canvas_select_all (canvas);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-region", "s", "gpus"));
  gpus = napkin_diagram_get_gpus (d);
  g_assert_nonnull (gpus);
  g_assert_cmpstr (gpus->region->name, ==, "gpus1");
  g_assert_cmpuint (gpus->region->nodes->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (gpus->region->nodes, 0), ==, "mm");
  g_assert_cmpuint (gpus->gpus, ==, 2);
  g_assert_cmpstr (parallel_axis (gpus), ==, "m");   /* the first axis the shard plan accepts */
  g_assert_cmpstr (napkin_canvas_get_selected_region (canvas), ==, "gpus1");
  /* a second one is refused */
  g_assert_null (napkin_canvas_add_gpus_region (canvas, &error));
  g_assert_nonnull (error);
  g_clear_error (&error);

  /* C replicated, made split on m: one all-gather of 4096 × 4096 fp16 */
  napkin_analysis_pane_flush (pane);
  wait_for_count (pane, "2");
  check_collective (pane, d, 2, 0, "all-gather", 4096LL * 4096 * 2);

  /* the inspector: split on k (a pending sum: all-reduce), 4 GPUs, C split on n */
  set_dropdown (window, "gpus-axis", napkin_diagram_find_axis (d, "k") + 1);
  g_assert_cmpstr (parallel_axis (napkin_diagram_get_gpus (d)), ==, "k");
  set_entry (window, "gpus-count", "4");
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->gpus, ==, 4);
  napkin_analysis_pane_flush (pane);
  wait_for_count (pane, "4");
  check_collective (pane, d, 4, 0, "all-reduce", 4096LL * 4096 * 2);
  set_dropdown (window, "gpus-placement-C", 2);   /* replicated, split m, split n */
  g_assert_cmpstr (placement_of (d, "C"), ==, "n");
  napkin_analysis_pane_flush (pane);
  check_collective (pane, d, 4, 0, "reduce-scatter", 4096LL * 4096 * 2);
  /* a count out of range is refused where it was typed, and changes nothing */
  set_entry (window, "gpus-count", "5000");
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->gpus, ==, 4);
  set_entry (window, "gpus-count", "4");

  /* undo, step by step, back to no region; redo all of it */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_null (placement_of (d, "C"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->gpus, ==, 2);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpstr (parallel_axis (napkin_diagram_get_gpus (d)), ==, "m");
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_null (napkin_diagram_get_gpus (d));
  for (guint i = 0; i < 4; i++)
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  g_assert_nonnull (napkin_diagram_get_gpus (d));
  g_assert_cmpstr (parallel_axis (napkin_diagram_get_gpus (d)), ==, "k");
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->gpus, ==, 4);
  g_assert_cmpstr (placement_of (d, "C"), ==, "n");

  /* overlap: the chunk axis first (4 chunks to start), then the count */
  napkin_canvas_select_region (canvas, "gpus1");
  set_dropdown (window, "gpus-chunk-axis", napkin_diagram_find_axis (d, "m") + 1);
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->chunks, ==, 4);
  set_entry (window, "gpus-chunks", "8");
  g_assert_cmpuint (napkin_diagram_get_gpus (d)->chunks, ==, 8);
  g_assert_cmpstr (napkin_diagram_get_gpus (d)->chunk_axis, ==, "m");

  /* saved and loaded back: everything the editor set */
  g_assert_true (napkin_window_save_to_file (window, file, &error));
  g_assert_no_error (error);
  loaded = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_no_error (error);
  gpus = napkin_diagram_get_gpus (loaded);
  g_assert_nonnull (gpus);
  g_assert_cmpstr (gpus->region->name, ==, "gpus1");
  g_assert_cmpstr (parallel_axis (gpus), ==, "k");
  g_assert_cmpuint (gpus->gpus, ==, 4);
  g_assert_cmpstr (placement_of (loaded, "C"), ==, "n");
  g_assert_cmpuint (gpus->chunks, ==, 8);
  g_assert_cmpstr (gpus->chunk_axis, ==, "m");
  g_assert_true (napkin_region_has_node (gpus->region, "mm"));

  /* deleting the region is one step too */
  napkin_canvas_select_region (canvas, "gpus1");
  g_assert_true (napkin_canvas_delete_selection (canvas, &error));
  g_assert_no_error (error);
  g_assert_null (napkin_diagram_get_gpus (d));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_nonnull (napkin_diagram_get_gpus (d));
  g_unlink (path);
  close_window (window);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-gpus-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);
  g_test_add_func ("/gpus/tp-mlp", test_tp_mlp);
  g_test_add_func ("/gpus/create", test_create);
  return napkin_app_test_run (app, tmpdir);
}
