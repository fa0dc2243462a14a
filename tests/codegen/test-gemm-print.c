/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The GEMM printers (docs/plan.md, "GEMM tile primitives") on a table of plan kernels
 * built by hand (tests/common/napkin-test-gemm.c): the kernels' launch facts, their
 * tensor maps, what each printer refuses, and — where nvcc is installed — every source
 * compiled for sm_90a (wgmma) or sm_80 (mma) with no register spills. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-test-gemm.h"
#include "napkin-test-load.h"

#define MAX_SMEM (227 * 1024)

static gint64
cdiv (gint64 a,
      gint64 b)
{
  return (a + b - 1) / b;
}

static const NapkinCudaKernel *
gemm_kernel (const NapkinTestGemm *t,
             const NapkinPlanKernel **pk)
{
  for (guint i = 0; i < t->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (t->plan->kernels, i);

      if (k->kind == NAPKIN_PLAN_GEMM)
        {
          *pk = k;
          return g_ptr_array_index (t->module->kernels, i);
        }
    }
  g_assert_not_reached ();
}

/* Launch facts of every kernel of every problem in the table. */
static void
test_facts (void)
{
  guint n;
  const char **specs = napkin_test_gemm_table (&n);

  g_assert_cmpuint (n, >=, 30);
  for (guint i = 0; i < n; i++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinTestGemm) t = napkin_test_gemm_new (specs[i], &error);
      const NapkinPlanKernel *pk;
      const NapkinCudaKernel *ck;
      const NapkinPlanGemm *g;
      gint64 tiles;

      g_assert_no_error (error);
      g_assert_cmpuint (t->module->kernels->len, ==, t->plan->kernels->len);
      ck = gemm_kernel (t, &pk);
      g = &pk->u.gemm;
      tiles = cdiv (t->M, g->BM) * cdiv (t->N, g->BN) * t->batch * t->split_k;
      g_assert_cmpint (ck->grid, ==, tiles);
      g_assert_cmpint (ck->smem_bytes, <=, MAX_SMEM);
      g_assert_cmpint (ck->dynamic_smem, ==, ck->smem_bytes);
      if (t->sm90)
        {
          const NapkinCudaTensorMap *a, *b;
          const gint64 kb = 128 / napkin_dtype_bytes (t->ab_dtype);

          g_assert_cmpstr (ck->skeleton, ==, "gemm-wgmma");
          g_assert_nonnull (strstr (t->module->source, "wgmma.mma_async"));
          g_assert_true (ck->persistent);
          g_assert_cmpuint (ck->threads, ==, 128 * (1 + g->consumers));
          g_assert_nonnull (ck->tensor_maps);
          /* C by TMA only for an aligned store with no map that reads an operand */
          g_assert_cmpuint (ck->tensor_maps->len, ==,
                            g->split_k == 1 && (t->epi == NAPKIN_TEST_EPI_NONE || t->epi == NAPKIN_TEST_EPI_GELU)
                            && (t->N * napkin_dtype_bytes (t->c_dtype)) % 16 == 0
                            && g->BN % (128 / napkin_dtype_bytes (t->c_dtype)) == 0 ? 3 : 2);
          a = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, 0);
          b = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, 1);
          /* A: K-major rows of K in boxes KB × BM; M-major rows of M in boxes 64 × KB */
          g_assert_cmpint (a->inner, ==, g->a_kmajor ? t->K : t->M);
          g_assert_cmpint (a->outer, ==, g->a_kmajor ? t->M : t->K);
          g_assert_cmpuint (a->box_inner, ==, g->a_kmajor ? kb : 64);
          g_assert_cmpuint (a->box_outer, ==, g->a_kmajor ? g->BM : kb);
          g_assert_cmpint (b->inner, ==, g->b_kmajor ? t->K : t->N);
          g_assert_cmpint (b->outer, ==, g->b_kmajor ? t->N : t->K);
          g_assert_cmpuint (b->box_inner, ==, g->b_kmajor ? kb : 64);
          g_assert_cmpuint (b->box_outer, ==, g->b_kmajor ? g->BN : kb);
          g_assert_cmpint (a->ld, ==, g->lda);
          g_assert_cmpint ((a->ld * napkin_dtype_bytes (t->ab_dtype)) % 16, ==, 0);
          g_assert_cmpint ((b->ld * napkin_dtype_bytes (t->ab_dtype)) % 16, ==, 0);
          /* batches: a batch coordinate, except for a B shared by all */
          g_assert_cmpint (a->batch, ==, t->batch);
          g_assert_cmpint (b->batch, ==, t->shared_b ? 1 : t->batch);
          g_assert_cmpint (a->batch_stride, ==, t->batch > 1 ? g->a_bstride : 0);
          for (guint m = 0; m < ck->tensor_maps->len; m++)
            {
              const NapkinCudaTensorMap *map = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, m);
              NapkinTensorMapEncoding enc;

              g_assert_true (napkin_cuda_tensor_map_encoding (map, 0x10000, &enc, &error));
              g_assert_no_error (error);
              g_assert_cmpuint (enc.rank, ==, map->batch > 1 ? 3 : 2);
            }
        }
      else
        {
          g_assert_cmpstr (ck->skeleton, ==, "gemm-mma");
          g_assert_null (strstr (t->module->source, "wgmma.mma_async"));
          g_assert_nonnull (strstr (t->module->source, "mma.sync.aligned.m16n8k16"));
          g_assert_cmpuint (ck->threads, ==, (g->BM / g->WM) * (g->BN / g->WN) * 32);
        }
      /* the kernels around it */
      for (guint k = 0; k < t->plan->kernels->len; k++)
        {
          const NapkinPlanKernel *p = g_ptr_array_index (t->plan->kernels, k);
          const NapkinCudaKernel *c = g_ptr_array_index (t->module->kernels, k);

          if (p->kind == NAPKIN_PLAN_SPLIT_REDUCE)
            {
              g_assert_cmpuint (k, ==, t->plan->kernels->len - 1);
              g_assert_cmpstr (c->skeleton, ==, "split-reduce");
              g_assert_cmpint (c->grid, ==, MIN (cdiv (t->batch * t->M * cdiv (t->N, 4), 256), 16384));
            }
          else if (p->kind == NAPKIN_PLAN_REPACK)
            {
              g_assert_cmpstr (c->skeleton, ==, "repack");
              g_assert_cmpint (c->grid, >=, 1);
            }
        }
      g_assert_cmpint (t->split_k > 1, ==, strstr (t->module->source, "split-K reduction") != NULL);
    }
}

