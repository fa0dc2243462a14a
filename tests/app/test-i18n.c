/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The editor in French under Xvfb (docs/cli.md, "Language"): with LANGUAGE=fr the
 * banner shows why a file is invalid, and the analysis pane the validator's and the
 * performance model's errors and the bound, in French; the region an error names is
 * still found (its "regions[N]" stays as it is). LANGUAGE is set before GTK starts,
 * in the C.UTF-8 locale (gettext ignores LANGUAGE in plain C). */
#include "config.h"

#include <locale.h>
#include <string.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>

#include "napkin-app-test.h"
#include "napkin-analysis-pane.h"
#include "napkin-canvas.h"
#include "napkin-edit.h"

static NapkinApplication *app;
static char *tmpdir;

static void
assert_contains (const char *text,
                 const char *words)
{
  g_test_message ("shown: %s", text ? text : "(nothing)");
  g_assert_nonnull (text);
  if (strstr (text, words) == NULL)
    g_error ("“%s” lacks “%s”", text, words);
}

/* A file the loader refuses: the banner says why in French, the JSON path on its
 * details line. A file that loads but is invalid: the pane says why in French. */
static void
test_banner (void)
{
  g_autofree char *bad = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "bad",
                                           "20-tensor-unknown-axis.napkin", NULL);
  g_autofree char *empty = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "bad",
                                             "50-region-empty.napkin", NULL);
  g_autoptr(GFile) bad_file = g_file_new_for_path (bad);
  g_autoptr(GFile) empty_file = g_file_new_for_path (empty);
  g_autoptr(GError) error = NULL;
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  NapkinAnalysisPane *pane;

  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 820);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  g_assert_false (napkin_window_load_file (window, bad_file, &error));
  g_assert_nonnull (error);
  assert_contains (napkin_window_get_banner_text (window), "axe inconnu « ");
  assert_contains (napkin_window_get_banner_details (window), "Chemin JSON : tensors[0].axes[1]");
  gtk_widget_activate_action (GTK_WIDGET (window), "win.dismiss-banner", NULL);
  g_clear_error (&error);

  g_assert_true (napkin_window_load_file (window, empty_file, &error));
  g_assert_no_error (error);
  iterate (50);
  pane = pane_of (window);
  napkin_analysis_pane_flush (pane);
  assert_contains (napkin_analysis_pane_get_error_text (pane), "La région « block » ne contient aucune opération");
  close_window_finalized (window);
}

/* Streaming the softmax's own axis: the validator's refusal, in French, in the pane. */
static void
test_validation_error (void)
{
  NapkinWindow *window = open_example_sized (app, "softmax", 1280, 820);
  NapkinAnalysisPane *pane = pane_of (window);
  g_autoptr(GError) error = NULL;
  guint n;

  napkin_analysis_pane_flush (pane);
  g_assert_null (napkin_analysis_pane_get_error_text (pane));
  n = napkin_analysis_pane_get_n_updates (pane);
  g_assert_true (napkin_edit_set_mark (napkin_window_get_history (window), "rows", "c", NAPKIN_MARK_STREAM,
                                       1024, &error));
  g_assert_no_error (error);
  wait_for_update (pane, n);
  assert_contains (napkin_analysis_pane_get_error_text (pane), "ne peut pas parcourir c par flux");
  assert_contains (napkin_analysis_pane_get_error_text (pane), "Dans la région « rows », l’opération « sm »");
  close_window_finalized (window);
}

/* Tiles far too large for shared memory: the model's error in French, its region
 * flagged on the canvas and in its own row; the bound's name in French. */
static void
test_model_error (void)
{
  NapkinWindow *window = open_example_sized (app, "matmul-tiled", 1280, 820);
  NapkinAnalysisPane *pane = pane_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;
  guint n;

  napkin_analysis_pane_flush (pane);
  /* the bound's name for people, not the JSON's key word */
  g_assert_cmpstr (napkin_resource_to_label (NAPKIN_RESOURCE_HBM), ==, "mémoire HBM");
  g_assert_cmpstr (napkin_resource_to_label (NAPKIN_RESOURCE_TENSOR), ==, "cœurs tenseurs");
  g_assert_cmpstr (napkin_analysis_pane_get_text (pane, "bound"), ==,
                   napkin_resource_to_label (napkin_analysis_pane_get_analysis (pane)->bound));
  g_assert_false (napkin_canvas_is_region_flagged (napkin_window_get_canvas (window), "block"));

  n = napkin_analysis_pane_get_n_updates (pane);
  napkin_history_begin_group (history, "tiles");
  g_assert_true (napkin_edit_set_mark (history, "block", "m", NAPKIN_MARK_PARALLEL, 1024, &error));
  g_assert_true (napkin_edit_set_mark (history, "block", "n", NAPKIN_MARK_PARALLEL, 1024, &error));
  napkin_history_end_group (history);
  g_assert_no_error (error);
  wait_for_update (pane, n);
  napkin_analysis_pane_flush (pane);

  g_assert_false (napkin_analysis_pane_get_analysis (pane)->feasible);
  assert_contains (napkin_analysis_pane_get_error_text (pane), "regions[0]: demande environ 1056 registres par thread");
  assert_contains (napkin_analysis_pane_get_text (pane, "regions.block.error"), "mémoire partagée");
  g_assert_true (napkin_canvas_is_region_flagged (napkin_window_get_canvas (window), "block"));
  close_window_finalized (window);
}

int
main (int    argc,
      char **argv)
{
  g_autofree char *po = NULL;
  /* before setlocale and GTK, as a user's session would have them */
  g_setenv ("LANG", "C.UTF-8", TRUE);
  g_unsetenv ("LC_ALL");
  g_unsetenv ("LC_MESSAGES");
  g_setenv ("LANGUAGE", "fr", TRUE);
  po = g_build_filename (g_getenv ("NAPKIN_BUILD_DIR"), "po", NULL);
  bindtextdomain (GETTEXT_PACKAGE, po);
  bind_textdomain_codeset (GETTEXT_PACKAGE, "UTF-8");
  if (!napkin_app_test_init (&argc, &argv, "napkin-i18n-XXXXXX", &tmpdir))
    return g_test_run ();
  g_assert_cmpstr (_("Untitled Diagram"), ==, "Diagramme sans titre");
  app = napkin_app_test_register (0);

  g_test_add_func ("/i18n/banner-invalid-file", test_banner);
  g_test_add_func ("/i18n/pane-validation-error", test_validation_error);
  g_test_add_func ("/i18n/pane-model-error-and-bound", test_model_error);
  return napkin_app_test_run (app, tmpdir);
}
