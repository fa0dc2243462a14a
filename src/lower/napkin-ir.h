/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* The loop-nest IR (docs/design.md §3). A program is a list of kernels over a set of
 * buffers. Every buffer is indexed by *global* axis coordinates: a tile holds the
 * box [base, base + extent) of each of its axes, where base is the current offset
 * of that axis at the tile's declaration. Statements run over the *current range*
 * of each axis, which loops narrow: the whole axis at a kernel's root, one group
 * inside a grid or warp loop, one chunk inside a stream loop. The interpreter, the
 * pseudocode printer and the CUDA printer all read this one structure. Names in
 * the IR are generated (buffers b0, b1, …; kernels napkin_k0, …); ids and labels
 * from the file only reach printers as comments. */

#define NAPKIN_LOWER_ERROR (napkin_lower_error_quark ())

typedef enum
{
  NAPKIN_LOWER_ERROR_INVALID,      /* the diagram does not validate */
  NAPKIN_LOWER_ERROR_UNSUPPORTED,  /* valid, but the lowering cannot express it yet */
  NAPKIN_LOWER_ERROR_RUNTIME,      /* the interpreter found a fault (out-of-tile read, …) */
  NAPKIN_LOWER_ERROR_TOO_LARGE,    /* too large for the CPU interpreter (napkin-interp.h) */
} NapkinLowerError;

GQuark napkin_lower_error_quark (void);

typedef enum
{
  NAPKIN_BUF_INPUT,       /* an input tensor in device memory */
  NAPKIN_BUF_OUTPUT,      /* an output tensor in device memory */
  NAPKIN_BUF_SCRATCH,     /* an intermediate in device memory, between kernels */
  NAPKIN_BUF_TILE,        /* one instance's tile at a faster level */
} NapkinBufRole;

typedef struct
{
  guint         id;
  char         *name;                      /* generated: b0, b1, … */
  NapkinBufRole role;
  NapkinLevel   level;
  NapkinDtype   dtype;                     /* storage type: tiles are fp32 */
  guint         n_axes;
  guint         axes[NAPKIN_MAX_RANK];     /* diagram axis indices, row-major */
  gint64        extent[NAPKIN_MAX_RANK];   /* static (largest) extent per axis */
  int           tensor;                    /* diagram tensor (input, output), else -1 */
  int           node;                      /* node whose values or statistics it holds */
  const char   *what;                      /* "value", "running max", … (static) */
  int           kernel;                    /* tiles: the kernel that declares it */
} NapkinIrBuffer;

typedef enum
{
  NAPKIN_STMT_LOOP,
  NAPKIN_STMT_DECL,       /* a tile comes to life: its base = the current offsets */
  NAPKIN_STMT_FILL,       /* dst = value over the current range */
  NAPKIN_STMT_COPY,       /* dst = src over the current range (a load or a store) */
  NAPKIN_STMT_COMPUTE,
} NapkinStmtKind;

typedef enum
{
  NAPKIN_LOOP_GRID,       /* parallel groups: thread blocks */
  NAPKIN_LOOP_WARP,       /* parallel groups inside an instance (a nested region) */
  NAPKIN_LOOP_STREAM,     /* sequential chunks carrying state */
} NapkinLoopKind;

