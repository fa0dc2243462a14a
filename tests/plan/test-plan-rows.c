/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The plan's rows and element-wise kernels (docs/plan.md, "Rows and element-wise
 * kernels"): what the recognisers choose for row problems of 64 to 128256 columns, with
 * and without regions and fused maps, and that every printed kernel compiles for sm_80
 * and sm_90a (nvcc and NVRTC, where installed). Correctness on a GPU is
 * bench/gpu/rows-prims/check's. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen-private.h"
#include "napkin-file.h"
#include "napkin-test-plan-cuda.h"
#include "napkin-test-rows.h"

static NapkinArch *
h100 (void)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h100", &error);

  g_assert_no_error (error);
  return arch;
}

static NapkinPlan *
plan_json (const char    *json,
           NapkinDiagram **out)
{
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  NapkinPlan *plan;

  g_assert_no_error (error);
  plan = napkin_plan_build (d, h100 (), NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (plan);
  if (out != NULL)
    *out = d;
  else
    g_object_unref (d);
  return plan;
}

static NapkinPlan *
plan_rows (const NapkinTestRows *t)
{
  g_autofree char *json = napkin_test_rows_json (t);

  return plan_json (json, NULL);
}

static const NapkinPlanKernel *
only_kernel (const NapkinPlan *plan)
{
  g_assert_cmpuint (plan->kernels->len, ==, 1);
  return g_ptr_array_index (plan->kernels, 0);
}

static const NapkinPlanRows *
rows_kernel (const NapkinPlan *plan)
{
  const NapkinPlanKernel *k = only_kernel (plan);

  if (k->kind != NAPKIN_PLAN_ROWS)
    g_error ("%s: %s kernel (%s)", k->name, napkin_plan_kind_to_string (k->kind), k->reason ? k->reason : "");
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_SIMT);
  g_assert_true (k->feasible);
  g_assert_nonnull (k->note);
  g_assert_cmpuint (k->threads, ==, k->u.rows.threads);
  g_assert_cmpuint (k->threads % 32, ==, 0);
  g_assert_cmpuint (k->threads % k->u.rows.threads_per_row, ==, 0);
  /* the strided form: its strips of columns, each in every chunk of a split axis but a
   * reduction's (its second launch, the plan's kernel, combines the chunks a strip) */
  if (k->u.rows.inner > 1)
    g_assert_cmpint (k->grid, ==, k->u.rows.outer * ((k->u.rows.inner + k->u.rows.cols_per_block - 1)
                                                     / k->u.rows.cols_per_block)
                                  * (k->u.rows.split > 1 && k->u.rows.op != NAPKIN_OP_REDUCE ? k->u.rows.split : 1));
  else
    g_assert_cmpint (k->grid, ==, (k->u.rows.rows + k->u.rows.rows_per_block - 1) / k->u.rows.rows_per_block);
  g_assert_cmpuint (k->blocks_per_sm, >=, 1);
  return &k->u.rows;
}

/* Softmax, layernorm and rmsnorm over 1000, 4000, 50257 and 128256 columns, fp16 and
 * bf16: the row in registers while a team's 32 values per thread hold it, in shared
 * memory while the row fits twice in an SM (softmax; a norm with nothing before it is
 * read twice instead), read twice beyond. */
static void
test_forms (void)
{
  const char *ops[] = { "softmax", "layernorm", "rmsnorm" };
  const char *types[] = { "fp16", "bf16" };
  struct { gint64 cols; guint tpr; gboolean one_pass, smem; } want[] = {
    { 1000, 32, TRUE, FALSE },      /* 125 vectors of 8: 4 per thread */
    { 4000, 128, TRUE, FALSE },
    { 4096, 128, TRUE, FALSE },
    { 16384, 512, TRUE, FALSE },
    { 50257, 512, TRUE, TRUE },     /* 100.5 KB of fp16: two blocks per SM */
    { 128256, 1024, FALSE, FALSE }, /* 250 KB: more than an SM holds */
  };

  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint t = 0; t < G_N_ELEMENTS (types); t++)
      for (guint i = 0; i < G_N_ELEMENTS (want); i++)
        {
          NapkinTestRows spec = { .op = ops[o], .rows = 4096, .cols = want[i].cols, .x_dtype = types[t] };
          g_autoptr(NapkinPlan) plan = plan_rows (&spec);
          const NapkinPlanRows *r = rows_kernel (plan);
          gboolean reread = want[i].smem && o > 0;   /* a norm: two passes of 1024 threads */

          g_test_message ("%s %s %" G_GINT64_FORMAT ": %s", ops[o], types[t], want[i].cols,
                          only_kernel (plan)->note);
          g_assert_cmpint (r->rows, ==, 4096);
          g_assert_cmpint (r->cols, ==, want[i].cols);
          g_assert_cmpint (r->ldx, ==, want[i].cols);
          g_assert_cmpint (r->ldy, ==, want[i].cols);
          g_assert_cmpuint (r->vec, ==, 8);
          g_assert_cmpuint (r->threads_per_row, ==, reread ? 1024 : want[i].tpr);
          g_assert_cmpint (r->one_pass, ==, want[i].one_pass && !reread);
          g_assert_cmpint (r->smem_row, ==, want[i].smem && !reread);
          g_assert_cmpint (r->x.node, >=, 0);
          g_assert_cmpint (r->y.node, ==, r->node);
          g_assert_cmpuint (r->prologue->len + r->epilogue->len, ==, 0);
          if (want[i].smem && !reread)
            g_assert_cmpint (only_kernel (plan)->smem_bytes, >=, want[i].cols * 2);
          if (!want[i].one_pass || want[i].smem)
            g_assert_cmpuint (only_kernel (plan)->threads, ==, r->threads_per_row);
        }
}

