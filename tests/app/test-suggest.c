/* SPDX-License-Identifier: GPL-3.0-or-later */
/* "Suggest tiles" under Xvfb (docs/editor.md): the list shows what napkin_tune ranks for
 * the same diagram and architecture, Apply sets the tiles as one undo step that
 * the canvas's document, the analysis pane and undo/redo all see, Cancel and a
 * diagram without regions leave the document alone, a stale ranking is searched
 * again rather than applied, and a screenshot shows the open list. */
#include "config.h"

#include <locale.h>
#include <math.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-app-test.h"
#include "napkin-analysis-pane.h"
#include "napkin-application.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-tile-suggestions.h"
#include "napkin-derive.h"
#include "napkin-tune.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinWindow *
open_example (const char *name)
{
  return open_example_sized (app, name, 1280, 860);
}

static NapkinTileSuggestions *
suggestions_of (NapkinWindow *window)
{
  GtkWidget *button = find_named (GTK_WIDGET (window), "suggest-tiles-button");

  g_assert_nonnull (button);
  g_assert_true (gtk_widget_get_visible (button));
  return NAPKIN_TILE_SUGGESTIONS (gtk_menu_button_get_popover (GTK_MENU_BUTTON (button)));
}

/* Activates win.suggest-tiles and waits for the worker's answer. */
static NapkinTileSuggestions *
suggest (NapkinWindow *window)
{
  NapkinTileSuggestions *s = suggestions_of (window);

  gint64 start = g_get_monotonic_time (), returned, done;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.suggest-tiles", NULL));
  returned = g_get_monotonic_time ();
  /* the action returned with the search still under way: it runs in a worker */
  g_assert_true (napkin_tile_suggestions_is_searching (s));
  iterate (20);
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (s)));
  /* under a sanitizer on a loaded 2-core machine the search takes seconds: wait up to 120 s */
  for (guint i = 0; i < 12000 && napkin_tile_suggestions_is_searching (s); i++)
    iterate (10);
  g_assert_false (napkin_tile_suggestions_is_searching (s));
  done = g_get_monotonic_time ();
  g_test_message ("win.suggest-tiles returned in %.1f ms; the list came %.1f ms later",
                  (returned - start) / 1e3, (done - returned) / 1e3);
  iterate (50);
  return s;
}

static char *
document_json (NapkinWindow *window)
{
  gsize length;

  return napkin_diagram_save_to_data (diagram_of (window), &length);
}

static char *
regions_json (NapkinWindow *window)
{
  json_object *root = napkin_diagram_to_json (diagram_of (window));
  json_object *regions = json_object_object_get (root, "regions");
  char *text = g_strdup (json_object_to_json_string_ext (regions, JSON_C_TO_STRING_PLAIN));

  json_object_put (root);
  return text;
}

static GtkWidget *
label_in (GtkWidget *root,
          guint      index)
{
  guint i = 0;

  /* the row's labels in order: rank, time, … */
  for (GtkWidget *w = root; w; )
    {
      GtkWidget *child = gtk_widget_get_first_child (w);

      if (GTK_IS_LABEL (w) && i++ == index)
        return w;
      if (child != NULL)
        {
          w = child;
          continue;
        }
      while (w != root && gtk_widget_get_next_sibling (w) == NULL)
        w = gtk_widget_get_parent (w);
      if (w == root)
        break;
      w = gtk_widget_get_next_sibling (w);
    }
  return NULL;
}

static const char *
label_text_in (GtkWidget *root,
               guint      index)
{
  GtkWidget *label = label_in (root, index);

  return label ? gtk_label_get_text (GTK_LABEL (label)) : NULL;
}

/* Not blank, and the popover's own area holds text on its background. */
static void
check_screenshot (GdkTexture *texture)
{
  int w = gdk_texture_get_width (texture), h = gdk_texture_get_height (texture);
  g_autofree guint8 *pixels = g_malloc ((gsize) w * h * 4);
  g_autoptr(GHashTable) colours = g_hash_table_new (NULL, NULL);

  g_assert_cmpint (w, >=, 800);
  g_assert_cmpint (h, >=, 600);
  gdk_texture_download (texture, pixels, w * 4);
  for (int i = 0; i < w * h; i += 7)
    g_hash_table_add (colours, GUINT_TO_POINTER (((guint32 *) pixels)[i] & 0xffffff));
  g_assert_cmpuint (g_hash_table_size (colours), >, 200);
}

