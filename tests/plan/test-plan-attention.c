/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <string.h>

#include "napkin-backward.h"
#include "napkin-kernels.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-model.h"
#include "napkin-plan.h"
#include "napkin-test-load.h"

/* The attention kernels of the napkin_test_plan (docs/plan.md, "Attention kernels"): every attention
 * a user draws — any length, head dims 8 to 256, GQA and MQA, cross-attention, decoding,
 * fp8 — gets a tensor-core kernel on Hopper (wgmma) and, but fp8, on Ampere (mma.sync);
 * masks count the tiles they leave; decoding splits the keys; today's aligned shapes
 * keep their skeletons. */

static guint
count_kind (const NapkinPlan *p,
            NapkinPlanKind    kind)
{
  guint n = 0;

  for (guint i = 0; i < p->kernels->len; i++)
    n += ((const NapkinPlanKernel *) g_ptr_array_index (p->kernels, i))->kind == kind;
  return n;
}

/* The model prices the plan's attention kernel on the plan's path. */
static void
assert_model_agrees (NapkinDiagram          *d,
                     const NapkinPlanKernel *k,
                     const char             *arch_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) an = napkin_analyze (d, napkin_test_arch (arch_id), NULL, &error);
  gboolean found = FALSE;

  g_assert_no_error (error);
  for (guint j = 0; j < an->kernels->len; j++)
    {
      const NapkinKernelCost *kc = &g_array_index (an->kernels, NapkinKernelCost, j);

      if (g_strcmp0 (kc->plan_kind, "attention") == 0)
        {
          g_assert_cmpint (kc->path, ==, k->path);
          found = TRUE;
        }
    }
  g_assert_true (found);
  g_assert_cmpuint (an->generic_kernels, ==, 0);
  g_assert_cmpint (g_array_index (an->regions, NapkinRegionCost, 0).plan_smem_bytes, ==, k->smem_bytes);
}

typedef struct
{
  const char         *name;
  NapkinTestAttention c;
  gboolean            legacy;     /* today's skeleton on mma.sync (a100): flash-mma */
  guint               split;      /* expected split-KV on h100 (1: none) */
  gint64              rows;       /* query rows a block */
  const char         *ampere;     /* a100: NULL mma.sync, else generic with this in the reason */
} Case;

