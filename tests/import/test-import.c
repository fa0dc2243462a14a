/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gstdio.h>
#include <json-c/json.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-import.h"
#include "napkin-interp.h"
#include "napkin-ir.h"
#include "napkin-validate.h"

/* The importers on stored inputs (tests/import/: einsum text and graphs written in
 * the exporter's format, docs/import.md) and the PyTorch printer's output. */

static char *
source_path (const char *name)
{
  return g_test_build_filename (G_TEST_DIST, "import", name, NULL);
}

static NapkinDiagram *
import_stored (const char *name)
{
  g_autofree char *path = source_path (name);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_import_file (path, &error);

  g_assert_no_error (error);
  g_assert_nonnull (d);
  g_assert_true (napkin_diagram_validate (d, &error));
  g_assert_no_error (error);
  return d;
}

static guint
count_kind (NapkinDiagram *d,
            NapkinOpKind   kind)
{
  guint n = 0;

  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    n += napkin_diagram_node (d, i)->kind == kind;
  return n;
}

static char *
tensor_axes (NapkinDiagram *d,
             const char    *name)
{
  int t = napkin_diagram_find_tensor (d, name);

  g_assert_cmpint (t, >=, 0);
  return g_strjoinv (",", napkin_diagram_tensor (d, t)->axes);
}

static gint64
axis_size (NapkinDiagram *d,
           const char    *name)
{
  int a = napkin_diagram_find_axis (d, name);

  g_assert_cmpint (a, >=, 0);
  return napkin_diagram_axis_size (d, a);
}

/* Every node placed, no two on one spot, and each operation right of what it reads. */
static void
assert_layout (NapkinDiagram *d)
{
  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    {
      const NapkinNode *n = napkin_diagram_node (d, i);

      for (guint p = 0; p < napkin_op_n_inputs (n); p++)
        {
          int src = napkin_diagram_input_source (d, i, p);

          g_assert_cmpint (src, >=, 0);
          g_assert_cmpfloat (napkin_diagram_node (d, src)->x, <, n->x);
        }
      for (guint j = 0; j < i; j++)
        {
          const NapkinNode *m = napkin_diagram_node (d, j);

          g_assert_false (m->x == n->x && fabs (m->y - n->y) < 100);
        }
    }
}

static void
test_einsum_attention (void)
{
  g_autoptr(NapkinDiagram) d = import_stored ("attention.einsum");
  NapkinFlops flops;

  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 5);
  g_assert_cmpuint (napkin_diagram_n_tensors (d), ==, 4);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 8);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_CONTRACT), ==, 2);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_SOFTMAX), ==, 1);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_OUTPUT), ==, 1);
  g_assert_cmpint (axis_size (d, "n"), ==, 4096);
  {
    g_autofree char *o = tensor_axes (d, "o");

    g_assert_cmpstr (o, ==, "b,n,h,d");
  }
  g_assert_cmpint (napkin_diagram_tensor (d, napkin_diagram_find_tensor (d, "q"))->dtype, ==, NAPKIN_DTYPE_BF16);
  /* two contractions of 2·b·h·n·m·d each */
  g_assert_true (napkin_diagram_total_flops (d, &flops));
  g_assert_cmpint (flops.tensor, ==, G_GINT64_CONSTANT (2) * 2 * 4 * 16 * 4096 * 4096 * 128);
  assert_layout (d);
}

static void
test_einsum_forms (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_einsum (
    "# a norm, a map chain and a causal mask, with output lines\n"
    "t=64 e=32 f=48\n"
    "x[t,e] -> n = rmsnorm(e, eps=1e-6)\n"
    "n w[e,f] -> h[t,f] = einsum\n"
    "h -> a = silu\n"
    "a h -> y = mul\n"
    "y -> z = sum(f)\n"
    "output z\n", NULL, &error);

  g_assert_no_error (error);
  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 3);
  g_assert_cmpuint (napkin_diagram_n_tensors (d), ==, 3);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 8);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_NORMALIZE), ==, 1);
  g_assert_cmpfloat (napkin_diagram_node (d, napkin_diagram_find_node (d, "n"))->eps, ==, 1e-6);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_REDUCE), ==, 1);
  {
    g_autofree char *z = tensor_axes (d, "z");

    g_assert_cmpstr (z, ==, "t");
  }
}

/* The logarithm (a log-softmax, a cross-entropy written out) from einsum text and from
 * an exported graph (aten.log): a map log, valued as log by the interpreter's format. */