static void
test_apply_undo_redo (void)
{
  NapkinWindow *window = open_example ("matmul-nested");
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinArch *arch = napkin_analysis_pane_get_arch (pane);
  NapkinHistory *history = napkin_window_get_history (window);
  NapkinTuneOptions options = { 0 };
  g_autoptr(NapkinTuneResult) expected = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = document_json (window);
  g_autofree char *regions_before = regions_json (window);
  g_autofree char *after = NULL;
  g_autofree char *regions_after = NULL;
  g_autofree char *shot_path = g_build_filename (tmpdir, "suggest.png", NULL);
  g_autofree char *time = NULL;
  g_autoptr(GdkTexture) shot = NULL;
  NapkinTileSuggestions *s;
  const NapkinTuneCandidate *best, *current;
  const NapkinAnalysis *a;
  GtkWidget *row, *apply;
  guint depth = napkin_history_get_depth (history);

  g_assert_nonnull (arch);
  /* the number a user would check: napkin_tune (napkin-cli tune) for the same arch */
  options.top_k = 10;
  options.regions_are_hints = TRUE;
  expected = napkin_tune (diagram_of (window), arch, &options, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (expected->best->len, >, 0);
  g_assert_nonnull (expected->current);

  s = suggest (window);
  g_assert_null (napkin_tile_suggestions_get_error (s));
  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), ==, expected->best->len);
  best = napkin_tile_suggestions_get_item (s, 0);
  current = napkin_tile_suggestions_get_current (s);
  g_assert_nonnull (current);
  g_assert_cmpfloat (best->predicted_time_s, ==,
                     ((NapkinTuneCandidate *) g_ptr_array_index (expected->best, 0))->predicted_time_s);
  g_assert_cmpstr (best->tiles, ==, ((NapkinTuneCandidate *) g_ptr_array_index (expected->best, 0))->tiles);
  g_assert_cmpfloat (current->predicted_time_s, ==, expected->current->predicted_time_s);
  g_assert_cmpfloat (best->predicted_time_s, <=, current->predicted_time_s);
  /* matmul-nested's own tiles are not the best the model knows */
  g_assert_cmpstr (best->tiles, !=, current->tiles);

  /* the first row shows that time, and rows are ranked */
  row = find_named (GTK_WIDGET (s), "suggestion-0");
  g_assert_nonnull (row);
  time = napkin_format_si (best->predicted_time_s, "s");
  g_assert_cmpstr (label_text_in (row, 0), ==, "1");
  g_assert_cmpstr (label_text_in (row, 1), ==, time);
  for (guint i = 1; i < napkin_tile_suggestions_get_n_items (s); i++)
    g_assert_cmpfloat (napkin_tile_suggestions_get_item (s, i - 1)->predicted_time_s, <=,
                       napkin_tile_suggestions_get_item (s, i)->predicted_time_s);
  g_assert_cmpint (napkin_tile_suggestions_get_selected (s), ==, 0);
  g_assert_nonnull (strstr (napkin_tile_suggestions_get_status (s), "relabelings tried"));
  /* the nested tiling gives way to the plan's own GEMM, and the popover says so */
  g_assert_nonnull (strstr (napkin_tile_suggestions_get_status (s), "Apply replaces the regions"));

  /* searching changed nothing */
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, before);
  }

  /* the selected row is previewed in the analysis pane, not in the document */
  g_assert_nonnull (napkin_analysis_pane_get_preview (pane));
  g_assert_true (napkin_analysis_pane_get_preview (pane) != diagram_of (window));
  napkin_analysis_pane_flush (pane);
  g_assert_cmpfloat_with_epsilon (napkin_analysis_pane_get_analysis (pane)->predicted_time_s, best->predicted_time_s,
                                  1e-12 * best->predicted_time_s);
  {
    GtkWidget *label = find_named (GTK_WIDGET (pane), "analysis-preview");

    g_assert_true (gtk_widget_get_visible (label));
    g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (label)), ==, _("Preview of suggestion 1 (not applied)"));
  }
  {
    guint last = napkin_tile_suggestions_get_n_items (s) - 1;
    double t = napkin_tile_suggestions_get_item (s, last)->predicted_time_s;
    g_autofree char *now = NULL;

    napkin_tile_suggestions_select (s, (int) last);
    napkin_analysis_pane_flush (pane);
    g_assert_cmpfloat_with_epsilon (napkin_analysis_pane_get_analysis (pane)->predicted_time_s, t, 1e-12 * t);
    now = document_json (window);
    g_assert_cmpstr (now, ==, before);
    napkin_tile_suggestions_select (s, 0);
  }

  /* laid out again after the preview line appeared */
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (s));
  iterate (50);
  shot = screenshot_with_popover (window, GTK_POPOVER (s), shot_path);
  check_screenshot (shot);
  if (g_getenv ("NAPKIN_SUGGEST_SHOT"))
    g_assert_true (gdk_texture_save_to_png (shot, g_getenv ("NAPKIN_SUGGEST_SHOT")));

  /* Apply, as the button does: one undo step, the popover closes */
  apply = find_named (GTK_WIDGET (s), "suggestions-apply");
  g_assert_true (gtk_widget_is_sensitive (apply));
  g_signal_emit_by_name (apply, "clicked");
  iterate (50);
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (s)));
  g_assert_null (napkin_analysis_pane_get_preview (pane));
  g_assert_false (gtk_widget_get_visible (find_named (GTK_WIDGET (pane), "analysis-preview")));
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth + 1);
  g_assert_cmpstr (napkin_history_get_undo_label (history), ==, _("Apply Suggested Tiles"));
  regions_after = regions_json (window);
  g_assert_cmpstr (regions_after, !=, regions_before);
  /* the nested tiling gives way to the plan's own GEMM, priced 1.9× faster (measured
   * 0.265 against 0.184 ms on an H200): its regions replace the drawn ones */
  g_assert_true (expected->regions_replaced);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, napkin_diagram_n_regions (expected->relabeled));
  for (guint i = 0; best->specs[i]; i++)
    {
      /* "REGION.AXIS=KIND:SIZE" or "REGION.stages=N" */
      g_auto(GStrv) lhs = NULL;
      g_auto(GStrv) parts = g_strsplit (best->specs[i], "=", 2);
      g_auto(GStrv) value = g_strsplit (parts[1], ":", 2);
      NapkinMarkKind kind;
      gint64 tile = 0;
      int r;

      lhs = g_strsplit (parts[0], ".", 2);
      r = napkin_diagram_find_region (diagram_of (window), lhs[0]);
      g_assert_cmpint (r, >=, 0);
      if (g_str_equal (lhs[1], "stages"))
        {
          g_assert_cmpint (napkin_diagram_region (diagram_of (window), r)->stages, ==, g_ascii_strtoll (parts[1], NULL, 10));
          continue;
        }
      kind = napkin_region_mark (napkin_diagram_region (diagram_of (window), r), lhs[1], &tile);
      g_assert_cmpstr (napkin_mark_to_string (kind), ==, value[0]);
      g_assert_cmpint (tile, ==, g_ascii_strtoll (value[1], NULL, 10));
    }
  /* the analysis pane follows the document: its time is the suggestion's */
  napkin_analysis_pane_flush (pane);
  a = napkin_analysis_pane_get_analysis (pane);
  g_assert_nonnull (a);
  g_assert_cmpfloat_with_epsilon (a->predicted_time_s, best->predicted_time_s, 1e-12 * best->predicted_time_s);
  {
    double was = current->predicted_time_s, now = best->predicted_time_s;
    g_autofree char *speedup = g_strdup_printf ("%.2f×", was / now);

    g_test_message ("matmul-nested on %s: %.4g ms → %.4g ms (%s): %s", arch->id, was * 1e3, now * 1e3, speedup,
                    best->tiles);
  }
  after = document_json (window);

  /* undo restores the file's tiles exactly; redo applies them again */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, before);
  }
  napkin_analysis_pane_flush (pane);
  g_assert_cmpfloat_with_epsilon (napkin_analysis_pane_get_analysis (pane)->predicted_time_s,
                                  expected->current->predicted_time_s, 1e-12 * expected->current->predicted_time_s);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, after);
  }
  close_window_finalized (window);
}