/* A team half as wide where its rows' registers leave room for more rows an SM (docs/
 * model.md §7c, "Turns"): 8763 unaligned bf16 columns with γ and β in 512 threads keep 2
 * rows an SM, in 256 threads (41 values a thread) 3; only over two waves or more, and
 * not where a region or NAPKIN_ROWS_THREADS sets the threads. */
static void
test_half_team (void)
{
  struct { gint64 rows, cols; guint tpr, blocks; } cases[] = {
    { 59062, 8763, 256, 3 },
    { 39503, 11968, 256, 3 },
    { 39503, 11961, 512, 2 },   /* 49 values in 256 threads: still two blocks an SM */
    { 600, 8763, 512, 2 },      /* fewer rows than two waves of three */
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      NapkinTestRows spec = { .op = "layernorm", .rows = cases[i].rows, .cols = cases[i].cols, .x_dtype = "bf16",
                              .gamma = TRUE, .beta = TRUE, .fuse = TRUE };
      g_autoptr(NapkinPlan) plan = plan_rows (&spec);
      const NapkinPlanRows *r = rows_kernel (plan);

      g_test_message ("%" G_GINT64_FORMAT " × %" G_GINT64_FORMAT ": %s", cases[i].rows, cases[i].cols,
                      only_kernel (plan)->note);
      g_assert_true (r->one_pass);
      g_assert_false (r->smem_row);
      g_assert_cmpuint (r->threads_per_row, ==, cases[i].tpr);
      g_assert_cmpuint (only_kernel (plan)->blocks_per_sm, ==, cases[i].blocks);
      g_assert_cmpuint ((r->cols / r->vec + r->threads_per_row - 1) / r->threads_per_row * r->vec, <=, 64);
    }
  {
    NapkinTestRows spec = { .op = "layernorm", .rows = 59062, .cols = 8763, .x_dtype = "bf16", .gamma = TRUE,
                            .beta = TRUE, .fuse = TRUE };
    g_autoptr(NapkinPlan) plan = NULL;

    g_setenv ("NAPKIN_ROWS_THREADS", "512", TRUE);
    plan = plan_rows (&spec);
    g_unsetenv ("NAPKIN_ROWS_THREADS");
    g_assert_cmpuint (rows_kernel (plan)->threads_per_row, ==, 512);
  }
}

/* A softmax row that in registers would take 1024 threads of 57 registers (one block an
 * SM: nothing overlaps a row's load with the last one's reductions) is kept in shared
 * memory by 256 threads instead, several blocks an SM (H200: 1024 rows of 19418 ran
 * 0.0499 ms in registers, 0.0340 in shared memory); a norm, which the shared row does not
 * pay for, keeps its registers. */
static void
test_one_block_an_sm (void)
{
  const char *ops[] = { "softmax", "rmsnorm" };
  const gint64 cols[] = { 19418, 24576 };

  for (guint o = 0; o < G_N_ELEMENTS (ops); o++)
    for (guint c = 0; c < G_N_ELEMENTS (cols); c++)
      {
        NapkinTestRows spec = { .op = ops[o], .rows = 1024, .cols = cols[c], .x_dtype = "bf16" };
        g_autoptr(NapkinPlan) plan = plan_rows (&spec);
        const NapkinPlanRows *r = rows_kernel (plan);

        g_test_message ("%s %" G_GINT64_FORMAT ": %s", ops[o], cols[c], only_kernel (plan)->note);
        g_assert_true (r->one_pass);
        g_assert_cmpint (r->smem_row, ==, o == 0);
        g_assert_cmpuint (r->threads_per_row, ==, o == 0 ? 256 : 1024);
        if (o == 0)
          g_assert_cmpint (only_kernel (plan)->smem_bytes, >=, cols[c] * 2);
      }
}

/* fp32 rows hold half as many values per 16 bytes; 50257 fp32 values do not fit twice
 * in shared memory: two passes. 64 columns: teams of two threads, many rows per block. */
static void
test_fp32_and_short (void)
{
  {
    NapkinTestRows spec = { .op = "softmax", .rows = 4096, .cols = 50257, .x_dtype = "fp32" };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpuint (r->vec, ==, 4);
    g_assert_false (r->one_pass);
  }
  {
    NapkinTestRows spec = { .op = "layernorm", .rows = 1 << 20, .cols = 64, .x_dtype = "bf16" };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpuint (r->threads_per_row, ==, 2);
    g_assert_cmpuint (r->threads, ==, 256);
    g_assert_cmpint (r->rows_per_block, ==, 128);
    g_assert_true (r->one_pass);
    g_assert_false (r->smem_row);
  }
  {
    /* few rows: smaller blocks so that every SM gets two */
    NapkinTestRows spec = { .op = "softmax", .rows = 264, .cols = 1000, .x_dtype = "fp16" };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);

    g_assert_cmpint (only_kernel (plan)->grid, >=, 264);
  }
}

