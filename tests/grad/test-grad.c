/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The backward diagram (docs/training.md): for one tiny diagram per operation kind and
 * for every bundled example, the gradients that the backward diagram computes in the
 * CPU interpreter (float64) match central differences of the forward, for a random
 * output gradient; the backward diagram validates and survives a save and a load. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-file.h"
#include "napkin-grad.h"
#include "napkin-import.h"
#include "napkin-interp.h"
#include "napkin-test-load.h"
#include "napkin-validate.h"

#define TOLERANCE 1e-6     /* relative: central differences in float64 are good to ~1e-9 */
#define STEP      1e-5
#define MAX_CHECKS 48      /* elements per input checked one by one; the rest by a direction */
#define ZOO_CHECKS 6       /* the same for the model zoo's larger diagrams */

/* ---- building tiny diagrams ------------------------------------------------------------ */

/* A diagram from JSON fragments written with ' for " (readable in C), wires as
 * "from>to" or "from>to:1" separated by spaces. */
static NapkinDiagram *
diagram_new (const char *axes,
             const char *tensors,
             const char *nodes,
             const char *wires)
{
  g_autoptr(GString) json = g_string_new ("{'format':'napkin','version':1,'axes':[");
  g_auto(GStrv) list = g_strsplit (wires, " ", -1);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d;

  g_string_append_printf (json, "%s],'tensors':[%s],'nodes':[%s],'wires':[", axes, tensors, nodes);
  for (guint i = 0; list[i] != NULL; i++)
    {
      g_auto(GStrv) ends = g_strsplit_set (list[i], ">:", 3);

      g_string_append_printf (json, "%s{'from':'%s','to':'%s','port':%s}", i ? "," : "", ends[0], ends[1],
                              ends[2] ? ends[2] : "0");
    }
  g_string_append (json, "]}");
  g_strdelimit (json->str, "'", '"');
  d = napkin_diagram_load_from_data (json->str, json->len, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  return d;
}

/* ---- the check ------------------------------------------------------------------------- */

static NapkinTensorSet *
run (NapkinIrProgram *program,
     NapkinTensorSet *set)
{
  g_autoptr(GError) error = NULL;

  napkin_ir_interpret_float64 (program, set, &error);
  g_assert_no_error (error);
  return set;
}

/* Σ over the forward's outputs O of d_O · O (d_O = 1 for an output of no axes). */
static double
loss (NapkinIrProgram *forward,
      NapkinTensorSet *set,
      NapkinTensorSet *backward_set)
{
  NapkinDiagram *d = set->diagram;
  double sum = 0;

  run (forward, set);
  for (guint v = 0; v < napkin_diagram_n_nodes (d); v++)
    {
      const NapkinNode *node = napkin_diagram_node (d, v);
      g_autofree char *seed_name = NULL;
      int t, seed;

      if (node->kind != NAPKIN_OP_OUTPUT)
        continue;
      t = napkin_diagram_find_tensor (d, node->tensor);
      seed_name = g_strdup_printf ("d_%s", node->tensor);
      seed = napkin_diagram_find_tensor (backward_set->diagram, seed_name);
      for (gint64 i = 0; i < set->elements[t]; i++)
        {
          double o = set->values[t][i];

          sum += seed >= 0 ? backward_set->values[seed][i] * o : o;
        }
    }
  return sum;
}

static gboolean
is_input (NapkinDiagram *d,
          const char    *tensor)
{
  for (guint v = 0; v < napkin_diagram_n_nodes (d); v++)
    if (napkin_diagram_node (d, v)->kind == NAPKIN_OP_INPUT && g_str_equal (napkin_diagram_node (d, v)->tensor, tensor))
      return TRUE;
  return FALSE;
}

/* The largest relative error of the backward diagram's gradients against central
 * differences of the forward, over the inputs it differentiates. The forward and the
 * backward must have regions stripped and the same axis sizes. */
static double
gradient_error_checks (NapkinDiagram *forward,
                       NapkinDiagram *backward,
                       guint64        seed,
                       gint64         max_checks)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) fprog = napkin_ir_lower (forward, NAPKIN_LOWER_PLAIN, &error);
  g_autoptr(NapkinIrProgram) bprog = NULL;
  g_autoptr(NapkinTensorSet) bset = napkin_tensor_set_new_random (backward, seed);
  g_autoptr(NapkinTensorSet) fset = napkin_tensor_set_new_random (forward, seed);
  double worst = 0;
  guint checked = 0;

  g_assert_no_error (error);
  bprog = napkin_ir_lower (backward, NAPKIN_LOWER_PLAIN, &error);
  g_assert_no_error (error);

  /* the forward reads the backward's values of its inputs */
  for (guint t = 0; t < fset->n_tensors; t++)
    {
      int b = napkin_diagram_find_tensor (backward, napkin_diagram_tensor (forward, t)->name);

      g_assert_cmpint (b, >=, 0);
      memcpy (fset->values[t], bset->values[b], sizeof (double) * fset->elements[t]);
    }
  run (bprog, bset);

  for (guint t = 0; t < fset->n_tensors; t++)
    {
      const char *name = napkin_diagram_tensor (forward, t)->name;
      g_autofree char *grad_name = g_strdup_printf ("d_%s", name);
      int g = napkin_diagram_find_tensor (backward, grad_name);
      gint64 n = fset->elements[t];
      gint64 stride = MAX (1, n / max_checks);
      double *x = fset->values[t];
      double *grad, largest = 0, diff = 0;

      if (g < 0 || !is_input (forward, name))
        continue;   /* not an input asked for */
      grad = bset->values[g];
      for (gint64 i = 0; i < n; i += stride)
        {
          double keep = x[i], up, down, fd;

          x[i] = keep + STEP;
          up = loss (fprog, fset, bset);
          x[i] = keep - STEP;
          down = loss (fprog, fset, bset);
          x[i] = keep;
          fd = (up - down) / (2 * STEP);
          g_assert_true (isfinite (grad[i]));
          largest = MAX (largest, fabs (fd));
          diff = MAX (diff, fabs (fd - grad[i]));
        }
      /* the elements skipped, all at once: along a random direction */
      if (stride > 1)
        {
          g_autofree double *dir = g_new (double, MAX (n, 1));
          g_autofree double *keep = g_memdup2 (x, sizeof (double) * n);
          g_autoptr(GRand) rand = g_rand_new_with_seed (seed);
          double up, down, dot = 0;

          for (gint64 i = 0; i < n; i++)
            {
              dir[i] = g_rand_double_range (rand, -1, 1);
              dot += dir[i] * grad[i];
            }
          for (gint64 i = 0; i < n; i++)
            x[i] = keep[i] + STEP * dir[i];
          up = loss (fprog, fset, bset);
          for (gint64 i = 0; i < n; i++)
            x[i] = keep[i] - STEP * dir[i];
          down = loss (fprog, fset, bset);
          memcpy (x, keep, sizeof (double) * n);
          largest = MAX (largest, fabs ((up - down) / (2 * STEP)));
          diff = MAX (diff, fabs ((up - down) / (2 * STEP) - dot));
        }
      g_test_message ("d_%s: largest %g, difference %g", name, largest, diff);
      worst = MAX (worst, diff / MAX (largest, 1e-3));
      checked++;
    }
  g_assert_cmpuint (checked, >, 0);
  return worst;
}

