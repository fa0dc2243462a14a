/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-render"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>
#include <cairo-pdf.h>
#include <cairo-svg.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-render.h"
#include "napkin-text.h"
#include "napkin-validate.h"

#define MARGIN 20.0
/* A PNG's pixels: 8192² is 256 MB of image; 16384² was a gigabyte from one far node. */
#define MAX_PIXELS (8192.0 * 8192.0)
/* The widest and tallest drawing, in diagram units: Cairo's coordinates are 24.8 fixed
 * point, and a node at x = 9e6 (the file format allows 1e9) failed its assertion. */
#define MAX_EXTENT 1e6

gboolean
napkin_export_format_from_path (const char         *path,
                                 NapkinExportFormat *format)
{
  static const struct { const char *ext; NapkinExportFormat format; } exts[] = {
    { ".svg", NAPKIN_EXPORT_SVG },
    { ".pdf", NAPKIN_EXPORT_PDF },
    { ".png", NAPKIN_EXPORT_PNG },
    { ".tex", NAPKIN_EXPORT_TIKZ },
    { ".tikz", NAPKIN_EXPORT_TIKZ },
  };
  g_autofree char *lower = NULL;

  if (path == NULL)
    return FALSE;
  lower = g_ascii_strdown (path, -1);
  for (guint i = 0; i < G_N_ELEMENTS (exts); i++)
    if (g_str_has_suffix (lower, exts[i].ext))
      {
        *format = exts[i].format;
        return TRUE;
      }
  return FALSE;
}

/* The page: the diagram's bounds plus a margin, and the legend below it. */
static void
page_geometry (NapkinDiagram *diagram,
               NapkinRect    *bounds,
               double        *width,
               double        *height)
{
  double lw, lh;

  napkin_render_bounds (diagram, bounds);
  napkin_render_legend_size (&lw, &lh);
  *width = MAX (bounds->width, lw) + 2 * MARGIN;
  *height = bounds->height + lh + 3 * MARGIN;
}

static void
draw_page (cairo_t       *cr,
           NapkinDiagram *diagram,
           double         width,
           double         height)
{
  g_autoptr(GPtrArray) problems = napkin_diagram_check (diagram);
  NapkinRenderOptions options = { NULL, 0, -1, -1, problems, TRUE };
  NapkinRect bounds;
  double w, h;

  page_geometry (diagram, &bounds, &w, &h);
  cairo_set_source_rgb (cr, 1, 1, 1);
  cairo_paint (cr);
  cairo_save (cr);
  cairo_translate (cr, MARGIN - bounds.x, MARGIN - bounds.y);
  napkin_render_draw (cr, diagram, &options);
  cairo_restore (cr);
  napkin_render_draw_legend (cr, MARGIN, bounds.height + 2 * MARGIN);
}

static gboolean
check_cairo (cairo_status_t   status,
             const char      *path,
             GError         **error)
{
  if (status == CAIRO_STATUS_SUCCESS)
    return TRUE;
  g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_IO,
               _("%s: cannot write the drawing: %s"), path, cairo_status_to_string (status));
  return FALSE;
}

static gboolean
write_tikz (NapkinDiagram  *diagram,
            const char     *path,
            GError        **error)
{
  g_autofree char *tikz = napkin_render_to_tikz (diagram);

  return napkin_file_write_atomic (path, tikz, strlen (tikz), error);
}

/* Cairo writes the drawing into a temporary file, which replaces the target only
 * once Cairo reports success and every write succeeded: a full disk never leaves a
 * truncated drawing, nor truncates the previous one. */
