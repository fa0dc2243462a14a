/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gtk/gtk.h>

#include "napkin-codegen.h"
#include "napkin-diagram.h"

G_BEGIN_DECLS

/* The generated code of the current diagram: CUDA (GtkSourceView, "cuda"
 * highlighting) or the paper-style pseudocode. Lowering and printing run in a
 * worker thread on a copy of the diagram, keyed on its generation counter, so an
 * edit never waits for the code generator. Also exports a standalone .cu and the
 * pseudocode. */

typedef enum
{
  NAPKIN_CODE_CUDA,
  NAPKIN_CODE_PSEUDO,
  NAPKIN_CODE_STANDALONE,   /* export only: a .cu with main() that builds with nvcc */
} NapkinCodeKind;

#define NAPKIN_TYPE_CODE_VIEW (napkin_code_view_get_type ())
G_DECLARE_FINAL_TYPE (NapkinCodeView, napkin_code_view, NAPKIN, CODE_VIEW, GtkWidget)

GtkWidget      *napkin_code_view_new              (void);
/* The code on show is the document's, scrolled where it opens (screenshots). */
gboolean        napkin_code_view_is_settled       (NapkinCodeView  *self);
/* The text of the line at the top of the view (tests: a new document opens on its
 * kernel). */
char           *napkin_code_view_dup_first_visible_line (NapkinCodeView *self);
/* The number (from 0) of that line: a repeated line ("}") is not found by its text. */
int             napkin_code_view_get_first_visible_line_number (NapkinCodeView *self);
void            napkin_code_view_set_diagram      (NapkinCodeView  *self,
                                                   NapkinDiagram   *diagram);
/* The target's instruction paths (the window sets NAPKIN_CODEGEN_SM90A for a Hopper
 * architecture, so the code shown is what the runner generates there). */
void            napkin_code_view_set_codegen_flags (NapkinCodeView     *self,
                                                    NapkinCodegenFlags  flags);
NapkinCodegenFlags napkin_code_view_get_codegen_flags (NapkinCodeView  *self);
/* The code of the plan for this GPU profile (the one the analysis pane prices), for its
 * target (docs/plan.md, "The pipeline"). */
void            napkin_code_view_set_arch         (NapkinCodeView  *self,
                                                   NapkinArch      *arch);
/* CUDA or pseudocode on screen. */
void            napkin_code_view_set_kind         (NapkinCodeView  *self,
                                                   NapkinCodeKind   kind);
NapkinCodeKind  napkin_code_view_get_kind         (NapkinCodeView  *self);
/* The text shown (new string), or the error why there is none. */
char           *napkin_code_view_dup_text         (NapkinCodeView  *self);
/* The diagram generation the text was made from: equal to the diagram's own
 * once the worker has caught up (the "generation" property notifies). */
guint64         napkin_code_view_get_generation   (NapkinCodeView  *self);
/* One line: the kernels and their launch shapes, or the lowering error. */
const char     *napkin_code_view_get_summary      (NapkinCodeView  *self);

/* Where Export .cu and Export Pseudocode start, and the name they suggest (the stem;
 * the window's, so that every export of a document starts alike). */
void            napkin_code_view_set_export_place (NapkinCodeView  *self,
                                                   GFile           *folder,
                                                   const char      *stem);
/* The name and folder the export dialogs suggest (tests). */
char           *napkin_code_view_dup_export_name  (NapkinCodeView  *self,
                                                   const char      *suffix);
GFile          *napkin_code_view_get_export_folder (NapkinCodeView *self);
/* Writes the current diagram's code of `kind` to file, generated in a thread. */
void            napkin_code_view_export_async     (NapkinCodeView      *self,
                                                   NapkinCodeKind       kind,
                                                   GFile               *file,
                                                   GCancellable        *cancellable,
                                                   GAsyncReadyCallback  callback,
                                                   gpointer             user_data);
gboolean        napkin_code_view_export_finish    (NapkinCodeView      *self,
                                                   GAsyncResult        *result,
                                                   GError             **error);
/* Scrolls to the kernel of the plan kernel `owner` (its region's name or its
 * operation's id): its CUDA function, or in the pseudocode the kernel that computes
 * one of `nodes`; once the code that holds it is shown, if it is still coming. */
void           napkin_code_view_show_kernel     (NapkinCodeView     *self,
                                                 const char         *owner,
                                                 const char * const *nodes);
/* The GtkSourceView style scheme in use: "Adwaita", or "Adwaita-dark" in a dark style. */
const char    *napkin_code_view_get_scheme_id   (NapkinCodeView *self);

G_END_DECLS
