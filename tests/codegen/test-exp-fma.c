/* SPDX-License-Identifier: GPL-3.0-or-later */
/* exp on the FMA units, generated (docs/plan.md, "Attention kernels"; docs/model.md,
 * "exp on FMA"): a softmax with "exp": "fma" takes the general wgmma attention kernel,
 * whose online softmax moves ⌊f · BKV/8⌋ blocks of 8 keys to napkin_exp2_poly; the
 * mma.sync kernel keeps the SFU; nvcc builds it for sm_90a without spills (where installed). */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen.h"
#include "napkin-file.h"

#define NVCC "/usr/local/cuda/bin/nvcc"

static NapkinDiagram *
example_with (const char *exp)
{
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), "flash-attention.napkin", NULL);
  g_autofree char *text = NULL;
  g_autoptr(GString) s = NULL;
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d;

  g_assert_true (g_file_get_contents (path, &text, NULL, NULL));
  s = g_string_new (text);
  if (exp != NULL)
    {
      g_autofree char *with = g_strdup_printf ("\"axis\": \"k\", %s", exp);

      g_assert_cmpuint (g_string_replace (s, "\"axis\": \"k\"", with, 1), ==, 1);
    }
  /* odd sizes: the general kernel's edge tiles */
  g_string_replace (s, "\"size\": 4096", "\"size\": 1000", 0);
  d = napkin_diagram_load_from_data (s->str, s->len, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  return d;
}

static NapkinCudaModule *
generate (NapkinDiagram *d,
          const char    *arch_id,
          NapkinPlan   **plan_out)
{
  g_autoptr(GError) error = NULL;
  NapkinArch *arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), arch_id, &error);
  NapkinIrProgram *prog;
  NapkinPlan *plan;
  NapkinCudaModule *m;

  g_assert_no_error (error);
  plan = napkin_plan_build (d, arch, NULL, &error);
  g_assert_no_error (error);
  prog = napkin_ir_lower (d, 0, &error);
  g_assert_no_error (error);
  m = napkin_codegen_cuda_planned (prog, plan, napkin_codegen_flags_for_arch (plan->target), "k_", &error);
  g_assert_no_error (error);
  *plan_out = plan;
  return m;
}

static void
test_generated (void)
{
  g_autoptr(NapkinDiagram) quarter = example_with ("\"exp\": \"fma\", \"exp_fraction\": 0.25");
  g_autoptr(NapkinDiagram) none = example_with ("\"exp\": \"fma\", \"exp_fraction\": 0.01");
  g_autoptr(NapkinDiagram) sfu = example_with (NULL);
  g_autoptr(NapkinPlan) pq = NULL, pn = NULL, ps = NULL, pa = NULL;
  g_autoptr(NapkinCudaModule) q = generate (quarter, "h100", &pq);
  g_autoptr(NapkinCudaModule) n = generate (none, "h100", &pn);
  g_autoptr(NapkinCudaModule) s = generate (sfu, "h100", &ps);
  g_autoptr(NapkinCudaModule) a = generate (quarter, "a100", &pa);
  const NapkinPlanKernel *k = napkin_plan_kernel_for (pq, 0, -1);

  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_false (k->u.att.legacy);
  g_assert_cmpfloat (k->u.att.exp_fma, ==, 0.25);
  g_assert_nonnull (strstr (k->note, "exponentials of 2 of 8 key blocks (25 %) as a polynomial on the FMA units"));
  g_assert_nonnull (strstr (q->source, "#define NKP_EXP_FMA 2.500000000e-01\n"));
  g_assert_nonnull (strstr (q->source, "napkin_exp2_poly (x)"));
  g_assert_nonnull (strstr (q->source, "A_EXP2 (s[4 * j] * scale - mx0, j)"));
  /* a fraction below one block moves none: the general kernel, every exp on the SFU */
  g_assert_nonnull (strstr (napkin_plan_kernel_for (pn, 0, -1)->note, "0 of 8 key blocks"));
  g_assert_nonnull (strstr (n->source, "#define NKP_EXP_FMA 1.000000000e-02\n"));
  /* without the choice: A_EXP_FMA 0 wherever the general kernel is printed */
  g_assert_nonnull (strstr (s->source, "#define NKP_EXP_FMA 0.000000000e+00\n"));
  /* mma.sync keeps the SFU */
  g_assert_cmpint (napkin_plan_kernel_for (pa, 0, -1)->path, ==, NAPKIN_PATH_MMA);
  g_assert_cmpfloat (napkin_plan_kernel_for (pa, 0, -1)->u.att.exp_fma, ==, 0);
  g_assert_null (strstr (a->source, "A_EXP2 ("));

  if (!g_file_test (NVCC, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_message ("no %s: the sm_90a build is not checked", NVCC);
      return;
    }
  {
    g_autoptr(GError) error = NULL;
    g_autofree char *dir = g_dir_make_tmp ("napkin-exp-fma-XXXXXX", &error);
    g_autofree char *src = g_build_filename (dir, "k.cu", NULL);
    g_autofree char *obj = g_build_filename (dir, "k.o", NULL);
    g_autofree char *err = NULL;
    const char *argv[] = { NVCC, "-gencode", "arch=compute_90a,code=sm_90a", "-Xptxas", "-v", "-c", "-o", obj, src, NULL };
    int status = 0;

    g_assert_no_error (error);
    g_file_set_contents (src, q->source, -1, &error);
    g_assert_no_error (error);
    g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
    g_assert_no_error (error);
    if (!g_spawn_check_wait_status (status, NULL))
      g_error ("nvcc sm_90a failed on the exp-on-FMA attention:\n%s", err);
    if (g_regex_match_simple ("[1-9][0-9]* bytes (spill|stack)", err, 0, 0))
      g_error ("the exp-on-FMA attention spills:\n%s", err);
    g_assert_null (strstr (err, "warning"));
    g_remove (obj);
    g_remove (src);
    g_rmdir (dir);
  }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/exp-fma/generated", test_generated);
  return g_test_run ();
}
