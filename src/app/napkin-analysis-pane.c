/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-analysis-pane"

#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <glib/gi18n.h>

#include "napkin-analysis-pane.h"
#include "napkin-arch-editor.h"
#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-kernel-list.h"
#include "napkin-plot.h"
#include "napkin-run-result.h"
#include "napkin-runs.h"
#include "napkin-shard-model.h"
#include "napkin-describe.h"
#include "napkin-validate.h"

/* What a number's tooltip explains: its formula is written only when shown
 * (hundreds of rows on a large diagram; writing them all on each edit cost more
 * than the model). */
typedef enum
{
  TIP_NONE,
  TIP_TOTAL,
  TIP_SERIAL,
  TIP_THROUGHPUT,
  TIP_THROUGHPUT_SERIAL,
  TIP_INTENSITY,
  TIP_OVERLAP,
  TIP_LEVEL,
  TIP_LEVEL_BYTES,
  TIP_LEVEL_TIME,
  TIP_RESOURCE,
  TIP_REGION_SUMMARY,
  TIP_REGION_INSTANCES,
  TIP_REGION_FOOTPRINT,
  TIP_REGION_OCCUPANCY,
  TIP_REGION_WAVES,
  TIP_REGION_ERROR,
  TIP_TRANSFER,
} TipKind;

typedef struct
{
  TipKind kind;
  guint   a;        /* level, resource or region index */
  guint   b;        /* transfer index */
} Tip;

#define TIP(k, x, y) ((Tip) { (k), (x), (y) })
#define NO_TIP TIP (TIP_NONE, 0, 0)

typedef struct
{
  char           *key;
  Tip             tip;
  GtkWidget      *box;
  GtkLabel       *name;
  GtkLabel       *value;
  NapkinItemKind  kind;     /* what a click selects: NAPKIN_ITEM_REGION or NAPKIN_ITEM_NODE */
  char           *target;   /* region name or node id; NULL: nothing */
  gboolean        highlighted;
} Row;

struct _NapkinAnalysisPane
{
  GtkWidget           parent_instance;

  /* template */
  GtkWidget          *root;
  GtkDropDown        *dtype_dropdown;
  GtkLabel           *error_label;
  GtkLabel           *preview_label;
  GtkLabel           *origin_label;
  GtkScrolledWindow  *scroller;
  GtkBox             *summary_box;
  NapkinKernelList   *kernel_list;
  GtkBox             *levels_box;
  GtkBox             *compute_box;
  GtkBox             *regions_box;
  GtkWidget          *gpus_section;
  GtkDropDown        *gpus_dropdown;
  GtkLabel           *gpus_error_label;
  GtkBox             *gpus_box;
  GtkExpander        *plots_expander;
  GtkDrawingArea     *roofline_area;
  GtkDrawingArea     *bars_area;

  NapkinCanvas       *canvas;
  NapkinDiagram      *diagram;
  NapkinDiagram      *preview;       /* shown instead of diagram while set (not the document) */
  NapkinDiagram      *partial;       /* the complete part of an incomplete diagram, priced instead */
  GStrv               left_out;      /* the operations that part leaves out */
  gulong              changed_id;
  gulong              selection_id;
  NapkinArch         *arch;
  gboolean            has_dtype;
  NapkinDtype         dtype;

  NapkinAnalysis     *analysis;
  char               *error_text;
  /* Several GPUs (docs/multi-gpu.md): the count chosen in the pane (0: the region's),
   * and the last shard analysis, or why there is none */
  guint               gpus;
  gboolean            setting_gpus;
  NapkinShardAnalysis *shard;
  char               *shard_error;
  GHashTable         *rows;          /* key → Row */
  GHashTable         *texts;         /* key → shown text */
  GHashTable         *tips;          /* key → Tip */
  GHashTable         *tip_texts;     /* key → formula, written on demand */
  char               *detail_region; /* the selected region whose details are shown */
  char               *region_signature;
  NapkinPlot         *roofline;
  NapkinPlot         *bars;
  gboolean            dirty;
  guint               tick_id;
  guint               bars_id;
  guint               bars_serial;
  guint               bars_running;
  GCancellable       *bars_cancellable;
  guint               n_updates;
  /* The analysis runs in a thread on a copy; the latest request wins. */
  guint               analysis_serial;    /* bumped by every request */
  gboolean            analysis_running;
  GCancellable       *analysis_cancellable;
};

G_DEFINE_FINAL_TYPE (NapkinAnalysisPane, napkin_analysis_pane, GTK_TYPE_WIDGET)

enum {
  ARCHITECTURE_ADDED,
  KERNEL_ACTIVATED,
  MESSAGE,
  N_SIGNALS
};

static guint signals[N_SIGNALS];

/* Element types offered; index 0 is "as drawn". */
static const NapkinDtype dtypes[] = {
  NAPKIN_DTYPE_FP32, NAPKIN_DTYPE_TF32, NAPKIN_DTYPE_FP16, NAPKIN_DTYPE_BF16,
  NAPKIN_DTYPE_FP8_E4M3, NAPKIN_DTYPE_FP8_E5M2, NAPKIN_DTYPE_INT8,
};
/* The comparison chart's element types (e5m2 runs at e4m3's rate). */
static const NapkinDtype compared_dtypes[] = {
  NAPKIN_DTYPE_FP32, NAPKIN_DTYPE_TF32, NAPKIN_DTYPE_FP16, NAPKIN_DTYPE_BF16,
  NAPKIN_DTYPE_FP8_E4M3, NAPKIN_DTYPE_INT8,
};

static void schedule_update (NapkinAnalysisPane *self);

/* The diagram whose numbers are shown: a preview, else the complete part of an
 * incomplete document, else the document. */
static NapkinDiagram *
analysed (NapkinAnalysisPane *self)
{
  return self->preview ? self->preview : self->partial ? self->partial : self->diagram;
}
static void update_selection (NapkinAnalysisPane *self);

/* The diagram the analysis's indices refer to: the plan's (the drawn regions, then the
 * plan's own; casts folded: docs/plan.md, "The pipeline"). */
static NapkinDiagram *
priced (NapkinAnalysisPane *self)
{
  return self->analysis != NULL && self->analysis->plan != NULL ? self->analysis->plan->diagram : analysed (self);
}

static void
row_free (gpointer data)
{
  Row *row = data;

  g_free (row->key);
  g_free (row->target);
  g_free (row);
}

/* ---------------------------------------------------------------- rows */

static gboolean
row_activate (NapkinAnalysisPane *self,
              Row                *row)
{
  if (self->canvas == NULL || row->target == NULL)
    return FALSE;
  if (row->kind == NAPKIN_ITEM_REGION)
    napkin_canvas_select_region (self->canvas, row->target);
  else
    napkin_canvas_select_node (self->canvas, row->target, FALSE);
  return TRUE;
}

static void
row_pressed_cb (GtkGestureClick *gesture,
                int              n_press,
                double           x,
                double           y,
                gpointer         user_data)
{
  GtkWidget *box = gtk_event_controller_get_widget (GTK_EVENT_CONTROLLER (gesture));
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (gtk_widget_get_ancestor (box, NAPKIN_TYPE_ANALYSIS_PANE));
  const char *key = user_data;
  Row *row = g_hash_table_lookup (self->rows, key);

  if (row != NULL)
    row_activate (self, row);
}

static char *region_errors (NapkinAnalysis *a, guint diagram_index);

static char *
tip_text (NapkinAnalysisPane *self,
          Tip                 tip)
{
  NapkinAnalysis *a = self->analysis;

  if (a == NULL)
    return NULL;
  switch (tip.kind)
    {
    case TIP_NONE:
      return NULL;
    case TIP_TOTAL:
      return napkin_explain_total_time (a, FALSE);
    case TIP_SERIAL:
      return napkin_explain_total_time (a, TRUE);
    case TIP_OVERLAP:
      {
        g_autofree char *t = napkin_format_si (a->overlap_time_s, "s");

        return g_strdup_printf (_("%s with full overlap in every kernel"), t);
      }
    case TIP_THROUGHPUT:
    case TIP_THROUGHPUT_SERIAL:
      {
        gboolean serial = tip.kind == TIP_THROUGHPUT_SERIAL;
        g_autofree char *t = napkin_explain_throughput (a, serial);
        g_autofree char *p = napkin_explain_percent_of_peak (a, serial);

        return g_strdup_printf ("%s\n%s", t, p);
      }
    case TIP_INTENSITY:
      return napkin_explain_intensity (a);
    case TIP_LEVEL:
      {
        g_autofree char *bytes = napkin_explain_level_bytes (a, tip.a);
        g_autofree char *time = napkin_explain_level_time (a, tip.a);
        g_autofree char *t = napkin_format_si (a->levels[tip.a].time_s, "s");
        g_autofree char *predicted = napkin_format_si (a->predicted_time_s, "s");
        g_autofree char *share = g_strdup_printf ("%.1f %%", a->predicted_time_s > 0
                                                  ? 100.0 * a->levels[tip.a].time_s / a->predicted_time_s : 0);
        g_autofree char *share_tip = g_strdup_printf (_("share = level time / predicted time = %s / %s = %s"), t,
                                                      predicted, share);

        return g_strdup_printf ("%s\n\n%s\n%s", bytes, time, share_tip);
      }
    case TIP_LEVEL_BYTES:
      return napkin_explain_level_bytes (a, tip.a);
    case TIP_LEVEL_TIME:
      return napkin_explain_level_time (a, tip.a);
    case TIP_RESOURCE:
      return napkin_explain_resource_time (a, tip.a);
    case TIP_REGION_SUMMARY:
      {
        g_autofree char *i = napkin_explain_region_instances (a, tip.a);
        g_autofree char *f = napkin_explain_region_footprint (a, tip.a);
        g_autofree char *o = napkin_explain_region_occupancy (a, tip.a);
        g_autofree char *w = napkin_explain_region_waves (a, tip.a);

        return g_strdup_printf ("%s\n\n%s\n\n%s\n\n%s", i, f, o, w);
      }
    case TIP_REGION_INSTANCES:
      return napkin_explain_region_instances (a, tip.a);
    case TIP_REGION_FOOTPRINT:
      return napkin_explain_region_footprint (a, tip.a);
    case TIP_REGION_OCCUPANCY:
      return napkin_explain_region_occupancy (a, tip.a);
    case TIP_REGION_WAVES:
      return napkin_explain_region_waves (a, tip.a);
    case TIP_REGION_ERROR:
      return region_errors (a, g_array_index (a->regions, NapkinRegionCost, tip.a).region);
    case TIP_TRANSFER:
      return napkin_explain_transfer (a, tip.a, tip.b);
    }
  return NULL;
}

static gboolean
row_query_tooltip_cb (GtkWidget  *box,
                      int         x,
                      int         y,
                      gboolean    keyboard,
                      GtkTooltip *tooltip,
                      gpointer    user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (gtk_widget_get_ancestor (box, NAPKIN_TYPE_ANALYSIS_PANE));
  Row *row = self ? g_hash_table_lookup (self->rows, user_data) : NULL;
  g_autofree char *text = row ? tip_text (self, row->tip) : NULL;

  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text (tooltip, text);
  return TRUE;
}

/* Enter or Space on a focused row: as a click. */
static gboolean
row_key_cb (GtkWidget *box,
            GVariant  *args,
            gpointer   user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (gtk_widget_get_ancestor (box, NAPKIN_TYPE_ANALYSIS_PANE));
  Row *row = self ? g_hash_table_lookup (self->rows, g_object_get_data (G_OBJECT (box), "napkin-key")) : NULL;

  return row != NULL && row_activate (self, row);
}

