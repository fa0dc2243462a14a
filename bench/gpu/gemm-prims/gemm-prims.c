/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Prints the CUDA of one GEMM problem for bench/gpu/gemm-prims/harness.cu: the plan's
 * kernels as the printers write them (tests/common/napkin-test-gemm.c plans them),
 * then the problem's layout, tensor maps and launches as the harness reads them.
 *   gemm-prims --list          the problems of the table, one spec a line
 *   gemm-prims SPEC            the source for SPEC ("name=… t=sm90 m=… n=… k=…") */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "napkin-test-gemm.h"

static int
dtype_code (NapkinDtype t)
{
  switch (t)
    {
    case NAPKIN_DTYPE_FP16: return 1;
    case NAPKIN_DTYPE_BF16: return 2;
    case NAPKIN_DTYPE_FP8_E4M3: return 3;
    case NAPKIN_DTYPE_FP8_E5M2: return 4;
    case NAPKIN_DTYPE_FP32:
    default:
      return 0;
    }
}

static void
print_operand (const char              *what,
               const NapkinTestOperand *o)
{
  printf ("#define NP_%s_OFF %" G_GINT64_FORMAT "L\n#define NP_%s_ROWS %" G_GINT64_FORMAT "L\n"
          "#define NP_%s_COLS %" G_GINT64_FORMAT "L\n#define NP_%s_LD %" G_GINT64_FORMAT "L\n"
          "#define NP_%s_BS %" G_GINT64_FORMAT "L\n",
          what, o->offset, what, o->rows, what, o->cols, what, o->ld, what, o->bstride);
}

