/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-window"

#include "config.h"

#include <string.h>

#include <glib/gi18n.h>

#include "napkin-application.h"
#include "napkin-autosaver.h"
#include "napkin-data-dirs.h"
#include "napkin-describe.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-render.h"
#include "napkin-window.h"
#include "napkin-backward.h"
#include "napkin-backward-dialog.h"
#include "napkin-grad.h"
#include "napkin-import.h"
#include "napkin-analysis-pane.h"
#include "napkin-arch.h"
#include "napkin-tile-suggestions.h"
#include "napkin-code-view.h"
#include <gtksourceview/gtksource.h>
#include "napkin-run-panel.h"

struct _NapkinWindow
{
  AdwApplicationWindow parent_instance;

  /* template */
  AdwWindowTitle      *window_title;
  AdwToastOverlay     *toast_overlay;
  GtkRevealer         *banner;
  GtkLabel            *banner_label;
  GtkLabel            *banner_details;
  GtkBox              *palette;
  NapkinCanvas        *canvas;
  NapkinInspector     *inspector;
  GtkDropDown         *arch_dropdown;
  gulong               arch_selected_id;
  GtkBox              *analysis_area;
  GtkWidget           *analysis_pane;   /* NapkinAnalysisPane where the perf layer is built */
  GtkPaned            *code_paned;
  GtkWidget           *code_view;       /* NapkinCodeView and NapkinRunPanel, where codegen is built */
  GtkWidget           *run_panel;
  GtkWidget           *bottom_stack;
  GtkButton           *zoom_button;
  GtkMenuButton       *add_button;
  GtkMenuButton       *suggest_button;  /* "Suggest tiles": a NapkinTileSuggestions popover */
  GMenu               *recent_section;

  /* the document */
  NapkinHistory       *history;
  GFile               *file;
  gboolean             is_example;
  NapkinAutosaver     *autosaver;       /* snapshots for crash recovery (docs/security.md §4) */
  gulong               modified_id;
  gulong               undo_id;
  gulong               redo_id;

  GSettings           *settings;
  GStrv                arch_ids;
  char                *last_toast;      /* for the tests */
  gboolean             close_confirmed;
  GTask               *question;        /* "Save changes?" asked, not answered yet */
  gboolean             answer_after_save;
  guint                zoom_label_id;
};

G_DEFINE_FINAL_TYPE (NapkinWindow, napkin_window, ADW_TYPE_APPLICATION_WINDOW)

#define DEFAULT_RESOURCE "/io/github/napkin/Napkin/examples/flash-attention.napkin"

static GFile *start_folder (NapkinWindow *self);
static char *export_stem (NapkinWindow *self);

static void
update_title (NapkinWindow *self)
{
  NapkinDiagram *diagram = self->history ? napkin_history_get_diagram (self->history) : NULL;
  gboolean modified = self->history && napkin_history_get_modified (self->history);
  g_autofree char *name = NULL;
  g_autofree char *title = NULL;
  g_autofree char *subtitle = NULL;

  if (self->file != NULL)
    name = g_file_get_basename (self->file);
  else if (diagram && napkin_diagram_get_title (diagram))
    name = g_strdup (napkin_diagram_get_title (diagram));
  else
    name = g_strdup (_("Untitled Diagram"));

  title = g_strdup_printf ("%s%s", modified ? "• " : "", name);
  if (self->file != NULL)
    {
      g_autoptr(GFile) parent = g_file_get_parent (self->file);

      subtitle = parent ? g_file_get_parse_name (parent) : NULL;
    }
  else if (self->is_example)
    subtitle = g_strdup (_("Bundled example"));
  adw_window_title_set_title (self->window_title, title);
  /* the code view's exports go where and as Export's do */
  if (self->code_view != NULL)
    {
      g_autoptr(GFile) folder = start_folder (self);
      g_autofree char *stem = export_stem (self);

      napkin_code_view_set_export_place (NAPKIN_CODE_VIEW (self->code_view), folder, stem);
    }
  adw_window_title_set_subtitle (self->window_title, subtitle ? subtitle : "");
  {
    g_autofree char *window_title = g_strdup_printf ("%s — Napkin", title);

    gtk_window_set_title (GTK_WINDOW (self), window_title);
  }
}

static void
update_undo (NapkinWindow *self)
{
  gboolean can_undo = self->history && napkin_history_can_undo (self->history);
  gboolean can_redo = self->history && napkin_history_can_redo (self->history);

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "doc.undo", can_undo);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "doc.redo", can_redo);
  update_title (self);
}

static void
history_notify_cb (NapkinWindow *self,
                   GParamSpec   *pspec,
                   NapkinHistory *history)
{
  update_undo (self);
}

static gboolean
update_zoom_label (GtkWidget     *widget,
                   GdkFrameClock *clock,
                   gpointer       user_data)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autofree char *label = g_strdup_printf ("%.0f%%", napkin_canvas_get_zoom (self->canvas) * 100);

  self->zoom_label_id = 0;
  gtk_button_set_label (self->zoom_button, label);
  return G_SOURCE_REMOVE;
}

static void
zoom_notify_cb (NapkinWindow *self,
                GParamSpec   *pspec,
                NapkinCanvas *canvas)
{
  /* The canvas fits itself while being allocated; relabelling the header bar
   * then would leave it unallocated for that frame. A tick callback runs before
   * the next frame's layout, so the label is never a frame behind. */
  if (self->zoom_label_id == 0)
    self->zoom_label_id = gtk_widget_add_tick_callback (GTK_WIDGET (self), update_zoom_label, NULL, NULL);
}

/* A snapshot failed (full disk, unwritable state folder): the user must know that
 * a crash now would lose the changes. */
static void
autosave_failed_cb (NapkinWindow *self,
                    const char   *message)
{
  g_autofree char *text = g_strdup_printf (_("Autosave failed: %s. Until it works again, unsaved changes are "
                                             "only in this window: save the document to keep them."),
                                           message);

  napkin_window_show_error (self, text);
}

void
napkin_window_set_document (NapkinWindow  *self,
                            NapkinDiagram *diagram,
                            GFile         *file)
{
  g_return_if_fail (NAPKIN_IS_WINDOW (self));
  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));

  if (self->history != NULL)
    {
      g_clear_signal_handler (&self->modified_id, self->history);
      g_clear_signal_handler (&self->undo_id, self->history);
      g_clear_signal_handler (&self->redo_id, self->history);
    }
  g_clear_object (&self->autosaver);
  g_clear_object (&self->history);
  g_set_object (&self->file, file);
  self->is_example = FALSE;

  self->history = napkin_history_new (diagram);
  self->autosaver = napkin_autosaver_new (self->history);
  napkin_autosaver_set_file (self->autosaver, file);
  g_signal_connect_object (self->autosaver, "failed", G_CALLBACK (autosave_failed_cb), self, G_CONNECT_SWAPPED);
  self->modified_id = g_signal_connect_object (self->history, "notify::modified",
                                               G_CALLBACK (history_notify_cb), self, G_CONNECT_SWAPPED);
  self->undo_id = g_signal_connect_object (self->history, "notify::can-undo",
                                           G_CALLBACK (history_notify_cb), self, G_CONNECT_SWAPPED);
  self->redo_id = g_signal_connect_object (self->history, "notify::can-redo",
                                           G_CALLBACK (history_notify_cb), self, G_CONNECT_SWAPPED);
  napkin_canvas_set_history (self->canvas, self->history);
  napkin_inspector_set_canvas (self->inspector, self->canvas);
  napkin_analysis_pane_set_canvas (NAPKIN_ANALYSIS_PANE (self->analysis_pane), self->canvas);
  napkin_code_view_set_diagram (NAPKIN_CODE_VIEW (self->code_view), diagram);
  napkin_run_panel_set_diagram (NAPKIN_RUN_PANEL (self->run_panel), diagram);
  update_undo (self);
}

void
napkin_window_show_error (NapkinWindow *self,
                          const char   *message)
{
  g_autofree char *words = NULL;
  g_autofree char *json_path = NULL;
  g_autofree char *details = NULL;

  g_return_if_fail (NAPKIN_IS_WINDOW (self));

  words = napkin_error_summary (message);
  json_path = napkin_error_path (message);
  details = json_path ? g_strdup_printf (_("JSON path: %s"), json_path) : NULL;

  /* the words a user knows; the place in the file below them, for those who look */
  gtk_label_set_text (self->banner_label, words);
  gtk_label_set_text (self->banner_details, details ? details : "");
  gtk_widget_set_visible (GTK_WIDGET (self->banner_details), details != NULL);
  gtk_revealer_set_reveal_child (self->banner, TRUE);
}

const char *
napkin_window_get_banner_text (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return gtk_revealer_get_reveal_child (self->banner) ? gtk_label_get_text (self->banner_label) : NULL;
}

/* The sentence of the last toast the window showed (for the tests), or NULL. */
const char *
napkin_window_get_last_toast (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return self->last_toast;
}

const char *
napkin_window_get_banner_details (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return gtk_revealer_get_reveal_child (self->banner) && gtk_widget_get_visible (GTK_WIDGET (self->banner_details))
         ? gtk_label_get_text (self->banner_details) : NULL;
}

static void
toast (NapkinWindow *self,
       const char   *message)
{
  AdwToast *t = adw_toast_new (message);

  g_free (self->last_toast);
  self->last_toast = g_strdup (message);

  adw_toast_set_timeout (t, 4);
  adw_toast_overlay_add_toast (self->toast_overlay, t);
}

