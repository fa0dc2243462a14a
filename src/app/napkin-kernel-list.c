/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-kernel-list"

#include "config.h"

#include <math.h>

#include <glib/gi18n.h>

#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-kernel-list.h"

/* A burst of edits is one search: it starts this long after the last analysis. */
#define SEARCH_DELAY_MS 300

typedef struct
{
  GtkWidget   *box;
  GtkLabel    *name;
  GtkLabel    *value;
  GtkLabel    *detail;
  GtkLevelBar *bar;
  GtkLabel    *ops;
  GtkLabel    *reason;
  GtkLabel    *looking;
  GtkButton   *fix;
} RowWidgets;

struct _NapkinKernelList
{
  GtkWidget            parent_instance;

  /* template */
  GtkWidget           *root;
  GtkLabel            *summary_label;
  GtkBox              *rows_box;
  GtkLabel            *more_label;

  GPtrArray           *rows;          /* NapkinKernelRow */
  GPtrArray           *widgets;       /* RowWidgets, NULL for a row not shown */
  GPtrArray           *fixes;         /* NapkinKernelFix or NULL, per row */
  char                *signature;     /* what the row widgets show, to keep them while it holds */

  NapkinHistory       *history;       /* where fixes apply; NULL: none */
  NapkinArch          *arch;
  NapkinAnalyzeOptions options;
  char                *search_key;    /* generation, profile and type the fixes are for */
  guint64              search_generation;
  guint                search_id;
  guint                search_serial;
  gboolean             searching;
  GCancellable        *cancellable;
};

G_DEFINE_FINAL_TYPE (NapkinKernelList, napkin_kernel_list, GTK_TYPE_WIDGET)

enum
{
  ACTIVATED,
  FIX_APPLIED,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

static void
row_widgets_free (gpointer data)
{
  g_free (data);
}

static void
fix_free (gpointer data)
{
  napkin_kernel_fix_free (data);
}

/* ---------------------------------------------------------------- rows */

static guint
row_index_of (NapkinKernelList *self,
              GtkWidget        *box)
{
  for (guint i = 0; i < self->widgets->len; i++)
    {
      RowWidgets *w = g_ptr_array_index (self->widgets, i);

      if (w != NULL && w->box == box)
        return i;
    }
  return G_MAXUINT;
}

static void
row_pressed_cb (GtkGestureClick *gesture,
                int              n_press,
                double           x,
                double           y,
                NapkinKernelList *self)
{
  GtkWidget *box = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (gesture));
  GtkWidget *picked = gtk_widget_pick (box, x, y, GTK_PICK_DEFAULT);
  guint i = row_index_of (self, box);

  /* a press on the fix button is the button's */
  for (GtkWidget *w = picked; w != NULL && w != box; w = gtk_widget_get_parent (w))
    if (GTK_IS_BUTTON (w))
      return;
  if (i != G_MAXUINT)
    napkin_kernel_list_activate (self, i);
}

static gboolean
row_key_cb (GtkWidget *box,
            GVariant  *args,
            gpointer   user_data)
{
  NapkinKernelList *self = NAPKIN_KERNEL_LIST (gtk_widget_get_ancestor (box, NAPKIN_TYPE_KERNEL_LIST));
  guint i = self ? row_index_of (self, box) : G_MAXUINT;

  if (i == G_MAXUINT)
    return FALSE;
  napkin_kernel_list_activate (self, i);
  return TRUE;
}

static void
fix_clicked_cb (NapkinKernelList *self,
                GtkButton        *button)
{
  g_autoptr(GError) error = NULL;

  for (guint i = 0; i < self->widgets->len; i++)
    {
      RowWidgets *w = g_ptr_array_index (self->widgets, i);

      if (w != NULL && w->fix == button && !napkin_kernel_list_apply_fix (self, i, &error))
        g_signal_emit (self, signals[FIX_APPLIED], 0, error->message);
    }
}