static Row *
ensure_row (NapkinAnalysisPane *self,
            GtkBox             *section,
            const char         *key)
{
  Row *row = g_hash_table_lookup (self->rows, key);
  GtkGesture *click;

  if (row != NULL)
    return row;

  row = g_new0 (Row, 1);
  row->key = g_strdup (key);
  row->box = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  gtk_widget_add_css_class (row->box, "napkin-analysis-row");
  row->name = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (row->name, 0);
  gtk_label_set_ellipsize (row->name, PANGO_ELLIPSIZE_END);
  gtk_widget_set_hexpand (GTK_WIDGET (row->name), TRUE);
  gtk_widget_add_css_class (GTK_WIDGET (row->name), "dim-label");
  row->value = GTK_LABEL (gtk_label_new (NULL));
  gtk_label_set_xalign (row->value, 1);
  gtk_label_set_wrap (row->value, TRUE);
  gtk_label_set_wrap_mode (row->value, PANGO_WRAP_WORD_CHAR);
  gtk_label_set_justify (row->value, GTK_JUSTIFY_RIGHT);
  gtk_widget_add_css_class (GTK_WIDGET (row->value), "numeric");
  gtk_box_append (GTK_BOX (row->box), GTK_WIDGET (row->name));
  gtk_box_append (GTK_BOX (row->box), GTK_WIDGET (row->value));
  click = gtk_gesture_click_new ();
  g_signal_connect_data (click, "pressed", G_CALLBACK (row_pressed_cb), g_strdup (key),
                         (GClosureNotify) (void (*) (void)) g_free, 0);
  gtk_widget_add_controller (row->box, GTK_EVENT_CONTROLLER (click));
  gtk_widget_set_has_tooltip (row->box, TRUE);
  /* rows are reachable from the keyboard too */
  {
    GtkEventController *keys = gtk_shortcut_controller_new ();
    GtkShortcutAction *action = gtk_callback_action_new (row_key_cb, NULL, NULL);

    g_object_set_data_full (G_OBJECT (row->box), "napkin-key", g_strdup (key), g_free);
    gtk_shortcut_controller_add_shortcut (GTK_SHORTCUT_CONTROLLER (keys),
                                          gtk_shortcut_new (gtk_alternative_trigger_new (
                                                              gtk_keyval_trigger_new (GDK_KEY_Return, 0),
                                                              gtk_keyval_trigger_new (GDK_KEY_space, 0)),
                                                            g_object_ref (action)));
    g_object_unref (action);
    gtk_widget_add_controller (row->box, keys);
    gtk_widget_set_focusable (row->box, TRUE);
  }
  g_signal_connect_data (row->box, "query-tooltip", G_CALLBACK (row_query_tooltip_cb), g_strdup (key),
                         (GClosureNotify) (void (*) (void)) g_free, 0);
  gtk_box_append (section, row->box);
  g_hash_table_insert (self->rows, row->key, row);
  return row;
}

/* One row: a name, a value, the formula as tooltip, and what a click selects. */
static Row *
set_row (NapkinAnalysisPane *self,
         GtkBox             *section,
         const char         *key,
         const char         *name,
         const char         *value,
         Tip                 tip,
         NapkinItemKind      kind,
         const char         *target)
{
  Row *row = ensure_row (self, section, key);

  /* unchanged text: no relayout */
  if (g_strcmp0 (gtk_label_get_text (row->name), name) != 0)
    gtk_label_set_text (row->name, name);
  if (g_strcmp0 (gtk_label_get_text (row->value), value) != 0)
    gtk_label_set_text (row->value, value);
  g_hash_table_replace (self->texts, g_strdup (key), g_strdup (value));
  row->tip = tip;
  if (tip.kind != TIP_NONE)
    g_hash_table_replace (self->tips, g_strdup (key), g_memdup2 (&tip, sizeof tip));
  else
    g_hash_table_remove (self->tips, key);
  row->kind = kind;
  if (g_strcmp0 (row->target, target) != 0)
    {
      g_free (row->target);
      row->target = g_strdup (target);
    }
  return row;
}

/* A number kept for tests and tooltips without a row of its own. */
static void
set_value (NapkinAnalysisPane *self,
           const char         *key,
           const char         *text,
           Tip                 tip)
{
  g_hash_table_replace (self->texts, g_strdup (key), g_strdup (text));
  if (tip.kind != TIP_NONE)
    g_hash_table_replace (self->tips, g_strdup (key), g_memdup2 (&tip, sizeof tip));
}

static void
clear_section (NapkinAnalysisPane *self,
               GtkBox             *section)
{
  GtkWidget *child;
  GHashTableIter iter;
  gpointer value;

  g_hash_table_iter_init (&iter, self->rows);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    if (gtk_widget_get_parent (((Row *) value)->box) == GTK_WIDGET (section))
      g_hash_table_iter_remove (&iter);
  while ((child = gtk_widget_get_first_child (GTK_WIDGET (section))) != NULL)
    gtk_box_remove (section, child);
}

/* ---------------------------------------------------------------- update */

static char *
bytes_text (gint64 bytes)
{
  g_autofree char *exact = napkin_format_int (bytes);
  g_autofree char *si = napkin_format_si ((double) bytes, "B");

  return bytes >= 1000 ? g_strdup_printf ("%s B (%s)", exact, si) : g_strdup_printf ("%s B", exact);
}

static void
show_summary (NapkinAnalysisPane *self,
              NapkinAnalysis     *a)
{
  g_autofree char *t = napkin_format_si (a->predicted_time_s, "s");
  g_autofree char *to = napkin_format_si (a->overlap_time_s, "s");
  g_autofree char *ts = napkin_format_si (a->serial_time_s, "s");
  g_autofree char *tp = napkin_format_si (a->throughput, "FLOP/s");
  g_autofree char *stp = napkin_format_si (a->serial_throughput, "FLOP/s");
  g_autofree char *fl = napkin_format_int (a->flops_total);
  g_autofree char *v = NULL;

  v = g_strdup_printf ("%s (%s)", t, napkin_resource_to_label (a->bound));
  set_row (self, self->summary_box, "time.predicted", _("Predicted time"), v, TIP (TIP_TOTAL, 0, 0),
           NAPKIN_ITEM_NODE, NULL);
  set_value (self, "time.predicted.value", t, TIP (TIP_TOTAL, 0, 0));
  set_row (self, self->summary_box, "time.serial", _("Time with no overlap"), ts, TIP (TIP_SERIAL, 0, 0),
           NAPKIN_ITEM_NODE, NULL);
  set_value (self, "time.overlap", to, TIP (TIP_OVERLAP, 0, 0));
  g_free (v);
  v = g_strdup_printf ("%s · %.1f %%", tp, napkin_analysis_percent_of_peak (a, FALSE));
  set_row (self, self->summary_box, "throughput.predicted", _("Throughput, share of peak"), v,
           TIP (TIP_THROUGHPUT, 0, 0),
           NAPKIN_ITEM_NODE, NULL);
  g_free (v);
  v = g_strdup_printf ("%s · %.1f %%", stp, napkin_analysis_percent_of_peak (a, TRUE));
  set_row (self, self->summary_box, "throughput.serial", _("No overlap, share of peak"), v,
           TIP (TIP_THROUGHPUT_SERIAL, 0, 0),
           NAPKIN_ITEM_NODE, NULL);
  g_free (v);
  v = g_strdup_printf (_("%.4g FLOP/B"), a->intensity);
  set_row (self, self->summary_box, "intensity", _("Arithmetic intensity"), v, TIP (TIP_INTENSITY, 0, 0),
           NAPKIN_ITEM_NODE, NULL);
  g_free (v);
  v = g_strdup_printf ("%s FLOP", fl);
  set_row (self, self->summary_box, "flops", _("Work"), v, NO_TIP, NAPKIN_ITEM_NODE, NULL);
  set_value (self, "bound", napkin_resource_to_label (a->bound), NO_TIP);
}

static void build_roofline (NapkinAnalysisPane *self);

/* Every number of the last document gone, for another one (docs/analysis-pane.md):
 * a new blank diagram shows its own reason for no numbers, not the last one's. */
static void
clear_numbers (NapkinAnalysisPane *self)
{
  clear_section (self, self->summary_box);
  clear_section (self, self->levels_box);
  clear_section (self, self->compute_box);
  clear_section (self, self->regions_box);
  clear_section (self, self->gpus_box);
  g_hash_table_remove_all (self->texts);
  g_hash_table_remove_all (self->tips);
  g_hash_table_remove_all (self->tip_texts);
  g_clear_pointer (&self->analysis, napkin_analysis_free);
  g_clear_pointer (&self->shard, napkin_shard_analysis_free);
  build_roofline (self);
  gtk_widget_queue_draw (GTK_WIDGET (self->roofline_area));
}

/* The Kernels section; fixes are searched for the document as it is, not for a
 * preview or the complete part of a diagram being drawn. */
static void
show_kernels (NapkinAnalysisPane *self,
              NapkinAnalysis     *a)
{
  NapkinHistory *history = self->canvas && self->preview == NULL && self->partial == NULL
                           ? napkin_canvas_get_history (self->canvas) : NULL;
  NapkinAnalyzeOptions options = { self->has_dtype, self->dtype, FALSE, FALSE };

  napkin_kernel_list_set_analysis (self->kernel_list, a, analysed (self), history, a->arch, &options);
}

static void
show_levels (NapkinAnalysisPane *self,
             NapkinAnalysis     *a)
{
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      const char *name = napkin_level_to_string (l);
      g_autofree char *key = g_strdup_printf ("levels.%s", name);
      g_autofree char *bytes = bytes_text (a->levels[l].transfer_bytes);
      g_autofree char *bw = napkin_format_si (a->arch->levels[l].bandwidth, "B/s");
      g_autofree char *time = napkin_format_si (a->levels[l].time_s, "s");
      double share = a->predicted_time_s > 0 ? 100.0 * a->levels[l].time_s / a->predicted_time_s : 0;
      g_autofree char *share_text = g_strdup_printf ("%.1f %%", share);
      g_autofree char *value = g_strdup_printf ("%s\n%s · %s · %s", bytes, bw, time, share_text);
      char *k;
      Row *row;

      row = set_row (self, self->levels_box, key, name, value, TIP (TIP_LEVEL, l, 0), NAPKIN_ITEM_NODE, NULL);
      gtk_widget_set_visible (row->box, a->levels[l].transfer_bytes > 0 || l == NAPKIN_LEVEL_HBM);
      k = g_strdup_printf ("levels.%s.bytes", name);
      set_value (self, k, bytes, TIP (TIP_LEVEL_BYTES, l, 0));
      g_free (k);
      k = g_strdup_printf ("levels.%s.bandwidth", name);
      set_value (self, k, bw, NO_TIP);
      g_free (k);
      k = g_strdup_printf ("levels.%s.time", name);
      set_value (self, k, time, TIP (TIP_LEVEL_TIME, l, 0));
      g_free (k);
      k = g_strdup_printf ("levels.%s.share", name);
      set_value (self, k, share_text, TIP (TIP_LEVEL, l, 0));
      g_free (k);
    }
}

static void
show_compute (NapkinAnalysisPane *self,
              NapkinAnalysis     *a)
{
  static const struct { NapkinResource res; const char *key; const char *name; } units[] = {
    { NAPKIN_RESOURCE_TENSOR, "compute.tensor", N_("Tensor cores") },
    { NAPKIN_RESOURCE_CUDA, "compute.cuda", N_("CUDA cores") },
    { NAPKIN_RESOURCE_SFU, "compute.sfu", N_("Special functions") },
  };

  for (guint i = 0; i < G_N_ELEMENTS (units); i++)
    {
      gint64 flops = units[i].res == NAPKIN_RESOURCE_TENSOR ? a->flops.tensor - a->fp32_contract_flops
                     : units[i].res == NAPKIN_RESOURCE_CUDA ? a->flops.cuda + a->fp32_contract_flops : a->flops.sfu;
      g_autofree char *f = napkin_format_int (flops);
      g_autofree char *t = napkin_format_si (a->resource_s[units[i].res], "s");
      g_autofree char *v = g_strdup_printf ("%s FLOP · %s", f, t);
      g_autofree char *k = g_strdup_printf ("%s.flops", units[i].key);

      set_row (self, self->compute_box, units[i].key, _(units[i].name), v, TIP (TIP_RESOURCE, units[i].res, 0),
               NAPKIN_ITEM_NODE, NULL);
      set_value (self, k, f, TIP (TIP_RESOURCE, units[i].res, 0));
    }
}

