/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-plot"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>
#include <cairo-svg.h>
#include <pango/pangocairo.h>

#include "napkin-error.h"
#include "napkin-explain.h"
#include "napkin-file.h"
#include "napkin-plot.h"

static void
ceiling_clear (gpointer data)
{
  g_free (((NapkinPlotCeiling *) data)->label);
}

static void
point_clear (gpointer data)
{
  g_free (((NapkinPlotPoint *) data)->label);
}

static void
bar_clear (gpointer data)
{
  NapkinPlotBar *bar = data;

  g_free (bar->group);
  g_free (bar->series);
}

NapkinPlot *
napkin_plot_new (NapkinPlotKind  kind,
                 const char     *title)
{
  NapkinPlot *plot = g_new0 (NapkinPlot, 1);

  plot->kind = kind;
  plot->title = g_strdup (title);
  plot->ceilings = g_array_new (FALSE, TRUE, sizeof (NapkinPlotCeiling));
  plot->points = g_array_new (FALSE, TRUE, sizeof (NapkinPlotPoint));
  plot->bars = g_array_new (FALSE, TRUE, sizeof (NapkinPlotBar));
  g_array_set_clear_func (plot->ceilings, ceiling_clear);
  g_array_set_clear_func (plot->points, point_clear);
  g_array_set_clear_func (plot->bars, bar_clear);
  return plot;
}

void
napkin_plot_free (NapkinPlot *plot)
{
  if (plot == NULL)
    return;
  g_free (plot->title);
  g_free (plot->peak_label);
  g_array_unref (plot->ceilings);
  g_array_unref (plot->points);
  g_array_unref (plot->bars);
  g_free (plot);
}

void
napkin_plot_set_peak (NapkinPlot *plot,
                      double      peak,
                      const char *label)
{
  g_return_if_fail (plot != NULL);

  plot->peak = peak;
  g_free (plot->peak_label);
  plot->peak_label = g_strdup (label);
}

void
napkin_plot_add_ceiling (NapkinPlot  *plot,
                         NapkinLevel  level,
                         double       bandwidth,
                         const char  *label)
{
  NapkinPlotCeiling c = { g_strdup (label), bandwidth, level };

  g_return_if_fail (plot != NULL);
  g_array_append_val (plot->ceilings, c);
}

void
napkin_plot_add_point (NapkinPlot  *plot,
                       NapkinLevel  level,
                       double       intensity,
                       double       rate,
                       const char  *label,
                       gboolean     measured)
{
  NapkinPlotPoint p = { g_strdup (label), intensity, rate, level, measured };

  g_return_if_fail (plot != NULL);
  g_array_append_val (plot->points, p);
}

void
napkin_plot_add_bar (NapkinPlot *plot,
                     const char *group,
                     const char *series,
                     double      seconds,
                     gboolean    measured,
                     gboolean    infeasible)
{
  NapkinPlotBar b = { g_strdup (group), g_strdup (series), seconds, measured, infeasible };

  g_return_if_fail (plot != NULL);
  g_array_append_val (plot->bars, b);
}

void
napkin_plot_theme_init (NapkinPlotTheme *theme)
{
  *theme = (NapkinPlotTheme) { { 0.13, 0.13, 0.15 }, { 1, 1, 1 }, 1 };
}

/* ---------------------------------------------------------------- text */

