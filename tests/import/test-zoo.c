/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>

#include <json-c/json.h>

#include "napkin-backward.h"
#include "napkin-derive.h"
#include "napkin-grad.h"
#include "napkin-import.h"
#include "napkin-interp.h"
#include "napkin-ir.h"
#include "napkin-model.h"
#include "napkin-plan.h"
#include "napkin-validate.h"

/* The model zoo (tests/import/zoo, docs/import.md "The model zoo"): each module's
 * stored graph imports unedited, its diagram's counts are pinned, and the diagram of
 * its small graph, run in the interpreter on the module's own inputs and parameters
 * filled by regenerate.py's formula, gives the module's output; derived as a user's
 * Suggest Tiles / `tune --apply` derives it, it runs with no generic kernel, its
 * attention as one fused kernel, at a pinned predicted time. No torch needed. */

typedef struct
{
  const char *name;
  /* the diagram of NAME.graph.json: operations by kind (input output contract map
   * reduce softmax normalize rearrange mask) and its axes with their sizes */
  guint       ops[NAPKIN_N_OPS];
  const char *axes;
  /* derived on the H200 profile: kernels, and the predicted time in µs (±0.5 %) */
  guint       kernels;
  double      derived_us;
} Zoo;

/* NAPKIN_ZOO_PRINT=1 prints these rows from the stored graphs. */
static const Zoo zoo[] = {
#include "zoo/expected.h"
};

/* Modules that import, match the module and derive with no generic kernel, but whose
 * attention is not one kernel yet, and why (docs/import.md, "The model zoo"). */
static const char *const unfused[][2] = {
  { "gemma2_attention", "the logit soft-cap's tanh between the products: the attention kernel takes none" },
  { "sagan_attention", "the queries are an image's h and w (two axes): the attention kernel takes one" },
  { "sd_vae_attn_block", "the queries are an image's h and w (two axes): the attention kernel takes one" },
};

/* Modules whose backward keeps a generic kernel, and the plan's reason it names
 * (docs/import.md, "The model zoo"): a gap pinned, not hidden — any other generic kernel
 * fails. */
static const char *const backward_generic_kept[][2] = {
  /* the gradient of Z in einsum("nlhm,nlh->nlhm"): Σ_m dV·(Q·KV), a dot product a row */
  { "linear_attention", "is a dot product a batch element (no row and no column axis)" },
};

/* The reason `table` (n rows of module, reason) gives for module `name`, or NULL. */
static const char *
listed (const char *const (*table)[2],
        guint             n,
        const char       *name)
{
  for (guint i = 0; i < n; i++)
    if (g_str_equal (table[i][0], name))
      return table[i][1];
  return NULL;
}

static const char *
unfused_reason (const char *name)
{
  return listed (unfused, G_N_ELEMENTS (unfused), name);
}

/* A generic backward kernel the module keeps: the plan's reason is the one listed. */
static gboolean
backward_generic_kept_for (const char             *name,
                           const NapkinPlanKernel *pk)
{
  const char *kept = listed (backward_generic_kept, G_N_ELEMENTS (backward_generic_kept), name);

  return kept != NULL && pk->reason != NULL && strstr (pk->reason, kept) != NULL;
}

static void derive_zoo (const char    *name,
                        NapkinDiagram *d,
                        guint         *kernels,
                        double        *us);

static char *
zoo_path (const char *name,
          const char *suffix)
{
  g_autofree char *file = g_strconcat (name, suffix, NULL);

  return g_test_build_filename (G_TEST_DIST, "import", "zoo", file, NULL);
}

static char *
axes_of (NapkinDiagram *d)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < napkin_diagram_n_axes (d); i++)
    g_string_append_printf (s, "%s%s=%" G_GINT64_FORMAT, i ? " " : "", napkin_diagram_axis (d, i)->name,
                            napkin_diagram_axis (d, i)->size);
  return g_string_free (s, FALSE);
}

static NapkinDiagram *
import_zoo (const char *name,
            const char *suffix,
            char      **text)
{
  g_autofree char *path = zoo_path (name, suffix);
  g_autoptr(GError) error = NULL;
  gsize length;
  NapkinDiagram *d;

  g_assert_true (g_file_get_contents (path, text, &length, &error));
  d = napkin_import_graph (*text, length, path, &error);
  g_assert_no_error (error);
  g_assert_nonnull (d);
  g_assert_true (napkin_diagram_validate (d, &error));
  g_assert_no_error (error);
  return d;
}

