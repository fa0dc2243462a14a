/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-tile-suggestions"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n.h>

#include "napkin-derivation-view.h"
#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-tile-suggestions.h"
#include "napkin-tile-suggestions-private.h"
#include "napkin-run-job.h"

#define TOP_K 10
#define MEASURE_REPEATS 20

struct _NapkinTileSuggestions
{
  GtkPopover        parent_instance;
  GPtrArray        *retired;         /* rows of earlier searches (_napkin_tile_suggestions_retire_rows) */

  /* template */
  GtkSpinner       *spinner;
  GtkLabel         *title_label;
  GtkLabel         *status_label;
  GtkLabel         *error_label;
  GtkLabel         *details_label;
  GtkBox           *column_titles;
  GtkListBox       *list;
  GtkWidget        *list_scroller;
  NapkinDerivationView *derivation_view;
  GtkButton        *cancel_button;
  GtkButton        *apply_button;
  GtkButton        *measure_button;
  GtkSizeGroup     *column_widths[7];  /* one a column: titles and rows line up */

  NapkinHistory    *history;
  NapkinArch       *arch;
  gboolean          has_dtype;
  NapkinDtype       dtype;
  GCancellable     *cancellable;       /* the search under way, or NULL */
  NapkinTuneResult *result;            /* the search shown, or NULL */
  NapkinDerivation *derivation;        /* or the derivation shown, or NULL */
  guint64           generation;        /* the diagram's generation it searched */
  char             *status;
  char             *error;
  int               selected;
  gboolean          previewing;        /* the last "preview" was of a diagram */

  /* Measure: the best few run on the local GPU, one after the other */
  GStrv             runner;            /* tests: a stand-in for napkin-runner */
  GCancellable     *measure_cancellable;
  guint             measure_index;
  guint             measure_count;
  double            measured[TOP_K];   /* seconds; NAN: not measured */
  GtkLabel         *measured_labels[TOP_K];   /* the rows' "Measured" cells */
  GtkWidget        *measured_title;    /* the column shows once a measurement starts */
  gboolean          measured_shown;
};

G_DEFINE_FINAL_TYPE (NapkinTileSuggestions, napkin_tile_suggestions, GTK_TYPE_POPOVER)