static char *
region_errors (NapkinAnalysis *a,
               guint           diagram_index)
{
  g_autofree char *prefix = g_strdup_printf ("regions[%u]", diagram_index);
  GString *s = g_string_new (NULL);

  for (guint i = 0; i < a->errors->len; i++)
    {
      const char *e = g_ptr_array_index (a->errors, i);

      if (g_str_has_prefix (e, prefix) && (e[strlen (prefix)] == ':' || e[strlen (prefix)] == '.'))
        g_string_append_printf (s, "%s%s", s->len ? "\n" : "", e);
    }
  return g_string_free (s, s->len == 0);
}

/* Past this many regions, each shows one summary row; the selected region and
 * infeasible ones show every row (hundreds of rows cost more to lay out than the
 * model costs to run). */
#define DETAILED_REGIONS 8

static gboolean
region_detailed (NapkinAnalysisPane     *self,
                 NapkinAnalysis         *a,
                 const NapkinRegionCost *c,
                 const char             *name)
{
  return a->regions->len <= DETAILED_REGIONS || !c->feasible || g_strcmp0 (name, self->detail_region) == 0;
}

static void
show_regions (NapkinAnalysisPane *self,
              NapkinAnalysis     *a)
{
  GString *signature = g_string_new (NULL);
  const char *selected = self->canvas ? napkin_canvas_get_selected_region (self->canvas) : NULL;

  g_free (self->detail_region);
  self->detail_region = g_strdup (selected);
  for (guint r = 0; r < a->regions->len; r++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, r);

      g_string_append_printf (signature, "%s/%u/%d/%u/%d;", c->name, c->transfers->len, c->feasible, c->level,
                              region_detailed (self, a, c, c->name));
    }
  /* Rows stay in place while the regions stay the same: only their text changes. */
  if (g_strcmp0 (signature->str, self->region_signature) != 0)
    {
      clear_section (self, self->regions_box);
      g_free (self->region_signature);
      self->region_signature = g_strdup (signature->str);
    }
  g_string_free (signature, TRUE);

  if (a->regions->len == 0)
    {
      set_row (self, self->regions_box, "regions.none", _("No regions"),
               _("every operation reads and writes device memory"), NO_TIP, NAPKIN_ITEM_NODE, NULL);
      return;
    }

  for (guint r = 0; r < a->regions->len; r++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, r);
      /* indices into the diagram analysed: the preview's while there is one */
      const NapkinRegion *region = napkin_diagram_region (priced (self), c->region);
      const char *name = region ? region->name : c->name;
      gboolean detailed = region_detailed (self, a, c, name);
      g_autofree char *key = g_strdup_printf ("regions.%s", name);
      g_autofree char *head = g_strdup_printf ("%s · %s", name, napkin_level_to_string (c->level));
      g_autofree char *inst = napkin_format_int (c->instances);
      g_autofree char *ch = napkin_format_int (c->chunks);
      g_autofree char *fb = napkin_format_int (napkin_region_block_bytes (a, r));
      g_autofree char *cap = napkin_format_int ((gint64) napkin_region_capacity (a, r));
      g_autofree char *per_sm = napkin_format_int (c->per_sm);
      g_autofree char *waves = napkin_format_int (c->waves);
      double cap_pct = 100.0 * napkin_region_block_bytes (a, r) / MAX (1.0, napkin_region_capacity (a, r));
      guint warps = MAX (1u, (c->threads + 31) / 32);
      char *k, *v;
      Row *row;

      if (detailed)
        v = g_strdup_printf (_("tile %s, %u stage(s)"), c->tile, c->stages);
      else
        v = g_strdup_printf (_("%s · %.0f %% · %s/SM · %s waves"), c->tile, cap_pct, per_sm, waves);
      row = set_row (self, self->regions_box, key, head, v,
                     TIP (detailed ? TIP_REGION_INSTANCES : TIP_REGION_SUMMARY, r, 0), NAPKIN_ITEM_REGION, name);
      g_free (v);
      gtk_widget_add_css_class (GTK_WIDGET (row->name), "heading");
      gtk_widget_remove_css_class (GTK_WIDGET (row->name), "dim-label");
      /* the region's name in full (up to a long one): the tile text beside it wraps instead */
      gtk_label_set_width_chars (row->name, MIN ((int) g_utf8_strlen (head, -1), 28));
      gtk_widget_set_tooltip_text (GTK_WIDGET (row->name), head);
      k = g_strconcat (key, ".tile", NULL);
      set_value (self, k, c->tile, NO_TIP);
      g_free (k);
      if (!detailed)
        continue;

      k = g_strconcat (key, ".instances", NULL);
      v = g_strdup_printf (_("%s × %s stream chunks"), inst, ch);
      set_row (self, self->regions_box, k, _("Instances"), v, TIP (TIP_REGION_INSTANCES, r, 0),
               NAPKIN_ITEM_REGION, name);
      g_free (k), g_free (v);

      k = g_strconcat (key, ".footprint", NULL);
      v = g_strdup_printf (_("%s B of %s B (%.0f %%)"), fb, cap, cap_pct);
      row = set_row (self, self->regions_box, k, _("Footprint / capacity"), v, TIP (TIP_REGION_FOOTPRINT, r, 0),
                     NAPKIN_ITEM_REGION, name);
      if (cap_pct > 100)
        gtk_widget_add_css_class (row->box, "error");
      else
        gtk_widget_remove_css_class (row->box, "error");
      g_free (k), g_free (v);

      k = g_strconcat (key, ".occupancy", NULL);
      {
        g_autofree char *warps_sm = napkin_format_int (c->per_sm * warps);

        if (c->level == NAPKIN_LEVEL_L2)
          v = g_strdup_printf (_("%s held in L2 at once"), per_sm);
        else
          v = g_strdup_printf (_("%s per SM, %s warps/SM (%s)"), per_sm, warps_sm,
                               c->binding_limit ? _(c->binding_limit) : "—");
      }
      set_row (self, self->regions_box, k, _("Occupancy"), v, TIP (TIP_REGION_OCCUPANCY, r, 0),
               NAPKIN_ITEM_REGION, name);
      g_free (k), g_free (v);

      k = g_strconcat (key, ".waves", NULL);
      v = g_strdup_printf ("%" G_GINT64_FORMAT, c->waves);
      set_row (self, self->regions_box, k, c->level == NAPKIN_LEVEL_L2 ? _("Rounds") : _("Waves"), v,
               TIP (TIP_REGION_WAVES, r, 0), NAPKIN_ITEM_REGION, name);
      g_free (k), g_free (v);

      if (!c->feasible)
        {
          g_autofree char *errors = region_errors (a, c->region);

          k = g_strconcat (key, ".error", NULL);
          row = set_row (self, self->regions_box, k, _("Infeasible"), errors ? errors : "",
                         TIP (TIP_REGION_ERROR, r, 0), NAPKIN_ITEM_REGION, name);
          gtk_widget_add_css_class (row->box, "error");
          g_free (k);
        }

      for (guint t = 0; t < c->transfers->len; t++)
        {
          const NapkinTransfer *tr = &g_array_index (c->transfers, NapkinTransfer, t);
          NapkinDiagram *shown = priced (self);
          const NapkinNode *node = tr->node < napkin_diagram_n_nodes (shown)
                                   ? napkin_diagram_node (shown, tr->node) : NULL;
          g_autofree char *label = g_strdup_printf ("  %s %s %s", tr->is_output ? "→" : "←", tr->tensor,
                                                    napkin_level_to_string (tr->from));
          g_autofree char *bytes = bytes_text (tr->bytes);

          k = g_strdup_printf ("%s.transfers.%u", key, t);
          set_row (self, self->regions_box, k, label, bytes, TIP (TIP_TRANSFER, r, t), NAPKIN_ITEM_NODE,
                   node ? node->id : NULL);
          g_free (k);
        }
    }
}

/* The model's region errors as problems tied to regions, for the canvas's red marks;
 * regions of `analysed` (the complete part of the document) mapped to the document's. */
static GPtrArray *
region_problems (NapkinAnalysis *a,
                 NapkinDiagram  *analysed,
                 NapkinDiagram  *document)
{
  GPtrArray *problems = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_problem_free);

  for (guint i = 0; a != NULL && i < a->errors->len; i++)
    {
      const char *e = g_ptr_array_index (a->errors, i);
      int region = g_array_index (a->error_regions, int, i);
      guint index;
      NapkinProblem *p;

      if (region < 0)
        continue;
      index = (guint) region;
      if (analysed != document && analysed != NULL && document != NULL)
        {
          int r = index < napkin_diagram_n_regions (analysed)
                  ? napkin_diagram_find_region (document, napkin_diagram_region (analysed, index)->name) : -1;

          if (r < 0)
            continue;
          index = r;
        }
      p = g_new0 (NapkinProblem, 1);
      p->kind = NAPKIN_ITEM_REGION;
      p->index = index;
      p->path = g_strdup_printf ("regions[%u]", index);
      p->message = g_strdup (e);
      g_ptr_array_add (problems, p);
    }
  return problems;
}

static NapkinArch *
current_arch (NapkinAnalysisPane *self)
{
  if (self->arch == NULL)
    {
      NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
      NapkinArch *arch = napkin_arch_registry_lookup (registry, "h100", NULL);

      if (arch == NULL && napkin_arch_registry_count (registry) > 0)
        arch = napkin_arch_registry_get (registry, 0);
      if (arch != NULL)
        self->arch = napkin_arch_ref (arch);
    }
  return self->arch;
}

/* "NVIDIA GeForce RTX 4090" → "NVIDIAGEFORCERTX4090", to match architecture ids. */
static char *
squash (const char *text)
{
  GString *s = g_string_new (NULL);

  for (const char *p = text; p && *p; p++)
    if (g_ascii_isalnum (*p))
      g_string_append_c (s, g_ascii_toupper (*p));
  return g_string_free (s, FALSE);
}

/* A run (the runner's JSON kept in the document) measured on this architecture:
 * its GPU's name carries the profile's id ("h100", "h100-measured", …). */
static gboolean
run_on_arch (const NapkinRunResult *run,
             const NapkinArch      *arch)
{
  g_autofree char *id = NULL, *gpu_name = NULL;
  char *dash;

  if (run->gpu_name == NULL)
    return FALSE;
  id = g_strdup (arch->id);
  if ((dash = strchr (id, '-')) != NULL)
    *dash = '\0';
  {
    g_autofree char *want = squash (id);

    gpu_name = squash (run->gpu_name);
    return *want != '\0' && strstr (gpu_name, want) != NULL;
  }
}

/* Seconds and FLOP/s of a successful run; FALSE for failed ones. */
static gboolean
run_numbers (const NapkinRunResult *run,
             double                *seconds,
             double                *rate,
             double                *intensity)
{
  double bytes = isnan (run->ir_hbm_bytes) ? run->io_bytes : run->ir_hbm_bytes;

  if (isnan (run->time_median_ms) || isnan (run->flops) || run->time_median_ms <= 0)
    return FALSE;
  *seconds = run->time_median_ms / 1e3;
  *rate = run->flops / *seconds;
  *intensity = !isnan (bytes) && bytes > 0 ? run->flops / bytes : 0;
  return TRUE;
}

/* The document's run `index` on `arch` with its numbers; FALSE for runs on other GPUs,
 * failed runs and records that cannot be read. */
static gboolean
measured_run (NapkinDiagram    *diagram,
              guint             index,
              const NapkinArch *arch,
              double           *seconds,
              double           *rate,
              double           *intensity)
{
  json_object *runs = napkin_diagram_get_runs (diagram);
  g_autoptr(NapkinRunResult) run = napkin_run_result_new_from_json (json_object_array_get_idx (runs, index), NULL);

  return run != NULL && run_on_arch (run, arch) && run_numbers (run, seconds, rate, intensity);
}