static double
gradient_error (NapkinDiagram *forward,
                NapkinDiagram *backward,
                guint64        seed)
{
  return gradient_error_checks (forward, backward, seed, MAX_CHECKS);
}

/* Saves and loads the backward diagram: same bytes the second time. */
static void
assert_round_trip (NapkinDiagram *backward)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *text = napkin_diagram_save_to_data (backward, NULL);
  g_autoptr(NapkinDiagram) again = napkin_diagram_load_from_data (text, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autofree char *text2 = NULL;

  g_assert_no_error (error);
  text2 = napkin_diagram_save_to_data (again, NULL);
  g_assert_cmpstr (text, ==, text2);
}

static NapkinDiagram *
backward_of (NapkinDiagram      *forward,
             const char * const *wrt)
{
  g_autoptr(GError) error = NULL;
  NapkinDiagram *backward = napkin_grad_diagram (forward, wrt, NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (backward);
  g_assert_true (napkin_diagram_validate (backward, NULL));
  assert_round_trip (backward);
  return backward;
}

static void
check (NapkinDiagram *forward)
{
  g_autoptr(NapkinDiagram) backward = backward_of (forward, NULL);
  double err = gradient_error (forward, backward, 11);

  g_assert_cmpfloat (err, <, TOLERANCE);
}

/* ---- one diagram per operation -------------------------------------------------------- */

#define AXES_MN "{'name':'m','size':3},{'name':'n','size':4}"
#define T(name, axes) "{'name':'" name "','axes':[" axes "],'dtype':'fp32'}"
#define IN(id, tensor) "{'id':'" id "','kind':'input','tensor':'" tensor "'}"
#define OUT(id, tensor) "{'id':'" id "','kind':'output','tensor':'" tensor "'}"
/* x² + ½: a value away from 0, for sqrt, rsqrt and a denominator */
#define POSITIVE "{'id':'sq','kind':'map','fn':'square'},{'id':'pos','kind':'map','fn':'shift','alpha':0.5}"

/* x[m,n] → fn → Y */
static void
test_unary (gconstpointer data)
{
  const char *fn = data;
  gboolean positive = g_str_equal (fn, "sqrt") || g_str_equal (fn, "rsqrt") || g_str_equal (fn, "log")
                      || g_str_equal (fn, "reciprocal");
  const char *extra = g_str_equal (fn, "scale") ? ",'alpha':'1/sqrt(n)'"
                      : g_str_equal (fn, "shift") ? ",'alpha':0.25"
                      : g_str_equal (fn, "cast") ? ",'dtype':'fp16'" : "";
  g_autofree char *nodes = g_strdup_printf (IN ("x", "X") "," POSITIVE ",{'id':'f','kind':'map','fn':'%s'%s},"
                                            OUT ("y", "Y"), fn, extra);
  g_autoptr(NapkinDiagram) d = NULL;

  if (!positive)
    {
      g_free (nodes);
      nodes = g_strdup_printf (IN ("x", "X") ",{'id':'f','kind':'map','fn':'%s'%s}," OUT ("y", "Y"), fn, extra);
    }
  d = diagram_new (AXES_MN, g_str_equal (fn, "cast") ? T ("X", "'m','n'") ",{'name':'Y','axes':['m','n'],'dtype':'fp16'}"
                                                     : T ("X", "'m','n'") "," T ("Y", "'m','n'"),
                   nodes, positive ? "x>sq sq>pos pos>f f>y" : "x>f f>y");
  check (d);
}

/* A[m,n] fn B[n] → Y[m,n], and B[n] fn A[m,n] → Y[n,m]: each operand broadcast in turn */
static void
test_binary (gconstpointer data)
{
  const char *fn = data;
  gboolean div = g_str_equal (fn, "div");

  for (guint order = 0; order < 2; order++)
    {
      g_autofree char *nodes = g_strdup_printf (IN ("a", "A") "," IN ("b", "B") "," POSITIVE ","
                                                "{'id':'f','kind':'map','fn':'%s'}," OUT ("y", "Y"), fn);
      const char *denominator = div ? "pos" : "sq";
      /* without div, the denominator chain is x² + ½ all the same: a smooth operand */
      g_autofree char *wires = g_strdup_printf ("b>sq sq>pos %s>f %s>f:1 f>y",
                                                order == 0 ? "a" : denominator, order == 0 ? denominator : "a");
      g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN,
                                                order == 0 ? T ("A", "'m','n'") "," T ("B", "'n'") "," T ("Y", "'m','n'")
                                                           : T ("A", "'m','n'") "," T ("B", "'n'") "," T ("Y", "'n','m'"),
                                                nodes, wires);

      check (d);
    }
}

