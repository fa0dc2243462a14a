/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The live analysis pane under Xvfb (docs/analysis-pane.md): the numbers it shows
 * are the model's, they follow the inspector, the architecture and undo, infeasible
 * regions show their error and their red mark, and rows trace to the diagram. */
#include "config.h"

#include <locale.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-app-test.h"
#include "napkin-analysis-pane.h"
#include "napkin-application.h"
#include "napkin-arch-editor.h"
#include "napkin-canvas-private.h"
#include "napkin-render.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-runs.h"
#include "napkin-test-diagrams.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_example (const char *name)
{
  return open_example_sized (app, name, 1280, 820);
}

/* The window's pane, shown. */
static NapkinAnalysisPane *
shown_pane_of (NapkinWindow *window)
{
  NapkinAnalysisPane *pane = pane_of (window);

  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (pane)));
  return pane;
}

/* Closing the window finalizes the pane (and its window), also while the
 * comparison chart's thread was running: no reference is left behind. */
static void
close_window_and_pane (NapkinWindow *window)
{
  GtkWidget *pane = napkin_window_get_analysis_pane (window);

  g_object_add_weak_pointer (G_OBJECT (pane), (gpointer *) &pane);
  g_object_add_weak_pointer (G_OBJECT (window), (gpointer *) &window);
  gtk_window_destroy (GTK_WINDOW (window));
  for (guint i = 0; i < 500 && (pane != NULL || window != NULL); i++)
    iterate (10);
  g_assert_null (pane);
  g_assert_null (window);
}

static void
set_inspector_entry (NapkinWindow *window,
                     const char   *name,
                     const char   *text)
{
  GtkWidget *entry = napkin_app_test_inspector_field (window, name, 500);

  gtk_editable_set_text (GTK_EDITABLE (entry), text);
  g_signal_emit_by_name (entry, "activate");
}

static gint64
shown_bytes (NapkinAnalysisPane *pane,
             const char         *key)
{
  return leading_number (napkin_analysis_pane_get_text (pane, key));
}

/* The model run independently on the window's diagram. */
static NapkinAnalysis *
model_of (NapkinWindow *window,
          NapkinArch   *arch)
{
  NapkinAnalyzeOptions options = { 0 };
  g_autoptr(GError) error = NULL;
  NapkinAnalysis *a = napkin_analyze (diagram_of (window), arch, &options, &error);

  g_assert_no_error (error);
  g_assert_nonnull (a);
  return a;
}

static void
test_tile_changes_bytes (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  NapkinArch *arch;
  gint64 l2_before, hbm_before;
  guint n;

  napkin_analysis_pane_flush (pane);
  arch = napkin_analysis_pane_get_arch (pane);
  g_assert_nonnull (arch);
  {
    g_autoptr(NapkinAnalysis) a = model_of (window, arch);

    /* The paper's H = m·n·k·(1/g_m + 1/g_n) + m·n with m = n = k = 4096, g = 128,
     * fp16: every tile read from device memory crosses L2. */
    l2_before = shown_bytes (pane, "levels.l2.bytes");
    hbm_before = shown_bytes (pane, "levels.hbm.bytes");
    g_assert_cmpint (l2_before, ==, a->levels[NAPKIN_LEVEL_L2].transfer_bytes);
    g_assert_cmpint (l2_before, ==, (G_GINT64_CONSTANT (4096) * 4096 * 4096 / 128 * 2 + 4096 * 4096) * 2);
    g_assert_cmpint (hbm_before, ==, a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
  }

  /* The inspector groups m by 64 instead of 128: one undo step, one coalesced update. */
  napkin_canvas_select_region (canvas, "block");
  n = napkin_analysis_pane_get_n_updates (pane);
  set_inspector_entry (window, "mark-m-tile", "64");
  wait_for_update (pane, n);
  {
    g_autoptr(NapkinAnalysis) a = model_of (window, arch);
    gint64 l2 = shown_bytes (pane, "levels.l2.bytes");

    g_assert_cmpint (l2, ==, a->levels[NAPKIN_LEVEL_L2].transfer_bytes);
    g_assert_cmpint (l2, ==, (G_GINT64_CONSTANT (4096) * 4096 * 4096 / 64 + G_GINT64_CONSTANT (4096) * 4096 * 4096 / 128
                              + 4096 * 4096) * 2);
    g_assert_cmpint (shown_bytes (pane, "levels.hbm.bytes"), ==, a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "regions.block.tile"), ==, "m=64 n=128 k~64");
  }

  /* Undo restores the previous numbers exactly. */
  n = napkin_analysis_pane_get_n_updates (pane);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  wait_for_update (pane, n);
  g_assert_cmpint (shown_bytes (pane, "levels.l2.bytes"), ==, l2_before);
  g_assert_cmpint (shown_bytes (pane, "levels.hbm.bytes"), ==, hbm_before);

  close_window_and_pane (window);
}

