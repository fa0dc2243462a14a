/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-model.h"
#include "napkin-validate.h"

/* Byte sums of live sets can pass 2^63 on absurd diagrams; GCC and Clang both have a 128-bit integer. */
__extension__ typedef __int128 NapkinWide;

static const char *resource_names[NAPKIN_N_RESOURCES] = {
  "tensor", "cuda", "sfu", "hbm", "l2", "smem", "registers",
};

const char *
napkin_resource_to_string (NapkinResource resource)
{
  g_return_val_if_fail (resource < NAPKIN_N_RESOURCES, NULL);
  return resource_names[resource];
}

/* The resource's name for people, in their language (the JSON keeps napkin_resource_to_string's). */
const char *
napkin_resource_to_label (NapkinResource resource)
{
  static const char *labels[NAPKIN_N_RESOURCES] = {
    NC_("resource", "tensor"), NC_("resource", "cuda"), NC_("resource", "sfu"), NC_("resource", "hbm"),
    NC_("resource", "l2"), NC_("resource", "smem"), NC_("resource", "registers"),
  };

  g_return_val_if_fail (resource < NAPKIN_N_RESOURCES, NULL);
  return g_dpgettext2 (GETTEXT_PACKAGE, "resource", labels[resource]);
}

static NapkinResource
level_resource (NapkinLevel level)
{
  return NAPKIN_RESOURCE_HBM + level;
}

/* Per-region working state. */
typedef struct
{
  const NapkinRegion *region;
  guint               index;       /* in the diagram */
  int                 parent;      /* in the state array */
  int                 kernel;      /* top-level ancestor, in the state array */
  guint               depth;
  guchar             *member;      /* per node */
  GArray             *members;     /* guint node indices, in topological order */
  gint64             *extent;      /* per axis: extent of one instance */
  gint64             *chunks;      /* per axis: stream chunks per group (1 if not streamed) */
  guint               stream_parts;/* the plan's kernel runs each stream chunk as this many (≥ 1) */
  gboolean            explicit_threads;
  gint64              steps;
  gint64              instances;
  GArray             *loops;       /* Loop: the stream loops around one step, outermost first */
  guint               n_errors;
  gboolean            wgmma;       /* on Hopper's wgmma skeletons (docs/model.md §6b) */
  gint64              wgmma_rows;  /* its BM or query tile */
  gint64              wgmma_smem;  /* the skeleton's shared memory: stages, Q, alignment, barriers */
  gint64              rows_c;      /* the rows skeleton (§7c): the row length C; 0: not that pattern */
  guint               rows_threads;
  guint               rows_reductions;
  gint64              rows_r;      /* rows per block */
  gint64              rows_bytes;  /* bytes one row loads (its input) */
  gint64              rows_flight; /* bytes a block keeps in flight (0: rows_bytes) */
  guint               rows_axis;   /* the row axis r */
} RegionState;

typedef struct
{
  guint  axis;
  gint64 trips;
} Loop;

typedef struct
{
  NapkinDiagram        *d;
  NapkinArch           *arch;
  NapkinAnalysis       *a;
  guint                 n_nodes;
  guint                 n_axes;
  guint                 n_regions;
  RegionState          *rs;
  int                  *innermost;   /* per node: deepest region, -1 none */
  guint                *pos;         /* per node: place in the topological order */
  int                   current;     /* region being modelled, for its error count */
  gboolean              overflow;
  double                best_kernel_s;   /* the longest kernel on its best path */
  gboolean              exp_fma_seen;    /* node_compute priced exponentials on the FMA units */
  double                sfu_all_s;       /* node_compute: SFU time were every exponential on it */
  double                issue_extra_s;   /* node_compute: the softmax phase's growth from exp on FMA
                                            and score operands */
  double                score_ops;       /* the attention kernel's score operands' instructions a score */
  gint64                chunks;          /* the kernel's key chunks (its rows' corrections) */
  gint64                exp_blocks;      /* the wgmma attention kernel's score blocks a chunk (BKV / 8) */
  NapkinPlan           *plan;        /* the kernel plan priced (a->plan) */
  gint64                flops_before[NAPKIN_N_TENSOR_CLASSES];   /* before the current kernel's */
  GHashTable           *warned;      /* the warnings' texts, against repeats */
} Model;

static const NapkinPlanKernel *plan_kernel_of (Model *m, guint r);

static void
transfer_clear (gpointer p)
{
  NapkinTransfer *t = p;

  g_free (t->tensor);
}

static void
region_cost_clear (gpointer p)
{
  NapkinRegionCost *r = p;

  g_free (r->name);
  g_free (r->tile);
  g_clear_pointer (&r->transfers, g_array_unref);
}

static void
kernel_cost_clear (gpointer p)
{
  NapkinKernelCost *k = p;

  g_free (k->name);
  g_free (k->reason);
  g_free (k->note);
}

void
napkin_analysis_free (NapkinAnalysis *a)
{
  if (a == NULL)
    return;
  g_clear_pointer (&a->arch, napkin_arch_unref);
  g_clear_pointer (&a->plan, napkin_plan_free);
  g_clear_pointer (&a->regions, g_array_unref);
  g_clear_pointer (&a->kernels, g_array_unref);
  g_clear_pointer (&a->errors, g_ptr_array_unref);
  g_clear_pointer (&a->error_regions, g_array_unref);
  g_clear_pointer (&a->warnings, g_ptr_array_unref);
  g_free (a->best_note);
  g_free (a);
}

/* A checked result: where it overflowed, the analysis fails and a large stand-in
 * keeps the rest of the model going. */
static gint64
checked (Model    *m,
         gboolean  ok,
         gint64    r)
{
  if (!ok)
    {
      m->overflow = TRUE;
      return G_MAXINT64 / 4;
    }
  return r;
}

static gint64
mul (Model  *m,
     gint64  x,
     gint64  y)
{
  gint64 r = 0;
  gboolean ok = napkin_mul_checked (x, y, &r);

  return checked (m, ok, r);
}

static gint64
add (Model  *m,
     gint64  x,
     gint64  y)
{
  gint64 r = 0;
  gboolean ok = napkin_add_checked (x, y, &r);

  return checked (m, ok, r);
}

static gint64
ceil_div (gint64 x,
          gint64 y)
{
  return x / y + (x % y != 0);
}

static NapkinDtype
value_dtype (Model *m,
             guint  node)
{
  return m->a->has_dtype ? m->a->dtype : napkin_diagram_node_type (m->d, node)->dtype;
}

/* The element type an output operation stores: its tensor's. */
static NapkinDtype
output_dtype (Model *m,
              guint  node)
{
  int t = napkin_diagram_find_tensor (m->d, napkin_diagram_node (m->d, node)->tensor);

  if (m->a->has_dtype || t < 0)
    return value_dtype (m, node);
  return napkin_diagram_tensor (m->d, t)->dtype;
}

static guint
dtype_bytes (Model *m,
             guint  node)
{
  return napkin_dtype_bytes (value_dtype (m, node));
}

/* A value's name in the report: the tensor for inputs, the node id otherwise. */
static const char *
value_name (Model *m,
            guint  node)
{
  const NapkinNode *n = napkin_diagram_node (m->d, node);
  guint n_consumers;
  const guint *consumers;

  if (n->kind == NAPKIN_OP_INPUT && n->tensor)
    return n->tensor;
  /* a result that goes straight to an output is known by that tensor's name */
  consumers = napkin_diagram_consumers (m->d, node, &n_consumers);
  for (guint c = 0; c < n_consumers; c++)
    {
      const NapkinNode *out = napkin_diagram_node (m->d, consumers[c]);

      if (out->kind == NAPKIN_OP_OUTPUT && out->tensor)
        return out->tensor;
    }
  return n->id;
}

static void
error_add (Model      *m,
           const char *format,
           ...) G_GNUC_PRINTF (2, 3);

static void
error_add (Model      *m,
           const char *format,
           ...)
{
  va_list args;

  va_start (args, format);
  g_ptr_array_add (m->a->errors, g_strdup_vprintf (format, args));
  va_end (args);
  g_array_append_val (m->a->error_regions, m->current);
  m->a->feasible = FALSE;
  if (m->current >= 0)
    m->rs[m->current].n_errors++;
}

static void
warning_add (Model      *m,
             const char *format,
             ...) G_GNUC_PRINTF (2, 3);

static void
warning_add (Model      *m,
             const char *format,
             ...)
{
  va_list args;
  char *text;

  va_start (args, format);
  text = g_strdup_vprintf (format, args);
  va_end (args);
  /* a set, not a scan of the list: 256 regions of 100 000 operations warn often */
  if (m->warned == NULL)
    m->warned = g_hash_table_new (g_str_hash, g_str_equal);
  if (!g_hash_table_add (m->warned, text))
    {
      g_free (text);
      return;
    }
  g_ptr_array_add (m->a->warnings, text);
}

/* Tile of a value inside region state r (r < 0: the whole tensor). */
static gint64
tile_elements (Model *m,
               int    r,
               guint  node)
{
  const NapkinTensorType *type = napkin_diagram_node_type (m->d, node);
  gint64 e = 1;

  for (guint i = 0; i < type->n_axes; i++)
    e = mul (m, e, r < 0 ? napkin_diagram_axis_size (m->d, type->axes[i]) : m->rs[r].extent[type->axes[i]]);
  return e;
}

/* How often a value's tile moves per instance: the stream loops (the ancestors'
 * outside, the region's own inside) run in a nest; the tile is fetched again on
 * every trip of every loop down to the innermost one whose axis it carries, and
 * stays resident under the loops inside that. */
static gint64
loop_count (Model *m,
            int    r,
            guint  node)
{
  const NapkinTensorType *type = napkin_diagram_node_type (m->d, node);
  GArray *loops = m->rs[r].loops;
  gint64 c = 1;
  int innermost = -1;

  for (guint i = 0; i < loops->len; i++)
    if (napkin_tensor_type_has_axis (type, g_array_index (loops, Loop, i).axis))
      innermost = i;
  for (int i = 0; i <= innermost; i++)
    c = mul (m, c, g_array_index (loops, Loop, i).trips);
  return c;
}

static gboolean
carries_stream (Model *m,
                int    r,
                guint  node)
{
  const NapkinTensorType *type = napkin_diagram_node_type (m->d, node);

  for (guint i = 0; i < type->n_axes; i++)
    {
      gint64 tile;

      if (napkin_region_mark (m->rs[r].region, napkin_diagram_axis (m->d, type->axes[i])->name, &tile)
          == NAPKIN_MARK_STREAM)
        return TRUE;
    }
  return FALSE;
}

/* ---- structure: nesting, extents, instances --------------------------------------------- */

static guint
region_threads (const NapkinRegion *region,
                gboolean           *explicit)
{
  if (region->threads > 0)
    {
      *explicit = TRUE;
      return region->threads;
    }
  *explicit = FALSE;
  return region->level == NAPKIN_LEVEL_REGISTERS ? 32 : 128;
}

static gint
compare_pos (gconstpointer a,
             gconstpointer b,
             gpointer      data)
{
  const guint *pos = data;
  guint x = pos[*(const guint *) a], y = pos[*(const guint *) b];

  return x < y ? -1 : x > y;
}

static void
build_regions (Model *m)
{
  NapkinDiagram *d = m->d;

  const guint *topo = napkin_diagram_topo_order (d);

  m->rs = g_new0 (RegionState, m->n_regions + 1);
  m->innermost = g_new (int, m->n_nodes + 1);
  m->pos = g_new (guint, m->n_nodes + 1);
  for (guint n = 0; n < m->n_nodes; n++)
    {
      m->innermost[n] = -1;
      m->pos[topo[n]] = n;
    }

  for (guint r = 0; r < m->n_regions; r++)
    {
      RegionState *rs = &m->rs[r];

      rs->region = napkin_diagram_region (d, r);
      rs->index = r;
      rs->member = g_new0 (guchar, m->n_nodes + 1);
      rs->members = g_array_new (FALSE, FALSE, sizeof (guint));
      for (guint i = 0; i < rs->region->nodes->len; i++)
        {
          int n = napkin_diagram_find_node (d, g_ptr_array_index (rs->region->nodes, i));

          if (n >= 0 && !rs->member[n])
            {
              guint node = n;

              rs->member[n] = 1;
              g_array_append_val (rs->members, node);
            }
        }
      g_array_sort_with_data (rs->members, compare_pos, m->pos);
    }

  /* Parent: the smallest region holding all of r's operations (validation
   * guarantees proper nesting); equal sets nest slower outside faster. */
  for (guint r = 0; r < m->n_regions; r++)
    {
      RegionState *rs = &m->rs[r];
      int best = -1;

      for (guint p = 0; p < m->n_regions && rs->members->len > 0; p++)
        {
          RegionState *ps = &m->rs[p];
          gboolean contains = ps->member[g_array_index (rs->members, guint, 0)];

          if (p == r)
            continue;
          for (guint i = 1; i < rs->members->len && contains; i++)
            contains = ps->member[g_array_index (rs->members, guint, i)];
          if (!contains)
            continue;
          if (ps->region->nodes->len == rs->region->nodes->len && ps->region->level >= rs->region->level)
            continue;
          if (best < 0 || ps->region->nodes->len < m->rs[best].region->nodes->len
              || (ps->region->nodes->len == m->rs[best].region->nodes->len
                  && ps->region->level > m->rs[best].region->level))
            best = p;
        }
      rs->parent = best;
    }
  for (guint r = 0; r < m->n_regions; r++)
    {
      int p = r;

      m->rs[r].depth = 0;
      while (m->rs[p].parent >= 0 && m->rs[r].depth <= m->n_regions)
        {
          p = m->rs[p].parent;
          m->rs[r].depth++;
        }
      m->rs[r].kernel = p;
    }
  for (guint r = 0; r < m->n_regions; r++)
    for (guint i = 0; i < m->rs[r].members->len; i++)
      {
        guint n = g_array_index (m->rs[r].members, guint, i);

        if (m->innermost[n] < 0 || m->rs[r].depth > m->rs[m->innermost[n]].depth)
          m->innermost[n] = r;
      }
}

/* Regions in an order where parents come first. */
static guint *
region_order (Model *m)
{
  guint *order = g_new (guint, m->n_regions + 1);
  guint k = 0;

  for (guint depth = 0; k < m->n_regions && depth <= m->n_regions; depth++)
    for (guint r = 0; r < m->n_regions; r++)
      if (m->rs[r].depth == depth)
        order[k++] = r;
  return order;
}

/* ---- the per-region model --------------------------------------------------------------- */

static void
add_transfer (Model            *m,
              NapkinRegionCost *cost,
              guint             node,
              NapkinLevel       from,
              NapkinLevel       to,
              gboolean          is_output,
              gint64            tile,
              gint64            count)
{
  NapkinTransfer t = { 0 };

  t.tensor = g_strdup (value_name (m, node));
  t.node = node;
  t.from = from;
  t.to = to;
  t.is_output = is_output;
  t.dtype = value_dtype (m, node);
  t.tile_elements = tile;
  t.count = count;
  t.elements = mul (m, tile, count);
  t.bytes = mul (m, t.elements, napkin_dtype_bytes (t.dtype));
  t.hbm_elements = t.elements;
  t.hbm_bytes = t.bytes;
  t.sharers = 1;
  cost->transfer_elements = add (m, cost->transfer_elements, t.elements);
  cost->transfer_bytes = add (m, cost->transfer_bytes, t.bytes);
  g_array_append_val (cost->transfers, t);
}

/* Tensor-core fragment shapes: rows multiple of 16, columns of 8, the contracted
 * axis of 32 bytes (16 half-precision, 32 eight-bit, 8 tf32 elements). */
static void
check_fragments (Model *m,
                 guint  r,
                 guint  node)
{
  const NapkinRegion *region = m->rs[r].region;
  const NapkinTensorType *out = napkin_diagram_node_type (m->d, node);
  int s0 = napkin_diagram_input_source (m->d, node, 0);
  int s1 = napkin_diagram_input_source (m->d, node, 1);
  const NapkinTensorType *x, *y;
  NapkinTensorClass klass;
  NapkinDtype dtype;

  if (s0 < 0 || s1 < 0)
    return;
  x = napkin_diagram_node_type (m->d, s0);
  y = napkin_diagram_node_type (m->d, s1);
  dtype = napkin_dtype_bytes (value_dtype (m, s0)) >= napkin_dtype_bytes (value_dtype (m, s1))
          ? value_dtype (m, s0) : value_dtype (m, s1);
  if (!napkin_tensor_class_for_dtype (dtype, &klass))
    return;   /* fp32: CUDA cores, no fragment shape */

  /* The rule is on the tile as a whole: the rows of a fragment may come from several
   * axes (a group of query heads × a query tile), so each role's tiles multiply. A tile
   * that covers its axis needs nothing (the kernel pads it). Where the kernel plan runs
   * the region on tile primitives, its own rules decided (docs/plan.md). */
  {
    const NapkinPlanKernel *pk = m->a->paper ? NULL : plan_kernel_of (m, r);
    const char *roles[3] = { "row (m)", "column (n)", "contracted (k)" };
    gint64 need[3] = { 16, 8, 32 / napkin_dtype_bytes (dtype) };
    gint64 prod[3] = { 1, 1, 1 };
    gboolean cut[3] = { FALSE, FALSE, FALSE };
    int last[3] = { -1, -1, -1 };

    if (pk != NULL && pk->path != NAPKIN_PATH_GENERIC)
      return;
    for (guint a = 0; a < m->n_axes; a++)
      {
        gboolean in_x = napkin_tensor_type_has_axis (x, a);
        gboolean in_y = napkin_tensor_type_has_axis (y, a);
        gboolean in_out = napkin_tensor_type_has_axis (out, a);
        gint64 tile = 0, size = napkin_diagram_axis_size (m->d, a);
        int role;

        if (in_x && in_y && in_out)
          continue;   /* batch axis: any size */
        role = in_x && in_y ? 2 : in_x && in_out ? 0 : in_y && in_out ? 1 : -1;
        if (role < 0)
          continue;
        if (napkin_region_mark (region, napkin_diagram_axis (m->d, a)->name, &tile) == NAPKIN_MARK_WHOLE
            || tile >= size)
          tile = size;
        else
          cut[role] = TRUE;
        prod[role] *= tile;
        last[role] = (int) a;
      }
    for (guint i = 0; i < 3; i++)
      if (cut[i] && prod[i] % need[i] != 0)
        error_add (m, _("regions[%u].marks.%s: tile %lld is not a multiple of %lld: the %s axis of contraction “%s” on %s tensor cores needs fragments of %lld"),
                   r, napkin_diagram_axis (m->d, last[i])->name, (long long) prod[i], (long long) need[i], roles[i],
                   napkin_diagram_node (m->d, node)->id, napkin_dtype_to_string (dtype), (long long) need[i]);
  }
}

/* 128-byte coalescing of a tile read from or written to device memory. */
static void
check_coalescing (Model *m,
                  guint  r,
                  guint  node)
{
  const NapkinTensorType *type = napkin_diagram_node_type (m->d, node);
  guint last;
  const char *name;
  gint64 tile, bytes;

  if (type->n_axes == 0)
    return;
  last = type->axes[type->n_axes - 1];
  name = napkin_diagram_axis (m->d, last)->name;
  if (napkin_region_mark (m->rs[r].region, name, &tile) == NAPKIN_MARK_WHOLE)
    return;
  bytes = tile * dtype_bytes (m, node);
  if (bytes % 128 != 0 && tile < napkin_diagram_axis_size (m->d, last))
    error_add (m, _("regions[%u].marks.%s: tile %lld × %u bytes = %lld bytes of %s's contiguous axis %s is not a multiple of 128 (coalesced device-memory access "
               "needs rows of %u elements)"), r, name, (long long) tile, dtype_bytes (m, node), (long long) bytes,
               value_name (m, node), name, 128 / dtype_bytes (m, node));
}

/* Without a stream, an elementwise-shaped operation (map, softmax, normalize)
 * may write its result over the tile of a boundary input that it alone reads
 * and that has the same shape and no narrower type: the output needs no buffer
 * of its own. */
static gboolean
writes_in_place (Model *m,
                 guint  r,
                 guint  n)
{
  const NapkinNode *node = napkin_diagram_node (m->d, n);
  int src = napkin_diagram_input_source (m->d, n, 0);
  guint n_consumers;

  if (src < 0 || m->rs[r].member[src])
    return FALSE;
  for (guint a = 0; a < m->n_axes; a++)
    if (m->rs[r].chunks[a] > 1)
      return FALSE;
  if (node->kind != NAPKIN_OP_MAP && node->kind != NAPKIN_OP_SOFTMAX && node->kind != NAPKIN_OP_NORMALIZE)
    return FALSE;
  napkin_diagram_consumers (m->d, src, &n_consumers);
  return n_consumers == 1 && tile_elements (m, r, src) == tile_elements (m, r, n)
         && dtype_bytes (m, src) >= dtype_bytes (m, n);
}

/* The same for a value made inside: an elementwise-shaped operation may write its
 * result over its first input when that is an intermediate it alone reads, of the
 * same shape. Returns that input, or -1. */
static int
overwrites_intermediate (Model *m,
                         guint  r,
                         guint  n)
{
  const NapkinNode *node = napkin_diagram_node (m->d, n);
  int src = napkin_diagram_input_source (m->d, n, 0);
  guint n_consumers;

  if (src < 0 || !m->rs[r].member[src])
    return -1;
  if (node->kind != NAPKIN_OP_MAP && node->kind != NAPKIN_OP_SOFTMAX && node->kind != NAPKIN_OP_NORMALIZE)
    return -1;
  napkin_diagram_consumers (m->d, src, &n_consumers);
  if (n_consumers != 1 || tile_elements (m, r, src) != tile_elements (m, r, n)
      || dtype_bytes (m, src) < dtype_bytes (m, n))
    return -1;
  return src;
}

/* The largest total of the tiles of values made inside region r and still to be
 * used inside it, over its columns (members in topological order). A value is live
 * from its column to its last consumer's; an operation writing over its dying input
 * needs one buffer for both. One sweep with a running sum: the pairwise scan was
 * quadratic (100 000 operations in one region took 21 s). */
static gint64
largest_live_set (Model *m,
                  guint  r)
{
  RegionState *rs = &m->rs[r];
  g_autofree NapkinWide *expiring = g_new0 (NapkinWide, m->n_nodes + 1);
  NapkinWide sum = 0;
  gint64 largest = 0;
  guint swept = 0;

  for (guint i = 0; i < rs->members->len; i++)
    {
      guint here = g_array_index (rs->members, guint, i);
      guint column = m->pos[here];
      int reused = overwrites_intermediate (m, r, here);
      guint n_consumers;
      const guint *consumers = napkin_diagram_consumers (m->d, here, &n_consumers);
      gboolean inside = n_consumers > 0;
      guint last = column;
      NapkinWide live;

      /* Values whose last consumer came before this column are dead. */
      for (; swept < column; swept++)
        sum -= expiring[swept];

      for (guint c = 0; c < n_consumers; c++)
        {
          inside &= rs->member[consumers[c]];   /* an output: counted in the footprint */
          last = MAX (last, m->pos[consumers[c]]);
        }
      if (inside)
        {
          gint64 bytes = mul (m, tile_elements (m, r, here), dtype_bytes (m, here));

          sum += bytes;
          expiring[last] += bytes;
        }
      live = sum;
      if (reused >= 0)
        live -= mul (m, tile_elements (m, r, reused), dtype_bytes (m, reused));
      if (live > G_MAXINT64)
        {
          m->overflow = TRUE;
          return G_MAXINT64 / 4;
        }
      largest = MAX (largest, (gint64) live);
    }
  return largest;
}

static void
append_int (GString *str,
            gint64   v)
{
  char buf[24];
  int i = sizeof buf - 1;

  g_assert (v >= 0);
  buf[i] = '\0';
  do
    {
      buf[--i] = '0' + v % 10;
      v /= 10;
    }
  while (v > 0);
  g_string_append (str, buf + i);
}

/* The stages region r runs, and (in rs) the parts of its stream chunk. The stages are a
 * hint: an attention kernel of the plan runs the plan's stages (lowered to fit shared
 * memory, raised to the fp8 floor; docs/plan.md), and the model prices those; an
 * attention whose key chunks the mma.sync kernel runs in parts is priced at its parts. */
static guint
attention_plan_stages (Model       *m,
                       guint        r,
                       RegionState *rs)
{
  const NapkinPlanKernel *pk = m->a->paper ? NULL : plan_kernel_of (m, r);
  guint stages = MAX (1, rs->region->stages);

  rs->stream_parts = 1;
  if (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION)
    return stages;
  rs->stream_parts = MAX (1u, pk->u.att.bkv_parts);
  return MAX (1u, pk->u.att.stages);
}