static const Case cases[] = {
  /* prefill, multi-head, today's family and one step off it */
  { "4·16·4096·128", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 2 }, TRUE, 1, 128 },
  { "4·16·4096·128 k64", { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 64, 2 }, TRUE, 1, 128 },
  { "4·16·8192·64", { 4, 16, 0, 8192, 8192, 64, "bf16", NULL, NULL, 128, 128, 4 }, TRUE, 1, 128 },
  { "4·16·4000·128", { 4, 16, 0, 4000, 4000, 128, "fp16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "16·16·1000·128", { 16, 16, 0, 1000, 1000, 128, "fp16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "4·16·4096·96", { 4, 16, 0, 4096, 4096, 96, "fp16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "4·16·4096·80", { 4, 16, 0, 4096, 4096, 80, "bf16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "4·16·4096·64 q192", { 4, 16, 0, 4096, 4096, 64, "fp16", NULL, NULL, 192, 128, 2 }, FALSE, 1, 192 },
  /* a100: two K/V buffers do not fit, one does (the stages are a hint) */
  { "2·16·8192·192", { 2, 16, 0, 8192, 8192, 192, "bf16", NULL, NULL, 128, 96, 2 }, FALSE, 1, 128 },
  { "2·16·8192·256", { 2, 16, 0, 8192, 8192, 256, "bf16", NULL, NULL, 128, 64, 2 }, FALSE, 1, 128,
    "registers per thread" },
  { "1·8·32768·128", { 1, 8, 0, 32768, 32768, 128, "bf16", NULL, NULL, 128, 128, 3 }, TRUE, 1, 128 },
  { "8·16·128·64", { 8, 16, 0, 128, 128, 64, "fp16", NULL, NULL, 128, 128, 2 }, TRUE, 1, 128 },
  { "2·8·1000·40", { 2, 8, 0, 1000, 1000, 40, "fp16", NULL, NULL, 128, 64, 2 }, FALSE, 1, 128 },
  { "4·16·4096·32", { 4, 16, 0, 4096, 4096, 32, "fp16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "bshd 4·16·2048·128", { 4, 16, 0, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, TRUE }, FALSE, 1, 128 },
  { "bf16 in, fp32 out", { 4, 16, 0, 2048, 2048, 128, "bf16", NULL, "fp32", 128, 128, 2 }, TRUE, 1, 128 },
  { "4·16·2047·112", { 4, 16, 0, 2047, 2047, 112, "fp16", NULL, NULL, 128, 96, 2 }, FALSE, 1, 128 },
  /* GQA (Llama-3-8B: 32 query heads, 8 KV heads) and MQA */
  { "GQA 32/8 4096", { 1, 32, 8, 4096, 4096, 128, "bf16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  { "GQA 32/8 bshd 2048", { 2, 32, 8, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, TRUE }, FALSE, 1, 128 },
  { "MQA 16/1 4096", { 2, 16, 1, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 2 }, FALSE, 1, 128 },
  /* cross-attention */
  { "cross 1024×8192", { 4, 16, 0, 1024, 8192, 128, "fp16", NULL, NULL, 128, 128, 2 }, TRUE, 1, 128 },
  { "cross 4096×77", { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 64, 2 }, FALSE, 1, 128 },
  /* decoding: a few queries against a long KV cache, the group packed in one block */
  { "decode q1 k4096 b8", { 8, 32, 8, 1, 4096, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, FALSE, 2, 4 },
  { "decode q1 k32k b1", { 1, 32, 8, 1, 32768, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, FALSE, 16, 4 },
  { "decode q1 k128k b1", { 1, 32, 8, 1, 131072, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, FALSE, 16, 4 },
  { "decode q8 k8192 b4", { 4, 32, 8, 8, 8192, 128, "fp16", NULL, NULL, 0, 128, 2, 4 }, FALSE, 4, 32 },
  { "decode q1 k4096 b64", { 64, 32, 8, 1, 4096, 128, "bf16", NULL, NULL, 0, 128, 2, 4 }, FALSE, 1, 4 },
  { "decode MQA q1 k16k", { 2, 16, 1, 1, 16384, 128, "fp16", NULL, NULL, 0, 128, 2, 16 }, FALSE, 64, 16 },
  { "decode q1 k100000", { 2, 32, 8, 1, 100000, 128, "bf16", NULL, NULL, 0, 64, 4, 4 }, FALSE, 8, 4 },
  /* fp8 O, the diagram's own type for it (a cast usually after): the kernel stores e4m3 */
  { "fp8 O", { 4, 16, 0, 2048, 2048, 128, "fp8-e4m3", "fp8-e4m3", "fp8-e4m3", 128, 128, 2 }, FALSE, 1, 128, "wgmma" },
  /* fp8 e4m3: both products (V transposed by the kernel's producer), or Q·Kᵀ alone with a 16-bit V */
  { "fp8 4·16·4096·128", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp8-e4m3", "fp16", 128, 128, 2 }, FALSE, 1, 128,
    "wgmma" },
  { "fp8 QK, fp16 V", { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp16", "fp16", 128, 128, 2 }, FALSE, 1, 128, "wgmma" },
  { "fp8 4·16·2000·64", { 4, 16, 0, 2000, 2000, 64, "fp8-e4m3", "fp8-e4m3", "bf16", 128, 128, 2 }, FALSE, 1, 128,
    "wgmma" },
};

/* fp8 V: the plan adds the separate Vᵀ pass (a repack kernel before the attention, Vᵀ
 * in scratch) and runs 3 stages; NAPKIN_ATTN_VT_IN_KERNEL (the GPU A/B scripts) asks for
 * the kernel to transpose V itself instead, one kernel, V as stored beside its Vᵀ. */
static void
test_vt_pass (void)
{
  const Case *c = &cases[G_N_ELEMENTS (cases) - 3];
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c->c);
  g_autoptr(NapkinPlan) h = NULL, in = NULL;
  const NapkinPlanKernel *k, *r;

  g_assert_cmpstr (c->c.v_dtype, ==, "fp8-e4m3");
  h = napkin_test_plan (d, "h100");
  k = napkin_plan_kernel_for (h, 0, -1);
  g_assert_cmpuint (h->kernels->len, ==, 2);
  r = g_ptr_array_index (h->kernels, 0);
  g_assert_cmpint (r->kind, ==, NAPKIN_PLAN_REPACK);
  g_assert_true (r->u.repack.transpose);
  g_assert_false (k->u.att.vt_in_kernel);
  g_assert_cmpint (r->u.repack.dst.scratch, ==, k->u.att.v_t);
  g_assert_cmpint (k->u.att.v_t_ld % 16, ==, 0);
  g_assert_cmpuint (k->u.att.stages, ==, 3);
  /* Vᵀ in P·V's key order with a row of ones below (the row sums): 136 rows a stage */
  g_assert_true (r->u.repack.pv_key_order);
  g_assert_true (r->u.repack.ones_row);
  g_assert_cmpint (k->u.att.v_t_rows, ==, 128 + 8);
  g_assert_cmpint (r->u.repack.dst_bstride, ==, 136 * k->u.att.v_t_ld);
  g_assert_cmpint (k->smem_bytes, ==, 1024 + 128 * 128 + 3 * (128 * 128 + 136 * 128) + 8 * (1 + 3 * 3));

  g_setenv ("NAPKIN_ATTN_VT_IN_KERNEL", "1", TRUE);
  in = napkin_test_plan (d, "h100");
  g_unsetenv ("NAPKIN_ATTN_VT_IN_KERNEL");
  g_assert_cmpuint (in->kernels->len, ==, 1);
  g_assert_true (napkin_plan_kernel_for (in, 0, -1)->u.att.vt_in_kernel);
  g_assert_cmpint (napkin_plan_kernel_for (in, 0, -1)->u.att.v_t_rows, ==, 128);
}

/* setmaxnreg's split: the warpgroups share what the block was launched with (ptxas gives
 * each of 384 threads 168 registers, each of 512 threads 128), never more, or the
 * consumers' increase waits forever: 56/224 for two consumers, 24/240 where they need
 * more (fp8 d 256 by 128 keys, which hung at 32/240), 32/160 for three. */
static void
test_registers (void)
{
  static const struct
  {
    NapkinTestAttention c;
    guint               producer, consumer, consumers;
  } cases[] = {
    { { 4, 16, 0, 4096, 4096, 128, "fp16", NULL, NULL, 128, 128, 3 }, 56, 224, 2 },
    { { 2, 16, 0, 4096, 4096, 256, "fp8-e4m3", "fp8-e4m3", "bf16", 128, 128, 3 }, 24, 240, 2 },
    { { 4, 16, 0, 4096, 4096, 128, "fp8-e4m3", "fp8-e4m3", "fp16", 128, 224, 2 }, 24, 240, 2 },
    { { 4, 16, 0, 3000, 3000, 64, "fp16", NULL, NULL, 192, 128, 2 }, 32, 160, 3 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&cases[i].c);
      g_autoptr(NapkinPlan) h = napkin_test_plan (d, "h100");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (h, 0, -1);
      const NapkinPlanAttention *a = &k->u.att;
      guint threads = 128 * (a->consumers + 1);

      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_cmpuint (a->consumers, ==, cases[i].consumers);
      g_assert_cmpuint (a->producer_regs, ==, cases[i].producer);
      g_assert_cmpuint (a->consumer_regs, ==, cases[i].consumer);
      g_assert_cmpuint (128 * (a->producer_regs + a->consumers * a->consumer_regs), <=,
                        MIN (255u, 65536 / threads) / 8 * 8 * threads);
    }
}

static void
test_cases (void)
{
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const Case *c = &cases[i];
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c->c);
      g_autoptr(NapkinPlan) h = napkin_test_plan (d, "h100");
      g_autoptr(NapkinPlan) a = napkin_test_plan (d, "a100");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (h, 0, -1);
      const NapkinPlanAttention *att;
      gint64 hk = c->c.HK > 0 ? c->c.HK : c->c.H;
      gboolean fp8_v = c->c.v_dtype && g_str_has_prefix (c->c.v_dtype, "fp8");

      g_test_message ("%s: %s", c->name, k->note ? k->note : k->reason);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_cmpuint (h->n_generic, ==, 0);
      g_assert_true (h->feasible);
      att = &k->u.att;
      g_assert_cmpint (att->batch, ==, c->c.B * c->c.H);
      g_assert_cmpint (att->kv_batch, ==, c->c.B * hk);
      g_assert_cmpint (att->group, ==, c->c.H / hk);
      g_assert_cmpint (att->seqs, ==, c->c.B);
      g_assert_cmpint (att->heads, ==, c->c.H);
      g_assert_cmpint (att->kv_heads, ==, hk);
      g_assert_cmpint (att->NQ, ==, c->c.NQ);
      g_assert_cmpint (att->NKV, ==, c->c.NKV);
      g_assert_cmpint (att->D, ==, c->c.D);
      g_assert_cmpint (att->rows, ==, c->rows);
      g_assert_cmpint (att->consumers, ==, (c->rows + 63) / 64);
      g_assert_false (att->legacy);   /* flash-wgmma is retired: wgmma runs the general kernel */
      g_assert_cmpuint (att->split_kv, ==, c->split);
      {
        gint64 tiles = att->kv_batch * ((att->group + att->group_tile - 1) / att->group_tile)
                       * ((att->NQ + att->BQ - 1) / att->BQ);

        /* persistent where all the keys are one chunk and the tiles fill two waves */
        g_assert_cmpint (att->persist_tiles > 0, ==,
                         att->NKV <= 256 && att->split_kv == 1 && tiles >= 2 * napkin_test_arch ("h100")->sms);
        if (att->persist_tiles > 0)
          {
            g_assert_cmpint (att->persist_tiles, ==, tiles);
            g_assert_cmpint (att->NKV, <=, att->BKV);
            g_assert_cmpint (k->grid, ==, MIN (tiles, napkin_test_arch ("h100")->sms));
          }
        else
          g_assert_cmpint (k->grid, ==, tiles * att->split_kv);
      }
      g_assert_cmpuint (k->threads, ==, 128 * (1 + att->consumers));
      g_assert_cmpint (k->smem_bytes, <=, 232448);
      g_assert_cmpint (att->d_smem % (128 / napkin_dtype_bytes (att->dtype)), ==, 0);
      g_assert_cmpint (att->d_smem, >=, att->D);
      g_assert_cmpuint (count_kind (h, NAPKIN_PLAN_ATTENTION_COMBINE), ==, c->split > 1 ? 1 : 0);
      g_assert_cmpuint (count_kind (h, NAPKIN_PLAN_REPACK), ==, fp8_v ? 1 : 0);
      if (c->split > 1)
        {
          const NapkinPlanKernel *m = g_ptr_array_index (h->kernels, h->kernels->len - 1);

          g_assert_cmpint (m->kind, ==, NAPKIN_PLAN_ATTENTION_COMBINE);
          g_assert_cmpint (att->partials, >=, 0);
          g_assert_cmpint (h->scratch_bytes, >=, (gint64) att->split_kv * att->batch * att->NQ * (att->D + 1) * 4);
          g_assert_cmpint (att->chunks_per_split * att->split_kv, >=, (att->NKV + att->BKV - 1) / att->BKV);
          g_assert_nonnull (strstr (k->note, "split"));
        }
      g_assert_false (att->vt_in_kernel);
      if (fp8_v)
        {
          /* the Vᵀ pass first, then the attention in 3 stages (the floor for fp8 chunks
           * of up to 128 keys) */
          const NapkinPlanKernel *r = g_ptr_array_index (h->kernels, 0);

          g_assert_cmpint (r->kind, ==, NAPKIN_PLAN_REPACK);
          g_assert_true (r->u.repack.transpose);
          g_assert_cmpint (r->u.repack.dst.scratch, ==, att->v_t);
          g_assert_cmpint (att->v_t_ld % 16, ==, 0);
          if (att->BKV <= 128)
            g_assert_cmpuint (att->stages, ==, 3);
          g_assert_nonnull (strstr (k->note, "e4m3 for Q·Kᵀ and P·V"));
        }
      g_assert_cmpint (att->tiles_total, ==, ((att->NQ + att->BQ - 1) / att->BQ) * ((att->NKV + att->BKV - 1) / att->BKV));
      g_assert_cmpint (att->tiles_computed, ==, att->tiles_total);
      assert_model_agrees (d, k, "h100");

      /* Ampere: mma.sync for 16-bit types where the double-buffered K and V chunks fit
       * (rows and chunks of d rounded to 16, padded by 8 halfs), else one buffer where
       * that fits (the stages are a hint: the note says so); fp8 has no path there */
      k = napkin_plan_kernel_for (a, 0, -1);
      if (c->ampere == NULL
          && ((c->rows + 15) / 16 * 16 + 2 * c->c.BKV) * ((c->c.D + 15) / 16 * 16 + 8) * 2
               > (gint64) napkin_test_arch ("a100")->smem_max_per_block)
        {
          g_test_message ("  a100: %s", k->reason);
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_GENERIC);
          g_assert_nonnull (strstr (k->reason, "bytes of shared memory"));
        }
      else if (c->ampere == NULL
               && ((c->rows + 15) / 16 * 16 + 4 * c->c.BKV) * ((c->c.D + 15) / 16 * 16 + 8) * 2
                    > (gint64) napkin_test_arch ("a100")->smem_max_per_block)
        {
          g_test_message ("  a100: %s", k->note ? k->note : k->reason);
          /* … unless one buffer's chunk is too wide for the registers (d 128 by 128 keys) */
          if (k->path == NAPKIN_PATH_GENERIC)
            {
              g_assert_nonnull (strstr (k->reason, "registers per thread"));
              g_assert_cmpint (c->c.BKV, >=, 128);
              continue;
            }
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_MMA);
          if (k->u.att.bkv_parts > 1)
            {
              /* … or, from chunks of 128 keys, halves in two buffers (the kernel's chunk) */
              g_autofree char *want = g_strdup_printf ("the region's chunks of %lld keys run as 2 of %lld",
                                                       (long long) c->c.BKV, (long long) c->c.BKV / 2);

              g_assert_cmpint (c->c.BKV, >=, 128);
              g_assert_cmpuint (k->u.att.bkv_parts, ==, 2);
              g_assert_cmpint (k->u.att.BKV, ==, c->c.BKV / 2);
              g_assert_cmpuint (k->u.att.stages, ==, 2);
              g_assert_cmpint (k->smem_bytes, ==, ((c->rows + 15) / 16 * 16 + 2 * c->c.BKV)
                                                   * ((c->c.D + 15) / 16 * 16 + 8) * 2);
              g_assert_nonnull (strstr (k->note, "double-buffered"));
              g_assert_nonnull (strstr (k->note, want));
              assert_model_agrees (d, k, "a100");
              continue;
            }
          g_assert_cmpuint (k->u.att.stages, ==, 1);
          g_assert_false (k->u.att.legacy);
          g_assert_cmpint (k->smem_bytes, ==, ((c->rows + 15) / 16 * 16 + 2 * c->c.BKV)
                                               * ((c->c.D + 15) / 16 * 16 + 8) * 2);
          g_assert_nonnull (strstr (k->note, "one buffer"));
          g_assert_nonnull (strstr (k->note, "stages asked, the 1 that fit in shared memory used"));
          assert_model_agrees (d, k, "a100");
        }
      else if (c->ampere)
        {
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_GENERIC);
          g_assert_nonnull (strstr (k->reason, c->ampere));
        }
      else
        {
          g_test_message ("  a100: %s", k->note ? k->note : k->reason);
          g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
          g_assert_cmpint (k->path, ==, NAPKIN_PATH_MMA);
          g_assert_cmpuint (a->n_generic, ==, 0);
          g_assert_cmpint (k->u.att.rows, ==, c->rows);
          g_assert_cmpint (k->u.att.legacy, ==, c->legacy);
          g_assert_cmpuint (k->threads, ==, MAX ((c->rows + 15) / 16, k->u.att.legacy ? 1 : 4) * 32);
          assert_model_agrees (d, k, "a100");
        }
    }
  g_assert_cmpuint (G_N_ELEMENTS (cases), >=, 30);
}

/* Masks: the tiles a causal or windowed attention computes, exactly; the model can price
 * only those. Causal q = k = 4096 with 128×128 tiles: 528 of 1024 per head, 32 of them
 * (the diagonal) masked in registers, the last query tile 32 chunks. */
static void
test_masks (void)
{
  static const struct
  {
    gint64         NQ, NKV, BQ, BKV;
    NapkinAttnMask mask;
    gint64         offset, left, right;
    gint64         computed, total, masked, most;
  } cases[] = {
    { 4096, 4096, 128, 128, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 528, 1024, 32, 32 },
    { 8192, 8192, 128, 128, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 2080, 4096, 64, 64 },
    { 4096, 4096, 128, 64, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 32 * 2 + 2 * 496, 2048, 64, 64 },
    /* prefill of 1024 new queries after 3072 cached keys: bottom-right aligned */
    { 1024, 4096, 128, 128, NAPKIN_ATTN_MASK_CAUSAL, 3072, -1, 0, 8 * 24 + 36, 256, 8, 32 },
    /* sliding window of 1024 keys back (Mistral): query tiles 0…7 see 1…8 chunks (the
     * diagonal partial), the 24 others 9 (both ends partial) */
    { 4096, 4096, 128, 128, NAPKIN_ATTN_MASK_WINDOW, 0, 1024, 0, 36 + 24 * 9, 1024, 8 * 1 + 24 * 2, 9 },
    /* non-dividing lengths: the edge chunk is masked too */
    { 1000, 1000, 128, 128, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 36, 64, 8, 8 },
    { 1000, 1000, 128, 128, NAPKIN_ATTN_MASK_NONE, 0, -1, -1, 64, 64, 8, 8 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      NapkinTestAttention c = { 2, 4, 0, cases[i].NQ, cases[i].NKV, 128, "bf16", NULL, NULL, cases[i].BQ,
                                cases[i].BKV, 2 };
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
      g_autoptr(GError) error = NULL;
      NapkinPlanKernel *k = (NapkinPlanKernel *) napkin_plan_kernel_for (p, 0, -1);
      const NapkinPlanAttention *a = &k->u.att;

      g_assert_true (napkin_plan_attention_set_mask (p, k, cases[i].mask, cases[i].offset, cases[i].left,
                                                     cases[i].right, &error));
      g_assert_no_error (error);
      g_test_message ("%s %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ": %" G_GINT64_FORMAT " of %" G_GINT64_FORMAT
                      ", %" G_GINT64_FORMAT " masked: %s", napkin_attn_mask_to_string (cases[i].mask),
                      cases[i].NQ, cases[i].NKV, a->tiles_computed, a->tiles_total, a->tiles_masked, k->note);
      g_assert_cmpint (a->tiles_total, ==, cases[i].total);
      g_assert_cmpint (a->tiles_computed, ==, cases[i].computed);
      g_assert_cmpint (a->tiles_masked, ==, cases[i].masked);
      /* the longest query tile's chunks (a wave of blocks lasts as long as it) */
      g_assert_cmpint (a->chunks_most, ==, cases[i].most);
      if (cases[i].mask != NAPKIN_ATTN_MASK_NONE)
        {
          g_assert_false (a->legacy);
          g_assert_nonnull (strstr (k->note, "mask"));
        }
    }

  /* a chunk range by hand: causal, queries 256…383 with 128-key chunks see chunks 0…2,
   * the last one partly */
  {
    NapkinPlanAttention a = { 0 };
    gint64 first, end, masked;

    a.NQ = a.NKV = 4096;
    a.BQ = a.BKV = 128;
    a.mask = NAPKIN_ATTN_MASK_CAUSAL;
    a.window_left = -1;
    napkin_plan_attention_chunks (&a, 256, 384, &first, &end, &masked);
    g_assert_cmpint (first, ==, 0);
    g_assert_cmpint (end, ==, 3);
    g_assert_cmpint (masked, ==, 1);
    /* a window of 100 back, 0 ahead: queries 1000…1127 see keys 900…1127 */
    a.mask = NAPKIN_ATTN_MASK_WINDOW;
    a.window_left = 100;
    a.window_right = 0;
    napkin_plan_attention_chunks (&a, 1000, 1128, &first, &end, &masked);
    g_assert_cmpint (first, ==, 900 / 128);
    g_assert_cmpint (end, ==, (1127 + 128) / 128);
    g_assert_cmpint (masked, ==, end - first);
  }

  /* bad numbers name the field */
  {
    NapkinTestAttention c = { 1, 1, 0, 256, 256, 64, "fp16", NULL, NULL, 128, 128, 2 };
    g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
    g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
    g_autoptr(GError) error = NULL;
    NapkinPlanKernel *k = (NapkinPlanKernel *) napkin_plan_kernel_for (p, 0, -1);

    g_assert_false (napkin_plan_attention_set_mask (p, k, NAPKIN_ATTN_MASK_WINDOW, 0, -5, 0, &error));
    g_assert_nonnull (strstr (error->message, "mask"));
  }
}

/* A region's tiles are the user's: where no kernel can take them the plan says why; a key
 * chunk the Hopper kernel cannot hold runs in equal parts. */
static void
test_refusals (void)
{
  static const struct
  {
    NapkinTestAttention c;
    NapkinPath          path;
    const char         *why;
  } cases[] = {
    /* key chunks not a multiple of 16: a hint, rounded up to the tensor cores' step */
    { { 1, 4, 0, 1024, 1024, 128, "fp16", NULL, NULL, 128, 40, 2 }, NAPKIN_PATH_WGMMA, "chunks of 40 keys run as chunks of 48" },
    /* head dim above 256 */
    { { 1, 4, 0, 1024, 1024, 320, "fp16", NULL, NULL, 64, 64, 2 }, NAPKIN_PATH_GENERIC, "head size 320" },
    /* 256 query rows need 4 consumer warpgroups: mma.sync takes them, saying why */
    { { 1, 4, 0, 1024, 1024, 64, "fp16", NULL, NULL, 256, 64, 2 }, NAPKIN_PATH_MMA, "4 consumer warpgroups" },
    /* d 256 with 128-key chunks: too many registers for a consumer, so the Hopper kernel
     * runs each chunk as two of 64 (the model prices the parts) */
    { { 1, 4, 0, 1024, 1024, 256, "bf16", NULL, NULL, 128, 128, 2 }, NAPKIN_PATH_WGMMA,
      "chunks of 128 keys run as 2 of 64" },
    /* fp8 P·V wants chunks of whole 32-key k-steps (slices of Vᵀ in a 128, 64 or 32-byte
     * swizzle): 48 keys run as 64 */
    { { 1, 4, 0, 1024, 1024, 128, "fp8-e4m3", "fp8-e4m3", "fp16", 128, 48, 2 }, NAPKIN_PATH_WGMMA,
      "chunks of 48 keys run as chunks of 64" },
    /* fp8 e5m2 has no attention kernel */
    { { 1, 4, 0, 1024, 1024, 128, "fp8-e5m2", NULL, NULL, 128, 128, 2 }, NAPKIN_PATH_GENERIC, "fp8-e4m3" },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&cases[i].c);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (p, 0, -1);
      g_autofree char *adjusted = NULL;
      const char *text;

      /* where the plan changed the region's numbers it says so among the adjustments */
      g_ptr_array_add (k->adjustments, NULL);
      adjusted = g_strjoinv ("; ", (char **) k->adjustments->pdata);
      g_ptr_array_remove_index (k->adjustments, k->adjustments->len - 1);
      text = k->path == NAPKIN_PATH_GENERIC ? k->reason : strstr (adjusted, "run as chunks") ? adjusted : k->note;

      g_test_message ("case %u: %s: %s", i, napkin_path_to_string (k->path), text);
      g_assert_cmpint (k->path, ==, cases[i].path);
      g_assert_nonnull (strstr (text, cases[i].why));
      if (k->path == NAPKIN_PATH_MMA)
        g_assert_nonnull (strstr (text, "wgmma not used"));
      if (k->path == NAPKIN_PATH_WGMMA)
        g_assert_cmpuint (k->u.att.bkv_parts, ==, strstr (cases[i].why, "2 of 64") ? 2 : 1);
    }
}

/* Replaces the last axis of V, O and P·V's result by a head axis `dv` of `size`, and
 * adds `dv` whole to the region (as the importer names V's head axis). */
static NapkinDiagram *
with_dv (const NapkinTestAttention *c,
         gint64                     size)
{
  g_autofree char *json = napkin_test_attention_json (c);
  g_autoptr(json_object) root = json_tokener_parse (json);
  json_object *axes = json_object_object_get (root, "axes"), *tensors = json_object_object_get (root, "tensors");
  json_object *nodes = json_object_object_get (root, "nodes"), *axis = json_object_new_object ();
  json_object *region = json_object_array_get_idx (json_object_object_get (root, "regions"), 0);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d;

  json_object_object_add (axis, "name", json_object_new_string ("dv"));
  json_object_object_add (axis, "size", json_object_new_int64 (size));
  json_object_array_add (axes, axis);
  for (size_t i = 0; i < json_object_array_length (tensors); i++)
    {
      json_object *t = json_object_array_get_idx (tensors, i);
      const char *name = json_object_get_string (json_object_object_get (t, "name"));
      json_object *ta = json_object_object_get (t, "axes");

      if (g_str_equal (name, "V") || g_str_equal (name, "O"))
        json_object_array_put_idx (ta, json_object_array_length (ta) - 1, json_object_new_string ("dv"));
    }
  for (size_t i = 0; i < json_object_array_length (nodes); i++)
    {
      json_object *n = json_object_array_get_idx (nodes, i), *out;

      if (g_str_equal (json_object_get_string (json_object_object_get (n, "id")), "pv"))
        {
          out = json_object_object_get (n, "out");
          json_object_array_put_idx (out, json_object_array_length (out) - 1, json_object_new_string ("dv"));
        }
    }
  json_object_object_add (json_object_object_get (region, "marks"), "dv", json_object_new_string ("whole"));
  d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  return d;
}

/* V's and O's head axis may be named apart from Q's and K's (dv, as imported); the
 * kernels hold one head size, so a dv of another size is refused, saying so. */
static void
test_head_axes (void)
{
  /* GQA 32/8 as the importer writes it: Q [b,h,g,q,d], K and V [b,h,k,·] */
  NapkinTestAttention c = { 2, 32, 8, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2 };
  g_autoptr(NapkinDiagram) same = napkin_test_load_attention (&c);
  g_autoptr(NapkinDiagram) dv = with_dv (&c, 128);
  g_autoptr(NapkinDiagram) other = with_dv (&c, 64);
  g_autoptr(NapkinPlan) ps = napkin_test_plan (same, "h100");
  g_autoptr(NapkinPlan) pd = napkin_test_plan (dv, "h100");
  g_autoptr(NapkinPlan) po = napkin_test_plan (other, "h100");
  const NapkinPlanKernel *ks = napkin_plan_kernel_for (ps, 0, -1), *kd = napkin_plan_kernel_for (pd, 0, -1);
  const NapkinPlanKernel *ko = napkin_plan_kernel_for (po, 0, -1);

  g_assert_cmpint (kd->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (kd->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpint (kd->u.att.group, ==, 4);
  g_assert_cmpint (kd->u.att.D, ==, 128);
  /* the same kernel as with d everywhere: strides, tiles, grid */
  g_assert_cmpint (kd->u.att.o_row, ==, ks->u.att.o_row);
  g_assert_cmpint (kd->u.att.o_group, ==, ks->u.att.o_group);
  g_assert_cmpint (kd->grid, ==, ks->grid);
  g_assert_cmpint (kd->smem_bytes, ==, ks->smem_bytes);
  assert_model_agrees (dv, kd, "h100");
  g_assert_cmpint (ko->kind, !=, NAPKIN_PLAN_ATTENTION);
  g_assert_nonnull (ko->reason);
  g_test_message ("dv 64: %s", ko->reason);
  g_assert_nonnull (strstr (ko->reason, "V's head size (dv = 64) differs from Q's and K's (d = 128)"));
}

/* Stages are a hint (docs/plan.md): where those asked do not fit shared memory, the plan
 * runs the most that do (at least 2 on wgmma, else one K/V buffer on mma.sync) and its
 * note says so; the kernel's smem is what the stages it runs need. */
static void
test_stages_hint (void)
{
  /* d 256, keys by 64, 4 stages: Q 64 KiB + 4 × (32 + 32) KiB > 227 KiB; 2 stages fit */
  NapkinTestAttention c = { 1, 4, 0, 1024, 1024, 256, "bf16", NULL, NULL, 128, 64, 4 };
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
  NapkinTestAttention c80 = { 1, 4, 0, 1024, 1024, 192, "bf16", NULL, NULL, 128, 96, 4 };
  g_autoptr(NapkinDiagram) d80 = napkin_test_load_attention (&c80);
  g_autoptr(NapkinPlan) p80 = napkin_test_plan (d80, "a100");
  const NapkinPlanKernel *k = napkin_plan_kernel_for (p, 0, -1), *k80 = napkin_plan_kernel_for (p80, 0, -1);

  g_test_message ("h100: %s", k->note);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpuint (k->u.att.stages, ==, 2);
  g_assert_cmpuint (k->u.att.stages_asked, ==, 4);
  g_assert_cmpint (k->smem_bytes, ==, 1024 + 128 * 512 + 2 * (64 * 512 * 2) + 8 * 7);
  g_assert_nonnull (strstr (k->note, "keys in chunks of 64 through 2 stages"));
  g_assert_nonnull (strstr (k->note, "4 stages asked, the 2 that fit in shared memory used"));
  /* a100, d 192 by 96 keys: (128 + 4·96) rows of 200 halfs = 204800 B > 166912; one
   * buffer, 128000 B, fits */
  g_test_message ("a100: %s", k80->note);
  g_assert_cmpint (k80->path, ==, NAPKIN_PATH_MMA);
  g_assert_cmpuint (k80->u.att.stages, ==, 1);
  g_assert_cmpint (k80->smem_bytes, ==, 128000);
  g_assert_nonnull (strstr (k80->note, "one buffer"));
  g_assert_nonnull (strstr (k80->note, "4 stages asked, the 1 that fit in shared memory used"));
  /* asked what fits: no note */
  {
    NapkinTestAttention c2 = { 1, 4, 0, 1024, 1024, 256, "bf16", NULL, NULL, 128, 64, 2 };
    g_autoptr(NapkinDiagram) d2 = napkin_test_load_attention (&c2);
    g_autoptr(NapkinPlan) p2 = napkin_test_plan (d2, "h100");
    const NapkinPlanKernel *k2 = napkin_plan_kernel_for (p2, 0, -1);

    g_assert_cmpuint (k2->u.att.stages_asked, ==, 0);
    g_assert_null (strstr (k2->note, "stages asked"));
  }
}

/* The block order under a mask (docs/plan.md, "Causal order"): bands of heads whose K
 * and V fit in half of L2, each band's heaviest query tiles first. The order is a
 * permutation of the grid; 16 causal heads of 16 query tiles on an H200 (132 SMs) take one
 * band and end within 10 % of the even share (one head after another: 1.64×); without a
 * mask, or past 16 waves, no band. */
static void
test_band (void)
{
  static const gint64 shapes[][3] = { { 16, 16, 16 }, { 16, 40, 6 }, { 7, 13, 4 }, { 5, 3, 1 }, { 1, 9, 9 } };

  for (guint i = 0; i < G_N_ELEMENTS (shapes); i++)
    {
      const gint64 q_tiles = shapes[i][0], units = shapes[i][1], band = shapes[i][2];
      g_autofree gboolean *seen = g_new0 (gboolean, q_tiles * units);

      for (gint64 b = 0; b < q_tiles * units; b++)
        {
          gint64 qt, unit;

          napkin_plan_attention_band_tile (b, q_tiles, units, band, &qt, &unit);
          g_assert_cmpint (qt, >=, 0);
          g_assert_cmpint (qt, <, q_tiles);
          g_assert_cmpint (unit, >=, 0);
          g_assert_cmpint (unit, <, units);
          g_assert_false (seen[unit * q_tiles + qt]);
          seen[unit * q_tiles + qt] = TRUE;
          /* within a band, the band's units take each query tile in turn */
          if (band > 1 && b % (band * q_tiles) == 0)
            g_assert_cmpint (qt, ==, 0);
        }
    }
  {
    NapkinTestAttention c = { 1, 16, 0, 2048, 2048, 192, "fp16", NULL, NULL, 128, 64, 3 };
    g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
    g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
    g_autoptr(GError) error = NULL;
    NapkinPlanKernel *k = (NapkinPlanKernel *) napkin_plan_kernel_for (p, 0, -1);

    g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
    g_assert_cmpint (k->grid, ==, 16 * 16);
    g_assert_cmpint (k->u.att.band, ==, 0);
    g_assert_cmpfloat (k->u.att.tail, ==, 1.0);
    g_assert_true (napkin_plan_attention_set_mask (p, k, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, &error));
    g_assert_no_error (error);
    g_test_message ("%s", k->note);
    g_assert_cmpint (k->u.att.band, ==, 16);
    g_assert_cmpfloat (k->u.att.tail, >=, 1.0);
    g_assert_cmpfloat (k->u.att.tail, <, 1.1);
    g_assert_nonnull (strstr (k->note, "bands of 16 heads"));
  }
  {
    /* 4 × 32 heads of 8192 at d 128: 4 MB of K and V each, 6 a band; 64 query tiles × 128
     * heads is more than 16 waves: the tail is not simulated */
    NapkinTestAttention c = { 4, 32, 0, 8192, 8192, 128, "bf16", NULL, NULL, 128, 128, 2 };
    g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
    g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
    g_autoptr(GError) error = NULL;
    NapkinPlanKernel *k = (NapkinPlanKernel *) napkin_plan_kernel_for (p, 0, -1);

    g_assert_true (napkin_plan_attention_set_mask (p, k, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, &error));
    g_assert_cmpint (k->u.att.band, ==, 0);
    g_assert_cmpfloat (k->u.att.tail, ==, 1.0);
  }
  {
    /* 2 × 8 heads of 4096 at d 128: 2 MB each, at most 15 a band in half of the H200's
     * L2: two even bands of 8 (15 and 1 would end 1.38× after the even share) */
    NapkinTestAttention c = { 2, 8, 0, 4096, 4096, 128, "bf16", NULL, NULL, 128, 128, 2 };
    g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
    g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h200");
    g_autoptr(GError) error = NULL;
    NapkinPlanKernel *k = (NapkinPlanKernel *) napkin_plan_kernel_for (p, 0, -1);
    const NapkinArch *h200 = napkin_test_arch ("h200");

    g_assert_cmpint ((gint64) (h200->levels[NAPKIN_LEVEL_L2].capacity_bytes / 2 / (4096.0 * 128 * 4)), ==, 15);
    g_assert_true (napkin_plan_attention_set_mask (p, k, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, &error));
    g_test_message ("%s", k->note);
    g_assert_cmpint (k->u.att.band, ==, 8);
    g_assert_cmpfloat (k->u.att.tail, <, 1.05);
  }
}

/* Persistent attention (docs/plan.md, "Attention kernels"): all the keys in one chunk
 * and at least two waves of tiles — one block an SM walks a range of them, Q copied
 * ahead through up to 4 buffers; masks go along (wholly hidden tiles skipped), two
 * chunks, few tiles or NAPKIN_NO_PERSISTENT_ATTENTION keep one tile a block. */
static void
test_persistent (void)
{
  const NapkinArch *h100 = napkin_test_arch ("h100");
  /* SD's cross-attention to 77 text tokens: 2·8 heads × 32 query tiles */
  NapkinTestAttention c = { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 77, 3 };
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
  const NapkinPlanKernel *k = napkin_plan_kernel_for (p, 0, -1);

  g_test_message ("%s", k->note);
  g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
  g_assert_cmpint (k->u.att.persist_tiles, ==, 2 * 8 * 32);
  g_assert_cmpint (k->grid, ==, h100->sms);
  g_assert_cmpuint (k->u.att.q_buffers, ==, 4);
  g_assert_cmpuint (k->u.att.stages, ==, 2);
  /* 4 Q buffers of 128 rows × 128 bytes, 2 stages of K and V (80 rows each), 12 barriers */
  g_assert_cmpint (k->smem_bytes, ==, 1024 + 4 * 128 * 128 + 2 * 2 * 80 * 128 + 8 * (8 + 3 * 2));
  g_assert_cmpint (k->smem_bytes, <=, (gint64) h100->smem_max_per_block);
  g_assert_nonnull (strstr (k->note, "persistent: each block walks about 4 of the 512 tiles"));
  assert_model_agrees (d, k, "h100");
  /* a causal mask goes along */
  {
    g_autoptr(NapkinPlan) pm = napkin_test_plan (d, "h100");
    NapkinPlanKernel *km = (NapkinPlanKernel *) napkin_plan_kernel_for (pm, 0, -1);
    g_autoptr(GError) error = NULL;

    g_assert_true (napkin_plan_attention_set_mask (pm, km, NAPKIN_ATTN_MASK_CAUSAL, 0, -1, -1, &error));
    g_assert_no_error (error);
    g_assert_cmpint (km->u.att.persist_tiles, ==, 2 * 8 * 32);
    g_assert_cmpint (km->grid, ==, h100->sms);
  }
  /* asked not to: one tile a block */
  {
    g_autoptr(NapkinPlan) p1 = NULL;
    const NapkinPlanKernel *k1;

    g_setenv ("NAPKIN_NO_PERSISTENT_ATTENTION", "1", TRUE);
    p1 = napkin_test_plan (d, "h100");
    g_unsetenv ("NAPKIN_NO_PERSISTENT_ATTENTION");
    k1 = napkin_plan_kernel_for (p1, 0, -1);
    g_assert_cmpint (k1->u.att.persist_tiles, ==, 0);
    g_assert_cmpint (k1->grid, ==, 2 * 8 * 32);
    g_assert_null (strstr (k1->note, "persistent"));
  }
  /* the region's chunks of 64 keys (64 + 13) taken as one chunk of all 77 (80 with the
   * padding): the hint gives way to the persistent walk */
  {
    NapkinTestAttention c64 = c;
    g_autoptr(NapkinDiagram) d64 = NULL;
    g_autoptr(NapkinPlan) p64 = NULL;
    const NapkinPlanKernel *k64;

    c64.BKV = 64;
    d64 = napkin_test_load_attention (&c64);
    p64 = napkin_test_plan (d64, "h100");
    k64 = napkin_plan_kernel_for (p64, 0, -1);
    g_test_message ("%s", k64->note);
    g_assert_cmpint (k64->u.att.persist_tiles, ==, 2 * 8 * 32);
    g_assert_cmpint (k64->u.att.BKV, ==, 80);
    g_assert_cmpint (k64->u.att.bkv_asked, ==, 64);
    g_assert_cmpint (k64->u.att.tiles_total, ==, 32);
    g_assert_cmpint (k64->smem_bytes, ==, k->smem_bytes);
    g_assert_nonnull (strstr (k64->note, "the region's chunks of 64 keys taken as one of all 77 (80 with the padding)"));
    assert_model_agrees (d64, k64, "h100");
  }
  /* more keys than one chunk holds (300), or fewer tiles than two waves: one tile a block */
  {
    NapkinTestAttention many = c, few = c;
    g_autoptr(NapkinDiagram) dmany = NULL;
    g_autoptr(NapkinDiagram) dfew = NULL;
    g_autoptr(NapkinPlan) pmany = NULL;
    g_autoptr(NapkinPlan) pfew = NULL;

    many.NKV = 300, many.BKV = 64;
    few.B = 1, few.H = 4;
    dmany = napkin_test_load_attention (&many);
    dfew = napkin_test_load_attention (&few);
    pmany = napkin_test_plan (dmany, "h100");
    pfew = napkin_test_plan (dfew, "h100");
    g_assert_cmpint (napkin_plan_kernel_for (pmany, 0, -1)->u.att.persist_tiles, ==, 0);
    g_assert_cmpint (napkin_plan_kernel_for (pmany, 0, -1)->u.att.BKV, ==, 64);
    g_assert_cmpint (napkin_plan_kernel_for (pfew, 0, -1)->u.att.persist_tiles, ==, 0);
    g_assert_cmpint (napkin_plan_kernel_for (pfew, 0, -1)->grid, ==, 4 * 32);
  }
}

/* The JSON `plan --format json` prints for an attention kernel. */
static void
test_json (void)
{
  NapkinTestAttention c = { 1, 32, 8, 1, 32768, 128, "bf16", NULL, NULL, 0, 128, 2, 4 };
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
  g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
  json_object *root = napkin_plan_to_json (p);
  json_object *kernels = json_object_object_get (root, "kernels");
  json_object *att = json_object_array_get_idx (kernels, 0);
  json_object *combine = json_object_array_get_idx (kernels, 1);

  g_assert_cmpstr (json_object_get_string (json_object_object_get (att, "kind")), ==, "attention");
  g_assert_cmpint (json_object_get_int (json_object_object_get (att, "group")), ==, 4);
  g_assert_cmpint (json_object_get_int (json_object_object_get (att, "split_kv")), ==, 16);
  g_assert_cmpint (json_object_get_int (json_object_object_get (json_object_object_get (att, "tiles"), "rows")), ==, 4);
  g_assert_cmpstr (json_object_get_string (json_object_object_get (att, "mask")), ==, "none");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (att, "dtypes")), ==, "bf16,bf16,bf16");
  g_assert_cmpstr (json_object_get_string (json_object_object_get (combine, "kind")), ==, "attention-combine");
  json_object_put (root);
}

static const NapkinPlanKernel *
attention_kernel (const NapkinPlan *p)
{
  for (guint i = 0; i < p->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (p->kernels, i);

      if (k->kind == NAPKIN_PLAN_ATTENTION)
        return k;
    }
  return NULL;
}

/* The mask operation of the examples reaches the kernel (docs/plan.md, "Attention
 * kernels"): every example plans to attention on wgmma with the diagram's mask. */
static void
test_mask_examples (void)
{
  static const struct
  {
    const char    *file;
    NapkinAttnMask mask;
    gint64         offset, left, right, total, computed, masked;
    guint          split;
  } cases[] = {
    /* the 4 heads of a group × 32 queries a block: 128 query tiles × 32 key chunks of 128,
     * tile i sees chunks 0…⌊i/4⌋: 4·(32·33/2) computed, each tile's diagonal chunk masked */
    { "attention-causal-gqa.napkin", NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 4096, 2112, 128, 1 },
    /* decoding: the one query at the end of the cache sees every key */
    { "attention-decode.napkin", NAPKIN_ATTN_MASK_CAUSAL, 32767, -1, 0, 256, 256, 0, 16 },
    /* 256 query tiles of 32 × 64 chunks: tile i sees ⌊i/4⌋ − 32 … ⌊i/4⌋ (from 0); the
     * diagonal chunk and, past the first 4096 keys, the window's far edge masked */
    { "attention-sliding-window.napkin", NAPKIN_ATTN_MASK_WINDOW, 0, 4096, 0, 16384, 6336, 384, 1 },
    /* d 256: 128 × 64 tiles, 32 × 64 */
    { "attention-causal-d256.napkin", NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 2048, 1056, 64, 1 },
    /* MHA with 128 × 128 tiles (docs/plan.md): 528 of 1024 per head, 32 masked */
    { "attention-causal-fp8.napkin", NAPKIN_ATTN_MASK_CAUSAL, 0, -1, 0, 1024, 528, 32, 1 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_example (cases[i].file);
      g_autoptr(NapkinPlan) p = napkin_test_plan (d, "h100");
      const NapkinPlanKernel *k = attention_kernel (p);
      const NapkinPlanAttention *a;

      g_test_message ("%s", cases[i].file);
      g_assert_nonnull (k);
      a = &k->u.att;
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_cmpint (a->mask, ==, cases[i].mask);
      g_assert_cmpint (a->mask_offset, ==, cases[i].offset);
      g_assert_cmpint (a->window_left, ==, cases[i].left);
      g_assert_cmpint (a->window_right, ==, cases[i].right);
      g_assert_cmpint (a->tiles_total, ==, cases[i].total);
      g_assert_cmpint (a->tiles_computed, ==, cases[i].computed);
      g_assert_cmpint (a->tiles_masked, ==, cases[i].masked);
      g_assert_cmpuint (a->split_kv, ==, cases[i].split);
      g_assert_false (a->legacy);
    }
}

/* A mask the kernel cannot run leaves the region generic, saying why. */
static void
test_mask_refusals (void)
{
  g_autoptr(NapkinDiagram) d = napkin_test_load_example ("attention-causal-gqa.napkin");
  int n = napkin_diagram_find_node (d, "mask");
  NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, n));
  g_autoptr(NapkinPlan) p = NULL;
  const NapkinPlanKernel *k;

  /* masking along the queries per key is not the kernel's mask */
  g_free (node->rows);
  g_free (node->axis);
  node->rows = g_strdup ("k");
  node->axis = g_strdup ("q");
  napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, n, node);
  p = napkin_test_plan (d, "h100");
  k = g_ptr_array_index (p->kernels, 0);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GENERIC);
  g_assert_nonnull (strstr (k->reason, "the mask “mask” must keep keys along k per query of q"));
}

/* The case's diagram with no region: the plan's own partition (docs/plan.md, "The
 * pipeline") finds the chain by its data flow. */
static NapkinDiagram *
without_regions (const NapkinTestAttention *c)
{
  g_autofree char *json = napkin_test_attention_json (c);
  g_autoptr(json_object) root = json_tokener_parse (json);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *d;

  json_object_object_add (root, "regions", json_object_new_array ());
  d = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, &error);
  g_assert_no_error (error);
  return d;
}