enum
{
  MESSAGE,
  PREVIEW,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* ---- the search, in a worker thread --------------------------------------------------------- */

/* The worker reads the document from JSON: a napkin_diagram_copy would share
 * json-c extras with the editor, and json-c's reference counts are not atomic. */
typedef struct
{
  char              *json;
  gsize              length;
  NapkinArch        *arch;
  NapkinTuneOptions  options;
} SearchInput;

typedef struct
{
  NapkinTuneResult *result;
  NapkinDerivation *derivation;   /* instead of result: a diagram without regions, several kernels */
  double            seconds;
} SearchOutput;

static void
search_input_free (SearchInput *input)
{
  g_free (input->json);
  napkin_arch_unref (input->arch);
  g_free (input);
}

static void
search_output_free (SearchOutput *output)
{
  napkin_tune_result_free (output->result);
  napkin_derivation_free (output->derivation);
  g_free (output);
}

/* The whole-diagram derivation (docs/plan.md, "Deriving a diagram") into `output`
 * when it has more than one kernel; FALSE with an error when it fails. */
static gboolean
derive_in_thread (NapkinDiagram *diagram,
                  SearchInput   *input,
                  SearchOutput  *output,
                  GError       **error)
{
  NapkinDerivation *derivation = napkin_derive (diagram, input->arch, &input->options, error);

  if (derivation == NULL)
    return FALSE;
  /* one kernel or several: the partition, each kernel's template and tiles */
  output->derivation = derivation;
  return TRUE;
}

static void
search_thread (GTask        *task,
               gpointer      source_object,
               gpointer      task_data,
               GCancellable *cancellable)
{
  SearchInput *input = task_data;
  g_autoptr(GError) error = NULL;
  NapkinDiagram *diagram = napkin_diagram_load_from_data (input->json, input->length, 0, &error);
  SearchOutput *output;
  gint64 start;

  if (diagram == NULL)
    {
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }
  output = g_new0 (SearchOutput, 1);
  start = g_get_monotonic_time ();
  /* without regions: derive the kernels, as `napkin-cli tune` does (docs/plan.md,
   * "Deriving a diagram") */
  if (napkin_diagram_n_regions (diagram) == 0 && !derive_in_thread (diagram, input, output, &error))
    {
      g_object_unref (diagram);
      search_output_free (output);
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }
  if (output->derivation != NULL)
    {
      output->seconds = (g_get_monotonic_time () - start) / 1e6;
      g_object_unref (diagram);
      g_task_return_pointer (task, output, (GDestroyNotify) search_output_free);
      return;
    }
  output->result = napkin_tune (diagram, input->arch, &input->options, &error);
  output->seconds = (g_get_monotonic_time () - start) / 1e6;
  /* released here, before the result goes to the main thread (json-c's counts are
   * not atomic; result->relabeled is a diagram of its own, read from JSON) */
  g_object_unref (diagram);
  if (output->result == NULL)
    {
      search_output_free (output);
      g_task_return_error (task, g_steal_pointer (&error));
      return;
    }
  if (output->result->best->len == 0)
    {
      guint tried = output->result->evaluated;

      search_output_free (output);
      g_task_return_new_error (task, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                               _("No feasible tiles on %s among %u relabelings tried: every one exceeds a "
                                 "capacity of the architecture"),
                               input->arch->id, tried);
      return;
    }
  g_task_return_pointer (task, output, (GDestroyNotify) search_output_free);
}

/* ---- showing -------------------------------------------------------------------------------- */

/* Column widths in characters, shared by the titles and the rows. */
static const struct
{
  const char *title;
  int         width;
  float       xalign;
} columns[] = {
  { N_("Rank"), 4, 1 },
  { N_("Time"), 10, 1 },
  { N_("Throughput"), 24, 1 },
  { N_("Bound"), 8, 0 },
  { N_("Footprint"), 17, 1 },
  { N_("Speed-up"), 8, 1 },
  { N_("Measured"), 14, 1 },
};

GtkWidget *
_napkin_tile_suggestions_cell_new (GtkSizeGroup *group,
                                   int           width,
                                   float         xalign,
                                   const char   *text)
{
  GtkWidget *label = gtk_label_new (text);

  gtk_label_set_width_chars (GTK_LABEL (label), width);
  gtk_label_set_xalign (GTK_LABEL (label), xalign);
  gtk_widget_add_css_class (label, "numeric");
  gtk_size_group_add_widget (group, label);
  return label;
}

static GtkWidget *
cell_new (NapkinTileSuggestions *self,
          guint                  column,
          const char            *text)
{
  return _napkin_tile_suggestions_cell_new (self->column_widths[column], columns[column].width,
                                            columns[column].xalign, text);
}

GtkWidget *
_napkin_tile_suggestions_row_new (GtkWidget  *numbers,
                                  const char *caption,
                                  const char *name)
{
  GtkWidget *row = gtk_list_box_row_new ();
  GtkWidget *box = gtk_box_new (GTK_ORIENTATION_VERTICAL, 2);
  GtkWidget *words = gtk_label_new (caption);

  gtk_label_set_xalign (GTK_LABEL (words), 0);
  gtk_label_set_wrap (GTK_LABEL (words), TRUE);
  gtk_label_set_wrap_mode (GTK_LABEL (words), PANGO_WRAP_WORD_CHAR);
  gtk_label_set_max_width_chars (GTK_LABEL (words), 90);
  gtk_widget_set_margin_start (words, 34);
  gtk_widget_add_css_class (words, "dim-label");
  gtk_widget_add_css_class (words, "caption");
  gtk_box_append (GTK_BOX (box), numbers);
  gtk_box_append (GTK_BOX (box), words);
  gtk_widget_set_margin_start (box, 6);
  gtk_widget_set_margin_end (box, 6);
  gtk_widget_set_margin_top (box, 4);
  gtk_widget_set_margin_bottom (box, 4);
  gtk_list_box_row_set_child (GTK_LIST_BOX_ROW (row), box);
  gtk_widget_set_name (row, name);
  return row;
}

static void
add_column_titles (NapkinTileSuggestions *self)
{
  for (guint c = 0; c < G_N_ELEMENTS (columns); c++)
    {
      GtkWidget *title = cell_new (self, c, _(columns[c].title));

      gtk_box_append (self->column_titles, title);
      if (c == G_N_ELEMENTS (columns) - 1)
        self->measured_title = title;
    }
  /* an empty column would widen the list for nothing */
  gtk_widget_set_visible (self->measured_title, FALSE);
}

static void
show_measured_column (NapkinTileSuggestions *self,
                      gboolean               shown)
{
  self->measured_shown = shown;
  gtk_widget_set_visible (self->measured_title, shown);
  for (guint i = 0; i < TOP_K; i++)
    if (self->measured_labels[i] != NULL)
      gtk_widget_set_visible (GTK_WIDGET (self->measured_labels[i]), shown);
}

static char *
format_throughput (const NapkinTuneCandidate *c)
{
  g_autofree char *flops = napkin_format_si (c->throughput, "FLOP/s");
  g_autofree char *bytes = NULL;

  if (c->predicted_time_s <= 0)
    return g_steal_pointer (&flops);
  bytes = napkin_format_si (c->hbm_bytes / c->predicted_time_s, "B/s");
  /* the rate that bounds it first */
  if (c->bound == NAPKIN_RESOURCE_HBM || c->throughput <= 0)
    return g_strdup_printf ("%s · %s", bytes, flops);
  return g_strdup_printf ("%s · %s", flops, bytes);
}

static char *
format_footprint (const NapkinTuneCandidate *c)
{
  g_autofree char *bytes = napkin_format_si (c->footprint_bytes, "B");
  g_autofree char *per_sm = g_strdup_printf ("%" G_GINT64_FORMAT, c->per_sm);

  /* TRANSLATORS: the largest region's on-chip footprint, and how many of its
   * instances fit on one SM at a time, e.g. "98.3 kB · 2/SM" */
  return g_strdup_printf (_("%s · %s/SM"), bytes, per_sm);
}

/* The time a speed-up is over: the document's own tiles, or the proposal's first
 * tiles when it had no regions. (Not the diagram as drawn: without regions the
 * model prices every operation as an ideal kernel, each tensor moved once.) */
static double
baseline_time (NapkinTileSuggestions *self)
{
  return self->result->current ? self->result->current->predicted_time_s : NAN;
}

static char *
format_speedup (NapkinTileSuggestions     *self,
                const NapkinTuneCandidate *c)
{
  double base = baseline_time (self);

  if (isnan (base) || c->predicted_time_s <= 0)
    return g_strdup ("—");
  return g_strdup_printf ("%.2f×", base / c->predicted_time_s);
}

/* The document relabeled as row `index` says (with the proposed regions when it
 * had none), a new diagram. */
static NapkinDiagram *
relabeled_document (NapkinTileSuggestions  *self,
                    guint                   index,
                    GError                **error)
{
  return napkin_tune_result_relabel (self->result, napkin_history_get_diagram (self->history), index, error);
}

char *
napkin_tile_suggestions_describe (const NapkinTuneCandidate *candidate)
{
  g_autoptr(GString) text = g_string_new (NULL);
  g_autofree char *region = NULL;

  g_return_val_if_fail (candidate != NULL, NULL);

  for (guint i = 0; candidate->specs && candidate->specs[i]; i++)
    {
      /* "REGION.AXIS=KIND:SIZE" or "REGION.stages=N", as napkin_tune writes them */
      const char *spec = candidate->specs[i];
      const char *dot = strchr (spec, '.');
      const char *eq = dot ? strchr (dot, '=') : NULL;
      const char *colon = eq ? strchr (eq, ':') : NULL;
      g_autofree char *name = NULL;
      g_autofree char *key = NULL;
      g_autofree char *kind = NULL;

      if (eq == NULL)
        {
          g_string_append_printf (text, "%s%s", text->len ? "\n" : "", spec);
          continue;
        }
      name = g_strndup (spec, dot - spec);
      key = g_strndup (dot + 1, eq - dot - 1);
      kind = colon ? g_strndup (eq + 1, colon - eq - 1) : NULL;
      if (g_strcmp0 (name, region) != 0)
        {
          g_string_append_printf (text, "%s%s: ", text->len ? "\n" : "", name);
          g_free (region);
          region = g_strdup (name);
        }
      else
        g_string_append (text, ", ");
      if (colon == NULL && g_str_equal (key, "stages"))
        /* TRANSLATORS: a region's software pipeline depth, e.g. "3 pipeline stages" */
        g_string_append_printf (text, _("%s pipeline stages"), eq + 1);
      else if (g_strcmp0 (kind, "stream") == 0)
        /* TRANSLATORS: an axis of a region read in chunks, e.g. "k streamed 64 at a time" */
        g_string_append_printf (text, _("%s streamed %s at a time"), key, colon + 1);
      else if (g_strcmp0 (kind, "parallel") == 0)
        /* TRANSLATORS: an axis of a region split over blocks or threads, e.g. "m in tiles of 128" */
        g_string_append_printf (text, _("%s in tiles of %s"), key, colon + 1);
      else
        g_string_append_printf (text, "%s=%s", key, eq + 1);
    }
  if (text->len == 0)
    g_string_append (text, _("no tiles to choose"));
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static void
set_status (NapkinTileSuggestions *self,
            const char            *status)
{
  g_free (self->status);
  self->status = g_strdup (status);
  gtk_label_set_text (self->status_label, status ? status : "");
}

static void
set_error (NapkinTileSuggestions *self,
           const char            *error)
{
  g_free (self->error);
  self->error = g_strdup (error);
  gtk_label_set_text (self->error_label, error ? error : "");
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), error != NULL);
}

