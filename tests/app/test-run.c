/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The code view and the run panel under Xvfb (docs/editor.md). Runs go through
 * tests/runner/fake-runner.sh, a test double for napkin-runner (FAKE_MODE picks
 * ok, recorded, crash, hang): the real runner needs a GPU, and on the GPU machine
 * (no GTK there) napkin-cli run drives the same NapkinRunJob for real. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime under -std=c17 */
#include "config.h"

#include <locale.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <glib/gi18n.h>
#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-app-test.h"
#include "napkin-test-diagrams.h"
#include "napkin-application.h"
#include "napkin-code-view.h"
#include "napkin-codegen.h"
#include "napkin-edit.h"
#include "napkin-file.h"
#include "napkin-run-job.h"
#include "napkin-run-panel.h"
#include "napkin-runs.h"
#include "napkin-arch.h"
#include "napkin-model.h"

static NapkinApplication *app;
static char *tmpdir;

typedef gboolean (*Condition) (gpointer data);

/* Spins the main loop until cond holds; fails after `seconds`. */
static void
wait_until (Condition   cond,
            gpointer    data,
            double      seconds,
            const char *what)
{
  gint64 end = g_get_monotonic_time () + (gint64) (seconds * G_USEC_PER_SEC);

  while (!cond (data))
    {
      if (g_get_monotonic_time () > end)
        g_error ("timed out waiting for %s", what);
      g_main_context_iteration (NULL, FALSE);
      g_usleep (1000);
    }
}

static NapkinWindow *
open_path (const char *path)
{
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;

  g_assert_true (napkin_window_load_file (window, file, &error));
  g_assert_no_error (error);
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 900);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  iterate (30);
  return window;
}

static NapkinWindow *
open_example (const char *name)
{
  g_autofree char *file_name = g_strconcat (name, ".napkin", NULL);
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file_name, NULL);

  return open_path (path);
}

/* With NAPKIN_TEST_SCREENSHOTS=DIR, a PNG of the window with `page` on show. */
static void
save_screenshot (NapkinWindow *window,
                 GtkWidget    *page,
                 const char   *name)
{
  const char *dir = g_getenv ("NAPKIN_TEST_SCREENSHOTS");
  g_autofree char *path = NULL;

  if (dir == NULL)
    return;
  gtk_stack_set_visible_child (GTK_STACK (gtk_widget_get_parent (page)), page);
  iterate (200);
  path = g_build_filename (dir, name, NULL);
  napkin_app_test_screenshot (window, path);
}

/* ---- code view --------------------------------------------------------------------------- */

static NapkinCodeView *
code_view_of (NapkinWindow *window)
{
  GtkWidget *view = napkin_window_get_code_view (window);

  g_assert_nonnull (view);
  return NAPKIN_CODE_VIEW (view);
}

static NapkinWindow *current_window;

static gboolean
code_caught_up (gpointer data)
{
  NapkinCodeView *view = data;

  return napkin_code_view_get_generation (view) == napkin_diagram_get_generation (diagram_of (current_window));
}

/* Selects an architecture in the header, as a user does, and waits for the code view to
 * follow it (the code is the runner's for that GPU). */
static void
select_arch (NapkinWindow   *window,
             NapkinCodeView *view,
             const char     *id)
{
  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
  GtkDropDown *dropdown = find_arch_dropdown (window);
  NapkinArch *arch = napkin_arch_registry_lookup (registry, id, NULL);
  NapkinCodegenFlags want;

  g_assert_nonnull (dropdown);
  g_assert_nonnull (arch);
  for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
    if (napkin_arch_registry_get (registry, i) == arch)
      gtk_drop_down_set_selected (dropdown, i);
  want = napkin_arch_has_wgmma (arch) ? NAPKIN_CODEGEN_SM90A : NAPKIN_CODEGEN_DEFAULT;
  g_assert_cmpint (napkin_code_view_get_codegen_flags (view), ==, want);
  iterate (50);
}

/* The code view follows the selected GPU: Hopper gets the wgmma skeleton (TMA, wgmma), an
 * Ampere GPU the mma.sync one, as the runner would generate on each. */
