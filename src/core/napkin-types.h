/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

G_BEGIN_DECLS

/* Limits that keep every product of sizes inside 64 bits (docs/design.md §1,
 * docs/security.md §3). */
#define NAPKIN_MAX_AXIS_SIZE   (G_GINT64_CONSTANT (1) << 40)
#define NAPKIN_MAX_RANK        8
#define NAPKIN_MAX_NAME_LEN    64
#define NAPKIN_MAX_NODES       100000
/* Far above any real diagram; they bound the checks that compare marks and region
 * pairs, so that a hostile file cannot make validation take hours (docs/security.md). */
#define NAPKIN_MAX_AXES        1024
#define NAPKIN_MAX_REGIONS     256
/* The largest magnitude of any number a file holds (positions, factors, eps). */
#define NAPKIN_MAX_NUMBER      1e9

typedef enum
{
  NAPKIN_DTYPE_FP32,
  NAPKIN_DTYPE_TF32,
  NAPKIN_DTYPE_FP16,
  NAPKIN_DTYPE_BF16,
  NAPKIN_DTYPE_FP8_E4M3,
  NAPKIN_DTYPE_FP8_E5M2,
  NAPKIN_DTYPE_INT8,
  NAPKIN_N_DTYPES
} NapkinDtype;

/* Ordered from large and slow to small and fast. */
typedef enum
{
  NAPKIN_LEVEL_HBM,
  NAPKIN_LEVEL_L2,
  NAPKIN_LEVEL_SMEM,
  NAPKIN_LEVEL_REGISTERS,
  NAPKIN_N_LEVELS
} NapkinLevel;

typedef enum
{
  NAPKIN_OP_INPUT,
  NAPKIN_OP_OUTPUT,
  NAPKIN_OP_CONTRACT,
  NAPKIN_OP_MAP,
  NAPKIN_OP_REDUCE,
  NAPKIN_OP_SOFTMAX,
  NAPKIN_OP_NORMALIZE,
  NAPKIN_OP_REARRANGE,
  NAPKIN_OP_MASK,
  NAPKIN_N_OPS
} NapkinOpKind;

typedef enum
{
  NAPKIN_FN_ADD,
  NAPKIN_FN_SUB,
  NAPKIN_FN_MUL,
  NAPKIN_FN_DIV,
  NAPKIN_FN_MAX,
  NAPKIN_FN_MIN,
  NAPKIN_FN_SCALE,
  NAPKIN_FN_EXP,
  NAPKIN_FN_NEG,
  NAPKIN_FN_RELU,
  NAPKIN_FN_GELU,
  NAPKIN_FN_SILU,
  NAPKIN_FN_SIGMOID,
  NAPKIN_FN_TANH,
  NAPKIN_FN_SQUARE,
  NAPKIN_FN_SQRT,
  NAPKIN_FN_RSQRT,
  NAPKIN_FN_CAST,
  NAPKIN_FN_GELU_TANH,  /* GELU's tanh approximation (torch's approximate='tanh') */
  NAPKIN_FN_SHIFT,      /* x + alpha */
  NAPKIN_FN_STEP,       /* 1 where x > 0, else 0: the derivative of relu, max and min (docs/training.md) */
  NAPKIN_FN_ERF,        /* the error function: the derivative of the exact GELU needs it */
  NAPKIN_FN_LOG,        /* the natural logarithm: log-softmax, log-sum-exp, a cross-entropy loss */
  NAPKIN_FN_ELU,        /* x where x > 0, else eˣ − 1 (torch's elu, alpha 1: linear attention's feature map) */
  NAPKIN_FN_RECIPROCAL, /* 1 / x */
  NAPKIN_N_FNS
} NapkinMapFn;

typedef enum
{
  NAPKIN_REDUCE_SUM,
  NAPKIN_REDUCE_MAX,
  NAPKIN_REDUCE_MEAN,
  NAPKIN_N_REDUCES
} NapkinReduceOp;

