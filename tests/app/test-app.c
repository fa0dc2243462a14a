/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The editor under Xvfb: real windows, real actions, and the canvas's pointer
 * paths driven with synthesized drags. */
#include "config.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "napkin-app-test.h"
#include "napkin-application.h"
#include "napkin-canvas-private.h"
#include "napkin-describe.h"
#include "napkin-edit.h"
#include "napkin-file.h"
#include "napkin-render.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_window (const char *path)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autoptr(GError) error = NULL;

  if (path != NULL)
    {
      g_autoptr(GFile) file = g_file_new_for_path (path);

      g_assert_true (napkin_window_load_file (window, file, &error));
      g_assert_no_error (error);
    }
  else
    g_assert_true (napkin_window_load_default (window));
  gtk_window_set_default_size (GTK_WINDOW (window), 1200, 800);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  iterate (50);
  return window;
}

/* The inspector rebuilds from an idle after each change: polls up to 5 s. */
static GtkWidget *
inspector_field (NapkinWindow *window,
                 const char   *name)
{
  return napkin_app_test_inspector_field (window, name, 500);
}

static void
set_entry (NapkinWindow *window,
           const char   *name,
           const char   *text)
{
  GtkWidget *entry = inspector_field (window, name);

  gtk_editable_set_text (GTK_EDITABLE (entry), text);
  g_signal_emit_by_name (entry, "activate");
}

/* A synthesized drag between two document points. */
static void
drag (NapkinCanvas *canvas,
      double        doc_x0,
      double        doc_y0,
      double        doc_x1,
      double        doc_y1)
{
  double x0, y0, x1, y1;

  _napkin_canvas_doc_to_widget (canvas, doc_x0, doc_y0, &x0, &y0);
  _napkin_canvas_doc_to_widget (canvas, doc_x1, doc_y1, &x1, &y1);
  _napkin_canvas_drag_begin (canvas, x0, y0, 0);
  _napkin_canvas_drag_update (canvas, (x1 - x0) / 2, (y1 - y0) / 2);
  _napkin_canvas_drag_update (canvas, x1 - x0, y1 - y0);
  _napkin_canvas_drag_end (canvas, x1 - x0, y1 - y0);
}

static void
test_open_every_example (void)
{
  g_autoptr(GDir) dir = g_dir_open (g_getenv ("NAPKIN_EXAMPLES_DIR"), 0, NULL);
  const char *name;
  guint opened = 0;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autofree char *path = NULL;
      g_autoptr(NapkinDiagram) expected = NULL;
      NapkinWindow *window;
      NapkinDiagram *shown;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), name, NULL);
      expected = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
      window = open_window (path);
      shown = diagram_of (window);
      g_assert_cmpuint (napkin_diagram_n_nodes (shown), ==, napkin_diagram_n_nodes (expected));
      g_assert_cmpuint (napkin_diagram_n_regions (shown), ==, napkin_diagram_n_regions (expected));
      g_assert_null (napkin_window_get_banner_text (window));
      /* Fitted: the whole diagram is on screen — unless that would make its strand
       * labels smaller than 9 px: then it is shown from its top-left corner at the
       * zoom where they are 9 px (docs/editor.md, "The first screen"). */
      {
        NapkinCanvas *canvas = napkin_window_get_canvas (window);
        double readable = 9.0 / napkin_render_strand_label_size ();
        NapkinRect b;
        double x0, y0, x1, y1;

        napkin_render_bounds (shown, &b);
        _napkin_canvas_doc_to_widget (canvas, b.x, b.y, &x0, &y0);
        _napkin_canvas_doc_to_widget (canvas, b.x + b.width, b.y + b.height, &x1, &y1);
        g_assert_cmpfloat (x0, >=, -1);
        g_assert_cmpfloat (y0, >=, -1);
        g_assert_cmpfloat (napkin_canvas_get_zoom (canvas), >=, readable - 1e-9);
        if (napkin_canvas_get_zoom (canvas) > readable + 1e-9)
          {
            g_assert_cmpfloat (x1, <=, gtk_widget_get_width (GTK_WIDGET (canvas)) + 1);
            g_assert_cmpfloat (y1, <=, gtk_widget_get_height (GTK_WIDGET (canvas)) + 1);
          }
      }
      close_window (window);
      opened++;
    }
  g_assert_cmpuint (opened, >=, 8);
}

static void
test_default_is_flash_attention (void)
{
  NapkinWindow *window = open_window (NULL);
  NapkinDiagram *diagram = diagram_of (window);

  g_assert_cmpstr (napkin_diagram_get_title (diagram), ==, "FlashAttention");
  g_assert_cmpint (napkin_diagram_find_region (diagram, "block"), >=, 0);
  g_assert_true (napkin_window_is_pristine (window));
  /* Closing releases the window, its history and its diagram: nothing leaks a ref. */
  {
    NapkinHistory *history = g_object_ref (napkin_window_get_history (window));
    NapkinDiagram *held = g_object_ref (diagram);

    g_object_ref (window);
    close_window (window);
    g_assert_finalize_object (window);
    g_assert_finalize_object (history);
    g_assert_finalize_object (held);
  }
}

