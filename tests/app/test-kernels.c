/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The analysis pane's Kernels section (docs/analysis-pane.md, "Kernels") and the
 * editor's rough edges (docs/editor.md), through real X input where a user clicks
 * and types (xdotool, napkin-app-xdo.h). G_DEBUG=fatal-warnings makes any
 * Gtk-CRITICAL fail the test. With NAPKIN_SCREENSHOT_DIR=DIR the Kernels section of
 * the imported causal attention is saved before and after its fix as
 * editor-kernels-before.png and editor-kernels-after.png. */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>

#include "napkin-analysis-pane.h"
#include "napkin-app-test.h"
#include "napkin-app-xdo.h"
#include "napkin-canvas.h"
#include "napkin-canvas-private.h"
#include "napkin-render.h"
#include "napkin-code-view.h"
#include "napkin-kernel-list.h"
#include "napkin-tile-suggestions.h"
#include "napkin-file.h"
#include "napkin-tune.h"

static NapkinApplication *app;
static char *tmpdir;


static NapkinWindow *
new_window (void)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));

  napkin_window_load_default (window);
  napkin_app_test_present (window, 1600, 1000);
  return window;
}

static int
row_named (NapkinKernelList *list,
           const char       *name)
{
  for (guint i = 0; i < napkin_kernel_list_get_n_rows (list); i++)
    if (g_str_equal (napkin_kernel_list_get_row (list, i)->name, name))
      return (int) i;
  return -1;
}

/* The pane's current numbers (its own update, then the fix search's end). */
static void
settle_pane (NapkinWindow *window)
{
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinKernelList *list = napkin_analysis_pane_get_kernel_list (pane);

  napkin_analysis_pane_flush (pane);
  iterate (50);
  WAIT_FOR (!napkin_kernel_list_is_searching (list));
  iterate (50);
}

static void
save_section (NapkinWindow *window,
              const char   *name)
{
  GtkWidget *pane = GTK_WIDGET (pane_of (window));
  g_autoptr(GdkTexture) shot = NULL;
  g_autofree char *path = NULL;

  if (g_getenv ("NAPKIN_SCREENSHOT_DIR") == NULL)
    return;
  shot = shoot (pane);
  path = g_build_filename (g_getenv ("NAPKIN_SCREENSHOT_DIR"), name, NULL);
  g_assert_true (gdk_texture_save_to_png (shot, path));
}

/* The imported causal attention names its generic kernels and why; a click on a row
 * selects its operations and shows its code; the fix button makes it one attention
 * kernel in one undo step. */