static void
test_arch_changes_time (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
  GtkDropDown *dropdown = NULL;
  g_autofree char *before = NULL;
  NapkinArch *first, *other = NULL;
  guint n, other_index = 0;

  napkin_analysis_pane_flush (pane);
  before = g_strdup (napkin_analysis_pane_get_text (pane, "time.predicted.value"));
  first = napkin_analysis_pane_get_arch (pane);
  for (guint i = 0; i < napkin_arch_registry_count (registry) && other == NULL; i++)
    if (napkin_arch_registry_get (registry, i) != first)
      {
        other = napkin_arch_registry_get (registry, i);
        other_index = i;
      }
  g_assert_nonnull (other);

  /* through the header's selector, as a user does */
  dropdown = find_arch_dropdown (window);
  g_assert_nonnull (dropdown);
  n = napkin_analysis_pane_get_n_updates (pane);
  gtk_drop_down_set_selected (dropdown, other_index);
  wait_for_update (pane, n);
  g_assert_true (napkin_analysis_pane_get_arch (pane) == other);
  {
    g_autoptr(NapkinAnalysis) a = model_of (window, other);
    g_autofree char *expected = napkin_format_si (a->predicted_time_s, "s");

    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted.value"), ==, expected);
    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted.value"), !=, before);
    g_assert_true (napkin_analysis_pane_get_analysis (pane)->arch == other);
  }

  /* the element type too: fp8 halves every byte count of an fp16 diagram */
  {
    gint64 hbm16, l2_16;

    l2_16 = shown_bytes (pane, "levels.l2.bytes");
    hbm16 = shown_bytes (pane, "levels.hbm.bytes");
    n = napkin_analysis_pane_get_n_updates (pane);
    napkin_analysis_pane_set_dtype (pane, TRUE, NAPKIN_DTYPE_FP8_E4M3);
    wait_for_update (pane, n);
    g_assert_cmpint (shown_bytes (pane, "levels.l2.bytes") * 2, ==, l2_16);
    g_assert_cmpint (shown_bytes (pane, "levels.hbm.bytes"), <, hbm16);
  }

  close_window_and_pane (window);
}

static void
test_infeasible_region (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  g_autofree char *time_before = NULL;
  const char *error;
  guint n;

  napkin_analysis_pane_flush (pane);
  time_before = g_strdup (napkin_analysis_pane_get_text (pane, "time.predicted"));
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  g_assert_false (napkin_canvas_is_region_flagged (canvas, "block"));

  /* 1024 × 1024 output tile: far more shared memory than one block may have */
  napkin_canvas_select_region (canvas, "block");
  n = napkin_analysis_pane_get_n_updates (pane);
  set_inspector_entry (window, "mark-m-tile", "1024");
  wait_for_update (pane, n);
  n = napkin_analysis_pane_get_n_updates (pane);
  set_inspector_entry (window, "mark-n-tile", "1024");
  wait_for_update (pane, n);

  g_assert_false (napkin_analysis_pane_get_analysis (pane)->feasible);
  error = napkin_analysis_pane_get_error_text (pane);
  g_assert_nonnull (error);
  g_test_message ("error shown: %s", error);
  g_assert_nonnull (strstr (error, "regions[0]: footprint"));
  g_assert_nonnull (strstr (error, "exceeds"));
  {
    const NapkinRegionCost *c = &g_array_index (napkin_analysis_pane_get_analysis (pane)->regions,
                                                NapkinRegionCost, 0);
    g_autofree char *fb = napkin_format_int (c->footprint_bytes);

    /* the numbers in the region's rows: its footprint against the capacity */
    g_assert_nonnull (strstr (napkin_analysis_pane_get_text (pane, "regions.block.footprint"), fb));
    g_assert_nonnull (napkin_analysis_pane_get_text (pane, "regions.block.error"));
    g_assert_nonnull (strstr (napkin_analysis_pane_get_text (pane, "regions.block.error"), "exceeds"));
  }
  g_assert_true (napkin_canvas_is_region_flagged (canvas, "block"));

  /* Undo twice: feasible again, the mark gone, the numbers back. */
  n = napkin_analysis_pane_get_n_updates (pane);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  wait_for_update (pane, n);
  iterate (30);
  napkin_analysis_pane_flush (pane);
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  g_assert_false (napkin_canvas_is_region_flagged (canvas, "block"));
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted"), ==, time_before);

  close_window_and_pane (window);
}