static void
text_size (cairo_t    *cr,
           const char *text,
           double      size,
           gboolean    bold,
           double     *w,
           double     *h)
{
  PangoLayout *layout = pango_cairo_create_layout (cr);
  PangoFontDescription *font = pango_font_description_from_string ("Sans");
  int pw, ph;

  pango_font_description_set_absolute_size (font, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight (font, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description (layout, font);
  pango_layout_set_text (layout, text, -1);
  pango_layout_get_pixel_size (layout, &pw, &ph);
  *w = pw;
  *h = ph;
  pango_font_description_free (font);
  g_object_unref (layout);
}

/* ax, ay: 0 left/top, 0.5 centre, 1 right/bottom of the text at (x, y). */
static void
draw_text (cairo_t    *cr,
           const char *text,
           double      x,
           double      y,
           double      ax,
           double      ay,
           double      size,
           gboolean    bold)
{
  PangoLayout *layout = pango_cairo_create_layout (cr);
  PangoFontDescription *font = pango_font_description_from_string ("Sans");
  int pw, ph;

  pango_font_description_set_absolute_size (font, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight (font, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description (layout, font);
  pango_layout_set_text (layout, text, -1);
  pango_layout_get_pixel_size (layout, &pw, &ph);
  cairo_move_to (cr, x - ax * pw, y - ay * ph);
  pango_cairo_show_layout (cr, layout);
  pango_font_description_free (font);
  g_object_unref (layout);
}

static void
set_fg (cairo_t               *cr,
        const NapkinPlotTheme *theme,
        double                 alpha)
{
  cairo_set_source_rgba (cr, theme->fg[0], theme->fg[1], theme->fg[2], alpha);
}

static void
set_level (cairo_t     *cr,
           NapkinLevel  level,
           const NapkinPlotTheme *theme)
{
  double r, g, b;

  /* device memory is black in the papers: on a dark theme use the text colour */
  if (level == NAPKIN_LEVEL_HBM)
    {
      set_fg (cr, theme, 1);
      return;
    }
  napkin_render_level_rgb (level, &r, &g, &b);
  cairo_set_source_rgb (cr, r, g, b);
}

/* A marker shape per level, so that levels differ without colour. */
static void
marker (cairo_t     *cr,
        NapkinLevel  level,
        double       x,
        double       y,
        double       r)
{
  switch (level)
    {
    case NAPKIN_LEVEL_HBM:
      cairo_rectangle (cr, x - r, y - r, 2 * r, 2 * r);
      break;
    case NAPKIN_LEVEL_L2:
      cairo_move_to (cr, x, y - r * 1.3);
      cairo_line_to (cr, x + r * 1.3, y);
      cairo_line_to (cr, x, y + r * 1.3);
      cairo_line_to (cr, x - r * 1.3, y);
      cairo_close_path (cr);
      break;
    case NAPKIN_LEVEL_SMEM:
      cairo_move_to (cr, x, y - r * 1.3);
      cairo_line_to (cr, x + r * 1.2, y + r);
      cairo_line_to (cr, x - r * 1.2, y + r);
      cairo_close_path (cr);
      break;
    default:
      cairo_new_sub_path (cr);
      cairo_arc (cr, x, y, r, 0, 2 * G_PI);
      break;
    }
}

/* ---------------------------------------------------------------- roofline */

typedef struct
{
  double x0, y0, w, h;     /* plot area */
  double lx0, lx1, ly0, ly1;   /* log10 ranges */
} Frame;

static double
fx (const Frame *f,
    double       v)
{
  return f->x0 + (log10 (v) - f->lx0) / (f->lx1 - f->lx0) * f->w;
}

static double
fy (const Frame *f,
    double       v)
{
  return f->y0 + f->h - (log10 (v) - f->ly0) / (f->ly1 - f->ly0) * f->h;
}

static void
draw_roofline (cairo_t               *cr,
               const NapkinPlot      *plot,
               double                 width,
               double                 height,
               const NapkinPlotTheme *theme)
{
  Frame f;
  double imin = 1e-2, imax = 1e4, rmin = G_MAXDOUBLE, rmax = plot->peak > 0 ? plot->peak : 1e12;
  double legend_y;

  /* ranges: every point, and the peak's ridge points */
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);

      if (p->intensity > 0 && p->rate > 0)
        {
          imin = MIN (imin, p->intensity / 2);
          imax = MAX (imax, p->intensity * 2);
          rmin = MIN (rmin, p->rate / 4);
          rmax = MAX (rmax, p->rate);
        }
    }
  for (guint i = 0; i < plot->ceilings->len; i++)
    {
      const NapkinPlotCeiling *c = &g_array_index (plot->ceilings, NapkinPlotCeiling, i);

      if (c->bandwidth > 0)
        rmin = MIN (rmin, c->bandwidth * imin);
    }
  if (rmin == G_MAXDOUBLE || rmin <= 0)
    rmin = rmax / 1e4;

  f.x0 = 58;
  f.y0 = 30;
  f.w = MAX (10, width - f.x0 - 24);   /* room for the last decade's label */
  f.h = MAX (10, height - f.y0 - 40);
  f.lx0 = floor (log10 (imin));
  f.lx1 = ceil (log10 (imax));
  f.ly0 = floor (log10 (rmin));
  f.ly1 = ceil (log10 (rmax * 1.5));

  set_fg (cr, theme, 1);
  draw_text (cr, plot->title ? plot->title : "", f.x0, 6, 0, 0, 12, TRUE);

  /* grid and axes: decades */
  cairo_set_line_width (cr, 1);
  for (double e = f.lx0; e <= f.lx1 + 1e-9; e++)
    {
      double x = fx (&f, pow (10, e));
      g_autofree char *label = g_strdup_printf ("%g", pow (10, e));

      set_fg (cr, theme, 0.12);
      cairo_move_to (cr, x, f.y0);
      cairo_line_to (cr, x, f.y0 + f.h);
      cairo_stroke (cr);
      set_fg (cr, theme, 0.8);
      draw_text (cr, label, x, f.y0 + f.h + 3, 0.5, 0, 10, FALSE);
    }
  for (double e = f.ly0; e <= f.ly1 + 1e-9; e++)
    {
      double y = fy (&f, pow (10, e));
      g_autofree char *label = napkin_format_si_digits (pow (10, e), "", 3);

      set_fg (cr, theme, 0.12);
      cairo_move_to (cr, f.x0, y);
      cairo_line_to (cr, f.x0 + f.w, y);
      cairo_stroke (cr);
      set_fg (cr, theme, 0.8);
      draw_text (cr, label, f.x0 - 4, y, 1, 0.5, 10, FALSE);
    }
  set_fg (cr, theme, 0.9);
  cairo_rectangle (cr, f.x0, f.y0, f.w, f.h);
  cairo_stroke (cr);
  draw_text (cr, _("FLOP per byte moved at the level"), f.x0 + f.w / 2, height - 2, 0.5, 1, 10, FALSE);
  cairo_save (cr);
  cairo_translate (cr, 2, f.y0 + f.h / 2);
  cairo_rotate (cr, -G_PI / 2);
  draw_text (cr, "FLOP/s", 0, 0, 0.5, 0, 10, FALSE);
  cairo_restore (cr);

  cairo_save (cr);
  cairo_rectangle (cr, f.x0, f.y0, f.w, f.h);
  cairo_clip (cr);

  /* compute ceiling */
  if (plot->peak > 0)
    {
      set_fg (cr, theme, 0.9);
      cairo_set_line_width (cr, 2);
      cairo_move_to (cr, f.x0, fy (&f, plot->peak));
      cairo_line_to (cr, f.x0 + f.w, fy (&f, plot->peak));
      cairo_stroke (cr);
      if (plot->peak_label)
        draw_text (cr, plot->peak_label, f.x0 + 4, fy (&f, plot->peak) - 2, 0, 1, 10, FALSE);
    }

  /* bandwidth ceilings: rate = bandwidth × intensity, up to the peak */
  for (guint i = 0; i < plot->ceilings->len; i++)
    {
      const NapkinPlotCeiling *c = &g_array_index (plot->ceilings, NapkinPlotCeiling, i);
      double dashes[2];
      guint n_dashes = napkin_render_level_dashes (c->level, dashes);
      double ridge = plot->peak > 0 ? plot->peak / c->bandwidth : pow (10, f.lx1);
      double x0 = pow (10, f.lx0);

      if (c->bandwidth <= 0)
        continue;
      set_level (cr, c->level, theme);
      cairo_set_line_width (cr, 2);
      cairo_set_dash (cr, dashes, n_dashes, 0);
      cairo_move_to (cr, fx (&f, x0), fy (&f, c->bandwidth * x0));
      cairo_line_to (cr, fx (&f, ridge), fy (&f, c->bandwidth * ridge));
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }

  /* the diagram's points: one per level */
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);
      double x, y;

      if (p->intensity <= 0 || p->rate <= 0)
        continue;
      x = fx (&f, p->intensity);
      y = fy (&f, p->rate);
      set_level (cr, p->level, theme);
      marker (cr, p->level, x, y, 5);
      if (p->measured)
        {
          cairo_set_line_width (cr, 2);
          cairo_stroke (cr);
        }
      else
        cairo_fill (cr);
      if (p->label)
        {
          set_fg (cr, theme, 0.9);
          draw_text (cr, p->label, x + 7, y, 0, 0.5, 10, FALSE);
        }
    }
  cairo_restore (cr);

  /* legend: ceilings */
  legend_y = f.y0 + f.h - 4;
  for (guint i = plot->ceilings->len; i-- > 0;)
    {
      const NapkinPlotCeiling *c = &g_array_index (plot->ceilings, NapkinPlotCeiling, i);
      double dashes[2];
      guint n_dashes = napkin_render_level_dashes (c->level, dashes);

      set_level (cr, c->level, theme);
      cairo_set_line_width (cr, 2);
      cairo_set_dash (cr, dashes, n_dashes, 0);
      cairo_move_to (cr, f.x0 + f.w - 150, legend_y - 6);
      cairo_line_to (cr, f.x0 + f.w - 128, legend_y - 6);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      marker (cr, c->level, f.x0 + f.w - 139, legend_y - 6, 3.5);
      cairo_fill (cr);
      set_fg (cr, theme, 0.9);
      draw_text (cr, c->label ? c->label : "", f.x0 + f.w - 124, legend_y - 6, 0, 0.5, 10, FALSE);
      legend_y -= 14;
    }
}

