/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* The Hopper GEMM skeleton (kernels/gemm-wgmma.cu): TMA loads into a ring of shared-memory
 * stages, a producer warpgroup and one or two consumer warpgroups on wgmma. Chosen by the
 * rule shared with the performance model (docs/codegen.md, "Hopper skeletons"): the
 * target is sm_90a, the operands fp16 or bf16, BM % 64 == 0, BN % 8 == 0 and ≤ 256,
 * BK % 64 == 0, the sizes multiples of the tiles and the stages within 227 KB of shared
 * memory. Where the rule holds but this skeleton's own limits do not (BN a multiple of
 * 64, BM ∈ {64, 128, 256}, 128 accumulators per thread), the note says so and gemm-mma
 * takes the region. */

#define MAX_DYNAMIC_SMEM (227 * 1024)
#define BK_WGMMA 64   /* the skeleton's chunk of K: one 128-byte swizzle span of 16-bit elements */

#define REFUSE(...) do { *note = g_strdup_printf ("gemm-wgmma skeleton not used: " __VA_ARGS__); return FALSE; } while (0)

/* Shared memory the skeleton asks for: the stages, two 8 KB store buffers per consumer
 * warpgroup, 1 KB to align them for the 128-byte swizzle, two mbarriers per stage. */
static gint64
wgmma_smem (gint64 BM,
            gint64 BN,
            gint64 stages)
{
  return stages * (BM * BK_WGMMA + BK_WGMMA * BN) * 2 + 2 * (BM == 64 ? 1 : 2) * 8192 + 1024 + 16 * stages;
}

