/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>

#include "napkin-test-attention.h"

/* The axes of a tensor as a JSON list, the sequence axis `s` placed as the layout says. */
static char *
axes (const NapkinTestAttention *c,
      gboolean                   with_group,
      gboolean                   with_heads,
      const char                *s)
{
  GString *out = g_string_new ("\"b\"");
  g_autoptr(GString) heads = g_string_new (NULL);

  if (with_heads)
    g_string_append (heads, ", \"h\"");
  if (with_group)
    g_string_append (heads, ", \"g\"");
  if (c->bshd)
    g_string_append_printf (out, ", \"%s\"%s", s, heads->str);
  else
    g_string_append_printf (out, "%s, \"%s\"", heads->str, s);
  g_string_append (out, ", \"d\"");
  return g_string_free (out, FALSE);
}

/* "h,q,k" as "\"h\", \"q\", \"k\"". */
static char *
quoted (const char *axes)
{
  g_auto (GStrv) names = g_strsplit (axes, ",", -1);
  GString *out = g_string_new (NULL);

  for (guint i = 0; names[i] != NULL; i++)
    g_string_append_printf (out, "%s\"%s\"", i ? ", " : "", g_strstrip (names[i]));
  return g_string_free (out, FALSE);
}

/* The wires: Q·Kᵀ → [bias] → scale → [bias] → [keep] → softmax → ·V. */
static void
chain_wires (GString                   *s,
             const NapkinTestAttention *c)
{
  const char *chain[5];
  guint n = 0;

  chain[n++] = "qk";
  if (c->bias && c->bias_first)
    chain[n++] = "bias";
  chain[n++] = "scale";
  if (c->bias && !c->bias_first)
    chain[n++] = "bias";
  if (c->keep)
    chain[n++] = "keep";
  g_string_append (s, "\"wires\": [{\"from\": \"q_in\", \"to\": \"qk\", \"port\": 0}, "
                      "{\"from\": \"k_in\", \"to\": \"qk\", \"port\": 1}, ");
  for (guint i = 0; i + 1 < n; i++)
    g_string_append_printf (s, "{\"from\": \"%s\", \"to\": \"%s\", \"port\": 0}, ", chain[i], chain[i + 1]);
  g_string_append_printf (s, "{\"from\": \"%s\", \"to\": \"sm\", \"port\": 0}, ", chain[n - 1]);
  if (c->bias)
    g_string_append (s, "{\"from\": \"b_in\", \"to\": \"bias\", \"port\": 1}, ");
  if (c->keep)
    g_string_append (s, "{\"from\": \"m_in\", \"to\": \"keep\", \"port\": 1}, ");
  /* scores in the bias's own type: P cast back to V's for the second product */
  if (c->bias && c->bias_dtype)
    g_string_append (s, "{\"from\": \"sm\", \"to\": \"pcast\", \"port\": 0}, {\"from\": \"pcast\", \"to\": \"pv\", "
                        "\"port\": 0}, ");
  else
    g_string_append (s, "{\"from\": \"sm\", \"to\": \"pv\", \"port\": 0}, ");
  g_string_append (s, "{\"from\": \"v_in\", \"to\": \"pv\", \"port\": 1}, {\"from\": \"pv\", \"to\": \"o\", "
                      "\"port\": 0}], ");
}

