/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-arch.h"
#include "napkin-diagram.h"
#include "napkin-plan.h"

G_BEGIN_DECLS

/* The IO/FLOP model of docs/design.md §2 and docs/model.md, over a relabeled diagram. */

typedef enum
{
  NAPKIN_RESOURCE_TENSOR,
  NAPKIN_RESOURCE_CUDA,
  NAPKIN_RESOURCE_SFU,
  NAPKIN_RESOURCE_HBM,
  NAPKIN_RESOURCE_L2,
  NAPKIN_RESOURCE_SMEM,
  NAPKIN_RESOURCE_REGISTERS,
  NAPKIN_N_RESOURCES
} NapkinResource;

/* One tensor crossing a region boundary (or, outside regions, read from or
 * written to device memory by one operation). */
typedef struct
{
  char        *tensor;          /* tensor name for inputs/outputs, else producing node id */
  guint        node;            /* the node whose result moves */
  NapkinLevel  from;            /* the slower level it is read from or written to */
  NapkinLevel  to;              /* the faster level */
  gboolean     is_output;
  NapkinDtype  dtype;
  gint64       tile_elements;
  gint64       count;           /* how many times the tile moves */
  gint64       elements;
  gint64       bytes;
  /* For tiles read from device memory: what reaches HBM after concurrent
   * instances of one wave share tiles through L2 (= elements without reuse). */
  gint64       hbm_elements;
  gint64       hbm_bytes;
  guint        sharers;         /* instances of a wave that read each tile */
} NapkinTransfer;

typedef struct
{
  char        *name;
  guint        region;          /* index in the diagram */
  int          parent;          /* index in NapkinAnalysis.regions, -1: device memory */
  NapkinLevel  level;
  NapkinLevel  parent_level;
  char        *tile;            /* "m=128 n=128 k~64" (~: streamed) */
  gint64       groups;          /* parallel groups per parent step */
  gint64       chunks;          /* stream chunks per group */
  gint64       instances;       /* parallel instances over the whole run */
  gint64       steps;           /* instances × chunks */
  guint        threads;
  guint        stages;
  gint64       footprint_elements;
  gint64       footprint_bytes;
  gint64       plan_smem_bytes;      /* shared memory its kernel's plan asks for a block (0: none) */
  gint64       intermediate_bytes;   /* largest live set of values made and used inside */
  guint        registers_per_thread;
  gint64       per_sm;
  const char  *binding_limit;   /* "shared memory", "registers", "warps", "blocks" (N_(): show with _()) */
  gint64       waves;
  gint64       transfer_elements;
  gint64       transfer_bytes;
  GArray      *transfers;       /* NapkinTransfer */
  gboolean     feasible;
} NapkinRegionCost;

/* A kernel: a top-level region, or one operation outside every region. */
typedef struct
{
  char          *name;
  int            region;        /* index in NapkinAnalysis.regions, -1 for a plain operation */
  double         time_s[NAPKIN_N_RESOURCES];   /* before wave quantisation */
  double         quantisation;  /* ≥ 1: SM slots of the last wave left idle */
  double         fill;          /* ≤ 1: the share of the SMs its grid gives a block (0: all); device
                                 * memory moves through those SMs alone (docs/model.md §7) */
  double         l2_fill;       /* ≤ 1, where L2 is drawn at a smaller share than device memory
                                 * (0: as fill) */
  guint          launches;      /* kernel launches (passes of a plain softmax or normalize) */
  gboolean       overlaps;      /* loads can hide behind compute: ≥ 2 stages or ≥ 2 blocks per SM */
  const char    *tensor_path;   /* "wgmma", "mma.sync", "library" (a plain operation), NULL: no tensor work */
  double         time_s_predicted;  /* overlap_s if it overlaps, else serial_s */
  double         overlap_s;     /* max over resources (quantised) + launch */
  double         serial_s;      /* sum over resources (quantised) + launch */
  double         chunk_s;       /* per stream chunk: the block's barrier and refill wait */
  double         chunk_floor_s; /* wgmma attention: the least its key chunks take, each a fixed
                                 * chain of waits, reductions and O's rescale (§14c) */
  gboolean       tile_chain;    /* … persistent: a chain of tiles that the Q and O stream beside
                                 * it hides only in part (the two added as a 3-norm) */
  double         turns_s;       /* rows kernels: the least their block slots' turns take, a row a
                                 * turn (§7c, "Turns"); bound by device memory's round trips */
  double         latency_s;     /* exposed latency chains (the rows skeleton's, §7c) */
  NapkinResource bound;
  /* from the kernel plan (docs/plan.md): what runs, on which path, and why generic */
  NapkinPath     path;
  const char    *plan_kind;     /* "gemm", "rows", "repack", … (static) */
  char          *reason;        /* generic: why; NULL otherwise */
  char          *note;          /* the plan's one line */
  /* On the GPU's best tensor-core path (docs/model.md, "Best path"): what the kernel
   * would take in a kernel written for that path, whether or not Napkin generates it */
  double         best_s;
  NapkinResource best_bound;
  const char    *best_path;     /* "tcgen05", "wgmma", "mma.sync"; NULL: no tensor work */
  gboolean       best_generated;/* Napkin's code generator emits best_path */
  gboolean       exp_on_fma;    /* part of its exponentials run on the FMA units (docs/model.md) */
  double         sfu_all_s;     /* the SFU time with every exponential on the SFU (§7f) */
  double         issue_extra_s; /* exp on FMA: how much longer the softmax phase (the busier of
                                 * the SFU and the issue slots) is than with all on the SFU (§7f) */
} NapkinKernelCost;

