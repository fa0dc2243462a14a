/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-run-panel"

#include "config.h"

#include <math.h>
#include <string.h>

#include <adwaita.h>
#include <glib/gi18n.h>

#include "napkin-json-private.h"
#include "napkin-plot.h"
#include "napkin-run-job.h"
#include "napkin-run-panel.h"
#include "napkin-runs.h"
#include "napkin-arch.h"
#include "napkin-model.h"
#include "napkin-prediction.h"

struct _NapkinRunPanel
{
  GtkWidget       parent_instance;

  /* template */
  GtkProgressBar *progress;
  GtkLabel       *status_label;
  GtkListBox     *history_list;
  GtkGrid        *table;
  GtkDrawingArea *chart;

  NapkinDiagram  *diagram;
  NapkinDiagram  *run_diagram;    /* the copy being run: the prediction is for it */
  NapkinRunJob   *job;
  GCancellable   *cancellable;
  GStrv           runner;
  guint           timeout_s;

  NapkinRunResult *shown;         /* the run on show */
  NapkinPlot     *plot;
  char           *status;
  gboolean        filling;        /* rebuilding the history list: ignore selection */
  char           *arch_id;        /* the header's GPU: the prediction when none ran */
};

G_DEFINE_FINAL_TYPE (NapkinRunPanel, napkin_run_panel, GTK_TYPE_WIDGET)

enum
{
  PROP_0,
  PROP_RUNNING,
  PROP_STATUS,
  N_PROPS
};

enum
{
  MESSAGE,
  RUNS_CHANGED,
  N_SIGNALS
};

static GParamSpec *properties[N_PROPS];
static guint signals[N_SIGNALS];

/* ---- reading results --------------------------------------------------------------------- */

/* The runner's message in the user's language where the catalogue has it (the runner
 * writes English; docs/cli.md, "Language"). */
static const char *
runner_message (const NapkinRunResult *result)
{
  const char *message = result->message;

  return message != NULL && *message != '\0' ? _(message) : message;
}

/* ---- the prediction, as napkin-cli run --json writes it ------------------------------------ */

static void
add_prediction (NapkinDiagram   *diagram,
                NapkinRunResult *result)
{
  if (!result->has_prediction)
    napkin_prediction_add_to_run (diagram, result->json, NULL);
}

/* ---- the table and the chart ------------------------------------------------------------- */

static char *
format_ms (double ms)
{
  if (isnan (ms))
    return g_strdup ("—");
  return g_strdup_printf (_("%.4f ms"), ms);
}

static void
add_row (NapkinRunPanel *self,
         int             row,
         const char     *quantity,
         char           *predicted,    /* owned, NULL: — */
         char           *measured)     /* owned, NULL: — */
{
  const char *texts[3] = { quantity, predicted ? predicted : "—", measured ? measured : "—" };

  for (int c = 0; c < 3; c++)
    {
      GtkWidget *label = gtk_label_new (texts[c]);

      gtk_label_set_xalign (GTK_LABEL (label), c == 0 ? 0 : 1);
      gtk_label_set_selectable (GTK_LABEL (label), c > 0);
      gtk_label_set_wrap (GTK_LABEL (label), c > 0);
      gtk_label_set_max_width_chars (GTK_LABEL (label), 40);
      if (row == 0)
        gtk_widget_add_css_class (label, "heading");
      else if (c == 0)
        gtk_widget_add_css_class (label, "dim-label");
      else
        gtk_widget_add_css_class (label, "numeric");
      gtk_grid_attach (self->table, label, c, row, 1, 1);
    }
  g_free (predicted);
  g_free (measured);
}

/* The GPU row's measured cell: the device the runner found. */
static char *
measured_gpu (const NapkinRunResult *r)
{
  if (r->gpu_name == NULL)
    return NULL;
  return g_strdup_printf (_("%s (%s, driver %s)"), r->gpu_name, r->arch ? r->arch : "?",
                          r->gpu_driver ? r->gpu_driver : "?");
}

