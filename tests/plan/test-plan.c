/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <string.h>

#include "napkin-file.h"
#include "napkin-interp.h"
#include "napkin-ir.h"
#include "napkin-tune.h"
#include "napkin-model.h"
#include "napkin-plan.h"
#include "napkin-test-load.h"

/* The kernel napkin_test_plan (docs/plan.md): every GEMM a user meets gets a tensor-core kernel on the
 * architecture's path, whatever its sizes; operands the tensor copies cannot read are
 * repacked, skinny products split K; the model prices exactly that plan. */

/* The plan's kernels and the model's agree one for one on the path. */
static void
assert_model_agrees (NapkinDiagram    *d,
                     const NapkinPlan *p,
                     const char       *arch_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) an = napkin_analyze (d, napkin_test_arch (arch_id), NULL, &error);
  guint planned = 0;

  g_assert_no_error (error);
  for (guint i = 0; i < p->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (p->kernels, i);
      gboolean found = FALSE;

      planned++;
      for (guint j = 0; j < an->kernels->len && !found; j++)
        {
          const NapkinKernelCost *kc = &g_array_index (an->kernels, NapkinKernelCost, j);

          if (g_strcmp0 (kc->plan_kind, napkin_plan_kind_to_string (pk->kind)) != 0)
            continue;
          if (g_str_has_prefix (kc->name, pk->name))
            {
              g_assert_cmpint (kc->path, ==, pk->path);
              found = TRUE;
            }
        }
      g_assert_true (found);
    }
  g_assert_cmpuint (an->kernels->len, ==, planned);
  g_assert_cmpuint (an->generic_kernels, ==, p->n_generic);
}

static void
test_gemm_cases (void)
{
  guint n_cases;
  const NapkinTestGemmCase *cases = napkin_test_gemm_cases (&n_cases);

  for (guint i = 0; i < n_cases; i++)
    {
      const NapkinTestGemmCase *c = &cases[i];
      g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c->c);
      g_autoptr(NapkinPlan) h = napkin_test_plan (d, "h100");
      g_autoptr(NapkinPlan) a = napkin_test_plan (d, "a100");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (h, c->c.BM > 0 ? 0 : -1,
                                                          napkin_diagram_find_node (d, "mm"));
      guint repacks = 0;

      g_test_message ("%s", c->name);
      g_assert_nonnull (k);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_cmpuint (h->n_generic, ==, 0);
      g_assert_true (h->feasible);
      g_assert_cmpint (k->u.gemm.M * k->u.gemm.batch, ==, c->c.M * MAX (c->c.batch, 1));
      g_assert_cmpint (k->u.gemm.N, ==, c->c.N);
      g_assert_cmpint (k->u.gemm.K, ==, c->c.K);
      if (c->split > 0)
        g_assert_cmpuint (k->u.gemm.split_k, ==, c->split);
      for (guint j = 0; j < h->kernels->len; j++)
        repacks += ((const NapkinPlanKernel *) g_ptr_array_index (h->kernels, j))->kind == NAPKIN_PLAN_REPACK;
      g_assert_cmpuint (repacks, ==, c->repacks);
      if (c->c.epilogue && *c->c.epilogue)
        g_assert_cmpuint (k->u.gemm.epilogue->len, >=, 1);
      assert_model_agrees (d, h, "h100");

      /* Ampere: the same shapes on mma.sync, fp8 has no path there */
      k = napkin_plan_kernel_for (a, c->c.BM > 0 ? 0 : -1, napkin_diagram_find_node (d, "mm"));
      if (g_str_has_prefix (c->c.dtype, "fp8"))
        {
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_GENERIC);
          g_assert_nonnull (strstr (k->reason, "fp8"));
        }
      else
        {
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_MMA);
          g_assert_cmpuint (a->n_generic, ==, 0);
        }
      assert_model_agrees (d, a, "a100");
    }
}

/* Skinny products split K to fill the GPU; the split is summed by a kernel after. */
static void
test_split_k (void)
{
  NapkinTestGemmDiagram c = { 64, 4096, 4096, 0, "bf16" };
  g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
  const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, 0);
  const NapkinPlanKernel *r = g_ptr_array_index (p->kernels, 1);

  g_assert_cmpuint (p->kernels->len, ==, 2);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_cmpuint (k->u.gemm.split_k, >=, 2);
  g_assert_cmpint (k->grid, >=, 66);
  g_assert_cmpint (k->grid, <=, 132);
  g_assert_cmpint (r->kind, ==, NAPKIN_PLAN_SPLIT_REDUCE);
  g_assert_cmpint (k->u.gemm.partials, >=, 0);
  g_assert_cmpint (p->scratch_bytes, >=, (gint64) k->u.gemm.split_k * 64 * 4096 * 4);
}

/* Skinny products (M from 1 to 256 against a 4096 × 4096 weight) are cut so that one
 * wave keeps at least half of the SMs busy: tiles too few for the GPU split K; large
 * products keep the 128 × 256 tile and no split; no tile is twice its axis or more
 * (docs/plan.md, "Tiles"). */
static void
test_skinny_tiles (void)
{
  static const gint64 ms[] = { 1, 16, 64, 128, 256 };

  for (guint i = 0; i < G_N_ELEMENTS (ms); i++)
    {
      NapkinTestGemmDiagram c = { ms[i], 4096, 4096, 0, "bf16" };
      g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
      const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, 0);

      g_test_message ("M = %" G_GINT64_FORMAT ": %s", ms[i], k->note);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
      g_assert_cmpuint (k->u.gemm.split_k, >=, 2);
      g_assert_cmpint (k->grid, >=, 66);
      g_assert_cmpint (k->grid, <=, 132);
      /* the 64 × 64 tile of round 1 (no split) measured slowest */
      g_assert_false (k->u.gemm.BM == 64 && k->u.gemm.BN == 64);
      assert_model_agrees (d, p, "h100");
    }
  {
    NapkinTestGemmDiagram c = { 4096, 4096, 4096, 0, "bf16" };
    g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c);
    g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
    const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, 0);

    g_assert_cmpint (k->u.gemm.BM, ==, 128);
    g_assert_cmpint (k->u.gemm.BN, ==, 256);
    g_assert_cmpuint (k->u.gemm.split_k, ==, 1);
  }
  {
    /* N = 64 (and M = 64): no tile twice its axis, whose other half is padding */
    NapkinTestGemmDiagram c[] = { { 10000, 64, 4096, 0, "bf16" }, { 64, 10000, 4096, 0, "bf16" } };

    for (guint i = 0; i < G_N_ELEMENTS (c); i++)
      {
        g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c[i]);
        g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
        const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, 0);

        g_test_message ("%s", k->note);
        g_assert_cmpint (i == 0 ? k->u.gemm.BN : k->u.gemm.BM, ==, 64);
      }
  }
}

