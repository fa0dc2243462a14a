/* SPDX-License-Identifier: GPL-3.0-or-later */
/* From a diagram to compiled code through the kernel plan (docs/plan.md): for every GEMM
 * shape of the table users meet (tests/common/napkin-test-diagrams.c), the CUDA generated
 * for h100 runs each planned kernel on wgmma and the one for a100 on mma.sync; every
 * source compiles with nvcc for its target (sm_90a, sm_80) where nvcc is installed; and
 * standalone exports build with the command written in their own first line. */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-plan.h"
#include "napkin-import.h"
#include "napkin-test-load.h"

static char *
find_nvcc (void)
{
  char *nvcc = g_find_program_in_path ("nvcc");

  if (nvcc == NULL && g_file_test ("/usr/local/cuda/bin/nvcc", G_FILE_TEST_IS_EXECUTABLE))
    nvcc = g_strdup ("/usr/local/cuda/bin/nvcc");
  return nvcc;
}

static NapkinCudaModule *
generate (NapkinDiagram *d,
          const char    *arch_id,
          const char    *prefix)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinPlan) plan = napkin_test_plan (d, arch_id);
  NapkinIrProgram *program;
  NapkinCudaModule *module;

  program = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
  g_assert_no_error (error);
  module = napkin_codegen_cuda_planned (program, plan, napkin_codegen_flags_for_arch (plan->target), prefix, &error);
  g_assert_no_error (error);
  return module;
}

static void
nvcc (const char *compiler,
      const char *target,
      const char *source,
      const char *dir,
      const char *name)
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  g_autofree char *obj = g_strconcat (path, ".cubin", NULL);
  g_autofree char *cu = g_strconcat (path, ".cu", NULL);
  g_autofree char *gencode = g_strdup_printf ("-gencode=arch=compute_%s,code=%s", target + 3, target);
  g_autofree char *err = NULL;
  g_autoptr(GError) error = NULL;
  const char *argv[] = { compiler, "-cubin", gencode, "-O3", "-std=c++17", "-o", obj, cu, NULL };
  int status = 0;

  g_assert_true (g_file_set_contents (cu, source, -1, NULL));
  g_assert_true (g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err,
                               &status, &error));
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("nvcc %s on %s failed:\n%s", target, name, err);
  g_remove (obj);
  g_remove (cu);
}

static void
test_table (void)
{
  g_autofree char *compiler = find_nvcc ();
  g_autofree char *dir = g_dir_make_tmp ("napkin-plan-codegen-XXXXXX", NULL);
  guint n;
  const NapkinTestGemmCase *cases = napkin_test_gemm_cases (&n);
  const char *archs[][2] = { { "h100", "sm_90a" }, { "a100", "sm_80" } };

  if (compiler == NULL)
    g_test_message ("nvcc not found: the sources are generated and checked, not compiled");
  for (guint i = 0; i < n; i++)
    for (guint a = 0; a < G_N_ELEMENTS (archs); a++)
      {
        g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&cases[i].c);
        g_autoptr(NapkinCudaModule) module = NULL;
        g_autofree char *name = g_strdup_printf ("case%u-%s", i, archs[a][0]);
        gboolean fp8 = g_str_has_prefix (cases[i].c.dtype, "fp8");

        if (fp8 && a == 1)
          continue;   /* no fp8 path on Ampere: the plan says generic (tests/plan) */
        module = generate (d, archs[a][0], NULL);
        g_test_message ("%s on %s", cases[i].name, archs[a][0]);
        g_assert_cmpstr (module->target, ==, archs[a][1]);
        for (guint k = 0; k < module->kernels->len; k++)
          {
            const NapkinCudaKernel *ck = g_ptr_array_index (module->kernels, k);

            /* no kernel falls back: each is its plan's */
            g_assert_cmpstr (ck->skeleton, !=, "generic");
            if (ck->note != NULL)
              g_assert_null (strstr (ck->note, "printer failed"));
          }
        g_assert_nonnull (strstr (module->source, a == 0 ? "wgmma.mma_async" : "mma.sync.aligned"));
        if (compiler != NULL)
          nvcc (compiler, archs[a][1], module->source, dir, name);
      }
  g_rmdir (dir);
}

/* A product batched over axes that do not lead its operands (attention's scores written
 * as a matmul over Q and K stored [b, s, h, d], as a backward diagram holds them): each
 * operand is copied with its batch leading (a repack whose source batch has two strides),
 * then one wgmma GEMM; the code compiles. */