static GtkLabel *
row_label (GtkWidget  *parent,
           const char *css,
           float       xalign,
           gboolean    wrap)
{
  GtkLabel *label = GTK_LABEL (gtk_label_new (NULL));

  gtk_label_set_xalign (label, xalign);
  if (wrap)
    {
      gtk_label_set_wrap (label, TRUE);
      gtk_label_set_wrap_mode (label, PANGO_WRAP_WORD_CHAR);
    }
  else
    gtk_label_set_ellipsize (label, PANGO_ELLIPSIZE_END);
  if (css != NULL)
    gtk_widget_add_css_class (GTK_WIDGET (label), css);
  gtk_box_append (GTK_BOX (parent), GTK_WIDGET (label));
  return label;
}

static void
add_row_keys (GtkWidget *box)
{
  GtkEventController *keys = gtk_shortcut_controller_new ();
  GtkShortcutAction *action = gtk_callback_action_new (row_key_cb, NULL, NULL);

  gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (keys),
                                        gtk_shortcut_new (gtk_alternative_trigger_new (
                                                            gtk_keyval_trigger_new (GDK_KEY_Return, 0),
                                                            gtk_keyval_trigger_new (GDK_KEY_space, 0)),
                                                          g_object_ref (action)));
  g_object_unref (action);
  gtk_widget_add_controller (box, keys);
  gtk_widget_set_focusable (box, TRUE);
}

static RowWidgets *
row_widgets_new (NapkinKernelList *self,
                 guint             index)
{
  RowWidgets *w = g_new0 (RowWidgets, 1);
  g_autofree char *name = g_strdup_printf ("kernel-row-%u", index);
  g_autofree char *fix_name = g_strdup_printf ("kernel-fix-%u", index);
  GtkWidget *line = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  GtkGesture *click = gtk_gesture_click_new ();

  w->box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 1);
  gtk_widget_set_name (w->box, name);
  gtk_widget_add_css_class (w->box, "napkin-kernel-row");
  gtk_box_append (GTK_BOX (w->box), line);
  w->name = row_label (line, "heading", 0, FALSE);
  gtk_widget_set_hexpand (GTK_WIDGET (w->name), TRUE);
  w->value = row_label (line, "numeric", 1, FALSE);
  w->detail = row_label (w->box, "dim-label", 0, TRUE);
  w->bar = GTK_LEVEL_BAR (gtk_level_bar_new_for_interval (0, 1));
  gtk_level_bar_remove_offset_value (w->bar, GTK_LEVEL_BAR_OFFSET_LOW);
  gtk_level_bar_remove_offset_value (w->bar, GTK_LEVEL_BAR_OFFSET_HIGH);
  gtk_level_bar_remove_offset_value (w->bar, GTK_LEVEL_BAR_OFFSET_FULL);
  gtk_widget_add_css_class (GTK_WIDGET (w->bar), "napkin-kernel-share");
  gtk_box_append (GTK_BOX (w->box), GTK_WIDGET (w->bar));
  w->ops = row_label (w->box, "dim-label", 0, TRUE);
  w->reason = row_label (w->box, "warning", 0, TRUE);
  gtk_label_set_selectable (w->reason, FALSE);
  w->looking = row_label (w->box, "dim-label", 0, TRUE);
  w->fix = GTK_BUTTON (gtk_button_new ());
  gtk_widget_set_name (GTK_WIDGET (w->fix), fix_name);
  gtk_widget_set_halign (GTK_WIDGET (w->fix), GTK_ALIGN_START);
  gtk_widget_add_css_class (GTK_WIDGET (w->fix), "suggested-action");
  gtk_widget_set_visible (GTK_WIDGET (w->fix), FALSE);
  g_signal_connect_object (w->fix, "clicked", G_CALLBACK (fix_clicked_cb), self, G_CONNECT_SWAPPED);
  gtk_box_append (GTK_BOX (w->box), GTK_WIDGET (w->fix));
  g_signal_connect_object (click, "pressed", G_CALLBACK (row_pressed_cb), self, 0);
  gtk_widget_add_controller (w->box, GTK_EVENT_CONTROLLER (click));
  add_row_keys (w->box);
  gtk_box_append (self->rows_box, w->box);
  return w;
}

/* A fix found shows its button; a poor kernel still searched says so; one with none
 * says that nothing the model knows is faster. */