static void
test_counts (gconstpointer data)
{
  const Zoo *z = data;
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (z->name, ".graph.json", &text);
  g_autofree char *axes = axes_of (d);
  guint ops[NAPKIN_N_OPS] = { 0 };

  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    ops[napkin_diagram_node (d, i)->kind]++;
  if (g_getenv ("NAPKIN_ZOO_PRINT") != NULL)
    {
      guint kernels;
      double us;

      derive_zoo (z->name, d, &kernels, &us);
      g_print ("  { \"%s\", { %u, %u, %u, %u, %u, %u, %u, %u, %u },\n    \"%s\",\n    %u, %.2f },\n", z->name,
               ops[0], ops[1], ops[2], ops[3], ops[4], ops[5], ops[6], ops[7], ops[8], axes, kernels, us);
      return;
    }
  for (guint k = 0; k < NAPKIN_N_OPS; k++)
    if (ops[k] != z->ops[k])
      g_error ("%s: %u %s operations, %u pinned", z->name, ops[k], napkin_op_kind_to_string (k), z->ops[k]);
  g_assert_cmpstr (axes, ==, z->axes);
}

/* ---------------------------------------------------------------- the values */

static guint64
fnv1a64 (const char *s)
{
  guint64 h = G_GUINT64_CONSTANT (0xcbf29ce484222325);

  for (; *s; s++)
    h = (h ^ (guchar) *s) * G_GUINT64_CONSTANT (0x100000001b3);
  return h;
}

