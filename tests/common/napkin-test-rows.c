/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Row problems and map chains as diagrams, for tests/plan and bench/gpu/rows-prims. */
#include "config.h"

#include "napkin-test-rows.h"

static gboolean
is_reduce (const char *op)
{
  return g_str_equal (op, "sum") || g_str_equal (op, "max") || g_str_equal (op, "mean");
}

char *
napkin_test_rows_json (const NapkinTestRows *t)
{
  GString *s = g_string_new ("{\"format\": \"napkin\", \"version\": 1, \"title\": \"rows\", \"axes\": [");
  g_autoptr(GString) nodes = g_string_new (NULL);
  g_autoptr(GString) wires = g_string_new (NULL);
  g_autoptr(GPtrArray) members = g_ptr_array_new ();
  const char *xt = t->x_dtype, *yt = t->y_dtype ? t->y_dtype : t->x_dtype;
  const char *lead = t->batch > 1 ? "\"b\", " : "";
  g_autofree char *xaxes = t->col_major ? g_strdup_printf ("%s\"c\", \"r\"", lead) : g_strdup_printf ("%s\"r\", \"c\"", lead);
  g_autofree char *raxes = t->col_major && !t->r_row_major ? g_strdup (xaxes)
                                                             : g_strdup_printf ("%s\"r\", \"c\"", lead);
  g_autofree char *yaxes = is_reduce (t->op) ? g_strdup_printf ("%s\"r\"", lead) : g_strdup (xaxes);
  const char *prev = "x";
  guint n = 0;

  if (t->batch > 1)
    g_string_append_printf (s, "{\"name\": \"b\", \"size\": %" G_GINT64_FORMAT "}, ", t->batch);
  g_string_append_printf (s, "{\"name\": \"r\", \"size\": %" G_GINT64_FORMAT "}, {\"name\": \"c\", \"size\": %"
                             G_GINT64_FORMAT "}], \"tensors\": [", t->rows, t->cols);
  g_string_append_printf (s, "{\"name\": \"X\", \"axes\": [%s], \"dtype\": \"%s\"}", xaxes, xt);
  g_string_append_printf (s, ", {\"name\": \"Y\", \"axes\": [%s], \"dtype\": \"%s\"}", yaxes, yt);
  if (t->residual)
    g_string_append_printf (s, ", {\"name\": \"R\", \"axes\": [%s], \"dtype\": \"%s\"}", raxes, xt);
  if (t->gamma)
    g_string_append_printf (s, ", {\"name\": \"G\", \"axes\": [\"c\"], \"dtype\": \"%s\"}", xt);
  if (t->beta)
    g_string_append_printf (s, ", {\"name\": \"B\", \"axes\": [\"c\"], \"dtype\": \"%s\"}", xt);

#define NODE(...) g_string_append_printf (nodes, ", " __VA_ARGS__)
#define WIRE(from, to, port) g_string_append_printf (wires, "%s{\"from\": \"%s\", \"to\": \"%s\", \"port\": %d}", \
                                                     wires->len ? ", " : "", from, to, port)
  g_string_append (nodes, "{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}");
  if (t->residual)
    {
      NODE ("{\"id\": \"rin\", \"kind\": \"input\", \"tensor\": \"R\", \"x\": 0, \"y\": 100}");
      NODE ("{\"id\": \"res\", \"kind\": \"map\", \"fn\": \"add\", \"x\": %u, \"y\": 0}", 100 * ++n);
      WIRE (prev, "res", 0);
      WIRE ("rin", "res", 1);
      prev = "res";
      g_ptr_array_add (members, "res");
    }
  if (t->scale != 0)
    {
      NODE ("{\"id\": \"sc\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": %.17g, \"x\": %u, \"y\": 0}", t->scale,
            100 * ++n);
      WIRE (prev, "sc", 0);
      prev = "sc";
      g_ptr_array_add (members, "sc");
    }
  if (g_str_equal (t->op, "softmax"))
    NODE ("{\"id\": \"f\", \"kind\": \"softmax\", \"axis\": \"c\", \"x\": %u, \"y\": 0}", 100 * ++n);
  else if (g_str_equal (t->op, "layernorm") || g_str_equal (t->op, "rmsnorm"))
    NODE ("{\"id\": \"f\", \"kind\": \"normalize\", \"norm\": \"%s\", \"eps\": 1e-5, \"axis\": \"c\", \"x\": %u, "
          "\"y\": 0}", t->op, 100 * ++n);
  else
    NODE ("{\"id\": \"f\", \"kind\": \"reduce\", \"op\": \"%s\", \"axis\": \"c\", \"x\": %u, \"y\": 0}", t->op, 100 * ++n);
  WIRE (prev, "f", 0);
  prev = "f";
  g_ptr_array_add (members, "f");
  if (t->gamma)
    {
      NODE ("{\"id\": \"gin\", \"kind\": \"input\", \"tensor\": \"G\", \"x\": 0, \"y\": 200}");
      NODE ("{\"id\": \"g\", \"kind\": \"map\", \"fn\": \"mul\", \"x\": %u, \"y\": 0}", 100 * ++n);
      WIRE (prev, "g", 0);
      WIRE ("gin", "g", 1);
      prev = "g";
      g_ptr_array_add (members, "g");
    }
  if (t->beta)
    {
      NODE ("{\"id\": \"bin\", \"kind\": \"input\", \"tensor\": \"B\", \"x\": 0, \"y\": 300}");
      NODE ("{\"id\": \"bb\", \"kind\": \"map\", \"fn\": \"add\", \"x\": %u, \"y\": 0}", 100 * ++n);
      /* β first: the epilogue takes either operand order */
      WIRE ("bin", "bb", 0);
      WIRE (prev, "bb", 1);
      prev = "bb";
      g_ptr_array_add (members, "bb");
    }
  if (t->act != NULL)
    {
      NODE ("{\"id\": \"act\", \"kind\": \"map\", \"fn\": \"%s\", \"x\": %u, \"y\": 0}", t->act, 100 * ++n);
      WIRE (prev, "act", 0);
      prev = "act";
      g_ptr_array_add (members, "act");
    }
  NODE ("{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": %u, \"y\": 0}", 100 * ++n);
  WIRE (prev, "y", 0);
