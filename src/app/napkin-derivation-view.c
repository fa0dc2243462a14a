/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-derivation-view"

#include "config.h"

#include <glib/gi18n.h>

#include "napkin-derivation-view.h"
#include "napkin-explain.h"
#include "napkin-tile-suggestions.h"
#include "napkin-tile-suggestions-private.h"

struct _NapkinDerivationView
{
  GtkBox        parent_instance;

  /* template */
  GtkLabel     *totals_label;
  GtkBox       *column_titles;
  GtkListBox   *list;

  GtkSizeGroup *column_widths[6];   /* one a column: titles and rows line up */
  GPtrArray    *retired;            /* rows of earlier derivations, kept alive (see the helper) */
  guint         n_rows;
};

G_DEFINE_FINAL_TYPE (NapkinDerivationView, napkin_derivation_view, GTK_TYPE_BOX)

/* Column widths in characters, shared by the titles and the rows; the operations
 * take what is left. */
static const struct
{
  const char *title;
  int         width;
  float       xalign;
} columns[] = {
  { N_("#"), 3, 1 },
  { N_("Kernel"), 14, 0 },
  { N_("Kind"), 11, 0 },
  { N_("Predicted"), 10, 1 },
  { N_("Unfused"), 10, 1 },
  { N_("Operations"), 24, 0 },
};

static GtkWidget *
cell_new (NapkinDerivationView *self,
          guint                 column,
          const char           *text)
{
  GtkWidget *label = _napkin_tile_suggestions_cell_new (self->column_widths[column], columns[column].width,
                                                        columns[column].xalign, text);

  if (column == G_N_ELEMENTS (columns) - 1)
    {
      /* a long chain ends in "…"; the tooltip has it whole */
      gtk_widget_set_hexpand (label, TRUE);
      gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
      gtk_label_set_max_width_chars (GTK_LABEL (label), columns[column].width);
      gtk_widget_set_tooltip_text (label, text);
    }
  else
    gtk_label_set_ellipsize (GTK_LABEL (label), PANGO_ELLIPSIZE_END);
  return label;
}

/* The second line of a row: the tiles in words, why the cut is there, and what the
 * kernel stores for later ones. */
static char *
kernel_caption (const NapkinDeriveKernel *k)
{
  g_autoptr(GString) text = g_string_new (NULL);

  if (k->specs != NULL)
    {
      NapkinTuneCandidate c = { 0 };
      g_autofree char *words = NULL;

      c.specs = k->specs;
      words = napkin_tile_suggestions_describe (&c);
      g_string_append (text, words);
    }
  if (k->why != NULL)
    g_string_append_printf (text, "%s%s", text->len ? "\n" : "", k->why);
  if (k->writes != NULL && k->writes[0] != NULL)
    {
      g_autofree char *values = g_strjoinv (", ", k->writes);

      /* TRANSLATORS: the values a kernel writes to device memory, e.g. "stores act for later kernels" */
      g_string_append_printf (text, "%s", text->len ? "\n" : "");
      g_string_append_printf (text, _("stores %s for later kernels"), values);
    }
  return g_string_free (g_steal_pointer (&text), FALSE);
}

static GtkWidget *
row_new (NapkinDerivationView     *self,
         guint                     index,
         const NapkinDeriveKernel *k)
{
  GtkWidget *row;
  GtkWidget *numbers = gtk_box_new (GTK_ORIENTATION_HORIZONTAL, 8);
  g_autofree char *name = g_strdup_printf ("kernel-%u", index);
  g_autofree char *rank = g_strdup_printf ("%u", index + 1);
  g_autofree char *predicted = napkin_format_si (k->predicted_s, "s");
  g_autofree char *unfused = napkin_format_si (k->unfused_s, "s");
  g_autofree char *ops = g_strjoinv (" → ", k->nodes);
  g_autofree char *words = kernel_caption (k);
  const char *cells[] = { rank, k->name, k->kind, predicted, unfused, ops };

  G_STATIC_ASSERT (G_N_ELEMENTS (cells) == G_N_ELEMENTS (columns));
  for (guint i = 0; i < G_N_ELEMENTS (cells); i++)
    gtk_box_append (GTK_BOX (numbers), cell_new (self, i, cells[i]));
  row = _napkin_tile_suggestions_row_new (numbers, words, name);
  gtk_list_box_row_set_activatable (GTK_LIST_BOX_ROW (row), FALSE);
  return row;
}