static void
add_recent (GFile *file)
{
  g_autofree char *uri = g_file_get_uri (file);

  gtk_recent_manager_add_item (gtk_recent_manager_get_default (), uri);
}

gboolean
napkin_window_load_file (NapkinWindow  *self,
                         GFile         *file,
                         GError       **error)
{
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autofree char *path = NULL;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);
  g_return_val_if_fail (G_IS_FILE (file), FALSE);

  path = g_file_get_path (file);
  if (path == NULL)
    g_set_error (&local_error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                 _("%s: only local files can be opened"), g_file_peek_path (file));
  else
    diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &local_error);

  if (diagram == NULL)
    {
      g_autofree char *name = g_file_get_parse_name (file);
      g_autofree char *message = g_strdup_printf (_("Could not open “%s”: %s"), name, local_error->message);

      /* The open documents stay as they were. */
      napkin_window_show_error (self, message);
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }

  gtk_revealer_set_reveal_child (self->banner, FALSE);
  napkin_window_set_document (self, diagram, file);
  add_recent (file);
  return TRUE;
}

gboolean
napkin_window_load_default (NapkinWindow *self)
{
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) error = NULL;
  gsize length;
  const char *data;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);

  bytes = g_resources_lookup_data (DEFAULT_RESOURCE, G_RESOURCE_LOOKUP_FLAGS_NONE, &error);
  if (bytes != NULL)
    {
      data = g_bytes_get_data (bytes, &length);
      diagram = napkin_diagram_load_from_data (data, length, NAPKIN_LOAD_DEFAULT, &error);
    }
  if (diagram == NULL)
    {
      napkin_window_show_error (self, error->message);
      diagram = napkin_diagram_new ();
      napkin_window_set_document (self, diagram, NULL);
      return FALSE;
    }
  napkin_window_set_document (self, diagram, NULL);
  self->is_example = TRUE;
  update_title (self);
  return TRUE;
}

gboolean
napkin_window_save_to_file (NapkinWindow  *self,
                            GFile         *file,
                            GError       **error)
{
  g_autofree char *path = NULL;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);
  g_return_val_if_fail (G_IS_FILE (file), FALSE);

  path = g_file_get_path (file);
  if (path == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("only local files can be saved"));
      return FALSE;
    }
  if (!napkin_diagram_save_to_file (napkin_history_get_diagram (self->history), path, error))
    return FALSE;
  napkin_history_set_saved (self->history);
  napkin_autosaver_discard (self->autosaver);
  napkin_autosaver_set_file (self->autosaver, file);
  g_set_object (&self->file, file);
  self->is_example = FALSE;
  add_recent (file);
  update_title (self);
  return TRUE;
}

void
napkin_window_recover (NapkinWindow  *self,
                       NapkinDiagram *diagram,
                       GFile         *file,
                       const char    *autosave_id)
{
  g_return_if_fail (NAPKIN_IS_WINDOW (self));
  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));
  g_return_if_fail (autosave_id != NULL);

  napkin_window_set_document (self, diagram, file);
  /* The snapshot stays until this document is saved or discarded. */
  napkin_autosaver_adopt (self->autosaver, autosave_id);
  /* Not what is on disk (if anything is): modified until saved. */
  napkin_history_set_unsaved (self->history);
}

NapkinAutosaver *
napkin_window_get_autosaver (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return self->autosaver;
}

gboolean
napkin_window_is_pristine (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);

  return self->file == NULL && (self->history == NULL || !napkin_history_get_modified (self->history));
}

NapkinCanvas *
napkin_window_get_canvas (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->canvas;
}

NapkinInspector *
napkin_window_get_inspector (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->inspector;
}

GtkWidget *
napkin_window_get_analysis_pane (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return self->analysis_pane;
}

NapkinHistory *
napkin_window_get_history (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->history;
}

GFile *
napkin_window_get_file (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->file;
}

/* ---------------------------------------------------------------- file dialogs */

static void
add_napkin_filter (GtkFileChooser *chooser)
{
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();

  gtk_file_filter_set_name (filter, _("Napkin diagrams"));
  gtk_file_filter_add_pattern (filter, "*.napkin");
  gtk_file_filter_add_mime_type (filter, "application/x-napkin");
  gtk_file_chooser_add_filter (chooser, filter);
}

/* Where Open and Save As start: the document's folder, else the folder of the most
 * recent diagram, else the home folder — never the "Recent" list, where a diagram
 * that was never opened cannot be found. */
static GFile *
start_folder_for (NapkinWindow       *self,
                  const char * const *suffixes)
{
  GList *items;
  GFile *folder = NULL;

  if (self->file != NULL && (folder = g_file_get_parent (self->file)) != NULL)
    return folder;
  items = gtk_recent_manager_get_items (gtk_recent_manager_get_default ());
  for (GList *l = items; l && folder == NULL; l = l->next)
    {
      const char *uri = gtk_recent_info_get_uri (l->data);
      gboolean wanted = FALSE;

      for (guint i = 0; suffixes[i] != NULL; i++)
        wanted |= g_str_has_suffix (uri, suffixes[i]);
      if (wanted && gtk_recent_info_exists (l->data))
        {
          g_autoptr(GFile) file = g_file_new_for_uri (uri);

          folder = g_file_get_parent (file);
        }
    }
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
  if (folder == NULL)
    folder = g_file_new_for_path (g_get_home_dir ());
  /* a folder that is not there would leave the chooser in its Recent list */
  if (g_file_query_file_type (folder, G_FILE_QUERY_INFO_NONE, NULL) != G_FILE_TYPE_DIRECTORY)
    {
      g_autofree char *cwd = g_get_current_dir ();

      g_object_unref (folder);
      folder = g_file_new_for_path (cwd);
    }
  return folder;
}

static GFile *
start_folder (NapkinWindow *self)
{
  static const char *const diagrams[] = { ".napkin", NULL };

  return start_folder_for (self, diagrams);
}

GFile *
napkin_window_dup_start_folder (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  return start_folder (self);
}

static void
open_response_cb (GtkNativeDialog *dialog,
                  int              response,
                  gpointer         user_data)
{
  g_autoptr(NapkinWindow) self = user_data;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GListModel) files = gtk_file_chooser_get_files (GTK_FILE_CHOOSER (dialog));

      for (guint i = 0; i < g_list_model_get_n_items (files); i++)
        {
          g_autoptr(GFile) file = g_list_model_get_item (files, i);

          napkin_application_open_file (NAPKIN_APPLICATION (gtk_window_get_application (GTK_WINDOW (self))),
                                        file, self);
        }
    }
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}

static void
open_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  GtkFileChooserNative *dialog = napkin_window_new_open_dialog (self);

  g_signal_connect (dialog, "response", G_CALLBACK (open_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

GtkFileChooserNative *
napkin_window_new_open_dialog (NapkinWindow *self)
{
  GtkFileChooserNative *dialog;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  dialog = gtk_file_chooser_native_new (_("Open Diagram"), GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_OPEN,
                                        _("_Open"), _("_Cancel"));
  gtk_file_chooser_set_select_multiple (GTK_FILE_CHOOSER (dialog), TRUE);
  add_napkin_filter (GTK_FILE_CHOOSER (dialog));
  {
    g_autoptr(GtkFileFilter) all = gtk_file_filter_new ();
    g_autoptr(GFile) folder = start_folder (self);

    /* a diagram saved under another name is still one */
    gtk_file_filter_set_name (all, _("All files"));
    gtk_file_filter_add_pattern (all, "*");
    gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), all);
    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, NULL);
  }
  return dialog;
}

/* File ▸ Import: einsum text or the exporter's graph JSON (docs/import.md) becomes a new,
 * unsaved document; the file itself is never written. */
gboolean
napkin_window_import_file (NapkinWindow  *self,
                           GFile         *file,
                           GError       **error)
{
  g_autoptr(NapkinDiagram) diagram = NULL;
  g_autoptr(GError) local_error = NULL;
  g_autofree char *path = NULL;
  NapkinWindow *window = self;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);
  g_return_val_if_fail (G_IS_FILE (file), FALSE);

  path = g_file_get_path (file);
  if (path == NULL)
    g_set_error (&local_error, NAPKIN_IMPORT_ERROR, NAPKIN_IMPORT_ERROR_SYNTAX,
                 _("%s: only local files can be imported"), g_file_peek_path (file));
  else
    diagram = napkin_import_file (path, &local_error);
  if (diagram == NULL)
    {
      g_autofree char *name = g_file_get_parse_name (file);
      g_autofree char *message = g_strdup_printf (_("Could not import “%s”: %s"), name, local_error->message);

      napkin_window_show_error (self, message);
      g_propagate_error (error, g_steal_pointer (&local_error));
      return FALSE;
    }
  if (napkin_diagram_get_title (diagram) == NULL || *napkin_diagram_get_title (diagram) == '\0')
    {
      g_autofree char *base = g_file_get_basename (file);

      napkin_diagram_set_title (diagram, base);
    }
  /* an untouched window shows it, else a new one */
  if (!napkin_window_is_pristine (self))
    window = napkin_window_new (gtk_window_get_application (GTK_WINDOW (self)));
  gtk_revealer_set_reveal_child (window->banner, FALSE);
  napkin_window_set_document (window, diagram, NULL);
  napkin_canvas_show_whole (window->canvas);
  add_recent (file);
  gtk_window_present (GTK_WINDOW (window));
  return TRUE;
}