cairo_status_t
napkin_render_write_func (void                *closure,
                          const unsigned char *data,
                          unsigned int         length)
{
  return napkin_atomic_file_write (closure, data, length) ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

cairo_status_t
napkin_render_finish_export (cairo_t            *cr,
                             cairo_surface_t    *surface,
                             NapkinExportFormat  format,
                             void               *file)
{
  cairo_status_t status = cairo_status (cr);

  cairo_destroy (cr);
  if (format == NAPKIN_EXPORT_PNG)
    cairo_surface_flush (surface);
  if (status == CAIRO_STATUS_SUCCESS && format == NAPKIN_EXPORT_PNG)
    status = cairo_surface_write_to_png_stream (surface, napkin_render_write_func, file);
  cairo_surface_finish (surface);
  if (status == CAIRO_STATUS_SUCCESS)
    status = cairo_surface_status (surface);
  cairo_surface_destroy (surface);
  return status;
}

/* The operation farthest from the origin, which a drawing too large to make usually
 * owes its size to; NULL for a diagram without operations. */
static const NapkinNode *
farthest_node (NapkinDiagram *diagram)
{
  const NapkinNode *far = NULL;
  double best = -1;

  for (guint i = 0; i < napkin_diagram_n_nodes (diagram); i++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, i);
      double d = MAX (fabs (node->x), fabs (node->y));

      if (d > best)
        best = d, far = node;
    }
  return far;
}

/* A drawing of at most MAX_EXTENT units each way (and, for a PNG, MAX_PIXELS pixels),
 * else an error that names the farthest operation: its time and memory follow the
 * drawing's extent, not the file's size (docs/security.md, "Drawing"). */
static gboolean
check_extent (NapkinDiagram      *diagram,
              NapkinExportFormat  format,
              double              width,
              double              height,
              double              scale,
              GError            **error)
{
  const NapkinNode *far = farthest_node (diagram);
  g_autofree char *where = NULL;
  g_autofree char *id = NULL;

  if (width <= MAX_EXTENT && height <= MAX_EXTENT
      && (format != NAPKIN_EXPORT_PNG || width * scale * height * scale <= MAX_PIXELS))
    return TRUE;
  id = far != NULL ? napkin_text_quoted (far->id) : NULL;
  where = far != NULL ? g_strdup_printf (_("; the farthest operation, %s, is at (%g, %g): move it closer"), id,
                                         far->x, far->y)
                      : g_strdup ("");
  if (width > MAX_EXTENT || height > MAX_EXTENT)
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                 _("the drawing spans %.0f × %.0f units, more than the %.0f each way Napkin draws%s"), width, height,
                 MAX_EXTENT, where);
  else
    g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                 _("at scale %g the drawing is a %.0f×%.0f image, more than the 8192² pixels Napkin makes; use a "
                   "smaller scale%s"), scale, ceil (width * scale), ceil (height * scale), where);
  return FALSE;
}

gboolean
napkin_render_export (NapkinDiagram       *diagram,
                      const char          *path,
                      NapkinExportFormat   format,
                      double               scale,
                      GError             **error)
{
  g_autoptr(NapkinAtomicFile) file = NULL;
  cairo_surface_t *surface = NULL;
  cairo_t *cr;
  NapkinRect bounds;
  double width, height;
  cairo_status_t status;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (path != NULL, FALSE);

  if (format == NAPKIN_EXPORT_PNG && !(scale > 0 && scale <= 16))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("scale: %g is not a scale from 0 to 16"), scale);
      return FALSE;
    }
  page_geometry (diagram, &bounds, &width, &height);
  if (!check_extent (diagram, format, width, height, scale, error))
    return FALSE;
  if (format == NAPKIN_EXPORT_TIKZ)
    return write_tikz (diagram, path, error);
  file = napkin_atomic_file_new (path, error);
  if (file == NULL)
    return FALSE;
  switch (format)
    {
    case NAPKIN_EXPORT_SVG:
      surface = cairo_svg_surface_create_for_stream (napkin_render_write_func, file, width, height);
      break;
    case NAPKIN_EXPORT_PDF:
      surface = cairo_pdf_surface_create_for_stream (napkin_render_write_func, file, width, height);
      break;
    case NAPKIN_EXPORT_PNG:
      surface = cairo_image_surface_create (CAIRO_FORMAT_ARGB32, (int) ceil (width * scale),
                                            (int) ceil (height * scale));
      break;
    case NAPKIN_EXPORT_TIKZ:
    default:
      g_assert_not_reached ();
    }

  if (!check_cairo (cairo_surface_status (surface), path, error))
    {
      cairo_surface_destroy (surface);
      return FALSE;
    }

  cr = cairo_create (surface);
  if (format == NAPKIN_EXPORT_PNG)
    cairo_scale (cr, scale, scale);
  draw_page (cr, diagram, width, height);
  status = napkin_render_finish_export (cr, surface, format, file);
  /* A failed write: the file's own error says which and why. */
  if (status != CAIRO_STATUS_SUCCESS && status != CAIRO_STATUS_WRITE_ERROR)
    return check_cairo (status, path, error);
  return napkin_atomic_file_commit (g_steal_pointer (&file), error);
}

