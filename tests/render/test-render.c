/* SPDX-License-Identifier: GPL-3.0-or-later */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <glib/gstdio.h>

#include "napkin-edit.h"
#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-plot.h"
#include "napkin-render.h"
#include "napkin-validate.h"

static const char *examples[] = {
  "matmul", "matmul-tiled", "matmul-nested", "softmax", "layernorm", "mlp", "attention", "flash-attention",
  "attention-causal-gqa", "attention-sliding-window",
};

static NapkinDiagram *
load_example (const char *name)
{
  g_autofree char *file = g_strconcat (name, ".napkin", NULL);
  g_autofree char *path = g_build_filename (g_getenv ("NAPKIN_EXAMPLES_DIR"), file, NULL);
  g_autoptr(GError) error = NULL;
  NapkinDiagram *diagram = napkin_diagram_load_from_file (path, NAPKIN_LOAD_DEFAULT, &error);

  g_assert_no_error (error);
  return diagram;
}

static char *
tmp_path (const char *name)
{
  static char *dir;

  if (dir == NULL)
    dir = g_dir_make_tmp ("napkin-render-XXXXXX", NULL);
  return g_build_filename (dir, name, NULL);
}

/* Pixels of an image close to a colour. */
static guint
count_colour (cairo_surface_t *surface,
              const char      *hex,
              int              tolerance)
{
  int w = cairo_image_surface_get_width (surface);
  int h = cairo_image_surface_get_height (surface);
  int stride = cairo_image_surface_get_stride (surface);
  const guint8 *data;
  guint r, g, b, count = 0;

  cairo_surface_flush (surface);
  data = cairo_image_surface_get_data (surface);
  g_assert_true (sscanf (hex, "#%02x%02x%02x", &r, &g, &b) == 3);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      {
        guint32 px = *(const guint32 *) (data + y * stride + 4 * x);
        int pr = (px >> 16) & 0xff, pg = (px >> 8) & 0xff, pb = px & 0xff;

        if (abs (pr - (int) r) <= tolerance && abs (pg - (int) g) <= tolerance && abs (pb - (int) b) <= tolerance)
          count++;
      }
  return count;
}

/* Antialiased strands blend with the paper: classify by hue instead. 'o' orange
 * (shared memory), 'k' black (device memory). */
static guint
count_hue (cairo_surface_t *surface,
           char             hue)
{
  int w = cairo_image_surface_get_width (surface);
  int h = cairo_image_surface_get_height (surface);
  int stride = cairo_image_surface_get_stride (surface);
  const guint8 *data;
  guint count = 0;

  cairo_surface_flush (surface);
  data = cairo_image_surface_get_data (surface);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      {
        guint32 px = *(const guint32 *) (data + y * stride + 4 * x);
        int r = (px >> 16) & 0xff, g = (px >> 8) & 0xff, b = px & 0xff;

        if (hue == 'o' ? (r > 180 && r - g > 50 && g - b > 30) : (r < 90 && g < 90 && b < 90))
          count++;
      }
  return count;
}

static cairo_surface_t *
draw_example (NapkinDiagram *diagram)
{
  NapkinRect bounds;
  cairo_surface_t *surface;
  cairo_t *cr;

  napkin_render_bounds (diagram, &bounds);
  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, (int) ceil (bounds.width), (int) ceil (bounds.height));
  cr = cairo_create (surface);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_translate (cr, -bounds.x, -bounds.y);
  napkin_render_draw (cr, diagram, NULL);
  g_assert_cmpint (cairo_status (cr), ==, CAIRO_STATUS_SUCCESS);
  cairo_destroy (cr);
  return surface;
}

static guint
pixels_differing (cairo_surface_t *a,
                  cairo_surface_t *b)
{
  int w = cairo_image_surface_get_width (a), h = cairo_image_surface_get_height (a);
  int stride = cairo_image_surface_get_stride (a);
  const guint8 *pa, *pb;
  guint count = 0;

  cairo_surface_flush (a);
  cairo_surface_flush (b);
  g_assert_cmpint (w, ==, cairo_image_surface_get_width (b));
  g_assert_cmpint (h, ==, cairo_image_surface_get_height (b));
  pa = cairo_image_surface_get_data (a);
  pb = cairo_image_surface_get_data (b);
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++)
      count += memcmp (pa + y * stride + 4 * x, pb + y * stride + 4 * x, 4) != 0;
  return count;
}

/* A causal mask draws its triangle from the query strand to the key strand: with
 * the two strands swapped (same layout, same text) it points the other way, so the
 * drawings differ only by the glyph; a window's band likewise. */
static void
test_mask_glyph (void)
{
  const NapkinMaskKind kinds[] = { NAPKIN_MASK_CAUSAL, NAPKIN_MASK_WINDOW };

  for (guint i = 0; i < G_N_ELEMENTS (kinds); i++)
    {
      g_autoptr(NapkinDiagram) d = load_example ("attention-causal-gqa");
      int n = napkin_diagram_find_node (d, "mask");
      NapkinNode *node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, n));
      cairo_surface_t *forward, *swapped;

      node->mask = kinds[i];
      napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, n, node);
      forward = draw_example (d);
      node = napkin_item_copy (NAPKIN_ITEM_NODE, napkin_diagram_node (d, n));
      g_free (node->rows);
      g_free (node->axis);
      node->rows = g_strdup ("k");
      node->axis = g_strdup ("q");
      napkin_diagram_replace_item (d, NAPKIN_ITEM_NODE, n, node);
      swapped = draw_example (d);
      g_assert_cmpuint (pixels_differing (forward, swapped), >, 40);
      cairo_surface_destroy (forward);
      cairo_surface_destroy (swapped);
    }
}