/* The Time row's measured cell: the median, with its spread where the runner gave one. */
static char *
measured_time (const NapkinRunResult *r)
{
  if (isnan (r->time_median_ms))
    return NULL;
  if (isnan (r->time_repeats))
    return format_ms (r->time_median_ms);
  return g_strdup_printf (_("%.4f ms (median of %.0f, %.4f–%.4f)"), r->time_median_ms, r->time_repeats,
                          r->time_min_ms, r->time_max_ms);
}

/* The model's traffic at each level where it moves bytes; returns the next row. */
static int
add_level_rows (NapkinRunPanel        *self,
                const NapkinRunResult *r,
                int                    row)
{
  for (guint l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      double bytes = r->prediction_level_bytes[l];
      g_autofree char *size = NULL;
      g_autofree char *quantity = NULL;

      if (isnan (bytes) || bytes <= 0)
        continue;
      size = g_format_size ((guint64) bytes);
      /* TRANSLATORS: %s is a memory level: hbm, l2, smem, registers */
      quantity = g_strdup_printf (_("Traffic at %s"), napkin_level_to_string (l));
      add_row (self, row++, quantity, g_strdup_printf (_("%s in %.4f ms"), size, r->prediction_level_time_ms[l]), NULL);
    }
  return row;
}

/* One row per kernel that ran: its launch and its resources; returns the next row. */
static int
add_kernel_rows (NapkinRunPanel        *self,
                 const NapkinRunResult *r,
                 int                    row)
{
  for (guint k = 0; k < r->kernels->len; k++)
    {
      const NapkinRunKernel *o = napkin_run_result_kernel (r, k);
      g_autofree char *quantity = g_strdup_printf (_("Kernel %s (%s)"), o->name ? o->name : "?",
                                                   o->skeleton ? o->skeleton : "?");

      add_row (self, row++, quantity, g_strdup_printf (_("%.0f blocks × %.0f threads"), o->grid, o->threads),
               g_strdup_printf (_("%.0f registers, %.0f B shared, %.0f B spilled"), o->registers, o->shared_bytes,
                                o->local_bytes));
    }
  return row;
}

/* Predicted against measured: the total, and the model's time at each level (the
 * runner times the whole kernel sequence, so levels have no measured bar). The plain
 * fp32 reference is in the table only: tens of times slower, it would flatten the
 * bars that matter. */
static void
fill_plot (NapkinRunPanel        *self,
           const NapkinRunResult *r)
{
  self->plot = napkin_plot_new (NAPKIN_PLOT_BARS, _("Predicted and measured time"));
  if (!isnan (r->prediction_time_ms))
    napkin_plot_add_bar (self->plot, _("Total"), _("predicted"), r->prediction_time_ms * 1e-3, FALSE, FALSE);
  if (!isnan (r->time_median_ms))
    napkin_plot_add_bar (self->plot, _("Total"), _("measured"), r->time_median_ms * 1e-3, TRUE, FALSE);
  for (guint l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      double t = r->prediction_level_time_ms[l];

      if (!isnan (t) && t > 0)
        napkin_plot_add_bar (self->plot, napkin_level_to_string (l), _("predicted"), t * 1e-3, FALSE, FALSE);
    }
}