/* "Derived: 4.68 ms in 20 kernels (1 with a region) · unfused: 72.4 ms, … · 15.49× faster" */
static char *
format_totals (const NapkinDerivation *r)
{
  g_autofree char *derived = napkin_format_si (r->derived_s, "s");
  g_autofree char *unfused = napkin_format_si (r->unfused_s, "s");
  guint fused = 0;

  for (guint i = 0; i < r->kernels->len; i++)
    fused += ((const NapkinDeriveKernel *) g_ptr_array_index (r->kernels, i))->specs != NULL;
  /* TRANSLATORS: the derived total, the kernel count, how many are new regions, the
   * time with every operation its own kernel, and the speed-up */
  return g_strdup_printf (_("Derived: %s in %u kernels (%u with a region) · unfused: %s, every operation its "
                            "own kernel · %.2f× faster"),
                          derived, r->kernels->len, fused, unfused,
                          r->derived_s > 0 ? r->unfused_s / r->derived_s : 0);
}

void
napkin_derivation_view_set_derivation (NapkinDerivationView   *self,
                                       const NapkinDerivation *derivation)
{
  g_autofree char *totals = NULL;

  g_return_if_fail (NAPKIN_IS_DERIVATION_VIEW (self));

  _napkin_tile_suggestions_retire_rows (self->list, self->retired);
  self->n_rows = 0;
  if (derivation == NULL)
    {
      gtk_label_set_text (self->totals_label, "");
      return;
    }
  for (guint i = 0; i < derivation->kernels->len; i++, self->n_rows++)
    gtk_list_box_append (self->list, row_new (self, i, g_ptr_array_index (derivation->kernels, i)));
  totals = format_totals (derivation);
  gtk_label_set_text (self->totals_label, totals);
}

const char *
napkin_derivation_view_get_totals (NapkinDerivationView *self)
{
  g_return_val_if_fail (NAPKIN_IS_DERIVATION_VIEW (self), NULL);

  return gtk_label_get_text (self->totals_label);
}

guint
napkin_derivation_view_get_n_rows (NapkinDerivationView *self)
{
  g_return_val_if_fail (NAPKIN_IS_DERIVATION_VIEW (self), 0);

  return self->n_rows;
}

static void
napkin_derivation_view_dispose (GObject *object)
{
  gtk_widget_dispose_template (GTK_WIDGET (object), NAPKIN_TYPE_DERIVATION_VIEW);
  g_clear_pointer (&NAPKIN_DERIVATION_VIEW (object)->retired, g_ptr_array_unref);
  G_OBJECT_CLASS (napkin_derivation_view_parent_class)->dispose (object);
}

static void
napkin_derivation_view_finalize (GObject *object)
{
  NapkinDerivationView *self = NAPKIN_DERIVATION_VIEW (object);

  for (guint c = 0; c < G_N_ELEMENTS (self->column_widths); c++)
    g_clear_object (&self->column_widths[c]);
  G_OBJECT_CLASS (napkin_derivation_view_parent_class)->finalize (object);
}

static void
napkin_derivation_view_class_init (NapkinDerivationViewClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);
  GtkWidgetClass *widget_class = GTK_WIDGET_CLASS (klass);

  object_class->dispose = napkin_derivation_view_dispose;
  object_class->finalize = napkin_derivation_view_finalize;

  gtk_widget_class_set_template_from_resource (widget_class, "/io/github/napkin/Napkin/ui/napkin-derivation-view.ui");
  gtk_widget_class_bind_template_child (widget_class, NapkinDerivationView, totals_label);
  gtk_widget_class_bind_template_child (widget_class, NapkinDerivationView, column_titles);
  gtk_widget_class_bind_template_child (widget_class, NapkinDerivationView, list);
}

static void
napkin_derivation_view_init (NapkinDerivationView *self)
{
  gtk_widget_init_template (GTK_WIDGET (self));
  self->retired = g_ptr_array_new_with_free_func (g_object_unref);
  for (guint c = 0; c < G_N_ELEMENTS (self->column_widths); c++)
    self->column_widths[c] = gtk_size_group_new (GTK_SIZE_GROUP_HORIZONTAL);
  for (guint c = 0; c < G_N_ELEMENTS (columns); c++)
    gtk_box_append (self->column_titles, cell_new (self, c, _(columns[c].title)));
}

GtkWidget *
napkin_derivation_view_new (void)
{
  return g_object_new (NAPKIN_TYPE_DERIVATION_VIEW, NULL);
}
