/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-code-view"

#include "config.h"

#include <string.h>

#include <adwaita.h>
#include <glib/gi18n.h>
#include <gtksourceview/gtksource.h>

#include "napkin-code-view.h"
#include "napkin-codegen.h"
#include "napkin-file.h"
#include "napkin-ir.h"

struct _NapkinCodeView
{
  GtkWidget        parent_instance;

  /* template */
  GtkToggleButton *cuda_button;
  GtkToggleButton *pseudo_button;
  GtkLabel        *summary_label;
  GtkSpinner      *spinner;
  GtkSourceView   *source_view;

  NapkinDiagram   *diagram;
  gulong           changed_id;
  GCancellable    *cancellable;    /* the update in flight */
  guint            update_id;      /* coalescing timeout */
  gboolean         pending;        /* the diagram changed while a worker ran */

  NapkinCodeKind   kind;
  NapkinCodegenFlags flags;        /* the target's paths: sm_90a gets the wgmma skeletons */
  NapkinArch      *arch;           /* the profile the plan is made for (NULL: the flags' target's) */
  guint64          generation;     /* of the texts below */
  char            *cuda;
  char            *pseudo;
  char            *summary;
  gboolean         failed;
  GStrv            kernel_names;   /* CUDA: each kernel's function name … */
  GStrv            kernel_owners;  /* … and the plan kernel it belongs to ("" for none) */
  GStrv            shown_names;    /* the same for the text on show, until show_text replaces it */
  GStrv            shown_owners;
  GFile           *export_folder;  /* where and as what the exports start (the window's) */
  char            *export_stem;
  int              opened_line;    /* where the view last opened on a kernel (-1: none) … */
  char            *opened_owner;   /* … and whose ("": the first kernel) */
  char            *wanted_kernel;  /* show_kernel's, until the code that has it arrives */
  GStrv            wanted_nodes;
  gboolean         at_kernel;      /* scrolled to the kernel once for this document and kind */
  guint            scroll_tick;
  guint            scroll_frames;
  gint64           scroll_started_us;   /* the frame clock's time at the first of them */
  gboolean         scroll_pending;  /* to the kernel, once the view is shown */
};

G_DEFINE_FINAL_TYPE (NapkinCodeView, napkin_code_view, GTK_TYPE_WIDGET)

enum
{
  PROP_0,
  PROP_KIND,
  PROP_GENERATION,
  N_PROPS
};