static void
show_fix (NapkinKernelList *self,
          guint             i)
{
  RowWidgets *w = g_ptr_array_index (self->widgets, i);
  const NapkinKernelRow *row = g_ptr_array_index (self->rows, i);
  const NapkinKernelFix *fix = i < self->fixes->len ? g_ptr_array_index (self->fixes, i) : NULL;
  const char *looking = NULL;

  if (w == NULL)
    return;
  gtk_widget_set_visible (GTK_WIDGET (w->fix), fix != NULL);
  if (fix != NULL)
    {
      gtk_button_set_label (w->fix, fix->label);
      gtk_widget_set_tooltip_text (GTK_WIDGET (w->fix), fix->details);
    }
  else if (row->fix != NAPKIN_KERNEL_FIX_NONE && self->history != NULL)
    looking = self->searching ? _("Looking for a fix…") : _("No relabeling the model predicts faster was found");
  gtk_label_set_text (w->looking, looking ? looking : "");
  gtk_widget_set_visible (GTK_WIDGET (w->looking), looking != NULL);
}

static void
show_row (NapkinKernelList *self,
          guint             i)
{
  RowWidgets *w = g_ptr_array_index (self->widgets, i);
  const NapkinKernelRow *row = g_ptr_array_index (self->rows, i);
  g_autofree char *time = napkin_format_si (row->time_s, "s");
  g_autofree char *value = g_strdup_printf ("%s · %.1f %%", time, 100 * row->share);
  g_autofree char *ops = g_strjoinv (" → ", row->nodes);
  g_autofree char *detail = NULL;

  if (w == NULL)
    return;
  /* TRANSLATORS: a kernel's template, its path and the resource that bounds it */
  detail = g_strdup_printf (_("%s · %s · bound by %s"), napkin_plan_kind_to_label (row->kind),
                            napkin_path_to_string (row->path), napkin_resource_to_label (row->bound));
  gtk_label_set_text (w->name, row->name);
  gtk_widget_set_tooltip_text (GTK_WIDGET (w->name), row->name);
  gtk_label_set_text (w->value, value);
  gtk_label_set_text (w->detail, detail);
  gtk_level_bar_set_value (w->bar, CLAMP (row->share, 0, 1));
  if (row->adjusted != NULL)
    {
      /* said, never changed silently: what the plan runs instead of the relabeling's numbers */
      g_autofree char *both = g_strdup_printf (_("%s\nRuns with %s"), ops, row->adjusted);

      gtk_label_set_text (w->ops, both);
    }
  else
    gtk_label_set_text (w->ops, ops);
  gtk_label_set_text (w->reason, row->reason ? row->reason : "");
  gtk_widget_set_visible (GTK_WIDGET (w->reason), row->reason != NULL);
  if (row->poor)
    gtk_widget_add_css_class (w->box, "napkin-kernel-poor");
  else
    gtk_widget_remove_css_class (w->box, "napkin-kernel-poor");
  show_fix (self, i);
}

/* Which rows get a widget: all, or past the limit the longest (in launch order). */
static GArray *
shown_rows (GPtrArray *rows)
{
  GArray *shown = g_array_new (FALSE, TRUE, sizeof (gboolean));
  double cut = -1;

  g_array_set_size (shown, rows->len);
  if (rows->len > NAPKIN_KERNEL_LIST_MAX_ROWS)
    {
      g_autofree double *times = g_new (double, rows->len);

      for (guint i = 0; i < rows->len; i++)
        times[i] = ((NapkinKernelRow *) g_ptr_array_index (rows, i))->time_s;
      /* the MAX_ROWS-th longest time */
      for (guint k = 0; k < NAPKIN_KERNEL_LIST_MAX_ROWS; k++)
        {
          guint best = 0;

          for (guint i = 1; i < rows->len; i++)
            if (times[i] > times[best])
              best = i;
          cut = times[best];
          times[best] = -INFINITY;
        }
    }
  for (guint i = 0, n = 0; i < rows->len; i++)
    if (((NapkinKernelRow *) g_ptr_array_index (rows, i))->time_s >= cut && n < NAPKIN_KERNEL_LIST_MAX_ROWS)
      {
        g_array_index (shown, gboolean, i) = TRUE;
        n++;
      }
  return shown;
}