/* wgmma takes any BN in steps of 8 when B is K-major (one TMA box of BN rows), in
 * steps of 64 when N-major; the plan asks exactly what the printer takes. */
static void
test_kmajor_bn (void)
{
  NapkinTestGemmDiagram nk = { 1000, 1000, 512, 0, "bf16", NULL, FALSE, TRUE, FALSE, "", 128, 40, 64, 4 };
  NapkinTestGemmDiagram kn = { 1000, 1000, 512, 0, "bf16", NULL, FALSE, FALSE, FALSE, "", 128, 96, 64, 4 };
  g_autoptr(NapkinDiagram) d1 = napkin_test_load_gemm (&nk);
  g_autoptr(NapkinDiagram) d2 = napkin_test_load_gemm (&kn);
  g_autoptr(NapkinPlan) p1 = napkin_test_plan (d1, "h100");
  g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h100");
  const NapkinPlanKernel *k1 = g_ptr_array_index (p1->kernels, 0);
  const NapkinPlanKernel *k2 = g_ptr_array_index (p2->kernels, 0);

  g_assert_cmpint (k1->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_true (k1->u.gemm.b_kmajor);
  g_assert_cmpint (k1->u.gemm.BN, ==, 40);
  g_assert_cmpuint (k1->adjustments->len, ==, 0);
  g_assert_cmpint (k2->path, ==, NAPKIN_PATH_MMA);
  g_assert_nonnull (strstr (g_ptr_array_index (k2->adjustments, 0), "steps of 64"));
}

/* A repack's and a split-K reduction's launch (grid, threads, shared memory) is what
 * kernels/repack.cu and kernels/split-reduce.cu run: one 16-byte chunk of a padded row a
 * thread; 64 × 64 transposed tiles; 4 columns of C a thread. */
static void
test_helper_launch (void)
{
  NapkinTestGemmDiagram odd = { 4095, 4097, 4096, 0, "bf16" };
  NapkinTestGemmDiagram f8 = { 4096, 4096, 4096, 0, "fp8-e4m3" };
  NapkinTestGemmDiagram sk = { 64, 4096, 4096, 0, "bf16" };
  g_autoptr(NapkinDiagram) d1 = napkin_test_load_gemm (&odd);
  g_autoptr(NapkinDiagram) d2 = napkin_test_load_gemm (&f8);
  g_autoptr(NapkinDiagram) d3 = napkin_test_load_gemm (&sk);
  g_autoptr(NapkinPlan) p1 = napkin_test_plan (d1, "h100");
  g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h100");
  g_autoptr(NapkinPlan) p3 = napkin_test_plan (d3, "h100");
  const NapkinPlanKernel *r1 = g_ptr_array_index (p1->kernels, 0);
  const NapkinPlanKernel *r2 = g_ptr_array_index (p2->kernels, 0);
  const NapkinPlanKernel *r3 = g_ptr_array_index (p3->kernels, p3->kernels->len - 1);

  /* B [k, n] of 4097 columns: 4096 rows padded to 4160 (128-byte rows, for wgmma's
   * copies), 8 bf16 a thread */
  g_assert_cmpint (r1->kind, ==, NAPKIN_PLAN_REPACK);
  g_assert_false (r1->u.repack.transpose);
  g_assert_cmpint (r1->u.repack.ld_dst, ==, 4160);
  g_assert_cmpint (r1->grid, ==, MIN (4096 * 4160 / 8 / 256, NAPKIN_PLAN_MAX_GRID));
  g_assert_cmpuint (r1->threads, ==, 256);
  g_assert_cmpint (r1->smem_bytes, ==, 0);
  /* fp8 B [k, n] transposed to K-major: 64 × 64 tiles, rows padded by 2 bytes */
  g_assert_cmpint (r2->kind, ==, NAPKIN_PLAN_REPACK);
  g_assert_true (r2->u.repack.transpose);
  g_assert_cmpint (r2->grid, ==, 64 * 64);
  g_assert_cmpint (r2->smem_bytes, ==, 64 * 66);
  /* the reduction of a split skinny product */
  g_assert_cmpint (r3->kind, ==, NAPKIN_PLAN_SPLIT_REDUCE);
  g_assert_cmpint (r3->grid, ==, 64 * 1024 / 256);
  g_assert_cmpuint (r3->threads, ==, 256);
}

/* Operand rows 16 but not 128 bytes apart (K = 5000 in bf16): wgmma's copies of them
 * are slow (docs/model.md §14, "Unaligned rows"), so a large product copies both
 * operands to 128-byte rows first, and a small one, where the copies would cost more,
 * keeps them and the model prices the slow copies; aligned rows cost nothing. */
static void
test_unaligned_rows (void)
{
  NapkinTestGemmDiagram large = { 6000, 7000, 5000, 0, "bf16" };
  NapkinTestGemmDiagram small = { 64, 7000, 5000, 0, "bf16" };
  NapkinTestGemmDiagram aligned = { 6000, 7168, 5120, 0, "bf16" };   /* B [k, n]: rows of N */
  g_autoptr(NapkinDiagram) d1 = napkin_test_load_gemm (&large);
  g_autoptr(NapkinDiagram) d2 = napkin_test_load_gemm (&small);
  g_autoptr(NapkinDiagram) d3 = napkin_test_load_gemm (&aligned);
  g_autoptr(NapkinPlan) p1 = napkin_test_plan (d1, "h200");
  g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h200");
  g_autoptr(NapkinPlan) p3 = napkin_test_plan (d3, "h200");
  const NapkinPlanKernel *g1 = g_ptr_array_index (p1->kernels, p1->kernels->len - 1);
  const NapkinPlanKernel *g2;
  const NapkinPlanKernel *g3 = g_ptr_array_index (p3->kernels, 0);

  g_assert_cmpuint (p1->kernels->len, ==, 3);
  for (guint i = 0; i < 2; i++)
    {
      const NapkinPlanKernel *r = g_ptr_array_index (p1->kernels, i);

      g_assert_cmpint (r->kind, ==, NAPKIN_PLAN_REPACK);
      g_assert_cmpint (r->u.repack.ld_dst * 2 % 128, ==, 0);
      g_assert_nonnull (strstr (r->note, "128-byte rows"));
    }
  g_assert_cmpint (g1->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_cmpint (g1->u.gemm.lda, ==, 5056);
  g_assert_cmpfloat (napkin_plan_gemm_unaligned_chunk_s (napkin_test_arch ("h200"), &g1->u.gemm, 128, 256), ==, 0);
  /* 64 rows: A (640 KB) is copied, B (70 MB, read once by 28 tiles) costs less read
   * slowly than copied; K split in 2, then summed */
  g2 = g_ptr_array_index (p2->kernels, 1);
  g_assert_cmpuint (p2->kernels->len, ==, 3);
  g_assert_cmpint (((const NapkinPlanKernel *) g_ptr_array_index (p2->kernels, 0))->kind, ==, NAPKIN_PLAN_REPACK);
  g_assert_cmpint (((const NapkinPlanKernel *) g_ptr_array_index (p2->kernels, 0))->u.repack.rows, ==, 64);
  g_assert_cmpint (g2->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_cmpint (g2->u.gemm.lda, ==, 5056);
  g_assert_cmpint (g2->u.gemm.ldb, ==, 7000);
  g_assert_cmpfloat (napkin_plan_gemm_unaligned_chunk_s (napkin_test_arch ("h200"), &g2->u.gemm, 128, 256), >, 0);
  g_assert_cmpuint (p3->kernels->len, ==, 1);
  g_assert_cmpfloat (napkin_plan_gemm_unaligned_chunk_s (napkin_test_arch ("h200"), &g3->u.gemm, 128, 256), ==, 0);
  /* the measured H200 rate (41.6 GB/s of operands an SM): a 128 × 256 chunk of two
   * unaligned operands takes 1.16 µs against its products' 0.56 */
  {
    NapkinPlanGemm both = g2->u.gemm;
    const NapkinArch *h200 = napkin_test_arch ("h200");
    double products = 2.0 * 128 * 256 * 64 / (napkin_arch_tensor_rate (h200, NAPKIN_TENSOR_FP16) / h200->sms);
    double aligned_loads = 384.0 * 64 * 2 / (h200->levels[NAPKIN_LEVEL_L2].bandwidth / h200->sms);

    both.lda = 5000;
    g_assert_cmpfloat_with_epsilon (napkin_plan_gemm_unaligned_chunk_s (h200, &both, 128, 256) + MAX (products, aligned_loads),
                                    384.0 * 64 * 2 / (21.0 * h200->clock_hz), 1e-12);
  }
}

/* A region's tiles are the user's: where wgmma cannot take them, mma.sync does; where
 * neither can, the kernel is generic and says why; shared memory too large is
 * infeasible, naming the limit. */
static void
test_region_tiles (void)
{
  NapkinTestGemmDiagram ok = { 4096, 4096, 4096, 0, "fp16", NULL, FALSE, FALSE, FALSE, "", 128, 96, 64, 3 };
  NapkinTestGemmDiagram bad = { 4096, 4096, 4096, 0, "fp16", NULL, FALSE, FALSE, FALSE, "", 100, 128, 64, 3 };
  NapkinTestGemmDiagram big = { 4096, 4096, 4096, 0, "fp16", NULL, FALSE, FALSE, FALSE, "", 128, 256, 64, 6 };
  g_autoptr(NapkinDiagram) d1 = napkin_test_load_gemm (&ok);
  g_autoptr(NapkinDiagram) d2 = napkin_test_load_gemm (&bad);
  g_autoptr(NapkinDiagram) d3 = napkin_test_load_gemm (&big);
  g_autoptr(NapkinPlan) p1 = napkin_test_plan (d1, "h100");
  g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h100");
  g_autoptr(NapkinPlan) p3 = napkin_test_plan (d3, "h100");
  const NapkinPlanKernel *k1 = g_ptr_array_index (p1->kernels, 0);
  const NapkinPlanKernel *k2 = g_ptr_array_index (p2->kernels, 0);
  const NapkinPlanKernel *k3 = g_ptr_array_index (p3->kernels, 0);

  g_assert_cmpint (k1->path, ==, NAPKIN_PATH_MMA);
  g_assert_cmpint (k1->u.gemm.BN, ==, 96);
  g_assert_nonnull (strstr (g_ptr_array_index (k1->adjustments, 0), "not a wgmma tile"));
  g_assert_cmpint (k2->path, ==, NAPKIN_PATH_GENERIC);
  g_assert_nonnull (strstr (k2->reason, "100×128"));
  g_assert_cmpint (k3->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_false (k3->feasible);
  g_assert_false (p3->feasible);
  g_assert_nonnull (strstr (k3->infeasible, "h100 allows"));
  assert_model_agrees (d1, p1, "h100");
  assert_model_agrees (d2, p2, "h100");
  {
    /* a tile that covers its whole axis (93 rows, 56 columns, K 29) is the kernel's
     * tile rounded up, the edges masked, not a size no tensor-core tile takes (56
     * columns: B's rows 16-byte aligned, not one to read in place on mma.sync) */
    NapkinTestGemmDiagram small = { 93, 56, 29, 0, "bf16", NULL, FALSE, FALSE, FALSE, "", 93, 56, 29, 3 };
    g_autoptr(NapkinDiagram) d4 = napkin_test_load_gemm (&small);
    g_autoptr(NapkinPlan) p4 = napkin_test_plan (d4, "h100");
    const NapkinPlanKernel *k4 = napkin_plan_kernel_for (p4, 0, -1);

    g_assert_cmpint (k4->kind, ==, NAPKIN_PLAN_GEMM);
    g_assert_cmpint (k4->path, ==, NAPKIN_PATH_WGMMA);
    g_assert_cmpint (k4->u.gemm.BM, ==, 128);
    g_assert_cmpint (k4->u.gemm.BN, ==, 64);
    g_assert_cmpint (k4->u.gemm.BK, ==, 64);
  }
}

/* One feasibility answer: FlashAttention at q = 8192 with keys streamed by 128 in 3
 * stages needs 230,480 bytes of shared memory in the kernel the plan runs (Q 128×128,
 * 3 stages of K and V chunks, alignment, barriers), which fits the 232,448 an H100 block
 * can have; the model calls it feasible and sizes the block by it. */
static void
test_attention_footprint (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
  g_autoptr(NapkinPlan) p = NULL;
  g_autoptr(NapkinAnalysis) an = NULL;
  g_autoptr(GError) error = NULL;
  const NapkinPlanKernel *k;
  NapkinRegion *region;

  g_assert_true (napkin_diagram_override_axis (d, "q=8192", &error));
  g_assert_true (napkin_diagram_override_axis (d, "k=8192", &error));
  region = (NapkinRegion *) napkin_diagram_region (d, 0);
  for (guint i = 0; i < region->marks->len; i++)
    if (g_str_equal (g_array_index (region->marks, NapkinMark, i).axis, "k"))
      g_array_index (region->marks, NapkinMark, i).tile = 128;
  region->stages = 3;
  napkin_diagram_changed (d);
  p = napkin_test_plan (d, "h100");
  k = g_ptr_array_index (p->kernels, 0);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpint (k->smem_bytes, ==, 1024 + 128 * 128 * 2 + 2 * 3 * 128 * 128 * 2 + 8 * 10);
  g_assert_true (k->feasible);
  an = napkin_analyze (d, napkin_test_arch ("h100"), NULL, &error);
  g_assert_no_error (error);
  g_assert_true (an->feasible);
  g_assert_cmpint (g_array_index (an->regions, NapkinRegionCost, 0).plan_smem_bytes, ==, k->smem_bytes);
}

/* The examples: every kernel of the shipped diagrams is planned, none generic but the
 * fp8 attention (whose fp8 wgmma attention is not generated yet). */
static void
test_examples (void)
{
  const char *names[] = { "matmul.napkin", "matmul-tiled.napkin", "matmul-nested.napkin", "flash-attention.napkin",
                          "mlp.napkin" };

  for (guint i = 0; i < G_N_ELEMENTS (names); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example (names[i]);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");

      for (guint j = 0; j < p->kernels->len; j++)
        {
          const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, j);

          if (k->kind == NAPKIN_PLAN_GEMM || k->kind == NAPKIN_PLAN_ATTENTION)
            g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
        }
      assert_model_agrees (d, p, "h100");
    }
}

/* One legality rule for streaming: whatever tune ranks first lowers and plans. With
 * k = 128 its best streams the keys in one chunk of 128 (the whole axis), which the
 * lowering once refused while the model and tune accepted it. */
static void
test_tune_lowers (void)
{
  const char *sizes[] = { "k=128", "k=4096" };

  for (guint i = 0; i < G_N_ELEMENTS (sizes); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example ("flash-attention.napkin");
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinTuneResult) tuned = NULL;
      g_autoptr(NapkinDiagram) best = NULL;
      g_autoptr(NapkinIrProgram) program = NULL;
      g_autoptr(NapkinPlan) p = NULL;

      g_assert_true (napkin_diagram_override_axis (d, sizes[i], &error));
      tuned = napkin_tune (d, napkin_test_arch ("h100"), NULL, &error);
      g_assert_no_error (error);
      for (guint c = 0; c < MIN (5u, tuned->best->len); c++)
        {
          g_clear_object (&best);
          g_clear_pointer (&program, napkin_ir_program_free);
          g_clear_pointer (&p, napkin_plan_free);
          best = napkin_tune_result_relabel (tuned, d, c, &error);
          g_assert_no_error (error);
          program = napkin_ir_lower (best, NAPKIN_LOWER_DEFAULT, &error);
          g_assert_no_error (error);
          p = napkin_test_plan (best, "h100");
          g_assert_cmpuint (p->n_generic, ==, 0);
        }
    }
}

/* The JSON `plan --format json` prints. */
static void
test_json (void)
{
  NapkinTestGemmDiagram c = { 1000, 4096, 4095, 0, "bf16", NULL, FALSE, FALSE, FALSE, "bias-gelu", 128, 128, 64, 4 };
  g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&c);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
  json_object *root = napkin_plan_to_json (p);
  json_object *kernels = json_object_object_get (root, "kernels");
  json_object *last = json_object_array_get_idx (kernels, json_object_array_length (kernels) - 1);

  g_assert_cmpstr (json_object_get_string (json_object_object_get (root, "target")), ==, "sm_90a");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (last, "path")), ==, "wgmma");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (last, "kind")), ==, "gemm");
  g_assert_cmpint (json_object_array_length (json_object_object_get (last, "fused")), ==, 2);
  g_assert_cmpint (json_object_get_int (json_object_object_get (json_object_object_get (last, "tiles"), "m")), ==, 128);
  json_object_put (root);
}