static void
test_batch_not_leading (void)
{
  g_autofree char *compiler = find_nvcc ();
  g_autofree char *dir = g_dir_make_tmp ("napkin-plan-codegen-XXXXXX", NULL);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_import_einsum ("b=2 s=512 t=512 h=16 d=64\ndtype bf16\n"
                                                     "Q[b,s,h,d] K[b,t,h,d] -> S[b,h,s,t] = einsum(\"bshd,bthd->bhst\")\n",
                                                     "batch.einsum", &error);
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) module = NULL;
  guint copies = 0, gemms = 0;

  g_assert_no_error (error);
  plan = napkin_test_plan (d, "h200");
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);

      if (k->kind == NAPKIN_PLAN_REPACK)
        {
          /* 32 matrices 512 × 64: batch b (s·h·d apart) then h (d apart), rows h·d apart */
          g_assert_cmpint (k->u.repack.batch, ==, 32);
          g_assert_cmpint (k->u.repack.batch_inner, ==, 16);
          g_assert_cmpint (k->u.repack.src_bstride, ==, 512 * 16 * 64);
          g_assert_cmpint (k->u.repack.src_bstride_inner, ==, 64);
          g_assert_cmpint (k->u.repack.ld_src, ==, 16 * 64);
          g_assert_cmpint (k->u.repack.rows, ==, 512);
          g_assert_cmpint (k->u.repack.cols, ==, 64);
          copies++;
        }
      else if (k->kind == NAPKIN_PLAN_GEMM)
        {
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
          g_assert_cmpint (k->u.gemm.batch, ==, 32);
          g_assert_true (k->u.gemm.a_kmajor && k->u.gemm.b_kmajor);
          gemms++;
        }
    }
  g_assert_cmpuint (copies, ==, 2);
  g_assert_cmpuint (gemms, ==, 1);
  module = napkin_codegen_cuda_for_plan (plan, napkin_codegen_flags_for_arch (plan->target), NULL, &error);
  g_assert_no_error (error);
  g_assert_nonnull (strstr (module->source, "#define NKP_B2 16"));
  for (guint k = 0; k < module->kernels->len; k++)
    g_assert_cmpstr (((const NapkinCudaKernel *) g_ptr_array_index (module->kernels, k))->skeleton, !=, "generic");
  if (compiler != NULL)
    nvcc (compiler, "sm_90a", module->source, dir, "batch");
  g_rmdir (dir);
}

/* A gated pair from einsum text (docs/plan.md, "Gated GEMM"): SwiGLU and GeGLU with edge
 * tiles, rows of C not 16 bytes apart, or C stored by TMA; one wgmma kernel each on Hopper,
 * B2's tensor map after A's, B's and C's (C's where the TMA store takes it), the join
 * function the gate's map then the product; on an A100 the pair apart; every source
 * compiles. */