static char *
signature_of (GPtrArray *rows,
              GArray    *shown)
{
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < rows->len; i++)
    {
      const NapkinKernelRow *row = g_ptr_array_index (rows, i);

      g_string_append_printf (s, "%s/%d/%d/%d;", row->name, row->kind, g_array_index (shown, gboolean, i), row->fix);
    }
  return g_string_free (s, FALSE);
}

static void
show_summary (NapkinKernelList *self,
              GArray           *shown)
{
  guint poor = 0, hidden = 0;
  double hidden_share = 0;
  g_autofree char *summary = NULL;

  for (guint i = 0; i < self->rows->len; i++)
    {
      const NapkinKernelRow *row = g_ptr_array_index (self->rows, i);

      poor += row->poor;
      if (!g_array_index (shown, gboolean, i))
        {
          hidden++;
          hidden_share += row->share;
        }
    }
  summary = poor > 0 ? g_strdup_printf (ngettext ("%u kernel, %u to look at", "%u kernels, %u to look at",
                                                  self->rows->len), self->rows->len, poor)
                     : g_strdup_printf (ngettext ("%u kernel", "%u kernels", self->rows->len), self->rows->len);
  gtk_label_set_text (self->summary_label, summary);
  if (hidden > 0)
    {
      g_autofree char *more = g_strdup_printf (ngettext ("and %u more kernel, %.1f %% of the time",
                                                         "and %u more kernels, %.1f %% of the time", hidden),
                                               hidden, 100 * hidden_share);

      gtk_label_set_text (self->more_label, more);
    }
  gtk_widget_set_visible (GTK_WIDGET (self->more_label), hidden > 0);
}

/* ---------------------------------------------------------------- the search for fixes */

typedef struct
{
  NapkinDiagram        *diagram;
  NapkinArch           *arch;
  NapkinAnalyzeOptions  options;
  GPtrArray            *rows;       /* NapkinKernelRow copies: name, region, fix */
  GPtrArray            *fixes;      /* out */
  guint                 serial;
} SearchJob;

static void
search_job_free (gpointer data)
{
  SearchJob *job = data;

  g_clear_object (&job->diagram);
  g_clear_pointer (&job->arch, napkin_arch_unref);
  g_clear_pointer (&job->rows, g_ptr_array_unref);
  g_clear_pointer (&job->fixes, g_ptr_array_unref);
  g_free (job);
}

static void
search_thread (GTask        *task,
               gpointer      source_object,
               gpointer      task_data,
               GCancellable *cancellable)
{
  SearchJob *job = task_data;
  NapkinKernelFix *derived = NULL;
  gboolean derive_tried = FALSE;

  for (guint i = 0; i < job->rows->len && !g_cancellable_is_cancelled (cancellable); i++)
    {
      const NapkinKernelRow *row = g_ptr_array_index (job->rows, i);
      NapkinKernelFix *fix = NULL;

      /* the derivation is the whole diagram's: one search for every kernel it fixes */
      if (row->fix == NAPKIN_KERNEL_FIX_DERIVE && derive_tried)
        fix = derived ? napkin_kernel_fix_copy (derived) : NULL;
      else if (row->fix != NAPKIN_KERNEL_FIX_NONE)
        fix = napkin_kernel_fix_find (job->diagram, job->arch, &job->options, row, NULL);
      if (row->fix == NAPKIN_KERNEL_FIX_DERIVE && !derive_tried)
        {
          derive_tried = TRUE;
          derived = fix;
        }
      g_ptr_array_add (job->fixes, fix);
    }
  g_clear_object (&job->diagram);
  g_task_return_boolean (task, TRUE);
}

