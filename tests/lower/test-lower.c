/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-file.h"
#include "napkin-interp.h"
#include "napkin-ir.h"

/* Small sizes for each example, with tiles that do not divide them (edge tiles). */
typedef struct
{
  const char *file;
  const char *axes[8];
  const char *tiles[12];
} Case;

static const Case cases[] = {
  { "matmul.napkin", { "m=40", "n=36", "k=20" }, { NULL } },
  { "matmul-tiled.napkin", { "m=40", "n=36", "k=20" }, { "block.m=16", "block.n=16", "block.k=8" } },
  { "matmul-nested.napkin", { "m=40", "n=36", "k=20" },
    { "block.m=16", "block.n=16", "block.k=8", "warp.m=8", "warp.n=4", "warp.k=4" } },
  { "softmax.napkin", { "r=10", "c=33" }, { "rows.r=4" } },
  { "layernorm.napkin", { "t=10", "h=24" }, { "rows.t=4" } },
  { "mlp.napkin", { "t=12", "e=16", "f=20" }, { NULL } },
  { "attention.napkin", { "b=2", "h=2", "q=20", "k=18", "d=8" }, { NULL } },
  { "flash-attention.napkin", { "b=2", "h=2", "q=20", "k=18", "d=8" }, { "block.q=8", "block.k=4" } },
  /* fp8 inputs, a warpgroup region splitting the online softmax over query rows */
  { "hopper-attention-fp8.napkin", { "b=1", "h=2", "q=40", "k=36", "d=8" },
    { "block.q=16", "block.k=8", "warpgroup.q=8" } },
  /* masks (docs/file-format.md, "mask"): causal GQA, a window, decoding with an offset,
   * d 256 and fp8, at odd sizes with edge tiles */
  { "attention-causal-gqa.napkin", { "h=2", "g=2", "q=21", "k=21", "d=8" }, { "block.q=8", "block.k=4" } },
  { "attention-sliding-window.napkin", { "h=2", "g=2", "q=21", "k=21", "d=8" }, { "block.q=8", "block.k=4" } },
  { "attention-decode.napkin", { "h=2", "g=2", "q=3", "k=37", "d=8" }, { "block.g=2", "block.k=8" } },
  { "attention-causal-d256.napkin", { "b=1", "h=2", "q=19", "k=19", "d=16" }, { "block.q=8", "block.k=4" } },
  { "attention-causal-fp8.napkin", { "b=1", "h=2", "q=19", "k=19", "d=16" }, { "block.q=8", "block.k=8" } },
};

static NapkinDiagram *
load_case (const Case *c)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), c->file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  for (guint i = 0; c->axes[i]; i++)
    {
      napkin_diagram_override_axis (d, c->axes[i], &error);
      g_assert_no_error (error);
    }
  for (guint i = 0; c->tiles[i]; i++)
    {
      napkin_diagram_override_tile (d, c->tiles[i], &error);
      g_assert_no_error (error);
    }
  return d;
}

static gboolean
has_stmt (GPtrArray      *stmts,
          NapkinStmtKind  kind,
          int             what)
{
  for (guint i = 0; i < stmts->len; i++)
    {
      const NapkinIrStmt *s = g_ptr_array_index (stmts, i);

      if (s->kind == kind && (what < 0 || (kind == NAPKIN_STMT_LOOP ? (int) s->loop : (int) s->op) == what))
        return TRUE;
      if (s->kind == NAPKIN_STMT_LOOP && has_stmt (s->body, kind, what))
        return TRUE;
    }
  return FALSE;
}