/* Every example draws; its nodes lie inside the bounds; its regions hold their nodes. */
static void
test_every_example (void)
{
  for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
    {
      g_autoptr(NapkinDiagram) diagram = load_example (examples[e]);
      cairo_surface_t *surface;
      NapkinRect bounds;

      napkin_render_bounds (diagram, &bounds);
      for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
        {
          NapkinRect r;

          napkin_render_node_rect (diagram, n, &r);
          g_assert_cmpfloat (r.x, >=, bounds.x);
          g_assert_cmpfloat (r.y, >=, bounds.y);
          g_assert_cmpfloat (r.x + r.width, <=, bounds.x + bounds.width);
          g_assert_cmpfloat (r.y + r.height, <=, bounds.y + bounds.height);
        }
      for (guint i = 0; i < napkin_diagram_n_regions (diagram); i++)
        {
          const NapkinRegion *region = napkin_diagram_region (diagram, i);
          NapkinRect rr;

          napkin_render_region_rect (diagram, i, &rr);
          for (guint k = 0; k < region->nodes->len; k++)
            {
              NapkinRect r;

              napkin_render_node_rect (diagram, napkin_diagram_find_node (diagram, g_ptr_array_index (region->nodes, k)), &r);
              g_assert_cmpfloat (r.x, >, rr.x);
              g_assert_cmpfloat (r.x + r.width, <, rr.x + rr.width);
              g_assert_cmpfloat (r.y, >, rr.y);
              g_assert_cmpfloat (r.y + r.height, <, rr.y + rr.height);
            }
        }
      surface = draw_example (diagram);
      /* Device-memory black is on every diagram (inputs, outputs). */
      g_assert_cmpuint (count_colour (surface, napkin_render_level_hex (NAPKIN_LEVEL_HBM), 12), >, 100);
      if (napkin_diagram_n_regions (diagram) > 0)
        g_assert_cmpuint (count_colour (surface, napkin_render_level_hex (napkin_diagram_region (diagram, 0)->level), 12),
                          >, 100);
      cairo_surface_destroy (surface);
    }
}

/* The canvas's picture (napkin_render_draw_view): the fitted diagram lies inside
 * the widget above the legend, the paper covers the uncleared pixels, and the
 * screen shortcuts (cached text masks, 4×4 antialiasing, opaque pre-blended
 * colours, bands far out) draw what the full-quality path draws, within a
 * level or two per pixel on average — also at two device pixels per pixel, as
 * the canvas draws on a HiDPI screen (text masks are placed in device pixels). */
static void
test_canvas_view (void)
{
  const int width = 900, height = 700;

  for (guint e = 0; e < 2 * G_N_ELEMENTS (examples); e++)
    {
      int scale = e < G_N_ELEMENTS (examples) ? 1 : 2;
      g_autoptr(NapkinDiagram) diagram = load_example (examples[e % G_N_ELEMENTS (examples)]);
      NapkinRenderOptions screen = { NULL, 0, -1, -1, NULL, FALSE };
      NapkinRenderOptions full = { NULL, 0, -1, -1, NULL, TRUE };
      cairo_surface_t *surfaces[2];
      NapkinCanvasView view;
      NapkinRect b;
      double lw, lh, diff = 0;
      const guint8 *data[2];
      int stride;

      napkin_render_fit_view (diagram, width, height, 0.1, 1.5, &view);
      napkin_render_bounds (diagram, &b);
      napkin_render_legend_size (&lw, &lh);
      g_assert_cmpfloat ((b.x - view.origin_x) * view.zoom, >=, 0);
      g_assert_cmpfloat ((b.y - view.origin_y) * view.zoom, >=, 0);
      g_assert_cmpfloat ((b.x + b.width - view.origin_x) * view.zoom, <=, width);
      g_assert_cmpfloat ((b.y + b.height - view.origin_y) * view.zoom, <=, height - lh - 12);

      for (guint i = 0; i < 2; i++)
        {
          cairo_t *cr;
          guint8 *pixels;

          surfaces[i] = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, width * scale, height * scale);
          /* garbage where the canvas's new buffer has whatever memory held */
          cairo_surface_flush (surfaces[i]);
          pixels = cairo_image_surface_get_data (surfaces[i]);
          memset (pixels, 0x5a, (gsize) cairo_image_surface_get_stride (surfaces[i]) * height * scale);
          cairo_surface_mark_dirty (surfaces[i]);
          cr = cairo_create (surfaces[i]);
          cairo_scale (cr, scale, scale);
          napkin_render_draw_view (cr, diagram, i == 0 ? &screen : &full, &view, width, height);
          g_assert_cmpint (cairo_status (cr), ==, CAIRO_STATUS_SUCCESS);
          cairo_destroy (cr);
          cairo_surface_flush (surfaces[i]);
          data[i] = cairo_image_surface_get_data (surfaces[i]);
        }
      stride = cairo_image_surface_get_stride (surfaces[0]);

      /* paper in the top-right corner, opaque */
      for (guint i = 0; i < 2; i++)
        {
          guint32 px = *(const guint32 *) (data[i] + (width * scale - 1) * 4);

          g_assert_cmphex (px >> 24, ==, 0xff);
          g_assert_cmpuint ((px >> 16) & 0xff, >=, 250);
          g_assert_cmpuint ((px >> 8) & 0xff, >=, 250);
          g_assert_cmpuint (px & 0xff, >=, 248);
        }
      g_assert_cmpuint (count_colour (surfaces[0], napkin_render_level_hex (NAPKIN_LEVEL_HBM), 12), >, 100);
      if (napkin_diagram_n_regions (diagram) > 0)
        g_assert_cmpuint (count_colour (surfaces[0],
                                        napkin_render_level_hex (napkin_diagram_region (diagram, 0)->level), 12),
                          >, 50);
      for (int y = 0; y < height * scale; y++)
        for (int x = 0; x < width * scale; x++)
          for (int c = 0; c < 3; c++)
            diff += abs (data[0][y * stride + 4 * x + c] - data[1][y * stride + 4 * x + c]);
      diff /= 3.0 * width * height * scale * scale;
      g_test_message ("%s x%d: zoom %.3f, screen vs full quality: %.2f levels per channel on average",
                      examples[e % G_N_ELEMENTS (examples)], scale, view.zoom, diff);
      g_assert_cmpfloat (diff, <, 1.5);
      cairo_surface_destroy (surfaces[0]);
      cairo_surface_destroy (surfaces[1]);
    }
}