enum
{
  MESSAGE,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

/* Edits come in bursts (a drag moves a node sixty times a second): wait this
 * long after the last one before generating. */
#define UPDATE_DELAY_MS 120

/* ---- the worker: pure functions of a private copy of the diagram ---------------------- */

typedef struct
{
  guint64  generation;
  char    *cuda;
  char    *pseudo;
  char    *summary;
  GStrv    kernel_names;
  GStrv    kernel_owners;
  gboolean failed;
} CodeResult;

static void
code_result_free (CodeResult *result)
{
  g_free (result->cuda);
  g_free (result->pseudo);
  g_free (result->summary);
  g_strfreev (result->kernel_names);
  g_strfreev (result->kernel_owners);
  g_free (result);
}

/* Each kernel's function name and the plan kernel it belongs to, for show_kernel, as
 * the Kernels section names it (napkin_plan_kernel_label: a repack beside a GEMM is
 * "NAME (repack)"), so that a row opens its own kernel, not the first of its region's. */
static void
kernel_owners (NapkinCudaModule *module,
               CodeResult       *result)
{
  g_autoptr(GStrvBuilder) names = g_strv_builder_new ();
  g_autoptr(GStrvBuilder) owners = g_strv_builder_new ();

  for (guint k = 0; k < module->kernels->len; k++)
    {
      NapkinCudaKernel *kernel = g_ptr_array_index (module->kernels, k);
      g_autofree char *owner = kernel->owner ? napkin_plan_kernel_label (kernel->owner, kernel->owner_kind)
                                             : g_strdup ("");

      g_strv_builder_add (names, kernel->name);
      g_strv_builder_add (owners, owner);
    }
  result->kernel_names = g_strv_builder_end (names);
  result->kernel_owners = g_strv_builder_end (owners);
}

static char *
format_bytes (gint64 bytes)
{
  return g_format_size_full (bytes, G_FORMAT_SIZE_IEC_UNITS);
}

static char *
kernels_summary (NapkinCudaModule *module)
{
  GString *s = g_string_new (NULL);

  g_string_append_printf (s, ngettext ("%u kernel", "%u kernels", module->kernels->len), module->kernels->len);
  for (guint k = 0; k < module->kernels->len; k++)
    {
      NapkinCudaKernel *kernel = g_ptr_array_index (module->kernels, k);
      g_autofree char *smem = format_bytes (kernel->smem_bytes);
      g_autofree char *grid = g_strdup_printf ("%" G_GINT64_FORMAT, kernel->grid);

      /* TRANSLATORS: kernel name: skeleton, blocks × threads, shared memory */
      g_string_append_printf (s, _(" · %s: %s, %s × %u threads, %s shared"), kernel->name, kernel->skeleton, grid,
                              kernel->threads, smem);
    }
  return g_string_free (s, FALSE);
}

/* Plans for `arch` (the analysis pane's GPU: the plan it prices), lowers the plan's
 * diagram and prints what is asked for; NULL out-pointers are skipped. */
static gboolean
generate (NapkinDiagram     *diagram,
          NapkinArch        *arch,
          NapkinCodegenFlags flags,
          char          **cuda,
          char          **pseudo,
          char          **standalone,
          CodeResult     *result,
          GError        **error)
{
  g_autoptr(NapkinPlan) plan = arch != NULL ? napkin_plan_build (diagram, arch, NULL, error) : NULL;
  g_autoptr(NapkinIrProgram) program = NULL;
  g_autoptr(NapkinCudaModule) module = NULL;

  if (arch != NULL && plan == NULL)
    return FALSE;
  program = napkin_ir_lower (plan != NULL ? plan->diagram : diagram, NAPKIN_LOWER_DEFAULT, error);
  if (program == NULL)
    return FALSE;
  if (pseudo != NULL)
    *pseudo = napkin_codegen_pseudocode (program);
  if (cuda == NULL && standalone == NULL && result == NULL)
    return TRUE;

  module = plan != NULL ? napkin_codegen_cuda_planned (g_steal_pointer (&program), plan, flags, NULL, error)
                        : napkin_codegen_cuda (g_steal_pointer (&program), flags, NULL, error);
  if (module == NULL)
    return FALSE;
  if (cuda != NULL)
    *cuda = g_strdup (module->source);
  if (result != NULL)
    {
      result->summary = kernels_summary (module);
      kernel_owners (module, result);
    }
  if (standalone != NULL)
    {
      /* The same fp32 reference as napkin-cli codegen --target standalone. */
      g_autoptr(NapkinIrProgram) plain = napkin_ir_lower (diagram, NAPKIN_LOWER_PLAIN | NAPKIN_LOWER_FP32_SCRATCH,
                                                          error);
      g_autoptr(NapkinCudaModule) reference = NULL;

      if (plain == NULL)
        return FALSE;
      reference = napkin_codegen_cuda (g_steal_pointer (&plain), NAPKIN_CODEGEN_GENERIC_ONLY, "napkin_ref_", error);
      if (reference == NULL)
        return FALSE;
      *standalone = napkin_codegen_standalone (module, reference, napkin_diagram_get_title (diagram));
    }
  return TRUE;
}

/* The worker's input is the document as JSON, read back in the worker: a
 * napkin_diagram_copy would share refcounted json-c extras with the editor, and
 * json-c's counts are not atomic. */
typedef struct
{
  char               *json;
  gsize               length;
  guint64             generation;
  NapkinCodegenFlags  flags;
  NapkinArch         *arch;
} WorkerInput;

static void
worker_input_free (WorkerInput *input)
{
  g_free (input->json);
  g_clear_pointer (&input->arch, napkin_arch_unref);
  g_free (input);
}

static WorkerInput *
worker_input_new (NapkinDiagram      *diagram,
                  NapkinCodegenFlags  flags,
                  NapkinArch         *arch)
{
  WorkerInput *input = g_new0 (WorkerInput, 1);

  input->flags = flags;
  input->arch = arch != NULL ? napkin_arch_ref (arch) : NULL;
  input->json = napkin_diagram_save_to_data (diagram, &input->length);
  input->generation = napkin_diagram_get_generation (diagram);
  return input;
}

static void
update_thread (GTask        *task,
               gpointer      source_object,
               gpointer      task_data,
               GCancellable *cancellable)
{
  WorkerInput *input = task_data;
  CodeResult *result = g_new0 (CodeResult, 1);
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_data (input->json, input->length, 0, &error);

  result->generation = input->generation;
  if (diagram == NULL || !generate (diagram, input->arch, input->flags, &result->cuda, &result->pseudo, NULL, result, &error))
    {
      g_clear_pointer (&result->cuda, g_free);
      g_clear_pointer (&result->summary, g_free);
      result->failed = TRUE;
      result->summary = g_strdup_printf (_("No code for this diagram: %s"), error->message);
      if (result->pseudo == NULL)
        result->pseudo = g_strdup_printf ("-- %s\n", result->summary);
      result->cuda = g_strdup_printf ("// %s\n", result->summary);
    }
  g_task_return_pointer (task, result, (GDestroyNotify) code_result_free);
}

/* ---- showing ----------------------------------------------------------------------------- */

/* GtkTextView lays long texts out in the background and guesses the heights of the
 * lines it has not reached, so one scroll can land short: scroll again each frame
 * until the kernel’s line is at the top (60 frames, or up to thirty seconds). */
static gboolean
scroll_to_kernel_tick (GtkWidget     *widget,
                       GdkFrameClock *clock,
                       gpointer       user_data)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (widget);
  GtkTextView *view = GTK_TEXT_VIEW (self->source_view);
  GtkTextMark *mark = gtk_text_buffer_get_mark (gtk_text_view_get_buffer (view), "napkin-kernel");
  GdkRectangle visible;
  GtkTextIter top, at;

