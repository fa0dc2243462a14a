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
  gboolean     infeasible;   /* drawn as an outline with a cross */
} NapkinPlotBar;

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
/* SVG or PNG by format (NAPKIN_EXPORT_SVG / NAPKIN_EXPORT_PNG), light theme. */
gboolean    napkin_plot_export       (const NapkinPlot       *plot,
                                      const char             *path,
                                      NapkinExportFormat      format,
                                      double                  width,
                                      double                  height,
                                      GError                **error);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinPlot, napkin_plot_free)

G_END_DECLS
