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
#include "napkin-text.h"
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
  g_free (bar->best_path);
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
  NapkinPlotBar b = { g_strdup (group), g_strdup (series), seconds, measured, infeasible, 0, NULL };

  g_return_if_fail (plot != NULL);
  g_array_append_val (plot->bars, b);
}

void
napkin_plot_set_best (NapkinPlot *plot,
                      const char *group,
                      const char *series,
                      double      seconds,
                      const char *path)
{
  g_return_if_fail (plot != NULL && group != NULL && series != NULL);

  for (guint i = plot->bars->len; i-- > 0;)
    {
      NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);

      if (!b->measured && g_str_equal (b->group, group) && g_str_equal (b->series, series))
        {
          b->best = isfinite (seconds) && seconds > 0 ? seconds : 0;
          g_free (b->best_path);
          b->best_path = g_strdup (path);
          return;
        }
    }
  g_warning ("no bar %s, %s for its best path", group, series);
}

void
napkin_plot_theme_init (NapkinPlotTheme *theme)
{
  *theme = (NapkinPlotTheme) { { 0.13, 0.13, 0.15 }, { 1, 1, 1 }, 1 };
}

/* ---------------------------------------------------------------- text */

/* A layout of `text` in Sans at `size` (bold or not), and its size in pixels. */
static PangoLayout *
text_layout (cairo_t    *cr,
             const char *text,
             double      size,
             gboolean    bold,
             int        *pw,
             int        *ph)
{
  PangoLayout *layout = pango_cairo_create_layout (cr);
  PangoFontDescription *font = pango_font_description_from_string ("Sans");
  g_autofree char *drawable = napkin_text_drawable (text);

  pango_font_description_set_absolute_size (font, size * PANGO_SCALE);
  if (bold)
    pango_font_description_set_weight (font, PANGO_WEIGHT_BOLD);
  pango_layout_set_font_description (layout, font);
  pango_layout_set_text (layout, drawable != NULL ? drawable : text, -1);
  pango_layout_get_pixel_size (layout, pw, ph);
  pango_font_description_free (font);
  return layout;
}

static void
text_size (cairo_t    *cr,
           const char *text,
           double      size,
           gboolean    bold,
           double     *w,
           double     *h)
{
  int pw, ph;
  PangoLayout *layout = text_layout (cr, text, size, bold, &pw, &ph);

  *w = pw;
  *h = ph;
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
  int pw, ph;
  PangoLayout *layout = text_layout (cr, text, size, bold, &pw, &ph);

  cairo_move_to (cr, x - ax * pw, y - ay * ph);
  pango_cairo_show_layout (cr, layout);
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

/* Rectangles already drawn on, so that labels do not land on each other. */
typedef struct
{
  double x, y, w, h;
} Box;

static gboolean
box_free (GArray     *taken,
          const Box  *b)
{
  for (guint i = 0; i < taken->len; i++)
    {
      const Box *o = &g_array_index (taken, Box, i);

      if (b->x < o->x + o->w && o->x < b->x + b->w && b->y < o->y + o->h && o->y < b->y + b->h)
        return FALSE;
    }
  return TRUE;
}

/* A label beside the point at (x, y): right, left, below or above, whichever is
 * free and inside the frame; none when all four are taken. */
static void
place_label (cairo_t               *cr,
             GArray                *taken,
             const Frame           *f,
             const char            *text,
             double                 x,
             double                 y,
             gboolean               bold,
             const NapkinPlotTheme *theme)
{
  double w, h;
  const double gap = 7;

  text_size (cr, text, 10, bold, &w, &h);
  for (guint i = 0; i < 4; i++)
    {
      Box b = { 0, 0, w + 2, h };

      switch (i)
        {
        case 0: b.x = x + gap; b.y = y - h / 2; break;
        case 1: b.x = x - gap - w - 2; b.y = y - h / 2; break;
        /* below before above: the compute ceiling runs above the points */
        case 2: b.x = x - w / 2; b.y = y + gap; break;
        default: b.x = x - w / 2; b.y = y - gap - h; break;
        }
      /* above or below, slid along to stay inside the frame */
      if (i >= 2)
        b.x = CLAMP (b.x, f->x0, f->x0 + f->w - b.w);
      if (b.x < f->x0 || b.x + b.w > f->x0 + f->w || b.y < f->y0 || b.y + b.h > f->y0 + f->h || !box_free (taken, &b))
        continue;
      g_array_append_val (taken, b);
      set_fg (cr, theme, 0.95);
      draw_text (cr, text, b.x + 1, b.y, 0, 0, 10, bold);
      return;
    }
}

/* The plot area: below the title and the legend's lines, the decades that hold every
 * point and the peak. */
static void
roofline_frame (cairo_t          *cr,
                const NapkinPlot *plot,
                double            width,
                double            height,
                Frame            *f)
{
  double imin = 1e-2, imax = 1e4, rmin = G_MAXDOUBLE, rmax = plot->peak > 0 ? plot->peak : 1e12;
  double legend_x = 58, legend_y = 26;

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
      double w, h;

      if (c->bandwidth > 0)
        rmin = MIN (rmin, c->bandwidth * imin);
      text_size (cr, c->label ? c->label : "", 10, FALSE, &w, &h);
      if (legend_x + 26 + w > width - 4 && legend_x > 58)
        {
          legend_x = 58;
          legend_y += 14;
        }
      legend_x += 24 + w + 14;
    }
  if (rmin == G_MAXDOUBLE || rmin <= 0)
    rmin = rmax / 1e4;
  f->x0 = 58;
  f->y0 = legend_y + 22;
  f->w = MAX (10, width - f->x0 - 24);   /* room for the last decade's label */
  f->h = MAX (10, height - f->y0 - 40);
  f->lx0 = floor (log10 (imin));
  f->lx1 = ceil (log10 (imax));
  f->ly0 = floor (log10 (rmin));
  f->ly1 = ceil (log10 (rmax * 1.5));
}