/* regenerate.py's uniform draw in [-1, 1) for element i of the parameter `name` */
static double
uniform (guint64 h,
         gint64  i)
{
  guint64 z = h + (guint64) (i + 1) * G_GUINT64_CONSTANT (0x9E3779B97F4A7C15);

  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT (0xBF58476D1CE4E5B9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT (0x94D049BB133111EB);
  z ^= z >> 31;
  return (double) (z >> 11) * ldexp (1.0, -53) * 2.0 - 1.0;
}

static double
number (json_object *x)
{
  const char *s;

  if (!json_object_is_type (x, json_type_string))
    return json_object_get_double (x);
  s = json_object_get_string (x);
  return g_str_equal (s, "-inf") ? -INFINITY : g_str_equal (s, "inf") ? INFINITY : NAN;
}

/* The whole value of graph node `node`: stored in the check, else a parameter's fill. */
static double *
node_values (json_object *graph_node,
             json_object *values,
             gint64      *shape,
             guint       *rank,
             gint64      *n)
{
  json_object *shape_json = json_object_object_get (graph_node, "shape");
  const char *name = json_object_get_string (json_object_object_get (graph_node, "name"));
  json_object *stored = json_object_object_get (values, name);
  double *out;

  *rank = json_object_array_length (shape_json);
  *n = 1;
  for (guint k = 0; k < *rank; k++)
    *n *= shape[k] = json_object_get_int64 (json_object_array_get_idx (shape_json, k));
  out = g_new (double, *n);
  if (stored != NULL)
    {
      g_assert_cmpint (json_object_array_length (stored), ==, *n);
      for (gint64 i = 0; i < *n; i++)
        out[i] = number (json_object_array_get_idx (stored, i));
      return out;
    }
  {
    const char *target = json_object_get_string (json_object_object_get (graph_node, "target"));
    guint64 h = fnv1a64 (name);

    g_assert_cmpstr (json_object_get_string (json_object_object_get (graph_node, "role")), ==, "parameter");
    for (gint64 i = 0; i < *n; i++)
      {
        double u = uniform (h, i);

        out[i] = *rank >= 2 ? u / sqrt ((double) shape[*rank - 1])
                 : *rank == 1 && g_str_has_suffix (target, "weight") ? 1.0 + 0.1 * u
                 : *rank == 1 ? 0.1 * u : u;
      }
  }
  return out;
}

/* The part `slices` of a row-major array of `shape`, row-major: per dimension a range
 * [start, end), or the dimension viewed as `view` and a box [lo, hi) of that (a fused
 * projection viewed [h, 3, d] and indexed in the middle). */
static void
take_box (const double *all,
          const gint64 *shape,
          guint         rank,
          json_object  *slices,
          double       *out,
          gint64        n_out)
{
  GArray *at[NAPKIN_MAX_RANK] = { NULL };
  gint64 idx[NAPKIN_MAX_RANK];

  for (guint k = 0; k < rank; k++)
    {
      at[k] = g_array_new (FALSE, FALSE, sizeof (gint64));
      idx[k] = 0;
      for (gint64 i = 0; i < shape[k]; i++)
        g_array_append_val (at[k], i);
    }
  for (guint s = 0; slices != NULL && s < json_object_array_length (slices); s++)
    {
      json_object *sl = json_object_array_get_idx (slices, s);
      int dim = json_object_get_int (json_object_object_get (sl, "dim"));
      json_object *view = json_object_object_get (sl, "view");

      g_array_set_size (at[dim], 0);
      if (view == NULL)
        for (gint64 i = json_object_get_int64 (json_object_object_get (sl, "start"));
             i < json_object_get_int64 (json_object_object_get (sl, "end")); i++)
          g_array_append_val (at[dim], i);
      else
        {
          guint n = json_object_array_length (view);
          gint64 lo[NAPKIN_MAX_RANK * 4], hi[NAPKIN_MAX_RANK * 4], size[NAPKIN_MAX_RANK * 4], j[NAPKIN_MAX_RANK * 4];
          gboolean more = TRUE;

          g_assert_cmpuint (n, <=, G_N_ELEMENTS (lo));
          for (guint a = 0; a < n; a++)
            {
              size[a] = json_object_get_int64 (json_object_array_get_idx (view, a));
              lo[a] = j[a] = json_object_get_int64 (json_object_array_get_idx (json_object_object_get (sl, "lo"), a));
              hi[a] = json_object_get_int64 (json_object_array_get_idx (json_object_object_get (sl, "hi"), a));
              more &= lo[a] < hi[a];
            }
          while (more)
            {
              gint64 flat = 0;

              for (guint a = 0; a < n; a++)
                flat = flat * size[a] + j[a];
              g_array_append_val (at[dim], flat);
              more = FALSE;
              for (int a = (int) n - 1; a >= 0 && !more; a--)
                if (++j[a] < hi[a])
                  more = TRUE;
                else
                  j[a] = lo[a];
            }
        }
    }
  for (gint64 i = 0; i < n_out; i++)
    {
      gint64 flat = 0;

      for (guint k = 0; k < rank; k++)
        flat = flat * shape[k] + g_array_index (at[k], gint64, idx[k]);
      out[i] = all[flat];
      for (int k = (int) rank - 1; k >= 0; k--)
        if (++idx[k] < (gint64) at[k]->len)
          break;
        else
          idx[k] = 0;
    }
  for (guint k = 0; k < rank; k++)
    g_array_unref (at[k]);
}

static gboolean
is_output (NapkinDiagram *d,
           guint          t)
{
  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    if (napkin_diagram_node (d, i)->kind == NAPKIN_OP_OUTPUT
        && g_strcmp0 (napkin_diagram_node (d, i)->tensor, napkin_diagram_tensor (d, t)->name) == 0)
      return TRUE;
  return FALSE;
}

static json_object *
graph_node (json_object *root,
            const char  *name)
{
  json_object *nodes = json_object_object_get (root, "nodes");

  for (guint i = 0; i < json_object_array_length (nodes); i++)
    if (g_strcmp0 (json_object_get_string (json_object_object_get (json_object_array_get_idx (nodes, i), "name")),
                   name) == 0)
      return json_object_array_get_idx (nodes, i);
  return NULL;
}

/* The plan's own diagram (casts folded, values laid out for the kernels that read
 * them, renames permuted along) computes what the diagram computes: on the same inputs
 * its outputs match `want`'s, the diagram's own in the interpreter. */
static void
check_planned (const Zoo       *z,
               NapkinDiagram   *d,
               NapkinTensorSet *want)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", &error);
  g_autoptr(NapkinPlan) plan = napkin_plan_build (d, arch, NULL, &error);
  g_autoptr(NapkinTensorSet) set = NULL;
  g_autoptr(NapkinIrProgram) prog = NULL;

  g_assert_no_error (error);
  set = napkin_tensor_set_new_random (plan->diagram, 1);
  for (guint t = 0; t < napkin_diagram_n_tensors (plan->diagram); t++)
    {
      int w = napkin_diagram_find_tensor (d, napkin_diagram_tensor (plan->diagram, t)->name);

      g_assert_cmpint (w, >=, 0);
      g_assert_cmpint (set->elements[t], ==, want->elements[w]);
      if (!is_output (d, (guint) w))
        memcpy (set->values[t], want->values[w], sizeof (double) * set->elements[t]);
    }
  prog = napkin_ir_lower (plan->diagram, NAPKIN_LOWER_PLAIN, &error);
  g_assert_no_error (error);
  g_assert_true (napkin_ir_interpret (prog, set, &error));
  g_assert_no_error (error);
  for (guint t = 0; t < napkin_diagram_n_tensors (plan->diagram); t++)
    {
      int w = napkin_diagram_find_tensor (d, napkin_diagram_tensor (plan->diagram, t)->name);
      double worst = 0, top = 0;

      if (!is_output (d, (guint) w))
        continue;
      for (gint64 i = 0; i < set->elements[t]; i++)
        {
          worst = MAX (worst, fabs (set->values[t][i] - want->values[w][i]));
          top = MAX (top, fabs (want->values[w][i]));
        }
      if (!(worst <= 1e-4 * top))
        g_error ("%s: the plan's diagram gives %s off by %g (largest %g)", z->name,
                 napkin_diagram_tensor (d, (guint) w)->name, worst, top);
    }
}