static void
test_causal_import (void)
{
  /* causal attention as einsum text, as a user imports it: no regions */
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "data",
                                            "causal-attention.einsum", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  NapkinWindow *window = new_window ();
  NapkinKernelList *list = napkin_analysis_pane_get_kernel_list (pane_of (window));
  NapkinCodeView *code = NAPKIN_CODE_VIEW (napkin_window_get_code_view (window));
  Xdo x = { 0 };
  const NapkinKernelRow *row;
  g_auto(GStrv) selected = NULL;
  GtkWidget *fix;
  int u, s;

  g_assert_true (napkin_window_import_file (window, file, &error));
  g_assert_no_error (error);
  settle_pane (window);
  /* an imported diagram is first seen whole */
  {
    NapkinCanvas *canvas = napkin_window_get_canvas (window);
    NapkinRect bounds;
    double x0, y0, x1, y1;

    napkin_render_bounds (diagram_of (window), &bounds);
    _napkin_canvas_doc_to_widget (canvas, bounds.x, bounds.y, &x0, &y0);
    _napkin_canvas_doc_to_widget (canvas, bounds.x + bounds.width, bounds.y + bounds.height, &x1, &y1);
    g_assert_cmpfloat (x0, >=, 0);
    g_assert_cmpfloat (y0, >=, 0);
    g_assert_cmpfloat (x1, <=, gtk_widget_get_width (GTK_WIDGET (canvas)));
    g_assert_cmpfloat (y1, <=, gtk_widget_get_height (GTK_WIDGET (canvas)));
  }
  /* with no region the plan runs it as one attention kernel (docs/plan.md, "The pipeline") */
  g_assert_cmpuint (napkin_kernel_list_get_n_rows (list), ==, 1);
  g_assert_cmpint (napkin_kernel_list_get_row (list, 0)->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (napkin_kernel_list_get_row (list, 0)->path, !=, NAPKIN_PATH_GENERIC);
  /* relabeled as the first Suggest Tiles proposed it, a region around each product: the
   * mask (in the scale's element-wise kernel) and the softmax between them run apart */
  {
    g_autofree char *drawn = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "data",
                                               "causal-attention-two-products.napkin", NULL);
    g_autoptr(GFile) two = g_file_new_for_path (drawn);

    g_assert_true (napkin_window_load_file (window, two, &error));
    g_assert_no_error (error);
    settle_pane (window);
  }
  /* Q·Kᵀ on wgmma after copies of Q and K with their batch axes leading (two repack rows
   * named after its region); P·V, whose result's batch does not lead, generic */
  g_assert_cmpuint (napkin_kernel_list_get_n_rows (list), ==, 6);
  g_assert_cmpint (row_named (list, "u"), <, 0);
  u = row_named (list, "block2");
  g_assert_cmpint (u, >=, 0);
  row = napkin_kernel_list_get_row (list, u);
  g_assert_cmpint (row->path, ==, NAPKIN_PATH_GENERIC);
  g_assert_nonnull (strstr (row->reason, "lead every operand"));
  g_assert_nonnull (napkin_kernel_list_get_row_widget (list, u));
  g_assert_nonnull (napkin_kernel_list_get_fix (list, u));
  save_section (window, "editor-kernels-before.png");
  if (!xdo_begin (&x, window))
    return;

  /* a click on the first kernel's row (the region around Q·Kᵀ): its operations, its code */
  /* the region's product (its copies share the region's name) */
  s = -1;
  for (guint i = 0; i < napkin_kernel_list_get_n_rows (list) && s < 0; i++)
    if (g_str_equal (napkin_kernel_list_get_row (list, i)->name, "block")
        && napkin_kernel_list_get_row (list, i)->kind == NAPKIN_PLAN_GEMM)
      s = (int) i;
  g_assert_cmpint (s, >=, 0);
  g_assert_cmpint (napkin_kernel_list_get_row (list, s)->path, ==, NAPKIN_PATH_WGMMA);
  click_widget (&x, napkin_kernel_list_get_row_widget (list, s));
  selected = napkin_canvas_dup_selected_nodes (napkin_window_get_canvas (window));
  g_assert_nonnull (selected);
  g_assert_true (g_strv_contains ((const char *const *) selected, "s"));
  g_assert_false (g_strv_contains ((const char *const *) selected, "p"));
  WAIT_FOR (napkin_code_view_is_settled (code));
  iterate (300);
  {
    g_autofree char *line = napkin_code_view_dup_first_visible_line (code);

    g_assert_nonnull (line);
    /* the row's own kernel, the product, with the comment above it; not the region's
     * first kernel (its operand copy, a row of its own) */
    g_assert_nonnull (strstr (line, "Plan kernel block: GEMM on wgmma"));
  }
  /* and a copy's row opens the copy */
  {
    int r = -1;

    for (guint i = 0; i < napkin_kernel_list_get_n_rows (list) && r < 0; i++)
      if (g_str_equal (napkin_kernel_list_get_row (list, i)->name, "block")
          && napkin_kernel_list_get_row (list, i)->kind == NAPKIN_PLAN_REPACK)
        r = (int) i;
    g_assert_cmpint (r, >=, 0);
    napkin_kernel_list_activate (list, (guint) r);   /* the copies' rows may be folded away */
    WAIT_FOR (napkin_code_view_is_settled (code));
    iterate (300);
    {
      g_autofree char *line = napkin_code_view_dup_first_visible_line (code);

      g_assert_nonnull (line);
      /* the copy is the module's first kernel: its comment, or the module's header
       * comment just above it */
      g_assert_true (strstr (line, "Plan kernel block: repack") || strstr (line, "Generated by Napkin"));
    }
  }

  /* the fix, as the user clicks it */
  fix = napkin_kernel_list_get_fix_button (list, u);
  g_assert_nonnull (fix);
  /* the row may be below the pane's fold: the user scrolls to it (focus brings it in view) */
  gtk_widget_grab_focus (fix);
  iterate (200);
  click_widget (&x, fix);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 1);
  settle_pane (window);
  g_assert_cmpuint (napkin_kernel_list_get_n_rows (list), ==, 1);
  row = napkin_kernel_list_get_row (list, 0);
  g_assert_cmpint (row->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (row->path, !=, NAPKIN_PATH_GENERIC);
  g_assert_cmpfloat (row->share, ==, 1.0);
  /* the fix button had the focus, which scrolled the pane: from its top for the picture */
  napkin_analysis_pane_set_scroll (pane_of (window), 0);
  iterate (100);
  save_section (window, "editor-kernels-after.png");

  /* one undo step gives the diagram back as drawn */
  key (&x, "ctrl+z");
  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 2);
  xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* New Diagram shows no number of the previous document, and the pane is at its top. */
