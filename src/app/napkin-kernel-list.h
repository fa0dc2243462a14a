/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-history.h"
#include "napkin-kernels.h"

G_BEGIN_DECLS

/* The analysis pane's Kernels section (docs/analysis-pane.md, "Kernels"), as Nsight
 * Compute's summary: one row per planned kernel (napkin_kernel_rows) with its
 * operations, template and path, predicted time, bound and share of the total; a
 * kernel that runs poorly says why and, once a search in a worker thread has found
 * one the model predicts faster, offers its fix as a button (napkin_kernel_fix_find:
 * the derivation, a streamed axis, tune's tiles), applied as one undo step. A row
 * activated (click, Enter) emits "activated" with the kernel's name and operations. */

#define NAPKIN_TYPE_KERNEL_LIST (napkin_kernel_list_get_type ())
G_DECLARE_FINAL_TYPE (NapkinKernelList, napkin_kernel_list, NAPKIN, KERNEL_LIST, GtkWidget)

/* Past this many kernels the longest are shown, in launch order, and one line counts
 * the others. */
#define NAPKIN_KERNEL_LIST_MAX_ROWS 12

GtkWidget             *napkin_kernel_list_new          (void);
/* The rows of `analysis` of `analysed`. With a history (the document shown as it is:
 * not a preview, not a partial prediction) fixes are searched for on `arch` with
 * `options` and apply to the history's diagram; NULL: rows only. Takes nothing over. */
void                   napkin_kernel_list_set_analysis (NapkinKernelList           *self,
                                                        const NapkinAnalysis       *analysis,
                                                        NapkinDiagram              *analysed,
                                                        NapkinHistory              *history,
                                                        NapkinArch                 *arch,
                                                        const NapkinAnalyzeOptions *options);
void                   napkin_kernel_list_clear        (NapkinKernelList           *self);
guint                  napkin_kernel_list_get_n_rows   (NapkinKernelList           *self);
const NapkinKernelRow *napkin_kernel_list_get_row      (NapkinKernelList           *self,
                                                        guint                       index);
/* The row's widget (NULL for one past NAPKIN_KERNEL_LIST_MAX_ROWS) and its fix button
 * (NULL while there is no fix). */
GtkWidget             *napkin_kernel_list_get_row_widget (NapkinKernelList         *self,
                                                          guint                     index);
GtkWidget             *napkin_kernel_list_get_fix_button (NapkinKernelList         *self,
                                                          guint                     index);
/* The fix found for a row, or NULL (none, or the search is still running). */
const NapkinKernelFix *napkin_kernel_list_get_fix      (NapkinKernelList           *self,
                                                        guint                       index);
gboolean               napkin_kernel_list_is_searching (NapkinKernelList           *self);
/* The row's fix on the document as one undo step ("fix-applied" says what it did). */
gboolean               napkin_kernel_list_apply_fix    (NapkinKernelList           *self,
                                                        guint                       index,
                                                        GError                    **error);
/* As a click on the row. */
void                   napkin_kernel_list_activate     (NapkinKernelList           *self,
                                                        guint                       index);

G_END_DECLS
