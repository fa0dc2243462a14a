/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-tune.h"

G_BEGIN_DECLS

/* Whole-diagram derivation (docs/plan.md, "Deriving a diagram"): for a diagram without
 * regions, which chains of operations run as one kernel and which values go through
 * device memory, each kernel relabeled as the plan's recognisers take it (GEMM with
 * an epilogue chain, attention, rows, element-wise) at the tiles the model prices
 * best. Every operation alone, as the plan runs it without a region, is the baseline
 * ("unfused"). */

typedef struct
{
  char        *name;          /* the region's name, or the operation's id when it stays outside regions */
  const char  *kind;          /* "gemm", "attention", "rows", "elementwise", or the lone operation's plan kind */
  char       **nodes;         /* node ids, diagram order */
  char        *tiles;         /* "t=128 f=256 e~64 stages=4"; NULL outside regions */
  char       **specs;         /* the region as --tile specs; NULL outside regions */
  double       predicted_s;   /* this kernel (with the helper kernels the plan adds to it) */
  double       unfused_s;     /* its operations, each its own kernel */
  char       **writes;        /* values it stores to device memory for later kernels */
  char        *why;           /* one line: why this cut */
} NapkinDeriveKernel;

typedef struct
{
  NapkinDiagram *derived;     /* the diagram with one top-level region per fused kernel */
  GPtrArray     *kernels;     /* NapkinDeriveKernel *, in the order of their first operation */
  double         unfused_s;   /* every operation its own kernel */
  double         derived_s;   /* the sum of the kernels' times and launch_run_s */
  double         launch_run_s;/* the run's launches against each kernel's own (docs/model.md,
                                 "Launches") */
  double         analyzed_s;  /* napkin_analyze on `derived` (the number `analyze` prints) */
  guint          candidates;  /* kernels priced */
  guint          evaluated;   /* analyses run */
  gboolean       exact;       /* the partition search finished (else greedy) */
} NapkinDerivation;

void              napkin_derivation_free (NapkinDerivation        *derivation);
/* NULL with an error when the diagram is invalid, has regions, or has no operation. */
NapkinDerivation *napkin_derive          (NapkinDiagram           *diagram,
                                          NapkinArch              *arch,
                                          const NapkinTuneOptions *options,
                                          GError                 **error);
json_object      *napkin_derivation_to_json (const NapkinDerivation *derivation);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinDerivation, napkin_derivation_free)

G_END_DECLS