char *
napkin_test_attention_json (const NapkinTestAttention *c)
{
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"title\": \"attention case\", \"axes\": [");
  gint64 hk = c->HK > 0 ? c->HK : c->H;
  gboolean mqa = hk == 1 && c->H > 1, gqa = hk > 1 && hk < c->H;
  gboolean heads = !mqa, group = mqa || gqa;
  gboolean fp8 = g_str_has_prefix (c->dtype, "fp8");
  const char *vt = c->v_dtype ? c->v_dtype : c->dtype;
  const char *ot = c->o_dtype ? c->o_dtype : fp8 ? "fp16" : c->dtype;
  g_autofree char *qa = axes (c, group, heads, "q");
  g_autofree char *ka = axes (c, FALSE, heads, "k");
  g_autofree char *sa = NULL;
  /* the scores in V's type: P meets V in the second product */
  g_autofree char *qk_type = fp8 ? g_strdup_printf (", \"dtype\": \"%s\"", vt)
                             : c->bias && c->bias_dtype ? g_strdup_printf (", \"dtype\": \"%s\"", c->bias_dtype)
                                                        : g_strdup ("");
  g_autofree char *pv_type = fp8 ? g_strdup_printf (", \"dtype\": \"%s\"", ot) : g_strdup ("");
  char alpha[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append_printf (s, "{\"name\": \"b\", \"size\": %" G_GINT64_FORMAT "}", c->B);
  if (heads)
    g_string_append_printf (s, ", {\"name\": \"h\", \"size\": %" G_GINT64_FORMAT "}", group ? hk : c->H);
  if (group)
    g_string_append_printf (s, ", {\"name\": \"g\", \"size\": %" G_GINT64_FORMAT "}", c->H / hk);
  g_string_append_printf (s, ", {\"name\": \"q\", \"size\": %" G_GINT64_FORMAT "}, {\"name\": \"k\", \"size\": %"
                             G_GINT64_FORMAT "}, {\"name\": \"d\", \"size\": %" G_GINT64_FORMAT "}], \"tensors\": [",
                          c->NQ, c->NKV, c->D);
  g_string_append_printf (s, "{\"name\": \"Q\", \"axes\": [%s], \"dtype\": \"%s\"}, ", qa, c->dtype);
  g_string_append_printf (s, "{\"name\": \"K\", \"axes\": [%s], \"dtype\": \"%s\"}, ", ka, c->dtype);
  g_string_append_printf (s, "{\"name\": \"V\", \"axes\": [%s], \"dtype\": \"%s\"}, ", ka, vt);
  g_string_append_printf (s, "{\"name\": \"O\", \"axes\": [%s], \"dtype\": \"%s\"}", qa, ot);
  if (c->bias)
    {
      g_autofree char *ba = quoted (c->bias);

      g_string_append_printf (s, ", {\"name\": \"B\", \"axes\": [%s], \"dtype\": \"%s\"}", ba,
                              c->bias_dtype ? c->bias_dtype : fp8 ? vt : c->dtype);
    }
  if (c->keep)
    {
      g_autofree char *ma = quoted (c->keep);

      g_string_append_printf (s, ", {\"name\": \"M\", \"axes\": [%s], \"dtype\": \"int8\"}", ma);
    }
  g_string_append (s, "], \"nodes\": [");
  sa = g_strdup_printf ("\"b\"%s%s, \"q\", \"k\"", heads ? ", \"h\"" : "", group ? ", \"g\"" : "");
  g_ascii_formatd (alpha, sizeof alpha, "%.17g", c->alpha != 0 ? c->alpha : 1.0 / sqrt ((double) c->D));
  g_string_append_printf (s,
                          "{\"id\": \"q_in\", \"kind\": \"input\", \"tensor\": \"Q\", \"x\": 40, \"y\": 40}, "
                          "{\"id\": \"k_in\", \"kind\": \"input\", \"tensor\": \"K\", \"x\": 40, \"y\": 180}, "
                          "{\"id\": \"v_in\", \"kind\": \"input\", \"tensor\": \"V\", \"x\": 480, \"y\": 300}, "
                          "{\"id\": \"qk\", \"kind\": \"contract\", \"out\": [%s]%s, \"x\": 260, \"y\": 100}, "
                          "{\"id\": \"scale\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": %s, \"x\": 480, "
                          "\"y\": 100}, "
                          "{\"id\": \"sm\", \"kind\": \"softmax\", \"axis\": \"k\", \"x\": 700, \"y\": 100}, "
                          "{\"id\": \"pv\", \"kind\": \"contract\", \"out\": [%s]%s, \"x\": 920, \"y\": 160}, "
                          "{\"id\": \"o\", \"kind\": \"output\", \"tensor\": \"O\", \"x\": 1140, \"y\": 160}",
                          sa, qk_type, alpha, qa, pv_type);
  if (c->bias)
    g_string_append (s, ", {\"id\": \"b_in\", \"kind\": \"input\", \"tensor\": \"B\", \"x\": 260, \"y\": 300}, "
                        "{\"id\": \"bias\", \"kind\": \"map\", \"fn\": \"add\", \"x\": 480, \"y\": 200}");
  if (c->keep)
    g_string_append (s, ", {\"id\": \"m_in\", \"kind\": \"input\", \"tensor\": \"M\", \"x\": 480, \"y\": 300}, "
                        "{\"id\": \"keep\", \"kind\": \"mask\", \"mask\": \"tensor\", \"x\": 600, \"y\": 200}");
  if (c->bias && c->bias_dtype)
    g_string_append_printf (s, ", {\"id\": \"pcast\", \"kind\": \"map\", \"fn\": \"cast\", \"dtype\": \"%s\", "
                               "\"x\": 800, \"y\": 100}", vt);
  g_string_append (s, "], ");
  chain_wires (s, c);
  g_string_append (s, "\"regions\": [{\"name\": \"block\", \"level\": \"smem\", \"nodes\": [\"qk\", \"scale\", "
                      "\"sm\", \"pv\"");
  if (c->bias)
    g_string_append (s, ", \"bias\"");
  if (c->keep)
    g_string_append (s, ", \"keep\"");
  if (c->bias && c->bias_dtype)
    g_string_append (s, ", \"pcast\"");
  g_string_append (s, "], \"marks\": {\"b\": {\"parallel\": 1}");
  if (heads)
    g_string_append (s, ", \"h\": {\"parallel\": 1}");
  if (group)
    g_string_append_printf (s, ", \"g\": {\"parallel\": %" G_GINT64_FORMAT "}", MAX (c->group_tile, 1));
  if (c->BQ > 0)
    g_string_append_printf (s, ", \"q\": {\"parallel\": %" G_GINT64_FORMAT "}", c->BQ);
  else
    g_string_append (s, ", \"q\": \"whole\"");
  g_string_append_printf (s, ", \"k\": {\"stream\": %" G_GINT64_FORMAT "}, \"d\": \"whole\"}, \"stages\": %u}]}",
                          c->BKV, MAX (c->stages, 2));
  return g_string_free (s, FALSE);
}