static void
model_region (Model *m,
              guint  r)
{
  RegionState *rs = &m->rs[r];
  const NapkinRegion *region = rs->region;
  NapkinRegionCost cost = { 0 };
  RegionState *ps = rs->parent >= 0 ? &m->rs[rs->parent] : NULL;
  gint64 parent_instances = 1;
  g_autoptr(GString) tile = g_string_new (NULL);
  g_autofree guchar *loaded = g_new0 (guchar, m->n_nodes + 1);
  NapkinLevel from;

  cost.name = g_strdup (region->name);
  cost.region = r;
  cost.level = region->level;
  cost.parent_level = ps ? ps->region->level : NAPKIN_LEVEL_HBM;
  cost.stages = attention_plan_stages (m, r, rs);
  cost.threads = region_threads (region, &rs->explicit_threads);
  cost.transfers = g_array_new (FALSE, TRUE, sizeof (NapkinTransfer));
  g_array_set_clear_func (cost.transfers, transfer_clear);
  cost.feasible = TRUE;
  from = cost.parent_level;

  m->current = r;
  rs->loops = g_array_new (FALSE, FALSE, sizeof (Loop));
  if (ps != NULL)
    {
      parent_instances = ps->instances;
      g_array_append_vals (rs->loops, ps->loops->data, ps->loops->len);
    }

  /* Extents and counts: parallel(g) cuts the parent's extent into ⌈e/g⌉ groups,
   * stream(s) into ⌈e/s⌉ chunks folded by one instance. */
  rs->extent = g_new (gint64, m->n_axes + 1);
  rs->chunks = g_new (gint64, m->n_axes + 1);
  cost.groups = 1;
  cost.chunks = 1;
  for (guint a = 0; a < m->n_axes; a++)
    {
      const char *name = napkin_diagram_axis (m->d, a)->name;
      gint64 outer = ps ? ps->extent[a] : napkin_diagram_axis_size (m->d, a);
      gint64 t = 0;
      NapkinMarkKind kind = napkin_region_mark (region, name, &t);

      rs->chunks[a] = 1;
      if (kind == NAPKIN_MARK_WHOLE || t <= 0)
        {
          rs->extent[a] = outer;
          continue;
        }
      t = MIN (t, outer);
      if (kind == NAPKIN_MARK_STREAM && rs->stream_parts > 1)
        t = ceil_div (t, rs->stream_parts);
      rs->extent[a] = t;
      if (kind == NAPKIN_MARK_PARALLEL)
        cost.groups = mul (m, cost.groups, ceil_div (outer, t));
      else
        {
          Loop loop = { a, ceil_div (outer, t) };

          rs->chunks[a] = loop.trips;
          cost.chunks = mul (m, cost.chunks, rs->chunks[a]);
          g_array_append_val (rs->loops, loop);
        }
      /* "m=128 k~64"; built by hand: printf was a fifth of the whole analysis */
      if (tile->len)
        g_string_append_c (tile, ' ');
      g_string_append (tile, name);
      g_string_append_c (tile, kind == NAPKIN_MARK_STREAM ? '~' : '=');
      append_int (tile, t);
    }
  cost.tile = g_strdup (tile->len ? tile->str : "whole");
  /* instances run at once, each over the whole loop nest */
  cost.instances = mul (m, parent_instances, cost.groups);
  rs->instances = cost.instances;
  cost.steps = cost.instances;
  for (guint i = 0; i < rs->loops->len; i++)
    cost.steps = mul (m, cost.steps, g_array_index (rs->loops, Loop, i).trips);
  rs->steps = cost.steps;

  /* Transfers and the footprint. Inputs crossing the boundary: tile × groups ×
   * the chunks of the streamed axes they carry (a tensor without a streamed
   * axis stays resident over the stream); outputs: once per group, times the
   * chunks of streamed axes they still carry. */
  for (guint i = 0; i < rs->members->len; i++)
    {
      guint n = g_array_index (rs->members, guint, i);
      const NapkinNode *node = napkin_diagram_node (m->d, n);
      guint n_consumers;
      const guint *consumers;
      gboolean leaves = FALSE;

      for (guint p = 0; p < napkin_op_n_inputs (node); p++)
        {
          int src = napkin_diagram_input_source (m->d, n, p);
          gint64 t, count;

          if (src < 0 || rs->member[src] || loaded[src])
            continue;
          loaded[src] = 1;
          t = tile_elements (m, r, src);
          count = mul (m, cost.instances, loop_count (m, r, src));
          add_transfer (m, &cost, src, from, region->level, FALSE, t, count);
          t = mul (m, t, carries_stream (m, r, src) ? cost.stages : 1);
          cost.footprint_elements = add (m, cost.footprint_elements, t);
          cost.footprint_bytes = add (m, cost.footprint_bytes, mul (m, t, dtype_bytes (m, src)));
          if (from == NAPKIN_LEVEL_HBM)
            check_coalescing (m, r, src);
        }

      consumers = napkin_diagram_consumers (m->d, n, &n_consumers);
      for (guint c = 0; c < n_consumers; c++)
        leaves |= !rs->member[consumers[c]];
      if (leaves)
        {
          gint64 t = tile_elements (m, r, n);
          gint64 count = mul (m, cost.instances, loop_count (m, r, n));

          add_transfer (m, &cost, n, from, region->level, TRUE, t, count);
          if (!writes_in_place (m, r, n))
            {
              cost.footprint_elements = add (m, cost.footprint_elements, t);
              cost.footprint_bytes = add (m, cost.footprint_bytes, mul (m, t, dtype_bytes (m, n)));
            }
          if (from == NAPKIN_LEVEL_HBM)
            check_coalescing (m, r, n);
        }

      if (node->kind == NAPKIN_OP_CONTRACT
          && (region->level == NAPKIN_LEVEL_SMEM || region->level == NAPKIN_LEVEL_REGISTERS))
        check_fragments (m, r, n);
    }

  /* Values made and used inside: the largest live set over the columns. */
  cost.intermediate_bytes = largest_live_set (m, r);

  m->current = -1;
  g_array_append_val (m->a->regions, cost);
}

/* A region the plan runs as a contiguous rows kernel whose threads or row the skeleton
 * rule below would not take (one warp a block, a row of 50257, 512 values a thread):
 * the same chain of rows a block walks, at the plan's threads and rows per block, so
 * that its latency and Little's law price what runs (docs/model.md §7c). */
static const NapkinPlanKernel *plan_kernel_of (Model *m,
                                               guint  r);

static void
detect_planned_rows (Model *m,
                     guint  r)
{
  RegionState *rs = &m->rs[r];
  const NapkinPlanKernel *pk = plan_kernel_of (m, r);
  const NapkinPlanRows *pr;
  const NapkinTensorType *x;
  int src;

  if (pk == NULL || pk->kind != NAPKIN_PLAN_ROWS || pk->path == NAPKIN_PATH_GENERIC || m->rs[r].kernel != (int) r)
    return;
  pr = &pk->u.rows;
  if (pr->inner > 1 || pr->op == NAPKIN_OP_REDUCE || pr->node < 0 || pr->threads_per_row == 0)
    return;
  src = napkin_diagram_input_source (m->d, (guint) pr->node, 0);
  x = src >= 0 ? napkin_diagram_node_type (m->d, src) : NULL;
  if (x == NULL || !x->valid || x->n_axes < 2)
    return;
  rs->rows_c = pr->cols;
  rs->rows_axis = x->axes[0];
  rs->rows_threads = pr->threads;
  /* a block's teams work on rows side by side; each team walks its share in turn */
  rs->rows_r = MAX (1, (pr->rows_per_block + pr->threads / pr->threads_per_row - 1) / (pr->threads / pr->threads_per_row));
  rs->rows_bytes = pr->cols * napkin_dtype_bytes (pr->x_dtype);
  rs->rows_reductions = pr->op == NAPKIN_OP_NORMALIZE && pr->norm == NAPKIN_NORM_RMSNORM ? 1 : 2;
  /* what a block has in flight: a register-form thread loads its share of the row at
   * once; the sweeps of the other forms keep UNROLL vectors a thread in flight
   * (kernels/rows-sm80.cu) */
  {
    gint64 share = (pr->cols / MAX (1u, pr->vec) + pr->threads_per_row - 1) / pr->threads_per_row;
    gint64 loads = pr->one_pass && !pr->smem_row ? share : MIN (share, pr->threads > 512 ? 2 : 4);

    rs->rows_flight = (gint64) pr->threads * MAX (1, loads) * pr->vec * napkin_dtype_bytes (pr->x_dtype);
  }
}

/* The rows skeleton (kernels/rows.cu, src/codegen try_rows): a region without
 * contractions whose softmax or normalisation reads a matrix X[r, c] from outside and
 * keeps c whole, r in parallel groups of R, 16-bit elements. One block per group, one
 * row at a time: C / T values a thread in registers (T: the region's threads, else 256
 * halved until 8·T divides C), 16-byte loads, shuffle reductions with two barriers each. */
static void
detect_rows_skeleton (Model *m,
                      guint  r)
{
  RegionState *rs = &m->rs[r];
  int op = -1;

  if (rs->region->level != NAPKIN_LEVEL_SMEM && rs->region->level != NAPKIN_LEVEL_REGISTERS)
    return;
  for (guint i = 0; i < rs->members->len; i++)
    {
      guint n = g_array_index (rs->members, guint, i);
      NapkinOpKind kind = napkin_diagram_node (m->d, n)->kind;

      if (kind == NAPKIN_OP_CONTRACT)
        return;
      if (kind == NAPKIN_OP_SOFTMAX || kind == NAPKIN_OP_NORMALIZE)
        {
          if (op >= 0)
            return;
          op = n;
        }
    }
  if (op < 0)
    return;
  {
    const NapkinNode *node = napkin_diagram_node (m->d, op);
    int src = napkin_diagram_input_source (m->d, op, 0);
    const NapkinTensorType *x;
    gint64 rtile = 0, c, threads;
    NapkinDtype dtype;

    if (src < 0 || rs->member[src])
      return;
    x = napkin_diagram_node_type (m->d, src);
    dtype = value_dtype (m, src);
    if (x == NULL || x->n_axes != 2 || (dtype != NAPKIN_DTYPE_FP16 && dtype != NAPKIN_DTYPE_BF16)
        || napkin_diagram_find_axis (m->d, node->axis) != (int) x->axes[1]
        || napkin_region_mark (rs->region, napkin_diagram_axis (m->d, x->axes[1])->name, NULL) != NAPKIN_MARK_WHOLE
        || napkin_region_mark (rs->region, napkin_diagram_axis (m->d, x->axes[0])->name, &rtile) != NAPKIN_MARK_PARALLEL)
      return;
    c = napkin_diagram_axis_size (m->d, x->axes[1]);
    /* try_rows' rule: the region's threads where it sets them */
    if (rs->region->threads > 0)
      {
        threads = rs->region->threads;
        if (threads % 32 != 0 || threads > 1024 || c % (threads * 8) != 0)
          return;
      }
    else
      for (threads = 256; threads >= 32 && c % (threads * 8) != 0; threads /= 2)
        ;
    if (threads < 32 || c / threads > 128)
      return;
    rs->rows_c = c;
    rs->rows_axis = x->axes[0];
    rs->rows_threads = (guint) threads;
    rs->rows_r = MAX (1, rtile);
    rs->rows_bytes = c * napkin_dtype_bytes (dtype);
    rs->rows_reductions = node->kind == NAPKIN_OP_NORMALIZE && node->norm == NAPKIN_NORM_RMSNORM ? 1 : 2;
  }
}

/* Whether the plan runs a rows kernel with the row in shared memory
 * (NAPKIN_ROWS_SMEM_EFFICIENCY). */
static gboolean
plan_rows_in_smem (const NapkinPlanKernel *pk)
{
  return pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->path != NAPKIN_PATH_GENERIC && pk->u.rows.inner <= 1
         && pk->u.rows.one_pass && pk->u.rows.smem_row;
}

/* Whether the plan runs a contiguous softmax or norm that reads its rows twice with a
 * whole block a row, two blocks an SM at most, over a full wave or more: a block loads,
 * reduces, then loads again and stores, in turn (NAPKIN_ROWS_TURNS_EFFICIENCY). */
static gboolean
plan_rows_two_pass_in_turn (const Model            *m,
                            const NapkinPlanKernel *pk)
{
  return pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->path != NAPKIN_PATH_GENERIC && pk->u.rows.inner <= 1
         && !pk->u.rows.one_pass && (pk->u.rows.op == NAPKIN_OP_SOFTMAX || pk->u.rows.op == NAPKIN_OP_NORMALIZE)
         && pk->blocks_per_sm <= 2
         && pk->u.rows.threads_per_row == pk->u.rows.threads
         && pk->u.rows.rows >= (gint64) m->arch->sms * MAX (1u, pk->blocks_per_sm);
}

/* Whether the plan runs a contiguous softmax or norm with the row in registers (not a
 * reduction, which keeps nothing). */
static gboolean
plan_rows_in_registers (const NapkinPlanKernel *pk)
{
  return pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->path != NAPKIN_PATH_GENERIC && pk->u.rows.inner <= 1
         && pk->u.rows.one_pass && !pk->u.rows.smem_row && pk->u.rows.op != NAPKIN_OP_REDUCE;
}

/* … its rows not 16 bytes apart (NAPKIN_ROWS_UNALIGNED_EFFICIENCY). */
static gboolean
plan_rows_unaligned_registers (const NapkinPlanKernel *pk)
{
  return plan_rows_in_registers (pk) && (pk->u.rows.ldx * napkin_dtype_bytes (pk->u.rows.x_dtype)) % 16 != 0;
}

/* The skeleton's rule where it takes the region (its figures were measured), else the
 * plan's rows kernel. */
static void
detect_rows (Model *m,
             guint  r)
{
  detect_rows_skeleton (m, r);
  if (m->rs[r].rows_c == 0)
    detect_planned_rows (m, r);
}

/* The attention skeleton (flash-mma) is what an smem region with two or more
 * contractions and no registers region inside lowers to. It gives each warp 16 rows of
 * the region's widest parallel axis. Returns that tile (0: not the pattern) and the
 * axis. */
static gint64
attention_rows (Model                  *m,
                guint                   r,
                const NapkinRegionCost *cost,
                int                    *row_axis)
{
  const RegionState *rs = &m->rs[cost->region];
  guint contractions = 0;
  gint64 rows = 0;

  *row_axis = -1;
  if (cost->level != NAPKIN_LEVEL_SMEM)
    return 0;
  for (guint c = 0; c < m->a->regions->len; c++)
    if (g_array_index (m->a->regions, NapkinRegionCost, c).parent == (int) r
        && g_array_index (m->a->regions, NapkinRegionCost, c).level == NAPKIN_LEVEL_REGISTERS)
      return 0;
  for (guint i = 0; i < rs->members->len; i++)
    contractions += napkin_diagram_node (m->d, g_array_index (rs->members, guint, i))->kind == NAPKIN_OP_CONTRACT;
  if (contractions < 2)
    return 0;
  for (guint a = 0; a < m->n_axes; a++)
    {
      gint64 tile = 0;

      if (napkin_region_mark (rs->region, napkin_diagram_axis (m->d, a)->name, &tile) == NAPKIN_MARK_PARALLEL
          && tile > rows)
        rows = tile, *row_axis = (int) a;
    }
  return *row_axis >= 0 ? rows : 0;
}

/* What a block of a region holds in registers, and how it is split over its threads. */
typedef struct
{
  guint  threads;
  gint64 register_bytes;
  gint64 block_registers;   /* a skeleton that splits its registers unevenly (setmaxnreg) */
  guint  wgmma_registers;   /* the consumers' registers a thread, where the plan or skeleton fixes them */
} BlockRegisters;

/* An L2 region is a panel of the output that the blocks inside it share
 * through L2: no threads or registers of its own. per_sm reports how many
 * panels L2 holds at once (device-wide). */
static void
l2_occupancy (Model            *m,
              guint             r,
              NapkinRegionCost *cost)
{
  const NapkinArch *arch = m->arch;
  double cap = arch->levels[NAPKIN_LEVEL_L2].capacity_bytes;

  cost->threads = 0;
  cost->registers_per_thread = 0;
  if (cost->footprint_bytes > cap)
    error_add (m, _("regions[%u]: footprint %lld bytes exceeds the %.0f bytes of L2 on %s"),
               cost->region, (long long) cost->footprint_bytes, cap, arch->id);
  cost->per_sm = cost->footprint_bytes > 0 ? (gint64) MIN (floor (cap / cost->footprint_bytes), 1e9) : 1;
  cost->binding_limit = N_("L2 capacity");
  cost->waves = ceil_div (cost->instances, MAX (1, cost->per_sm));
  cost->feasible = m->rs[r].n_errors == 0;
}

/* A registers region: its footprint and intermediates, a contraction's result tile
 * counted in fp32 whatever it is stored as (the tensor-core skeletons keep fp32
 * accumulators). */
static gint64
registers_region_bytes (Model                  *m,
                        const NapkinRegionCost *cost)
{
  gint64 register_bytes = cost->footprint_bytes + cost->intermediate_bytes;

  for (guint t = 0; t < cost->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, t);

      if (tr->is_output && napkin_diagram_node (m->d, tr->node)->kind == NAPKIN_OP_CONTRACT
          && napkin_dtype_bytes (tr->dtype) < 4)
        register_bytes = add (m, register_bytes, mul (m, tr->tile_elements, 4 - napkin_dtype_bytes (tr->dtype)));
    }
  return register_bytes;
}

/* The nested registers regions: the threads they ask for and the most any holds.
 * Returns whether there is one. */
static gboolean
child_registers (Model          *m,
                 guint           r,
                 BlockRegisters *br)
{
  gboolean child = FALSE;

  for (guint c = 0; c < m->a->regions->len; c++)
    {
      NapkinRegionCost *cc = &g_array_index (m->a->regions, NapkinRegionCost, c);

      if (cc->parent != (int) r || cc->level != NAPKIN_LEVEL_REGISTERS)
        continue;
      child = TRUE;
      if (!m->rs[r].explicit_threads)
        br->threads = MIN (1024, MAX (br->threads, (guint) MIN (cc->groups * cc->threads, 1024)));
      {
        double held = (double) (cc->footprint_bytes + cc->intermediate_bytes) / cc->threads * br->threads;

        br->register_bytes = MAX (br->register_bytes, (gint64) ceil (held));
      }
    }
  return child;
}

/* gemm-wgmma and the wgmma attention kernel: a producer warpgroup and 64-row consumer
 * warpgroups (GEMM: one for BM = 64, else two; attention: the plan's), the registers
 * split by setmaxnreg so that one block fills the SM's 64K (kernels/gemm-wgmma.cu: 40
 * and 232; attention: the plan's split, kernels/attn-sm90.cu) */
static void
wgmma_registers (Model          *m,
                 guint           r,
                 BlockRegisters *br)
{
  gint64 consumers, producer, consumer;
  const NapkinPlanKernel *pk = plan_kernel_of (m, r);

  if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION)
    {
      consumers = pk->u.att.consumers;
      producer = pk->u.att.producer_regs;
      consumer = pk->u.att.consumer_regs;
    }
  else
    {
      /* gemm-wgmma: one consumer for BM = 64, else two */
      consumers = m->rs[r].wgmma_rows == 64 ? 1 : 2;
      producer = 40;
      consumer = 232;
    }
  br->threads = (guint) (consumers + 1) * 128;
  br->block_registers = consumers * 128 * consumer + 128 * producer;
  br->wgmma_registers = (guint) consumer;
  br->register_bytes = 0;
}

/* flash-mma: warps of 16 rows, each holding its scores (fp32) and their
 * fp16 copy for the second product over a chunk of every streamed axis,
 * its output rows (fp32) and its Q rows (fp16) over the whole axes */
static void
flash_mma_registers (Model                  *m,
                     guint                   r,
                     const NapkinRegionCost *cost,
                     BlockRegisters         *br)
{
  int row_axis;
  gint64 rows = attention_rows (m, r, cost, &row_axis), chunk = 1, whole = 0;
  const RegionState *rs = &m->rs[cost->region];

  for (guint a = 0; a < m->n_axes; a++)
    {
      gint64 tile = 0;
      NapkinMarkKind kind = napkin_region_mark (rs->region, napkin_diagram_axis (m->d, a)->name, &tile);

      if (kind == NAPKIN_MARK_STREAM)
        chunk *= ceil_div (tile, MAX (1u, rs->stream_parts));
      else if (kind == NAPKIN_MARK_WHOLE)
        whole += rs->extent[a];
    }
  if (!m->rs[r].explicit_threads)
    br->threads = (guint) MIN (1024, MAX (32, rows / 16 * 32));
  br->register_bytes = (gint64) br->threads / 32 * 16 * (chunk + whole) * (4 + 2);
}

/* The generic loop nest: contraction results accumulate in registers, in 32-bit
 * words; without an explicit "threads", the fewest (from 128) that hold it. */
static void
accumulator_registers (Model                  *m,
                       guint                   r,
                       const NapkinRegionCost *cost,
                       BlockRegisters         *br)
{
  br->register_bytes = cost->intermediate_bytes;
  for (guint t = 0; t < cost->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, t);

      if (tr->is_output && napkin_diagram_node (m->d, tr->node)->kind == NAPKIN_OP_CONTRACT)
        br->register_bytes = add (m, br->register_bytes, mul (m, tr->tile_elements, 4));
    }
  while (!m->rs[r].explicit_threads && br->threads < 1024
         && 32.0 + ceil ((double) br->register_bytes / br->threads / 4.0) > m->arch->max_registers_per_thread)
    br->threads *= 2;
}

/* A block region (not registers): what its kernel, skeleton or loop nest holds in
 * registers, in the order the code generator picks them. */
static void
block_registers (Model                  *m,
                 guint                   r,
                 const NapkinRegionCost *cost,
                 BlockRegisters         *br)
{
  gboolean child = child_registers (m, r, br);
  const NapkinPlanKernel *rows_pk = m->a->paper ? NULL : plan_kernel_of (m, r);

  if (rows_pk != NULL && rows_pk->kind == NAPKIN_PLAN_ROWS && rows_pk->path != NAPKIN_PATH_GENERIC)
    {
      /* the plan's row kernel: its threads and registers (docs/plan.md) */
      br->threads = rows_pk->threads;
      br->block_registers = (gint64) rows_pk->threads * MAX (32u, rows_pk->registers);
      br->wgmma_registers = MAX (32u, rows_pk->registers);
      br->register_bytes = 0;
    }
  else if (m->rs[r].rows_c > 0)
    {
      /* the rows skeleton: a thread's C/T values of the current row in registers
       * (fp32) and ~16 more (ptxas, sm_90a: softmax C = 16384 80 registers = 64 + 16;
       * layernorm C = 4096 40 = 16 + 24, γ and β) */
      br->threads = m->rs[r].rows_threads;
      br->register_bytes = (gint64) br->threads * MAX (0, m->rs[r].rows_c / br->threads + 16 - 32) * 4;
    }
  else if (m->rs[r].wgmma)
    wgmma_registers (m, r, br);
  else if (!child && attention_rows (m, r, cost, &(int) { 0 }) > 0)
    flash_mma_registers (m, r, cost, br);
  else if (!child)
    accumulator_registers (m, r, cost, br);
}

/* How many blocks of a shared-memory region its shared memory lets an SM hold. */
static gint64
smem_limit (Model            *m,
            guint             r,
            NapkinRegionCost *cost)
{
  const NapkinArch *arch = m->arch;
  double need = cost->footprint_bytes + arch->smem_reserved_per_block;

  /* The footprint M counts the output tile, which the wgmma skeletons accumulate in
   * registers: where M does not fit but the skeleton's own buffers do (the rule
   * checked them), those are what the block asks for. */
  const NapkinPlanKernel *pk = plan_kernel_of (m, r);

  /* The block asks for what its kernel's plan says (tiles, stages, staging buffers,
   * barriers: docs/plan.md), not the paper's footprint M, wherever the plan runs a
   * kernel of tile primitives; an infeasible plan says which limit it breaks. */
  if (pk != NULL && pk->path != NAPKIN_PATH_GENERIC && !m->a->paper
      && (pk->kind == NAPKIN_PLAN_GEMM || pk->kind == NAPKIN_PLAN_ATTENTION || pk->kind == NAPKIN_PLAN_ROWS
          || pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD))
    {
      need = pk->smem_bytes + arch->smem_reserved_per_block;
      cost->plan_smem_bytes = pk->smem_bytes;
      if (!pk->feasible)
        error_add (m, "regions[%u]: %s", cost->region, pk->infeasible);
    }
  else if (m->rs[r].rows_c > 0)
    need = 32 * 4 + arch->smem_reserved_per_block;   /* rows in registers: one float per warp */
  else if (cost->footprint_bytes > arch->smem_max_per_block)
    error_add (m, _("regions[%u]: footprint %lld bytes (%lld elements) exceeds the %.0f bytes of shared memory one block can have on %s"),
               cost->region, (long long) cost->footprint_bytes, (long long) cost->footprint_elements, arch->smem_max_per_block,
               arch->id);
  return (gint64) floor (arch->levels[NAPKIN_LEVEL_SMEM].capacity_bytes / need);
}