/* The relabeled diagram computes what the plain one does (fp64 interpreter). */
static void
test_equivalence (gconstpointer data)
{
  const Case *c = data;
  g_autoptr(NapkinDiagram) d = load_case (c);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) relabeled = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
  g_autoptr(NapkinIrProgram) plain = NULL;
  g_autoptr(NapkinTensorSet) a = napkin_tensor_set_new_random (d, 42);
  g_autoptr(NapkinTensorSet) b = napkin_tensor_set_new_random (d, 42);

  g_assert_no_error (error);
  plain = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
  g_assert_no_error (error);

  napkin_ir_interpret (relabeled, a, &error);
  g_assert_no_error (error);
  napkin_ir_interpret (plain, b, &error);
  g_assert_no_error (error);

  for (guint t = 0; t < napkin_diagram_n_tensors (d); t++)
    {
      const NapkinTensor *tensor = napkin_diagram_tensor (d, t);
      double err = napkin_tensor_set_rel_error (a, b, t);
      gboolean is_output = FALSE;

      for (guint n = 0; n < napkin_diagram_n_nodes (d); n++)
        is_output |= napkin_diagram_node (d, n)->kind == NAPKIN_OP_OUTPUT
                     && g_strcmp0 (napkin_diagram_node (d, n)->tensor, tensor->name) == 0;
      if (!is_output)
        continue;
      g_test_message ("%s: %s relative error %.3g (bound %.3g)", c->file, tensor->name, err,
                      napkin_dtype_tolerance (tensor->dtype));
      g_assert_cmpfloat (err, <=, napkin_dtype_tolerance (tensor->dtype));
      /* Not vacuous: the outputs were written (no NaN) and are not all zero. */
      g_assert_cmpfloat (fabs (a->values[t][0]) + fabs (a->values[t][a->elements[t] - 1]), >, 0);
    }
}

/* Matmul check against a direct triple loop in fp64, rounded once to fp16. */
static void
test_matmul_direct (void)
{
  g_autoptr(NapkinDiagram) d = load_case (&cases[2]);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) prog = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
  g_autoptr(NapkinTensorSet) set = napkin_tensor_set_new_random (d, 7);
  const double *A = set->values[0], *B = set->values[1];
  double worst = 0;

  g_assert_no_error (error);
  napkin_ir_interpret (prog, set, &error);
  g_assert_no_error (error);
  for (int i = 0; i < 40; i++)
    for (int j = 0; j < 36; j++)
      {
        double sum = 0;

        for (int k = 0; k < 20; k++)
          sum += A[i * 20 + k] * B[k * 36 + j];
        worst = MAX (worst, fabs (napkin_round_to_dtype (sum, NAPKIN_DTYPE_FP16) - set->values[2][i * 36 + j]));
      }
  g_assert_cmpfloat (worst, ==, 0.0);
}

/* The IR has the loops the relabeling asks for. */
static void
test_structure (void)
{
  g_autoptr(NapkinDiagram) flash = load_case (&cases[7]);
  g_autoptr(NapkinDiagram) nested = load_case (&cases[2]);
  g_autoptr(NapkinDiagram) attention = load_case (&cases[6]);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) f = napkin_ir_lower (flash, 0, &error);
  g_autoptr(NapkinIrProgram) n = napkin_ir_lower (nested, 0, &error);
  g_autoptr(NapkinIrProgram) a = napkin_ir_lower (attention, 0, &error);
  const NapkinIrKernel *k;

  g_assert_no_error (error);
  g_assert_cmpuint (f->kernels->len, ==, 1);
  k = g_ptr_array_index (f->kernels, 0);
  g_assert_true (has_stmt (k->body, NAPKIN_STMT_LOOP, NAPKIN_LOOP_GRID));
  g_assert_true (has_stmt (k->body, NAPKIN_STMT_LOOP, NAPKIN_LOOP_STREAM));
  g_assert_true (has_stmt (k->body, NAPKIN_STMT_COMPUTE, NAPKIN_COMPUTE_ONLINE_STATS));
  g_assert_true (has_stmt (k->body, NAPKIN_STMT_COMPUTE, NAPKIN_COMPUTE_ONLINE_ACC));

  g_assert_cmpuint (n->kernels->len, ==, 1);
  k = g_ptr_array_index (n->kernels, 0);
  g_assert_true (has_stmt (k->body, NAPKIN_STMT_LOOP, NAPKIN_LOOP_WARP));

  /* Plain attention: qk, scale, softmax (max, sum, apply), pv: six kernels. */
  g_assert_cmpuint (a->kernels->len, ==, 6);
}