#undef NODE
#undef WIRE
  g_string_append_printf (s, "], \"nodes\": [%s], \"wires\": [%s]", nodes->str, wires->str);
  if (t->region_rows > 0 || t->stream_cols > 0 || t->fuse)
    {
      g_string_append (s, ", \"regions\": [{\"name\": \"rows\", \"level\": \"smem\", \"nodes\": [");
      for (guint i = 0; i < members->len; i++)
        g_string_append_printf (s, "%s\"%s\"", i ? ", " : "", (const char *) g_ptr_array_index (members, i));
      g_string_append (s, "], \"marks\": {");
      if (t->region_rows > 0)
        g_string_append_printf (s, "\"r\": {\"parallel\": %" G_GINT64_FORMAT "}%s", t->region_rows,
                                t->batch > 1 ? ", \"b\": {\"parallel\": 1}" : "");
      if (t->stream_cols > 0)
        g_string_append_printf (s, "%s\"c\": {\"stream\": %" G_GINT64_FORMAT "}", t->region_rows > 0 ? ", " : "",
                                t->stream_cols);
      g_string_append (s, "}");
      if (t->threads > 0)
        g_string_append_printf (s, ", \"threads\": %u", t->threads);
      g_string_append (s, "}]");
    }
  g_string_append (s, "}");
  return g_string_free (s, FALSE);
}

char *
napkin_test_map_json (gint64      m,
                      gint64      n,
                      const char *x_dtype,
                      const char *y_dtype,
                      const char *unary,
                      const char *binary,
                      const char *other,
                      gboolean    region)
{
  GString *s = g_string_new (NULL);
  const char *prev = "x";
  g_autoptr(GString) members = g_string_new (NULL);

  g_string_append_printf (s, "{\"format\": \"napkin\", \"version\": 1, \"title\": \"maps\", \"axes\": ["
                             "{\"name\": \"m\", \"size\": %" G_GINT64_FORMAT "}, {\"name\": \"n\", \"size\": %"
                             G_GINT64_FORMAT "}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"m\", \"n\"], "
                             "\"dtype\": \"%s\"}, {\"name\": \"Y\", \"axes\": [\"m\", \"n\"], \"dtype\": \"%s\"}",
                          m, n, x_dtype, y_dtype ? y_dtype : x_dtype);
  if (binary != NULL)
    {
      g_auto(GStrv) parts = g_strsplit (other, ",", -1);
      g_autofree char *joined = g_strjoinv ("\", \"", parts);

      g_string_append_printf (s, ", {\"name\": \"O\", \"axes\": [\"%s\"], \"dtype\": \"%s\"}", joined, x_dtype);
    }
  g_string_append (s, "], \"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}");
  if (binary != NULL)
    g_string_append (s, ", {\"id\": \"o\", \"kind\": \"input\", \"tensor\": \"O\", \"x\": 0, \"y\": 100}");
  if (unary != NULL)
    g_string_append_printf (s, ", {\"id\": \"u\", \"kind\": \"map\", \"fn\": \"%s\", \"x\": 100, \"y\": 0}", unary);
  if (binary != NULL)
    g_string_append_printf (s, ", {\"id\": \"v\", \"kind\": \"map\", \"fn\": \"%s\", \"x\": 200, \"y\": 0}", binary);
  g_string_append (s, ", {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 300, \"y\": 0}], \"wires\": [");
  if (unary != NULL)
    {
      g_string_append (s, "{\"from\": \"x\", \"to\": \"u\", \"port\": 0}, ");
      prev = "u";
      g_string_append (members, "\"u\"");
    }
  if (binary != NULL)
    {
      g_string_append_printf (s, "{\"from\": \"%s\", \"to\": \"v\", \"port\": 0}, "
                                 "{\"from\": \"o\", \"to\": \"v\", \"port\": 1}, ", prev);
      prev = "v";
      g_string_append_printf (members, "%s\"v\"", members->len ? ", " : "");
    }
  g_string_append_printf (s, "{\"from\": \"%s\", \"to\": \"y\", \"port\": 0}]", prev);
  if (region)
    g_string_append_printf (s, ", \"regions\": [{\"name\": \"maps\", \"level\": \"smem\", \"nodes\": [%s], "
                               "\"marks\": {\"m\": {\"parallel\": 1}}}]", members->str);
  g_string_append (s, "}");
  return g_string_free (s, FALSE);
}