/* The editor's walk-through (docs/editor.md): palette add, connect, relabel, undo, redo, save, reload. */
static void
test_edit_save_reload (void)
{
  g_autofree char *src = example_path ("matmul");
  g_autofree char *work = g_build_filename (tmpdir, "work.napkin", NULL);
  g_autofree char *again = g_build_filename (tmpdir, "again.napkin", NULL);
  g_autofree char *contents = NULL;
  NapkinWindow *window;
  NapkinCanvas *canvas;
  NapkinDiagram *diagram;
  NapkinHistory *history;
  g_auto(GStrv) selected = NULL;
  const NapkinRegion *region;
  double ox, oy, ix, iy, wx, wy;
  int mm, map, c, r;
  guint n_nodes, depth;
  gint64 tile = 0;

  g_assert_true (g_file_get_contents (src, &contents, NULL, NULL));
  g_assert_true (g_file_set_contents (work, contents, -1, NULL));
  window = open_window (work);
  canvas = napkin_window_get_canvas (window);
  history = napkin_window_get_history (window);
  diagram = diagram_of (window);
  n_nodes = napkin_diagram_n_nodes (diagram);
  g_assert_false (napkin_history_get_modified (history));

  /* 1. Add a map from the palette: the same action the palette button and the
   * keyboard "add" popover use, and a drop as from a drag. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "map"));
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, n_nodes + 1);
  selected = napkin_canvas_dup_selected_nodes (canvas);
  g_assert_cmpstr (selected[0], ==, "map1");
  map = napkin_diagram_find_node (diagram, "map1");
  g_assert_cmpint (napkin_diagram_node (diagram, map)->kind, ==, NAPKIN_OP_MAP);
  _napkin_canvas_doc_to_widget (canvas, 300, 320, &wx, &wy);
  g_assert_true (_napkin_canvas_drop_string (canvas, NAPKIN_CANVAS_PALETTE_PREFIX "softmax", wx, wy));
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, n_nodes + 2);
  g_assert_false (_napkin_canvas_drop_string (canvas, NAPKIN_CANVAS_PALETTE_PREFIX "teleport", wx, wy));
  g_assert_true (napkin_history_get_modified (history));

  /* Move the map clear of the others with a drag on its glyph. */
  {
    NapkinRect r0;

    map = napkin_diagram_find_node (diagram, "map1");
    napkin_render_node_rect (diagram, map, &r0);
    drag (canvas, r0.x + r0.width / 2, r0.y + r0.height / 2, 640 + r0.width / 2, 300 + r0.height / 2);
    g_assert_cmpfloat (napkin_diagram_node (diagram, map)->x, ==, 640);
    g_assert_cmpfloat (napkin_diagram_node (diagram, map)->y, ==, 300);
  }

  /* 2. Connect mm's output to the map's input by dragging between the ports. */
  mm = napkin_diagram_find_node (diagram, "mm");
  map = napkin_diagram_find_node (diagram, "map1");
  g_assert_true (napkin_render_port_point (diagram, mm, -1, &ox, &oy));
  g_assert_true (napkin_render_port_point (diagram, map, 0, &ix, &iy));
  drag (canvas, ox, oy, ix, iy);
  g_assert_cmpint (napkin_diagram_input_source (diagram, map, 0), ==, mm);

  /* Live feedback: A[m,k] into the output C[m,n] is refused on the fly with the
   * core's words, and releasing on empty paper connects nothing. */
  {
    int a = napkin_diagram_find_node (diagram, "a");
    double ax, ay, cx, cy, x0, y0, x1, y1;
    guint n_wires = napkin_diagram_n_wires (diagram);

    c = napkin_diagram_find_node (diagram, "c");
    g_assert_true (napkin_render_port_point (diagram, a, -1, &ax, &ay));
    g_assert_true (napkin_render_port_point (diagram, c, 0, &cx, &cy));
    _napkin_canvas_doc_to_widget (canvas, ax, ay, &x0, &y0);
    _napkin_canvas_doc_to_widget (canvas, cx, cy, &x1, &y1);
    _napkin_canvas_drag_begin (canvas, x0, y0, 0);
    _napkin_canvas_drag_update (canvas, x1 - x0, y1 - y0);
    g_assert_nonnull (_napkin_canvas_get_connect_problem (canvas));
    g_test_message ("feedback: %s", _napkin_canvas_get_connect_problem (canvas));
    _napkin_canvas_drag_update (canvas, x1 - x0, y1 - y0 + 400);
    g_assert_null (_napkin_canvas_get_connect_problem (canvas));
    _napkin_canvas_drag_end (canvas, x1 - x0, y1 - y0 + 400);
    g_assert_cmpuint (napkin_diagram_n_wires (diagram), ==, n_wires);
    g_assert_cmpint (napkin_diagram_input_source (diagram, c, 0), ==, mm);
  }

  /* 3. Relabel: rubber-band the contraction, Ctrl+R draws a shared-memory region,
   * then the inspector streams k in chunks of 64 and groups m by 128. */
  {
    NapkinRect rm;

    mm = napkin_diagram_find_node (diagram, "mm");
    napkin_render_node_rect (diagram, mm, &rm);
    drag (canvas, rm.x - 10, rm.y - 30, rm.x + rm.width + 10, rm.y + rm.height + 10);
    g_clear_pointer (&selected, g_strfreev);
    selected = napkin_canvas_dup_selected_nodes (canvas);
    g_assert_cmpstr (selected[0], ==, "mm");
    g_assert_null (selected[1]);
  }
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-region", "s", "smem"));
  r = napkin_diagram_find_region (diagram, "block1");
  g_assert_cmpint (r, >=, 0);
  g_assert_cmpint (napkin_diagram_region (diagram, r)->level, ==, NAPKIN_LEVEL_SMEM);
  g_assert_cmpstr (napkin_canvas_get_selected_region (canvas), ==, "block1");

  gtk_drop_down_set_selected (GTK_DROP_DOWN (inspector_field (window, "mark-k-kind")), NAPKIN_MARK_STREAM);
  set_entry (window, "mark-k-tile", "64");
  gtk_drop_down_set_selected (GTK_DROP_DOWN (inspector_field (window, "mark-m-kind")), NAPKIN_MARK_PARALLEL);
  set_entry (window, "mark-m-tile", "128");
  region = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, "block1"));
  g_assert_cmpint (napkin_region_mark (region, "k", &tile), ==, NAPKIN_MARK_STREAM);
  g_assert_cmpint (tile, ==, 64);
  g_assert_cmpint (napkin_region_mark (region, "m", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 128);

  /* An axis resized below a region's tile: the tile is re-cut to the axis in the same
   * undo step (the window says so in a toast), and undo restores both. */
  {
    gint64 k_before = napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "k"));

    napkin_canvas_clear_selection (canvas);
    set_entry (window, "axis-k", "48");
    region = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, "block1"));
    g_assert_cmpint (napkin_region_mark (region, "k", &tile), ==, NAPKIN_MARK_STREAM);
    g_assert_cmpint (tile, ==, 48);
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
    region = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, "block1"));
    g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "k")), ==, k_before);
    g_assert_cmpint (napkin_region_mark (region, "k", &tile), ==, NAPKIN_MARK_STREAM);
    g_assert_cmpint (tile, ==, 64);
  }

  /* An axis size through the inspector; a bad one is refused inline with the
   * core's text and changes nothing. */
  napkin_canvas_clear_selection (canvas);
  set_entry (window, "axis-n", "2048");
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "n")), ==, 2048);
  depth = napkin_history_get_depth (history);
  set_entry (window, "axis-n", "0");
  g_assert_nonnull (napkin_inspector_get_error (napkin_window_get_inspector (window)));
  g_assert_nonnull (strstr (napkin_inspector_get_error (napkin_window_get_inspector (window)), "axis size must be"));
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "n")), ==, 2048);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth);

  /* 4. Undo and redo through the actions. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "n")), ==, 4096);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  g_assert_cmpint (napkin_diagram_axis_size (diagram, napkin_diagram_find_axis (diagram, "n")), ==, 2048);

  /* 5. Save (Ctrl+S's action), then reload: the reloaded file equals the saved one. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.save", NULL));
  g_assert_false (napkin_history_get_modified (history));
  {
    g_autofree char *saved = NULL;
    g_autofree char *resaved = NULL;
    g_autoptr(GFile) again_file = g_file_new_for_path (again);
    g_autoptr(GError) error = NULL;
    NapkinWindow *reloaded = open_window (work);
    NapkinDiagram *d2 = diagram_of (reloaded);

    /* The same file is already open: the application would raise it, so this is a
     * second, independent load. */
    g_assert_cmpuint (napkin_diagram_n_nodes (d2), ==, n_nodes + 2);
    g_assert_cmpint (napkin_diagram_input_source (d2, napkin_diagram_find_node (d2, "map1"), 0), ==,
                     napkin_diagram_find_node (d2, "mm"));
    g_assert_true (napkin_window_save_to_file (reloaded, again_file, &error));
    g_assert_no_error (error);
    g_assert_true (g_file_get_contents (work, &saved, NULL, NULL));
    g_assert_true (g_file_get_contents (again, &resaved, NULL, NULL));
    g_assert_cmpstr (saved, ==, resaved);
    close_window (reloaded);
  }

  /* Delete through the action removes the map and its wire; undo restores both. */
  napkin_canvas_select_node (canvas, "map1", FALSE);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.delete", NULL));
  g_assert_cmpint (napkin_diagram_find_node (diagram, "map1"), <, 0);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  map = napkin_diagram_find_node (diagram, "map1");
  g_assert_cmpint (map, >=, 0);
  g_assert_cmpint (napkin_diagram_input_source (diagram, map, 0), ==, napkin_diagram_find_node (diagram, "mm"));

  /* Deleted then undone: back at the saved state, so nothing to save. */
  g_assert_false (napkin_history_get_modified (history));
  close_window (window);
}