static void
test_new_diagram_clears (void)
{
  NapkinWindow *window = new_window ();
  NapkinAnalysisPane *pane = pane_of (window);

  settle_pane (window);
  g_assert_nonnull (napkin_analysis_pane_get_text (pane, "time.predicted"));
  napkin_analysis_pane_set_scroll (pane, 300);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.new", NULL));
  settle_pane (window);
  g_assert_null (napkin_analysis_pane_get_text (pane, "time.predicted"));
  g_assert_null (napkin_analysis_pane_get_analysis (pane));
  g_assert_nonnull (napkin_analysis_pane_get_error_text (pane));
  g_assert_cmpuint (napkin_kernel_list_get_n_rows (napkin_analysis_pane_get_kernel_list (pane)), ==, 0);
  g_assert_cmpfloat (napkin_analysis_pane_get_scroll (pane), ==, 0);
  close_window (window);
}

/* A softmax drawn from an empty document works over its input's last axis. */
static void
test_softmax_last_axis (void)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autoptr(NapkinDiagram) blank = napkin_diagram_new ();
  NapkinDiagram *d;
  Xdo x = { 0 };
  int sm = -1;

  napkin_window_set_document (window, blank, NULL);
  napkin_app_test_present (window, 1400, 900);
  d = diagram_of (window);
  if (!xdo_begin (&x, window))
    {
      close_window (window);
      return;
    }
  click_widget (&x, find_named (GTK_WIDGET (window), "palette-input"));
  WAIT_FOR (napkin_diagram_n_nodes (d) == 1);
  napkin_app_test_inspector_field (window, "field-tensor-axes", 1000);
  type_text (&x, "X");
  key (&x, "Tab");
  type_text (&x, "r=64, c=1024");
  key (&x, "Return");
  WAIT_FOR (napkin_diagram_find_axis (d, "c") >= 0);
  /* the input is selected: a softmax from the palette comes wired from it */
  click_widget (&x, find_named (GTK_WIDGET (window), "palette-softmax"));
  WAIT_FOR (napkin_diagram_n_nodes (d) == 2);
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    if (napkin_diagram_node (d, n)->kind == NAPKIN_OP_SOFTMAX)
      sm = (int) n;
  g_assert_cmpint (sm, >=, 0);
  g_assert_cmpint (napkin_diagram_input_source (d, sm, 0), >=, 0);
  g_assert_cmpstr (napkin_diagram_node (d, sm)->axis, ==, "c");
  xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* The attention scale is 1/sqrt(d): typing another d in the inspector changes it in
 * the model and the code. */