/* Two products reading one X whose rows TMA cannot read (K = 15338 bf16, the SwiGLU's
 * up and gate projections): X is copied once, the second product reads the first's
 * copy, and the model prices the plan without a second copy. */
static void
test_shared_repack (void)
{
  static const char json[] =
    "{\"format\": \"napkin\", \"version\": 1, \"title\": \"two products, one X\", \"axes\": ["
    "{\"name\": \"m\", \"size\": 5251}, {\"name\": \"n\", \"size\": 1024}, {\"name\": \"k\", \"size\": 15338}],"
    " \"tensors\": [{\"name\": \"X\", \"axes\": [\"m\", \"k\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"W1\", \"axes\": [\"k\", \"n\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"W3\", \"axes\": [\"k\", \"n\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"C1\", \"axes\": [\"m\", \"n\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"C3\", \"axes\": [\"m\", \"n\"], \"dtype\": \"bf16\"}],"
    " \"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0},"
    " {\"id\": \"w1\", \"kind\": \"input\", \"tensor\": \"W1\", \"x\": 0, \"y\": 100},"
    " {\"id\": \"w3\", \"kind\": \"input\", \"tensor\": \"W3\", \"x\": 0, \"y\": 200},"
    " {\"id\": \"mm1\", \"kind\": \"contract\", \"out\": [\"m\", \"n\"], \"x\": 200, \"y\": 50},"
    " {\"id\": \"mm3\", \"kind\": \"contract\", \"out\": [\"m\", \"n\"], \"x\": 200, \"y\": 150},"
    " {\"id\": \"c1\", \"kind\": \"output\", \"tensor\": \"C1\", \"x\": 400, \"y\": 50},"
    " {\"id\": \"c3\", \"kind\": \"output\", \"tensor\": \"C3\", \"x\": 400, \"y\": 150}],"
    " \"wires\": [{\"from\": \"x\", \"to\": \"mm1\", \"port\": 0}, {\"from\": \"w1\", \"to\": \"mm1\", \"port\": 1},"
    " {\"from\": \"x\", \"to\": \"mm3\", \"port\": 0}, {\"from\": \"w3\", \"to\": \"mm3\", \"port\": 1},"
    " {\"from\": \"mm1\", \"to\": \"c1\", \"port\": 0}, {\"from\": \"mm3\", \"to\": \"c3\", \"port\": 0}]}";
  g_autoptr(NapkinDiagram) d = napkin_test_load_json (json);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
  const NapkinPlanKernel *g1 = NULL, *g3 = NULL;
  guint repacks = 0;

  for (guint i = 0; i < p->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, i);

      if (k->kind == NAPKIN_PLAN_REPACK)
        {
          repacks++;
          g_assert_cmpint (k->u.repack.rows, ==, 5251);
          g_assert_cmpint (k->u.repack.ld_dst, ==, 15360);
        }
      else if (k->kind == NAPKIN_PLAN_GEMM && g1 == NULL)
        g1 = k;
      else if (k->kind == NAPKIN_PLAN_GEMM)
        g3 = k;
    }
  g_assert_cmpuint (repacks, ==, 1);
  g_assert_nonnull (g1);
  g_assert_nonnull (g3);
  g_assert_cmpint (g1->u.gemm.a.scratch, >=, 0);
  g_assert_cmpint (g3->u.gemm.a.scratch, ==, g1->u.gemm.a.scratch);
  g_assert_cmpint (g3->u.gemm.lda, ==, 15360);
  assert_model_agrees (d, p, "h200");
}