static void
fill_table (NapkinRunPanel *self)
{
  const NapkinRunResult *r = self->shown;
  GtkWidget *child;
  int row = 0;
  double ms, pred;

  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->table))) != NULL)
    gtk_grid_remove (self->table, child);
  g_clear_pointer (&self->plot, napkin_plot_free);
  gtk_widget_queue_draw (GTK_WIDGET (self->chart));
  if (r == NULL)
    return;

  ms = r->time_median_ms;
  pred = r->prediction_time_ms;
  add_row (self, row++, _("Quantity"), g_strdup (_("Predicted")), g_strdup (_("Measured")));
  add_row (self, row++, _("Status"), NULL,
           r->message ? g_strdup_printf ("%s: %s", r->status, runner_message (r)) : g_strdup (r->status));
  add_row (self, row++, _("GPU"), g_strdup (r->prediction_arch), measured_gpu (r));
  if (!isnan (ms) || !isnan (pred))
    add_row (self, row++, _("Time"), isnan (pred) ? NULL : format_ms (pred), measured_time (r));
  if (!isnan (ms) && !isnan (pred) && pred > 0)
    add_row (self, row++, _("Measured / predicted"), NULL, g_strdup_printf ("%.2f", ms / pred));
  if (!isnan (r->tflops))
    add_row (self, row++, _("Throughput"),
             !isnan (pred) && !isnan (r->flops) ? g_strdup_printf (_("%.2f TFLOP/s"), r->flops / (pred * 1e-3) / 1e12)
                                                : NULL,
             g_strdup_printf (_("%.2f TFLOP/s"), r->tflops));
  if (!isnan (r->gbps))
    add_row (self, row++, _("Bandwidth (inputs and outputs once)"),
             !isnan (pred) && !isnan (r->io_bytes) ? g_strdup_printf (_("%.1f GB/s"), r->io_bytes / (pred * 1e-3) / 1e9)
                                                   : NULL,
             g_strdup_printf (_("%.1f GB/s"), r->gbps));
  if (r->prediction_bound)
    add_row (self, row++, _("Bound by"), g_strdup (r->prediction_bound), NULL);
  row = add_level_rows (self, r, row);
  if (r->has_error)
    add_row (self, row++, _("Error against the fp32 reference"), NULL,
             g_strdup_printf (_("%.3g (bound %.3g): %s"), r->error_max_rel, r->error_bound,
                              r->error_ok ? _("ok") : _("WRONG")));
  if (!isnan (r->reference_median_ms))
    add_row (self, row++, _("Plain fp32 reference"), NULL, format_ms (r->reference_median_ms));
  add_kernel_rows (self, r, row);
  fill_plot (self, r);
}

static void
chart_draw (GtkDrawingArea *area,
            cairo_t        *cr,
            int             width,
            int             height,
            gpointer        user_data)
{
  NapkinRunPanel *self = user_data;
  NapkinPlotTheme theme;
  GdkRGBA fg;

  if (self->plot == NULL)
    return;
  napkin_plot_theme_init (&theme);
  G_GNUC_BEGIN_IGNORE_DEPRECATIONS
  gtk_style_context_get_color (gtk_widget_get_style_context (GTK_WIDGET (area)), &fg);
  G_GNUC_END_IGNORE_DEPRECATIONS
  theme.fg[0] = fg.red;
  theme.fg[1] = fg.green;
  theme.fg[2] = fg.blue;
  theme.bg_alpha = 0;   /* the pane's own background */
  napkin_plot_draw (cr, self->plot, width, height, &theme);
}

/* ---- history ----------------------------------------------------------------------------- */

/* A run of the document's history (NULL: one that cannot be read). */
static char *
run_title (const NapkinRunResult *run,
           guint                  index)
{
  double ms = run ? run->time_median_ms : NAN;
  const char *gpu = run ? run->gpu_name : NULL;
  g_autofree char *time = isnan (ms) ? g_strdup ("") : g_strdup_printf (_("%.4f ms"), ms);

  /* TRANSLATORS: run number, status, time, GPU */
  return g_strdup_printf (_("#%u  %s  %s  %s"), index + 1, run ? run->status : "?", time, gpu ? gpu : "");
}

