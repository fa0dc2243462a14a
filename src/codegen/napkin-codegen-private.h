/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-codegen.h"
#include "napkin-plan.h"

G_BEGIN_DECLS

const char *_napkin_cuda_ctype        (NapkinDtype             dtype);
/* The helpers every generated source starts with (types, napkin_ld/napkin_st, the fp8
 * codec, the fused maps' functions), guarded so that two sources can be joined. */
char       *_napkin_cuda_prelude      (void);
/* Frees a NapkinCudaKernel (the free function of module->kernels). */
void        _napkin_cuda_kernel_free  (gpointer                data);
/* A template parameter KEY (the macro NKP_KEY, or a fragment block) and its value, freed by
 * the instantiation (docs/codegen.md, "Kernel sources"). */
typedef struct
{
  const char *key;
  char       *value;
} NapkinSkeletonParam;

char       *_napkin_skeleton_instantiate (const char           *template,
                                          NapkinSkeletonParam  *params,
                                          guint                 n_params);
/* A growing parameter list (of NapkinSkeletonParam) starting with the N of T, for a
 * template whose parameters come in groups. */
GArray     *_napkin_skeleton_params      (const NapkinSkeletonParam *t,
                                          guint                      n);

/* The asm operands of a wgmma's n fp32 accumulators d[0 … n − 1], one per register (so
 * the call is printed for each size rather than written out): "%0, %1, …" appended to
 * `regs` (unless NULL) and "\"+f\" (d[0]), …" to `outs`. */
void        _napkin_wgmma_accumulators (gint64   n,
                                        GString *regs,
                                        GString *outs);

/* ---- printers of the kernel plan's tile primitives (docs/plan.md) ------------------------ */

/* Where a plan buffer lives for a printed kernel: the NapkinArgs slot whose pointer it
 * starts from and a byte offset (256-aligned) into it (plan scratch buffers live in the
 * module's workspace, after NAPKIN_WS_PLAN bytes reserved at its start). In CUDA:
 * `(T *) ((char *) args.p[slot] + offset)`. */
typedef struct
{
  int    slot;
  gint64 offset;
} NapkinCudaRef;

/* What a plan printer needs: the program (for buffers), the module being filled, the
 * argument slot of every IR buffer, the output. */
typedef struct
{
  const NapkinPlan      *plan;
  const NapkinIrProgram *program;
  NapkinCudaModule      *module;
  const int             *slot;
  GString               *out;
} NapkinPrintCtx;

/* The slot and offset of a plan buffer; FALSE with an error when the program holds no
 * such device-memory buffer. */
gboolean    _napkin_cuda_ref          (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanBuffer *buffer,
                                       NapkinCudaRef          *ref,
                                       GError                **error);
/* `(T *) ((char *) args.p[slot] + offset)` for a buffer of element type `dtype`. */
char       *_napkin_cuda_ref_expr     (const NapkinCudaRef    *ref,
                                       NapkinDtype             dtype);
/* `v` as a CUDA float literal ("2.0f", "1e-05f"); infinities as NAPKIN_NEG_INF. */
char       *_napkin_cuda_float_literal (double                  v);
/* `x` (fp32) rounded to what `dtype` holds, kept in fp32: e.g. "napkin_round_f16 (x)". */
char       *_napkin_cuda_cast_expr    (NapkinDtype             dtype,
                                       const char             *x);
/* The CUDA expression applying `map` to the fp32 value `x`, with `y` the other operand
 * already loaded as fp32 (NULL when unary): e.g. "napkin_gelu (x)". */
/* A map's expression on x (and y): `fast` takes the fast forms (__expf) the tile kernels
 * use, else the exact ones the generic kernels and the fp32 reference print. */
char       *_napkin_cuda_fn_expr      (NapkinMapFn             fn,
                                       double                  alpha,
                                       NapkinDtype             dtype,
                                       const char             *x,
                                       const char             *y,
                                       gboolean                fast);
char       *_napkin_cuda_map_expr     (const NapkinPlanMap    *map,
                                       const char             *x,
                                       const char             *y);

/* Each prints one plan kernel named `name` into ctx->out and appends its
 * NapkinCudaKernel to ctx->module; FALSE with an error naming the limit otherwise. */
gboolean    _napkin_print_gemm_wgmma  (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_gemm_mma    (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_gemm_skinny (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_split_reduce (const NapkinPrintCtx  *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_repack      (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_rows        (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
gboolean    _napkin_print_elementwise (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);
/* Attention (kernels/attn-sm90.cu, attn-sm80.cu, the flash skeletons for today's aligned
 * shapes) and the split-KV combine after it (kernels/attn-combine.cu). */
gboolean    _napkin_print_attention   (const NapkinPrintCtx   *ctx,
                                       const NapkinPlanKernel *kernel,
                                       const char             *name,
                                       GError                **error);

G_END_DECLS