/* The document with candidate c applied, for the analysis pane ("preview");
 * NULL ends the preview. */
static void
send_preview (NapkinTileSuggestions *self,
              NapkinDiagram         *preview,
              const char            *label)
{
  if (preview == NULL && !self->previewing)
    return;
  self->previewing = preview != NULL;
  g_signal_emit (self, signals[PREVIEW], 0, preview, label);
}

static void
emit_preview (NapkinTileSuggestions     *self,
              const NapkinTuneCandidate *c)
{
  g_autoptr(NapkinDiagram) preview = NULL;
  g_autofree char *label = NULL;

  if (c != NULL && self->history != NULL
      && napkin_diagram_get_generation (napkin_history_get_diagram (self->history)) == self->generation)
    {
      preview = relabeled_document (self, (guint) self->selected, NULL);
      if (preview != NULL)
        label = g_strdup_printf (_("Preview of suggestion %d (not applied)"), self->selected + 1);
    }
  send_preview (self, preview, label);
}

static void stop_measuring (NapkinTileSuggestions *self);

void
_napkin_tile_suggestions_retire_rows (GtkListBox *list,
                                      GPtrArray  *retired)
{
  GtkWidget *child;

  /* no gtk_list_box_remove_all before GTK 4.12 */
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (list))) != NULL)
    {
      g_ptr_array_add (retired, g_object_ref (child));
      gtk_list_box_remove (list, child);
    }
}

static void
clear_list (NapkinTileSuggestions *self)
{
  stop_measuring (self);
  show_measured_column (self, FALSE);
  for (guint i = 0; i < TOP_K; i++)
    {
      self->measured[i] = NAN;
      self->measured_labels[i] = NULL;
    }

  _napkin_tile_suggestions_retire_rows (self->list, self->retired);
  self->selected = -1;
  gtk_label_set_text (self->details_label, "");
  gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), FALSE);
  gtk_widget_set_sensitive (GTK_WIDGET (self->measure_button), FALSE);
  emit_preview (self, NULL);
}