  if (mark != NULL)
    {
      gtk_text_view_get_visible_rect (view, &visible);
      gtk_text_view_get_line_at_y (view, &top, visible.y, NULL);
      gtk_text_buffer_get_iter_at_mark (gtk_text_view_get_buffer (view), &at, mark);
      if (gtk_text_iter_get_line (&top) != gtk_text_iter_get_line (&at))
        {
          int y, height;

          /* the adjustment set directly: gtk_text_view_scroll_to_mark animates it,
           * and a window closed during that animation raised a GLib critical
           * (g_signal_handler_disconnect of handler 0) under GTK 4.8 */
          gtk_text_view_get_line_yrange (view, &at, &y, &height);
          gtk_adjustment_set_value (gtk_scrollable_get_vadjustment (GTK_SCROLLABLE (view)), y);
        }
      else if (self->scroll_frames > 2)
        mark = NULL;   /* there, and laid out */
    }
  /* a second's frames at least, and up to half a minute where the layout is slow (a
   * long kernel on a loaded machine): the line heights settle as it goes; the user's
   * own scrolling or keys end it at once (user_scrolled_cb) */
  if (self->scroll_frames++ == 0)
    self->scroll_started_us = gdk_frame_clock_get_frame_time (clock);
  if (mark != NULL && (self->scroll_frames < 60
                       || gdk_frame_clock_get_frame_time (clock) - self->scroll_started_us < 30 * G_USEC_PER_SEC))
    return G_SOURCE_CONTINUE;
  self->scroll_frames = 0;
  self->scroll_tick = 0;
  self->scroll_pending = FALSE;
  return G_SOURCE_REMOVE;
}

/* The user scrolls or presses a key in the code: a scroll of ours still under way
 * stops where it is, so that it does not pull the view back. */
static gboolean
user_scrolled_cb (NapkinCodeView *self)
{
  if (self->scroll_tick != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->scroll_tick);
  self->scroll_tick = 0;
  self->scroll_frames = 0;
  self->scroll_pending = FALSE;
  return GDK_EVENT_PROPAGATE;
}

/* A hidden view (the Runs tab in front) scrolls when it is shown: its lines are
 * laid out only then. */
static void
start_scroll_ticks (NapkinCodeView *self)
{
  if (self->scroll_tick == 0 && gtk_widget_get_mapped (GTK_WIDGET (self)))
    self->scroll_tick = gtk_widget_add_tick_callback (GTK_WIDGET (self), scroll_to_kernel_tick, NULL, NULL);
}

static void
source_view_map_cb (NapkinCodeView *self)
{
  if (self->scroll_pending)
    start_scroll_ticks (self);
}

/* Does the line at `p` start kernel `name`: its function ("NAME (") or, for a kernel
 * printed from a template of kernels/, the template's name for it ("#define NKP_NAME
 * NAME")? */
static gboolean
starts_kernel (const char *p,
               const char *name)
{
  gsize n = strlen (name);

  if (g_str_has_prefix (p, "#define NKP_NAME "))
    p += strlen ("#define NKP_NAME ");
  else if (!(strncmp (p, name, n) == 0 && g_str_has_prefix (p + n, " (")))
    return FALSE;
  return strncmp (p, name, n) == 0 && (p[n] == ' ' || p[n] == '\n');
}

/* The line a kernel starts on in `text`: the CUDA function of the plan kernel
 * `owner` (its name from the module), or the pseudocode's "kernel …:" line of one of
 * `nodes`; with no owner, the first __global__. -1: not found. */
static int
kernel_line (NapkinCodeView *self,
             const char     *text,
             const char     *owner,
             const char     *const *nodes)
{
  const char *at = NULL;
  int line = 0;

  if (self->kind == NAPKIN_CODE_CUDA && owner == NULL)
    at = strstr (text, "__global__");
  else if (self->kind == NAPKIN_CODE_CUDA)
    for (guint k = 0; at == NULL && self->kernel_names && self->kernel_names[k]; k++)
      if (self->kernel_owners[k] && g_str_equal (self->kernel_owners[k], owner))
        for (const char *p = text; at == NULL && (p = strchr (p, '\n')) != NULL; p++)
          if (starts_kernel (p + 1, self->kernel_names[k]))
            at = p;
  if (self->kind == NAPKIN_CODE_PSEUDO && nodes != NULL)
    for (const char *p = text; at == NULL && (p = strstr (p, "\nkernel ")) != NULL; p++)
      {
        const char *colon = strchr (p + 1, ':');
        const char *eol = strchr (p + 1, '\n');
        g_autofree char *what = colon && (eol == NULL || colon < eol) ? g_strndup (colon + 1, eol ? eol - colon - 1 : -1)
                                                                       : NULL;
        g_auto(GStrv) words = what ? g_strsplit_set (what, " ,", -1) : NULL;

        for (guint n = 0; words && nodes[n] && at == NULL; n++)
          if (g_strv_contains ((const char *const *) words, nodes[n]))
            at = p + 1;
      }
  if (at == NULL)
    return -1;
  for (const char *p = text; p < at; p++)
    line += *p == '\n';
  return line + (*at == '\n');
}

/* `line`, or the comment above it that belongs to it (a dozen lines at most). */
static int
climb_comment (GtkTextBuffer *buffer,
               int            line)
{
  for (guint climbed = 0; line > 0 && climbed < 12; climbed++)
    {
      GtkTextIter prev, prev_end;
      g_autofree char *prev_text = NULL;

      gtk_text_buffer_get_iter_at_line (buffer, &prev, line - 1);
      prev_end = prev;
      gtk_text_iter_forward_to_line_end (&prev_end);
      prev_text = gtk_text_buffer_get_text (buffer, &prev, &prev_end, FALSE);
      if (!g_str_has_prefix (g_strchug (prev_text), "/*") && !g_str_has_prefix (prev_text, "*")
          && !g_str_has_prefix (prev_text, "//"))
        break;
      line--;
    }
  return line;
}