static void
import_response_cb (GtkNativeDialog *dialog,
                    int              response,
                    gpointer         user_data)
{
  g_autoptr(NapkinWindow) self = user_data;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

      if (file != NULL)
        napkin_window_import_file (self, file, NULL);
    }
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}

static void
import_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  g_autoptr(GtkFileFilter) all = gtk_file_filter_new ();
  static const char *const imported[] = { ".einsum", ".json", ".txt", NULL };
  /* where the last import came from, else as Open (docs/editor.md, "Files and windows") */
  g_autoptr(GFile) folder = start_folder_for (self, imported);

  dialog = gtk_file_chooser_native_new (_("Import Einsum Text or a PyTorch Graph"), GTK_WINDOW (self),
                                        GTK_FILE_CHOOSER_ACTION_OPEN, _("_Import"), _("_Cancel"));
  gtk_file_filter_set_name (filter, _("Einsum text and exported graphs"));
  gtk_file_filter_add_pattern (filter, "*.einsum");
  gtk_file_filter_add_pattern (filter, "*.txt");
  gtk_file_filter_add_pattern (filter, "*.json");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  gtk_file_filter_set_name (all, _("All files"));
  gtk_file_filter_add_pattern (all, "*");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), all);
  gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, NULL);
  g_signal_connect (dialog, "response", G_CALLBACK (import_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* The same without the chooser, for a path given by the caller (and the tests). */
static void
import_file_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  g_autoptr(GFile) file = g_file_new_for_path (g_variant_get_string (parameter, NULL));

  napkin_window_import_file (NAPKIN_WINDOW (widget), file, NULL);
}

/* Backward Diagram (docs/training.md): the gradients of the document's inputs as a new,
 * unsaved document in a window of its own, as Import opens what it builds. The
 * parameter says what becomes of the softmax probabilities: "auto" (whichever the model
 * prices lower on the GPU the pane shows; a toast says which and the two times),
 * "store" or "recompute" ("Recompute or store"). */
static void
build_backward (NapkinWindow         *self,
                const char * const   *wrt,
                NapkinBackwardChoice  choice)
{
  NapkinArch *arch = napkin_analysis_pane_get_arch (NAPKIN_ANALYSIS_PANE (self->analysis_pane));
  g_autoptr(GError) error = NULL;
  g_autoptr(GString) summary = g_string_new (NULL);
  g_autoptr(NapkinDiagram) backward = NULL;
  NapkinWindow *window;

  if (choice == NAPKIN_BACKWARD_CHEAPER && arch == NULL)
    choice = NAPKIN_BACKWARD_STORE;
  backward = napkin_backward_diagram (napkin_history_get_diagram (self->history), wrt, choice, arch, NULL, summary,
                                      &error);
  if (backward == NULL)
    {
      g_autofree char *message = g_strdup_printf (_("No backward diagram: %s"), error->message);

      napkin_window_show_error (self, message);
      return;
    }
  window = napkin_window_new (gtk_window_get_application (GTK_WINDOW (self)));
  napkin_window_set_document (window, backward, NULL);
  napkin_canvas_show_whole (window->canvas);
  gtk_window_present (GTK_WINDOW (window));
  if (summary->len > 0)
    toast (window, summary->str);
}

static void
backward_action (GtkWidget  *widget,
                 const char *action_name,
                 GVariant   *parameter)
{
  const char *how = parameter != NULL ? g_variant_get_string (parameter, NULL) : "auto";

  build_backward (NAPKIN_WINDOW (widget), NULL,
                  g_str_equal (how, "store") ? NAPKIN_BACKWARD_STORE
                  : g_str_equal (how, "recompute") ? NAPKIN_BACKWARD_RECOMPUTE : NAPKIN_BACKWARD_CHEAPER);
}

static void
backward_dialog_build (NapkinBackwardDialog *dialog,
                       const char * const   *wrt,
                       int                   choice,
                       NapkinWindow         *self)
{
  build_backward (self, wrt, (NapkinBackwardChoice) choice);
}

/* Choose Gradients…: the inputs whose gradients the backward holds (a mask, a rotary
 * table left out), and the softmax's store-or-recompute, in a dialog. */
static void
backward_choose_action (GtkWidget  *widget,
                        const char *action_name,
                        GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  NapkinBackwardDialog *dialog = napkin_backward_dialog_new (GTK_WINDOW (self),
                                                             napkin_history_get_diagram (self->history));

  g_signal_connect_object (dialog, "build", G_CALLBACK (backward_dialog_build), self, 0);
  gtk_window_present (GTK_WINDOW (dialog));
}

/* A sentence from a child widget for the user (a tile re-cut after a resize): a toast. */
static void
notify_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  toast (NAPKIN_WINDOW (widget), g_variant_get_string (parameter, NULL));
}

static void
open_recent_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autoptr(GFile) file = g_file_new_for_uri (g_variant_get_string (parameter, NULL));

  napkin_application_open_file (NAPKIN_APPLICATION (gtk_window_get_application (GTK_WINDOW (self))), file, self);
}

static void save_as_action (GtkWidget *widget, const char *action_name, GVariant *parameter);

static void answer (NapkinWindow *self, NapkinWindowAnswer answer);

static void
save_done (NapkinWindow *self,
           gboolean      ok,
           GError       *error)
{
  if (!ok)
    {
      g_autofree char *message = g_strdup_printf (_("Could not save: %s"), error->message);

      napkin_window_show_error (self, message);
      /* not saved: whoever asked (closing, quitting) stops there */
      if (self->answer_after_save)
        answer (self, NAPKIN_WINDOW_CANCELLED);
      return;
    }
  toast (self, _("Saved"));
  if (self->answer_after_save)
    answer (self, NAPKIN_WINDOW_SAVED);
}

static void
save_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  gboolean ok;

  if (self->file == NULL)
    {
      save_as_action (widget, "doc.save-as", NULL);
      return;
    }
  ok = napkin_window_save_to_file (self, self->file, &error);
  save_done (self, ok, error);
}

static void
save_as_response_cb (GtkNativeDialog *dialog,
                     int              response,
                     gpointer         user_data)
{
  g_autoptr(NapkinWindow) self = user_data;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autoptr(GError) error = NULL;
      gboolean ok = napkin_window_save_to_file (self, file, &error);

      save_done (self, ok, error);
    }
  else if (self->answer_after_save)
    answer (self, NAPKIN_WINDOW_CANCELLED);
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}

/* The name every file made from the document starts with (Save As, Export, the code
 * view's exports): the file's own, else the title's, else "diagram". */
static char *
export_stem (NapkinWindow *self)
{
  NapkinDiagram *diagram = self->history ? napkin_history_get_diagram (self->history) : NULL;
  g_autofree char *stem = NULL;

  if (self->file != NULL)
    {
      g_autofree char *base = g_file_get_basename (self->file);
      char *dot = strrchr (base, '.');

      if (dot != NULL)
        *dot = '\0';
      stem = g_strdup (base);
    }
  else if (diagram != NULL && napkin_diagram_get_title (diagram) && *napkin_diagram_get_title (diagram))
    stem = g_strdelimit (g_ascii_strdown (napkin_diagram_get_title (diagram), -1), " /:\\", '-');
  else
    stem = g_strdup (_("diagram"));
  return g_steal_pointer (&stem);
}

static char *
suggested_name (NapkinWindow *self,
                const char   *extension)
{
  g_autofree char *stem = export_stem (self);

  return g_strconcat (stem, extension, NULL);
}