static void
test_log (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_einsum ("m=4 n=8\nx[m,n] -> s = softmax(n)\ns -> l = log\noutput l\n",
                                                     NULL, &error);
  g_autoptr(NapkinDiagram) g = NULL;
  static const char graph[] =
    "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
    "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [4, 8], \"dtype\": \"fp32\"},"
    "{\"name\": \"lg\", \"op\": \"call_function\", \"target\": \"aten.log.default\", \"args\": [{\"node\": \"x\"}],"
    " \"kwargs\": {}, \"shape\": [4, 8], \"dtype\": \"fp32\", \"line\": 3},"
    "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"lg\"}]}]}";
  guint logs = 0;

  g_assert_no_error (error);
  g_assert_cmpint (napkin_diagram_node (d, napkin_diagram_find_node (d, "l"))->fn, ==, NAPKIN_FN_LOG);
  g = napkin_import_graph (graph, strlen (graph), NULL, &error);
  g_assert_no_error (error);
  for (guint v = 0; v < napkin_diagram_n_nodes (g); v++)
    logs += napkin_diagram_node (g, v)->kind == NAPKIN_OP_MAP && napkin_diagram_node (g, v)->fn == NAPKIN_FN_LOG;
  g_assert_cmpuint (logs, ==, 1);
}

/* Each bad text: the start of its error, with the line and column of the fault. */
static void
test_einsum_errors (void)
{
  static const struct { const char *text, *error; } cases[] = {
    { "b=4 n=8\nx[b,n] -> y = sofmax(n)\n", "line 2, column 15: unknown operation “sofmax”" },
    { "b=4 n=8\nx[b,q] -> y = softmax(n)\n", "line 2, column 5: unknown axis “q”" },
    { "b=4 n=8\nx -> y = softmax(n)\n", "line 2, column 1: unknown value “x”" },
    { "b=4 n=0\n", "line 1, column 7: the size of axis “n” must be a whole number" },
    { "b=4\nb=5\n", "line 2, column 1: axis “b” is declared twice" },
    { "b=4 n=8\nx[b,n] -> y = softmax(n\n", "line 2, column 24: expected “,” or “)”" },
    { "b=4 n=8\nx[b,n] -> y = softmax(n)\nx -> y = exp\n", "line 3, column 6: “y” is already defined on line 2" },
    { "b=4 n=8 m=8\nx[b,n] y[b,m] -> z = einsum(\"bq,bm->bm\")\n", "line 2, column 29: einsum letter “q” is not a declared axis" },
    { "b=4 n=8\nx[b,n] -> y = scale\n", "line 2, column 15: scale needs its factor" },
    { "b=4 n=8\nx[b,n] -> y[b] = softmax(n)\n", "line 2, column 12: “y” has axes [b,n] by its operation" },
    { "b=4 n=8\nx[b,n] $ y\n", "line 2, column 8: unexpected character “$”" },
    { "b=4 n=8 m=8\nx[b,n] y[n,m] -> z[b,m] = einsum\nz w[b] -> u = mul\nu -> v = exp\n", "" },
    { "b=4\n", "no operations" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) d = napkin_import_einsum (cases[i].text, NULL, &error);

      if (cases[i].error[0] == '\0')
        {
          g_assert_no_error (error);
          g_assert_nonnull (d);
          continue;
        }
      g_assert_null (d);
      g_assert_nonnull (error);
      if (strstr (error->message, cases[i].error) == NULL)
        g_error ("case %u: “%s” does not hold “%s”", i, error->message, cases[i].error);
    }
}