/* Ping-pong consumers: a residual over 2671 × 12014 (K 128: the staged epilogue, rows
 * of C not 16 bytes apart, outweighs the tensor cores' work) takes them on 64 × 256
 * tiles; the plain product with aligned rows keeps the cooperative kernel;
 * NAPKIN_NO_PINGPONG=1 turns them off. */
static void
test_pingpong (void)
{
  NapkinTestGemmDiagram res = { 2671, 12014, 128, 0, "bf16", .epilogue = "residual" };
  NapkinTestGemmDiagram plain = { 2671, 12016, 128, 0, "bf16" };   /* C by TMA: nothing staged */
  g_autoptr(NapkinDiagram) d1 = napkin_test_load_gemm (&res);
  g_autoptr(NapkinDiagram) d2 = napkin_test_load_gemm (&plain);
  g_autoptr(NapkinPlan) p1 = napkin_test_plan (d1, "h200");
  g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h200");
  g_autoptr(NapkinPlan) p3 = NULL;
  const NapkinPlanKernel *k1 = g_ptr_array_index (p1->kernels, p1->kernels->len - 1);
  const NapkinPlanKernel *k2 = g_ptr_array_index (p2->kernels, p2->kernels->len - 1);
  const NapkinPlanKernel *k3;

  g_assert_cmpint (k1->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_true (k1->u.gemm.pingpong);
  g_assert_cmpint (k1->u.gemm.BM, ==, 64);
  g_assert_cmpint (k1->u.gemm.BN, ==, 256);
  g_assert_cmpuint (k1->u.gemm.consumers, ==, 2);
  g_assert_cmpuint (k1->threads, ==, 384);
  g_assert_cmpint (k1->grid, ==, 42 * 47);
  g_assert_cmpint (k1->smem_bytes, ==, napkin_plan_gemm_smem (NAPKIN_PATH_WGMMA, &k1->u.gemm));
  g_assert_cmpint (k1->smem_bytes, <=, (gint64) napkin_test_arch ("h200")->smem_max_per_block);
  g_assert_nonnull (strstr (k1->note, "ping-pong consumers"));
  g_assert_cmpint (k2->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_false (k2->u.gemm.pingpong);
  assert_model_agrees (d1, p1, "h200");
  g_setenv ("NAPKIN_NO_PINGPONG", "1", TRUE);
  p3 = napkin_test_plan (d1, "h200");
  g_unsetenv ("NAPKIN_NO_PINGPONG");
  k3 = g_ptr_array_index (p3->kernels, p3->kernels->len - 1);
  g_assert_false (k3->u.gemm.pingpong);
  g_assert_cmpint (k3->u.gemm.BM * k3->u.gemm.BN, ==, 128 * 256);
}

/* The SwiGLU of N = 1001 as a diagram (bf16 rows 2002 bytes apart): silu (X·W1ᵀ) ·
 * (X3·W3ᵀ), where X3 is X itself (`shared`) or another input of its shape. */
static NapkinDiagram *
swiglu_1001 (gboolean shared)
{
  g_autofree char *json = g_strdup_printf (
    "{\"format\": \"napkin\", \"version\": 1, \"title\": \"SwiGLU, N = 1001\", \"axes\": ["
    "{\"name\": \"m\", \"size\": 4096}, {\"name\": \"n\", \"size\": 1001}, {\"name\": \"k\", \"size\": 1024}],"
    " \"tensors\": [{\"name\": \"X\", \"axes\": [\"m\", \"k\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"X3\", \"axes\": [\"m\", \"k\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"W1\", \"axes\": [\"n\", \"k\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"W3\", \"axes\": [\"n\", \"k\"], \"dtype\": \"bf16\"},"
    " {\"name\": \"Y\", \"axes\": [\"m\", \"n\"], \"dtype\": \"bf16\"}],"
    " \"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\", \"x\": 0, \"y\": 0},"
    " {\"id\": \"x3\", \"kind\": \"input\", \"tensor\": \"X3\", \"x\": 0, \"y\": 300},"
    " {\"id\": \"w1\", \"kind\": \"input\", \"tensor\": \"W1\", \"x\": 0, \"y\": 100},"
    " {\"id\": \"w3\", \"kind\": \"input\", \"tensor\": \"W3\", \"x\": 0, \"y\": 200},"
    " {\"id\": \"mm1\", \"kind\": \"contract\", \"out\": [\"m\", \"n\"], \"x\": 200, \"y\": 50},"
    " {\"id\": \"act\", \"kind\": \"map\", \"fn\": \"silu\", \"x\": 300, \"y\": 50},"
    " {\"id\": \"mm3\", \"kind\": \"contract\", \"out\": [\"m\", \"n\"], \"x\": 200, \"y\": 150},"
    " {\"id\": \"gate\", \"kind\": \"map\", \"fn\": \"mul\", \"x\": 400, \"y\": 100},"
    " {\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\", \"x\": 500, \"y\": 100}],"
    " \"wires\": [{\"from\": \"x\", \"to\": \"mm1\", \"port\": 0}, {\"from\": \"w1\", \"to\": \"mm1\", \"port\": 1},"
    " {\"from\": \"mm1\", \"to\": \"act\", \"port\": 0},"
    " {\"from\": \"%s\", \"to\": \"mm3\", \"port\": 0}, {\"from\": \"w3\", \"to\": \"mm3\", \"port\": 1},"
    " {\"from\": \"act\", \"to\": \"gate\", \"port\": 0}, {\"from\": \"mm3\", \"to\": \"gate\", \"port\": 1},"
    " {\"from\": \"gate\", \"to\": \"y\", \"port\": 0}]}", shared ? "x" : "x3");

  return napkin_test_load_json (json);
}

/* A gated product whose two projections read different activations (no shared A, so two
 * GEMMs): the gate projection's result feeds only the up projection's epilogue, so it is
 * written into a scratch buffer with 128-byte rows (1024 elements) and read from there as
 * vectors; the output keeps its own rows. */
static void
test_realigned_gate (void)
{
  g_autoptr(NapkinDiagram) d = swiglu_1001 (FALSE);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
  const NapkinPlanKernel *producer = NULL, *consumer = NULL;
  const NapkinPlanMap *map = NULL;

  for (guint i = 0; i < p->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, i);

      if (k->kind != NAPKIN_PLAN_GEMM)
        continue;
      g_assert_false (k->u.gemm.dual);
      for (guint j = 0; j < k->u.gemm.epilogue->len; j++)
        if (g_array_index (k->u.gemm.epilogue, NapkinPlanMap, j).has_other)
          {
            consumer = k;
            map = &g_array_index (k->u.gemm.epilogue, NapkinPlanMap, j);
          }
      if (consumer != k)
        producer = k;
    }
  g_assert_nonnull (producer);
  g_assert_nonnull (consumer);
  g_assert_cmpint (producer->u.gemm.c.node, ==, -1);
  g_assert_cmpint (producer->u.gemm.c.scratch, >=, 0);
  g_assert_cmpint (producer->u.gemm.ldc, ==, 1024);
  g_assert_cmpint (map->other.scratch, ==, producer->u.gemm.c.scratch);
  g_assert_cmpint (map->stride[1], ==, 1024);
  g_assert_cmpint (map->stride[2], ==, 1);
  /* the output keeps its rows: 1001 elements apart */
  g_assert_cmpint (consumer->u.gemm.c.node, >=, 0);
  g_assert_cmpint (consumer->u.gemm.ldc, ==, 1001);
  assert_model_agrees (d, p, "h200");
}

/* The SwiGLU whose projections share X (docs/plan.md, "Gated GEMM"): on Hopper one GEMM
 * computes both products in the same tiles (W3 as B, W1 as B2), silu on the gate's and
 * the join in registers, and stores Y alone, its rows 1001 elements apart; the tile has
 * half the columns one product would take. On an A100 (no wgmma) the three kernels of
 * before. The model prices the one kernel below the three. */
static void
test_gated_pair (void)
{
  g_autoptr(NapkinDiagram) d = swiglu_1001 (TRUE);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
  g_autoptr(NapkinPlan) ampere = napkin_test_plan (d, "a100");
  g_autoptr(NapkinDiagram) apart = swiglu_1001 (FALSE);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) one = NULL, three = NULL;
  const NapkinPlanKernel *k;
  const NapkinPlanGemm *g;

  g_assert_cmpuint (p->kernels->len, ==, 1);
  k = g_ptr_array_index (p->kernels, 0);
  g = &k->u.gemm;
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpstr (k->name, ==, "gate");
  g_assert_cmpuint (k->nodes->len, ==, 4);
  g_assert_true (g->dual);
  g_assert_cmpstr (napkin_diagram_node (p->diagram, g->node)->id, ==, "mm3");
  g_assert_cmpstr (napkin_diagram_node (p->diagram, g->node2)->id, ==, "mm1");
  g_assert_cmpuint (g->gate->len, ==, 1);
  g_assert_cmpint (g_array_index (g->gate, NapkinPlanMap, 0).fn, ==, NAPKIN_FN_SILU);
  g_assert_cmpint (g->join.fn, ==, NAPKIN_FN_MUL);
  g_assert_cmpuint (g->epilogue->len, ==, 0);
  g_assert_cmpint (g->M, ==, 4096);
  g_assert_cmpint (g->N, ==, 1001);
  g_assert_cmpint (g->K, ==, 1024);
  g_assert_cmpint (g->ldb2, ==, 1024);
  g_assert_cmpint (g->ldc, ==, 1001);
  g_assert_cmpint (g->split_k, ==, 1);
  /* two accumulators of BN/2 registers each, 128 at most a consumer thread */
  g_assert_cmpint ((g->pingpong ? g->BM / 64 : g->BM / g->consumers / 64) * g->BN, <=, 128);
  g_assert_cmpint (k->smem_bytes, <=, 227 * 1024);
  g_assert_nonnull (strstr (k->note, "gated"));
  assert_model_agrees (d, p, "h200");

  g_assert_cmpuint (ampere->kernels->len, ==, 3);
  for (guint i = 0; i < ampere->kernels->len; i++)
    g_assert_false (((NapkinPlanKernel *) g_ptr_array_index (ampere->kernels, i))->u.gemm.dual);

  one = napkin_analyze (d, napkin_test_arch ("h200"), NULL, &error);
  g_assert_no_error (error);
  three = napkin_analyze (apart, napkin_test_arch ("h200"), NULL, &error);
  g_assert_no_error (error);
  g_test_message ("one gated GEMM %.4f ms, apart %.4f ms", one->predicted_time_s * 1e3, three->predicted_time_s * 1e3);
  g_assert_cmpfloat (one->predicted_time_s, <, three->predicted_time_s);
}