/* The same value on both ports, and a value with three consumers: terms add up. */
static void
test_reuse (void)
{
  g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m','n'") "," T ("Z", "'m','n'"),
                                            IN ("x", "X") ",{'id':'xx','kind':'map','fn':'mul'},"
                                            "{'id':'e','kind':'map','fn':'exp'},{'id':'s','kind':'map','fn':'add'},"
                                            "{'id':'n','kind':'map','fn':'neg'}," OUT ("y", "Y") "," OUT ("z", "Z"),
                                            "x>xx x>xx:1 x>e xx>s e>s:1 s>y x>n n>z");

  check (d);
}

typedef struct
{
  const char *axes, *tensors, *nodes, *wires;
} Case;

static void
test_case (gconstpointer data)
{
  const Case *c = data;
  g_autoptr(NapkinDiagram) d = diagram_new (c->axes, c->tensors, c->nodes, c->wires);

  check (d);
}

#define AXES_BMKN "{'name':'b','size':2},{'name':'m','size':3},{'name':'k','size':5},{'name':'n','size':4}"
#define AXES_QK "{'name':'q','size':5},{'name':'k','size':6}"
#define SOFTMAX_K "{'id':'sm','kind':'softmax','axis':'k'}"

static const Case cases[] = {
  /* /grad/contract/matmul */
  { "{'name':'m','size':3},{'name':'k','size':5},{'name':'n','size':4}",
    T ("A", "'m','k'") "," T ("B", "'k','n'") "," T ("C", "'m','n'"),
    IN ("a", "A") "," IN ("b", "B") ",{'id':'mm','kind':'contract','out':['m','n']}," OUT ("c", "C"),
    "a>mm b>mm:1 mm>c" },
  /* /grad/contract/batch: a batch axis, the output in another order */
  { AXES_BMKN, T ("A", "'b','m','k'") "," T ("B", "'k','b','n'") "," T ("C", "'n','b','m'"),
    IN ("a", "A") "," IN ("b", "B") ",{'id':'mm','kind':'contract','out':['n','b','m']}," OUT ("c", "C"),
    "a>mm b>mm:1 mm>c" },
  /* /grad/softmax */
  { AXES_QK, T ("X", "'q','k'") "," T ("Y", "'q','k'"), IN ("x", "X") "," SOFTMAX_K "," OUT ("y", "Y"), "x>sm sm>y" },
  /* /grad/normalize/layernorm */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m','n'"),
    IN ("x", "X") ",{'id':'ln','kind':'normalize','norm':'layernorm','axis':'n','eps':1e-5}," OUT ("y", "Y"), "x>ln ln>y" },
  /* /grad/normalize/rmsnorm, over the first axis */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m','n'"),
    IN ("x", "X") ",{'id':'rn','kind':'normalize','norm':'rmsnorm','axis':'m','eps':1e-5}," OUT ("y", "Y"), "x>rn rn>y" },
  /* /grad/mask/causal: the mask, then the softmax that makes its −∞ a 0 */
  { AXES_QK, T ("X", "'q','k'") "," T ("Y", "'q','k'"),
    IN ("x", "X") ",{'id':'mask','kind':'mask','mask':'causal','axis':'k','rows':'q','offset':1}," SOFTMAX_K "," OUT ("y", "Y"),
    "x>mask mask>sm sm>y" },
  /* /grad/mask/window */
  { AXES_QK, T ("X", "'q','k'") "," T ("Y", "'q','k'"),
    IN ("x", "X") ",{'id':'mask','kind':'mask','mask':'window','axis':'k','rows':'q','left':2,'right':1}," SOFTMAX_K "," OUT ("y", "Y"),
    "x>mask mask>sm sm>y" },
  /* /grad/mask/additive: a bias broadcast over the rows gets its gradient too */
  { AXES_QK, T ("X", "'q','k'") "," T ("M", "'k'") "," T ("Y", "'q','k'"),
    IN ("x", "X") "," IN ("m", "M") ",{'id':'mask','kind':'mask','mask':'tensor'}," SOFTMAX_K "," OUT ("y", "Y"),
    "x>mask m>mask:1 mask>sm sm>y" },
  /* /grad/mask/boolean: an int8 mask keeps where nonzero; it has no gradient itself */
  { AXES_QK, T ("X", "'q','k'") ",{'name':'M','axes':['q','k'],'dtype':'int8'}," T ("Y", "'q','k'"),
    IN ("x", "X") "," IN ("m", "M") ",{'id':'mask','kind':'mask','mask':'tensor'}," SOFTMAX_K "," OUT ("y", "Y"),
    "x>mask m>mask:1 mask>sm sm>y" },
  /* /grad/reduce/sum */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m'"),
    IN ("x", "X") ",{'id':'r','kind':'reduce','op':'sum','axis':'n'}," OUT ("y", "Y"), "x>r r>y" },
  /* /grad/reduce/mean */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'n'"),
    IN ("x", "X") ",{'id':'r','kind':'reduce','op':'mean','axis':'m'}," OUT ("y", "Y"), "x>r r>y" },
  /* /grad/reduce/max */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m'"),
    IN ("x", "X") ",{'id':'r','kind':'reduce','op':'max','axis':'n'}," OUT ("y", "Y"), "x>r r>y" },
  /* /grad/rearrange/transpose */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'n','m'"),
    IN ("x", "X") ",{'id':'t','kind':'rearrange','out':['n','m']}," OUT ("y", "Y"), "x>t t>y" },
  /* /grad/rearrange/merge: [m,n] → [mn], then a softmax over the merged axis */
  { AXES_MN ",{'name':'mn','size':12}", T ("X", "'m','n'") "," T ("Y", "'mn'"),
    IN ("x", "X") ",{'id':'t','kind':'rearrange','out':['mn']},{'id':'sm','kind':'softmax','axis':'mn'}," OUT ("y", "Y"),
    "x>t t>sm sm>y" },
  /* /grad/rearrange/split-transposed: [mn] → [n,m] after a map, whose gradient comes in [m,n] order */
  { AXES_MN ",{'name':'mn','size':12}", T ("X", "'mn'") "," T ("Y", "'m','n'"),
    IN ("x", "X") ",{'id':'t','kind':'rearrange','out':['n','m']},{'id':'e','kind':'map','fn':'tanh','out':['m','n']},"
    OUT ("y", "Y"), "x>t t>e e>y" },
  /* /grad/loss: a scalar loss (a tensor of no axes) needs no output gradient */
  { AXES_MN, T ("X", "'m','n'") "," T ("L", ""),
    IN ("x", "X") ",{'id':'sq','kind':'map','fn':'square'},{'id':'r1','kind':'reduce','op':'sum','axis':'n'},"
    "{'id':'r2','kind':'reduce','op':'mean','axis':'m'}," OUT ("l", "L"), "x>sq sq>r1 r1>r2 r2>l" },
  /* /grad/two-reads: two input operations read one tensor */
  { AXES_MN, T ("X", "'m','n'") "," T ("Y", "'m','n'"),
    IN ("x1", "X") "," IN ("x2", "X") ",{'id':'f','kind':'map','fn':'mul'}," OUT ("y", "Y"), "x1>f x2>f:1 f>y" },
};