static void
search_done_cb (GObject      *source,
                GAsyncResult *result,
                gpointer      user_data)
{
  NapkinKernelList *self = NAPKIN_KERNEL_LIST (source);
  SearchJob *job = g_task_get_task_data (G_TASK (result));

  if (g_task_had_error (G_TASK (result)) || g_cancellable_is_cancelled (g_task_get_cancellable (G_TASK (result))))
    return;
  if (job->serial != self->search_serial)
    return;
  self->searching = FALSE;
  g_clear_object (&self->cancellable);
  g_ptr_array_set_size (self->fixes, 0);
  for (guint i = 0; i < job->fixes->len; i++)
    g_ptr_array_add (self->fixes, g_steal_pointer (&job->fixes->pdata[i]));
  for (guint i = 0; i < self->widgets->len; i++)
    show_fix (self, i);
}

static gboolean
search_cb (gpointer user_data)
{
  NapkinKernelList *self = user_data;
  g_autoptr(GTask) task = NULL;
  SearchJob *job;

  self->search_id = 0;
  if (self->history == NULL || self->arch == NULL)
    return G_SOURCE_REMOVE;
  job = g_new0 (SearchJob, 1);
  job->diagram = napkin_diagram_copy_without_extras (napkin_history_get_diagram (self->history));
  job->arch = napkin_arch_ref (self->arch);
  job->options = self->options;
  job->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_kernel_row_free);
  job->fixes = g_ptr_array_new_with_free_func (fix_free);
  job->serial = self->search_serial;
  for (guint i = 0; i < self->rows->len; i++)
    g_ptr_array_add (job->rows, napkin_kernel_row_copy (g_ptr_array_index (self->rows, i)));
  self->cancellable = g_cancellable_new ();
  task = g_task_new (self, self->cancellable, search_done_cb, NULL);
  g_task_set_task_data (task, job, search_job_free);
  g_task_run_in_thread (task, search_thread);
  return G_SOURCE_REMOVE;
}

static void
stop_search (NapkinKernelList *self)
{
  g_clear_handle_id (&self->search_id, g_source_remove);
  if (self->cancellable != NULL)
    g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  self->searching = FALSE;
  self->search_serial++;
}

/* A search for the rows' fixes, unless the fixes held are for this very state. */
static void
plan_search (NapkinKernelList *self,
             const char       *key)
{
  gboolean wanted = FALSE;

  for (guint i = 0; i < self->rows->len; i++)
    wanted |= ((NapkinKernelRow *) g_ptr_array_index (self->rows, i))->fix != NAPKIN_KERNEL_FIX_NONE;
  if (key != NULL && g_strcmp0 (key, self->search_key) == 0 && self->fixes->len == self->rows->len)
    return;
  stop_search (self);
  g_ptr_array_set_size (self->fixes, 0);
  g_free (self->search_key);
  self->search_key = g_strdup (key);
  self->search_generation = self->history ? napkin_diagram_get_generation (napkin_history_get_diagram (self->history)) : 0;
  if (!wanted || key == NULL)
    return;
  self->searching = TRUE;
  self->search_id = g_timeout_add_full (G_PRIORITY_LOW, SEARCH_DELAY_MS, search_cb, self, NULL);
}

/* ---------------------------------------------------------------- public */