static void
test_gated (void)
{
  g_autofree char *compiler = find_nvcc ();
  g_autofree char *dir = g_dir_make_tmp ("napkin-plan-codegen-XXXXXX", NULL);
  const struct { const char *einsum, *act, *fn; gboolean tma_c; } cases[] = {
    { "s=3001 e=1024 f=1001\ndtype bf16\n", "silu", "napkin_silu", FALSE },
    { "s=512 e=768 f=3072\ndtype fp16\n", "gelu", "napkin_gelu", FALSE },   /* 64 × 96 tiles */
    { "s=2048 e=1024 f=4096\ndtype bf16\n", "silu", "napkin_silu", TRUE },
    /* weights [e, f]: N-major B and B2 (NAPKIN_GATED_N_MAJOR, set below for this one) */
    { "s=2048 e=1024 f=4096\ndtype fp16\n", "silu", "napkin_silu", TRUE },
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    for (guint hopper = 0; hopper < 2; hopper++)
      {
        g_autoptr(GError) error = NULL;
        gboolean n_major = c == G_N_ELEMENTS (cases) - 1;
        g_autofree char *text = n_major
          ? g_strdup_printf ("%sx[s,e] wg[e,f] -> g[s,f] = einsum(\"se,ef->sf\")\n"
                             "x wu[e,f] -> u[s,f] = einsum(\"se,ef->sf\")\n"
                             "g -> a = %s\na u -> h = mul\n", cases[c].einsum, cases[c].act)
          : g_strdup_printf ("%sx[s,e] wg[f,e] -> g[s,f] = einsum(\"se,fe->sf\")\n"
                             "x wu[f,e] -> u[s,f] = einsum(\"se,fe->sf\")\n"
                             "g -> a = %s\na u -> h = mul\n", cases[c].einsum, cases[c].act);
        g_autoptr(NapkinDiagram) d = napkin_import_einsum (text, "glu.einsum", &error);
        g_autoptr(NapkinPlan) plan = NULL;
        g_autoptr(NapkinCudaModule) module = NULL;
        g_autofree char *join = NULL;
        g_autofree char *name = g_strdup_printf ("glu%u-%s", c, hopper ? "h200" : "a100");

        g_assert_no_error (error);
        if (n_major)
          {
            /* apart (as one GEMM it ran no faster on an H200), one GEMM when asked */
            g_autoptr(NapkinPlan) apart = napkin_test_plan (d, "h200");

            g_assert_cmpuint (apart->kernels->len, ==, 3);
            g_setenv ("NAPKIN_GATED_N_MAJOR", "1", TRUE);
          }
        plan = napkin_test_plan (d, hopper ? "h200" : "a100");
        g_unsetenv ("NAPKIN_GATED_N_MAJOR");
        module = napkin_codegen_cuda_for_plan (plan, napkin_codegen_flags_for_arch (plan->target), NULL, &error);
        g_assert_no_error (error);
        if (!hopper)
          {
            g_assert_cmpuint (module->kernels->len, ==, 3);
            g_assert_null (strstr (module->source, "#define NKP_DUAL 1"));
          }
        else
          {
            const NapkinCudaKernel *ck;
            const NapkinPlanGemm *g = &((const NapkinPlanKernel *) g_ptr_array_index (plan->kernels, 0))->u.gemm;
            const NapkinCudaTensorMap *b, *b2;

            g_assert_cmpuint (module->kernels->len, ==, 1);
            ck = g_ptr_array_index (module->kernels, 0);
            g_assert_cmpstr (ck->skeleton, ==, "gemm-wgmma");
            g_assert_nonnull (strstr (module->source, "#define NKP_DUAL 1"));
            join = g_strdup_printf ("_join (float x, float g)\n{\n  g = %s (g);\n  return (g * x);\n}", cases[c].fn);
            g_assert_nonnull (strstr (module->source, join));
            /* A, B, C by TMA where its rows and the tile's columns allow, B2 */
            g_assert_cmpuint (ck->tensor_maps->len, ==, cases[c].tma_c ? 4 : 3);
            g_assert_cmpint (cases[c].tma_c, ==, g->c_tma && g->BN % (128 / napkin_dtype_bytes (g->c_dtype)) == 0);
            b = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, 1);
            b2 = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, ck->tensor_maps->len - 1);
            /* B2: B's boxes over the gate's own weight */
            g_assert_cmpuint (b2->box_inner, ==, b->box_inner);
            g_assert_cmpuint (b2->box_outer, ==, b->box_outer);
            g_assert_cmpint (b2->ld, ==, g->ldb2);
            g_assert_true (b2->slot != b->slot || b2->offset != b->offset);
            g_assert_cmpint (ck->grid, ==, ((g->M + g->BM - 1) / g->BM) * ((g->N + g->BN - 1) / g->BN));
          }
        for (guint k = 0; k < module->kernels->len; k++)
          g_assert_cmpstr (((const NapkinCudaKernel *) g_ptr_array_index (module->kernels, k))->skeleton, !=, "generic");
        if (compiler != NULL)
          nvcc (compiler, hopper ? "sm_90a" : "sm_80", module->source, dir, name);
      }
  g_rmdir (dir);
}

/* Clusters of two blocks along M sharing B by multicast (docs/plan.md, "Clusters"), where
 * NAPKIN_GEMM_CLUSTER=2 asks: B K-major and N-major, a gated pair, an odd number of tile
 * rows; the module launches whole clusters, B's tensor map copies half a tile's rows,
 * the standalone export launches in clusters, every source compiles; a tile whose B does
 * not split keeps one block. */
