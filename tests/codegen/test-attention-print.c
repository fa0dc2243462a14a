/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The attention printer (docs/plan.md, "Attention kernels"): the plan's attention kernels
 * printed as kernels/attn-sm90.cu (sm_90a: every shape, today's aligned ones included),
 * attn-sm80.cu (sm_80), the split-KV combine and the flash-mma skeleton of today's shapes
 * on sm_80, with their launch facts and tensor maps; every
 * source through nvcc for sm_90a and sm_80 where nvcc is installed (ptxas: no spills, no
 * serialised wgmma, setmaxnreg honoured). */
#include "config.h"

#include <string.h>

#include <glib/gstdio.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-test-load.h"

#define NVCC "/usr/local/cuda/bin/nvcc"

typedef struct
{
  const char         *name;
  NapkinTestAttention c;
  NapkinAttnMask      mask;
  gint64              offset, left, right;
  const char         *skeleton;   /* the attention kernel on sm_90a */
} Case;

static const Case cases[] = {
  { "today", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 3 }, 0, 0, 0, 0, "attn-sm90" },
  { "n4000", { 4, 16, 0, 4000, 4000, 128, "fp16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "n1000", { 16, 16, 0, 1000, 1000, 128, "bf16", NULL, "fp32", 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d96", { 4, 16, 0, 4096, 4096, 96, "fp16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d80", { 4, 16, 0, 4096, 4096, 80, "bf16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d64 q192", { 4, 16, 0, 4096, 4096, 64, "fp16", NULL, NULL, 192, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d192", { 2, 16, 0, 8192, 8192, 192, "bf16", NULL, NULL, 128, 96, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d256", { 2, 16, 0, 8192, 8192, 256, "bf16", NULL, NULL, 128, 64, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d40", { 2, 8, 0, 1000, 1000, 40, "fp16", NULL, NULL, 128, 64, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d32", { 4, 16, 0, 4096, 4096, 32, "fp16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "d112", { 4, 16, 0, 2047, 2047, 112, "fp16", NULL, NULL, 128, 96, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "bshd", { 4, 16, 0, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, TRUE }, 0, 0, 0, 0, "attn-sm90" },
  { "gqa", { 1, 32, 8, 4096, 4096, 128, "bf16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "gqa bshd", { 2, 32, 8, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, TRUE }, 0, 0, 0, 0, "attn-sm90" },
  { "mqa", { 2, 16, 1, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "cross", { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 64, 2 }, 0, 0, 0, 0, "attn-sm90" },
  /* persistent (all the keys one chunk): a window, GQA fp8 Q·Kᵀ, d 256 with one key */
  { "cross window", { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 64, 2 }, NAPKIN_ATTN_MASK_WINDOW, 0, 1200, 29,
    "attn-sm90" },
  { "cross gqa fp8", { 1, 64, 8, 8000, 77, 128, "fp8-e4m3", "fp16", "fp16", 16, 77, 3, 8 }, 0, 0, 0, 0, "attn-sm90" },
  { "cross d256", { 3, 16, 0, 5000, 1, 256, "bf16", NULL, NULL, 64, 1, 2 }, 0, 0, 0, 0, "attn-sm90" },
  /* fp8 O (the diagram's type for it): stored as e4m3 */
  { "fp8 O", { 2, 8, 0, 2048, 2048, 128, "fp8-e4m3", "fp8-e4m3", "fp8-e4m3", 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "decode q1", { 1, 32, 8, 1, 32768, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, 0, 0, 0, 0, "attn-sm90" },
  { "decode q8", { 4, 32, 8, 8, 8192, 128, "fp16", NULL, NULL, 0, 128, 2, 4 }, 0, 0, 0, 0, "attn-sm90" },
  { "decode mqa", { 2, 16, 1, 1, 16384, 128, "fp16", NULL, NULL, 0, 128, 2, 16 }, 0, 0, 0, 0, "attn-sm90" },
  { "decode odd", { 2, 32, 8, 1, 100000, 128, "bf16", NULL, NULL, 0, 64, 4, 4 }, 0, 0, 0, 0, "attn-sm90" },
  { "causal", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 2 }, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0,
    "attn-sm90" },
  { "causal gqa prefill", { 1, 32, 8, 1024, 4096, 128, "bf16", NULL, NULL, 128, 128, 2 }, NAPKIN_ATTN_MASK_CAUSAL,
    3072, -1, 0, "attn-sm90" },
  { "window", { 2, 16, 0, 4096, 4096, 128, "bf16", NULL, NULL, 128, 128, 2 }, NAPKIN_ATTN_MASK_WINDOW, 0, 1024, 0,
    "attn-sm90" },
  { "causal decode", { 1, 32, 8, 4, 16384, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, NAPKIN_ATTN_MASK_CAUSAL, 16380,
    -1, 0, "attn-sm90" },
  { "fp8", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp8-e4m3", "fp16", 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "fp8 qk", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp16", "fp16", 128, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "fp8 d64 odd", { 4, 16, 0, 2000, 2000, 64, "fp8-e4m3", "fp8-e4m3", "bf16", 128, 128, 2 }, 0, 0, 0, 0,
    "attn-sm90" },
  { "fp8 causal", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp8-e4m3", "fp16", 128, 128, 2 }, NAPKIN_ATTN_MASK_CAUSAL,
    0, -1, 0, "attn-sm90" },
  { "d64 k64 3 stages", { 4, 16, 0, 3000, 3000, 64, "fp16", NULL, NULL, 128, 64, 3 }, 0, 0, 0, 0, "attn-sm90" },
  { "q tile 64", { 8, 16, 0, 500, 500, 128, "fp16", NULL, NULL, 64, 128, 2 }, 0, 0, 0, 0, "attn-sm90" },
  { "today d64", { 8, 16, 0, 512, 512, 64, "bf16", NULL, NULL, 128, 64, 3 }, 0, 0, 0, 0, "attn-sm90" },
  /* score operands (docs/plan.md, "Score operands") */
  { "t5 bias", { 4, 16, 0, 1024, 1024, 64, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", NULL, NULL, TRUE, 1.0 },
    0, 0, 0, 0, "attn-sm90" },
  { "padding bias", { 8, 16, 0, 1000, 1000, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "keep q k", { 2, 16, 0, 2048, 2048, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, NULL, NULL, "q,k" }, 0, 0, 0,
    0, "attn-sm90" },
  { "keep b q k causal", { 2, 16, 0, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, NULL, NULL, "b,q,k" },
    NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, "attn-sm90" },
  { "bias and keep", { 2, 16, 0, 2048, 2048, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", NULL, "b,k" }, 0,
    0, 0, 0, "attn-sm90" },
  { "bias 1500 keys", { 2, 8, 0, 1500, 1500, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,h,q,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "bias 77 keys", { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 64, 2, 0, FALSE, "q,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "gqa bias bshd", { 2, 32, 8, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, TRUE, "b,h,g,q,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "decode keep", { 8, 32, 8, 1, 4096, 128, "bf16", NULL, NULL, 0, 128, 2, 4, FALSE, NULL, NULL, "b,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "fp8 bias", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp16", "fp16", 128, 128, 2, 0, FALSE, "h,q,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "d256 bias", { 2, 16, 0, 2048, 2048, 256, "bf16", NULL, NULL, 128, 64, 2, 0, FALSE, "b,h,q,k" }, 0, 0, 0, 0,
    "attn-sm90" },
  { "fp32 bias", { 2, 16, 0, 1024, 1024, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", "fp32", "b,k" }, 0,
    0, 0, 0, "attn-sm90" },
};

/* The case's module for `arch_id` (its plan masked as the case says), kernels named
 * PREFIX…; NULL with *plan_out generic when the plan has no kernel for it. */
static NapkinCudaModule *
generate (const Case  *c,
          const char  *arch_id,
          const char  *prefix,
          NapkinPlan **plan_out)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c->c);
  NapkinPlan *plan = napkin_test_plan (d, arch_id);
  NapkinPlanKernel *k;
  NapkinCudaModule *m;

  k = (NapkinPlanKernel *) napkin_plan_kernel_for (plan, 0, -1);
  if (c->mask != NAPKIN_ATTN_MASK_NONE && k->kind == NAPKIN_PLAN_ATTENTION)
    {
      g_assert_true (napkin_plan_attention_set_mask (plan, k, c->mask, c->offset, c->left, c->right, &error));
      g_assert_no_error (error);
    }
  m = napkin_codegen_cuda_for_plan (plan, 0, prefix, &error);
  g_assert_no_error (error);
  *plan_out = plan;
  return m;
}

static const NapkinCudaKernel *
kernel_named (const NapkinCudaModule *m,
              const char             *skeleton)
{
  for (guint i = 0; i < m->kernels->len; i++)
    {
      const NapkinCudaKernel *k = g_ptr_array_index (m->kernels, i);

      if (g_str_equal (k->skeleton, skeleton))
        return k;
    }
  return NULL;
}

/* nvcc's ptxas report on one source holding many modules: it builds, and no kernel spills
 * or serialises its wgmma. */
static void
check_nvcc (const char *source,
            const char *gencode)
{
  g_autoptr(GError) error = NULL;
  g_autofree char *dir = g_dir_make_tmp ("napkin-attention-XXXXXX", &error);
  g_autofree char *src = g_build_filename (dir, "k.cu", NULL);
  g_autofree char *obj = g_build_filename (dir, "k.o", NULL);
  g_autofree char *err = NULL;
  const char *argv[] = { NVCC, gencode, "-Xptxas", "-v", "-c", "-o", obj, src, NULL };
  int status = 0;

  g_assert_no_error (error);
  if (g_getenv ("NAPKIN_ATTN_DUMP"))
    g_file_set_contents (g_getenv ("NAPKIN_ATTN_DUMP"), source, -1, NULL);
  g_file_set_contents (src, source, -1, &error);
  g_assert_no_error (error);
  g_spawn_sync (NULL, (char **) argv, NULL, G_SPAWN_DEFAULT, NULL, NULL, NULL, &err, &status, &error);
  g_assert_no_error (error);
  if (!g_spawn_check_wait_status (status, NULL))
    g_error ("nvcc %s failed on the attention modules:\n%s", gencode, err);
  g_test_message ("%s", err);
  g_assert_nonnull (strstr (err, "bytes spill stores"));
  if (g_regex_match_simple ("[1-9][0-9]* bytes (spill|stack)", err, 0, 0))
    g_error ("a kernel spills (%s):\n%s", gencode, err);
  g_assert_null (strstr (err, "C7508"));
  g_assert_null (strstr (err, "C7514"));
  g_assert_null (strstr (err, "serialized"));
  g_assert_null (strstr (err, "warning"));
  g_remove (obj);
  g_remove (src);
  g_rmdir (dir);
}

static void
test_print (void)
{
  g_autoptr(GString) all90 = g_string_new (NULL);
  g_autoptr(GString) all80 = g_string_new (NULL);

  g_assert_cmpuint (G_N_ELEMENTS (cases), >=, 30);
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const Case *c = &cases[i];
      g_autofree char *prefix = g_strdup_printf ("c%u_", i);
      g_autoptr(NapkinPlan) hp = NULL;
      g_autoptr(NapkinPlan) ap = NULL;
      g_autoptr(NapkinCudaModule) h = generate (c, "h100", prefix, &hp);
      g_autoptr(NapkinCudaModule) a = generate (c, "a100", prefix, &ap);
      const NapkinPlanKernel *pk = napkin_plan_kernel_for (hp, 0, -1);
      const NapkinPlanAttention *att = &pk->u.att;
      const NapkinCudaKernel *k = kernel_named (h, c->skeleton);

      g_test_message ("%s: %u kernels, %s", c->name, h->kernels->len, k ? k->note : "(none)");
      g_assert_nonnull (k);
      g_assert_false (att->legacy);   /* flash-wgmma is retired: the general kernel on wgmma */
      g_assert_cmpint (k->grid, ==, pk->grid);
      g_assert_cmpuint (k->threads, ==, pk->threads);
      g_assert_cmpint (k->dynamic_smem, ==, pk->smem_bytes);
      g_assert_null (strstr (h->source, "@"));
      g_assert_null (kernel_named (h, "generic"));
      if (g_str_equal (c->skeleton, "attn-sm90"))
        {
          const NapkinCudaTensorMap *km, *vm;

          g_assert_nonnull (k->tensor_maps);
          g_assert_cmpuint (k->tensor_maps->len, ==, 2);
          km = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 0);
          vm = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 1);
          g_assert_cmpint (km->inner, ==, att->D);
          g_assert_cmpint (km->outer, ==, att->kv_rows);
          g_assert_cmpuint (km->box_outer, ==, att->BKV);
          g_assert_cmpuint (km->box_inner * napkin_dtype_bytes (att->dtype), ==, 128);
          g_assert_cmpuint (km->swizzle, ==, 128);
          g_assert_cmpint (km->batch, ==, att->kv_planes);
          if (att->v_dtype == NAPKIN_DTYPE_FP8_E4M3)
            {
              /* V as stored (K's view, boxes of 128 d-bytes × BKV keys), transposed by the
               * kernel's producer: no pass before */
              g_assert_true (att->vt_in_kernel);
              g_assert_cmpint (vm->inner, ==, att->D);
              g_assert_cmpint (vm->outer, ==, att->kv_rows);
              g_assert_cmpuint (vm->box_outer, ==, att->BKV);
              g_assert_cmpuint (vm->box_inner, ==, 128);
              g_assert_cmpint (vm->batch_stride, ==, km->batch_stride);
              g_assert_null (kernel_named (h, "repack"));
              g_assert_nonnull (strstr (h->source, "#define NKP_VT_IN 1\n"));
              g_assert_nonnull (strstr (h->source, "k32.f32.e4m3.e4m3"));
              g_assert_nonnull (strstr (h->source, "m64n128k32.f32.e4m3.e4m3"));
            }
          else
            {
              g_assert_cmpint (vm->inner, ==, att->D);
              g_assert_cmpint (vm->batch_stride, ==, km->batch_stride);
            }
          if (att->split_kv > 1)
            {
              const NapkinCudaKernel *m = kernel_named (h, "attn-combine");

              g_assert_nonnull (m);
              g_assert_true (m == g_ptr_array_index (h->kernels, h->kernels->len - 1));
              g_assert_cmpint (h->workspace_bytes, >=, hp->scratch_bytes);
            }
          if (c->mask != NAPKIN_ATTN_MASK_NONE)
            g_assert_nonnull (strstr (h->source, "#define NKP_REVERSE 1\n"));
          /* persistent: the tiles the blocks walk, Q's buffers */
          {
            g_autofree char *persist = g_strdup_printf ("#define NKP_PERSIST %" G_GINT64_FORMAT "\n"
                                                        "#define NKP_SEEN_LO %" G_GINT64_FORMAT "\n"
                                                        "#define NKP_SEEN_HI %" G_GINT64_FORMAT "\n"
                                                        "#define NKP_Q_BUFFERS %u\n",
                                                        att->persist_tiles, att->seen_lo, att->seen_hi,
                                                        MAX (1u, att->q_buffers));

            g_assert_nonnull (strstr (h->source, persist));
            if (att->persist_tiles > 0)
              g_assert_cmpint (k->grid, <=, napkin_test_arch ("h100")->sms);
          }
          /* the score operands as the plan has them, the leading axes' strides in the index code */
          {
            g_autofree char *n_sc = g_strdup_printf ("#define NKP_N_SC %u\n", att->n_scores);

            g_assert_nonnull (strstr (h->source, n_sc));
            g_assert_cmpuint (att->n_scores, ==, (c->c.bias != NULL) + (c->c.keep != NULL));
            if (att->n_scores > 0)
              g_assert_nonnull (strstr (h->source, "#define NKP_SCORES(X) X (sc0_base, "));
          }
        }
      g_string_append (all90, h->source);

      /* sm_80: mma.sync where the plan found room, else the generic lowering says why */
      pk = napkin_plan_kernel_for (ap, 0, -1);
      if (pk->path == NAPKIN_PATH_MMA)
        {
          /* the a100 plan's own choice: one K/V buffer there is never the skeleton */
          k = kernel_named (a, pk->u.att.legacy ? "flash-mma" : "attn-sm80");
          g_assert_nonnull (k);
          g_assert_cmpint (k->grid, ==, pk->grid);
          g_assert_cmpuint (k->threads, ==, pk->threads);
          g_assert_null (k->tensor_maps);
          g_assert_null (strstr (a->source, "wgmma.mma_async"));
          g_string_append (all80, a->source);
        }
      else
        g_assert_nonnull (pk->reason);
    }
  if (!g_file_test (NVCC, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_message ("nvcc not installed: sources not compiled");
      return;
    }
  check_nvcc (all90->str, "-gencode=arch=compute_90a,code=sm_90a");
  check_nvcc (all80->str, "-gencode=arch=compute_80,code=sm_80");
}

/* Printed attention modules through NVRTC (the runner's compiler): the general kernel,
 * a split decode with its combine, fp8 with its transpose, and the mma.sync kernel. */
static void
test_nvrtc (void)
{
  static const struct
  {
    guint       index;
    const char *arch, *target;
  } runs[] = { { 1, "h100", "sm_90a" }, { 16, "h100", "sm_90a" }, { 24, "h100", "sm_90a" }, { 1, "a100", "sm_80" } };

  if (!napkin_nvrtc_available ())
    {
      g_test_skip ("NVRTC not available");
      return;
    }
  for (guint i = 0; i < G_N_ELEMENTS (runs); i++)
    {
      g_autoptr(NapkinPlan) p = NULL;
      g_autoptr(NapkinCudaModule) m = generate (&cases[runs[i].index], runs[i].arch, NULL, &p);
      g_autoptr(GError) error = NULL;
      g_autofree char *log = NULL;
      g_autoptr(GBytes) cubin = NULL;

      g_test_message ("%s on %s", cases[runs[i].index].name, runs[i].target);
      cubin = napkin_nvrtc_compile (m->source, runs[i].target, &log, &error);
      g_assert_no_error (error);
      g_assert_cmpuint (g_bytes_get_size (cubin), >, 0);
    }
}

/* The default fp8 path: Vᵀ made by the plan's repack kernel just before the attention,
 * each 32 keys in P·V's order (NAPKIN_PV_KEY), and P packed without shuffles. */
static void
test_vt_pass (void)
{
  g_autoptr(GString) all = g_string_new (NULL);
  g_autofree char *was = g_strdup (g_getenv ("NAPKIN_ATTN_VT_IN_KERNEL"));

  g_unsetenv ("NAPKIN_ATTN_VT_IN_KERNEL");
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const Case *c = &cases[i];
      g_autoptr(NapkinPlan) p = NULL;
      g_autoptr(NapkinCudaModule) m = NULL;
      g_autofree char *prefix = NULL;
      const NapkinPlanKernel *pk;
      const NapkinCudaKernel *rk, *ak;

      if (c->c.v_dtype == NULL || !g_str_equal (c->c.v_dtype, "fp8-e4m3"))
        continue;
      g_test_message ("%s", c->name);
      prefix = g_strdup_printf ("vt%u_", i);
      m = generate (c, "h100", prefix, &p);
      pk = napkin_plan_kernel_for (p, 0, -1);
      g_assert_false (pk->u.att.vt_in_kernel);
      g_assert_cmpint (pk->u.att.v_t, >=, 0);
      g_assert_cmpuint (m->kernels->len, >=, 2);
      rk = g_ptr_array_index (m->kernels, 0);
      ak = g_ptr_array_index (m->kernels, 1);
      g_assert_cmpstr (rk->skeleton, ==, "repack");
      g_assert_cmpstr (ak->skeleton, ==, "attn-sm90");
      g_assert_nonnull (strstr (m->source, "#define NKP_TRANSPOSE 1\n"));
      g_assert_nonnull (strstr (m->source, "#define NKP_PV_ORDER 1\n"));
      g_assert_nonnull (strstr (m->source, "#define NKP_VT_IN 0\n"));
      {
        /* the row of ones: P·V is D + 8 wide and its column D is the row sum */
        g_autofree char *dv = g_strdup_printf ("#define NKP_DV %" G_GINT64_FORMAT "\n", c->c.D + 8);
        g_autofree char *pv = g_strdup_printf ("m64n%" G_GINT64_FORMAT "k32.f32.e4m3.e4m3", c->c.D + 8);

        g_assert_nonnull (strstr (m->source, "#define NKP_ONES 1\n"));
        g_assert_nonnull (strstr (m->source, dv));
        g_assert_nonnull (strstr (m->source, pv));
      }
      g_string_append (all, m->source);
    }
  if (was != NULL)
    g_setenv ("NAPKIN_ATTN_VT_IN_KERNEL", was, TRUE);
  g_assert_cmpuint (all->len, >, 0);
  if (!g_file_test (NVCC, G_FILE_TEST_IS_EXECUTABLE))
    {
      g_test_message ("nvcc not installed: sources not compiled");
      return;
    }
  check_nvcc (all->str, "-gencode=arch=compute_90a,code=sm_90a");
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  /* the fp8 case prints the kernel that transposes V itself (an opt-in, docs/plan.md);
   * the default Vᵀ pass is planned in tests/plan and run by the GPU sweep */
  g_setenv ("NAPKIN_ATTN_VT_IN_KERNEL", "1", TRUE);
  g_test_add_func ("/codegen/attention/print", test_print);
  g_test_add_func ("/codegen/attention/nvrtc", test_nvrtc);
  g_test_add_func ("/codegen/attention/vt-pass", test_vt_pass);
  return g_test_run ();
}