static void
test_scale_follows_d (void)
{
  NapkinWindow *window = open_example_sized (app, "attention", 1400, 900);
  NapkinDiagram *d = diagram_of (window);
  NapkinCodeView *code = NAPKIN_CODE_VIEW (napkin_window_get_code_view (window));
  const NapkinNode *scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_autofree char *text = NULL;
  GtkWidget *field;
  Xdo x = { 0 };

  g_assert_cmpstr (scale->alpha_expr, ==, "1/sqrt(d)");
  g_assert_cmpfloat (fabs (scale->alpha - 1 / sqrt (128.0)), <, 1e-12);
  if (!xdo_begin (&x, window))
    {
      close_window (window);
      return;
    }
  field = napkin_app_test_inspector_field (window, "axis-d", 1000);
  click_widget (&x, field);
  key (&x, "ctrl+a");
  type_text (&x, "64");
  key (&x, "Return");
  WAIT_FOR (napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, "d")) == 64);
  scale = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"));
  g_assert_cmpfloat (scale->alpha, ==, 0.125);
  napkin_code_view_set_kind (code, NAPKIN_CODE_PSEUDO);
  WAIT_FOR (napkin_code_view_get_generation (code) == napkin_diagram_get_generation (d));
  text = napkin_code_view_dup_text (code);
  g_assert_nonnull (strstr (text, "(1/sqrt(d) = 0.125)"));
  /* the inspector takes an expression for the factor, and says its value */
  napkin_canvas_select_node (napkin_window_get_canvas (window), "scale", FALSE);
  napkin_app_test_inspector_field (window, "field-alpha", 1000);
  iterate (500);
  field = napkin_app_test_inspector_field (window, "field-alpha", 1000);
  g_assert_cmpstr (gtk_editable_get_text (GTK_EDITABLE (field)), ==, "1/sqrt(d)");
  click_widget (&x, field);
  key (&x, "ctrl+a");
  type_text (&x, "2/sqrt(d)");
  key (&x, "Return");
  WAIT_FOR (g_strcmp0 (napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"))->alpha_expr, "2/sqrt(d)") == 0);
  g_assert_cmpstr (napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"))->alpha_expr, ==, "2/sqrt(d)");
  g_assert_cmpfloat (napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"))->alpha, ==, 0.25);
  xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

static gboolean
menu_has_target (GMenuModel *model,
                 const char *target)
{
  for (int i = 0; i < g_menu_model_get_n_items (model); i++)
    {
      g_autoptr(GVariant) t = g_menu_model_get_item_attribute_value (model, i, G_MENU_ATTRIBUTE_TARGET, NULL);
      g_autoptr(GMenuModel) section = g_menu_model_get_item_link (model, i, G_MENU_LINK_SECTION);

      if (t != NULL && g_variant_is_of_type (t, G_VARIANT_TYPE_STRING) && g_str_equal (g_variant_get_string (t, NULL), target))
        return TRUE;
      if (section != NULL && menu_has_target (section, target))
        return TRUE;
    }
  return FALSE;
}

/* Does a menu button below `widget` whose menu adds a rearrangement also offer `target`? */
static gboolean
add_menu_has (GtkWidget  *widget,
              const char *target)
{
  if (GTK_IS_MENU_BUTTON (widget))
    {
      GMenuModel *model = gtk_menu_button_get_menu_model (GTK_MENU_BUTTON (widget));

      if (model != NULL && menu_has_target (model, "rearrange"))
        return menu_has_target (model, target);
    }
  for (GtkWidget *c = gtk_widget_get_first_child (widget); c; c = gtk_widget_get_next_sibling (c))
    if (add_menu_has (c, target))
      return TRUE;
  return FALSE;
}

/* The "+" menu offers every operation of the palette, Mask included; the exports start
 * beside the document with one name; Help's fallback shows the guide. */
static void
test_menus_and_exports (void)
{
  NapkinWindow *window = open_example_sized (app, "matmul", 1400, 900);
  NapkinCodeView *code = NAPKIN_CODE_VIEW (napkin_window_get_code_view (window));
  g_autofree char *name = napkin_code_view_dup_export_name (code, ".cu");
  g_autoptr(GFile) folder = napkin_window_dup_start_folder (window);
  g_autofree char *guide = napkin_window_dup_doc_path ("editor");
  GtkWindow *shown;
  GtkWidget *text;

  g_assert_true (add_menu_has (GTK_WIDGET (window), "rearrange"));
  g_assert_true (add_menu_has (GTK_WIDGET (window), "mask"));
  g_assert_cmpstr (name, ==, "matmul.cu");
  g_assert_true (g_file_equal (napkin_code_view_get_export_folder (code), folder));
  g_assert_nonnull (guide);
  shown = napkin_window_show_guide (window, guide);
  g_assert_nonnull (shown);
  text = find_named (GTK_WIDGET (shown), "guide-text");
  g_assert_nonnull (text);
  {
    GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (text));
    GtkTextIter start, end;
    g_autofree char *content = NULL;

    gtk_text_buffer_get_bounds (buffer, &start, &end);
    content = gtk_text_buffer_get_text (buffer, &start, &end, FALSE);
    g_assert_true (g_str_has_prefix (content, "# The editor"));
  }
  gtk_window_destroy (shown);

  /* a profile of the user's that hides a bundled one is named in the pane */
  {
    NapkinArch *h100 = napkin_analysis_pane_get_arch (pane_of (window));
    g_autoptr(NapkinArch) mine = napkin_arch_copy (h100, "h100", NULL);
    GtkWidget *origin = find_named (GTK_WIDGET (pane_of (window)), "analysis-arch-origin");

    mine->path = g_build_filename (g_get_user_data_dir (), "napkin", "archs", "h100.json", NULL);
    mine->shadows = g_strdup (h100->path);
    g_assert_nonnull (origin);
    g_assert_false (gtk_widget_get_visible (origin));
    napkin_analysis_pane_set_arch (pane_of (window), mine);
    g_assert_true (gtk_widget_get_visible (origin));
    g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (origin)), "your profile"));
    g_assert_nonnull (strstr (gtk_label_get_text (GTK_LABEL (origin)), h100->path));
    napkin_analysis_pane_set_arch (pane_of (window), h100);
    g_assert_false (gtk_widget_get_visible (origin));
  }
  close_window (window);
}

/* A point of an open popover, as fractions of its size, in the window's X coordinates
 * (the popover is a surface of its own). */
static void
popover_point (Xdo        *x,
               GtkPopover *popover,
               double      fx,
               double      fy,
               char        out_x[32],
               char        out_y[32])
{
  GdkSurface *surface = gtk_native_get_surface (GTK_NATIVE (popover));
  double wx, wy, px, py;

  g_assert_true (GDK_IS_POPUP (surface));
  gtk_native_get_surface_transform (GTK_NATIVE (x->window), &wx, &wy);
  gtk_native_get_surface_transform (GTK_NATIVE (popover), &px, &py);
  g_snprintf (out_x, 32, "%d", (int) round (gdk_popup_get_position_x (GDK_POPUP (surface)) + px
                                            + fx * gtk_widget_get_width (GTK_WIDGET (popover)) + x->sx - wx));
  g_snprintf (out_y, 32, "%d", (int) round (gdk_popup_get_position_y (GDK_POPUP (surface)) + py
                                            + fy * gtk_widget_get_height (GTK_WIDGET (popover)) + x->sy - wy));
}

