/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-kernel-list.h"

#include "napkin-canvas.h"
#include "napkin-model.h"
#include "napkin-plot.h"
#include "napkin-shard-model.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_ANALYSIS_PANE (napkin_analysis_pane_get_type ())
G_DECLARE_FINAL_TYPE (NapkinAnalysisPane, napkin_analysis_pane, NAPKIN, ANALYSIS_PANE, GtkWidget)

/* The performance model of the canvas's diagram, for one architecture and element
 * type, recomputed on every edit (coalesced to the frame clock). Every number
 * has its formula as a tooltip and its row selects what it comes from. */
GtkWidget            *napkin_analysis_pane_new             (void);
/* Follows the canvas's current document (call again after the canvas's history changes). */
void                  napkin_analysis_pane_set_canvas      (NapkinAnalysisPane *self,
                                                            NapkinCanvas       *canvas);
void                  napkin_analysis_pane_set_arch        (NapkinAnalysisPane *self,
                                                            NapkinArch         *arch);
NapkinArch           *napkin_analysis_pane_get_arch        (NapkinAnalysisPane *self);
/* has_dtype FALSE: the element types as drawn. */
void                  napkin_analysis_pane_set_dtype       (NapkinAnalysisPane *self,
                                                            gboolean            has_dtype,
                                                            NapkinDtype         dtype);
/* Shows the numbers of `preview` (a relabeled copy of the document, e.g. a tile
 * suggestion) under the line `label` instead of the document's, until called with
 * NULL; the document and the comparison chart are untouched. */
void                  napkin_analysis_pane_set_preview     (NapkinAnalysisPane *self,
                                                            NapkinDiagram      *preview,
                                                            const char         *label);
NapkinDiagram        *napkin_analysis_pane_get_preview     (NapkinAnalysisPane *self);
/* Recompute now if an update is pending (tests, benchmarks, exports). */
void                  napkin_analysis_pane_flush           (NapkinAnalysisPane *self);
/* The analysis shown, or NULL when the diagram cannot be analysed. */
const NapkinAnalysis *napkin_analysis_pane_get_analysis    (NapkinAnalysisPane *self);
/* The text shown for a number, by key ("levels.hbm.bytes", "time.predicted",
 * "regions.NAME.footprint", …), its tooltip, and whether its row is highlighted. */
const char           *napkin_analysis_pane_get_text        (NapkinAnalysisPane *self,
                                                            const char         *key);
const char           *napkin_analysis_pane_get_tooltip     (NapkinAnalysisPane *self,
                                                            const char         *key);
gboolean              napkin_analysis_pane_is_highlighted  (NapkinAnalysisPane *self,
                                                            const char         *key);
/* Activates a row as a click does: selects its part of the diagram. */
gboolean              napkin_analysis_pane_activate_row    (NapkinAnalysisPane *self,
                                                            const char         *key);
/* The diagram is incomplete and the pane prices its complete part (the rest is
 * marked on the canvas, named in the error text). */
gboolean              napkin_analysis_pane_is_partial      (NapkinAnalysisPane *self);
/* The error shown above the numbers (diagram invalid or regions infeasible), or NULL. */
const char           *napkin_analysis_pane_get_error_text  (NapkinAnalysisPane *self);
/* Exports: "json", "csv", "md" as text; plots as SVG or PNG by the path's extension. */
char                 *napkin_analysis_pane_export_text     (NapkinAnalysisPane *self,
                                                            const char         *format,
                                                            GError            **error);
gboolean              napkin_analysis_pane_export_plot     (NapkinAnalysisPane *self,
                                                            gboolean            roofline,
                                                            const char         *path,
                                                            GError            **error);
/* The what-if dialog for the current architecture (also the pane's "What-if…"
 * button); applying it selects the new profile here and emits
 * "architecture-added" so that the window lists it. */
struct _NapkinArchEditor;
struct _NapkinArchEditor *napkin_analysis_pane_open_what_if (NapkinAnalysisPane *self);
/* The plots' series as drawn: the roofline, or the comparison (built now if pending). */
const NapkinPlot     *napkin_analysis_pane_get_plot        (NapkinAnalysisPane *self,
                                                            gboolean            roofline);
/* The comparison chart is waiting for a pause in editing or computing in its thread. */
gboolean              napkin_analysis_pane_is_comparing    (NapkinAnalysisPane *self);
/* Several GPUs (docs/multi-gpu.md): the count the "Several GPUs" section analyses
 * (0: the gpus region's), and its last shard analysis (NULL without a gpus region or
 * when the region cannot run split; the pane's "gpus.*" texts say why). */
void                  napkin_analysis_pane_set_gpus        (NapkinAnalysisPane *self,
                                                            guint               gpus);
const NapkinShardAnalysis *napkin_analysis_pane_get_shard_analysis (NapkinAnalysisPane *self);
/* The Kernels section (docs/analysis-pane.md, "Kernels"). */
NapkinKernelList     *napkin_analysis_pane_get_kernel_list (NapkinAnalysisPane *self);
/* Where the pane is scrolled to (0: the top; tests). */
double                napkin_analysis_pane_get_scroll      (NapkinAnalysisPane *self);
void                  napkin_analysis_pane_set_scroll      (NapkinAnalysisPane *self,
                                                            double              value);
/* How many analyses ran (tests check coalescing). */
guint                 napkin_analysis_pane_get_n_updates   (NapkinAnalysisPane *self);

/* The tooltip text of the plot at (x, y) of its drawing area (tests). */
char                 *napkin_analysis_pane_describe_plot_at (NapkinAnalysisPane *self,
                                                             NapkinPlotKind      kind,
                                                             double              x,
                                                             double              y);

G_END_DECLS