static const char *const case_names[G_N_ELEMENTS (cases)] = {
  "/grad/contract/matmul", "/grad/contract/batch", "/grad/softmax", "/grad/normalize/layernorm",
  "/grad/normalize/rmsnorm", "/grad/mask/causal", "/grad/mask/window", "/grad/mask/additive",
  "/grad/mask/boolean", "/grad/reduce/sum", "/grad/reduce/mean", "/grad/reduce/max",
  "/grad/rearrange/transpose", "/grad/rearrange/merge", "/grad/rearrange/split-transposed", "/grad/loss",
  "/grad/two-reads",
};

/* The check fails on a wrong backward: the softmax's adjoint with its row sum dropped. */
static void
test_check_can_fail (void)
{
  const Case *c = &cases[2];
  g_autoptr(NapkinDiagram) d = diagram_new (c->axes, c->tensors, c->nodes, c->wires);
  g_autoptr(NapkinDiagram) backward = backward_of (d, NULL);
  gboolean broken = FALSE;

  for (guint v = 0; v < napkin_diagram_n_nodes (backward); v++)
    {
      const NapkinNode *node = napkin_diagram_node (backward, v);

      if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SUB)
        {
          NapkinNode *wrong = napkin_item_copy (NAPKIN_ITEM_NODE, node);

          wrong->fn = NAPKIN_FN_ADD;
          napkin_diagram_replace_item (backward, NAPKIN_ITEM_NODE, v, wrong);
          broken = TRUE;
          break;
        }
    }
  g_assert_true (broken);
  g_assert_cmpfloat (gradient_error (d, backward, 11), >, 1e-2);
}

/* ---- regressions ---------------------------------------------------------------------- */

/* The source node of the output operation that writes `tensor`, or NULL. */
static const NapkinNode *
output_source (NapkinDiagram *d,
               const char    *tensor)
{
  for (guint v = 0; v < napkin_diagram_n_nodes (d); v++)
    {
      const NapkinNode *node = napkin_diagram_node (d, v);

      if (node->kind == NAPKIN_OP_OUTPUT && g_str_equal (node->tensor, tensor))
        return napkin_diagram_node (d, napkin_diagram_input_source (d, v, 0));
    }
  return NULL;
}

/* An output wired straight from an input is stored: the lowering copies it (it used to
 * store nothing, leaving the output as it was), transposed and relabeled or not. */
static void
test_input_copy (void)
{
  g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN, T ("X", "'m','n'") "," T ("Y", "'n','m'") "," T ("Z", "'m','n'"),
                                            IN ("x", "X") "," OUT ("y", "Y") ",{'id':'e','kind':'map','fn':'exp'},"
                                            OUT ("z", "Z"), "x>y x>e e>z");

  for (guint plain = 0; plain < 2; plain++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinIrProgram) program = napkin_ir_lower (d, plain ? NAPKIN_LOWER_PLAIN : NAPKIN_LOWER_DEFAULT,
                                                            &error);
      g_autoptr(NapkinTensorSet) set = napkin_tensor_set_new_random (d, 3);
      int x = napkin_diagram_find_tensor (d, "X"), y = napkin_diagram_find_tensor (d, "Y");

      g_assert_no_error (error);
      for (gint64 i = 0; i < set->elements[y]; i++)
        set->values[y][i] = NAN;
      run (program, set);
      for (gint64 i = 0; i < 3; i++)
        for (gint64 j = 0; j < 4; j++)
          g_assert_cmpfloat (set->values[y][j * 3 + i], ==, set->values[x][i * 4 + j]);
    }
}

/* A gradient that is an output's gradient unchanged is the input d_O wired straight to
 * the output d_X, with no operation between (it went through a `scale 1`). */
static void
test_gradient_copy (void)
{
  g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN, T ("X", "'m','n'") "," T ("B", "'n'") "," T ("Y", "'m','n'"),
                                            IN ("x", "X") "," IN ("b", "B") ",{'id':'f','kind':'map','fn':'add'},"
                                            OUT ("y", "Y"), "x>f b>f:1 f>y");
  g_autoptr(NapkinDiagram) backward = backward_of (d, NULL);
  const NapkinNode *src = output_source (backward, "d_X");

  g_assert_nonnull (src);
  g_assert_cmpint (src->kind, ==, NAPKIN_OP_INPUT);
  g_assert_cmpstr (src->tensor, ==, "d_Y");
  g_assert_cmpfloat (gradient_error (d, backward, 5), <, TOLERANCE);
}

/* A sum's and a mean's gradient, and a loss's seed of 1, broadcast without a product with
 * the forward value: where x is ±∞ or NaN the gradient is still d_Y copied along the
 * axis (0·x + g made NaN of it). */