/* A matrix-vector product: the vector is A, one row (C = v·Bᵀ), on either side of the
 * contraction; the result [b, n] stores its one row per batch element. A dot product
 * a batch element (no row, no column) has no GEMM and says so. */
static void
test_matrix_vector (void)
{
  static const char *const forms[][3] = {
    /* x, y, out */
    { "\"b\", \"n\", \"k\"", "\"b\", \"k\"", "\"b\", \"n\"" },
    { "\"b\", \"k\"", "\"b\", \"n\", \"k\"", "\"b\", \"n\"" },
    { "\"b\", \"k\"", "\"b\", \"k\"", "\"b\"" },
  };

  for (guint f = 0; f < G_N_ELEMENTS (forms); f++)
    {
      g_autofree char *json = g_strdup_printf (
        "{\"format\": \"napkin\", \"version\": 1, \"axes\": ["
        "{\"name\": \"b\", \"size\": 96}, {\"name\": \"n\", \"size\": 4096}, {\"name\": \"k\", \"size\": 256}],"
        "\"tensors\": [{\"name\": \"X\", \"axes\": [%s], \"dtype\": \"bf16\"},"
        "{\"name\": \"V\", \"axes\": [%s], \"dtype\": \"bf16\"},"
        "{\"name\": \"Y\", \"axes\": [%s], \"dtype\": \"bf16\"}],"
        "\"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"},"
        "{\"id\": \"v\", \"kind\": \"input\", \"tensor\": \"V\"},"
        "{\"id\": \"mm\", \"kind\": \"contract\", \"out\": [%s]},"
        "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\"}],"
        "\"wires\": [{\"from\": \"x\", \"to\": \"mm\", \"port\": 0}, {\"from\": \"v\", \"to\": \"mm\", \"port\": 1},"
        "{\"from\": \"mm\", \"to\": \"y\"}]}", forms[f][0], forms[f][1], forms[f][2], forms[f][2]);
      g_autoptr(NapkinDiagram) d = napkin_test_load_json (json);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (p, -1, napkin_diagram_find_node (d, "mm"));

      g_assert_nonnull (k);
      g_test_message ("%s", k->note ? k->note : k->reason);
      if (f == 2)
        {
          g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GENERIC);
          g_assert_nonnull (strstr (k->reason, "is a dot product a batch element"));
          continue;
        }
      g_assert_cmpuint (p->n_generic, ==, 0);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
      g_assert_cmpint (k->u.gemm.batch, ==, 96);
      g_assert_cmpint (k->u.gemm.M, ==, 1);
      g_assert_cmpint (k->u.gemm.N, ==, 4096);
      g_assert_cmpint (k->u.gemm.K, ==, 256);
      g_assert_true (k->u.gemm.a_kmajor);
      g_assert_cmpint (k->u.gemm.a.node, ==, napkin_diagram_find_node (d, f == 0 ? "v" : "x"));
      g_assert_cmpint (k->u.gemm.ldc, ==, 4096);
      assert_model_agrees (d, p, "h200");
    }
}

