/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-codegen"

#include "config.h"

#include "napkin-codegen-private.h"
#include "napkin-kernels.h"

/* Hopper helpers shared by the printers: a wgmma's accumulator operands, the compile
 * target's flags, and tensor maps checked against the driver's rules. */

void
_napkin_wgmma_accumulators (gint64   n,
                            GString *regs,
                            GString *outs)
{
  for (gint64 i = 0; i < n; i++)
    {
      if (regs != NULL)
        g_string_append_printf (regs, "%s%%%" G_GINT64_FORMAT, i ? ", " : "", i);
      g_string_append_printf (outs, "%s\"+f\" (d[%" G_GINT64_FORMAT "])", i ? ", " : "", i);
    }
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