static GtkWidget *
row_new (NapkinTileSuggestions     *self,
         guint                      index,
         const NapkinTuneCandidate *c)
{
  GtkWidget *row;
  GtkWidget *numbers = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  g_autofree char *name = g_strdup_printf ("suggestion-%u", index);
  g_autofree char *rank = g_strdup_printf ("%u", index + 1);
  g_autofree char *time = napkin_format_si (c->predicted_time_s, "s");
  g_autofree char *rate = format_throughput (c);
  g_autofree char *footprint = format_footprint (c);
  g_autofree char *speedup = format_speedup (self, c);
  g_autofree char *words = napkin_tile_suggestions_describe (c);
  const char *cells[] = { rank, time, rate, napkin_resource_to_label (c->bound), footprint, speedup, "" };

  G_STATIC_ASSERT (G_N_ELEMENTS (cells) == G_N_ELEMENTS (columns));
  G_STATIC_ASSERT (G_N_ELEMENTS (columns) == G_N_ELEMENTS (self->column_widths));
  for (guint i = 0; i < G_N_ELEMENTS (cells); i++)
    {
      GtkWidget *cell = cell_new (self, i, cells[i]);

      gtk_box_append (GTK_BOX (numbers), cell);
      if (i == G_N_ELEMENTS (cells) - 1)
        {
          gtk_widget_set_visible (cell, self->measured_shown);
          if (index < TOP_K)
            self->measured_labels[index] = GTK_LABEL (cell);
        }
    }
  row = _napkin_tile_suggestions_row_new (numbers, words, name);
  gtk_widget_set_tooltip_text (row, c->tiles);
  return row;
}

static void
show_result (NapkinTileSuggestions *self,
             double                 seconds)
{
  NapkinTuneResult *r = self->result;
  g_autofree char *status = NULL;
  g_autofree char *now = NULL;

  for (guint i = 0; i < r->best->len; i++)
    gtk_list_box_append (self->list, row_new (self, i, g_ptr_array_index (r->best, i)));

  if (r->relabeled != NULL)
    {
      g_autofree char *what = g_strjoinv ("; ", r->proposed);

      if (r->regions_replaced)
        {
          g_autofree char *time = r->current != NULL ? napkin_format_si (r->current->predicted_time_s, "s")
                                                     : g_strdup (_("do not fit"));

          /* regions are hints (docs/plan.md): say why Apply redraws them */
          now = g_strdup_printf (_("The drawn regions (%s) are not within %.0f %% of the best the model finds; the "
                                   "plan’s own kernels are, and Apply replaces the regions with them (%s)."),
                                 time, 100 * NAPKIN_TUNE_RESOLUTION, what);
        }
      else
        now = g_strdup_printf (_("The diagram has no regions: the model proposes them (%s); speed-ups are over "
                                 "the proposal’s first tiles."), what);
    }
  else if (r->current != NULL)
    {
      g_autofree char *time = napkin_format_si (r->current->predicted_time_s, "s");

      now = g_strdup_printf (_("The diagram’s own tiles: %s, %s-bound."), time,
                             napkin_resource_to_label (r->current->bound));
    }
  else
    now = g_strdup_printf (_("The diagram’s own tiles do not fit on %s."), self->arch->id);
  status = g_strdup_printf (r->exhaustive
                              ? _("%s: %u relabelings tried (all combinations), %u feasible, in %.0f ms. %s")
                              : _("%s: %u relabelings tried (coordinate descent), %u feasible, in %.0f ms. %s"),
                            self->arch->name ? self->arch->name : self->arch->id, r->evaluated, r->feasible,
                            seconds * 1e3, now);
  set_status (self, status);
  napkin_tile_suggestions_select (self, 0);
}

/* The derivation in place of the tile list (TRUE), or the list back. */
static void
show_derivation_mode (NapkinTileSuggestions *self,
                      gboolean               shown)
{
  gtk_widget_set_visible (GTK_WIDGET (self->derivation_view), shown);
  gtk_widget_set_visible (GTK_WIDGET (self->column_titles), !shown);
  gtk_widget_set_visible (self->list_scroller, !shown);
  gtk_widget_set_visible (GTK_WIDGET (self->details_label), !shown);
  gtk_widget_set_visible (GTK_WIDGET (self->measure_button), !shown);
  gtk_label_set_text (self->title_label, shown ? _("Derived Kernels") : _("Suggested Tiles"));
  gtk_button_set_label (self->apply_button, shown ? _("_Apply Derivation") : _("_Apply"));
}

static void
show_derivation (NapkinTileSuggestions *self,
                 double                 seconds)
{
  const NapkinDerivation *r = self->derivation;
  guint regions = napkin_diagram_n_regions (r->derived);
  g_autofree char *how = NULL;
  g_autofree char *status = NULL;

  show_derivation_mode (self, TRUE);
  napkin_derivation_view_set_derivation (self->derivation_view, r);
  how = g_strdup_printf (r->exact
                           ? _("%s: the diagram has no regions, so the model derived its kernels: which operations "
                               "fuse, which values go through device memory, each kernel’s tiles (%u candidate "
                               "kernels priced, exact search, %.0f ms).")
                           : _("%s: the diagram has no regions, so the model derived its kernels: which operations "
                               "fuse, which values go through device memory, each kernel’s tiles (%u candidate "
                               "kernels priced, greedy search, %.0f ms)."),
                         self->arch->name ? self->arch->name : self->arch->id, r->candidates, seconds * 1e3);
  status = g_strdup_printf ("%s %s", how,
                            regions > 0 ? _("Apply adds the fused kernels as regions, in one undo step.")
                                        : _("The plan runs these kernels as derived without regions: nothing to "
                                            "apply."));
  set_status (self, status);
  gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), regions > 0);
  send_preview (self, regions > 0 ? r->derived : NULL, _("Preview of the derivation (not applied)"));
}