static void
test_values (gconstpointer data)
{
  const Zoo *z = data;
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (z->name, ".small.json", &text);
  json_object *root = json_tokener_parse (text);
  json_object *values = json_object_object_get (json_object_object_get (root, "check"), "values");
  g_autoptr(NapkinTensorSet) set = napkin_tensor_set_new_random (d, 1);
  g_autoptr(NapkinIrProgram) prog = NULL;
  g_autoptr(GError) error = NULL;
  guint n_outputs = 0;

  g_assert_nonnull (values);
  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      json_object *source = tensor->extra ? json_object_object_get (tensor->extra, "source") : NULL;
      json_object *gn;
      gint64 shape[NAPKIN_MAX_RANK], n;
      guint rank;
      g_autofree double *all = NULL;

      if (source == NULL || is_output (d, t))
        continue;  /* a constant (rotate_half) keeps the interpreter's fill */
      gn = graph_node (root, json_object_get_string (json_object_object_get (source, "node")));
      g_assert_nonnull (gn);
      all = node_values (gn, values, shape, &rank, &n);
      take_box (all, shape, rank, json_object_object_get (source, "slices"), set->values[t], set->elements[t]);
      for (gint64 i = 0; i < set->elements[t]; i++)
        set->values[t][i] = napkin_round_to_dtype (set->values[t][i], tensor->dtype);
    }
  prog = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN, &error);
  g_assert_no_error (error);
  g_assert_true (napkin_ir_interpret (prog, set, &error));
  g_assert_no_error (error);
  check_planned (z, d, set);
  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      json_object *source = json_object_object_get (tensor->extra, "source");
      json_object *want;
      double worst = 0, top = 0;

      if (!is_output (d, t))
        continue;
      want = json_object_object_get (values, json_object_get_string (json_object_object_get (source, "node")));
      g_assert_nonnull (want);
      g_assert_cmpint (json_object_array_length (want), ==, set->elements[t]);
      for (gint64 i = 0; i < set->elements[t]; i++)
        {
          double w = number (json_object_array_get_idx (want, i));

          worst = MAX (worst, fabs (set->values[t][i] - w));
          top = MAX (top, fabs (w));
        }
      if (!(worst <= 1e-4 * top))
        g_error ("%s: output %s differs from the module's by %g (largest %g)", z->name, tensor->name, worst, top);
      n_outputs++;
    }
  g_assert_cmpuint (n_outputs, >, 0);
  json_object_put (root);
}

/* ---------------------------------------------------------------- the derivation */

/* The zoo entry derived as Apply derives it, checked (no generic kernel, every softmax
 * in one attention kernel with its products, the table's total what `analyze` says);
 * its main kernels and predicted time on the H200 profile. */