static void
build_roofline (NapkinAnalysisPane *self)
{
  NapkinAnalysis *a = self->analysis;
  g_autofree char *title = NULL, *peak = NULL, *peak_label = NULL;
  double peak_rate;

  g_clear_pointer (&self->roofline, napkin_plot_free);
  if (a == NULL)
    return;
  title = g_strdup_printf (_("Roofline · %s%s%s"), a->arch->name ? a->arch->name : a->arch->id,
                           a->has_dtype ? " · " : "", a->has_dtype ? napkin_dtype_to_string (a->dtype) : "");
  self->roofline = napkin_plot_new (NAPKIN_PLOT_ROOFLINE, title);
  peak_rate = a->tensor_throughput > 0 ? a->tensor_throughput : napkin_arch_cuda_rate (a->arch, NAPKIN_DTYPE_FP32);
  peak = napkin_format_si (peak_rate, "FLOP/s");
  peak_label = g_strdup_printf (_("peak %s"), peak);
  napkin_plot_set_peak (self->roofline, peak_rate, peak_label);
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      g_autofree char *bw = napkin_format_si (a->arch->levels[l].bandwidth, "B/s");
      g_autofree char *label = g_strdup_printf ("%s %s", napkin_level_to_string (l), bw);

      if (a->arch->levels[l].bandwidth > 0 && l != NAPKIN_LEVEL_REGISTERS)
        napkin_plot_add_ceiling (self->roofline, l, a->arch->levels[l].bandwidth, label);
      if (a->levels[l].transfer_bytes > 0 && a->throughput > 0)
        {
          g_autofree char *rate = napkin_format_si_digits (a->throughput, "FLOP/s", 3);
          /* the kernel's own point (its device-memory traffic) says what it is */
          g_autofree char *label = l == NAPKIN_LEVEL_HBM ? g_strdup_printf (_("this kernel, %s"), rate)
                                                         : g_strdup (napkin_level_to_string (l));

          napkin_plot_add_point (self->roofline, l, (double) a->flops_total / a->levels[l].transfer_bytes,
                                 a->throughput, label, FALSE);
        }
    }

  /* measured points (hollow) from the runs kept in the document, on this GPU */
  if (self->diagram != NULL)
    {
      json_object *runs = napkin_diagram_get_runs (self->diagram);
      guint n = runs ? json_object_array_length (runs) : 0;
      guint shown = 0;

      for (guint i = n; i-- > 0 && shown < 5;)
        {
          double seconds, rate, intensity;

          if (measured_run (self->diagram, i, a->arch, &seconds, &rate, &intensity) && intensity > 0)
            {
              napkin_plot_add_point (self->roofline, NAPKIN_LEVEL_HBM, intensity, rate,
                                     shown == 0 ? _("measured") : NULL, TRUE);
              shown++;
            }
        }
    }
}

/* Every architecture × element type: 36 analyses and more. Pure, so that it runs
 * in a thread on a private copy of the diagram and its own list of profiles; it
 * reads no json-c object (their reference counts are not atomic). */
static NapkinPlot *
compute_bars (NapkinDiagram *diagram,
              GPtrArray     *arches)
{
  NapkinPlot *plot = napkin_plot_new (NAPKIN_PLOT_BARS, _("Predicted time by architecture and element type"));

  for (guint i = 0; diagram != NULL && i < arches->len; i++)
    {
      NapkinArch *arch = g_ptr_array_index (arches, i);

      for (guint d = 0; d < G_N_ELEMENTS (compared_dtypes); d++)
        {
          NapkinAnalyzeOptions options = { TRUE, compared_dtypes[d], TRUE, FALSE };
          g_autoptr(NapkinAnalysis) a = napkin_analyze (diagram, arch, &options, NULL);

          if (a != NULL)
            napkin_plot_add_bar (plot, arch->id, napkin_dtype_to_string (compared_dtypes[d]),
                                 a->predicted_time_s, FALSE, !a->feasible);
          /* where the GPU's best tensor-core path is not the code Napkin generates (tcgen05
           * on Blackwell), that path's time as a marker on the same bar (docs/model.md,
           * "Best path") */
          if (a != NULL && !a->best_generated && a->best_time_s > 0)
            napkin_plot_set_best (plot, arch->id, napkin_dtype_to_string (compared_dtypes[d]), a->best_time_s,
                                  a->best_path);
        }
    }
  return plot;
}

/* On the main thread: the latest run on each GPU, hatched beside the predictions. */
static void
add_measured_bars (NapkinPlot    *plot,
                   NapkinDiagram *diagram,
                   GPtrArray     *arches)
{
  json_object *runs = diagram ? napkin_diagram_get_runs (diagram) : NULL;

  for (guint i = 0; runs != NULL && i < arches->len; i++)
    {
      NapkinArch *arch = g_ptr_array_index (arches, i);

      for (guint r = json_object_array_length (runs); r-- > 0;)
        {
          double seconds, rate, intensity;

          if (measured_run (diagram, r, arch, &seconds, &rate, &intensity))
            {
              napkin_plot_add_bar (plot, arch->id, _("measured"), seconds, TRUE, FALSE);
              break;
            }
        }
    }
}

/* Tall enough for a readable bar per architecture and element type. */
static void
size_bars (NapkinAnalysisPane *self)
{
  int width = gtk_widget_get_width (GTK_WIDGET (self->bars_area));

  if (self->bars != NULL)
    gtk_drawing_area_set_content_height (self->bars_area,
                                         (int) napkin_plot_natural_height (self->bars, width > 50 ? width : 380));
}

typedef struct
{
  NapkinDiagram *diagram;   /* a copy: the editor keeps editing the original */
  GPtrArray     *arches;
  guint          serial;
} BarsInput;

static void
bars_input_free (gpointer data)
{
  BarsInput *in = data;

  g_clear_object (&in->diagram);
  g_ptr_array_unref (in->arches);
  g_free (in);
}

static GPtrArray *
registry_arches (void)
{
  NapkinArchRegistry *registry = napkin_arch_registry_get_default ();
  GPtrArray *arches = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_arch_unref);

  for (guint i = 0; i < napkin_arch_registry_count (registry); i++)
    g_ptr_array_add (arches, napkin_arch_ref (napkin_arch_registry_get (registry, i)));
  return arches;
}

static void
bars_thread (GTask        *task,
             gpointer      source_object,
             gpointer      task_data,
             GCancellable *cancellable)
{
  BarsInput *in = task_data;

  g_task_return_pointer (task, compute_bars (in->diagram, in->arches), (GDestroyNotify) napkin_plot_free);
}

static void
bars_done_cb (GObject      *source,
              GAsyncResult *result,
              gpointer      user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (source);
  BarsInput *in = g_task_get_task_data (G_TASK (result));
  NapkinPlot *plot = g_task_propagate_pointer (G_TASK (result), NULL);

  /* the copy shares json-c objects with the original: release it here, on the
   * main thread, not wherever the task happens to be finalized */
  g_clear_object (&in->diagram);

  self->bars_running--;
  /* cancelled (disposed), or the diagram changed since: a newer one is coming */
  if (plot == NULL)
    return;
  if (in->serial != self->bars_serial)
    {
      napkin_plot_free (plot);
      return;
    }
  add_measured_bars (plot, self->diagram, in->arches);
  g_clear_pointer (&self->bars, napkin_plot_free);
  self->bars = plot;
  size_bars (self);
  gtk_widget_queue_draw (GTK_WIDGET (self->bars_area));
}

/* Now, on this thread (exports, tests). */
static void
build_bars_now (NapkinAnalysisPane *self)
{
  g_autoptr(GPtrArray) arches = registry_arches ();

  g_clear_handle_id (&self->bars_id, g_source_remove);
  self->bars_serial++;   /* a pending thread's result is older */
  g_clear_pointer (&self->bars, napkin_plot_free);
  self->bars = compute_bars (self->analysis ? (self->partial ? self->partial : self->diagram) : NULL, arches);
  if (self->analysis != NULL)
    add_measured_bars (self->bars, self->diagram, arches);
  size_bars (self);
  gtk_widget_queue_draw (GTK_WIDGET (self->bars_area));
}

/* After a pause in editing, in a thread: never in the way of typing or dragging. */
static gboolean
build_bars_cb (gpointer user_data)
{
  NapkinAnalysisPane *self = user_data;
  g_autoptr(GTask) task = NULL;
  BarsInput *in;

  self->bars_id = 0;
  if (self->diagram == NULL || self->analysis == NULL)
    {
      build_bars_now (self);
      return G_SOURCE_REMOVE;
    }
  if (self->bars_cancellable != NULL)
    g_cancellable_cancel (self->bars_cancellable);
  g_clear_object (&self->bars_cancellable);
  self->bars_cancellable = g_cancellable_new ();
  in = g_new0 (BarsInput, 1);
  in->diagram = napkin_diagram_copy (self->partial ? self->partial : self->diagram);
  in->arches = registry_arches ();
  in->serial = ++self->bars_serial;
  task = g_task_new (self, self->bars_cancellable, bars_done_cb, NULL);
  g_task_set_task_data (task, in, bars_input_free);
  self->bars_running++;
  g_task_run_in_thread (task, bars_thread);
  return G_SOURCE_REMOVE;
}

/* ---- several GPUs (docs/multi-gpu.md) -------------------------------------------- */

static const guint gpu_counts[] = { 2, 4, 8 };

/* The count analysed: the pane's choice, else the region's, else two. */
static guint
gpus_shown (NapkinAnalysisPane *self,
            const NapkinGpusRegion *gpus)
{
  return self->gpus ? self->gpus : gpus->gpus ? gpus->gpus : 2;
}

