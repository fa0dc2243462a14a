/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The live analysis pane's speed (docs/analysis-pane.md): from an edit of a 200-operation
 * diagram (a tile size, through the undo stack as the inspector makes it) to the
 * pane showing the new numbers, and the model alone on the same diagram.
 * Targets: edit → updated pane < 5 ms, model < 2 ms. Needs a display:
 * bench/pane-bench.sh runs it under xvfb-run. */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime under -std=c17 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "napkin-test-diagrams.h"
#include "napkin-analysis-pane.h"
#include "napkin-application.h"
#include "napkin-edit.h"
#include "napkin-explain.h"
#include "napkin-file.h"

#define RUNS 201

static int
compare_double (const void *a,
                const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

static double
median (double *v,
        guint   n)
{
  qsort (v, n, sizeof (double), compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double
cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void
iterate (guint ms)
{
  gint64 end = g_get_monotonic_time () + ms * 1000;

  while (g_get_monotonic_time () < end)
    g_main_context_iteration (NULL, FALSE);
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *json = napkin_test_deep_mlp_json (100);
  NapkinDiagram *diagram;
  NapkinApplication *app;
  NapkinWindow *window;
  NapkinAnalysisPane *pane;
  NapkinHistory *history;
  NapkinArch *arch;
  double pane_cpu[RUNS], pane_wall[RUNS], frame_wall[RUNS], model_cpu[RUNS];
  guint ops = 0, shown_ok = 0;
  /* --hide-pane: the same edits and frames with the pane unmapped, to tell its
   * share of the frame from the canvas's and the inspector's */
  gboolean hide_pane = argc > 1 && g_str_equal (argv[1], "--hide-pane");

  if (!gtk_init_check ())
    {
      fprintf (stderr, "pane-bench: no display (run bench/pane-bench.sh, which uses xvfb-run)\n");
      return 1;
    }
  adw_init ();
  app = napkin_application_new ();
  g_application_set_flags (G_APPLICATION (app), G_APPLICATION_NON_UNIQUE);
  if (!g_application_register (G_APPLICATION (app), NULL, &error))
    {
      fprintf (stderr, "pane-bench: %s\n", error->message);
      return 1;
    }

  diagram = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  if (diagram == NULL)
    {
      fprintf (stderr, "generated diagram: %s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < napkin_diagram_n_nodes (diagram); i++)
    ops += napkin_diagram_node (diagram, i)->kind != NAPKIN_OP_INPUT
           && napkin_diagram_node (diagram, i)->kind != NAPKIN_OP_OUTPUT;

  window = napkin_window_new (GTK_APPLICATION (app));
  napkin_window_set_document (window, diagram, NULL);
  g_object_unref (diagram);
  gtk_window_set_default_size (GTK_WINDOW (window), 1280, 820);
  gtk_window_present (GTK_WINDOW (window));
  iterate (300);
  pane = NAPKIN_ANALYSIS_PANE (napkin_window_get_analysis_pane (window));
  history = napkin_window_get_history (window);
  napkin_analysis_pane_flush (pane);
  arch = napkin_analysis_pane_get_arch (pane);
  if (hide_pane)
    {
      gtk_widget_set_visible (gtk_widget_get_parent (GTK_WIDGET (pane)), FALSE);
      iterate (100);
    }

  for (guint i = 0; i < RUNS; i++)
    {
      gint64 start;
      double c0;
      guint n = napkin_analysis_pane_get_n_updates (pane);
      g_autofree char *region = g_strdup_printf ("layer%u", 50 + i % 40);

      /* An edit as the inspector makes it, then the pane's update: the analysis
       * and the rows' new text. */
      start = g_get_monotonic_time ();
      c0 = cpu_ms ();
      if (!napkin_edit_set_mark (history, region, "t", NAPKIN_MARK_PARALLEL, i % 2 ? 128 : 64, &error))
        {
          fprintf (stderr, "edit: %s\n", error->message);
          return 1;
        }
      napkin_analysis_pane_flush (pane);
      pane_cpu[i] = cpu_ms () - c0;
      pane_wall[i] = (g_get_monotonic_time () - start) / 1e3;
      if (napkin_analysis_pane_get_n_updates (pane) != n + 1)
        {
          fprintf (stderr, "pane-bench: the pane did not update once per edit\n");
          return 1;
        }
      {
        const NapkinAnalysis *a = napkin_analysis_pane_get_analysis (pane);
        g_autofree char *bytes = napkin_format_int (a->levels[NAPKIN_LEVEL_HBM].transfer_bytes);
        const char *shown = napkin_analysis_pane_get_text (pane, "levels.hbm.bytes");

        shown_ok += shown && g_str_has_prefix (shown, bytes);
      }
      /* then GTK lays out and draws the frame that shows it */
      start = g_get_monotonic_time ();
      while (g_main_context_iteration (NULL, FALSE))
        ;
      frame_wall[i] = (g_get_monotonic_time () - start) / 1e3;

      /* the model alone, on the same diagram, its caches stale as after an edit */
      napkin_diagram_changed (napkin_history_get_diagram (history));
      c0 = cpu_ms ();
      {
        g_autoptr(NapkinAnalysis) a = napkin_analyze (napkin_history_get_diagram (history), arch, NULL, &error);

        model_cpu[i] = cpu_ms () - c0;
        if (a == NULL)
          {
            fprintf (stderr, "analysis: %s\n", error->message);
            return 1;
          }
      }
    }

  printf ("deep MLP: %u operations, %u regions, on %s; %u of %u updates showed the model's HBM bytes\n", ops,
          napkin_diagram_n_regions (napkin_history_get_diagram (history)), arch->id, shown_ok, RUNS);
  printf ("edit → updated pane (edit, analysis, rows): median %.3f ms CPU, %.3f ms wall (target < 5 ms)\n",
          median (pane_cpu, RUNS), median (pane_wall, RUNS));
  printf ("model alone:                               median %.3f ms CPU (target < 2 ms)\n", median (model_cpu, RUNS));
  printf ("then the main loop until idle (canvas, inspector%s; layout and drawing): median %.3f ms wall\n",
          hide_pane ? ", pane hidden" : ", pane", median (frame_wall, RUNS));
  gtk_window_destroy (GTK_WINDOW (window));
  iterate (50);
  g_object_unref (app);
  return shown_ok == RUNS ? 0 : 1;
}
