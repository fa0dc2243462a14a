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


char *
napkin_test_gemm_json (const NapkinTestGemmDiagram *c)
{
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"title\": \"GEMM case\", \"axes\": [");
  const char *bt = c->batch > 0 ? "\"b\", " : "";
  const char *cd = c->c_dtype ? c->c_dtype : g_str_has_prefix (c->dtype, "fp8") ? "bf16" : c->dtype;
  const char *ep = c->epilogue ? c->epilogue : "";
  gboolean bias = g_str_equal (ep, "bias-gelu"), residual = g_str_equal (ep, "residual");
  const char *last = "mm";

  if (c->batch > 0)
    g_string_append_printf (s, "{\"name\": \"b\", \"size\": %" G_GINT64_FORMAT "}, ", c->batch);
  g_string_append_printf (s, "{\"name\": \"m\", \"size\": %" G_GINT64_FORMAT "}, {\"name\": \"n\", \"size\": %"
                             G_GINT64_FORMAT "}, {\"name\": \"k\", \"size\": %" G_GINT64_FORMAT "}], \"tensors\": [",
                          c->M, c->N, c->K);
  g_string_append_printf (s, "{\"name\": \"A\", \"axes\": [%s%s], \"dtype\": \"%s\"}, ", bt,
                          c->a_km ? "\"k\", \"m\"" : "\"m\", \"k\"", c->dtype);
  g_string_append_printf (s, "{\"name\": \"B\", \"axes\": [%s%s], \"dtype\": \"%s\"}, ", c->shared_b ? "" : bt,
                          c->b_nk ? "\"n\", \"k\"" : "\"k\", \"n\"", c->dtype);
  if (bias)
    g_string_append_printf (s, "{\"name\": \"bias\", \"axes\": [\"n\"], \"dtype\": \"%s\"}, ", cd);
  if (residual)
    g_string_append_printf (s, "{\"name\": \"R\", \"axes\": [%s\"m\", \"n\"], \"dtype\": \"%s\"}, ", bt, cd);
  g_string_append_printf (s, "{\"name\": \"C\", \"axes\": [%s\"m\", \"n\"], \"dtype\": \"%s\"}], \"nodes\": [", bt, cd);
  g_string_append_printf (s, "{\"id\": \"a\", \"kind\": \"input\", \"tensor\": \"A\", \"x\": 0, \"y\": 0}, "
                             "{\"id\": \"b\", \"kind\": \"input\", \"tensor\": \"B\", \"x\": 0, \"y\": 200}, "
                             "{\"id\": \"mm\", \"kind\": \"contract\", \"out\": [%s\"m\", \"n\"], \"x\": 200, \"y\": 100}",
                          bt);
  if (bias)
    g_string_append (s, ", {\"id\": \"bias\", \"kind\": \"input\", \"tensor\": \"bias\", \"x\": 200, \"y\": 300}"
                        ", {\"id\": \"add\", \"kind\": \"map\", \"fn\": \"add\", \"x\": 400, \"y\": 100}"
                        ", {\"id\": \"act\", \"kind\": \"map\", \"fn\": \"gelu\", \"x\": 600, \"y\": 100}");
  else if (residual)
    g_string_append (s, ", {\"id\": \"r\", \"kind\": \"input\", \"tensor\": \"R\", \"x\": 200, \"y\": 300}"
                        ", {\"id\": \"add\", \"kind\": \"map\", \"fn\": \"add\", \"x\": 400, \"y\": 100}");
  else if (g_str_equal (ep, "silu"))
    g_string_append (s, ", {\"id\": \"act\", \"kind\": \"map\", \"fn\": \"silu\", \"x\": 400, \"y\": 100}");
  else if (g_str_equal (ep, "scale"))
    g_string_append (s, ", {\"id\": \"act\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": 0.5, \"x\": 400, \"y\": 100}");
  g_string_append (s, ", {\"id\": \"c\", \"kind\": \"output\", \"tensor\": \"C\", \"x\": 800, \"y\": 100}], \"wires\": ["
                      "{\"from\": \"a\", \"to\": \"mm\", \"port\": 0}, {\"from\": \"b\", \"to\": \"mm\", \"port\": 1}");
  if (bias || residual)
    {
      g_string_append_printf (s, ", {\"from\": \"mm\", \"to\": \"add\", \"port\": 0}, {\"from\": \"%s\", \"to\": "
                                 "\"add\", \"port\": 1}", bias ? "bias" : "r");
      last = "add";
    }
  if (bias)
    {
      g_string_append (s, ", {\"from\": \"add\", \"to\": \"act\", \"port\": 0}");
      last = "act";
    }
  else if (g_str_equal (ep, "silu") || g_str_equal (ep, "scale"))
    {
      g_string_append (s, ", {\"from\": \"mm\", \"to\": \"act\", \"port\": 0}");
      last = "act";
    }
  g_string_append_printf (s, ", {\"from\": \"%s\", \"to\": \"c\", \"port\": 0}], \"regions\": [", last);
  if (c->BM > 0)
    {
      g_string_append (s, "{\"name\": \"block\", \"level\": \"smem\", \"nodes\": [\"mm\"");
      if (bias || residual)
        g_string_append (s, ", \"add\"");
      if (!g_str_equal (last, "mm") && !g_str_equal (last, "add"))
        g_string_append (s, ", \"act\"");
      g_string_append_printf (s, "], \"marks\": {%s\"m\": {\"parallel\": %" G_GINT64_FORMAT "}, \"n\": {\"parallel\": %"
                                 G_GINT64_FORMAT "}, \"k\": {\"stream\": %" G_GINT64_FORMAT "}}, \"stages\": %u}",
                              c->batch > 0 ? "\"b\": {\"parallel\": 1}, " : "", c->BM, c->BN, c->BK, MAX (c->stages, 2));
    }
  g_string_append (s, "]}");
  return g_string_free (s, FALSE);
}