static void
derive_zoo (const char    *name,
            NapkinDiagram *d,
            guint         *kernels,
            double        *us)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", &error);
  g_autoptr(NapkinDerivation) r = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  guint softmaxes = 0, in_attention = 0, attention_kernels = 0;

  g_assert_no_error (error);
  r = napkin_derive (d, arch, NULL, &error);
  g_assert_no_error (error);
  /* what Apply writes, planned and priced as `analyze` and Run see it */
  a = napkin_analyze (r->derived, arch, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    softmaxes += napkin_diagram_node (d, i)->kind == NAPKIN_OP_SOFTMAX;
  *kernels = 0;
  for (guint i = 0; i < a->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (a->plan->kernels, i);

      if (pk->kind == NAPKIN_PLAN_GENERIC)
        g_error ("%s: kernel %s is generic: %s", name, pk->name, pk->reason ? pk->reason : "");
      if (pk->kind == NAPKIN_PLAN_REPACK || pk->kind == NAPKIN_PLAN_SPLIT_REDUCE
          || pk->kind == NAPKIN_PLAN_ATTENTION_COMBINE)
        continue;
      (*kernels)++;
      if (pk->kind != NAPKIN_PLAN_ATTENTION)
        continue;
      attention_kernels++;
      for (guint j = 0; j < pk->nodes->len; j++)
        in_attention += napkin_diagram_node (a->plan->diagram, g_array_index (pk->nodes, guint, j))->kind
                        == NAPKIN_OP_SOFTMAX;
    }
  /* every softmax of the zoo is an attention's: each fused with its two products —
   * but those listed as not fused yet, which must still not be (a fused one leaves the
   * list) */
  if (unfused_reason (name) != NULL)
    g_assert_cmpuint (in_attention, <, softmaxes);
  else
    {
      g_assert_cmpuint (in_attention, ==, softmaxes);
      g_assert_cmpuint (attention_kernels, ==, softmaxes);
    }
  g_assert_cmpfloat_with_epsilon (r->analyzed_s, a->predicted_time_s, 1e-12);
  g_assert_cmpfloat_with_epsilon (r->derived_s, a->predicted_time_s, 1e-12);
  *us = a->predicted_time_s * 1e6;
}

static void
test_derived (gconstpointer data)
{
  const Zoo *z = data;
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (z->name, ".graph.json", &text);
  guint kernels;
  double us;

  if (g_getenv ("NAPKIN_ZOO_PRINT") != NULL)
    return;     /* test_counts printed the row */
  derive_zoo (z->name, d, &kernels, &us);
  g_assert_cmpuint (kernels, ==, z->kernels);
  if (fabs (us - z->derived_us) > 5e-3 * z->derived_us)
    g_error ("%s: derived %.2f µs, %.2f pinned", z->name, us, z->derived_us);
}

/* ---------------------------------------------------------------- the backward */

/* The module's backward (`napkin-cli grad` on the imported graph): planned at the stored
 * graph's sizes on the H200 profile, no product runs generic — a gradient stored as its
 * input was ([b, k, h, d]) gets a copy after its product, an operand that splits the
 * product's axes one before it (docs/plan.md, "The pipeline"); only tensor masks outside
 * an attention are left to the generic lowering (the element-wise kernel masks by
 * position). At the small graph's sizes, the plan's own diagram of the backward, copies
 * and all, computes what the backward diagram computes. */
static void
test_backward (gconstpointer data)
{
  const Zoo *z = data;
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", &error);
  g_autofree char *text = NULL, *small_text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (z->name, ".graph.json", &text);
  g_autoptr(NapkinDiagram) small = import_zoo (z->name, ".small.json", &small_text);
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(NapkinDiagram) small_backward = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinTensorSet) set = NULL;
  g_autoptr(NapkinIrProgram) prog = NULL;

  g_assert_no_error (error);
  backward = napkin_grad_diagram (d, NULL, NULL, &error);
  g_assert_no_error (error);
  plan = napkin_plan_build (backward, arch, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (plan->kernels, i);

      if (pk->kind == NAPKIN_PLAN_GENERIC && !backward_generic_kept_for (z->name, pk)
          && !(pk->reason != NULL && strstr (pk->reason, "the element-wise kernel masks by position only") != NULL))
        g_error ("%s: backward kernel %s is generic: %s", z->name, pk->name, pk->reason ? pk->reason : "");
    }

  small_backward = napkin_grad_diagram (small, NULL, NULL, &error);
  g_assert_no_error (error);
  set = napkin_tensor_set_new_random (small_backward, 3);
  prog = napkin_ir_lower (small_backward, NAPKIN_LOWER_PLAIN, &error);
  g_assert_no_error (error);
  g_assert_true (napkin_ir_interpret (prog, set, &error));
  g_assert_no_error (error);
  check_planned (z, small_backward, set);
}