/* The region tool draws a region around what a box encloses; a region resizes by
 * its handle and deletes with the selection; each is one undo step. */
static void
test_regions (void)
{
  g_autofree char *src = example_path ("flash-attention");
  NapkinWindow *window = open_window (src);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  NapkinDiagram *diagram = diagram_of (window);
  NapkinRect rs, before, after;
  const NapkinRegion *region;
  int r;

  /* Region tool at the register level around the softmax. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.region-tool", "s", "registers"));
  napkin_render_node_rect (diagram, napkin_diagram_find_node (diagram, "sm"), &rs);
  drag (canvas, rs.x - 8, rs.y - 24, rs.x + rs.width + 8, rs.y + rs.height + 8);
  r = napkin_diagram_find_region (diagram, "regs1");
  g_assert_cmpint (r, >=, 0);
  region = napkin_diagram_region (diagram, r);
  g_assert_cmpint (region->level, ==, NAPKIN_LEVEL_REGISTERS);
  g_assert_cmpuint (region->nodes->len, ==, 1);
  g_assert_cmpstr (g_ptr_array_index (region->nodes, 0), ==, "sm");
  g_assert_cmpint (napkin_render_node_level (diagram, napkin_diagram_find_node (diagram, "sm")), ==,
                   NAPKIN_LEVEL_REGISTERS);
  /* It nests inside the shared-memory region, which grew around it. */
  {
    NapkinRect outer, inner;

    napkin_render_region_rect (diagram, napkin_diagram_find_region (diagram, "block"), &outer);
    napkin_render_region_rect (diagram, r, &inner);
    g_assert_cmpfloat (inner.x, >, outer.x);
    g_assert_cmpfloat (inner.y, >, outer.y);
    g_assert_cmpfloat (inner.y + inner.height, <, outer.y + outer.height);
  }
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpint (napkin_diagram_find_region (diagram, "regs1"), <, 0);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  g_assert_cmpint (napkin_diagram_find_region (diagram, "regs1"), >=, 0);

  /* Leave the tool (Escape does the same) and resize "block" by its handle. */
  napkin_canvas_set_region_tool (canvas, FALSE, NAPKIN_LEVEL_SMEM);
  r = napkin_diagram_find_region (diagram, "block");
  napkin_render_region_rect (diagram, r, &before);
  g_assert_false (napkin_diagram_region (diagram, r)->has_rect);
  drag (canvas, before.x + before.width - 4, before.y + before.height - 4,
        before.x + before.width + 36, before.y + before.height + 26);
  g_assert_cmpstr (napkin_canvas_get_selected_region (canvas), ==, "block");
  region = napkin_diagram_region (diagram, napkin_diagram_find_region (diagram, "block"));
  g_assert_true (region->has_rect);
  napkin_render_region_rect (diagram, napkin_diagram_find_region (diagram, "block"), &after);
  g_assert_cmpfloat (fabs (after.width - (before.width + 40)), <=, 1);
  g_assert_cmpfloat (fabs (after.height - (before.height + 30)), <=, 1);
  g_assert_cmpfloat (after.x, ==, before.x);

  /* Dragging its title moves the operations and the hand-sized rectangle together. */
  {
    double qx = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "qk"))->x;

    drag (canvas, after.x + 20, after.y + 20, after.x + 70, after.y + 30);
    napkin_render_region_rect (diagram, napkin_diagram_find_region (diagram, "block"), &before);
    g_assert_cmpfloat (before.x, ==, after.x + 50);
    g_assert_cmpfloat (before.y, ==, after.y + 10);
    g_assert_cmpfloat (napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, "qk"))->x, ==, qx + 50);
  }

  /* Delete the selected region: its operations stay. */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.delete", NULL));
  g_assert_cmpint (napkin_diagram_find_region (diagram, "block"), <, 0);
  g_assert_cmpint (napkin_diagram_find_node (diagram, "qk"), >=, 0);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpint (napkin_diagram_find_region (diagram, "block"), >=, 0);

  napkin_history_set_saved (napkin_window_get_history (window));
  close_window (window);
}