static const NapkinTestGemmCase cases[] = {
  { "4096^3", { 4096, 4096, 4096, 0, "bf16" }, 1, 0 },
  { "8192^3", { 8192, 8192, 8192, 0, "bf16" }, 1, 0 },
  { "8000^3", { 8000, 8000, 8000, 0, "bf16" }, 1, 0 },
  { "37x53x29", { 37, 53, 29, 0, "bf16" }, 0, 2 },
  { "1000x4096x4095", { 1000, 4096, 4095, 0, "fp16" }, 0, 1 },
  { "4095x4097x4096", { 4095, 4097, 4096, 0, "bf16" }, 0, 1 },
  { "m1", { 1, 4096, 4096, 0, "bf16" }, 0, 0 },
  { "m16", { 16, 4096, 4096, 0, "bf16" }, 0, 0 },
  { "m64", { 64, 4096, 4096, 0, "bf16" }, 0, 0 },
  { "m256", { 256, 4096, 4096, 0, "bf16" }, 0, 0 },
  { "vocab 50257", { 4096, 50257, 4096, 0, "bf16" }, 1, 1 },
  { "vocab 128256 [n,k]", { 4096, 128256, 4096, 0, "bf16", NULL, FALSE, TRUE }, 1, 0 },
  { "llama mlp up", { 4096, 11008, 4096, 0, "bf16" }, 1, 0 },
  { "llama mlp down", { 4096, 4096, 11008, 0, "bf16" }, 1, 0 },
  { "A [k,m]", { 2048, 2048, 2048, 0, "fp16", NULL, TRUE }, 1, 0 },
  { "B [n,k] fp32 out", { 2048, 2048, 2048, 0, "bf16", "fp32", FALSE, TRUE }, 1, 0 },
  { "batched", { 512, 512, 64, 16, "bf16" }, 0, 0 },
  { "batched shared B", { 1024, 4096, 4096, 4, "bf16", NULL, FALSE, FALSE, TRUE }, 1, 0 },
  { "fp8 [n,k]", { 8192, 8192, 8192, 0, "fp8-e4m3", NULL, FALSE, TRUE }, 1, 0 },
  { "fp8 [k,n]", { 4096, 4096, 4096, 0, "fp8-e4m3" }, 1, 1 },
  { "bias+gelu region", { 4096, 11008, 4096, 0, "bf16", NULL, FALSE, FALSE, FALSE, "bias-gelu", 128, 256, 64, 3 }, 1, 0 },
  { "residual region", { 4096, 4096, 11008, 0, "bf16", NULL, FALSE, FALSE, FALSE, "residual", 128, 128, 64, 4 }, 1, 0 },
  { "silu region", { 4096, 11008, 4096, 0, "fp16", NULL, FALSE, FALSE, FALSE, "silu", 128, 256, 64, 3 }, 1, 0 },
  { "region 64x128 odd", { 1000, 1000, 1000, 0, "bf16", NULL, FALSE, FALSE, FALSE, "", 64, 128, 64, 4 }, 0, 0 },
};

const NapkinTestGemmCase *
napkin_test_gemm_cases (guint *n)
{
  *n = G_N_ELEMENTS (cases);
  return cases;
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