/* Device-memory traffic counted from the IR's copies matches the paper's H. */
static void
test_hbm_bytes (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "matmul-tiled.napkin", NULL);
  g_autofree char *fpath = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "flash-attention.napkin", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinDiagram) fd = napkin_diagram_load_from_file (fpath, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinIrProgram) prog = napkin_ir_lower (d, 0, &error);
  g_autoptr(NapkinIrProgram) fprog = napkin_ir_lower (fd, 0, &error);
  gint64 m = 4096, q = 4096, dd = 128, heads = 4 * 16;

  g_assert_no_error (error);
  /* H = m·n·k·(1/128 + 1/128) + m·n elements, 2 bytes each */
  g_assert_cmpint (napkin_ir_hbm_bytes (prog), ==, 2 * (m * m * m * 2 / 128 + m * m));
  /* H = 2·q·d + 2·k·d·q/128 per head */
  g_assert_cmpint (napkin_ir_hbm_bytes (fprog), ==, 2 * heads * (2 * q * dd + 2 * q * dd * q / 128));
}

static void
test_split_reduction_rejected (void)
{
  g_autoptr(NapkinDiagram) d = load_case (&cases[1]);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinIrProgram) prog = NULL;

  napkin_diagram_override_tile (d, "block.k=parallel:8", &error);
  g_assert_no_error (error);
  prog = napkin_ir_lower (d, 0, &error);
  g_assert_null (prog);
  g_assert_error (error, NAPKIN_LOWER_ERROR, NAPKIN_LOWER_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "regions.block.marks.k"));
  g_assert_nonnull (strstr (error->message, "“mm”"));
}

/* A mask's fields changed in place (its node is "mask" in the examples). */
static void
set_mask (NapkinDiagram  *d,
          NapkinMaskKind  kind,
          gint64          offset,
          gint64          left,
          gint64          right)
{
  int n = napkin_diagram_find_node (d, "mask");
  NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, n));

  node->mask = kind;
  node->offset = offset;
  node->left = left;
  node->right = right;
  napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, n, node);
}

/* The masked attention against a direct fp64 loop over Q[h, g, q, d], K[h, k, d]
 * (b = 1), also with rows that see no key at all (O = 0, never NaN); the relabeled
 * and the plain loop nests agree. */