/* Nested regions: the register region sits inside the shared-memory one, in green. */
static void
test_nested_regions (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-nested");
  NapkinRect outer, inner;
  cairo_surface_t *surface;

  g_assert_cmpint (napkin_diagram_region (diagram, 0)->level, ==, NAPKIN_LEVEL_SMEM);
  g_assert_cmpint (napkin_diagram_region (diagram, 1)->level, ==, NAPKIN_LEVEL_REGISTERS);
  napkin_render_region_rect (diagram, 0, &outer);
  napkin_render_region_rect (diagram, 1, &inner);
  g_assert_cmpfloat (inner.x, >, outer.x);
  g_assert_cmpfloat (inner.y, >, outer.y);
  g_assert_cmpfloat (inner.x + inner.width, <, outer.x + outer.width);
  g_assert_cmpfloat (inner.y + inner.height, <, outer.y + outer.height);
  g_assert_cmpint (napkin_render_node_level (diagram, napkin_diagram_find_node (diagram, "mm")), ==,
                   NAPKIN_LEVEL_REGISTERS);
  g_assert_cmpint (napkin_render_node_level (diagram, napkin_diagram_find_node (diagram, "a")), ==,
                   NAPKIN_LEVEL_HBM);

  surface = draw_example (diagram);
  /* Between the two left borders, below the titles, the wires from A and B pass
   * (with their black labels): there they live in shared memory, so they are
   * orange (the transfer into the region is the change from black). */
  {
    NapkinRect b;
    cairo_surface_t *strip;
    cairo_t *cr;

    napkin_render_bounds (diagram, &b);
    strip = cairo_image_surface_create (CAIRO_FORMAT_RGB24, (int) (inner.x - outer.x - 6), (int) inner.height);
    cr = cairo_create (strip);
    cairo_set_source_surface (cr, surface, -(outer.x + 3 - b.x), -(inner.y - b.y));
    cairo_paint (cr);
    cairo_destroy (cr);
    g_assert_cmpuint (count_hue (strip, 'o'), >, 6);
    cairo_surface_destroy (strip);
  }
  g_assert_cmpuint (count_colour (surface, napkin_render_level_hex (NAPKIN_LEVEL_REGISTERS), 12), >, 100);
  g_assert_cmpuint (count_colour (surface, napkin_render_level_hex (NAPKIN_LEVEL_SMEM), 12), >, 100);
  /* The contraction runs on tensor cores: blue. */
  g_assert_cmpuint (count_colour (surface, napkin_render_tensor_core_hex (), 12), >, 50);
  cairo_surface_destroy (surface);
}

/* Ports sit on the glyph's edges, one per input; hit-testing finds them. */
static void
test_hit (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul");
  int mm = napkin_diagram_find_node (diagram, "mm");
  NapkinRect r;
  double x0, y0, x1, y1, xo, yo;
  NapkinHit hit;

  napkin_render_node_rect (diagram, mm, &r);
  g_assert_true (napkin_render_port_point (diagram, mm, 0, &x0, &y0));
  g_assert_true (napkin_render_port_point (diagram, mm, 1, &x1, &y1));
  g_assert_true (napkin_render_port_point (diagram, mm, -1, &xo, &yo));
  g_assert_false (napkin_render_port_point (diagram, mm, 2, &xo, &yo));
  g_assert_cmpfloat (x0, ==, r.x);
  g_assert_cmpfloat (xo, ==, r.x + r.width);
  /* Two rank-2 inputs: their strands (10 apart) do not overlap. */
  g_assert_cmpfloat (y1 - y0, >=, 2 * 10.0);
  g_assert_cmpfloat (y0, >, r.y);
  g_assert_cmpfloat (y1, <, r.y + r.height);

  hit = napkin_render_hit (diagram, x1, y1, 0);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_INPUT_PORT);
  g_assert_cmpint (hit.index, ==, mm);
  g_assert_cmpuint (hit.port, ==, 1);
  hit = napkin_render_hit (diagram, xo, yo, 0);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_OUTPUT_PORT);
  hit = napkin_render_hit (diagram, r.x + r.width / 2, r.y + r.height / 2, 0);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_NODE);
  g_assert_cmpint (hit.index, ==, mm);
  hit = napkin_render_hit (diagram, -5000, -5000, 0);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_NONE);
  /* The middle of the wire from mm to c. */
  {
    int c = napkin_diagram_find_node (diagram, "c");
    double xc, yc;

    g_assert_true (napkin_render_port_point (diagram, c, 0, &xc, &yc));
    hit = napkin_render_hit (diagram, (xo + xc) / 2, (yo + yc) / 2, 1);
    g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_WIRE);
    g_assert_cmpint (hit.index, ==, napkin_diagram_wire_for_port (diagram, c, 0));
  }
}

static char *
read_file (const char *path,
           gsize      *length)
{
  char *contents = NULL;
  g_autoptr(GError) error = NULL;

  g_assert_true (g_file_get_contents (path, &contents, length, &error));
  g_assert_no_error (error);
  return contents;
}

static void
markup_start (GMarkupParseContext *context,
              const char          *element,
              const char         **names,
              const char         **values,
              gpointer             user_data,
              GError             **error)
{
  guint *elements = user_data;

  (*elements)++;
}

static char *
svg_colour (NapkinLevel level)
{
  double r, g, b;

  napkin_render_level_rgb (level, &r, &g, &b);
  return g_strdup_printf ("rgb(%.0f%%,%.0f%%,%.0f%%)", r * 100, g * 100, b * 100);
}