static NapkinTestGemm *
must_fail (const char *spec,
           const char *expected)
{
  g_autoptr(GError) error = NULL;
  NapkinTestGemm *t = napkin_test_gemm_new (spec, &error);

  g_assert_null (t);
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED);
  if (strstr (error->message, expected) == NULL)
    g_error ("“%s” failed with “%s”, not “%s”", spec, error->message, expected);
  return t;
}

/* Each limit is refused by name, not printed into a kernel that cannot run. */
static void
test_refusals (void)
{
  must_fail ("t=sm80 ab=e4m3 m=64 n=64 k=64 a=k bl=k tile=64x64x32", "no fp8");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=96x128x64", "BM = 96");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 bl=n tile=128x96x64", "boxes of 64 columns");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 bl=k tile=128x264x64", "BN = 264");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=256x256x64", "accumulators");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=128x256x64 stages=5", "shared memory");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=128x128x32", "BK = 32");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=64x128x64 cons=1 pp=1", "ping-pong with 1 consumer");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=256x128x64 pp=1", "whole tile, 64 or 128 rows");
  must_fail ("t=sm90 ab=bf16 m=64 n=64 k=64 tile=128x256x64 pp=1", "accumulators");
  must_fail ("t=sm90 ab=e4m3 m=64 n=64 k=64 a=k bl=k tile=128x128x64", "BK = 64");
  must_fail ("t=sm80 ab=bf16 m=64 n=64 k=64 tile=128x128x32 warp=24x32", "warp tile");
  must_fail ("t=sm80 ab=bf16 m=64 n=64 k=64 tile=256x256x32 warp=16x16", "warps per block");
}

/* A row of A that TMA cannot read (K = 29 bf16: 58 bytes) reaches the printer only
 * through a repack; printed directly it is refused with the operand named. */