static void
test_gradient_of_infinity (void)
{
  static const struct { const char *reduce, *axes; } cases[] = {
    { "sum", "'m'" }, { "mean", "'m'" }, { "loss", "" },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      gboolean loss = g_str_equal (cases[c].reduce, "loss");
      g_autofree char *nodes = g_strdup_printf (IN ("x", "X") ",{'id':'r','kind':'reduce','op':'%s','axis':'n'}%s,"
                                                OUT ("y", "Y"), loss ? "sum" : cases[c].reduce,
                                                loss ? ",{'id':'r2','kind':'reduce','op':'sum','axis':'m'}" : "");
      g_autofree char *tensors = g_strdup_printf (T ("X", "'m','n'") ",{'name':'Y','axes':[%s],'dtype':'fp32'}",
                                                  cases[c].axes);
      g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN, tensors, nodes, loss ? "x>r r>r2 r2>y" : "x>r r>y");
      g_autoptr(NapkinDiagram) backward = backward_of (d, NULL);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinIrProgram) program = napkin_ir_lower (backward, NAPKIN_LOWER_PLAIN, &error);
      g_autoptr(NapkinTensorSet) set = napkin_tensor_set_new_random (backward, 9);
      int x = napkin_diagram_find_tensor (backward, "X"), dx = napkin_diagram_find_tensor (backward, "d_X");
      int dy = napkin_diagram_find_tensor (backward, "d_Y");

      g_assert_no_error (error);
      g_assert_cmpint (dy >= 0, ==, !loss);
      set->values[x][0] = INFINITY;
      set->values[x][5] = -INFINITY;
      set->values[x][10] = NAN;
      run (program, set);
      for (gint64 i = 0; i < 3; i++)
        for (gint64 j = 0; j < 4; j++)
          {
            double want = loss ? 1.0 : set->values[dy][i] / (g_str_equal (cases[c].reduce, "mean") ? 4.0 : 1.0);

            g_assert_cmpfloat_with_epsilon (set->values[dx][i * 4 + j], want, 1e-15);
          }
    }
}

/* An input that no output depends on gets zeros, ±∞ or not. */
static void
test_zero_gradient_of_infinity (void)
{
  g_autoptr(NapkinDiagram) d = diagram_new (AXES_MN, T ("X", "'m','n'") "," T ("U", "'m','n'") "," T ("Y", "'m','n'"),
                                            IN ("x", "X") "," IN ("u", "U") ",{'id':'e','kind':'map','fn':'exp'},"
                                            OUT ("y", "Y"), "x>e e>y");
  g_autoptr(NapkinDiagram) backward = backward_of (d, NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) program = napkin_ir_lower (backward, NAPKIN_LOWER_PLAIN, &error);
  g_autoptr(NapkinTensorSet) set = napkin_tensor_set_new_random (backward, 9);
  int u = napkin_diagram_find_tensor (backward, "U"), du = napkin_diagram_find_tensor (backward, "d_U");

  g_assert_no_error (error);
  set->values[u][1] = INFINITY;
  set->values[u][2] = -INFINITY;
  set->values[u][3] = NAN;
  run (program, set);
  for (gint64 i = 0; i < set->elements[du]; i++)
    g_assert_cmpfloat (set->values[du][i], ==, 0.0);
}

/* A tensor keeps what it says of its values: Llama's rotate_half constant stays a constant
 * in the backward (the runner and the printers make it; it was drawn at random once its
 * field was dropped), and it has no gradient: none by default, refused by name. */
static void
test_constant (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "import", "zoo",
                                            "hf_llama_attention.small.json", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_file (path, &error);
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(NapkinDiagram) refused = NULL;
  g_autoptr(GString) notes = g_string_new (NULL);
  const NapkinTensor *r;
  json_object *c = NULL;
  int t;

  g_assert_no_error (error);
  backward = napkin_grad_diagram (d, NULL, notes, &error);
  g_assert_no_error (error);
  t = napkin_diagram_find_tensor (backward, "rotate_half_d");
  g_assert_cmpint (t, >=, 0);
  r = napkin_diagram_tensor (backward, t);
  g_assert_true (r->extra != NULL && json_object_object_get_ex (r->extra, "constant", &c));
  g_assert_cmpstr (json_object_get_string (c), ==, "rotate_half");
  g_assert_cmpint (napkin_diagram_find_tensor (backward, "d_rotate_half_d"), <, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (backward, "d_hidden_states"), >=, 0);
  g_assert_nonnull (strstr (notes->str, "“rotate_half_d”"));

  refused = napkin_grad_diagram (d, (const char *[]) { "rotate_half_d", NULL }, NULL, &error);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE);
  g_assert_null (refused);
}

/* ---- errors ----------------------------------------------------------------------------- */

static void
test_errors (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) cast = diagram_new (AXES_MN, T ("X", "'m','n'") ",{'name':'Y','axes':['m','n'],'dtype':'int8'}",
                                               IN ("x", "X") ",{'id':'to_int','kind':'map','fn':'cast','dtype':'int8'},"
                                               OUT ("y", "Y"), "x>to_int to_int>y");
  g_autoptr(NapkinDiagram) boolean = diagram_new (AXES_QK, T ("X", "'q','k'") ",{'name':'M','axes':['q','k'],'dtype':'int8'},"
                                                  T ("Y", "'q','k'"),
                                                  IN ("x", "X") "," IN ("m", "M") ",{'id':'mask','kind':'mask','mask':'tensor'},"
                                                  SOFTMAX_K "," OUT ("y", "Y"), "x>mask m>mask:1 mask>sm sm>y");
  g_autoptr(NapkinDiagram) no_outputs = diagram_new (AXES_MN, T ("X", "'m','n'"),
                                                     IN ("x", "X") ",{'id':'e','kind':'map','fn':'exp'}", "x>e");
  g_autoptr(NapkinDiagram) result = NULL;
  g_autoptr(GString) notes = g_string_new (NULL);

  result = napkin_grad_diagram (cast, NULL, NULL, &error);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE);
  g_assert_nonnull (strstr (error->message, "“to_int”"));
  g_assert_nonnull (strstr (error->message, "nodes[1]"));
  g_clear_error (&error);

  result = napkin_grad_diagram (boolean, (const char *[]) { "X", "nope", NULL }, NULL, &error);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_UNKNOWN_INPUT);
  g_assert_nonnull (strstr (error->message, "“nope”"));
  g_clear_error (&error);

  result = napkin_grad_diagram (boolean, (const char *[]) { "M", NULL }, NULL, &error);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_DIFFERENTIABLE);
  g_assert_nonnull (strstr (error->message, "“M”"));
  g_clear_error (&error);

  /* by default the int8 mask is left out, and said so */
  result = napkin_grad_diagram (boolean, NULL, notes, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (notes->str, "“M”"));
  g_assert_cmpint (napkin_diagram_find_tensor (result, "d_M"), <, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (result, "d_X"), >=, 0);
  g_clear_object (&result);

  result = napkin_grad_diagram (no_outputs, NULL, NULL, &error);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NO_OUTPUTS);
  g_clear_error (&error);
  g_assert_null (result);
}