/* Puts `line` at the top of the view, frame after frame until it is laid out. */
static void
scroll_to_line (NapkinCodeView *self,
                int             line,
                gboolean        cursor)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (self->source_view));
  GtkTextMark *mark = gtk_text_buffer_get_mark (buffer, "napkin-kernel");
  GtkTextIter at;

  gtk_text_buffer_get_iter_at_line (buffer, &at, line);
  if (cursor)
    gtk_text_buffer_place_cursor (buffer, &at);
  if (mark == NULL)
    mark = gtk_text_buffer_create_mark (buffer, "napkin-kernel", &at, TRUE);
  else
    gtk_text_buffer_move_mark (buffer, mark, &at);
  /* again until the lines are laid out: before that their heights are guesses */
  self->scroll_frames = 0;
  self->scroll_pending = TRUE;
  start_scroll_ticks (self);
}

/* The line at the top of the view, and the cursor's. */
static void
view_lines (NapkinCodeView *self,
            int            *top,
            int            *cursor)
{
  GtkTextView *view = GTK_TEXT_VIEW (self->source_view);
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (view);
  GdkRectangle visible;
  GtkTextIter iter;

  gtk_text_view_get_visible_rect (view, &visible);
  gtk_text_view_get_line_at_y (view, &iter, visible.y, NULL);
  *top = gtk_text_iter_get_line (&iter);
  gtk_text_buffer_get_iter_at_mark (buffer, &iter, gtk_text_buffer_get_insert (buffer));
  *cursor = gtk_text_iter_get_line (&iter);
}

/* Where the reader was, in the new text of an edit: in a kernel, the same line of the
 * same plan kernel's code (or, where that kernel is gone, the first kernel); in the
 * prelude, the same line. */
static int
kept_line (NapkinCodeView *self,
           const char     *old,
           const char     *text,
           int             top)
{
  int start = -1, line = 0, found;
  const char *owner = NULL;

  if (self->kind != NAPKIN_CODE_CUDA || self->shown_names == NULL)
    return top;
  for (const char *p = old; *p && line <= top; p++)
    {
      if (p == old || p[-1] == '\n')
        for (guint k = 0; self->shown_names[k]; k++)
          if (starts_kernel (p, self->shown_names[k]))
            {
              start = line;
              owner = self->shown_owners[k];
            }
      line += *p == '\n';
    }
  if (start < 0)
    return top;
  found = owner && *owner ? kernel_line (self, text, owner, NULL) : -1;
  if (found < 0)
    return -2;   /* that kernel is gone: the new code opens on its first kernel */
  return found + (top - start);
}

static void
show_text (NapkinCodeView *self)
{
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (self->source_view));
  GtkSourceLanguageManager *languages = gtk_source_language_manager_get_default ();
  const char *text = self->kind == NAPKIN_CODE_PSEUDO ? self->pseudo : self->cuda;
  g_autofree char *current = NULL;
  GtkTextIter start, end;

  gtk_source_buffer_set_language (GTK_SOURCE_BUFFER (buffer),
                                  self->kind == NAPKIN_CODE_PSEUDO
                                    ? NULL
                                    : gtk_source_language_manager_get_language (languages, "cuda"));
  gtk_text_buffer_get_bounds (buffer, &start, &end);
  current = gtk_text_buffer_get_text (buffer, &start, &end, TRUE);
  /* unchanged code (a node moved): the scroll position stays as it is; new code after
   * an edit opens where the user was reading, not on line 1 (docs/editor.md) */
  if (g_strcmp0 (current, text ? text : "") != 0)
    {
      int top = 0, cursor = 0;
      gboolean keep = self->at_kernel && self->wanted_kernel == NULL && *current != '\0';

      if (keep)
        view_lines (self, &top, &cursor);
      gtk_text_buffer_set_text (buffer, text ? text : "", -1);
      if (keep && top == self->opened_line)
        {
          /* still where it opened: it follows that kernel into the new code */
          keep = FALSE;
          self->at_kernel = FALSE;
          if (self->opened_owner != NULL && *self->opened_owner != '\0')
            self->wanted_kernel = g_strdup (self->opened_owner);
        }
      if (keep)
        {
          GtkTextIter at;
          int line = kept_line (self, current, text ? text : "", top);

          gtk_text_buffer_get_iter_at_line (buffer, &at, cursor + (line >= 0 ? line - top : 0));
          gtk_text_buffer_place_cursor (buffer, &at);
          if (line >= 0)
            scroll_to_line (self, MIN (line, gtk_text_buffer_get_line_count (buffer) - 1), FALSE);
          else
            self->at_kernel = FALSE;
        }
    }

  /* A new document opens on its kernel, not on the prelude's macros; a kernel asked
   * for (the pane's Kernels section) is shown once its code is there; after that the
   * user's scrolling is left alone. */
  if ((!self->at_kernel || self->wanted_kernel != NULL) && text != NULL && !self->failed)
    {
      int line = kernel_line (self, text, self->wanted_kernel, (const char *const *) self->wanted_nodes);

      /* a kernel asked for and gone: the first one */
      if (line < 0 && self->wanted_kernel != NULL)
        line = kernel_line (self, text, NULL, NULL);
      self->at_kernel = TRUE;
      g_free (self->opened_owner);
      self->opened_owner = g_strdup (self->wanted_kernel ? self->wanted_kernel : "");
      g_clear_pointer (&self->wanted_kernel, g_free);
      g_clear_pointer (&self->wanted_nodes, g_strfreev);
      self->opened_line = line >= 0 && self->kind == NAPKIN_CODE_CUDA ? climb_comment (buffer, line) : line;
      if (line >= 0)
        scroll_to_line (self, self->opened_line, TRUE);
    }

  gtk_label_set_text (self->summary_label, self->summary ? self->summary : "");
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->summary_label), self->summary);
  if (self->failed)
    gtk_widget_add_css_class (GTK_WIDGET (self->summary_label), "error");
  else
    gtk_widget_remove_css_class (GTK_WIDGET (self->summary_label), "error");
}