static void
test_unaligned (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTestGemm) t = napkin_test_gemm_new ("t=sm90 ab=bf16 c=bf16 m=37 n=64 k=29 a=k bl=k", &error);
  NapkinPlanKernel *gk = NULL;
  g_autoptr(GString) out = g_string_new (NULL);
  NapkinPrintCtx ctx = { t->plan, NULL, t->module, NULL, out };

  g_assert_no_error (error);
  for (guint i = 0; i < t->plan->kernels->len; i++)
    {
      NapkinPlanKernel *k = g_ptr_array_index (t->plan->kernels, i);

      if (k->kind == NAPKIN_PLAN_REPACK)
        g_assert_cmpint (k->u.repack.ld_dst, ==, 32);
      if (k->kind == NAPKIN_PLAN_GEMM)
        gk = k;
    }
  g_assert_nonnull (gk);
  gk->u.gemm.a = (NapkinPlanBuffer) { -1, t->a.scratch, t->ab_dtype };
  gk->u.gemm.lda = 29;
  g_assert_false (_napkin_print_gemm_wgmma (&ctx, gk, "bad", &error));
  g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED);
  g_assert_nonnull (strstr (error->message, "rows of A are 58 bytes apart"));
  g_clear_error (&error);
  g_assert_false (_napkin_print_gemm_mma (&ctx, gk, "bad", &error));
  g_assert_nonnull (strstr (error->message, "rows of A are 58 bytes apart"));
}

/* The epilogue reads its operands through their strides and applies the maps in order. */
static void
test_epilogue_text (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTestGemm) t = napkin_test_gemm_new ("name=e t=sm90 ab=bf16 c=bf16 m=256 n=512 k=128 a=k bl=k "
                                                      "epi=bias_gelu", &error);
  g_autofree char *bias = NULL;
  g_autoptr(NapkinTestGemm) s = NULL;

  g_assert_no_error (error);
  bias = g_strdup_printf ("napkin_ld (&((napkin_bf16 *) ((char *) args.p[0] + %" G_GINT64_FORMAT "))[n * 1L]); "
                          "x = (x + y); }\n  x = napkin_gelu (x);", t->x.offset);
  g_assert_nonnull (strstr (t->module->source, bias));
  s = napkin_test_gemm_new ("name=s t=sm80 ab=bf16 c=bf16 b=2 m=64 n=64 k=64 a=k bl=k epi=silu_gate "
                            "tile=64x64x32 warp=32x32", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (s->module->source, "x = napkin_silu (x);\n  { const float y = napkin_ld (&((napkin_bf16 *)"));
  g_assert_nonnull (strstr (s->module->source, "[(long) b * 4096L + m * 64L + n * 1L]); x = (x * y); }"));
}

/* The staged epilogue (kernels/gemm-sm90.cu): rows of C that start 16-byte aligned are
 * known so at print time and the gate is read as 16-byte vectors (4 words a chunk, 4
 * pieces in flight); unaligned rows (N = 1001 bf16) are found per row and the gate read
 * column by column (8 words, 3 pieces); a bias varies along n only; split-K partials
 * with N % 4 != 0 are unaligned rows of fp32. */