/* Occupancy: every capacity that binds, per SM. Needs the children's footprints. */
static void
model_occupancy (Model *m,
                 guint  r)
{
  NapkinRegionCost *cost = &g_array_index (m->a->regions, NapkinRegionCost, r);
  const NapkinArch *arch = m->arch;
  BlockRegisters br = { cost->threads, 0, 0, 0 };
  guint threads;
  gint64 limits[4];
  /* ties go to the first: warps before registers, since at the 32-register base
   * the register file holds exactly the warps the SM can run */
  const char *names[4] = { N_("shared memory"), N_("warps"), N_("registers"), N_("blocks") };
  guint warps;
  double per_thread;

  m->current = r;
  if (cost->level == NAPKIN_LEVEL_L2)
    {
      l2_occupancy (m, r, cost);
      m->current = -1;
      return;
    }
  /* Register-resident data per thread: a nested registers region's footprint,
   * else the values made and used inside this region. */
  if (cost->level == NAPKIN_LEVEL_REGISTERS)
    br.register_bytes = registers_region_bytes (m, cost);
  else
    block_registers (m, r, cost, &br);
  threads = br.threads;
  cost->threads = threads;
  per_thread = 32.0 + ceil ((double) br.register_bytes / threads / 4.0);   /* 32: indices and addresses */
  cost->registers_per_thread = (guint) MIN (1e6, ceil (per_thread / 8.0) * 8);   /* allocated in 8s */
  if (br.wgmma_registers > 0)
    cost->registers_per_thread = br.wgmma_registers;   /* the consumers' */
  /* the fused attention backward's block is its kernel's (kernels/attn-bwd-sm80.cu): the
   * region's values are the lowering's whole rows of keys, which the kernel never holds */
  {
    const NapkinPlanKernel *pk = cost->level == NAPKIN_LEVEL_SMEM && !m->a->paper ? plan_kernel_of (m, r) : NULL;

    if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
      {
        threads = cost->threads = pk->threads;
        cost->registers_per_thread = pk->registers;
        br.block_registers = 0;
      }
  }
  warps = (threads + 31) / 32;

  if (cost->registers_per_thread > arch->max_registers_per_thread)
    error_add (m, _("regions[%u]: needs about %u registers per thread (%lld bytes held in "
               "registers over %u threads), more than the %u a thread can have on %s"),
               cost->region, cost->registers_per_thread, (long long) br.register_bytes, threads,
               arch->max_registers_per_thread, arch->id);

  limits[0] = cost->level == NAPKIN_LEVEL_SMEM ? smem_limit (m, r, cost) : G_MAXINT32;
  limits[1] = arch->max_warps_per_sm / warps;
  limits[2] = arch->registers_per_sm / (br.block_registers > 0 ? br.block_registers
                                                                : (gint64) cost->registers_per_thread * warps * 32);
  limits[3] = cost->level == NAPKIN_LEVEL_REGISTERS ? G_MAXINT32 : arch->max_blocks_per_sm;

  cost->per_sm = limits[0];
  cost->binding_limit = names[0];
  for (guint i = 1; i < 4; i++)
    if (limits[i] < cost->per_sm)
      {
        cost->per_sm = limits[i];
        cost->binding_limit = names[i];
      }
  /* Inside a block, an instance is resident only while its block is: at most the
   * block's residency × the instances per block. */
  if (cost->parent >= 0)
    {
      const NapkinRegionCost *pc = &g_array_index (m->a->regions, NapkinRegionCost, cost->parent);

      if (pc->level == NAPKIN_LEVEL_SMEM && pc->per_sm >= 1
          && pc->per_sm * cost->groups < cost->per_sm)
        {
          cost->per_sm = pc->per_sm * cost->groups;
          cost->binding_limit = pc->binding_limit;   /* the enclosing block's */
        }
    }
  if (cost->per_sm < 1)
    error_add (m, _("regions[%u]: not one instance fits on an SM: %s binds"), cost->region, _(cost->binding_limit));
  cost->waves = ceil_div (cost->instances, MAX (1, mul (m, arch->sms, MAX (1, cost->per_sm))));
  cost->feasible = m->rs[r].n_errors == 0;
  m->current = -1;
}

/* ---- L2: tiles shared by the instances of one wave ----------------------------------------- */

/* Instances are numbered over the region's parallel axes in the diagram's axis
 * order, the last fastest (the grid's x). A wave is the first W = SMs × per_sm of
 * them; a tile of a tensor is the same for every instance with the same indices on
 * the parallel axes the tensor carries. Reads from device memory shrink by the
 * number of instances of a wave that share a tile, if the wave's distinct tiles of
 * one step fit in L2. Writes are never shared. */
/* Distinct tiles among instances 0..W-1: an instance's tile is named by its
 * mixed-radix digits (radix[0] most significant) on the carried axes. Digit j
 * takes values 0..q-1 over whole blocks of the faster digits and q over a partial
 * one; a carried digit makes each value new, a lacking one repeats the block. */
static gint64
distinct_prefix (gint64          w,
                 const gint64   *radix,
                 const gboolean *carried,
                 guint           j,
                 guint           n)
{
  gint64 block = 1, full = 1, q, rem;

  if (w <= 0)
    return 0;
  if (j == n)
    return 1;
  for (guint i = j + 1; i < n; i++)
    {
      block = MIN (block * radix[i], (gint64) G_MAXINT32 * 1024);
      if (carried[i])
        full = MIN (full * radix[i], (gint64) G_MAXINT32 * 1024);
    }
  q = w / block;
  rem = w % block;
  if (carried[j])
    return q * full + distinct_prefix (rem, radix, carried, j + 1, n);
  return q > 0 ? full : distinct_prefix (rem, radix, carried, j + 1, n);
}

/* An attention kernel whose blocks walk a leading axis first (lead_first: the one a
 * score operand lacks, docs/plan.md "Score operands") runs its query tiles first, then
 * the group's, then the leading axes in that walk: the parallel axes `axes` (outermost
 * first) reordered to match, so a wave shares what those blocks share. */
static void
attention_walk (const Model *m,
                guint        r,
                guint       *axes,
                gint64      *radix,
                guint        n)
{
  const NapkinPlanKernel *pk = m->plan ? napkin_plan_kernel_for (m->plan, r, -1) : NULL;
  const NapkinPlanAttention *a = pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION ? &pk->u.att : NULL;
  int walk[NAPKIN_MAX_RANK + 2];
  guint nw = 0, k = 0, out_axes[NAPKIN_MAX_RANK * 4];
  gint64 out_radix[NAPKIN_MAX_RANK * 4];

  if (a == NULL || a->lead_first < 0 || n > G_N_ELEMENTS (out_axes))
    return;
  walk[nw++] = a->query_axis;
  if (a->group_axis >= 0)
    walk[nw++] = a->group_axis;
  walk[nw++] = a->lead_axis[a->lead_first];
  for (int l = (int) a->n_lead - 1; l >= 0; l--)
    if (l != a->lead_first)
      walk[nw++] = a->lead_axis[l];
  for (guint i = 0; i < n; i++)
    {
      gboolean walked = FALSE;

      for (guint w = 0; w < nw; w++)
        walked |= (int) axes[i] == walk[w];
      if (!walked)
        {
          out_axes[k] = axes[i];
          out_radix[k++] = radix[i];
        }
    }
  for (int w = (int) nw - 1; w >= 0; w--)
    for (guint i = 0; i < n; i++)
      if ((int) axes[i] == walk[w])
        {
          out_axes[k] = axes[i];
          out_radix[k++] = radix[i];
        }
  memcpy (axes, out_axes, sizeof (guint) * n);
  memcpy (radix, out_radix, sizeof (gint64) * n);
}

static void
model_l2_reuse (Model *m,
                guint  r)
{
  NapkinRegionCost *cost = &g_array_index (m->a->regions, NapkinRegionCost, r);
  RegionState *rs = &m->rs[r];
  gint64 radix[NAPKIN_MAX_RANK * 4];
  guint axes[NAPKIN_MAX_RANK * 4];
  guint n_par = 0;
  gint64 wave;
  double in_flight = 0;
  g_autofree gint64 *distinct = NULL;

  /* an explicit L2 region models the sharing itself */
  if (m->a->paper || cost->parent >= 0 || cost->parent_level != NAPKIN_LEVEL_HBM || cost->per_sm < 1
      || cost->level == NAPKIN_LEVEL_L2)
    return;
  for (guint a = 0; a < m->n_axes && n_par < G_N_ELEMENTS (axes); a++)
    {
      gint64 t;

      if (napkin_region_mark (rs->region, napkin_diagram_axis (m->d, a)->name, &t) == NAPKIN_MARK_PARALLEL
          && t > 0)
        {
          axes[n_par] = a;
          gint64 size = napkin_diagram_axis_size (m->d, a);

          radix[n_par] = ceil_div (size, MIN (t, size));
          n_par++;
        }
    }
  wave = MIN (cost->instances, (gint64) m->arch->sms * cost->per_sm);
  if (wave <= 1 || n_par == 0)
    return;
  attention_walk (m, cost->region, axes, radix, n_par);

  distinct = g_new0 (gint64, cost->transfers->len + 1);
  for (guint i = 0; i < cost->transfers->len; i++)
    {
      NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, i);
      const NapkinTensorType *type;
      guint node = tr->node;

      if (tr->is_output)
        continue;
      type = napkin_diagram_node_type (m->d, node);
      {
        gboolean carried[G_N_ELEMENTS (axes)];

        for (guint j = 0; j < n_par; j++)
          carried[j] = napkin_tensor_type_has_axis (type, axes[j]);
        distinct[i] = distinct_prefix (wave, radix, carried, 0, n_par);
      }
      tr->sharers = (guint) (wave / distinct[i]);
      /* only shared tiles need to stay in L2; one no other instance reads passes through */
      if (distinct[i] < wave)
        in_flight += (double) distinct[i] * tr->tile_elements * napkin_dtype_bytes (tr->dtype)
                     * (carries_stream (m, r, node) ? cost->stages : 1);
    }

  if (in_flight > m->arch->levels[NAPKIN_LEVEL_L2].capacity_bytes)
    {
      warning_add (m, _("region “%s”: one wave's tiles (%.0f bytes) exceed L2 (%.0f bytes); no reuse counted"),
                   cost->name, in_flight, m->arch->levels[NAPKIN_LEVEL_L2].capacity_bytes);
      for (guint i = 0; i < cost->transfers->len; i++)
        g_array_index (cost->transfers, NapkinTransfer, i).sharers = 1;
      return;
    }
  for (guint i = 0; i < cost->transfers->len; i++)
    {
      NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, i);

      if (tr->is_output || distinct[i] >= wave)
        continue;
      /* each wave fetches its distinct tiles once: elements × D / W */
      tr->hbm_elements = (gint64) ceil ((double) tr->elements * distinct[i] / wave);
      tr->hbm_bytes = mul (m, tr->hbm_elements, napkin_dtype_bytes (tr->dtype));
    }
}

static void
add_level_traffic (Model       *m,
                   NapkinLevel  level,
                   gint64       elements,
                   gint64       bytes)
{
  m->a->levels[level].transfer_elements = add (m, m->a->levels[level].transfer_elements, elements);
  m->a->levels[level].transfer_bytes = add (m, m->a->levels[level].transfer_bytes, bytes);
}

/* `elements` (`bytes`) read or written in device memory outside every region: they
 * pass through L2 too. Returns `bytes`. */
static gint64
device_traffic (Model  *m,
                gint64  elements,
                gint64  bytes)
{
  add_level_traffic (m, NAPKIN_LEVEL_HBM, elements, bytes);
  add_level_traffic (m, NAPKIN_LEVEL_L2, elements, bytes);
  return bytes;
}

/* Device-memory traffic also passes through L2. */
static void
account_transfer (Model                *m,
                  const NapkinTransfer *tr,
                  double               *time_s)
{
  add_level_traffic (m, tr->from, tr->from == NAPKIN_LEVEL_HBM ? tr->hbm_elements : tr->elements,
                     tr->from == NAPKIN_LEVEL_HBM ? tr->hbm_bytes : tr->bytes);
  if (tr->from == NAPKIN_LEVEL_HBM)
    {
      time_s[NAPKIN_RESOURCE_HBM] += tr->hbm_bytes / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
      if (tr->to != NAPKIN_LEVEL_L2)   /* into an L2 region: the L2 side is its children's reads */
        {
          add_level_traffic (m, NAPKIN_LEVEL_L2, tr->elements, tr->bytes);
          time_s[NAPKIN_RESOURCE_L2] += tr->bytes / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
        }
    }
  else
    time_s[level_resource (tr->from)] += tr->bytes / m->arch->levels[tr->from].bandwidth;
}

/* ---- instruction paths: wgmma or mma.sync (docs/model.md, "Instruction paths") ----------- */

/* The tile of `axis` in `region` (a whole axis: its size); FALSE when the mark's kind
 * is not `want` (or whole), or, with `divides`, when the tile does not divide the axis
 * (neither wgmma skeleton has edge tiles). */
/* The plan's kernel for the kernel region `r` belongs to (its top-level region). */
static const NapkinPlanKernel *
plan_kernel_of (Model *m,
                guint  r)
{
  if (m->plan == NULL)
    return NULL;
  return napkin_plan_kernel_for (m->plan, m->rs[r].kernel, -1);
}

gboolean
napkin_model_region_uses_wgmma (const NapkinArch *arch,
                                NapkinDiagram    *diagram,
                                guint             region)
{
  NapkinPlanOptions options = { 0 };
  g_autoptr(NapkinPlan) plan = NULL;
  int top = region;

  g_return_val_if_fail (arch != NULL, FALSE);
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (region < napkin_diagram_n_regions (diagram), FALSE);

  plan = napkin_plan_build (diagram, (NapkinArch *) arch, &options, NULL);
  if (plan == NULL || napkin_diagram_region (diagram, region)->level != NAPKIN_LEVEL_SMEM)
    return FALSE;
  /* the kernel a region belongs to is the plan kernel holding its nodes */
  for (guint i = 0; i < plan->kernels->len; i++)
    {
      const NapkinPlanKernel *k = g_ptr_array_index (plan->kernels, i);
      const NapkinRegion *r = napkin_diagram_region (diagram, region);

      if (k->region < 0 || r->nodes->len == 0)
        continue;
      for (guint j = 0; j < k->nodes->len; j++)
        if (g_str_equal (napkin_diagram_node (diagram, g_array_index (k->nodes, guint, j))->id,
                         g_ptr_array_index (r->nodes, 0)))
          top = k->region;
      if (top == k->region)
        return k->path == NAPKIN_PATH_WGMMA && k->feasible
               && (k->kind == NAPKIN_PLAN_GEMM || k->kind == NAPKIN_PLAN_ATTENTION);
    }
  return FALSE;
}

/* ---- compute and kernels ------------------------------------------------------------------ */

typedef enum
{
  PATH_LIBRARY,    /* a plain operation: a library kernel at the dense peak */
  PATH_WGMMA,
  PATH_MMA_SYNC,
  PATH_CUDA_CORES, /* the plan's skinny product (kernels/gemm-skinny.cu): FMAs, no tensor cores */
} TensorPath;

static const char *tensor_path_names[] = { "library", "wgmma", "mma.sync", "CUDA cores" };

/* One exp2 as a polynomial on the FMA pipe (kernels/attn-prims.cuh, napkin_exp2_poly):
 * the clamp, the round by adding 1.5·2^23 + 127, two subtractions, a degree-3 Horner
 * chain (3 FMAs), the shift of the rounded bits into the exponent field and the multiply
 * by that 2^j: 9 instructions, no conversion (docs/model.md, "exp on FMA"). */
#define NAPKIN_EXP_POLY_OPS 9.0

/* Issue slots (docs/model.md §7f). Every instruction of a warp takes one issue slot of
 * its SM sub-partition's scheduler, which issues one warp instruction a clock: an SM's 4
 * sub-partitions issue 4 × 32 thread instructions a clock (NVIDIA's Volta, Ampere and
 * Hopper whitepapers: one warp scheduler and dispatch unit per sub-partition, 32
 * threads a clock). The online softmax issues per score, besides its exponential, the
 * scale-and-subtract FMA, the running max, the running sum and half a pack into the
 * operand pair (3.5, read from the sm_90a SASS of kernels/attn-sm90.cu), and per row
 * and key chunk 44 (the 4 threads of a row: the shuffles of the max, the correction
 * exponential, the sum's update); an exponential is one instruction on the SFU (MUFU.EX2)
 * and NAPKIN_EXP_POLY_OPS on the FMA units. The schedulers sustain ATTN_ISSUE_RATE of
 * their peak in that phase (dependent chains, the SFU's dispatch), fitted on the H100
 * measurement of exp on FMA (docs/gpu-runs/2026-11-25-h100-exp-fma.log). */
#define NAPKIN_ISSUE_PER_SM_CLOCK 128.0
#define NAPKIN_SOFTMAX_SCORE_OPS  3.5
#define NAPKIN_SOFTMAX_ROW_OPS    44.0
#define ATTN_ISSUE_RATE           0.85
/* A score operand (docs/plan.md, "Score operands") issues per score half a shared-memory
 * load (a pair a load), a conversion to fp32 and the FMA (or select) that applies it:
 * counted from the kernel's source, not yet measured. */
#define NAPKIN_SCORE_OPERAND_OPS  2.5

/* The online softmax's phase on an SM: the busier of the SFU (the exponentials left on
 * it and a correction per row and chunk for each of the row's 4 threads) and the issue
 * slots its instructions take, with a fraction fma of the exponentials as polynomials
 * and `extra` more instructions a score (score operands). */
static double
softmax_phase_s (const NapkinArch *arch,
                 double            exps,
                 double            row_chunks,
                 double            fma,
                 double            extra,
                 double            clock)
{
  double sfu = (exps * (1 - fma) + 4 * row_chunks) / (arch->sfu_per_sm_clock * arch->sms * clock);
  double issue = (exps * (NAPKIN_SOFTMAX_SCORE_OPS + extra + (1 - fma) + fma * NAPKIN_EXP_POLY_OPS)
                  + row_chunks * NAPKIN_SOFTMAX_ROW_OPS)
                 / (NAPKIN_ISSUE_PER_SM_CLOCK * ATTN_ISSUE_RATE * arch->sms * clock);

  return MAX (sfu, issue);
}

static void
node_compute (Model      *m,
              guint       n,
              TensorPath  path,
              double     *time)
{
  const NapkinNode *node = napkin_diagram_node (m->d, n);
  NapkinFlops f;

  if (!napkin_diagram_node_flops (m->d, n, &f))
    {
      m->overflow = TRUE;
      return;
    }
  /* a product over axes of size 1 runs element-wise: one multiply an element; the
   * plan's skinny product runs its FMAs on CUDA cores */
  if (node->kind == NAPKIN_OP_CONTRACT && f.tensor > 0 && napkin_plan_unit_product (m->d, n))
    time[NAPKIN_RESOURCE_CUDA] += f.tensor / 2 / napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32);
  else if (node->kind == NAPKIN_OP_CONTRACT && f.tensor > 0 && path == PATH_CUDA_CORES)
    time[NAPKIN_RESOURCE_CUDA] += f.tensor / napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32);
  else if (node->kind == NAPKIN_OP_CONTRACT && f.tensor > 0)
    {
      int s0 = napkin_diagram_input_source (m->d, n, 0);
      int s1 = napkin_diagram_input_source (m->d, n, 1);
      NapkinDtype d0 = value_dtype (m, s0), d1 = value_dtype (m, s1);
      NapkinDtype dtype = napkin_dtype_bytes (d0) >= napkin_dtype_bytes (d1) ? d0 : d1;
      NapkinTensorClass klass;

      /* mixed operands run at the wider type's rate */
      if (!napkin_tensor_class_for_dtype (dtype, &klass))
        {
          m->a->fp32_contract_flops = add (m, m->a->fp32_contract_flops, f.tensor);
          time[NAPKIN_RESOURCE_CUDA] += f.tensor / napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32);
          warning_add (m, _("contraction “%s” multiplies fp32: counted on CUDA cores (use tf32 for tensor cores)"),
                       node->id);
        }
      else
        {
          if (m->arch->tensor_per_sm_clock[klass] <= 0)
            {
              warning_add (m, _("%s has no %s tensor cores: “%s” counted at the fp16 rate"), m->arch->id,
                           napkin_tensor_class_to_string (klass), node->id);
              klass = NAPKIN_TENSOR_FP16;
            }
          m->a->tensor_flops[klass] = add (m, m->a->tensor_flops[klass], f.tensor);
          /* the paper's model has one rate, the dense peak; Hopper's mma.sync falls short of it */
          time[NAPKIN_RESOURCE_TENSOR] += f.tensor / (path == PATH_MMA_SYNC && !m->a->paper
                                                      ? napkin_arch_mma_sync_rate (m->arch, klass)
                                                      : napkin_arch_tensor_rate (m->arch, klass));
        }
    }
  time[NAPKIN_RESOURCE_CUDA] += f.cuda / napkin_arch_cuda_rate (m->arch, value_dtype (m, n));
  /* exponentials relabeled onto the FMA units: a polynomial exp2 each, generated in the
   * wgmma attention kernel (docs/model.md, "exp on FMA"); elsewhere they stay on the SFU */
  {
    double fma = path == PATH_WGMMA && node->kind == NAPKIN_OP_SOFTMAX ? node->exp_fma : 0;

    /* the kernel moves whole blocks of 8 keys: floor (blocks · f) of them (napkin_plan_exp_fma) */
    if (fma > 0 && m->exp_blocks > 0)
      fma = floor (fma * m->exp_blocks) / m->exp_blocks;

    m->exp_fma_seen |= fma > 0;
    m->sfu_all_s += f.sfu / napkin_arch_sfu_rate (m->arch);
    /* the same warps issue the polynomials (and apply the score operands): the softmax
     * phase is the busier of the SFU and the issue slots, which the polynomials fill
     * faster than they empty the SFU */
    if (node->kind == NAPKIN_OP_SOFTMAX && (fma > 0 || m->score_ops > 0))
      {
        int axis = napkin_diagram_find_axis (m->d, node->axis);
        gint64 len = axis >= 0 ? napkin_diagram_axis_size (m->d, axis) : 0;
        double rows = len > 0 ? (double) f.sfu / len * MAX (1, m->chunks) : 0;

        m->issue_extra_s += softmax_phase_s (m->arch, f.sfu, rows, fma, m->score_ops, m->arch->clock_hz)
                            - softmax_phase_s (m->arch, f.sfu, rows, 0, 0, m->arch->clock_hz);
      }

    time[NAPKIN_RESOURCE_SFU] += f.sfu * (1 - fma) / napkin_arch_sfu_rate (m->arch);
    time[NAPKIN_RESOURCE_CUDA] += f.sfu * fma * NAPKIN_EXP_POLY_OPS
                                  / (napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32) / 2);   /* instructions: FMA = 2 FLOPs */
  }
}

/* The share of the SMs a grid of `blocks` blocks occupies: a block runs on one SM, so
 * fewer blocks than SMs leave the others idle (docs/model.md §7, "Idle SMs"). */
static double
grid_fill (const Model *m,
           gint64       blocks)
{
  return blocks > 0 && blocks < m->arch->sms ? (double) blocks / m->arch->sms : 1.0;
}

/* Attention on wgmma, fitted on the H100 sweep of 2026-11-25 (41 cases, docs/model.md
 * §14b): the exponentials of one consumer warpgroup run while the other's products do
 * (ping-pong), so only this share of the SFU time adds to the tensor time; and a block
 * pays a fixed cost before its first chunk and after its last (launch, mbarrier init,
 * setmaxnreg, Q's and the first K/V chunk's round trips, the first Q·Kᵀ and softmax
 * that nothing overlaps, the O store): two device-memory round trips plus
 * ATTN_BLOCK_CLOCKS, once per block an SM runs in turn. */
#define ATTN_SFU_EXPOSED  0.84
#define ATTN_BLOCK_CLOCKS 6000.0
/* Persistent attention (one chunk of all the keys: cross-attention to a short text,
 * docs/model.md §14b): its blocks pay the fixed cost once, but Q and O move at this share
 * of the device memory's rate — one block an SM keeps up to three tiles of Q in flight
 * and stores O from registers. Fitted on the H200 (2026-11-29, 12 shapes of the user's
 * path: 1.4–2.2 TB/s measured; docs/perf-notes.md, "Session 12"). */
#define ATTN_PERSIST_STREAM_EFFICIENCY 0.42
/* … 128 query rows a block and more, at D ≥ 96, at 1 / ATTN_PERSIST_WIDE_STREAM of that:
 * 64- and 128-row blocks were priced within 1 % and the 128-row ones ran 1.06–1.18×
 * slower (H200, 1 × 16 × 8192 × 77 at d 96–256 and 1 × 16 × 10915 × 77 at d 256: 128 rows
 * 1.07–1.10× their price, 64 rows 0.93–1.04×; at d 64 the two ran alike;
 * docs/perf-notes.md, "Session 35") */
#define ATTN_PERSIST_WIDE_STREAM 1.09
#define ATTN_PERSIST_WIDE_STREAM_D 96
/* … and its tiles' chain (attention_chunk_floor) added to that stream as a 6-norm */
#define ATTN_PERSIST_NORM 6.0
#define ATTN_TMA_SM_SHARES 3.0

/* The fill of a grid whose blocks copy their operands by TMA, several chunks in flight:
 * each draws about ATTN_TMA_SM_SHARES SMs' share of device memory. */
static double
tma_grid_fill (const Model *m,
               gint64       blocks)
{
  return MIN (1.0, grid_fill (m, blocks) * ATTN_TMA_SM_SHARES);
}