static void
test_mask_direct (void)
{
  static const struct { NapkinMaskKind kind; gint64 offset, left, right; } masks[] = {
    { NAPKIN_MASK_WINDOW, 2, 3, 1 },      /* i − 1 ≤ j ≤ i + 3 */
    { NAPKIN_MASK_CAUSAL, 4, -1, 0 },     /* prefill: the last 9 of 13 keys' queries */
    { NAPKIN_MASK_CAUSAL, -2, -1, 0 },    /* rows 0 and 1 see nothing */
    { NAPKIN_MASK_WINDOW, 0, -1, 2 },     /* unbounded back, 2 ahead */
  };
  const gint64 H = 2, G = 2, NQ = 9, NKV = 13, D = 8;

  for (guint m = 0; m < G_N_ELEMENTS (masks); m++)
    {
      Case c = { "attention-sliding-window.napkin", { "h=2", "g=2", "q=9", "k=13", "d=8" },
                 { "block.q=4", "block.k=4" } };
      g_autoptr(NapkinDiagram) d = load_case (&c);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinIrProgram) relabeled = NULL, plain = NULL;
      g_autoptr(NapkinTensorSet) a = napkin_tensor_set_new_random (d, 5);
      g_autoptr(NapkinTensorSet) b = napkin_tensor_set_new_random (d, 5);
      const double *Q = a->values[0], *K = a->values[1], *V = a->values[2];
      double alpha = napkin_diagram_node (d, napkin_diagram_find_node (d, "scale"))->alpha;
      double worst = 0, biggest = 0;
      guint empty_rows = 0;

      set_mask (d, masks[m].kind, masks[m].offset, masks[m].left, masks[m].right);
      relabeled = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
      g_assert_no_error (error);
      plain = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
      g_assert_no_error (error);
      napkin_ir_interpret (relabeled, a, &error);
      g_assert_no_error (error);
      napkin_ir_interpret (plain, b, &error);
      g_assert_no_error (error);
      g_assert_cmpfloat (napkin_tensor_set_rel_error (a, b, 3), <=, napkin_dtype_tolerance (NAPKIN_DTYPE_FP16));

      for (gint64 h = 0; h < H; h++)
        for (gint64 g = 0; g < G; g++)
          for (gint64 i = 0; i < NQ; i++)
            {
              double s[13], mx = -INFINITY, l = 0;

              for (gint64 j = 0; j < NKV; j++)
                {
                  double dot = 0;

                  for (gint64 e = 0; e < D; e++)
                    dot += Q[((h * G + g) * NQ + i) * D + e] * K[(h * NKV + j) * D + e];
                  s[j] = napkin_mask_keeps (masks[m].kind, i, j, masks[m].offset, masks[m].left, masks[m].right)
                         ? alpha * dot : -INFINITY;
                  mx = MAX (mx, s[j]);
                }
              empty_rows += mx == -INFINITY;
              for (gint64 j = 0; j < NKV; j++)
                l += s[j] == -INFINITY ? 0 : exp (s[j] - mx);
              for (gint64 e = 0; e < D; e++)
                {
                  double o = 0, got = a->values[3][((h * G + g) * NQ + i) * D + e];

                  for (gint64 j = 0; j < NKV && l > 0; j++)
                    o += (s[j] == -INFINITY ? 0 : exp (s[j] - mx)) / l * V[(h * NKV + j) * D + e];
                  g_assert_false (isnan (got));
                  worst = MAX (worst, fabs (got - o));
                  biggest = MAX (biggest, fabs (o));
                }
            }
      g_assert_cmpfloat (biggest, >, 0);
      g_assert_cmpfloat (worst / biggest, <=, napkin_dtype_tolerance (NAPKIN_DTYPE_FP16));
      g_assert_cmpuint (empty_rows, ==, masks[m].offset == -2 ? 2 * H * G : 0);
    }
}

/* The interpreter's inputs hold an imported rotary embedding's constant as the runner and
 * the printed PyTorch build it (x · R = cat (−x[n/2:], x[:n/2])), not random values. */
static void
test_rotate_half_constant (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("G_TEST_SRCDIR"), "data", "derive", "llama-block.napkin", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  NapkinTensorSet *set;
  int t;
  gint64 n, ones = 0, minus = 0, zeros = 0;

  g_assert_no_error (error);
  t = napkin_diagram_find_tensor (d, "rotate_half_d");
  g_assert_cmpint (t, >=, 0);
  set = napkin_tensor_set_new_random (d, 1234);
  n = napkin_diagram_axis_size (d, napkin_diagram_find_axis (d, "d"));
  g_assert_cmpint (n, ==, 128);
  g_assert_cmpint (set->elements[t], ==, n * n);
  for (gint64 i = 0; i < n * n; i++)
    {
      ones += set->values[t][i] == 1.0;
      minus += set->values[t][i] == -1.0;
      zeros += set->values[t][i] == 0.0;
    }
  g_assert_cmpint (ones, ==, n / 2);
  g_assert_cmpint (minus, ==, n / 2);
  g_assert_cmpint (zeros, ==, n * n - n);
  g_assert_cmpfloat (set->values[t][(n / 2) * n + 0], ==, -1.0);  /* R[n/2][0] */
  g_assert_cmpfloat (set->values[t][0 * n + n / 2], ==, 1.0);     /* R[0][n/2] */
  /* the other inputs are drawn uniform, never zero (x feeds no product: unscaled) */
  g_assert_cmpfloat (fabs (set->values[napkin_diagram_find_tensor (d, "x")][0]), <=, 1.0);
  g_assert_cmpfloat (set->values[napkin_diagram_find_tensor (d, "x")][0], !=, 0.0);
  napkin_tensor_set_free (set);
}