/* A diagram without regions (the plain attention): Suggest derives its kernels — one,
 * the attention on the tensor cores at FlashAttention's tiles — and Apply draws its
 * region as one undo step (docs/plan.md, "Deriving a diagram"). */
static void
test_plain_attention_derives (void)
{
  NapkinWindow *window = open_example ("attention");
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  NapkinTuneOptions options = { 0 };
  g_autoptr(NapkinDerivation) expected = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *before = document_json (window);
  g_autofree char *after = NULL;
  guint depth = napkin_history_get_depth (history);
  const NapkinAnalysis *a;
  const NapkinDerivation *shown;
  NapkinTileSuggestions *s;

  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 0);
  expected = napkin_derive (diagram_of (window), napkin_analysis_pane_get_arch (pane), &options, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (expected->kernels->len, ==, 1);
  g_assert_cmpstr (((NapkinDeriveKernel *) g_ptr_array_index (expected->kernels, 0))->kind, ==, "attention");

  s = suggest (window);
  g_assert_null (napkin_tile_suggestions_get_error (s));
  shown = napkin_tile_suggestions_get_derivation (s);
  g_assert_nonnull (shown);
  g_assert_cmpuint (shown->kernels->len, ==, 1);
  g_assert_cmpfloat (shown->analyzed_s, ==, expected->analyzed_s);
  g_assert_true (gtk_widget_is_sensitive (find_named (GTK_WIDGET (s), "suggestions-apply")));
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, before);
  }
  g_signal_emit_by_name (find_named (GTK_WIDGET (s), "suggestions-apply"), "clicked");
  iterate (50);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth + 1);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 1);
  napkin_analysis_pane_flush (pane);
  a = napkin_analysis_pane_get_analysis (pane);
  g_assert_cmpfloat_with_epsilon (a->predicted_time_s, expected->analyzed_s, 1e-12 * expected->analyzed_s);
  /* one kernel: the attention, on the tensor cores */
  g_assert_cmpuint (a->kernels->len, ==, 1);
  g_assert_cmpstr (g_array_index (a->kernels, NapkinKernelCost, 0).plan_kind, ==, "attention");
  g_assert_cmpint (g_array_index (a->kernels, NapkinKernelCost, 0).path, !=, NAPKIN_PATH_GENERIC);
  after = document_json (window);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, before);
  }
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, after);
  }
  close_window_finalized (window);
}