void
napkin_code_view_show_kernel (NapkinCodeView     *self,
                              const char         *owner,
                              const char * const *nodes)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));
  g_return_if_fail (owner != NULL);

  g_free (self->wanted_kernel);
  self->wanted_kernel = g_strdup (owner);
  g_strfreev (self->wanted_nodes);
  self->wanted_nodes = g_strdupv ((char **) nodes);
  /* the code on show is of this generation: now; else when the worker's arrives */
  if (self->diagram != NULL && self->generation == napkin_diagram_get_generation (self->diagram))
    show_text (self);
}

static void start_update (NapkinCodeView *self);

static void
update_done (GObject      *object,
             GAsyncResult *res,
             gpointer      user_data)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);
  g_autoptr(GError) error = NULL;
  CodeResult *result = g_task_propagate_pointer (G_TASK (res), &error);

  if (result == NULL)
    return;   /* cancelled: the document was replaced or the widget is going away */

  g_clear_object (&self->cancellable);
  gtk_spinner_stop (self->spinner);
  g_free (self->cuda);
  g_free (self->pseudo);
  g_free (self->summary);
  self->cuda = g_steal_pointer (&result->cuda);
  self->pseudo = g_steal_pointer (&result->pseudo);
  self->summary = g_steal_pointer (&result->summary);
  g_strfreev (self->shown_names);
  g_strfreev (self->shown_owners);
  self->shown_names = g_steal_pointer (&self->kernel_names);
  self->shown_owners = g_steal_pointer (&self->kernel_owners);
  self->kernel_names = g_steal_pointer (&result->kernel_names);
  self->kernel_owners = g_steal_pointer (&result->kernel_owners);
  self->failed = result->failed;
  self->generation = result->generation;
  code_result_free (result);
  show_text (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_GENERATION]);

  if (self->pending || (self->diagram && napkin_diagram_get_generation (self->diagram) != self->generation))
    {
      self->pending = FALSE;
      start_update (self);
    }
}

static void
start_update (NapkinCodeView *self)
{
  g_autoptr(GTask) task = NULL;

  if (self->diagram == NULL)
    return;
  if (self->cancellable != NULL)
    {
      self->pending = TRUE;   /* one worker at a time; the newest state follows */
      return;
    }
  self->cancellable = g_cancellable_new ();
  task = g_task_new (self, self->cancellable, update_done, NULL);
  g_task_set_source_tag (task, (gpointer) (guintptr) start_update);
  g_task_set_task_data (task, worker_input_new (self->diagram, self->flags, self->arch), (GDestroyNotify) worker_input_free);
  gtk_spinner_start (self->spinner);
  g_task_run_in_thread (task, update_thread);
}

static gboolean
update_timeout (gpointer user_data)
{
  NapkinCodeView *self = user_data;

  self->update_id = 0;
  start_update (self);
  return G_SOURCE_REMOVE;
}

static void
diagram_changed_cb (NapkinCodeView *self,
                    NapkinDiagram  *diagram)
{
  g_clear_handle_id (&self->update_id, g_source_remove);
  self->update_id = g_timeout_add (UPDATE_DELAY_MS, update_timeout, self);
}

void
napkin_code_view_set_diagram (NapkinCodeView *self,
                              NapkinDiagram  *diagram)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));
  g_return_if_fail (diagram == NULL || NAPKIN_IS_DIAGRAM (diagram));

  if (self->diagram == diagram)
    return;
  if (self->diagram != NULL)
    g_clear_signal_handler (&self->changed_id, self->diagram);
  g_clear_handle_id (&self->update_id, g_source_remove);
  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->pending = FALSE;
  g_set_object (&self->diagram, diagram);
  self->at_kernel = FALSE;
  if (diagram != NULL)
    {
      self->changed_id = g_signal_connect_object (diagram, "changed", G_CALLBACK (diagram_changed_cb), self,
                                                  G_CONNECT_SWAPPED);
      start_update (self);
    }
}

static void retarget (NapkinCodeView *self);

/* The code for this target's instruction paths (NAPKIN_CODEGEN_SM90A: the Hopper wgmma
 * skeletons), as the runner will generate it for that GPU. */
void
napkin_code_view_set_codegen_flags (NapkinCodeView     *self,
                                    NapkinCodegenFlags  flags)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));

  if (self->flags == flags)
    return;
  self->flags = flags;
  retarget (self);
}