/* Streaming the softmax's own axis with no product after it is illegal (the
 * validator says so, naming the operation and the axis): the pane shows the error
 * and dims its numbers; undo brings them back. */
static void
test_illegal_stream (void)
{
  NapkinWindow *window = open_example ("softmax");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  const char *text;
  guint n;

  napkin_analysis_pane_flush (pane);
  before = g_strdup (napkin_analysis_pane_get_text (pane, "time.predicted"));
  n = napkin_analysis_pane_get_n_updates (pane);
  g_assert_true (napkin_edit_set_mark (history, "rows", "c", NAPKIN_MARK_STREAM, 1024, &error));
  g_assert_no_error (error);
  wait_for_update (pane, n);
  g_assert_null (napkin_analysis_pane_get_analysis (pane));
  text = napkin_analysis_pane_get_error_text (pane);
  g_assert_nonnull (text);
  g_test_message ("error shown: %s", text);
  g_assert_nonnull (strstr (text, "regions[0]"));
  g_assert_nonnull (strstr (text, "cannot stream over c"));
  /* the last numbers stay, dimmed */
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted"), ==, before);

  n = napkin_analysis_pane_get_n_updates (pane);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  wait_for_update (pane, n);
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  g_assert_nonnull (napkin_analysis_pane_get_analysis (pane));
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted"), ==, before);
  close_window_and_pane (window);
}

static void
test_traceability (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  const NapkinAnalysis *a;
  const char *tip;
  g_autofree char *total = NULL;
  g_auto(GStrv) selected = NULL;
  int b;

  napkin_analysis_pane_flush (pane);
  a = napkin_analysis_pane_get_analysis (pane);

  /* selecting the region highlights its rows, and only those */
  napkin_canvas_select_region (canvas, "block");
  iterate (20);
  g_assert_true (napkin_analysis_pane_is_highlighted (pane, "regions.block"));
  g_assert_true (napkin_analysis_pane_is_highlighted (pane, "regions.block.footprint"));
  g_assert_false (napkin_analysis_pane_is_highlighted (pane, "regions.block.transfers.0"));
  g_assert_false (napkin_analysis_pane_is_highlighted (pane, "levels.hbm"));

  /* selecting a wire highlights the transfers that move its tensor: B's wire into mm */
  b = napkin_diagram_find_node (diagram_of (window), "b");
  g_assert_cmpint (b, >=, 0);
  napkin_canvas_select_node (canvas, "b", FALSE);
  iterate (20);
  g_assert_false (napkin_analysis_pane_is_highlighted (pane, "regions.block"));
  g_assert_true (napkin_analysis_pane_is_highlighted (pane, "regions.block.transfers.1"));
  g_assert_false (napkin_analysis_pane_is_highlighted (pane, "regions.block.transfers.0"));

  /* a click on B's wire (found along the straight line from b to the product's
   * second port) highlights the transfer that moves B, through the canvas's own
   * pointer path */
  {
    NapkinDiagram *diagram = diagram_of (window);
    int mm = napkin_diagram_find_node (diagram, "mm");
    int wire = napkin_diagram_wire_for_port (diagram, mm, 1);
    double x0, y0, x1, y1, wx = 0, wy = 0;
    gboolean found = FALSE;
    const char *to = NULL;
    guint port = 0;

    g_assert_cmpint (mm, >=, 0);
    g_assert_cmpint (wire, >=, 0);
    g_assert_true (napkin_render_port_point (diagram, b, -1, &x0, &y0));
    g_assert_true (napkin_render_port_point (diagram, mm, 1, &x1, &y1));
    /* from the middle outwards, away from the ports; the canvas's own tolerance */
    for (guint k = 0; k < 98 && !found; k++)
      for (int dy = -40; dy <= 40 && !found; dy += 2)
        {
          guint i = k % 2 ? 50 + (k + 1) / 2 : 50 - k / 2;
          double x = x0 + (x1 - x0) * i / 100.0, y = y0 + (y1 - y0) * i / 100.0 + dy;
          NapkinHit hit = napkin_render_hit (diagram, x, y, 3 / napkin_canvas_get_zoom (canvas));

          if (hit.kind == NAPKIN_HIT_WIRE && hit.index == wire)
            {
              _napkin_canvas_doc_to_widget (canvas, x, y, &wx, &wy);
              found = TRUE;
            }
        }
    g_assert_true (found);
    napkin_canvas_clear_selection (canvas);
    _napkin_canvas_drag_begin (canvas, wx, wy, 0);
    _napkin_canvas_drag_end (canvas, 0, 0);
    iterate (20);
    g_assert_true (napkin_canvas_get_selected_wire (canvas, &to, &port));
    g_assert_cmpstr (to, ==, "mm");
    g_assert_cmpuint (port, ==, 1);
    g_assert_true (napkin_analysis_pane_is_highlighted (pane, "regions.block.transfers.1"));
    g_assert_false (napkin_analysis_pane_is_highlighted (pane, "regions.block.transfers.0"));
    g_assert_false (napkin_analysis_pane_is_highlighted (pane, "regions.block"));
  }

  /* clicking a row selects what it comes from */
  napkin_canvas_clear_selection (canvas);
  g_assert_true (napkin_analysis_pane_activate_row (pane, "regions.block.occupancy"));
  g_assert_cmpstr (napkin_canvas_get_selected_region (canvas), ==, "block");
  g_assert_true (napkin_analysis_pane_activate_row (pane, "regions.block.transfers.0"));
  selected = napkin_canvas_dup_selected_nodes (canvas);
  g_assert_cmpstr (selected[0], ==, "a");
  g_assert_null (selected[1]);

  /* hovering a number shows its formula with the values substituted */
  tip = napkin_analysis_pane_get_tooltip (pane, "levels.l2.bytes");
  g_assert_nonnull (tip);
  g_test_message ("%s", tip);
  g_assert_nonnull (strstr (tip, "8,192 × 65,536 × 2 B = 1,073,741,824 B"));
  total = napkin_format_int (a->levels[NAPKIN_LEVEL_L2].transfer_bytes);
  g_assert_true (g_str_has_suffix (tip, total) || strstr (tip, total) != NULL);
  tip = napkin_analysis_pane_get_tooltip (pane, "regions.block.waves");
  g_assert_nonnull (tip);
  {
    /* 1024 blocks of 128 × 128 over the SMs of whichever architecture is selected */
    const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, 0);
    g_autofree char *expected = g_strdup_printf ("⌈1,024 / (%u × %" G_GINT64_FORMAT ")⌉ = %" G_GINT64_FORMAT,
                                                 a->arch->sms, c->per_sm, c->waves);

    g_assert_cmpint (c->instances, ==, 1024);
    g_assert_cmpint (c->waves, ==, (1024 + a->arch->sms * c->per_sm - 1) / (a->arch->sms * c->per_sm));
    g_assert_nonnull (strstr (tip, expected));
  }
  tip = napkin_analysis_pane_get_tooltip (pane, "levels.hbm.time");
  g_assert_nonnull (strstr (tip, "bytes / bandwidth"));

  close_window_and_pane (window);
}