static void
finish_kernel (Model            *m,
               NapkinKernelCost *k)
{
  double overlap = 0, serial = 0, device = 0;
  double fill = k->fill > 0 ? MIN (1.0, k->fill) : 1.0;
  const double l2_fill = k->l2_fill > 0 ? MIN (1.0, k->l2_fill) : fill;

  k->bound = NAPKIN_RESOURCE_TENSOR;
  for (NapkinResource res = 0; res < NAPKIN_N_RESOURCES; res++)
    {
      /* per-SM resources idle in the last wave's empty slots; device-wide ones do not,
       * but a grid of fewer blocks than SMs draws on device memory and L2 through its
       * own SMs only, each at its share of the bandwidth (the idle SMs' share is lost) */
      gboolean per_sm = res != NAPKIN_RESOURCE_HBM && res != NAPKIN_RESOURCE_L2;
      double t = k->time_s[res] * (per_sm ? k->quantisation : 1.0 / (res == NAPKIN_RESOURCE_L2 ? l2_fill : fill));

      /* device-memory bytes cross HBM and L2 in one movement: the slower link counts */
      if (per_sm)
        serial += t;
      else
        device = MAX (device, t);
      if (t > overlap)
        {
          overlap = t;
          k->bound = res;
        }
      m->a->resource_s[res] += k->time_s[res];
    }
  serial += device;
  /* a rows kernel's turns (§7c): its device-memory round trips one after another, no
   * faster however wide the bus */
  if (k->turns_s > overlap)
    {
      overlap = k->turns_s;
      k->bound = NAPKIN_RESOURCE_HBM;
    }
  serial = MAX (serial, k->turns_s);
  /* The generated tensor-core kernels (gemm-mma, flash-mma) issue mma.sync from the
   * same warps that load its operand fragments from shared memory with ldmatrix, at
   * one or two warps per scheduler: the two do not hide each other, so their times
   * add (H200: gemm-mma 128×256/64×64 at 8192³ measured 3.85 ms, tensor + smem
   * predicted 3.77 ms; docs/model.md). */
  serial += k->chunk_s;
  /* wgmma is asynchronous and reads its operands from shared memory itself, so tensor
   * and shared-memory time overlap like the other resources. In the attention kernel
   * (kernels/attn-sm90.cu) the same consumer warpgroups that issue the products compute
   * the online softmax's exponentials between them (intra-warpgroup pipelining hides
   * only part): tensor and SFU time add */
  if (g_strcmp0 (k->tensor_path, "wgmma") == 0)
    {
      /* exp on FMA (§7f): the fit above was made with every exponential on the SFU; the
       * polynomials change the softmax phase (the busier of the SFU and the issue slots)
       * by issue_extra_s, which the measurement shows whole */
      double issue = (k->time_s[NAPKIN_RESOURCE_TENSOR]
                      + ATTN_SFU_EXPOSED * (k->exp_on_fma ? k->sfu_all_s : k->time_s[NAPKIN_RESOURCE_SFU])
                      + k->issue_extra_s) * k->quantisation
                     + k->chunk_s;

      if (!k->tile_chain)
        issue = MAX (issue, k->chunk_floor_s);
      /* with no overlap a kernel takes no less than with it */
      serial = MAX (serial, issue);
      if (issue > overlap)
        {
          overlap = issue;
          k->bound = NAPKIN_RESOURCE_TENSOR;
        }
      /* persistent attention: its tiles' chain and the Q/O stream beside it hide each
       * other only in part, added as a 6-norm (session 28, H200: 31 tiles a block of 64
       * fp8 rows, chain and stream each priced ~49 µs, ran 73; fitted with
       * ATTN_PERSIST_TILE_CLOCKS on 22 persistent kernels; docs/model.md §14b) */
      if (k->tile_chain && k->chunk_floor_s > 0)
        {
          if (k->chunk_floor_s > overlap)
            k->bound = NAPKIN_RESOURCE_TENSOR;
          overlap = pow (pow (overlap, ATTN_PERSIST_NORM) + pow (k->chunk_floor_s, ATTN_PERSIST_NORM),
                         1.0 / ATTN_PERSIST_NORM);
          serial = MAX (serial, overlap);
        }
    }
  else if (k->time_s[NAPKIN_RESOURCE_TENSOR] > 0 || k->chunk_s > 0)
    {
      /* a block's barrier per chunk stalls its warps: it adds to their issue time */
      double issue = (k->time_s[NAPKIN_RESOURCE_TENSOR] + k->time_s[NAPKIN_RESOURCE_SMEM]) * k->quantisation + k->chunk_s;

      if (issue > overlap)
        {
          overlap = issue;
          k->bound = k->time_s[NAPKIN_RESOURCE_TENSOR] >= k->time_s[NAPKIN_RESOURCE_SMEM]
                     ? NAPKIN_RESOURCE_TENSOR : NAPKIN_RESOURCE_SMEM;
        }
    }
  k->overlap_s = overlap + k->latency_s + MAX (1, k->launches) * m->arch->launch_overhead_s;
  k->serial_s = serial + k->latency_s + MAX (1, k->launches) * m->arch->launch_overhead_s;
  k->time_s_predicted = k->overlaps ? k->overlap_s : k->serial_s;
  m->a->predicted_time_s += k->time_s_predicted;
  /* the best path: this kernel's own pricing where it has no tensor work; never slower
   * than the generated code */
  k->best_generated = k->best_path == NULL || g_strcmp0 (k->best_path, k->tensor_path) == 0
                      || g_strcmp0 (k->tensor_path, "library") == 0;
  if (k->best_path == NULL || k->best_s <= 0)
    {
      k->best_s = k->time_s_predicted;
      k->best_bound = k->bound;
    }
  else if (k->time_s_predicted < k->best_s)
    {
      /* a better path is no slower than the code generated on a lesser one: an estimate
       * above it (the fused attention backward's region read as separate products) is
       * the estimate's fault */
      k->best_s = k->time_s_predicted;
      k->best_bound = k->bound;
    }
  if (!k->best_generated && m->a->best_note == NULL)
    m->a->best_note = g_strdup_printf (_("kernel “%s”: %s is %s's best tensor-core path; Napkin generates %s%s%s here%s"),
                                       k->name, k->best_path, m->arch->id,
                                       k->tensor_path ? k->tensor_path : _("the generic lowering"),
                                       k->tensor_path == NULL && k->reason ? " — " : "",
                                       k->tensor_path == NULL && k->reason ? k->reason : "",
                                       m->arch->tensor_paths[g_str_equal (k->best_path, "tcgen05")
                                                             ? NAPKIN_TENSOR_PATH_TCGEN05
                                                             : g_str_equal (k->best_path, "wgmma")
                                                               ? NAPKIN_TENSOR_PATH_WGMMA
                                                               : NAPKIN_TENSOR_PATH_MMA_SYNC].generated
                                       ? "" : _(" (Napkin does not generate it until it is verified on such a GPU)"));
  m->a->best_time_s += k->best_s;
  if (k->best_s > m->best_kernel_s)
    {
      m->best_kernel_s = k->best_s;
      m->a->best_bound = k->best_bound;
      m->a->best_path = k->best_path;
    }
  m->a->overlap_time_s += k->overlap_s;
  m->a->serial_time_s += k->serial_s;
  m->a->launches += MAX (1, k->launches);
}

/* Cost of one stream chunk of a block, in SM clocks: the barrier, the wait for the
 * next stage and, in flash-mma, the online softmax's rescale and row shuffles. Fitted
 * on H200 (2026-11-22, bench/gpu/run-bench): flash-mma with key chunks of 16, 32 and
 * 64 at B4 H16 N4096 (d 64 and 128) differs by 800–900 clocks per extra chunk. */
#define NAPKIN_CHUNK_CLOCKS 800.0

/* The wgmma skeletons read both operands of every product from shared memory through
 * descriptors: each 64-row consumer warpgroup reads the whole tile of an operand that
 * lacks the row axis (B; K and V) and its own rows of one that has it (A; Q) — Q again
 * for every key chunk, since it stays in shared memory. */
static void
wgmma_operand_reads (Model                  *m,
                     guint                   r,
                     const NapkinRegionCost *cost,
                     double                 *time_s)
{
  const RegionState *rs = &m->rs[cost->region];
  const NapkinRegion *region = rs->region;
  int row_axis = -1;
  gint64 consumers;

  (void) r;
  for (guint a = 0; a < m->n_axes; a++)
    {
      gint64 tile = 0;

      if (napkin_region_mark (region, napkin_diagram_axis (m->d, a)->name, &tile) == NAPKIN_MARK_PARALLEL
          && MIN (tile, napkin_diagram_axis_size (m->d, a)) == rs->wgmma_rows && row_axis < 0)
        row_axis = a;
    }
  consumers = attention_rows (m, r, cost, &(int) { 0 }) > 0 ? rs->wgmma_rows / 64 : (rs->wgmma_rows == 64 ? 1 : 2);
  for (guint t = 0; t < cost->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, t);
      const NapkinTensorType *type = napkin_diagram_node_type (m->d, tr->node);
      gint64 bytes;

      if (tr->is_output || type == NULL || !type->valid)
        continue;
      if (row_axis >= 0 && napkin_tensor_type_has_axis (type, row_axis))
        bytes = carries_stream (m, cost->region, tr->node) ? tr->bytes : mul (m, tr->bytes, MAX (1, cost->chunks));
      else
        bytes = mul (m, tr->bytes, consumers);
      add_level_traffic (m, NAPKIN_LEVEL_SMEM, tr->elements, bytes);
      time_s[NAPKIN_RESOURCE_SMEM] += bytes / m->arch->levels[NAPKIN_LEVEL_SMEM].bandwidth;
    }
}

/* Every warp of the attention skeleton reads the streamed operands that lack its row
 * axis (K, V) from shared memory; the ones that have it (Q) once, into registers. */
static void
warp_operand_reads (Model                  *m,
                    guint                   r,
                    const NapkinRegionCost *cost,
                    double                 *time_s)
{
  int row_axis;
  gint64 rows = attention_rows (m, r, cost, &row_axis);

  if (m->rs[cost->region].wgmma)
    {
      wgmma_operand_reads (m, r, cost, time_s);
      return;
    }
  if (rows == 0)
    return;
  for (guint t = 0; t < cost->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, t);
      const NapkinTensorType *type = napkin_diagram_node_type (m->d, tr->node);
      gboolean has = FALSE;
      gint64 bytes;

      if (tr->is_output || type == NULL || !type->valid)
        continue;
      for (guint i = 0; i < type->n_axes; i++)
        has |= type->axes[i] == (guint) row_axis;
      bytes = has ? tr->bytes : mul (m, tr->bytes, MAX (1, rows / 16));
      add_level_traffic (m, NAPKIN_LEVEL_SMEM, tr->elements, bytes);
      time_s[NAPKIN_RESOURCE_SMEM] += bytes / m->arch->levels[NAPKIN_LEVEL_SMEM].bandwidth;
    }
}

/* The rows skeleton (§7c). A block's rows follow one another, each a chain the block
 * cannot hide on its own: one device-memory round trip for the row's first bytes (the
 * next row's loads wait behind the reductions' barriers), then the reductions' shuffles
 * and barriers. The SM's blocks start together and do the same work, so those chains
 * line up across the SM: per step of one row a block, the kernel waits them out
 * (latency_s = steps × (latency + reductions)); memory, exponentials and arithmetic of
 * different blocks overlap otherwise (measured: the H100's softmax moves 94 % of the
 * copy bandwidth). And Little's law: an SM keeps at most its blocks' rows in flight
 * (each thread issues all its loads of a row at once), so device memory cannot deliver
 * more than SMs × per_sm × row bytes / latency. */
#define NAPKIN_REDUCTION_CLOCKS 250.0
/* A rows kernel's tail: the last rows' stores drain, and the blocks of a kernel start one
 * scheduling round after another. Fitted on the H200 (session 22, docs/perf-notes.md):
 * five rows kernels of 0.5–40 MB on the plan's grid (rmsnorm 512 × 2048 and 30293 × 64,
 * layernorm 6431 × 512, softmax 2048 × 2048 and 32 × 50257) ran 3.0–4.7 µs longer than
 * this model gave them without it (a round trip, then this). */
#define NAPKIN_ROWS_TAIL_S 2.4e-6

/* Whether the plan runs a contiguous rows kernel with the row in registers, a whole block
 * a row and one block an SM, over a full wave or more (NAPKIN_ROWS_ALONE_EFFICIENCY). */
static gboolean
plan_rows_alone_registers (const Model            *m,
                           const NapkinPlanKernel *pk)
{
  return plan_rows_in_registers (pk) && pk->blocks_per_sm == 1 && pk->u.rows.threads_per_row == pk->u.rows.threads
         && pk->grid >= (gint64) m->arch->sms;
}

/* A memory-bound kernel of the plan outside regions (its rows kernel, a repack): a load's
 * round trip before its first bytes, then the tail. */
/* … but a rows kernel of one small wave (at most this many threads in all, every block
 * started at once, each row in registers, its loads issued at once) has no later blocks
 * or loads to wait for: its tail is the round trip alone
 * (H200, the user's path: softmax 512 × 256, 16 × 4096 and 128 × 4096 ran 6.3–7.5 µs,
 * 0.66–0.75 of their price with the tail; docs/perf-notes.md, "Session 31") */
#define ROWS_ONE_ROUND_THREADS 65536

static double
memory_kernel_tail_s (const Model *m)
{
  return m->arch->levels[NAPKIN_LEVEL_HBM].latency_s + NAPKIN_ROWS_TAIL_S;
}
/* The row in shared memory (the rows that do not fit a thread's registers but fit half
 * the SM's shared memory): a block loads its row, reduces, and stores it from shared
 * memory in turn, two blocks an SM at most, and device memory moves its bytes at this
 * share of the rate the model gives the other forms. Median of measured over predicted
 * for the eight such kernels of the H200 user's path of session 11 (1.32–2.10; 64 to 8192
 * rows of 50257, softmax, rmsnorm, layernorm; docs/perf-notes.md): the two-pass form of
 * the same run was within 0.84–1.10 without it. */
#define NAPKIN_ROWS_SMEM_EFFICIENCY 0.70
/* Rows in registers that are not 16 bytes apart (a scalar head and tail a row, the vectors
 * between them at a different lane each row): device memory at this share of the rate the
 * other forms get. The H200 user's path (sessions 22–24): rmsnorm 39503 × 11961 and 16384
 * × 3694, bf16, ran 1.53 and 1.46× their prediction without it; aligned rows of the same
 * form 1.03–1.31. */
#define NAPKIN_ROWS_UNALIGNED_EFFICIENCY 0.80
/* A softmax read twice a whole block a row, two blocks an SM (rows of 61366 and more, its
 * second pass repeating the exponentials): device memory at this share of the rate, over
 * a full wave of blocks. The H200 user's path (sessions 11–25): 8192 × 61366 and 7189 ×
 * 65536 ran 1.56 and 1.40× their prediction without it, 1.25 and 1.12 with it; rows of
 * 128256 (1024 to 4096 of them) 1.18–1.21 without, 0.95–0.97 with; fewer rows than a wave
 * (16 to 128 of 128256: 1.0–1.3×) left as they were. Counted in rows, not blocks: a block
 * taking 32 rows in turn is no faster a row (layernorm 6454 × 50257 ran 0.64 ms in 202
 * such blocks, 0.48 a row a block; session 29). */
#define NAPKIN_ROWS_TURNS_EFFICIENCY 0.80
/* Norms read twice the same way: 0.80 too (session 28, the 17 such norms of seeds
 * 2228–2231 over a full wave: layernorm rows of 128256 ran 1.28–1.32× their prediction
 * without it, of 50257 1.15–1.37, rmsnorm of 128256 1.19–1.20; an rmsnorm of 62304 0.92).
 * A row in registers, the whole block a row and one block an SM (rows of 18414 and 29848
 * in 1024 threads, 1024 rows): nothing overlaps one row's load with the last one's
 * reductions and store, and device memory moves at this share (1.58 and 1.29× their
 * prediction without it; softmax 1024 × 19418 ran such a block 1.47× slower than the row
 * in shared memory, session 22). */
#define NAPKIN_ROWS_ALONE_EFFICIENCY 0.78

/* A block slot of an SM takes its next row no sooner than this many device-memory round
 * trips after the last: the row's loads under load, its reductions (block barriers), its
 * operands' loads and its stores, one after another, whatever the row's length. Fitted on
 * the H200's user's path (sessions 27–32, docs/perf-notes.md "Session 32"): every
 * contiguous rows kernel with the row in registers and 8 turns of its slots or more ran
 * 3.8–5.0 µs a turn (4.1–4.3 at 60–224 turns), so a form with few rows in flight an SM is
 * bound by its turns, not by device memory: layernorm 59062 × 8763 in 512-thread blocks,
 * two an SM, 224 turns, ran 0.91 ms priced 0.55; softmax 26278 × 11701 0.41 priced 0.33. */
#define NAPKIN_ROWS_TURN_LATENCIES 6.6

/* The time the plan's rows kernel `pk` with the row in registers cannot go below: its
 * turns after the first (the first is the round trip and tail priced apart). */
static double
plan_rows_turns_s (const Model            *m,
                   const NapkinPlanKernel *pk)
{
  const NapkinPlanRows *r;
  gint64 slots, teams, turns;

  if (!plan_rows_in_registers (pk) || pk->grid <= 0)
    return 0.0;
  r = &pk->u.rows;
  slots = (gint64) m->arch->sms * MAX (1u, pk->blocks_per_sm);
  teams = MAX (1, (gint64) (pk->threads / MAX (1u, r->threads_per_row)));
  turns = (pk->grid + slots - 1) / slots * ((MAX (1, r->rows_per_block) + teams - 1) / teams);
  return (double) (turns - 1) * NAPKIN_ROWS_TURN_LATENCIES * m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
}

/* The share of device memory's rate the plan's rows kernel `pk` draws in its form (1: the
 * rate the model gives every form; not a rows kernel: 1). */
static double
plan_rows_hbm_share (const Model            *m,
                     const NapkinPlanKernel *pk)
{
  /* one block an SM in registers compounds with the unaligned rows' share */
  double alone = plan_rows_alone_registers (m, pk) ? NAPKIN_ROWS_ALONE_EFFICIENCY : 1.0;

  if (plan_rows_in_smem (pk))
    return NAPKIN_ROWS_SMEM_EFFICIENCY;
  if (plan_rows_unaligned_registers (pk))
    return NAPKIN_ROWS_UNALIGNED_EFFICIENCY * alone;
  if (plan_rows_two_pass_in_turn (m, pk))
    return NAPKIN_ROWS_TURNS_EFFICIENCY;
  return alone;
}

static void
rows_kernel (Model                  *m,
             const NapkinRegionCost *grid,
             NapkinKernelCost       *k)
{
  const RegionState *rs = &m->rs[grid->region];
  double latency = m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
  double reductions = rs->rows_reductions * NAPKIN_REDUCTION_CLOCKS / m->arch->clock_hz;
  gint64 steps = grid->waves * rs->rows_r;

  k->latency_s = steps * (latency + reductions) + NAPKIN_ROWS_TAIL_S;
  if (!m->a->paper)
    {
      const NapkinPlanKernel *pk = plan_kernel_of (m, grid->region);

      k->time_s[NAPKIN_RESOURCE_HBM] /= plan_rows_hbm_share (m, pk);
      k->turns_s = plan_rows_turns_s (m, pk);
      /* the turns hold the rows' chain: the first round trip and the tail remain, as
       * for the same kernel outside regions (memory_kernel_tail_s) */
      if (plan_rows_in_registers (pk))
        k->latency_s = latency + NAPKIN_ROWS_TAIL_S;
    }
  /* γ and β (inputs without the row axis) are read again for every row, but from L1,
   * where they stay while the SM's blocks run: L2 serves them once per block slot */
  for (guint t = 0; t < grid->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (grid->transfers, NapkinTransfer, t);
      const NapkinTensorType *type = napkin_diagram_node_type (m->d, tr->node);
      gint64 slots = (gint64) m->arch->sms * MAX (1, grid->per_sm), kept;

      if (tr->is_output || tr->from != NAPKIN_LEVEL_HBM || type == NULL
          || napkin_tensor_type_has_axis (type, rs->rows_axis) || tr->count <= slots)
        continue;
      kept = mul (m, tr->tile_elements * napkin_dtype_bytes (tr->dtype), slots);
      k->time_s[NAPKIN_RESOURCE_L2] -= (tr->bytes - kept) / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
      add_level_traffic (m, NAPKIN_LEVEL_L2, -(tr->elements - tr->tile_elements * slots), -(tr->bytes - kept));
    }
  if (latency > 0 && grid->per_sm >= 1)
    {
      /* the blocks resident at once: a grid smaller than the GPU's slots has only its own
       * (finish_kernel then spreads the bandwidth over the SMs they occupy) */
      gint64 active = MIN (grid->instances, (gint64) m->arch->sms * grid->per_sm);
      double fill = grid_fill (m, grid->instances);
      double in_flight = (double) active * (rs->rows_flight > 0 ? rs->rows_flight : rs->rows_bytes);
      double little = in_flight / latency;   /* bytes per second */
      double bandwidth = m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth * fill;

      if (little < bandwidth)
        {
          k->time_s[NAPKIN_RESOURCE_HBM] *= bandwidth / little;
          warning_add (m, _("region “%s”: %.0f bytes in flight per SM cannot keep device memory busy (Little's law: "
                       "%.0f needed at %.0f ns); more rows per SM would"), grid->name,
                       in_flight / MAX (1, MIN (active, m->arch->sms)),
                       m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth * latency / m->arch->sms, latency * 1e9);
        }
    }
}

/* The stage pipeline of the tensor-core skeletons (§6c). A block's S stage buffers
 * rotate: a buffer is refilled only once its chunk has been consumed, and a refill
 * takes a load's round trip plus its bytes at the block's share of the bandwidth. So a
 * buffer's cycle is latency + transfer + compute of one chunk, and with S buffers a
 * chunk cannot come faster than that cycle / S: the S − 1 chunks in flight while one
 * is consumed must cover the latency (Little's law on bytes in flight per SM). Where they do not, each step of a chunk waits the
 * difference. Uses the profile's load latency (levels.hbm.latency_ns, as the rows model
 * does: TMA and cp.async loads make the same round trip); no latency figure, no term. */
/* The share of a chunk's compute the two-stage attention with two consumers waits
 * (measured on the H200, session 23: 128-key chunks, 2 against 3 stages, d 32, 128 and
 * 192: 1.06–1.15×; Little's law above gives 1.01–1.04×). Session 28: also where the
 * next Q·Kᵀ is not issued early (chunks under 128 keys): d 192, 4096 keys, chunks of
 * 64–112 through 2 stages ran 0.170–0.179 ms, priced 0.153–0.176 without the share
 * (0.172–0.187 with it), the 64 through 3 stages 0.152 */
#define ATTN_TWO_STAGE_SHARE 0.15

static void
pipeline_stall (Model                  *m,
                const NapkinRegionCost *grid,
                NapkinKernelCost       *k)
{
  double latency = m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
  gboolean wgmma = g_strcmp0 (k->tensor_path, "wgmma") == 0;
  gint64 steps = grid->waves * grid->chunks;
  double issue, memory, compute, transfer, cycle, wait;

  if (latency <= 0 || grid->level != NAPKIN_LEVEL_SMEM || grid->stages < 2 || grid->chunks < 2 || steps <= 0
      || k->time_s[NAPKIN_RESOURCE_TENSOR] <= 0)
    return;
  /* a chunk's compute on one SM (its blocks share it), as finish_kernel issues it */
  issue = (k->time_s[NAPKIN_RESOURCE_TENSOR]
           + (wgmma ? ATTN_SFU_EXPOSED * (k->exp_on_fma ? k->sfu_all_s : k->time_s[NAPKIN_RESOURCE_SFU])
                    : k->time_s[NAPKIN_RESOURCE_SMEM])) * k->quantisation
          + k->chunk_s;
  /* a chunk's chain (§14c) where it outlasts the products: the consumers free a stage
   * no sooner (flash attention d 64 over 8192 keys, chunks of 64 through 2 stages on the
   * H200: 2.85 ms, priced 3.37 with the products' time alone; docs/perf-notes.md,
   * "Session 30") */
  issue = MAX (issue, k->chunk_floor_s);
  memory = MAX (k->time_s[NAPKIN_RESOURCE_HBM], k->time_s[NAPKIN_RESOURCE_L2]);
  compute = issue / steps;
  transfer = memory / steps;
  cycle = (latency + transfer + compute) / grid->stages;
  wait = cycle - MAX (compute, transfer);
  /* attention with two consumer warpgroups and two stages: the lagging warpgroup holds
   * one stage and the leading one issues into the other, so the producer often has
   * nothing to prefetch into (docs/model.md §14b) */
  if (wgmma && grid->stages == 2)
    {
      const NapkinPlanKernel *pk = m->plan && !m->a->paper ? napkin_plan_kernel_for (m->plan, grid->region, -1) : NULL;

      if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION && pk->u.att.consumers == 2)
        wait = MAX (wait, ATTN_TWO_STAGE_SHARE * compute);
    }
  if (wait <= 0)
    return;
  k->latency_s += steps * wait;
  warning_add (m, _("region “%s”: with %u stages, the chunks in flight while one is consumed cannot cover a "
               "load's %.0f ns round trip plus its transfer (%.2f µs a chunk against %.2f µs of compute): loads "
               "exposed; more stages would hide them"), grid->name, grid->stages, latency * 1e9,
               (latency + transfer) * 1e6, compute * 1e6);
}