static void
search_done (GObject      *object,
             GAsyncResult *res,
             gpointer      user_data)
{
  NapkinTileSuggestions *self = NAPKIN_TILE_SUGGESTIONS (object);
  g_autoptr(GError) error = NULL;
  SearchOutput *output = g_task_propagate_pointer (G_TASK (res), &error);

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED))
    return;   /* a newer search replaced this one, or the popover went away */

  g_clear_object (&self->cancellable);
  gtk_spinner_stop (self->spinner);
  if (output == NULL)
    {
      set_status (self, NULL);
      set_error (self, error->message);
      return;
    }
  if (output->derivation != NULL)
    {
      self->derivation = g_steal_pointer (&output->derivation);
      show_derivation (self, output->seconds);
      search_output_free (output);
      return;
    }
  self->result = g_steal_pointer (&output->result);
  show_result (self, output->seconds);
  gtk_widget_set_sensitive (GTK_WIDGET (self->measure_button), TRUE);
  search_output_free (output);
}

void
napkin_tile_suggestions_search (NapkinTileSuggestions *self,
                                NapkinHistory         *history,
                                NapkinArch            *arch,
                                gboolean               has_dtype,
                                NapkinDtype            dtype)
{
  g_autoptr(GTask) task = NULL;
  NapkinDiagram *diagram;
  SearchInput *input;
  g_autofree char *status = NULL;

  g_return_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self));
  g_return_if_fail (NAPKIN_IS_HISTORY (history));

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_clear_pointer (&self->result, napkin_tune_result_free);
  g_clear_pointer (&self->derivation, napkin_derivation_free);
  g_set_object (&self->history, history);
  if (arch != NULL)
    napkin_arch_ref (arch);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  self->arch = arch;
  self->has_dtype = has_dtype;
  self->dtype = dtype;
  clear_list (self);
  show_derivation_mode (self, FALSE);
  napkin_derivation_view_set_derivation (self->derivation_view, NULL);
  set_error (self, NULL);

  if (arch == NULL)
    {
      set_status (self, NULL);
      set_error (self, _("No architecture selected: choose one in the header bar"));
      return;
    }

  diagram = napkin_history_get_diagram (history);
  self->generation = napkin_diagram_get_generation (diagram);
  input = g_new0 (SearchInput, 1);
  input->json = napkin_diagram_save_to_data (diagram, &input->length);
  input->arch = napkin_arch_ref (arch);
  input->options.top_k = TOP_K;
  input->options.regions_are_hints = TRUE;
  input->options.has_dtype = has_dtype;
  input->options.dtype = dtype;

  self->cancellable = g_cancellable_new ();
  task = g_task_new (self, self->cancellable, search_done, NULL);
  g_task_set_source_tag (task, (gpointer) (guintptr) napkin_tile_suggestions_search);
  g_task_set_task_data (task, input, (GDestroyNotify) search_input_free);
  status = g_strdup_printf (napkin_diagram_n_regions (diagram) == 0 ? _("Deriving the diagram’s kernels on %s…")
                                                                     : _("Searching the tile sizes on %s…"),
                            arch->name ? arch->name : arch->id);
  set_status (self, status);
  gtk_spinner_start (self->spinner);
  g_task_run_in_thread (task, search_thread);
}

gboolean
napkin_tile_suggestions_is_searching (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), FALSE);

  return self->cancellable != NULL;
}

guint
napkin_tile_suggestions_get_n_items (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), 0);

  return self->result ? self->result->best->len : 0;
}

const NapkinTuneCandidate *
napkin_tile_suggestions_get_item (NapkinTileSuggestions *self,
                                  guint                  index)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NULL);

  if (self->result == NULL || index >= self->result->best->len)
    return NULL;
  return g_ptr_array_index (self->result->best, index);
}

const NapkinTuneCandidate *
napkin_tile_suggestions_get_current (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NULL);

  return self->result ? self->result->current : NULL;
}

const NapkinDerivation *
napkin_tile_suggestions_get_derivation (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NULL);

  return self->derivation;
}

const char *
napkin_tile_suggestions_get_error (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NULL);

  return self->error;
}

const char *
napkin_tile_suggestions_get_status (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NULL);

  return self->status;
}

/* ---- selecting and applying ---------------------------------------------------------------- */

void
napkin_tile_suggestions_select (NapkinTileSuggestions *self,
                                int                    index)
{
  GtkListBoxRow *row;

  g_return_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self));

  row = index >= 0 ? gtk_list_box_get_row_at_index (self->list, index) : NULL;
  if (row != NULL)
    gtk_list_box_select_row (self->list, row);
  else
    gtk_list_box_unselect_all (self->list);
}

int
napkin_tile_suggestions_get_selected (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), -1);

  return self->selected;
}

static void
row_selected_cb (NapkinTileSuggestions *self,
                 GtkListBoxRow         *row,
                 GtkListBox            *list)
{
  const NapkinTuneCandidate *c;
  g_autofree char *words = NULL;
  g_autofree char *details = NULL;
  g_autofree char *options = NULL;

  self->selected = row ? gtk_list_box_row_get_index (row) : -1;
  c = self->selected >= 0 ? napkin_tile_suggestions_get_item (self, self->selected) : NULL;
  gtk_widget_set_sensitive (GTK_WIDGET (self->apply_button), c != NULL);
  emit_preview (self, c);
  if (c == NULL)
    {
      gtk_label_set_text (self->details_label, "");
      return;
    }
  words = napkin_tile_suggestions_describe (c);
  options = c->specs && c->specs[0] ? g_strjoinv (" --tile ", c->specs) : NULL;
  /* TRANSLATORS: the rank, the tile choices in words, and the same choices as
   * napkin-cli options */
  details = options != NULL ? g_strdup_printf (_("Suggestion %d:\n%s\nAs napkin-cli options: --tile %s"),
                                               self->selected + 1, words, options)
                            : g_strdup_printf (_("Suggestion %d:\n%s\nFrom napkin-cli: tune FILE --apply"),
                                               self->selected + 1, words);
  gtk_label_set_text (self->details_label, details);
}

