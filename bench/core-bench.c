/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Times loading and validating a large diagram (issue 2: 2,000 operations in under
 * 50 ms). Builds the file in memory: a chain of attention-like blocks, each with a
 * shared-memory region, so every check of the validator has work to do.
 * Usage: core-bench [N_OPERATIONS] [REPEATS] */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>

#include "napkin-file.h"
#include "napkin-validate.h"

static int
compare_doubles (const void *a,
                 const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;
  return (x > y) - (x < y);
}

/* Each block: S = X·W (contract over d), softmax over j, Y = S·V (contract over j), + X. */
static GString *
make_diagram (guint n_ops)
{
  GString *s = g_string_new (NULL);
  guint n_blocks = MAX (1, (n_ops - 1) / 6);
  guint nodes = 0;

  g_string_append (s, "{\"format\": \"napkin\", \"version\": 1, \"title\": \"bench\",\n"
                      "\"axes\": [{\"name\": \"t\", \"size\": 4096}, {\"name\": \"d\", \"size\": 128},"
                      " {\"name\": \"j\", \"size\": 4096}],\n"
                      "\"tensors\": [{\"name\": \"X\", \"axes\": [\"t\", \"d\"], \"dtype\": \"fp16\"},"
                      " {\"name\": \"W\", \"axes\": [\"j\", \"d\"], \"dtype\": \"fp16\"},"
                      " {\"name\": \"V\", \"axes\": [\"j\", \"d\"], \"dtype\": \"fp16\"},"
                      " {\"name\": \"Y\", \"axes\": [\"t\", \"d\"], \"dtype\": \"fp16\"}],\n\"nodes\": [\n");
  g_string_append (s, "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0},\n"
                      "{\"id\": \"w\", \"kind\": \"input\", \"tensor\": \"W\", \"x\": 0, \"y\": 100},\n"
                      "{\"id\": \"v\", \"kind\": \"input\", \"tensor\": \"V\", \"x\": 0, \"y\": 200},\n");
  nodes = 3;
  for (guint b = 0; b < n_blocks; b++)
    {
      g_string_append_printf (s,
        "{\"id\": \"s%u\", \"kind\": \"contract\", \"out\": [\"t\", \"j\"], \"x\": %u, \"y\": 0},\n"
        "{\"id\": \"c%u\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": 0.125, \"x\": %u, \"y\": 0},\n"
        "{\"id\": \"p%u\", \"kind\": \"softmax\", \"axis\": \"j\", \"x\": %u, \"y\": 0},\n"
        "{\"id\": \"o%u\", \"kind\": \"contract\", \"out\": [\"t\", \"d\"], \"x\": %u, \"y\": 0},\n"
        "{\"id\": \"r%u\", \"kind\": \"map\", \"fn\": \"add\", \"x\": %u, \"y\": 0},\n"
        "{\"id\": \"g%u\", \"kind\": \"map\", \"fn\": \"gelu\", \"x\": %u, \"y\": 0},\n",
        b, b * 600 + 100, b, b * 600 + 200, b, b * 600 + 300, b, b * 600 + 400, b, b * 600 + 500,
        b, b * 600 + 600);
      nodes += 6;
    }
  g_string_append (s, "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 0, \"y\": 300}\n],\n\"wires\": [\n");
  nodes++;

  for (guint b = 0; b < n_blocks; b++)
    {
      g_autofree char *prev = b == 0 ? g_strdup ("x") : g_strdup_printf ("g%u", b - 1);

      g_string_append_printf (s,
        "{\"from\": \"%s\", \"to\": \"s%u\", \"port\": 0}, {\"from\": \"w\", \"to\": \"s%u\", \"port\": 1},\n"
        "{\"from\": \"s%u\", \"to\": \"c%u\", \"port\": 0}, {\"from\": \"c%u\", \"to\": \"p%u\", \"port\": 0},\n"
        "{\"from\": \"p%u\", \"to\": \"o%u\", \"port\": 0}, {\"from\": \"v\", \"to\": \"o%u\", \"port\": 1},\n"
        "{\"from\": \"o%u\", \"to\": \"r%u\", \"port\": 0}, {\"from\": \"%s\", \"to\": \"r%u\", \"port\": 1},\n"
        "{\"from\": \"r%u\", \"to\": \"g%u\", \"port\": 0},\n",
        prev, b, b, b, b, b, b, b, b, b, b, b, prev, b, b, b);
    }
  g_string_append_printf (s, "{\"from\": \"g%u\", \"to\": \"y\", \"port\": 0}\n],\n\"regions\": [\n", n_blocks - 1);

  /* Every other block is relabeled: the format allows at most 256 regions. */
  for (guint b = 0; b < n_blocks; b += 2)
    g_string_append_printf (s,
      "{\"name\": \"block%u\", \"level\": \"smem\", \"nodes\": [\"s%u\", \"c%u\", \"p%u\", \"o%u\"],"
      " \"marks\": {\"t\": {\"parallel\": 128}, \"j\": {\"stream\": 64}, \"d\": \"whole\"}, \"stages\": 2}%s\n",
      b, b, b, b, b, b + 2 < n_blocks ? "," : "");
  g_string_append (s, "]}\n");

  g_printerr ("diagram: %u operations, %u regions, %zu bytes\n", nodes, (n_blocks + 1) / 2, s->len);
  return s;
}

int
main (int    argc,
      char **argv)
{
  guint n_ops = argc > 1 ? atoi (argv[1]) : 2000;
  guint repeats = argc > 2 ? atoi (argv[2]) : 30;
  g_autoptr(GString) text = make_diagram (n_ops);
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