static void
save_as_action (GtkWidget  *widget,
                const char *action_name,
                GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  GtkFileChooserNative *dialog;
  g_autofree char *name = suggested_name (self, ".napkin");

  dialog = gtk_file_chooser_native_new (_("Save Diagram"), GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                        _("_Save"), _("_Cancel"));
  add_napkin_filter (GTK_FILE_CHOOSER (dialog));
  {
    g_autoptr(GFile) folder = start_folder (self);

    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, NULL);
  }
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
  g_signal_connect (dialog, "response", G_CALLBACK (save_as_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

static void
export_response_cb (GtkNativeDialog *dialog,
                    int              response,
                    gpointer         user_data)
{
  g_autoptr(NapkinWindow) self = user_data;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      g_autofree char *path = g_file_get_path (file);
      const char *scale_choice = gtk_file_chooser_get_choice (GTK_FILE_CHOOSER (dialog), "scale");
      double scale = scale_choice ? g_ascii_strtod (scale_choice, NULL) : 2;
      g_autoptr(GError) error = NULL;
      NapkinExportFormat format;

      if (path == NULL || !napkin_export_format_from_path (path, &format))
        napkin_window_show_error (self, _("Export: name the file .svg, .pdf, .png or .tex"));
      else if (!napkin_render_export (napkin_history_get_diagram (self->history), path, format, scale, &error))
        {
          g_autofree char *message = g_strdup_printf (_("Could not export: %s"), error->message);

          napkin_window_show_error (self, message);
        }
      else
        {
          g_autofree char *base = g_file_get_basename (file);
          g_autofree char *message = g_strdup_printf (_("Exported %s"), base);

          toast (self, message);
        }
    }
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}

static void
export_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  GtkFileChooserNative *dialog;
  g_autofree char *name = suggested_name (self, ".svg");
  static const char *scale_ids[] = { "1", "2", "3", "4", NULL };
  const char *scale_labels[] = { "1×", "2×", "3×", "4×", NULL };
  static const struct { const char *name; const char *pattern; } formats[] = {
    { N_("SVG image"), "*.svg" },
    { N_("PDF document"), "*.pdf" },
    { N_("PNG image"), "*.png" },
    { N_("TikZ picture for LaTeX"), "*.tex" },
  };

  dialog = gtk_file_chooser_native_new (_("Export Diagram"), GTK_WINDOW (self), GTK_FILE_CHOOSER_ACTION_SAVE,
                                        _("_Export"), _("_Cancel"));
  for (guint i = 0; i < G_N_ELEMENTS (formats); i++)
    {
      g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();

      gtk_file_filter_set_name (filter, _(formats[i].name));
      gtk_file_filter_add_pattern (filter, formats[i].pattern);
      gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
    }
  gtk_file_chooser_add_choice (GTK_FILE_CHOOSER (dialog), "scale", _("PNG scale"), scale_ids, scale_labels);
  gtk_file_chooser_set_choice (GTK_FILE_CHOOSER (dialog), "scale", "2");
  {
    /* beside the document (else the last diagram's folder, else home), never the
     * folder Napkin happened to start in */
    g_autoptr(GFile) folder = start_folder (self);

    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), folder, NULL);
  }
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
  g_signal_connect (dialog, "response", G_CALLBACK (export_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* ---------------------------------------------------------------- actions */

static void
new_action (GtkWidget  *widget,
            const char *action_name,
            GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  GtkApplication *app = gtk_window_get_application (GTK_WINDOW (self));
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_new ();
  NapkinWindow *window;

  /* A blank diagram in this window if it is untouched, else in a new one. */
  window = napkin_window_is_pristine (self) ? self : napkin_window_new (app);
  napkin_window_set_document (window, diagram, NULL);
  gtk_window_present (GTK_WINDOW (window));
}

/* Help ▸ Examples: a bundled example, as untitled (Save As keeps a copy). */
gboolean
napkin_window_load_example (NapkinWindow  *self,
                            const char    *name,
                            GError       **error)
{
  g_autofree char *path = g_strdup_printf ("/io/github/napkin/Napkin/examples/%s.napkin", name);
  g_autoptr(GBytes) bytes = NULL;
  g_autoptr(NapkinDiagram) diagram = NULL;
  gsize length;
  const char *data;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), FALSE);

  bytes = g_resources_lookup_data (path, G_RESOURCE_LOOKUP_FLAGS_NONE, error);
  if (bytes == NULL)
    return FALSE;
  data = g_bytes_get_data (bytes, &length);
  diagram = napkin_diagram_load_from_data (data, length, NAPKIN_LOAD_DEFAULT, error);
  if (diagram == NULL)
    return FALSE;
  napkin_window_set_document (self, diagram, NULL);
  self->is_example = TRUE;
  update_title (self);
  return TRUE;
}

static void
open_example_action (GtkWidget  *widget,
                     const char *action_name,
                     GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  NapkinWindow *window = self;
  g_autoptr(GError) error = NULL;

  /* an untouched window shows it, else a new one */
  if (!napkin_window_is_pristine (self))
    window = napkin_window_new (gtk_window_get_application (GTK_WINDOW (self)));
  if (!napkin_window_load_example (window, g_variant_get_string (parameter, NULL), &error))
    {
      napkin_window_show_error (self, error->message);
      if (window != self)
        gtk_window_destroy (GTK_WINDOW (window));
      return;
    }
  gtk_window_present (GTK_WINDOW (window));
}

/* Help ▸ a guide: the installed copy, or the source tree's when run from a build. */
char *
napkin_window_dup_doc_path (const char *name)
{
  g_autofree char *file = g_strconcat (name, ".md", NULL);
  g_autofree char *source = napkin_uninstalled_dir ("docs");
  /* run from a build tree: that tree's guides, not an older installed copy */
  const char *dirs[] = { source ? source : NAPKIN_DOCDIR, NAPKIN_DOCDIR };

  for (guint i = 0; i < G_N_ELEMENTS (dirs); i++)
    {
      char *path = g_build_filename (dirs[i], file, NULL);

      if (g_file_test (path, G_FILE_TEST_IS_REGULAR))
        return path;
      g_free (path);
    }
  return NULL;
}

GtkWindow *
napkin_window_show_guide (NapkinWindow *self,
                          const char   *path)
{
  GtkSourceLanguageManager *languages = gtk_source_language_manager_get_default ();
  g_autoptr(GtkSourceBuffer) buffer = gtk_source_buffer_new_with_language (
    gtk_source_language_manager_get_language (languages, "markdown"));
  g_autofree char *text = NULL;
  g_autofree char *name = g_path_get_basename (path);
  g_autoptr(GError) error = NULL;
  GtkWidget *window, *box, *scroller, *view;

  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);

  if (!g_file_get_contents (path, &text, NULL, &error))
    {
      toast (self, error->message);
      return NULL;
    }
  gtk_text_buffer_set_text (GTK_TEXT_BUFFER (buffer), text, -1);
  window = adw_window_new ();
  gtk_window_set_title (GTK_WINDOW (window), name);
  gtk_window_set_default_size (GTK_WINDOW (window), 860, 720);
  gtk_window_set_transient_for (GTK_WINDOW (window), GTK_WINDOW (self));
  box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  gtk_box_append (GTK_BOX (box), adw_header_bar_new ());
  scroller = gtk_scrolled_window_new ();
  gtk_widget_set_vexpand (scroller, TRUE);
  view = gtk_source_view_new_with_buffer (buffer);
  gtk_text_view_set_editable (GTK_TEXT_VIEW (view), FALSE);
  gtk_text_view_set_wrap_mode (GTK_TEXT_VIEW (view), GTK_WRAP_WORD_CHAR);
  gtk_text_view_set_left_margin (GTK_TEXT_VIEW (view), 16);
  gtk_text_view_set_right_margin (GTK_TEXT_VIEW (view), 16);
  gtk_widget_set_name (view, "guide-text");
  gtk_scrolled_window_set_child (GTK_SCROLLED_WINDOW (scroller), view);
  gtk_box_append (GTK_BOX (box), scroller);
  adw_window_set_content (ADW_WINDOW (window), box);
  gtk_window_present (GTK_WINDOW (window));
  return GTK_WINDOW (window);
}

static void
show_doc_done_cb (GObject      *source,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  g_autofree char *path = user_data;
  g_autoptr(GError) error = NULL;

  if (!gtk_show_uri_full_finish (GTK_WINDOW (source), result, &error))
    {
      g_debug ("no viewer for %s (%s): shown in a window", path, error->message);
      napkin_window_show_guide (NAPKIN_WINDOW (source), path);
    }
}

static void
show_doc_action (GtkWidget  *widget,
                 const char *action_name,
                 GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autofree char *path = napkin_window_dup_doc_path (g_variant_get_string (parameter, NULL));
  g_autofree char *uri = NULL;

  if (path == NULL)
    {
      g_autofree char *message = g_strdup_printf (_("The guide “%s” is not installed"),
                                                  g_variant_get_string (parameter, NULL));

      toast (self, message);
      return;
    }
  uri = g_filename_to_uri (path, NULL, NULL);
  /* the desktop's viewer; where it has none that works (a markdown file's default
   * application may need a terminal there is not), the guide in a window of ours */
  gtk_show_uri_full (GTK_WINDOW (self), uri, GDK_CURRENT_TIME, NULL, show_doc_done_cb, g_strdup (path));
}

static void
run_action (GtkWidget  *widget,
            const char *action_name,
            GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);

  /* the Runs tab shows the progress and the result */
  gtk_stack_set_visible_child_name (GTK_STACK (self->bottom_stack), "run");
  napkin_run_panel_run (NAPKIN_RUN_PANEL (self->run_panel));
}

static void
undo_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);

  napkin_history_undo (self->history);
}

static void
redo_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);

  napkin_history_redo (self->history);
}

static void
close_action (GtkWidget  *widget,
              const char *action_name,
              GVariant   *parameter)
{
  gtk_window_close (GTK_WINDOW (widget));
}

static void
zoom_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  double zoom = napkin_canvas_get_zoom (self->canvas);

  if (g_str_equal (action_name, "view.zoom-in"))
    napkin_canvas_set_zoom (self->canvas, zoom * 1.25);
  else if (g_str_equal (action_name, "view.zoom-out"))
    napkin_canvas_set_zoom (self->canvas, zoom / 1.25);
  else if (g_str_equal (action_name, "view.zoom-reset"))
    napkin_canvas_set_zoom (self->canvas, 1.0);
  else
    napkin_canvas_zoom_to_fit (self->canvas);
}

static gboolean
focus_is_text (NapkinWindow *self)
{
  GtkWidget *focus = gtk_root_get_focus (GTK_ROOT (self));

  return focus != NULL && GTK_IS_EDITABLE (focus);
}

static void
edit_action (GtkWidget  *widget,
             const char *action_name,
             GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autoptr(GError) error = NULL;

  if (g_str_equal (action_name, "edit.delete"))
    {
      if (!napkin_canvas_delete_selection (self->canvas, &error))
        toast (self, error->message);
    }
  else if (g_str_equal (action_name, "edit.copy"))
    napkin_canvas_copy (self->canvas);
  else if (g_str_equal (action_name, "edit.cut"))
    {
      napkin_canvas_copy (self->canvas);
      if (!napkin_canvas_delete_selection (self->canvas, &error))
        toast (self, error->message);
    }
  else if (g_str_equal (action_name, "edit.paste"))
    napkin_canvas_paste (self->canvas);
  else if (g_str_equal (action_name, "edit.select-all"))
    napkin_canvas_select_all (self->canvas);
  else if (g_str_equal (action_name, "edit.add-menu"))
    gtk_menu_button_popup (self->add_button);
}