/* ---------------------------------------------------------------- TikZ */

/* Escapes text for LaTeX; the few non-ASCII signs the examples use get math. */
static void
append_tex (GString    *out,
            const char *text)
{
  static const struct { const char *utf8; const char *tex; } map[] = {
    { "·", "$\\cdot$" }, { "ᵀ", "$^{T}$" }, { "√", "$\\sqrt{}$" }, { "Σ", "$\\Sigma$" },
    { "γ", "$\\gamma$" }, { "β", "$\\beta$" }, { "⟳", "$\\circlearrowright$" }, { "×", "$\\times$" },
    { "⤨", "$\\times$" },
  };

  for (const char *p = text; p && *p; p = g_utf8_next_char (p))
    {
      gboolean done = FALSE;

      for (guint i = 0; i < G_N_ELEMENTS (map) && !done; i++)
        if (strncmp (p, map[i].utf8, strlen (map[i].utf8)) == 0)
          {
            g_string_append (out, map[i].tex);
            done = TRUE;
          }
      if (done)
        continue;
      switch (*p)
        {
        case '\\': g_string_append (out, "\\textbackslash{}"); break;
        case '_': case '%': case '$': case '#': case '&': case '{': case '}':
          g_string_append_c (out, '\\');
          g_string_append_c (out, *p);
          break;
        case '^': g_string_append (out, "\\^{}"); break;
        case '~': g_string_append (out, "\\~{}"); break;
        default:
          /* Control characters (newlines too: a blank line is \par, which ends a
           * node's text with an error) become spaces; see docs/security.md. */
          if ((guchar) *p < 0x20 || *p == 0x7f)
            g_string_append_c (out, ' ');
          else if ((guchar) *p < 0x80)
            g_string_append_c (out, *p);
          else
            g_string_append_c (out, '?');
        }
    }
}

static const char *tikz_level_names[NAPKIN_N_LEVELS] = {
  "napkinhbm", "napkinltwo", "napkinsmem", "napkinregs",
};

#define F(v) g_ascii_formatd (a, sizeof a, "%.1f", (v))

/* "(x,y) rectangle (x+w,y+h)" and tail. */
static void
tikz_rect (GString          *out,
           const NapkinRect *rect,
           const char       *tail)
{
  char a[G_ASCII_DTOSTR_BUF_SIZE];

  g_string_append_printf (out, "(%s,", F (rect->x));
  g_string_append_printf (out, "%s) rectangle ", F (rect->y));
  g_string_append_printf (out, "(%s,", F (rect->x + rect->width));
  g_string_append_printf (out, "%s)%s", F (rect->y + rect->height), tail);
}

/* \definecolor of one colour from its "#rrggbb". */
static void
tikz_define_colour (GString    *out,
                    const char *name,
                    const char *hex)
{
  g_autofree char *upper = g_ascii_strup (hex + 1, -1);

  g_string_append_printf (out, "\\definecolor{%s}{HTML}{%s}\n", name, upper);
}

