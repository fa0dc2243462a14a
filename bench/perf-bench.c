/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The performance model's own speed (docs/model.md §10): the median time of one full
 * analysis of a 200-operation diagram (target < 2 ms) and of `tune` on the
 * flash-attention example (target < 1 s). Run: bench/perf-bench.sh */
#define _POSIX_C_SOURCE 200809L   /* clock_gettime under -std=c17 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "napkin-test-diagrams.h"
#include "napkin-file.h"
#include "napkin-model.h"
#include "napkin-tune.h"

static int
compare_double (const void *a,
                const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

/* CPU time of this thread, in ms: on a shared machine the wall clock also counts
 * the time other processes hold the core. */
static double
cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static double
median (double *v,
        guint   n)
{
  qsort (v, n, sizeof (double), compare_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main (int    argc,
      char **argv)
{
  const char *arch_id = argc > 1 ? argv[1] : "h100";
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), arch_id, &error);
  g_autofree char *json = napkin_test_deep_mlp_json (100);
  g_autoptr(NapkinDiagram) big = NULL;
  g_autoptr(NapkinDiagram) flash = NULL;
  g_autofree char *flash_path = NULL;
  double times[201], cpu[201];
  guint n_runs = G_N_ELEMENTS (times), n_tune = 11;
  guint ops;

  if (arch == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  big = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  if (big == NULL)
    {
      fprintf (stderr, "generated diagram: %s\n", error->message);
      return 1;
    }
  ops = 0;
  for (guint i = 0; i < napkin_diagram_n_nodes (big); i++)
    {
      NapkinOpKind kind = napkin_diagram_node (big, i)->kind;

      ops += kind != NAPKIN_OP_INPUT && kind != NAPKIN_OP_OUTPUT;
    }

  /* A full analysis as the editor runs it after an edit: the diagram's caches
   * are stale (generation bumped), validation included. */
  for (guint i = 0; i < n_runs; i++)
    {
      gint64 start;
      g_autoptr(NapkinAnalysis) a = NULL;

      double c0;

      napkin_diagram_changed (big);
      start = g_get_monotonic_time ();
      c0 = cpu_ms ();
      a = napkin_analyze (big, arch, NULL, &error);
      cpu[i] = cpu_ms () - c0;
      times[i] = (g_get_monotonic_time () - start) / 1e3;
      if (a == NULL)
        {
          fprintf (stderr, "analysis: %s\n", error->message);
          return 1;
        }
      if (i == 0)
        printf ("deep MLP on %s: %u operations, %u regions, predicted %.3f ms, bound %s, %s\n", arch->id, ops,
                napkin_diagram_n_regions (big), a->predicted_time_s * 1e3, napkin_resource_to_string (a->bound),
                a->feasible ? "feasible" : "infeasible");
    }
  printf ("analysis of a %u-operation diagram: median %.3f ms CPU, %.3f ms wall, over %u runs (target < 2 ms)\n",
          ops, median (cpu, n_runs), median (times, n_runs), n_runs);

  flash_path = g_build_filename (NAPKIN_SOURCE_DATADIR, "examples", "flash-attention.napkin", NULL);
  flash = napkin_diagram_load_from_file (flash_path, NAPKIN_LOAD_VALIDATE, &error);
  if (flash == NULL)
    {
      fprintf (stderr, "%s\n", error->message);
      return 1;
    }
  for (guint i = 0; i < n_tune; i++)
    {
      NapkinTuneOptions options = { 10, 0, FALSE, NAPKIN_DTYPE_FP16 };
      g_autoptr(NapkinTuneResult) r = NULL;
      gint64 start = g_get_monotonic_time ();
      double c0 = cpu_ms ();

      r = napkin_tune (flash, arch, &options, &error);
      cpu[i] = cpu_ms () - c0;
      times[i] = (g_get_monotonic_time () - start) / 1e3;
      if (r == NULL)
        {
          fprintf (stderr, "tune: %s\n", error->message);
          return 1;
        }
      if (i == 0)
        printf ("tune flash-attention on %s: %u relabelings, %u feasible, best %.3f ms (file %.3f ms)\n", arch->id,
                r->evaluated, r->feasible,
                ((NapkinTuneCandidate *) g_ptr_array_index (r->best, 0))->predicted_time_s * 1e3,
                r->current ? r->current->predicted_time_s * 1e3 : 0.0);
    }
  printf ("tune on flash-attention: median %.1f ms CPU, %.1f ms wall, over %u runs (target < 1000 ms)\n",
          median (cpu, n_tune), median (times, n_tune), n_tune);
  return 0;
}