/* Score operands (docs/plan.md, "Score operands"): T5's relative position bias [h, q, k],
 * a padding mask [b, k] of 0 / −∞ added after the scale (BART), boolean keep flags [q, k]
 * and [b, q, k] (SDPA's attn_mask, GPT-2's tril buffer), a padding mask of a GQA decode —
 * each read through its strides per (lead, group, query, key), staged by each consumer warp
 * (16 rows, or one row a block reads whole), on wgmma and mma.sync, with regions drawn or
 * not, and priced by the model on the plan's path. */
static void
test_scores (void)
{
  static const struct
  {
    const char         *name;
    NapkinTestAttention c;
    NapkinAttnScoreKind kind;
    double              coef;
    gint64              lead[2], row;      /* strides along b, h and the queries */
    guint               rows, vec;
    gint64              pitch;
    gboolean            scan;
    guint               stages;
    gint64              smem;              /* h100 */
  } cases[] = {
    /* T5: no scale (1), the bias [h, q, k] in bf16: 16 rows a warp, rows 272 bytes apart;
     * 1024 + Q 16384 + 2 × (K 16384 + V 16384) + mbarriers 64 + 8 warps × 4352 */
    { "t5 [h,q,k]", { 4, 16, 0, 1024, 1024, 64, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", NULL, NULL,
                      TRUE, 1.0 }, NAPKIN_ATTN_SCORE_BIAS, 1.0, { 0, 1024 * 1024 }, 1024, 16, 16, 272, FALSE, 2,
      117824 },
    /* BART: a padding mask [b, k] after the scale 1/8 weighs 8 raw-score units; one row a
     * block (256 bytes a warp), scanned for the keys it keeps */
    { "bart pad [b,k]", { 8, 16, 0, 1024, 1024, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,k" },
      NAPKIN_ATTN_SCORE_BIAS, 8.0, { 1024, 0 }, 0, 1, 16, 256, TRUE, 2, 1024 + 16384 + 65536 + 64 + 8 * 256 + 16 },
    /* the bias before the scale: α·(Q·Kᵀ + B) adds B itself to the raw score */
    { "bias first", { 2, 16, 0, 2048, 2048, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,h,q,k", NULL, NULL,
                      TRUE }, NAPKIN_ATTN_SCORE_BIAS, 1.0, { 16 * 2048 * 2048, 2048 * 2048 }, 2048, 16, 16, 272,
      FALSE, 2, 1024 + 32768 + 2 * 65536 + 64 + 8 * 4352 },
    /* boolean keep flags [q, k] (SDPA's bool attn_mask, a tril buffer): 144-byte rows */
    { "keep [q,k]", { 2, 16, 0, 2048, 2048, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, NULL, NULL, "q,k" },
      NAPKIN_ATTN_SCORE_KEEP, 0, { 0, 0 }, 2048, 16, 16, 144, FALSE, 2, 1024 + 32768 + 2 * 65536 + 64 + 8 * 2304 },
    /* [b, 1, q, k] as the diagram has it: [b, q, k] broadcast over the heads */
    { "keep [b,q,k]", { 2, 16, 0, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, NULL, NULL, "b,q,k" },
      NAPKIN_ATTN_SCORE_KEEP, 0, { 2048 * 2048, 0 }, 2048, 16, 16, 144, FALSE, 2,
      1024 + 32768 + 2 * 65536 + 64 + 8 * 2304 },
    /* Whisper's 1500 keys: rows of 3000 bytes start on 8 */
    { "odd keys [b,h,q,k]", { 2, 8, 0, 1500, 1500, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,h,q,k" },
      NAPKIN_ATTN_SCORE_BIAS, 8.0, { 8 * 1500 * 1500, 1500 * 1500 }, 1500, 16, 8, 272, FALSE, 2,
      1024 + 16384 + 65536 + 64 + 8 * 4352 },
    /* 77 keys (a text encoder): rows of 154 bytes start on 2, copied without cp.async */
    { "77 keys [q,k]", { 2, 8, 0, 4096, 77, 64, "fp16", NULL, NULL, 128, 64, 2, 0, FALSE, "q,k" },
      NAPKIN_ATTN_SCORE_BIAS, 8.0, { 0, 0 }, 77, 16, 2, 144, FALSE, 2, 1024 + 16384 + 2 * 16384 + 64 + 8 * 2304 },
  };

  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&cases[i].c);
      g_autoptr(NapkinDiagram) plain = without_regions (&cases[i].c);
      g_autoptr(NapkinPlan) h = napkin_test_plan (d, "h100");
      g_autoptr(NapkinPlan) a = napkin_test_plan (d, "a100");
      g_autoptr(NapkinPlan) hp = napkin_test_plan (plain, "h100");
      const NapkinPlanKernel *k = napkin_plan_kernel_for (h, 0, -1), *ka = napkin_plan_kernel_for (a, 0, -1);
      const NapkinPlanAttnScore *sc = &k->u.att.scores[0];

      g_test_message ("%s: %s", cases[i].name, k->note ? k->note : k->reason);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpint (k->path, ==, NAPKIN_PATH_WGMMA);
      g_assert_false (k->u.att.legacy);
      g_assert_cmpuint (k->u.att.n_scores, ==, 1);
      g_assert_cmpint (sc->kind, ==, cases[i].kind);
      g_assert_cmpfloat_with_epsilon (sc->coef, cases[i].coef, 1e-12);
      g_assert_cmpint (sc->lead[0], ==, cases[i].lead[0]);
      g_assert_cmpint (sc->lead[1], ==, cases[i].lead[1]);
      g_assert_cmpint (sc->group, ==, 0);
      g_assert_cmpint (sc->row, ==, cases[i].row);
      g_assert_cmpuint (sc->rows, ==, cases[i].rows);
      g_assert_cmpuint (sc->vec, ==, cases[i].vec);
      g_assert_cmpint (sc->pitch, ==, cases[i].pitch);
      g_assert_cmpint (sc->scan, ==, cases[i].scan);
      g_assert_cmpint (sc->x.node, ==, napkin_diagram_find_node (d, cases[i].c.bias ? "b_in" : "m_in"));
      g_assert_cmpint (sc->dtype, ==, cases[i].kind == NAPKIN_ATTN_SCORE_KEEP ? NAPKIN_DTYPE_INT8
                                      : g_str_equal (cases[i].c.dtype, "bf16") ? NAPKIN_DTYPE_BF16 : NAPKIN_DTYPE_FP16);
      g_assert_cmpuint (k->u.att.stages, ==, cases[i].stages);
      /* the blocks of the sequences (b) or heads (h) a per-row operand lacks run together (L2) */
      g_assert_cmpint (k->u.att.lead_first, ==, cases[i].rows == 1 ? -1 : cases[i].lead[0] == 0 ? 0
                                                : cases[i].lead[1] == 0 ? 1 : -1);
      g_assert_cmpint (k->smem_bytes, ==, cases[i].smem);
      g_assert_nonnull (strstr (k->note, cases[i].kind == NAPKIN_ATTN_SCORE_KEEP ? "keep flags applied"
                                                                                : "a bias added"));
      assert_model_agrees (d, k, "h100");
      /* mma.sync takes the same operands */
      g_assert_cmpint (ka->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpint (ka->path, ==, NAPKIN_PATH_MMA);
      g_assert_cmpuint (ka->u.att.n_scores, ==, 1);
      g_assert_cmpint (ka->u.att.scores[0].row, ==, cases[i].row);
      assert_model_agrees (d, ka, "a100");
      /* no region drawn: the plan's own partition fuses the same chain into one kernel */
      g_assert_cmpuint (hp->kernels->len, ==, 1);
      k = g_ptr_array_index (hp->kernels, 0);
      g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
      g_assert_cmpuint (k->u.att.n_scores, ==, 1);
      g_assert_cmpint (k->u.att.scores[0].row, ==, cases[i].row);
      g_assert_cmpfloat_with_epsilon (k->u.att.scores[0].coef, cases[i].coef, 1e-12);
    }
}

/* The model's waves follow the blocks' walk: T5's bias [h, q, k] is read from device
 * memory once per wave of the batch's blocks that share it (L2 serves the others), and
 * once per block from L2. */
static void
test_score_l2 (void)
{
  NapkinTestAttention c = { 4, 16, 0, 1024, 1024, 64, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", NULL, NULL,
                            TRUE, 1.0 };
  g_autoptr(NapkinDiagram) d = napkin_test_load_attention (&c);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) an = napkin_analyze (d, napkin_test_arch ("h100"), NULL, &error);
  const NapkinRegionCost *rc;
  gboolean seen = FALSE;

  g_assert_no_error (error);
  rc = &g_array_index (an->regions, NapkinRegionCost, 0);
  for (guint i = 0; i < rc->transfers->len; i++)
    {
      const NapkinTransfer *tr = &g_array_index (rc->transfers, NapkinTransfer, i);

      if (g_strcmp0 (tr->tensor, "B") != 0)
        continue;
      seen = TRUE;
      /* every block reads its tiles: 4 sequences × the bias */
      g_assert_cmpint (tr->bytes, ==, 4 * 16 * 1024 * 1024 * 2);
      g_assert_cmpint (tr->hbm_bytes, <=, tr->bytes / 3);
    }
  g_assert_true (seen);
}