/* An elementwise map: the plan runs it as drawn, so the derivation has nothing to
 * apply; an empty diagram: nothing to derive. The popover says so, Apply does nothing,
 * and the document stays as it was. */
static const char plain_map[] =
  "{ \"format\": \"napkin\", \"version\": 1, \"title\": \"GELU\","
  "  \"axes\": [ { \"name\": \"i\", \"size\": 1048576 } ],"
  "  \"tensors\": [ { \"name\": \"X\", \"axes\": [ \"i\" ], \"dtype\": \"fp16\" },"
  "                 { \"name\": \"Y\", \"axes\": [ \"i\" ], \"dtype\": \"fp16\" } ],"
  "  \"nodes\": [ { \"id\": \"x\", \"kind\": \"input\", \"x\": 40, \"y\": 60, \"tensor\": \"X\" },"
  "               { \"id\": \"act\", \"kind\": \"map\", \"x\": 200, \"y\": 60, \"fn\": \"gelu\" },"
  "               { \"id\": \"y\", \"kind\": \"output\", \"x\": 360, \"y\": 60, \"tensor\": \"Y\" } ],"
  "  \"wires\": [ { \"from\": \"x\", \"to\": \"act\", \"port\": 0 },"
  "               { \"from\": \"act\", \"to\": \"y\", \"port\": 0 } ],"
  "  \"regions\": [] }";