static char *
describe_point (const NapkinPlot *plot,
                double            width,
                double            height,
                double            x,
                double            y)
{
  cairo_surface_t *surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cairo_t *cr = cairo_create (surface);
  double best = 64;   /* 8 px, squared */
  const NapkinPlotPoint *found = NULL;
  Frame f;

  roofline_frame (cr, plot, width, height, &f);
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);
      double dx, dy;

      if (p->intensity <= 0 || p->rate <= 0)
        continue;
      dx = fx (&f, p->intensity) - x;
      dy = fy (&f, p->rate) - y;
      if (dx * dx + dy * dy < best)
        {
          best = dx * dx + dy * dy;
          found = p;
        }
    }
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  if (found == NULL)
    return NULL;
  {
    g_autofree char *rate = napkin_format_si_digits (found->rate, "FLOP/s", 3);

    /* TRANSLATORS: point label, memory level, FLOP per byte, rate */
    return g_strdup_printf (_("%s: %.3g FLOP per byte of %s, %s"), found->label ? found->label : "",
                            found->intensity, napkin_level_to_string (found->level), rate);
  }
}

/* A grid line from (x0, y0) to (x1, y1), faint, and its label at (lx, ly). */
static void
grid_line (cairo_t               *cr,
           const NapkinPlotTheme *theme,
           double                 x0,
           double                 y0,
           double                 x1,
           double                 y1,
           const char            *label,
           double                 lx,
           double                 ly,
           double                 ax,
           double                 ay)
{
  set_fg (cr, theme, 0.12);
  cairo_move_to (cr, x0, y0);
  cairo_line_to (cr, x1, y1);
  cairo_stroke (cr);
  set_fg (cr, theme, 0.8);
  draw_text (cr, label, lx, ly, ax, ay, 10, FALSE);
}

/* The roofline's legend: one line of ceilings under the title, outside the data
 * (it wraps). */
static void
roofline_legend (cairo_t               *cr,
                 const NapkinPlot      *plot,
                 double                 width,
                 const NapkinPlotTheme *theme)
{
  double legend_x, legend_y;

  legend_x = 58;
  legend_y = 26;
  for (guint i = 0; i < plot->ceilings->len; i++)
    {
      const NapkinPlotCeiling *c = &g_array_index (plot->ceilings, NapkinPlotCeiling, i);
      double dashes[2], w, h;
      guint n_dashes = napkin_render_level_dashes (c->level, dashes);

      text_size (cr, c->label ? c->label : "", 10, FALSE, &w, &h);
      if (legend_x + 26 + w > width - 4 && legend_x > 58)
        {
          legend_x = 58;
          legend_y += 14;
        }
      set_level (cr, c->level, theme);
      cairo_set_line_width (cr, 2);
      cairo_set_dash (cr, dashes, n_dashes, 0);
      cairo_move_to (cr, legend_x, legend_y + 6);
      cairo_line_to (cr, legend_x + 20, legend_y + 6);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      marker (cr, c->level, legend_x + 10, legend_y + 6, 3.5);
      cairo_fill (cr);
      set_fg (cr, theme, 0.9);
      draw_text (cr, c->label ? c->label : "", legend_x + 24, legend_y + 6, 0, 0.5, 10, FALSE);
      legend_x += 24 + w + 14;
    }
}

