/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <adwaita.h>

#include "napkin-autosaver.h"
#include "napkin-canvas.h"
#include "napkin-inspector.h"

G_BEGIN_DECLS

#define NAPKIN_TYPE_WINDOW (napkin_window_get_type ())
G_DECLARE_FINAL_TYPE (NapkinWindow, napkin_window, NAPKIN, WINDOW, AdwApplicationWindow)

/* One window edits one document: a diagram, its undo history and its file. */
NapkinWindow    *napkin_window_new               (GtkApplication  *application);
void             napkin_window_set_document      (NapkinWindow    *self,
                                                  NapkinDiagram   *diagram,
                                                  GFile           *file);
/* On failure the error is shown in the window's banner and the document is kept. */
gboolean         napkin_window_load_file         (NapkinWindow    *self,
                                                  GFile           *file,
                                                  GError         **error);
gboolean         napkin_window_load_default      (NapkinWindow    *self);
/* A bundled example by name ("matmul"), untitled (Help ▸ Examples). */
gboolean         napkin_window_load_example      (NapkinWindow    *self,
                                                  const char      *name,
                                                  GError         **error);
/* Where Open and Save As start (the document's folder, the last diagram's, home). */
GFile           *napkin_window_dup_start_folder  (NapkinWindow    *self);
/* The guide docs/NAME.md that Help opens, or NULL when it is not there. */
char            *napkin_window_dup_doc_path      (const char      *name);
gboolean         napkin_window_save_to_file      (NapkinWindow    *self,
                                                  GFile           *file,
                                                  GError         **error);
/* Shows a document recovered from the autosave `autosave_id`, as modified; `file`
 * is its own file (Save writes there) or NULL. The snapshot is removed once the
 * document is saved or discarded. */
void             napkin_window_recover           (NapkinWindow    *self,
                                                  NapkinDiagram   *diagram,
                                                  GFile           *file,
                                                  const char      *autosave_id);
NapkinAutosaver *napkin_window_get_autosaver     (NapkinWindow    *self);
/* Untitled and unchanged: opening a file may reuse this window. */
gboolean         napkin_window_is_pristine       (NapkinWindow    *self);
void             napkin_window_show_error        (NapkinWindow    *self,
                                                  const char      *message);
/* The banner's words, and its details line (an error's JSON path), or NULL. */
const char      *napkin_window_get_banner_text   (NapkinWindow    *self);
const char      *napkin_window_get_banner_details (NapkinWindow   *self);
const char      *napkin_window_get_last_toast    (NapkinWindow    *self);
/* The Open dialog as Ctrl+O shows it (its filters, its first folder), not shown. */
GtkFileChooserNative *napkin_window_new_open_dialog (NapkinWindow *self);
NapkinCanvas    *napkin_window_get_canvas        (NapkinWindow    *self);
NapkinInspector *napkin_window_get_inspector     (NapkinWindow    *self);
NapkinHistory   *napkin_window_get_history       (NapkinWindow    *self);
/* The NapkinAnalysisPane, or NULL where the perf layer is not built. */
GtkWidget       *napkin_window_get_analysis_pane (NapkinWindow    *self);
/* The NapkinCodeView and NapkinRunPanel, or NULL where codegen is not built. */
GtkWidget       *napkin_window_get_code_view     (NapkinWindow    *self);
GtkWidget       *napkin_window_get_run_panel     (NapkinWindow    *self);
GFile           *napkin_window_get_file          (NapkinWindow    *self);
typedef enum
{
  NAPKIN_WINDOW_SAVED,        /* saved, or nothing to save */
  NAPKIN_WINDOW_DISCARDED,
  NAPKIN_WINDOW_CANCELLED,    /* the user wants to keep working (or saving failed) */
} NapkinWindowAnswer;

/* "Save changes?" for this window's document (Save / Discard / Cancel); Save saves
 * (asking for a name if the document has none). Closes nothing. */
void             napkin_window_ask_save_async    (NapkinWindow    *self,
                                                  GAsyncReadyCallback callback,
                                                  gpointer         user_data);
NapkinWindowAnswer napkin_window_ask_save_finish (NapkinWindow    *self,
                                                  GAsyncResult    *result,
                                                  GError         **error);
/* Closes the window without the question (it was answered). */
void             napkin_window_close_without_asking (NapkinWindow *self);
/* Saves a PNG of the whole window once it has drawn, then calls back. */
void             napkin_window_screenshot_async  (NapkinWindow    *self,
                                                  const char      *path,
                                                  GAsyncReadyCallback callback,
                                                  gpointer         user_data);
gboolean         napkin_window_screenshot_finish (NapkinWindow    *self,
                                                  GAsyncResult    *result,
                                                  GError         **error);

/* A guide of docs/ in a window of Napkin's own: Help's fallback where the desktop has
 * no viewer that opens it. NULL after a toast when the file cannot be read. */
GtkWindow       *napkin_window_show_guide        (NapkinWindow    *self,
                                                  const char      *path);

/* einsum text or an exported PyTorch graph as a new unsaved document (docs/import.md) */
gboolean         napkin_window_import_file       (NapkinWindow    *self,
                                                  GFile           *file,
                                                  GError         **error);

G_END_DECLS