static void
test_code_view_follows_arch (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinCodeView *view = code_view_of (window);
  g_autofree char *hopper = NULL;
  g_autofree char *ampere = NULL;

  current_window = window;
  select_arch (window, view, "h100");
  for (guint i = 0; i < 2400 && !strstr (napkin_code_view_get_summary (view) ? napkin_code_view_get_summary (view) : "", "gemm-wgmma"); i++)
    iterate (50);
  g_assert_nonnull (strstr (napkin_code_view_get_summary (view), "napkin_k0: gemm-wgmma"));
  hopper = napkin_code_view_dup_text (view);
  g_assert_nonnull (strstr (hopper, "wgmma.mma_async"));
  g_assert_nonnull (strstr (hopper, "cp.async.bulk.tensor"));

  select_arch (window, view, "a100");
  for (guint i = 0; i < 2400 && !strstr (napkin_code_view_get_summary (view) ? napkin_code_view_get_summary (view) : "", "gemm-mma"); i++)
    iterate (50);
  g_assert_nonnull (strstr (napkin_code_view_get_summary (view), "napkin_k0: gemm-mma"));
  ampere = napkin_code_view_dup_text (view);
  g_assert_null (strstr (ampere, "wgmma"));
  g_assert_nonnull (strstr (ampere, "mma.sync"));
  close_window (window);
}

static void
test_code_view_updates (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinCodeView *view = code_view_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *pseudo = NULL;

  current_window = window;
  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (view)));
  select_arch (window, view, "a100");   /* mma.sync: the skeleton every sm_80+ GPU runs */
  wait_until (code_caught_up, view, 30, "the first code");
  before = napkin_code_view_dup_text (view);
  g_assert_nonnull (strstr (before, "__global__"));
  g_assert_nonnull (strstr (before, "napkin_k0"));
  g_assert_nonnull (strstr (before, "#define NKP_K 4096\n"));
  g_assert_nonnull (strstr (napkin_code_view_get_summary (view), "napkin_k0: gemm-mma"));

  /* The edit returns before the code is regenerated: the worker catches up later. */
  g_assert_true (napkin_edit_set_axis_size (history, "k", 2048, &error));
  g_assert_no_error (error);
  g_assert_false (code_caught_up (view));
  wait_until (code_caught_up, view, 30, "the code after the edit");
  after = napkin_code_view_dup_text (view);
  g_assert_cmpstr (before, !=, after);
  g_assert_nonnull (strstr (after, "#define NKP_K 2048\n"));
  g_assert_null (strstr (after, "#define NKP_K 4096\n"));

  napkin_code_view_set_kind (view, NAPKIN_CODE_PSEUDO);
  pseudo = napkin_code_view_dup_text (view);
  g_assert_nonnull (strstr (pseudo, "axes: m=4096 n=4096 k=2048"));
  g_assert_nonnull (strstr (pseudo, "kernel napkin_k0"));

  /* undo: back to the first code */
  g_assert_true (napkin_history_undo (history));
  napkin_code_view_set_kind (view, NAPKIN_CODE_CUDA);
  wait_until (code_caught_up, view, 30, "the code after undo");
  {
    g_autofree char *undone = napkin_code_view_dup_text (view);

    g_assert_cmpstr (undone, ==, before);
  }
  close_window (window);
}

/* A diagram the lowering rejects shows why, and the view recovers after undo. */
static void
test_code_view_error (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinCodeView *view = code_view_of (window);
  NapkinHistory *history = napkin_window_get_history (window);
  g_autoptr(GError) error = NULL;

  current_window = window;
  wait_until (code_caught_up, view, 30, "the first code");
  /* an output that nothing feeds does not validate */
  g_assert_true (napkin_edit_disconnect (history, "c", 0, &error));
  g_assert_no_error (error);
  wait_until (code_caught_up, view, 30, "the code after the edit");
  {
    g_autofree char *text = napkin_code_view_dup_text (view);

    g_assert_true (g_str_has_prefix (napkin_code_view_get_summary (view), "No code for this diagram: "));
    g_assert_nonnull (strstr (napkin_code_view_get_summary (view), "“c”"));
    g_assert_true (g_str_has_prefix (text, "// No code for this diagram: "));
  }
  g_assert_true (napkin_history_undo (history));
  wait_until (code_caught_up, view, 30, "the code after undo");
  g_assert_nonnull (strstr (napkin_code_view_get_summary (view), "napkin_k0: gemm-mma"));
  close_window (window);
}

