/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-model.h"

G_BEGIN_DECLS

/* The model's numbers as formulas with the values substituted, so that the
 * analysis pane can show, for every number, how it was computed (an auditable
 * model, not a black box). Each string ends with "= <the model's value>".
 * All return newly allocated UTF-8 text. */

/* 1234567 → "1,234,567" (exact integers for byte counts), grouped as the locale's
 * LC_NUMERIC says ("1 234 567" in French); the C locale keeps the comma. */
char *napkin_format_int              (gint64                value);
/* The same with an explicit separator and localeconv-style grouping ("\3", "\3\2"). */
char *napkin_format_int_grouped      (gint64                value,
                                      const char           *separator,
                                      const char           *grouping);
/* Seconds, bytes and rates with SI prefixes: 3.35e12, "B/s" → "3.35 TB/s". */
char *napkin_format_si               (double                value,
                                      const char           *unit);
/* The same with `digits` significant digits for values of 1 and more (plot labels use 3). */
char *napkin_format_si_digits        (double                value,
                                      const char           *unit,
                                      guint                 digits);

/* bytes of a level: the transfers that cross it (tile × count × element size). */
char *napkin_explain_level_bytes     (const NapkinAnalysis *analysis,
                                      NapkinLevel           level);
/* time of a level: bytes / bandwidth. */
char *napkin_explain_level_time      (const NapkinAnalysis *analysis,
                                      NapkinLevel           level);
/* time of a resource (tensor cores, CUDA cores, SFU, a memory level): work / rate. */
char *napkin_explain_resource_time   (const NapkinAnalysis *analysis,
                                      NapkinResource        resource);
/* predicted, overlapped or serial time: per kernel max or sum, plus launches. */
char *napkin_explain_total_time      (const NapkinAnalysis *analysis,
                                      gboolean              serial);
char *napkin_explain_throughput      (const NapkinAnalysis *analysis,
                                      gboolean              serial);
char *napkin_explain_intensity       (const NapkinAnalysis *analysis);
/* Percentage of the peak of the unit doing the contractions (tensor cores for
 * fp16/bf16/fp8/int8/tf32, CUDA cores otherwise); 0 without FLOPs. */
double napkin_analysis_percent_of_peak (const NapkinAnalysis *analysis,
                                        gboolean              serial);
char *napkin_explain_percent_of_peak (const NapkinAnalysis *analysis,
                                      gboolean              serial);

/* Per region (index into analysis->regions). */
char *napkin_explain_region_instances (const NapkinAnalysis *analysis,
                                       guint                 region);
char *napkin_explain_region_footprint (const NapkinAnalysis *analysis,
                                       guint                 region);
char *napkin_explain_region_occupancy (const NapkinAnalysis *analysis,
                                       guint                 region);
char *napkin_explain_region_waves     (const NapkinAnalysis *analysis,
                                       guint                 region);
/* The capacity a region's footprint is held against: shared memory one block
 * may have, the register file of an SM, or L2. */
/* What a region's block holds against its capacity: the shared memory its kernel's plan
 * asks for where the plan runs tile primitives (docs/plan.md), else the footprint M. */
gint64 napkin_region_block_bytes       (const NapkinAnalysis *analysis,
                                        guint                 region);
double napkin_region_capacity          (const NapkinAnalysis *analysis,
                                        guint                 region);
/* One transfer of a region: tile × count × bytes. */
char *napkin_explain_transfer         (const NapkinAnalysis *analysis,
                                       guint                 region,
                                       guint                 transfer);

G_END_DECLS