static void
check_nothing_to_tune (NapkinWindow  *window,
                       NapkinDiagram *diagram)
{
  NapkinAnalysisPane *pane = pane_of (window);
  g_autoptr(NapkinDerivation) expected = NULL;
  g_autoptr(GError) derive_error = NULL;
  NapkinTuneOptions options = { 0 };
  NapkinHistory *history;
  g_autofree char *before = NULL;
  g_autofree char *now = NULL;
  NapkinTileSuggestions *s;
  guint depth;

  napkin_window_set_document (window, diagram, NULL);
  history = napkin_window_get_history (window);
  before = document_json (window);
  depth = napkin_history_get_depth (history);
  expected = napkin_derive (diagram_of (window), napkin_analysis_pane_get_arch (pane), &options, &derive_error);

  s = suggest (window);
  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), ==, 0);
  if (expected == NULL)
    {
      GtkWidget *error_label = find_named (GTK_WIDGET (s), "suggestions-error");

      g_test_message ("empty: “%s”", derive_error->message);
      g_assert_cmpstr (napkin_tile_suggestions_get_error (s), ==, derive_error->message);
      g_assert_true (gtk_widget_get_visible (error_label));
      g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (error_label)), ==, derive_error->message);
    }
  else
    {
      /* derived as one kernel: in a region where the model prices one lower, else
       * as the plan runs it without a region (nothing to apply) */
      g_assert_nonnull (napkin_tile_suggestions_get_derivation (s));
      g_assert_cmpfloat (napkin_tile_suggestions_get_derivation (s)->analyzed_s, ==, expected->analyzed_s);
      g_assert_cmpint (gtk_widget_is_sensitive (find_named (GTK_WIDGET (s), "suggestions-apply")), ==,
                       napkin_diagram_n_regions (expected->derived) > 0);
      if (napkin_diagram_n_regions (expected->derived) > 0)
        goto close;
      g_assert_nonnull (strstr (napkin_tile_suggestions_get_status (s), "nothing to apply"));
    }
  g_assert_false (gtk_widget_is_sensitive (find_named (GTK_WIDGET (s), "suggestions-apply")));
  {
    g_autoptr(GError) error = NULL;

    g_assert_false (napkin_tile_suggestions_apply (s, &error));
    g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  }
close:
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  now = document_json (window);
  g_assert_cmpstr (now, ==, before);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth);
}

static void
test_nothing_to_tune (void)
{
  NapkinWindow *window = open_example ("matmul");
  g_autoptr(NapkinDiagram) empty = napkin_diagram_new ();
  g_autoptr(NapkinDiagram) map = NULL;
  g_autoptr(GError) error = NULL;

  map = napkin_diagram_load_from_data (plain_map, -1, NAPKIN_LOAD_DEFAULT, &error);
  g_assert_no_error (error);
  check_nothing_to_tune (window, map);
  check_nothing_to_tune (window, empty);
  close_window_finalized (window);
}

/* Cancel after a successful search: nothing changes. */
static void
test_cancel (void)
{
  NapkinWindow *window = open_example ("flash-attention");
  NapkinHistory *history = napkin_window_get_history (window);
  g_autofree char *before = document_json (window);
  g_autofree char *now = NULL;
  guint depth = napkin_history_get_depth (history);
  NapkinTileSuggestions *s = suggest (window);
  GtkWidget *cancel = NULL;

  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), >, 0);
  napkin_tile_suggestions_select (s, (int) napkin_tile_suggestions_get_n_items (s) - 1);
  /* the button next to Apply */
  cancel = gtk_widget_get_prev_sibling (find_named (GTK_WIDGET (s), "suggestions-apply"));
  g_assert_true (GTK_IS_BUTTON (cancel));
  g_signal_emit_by_name (cancel, "clicked");
  iterate (50);
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (s)));
  now = document_json (window);
  g_assert_cmpstr (now, ==, before);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth);
  /* the pane is back on the document */
  g_assert_null (napkin_analysis_pane_get_preview (pane_of (window)));
  napkin_analysis_pane_flush (pane_of (window));
  g_assert_cmpfloat (napkin_analysis_pane_get_analysis (pane_of (window))->predicted_time_s, ==,
                     napkin_tile_suggestions_get_current (s)->predicted_time_s);
  close_window_finalized (window);
}

/* An edit after the search makes its ranking stale: Apply searches again
 * instead of applying tiles ranked for another diagram. */