static void
test_graph_llama (void)
{
  g_autoptr(NapkinDiagram) d = import_stored ("llama-block.graph.json");
  int mask;

  /* b s e from the input, d h g dv from the attention, f from the MLP, the rotation's
   * second axis and the keys' own position axis */
  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 10);
  g_assert_cmpuint (napkin_diagram_n_tensors (d), ==, 14);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 46);
  g_assert_cmpuint (napkin_diagram_n_wires (d), ==, 55);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_INPUT), ==, 13);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_CONTRACT), ==, 11);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_MAP), ==, 13);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_NORMALIZE), ==, 2);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_REARRANGE), ==, 4);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_MASK), ==, 1);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_SOFTMAX), ==, 1);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_OUTPUT), ==, 1);
  g_assert_cmpint (axis_size (d, "b"), ==, 4);
  g_assert_cmpint (axis_size (d, "s"), ==, 2048);
  g_assert_cmpint (axis_size (d, "e"), ==, 4096);
  g_assert_cmpint (axis_size (d, "h"), ==, 8);
  g_assert_cmpint (axis_size (d, "g"), ==, 4);
  g_assert_cmpint (axis_size (d, "d"), ==, 128);
  g_assert_cmpint (axis_size (d, "f"), ==, 14336);
  {
    /* the views split the projections' outputs into named heads: 32 query heads are
     * 8 key/value heads × a group of 4, head-major as enable_gqa pairs them */
    g_autofree char *wq = tensor_axes (d, "wq_weight");
    g_autofree char *wk = tensor_axes (d, "wk_weight");
    g_autofree char *wo = tensor_axes (d, "wo_weight");
    g_autofree char *x = tensor_axes (d, "x");
    g_autofree char *out = tensor_axes (d, "out");
    g_autofree char *rot = tensor_axes (d, "rotate_half_d");

    g_assert_cmpstr (wq, ==, "h,g,d,e");
    g_assert_cmpstr (wk, ==, "h,d,e");
    g_assert_cmpstr (wo, ==, "e,h,g,dv");
    g_assert_cmpstr (x, ==, "b,s,e");
    g_assert_cmpstr (out, ==, "b,s,e");
    g_assert_cmpstr (rot, ==, "d,d_rot");
  }
  mask = napkin_diagram_find_node (d, "causal");
  g_assert_cmpint (mask, >=, 0);
  g_assert_cmpint (napkin_diagram_node (d, mask)->mask, ==, NAPKIN_MASK_CAUSAL);
  g_assert_cmpstr (napkin_diagram_node (d, mask)->rows, ==, "s");
  g_assert_cmpstr (napkin_diagram_node (d, mask)->axis, ==, "k");
  g_assert_cmpfloat_with_epsilon (napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"))->alpha,
                                  0.08838834764831843, 1e-15);
  g_assert_cmpfloat (napkin_diagram_node (d, napkin_diagram_find_node (d, "rms_norm"))->eps, ==, 1e-5);
  {
    NapkinFlops flops;

    /* the seven projections: 2·B·S·(4096·(4096 + 1024 + 1024 + 4096) + 3·4096·14336) */
    g_assert_true (napkin_diagram_total_flops (d, &flops));
    g_assert_cmpint (flops.tensor, ==, G_GINT64_CONSTANT (3859028115456));
  }
  assert_layout (d);
}

static void
test_graph_mlp (void)
{
  g_autoptr(NapkinDiagram) d = import_stored ("mlp-swiglu.graph.json");
  g_autofree char *down = tensor_axes (d, "w_down_weight");

  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 5);
  g_assert_cmpuint (napkin_diagram_n_tensors (d), ==, 5);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 10);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_CONTRACT), ==, 3);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_MAP), ==, 2);
  /* the output's 4096 is its own axis, named after the input's */
  g_assert_cmpstr (down, ==, "e2,f");
  g_assert_cmpstr (napkin_diagram_node (d, napkin_diagram_find_node (d, "silu"))->label, ==, "silu");
  assert_layout (d);
}

/* The decomposed forms: native_layer_norm and its item, t + addmm over a view that
 * merges b and s, matmul, softmax, a scale by a number. */
static void
test_graph_decomposed (void)
{
  g_autoptr(NapkinDiagram) d = import_stored ("mixer.graph.json");
  g_autofree char *w = tensor_axes (d, "fc_weight");
  g_autofree char *y = tensor_axes (d, "y");

  g_assert_cmpuint (napkin_diagram_n_axes (d), ==, 5);
  g_assert_cmpuint (napkin_diagram_n_tensors (d), ==, 7);
  g_assert_cmpuint (napkin_diagram_n_nodes (d), ==, 16);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_CONTRACT), ==, 2);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_NORMALIZE), ==, 1);
  g_assert_cmpuint (count_kind (d, NAPKIN_OP_MAP), ==, 5);
  /* the view [2,8,16] → [16,16] → [2,8,32] keeps b and s through the addmm */
  g_assert_cmpstr (w, ==, "f,e");
  g_assert_cmpstr (y, ==, "b,s,e2");
  g_assert_cmpfloat (napkin_diagram_node (d, napkin_diagram_find_node (d, "m"))->alpha, ==, 0.5);
}

