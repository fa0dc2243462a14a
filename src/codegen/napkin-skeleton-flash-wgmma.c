/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* The Hopper attention skeleton (kernels/flash-wgmma.cu): a producer warpgroup whose one
 * thread copies Q once and K, V chunk by chunk with TMA bulk tensor copies into a ring of
 * 128-byte-swizzled shared-memory stages, and BQ/64 consumer warpgroups on wgmma (S = Q·Kᵀ from shared memory, O += P·V with P in
 * registers). Chosen by the rule shared with the performance model (docs/codegen.md,
 * "Hopper skeletons"): the target is sm_90a, Q, K and V fp16 or bf16, the q tile a
 * multiple of 64, the key tile a multiple of 16 and at most 256, d ∈ {64, 128}, the
 * stages within 227 KB of shared memory. Where the rule holds but this skeleton's own
 * limits do not (at most 3 consumer warpgroups, the accumulators within the registers
 * setmaxnreg gives a consumer), the note says so and flash-mma takes the region. */

#define MAX_DYNAMIC_SMEM (227 * 1024)
#define MAX_CONSUMERS 3

#define REFUSE(...) do { *note = g_strdup_printf ("flash-wgmma skeleton not used: " __VA_ARGS__); return FALSE; } while (0)

/* Shared memory the skeleton asks for: Q, the K and V stages, 1 KB to align them for
 * the 128-byte swizzle, 1 + 3·stages mbarriers. */
static gint64
flash_wgmma_smem (gint64 BQ,
                  gint64 BKV,
                  gint64 D,
                  gint64 stages)
{
  return 1024 + BQ * D * 2 + 2 * stages * BKV * D * 2 + 8 * (1 + 3 * stages);
}

void
_napkin_attn_pv_functions (GString    *s,
                           const char *name,
                           gint64      BKV,
                           gint64      D,
                           const char *mma,
                           gboolean    v8)
{
  const gint64 ns = BKV / 2, no = D / 2;
  g_autoptr(GString) regs_o = g_string_new (NULL);
  g_autoptr(GString) outs_s = g_string_new (NULL);
  g_autoptr(GString) outs_o = g_string_new (NULL);

  for (gint64 i = 0; i < ns; i++)
    g_string_append_printf (outs_s, "%s\"+f\" (d[%" G_GINT64_FORMAT "])", i ? ", " : "", i);
  for (gint64 i = 0; i < no; i++)
    {
      g_string_append_printf (regs_o, "%s%%%" G_GINT64_FORMAT, i ? ", " : "", i);
      g_string_append_printf (outs_o, "%s\"+f\" (d[%" G_GINT64_FORMAT "])", i ? ", " : "", i);
    }
  g_string_append_printf (s,
                          "__device__ __forceinline__ void\n"
                          "%s_pv (float (&d)[%" G_GINT64_FORMAT "], unsigned a0, unsigned a1, unsigned a2, unsigned a3, "
                          "unsigned long long db)\n"
                          "{\n"
                          "  asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%%" G_GINT64_FORMAT ", 0; \"\n"
                          "                \"wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k%d.f32.%s.%s {%s}, "
                          "{%%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT
                          "}, %%%" G_GINT64_FORMAT ", p, 1, 1%s; }\"\n"
                          "                : %s\n"
                          "                : \"r\" (a0), \"r\" (a1), \"r\" (a2), \"r\" (a3), \"l\" (db), \"r\" (1) : \"memory\");\n"
                          "}\n\n",
                          name, no, no + 5, D, v8 ? 32 : 16, mma, mma, regs_o->str,
                          no, no + 1, no + 2, no + 3, no + 4, v8 ? "" : ", 1", outs_o->str);
  g_string_append_printf (s,
                          "__device__ __forceinline__ void\n"
                          "%s_fence_s (float (&d)[%" G_GINT64_FORMAT "])\n"
                          "{\n"
                          "  asm volatile (\"\" : %s :: \"memory\");\n"
                          "}\n\n"
                          "__device__ __forceinline__ void\n"
                          "%s_fence_o (float (&d)[%" G_GINT64_FORMAT "])\n"
                          "{\n"
                          "  asm volatile (\"\" : %s :: \"memory\");\n"
                          "}\n",
                          name, ns, outs_s->str, name, no, outs_o->str);
}

/* The wgmma calls for these sizes, one asm operand per accumulator register, and the
 * empty asm statements that pin the accumulators around a wait. */
static char *
flash_wgmma_wrappers (const char *name,
                      gint64      BKV,
                      gint64      D,
                      const char *mma)
{
  GString *s = g_string_new (NULL);
  g_autofree char *qk = g_strdup_printf ("%s_qk", name);
  g_autofree char *text = _napkin_wgmma_ss_function (qk, BKV, mma, FALSE, TRUE);

  g_string_append_printf (s, "%s\n", text);
  _napkin_attn_pv_functions (s, name, BKV, D, mma, FALSE);
  return g_string_free (s, FALSE);
}