/* The gpus region: the outermost box, dash-dot (docs/multi-gpu.md). */
static void
tikz_gpus (GString       *out,
           NapkinDiagram *diagram)
{
  char a[G_ASCII_DTOSTR_BUF_SIZE];
  const NapkinGpusRegion *gpus = napkin_diagram_get_gpus (diagram);
  const char *axis = NULL;
  NapkinRect rect;

  napkin_render_gpus_rect (diagram, &rect);
  for (guint m = 0; m < gpus->region->marks->len; m++)
    if (g_array_index (gpus->region->marks, NapkinMark, m).kind == NAPKIN_MARK_PARALLEL)
      axis = g_array_index (gpus->region->marks, NapkinMark, m).axis;
  g_string_append (out, "\\draw[rounded corners=8, fill=napkingpus!7, draw=napkingpus, line width=1.6pt, "
                        "dash dot] ");
  tikz_rect (out, &rect, ";\n");
  g_string_append_printf (out, "\\node[anchor=north west, text=napkingpus, font=\\sffamily\\scriptsize\\bfseries] at (%s,",
                          F (rect.x + 8));
  g_string_append_printf (out, "%s) {GPUs $\\cdot$ ", F (rect.y + 4));
  append_tex (out, gpus->region->name);
  g_string_append (out, " $\\cdot$ ");
  if (axis != NULL)
    append_tex (out, axis);
  else
    g_string_append (out, "no axis");
  if (gpus->gpus > 0)
    g_string_append_printf (out, " split $\\times$%u", gpus->gpus);
  else
    g_string_append (out, " split $\\times N$");
  if (gpus->chunks >= 2)
    {
      g_string_append_printf (out, " $\\cdot$ overlap %u $\\times$ ", gpus->chunks);
      append_tex (out, gpus->chunk_axis);
    }
  g_string_append (out, "};\n");
  /* sharded inputs and outputs: "split f" at their port */
  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, n);
      const NapkinPlacement *placement;
      double px, py;

      if ((node->kind != NAPKIN_OP_INPUT && node->kind != NAPKIN_OP_OUTPUT) || node->tensor == NULL)
        continue;
      placement = napkin_gpus_region_placement (gpus, node->tensor);
      if (placement == NULL || placement->split == NULL
          || !napkin_render_port_point (diagram, n, node->kind == NAPKIN_OP_INPUT ? -1 : 0, &px, &py))
        continue;
      g_string_append_printf (out, "\\node[draw=napkingpus, fill=white, text=napkingpus, "
                                   "rounded corners=3, inner sep=1.5pt, anchor=south] at (%s,", F (px + (node->kind == NAPKIN_OP_INPUT ? 24 : -24)));
      g_string_append_printf (out, "%s) {split ", F (py - 8));
      append_tex (out, placement->split);
      g_string_append (out, "};\n");
    }
}

/* The regions, slowest level first, with their names and marks. */
static void
tikz_regions (GString       *out,
              NapkinDiagram *diagram)
{
  char a[G_ASCII_DTOSTR_BUF_SIZE];

  for (int level = 0; level < NAPKIN_N_LEVELS; level++)
    for (guint r = 0; r < napkin_diagram_n_regions (diagram); r++)
      {
        const NapkinRegion *region = napkin_diagram_region (diagram, r);
        const char *color = tikz_level_names[region->level];
        double dashes[2];
        NapkinRect rect;
        GString *marks;

        if ((int) region->level != level)
          continue;
        marks = g_string_new (NULL);  /* after the skip: it leaked for every other level */
        napkin_render_region_rect (diagram, r, &rect);
        g_string_append_printf (out, "\\draw[rounded corners=6, fill=%s!10, draw=%s, line width=1.2pt%s] ",
                                color, color,
                                napkin_render_level_dashes (region->level, dashes) ? ", dashed" : "");
        tikz_rect (out, &rect, ";\n");
        g_string_append_printf (out, "\\node[anchor=north west, text=%s, font=\\sffamily\\scriptsize\\bfseries] at (%s,",
                                color, F (rect.x + 6));
        g_string_append_printf (out, "%s) {", F (rect.y + 2));
        append_tex (out, region->name);
        g_string_append_printf (out, " (%s", napkin_level_to_string (region->level));
        if (region->stages > 1)
          g_string_append_printf (out, ", %u stages", region->stages);
        g_string_append (out, ")};\n");
        for (guint m = 0; m < region->marks->len; m++)
          {
            const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, m);

            if (mark->kind == NAPKIN_MARK_WHOLE)
              continue;
            if (marks->len)
              g_string_append (marks, ", ");
            append_tex (marks, mark->axis);
            g_string_append_printf (marks, " %s=%" G_GINT64_FORMAT,
                                    mark->kind == NAPKIN_MARK_PARALLEL ? "g" : "s", mark->tile);
          }
        if (marks->len)
          {
            g_string_append_printf (out, "\\node[anchor=west, draw=%s, fill=white, text=%s, inner sep=2pt] at (%s,",
                                    color, color, F (rect.x + 8));
            g_string_append_printf (out, "%s) {%s};\n", F (rect.y + rect.height), marks->str);
          }
        g_string_free (marks, TRUE);
      }
}