static void
fill_history (NapkinRunPanel *self,
              gboolean        select_last)
{
  json_object *runs = self->diagram ? napkin_diagram_get_runs (self->diagram) : NULL;
  guint n = runs ? json_object_array_length (runs) : 0;
  GtkWidget *child;
  GtkListBoxRow *last = NULL;

  self->filling = TRUE;
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self->history_list))) != NULL)
    gtk_list_box_remove (self->history_list, child);
  /* newest first */
  for (guint i = n; i-- > 0;)
    {
      json_object *run = json_object_array_get_idx (runs, i);
      g_autoptr(GError) error = NULL;
      g_autoptr(NapkinRunResult) result = NULL;
      g_autofree char *title = NULL;
      GtkWidget *label;
      GtkWidget *row;

      if (!json_object_is_type (run, json_type_object))
        continue;
      result = napkin_run_result_new_from_json (run, &error);
      title = run_title (result, i);
      label = gtk_label_new (title);
      gtk_label_set_xalign (GTK_LABEL (label), 0);
      gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
      if (result == NULL || !napkin_run_result_ran (result))
        gtk_widget_add_css_class (label, "error");
      gtk_widget_set_tooltip_text (label, result ? result->date : error->message);
      row = gtk_list_box_row_new ();
      gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), label);
      g_object_set_data (G_OBJECT (row), "napkin-run", run);
      gtk_list_box_append (self->history_list, row);
      if (last == NULL)
        last = GTK_LIST_BOX_ROW (row);
    }
  self->filling = FALSE;
  if (select_last && last != NULL)
    gtk_list_box_select_row (self->history_list, last);
}

static void set_status (NapkinRunPanel *self,
                        const char     *status);

/* A run of the document's history (or the one just made), read into its fields. */
static void
show_run (NapkinRunPanel *self,
          json_object    *run)
{
  g_autoptr(GError) error = NULL;

  if ((self->shown ? self->shown->json : NULL) == run)
    return;
  g_clear_pointer (&self->shown, napkin_run_result_free);
  if (run != NULL)
    self->shown = napkin_run_result_new_from_json (run, &error);
  if (error != NULL)
    set_status (self, error->message);
  fill_table (self);
}

static void
history_row_selected_cb (NapkinRunPanel *self,
                         GtkListBoxRow  *row,
                         GtkListBox     *list)
{
  if (self->filling || row == NULL)
    return;
  show_run (self, g_object_get_data (G_OBJECT (row), "napkin-run"));
}

/* ---- running ----------------------------------------------------------------------------- */

/* `details` (the runner's own words) go in the tooltip. */
static void
set_status_full (NapkinRunPanel *self,
                 const char     *status,
                 const char     *details)
{
  gtk_widget_set_tooltip_text (GTK_WIDGET (self->status_label), details ? details : status);
  if (g_strcmp0 (self->status, status) == 0)
    return;
  g_free (self->status);
  self->status = g_strdup (status);
  gtk_label_set_text (self->status_label, status ? status : "");
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STATUS]);
}

static void
set_status (NapkinRunPanel *self,
            const char     *status)
{
  set_status_full (self, status, NULL);
}

static void
update_actions (NapkinRunPanel *self)
{
  gboolean running = self->job != NULL;

  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.start", !running && self->diagram != NULL);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.cancel", running);
  gtk_widget_action_set_enabled (GTK_WIDGET (self), "run.clear-history",
                                 !running && self->diagram != NULL && napkin_diagram_n_runs (self->diagram) > 0);
}

static void
job_progress_cb (NapkinRunPanel *self,
                 GParamSpec     *pspec,
                 NapkinRunJob   *job)
{
  gtk_progress_bar_set_fraction (self->progress, napkin_run_job_get_fraction (job));
  if (napkin_run_job_get_message (job) != NULL)
    set_status (self, napkin_run_job_get_message (job));
}