static double
thread_cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A 10-layer MLP (30 operations, 10 kernels: the CUDA printer takes at most 29
 * device buffers, so not the 200-operation bench diagram): the generator's time
 * in the worker, the main thread's CPU per edit with and without the code view
 * (its share must stay small), and the wall time until the new code shows. */
static void
test_code_view_big_diagram (void)
{
  g_autofree char *json = napkin_test_deep_mlp_json (10);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  NapkinWindow *window = napkin_window_new (GTK_APPLICATION (app));
  NapkinCodeView *view = code_view_of (window);
  NapkinHistory *history;
  double main_ms = 0, wall_ms = 0, gen_ms;
  const guint edits = 5;

  g_assert_no_error (error);
  napkin_window_set_document (window, diagram, NULL);
  gtk_window_present (GTK_WINDOW (window));
  gtk_test_widget_wait_for_draw (GTK_WIDGET (window));
  current_window = window;
  history = napkin_window_get_history (window);
  wait_until (code_caught_up, view, 60, "the first code");
  g_assert_true (g_str_has_prefix (napkin_code_view_get_summary (view), "10 kernels"));
  {
    /* the generator alone, as the worker runs it */
    gint64 start = g_get_monotonic_time ();
    g_autoptr(NapkinIrProgram) program = napkin_ir_lower (diagram, NAPKIN_LOWER_DEFAULT, &error);
    g_autoptr(NapkinCudaModule) module = napkin_codegen_cuda (g_steal_pointer (&program), 0, NULL, &error);
    g_autofree char *pseudo = NULL;

    g_assert_nonnull (module);
    program = napkin_ir_lower (diagram, NAPKIN_LOWER_DEFAULT, &error);
    pseudo = napkin_codegen_pseudocode (program);
    gen_ms = (g_get_monotonic_time () - start) / 1e3;
  }
  for (guint i = 0; i < edits; i++)
    {
      double cpu0 = thread_cpu_ms ();
      gint64 t0 = g_get_monotonic_time ();

      g_assert_true (napkin_edit_set_axis_size (history, "t", 4096 + 1024 * (i % 2), &error));
      g_assert_no_error (error);
      wait_until (code_caught_up, view, 60, "the code after the edit");
      iterate (20);
      main_ms += thread_cpu_ms () - cpu0;
      wall_ms += (g_get_monotonic_time () - t0) / 1e3;
    }
  {
    /* the same edits with the code view detached: its share of the main thread, in
     * the order with, without, without, with, so that a load that rises or falls
     * during the test weighs on both alike */
    double cpu0, with_ms = 0, without_ms = 0;

    for (int pass = 0; pass < 4; pass++)
      {
        const gboolean with = pass == 0 || pass == 3;

        napkin_code_view_set_diagram (view, with ? diagram : NULL);
        iterate (300);
        for (guint i = 0; i < edits; i++)
          {
            cpu0 = thread_cpu_ms ();
            g_assert_true (napkin_edit_set_axis_size (history, "t", 4096 + 1024 * (i % 2), &error));
            iterate (300);
            *(with ? &with_ms : &without_ms) += thread_cpu_ms () - cpu0;
          }
      }
    with_ms /= 2;
    without_ms /= 2;
    g_test_message ("main-thread CPU per edit: %.1f ms with the code view, %.1f ms without",
                    with_ms / edits, without_ms / edits);
    /* the view's share (JSON of the document, new text, highlighting) is small
     * beside the window's; the margin is for a shared, loaded machine, and wider under
     * AddressSanitizer, where GtkSourceView's highlighting of the new text alone took
     * 1.1 s an edit on a loaded 2-core machine (against 0.4 s for the rest) */
#if defined(__SANITIZE_ADDRESS__)
    g_assert_cmpfloat (with_ms / edits, <, 4.0 * without_ms / edits + 20);
#else
    g_assert_cmpfloat (with_ms / edits, <, 1.5 * without_ms / edits + 20);
#endif
    napkin_code_view_set_diagram (view, diagram);
  }
  g_test_message ("10-layer MLP (30 operations): generator %.1f ms in the worker; per edit %.1f ms of main-thread "
                  "CPU (all the window's work, canvas and analysis included), %.1f ms until the code is shown",
                  gen_ms, main_ms / edits, wall_ms / edits);
  close_window (window);
}

