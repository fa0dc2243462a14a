/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-render"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>
#include <pango/pangocairo.h>

#include "napkin-render.h"
#include "napkin-text.h"
#include "napkin-validate.h"

/* Geometry, in document units (1 unit = 1 px at zoom 1). */
#define STRAND      10.0   /* distance between the strands of one tensor */
#define PAD          8.0   /* inside a glyph, above and below its strands */
#define LABEL_H     16.0   /* the label line above each glyph */
#define PORT_R       4.0
#define REGION_PAD  16.0
#define REGION_NEST 18.0   /* extra margin per region nested inside */
#define REGION_TOP  30.0   /* the marks on the top edge and the title below them */
#define REGION_MIN_W 250.0
#define HANDLE      12.0

static const char *level_titles[NAPKIN_N_LEVELS] = {
  N_("Device memory"), N_("L2 cache"), N_("Shared memory"), N_("Registers"),
};

/* The colours of one paper (docs/editor.md, "Dark style"). On dark paper device
 * memory, black in the papers, is a light grey, and the other levels are lightened
 * so that they keep their contrast; the dashes still tell levels apart without
 * colour. Exports draw on white paper unless asked. */
typedef struct
{
  double      level[NAPKIN_N_LEVELS][3];
  double      tensor_core[3];
  double      problem[3];
  double      select[3];
  double      paper[3];     /* the canvas's background */
  double      body[3];      /* operation glyphs, ports, marks, halos behind text */
  double      ink[3];       /* the legend's border */
  double      gpus[3];      /* the level above device memory (docs/multi-gpu.md) */
  const char *hex[NAPKIN_N_LEVELS + 1];   /* the levels, then tensor-core work */
  const char *gpus_hex;
} Palette;

#define RGB(h) { ((h) >> 16 & 255) / 255.0, ((h) >> 8 & 255) / 255.0, ((h) & 255) / 255.0 }

static const Palette light_palette = {
  .level = {
    { 0.10, 0.10, 0.10 },   /* device memory: black */
    { 0.49, 0.31, 0.66 },   /* L2: purple */
    { 0.93, 0.49, 0.10 },   /* shared memory: orange */
    { 0.18, 0.62, 0.27 },   /* registers: green */
  },
  .tensor_core = { 0.16, 0.42, 0.84 },
  .problem = { 0.85, 0.10, 0.10 },
  .select = { 0.21, 0.52, 0.89 },
  .paper = { 0.995, 0.993, 0.985 },
  .body = { 1, 1, 1 },
  .ink = { 0, 0, 0 },
  /* teal: no level's hue (black, purple, orange, green, blue) nor the problems' red */
  .gpus = RGB (0x00838f),
  .hex = { "#1a1a1a", "#7d4fa8", "#ed7d1a", "#2e9e45", "#296bd6" },
  .gpus_hex = "#00838f",
};

static const Palette dark_palette = {
  .level = { RGB (0xe0ded8), RGB (0xc09cf0), RGB (0xffa348), RGB (0x5cd67c) },
  .tensor_core = RGB (0x62a0ea),
  .problem = RGB (0xf66151),
  .select = RGB (0x78aeed),
  .paper = RGB (0x1e1e1e),
  .body = RGB (0x2d2d2d),
  .ink = { 1, 1, 1 },
  .gpus = RGB (0x4dd0e1),
  .hex = { "#e0ded8", "#c09cf0", "#ffa348", "#5cd67c", "#62a0ea" },
  .gpus_hex = "#4dd0e1",
};

static const Palette *
palette_for (const NapkinRenderOptions *options)
{
  return options != NULL && options->dark ? &dark_palette : &light_palette;
}

void
napkin_render_level_rgb (NapkinLevel  level,
                         double      *r,
                         double      *g,
                         double      *b)
{
  g_return_if_fail (level < NAPKIN_N_LEVELS);

  *r = light_palette.level[level][0];
  *g = light_palette.level[level][1];
  *b = light_palette.level[level][2];
}

const char *
napkin_render_level_hex (NapkinLevel level)
{
  g_return_val_if_fail (level < NAPKIN_N_LEVELS, NULL);

  return light_palette.hex[level];
}

const char *
napkin_render_paper_hex (NapkinLevel level,
                         gboolean    dark)
{
  g_return_val_if_fail (level <= NAPKIN_N_LEVELS, NULL);

  return (dark ? &dark_palette : &light_palette)->hex[level];
}

const char *
napkin_render_tensor_core_hex (void)
{
  return light_palette.hex[NAPKIN_N_LEVELS];
}

const char *
napkin_render_gpus_hex (gboolean dark)
{
  return (dark ? &dark_palette : &light_palette)->gpus_hex;
}

/* Dash-dot: unlike every level's border (solid, dotted, dashed). */
static const double gpus_dashes[4] = { 12, 3, 2, 3 };

guint
napkin_render_gpus_dashes (double dashes[4])
{
  memcpy (dashes, gpus_dashes, sizeof gpus_dashes);
  return G_N_ELEMENTS (gpus_dashes);
}

guint
napkin_render_level_dashes (NapkinLevel level,
                            double      dashes[2])
{
  switch (level)
    {
    case NAPKIN_LEVEL_L2:
      dashes[0] = 2; dashes[1] = 3;
      return 2;
    case NAPKIN_LEVEL_SMEM:
      dashes[0] = 9; dashes[1] = 4;
      return 2;
    case NAPKIN_LEVEL_HBM:
    case NAPKIN_LEVEL_REGISTERS:
    case NAPKIN_N_LEVELS:
    default:
      return 0;
    }
}

/* ---------------------------------------------------------------- geometry */

static guint
node_rank (NapkinDiagram *diagram,
           guint          node)
{
  const NapkinTensorType *type = napkin_diagram_node_type (diagram, node);

  return type != NULL && type->valid && type->n_axes > 0 ? type->n_axes : 1;
}

static guint
port_rank (NapkinDiagram *diagram,
           guint          node,
           guint          port)
{
  int src = napkin_diagram_input_source (diagram, node, port);

  return src >= 0 ? node_rank (diagram, src) : 1;
}

static double
kind_width (NapkinOpKind kind)
{
  switch (kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      return 30;
    case NAPKIN_OP_MAP:
      return 52;
    case NAPKIN_OP_SOFTMAX:
      return 44;
    case NAPKIN_OP_REDUCE:
      return 52;
    case NAPKIN_OP_CONTRACT:
      return 64;
    case NAPKIN_OP_NORMALIZE:
      return 60;
    case NAPKIN_OP_REARRANGE:
    case NAPKIN_OP_MASK:
      return 52;
    case NAPKIN_N_OPS:
    default:
      return 48;
    }
}

static guint
input_slots (NapkinDiagram    *diagram,
             guint             n,
             const NapkinNode *node)
{
  guint n_in = napkin_op_n_inputs (node);
  guint slots = 0;

  for (guint p = 0; p < n_in; p++)
    slots += port_rank (diagram, n, p) + (p > 0 ? 1 : 0);
  return slots;
}

/* The geometry of a diagram, computed once per generation of the diagram and kept
 * on it, so that drawing and hit-testing cost no more than reading arrays. */
typedef struct
{
  guint64     generation;
  guint       n_nodes;
  guint       n_regions;
  NapkinRect *node_rects;
  NapkinLevel *node_levels;
  NapkinRect *region_rects;
  guint8     *members;      /* n_regions × n_nodes: region r holds node n */
  guint       n_wires;
  int        *wire_from;    /* node indices, -1 when the wire cannot be drawn */
  int        *wire_to;
  double     *wire_ends;    /* x1, y1, x2, y2 per wire */
  gboolean    has_gpus;     /* the diagram has a gpus region: gpus_rect is its box */
  NapkinRect  gpus_rect;
} Layout;

static void
layout_free (gpointer data)
{
  Layout *layout = data;

  g_free (layout->node_rects);
  g_free (layout->node_levels);
  g_free (layout->region_rects);
  g_free (layout->members);
  g_free (layout->wire_from);
  g_free (layout->wire_to);
  g_free (layout->wire_ends);
  g_free (layout);
}

static void
compute_node_rect (NapkinDiagram *diagram,
                   guint          n,
                   NapkinRect    *rect)
{
  const NapkinNode *node = napkin_diagram_node (diagram, n);
  guint slots = MAX (input_slots (diagram, n, node), 2);

  if (node->kind != NAPKIN_OP_OUTPUT)
    slots = MAX (slots, node_rank (diagram, n));
  rect->x = node->x;
  rect->y = node->y;
  rect->width = kind_width (node->kind);
  rect->height = slots * STRAND + 2 * PAD;
}

/* inner nests in outer: a proper subset of its operations, or the same set at a
 * faster level. */
static gboolean
region_is_inside (NapkinDiagram *diagram,
                  Layout        *layout,
                  guint          inner,
                  guint          outer)
{
  const NapkinRegion *ri = napkin_diagram_region (diagram, inner);
  const NapkinRegion *ro = napkin_diagram_region (diagram, outer);
  const guint8 *mi = layout->members + (gsize) inner * layout->n_nodes;
  const guint8 *mo = layout->members + (gsize) outer * layout->n_nodes;
  guint count_i = 0, count_o = 0;

  if (inner == outer)
    return FALSE;
  for (guint n = 0; n < layout->n_nodes; n++)
    {
      if (mi[n] && !mo[n])
        return FALSE;
      count_i += mi[n];
      count_o += mo[n];
    }
  if (count_i == 0)
    return FALSE;
  return count_i < count_o || ri->level > ro->level;
}

static void
compute_region_rect (NapkinDiagram *diagram,
                     Layout        *layout,
                     guint          r,
                     NapkinRect    *rect)
{
  const NapkinRegion *region = napkin_diagram_region (diagram, r);
  const guint8 *members = layout->members + (gsize) r * layout->n_nodes;
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;
  guint nested = 0;
  double pad, min_w;

  if (region->has_rect)
    {
      rect->x = region->x;
      rect->y = region->y;
      rect->width = region->width;
      rect->height = region->height;
      return;
    }

  for (guint n = 0; n < layout->n_nodes; n++)
    {
      const NapkinRect *nr = &layout->node_rects[n];

      if (!members[n])
        continue;
      x0 = MIN (x0, nr->x);
      y0 = MIN (y0, nr->y - LABEL_H);
      x1 = MAX (x1, nr->x + nr->width);
      y1 = MAX (y1, nr->y + nr->height);
    }
  if (x0 > x1)
    {
      rect->x = rect->y = 0;
      rect->width = REGION_MIN_W;
      rect->height = 80;
      return;
    }

  for (guint o = 0; o < layout->n_regions; o++)
    if (region_is_inside (diagram, layout, o, r))
      nested++;

  pad = REGION_PAD + REGION_NEST * nested;
  rect->x = x0 - pad;
  rect->y = y0 - pad - REGION_TOP - REGION_TOP * nested;
  rect->width = x1 - x0 + 2 * pad;
  rect->height = y1 - rect->y + pad;
  min_w = REGION_MIN_W + 2 * REGION_NEST * nested;
  if (rect->width < min_w)
    {
      rect->x -= (min_w - rect->width) / 2;
      rect->width = min_w;
    }
}

/* The gpus region's box: its own rectangle, else around its operations and every
 * region inside it, one margin further out than they are (it is the outermost). */
static void
compute_gpus_rect (NapkinDiagram *diagram,
                   Layout        *layout,
                   NapkinRect    *rect)
{
  const NapkinRegion *gr = napkin_diagram_get_gpus (diagram)->region;
  double x0 = G_MAXDOUBLE, y0 = G_MAXDOUBLE, x1 = -G_MAXDOUBLE, y1 = -G_MAXDOUBLE;

  if (gr->has_rect)
    {
      *rect = (NapkinRect) { gr->x, gr->y, gr->width, gr->height };
      return;
    }
  for (guint n = 0; n < layout->n_nodes; n++)
    {
      const NapkinRect *nr = &layout->node_rects[n];

      if (!napkin_region_has_node (gr, napkin_diagram_node (diagram, n)->id))
        continue;
      x0 = MIN (x0, nr->x);
      y0 = MIN (y0, nr->y - LABEL_H);
      x1 = MAX (x1, nr->x + nr->width);
      y1 = MAX (y1, nr->y + nr->height);
    }
  for (guint r = 0; r < layout->n_regions; r++)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, r);
      const NapkinRect *rr = &layout->region_rects[r];
      gboolean inside = region->nodes->len > 0;

      for (guint i = 0; i < region->nodes->len && inside; i++)
        inside = napkin_region_has_node (gr, g_ptr_array_index (region->nodes, i));
      if (!inside)
        continue;
      x0 = MIN (x0, rr->x);
      y0 = MIN (y0, rr->y);
      x1 = MAX (x1, rr->x + rr->width);
      y1 = MAX (y1, rr->y + rr->height);
    }
  if (x0 > x1)
    {
      *rect = (NapkinRect) { 0, 0, REGION_MIN_W, 80 };
      return;
    }
  rect->x = x0 - REGION_PAD;
  rect->y = y0 - REGION_PAD - REGION_TOP;
  rect->width = MAX (x1 - x0 + 2 * REGION_PAD, REGION_MIN_W);
  rect->height = y1 - rect->y + REGION_PAD;
}

static gboolean port_point_in (NapkinDiagram *diagram, guint n, int port, const NapkinRect *rect,
                               double *x, double *y);