/* Every derived kernel's region at once: one undo step restores the diagram as drawn. */
static gboolean
apply_derivation (NapkinTileSuggestions  *self,
                  GError                **error)
{
  const NapkinDerivation *r = self->derivation;
  g_autofree char *time = napkin_format_si (r->derived_s, "s");
  g_autofree char *message = NULL;

  if (napkin_diagram_n_regions (r->derived) == 0)
    {
      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                           _("The plan runs these kernels as the diagram is drawn: nothing to apply"));
      return FALSE;
    }
  napkin_history_begin_group (self->history, _("Apply Derivation"));
  if (!napkin_edit_relabel_like (self->history, r->derived, error))
    {
      napkin_history_cancel_group (self->history);
      return FALSE;
    }
  napkin_history_end_group (self->history);
  message = g_strdup_printf (_("Applied the derivation: %u kernels, predicted %s, %.2f× faster than every "
                               "operation its own kernel"),
                             r->kernels->len, time, r->derived_s > 0 ? r->unfused_s / r->derived_s : 0);
  /* the document moved on: this derivation is stale */
  self->generation = 0;
  send_preview (self, NULL, NULL);
  g_signal_emit (self, signals[MESSAGE], 0, message);
  gtk_popover_popdown (GTK_POPOVER (self));
  return TRUE;
}

gboolean
napkin_tile_suggestions_apply (NapkinTileSuggestions  *self,
                               GError                **error)
{
  const NapkinTuneCandidate *c;
  NapkinDiagram *diagram;
  g_autoptr(NapkinDiagram) target = NULL;
  g_autofree char *time = NULL;
  g_autofree char *message = NULL;
  double speedup;
  guint depth;

  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), FALSE);

  c = self->selected >= 0 ? napkin_tile_suggestions_get_item (self, self->selected) : NULL;
  if ((c == NULL && self->derivation == NULL) || self->history == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE, _("No suggestion is selected"));
      return FALSE;
    }
  diagram = napkin_history_get_diagram (self->history);
  if (napkin_diagram_get_generation (diagram) != self->generation)
    {
      /* the ranking was for another diagram: search again rather than apply it */
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("The diagram changed after the search: the suggestions were searched again"));
      napkin_tile_suggestions_search (self, self->history, self->arch, self->has_dtype, self->dtype);
      return FALSE;
    }
  if (self->derivation != NULL)
    return apply_derivation (self, error);

  /* the document (or the proposal for it) with the candidate set, validated as --tile does */
  target = relabeled_document (self, (guint) self->selected, error);
  if (target == NULL)
    return FALSE;

  stop_measuring (self);
  depth = napkin_history_get_depth (self->history);
  napkin_history_begin_group (self->history, _("Apply Suggested Tiles"));
  if (!napkin_edit_relabel_like (self->history, target, error))
    {
      napkin_history_cancel_group (self->history);
      return FALSE;
    }
  napkin_history_end_group (self->history);

  time = napkin_format_si (c->predicted_time_s, "s");
  speedup = baseline_time (self) / c->predicted_time_s;
  if (napkin_history_get_depth (self->history) == depth)
    message = g_strdup (_("These are the diagram’s tiles already"));
  else if (isnan (speedup))
    message = g_strdup_printf (_("Applied suggestion %d: predicted %s"), self->selected + 1, time);
  else
    message = g_strdup_printf (_("Applied suggestion %d: predicted %s, %.2f× the previous tiles"),
                               self->selected + 1, time, speedup);
  /* the document moved on: this ranking is stale */
  self->generation = 0;
  emit_preview (self, NULL);
  g_signal_emit (self, signals[MESSAGE], 0, message);
  gtk_popover_popdown (GTK_POPOVER (self));
  return TRUE;
}

static void
apply_clicked_cb (NapkinTileSuggestions *self)
{
  g_autoptr(GError) error = NULL;

  if (!napkin_tile_suggestions_apply (self, &error))
    set_error (self, error->message);
}

static void
cancel_clicked_cb (NapkinTileSuggestions *self)
{
  gtk_popover_popdown (GTK_POPOVER (self));
}

static void
closed_cb (NapkinTileSuggestions *self)
{
  emit_preview (self, NULL);
  stop_measuring (self);
  /* closed while searching: nobody waits for the result */
  if (self->cancellable != NULL)
    {
      g_cancellable_cancel (self->cancellable);
      g_clear_object (&self->cancellable);
      gtk_spinner_stop (self->spinner);
      set_status (self, NULL);
    }
}

/* ---- measuring on the local GPU ------------------------------------------------------------ */

static void
stop_measuring (NapkinTileSuggestions *self)
{
  if (self->measure_cancellable == NULL)
    return;
  g_cancellable_cancel (self->measure_cancellable);
  g_clear_object (&self->measure_cancellable);
  gtk_spinner_stop (self->spinner);
  gtk_widget_set_sensitive (GTK_WIDGET (self->measure_button), self->result != NULL);
}

static void measure_next (NapkinTileSuggestions *self);