/* ---------------------------------------------------------------- bars */

static void
hatch (cairo_t *cr,
       double   x,
       double   y,
       double   w,
       double   h)
{
  cairo_save (cr);
  cairo_rectangle (cr, x, y, w, h);
  cairo_clip (cr);
  cairo_set_line_width (cr, 1);
  for (double d = -h; d < w; d += 5)
    {
      cairo_move_to (cr, x + d, y + h);
      cairo_line_to (cr, x + d + h, y);
    }
  cairo_stroke (cr);
  cairo_restore (cr);
}

/* Distinct colours for element types (Okabe–Ito, readable by colour-blind users). */
static void
series_rgb (guint   i,
            double *rgb)
{
  static const double palette[][3] = {
    { 0.00, 0.45, 0.70 }, { 0.90, 0.62, 0.00 }, { 0.00, 0.62, 0.45 }, { 0.80, 0.47, 0.65 },
    { 0.34, 0.71, 0.91 }, { 0.84, 0.37, 0.00 }, { 0.94, 0.89, 0.26 }, { 0.5, 0.5, 0.5 },
  };

  memcpy (rgb, palette[i % G_N_ELEMENTS (palette)], sizeof palette[0]);
}

static void
draw_bars (cairo_t               *cr,
           const NapkinPlot      *plot,
           double                 width,
           double                 height,
           const NapkinPlotTheme *theme)
{
  g_autoptr(GPtrArray) groups = g_ptr_array_new ();
  g_autoptr(GPtrArray) series = g_ptr_array_new ();
  double vmax = 0, label_w = 0, x0, x1, y0, row_h, bar_h, legend_x;

  for (guint i = 0; i < plot->bars->len; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);
      guint at;
      double w, h;

      if (!g_ptr_array_find_with_equal_func (groups, b->group, g_str_equal, &at))
        {
          g_ptr_array_add (groups, b->group);
          text_size (cr, b->group, 10, FALSE, &w, &h);
          label_w = MAX (label_w, w);
        }
      if (!g_ptr_array_find_with_equal_func (series, b->series, g_str_equal, &at))
        g_ptr_array_add (series, b->series);
      if (isfinite (b->value))
        vmax = MAX (vmax, b->value);
    }

  set_fg (cr, theme, 1);
  draw_text (cr, plot->title ? plot->title : "", 8, 6, 0, 0, 12, TRUE);
  if (groups->len == 0 || vmax <= 0)
    {
      set_fg (cr, theme, 0.7);
      draw_text (cr, _("No prediction"), width / 2, height / 2, 0.5, 0.5, 11, FALSE);
      return;
    }

  /* legend: element types */
  legend_x = 8;
  for (guint s = 0; s < series->len; s++)
    {
      double rgb[3], w, h;

      series_rgb (s, rgb);
      cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
      cairo_rectangle (cr, legend_x, 26, 10, 10);
      cairo_fill (cr);
      set_fg (cr, theme, 0.9);
      draw_text (cr, g_ptr_array_index (series, s), legend_x + 13, 31, 0, 0.5, 10, FALSE);
      text_size (cr, g_ptr_array_index (series, s), 10, FALSE, &w, &h);
      legend_x += w + 24;
    }

  x0 = 8 + label_w + 6;
  x1 = width - 60;
  y0 = 44;
  row_h = MAX (8, (height - y0 - 20) / groups->len);
  bar_h = MAX (2, (row_h - 4) / MAX (1u, series->len));

  set_fg (cr, theme, 0.9);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, x0, y0);
  cairo_line_to (cr, x0, y0 + row_h * groups->len);
  cairo_stroke (cr);

  for (guint g = 0; g < groups->len; g++)
    {
      set_fg (cr, theme, 0.9);
      draw_text (cr, g_ptr_array_index (groups, g), x0 - 6, y0 + g * row_h + row_h / 2, 1, 0.5, 10, FALSE);
    }
  for (guint i = 0; i < plot->bars->len; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);
      guint g = 0, s = 0;
      double rgb[3], y, w;
      g_autofree char *label = NULL;

      g_ptr_array_find_with_equal_func (groups, b->group, g_str_equal, &g);
      g_ptr_array_find_with_equal_func (series, b->series, g_str_equal, &s);
      series_rgb (s, rgb);
      y = y0 + g * row_h + 2 + s * bar_h;
      w = isfinite (b->value) ? (x1 - x0) * b->value / vmax : 0;
      cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
      if (b->infeasible)
        {
          cairo_set_line_width (cr, 1);
          cairo_rectangle (cr, x0 + 0.5, y + 0.5, MAX (4, w) - 1, bar_h - 2);
          cairo_stroke (cr);
          label = g_strdup (_("infeasible"));
        }
      else if (b->measured)
        {
          hatch (cr, x0, y, w, bar_h - 1);
          label = napkin_format_si_digits (b->value, "s", 3);
        }
      else
        {
          cairo_rectangle (cr, x0, y, w, bar_h - 1);
          cairo_fill (cr);
          label = napkin_format_si_digits (b->value, "s", 3);
        }
      if (bar_h >= 7)
        {
          set_fg (cr, theme, 0.85);
          draw_text (cr, label, x0 + MAX (4, w) + 3, y + bar_h / 2, 0, 0.5, MIN (10, bar_h + 1), FALSE);
        }
    }
}