static Layout *
ensure_layout (NapkinDiagram *diagram)
{
  static GQuark quark;
  Layout *layout;
  guint64 generation = napkin_diagram_get_generation (diagram);

  if (quark == 0)
    quark = g_quark_from_static_string ("napkin-render-layout");
  layout = g_object_get_qdata (G_OBJECT (diagram), quark);
  if (layout != NULL && layout->generation == generation)
    return layout;

  layout = g_new0 (Layout, 1);
  layout->generation = generation;
  layout->n_nodes = napkin_diagram_n_nodes (diagram);
  layout->n_regions = napkin_diagram_n_regions (diagram);
  layout->node_rects = g_new (NapkinRect, layout->n_nodes + 1);
  layout->node_levels = g_new0 (NapkinLevel, layout->n_nodes + 1);
  layout->region_rects = g_new (NapkinRect, layout->n_regions + 1);
  layout->members = g_new0 (guint8, (gsize) layout->n_regions * layout->n_nodes + 1);

  for (guint n = 0; n < layout->n_nodes; n++)
    compute_node_rect (diagram, n, &layout->node_rects[n]);
  for (guint r = 0; r < layout->n_regions; r++)
    {
      const NapkinRegion *region = napkin_diagram_region (diagram, r);

      for (guint i = 0; i < region->nodes->len; i++)
        {
          int n = napkin_diagram_find_node (diagram, g_ptr_array_index (region->nodes, i));

          if (n < 0)
            continue;
          layout->members[(gsize) r * layout->n_nodes + n] = 1;
          /* The innermost level: the fastest region holding the node. */
          if (region->level > layout->node_levels[n])
            layout->node_levels[n] = region->level;
        }
    }
  for (guint r = 0; r < layout->n_regions; r++)
    compute_region_rect (diagram, layout, r, &layout->region_rects[r]);
  layout->has_gpus = napkin_diagram_get_gpus (diagram) != NULL;
  if (layout->has_gpus)
    compute_gpus_rect (diagram, layout, &layout->gpus_rect);

  layout->n_wires = napkin_diagram_n_wires (diagram);
  layout->wire_from = g_new (int, layout->n_wires + 1);
  layout->wire_to = g_new (int, layout->n_wires + 1);
  layout->wire_ends = g_new0 (double, 4 * (gsize) layout->n_wires + 1);
  for (guint w = 0; w < layout->n_wires; w++)
    {
      const NapkinWire *wire = napkin_diagram_wire (diagram, w);
      int f = napkin_diagram_find_node (diagram, wire->from);
      int t = napkin_diagram_find_node (diagram, wire->to);
      double *e = &layout->wire_ends[4 * w];

      layout->wire_from[w] = layout->wire_to[w] = -1;
      if (f < 0 || t < 0
          || !port_point_in (diagram, f, -1, &layout->node_rects[f], &e[0], &e[1])
          || !port_point_in (diagram, t, wire->port, &layout->node_rects[t], &e[2], &e[3]))
        continue;
      layout->wire_from[w] = f;
      layout->wire_to[w] = t;
    }

  g_object_set_qdata_full (G_OBJECT (diagram), quark, layout, layout_free);
  return layout;
}

void
napkin_render_node_rect (NapkinDiagram *diagram,
                         guint          n,
                         NapkinRect    *rect)
{
  Layout *layout = ensure_layout (diagram);

  g_return_if_fail (n < layout->n_nodes);
  *rect = layout->node_rects[n];
}

static gboolean
port_point_in (NapkinDiagram    *diagram,
               guint             n,
               int               port,
               const NapkinRect *rect,
               double           *x,
               double           *y)
{
  const NapkinNode *node = napkin_diagram_node (diagram, n);
  guint n_in = napkin_op_n_inputs (node);
  guint slots, used, start = 0;

  if (port < 0)
    {
      if (node->kind == NAPKIN_OP_OUTPUT)
        return FALSE;
      *x = rect->x + rect->width;
      *y = rect->y + rect->height / 2;
      return TRUE;
    }
  if ((guint) port >= n_in)
    return FALSE;

  slots = (guint) lround ((rect->height - 2 * PAD) / STRAND);
  used = input_slots (diagram, n, node);
  for (int p = 0; p < port; p++)
    start += port_rank (diagram, n, p) + 1;
  *x = rect->x;
  *y = rect->y + PAD + (slots - used) * STRAND / 2 + (start + port_rank (diagram, n, port) / 2.0) * STRAND;
  return TRUE;
}

gboolean
napkin_render_port_point (NapkinDiagram *diagram,
                          guint          n,
                          int            port,
                          double        *x,
                          double        *y)
{
  Layout *layout = ensure_layout (diagram);

  g_return_val_if_fail (n < layout->n_nodes, FALSE);
  return port_point_in (diagram, n, port, &layout->node_rects[n], x, y);
}

void
napkin_render_region_rect (NapkinDiagram *diagram,
                           guint          r,
                           NapkinRect    *rect)
{
  Layout *layout = ensure_layout (diagram);

  g_return_if_fail (r < layout->n_regions);
  *rect = layout->region_rects[r];
}

gboolean
napkin_render_gpus_rect (NapkinDiagram *diagram,
                         NapkinRect    *rect)
{
  Layout *layout = ensure_layout (diagram);

  if (layout->has_gpus)
    *rect = layout->gpus_rect;
  return layout->has_gpus;
}

NapkinLevel
napkin_render_node_level (NapkinDiagram *diagram,
                          guint          n)
{
  Layout *layout = ensure_layout (diagram);

  g_return_val_if_fail (n < layout->n_nodes, NAPKIN_LEVEL_HBM);
  return layout->node_levels[n];
}

static inline gboolean
layout_holds (const Layout *layout,
              guint         r,
              int           n)
{
  return n >= 0 && (guint) n < layout->n_nodes && layout->members[(gsize) r * layout->n_nodes + n];
}

static void
rect_union (NapkinRect       *a,
            const NapkinRect *b)
{
  double x1 = MAX (a->x + a->width, b->x + b->width);
  double y1 = MAX (a->y + a->height, b->y + b->height);

  a->x = MIN (a->x, b->x);
  a->y = MIN (a->y, b->y);
  a->width = x1 - a->x;
  a->height = y1 - a->y;
}

void
napkin_render_bounds (NapkinDiagram *diagram,
                      NapkinRect    *rect)
{
  gboolean any = FALSE;

  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));

  *rect = (NapkinRect) { 0, 0, 0, 0 };
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      NapkinRect nr;

      napkin_render_node_rect (diagram, n, &nr);
      /* the label above, dtype tags below and text spilling to the sides */
      nr.x -= 16;
      nr.width += 32;
      nr.y -= LABEL_H + 2;
      nr.height += LABEL_H + 18;
      if (!any)
        *rect = nr;
      else
        rect_union (rect, &nr);
      any = TRUE;
    }
  for (guint r = 0; r < napkin_diagram_n_regions (diagram); r++)
    {
      NapkinRect rr;

      napkin_render_region_rect (diagram, r, &rr);
      rr.height += 12;
      if (!any)
        *rect = rr;
      else
        rect_union (rect, &rr);
      any = TRUE;
    }
  {
    NapkinRect gr;

    if (napkin_render_gpus_rect (diagram, &gr))
      {
        gr.height += 12;
        if (!any)
          *rect = gr;
        else
          rect_union (rect, &gr);
      }
  }
}

static void
wire_ends (NapkinDiagram *diagram,
           guint          w,
           double        *x1,
           double        *y1,
           double        *x2,
           double        *y2,
           int           *from)
{
  Layout *layout = ensure_layout (diagram);
  const double *e = &layout->wire_ends[4 * w];

  *from = layout->wire_from[w];
  *x1 = e[0];
  *y1 = e[1];
  *x2 = e[2];
  *y2 = e[3];
}

static void
bezier_point (double  x1,
              double  y1,
              double  x2,
              double  y2,
              double  t,
              double *x,
              double *y)
{
  double dx = MAX (30.0, fabs (x2 - x1) / 2);
  double cx1 = x1 + dx, cx2 = x2 - dx;
  double u = 1 - t;

  *x = u * u * u * x1 + 3 * u * u * t * cx1 + 3 * u * t * t * cx2 + t * t * t * x2;
  *y = u * u * u * y1 + 3 * u * u * t * y1 + 3 * u * t * t * y2 + t * t * t * y2;
}

NapkinHit
napkin_render_hit (NapkinDiagram *diagram,
                   double         x,
                   double         y,
                   double         tolerance)
{
  NapkinHit hit = { NAPKIN_HIT_NONE, -1, 0 };
  guint n_nodes, n_regions;
  double reach = PORT_R + 3 + tolerance;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), hit);

  n_nodes = napkin_diagram_n_nodes (diagram);
  n_regions = napkin_diagram_n_regions (diagram);

  /* Ports first: they sit on the glyph's edge. Later nodes are drawn on top. */
  for (guint i = n_nodes; i-- > 0;)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, i);
      guint n_in = napkin_op_n_inputs (node);
      double px, py;

      if (napkin_render_port_point (diagram, i, -1, &px, &py) && hypot (px - x, py - y) <= reach)
        return (NapkinHit) { NAPKIN_HIT_OUTPUT_PORT, (int) i, 0 };
      for (guint p = 0; p < n_in; p++)
        if (napkin_render_port_point (diagram, i, p, &px, &py) && hypot (px - x, py - y) <= reach)
          return (NapkinHit) { NAPKIN_HIT_INPUT_PORT, (int) i, p };
    }

  for (guint i = n_nodes; i-- > 0;)
    {
      NapkinRect r;

      napkin_render_node_rect (diagram, i, &r);
      if (x >= r.x - tolerance && x <= r.x + r.width + tolerance
          && y >= r.y - LABEL_H && y <= r.y + r.height + tolerance)
        return (NapkinHit) { NAPKIN_HIT_NODE, (int) i, 0 };
    }

  for (guint i = n_regions; i-- > 0;)
    {
      NapkinRect r;

      napkin_render_region_rect (diagram, i, &r);
      if (x >= r.x + r.width - HANDLE - tolerance && x <= r.x + r.width + tolerance
          && y >= r.y + r.height - HANDLE - tolerance && y <= r.y + r.height + tolerance)
        return (NapkinHit) { NAPKIN_HIT_REGION_HANDLE, (int) i, 0 };
    }
  {
    NapkinRect r;

    if (napkin_render_gpus_rect (diagram, &r)
        && x >= r.x + r.width - HANDLE - tolerance && x <= r.x + r.width + tolerance
        && y >= r.y + r.height - HANDLE - tolerance && y <= r.y + r.height + tolerance)
      return (NapkinHit) { NAPKIN_HIT_GPUS_HANDLE, 0, 0 };
  }

  for (guint w = napkin_diagram_n_wires (diagram); w-- > 0;)
    {
      double x1, y1, x2, y2, half;
      int from;

      wire_ends (diagram, w, &x1, &y1, &x2, &y2, &from);
      if (from < 0)
        continue;
      half = node_rank (diagram, from) * STRAND / 2 + tolerance;
      if (x < MIN (x1, x2) - half || x > MAX (x1, x2) + half
          || y < MIN (y1, y2) - half || y > MAX (y1, y2) + half)
        continue;
      for (guint s = 0; s <= 24; s++)
        {
          double bx, by;

          bezier_point (x1, y1, x2, y2, s / 24.0, &bx, &by);
          if (fabs (bx - x) <= MAX (4.0, tolerance) && fabs (by - y) <= half)
            return (NapkinHit) { NAPKIN_HIT_WIRE, (int) w, 0 };
        }
    }

  /* A region is picked by its title line or its border, so that a drag inside it
   * can still start a rubber band. Inner regions first. */
  for (guint i = n_regions; i-- > 0;)
    {
      NapkinRect r;
      gboolean inside, near_border;

      napkin_render_region_rect (diagram, i, &r);
      inside = x >= r.x - tolerance && x <= r.x + r.width + tolerance
               && y >= r.y - tolerance && y <= r.y + r.height + tolerance;
      near_border = fabs (x - r.x) <= 4 + tolerance || fabs (x - r.x - r.width) <= 4 + tolerance
                    || fabs (y - r.y) <= 4 + tolerance || fabs (y - r.y - r.height) <= 4 + tolerance
                    || (y - r.y) <= REGION_TOP - 4;
      if (inside && near_border)
        return (NapkinHit) { NAPKIN_HIT_REGION, (int) i, 0 };
    }
  /* the gpus region last: it is the outermost */
  {
    NapkinRect r;

    if (napkin_render_gpus_rect (diagram, &r))
      {
        gboolean inside = x >= r.x - tolerance && x <= r.x + r.width + tolerance
                          && y >= r.y - tolerance && y <= r.y + r.height + tolerance;
        gboolean near_border = fabs (x - r.x) <= 4 + tolerance || fabs (x - r.x - r.width) <= 4 + tolerance
                               || fabs (y - r.y) <= 4 + tolerance || fabs (y - r.y - r.height) <= 4 + tolerance
                               || (y - r.y) <= REGION_TOP - 4;

        if (inside && near_border)
          return (NapkinHit) { NAPKIN_HIT_GPUS, 0, 0 };
      }
  }

  return hit;
}

/* ---------------------------------------------------------------- drawing */

typedef struct
{
  cairo_t              *cr;
  NapkinDiagram        *diagram;
  guint                 n_nodes;
  NapkinLevel          *levels;      /* per node */
  NapkinRect           *rects;       /* per node */
  const NapkinNode    **nodes;       /* per node: read once, not through the accessors per pass */
  guint                 n_regions;
  NapkinLevel          *region_levels;
  gboolean             *bad_nodes;
  gboolean             *bad_wires;
  gboolean             *bad_regions;
  NapkinRect            clip;        /* what this surface shows, in document units */
  NapkinRect            frame;       /* the whole frame's (a band's clip is less) */
  double                scale;       /* device pixels per document unit */
  gboolean              screen;      /* an image surface for the canvas: take shortcuts */
  const Palette        *pal;
  Layout               *layout;
} DrawContext;