gboolean
_napkin_cuda_gemm_wgmma (const NapkinGemmShape  *g,
                         NapkinCudaModule       *module,
                         const char             *name,
                         GString                *out,
                         char                  **note)
{
  gint64 stages, smem, consumers, acc;
  NapkinCudaKernel *ck;
  NapkinCudaTensorMap maps[3];

  *note = NULL;
  if (!(module->flags & NAPKIN_CODEGEN_SM90A))
    return FALSE;
  if (g->region->level != NAPKIN_LEVEL_SMEM)
    REFUSE ("the region is at %s, not shared memory", napkin_level_to_string (g->region->level));
  if (g->ab_dtype != NAPKIN_DTYPE_FP16 && g->ab_dtype != NAPKIN_DTYPE_BF16)
    REFUSE ("A and B must be fp16 or bf16");
  if (g->BM % 64 || g->BN % 8 || g->BN > 256 || g->BK % BK_WGMMA)
    REFUSE ("the tiles must be BM %% 64 = 0, BN %% 8 = 0 and ≤ 256, BK %% 64 = 0, not %" G_GINT64_FORMAT "×%"
            G_GINT64_FORMAT " with chunks of %" G_GINT64_FORMAT, g->BM, g->BN, g->BK);
  if (g->M % g->BM || g->N % g->BN || g->K % g->BK)
    REFUSE ("the sizes must be multiples of the tiles");
  /* A region chunk of BK is streamed as BK/64 chunks of 64: the same shared memory. */
  stages = g->stages * (g->BK / BK_WGMMA);
  smem = wgmma_smem (g->BM, g->BN, stages);
  if (smem > MAX_DYNAMIC_SMEM)
    REFUSE ("%" G_GINT64_FORMAT " stages of %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " and %" G_GINT64_FORMAT "×%"
            G_GINT64_FORMAT " tiles need %" G_GINT64_FORMAT " bytes of shared memory; at most %d",
            g->stages, g->BM, g->BK, g->BK, g->BN, smem, MAX_DYNAMIC_SMEM);
  if (g->BN % 64)
    REFUSE ("BN = %" G_GINT64_FORMAT " is not a multiple of 64 (B is loaded in 64-column swizzled boxes)", g->BN);
  if (g->BM != 64 && g->BM != 128 && g->BM != 256)
    REFUSE ("BM = %" G_GINT64_FORMAT "; the skeleton takes 64 (one consumer warpgroup), 128 or 256 (two)", g->BM);
  consumers = g->BM == 64 ? 1 : 2;
  acc = g->BM / consumers * g->BN / 128;
  if (acc > 128)
    REFUSE ("a %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT " tile needs %" G_GINT64_FORMAT
            " accumulators per consumer thread; at most 128", g->BM, g->BN, acc);
  if (g->M > G_MAXINT32 || g->N > G_MAXINT32 || g->K > G_MAXINT32)
    REFUSE ("tensor-map coordinates are 32-bit: the sizes must stay below 2³¹");

  {
    const char *mma = g->ab_dtype == NAPKIN_DTYPE_FP16 ? "f16" : "bf16";
    NapkinSkeletonParam params[] = {
      { "NAME", g_strdup (name) },
      { "BM", g_strdup_printf ("%" G_GINT64_FORMAT, g->BM) },
      { "BN", g_strdup_printf ("%" G_GINT64_FORMAT, g->BN) },
      { "STAGES", g_strdup_printf ("%" G_GINT64_FORMAT, stages) },
      { "M", g_strdup_printf ("%" G_GINT64_FORMAT, g->M) },
      { "N", g_strdup_printf ("%" G_GINT64_FORMAT, g->N) },
      { "K", g_strdup_printf ("%" G_GINT64_FORMAT, g->K) },
      { "CT", g_strdup (_napkin_cuda_ctype (g->c_dtype)) },
      { "MMA", g_strdup (mma) },
      { "C", g_strdup_printf ("%d", g->c_slot) },
      { "WGMMA", NULL },
    };
    g_autofree char *id = napkin_codegen_escape_comment (g->node->id);
    g_autofree char *rname = napkin_codegen_escape_comment (g->region->name);
    g_autofree char *fname = g_strdup_printf ("%s_wgmma", name);
    g_autofree char *text = NULL;

    /* B is row-major K×N: N-major, through the transpose bit */
    params[G_N_ELEMENTS (params) - 1].value = _napkin_wgmma_ss_function (fname, g->BN, mma, TRUE, FALSE);
    text = _napkin_skeleton_instantiate (napkin_kernel_gemm_wgmma, params, G_N_ELEMENTS (params));

    g_string_append_printf (out, "\n/* Region %s at %s: %s as the gemm-wgmma skeleton (kernels/gemm-wgmma.cu, "
                                 "sm_90a) */\n", rname, napkin_level_to_string (g->region->level), id);
    g_string_append (out, text);
  }

  /* A: K contiguous, boxes of 64 × BM; B: N contiguous, boxes of 64 × 64; C (stored):
   * 128-byte rows × 64. */
  maps[0] = (NapkinCudaTensorMap) { g->a_slot, g->ab_dtype, g->K, g->M, BK_WGMMA, (guint) g->BM, 128 };
  maps[1] = (NapkinCudaTensorMap) { g->b_slot, g->ab_dtype, g->N, g->K, 64, BK_WGMMA, 128 };
  maps[2] = (NapkinCudaTensorMap) { g->c_slot, g->c_dtype, g->N, g->M, 128 / napkin_dtype_bytes (g->c_dtype), 64, 128 };

  ck = g_new0 (NapkinCudaKernel, 1);
  ck->name = g_strdup (name);
  ck->skeleton = g_strdup ("gemm-wgmma");
  ck->grid = (g->M / g->BM) * (g->N / g->BN);   /* tiles; launched as MIN (tiles, SMs) */
  ck->persistent = TRUE;
  ck->threads = (guint) (128 * (1 + consumers));
  ck->smem_bytes = smem;
  ck->dynamic_smem = smem;
  ck->tensor_maps = g_array_new (FALSE, FALSE, sizeof (NapkinCudaTensorMap));
  g_array_append_vals (ck->tensor_maps, maps, G_N_ELEMENTS (maps));
  ck->note = g_strdup_printf ("block %" G_GINT64_FORMAT "×%" G_GINT64_FORMAT ", chunk %" G_GINT64_FORMAT
                              " (as %" G_GINT64_FORMAT " of 64), %" G_GINT64_FORMAT " stages of 64, TMA loads "
                              "(128-byte swizzle), 1 producer + %" G_GINT64_FORMAT " consumer warpgroups, wgmma m64n%"
                              G_GINT64_FORMAT "k16, persistent grid, TMA stores",
                              g->BM, g->BN, g->BK, g->BK / BK_WGMMA, stages, consumers, g->BN);
  g_ptr_array_add (module->kernels, ck);
  return TRUE;
}