/* ---- the GPU's best tensor-core path (docs/model.md, "Best path") --------------------------- */

/* A kernel written for the best path runs its tensor cores, its exponentials (SFU), its
 * other element-wise arithmetic (FMA pipe) and its operand reads from shared memory as
 * asynchronous pipes that overlap (FlashAttention-3's warp specialisation and ping-pong,
 * FlashAttention-4's softmax and correction warpgroups). In attention one dependence
 * stays: a tile's softmax needs its Q·Kᵀ, and its P·V needs the softmax; with two tiles
 * in flight per SM the shorter of the two phases is still exposed for part of its
 * length. NAPKIN_BEST_EXPOSED is that part, one number fitted to the two published
 * points (FA3 on H100 fp16 at 75 % of peak, FA4 on B200 bf16 at 1605 TFLOP/s, 71 %):
 * 0.5 gives 80 % and 66 % (docs/model.md, "Best path"; tests/test-best-path.c). */
#define NAPKIN_BEST_EXPOSED 0.5
#define NAPKIN_BEST_BWD_EFFICIENCY 0.51

static void
best_path_kernel (Model                  *m,
                  int                     r,
                  const NapkinRegionCost *cost,
                  const guint            *nodes,
                  guint                   n_nodes,
                  NapkinKernelCost       *k)
{
  const NapkinArch *arch = m->arch;
  /* under tensor load the SM runs at the clock of the datasheet's tensor peak: every
   * SM pipe is priced at it (the SFU and the tensor cores share one clock) */
  double clock = arch->tensor_clock_hz;
  double tc = 0, sfu_ops = 0, fma_ops = 0, exps = 0, exps_fma = 0, row_chunks = 0, issue_ops, smem_s, l2_s, soft, t[NAPKIN_N_RESOURCES] = { 0 }, best = 0, q;
  double mask = 1;
  gboolean tensor = FALSE;
  NapkinTensorPathKind path = NAPKIN_TENSOR_PATH_MMA_SYNC;
  const NapkinTensorPath *tp;
  int row_axis = -1;
  gint64 rows = 0;

  if (m->a->paper)
    return;
  for (guint i = 0; i < n_nodes; i++)
    {
      const NapkinNode *node = napkin_diagram_node (m->d, nodes[i]);
      NapkinFlops f;

      if (!napkin_diagram_node_flops (m->d, nodes[i], &f))
        continue;
      if (node->kind == NAPKIN_OP_CONTRACT && f.tensor > 0 && napkin_plan_unit_product (m->d, nodes[i]))
        fma_ops += f.tensor / 2;   /* element-wise: one multiply an element */
      else if (node->kind == NAPKIN_OP_CONTRACT && f.tensor > 0)
        {
          NapkinDtype d0 = value_dtype (m, napkin_diagram_input_source (m->d, nodes[i], 0));
          NapkinDtype d1 = value_dtype (m, napkin_diagram_input_source (m->d, nodes[i], 1));
          NapkinDtype dtype = napkin_dtype_bytes (d0) >= napkin_dtype_bytes (d1) ? d0 : d1;
          NapkinTensorClass klass, used;
          NapkinTensorPathKind p;

          if (!napkin_tensor_class_for_dtype (dtype, &klass))
            {
              fma_ops += f.tensor / 2;   /* fp32 products on the FMA pipe, one FMA per 2 FLOPs */
              continue;
            }
          p = napkin_arch_best_path (arch, klass, FALSE, &used);
          tc += f.tensor / (arch->tensor_per_sm_clock[used] * arch->sms * clock);
          path = MAX (path, p);
          tensor = TRUE;
        }
      sfu_ops += f.sfu * (1 - node->exp_fma);
      fma_ops += f.cuda + f.sfu * node->exp_fma * NAPKIN_EXP_POLY_OPS;
      /* the online softmax streamed in chunks: one more exponential per row and chunk,
       * the correction exp (m_old − m_new), on the SFU; its instructions take issue
       * slots of the softmax warps' schedulers (§7f) */
      if (node->kind == NAPKIN_OP_SOFTMAX)
        {
          int axis = napkin_diagram_find_axis (m->d, node->axis);
          gint64 n = axis >= 0 ? napkin_diagram_axis_size (m->d, axis) : 0;

          if (n > 0 && cost != NULL && cost->chunks > 1)
            sfu_ops += (double) f.sfu / n * cost->chunks;
          exps += f.sfu;
          exps_fma += f.sfu * node->exp_fma;
          if (n > 0)
            row_chunks += (double) f.sfu / n * MAX (1, cost != NULL ? cost->chunks : 1);
        }
    }
  if (!tensor)
    return;
  tp = &arch->tensor_paths[path];
  if (r >= 0 && cost != NULL)
    {
      const NapkinPlanKernel *pk = m->plan ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;

      rows = attention_rows (m, r, cost, &row_axis);
      if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION && pk->u.att.tiles_total > 0)
        mask = (double) pk->u.att.tiles_computed / pk->u.att.tiles_total;
      /* the fused backward: the (key block, query tile) pairs a mask leaves */
      if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD && pk->u.bwd.a.tiles_total > 0)
        mask = (double) pk->u.bwd.a.tiles_computed / pk->u.bwd.a.tiles_total;
    }
  /* the fused backward: its five products at the share of the peak the libraries' backward
   * reaches (cuDNN on the H200, d 128, N 4096: 507 TFLOP/s, 0.51; docs/model.md §14c) */
  if (r >= 0 && cost != NULL && m->plan != NULL)
    {
      const NapkinPlanKernel *pk = napkin_plan_kernel_for (m->plan, cost->region, -1);

      if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
        {
          k->best_bound = NAPKIN_RESOURCE_TENSOR;
          k->best_s = tc * mask / NAPKIN_BEST_BWD_EFFICIENCY + MAX (1, k->launches) * arch->launch_overhead_s;
          k->best_path = napkin_tensor_path_to_string (path);
          return;
        }
    }
  smem_s = k->time_s[NAPKIN_RESOURCE_SMEM];
  l2_s = k->time_s[NAPKIN_RESOURCE_L2];
  if (rows > 0)
    {
      /* attention: the operand without the row axis (K, V) is read by every issuing unit
       * of the block (a warp's 16 rows, a warpgroup's 64, a CTA's 128), halved across a
       * 2-SM pair; the one with it (Q) once into registers (mma.sync) or again for every
       * key chunk where the instruction reads A from shared memory */
      double readers = (double) MAX (1, (rows + tp->rows - 1) / tp->rows) / MAX (1u, tp->cta_pair);
      double bytes = 0;

      for (guint i = 0; i < cost->transfers->len; i++)
        {
          const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, i);
          const NapkinTensorType *type = napkin_diagram_node_type (m->d, tr->node);

          if (tr->is_output || type == NULL || !type->valid)
            continue;
          if (napkin_tensor_type_has_axis (type, row_axis))
            bytes += (double) tr->bytes * (tp->a_smem && !carries_stream (m, cost->region, tr->node)
                                           ? MAX (1, cost->chunks) : 1);
          else
            bytes += (double) tr->bytes * readers * mask;
        }
      smem_s = bytes / (arch->levels[NAPKIN_LEVEL_SMEM].bandwidth / arch->clock_hz * clock);
      /* a 2-SM pair loads each K and V tile once for both SMs (each loads its half of
       * B): their reads from L2 halve */
      if (tp->cta_pair > 1)
        for (guint i = 0; i < cost->transfers->len; i++)
          {
            const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, i);
            const NapkinTensorType *type = napkin_diagram_node_type (m->d, tr->node);

            if (!tr->is_output && type != NULL && type->valid && tr->from == NAPKIN_LEVEL_HBM
                && !napkin_tensor_type_has_axis (type, row_axis))
              l2_s -= (double) tr->bytes * mask * (1 - 1.0 / tp->cta_pair) / arch->levels[NAPKIN_LEVEL_L2].bandwidth;
          }
    }
  q = k->quantisation > 0 ? k->quantisation : 1;
  t[NAPKIN_RESOURCE_TENSOR] = tc * mask * q;
  t[NAPKIN_RESOURCE_SFU] = sfu_ops * mask / (arch->sfu_per_sm_clock * arch->sms * clock) * q;
  /* fma_ops counts instructions (one per element-wise operation, 2 FLOPs for an FMA):
   * the FMA pipe issues cuda.fp32 / 2 of them a clock */
  t[NAPKIN_RESOURCE_CUDA] = fma_ops * mask / (arch->cuda_fp32_per_sm_clock / 2 * arch->sms * clock) * q;
  /* the CUDA-core side is the busier of the FMA pipe and the issue slots. FA3 on Hopper
   * splits a row over 4 threads like the generated kernel (§7f's counts); FA4 on
   * tcgen05 gives each thread a whole row (no shuffles, no per-row work to speak of) and
   * issues packed f32x2 operations: half an instruction per score for the scale, the max
   * (3-input), the sum and the pack, and 5 per polynomial (ex2_emulation_2 in
   * flash_attn/cute/utils.py: 10 instructions a pair) */
  if (path == NAPKIN_TENSOR_PATH_TCGEN05)
    issue_ops = exps * 2.0 + (exps - exps_fma) + exps_fma * 5.0;
  else
    issue_ops = exps * NAPKIN_SOFTMAX_SCORE_OPS + (exps - exps_fma) + exps_fma * NAPKIN_EXP_POLY_OPS
                + row_chunks * NAPKIN_SOFTMAX_ROW_OPS;
  t[NAPKIN_RESOURCE_CUDA] = MAX (t[NAPKIN_RESOURCE_CUDA],
                                 issue_ops * mask / (NAPKIN_ISSUE_PER_SM_CLOCK * ATTN_ISSUE_RATE * arch->sms * clock) * q);
  t[NAPKIN_RESOURCE_SMEM] = smem_s * q;
  t[NAPKIN_RESOURCE_HBM] = k->time_s[NAPKIN_RESOURCE_HBM];
  t[NAPKIN_RESOURCE_L2] = MAX (0.0, l2_s);
  k->best_bound = NAPKIN_RESOURCE_TENSOR;
  for (NapkinResource res = 0; res < NAPKIN_N_RESOURCES; res++)
    if (t[res] > best)
      best = t[res], k->best_bound = res;
  soft = MAX (t[NAPKIN_RESOURCE_SFU], t[NAPKIN_RESOURCE_CUDA]);
  if (rows > 0)
    best += NAPKIN_BEST_EXPOSED * MIN (t[NAPKIN_RESOURCE_TENSOR], soft);
  k->best_s = best + MAX (1, k->launches) * arch->launch_overhead_s;
  k->best_path = napkin_tensor_path_to_string (path);
}

/* ---- the plan's paths (docs/model.md §9) ---------------------------------------------------- */

/* The generic lowering as it runs: one thread per output element, a barrier after every
 * statement, no tensor cores. Its speed was measured, not derived (H100, docs/perf-notes.md):
 * plain fp16 matmul 4096³ at 26.6 ms is 5.2 TFLOP/s, 7.8 % of the fp32 CUDA-core peak;
 * attention in one region at 617 ms is 0.9 TFLOP/s, 1.3 %; softmax 4096×50257 moves 249
 * GB/s and layernorm 65536×4000 334 GB/s, about a tenth of the device's bandwidth. */
#define GENERIC_CONTRACT_PLAIN   0.078
#define GENERIC_CONTRACT_REGION  0.013
#define GENERIC_MEMORY           0.10
/* A generic kernel that only copies in memory order (a rename such as s→k, a reshape) reads
 * and writes coalesced, one element a thread (docs/perf-notes.md, session 6): the Llama
 * block's four renames ran at 0.29–0.39 of the datasheet bandwidth on the H200 and at
 * 0.51–0.71 of the calibrated one on the H100; 0.5 keeps both runs within 1.5×. They are
 * partly launch-bound (16–67 MB each): a fixed cost would model them better. */
#define GENERIC_COPY_MEMORY      0.5
/* A contraction outside regions on the generic lowering: each thread walks its sum one
 * step after another, so no kernel ends before one thread's walk, however few the
 * threads. Fitted on an H200 (docs/perf-notes.md, "Session 29"): an 8 × 256 × 8784 fp8
 * product with an fp8 result ran 1.91 ms, 2048 threads each 8784 steps (its throughput
 * alone priced it 15.7 µs). */
#define GENERIC_STEP_CLOCKS      430.0

/* Whether a rearrange keeps the element order: the runner copies row-major flat index to
 * flat index when the axes differ (a rename, merge or split), and a rearrange of the same
 * axes in the same order is the identity; the same axes in another order transpose. */
static gboolean
rearrange_keeps_order (NapkinDiagram *d,
                       guint          node)
{
  int src = napkin_diagram_input_source (d, node, 0);
  const NapkinTensorType *in = src >= 0 ? napkin_diagram_node_type (d, (guint) src) : NULL;
  const NapkinTensorType *out = napkin_diagram_node_type (d, node);
  gboolean same_set, same_order;

  if (in == NULL || !in->valid || !out->valid)
    return FALSE;
  same_set = same_order = in->n_axes == out->n_axes;
  for (guint i = 0; i < in->n_axes && same_set; i++)
    {
      gboolean found = FALSE;

      for (guint k = 0; k < out->n_axes; k++)
        found |= in->axes[i] == out->axes[k];
      same_set = found;
      same_order &= in->axes[i] == out->axes[i];
    }
  return !same_set || same_order;
}

/* Whether every operation of a generic kernel is an order-keeping copy. */
static gboolean
generic_is_copy (NapkinDiagram          *d,
                 const NapkinPlanKernel *pk)
{
  for (guint i = 0; i < pk->nodes->len; i++)
    {
      guint node = g_array_index (pk->nodes, guint, i);

      if (napkin_diagram_node (d, node)->kind != NAPKIN_OP_REARRANGE || !rearrange_keeps_order (d, node))
        return FALSE;
    }
  return pk->nodes->len > 0;
}

static void
generic_kernel (Model                  *m,
                NapkinKernelCost       *k,
                const NapkinPlanKernel *pk)
{
  double fp32 = napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32);
  double contract = 0, cuda = 0, sfu = 0, walk = 0, memory;

  for (guint i = 0; i < pk->nodes->len; i++)
    {
      const guint node = g_array_index (pk->nodes, guint, i);
      NapkinFlops f;
      gint64 outputs = 0;

      if (!napkin_diagram_node_flops (m->d, node, &f))
        continue;
      contract += f.tensor;
      cuda += f.cuda;
      sfu += f.sfu;
      if (f.tensor > 0 && pk->region < 0
          && napkin_diagram_type_elements (m->d, napkin_diagram_node_type (m->d, node), &outputs) && outputs > 0)
        walk += (double) f.tensor / (2.0 * outputs) * GENERIC_STEP_CLOCKS / m->arch->clock_hz;
    }
  k->time_s[NAPKIN_RESOURCE_TENSOR] = 0;
  k->time_s[NAPKIN_RESOURCE_SMEM] = 0;
  k->time_s[NAPKIN_RESOURCE_REGISTERS] = 0;
  k->time_s[NAPKIN_RESOURCE_CUDA] = contract / (fp32 * (pk->region >= 0 ? GENERIC_CONTRACT_REGION : GENERIC_CONTRACT_PLAIN))
                                    + cuda / (fp32 * GENERIC_MEMORY * 2.5);
  k->time_s[NAPKIN_RESOURCE_CUDA] = MAX (k->time_s[NAPKIN_RESOURCE_CUDA], walk);
  k->time_s[NAPKIN_RESOURCE_SFU] = sfu / napkin_arch_sfu_rate (m->arch);
  memory = generic_is_copy (m->d, pk) ? GENERIC_COPY_MEMORY : GENERIC_MEMORY;
  k->time_s[NAPKIN_RESOURCE_HBM] /= memory;
  k->time_s[NAPKIN_RESOURCE_L2] /= memory;
  k->tensor_path = NULL;
  k->chunk_s = 0;
  k->overlaps = FALSE;
  warning_add (m, _("kernel “%s” runs on the generic lowering (%s): predicted at the generic code's measured speed, "
               "not the tensor cores'"), k->name, pk->reason);
}

static void
plan_kernel_cost (Model                  *m,
                  NapkinKernelCost       *k,
                  const NapkinPlanKernel *pk)
{
  if (pk == NULL)
    {
      k->path = NAPKIN_PATH_GENERIC;
      k->plan_kind = "generic";
      return;
    }
  k->path = pk->path;
  k->plan_kind = napkin_plan_kind_to_string (pk->kind);
  k->reason = g_strdup (pk->reason);
  k->note = g_strdup (pk->note);
  /* what the plan runs differently from the relabeling (threads rounded to whole warps,
   * another path): said, never changed silently */
  for (guint i = 0; pk->adjustments != NULL && i < pk->adjustments->len; i++)
    warning_add (m, _("kernel “%s” runs with %s"), k->name, (const char *) g_ptr_array_index (pk->adjustments, i));
  if (pk->path == NAPKIN_PATH_GENERIC && !m->a->paper)
    {
      generic_kernel (m, k, pk);
      m->a->generic_kernels++;
    }
}

/* Attention under a mask (causal, a window): the kernel skips the tiles the mask hides
 * wholly (docs/plan.md, "Attention kernels"), so its products, exponentials and K/V
 * reads shrink to the tiles it computes: causal at q = k = 4096 with 128 × 128 tiles
 * computes 528 of 1024 per head. Q and O move as before. */
static void
masked_attention (Model                  *m,
                  const NapkinRegionCost *cost,
                  NapkinKernelCost       *k)
{
  const NapkinPlanKernel *pk = m->plan && !m->a->paper ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;
  double f, kv_share;
  gint64 kv_bytes = 0, total = 0;

  if (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION || pk->u.att.tiles_total <= 0
      || pk->u.att.tiles_computed >= pk->u.att.tiles_total)
    return;
  f = (double) pk->u.att.tiles_computed / pk->u.att.tiles_total;
  for (NapkinResource res = NAPKIN_RESOURCE_TENSOR; res <= NAPKIN_RESOURCE_SFU; res++)
    k->time_s[res] *= f;
  k->sfu_all_s *= f;
  k->issue_extra_s *= f;
  k->time_s[NAPKIN_RESOURCE_SMEM] *= f;
  /* the streamed operands' share of the device-memory traffic shrinks with the tiles */
  for (guint t = 0; t < cost->transfers->len; t++)
    {
      const NapkinTransfer *tr = &g_array_index (cost->transfers, NapkinTransfer, t);

      total += tr->bytes;
      if (!tr->is_output && carries_stream (m, cost->region, tr->node))
        kv_bytes += tr->bytes;
    }
  kv_share = total > 0 ? (double) kv_bytes / total : 0;
  k->time_s[NAPKIN_RESOURCE_L2] *= 1 - kv_share * (1 - f);
  /* from device memory, K and V are what the kernel moves beyond Q and O (a chunk
   * re-read by every query tile mostly hits L2: 77 keys shared by 8 heads are 1 % of it,
   * not the 67 % their re-reads are of the region's traffic) */
  {
    const double bw = m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
    const double hbm = k->time_s[NAPKIN_RESOURCE_HBM] * bw;

    kv_share = hbm > 0 ? CLAMP ((hbm - (double) (total - kv_bytes)) / hbm, 0.0, kv_share) : 0;
  }
  k->time_s[NAPKIN_RESOURCE_HBM] *= 1 - kv_share * (1 - f);
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    m->a->tensor_flops[c] -= (gint64) ((1 - f) * (m->a->tensor_flops[c] - m->flops_before[c]));
}


/* The wgmma attention kernel's consumers walk their key chunks one after another, and
 * each chunk is a chain the tensor cores cannot wholly hide: the wait for the chunk,
 * Q·Kᵀ's fence and wait, the row maxima and sums across the warpgroup, O's rescale, P·V's
 * fence (docs/model.md §14c). A block's chunk of c keys takes at least
 * f · (a + b · c) clocks, a = 4.34·D − 56 and b = 6 + 0.09·D for D the length of V's rows
 * in shared memory (padded to 128 bytes), f = 0.4 + 0.6 · rows / 128 for the block's query rows (at
 * least 64, wgmma's). Fitted on 30 relabelings measured on an H200 (tune --measure,
 * 2026-11-30; docs/perf-notes.md, "Session 16"): key chunks of 16–128 at D 80–256 and 16–128
 * rows ran 817–3400 clocks a chunk, and the model without the term had priced chunks of
 * 16–32 within 5 % of chunks of 128 that ran 1.4–2× faster. */
/* Persistent attention (one or two chunks of all the keys a tile) walks its tiles one
 * after another, and each tile adds to its chunks' chain what a block pays once
 * elsewhere: the wait for its Q, the first product and softmax nothing overlaps, O's
 * normalisation and store, about ATTN_PERSIST_TILE_CLOCKS (times the rows' factor
 * above). With three consumer warpgroups (192 rows) a tile took 1.6–2.1× a tile of 128
 * rows, not the 1.3× of that factor. Fitted on an H200 (2026-12-01, docs/perf-notes.md,
 * "Session 28"): 77 and 197 keys, d 32 and 64, 8–61 tiles a block, 64/128/192 rows: the
 * model without the term priced 64, 128 and 192 rows alike, and 64 rows ran 1.2–1.5×
 * slower than 128. */
/* Below D 80 the line a = 4.34·D − 56 (fitted on D 80–256) falls under what a chunk's
 * fixed part takes: at D 64 about 500 clocks (GQA-packed 3 × 64 heads over 4096 keys,
 * chunks of 64 and 128: 1350 and 2226 clocks a chunk, 2.03 and 1.67 ms, priced alike
 * at 1.70 by the line; seven other D-64 problems of the user's path ran 1.05–1.22×
 * their price and 0.95–1.13× with this floor; D 32's problems were already within
 * it). Half the rescale at half the D: ATTN_CHUNK_SMALL_D_CLOCKS a column, to 64
 * (docs/model.md §14c; docs/perf-notes.md, "Session 30"). */
#define ATTN_CHUNK_SMALL_D_CLOCKS 7.8
/* Fewer blocks than SMs and no mask: a block's chain is not shared by the idle SMs
 * either (2 × 4724² d 256 in chunks of 32, 74 blocks: 0.149 ms, priced 0.109 at the
 * SMs' share, 0.159 at the block's; H200, docs/perf-notes.md, "Session 34"). Only chains
 * this long: a block of a few chunks is its fixed costs, priced apart (decoding's
 * windows of 2–3 chunks ran 0.75–0.92 of their price before the term). */
#define ATTN_ONE_WAVE_CHAIN 32
#define ATTN_IDLE_SLOTS     1.25
#define ATTN_PERSIST_TILE_CLOCKS 2600.0
#define ATTN_PERSIST_WIDE_ROWS   1.5

/* The key chunks the kernel's blocks compute in all (a mask's skipped tiles aside). */
static double
attention_computed_chunks (const NapkinPlanAttention *a)
{
  return (double) (a->tiles_computed > 0 ? a->tiles_computed : a->tiles_total) * a->batch / MAX (1, a->group_tile);
}

static void
attention_chunk_floor (Model                  *m,
                       const NapkinRegionCost *cost,
                       NapkinKernelCost       *k)
{
  const NapkinPlanKernel *pk = m->plan && !m->a->paper ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;
  const NapkinPlanAttention *a;
  double steps, dp, f;
  guint vb;

  if (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION || pk->path != NAPKIN_PATH_WGMMA)
    return;
  a = &pk->u.att;
  /* every block's computed chunks, shared by the SMs */
  steps = attention_computed_chunks (a) / m->arch->sms;
  /* V's rows in shared memory: the length P·V multiplies (fp8 Q and K keep a 16-bit V) */
  vb = MAX (1u, napkin_dtype_bytes (a->v_dtype ? a->v_dtype : a->dtype));
  dp = (double) ((a->D * vb + 127) / 128 * 128 / vb);
  f = 0.4 + 0.6 * (double) MAX (64, a->rows) / 128;
  /* persistent: a tile's own chain (ATTN_PERSIST_TILE_CLOCKS), and three consumer
   * warpgroups slower than the line above extends to */
  k->tile_chain = a->persist_tiles > 0 && pk->grid > 0;
  if (k->tile_chain && a->rows > 128)
    f = 1.0 + ATTN_PERSIST_WIDE_ROWS * (double) (a->rows - 128) / 128;
  k->chunk_floor_s = f * (steps * (MAX (4.34 * dp - 56, ATTN_CHUNK_SMALL_D_CLOCKS * MIN (a->D, 64)) + (6 + 0.09 * dp) * (double) a->BKV)
                          + (k->tile_chain ? (double) a->persist_tiles / pk->grid * ATTN_PERSIST_TILE_CLOCKS : 0))
                     / m->arch->clock_hz;
}

