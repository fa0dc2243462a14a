/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-codegen-private.h"

G_BEGIN_DECLS

/* GEMM problems planned by hand (no diagram): every buffer is a plan scratch buffer in
 * the workspace (argument slot 0), as the plan's recognisers would lay them out — the
 * operands as stored, an aligned or K-major copy where the kernel needs one (a repack
 * kernel first), C, the epilogue's operands, the split-K partials (a reduction kernel
 * last). Shared by tests/codegen/test-gemm-print.c and bench/gpu/gemm-prims. */

typedef enum
{
  NAPKIN_TEST_EPI_NONE,
  NAPKIN_TEST_EPI_BIAS_GELU,   /* gelu (x + bias[n]) */
  NAPKIN_TEST_EPI_RESIDUAL,    /* x + residual[b, m, n] */
  NAPKIN_TEST_EPI_SILU_GATE,   /* silu (x) · gate[b, m, n] */
  NAPKIN_TEST_EPI_GELU,        /* gelu (x): no operand, applied before the TMA store */
} NapkinTestEpi;

/* An operand as the user stored it: `rows` rows of `cols` elements, ld apart, one
 * matrix per batch `bstride` apart (0: shared). */
typedef struct
{
  int    scratch;
  gint64 rows, cols, ld, bstride, offset;
} NapkinTestOperand;

typedef struct
{
  char              *name;
  char              *spec;
  gboolean           sm90;
  NapkinDtype        ab_dtype, c_dtype, x_dtype;   /* x: the epilogue's other operands */
  gint64             batch, M, N, K;
  gboolean           a_kmajor, b_kmajor, shared_b;
  guint              split_k;
  NapkinTestEpi      epi;
  NapkinTestOperand  a, b, c, x;                   /* as stored (x: bias or residual/gate) */
  NapkinPlan        *plan;
  NapkinCudaModule  *module;                       /* source and kernels, workspace slot 0 */
} NapkinTestGemm;

/* Parses "name=… t=sm90|sm80 ab=bf16|fp16|e4m3|e5m2 c=fp32|bf16|fp16 b=BATCH m= n= k=
 * a=k|m bl=k|n sharedb=0|1 split=S epi=none|bias_gelu|residual|silu_gate
 * tile=BMxBNxBK stages= cons= warp=WMxWN ctma=0|1", plans it and prints its kernels. */
NapkinTestGemm *napkin_test_gemm_new     (const char     *spec,
                                          GError        **error);
void            napkin_test_gemm_free    (NapkinTestGemm *t);

/* The table of problems the CI test prints and compiles and the GPU check runs. */
const char    **napkin_test_gemm_table   (guint          *n);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinTestGemm, napkin_test_gemm_free)

G_END_DECLS