/* Suggest Tiles, searched twice with the pointer over its rows, then closed by a click
 * elsewhere; then four windows quit together: no Gtk-CRITICAL (fatal here). */
static void
test_suggest_and_quit (void)
{
  NapkinWindow *windows[4];
  Xdo x = { 0 };

  for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
    windows[i] = new_window ();
  if (!xdo_begin (&x, windows[3]))
    {
      for (guint i = 0; i < G_N_ELEMENTS (windows); i++)
        napkin_window_close_without_asking (windows[i]);
      return;
    }
  for (guint round = 0; round < 2; round++)
    {
      GtkWidget *button = find_named (GTK_WIDGET (windows[3]), "suggest-tiles-button");
      GtkWidget *code = napkin_window_get_code_view (windows[3]);
      NapkinTileSuggestions *suggestions = NULL;
      char px[32], py[32];

      g_assert_nonnull (button);
      suggestions = NAPKIN_TILE_SUGGESTIONS (gtk_menu_button_get_popover (GTK_MENU_BUTTON (button)));
      click_widget (&x, button);
      WAIT_FOR (!napkin_tile_suggestions_is_searching (suggestions) && napkin_tile_suggestions_get_n_items (suggestions) > 0);
      /* the pointer over the list's rows, as a user reading them, long enough for
       * their tooltips */
      for (guint step = 0; step < 3; step++)
        {
          popover_point (&x, GTK_POPOVER (suggestions), 0.5, 0.3 + 0.1 * step, px, py);
          xdotool ("mousemove", "--window", x.wid, px, py, NULL);
          iterate (700);
        }
      click_widget (&x, code);
      iterate (300);
    }
  g_assert_true (g_action_group_has_action (G_ACTION_GROUP (app), "quit"));
  g_action_group_activate_action (G_ACTION_GROUP (app), "quit", NULL);
  for (guint i = 0; i < 300 && gtk_application_get_windows (GTK_APPLICATION (app)) != NULL; i++)
    iterate (10);
  g_assert_null (gtk_application_get_windows (GTK_APPLICATION (app)));
  xdotool ("mousemove", "0", "0", NULL);
  /* the searches and analyses the closed windows started finish before the process
   * lets the application go */
  iterate (500);
}

/* A region made with Ctrl+R around every operation of attention (the inputs and
 * outputs left out) shows its title and marks: nothing of it above the canvas's top. */
static void
test_new_region_in_view (void)
{
  NapkinWindow *window = open_example_sized (app, "attention", 1400, 900);
  NapkinCanvas *canvas = napkin_window_get_canvas (window);
  NapkinDiagram *d = diagram_of (window);
  NapkinRect rect;
  double cx, cy;

  napkin_canvas_select_all (canvas);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "edit.add-region", "s", "smem"));
  iterate (200);
  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 1);
  napkin_render_region_rect (d, 0, &rect);
  /* the marks straddle the top edge by 8 units, the title sits under it */
  _napkin_canvas_doc_to_widget (canvas, rect.x, rect.y - 9, &cx, &cy);
  g_assert_cmpfloat (cy, >=, 0);
  g_assert_cmpfloat (cx, >=, 0);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* Ctrl+A, Ctrl+R on attention, as a user types them: the region takes the plan's own
 * kernel for those operations (queries by 128, keys streamed by 128 in 3 stages), not
 * the keys whole (a block of 138 MB); the pane has numbers, no error. */
static void
test_ctrl_r_plan_tiles (void)
{
  NapkinWindow *window = open_example_sized (app, "attention", 1400, 900);
  NapkinDiagram *d = diagram_of (window);
  NapkinAnalysisPane *pane = pane_of (window);
  const NapkinAnalysis *a;
  const NapkinRegion *region;
  gint64 tile = 0;
  Xdo x = { 0 };

  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 0);
  if (!xdo_begin (&x, window))
    {
      close_window (window);
      return;
    }
  click_widget (&x, GTK_WIDGET (napkin_window_get_canvas (window)));
  key (&x, "ctrl+a");
  key (&x, "ctrl+r");
  WAIT_FOR (napkin_diagram_n_regions (d) == 1);
  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 1);
  region = napkin_diagram_region (d, 0);
  g_assert_cmpint (region->level, ==, NAPKIN_LEVEL_SMEM);
  g_assert_cmpint (napkin_region_mark (region, "k", &tile), ==, NAPKIN_MARK_STREAM);
  g_assert_cmpint (tile, ==, 128);
  g_assert_cmpint (napkin_region_mark (region, "q", &tile), ==, NAPKIN_MARK_PARALLEL);
  g_assert_cmpint (tile, ==, 128);
  g_assert_cmpuint (region->stages, ==, 3);
  settle_pane (window);
  a = napkin_analysis_pane_get_analysis (pane);
  g_assert_nonnull (a);
  g_assert_true (a->feasible);
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  /* one undo step takes the region away */
  key (&x, "ctrl+z");
  WAIT_FOR (napkin_diagram_n_regions (d) == 0);
  g_assert_cmpuint (napkin_diagram_n_regions (d), ==, 0);
  xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* The line at the top of the code view, and its number in the code (from 0). */
