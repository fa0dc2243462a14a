/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Large diagrams made in memory, shared by the tests and the benchmarks so that they
 * measure the same thing. */
#include "config.h"

#include "napkin-test-diagrams.h"

/* `layers` layers of X·W then GELU, alternating e→f and f→e, each layer relabeled
 * onto shared memory: with 100 layers, 200 operations, 100 regions, 102 inputs and outputs. */
char *
napkin_test_deep_mlp_json (guint layers)
{
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"title\": \"Deep MLP\", "
                             "\"axes\": [{\"name\": \"t\", \"size\": 8192}, {\"name\": \"e\", \"size\": 1024}, "
                             "{\"name\": \"f\", \"size\": 4096}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"t\", \"e\"], "
                             "\"dtype\": \"bf16\"}");
  const char *last = layers % 2 ? "f" : "e";

  for (guint i = 0; i < layers; i++)
    g_string_append_printf (s, ", {\"name\": \"W%u\", \"axes\": [\"%s\", \"%s\"], \"dtype\": \"bf16\"}", i,
                            i % 2 ? "f" : "e", i % 2 ? "e" : "f");
  g_string_append_printf (s, ", {\"name\": \"Y\", \"axes\": [\"t\", \"%s\"], \"dtype\": \"bf16\"}], \"nodes\": ["
                             "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}", last);
  for (guint i = 0; i < layers; i++)
    g_string_append_printf (s, ", {\"id\": \"w%u\", \"kind\": \"input\", \"tensor\": \"W%u\", \"x\": %u, \"y\": 200}"
                               ", {\"id\": \"lin%u\", \"kind\": \"contract\", \"out\": [\"t\", \"%s\"], \"x\": %u, \"y\": 0}"
                               ", {\"id\": \"act%u\", \"kind\": \"map\", \"fn\": \"gelu\", \"x\": %u, \"y\": 0}",
                            i, i, 200 * i, i, i % 2 ? "e" : "f", 200 * i + 50, i, 200 * i + 100);
  g_string_append (s, ", {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 0, \"y\": 400}], \"wires\": [");
  for (guint i = 0; i < layers; i++)
    {
      g_autofree char *prev = i == 0 ? g_strdup ("x") : g_strdup_printf ("act%u", i - 1);

      g_string_append_printf (s, "%s{\"from\": \"%s\", \"to\": \"lin%u\", \"port\": 0}, "
                                 "{\"from\": \"w%u\", \"to\": \"lin%u\", \"port\": 1}, "
                                 "{\"from\": \"lin%u\", \"to\": \"act%u\", \"port\": 0}",
                              i ? ", " : "", prev, i, i, i, i, i);
    }
  g_string_append_printf (s, ", {\"from\": \"act%u\", \"to\": \"y\", \"port\": 0}], \"regions\": [", layers - 1);
  for (guint i = 0; i < layers; i++)
    g_string_append_printf (s, "%s{\"name\": \"layer%u\", \"level\": \"smem\", \"nodes\": [\"lin%u\", \"act%u\"], "
                               "\"marks\": {\"t\": {\"parallel\": 128}, \"%s\": {\"parallel\": 128}, "
                               "\"%s\": {\"stream\": 64}}, \"stages\": 2}",
                            i ? ", " : "", i, i, i, i % 2 ? "e" : "f", i % 2 ? "f" : "e");
  g_string_append (s, "]}");
  return g_string_free (s, FALSE);
}

/* Each block: S = X·W (contract over d), softmax over j, Y = S·V (contract over j), + X. */
GString *
napkin_test_attention_chain_json (guint n_ops)
{
  GString *s = g_string_new (NULL);
  guint n_blocks = MAX (1, (n_ops - 1) / 6);

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
    }
  g_string_append (s, "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 0, \"y\": 300}\n],\n\"wires\": [\n");

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

  return s;
}


GString *
napkin_test_map_chain_json (guint    n_maps,
                            gboolean region,
                            gsize    pad)
{
  static const char *fns[] = { "relu", "exp", "scale", "gelu" };
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"title\": \"Chain of maps\", "
                             "\"axes\": [{\"name\": \"r\", \"size\": 4096}, {\"name\": \"c\", \"size\": 256}], "
                             "\"tensors\": [{\"name\": \"X\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}, "
                             "{\"name\": \"Y\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}], \"nodes\": ["
                             "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}");
  g_autofree char *label = g_strnfill (pad, 'l');

  for (guint i = 0; i < n_maps; i++)
    g_string_append_printf (s, ", {\"id\": \"n%u\", \"kind\": \"map\", \"fn\": \"%s\", \"label\": \"%s\", "
                               "\"x\": %u, \"y\": %u}",
                            i, fns[i % G_N_ELEMENTS (fns)], label, 100 + 120 * (i % 1000), 120 * (i / 1000));
  g_string_append_printf (s, ", {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 0, \"y\": %u}], "
                             "\"wires\": [", 120 * (n_maps / 1000 + 1));
  for (guint i = 0; i <= n_maps; i++)
    {
      g_autofree char *from = i == 0 ? g_strdup ("x") : g_strdup_printf ("n%u", i - 1);
      g_autofree char *to = i == n_maps ? g_strdup ("y") : g_strdup_printf ("n%u", i);

      g_string_append_printf (s, "%s{\"from\": \"%s\", \"to\": \"%s\", \"port\": 0}", i ? ", " : "", from, to);
    }
  g_string_append (s, "]");
  if (region && n_maps > 0)
    {
      g_string_append (s, ", \"regions\": [{\"name\": \"rows\", \"level\": \"smem\", \"nodes\": [");
      for (guint i = 0; i < n_maps; i++)
        g_string_append_printf (s, "%s\"n%u\"", i ? ", " : "", i);
      g_string_append (s, "], \"marks\": {\"r\": {\"parallel\": 4}, \"c\": \"whole\"}}]");
    }
  g_string_append (s, "}");
  return s;
}