/* --wrt: only the gradients asked for, and no backward for the others' paths. */
static void
test_wrt (void)
{
  const Case *c = &cases[0];
  g_autoptr(NapkinDiagram) d = diagram_new (c->axes, c->tensors, c->nodes, c->wires);
  g_autoptr(NapkinDiagram) backward = backward_of (d, (const char *[]) { "B", NULL });
  guint contractions = 0;

  g_assert_cmpint (napkin_diagram_find_tensor (backward, "d_B"), >=, 0);
  g_assert_cmpint (napkin_diagram_find_tensor (backward, "d_A"), <, 0);
  for (guint v = 0; v < napkin_diagram_n_nodes (backward); v++)
    contractions += napkin_diagram_node (backward, v)->kind == NAPKIN_OP_CONTRACT;
  g_assert_cmpuint (contractions, ==, 2);   /* the forward's and d_B's */
  g_assert_cmpfloat (gradient_error (d, backward, 3), <, TOLERANCE);
}

/* ---- the bundled examples --------------------------------------------------------------- */

/* A copy without regions, every axis resized to 2–5 (distinct sizes catch a swapped axis). */
/* The ids of d's softmax operations, NULL-terminated (none: NULL). */
static GStrv
softmax_ids (NapkinDiagram *d)
{
  g_autoptr(GStrvBuilder) b = g_strv_builder_new ();
  guint n = 0;

  for (guint v = 0; v < napkin_diagram_n_nodes (d); v++)
    if (napkin_diagram_node (d, v)->kind == NAPKIN_OP_SOFTMAX)
      {
        g_strv_builder_add (b, napkin_diagram_node (d, v)->id);
        n++;
      }
  return n > 0 ? g_strv_builder_end (b) : NULL;
}

/* Recomputing the softmaxes (docs/training.md, "Recompute or store"): the gradients are
 * the same, no probabilities are stored, and the forward's softmax has only its forward
 * readers (so that its attention stays one kernel); a copy of the chain back to the
 * product makes them again. */
static void
check_recompute (NapkinDiagram *forward,
                 guint64        seed,
                 gint64         checks)
{
  g_auto(GStrv) ids = softmax_ids (forward);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) backward = NULL;

  if (ids == NULL)
    return;
  backward = napkin_grad_diagram_recompute (forward, NULL, (const char * const *) ids, NULL, &error);
  g_assert_no_error (error);
  g_assert_true (napkin_diagram_validate (backward, NULL));
  assert_round_trip (backward);
  for (guint i = 0; ids[i] != NULL; i++)
    {
      g_autofree char *stored = g_strdup_printf ("saved_%s", ids[i]);
      g_autofree char *copy = g_strdup_printf ("%s_re", ids[i]);
      int v = napkin_diagram_find (backward, NAPKIN_ITEM_NODE, ids[i]);
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (backward, v, &n_consumers);

      g_assert_cmpint (napkin_diagram_find_tensor (backward, stored), <, 0);
      g_assert_cmpint (napkin_diagram_find (backward, NAPKIN_ITEM_NODE, copy), >=, 0);
      for (guint c = 0; c < n_consumers; c++)
        g_assert_cmpint (napkin_diagram_find (forward, NAPKIN_ITEM_NODE,
                                              napkin_diagram_node (backward, consumers[c])->id), >=, 0);
    }
  g_assert_cmpfloat (gradient_error_checks (forward, backward, seed, checks), <, TOLERANCE);
}

static NapkinDiagram *
small_copy (NapkinDiagram *d)
{
  static const int sizes[] = { 3, 4, 2, 5 };
  NapkinDiagram *copy = napkin_diagram_copy (d);

  while (napkin_diagram_n_regions (copy) > 0)
    napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (copy, NAPKIN_ITEM_REGION, 0));
  napkin_diagram_set_gpus (copy, NULL);
  for (guint a = 0; a < napkin_diagram_n_axes (copy); a++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *spec = g_strdup_printf ("%s=%d", napkin_diagram_axis (copy, a)->name, sizes[a % 4]);

      napkin_diagram_override_axis (copy, spec, &error);
      g_assert_no_error (error);
    }
  return copy;
}

/* An fp8 attention's backward carries its gradients in bf16: d_Q, d_K and d_V are bf16
 * (not the inputs' fp8) and no value the backward computes is fp8 (the fp8 values it
 * reads are cast up to meet the gradients) — no GEMM stores an 8-bit result, and an
 * 8-bit float has no room for a gradient (docs/training.md). */