static void
test_clusters (void)
{
  g_autofree char *compiler = find_nvcc ();
  g_autofree char *dir = g_dir_make_tmp ("napkin-plan-clusters-XXXXXX", NULL);
  const char *cases[] = {
    "s=8192 e=4096 f=4096\ndtype bf16\nx[s,e] w[f,e] -> y[s,f] = einsum(\"se,fe->sf\")\n",
    "m=4096 k=4096 n=11008\ndtype bf16\na[m,k] b[k,n] -> c[m,n] = einsum(\"mk,kn->mn\")\n",
    "m=300 k=4096 n=8192\ndtype fp16\na[m,k] b[n,k] -> c[m,n] = einsum(\"mk,nk->mn\")\n",
    "s=2048 e=1024 f=4096\ndtype bf16\nx[s,e] wg[f,e] -> g[s,f] = einsum(\"se,fe->sf\")\n"
    "x wu[f,e] -> u[s,f] = einsum(\"se,fe->sf\")\ng -> a = silu\na u -> h = mul\n",
  };

  for (guint c = 0; c < G_N_ELEMENTS (cases); c++)
    {
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinDiagram) d = napkin_import_einsum (cases[c], "cluster.einsum", &error);
      g_autoptr(NapkinPlan) plain = NULL;
      g_autoptr(NapkinPlan) plan = NULL;
      g_autoptr(NapkinCudaModule) module = NULL;
      g_autofree char *name = g_strdup_printf ("cluster%u", c);
      const NapkinPlanKernel *k;
      const NapkinPlanGemm *g;
      const NapkinCudaKernel *ck;
      const NapkinCudaTensorMap *b;

      g_assert_no_error (error);
      plain = napkin_test_plan (d, "h200");
      g_assert_cmpuint (napkin_plan_gemm_cluster (&((const NapkinPlanKernel *) g_ptr_array_index (plain->kernels, 0))->u.gemm),
                        ==, 1);
      g_setenv ("NAPKIN_GEMM_CLUSTER", "2", TRUE);
      plan = napkin_test_plan (d, "h200");
      g_unsetenv ("NAPKIN_GEMM_CLUSTER");
      g_assert_cmpuint (plan->kernels->len, ==, 1);
      k = g_ptr_array_index (plan->kernels, 0);
      g = &k->u.gemm;
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GEMM);
      g_assert_cmpuint (napkin_plan_gemm_cluster (g), ==, 2);
      g_assert_nonnull (strstr (k->note, "clusters of 2"));
      /* pairs of tile rows: an odd count rounds up, the second block of the last pair pads */
      g_assert_cmpint (k->grid, ==, 2 * ((g->M + 2 * g->BM - 1) / (2 * g->BM)) * ((g->N + g->BN - 1) / g->BN));
      g_assert_cmpint (k->grid % 2, ==, 0);
      module = napkin_codegen_cuda_for_plan (plan, napkin_codegen_flags_for_arch (plan->target), NULL, &error);
      g_assert_no_error (error);
      ck = g_ptr_array_index (module->kernels, 0);
      g_assert_cmpuint (ck->cluster, ==, 2);
      g_assert_cmpint (ck->grid, ==, k->grid);
      g_assert_nonnull (strstr (module->source, "#define NKP_CM 2"));
      b = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, 1);
      g_assert_cmpuint (b->box_outer, ==, g->b_kmajor ? (guint) g->BN / 2 : 64);
      if (compiler != NULL)
        nvcc (compiler, "sm_90a", module->source, dir, name);
      if (c == 0)
        {
          g_autoptr(NapkinIrProgram) ir = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
          g_autoptr(NapkinCudaModule) ref = napkin_codegen_cuda (g_steal_pointer (&ir), NAPKIN_CODEGEN_GENERIC_ONLY,
                                                                 "napkin_ref_", &error);
          g_autofree char *text = napkin_codegen_standalone (module, ref, "case");

          g_assert_no_error (error);
          g_assert_nonnull (strstr (text, "cudaLaunchAttributeClusterDimension"));
          g_assert_nonnull (strstr (text, "cudaOccupancyMaxActiveClusters"));
        }
    }
  /* a tile whose B does not split into shares the copies can take */
  {
    NapkinPlanGemm g = { .M = 4096, .N = 8, .K = 64, .BM = 128, .BN = 8, .b_kmajor = TRUE };

    g_assert_nonnull (napkin_plan_gemm_cluster_refusal (&g, 2));
    g.BN = 16;
    g_assert_null (napkin_plan_gemm_cluster_refusal (&g, 2));
    g.b_kmajor = FALSE;
    g.BN = 64;
    g_assert_nonnull (napkin_plan_gemm_cluster_refusal (&g, 2));
    g.BN = 128;
    g_assert_null (napkin_plan_gemm_cluster_refusal (&g, 2));
    g.M = 100;
    g_assert_nonnull (napkin_plan_gemm_cluster_refusal (&g, 2));
  }
  g_rmdir (dir);
}

