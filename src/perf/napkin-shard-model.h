/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-model.h"
#include "napkin-shard.h"

G_BEGIN_DECLS

/* Several GPUs priced (docs/multi-gpu.md, docs/model.md "Collectives", "Overlap"):
 * one GPU's kernels (the shard diagram through the one-GPU model), the collectives
 * between them, their sum, and the time when the gpus region overlaps collectives
 * with the compute that makes their data. */
typedef struct
{
  NapkinShardPlan *shard;          /* owned */
  NapkinAnalysis  *analysis;       /* the shard diagram on one GPU (owned) */
  double           compute_s;      /* the shard's predicted time */
  double           comm_s;         /* the collectives, one after another */
  double           total_s;        /* compute + collectives, no overlap */
  double           overlapped_s;   /* with the region's overlap; = total_s without */
  double           gain_s;         /* chunked_s − overlapped_s: what overlapping saves on the same chunked
                                    * schedule (docs/model.md, "SMs left to NCCL"); negative: it costs */
  double           chunked_s;      /* the chunks one after another: every chunk's kernels, then its collective */
  guint            comm_sms;       /* SMs the overlapped chunks leave to NCCL (the region's, or as repriced) */
  double           chunk_compute_s;   /* one chunk's compute as overlapped (on SMs − comm_sms) */
  double           chunk_comm_s;      /* one chunk's collective beside that compute */
  double           chunk_comm_alone_s;/* the same alone (the last chunk's) */
  char            *note;           /* why the overlap hides nothing (or less), NULL: it pipelines */
} NapkinShardAnalysis;

NapkinShardAnalysis *napkin_shard_analyze          (NapkinDiagram              *diagram,
                                                    NapkinArch                 *arch,
                                                    guint                       gpus,
                                                    const NapkinAnalyzeOptions *options,
                                                    GError                    **error);
/* The overlapped, chunked and gain figures again for `comm_sms` SMs left to NCCL
 * (what the runner measures for each of several values). */
void                 napkin_shard_analysis_overlap (NapkinShardAnalysis        *analysis,
                                                    NapkinArch                 *arch,
                                                    const NapkinAnalyzeOptions *options,
                                                    guint                       comm_sms);
void                 napkin_shard_analysis_free    (NapkinShardAnalysis        *analysis);
/* The shard plan's JSON plus "compute_s", "total_s", "overlapped_s", "gain_s",
 * "chunked_s", "overlap_note" (when there is one) and "kernel_times": one GPU's
 * predicted seconds per kernel. */
json_object         *napkin_shard_analysis_to_json (NapkinShardAnalysis        *analysis);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinShardAnalysis, napkin_shard_analysis_free)

G_END_DECLS