gboolean
_napkin_cuda_flash_wgmma (const NapkinFlashShape  *f,
                          NapkinCudaModule        *module,
                          const char              *name,
                          GString                 *out,
                          char                   **note)
{
  gint64 stages, smem, consumers, producer_regs, consumer_regs, need;
  gboolean overlap;
  NapkinCudaKernel *ck;
  NapkinCudaTensorMap maps[3];

  *note = NULL;
  if (!(module->flags & NAPKIN_CODEGEN_SM90A))
    return FALSE;
  if (f->region->level != NAPKIN_LEVEL_SMEM)
    REFUSE ("the region is at %s, not shared memory", napkin_level_to_string (f->region->level));
  if (f->dtype != NAPKIN_DTYPE_FP16 && f->dtype != NAPKIN_DTYPE_BF16)
    REFUSE ("Q, K and V must be fp16 or bf16");
  if (f->D != 64 && f->D != 128)
    REFUSE ("head size %" G_GINT64_FORMAT "; the skeleton takes 64 or 128", f->D);
  if (f->BQ % 64 || f->BKV % 16 || f->BKV > 256)
    REFUSE ("groups of %" G_GINT64_FORMAT " queries and chunks of %" G_GINT64_FORMAT " keys: the queries must "
            "be a multiple of 64 (one consumer warpgroup each) and the keys a multiple of 16, at most 256",
            f->BQ, f->BKV);
  if (f->NQ % f->BQ || f->NKV % f->BKV)
    REFUSE ("%" G_GINT64_FORMAT " queries and %" G_GINT64_FORMAT " keys must be multiples of the groups (%"
            G_GINT64_FORMAT ") and chunks (%" G_GINT64_FORMAT ")", f->NQ, f->NKV, f->BQ, f->BKV);
  stages = MAX (f->stages, 2);
  smem = flash_wgmma_smem (f->BQ, f->BKV, f->D, stages);
  if (smem > MAX_DYNAMIC_SMEM)
    REFUSE ("Q (%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ") and %" G_GINT64_FORMAT " stages of K and V chunks ("
            "%" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ") need %" G_GINT64_FORMAT " bytes of shared memory; at most %d",
            f->BQ, f->D, stages, f->BKV, f->D, smem, MAX_DYNAMIC_SMEM);
  consumers = f->BQ / 64;
  if (consumers > MAX_CONSUMERS)
    REFUSE ("%" G_GINT64_FORMAT " queries per block would need %" G_GINT64_FORMAT " consumer warpgroups; at most %d "
            "(%d queries) share the 64K registers", f->BQ, consumers, MAX_CONSUMERS, 64 * MAX_CONSUMERS);
  napkin_plan_flash_wgmma_registers (consumers, &producer_regs, &consumer_regs);
  /* Per consumer thread: the scores (BKV/2), P in 16 bits (BKV/4), O (D/2) and 32 for
   * addresses, the running max and sum. Checked against ptxas (sm_90a, CUDA 13.0): it
   * admits every configuration seen without spills among those tried (2 consumers, 224
   * registers: d 128 with 64 and 128 keys, d 64 with 64 and 128; 3 consumers, 160: d 128
   * with 64 keys, d 64 with 128) and refuses every one seen spilling (d 128: 176 keys with
   * the overlap, 4 bytes; 192 keys, 48; 3 consumers with 96 keys, 16, and with 128, 112);
   * it also refuses d 64 with 256 keys, which did not spill without the overlap. */
  need = 3 * f->BKV / 4 + f->D / 2 + 32;
  if (need > consumer_regs)
    REFUSE ("chunks of %" G_GINT64_FORMAT " keys at d = %" G_GINT64_FORMAT " need about %" G_GINT64_FORMAT
            " registers per consumer thread; %" G_GINT64_FORMAT " consumer warpgroups get %" G_GINT64_FORMAT,
            f->BKV, f->D, need, consumers, consumer_regs);
  if (f->batch * MAX (f->NQ, f->NKV) > G_MAXINT32)
    REFUSE ("tensor-map coordinates are 32-bit: batch × sequence must stay below 2³¹ rows");
  /* Issuing the next chunk's Q·Kᵀ before this chunk's P·V, and taking turns between the
   * consumers (ping-pong), keeps the tensor cores busy during the softmax but wants the
   * next K in while V is still read. Measured on the H100 (docs/perf-notes.md): it pays
   * with 3 or more stages (d 128, keys 128: 590 TFLOP/s vs 541 without; d 64, 4 stages:
   * 425 vs 383) and with 2 stages of 128 keys (544 vs 533), not with 2 stages of 64 keys
   * (426 vs 505: the next K arrives too late). */
  overlap = stages >= 3 || f->BKV >= 128;

  {
    char alpha_text[G_ASCII_DTOSTR_BUF_SIZE];
    const char *mma = f->dtype == NAPKIN_DTYPE_FP16 ? "f16" : "bf16";
    NapkinSkeletonParam params[] = {
      { "WGMMA", flash_wgmma_wrappers (name, f->BKV, f->D, mma) },
      { "NAME", g_strdup (name) },
      { "BQ", g_strdup_printf ("%" G_GINT64_FORMAT, f->BQ) },
      { "BKV", g_strdup_printf ("%" G_GINT64_FORMAT, f->BKV) },
      { "D", g_strdup_printf ("%" G_GINT64_FORMAT, f->D) },
      { "STAGES", g_strdup_printf ("%" G_GINT64_FORMAT, stages) },
      { "OVERLAP", g_strdup (overlap ? "1" : "0") },
      { "TMA", g_strdup ("1") },
      { "PINGPONG", g_strdup ("1") },
      { "NQ", g_strdup_printf ("%" G_GINT64_FORMAT, f->NQ) },
      { "NKV", g_strdup_printf ("%" G_GINT64_FORMAT, f->NKV) },
      { "ALPHA", g_strdup (g_ascii_formatd (alpha_text, sizeof alpha_text, "%.9e", f->alpha)) },
      { "T", g_strdup (_napkin_cuda_ctype (f->dtype)) },
      { "OT", g_strdup (_napkin_cuda_ctype (f->o_dtype)) },
      { "MMA", g_strdup (mma) },
      { "QS", g_strdup_printf ("%d", f->q_slot) },
      { "KS", g_strdup_printf ("%d", f->k_slot) },
      { "VS", g_strdup_printf ("%d", f->v_slot) },
      { "OS", g_strdup_printf ("%d", f->o_slot) },
      { "PRODUCER_REGS", g_strdup_printf ("%" G_GINT64_FORMAT, producer_regs) },
      { "CONSUMER_REGS", g_strdup_printf ("%" G_GINT64_FORMAT, consumer_regs) },
    };
    g_autofree char *rname = napkin_codegen_escape_comment (f->region->name);
    g_autofree char *text = _napkin_skeleton_instantiate (napkin_kernel_flash_wgmma, params, G_N_ELEMENTS (params));

    g_string_append_printf (out, "\n/* Region %s at %s: fused attention as the flash-wgmma skeleton "
                                 "(kernels/flash-wgmma.cu, sm_90a) */\n",
                            rname, napkin_level_to_string (f->region->level));
    g_string_append (out, text);
  }

  /* Q, K and V as [batch·rows, D], row-major: boxes of 64 columns (one swizzle span) by a
   * group of queries or a chunk of keys. */
  maps[0] = (NapkinCudaTensorMap) { f->q_slot, f->dtype, f->D, f->batch * f->NQ, 64, (guint) f->BQ, 128 };
  maps[1] = (NapkinCudaTensorMap) { f->k_slot, f->dtype, f->D, f->batch * f->NKV, 64, (guint) f->BKV, 128 };
  maps[2] = (NapkinCudaTensorMap) { f->v_slot, f->dtype, f->D, f->batch * f->NKV, 64, (guint) f->BKV, 128 };

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_strdup (name);
  ck->skeleton = g_strdup ("flash-wgmma");
  ck->tensor_maps = g_array_new (FALSE, FALSE, sizeof (NapkinCudaTensorMap));
  g_array_append_vals (ck->tensor_maps, maps, G_N_ELEMENTS (maps));
  ck->grid = f->batch * (f->NQ / f->BQ);
  ck->threads = (guint) (128 * (1 + consumers));
  ck->smem_bytes = smem;
  ck->dynamic_smem = smem;
  ck->note = g_strdup_printf ("%" G_GINT64_FORMAT " queries per block, keys in chunks of %" G_GINT64_FORMAT
                              " through %" G_GINT64_FORMAT " stages (TMA, 128-byte swizzle), 1 producer + %"
                              G_GINT64_FORMAT " consumer warpgroups, wgmma m64n%" G_GINT64_FORMAT "k16 and m64n%"
                              G_GINT64_FORMAT "k16 (P in registers)%s",
                              f->BQ, f->BKV, stages, consumers, f->BKV, f->D,
                              !overlap ? "" : consumers > 1 ? ", next Q·Kᵀ overlapped with P·V, consumers in turn"
                                                            : ", next Q·Kᵀ overlapped with P·V");
  g_ptr_array_add (module->kernels, ck);
  return TRUE;
}