static int
code_top (NapkinCodeView *code,
          char          **line)
{
  *line = napkin_code_view_dup_first_visible_line (code);
  return napkin_code_view_get_first_visible_line_number (code);
}

/* Read a kernel's code further down with the mouse wheel, then edit an axis in the
 * inspector with real keys: the new code opens where the user was reading (the same
 * line of the kernel), not on line 1; then another document, opened while the field
 * still has the focus, shows its pane from the top (and no Gtk-CRITICAL: GTK 4.8 kept
 * the removed field as the window's focus). */
static void
test_code_view_keeps_line (void)
{
  NapkinWindow *window = open_example_sized (app, "flash-attention", 1400, 1000);
  NapkinDiagram *d = diagram_of (window);
  NapkinCodeView *code = NAPKIN_CODE_VIEW (napkin_window_get_code_view (window));
  g_autofree char *before = NULL, *after = NULL;
  int top_before, top_after;
  GtkWidget *field;
  Xdo x = { 0 };

  WAIT_FOR (napkin_code_view_get_generation (code) == napkin_diagram_get_generation (d)
            && napkin_code_view_is_settled (code));
  iterate (300);
  if (!xdo_begin (&x, window))
    {
      close_window (window);
      return;
    }
  /* the wheel over the code: 10 notches down */
  {
    char px[32], py[32];

    window_point (&x, napkin_window_get_code_view (window), 300, 80, px, py);
    xdotool ("mousemove", "--window", x.wid, px, py, NULL);
    for (guint i = 0; i < 10; i++)
      xdotool ("click", "5", NULL);
  }
  iterate (300);
  top_before = code_top (code, &before);
  g_assert_cmpint (top_before, >, 10);
  field = napkin_app_test_inspector_field (window, "axis-q", 1000);
  click_widget (&x, field);
  key (&x, "ctrl+a");
  type_text (&x, "2048");
  key (&x, "Return");
  WAIT_FOR (napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, "q")) == 2048);
  WAIT_FOR (napkin_code_view_get_generation (code) == napkin_diagram_get_generation (d)
            && napkin_code_view_is_settled (code));
  iterate (400);
  top_after = code_top (code, &after);
  g_test_message ("code view top: line %d “%s” before the edit, line %d “%s” after", top_before, before,
                  top_after, after);
  g_assert_cmpint (top_after, >, 10);
  g_assert_cmpint (ABS (top_after - top_before), <=, 3);

  /* the pane read further down, then another document: its numbers from the top */
  napkin_analysis_pane_set_scroll (pane_of (window), 250);
  g_assert_cmpfloat (napkin_analysis_pane_get_scroll (pane_of (window)), >, 0);
  {
    g_autofree char *path = example_path ("matmul-tiled");
    g_autoptr(GFile) file = g_file_new_for_path (path);

    g_assert_true (napkin_window_load_file (window, file, NULL));
  }
  settle_pane (window);
  g_assert_cmpfloat (napkin_analysis_pane_get_scroll (pane_of (window)), ==, 0);
  xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* Picks the profile `id` in the window's selector (the setting follows: later windows
 * start on it). */
static void
select_arch (NapkinWindow *window,
             const char   *id)
{
  GtkDropDown *dropdown = find_arch_dropdown (window);
  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();

  for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
    if (g_str_equal (napkin_arch_registry_get (registry, i)->id, id))
      gtk_drop_down_set_selected (dropdown, i);
  settle_pane (window);
}

/* `example` with some of its regions' specs changed, saved under tmpdir and opened. */
static NapkinWindow *
open_tiled (const char         *example,
            const char * const *specs)
{
  g_autofree char *src = example_path (example);
  g_autofree char *path = g_build_filename (tmpdir, "tiled.napkin", NULL);
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (src, NAPKIN_LOAD_VALIDATE, NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));

  g_assert_nonnull (d);
  for (guint i = 0; specs[i]; i++)
    g_assert_true (napkin_tune_apply_spec (d, specs[i], NULL));
  g_assert_true (napkin_diagram_save_to_file (d, path, NULL));
  g_assert_true (napkin_window_load_file (window, file, NULL));
  napkin_app_test_present (window, 1400, 900);
  return window;
}

/* Suggest Tiles (Ctrl+T, typed) and what it ranks: the row softmax cut into 32 one-warp
 * blocks on the H200's 132 SMs is priced for its idle SMs — every suggestion fills the
 * GPU and is several times faster, none proposes fewer threads than a warp; the
 * attention region holding its keys whole gets the keys streamed instead of "no
 * feasible tiles". */