/* Grid and axes: decades, the frame and the axis titles. */
static void
roofline_axes (cairo_t               *cr,
               const Frame           *f,
               double                 height,
               const NapkinPlotTheme *theme)
{
  cairo_set_line_width (cr, 1);
  for (double e = f->lx0; e <= f->lx1 + 1e-9; e++)
    {
      double x = fx (f, pow (10, e));
      g_autofree char *label = g_strdup_printf ("%g", pow (10, e));

      grid_line (cr, theme, x, f->y0, x, f->y0 + f->h, label, x, f->y0 + f->h + 3, 0.5, 0);
    }
  for (double e = f->ly0; e <= f->ly1 + 1e-9; e++)
    {
      double y = fy (f, pow (10, e));
      g_autofree char *label = napkin_format_si_digits (pow (10, e), "", 3);

      grid_line (cr, theme, f->x0, y, f->x0 + f->w, y, label, f->x0 - 4, y, 1, 0.5);
    }
  set_fg (cr, theme, 0.9);
  cairo_rectangle (cr, f->x0, f->y0, f->w, f->h);
  cairo_stroke (cr);
  draw_text (cr, _("FLOP per byte moved at the level"), f->x0 + f->w / 2, height - 2, 0.5, 1, 10, FALSE);
  cairo_save (cr);
  cairo_translate (cr, 2, f->y0 + f->h / 2);
  cairo_rotate (cr, -G_PI / 2);
  draw_text (cr, "FLOP/s", 0, 0, 0.5, 0, 10, FALSE);
  cairo_restore (cr);
}

/* The compute ceiling with its label (kept clear of the point labels), then the
 * bandwidth ceilings: rate = bandwidth × intensity, up to the peak. */
static void
roofline_ceilings (cairo_t               *cr,
                   const NapkinPlot      *plot,
                   const Frame           *f,
                   GArray                *taken,
                   const NapkinPlotTheme *theme)
{
  if (plot->peak > 0)
    {
      set_fg (cr, theme, 0.9);
      cairo_set_line_width (cr, 2);
      cairo_move_to (cr, f->x0, fy (f, plot->peak));
      cairo_line_to (cr, f->x0 + f->w, fy (f, plot->peak));
      cairo_stroke (cr);
      if (plot->peak_label)
        {
          double w, h;
          Box b;

          text_size (cr, plot->peak_label, 10, FALSE, &w, &h);
          b = (Box) { f->x0 + 4, fy (f, plot->peak) - 2 - h, w, h };
          if (b.y < f->y0)
            b.y = fy (f, plot->peak) + 2;
          g_array_append_val (taken, b);
          draw_text (cr, plot->peak_label, b.x, b.y, 0, 0, 10, FALSE);
        }
    }

  /* bandwidth ceilings: rate = bandwidth × intensity, up to the peak */
  for (guint i = 0; i < plot->ceilings->len; i++)
    {
      const NapkinPlotCeiling *c = &g_array_index (plot->ceilings, NapkinPlotCeiling, i);
      double dashes[2];
      guint n_dashes = napkin_render_level_dashes (c->level, dashes);
      double ridge = plot->peak > 0 ? plot->peak / c->bandwidth : pow (10, f->lx1);
      double x0 = pow (10, f->lx0);

      if (c->bandwidth <= 0)
        continue;
      set_level (cr, c->level, theme);
      cairo_set_line_width (cr, 2);
      cairo_set_dash (cr, dashes, n_dashes, 0);
      cairo_move_to (cr, fx (f, x0), fy (f, c->bandwidth * x0));
      cairo_line_to (cr, fx (f, ridge), fy (f, c->bandwidth * ridge));
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
    }
}

/* The diagram's points: one per level, then their labels where they fit (the
 * first point, the kernel's, first of all). */
