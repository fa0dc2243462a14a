/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Times loading and validating a large diagram (target: 2,000 operations in under
 * 50 ms). Builds the file in memory: a chain of attention-like blocks, each with a
 * shared-memory region, so every check of the validator has work to do.
 * Usage: core-bench [N_OPERATIONS] [REPEATS] */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "napkin-file.h"
#include "napkin-test-diagrams.h"
#include "napkin-validate.h"

static int
compare_doubles (const void *a,
                 const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

int
main (int    argc,
      char **argv)
{
  guint n_ops = argc > 1 ? atoi (argv[1]) : 2000;
  guint repeats = argc > 2 ? atoi (argv[2]) : 30;
  g_autoptr(GString) text = napkin_test_attention_chain_json (n_ops);
  g_autofree double *times = g_new (double, repeats);

  for (guint i = 0; i < repeats; i++)
    {
      g_autoptr(GError) error = NULL;
      gint64 start = g_get_monotonic_time ();
      g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_data (text->str, text->len,
                                                                        NAPKIN_LOAD_VALIDATE, &error);

      times[i] = (g_get_monotonic_time () - start) / 1000.0;
      if (diagram == NULL)
        {
          g_printerr ("load failed: %s\n", error->message);
          return 1;
        }
    }

  qsort (times, repeats, sizeof (double), compare_doubles);
  printf ("%-40s %10s %10s %10s %8s\n", "benchmark", "median ms", "min ms", "max ms", "target");
  printf ("%-40s %10.2f %10.2f %10.2f %8s\n", "load + validate, 2000-operation diagram",
          times[repeats / 2], times[0], times[repeats - 1], "< 50 ms");
  return 0;
}