static void
test_graph_unsupported (void)
{
  g_autofree char *path = source_path ("unsupported.graph.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_file (path, &error);

  g_assert_null (d);
  g_assert_error (error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_UNSUPPORTED);
  /* the line, the operation, what to write instead */
  g_assert_nonnull (strstr (error->message, "1 operation cannot be imported"));
  g_assert_nonnull (strstr (error->message, "\n  line 68 (tests/import/llama_block.py: return y.cumsum(dim=1) + x): "
                                            "cumsum is outside the covered set; compute it outside the module"));
}

/* Hand-made graphs for the importer's other refusals. */
static void
test_graph_errors (void)
{
  static const struct { const char *json, *error; } cases[] = {
    { "{\"format\": \"napkin\", \"version\": 1}", "format: expected “napkin-graph”" },
    { "{\"format\": \"napkin-graph\", \"version\": 2, \"nodes\": []}", "version: this Napkin reads graph version 1" },
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": [", "the graph is not valid JSON" },
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [4, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.topk.default\", \"args\": [{\"node\": \"x\"}, 2],"
      " \"kwargs\": {}, \"shape\": [4, 2], \"dtype\": \"fp32\", \"line\": 7, \"code\": \"y = x.topk(2)\"},"
      "{\"name\": \"z\", \"op\": \"call_function\", \"target\": \"aten.dropout.default\", \"args\": [{\"node\": \"x\"}, 0.1, true],"
      " \"kwargs\": {}, \"shape\": [4, 8], \"dtype\": \"fp32\", \"line\": 8},"
      "{\"name\": \"w\", \"op\": \"call_function\", \"target\": \"aten.exp.default\", \"args\": [{\"node\": \"z\"}],"
      " \"kwargs\": {}, \"shape\": [4, 8], \"dtype\": \"fp32\", \"line\": 9},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"w\", \"name\": \"out\"}, "
      "{\"node\": \"y\", \"name\": \"top\"}]}]}",
      "2 operations cannot be imported (docs/import.md):\n"
      "  line 7 (forward: y = x.topk(2)): topk is outside the covered set; write it with the covered operations "
      "(docs/import.md, “Covered operations”) or outside the module\n"
      "  line 8 of forward: dropout in training mode is not covered; export the module in eval mode (model.eval())" },
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [8, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"t\", \"op\": \"call_function\", \"target\": \"aten.t.default\", \"args\": [{\"node\": \"x\"}],"
      " \"kwargs\": {}, \"shape\": [8, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.add.Tensor\", \"args\": [{\"node\": \"x\"}, {\"node\": \"t\"}],"
      " \"kwargs\": {}, \"shape\": [8, 8], \"dtype\": \"fp32\", \"line\": 3},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"y\"}]}]}",
      "1 operation cannot be imported (docs/import.md):\n  graph node “t”: t would give a result with one axis twice" },
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 8, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"pad\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 1, 8], \"dtype\": \"bool\"},"
      "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.masked_fill.Scalar\", "
      "\"args\": [{\"node\": \"x\"}, {\"node\": \"pad\"}, 5.0],"
      " \"kwargs\": {}, \"shape\": [2, 8, 8], \"dtype\": \"fp32\", \"line\": 5, \"code\": \"y = x.masked_fill(pad, 5.0)\"},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"y\"}]}]}",
      "line 5 (forward: y = x.masked_fill(pad, 5.0)): masked_fill is outside the covered set; write "
      "masked_fill(~keep, -inf)" },
    /* a router's top-k: a tuple of values and indices, chosen from the data */
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [16, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"t\", \"op\": \"call_function\", \"target\": \"aten.topk.default\", "
      "\"args\": [{\"node\": \"x\"}, 2], \"kwargs\": {}, \"line\": 9, \"code\": \"w, e = torch.topk(x, 2)\"},"
      "{\"name\": \"w\", \"op\": \"call_function\", \"target\": \"getitem\", \"args\": [{\"node\": \"t\"}, 0],"
      " \"kwargs\": {}, \"shape\": [16, 2], \"dtype\": \"fp32\"},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"w\"}]}]}",
      "line 9 (forward: w, e = torch.topk(x, 2)): topk gives a result that is not one tensor; a data-dependent "
      "selection is not a diagram's operation: compute it outside the module" },
    /* pooling to more than one value a channel: windows, not covered */
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 4, 8, 8], \"dtype\": \"fp32\"},"
      "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.adaptive_avg_pool2d.default\", "
      "\"args\": [{\"node\": \"x\"}, [2, 2]],"
      " \"kwargs\": {}, \"shape\": [2, 4, 2, 2], \"dtype\": \"fp32\", \"line\": 4, \"code\": \"y = self.pool(x)\"},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"y\"}]}]}",
      "line 4 (forward: y = self.pool(x)): adaptive_avg_pool2d to an output larger than 1 is not covered; pool to "
      "size 1 (global average pooling)" },
    /* elu is the format's with alpha 1 only */
    { "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
      "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 4], \"dtype\": \"fp32\"},"
      "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.elu.default\", "
      "\"args\": [{\"node\": \"x\"}, 0.5],"
      " \"kwargs\": {}, \"shape\": [2, 4], \"dtype\": \"fp32\", \"line\": 3, \"code\": \"y = F.elu(x, 0.5)\"},"
      "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"y\"}]}]}",
      "line 3 (forward: y = F.elu(x, 0.5)): elu with alpha other than 1 is not covered; use F.elu with alpha 1 (the "
      "default), or write it with the covered operations" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) d = napkin_import_graph (cases[i].json, strlen (cases[i].json), NULL, &error);

      g_assert_null (d);
      g_assert_nonnull (error);
      if (strstr (error->message, cases[i].error) == NULL)
        g_error ("case %u: “%s” does not hold “%s”", i, error->message, cases[i].error);
    }
}