/* Keys that text fields also use go to the field when one has the focus. */
static gboolean
edit_shortcut_cb (GtkWidget *widget,
                  GVariant  *args,
                  gpointer   user_data)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  const char *action = g_variant_get_string (args, NULL);

  if (focus_is_text (self))
    return FALSE;
  gtk_widget_activate_action (widget, action, NULL);
  return TRUE;
}

static void
add_node_action (GtkWidget  *widget,
                 const char *action_name,
                 GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  g_autofree char *id = NULL;
  NapkinOpKind kind;

  if (!napkin_op_kind_from_string (g_variant_get_string (parameter, NULL), &kind))
    return;
  id = napkin_canvas_add_node_at_center (self->canvas, kind, &error);
  if (id == NULL)
    toast (self, error->message);
  else if (kind == NAPKIN_OP_INPUT || kind == NAPKIN_OP_OUTPUT)
    /* what a new tensor needs first is its name, then its axes (Tab) */
    napkin_inspector_focus_field (self->inspector, "field-name");
  else
    gtk_widget_grab_focus (GTK_WIDGET (self->canvas));
}

static void
add_region_action (GtkWidget  *widget,
                   const char *action_name,
                   GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  g_autoptr(GError) error = NULL;
  g_autofree char *name = NULL;
  NapkinLevel level = NAPKIN_LEVEL_SMEM;

  /* "gpus": the level above device memory (docs/multi-gpu.md) */
  if (parameter != NULL && g_str_equal (g_variant_get_string (parameter, NULL), "gpus"))
    name = napkin_canvas_add_gpus_region (self->canvas, &error);
  else
    {
      if (parameter != NULL)
        napkin_level_from_string (g_variant_get_string (parameter, NULL), &level);
      name = napkin_canvas_add_region (self->canvas, level, &error);
    }
  if (name == NULL)
    toast (self, error->message);
}

static void
region_tool_action (GtkWidget  *widget,
                    const char *action_name,
                    GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);
  NapkinLevel level = NAPKIN_LEVEL_SMEM;

  napkin_level_from_string (g_variant_get_string (parameter, NULL), &level);
  napkin_canvas_set_region_tool (self->canvas, TRUE, level);
  toast (self, _("Drag a box around operations to relabel them; Esc leaves the tool"));
}

static void
suggest_tiles_action (GtkWidget  *widget,
                      const char *action_name,
                      GVariant   *parameter)
{
  NapkinWindow *self = NAPKIN_WINDOW (widget);

  /* the popover searches when it shows (suggestions_show_cb) */
  gtk_menu_button_popup (self->suggest_button);
}

/* The selected suggestion's numbers in the analysis pane, until the list closes. */
static void
suggestions_preview_cb (NapkinWindow  *self,
                        NapkinDiagram *preview,
                        const char    *label)
{
  napkin_analysis_pane_set_preview (NAPKIN_ANALYSIS_PANE (self->analysis_pane), preview, label);
}

/* Searches the document as it is now, for the architecture and element type the
 * analysis pane shows. */
static void
suggestions_show_cb (NapkinWindow *self,
                     GtkWidget    *suggestions)
{
  NapkinAnalysisPane *pane = NAPKIN_ANALYSIS_PANE (self->analysis_pane);
  const NapkinAnalysis *a = napkin_analysis_pane_get_analysis (pane);
  GtkWidget *button = GTK_WIDGET (self->suggest_button);
  double bx, by, px, py;
  int width;

  /* The list goes left of the analysis pane, which previews the selected row (the
   * popover would centre on its button, over the pane); GTK slides it back into
   * the window if that is too far. */
  gtk_widget_measure (suggestions, GTK_ORIENTATION_HORIZONTAL, -1, NULL, &width, NULL, NULL);
  if (gtk_widget_translate_coordinates (button, GTK_WIDGET (self), gtk_widget_get_width (button) / 2.0, 0, &bx, &by)
      && gtk_widget_translate_coordinates (GTK_WIDGET (self->analysis_area), GTK_WIDGET (self), 0, 0, &px, &py))
    {
      int offset = MIN (0, (int) (px - 12 - (bx + width / 2.0)));

      gtk_popover_set_offset (GTK_POPOVER (suggestions), offset, 0);
      gtk_popover_set_has_arrow (GTK_POPOVER (suggestions), offset == 0);
    }

  napkin_tile_suggestions_search (NAPKIN_TILE_SUGGESTIONS (suggestions), self->history,
                                  napkin_analysis_pane_get_arch (pane), a && a->has_dtype,
                                  a ? a->dtype : NAPKIN_DTYPE_FP16);
}

static void
dismiss_banner_action (GtkWidget  *widget,
                       const char *action_name,
                       GVariant   *parameter)
{
  gtk_revealer_set_reveal_child (NAPKIN_WINDOW (widget)->banner, FALSE);
}

/* ---------------------------------------------------------------- close */

static gboolean
close_later (gpointer user_data)
{
  g_autoptr(NapkinWindow) self = user_data;

  gtk_window_close (GTK_WINDOW (self));
  return G_SOURCE_REMOVE;
}

/* The question's answer goes to whoever asked (the window closing itself, or Quit
 * going through the windows, docs/editor.md "Files and windows"). */
static void
answer (NapkinWindow       *self,
        NapkinWindowAnswer  value)
{
  g_autoptr(GTask) task = g_steal_pointer (&self->question);

  self->answer_after_save = FALSE;
  if (task != NULL)
    g_task_return_int (task, value);
}

static void
question_response_cb (AdwMessageDialog *dialog,
                      const char       *response,
                      NapkinWindow     *self)
{
  if (g_str_equal (response, "discard"))
    answer (self, NAPKIN_WINDOW_DISCARDED);
  else if (g_str_equal (response, "save"))
    {
      self->answer_after_save = TRUE;
      save_action (GTK_WIDGET (self), "doc.save", NULL);
    }
  else
    answer (self, NAPKIN_WINDOW_CANCELLED);
}

void
napkin_window_ask_save_async (NapkinWindow        *self,
                              GAsyncReadyCallback  callback,
                              gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  AdwMessageDialog *dialog;
  g_autofree char *name = NULL;

  g_return_if_fail (NAPKIN_IS_WINDOW (self));

  task = g_task_new (self, NULL, callback, user_data);
  if (self->history == NULL || !napkin_history_get_modified (self->history))
    {
      g_task_return_int (task, NAPKIN_WINDOW_SAVED);
      return;
    }
  if (self->question != NULL)
    {
      /* asked already (a second Ctrl+Q): the first question stands */
      g_task_return_int (task, NAPKIN_WINDOW_CANCELLED);
      return;
    }
  self->question = g_steal_pointer (&task);
  name = self->file ? g_file_get_basename (self->file) : g_strdup (_("Untitled Diagram"));
  dialog = ADW_MESSAGE_DIALOG (adw_message_dialog_new (GTK_WINDOW (self), _("Save Changes?"), NULL));
  adw_message_dialog_format_body (dialog, _("“%s” has unsaved changes. Changes which are not saved will be lost."),
                                  name);
  adw_message_dialog_add_responses (dialog, "cancel", _("_Cancel"), "discard", _("_Discard"),
                                    "save", _("_Save"), NULL);
  adw_message_dialog_set_response_appearance (dialog, "discard", ADW_RESPONSE_DESTRUCTIVE);
  adw_message_dialog_set_response_appearance (dialog, "save", ADW_RESPONSE_SUGGESTED);
  adw_message_dialog_set_default_response (dialog, "save");
  adw_message_dialog_set_close_response (dialog, "cancel");
  g_signal_connect_object (dialog, "response", G_CALLBACK (question_response_cb), self, 0);
  gtk_window_present (GTK_WINDOW (self));
  gtk_window_present (GTK_WINDOW (dialog));
}

NapkinWindowAnswer
napkin_window_ask_save_finish (NapkinWindow  *self,
                               GAsyncResult  *result,
                               GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), NAPKIN_WINDOW_CANCELLED);

  return g_task_propagate_int (G_TASK (result), error);
}

void
napkin_window_close_without_asking (NapkinWindow *self)
{
  g_return_if_fail (NAPKIN_IS_WINDOW (self));

  self->close_confirmed = TRUE;
  gtk_window_close (GTK_WINDOW (self));
}

static void
close_answer_cb (GObject      *object,
                 GAsyncResult *result,
                 gpointer      user_data)
{
  NapkinWindow *self = NAPKIN_WINDOW (object);
  NapkinWindowAnswer value = napkin_window_ask_save_finish (self, result, NULL);

  /* closed once the dialog has finished with its response */
  if (value != NAPKIN_WINDOW_CANCELLED)
    {
      self->close_confirmed = TRUE;
      g_idle_add (close_later, g_object_ref (self));
    }
}

static void
save_size (NapkinWindow *self)
{
  int width, height;

  if (self->settings == NULL)
    return;
  gtk_window_get_default_size (GTK_WINDOW (self), &width, &height);
  g_settings_set (self->settings, "window-size", "(ii)", width, height);
  g_settings_set_boolean (self->settings, "window-maximized", gtk_window_is_maximized (GTK_WINDOW (self)));
}