/* The runner's answer for the row being measured, in its "Measured" cell. */
static void
show_measured (NapkinTileSuggestions *self,
               const NapkinRunResult *run,
               const GError          *error)
{
  guint i = self->measure_index;
  const NapkinTuneCandidate *c = napkin_tile_suggestions_get_item (self, i);
  GtkLabel *cell = i < TOP_K ? self->measured_labels[i] : NULL;
  const char *status = run ? run->status : NULL;
  g_autofree char *text = NULL;
  g_autofree char *tip = NULL;

  if (run != NULL && napkin_run_result_is_ok (run) && run->time_median_ms > 0)
    {
      g_autofree char *time = NULL;
      g_autoptr(GString) kernels = g_string_new (NULL);
      gboolean generic = FALSE;

      /* which skeletons ran: a generic loop nest is not what the model ranks */
      for (guint k = 0; k < run->kernels->len; k++)
        {
          const char *skeleton = napkin_run_result_kernel (run, k)->skeleton;
          const char *name = skeleton ? skeleton : "?";

          g_string_append_printf (kernels, "%s%s", k ? ", " : "", name);
          generic |= g_strcmp0 (name, "generic") == 0;
        }
      self->measured[i] = run->time_median_ms / 1e3;
      time = napkin_format_si (self->measured[i], "s");
      /* measured over predicted: how far the model is for this relabeling */
      text = generic ? g_strdup_printf (_("%s (%.2f×, generic)"), time, self->measured[i] / c->predicted_time_s)
                     : g_strdup_printf ("%s (%.2f×)", time, self->measured[i] / c->predicted_time_s);
      tip = g_strdup_printf (_("Median of %d runs on the local GPU, %.2f× the predicted time; kernels: %s"),
                             MEASURE_REPEATS, self->measured[i] / c->predicted_time_s,
                             kernels->len ? kernels->str : "?");
    }
  else
    {
      /* "fault", "timeout", "crashed", "wrong", … or why it could not start */
      text = g_strdup (status ? status : _("failed"));
      if (run != NULL && run->message != NULL)
        tip = g_strdup (run->message);
      else if (error != NULL)
        tip = g_strdup (error->message);
    }
  if (cell != NULL)
    {
      gtk_label_set_text (cell, text);
      gtk_widget_set_tooltip_text (GTK_WIDGET (cell), tip);
    }
  if (run == NULL && error != NULL)
    set_error (self, error->message);
}

static void
measure_done_cb (GObject      *object,
                 GAsyncResult *res,
                 gpointer      user_data)
{
  g_autoptr(NapkinTileSuggestions) self = user_data;
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinRunResult) run = napkin_run_job_run_finish_result (NAPKIN_RUN_JOB (object), res, &error);

  if (g_error_matches (error, G_IO_ERROR, G_IO_ERROR_CANCELLED) || self->measure_cancellable == NULL)
    return;   /* stopped: a new search, Apply, Cancel or the popover went away */
  show_measured (self, run, error);
  /* a runner that cannot start will not start for the next one either */
  if (g_error_matches (error, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_NO_RUNNER))
    {
      stop_measuring (self);
      set_status (self, NULL);
      return;
    }
  self->measure_index++;
  measure_next (self);
}

static void
measure_next (NapkinTileSuggestions *self)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinRunJob) job = NULL;
  g_autoptr(GError) error = NULL;
  g_autofree char *repeats = g_strdup_printf ("--repeats=%d", MEASURE_REPEATS);
  const char *args[] = { repeats, "--reference-repeats=0", NULL };
  g_autofree char *status = NULL;
  GCancellable *cancellable = self->measure_cancellable;

  if (self->measure_index >= self->measure_count)
    {
      guint n = 0;

      for (guint i = 0; i < self->measure_count; i++)
        n += !isnan (self->measured[i]);
      status = g_strdup_printf (_("Measured %u of the best %u on the local GPU: the Measured column gives the "
                                  "median time and its ratio to the predicted one."), n, self->measure_count);
      stop_measuring (self);
      set_status (self, status);
      return;
    }
  copy = relabeled_document (self, self->measure_index, &error);
  if (copy == NULL)
    {
      show_measured (self, NULL, error);
      self->measure_index++;
      measure_next (self);
      return;
    }
  /* the job takes the diagram as JSON now: the editor may change it meanwhile */
  job = napkin_run_job_new (copy, args);
  if (self->runner != NULL)
    napkin_run_job_set_runner (job, (const char * const *) self->runner);
  status = g_strdup_printf (_("Measuring suggestion %u of %u on the local GPU…"), self->measure_index + 1,
                            self->measure_count);
  set_status (self, status);
  if (self->measure_index < TOP_K && self->measured_labels[self->measure_index] != NULL)
    gtk_label_set_text (self->measured_labels[self->measure_index], "…");
  napkin_run_job_run_async (job, cancellable, measure_done_cb, g_object_ref (self));
}

void
napkin_tile_suggestions_measure (NapkinTileSuggestions *self,
                                 guint                  count)
{
  g_return_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self));

  if (self->result == NULL || self->measure_cancellable != NULL || count == 0)
    return;
  if (napkin_diagram_get_generation (napkin_history_get_diagram (self->history)) != self->generation)
    {
      set_error (self, _("The diagram changed after the search: the suggestions were searched again"));
      napkin_tile_suggestions_search (self, self->history, self->arch, self->has_dtype, self->dtype);
      return;
    }
  set_error (self, NULL);
  for (guint i = 0; i < TOP_K; i++)
    {
      self->measured[i] = NAN;
      if (self->measured_labels[i] != NULL)
        gtk_label_set_text (self->measured_labels[i], "");
    }
  show_measured_column (self, TRUE);
  self->measure_index = 0;
  self->measure_count = MIN (count, self->result->best->len);
  self->measure_cancellable = g_cancellable_new ();
  gtk_widget_set_sensitive (GTK_WIDGET (self->measure_button), FALSE);
  gtk_spinner_start (self->spinner);
  measure_next (self);
}