static void
test_stale (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinHistory *history = napkin_window_get_history (window);
  NapkinDiagram *diagram = diagram_of (window);
  const NapkinRegion *region = napkin_diagram_region (diagram, 0);
  g_autoptr(GError) error = NULL;
  g_autofree char *name = g_strdup (region->name);
  NapkinTileSuggestions *s = suggest (window);
  guint depth;

  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), >, 0);
  g_assert_true (napkin_edit_set_region_stages (history, name, region->stages + 1, &error));
  g_assert_no_error (error);
  depth = napkin_history_get_depth (history);
  g_assert_false (napkin_tile_suggestions_apply (s, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  g_clear_error (&error);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth);
  g_assert_true (napkin_tile_suggestions_is_searching (s));
  for (guint i = 0; i < 12000 && napkin_tile_suggestions_is_searching (s); i++)
    iterate (10);
  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), >, 0);
  /* a suggestion other than the tiles the diagram has now */
  for (guint i = 0; i < napkin_tile_suggestions_get_n_items (s); i++)
    if (g_strcmp0 (napkin_tile_suggestions_get_item (s, i)->tiles, napkin_tile_suggestions_get_current (s)->tiles) != 0)
      {
        napkin_tile_suggestions_select (s, (int) i);
        break;
      }
  g_assert_true (napkin_tile_suggestions_apply (s, &error));
  g_assert_no_error (error);
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth + 1);
  close_window_finalized (window);
}

/* Measure Top 3 through the runner's test double (tests/runner/fake-runner.sh):
 * the three best get the median it reports, the others stay unmeasured; a
 * runner that crashes shows how each run ended. */
static void
set_fake_runner (NapkinTileSuggestions *s,
                 const char            *fake_mode)
{
  g_autofree char *fake = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "runner", "fake-runner.sh", NULL);
  g_autofree char *mode = g_strconcat ("FAKE_MODE=", fake_mode, NULL);
  const char *command[] = { "env", mode, "sh", fake, NULL };

  napkin_tile_suggestions_set_runner (s, command);
}

static void
wait_measured (NapkinTileSuggestions *s)
{
  for (guint i = 0; i < 3000 && napkin_tile_suggestions_is_measuring (s); i++)
    iterate (10);
  g_assert_false (napkin_tile_suggestions_is_measuring (s));
}

static void
test_measure (void)
{
  /* (matmul-tiled's block gives way to the plan's own GEMM: one suggestion) */
  NapkinWindow *window = open_example ("flash-attention");
  g_autofree char *before = document_json (window);
  g_autofree char *now = NULL;
  NapkinTileSuggestions *s = suggest (window);
  GtkWidget *measure = find_named (GTK_WIDGET (s), "suggestions-measure");
  guint n = napkin_tile_suggestions_get_n_items (s);

  g_assert_cmpuint (n, >, NAPKIN_TILE_SUGGESTIONS_MEASURE_K);
  g_assert_true (gtk_widget_get_visible (measure));
  g_assert_true (gtk_widget_is_sensitive (measure));
  /* no Measured column until a measurement starts */
  g_assert_false (gtk_widget_get_visible (label_in (find_named (GTK_WIDGET (s), "suggestion-0"), 6)));
  set_fake_runner (s, "ok");
  g_signal_emit_by_name (measure, "clicked");
  g_assert_true (gtk_widget_get_visible (label_in (find_named (GTK_WIDGET (s), "suggestion-0"), 6)));
  g_assert_true (napkin_tile_suggestions_is_measuring (s));
  g_assert_false (gtk_widget_is_sensitive (measure));
  wait_measured (s);
  for (guint i = 0; i < n; i++)
    {
      g_autofree char *name = g_strdup_printf ("suggestion-%u", i);
      const char *cell = label_text_in (find_named (GTK_WIDGET (s), name), 6);

      if (i < NAPKIN_TILE_SUGGESTIONS_MEASURE_K)
        {
          /* the fake's median is 0.5 ms */
          g_autofree char *expected = g_strdup_printf ("500 µs (%.2f×)",
                                                       0.5e-3 / napkin_tile_suggestions_get_item (s, i)->predicted_time_s);

          g_assert_cmpfloat (napkin_tile_suggestions_get_measured (s, i), ==, 0.5e-3);
          g_assert_cmpstr (cell, ==, expected);
        }
      else
        {
          g_assert_true (isnan (napkin_tile_suggestions_get_measured (s, i)));
          g_assert_cmpstr (cell, ==, "");
        }
    }
  g_assert_nonnull (strstr (napkin_tile_suggestions_get_status (s), "Measured 3 of the best 3"));
  g_assert_true (gtk_widget_is_sensitive (measure));

  /* a result recorded from the real runner (H200): its median, and its skeleton in the tooltip */
  {
    g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "runner",
                                              "h200-matmul-tiled.json", NULL);
    json_object *recorded = json_object_from_file (path);
    json_object *time_ms = json_object_object_get (recorded, "time_ms");
    double median = json_object_get_double (json_object_object_get (time_ms, "median"));
    GtkWidget *cell;

    g_assert_nonnull (recorded);
    set_fake_runner (s, "recorded");
    napkin_tile_suggestions_measure (s, 1);
    wait_measured (s);
    g_assert_cmpfloat_with_epsilon (napkin_tile_suggestions_get_measured (s, 0), median / 1e3, 1e-12);
    cell = label_in (find_named (GTK_WIDGET (s), "suggestion-0"), 6);
    g_assert_nonnull (cell);
    g_assert_nonnull (strstr (gtk_widget_get_tooltip_text (cell), "kernels: gemm-mma"));
    g_assert_true (isnan (napkin_tile_suggestions_get_measured (s, 1)));
    json_object_put (recorded);
  }

  /* a kernel that brings the runner down: each row says so, nothing measured */
  set_fake_runner (s, "crash");
  napkin_tile_suggestions_measure (s, 2);
  wait_measured (s);
  for (guint i = 0; i < 2; i++)
    {
      g_autofree char *name = g_strdup_printf ("suggestion-%u", i);
      const char *cell = label_text_in (find_named (GTK_WIDGET (s), name), 6);

      g_assert_true (isnan (napkin_tile_suggestions_get_measured (s, i)));
      g_test_message ("a crashing runner: “%s”", cell);
      g_assert_cmpstr (cell, !=, "");
      g_assert_cmpstr (cell, !=, "…");
    }
  /* measuring never touches the document */
  now = document_json (window);
  g_assert_cmpstr (now, ==, before);

  /* a run that hangs: closing the list stops the measurement (the job kills its child) */
  set_fake_runner (s, "hang");
  napkin_tile_suggestions_measure (s, 1);
  iterate (200);
  g_assert_true (napkin_tile_suggestions_is_measuring (s));
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  g_assert_false (napkin_tile_suggestions_is_measuring (s));
  close_window_finalized (window);
}