/* Attentions whose backward, the softmax recomputed, is not one fused kernel yet, and why
 * (docs/training.md, "Not done yet"). */
static const char *const backward_unfused[][2] = {
  { "bloom_attention", "keep flags computed from the mask in the module (1 − mask, not int8)" },
  { "gemma2_attention", "the logit soft-cap's tanh between the products" },
  { "sagan_attention", "the queries are an image's h and w (two axes)" },
  { "sd_vae_attn_block", "the queries are an image's h and w (two axes)" },
};

/* The backward with every softmax recomputed (`napkin-cli grad --recompute softmax`, as
 * FlashAttention trains): each attention of the zoo not listed above is one fused
 * attention-backward kernel on the H200, and a listed one is not (the list stays true). */
static void
test_backward_fused (gconstpointer data)
{
  const Zoo *z = data;
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", &error);
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (z->name, ".graph.json", &text);
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  const char *why = NULL;
  guint fused = 0;

  g_assert_no_error (error);
  if (z->ops[NAPKIN_OP_SOFTMAX] == 0)
    {
      g_test_skip ("no softmax");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (backward_unfused); i++)
    if (g_str_equal (backward_unfused[i][0], z->name))
      why = backward_unfused[i][1];
  backward = napkin_backward_diagram (d, NULL, NAPKIN_BACKWARD_RECOMPUTE, arch, NULL, NULL, &error);
  g_assert_no_error (error);
  plan = napkin_plan_build (backward, arch, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < plan->kernels->len; i++)
    fused += ((const NapkinPlanKernel *) g_ptr_array_index (plan->kernels, i))->kind == NAPKIN_PLAN_ATTENTION_BACKWARD;
  if (why == NULL && fused == 0)
    g_error ("%s: the backward has no fused attention-backward kernel", z->name);
  if (why != NULL && fused > 0)
    g_error ("%s: listed as unfused (%s) but its backward fuses: take it off the list", z->name, why);
}

/* The fused attention backward of an imported module, the softmax recomputed. */
static const NapkinPlanKernel *
fused_backward (const char         *name,
                const char * const *wrt,
                NapkinPlan        **plan)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h200", &error);
  g_autofree char *text = NULL;
  g_autoptr(NapkinDiagram) d = import_zoo (name, ".graph.json", &text);
  g_autoptr(NapkinDiagram) backward = NULL;
  const NapkinPlanKernel *k = NULL;

  g_assert_no_error (error);
  backward = napkin_backward_diagram (d, wrt, NAPKIN_BACKWARD_RECOMPUTE, arch, NULL, NULL, &error);
  g_assert_no_error (error);
  *plan = napkin_plan_build (backward, arch, NULL, &error);
  g_assert_no_error (error);
  for (guint i = 0; i < (*plan)->kernels->len; i++)
    if (((const NapkinPlanKernel *) g_ptr_array_index ((*plan)->kernels, i))->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
      k = g_ptr_array_index ((*plan)->kernels, i);
  g_assert_nonnull (k);
  return k;
}

/* Llama's attention: its additive mask [b, s, k] is a score operand of the fused
 * backward — a bias added to the raw scores, weighed 1/α as the module adds it after the
 * scale, every head's (no head stride, the keys contiguous). Trained as people train it
 * (the mask and the rotary tables frozen) the kernel writes no gradient of it; asked for
 * (the default: every float input), it sums dS over the heads into d_attention_mask. */