/* The tile pipeline of the plan's GEMM kernel (docs/model.md §14). Each SM walks
 * ⌈grid / SMs⌉ tiles (the grid is persistent), each a chain of ⌈K/BK⌉ chunks through
 * `stages` shared-memory buffers, then an epilogue the same warpgroups run: the tensor
 * cores also work on the parts of edge tiles past M, N and K; a chunk cannot come faster
 * than a load's round trip divided among the stages in flight (Little's law, as §6c);
 * each chunk pays a fixed issue cost; and a tile's results leave through shared memory
 * before the next tile's products start (its fixed cost, the plan's
 * napkin_plan_gemm_tile_s, which the plan's own estimates take too). GEMM_CHUNK_CLOCKS
 * was fitted on the H100 sweep of 2026-11-25 (docs/perf-notes.md) from the large aligned
 * products (4096³ … 8192×8192×28672). */
#define GEMM_CHUNK_CLOCKS             30.0

/* What the plan's GEMM loses to operand rows the plan left unaligned: on wgmma rows not
 * 128 bytes apart (napkin_plan_gemm_unaligned_chunk_s), on mma.sync an operand read in
 * place by copies narrower than 16 bytes (napkin_plan_gemm_narrow_chunk_s): each chunk
 * of each SM's tiles waits for its copies (docs/model.md §14, "Unaligned rows",
 * "Operands read in place"). */
static double
gemm_unaligned_s (Model                  *m,
                  const NapkinPlanKernel *pk)
{
  const NapkinPlanGemm *g = &pk->u.gemm;
  gint64 kk, chunks;
  double chunk_s;

  if (g->BK <= 0 || pk->grid <= 0)
    return 0;
  if (pk->path == NAPKIN_PATH_WGMMA)
    chunk_s = napkin_plan_gemm_unaligned_chunk_s (m->arch, g, g->BM, g->BN);
  else if (pk->path == NAPKIN_PATH_MMA)
    chunk_s = napkin_plan_gemm_narrow_chunk_s (m->arch, g, g->BM, g->BN, g->BK);
  else
    return 0;
  kk = (g->K + g->BK - 1) / g->BK;
  chunks = (kk + MAX (1u, g->split_k) - 1) / MAX (1u, g->split_k);
  return (double) ceil_div (pk->grid, m->arch->sms) * chunks * chunk_s;
}

static void
planned_gemm (Model                  *m,
              NapkinKernelCost       *k,
              const NapkinPlanKernel *pk)
{
  const NapkinPlanGemm *g = &pk->u.gemm;
  gint64 tm = (g->M + g->BM - 1) / g->BM, tn = (g->N + g->BN - 1) / g->BN, kk = (g->K + g->BK - 1) / g->BK;
  double padded = (double) tm * g->BM * tn * g->BN * kk * g->BK, real = (double) g->M * g->N * g->K;
  /* skinny mma.sync tiles share an SM, several blocks at once (the plan's blocks_per_sm) */
  gint64 waves = ceil_div (pk->grid, (gint64) m->arch->sms * MAX (1u, pk->blocks_per_sm));
  gint64 chunks = (kk + MAX (1u, g->split_k) - 1) / MAX (1u, g->split_k);
  guint ab = napkin_dtype_bytes (g->ab_dtype);
  double clock = m->arch->clock_hz, latency = m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  double rate, compute, transfer, cycle;

  if (real > 0)
    k->time_s[NAPKIN_RESOURCE_TENSOR] *= padded / real;
  /* the main loop's share of the peak (ping-pong: one warpgroup issues at a time; the
   * other's epilogue runs beside it) */
  k->time_s[NAPKIN_RESOURCE_TENSOR] /= napkin_plan_gemm_tensor_share (m->arch, pk->path, g);
  k->quantisation = (double) waves * m->arch->sms * MAX (1u, pk->blocks_per_sm) / MAX (1, pk->grid);
  k->fill = grid_fill (m, pk->grid);
  napkin_tensor_class_for_dtype (g->ab_dtype, &klass);
  rate = (pk->path == NAPKIN_PATH_WGMMA ? napkin_arch_tensor_rate (m->arch, klass)
                                        : napkin_arch_mma_sync_rate (m->arch, klass)) / m->arch->sms;
  /* one chunk on one SM: its products, and its operands from L2 at the SM's share (of
   * every block the SM holds at once) */
  /* a gated pair: two products of A's chunk, a chunk of each B */
  compute = 2.0 * g->BM * g->BN * g->BK * (g->dual ? 2 : 1) / rate * MAX (1u, pk->blocks_per_sm);
  transfer = (double) (g->BM + g->BN * (g->dual ? 2 : 1)) * g->BK * ab
             / (m->arch->levels[NAPKIN_LEVEL_L2].bandwidth / m->arch->sms) * MAX (1u, pk->blocks_per_sm);
  cycle = (latency + transfer + compute) / MAX (1u, g->stages);
  k->latency_s += waves * chunks * (GEMM_CHUNK_CLOCKS / clock + MAX (0.0, cycle - MAX (compute, transfer))) + latency;
  /* each tile's fixed cost: its store (rows of C not 16 bytes apart through the staged
   * epilogue, as vectors), on wgmma its chain's fill and drain */
  k->latency_s += waves * napkin_plan_gemm_tile_s (m->arch, pk->path, g) + gemm_unaligned_s (m, pk);
}

/* A wgmma GEMM in a region: its operands come by TMA, several chunks in flight a block, so
 * fewer blocks than SMs draw more than their SMs' share of device memory (tma_grid_fill,
 * as attention's). A product of one row of tiles (or one column: few rows, a decode
 * step's) reads each byte of its long operand once, from device memory: at
 * GEMM_STREAM_SHARE of its rate, and a block's chunks come no faster than one round trip
 * under load (GEMM_STREAM_TRIPS of the quiet one) per `stages` chunks, nor faster than
 * GEMM_STREAM_SM_RATE bytes a second an SM. Fitted on an H200 (docs/perf-notes.md,
 * "Session 29": 66 runs of five shapes with 2–64 rows, 64/128/256 columns a tile, K split 1,
 * 2 or 4; log error rms 0.75 → 0.21): 64 × 64 tiles over 2 × 8192 × 14456 ran 0.129 ms
 * (priced 0.062 at the full rate), 64 × 256 split in 4 0.074 (priced 0.216 at 32 SMs'
 * share). */
#define GEMM_STREAM_SHARE   0.75
#define GEMM_STREAM_TRIPS   2.0
#define GEMM_STREAM_SM_RATE 90e9

static void
gemm_tma_stream (Model                  *m,
                 NapkinKernelCost       *k,
                 const NapkinPlanKernel *pk)
{
  const NapkinPlanGemm *g = &pk->u.gemm;
  const double trip = GEMM_STREAM_TRIPS * m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
  const double chunk_bytes = (double) (MIN (g->BM, g->M) + MIN (g->BN, g->N)) * g->BK
                             * napkin_dtype_bytes (g->ab_dtype);
  const gint64 chunks = ceil_div (ceil_div (g->K, g->BK), MAX (1u, g->split_k));
  double stream;

  k->fill = tma_grid_fill (m, pk->grid);
  /* … but L2 only through its own SMs' ports: 92 tiles of 128 × 64 over K 8192 (5807 ×
   * 128) ran 0.0508 ms, priced 0.0413 with 92 SMs drawing all of L2 (H200,
   * docs/perf-notes.md, "Session 34") */
  k->l2_fill = grid_fill (m, pk->grid);
  if ((ceil_div (g->M, g->BM) > 1 && ceil_div (g->N, g->BN) > 1) || g->stages == 0)
    return;
  stream = (double) ceil_div (pk->grid, m->arch->sms) * chunks
           * MAX (trip / g->stages, chunk_bytes / GEMM_STREAM_SM_RATE);
  /* finish_kernel divides device memory's time by the fill */
  k->time_s[NAPKIN_RESOURCE_HBM] = MAX (k->time_s[NAPKIN_RESOURCE_HBM] / GEMM_STREAM_SHARE, stream * k->fill);
}

/* The plan's skinny product on CUDA cores (kernels/gemm-skinny.cu; docs/model.md §14,
 * "Skinny products on CUDA cores"): its stream of A and B at the share of device
 * memory it sustains (NAPKIN_PLAN_GEMM_SKINNY_HBM_SHARE) and its fp32 partials written
 * in place of C, its FMAs on the CUDA cores (node_compute) at their share, the two
 * added (measured: a thread's loads and products hardly overlap), a round trip. */
static void
planned_gemm_skinny (Model                  *m,
                     NapkinKernelCost       *k,
                     const NapkinPlanKernel *pk)
{
  const NapkinPlanGemm *g = &pk->u.gemm;
  /* fewer blocks than SMs leave the others idle */
  const double fill = napkin_plan_gemm_skinny_fill (m->arch, g);

  k->time_s[NAPKIN_RESOURCE_HBM] = napkin_plan_gemm_skinny_bytes (g)
                                   / (m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth
                                      * napkin_plan_gemm_skinny_hbm_share (g) * fill);
  k->time_s[NAPKIN_RESOURCE_CUDA] /= NAPKIN_PLAN_GEMM_SKINNY_FMA_SHARE * fill;
  k->latency_s += MIN (k->time_s[NAPKIN_RESOURCE_HBM], k->time_s[NAPKIN_RESOURCE_CUDA]);
  k->quantisation = 1;
  k->fill = grid_fill (m, pk->grid);
  k->latency_s += 2 * m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
}

/* The fixed cost of one attention block (ATTN_BLOCK_CLOCKS above). */
static double
attention_block_s (Model *m)
{
  return 2 * m->arch->levels[NAPKIN_LEVEL_HBM].latency_s + ATTN_BLOCK_CLOCKS / m->arch->clock_hz;
}

/* The fixed costs of an attention grid's blocks, `slots` a SM. A block whose queries see
 * no key (a window, or a causal offset, that ends before its query tile) walks no chunk:
 * its producer returns at once and its consumers store zero rows, a round trip and
 * ATTN_EMPTY_BLOCK_CLOCKS, not a working block's fixed cost. Cross-attention 3 × 4 ×
 * 15192 × 300 (d 32) under a window of 982 keys: 1308 of 1428 blocks empty, priced 58 µs
 * as full blocks, measured 26 µs (docs/perf-notes.md, "Session 30"). Its zeros leave
 * from registers at about ATTN_EMPTY_STORE_BYTES_PER_CLOCK an SM, one such block an SM at
 * a time: 4 × 16 × 15789 × 300 (d 256, fp8 Q·Kᵀ, 128 rows a block) under a window of
 * 3396 keys, 6048 of 7904 blocks empty, ran 0.44–0.55 ms where its 3712 queries that see
 * a key alone ran 0.20 (priced 0.29 and 0.16 without the term; H200, docs/perf-notes.md,
 * "Session 35"): 64 KB of zeros a block took about 4 µs more than d 32's 8 KB, which
 * ATTN_EMPTY_BLOCK_CLOCKS covers (its first ATTN_EMPTY_STORE_FREE bytes). */
#define ATTN_EMPTY_BLOCK_CLOCKS 1400.0
#define ATTN_EMPTY_STORE_BYTES_PER_CLOCK 6.0
#define ATTN_EMPTY_STORE_FREE (16.0 * 1024)

static double
attention_blocks_s (Model                  *m,
                    const NapkinPlanKernel *pk,
                    gint64                  slots)
{
  const NapkinPlanAttention *a = &pk->u.att;
  const gint64 q_tiles = ceil_div (a->NQ, MAX (1, a->BQ)), seen = a->seen_hi - a->seen_lo;
  gint64 work, empty;

  if (a->persist_tiles > 0 || seen <= 0 || seen >= q_tiles)
    return slots * attention_block_s (m);
  work = ceil_div (pk->grid * seen, q_tiles);
  empty = pk->grid - work;
  return ceil_div (work, m->arch->sms) * attention_block_s (m)
         + (double) empty / m->arch->sms
           * (m->arch->levels[NAPKIN_LEVEL_HBM].latency_s
              + (ATTN_EMPTY_BLOCK_CLOCKS
                 + MAX (0.0, (double) a->rows * a->D * napkin_dtype_bytes (a->o_dtype) - ATTN_EMPTY_STORE_FREE)
                   / ATTN_EMPTY_STORE_BYTES_PER_CLOCK) / m->arch->clock_hz);
}

/* Round trips of the split-KV combine (kernels/attn-combine.cu): a warp a row reads its
 * log-sum-exps (one trip), then its partial outputs 16 splits at a time for each 128
 * columns of d, then stores. Few rows leave the GPU nearly empty: their trips are not
 * hidden by other warps and bound the kernel, once per wave of warps the GPU holds. */
#define COMBINE_UNROLL 16

static double
combine_latency_s (Model                     *m,
                   const NapkinPlanAttention *a)
{
  gint64 rows = a->batch * a->NQ;
  gint64 trips = 2 + ceil_div (a->D, 128) * ceil_div (a->split_kv, COMBINE_UNROLL);
  gint64 warps = MAX (1, (gint64) m->arch->sms * (m->arch->max_threads_per_sm / 32));

  return (double) trips * ceil_div (rows, warps) * m->arch->levels[NAPKIN_LEVEL_HBM].latency_s;
}

/* A repack or a split-K reduction the plan adds: device-memory traffic only. */
static void
plan_helper_kernel (Model                  *m,
                    const NapkinPlanKernel *pk)
{
  NapkinKernelCost k = { 0 };
  gint64 bytes = 0;

  k.name = napkin_plan_kernel_label (pk->name, pk->kind);
  k.region = -1;
  k.quantisation = 1;
  k.overlaps = TRUE;
  k.path = pk->path;
  k.plan_kind = napkin_plan_kind_to_string (pk->kind);
  k.note = g_strdup (pk->note);
  if (pk->kind == NAPKIN_PLAN_REPACK)
    {
      const NapkinPlanRepack *r = &pk->u.repack;
      guint eb = napkin_dtype_bytes (r->dtype);

      bytes = r->batch * r->rows * r->cols * eb + r->batch * (r->transpose ? r->cols : r->rows) * r->ld_dst * eb;
    }
  else if (pk->kind == NAPKIN_PLAN_ATTENTION_COMBINE)
    {
      const NapkinPlanAttention *a = &pk->u.att;
      gint64 rows = a->batch * a->NQ;

      /* the split-KV partial outputs and log-sum-exps read, O written */
      bytes = (gint64) a->split_kv * rows * (a->D + 1) * 4 + rows * a->D * napkin_dtype_bytes (a->o_dtype);
    }
  else if (pk->kind == NAPKIN_PLAN_SPLIT_REDUCE)
    {
      const NapkinPlanGemm *g = &pk->u.gemm;
      gint64 mn = g->batch * g->M * g->N;

      /* the GEMM wrote split fp32 partials instead of C once; this reads them back */
      bytes = 2 * g->split_k * mn * 4;
      for (guint i = 0; g->epilogue && i < g->epilogue->len; i++)
        if (g_array_index (g->epilogue, NapkinPlanMap, i).has_other)
          bytes += mn * napkin_dtype_bytes (g_array_index (g->epilogue, NapkinPlanMap, i).other.dtype);
    }
  add_level_traffic (m, NAPKIN_LEVEL_HBM, bytes, bytes);
  add_level_traffic (m, NAPKIN_LEVEL_L2, bytes, bytes);
  k.time_s[NAPKIN_RESOURCE_HBM] = bytes / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
  k.time_s[NAPKIN_RESOURCE_L2] = bytes / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
  if (pk->kind == NAPKIN_PLAN_ATTENTION_COMBINE)
    k.latency_s = MAX (0.0, combine_latency_s (m, &pk->u.att) - k.time_s[NAPKIN_RESOURCE_HBM]);
  /* a copy's round trip and its stores' drain, as a rows kernel's (H200, session 22:
   * repacks of 0.5–2 MB ran 6.3–8.6 µs alone, 2.2–3.7 µs over their bytes and launch) */
  if (pk->kind == NAPKIN_PLAN_REPACK)
    k.latency_s = memory_kernel_tail_s (m);
  finish_kernel (m, &k);
  g_array_append_val (m->a->kernels, k);
}

/* The kernel's own transfers: those of every region nested in it. */
static void
kernel_transfers (Model                  *m,
                  const NapkinRegionCost *cost,
                  NapkinKernelCost       *k)
{
  for (guint c = 0; c < m->a->regions->len; c++)
    {
      NapkinRegionCost *cc = &g_array_index (m->a->regions, NapkinRegionCost, c);
      RegionState *crs = &m->rs[cc->region];

      if (crs->kernel != (int) cost->region)
        continue;
      /* the wgmma skeletons ignore warp tiles: wgmma reads shared memory itself */
      if (cc->level == NAPKIN_LEVEL_REGISTERS && cc->parent >= 0 && m->rs[cc->parent].wgmma)
        continue;
      for (guint t = 0; t < cc->transfers->len; t++)
        {
          account_transfer (m, &g_array_index (cc->transfers, NapkinTransfer, t), k->time_s);
        }
    }
}

/* The kernel's operations on the instruction path its shared-memory region decides. */
static void
kernel_compute (Model                  *m,
                const NapkinRegionCost *cost,
                NapkinKernelCost       *k)
{
  TensorPath path = PATH_MMA_SYNC;

  for (guint c = 0; c < m->a->regions->len && !m->a->no_wgmma; c++)
    {
      NapkinRegionCost *cc = &g_array_index (m->a->regions, NapkinRegionCost, c);

      if (m->rs[cc->region].kernel == (int) cost->region && cc->level == NAPKIN_LEVEL_SMEM
          && m->rs[cc->region].wgmma)
        {
          path = PATH_WGMMA;
          break;
        }
    }
  memcpy (m->flops_before, m->a->tensor_flops, sizeof m->flops_before);
  m->exp_fma_seen = FALSE;
  m->sfu_all_s = m->issue_extra_s = 0;
  m->chunks = cost->chunks;
  {
    const NapkinPlanKernel *pk = m->plan ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;

    m->exp_blocks = pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION && pk->path == NAPKIN_PATH_WGMMA
                    ? pk->u.att.BKV / 8 : 0;
    m->score_ops = pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION ? pk->u.att.n_scores * NAPKIN_SCORE_OPERAND_OPS : 0;
  }
  for (guint i = 0; i < m->rs[cost->region].members->len; i++)
    node_compute (m, g_array_index (m->rs[cost->region].members, guint, i), path, k->time_s);
  k->exp_on_fma = m->exp_fma_seen;
  k->sfu_all_s = m->sfu_all_s;
  k->issue_extra_s = m->issue_extra_s;
  if (k->time_s[NAPKIN_RESOURCE_TENSOR] > 0)
    k->tensor_path = tensor_path_names[path];
}

/* The region the kernel's blocks are: its outermost region on the SMs, below any L2 panel. */
static const NapkinRegionCost *
grid_region (Model                  *m,
             guint                   r,
             const NapkinRegionCost *cost)
{
  if (cost->level == NAPKIN_LEVEL_L2)
    for (guint c = 0; c < m->a->regions->len; c++)
      if (g_array_index (m->a->regions, NapkinRegionCost, c).parent == (int) r
          && g_array_index (m->a->regions, NapkinRegionCost, c).level != NAPKIN_LEVEL_L2)
        return &g_array_index (m->a->regions, NapkinRegionCost, c);
  return cost;
}

/* A block with one stage loads, waits, then computes: its loads hide behind
 * compute only with a second stage or a second block on the SM. */
static void
kernel_overlap (Model                  *m,
                const NapkinRegionCost *grid,
                NapkinKernelCost       *k)
{
  k->overlaps = grid->stages >= 2 || grid->per_sm >= 2 || grid->level == NAPKIN_LEVEL_L2;
  if (m->rs[grid->region].rows_c > 0)
    rows_kernel (m, grid, k);
  else if (k->overlaps)
    pipeline_stall (m, grid, k);
  else
    warning_add (m, _("region “%s”: one pipeline stage and one block per SM, so its loads cannot hide "
                 "behind compute: predicted without overlap (add a stage or shrink the footprint)"),
                 grid->name);
}

/* The strided rows kernel (docs/plan.md, "Rows over any axis"; docs/model.md §7g),
 * priced from its plan: x read once (twice in two passes: the second read crosses L2,
 * and device memory too unless the plan keeps the blocks in flight within L2), y
 * written, each fused operand read once; a grid of fewer blocks than SMs moves data on
 * that share of the SMs; the loads a block keeps in flight bound what an SM can draw
 * (Little's law, as §7c); and each wave of blocks waits out, per pass, one load's round
 * trip and its reductions' barriers. */
#define STRIDED_ROWS_UNROLL 4   /* loads in flight per thread: kernels/rows-strided-sm80.cu */
/* 128-byte pieces of rows far apart draw about 0.6 of device memory's rate (H200,
 * softmax over axis 0, 0.4–2.8 GB moved: 2.7–2.9 TB/s; docs/model.md §7g) */
#define STRIDED_ROWS_HBM_EFFICIENCY 0.6
/* Read twice from device memory in 16-byte vectors, the second sweep just after the
 * first: 0.72 (H200, user's path of sessions 26–29: eight softmaxes over axis 0 of
 * 2048–5715 rows by 65536–128256 ran 0.81–0.84× their price at 0.6; the axis split in
 * chunks, two launches, stays at 0.6: 1000000 × 128 ran 0.31 ms). The column held in
 * shared memory: the block loads it, reduces and stores in turn, as the contiguous form
 * (NAPKIN_ROWS_SMEM_EFFICIENCY): 512 × 128256 ran 1.33× its price without it. */
#define STRIDED_ROWS_TWICE_HBM_EFFICIENCY 0.72
/* A split axis whose second launch rereads its chunks from L2 (the whole of x within
 * 0.7 of L2) ran 1.9–2.75× its bandwidth-and-latency price: H200, softmax over axis 0
 * of 8192–100000 rows by 128–512 columns (4–34 MB), 0.024–0.076 ms against 0.013–0.033
 * priced (docs/perf-notes.md, "Session 36"): about 18 µs fixed and 0.64 TB/s of x beyond
 * it. Its memory times three times over price the eight measured within 0.83–1.13×;
 * the splits that reread from device memory priced right without it (65536 × 1024:
 * 0.150 / 0.167). A measured factor, not yet understood in the kernel. */
#define STRIDED_SPLIT_L2_SLOWDOWN 3.0

static void
planned_strided_rows (Model                  *m,
                      NapkinKernelCost       *k,
                      const NapkinPlanKernel *pk,
                      gboolean                traffic)
{
  const NapkinPlanRows *r = &pk->u.rows;
  const NapkinArch *arch = m->arch;
  guint xb = napkin_dtype_bytes (r->x_dtype), passes = r->one_pass ? 1 : 2, reductions = 1;
  gint64 xe = mul (m, r->rows, r->cols), ye = r->op == NAPKIN_OP_REDUCE ? r->rows : xe, elements, bytes;
  gint64 reread = 0, reread_e = 0;
  /* a split reduction's blocks are its first launch's: the second only combines */
  gint64 grid = pk->grid * (r->split > 1 && r->op == NAPKIN_OP_REDUCE ? r->split : 1);
  gint64 sms = MAX (1, arch->sms), slots = sms * MAX (1u, pk->blocks_per_sm), waves = ceil_div (grid, slots);
  double latency = arch->levels[NAPKIN_LEVEL_HBM].latency_s, fill, in_flight, need;
  const GArray *maps[] = { r->prologue, r->epilogue };

  elements = add (m, xe, ye);
  bytes = add (m, mul (m, xe, xb), mul (m, ye, napkin_dtype_bytes (r->y_dtype)));
  for (guint a = 0; a < G_N_ELEMENTS (maps); a++)
    for (guint i = 0; maps[a] != NULL && i < maps[a]->len; i++)
      {
        const NapkinPlanMap *mp = &g_array_index (maps[a], NapkinPlanMap, i);
        gint64 e;

        if (!mp->has_other || mp->other.node < 0)
          continue;
        e = tile_elements (m, -1, (guint) mp->other.node);
        elements = add (m, elements, e);
        bytes = add (m, bytes, mul (m, e, napkin_dtype_bytes (mp->other.dtype)));
        /* the second sweep reads a prologue operand that runs along both again */
        if (a == 0 && mp->stride[1] != 0 && mp->stride[2] != 0)
          {
            reread_e = add (m, reread_e, e);
            reread = add (m, reread, mul (m, e, napkin_dtype_bytes (mp->other.dtype)));
          }
      }
  if (passes == 2)
    {
      reread_e = add (m, reread_e, xe);
      reread = add (m, reread, mul (m, xe, xb));
    }
  else
    reread = reread_e = 0;
  if (traffic)
    {
      add_level_traffic (m, NAPKIN_LEVEL_HBM, elements + (r->l2_reread ? 0 : reread_e),
                         bytes + (r->l2_reread ? 0 : reread));
      add_level_traffic (m, NAPKIN_LEVEL_L2, elements + reread_e, bytes + reread);
    }
  fill = k->fill = grid_fill (m, grid);   /* finish_kernel divides by it */
  k->time_s[NAPKIN_RESOURCE_HBM] = (bytes + (r->l2_reread ? 0 : reread)) / arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
  k->time_s[NAPKIN_RESOURCE_L2] = (bytes + reread) / arch->levels[NAPKIN_LEVEL_L2].bandwidth;
  /* Little's law: the bytes an SM's blocks have in flight against what the bandwidth
   * needs over one round trip */
  in_flight = (double) MIN (grid, slots) / sms * r->threads * STRIDED_ROWS_UNROLL * r->vec * xb;
  need = arch->levels[NAPKIN_LEVEL_HBM].bandwidth * fill * latency / sms;
  if (latency > 0 && in_flight < need)
    k->time_s[NAPKIN_RESOURCE_HBM] *= need / in_flight;
  k->time_s[NAPKIN_RESOURCE_HBM] = MAX (k->time_s[NAPKIN_RESOURCE_HBM],
                                        (bytes + (r->l2_reread ? 0 : reread)) / arch->levels[NAPKIN_LEVEL_HBM].bandwidth
                                        / (passes == 2 && !r->l2_reread && r->split <= 1 && r->vec * xb >= 16
                                           ? STRIDED_ROWS_TWICE_HBM_EFFICIENCY : STRIDED_ROWS_HBM_EFFICIENCY));
  if (r->smem_row)
    k->time_s[NAPKIN_RESOURCE_HBM] /= NAPKIN_ROWS_SMEM_EFFICIENCY;
  /* A block that holds its SM alone draws that SM's share of device memory: the last
   * wave's empty SMs are lost to it as to the per-SM resources (H200, the user's path:
   * strided softmaxes of 172–205 blocks of 1024 threads, 1.3–1.5 waves, ran 1.31–1.64×
   * their price without this; docs/perf-notes.md, "Session 31") */
  if (pk->blocks_per_sm <= 1 && waves > 1)
    k->time_s[NAPKIN_RESOURCE_HBM] *= (double) waves * slots / MAX (1, grid);
  if (r->op == NAPKIN_OP_NORMALIZE && r->norm == NAPKIN_NORM_LAYERNORM && r->one_pass)
    reductions = 2;   /* the mean, then the squared deviations */
  else if (r->op == NAPKIN_OP_SOFTMAX && r->one_pass)
    reductions = 2;   /* the max, then the exponentials' sum (from registers or shared memory) */
  k->latency_s = waves * (passes * latency + reductions * NAPKIN_REDUCTION_CLOCKS / arch->clock_hz);
  k->quantisation = (double) waves * slots / MAX (1, grid);
  if (r->split > 1)
    {
      /* the chunks' statistics, then the output: two launches, the second starting with
       * a round trip for the partials */
      k->launches = 2;
      k->latency_s += latency;
      if (r->l2_reread)
        {
          k->time_s[NAPKIN_RESOURCE_HBM] *= STRIDED_SPLIT_L2_SLOWDOWN;
          k->time_s[NAPKIN_RESOURCE_L2] *= STRIDED_SPLIT_L2_SLOWDOWN;
          k->latency_s *= STRIDED_SPLIT_L2_SLOWDOWN;
        }
    }
}