/* Text smaller than about 4 pixels is noise on screen and costs most of a frame:
 * below these scales the canvas leaves it out (exports draw at scale 1). */
#define SCALE_STRAND_LABELS 0.55
#define SCALE_DETAILS       0.45
#define SCALE_STRANDS       0.30   /* strands 3 px apart: below, a wire is one band */
#define SCALE_LABELS        0.30

static void
set_rgb (cairo_t      *cr,
         const double  rgb[3],
         double        alpha)
{
  cairo_set_source_rgba (cr, rgb[0], rgb[1], rgb[2], alpha);
}

/* A translucent colour over paper. On screen it is blended with the paper here
 * and drawn opaque: Cairo composites a translucent source row by row, half again
 * the cost of an opaque one, and over paper or a pale tint the two look alike.
 * Vector exports keep the translucent colour. */
static void
set_rgb_over_paper (DrawContext  *ctx,
                    const double  rgb[3],
                    double        alpha)
{
  cairo_t *cr = ctx->cr;

  if (!ctx->screen)
    {
      cairo_set_source_rgba (cr, rgb[0], rgb[1], rgb[2], alpha);
      return;
    }
  cairo_set_source_rgb (cr, alpha * rgb[0] + (1 - alpha) * ctx->pal->paper[0],
                        alpha * rgb[1] + (1 - alpha) * ctx->pal->paper[1],
                        alpha * rgb[2] + (1 - alpha) * ctx->pal->paper[2]);
}

static gboolean
rects_overlap (const NapkinRect *a,
               const NapkinRect *b)
{
  return !(b->x > a->x + a->width || b->x + b->width < a->x || b->y > a->y + a->height || b->y + b->height < a->y);
}

static gboolean
visible (DrawContext      *ctx,
         const NapkinRect *r,
         double            margin)
{
  NapkinRect grown = { r->x - margin, r->y - margin, r->width + 2 * margin, r->height + 2 * margin };

  return rects_overlap (&ctx->clip, &grown);
}

typedef enum
{
  FONT_NORMAL,
  FONT_SMALL,
  FONT_BOLD,
  FONT_LEGEND,
  N_FONTS
} Font;

typedef struct
{
  PangoLayout     *layout;
  int              width;
  int              height;
  cairo_surface_t *mask;        /* the text rasterised at mask_scale, or NULL */
  double           mask_scale;
} Text;

/* A strand label: its shaped text and top-left corner. */
typedef struct
{
  const Text *text;
  double      x, y;
  gboolean    bad;
} StrandLabel;

/* No character of the small font is wider than this many units per byte of UTF-8,
 * so a label's width is bounded before its text is looked up. */
#define LABEL_MAX_W_PER_BYTE 16.0

static void
text_free (gpointer data)
{
  Text *text = data;

  g_object_unref (text->layout);
  g_clear_pointer (&text->mask, cairo_surface_destroy);
  g_free (text);
}

/* Shaped text, kept between frames: shaping is most of the cost of a label. The
 * layouts come from one context with unhinted metrics, so they draw the same at
 * any zoom. Bands of one frame are drawn on several threads (see
 * napkin_render_draw_view): every use of the cache, of its Pango objects and of a
 * text's mask holds text_lock, and entries are dropped only between frames
 * (text_cache_trim), so a Text stays valid for the frame that looked it up. */
G_LOCK_DEFINE_STATIC (text_lock);
static GHashTable *text_cache;

static void
text_cache_trim (void)
{
  G_LOCK (text_lock);
  if (text_cache != NULL && g_hash_table_size (text_cache) > 20000)
    g_hash_table_remove_all (text_cache);
  G_UNLOCK (text_lock);
}

static const Text *
text_lookup (Font        font,
             const char *string)
{
  static const char *font_names[N_FONTS] = { "Sans 9.5", "Sans 8", "Sans Bold 9.5", "Sans 8" };
  static PangoFontDescription *fonts[N_FONTS];
  static PangoContext *context;
  char stack_key[128];
  g_autofree char *heap_key = NULL;
  const char *key;
  Text *text;
  g_autofree char *drawable = napkin_text_drawable (string);

  if (drawable != NULL)
    string = drawable;
  G_LOCK (text_lock);
  if (text_cache == NULL)
    {
      cairo_font_options_t *options = cairo_font_options_create ();

      context = pango_font_map_create_context (pango_cairo_font_map_get_default ());
      cairo_font_options_set_hint_metrics (options, CAIRO_HINT_METRICS_OFF);
      cairo_font_options_set_hint_style (options, CAIRO_HINT_STYLE_NONE);
      pango_cairo_context_set_font_options (context, options);
      cairo_font_options_destroy (options);
      for (guint i = 0; i < N_FONTS; i++)
        fonts[i] = pango_font_description_from_string (font_names[i]);
      text_cache = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, text_free);
    }

  if ((gsize) g_snprintf (stack_key, sizeof stack_key, "%d\x1f%s", font, string) < sizeof stack_key)
    key = stack_key;
  else
    key = heap_key = g_strdup_printf ("%d\x1f%s", font, string);

  text = g_hash_table_lookup (text_cache, key);
  if (text != NULL)
    {
      G_UNLOCK (text_lock);
      return text;
    }

  text = g_new0 (Text, 1);
  text->layout = pango_layout_new (context);
  pango_layout_set_font_description (text->layout, fonts[font]);
  pango_layout_set_text (text->layout, string, -1);
  pango_layout_get_pixel_size (text->layout, &text->width, &text->height);
  g_hash_table_insert (text_cache, g_strdup (key), text);
  G_UNLOCK (text_lock);
  return text;
}

/* Shows shaped text at the current point. On an image surface without rotation
 * the text is rasterised once per zoom and then only composited, which is what
 * keeps a frame of hundreds of labels cheap; vector surfaces get real text. */
static void
show_text (cairo_t    *cr,
           gboolean    screen,
           const Text *const_text,
           double      x,
           double      y)
{
  Text *text = (Text *) const_text;
  cairo_surface_t *mask;
  cairo_matrix_t m;
  double dx = x, dy = y, scale;

  cairo_get_matrix (cr, &m);
  if (!screen || m.xy != 0 || m.yx != 0 || m.xx != m.yy || m.xx <= 0 || m.xx > 8)
    {
      cairo_move_to (cr, x, y);
      G_LOCK (text_lock);
      pango_cairo_show_layout (cr, text->layout);
      G_UNLOCK (text_lock);
      cairo_new_path (cr);
      return;
    }

  scale = m.xx;
  G_LOCK (text_lock);
  if (text->mask == NULL || fabs (text->mask_scale - scale) > 1e-6)
    {
      cairo_t *mcr;

      g_clear_pointer (&text->mask, cairo_surface_destroy);
      text->mask = cairo_image_surface_create (CAIRO_FORMAT_A8, (int) ceil ((text->width + 2) * scale),
                                               (int) ceil ((text->height + 2) * scale));
      text->mask_scale = scale;
      mcr = cairo_create (text->mask);
      cairo_scale (mcr, scale, scale);
      cairo_move_to (mcr, 1, 1);
      pango_cairo_show_layout (mcr, text->layout);
      cairo_destroy (mcr);
    }
  mask = cairo_surface_reference (text->mask);
  G_UNLOCK (text_lock);

  /* Composite at a whole device pixel, as hinted text would sit. The pixel comes
   * from the transform alone, not the surface's device offset: a band of a frame
   * (napkin_render_draw_view) has the frame's transform and an offset of whole
   * rows, so its text lands where the whole frame's would. */
  cairo_matrix_transform_point (&m, &dx, &dy);
  cairo_save (cr);
  cairo_identity_matrix (cr);
  cairo_mask_surface (cr, mask, floor (dx - scale + 0.5), floor (dy - scale + 0.5));
  cairo_restore (cr);
  cairo_surface_destroy (mask);
}

/* Draws text with its anchor at (x, y): xalign 0 left, 0.5 centre, 1 right; y is the
 * top. A halo keeps it legible over strands. Returns the width. */
static double
draw_text (DrawContext  *ctx,
           Font          font,
           const char   *string,
           double        x,
           double        y,
           double        xalign,
           gboolean      halo,
           const double  rgb[3])
{
  cairo_t *cr = ctx->cr;
  const Text *text = text_lookup (font, string);

  x -= text->width * xalign;
  if (halo)
    {
      set_rgb_over_paper (ctx, ctx->pal->body, 0.85);
      cairo_rectangle (cr, x - 1.5, y + 1, text->width + 3, text->height - 2);
      cairo_fill (cr);
    }
  set_rgb (cr, rgb, 1);
  show_text (cr, ctx->screen, text, x, y);
  return text->width;
}

static double
text_width (DrawContext *ctx,
            Font         font,
            const char  *string)
{
  return text_lookup (font, string)->width;
}

static void
rounded_rect (cairo_t *cr,
              double   x,
              double   y,
              double   w,
              double   h,
              double   r)
{
  /* A quarter circle is one Bézier curve within 0.03 % of the radius; cairo_arc
   * computes the same curve at several times the cost, for every glyph. */
  double k;

  r = MIN (r, MIN (w, h) / 2);
  k = r * 0.5522847498;
  cairo_move_to (cr, x + r, y);
  cairo_line_to (cr, x + w - r, y);
  cairo_curve_to (cr, x + w - r + k, y, x + w, y + r - k, x + w, y + r);
  cairo_line_to (cr, x + w, y + h - r);
  cairo_curve_to (cr, x + w, y + h - r + k, x + w - r + k, y + h, x + w - r, y + h);
  cairo_line_to (cr, x + r, y + h);
  cairo_curve_to (cr, x + r - k, y + h, x, y + h - r + k, x, y + h - r);
  cairo_line_to (cr, x, y + r);
  cairo_curve_to (cr, x, y + r - k, x + r - k, y, x + r, y);
  cairo_close_path (cr);
}

/* A circle as a new sub-path, in four Bézier curves (see rounded_rect). */
static void
circle (cairo_t *cr,
        double   cx,
        double   cy,
        double   r)
{
  double k = r * 0.5522847498;

  cairo_move_to (cr, cx + r, cy);
  cairo_curve_to (cr, cx + r, cy + k, cx + k, cy + r, cx, cy + r);
  cairo_curve_to (cr, cx - k, cy + r, cx - r, cy + k, cx - r, cy);
  cairo_curve_to (cr, cx - r, cy - k, cx - k, cy - r, cx, cy - r);
  cairo_curve_to (cr, cx + k, cy - r, cx + r, cy - k, cx + r, cy);
  cairo_close_path (cr);
}

static void
hexagon (cairo_t *cr,
         double   x,
         double   y,
         double   w,
         double   h)
{
  double e = h / 2;

  cairo_move_to (cr, x + e, y);
  cairo_line_to (cr, x + w - e, y);
  cairo_line_to (cr, x + w, y + h / 2);
  cairo_line_to (cr, x + w - e, y + h);
  cairo_line_to (cr, x + e, y + h);
  cairo_line_to (cr, x, y + h / 2);
  cairo_close_path (cr);
}

/* The path of a box's resize handle, in its bottom-right corner. */
static void
handle_path (cairo_t          *cr,
             const NapkinRect *rect)
{
  cairo_move_to (cr, rect->x + rect->width - 3, rect->y + rect->height - HANDLE);
  cairo_line_to (cr, rect->x + rect->width - 3, rect->y + rect->height - 3);
  cairo_line_to (cr, rect->x + rect->width - HANDLE, rect->y + rect->height - 3);
}

/* The selection halo `grow` outside a box, its corners of `radius`. */
static void
draw_halo (DrawContext      *ctx,
           const NapkinRect *rect,
           double            grow,
           double            radius)
{
  cairo_t *cr = ctx->cr;

  rounded_rect (cr, rect->x - grow, rect->y - grow, rect->width + 2 * grow, rect->height + 2 * grow, radius);
  set_rgb (cr, ctx->pal->select, 0.8);
  cairo_set_line_width (cr, 2.5);
  cairo_stroke (cr);
}

static void
draw_region_body (DrawContext *ctx,
                  guint        r)
{
  cairo_t *cr = ctx->cr;
  const NapkinRegion *region = napkin_diagram_region (ctx->diagram, r);
  NapkinRect rect;
  double dashes[2];
  guint n_dashes;

  napkin_render_region_rect (ctx->diagram, r, &rect);
  if (!visible (ctx, &rect, 4))
    return;
  rounded_rect (cr, rect.x, rect.y, rect.width, rect.height, 10);
  /* An opaque tint (10 % of the level over paper): blending large translucent
   * areas was a third of a frame. A nested region shows its own tint. */
  cairo_set_source_rgb (cr, 0.9 * ctx->pal->body[0] + 0.1 * ctx->pal->level[region->level][0],
                        0.9 * ctx->pal->body[1] + 0.1 * ctx->pal->level[region->level][1],
                        0.9 * ctx->pal->body[2] + 0.1 * ctx->pal->level[region->level][2]);
  cairo_fill_preserve (cr);
  /* Dashes tell levels apart without colour; zoomed far out on screen the title
   * and legend do that, and dashing long borders was a fifth of a frame. */
  n_dashes = ctx->screen && ctx->scale < SCALE_STRANDS ? 0 : napkin_render_level_dashes (region->level, dashes);
  cairo_set_dash (cr, dashes, n_dashes, 0);
  cairo_set_line_width (cr, region->level == NAPKIN_LEVEL_REGISTERS ? 2.5 : 2);
  if (ctx->bad_regions[r])
    set_rgb (cr, ctx->pal->problem, 1);
  else
    set_rgb_over_paper (ctx, ctx->pal->level[region->level], 0.9);
  cairo_stroke (cr);
  cairo_set_dash (cr, NULL, 0, 0);
}

