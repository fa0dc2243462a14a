/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include "napkin-model.h"

G_BEGIN_DECLS

/* The analysis per kernel, as the pane's Kernels section shows it (docs/analysis-pane.md,
 * "Kernels"): one row per kernel of the plan the model priced, in launch order, with
 * what it computes, its template and path, its predicted time, bound and share of the
 * total, and for a kernel that runs poorly the reason in a user's words and the kind of
 * fix worth trying. The fixes are the existing searches (napkin_derive, napkin_tune),
 * tried on a copy by napkin_kernel_fix_find; nothing here recognises a pattern itself. */

typedef enum
{
  NAPKIN_KERNEL_FIX_NONE,
  NAPKIN_KERNEL_FIX_DERIVE,     /* an operation outside regions: derive the kernels (napkin_derive), the
                                   drawn regions that keep operations apart gone */
  NAPKIN_KERNEL_FIX_RELABEL,    /* a region's kernel: stream an axis it keeps whole, or tune's tiles */
} NapkinKernelFixKind;

typedef struct
{
  char               *name;       /* the plan's kernel name: its region's, or its operation's id */
  NapkinPlanKind      kind;       /* the template */
  NapkinPath          path;
  int                 region;     /* the diagram's top-level region, or −1 */
  GStrv               nodes;      /* the operations it computes (its region's for a helper kernel) */
  double              time_s;     /* predicted, with its launch */
  double              share;      /* of the kernels' total time, 0 … 1 */
  NapkinResource      bound;
  gboolean            feasible;
  gboolean            poor;       /* generic, infeasible, or bound where it should not be */
  char               *reason;     /* why, in a user's words; NULL for a kernel that runs as it should */
  char               *adjusted;   /* where the plan runs other numbers than the relabeling's
                                     ("rows.threads: 16 → 32 (…)"), or NULL */
  NapkinKernelFixKind fix;        /* what napkin_kernel_fix_find tries for it */
} NapkinKernelRow;

void        napkin_kernel_row_free   (NapkinKernelRow       *row);
NapkinKernelRow *napkin_kernel_row_copy (const NapkinKernelRow *row);
/* The rows of `analysis` (napkin_analyze of `diagram`, whose plan it keeps); an analysis
 * without a plan (the paper's model) gives one row per kernel the model priced. */
GPtrArray  *napkin_kernel_rows       (const NapkinAnalysis  *analysis,
                                      NapkinDiagram         *diagram);
/* The template's name for people ("GEMM", "attention", "row-wise", …). */
const char *napkin_plan_kind_to_label (NapkinPlanKind        kind);

typedef struct
{
  NapkinKernelFixKind kind;
  char               *label;      /* the button: "Derive the kernels", "Stream k" */
  char               *details;    /* what it does and the predicted times, for the tooltip and toast */
  NapkinDiagram      *fixed;      /* `diagram` relabeled: apply its regions to the document */
  double              before_s;
  double              after_s;
} NapkinKernelFix;

void             napkin_kernel_fix_free (NapkinKernelFix           *fix);
NapkinKernelFix *napkin_kernel_fix_copy (const NapkinKernelFix     *fix);
/* The fix for `row` that the model predicts faster (or, for a kernel that does not
 * fit, feasible): for FIX_DERIVE the derivation of the whole diagram; for FIX_RELABEL
 * the best of streaming each axis the row's region keeps whole and sums or
 * normalises over, at tune's tile, and tune's tiles for the region. NULL (no error)
 * when none helps; NULL with an error when the diagram cannot be searched. Runs the
 * model many times: call it on a copy, off the main thread. */
NapkinKernelFix *napkin_kernel_fix_find (NapkinDiagram              *diagram,
                                         NapkinArch                 *arch,
                                         const NapkinAnalyzeOptions *options,
                                         const NapkinKernelRow      *row,
                                         GError                    **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinKernelRow, napkin_kernel_row_free)
G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinKernelFix, napkin_kernel_fix_free)

G_END_DECLS