/* A region around residual add → layernorm → ·γ → +β: one kernel with the maps fused,
 * their operands read through (0, row, column) strides. */
static void
test_fused (void)
{
  NapkinTestRows spec = { .op = "layernorm", .rows = 8192, .cols = 4096, .x_dtype = "bf16", .y_dtype = "fp32",
                          .residual = TRUE, .scale = 0.5, .gamma = TRUE, .beta = TRUE, .act = "gelu", .fuse = TRUE };
  g_autoptr(NapkinDiagram) d = NULL;
  g_autofree char *json = napkin_test_rows_json (&spec);
  g_autoptr(NapkinPlan) plan = plan_json (json, &d);
  const NapkinPlanRows *r = rows_kernel (plan);
  const NapkinPlanMap *m;

  g_assert_cmpuint (r->prologue->len, ==, 2);
  g_assert_cmpuint (r->epilogue->len, ==, 3);
  g_assert_cmpint (r->x_dtype, ==, NAPKIN_DTYPE_BF16);
  g_assert_cmpint (r->y_dtype, ==, NAPKIN_DTYPE_FP32);
  g_assert_cmpstr (napkin_diagram_node (d, r->x.node)->id, ==, "x");
  g_assert_cmpstr (napkin_diagram_node (d, r->y.node)->id, ==, "act");
  /* x + R[r, c] */
  m = &g_array_index (r->prologue, NapkinPlanMap, 0);
  g_assert_cmpint (m->fn, ==, NAPKIN_FN_ADD);
  g_assert_true (m->has_other);
  g_assert_false (m->other_first);
  g_assert_cmpstr (napkin_diagram_node (d, m->other.node)->id, ==, "rin");
  g_assert_cmpint (m->stride[0], ==, 0);
  g_assert_cmpint (m->stride[1], ==, 4096);
  g_assert_cmpint (m->stride[2], ==, 1);
  m = &g_array_index (r->prologue, NapkinPlanMap, 1);
  g_assert_cmpint (m->fn, ==, NAPKIN_FN_SCALE);
  g_assert_cmpfloat (m->alpha, ==, 0.5);
  g_assert_false (m->has_other);
  /* ·G[c], then B[c] + x (β on port 0) */
  m = &g_array_index (r->epilogue, NapkinPlanMap, 0);
  g_assert_cmpint (m->fn, ==, NAPKIN_FN_MUL);
  g_assert_cmpint (m->stride[1], ==, 0);
  g_assert_cmpint (m->stride[2], ==, 1);
  m = &g_array_index (r->epilogue, NapkinPlanMap, 1);
  g_assert_cmpint (m->fn, ==, NAPKIN_FN_ADD);
  g_assert_true (m->other_first);
  g_assert_cmpstr (napkin_diagram_node (d, m->other.node)->id, ==, "bin");
  g_assert_cmpint (m->stride[1], ==, 0);
  g_assert_cmpint (m->stride[2], ==, 1);
  g_assert_cmpint (g_array_index (r->epilogue, NapkinPlanMap, 2).fn, ==, NAPKIN_FN_GELU);
  g_assert_nonnull (strstr (only_kernel (plan)->note, "2 maps before, 3 after"));
}

/* Without a region, the maps that only finish the norm's value go into its kernel (the
 * plan's epilogue rule for operations outside regions, docs/plan.md): one rows kernel
 * with ·γ fused. A map whose input is used twice stays a kernel of its own: the
 * element-wise recogniser. */
static void
test_unfused (void)
{
  NapkinTestRows spec = { .op = "rmsnorm", .rows = 4096, .cols = 4096, .x_dtype = "fp16", .gamma = TRUE };
  g_autofree char *json = napkin_test_rows_json (&spec);
  g_autoptr(NapkinPlan) plan = plan_json (json, NULL);
  const NapkinPlanKernel *k0;

  g_assert_cmpuint (plan->kernels->len, ==, 1);
  k0 = g_ptr_array_index (plan->kernels, 0);
  g_assert_cmpint (k0->kind, ==, NAPKIN_PLAN_ROWS);
  g_assert_cmpint (k0->path, ==, NAPKIN_PATH_SIMT);
  g_assert_cmpuint (k0->nodes->len, ==, 2);
  g_assert_cmpuint (k0->u.rows.epilogue->len, ==, 1);
  g_assert_cmpint (g_array_index (k0->u.rows.epilogue, NapkinPlanMap, 0).fn, ==, NAPKIN_FN_MUL);
}