/* Wires as on the canvas: the colour of the fastest region holding both ends,
 * redrawn in a region's colour inside it (clipped) where the wire crosses into
 * it, so the change of colour at the border is the transfer. */
static void
tikz_wires (GString       *out,
            NapkinDiagram *diagram)
{
  char a[G_ASCII_DTOSTR_BUF_SIZE];

  for (guint w = 0; w < napkin_diagram_n_wires (diagram); w++)
    {
      const NapkinWire *wire = napkin_diagram_wire (diagram, w);
      int f = napkin_diagram_find_node (diagram, wire->from);
      int t = napkin_diagram_find_node (diagram, wire->to);
      const NapkinTensorType *type;
      double x1, y1, x2, y2, dx;
      guint rank;
      NapkinLevel base = NAPKIN_LEVEL_HBM;

      if (f < 0 || t < 0 || !napkin_render_port_point (diagram, f, -1, &x1, &y1)
          || !napkin_render_port_point (diagram, t, wire->port, &x2, &y2))
        continue;
      for (guint r = 0; r < napkin_diagram_n_regions (diagram); r++)
        {
          const NapkinRegion *region = napkin_diagram_region (diagram, r);

          if (region->level > base && napkin_region_has_node (region, wire->from)
              && napkin_region_has_node (region, wire->to))
            base = region->level;
        }
      type = napkin_diagram_node_type (diagram, f);
      rank = type && type->valid && type->n_axes ? type->n_axes : 1;
      dx = MAX (30.0, fabs (x2 - x1) / 2);
      for (guint i = 0; i < rank; i++)
        {
          double o = (i - (rank - 1) / 2.0) * 10.0;
          GString *path = g_string_new (NULL);

          g_string_append_printf (path, "(%s,", F (x1));
          g_string_append_printf (path, "%s) .. controls ", F (y1 + o));
          g_string_append_printf (path, "(%s,", F (x1 + dx));
          g_string_append_printf (path, "%s) and ", F (y1 + o));
          g_string_append_printf (path, "(%s,", F (x2 - dx));
          g_string_append_printf (path, "%s) .. ", F (y2 + o));
          g_string_append_printf (path, "(%s,", F (x2));
          g_string_append_printf (path, "%s)", F (y2 + o));

          g_string_append_printf (out, "\\draw[%s, line width=0.8pt] %s;\n", tikz_level_names[base], path->str);

          for (int level = base + 1; level < NAPKIN_N_LEVELS; level++)
            for (guint r = 0; r < napkin_diagram_n_regions (diagram); r++)
              {
                const NapkinRegion *region = napkin_diagram_region (diagram, r);
                NapkinRect rect;

                if ((int) region->level != level
                    || !(napkin_region_has_node (region, wire->from) || napkin_region_has_node (region, wire->to)))
                  continue;
                napkin_render_region_rect (diagram, r, &rect);
                g_string_append (out, "\\begin{scope}\\clip ");
                tikz_rect (out, &rect, "; ");
                g_string_append_printf (out, "\\draw[%s, line width=0.9pt] %s; \\end{scope}\n",
                                        tikz_level_names[level], path->str);
              }
          /* The label last, so no strand is drawn over it. */
          if (type && type->valid && i < type->n_axes)
            {
              const NapkinAxis *axis = napkin_diagram_axis (diagram, type->axes[i]);

              g_string_append_printf (out, "\\path %s node[midway, above=-1pt, fill=white, inner sep=0.5pt, "
                                      "font=\\sffamily\\tiny] {", path->str);
              append_tex (out, axis->name);
              g_string_append_printf (out, " %" G_GINT64_FORMAT "};\n", axis->size);
            }
          g_string_free (path, TRUE);
        }
    }
}