/* The GEMM epilogue's operands over merged rows (b, s): DiT's gate [b, f] varies by
 * the outer row only and is read at row m / s; a positional operand [s, f] lacks the
 * outer axis and cannot be one stride of m, so it stays out of the epilogue. The gate
 * was once read at row 0 for every batch (its b ignored): wrong on the GPU. */
static void
test_modulated_epilogue (void)
{
  static const char json[] =
    "{\"format\": \"napkin\", \"version\": 1, \"axes\": ["
    "{\"name\": \"b\", \"size\": 4}, {\"name\": \"s\", \"size\": 256}, {\"name\": \"e\", \"size\": 512},"
    "{\"name\": \"f\", \"size\": 384}],"
    "\"tensors\": [{\"name\": \"X\", \"axes\": [\"b\", \"s\", \"e\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"W\", \"axes\": [\"f\", \"e\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"G\", \"axes\": [\"b\", \"f\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"P\", \"axes\": [\"s\", \"f\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"Y\", \"axes\": [\"b\", \"s\", \"f\"], \"dtype\": \"bf16\"}],"
    "\"nodes\": [{\"id\": \"x\", \"kind\": \"input\", \"tensor\": \"X\"},"
    "{\"id\": \"w\", \"kind\": \"input\", \"tensor\": \"W\"},"
    "{\"id\": \"g\", \"kind\": \"input\", \"tensor\": \"G\"},"
    "{\"id\": \"pos\", \"kind\": \"input\", \"tensor\": \"P\"},"
    "{\"id\": \"mm\", \"kind\": \"contract\", \"out\": [\"b\", \"s\", \"f\"]},"
    "{\"id\": \"gate\", \"kind\": \"map\", \"fn\": \"mul\"},"
    "{\"id\": \"addpos\", \"kind\": \"map\", \"fn\": \"add\"},"
    "{\"id\": \"y\", \"kind\": \"output\", \"tensor\": \"Y\"}],"
    "\"wires\": [{\"from\": \"x\", \"to\": \"mm\", \"port\": 0}, {\"from\": \"w\", \"to\": \"mm\", \"port\": 1},"
    "{\"from\": \"mm\", \"to\": \"gate\", \"port\": 0}, {\"from\": \"g\", \"to\": \"gate\", \"port\": 1},"
    "{\"from\": \"gate\", \"to\": \"addpos\", \"port\": 0}, {\"from\": \"pos\", \"to\": \"addpos\", \"port\": 1},"
    "{\"from\": \"addpos\", \"to\": \"y\"}]}";
  g_autoptr(NapkinDiagram) d = napkin_test_load_json (json);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
  int g_node = -1, pos_node = -1;
  gboolean gated = FALSE;

  for (guint i = 0; i < napkin_diagram_n_nodes (d); i++)
    {
      g_node = g_str_equal (napkin_diagram_node (d, i)->id, "g") ? (int) i : g_node;
      pos_node = g_str_equal (napkin_diagram_node (d, i)->id, "pos") ? (int) i : pos_node;
    }
  g_assert_cmpuint (p->n_generic, ==, 0);
  for (guint i = 0; i < p->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, i);

      if (k->kind != NAPKIN_PLAN_GEMM)
        continue;
      g_assert_cmpint (k->u.gemm.M, ==, 4 * 256);
      for (guint j = 0; j < k->u.gemm.epilogue->len; j++)
        {
          const NapkinPlanMap *m = &g_array_index (k->u.gemm.epilogue, NapkinPlanMap, j);

          if (!m->has_other)
            continue;
          g_assert_cmpint (m->other.node, !=, pos_node);
          if (m->other.node == g_node)
            {
              gated = TRUE;
              g_assert_cmpint (m->row_div, ==, 256);
              g_assert_cmpint (m->stride[0], ==, 0);
              g_assert_cmpint (m->stride[1], ==, 384);
              g_assert_cmpint (m->stride[2], ==, 1);
            }
        }
    }
  g_assert_true (gated);
}