static void
test_fp8_gradients (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention-causal-fp8.napkin");
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(NapkinDiagram) small = NULL;
  g_autoptr(NapkinDiagram) small_backward = NULL;
  guint n_fwd;

  n_fwd = napkin_diagram_n_nodes (d);
  backward = backward_of (d, NULL);
  for (guint i = 0; i < 3; i++)
    {
      const char *name = (const char *[]) { "d_Q", "d_K", "d_V" }[i];
      int t = napkin_diagram_find_tensor (backward, name);

      g_assert_cmpint (t, >=, 0);
      g_assert_cmpint (napkin_diagram_tensor (backward, (guint) t)->dtype, ==, NAPKIN_DTYPE_BF16);
    }
  for (guint v = n_fwd; v < napkin_diagram_n_nodes (backward); v++)
    {
      const NapkinNode *node = napkin_diagram_node (backward, v);
      NapkinDtype dt = napkin_diagram_node_type (backward, v)->dtype;

      /* what the forward keeps (its fp8 probabilities) stays as the forward made it */
      if (node->kind == NAPKIN_OP_OUTPUT && g_str_has_prefix (node->tensor, "saved_"))
        continue;
      if (dt == NAPKIN_DTYPE_FP8_E4M3 || dt == NAPKIN_DTYPE_FP8_E5M2)
        g_error ("%s is fp8", napkin_diagram_node (backward, v)->id);
    }
  small = small_copy (d);
  small_backward = backward_of (small, NULL);
  g_assert_cmpfloat (gradient_error (small, small_backward, 5), <, TOLERANCE);
}

/* The axis the backward's softmax row term sums over ("The row term", docs/training.md):
 * the reduce that feeds the `sub` of the softmax adjoint. With `fp32`, the sum and
 * g − sum are fp32 (the 16-bit example's Σ dO⊙O rounded to fp16 was an error shared by
 * the whole row). */
static const char *
row_term_axis (NapkinDiagram *backward,
               gboolean       fp32)
{
  for (guint v = 0; v < napkin_diagram_n_nodes (backward); v++)
    {
      const NapkinNode *node = napkin_diagram_node (backward, v);

      if (node->kind == NAPKIN_OP_MAP && node->fn == NAPKIN_FN_SUB && g_str_has_prefix (node->id, "d_sm"))
        {
          int row = napkin_diagram_input_source (backward, v, 1);

          while (row >= 0 && napkin_diagram_node (backward, row)->kind == NAPKIN_OP_MAP
                 && napkin_diagram_node (backward, row)->fn == NAPKIN_FN_CAST)
            row = napkin_diagram_input_source (backward, row, 0);
          g_assert_cmpint (row, >=, 0);
          g_assert_cmpint (napkin_diagram_node (backward, row)->kind, ==, NAPKIN_OP_REDUCE);
          if (fp32)
            {
              g_assert_cmpint (napkin_diagram_node_type (backward, row)->dtype, ==, NAPKIN_DTYPE_FP32);
              g_assert_cmpint (napkin_diagram_node_type (backward, v)->dtype, ==, NAPKIN_DTYPE_FP32);
            }
          return napkin_diagram_node (backward, row)->axis;
        }
    }
  g_assert_not_reached ();
  return NULL;
}

/* Attention's softmax, stored or recomputed, or also an output: its adjoint's row term is
 * Σ_k p⊙g, the sum of the very g it is subtracted from (Σ_d dO⊙O, equal in exact
 * arithmetic, drifts from it by O's rounding: docs/training.md, "The row term"), in fp32.
 * All checked against central differences. */
static void
test_softmax_row_term (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention.napkin");
  g_autoptr(NapkinDiagram) small = NULL;
  g_autoptr(NapkinDiagram) backward = NULL;
  g_autoptr(NapkinDiagram) recomputed = NULL;
  g_autoptr(NapkinDiagram) also_out = NULL;
  g_autoptr(NapkinDiagram) backward2 = NULL;
  g_autoptr(GError) error = NULL;
  const char *const sm[] = { "sm", NULL };

  small = small_copy (d);
  backward = backward_of (small, NULL);
  g_assert_cmpstr (row_term_axis (backward, TRUE), ==, "k");
  g_assert_cmpfloat (gradient_error (small, backward, 7), <, TOLERANCE);
  recomputed = napkin_grad_diagram_recompute (small, NULL, sm, NULL, &error);
  g_assert_no_error (error);
  g_assert_cmpstr (row_term_axis (recomputed, TRUE), ==, "k");
  g_assert_cmpfloat (gradient_error (small, recomputed, 7), <, TOLERANCE);

  /* the probabilities an output too: a second gradient term arrives at them */
  also_out = napkin_diagram_copy (small);
  {
    NapkinTensor *t = g_new0 (NapkinTensor, 1);
    NapkinNode *out = napkin_node_new ("p_out", NAPKIN_OP_OUTPUT);
    int sm = napkin_diagram_find (also_out, NAPKIN_ITEM_NODE, "sm");
    const NapkinTensorType *type;
    NapkinWire wire = { 0 };

    g_assert_cmpint (sm, >=, 0);
    type = napkin_diagram_node_type (also_out, sm);
    t->name = g_strdup ("P");
    t->axes = g_new0 (char *, type->n_axes + 1);
    for (guint i = 0; i < type->n_axes; i++)
      t->axes[i] = g_strdup (napkin_diagram_axis (also_out, type->axes[i])->name);
    t->dtype = type->dtype;
    napkin_diagram_insert_item (also_out, NAPKIN_ITEM_TENSOR, napkin_diagram_n_tensors (also_out), t);
    out->tensor = g_strdup ("P");
    napkin_diagram_insert_item (also_out, NAPKIN_ITEM_NODE, napkin_diagram_n_nodes (also_out), out);
    wire.from = g_strdup ("sm");
    wire.to = g_strdup ("p_out");
    napkin_diagram_insert_item (also_out, NAPKIN_ITEM_WIRE, napkin_diagram_n_wires (also_out), g_memdup2 (&wire, sizeof wire));
  }
  g_assert_true (napkin_diagram_validate (also_out, NULL));
  backward2 = backward_of (also_out, NULL);
  g_assert_cmpstr (row_term_axis (backward2, TRUE), ==, "k");
  g_assert_cmpfloat (gradient_error (also_out, backward2, 7), <, TOLERANCE);
}

