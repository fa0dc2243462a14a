/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <cairo.h>

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* Drawing of a diagram in the papers' visual language (docs/design.md §1b), shared by the
 * canvas and every export so that an export shows exactly what the canvas shows.
 * Everything is in document coordinates (the node positions of the file); callers
 * set the transform. Geometry depends only on the diagram, never on fonts, so that
 * hit-testing needs no Pango context. */

typedef struct
{
  double x;
  double y;
  double width;
  double height;
} NapkinRect;

typedef enum
{
  NAPKIN_HIT_NONE,
  NAPKIN_HIT_NODE,
  NAPKIN_HIT_INPUT_PORT,
  NAPKIN_HIT_OUTPUT_PORT,
  NAPKIN_HIT_WIRE,
  NAPKIN_HIT_REGION,
  NAPKIN_HIT_REGION_HANDLE,
  NAPKIN_HIT_GPUS,          /* the gpus region's title or border (index 0) */
  NAPKIN_HIT_GPUS_HANDLE,
} NapkinHitKind;

typedef struct
{
  NapkinHitKind kind;
  int           index;  /* node, wire or region index; -1 for none */
  guint         port;   /* input port for NAPKIN_HIT_INPUT_PORT */
} NapkinHit;

typedef struct
{
  const gboolean *selected_nodes;   /* n_nodes entries, or NULL */
  guint           n_selected_nodes;
  int             selected_region;  /* -1 for none */
  int             selected_wire;    /* -1 for none */
  GPtrArray      *problems;         /* NapkinProblem *, or NULL: marked in red */
  gboolean        full_quality;     /* exports: no screen shortcuts (see napkin-render.c) */
  guint           threads;          /* napkin_render_draw_view on an image surface: bands
                                     * drawn at once; 0 one per processor (at most 4) */
  gboolean        dark;             /* dark paper (the editor in a dark style); exports
                                     * stay on white paper */
  gboolean        selected_gpus;    /* the gpus region is selected */
} NapkinRenderOptions;

/* What the canvas shows: its zoom, and the document point at its top-left corner. */
typedef struct
{
  double zoom;
  double origin_x;
  double origin_y;
} NapkinCanvasView;

typedef enum
{
  NAPKIN_EXPORT_SVG,
  NAPKIN_EXPORT_PDF,
  NAPKIN_EXPORT_PNG,
  NAPKIN_EXPORT_TIKZ,
} NapkinExportFormat;

/* The papers' colours: device memory black, shared memory orange, registers green;
 * tensor-core work blue. L2 (not in the papers) is purple. */
void        napkin_render_level_rgb        (NapkinLevel          level,
                                            double              *r,
                                            double              *g,
                                            double              *b);
const char *napkin_render_level_hex        (NapkinLevel          level);
const char *napkin_render_tensor_core_hex  (void);
/* A level's colour on light or dark paper; NAPKIN_N_LEVELS gives tensor-core work's. */
const char *napkin_render_paper_hex        (NapkinLevel          level,
                                            gboolean             dark);
/* The gpus region's colour (teal) on light or dark paper, and its dash-dot border. */
const char *napkin_render_gpus_hex         (gboolean             dark);
guint       napkin_render_gpus_dashes      (double               dashes[4]);
/* A dash pattern per level, so that levels differ without colour. */
guint       napkin_render_level_dashes     (NapkinLevel          level,
                                            double               dashes[2]);

void        napkin_render_node_rect        (NapkinDiagram       *diagram,
                                            guint                node,
                                            NapkinRect          *rect);
/* port -1 is the output port. FALSE when the node has no such port. */
gboolean    napkin_render_port_point       (NapkinDiagram       *diagram,
                                            guint                node,
                                            int                  port,
                                            double              *x,
                                            double              *y);
void        napkin_render_region_rect      (NapkinDiagram       *diagram,
                                            guint                region,
                                            NapkinRect          *rect);
/* The gpus region's box (the outermost); FALSE when the diagram has none. */
gboolean    napkin_render_gpus_rect        (NapkinDiagram       *diagram,
                                            NapkinRect          *rect);
/* The innermost level a node lives at: the fastest region holding it, else HBM. */
NapkinLevel napkin_render_node_level       (NapkinDiagram       *diagram,
                                            guint                node);
/* Everything drawn, labels included, without the legend. */
void        napkin_render_bounds           (NapkinDiagram       *diagram,
                                            NapkinRect          *rect);
NapkinHit   napkin_render_hit              (NapkinDiagram       *diagram,
                                            double               x,
                                            double               y,
                                            double               tolerance);

void        napkin_render_draw             (cairo_t             *cr,
                                            NapkinDiagram       *diagram,
                                            const NapkinRenderOptions *options);
/* The view that shows the whole diagram in a width × height canvas, with room for
 * the legend in the bottom-left corner; the zoom clamped to [min_zoom, max_zoom]. */
void        napkin_render_fit_view         (NapkinDiagram       *diagram,
                                            int                  width,
                                            int                  height,
                                            double               min_zoom,
                                            double               max_zoom,
                                            NapkinCanvasView    *view);
/* The size of a strand label's text (its em), in document units: at zoom z it is
 * z times that many pixels on screen. */
double      napkin_render_strand_label_size (void);
/* The canvas's picture of a width × height widget: paper, the diagram under the
 * view, the legend in the bottom-left corner. */
void        napkin_render_draw_view        (cairo_t             *cr,
                                            NapkinDiagram       *diagram,
                                            const NapkinRenderOptions *options,
                                            const NapkinCanvasView *view,
                                            int                  width,
                                            int                  height);
void        napkin_render_legend_size      (double              *width,
                                            double              *height);
void        napkin_render_draw_legend      (cairo_t             *cr,
                                            double               x,
                                            double               y);

gboolean    napkin_export_format_from_path (const char          *path,
                                            NapkinExportFormat  *format);
/* scale multiplies the PNG's pixel size (1 = one pixel per document unit). */
/* A cairo_write_func_t writing into the NapkinAtomicFile `closure`: exports stream
 * into a temporary file that replaces the target only once Cairo and every write
 * succeeded (napkin-file.h). */
cairo_status_t napkin_render_write_func    (void                *closure,
                                            const unsigned char *data,
                                            unsigned int         length);
/* Ends an export drawn with cr on surface: destroys both, writes a PNG's pixels
 * into `file` (a NapkinAtomicFile), and returns the first failure's status. */
cairo_status_t napkin_render_finish_export (cairo_t             *cr,
                                            cairo_surface_t     *surface,
                                            NapkinExportFormat   format,
                                            void                *file);
gboolean    napkin_render_export           (NapkinDiagram       *diagram,
                                            const char          *path,
                                            NapkinExportFormat   format,
                                            double               scale,
                                            GError             **error);
/* A standalone-includable tikzpicture. */
char       *napkin_render_to_tikz          (NapkinDiagram       *diagram);

/* The label as drawn (canvas, exports, TikZ): `label`, or its first 120 characters and
 * "…" in *owned (docs/security.md, "Drawing"). */
const char *napkin_render_drawn_label     (const char          *label,
                                           char               **owned);

G_END_DECLS