/* Regions: rows per block from r's groups, the region's threads, a batch axis. */
static void
test_regions (void)
{
  {
    NapkinTestRows spec = { .op = "softmax", .rows = 16384, .cols = 16384, .x_dtype = "fp16", .region_rows = 4 };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpint (r->rows_per_block, ==, 4);
    g_assert_cmpint (only_kernel (plan)->grid, ==, 4096);
    g_assert_cmpint (only_kernel (plan)->region, ==, 0);
  }
  {
    /* one row per block: the 32-thread teams of 1000 columns do not share blocks */
    NapkinTestRows spec = { .op = "layernorm", .rows = 8192, .cols = 1000, .x_dtype = "fp16", .region_rows = 1,
                            .gamma = TRUE };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpint (r->rows_per_block, ==, 1);
    g_assert_cmpuint (r->threads, ==, 32);
    g_assert_cmpuint (r->epilogue->len, ==, 1);
  }
  {
    /* the region's threads: 1000 columns over 256 threads */
    NapkinTestRows spec = { .op = "softmax", .rows = 8192, .cols = 1000, .x_dtype = "fp16", .region_rows = 1,
                            .threads = 256 };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpuint (r->threads, ==, 256);
  }
  {
    /* a row in shared memory takes the whole block of the region's threads */
    NapkinTestRows spec = { .op = "softmax", .rows = 4096, .cols = 50257, .x_dtype = "fp16", .region_rows = 1,
                            .threads = 1024 };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_true (r->smem_row);
    g_assert_cmpuint (r->threads, ==, 1024);
    g_assert_cmpuint (r->threads_per_row, ==, 1024);
  }
  {
    /* 200 threads asked: a power of two, said so */
    NapkinTestRows spec = { .op = "softmax", .rows = 8192, .cols = 4096, .x_dtype = "fp16", .region_rows = 2,
                            .threads = 200 };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpuint (r->threads, ==, 256);
    g_assert_cmpuint (only_kernel (plan)->adjustments->len, ==, 1);
  }
  {
    /* [b, r, c]: rows are b·r, r grouped by 8 and b by 1 */
    NapkinTestRows spec = { .op = "rmsnorm", .batch = 4, .rows = 2048, .cols = 4096, .x_dtype = "bf16",
                            .region_rows = 8, .residual = TRUE, .gamma = TRUE };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);
    const NapkinPlanMap *m = &g_array_index (r->prologue, NapkinPlanMap, 0);

    g_assert_cmpint (r->rows, ==, 8192);
    g_assert_cmpint (r->rows_per_block, ==, 8);
    g_assert_cmpint (m->stride[1], ==, 4096);
  }
  {
    /* a sum may stream its row: one pass either way */
    NapkinTestRows spec = { .op = "sum", .rows = 4096, .cols = 128256, .x_dtype = "bf16", .y_dtype = "fp32",
                            .region_rows = 1, .stream_cols = 4096 };
    g_autoptr(NapkinPlan) plan = plan_rows (&spec);
    const NapkinPlanRows *r = rows_kernel (plan);

    g_assert_cmpint (r->op, ==, NAPKIN_OP_REDUCE);
    g_assert_cmpint (r->reduce, ==, NAPKIN_REDUCE_SUM);
    g_assert_cmpint (r->ldy, ==, 1);
    g_assert_true (r->one_pass);
  }
}

/* Shapes a rows kernel refuses fall to the generic lowering with a reason that names
 * the operation, the axis or the region. */
static void
test_refusals (void)
{
  {
    /* a result stored with the columns (the axes after the reduced one) not contiguous */
    NapkinTestRows spec = { .op = "softmax", .rows = 4096, .cols = 1000, .x_dtype = "fp16", .col_major = TRUE };
    g_autofree char *json = napkin_test_rows_json (&spec);
    g_autoptr(GString) moved = g_string_new (json);
    g_autoptr(NapkinPlan) plan = NULL;
    const NapkinPlanKernel *k;

    g_assert_cmpuint (g_string_replace (moved, "{\"name\": \"Y\", \"axes\": [\"c\", \"r\"]",
                                        "{\"name\": \"Y\", \"axes\": [\"r\", \"c\"]", 1), ==, 1);
    plan = plan_json (moved->str, NULL);
    k = only_kernel (plan);
    g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GENERIC);
    g_assert_nonnull (strstr (k->reason, "not stored like"));
    g_assert_nonnull (strstr (k->reason, "after c contiguous"));
  }
  {
    /* the value before the norm is also an output: the kernel would have to store it */
    const char *json =
      "{\"format\": \"napkin\", \"version\": 1, \"axes\": [{\"name\": \"r\", \"size\": 64}, {\"name\": \"c\", "
      "\"size\": 256}], \"tensors\": [{\"name\": \"X\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}, "
      "{\"name\": \"S\", \"axes\": [\"r\", \"c\"], \"dtype\": \"fp16\"}, {\"name\": \"Y\", \"axes\": [\"r\", \"c\"], "
      "\"dtype\": \"fp16\"}], \"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0}, "
      "{\"id\": \"sc\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": 2, \"x\": 1, \"y\": 0}, "
      "{\"id\": \"f\", \"kind\": \"softmax\", \"axis\": \"c\", \"x\": 2, \"y\": 0}, "
      "{\"id\": \"s\", \"kind\": \"output\", \"tensor\": \"S\", \"x\": 3, \"y\": 1}, "
      "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 3, \"y\": 0}], \"wires\": ["
      "{\"from\": \"x\", \"to\": \"sc\", \"port\": 0}, {\"from\": \"sc\", \"to\": \"f\", \"port\": 0}, "
      "{\"from\": \"sc\", \"to\": \"s\", \"port\": 0}, {\"from\": \"f\", \"to\": \"y\", \"port\": 0}], "
      "\"regions\": [{\"name\": \"blk\", \"level\": \"smem\", \"nodes\": [\"sc\", \"f\"], \"marks\": {}}]}";
    g_autoptr(NapkinPlan) plan = plan_json (json, NULL);
    const NapkinPlanKernel *k = only_kernel (plan);

    g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GENERIC);
    g_assert_nonnull (strstr (k->reason, "sc"));
  }
}