static void
show_gpus (NapkinAnalysisPane *self)
{
  NapkinDiagram *d = analysed (self);
  const NapkinGpusRegion *gpus = d ? napkin_diagram_get_gpus (d) : NULL;
  NapkinShardAnalysis *sa = self->shard;
  guint n, position = GTK_INVALID_LIST_POSITION;
  guint start = 0;
  g_autofree char *v = NULL;

  gtk_widget_set_visible (self->gpus_section, gpus != NULL);
  if (gpus == NULL)
    {
      clear_section (self, self->gpus_box);
      return;
    }
  n = gpus_shown (self, gpus);
  for (guint i = 0; i < G_N_ELEMENTS (gpu_counts); i++)
    if (gpu_counts[i] == n)
      position = i;
  self->setting_gpus = TRUE;
  gtk_drop_down_set_selected (self->gpus_dropdown, position);
  self->setting_gpus = FALSE;

  gtk_label_set_text (self->gpus_error_label, self->shard_error ? self->shard_error : "");
  gtk_widget_set_visible (GTK_WIDGET (self->gpus_error_label), self->shard_error != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->gpus_box), sa != NULL);
  if (sa == NULL)
    return;

  /* rows are rebuilt: the kernels and collectives change with the count and the drawing */
  clear_section (self, self->gpus_box);
  {
    GHashTableIter iter;
    gpointer key;

    g_hash_table_iter_init (&iter, self->texts);
    while (g_hash_table_iter_next (&iter, &key, NULL))
      if (g_str_has_prefix (key, "gpus."))
        g_hash_table_iter_remove (&iter);
  }
  v = g_strdup_printf (_("%s = %" G_GINT64_FORMAT " split, %" G_GINT64_FORMAT " per GPU"),
                       sa->shard->axis, sa->shard->axis_size, sa->shard->axis_size / MAX (sa->shard->gpus, 1u));
  set_row (self, self->gpus_box, "gpus.split", _("Parallel axis"), v, NO_TIP, NAPKIN_ITEM_NODE, NULL);
  g_free (v);
  v = g_strdup_printf ("%u", sa->shard->gpus);
  set_value (self, "gpus.count", v, NO_TIP);

  /* one GPU's program, in run order: its kernels, the collectives between them */
  for (guint c = 0; c <= sa->shard->collectives->len; c++)
    {
      const NapkinCollective *col = c < sa->shard->collectives->len ? g_ptr_array_index (sa->shard->collectives, c) : NULL;
      guint end = col ? MIN (col->before_kernel, sa->analysis->kernels->len) : sa->analysis->kernels->len;

      for (guint k = start; k < end; k++)
        {
          const NapkinKernelCost *kc = &g_array_index (sa->analysis->kernels, NapkinKernelCost, k);
          g_autofree char *key = g_strdup_printf ("gpus.kernel.%u", k);
          g_autofree char *name = g_strdup_printf (_("Kernel %u · %s"), k + 1, kc->name);
          g_autofree char *t = napkin_format_si (kc->time_s_predicted, "s");

          set_row (self, self->gpus_box, key, name, t, NO_TIP, NAPKIN_ITEM_NODE, NULL);
        }
      start = MAX (start, end);
      if (col != NULL)
        {
          g_autofree char *key = g_strdup_printf ("gpus.collective.%u", c);
          g_autofree char *name = g_strdup_printf ("%s · %s", napkin_collective_to_string (col->kind), col->tensor);
          g_autofree char *bytes = bytes_text (col->bytes);
          g_autofree char *t = col->seconds >= 0 ? napkin_format_si (col->seconds, "s") : g_strdup (_("no interconnect"));
          g_autofree char *bw = napkin_format_si (col->bus_bandwidth, "B/s");
          g_autofree char *value = g_strdup_printf (_("%s per rank\n%s at %s bus"), bytes, t, bw);
          char *k;

          set_row (self, self->gpus_box, key, name, value, NO_TIP, NAPKIN_ITEM_NODE, NULL);
          k = g_strdup_printf ("%s.kind", key);
          set_value (self, k, napkin_collective_to_string (col->kind), NO_TIP);
          g_free (k);
          k = g_strdup_printf ("%s.bytes", key);
          set_value (self, k, bytes, NO_TIP);
          g_free (k);
          k = g_strdup_printf ("%s.time", key);
          set_value (self, k, t, NO_TIP);
          g_free (k);
          k = g_strdup_printf ("%s.bus", key);
          set_value (self, k, bw, NO_TIP);
          g_free (k);
        }
    }
  if (sa->shard->collectives->len == 0)
    set_row (self, self->gpus_box, "gpus.none", _("Collectives"), _("none: every GPU works on its own slice"),
             NO_TIP, NAPKIN_ITEM_NODE, NULL);

  {
    static const struct { const char *key; const char *name; gsize offset; } totals[] = {
      { "gpus.compute", N_("Compute (one GPU)"), G_STRUCT_OFFSET (NapkinShardAnalysis, compute_s) },
      { "gpus.collectives", N_("Collectives"), G_STRUCT_OFFSET (NapkinShardAnalysis, comm_s) },
      { "gpus.total", N_("Total, one after the other"), G_STRUCT_OFFSET (NapkinShardAnalysis, total_s) },
      { "gpus.overlapped", N_("Total with overlap"), G_STRUCT_OFFSET (NapkinShardAnalysis, overlapped_s) },
      { "gpus.gain", N_("Gain of overlap"), G_STRUCT_OFFSET (NapkinShardAnalysis, gain_s) },
    };

    for (guint i = 0; i < G_N_ELEMENTS (totals); i++)
      {
        double seconds = G_STRUCT_MEMBER (double, sa, totals[i].offset);
        g_autofree char *t = napkin_format_si (seconds, "s");

        set_row (self, self->gpus_box, totals[i].key, _(totals[i].name), t, NO_TIP, NAPKIN_ITEM_NODE, NULL);
      }
  }
}

static void schedule_update (NapkinAnalysisPane *self);

static void
gpus_selected_cb (NapkinAnalysisPane *self)
{
  guint position = gtk_drop_down_get_selected (self->gpus_dropdown);

  if (self->setting_gpus || position >= G_N_ELEMENTS (gpu_counts))
    return;
  if (self->gpus == gpu_counts[position])
    return;
  self->gpus = gpu_counts[position];
  schedule_update (self);
}

/* What one analysis gives: the numbers, or the reason there are none; for a
 * diagram being drawn, the numbers of its complete part and what that part leaves out. */
typedef struct
{
  NapkinAnalysis *analysis;
  char           *error_text;
  NapkinDiagram  *partial;
  GStrv           left_out;
  NapkinShardAnalysis *shard;        /* with a gpus region: one GPU's share and the collectives */
  char           *shard_error;
} Outcome;

static void
outcome_clear (Outcome *out)
{
  g_clear_pointer (&out->shard, napkin_shard_analysis_free);
  g_clear_pointer (&out->shard_error, g_free);
  g_clear_pointer (&out->analysis, napkin_analysis_free);
  g_clear_pointer (&out->error_text, g_free);
  g_clear_object (&out->partial);
  g_clear_pointer (&out->left_out, g_strfreev);
}

/* Prices the complete part of an invalid document (napkin_diagram_copy_valid_part)
 * and says what is left out; nothing when no operation is complete yet. */
static void
analyze_partial (NapkinDiagram              *diagram,
                 NapkinArch                 *arch,
                 const NapkinAnalyzeOptions *options,
                 const char                 *why,
                 Outcome                    *out)
{
  g_autoptr(NapkinDiagram) part = NULL;
  g_auto(GStrv) nodes = NULL;
  g_auto(GStrv) regions = NULL;
  g_autofree char *words = napkin_error_summary (why);
  g_autofree char *list = NULL;
  guint computing = 0;

  part = napkin_diagram_copy_valid_part (diagram, &nodes, &regions);
  /* a relabeling that is wrong is not an incomplete drawing: its error stands, over
   * the last numbers (pricing without the region would show other numbers) */
  if (part == NULL || (regions != NULL && regions[0] != NULL))
    return;
  for (guint n = 0; n < napkin_diagram_n_nodes (part); n++)
    computing += napkin_diagram_node (part, n)->kind != NAPKIN_OP_INPUT;
  if (computing == 0)
    return;
  out->analysis = napkin_analyze (part, arch, options, NULL);
  if (out->analysis == NULL)
    return;
  list = g_strjoinv (", ", nodes);
  out->error_text = g_strdup_printf (_("Partial prediction: %u of %u operations priced. Not priced yet: %s. Why: %s"),
                                     napkin_diagram_n_nodes (part), napkin_diagram_n_nodes (diagram),
                                     list, words);
  out->partial = g_steal_pointer (&part);
  out->left_out = g_steal_pointer (&nodes);
}

/* $NAPKIN_ANALYSIS_DELAY_MS makes every analysis that slow, for the tests of the
 * thread (the model itself is linear and fast). */
static void
delay_for_tests (void)
{
  const char *delay = g_getenv ("NAPKIN_ANALYSIS_DELAY_MS");

  if (delay != NULL)
    g_usleep (1000 * (gulong) g_ascii_strtoull (delay, NULL, 10));
}

/* One analysis, on any thread: it touches nothing of the pane. A preview is never
 * priced in part (its errors are the preview's). */
static void
analyze_diagram (NapkinDiagram              *diagram,
                 gboolean                    preview,
                 NapkinArch                 *arch,
                 const NapkinAnalyzeOptions *options,
                 guint                       gpus,
                 Outcome                    *out)
{
  g_autoptr(GError) error = NULL;

  delay_for_tests ();
  /* several GPUs: the pane's count, else the region's, else two */
  if (napkin_diagram_get_gpus (diagram) != NULL)
    {
      g_autoptr(GError) shard_error = NULL;
      guint n = gpus ? gpus : napkin_diagram_get_gpus (diagram)->gpus ? napkin_diagram_get_gpus (diagram)->gpus : 2;

      out->shard = napkin_shard_analyze (diagram, arch, n, options, &shard_error);
      if (out->shard == NULL)
        {
          g_autofree char *words = napkin_error_summary (shard_error->message);
          g_autofree char *json_path = napkin_error_path (shard_error->message);

          out->shard_error = json_path ? g_strdup_printf (_("%s\nJSON path: %s"), words, json_path)
                                       : g_steal_pointer (&words);
        }
    }
  out->analysis = napkin_analyze (diagram, arch, options, &error);
  /* a diagram being drawn: the complete part priced, the rest marked */
  if (out->analysis == NULL && !preview
      && g_error_matches (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID))
    analyze_partial (diagram, arch, options, error->message, out);
  if (out->analysis == NULL)
    {
      g_autofree char *words = napkin_error_summary (error->message);
      g_autofree char *json_path = napkin_error_path (error->message);

      /* the words first, the JSON path on a details line of its own */
      out->error_text = json_path ? g_strdup_printf (_("%s\nJSON path: %s"), words, json_path)
                                  : g_steal_pointer (&words);
    }
}

/* Shows an outcome, taking it over. */
static void
show_analysis (NapkinAnalysisPane *self,
               Outcome            *out)
{
  g_autoptr(GPtrArray) problems = NULL;

  self->n_updates++;
  g_hash_table_remove_all (self->tip_texts);
  g_clear_pointer (&self->analysis, napkin_analysis_free);
  g_clear_pointer (&self->error_text, g_free);
  g_clear_object (&self->partial);
  g_clear_pointer (&self->left_out, g_strfreev);
  g_clear_pointer (&self->shard, napkin_shard_analysis_free);
  g_clear_pointer (&self->shard_error, g_free);
  self->shard = g_steal_pointer (&out->shard);
  self->shard_error = g_steal_pointer (&out->shard_error);
  self->analysis = g_steal_pointer (&out->analysis);
  self->error_text = g_steal_pointer (&out->error_text);
  self->partial = g_steal_pointer (&out->partial);
  self->left_out = g_steal_pointer (&out->left_out);
  if (self->analysis != NULL && !self->analysis->feasible)
    {
      GString *s = g_string_new (self->error_text);

      g_string_append_printf (s, "%s%s", s->len ? "\n" : "", _("Infeasible on this architecture:"));
      for (guint i = 0; i < self->analysis->errors->len; i++)
        g_string_append_printf (s, "\n%s", (const char *) g_ptr_array_index (self->analysis->errors, i));
      g_free (self->error_text);
      self->error_text = g_string_free (s, FALSE);
    }

  gtk_label_set_text (self->error_label, self->error_text ? self->error_text : "");
  gtk_widget_set_visible (GTK_WIDGET (self->error_label), self->error_text != NULL);
  /* an invalid diagram keeps its last numbers, dimmed, until it is valid again */
  gtk_widget_set_sensitive (GTK_WIDGET (self->summary_box), self->analysis != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->kernel_list), self->analysis != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->levels_box), self->analysis != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->compute_box), self->analysis != NULL);
  gtk_widget_set_sensitive (GTK_WIDGET (self->regions_box), self->analysis != NULL);

  if (self->analysis != NULL)
    {
      show_summary (self, self->analysis);
      show_kernels (self, self->analysis);
      show_levels (self, self->analysis);
      show_compute (self, self->analysis);
      show_regions (self, self->analysis);
    }
  show_gpus (self);
  problems = region_problems (self->analysis, priced (self), self->diagram);
  for (guint i = 0; self->left_out != NULL && self->left_out[i] != NULL; i++)
    {
      NapkinProblem *p = g_new0 (NapkinProblem, 1);
      int n = napkin_diagram_find_node (self->diagram, self->left_out[i]);

      if (n < 0)
        {
          g_free (p);
          continue;
        }
      p->kind = NAPKIN_ITEM_NODE;
      p->index = n;
      p->path = g_strdup_printf ("nodes[%d]", n);
      p->message = g_strdup (_("Not in the prediction yet: this operation, or one that feeds it, is incomplete"));
      g_ptr_array_add (problems, p);
    }
  /* a preview's region indices are not the document's the canvas draws */
  if (self->canvas != NULL && self->preview == NULL)
    napkin_canvas_set_analysis_problems (self->canvas, problems);

  build_roofline (self);
  gtk_widget_queue_draw (GTK_WIDGET (self->roofline_area));
  g_clear_handle_id (&self->bars_id, g_source_remove);
  self->bars_serial++;   /* a comparison still computing is of the previous diagram */
  if (gtk_expander_get_expanded (self->plots_expander))
    self->bars_id = g_timeout_add_full (G_PRIORITY_LOW, 250, build_bars_cb, self, NULL);
  update_selection (self);
}