static void
test_export_svg (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("flash-attention");
  g_autofree char *path = tmp_path ("fa.svg");
  g_autofree char *svg = NULL;
  g_autofree char *smem = svg_colour (NAPKIN_LEVEL_SMEM);
  g_autofree char *hbm = svg_colour (NAPKIN_LEVEL_HBM);
  g_autoptr(GError) error = NULL;
  GMarkupParser parser = { markup_start, NULL, NULL, NULL, NULL };
  GMarkupParseContext *context;
  guint elements = 0;
  gsize length;

  g_assert_true (napkin_render_export (diagram, path, NAPKIN_EXPORT_SVG, 1, &error));
  g_assert_no_error (error);
  svg = read_file (path, &length);

  /* Well-formed XML with an <svg> root and the drawing in it. */
  context = g_markup_parse_context_new (&parser, 0, &elements, NULL);
  g_assert_true (g_markup_parse_context_parse (context, svg, length, &error));
  g_assert_true (g_markup_parse_context_end_parse (context, &error));
  g_assert_no_error (error);
  g_markup_parse_context_free (context);
  g_assert_cmpuint (elements, >, 100);
  g_assert_nonnull (strstr (svg, "<svg"));
  /* The shared-memory region's orange and device memory's black. */
  g_assert_nonnull (strstr (svg, smem));
  g_assert_nonnull (strstr (svg, hbm));
}

static void
test_export_pdf (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul-tiled");
  g_autofree char *path = tmp_path ("mt.pdf");
  g_autofree char *pdf = NULL;
  g_autoptr(GError) error = NULL;
  gsize length;

  g_assert_true (napkin_render_export (diagram, path, NAPKIN_EXPORT_PDF, 1, &error));
  g_assert_no_error (error);
  pdf = read_file (path, &length);
  g_assert_cmpuint (length, >, 1000);
  g_assert_true (memcmp (pdf, "%PDF-", 5) == 0);
  /* A complete file ends with the trailer marker. */
  g_assert_nonnull (strstr (pdf + length - 8, "%%EOF"));
}