/* Rows over any axis (docs/plan.md, "Rows over any axis"): the axis first (X[c, r], the
 * softmax over c) or in the middle (X[b, c, r]); the plan's lines, threads, form and the
 * L2 question, on the shapes the GPU check runs. */
static void
test_strided (void)
{
  struct
  {
    NapkinTestRows t;
    gint64 outer, inner, w, grid;
    guint threads, tpr, vec;
    int form;              /* 0 registers, 1 shared memory, 2 two passes (3: from L2), 4 a reduction */
    guint split;           /* chunks of the axis (0: whole) */
    gint64 chunk;
  } cases[] = {
    /* 4096 × 8192 over axis 0: 128-byte lines, 128 blocks of 1024 threads (narrower lines
     * on more blocks, whose second read would come from L2, ran slower), x read twice
     * from device memory */
    { { .op = "softmax", .rows = 8192, .cols = 4096, .x_dtype = "fp16", .col_major = TRUE },
      1, 8192, 64, 128, 1024, 128, 8, 2 },
    /* 50257 × 1024: even 32-byte lines would leave half the SMs idle, so the axis goes in
     * 33 chunks of 1523, each with 16 strips of 128-byte lines: 528 blocks of 256 threads
     * (whole columns took 128 lines of 16 bytes, 800 KB a block) */
    { { .op = "softmax", .rows = 1024, .cols = 50257, .x_dtype = "fp16", .col_major = TRUE },
      1, 1024, 64, 528, 256, 32, 8, 2, 33, 1523 },
    /* 64 × 4096 × 128 over the middle axis: 128-byte lines, 128 blocks */
    { { .op = "layernorm", .batch = 64, .rows = 128, .cols = 4096, .x_dtype = "bf16", .col_major = TRUE },
      64, 128, 64, 128, 1024, 128, 8, 2 },
    /* few along the axis: registers, 128-byte lines, four vectors a thread (8 threads
     * down 32 rows) */
    { { .op = "rmsnorm", .rows = 65536, .cols = 32, .x_dtype = "fp16", .col_major = TRUE },
      1, 65536, 64, 1024, 64, 8, 8, 0 },
    /* fp32: 4-element vectors, 128-byte lines; 16 values a thread in registers */
    { { .op = "softmax", .rows = 8192, .cols = 512, .x_dtype = "fp32", .col_major = TRUE },
      1, 8192, 32, 256, 1024, 128, 4, 0 },
    /* 5000 along the axis: too many for registers, the block's rows (80 KB) in shared
     * memory */
    { { .op = "layernorm", .rows = 80, .cols = 5000, .x_dtype = "bf16", .col_major = TRUE },
      1, 80, 8, 10, 1024, 1024, 8, 1 },
    /* sums: one pass; an odd column count takes scalars */
    { { .op = "sum", .rows = 8192, .cols = 4096, .x_dtype = "fp16", .y_dtype = "fp32", .col_major = TRUE },
      1, 8192, 64, 128, 1024, 128, 8, 4 },
    { { .op = "mean", .batch = 3, .rows = 333, .cols = 1000, .x_dtype = "bf16", .col_major = TRUE },
      3, 333, 8, 126, 1024, 128, 1, 4 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinPlan) plan = plan_rows (&cases[i].t);
      const NapkinPlanKernel *k = only_kernel (plan);
      const NapkinPlanRows *r = rows_kernel (plan);
      guint prows;

      g_test_message ("case %u: %s", i, k->note);
      g_assert_nonnull (strstr (k->note, "strided"));
      g_assert_cmpint (r->outer, ==, cases[i].outer);
      g_assert_cmpint (r->inner, ==, cases[i].inner);
      g_assert_cmpint (r->rows, ==, r->outer * r->inner);
      g_assert_cmpint (r->cols, ==, cases[i].t.cols);
      g_assert_cmpint (r->ldx, ==, r->cols * r->inner);
      g_assert_cmpint (r->cols_per_block, ==, cases[i].w);
      g_assert_cmpint (k->grid, ==, cases[i].grid);
      g_assert_cmpuint (r->threads, ==, cases[i].threads);
      g_assert_cmpuint (r->threads_per_row, ==, cases[i].tpr);
      g_assert_cmpuint (r->vec, ==, cases[i].vec);
      g_assert_cmpint (r->one_pass, ==, cases[i].form != 2 && cases[i].form != 3);
      g_assert_cmpint (r->smem_row, ==, cases[i].form == 1);
      g_assert_cmpint (r->l2_reread, ==, cases[i].form == 3);
      g_assert_cmpuint (r->split, ==, MAX (cases[i].split, 1));
      g_assert_cmpint (r->chunk, ==, cases[i].split > 1 ? cases[i].chunk : r->cols);
      g_assert_cmpint (r->partials >= 0, ==, cases[i].split > 1);
      if (r->op != NAPKIN_OP_REDUCE)
        {
          g_assert_cmpint (r->y_stride, ==, r->inner);
          g_assert_cmpint (r->ldy, ==, r->ldx);
        }
      else
        g_assert_cmpint (r->ldy, ==, r->inner);
      /* shared memory: a float pair per column for each warp row and for the totals,
       * and the block's rows in the shared-memory form */
      prows = r->cols_per_block / r->vec >= 32 ? r->threads_per_row : r->threads / 32;
      g_assert_cmpint (k->smem_bytes, ==, (gint64) (prows + 1) * r->cols_per_block * 8
                                          + (r->smem_row ? r->cols * r->cols_per_block
                                                             * napkin_dtype_bytes (r->x_dtype) : 0));
      {
        g_autofree char *why = NULL;

        g_assert_true (napkin_plan_rows_printable (r, &why));
      }
    }
}

