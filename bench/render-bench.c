/* SPDX-License-Identifier: GPL-3.0-or-later */
/* Draws a 500-operation diagram offscreen with the canvas's drawing code and prints
 * the median frame time, full redraw and cached. Target (docs/editor.md, "Render
 * performance"): under 8 ms on the 2-core dev machine. --threads 1 draws as before
 * frames were drawn in bands. */
#include "config.h"

#include <math.h>
#include <time.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "napkin-edit.h"
#include "napkin-render.h"
#include "napkin-validate.h"

#define ROWS     20
#define PER_ROW  25    /* 20 × 25 = 500 operations */
#define FRAMES   60

static void
check (gboolean ok,
       GError  *error)
{
  if (!ok)
    {
      fprintf (stderr, "render-bench: %s\n", error ? error->message : "edit failed");
      exit (1);
    }
}

/* Each row: an input, then contract / map / normalize / softmax / reduce… in a chain,
 * every contraction fed a weight, the middle of the row in a shared-memory region
 * with a register region inside it. */
static NapkinDiagram *
build (void)
{
  NapkinDiagram *diagram = napkin_diagram_new ();
  g_autoptr(NapkinHistory) history = napkin_history_new (diagram);
  GError *error = NULL;

  check (napkin_edit_add_axis (history, "t", 8192, &error), error);
  check (napkin_edit_add_axis (history, "e", 1024, &error), error);
  for (guint r = 0; r < ROWS; r++)
    {
      g_autofree char *x = g_strdup_printf ("X%u", r);
      char *axes[] = { "t", "e", NULL };
      NapkinTensor tensor = { x, axes, NAPKIN_DTYPE_FP16, NULL };
      g_autoptr(GPtrArray) smem = g_ptr_array_new_with_free_func (g_free);
      g_autoptr(GPtrArray) regs = g_ptr_array_new_with_free_func (g_free);
      g_autofree char *prev = NULL;

      check (napkin_edit_add_tensor (history, &tensor, &error), error);
      for (guint c = 0; c < PER_ROW; c++)
        {
          g_autofree char *id = g_strdup_printf ("n%u_%u", r, c);
          NapkinOpKind kind;
          NapkinNode *node;

          if (c == 0)
            kind = NAPKIN_OP_INPUT;
          else if (c % 6 == 1)
            kind = NAPKIN_OP_CONTRACT;
          else if (c % 6 == 2)
            kind = NAPKIN_OP_MAP;
          else if (c % 6 == 3)
            kind = NAPKIN_OP_NORMALIZE;
          else if (c % 6 == 4)
            kind = NAPKIN_OP_SOFTMAX;
          else if (c % 6 == 5)
            kind = NAPKIN_OP_MAP;
          else
            kind = NAPKIN_OP_REARRANGE;
          if (c == 2)
            kind = NAPKIN_OP_INPUT;   /* the weight of the first contraction */

          node = napkin_node_new (id, kind);
          node->x = 40 + c * 150;
          node->y = 60 + r * 170 + (c % 2) * 30;
          node->label = g_strdup_printf ("op %u", c);
          switch (kind)
            {
            case NAPKIN_OP_INPUT:
              node->tensor = g_strdup (x);
              break;
            case NAPKIN_OP_CONTRACT:
            case NAPKIN_OP_REARRANGE:
              node->out = g_strdupv (axes);
              break;
            case NAPKIN_OP_MAP:
              node->fn = c % 6 == 2 ? NAPKIN_FN_GELU : NAPKIN_FN_EXP;
              node->alpha = 1;
              break;
            case NAPKIN_OP_NORMALIZE:
            case NAPKIN_OP_SOFTMAX:
              node->axis = g_strdup ("e");
              node->eps = 1e-5;
              break;
            case NAPKIN_OP_OUTPUT:
            case NAPKIN_OP_REDUCE:
            case NAPKIN_N_OPS:
            default:
              break;
            }
          check (napkin_edit_add_node (history, node, &error), error);
          napkin_item_free (NAPKIN_ITEM_NODE, node);

          if (kind == NAPKIN_OP_INPUT && c == 2)
            continue;
          if (prev != NULL)
            check (napkin_edit_connect (history, prev, id, 0, &error), error);
          if (kind == NAPKIN_OP_CONTRACT)
            {
              g_autofree char *w = g_strdup_printf ("n%u_2", r);

              /* Wired once the weight exists (c == 2 comes later for c == 1). */
              if (c > 2)
                check (napkin_edit_connect (history, w, id, 1, &error), error);
            }
          if (c >= 5 && c < 20)
            g_ptr_array_add (smem, g_strdup (id));
          if (c >= 8 && c < 14)
            g_ptr_array_add (regs, g_strdup (id));
          g_free (prev);
          prev = g_strdup (id);
        }
      {
        g_autofree char *first = g_strdup_printf ("n%u_1", r);
        g_autofree char *w = g_strdup_printf ("n%u_2", r);
        g_autofree char *sname = g_strdup_printf ("block%u", r);
        g_autofree char *rname = g_strdup_printf ("warp%u", r);
        NapkinRegion *region;

        check (napkin_edit_connect (history, w, first, 1, &error), error);
        region = napkin_region_new (sname, NAPKIN_LEVEL_SMEM);
        for (guint i = 0; i < smem->len; i++)
          napkin_region_add_node (region, g_ptr_array_index (smem, i));
        napkin_region_set_mark (region, "t", NAPKIN_MARK_PARALLEL, 128);
        check (napkin_edit_add_region (history, region, &error), error);
        napkin_item_free (NAPKIN_ITEM_REGION, region);
        region = napkin_region_new (rname, NAPKIN_LEVEL_REGISTERS);
        for (guint i = 0; i < regs->len; i++)
          napkin_region_add_node (region, g_ptr_array_index (regs, i));
        napkin_region_set_mark (region, "t", NAPKIN_MARK_PARALLEL, 16);
        check (napkin_edit_add_region (history, region, &error), error);
        napkin_item_free (NAPKIN_ITEM_REGION, region);
      }
    }
  return diagram;
}

