/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>

#include "napkin-types.h"

G_BEGIN_DECLS

/* Errors about an architecture file; messages start with the JSON path. */
#define NAPKIN_ARCH_ERROR (napkin_arch_error_quark ())

typedef enum
{
  NAPKIN_ARCH_ERROR_IO,
  NAPKIN_ARCH_ERROR_PARSE,
  NAPKIN_ARCH_ERROR_FORMAT,
  NAPKIN_ARCH_ERROR_NOT_FOUND,
} NapkinArchError;

GQuark napkin_arch_error_quark (void);

/* Tensor-core element classes: fp8 covers e4m3 and e5m2. */
typedef enum
{
  NAPKIN_TENSOR_FP16,
  NAPKIN_TENSOR_BF16,
  NAPKIN_TENSOR_TF32,
  NAPKIN_TENSOR_FP8,
  NAPKIN_TENSOR_INT8,
  NAPKIN_N_TENSOR_CLASSES
} NapkinTensorClass;

/* Tensor-core instruction paths (docs/model.md, "Tensor-core paths"), in order of
 * preference: a GPU's best path for an element class is the last one it has. */
typedef enum
{
  NAPKIN_TENSOR_PATH_MMA_SYNC,   /* warp-level mma.sync: operands in registers (Ampere on) */
  NAPKIN_TENSOR_PATH_WGMMA,      /* Hopper warpgroup MMA: B (and A) from shared memory, async */
  NAPKIN_TENSOR_PATH_TCGEN05,    /* Blackwell: A, B from shared memory, accumulator in tensor memory */
  NAPKIN_N_TENSOR_PATHS
} NapkinTensorPathKind;

typedef struct
{
  gboolean  present;
  guint     classes;            /* bit (1 << NapkinTensorClass) per operand class it multiplies */
  char     *other_operands;     /* operand types the model has no class for ("fp6 fp4"), or NULL */
  gboolean  a_smem, b_smem;     /* operands read from shared memory by the instruction itself */
  gboolean  accumulator_tmem;   /* accumulator in tensor memory (else registers) */
  double    tmem_bytes_per_sm;  /* tensor memory, 0: none */
  guint     cta_pair;           /* 2: two SMs share one MMA, each reading half of B */
  guint     rows;               /* rows of A one issuing unit covers (warp 16, warpgroup 64, CTA 128) */
  gboolean  tma;                /* operands arrive by the tensor memory accelerator */
  gboolean  generated;          /* Napkin's code generator emits this path */
  char     *source;
} NapkinTensorPath;

typedef struct
{
  double capacity_bytes;       /* hbm, l2: whole device; smem, registers: one SM */
  double bandwidth;            /* bytes per second, whole device */
  double energy_pj_per_byte;
  double latency_s;            /* hbm only, optional: a load's round trip under load; 0: unknown */
} NapkinArchLevel;

/* The collectives of several GPUs (docs/multi-gpu.md). */
typedef enum
{
  NAPKIN_COLLECTIVE_ALL_REDUCE,
  NAPKIN_COLLECTIVE_ALL_GATHER,
  NAPKIN_COLLECTIVE_REDUCE_SCATTER,
  NAPKIN_COLLECTIVE_ALL_TO_ALL,
  NAPKIN_N_COLLECTIVES
} NapkinCollectiveKind;

/* One tier of links between GPUs: NVLink inside a node, the network between nodes.
 * A collective over N GPUs of `bytes` (nccl-tests' size) takes
 *   t = latency_s · steps (N) + factor (N) · bytes / bus_bandwidth[kind]
 * (docs/model.md, "Collectives"). */
typedef struct
{
  char   *link;                    /* "NVLink 4 (18 links)", "InfiniBand NDR": words, not parsed */
  guint   links;                   /* links per GPU (0: not a point-to-point fabric) */
  double  link_bandwidth;          /* bytes/s per GPU per direction, datasheet */
  gboolean nvswitch;               /* every pair at full bandwidth through switches */
  double  latency_s;               /* α: per step of the ring */
  double  bus_bandwidth[NAPKIN_N_COLLECTIVES];   /* bytes/s, nccl-tests' bus bandwidth */
  /* Optional (node tier), for a collective beside compute (docs/model.md, "Overlap"):
   * one NCCL CTA's bus bandwidth when the communicator is held to a few CTAs, the
   * share of the running chunk's compute a collective launched beside it waits for SMs
   * to drain, and the share of the time it then runs beside them that the GEMMs lose;
   * 0: not measured. */
  double  cta_bus_bandwidth;
  double  overlap_drain_share;
  double  overlap_compute_loss;
  gboolean present;
} NapkinLinkTier;

typedef struct
{
  guint          gpus_per_node;    /* GPUs one node joins by its fabric */
  NapkinLinkTier node;             /* inside a node */
  NapkinLinkTier network;          /* between nodes (optional: present FALSE) */
} NapkinInterconnect;

