/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Suggest on a multi-operation diagram under Xvfb (docs/plan.md, "Deriving a
 * diagram"): the Llama block imported through File ▸ Import derives off the main
 * thread into the kernels, per-kernel and total times napkin_derive gives for it;
 * Apply sets every region as one undo step that Undo takes back exactly and Redo
 * sets again; the result saves and reloads; a diagram the derivation refuses shows
 * why. With NAPKIN_SCREENSHOT_DIR=DIR the open popover is saved there as
 * editor-derive.png. */
#include "config.h"

#include <locale.h>
#include <math.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-app-test.h"
#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-tile-suggestions.h"

static NapkinApplication *app;
static char *tmpdir;

static NapkinTileSuggestions *
suggestions_of (NapkinWindow *window)
{
  GtkWidget *button = find_named (GTK_WIDGET (window), "suggest-tiles-button");

  g_assert_nonnull (button);
  return NAPKIN_TILE_SUGGESTIONS (gtk_menu_button_get_popover (GTK_MENU_BUTTON (button)));
}

static char *
document_json (NapkinWindow *window)
{
  gsize length;

  return napkin_diagram_save_to_data (diagram_of (window), &length);
}

/* Opens Suggest: the action returns with the work in a worker thread, and this polls
 * (up to 900 s: a sanitizer on a loaded 2-core machine is slow — the relabelings of the
 * derived Llama block's 12 regions take 5–6 s in a plain build, about 240 s there — and
 * the suite's timeout, 300 s × 4 under the sanitizer, still bounds it) until it is done. */
static NapkinTileSuggestions *
open_suggest (NapkinWindow *window)
{
  NapkinTileSuggestions *s = suggestions_of (window);
  gint64 start = g_get_monotonic_time ();

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "win.suggest-tiles", NULL));
  /* the action returned with the work still under way: the window stays live */
  g_assert_true (napkin_tile_suggestions_is_searching (s));
  while (napkin_tile_suggestions_is_searching (s) && g_get_monotonic_time () - start < 900 * G_USEC_PER_SEC)
    iterate (10);
  g_assert_false (napkin_tile_suggestions_is_searching (s));
  g_test_message ("Suggest answered after %.0f ms", (g_get_monotonic_time () - start) / 1e3);
  iterate (50);
  g_assert_true (gtk_widget_get_visible (GTK_WIDGET (s)));
  return s;
}