/* CPU time of this process, all its threads (a frame is drawn in bands on one
 * thread per core): on a shared machine the wall clock also counts the time
 * other processes hold the cores. */
static double
cpu_ms (void)
{
  struct timespec ts;

  clock_gettime (CLOCK_PROCESS_CPUTIME_ID, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int
cmp_double (const void *a,
            const void *b)
{
  double x = *(const double *) a, y = *(const double *) b;

  return x < y ? -1 : x > y;
}

typedef struct
{
  const char *name;       /* for --case */
  const char *what;
  int         width;
  int         height;
  gboolean    fitted;     /* else zoom 1 at the diagram's top-left */
  gboolean    cached;     /* a frame that reuses the canvas's picture */
} Case;

static const Case cases[] = {
  { "default", "full frame, 840×760 (default window's canvas), fitted", 840, 760, TRUE, FALSE },
  { "large", "full frame, 1600×1000, fitted", 1600, 1000, TRUE, FALSE },
  { "zoom1", "full frame, 1600×1000, zoom 1, top-left", 1600, 1000, FALSE, FALSE },
  { "cached", "cached frame, 1600×1000, fitted, rubber band", 1600, 1000, TRUE, TRUE },
};

/* One frame as the canvas draws it (napkin-canvas.c, snapshot). A full frame is
 * napkin_render_draw_view into a new image surface of the canvas's size (its
 * pixels not cleared: the paper covers them), which the canvas hands to GTK as a
 * texture. A cached frame, when only an overlay changed, composites the kept
 * picture and draws the overlay over it, as GTK's Cairo renderer does with the
 * texture and the overlay's node. The caller frees *pixels after the surface. */
static cairo_surface_t *
frame (const Case                *c,
       NapkinDiagram             *diagram,
       const NapkinRenderOptions *options,
       const NapkinCanvasView    *view,
       cairo_surface_t           *picture,
       guchar                   **pixels)
{
  int stride = cairo_format_stride_for_width (CAIRO_FORMAT_ARGB32, c->width);
  cairo_surface_t *surface;
  cairo_t *cr;

  *pixels = g_malloc ((gsize) stride * c->height);
  surface = cairo_image_surface_create_for_data (*pixels, CAIRO_FORMAT_ARGB32, c->width, c->height, stride);
  cr = cairo_create (surface);

  if (!c->cached)
    napkin_render_draw_view (cr, diagram, options, view, c->width, c->height);
  else
    {
      cairo_set_source_surface (cr, picture, 0, 0);
      cairo_paint (cr);
      cairo_scale (cr, view->zoom, view->zoom);
      cairo_translate (cr, -view->origin_x, -view->origin_y);
      cairo_rectangle (cr, view->origin_x + 100, view->origin_y + 100, 900 / view->zoom, 500 / view->zoom);
      cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.12);
      cairo_fill_preserve (cr);
      cairo_set_source_rgba (cr, 0.21, 0.52, 0.89, 0.8);
      cairo_set_line_width (cr, 1 / view->zoom);
      cairo_stroke (cr);
    }
  cairo_destroy (cr);
  cairo_surface_flush (surface);
  return surface;
}

/* Median milliseconds, wall and CPU, of `frames` frames of a case. */
static void
measure (const Case       *c,
         NapkinDiagram    *diagram,
         GPtrArray        *problems,
         guint             threads,
         int               frames,
         const char       *png,
         NapkinCanvasView *view,
         double           *wall_median,
         double           *cpu_median)
{
  NapkinRenderOptions options = { NULL, 0, -1, -1, problems, FALSE, threads };
  g_autofree double *times = g_new (double, frames);
  g_autofree double *cpu = g_new (double, frames);
  cairo_surface_t *picture = NULL;
  guchar *picture_pixels = NULL;
  NapkinRect b;

  if (c->fitted)
    napkin_render_fit_view (diagram, c->width, c->height, 0.1, 1.5, view);
  else
    {
      napkin_render_bounds (diagram, &b);
      *view = (NapkinCanvasView) { 1.0, b.x, b.y };
    }
  if (c->cached)
    picture = frame (&cases[1], diagram, &options, view, NULL, &picture_pixels);

  for (int f = 0; f < frames + 3; f++)
    {
      gint64 t0 = g_get_monotonic_time ();
      double c0 = cpu_ms ();
      guchar *pixels;
      cairo_surface_t *surface = frame (c, diagram, &options, view, picture, &pixels);

      if (f >= 3)   /* warm-up: font and text caches */
        {
          times[f - 3] = (g_get_monotonic_time () - t0) / 1000.0;
          cpu[f - 3] = cpu_ms () - c0;
        }
      if (f == frames + 2 && png != NULL)
        cairo_surface_write_to_png (surface, png);
      cairo_surface_destroy (surface);
      g_free (pixels);
    }
  g_clear_pointer (&picture, cairo_surface_destroy);
  g_free (picture_pixels);
  qsort (times, frames, sizeof (double), cmp_double);
  qsort (cpu, frames, sizeof (double), cmp_double);
  *wall_median = times[frames / 2];
  *cpu_median = cpu[frames / 2];
}

/* The 1, 5 and 15 minute load averages ("?" where /proc/loadavg cannot be read):
 * other engineers build on the same two cores. */
static char *
load_average (void)
{
  g_autofree char *text = NULL;
  g_auto(GStrv) fields = NULL;

  if (!g_file_get_contents ("/proc/loadavg", &text, NULL, NULL))
    return g_strdup ("?");
  fields = g_strsplit (g_strstrip (text), " ", 4);
  if (g_strv_length (fields) < 3)
    return g_strdup ("?");
  return g_strdup_printf ("%s %s %s", fields[0], fields[1], fields[2]);
}

int
main (int    argc,
      char **argv)
{
  g_autoptr(NapkinDiagram) diagram = build ();
  g_autoptr(GPtrArray) problems = napkin_diagram_check (diagram);
  const char *only = NULL, *png = NULL;
  int frames = 60, threads = 0;
  g_autofree char *load_before = load_average ();
  g_autofree char *load_after = NULL;
  g_autofree char *how = NULL;

  for (int i = 1; i < argc; i++)
    {
      if (strcmp (argv[i], "--case") == 0 && i + 1 < argc)
        only = argv[++i];
      else if (strcmp (argv[i], "--frames") == 0 && i + 1 < argc)
        frames = atoi (argv[++i]);
      else if (strcmp (argv[i], "--threads") == 0 && i + 1 < argc)
        threads = atoi (argv[++i]);
      else if (argv[i][0] != '-' && png == NULL)
        png = argv[i];
      else
        {
          fprintf (stderr, "usage: render-bench [--case default|large|zoom1|cached] [--frames N] [--threads N] [OUT.png]\n"
                           "  --threads: bands drawn at once (default 0: one per processor, at most 4)\n"
                           "  OUT.png: the last frame of the 1600×1000 fitted case, or of the --case\n");
          return 2;
        }
    }
  if (frames < 1 || threads < 0)
    {
      fprintf (stderr, "render-bench: --frames must be at least 1 and --threads at least 0\n");
      return 2;
    }

  how = threads == 0 ? g_strdup_printf ("in bands, one per processor (%u)", MIN (g_get_num_processors (), 4))
        : threads == 1 ? g_strdup ("on one thread") : g_strdup_printf ("in %d bands", threads);
  printf ("render-bench: %u operations, %u wires, %u regions, %u problems marked, %d frames each, "
          "%s; load average %s\n",
          napkin_diagram_n_nodes (diagram), napkin_diagram_n_wires (diagram),
          napkin_diagram_n_regions (diagram), problems->len, frames,
          how, load_before);
  printf ("%-52s %6s %12s %12s %8s\n", "frame on a Cairo image surface", "zoom", "median wall", "median CPU",
          "target");
  for (guint i = 0; i < G_N_ELEMENTS (cases); i++)
    {
      const Case *c = &cases[i];
      NapkinCanvasView view;
      double wall, cpu;

      if (only != NULL && strcmp (only, c->name) != 0)
        continue;
      measure (c, diagram, problems, threads, frames, i == 1 || only != NULL ? png : NULL, &view, &wall, &cpu);
      printf ("%-52s %6.3f %9.2f ms %9.2f ms %8s  %s\n", c->what, view.zoom, wall, cpu, "< 8 ms",
              wall < 8 ? "ok" : "MISSED");
    }
  load_after = load_average ();
  printf ("load average after: %s\n", load_after);
  printf ("(wall time counts other processes on shared cores; CPU time is this process's, all threads)\n");
  return 0;
}