/* A bias and keep flags together, a GQA decode's padding mask (one row a block of 4 query
 * heads), a GQA bias, and an operand the kernels cannot read, refused naming the reason. */
static void
test_score_mixes (void)
{
  NapkinTestAttention both = { 2, 16, 0, 2048, 2048, 128, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k", NULL,
                               "b,k" };
  NapkinTestAttention decode = { 8, 32, 8, 1, 4096, 128, "bf16", NULL, NULL, 0, 128, 2, 4, FALSE, NULL, NULL, "b,k" };
  NapkinTestAttention gqa = { 2, 32, 8, 2048, 2048, 128, "bf16", NULL, NULL, 128, 128, 2, 0, FALSE, "b,h,g,q,k" };
  NapkinTestAttention transposed = { 2, 16, 0, 1024, 1024, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "k,q" };
  g_autoptr(NapkinDiagram) db = napkin_test_load_attention (&both);
  g_autoptr(NapkinDiagram) dd = napkin_test_load_attention (&decode);
  g_autoptr(NapkinDiagram) dg = napkin_test_load_attention (&gqa);
  g_autoptr(NapkinDiagram) dt = napkin_test_load_attention (&transposed);
  g_autoptr(NapkinPlan) pb = napkin_test_plan (db, "h100");
  g_autoptr(NapkinPlan) pd = napkin_test_plan (dd, "h100");
  g_autoptr(NapkinPlan) pg = napkin_test_plan (dg, "h100");
  g_autoptr(NapkinPlan) pt = napkin_test_plan (dt, "h100");
  const NapkinPlanKernel *k = napkin_plan_kernel_for (pb, 0, -1);
  const NapkinPlanAttention *a = &k->u.att;

  /* in chain order: the bias (16 rows), then the flags (one row, scanned) */
  g_test_message ("both: %s", k->note);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpuint (a->n_scores, ==, 2);
  g_assert_cmpint (a->scores[0].kind, ==, NAPKIN_ATTN_SCORE_BIAS);
  g_assert_cmpint (a->scores[0].dtype, ==, NAPKIN_DTYPE_FP16);
  g_assert_cmpint (a->scores[0].pitch, ==, 128 * 2 + 16);
  g_assert_cmpint (a->scores[1].kind, ==, NAPKIN_ATTN_SCORE_KEEP);
  g_assert_cmpint (a->scores[1].offset, ==, 16 * (128 * 2 + 16));
  g_assert_true (a->scores[1].scan);
  g_assert_cmpint (a->score_warp_bytes, ==, 16 * (128 * 2 + 16) + 128);
  assert_model_agrees (db, k, "h100");

  /* decoding: 4 query heads of a K/V head a block share the row of [b, k]; split-KV kept */
  k = napkin_plan_kernel_for (pd, 0, -1);
  g_test_message ("decode: %s", k->note);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (k->u.att.group_tile, ==, 4);
  g_assert_cmpuint (k->u.att.scores[0].rows, ==, 1);
  g_assert_true (k->u.att.scores[0].scan);
  g_assert_cmpuint (k->u.att.split_kv, >, 1);

  /* GQA: the bias [b, h, g, q, k] steps by its group axis */
  k = napkin_plan_kernel_for (pg, 0, -1);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
  g_assert_cmpint (k->u.att.scores[0].group, ==, 2048 * 2048);
  g_assert_cmpint (k->u.att.scores[0].row, ==, 2048);
  g_assert_cmpint (k->u.att.scores[0].lead[1], ==, 4 * 2048 * 2048);

  /* x − B weighs B by −1: −8 raw-score units after a scale of 1/8 */
  {
    NapkinTestAttention t = { 2, 16, 0, 1024, 1024, 64, "fp16", NULL, NULL, 128, 128, 2, 0, FALSE, "h,q,k" };
    g_autoptr(NapkinDiagram) ds = napkin_test_load_attention (&t);
    int n = napkin_diagram_find_node (ds, "bias");
    NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (ds, n));
    g_autoptr(NapkinPlan) ps = NULL;

    node->fn = NAPKIN_FN_SUB;
    napkin_diagram_replace_item (ds, NAPKIN_ITEM_NODE, n, node);
    ps = napkin_test_plan (ds, "h100");
    k = napkin_plan_kernel_for (ps, 0, -1);
    g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_ATTENTION);
    g_assert_cmpfloat_with_epsilon (k->u.att.scores[0].coef, -8.0, 1e-12);
    g_assert_cmpfloat_with_epsilon (k->u.att.alpha, 0.125, 1e-12);
  }

  /* the keys must be the operand's contiguous axis */
  k = napkin_plan_kernel_for (pt, 0, -1);
  g_assert_cmpint (k->kind, ==, NAPKIN_PLAN_GENERIC);
  g_test_message ("transposed: %s", k->reason);
  g_assert_nonnull (strstr (k->reason, "must have the key axis k last"));
}