static void
png_size (const char *path,
          guint      *width,
          guint      *height)
{
  gsize length;
  g_autofree guint8 *png = (guint8 *) read_file (path, &length);
  static const guint8 magic[8] = { 0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n' };

  g_assert_cmpuint (length, >, 33);
  g_assert_true (memcmp (png, magic, 8) == 0);
  g_assert_true (memcmp (png + 12, "IHDR", 4) == 0);
  *width = (png[16] << 24) | (png[17] << 16) | (png[18] << 8) | png[19];
  *height = (png[20] << 24) | (png[21] << 16) | (png[22] << 8) | png[23];
}

static void
test_export_png_scale (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("layernorm");
  g_autofree char *one = tmp_path ("ln1.png");
  g_autofree char *three = tmp_path ("ln3.png");
  g_autofree char *bad = tmp_path ("bad.png");
  g_autoptr(GError) error = NULL;
  guint w1, h1, w3, h3;

  g_assert_true (napkin_render_export (diagram, one, NAPKIN_EXPORT_PNG, 1, &error));
  g_assert_true (napkin_render_export (diagram, three, NAPKIN_EXPORT_PNG, 3, &error));
  g_assert_no_error (error);
  png_size (one, &w1, &h1);
  png_size (three, &w3, &h3);
  g_assert_cmpuint (w1, >, 300);
  g_assert_cmpuint (h1, >, 100);
  /* Pixel size follows the scale (each side rounded up). */
  g_assert_cmpint (abs ((int) w3 - 3 * (int) w1), <=, 3);
  g_assert_cmpint (abs ((int) h3 - 3 * (int) h1), <=, 3);

  g_assert_false (napkin_render_export (diagram, bad, NAPKIN_EXPORT_PNG, 0, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE);
  g_assert_nonnull (strstr (error->message, "scale"));
  g_assert_false (g_file_test (bad, G_FILE_TEST_EXISTS));
}

static void
test_export_unwritable (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul");
  g_autoptr(GError) error = NULL;

  g_assert_false (napkin_render_export (diagram, "/nonexistent-dir/x.png", NAPKIN_EXPORT_PNG, 1, &error));
  g_assert_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO);
  g_assert_nonnull (strstr (error->message, "/nonexistent-dir/x.png"));
}

static void
test_export_tikz (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("flash-attention");
  g_autofree char *tikz = napkin_render_to_tikz (diagram);
  g_autofree char *pdflatex = g_find_program_in_path ("pdflatex");
  g_autofree char *path = tmp_path ("fa.tex");
  g_autoptr(GError) error = NULL;

  g_assert_nonnull (strstr (tikz, "\\begin{tikzpicture}"));
  g_assert_nonnull (strstr (tikz, "\\end{tikzpicture}"));
  g_assert_nonnull (strstr (tikz, "\\definecolor{napkinsmem}{HTML}{ED7D1A}"));
  g_assert_nonnull (strstr (tikz, "q g=128"));
  g_assert_nonnull (strstr (tikz, "k s=128"));
  /* Every operation is drawn: one glyph and one label each. */
  {
    guint labels = 0;

    for (const char *p = tikz; (p = strstr (p, "\\node[anchor=south")); p++)
      labels++;
    g_assert_cmpuint (labels, ==, napkin_diagram_n_nodes (diagram));
  }
  g_assert_true (napkin_render_export (diagram, path, NAPKIN_EXPORT_TIKZ, 1, &error));
  g_assert_no_error (error);

  if (pdflatex == NULL)
    {
      g_test_skip ("pdflatex is not installed: the TikZ output is checked but not compiled");
      return;
    }
  {
    g_autofree char *dir = g_path_get_dirname (path);
    g_autofree char *doc = g_build_filename (dir, "doc.tex", NULL);
    /* article, not standalone: standalone.cls is in the large texlive-latex-extra. */
    GString *text = g_string_new ("\\documentclass{article}\n\\usepackage{tikz}\n\\usepackage{amssymb}\n"
                                  "\\pagestyle{empty}\n\\begin{document}\n");

    /* Every example, one page each, in one run. */
    for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
      {
        g_autoptr(NapkinDiagram) d = load_example (examples[e]);
        g_autofree char *t = napkin_render_to_tikz (d);

        g_string_append_printf (text, "%s\\newpage\n", t);
      }
    g_string_append (text, "\\end{document}\n");
    const char *argv[] = { pdflatex, "-interaction=nonstopmode", "-halt-on-error", "doc.tex", NULL };
    int status = 0;

    g_assert_true (g_file_set_contents (doc, text->str, -1, NULL));
    g_string_free (text, TRUE);
    g_autofree char *pdf = g_build_filename (dir, "doc.pdf", NULL);

    g_assert_true (g_spawn_sync (dir, (char **) argv, NULL, G_SPAWN_STDOUT_TO_DEV_NULL, NULL, NULL, NULL, NULL,
                                 &status, &error));
    g_assert_no_error (error);
    if (!g_spawn_check_wait_status (status, &error))
      g_error ("pdflatex failed on the TikZ export (see %s/doc.log): %s", dir, error->message);
    g_assert_true (g_file_test (pdf, G_FILE_TEST_IS_REGULAR));
  }
}

/* The gpus region (docs/multi-gpu.md): the outermost box in its own teal, dash-dot,
 * hit by its border, around every other region, in every export. */
static void
test_gpus_region (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("tp-mlp");
  g_autoptr(NapkinDiagram) plain = load_example ("matmul");
  g_autofree char *png = tmp_path ("tp.png");
  g_autofree char *svg_path = tmp_path ("tp.svg");
  g_autofree char *svg = NULL;
  g_autofree char *tikz = napkin_render_to_tikz (diagram);
  g_autoptr(GError) error = NULL;
  cairo_surface_t *image;
  NapkinRect rect, bounds;
  NapkinHit hit;
  double dashes[4];
  gsize length;
  guint teal, teal_plain;

  /* the file's rectangle, inside the drawing's bounds */
  g_assert_true (napkin_render_gpus_rect (diagram, &rect));
  g_assert_cmpfloat (rect.x, ==, 200);
  g_assert_cmpfloat (rect.y, ==, 20);
  g_assert_cmpfloat (rect.width, ==, 620);
  g_assert_cmpfloat (rect.height, ==, 320);
  napkin_render_bounds (diagram, &bounds);
  g_assert_cmpfloat (bounds.x, <=, rect.x);
  g_assert_cmpfloat (bounds.x + bounds.width, >=, rect.x + rect.width);
  g_assert_false (napkin_render_gpus_rect (plain, &rect) && FALSE);
  g_assert_false (napkin_render_gpus_rect (plain, &bounds));

  /* its border and its title line are its own; a node inside stays the node's */
  hit = napkin_render_hit (diagram, rect.x + 1, rect.y + rect.height - 30, 2);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_GPUS);
  hit = napkin_render_hit (diagram, rect.x + 300, rect.y + 10, 2);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_GPUS);
  hit = napkin_render_hit (diagram, rect.x + rect.width - 4, rect.y + rect.height - 4, 2);
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_GPUS_HANDLE);
  hit = napkin_render_hit (diagram, 300, 150, 2);   /* X·W1 at (260, 120) */
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_NODE);
  hit = napkin_render_hit (diagram, rect.x + 200, rect.y + 200, 2);   /* empty paper inside */
  g_assert_cmpint (hit.kind, ==, NAPKIN_HIT_NONE);

  /* a colour no level has, a dash pattern no level has */
  g_assert_cmpstr (napkin_render_gpus_hex (FALSE), ==, "#00838f");
  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    g_assert_cmpstr (napkin_render_gpus_hex (FALSE), !=, napkin_render_level_hex (l));
  g_assert_cmpuint (napkin_render_gpus_dashes (dashes), ==, 4);

  /* PNG: the box's border in teal (3 units wide around 620 × 320, dashed), nothing
   * teal in a diagram without the region but the legend's row */
  g_assert_true (napkin_render_export (diagram, png, NAPKIN_EXPORT_PNG, 1, &error));
  g_assert_no_error (error);
  image = cairo_image_surface_create_from_png (png);
  g_assert_cmpint (cairo_surface_status (image), ==, CAIRO_STATUS_SUCCESS);
  teal = count_colour (image, napkin_render_gpus_hex (FALSE), 24);
  cairo_surface_destroy (image);
  g_assert_true (napkin_render_export (plain, png, NAPKIN_EXPORT_PNG, 1, &error));
  image = cairo_image_surface_create_from_png (png);
  teal_plain = count_colour (image, napkin_render_gpus_hex (FALSE), 24);
  cairo_surface_destroy (image);
  g_assert_cmpuint (teal, >, teal_plain + 2000);

  /* SVG: the teal stroke */
  g_assert_true (napkin_render_export (diagram, svg_path, NAPKIN_EXPORT_SVG, 1, &error));
  g_assert_no_error (error);
  svg = read_file (svg_path, &length);
  g_assert_nonnull (strstr (svg, "rgb(0%,51.372549%,56.078431%)"));   /* #00838f */

  /* TikZ: the box, its title and both sharded weights */
  g_assert_nonnull (strstr (tikz, "\\definecolor{napkingpus}{HTML}{00838F}"));
  g_assert_nonnull (strstr (tikz, "draw=napkingpus, line width=1.6pt, dash dot] (200.0,20.0) rectangle (820.0,340.0)"));
  g_assert_nonnull (strstr (tikz, "{GPUs $\\cdot$ tp $\\cdot$ f split $\\times$2}"));
  {
    guint splits = 0;

    for (const char *p = tikz; (p = strstr (p, "{split f}")); p++)
      splits++;
    g_assert_cmpuint (splits, ==, 2);   /* W1 and W2; X and Y are replicated */
  }
}