typedef struct
{
  gboolean done;
  gboolean ok;
  GError  *error;
} ExportWait;

static void
export_done (GObject      *object,
             GAsyncResult *result,
             gpointer      user_data)
{
  ExportWait *wait = user_data;

  wait->ok = napkin_code_view_export_finish (NAPKIN_CODE_VIEW (object), result, &wait->error);
  wait->done = TRUE;
}

static gboolean
export_finished (gpointer data)
{
  return ((ExportWait *) data)->done;
}

static void
export_to (NapkinCodeView *view,
           NapkinCodeKind  kind,
           const char     *path)
{
  g_autoptr(GFile) file = g_file_new_for_path (path);
  ExportWait wait = { 0 };

  napkin_code_view_export_async (view, kind, file, NULL, export_done, &wait);
  wait_until (export_finished, &wait, 60, "the export");
  g_assert_no_error (wait.error);
  g_assert_true (wait.ok);
}

static void
test_export (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinCodeView *view = code_view_of (window);
  g_autofree char *cu = g_build_filename (tmpdir, "matmul-tiled.cu", NULL);
  g_autofree char *txt = g_build_filename (tmpdir, "matmul-tiled.txt", NULL);
  g_autofree char *exe = g_build_filename (tmpdir, "matmul-tiled", NULL);
  g_autofree char *text = NULL;
  g_autofree char *shown = NULL;
  g_autofree char *nvcc = NULL;
  g_autoptr(GError) error = NULL;

  current_window = window;
  wait_until (code_caught_up, view, 30, "the first code");

  export_to (view, NAPKIN_CODE_PSEUDO, txt);
  g_assert_true (g_file_get_contents (txt, &text, NULL, &error));
  napkin_code_view_set_kind (view, NAPKIN_CODE_PSEUDO);
  shown = napkin_code_view_dup_text (view);
  g_assert_cmpstr (text, ==, shown);
  g_clear_pointer (&text, g_free);

  export_to (view, NAPKIN_CODE_STANDALONE, cu);
  g_assert_true (g_file_get_contents (cu, &text, NULL, &error));
  g_assert_nonnull (strstr (text, "int main"));
  g_assert_nonnull (strstr (text, "napkin_k0"));
  g_assert_nonnull (strstr (text, "napkin_ref_k0"));

  nvcc = g_find_program_in_path ("nvcc");
  if (nvcc == NULL && g_file_test (NAPKIN_TEST_NVCC, G_FILE_TEST_IS_EXECUTABLE))
    nvcc = g_strdup (NAPKIN_TEST_NVCC);
  if (nvcc == NULL)
    g_test_message ("nvcc not found: the exported .cu was not compiled");
  else
    {
      const char *argv[] = { nvcc, "-arch=sm_80", "-o", exe, cu, NULL };
      g_autofree char *out = NULL;
      g_autofree char *err = NULL;
      int status = 0;

      /* a test may block: this is the build check of the exported file */
      g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                                   &error));
      g_assert_no_error (error);
      if (!g_spawn_check_wait_status (status, NULL))
        g_error ("nvcc failed on the exported .cu:\n%s%s", out, err);
      g_assert_true (g_file_test (exe, G_FILE_TEST_IS_EXECUTABLE));
      g_unlink (exe);
    }
  g_unlink (cu);
  g_unlink (txt);
  close_window (window);
}

/* ---- runs through the test double ---------------------------------------------------------- */

/* The test double in place of napkin-runner; the mode goes through env(1), as
 * setenv() is not safe once the code view's worker threads exist. */
static void
set_fake_runner (NapkinRunPanel *panel,
                 const char     *fake_mode)
{
  g_autofree char *fake = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "runner", "fake-runner.sh", NULL);
  g_autofree char *mode = g_strconcat ("FAKE_MODE=", fake_mode, NULL);
  const char *command[] = { "env", mode, "sh", fake, NULL };

  napkin_run_panel_set_runner (panel, command);
}

static NapkinRunPanel *
run_panel_of (NapkinWindow *window,
              const char   *fake_mode)
{
  GtkWidget *panel = napkin_window_get_run_panel (window);

  g_assert_nonnull (panel);
  set_fake_runner (NAPKIN_RUN_PANEL (panel), fake_mode);
  return NAPKIN_RUN_PANEL (panel);
}