/* Inputs are scaled as a model initialises its weights (docs/import.md, "Checking the
 * derived block in bf16"): 1/√K on the operand a product sums over K, so the Llama
 * block's attention scores stay O(1) instead of making softmax an argmax. */
static void
test_input_scales (void)
{
  g_autofree char *path = g_build_filename (g_getenv ("G_TEST_SRCDIR"), "data", "derive", "llama-block.napkin", NULL);
  static const Case attention = { "attention.napkin", { "b=2", "h=2", "q=20", "k=18", "d=8" }, { NULL } };
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinDiagram) att = load_case (&attention);
  g_autoptr(NapkinDiagram) mm = load_case (&cases[0]);
  struct { const char *tensor; double scale; } want[] = {
    { "x", 1.0 }, { "cos", 1.0 }, { "sin", 1.0 }, { "attn_norm_weight", 1.0 },
    { "wq_weight", 1.0 / 64 }, { "wk_weight", 1.0 / 64 }, { "wo_weight", 1.0 / 64 },   /* K = e, h·g·dv = 4096 */
    { "w_gate_weight", 1.0 / 64 }, { "w_down_weight", 1.0 / sqrt (14336.0) },
  };
  NapkinTensorSet *set;
  double sum = 0, sum2 = 0;
  int wq;

  g_assert_no_error (error);
  for (guint i = 0; i < G_N_ELEMENTS (want); i++)
    g_assert_cmpfloat_with_epsilon (napkin_input_scale (d, napkin_diagram_find_tensor (d, want[i].tensor)),
                                    want[i].scale, 1e-12);
  /* attention: Q·Kᵀ is scaled by the diagram (α), P·V sums a softmax: none scaled */
  for (guint t = 0; t < napkin_diagram_n_tensors (att); t++)
    g_assert_cmpfloat (napkin_input_scale (att, t), ==, 1.0);
  /* A·B, both inputs: B takes 1/√k (k = 20), as a weight */
  g_assert_cmpfloat (napkin_input_scale (mm, napkin_diagram_find_tensor (mm, "A")), ==, 1.0);
  g_assert_cmpfloat_with_epsilon (napkin_input_scale (mm, napkin_diagram_find_tensor (mm, "B")), 1 / sqrt (20.0), 1e-12);
  /* the interpreter draws with it: wq's values lie in ±1/64 with the spread of U(−1, 1)/64 */
  napkin_diagram_override_axis (d, "e=256", &error);
  g_assert_no_error (error);
  set = napkin_tensor_set_new_random (d, 1234);
  wq = napkin_diagram_find_tensor (d, "wq_weight");
  for (gint64 i = 0; i < set->elements[wq]; i++)
    {
      g_assert_cmpfloat (fabs (set->values[wq][i]), <=, 1.0 / 16 + 1e-9);
      sum += set->values[wq][i];
      sum2 += set->values[wq][i] * set->values[wq][i];
    }
  g_assert_cmpfloat (fabs (sqrt (sum2 / set->elements[wq]) * 16 - 1 / sqrt (3.0)), <, 0.01);
  napkin_tensor_set_free (set);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autofree char *name = g_strdup (cases[i].file);
      g_autofree char *path = NULL;

      *strrchr (name, '.') = '\0';
      path = g_strdup_printf ("/lower/equivalence/%s", name);
      g_test_add_data_func (path, &cases[i], test_equivalence);
    }
  g_test_add_func ("/lower/matmul/direct", test_matmul_direct);
  g_test_add_func ("/lower/structure", test_structure);
  g_test_add_func ("/lower/hbm-bytes", test_hbm_bytes);
  g_test_add_func ("/lower/split-reduction", test_split_reduction_rejected);
  g_test_add_func ("/lower/mask/direct", test_mask_direct);
  g_test_add_func ("/lower/rotate-half-constant", test_rotate_half_constant);
  g_test_add_func ("/lower/input-scales", test_input_scales);
  return g_test_run ();
}