void
napkin_kernel_list_set_analysis (NapkinKernelList           *self,
                                 const NapkinAnalysis       *analysis,
                                 NapkinDiagram              *analysed,
                                 NapkinHistory              *history,
                                 NapkinArch                 *arch,
                                 const NapkinAnalyzeOptions *options)
{
  g_autoptr(GArray) shown = NULL;
  g_autofree char *signature = NULL;
  g_autofree char *key = NULL;

  g_return_if_fail (NAPKIN_IS_KERNEL_LIST (self));
  g_return_if_fail (analysis != NULL && NAPKIN_IS_DIAGRAM (analysed));

  g_ptr_array_unref (self->rows);
  self->rows = napkin_kernel_rows (analysis, analysed);
  g_set_object (&self->history, history);
  if (arch != self->arch)
    {
      g_clear_pointer (&self->arch, napkin_arch_unref);
      self->arch = arch ? napkin_arch_ref (arch) : NULL;
    }
  self->options = options ? *options : (NapkinAnalyzeOptions) { 0 };
  if (history != NULL && arch != NULL)
    key = g_strdup_printf ("%p/%" G_GUINT64_FORMAT "/%s/%d/%d", (void *) napkin_history_get_diagram (history),
                           napkin_diagram_get_generation (napkin_history_get_diagram (history)), arch->id,
                           self->options.has_dtype, self->options.dtype);
  plan_search (self, key);

  shown = shown_rows (self->rows);
  signature = signature_of (self->rows, shown);
  if (g_strcmp0 (signature, self->signature) != 0)
    {
      GtkWidget *focus = gtk_widget_get_root (GTK_WIDGET (self)) ? gtk_root_get_focus (gtk_widget_get_root (GTK_WIDGET (self)))
                                                                 : NULL;
      gboolean had_focus = focus != NULL && gtk_widget_is_ancestor (focus, GTK_WIDGET (self->rows_box));
      GtkWidget *child;

      while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->rows_box))) != NULL)
        gtk_box_remove (self->rows_box, child);
      g_ptr_array_set_size (self->widgets, 0);
      for (guint i = 0; i < self->rows->len; i++)
        g_ptr_array_add (self->widgets, g_array_index (shown, gboolean, i) ? row_widgets_new (self, i) : NULL);
      g_free (self->signature);
      self->signature = g_steal_pointer (&signature);
      /* the focus stays in the section (a fix's button goes with its row): the pane
       * would otherwise scroll to wherever GTK moves it */
      if (had_focus && gtk_widget_get_first_child (GTK_WIDGET (self->rows_box)) != NULL)
        gtk_widget_grab_focus (gtk_widget_get_first_child (GTK_WIDGET (self->rows_box)));
    }
  for (guint i = 0; i < self->rows->len; i++)
    show_row (self, i);
  show_summary (self, shown);
}

void
napkin_kernel_list_clear (NapkinKernelList *self)
{
  GtkWidget *child;

  g_return_if_fail (NAPKIN_IS_KERNEL_LIST (self));

  stop_search (self);
  g_clear_pointer (&self->search_key, g_free);
  g_clear_pointer (&self->signature, g_free);
  g_ptr_array_set_size (self->rows, 0);
  g_ptr_array_set_size (self->widgets, 0);
  g_ptr_array_set_size (self->fixes, 0);
  g_clear_object (&self->history);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->rows_box))) != NULL)
    gtk_box_remove (self->rows_box, child);
  gtk_label_set_text (self->summary_label, "");
  gtk_widget_set_visible (GTK_WIDGET (self->more_label), FALSE);
}

guint
napkin_kernel_list_get_n_rows (NapkinKernelList *self)
{
  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), 0);
  return self->rows->len;
}

const NapkinKernelRow *
napkin_kernel_list_get_row (NapkinKernelList *self,
                            guint             index)
{
  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), NULL);
  return index < self->rows->len ? g_ptr_array_index (self->rows, index) : NULL;
}

GtkWidget *
napkin_kernel_list_get_row_widget (NapkinKernelList *self,
                                   guint             index)
{
  RowWidgets *w;

  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), NULL);
  w = index < self->widgets->len ? g_ptr_array_index (self->widgets, index) : NULL;
  return w ? w->box : NULL;
}

GtkWidget *
napkin_kernel_list_get_fix_button (NapkinKernelList *self,
                                   guint             index)
{
  RowWidgets *w;

  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), NULL);
  w = index < self->widgets->len ? g_ptr_array_index (self->widgets, index) : NULL;
  return w && gtk_widget_get_visible (GTK_WIDGET (w->fix)) ? GTK_WIDGET (w->fix) : NULL;
}

const NapkinKernelFix *
napkin_kernel_list_get_fix (NapkinKernelList *self,
                            guint             index)
{
  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), NULL);
  return index < self->fixes->len ? g_ptr_array_index (self->fixes, index) : NULL;
}

gboolean
napkin_kernel_list_is_searching (NapkinKernelList *self)
{
  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), FALSE);
  return self->searching;
}