static gboolean
run_finished (gpointer data)
{
  return !napkin_run_panel_get_running (data);
}

static gboolean
run_running_kernel (gpointer data)
{
  return g_strcmp0 (napkin_run_panel_get_status (data), "Running the kernel") == 0;
}

static void
test_run_ok (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinRunPanel *panel = run_panel_of (window, "ok");
  NapkinDiagram *diagram = diagram_of (window);
  g_autofree char *table = NULL;
  json_object *shown;

  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, 0);
  /* through the action, as the Run button does */
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "run.start", NULL));
  g_assert_true (napkin_run_panel_get_running (panel));
  wait_until (run_finished, panel, 30, "the fake run");

  g_assert_cmpstr (napkin_run_panel_get_status (panel), ==, "Run finished: 0.5000 ms");
  shown = napkin_run_panel_get_shown_run (panel);
  g_assert_nonnull (shown);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (shown, "status")), ==, "ok");
  /* the options reached the runner */
  g_assert_nonnull (strstr (json_object_get_string (json_object_object_get (shown, "args")), "--repeats=20"));
  table = napkin_run_panel_dup_table_text (panel);
  g_assert_nonnull (strstr (table, "Time\t—\t0.5000 ms\n"));
  g_assert_nonnull (strstr (table, "Status\t—\tok\n"));

  /* kept with the document, which now has something to save */
  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, 1);
  g_assert_true (napkin_history_get_modified (napkin_window_get_history (window)));
  g_assert_nonnull (strstr (gtk_window_get_title (GTK_WINDOW (window)), "• "));
  g_assert_true (json_object_array_get_idx (napkin_diagram_get_runs (diagram), 0) == shown);
  close_window (window);
}

/* A result recorded from the real runner on an H200: the table shows its numbers
 * and the model's prediction for that GPU. */
static void
test_run_recorded (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinRunPanel *panel = run_panel_of (window, "recorded");
  g_autofree char *table = NULL;
  json_object *shown;

  napkin_run_panel_run (panel);
  wait_until (run_finished, panel, 30, "the fake run");
  table = napkin_run_panel_dup_table_text (panel);
  g_test_message ("%s", table);
  g_assert_nonnull (strstr (table, "0.5586 ms (median of 20, 0.5552–0.5623)"));
  g_assert_nonnull (strstr (table, "\t246.03 TFLOP/s\n"));
  g_assert_nonnull (strstr (table, "\t180.2 GB/s\n"));
  g_assert_nonnull (strstr (table, "NVIDIA H200 (sm_90a, driver 13.0)"));
  g_assert_nonnull (strstr (table, "0.000546 (bound 0.01): ok"));
  g_assert_nonnull (strstr (table, "Plain fp32 reference\t—\t26.6815 ms\n"));
  g_assert_nonnull (strstr (table, "Kernel napkin_k0 (gemm-mma)\t1024 blocks × 256 threads\t126 registers, 107520 B shared, 0 B spilled\n"));
  shown = napkin_run_panel_get_shown_run (panel);
  save_screenshot (window, GTK_WIDGET (panel), "run-panel.png");
  {
    NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", NULL);
    g_autoptr(NapkinAnalysis) analysis = napkin_analyze (diagram_of (window), arch, NULL, NULL);
    g_autofree char *row = NULL;
    g_autofree char *ratio = NULL;
    double pred_ms;

    g_assert_nonnull (analysis);
    pred_ms = analysis->predicted_time_s * 1e3;
    row = g_strdup_printf ("Time\t%.4f ms\t", pred_ms);
    g_assert_nonnull (strstr (table, row));
    ratio = g_strdup_printf ("Measured / predicted\t—\t%.2f\n", 0.5586240291595459 / pred_ms);
    g_assert_nonnull (strstr (table, ratio));
    g_assert_cmpfloat_with_epsilon (json_object_get_double (json_object_object_get (
                                      json_object_object_get (shown, "prediction"), "time_ms")), pred_ms, 1e-12);
    g_assert_cmpint (json_object_get_int64 (json_object_object_get (json_object_object_get (json_object_object_get (
                       json_object_object_get (shown, "prediction"), "levels"), "hbm"), "transfer_bytes")),
                     ==, analysis->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
  }
  close_window (window);
}

/* A result of the real runner on an H200 (napkin-cli run --json flash-attention,
 * 2026-11-22, prediction removed): the panel adds the model's own. */
static void
test_run_real_h200_result (void)
{
  NapkinWindow *window = open_example ("flash-attention");
  NapkinRunPanel *panel = NAPKIN_RUN_PANEL (napkin_window_get_run_panel (window));
  g_autofree char *fixture = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "app",
                                               "run-h200-flash-attention.json", NULL);
  /* the runner's protocol by hand: a progress line, then the recorded JSON */
  const char *command[] = { "sh", "-c", "echo 'progress 1.00 Done' >&2; cat \"$0\"", fixture, NULL };
  g_autofree char *table = NULL;

  napkin_run_panel_set_runner (panel, command);
  napkin_run_panel_run (panel);
  wait_until (run_finished, panel, 30, "the recorded run");
  table = napkin_run_panel_dup_table_text (panel);
  g_test_message ("%s", table);
  g_assert_nonnull (strstr (table, "\t2.5288 ms (median of 20, 2.5271–2.5443)\n"));
  g_assert_nonnull (strstr (table, "\t219.95 TFLOP/s\n"));
  g_assert_nonnull (strstr (table, "Kernel napkin_k0 (flash-mma)\t2048 blocks × 256 threads\t175 registers, 104448 B shared, 0 B spilled\n"));
  g_assert_nonnull (strstr (table, "Plain fp32 reference\t—\t"));
  {
    NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", NULL);
    g_autoptr(NapkinAnalysis) analysis = napkin_analyze (diagram_of (window), arch, NULL, NULL);
    g_autofree char *row = g_strdup_printf ("Time\t%.4f ms\t", analysis->predicted_time_s * 1e3);

    g_assert_nonnull (strstr (table, row));
  }
  save_screenshot (window, GTK_WIDGET (panel), "run-panel-h200-flash-attention.png");
  close_window (window);
}