/* A mean over several dimensions (x.mean(dim=(2, 3)), global average pooling) is one
 * reduction node each, in turn, and computes the mean over them all. */
static void
test_graph_reduce_dims (void)
{
  static const char *const targets[] = { "aten.mean.dim\", \"args\": [{\"node\": \"x\"}, [-1, 2], true]",
                                         "aten.adaptive_avg_pool2d.default\", \"args\": [{\"node\": \"x\"}, [1, 1]]" };

  for (guint i = 0; i < G_N_ELEMENTS (targets); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *json = g_strdup_printf (
        "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
        "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 4, 8, 6], \"dtype\": \"fp32\","
        " \"dims\": [\"b\", \"c\", \"y\", \"x\"]},"
        "{\"name\": \"m\", \"op\": \"call_function\", \"target\": \"%s, \"kwargs\": {}, \"shape\": [2, 4, 1, 1], "
        "\"dtype\": \"fp32\"},"
        "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"m\"}]}]}", targets[i]);
      g_autoptr(NapkinDiagram) d = napkin_import_graph (json, strlen (json), NULL, &error);
      guint reduces = 0;
      g_autoptr(GString) axes = g_string_new (NULL);

      g_assert_no_error (error);
      g_assert_nonnull (d);
      for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
        if (napkin_diagram_node (d, n)->kind == NAPKIN_OP_REDUCE)
          {
            g_assert_cmpint (napkin_diagram_node (d, n)->reduce, ==, NAPKIN_REDUCE_MEAN);
            g_string_append (axes, napkin_diagram_node (d, n)->axis);
            reduces++;
          }
      g_assert_cmpuint (reduces, ==, 2);
      g_assert_cmpstr (axes->str, ==, "yx");
    }
}

/* einsum("ij,jk,kl->il", a, b, c) is two contractions, left to right: a·b over j keeps
 * i and k (what c and the output read), then ·c over k; the first step takes a name no
 * node has ("e_step1" is taken here). In the interpreter it computes a·b·c. */
static void
test_graph_einsum_chain (void)
{
  const char *json =
    "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
    "{\"name\": \"a\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [3, 4], \"dtype\": \"fp32\"},"
    "{\"name\": \"b\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [4, 5], \"dtype\": \"fp32\"},"
    "{\"name\": \"e_step1\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [5, 2], \"dtype\": \"fp32\"},"
    "{\"name\": \"e\", \"op\": \"call_function\", \"target\": \"aten.einsum.default\", "
    "\"args\": [\"i j, jk,kl->il\", [{\"node\": \"a\"}, {\"node\": \"b\"}, {\"node\": \"e_step1\"}]],"
    " \"kwargs\": {\"path\": [0, 1, 0, 1]}, \"shape\": [3, 2], \"dtype\": \"fp32\"},"
    "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"e\"}]}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_graph (json, strlen (json), NULL, &error);
  g_autoptr(NapkinTensorSet) set = NULL;
  g_autoptr(NapkinIrProgram) prog = NULL;
  const double *va = NULL, *vb = NULL, *vc = NULL, *ve = NULL;
  guint contracts = 0;

  g_assert_no_error (error);
  for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
    contracts += napkin_diagram_node (d, n)->kind == NAPKIN_OP_CONTRACT;
  g_assert_cmpuint (contracts, ==, 2);
  set = napkin_tensor_set_new_random (d, 5);
  prog = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN, &error);
  g_assert_no_error (error);
  g_assert_true (napkin_ir_interpret (prog, set, &error));
  g_assert_no_error (error);
  /* the graph's inputs and output by their nodes' shapes: a [3, 4], b [4, 5], c [5, 2], e [3, 2] */
  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      json_object *source = tensor->extra ? json_object_object_get (tensor->extra, "source") : NULL;
      const char *node = source ? json_object_get_string (json_object_object_get (source, "node")) : NULL;

      if (g_strcmp0 (node, "a") == 0)
        va = set->values[t];
      else if (g_strcmp0 (node, "b") == 0)
        vb = set->values[t];
      else if (g_strcmp0 (node, "e_step1") == 0)
        vc = set->values[t];
      else if (g_strcmp0 (node, "e") == 0)
        ve = set->values[t];
    }
  g_assert_true (va && vb && vc && ve);
  for (guint i = 0; i < 3; i++)
    for (guint l = 0; l < 2; l++)
      {
        double want = 0;

        for (guint j = 0; j < 4; j++)
          for (guint k = 0; k < 5; k++)
            want += va[i * 4 + j] * vb[j * 5 + k] * vc[k * 2 + l];
        g_assert_cmpfloat_with_epsilon (ve[i * 2 + l], want, 1e-3 * (1 + fabs (want)));
      }
}