/* What to analyse now, or FALSE with the reason to show instead. */
static gboolean
analysis_input (NapkinAnalysisPane  *self,
                NapkinDiagram      **diagram,
                NapkinArch         **arch,
                char               **error_text)
{
  *arch = current_arch (self);
  *diagram = self->preview ? self->preview : self->diagram;
  if (*diagram != NULL && *arch != NULL)
    return TRUE;
  *error_text = g_strdup (*arch == NULL ? _("No architecture profiles were found") : _("No diagram"));
  return FALSE;
}

/* Now, on this thread (flush: exports, tests); a result still computing is older. */
static void
update_now (NapkinAnalysisPane *self)
{
  NapkinAnalyzeOptions options = { self->has_dtype, self->dtype, FALSE, FALSE };
  Outcome out = { 0 };
  NapkinDiagram *diagram;
  NapkinArch *arch;

  self->dirty = FALSE;
  self->analysis_serial++;
  if (analysis_input (self, &diagram, &arch, &out.error_text))
    analyze_diagram (diagram, self->preview != NULL, arch, &options, self->gpus, &out);
  show_analysis (self, &out);
}

typedef struct
{
  NapkinDiagram        *diagram;   /* a copy without extras: the editor keeps editing the original */
  NapkinArch           *arch;
  NapkinAnalyzeOptions  options;
  gboolean              preview;
  guint                 gpus;
  guint                 serial;
  Outcome               out;
} AnalysisJob;

static void
analysis_job_free (gpointer data)
{
  AnalysisJob *job = data;

  g_clear_object (&job->diagram);
  g_clear_pointer (&job->arch, napkin_arch_unref);
  outcome_clear (&job->out);
  g_free (job);
}

static void
analysis_thread (GTask        *task,
                 gpointer      source_object,
                 gpointer      task_data,
                 GCancellable *cancellable)
{
  AnalysisJob *job = task_data;

  analyze_diagram (job->diagram, job->preview, job->arch, &job->options, job->gpus, &job->out);
  /* It shares nothing with the document: freed here, off the main thread. */
  g_clear_object (&job->diagram);
  g_task_return_boolean (task, TRUE);
}

static void start_analysis (NapkinAnalysisPane *self);

static void
analysis_done_cb (GObject      *source,
                  GAsyncResult *result,
                  gpointer      user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (source);
  AnalysisJob *job = g_task_get_task_data (G_TASK (result));

  self->analysis_running = FALSE;
  if (g_task_had_error (G_TASK (result)) || g_cancellable_is_cancelled (self->analysis_cancellable))
    return;   /* disposed */
  /* Shown only if nothing changed since it started; else the next one is started. */
  if (job->serial == self->analysis_serial)
    show_analysis (self, &job->out);
  else if (self->dirty)
    start_analysis (self);
}

/* The editing path: the model runs in a thread on a copy of the diagram, one at a
 * time, and only the result for the latest state is shown. A diagram of 100 000
 * operations takes a good part of a second to analyse, which froze the editor when
 * it ran here, on every change. */
static void
start_analysis (NapkinAnalysisPane *self)
{
  g_autoptr(GTask) task = NULL;
  AnalysisJob *job;
  NapkinDiagram *diagram;
  NapkinArch *arch;
  Outcome out = { 0 };

  if (self->analysis_running)
    return;   /* its end starts the next one */
  self->dirty = FALSE;
  if (!analysis_input (self, &diagram, &arch, &out.error_text))
    {
      self->analysis_serial++;
      show_analysis (self, &out);
      return;
    }

  job = g_new0 (AnalysisJob, 1);
  job->diagram = napkin_diagram_copy_without_extras (diagram);
  job->arch = napkin_arch_ref (arch);
  job->options = (NapkinAnalyzeOptions) { self->has_dtype, self->dtype, FALSE, FALSE };
  job->preview = self->preview != NULL;
  job->gpus = self->gpus;
  job->serial = self->analysis_serial;
  if (self->analysis_cancellable == NULL)
    self->analysis_cancellable = g_cancellable_new ();
  task = g_task_new (self, self->analysis_cancellable, analysis_done_cb, NULL);
  g_task_set_task_data (task, job, analysis_job_free);
  g_task_set_return_on_cancel (task, FALSE);
  self->analysis_running = TRUE;
  g_task_run_in_thread (task, analysis_thread);
}

static gboolean
tick_cb (GtkWidget     *widget,
         GdkFrameClock *clock,
         gpointer       user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (widget);

  self->tick_id = 0;
  if (self->dirty)
    start_analysis (self);
  return G_SOURCE_REMOVE;
}

/* Many edits within one frame (a drag, typing) cost one analysis. */
static void
schedule_update (NapkinAnalysisPane *self)
{
  self->dirty = TRUE;
  self->analysis_serial++;   /* a result computing now is of an older state */
  if (self->tick_id == 0 && gtk_widget_get_mapped (GTK_WIDGET (self)))
    self->tick_id = gtk_widget_add_tick_callback (GTK_WIDGET (self), tick_cb, NULL, NULL);
}

static void
diagram_changed_cb (NapkinAnalysisPane *self,
                    NapkinDiagram      *diagram)
{
  schedule_update (self);
}

/* ---------------------------------------------------------------- selection */

static void
set_highlight (Row      *row,
               gboolean  on)
{
  row->highlighted = on;
  if (on)
    gtk_widget_add_css_class (row->box, "napkin-analysis-highlight");
  else
    gtk_widget_remove_css_class (row->box, "napkin-analysis-highlight");
}

static void
update_selection (NapkinAnalysisPane *self)
{
  const char *region = self->canvas ? napkin_canvas_get_selected_region (self->canvas) : NULL;
  g_auto(GStrv) nodes = self->canvas ? napkin_canvas_dup_selected_nodes (self->canvas) : NULL;
  const char *wire_to = NULL;
  guint port = 0;
  const char *wire_source = NULL;
  GHashTableIter iter;
  gpointer value;

  /* a wire is its source's result: the transfers that move it */
  if (self->canvas && self->diagram && napkin_canvas_get_selected_wire (self->canvas, &wire_to, &port))
    {
      int to = napkin_diagram_find_node (self->diagram, wire_to);
      int from = to >= 0 ? napkin_diagram_input_source (self->diagram, to, port) : -1;

      if (from >= 0)
        wire_source = napkin_diagram_node (self->diagram, from)->id;
    }

  if (self->analysis && self->analysis->regions->len > DETAILED_REGIONS
      && g_strcmp0 (region, self->detail_region) != 0)
    schedule_update (self);   /* the newly selected region's details */

  g_hash_table_iter_init (&iter, self->rows);
  while (g_hash_table_iter_next (&iter, NULL, &value))
    {
      Row *row = value;
      gboolean on = FALSE;

      if (row->target != NULL)
        {
          if (row->kind == NAPKIN_ITEM_REGION)
            on = g_strcmp0 (row->target, region) == 0;
          else
            on = g_strcmp0 (row->target, wire_source) == 0
                 || (nodes != NULL && g_strv_contains ((const char * const *) nodes, row->target));
        }
      if (on != row->highlighted)
        set_highlight (row, on);
    }
}

static void
selection_changed_cb (NapkinAnalysisPane *self,
                      NapkinCanvas       *canvas)
{
  NapkinHistory *history = napkin_canvas_get_history (canvas);
  NapkinDiagram *diagram = history ? napkin_history_get_diagram (history) : NULL;

  /* the canvas says so after its document changed too */
  if (diagram != self->diagram)
    napkin_analysis_pane_set_canvas (self, canvas);
  else
    update_selection (self);
}

/* ---------------------------------------------------------------- plots */

static void
plot_theme (GtkWidget       *widget,
            NapkinPlotTheme *theme)
{
  GdkRGBA color;

  napkin_plot_theme_init (theme);
  gtk_style_context_get_color (gtk_widget_get_style_context (widget), &color);
  theme->fg[0] = color.red;
  theme->fg[1] = color.green;
  theme->fg[2] = color.blue;
  theme->bg_alpha = 0;   /* the pane's own background */
}

/* The plot an area shows: the bars in the bars area, the roofline in the other. */
static NapkinPlot *
plot_of_area (NapkinAnalysisPane *self,
              GtkWidget          *area)
{
  return area == GTK_WIDGET (self->bars_area) ? self->bars : self->roofline;
}

static void
draw_plot_cb (GtkDrawingArea *area,
              cairo_t        *cr,
              int             width,
              int             height,
              gpointer        user_data)
{
  NapkinPlot *plot = plot_of_area (user_data, GTK_WIDGET (area));
  NapkinPlotTheme theme;

  if (plot == NULL)
    return;
  plot_theme (GTK_WIDGET (area), &theme);
  napkin_plot_draw (cr, plot, width, height, &theme);
}

static gboolean
plot_tooltip_cb (GtkWidget  *area,
                 int         x,
                 int         y,
                 gboolean    keyboard,
                 GtkTooltip *tooltip,
                 gpointer    user_data)
{
  NapkinAnalysisPane *self = user_data;
  NapkinPlot *plot = plot_of_area (self, area);
  g_autofree char *text = NULL;

  if (plot == NULL || keyboard)
    return FALSE;
  text = napkin_plot_describe_at (plot, gtk_widget_get_width (area), gtk_widget_get_height (area), x, y);
  if (text == NULL)
    return FALSE;
  gtk_tooltip_set_text (tooltip, text);
  return TRUE;
}

char *
napkin_analysis_pane_describe_plot_at (NapkinAnalysisPane *self,
                                       NapkinPlotKind      kind,
                                       double              x,
                                       double              y)
{
  GtkWidget *area = kind == NAPKIN_PLOT_BARS ? GTK_WIDGET (self->bars_area) : GTK_WIDGET (self->roofline_area);
  NapkinPlot *plot = kind == NAPKIN_PLOT_BARS ? self->bars : self->roofline;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  if (plot == NULL)
    return NULL;
  return napkin_plot_describe_at (plot, gtk_widget_get_width (area), gtk_widget_get_height (area), x, y);
}

static void
expanded_cb (NapkinAnalysisPane *self)
{
  if (gtk_expander_get_expanded (self->plots_expander) && self->bars_id == 0)
    self->bars_id = g_timeout_add_full (G_PRIORITY_LOW, 50, build_bars_cb, self, NULL);
}

/* ---------------------------------------------------------------- export */