static void
test_export (void)
{
  NapkinWindow *window = open_example ("flash-attention");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  g_autoptr(GError) error = NULL;
  g_autofree char *json = NULL, *csv = NULL, *md = NULL, *svg_path = NULL, *png_path = NULL;
  g_autofree char *svg = NULL, *png = NULL;
  gsize png_len = 0;
  json_object *root, *t;

  json = napkin_analysis_pane_export_text (pane, "json", &error);
  g_assert_no_error (error);
  root = json_tokener_parse (json);
  g_assert_nonnull (root);
  g_assert_true (json_object_object_get_ex (root, "predicted_time_s", &t));
  g_assert_cmpfloat (json_object_get_double (t), ==, napkin_analysis_pane_get_analysis (pane)->predicted_time_s);
  json_object_put (root);

  csv = napkin_analysis_pane_export_text (pane, "csv", &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (csv, "section,name,level,transfer_elements,transfer_bytes,time_s"));
  md = napkin_analysis_pane_export_text (pane, "md", &error);
  g_assert_no_error (error);
  g_assert_true (g_str_has_prefix (md, "| level | transfer elements |"));
  g_assert_null (napkin_analysis_pane_export_text (pane, "xml", &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  g_clear_error (&error);

  svg_path = g_build_filename (tmpdir, "roofline.svg", NULL);
  g_assert_true (napkin_analysis_pane_export_plot (pane, TRUE, svg_path, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (svg_path, &svg, NULL, NULL));
  g_assert_nonnull (strstr (svg, "<svg"));
  png_path = g_build_filename (tmpdir, "compare.png", NULL);
  g_assert_true (napkin_analysis_pane_export_plot (pane, FALSE, png_path, &error));
  g_assert_no_error (error);
  g_assert_true (g_file_get_contents (png_path, &png, &png_len, NULL));
  g_assert_cmpuint (png_len, >, 1000);
  g_assert_true (memcmp (png, "\x89PNG", 4) == 0);
  g_remove (svg_path);
  g_remove (png_path);

  close_window_and_pane (window);
}

/* Many edits between two frames cost one analysis, not one each. */
static void
test_coalesced (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;
  guint n;

  napkin_analysis_pane_flush (pane);
  n = napkin_analysis_pane_get_n_updates (pane);
  for (guint i = 1; i <= 20; i++)
    {
      g_assert_true (napkin_edit_set_axis_size (history, "k", 4096 + 64 * i, &error));
      g_assert_no_error (error);
    }
  wait_for_update (pane, n);
  iterate (50);
  g_assert_cmpuint (napkin_analysis_pane_get_n_updates (pane) - n, <=, 2);
  {
    g_autoptr(NapkinAnalysis) a = model_of (window, napkin_analysis_pane_get_arch (pane));

    g_assert_cmpint (shown_bytes (pane, "levels.l2.bytes"), ==, a->levels[NAPKIN_LEVEL_L2].transfer_bytes);
  }

  /* The comparison chart follows after a pause, from its thread, for the edited diagram. */
  g_assert_true (napkin_analysis_pane_is_comparing (pane));
  for (guint i = 0; i < 1000 && napkin_analysis_pane_is_comparing (pane); i++)
    iterate (10);
  g_assert_false (napkin_analysis_pane_is_comparing (pane));
  {
    const NapkinPlot *plot = napkin_analysis_pane_get_plot (pane, FALSE);
    NapkinArch *arch = napkin_analysis_pane_get_arch (pane);
    NapkinAnalyzeOptions options = { TRUE, NAPKIN_DTYPE_BF16, FALSE, FALSE };
    g_autoptr(NapkinAnalysis) a = napkin_analyze (diagram_of (window), arch, &options, &error);
    gboolean found = FALSE;

    g_assert_no_error (error);
    g_assert_false (napkin_analysis_pane_is_comparing (pane));   /* not rebuilt on the spot */
    for (guint i = 0; i < plot->bars->len; i++)
      {
        const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);

        if (g_str_equal (b->group, arch->id) && g_str_equal (b->series, "bf16"))
          {
            g_assert_cmpfloat (b->value, ==, a->predicted_time_s);
            found = TRUE;
          }
      }
    g_assert_true (found);
  }
  close_window_and_pane (window);
}

/* A run kept in the document shows as a measured point on the roofline of its
 * GPU and as a hatched bar beside the predictions. */
static void
test_measured_points (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinDiagram *diagram = diagram_of (window);
  NapkinArch *arch;
  const NapkinPlot *plot;
  json_object *run, *gpu, *time;
  gint64 flops = G_GINT64_CONSTANT (2) * 4096 * 4096 * 4096;
  guint measured = 0, n;

  napkin_analysis_pane_flush (pane);
  arch = napkin_analysis_pane_get_arch (pane);
  /* the runner's JSON, as napkin-runner writes it (src/runner/napkin-runner.c) */
  run = json_object_new_object ();
  json_object_object_add (run, "status", json_object_new_string ("ok"));
  gpu = json_object_new_object ();
  json_object_object_add (gpu, "name", json_object_new_string (arch->name));
  json_object_object_add (run, "gpu", gpu);
  time = json_object_new_object ();
  json_object_object_add (time, "median", json_object_new_double (0.5));
  json_object_object_add (run, "time_ms", time);
  json_object_object_add (run, "flops", json_object_new_int64 (flops));
  json_object_object_add (run, "io_bytes", json_object_new_int64 (G_GINT64_CONSTANT (3) * 4096 * 4096 * 2));
  napkin_diagram_add_run (diagram, run);
  json_object_put (run);
  n = napkin_analysis_pane_get_n_updates (pane);
  napkin_diagram_changed (diagram);
  wait_for_update (pane, n);

  plot = napkin_analysis_pane_get_plot (pane, TRUE);
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);

      if (p->measured)
        {
          measured++;
          g_assert_cmpfloat_with_epsilon (p->rate, flops / 0.5e-3, 1);
          g_assert_cmpfloat_with_epsilon (p->intensity, (double) flops / (3.0 * 4096 * 4096 * 2), 1e-9);
        }
    }
  g_assert_cmpuint (measured, ==, 1);

  plot = napkin_analysis_pane_get_plot (pane, FALSE);
  measured = 0;
  for (guint i = 0; i < plot->bars->len; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);

      if (b->measured)
        {
          measured++;
          g_assert_cmpstr (b->group, ==, arch->id);
          g_assert_cmpfloat (b->value, ==, 0.5e-3);
        }
    }
  g_assert_cmpuint (measured, ==, 1);
  /* every architecture × element type has its predicted bar; where the GPU's best
   * tensor-core path is one Napkin does not generate (tcgen05 on the B200), that path's
   * time on the same bar (a marker), no slower than the generated code's, and no bar
   * or legend entry of its own per element type */
  {
    guint predicted = 0, best = 0;
    double b200_fp16 = 0, b200_best = 0;
    g_auto(GStrv) legend = napkin_plot_legend (plot);

    for (guint i = 0; i < plot->bars->len; i++)
      {
        const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);

        g_assert_null (strstr (b->series, "best path"));
        if (!b->measured)
          predicted++;
        if (b->best > 0)
          best++;
        if (g_str_equal (b->group, "b200") && g_str_equal (b->series, "fp16"))
          {
            b200_fp16 = b->value;
            b200_best = b->best;
            g_assert_cmpstr (b->best_path, ==, "tcgen05");
          }
      }
    g_assert_cmpuint (predicted, ==, napkin_arch_registry_count (napkin_arch_registry_get_default ()) * 6);
    g_assert_cmpuint (best, >=, 1);
    g_assert_cmpfloat (b200_best, >, 0);
    g_assert_cmpfloat (b200_best, <=, b200_fp16);
    /* six element types, "measured", the best path */
    g_assert_cmpuint (g_strv_length (legend), ==, 8);
    g_assert_cmpstr (legend[7], ==, "best path (not generated)");
  }

  close_window_and_pane (window);
}