/* The plan for `arch` (the GPU the analysis pane prices), printed for its target. */
void
napkin_code_view_set_arch (NapkinCodeView *self,
                           NapkinArch     *arch)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));

  if (self->arch == arch)
    return;
  g_clear_pointer (&self->arch, napkin_arch_unref);
  self->arch = arch != NULL ? napkin_arch_ref (arch) : NULL;
  self->flags = arch != NULL && napkin_arch_has_wgmma (arch) ? NAPKIN_CODEGEN_SM90A : NAPKIN_CODEGEN_DEFAULT;
  retarget (self);
}

static void
retarget (NapkinCodeView *self)
{
  /* a worker in flight prints for the old target: drop it, and until the new text
   * arrives the view is behind every generation */
  g_clear_handle_id (&self->update_id, g_source_remove);
  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->pending = FALSE;
  self->generation = G_MAXUINT64;
  /* other code: it opens on its kernel too */
  self->at_kernel = FALSE;
  if (self->diagram != NULL)
    start_update (self);
}

NapkinCodegenFlags
napkin_code_view_get_codegen_flags (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NAPKIN_CODEGEN_DEFAULT);
  return self->flags;
}

void
napkin_code_view_set_kind (NapkinCodeView *self,
                           NapkinCodeKind  kind)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));
  g_return_if_fail (kind == NAPKIN_CODE_CUDA || kind == NAPKIN_CODE_PSEUDO);

  if (self->kind == kind)
    return;
  self->kind = kind;
  self->at_kernel = FALSE;
  gtk_toggle_button_set_active (kind == NAPKIN_CODE_PSEUDO ? self->pseudo_button : self->cuda_button, TRUE);
  show_text (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_KIND]);
}

NapkinCodeKind
napkin_code_view_get_kind (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NAPKIN_CODE_CUDA);
  return self->kind;
}

char *
napkin_code_view_dup_text (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);
  return g_strdup (self->kind == NAPKIN_CODE_PSEUDO ? self->pseudo : self->cuda);
}

guint64
napkin_code_view_get_generation (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), 0);
  return self->generation;
}

const char *
napkin_code_view_get_summary (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);
  return self->summary;
}

static void
kind_toggled_cb (NapkinCodeView  *self,
                 GtkToggleButton *button)
{
  if (gtk_toggle_button_get_active (button))
    napkin_code_view_set_kind (self, button == self->pseudo_button ? NAPKIN_CODE_PSEUDO : NAPKIN_CODE_CUDA);
}

/* ---- export ------------------------------------------------------------------------------ */

typedef struct
{
  WorkerInput    *input;
  NapkinCodeKind  kind;
  GFile          *file;
} ExportData;

static void
export_data_free (ExportData *data)
{
  g_clear_pointer (&data->input, worker_input_free);
  g_clear_object (&data->file);
  g_free (data);
}

static void
export_thread (GTask        *task,
               gpointer      source_object,
               gpointer      task_data,
               GCancellable *cancellable)
{
  ExportData *data = task_data;
  g_autofree char *text = NULL;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinDiagram) diagram = napkin_diagram_load_from_data (data->input->json, data->input->length, 0, &error);
  gboolean ok;

  if (diagram == NULL)
    ok = FALSE;
  else if (data->kind == NAPKIN_CODE_PSEUDO)
    ok = generate (diagram, data->input->arch, data->input->flags, NULL, &text, NULL, NULL, &error);
  else if (data->kind == NAPKIN_CODE_STANDALONE)
    ok = generate (diagram, data->input->arch, data->input->flags, NULL, NULL, &text, NULL, &error);
  else
    ok = generate (diagram, data->input->arch, data->input->flags, &text, NULL, NULL, NULL, &error);

  if (ok)
    {
      g_autofree char *path = g_file_get_path (data->file);

      /* Local files as every export: whole or not at all, errors naming the file. */
      if (path != NULL)
        ok = napkin_file_write_atomic (path, text, strlen (text), &error);
      else
        ok = g_file_replace_contents (data->file, text, strlen (text), NULL, FALSE, G_FILE_CREATE_NONE, NULL,
                                      cancellable, &error);
    }
  if (!ok)
    g_task_return_error (task, g_steal_pointer (&error));
  else
    g_task_return_boolean (task, TRUE);
}

void
napkin_code_view_export_async (NapkinCodeView      *self,
                               NapkinCodeKind       kind,
                               GFile               *file,
                               GCancellable        *cancellable,
                               GAsyncReadyCallback  callback,
                               gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  ExportData *data;

  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));
  g_return_if_fail (G_IS_FILE (file));

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, (gpointer) (guintptr) napkin_code_view_export_async);
  if (self->diagram == NULL)
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_NOT_INITIALIZED, _("There is no diagram to export"));
      return;
    }
  data = g_new0 (ExportData, 1);
  data->input = worker_input_new (self->diagram, self->flags, self->arch);
  data->kind = kind;
  data->file = g_object_ref (file);
  g_task_set_task_data (task, data, (GDestroyNotify) export_data_free);
  g_task_run_in_thread (task, export_thread);
}

gboolean
napkin_code_view_export_finish (NapkinCodeView  *self,
                                GAsyncResult    *result,
                                GError         **error)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), FALSE);
  g_return_val_if_fail (g_task_is_valid (result, self), FALSE);

  return g_task_propagate_boolean (G_TASK (result), error);
}