/* A problem (an unconnected input) is drawn in red on the item. */
static void
test_problem_marked (void)
{
  g_autoptr(NapkinDiagram) diagram = load_example ("matmul");
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  g_autoptr(GError) error = NULL;
  g_autoptr(GPtrArray) problems = NULL;
  NapkinRenderOptions options = { NULL, 0, -1, -1, NULL };
  NapkinRect bounds;
  cairo_surface_t *surface;
  cairo_t *cr;

  g_assert_true (napkin_edit_disconnect (history, "mm", 1, &error));
  problems = napkin_diagram_check (diagram);
  g_assert_cmpuint (problems->len, >, 0);
  options.problems = problems;
  napkin_render_bounds (diagram, &bounds);
  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, (int) bounds.width, (int) bounds.height);
  cr = cairo_create (surface);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_translate (cr, -bounds.x, -bounds.y);
  napkin_render_draw (cr, diagram, &options);
  cairo_destroy (cr);
  g_assert_cmpuint (count_colour (surface, "#d91a1a", 20), >, 30);
  cairo_surface_destroy (surface);
}

static void
test_format_from_path (void)
{
  NapkinExportFormat f;

  g_assert_true (napkin_export_format_from_path ("a.SVG", &f));
  g_assert_cmpint (f, ==, NAPKIN_EXPORT_SVG);
  g_assert_true (napkin_export_format_from_path ("/x/y.pdf", &f));
  g_assert_cmpint (f, ==, NAPKIN_EXPORT_PDF);
  g_assert_true (napkin_export_format_from_path ("y.png", &f));
  g_assert_cmpint (f, ==, NAPKIN_EXPORT_PNG);
  g_assert_true (napkin_export_format_from_path ("y.tex", &f));
  g_assert_cmpint (f, ==, NAPKIN_EXPORT_TIKZ);
  g_assert_false (napkin_export_format_from_path ("y.jpg", &f));
  g_assert_false (napkin_export_format_from_path (NULL, &f));
}

/* What the screen path leaves out as outside the visible rectangle (wires, labels,
 * regions) must be exactly what would not show: a small window at zoom 1 reads the
 * same pixels as that part of a surface three times larger, where nothing near the
 * window is culled. The shift is a whole number of pixels, so rasterisation is the
 * same. */
static void
test_culling_is_invisible (void)
{
  const int width = 500, height = 300;
  enum { EDGE = 4 };

  for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
    {
      g_autoptr(NapkinDiagram) diagram = load_example (examples[e]);
      NapkinRenderOptions screen = { NULL, 0, -1, -1, NULL, FALSE };
      NapkinRect b;
      cairo_surface_t *small, *large;
      const guint8 *ds, *dl;
      int ss, sl;
      double ox, oy;
      guint differ = 0;

      napkin_render_bounds (diagram, &b);
      /* A window on the middle of the diagram, at zoom 1: strands and labels cross
       * its edges. */
      ox = round (b.x + b.width / 2 - width / 2);
      oy = round (b.y + b.height / 2 - height / 2);
      small = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, width, height);
      large = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, 3 * width, 3 * height);
      for (guint i = 0; i < 2; i++)
        {
          cairo_t *cr = cairo_create (i == 0 ? small : large);

          cairo_set_source_rgb (cr, 1, 1, 1);
          cairo_paint (cr);
          if (i == 0)
            cairo_translate (cr, -ox, -oy);
          else
            cairo_translate (cr, width - ox, height - oy);
          napkin_render_draw (cr, diagram, &screen);
          g_assert_cmpint (cairo_status (cr), ==, CAIRO_STATUS_SUCCESS);
          cairo_destroy (cr);
        }
      cairo_surface_flush (small);
      cairo_surface_flush (large);
      ds = cairo_image_surface_get_data (small);
      dl = cairo_image_surface_get_data (large);
      ss = cairo_image_surface_get_stride (small);
      sl = cairo_image_surface_get_stride (large);
      /* A frame of EDGE pixels is left out: a few pixels there differ (3 in
       * layernorm on the outermost column; 6 in mlp, two strands at x = 1…3) even
       * with every cull of ours turned off: Cairo strokes what crosses the surface's
       * edge a little differently from the same stroke in the middle of a surface. */
      for (int y = EDGE; y < height - EDGE; y++)
        for (int x = EDGE; x < width - EDGE; x++)
          {
            guint32 a = *(const guint32 *) (ds + y * ss + 4 * x);
            guint32 c = *(const guint32 *) (dl + (y + height) * sl + 4 * (x + width));

            if (a != c && differ++ < 8)
              g_test_message ("(%d, %d): %08x, %08x", x, y, a, c);
          }
      g_test_message ("%s: %u of %d pixels differ", examples[e], differ, (width - 2 * EDGE) * (height - 2 * EDGE));
      g_assert_cmpuint (differ, ==, 0);
      /* The window is not blank: the comparison saw the diagram. */
      g_assert_cmpuint (count_colour (small, napkin_render_level_hex (NAPKIN_LEVEL_HBM), 12), >, 100);
      cairo_surface_destroy (small);
      cairo_surface_destroy (large);
    }
}

/* A canvas frame drawn in bands on several threads (napkin_render_draw_view) is,
 * pixel for pixel, the frame one thread draws: each band is its rows of the same
 * picture, at three zooms (fitted; 1, where strands are cut at region borders;
 * 0.2, where wires are bands) and 2, 3 and 4 bands. */