/* import → save → load → save: the same bytes, and the loaded diagram valid. */
/* Flags of what is dropped (masked_fill(x, pad, −inf), BLOOM's mask) become kept flags
 * in the diagram (1 − pad: a shift by −1 and a negation, int8), then a tensor mask. */
static void
test_graph_drop_flags (void)
{
  static const char json[] =
    "{\"format\": \"napkin-graph\", \"version\": 1, \"nodes\": ["
    "{\"name\": \"x\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 8, 8], \"dtype\": \"fp32\"},"
    "{\"name\": \"pad\", \"op\": \"placeholder\", \"role\": \"input\", \"shape\": [2, 1, 8], \"dtype\": \"bool\"},"
    "{\"name\": \"y\", \"op\": \"call_function\", \"target\": \"aten.masked_fill.Scalar\", "
    "\"args\": [{\"node\": \"x\"}, {\"node\": \"pad\"}, {\"repr\": \"-inf\"}],"
    " \"kwargs\": {}, \"shape\": [2, 8, 8], \"dtype\": \"fp32\", \"line\": 5},"
    "{\"name\": \"output\", \"op\": \"output\", \"outputs\": [{\"node\": \"y\"}]}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_graph (json, strlen (json), NULL, &error);
  const NapkinNode *mask = NULL, *neg, *shift;

  g_assert_no_error (error);
  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    if (napkin_diagram_node (d, i)->kind == NAPKIN_OP_MASK)
      mask = napkin_diagram_node (d, i);
  g_assert_nonnull (mask);
  g_assert_cmpint (mask->mask, ==, NAPKIN_MASK_TENSOR);
  neg = napkin_diagram_node (d, napkin_diagram_input_source (d, napkin_diagram_find_node (d, mask->id), 1));
  g_assert_cmpint (neg->fn, ==, NAPKIN_FN_NEG);
  shift = napkin_diagram_node (d, napkin_diagram_input_source (d, napkin_diagram_find_node (d, neg->id), 0));
  g_assert_cmpint (shift->fn, ==, NAPKIN_FN_SHIFT);
  g_assert_cmpfloat (shift->alpha, ==, -1);
  g_assert_cmpint (napkin_diagram_node_type (d, napkin_diagram_find_node (d, neg->id))->dtype, ==, NAPKIN_DTYPE_INT8);
}

/* GPT-NeoX's partial rotary takes the first dims of each head of its fused projection:
 * a part of a part, refused in one round naming the line and what to write instead,
 * never a diagram the loader refuses in internal words. */
static void
test_graph_partial_rotary (void)
{
  g_autofree char *path = source_path ("partial-rotary.graph.json");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_file (path, &error);

  g_assert_null (d);
  g_assert_nonnull (error);
  g_test_message ("%s", error->message);
  g_assert_nonnull (strstr (error->message, "qkv = self.query_key_value(hidden_states)"));
  g_assert_nonnull (strstr (error->message, "parts of its parts"));
  g_assert_nonnull (strstr (error->message, "rotate whole heads"));
  g_assert_null (strstr (error->message, "would refuse"));
}