static char *
describe_end (const NapkinRunResult *result)
{
  const char *status = result->status;
  const char *message = runner_message (result);
  double ms = result->time_median_ms;

  if (g_strcmp0 (status, "ok") == 0)
    return isnan (ms) ? g_strdup (_("Run finished")) : g_strdup_printf (_("Run finished: %.4f ms"), ms);
  if (g_strcmp0 (status, "wrong") == 0)
    return g_strdup (_("Run finished, but the result differs from the fp32 reference"));
  if (g_strcmp0 (status, "no-gpu") == 0)
    /* the loader's words (libcuda.so.1: cannot open …) are in the tooltip */
    return g_strdup (_("No NVIDIA GPU or driver on this computer, so nothing ran. The model’s prediction is "
                       "in the table and in the analysis pane."));
  /* fault, timeout, crashed, compile, … */
  return g_strdup_printf (_("Run failed (%s): %s"), status ? status : "?", message ? message : _("no message"));
}

static void
run_done (GObject      *object,
          GAsyncResult *res,
          gpointer      user_data)
{
  g_autoptr(NapkinRunPanel) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinRunResult) result = napkin_run_job_run_finish_result (NAPKIN_RUN_JOB (object), res, &error);
  g_autoptr(NapkinDiagram) run_diagram = g_steal_pointer (&self->run_diagram);

  if (self->job == NAPKIN_RUN_JOB (object))
    {
      g_signal_handlers_disconnect_by_data (self->job, self);
      g_clear_object (&self->job);
      g_clear_object (&self->cancellable);
    }
  /* the window closed during the run: the child is gone, nothing left to show */
  if (self->progress == NULL)
    return;
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);

  if (result == NULL)
    {
      g_autofree char *message = NULL;

      gtk_progress_bar_set_fraction (self->progress, 0);
      if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
        message = g_strdup (_("Run cancelled"));
      else
        message = g_strdup_printf (_("Could not run: %s"), error->message);
      set_status (self, message);
      return;
    }

  {
    g_autoptr(GDateTime) now = g_date_time_new_now_utc ();
    g_autofree char *date = g_date_time_format_iso8601 (now);

    json_object_object_add (result->json, "date", json_object_new_string (date));
  }
  if (napkin_run_result_ran (result) && run_diagram != NULL)
    add_prediction (run_diagram, result);
  /* nothing ran: what the model predicts on the GPU chosen in the header */
  else if (g_strcmp0 (result->status, "no-gpu") == 0 && run_diagram != NULL && self->arch_id != NULL
           && !result->has_prediction)
    napkin_prediction_add_to_run (run_diagram, result->json, self->arch_id);
  gtk_progress_bar_set_fraction (self->progress, napkin_run_result_ran (result) ? 1 : 0);
  {
    g_autofree char *end = describe_end (result);

    set_status_full (self, end, runner_message (result));
    if (!napkin_run_result_ran (result))
      g_signal_emit (self, signals[MESSAGE], 0, end);
  }
  /* The document may have been replaced meanwhile: the run belongs to the one it ran.
   * Without a GPU nothing ran: that goes to the status line, not the history. */
  if (self->diagram != NULL && run_diagram != NULL && g_strcmp0 (result->status, "no-gpu") != 0)
    {
      napkin_diagram_add_run (self->diagram, result->json);
      fill_history (self, TRUE);
      update_actions (self);
      g_signal_emit (self, signals[RUNS_CHANGED], 0);
    }
  /* read again: the date and the prediction are in it now */
  show_run (self, result->json);
}

void
napkin_run_panel_set_arch_id (NapkinRunPanel *self,
                              const char     *arch_id)
{
  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));

  g_free (self->arch_id);
  self->arch_id = g_strdup (arch_id);
}

