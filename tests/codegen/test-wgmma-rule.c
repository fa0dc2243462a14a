/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The performance model and the code generator agree on which relabelings take the
 * Hopper wgmma skeletons: napkin_model_region_uses_wgmma (src/perf) against the skeleton
 * napkin_codegen_cuda picks for sm_90a, over a grid of GEMM and attention tiles. */
#include "config.h"

#include <string.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-model.h"
#include "napkin-tune.h"
#include "napkin-validate.h"

static NapkinDiagram *
load (const char *name)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), name, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d = napkin_diagram_load_from_file (path, NAPKIN_LOAD_VALIDATE, &error);

  g_assert_no_error (error);
  return d;
}

/* The skeleton of the region's kernel, or NULL when nothing lowers. */
static char *
skeleton_for (NapkinDiagram *d)
{
  g_autoptr(GError) error = NULL;
  NapkinIrProgram *program = napkin_ir_lower (d, NAPKIN_LOWER_DEFAULT, &error);
  NapkinCudaModule *module;
  char *skeleton;

  if (program == NULL)
    return NULL;
  module = napkin_codegen_cuda (program, NAPKIN_CODEGEN_SM90A, NULL, &error);
  if (module == NULL || module->kernels->len == 0)
    {
      napkin_cuda_module_free (module);
      return NULL;
    }
  skeleton = g_strdup (((NapkinCudaKernel *) g_ptr_array_index (module->kernels, 0))->skeleton);
  napkin_cuda_module_free (module);
  return skeleton;
}

static guint
check (const char  *file,
       const char **specs,
       guint        n_specs,
       guint       *agree)
{
  g_autoptr(NapkinDiagram) d = load (file);
  g_autoptr(GError) error = NULL;
  NapkinArch *h100 = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), "h100", &error);
  g_autofree char *skeleton = NULL;
  gboolean model, codegen;

  g_assert_no_error (error);
  for (guint i = 0; i < n_specs; i++)
    if (!(strchr (specs[i], '.') ? napkin_tune_apply_spec (d, specs[i], NULL)
                                 : napkin_diagram_override_axis (d, specs[i], NULL)))
      return 0;
  if (!napkin_diagram_validate (d, NULL))
    return 0;
  skeleton = skeleton_for (d);
  if (skeleton == NULL)
    return 0;
  model = napkin_model_region_uses_wgmma (h100, d, 0);
  codegen = strstr (skeleton, "wgmma") != NULL || strstr (skeleton, "sm90") != NULL;
  if (model != codegen)
    {
      g_autoptr(GString) joined = g_string_new (NULL);

      for (guint i = 0; i < n_specs; i++)
        g_string_append_printf (joined, " %s", specs[i]);
      g_test_message ("%s%s: model says %s, codegen chose %s", file, joined->str, model ? "wgmma" : "mma.sync", skeleton);
    }
  *agree += model == codegen;
  return 1;
}

static void
test_gemm (void)
{
  const int bm[] = { 32, 64, 128, 256 }, bn[] = { 32, 64, 128, 256 }, bk[] = { 32, 64, 128 }, st[] = { 2, 3, 5 };
  guint n = 0, agree = 0;

  for (guint i = 0; i < G_N_ELEMENTS (bm); i++)
    for (guint j = 0; j < G_N_ELEMENTS (bn); j++)
      for (guint k = 0; k < G_N_ELEMENTS (bk); k++)
        for (guint s = 0; s < G_N_ELEMENTS (st); s++)
          {
            g_autofree char *a = g_strdup_printf ("block.m=%d", bm[i]);
            g_autofree char *b = g_strdup_printf ("block.n=%d", bn[j]);
            g_autofree char *c = g_strdup_printf ("block.k=%d", bk[k]);
            g_autofree char *e = g_strdup_printf ("block.stages=%d", st[s]);
            const char *specs[] = { "m=1024", "n=1024", "k=1024", a, b, c, e };

            n += check ("matmul-tiled.napkin", specs, G_N_ELEMENTS (specs), &agree);
          }
  g_test_message ("GEMM: %u of %u relabelings agree", agree, n);
  g_assert_cmpuint (n, >, 100);
  g_assert_cmpuint (agree, ==, n);
}

static void
test_attention (void)
{
  const int q[] = { 32, 64, 128, 192, 256 }, k[] = { 16, 64, 128, 176, 256 }, d[] = { 64, 128 }, st[] = { 2, 3, 4 };
  guint n = 0, agree = 0;

  for (guint i = 0; i < G_N_ELEMENTS (q); i++)
    for (guint j = 0; j < G_N_ELEMENTS (k); j++)
      for (guint l = 0; l < G_N_ELEMENTS (d); l++)
        for (guint s = 0; s < G_N_ELEMENTS (st); s++)
          {
            g_autofree char *a = g_strdup_printf ("block.q=%d", q[i]);
            g_autofree char *b = g_strdup_printf ("block.k=%d", k[j]);
            g_autofree char *dd = g_strdup_printf ("d=%d", d[l]);
            g_autofree char *e = g_strdup_printf ("block.stages=%d", st[s]);
            /* 8448 = 2⁸ · 3 · 11: every q and key tile above divides it */
            const char *specs[] = { "b=1", "h=2", "q=8448", "k=8448", dd, a, b, e };

            n += check ("flash-attention.napkin", specs, G_N_ELEMENTS (specs), &agree);
          }
  g_test_message ("attention: %u of %u relabelings agree", agree, n);
  g_assert_cmpuint (n, >, 100);
  g_assert_cmpuint (agree, ==, n);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/wgmma-rule/gemm", test_gemm);
  g_test_add_func ("/codegen/wgmma-rule/attention", test_attention);
  return g_test_run ();
}