int
main (int   argc,
      char *argv[])
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinTestGemm) t = NULL;
  guint n_maps = 0;

  if (argc == 2 && g_str_equal (argv[1], "--list"))
    {
      guint n;
      const char **specs = napkin_test_gemm_table (&n);

      for (guint i = 0; i < n; i++)
        printf ("%s\n", specs[i]);
      return 0;
    }
  if (argc != 2)
    {
      fprintf (stderr, "usage: %s --list | SPEC\n", argv[0]);
      return 2;
    }
  t = napkin_test_gemm_new (argv[1], &error);
  if (t == NULL)
    {
      fprintf (stderr, "%s: %s\n", argv[1], error->message);
      return 1;
    }

  fputs (t->module->source, stdout);
  printf ("\n/* ---- the problem as bench/gpu/gemm-prims/harness.cu reads it ---- */\n");
  printf ("#define NP_NAME \"%s\"\n#define NP_SM90 %d\n", t->name, t->sm90);
  printf ("#define NP_AB %d\n#define NP_C %d\n#define NP_X %d\n", dtype_code (t->ab_dtype),
          dtype_code (t->c_dtype), dtype_code (t->x_dtype));
  printf ("typedef %s np_ab_t;\ntypedef %s np_c_t;\ntypedef %s np_x_t;\n", _napkin_cuda_ctype (t->ab_dtype),
          _napkin_cuda_ctype (t->c_dtype), _napkin_cuda_ctype (t->x_dtype));
  printf ("#define NP_BATCH %" G_GINT64_FORMAT "L\n#define NP_M %" G_GINT64_FORMAT "L\n#define NP_N %" G_GINT64_FORMAT
          "L\n#define NP_K %" G_GINT64_FORMAT "L\n", t->batch, t->M, t->N, t->K);
  printf ("#define NP_A_KMAJOR %d\n#define NP_B_KMAJOR %d\n#define NP_SHARED_B %d\n#define NP_SPLIT %u\n"
          "#define NP_EPI %d\n", t->a_kmajor, t->b_kmajor, t->shared_b, t->split_k, (int) t->epi);
  print_operand ("A", &t->a);
  print_operand ("B", &t->b);
  print_operand ("C", &t->c);
  if (t->x.scratch >= 0)
    print_operand ("X", &t->x);
  printf ("#define NP_WS_BYTES %" G_GINT64_FORMAT "L\n", t->plan->scratch_bytes);

  /* tensor maps, every kernel's in launch order */
  printf ("static const NpMap np_maps[] = {\n");
  for (guint k = 0; k < t->module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (t->module->kernels, k);

      for (guint m = 0; ck->tensor_maps != NULL && m < ck->tensor_maps->len; m++, n_maps++)
        {
          const NapkinCudaTensorMap *map = &g_array_index (ck->tensor_maps, NapkinCudaTensorMap, m);

          printf ("  { %d, %" G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL, %u, %u, %u, %" G_GINT64_FORMAT "ULL, %"
                  G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL, %" G_GINT64_FORMAT "ULL },\n",
                  dtype_code (map->dtype), map->inner, map->outer, map->box_inner, map->box_outer, map->swizzle,
                  map->ld > 0 ? map->ld : map->inner, MAX (map->batch, 1), map->batch_stride, map->offset);
        }
    }
  printf ("  { 0 } };\n#define NP_N_MAPS %u\n", n_maps);

  printf ("static void\nnp_prepare (void)\n{\n");
  for (guint k = 0; k < t->module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (t->module->kernels, k);

      if (ck->dynamic_smem > 0)
        printf ("  NP_CHECK (cudaFuncSetAttribute (%s, cudaFuncAttributeMaxDynamicSharedMemorySize, %" G_GINT64_FORMAT
                "));\n", ck->name, ck->dynamic_smem);
    }
  printf ("}\n\n#define NP_N_KERNELS %u\n", t->module->kernels->len);
  /* each kernel's skeleton and the device-memory bytes it moves (helpers only: a
   * repack reads its source and writes the padded copy, a reduction reads the partials
   * and writes C), for its own time and bandwidth */
  printf ("static const char *np_kernel_names[] = {");
  for (guint k = 0; k < t->module->kernels->len; k++)
    printf ("%s\"%s\"", k ? ", " : " ", ((NapkinCudaKernel *) g_ptr_array_index (t->module->kernels, k))->skeleton);
  printf (" };\nstatic const double np_kernel_bytes[] = {");
  for (guint k = 0; k < t->plan->kernels->len; k++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (t->plan->kernels, k);
      double bytes = 0;

      if (pk->kind == NAPKIN_PLAN_REPACK)
        {
          const NapkinPlanRepack *r = &pk->u.repack;
          const double es = napkin_dtype_bytes (r->dtype);

          bytes = r->batch * (r->rows * r->cols + (r->transpose ? r->cols : r->rows) * r->ld_dst) * es;
        }
      else if (pk->kind == NAPKIN_PLAN_SPLIT_REDUCE)
        {
          const NapkinPlanGemm *g = &pk->u.gemm;

          bytes = (double) g->batch * g->M * g->N * (4.0 * g->split_k + napkin_dtype_bytes (g->c_dtype));
        }
      printf ("%s%.0f", k ? ", " : " ", bytes);
    }
  printf (" };\n");

  printf ("\nstatic const char *np_kernels = \"");
  for (guint k = 0; k < t->module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (t->module->kernels, k);

      printf ("%s%s", k ? " + " : "", ck->skeleton);
    }
  /* np_launch_one (k, …): kernel k alone; np_launch: all of them in order */
  printf ("\";\n\nstatic void\nnp_launch_one (int k, const NapkinArgs &a, const NapkinTensorMap *m, int sms, "
          "cudaStream_t s)\n{\n  (void) m; (void) sms;\n  switch (k)\n    {\n");
  n_maps = 0;
  for (guint k = 0; k < t->module->kernels->len; k++)
    {
      const NapkinCudaKernel *ck = g_ptr_array_index (t->module->kernels, k);
      g_autoptr(GString) args = g_string_new ("a");

      for (guint m = 0; ck->tensor_maps != NULL && m < ck->tensor_maps->len; m++)
        g_string_append_printf (args, ", m[%u]", n_maps++);
      if (ck->persistent)
        printf ("    case %u: %s<<<(int) NAPKIN_MIN ((long) sms, %" G_GINT64_FORMAT "L), %u, %" G_GINT64_FORMAT
                ", s>>> (%s); break;\n", k, ck->name, ck->grid, ck->threads, ck->dynamic_smem, args->str);
      else
        printf ("    case %u: %s<<<%" G_GINT64_FORMAT ", %u, %" G_GINT64_FORMAT ", s>>> (%s); break;\n", k, ck->name,
                ck->grid, ck->threads, ck->dynamic_smem, args->str);
    }
  printf ("    default: break;\n    }\n}\n\n"
          "static void\nnp_launch (const NapkinArgs &a, const NapkinTensorMap *m, int sms, cudaStream_t s)\n{\n"
          "  for (int k = 0; k < NP_N_KERNELS; k++)\n    np_launch_one (k, a, m, sms, s);\n}\n");
  return 0;
}