/* The bytes of Q and O of the plan's attention: every query row read and written once. */
static double
attention_qo_bytes (const NapkinPlanAttention *a)
{
  return (double) a->batch * a->NQ * a->D * (napkin_dtype_bytes (a->dtype) + napkin_dtype_bytes (a->o_dtype));
}

/* Whether the attention runs one wave of blocks that each walk their own key chunks: no
 * more blocks than SMs, not persistent, not split (the two terms below). */
static gboolean
attention_one_wave (Model                  *m,
                    const NapkinPlanKernel *pk)
{
  return pk->grid <= m->arch->sms && pk->u.att.persist_tiles == 0 && pk->u.att.split_kv <= 1;
}

/* One wave of attention blocks under a mask (causal, a window): the kernel lasts as long
 * as its longest block — the query tile that sees the most key chunks, or split along
 * the keys, the block that walks a whole split range of them —, not the average block the
 * resources' totals price. The factor: the most chunks a block computes over their mean
 * (H200: a window of 2135 over 2048 queries, 128 blocks of 1–17 chunks, ran 1.83× its
 * prediction without it; causal attention over 7626 keys, one head, 60 query tiles split
 * in 2, 1.88×, session 23). A few waves do not even it out either: the plan simulates its
 * blocks' order (its `tail`; docs/plan.md, "Causal order"). */
static double
longest_block (Model                  *m,
               const NapkinPlanKernel *pk,
               double                  quantisation)
{
  const NapkinPlanAttention *a = &pk->u.att;
  const gint64 split = MAX (1u, a->split_kv), blocks = ceil_div (a->NQ, MAX (1, a->BQ)) * split;
  const gint64 most = split > 1 ? MIN (a->chunks_most, a->chunks_per_split) : a->chunks_most;
  double mean;

  /* a few waves: the plan's simulation of its blocks' order (the waves' quantisation,
   * priced apart, taken out) */
  if (pk->grid > m->arch->sms && a->tail > 1.0)
    return MAX (1.0, a->tail / MAX (quantisation, 1.0));
  if (pk->grid > m->arch->sms || a->persist_tiles > 0 || a->tiles_computed <= 0
      || a->tiles_computed >= a->tiles_total || blocks <= 0)
    return 1.0;
  mean = (double) a->tiles_computed / blocks;
  return MAX (1.0, most / mean);
}

/* One wave of attention blocks (no more blocks than SMs) that each walk a few key
 * chunks: every block loads its Q and stores its O at about the same moment, and with so
 * few chunks between them nothing hides either, so Q and O cross at the persistent
 * kernel's stream rate on top of the rest. Measured on an H200 (docs/perf-notes.md,
 * "Session 13"): 32–128 blocks of 1–4 chunks, d 64 to 256, ran 1.14–1.60× their
 * prediction without this term, 0.92–1.08× with it. Persistent and split-KV kernels,
 * more than a wave, or longer walks: no term. */
#define ATTN_SHORT_WAVE_CHUNKS 4

static double
short_wave_qo_s (Model                  *m,
                 const NapkinRegionCost *cost,
                 const NapkinPlanKernel *pk)
{
  const NapkinPlanAttention *a = &pk->u.att;
  double chunks = cost->chunks;

  if (!attention_one_wave (m, pk) || cost->chunks <= 0)
    return 0;
  if (a->tiles_total > 0 && a->tiles_computed < a->tiles_total)
    chunks *= (double) a->tiles_computed / a->tiles_total;
  if (chunks > ATTN_SHORT_WAVE_CHUNKS)
    return 0;
  return attention_qo_bytes (a) / (m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth * ATTN_PERSIST_STREAM_EFFICIENCY);
}

/* What the kernel plan changes: the attention grid, rows read twice, the best path and
 * the plan's own cost. */
static void
kernel_plan (Model                  *m,
             guint                   r,
             const NapkinRegionCost *cost,
             NapkinKernelCost       *k)
{
  const NapkinPlanKernel *pk = m->plan ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;

  /* Attention runs on the plan's grid: query heads of a group packed in one block,
   * and, decoding, the keys split across blocks (split-KV): the SMs it fills and the
   * chain of key chunks one block walks are the plan's, not the region's instances. */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION && !m->a->paper && pk->grid > 0)
    {
      gint64 slots = ceil_div (pk->grid, m->arch->sms);

      k->quantisation = (double) slots * m->arch->sms / pk->grid;
      /* fewer blocks than SMs: each copies its K/V by TMA, several chunks in flight,
       * and draws about three SMs' share of device memory (the split-KV decodes of
       * sessions 8–22 on the H200, 12–64 blocks: 0.64–0.85 of their prediction at one
       * share, 0.79–1.15 at three; docs/model.md §14b) */
      k->fill = tma_grid_fill (m, pk->grid);
      /* the stalls are per chunk the kernel computes: a mask's skipped tiles wait for
       * nothing (docs/model.md §14b); split, a block walks its share of the chunks its
       * queries see */
      double skew = 1.0;

      if (pk->u.att.split_kv > 1 && cost->chunks > 0)
        {
          skew = longest_block (m, pk, k->quantisation);
          k->latency_s *= (double) pk->u.att.chunks_per_split / cost->chunks * skew;
        }
      else if (pk->u.att.tiles_total > 0 && pk->u.att.tiles_computed < pk->u.att.tiles_total)
        {
          skew = longest_block (m, pk, k->quantisation);
          k->latency_s *= (double) pk->u.att.tiles_computed / pk->u.att.tiles_total * skew;
        }
      for (guint r = 0; r < NAPKIN_N_RESOURCES; r++)
        k->time_s[r] *= skew;
      /* under a mask the chunks' chain is the longest block's, not the SMs' average:
       * a window of 3108 over 4096 queries, 128 blocks of 2–99 chunks of 32 keys at D 256,
       * ran 0.102 ms, priced 0.077 at the average (H200, docs/perf-notes.md, "Session
       * 33"); without a mask the blocks' chains overlap the waves' tails (fp8 D 256,
       * 2.5 waves: priced at 0.71–0.82 of their time with the waves counted whole), but
       * in one wave a long chain is its block's (ATTN_ONE_WAVE_CHAIN) */
      if (!k->tile_chain
          && (skew > 1.0 || (k->quantisation >= ATTN_IDLE_SLOTS && pk->u.att.split_kv <= 1
                             && attention_computed_chunks (&pk->u.att) / pk->grid >= ATTN_ONE_WAVE_CHAIN)))
        k->chunk_floor_s *= k->quantisation * skew;
      /* one block an SM at a time (setmaxnreg takes the register file on wgmma):
       * each of an SM's blocks pays the prologue and epilogue in turn */
      if (pk->path == NAPKIN_PATH_WGMMA)
        k->latency_s += attention_blocks_s (m, pk, slots) + short_wave_qo_s (m, cost, pk);
      /* persistent (one chunk of all the keys): Q and O stream through one block an SM;
       * K and V, read once per matrix, move at the full rate (ViT's 197 keys: as many
       * bytes as Q and O) */
      if (pk->u.att.persist_tiles > 0)
        {
          const NapkinPlanAttention *a = &pk->u.att;
          const double qo = attention_qo_bytes (a);
          const double kv = (double) a->kv_batch * a->NKV * a->D
                            * (napkin_dtype_bytes (a->dtype) + napkin_dtype_bytes (a->v_dtype));
          const double wide = a->rows >= 128 && a->D >= ATTN_PERSIST_WIDE_STREAM_D ? ATTN_PERSIST_WIDE_STREAM : 1.0;

          /* the next tiles' Q copies overlap this tile's products, one K/V stage or two */
          k->overlaps = TRUE;

          k->time_s[NAPKIN_RESOURCE_HBM] *= (qo * wide / ATTN_PERSIST_STREAM_EFFICIENCY + kv) / MAX (qo + kv, 1.0);
        }
    }
  /* a GEMM region on the plan's wgmma or mma.sync kernel: the share of its path's rate
   * it sustains, what unaligned operands cost it, and on wgmma its staged epilogue, once
   * per wave */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM && (pk->path == NAPKIN_PATH_WGMMA || pk->path == NAPKIN_PATH_MMA)
      && !m->a->paper && pk->grid > 0)
    {
      if (pk->path == NAPKIN_PATH_WGMMA)
        {
          const NapkinPlanGemm *g = &pk->u.gemm;
          double staged = napkin_plan_gemm_staged_epilogue_s (m->arch, g);
          /* the plan's tiles, each slice of a split K a tile of its own (the region's
           * instances count the output's tiles only), and each slice's fp32 partials
           * stored as the operation's GEMM prices them (planned_gemm) */
          gint64 tiles = g->batch * ceil_div (g->M, MAX (1, g->BM)) * ceil_div (g->N, MAX (1, g->BN))
                         * MAX (1u, g->split_k);

          k->quantisation = (double) ceil_div (tiles, m->arch->sms) * m->arch->sms / MAX (1, tiles);
          if (g->split_k > 1)
            k->latency_s += ceil_div (tiles, m->arch->sms) * napkin_plan_gemm_tile_store_s (m->arch, g, 4);
          gemm_tma_stream (m, k, pk);

          if (pk->u.gemm.pingpong)
            staged -= napkin_plan_gemm_pingpong_hidden_s (m->arch, &pk->u.gemm, staged);
          k->latency_s += ceil_div (pk->grid, m->arch->sms) * staged;
        }
      k->latency_s += gemm_unaligned_s (m, pk);
      k->time_s[NAPKIN_RESOURCE_TENSOR] /= napkin_plan_gemm_tensor_share (m->arch, pk->path, &pk->u.gemm);
    }
  /* a row too long for the SM: the plan reads it twice (statistics, then the result) */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->u.rows.inner > 1 && !m->a->paper && pk->grid > 0)
    {
      /* the strided rows kernel runs its own grid, not the region's instances: its
       * times are the plan's (the region's transfers stay in the level totals) */
      planned_strided_rows (m, k, pk, FALSE);
    }
  else if (pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && !pk->u.rows.one_pass && !m->a->paper)
    {
      gint64 e = pk->u.rows.rows * pk->u.rows.cols;
      gint64 b = device_traffic (m, e, e * napkin_dtype_bytes (pk->u.rows.x_dtype));

      k->time_s[NAPKIN_RESOURCE_HBM] += b / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
      k->time_s[NAPKIN_RESOURCE_L2] += b / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
    }
  best_path_kernel (m, r, cost, (const guint *) m->rs[cost->region].members->data,
                    m->rs[cost->region].members->len, k);
  plan_kernel_cost (m, k, pk);
}

/* A top-level region: one kernel with everything nested in it. */
/* The fused attention backward's products as a share of the mma.sync peak (docs/model.md,
 * "Attention backward"): fit to its first run on an H200 (4 × 16 heads, 4096 queries and
 * keys, d 128: 7.52 ms; the exponentials, the row arithmetic and the shared-memory reads
 * counted beside it, all issued by the same warps). */
#define NAPKIN_ATTN_BWD_MMA_EFFICIENCY 0.39
/* … and on wgmma (NKB_MAIN_SM90), fit to its runs on an H200 (4 × 16 heads, 4096 queries
 * and keys, d 64 and 128, causal and not; docs/model.md, "Attention backward"): the first
 * launch's two products at 0.37 of the dense peak; the main launch's five at 0.92 while
 * they run, beside them (not overlapped: the same warps) 0.22 SM clocks a score for the
 * exponentials and row arithmetic, and dQ's fp32 partials added by bulk reductions at
 * 0.43 of the L2 bandwidth, also in series — the main launch ran 2.43 ms at d 128 with
 * the reductions left out, 3.61 with them. */
#define NAPKIN_ATTN_BWD9_PRE_EFFICIENCY 0.37
#define NAPKIN_ATTN_BWD9_MAIN_EFFICIENCY 0.92
#define NAPKIN_ATTN_BWD9_SCORE_CLOCKS 0.22
#define NAPKIN_ATTN_BWD9_REDUCE_SHARE 0.43

/* The fused attention backward (kernels/attn-bwd-sm80.cu; docs/model.md, "Attention
 * backward"): its own count, not the region's tiles — the kernel makes no [q, k] value
 * and runs three launches. Per (key block, query tile) pair it computes, five products of
 * BKV × BQ × D (Sᵀ, dPᵀ, dV, dK, dQ) and the first kernel's Q·Kᵀ and dO·Vᵀ again (the
 * row term Σ_k P⊙dP), each score's exponential twice; each warp reads the tile's Q and dO from shared memory twice (ldmatrix,
 * which the warps issuing mma.sync wait for: finish_kernel adds tensor and shared-memory
 * time), dS goes through shared memory once, and dQ's share is added to the fp32
 * accumulator in L2 (a read and a write a value). Device memory: Q, K, V, O, dO read, dQ,
 * dK, dV written, the accumulator zeroed, added to and read, score operands read once
 * (from L2 by each score both kernels make), a bias's gradient summed in L2 (an atomic
 * add a score). The main loop's share of the mma.sync peak is
 * NAPKIN_ATTN_BWD_MMA_EFFICIENCY. */
static void
attention_backward_cost (Model                  *m,
                         const NapkinPlanKernel *pk,
                         NapkinKernelCost       *k)
{
  const NapkinPlanAttnBackward *b = &pk->u.bwd;
  const NapkinPlanAttention *a = &b->a;
  const double pairs = (double) b->pairs, tile = (double) a->BKV * a->BQ * a->D;
  const double eb = napkin_dtype_bytes (a->dtype), gb = napkin_dtype_bytes (b->grad_dtype);
  const double q_elems = (double) a->batch * a->NQ * a->D, k_elems = (double) a->kv_batch * a->NKV * a->D;
  double l2_scores = 0;
  double hbm = q_elems * (3 * eb + gb) + k_elems * (2 * eb + 2 * gb) + q_elems * 4 * 3
               + (double) a->batch * a->NQ * 8 * 3;
  double l2;

  /* score operands: read from device memory once, by both kernels that make the scores
   * from L2 (each computed score's element; the main kernel's lanes cover 16 bytes of a
   * 32-byte sector) */
  for (guint i = 0; i < a->n_scores; i++)
    {
      const NapkinPlanAttnScore *sc = &a->scores[i];
      double elems = (double) a->NKV * (sc->row ? a->NQ : 1) * (sc->group ? a->group : 1);
      const double xb = napkin_dtype_bytes (sc->dtype);

      for (guint l = 0; l < a->n_lead; l++)
        elems *= sc->lead[l] ? a->lead_size[l] : 1;
      hbm += elems * xb;
      l2_scores += pairs * a->BKV * a->BQ * xb * 3;
    }
  /* a bias's gradient: its fp32 sums zeroed, added to in L2 (a read and a write an added
   * score), read back and written rounded */
  if (b->d_bias.node >= 0)
    {
      hbm += b->d_bias_elems * (4.0 * 2 + napkin_dtype_bytes (b->d_bias.dtype));
      l2_scores += pairs * a->BKV * a->BQ * 8.0;
    }
  l2 = hbm + l2_scores + pairs * (2.0 * a->BQ * a->D * eb + a->BQ * 8.0 + 2.0 * a->BQ * a->D * 4);
  if (b->stats_given)
    hbm += q_elems * (eb + 8);
  /* the group split: each block's dK and dV added to fp32 sums in L2 (a read and a write),
   * zeroed, read back and rounded through device memory */
  if (b->gsplit > 1)
    {
      l2 += (double) b->gsplit * k_elems * 2 * 8;
      hbm += k_elems * 2 * 4 * 2;
    }
  /* wgmma main: each warpgroup reads the tile's Q and dO twice and its K, V rows once,
   * dSᵀ and K once more for dQ */
  const double smem = b->main_wgmma
                      ? pairs * eb * (7.0 * a->BKV * a->D + 2.0 * a->BKV * a->BQ)
                      : pairs * ((double) b->warps * 4 * a->BQ * a->D * eb + 2.0 * a->BKV * a->BQ * eb
                                 + (double) a->BKV * a->D * eb);
  NapkinTensorClass klass = NAPKIN_TENSOR_FP16;
  double flops = pairs * tile * 14;

  napkin_tensor_class_for_dtype (a->dtype, &klass);
  memset (k->time_s, 0, sizeof k->time_s);
  /* the warps that issue mma.sync compute the exponentials and the row arithmetic
   * between the products: counted in the tensor time (finish_kernel adds shared memory's);
   * on wgmma all seven at the dense rate */
  if (b->main_wgmma)
    {
      /* the two launches in series (the constants above): each warpgroup's dQ partial is
       * BQ × 64 floats, at d 64 both warpgroups' */
      const double rate = napkin_arch_tensor_rate (m->arch, klass), scores = pairs * a->BKV * a->BQ;
      const double reduced = pairs * a->BQ * MAX (a->D, 128) * 4.0;

      /* with the forward's row statistics the first launch makes no product: it reads dO
       * and the fp32 O the forward wrote (that write counted here too), in series */
      k->time_s[NAPKIN_RESOURCE_TENSOR] = (b->stats_given ? q_elems * (eb + 8) / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth
                                                          : pairs * tile * 4 / (rate * NAPKIN_ATTN_BWD9_PRE_EFFICIENCY))
                                          + pairs * tile * 10 / (rate * NAPKIN_ATTN_BWD9_MAIN_EFFICIENCY)
                                          + scores * NAPKIN_ATTN_BWD9_SCORE_CLOCKS / ((double) m->arch->sms * m->arch->clock_hz)
                                          + reduced / (m->arch->levels[NAPKIN_LEVEL_L2].bandwidth
                                                       * NAPKIN_ATTN_BWD9_REDUCE_SHARE);
    }
  else
    k->time_s[NAPKIN_RESOURCE_TENSOR] = flops / (napkin_arch_mma_sync_rate (m->arch, klass)
                                                 * NAPKIN_ATTN_BWD_MMA_EFFICIENCY)
                                        + pairs * a->BKV * a->BQ * 2 / napkin_arch_sfu_rate (m->arch)
                                        + pairs * a->BKV * a->BQ * 6 / napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32);
  k->time_s[NAPKIN_RESOURCE_SMEM] = smem / m->arch->levels[NAPKIN_LEVEL_SMEM].bandwidth;
  k->time_s[NAPKIN_RESOURCE_HBM] = hbm / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
  k->time_s[NAPKIN_RESOURCE_L2] = l2 / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
  add_level_traffic (m, NAPKIN_LEVEL_HBM, (gint64) (hbm / eb), (gint64) hbm);
  add_level_traffic (m, NAPKIN_LEVEL_L2, (gint64) (l2 / eb), (gint64) l2);
  k->chunk_s = 0;
  k->latency_s = 0;
  k->launches = 3;
  k->overlaps = TRUE;
  k->tensor_path = b->main_wgmma ? "wgmma" : "mma.sync";
  /* the waves, or the block with the most pairs where it outlasts them (a causal mask's
   * first keys see every query; a grid under the SMs' count) */
  k->quantisation = MAX ((double) ceil_div (pk->grid, m->arch->sms) * m->arch->sms / MAX (1, pk->grid),
                         b->pairs > 0 ? (double) b->longest * m->arch->sms / b->pairs : 1.0);
  k->fill = grid_fill (m, pk->grid);
}

/* The element-wise kernel (kernels/elementwise.cu) on the H200 (docs/perf-notes.md,
 * "Session 30": bias + one map over 6144 × 8192 and × 4549, bf16, 16 chains; six chains
 * of the user's path): its loads and stores together reach 0.88 of device memory's peak
 * (EW_HBM_SHARE), and its thread instructions bound it where a map is a libdevice
 * function or the vectors are short. Per element: each map's instructions
 * (map_instructions; fitted: exp 25 to the exact GELU 34, arithmetic 1) and 2 for
 * another operand's load; per vector of `vec` elements, splitting the flat index into
 * the merged axes (EW_SPLIT_INSTR an axis beyond the first). 21 of the 22 within
 * 0.91–1.11× (a relu chain in single elements 1.30×); the model had priced them by
 * their bytes at the peak, 1.2–1.3× under, and the GELU chains of the user's path
 * 1.4–2.8× under. Division, square roots and reciprocals are not fitted. */
#define EW_HBM_SHARE   0.88
#define EW_SPLIT_INSTR 50.0

static double
map_instructions (const NapkinPlanMap *map)
{
  if (map->is_mask)
    return 4;
  switch (map->fn)
    {
    case NAPKIN_FN_GELU:       return 34;   /* 0.5·x·(1 + erf (x/√2)) */
    case NAPKIN_FN_ERF:        return 32;
    case NAPKIN_FN_GELU_TANH:  return 28;
    case NAPKIN_FN_SILU:       return 27;
    case NAPKIN_FN_SIGMOID:    case NAPKIN_FN_ELU:
      return 26;
    case NAPKIN_FN_EXP:        case NAPKIN_FN_LOG:
      return 25;
    case NAPKIN_FN_TANH:       return 23;
    case NAPKIN_FN_DIV:        case NAPKIN_FN_RECIPROCAL: case NAPKIN_FN_SQRT: case NAPKIN_FN_RSQRT:
      return 4;
    default:                   return 1;
    }
}

/* The plan's element-wise kernel (a region's or an operation's): its share of device
 * memory, and the chain's every map on the FP32 lanes, not the first node's arithmetic
 * alone. */
static void
elementwise_issue (Model                  *m,
                   const NapkinPlanKernel *pk,
                   NapkinKernelCost       *k)
{
  const NapkinPlanElementwise *e;
  double per_element = 0, lanes = napkin_arch_cuda_rate (m->arch, NAPKIN_DTYPE_FP32) / 2;
  gint64 elements = 1;

  if (pk == NULL || pk->kind != NAPKIN_PLAN_ELEMENTWISE || m->a->paper || lanes <= 0)
    return;
  e = &pk->u.ew;
  for (guint d = 0; d < e->rank; d++)
    elements = mul (m, elements, e->dims[d]);

  for (guint i = 0; i < e->maps->len; i++)
    {
      const NapkinPlanMap *map = &g_array_index (e->maps, NapkinPlanMap, i);

      per_element += map_instructions (map) + (map->has_other ? 2 : 0) + (map->has_other2 ? 2 : 0);
    }
  per_element += EW_SPLIT_INSTR * (MAX (1u, e->rank) - 1) / MAX (1u, e->vec);
  k->time_s[NAPKIN_RESOURCE_HBM] /= EW_HBM_SHARE;
  k->time_s[NAPKIN_RESOURCE_CUDA] = MAX (k->time_s[NAPKIN_RESOURCE_CUDA], elements * per_element / lanes);
}