/* Copy and paste go through the display's clipboard. */
static void
test_copy_paste (void)
{
  g_autofree char *src = example_path ("softmax");
  NapkinWindow *window = open_window (src);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  NapkinDiagram *diagram = diagram_of (window);
  guint n = napkin_diagram_n_nodes (diagram);

  napkin_canvas_select_node (canvas, "sm", FALSE);
  /* Arrow keys move the selection: 10 units, 1 with Shift, one undo step each. */
  {
    int sm = napkin_diagram_find_node (diagram, "sm");
    double x0 = napkin_diagram_node (diagram, sm)->x, y0 = napkin_diagram_node (diagram, sm)->y;

    g_assert_true (_napkin_canvas_key_pressed (canvas, GDK_KEY_Right, 0));
    g_assert_true (_napkin_canvas_key_pressed (canvas, GDK_KEY_Right, GDK_SHIFT_MASK));
    g_assert_true (_napkin_canvas_key_pressed (canvas, GDK_KEY_Up, 0));
    g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->x, ==, x0 + 11);
    g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->y, ==, y0 - 10);
    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
    g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->y, ==, y0);
    g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->x, ==, x0 + 11);
  }
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.copy", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.paste", NULL));
  for (guint i = 0; i < 100 && napkin_diagram_n_nodes (diagram) == n; i++)
    iterate (10);
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, n + 1);
  {
    g_auto(GStrv) selected = napkin_canvas_dup_selected_nodes (canvas);

    g_assert_nonnull (selected[0]);
    g_assert_cmpstr (selected[0], !=, "sm");
    g_assert_cmpint (napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, selected[0]))->kind, ==,
                     NAPKIN_OP_SOFTMAX);
  }
  napkin_history_set_saved (napkin_window_get_history (window));
  close_window (window);
}

/* exp on sfu | fma in the inspector: a softmax's fraction of exponentials on the FMA
 * units is set, undone, and refused outside [0, 1] with the reason inline. */
static void
test_exp_on_fma (void)
{
  g_autofree char *src = example_path ("flash-attention");
  NapkinWindow *window = open_window (src);
  NapkinDiagram *diagram = diagram_of (window);
  int sm = napkin_diagram_find_node (diagram, "sm");

  napkin_canvas_select_node (napkin_window_get_canvas (window), "sm", FALSE);
  set_entry (window, "field-exp-fma", "0.25");
  g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->exp_fma, ==, 0.25);
  set_entry (window, "field-exp-fma", "1.5");
  g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->exp_fma, ==, 0.25);
  g_assert_nonnull (napkin_inspector_get_error (napkin_window_get_inspector (window)));
  g_assert_nonnull (strstr (napkin_inspector_get_error (napkin_window_get_inspector (window)), "FMA"));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpfloat (napkin_diagram_node (diagram, sm)->exp_fma, ==, 0);
  napkin_history_set_saved (napkin_window_get_history (window));
  close_window (window);
}