static void
test_suggest_prices_idle_sms (void)
{
  const char *softmax[] = { "rows.r=parallel:512", "rows.threads=32", NULL };
  const char *attention[] = { "block.b=whole", "block.h=whole", "block.k=whole", NULL };

  for (guint round = 0; round < 2; round++)
    {
      NapkinWindow *window = open_tiled (round == 0 ? "softmax" : "flash-attention", round == 0 ? softmax : attention);
      GtkWidget *button = find_named (GTK_WIDGET (window), "suggest-tiles-button");
      NapkinTileSuggestions *suggestions = NAPKIN_TILE_SUGGESTIONS (gtk_menu_button_get_popover (GTK_MENU_BUTTON (button)));
      const NapkinTuneCandidate *best;
      Xdo x = { 0 };

      select_arch (window, round == 0 ? "h200" : "h100");
      if (!xdo_begin (&x, window))
        {
          napkin_window_close_without_asking (window);
          return;
        }
      click_widget (&x, GTK_WIDGET (napkin_window_get_canvas (window)));
      key (&x, "ctrl+t");
      WAIT_FOR (gtk_widget_get_visible (GTK_WIDGET (suggestions)) && !napkin_tile_suggestions_is_searching (suggestions)
                && (napkin_tile_suggestions_get_n_items (suggestions) > 0
                    || napkin_tile_suggestions_get_error (suggestions) != NULL));
      g_assert_cmpuint (napkin_tile_suggestions_get_n_items (suggestions), >, 0);
      best = napkin_tile_suggestions_get_item (suggestions, 0);
      if (round == 0)
        {
          const NapkinTuneCandidate *current = napkin_tile_suggestions_get_current (suggestions);

          g_assert_nonnull (current);
          g_assert_cmpfloat (best->predicted_time_s, <, current->predicted_time_s / 3);
          for (guint i = 0; i < napkin_tile_suggestions_get_n_items (suggestions); i++)
            {
              const NapkinTuneCandidate *c = napkin_tile_suggestions_get_item (suggestions, i);

              for (guint j = 0; c->specs[j]; j++)
                {
                  if (g_str_has_prefix (c->specs[j], "rows.r=parallel:"))
                    g_assert_cmpint (16384 / g_ascii_strtoll (c->specs[j] + strlen ("rows.r=parallel:"), NULL, 10), >=, 132);
                  if (g_str_has_prefix (c->specs[j], "rows.threads="))
                    g_assert_cmpint (g_ascii_strtoll (c->specs[j] + strlen ("rows.threads="), NULL, 10), >=, 32);
                }
            }
        }
      else
        {
          gboolean streams = FALSE;

          g_assert_null (napkin_tile_suggestions_get_current (suggestions));   /* the file's does not fit */
          /* the drawn block, or the plan's own kernel it gave way to (regions are hints) */
          for (guint j = 0; best->specs[j]; j++)
            streams |= strstr (best->specs[j], ".k=stream:") != NULL;
          g_assert_true (streams);
        }
      key (&x, "Escape");
      iterate (200);
      xdotool ("mousemove", "0", "0", NULL);
      napkin_window_close_without_asking (window);
      iterate (50);
    }
}

static int
compare_names (gconstpointer a,
               gconstpointer b)
{
  return strcmp (*(const char *const *) a, *(const char *const *) b);
}

/* Every "N %" the pane shows in `root`'s labels: none above 100 % (docs/model.md §7),
 * except an infeasible region's footprint against its capacity (red, with the error
 * above the numbers). Returns how many shares it read. */
static guint
check_shares (GtkWidget            *root,
              const NapkinAnalysis *a,
              const char           *what)
{
  guint n = 0;

  if (!gtk_widget_get_visible (root))
    return 0;
  if (GTK_IS_LABEL (root))
    {
      const char *text = gtk_label_get_text (GTK_LABEL (root));
      const char *p = text;

      while ((p = strstr (p, " %")) != NULL)
        {
          const char *start = p;
          double v;

          while (start > text && (g_ascii_isdigit (start[-1]) || start[-1] == '.'))
            start--;
          p += 2;
          if (start == p - 2)
            continue;
          v = g_ascii_strtod (start, NULL);
          n++;
          if (v > 100.05 && !(a != NULL && !a->feasible && (strstr (text, " B of ") || strstr (text, "/SM"))))
            g_error ("%s: the pane shows “%s” (%.1f %%)", what, text, v);
        }
    }
  for (GtkWidget *c = gtk_widget_get_first_child (root); c; c = gtk_widget_get_next_sibling (c))
    n += check_shares (c, a, what);
  return n;
}