/* One GPU, as figures. Read-only once loaded; shared by reference. */
typedef struct
{
  char           *id;
  char           *name;
  char           *family;
  char           *compute_capability;
  char           *path;               /* file it came from */
  char           *shadows;            /* a later file of the same id that this one hides from the
                                         registry (a user's h100.json over the bundled one), or NULL */

  guint           sms;
  double          clock_hz;           /* boost clock: CUDA cores, SFUs, shared memory */
  double          tensor_clock_hz;    /* clock of the datasheet's tensor peaks */
  guint           max_threads_per_sm;
  guint           max_warps_per_sm;
  guint           max_blocks_per_sm;
  guint           registers_per_sm;
  guint           max_registers_per_thread;
  double          smem_max_per_block;
  double          smem_reserved_per_block;
  double          launch_overhead_s;

  NapkinArchLevel levels[NAPKIN_N_LEVELS];

  double          tensor_per_sm_clock[NAPKIN_N_TENSOR_CLASSES];   /* dense FLOPs; 0: none */
  /* The warp-level mma.sync path where it falls short of the dense peak (Hopper:
   * only wgmma reaches it); 0: mma.sync reaches tensor_per_sm_clock. Optional
   * "tensor_mma_sync" object of the file. */
  double          tensor_mma_sync_per_sm_clock[NAPKIN_N_TENSOR_CLASSES];
  double          cuda_fp32_per_sm_clock;
  double          cuda_fp16_per_sm_clock;
  double          sfu_per_sm_clock;
  /* Tensor-core paths; a file without "tensor_paths" has mma.sync alone, every class. */
  NapkinTensorPath tensor_paths[NAPKIN_N_TENSOR_PATHS];
  double          energy_pj_per_tensor_flop;
  double          energy_pj_per_cuda_flop;
  /* Optional "interconnect" object; interconnect.node.present FALSE when the file has none. */
  NapkinInterconnect interconnect;

  /*< private >*/
  GHashTable     *sources;            /* figure path ("levels.hbm.bandwidth_bytes_per_s") → source */
  GPtrArray      *source_order;       /* the paths, in file order */
  gint            ref_count;
} NapkinArch;

/* The largest profile read: the bundled ones are under 16 KB. */
#define NAPKIN_ARCH_MAX_FILE_SIZE (1024 * 1024)

NapkinArch        *napkin_arch_ref                (NapkinArch        *arch);
void               napkin_arch_unref              (NapkinArch        *arch);
NapkinArch        *napkin_arch_load_from_data     (const char        *data,
                                                   gssize             length,
                                                   GError           **error);
NapkinArch        *napkin_arch_load_from_file     (const char        *path,
                                                   GError           **error);

/* Where a figure comes from, by its JSON path; NULL if there is no such figure. */
const char        *napkin_arch_get_source         (const NapkinArch  *arch,
                                                   const char        *path);
/* Every figure's path, in file order (for listing figures with their sources). */
const GPtrArray   *napkin_arch_get_figure_paths   (const NapkinArch  *arch);

/* Device-wide rates in operations per second. */
double             napkin_arch_tensor_rate        (const NapkinArch  *arch,
                                                   NapkinTensorClass  klass);
/* The mma.sync path's rate: tensor_mma_sync where the profile gives it, else the
 * dense peak (napkin_arch_tensor_rate). */
double             napkin_arch_mma_sync_rate      (const NapkinArch  *arch,
                                                   NapkinTensorClass  klass);
/* Hopper (compute capability 9.x, sm_90a): the warpgroup instructions (wgmma)
 * exist; napkin_model_region_uses_wgmma says which regions take them. */
gboolean           napkin_arch_has_wgmma          (const NapkinArch  *arch);
/* The best tensor-core path the GPU has for operands of `klass` (the last in
 * NapkinTensorPathKind's order whose operands include it); *out_klass is `klass`, or
 * fp16 where no path multiplies it (operands widened). With `generated`, only the
 * paths Napkin's code generator emits. */
NapkinTensorPathKind napkin_arch_best_path       (const NapkinArch  *arch,
                                                   NapkinTensorClass  klass,
                                                   gboolean           generated,
                                                   NapkinTensorClass *out_klass);
const char        *napkin_tensor_path_to_string   (NapkinTensorPathKind path);
double             napkin_arch_cuda_rate          (const NapkinArch  *arch,
                                                   NapkinDtype        dtype);
double             napkin_arch_sfu_rate           (const NapkinArch  *arch);
const char        *napkin_tensor_class_to_string  (NapkinTensorClass  klass);
/* The tensor-core class that multiplies elements of `dtype`; FALSE for fp32. */
gboolean           napkin_tensor_class_for_dtype  (NapkinDtype        dtype,
                                                   NapkinTensorClass *out);

const char        *napkin_collective_to_string    (NapkinCollectiveKind kind);
/* The ring's steps and its bytes factor for N GPUs: all-reduce 2(N−1) and 2(N−1)/N,
 * all-gather, reduce-scatter and all-to-all N−1 and (N−1)/N. */
guint              napkin_collective_steps        (NapkinCollectiveKind kind,
                                                   guint              gpus);