/* The palette's Mask adds a causal mask over two distinct axes; undo takes it away. */
static void
test_add_mask (void)
{
  NapkinWindow *window = open_window (NULL);
  NapkinDiagram *diagram = diagram_of (window);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  guint n = napkin_diagram_n_nodes (diagram);
  g_auto(GStrv) selected = NULL;
  const NapkinNode *node;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "mask"));
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, n + 1);
  selected = napkin_canvas_dup_selected_nodes (canvas);
  node = napkin_diagram_node (diagram, napkin_diagram_find_node (diagram, selected[0]));
  g_assert_cmpint (node->kind, ==, NAPKIN_OP_MASK);
  g_assert_cmpint (node->mask, ==, NAPKIN_MASK_CAUSAL);
  g_assert_nonnull (node->rows);
  g_assert_nonnull (node->axis);
  g_assert_cmpstr (node->rows, !=, node->axis);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram), ==, n);
  napkin_history_set_saved (napkin_window_get_history (window));
  close_window (window);
}

static void
test_zoom_actions (void)
{
  NapkinWindow *window = open_window (NULL);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  double z = napkin_canvas_get_zoom (canvas);

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-in", NULL));
  g_assert_cmpfloat_with_epsilon (napkin_canvas_get_zoom (canvas), z * 1.25, 1e-9);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-out", NULL));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-out", NULL));
  g_assert_cmpfloat_with_epsilon (napkin_canvas_get_zoom (canvas), z / 1.25, 1e-9);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-reset", NULL));
  g_assert_cmpfloat (napkin_canvas_get_zoom (canvas), ==, 1.0);
  /* Ctrl+0 shows all of it, however small (the first view may have kept the
   * labels readable instead, docs/editor.md) */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "view.zoom-fit", NULL));
  g_assert_cmpfloat (napkin_canvas_get_zoom (canvas), <=, z + 1e-9);
  {
    NapkinRect b;
    double x0, y0, x1, y1;

    napkin_render_bounds (diagram_of (window), &b);
    _napkin_canvas_doc_to_widget (canvas, b.x, b.y, &x0, &y0);
    _napkin_canvas_doc_to_widget (canvas, b.x + b.width, b.y + b.height, &x1, &y1);
    g_assert_cmpfloat (x0, >=, -1);
    g_assert_cmpfloat (y0, >=, -1);
    g_assert_cmpfloat (x1, <=, gtk_widget_get_width (GTK_WIDGET (canvas)) + 1);
    g_assert_cmpfloat (y1, <=, gtk_widget_get_height (GTK_WIDGET (canvas)) + 1);
  }
  close_window (window);
}

/* A broken file: the core's error in the window's banner, the document untouched. */
/* File ▸ Import on a stored exporter graph: the action makes a new unsaved document
 * holding the imported block; a file outside the covered set shows its error. */
static void
test_import_action (void)
{
  g_autofree char *graph = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "import",
                                             "llama-block.graph.json", NULL);
  g_autofree char *bad = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "import",
                                           "unsupported.graph.json", NULL);
  g_autofree char *example = example_path ("mlp");
  NapkinWindow *window = open_window (example);
  GListModel *toplevels = gtk_window_get_toplevels ();
  NapkinWindow *shown = NULL;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.import-file", "s", graph));
  iterate (50);
  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) w = g_list_model_get_item (toplevels, i);

      if (NAPKIN_IS_WINDOW (w) && g_strcmp0 (napkin_diagram_get_title (diagram_of (NAPKIN_WINDOW (w))),
                                             "LlamaBlock") == 0)
        shown = NAPKIN_WINDOW (w);
    }
  g_assert_nonnull (shown);
  g_assert_true (shown != window);            /* this one holds a file */
  g_assert_null (napkin_window_get_file (shown));   /* imported: not saved anywhere yet */
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram_of (shown)), ==, 46);
  g_assert_cmpuint (napkin_diagram_n_axes (diagram_of (shown)), ==, 10);
  g_assert_cmpuint (napkin_diagram_n_tensors (diagram_of (shown)), ==, 14);
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram_of (window)), ==, 7);   /* untouched */
  close_window (shown);

  /* an operation outside the set: the banner names it, and no window opens */
  {
    guint before = g_list_model_get_n_items (toplevels);

    g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.import-file", "s", bad));
    iterate (20);
    g_assert_cmpuint (g_list_model_get_n_items (toplevels), ==, before);
    g_assert_nonnull (napkin_window_get_banner_text (window));
    g_assert_nonnull (strstr (napkin_window_get_banner_text (window), "line 68"));
    g_assert_nonnull (strstr (napkin_window_get_banner_text (window), "cumsum is outside the covered set"));
  }
  close_window (window);
}