/* Multi-query attention as an import of Falcon's layer draws it: Q[b, s, h, d] against
 * one K and V [b, k, d], a causal mask of k per s, no region. Both s and h are axes Q has
 * and K lacks, and either aligns with K's key axis: the mask names s the queries, and 71
 * heads (more than 16 a block's 128 rows could stack with 16 queries each) run a head a
 * block, 128 queries of it — not 71 heads of one query each. */
static void
test_multi_query (void)
{
  static const char json[] =
    "{\"format\": \"napkin\", \"version\": 1, \"title\": \"mqa\", \"axes\": ["
    "{\"name\": \"b\", \"size\": 4}, {\"name\": \"s\", \"size\": 2048}, {\"name\": \"h\", \"size\": 71},"
    "{\"name\": \"k\", \"size\": 2048}, {\"name\": \"d\", \"size\": 64}], \"tensors\": ["
    "{\"name\": \"Q\", \"axes\": [\"b\", \"s\", \"h\", \"d\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"K\", \"axes\": [\"b\", \"k\", \"d\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"V\", \"axes\": [\"b\", \"k\", \"d\"], \"dtype\": \"bf16\"},"
    "{\"name\": \"O\", \"axes\": [\"b\", \"s\", \"h\", \"d\"], \"dtype\": \"bf16\"}], \"nodes\": ["
    "{\"id\": \"q\", \"kind\": \"input\", \"tensor\": \"Q\", \"x\": 0, \"y\": 0},"
    "{\"id\": \"kk\", \"kind\": \"input\", \"tensor\": \"K\", \"x\": 0, \"y\": 100},"
    "{\"id\": \"v\", \"kind\": \"input\", \"tensor\": \"V\", \"x\": 0, \"y\": 200},"
    "{\"id\": \"scores\", \"kind\": \"contract\", \"out\": [\"b\", \"h\", \"s\", \"k\"], \"x\": 100, \"y\": 0},"
    "{\"id\": \"scale\", \"kind\": \"map\", \"fn\": \"scale\", \"alpha\": \"1/sqrt(d)\", \"x\": 200, \"y\": 0},"
    "{\"id\": \"causal\", \"kind\": \"mask\", \"mask\": \"causal\", \"axis\": \"k\", \"rows\": \"s\", \"x\": 300, \"y\": 0},"
    "{\"id\": \"probs\", \"kind\": \"softmax\", \"axis\": \"k\", \"x\": 400, \"y\": 0},"
    "{\"id\": \"pv\", \"kind\": \"contract\", \"out\": [\"b\", \"s\", \"h\", \"d\"], \"x\": 500, \"y\": 0},"
    "{\"id\": \"o\", \"kind\": \"output\", \"tensor\": \"O\", \"x\": 600, \"y\": 0}], \"wires\": ["
    "{\"from\": \"q\", \"to\": \"scores\", \"port\": 0}, {\"from\": \"kk\", \"to\": \"scores\", \"port\": 1},"
    "{\"from\": \"scores\", \"to\": \"scale\"}, {\"from\": \"scale\", \"to\": \"causal\"},"
    "{\"from\": \"causal\", \"to\": \"probs\"}, {\"from\": \"probs\", \"to\": \"pv\", \"port\": 0},"
    "{\"from\": \"v\", \"to\": \"pv\", \"port\": 1}, {\"from\": \"pv\", \"to\": \"o\"}], \"regions\": []}";
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) d = napkin_diagram_load_from_data (json, -1, NAPKIN_LOAD_VALIDATE, &error);
  g_autoptr(NapkinPlan) plan = NULL;
  const NapkinPlanKernel *k = NULL;
  gint64 group = 0;

  g_assert_no_error (error);
  g_assert_cmpint (napkin_plan_attention_query (d, (guint) napkin_diagram_find_node (d, "scores"),
                                                (guint) napkin_diagram_find_node (d, "probs"),
                                                (guint) napkin_diagram_find_node (d, "pv"), &group),
                   ==, napkin_diagram_find_axis (d, "s"));
  g_assert_cmpint (group, ==, 71);
  g_assert_false (napkin_plan_attention_stacks (71, 2048, 2048, 128));
  g_assert_true (napkin_plan_attention_stacks (8, 2048, 2048, 128));
  g_assert_true (napkin_plan_attention_stacks (71, 1, 2048, 128));      /* decoding */
  plan = napkin_test_plan (d, "h100");
  for (guint i = 0; i < plan->kernels->len; i++)
    if (((NapkinPlanKernel *) g_ptr_array_index (plan->kernels, i))->kind == NAPKIN_PLAN_ATTENTION)
      k = g_ptr_array_index (plan->kernels, i);
  g_assert_nonnull (k);
  g_test_message ("%s", k->note);
  g_assert_cmpint (k->u.att.NQ, ==, 2048);
  g_assert_cmpint (k->u.att.group, ==, 71);
  g_assert_cmpint (k->u.att.group_tile, ==, 1);
  g_assert_cmpint (k->u.att.BQ, ==, 128);
  g_assert_cmpint (k->u.att.mask, ==, NAPKIN_ATTN_MASK_CAUSAL);
  g_assert_cmpint (k->grid, >=, 4 * 71 * 16);
}

