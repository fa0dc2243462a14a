/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-model.h"

G_BEGIN_DECLS

/* Search over relabelings (beyond the paper, which picks tiles by hand): every
 * legal tile size of every parallel or streamed mark, ranked by the model. */

typedef struct
{
  char           *tiles;               /* "block.m=128 block.n=128 block.k=64" */
  char          **specs;               /* --tile specs: "block.m=parallel:128", "block.stages=3" */
  double          predicted_time_s;
  double          serial_time_s;
  double          throughput;
  NapkinResource  bound;
  gint64          hbm_bytes;
  gint64          footprint_bytes;     /* largest region footprint */
  gint64          per_sm;              /* smallest occupancy among regions */
  guint           off_best_path;       /* kernels generated on a slower tensor path than the
                                        * GPU's best (mma.sync on Hopper): ranked after every
                                        * candidate without any (docs/model.md §9) */
  /*< private >*/
  guint          *choices;             /* the search's index per knob */
  char           *kernel_key;          /* the choices that reach the generated kernels, and the
                                        * kernels as launched (stages the plan clamps): one
                                        * candidate per key is kept (docs/model.md §9) */
} NapkinTuneCandidate;

/* What one relabeling must gain over another for the model to tell them apart: its
 * predictions of kernels that differ only in tiles and stages are this close to noise
 * (docs/perf-notes.md, "Session 16": key chunks of 32 priced 2 % faster than chunks of
 * 128 ran 1.4× slower). */
#define NAPKIN_TUNE_RESOLUTION 0.03

typedef struct
{
  guint  top_k;                        /* how many to keep (default 10) */
  guint  max_evaluations;              /* exhaustive below this, else coordinate descent */
  gboolean has_dtype;
  NapkinDtype dtype;
  /* Suggest Tiles and `tune`: the drawn regions are hints. The plan's own partition of
   * the diagram without them is searched too; within the model's resolution of the
   * fastest, the file's own tiles come first, then that partition (the result is then
   * relabeled, as for a diagram without regions), else the faster search
   * (docs/plan.md, "Regions as hints"). FALSE: search the drawn regions only and rank
   * by the model alone (a new region's default tiles, the Kernels section's fixes). */
  gboolean regions_are_hints;
  /* napkin_derive: leave the derived regions' tiles as derived (the caller searches them
   * itself next, as napkin_tune does) */
  gboolean derive_unsearched;
} NapkinTuneOptions;

typedef struct
{
  GPtrArray           *best;           /* NapkinTuneCandidate *, fastest first, feasible only */
  NapkinTuneCandidate *current;        /* the file's own tiles; NULL if infeasible */
  guint                evaluated;      /* analyses run, stage_trials included */
  guint                stage_trials;   /* of which: other stage counts on the best tiles */
  /* The diagram had no regions: its derivation (napkin_derive: the plan's partition,
   * every kernel the plan runs drawn as a region) that the search relabels — the
   * candidates' specs refer to it (apply them to it, or use napkin_tune_result_relabel) —
   * and one line per derived kernel. NULL otherwise. */
  NapkinDiagram       *relabeled;
  char               **proposed;
  gboolean             regions_replaced;  /* regions_are_hints: the diagram's regions gave way to
                                           * the plan's own (relabeled) */
  guint                feasible;
  gboolean             exhaustive;
  gboolean             stopped;        /* the search reached its budget of analyses */
} NapkinTuneResult;

void              napkin_tune_candidate_free (NapkinTuneCandidate      *candidate);
void              napkin_tune_result_free    (NapkinTuneResult         *result);
NapkinTuneResult *napkin_tune                (NapkinDiagram            *diagram,
                                              NapkinArch               *arch,
                                              const NapkinTuneOptions  *options,
                                              GError                  **error);
/* Where the regions go, for a diagram without any: a copy with regions drawn around the
 * patterns the model and the code generator know — attention (contraction, maps,
 * softmax, contraction: one shared-memory region, queries in groups of 128, keys
 * streamed by 64, 2 stages), every other matrix product (a 128 × 128 shared-memory block
 * streaming the contracted axis by 64 over 3 stages, with 64 × 32 warp tiles in
 * registers streaming by 16) and softmax or normalisation of matrix rows (with the ·γ
 * and +β maps after it; rows in groups of 4, the reduced axis whole) — at those
 * starting tiles, which napkin_tune then searches. `what` (optional, free with
 * g_strfreev) gets one line per region. NULL with an error when the diagram has regions
 * or no such pattern. napkin_tune calls it itself for a diagram without regions. */
/* The diagram relabeled as candidate `index` of `result` says: result->relabeled (or
 * `diagram` when the search started from its own regions) with its tiles applied. */
NapkinDiagram    *napkin_tune_result_relabel  (const NapkinTuneResult  *result,
                                              NapkinDiagram           *diagram,
                                              guint                    index,
                                              GError                 **error);
/* One spec as --tile takes it ("REGION.AXIS=SIZE", "=parallel:SIZE", "=stream:SIZE",
 * "=whole"), "REGION.stages=N" (1–8: the region's pipeline stages; a diagram with an
 * axis named "stages" reads it as that axis) or "REGION.threads=N" (1–1024: threads per
 * block, likewise). */
gboolean          napkin_tune_apply_spec     (NapkinDiagram            *diagram,
                                              const char               *spec,
                                              GError                  **error);
/* Sets the candidate's tiles and stages on the diagram (each spec as above). */
gboolean          napkin_tune_apply          (NapkinDiagram            *diagram,
                                              const NapkinTuneCandidate *candidate,
                                              GError                  **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinTuneCandidate, napkin_tune_candidate_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinTuneResult, napkin_tune_result_free)

G_END_DECLS