static void
draw_region_labels (DrawContext *ctx,
                    guint        r,
                    gboolean     selected)
{
  cairo_t *cr = ctx->cr;
  const NapkinRegion *region = napkin_diagram_region (ctx->diagram, r);
  const double *rgb = ctx->pal->level[region->level];
  g_autofree char *title = NULL;
  NapkinRect rect;
  double x;

  napkin_render_region_rect (ctx->diagram, r, &rect);
  if (!visible (ctx, &rect, 20))
    return;
  if (ctx->scale < SCALE_LABELS)
    goto handle;
  if (region->stages > 1)
    title = g_strdup_printf (_("%s · %s · %u stages"), _(level_titles[region->level]),
                             region->name, region->stages);
  else
    title = g_strdup_printf ("%s · %s", _(level_titles[region->level]), region->name);
  draw_text (ctx, FONT_BOLD, title, rect.x + 10, rect.y + 11, 0, FALSE, rgb);

  /* Per-axis marks straddle the top edge, where the axes enter the region: a
   * hexagon for a group partition g, a box with a loop arrow for a stream s. */
  x = rect.x + 10;
  for (guint m = 0; m < region->marks->len; m++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);
      g_autofree char *text = NULL;
      double w, h = 16, y = rect.y - h / 2;

      if (mark->kind == NAPKIN_MARK_WHOLE)
        continue;
      if (mark->kind == NAPKIN_MARK_PARALLEL)
        text = g_strdup_printf ("%s  g=%" G_GINT64_FORMAT, mark->axis, mark->tile);
      else
        text = g_strdup_printf ("%s ⟳ s=%" G_GINT64_FORMAT, mark->axis, mark->tile);
      w = text_width (ctx, FONT_SMALL, text) + 14;
      if (mark->kind == NAPKIN_MARK_PARALLEL)
        hexagon (cr, x, y, w, h);
      else
        rounded_rect (cr, x, y, w, h, 3);
      set_rgb (cr, ctx->pal->body, 1);
      cairo_fill_preserve (cr);
      set_rgb (cr, rgb, 1);
      cairo_set_line_width (cr, 1.5);
      cairo_stroke (cr);
      draw_text (ctx, FONT_SMALL, text, x + w / 2, y + 1, 0.5, FALSE, rgb);
      x += w + 6;
    }

  /* Resize handle. */
handle:
  handle_path (cr, &rect);
  set_rgb_over_paper (ctx, rgb, 0.8);
  cairo_set_line_width (cr, 2);
  cairo_stroke (cr);

  if (selected)
    draw_halo (ctx, &rect, 4, 13);
}

/* ---- the gpus region (docs/multi-gpu.md): the outermost box, teal, dash-dot ---- */

static gboolean point_in_rect (const NapkinRect *rect, double x, double y);

static void
draw_gpus_body (DrawContext *ctx)
{
  cairo_t *cr = ctx->cr;
  const double *rgb = ctx->pal->gpus;
  NapkinRect rect;
  double dashes[4];
  guint n_dashes;

  if (!ctx->layout->has_gpus)
    return;
  rect = ctx->layout->gpus_rect;
  if (!visible (ctx, &rect, 4))
    return;
  rounded_rect (cr, rect.x, rect.y, rect.width, rect.height, 14);
  cairo_set_source_rgb (cr, 0.93 * ctx->pal->body[0] + 0.07 * rgb[0],
                        0.93 * ctx->pal->body[1] + 0.07 * rgb[1],
                        0.93 * ctx->pal->body[2] + 0.07 * rgb[2]);
  cairo_fill_preserve (cr);
  n_dashes = ctx->screen && ctx->scale < SCALE_STRANDS ? 0 : napkin_render_gpus_dashes (dashes);
  cairo_set_dash (cr, dashes, n_dashes, 0);
  cairo_set_line_width (cr, 3);
  set_rgb (cr, rgb, 1);
  cairo_stroke (cr);
  cairo_set_dash (cr, NULL, 0, 0);
}

/* "GPUs · tp · f split ×2": the count is the region's, or N when the analysis
 * chooses it. */
static char *
gpus_title (const NapkinGpusRegion *gpus)
{
  const NapkinRegion *region = gpus->region;
  g_autofree char *count = gpus->gpus > 0 ? g_strdup_printf ("×%u", gpus->gpus) : g_strdup ("×N");
  g_autofree char *split = NULL;
  const char *axis = NULL;

  for (guint m = 0; m < region->marks->len; m++)
    if (g_array_index (region->marks, NapkinMark, m).kind == NAPKIN_MARK_PARALLEL)
      axis = g_array_index (region->marks, NapkinMark, m).axis;
  split = axis != NULL ? g_strdup_printf (_("%s split %s"), axis, count)
                       : g_strdup_printf (_("no axis split %s"), count);
  if (gpus->chunks >= 2)
    return g_strdup_printf (_("GPUs · %s · %s · overlap %u × %s"), region->name, split, gpus->chunks,
                            gpus->chunk_axis);
  return g_strdup_printf (_("GPUs · %s · %s"), region->name, split);
}

/* Where a wire crosses the box: the first point of the curve inside it from the
 * tail (into the region) or from the head (out of it), else its middle. */
static void
gpus_crossing (const NapkinRect *rect,
               const double      e[4],
               gboolean          into,
               double           *x,
               double           *y)
{
  for (guint i = 0; i <= 48; i++)
    {
      double t = into ? i / 48.0 : 1 - i / 48.0;

      bezier_point (e[0], e[1], e[2], e[3], t, x, y);
      if (point_in_rect (rect, *x, *y) && i == 0)
        break;   /* the tensor is drawn inside the box: a third of the way along */
      if (point_in_rect (rect, *x, *y))
        return;
    }
  bezier_point (e[0], e[1], e[2], e[3], into ? 0.35 : 0.65, x, y);
}

/* A sharded input or output: "split f" where its wire crosses the box. */
static void
draw_gpus_wire_marks (DrawContext *ctx)
{
  const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (ctx->diagram);
  const double *rgb = ctx->pal->gpus;
  NapkinRect rect;

  if (!ctx->layout->has_gpus || ctx->scale < SCALE_LABELS)
    return;
  rect = ctx->layout->gpus_rect;
  for (guint w = 0; w < ctx->layout->n_wires; w++)
    {
      int from = ctx->layout->wire_from[w], to = ctx->layout->wire_to[w];
      const NapkinNode *end;
      const NapkinPlacement *placement;
      g_autofree char *text = NULL;
      double x, y, tw;

      if (from < 0 || to < 0)
        continue;
      if (ctx->nodes[from]->kind == NAPKIN_OP_INPUT)
        end = ctx->nodes[from];
      else if (ctx->nodes[to]->kind == NAPKIN_OP_OUTPUT)
        end = ctx->nodes[to];
      else
        continue;
      placement = end->tensor ? napkin_gpus_region_placement (gpus, end->tensor) : NULL;
      if (placement == NULL || placement->split == NULL)
        continue;
      gpus_crossing (&rect, &ctx->layout->wire_ends[4 * w], end->kind == NAPKIN_OP_INPUT, &x, &y);
      text = g_strdup_printf (_("split %s"), placement->split);
      tw = text_width (ctx, FONT_SMALL, text) + 10;
      {
        NapkinRect pill = { x - tw / 2, y - 24, tw, 15 };

        if (!visible (ctx, &pill, 2))
          continue;
        rounded_rect (ctx->cr, pill.x, pill.y, pill.width, pill.height, 7);
        set_rgb (ctx->cr, ctx->pal->body, 1);
        cairo_fill_preserve (ctx->cr);
        set_rgb (ctx->cr, rgb, 1);
        cairo_set_line_width (ctx->cr, 1.25);
        cairo_stroke (ctx->cr);
        draw_text (ctx, FONT_SMALL, text, x, pill.y, 0.5, FALSE, rgb);
        /* a tick from the pill down to the wire */
        cairo_move_to (ctx->cr, x, pill.y + pill.height);
        cairo_line_to (ctx->cr, x, y - 3);
        cairo_stroke (ctx->cr);
      }
    }
}

static void
draw_gpus_labels (DrawContext *ctx,
                  gboolean     selected)
{
  cairo_t *cr = ctx->cr;
  const double *rgb = ctx->pal->gpus;
  NapkinRect rect;

  if (!ctx->layout->has_gpus)
    return;
  rect = ctx->layout->gpus_rect;
  if (!visible (ctx, &rect, 20))
    return;
  if (ctx->scale >= SCALE_LABELS)
    {
      g_autofree char *title = gpus_title (napkin_diagram_get_gpus (ctx->diagram));

      draw_text (ctx, FONT_BOLD, title, rect.x + 12, rect.y + 8, 0, TRUE, rgb);
    }
  handle_path (cr, &rect);
  set_rgb (cr, rgb, 0.8);
  cairo_set_line_width (cr, 2);
  cairo_stroke (cr);
  if (selected)
    draw_halo (ctx, &rect, 5, 17);
}

static void
strand_path (cairo_t *cr,
             double   x1,
             double   y1,
             double   x2,
             double   y2)
{
  double dx = MAX (30.0, fabs (x2 - x1) / 2);

  cairo_move_to (cr, x1, y1);
  cairo_curve_to (cr, x1 + dx, y1, x2 - dx, y2, x2, y2);
}

static void band_points (double x1, double y1, double x2, double y2, double pts[8]);
static void polyline_path (cairo_t *cr, const double *pts, guint n);

static void
wire_path (DrawContext *ctx,
           guint        w,
           guint       *rank_out)
{
  double x1, y1, x2, y2;
  int from;
  guint rank;

  wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &from);
  *rank_out = 0;
  if (from < 0)
    return;
  rank = node_rank (ctx->diagram, from);
  *rank_out = rank;
  /* Zoomed far out the strands are closer than three pixels: one band stands for
   * them (see band_points). */
  if (ctx->scale < SCALE_STRANDS)
    {
      double pts[8];

      band_points (x1, y1, x2, y2, pts);
      polyline_path (ctx->cr, pts, 4);
      return;
    }
  for (guint i = 0; i < rank; i++)
    {
      double o = (i - (rank - 1) / 2.0) * STRAND;

      strand_path (ctx->cr, x1, y1 + o, x2, y2 + o);
    }
}

/* Appends a polyline (n points, x and y) to the path. */
static void
polyline_path (cairo_t      *cr,
               const double *pts,
               guint         n)
{
  cairo_move_to (cr, pts[0], pts[1]);
  for (guint i = 1; i < n; i++)
    cairo_line_to (cr, pts[2 * i], pts[2 * i + 1]);
}

/* Liang–Barsky: the part [t0, t1] of the segment (x0, y0) + t·(dx, dy), t in [0, 1],
 * inside rect; FALSE when none is. */
static gboolean
clip_segment (double            x0,
              double            y0,
              double            dx,
              double            dy,
              const NapkinRect *rect,
              double           *t0,
              double           *t1)
{
  double p[4] = { -dx, dx, -dy, dy };
  double q[4] = { x0 - rect->x, rect->x + rect->width - x0, y0 - rect->y, rect->y + rect->height - y0 };

  *t0 = 0;
  *t1 = 1;
  for (guint k = 0; k < 4; k++)
    {
      if (p[k] == 0)
        {
          if (q[k] < 0)
            return FALSE;
        }
      else if (p[k] < 0)
        *t0 = MAX (*t0, q[k] / p[k]);
      else
        *t1 = MIN (*t1, q[k] / p[k]);
    }
  return *t0 < *t1;
}

/* Appends to the path the parts of a polyline (n points, x and y) inside rect,
 * cut where they cross its edges (Liang–Barsky). TRUE when some part is inside. */
static gboolean
polyline_in_rect (cairo_t          *cr,
                  const double     *pts,
                  guint             n,
                  const NapkinRect *rect)
{
  gboolean any = FALSE, pen = FALSE;   /* pen: the path goes on from the last point */

  for (guint i = 0; i + 1 < n; i++)
    {
      double x0 = pts[2 * i], y0 = pts[2 * i + 1];
      double dx = pts[2 * i + 2] - x0, dy = pts[2 * i + 3] - y0;
      double t0, t1;

      if (!clip_segment (x0, y0, dx, dy, rect, &t0, &t1))
        {
          pen = FALSE;
          continue;
        }
      if (!pen || t0 > 0)
        cairo_move_to (cr, x0 + t0 * dx, y0 + t0 * dy);
      cairo_line_to (cr, x0 + t1 * dx, y0 + t1 * dy);
      pen = t1 >= 1;
      any = TRUE;
    }
  return any;
}

/* Appends to the path the parts of a polyline (n points, x and y) outside rect. */
static void
polyline_outside_rect (cairo_t          *cr,
                       const double     *pts,
                       guint             n,
                       const NapkinRect *rect)
{
  gboolean pen = FALSE;   /* pen: the path goes on from the last point */

  for (guint i = 0; i + 1 < n; i++)
    {
      double x0 = pts[2 * i], y0 = pts[2 * i + 1];
      double dx = pts[2 * i + 2] - x0, dy = pts[2 * i + 3] - y0;
      double t0, t1;

      if (!clip_segment (x0, y0, dx, dy, rect, &t0, &t1))
        {
          /* wholly outside */
          if (!pen)
            cairo_move_to (cr, x0, y0);
          cairo_line_to (cr, x0 + dx, y0 + dy);
          pen = TRUE;
          continue;
        }
      if (t0 > 0)
        {
          if (!pen)
            cairo_move_to (cr, x0, y0);
          cairo_line_to (cr, x0 + t0 * dx, y0 + t0 * dy);
        }
      pen = FALSE;
      if (t1 < 1)
        {
          cairo_move_to (cr, x0 + t1 * dx, y0 + t1 * dy);
          cairo_line_to (cr, x0 + dx, y0 + dy);
          pen = TRUE;
        }
    }
}