/* The i-th label below `root`, depth first. */
static const char *
label_text_in (GtkWidget *root,
               guint      index)
{
  guint i = 0;

  for (GtkWidget *w = root; w != NULL;)
    {
      GtkWidget *child = gtk_widget_get_first_child (w);

      if (GTK_IS_LABEL (w) && i++ == index)
        return gtk_label_get_text (GTK_LABEL (w));
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

/* The popover's rows and totals are those of `expected`, napkin_derive on the same
 * diagram. */
static void
check_shown (NapkinTileSuggestions  *s,
             const NapkinDerivation *expected)
{
  const NapkinDerivation *shown = napkin_tile_suggestions_get_derivation (s);
  GtkWidget *totals = find_named (GTK_WIDGET (s), "derivation-totals");
  g_autofree char *derived = napkin_format_si (expected->derived_s, "s");
  g_autofree char *unfused = napkin_format_si (expected->unfused_s, "s");
  g_autofree char *kernels = g_strdup_printf (" %u ", expected->kernels->len);
  g_autofree char *speedup = g_strdup_printf ("%.2f×", expected->unfused_s / expected->derived_s);
  const char *text;

  g_assert_nonnull (shown);
  g_assert_cmpuint (shown->kernels->len, ==, expected->kernels->len);
  g_assert_cmpfloat (shown->derived_s, ==, expected->derived_s);
  g_assert_cmpfloat (shown->unfused_s, ==, expected->unfused_s);
  g_assert_nonnull (totals);
  g_assert_true (gtk_widget_is_visible (totals));
  text = gtk_label_get_text (GTK_LABEL (totals));
  g_test_message ("%s", text);
  g_assert_nonnull (strstr (text, derived));
  g_assert_nonnull (strstr (text, unfused));
  g_assert_nonnull (strstr (text, kernels));
  g_assert_nonnull (strstr (text, speedup));
  for (guint i = 0; i <= expected->kernels->len; i++)
    {
      g_autofree char *name = g_strdup_printf ("kernel-%u", i);
      GtkWidget *row = find_named (GTK_WIDGET (s), name);
      const NapkinDeriveKernel *k;
      g_autofree char *time = NULL;
      g_autofree char *alone = NULL;

      if (i == expected->kernels->len)
        {
          g_assert_null (row);   /* one row a kernel, no more */
          break;
        }
      g_assert_nonnull (row);
      k = g_ptr_array_index (expected->kernels, i);
      time = napkin_format_si (k->predicted_s, "s");
      alone = napkin_format_si (k->unfused_s, "s");
      /* #, kernel, kind, predicted, unfused, operations */
      g_assert_cmpstr (label_text_in (row, 1), ==, k->name);
      g_assert_cmpstr (label_text_in (row, 2), ==, k->kind);
      g_assert_cmpstr (label_text_in (row, 3), ==, time);
      g_assert_cmpstr (label_text_in (row, 4), ==, alone);
      g_assert_true (g_str_has_prefix (label_text_in (row, 5), k->nodes[0]));
    }
}

/* The header bar (the top rows, above the popover) is drawn: not left white. */
static gboolean
window_drawn (GdkTexture *shot)
{
  int w = gdk_texture_get_width (shot), rows = 30;
  g_autofree guint8 *pixels = g_malloc ((gsize) w * gdk_texture_get_height (shot) * 4);

  gdk_texture_download (shot, pixels, w * 4);
  return napkin_app_test_count_near (pixels, w, rows, "#ffffff", 2) < (guint) (w * rows / 2);
}

/* The window with the popover open; a frame taken while the window is being laid out
 * again (the pane's preview line) comes out blank, so this polls for a drawn one. */
static void
save_screenshot (NapkinWindow          *window,
                 NapkinTileSuggestions *s)
{
  g_autofree char *path = g_build_filename (tmpdir, "derive.png", NULL);
  g_autoptr(GdkTexture) shot = NULL;

  for (guint i = 0; i < 100 && (shot == NULL || !window_drawn (shot)); i++)
    {
      g_clear_object (&shot);
      gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
      gtk_test_widget_wait_for_draw (GTK_WIDGET (s));
      iterate (50);
      shot = screenshot_with_popover (window, GTK_POPOVER (s), path);
    }
  g_assert_true (window_drawn (shot));
  g_assert_cmpint (gdk_texture_get_width (shot), >=, 800);
  if (g_getenv ("NAPKIN_SCREENSHOT_DIR"))
    {
      g_autofree char *kept = g_build_filename (g_getenv ("NAPKIN_SCREENSHOT_DIR"), "editor-derive.png", NULL);

      g_assert_true (gdk_texture_save_to_png (shot, kept));
    }
  g_unlink (path);
}

/* Every region of `expected->derived` is in the document, at its level, over its nodes. */
static void
check_regions (NapkinDiagram          *diagram,
               const NapkinDerivation *expected)
{
  guint n = napkin_diagram_n_regions (expected->derived);

  g_assert_cmpuint (n, >, 0);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram), ==, n);
  for (guint r = 0; r < n; r++)
    {
      const NapkinRegion *want = napkin_diagram_region (expected->derived, r);
      int index = napkin_diagram_find_region (diagram, want->name);
      const NapkinRegion *have;

      g_assert_cmpint (index, >=, 0);
      have = napkin_diagram_region (diagram, (guint) index);
      g_assert_cmpint (have->level, ==, want->level);
      g_assert_cmpint (have->stages, ==, want->stages);
      g_assert_cmpuint (have->marks->len, ==, want->marks->len);
    }
}

static NapkinWindow *
import_block (void)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autofree char *path = g_build_filename (g_getenv ("G_TEST_SRCDIR"), "import", "llama-block.graph.json", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_import_file (window, file, &error));
  g_assert_no_error (error);
  napkin_app_test_present (window, 1280, 860);
  return window;
}