void
napkin_plot_draw (cairo_t               *cr,
                  const NapkinPlot      *plot,
                  double                 width,
                  double                 height,
                  const NapkinPlotTheme *theme)
{
  NapkinPlotTheme light;

  g_return_if_fail (cr != NULL && plot != NULL);

  if (theme == NULL)
    {
      napkin_plot_theme_init (&light);
      theme = &light;
    }
  cairo_save (cr);
  if (theme->bg_alpha > 0)
    {
      cairo_set_source_rgba (cr, theme->bg[0], theme->bg[1], theme->bg[2], theme->bg_alpha);
      cairo_rectangle (cr, 0, 0, width, height);
      cairo_fill (cr);
    }
  if (plot->kind == NAPKIN_PLOT_ROOFLINE)
    draw_roofline (cr, plot, width, height, theme);
  else
    draw_bars (cr, plot, width, height, theme);
  cairo_restore (cr);
}

gboolean
napkin_plot_export (const NapkinPlot    *plot,
                    const char          *path,
                    NapkinExportFormat   format,
                    double               width,
                    double               height,
                    GError             **error)
{
  g_autoptr(NapkinAtomicFile) file = NULL;
  cairo_surface_t *surface;
  cairo_t *cr;
  cairo_status_t status;

  g_return_val_if_fail (plot != NULL && path != NULL, FALSE);

  if (format != NAPKIN_EXPORT_SVG && format != NAPKIN_EXPORT_PNG)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("%s: plots export as SVG or PNG only"), path);
      return FALSE;
    }
  /* Into a temporary file that replaces the target only once all went well. */
  file = napkin_atomic_file_new (path, error);
  if (file == NULL)
    return FALSE;
  if (format == NAPKIN_EXPORT_SVG)
    surface = cairo_svg_surface_create_for_stream (napkin_render_write_func, file, width, height);
  else
    surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, (int) ceil (width * 2), (int) ceil (height * 2));
  cr = cairo_create (surface);
  if (format == NAPKIN_EXPORT_PNG)
    cairo_scale (cr, 2, 2);   /* legible on high-density screens and in documents */
  napkin_plot_draw (cr, plot, width, height, NULL);
  status = cairo_status (cr);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  if (status == CAIRO_STATUS_SUCCESS && format == NAPKIN_EXPORT_PNG)
    status = cairo_surface_write_to_png_stream (surface, napkin_render_write_func, file);
  cairo_surface_finish (surface);
  if (status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_status (surface);
  cairo_surface_destroy (surface);
  if (status != CAIRO_STATUS_SUCCESS && status != CAIRO_STATUS_WRITE_ERROR)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("%s: cannot write the plot: %s"), path, cairo_status_to_string (status));
      return FALSE;
    }
  return napkin_atomic_file_commit (g_steal_pointer (&file), error);
}