char *
_napkin_wgmma_ss_function (const char *fname,
                           gint64      n,
                           const char *mma,
                           gboolean    b_transposed,
                           gboolean    clobber_memory)
{
  const gint64 regs = n / 2;
  g_autoptr(GString) list = g_string_new (NULL);
  g_autoptr(GString) outs = g_string_new (NULL);

  for (gint64 i = 0; i < regs; i++)
    {
      g_string_append_printf (list, "%s%%%" G_GINT64_FORMAT, i ? ", " : "", i);
      g_string_append_printf (outs, "%s\"+f\" (d[%" G_GINT64_FORMAT "])", i ? ", " : "", i);
    }
  return g_strdup_printf ("static __device__ __forceinline__ void\n"
                          "%s (float (&d)[%" G_GINT64_FORMAT "], unsigned long long da, unsigned long long db, int acc)\n"
                          "{\n"
                          "  asm volatile (\"{ .reg .pred p; setp.ne.b32 p, %%%" G_GINT64_FORMAT ", 0; \"\n"
                          "                \"wgmma.mma_async.sync.aligned.m64n%" G_GINT64_FORMAT "k16.f32.%s.%s {%s}, "
                          "%%%" G_GINT64_FORMAT ", %%%" G_GINT64_FORMAT ", p, 1, 1, 0, %d; }\"\n"
                          "                : %s\n"
                          "                : \"l\" (da), \"l\" (db), \"r\" (acc)%s);\n"
                          "}\n",
                          fname, regs, regs + 2, n, mma, mma, list->str, regs, regs + 1, b_transposed ? 1 : 0,
                          outs->str, clobber_memory ? " : \"memory\"" : "");
}

NapkinCodegenFlags
napkin_codegen_flags_for_arch (const char *arch)
{
  if (arch != NULL && (g_str_equal (arch, "sm_90a") || g_str_equal (arch, "compute_90a")))
    return NAPKIN_CODEGEN_SM90A;
  return NAPKIN_CODEGEN_DEFAULT;
}

gboolean
napkin_cuda_tensor_map_encoding (const NapkinCudaTensorMap *map,
                                 guint64                    address,
                                 NapkinTensorMapEncoding   *enc,
                                 GError                   **error)
{
  guint bytes;
  gint64 ld;

  g_return_val_if_fail (map != NULL && enc != NULL, FALSE);

  bytes = napkin_dtype_bytes (map->dtype);
  ld = map->ld > 0 ? map->ld : map->inner;
  address += (guint64) map->offset;
  if (address % 16)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "tensor map of slot %d: the buffer's address 0x%" G_GINT64_MODIFIER "x is not 16-byte aligned",
                   map->slot, address);
      return FALSE;
    }
  if (map->inner < 1 || map->outer < 1 || ld < map->inner || (ld * bytes) % 16
      || (map->batch > 1 && (map->batch_stride * bytes) % 16))
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "tensor map of slot %d: rows of %" G_GINT64_FORMAT " elements (%" G_GINT64_FORMAT
                   " bytes apart) must be a positive multiple of 16 bytes apart", map->slot, map->inner, ld * bytes);
      return FALSE;
    }
  if (map->box_inner < 1 || map->box_inner > 256 || map->box_outer < 1 || map->box_outer > 256
      || (map->box_inner * bytes) % 16)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "tensor map of slot %d: a box of %u×%u elements; each side must be 1 to 256 and a box row "
                   "a multiple of 16 bytes", map->slot, map->box_inner, map->box_outer);
      return FALSE;
    }
  if (map->swizzle != 0 && map->swizzle != 32 && map->swizzle != 64 && map->swizzle != 128)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "tensor map of slot %d: swizzle %u; 0, 32, 64 or 128 bytes", map->slot, map->swizzle);
      return FALSE;
    }
  if (map->swizzle != 0 && map->box_inner * bytes > map->swizzle)
    {
      g_set_error (error, NAPKIN_CODEGEN_ERROR, NAPKIN_CODEGEN_ERROR_UNSUPPORTED,
                   "tensor map of slot %d: a box row of %u bytes exceeds the %u-byte swizzle span",
                   map->slot, map->box_inner * bytes, map->swizzle);
      return FALSE;
    }
  enc->rank = map->batch > 1 ? 3 : 2;
  enc->dims[0] = (guint64) map->inner;
  enc->dims[1] = (guint64) map->outer;
  enc->dims[2] = (guint64) MAX (map->batch, 1);
  enc->row_stride = (guint64) ld * bytes;
  enc->batch_stride = (guint64) map->batch_stride * bytes;
  enc->box[0] = map->box_inner;
  enc->box[1] = map->box_outer;
  enc->box[2] = 1;
  enc->address = address;
  enc->element_bytes = bytes;
  enc->swizzle = map->swizzle;
  return TRUE;
}