static void
test_staged_epilogue (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTestGemm) al = napkin_test_gemm_new ("name=al t=sm90 ab=bf16 c=bf16 m=256 n=1024 k=128 a=k bl=k "
                                                       "epi=silu_gate tile=128x256x64", &error);
  g_autoptr(NapkinTestGemm) un = NULL;
  g_autoptr(NapkinTestGemm) bias = NULL;
  g_autoptr(NapkinTestGemm) sp = NULL;
  g_autoptr(NapkinTestGemm) gelu = NULL;
  NapkinArch *arch;   /* the registry's */
  const NapkinPlanKernel *gpk;
  g_autofree char *gate = NULL;

  g_assert_no_error (error);
  g_assert_nonnull (strstr (al->module->source, "#define NKP_DVEC 1\n"));
  g_assert_nonnull (strstr (al->module->source, "#define NKP_LDY 1\n"));
  gate = g_strdup_printf ("napkin_ldbits16 (&((napkin_bf16 *) ((char *) args.p[0] + %" G_GINT64_FORMAT "))[(long) b * 262144L + "
                          "m * 1024L + n * 1L], r + 0);", al->x.offset);
  g_assert_nonnull (strstr (al->module->source, gate));
  g_assert_nonnull (strstr (al->module->source, "napkin_unpack2 ((const napkin_bf16 *) 0, r[0 + h], &y[0][2 * h]);"));
  g_assert_nonnull (strstr (al->module->source, "x = (x * y[0][e]);"));
  g_assert_nonnull (strstr (al->module->source, "#define NKP_NW 4\n"));
  g_assert_nonnull (strstr (al->module->source, "#define NKP_RD 4\n"));

  un = napkin_test_gemm_new ("name=un t=sm90 ab=bf16 c=bf16 m=256 n=1001 k=128 a=k bl=k epi=silu_gate "
                             "tile=128x256x64", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (un->module->source, "#define NKP_DVEC 0\n"));
  g_assert_null (strstr (un->module->source, "napkin_ldbits16 (&"));
  g_assert_nonnull (strstr (un->module->source, " + m * 1001L + (n + e) * 1L], r + 0 + e);"));
  g_assert_nonnull (strstr (un->module->source, "#define NKP_NW 8\n"));
  g_assert_nonnull (strstr (un->module->source, "#define NKP_RD 3\n"));

  bias = napkin_test_gemm_new ("name=bias t=sm90 ab=bf16 c=bf16 m=256 n=1024 k=128 a=k bl=k epi=bias_gelu "
                               "tile=128x256x64", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (bias->module->source, "[n * 1L], r + 0);"));

  /* GELU alone needs no operand: in registers, then the TMA store; not where C's rows
   * are not 16 bytes apart */
  gelu = napkin_test_gemm_new ("name=gelu t=sm90 ab=bf16 c=bf16 m=256 n=1024 k=128 a=k bl=k epi=gelu "
                               "tile=128x256x64", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (gelu->module->source, "#define NKP_EPI 0\n"));
  g_assert_nonnull (strstr (gelu->module->source, "#define NKP_EPU 1\n"));
  g_assert_nonnull (strstr (gelu->module->source, "x = napkin_gelu (x);"));
  gemm_kernel (gelu, &gpk);
  /* the model: GELU's arithmetic only, at the rate measured in a cooperative tile's
   * registers (0.2 clocks an element; 0.62 in ping-pong tiles: docs/model.md §14), no
   * staging */
  arch = napkin_test_arch ("h200");
  g_assert_false (gpk->u.gemm.pingpong);
  g_assert_cmpfloat_with_epsilon (napkin_plan_gemm_staged_epilogue_s (arch, &gpk->u.gemm) * arch->clock_hz / (128 * 256),
                                  0.2, 1e-9);
  g_assert_cmpfloat (napkin_plan_gemm_staged_epilogue_s (arch, &gpk->u.gemm), >, 0);
  g_clear_pointer (&gelu, napkin_test_gemm_free);
  gelu = napkin_test_gemm_new ("name=gelu t=sm90 ab=bf16 c=bf16 m=256 n=1001 k=128 a=k bl=k epi=gelu "
                               "tile=128x256x64 ctma=0", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (gelu->module->source, "#define NKP_EPI 1\n"));
  g_assert_nonnull (strstr (gelu->module->source, "#define NKP_EPU 0\n"));

  sp = napkin_test_gemm_new ("name=sp t=sm90 ab=bf16 c=bf16 m=64 n=1001 k=4096 a=k bl=k split=4 tile=64x128x64 "
                             "cons=1", &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (sp->module->source, "#define NKP_EPI 2\n"));
  g_assert_nonnull (strstr (sp->module->source, "#define NKP_DVEC 0\n"));
  g_assert_nonnull (strstr (sp->module->source, "#define NKP_LDY 0\n"));
}

/* A repack and a reduction run the launch the plan states (napkin_plan_helper_launch);
 * a plan that says otherwise is refused, naming both. */
static void
test_helper_launch (void)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTestGemm) t = napkin_test_gemm_new ("name=h t=sm90 ab=bf16 c=bf16 m=64 n=4097 k=4096 a=k bl=n "
                                                      "split=4 tile=64x128x64 cons=1", &error);
  g_autoptr(GString) out = g_string_new (NULL);
  NapkinPrintCtx ctx = { t->plan, NULL, t->module, NULL, out };
  guint checked = 0;

  g_assert_no_error (error);
  for (guint i = 0; i < t->plan->kernels->len; i++)
    {
      NapkinPlanKernel *pk = g_ptr_array_index (t->plan->kernels, i);
      const NapkinCudaKernel *ck = g_ptr_array_index (t->module->kernels, i);
      gint64 grid = pk->grid;
      gboolean ok;

      if (pk->kind != NAPKIN_PLAN_REPACK && pk->kind != NAPKIN_PLAN_SPLIT_REDUCE)
        continue;
      g_assert_cmpint (ck->grid, ==, pk->grid);
      g_assert_cmpuint (ck->threads, ==, pk->threads);
      g_assert_cmpint (ck->smem_bytes, ==, pk->smem_bytes);
      if (pk->kind == NAPKIN_PLAN_REPACK)
        g_assert_cmpint (pk->grid, ==, MIN ((4096 * 4104 / 8 + 255) / 256, NAPKIN_PLAN_MAX_GRID));
      else
        g_assert_cmpint (pk->grid, ==, (64 * ((4097 + 3) / 4) + 255) / 256);
      pk->grid = grid + 1;
      ok = pk->kind == NAPKIN_PLAN_REPACK ? _napkin_print_repack (&ctx, pk, "bad", &error)
                                          : _napkin_print_split_reduce (&ctx, pk, "bad", &error);
      g_assert_false (ok);
      g_assert_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED);
      g_assert_nonnull (strstr (error->message, "the plan launches grid"));
      g_clear_error (&error);
      pk->grid = grid;
      checked++;
    }
  g_assert_cmpuint (checked, ==, 2);
}