/* Far out, a wire is a band where its strands would be: a three-segment line
 * where the curve would be. */
static void
band_points (double x1,
             double y1,
             double x2,
             double y2,
             double pts[8])
{
  double dx = MAX (30.0, fabs (x2 - x1) / 2) * 0.5;

  pts[0] = x1;
  pts[1] = y1;
  pts[2] = x1 + dx;
  pts[3] = y1;
  pts[4] = x2 - dx;
  pts[5] = y2;
  pts[6] = x2;
  pts[7] = y2;
}

/* The part of a wire's band (far out) inside rect. */
static gboolean
band_in_rect (DrawContext      *ctx,
              guint             w,
              const NapkinRect *rect)
{
  double x1, y1, x2, y2, pts[8];
  int from;

  wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &from);
  if (from < 0)
    return FALSE;
  band_points (x1, y1, x2, y2, pts);
  return polyline_in_rect (ctx->cr, pts, 4, rect);
}

static gboolean
point_in_rect (const NapkinRect *rect,
               double            x,
               double            y)
{
  return x >= rect->x && x <= rect->x + rect->width && y >= rect->y && y <= rect->y + rect->height;
}

static void
cubic_point (const double c[8],
             double       t,
             double      *x,
             double      *y)
{
  double u = 1 - t;

  *x = u * u * u * c[0] + 3 * u * u * t * c[2] + 3 * u * t * t * c[4] + t * t * t * c[6];
  *y = u * u * u * c[1] + 3 * u * u * t * c[3] + 3 * u * t * t * c[5] + t * t * t * c[7];
}

/* Appends the piece [a, b] of a cubic Bézier curve (de Casteljau). */
static void
cubic_piece (cairo_t      *cr,
             const double  c[8],
             double        a,
             double        b)
{
  double p[8], q[8];

  /* [0, b] first, then its part from a / b on */
  for (guint k = 0; k < 2; k++)
    {
      double p01 = c[k] + b * (c[2 + k] - c[k]), p12 = c[2 + k] + b * (c[4 + k] - c[2 + k]);
      double p23 = c[4 + k] + b * (c[6 + k] - c[4 + k]);
      double p012 = p01 + b * (p12 - p01), p123 = p12 + b * (p23 - p12);

      p[k] = c[k];
      p[2 + k] = p01;
      p[4 + k] = p012;
      p[6 + k] = p012 + b * (p123 - p012);
    }
  a = b > 0 ? a / b : 0;
  for (guint k = 0; k < 2; k++)
    {
      double p01 = p[k] + a * (p[2 + k] - p[k]), p12 = p[2 + k] + a * (p[4 + k] - p[2 + k]);
      double p23 = p[4 + k] + a * (p[6 + k] - p[4 + k]);
      double p012 = p01 + a * (p12 - p01), p123 = p12 + a * (p23 - p12);

      q[k] = p012 + a * (p123 - p012);
      q[2 + k] = p123;
      q[4 + k] = p23;
      q[6 + k] = p[6 + k];
    }
  cairo_move_to (cr, q[0], q[1]);
  cairo_curve_to (cr, q[2], q[3], q[4], q[5], q[6], q[7]);
}

/* Appends the parts of a cubic Bézier curve inside rect (or outside it). The curve
 * is sampled at 32 points and each crossing of the edges is found by bisection; a
 * curve grazing a corner between two samples is taken as not crossing. TRUE when
 * some part was appended. */
static gboolean
cubic_cut (cairo_t          *cr,
           const double      c[8],
           const NapkinRect *rect,
           gboolean          inside)
{
  double start = 0, x, y;
  gboolean in, any = FALSE;

  cubic_point (c, 0, &x, &y);
  in = point_in_rect (rect, x, y);
  for (guint k = 1; k <= 32; k++)
    {
      double lo = (k - 1) / 32.0, hi = k / 32.0;
      gboolean next;

      cubic_point (c, hi, &x, &y);
      next = point_in_rect (rect, x, y);
      if (next == in)
        continue;
      for (guint i = 0; i < 12; i++)
        {
          double mid = (lo + hi) / 2;

          cubic_point (c, mid, &x, &y);
          if (point_in_rect (rect, x, y) == in)
            lo = mid;
          else
            hi = mid;
        }
      if (in == inside)
        {
          cubic_piece (cr, c, start, lo);
          any = TRUE;
        }
      start = hi;
      in = next;
    }
  if (in == inside)
    {
      cubic_piece (cr, c, start, 1);
      any = TRUE;
    }
  return any;
}

/* The parts of a wire's strands inside rect (or outside it). */
static gboolean
strands_cut (DrawContext      *ctx,
             guint             w,
             const NapkinRect *rect,
             gboolean          inside)
{
  double x1, y1, x2, y2, dx;
  int from;
  guint rank;
  gboolean any = FALSE;

  wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &from);
  if (from < 0)
    return FALSE;
  rank = node_rank (ctx->diagram, from);
  dx = MAX (30.0, fabs (x2 - x1) / 2);
  for (guint i = 0; i < rank; i++)
    {
      double o = (i - (rank - 1) / 2.0) * STRAND;
      double c[8] = { x1, y1 + o, x1 + dx, y1 + o, x2 - dx, y2 + o, x2, y2 + o };

      any |= cubic_cut (ctx->cr, c, rect, inside);
    }
  return any;
}

/* The part of a wire (band or strands) outside rect, reaching a device pixel into it. */
static void
wire_outside_rect (DrawContext      *ctx,
                   guint             w,
                   const NapkinRect *rect)
{
  double x1, y1, x2, y2, pts[8], m = 1 / ctx->scale;
  NapkinRect inner = { rect->x + m, rect->y + m, rect->width - 2 * m, rect->height - 2 * m };
  int from;

  wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &from);
  if (from < 0)
    return;
  if (inner.width <= 0 || inner.height <= 0)
    {
      guint rank;

      wire_path (ctx, w, &rank);
      return;
    }
  if (ctx->scale >= SCALE_STRANDS)
    {
      strands_cut (ctx, w, &inner, FALSE);
      return;
    }
  band_points (x1, y1, x2, y2, pts);
  polyline_outside_rect (ctx->cr, pts, 4, &inner);
}

static gboolean
wire_visible (DrawContext *ctx,
              guint        w)
{
  double x1, y1, x2, y2;
  int from;
  NapkinRect r;

  wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &from);
  if (from < 0)
    return FALSE;
  r.x = MIN (x1, x2);
  r.y = MIN (y1, y2);
  r.width = fabs (x2 - x1);
  r.height = fabs (y2 - y1);
  return visible (ctx, &r, 60);
}

/* The wires of a frame: which are drawn, their ends, their colour (a level, or the
 * problem and selection colours) and, on screen, the region a wire is drawn outside of. */
typedef struct
{
  guint     n_wires, n_regions;
  guint8   *shown;
  int      *from, *to;
  int      *base;       /* the level of the fastest region holding both ends */
  int      *outer;      /* the region drawn here only outside of; -1 none; -2 all of it */
  gboolean  cut;        /* on screen: parts inside faster regions are cut out */
  int       selected;
} WireSet;

/* Each wire's colour and, on screen, the region it is drawn outside of. */
static void
wires_classify (DrawContext *ctx,
                WireSet     *ws)
{
  /* A wire takes the colour of the fastest region holding both its ends (black:
   * device memory); problems are red, the selected wire blue. */
  for (guint w = 0; w < ws->n_wires; w++)
    {
      ws->base[w] = NAPKIN_LEVEL_HBM;
      if (!ws->shown[w] || ws->from[w] < 0 || ws->to[w] < 0)
        continue;
      for (guint r = 0; r < ws->n_regions; r++)
        if ((int) ctx->region_levels[r] > ws->base[w]
            && layout_holds (ctx->layout, r, ws->from[w]) && layout_holds (ctx->layout, r, ws->to[w]))
          ws->base[w] = ctx->region_levels[r];
    }
  /* On screen, a wire that enters one region faster than its colour is drawn here
   * only outside it (and a pixel into it, under the region's colour): the part
   * inside is the region's below, and Cairo's cost is in the length rasterised.
   * With several such regions at the outermost level, all of it. */
  for (guint w = 0; w < ws->n_wires; w++)
    {
      NapkinLevel outer_level = NAPKIN_N_LEVELS;

      ws->outer[w] = -1;
      if (!ws->cut || !ws->shown[w] || ctx->bad_wires[w] || (int) w == ws->selected || ws->from[w] < 0 || ws->to[w] < 0)
        continue;
      for (guint r = 0; r < ws->n_regions; r++)
        {
          if ((int) ctx->region_levels[r] <= ws->base[w] || ctx->region_levels[r] > outer_level
              || !(layout_holds (ctx->layout, r, ws->from[w]) || layout_holds (ctx->layout, r, ws->to[w])))
            continue;
          ws->outer[w] = ctx->region_levels[r] == outer_level ? -2 : (int) r;
          outer_level = ctx->region_levels[r];
        }
      /* Decided on the whole frame, not a band's clip: the cut pieces are curves of
       * their own, rasterised a little differently from the whole strand. */
      if (ws->outer[w] >= 0 && !rects_overlap (&ctx->frame, &ctx->layout->region_rects[ws->outer[w]]))
        ws->outer[w] = -1;
    }
}

/* The wires in one stroke per colour: problems, the selection, then each level. */
static void
wires_stroke (DrawContext   *ctx,
              const WireSet *ws)
{
  cairo_t *cr = ctx->cr;
  guint rank;

  for (int pass = -2; pass < NAPKIN_N_LEVELS; pass++)
    {
      gboolean any = FALSE;

      for (guint w = 0; w < ws->n_wires; w++)
        {
          int kind = ctx->bad_wires[w] ? -2 : (int) w == ws->selected ? -1 : ws->base[w];

          if (!ws->shown[w] || kind != pass)
            continue;
          if (ws->outer[w] >= 0)
            wire_outside_rect (ctx, w, &ctx->layout->region_rects[ws->outer[w]]);
          else
            wire_path (ctx, w, &rank);
          any = TRUE;
        }
      if (!any)
        continue;
      set_rgb (cr, pass == -2 ? ctx->pal->problem : pass == -1 ? ctx->pal->select : ctx->pal->level[pass], 1);
      cairo_stroke (cr);
    }
}

/* Where a wire enters a faster region it takes that region's colour inside it:
 * the change of colour at the border is the transfer (docs/design.md §1b). On screen
 * the parts inside are cut out of the bands and strands here, and every region of
 * a level takes one stroke; vector exports clip each region exactly. */
static void
wires_inside_regions (DrawContext   *ctx,
                      const WireSet *ws)
{
  cairo_t *cr = ctx->cr;
  guint rank;

  for (int level = NAPKIN_LEVEL_L2; level < NAPKIN_N_LEVELS; level++)
    {
      gboolean cut_any = FALSE;
      double width = cairo_get_line_width (cr);

      for (guint r = 0; r < ws->n_regions; r++)
        {
          const NapkinRect *rect = &ctx->layout->region_rects[r];
          gboolean any = FALSE;

          if ((int) ctx->region_levels[r] != level)
            continue;
          if (!visible (ctx, rect, 0))
            continue;
          if (!ws->cut)
            {
              /* The clip first: it consumes the current path. */
              cairo_save (cr);
              cairo_rectangle (cr, rect->x, rect->y, rect->width, rect->height);
              cairo_clip (cr);
            }
          for (guint w = 0; w < ws->n_wires; w++)
            {
              gboolean holds_from = layout_holds (ctx->layout, r, ws->from[w]);
              gboolean holds_to = layout_holds (ctx->layout, r, ws->to[w]);

              if (!ws->shown[w] || ctx->bad_wires[w] || (int) w == ws->selected || ws->base[w] >= level
                  || !(holds_from || holds_to))
                continue;
              if (ws->cut && ctx->scale >= SCALE_STRANDS)
                cut_any |= strands_cut (ctx, w, rect, TRUE);
              else if (ws->cut)
                cut_any |= band_in_rect (ctx, w, rect);
              else
                wire_path (ctx, w, &rank);
              any = TRUE;
            }
          if (ws->cut)
            continue;
          if (any)
            {
              /* A little wider than the black strand under it, so no dark fringe. */
              set_rgb (cr, ctx->pal->level[level], 1);
              cairo_set_line_width (cr, width + 0.6);
              cairo_stroke (cr);
            }
          cairo_restore (cr);
          cairo_new_path (cr);
        }
      if (cut_any)
        {
          set_rgb (cr, ctx->pal->level[level], 1);
          cairo_set_line_width (cr, width + 0.6);
          cairo_stroke (cr);
          cairo_set_line_width (cr, width);
        }
    }
}

/* Each strand is labelled with its axis and size at the middle of the wire:
 * the halos first in one fill, then the text. Each label is looked up once, and
 * one outside the visible rectangle is neither looked up twice nor composited. */