static void
test_roundtrip (void)
{
  static const char *const names[] = { "attention.einsum", "llama-block.graph.json", "mlp-swiglu.graph.json" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autoptr(NapkinDiagram) d = import_stored (names[i]);
      g_autoptr(GError) error = NULL;
      g_autofree char *first = napkin_diagram_save_to_data (d, NULL);
      g_autoptr(NapkinDiagram) again = napkin_diagram_load_from_data (first, strlen (first), NAPKIN_LOAD_VALIDATE,
                                                                      &error);
      g_autofree char *second = NULL;

      g_assert_no_error (error);
      g_assert_nonnull (again);
      second = napkin_diagram_save_to_data (again, NULL);
      g_assert_cmpstr (first, ==, second);
      g_assert_cmpuint (napkin_diagram_n_nodes (again), ==, napkin_diagram_n_nodes (d));
    }
}

/* The printer's output for two examples, pinned; and valid Python where python3 is. */
static void
test_pytorch_printer (void)
{
  static const char *const names[] = { "attention", "mlp" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autofree char *file = g_strconcat (names[i], ".napkin", NULL);
      g_autofree char *path = g_build_filename (NAPKIN_SOURCE_DATADIR, "examples", file, NULL);
      g_autofree char *expected_name = g_strconcat (names[i], ".py.expected", NULL);
      g_autofree char *expected_path = source_path (expected_name);
      g_autofree char *expected = NULL;
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
      g_autofree char *text = NULL;
      g_autofree char *python = g_find_program_in_path ("python3");

      g_assert_no_error (error);
      text = napkin_codegen_pytorch (d, &error);
      g_assert_no_error (error);
      g_assert_true (g_file_get_contents (expected_path, &expected, NULL, &error));
      g_assert_cmpstr (text, ==, expected);
      if (python != NULL)
        {
          g_autofree char *dir = g_dir_make_tmp ("napkin-pytorch-XXXXXX", &error);
          g_autofree char *py = g_build_filename (dir, "reference.py", NULL);
          const char *argv[] = { python, "-B", "-m", "py_compile", py, NULL };
          int status = 0;

          g_assert_no_error (error);
          g_assert_true (g_file_set_contents (py, text, -1, &error));
          g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status,
                                       &error));
          g_assert_no_error (error);
          g_assert_true (g_spawn_check_wait_status (status, NULL));
          g_unlink (py);
          g_rmdir (dir);
        }
      else
        g_test_message ("python3 not found: the printed code's syntax is not checked");
    }
}

/* A softmax behind a mask prints through _softmax, which gives a row the mask hid wholly
 * zeros (the interpreter's and the kernels' value; torch.softmax gives NaN); without a
 * mask, torch.softmax as it is. */
static void
test_pytorch_masked_softmax (void)
{
  static const char masked[] = "q=4 k=4 d=8\nQ[q,d] K[k,d] -> s = einsum(\"qd,kd->qk\")\n"
                               "s -> w = window(rows=q, axis=k, offset=-2, left=0, right=0)\n"
                               "w -> p = softmax(k)\noutput p\n";
  static const char plain[] = "q=4 k=4 d=8\nQ[q,d] K[k,d] -> s = einsum(\"qd,kd->qk\")\n"
                              "s -> p = softmax(k)\noutput p\n";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) dm = napkin_import_einsum (masked, NULL, &error);
  g_autoptr(NapkinDiagram) dp = NULL;
  g_autofree char *tm = NULL, *tp = NULL;

  g_assert_no_error (error);
  tm = napkin_codegen_pytorch (dm, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (tm, "def _softmax(x, dim):\n"));
  g_assert_nonnull (strstr (tm, "torch.isneginf(x).all(dim=dim, keepdim=True)"));
  g_assert_nonnull (strstr (tm, " = _softmax(w, dim=1)"));
  g_assert_null (strstr (tm, "torch.softmax(w"));
  dp = napkin_import_einsum (plain, NULL, &error);
  g_assert_no_error (error);
  tp = napkin_codegen_pytorch (dp, &error);
  g_assert_no_error (error);
  g_assert_null (strstr (tp, "_softmax("));
  g_assert_nonnull (strstr (tp, " = torch.softmax(s, dim=1)"));
}