/* Gemma 2's scores: Q[b, s, h, g, d] (a projection's heads, repeat_kv's group inside)
 * read as [b, h, (g, s), d] by Q·Kᵀ, which a soft-cap (tanh) leaves outside any
 * attention: the rows g·s are no run of Q, and Q's producer (an input here) keeps its
 * order. The plan copies Q into [b, h, g, s, d] by an element-wise kernel and runs one
 * GEMM, instead of the generic lowering (docs/plan.md, "The pipeline"). */
static void
test_operand_copy (void)
{
  static const char json[] =
    "{\"format\": \"napkin\", \"version\": 1, \"axes\": ["
    "{\"name\": \"b\", \"size\": 2}, {\"name\": \"s\", \"size\": 96}, {\"name\": \"h\", \"size\": 3},"
    "{\"name\": \"g\", \"size\": 2}, {\"name\": \"k\", \"size\": 80}, {\"name\": \"d\", \"size\": 64}],"
    "\"tensors\": [{\"name\": \"Q\", \"axes\": [\"b\", \"s\", \"h\", \"g\", \"d\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"K\", \"axes\": [\"b\", \"h\", \"k\", \"d\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"P\", \"axes\": [\"b\", \"h\", \"g\", \"s\", \"k\"], \"dtype\": \"bf16\"}],"
    "\"nodes\": [{\"id\": \"q\", \"kind\": \"input\", \"tensor\": \"Q\"}, {\"id\": \"kk\", \"kind\": \"input\", \"tensor\": \"K\"},"
    "{\"id\": \"scores\", \"kind\": \"contract\", \"out\": [\"b\", \"h\", \"g\", \"s\", \"k\"]},"
    "{\"id\": \"cap\", \"kind\": \"map\", \"fn\": \"tanh\"}, {\"id\": \"sm\", \"kind\": \"softmax\", \"axis\": \"k\"},"
    "{\"id\": \"p\", \"kind\": \"output\", \"tensor\": \"P\"}],"
    "\"wires\": [{\"from\": \"q\", \"to\": \"scores\", \"port\": 0}, {\"from\": \"kk\", \"to\": \"scores\", \"port\": 1},"
    "{\"from\": \"scores\", \"to\": \"cap\"}, {\"from\": \"cap\", \"to\": \"sm\"}, {\"from\": \"sm\", \"to\": \"p\"}]}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinPlan) plan = NULL;
  gboolean copy = FALSE, gemm = FALSE;

  g_assert_no_error (error);
  plan = napkin_test_plan (d, "h100");
  g_assert_cmpuint (plan->n_generic, ==, 0);
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

      g_test_message ("%s: %s %s", k->name, napkin_plan_kind_to_string (k->kind), napkin_path_to_string (k->path));
      if (g_str_equal (k->name, "scores_in0"))
        {
          g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ELEMENTWISE);
          copy = TRUE;
        }
      if (k->kind == NAPKIN_PLAN_GEMM && g_str_equal (k->name, "scores"))
        {
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
          gemm = TRUE;
        }
    }
  g_assert_true (copy);
  g_assert_true (gemm);
  /* the copy is the plan's: the diagram drawn is unchanged, and the plan's diagram (which
   * the code generator lowers) computes what it computes */
  g_assert_cmpint (napkin_diagram_find_node (d, "scores_in0"), <, 0);
  g_assert_cmpint (napkin_diagram_find_node (plan->diagram, "scores_in0"), >=, 0);
  {
    g_autoptr(NapkinIrProgram) drawn = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
    g_autoptr(NapkinIrProgram) planned = napkin_ir_lower (plan->diagram, NAPKIN_LOWER_DEFAULT, &error);
    NapkinTensorSet *a = napkin_tensor_set_new_random (d, 3), *b = napkin_tensor_set_new_random (d, 3);
    int t = napkin_diagram_find_tensor (d, "P");

    g_assert_no_error (error);
    g_assert_true (napkin_ir_interpret (drawn, a, &error));
    g_assert_true (napkin_ir_interpret (planned, b, &error));
    g_assert_no_error (error);
    g_assert_cmpfloat (napkin_tensor_set_rel_error (b, a, (guint) t), <, 1e-12);
    napkin_tensor_set_free (a);
    napkin_tensor_set_free (b);
  }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/plan/gemm/cases", test_gemm_cases);
  g_test_add_func ("/plan/gemm/matrix-vector", test_matrix_vector);
  g_test_add_func ("/plan/gemm/split-k", test_split_k);
  g_test_add_func ("/plan/gemm/skinny-tiles", test_skinny_tiles);
  g_test_add_func ("/plan/gemm/kmajor-bn", test_kmajor_bn);
  g_test_add_func ("/plan/gemm/helper-launch", test_helper_launch);
  g_test_add_func ("/plan/gemm/unaligned-rows", test_unaligned_rows);
  g_test_add_func ("/plan/gemm/region-tiles", test_region_tiles);
  g_test_add_func ("/plan/gemm/shared-repack", test_shared_repack);
  g_test_add_func ("/plan/gemm/pingpong", test_pingpong);
  g_test_add_func ("/plan/gemm/realigned-gate", test_realigned_gate);
  g_test_add_func ("/plan/gemm/gated-pair", test_gated_pair);
  g_test_add_func ("/plan/gemm/modulated-epilogue", test_modulated_epilogue);
  g_test_add_func ("/plan/attention/footprint", test_attention_footprint);
  g_test_add_func ("/plan/examples", test_examples);
  g_test_add_func ("/plan/json", test_json);
  g_test_add_func ("/plan/tune-lowers", test_tune_lowers);
  g_test_add_func ("/plan/operand-copy", test_operand_copy);
  return g_test_run ();
}