static void
test_backward_bias (void)
{
  static const char *const wrt[] = { "q_proj_weight", "k_proj_weight", "v_proj_weight", "o_proj_weight",
                                     "hidden_states", NULL };

  for (guint frozen = 0; frozen < 2; frozen++)
    {
      g_autoptr(NapkinPlan) plan = NULL;
      const NapkinPlanKernel *k = fused_backward ("hf_llama_attention", frozen ? wrt : NULL, &plan);
      const NapkinPlanAttnBackward *b = &k->u.bwd;

      g_assert_cmpuint (b->a.n_scores, ==, 1);
      g_assert_cmpint (b->a.scores[0].kind, ==, NAPKIN_ATTN_SCORE_BIAS);
      g_assert_cmpfloat_with_epsilon (b->a.scores[0].coef * b->a.alpha, 1.0, 1e-9);
      g_assert_cmpint (b->a.scores[0].row, ==, 2048);
      g_assert_cmpint (b->a.group, ==, 4);
      g_assert_cmpint (b->a.scores[0].group, ==, 0);
      if (frozen)
        {
          g_assert_cmpint (b->d_bias.node, <, 0);
          continue;
        }
      /* d_attention_mask [b 4, s 2048, k 2048]: Σ over h and g of dS (the mask comes after
       * the scale: weight 1) */
      g_assert_cmpint (b->d_bias.node, >=, 0);
      g_assert_cmpstr (napkin_diagram_node (plan->diagram, (guint) b->d_bias.node)->kind == NAPKIN_OP_REDUCE ? "reduce"
                       : "other", ==, "reduce");
      g_assert_cmpint (b->d_bias_elems, ==, 4 * 2048 * 2048);
      g_assert_cmpfloat_with_epsilon (b->d_bias_weight, 1.0, 1e-12);
      g_assert_cmpint (b->d_bias_at.row, ==, 2048);
      g_assert_cmpint (b->d_bias_at.group, ==, 0);
      g_assert_cmpint (b->d_bias_at.lead[0], ==, 2048 * 2048);   /* b */
      g_assert_cmpint (b->d_bias_at.lead[1], ==, 0);             /* the K/V heads */
      g_assert_nonnull (strstr (k->note, "the bias's gradient summed in fp32"));
    }
}

/* T5's relative position bias [h, s, k] is trained: the fused backward sums its gradient
 * over the batch (no scale in T5's attention: weight 1). */
static void
test_backward_bias_t5 (void)
{
  g_autoptr(NapkinPlan) plan = NULL;
  const NapkinPlanKernel *k = fused_backward ("t5_attention", NULL, &plan);
  const NapkinPlanAttnBackward *b = &k->u.bwd;

  g_assert_cmpuint (b->a.n_scores, ==, 1);
  g_assert_cmpint (b->d_bias.node, >=, 0);
  g_assert_cmpfloat_with_epsilon (b->d_bias_weight, 1.0, 1e-12);
  g_assert_cmpint (b->d_bias_elems, ==, b->a.heads * b->a.NQ * b->a.NKV);
  g_assert_cmpint (b->d_bias_at.lead[0], ==, 0);   /* the batch: summed */
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  for (guint i = 0; i < G_N_ELEMENTS (zoo); i++)
    {
      g_autofree char *counts = g_strdup_printf ("/import/zoo/%s/counts", zoo[i].name);
      g_autofree char *run = g_strdup_printf ("/import/zoo/%s/values", zoo[i].name);
      g_autofree char *derived = g_strdup_printf ("/import/zoo/%s/derived", zoo[i].name);

      g_test_add_data_func (counts, &zoo[i], test_counts);
      g_test_add_data_func (run, &zoo[i], test_values);
      g_test_add_data_func (derived, &zoo[i], test_derived);
    }
  for (guint i = 0; i < G_N_ELEMENTS (zoo); i++)
    {
      g_autofree char *backward = g_strdup_printf ("/import/zoo/%s/backward", zoo[i].name);

      g_autofree char *fused = g_strdup_printf ("/import/zoo/%s/backward-fused", zoo[i].name);

      g_test_add_data_func (backward, &zoo[i], test_backward);
      if (zoo[i].ops[NAPKIN_OP_SOFTMAX] > 0)
        g_test_add_data_func (fused, &zoo[i], test_backward_fused);
    }
  g_test_add_func ("/import/zoo/hf_llama_attention/backward-bias", test_backward_bias);
  g_test_add_func ("/import/zoo/t5_attention/backward-bias-gradient", test_backward_bias_t5);
  return g_test_run ();
}