void
napkin_run_panel_run (NapkinRunPanel *self)
{
  const char *args[] = { "--repeats=20", "--seed=1234", NULL };

  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));

  if (self->job != NULL || self->diagram == NULL)
    return;
  self->run_diagram = napkin_diagram_copy (self->diagram);
  self->job = napkin_run_job_new (self->run_diagram, args);
  if (self->runner != NULL)
    napkin_run_job_set_runner (self->job, (const char * const *) self->runner);
  if (self->timeout_s > 0)
    napkin_run_job_set_timeout (self->job, self->timeout_s);
  self->cancellable = g_cancellable_new ();
  g_signal_connect_object (self->job, "notify::fraction", G_CALLBACK (job_progress_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->job, "notify::message", G_CALLBACK (job_progress_cb), self, G_CONNECT_SWAPPED);
  gtk_progress_bar_set_fraction (self->progress, 0);
  set_status (self, _("Starting the runner…"));
  napkin_run_job_run_async (self->job, self->cancellable, run_done, g_object_ref (self));
  update_actions (self);
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_RUNNING]);
}

void
napkin_run_panel_cancel (NapkinRunPanel *self)
{
  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));

  /* the job kills the child; run_done reports the cancellation */
  g_cancellable_cancel (self->cancellable);
}

gboolean
napkin_run_panel_get_running (NapkinRunPanel *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_PANEL (self), FALSE);
  return self->job != NULL;
}

json_object *
napkin_run_panel_get_shown_run (NapkinRunPanel *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_PANEL (self), NULL);
  return self->shown ? self->shown->json : NULL;
}

const char *
napkin_run_panel_get_status (NapkinRunPanel *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_PANEL (self), NULL);
  return self->status;
}

char *
napkin_run_panel_dup_table_text (NapkinRunPanel *self)
{
  GString *s = g_string_new (NULL);
  int row = 0;

  g_return_val_if_fail (NAPKIN_IS_RUN_PANEL (self), NULL);

  while (gtk_grid_get_child_at (self->table, 0, row) != NULL)
    {
      for (int c = 0; c < 3; c++)
        {
          GtkWidget *label = gtk_grid_get_child_at (self->table, c, row);

          g_string_append (s, label ? gtk_label_get_text (GTK_LABEL (label)) : "");
          g_string_append_c (s, c < 2 ? '\t' : '\n');
        }
      row++;
    }
  return g_string_free (s, FALSE);
}

void
napkin_run_panel_set_runner (NapkinRunPanel     *self,
                             const char * const *command)
{
  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));

  g_strfreev (self->runner);
  self->runner = g_strdupv ((char **) command);
}

void
napkin_run_panel_set_timeout (NapkinRunPanel *self,
                              guint           seconds)
{
  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));
  self->timeout_s = seconds;
}

void
napkin_run_panel_set_diagram (NapkinRunPanel *self,
                              NapkinDiagram  *diagram)
{
  g_return_if_fail (NAPKIN_IS_RUN_PANEL (self));
  g_return_if_fail (diagram == NULL || NAPKIN_IS_DIAGRAM (diagram));

  if (self->diagram == diagram)
    return;
  /* a run of the old document is not added to the new one */
  g_clear_object (&self->run_diagram);
  napkin_run_panel_cancel (self);
  g_set_object (&self->diagram, diagram);
  show_run (self, NULL);
  fill_history (self, TRUE);
  set_status (self, NULL);
  gtk_progress_bar_set_fraction (self->progress, 0);
  update_actions (self);
}

static void
run_action (GtkWidget  *widget,
            const char *action_name,
            GVariant   *parameter)
{
  NapkinRunPanel *self = NAPKIN_RUN_PANEL (widget);

  if (g_str_equal (action_name, "run.start"))
    napkin_run_panel_run (self);
  else if (g_str_equal (action_name, "run.clear-history"))
    {
      if (self->job != NULL || self->diagram == NULL || napkin_diagram_n_runs (self->diagram) == 0)
        return;
      napkin_diagram_clear_runs (self->diagram);
      show_run (self, NULL);
      fill_history (self, FALSE);
      update_actions (self);
      g_signal_emit (self, signals[RUNS_CHANGED], 0);
    }
  else
    napkin_run_panel_cancel (self);
}

/* ---- class ------------------------------------------------------------------------------- */

/* Out of its window (closed): stop the child now, not when the last reference goes,
 * since the pending callback holds one until the child ends. */