/* What-if: double the device-memory bandwidth of the current profile; the pane
 * and the selector follow. Last: the profile stays in the process's registry. */
static void
test_what_if (void)
{
  NapkinWindow *window = open_example ("softmax");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinArchEditor *editor;
  NapkinArch *base, *what_if;
  g_autofree char *id = NULL, *expected = NULL;
  GtkSpinButton *spin;
  double before;
  guint n;

  napkin_analysis_pane_flush (pane);
  base = napkin_arch_ref (napkin_analysis_pane_get_arch (pane));
  before = napkin_analysis_pane_get_analysis (pane)->predicted_time_s;
  g_assert_cmpint (napkin_analysis_pane_get_analysis (pane)->bound, ==, NAPKIN_RESOURCE_HBM);

  editor = napkin_analysis_pane_open_what_if (pane);
  g_assert_nonnull (editor);
  iterate (50);
  spin = napkin_arch_editor_get_field (editor, "levels.hbm.bandwidth");
  g_assert_nonnull (spin);
  g_assert_cmpfloat_with_epsilon (gtk_spin_button_get_value (spin), base->levels[NAPKIN_LEVEL_HBM].bandwidth / 1e12,
                                  1e-3);
  gtk_spin_button_set_value (spin, 2 * base->levels[NAPKIN_LEVEL_HBM].bandwidth / 1e12);
  n = napkin_analysis_pane_get_n_updates (pane);
  g_object_add_weak_pointer (G_OBJECT (editor), (gpointer *) &editor);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (editor), "editor.apply", NULL));
  wait_for_update (pane, n);
  iterate (50);
  g_assert_null (editor);   /* applied: the dialog closed */

  id = g_strdup_printf ("%s-what-if", base->id);
  what_if = napkin_analysis_pane_get_arch (pane);
  g_assert_cmpstr (what_if->id, ==, id);
  g_assert_true (napkin_arch_registry_lookup (napkin_arch_registry_get_default (), id, NULL) == what_if);
  g_assert_cmpfloat_with_epsilon (what_if->levels[NAPKIN_LEVEL_HBM].bandwidth,
                                  2 * base->levels[NAPKIN_LEVEL_HBM].bandwidth, 1e6);
  g_assert_nonnull (strstr (napkin_arch_get_source (what_if, "levels.hbm.bandwidth_bytes_per_s"), "what-if"));
  g_assert_cmpstr (napkin_arch_get_source (what_if, "sms"), ==, napkin_arch_get_source (base, "sms"));
  /* saved beside calibrated profiles, and it loads back */
  {
    g_autofree char *file = g_strconcat (id, ".json", NULL);
    g_autofree char *path = g_build_filename (g_get_user_data_dir (), "napkin", "archs", file, NULL);
    g_autoptr(GError) error = NULL;
    g_autoptr(NapkinArch) saved = napkin_arch_load_from_file (path, &error);

    g_assert_no_error (error);
    g_assert_cmpstr (what_if->path, ==, path);
    g_assert_cmpfloat_with_epsilon (saved->levels[NAPKIN_LEVEL_HBM].bandwidth,
                                    what_if->levels[NAPKIN_LEVEL_HBM].bandwidth, 1);
    g_remove (path);
  }
  {
    g_autoptr(NapkinAnalysis) a = model_of (window, what_if);

    expected = napkin_format_si (a->predicted_time_s, "s");
    g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "time.predicted.value"), ==, expected);
    g_assert_cmpfloat (a->predicted_time_s, <, before);
  }
  napkin_arch_unref (base);
  close_window_and_pane (window);
}