/* The backward of an attention with its softmax recomputed runs as one fused kernel
 * (docs/plan.md, "Attention backward"): the recomputed Q·Kᵀ, its scale and mask, the
 * softmax, dP, dV, the row term, dS, the mask's gate, dQ and dK in one
 * attention-backward kernel (on wgmma on Hopper, mma.sync on Ampere), with the example's sizes,
 * GQA group and mask; the forward beside it stays one attention; with the probabilities
 * stored there is nothing to recompute and no such kernel. The model prices it as its own
 * (three launches, no [q, k] value in device memory). */
static void
test_backward (void)
{
  static const struct
  {
    const char    *file;
    gint64         group, nq, nkv, d;
    NapkinAttnMask mask;
  } examples[] = {
    { "flash-attention.napkin", 1, 4096, 4096, 128, NAPKIN_ATTN_MASK_NONE },
    { "attention-causal-gqa.napkin", 4, 4096, 4096, 128, NAPKIN_ATTN_MASK_CAUSAL },
  };

  for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
    for (guint stored = 0; stored < 2; stored++)
      for (guint a = 0; a < 2; a++)
        {
          const char *arch_id = a == 0 ? "h200" : "a100";
          g_autoptr(NapkinDiagram) d = napkin_test_load_example (examples[e].file);
          g_autoptr(GError) error = NULL;
          g_autoptr(NapkinDiagram) bwd = napkin_backward_diagram (d, NULL, stored ? NAPKIN_BACKWARD_STORE
                                                                                  : NAPKIN_BACKWARD_RECOMPUTE,
                                                                  napkin_test_arch (arch_id), NULL, NULL, &error);
          g_autoptr(NapkinPlan) plan = NULL;
          g_autoptr(NapkinAnalysis) an = NULL;
          const NapkinPlanKernel *k = NULL;
          gboolean priced = FALSE;

          g_assert_no_error (error);
          plan = napkin_plan_build (bwd, napkin_test_arch (arch_id), NULL, &error);
          g_assert_no_error (error);
          g_assert_cmpuint (plan->n_generic, ==, 0);
          g_assert_cmpuint (count_kind (plan, NAPKIN_PLAN_ATTENTION_BACKWARD), ==, stored ? 0 : 1);
          if (stored)
            continue;
          g_assert_cmpuint (count_kind (plan, NAPKIN_PLAN_ATTENTION), ==, 1);
          g_assert_cmpuint (plan->kernels->len, ==, 2);
          for (guint i = 0; i < plan->kernels->len; i++)
            if (((const NapkinPlanKernel *) g_ptr_array_index (plan->kernels, i))->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
              k = g_ptr_array_index (plan->kernels, i);
          g_assert_nonnull (k);
          g_assert_cmpint (k->path, ==, a == 0 ? NAPKIN_PATH_WGMMA : NAPKIN_PATH_MMA);
          /* on Hopper the forward kernel writes the backward's log-sum-exps and its fp32 O
           * (the first launch then makes no product); on mma.sync nothing is linked */
          for (guint i = 0; i < plan->kernels->len; i++)
            {
              const NapkinPlanKernel *f = g_ptr_array_index (plan->kernels, i);

              if (f->kind != NAPKIN_PLAN_ATTENTION)
                continue;
              g_assert_cmpint (f->u.att.stats_scratch, ==, a == 0 ? k->u.bwd.scratch : -1);
              g_assert_cmpint (k->u.bwd.stats_given, ==, a == 0);
              if (a == 0)
                {
                  g_assert_cmpint (f->u.att.stats_o32, ==, k->u.bwd.o32_scratch);
                  g_assert_cmpint (g_array_index (plan->scratch, gint64, f->u.att.stats_o32), ==,
                                   k->u.bwd.a.batch * k->u.bwd.a.NQ * k->u.bwd.a.D * 4);
                  g_assert_cmpint (k->u.bwd.pre_smem, ==, 0);
                }
            }
          g_assert_cmpint (k->u.bwd.a.group, ==, examples[e].group);
          g_assert_cmpint (k->u.bwd.a.NQ, ==, examples[e].nq);
          g_assert_cmpint (k->u.bwd.a.NKV, ==, examples[e].nkv);
          g_assert_cmpint (k->u.bwd.a.D, ==, examples[e].d);
          g_assert_cmpint (k->u.bwd.a.mask, ==, examples[e].mask);
          g_assert_cmpfloat_with_epsilon (k->u.bwd.a.alpha, 1 / sqrt (128.0), 1e-9);
          g_assert_cmpfloat_with_epsilon (k->u.bwd.d_alpha, 1 / sqrt (128.0), 1e-9);
          /* a block of 128 keys of one K/V head; a causal mask leaves about half the pairs */
          g_assert_cmpint (k->grid, ==, k->u.bwd.a.kv_batch * 32);
          if (examples[e].mask == NAPKIN_ATTN_MASK_CAUSAL)
            g_assert_cmpint (k->u.bwd.pairs, <, k->u.bwd.a.batch * 4096 * 6 / 10);
          g_assert_cmpint (k->smem_bytes, <=, napkin_test_arch (arch_id)->smem_max_per_block);
          an = napkin_analyze (plan->diagram, napkin_test_arch (arch_id), NULL, &error);
          g_assert_no_error (error);
          for (guint j = 0; j < an->kernels->len; j++)
            {
              const NapkinKernelCost *kc = &g_array_index (an->kernels, NapkinKernelCost, j);

              if (g_strcmp0 (kc->plan_kind, "attention-backward") == 0)
                {
                  g_assert_cmpuint (kc->launches, ==, 3);
                  g_assert_cmpfloat (kc->time_s_predicted, >, 0);
                  /* the best path: faster than the mma.sync kernel, no faster than the
                   * products at the tensor peak */
                  g_assert_cmpfloat (kc->best_s, <=, kc->time_s_predicted);
                  g_assert_cmpfloat (kc->best_s, >, kc->time_s[NAPKIN_RESOURCE_TENSOR] * 0.1);
                  priced = TRUE;
                }
            }
          g_assert_true (priced);
          g_assert_cmpfloat (an->best_time_s, <=, an->predicted_time_s);
          /* the work counts what the masks keep once: the backward holds the forward's
           * mask, its recomputed copy and the gates — between the kept part of every
           * score-sized operation and all of them */
          {
            NapkinFlops all, kept;

            g_assert_true (napkin_diagram_total_flops (bwd, &all));
            g_assert_true (napkin_diagram_computed_flops (bwd, &kept));
            g_assert_cmpint (kept.tensor, >, 0);
            g_assert_cmpint (kept.tensor, <=, all.tensor);
            if (examples[e].mask == NAPKIN_ATTN_MASK_CAUSAL)
              g_assert_cmpint (kept.tensor, >, all.tensor * 4 / 10);
          }
          /* the Kernels section finds nothing to fix in its three launches */
          {
            g_autoptr(GPtrArray) rows = napkin_kernel_rows (an, plan->diagram);

            for (guint j = 0; j < rows->len; j++)
              {
                const NapkinKernelRow *row = g_ptr_array_index (rows, j);

                if (row->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
                  g_assert_null (row->reason);
              }
          }
        }
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/plan/attention/backward", test_backward);
  g_test_add_func ("/plan/attention/cases", test_cases);
  g_test_add_func ("/plan/attention/vt-pass", test_vt_pass);
  g_test_add_func ("/plan/attention/registers", test_registers);
  g_test_add_func ("/plan/attention/masks", test_masks);
  g_test_add_func ("/plan/attention/mask-examples", test_mask_examples);
  g_test_add_func ("/plan/attention/mask-refusals", test_mask_refusals);
  g_test_add_func ("/plan/attention/refusals", test_refusals);
  g_test_add_func ("/plan/attention/json", test_json);
  g_test_add_func ("/plan/attention/head-axes", test_head_axes);
  g_test_add_func ("/plan/attention/stages-hint", test_stages_hint);
  g_test_add_func ("/plan/attention/persistent", test_persistent);
  g_test_add_func ("/plan/attention/band", test_band);
  g_test_add_func ("/plan/attention/scores", test_scores);
  g_test_add_func ("/plan/attention/score-mixes", test_score_mixes);
  g_test_add_func ("/plan/attention/score-l2", test_score_l2);
  g_test_add_func ("/plan/attention/multi-query", test_multi_query);
  return g_test_run ();
}