/* The operations and tensors: a box (a softmax's wedge) and its label above. */
static void
tikz_nodes (GString       *out,
            NapkinDiagram *diagram)
{
  char a[G_ASCII_DTOSTR_BUF_SIZE];

  for (guint n = 0; n < napkin_diagram_n_nodes (diagram); n++)
    {
      const NapkinNode *node = napkin_diagram_node (diagram, n);
      NapkinLevel level = napkin_render_node_level (diagram, n);
      const char *color = node->kind == NAPKIN_OP_CONTRACT && level >= NAPKIN_LEVEL_SMEM
                          ? "napkintc" : tikz_level_names[level];
      gboolean tensor = node->kind == NAPKIN_OP_INPUT || node->kind == NAPKIN_OP_OUTPUT;
      NapkinRect r;

      napkin_render_node_rect (diagram, n, &r);
      g_string_append_printf (out, "\\draw[%s, fill=%s, line width=1pt, rounded corners=2] ",
                              color, tensor ? color : "white");
      if (node->kind == NAPKIN_OP_SOFTMAX)
        {
          g_string_append_printf (out, "(%s,", F (r.x));
          g_string_append_printf (out, "%s) -- ", F (r.y + r.height / 2));
          g_string_append_printf (out, "(%s,", F (r.x + r.width));
          g_string_append_printf (out, "%s) -- ", F (r.y));
          g_string_append_printf (out, "(%s,", F (r.x + r.width));
          g_string_append_printf (out, "%s) -- cycle;\n", F (r.y + r.height));
        }
      else
        {
          tikz_rect (out, &r, ";\n");
        }
      g_string_append_printf (out, "\\node[anchor=south, text=napkinhbm%s] at (%s,",
                              tensor ? ", font=\\sffamily\\scriptsize\\bfseries" : "", F (r.x + r.width / 2));
      g_string_append_printf (out, "%s) {", F (r.y - 1));
      {
        g_autofree char *cut = NULL;

        append_tex (out, napkin_render_drawn_label (node->label && *node->label ? node->label : node->id, &cut));
      }
      g_string_append (out, "};\n");
    }
}

char *
napkin_render_to_tikz (NapkinDiagram *diagram)
{
  GString *out;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  out = g_string_new ("% Napkin diagram; needs \\usepackage{tikz} and \\usepackage{amssymb}.\n"
                      "% Colours: device memory black, L2 purple, shared memory orange,\n"
                      "% registers green, tensor-core work blue, several GPUs teal.\n");
  for (guint l = 0; l < NAPKIN_N_LEVELS; l++)
    tikz_define_colour (out, tikz_level_names[l], napkin_render_level_hex (l));
  tikz_define_colour (out, "napkintc", napkin_render_tensor_core_hex ());
  tikz_define_colour (out, "napkingpus", napkin_render_gpus_hex (FALSE));
  /* Document units are pixels with y down; one unit is 0.75 pt at 96 dpi. */
  g_string_append (out, "\\begin{tikzpicture}[x=0.75pt,y=-0.75pt,font=\\sffamily\\scriptsize]\n");
  if (napkin_diagram_get_gpus (diagram) != NULL)
    tikz_gpus (out, diagram);
  tikz_regions (out, diagram);
  tikz_wires (out, diagram);
  tikz_nodes (out, diagram);
  g_string_append (out, "\\end{tikzpicture}\n");
  return g_string_free (out, FALSE);
}
#undef F