static void
test_broken_file (void)
{
  g_autofree char *bad = g_build_filename (tmpdir, "broken.napkin", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (bad);
  g_autoptr(GError) expected = NULL;
  g_autoptr(GError) error = NULL;
  NapkinWindow *window = open_window (NULL);
  NapkinHistory *history = napkin_window_get_history (window);
  guint n = napkin_diagram_n_nodes (diagram_of (window));
  guint n_windows = g_list_length (gtk_application_get_windows (GTK_APPLICATION (app)));
  NapkinDiagram *probe;

  g_assert_true (g_file_set_contents (bad,
                                      "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"m\", \"size\": 0}]}",
                                      -1, NULL));
  probe = napkin_diagram_load_from_file (bad, NAPKIN_LOAD_DEFAULT, &expected);
  g_assert_null (probe);
  g_assert_nonnull (expected);

  g_assert_false (napkin_window_load_file (window, file, &error));
  g_assert_nonnull (napkin_window_get_banner_text (window));
  /* the core's words, and its JSON path on the details line */
  {
    g_autofree char *words = napkin_error_summary (expected->message);
    g_autofree char *json_path = napkin_error_path (expected->message);
    g_autofree char *details = g_strdup_printf ("JSON path: %s", json_path);

    g_assert_nonnull (strstr (napkin_window_get_banner_text (window), words));
    g_assert_cmpstr (napkin_window_get_banner_details (window), ==, details);
  }
  g_assert_true (napkin_window_get_history (window) == history);
  g_assert_cmpuint (napkin_diagram_n_nodes (diagram_of (window)), ==, n);

  /* Through the application (Open, a drop, the command line): no new window. */
  gtk_widget_activate_action (GTK_WIDGET (window), "win.dismiss-banner", NULL);
  g_assert_null (napkin_window_get_banner_text (window));
  napkin_history_begin_group (history, "touch");
  napkin_edit_set_axis_size (history, "q", 2048, NULL);
  napkin_history_end_group (history);
  g_assert_null (napkin_application_open_file (app, file, window));
  {
    g_autofree char *words = napkin_error_summary (expected->message);

    g_assert_nonnull (strstr (napkin_window_get_banner_text (window), words));
  }
  g_assert_cmpuint (g_list_length (gtk_application_get_windows (GTK_APPLICATION (app))), ==, n_windows);
  g_assert_cmpint (napkin_diagram_axis_size (diagram_of (window), napkin_diagram_find_axis (diagram_of (window), "q")),
                   ==, 2048);
  napkin_history_set_saved (history);
  close_window (window);
}

/* Closing with unsaved changes asks first. */
static void
test_close_asks (void)
{
  NapkinWindow *window = open_window (NULL);
  NapkinHistory *history = napkin_window_get_history (window);
  GListModel *toplevels = gtk_window_get_toplevels ();
  guint before;
  gboolean asked = FALSE;
  gpointer watch;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-node", "s", "reduce"));
  g_assert_true (napkin_history_get_modified (history));
  watch = window;
  g_object_add_weak_pointer (G_OBJECT (window), &watch);
  before = g_list_model_get_n_items (toplevels);
  gtk_window_close (GTK_WINDOW (window));
  for (guint i = 0; i < 500 && g_list_model_get_n_items (toplevels) == before; i++)
    iterate (10);
  /* Still open, with a dialog asking. */
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (window)));
  g_assert_cmpuint (g_list_model_get_n_items (toplevels), ==, before + 1);
  for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
    {
      g_autoptr(GtkWindow) w = g_list_model_get_item (toplevels, i);

      if (ADW_IS_MESSAGE_DIALOG (w))
        {
          asked = TRUE;
          adw_message_dialog_response (ADW_MESSAGE_DIALOG (w), "discard");
        }
    }
  g_assert_true (asked);
  /* Discarded: the window is gone (polled: slow under sanitizers). */
  for (guint i = 0; i < 500 && watch != NULL; i++)
    iterate (10);
  g_assert_null (watch);
}

/* The shortcuts window and the about window build from their resources without
 * a warning (warnings are fatal here), and every accelerator they list exists. */
static void
test_help_and_about (void)
{
  NapkinWindow *window = open_window (NULL);
  GtkWindow *overlay;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.show-help-overlay", NULL));
  iterate (50);
  overlay = GTK_WINDOW (gtk_application_window_get_help_overlay (GTK_APPLICATION_WINDOW (window)));
  g_assert_nonnull (overlay);
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (overlay)));
  gtk_window_close (overlay);
  g_action_group_activate_action (G_ACTION_GROUP (app), "about", NULL);
  iterate (50);
  {
    GListModel *toplevels = gtk_window_get_toplevels ();
    gboolean found = FALSE;

    for (guint i = 0; i < g_list_model_get_n_items (toplevels); i++)
      {
        g_autoptr(GtkWindow) w = g_list_model_get_item (toplevels, i);

        if (ADW_IS_ABOUT_WINDOW (w))
          {
            found = TRUE;
            g_assert_cmpstr (adw_about_window_get_version (ADW_ABOUT_WINDOW (w)), ==, PACKAGE_VERSION);
            gtk_window_destroy (w);
          }
      }
    g_assert_true (found);
  }
  close_window (window);
}

/* The shipped French catalogue translates the window. */
static void
test_french (void)
{
  g_autofree char *po = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "po", NULL);
  const char *old = g_getenv ("LANGUAGE");
  NapkinWindow *window;
  g_autoptr(NapkinDiagram) blank = napkin_diagram_new ();

  bindtextdomain (GETTEXT_PACKAGE, po);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  g_setenv ("LANGUAGE", "fr", TRUE);
  /* gettext ignores LANGUAGE in the "C" locale; C.UTF-8 is always there. */
  g_assert_nonnull (setlocale (LC_MESSAGES, "C.UTF-8"));
  g_assert_cmpstr (_("Untitled Diagram"), ==, "Diagramme sans titre");
  window = open_window (NULL);
  napkin_window_set_document (window, blank, NULL);
  g_assert_nonnull (strstr (gtk_window_get_title (GTK_WINDOW (window)), "Diagramme sans titre"));
  close_window (window);
  if (old)
    g_setenv ("LANGUAGE", old, TRUE);
  else
    g_unsetenv ("LANGUAGE");
  setlocale (LC_MESSAGES, "");
}