/* The imported block prints too: every operation kind it uses has a line. */
static void
test_pytorch_llama (void)
{
  g_autoptr(NapkinDiagram) d = import_stored ("llama-block.graph.json");
  g_autoptr(GError) error = NULL;
  g_autofree char *text = napkin_codegen_pytorch (d, &error);
  g_autofree char *python = g_find_program_in_path ("python3");

  g_assert_no_error (error);
  g_assert_nonnull (strstr (text, "def forward(attn_norm_weight, wq_weight, wk_weight, wv_weight, wo_weight, "
                                  "mlp_norm_weight, w_gate_weight, w_up_weight, w_down_weight, x, cos, sin):\n"));
  g_assert_nonnull (strstr (text, "    rotate_half_d = _rotate_half_matrix(128, torch.bfloat16, _device)\n"));
  /* the projection reads the normalised activations times the norm's weight, not the weight */
  g_assert_nonnull (strstr (text, "    rms_norm = F.rms_norm(x, (4096,), eps=1e-05)  # RMSNorm\n"
                                  "    rms_norm_weight = rms_norm * _align(attn_norm_weight, \"e\", \"bse\")"));
  g_assert_nonnull (strstr (text, "linear = torch.einsum(\"bse,hgde->bshgd\", rms_norm_weight, wq_weight)"));
  /* the module's [out, in] weights are split row-major into the diagram's axes */
  g_assert_nonnull (strstr (text, "    wq_weight = wq_weight.reshape(8, 4, 128, 4096)  # h g d e\n"));
  g_assert_nonnull (strstr (text, "    wo_weight = wo_weight.reshape(4096, 8, 4, 128)  # e h g dv\n"));
  if (python != NULL)
    {
      /* every argument reshaped first, and each module tensor's shape splits into its axes */
      g_autofree char *dir = g_dir_make_tmp ("napkin-pytorch-XXXXXX", &error);
      g_autofree char *py = g_build_filename (dir, "reference.py", NULL);
      g_autofree char *check = source_path ("check-reshapes.py");
      const char *argv[] = { python, "-B", check, py, "attn_norm_weight=4096", "wq_weight=4096x4096",
                             "wk_weight=1024x4096", "wv_weight=1024x4096", "wo_weight=4096x4096",
                             "mlp_norm_weight=4096", "w_gate_weight=14336x4096", "w_up_weight=14336x4096",
                             "w_down_weight=4096x14336", "x=4x2048x4096", "cos=2048x128", "sin=2048x128", NULL };
      const char *compile[] = { python, "-B", "-m", "py_compile", py, NULL };
      g_autofree char *out = NULL, *err = NULL;
      int status = 0;

      g_assert_no_error (error);
      g_assert_true (g_file_set_contents (py, text, -1, &error));
      g_assert_true (g_spawn_sync (NULL, (char **) compile, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, NULL, &status,
                                   &error));
      g_assert_true (g_spawn_check_wait_status (status, NULL));
      g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status,
                                   &error));
      g_assert_no_error (error);
      g_test_message ("%s%s", out, err);
      g_assert_cmpstr (err, ==, "");
      g_assert_true (g_spawn_check_wait_status (status, NULL));
      g_assert_nonnull (strstr (out, "wq_weight [4096, 4096] -> [8, 4, 128, 4096]\n"));
      g_unlink (py);
      g_rmdir (dir);
    }
  else
    g_test_message ("python3 not found: the printed code's reshapes are not checked");
  g_assert_nonnull (strstr (text, "_band(2048, 2048, 0, -1, 0, scale.device)"));
  g_assert_nonnull (strstr (text, "    return add_3.contiguous()\n"));
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/import/einsum/attention", test_einsum_attention);
  g_test_add_func ("/import/einsum/forms", test_einsum_forms);
  g_test_add_func ("/import/log", test_log);
  g_test_add_func ("/import/einsum/errors", test_einsum_errors);
  g_test_add_func ("/import/graph/llama", test_graph_llama);
  g_test_add_func ("/import/graph/mlp", test_graph_mlp);
  g_test_add_func ("/import/graph/decomposed", test_graph_decomposed);
  g_test_add_func ("/import/graph/unsupported", test_graph_unsupported);
  g_test_add_func ("/import/graph/errors", test_graph_errors);
  g_test_add_func ("/import/graph/reduce-dims", test_graph_reduce_dims);
  g_test_add_func ("/import/graph/einsum-chain", test_graph_einsum_chain);
  g_test_add_func ("/import/graph/drop-flags", test_graph_drop_flags);
  g_test_add_func ("/import/graph/partial-rotary", test_graph_partial_rotary);
  g_test_add_func ("/import/roundtrip", test_roundtrip);
  g_test_add_func ("/import/pytorch/examples", test_pytorch_printer);
  g_test_add_func ("/import/pytorch/llama", test_pytorch_llama);
  g_test_add_func ("/import/pytorch/masked-softmax", test_pytorch_masked_softmax);
  return g_test_run ();
}