static gboolean
napkin_window_close_request (GtkWindow *window)
{
  NapkinWindow *self = NAPKIN_WINDOW (window);

  if (self->close_confirmed || self->history == NULL || !napkin_history_get_modified (self->history))
    {
      /* Saved, unchanged or discarded: nothing left to recover. */
      if (self->autosaver != NULL)
        napkin_autosaver_discard (self->autosaver);
      save_size (self);
      return GTK_WINDOW_CLASS (napkin_window_parent_class)->close_request (window);
    }
  napkin_window_ask_save_async (self, close_answer_cb, NULL);
  return TRUE;
}

/* ---------------------------------------------------------------- drops, palette, recent */

static gboolean
file_drop_cb (GtkDropTarget *target,
              const GValue  *value,
              double         x,
              double         y,
              NapkinWindow  *self)
{
  GSList *files;

  if (!G_VALUE_HOLDS (value, GDK_TYPE_FILE_LIST))
    return FALSE;
  files = g_value_get_boxed (value);
  for (GSList *l = files; l; l = l->next)
    napkin_application_open_file (NAPKIN_APPLICATION (gtk_window_get_application (GTK_WINDOW (self))),
                                  l->data, self);
  return files != NULL;
}

static GdkContentProvider *
palette_prepare_cb (GtkDragSource *source,
                    double         x,
                    double         y,
                    const char    *kind)
{
  g_autofree char *payload = g_strconcat (NAPKIN_CANVAS_PALETTE_PREFIX, kind, NULL);

  return gdk_content_provider_new_typed (G_TYPE_STRING, payload);
}

static void
build_palette (NapkinWindow *self)
{
  static const struct { const char *kind; const char *label; const char *tooltip; } entries[] = {
    { "input", N_("Input"), N_("A tensor read from device memory") },
    { "output", N_("Output"), N_("A tensor written to device memory") },
    { "contract", N_("Contract"), N_("Einsum-style product and sum: matmul, linear layers") },
    { "map", N_("Map"), N_("Elementwise function: add, mul, scale, exp, GELU…") },
    { "reduce", N_("Reduce"), N_("Sum, max or mean over one axis") },
    { "softmax", N_("Softmax"), N_("Softmax over one axis") },
    { "normalize", N_("Normalize"), N_("LayerNorm or RMSNorm over one axis") },
    { "rearrange", N_("Rearrange"), N_("Transpose, merge or split axes") },
    { "mask", N_("Mask"), N_("Causal, sliding-window or tensor mask on attention scores") },
  };

  for (guint i = 0; i < G_N_ELEMENTS (entries); i++)
    {
      GtkWidget *button = gtk_button_new_with_label (_(entries[i].label));
      GtkDragSource *source = gtk_drag_source_new ();
      g_autofree char *name = g_strdup_printf ("palette-%s", entries[i].kind);

      gtk_widget_set_name (button, name);
      gtk_widget_set_tooltip_text (button, _(entries[i].tooltip));
      gtk_actionable_set_action_name (GTK_ACTIONABLE (button), "edit.add-node");
      gtk_actionable_set_action_target (GTK_ACTIONABLE (button), "s", entries[i].kind);
      gtk_drag_source_set_actions (source, GDK_ACTION_COPY);
      g_signal_connect (source, "prepare", G_CALLBACK (palette_prepare_cb), (gpointer) entries[i].kind);
      gtk_widget_add_controller (button, GTK_EVENT_CONTROLLER (source));
      gtk_box_append (self->palette, button);
    }
}

static void
fill_recent (NapkinWindow *self)
{
  GList *items = gtk_recent_manager_get_items (gtk_recent_manager_get_default ());
  guint count = 0;

  g_menu_remove_all (self->recent_section);
  for (GList *l = items; l && count < 10; l = l->next)
    {
      GtkRecentInfo *info = l->data;
      const char *uri = gtk_recent_info_get_uri (info);
      g_autofree char *label = NULL;
      g_autoptr(GMenuItem) item = NULL;

      if (!g_str_has_suffix (uri, ".napkin") || !gtk_recent_info_exists (info))
        continue;
      label = gtk_recent_info_get_uri_display (info);
      item = g_menu_item_new (label, NULL);
      g_menu_item_set_action_and_target (item, "doc.open-recent", "s", uri);
      g_menu_append_item (self->recent_section, item);
      count++;
    }
  if (count == 0)
    {
      g_autoptr(GMenuItem) item = g_menu_item_new (_("No recent diagrams"), "doc.none");

      g_menu_append_item (self->recent_section, item);
    }
  g_list_free_full (items, (GDestroyNotify) gtk_recent_info_unref);
}

static void
recent_changed_cb (NapkinWindow     *self,
                   GtkRecentManager *manager)
{
  fill_recent (self);
}

/* ---------------------------------------------------------------- architectures */

/* The panes that depend on the selected GPU: the model's numbers, and the code view, which
 * shows what the runner generates on that GPU (the wgmma skeletons on Hopper). */
static void
show_arch (NapkinWindow *self,
           NapkinArch   *arch)
{
  if (arch == NULL)
    return;
  napkin_canvas_set_arch (self->canvas, arch);
  if (self->run_panel)
    napkin_run_panel_set_arch_id (NAPKIN_RUN_PANEL (self->run_panel), arch->id);
  if (self->analysis_pane)
    napkin_analysis_pane_set_arch (NAPKIN_ANALYSIS_PANE (self->analysis_pane), arch);
  if (self->code_view)
    napkin_code_view_set_arch (NAPKIN_CODE_VIEW (self->code_view), arch);
}

static void
arch_selected_cb (NapkinWindow *self,
                  GParamSpec   *pspec,
                  GtkDropDown  *dropdown)
{
  guint i = gtk_drop_down_get_selected (dropdown);

  if (self->settings && self->arch_ids && i < g_strv_length (self->arch_ids))
    g_settings_set_string (self->settings, "architecture", self->arch_ids[i]);
  if (self->arch_ids && i < g_strv_length (self->arch_ids))
    show_arch (self, napkin_arch_registry_lookup (napkin_arch_registry_get_default (), self->arch_ids[i], NULL));
}

static void fill_architectures (NapkinWindow *self);

/* A what-if profile from the analysis pane: list it and select it. */
static void
architecture_added_cb (NapkinWindow       *self,
                       const char         *id,
                       NapkinAnalysisPane *pane)
{
  fill_architectures (self);
  for (guint i = 0; self->arch_ids && self->arch_ids[i]; i++)
    if (g_strcmp0 (self->arch_ids[i], id) == 0)
      gtk_drop_down_set_selected (self->arch_dropdown, i);
}

static void
fill_architectures (NapkinWindow *self)
{
  g_autoptr(GStrvBuilder) names = g_strv_builder_new ();
  g_autoptr(GStrvBuilder) ids = g_strv_builder_new ();
  g_auto(GStrv) name_list = NULL;
  g_autofree char *wanted = self->settings ? g_settings_get_string (self->settings, "architecture") : NULL;
  guint selected = 0, n = 0;

  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();

  n = napkin_arch_registry_count (registry);
  for (guint i = 0; i < n; i++)
    {
      NapkinArch *arch = napkin_arch_registry_get (registry, i);

      const char *name = arch->name ? arch->name : arch->id;
      g_autofree char *marked = NULL;

      g_autofree char *origin = napkin_arch_dup_origin (arch);

      /* profiles from `napkin-cli calibrate` say so in the selector, and any other of
       * the user's (a what-if, or one that hides a bundled profile of its id) too;
       * the pane then says where it comes from (docs/packaging.md) */
      if (napkin_arch_is_measured (arch) && strstr (name, "measured") == NULL)
        name = marked = g_strdup_printf (_("%s (measured)"), name);
      else if (origin != NULL && !napkin_arch_is_measured (arch))
        name = marked = g_strdup_printf (_("%s (yours)"), name);
      g_strv_builder_add (names, name);
      g_strv_builder_add (ids, arch->id);
      if (wanted && g_ascii_strcasecmp (wanted, arch->id) == 0)
        selected = i;
    }
  if (n == 0)
    g_strv_builder_add (names, _("No architectures"));

  name_list = g_strv_builder_end (names);
  /* refilled when a what-if profile is added: connected once, below */
  g_clear_signal_handler (&self->arch_selected_id, self->arch_dropdown);
  g_strfreev (self->arch_ids);
  self->arch_ids = g_strv_builder_end (ids);
  gtk_drop_down_set_model (self->arch_dropdown,
                           G_LIST_MODEL (gtk_string_list_new ((const char *const *) name_list)));
  gtk_drop_down_set_selected (self->arch_dropdown, selected);
  gtk_widget_set_sensitive (GTK_WIDGET (self->arch_dropdown), n > 0);
  if (n > 0)
    show_arch (self, napkin_arch_registry_get (registry, selected));
  self->arch_selected_id = g_signal_connect_object (self->arch_dropdown, "notify::selected",
                                                    G_CALLBACK (arch_selected_cb), self,
                                                    G_CONNECT_SWAPPED);
}

/* ---------------------------------------------------------------- screenshot */

typedef struct
{
  char  *path;
  guint  frames;
  gulong handler;
  GdkFrameClock *clock;
} Screenshot;

static void
screenshot_free (Screenshot *shot)
{
  if (shot->handler)
    g_signal_handler_disconnect (shot->clock, shot->handler);
  g_clear_object (&shot->clock);
  g_free (shot->path);
  g_free (shot);
}