static gboolean ticked;

static gboolean
tick_cb (gpointer data)
{
  ticked = TRUE;
  return G_SOURCE_REMOVE;
}

static void
run_failing (const char *mode,
             const char *status,
             gboolean    stuck)
{
  NapkinWindow *window = open_example ("softmax");
  NapkinRunPanel *panel = run_panel_of (window, mode);
  NapkinDiagram *diagram = diagram_of (window);
  g_autofree char *expected = g_strdup_printf ("Run failed (%s): ", status);
  g_autofree char *table = NULL;
  gint64 start;

  napkin_run_panel_set_timeout (panel, 2);
  start = g_get_monotonic_time ();
  napkin_run_panel_run (panel);
  /* the window stays responsive: the main loop runs while the child is stuck */
  ticked = FALSE;
  g_timeout_add (100, tick_cb, NULL);
  if (stuck)
    {
      wait_until (run_running_kernel, panel, 10, "the progress line");
      while (!ticked)
        g_main_context_iteration (NULL, TRUE);
      g_assert_true (napkin_run_panel_get_running (panel));
    }
  g_assert_true (gtk_widget_get_mapped (GTK_WIDGET (window)));
  wait_until (run_finished, panel, 30, "the failed run");
  g_assert_cmpint (g_get_monotonic_time () - start, <, 20 * G_USEC_PER_SEC);

  g_assert_true (g_str_has_prefix (napkin_run_panel_get_status (panel), expected));
  table = napkin_run_panel_dup_table_text (panel);
  g_assert_nonnull (strstr (table, "Status\t—\t"));
  g_assert_nonnull (strstr (table, status));
  /* a failed run is still a run of this document */
  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, 1);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (napkin_run_panel_get_shown_run (panel), "status")),
                   ==, status);
  /* and the panel can run again */
  g_assert_true (gtk_widget_is_sensitive (GTK_WIDGET (panel)));
  set_fake_runner (panel, "ok");
  napkin_run_panel_run (panel);
  wait_until (run_finished, panel, 30, "the next run");
  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, 2);
  close_window (window);
}

static void
test_run_crash (void)
{
  run_failing ("crash", "crashed", FALSE);
}

static void
test_run_hang (void)
{
  run_failing ("hang", "timeout", TRUE);
}