typedef struct
{
  gint64 transfer_elements;
  gint64 transfer_bytes;
  double time_s;
} NapkinLevelCost;

typedef struct
{
  NapkinArch      *arch;
  gboolean         has_dtype;
  NapkinDtype      dtype;            /* the --dtype override */
  gboolean         paper;            /* no L2 reuse */
  gboolean         no_wgmma;

  NapkinFlops      flops;            /* what the kernels compute: a mask's hidden pairs not counted */
  gint64           flops_total;
  gint64           tensor_flops[NAPKIN_N_TENSOR_CLASSES];
  gint64           fp32_contract_flops;   /* contractions on CUDA cores */

  NapkinLevelCost  levels[NAPKIN_N_LEVELS];
  double           resource_s[NAPKIN_N_RESOURCES];   /* summed over kernels, unquantised */
  GArray          *regions;          /* NapkinRegionCost */
  GArray          *kernels;          /* NapkinKernelCost */

  double           predicted_time_s; /* full overlap in each kernel that can overlap (docs/model.md §7) */
  double           overlap_time_s;   /* full overlap in every kernel */
  double           serial_time_s;    /* no overlap */
  guint            launches;         /* the run's kernel launches, helpers and extra launches included */
  double           launch_run_s;     /* what the run's launches change against each kernel's price
                                        (each priced as timed alone): the first one's start, later
                                        ones queued behind the last (docs/model.md, "Launches"); in
                                        the totals above, not in the kernels' times */
  double           throughput;       /* contraction FLOP/s (all FLOPs if none) at predicted_time_s */
  double           serial_throughput;/* the same at serial_time_s */
  double           tensor_throughput;/* FLOP/s of the contractions at the tensor-core rates alone */
  double           intensity;        /* FLOPs per device-memory byte */
  double           energy_j;
  NapkinResource   bound;

  /* The same work on each kernel's best tensor-core path (docs/model.md, "Best path"):
   * the GPU's capability, beside predicted_time_s, the time of the code Napkin generates */
  double           best_time_s;
  double           best_throughput;
  NapkinResource   best_bound;       /* of the kernel that takes longest on its best path */
  const char      *best_path;        /* that kernel's best path; NULL: no tensor work */
  gboolean         best_generated;   /* every kernel's best path is one Napkin generates */
  char            *best_note;        /* why not, when not: the first kernel off its best path */

  NapkinPlan      *plan;             /* the kernel plan priced (owned) */
  guint            generic_kernels;  /* kernels the plan leaves on the generic lowering */

  gboolean         feasible;
  GPtrArray       *errors;           /* char *: "regions[0].marks.k: …" */
  GArray          *error_regions;    /* int per error: the region it is about, -1 for none */
  GPtrArray       *warnings;         /* char * */
} NapkinAnalysis;

typedef struct
{
  gboolean    has_dtype;
  NapkinDtype dtype;        /* every tensor's element type (quantisation) */
  gboolean    trusted;      /* the diagram is known valid: skip validation */
  gboolean    paper;        /* the paper's model: no tile sharing through L2, one tensor rate */
  gboolean    no_wgmma;     /* code without the wgmma skeletons: every region on mma.sync */
  guint       sms;          /* 0: the arch's; fewer: the kernels priced on that many SMs, the
                               plan still the arch's (a persistent grid held to fewer SMs) */
} NapkinAnalyzeOptions;

/* NULL with an error only when the diagram is invalid or too large for 64 bits;
 * an infeasible relabeling is a result (feasible FALSE, errors say why). */
NapkinAnalysis *napkin_analyze                 (NapkinDiagram               *diagram,
                                                NapkinArch                  *arch,
                                                const NapkinAnalyzeOptions  *options,
                                                GError                     **error);
void            napkin_analysis_free           (NapkinAnalysis              *analysis);
/* What `launches` kernels change in one run against each priced alone (docs/model.md,
 * "Launches"): the analysis's launch_run_s for that many; 0 for none or the paper's model. */
double          napkin_run_launches_s          (const NapkinArch            *arch,
                                                guint                        launches,
                                                gboolean                     paper);
json_object    *napkin_analysis_to_json        (NapkinAnalysis              *analysis);
const char     *napkin_resource_to_string      (NapkinResource               resource);
const char     *napkin_resource_to_label       (NapkinResource               resource);

/* Whether region `region` of `diagram` runs on Hopper's warpgroup tensor-core path
 * (wgmma) rather than mma.sync: the rule shared with codegen (docs/model.md,
 * "Instruction paths"). All of: `arch` is sm_90a (compute capability 9.x); the region
 * is at shared memory; the contractions' operands from outside it are fp16 or bf16
 * (`diagram`'s types); one contraction (GEMM): BM % 64 == 0, BN % 8 == 0 and ≤ 256,
 * BK % 64 == 0, M % BM == N % BN == K % BK == 0; two or more (attention): q tile
 * % 64 == 0, key tile % 16 == 0 and ≤ 256, d ∈ {64, 128} whole; and stages × the
 * streamed operand tiles (+ Q for attention) fit the arch's shared memory per block
 * (227 KB on H100/H200). */
gboolean        napkin_model_region_uses_wgmma (const NapkinArch            *arch,
                                                NapkinDiagram               *diagram,
                                                guint                        region);

/* The group size above which a tiled matmul (both output axes grouped by g,
 * the contracted axis streamed) stops being bound by device memory:
 * g* = R · β / BW for tensor rate R, element bytes β, HBM bandwidth BW. */
double          napkin_matmul_threshold        (const NapkinArch            *arch,
                                                NapkinTensorClass            klass,
                                                guint                        bytes_per_element);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinAnalysis, napkin_analysis_free)

G_END_DECLS