static void
test_bands_are_one_frame (void)
{
  const int width = 900, height = 700;

  for (guint e = 0; e < G_N_ELEMENTS (examples); e++)
    for (guint zoom_i = 0; zoom_i < 3; zoom_i++)
      {
        g_autoptr(NapkinDiagram) diagram = load_example (examples[e]);
        cairo_surface_t *frames[4];
        NapkinCanvasView view;
        NapkinRect b;

        napkin_render_bounds (diagram, &b);
        if (zoom_i == 0)
          napkin_render_fit_view (diagram, width, height, 0.1, 1.5, &view);
        else if (zoom_i == 1)
          view = (NapkinCanvasView) { 1.0, b.x - 20, b.y - 20 };
        else
          view = (NapkinCanvasView) { 0.2, b.x - 100, b.y - 100 };
        for (guint t = 1; t <= 4; t++)
          {
            NapkinRenderOptions options = { NULL, 0, -1, -1, NULL, FALSE, t };
            cairo_t *cr;

            frames[t - 1] = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, width, height);
            cr = cairo_create (frames[t - 1]);
            napkin_render_draw_view (cr, diagram, &options, &view, width, height);
            g_assert_cmpint (cairo_status (cr), ==, CAIRO_STATUS_SUCCESS);
            cairo_destroy (cr);
            cairo_surface_flush (frames[t - 1]);
          }
        for (guint t = 2; t <= 4; t++)
          {
            const guint8 *one = cairo_image_surface_get_data (frames[0]);
            const guint8 *many = cairo_image_surface_get_data (frames[t - 1]);
            int stride = cairo_image_surface_get_stride (frames[0]);

            for (int y = 0; y < height; y++)
              if (memcmp (one + y * stride, many + y * stride, 4 * width) != 0)
                g_error ("%s at zoom %.3f in %u bands: row %d differs from the one-thread frame", examples[e],
                         view.zoom, t, y);
          }
        /* The frame is not blank. */
        g_assert_cmpuint (count_colour (frames[1], napkin_render_level_hex (NAPKIN_LEVEL_HBM), 12), >, 100);
        for (guint t = 0; t < 4; t++)
          cairo_surface_destroy (frames[t]);
      }
}

/* The legend box holds all its rows, the last ("Several GPUs", teal) included:
 * nothing is drawn outside the box, the strip just inside its bottom border is
 * empty, and the last row's swatch is teal inside the box. */
static void
test_legend_rows (void)
{
  const int x = 20, y = 20;
  double lw, lh;
  cairo_surface_t *surface;
  cairo_t *cr;
  const guint8 *data;
  int stride, width, height, bottom;
  guint32 empty;
  guint r, g, b, teal = 0;

  napkin_render_legend_size (&lw, &lh);
  g_assert_cmpfloat (lh, >=, (NAPKIN_N_LEVELS + 2) * 18.0);
  width = (int) ceil (lw) + 2 * x;
  height = (int) ceil (lh) + 2 * y;
  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, width, height);
  cr = cairo_create (surface);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  napkin_render_draw_legend (cr, x, y);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  data = cairo_image_surface_get_data (surface);
  stride = cairo_image_surface_get_stride (surface);
#define PX(px, py) (*(const guint32 *) (data + (py) * stride + 4 * (px)) & 0xffffff)

  /* white outside the box and its 1-unit border */
  for (int py = 0; py < height; py++)
    for (int px = 0; px < width; px++)
      if (px < x - 1 || py < y - 1 || px > x + lw + 1 || py > y + lh + 1)
        g_assert_cmphex (PX (px, py), ==, 0xffffff);

  /* the box's own colour, right of every title, fills the strip above the bottom border */
  empty = PX (x + (int) lw - 8, y + (int) (lh / 2));
  bottom = y + (int) floor (lh);
  for (int py = bottom - 4; py <= bottom - 2; py++)
    for (int px = x + 8; px < x + lw - 8; px++)
      g_assert_cmphex (PX (px, py), ==, empty);

  /* the last row's swatch: teal within the box, below the row before it */
  g_assert_true (sscanf (napkin_render_gpus_hex (FALSE), "#%02x%02x%02x", &r, &g, &b) == 3);
  for (int py = bottom - 24; py < bottom - 4; py++)
    for (int px = x + 6; px < x + 36; px++)
      teal += PX (px, py) == ((r << 16) | (g << 8) | b);
  g_assert_cmpuint (teal, >, 20);
#undef PX
  cairo_surface_destroy (surface);
}

/* The comparison chart: the axis spans the feasible times, so that an infeasible
 * configuration's 600 ms does not squeeze the µs bars to nothing; the best path is
 * a marker on its element type's bar under one legend entry; every series has its
 * own colour. */
