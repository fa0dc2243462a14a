/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-core"

#include "config.h"

#include <string.h>

#include "napkin-types.h"

static const char *dtype_names[NAPKIN_N_DTYPES] = {
  "fp32", "tf32", "fp16", "bf16", "fp8-e4m3", "fp8-e5m2", "int8",
};

/* tf32 is stored in 4 bytes; only the tensor cores round it to 19 bits. */
static const guint dtype_bytes[NAPKIN_N_DTYPES] = { 4, 4, 2, 2, 1, 1, 1 };

static const char *level_names[NAPKIN_N_LEVELS] = { "hbm", "l2", "smem", "registers" };
static const char *level_titles[NAPKIN_N_LEVELS] = {
  "Device memory", "L2 cache", "Shared memory", "Registers",
};

static const char *op_names[NAPKIN_N_OPS] = {
  "input", "output", "contract", "map", "reduce", "softmax", "normalize", "rearrange",
  "mask",
};

/* FLOPs and special-function ops per output element; documented in docs/model.md. */
static const NapkinFnInfo fn_infos[NAPKIN_N_FNS] = {
  { "add",     2, 1, 0 },
  { "sub",     2, 1, 0 },
  { "mul",     2, 1, 0 },
  { "div",     2, 1, 1 },
  { "max",     2, 1, 0 },
  { "min",     2, 1, 0 },
  { "scale",   1, 1, 0 },
  { "exp",     1, 1, 1 },
  { "neg",     1, 1, 0 },
  { "relu",    1, 1, 0 },
  { "gelu",    1, 8, 1 },
  { "silu",    1, 4, 1 },
  { "sigmoid", 1, 3, 1 },
  { "tanh",    1, 1, 1 },
  { "square",  1, 1, 0 },
  { "sqrt",    1, 1, 1 },
  { "rsqrt",   1, 1, 1 },
  { "cast",    1, 0, 0 },
  { "gelu_tanh", 1, 7, 1 },
  { "shift",   1, 1, 0 },
  { "step",    1, 1, 0 },
  { "erf",     1, 4, 1 },
  { "log",     1, 1, 1 },
  { "elu",     1, 2, 1 },
  { "reciprocal", 1, 1, 1 },
};

static const char *reduce_names[NAPKIN_N_REDUCES] = { "sum", "max", "mean" };
static const char *norm_names[NAPKIN_N_NORMS] = { "layernorm", "rmsnorm" };
static const char *mask_names[NAPKIN_N_MASKS] = { "causal", "window", "tensor" };
static const char *mark_names[NAPKIN_N_MARKS] = { "whole", "parallel", "stream" };

static gboolean
lookup (const char  *str,
        const char **names,
        guint        n_names,
        guint       *out)
{
  if (str == NULL)
    return FALSE;

  for (guint i = 0; i < n_names; i++)
    {
      if (strcmp (str, names[i]) == 0)
        {
          *out = i;
          return TRUE;
        }
    }

  return FALSE;
}

#define DEFINE_ENUM_STRINGS(prefix, Type, names, N)                       \
  const char *                                                            \
  prefix##_to_string (Type value)                                         \
  {                                                                       \
    g_return_val_if_fail ((guint) value < N, NULL);                       \
    return names[value];                                                  \
  }                                                                       \
  gboolean                                                                \
  prefix##_from_string (const char *str,                                  \
                        Type       *out)                                  \
  {                                                                       \
    guint v;                                                              \
    if (!lookup (str, names, N, &v))                                      \
      return FALSE;                                                       \
    *out = (Type) v;                                                      \
    return TRUE;                                                          \
  }