static void
roofline_points (cairo_t               *cr,
                 const NapkinPlot      *plot,
                 const Frame           *f,
                 GArray                *taken,
                 const NapkinPlotTheme *theme)
{
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);
      double x, y;
      Box b;

      if (p->intensity <= 0 || p->rate <= 0)
        continue;
      x = fx (f, p->intensity);
      y = fy (f, p->rate);
      set_level (cr, p->level, theme);
      marker (cr, p->level, x, y, 5);
      if (p->measured)
        {
          cairo_set_line_width (cr, 2);
          cairo_stroke (cr);
        }
      else
        cairo_fill (cr);
      b = (Box) { x - 6, y - 6, 12, 12 };
      g_array_append_val (taken, b);
    }
  for (guint i = 0; i < plot->points->len; i++)
    {
      const NapkinPlotPoint *p = &g_array_index (plot->points, NapkinPlotPoint, i);

      if (p->label && p->intensity > 0 && p->rate > 0)
        place_label (cr, taken, f, p->label, fx (f, p->intensity), fy (f, p->rate), i == 0 && !p->measured,
                     theme);
    }
}

static void
draw_roofline (cairo_t               *cr,
               const NapkinPlot      *plot,
               double                 width,
               double                 height,
               const NapkinPlotTheme *theme)
{
  Frame f;
  g_autoptr(GArray) taken = g_array_new (FALSE, FALSE, sizeof (Box));

  roofline_frame (cr, plot, width, height, &f);
  set_fg (cr, theme, 1);
  draw_text (cr, plot->title ? plot->title : "", 58, 6, 0, 0, 12, TRUE);
  roofline_legend (cr, plot, width, theme);
  roofline_axes (cr, &f, height, theme);
  cairo_save (cr);
  cairo_rectangle (cr, f.x0, f.y0, f.w, f.h);
  cairo_clip (cr);
  roofline_ceilings (cr, plot, &f, taken, theme);
  roofline_points (cr, plot, &f, taken, theme);
  cairo_restore (cr);
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

/* Distinct colours for element types (Okabe–Ito, readable by colour-blind users);
 * past its eight, hues a golden angle apart, so that no two series share one. */
static void
series_rgb (guint   i,
            double *rgb)
{
  static const double palette[][3] = {
    { 0.00, 0.45, 0.70 }, { 0.90, 0.62, 0.00 }, { 0.00, 0.62, 0.45 }, { 0.80, 0.47, 0.65 },
    { 0.34, 0.71, 0.91 }, { 0.84, 0.37, 0.00 }, { 0.94, 0.89, 0.26 }, { 0.5, 0.5, 0.5 },
  };
  double h, f;
  int k;

  if (i < G_N_ELEMENTS (palette))
    {
      memcpy (rgb, palette[i], sizeof palette[0]);
      return;
    }
  /* HSV with s = 0.6, v = 0.75 */
  h = fmod ((i - G_N_ELEMENTS (palette)) * 137.508 + 20, 360) / 60;
  k = (int) h;
  f = h - k;
  {
    double v = 0.75, p = v * 0.4, q = v * (1 - 0.6 * f), t = v * (1 - 0.6 * (1 - f));
    double table[6][3] = { { v, t, p }, { q, v, p }, { p, v, t }, { p, q, v }, { t, p, v }, { v, p, q } };

    memcpy (rgb, table[k % 6], sizeof table[0]);
  }
}

/* Where everything of the bar chart goes, shared by drawing, the tooltips and
 * napkin_plot_bar_geometry. */
typedef struct
{
  GPtrArray *groups;        /* architectures, in order */
  GPtrArray *series;        /* element types (and "measured"), in order */
  gboolean   has_best;      /* some bar has a best-path time: its legend entry */
  double     vmax;          /* the axis's end: a round number above every feasible value */
  double     step;          /* between ticks */
  double     x0, x1;        /* the value axis, in pixels */
  double     y0;            /* top of the first group */
  double     bar_h;
  double     group_h;
  double     legend_h;
} BarsLayout;

#define BAR_H      11.0     /* readable values: the text is 9 px */
#define GROUP_GAP   6.0

static void
bars_layout_clear (BarsLayout *l)
{
  g_clear_pointer (&l->groups, g_ptr_array_unref);
  g_clear_pointer (&l->series, g_ptr_array_unref);
}

/* 1, 2 or 5 times a power of ten: ticks a reader can add up. */
static double
nice_step (double range,
           guint  ticks)
{
  double raw = range / MAX (1u, ticks);
  double p = pow (10, floor (log10 (raw)));

  if (raw <= p)
    return p;
  if (raw <= 2 * p)
    return 2 * p;
  if (raw <= 5 * p)
    return 5 * p;
  return 10 * p;
}

static const char *
best_legend (void)
{
  return _("best path (not generated)");
}

/* The legend's entries: the series, then the best path's marker. */
static guint
legend_len (const BarsLayout *l)
{
  return l->series->len + (l->has_best ? 1 : 0);
}

static const char *
legend_text (const BarsLayout *l,
             guint             i)
{
  return i < l->series->len ? g_ptr_array_index (l->series, i) : best_legend ();
}

static void
bars_layout (cairo_t          *cr,
             const NapkinPlot *plot,
             double            width,
             BarsLayout       *l)
{
  double label_w = 0, legend_x = 8, vmax = 0, vmax_all = 0;

  l->groups = g_ptr_array_new ();
  l->series = g_ptr_array_new ();
  l->has_best = FALSE;
  for (guint i = 0; i < plot->bars->len; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);
      double w, h;

      if (!g_ptr_array_find_with_equal_func (l->groups, b->group, g_str_equal, NULL))
        {
          g_ptr_array_add (l->groups, b->group);
          text_size (cr, b->group, 10, FALSE, &w, &h);
          label_w = MAX (label_w, w);
        }
      if (!g_ptr_array_find_with_equal_func (l->series, b->series, g_str_equal, NULL))
        g_ptr_array_add (l->series, b->series);
      if (b->best > 0)
        l->has_best = TRUE;
      /* The axis spans what can run: an infeasible configuration's time (hundreds of
       * ms where a region spills) would squeeze the feasible µs to nothing; its
       * bar is broken at the axis's end instead. */
      if (isfinite (b->value))
        {
          vmax_all = MAX (vmax_all, b->value);
          if (!b->infeasible)
            vmax = MAX (vmax, b->value);
        }
      if (b->best > 0 && !b->infeasible)
        vmax = MAX (vmax, b->best);
    }
  if (vmax <= 0)
    vmax = vmax_all;
  /* the legend wraps like text */
  l->legend_h = 14;
  for (guint s = 0; s < legend_len (l); s++)
    {
      double w, h;

      text_size (cr, legend_text (l, s), 10, FALSE, &w, &h);
      if (legend_x + w + 24 > width && legend_x > 8)
        {
          legend_x = 8;
          l->legend_h += 14;
        }
      legend_x += w + 24;
    }
  l->x0 = 8 + label_w + 6;
  /* room right of the longest bar for its value */
  l->x1 = MAX (l->x0 + 40, width - 58);
  l->y0 = 26 + l->legend_h + 4;
  l->bar_h = BAR_H;
  l->group_h = l->bar_h * MAX (1u, l->series->len) + GROUP_GAP;
  l->step = vmax > 0 ? nice_step (vmax, 4) : 1;
  l->vmax = vmax > 0 ? ceil (vmax / l->step - 1e-9) * l->step : 1;
}

