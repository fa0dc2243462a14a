/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Today's aligned attention shapes (docs/plan.md, "The legacy attention skeletons"): on
 * sm_90a the general kernel, kernels/attn-sm90.cu, prints them with the plan's tiles,
 * stages and register split — the flash-wgmma skeleton that used to take them is retired
 * (1.0–5.0 % slower on the H200) — while on sm_80 the flash-mma skeleton keeps them. The
 * sources go through nvcc in test-attention-print.c. */
#include "config.h"

#include <string.h>

#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-test-load.h"

typedef struct
{
  const char         *name;
  NapkinTestAttention c;
} Case;

static const Case cases[] = {
  /* the shapes of the GPU A/B (bench/gpu/attn-prims, general=1) */
  { "mha-4k-d128", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 3 } },
  { "mha-4k-d64", { 4, 16, 0, 4096, 4096, 64, "fp16", NULL, NULL, 128, 128, 4 } },
  { "mha-8k-d128", { 2, 16, 0, 8192, 8192, 128, "bf16", NULL, NULL, 128, 128, 3 } },
  /* the skeleton's other measured configurations: keys by 64, bf16 in and fp32 out */
  { "4k d128 keys 64", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 64, 2 } },
  { "4k d64 keys 64", { 4, 16, 0, 4096, 4096, 64, "fp16", NULL, NULL, 128, 64, 3 } },
  { "bf16 in, fp32 out", { 4, 16, 0, 2048, 2048, 128, "bf16", NULL, "fp32", 128, 128, 3 } },
};

static NapkinCudaModule *
generate (NapkinDiagram *d,
          const char    *arch_id,
          NapkinPlan   **plan_out)
{
  g_autoptr(GError) error = NULL;
  NapkinPlan *plan = napkin_test_plan (d, arch_id);
  NapkinCudaModule *m = napkin_codegen_cuda_for_plan (plan, 0, NULL, &error);

  g_assert_no_error (error);
  *plan_out = plan;
  return m;
}

static const NapkinCudaKernel *
only_kernel (const NapkinCudaModule *m)
{
  g_assert_cmpuint (m->kernels->len, ==, 1);
  return g_ptr_array_index (m->kernels, 0);
}

static void
assert_has (const char *source,
            char       *text)
{
  g_assert_nonnull (strstr (source, text));
  g_free (text);
}

/* sm_90a: attn-sm90.cu with the plan's launch, tiles, stages and register split, K and
 * V through tensor maps; sm_80: the flash-mma skeleton, a warp per 16 query rows. */
static void
test_today (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const Case *c = &cases[i];
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c->c);
      g_autoptr(NapkinPlan) hp = NULL;
      g_autoptr(NapkinPlan) ap = NULL;
      g_autoptr(NapkinCudaModule) h = generate (d, "h100", &hp);
      g_autoptr(NapkinCudaModule) a = generate (d, "a100", &ap);
      const NapkinPlanKernel *pk = napkin_plan_kernel_for (hp, 0, -1);
      const NapkinPlanAttention *att = &pk->u.att;
      const NapkinCudaKernel *k = only_kernel (h);
      const char *mma = g_str_equal (c->c.dtype, "bf16") ? "bf16" : "f16";
      const NapkinCudaTensorMap *km, *vm;

      g_test_message ("%s: %s: %s", c->name, k->skeleton, k->note);
      g_assert_cmpint (pk->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpint (pk->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_false (att->legacy);
      g_assert_null (strstr (pk->note, "flash-"));
      g_assert_cmpint (att->BQ, ==, c->c.BQ);
      g_assert_cmpint (att->BKV, ==, c->c.BKV);
      g_assert_cmpuint (att->stages, ==, c->c.stages);
      g_assert_cmpuint (att->split_kv, ==, 1);

      g_assert_cmpstr (k->skeleton, ==, "attn-sm90");
      g_assert_cmpint (k->grid, ==, c->c.B * c->c.H * (c->c.NQ / c->c.BQ));
      g_assert_cmpuint (k->threads, ==, 128 * (1 + c->c.BQ / 64));   /* producer + a consumer per 64 queries */
      g_assert_cmpint (k->dynamic_smem, ==, pk->smem_bytes);
      g_assert_nonnull (strstr (h->source, "kernels/attn-sm90.cu, sm_90a"));
      assert_has (h->source, g_strdup_printf ("wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k16.f32.%s.%s",
                                              c->c.BKV, mma, mma));   /* Q·Kᵀ */
      assert_has (h->source, g_strdup_printf ("wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k16.f32.%s.%s",
                                              c->c.D, mma, mma));     /* P·V */
      assert_has (h->source, g_strdup_printf ("#define NKP_STAGES %u\n", c->c.stages));
      assert_has (h->source, g_strdup_printf ("#define NKP_OVERLAP %d\n", att->overlap ? 1 : 0));
      assert_has (h->source, g_strdup_printf ("#define NKP_PRODUCER_REGS %u\n", att->producer_regs));
      assert_has (h->source, g_strdup_printf ("#define NKP_CONSUMER_REGS %u\n", att->consumer_regs));
      g_assert_null (strstr (h->source, "@"));
      g_assert_nonnull (k->tensor_maps);
      g_assert_cmpuint (k->tensor_maps->len, ==, 2);
      km = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 0);
      vm = &g_array_index (k->tensor_maps, NapkinCudaTensorMap, 1);
      g_assert_cmpint (km->inner, ==, c->c.D);
      g_assert_cmpuint (km->box_outer, ==, c->c.BKV);
      g_assert_cmpuint (vm->box_outer, ==, c->c.BKV);
      g_assert_cmpuint (km->swizzle, ==, 128);
      g_assert_cmpint (km->dtype, ==, g_str_equal (c->c.dtype, "bf16") ? NAPKIN_DTYPE_BF16 : NAPKIN_DTYPE_FP16);

      pk = napkin_plan_kernel_for (ap, 0, -1);
      k = only_kernel (a);
      g_test_message ("  a100: %s: %s", k->skeleton, pk->note);
      g_assert_cmpint (pk->path, ==, NAPKIN_PATH_MMA);
      g_assert_true (pk->u.att.legacy);
      g_assert_nonnull (strstr (pk->note, " (flash-mma)"));
      g_assert_cmpstr (k->skeleton, ==, "flash-mma");
      g_assert_cmpuint (k->threads, ==, pk->u.att.BQ / 16 * 32);
      g_assert_null (k->tensor_maps);
      g_assert_null (strstr (a->source, "wgmma"));
    }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/codegen/attention-today/wgmma-general", test_today);
  return g_test_run ();
}