typedef enum
{
  NAPKIN_NORM_LAYERNORM,
  NAPKIN_NORM_RMSNORM,
  NAPKIN_N_NORMS
} NapkinNormKind;

/* What a mask node keeps (docs/file-format.md, "mask"). */
typedef enum
{
  NAPKIN_MASK_CAUSAL,
  NAPKIN_MASK_WINDOW,
  NAPKIN_MASK_TENSOR,
  NAPKIN_N_MASKS
} NapkinMaskKind;

typedef enum
{
  NAPKIN_MARK_WHOLE,
  NAPKIN_MARK_PARALLEL,
  NAPKIN_MARK_STREAM,
  NAPKIN_N_MARKS
} NapkinMarkKind;

/* Per-element cost of a map function: CUDA-core FLOPs and special-function-unit ops. */
typedef struct
{
  const char *name;
  guint       arity;
  guint       flops;
  guint       sfu;
} NapkinFnInfo;

const char         *napkin_dtype_to_string    (NapkinDtype     dtype);
gboolean            napkin_dtype_from_string  (const char     *str,
                                               NapkinDtype    *out);
guint               napkin_dtype_bytes        (NapkinDtype     dtype);
/* Whether rounding to `from` and then to `to` is rounding to `to`: the same type, or a
 * narrowing among the floating types (fp32 → fp16 or bf16 → fp8). Such a cast is a type
 * on an edge, which the plan folds into the value it casts (docs/plan.md). */
gboolean            napkin_dtype_narrows      (NapkinDtype     from,
                                               NapkinDtype     to);
gboolean            napkin_dtype_is_float     (NapkinDtype     dtype);
const char         *napkin_level_to_string    (NapkinLevel     level);
gboolean            napkin_level_from_string  (const char     *str,
                                               NapkinLevel    *out);
const char         *napkin_level_title        (NapkinLevel     level);
const char         *napkin_op_kind_to_string  (NapkinOpKind    kind);
gboolean            napkin_op_kind_from_string(const char     *str,
                                               NapkinOpKind   *out);
const NapkinFnInfo *napkin_fn_info            (NapkinMapFn     fn);
gboolean            napkin_fn_from_string     (const char     *str,
                                               NapkinMapFn    *out);
const char         *napkin_reduce_to_string   (NapkinReduceOp  op);
gboolean            napkin_reduce_from_string (const char     *str,
                                               NapkinReduceOp *out);
const char         *napkin_norm_to_string     (NapkinNormKind  kind);
gboolean            napkin_norm_from_string   (const char     *str,
                                               NapkinNormKind *out);
const char         *napkin_mask_to_string     (NapkinMaskKind  kind);
gboolean            napkin_mask_from_string   (const char     *str,
                                               NapkinMaskKind *out);
gboolean            napkin_mask_keeps         (NapkinMaskKind  kind,
                                               gint64          row,
                                               gint64          col,
                                               gint64          offset,
                                               gint64          left,
                                               gint64          right);
const char         *napkin_mark_to_string     (NapkinMarkKind  kind);
gboolean            napkin_mark_from_string   (const char     *str,
                                               NapkinMarkKind *out);
gboolean            napkin_name_is_valid      (const char     *name);

/* Checked arithmetic: FALSE on overflow, *out untouched. */
static inline gboolean
napkin_mul_checked (gint64  a,
                    gint64  b,
                    gint64 *out)
{
  gint64 r;

  if (__builtin_mul_overflow (a, b, &r))
    return FALSE;
  *out = r;
  return TRUE;
}

static inline gboolean
napkin_add_checked (gint64  a,
                    gint64  b,
                    gint64 *out)
{
  gint64 r;

  if (__builtin_add_overflow (a, b, &r))
    return FALSE;
  *out = r;
  return TRUE;
}

G_END_DECLS