/* Bar b's place in layout l. */
static void
bar_place (const BarsLayout      *l,
           const NapkinPlotBar   *b,
           NapkinPlotBarGeometry *g)
{
  guint gi = 0, si = 0;
  double full;

  g_ptr_array_find_with_equal_func (l->groups, b->group, g_str_equal, &gi);
  g_ptr_array_find_with_equal_func (l->series, b->series, g_str_equal, &si);
  full = isfinite (b->value) ? (l->x1 - l->x0) * b->value / l->vmax : 0;
  g->x = l->x0;
  g->y = l->y0 + gi * l->group_h + si * l->bar_h + 1;
  g->h = l->bar_h - 2;
  g->clipped = full > l->x1 - l->x0 + 0.5;
  g->w = MIN (full, l->x1 - l->x0);
  g->best_x = b->best > 0 ? l->x0 + MIN (l->x1 - l->x0, (l->x1 - l->x0) * b->best / l->vmax) : -1;
  g->axis_x0 = l->x0;
  g->axis_x1 = l->x1;
  g->axis_max = l->vmax;
}

double
napkin_plot_natural_height (const NapkinPlot *plot,
                            double            width)
{
  cairo_surface_t *surface;
  cairo_t *cr;
  BarsLayout l = { 0 };
  double height;

  g_return_val_if_fail (plot != NULL, 0);

  if (plot->kind != NAPKIN_PLOT_BARS || plot->bars->len == 0)
    return plot->kind == NAPKIN_PLOT_BARS ? 80 : 260;
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cr = cairo_create (surface);
  bars_layout (cr, plot, width, &l);
  height = l.y0 + l.group_h * l.groups->len + 34;
  bars_layout_clear (&l);
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return ceil (height);
}