/* While the other process runs, this one only sends input and waits: it does not
 * dispatch its own X events, which the other's drag and drop sends to every window
 * (GTK 4.8 leaks a list node handling them, seen under LeakSanitizer). */
static void
wait_ms (guint ms)
{
  g_usleep (ms * 1000);
}

/* The child's wait status once it has exited, else -1. */
static int
child_status (GPid pid)
{
  int status;

  if (waitpid (pid, &status, WNOHANG) != pid)
    return -1;
  g_spawn_close_pid (pid);
  return WIFEXITED (status) ? WEXITSTATUS (status) : 128 + WTERMSIG (status);
}

/* Sends Ctrl+S to the focused app and waits (up to 10 s) until the file on disk holds
 * more than `known` operations; returns how many it holds. */
static int
save_and_count (const char *path,
                int         known)
{
  int n = known;

  g_free (xdotool_output ("key", "ctrl+s", NULL));
  for (guint i = 0; i < 100 && n <= known; i++)
    {
      g_autoptr(NapkinDiagram) diagram = NULL;

      wait_ms (100);
      diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, NULL);
      if (diagram != NULL)
        n = napkin_diagram_n_nodes (diagram);
    }
  return n;
}

/* Real input through the X server: a click on the palette's Map button, a drag of
 * Softmax from the palette onto the canvas, Ctrl+S, Ctrl+Q, sent with xdotool
 * (XTEST) to a separate napkin process. */
static void
test_x11_input (void)
{
  g_autofree char *xdotool_path = g_find_program_in_path ("xdotool");
  g_autofree char *src = example_path ("matmul");
  g_autofree char *path = g_build_filename (tmpdir, "x11.napkin", NULL);
  g_autofree char *contents = NULL;
  g_autofree char *wid = NULL;
  g_autoptr(NapkinDiagram) saved = NULL;
  g_autoptr(GError) error = NULL;
  NapkinWindow *probe;
  GtkWidget *button;
  graphene_point_t p;
  double sx, sy;
  char x[32], y[32], drag_x[32], drag_y[32];
  double drop_x, drop_y;
  int exit_status = -1;
  GPid pid;
  int map = -1;
  int n_before_drag = 4, n_after_drag = 4;

  if (xdotool_path == NULL)
    {
      g_test_skip ("xdotool is not installed (Debian package xdotool): real X input is not tested");
      return;
    }
  g_assert_true (g_file_get_contents (src, &contents, NULL, NULL));
  g_assert_true (g_file_set_contents (path, contents, -1, NULL));

  /* Where the Map button is: the same window, laid out in this process. */
  probe = open_window (path);
  gtk_window_set_default_size (GTK_WINDOW (probe), 1280, 820);
  iterate (100);
  button = find_named (GTK_WIDGET (probe), "palette-map");
  g_assert_nonnull (button);
  g_assert_true (gtk_widget_compute_point (button, GTK_WIDGET (probe),
                                           &GRAPHENE_POINT_INIT (gtk_widget_get_width (button) / 2.0,
                                                                 gtk_widget_get_height (button) / 2.0), &p));
  gtk_native_get_surface_transform (GTK_NATIVE (probe), &sx, &sy);
  g_snprintf (x, sizeof x, "%d", (int) (p.x + sx));
  g_snprintf (y, sizeof y, "%d", (int) (p.y + sy));
  /* The Softmax button, and a point on empty canvas to drop it on. */
  button = find_named (GTK_WIDGET (probe), "palette-softmax");
  g_assert_true (gtk_widget_compute_point (button, GTK_WIDGET (probe),
                                           &GRAPHENE_POINT_INIT (gtk_widget_get_width (button) / 2.0,
                                                                 gtk_widget_get_height (button) / 2.0), &p));
  g_snprintf (drag_x, sizeof drag_x, "%d", (int) (p.x + sx));
  g_snprintf (drag_y, sizeof drag_y, "%d", (int) (p.y + sy));
  /* Near the canvas's top-left corner: the same place in the other process's
   * window whatever room the other panes leave the canvas there. */
  g_assert_true (gtk_widget_compute_point (GTK_WIDGET (napkin_window_get_canvas (probe)), GTK_WIDGET (probe),
                                           &GRAPHENE_POINT_INIT (200, 120), &p));
  drop_x = p.x + sx;
  drop_y = p.y + sy;
  close_window (probe);

  pid = spawn_napkin (g_get_environ (), path);
  wid = wait_window ("x11.napkin");
  wait_ms (500);

  /* The app may still be laying out its first frame (a sanitizer build is slow to
   * answer), and a click it does not see yet is lost: click, save with Ctrl+S, and
   * read the file to see the click's effect, trying again until it shows. */
  for (guint attempt = 0; attempt < 10 && n_before_drag <= 4; attempt++)
    {
      g_free (xdotool_output ("windowfocus", "--sync", wid, NULL));
      g_free (xdotool_output ("mousemove", "--window", wid, x, y, "click", "1", NULL));
      wait_ms (1000);
      n_before_drag = save_and_count (path, 4);
    }
  g_assert_cmpint (n_before_drag, >, 4);

  /* A real drag and drop from the palette onto the canvas, with generous pauses:
   * the drag starts only once the app has seen the motion past the threshold. */
  for (guint attempt = 0; attempt < 3 && n_after_drag <= n_before_drag; attempt++)
    {
      g_free (xdotool_output ("mousemove", "--window", wid, drag_x, drag_y, "mousedown", "1", NULL));
      wait_ms (500);
      for (guint i = 1; i <= 8; i++)
        {
          char mx[32], my[32];

          g_snprintf (mx, sizeof mx, "%d", (int) (atoi (drag_x) + (drop_x - atoi (drag_x)) * i / 8));
          g_snprintf (my, sizeof my, "%d", (int) (atoi (drag_y) + (drop_y - atoi (drag_y)) * i / 8));
          g_free (xdotool_output ("mousemove", "--window", wid, mx, my, NULL));
          wait_ms (150);
        }
      wait_ms (1000);
      g_free (xdotool_output ("mouseup", "1", NULL));
      wait_ms (300);
      n_after_drag = save_and_count (path, n_before_drag);
    }
  g_free (xdotool_output ("key", "ctrl+q", NULL));
  for (guint i = 0; i < 600 && (exit_status = child_status (pid)) == -1; i++)
    wait_ms (100);
  /* Saved, so Quit asked nothing and the process ended cleanly. */
  g_assert_cmpint (exit_status, ==, 0);

  saved = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_no_error (error);
  /* One Map from the click, one Softmax from the drag. */
  g_assert_cmpint (napkin_diagram_n_nodes (saved), ==, n_before_drag + 1);
  g_assert_cmpint (n_before_drag, ==, 5);
  for (guint n = 0; n < napkin_diagram_n_nodes (saved); n++)
    if (napkin_diagram_node (saved, n)->kind == NAPKIN_OP_MAP)
      map = n;
  g_assert_cmpint (map, >=, 0);
  g_assert_cmpint (napkin_diagram_find_node (saved, "softmax1"), >=, 0);
}

