/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-codegen.h"

G_BEGIN_DECLS

const char *_napkin_cuda_ctype        (NapkinDtype             dtype);
/* Prints a strong skeleton for a recognised kernel and records it in the module;
 * FALSE leaves the kernel to the generic printer. */
gboolean    _napkin_cuda_try_skeleton (const NapkinIrProgram  *program,
                                       const NapkinIrKernel   *kernel,
                                       NapkinCudaModule       *module,
                                       const int              *slot,
                                       const char             *prefix,
                                       guint                   index,
                                       GString                *out,
                                       char                  **note);

/* A template's @KEY@ and its value (freed by the instantiation). */
typedef struct
{
  const char *key;
  char       *value;
} NapkinSkeletonParam;

char       *_napkin_skeleton_instantiate (const char           *template,
                                          NapkinSkeletonParam  *params,
                                          guint                 n_params);

/* A GEMM region the skeletons recognised: C[M,N] = A[M,K]·B[K,N], row-major, tiles
 * BM×BN with K in chunks of BK, `stages` buffers deep. */
typedef struct
{
  const NapkinRegion *region;
  const NapkinNode   *node;          /* the contraction */
  NapkinDtype         ab_dtype, c_dtype;
  gint64              M, N, K, BM, BN, BK, stages;
  int                 a_slot, b_slot, c_slot;
} NapkinGemmShape;

/* The Hopper GEMM skeleton (kernels/gemm-wgmma.cu, src/codegen/napkin-skeleton-wgmma.c):
 * prints it and records the kernel when the module targets sm_90a and the shape fits;
 * otherwise FALSE, with *note saying why when the target was sm_90a. */
gboolean    _napkin_cuda_gemm_wgmma   (const NapkinGemmShape  *shape,
                                       NapkinCudaModule       *module,
                                       const char             *name,
                                       GString                *out,
                                       char                  **note);

/* An attention region the skeletons recognised: O = softmax(α·Q·Kᵀ)·V over `batch`
 * (batch, head) pairs, Q[NQ,D], K and V [NKV,D], O[NQ,D], row-major; groups of BQ
 * queries, keys in chunks of BKV, `stages` buffers deep. */
typedef struct
{
  const NapkinRegion *region;
  NapkinDtype         dtype, o_dtype;
  gint64              batch, NQ, NKV, D, BQ, BKV, stages;
  double              alpha;
  int                 q_slot, k_slot, v_slot, o_slot;
} NapkinFlashShape;

/* The Hopper attention skeleton (kernels/flash-wgmma.cu, napkin-skeleton-flash-wgmma.c):
 * like _napkin_cuda_gemm_wgmma, FALSE with *note saying why when the target was sm_90a. */
/* A device function FNAME (float (&d)[n/2], desc_a, desc_b, int accumulate) issuing one
 * wgmma m64nNk16 with fp32 accumulators, both operands from shared memory (A K-major; B
 * K-major, or N-major through the transpose bit when b_transposed): one asm operand per
 * accumulator register, so it is printed for each N rather than written out per size. */
char       *_napkin_wgmma_ss_function (const char *fname,
                                       gint64      n,
                                       const char *mma,
                                       gboolean    b_transposed,
                                       gboolean    clobber_memory);
gboolean    _napkin_cuda_flash_wgmma  (const NapkinFlashShape *shape,
                                       NapkinCudaModule       *module,
                                       const char             *name,
                                       GString                *out,
                                       char                  **note);

G_END_DECLS