static void
append_table (GString        *s,
              NapkinAnalysis *a,
              gboolean        markdown)
{
  /* The same columns as `napkin-cli analyze --format csv|md`. */
  if (markdown)
    g_string_append (s, "| level | transfer elements | transfer bytes | time (s) |\n|---|---:|---:|---:|\n");
  else
    g_string_append (s, "section,name,level,transfer_elements,transfer_bytes,time_s,instances,footprint_bytes,"
                        "per_sm,binding_limit,bound\n");
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    if (markdown)
      g_string_append_printf (s, "| %s | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %.6g |\n",
                              napkin_level_to_string (l), a->levels[l].transfer_elements,
                              a->levels[l].transfer_bytes, a->levels[l].time_s);
    else
      g_string_append_printf (s, "level,,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%.9g,,,,,\n",
                              napkin_level_to_string (l), a->levels[l].transfer_elements,
                              a->levels[l].transfer_bytes, a->levels[l].time_s);
  if (markdown)
    g_string_append (s, "\n| region | level | tile | instances | footprint (bytes) | per SM | binding |\n"
                        "|---|---|---|---:|---:|---:|---|\n");
  for (guint i = 0; i < a->regions->len; i++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, i);

      if (markdown)
        g_string_append_printf (s, "| %s | %s | %s | %" G_GINT64_FORMAT " | %" G_GINT64_FORMAT " | %"
                                G_GINT64_FORMAT " | %s |\n", c->name, napkin_level_to_string (c->level), c->tile,
                                c->instances, napkin_region_block_bytes (a, i), c->per_sm, c->binding_limit);
      else
        g_string_append_printf (s, "region,%s,%s,%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",,%" G_GINT64_FORMAT
                                ",%" G_GINT64_FORMAT ",%" G_GINT64_FORMAT ",%s,\n", c->name,
                                napkin_level_to_string (c->level), c->transfer_elements, c->transfer_bytes,
                                c->instances, napkin_region_block_bytes (a, i), c->per_sm, c->binding_limit);
    }
  if (markdown)
    g_string_append_printf (s, "\n| predicted time (s) | bound | FLOPs | throughput (FLOP/s) | feasible |\n"
                               "|---:|---|---:|---:|---|\n| %.6g | %s | %" G_GINT64_FORMAT " | %.6g | %s |\n",
                            a->predicted_time_s, napkin_resource_to_string (a->bound), a->flops_total,
                            a->throughput, a->feasible ? "yes" : "no");
  else
    g_string_append_printf (s, "total,,,,,%.9g,,,,,%s\n", a->predicted_time_s, napkin_resource_to_string (a->bound));
}

char *
napkin_analysis_pane_export_text (NapkinAnalysisPane  *self,
                                  const char          *format,
                                  GError             **error)
{
  GString *s;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  napkin_analysis_pane_flush (self);
  if (self->analysis == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                   _("Nothing to export: %s"), self->error_text ? self->error_text : "");
      return NULL;
    }
  if (g_strcmp0 (format, "json") == 0)
    {
      json_object *root = napkin_analysis_to_json (self->analysis);
      char *text = g_strdup_printf ("%s\n", json_object_to_json_string_ext (root, JSON_C_TO_STRING_PRETTY
                                                                                    | JSON_C_TO_STRING_SPACED
                                                                                    | JSON_C_TO_STRING_NOSLASHESCAPE));

      json_object_put (root);
      return text;
    }
  if (g_strcmp0 (format, "csv") != 0 && g_strcmp0 (format, "md") != 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("Unknown export format “%s”: use json, csv or md"), format ? format : "");
      return NULL;
    }
  s = g_string_new (NULL);
  append_table (s, self->analysis, g_strcmp0 (format, "md") == 0);
  return g_string_free (s, FALSE);
}

gboolean
napkin_analysis_pane_export_plot (NapkinAnalysisPane  *self,
                                  gboolean             roofline,
                                  const char          *path,
                                  GError             **error)
{
  NapkinExportFormat format;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), FALSE);

  napkin_analysis_pane_flush (self);
  if (!roofline && (self->bars == NULL || self->bars_id != 0))
    build_bars_now (self);
  if (!napkin_export_format_from_path (path, &format)
      || (format != NAPKIN_EXPORT_SVG && format != NAPKIN_EXPORT_PNG))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("%s: plots export as .svg or .png"), path);
      return FALSE;
    }
  if ((roofline ? self->roofline : self->bars) == NULL)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                   _("Nothing to export: %s"), self->error_text ? self->error_text : "");
      return FALSE;
    }
  return napkin_plot_export (roofline ? self->roofline : self->bars, path, format, 640, roofline ? 400 : 480, error);
}

static void
export_response_cb (GtkNativeDialog *dialog,
                    int              response,
                    gpointer         user_data)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (user_data);
  const char *what = g_object_get_data (G_OBJECT (dialog), "napkin-format");
  g_autoptr(GFile) file = NULL;
  g_autofree char *path = NULL;
  g_autoptr(GError) error = NULL;

  if (response == GTK_RESPONSE_ACCEPT)
    {
      file = gtk_file_chooser_get_file (GTK_FILE_CHOOSER (dialog));
      path = g_file_get_path (file);
    }
  if (path != NULL)
    {
      if (g_str_equal (what, "roofline") || g_str_equal (what, "bars"))
        napkin_analysis_pane_export_plot (self, g_str_equal (what, "roofline"), path, &error);
      else
        {
          g_autofree char *text = napkin_analysis_pane_export_text (self, what, &error);

          if (text != NULL)
            napkin_file_write_atomic (path, text, strlen (text), &error);
        }
      if (error != NULL)
        {
          gtk_label_set_text (self->error_label, error->message);
          gtk_widget_set_visible (GTK_WIDGET (self->error_label), TRUE);
        }
    }
  gtk_native_dialog_destroy (dialog);
  g_object_unref (dialog);
  g_object_unref (self);
}

static void
export_action (GtkWidget  *widget,
               const char *action_name,
               GVariant   *parameter)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (widget);
  const char *what = g_variant_get_string (parameter, NULL);
  GtkRoot *root = gtk_widget_get_root (widget);
  GtkFileChooserNative *dialog;
  g_autofree char *name = NULL;

  dialog = gtk_file_chooser_native_new (_("Export Analysis"), GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL,
                                        GTK_FILE_CHOOSER_ACTION_SAVE, _("_Export"), _("_Cancel"));
  if (g_str_equal (what, "roofline") || g_str_equal (what, "bars"))
    name = g_strdup_printf ("%s.svg", what);
  else
    name = g_strdup_printf ("analysis.%s", what);
  gtk_file_chooser_set_current_name (GTK_FILE_CHOOSER (dialog), name);
  g_object_set_data_full (G_OBJECT (dialog), "napkin-format", g_strdup (what), g_free);
  g_signal_connect (dialog, "response", G_CALLBACK (export_response_cb), g_object_ref (self));
  gtk_native_dialog_show (GTK_NATIVE_DIALOG (dialog));
}

/* ---------------------------------------------------------------- what-if */

static void
what_if_applied_cb (NapkinAnalysisPane *self,
                    NapkinArch         *arch,
                    NapkinArchEditor   *editor)
{
  napkin_analysis_pane_set_arch (self, arch);
  g_signal_emit (self, signals[ARCHITECTURE_ADDED], 0, arch->id);
}

NapkinArchEditor *
napkin_analysis_pane_open_what_if (NapkinAnalysisPane *self)
{
  GtkRoot *root;
  NapkinArchEditor *editor;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  if (current_arch (self) == NULL)
    return NULL;
  root = gtk_widget_get_root (GTK_WIDGET (self));
  editor = napkin_arch_editor_new (GTK_IS_WINDOW (root) ? GTK_WINDOW (root) : NULL, current_arch (self));
  g_signal_connect_object (editor, "applied", G_CALLBACK (what_if_applied_cb), self, G_CONNECT_SWAPPED);
  gtk_window_present (GTK_WINDOW (editor));
  return editor;
}

static void
what_if_action (GtkWidget  *widget,
                const char *action_name,
                GVariant   *parameter)
{
  napkin_analysis_pane_open_what_if (NAPKIN_ANALYSIS_PANE (widget));
}

/* ---------------------------------------------------------------- class */

static void
dtype_selected_cb (NapkinAnalysisPane *self)
{
  guint i = gtk_drop_down_get_selected (self->dtype_dropdown);

  if (i == 0 || i == GTK_INVALID_LIST_POSITION)
    napkin_analysis_pane_set_dtype (self, FALSE, NAPKIN_DTYPE_FP16);
  else if (i - 1 < G_N_ELEMENTS (dtypes))
    napkin_analysis_pane_set_dtype (self, TRUE, dtypes[i - 1]);
}

/* A Kernels row: its operations selected on the canvas, its code shown (the window). */
static void
kernel_activated_cb (NapkinAnalysisPane *self,
                     const char         *name,
                     char              **nodes)
{
  if (self->canvas != NULL && self->preview == NULL)
    napkin_canvas_select_nodes (self->canvas, (const char *const *) nodes);
  g_signal_emit (self, signals[KERNEL_ACTIVATED], 0, name, nodes);
}

static void
fix_applied_cb (NapkinAnalysisPane *self,
                const char         *message)
{
  g_signal_emit (self, signals[MESSAGE], 0, message);
}

static void
napkin_analysis_pane_map (GtkWidget *widget)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (widget);

  GTK_WIDGET_CLASS (napkin_analysis_pane_parent_class)->map (widget);
  if (self->dirty)
    schedule_update (self);
}

static void
disconnect (NapkinAnalysisPane *self)
{
  if (self->diagram != NULL)
    g_clear_signal_handler (&self->changed_id, self->diagram);
  if (self->canvas != NULL)
    g_clear_signal_handler (&self->selection_id, self->canvas);
  g_clear_object (&self->diagram);
  g_clear_object (&self->canvas);
  g_clear_object (&self->preview);
  g_clear_object (&self->partial);
  g_clear_pointer (&self->left_out, g_strfreev);
}

static void
napkin_analysis_pane_dispose (GObject *object)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (object);

  disconnect (self);
  if (self->tick_id != 0)
    {
      gtk_widget_remove_tick_callback (GTK_WIDGET (self), self->tick_id);
      self->tick_id = 0;
    }
  g_clear_handle_id (&self->bars_id, g_source_remove);
  if (self->bars_cancellable != NULL)
    g_cancellable_cancel (self->bars_cancellable);
  g_clear_object (&self->bars_cancellable);
  if (self->analysis_cancellable != NULL)
    g_cancellable_cancel (self->analysis_cancellable);
  g_clear_object (&self->analysis_cancellable);
  g_clear_pointer (&self->root, gtk_widget_unparent);
  G_OBJECT_CLASS (napkin_analysis_pane_parent_class)->dispose (object);
}

static void
napkin_analysis_pane_finalize (GObject *object)
{
  NapkinAnalysisPane *self = NAPKIN_ANALYSIS_PANE (object);

  g_clear_pointer (&self->analysis, napkin_analysis_free);
  g_clear_pointer (&self->shard, napkin_shard_analysis_free);
  g_clear_pointer (&self->shard_error, g_free);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  g_clear_pointer (&self->error_text, g_free);
  g_clear_pointer (&self->region_signature, g_free);
  g_clear_pointer (&self->roofline, napkin_plot_free);
  g_clear_pointer (&self->bars, napkin_plot_free);
  g_clear_pointer (&self->rows, g_hash_table_unref);
  g_clear_pointer (&self->texts, g_hash_table_unref);
  g_clear_pointer (&self->tips, g_hash_table_unref);
  g_clear_pointer (&self->tip_texts, g_hash_table_unref);
  g_clear_pointer (&self->detail_region, g_free);
  G_OBJECT_CLASS (napkin_analysis_pane_parent_class)->finalize (object);
}

static void
napkin_analysis_pane_class_init (NapkinAnalysisPaneClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_analysis_pane_dispose;
  object_class->finalize = napkin_analysis_pane_finalize;
  widget_class->map = napkin_analysis_pane_map;

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-analysis-pane.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, root);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, dtype_dropdown);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, error_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, preview_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, origin_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, scroller);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, summary_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, kernel_list);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, levels_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, compute_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, regions_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, gpus_section);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, gpus_dropdown);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, gpus_error_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, gpus_box);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, plots_expander);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, roofline_area);
  gtk_widget_class_bind_template_child (widget_class, NapkinAnalysisPane, bars_area);
  gtk_widget_class_install_action (widget_class, "analysis.export", "s", export_action);
  gtk_widget_class_install_action (widget_class, "analysis.what-if", NULL, what_if_action);

  /* architecture-added (const char *id): a what-if profile joined the default registry */
  signals[ARCHITECTURE_ADDED] = g_signal_new ("architecture-added", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                              0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  /* kernel-activated (const char *name, GStrv operations): a Kernels row was clicked;
   * the pane has selected its operations, the window shows its code */
  signals[KERNEL_ACTIVATED] = g_signal_new ("kernel-activated", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                            0, NULL, NULL, NULL, G_TYPE_NONE, 2, G_TYPE_STRING, G_TYPE_STRV);
  /* message (const char *text): for a toast (a kernel's fix applied, or why not) */
  signals[MESSAGE] = g_signal_new ("message", G_TYPE_FROM_CLASS (klass), G_SIGNAL_RUN_LAST,
                                   0, NULL, NULL, NULL, G_TYPE_NONE, 1, G_TYPE_STRING);
  g_type_ensure (NAPKIN_TYPE_KERNEL_LIST);
  gtk_widget_class_set_layout_manager_type (widget_class, GTK_TYPE_BIN_LAYOUT);
  gtk_widget_class_set_css_name (widget_class, "napkin-analysis-pane");
}