/* No share above 100 % on any example at any of the six profiles, as the pane shows
 * them: the profile picked in the header's selector (with real clicks and keys on the
 * first example, the selector's own signal on the others). */
static void
test_no_share_above_100 (void)
{
  const char *dir = g_getenv ("NAPKIN_EXAMPLES_DIR");
  g_autoptr(GDir) gdir = g_dir_open (dir, 0, NULL);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func (g_free);
  NapkinWindow *window = new_window ();
  NapkinAnalysisPane *pane = pane_of (window);
  GtkDropDown *dropdown = find_arch_dropdown (window);
  guint n_archs, shares = 0;
  const char *name;
  Xdo x = { 0 };
  gboolean xdo;

  g_assert_nonnull (dropdown);
  n_archs = g_list_model_get_n_items (gtk_drop_down_get_model (dropdown));
  g_assert_cmpuint (n_archs, >=, 6);
  while ((name = g_dir_read_name (gdir)))
    if (g_str_has_suffix (name, ".napkin"))
      g_ptr_array_add (names, g_strdup (name));
  g_ptr_array_sort (names, compare_names);
  g_assert_cmpuint (names->len, >=, 15);
  xdo = xdo_begin (&x, window);
  for (guint f = 0; f < names->len; f++)
    {
      g_autofree char *path = g_build_filename (dir, g_ptr_array_index (names, f), NULL);
      g_autoptr(GFile) file = g_file_new_for_path (path);
      g_autoptr(GError) error = NULL;

      g_assert_true (napkin_window_load_file (window, file, &error));
      g_assert_no_error (error);
      for (guint i = 0; i < n_archs; i++)
        {
          g_autofree char *what = NULL;

          if (f == 0 && xdo)
            {
              /* the selector as a user works it: open it, walk to the profile, Enter */
              click_widget (&x, GTK_WIDGET (dropdown));
              iterate (200);
              key (&x, "Home");
              for (guint d = 0; d < i; d++)
                key (&x, "Down");
              key (&x, "Return");
              iterate (200);
              g_assert_cmpuint (gtk_drop_down_get_selected (dropdown), ==, i);
            }
          else
            gtk_drop_down_set_selected (dropdown, i);
          settle_pane (window);
          what = g_strdup_printf ("%s on %s", (char *) g_ptr_array_index (names, f),
                                  napkin_analysis_pane_get_arch (pane)->id);
          shares += check_shares (GTK_WIDGET (pane), napkin_analysis_pane_get_analysis (pane), what);
        }
    }
  /* the throughput, levels and kernels of every example, at least */
  g_assert_cmpuint (shares, >=, names->len * n_archs * 4);
  select_arch (window, "h100");   /* the next windows start there again */
  if (xdo)
    xdotool ("mousemove", "0", "0", NULL);
  napkin_window_close_without_asking (window);
  iterate (50);
}

/* GTK_THEME=Adwaita:dark (the "theme" test's environment) darkens the canvas and
 * the code view too. */
static void
test_gtk_theme_dark (void)
{
  NapkinWindow *window;
  NapkinCodeView *code;

  window = new_window ();
  code = NAPKIN_CODE_VIEW (napkin_window_get_code_view (window));
  g_assert_true (adw_style_manager_get_dark (adw_style_manager_get_default ()));
  g_assert_true (napkin_canvas_get_dark (napkin_window_get_canvas (window)));
  g_assert_cmpstr (napkin_code_view_get_scheme_id (code), ==, "Adwaita-dark");
  close_window (window);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-kernels-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);
  /* Only the "theme" test runs it, in its own environment: a GUI test that skips
   * counts as a failure. */
  if (g_strcmp0 (g_getenv ("GTK_THEME"), "Adwaita:dark") == 0)
    g_test_add_func ("/kernels/gtk-theme-dark", test_gtk_theme_dark);
  g_test_add_func ("/kernels/causal-import", test_causal_import);
  g_test_add_func ("/kernels/new-diagram-clears", test_new_diagram_clears);
  g_test_add_func ("/kernels/softmax-last-axis", test_softmax_last_axis);
  g_test_add_func ("/kernels/scale-follows-d", test_scale_follows_d);
  g_test_add_func ("/kernels/menus-and-exports", test_menus_and_exports);
  g_test_add_func ("/kernels/new-region-in-view", test_new_region_in_view);
  g_test_add_func ("/kernels/ctrl-r-plan-tiles", test_ctrl_r_plan_tiles);
  g_test_add_func ("/kernels/no-share-above-100", test_no_share_above_100);
  g_test_add_func ("/kernels/code-view-keeps-line", test_code_view_keeps_line);
  g_test_add_func ("/kernels/suggest-prices-idle-sms", test_suggest_prices_idle_sms);
  g_test_add_func ("/kernels/suggest-and-quit", test_suggest_and_quit);
  return napkin_app_test_run (app, tmpdir);
}