/* A strided kernel's fused operands, addressed over (o, c, j): γ over the reduced axis,
 * a residual stored [b, r, c] while x is [b, c, r] (its columns gathered). */
static void
test_strided_operands (void)
{
  NapkinTestRows spec = { .op = "layernorm", .batch = 4, .rows = 96, .cols = 2048, .x_dtype = "fp16",
                          .col_major = TRUE, .residual = TRUE, .r_row_major = TRUE, .gamma = TRUE, .beta = TRUE,
                          .fuse = TRUE };
  g_autoptr(NapkinPlan) plan = plan_rows (&spec);
  const NapkinPlanRows *r = rows_kernel (plan);
  const NapkinPlanMap *m;

  g_assert_cmpint (r->inner, ==, 96);
  g_assert_cmpint (r->outer, ==, 4);
  g_assert_cmpuint (r->prologue->len, ==, 1);
  g_assert_cmpuint (r->epilogue->len, ==, 2);
  m = &g_array_index (r->prologue, NapkinPlanMap, 0);
  g_assert_cmpint (m->stride[0], ==, 96 * 2048);
  g_assert_cmpint (m->stride[1], ==, 2048);
  g_assert_cmpint (m->stride[2], ==, 1);
  m = &g_array_index (r->epilogue, NapkinPlanMap, 0);
  g_assert_cmpint (m->stride[0], ==, 0);
  g_assert_cmpint (m->stride[1], ==, 0);
  g_assert_cmpint (m->stride[2], ==, 1);
  g_assert_nonnull (strstr (only_kernel (plan)->note, "1 maps before, 2 after"));
}

/* Element-wise kernels: a same-shape chain merges to one flat axis; a bias along the
 * inner axis keeps two; an fp32 → fp16 chain reads 8 elements per vector. */
static void
test_elementwise (void)
{
  {
    g_autofree char *json = napkin_test_map_json (4096, 4096, "bf16", "bf16", "silu", "mul", "m,n", TRUE);
    g_autoptr(NapkinPlan) plan = plan_json (json, NULL);
    const NapkinPlanKernel *k = only_kernel (plan);

    g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ELEMENTWISE);
    g_assert_cmpuint (k->u.ew.maps->len, ==, 2);
    g_assert_cmpuint (k->u.ew.rank, ==, 1);
    g_assert_cmpint (k->u.ew.dims[0], ==, 4096 * 4096);
    g_assert_cmpuint (k->u.ew.vec, ==, 8);
    g_assert_null (g_ptr_array_index (k->u.ew.other_strides, 0));
    g_assert_cmpint (((gint64 *) g_ptr_array_index (k->u.ew.other_strides, 1))[0], ==, 1);
  }
  {
    g_autofree char *json = napkin_test_map_json (1000, 4000, "fp32", "fp16", NULL, "add", "n", FALSE);
    g_autoptr(NapkinPlan) plan = plan_json (json, NULL);
    const NapkinPlanKernel *k = only_kernel (plan);
    const gint64 *os;

    g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ELEMENTWISE);
    g_assert_cmpuint (k->u.ew.rank, ==, 2);
    os = g_ptr_array_index (k->u.ew.other_strides, 0);
    g_assert_cmpint (os[0], ==, 0);
    g_assert_cmpint (os[1], ==, 1);
    g_assert_cmpint (k->u.ew.x_strides[0], ==, 4000);
    g_assert_cmpuint (k->u.ew.vec, ==, 8);
    g_assert_cmpint (k->u.ew.x_dtype, ==, NAPKIN_DTYPE_FP32);
    g_assert_cmpint (k->u.ew.y_dtype, ==, NAPKIN_DTYPE_FP16);
  }
  {
    /* 4097 × 33: the inner axis takes no vector; merged to one flat axis with a tail */
    g_autofree char *json = napkin_test_map_json (4097, 33, "fp16", "fp16", "gelu", NULL, NULL, FALSE);
    g_autoptr(NapkinPlan) plan = plan_json (json, NULL);
    const NapkinPlanKernel *k = only_kernel (plan);

    g_assert_cmpuint (k->u.ew.rank, ==, 1);
    g_assert_cmpuint (k->u.ew.vec, ==, 8);
  }
}