static void
export_done (GObject      *object,
             GAsyncResult *result,
             gpointer      user_data)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);
  g_autoptr(GFile) file = user_data;
  g_autoptr(GError) error = NULL;
  g_autofree char *name = g_file_get_parse_name (file);
  g_autofree char *message = NULL;

  if (!napkin_code_view_export_finish (self, result, &error))
    message = g_strdup_printf (_("Could not export to “%s”: %s"), name, error->message);
  else
    message = g_strdup_printf (_("Exported “%s”"), name);
  g_signal_emit (self, signals[MESSAGE], 0, message);
}

static void
export_response_cb (GtkNativeDialog *dialog,
                    int              response,
                    gpointer         user_data)
{
  g_autoptr(NapkinCodeView) self = user_data;
  NapkinCodeKind kind = GPOINTER_TO_INT (g_object_get_data (G_OBJECT (dialog), "napkin-code-kind"));

  if (response == GTK_RESPONSE_ACCEPT)
    {
      g_autoptr(GFile) file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));

      napkin_code_view_export_async (self, kind, file, NULL, export_done, g_object_ref (file));
    }
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
}

static char *
suggested_name (NapkinCodeView *self,
                const char     *suffix)
{
  const char *title = self->diagram ? napkin_diagram_get_title (self->diagram) : NULL;
  g_autofree char *base = g_strdup (self->export_stem ? self->export_stem : title && *title ? title : "kernel");

  /* a file name, not a path: no separators from a user's title */
  g_strdelimit (base, "/\\:", '-');
  return g_strconcat (base, suffix, NULL);
}

char *
napkin_code_view_dup_export_name (NapkinCodeView *self,
                                  const char     *suffix)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);
  return suggested_name (self, suffix);
}

GFile *
napkin_code_view_get_export_folder (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);
  return self->export_folder;
}

void
napkin_code_view_set_export_place (NapkinCodeView *self,
                                   GFile          *folder,
                                   const char     *stem)
{
  g_return_if_fail (NAPKIN_IS_CODE_VIEW (self));

  g_set_object (&self->export_folder, folder);
  g_free (self->export_stem);
  self->export_stem = g_strdup (stem);
}

static void
export_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (widget);
  gboolean cuda = g_str_equal (action_name, "code.export-cuda");
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkFileChooserNative *dialog;
  g_autoptr(GtkFileFilter) filter = gtk_file_filter_new ();
  g_autofree char *name = suggested_name (self, cuda ? ".cu" : ".txt");

  dialog = gtk_file_chooser_native_new (cuda ? _("Export Standalone CUDA") : _("Export Pseudocode"),
                                        GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                        GTK_FILE_CHOOSER_ACTION_SAVE, _("_Export"), _("_Cancel"));
  gtk_file_filter_set_name (filter, cuda ? _("CUDA source") : _("Text"));
  gtk_file_filter_add_pattern (filter, cuda ? "*.cu" : "*.txt");
  gtk_file_chooser_add_filter (GTK_FILE_CHOOSER (dialog), filter);
  if (self->export_folder != NULL)
    gtk_file_chooser_set_current_folder (GTK_FILE_CHOOSER (dialog), self->export_folder, NULL);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
  g_object_set_data (G_OBJECT (dialog), "napkin-code-kind",
                     GINT_TO_POINTER (cuda ? NAPKIN_CODE_STANDALONE : NAPKIN_CODE_PSEUDO));
  g_signal_connect (dialog, "response", G_CALLBACK (export_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* ---- class ------------------------------------------------------------------------------- */

static void
napkin_code_view_dispose (GObject *object)
{
  GtkWidget *child;
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);

  napkin_code_view_set_diagram (self, NULL);
  if (self->scroll_tick != 0)
    gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->scroll_tick);
  self->scroll_tick = 0;
  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_CODE_VIEW);
  /* the template's root box is not a bound child: dispose_template leaves it */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (napkin_code_view_parent_class)->dispose (object);
}

static void
napkin_code_view_finalize (GObject *object)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);

  g_clear_pointer (&self->cuda, g_free);
  g_clear_pointer (&self->pseudo, g_free);
  g_clear_pointer (&self->summary, g_free);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  g_clear_pointer (&self->kernel_names, g_strfreev);
  g_clear_pointer (&self->kernel_owners, g_strfreev);
  g_clear_pointer (&self->shown_names, g_strfreev);
  g_clear_pointer (&self->shown_owners, g_strfreev);
  g_clear_pointer (&self->wanted_kernel, g_free);
  g_clear_pointer (&self->wanted_nodes, g_strfreev);
  g_clear_pointer (&self->opened_owner, g_free);
  g_clear_object (&self->export_folder);
  g_clear_pointer (&self->export_stem, g_free);
  G_OBJECT_CLASS (napkin_code_view_parent_class)->finalize (object);
}

