/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-ir.h"
#include "napkin-plan.h"

G_BEGIN_DECLS

#define NAPKIN_CODEGEN_ERROR (napkin_codegen_error_quark ())

typedef enum
{
  NAPKIN_CODEGEN_ERROR_UNSUPPORTED,   /* e.g. an element type the printer cannot store */
  NAPKIN_CODEGEN_ERROR_COMPILE,       /* NVRTC rejected the source; the message holds its log */
  NAPKIN_CODEGEN_ERROR_NO_COMPILER,   /* built without NVRTC */
} NapkinCodegenError;

GQuark napkin_codegen_error_quark (void);

/* Every kernel takes one NapkinArgs by value: the device-memory buffers in slot
 * order, then the per-block workspace for tiles that do not fit in shared memory. */
#define NAPKIN_CUDA_MAX_ARGS   256
#define NAPKIN_CUDA_THREADS    256

/* A TMA tensor map a kernel takes by value after its NapkinArgs (sm_90a kernels): a
 * row-major view of the buffer in argument slot `slot`, starting `offset` bytes in, of
 * `outer` rows of `inner` elements each `ld` elements apart (0: ld = inner), and, when
 * batch > 1, `batch` such matrices `batch_stride` elements apart (a rank-3 map); copied
 * in boxes of box_inner × box_outer (× 1) elements with the given swizzle. Elements
 * outside the view read as zero and are not written. The runner (and the exported .cu)
 * build it with cuTensorMapEncodeTiled from the buffer's address at each launch. */
typedef struct
{
  int          slot;
  NapkinDtype  dtype;
  gint64       inner, outer;          /* elements: the contiguous axis, then the rows */
  guint        box_inner, box_outer;  /* elements */
  guint        swizzle;               /* bytes: 0 (none), 32, 64 or 128 */
  gint64       ld;                    /* elements between rows; 0: inner */
  gint64       batch;                 /* ≤ 1: a rank-2 map */
  gint64       batch_stride;          /* elements between matrices */
  gint64       offset;                /* bytes from the slot's pointer */
} NapkinCudaTensorMap;

typedef struct
{
  char    *name;             /* napkin_k0, … */
  char    *skeleton;         /* "generic", "gemm-mma", … */
  gint64   grid;             /* thread blocks */
  guint    threads;          /* per block */
  gint64   smem_bytes;       /* shared memory the kernel uses */
  gint64   dynamic_smem;     /* of which dynamic: pass at launch (opt-in above 48 KiB) */
  gint64   workspace_bytes;  /* device memory for tiles, all blocks together */
  char    *note;             /* why a skeleton was or was not used, or NULL */
  GArray  *tensor_maps;      /* NapkinCudaTensorMap, extra parameters in order; NULL: none */
  gboolean persistent;       /* loops over its work: launch MIN (grid, the GPU's SMs) blocks */
  guint    cluster;          /* blocks a cluster along x (0 or 1: none); a persistent grid in
                              * whole clusters */
  char    *owner;            /* the plan kernel it belongs to (its region's name or its operation's
                              * id, as the model names its kernels); NULL: unknown */
  NapkinPlanKind owner_kind; /* that plan kernel's kind: a helper's (a repack beside a GEMM) is
                              * named napkin_plan_kernel_label (owner, owner_kind) by the model */
} NapkinCudaKernel;

typedef struct
{
  NapkinIrProgram *program;  /* owned */
  char            *source;   /* CUDA C: kernels only, extern "C", no #include */
  GPtrArray       *kernels;  /* NapkinCudaKernel */
  GArray          *args;     /* int: IR buffer id of each argument slot */
  int              workspace_slot;   /* -1 when no kernel needs one */
  gint64           workspace_bytes;  /* largest over the kernels */
  guint            flags;            /* the NapkinCodegenFlags it was generated with */
  char            *target;           /* the plan's compile target ("sm_90a", "sm_80"), or NULL */
} NapkinCudaModule;

typedef enum
{
  NAPKIN_CODEGEN_DEFAULT      = 0,
  NAPKIN_CODEGEN_GENERIC_ONLY = 1 << 0,   /* no skeletons: the correctness fallback alone */
  NAPKIN_CODEGEN_SM90A        = 1 << 1,   /* the target is Hopper sm_90a: wgmma skeletons allowed */
} NapkinCodegenFlags;