gboolean
napkin_kernel_list_apply_fix (NapkinKernelList  *self,
                              guint              index,
                              GError           **error)
{
  const NapkinKernelFix *fix;
  NapkinDiagram *document;
  g_autofree char *before = NULL;
  g_autofree char *after = NULL;
  g_autofree char *message = NULL;

  g_return_val_if_fail (NAPKIN_IS_KERNEL_LIST (self), FALSE);

  fix = napkin_kernel_list_get_fix (self, index);
  if (fix == NULL || self->history == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE, _("This kernel has no fix to apply"));
      return FALSE;
    }
  document = napkin_history_get_diagram (self->history);
  if (napkin_diagram_get_generation (document) != self->search_generation)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("The diagram changed after the search: its fixes are being looked for again"));
      return FALSE;
    }
  napkin_history_begin_group (self->history, fix->label);
  if (!napkin_edit_relabel_like (self->history, fix->fixed, error))
    {
      napkin_history_cancel_group (self->history);
      return FALSE;
    }
  napkin_history_end_group (self->history);
  after = napkin_format_si (fix->after_s, "s");
  before = isfinite (fix->before_s) ? napkin_format_si (fix->before_s, "s") : g_strdup (_("did not fit"));
  /* TRANSLATORS: the fix's button label, then the predicted time before and after */
  message = g_strdup_printf (_("%s: predicted %s (was %s)"), fix->label, after, before);
  g_signal_emit (self, signals[FIX_APPLIED], 0, message);
  return TRUE;
}

void
napkin_kernel_list_activate (NapkinKernelList *self,
                             guint             index)
{
  const NapkinKernelRow *row;

  g_return_if_fail (NAPKIN_IS_KERNEL_LIST (self));

  row = napkin_kernel_list_get_row (self, index);
  if (row != NULL)
    {
      /* a copy, a K split's sum or a split-KV combine shares its kernel's name: the
       * code view knows it as "NAME (kind)" */
      g_autofree char *name = napkin_plan_kernel_label (row->name, row->kind);

      g_signal_emit (self, signals[ACTIVATED], 0, name, row->nodes);
    }
}

/* ---------------------------------------------------------------- class */

static void
napkin_kernel_list_dispose (GObject *object)
{
  NapkinKernelList *self = NAPKIN_KERNEL_LIST (object);

  stop_search (self);
  g_clear_object (&self->history);
  g_clear_pointer (&self->root, gtk_widget_unparent);
  G_OBJECT_CLASS (napkin_kernel_list_parent_class)->dispose (object);
}

static void
napkin_kernel_list_finalize (GObject *object)
{
  NapkinKernelList *self = NAPKIN_KERNEL_LIST (object);

  g_clear_pointer (&self->rows, g_ptr_array_unref);
  g_clear_pointer (&self->widgets, g_ptr_array_unref);
  g_clear_pointer (&self->fixes, g_ptr_array_unref);
  g_clear_pointer (&self->signature, g_free);
  g_clear_pointer (&self->search_key, g_free);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  G_OBJECT_CLASS (napkin_kernel_list_parent_class)->finalize (object);
}

static void
napkin_kernel_list_class_init (NapkinKernelListClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_kernel_list_dispose;
  object_class->finalize = napkin_kernel_list_finalize;

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-kernel-list.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinKernelList, root);
  gtk_widget_class_bind_template_child (widget_class, NapkinKernelList, summary_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinKernelList, rows_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinKernelList, more_label);

  /* activated (const char *name, GStrv operations): a row was clicked; a helper kernel's
   * name is "NAME (repack)", "NAME (split-reduce)" or "NAME (attention-combine)" */
  signals[ACTIVATED] = g_signal_new ("activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                     NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRV);
  /* fix-applied (const char *message): what a fix did, or why it could not */
  signals[FIX_APPLIED] = g_signal_new ("fix-applied", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                       NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "napkin-kernel-list");
}

static void
napkin_kernel_list_init (NapkinKernelList *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->rows = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_kernel_row_free);
  self->widgets = g_ptr_array_new_with_free_func (row_widgets_free);
  self->fixes = g_ptr_array_new_with_free_func (fix_free);
}

GtkWidget *
napkin_kernel_list_new (void)
{
  return g_object_new (NAPKIN_TYPE_KERNEL_LIST, NULL);
}