static void
test_example (gconstpointer data)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example (data);
  g_autoptr(NapkinDiagram) full = NULL;
  g_autoptr(NapkinDiagram) small = NULL;
  g_autoptr(NapkinDiagram) backward = NULL;

  /* at its own sizes, regions and all: the backward validates and round-trips */
  full = backward_of (d, NULL);
  g_assert_cmpuint (napkin_diagram_n_regions (full), ==, 0);
  /* small: its gradients are right */
  small = small_copy (d);
  backward = backward_of (small, NULL);
  g_assert_cmpfloat (gradient_error (small, backward, 5), <, TOLERANCE);
  check_recompute (small, 5, MAX_CHECKS);
}

static void
test_recompute_errors (void)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "flash-attention.napkin", NULL);
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  const char *const not_op[] = { "q_in", NULL }, *const unknown[] = { "nowhere", NULL };
  NapkinDiagram *b;

  g_assert_no_error (error);
  b = napkin_grad_diagram_recompute (d, NULL, not_op, NULL, &error);
  g_assert_null (b);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE);
  g_assert_nonnull (strstr (error->message, "“q_in”"));
  g_clear_error (&error);
  b = napkin_grad_diagram_recompute (d, NULL, unknown, NULL, &error);
  g_assert_null (b);
  g_assert_error (error, NAPKIN_GRAD_ERROR, NAPKIN_GRAD_ERROR_NOT_RECOMPUTABLE);
  g_assert_nonnull (strstr (error->message, "“nowhere”"));
}

static int
compare_paths (gconstpointer a,
               gconstpointer b)
{
  return g_strcmp0 (*(char **) a, *(char **) b);
}

/* The model zoo (tests/import/zoo): modules as people write them, imported at their
 * small sizes — rearranges, RoPE, grouped queries, masks, biases — differentiate, and
 * their gradients are right. */
static void
test_zoo (gconstpointer data)
{
  const char *path = data;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_file (path, &error);
  g_autoptr(NapkinDiagram) backward = NULL;

  g_assert_no_error (error);
  backward = backward_of (d, NULL);
  g_assert_cmpfloat (gradient_error_checks (d, backward, 7, ZOO_CHECKS), <, TOLERANCE);
  check_recompute (d, 7, ZOO_CHECKS);
}

int
main (int   argc,
      char *argv[])
{
  static const char *const unary[] = { "exp", "gelu", "gelu_tanh", "silu", "relu", "sigmoid", "tanh", "neg",
                                       "rsqrt", "sqrt", "square", "scale", "shift", "cast", "erf", "step", "log",
                                       "elu", "reciprocal" };
  static const char *const binary[] = { "add", "sub", "mul", "div", "max", "min" };
  g_autoptr(GDir) dir = NULL;
  g_autoptr(GPtrArray) examples = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GPtrArray) models = g_ptr_array_new_with_free_func (g_free);
  g_autofree char *zoo = NULL;
  const char *entry;

  g_test_init (&argc, &argv, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (unary); i++)
    {
      g_autofree char *path = g_strdup_printf ("/grad/map/%s", unary[i]);

      g_test_add_data_func (path, unary[i], test_unary);
    }
  for (guint i = 0; i < G_N_ELEMENTS (binary); i++)
    {
      g_autofree char *path = g_strdup_printf ("/grad/map/broadcast-%s", binary[i]);

      g_test_add_data_func (path, binary[i], test_binary);
    }
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    g_test_add_data_func (case_names[i], &cases[i], test_case);
  g_test_add_func ("/grad/reuse", test_reuse);
  g_test_add_func ("/grad/check-can-fail", test_check_can_fail);
  g_test_add_func ("/grad/errors", test_errors);
  g_test_add_func ("/grad/wrt", test_wrt);
  g_test_add_func ("/grad/lower/input-copy", test_input_copy);
  g_test_add_func ("/grad/copy", test_gradient_copy);
  g_test_add_func ("/grad/reduce/infinity", test_gradient_of_infinity);
  g_test_add_func ("/grad/zeros/infinity", test_zero_gradient_of_infinity);
  g_test_add_func ("/grad/constant", test_constant);
  g_test_add_func ("/grad/recompute/errors", test_recompute_errors);
  g_test_add_func ("/grad/softmax/row-term", test_softmax_row_term);
  g_test_add_func ("/grad/fp8", test_fp8_gradients);

  /* every bundled example differentiates: none is refused */
  dir = g_dir_open (g_getenv ("NAPKIN_EXAMPLES_DIR"), 0, NULL);
  g_assert_nonnull (dir);
  while ((entry = g_dir_read_name (dir)) != NULL)
    if (g_str_has_suffix (entry, ".napkin"))
      g_ptr_array_add (examples, g_strdup (entry));
  g_ptr_array_sort (examples, (GCompareFunc) compare_paths);
  g_assert_cmpuint (examples->len, >=, 19);
  for (guint i = 0; i < examples->len; i++)
    {
      g_autofree char *path = g_strdup_printf ("/grad/example/%s", (char *) g_ptr_array_index (examples, i));

      g_test_add_data_func (path, g_ptr_array_index (examples, i), test_example);
    }

  zoo = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "import", "zoo", NULL);
  g_clear_pointer (&dir, g_dir_close);
  dir = g_dir_open (zoo, 0, NULL);
  g_assert_nonnull (dir);
  while ((entry = g_dir_read_name (dir)) != NULL)
    if (g_str_has_suffix (entry, ".small.json"))
      g_ptr_array_add (models, g_build_filename (zoo, entry, NULL));
  g_ptr_array_sort (models, (GCompareFunc) compare_paths);
  g_assert_cmpuint (models->len, >=, 18);
  for (guint i = 0; i < models->len; i++)
    {
      g_autofree char *base = g_path_get_basename (g_ptr_array_index (models, i));
      g_autofree char *path = NULL;

      *strstr (base, ".small.json") = '\0';
      path = g_strdup_printf ("/grad/zoo/%s", base);
      g_test_add_data_func (path, g_ptr_array_index (models, i), test_zoo);
    }

  return g_test_run ();
}