typedef enum
{
  NAPKIN_COMPUTE_MAP,           /* dst = fn (src0[, src1]) */
  NAPKIN_COMPUTE_REARRANGE,     /* dst = src0, permuted or reshaped */
  NAPKIN_COMPUTE_CONTRACT,      /* dst (+)= Σ src0·src1 over the axes dst lacks */
  NAPKIN_COMPUTE_REDUCE,        /* dst (+|max)= Σ|max src0 over axis */
  NAPKIN_COMPUTE_ROW_MAX,       /* dst = max over axis of src0 */
  NAPKIN_COMPUTE_ROW_SUMEXP,    /* dst = Σ over axis exp (src0 − src1) */
  NAPKIN_COMPUTE_SOFTMAX,       /* dst = exp (src0 − src1) / src2 */
  NAPKIN_COMPUTE_ROW_MEAN,      /* dst = mean over axis of src0 */
  NAPKIN_COMPUTE_ROW_RSTD,      /* dst = 1/√(mean over axis (src0 − src1)² + eps); src1 may be -1 */
  NAPKIN_COMPUTE_NORMALIZE,     /* dst = (src0 − src1) · src2; src1 may be -1 */
  NAPKIN_COMPUTE_ONLINE_STATS,  /* dst = running max m; src0 = score chunk, src1 = running sum l,
                                   src2 = correction: m' = max (m, max s), c = exp (m − m'),
                                   l = l·c + Σ exp (s − m'), m = m' */
  NAPKIN_COMPUTE_ONLINE_ACC,    /* dst = dst·c + Σ exp (s − m)·v: src0 = s, src1 = v, src2 = m,
                                   src3 = c */
  NAPKIN_COMPUTE_DIVIDE,        /* dst = dst / src0 (finishes the online softmax) */
  NAPKIN_COMPUTE_SCALE,         /* dst = dst · value (finishes a streamed mean) */
  NAPKIN_COMPUTE_MASK,          /* dst = src0 where the mask node keeps the element (by the global
                                   coordinates of its rows and axis), else −∞; a tensor mask adds
                                   src1 (float) or keeps where src1 ≠ 0 (int8) */
  NAPKIN_N_COMPUTES
} NapkinComputeOp;

typedef struct _NapkinIrStmt NapkinIrStmt;

struct _NapkinIrStmt
{
  NapkinStmtKind  kind;

  /* loop */
  NapkinLoopKind  loop;
  guint           axis;       /* also: the axis of row operations and reduce */
  gint64          tile;
  NapkinLevel     level;      /* the level whose instances the loop spans */
  int             region;     /* the region that asked for it */
  GPtrArray      *body;       /* NapkinIrStmt */

  /* decl, fill, copy, compute */
  int             dst;
  int             src[4];
  double          value;      /* fill value, scale factor, eps */

  /* compute */
  NapkinComputeOp op;
  int             node;
  gboolean        accumulate; /* contract, reduce: add into dst (or max into it) */
};

typedef struct
{
  char      *name;            /* generated: napkin_k0, … */
  int        region;          /* outermost region, or -1 for a plain operation */
  int        node;            /* plain kernels: the operation */
  GPtrArray *body;            /* NapkinIrStmt; a region kernel starts with its grid loops */
} NapkinIrKernel;

typedef struct
{
  NapkinDiagram *diagram;
  GPtrArray     *buffers;     /* NapkinIrBuffer */
  GPtrArray     *kernels;     /* NapkinIrKernel */
  gboolean       plain;       /* lowered with every region ignored */
  GArray        *home;        /* int per diagram node: the device-memory buffer of its value, or -1 */
} NapkinIrProgram;

typedef enum
{
  NAPKIN_LOWER_DEFAULT      = 0,
  NAPKIN_LOWER_PLAIN        = 1 << 0,  /* ignore regions: every operation its own kernel(s) */
  NAPKIN_LOWER_FP32_SCRATCH = 1 << 1,  /* intermediates in device memory as fp32 (references) */
} NapkinLowerFlags;

NapkinIrProgram *napkin_ir_lower              (NapkinDiagram          *diagram,
                                               NapkinLowerFlags        flags,
                                               GError                **error);
void             napkin_ir_program_free       (NapkinIrProgram        *program);
const NapkinIrBuffer *napkin_ir_buffer        (const NapkinIrProgram  *program,
                                               int                     id);
/* The device-memory buffer that holds node `node`'s value (an input's tensor, the
 * output it feeds, or a scratch intermediate), or -1 when it stays on chip. */
int              napkin_ir_value_buffer       (const NapkinIrProgram  *program,
                                               int                     node);
const char      *napkin_compute_op_to_string  (NapkinComputeOp         op);
/* Elements of a buffer (product of its static extents). */
gint64           napkin_ir_buffer_elements    (const NapkinIrBuffer   *buffer);
/* Bytes that cross into and out of device memory per launch of the program,
 * counted from the IR's copies (the model's H at the hbm boundary). */
gint64           napkin_ir_hbm_bytes          (const NapkinIrProgram  *program);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinIrProgram, napkin_ir_program_free)

G_END_DECLS
