/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <cairo.h>

#include "napkin-render.h"

G_BEGIN_DECLS

/* Charts of the analysis, drawn with Cairo so that the pane and the SVG/PNG
 * exports draw the same thing. The series (what to draw) are plain data filled
 * by the caller from the model; this file only draws them. */

typedef enum
{
  NAPKIN_PLOT_ROOFLINE,   /* log-log: FLOP/s against FLOP per byte, one ceiling per level */
  NAPKIN_PLOT_BARS,       /* predicted (and measured) time per architecture × element type */
} NapkinPlotKind;

typedef struct
{
  char        *label;
  double       bandwidth;    /* bytes per second */
  NapkinLevel  level;
} NapkinPlotCeiling;

typedef struct
{
  char        *label;
  double       intensity;    /* FLOP per byte of `level` */
  double       rate;         /* FLOP/s */
  NapkinLevel  level;
  gboolean     measured;
} NapkinPlotPoint;

typedef struct
{
  char        *group;        /* architecture */
  char        *series;       /* element type */
  double       value;        /* seconds */
  gboolean     measured;     /* drawn hatched beside the predicted bar */
  gboolean     infeasible;   /* drawn as an outline; the axis ignores its length */
  double       best;         /* seconds on the GPU's best path, which Napkin does not
                              * generate (a marker on the bar); 0: none */
  char        *best_path;    /* that path's name ("tcgen05"), for the tooltip */
} NapkinPlotBar;

/* Where a bar of a bar chart lands, as drawn (see napkin_plot_bar_geometry). */
typedef struct
{
  double   x, y, w, h;       /* the bar: an outline longer than the axis stops at its end */
  gboolean clipped;          /* longer than the axis: drawn broken at its end */
  double   best_x;           /* centre of the best-path marker; -1: none */
  double   axis_x0, axis_x1; /* the value axis in pixels: 0 s and axis_max */
  double   axis_max;         /* seconds at axis_x1 */
} NapkinPlotBarGeometry;

typedef struct
{
  NapkinPlotKind kind;
  char          *title;
  double         peak;            /* roofline: compute ceiling, FLOP/s */
  char          *peak_label;
  GArray        *ceilings;        /* NapkinPlotCeiling */
  GArray        *points;          /* NapkinPlotPoint */
  GArray        *bars;            /* NapkinPlotBar */
} NapkinPlot;

typedef struct
{
  double fg[3];                   /* text and axes */
  double bg[3];                   /* background; alpha 0 leaves it transparent */
  double bg_alpha;
} NapkinPlotTheme;

NapkinPlot *napkin_plot_new          (NapkinPlotKind          kind,
                                      const char             *title);
void        napkin_plot_free         (NapkinPlot             *plot);
void        napkin_plot_set_peak     (NapkinPlot             *plot,
                                      double                  peak,
                                      const char             *label);
void        napkin_plot_add_ceiling  (NapkinPlot             *plot,
                                      NapkinLevel             level,
                                      double                  bandwidth,
                                      const char             *label);
void        napkin_plot_add_point    (NapkinPlot             *plot,
                                      NapkinLevel             level,
                                      double                  intensity,
                                      double                  rate,
                                      const char             *label,
                                      gboolean                measured);
void        napkin_plot_add_bar      (NapkinPlot             *plot,
                                      const char             *group,
                                      const char             *series,
                                      double                  seconds,
                                      gboolean                measured,
                                      gboolean                infeasible);
/* The time of the last predicted bar of (group, series) on the GPU's best path
 * (docs/model.md, "Best path"), drawn as a marker on that bar under one legend
 * entry for every element type. */
void        napkin_plot_set_best     (NapkinPlot             *plot,
                                      const char             *group,
                                      const char             *series,
                                      double                  seconds,
                                      const char             *path);
/* Light theme: dark text on white. */
void        napkin_plot_theme_init   (NapkinPlotTheme        *theme);
/* Draws into (0, 0, width, height) of cr; theme NULL: the light theme. */
void        napkin_plot_draw         (cairo_t                *cr,
                                      const NapkinPlot       *plot,
                                      double                  width,
                                      double                  height,
                                      const NapkinPlotTheme  *theme);
/* The height a bar chart needs at this width for readable bars (9 px values);
 * a roofline's usual height. */
double      napkin_plot_natural_height (const NapkinPlot     *plot,
                                        double                width);
/* What is at (x, y) of a plot drawn width × height, for its tooltip: the bar of
 * that row ("h100, fp16: 224 µs predicted"), the roofline's point within 8 px;
 * NULL where nothing is. */
char       *napkin_plot_describe_at  (const NapkinPlot       *plot,
                                      double                  width,
                                      double                  height,
                                      double                  x,
                                      double                  y);
/* Bar i of a bar chart drawn at this width; FALSE where there is no such bar. */
gboolean    napkin_plot_bar_geometry (const NapkinPlot       *plot,
                                      double                  width,
                                      guint                   i,
                                      NapkinPlotBarGeometry  *geometry);
/* The bar chart's legend entries in order (element types, then "measured" and the
 * best path's where there are some); free with g_strfreev. */
char      **napkin_plot_legend       (const NapkinPlot       *plot);
/* SVG or PNG by format (NAPKIN_EXPORT_SVG / NAPKIN_EXPORT_PNG), light theme. */
gboolean    napkin_plot_export       (const NapkinPlot       *plot,
                                      const char             *path,
                                      NapkinExportFormat      format,
                                      double                  width,
                                      double                  height,
                                      GError                **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinPlot, napkin_plot_free)

G_END_DECLS