DEFINE_ENUM_STRINGS (napkin_dtype, NapkinDtype, dtype_names, NAPKIN_N_DTYPES)
DEFINE_ENUM_STRINGS (napkin_level, NapkinLevel, level_names, NAPKIN_N_LEVELS)
DEFINE_ENUM_STRINGS (napkin_op_kind, NapkinOpKind, op_names, NAPKIN_N_OPS)
DEFINE_ENUM_STRINGS (napkin_reduce, NapkinReduceOp, reduce_names, NAPKIN_N_REDUCES)
DEFINE_ENUM_STRINGS (napkin_norm, NapkinNormKind, norm_names, NAPKIN_N_NORMS)
DEFINE_ENUM_STRINGS (napkin_mask, NapkinMaskKind, mask_names, NAPKIN_N_MASKS)

/* Whether a causal or window mask keeps element (row, col), in global coordinates
 * (docs/file-format.md, "mask"): causal keeps col <= row + offset, a window keeps
 * row + offset - left <= col <= row + offset + right, a negative side unbounded.
 * A tensor mask keeps everything here; its second input decides. */
gboolean
napkin_mask_keeps (NapkinMaskKind kind,
                   gint64         row,
                   gint64         col,
                   gint64         offset,
                   gint64         left,
                   gint64         right)
{
  gint64 diag = row + offset;

  switch (kind)
    {
    case NAPKIN_MASK_CAUSAL:
      return col <= diag;
    case NAPKIN_MASK_WINDOW:
      return (left < 0 || col >= diag - left) && (right < 0 || col <= diag + right);
    case NAPKIN_MASK_TENSOR:
    case NAPKIN_N_MASKS:
    default:
      return TRUE;
    }
}
DEFINE_ENUM_STRINGS (napkin_mark, NapkinMarkKind, mark_names, NAPKIN_N_MARKS)

gboolean
napkin_dtype_narrows (NapkinDtype from,
                      NapkinDtype to)
{
  if (from == to)
    return TRUE;
  switch (from)
    {
    case NAPKIN_DTYPE_FP32:
      return to == NAPKIN_DTYPE_FP16 || to == NAPKIN_DTYPE_BF16 || to == NAPKIN_DTYPE_FP8_E4M3
             || to == NAPKIN_DTYPE_FP8_E5M2;
    case NAPKIN_DTYPE_FP16:
    case NAPKIN_DTYPE_BF16:
      return to == NAPKIN_DTYPE_FP8_E4M3 || to == NAPKIN_DTYPE_FP8_E5M2;
    default:
      return FALSE;
    }
}

guint
napkin_dtype_bytes (NapkinDtype dtype)
{
  g_return_val_if_fail ((guint) dtype < NAPKIN_N_DTYPES, 0);
  return dtype_bytes[dtype];
}

gboolean
napkin_dtype_is_float (NapkinDtype dtype)
{
  return dtype != NAPKIN_DTYPE_INT8;
}

const char *
napkin_level_title (NapkinLevel level)
{
  g_return_val_if_fail ((guint) level < NAPKIN_N_LEVELS, NULL);
  return level_titles[level];
}

const NapkinFnInfo *
napkin_fn_info (NapkinMapFn fn)
{
  g_return_val_if_fail ((guint) fn < NAPKIN_N_FNS, NULL);
  return &fn_infos[fn];
}

gboolean
napkin_fn_from_string (const char  *str,
                       NapkinMapFn *out)
{
  if (str == NULL)
    return FALSE;

  for (guint i = 0; i < NAPKIN_N_FNS; i++)
    {
      if (strcmp (str, fn_infos[i].name) == 0)
        {
          *out = (NapkinMapFn) i;
          return TRUE;
        }
    }

  return FALSE;
}

/* Names of axes, tensors, nodes and regions are identifiers: they may end up in
 * generated code, so the format refuses anything else (docs/security.md). */
gboolean
napkin_name_is_valid (const char *name)
{
  gsize len;

  if (name == NULL || name[0] == '\0')
    return FALSE;

  len = strlen (name);
  if (len > NAPKIN_MAX_NAME_LEN)
    return FALSE;

  if (!g_ascii_isalpha (name[0]) && name[0] != '_')
    return FALSE;

  for (gsize i = 1; i < len; i++)
    {
      if (!g_ascii_isalnum (name[i]) && name[i] != '_')
        return FALSE;
    }

  return TRUE;
}