/* napkin_derive as the editor calls it: the pane's architecture and element type. */
static NapkinDerivation *
derive_like_the_editor (NapkinWindow *window)
{
  NapkinAnalysisPane *pane = pane_of (window);
  const NapkinAnalysis *a = napkin_analysis_pane_get_analysis (pane);
  NapkinTuneOptions options = { 0 };
  g_autoptr(GError) error = NULL;
  NapkinDerivation *r;

  options.has_dtype = a && a->has_dtype;
  options.dtype = a ? a->dtype : NAPKIN_DTYPE_FP16;
  r = napkin_derive (diagram_of (window), napkin_analysis_pane_get_arch (pane), &options, &error);
  g_assert_no_error (error);
  g_assert_nonnull (r);
  return r;
}

/* The document's time in the analysis pane, once it has caught up. */
static double
pane_time (NapkinWindow *window)
{
  napkin_analysis_pane_flush (pane_of (window));
  g_assert_nonnull (napkin_analysis_pane_get_analysis (pane_of (window)));
  return napkin_analysis_pane_get_analysis (pane_of (window))->predicted_time_s;
}

/* Undo once: the document as imported, byte for byte; Redo: the derivation again. */
static void
check_undo_redo (NapkinWindow *window,
                 const char   *before,
                 const char   *after)
{
  g_autofree char *undone = NULL;
  g_autofree char *redone = NULL;

  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.undo", NULL));
  undone = document_json (window);
  g_assert_cmpstr (undone, ==, before);
  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 0);
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (window), "doc.redo", NULL));
  redone = document_json (window);
  g_assert_cmpstr (redone, ==, after);
}

/* Saved and opened again: the same regions, and the same predicted time. */
static void
check_save_reload (NapkinWindow           *window,
                   const NapkinDerivation *expected)
{
  g_autofree char *path = g_build_filename (tmpdir, "derived.napkin", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  NapkinWindow *again;

  g_assert_true (napkin_window_save_to_file (window, file, &error));
  g_assert_no_error (error);
  again = napkin_window_new (GTK_APPLICATION (app));
  g_assert_true (napkin_window_load_file (again, file, &error));
  g_assert_no_error (error);
  gtk_window_present (GTK_WINDOW (again));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (again));
  check_regions (diagram_of (again), expected);
  g_assert_cmpfloat_with_epsilon (pane_time (again), expected->analyzed_s, 1e-9 * expected->analyzed_s);
  close_window_finalized (again);
  g_unlink (path);
}

static void
test_derive_apply_undo (void)
{
  NapkinWindow *window = import_block ();
  NapkinHistory *history = napkin_window_get_history (window);
  NapkinAnalysisPane *pane = pane_of (window);
  g_autoptr(NapkinDerivation) expected = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  NapkinTileSuggestions *s;
  GtkWidget *apply;
  guint depth;

  g_assert_cmpuint (napkin_diagram_n_regions (diagram_of (window)), ==, 0);
  g_assert_cmpstr (napkin_analysis_pane_get_arch (pane)->id, ==, "h100");
  before = document_json (window);
  depth = napkin_history_get_depth (history);
  /* the numbers a user would check: napkin-cli tune --derive on the same diagram,
   * pinned as tests/perf pins them for the stored import */
  expected = derive_like_the_editor (window);
  g_assert_cmpuint (expected->kernels->len, ==, 11);
  g_assert_cmpfloat_with_epsilon (expected->derived_s * 1e3, 5.0494, 5.0494e-4);
  g_assert_cmpfloat_with_epsilon (expected->unfused_s * 1e3, 8.8280, 8.8280e-4);

  s = open_suggest (window);
  g_assert_null (napkin_tile_suggestions_get_error (s));
  g_assert_cmpuint (napkin_tile_suggestions_get_n_items (s), ==, 0);
  check_shown (s, expected);
  {
    /* the status says how many candidate kernels were priced */
    g_autofree char *priced = g_strdup_printf ("(%u ", expected->candidates);

    g_assert_nonnull (strstr (napkin_tile_suggestions_get_status (s), priced));
  }
  /* deriving changed nothing; the pane previews the derived diagram */
  {
    g_autofree char *now = document_json (window);

    g_assert_cmpstr (now, ==, before);
  }
  g_assert_nonnull (napkin_analysis_pane_get_preview (pane));
  g_assert_cmpfloat_with_epsilon (pane_time (window), expected->analyzed_s, 1e-9 * expected->analyzed_s);
  save_screenshot (window, s);

  /* Apply, as the button does: the whole derivation, one undo step */
  apply = find_named (GTK_WIDGET (s), "suggestions-apply");
  g_assert_true (gtk_widget_is_sensitive (apply));
  g_assert_cmpstr (gtk_button_get_label (GTK_BUTTON (apply)), ==, _("_Apply Derivation"));
  g_signal_emit_by_name (apply, "clicked");
  iterate (50);
  g_assert_false (gtk_widget_get_visible (GTK_WIDGET (s)));
  g_assert_null (napkin_analysis_pane_get_preview (pane));
  g_assert_cmpuint (napkin_history_get_depth (history), ==, depth + 1);
  g_assert_cmpstr (napkin_history_get_undo_label (history), ==, _("Apply Derivation"));
  check_regions (diagram_of (window), expected);
  g_assert_cmpfloat_with_epsilon (pane_time (window), expected->analyzed_s, 1e-9 * expected->analyzed_s);
  after = document_json (window);
  g_assert_cmpstr (after, !=, before);

  check_undo_redo (window, before, after);
  check_regions (diagram_of (window), expected);
  check_save_reload (window, expected);
  /* with regions, Suggest ranks tiles again */
  s = open_suggest (window);
  g_assert_null (napkin_tile_suggestions_get_derivation (s));
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  close_window_finalized (window);
}

