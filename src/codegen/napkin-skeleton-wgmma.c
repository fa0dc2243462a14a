/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Hopper helpers shared by the printers: the wgmma call printed per tile width, the
 * compile target's flags, and tensor maps checked against the driver's rules. */

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
  return g_strdup_printf ("__device__ __forceinline__ void\n"
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