gboolean
napkin_plot_bar_geometry (const NapkinPlot      *plot,
                          double                 width,
                          guint                  i,
                          NapkinPlotBarGeometry *geometry)
{
  cairo_surface_t *surface;
  cairo_t *cr;
  BarsLayout l = { 0 };

  g_return_val_if_fail (plot != NULL && geometry != NULL, FALSE);

  if (plot->kind != NAPKIN_PLOT_BARS || i >= plot->bars->len)
    return FALSE;
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cr = cairo_create (surface);
  bars_layout (cr, plot, width, &l);
  bar_place (&l, &g_array_index (plot->bars, NapkinPlotBar, i), geometry);
  bars_layout_clear (&l);
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return TRUE;
}

char **
napkin_plot_legend (const NapkinPlot *plot)
{
  cairo_surface_t *surface;
  cairo_t *cr;
  BarsLayout l = { 0 };
  GStrvBuilder *builder = g_strv_builder_new ();
  char **legend;

  g_return_val_if_fail (plot != NULL, NULL);

  if (plot->kind == NAPKIN_PLOT_BARS)
    {
      surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
      cr = cairo_create (surface);
      bars_layout (cr, plot, 380, &l);
      for (guint i = 0; i < legend_len (&l); i++)
        g_strv_builder_add (builder, legend_text (&l, i));
      bars_layout_clear (&l);
      cairo_destroy (cr);
      cairo_surface_destroy (surface);
    }
  else
    for (guint i = 0; i < plot->ceilings->len; i++)
      g_strv_builder_add (builder, g_array_index (plot->ceilings, NapkinPlotCeiling, i).label);
  legend = g_strv_builder_end (builder);
  g_strv_builder_unref (builder);
  return legend;
}

/* The text at a bar's end: its time, or "infeasible"; and the best path's time. */
static char *
bar_value_text (const NapkinPlotBar *b)
{
  g_autofree char *value = b->infeasible ? g_strdup (_("infeasible")) : napkin_format_si_digits (b->value, "s", 3);
  g_autofree char *best = NULL;

  if (b->best <= 0)
    return g_steal_pointer (&value);
  best = napkin_format_si_digits (b->best, "s", 3);
  /* the outline says that Napkin's own code does not fit; the time is the best path's */
  if (b->infeasible)
    /* TRANSLATORS: the time on the GPU's best path (not generated) */
    return g_strdup_printf (_("best %s"), best);
  /* TRANSLATORS: a bar's value, then its time on the GPU's best path (not generated) */
  return g_strdup_printf (_("%s · best %s"), value, best);
}

char *
napkin_plot_describe_at (const NapkinPlot *plot,
                         double            width,
                         double            height,
                         double            x,
                         double            y)
{
  cairo_surface_t *surface;
  cairo_t *cr;
  BarsLayout l = { 0 };
  char *text = NULL;

  g_return_val_if_fail (plot != NULL, NULL);

  if (plot->kind != NAPKIN_PLOT_BARS)
    return describe_point (plot, width, height, x, y);
  surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 1, 1);
  cr = cairo_create (surface);
  bars_layout (cr, plot, width, &l);
  for (guint i = 0; i < plot->bars->len && text == NULL; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);
      NapkinPlotBarGeometry g;
      g_autofree char *what = NULL;

      bar_place (&l, b, &g);
      /* the whole row, label included: a short bar is easy to hit */
      if (y < g.y - 1 || y >= g.y - 1 + l.bar_h || x < 0 || x > width)
        continue;
      if (b->infeasible)
        /* TRANSLATORS: architecture, element type: why there is no time */
        what = g_strdup_printf (_("%s, %s: infeasible (a region does not fit this GPU)"), b->group, b->series);
      else if (b->measured)
        {
          g_autofree char *value = napkin_format_si_digits (b->value, "s", 3);

          what = g_strdup_printf (_("%s: %s measured"), b->group, value);
        }
      else
        {
          g_autofree char *value = napkin_format_si_digits (b->value, "s", 3);

          /* TRANSLATORS: architecture, element type, predicted time */
          what = g_strdup_printf (_("%s, %s: %s predicted"), b->group, b->series, value);
        }
      if (b->best > 0)
        {
          g_autofree char *best = napkin_format_si_digits (b->best, "s", 3);

          /* TRANSLATORS: the tooltip so far, the best path's time, its name */
          text = g_strdup_printf (_("%s; %s on the GPU's best path (%s), which Napkin does not generate"), what, best,
                                  b->best_path ? b->best_path : "?");
        }
      else
        text = g_steal_pointer (&what);
    }
  bars_layout_clear (&l);
  cairo_destroy (cr);
  cairo_surface_destroy (surface);
  return text;
}