static void
test_plot_bars_layout (void)
{
  static const char *dtypes[] = { "fp32", "tf32", "fp16", "bf16", "fp8-e4m3", "int8", "x1", "x2", "x3" };
  g_autoptr(NapkinPlot) plot = napkin_plot_new (NAPKIN_PLOT_BARS, "t");
  g_auto(GStrv) legend = NULL;
  NapkinPlotBarGeometry fp16, bf16, b200, fp32, best, best_inf;
  g_autofree char *tip = NULL;
  cairo_surface_t *surface;
  cairo_t *cr;
  double height, width = 380;
  guint32 colours[G_N_ELEMENTS (dtypes)];

  /* a100: fp32 infeasible at 600 ms, fp16 1.18 ms, bf16 0.59 ms; b200: fp16 424 µs
   * with 212 µs on its best path, fp32 infeasible with a best path of 300 µs */
  for (guint d = 0; d < G_N_ELEMENTS (dtypes); d++)
    napkin_plot_add_bar (plot, "a100", dtypes[d], d == 0 ? 0.6 : d == 2 ? 1.18e-3 : d == 3 ? 0.59e-3 : 0.2e-3 * (d + 1),
                         FALSE, d == 0);
  napkin_plot_add_bar (plot, "b200", "fp16", 424e-6, FALSE, FALSE);
  napkin_plot_set_best (plot, "b200", "fp16", 212e-6, "tcgen05");
  napkin_plot_add_bar (plot, "b200", "fp32", 0.3, FALSE, TRUE);
  napkin_plot_set_best (plot, "b200", "fp32", 300e-6, "tcgen05");

  g_assert_true (napkin_plot_bar_geometry (plot, width, 2, &fp16));
  g_assert_true (napkin_plot_bar_geometry (plot, width, 3, &bf16));
  g_assert_true (napkin_plot_bar_geometry (plot, width, 0, &fp32));
  g_assert_true (napkin_plot_bar_geometry (plot, width, G_N_ELEMENTS (dtypes), &b200));
  g_assert_true (napkin_plot_bar_geometry (plot, width, G_N_ELEMENTS (dtypes) + 1, &best_inf));
  g_assert_false (napkin_plot_bar_geometry (plot, width, 99, &best));
  best = b200;

  /* the axis ends at a round time just above the longest feasible bar, 1.18 ms */
  g_assert_cmpfloat (fp16.axis_max, >=, 1.18e-3);
  g_assert_cmpfloat (fp16.axis_max, <=, 2e-3);
  g_assert_cmpfloat (fp16.axis_x1 - fp16.axis_x0, >, 200);
  /* lengths proportional to time */
  g_assert_cmpfloat_with_epsilon (bf16.w / fp16.w, 0.59 / 1.18, 1e-6);
  g_assert_cmpfloat_with_epsilon (b200.w / fp16.w, 424e-6 / 1.18e-3, 1e-6);
  g_assert_cmpfloat_with_epsilon (fp16.w, (fp16.axis_x1 - fp16.axis_x0) * 1.18e-3 / fp16.axis_max, 1e-6);
  g_assert_false (fp16.clipped);
  /* the infeasible 600 ms stops at the axis's end, broken */
  g_assert_true (fp32.clipped);
  g_assert_cmpfloat_with_epsilon (fp32.x + fp32.w, fp32.axis_x1, 1e-6);
  /* the best path: a marker on the same row at 212 µs; none on bars without */
  g_assert_cmpfloat_with_epsilon (best.best_x, best.axis_x0 + (best.axis_x1 - best.axis_x0) * 212e-6 / best.axis_max,
                                  1e-6);
  g_assert_cmpfloat (fp16.best_x, ==, -1);
  g_assert_cmpfloat (best_inf.best_x, >, best_inf.axis_x0);
  /* rows of one group follow each other; the second group's fp16 row sits below */
  g_assert_cmpfloat (bf16.y - fp16.y, ==, fp16.h + 2);
  g_assert_cmpfloat (b200.y, >, fp16.y + (G_N_ELEMENTS (dtypes) - 2) * (fp16.h + 2));

  /* one legend entry per element type and one for the best path, not one per
   * element type's best path */
  legend = napkin_plot_legend (plot);
  g_assert_cmpuint (g_strv_length (legend), ==, G_N_ELEMENTS (dtypes) + 1);
  g_assert_cmpstr (legend[2], ==, "fp16");
  g_assert_cmpstr (legend[G_N_ELEMENTS (dtypes)], ==, "best path (not generated)");

  /* the tooltip of the infeasible row with a best path gives that time */
  height = napkin_plot_natural_height (plot, width);
  tip = napkin_plot_describe_at (plot, width, height, 200, best_inf.y + best_inf.h / 2);
  g_assert_nonnull (tip);
  g_assert_nonnull (strstr (tip, "infeasible"));
  g_assert_nonnull (strstr (tip, "300 µs"));
  g_assert_nonnull (strstr (tip, "tcgen05"));

  /* drawn: each element type's bar its own colour (nine series: past the
   * palette's eight, none repeats), the best-path marker drawn on b200's fp16 bar */
  surface = cairo_image_surface_create (CAIRO_FORMAT_RGB24, (int) width, (int) ceil (height));
  cr = cairo_create (surface);
  napkin_plot_draw (cr, plot, width, height, NULL);
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  for (guint d = 1; d < G_N_ELEMENTS (dtypes); d++)
    {
      NapkinPlotBarGeometry g;
      const guint32 *data = (const guint32 *) cairo_image_surface_get_data (surface);
      int stride = cairo_image_surface_get_stride (surface) / 4;

      g_assert_true (napkin_plot_bar_geometry (plot, width, d, &g));
      colours[d] = data[(int) (g.y + g.h / 2) * stride + (int) (g.x + 2)] & 0xffffff;
      g_assert_cmphex (colours[d], !=, 0xffffff);
      for (guint e = 1; e < d; e++)
        g_assert_cmphex (colours[d], !=, colours[e]);
    }
  {
    const guint32 *data = (const guint32 *) cairo_image_surface_get_data (surface);
    int stride = cairo_image_surface_get_stride (surface) / 4;
    guint32 bar = data[(int) (b200.y + b200.h / 2) * stride + (int) (b200.x + 2)] & 0xffffff;
    guint32 edge = data[(int) (b200.y + b200.h / 2) * stride + (int) (best.best_x - 4)] & 0xffffff;

    /* the marker's dark outline, 4.5 px left of its centre, on the bar's colour */
    g_assert_cmphex (bar, ==, colours[2]);
    g_assert_cmphex (edge, !=, bar);
  }
  cairo_surface_destroy (surface);
}

int
main (int    argc,
      char **argv)
{
  g_test_init (&argc, &argv, NULL);

  g_test_add_func ("/render/draw/every-example", test_every_example);
  g_test_add_func ("/render/draw/nested-regions", test_nested_regions);
  g_test_add_func ("/render/draw/mask-glyph", test_mask_glyph);
  g_test_add_func ("/render/draw/canvas-view", test_canvas_view);
  g_test_add_func ("/render/draw/culling-is-invisible", test_culling_is_invisible);
  g_test_add_func ("/render/draw/bands-are-one-frame", test_bands_are_one_frame);
  g_test_add_func ("/render/draw/problem-marked", test_problem_marked);
  g_test_add_func ("/render/geometry/hit", test_hit);
  g_test_add_func ("/render/export/svg", test_export_svg);
  g_test_add_func ("/render/export/pdf", test_export_pdf);
  g_test_add_func ("/render/export/png-scale", test_export_png_scale);
  g_test_add_func ("/render/export/unwritable", test_export_unwritable);
  g_test_add_func ("/render/export/tikz", test_export_tikz);
  g_test_add_func ("/render/export/gpus-region", test_gpus_region);
  g_test_add_func ("/render/export/format-from-path", test_format_from_path);
  g_test_add_func ("/render/legend/rows", test_legend_rows);
  g_test_add_func ("/render/plot/bars-layout", test_plot_bars_layout);
  return g_test_run ();
}