/* Every source of the table through nvcc, one file per target, with ptxas's report:
 * each kernel compiles and spills nothing. */
static void
test_nvcc (void)
{
  g_autofree char *nvcc = g_find_program_in_path ("nvcc");
  guint n;
  const char **specs = napkin_test_gemm_table (&n);
  g_autofree char *dir = NULL;
  g_autoptr(GError) error = NULL;

  if (nvcc == NULL && g_file_test ("/usr/local/cuda/bin/nvcc", G_FILE_TEST_IS_EXECUTABLE))
    nvcc = g_strdup ("/usr/local/cuda/bin/nvcc");
  if (nvcc == NULL)
    {
      g_test_skip ("nvcc not found: the generated sources are not compiled");
      return;
    }
  dir = g_dir_make_tmp ("napkin-gemm-XXXXXX", &error);
  g_assert_no_error (error);
  for (int sm90 = 1; sm90 >= 0; sm90--)
    {
      g_autoptr(GString) all = g_string_new (NULL);
      g_autofree char *path = g_build_filename (dir, sm90 ? "gemm-sm90.cu" : "gemm-sm80.cu", NULL);
      g_autofree char *obj = g_build_filename (dir, "gemm.cubin", NULL);
      g_autofree char *out = NULL;
      g_autofree char *err = NULL;
      guint kernels = 0, reports = 0;
      int status;
      const char *arch = sm90 ? "-gencode=arch=compute_90a,code=sm_90a" : "-gencode=arch=compute_80,code=sm_80";
      const char *argv[] = { nvcc, "-cubin", arch, "-O3", "-std=c++17", "-Xptxas", "-v", "-o", obj, path, NULL };
      g_auto(GStrv) lines = NULL;

      for (guint i = 0; i < n; i++)
        {
          g_autoptr(NapkinTestGemm) t = napkin_test_gemm_new (specs[i], &error);

          g_assert_no_error (error);
          if (t->sm90 != sm90)
            continue;
          g_string_append (all, t->module->source);
          kernels += t->module->kernels->len;
        }
      g_assert_true (g_file_set_contents (path, all->str, -1, &error));
      g_assert_no_error (error);
      g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, &out, &err, &status, &error));
      g_assert_no_error (error);
      if (!g_spawn_check_wait_status (status, NULL))
        g_error ("nvcc %s failed:\n%s", arch, err);
      /* ptxas: "Compiling entry function 'NAME'" … "N bytes spill stores, N bytes spill loads" */
      lines = g_strsplit (err, "\n", -1);
      for (guint l = 0; lines[l] != NULL; l++)
        if (strstr (lines[l], "spill stores") != NULL)
          {
            reports++;
            if (strstr (lines[l], " 0 bytes spill stores, 0 bytes spill loads") == NULL)
              g_error ("%s: %s spills:\n%s", arch, lines[l], err);
          }
      g_assert_cmpuint (reports, ==, kernels);
      g_test_message ("%s: %u kernels compiled, none spills", arch, kernels);
      g_remove (obj);
      g_remove (path);
    }
  g_rmdir (dir);
}

int
main (int   argc,
      char *argv[])
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/gemm-print/facts", test_facts);
  g_test_add_func ("/codegen/gemm-print/refusals", test_refusals);
  g_test_add_func ("/codegen/gemm-print/unaligned", test_unaligned);
  g_test_add_func ("/codegen/gemm-print/epilogue", test_epilogue_text);
  g_test_add_func ("/codegen/gemm-print/staged-epilogue", test_staged_epilogue);
  g_test_add_func ("/codegen/gemm-print/helper-launch", test_helper_launch);
  g_test_add_func ("/codegen/gemm-print/nvcc", test_nvcc);
  return g_test_run ();
}