static void
draw_strand_labels (DrawContext *ctx)
{
  cairo_t *cr = ctx->cr;
  guint n_wires = napkin_diagram_n_wires (ctx->diagram);
  g_autoptr (GArray) labels = g_array_new (FALSE, FALSE, sizeof (StrandLabel));

  for (guint w = 0; w < n_wires; w++)
    {
      double x1, y1, x2, y2;
      int f;
      const NapkinTensorType *type;

      /* Every wire, not only those shown: a long label reaches further from
       * its wire than the margin that culls wires. */
      wire_ends (ctx->diagram, w, &x1, &y1, &x2, &y2, &f);
      if (f < 0)
        continue;
      type = napkin_diagram_node_type (ctx->diagram, f);
      if (type == NULL || !type->valid)
        continue;
      for (guint i = 0; i < type->n_axes; i++)
        {
          const NapkinAxis *axis = napkin_diagram_axis (ctx->diagram, type->axes[i]);
          double o = (i - (type->n_axes - 1) / 2.0) * STRAND;
          char text[NAPKIN_MAX_NAME_LEN + 32];
          StrandLabel label;
          NapkinRect r;
          gsize len;

          /* Above or below the visible rectangle (a label is less than 20 units tall). */
          r.y = (y1 + y2) / 2 + o - 6;
          r.height = 20;
          if (r.y - 2 > ctx->clip.y + ctx->clip.height || r.y + r.height + 2 < ctx->clip.y)
            continue;
          r.x = (x1 + x2) / 2;
          len = g_snprintf (text, sizeof text, "%s %" G_GINT64_FORMAT, axis->name, axis->size);
          /* A bound on the width first: the lookup is the expensive part. */
          r.x -= len * LABEL_MAX_W_PER_BYTE / 2;
          r.width = len * LABEL_MAX_W_PER_BYTE;
          if (!visible (ctx, &r, 2))
            continue;
          label.text = text_lookup (FONT_SMALL, text);
          label.x = (x1 + x2) / 2 - label.text->width / 2.0;
          label.y = r.y;
          label.bad = ctx->bad_wires[w];
          r.x = label.x - 1.5;
          r.width = label.text->width + 3;
          r.height = label.text->height;
          if (visible (ctx, &r, 2))
            g_array_append_val (labels, label);
        }
    }
  for (guint i = 0; i < labels->len; i++)
    {
      const StrandLabel *label = &g_array_index (labels, StrandLabel, i);

      cairo_rectangle (cr, label->x - 1.5, label->y + 1, label->text->width + 3, label->text->height - 2);
    }
  if (labels->len > 0)
    {
      set_rgb_over_paper (ctx, ctx->pal->body, 0.85);
      cairo_fill (cr);
    }
  for (guint i = 0; i < labels->len; i++)
    {
      const StrandLabel *label = &g_array_index (labels, StrandLabel, i);

      set_rgb (cr, label->bad ? ctx->pal->problem : ctx->pal->level[NAPKIN_LEVEL_HBM], 1);
      show_text (cr, ctx->screen, label->text, label->x, label->y);
    }
}

/* A copy is a dot where the wire splits. */
static void
draw_copy_dots (DrawContext *ctx)
{
  cairo_t *cr = ctx->cr;
  guint rank;

  for (guint n = 0; n < ctx->n_nodes; n++)
    {
      guint n_consumers = 0;
      double px, py;

      napkin_diagram_consumers (ctx->diagram, n, &n_consumers);
      if (n_consumers < 2 || !visible (ctx, &ctx->rects[n], 10)
          || !port_point_in (ctx->diagram, n, -1, &ctx->rects[n], &px, &py))
        continue;
      rank = node_rank (ctx->diagram, n);
      for (guint i = 0; i < rank; i++)
        {
          circle (cr, px + 8, py + (i - (rank - 1) / 2.0) * STRAND, 2.5);
        }
      set_rgb (cr, ctx->pal->level[ctx->levels[n]], 1);
      cairo_fill (cr);
    }
}

/* Strokes are batched by colour: Cairo's cost is per stroke far more than per
 * segment, and a canvas of 500 operations has thousands of strands. */
static void
draw_wires (DrawContext               *ctx,
            const NapkinRenderOptions *options)
{
  cairo_t *cr = ctx->cr;
  guint n_wires = napkin_diagram_n_wires (ctx->diagram);
  g_autofree guint8 *shown = g_new0 (guint8, n_wires + 1);
  g_autofree int *from = g_new (int, n_wires + 1);
  g_autofree int *to = g_new (int, n_wires + 1);
  g_autofree int *base = g_new (int, n_wires + 1);
  g_autofree int *outer = g_new (int, n_wires + 1);
  WireSet ws = { n_wires, napkin_diagram_n_regions (ctx->diagram), shown, from, to, base, outer, ctx->screen,
                 options ? options->selected_wire : -1 };

  /* Far out, a wire is a band as wide as two strands apart. */
  cairo_set_line_width (cr, ctx->scale < SCALE_STRANDS ? STRAND * 1.5 : 1.6);
  cairo_set_line_cap (cr, CAIRO_LINE_CAP_BUTT);

  for (guint w = 0; w < n_wires; w++)
    {
      shown[w] = wire_visible (ctx, w);
      from[w] = ctx->layout->wire_from[w];
      to[w] = ctx->layout->wire_to[w];
    }
  wires_classify (ctx, &ws);
  wires_stroke (ctx, &ws);
  wires_inside_regions (ctx, &ws);
  if (ctx->scale >= SCALE_STRAND_LABELS)
    draw_strand_labels (ctx);
  draw_copy_dots (ctx);
}

static void
glyph_path (cairo_t          *cr,
            const NapkinNode *node,
            const NapkinRect *r)
{
  double x = r->x, y = r->y, w = r->width, h = r->height;

  switch (node->kind)
    {
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
      /* A tag pointing along the flow: a tensor in device memory. */
      cairo_move_to (cr, x, y);
      cairo_line_to (cr, x + w - 8, y);
      cairo_line_to (cr, x + w, y + h / 2);
      cairo_line_to (cr, x + w - 8, y + h);
      cairo_line_to (cr, x, y + h);
      cairo_close_path (cr);
      break;
    case NAPKIN_OP_MAP:
      /* A small labelled arrow sitting on the wire. */
      cairo_move_to (cr, x, y + 6);
      cairo_line_to (cr, x + w - 12, y + 6);
      cairo_line_to (cr, x + w, y + h / 2);
      cairo_line_to (cr, x + w - 12, y + h - 6);
      cairo_line_to (cr, x, y + h - 6);
      cairo_close_path (cr);
      break;
    case NAPKIN_OP_SOFTMAX:
      /* A triangle pointing against the flow. */
      cairo_move_to (cr, x, y + h / 2);
      cairo_line_to (cr, x + w, y);
      cairo_line_to (cr, x + w, y + h);
      cairo_close_path (cr);
      break;
    case NAPKIN_OP_REDUCE:
      cairo_move_to (cr, x, y);
      cairo_line_to (cr, x + w, y + h * 0.3);
      cairo_line_to (cr, x + w, y + h * 0.7);
      cairo_line_to (cr, x, y + h);
      cairo_close_path (cr);
      break;
    case NAPKIN_OP_CONTRACT:
    case NAPKIN_OP_NORMALIZE:
    case NAPKIN_OP_REARRANGE:
    case NAPKIN_N_OPS:
    default:
      rounded_rect (cr, x, y, w, h, 6);
      break;
    }
}

/* The axes that meet in a contraction's cup: those of the inputs the output lacks. */
static char *
contracted_axes (NapkinDiagram *diagram,
                 guint          n)
{
  const NapkinTensorType *out = napkin_diagram_node_type (diagram, n);
  GString *s = g_string_new (NULL);

  for (guint p = 0; p < 2; p++)
    {
      int src = napkin_diagram_input_source (diagram, n, p);
      const NapkinTensorType *in;

      if (src < 0)
        continue;
      in = napkin_diagram_node_type (diagram, src);
      if (in == NULL || !in->valid)
        continue;
      for (guint i = 0; i < in->n_axes; i++)
        {
          const char *name = napkin_diagram_axis (diagram, in->axes[i])->name;

          if ((out && out->valid && napkin_tensor_type_has_axis (out, in->axes[i])) || strstr (s->str, name))
            continue;
          g_string_append_printf (s, "%s%s", s->len ? "," : "", name);
        }
    }
  return g_string_free (s, FALSE);
}

static char *
node_detail (NapkinDiagram    *diagram,
             guint             n,
             const NapkinNode *node)
{
  switch (node->kind)
    {
    case NAPKIN_OP_CONTRACT:
      {
        g_autofree char *axes = contracted_axes (diagram, n);

        return g_strdup_printf ("Σ %s", axes);
      }
    case NAPKIN_OP_MAP:
      return g_strdup (napkin_fn_info (node->fn)->name);
    case NAPKIN_OP_REDUCE:
      return g_strdup_printf ("%s %s", napkin_reduce_to_string (node->reduce), node->axis ? node->axis : "?");
    case NAPKIN_OP_SOFTMAX:
      return g_strdup (node->axis ? node->axis : "?");
    case NAPKIN_OP_NORMALIZE:
      return g_strdup_printf ("%s %s", node->norm == NAPKIN_NORM_RMSNORM ? "RMS" : "LN",
                              node->axis ? node->axis : "?");
    case NAPKIN_OP_REARRANGE:
      return g_strdup ("⤨");
    case NAPKIN_OP_MASK:
      /* causal: the triangle says it; a window its extent; a tensor mask a box with M */
      if (node->mask == NAPKIN_MASK_WINDOW)
        {
          g_autofree char *l = node->left >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, node->left) : g_strdup ("∞");
          g_autofree char *r = node->right >= 0 ? g_strdup_printf ("%" G_GINT64_FORMAT, node->right) : g_strdup ("∞");

          return g_strdup_printf ("−%s…+%s", l, r);
        }
      return node->mask == NAPKIN_MASK_TENSOR ? g_strdup ("+M") : NULL;
    case NAPKIN_OP_INPUT:
    case NAPKIN_OP_OUTPUT:
    case NAPKIN_N_OPS:
    default:
      return NULL;
    }
}

/* The colour of a node's outline: its level, or blue for a contraction on chip
 * (tensor cores), or red for a problem. */
static const double *
node_rgb (DrawContext      *ctx,
          guint             n,
          const NapkinNode *node)
{
  if (ctx->bad_nodes[n])
    return ctx->pal->problem;
  if (node->kind == NAPKIN_OP_CONTRACT && ctx->levels[n] >= NAPKIN_LEVEL_SMEM)
    return ctx->pal->tensor_core;
  return ctx->pal->level[ctx->levels[n]];
}

static gboolean
port_connected (DrawContext *ctx,
                guint        n,
                int          port)
{
  if (port < 0)
    {
      guint n_consumers = 0;

      napkin_diagram_consumers (ctx->diagram, n, &n_consumers);
      return n_consumers > 0;
    }
  return napkin_diagram_input_source (ctx->diagram, n, port) >= 0;
}

/* Every visible node, in passes that each end in one fill or stroke per colour. */
/* The y of strand `axis` where it enters port 0 of node n, or FALSE. */
static gboolean
strand_y (DrawContext      *ctx,
          guint             n,
          const NapkinNode *node,
          const NapkinRect *r,
          int               axis,
          double           *y)
{
  int src = napkin_diagram_input_source (ctx->diagram, n, 0);
  const NapkinTensorType *t = src >= 0 ? napkin_diagram_node_type (ctx->diagram, src) : NULL;
  guint slots = (guint) lround ((r->height - 2 * PAD) / STRAND);
  guint used = input_slots (ctx->diagram, n, node);

  if (t == NULL || !t->valid || axis < 0)
    return FALSE;
  for (guint i = 0; i < t->n_axes; i++)
    if (t->axes[i] == (guint) axis)
      {
        *y = r->y + PAD + (slots - used) * STRAND / 2 + (i + 0.5) * STRAND;
        return TRUE;
      }
  return FALSE;
}

/* A mask as the papers draw it: a triangle spanning the query and key strands for a
 * causal mask (the kept half of the q×k square), a band between them for a window. */
static gboolean
mask_mark (DrawContext      *ctx,
           guint             n,
           const NapkinNode *node,
           const NapkinRect *r)
{
  cairo_t *cr = ctx->cr;
  double yq, yk, x0 = r->x + 8, x1 = r->x + r->width - 8;

  if (!strand_y (ctx, n, node, r, napkin_diagram_find_axis (ctx->diagram, node->rows), &yq)
      || !strand_y (ctx, n, node, r, napkin_diagram_find_axis (ctx->diagram, node->axis), &yk))
    {
      /* the strands are not known (an unconnected mask): the glyph in the box */
      yq = r->y + 6;
      yk = r->y + r->height - 6;
    }
  /* at least two strands tall, centred on the pair, so it reads at a glance */
  if (fabs (yk - yq) < 2 * STRAND)
    {
      double mid = (yq + yk) / 2, half = yk >= yq ? STRAND : -STRAND;

      yq = MAX (r->y + 4, MIN (r->y + r->height - 4, mid - half));
      yk = MAX (r->y + 4, MIN (r->y + r->height - 4, mid + half));
    }
  if (node->mask == NAPKIN_MASK_CAUSAL)
    {
      cairo_move_to (cr, x0, yq);
      cairo_line_to (cr, x1, yk);
      cairo_line_to (cr, x0, yk);
      cairo_close_path (cr);
    }
  else
    {
      double w = (x1 - x0) / 3;

      cairo_move_to (cr, x0, yq);
      cairo_line_to (cr, x0 + w, yq);
      cairo_line_to (cr, x1, yk);
      cairo_line_to (cr, x1 - w, yk);
      cairo_close_path (cr);
    }
  return TRUE;
}

/* Glyph colours, one stroke each: the levels, tensor-core work, problems (draw_nodes). */
#define N_NODE_COLOURS 6