/* One feasibility answer (the kernel plan, docs/plan.md): FlashAttention at q = k = 8192,
 * keys streamed by 128 in 3 stages, asks for 230,480 bytes of shared memory in the kernel
 * the plan runs. The pane's footprint row, the analysis, the plan and the generated code
 * say the same: 230,480 of 232,448 B (99 %), feasible, not red. (The paper's footprint M,
 * 262,144 B, once showed 113 % in red beside "every region fits".) */
static void
test_one_feasibility (void)
{
  NapkinWindow *window = open_example ("flash-attention");
  NapkinAnalysisPane *pane = shown_pane_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  NapkinHistory *history = napkin_window_get_history (window);
  const NapkinAnalysis *a;
  const NapkinRegionCost *c;
  const char *row;
  guint n;

  napkin_analysis_pane_flush (pane);
  {
    /* the H100, through the header's selector (an earlier test may have left another) */
    NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
    GtkDropDown *dropdown = find_arch_dropdown (window);

    g_assert_nonnull (dropdown);
    for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
      if (g_str_equal (napkin_arch_registry_get (registry, i)->id, "h100")
          && gtk_drop_down_get_selected (dropdown) != i)
        {
          n = napkin_analysis_pane_get_n_updates (pane);
          gtk_drop_down_set_selected (dropdown, i);
          wait_for_update (pane, n);
        }
    g_assert_cmpstr (napkin_analysis_pane_get_arch (pane)->id, ==, "h100");
  }
  g_assert_true (napkin_edit_set_axis_size (history, "q", 8192, NULL));
  g_assert_true (napkin_edit_set_axis_size (history, "k", 8192, NULL));
  napkin_canvas_select_region (canvas, "block");
  n = napkin_analysis_pane_get_n_updates (pane);
  set_inspector_entry (window, "mark-k-tile", "128");
  wait_for_update (pane, n);
  n = napkin_analysis_pane_get_n_updates (pane);
  set_inspector_entry (window, "region-stages", "3");
  wait_for_update (pane, n);
  iterate (30);
  napkin_analysis_pane_flush (pane);

  a = napkin_analysis_pane_get_analysis (pane);
  c = &g_array_index (a->regions, NapkinRegionCost, 0);
  for (guint i = 0; i < a->errors->len; i++)
    g_test_message ("error: %s", (const char *) g_ptr_array_index (a->errors, i));
  g_assert_true (a->feasible);
  g_assert_cmpint (c->plan_smem_bytes, ==, 230480);
  g_assert_cmpint (c->footprint_bytes, ==, 262144);   /* the paper's M, not what the block asks for */
  row = napkin_analysis_pane_get_text (pane, "regions.block.footprint");
  g_test_message ("footprint row: %s", row);
  g_assert_nonnull (strstr (row, "230,480 B of 232,448 B (99 %)"));
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  g_assert_false (napkin_canvas_is_region_flagged (canvas, "block"));
  {
    /* the plan and the code agree */
    const NapkinPlanKernel *k = napkin_plan_kernel_for (a->plan, 0, -1);

    g_assert_cmpint (k->smem_bytes, ==, 230480);
    g_assert_true (k->feasible);
  }
  close_window_and_pane (window);
}