/* The best path's marker: a diamond in the element type's colour, outlined so
 * that it shows on its own bar. */
static void
best_marker (cairo_t               *cr,
             double                 x,
             double                 y,
             double                 r,
             const double          *rgb,
             const NapkinPlotTheme *theme)
{
  cairo_move_to (cr, x, y - r);
  cairo_line_to (cr, x + r, y);
  cairo_line_to (cr, x, y + r);
  cairo_line_to (cr, x - r, y);
  cairo_close_path (cr);
  if (rgb != NULL)
    cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
  else
    cairo_set_source_rgb (cr, theme->bg[0], theme->bg[1], theme->bg[2]);
  cairo_fill_preserve (cr);
  cairo_set_line_width (cr, 1.5);
  set_fg (cr, theme, 1);
  cairo_stroke (cr);
}

/* A bar longer than the axis: two slanted strokes across it near the end. */
static void
break_mark (cairo_t               *cr,
            double                 x,
            double                 y,
            double                 h,
            const NapkinPlotTheme *theme)
{
  cairo_save (cr);
  cairo_move_to (cr, x - 7, y + h + 1);
  cairo_line_to (cr, x - 3, y - 1);
  cairo_line_to (cr, x + 1, y - 1);
  cairo_line_to (cr, x - 3, y + h + 1);
  cairo_close_path (cr);
  cairo_set_source_rgb (cr, theme->bg[0], theme->bg[1], theme->bg[2]);
  cairo_fill (cr);
  set_fg (cr, theme, 0.9);
  cairo_set_line_width (cr, 1);
  cairo_move_to (cr, x - 7, y + h + 1);
  cairo_line_to (cr, x - 3, y - 1);
  cairo_move_to (cr, x - 3, y + h + 1);
  cairo_line_to (cr, x + 1, y - 1);
  cairo_stroke (cr);
  cairo_restore (cr);
}