static gboolean
screenshot_save (GTask *task)
{
  NapkinWindow *self = g_task_get_source_object (task);
  Screenshot *shot = g_task_get_task_data (task);
  GtkWidget *widget = GTK_WIDGET (self);
  g_autoptr(GdkPaintable) paintable = gtk_widget_paintable_new (widget);
  g_autoptr(GtkSnapshot) snapshot = gtk_snapshot_new ();
  g_autoptr(GskRenderNode) node = NULL;
  g_autoptr(GdkTexture) texture = NULL;
  int width = gtk_widget_get_width (widget);
  int height = gtk_widget_get_height (widget);
  GskRenderer *renderer = gtk_native_get_renderer (GTK_NATIVE (self));

  gdk_paintable_snapshot (paintable, GDK_SNAPSHOT (snapshot), width, height);
  node = gtk_snapshot_free_to_node (g_steal_pointer (&snapshot));
  if (node == NULL || renderer == NULL)
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_FAILED, _("The window has not drawn anything"));
      g_object_unref (task);
      return G_SOURCE_REMOVE;
    }
  texture = gsk_renderer_render_texture (renderer, node, &GRAPHENE_RECT_INIT (0, 0, width, height));
  if (!gdk_texture_save_to_png (texture, shot->path))
    g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_FAILED, _("%s: cannot write the PNG"), shot->path);
  else
    g_task_return_boolean (task, TRUE);
  g_object_unref (task);
  return G_SOURCE_REMOVE;
}

static void
screenshot_after_paint_cb (GdkFrameClock *clock,
                           GTask         *task)
{
  Screenshot *shot = g_task_get_task_data (task);

  /* The first frame lays out; the inspector fills in from an idle; two painted
   * frames show everything — and the code view its kernel, once generated (a few
   * seconds at most). */
  if (++shot->frames < 3
      || (shot->frames < 600 && !napkin_code_view_is_settled (NAPKIN_CODE_VIEW (NAPKIN_WINDOW (g_task_get_source_object (task))->code_view)))
     )
    {
      gdk_frame_clock_request_phase (clock, GDK_FRAME_CLOCK_PHASE_PAINT);
      gtk_widget_queue_draw (GTK_WIDGET (g_task_get_source_object (task)));
      return;
    }
  /* Right after painting, every widget has its current allocation. */
  g_signal_handler_disconnect (clock, shot->handler);
  shot->handler = 0;
  screenshot_save (task);
}

static void
screenshot_map_cb (NapkinWindow *self,
                   GTask        *task)
{
  Screenshot *shot = g_task_get_task_data (task);

  if (shot->clock != NULL)
    return;
  shot->clock = g_object_ref (gtk_widget_get_frame_clock (GTK_WIDGET (self)));
  shot->handler = g_signal_connect (shot->clock, "after-paint", G_CALLBACK (screenshot_after_paint_cb), task);
  gtk_widget_queue_draw (GTK_WIDGET (self));
}

void
napkin_window_screenshot_async (NapkinWindow        *self,
                                const char          *path,
                                GAsyncReadyCallback  callback,
                                gpointer             user_data)
{
  GTask *task;
  Screenshot *shot;

  g_return_if_fail (NAPKIN_IS_WINDOW (self));
  g_return_if_fail (path != NULL);

  task = g_task_new (self, NULL, callback, user_data);
  shot = g_new0 (Screenshot, 1);
  shot->path = g_strdup (path);
  g_task_set_task_data (task, shot, (GDestroyNotify) screenshot_free);
  if (gtk_widget_get_mapped (GTK_WIDGET (self)))
    screenshot_map_cb (self, task);
  else
    g_signal_connect_object (self, "map", G_CALLBACK (screenshot_map_cb), task, G_CONNECT_SWAPPED);
}