static void
napkin_run_panel_unroot (GtkWidget *widget)
{
  NapkinRunPanel *self = NAPKIN_RUN_PANEL (widget);

  g_cancellable_cancel (self->cancellable);
  GTK_WIDGET_CLASS (napkin_run_panel_parent_class)->unroot (widget);
}

static void
napkin_run_panel_dispose (GObject *object)
{
  GtkWidget *child;
  NapkinRunPanel *self = NAPKIN_RUN_PANEL (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->diagram);
  g_clear_object (&self->run_diagram);
  g_clear_pointer (&self->shown, napkin_run_result_free);
  g_clear_pointer (&self->plot, napkin_plot_free);
  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_RUN_PANEL);
  /* the template's root box is not a bound child: dispose_template leaves it */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (self))) != NULL)
    gtk_widget_unparent (child);
  G_OBJECT_CLASS (napkin_run_panel_parent_class)->dispose (object);
}

static void
napkin_run_panel_finalize (GObject *object)
{
  NapkinRunPanel *self = NAPKIN_RUN_PANEL (object);

  /* run_done holds a reference: no job is left by now */
  g_assert (self->job == NULL);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->runner, g_strfreev);
  g_clear_pointer (&self->status, g_free);
  g_clear_pointer (&self->arch_id, g_free);
  G_OBJECT_CLASS (napkin_run_panel_parent_class)->finalize (object);
}

static void
napkin_run_panel_get_property (GObject    *object,
                               guint       prop_id,
                               GValue     *value,
                               GParamSpec *pspec)
{
  NapkinRunPanel *self = NAPKIN_RUN_PANEL (object);

  switch (prop_id)
    {
    case PROP_RUNNING:
      g_value_set_boolean (value, self->job != NULL);
      break;
    case PROP_STATUS:
      g_value_set_string (value, self->status);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_run_panel_class_init (NapkinRunPanelClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_run_panel_dispose;
  object_class->finalize = napkin_run_panel_finalize;
  object_class->get_property = napkin_run_panel_get_property;
  widget_class->unroot = napkin_run_panel_unroot;

  properties[PROP_RUNNING] =
    g_param_spec_boolean ("running", NULL, NULL, FALSE,
                          (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  properties[PROP_STATUS] =
    g_param_spec_string ("status", NULL, NULL, NULL,
                         (G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS));
  g_object_class_install_properties (object_class, N_PROPS, properties);

  /* A line for the window's toast: why a run failed. */
  signals[MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 1, G_TYPE_STRING);

  /* The document's runs changed: the window marks it unsaved (runs are not undoable). */
  signals[RUNS_CHANGED] = g_signal_new ("runs-changed", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL,
                                        NULL, G_TYPE_NONE, 0);

  g_type_ensure (ADW_TYPE_BUTTON_CONTENT);
  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-run-panel.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinRunPanel, progress);
  gtk_widget_class_bind_template_child (widget_class, NapkinRunPanel, status_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinRunPanel, history_list);
  gtk_widget_class_bind_template_child (widget_class, NapkinRunPanel, table);
  gtk_widget_class_bind_template_child (widget_class, NapkinRunPanel, chart);
  gtk_widget_class_bind_template_callback (widget_class, history_row_selected_cb);
  gtk_widget_class_install_action (widget_class, "run.start", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "run.cancel", NULL, run_action);
  gtk_widget_class_install_action (widget_class, "run.clear-history", NULL, run_action);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "napkin-run-panel");
}

static void
napkin_run_panel_init (NapkinRunPanel *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  gtk_drawing_area_set_draw_func (self->chart, chart_draw, self, NULL);
  /* F5 is the window's (win.run: it also brings this tab to the front) */
  update_actions (self);
}

GtkWidget *
napkin_run_panel_new (void)
{
  return g_object_new (NAPKIN_TYPE_RUN_PANEL, NULL);
}
