/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The analysis per kernel (src/perf/napkin-kernels.c, docs/analysis-pane.md "Kernels"):
 * one row per planned kernel with its time, bound, share and, for a kernel that runs
 * poorly, the reason and a fix found by the existing searches. */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-file.h"
#include "napkin-import.h"
#include "napkin-kernels.h"
#include "napkin-tune.h"
#include "napkin-test-load.h"


static NapkinAnalysis *
analyze (NapkinDiagram *d,
         const char    *arch)
{
  g_autoptr(GError) error = NULL;
  NapkinAnalysis *a = napkin_analyze (d, napkin_test_arch (arch), NULL, &error);

  g_assert_no_error (error);
  g_assert_nonnull (a);
  return a;
}

static const NapkinKernelRow *
row_named (GPtrArray  *rows,
           const char *name)
{
  for (guint i = 0; i < rows->len; i++)
    if (g_str_equal (((NapkinKernelRow *) g_ptr_array_index (rows, i))->name, name))
      return g_ptr_array_index (rows, i);
  return NULL;
}

/* The imported causal attention names its generic kernel and why, and the fix (the
 * derivation) makes it one attention kernel. */
static void
test_causal_import (void)
{
  g_autoptr(GError) error = NULL;
  /* causal attention as a user imports it (no regions): the plan runs it as one attention
   * kernel (docs/plan.md, "The pipeline") */
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "data",
                                            "causal-attention.einsum", NULL);
  g_autoptr(NapkinDiagram) imported = napkin_import_file (path, &error);
  /* … relabeled as the first Suggest Tiles proposed it, a region around each product: the
   * mask and the softmax between them kernels of their own, P·V generic */
  g_autofree char *drawn = g_build_filename (g_getenv ("NAPKIN_SOURCE_DIR"), "tests", "data",
                                             "causal-attention-two-products.napkin", NULL);
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_file (drawn, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  g_autoptr(NapkinKernelFix) fix = NULL;
  g_autoptr(NapkinAnalysis) fixed = NULL;
  g_autoptr(GPtrArray) fixed_rows = NULL;
  const NapkinKernelRow *mask;
  double sum = 0;

  g_assert_no_error (error);
  {
    g_autoptr(NapkinAnalysis) plain = analyze (imported, "h100");
    g_autoptr(GPtrArray) plain_rows = napkin_kernel_rows (plain, imported);

    g_assert_cmpuint (plain_rows->len, ==, 1);
    g_assert_cmpint (((NapkinKernelRow *) g_ptr_array_index (plain_rows, 0))->kind, ==, NAPKIN_PLAN_ATTENTION);
    g_assert_false (((NapkinKernelRow *) g_ptr_array_index (plain_rows, 0))->poor);
  }
  a = analyze (d, "h100");
  rows = napkin_kernel_rows (a, d);
  g_assert_cmpuint (rows->len, ==, a->plan->kernels->len);
  for (guint i = 0; i < rows->len; i++)
    {
      const NapkinKernelRow *r = g_ptr_array_index (rows, i);

      g_assert_cmpfloat (r->share, <=, 1.0);
      g_assert_cmpfloat (r->time_s, >, 0);
      g_assert_nonnull (r->nodes[0]);
      sum += r->share;
    }
  g_assert_cmpfloat (fabs (sum - 1), <, 1e-9);

  /* the mask runs in the scale's element-wise kernel (it masks by position) */
  mask = row_named (rows, "t");
  g_assert_nonnull (mask);
  g_assert_cmpint (mask->kind, ==, NAPKIN_PLAN_ELEMENTWISE);
  g_assert_cmpstr (mask->nodes[0], ==, "t");
  g_assert_cmpstr (mask->nodes[1], ==, "u");
  g_assert_null (row_named (rows, "u"));
  /* P·V, its operands in another order of the batch axes, is the generic kernel */
  mask = row_named (rows, "block2");
  g_assert_nonnull (mask);
  g_assert_cmpint (mask->path, ==, NAPKIN_PATH_GENERIC);
  g_assert_true (mask->poor);
  g_assert_nonnull (strstr (mask->reason, "Generic code"));
  g_assert_cmpint (mask->fix, ==, NAPKIN_KERNEL_FIX_DERIVE);

  fix = napkin_kernel_fix_find (d, napkin_test_arch ("h100"), NULL, mask, &error);
  g_assert_no_error (error);
  g_assert_nonnull (fix);
  g_assert_cmpint (fix->kind, ==, NAPKIN_KERNEL_FIX_DERIVE);
  g_assert_cmpfloat (fix->after_s, <, fix->before_s / 10);
  /* the drawn product regions go, the plan's attention region is drawn */
  g_assert_cmpuint (napkin_diagram_n_regions (fix->fixed), ==, 1);
  fixed = analyze (fix->fixed, "h100");
  fixed_rows = napkin_kernel_rows (fixed, fix->fixed);
  g_assert_cmpuint (fixed_rows->len, ==, 1);
  g_assert_cmpint (((NapkinKernelRow *) g_ptr_array_index (fixed_rows, 0))->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_false (((NapkinKernelRow *) g_ptr_array_index (fixed_rows, 0))->poor);
  g_assert_cmpfloat (fabs (fixed->predicted_time_s - fix->after_s), <, 1e-12);
}

/* FlashAttention with its keys whole does not fit; streaming them is the fix. */
static void
test_stream_fix (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  g_autoptr(NapkinKernelFix) fix = NULL;
  const NapkinKernelRow *block;
  gint64 tile = 0;

  g_assert_true (napkin_diagram_override_tile (d, "block.k=whole", &error));
  g_assert_no_error (error);
  a = analyze (d, "h100");
  g_assert_false (a->feasible);
  rows = napkin_kernel_rows (a, d);
  block = row_named (rows, "block");
  g_assert_nonnull (block);
  g_assert_true (block->poor);
  g_assert_false (block->feasible);
  g_assert_nonnull (strstr (block->reason, "does not fit"));
  g_assert_cmpint (block->fix, ==, NAPKIN_KERNEL_FIX_RELABEL);

  fix = napkin_kernel_fix_find (d, napkin_test_arch ("h100"), NULL, block, &error);
  g_assert_no_error (error);
  g_assert_nonnull (fix);
  g_assert_cmpstr (fix->label, ==, "Stream k");
  g_assert_false (isfinite (fix->before_s));
  g_assert_true (isfinite (fix->after_s));
  g_assert_cmpint (napkin_region_mark (napkin_diagram_region (fix->fixed, 0), "k", &tile), ==, NAPKIN_MARK_STREAM);
  g_assert_cmpint (tile, >, 0);
}

/* A row softmax cut into 32 one-warp blocks leaves 100 of the H200's 132 SMs idle: the
 * row says so, and its fix (tune's tiles) fills the GPU. */
static void
test_idle_sms (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("softmax.napkin");
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(GPtrArray) rows = NULL;
  g_autoptr(NapkinKernelFix) fix = NULL;
  const NapkinKernelRow *row;

  g_assert_true (napkin_diagram_override_tile (d, "rows.r=parallel:512", &error));
  g_assert_true (napkin_tune_apply_spec (d, "rows.threads=32", &error));
  g_assert_no_error (error);
  a = analyze (d, "h200");
  rows = napkin_kernel_rows (a, d);
  row = row_named (rows, "rows");
  g_assert_nonnull (row);
  g_assert_true (row->poor);
  g_assert_nonnull (strstr (row->reason, "32 of the 132 SMs"));
  g_assert_cmpint (row->fix, ==, NAPKIN_KERNEL_FIX_RELABEL);
  fix = napkin_kernel_fix_find (d, napkin_test_arch ("h200"), NULL, row, &error);
  g_assert_no_error (error);
  g_assert_nonnull (fix);
  g_assert_cmpfloat (fix->after_s, <, fix->before_s / 3);
  g_assert_null (row->adjusted);

  /* a threads count the kernel cannot run: the row says what it runs instead */
  {
    g_autoptr(NapkinDiagram) small = napkin_test_load_example ("softmax.napkin");
    g_autoptr(NapkinAnalysis) sa = NULL;
    g_autoptr(GPtrArray) srows = NULL;

    g_assert_true (napkin_tune_apply_spec (small, "rows.threads=16", &error));
    g_assert_no_error (error);
    sa = analyze (small, "h200");
    srows = napkin_kernel_rows (sa, small);
    g_assert_nonnull (row_named (srows, "rows")->adjusted);
    g_assert_nonnull (strstr (row_named (srows, "rows")->adjusted, "rows.threads: 16 → 32"));
  }
}

/* Every example on every profile: a row per planned kernel, shares of at most 100 %
 * that add up to the whole, and a reason for every generic or infeasible kernel. */
static void
test_examples (void)
{
  g_autoptr(GDir) dir = g_dir_open (g_getenv ("NAPKIN_EXAMPLES_DIR"), 0, NULL);
  const char *archs[] = { "a100", "h100", "h200", "l40s", "rtx4090", "b200" };
  const char *name;
  guint checked = 0;

  g_assert_nonnull (dir);
  while ((name = g_dir_read_name (dir)) != NULL)
    {
      g_autoptr(NapkinDiagram) d = NULL;

      if (!g_str_has_suffix (name, ".napkin"))
        continue;
      d = napkin_test_load_example (name);
      for (guint i = 0; i < G_N_ELEMENTS (archs); i++)
        {
          g_autoptr(NapkinAnalysis) a = analyze (d, archs[i]);
          g_autoptr(GPtrArray) rows = napkin_kernel_rows (a, d);
          double sum = 0;

          g_assert_cmpuint (rows->len, ==, a->plan->kernels->len);
          for (guint r = 0; r < rows->len; r++)
            {
              const NapkinKernelRow *row = g_ptr_array_index (rows, r);

              g_assert_cmpfloat (row->share, >=, 0);
              g_assert_cmpfloat (row->share, <=, 1.0 + 1e-12);
              g_assert_nonnull (row->nodes);
              if (row->path == NAPKIN_PATH_GENERIC || !row->feasible)
                g_assert_nonnull (row->reason);
              sum += row->share;
            }
          g_assert_cmpfloat (sum, <=, 1.0 + 1e-9);
          checked++;
        }
    }
  g_assert_cmpuint (checked, >=, 6 * 15);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/perf/kernels/causal-import", test_causal_import);
  g_test_add_func ("/perf/kernels/stream-fix", test_stream_fix);
  g_test_add_func ("/perf/kernels/idle-sms", test_idle_sms);
  g_test_add_func ("/perf/kernels/examples", test_examples);
  return g_test_run ();
}