/* ---- printers ------------------------------------------------------------------------------- */

static void
compile_nvcc (const char *source,
              const char *what)
{
  const char *nvcc = "/usr/local/cuda/bin/nvcc";
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = NULL;
  g_autofree char *src = NULL;
  g_autofree char *obj = NULL;
  g_autofree char *err = NULL;
  int status = 0;

  if (!g_file_test (nvcc, G_FILE_TEST_IS_EXECUTABLE))
    return;
  dir = g_dir_make_tmp ("napkin-rows-XXXXXX", &error);
  g_assert_no_error (error);
  src = g_build_filename (dir, "k.cu", NULL);
  obj = g_build_filename (dir, "k.o", NULL);
  g_file_set_contents (src, source, -1, &error);
  g_assert_no_error (error);
  {
    const char *argv[] = { nvcc, "-c", "-O1", "-gencode=arch=compute_80,code=sm_80",
                           "-gencode=arch=compute_90a,code=sm_90a", "-o", obj, src, NULL };

    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
  }
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("nvcc failed on %s:\n%s", what, err);
  g_unlink (obj);
  g_unlink (src);
  g_rmdir (dir);
}

static void
compile_all (NapkinDiagram *d,
             const char    *what)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = napkin_test_plan_cuda (d, h100 (), "napkin_plan_k", &plan, &error);
  guint simt = 0;

  g_assert_no_error (error);
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

      /* a split axis: the chunks' statistics, then the plan's kernel */
      if (k->path == NAPKIN_PATH_SIMT)
        simt += k->kind == NAPKIN_PLAN_ROWS && k->u.rows.split > 1 ? 2 : 1;
    }
  g_assert_cmpuint (simt, >, 0);
  g_assert_cmpuint (module->kernels->len, ==, simt);
  for (guint i = 0; i < module->kernels->len; i++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, i);

      g_assert_true (g_str_equal (ck->skeleton, "rows") || g_str_equal (ck->skeleton, "rows-strided")
                     || g_str_equal (ck->skeleton, "elementwise"));
      g_assert_cmpint (ck->grid, >=, 1);
      g_assert_cmpuint (ck->threads, >=, 32);
      g_assert_nonnull (strstr (module->source, ck->name));
    }
  compile_nvcc (module->source, what);
  if (napkin_nvrtc_available ())
    for (guint a = 0; a < 2; a++)
      {
        g_autofree char *log = NULL;
        g_autoptr(GBytes) cubin = napkin_nvrtc_compile (module->source, a ? "sm_90a" : "sm_80", &log, &error);

        if (cubin == NULL)
          g_error ("NVRTC failed on %s: %s", what, error->message);
      }
}

static void
test_print_rows (void)
{
  struct { NapkinTestRows t; } cases[] = {
    { { .op = "softmax", .rows = 512, .cols = 1000, .x_dtype = "fp16" } },
    { { .op = "softmax", .rows = 512, .cols = 50257, .x_dtype = "fp16", .y_dtype = "fp32" } },
    { { .op = "softmax", .rows = 256, .cols = 128256, .x_dtype = "bf16" } },
    { { .op = "layernorm", .rows = 4096, .cols = 4000, .x_dtype = "fp16", .gamma = TRUE, .beta = TRUE, .fuse = TRUE } },
    { { .op = "layernorm", .rows = 256, .cols = 50257, .x_dtype = "bf16", .residual = TRUE, .gamma = TRUE,
        .beta = TRUE, .fuse = TRUE } },
    { { .op = "layernorm", .rows = 256, .cols = 128256, .x_dtype = "fp16", .y_dtype = "fp32", .gamma = TRUE,
        .beta = TRUE, .region_rows = 1 } },
    { { .op = "rmsnorm", .rows = 1 << 16, .cols = 64, .x_dtype = "bf16", .gamma = TRUE, .act = "silu",
        .fuse = TRUE } },
    { { .op = "rmsnorm", .batch = 2, .rows = 512, .cols = 4096, .x_dtype = "fp32", .residual = TRUE, .scale = 0.25,
        .gamma = TRUE, .region_rows = 4 } },
    { { .op = "mean", .rows = 4096, .cols = 50257, .x_dtype = "fp16", .y_dtype = "fp32", .gamma = FALSE } },
    { { .op = "max", .rows = 4096, .cols = 1000, .x_dtype = "bf16", .region_rows = 2, .stream_cols = 500 } },
    { { .op = "rmsnorm", .rows = 4096, .cols = 4096, .x_dtype = "fp16", .gamma = TRUE } },
    /* the strided form: over the first or a middle axis, every form, odd sizes, fused maps */
    { { .op = "softmax", .rows = 8192, .cols = 4096, .x_dtype = "fp16", .col_major = TRUE } },
    { { .op = "softmax", .rows = 1024, .cols = 50257, .x_dtype = "bf16", .y_dtype = "fp32", .col_major = TRUE } },
    { { .op = "layernorm", .batch = 64, .rows = 128, .cols = 4096, .x_dtype = "fp16", .col_major = TRUE,
        .gamma = TRUE, .beta = TRUE, .fuse = TRUE } },
    { { .op = "layernorm", .batch = 4, .rows = 96, .cols = 2048, .x_dtype = "bf16", .col_major = TRUE,
        .residual = TRUE, .scale = 0.5, .gamma = TRUE, .beta = TRUE, .act = "gelu", .fuse = TRUE } },
    { { .op = "rmsnorm", .rows = 65536, .cols = 32, .x_dtype = "fp16", .col_major = TRUE, .gamma = TRUE } },
    { { .op = "softmax", .rows = 8192, .cols = 512, .x_dtype = "fp32", .col_major = TRUE } },
    { { .op = "rmsnorm", .batch = 7, .rows = 333, .cols = 1001, .x_dtype = "fp32", .y_dtype = "bf16",
        .col_major = TRUE } },
    { { .op = "sum", .rows = 8192, .cols = 4096, .x_dtype = "fp16", .y_dtype = "fp32", .col_major = TRUE } },
    { { .op = "max", .batch = 3, .rows = 1000, .cols = 77, .x_dtype = "bf16", .col_major = TRUE, .region_rows = 4,
        .stream_cols = 7 } },
    { { .op = "mean", .batch = 3, .rows = 333, .cols = 1000, .x_dtype = "bf16", .col_major = TRUE, .residual = TRUE,
        .fuse = TRUE } },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *json = napkin_test_rows_json (&cases[i].t);
      g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_autofree char *what = g_strdup_printf ("%s over %" G_GINT64_FORMAT " columns (case %u)", cases[i].t.op,
                                               cases[i].t.cols, i);

      g_assert_no_error (error);
      compile_all (d, what);
    }
}