static void
test_run_cancel (void)
{
  NapkinWindow *window = open_example ("softmax");
  NapkinRunPanel *panel = run_panel_of (window, "hang");
  gint64 start;

  napkin_run_panel_run (panel);
  wait_until (run_running_kernel, panel, 10, "the progress line");
  g_assert_true (napkin_run_panel_get_running (panel));
  start = g_get_monotonic_time ();
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "run.cancel", NULL));
  wait_until (run_finished, panel, 10, "the cancellation");
  g_assert_cmpint (g_get_monotonic_time () - start, <, 5 * G_USEC_PER_SEC);
  g_assert_cmpstr (napkin_run_panel_get_status (panel), ==, "Run cancelled");
  g_assert_cmpuint (napkin_diagram_n_runs (diagram_of (window)), ==, 0);

  /* closing the window mid-run stops the child; the late answer touches nothing */
  napkin_run_panel_run (panel);
  wait_until (run_running_kernel, panel, 10, "the progress line");
  g_object_ref (panel);
  close_window (window);
  wait_until (run_finished, panel, 10, "the run of a closed window");
  g_object_unref (panel);
}

/* The history keeps the newest NAPKIN_RUNS_MAX runs and the file's other root fields. */
static void
test_runs_cap (void)
{
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_new ();
  g_autoptr(NapkinDiagram) copy = NULL;
  json_object *extra = json_object_new_object ();

  json_object_object_add (extra, "x_tool", json_object_new_string ("kept"));
  napkin_diagram_set_extra (diagram, extra);
  json_object_put (extra);
  copy = napkin_diagram_copy (diagram);
  for (int i = 0; i < NAPKIN_RUNS_MAX + 5; i++)
    {
      json_object *run = json_object_new_object ();

      json_object_object_add (run, "n", json_object_new_int (i));
      napkin_diagram_add_run (diagram, run);
      json_object_put (run);
    }
  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, NAPKIN_RUNS_MAX);
  g_assert_cmpint (json_object_get_int (json_object_object_get (
                     json_object_array_get_idx (napkin_diagram_get_runs (diagram), 0), "n")), ==, 5);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (napkin_diagram_get_extra (diagram), "x_tool")),
                   ==, "kept");
  /* copies share the old extra, which adding a run must not change */
  g_assert_cmpuint (napkin_diagram_n_runs (copy), ==, 0);
  {
    g_autoptr(NapkinHistory) history = napkin_history_new (diagram);

    g_assert_false (napkin_history_get_modified (history));
    napkin_history_set_unsaved (history);
    g_assert_true (napkin_history_get_modified (history));
    napkin_history_set_saved (history);
    g_assert_false (napkin_history_get_modified (history));
  }
  napkin_diagram_clear_runs (diagram);
  g_assert_cmpuint (napkin_diagram_n_runs (diagram), ==, 0);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (napkin_diagram_get_extra (diagram), "x_tool")),
                   ==, "kept");
}

/* The real napkin-runner: here (no GPU) it says so and nothing joins the
 * history; where a driver and GPU exist the run goes through for real. */
static void
test_real_runner (void)
{
  g_autofree char *runner = napkin_run_job_find_runner ();
  NapkinWindow *window;
  NapkinRunPanel *panel;
  const char *status;

  if (runner == NULL)
    {
      g_test_skip ("napkin-runner is not built (no CUDA toolkit)");
      return;
    }
  window = open_example ("softmax");
  panel = NAPKIN_RUN_PANEL (napkin_window_get_run_panel (window));
  napkin_run_panel_run (panel);
  wait_until (run_finished, panel, 120, "the real runner");
  status = json_object_get_string (json_object_object_get (napkin_run_panel_get_shown_run (panel), "status"));
  g_test_message ("real runner: %s", napkin_run_panel_get_status (panel));
  if (g_strcmp0 (status, "no-gpu") == 0)
    {
      g_autofree char *table = napkin_run_panel_dup_table_text (panel);

      /* said in words, the loader's message only in the tooltip; the model's
       * prediction is shown all the same */
      g_assert_true (g_str_has_prefix (napkin_run_panel_get_status (panel), "No NVIDIA GPU or driver"));
      g_assert_null (strstr (napkin_run_panel_get_status (panel), "libcuda"));
      g_assert_null (strstr (napkin_run_panel_get_status (panel), ".so"));
      g_test_message ("table: %s", table);
      g_assert_nonnull (json_object_object_get (napkin_run_panel_get_shown_run (panel), "prediction"));
      g_assert_nonnull (strstr (table, " ms"));
      g_assert_cmpuint (napkin_diagram_n_runs (diagram_of (window)), ==, 0);
    }
  else
    {
      g_assert_cmpstr (status, ==, "ok");
      g_assert_cmpuint (napkin_diagram_n_runs (diagram_of (window)), ==, 1);
    }
  close_window (window);
}