/* The flags a compile target implies: "sm_90a" (or "compute_90a") → NAPKIN_CODEGEN_SM90A. */
NapkinCodegenFlags napkin_codegen_flags_for_arch (const char *arch);

/* The arguments of cuTensorMapEncodeTiled for `map` over a buffer at device address
 * `address`, checked against the driver's rules (16-byte aligned address and row
 * stride, boxes of 1 to 256 elements, the box's row within the swizzle span). */
typedef struct
{
  guint    rank;           /* 2 or 3 */
  guint64  dims[3];        /* elements: inner, outer, batch */
  guint64  row_stride;     /* bytes between rows */
  guint64  batch_stride;   /* bytes between matrices (rank 3) */
  guint32  box[3];
  guint    element_bytes;
  guint    swizzle;        /* bytes, as in the map */
  guint64  address;        /* the slot's address plus the map's offset */
} NapkinTensorMapEncoding;

gboolean napkin_cuda_tensor_map_encoding (const NapkinCudaTensorMap *map,
                                          guint64                    address,
                                          NapkinTensorMapEncoding   *encoding,
                                          GError                   **error);

/* Takes ownership of the program. Kernels are named PREFIX k0, k1, … (prefix
 * "napkin_" when NULL), so a module and its reference can share one source. */
NapkinCudaModule *napkin_codegen_cuda         (NapkinIrProgram         *program,
                                               NapkinCodegenFlags       flags,
                                               const char              *prefix,
                                               GError                 **error);
/* The same, printing `plan` (the kernel plan whose diagram, plan->diagram, the program
 * was lowered from: an error otherwise): each
 * kernel with the tile primitives of its path, generic ones (and any a printer cannot
 * take, with the reason in the kernel's note) through the generic lowering. A NULL
 * plan prints every kernel generically. napkin_codegen_cuda plans for the profile of the
 * target the flags name (sm_90a: compute capability 9.0, else 8.0). */
NapkinCudaModule *napkin_codegen_cuda_planned (NapkinIrProgram         *program,
                                               const NapkinPlan        *plan,
                                               NapkinCodegenFlags       flags,
                                               const char              *prefix,
                                               GError                 **error);
/* The plan's kernels (docs/plan.md, "The pipeline"): plan->diagram lowered, then printed
 * as napkin_codegen_cuda_planned prints it, for the plan's target. What the model prices
 * is what this prints. */
NapkinCudaModule *napkin_codegen_cuda_for_plan (const NapkinPlan       *plan,
                                               NapkinCodegenFlags       flags,
                                               const char              *prefix,
                                               GError                 **error);
void              napkin_cuda_module_free     (NapkinCudaModule        *module);

/* The paper-style pseudocode of a program: levels, loops, loads and stores. */
char             *napkin_codegen_pseudocode   (const NapkinIrProgram   *program);

/* A standalone .cu: the module's kernels, an fp32 reference from the plain diagram,
 * and a main() that fills seeded inputs, poisons outputs, checks and times with
 * events, printing the same measurement as the runner. Builds with nvcc alone. */
char             *napkin_codegen_standalone   (const NapkinCudaModule  *module,
                                               const NapkinCudaModule  *reference,
                                               const char              *title);

/* Free text as the inside of a C comment: no comment end, no newlines, ASCII only. */
char             *napkin_codegen_escape_comment (const char            *text);

/* NVRTC: compiles the source for "sm_80", "sm_90a", …; returns the cubin. */
gboolean          napkin_nvrtc_available      (void);
GBytes           *napkin_nvrtc_compile        (const char              *source,
                                               const char              *arch,
                                               char                   **log,
                                               GError                 **error);
/* What besides the source decides napkin_nvrtc_compile's output for arch: NVRTC's
 * version and library file, and every option; NULL without NVRTC. */
char             *napkin_nvrtc_fingerprint    (const char              *arch);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinCudaModule, napkin_cuda_module_free)

/* The diagram as plain PyTorch: a function forward(inputs…) of einsum and torch calls
 * that is the diagram's reference (docs/import.md, "Back to code"). Needs the diagram
 * valid. */
char *napkin_codegen_pytorch (NapkinDiagram *diagram,
                              GError       **error);

G_END_DECLS