static void
test_print_elementwise (void)
{
  struct { gint64 m, n; const char *xt, *yt, *unary, *binary, *other; gboolean region; } cases[] = {
    { 4096, 4096, "bf16", "bf16", "silu", "mul", "m,n", TRUE },
    { 1000, 4000, "fp32", "fp16", NULL, "add", "n", FALSE },
    { 4097, 33, "fp16", "fp32", "gelu", "sub", "n,m", TRUE },
    { 333, 7, "bf16", "bf16", "relu", "max", "m", TRUE },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(GError) error = NULL;
      g_autofree char *json = napkin_test_map_json (cases[i].m, cases[i].n, cases[i].xt, cases[i].yt, cases[i].unary,
                                                    cases[i].binary, cases[i].other, cases[i].region);
      g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
      g_autofree char *what = g_strdup_printf ("maps case %u", i);

      g_assert_no_error (error);
      compile_all (d, what);
    }
}

/* The printed kernel carries the plan's choices: its form, team and vector width. */
static void
test_print_parameters (void)
{
  NapkinTestRows spec = { .op = "softmax", .rows = 4096, .cols = 50257, .x_dtype = "fp16" };
  g_autoptr(GError) error = NULL;
  g_autofree char *json = napkin_test_rows_json (&spec);
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = napkin_test_plan_cuda (d, h100 (), "k", &plan, &error);
  const NapkinCudaKernel *ck;

  g_assert_no_error (error);
  ck = g_ptr_array_index (module->kernels, 0);
  g_assert_cmpstr (ck->skeleton, ==, "rows");
  g_assert_cmpint (ck->grid, ==, 4096);
  g_assert_cmpuint (ck->threads, ==, 512);
  /* the row, 50257 + 16 fp16 values, in dynamic shared memory (opt-in above 48 KiB) */
  g_assert_cmpint (ck->dynamic_smem, ==, (50257 + 16) * 2);
  g_assert_nonnull (strstr (module->source, "#define NKP_MODE 1\n"));
  g_assert_nonnull (strstr (module->source, "#define NKP_TPR 512\n"));
  g_assert_nonnull (strstr (module->source, "#define NKP_X_ALIGNED false\n"));
  g_assert_nonnull (strstr (module->source, "#define NKP_THREADS 512\n#define NKP_MINBLOCKS 2\n"));
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/plan/rows/forms", test_forms);
  g_test_add_func ("/plan/rows/fp32-and-short", test_fp32_and_short);
  g_test_add_func ("/plan/rows/one-block-an-sm", test_one_block_an_sm);
  g_test_add_func ("/plan/rows/half-team", test_half_team);
  g_test_add_func ("/plan/rows/fused", test_fused);
  g_test_add_func ("/plan/rows/unfused", test_unfused);
  g_test_add_func ("/plan/rows/regions", test_regions);
  g_test_add_func ("/plan/rows/refusals", test_refusals);
  g_test_add_func ("/plan/rows/strided", test_strided);
  g_test_add_func ("/plan/rows/strided-operands", test_strided_operands);
  g_test_add_func ("/plan/elementwise/chains", test_elementwise);
  g_test_add_func ("/plan/rows/print-parameters", test_print_parameters);
  g_test_add_func ("/plan/rows/print", test_print_rows);
  g_test_add_func ("/plan/elementwise/print", test_print_elementwise);
  return g_test_run ();
}