/* The inspector offers the command for a selected region; the menu and the
 * accelerator name the same action. */
static void
test_inspector_button (void)
{
  NapkinWindow *window = open_example ("matmul-nested");
  NapkinTileSuggestions *s = suggestions_of (window);
  GtkWidget *button = NULL;
  g_auto(GStrv) accels = NULL;

  napkin_canvas_select_region (napkin_window_get_canvas (window), "block");
  for (guint i = 0; i < 200 && button == NULL; i++)
    {
      iterate (10);
      button = find_named (GTK_WIDGET (napkin_window_get_inspector (window)), "region-suggest-tiles");
    }
  g_assert_nonnull (button);
  g_assert_cmpstr (gtk_actionable_get_action_name (GTK_ACTIONABLE (button)), ==, "win.suggest-tiles");
  g_assert_true (gtk_widget_is_sensitive (button));
  g_signal_emit_by_name (button, "clicked");
  iterate (20);
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (s)));
  for (guint i = 0; i < 12000 && napkin_tile_suggestions_is_searching (s); i++)
    iterate (10);
  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), >, 0);
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  close_window_finalized (window);
}

int
main (int    argc,
      char **argv)
{
  int status;

  if (!napkin_app_test_init (&argc, &argv, "napkin-suggest-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);

  g_test_add_func ("/suggest/apply-undo-redo", test_apply_undo_redo);
  g_test_add_func ("/suggest/plain-attention-derives", test_plain_attention_derives);
  g_test_add_func ("/suggest/nothing-to-tune-message", test_nothing_to_tune);
  g_test_add_func ("/suggest/cancel-leaves-document", test_cancel);
  g_test_add_func ("/suggest/stale-searches-again", test_stale);
  g_test_add_func ("/suggest/inspector-button", test_inspector_button);
  g_test_add_func ("/suggest/measure-through-the-runner", test_measure);
  status = g_test_run ();
  {
    g_autofree char *shot = g_build_filename (tmpdir, "suggest.png", NULL);

    g_unlink (shot);
  }
  g_rmdir (tmpdir);
  g_object_unref (app);
  return status;
}