static void
region_kernel (Model *m,
               guint  r)
{
  NapkinRegionCost *cost = &g_array_index (m->a->regions, NapkinRegionCost, r);
  const NapkinRegionCost *grid = grid_region (m, r, cost);
  NapkinKernelCost k = { 0 };
  gint64 slots;

  k.name = g_strdup (cost->name);
  k.region = r;
  kernel_transfers (m, cost, &k);
  kernel_compute (m, cost, &k);
  warp_operand_reads (m, r, cost, k.time_s);
  masked_attention (m, cost, &k);
  attention_chunk_floor (m, cost, &k);
  /* per chunk: the block-wide barrier, the stage wait and flash-mma's row shuffles
   * (§7b); the wgmma skeletons have no block-wide barrier (consumers wait on the
   * mbarriers the producer completes) and their softmax work is counted in the SFU
   * and CUDA-core terms */
  if (cost->level == NAPKIN_LEVEL_SMEM && cost->chunks > 1 && !m->rs[cost->region].wgmma)
    k.chunk_s = (double) cost->waves * cost->chunks * NAPKIN_CHUNK_CLOCKS / m->arch->clock_hz;
  /* A block runs on one SM: ⌈I/SMs⌉ rounds of SM work for I instances, I
   * counted at the kernel's outermost region on the SMs (below any L2 panel). */
  slots = ceil_div (grid->instances, m->arch->sms);
  k.quantisation = (double) slots * m->arch->sms / MAX (1, grid->instances);
  k.fill = grid_fill (m, grid->instances);
  kernel_overlap (m, grid, &k);
  kernel_plan (m, r, cost, &k);
  {
    const NapkinPlanKernel *pk = m->plan && !m->a->paper ? napkin_plan_kernel_for (m->plan, cost->region, -1) : NULL;

    if (pk != NULL && pk->kind == NAPKIN_PLAN_ATTENTION_BACKWARD)
      attention_backward_cost (m, pk, &k);
    elementwise_issue (m, pk, &k);
  }
  finish_kernel (m, &k);
  g_array_append_val (m->a->kernels, k);
}

/* The device-memory bytes an operation outside every region moves beyond its inputs
 * and result: a row kernel that reads its row twice, or the passes a softmax or
 * normalisation makes. */
static gint64
operation_extra_bytes (Model                  *m,
                       guint                   n,
                       const NapkinPlanKernel *pk,
                       NapkinKernelCost       *k)
{
  const NapkinNode *node = napkin_diagram_node (m->d, n);
  gint64 bytes = 0;

  /* A softmax or normalization outside every region has nowhere on chip to keep
   * a row's statistics: it runs as passes over device memory, as the lowering
   * emits them (src/lower): softmax = row max (read x, write m), Σ exp (read x
   * and m, write l), normalise (read x, m, l, write y); layernorm likewise with
   * mean and 1/std; rmsnorm with 1/std alone. Statistics are fp32, one per row. */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_ROWS)
    {
      /* the plan's row kernel keeps a row on chip (one pass) or reads it twice */
      if (!pk->u.rows.one_pass)
        {
          int src = napkin_diagram_input_source (m->d, n, 0);
          gint64 in_e = tile_elements (m, -1, src);

          bytes = add (m, bytes, device_traffic (m, in_e, mul (m, in_e, dtype_bytes (m, src))));
        }
    }
  else if (node->kind == NAPKIN_OP_SOFTMAX || node->kind == NAPKIN_OP_NORMALIZE)
    {
      int src = napkin_diagram_input_source (m->d, n, 0);
      gboolean two = node->kind == NAPKIN_OP_NORMALIZE && node->norm == NAPKIN_NORM_RMSNORM;
      gint64 in_e = tile_elements (m, -1, src);
      gint64 rows = in_e / MAX (1, napkin_diagram_axis_size (m->d, napkin_diagram_find_axis (m->d, node->axis)));
      gint64 extra_e = add (m, mul (m, in_e, two ? 1 : 2), mul (m, rows, two ? 2 : 5));
      gint64 extra_b = add (m, mul (m, mul (m, in_e, two ? 1 : 2), dtype_bytes (m, src)),
                            mul (m, rows, two ? 8 : 20));

      k->launches = two ? 2 : 3;
      bytes = add (m, bytes, device_traffic (m, extra_e, extra_b));
      warning_add (m, _("%s “%s” lies in no region: with nowhere on chip to keep its row statistics it "
                   "reads its input %d times from device memory; a region with %s whole reads it once"),
                   napkin_op_kind_to_string (node->kind), node->id, two ? 2 : 3, node->axis);
    }
  return bytes;
}

/* The device-memory bytes of reading value `in` whole in `dtype`, once: 0 where `read`
 * has it already (an element-wise kernel reads each value once, however many maps use it). */
static gint64
read_once (Model                  *m,
           GHashTable             *read,
           const NapkinPlanBuffer *in,
           NapkinDtype             dtype)
{
  gint64 in_e;

  if (in->node < 0 || !g_hash_table_add (read, GINT_TO_POINTER (in->node)))
    return 0;
  in_e = tile_elements (m, -1, in->node);
  return device_traffic (m, in_e, mul (m, in_e, napkin_dtype_bytes (dtype)));
}

/* An operation outside every region reads its inputs from device memory and writes
 * its result there. An output wired straight from an input is such a kernel too: the
 * copy of the input into it (src/lower, lower_input_copy), written in the output's
 * element type. */
static void
operation_kernel (Model *m,
                  guint  n)
{
  const NapkinNode *node = napkin_diagram_node (m->d, n);
  NapkinKernelCost k = { 0 };
  gint64 bytes = 0;
  const NapkinPlanKernel *pk;
  TensorPath path = PATH_LIBRARY;
  gboolean strided;
  gboolean copy = napkin_plan_node_is_input_copy (m->d, n);
  gboolean counted = FALSE;

  if (m->innermost[n] >= 0 || node->kind == NAPKIN_OP_INPUT || (node->kind == NAPKIN_OP_OUTPUT && !copy))
    return;
  pk = m->plan && !m->a->paper ? napkin_plan_kernel_for (m->plan, -1, n) : NULL;
  if (pk == NULL && m->plan != NULL && !m->a->paper && napkin_plan_node_fused_away (m->plan, n))
    return;   /* a map the plan runs in the kernel before it */
  strided = pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->u.rows.inner > 1;
  k.name = g_strdup (node->id);
  k.region = -1;
  k.quantisation = 1;
  k.overlaps = TRUE;   /* a library kernel per operation: assumed pipelined */
  /* the plan's element-wise chain: its input, every map's other operand (a gate, a
   * mask tensor, once each) and its result in the result's type — not the first map's
   * value, which never leaves the chip */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_ELEMENTWISE && !copy)
    {
      const NapkinPlanElementwise *e = &pk->u.ew;
      g_autoptr(GHashTable) read = g_hash_table_new (g_direct_hash, g_direct_equal);
      gint64 y_e = 1;

      for (guint d = 0; d < e->rank; d++)
        y_e = mul (m, y_e, e->dims[d]);
      bytes = add (m, bytes, device_traffic (m, y_e, mul (m, y_e, napkin_dtype_bytes (e->y_dtype))));
      /* x, then each map's other operands (a rotary's sin beside the rotated x) */
      bytes = add (m, bytes, read_once (m, read, &e->x, e->x_dtype));
      for (guint i = 0; i < e->maps->len; i++)
        {
          const NapkinPlanMap *map = &g_array_index (e->maps, NapkinPlanMap, i);

          if (map->has_other)
            bytes = add (m, bytes, read_once (m, read, &map->other, map->other.dtype));
          if (map->has_other2)
            bytes = add (m, bytes, read_once (m, read, &map->other2, map->other2.dtype));
        }
      counted = TRUE;
    }
  /* a gated pair's GEMM, at its join: A once, both weights, the join's result (the
   * products and the gate's maps never leave the chip) */
  if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM && pk->u.gemm.dual && !copy)
    {
      const NapkinPlanGemm *g = &pk->u.gemm;
      int a = napkin_diagram_input_source (m->d, (guint) g->node2, 0) == g->a.node ? 1 : 0;
      int srcs[3] = { napkin_diagram_input_source (m->d, (guint) g->node, 0),
                      napkin_diagram_input_source (m->d, (guint) g->node, 1),
                      napkin_diagram_input_source (m->d, (guint) g->node2, a) };
      gint64 e;

      for (guint i = 0; i < G_N_ELEMENTS (srcs); i++)
        if (srcs[i] >= 0)
          {
            e = tile_elements (m, -1, srcs[i]);
            bytes = add (m, bytes, device_traffic (m, e, mul (m, e, dtype_bytes (m, srcs[i]))));
          }
      e = tile_elements (m, -1, n);
      bytes = add (m, bytes, device_traffic (m, e, mul (m, e, napkin_dtype_bytes (g->c_dtype))));
      counted = TRUE;
    }
  for (guint p = 0; p <= napkin_op_n_inputs (node) && !strided && !counted; p++)
    {
      /* the inputs, then the result */
      int src = p < napkin_op_n_inputs (node) ? napkin_diagram_input_source (m->d, n, p) : (int) n;
      gint64 e, b;

      if (src < 0)
        continue;
      e = tile_elements (m, -1, src);
      if (src == (int) n && pk != NULL && pk->kind == NAPKIN_PLAN_GEMM && !m->a->has_dtype)
        /* the GEMM stores its last fused map's value: a cast after an fp8 product is bf16 */
        b = mul (m, e, napkin_dtype_bytes (pk->u.gemm.c_dtype));
      else
        b = mul (m, e, copy && src == (int) n ? napkin_dtype_bytes (output_dtype (m, n)) : dtype_bytes (m, src));
      bytes = add (m, bytes, device_traffic (m, e, b));
    }
  /* the plan's own grid (a GEMM's tiles, a row kernel's blocks) */
  if (pk != NULL && pk->grid > 0)
    k.fill = grid_fill (m, pk->grid);
  if (strided)
    planned_strided_rows (m, &k, pk, TRUE);
  else
    {
      bytes = add (m, bytes, operation_extra_bytes (m, n, pk, &k));
      k.time_s[NAPKIN_RESOURCE_HBM] = bytes / m->arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
      k.time_s[NAPKIN_RESOURCE_L2] = bytes / m->arch->levels[NAPKIN_LEVEL_L2].bandwidth;
      k.time_s[NAPKIN_RESOURCE_HBM] /= plan_rows_hbm_share (m, pk);
      k.turns_s = plan_rows_turns_s (m, pk);
      /* the plan's rows kernel: a row's first load's round trip, and the tail */
      if (pk != NULL && pk->kind == NAPKIN_PLAN_ROWS)
        k.latency_s += pk->grid > 0 && pk->grid <= (gint64) m->arch->sms * MAX (1u, pk->blocks_per_sm)
                       && pk->grid * pk->threads <= ROWS_ONE_ROUND_THREADS
                       && pk->u.rows.one_pass && !pk->u.rows.smem_row
                       ? m->arch->levels[NAPKIN_LEVEL_HBM].latency_s : memory_kernel_tail_s (m);
    }
  if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM)
    path = pk->path == NAPKIN_PATH_WGMMA ? PATH_WGMMA : pk->path == NAPKIN_PATH_SIMT ? PATH_CUDA_CORES : PATH_MMA_SYNC;
  else if (node->kind == NAPKIN_OP_CONTRACT)
    warning_add (m, _("contraction “%s” lies in no region: modelled as reading each operand from device "
                 "memory once, as if on-chip memory were unbounded; relabel it to see what tiling costs"),
                 node->id);
  m->score_ops = 0;
  if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM && pk->u.gemm.dual)
    {
      /* both products (the gate's maps and the join run in the epilogue's registers:
       * napkin_plan_gemm_staged_epilogue_s) */
      guint products[2] = { (guint) pk->u.gemm.node, (guint) pk->u.gemm.node2 };

      node_compute (m, products[0], path, k.time_s);
      node_compute (m, products[1], path, k.time_s);
      k.tensor_path = tensor_path_names[path];
      best_path_kernel (m, -1, NULL, products, 2, &k);
    }
  else
    {
      node_compute (m, n, path, k.time_s);
      if (!copy)
        elementwise_issue (m, pk, &k);
      if (k.time_s[NAPKIN_RESOURCE_TENSOR] > 0)
        k.tensor_path = tensor_path_names[path];
      /* a skinny product on CUDA cores is there by choice: no tensor path to compare */
      if (path != PATH_CUDA_CORES)
        best_path_kernel (m, -1, NULL, &n, 1, &k);
    }
  if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM && path == PATH_CUDA_CORES)
    planned_gemm_skinny (m, &k, pk);
  else if (pk != NULL && pk->kind == NAPKIN_PLAN_GEMM)
    planned_gemm (m, &k, pk);
  if (pk != NULL || m->plan == NULL || m->a->paper)
    plan_kernel_cost (m, &k, pk);
  finish_kernel (m, &k);
  g_array_append_val (m->a->kernels, k);
}

static void
build_kernels (Model *m)
{
  const guint *topo = napkin_diagram_topo_order (m->d);

  /* Top-level regions, each one kernel with everything nested in it. */
  for (guint r = 0; r < m->a->regions->len; r++)
    if (g_array_index (m->a->regions, NapkinRegionCost, r).parent < 0)
      region_kernel (m, r);

  /* Every other operation reads its inputs from device memory and writes its result there. */
  for (guint i = 0; i < m->n_nodes; i++)
    operation_kernel (m, topo[i]);

  /* the repacks and split-K reductions the plan adds around its kernels */
  for (guint i = 0; m->plan != NULL && !m->a->paper && i < m->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (m->plan->kernels, i);

      if (napkin_plan_kind_is_helper (pk->kind))
        plan_helper_kernel (m, pk);
    }
}

/* An empty analysis with the options' settings. */
static NapkinAnalysis *
analysis_new (NapkinArch                 *arch,
              const NapkinAnalyzeOptions *options)
{
  NapkinAnalysis *a = g_new0 (NapkinAnalysis, 1);

  a->arch = napkin_arch_ref (arch);
  a->has_dtype = options && options->has_dtype;
  a->dtype = options ? options->dtype : NAPKIN_DTYPE_FP16;
  a->paper = options && options->paper;
  a->no_wgmma = options && options->no_wgmma;
  a->regions = g_array_new (FALSE, TRUE, sizeof (NapkinRegionCost));
  g_array_set_clear_func (a->regions, region_cost_clear);
  a->kernels = g_array_new (FALSE, TRUE, sizeof (NapkinKernelCost));
  g_array_set_clear_func (a->kernels, kernel_cost_clear);
  a->errors = g_ptr_array_new_with_free_func (g_free);
  a->error_regions = g_array_new (FALSE, FALSE, sizeof (int));
  a->warnings = g_ptr_array_new_with_free_func (g_free);
  a->feasible = TRUE;
  return a;
}

/* Hopper's warpgroup path where the plan puts the kernel (its shared-memory region) */
static void
mark_wgmma_regions (Model *m)
{
  for (guint r = 0; r < m->n_regions && !m->a->paper; r++)
    {
      const NapkinPlanKernel *pk = plan_kernel_of (m, r);

      if (pk == NULL || pk->path != NAPKIN_PATH_WGMMA || napkin_diagram_region (m->d, r)->level != NAPKIN_LEVEL_SMEM)
        continue;
      m->rs[r].wgmma = TRUE;
      m->rs[r].wgmma_rows = pk->kind == NAPKIN_PLAN_GEMM ? pk->u.gemm.BM : pk->u.att.BQ;
      m->rs[r].wgmma_smem = pk->smem_bytes;
    }
}

/* a->regions is indexed like the diagram's regions: fill in parent order, then sort back */
static void
model_regions (Model       *m,
               const guint *order)
{
  NapkinAnalysis *a = m->a;
  g_autofree int *slot = g_new (int, m->n_regions + 1);
  g_autoptr(GArray) sorted = g_array_sized_new (FALSE, TRUE, sizeof (NapkinRegionCost), m->n_regions);

  for (guint i = 0; i < m->n_regions; i++)
    {
      guint r = order[i];

      model_region (m, r);
      slot[r] = i;
    }
  for (guint i = 0; i < m->n_regions; i++)
    {
      NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, i);

      c->parent = m->rs[c->region].parent;   /* diagram index; == analysis index after the sort */
    }
  g_array_set_clear_func (sorted, region_cost_clear);
  for (guint r = 0; r < m->n_regions; r++)
    g_array_append_val (sorted, g_array_index (a->regions, NapkinRegionCost, slot[r]));
  g_array_set_clear_func (a->regions, NULL);   /* moved, not freed */
  g_array_unref (a->regions);
  a->regions = g_steal_pointer (&sorted);
}

/* Launches in one run (docs/model.md, "Launches"). Each kernel is priced as the runner
 * times it alone — `launch_overhead_s` a launch, between two events; one run of all of
 * them between two events pays more for its first launch (the stream starts from idle)
 * and much less for the later ones, queued behind a kernel that is running. Fitted on the
 * 377 recorded problems of the H200 user's path (bench/gpu/reprice.py, session 25): the
 * one-kernel problems under 30 µs ran a median 2.6 µs longer than priced at 4 µs a
 * launch, the two-, three- and four-kernel ones 1.0, 3.4 and 8.9 µs shorter; with these,
 * 336 of the 377 within 1.25× (313 before). */
#define NAPKIN_RUN_START_S      2.5e-6
#define NAPKIN_QUEUED_LAUNCH_S  1.5e-6

double
napkin_run_launches_s (const NapkinArch *arch,
                       guint             launches,
                       gboolean          paper)
{
  g_return_val_if_fail (arch != NULL, 0);

  if (paper || launches == 0)
    return 0;
  {
    double s = NAPKIN_RUN_START_S - (double) (launches - 1) * MAX (0.0, arch->launch_overhead_s - NAPKIN_QUEUED_LAUNCH_S);

    /* two launches on a 4 µs profile cancel exactly: no 1e-22 s of rounding left over */
    return fabs (s) < 1e-12 ? 0 : s;
  }
}

static void
run_launches (NapkinAnalysis   *a,
              const NapkinArch *arch)
{
  a->launch_run_s = napkin_run_launches_s (arch, a->launches, a->paper);
  if (a->launch_run_s == 0)
    return;
  a->predicted_time_s += a->launch_run_s;
  a->overlap_time_s += a->launch_run_s;
  a->serial_time_s += a->launch_run_s;
  a->best_time_s += a->launch_run_s;
}

/* The totals: each level's time, energy, throughputs, intensity and the binding resource. */
static void
summarise (NapkinAnalysis *a,
           NapkinArch     *arch)
{
  double tensor_s = 0, energy_pj = 0;
  gint64 tensor_total = 0;

  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      /* one time per level in every table: the kernels' own at that level (the resource
       * the model prices), not the level's bytes at its peak (docs/model.md, §7) */
      a->levels[l].time_s = a->resource_s[level_resource (l)];
      energy_pj += a->levels[l].transfer_bytes * arch->levels[l].energy_pj_per_byte;
    }
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    {
      double rate = napkin_arch_tensor_rate (arch, arch->tensor_per_sm_clock[c] > 0 ? c : NAPKIN_TENSOR_FP16);
      /* 8-bit products take about half the energy of 16-bit ones */
      double scale = c == NAPKIN_TENSOR_FP8 || c == NAPKIN_TENSOR_INT8 ? 0.5 : 1.0;

      tensor_s += a->tensor_flops[c] / rate;
      tensor_total += a->tensor_flops[c];
      energy_pj += a->tensor_flops[c] * arch->energy_pj_per_tensor_flop * scale;
    }
  energy_pj += (double) (a->flops.cuda + a->flops.sfu + a->fp32_contract_flops) * arch->energy_pj_per_cuda_flop;
  a->energy_j = energy_pj * 1e-12;
  a->tensor_throughput = tensor_s > 0 ? tensor_total / tensor_s : 0;
  /* As benchmarks count (attention: 4·B·H·N²·d): the contractions' FLOPs when
   * there are any, else all of them. */
  a->throughput = a->predicted_time_s > 0
                  ? (a->flops.tensor > 0 ? a->flops.tensor : a->flops_total) / a->predicted_time_s : 0;
  a->best_generated = a->best_note == NULL;
  a->best_throughput = a->best_time_s > 0
                       ? (a->flops.tensor > 0 ? a->flops.tensor : a->flops_total) / a->best_time_s : 0;
  a->serial_throughput = a->serial_time_s > 0
                         ? (a->flops.tensor > 0 ? a->flops.tensor : a->flops_total) / a->serial_time_s : 0;
  a->intensity = a->levels[NAPKIN_LEVEL_HBM].transfer_bytes > 0
                 ? (double) a->flops_total / a->levels[NAPKIN_LEVEL_HBM].transfer_bytes : 0;
  /* the resource that bounds the kernels holding most of the predicted time (each
   * kernel's own bound, weighted by its time), so that the headline agrees with the
   * kernels' table; the largest summed resource time where no kernel ran */
  {
    double by_bound[NAPKIN_N_RESOURCES] = { 0 };

    a->bound = NAPKIN_RESOURCE_TENSOR;
    for (NapkinResource res = 0; res < NAPKIN_N_RESOURCES; res++)
      if (a->resource_s[res] > a->resource_s[a->bound])
        a->bound = res;
    for (guint i = 0; i < a->kernels->len; i++)
      {
        const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, i);

        by_bound[k->bound] += k->time_s_predicted;
      }
    for (NapkinResource res = 0; res < NAPKIN_N_RESOURCES; res++)
      if (by_bound[res] > by_bound[a->bound])
        a->bound = res;
  }
}

static void
model_clear (Model *m)
{
  for (guint r = 0; r < m->n_regions; r++)
    {
      g_free (m->rs[r].member);
      g_free (m->rs[r].extent);
      g_free (m->rs[r].chunks);
      g_clear_pointer (&m->rs[r].loops, g_array_unref);
      g_clear_pointer (&m->rs[r].members, g_array_unref);
    }
  g_free (m->rs);
  g_free (m->innermost);
  g_free (m->pos);
  g_clear_pointer (&m->warned, g_hash_table_unref);   /* the texts belong to a->warnings */
}

NapkinAnalysis *
napkin_analyze (NapkinDiagram               *diagram,
                NapkinArch                  *arch,
                const NapkinAnalyzeOptions  *options,
                GError                     **error)
{
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autofree guint *order = NULL;
  Model m = { 0 };
  NapkinArch fewer;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  g_return_val_if_fail (arch != NULL, NULL);

  if (options == NULL || !options->trusted)
    if (!napkin_diagram_validate (diagram, error))
      return NULL;
  if (napkin_diagram_topo_order (diagram) == NULL)
    {
      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_INVALID,
                           _("nodes: the diagram has a cycle"));
      return NULL;
    }

  a = analysis_new (arch, options);
  {
    NapkinPlanOptions plan_options = { a->has_dtype, a->dtype, FALSE, a->no_wgmma || a->paper, TRUE, a->paper };

    a->plan = napkin_plan_build (diagram, arch, &plan_options, error);
    if (a->plan == NULL)
      return NULL;
  }

  /* the model prices what the plan runs: its diagram, with the plan's own regions
   * (docs/plan.md, "The pipeline") */
  diagram = a->plan->diagram;
  m.d = diagram;
  m.plan = a->plan;
  m.arch = arch;
  if (options != NULL && options->sms > 0 && options->sms < arch->sms)
    {
      /* the plan is the whole GPU's (what the code generator prints); its pricing sees
       * only the SMs the launch keeps (docs/model.md, "Overlap") */
      fewer = *arch;
      fewer.sms = options->sms;
      m.arch = &fewer;
    }
  m.a = a;
  m.n_nodes = napkin_diagram_n_nodes (diagram);
  m.n_axes = napkin_diagram_n_axes (diagram);
  m.n_regions = napkin_diagram_n_regions (diagram);
  m.current = -1;

  /* the work the kernels do: a mask's hidden (query, key) pairs are tiles they skip, so
   * throughputs and shares of peak count the kept ones (docs/model.md, §7) */
  if (!napkin_diagram_total_flops (diagram, &a->flops) || !napkin_diagram_computed_flops (diagram, &a->flops))
    m.overflow = TRUE;
  a->flops_total = add (&m, add (&m, a->flops.tensor, a->flops.cuda), a->flops.sfu);

  build_regions (&m);
  for (guint r = 0; r < m.n_regions && !a->paper; r++)
    detect_rows (&m, r);
  mark_wgmma_regions (&m);
  order = region_order (&m);
  model_regions (&m, order);
  for (guint i = 0; i < m.n_regions; i++)
    model_occupancy (&m, order[i]);   /* parents first: a nested region reads its block's */
  for (guint i = 0; i < m.n_regions; i++)
    model_l2_reuse (&m, i);

  build_kernels (&m);
  run_launches (a, arch);
  summarise (a, arch);
  model_clear (&m);

  if (m.overflow)
    {
      g_set_error_literal (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_LIMIT,
                           _("axes: the counts of this diagram overflow 64 bits; use smaller axes"));
      return NULL;
    }
  return g_steal_pointer (&a);
}

double
napkin_matmul_threshold (const NapkinArch  *arch,
                         NapkinTensorClass  klass,
                         guint              bytes_per_element)
{
  /* compute 2abc/R against transfers (2abc/g)·β/BW: equal at g = R·β/BW */
  return napkin_arch_tensor_rate (arch, klass) * bytes_per_element / arch->levels[NAPKIN_LEVEL_HBM].bandwidth;
}