/* The exported .cu builds with the very command its header gives. */
static void
test_standalone_builds (void)
{
  g_autofree char *compiler = find_nvcc ();
  g_autofree char *dir = NULL;
  const NapkinTestGemmDiagram shapes[] = {
    { 1000, 4096, 4095, 0, "bf16" },
    { 512, 384, 256, 0, "fp16", NULL, FALSE, TRUE, FALSE, "bias-gelu", 128, 128, 64, 3 },
  };
  const char *archs[] = { "h100", "a100" };

  if (compiler == NULL)
    {
      g_test_skip ("nvcc not found: standalone exports are not built");
      return;
    }
  dir = g_dir_make_tmp ("napkin-standalone-XXXXXX", NULL);
  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    for (guint a = 0; a < G_N_ELEMENTS (archs); a++)
      {
        g_autoptr(NapkinDiagram) d = napkin_test_load_gemm (&shapes[i]);
        g_autoptr(NapkinCudaModule) module = generate (d, archs[a], NULL);
        g_autoptr(GError) error = NULL;
        g_autoptr(NapkinIrProgram) plain = napkin_ir_lower (d, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH, &error);
        g_autoptr(NapkinCudaModule) ref = napkin_codegen_cuda (g_steal_pointer (&plain), NAPKIN_CODEGEN_GENERIC_ONLY,
                                                               "napkin_ref_", &error);
        g_autofree char *text = napkin_codegen_standalone (module, ref, "case");
        g_autofree char *cu = g_strdup_printf ("%s/case%u-%s.cu", dir, i, archs[a]);
        g_autofree char *exe = g_strdup_printf ("%s/case%u-%s", dir, i, archs[a]);
        g_autofree char *line = NULL;
        g_autofree char *command = NULL;
        g_autofree char *err = NULL;
        g_auto(GStrv) argv = NULL;
        const char *build, *end;
        int status = 0;

        g_assert_no_error (error);
        /* "/ * TITLE: exported by Napkin. Build: nvcc … -o bench this.cu" */
        build = strstr (text, "Build: ");
        end = strchr (text, '\n');
        g_assert_nonnull (build);
        line = g_strndup (build + strlen ("Build: "), end - build - strlen ("Build: "));
        g_assert_true (g_str_has_prefix (line, "nvcc "));
        g_assert_nonnull (strstr (line, a == 0 ? "compute_90a" : "compute_80"));
        command = g_strdup (line);
        {
          GString *s = g_string_new (command);

          g_string_replace (s, "-o bench", "-o @EXE@", 1);
          g_string_replace (s, "this.cu", "@CU@", 1);
          g_string_replace (s, "nvcc", "@NVCC@", 1);
          g_free (command);
          command = g_string_free (s, FALSE);
        }
        g_assert_true (g_shell_parse_argv (command, NULL, &argv, NULL));
        for (guint j = 0; argv[j]; j++)
          {
            const char *v = g_str_equal (argv[j], "@EXE@") ? exe : g_str_equal (argv[j], "@CU@") ? cu
                            : g_str_equal (argv[j], "@NVCC@") ? compiler : NULL;

            if (v != NULL)
              {
                g_free (argv[j]);
                argv[j] = g_strdup (v);
              }
          }
        g_assert_true (g_file_set_contents (cu, text, -1, NULL));
        g_assert_true (g_spawn_sync (NULL, argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, &err, &status,
                                     &error));
        if (!g_spawn_check_wait_status (status, NULL))
          g_error ("the export's own build line failed (%s):\n%s", line, err);
        /* users build exports with -Werror too: nvcc prints nothing */
        if (err != NULL && strstr (err, "warning") != NULL)
          g_error ("the export built with warnings (%s):\n%s", line, err);
        g_assert_true (g_file_test (exe, G_FILE_TEST_IS_EXECUTABLE));
        g_remove (exe);
        g_remove (cu);
      }
  g_rmdir (dir);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/plan/table", test_table);
  g_test_add_func ("/codegen/plan/standalone-builds", test_standalone_builds);
  g_test_add_func ("/codegen/plan/batch-not-leading", test_batch_not_leading);
  g_test_add_func ("/codegen/plan/gated", test_gated);
  g_test_add_func ("/codegen/plan/clusters", test_clusters);
  return g_test_run ();
}