static void
draw_bars (cairo_t               *cr,
           const NapkinPlot      *plot,
           double                 width,
           double                 height,
           const NapkinPlotTheme *theme)
{
  BarsLayout l = { 0 };
  double legend_x = 8, legend_y = 26, axis_y;
  gboolean any_clipped = FALSE, any_infeasible = FALSE;

  set_fg (cr, theme, 1);
  draw_text (cr, plot->title ? plot->title : "", 8, 6, 0, 0, 12, TRUE);
  bars_layout (cr, plot, width, &l);
  if (l.groups->len == 0)
    {
      set_fg (cr, theme, 0.7);
      draw_text (cr, _("No prediction"), width / 2, height / 2, 0.5, 0.5, 11, FALSE);
      bars_layout_clear (&l);
      return;
    }

  /* legend: element types, then the best path's marker */
  for (guint s = 0; s < legend_len (&l); s++)
    {
      double rgb[3], w, h;

      text_size (cr, legend_text (&l, s), 10, FALSE, &w, &h);
      if (legend_x + w + 24 > width && legend_x > 8)
        {
          legend_x = 8;
          legend_y += 14;
        }
      if (s < l.series->len)
        {
          series_rgb (s, rgb);
          cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
          cairo_rectangle (cr, legend_x, legend_y + 1, 10, 10);
          cairo_fill (cr);
        }
      else
        best_marker (cr, legend_x + 5, legend_y + 6, 4.5, NULL, theme);
      set_fg (cr, theme, 0.9);
      draw_text (cr, legend_text (&l, s), legend_x + 13, legend_y + 6, 0, 0.5, 10, FALSE);
      legend_x += w + 24;
    }

  /* the value axis: ticks at round times, a grid, its unit */
  axis_y = l.y0 + l.group_h * l.groups->len;
  cairo_set_line_width (cr, 1);
  for (double v = 0; v <= l.vmax * (1 + 1e-9); v += l.step)
    {
      double x = l.x0 + (l.x1 - l.x0) * v / l.vmax;
      g_autofree char *label = v == 0 ? g_strdup ("0") : napkin_format_si_digits (v, "s", 3);

      set_fg (cr, theme, 0.12);
      cairo_move_to (cr, x, l.y0);
      cairo_line_to (cr, x, axis_y);
      cairo_stroke (cr);
      set_fg (cr, theme, 0.8);
      cairo_move_to (cr, x, axis_y);
      cairo_line_to (cr, x, axis_y + 3);
      cairo_stroke (cr);
      draw_text (cr, label, x, axis_y + 4, 0.5, 0, 9, FALSE);
    }
  set_fg (cr, theme, 0.9);
  cairo_move_to (cr, l.x0, l.y0);
  cairo_line_to (cr, l.x0, axis_y);
  cairo_line_to (cr, l.x1, axis_y);
  cairo_stroke (cr);

  for (guint g = 0; g < l.groups->len; g++)
    {
      set_fg (cr, theme, 0.9);
      draw_text (cr, g_ptr_array_index (l.groups, g), l.x0 - 6, l.y0 + g * l.group_h + (l.group_h - GROUP_GAP) / 2,
                 1, 0.5, 10, FALSE);
    }
  for (guint i = 0; i < plot->bars->len; i++)
    {
      const NapkinPlotBar *b = &g_array_index (plot->bars, NapkinPlotBar, i);
      guint s = 0;
      double rgb[3], tw, th, end, mid;
      NapkinPlotBarGeometry g;
      g_autofree char *label = bar_value_text (b);

      g_ptr_array_find_with_equal_func (l.series, b->series, g_str_equal, &s);
      series_rgb (s, rgb);
      bar_place (&l, b, &g);
      mid = g.y + g.h / 2;
      cairo_set_source_rgb (cr, rgb[0], rgb[1], rgb[2]);
      if (b->infeasible)
        {
          any_infeasible = TRUE;
          cairo_set_line_width (cr, 1);
          cairo_rectangle (cr, g.x + 0.5, g.y + 0.5, MAX (4, g.w) - 1, g.h - 1);
          cairo_stroke (cr);
        }
      else if (b->measured)
        hatch (cr, g.x, g.y, g.w, g.h);
      else
        {
          cairo_rectangle (cr, g.x, g.y, g.w, g.h);
          cairo_fill (cr);
        }
      if (g.clipped)
        {
          break_mark (cr, g.x + g.w - 6, g.y, g.h, theme);
          any_clipped = TRUE;
        }
      if (g.best_x >= 0)
        best_marker (cr, g.best_x, mid, 4.5, rgb, theme);
      /* the value past the bar's (or the marker's) end, inside the bar where it
       * would leave the chart */
      end = MAX (g.x + MAX (4, g.w), g.best_x + 5);
      text_size (cr, label, 9, FALSE, &tw, &th);
      if (b->infeasible && g.best_x >= 0 && g.w >= tw + 24)
        {
          /* beside its marker, inside the hollow outline */
          double tx = g.best_x + 8 + tw <= g.x + g.w - 12 ? g.best_x + 8 : g.best_x - 8 - tw;

          set_fg (cr, theme, 0.85);
          draw_text (cr, label, MAX (g.x + 2, tx), mid, 0, 0.5, 9, FALSE);
        }
      else if (b->infeasible && end + 3 + tw > width - 2 && g.w >= tw + 16)
        {
          /* an outline is hollow: the text inside it, clear of the break */
          set_fg (cr, theme, 0.85);
          draw_text (cr, label, g.x + g.w - (g.clipped ? 12 : 3), mid, 1, 0.5, 9, FALSE);
        }
      else if (end + 3 + tw <= width - 2 || g.w < tw + 8)
        {
          set_fg (cr, theme, 0.85);
          draw_text (cr, label, end + 3, mid, 0, 0.5, 9, FALSE);
        }
      else
        {
          cairo_set_source_rgb (cr, 1, 1, 1);
          draw_text (cr, label, g.x + g.w - 3, mid, 1, 0.5, 9, FALSE);
        }
    }
  set_fg (cr, theme, 0.9);
  draw_text (cr,
             any_clipped ? _("predicted time (shorter is faster); outline: infeasible, // past the axis")
             : any_infeasible ? _("predicted time (shorter is faster); outline: infeasible")
             : _("predicted time (shorter is faster)"),
             (l.x0 + l.x1) / 2, axis_y + 17, 0.5, 0, 9, FALSE);
  bars_layout_clear (&l);
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
  status = napkin_render_finish_export (cr, surface, format, file);
  if (status != CAIRO_STATUS_SUCCESS && status != CAIRO_STATUS_WRITE_ERROR)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
                   _("%s: cannot write the plot: %s"), path, cairo_status_to_string (status));
      return FALSE;
    }
  return napkin_atomic_file_commit (g_steal_pointer (&file), error);
}