static void
napkin_analysis_pane_init (NapkinAnalysisPane *self)
{
  static gboolean css_added = FALSE;
  g_autoptr(GtkStringList) names = gtk_string_list_new (NULL);

  gtk_widget_init_template (GTK_WIDGET (self));
  self->rows = g_hash_table_new_full (g_str_hash, g_str_equal, NULL, row_free);
  self->texts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->tips = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  self->tip_texts = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);

  /* what the choice does, in its own words: the types of the diagram, or one for all */
  gtk_string_list_append (names, _("Types as drawn"));
  for (guint i = 0; i < G_N_ELEMENTS (dtypes); i++)
    {
      /* TRANSLATORS: every tensor priced as this element type, e.g. "All fp8-e4m3" */
      g_autofree char *name = g_strdup_printf (_("All %s"), napkin_dtype_to_string (dtypes[i]));

      gtk_string_list_append (names, name);
    }
  gtk_drop_down_set_model (self->dtype_dropdown, G_LIST_MODEL (names));
  g_signal_connect_object (self->dtype_dropdown, "notify::selected", G_CALLBACK (dtype_selected_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->plots_expander, "notify::expanded", G_CALLBACK (expanded_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->gpus_dropdown, "notify::selected", G_CALLBACK (gpus_selected_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->kernel_list, "activated", G_CALLBACK (kernel_activated_cb), self,
                           G_CONNECT_SWAPPED);
  g_signal_connect_object (self->kernel_list, "fix-applied", G_CALLBACK (fix_applied_cb), self,
                           G_CONNECT_SWAPPED);
  gtk_drawing_area_set_draw_func (self->roofline_area, draw_plot_cb, self, NULL);
  gtk_drawing_area_set_draw_func (self->bars_area, draw_plot_cb, self, NULL);
  /* every bar and point says what it is */
  gtk_widget_set_has_tooltip (GTK_WIDGET (self->roofline_area), TRUE);
  gtk_widget_set_has_tooltip (GTK_WIDGET (self->bars_area), TRUE);
  g_signal_connect (self->roofline_area, "query-tooltip", G_CALLBACK (plot_tooltip_cb), self);
  g_signal_connect (self->bars_area, "query-tooltip", G_CALLBACK (plot_tooltip_cb), self);

  if (!css_added && gdk_display_get_default () != NULL)
    {
      g_autoptr(GtkCssProvider) css = gtk_css_provider_new ();

      /* the highlight is a background and a bar at the start, not colour alone */
      gtk_css_provider_load_from_data (css,
                                       "napkin-analysis-pane .napkin-analysis-row { padding: 1px 4px; }\n"
                                       "napkin-analysis-pane .napkin-analysis-highlight {"
                                       " background-color: alpha(@accent_bg_color, 0.18);"
                                       " box-shadow: inset 3px 0 @accent_bg_color; }\n"
                                       "napkin-analysis-pane .napkin-analysis-row.error label { color: @error_color; }\n"
                                       /* the Kernels section: a kernel to look at has a bar at its start too */
                                       "napkin-kernel-list .napkin-kernel-row { padding: 4px 6px; border-radius: 6px; }\n"
                                       "napkin-kernel-list .napkin-kernel-row:hover {"
                                       " background-color: alpha(@accent_bg_color, 0.08); }\n"
                                       "napkin-kernel-list .napkin-kernel-row.napkin-kernel-poor {"
                                       " background-color: alpha(@warning_bg_color, 0.12);"
                                       " box-shadow: inset 3px 0 @warning_bg_color; }\n"
                                       "napkin-kernel-list levelbar.napkin-kernel-share trough { min-height: 4px; }\n"
                                       "napkin-kernel-list levelbar.napkin-kernel-share block { min-height: 4px; }\n",
                                       -1);
      gtk_style_context_add_provider_for_display (gdk_display_get_default (), GTK_STYLE_PROVIDER (css),
                                                  GTK_STYLE_PROVIDER_PRIORITY_APPLICATION);
      css_added = TRUE;
    }
  self->dirty = TRUE;
}

GtkWidget *
napkin_analysis_pane_new (void)
{
  return g_object_new (NAPKIN_TYPE_ANALYSIS_PANE, NULL);
}

void
napkin_analysis_pane_set_canvas (NapkinAnalysisPane *self,
                                 NapkinCanvas       *canvas)
{
  NapkinHistory *history;
  NapkinHistory *next = canvas ? napkin_canvas_get_history (canvas) : NULL;
  gboolean diagram_changed;

  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));
  g_return_if_fail (canvas == NULL || NAPKIN_IS_CANVAS (canvas));

  diagram_changed = (next ? napkin_history_get_diagram (next) : NULL) != self->diagram;
  disconnect (self);
  gtk_widget_set_visible (GTK_WIDGET (self->preview_label), FALSE);   /* the preview was of the old document */
  if (canvas != NULL)
    {
      self->canvas = g_object_ref (canvas);
      self->selection_id = g_signal_connect_object (canvas, "selection-changed", G_CALLBACK (selection_changed_cb),
                                                    self, G_CONNECT_SWAPPED);
      history = napkin_canvas_get_history (canvas);
      if (history != NULL)
        {
          self->diagram = g_object_ref (napkin_history_get_diagram (history));
          self->changed_id = g_signal_connect_object (self->diagram, "changed", G_CALLBACK (diagram_changed_cb),
                                                      self, G_CONNECT_SWAPPED);
        }
    }
  g_clear_pointer (&self->region_signature, g_free);
  clear_section (self, self->regions_box);
  napkin_kernel_list_clear (self->kernel_list);
  /* another document: its numbers from the top, not where the last one was read
   * (and none of the last one's numbers until its own are there) */
  if (diagram_changed)
    {
      gtk_adjustment_set_value (gtk_scrolled_window_get_vadjustment (self->scroller), 0);
      clear_numbers (self);
    }
  schedule_update (self);
}

void
napkin_analysis_pane_set_arch (NapkinAnalysisPane *self,
                               NapkinArch         *arch)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));

  if (arch == self->arch)
    return;
  if (arch != NULL)
    napkin_arch_ref (arch);
  g_clear_pointer (&self->arch, napkin_arch_unref);
  self->arch = arch;
  {
    /* a profile of the user's is named where it is used (docs/packaging.md) */
    g_autofree char *origin = arch ? napkin_arch_dup_origin (arch) : NULL;

    gtk_label_set_text (self->origin_label, origin ? origin : "");
    gtk_widget_set_visible (GTK_WIDGET (self->origin_label), origin != NULL);
  }
  schedule_update (self);
}

NapkinArch *
napkin_analysis_pane_get_arch (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return current_arch (self);
}

void
napkin_analysis_pane_set_dtype (NapkinAnalysisPane *self,
                                gboolean            has_dtype,
                                NapkinDtype         dtype)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));

  if (self->has_dtype == has_dtype && (!has_dtype || self->dtype == dtype))
    return;
  self->has_dtype = has_dtype;
  self->dtype = dtype;
  for (guint i = 0; i < G_N_ELEMENTS (dtypes); i++)
    if (has_dtype && dtypes[i] == dtype)
      gtk_drop_down_set_selected (self->dtype_dropdown, i + 1);
  if (!has_dtype)
    gtk_drop_down_set_selected (self->dtype_dropdown, 0);
  schedule_update (self);
}

void
napkin_analysis_pane_set_preview (NapkinAnalysisPane *self,
                                  NapkinDiagram      *preview,
                                  const char         *label)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));
  g_return_if_fail (preview == NULL || NAPKIN_IS_DIAGRAM (preview));

  gtk_label_set_text (self->preview_label, preview && label ? label : "");
  gtk_widget_set_visible (GTK_WIDGET (self->preview_label), preview != NULL && label != NULL);
  if (preview == self->preview)
    return;
  g_set_object (&self->preview, preview);
  schedule_update (self);
}

NapkinDiagram *
napkin_analysis_pane_get_preview (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return self->preview;
}

void
napkin_analysis_pane_flush (NapkinAnalysisPane *self)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));

  /* a result still computing is not shown yet: computed again here, and dropped */
  if (self->dirty || self->analysis_running)
    update_now (self);
}

const NapkinAnalysis *
napkin_analysis_pane_get_analysis (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return self->analysis;
}

const char *
napkin_analysis_pane_get_text (NapkinAnalysisPane *self,
                               const char         *key)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return g_hash_table_lookup (self->texts, key);
}

const char *
napkin_analysis_pane_get_tooltip (NapkinAnalysisPane *self,
                                  const char         *key)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  {
    const Tip *tip = g_hash_table_lookup (self->tips, key);
    char *text;

    if (tip == NULL)
      return NULL;
    text = g_hash_table_lookup (self->tip_texts, key);
    if (text == NULL && (text = tip_text (self, *tip)) != NULL)
      g_hash_table_insert (self->tip_texts, g_strdup (key), text);
    return text;
  }
}

gboolean
napkin_analysis_pane_is_highlighted (NapkinAnalysisPane *self,
                                     const char         *key)
{
  Row *row;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), FALSE);

  row = g_hash_table_lookup (self->rows, key);
  return row != NULL && row->highlighted && gtk_widget_has_css_class (row->box, "napkin-analysis-highlight");
}

gboolean
napkin_analysis_pane_activate_row (NapkinAnalysisPane *self,
                                   const char         *key)
{
  Row *row;

  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), FALSE);

  row = g_hash_table_lookup (self->rows, key);
  return row != NULL && row_activate (self, row);
}

gboolean
napkin_analysis_pane_is_partial (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), FALSE);

  return self->partial != NULL;
}

const char *
napkin_analysis_pane_get_error_text (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return self->error_text;
}

const NapkinPlot *
napkin_analysis_pane_get_plot (NapkinAnalysisPane *self,
                               gboolean            roofline)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  if (!roofline && (self->bars == NULL || self->bars_id != 0))
    build_bars_now (self);
  return roofline ? self->roofline : self->bars;
}

gboolean
napkin_analysis_pane_is_comparing (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), FALSE);

  return self->bars_id != 0 || self->bars_running > 0;
}

guint
napkin_analysis_pane_get_n_updates (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), 0);

  return self->n_updates;
}

void
napkin_analysis_pane_set_gpus (NapkinAnalysisPane *self,
                               guint               gpus)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));

  if (self->gpus == gpus)
    return;
  self->gpus = gpus;
  schedule_update (self);
}

NapkinKernelList *
napkin_analysis_pane_get_kernel_list (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return self->kernel_list;
}

double
napkin_analysis_pane_get_scroll (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), 0);

  return gtk_adjustment_get_value (gtk_scrolled_window_get_vadjustment (self->scroller));
}

void
napkin_analysis_pane_set_scroll (NapkinAnalysisPane *self,
                                 double              value)
{
  g_return_if_fail (NAPKIN_IS_ANALYSIS_PANE (self));

  gtk_adjustment_set_value (gtk_scrolled_window_get_vadjustment (self->scroller), value);
}

const NapkinShardAnalysis *
napkin_analysis_pane_get_shard_analysis (NapkinAnalysisPane *self)
{
  g_return_val_if_fail (NAPKIN_IS_ANALYSIS_PANE (self), NULL);

  return self->shard;
}