/* Runs are saved with the document and come back with it. */
static void
test_runs_saved (void)
{
  NapkinWindow *window = open_example ("matmul-tiled");
  NapkinRunPanel *panel = run_panel_of (window, "recorded");
  g_autofree char *path = g_build_filename (tmpdir, "with-runs.napkin", NULL);
  g_autoptr(GFile) file = g_file_new_for_path (path);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) loaded = NULL;
  g_autofree char *table_before = NULL;
  g_autofree char *table_after = NULL;

  for (int i = 0; i < 2; i++)
    {
      napkin_run_panel_run (panel);
      wait_until (run_finished, panel, 30, "the fake run");
    }
  table_before = napkin_run_panel_dup_table_text (panel);
  g_assert_true (napkin_history_get_modified (napkin_window_get_history (window)));
  g_assert_true (napkin_window_save_to_file (window, file, &error));
  g_assert_no_error (error);
  g_assert_false (napkin_history_get_modified (napkin_window_get_history (window)));
  close_window (window);

  loaded = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  g_assert_cmpuint (napkin_diagram_n_runs (loaded), ==, 2);
  g_assert_cmpfloat (json_object_get_double (json_object_object_get (json_object_object_get (
                       json_object_array_get_idx (napkin_diagram_get_runs (loaded), 1), "time_ms"), "median")),
                     ==, 0.5586240291595459);

  window = open_path (path);
  panel = NAPKIN_RUN_PANEL (napkin_window_get_run_panel (window));
  g_assert_nonnull (napkin_run_panel_get_shown_run (panel));
  table_after = napkin_run_panel_dup_table_text (panel);
  g_assert_cmpstr (table_after, ==, table_before);

  /* clearing the history is a change to save */
  g_assert_false (napkin_history_get_modified (napkin_window_get_history (window)));
  g_assert_true (gtk_widget_activate_action (GTK_WIDGET (panel), "run.clear-history", NULL));
  g_assert_cmpuint (napkin_diagram_n_runs (diagram_of (window)), ==, 0);
  g_assert_null (napkin_run_panel_get_shown_run (panel));
  g_assert_true (napkin_history_get_modified (napkin_window_get_history (window)));
  close_window (window);
  g_unlink (path);
}

int
main (int    argc,
      char **argv)
{
  if (!napkin_app_test_init (&argc, &argv, "napkin-run-XXXXXX", &tmpdir))
    return g_test_run ();
  app = napkin_app_test_register (0);

  g_test_add_func ("/run/code-view/updates-after-edit", test_code_view_updates);
  g_test_add_func ("/run/code-view/follows-architecture", test_code_view_follows_arch);
  g_test_add_func ("/run/code-view/lowering-error", test_code_view_error);
  g_test_add_func ("/run/code-view/export", test_export);
  g_test_add_func ("/run/code-view/deep-mlp-off-main-thread", test_code_view_big_diagram);
  g_test_add_func ("/run/fake-runner/ok", test_run_ok);
  g_test_add_func ("/run/fake-runner/recorded-h200", test_run_recorded);
  g_test_add_func ("/run/recorded/h200-flash-attention", test_run_real_h200_result);
  g_test_add_func ("/run/fake-runner/crash", test_run_crash);
  g_test_add_func ("/run/fake-runner/hang", test_run_hang);
  g_test_add_func ("/run/fake-runner/cancel", test_run_cancel);
  g_test_add_func ("/run/real-runner", test_real_runner);
  g_test_add_func ("/run/history/saved-with-document", test_runs_saved);
  g_test_add_func ("/run/history/cap-and-other-fields", test_runs_cap);
  return napkin_app_test_run (app, tmpdir);
}