/* Selection halos. */
static void
nodes_selection (DrawContext               *ctx,
                 const guint8              *shown,
                 const NapkinRenderOptions *options)
{
  cairo_t *cr = ctx->cr;
  gboolean any;

  any = FALSE;
  for (guint n = 0; n < ctx->n_nodes; n++)
    if (shown[n] && options && options->selected_nodes && n < options->n_selected_nodes
        && options->selected_nodes[n])
      {
        const NapkinRect *r = &ctx->rects[n];

        rounded_rect (cr, r->x - 5, r->y - 5, r->width + 10, r->height + 10, 9);
        any = TRUE;
      }
  if (any)
    {
      set_rgb (cr, ctx->pal->select, 0.30);
      cairo_fill (cr);
    }
}

/* Glyph bodies: tensors filled with their level, operations white. Far out on
 * screen, operations are solid silhouettes in their colour instead (one fill
 * rather than a fill and a stroke). */
static void
nodes_bodies (DrawContext  *ctx,
              const guint8 *shown,
              gboolean      far)
{
  cairo_t *cr = ctx->cr;
  gboolean any;

  for (int c = far ? 0 : -1; c < NAPKIN_N_LEVELS; c++)
    {
      any = FALSE;
      for (guint n = 0; n < ctx->n_nodes; n++)
        {
          const NapkinNode *node = ctx->nodes[n];
          gboolean tensor = node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT;

          if (!shown[n] || (c < 0 ? tensor : !tensor || (int) ctx->levels[n] != c))
            continue;
          glyph_path (cr, node, &ctx->rects[n]);
          any = TRUE;
        }
      if (!any)
        continue;
      if (c < 0)
        set_rgb (cr, ctx->pal->body, 1);
      else
        set_rgb_over_paper (ctx, ctx->pal->level[c], 0.85);
      cairo_fill (cr);
    }
}

/* The marks inside the glyphs of one colour (a mask's triangle or band, a
 * transpose's crossing, a contraction's cup) as one path; FALSE where there is none. */
static gboolean
node_marks_path (DrawContext  *ctx,
                 const guint8 *shown,
                 const double *colour)
{
  cairo_t *cr = ctx->cr;
  gboolean marks = FALSE;

  for (guint n = 0; n < ctx->n_nodes && ctx->scale >= SCALE_LABELS; n++)
    {
      const NapkinNode *node = ctx->nodes[n];
      const NapkinRect *r = &ctx->rects[n];
      double ax, ay, bx, by;

      if (!shown[n] || node_rgb (ctx, n, node) != colour)
        continue;
      if (node->kind == NAPKIN_OP_MASK && node->mask != NAPKIN_MASK_TENSOR)
        marks |= mask_mark (ctx, n, node, r);
      else if (node->kind == NAPKIN_OP_REARRANGE)
        {
          cairo_move_to (cr, r->x + 8, r->y + 8);
          cairo_line_to (cr, r->x + r->width - 8, r->y + r->height - 8);
          cairo_move_to (cr, r->x + 8, r->y + r->height - 8);
          cairo_line_to (cr, r->x + r->width - 8, r->y + 8);
          marks = TRUE;
        }
      else if (node->kind == NAPKIN_OP_CONTRACT
               && port_point_in (ctx->diagram, n, 0, &ctx->rects[n], &ax, &ay)
               && port_point_in (ctx->diagram, n, 1, &ctx->rects[n], &bx, &by))
        {
          double cx = r->x + r->width * 0.42;

          cairo_move_to (cr, ax, ay);
          cairo_curve_to (cr, cx, ay, cx, by, bx, by);
          marks = TRUE;
        }
    }
  return marks;
}

/* Outlines, and the marks inside glyphs (a contraction's cup, a transpose's
 * crossing), per colour. */
static void
nodes_outlines (DrawContext         *ctx,
                const guint8        *shown,
                const double *const *colours)
{
  cairo_t *cr = ctx->cr;
  gboolean far = ctx->screen && ctx->scale < SCALE_STRANDS;

  for (guint c = 0; c < N_NODE_COLOURS; c++)
    {
      gboolean marks, any = FALSE;

      for (guint n = 0; n < ctx->n_nodes; n++)
        {
          const NapkinNode *node = ctx->nodes[n];

          if (!shown[n] || node_rgb (ctx, n, node) != colours[c])
            continue;
          glyph_path (cr, node, &ctx->rects[n]);
          any = TRUE;
        }
      if (any)
        {
          set_rgb (cr, colours[c], 1);
          cairo_set_line_width (cr, 1.8);
          if (far)
            cairo_fill (cr);
          else
            cairo_stroke (cr);
        }

      marks = node_marks_path (ctx, shown, colours[c]);
      if (marks)
        {
          /* over the body of the glyph: blending with it is exact */
          if (ctx->screen)
            cairo_set_source_rgb (cr, 0.45 * colours[c][0] + 0.55 * ctx->pal->body[0],
                                  0.45 * colours[c][1] + 0.55 * ctx->pal->body[1],
                                  0.45 * colours[c][2] + 0.55 * ctx->pal->body[2]);
          else
            set_rgb (cr, colours[c], 0.45);
          cairo_set_line_width (cr, 1.3);
          cairo_stroke (cr);
        }
    }
}

/* Ports: filled when connected, hollow and red-rimmed when not. */
static void
nodes_ports (DrawContext         *ctx,
             const guint8        *shown,
             const double *const *colours)
{
  cairo_t *cr = ctx->cr;
  gboolean any;

  for (guint c = 0; c <= N_NODE_COLOURS && ctx->scale >= SCALE_LABELS; c++)
    {
      gboolean hollow = c == N_NODE_COLOURS;

      any = FALSE;
      for (guint n = 0; n < ctx->n_nodes; n++)
        {
          const NapkinNode *node = ctx->nodes[n];
          guint n_in;

          if (!shown[n] || (!hollow && node_rgb (ctx, n, node) != colours[c]))
            continue;
          n_in = napkin_op_n_inputs (node);
          for (int p = -1; p < (int) n_in; p++)
            {
              double px, py;

              if (port_connected (ctx, n, p) == hollow
                  || !port_point_in (ctx->diagram, n, p, &ctx->rects[n], &px, &py))
                continue;
              circle (cr, px, py, hollow ? PORT_R : PORT_R + 0.6);
              any = TRUE;
            }
        }
      if (!any)
        continue;
      /* A filled port needs no outline; a hollow one is white with a red rim. */
      if (!hollow)
        {
          set_rgb (cr, colours[c], 1);
          cairo_fill (cr);
          continue;
        }
      set_rgb (cr, ctx->pal->body, 1);
      cairo_fill_preserve (cr);
      set_rgb (cr, ctx->pal->problem, 1);
      cairo_set_line_width (cr, 1.2);
      cairo_stroke (cr);
    }
}

/* The longest label drawn, in characters: a label of thousands drew in full, 892 MB
 * of SVG from 16 MB of labels (docs/security.md, "Drawing"). */
#define MAX_LABEL_CHARS 120

const char *
napkin_render_drawn_label (const char  *label,
                           char       **owned)
{
  const char *cut;

  if (strlen (label) <= MAX_LABEL_CHARS || g_utf8_strlen (label, MAX_LABEL_CHARS * 4 + 4) <= MAX_LABEL_CHARS)
    return label;
  cut = g_utf8_offset_to_pointer (label, MAX_LABEL_CHARS);
  *owned = g_strdup_printf ("%.*s…", (int) (cut - label), label);
  return *owned;
}

/* Text: the detail inside, the label above, a tensor's element type below. */
static void
nodes_text (DrawContext  *ctx,
            const guint8 *shown)
{
  cairo_t *cr = ctx->cr;

  for (guint n = 0; n < ctx->n_nodes; n++)
    {
      const NapkinNode *node = ctx->nodes[n];
      const NapkinRect *r = &ctx->rects[n];
      gboolean tensor = node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT;

      if (!shown[n])
        continue;
      if (ctx->scale >= SCALE_DETAILS)
        {
          g_autofree char *detail = node_detail (ctx->diagram, n, node);
          double dx = r->x + r->width / 2;

          if (node->kind == NAPKIN_OP_SOFTMAX)
            dx = r->x + r->width * 0.66;
          else if (node->kind == NAPKIN_OP_MAP)
            dx = r->x + (r->width - 10) / 2;
          if (detail != NULL)
            draw_text (ctx, FONT_SMALL, detail, dx, r->y + r->height / 2 - 7, 0.5, FALSE, node_rgb (ctx, n, node));
        }
      if (ctx->scale >= SCALE_LABELS)
        {
          g_autofree char *cut = NULL;

          draw_text (ctx, tensor ? FONT_BOLD : FONT_NORMAL,
                     napkin_render_drawn_label (node->label && *node->label ? node->label : node->id, &cut),
                     r->x + r->width / 2, r->y - LABEL_H, 0.5, FALSE,
                     ctx->bad_nodes[n] ? ctx->pal->problem : ctx->pal->level[NAPKIN_LEVEL_HBM]);
          if (tensor || node->has_dtype)
            {
              const NapkinTensorType *type = napkin_diagram_node_type (ctx->diagram, n);

              if (type != NULL && type->valid)
                draw_text (ctx, FONT_SMALL, napkin_dtype_to_string (type->dtype),
                           r->x + r->width / 2, r->y + r->height + 1, 0.5, FALSE, ctx->pal->level[NAPKIN_LEVEL_HBM]);
            }
        }
      if (ctx->bad_nodes[n])
        {
          circle (cr, r->x + r->width, r->y, 7);
          set_rgb (cr, ctx->pal->problem, 1);
          cairo_fill (cr);
          draw_text (ctx, FONT_BOLD, "!", r->x + r->width, r->y - 8, 0.5, FALSE, light_palette.body);
        }
    }
}

/* The operations and tensors, one fill or stroke per colour for each pass. */
static void
draw_nodes (DrawContext               *ctx,
            const NapkinRenderOptions *options)
{
  g_autofree guint8 *shown = g_new0 (guint8, ctx->n_nodes + 1);
  const double *colours[N_NODE_COLOURS] = {
    ctx->pal->level[NAPKIN_LEVEL_HBM], ctx->pal->level[NAPKIN_LEVEL_L2], ctx->pal->level[NAPKIN_LEVEL_SMEM],
    ctx->pal->level[NAPKIN_LEVEL_REGISTERS], ctx->pal->tensor_core, ctx->pal->problem,
  };
  gboolean far = ctx->screen && ctx->scale < SCALE_STRANDS;

  for (guint n = 0; n < ctx->n_nodes; n++)
    shown[n] = visible (ctx, &ctx->rects[n], LABEL_H + 40);

  nodes_selection (ctx, shown, options);
  nodes_bodies (ctx, shown, far);
  nodes_outlines (ctx, shown, colours);
  nodes_ports (ctx, shown, colours);
  nodes_text (ctx, shown);
}

/* Draws the diagram; safe on several threads at once for one diagram once
 * prepare_frame has run (everything below only reads the diagram and its layout). */
static void
draw_diagram (cairo_t                   *cr,
              NapkinDiagram             *diagram,
              const NapkinRenderOptions *options,
              const NapkinRect          *frame)
{
  DrawContext ctx = { 0 };
  guint n_regions, n_wires;

  ctx.cr = cr;
  ctx.pal = palette_for (options);
  ctx.diagram = diagram;
  ctx.layout = ensure_layout (diagram);
  ctx.n_nodes = napkin_diagram_n_nodes (diagram);
  n_regions = napkin_diagram_n_regions (diagram);
  n_wires = napkin_diagram_n_wires (diagram);
  {
    double x0, y0, x1, y1;

    cairo_clip_extents (cr, &x0, &y0, &x1, &y1);
    ctx.clip = (NapkinRect) { x0, y0, x1 - x0, y1 - y0 };
  }
  ctx.frame = frame != NULL ? *frame : ctx.clip;
  {
    double ux = 1, uy = 0;

    cairo_user_to_device_distance (cr, &ux, &uy);
    ctx.scale = hypot (ux, uy);
  }

  ctx.levels = g_new (NapkinLevel, ctx.n_nodes + 1);
  ctx.rects = g_new (NapkinRect, ctx.n_nodes + 1);
  ctx.nodes = g_new (const NapkinNode *, ctx.n_nodes + 1);
  ctx.n_regions = n_regions;
  ctx.region_levels = g_new (NapkinLevel, n_regions + 1);
  ctx.bad_nodes = g_new0 (gboolean, ctx.n_nodes + 1);
  ctx.bad_wires = g_new0 (gboolean, n_wires + 1);
  ctx.bad_regions = g_new0 (gboolean, n_regions + 1);

  for (guint n = 0; n < ctx.n_nodes; n++)
    {
      ctx.levels[n] = ctx.layout->node_levels[n];
      ctx.rects[n] = ctx.layout->node_rects[n];
      ctx.nodes[n] = napkin_diagram_node (diagram, n);
    }
  for (guint r = 0; r < n_regions; r++)
    ctx.region_levels[r] = napkin_diagram_region (diagram, r)->level;
  if (options != NULL && options->problems != NULL)
    for (guint i = 0; i < options->problems->len; i++)
      {
        const NapkinProblem *problem = g_ptr_array_index (options->problems, i);

        if (problem->kind == NAPKIN_ITEM_NODE && problem->index < ctx.n_nodes)
          ctx.bad_nodes[problem->index] = TRUE;
        else if (problem->kind == NAPKIN_ITEM_WIRE && problem->index < n_wires)
          ctx.bad_wires[problem->index] = TRUE;
        else if (problem->kind == NAPKIN_ITEM_REGION && problem->index < n_regions)
          ctx.bad_regions[problem->index] = TRUE;
      }

  /* A quarter pixel of flattening error is invisible and halves the cost of
   * stroking thousands of curves. */
  cairo_save (cr);
  cairo_set_tolerance (cr, 0.25);
  /* On screen (image surfaces), 4×4-sample antialiasing: coverage computation of
   * thousands of thin curved strokes was most of a frame at full quality, and at
   * these line widths the two look the same. Vector exports are unaffected. */
  ctx.screen = cairo_surface_get_type (cairo_get_target (cr)) == CAIRO_SURFACE_TYPE_IMAGE
               && !(options && options->full_quality);
  if (ctx.screen)
    cairo_set_antialias (cr, CAIRO_ANTIALIAS_FAST);

  /* Outer (slower) regions first so that nested ones sit on top; the GPUs' box
   * holds them all. */
  draw_gpus_body (&ctx);
  for (int level = 0; level < NAPKIN_N_LEVELS; level++)
    for (guint r = 0; r < n_regions; r++)
      if ((int) napkin_diagram_region (diagram, r)->level == level)
        draw_region_body (&ctx, r);

  draw_wires (&ctx, options);

  draw_nodes (&ctx, options);

  for (guint r = 0; r < n_regions; r++)
    draw_region_labels (&ctx, r, options && options->selected_region == (int) r);
  draw_gpus_labels (&ctx, options && options->selected_gpus);
  draw_gpus_wire_marks (&ctx);
  cairo_restore (cr);

  g_free (ctx.levels);
  g_free (ctx.rects);
  g_free (ctx.nodes);
  g_free (ctx.region_levels);
  g_free (ctx.bad_nodes);
  g_free (ctx.bad_wires);
  g_free (ctx.bad_regions);
}

