/* SPDX-License-Identifier: GPL-3.0-or-later */
/* exp on the FMA units, generated (docs/plan.md, "Attention kernels"; docs/model.md,
 * "exp on FMA"): a softmax with "exp": "fma" takes the general wgmma attention kernel,
 * whose online softmax moves ⌊f · BKV/8⌋ blocks of 8 keys to napkin_exp2_poly; the
 * mma.sync kernel keeps the SFU; nvcc builds it for sm_90a without spills (where installed). */
#include "config.h"

#include <math.h>
#include <stdlib.h>
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
  g_assert_nonnull (strstr (k->note, "exponentials of 4 of 16 key blocks (25 %) as a polynomial on the FMA units"));
  g_assert_nonnull (strstr (q->source, "#define NKP_EXP_FMA 2.500000000e-01\n"));
  g_assert_nonnull (strstr (q->source, "napkin_exp2_poly (x)"));
  g_assert_nonnull (strstr (q->source, "A_EXP2 (s[4 * j] * scale - mx0, j)"));
  /* a fraction below one block moves none: the general kernel, every exp on the SFU */
  g_assert_nonnull (strstr (napkin_plan_kernel_for (pn, 0, -1)->note, "0 of 16 key blocks"));
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

/* The polynomial as printed into the kernel: its constants read from the generated
 * source and its fp32 steps replayed here (each addition rounded to fp32, fmaf for the
 * FMAs, the shift into the exponent field). No conversion instruction (they would run at
 * the SFU's quarter rate, docs/model.md §7f), at most 7.5e-5 relative error over the
 * softmax's range, exactly 0 at and below −127 (masked keys: a row that saw none of its
 * keys still sums zeros) and exact at the integers. */
static float
bits_float (guint32 b)
{
  float f;

  memcpy (&f, &b, sizeof f);
  return f;
}

static guint32
float_bits (float f)
{
  guint32 b;

  memcpy (&b, &f, sizeof b);
  return b;
}

static void
test_polynomial (void)
{
  g_autoptr(NapkinDiagram) quarter = example_with ("\"exp\": \"fma\", \"exp_fraction\": 0.25");
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinCudaModule) m = generate (quarter, "h100", &plan);
  const char *start = strstr (m->source, "napkin_exp2_poly (float x)\n{");
  const char *end = start ? strstr (start, "\n}\n") : NULL;
  g_autofree char *body = NULL;
  g_autoptr(GRegex) num = g_regex_new ("-?[0-9]+\\.[0-9]+f", 0, 0, NULL);
  g_autoptr(GMatchInfo) info = NULL;
  double c[8];
  guint n = 0;
  double worst = 0;

  g_assert_nonnull (end);
  body = g_strndup (start, end - start);
  for (const char *bad = "__float2int\0__int2float\0cvt\0rintf\0floorf\0"; *bad; bad += strlen (bad) + 1)
    g_assert_null (strstr (body, bad));
  g_assert_null (strstr (body, "?"));   /* no compare and select */
  /* magic, clamp, then c3 c2 c1 c0 in the Horner chain */
  g_regex_match (num, body, 0, &info);
  while (g_match_info_matches (info) && n < G_N_ELEMENTS (c))
    {
      g_autofree char *w = g_match_info_fetch (info, 0);

      c[n++] = g_ascii_strtod (w, NULL);
      g_match_info_next (info, NULL);
    }
  g_assert_cmpuint (n, ==, 6);
  g_assert_cmpfloat (c[0], ==, 12583039.0);   /* 1.5 · 2^23 + 127 */
  g_assert_cmpfloat (c[1], ==, -127.0);
  for (int i = -127 * 64 - 40; i <= 0; i++)
    {
      volatile float x = i / 64.0f + (i % 3) * 1e-3f;
      volatile float xc = fmaxf (x, (float) c[1]);
      volatile float t = xc + (float) c[0];
      volatile float back = t - (float) c[0];
      volatile float f = xc - back;
      float p = fmaf (fmaf (fmaf ((float) c[2], f, (float) c[3]), f, (float) c[4]), f, (float) c[5]);
      float y = p * bits_float (float_bits (t) << 23);

      if (x <= -127.0f)
        g_assert_cmpfloat (y, ==, 0.0f);
      else if (x >= -126.0f)
        worst = MAX (worst, fabs (y / exp2 (x) - 1));
    }
  g_assert_cmpfloat (worst, <, 7.6e-5);
  g_assert_cmpfloat (worst, >, 1e-5);   /* a degree-3 fit, not an exact exp */
  g_test_message ("napkin_exp2_poly: max relative error %.2e on [-126, 0]", worst);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/exp-fma/generated", test_generated);
  g_test_add_func ("/codegen/exp-fma/polynomial", test_polynomial);
  return g_test_run ();
}