static void
napkin_code_view_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);

  switch (prop_id)
    {
    case PROP_KIND:
      g_value_set_int (value, self->kind);
      break;
    case PROP_GENERATION:
      g_value_set_uint64 (value, self->generation);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_code_view_set_property (GObject      *object,
                               guint         prop_id,
                               const GValue *value,
                               GParamSpec   *pspec)
{
  NapkinCodeView *self = NAPKIN_CODE_VIEW (object);

  switch (prop_id)
    {
    case PROP_KIND:
      napkin_code_view_set_kind (self, g_value_get_int (value));
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_code_view_class_init (NapkinCodeViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_code_view_dispose;
  object_class->finalize = napkin_code_view_finalize;
  object_class->get_property = napkin_code_view_get_property;
  object_class->set_property = napkin_code_view_set_property;

  properties[PROP_KIND] =
    g_param_spec_int ("kind", NULL, NULL, NAPKIN_CODE_CUDA, NAPKIN_CODE_PSEUDO, NAPKIN_CODE_CUDA,
                      (G_PARAM_READWRITE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  properties[PROP_GENERATION] =
    g_param_spec_uint64 ("generation", NULL, NULL, 0, G_MAXUINT64, 0,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* A line for the window's toast: where an export went, or why it failed. */
  signals[MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 1, G_TYPE_STRING);

  gtk_source_init ();
  g_type_ensure (GTK_SOURCE_TYPE_VIEW);
  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-code-view.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinCodeView, cuda_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinCodeView, pseudo_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinCodeView, summary_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinCodeView, spinner);
  gtk_widget_class_bind_template_child (widget_class, NapkinCodeView, source_view);
  gtk_widget_class_bind_template_callback (widget_class, kind_toggled_cb);
  gtk_widget_class_install_action (widget_class, "code.export-cuda", NULL, export_action);
  gtk_widget_class_install_action (widget_class, "code.export-pseudo", NULL, export_action);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "napkin-code-view");
}

/* The GtkSourceView scheme that matches the style: "Adwaita-dark" in a dark one,
 * switched live (docs/editor.md, "Dark style"). */
static void
style_changed_cb (NapkinCodeView  *self,
                  GParamSpec      *pspec,
                  AdwStyleManager *manager)
{
  GtkSourceStyleSchemeManager *schemes = gtk_source_style_scheme_manager_get_default ();
  GtkTextBuffer *buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (self->source_view));
  const char *id = adw_style_manager_get_dark (manager) ? "Adwaita-dark" : "Adwaita";

  gtk_source_buffer_set_style_scheme (GTK_SOURCE_BUFFER (buffer),
                                      gtk_source_style_scheme_manager_get_scheme (schemes, id));
  (void) pspec;
}

static void
napkin_code_view_init (NapkinCodeView *self)
{
  GtkTextBuffer *buffer;
  AdwStyleManager *manager = adw_style_manager_get_default ();

  gtk_widget_init_template (GTK_WIDGET (self));
  self->opened_line = -1;
  g_signal_connect (self, "map", G_CALLBACK (source_view_map_cb), NULL);
  {
    GtkEventController *wheel = gtk_event_controller_scroll_new (GTK_EVENT_CONTROLLER_SCROLL_BOTH_AXES);
    GtkEventController *keys = gtk_event_controller_key_new ();

    gtk_event_controller_set_propagation_phase (wheel, GTK_PHASE_CAPTURE);
    gtk_event_controller_set_propagation_phase (keys, GTK_PHASE_CAPTURE);
    g_signal_connect_swapped (wheel, "scroll", G_CALLBACK (user_scrolled_cb), self);
    g_signal_connect_swapped (keys, "key-pressed", G_CALLBACK (user_scrolled_cb), self);
    gtk_widget_add_controller (GTK_WIDGET (self->source_view), wheel);
    gtk_widget_add_controller (GTK_WIDGET (self->source_view), keys);
  }
  buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (self->source_view));
  gtk_source_buffer_set_highlight_syntax (GTK_SOURCE_BUFFER (buffer), TRUE);
  g_signal_connect_object (manager, "notify::dark", G_CALLBACK (style_changed_cb), self, G_CONNECT_SWAPPED);
  style_changed_cb (self, NULL, manager);
}

const char *
napkin_code_view_get_scheme_id (NapkinCodeView *self)
{
  GtkTextBuffer *buffer;
  GtkSourceStyleScheme *scheme;

  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);

  buffer = gtk_text_view_get_buffer (GTK_TEXT_VIEW (self->source_view));
  scheme = gtk_source_buffer_get_style_scheme (GTK_SOURCE_BUFFER (buffer));
  return scheme ? gtk_source_style_scheme_get_id (scheme) : NULL;
}

gboolean
napkin_code_view_is_settled (NapkinCodeView *self)
{
  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), TRUE);

  return self->diagram == NULL
         || (self->generation == napkin_diagram_get_generation (self->diagram) && !self->scroll_pending);
}

/* The start of the line at the top of the view. */
static void
first_visible_line (NapkinCodeView *self,
                    GtkTextIter    *start)
{
  GdkRectangle visible;

  gtk_text_view_get_visible_rect (GTK_TEXT_VIEW (self->source_view), &visible);
  gtk_text_view_get_line_at_y (GTK_TEXT_VIEW (self->source_view), start, visible.y, NULL);
}

int
napkin_code_view_get_first_visible_line_number (NapkinCodeView *self)
{
  GtkTextIter start;

  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), -1);

  first_visible_line (self, &start);
  return gtk_text_iter_get_line (&start);
}

char *
napkin_code_view_dup_first_visible_line (NapkinCodeView *self)
{
  GtkTextIter start, end;

  g_return_val_if_fail (NAPKIN_IS_CODE_VIEW (self), NULL);

  first_visible_line (self, &start);
  end = start;
  gtk_text_iter_forward_to_line_end (&end);
  return gtk_text_iter_get_text (&start, &end);
}

GtkWidget *
napkin_code_view_new (void)
{
  return g_object_new (NAPKIN_TYPE_CODE_VIEW, NULL);
}