/* The plain MLP derives to two kernels that the plan fuses without regions: shown,
 * with nothing to apply. */
static void
test_derive_nothing_to_apply (void)
{
  NapkinWindow *window = open_example_sized (app, "mlp", 1280, 860);
  g_autoptr(NapkinDerivation) expected = derive_like_the_editor (window);
  g_autofree char *before = document_json (window);
  g_autofree char *after = NULL;
  NapkinTileSuggestions *s = open_suggest (window);

  g_assert_cmpuint (expected->kernels->len, ==, 2);
  g_assert_cmpuint (napkin_diagram_n_regions (expected->derived), ==, 0);
  check_shown (s, expected);
  g_assert_false (gtk_widget_is_sensitive (find_named (GTK_WIDGET (s), "suggestions-apply")));
  g_assert_null (napkin_analysis_pane_get_preview (pane_of (window)));
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  after = document_json (window);
  g_assert_cmpstr (after, ==, before);
  close_window_finalized (window);
}

/* A diagram the derivation refuses (an operation's input unwired): Suggest says why,
 * naming the place, and offers nothing to apply. */
static void
test_derive_error (void)
{
  NapkinWindow *window = open_example_sized (app, "mlp", 1280, 860);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;
  NapkinTileSuggestions *s;
  GtkWidget *label;

  g_assert_true (napkin_edit_disconnect (history, "lin2", 0, &error));
  g_assert_no_error (error);
  s = open_suggest (window);
  g_assert_null (napkin_tile_suggestions_get_derivation (s));
  g_assert_nonnull (napkin_tile_suggestions_get_error (s));
  g_test_message ("%s", napkin_tile_suggestions_get_error (s));
  g_assert_nonnull (strstr (napkin_tile_suggestions_get_error (s), "lin2"));
  label = find_named (GTK_WIDGET (s), "suggestions-error");
  g_assert_true (gtk_widget_get_visible (label));
  g_assert_cmpstr (gtk_label_get_text (GTK_LABEL (label)), ==, napkin_tile_suggestions_get_error (s));
  g_assert_false (gtk_widget_is_sensitive (find_named (GTK_WIDGET (s), "suggestions-apply")));
  gtk_popover_popdown (GTK_POPOVER (s));
  iterate (20);
  napkin_window_close_without_asking (window);
  iterate (20);
}

int
main (int    argc,
      char **argv)
{
  int status;

  if (!napkin_app_test_init (&argc, &argv, "napkin-derive-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);

  g_test_add_func ("/derive/imported-block-apply-undo-redo", test_derive_apply_undo);
  g_test_add_func ("/derive/plan-fused-nothing-to-apply", test_derive_nothing_to_apply);
  g_test_add_func ("/derive/refused-diagram-says-why", test_derive_error);
  status = g_test_run ();
  g_rmdir (tmpdir);
  g_object_unref (app);
  return status;
}