/* The pane's model runs in a thread on a copy, so a slow analysis never stalls the
 * main loop, and only the result for the latest state is shown. Before, the model ran
 * in the frame clock's tick: analysing 100 000 operations took 21 s, and the editor
 * froze for that long on every change. NAPKIN_ANALYSIS_DELAY_MS makes every analysis
 * slow here (the model itself is now linear and fast). */
/* Large enough to matter, small enough that a frame of the canvas is quick. */
#define LARGE_OPS 2000
/* How long each analysis is made to take, and the longest a main-loop iteration may
 * take meanwhile: under AddressSanitizer one frame of 2 000 operations takes about
 * 2 s, and 4.4 s on a loaded 2-core machine, so there the analysis takes 12 s and an
 * iteration may take 6 (a model run on the main thread would still take 12). */
#if defined(__SANITIZE_ADDRESS__)
#define ANALYSIS_DELAY_S 12
#else
#define ANALYSIS_DELAY_S 1
#endif

static void
test_large_off_main_thread (void)
{
  g_autoptr(GString) json = napkin_test_map_chain_json (LARGE_OPS, TRUE, 0);
  g_autofree char *path = g_build_filename (tmpdir, "large.napkin", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  NapkinAnalysisPane *pane;
  const NapkinAnalysis *a;
  gint64 start, deadline;
  double longest = 0, waited;
  guint n, iterations = 0;

  g_assert_true (g_file_set_contents (path, json->str, json->len, &error));
  g_assert_true (napkin_window_load_file (window, file, &error));
  g_assert_no_error (error);
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 820);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  pane = shown_pane_of (window);
  napkin_analysis_pane_flush (pane);
  iterate (100);

  /* A change, then the main loop until the result is shown: it keeps turning. */
  g_setenv ("NAPKIN_ANALYSIS_DELAY_MS", G_STRINGIFY (ANALYSIS_DELAY_S) "000", TRUE);
  n = napkin_analysis_pane_get_n_updates (pane);
  napkin_analysis_pane_set_dtype (pane, TRUE, NAPKIN_DTYPE_FP16);
  start = g_get_monotonic_time ();
  deadline = start + 120 * G_USEC_PER_SEC;
  while (napkin_analysis_pane_get_n_updates (pane) == n && g_get_monotonic_time () < deadline)
    {
      gint64 t = g_get_monotonic_time ();

      g_main_context_iteration (NULL, FALSE);
      /* the iteration that shows the result (and redraws) is not waiting */
      if (napkin_analysis_pane_get_n_updates (pane) == n)
        longest = MAX (longest, (g_get_monotonic_time () - t) / 1e6);
      iterations++;
    }
  waited = (g_get_monotonic_time () - start) / 1e6;
  g_test_message ("%d operations, an analysis of at least %d s: shown after %.3f s; %u main-loop iterations "
                  "meanwhile, the longest %.3f s (the one that shows it aside)", LARGE_OPS, ANALYSIS_DELAY_S, waited, iterations, longest);
  g_assert_cmpuint (napkin_analysis_pane_get_n_updates (pane), >, n);
  g_assert_cmpfloat (waited, >=, ANALYSIS_DELAY_S);
  g_assert_cmpuint (iterations, >=, 10);
  g_assert_cmpfloat (longest, <, ANALYSIS_DELAY_S / 2.0);
  a = napkin_analysis_pane_get_analysis (pane);
  g_assert_nonnull (a);
  g_assert_true (a->has_dtype);
  g_assert_cmpint (a->dtype, ==, NAPKIN_DTYPE_FP16);

  /* Changes while one runs: the running one is dropped, the one for the last change
   * shown, and nothing in between. */
  n = napkin_analysis_pane_get_n_updates (pane);
  napkin_analysis_pane_set_dtype (pane, TRUE, NAPKIN_DTYPE_FP32);
  iterate (100);
  napkin_analysis_pane_set_dtype (pane, TRUE, NAPKIN_DTYPE_INT8);
  iterate (100);
  napkin_analysis_pane_set_dtype (pane, TRUE, NAPKIN_DTYPE_TF32);
  for (guint i = 0; i < 12000 && napkin_analysis_pane_get_n_updates (pane) == n; i++)
    iterate (10);
  a = napkin_analysis_pane_get_analysis (pane);
  g_assert_nonnull (a);
  g_assert_cmpint (a->dtype, ==, NAPKIN_DTYPE_TF32);
  g_assert_cmpuint (napkin_analysis_pane_get_n_updates (pane) - n, ==, 1);
  g_unsetenv ("NAPKIN_ANALYSIS_DELAY_MS");

  close_window_and_pane (window);
  g_unlink (path);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-analysis-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);

  g_test_add_func ("/analysis/inspector-tile-changes-bytes-undo-restores", test_tile_changes_bytes);
  g_test_add_func ("/analysis/architecture-and-dtype-change-time", test_arch_changes_time);
  g_test_add_func ("/analysis/infeasible-region-error-and-highlight", test_infeasible_region);
  g_test_add_func ("/analysis/illegal-stream-error", test_illegal_stream);
  g_test_add_func ("/analysis/traceability", test_traceability);
  g_test_add_func ("/analysis/export", test_export);
  g_test_add_func ("/analysis/coalesced", test_coalesced);
  g_test_add_func ("/analysis/measured-points", test_measured_points);
  g_test_add_func ("/analysis/what-if", test_what_if);
  g_test_add_func ("/analysis/one-feasibility-answer", test_one_feasibility);
  g_test_add_func ("/analysis/off-main-thread-latest-wins", test_large_off_main_thread);
  return napkin_app_test_run (app, tmpdir);
}