gboolean
napkin_tile_suggestions_is_measuring (NapkinTileSuggestions *self)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), FALSE);

  return self->measure_cancellable != NULL;
}

double
napkin_tile_suggestions_get_measured (NapkinTileSuggestions *self,
                                      guint                  index)
{
  g_return_val_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self), NAN);

  return index < TOP_K ? self->measured[index] : NAN;
}

void
napkin_tile_suggestions_set_runner (NapkinTileSuggestions *self,
                                    const char * const    *command)
{
  g_return_if_fail (NAPKIN_IS_TILE_SUGGESTIONS (self));

  g_strfreev (self->runner);
  self->runner = g_strdupv ((char **) command);
}

static void
measure_clicked_cb (NapkinTileSuggestions *self)
{
  napkin_tile_suggestions_measure (self, NAPKIN_TILE_SUGGESTIONS_MEASURE_K);
}

/* ---- class ---------------------------------------------------------------------------------- */

static void
napkin_tile_suggestions_dispose (GObject *object)
{
  NapkinTileSuggestions *self = NAPKIN_TILE_SUGGESTIONS (object);

  g_cancellable_cancel (self->cancellable);
  g_clear_object (&self->cancellable);
  g_cancellable_cancel (self->measure_cancellable);
  g_clear_object (&self->measure_cancellable);
  g_clear_object (&self->history);
  /* the list empties itself while disposed, selecting nothing: not for us */
  if (self->list != NULL)
    g_signal_handlers_disconnect_by_data (self->list, self);
  gtk_widget_dispose_template (GTK_WIDGET (self), NAPKIN_TYPE_TILE_SUGGESTIONS);
  g_clear_pointer (&self->retired, g_ptr_array_unref);
  G_OBJECT_CLASS (napkin_tile_suggestions_parent_class)->dispose (object);
}

static void
napkin_tile_suggestions_finalize (GObject *object)
{
  NapkinTileSuggestions *self = NAPKIN_TILE_SUGGESTIONS (object);

  g_clear_pointer (&self->result, napkin_tune_result_free);
  g_clear_pointer (&self->derivation, napkin_derivation_free);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  g_clear_pointer (&self->status, g_free);
  g_clear_pointer (&self->error, g_free);
  g_clear_pointer (&self->runner, g_strfreev);
  for (guint c = 0; c < G_N_ELEMENTS (self->column_widths); c++)
    g_clear_object (&self->column_widths[c]);
  G_OBJECT_CLASS (napkin_tile_suggestions_parent_class)->finalize (object);
}

static void
napkin_tile_suggestions_class_init (NapkinTileSuggestionsClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_tile_suggestions_dispose;
  object_class->finalize = napkin_tile_suggestions_finalize;

  /* A line for the window's toast. */
  signals[MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 1, G_TYPE_STRING);
  /* The selected row applied to a copy of the document (NAPKIN_TYPE_DIAGRAM) and a
   * line saying so, for the analysis pane; NULL, NULL when the preview ends. */
  signals[PREVIEW] = g_signal_new ("preview", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST, 0, NULL, NULL, NULL,
                                   G_TYPE_NONE, 2, NAPKIN_TYPE_DIAGRAM, G_TYPE_STRING);

  g_type_ensure (NAPKIN_TYPE_DERIVATION_VIEW);
  gtk_widget_class_set_template_from_resource (widget_class,
                                               "/io/github/napkin/Napkin/ui/napkin-tile-suggestions.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, spinner);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, title_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, status_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, error_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, details_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, column_titles);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, list);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, list_scroller);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, derivation_view);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, cancel_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, apply_button);
  gtk_widget_class_bind_template_child (widget_class, NapkinTileSuggestions, measure_button);
}

static void
napkin_tile_suggestions_init (NapkinTileSuggestions *self)
{
  self->selected = -1;
  self->retired = g_ptr_array_new_with_free_func (g_object_unref);
  for (guint i = 0; i < TOP_K; i++)
    self->measured[i] = NAN;
  gtk_widget_init_template (GTK_WIDGET (self));
  for (guint c = 0; c < G_N_ELEMENTS (self->column_widths); c++)
    self->column_widths[c] = gtk_size_group_new (GTK_SIZE_GROUP_HORIZONTAL);
  add_column_titles (self);
  g_signal_connect_object (self->list, "row-selected", G_CALLBACK (row_selected_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->apply_button, "clicked", G_CALLBACK (apply_clicked_cb), self, G_CONNECT_SWAPPED);
  /* Enter or a double click on a row: Apply */
  g_signal_connect_object (self->list, "row-activated", G_CALLBACK (apply_clicked_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->cancel_button, "clicked", G_CALLBACK (cancel_clicked_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect_object (self->measure_button, "clicked", G_CALLBACK (measure_clicked_cb), self, G_CONNECT_SWAPPED);
  g_signal_connect (self, "closed", G_CALLBACK (closed_cb), NULL);
}

GtkWidget *
napkin_tile_suggestions_new (void)
{
  return g_object_new (NAPKIN_TYPE_TILE_SUGGESTIONS, NULL);
}