/* What drawing computes lazily, computed on the calling thread before a frame:
 * the diagram's derived tables, the layout, and room in the text cache. */
static void
prepare_frame (NapkinDiagram *diagram)
{
  napkin_diagram_topo_order (diagram);
  ensure_layout (diagram);
  text_cache_trim ();
}

void
napkin_render_draw (cairo_t                   *cr,
                    NapkinDiagram             *diagram,
                    const NapkinRenderOptions *options)
{
  g_return_if_fail (cr != NULL);
  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));

  prepare_frame (diagram);
  draw_diagram (cr, diagram, options, NULL);
}

/* ---------------------------------------------------------------- canvas view */

static void draw_legend (cairo_t *cr, double x, double y, gboolean screen, const Palette *pal);

double
napkin_render_strand_label_size (void)
{
  /* FONT_SMALL, "Sans 8": 8 points at Pango's 96 dots per inch */
  return 8.0 * 96.0 / 72.0;
}

void
napkin_render_fit_view (NapkinDiagram    *diagram,
                        int               width,
                        int               height,
                        double            min_zoom,
                        double            max_zoom,
                        NapkinCanvasView *view)
{
  NapkinRect bounds;
  double zoom;

  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));
  g_return_if_fail (view != NULL);

  napkin_render_bounds (diagram, &bounds);
  if (bounds.width <= 0 || bounds.height <= 0)
    bounds = (NapkinRect) { 0, 0, 400, 300 };
  /* Leave room for the legend in the bottom-left corner. */
  zoom = MIN ((width - 40) / bounds.width, (height - 150) / bounds.height);
  zoom = CLAMP (zoom, min_zoom, max_zoom);
  view->zoom = zoom;
  view->origin_x = bounds.x + bounds.width / 2 - width / 2.0 / zoom;
  view->origin_y = bounds.y + bounds.height / 2 - (height - 110) / 2.0 / zoom;
}

/* The paper and the diagram as the canvas shows them, without the legend. frame:
 * what the whole frame shows, in document units, when cr draws a band of it. */
static void
draw_paper_and_diagram (cairo_t                   *cr,
                        NapkinDiagram             *diagram,
                        const NapkinRenderOptions *options,
                        const NapkinCanvasView    *view,
                        const NapkinRect          *frame)
{
  cairo_save (cr);
  set_rgb (cr, palette_for (options)->paper, 1);
  cairo_paint (cr);
  cairo_scale (cr, view->zoom, view->zoom);
  cairo_translate (cr, -view->origin_x, -view->origin_y);
  draw_diagram (cr, diagram, options, frame);
  cairo_restore (cr);
}

/* A frame on an image surface is drawn in horizontal bands, one per thread: on
 * screen a frame is rasterisation (Cairo and pixman, one core each). A band is a
 * surface over its rows of the frame's pixels with a device offset of whole rows,
 * drawn with the frame's own transform, so its pixels are the ones one pass makes. */
#define MAX_BANDS      4
#define MIN_BAND_ROWS 96

typedef struct
{
  cairo_surface_t           *surface;   /* the band's rows */
  NapkinRect                 frame;     /* the whole frame, in document units */
  double                     scale;     /* device pixels per canvas pixel */
  NapkinDiagram             *diagram;
  const NapkinRenderOptions *options;
  const NapkinCanvasView    *view;
  GMutex                    *lock;      /* the frame's, over *pending */
  GCond                     *done;
  guint                     *pending;
} Band;

static void
draw_band (Band *band)
{
  cairo_t *cr = cairo_create (band->surface);

  cairo_scale (cr, band->scale, band->scale);
  draw_paper_and_diagram (cr, band->diagram, band->options, band->view, &band->frame);
  cairo_destroy (cr);
  cairo_surface_flush (band->surface);
}

static void
band_thread (gpointer data,
             gpointer user_data)
{
  Band *band = data;

  draw_band (band);
  g_mutex_lock (band->lock);
  if (--*band->pending == 0)
    g_cond_signal (band->done);
  g_mutex_unlock (band->lock);
  (void) user_data;
}

/* How many bands this frame can take: an unclipped, unrotated image surface drawn
 * for the screen, at least MIN_BAND_ROWS rows each. *scale is its zoom-free scale. */
static guint
band_count (cairo_t                   *cr,
            const NapkinRenderOptions *options,
            double                    *scale)
{
  cairo_surface_t *target = cairo_get_target (cr);
  cairo_matrix_t m;
  double x0, y0, x1, y1, sx, sy, ox, oy;
  guint n;
  int rows;

  if ((options != NULL && (options->full_quality || options->threads == 1))
      || cairo_surface_get_type (target) != CAIRO_SURFACE_TYPE_IMAGE
      || (cairo_image_surface_get_format (target) != CAIRO_FORMAT_ARGB32
          && cairo_image_surface_get_format (target) != CAIRO_FORMAT_RGB24))
    return 1;
  cairo_get_matrix (cr, &m);
  cairo_surface_get_device_scale (target, &sx, &sy);
  cairo_surface_get_device_offset (target, &ox, &oy);
  if (m.xy != 0 || m.yx != 0 || m.xx != m.yy || m.xx <= 0 || m.x0 != 0 || m.y0 != 0
      || sx != 1 || sy != 1 || ox != 0 || oy != 0)
    return 1;
  rows = cairo_image_surface_get_height (target);
  cairo_clip_extents (cr, &x0, &y0, &x1, &y1);
  cairo_user_to_device (cr, &x0, &y0);
  cairo_user_to_device (cr, &x1, &y1);
  if (x0 > 0 || y0 > 0 || x1 < cairo_image_surface_get_width (target) || y1 < rows)
    return 1;

  n = options != NULL && options->threads > 0 ? options->threads : g_get_num_processors ();
  n = MIN (n, MAX_BANDS);
  n = MIN (n, (guint) MAX (rows / MIN_BAND_ROWS, 1));
  *scale = m.xx;
  return MAX (n, 1);
}

static GThreadPool *
band_pool (void)
{
  static GThreadPool *pool;

  if (g_once_init_enter (&pool))
    g_once_init_leave (&pool, g_thread_pool_new (band_thread, NULL, MAX_BANDS - 1, FALSE, NULL));
  return pool;
}

void
napkin_render_draw_view (cairo_t                   *cr,
                         NapkinDiagram             *diagram,
                         const NapkinRenderOptions *options,
                         const NapkinCanvasView    *view,
                         int                        width,
                         int                        height)
{
  double lw, lh, scale = 1;
  guint n_bands;

  g_return_if_fail (cr != NULL);
  g_return_if_fail (NAPKIN_IS_DIAGRAM (diagram));
  g_return_if_fail (view != NULL && view->zoom > 0);

  prepare_frame (diagram);
  n_bands = band_count (cr, options, &scale);
  if (n_bands == 1)
    draw_paper_and_diagram (cr, diagram, options, view, NULL);
  else
    {
      cairo_surface_t *target = cairo_get_target (cr);
      guchar *data;
      int stride = cairo_image_surface_get_stride (target);
      int rows = cairo_image_surface_get_height (target);
      Band bands[MAX_BANDS];
      GMutex lock;
      GCond done;
      guint pending = n_bands - 1;
      double units = scale * view->zoom;   /* device pixels per document unit */
      NapkinRect frame = { view->origin_x, view->origin_y, cairo_image_surface_get_width (target) / units,
                           rows / units };

      cairo_surface_flush (target);
      data = cairo_image_surface_get_data (target);
      g_mutex_init (&lock);
      g_cond_init (&done);
      for (guint b = 0; b < n_bands; b++)
        {
          int first = rows * b / n_bands, last = rows * (b + 1) / n_bands;

          bands[b] = (Band) { cairo_image_surface_create_for_data (data + (gsize) first * stride,
                                                                   cairo_image_surface_get_format (target),
                                                                   cairo_image_surface_get_width (target),
                                                                   last - first, stride),
                              frame, scale, diagram, options, view, &lock, &done, &pending };
          cairo_surface_set_device_offset (bands[b].surface, 0, -first);
          if (b > 0)
            g_thread_pool_push (band_pool (), &bands[b], NULL);
        }
      draw_band (&bands[0]);
      g_mutex_lock (&lock);
      while (pending > 0)
        g_cond_wait (&done, &lock);
      g_mutex_unlock (&lock);
      for (guint b = 0; b < n_bands; b++)
        cairo_surface_destroy (bands[b].surface);
      g_cond_clear (&done);
      g_mutex_clear (&lock);
      cairo_surface_mark_dirty (target);
    }

  /* The legend of level colours is always visible. */
  cairo_save (cr);
  napkin_render_legend_size (&lw, &lh);
  draw_legend (cr, 12, height - lh - 12,
               cairo_surface_get_type (cairo_get_target (cr)) == CAIRO_SURFACE_TYPE_IMAGE
               && !(options && options->full_quality), palette_for (options));
  cairo_restore (cr);
  (void) width;
}

/* ---------------------------------------------------------------- legend */

#define LEGEND_ROW 18.0
#define LEGEND_W   200.0
#define LEGEND_TEXT_X 42.0

/* The legend's rows: the levels, tensor-core work, then the level above device
 * memory, last: the outermost. */
#define LEGEND_N_ROWS (NAPKIN_N_LEVELS + 2)

static const char *
legend_title (guint row)
{
  if (row < NAPKIN_N_LEVELS)
    return _(level_titles[row]);
  return row == NAPKIN_N_LEVELS ? _("Tensor-core work") : _("Several GPUs");
}

/* The box and its row height from the rows' shaped text: a font taller or a title
 * wider than the usual ones grows the box, so that every row stays inside it. */
static void
legend_metrics (double *width,
                double *height,
                double *row)
{
  double w = LEGEND_W, r = LEGEND_ROW;

  for (guint i = 0; i < LEGEND_N_ROWS; i++)
    {
      const Text *text = text_lookup (FONT_LEGEND, legend_title (i));

      w = MAX (w, LEGEND_TEXT_X + text->width + 10);
      r = MAX (r, text->height + 4);
    }
  *width = w;
  *row = r;
  *height = LEGEND_N_ROWS * r + 10;
}

void
napkin_render_legend_size (double *width,
                           double *height)
{
  double row;

  legend_metrics (width, height, &row);
}

static void
draw_legend (cairo_t       *cr,
             double         x,
             double         y,
             gboolean       screen,
             const Palette *pal)
{
  DrawContext ctx = { 0 };
  double w, h, row;

  ctx.cr = cr;
  ctx.screen = screen;
  ctx.pal = pal;
  legend_metrics (&w, &h, &row);

  cairo_save (cr);
  rounded_rect (cr, x, y, w, h, 6);
  set_rgb (cr, pal->body, 0.92);
  cairo_fill_preserve (cr);
  set_rgb (cr, pal->ink, 0.25);
  cairo_set_line_width (cr, 1);
  cairo_stroke (cr);

  for (guint i = 0; i < LEGEND_N_ROWS; i++)
    {
      /* a row taller than LEGEND_ROW keeps its swatch and text centred */
      double ry = y + 5 + i * row + (row - LEGEND_ROW) / 2;
      const double *rgb = i < NAPKIN_N_LEVELS ? pal->level[i] : i == NAPKIN_N_LEVELS ? pal->tensor_core : pal->gpus;
      double dashes[4] = { 0 };
      guint n_dashes = i < NAPKIN_N_LEVELS ? napkin_render_level_dashes (i, dashes)
                       : i == NAPKIN_N_LEVELS ? 0 : napkin_render_gpus_dashes (dashes);

      rounded_rect (cr, x + 8, ry + 3, 26, 12, 3);
      set_rgb_over_paper (&ctx, rgb, i == NAPKIN_LEVEL_HBM ? 0.85 : 0.18);
      cairo_fill_preserve (cr);
      set_rgb (cr, rgb, 1);
      cairo_set_dash (cr, dashes, n_dashes, 0);
      cairo_set_line_width (cr, 2);
      cairo_stroke (cr);
      cairo_set_dash (cr, NULL, 0, 0);
      draw_text (&ctx, FONT_LEGEND, legend_title (i), x + LEGEND_TEXT_X, ry + 1, 0, FALSE, rgb);
    }
  cairo_restore (cr);
}

void
napkin_render_draw_legend (cairo_t *cr,
                           double   x,
                           double   y)
{
  g_return_if_fail (cr != NULL);

  draw_legend (cr, x, y, FALSE, &light_palette);
}