gboolean
napkin_window_screenshot_finish (NapkinWindow  *self,
                                 GAsyncResult  *result,
                                 GError       **error)
{
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

/* ---------------------------------------------------------------- class */

static void
canvas_message_cb (NapkinWindow *self,
                   const char   *message,
                   NapkinCanvas *canvas)
{
  toast (self, message);
}

/* A menu button's tooltip is off while its menu is open: the pointer rests on the
 * button, and the tooltip would show over the menu's first item. */
static void
menu_shown_cb (GtkWidget *popover,
               GtkWidget *button)
{
  gtk_widget_set_has_tooltip (button, FALSE);
  gtk_widget_trigger_tooltip_query (button);
}

static void
menu_hidden_cb (GtkWidget *popover,
                GtkWidget *button)
{
  gtk_widget_set_has_tooltip (button, gtk_widget_get_tooltip_text (button) != NULL);
}

static void
quiet_menu_tooltips (GtkWidget *widget)
{
  if (GTK_IS_MENU_BUTTON (widget) && gtk_menu_button_get_popover (GTK_MENU_BUTTON (widget)) != NULL)
    {
      GtkWidget *popover = GTK_WIDGET (gtk_menu_button_get_popover (GTK_MENU_BUTTON (widget)));

      g_signal_connect_object (popover, "show", G_CALLBACK (menu_shown_cb), widget, 0);
      g_signal_connect_object (popover, "hide", G_CALLBACK (menu_hidden_cb), widget, 0);
    }
  for (GtkWidget *child = gtk_widget_get_first_child (widget); child; child = gtk_widget_get_next_sibling (child))
    quiet_menu_tooltips (child);
}

/* A row of the pane's Kernels section: the code tab in front, on that kernel. */
static void
kernel_activated_cb (NapkinWindow *self,
                     const char   *name,
                     char        **nodes)
{
  if (self->code_view == NULL)
    return;
  gtk_stack_set_visible_child_name (GTK_STACK (self->bottom_stack), "code");
  napkin_code_view_show_kernel (NAPKIN_CODE_VIEW (self->code_view), name, (const char *const *) nodes);
}

static void
runs_changed_cb (NapkinWindow *self)
{
  /* runs are in the document, not in the undo stack: save to keep the change */
  if (self->history != NULL)
    napkin_history_set_unsaved (self->history);
}

/* Below the canvas: the generated code and the runs, one tab each (docs/editor.md,
 * "Code and runs"). */
static void
add_code_and_run (NapkinWindow *self)
{
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 0);
  GtkWidget *stack = gtk_stack_new ();
  GtkWidget *switcher = gtk_stack_switcher_new ();

  self->code_view = napkin_code_view_new ();
  self->run_panel = napkin_run_panel_new ();
  gtk_stack_add_titled (GTK_STACK (stack), self->code_view, "code", _("Code"));
  gtk_stack_add_titled (GTK_STACK (stack), self->run_panel, "run", _("Runs"));
  self->bottom_stack = stack;
  gtk_widget_set_vexpand (stack, TRUE);
  gtk_stack_switcher_set_stack (GTK_STACK_SWITCHER (switcher), GTK_STACK (stack));
  gtk_widget_set_halign (switcher, GTK_ALIGN_START);
  gtk_widget_set_margin_start (switcher, 6);
  gtk_widget_set_margin_top (switcher, 4);
  gtk_box_append (GTK_BOX (box), gtk_separator_new (GTK_ORIENTATION_HORIZONTAL));
  gtk_box_append (GTK_BOX (box), switcher);
  gtk_box_append (GTK_BOX (box), stack);
  gtk_widget_set_size_request (box, -1, 140);
  gtk_paned_set_end_child (self->code_paned, box);
  g_signal_connect_object (self->code_view, "message", G_CALLBACK (canvas_message_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->run_panel, "message", G_CALLBACK (canvas_message_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->run_panel, "runs-changed", G_CALLBACK (runs_changed_cb), self, G_CONNECT_SWAPPED);
}

GtkWidget *
napkin_window_get_code_view (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->code_view;
}

GtkWidget *
napkin_window_get_run_panel (NapkinWindow *self)
{
  g_return_val_if_fail (NAPKIN_IS_WINDOW (self), NULL);
  return self->run_panel;
}

static void
napkin_window_dispose (GObject *object)
{
  NapkinWindow *self = NAPKIN_WINDOW (object);

  if (self->history != NULL)
    {
      g_clear_signal_handler (&self->modified_id, self->history);
      g_clear_signal_handler (&self->undo_id, self->history);
      g_clear_signal_handler (&self->redo_id, self->history);
    }
  if (self->zoom_label_id != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->zoom_label_id);
  self->zoom_label_id = 0;
  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_WINDOW);
  if (self->question != NULL)
    answer (self, NAPKIN_WINDOW_CANCELLED);
  g_clear_object (&self->autosaver);
  g_clear_object (&self->history);
  g_clear_object (&self->file);
  g_clear_object (&self->settings);
  G_OBJECT_CLASS (napkin_window_parent_class)->dispose (object);
}

static void
napkin_window_finalize (GObject *object)
{
  NapkinWindow *self = NAPKIN_WINDOW (object);

  g_clear_pointer (&self->arch_ids, g_strfreev);
  g_clear_pointer (&self->last_toast, g_free);
  G_OBJECT_CLASS (napkin_window_parent_class)->finalize (object);
}

static void
add_shortcut (GtkWidgetClass  *widget_class,
              guint            key,
              GdkModifierType  mods,
              const char      *action)
{
  gtk_widget_class_add_binding_action (widget_class, key, mods, action, NULL);
}

static void
add_edit_shortcut (GtkWidgetClass  *widget_class,
                   guint            key,
                   GdkModifierType  mods,
                   const char      *action)
{
  gtk_widget_class_add_binding (widget_class, key, mods, edit_shortcut_cb, "s", action);
}

static void
napkin_window_class_init (NapkinWindowClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);
  GtkWindowClass *window_class = GTK_WINDOW_CLASS (klass);

  object_class->dispose = napkin_window_dispose;
  object_class->finalize = napkin_window_finalize;
  window_class->close_request = napkin_window_close_request;

  g_type_ensure (NAPKIN_TYPE_CANVAS);
  g_type_ensure (NAPKIN_TYPE_INSPECTOR);
  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-window.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, window_title);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, toast_overlay);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, banner);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, banner_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, banner_details);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, palette);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, canvas);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, inspector);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, arch_dropdown);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, analysis_area);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, code_paned);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, zoom_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, add_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, suggest_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinWindow, recent_section);

  gtk_widget_class_install_action (widget_class, "doc.new", NULL, new_action);
  gtk_widget_class_install_action (widget_class, "doc.open", NULL, open_action);
  gtk_widget_class_install_action (widget_class, "doc.open-recent", "s", open_recent_action);
  gtk_widget_class_install_action (widget_class, "win.import", NULL, import_action);
  gtk_widget_class_install_action (widget_class, "win.import-file", "s", import_file_action);
  gtk_widget_class_install_action (widget_class, "win.backward", "s", backward_action);
  gtk_widget_class_install_action (widget_class, "win.backward-choose", NULL, backward_choose_action);
  gtk_widget_class_install_action (widget_class, "win.notify", "s", notify_action);
  gtk_widget_class_install_action (widget_class, "doc.save", NULL, save_action);
  gtk_widget_class_install_action (widget_class, "doc.save-as", NULL, save_as_action);
  gtk_widget_class_install_action (widget_class, "doc.export", NULL, export_action);
  gtk_widget_class_install_action (widget_class, "doc.undo", NULL, undo_action);
  gtk_widget_class_install_action (widget_class, "doc.redo", NULL, redo_action);
  gtk_widget_class_install_action (widget_class, "doc.close", NULL, close_action);
  gtk_widget_class_install_action (widget_class, "view.zoom-in", NULL, zoom_action);
  gtk_widget_class_install_action (widget_class, "view.zoom-out", NULL, zoom_action);
  gtk_widget_class_install_action (widget_class, "view.zoom-fit", NULL, zoom_action);
  gtk_widget_class_install_action (widget_class, "view.zoom-reset", NULL, zoom_action);
  gtk_widget_class_install_action (widget_class, "edit.delete", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.copy", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.cut", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.paste", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.select-all", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.add-menu", NULL, edit_action);
  gtk_widget_class_install_action (widget_class, "edit.add-node", "s", add_node_action);
  gtk_widget_class_install_action (widget_class, "edit.add-region", "s", add_region_action);
  gtk_widget_class_install_action (widget_class, "edit.region-tool", "s", region_tool_action);
  gtk_widget_class_install_action (widget_class, "win.dismiss-banner", NULL, dismiss_banner_action);
  gtk_widget_class_install_action (widget_class, "win.suggest-tiles", NULL, suggest_tiles_action);
  gtk_widget_class_install_action (widget_class, "win.run", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "win.open-example", "s", open_example_action);
  gtk_widget_class_install_action (widget_class, "win.show-doc", "s", show_doc_action);

  add_shortcut (widget_class, GDK_KEY_n, GDK_CONTROL_MASK, "doc.new");
  add_shortcut (widget_class, GDK_KEY_o, GDK_CONTROL_MASK, "doc.open");
  add_shortcut (widget_class, GDK_KEY_s, GDK_CONTROL_MASK, "doc.save");
  add_shortcut (widget_class, GDK_KEY_s, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "doc.save-as");
  add_shortcut (widget_class, GDK_KEY_e, GDK_CONTROL_MASK, "doc.export");
  add_shortcut (widget_class, GDK_KEY_w, GDK_CONTROL_MASK, "doc.close");
  add_edit_shortcut (widget_class, GDK_KEY_z, GDK_CONTROL_MASK, "doc.undo");
  add_edit_shortcut (widget_class, GDK_KEY_z, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "doc.redo");
  add_edit_shortcut (widget_class, GDK_KEY_y, GDK_CONTROL_MASK, "doc.redo");
  add_shortcut (widget_class, GDK_KEY_plus, GDK_CONTROL_MASK, "view.zoom-in");
  add_shortcut (widget_class, GDK_KEY_equal, GDK_CONTROL_MASK, "view.zoom-in");
  add_shortcut (widget_class, GDK_KEY_KP_Add, GDK_CONTROL_MASK, "view.zoom-in");
  add_shortcut (widget_class, GDK_KEY_minus, GDK_CONTROL_MASK, "view.zoom-out");
  add_shortcut (widget_class, GDK_KEY_KP_Subtract, GDK_CONTROL_MASK, "view.zoom-out");
  add_shortcut (widget_class, GDK_KEY_0, GDK_CONTROL_MASK, "view.zoom-fit");
  add_shortcut (widget_class, GDK_KEY_1, GDK_CONTROL_MASK, "view.zoom-reset");
  add_edit_shortcut (widget_class, GDK_KEY_Delete, 0, "edit.delete");
  add_edit_shortcut (widget_class, GDK_KEY_BackSpace, 0, "edit.delete");
  add_edit_shortcut (widget_class, GDK_KEY_c, GDK_CONTROL_MASK, "edit.copy");
  add_edit_shortcut (widget_class, GDK_KEY_x, GDK_CONTROL_MASK, "edit.cut");
  add_edit_shortcut (widget_class, GDK_KEY_v, GDK_CONTROL_MASK, "edit.paste");
  add_edit_shortcut (widget_class, GDK_KEY_a, GDK_CONTROL_MASK, "edit.select-all");
  add_shortcut (widget_class, GDK_KEY_a, GDK_CONTROL_MASK | GDK_SHIFT_MASK, "edit.add-menu");
  add_shortcut (widget_class, GDK_KEY_t, GDK_CONTROL_MASK, "win.suggest-tiles");
  add_shortcut (widget_class, GDK_KEY_F5, 0, "win.run");
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r, GDK_CONTROL_MASK, "edit.add-region", "s", "smem");
  gtk_widget_class_add_binding_action (widget_class, GDK_KEY_r, GDK_CONTROL_MASK | GDK_SHIFT_MASK,
                                       "edit.add-region", "s", "registers");
}

static void
napkin_window_init (NapkinWindow *self)
{
  GtkDropTarget *drop;
  GSettingsSchemaSource *source = g_settings_schema_source_get_default ();
  g_autoptr(GSettingsSchema) schema = source ? g_settings_schema_source_lookup (source, APP_ID, TRUE) : NULL;

  gtk_widget_init_template (GTK_WIDGET (self));
  /* the live analysis beside the canvas, below the inspector */
  self->analysis_pane = napkin_analysis_pane_new ();
  gtk_widget_set_vexpand (self->analysis_pane, TRUE);
  gtk_widget_set_hexpand (self->analysis_pane, TRUE);
  gtk_box_append (self->analysis_area, self->analysis_pane);
  gtk_widget_set_vexpand (GTK_WIDGET (self->analysis_area), TRUE);
  gtk_widget_set_visible (GTK_WIDGET (self->analysis_area), TRUE);
  g_signal_connect_object (self->analysis_pane, "architecture-added", G_CALLBACK (architecture_added_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->analysis_pane, "message", G_CALLBACK (canvas_message_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->analysis_pane, "kernel-activated", G_CALLBACK (kernel_activated_cb), self,
                           G_CONNECT_SWAPPED);
  {
    GtkWidget *suggestions = napkin_tile_suggestions_new ();

    gtk_menu_button_set_popover (self->suggest_button, suggestions);
    gtk_widget_set_visible (GTK_WIDGET (self->suggest_button), TRUE);
    g_signal_connect_object (suggestions, "show", G_CALLBACK (suggestions_show_cb), self, G_CONNECT_SWAPPED);
    g_signal_connect_object (suggestions, "message", G_CALLBACK (canvas_message_cb), self, G_CONNECT_SWAPPED);
    g_signal_connect_object (suggestions, "preview", G_CALLBACK (suggestions_preview_cb), self, G_CONNECT_SWAPPED);
  }
  add_code_and_run (self);
  quiet_menu_tooltips (GTK_WIDGET (self));

  /* Run from a build tree without the schema installed, settings are not kept. */
  if (schema != NULL)
    {
      int width, height;

      self->settings = g_settings_new (APP_ID);
      g_settings_get (self->settings, "window-size", "(ii)", &width, &height);
      gtk_window_set_default_size (GTK_WINDOW (self), width, height);
      if (g_settings_get_boolean (self->settings, "window-maximized"))
        gtk_window_maximize (GTK_WINDOW (self));
    }

  build_palette (self);
  fill_architectures (self);
  fill_recent (self);
  g_signal_connect_object (gtk_recent_manager_get_default (), "changed", G_CALLBACK (recent_changed_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->canvas, "notify::zoom", G_CALLBACK (zoom_notify_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->canvas, "message", G_CALLBACK (canvas_message_cb), self, G_CONNECT_SWAPPED);

  drop = gtk_drop_target_new (GDK_TYPE_FILE_LIST, GDK_ACTION_COPY);
  g_signal_connect (drop, "drop", G_CALLBACK (file_drop_cb), self);
  gtk_widget_add_controller (GTK_WIDGET (self), GTK_EVENT_CONTROLLER (drop));

  update_undo (self);
}

NapkinWindow *
napkin_window_new (GtkApplication *application)
{
  return g_object_new (NAPKIN_TYPE_WINDOW, "application", application, NULL);
}