/* napkin --screenshot: the real executable draws its window once. */
static GdkTexture *
screenshot (const char *file)
{
  g_autofree char *out = g_build_filename (tmpdir, file ? "shot-file.png" : "shot.png", NULL);
  g_autofree char *exe = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "src", "app", "napkin", NULL);
  const char *argv[] = { exe, "--screenshot", out, file, NULL };
  g_autoptr(GError) error = NULL;
  g_autofree char *err = NULL;
  int status;
  GdkTexture *texture;

  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                               &status, &error));
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, &error))
    g_error ("napkin --screenshot failed: %s\n%s", error->message, err);
  texture = gdk_texture_new_from_filename (out, &error);
  g_assert_no_error (error);
  return texture;
}

static void
check_screenshot (GdkTexture *texture,
                  NapkinLevel level)
{
  int w = gdk_texture_get_width (texture), h = gdk_texture_get_height (texture);
  g_autofree guint8 *pixels = g_malloc ((gsize) w * h * 4);
  g_autoptr(GHashTable) colours = g_hash_table_new (NULL, NULL);

  g_assert_cmpint (w, >=, 800);
  g_assert_cmpint (h, >=, 600);
  gdk_texture_download (texture, pixels, w * 4);
  for (int i = 0; i < w * h; i += 7)
    g_hash_table_add (colours, GUINT_TO_POINTER (((guint32 *) pixels)[i] & 0xffffff));
  /* Not blank: text, glyphs, strands and widgets give many colours. */
  g_assert_cmpuint (g_hash_table_size (colours), >, 200);
  /* Present, with room for how much of the window the canvas gets beside the
   * other panes. */
  g_assert_cmpuint (napkin_app_test_count_near (pixels, w, h, napkin_render_level_hex (NAPKIN_LEVEL_HBM), 20), >, 200);
  g_assert_cmpuint (napkin_app_test_count_near (pixels, w, h, napkin_render_level_hex (level), 20), >, 50);
  g_assert_cmpuint (napkin_app_test_count_near (pixels, w, h, napkin_render_tensor_core_hex (), 20), >, 20);
}

static void
test_screenshot (void)
{
  g_autoptr(GdkTexture) shot = screenshot (NULL);
  g_autofree char *nested = example_path ("matmul-nested");
  g_autoptr(GdkTexture) shot_file = screenshot (nested);

  check_screenshot (shot, NAPKIN_LEVEL_SMEM);
  check_screenshot (shot_file, NAPKIN_LEVEL_REGISTERS);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-app-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (G_APPLICATION_HANDLES_OPEN);

  g_test_add_func ("/app/open/every-example", test_open_every_example);
  g_test_add_func ("/app/open/default-is-flash-attention", test_default_is_flash_attention);
  g_test_add_func ("/app/inspector/exp-on-fma", test_exp_on_fma);
  g_test_add_func ("/app/open/broken-file", test_broken_file);
  g_test_add_func ("/app/import/graph", test_import_action);
  g_test_add_func ("/app/edit/add-connect-relabel-undo-save-reload", test_edit_save_reload);
  g_test_add_func ("/app/edit/copy-paste", test_copy_paste);
  g_test_add_func ("/app/edit/regions", test_regions);
  g_test_add_func ("/app/edit/add-mask", test_add_mask);
  g_test_add_func ("/app/view/zoom", test_zoom_actions);
  g_test_add_func ("/app/window/close-asks", test_close_asks);
  g_test_add_func ("/app/window/help-and-about", test_help_and_about);
  g_test_add_func ("/app/i18n/french", test_french);
  g_test_add_func ("/app/screenshot", test_screenshot);
  g_test_add_func ("/app/x11/palette-click-drag-save-quit", test_x11_input);
  return napkin_app_test_run (app, tmpdir);
}
