/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-arch.h"
#include "napkin-diagram.h"
#include "napkin-plan.h"

G_BEGIN_DECLS

/* Several GPUs (docs/multi-gpu.md). A diagram's gpus region marks one axis parallel
 * across N GPUs; the shard plan says what one GPU runs (the shard diagram: that axis
 * divided by N, the gpus region gone, every other region kept, so the kernel plan,
 * the model and the code generator treat it as any one-GPU diagram), where each input
 * and output lives across the GPUs, and the collectives between the kernels, each
 * priced from the architecture's interconnect. */

/* A split dimension: ≥ 0 an index into the tensor's axes (its memory order),
 * or one of these. */
#define NAPKIN_SHARD_REPLICATED (-1)   /* whole on every GPU */
#define NAPKIN_SHARD_PARTIAL    (-2)   /* whole shape, each GPU holding a partial sum */

/* An input or output of the diagram, by name; the shard diagram keeps the name. */
typedef struct
{
  char       *tensor;
  int         node;          /* its input or output node in the shard diagram */
  gboolean    is_output;
  NapkinDtype dtype;
  guint       rank;
  gint64      shape[NAPKIN_MAX_RANK];   /* whole (all GPUs), in the tensor's axis order */
  int         stored;        /* split dim as stored across the GPUs: the placement declared
                                (inputs: before the program; outputs: after it) */
  int         computed;      /* split dim as the shard's kernels read it (inputs) or leave it
                                (outputs; NAPKIN_SHARD_PARTIAL for a pending sum) */
} NapkinShardTensor;

/* One collective, run between the shard program's kernels. Buffers are in the tensor's
 * axis order; a split dim holds shape[dim] / gpus elements on each GPU, GPU i the
 * i-th slice. */
typedef struct
{
  NapkinCollectiveKind kind;
  char       *tensor;        /* the diagram tensor it serves: an input's or output's name,
                                or for a value cut in two (a pending sum that a later
                                kernel needs whole) the id of the node that makes it */
  char       *src;           /* shard diagram tensor read: an output tensor (cut: "<id>_partial"),
                                or for an input the tensor as stored (same name) */
  char       *dst;           /* shard diagram tensor written: an input tensor (cut: "<id>_sum"),
                                or for an output the tensor as stored (same name) */
  int         node;          /* the shard diagram node: the input node reading dst, or the
                                output node writing src */
  guint       before_kernel; /* runs before this kernel of the shard plan; n_kernels: after the last */
  int         in_split;      /* split dim of src (NAPKIN_SHARD_PARTIAL for all-reduce, reduce-scatter) */
  int         out_split;     /* split dim of dst (NAPKIN_SHARD_REPLICATED for all-reduce, all-gather) */
  NapkinDtype dtype;
  guint       rank;
  gint64      shape[NAPKIN_MAX_RANK];   /* the whole tensor */
  gint64      elements;      /* of the whole tensor */
  gint64      bytes;         /* per rank, nccl-tests' "size": the whole tensor for all-reduce,
                                all-gather and reduce-scatter, one GPU's slice for all-to-all */
  double      seconds;       /* predicted, unchunked (0 for one GPU; -1: the arch has no interconnect) */
  double      bus_bandwidth; /* bytes/s assumed (nccl-tests' bus bandwidth) */
  guint       chunks;        /* 1, or k when the gpus region overlaps it with compute in k chunks */
  double      chunk_seconds; /* one chunk's collective (bytes / k), when chunks > 1 */
} NapkinCollective;

typedef struct
{
  guint          gpus;
  char          *region;       /* the gpus region's name */
  char          *axis;         /* the axis split across the GPUs */
  gint64         axis_size;    /* whole */
  NapkinDiagram *shard;        /* what one GPU runs (owned) */
  NapkinPlan    *plan;         /* the shard's kernel plan (owned; NULL when built without arch) */
  GPtrArray     *tensors;      /* NapkinShardTensor *, inputs then outputs, diagram order */
  GPtrArray     *collectives;  /* NapkinCollective *, in run order */
  guint          chunks;       /* the region's overlap: k ≥ 2, or 1 */
  char          *chunk_axis;   /* the axis cut into k chunks, NULL without overlap */
  guint          comm_sms;     /* SMs the chunked compute leaves to NCCL when overlapped (0: none) */
  double         comm_s;       /* sum of the collectives' seconds */
} NapkinShardPlan;

/* The shard plan of a diagram with a gpus region for `gpus` GPUs (0: the region's
 * "gpus" count; a diagram without a gpus region is one GPU's: no collectives). arch
 * may be NULL: then no kernel plan and no seconds. NULL with an error naming the
 * field (its JSON path) when the gpus region cannot run on `gpus` GPUs. */
NapkinShardPlan *napkin_shard_plan_build   (NapkinDiagram         *diagram,
                                            NapkinArch            *arch,
                                            guint                  gpus,
                                            GError               **error);
void             napkin_shard_plan_free    (NapkinShardPlan       *plan);
json_object     *napkin_shard_plan_to_json (const NapkinShardPlan *plan);
/* The shard plan's tensor of that name, or NULL. */
const NapkinShardTensor *napkin_shard_plan_tensor (const NapkinShardPlan *plan,
                                                   const char            *tensor);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinShardPlan, napkin_shard_plan_free)

G_END_DECLS