double             napkin_collective_factor       (NapkinCollectiveKind kind,
                                                   guint              gpus);
/* Predicted seconds of one collective of `bytes` (nccl-tests' size per rank) over
 * `gpus` GPUs: the node tier up to gpus_per_node, the network tier beyond. 0 for one
 * GPU; -1 when the profile has no interconnect (or no network tier and gpus exceeds a
 * node). *bus_bandwidth (optional) gets the bus bandwidth assumed. */
double             napkin_arch_collective_seconds (const NapkinArch  *arch,
                                                   NapkinCollectiveKind kind,
                                                   guint              gpus,
                                                   double             bytes,
                                                   double            *bus_bandwidth);
/* The same on a communicator held to `ctas` CTAs (ctas > 0; docs/model.md, "Overlap"):
 * its bus bandwidth MIN (the collective's, ctas · the tier's per-CTA bandwidth, else
 * ctas / NAPKIN_NCCL_CHANNELS of the collective's when the profile has none). */
#define NAPKIN_NCCL_CHANNELS 16   /* NCCL's channels on an NVLink ring (estimate) */
double             napkin_arch_collective_seconds_ctas (const NapkinArch  *arch,
                                                        NapkinCollectiveKind kind,
                                                        guint              gpus,
                                                        double             bytes,
                                                        guint              ctas,
                                                        double            *bus_bandwidth);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinArch, napkin_arch_unref)

/* What-if profiles: a copy with its own id and name whose figures the caller may
 * change before sharing it (then mark each changed figure's source). */
NapkinArch        *napkin_arch_copy               (const NapkinArch  *arch,
                                                   const char        *id,
                                                   const char        *name);
void               napkin_arch_set_source         (NapkinArch        *arch,
                                                   const char        *path,
                                                   const char        *source);
/* A profile written by `napkin-cli calibrate`: a figure's source starts with
 * "measured by napkin-cli calibrate" (datasheet profiles quote a few measured
 * figures too; those do not count). */
gboolean           napkin_arch_is_measured        (const NapkinArch  *arch);
/* The profile as a data/archs file (figures with their sources), and written to
 * path atomically; napkin_arch_load_from_file reads it back. */
struct json_object *napkin_arch_to_json           (const NapkinArch  *arch);
gboolean           napkin_arch_save               (const NapkinArch  *arch,
                                                   const char        *path,
                                                   GError           **error);
/* Where a profile that is not one of Napkin's own comes from, for every place that
 * uses it (analyze, compare, plan, tune, the editor's selector): "h100: your profile
 * /home/u/.local/share/napkin/archs/h100.json, used instead of /usr/share/…/h100.json".
 * A profile in the user's data dir ($XDG_DATA_HOME/napkin/archs, where `napkin-cli
 * calibrate` and What-If write) is the user's; so is any that hides another file of its
 * id. NULL for the others. */
char              *napkin_arch_dup_origin         (const NapkinArch  *arch);
/* The figures the model divides by are positive and finite; the error names the figure. */
gboolean           napkin_arch_check              (const NapkinArch  *arch,
                                                   GError           **error);

/* Every architecture found, by id. Directories are searched in order and the
 * first file with an id wins: $NAPKIN_ARCH_DIR (colon-separated), then archs/ in each
 * of napkin_data_dirs () (the user's data dir, $XDG_DATA_DIRS, the installed datadir). */
typedef struct _NapkinArchRegistry NapkinArchRegistry;

NapkinArchRegistry *napkin_arch_registry_new      (void);
/* Loads every *.json in dir. Files that fail are kept as errors, not fatal. */
void               napkin_arch_registry_add_dir   (NapkinArchRegistry *self,
                                                   const char         *dir);
/* The shared registry of the default directories, loaded once. */
NapkinArchRegistry *napkin_arch_registry_get_default (void);
void               napkin_arch_registry_free      (NapkinArchRegistry *self);
guint              napkin_arch_registry_count     (NapkinArchRegistry *self);
NapkinArch        *napkin_arch_registry_get       (NapkinArchRegistry *self,
                                                   guint               index);
/* Lookup by id (case-insensitive); a clear error listing the known ids. */
NapkinArch        *napkin_arch_registry_lookup    (NapkinArchRegistry *self,
                                                   const char         *id,
                                                   GError            **error);
/* The first profile of this compute capability ("9.0"), or NULL: the profile a GPU is
 * planned for when neither its name nor the user names one. */
NapkinArch        *napkin_arch_registry_for_compute_capability (NapkinArchRegistry *self,
                                                   const char         *compute_capability);
/* Adds a profile, or replaces the one with its id in place (holders of the
 * old one keep it valid until the registry is freed). Takes a reference. */
void               napkin_arch_registry_add       (NapkinArchRegistry *self,
                                                   NapkinArch         *arch);
/* Messages of files that failed to load ("PATH: json.path: why"). */
const GPtrArray   *napkin_arch_registry_errors    (NapkinArchRegistry *self);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinArchRegistry, napkin_arch_registry_free)

G_END_DECLS
