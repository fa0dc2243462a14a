/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-tune.h"
#include "napkin-validate.h"

/* One tunable mark: a region's parallel or streamed axis and its candidate sizes. */
typedef struct
{
  guint          region;
  guint          mark;          /* index in the region's marks */
  const char    *axis;
  NapkinMarkKind kind;
  GArray        *values;        /* gint64 */
  guint          choice;
  int            parent_knob;   /* the same axis in the enclosing region, or -1 */
  int            kernel;        /* the top-level region it belongs to */
  gboolean       stages;        /* the region's pipeline stages, not a mark */
  gboolean       threads;       /* the region's threads per block, not a mark */
  guint          limit;         /* values the tile search tries (stages: the first only) */
} Knob;

#define STAGES_KEY "stages"
#define THREADS_KEY "threads"

void
napkin_tune_candidate_free (NapkinTuneCandidate *c)
{
  if (c == NULL)
    return;
  g_free (c->tiles);
  g_free (c->kernel_key);
  g_strfreev (c->specs);
  g_free (c->choices);
  g_free (c);
}

void
napkin_tune_result_free (NapkinTuneResult *r)
{
  if (r == NULL)
    return;
  g_clear_pointer (&r->best, g_ptr_array_unref);
  g_clear_pointer (&r->current, napkin_tune_candidate_free);
  g_clear_object (&r->relabeled);
  g_clear_pointer (&r->proposed, g_strfreev);
  g_free (r);
}

static void
knob_add_value (Knob   *knob,
                gint64  v)
{
  for (guint i = 0; i < knob->values->len; i++)
    if (g_array_index (knob->values, gint64, i) == v)
      return;
  g_array_append_val (knob->values, v);
}

/* The tuner's private copy of the diagram: only tile sizes change, never mark
 * kinds, regions or operations, so the cached graph queries and the validity of
 * streaming stay true; sizes stay within their axes. */
static void
set_tiles (NapkinDiagram *copy,
           Knob          *knobs,
           guint          n_knobs)
{
  for (guint k = 0; k < n_knobs; k++)
    {
      NapkinRegion *region = (NapkinRegion *) napkin_diagram_region (copy, knobs[k].region);
      NapkinMark *mark;

      if (knobs[k].stages)
        {
          region->stages = (guint) g_array_index (knobs[k].values, gint64, knobs[k].choice);
          continue;
        }
      if (knobs[k].threads)
        {
          region->threads = (guint) g_array_index (knobs[k].values, gint64, knobs[k].choice);
          continue;
        }
      mark = &g_array_index (region->marks, NapkinMark, knobs[k].mark);
      mark->tile = g_array_index (knobs[k].values, gint64, knobs[k].choice);
    }
}

static NapkinTuneCandidate *
candidate_new (NapkinDiagram  *copy,
               Knob           *knobs,
               guint           n_knobs,
               NapkinAnalysis *a)
{
  NapkinTuneCandidate *c = g_new0 (NapkinTuneCandidate, 1);
  g_autoptr(GString) tiles = g_string_new (NULL);
  g_autoptr(GString) key = g_string_new (NULL);
  g_autoptr(GStrvBuilder) specs = g_strv_builder_new ();
  g_autofree gboolean *wgmma = g_new0 (gboolean, napkin_diagram_n_regions (copy) + 1);

  /* the kernels on the wgmma skeletons, which ignore their warp tiles (wgmma reads its
   * operands from shared memory itself; docs/model.md §6b) */
  for (guint i = 0; i < a->kernels->len; i++)
    {
      const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, i);

      if (kc->region >= 0 && g_strcmp0 (kc->tensor_path, "wgmma") == 0)
        wgmma[g_array_index (a->regions, NapkinRegionCost, kc->region).region] = TRUE;
    }
  for (guint k = 0; k < n_knobs; k++)
    {
      const NapkinRegion *region = napkin_diagram_region (copy, knobs[k].region);
      gint64 v = g_array_index (knobs[k].values, gint64, knobs[k].choice);
      g_autofree char *spec = knobs[k].stages
                              ? g_strdup_printf ("%s." STAGES_KEY "=%" G_GINT64_FORMAT, region->name, v)
                              : knobs[k].threads
                              ? g_strdup_printf ("%s." THREADS_KEY "=%" G_GINT64_FORMAT, region->name, v)
                              : g_strdup_printf ("%s.%s=%s:%" G_GINT64_FORMAT, region->name, knobs[k].axis,
                                                 napkin_mark_to_string (knobs[k].kind), v);

      g_string_append_printf (tiles, "%s%s.%s%s%" G_GINT64_FORMAT, k ? " " : "", region->name, knobs[k].axis,
                              knobs[k].kind == NAPKIN_MARK_STREAM ? "~" : "=", v);
      g_strv_builder_add (specs, spec);
      if (!(region->level == NAPKIN_LEVEL_REGISTERS && wgmma[knobs[k].kernel]))
        g_string_append_printf (key, "%u,", knobs[k].choice);
      else
        g_string_append (key, "-,");
    }
  c->tiles = g_strdup (tiles->str);
  c->kernel_key = g_strdup (key->str);
  c->specs = g_strv_builder_end (specs);
  c->choices = g_new (guint, n_knobs + 1);
  for (guint k = 0; k < n_knobs; k++)
    c->choices[k] = knobs[k].choice;
  c->predicted_time_s = a->predicted_time_s;
  c->serial_time_s = a->serial_time_s;
  c->throughput = a->throughput;
  c->bound = a->bound;
  c->hbm_bytes = a->levels[NAPKIN_LEVEL_HBM].transfer_bytes;
  c->per_sm = G_MAXINT64;
  for (guint r = 0; r < a->regions->len; r++)
    {
      const NapkinRegionCost *rc = &g_array_index (a->regions, NapkinRegionCost, r);

      c->footprint_bytes = MAX (c->footprint_bytes, rc->plan_smem_bytes > 0 ? rc->plan_smem_bytes : rc->footprint_bytes);
      c->per_sm = MIN (c->per_sm, rc->per_sm);
    }
  if (c->per_sm == G_MAXINT64)
    c->per_sm = 0;
  return c;
}

static int
compare_candidates (gconstpointer pa,
                    gconstpointer pb)
{
  const NapkinTuneCandidate *a = *(NapkinTuneCandidate * const *) pa;
  const NapkinTuneCandidate *b = *(NapkinTuneCandidate * const *) pb;

  /* equal within rounding: prefer less serial time, then less device traffic */
  if (fabs (a->predicted_time_s - b->predicted_time_s) > 1e-9 * MAX (a->predicted_time_s, b->predicted_time_s))
    return a->predicted_time_s < b->predicted_time_s ? -1 : 1;
  if (fabs (a->serial_time_s - b->serial_time_s) > 1e-9 * MAX (a->serial_time_s, b->serial_time_s))
    return a->serial_time_s < b->serial_time_s ? -1 : 1;
  if (a->hbm_bytes != b->hbm_bytes)
    return a->hbm_bytes < b->hbm_bytes ? -1 : 1;
  if (a->footprint_bytes != b->footprint_bytes)   /* same time: the smaller tile */
    return a->footprint_bytes < b->footprint_bytes ? -1 : 1;
  return strcmp (a->tiles, b->tiles);
}

/* Sorts the list and keeps the best of the candidates that generate the same kernels
 * (on the wgmma skeletons, those that differ only in warp tiles): measuring both would
 * time one kernel twice. */
static void
sort_distinct (GPtrArray *best)
{
  g_autoptr(GHashTable) keys = g_hash_table_new (g_str_hash, g_str_equal);

  g_ptr_array_sort (best, compare_candidates);
  for (guint i = 0; i < best->len;)
    {
      NapkinTuneCandidate *c = g_ptr_array_index (best, i);

      if (g_hash_table_contains (keys, c->kernel_key))
        g_ptr_array_remove_index (best, i);   /* frees it; the order stays */
      else
        {
          g_hash_table_add (keys, c->kernel_key);
          i++;
        }
    }
}

typedef struct
{
  NapkinDiagram           *copy;
  NapkinArch              *arch;
  NapkinAnalyzeOptions     options;
  Knob                    *knobs;
  guint                    n_knobs;
  NapkinTuneResult        *result;
  GHashTable              *seen;       /* tiles string → time (double *) */
  guint                    top_k;
  guint                    budget;     /* analyses allowed (napkin_tune) */
} Search;

/* Each relabeling tried is an analysis of the whole diagram, so on a large diagram the
 * search stops after about this many operations analysed, whatever its knobs ask
 * (docs/security.md, "Tune"): 100 000 operations get 10 analyses, 1 000 get 1 000. */
#define TUNE_OPERATION_BUDGET 1000000
#define TUNE_MIN_ANALYSES     4

/* Analyses the current choice; returns its time, or G_MAXDOUBLE if infeasible. */
static double
evaluate (Search *s)
{
  g_autoptr(GString) key = g_string_new (NULL);
  g_autoptr(NapkinAnalysis) a = NULL;
  g_autoptr(GError) error = NULL;
  double *cached, time;

  /* a nested region's tile beyond its parent's repeats a smaller one */
  for (guint k = 0; k < s->n_knobs; k++)
    {
      const Knob *outer = s->knobs[k].parent_knob >= 0 ? &s->knobs[s->knobs[k].parent_knob] : NULL;

      if (outer && g_array_index (s->knobs[k].values, gint64, s->knobs[k].choice)
                   > g_array_index (outer->values, gint64, outer->choice))
        return G_MAXDOUBLE;
    }
  for (guint k = 0; k < s->n_knobs; k++)
    g_string_append_printf (key, "%u,", s->knobs[k].choice);
  if ((cached = g_hash_table_lookup (s->seen, key->str)))
    return *cached;
  if (s->result->evaluated >= s->budget)
    {
      s->result->stopped = TRUE;
      return G_MAXDOUBLE;
    }

  set_tiles (s->copy, s->knobs, s->n_knobs);
  a = napkin_analyze (s->copy, s->arch, &s->options, &error);
  s->result->evaluated++;
  time = a != NULL && a->feasible ? a->predicted_time_s : G_MAXDOUBLE;
  if (time < G_MAXDOUBLE)
    {
      NapkinTuneCandidate *c = candidate_new (s->copy, s->knobs, s->n_knobs, a);

      s->result->feasible++;
      g_ptr_array_add (s->result->best, c);
      /* keep the list short: sort and trim now and then */
      if (s->result->best->len > 4 * s->top_k + 64)
        {
          sort_distinct (s->result->best);
          if (s->result->best->len > s->top_k)
            g_ptr_array_set_size (s->result->best, s->top_k);
        }
    }
  cached = g_new (double, 1);
  *cached = time;
  g_hash_table_insert (s->seen, g_strdup (key->str), cached);
  return time;
}

/* All combinations of the knobs of one kernel (group < 0: of every knob); returns
 * the best time and leaves the best choice set. */
static double
exhaustive (Search *s,
            guint   k,
            int     group)
{
  double best = G_MAXDOUBLE;
  guint keep = 0;

  while (k < s->n_knobs && group >= 0 && s->knobs[k].kernel != group)
    k++;
  if (k == s->n_knobs)
    return evaluate (s);
  for (guint i = 0; i < s->knobs[k].limit; i++)
    {
      double t;

      s->knobs[k].choice = i;
      t = exhaustive (s, k + 1, group);
      if (t < best)
        {
          best = t;
          keep = i;
        }
    }
  /* the inner knobs' best for this choice were not kept: search them again below
   * the best choice here (cached, so no analysis repeats) */
  s->knobs[k].choice = keep;
  exhaustive (s, k + 1, group);
  return best;
}

/* Too many combinations: improve one mark at a time from the file's tiles until
 * no single change helps. */
static void
descend (Search *s)
{
  double best = evaluate (s);

  for (guint round = 0; round < 8; round++)
    {
      gboolean improved = FALSE;

      for (guint k = 0; k < s->n_knobs; k++)
        {
          guint keep = s->knobs[k].choice;

          for (guint i = 0; i < s->knobs[k].limit; i++)
            {
              double t;

              s->knobs[k].choice = i;
              t = evaluate (s);
              if (t < best)
                {
                  best = t;
                  keep = i;
                  improved = TRUE;
                }
            }
          s->knobs[k].choice = keep;
        }
      if (!improved)
        break;
    }
}

/* Does a contraction of the region read or write axis? */
static gboolean
contraction_uses (NapkinDiagram      *d,
                  const NapkinRegion *region,
                  guint               axis)
{
  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));

      if (n < 0 || napkin_diagram_node (d, n)->kind != NAPKIN_OP_CONTRACT)
        continue;
      if (napkin_tensor_type_has_axis (napkin_diagram_node_type (d, n), axis))
        return TRUE;
      for (guint p = 0; p < 2; p++)
        {
          int src = napkin_diagram_input_source (d, n, p);

          if (src >= 0 && napkin_tensor_type_has_axis (napkin_diagram_node_type (d, src), axis))
            return TRUE;
        }
    }
  return FALSE;
}

static guint
contractions_in (NapkinDiagram      *d,
                 const NapkinRegion *region)
{
  guint n = 0;

  for (guint i = 0; i < region->nodes->len; i++)
    {
      int node = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));

      n += node >= 0 && napkin_diagram_node (d, node)->kind == NAPKIN_OP_CONTRACT;
    }
  return n;
}

/* The row length C of a region that is a softmax or normalisation of a matrix over its
 * last axis kept whole, with maps and no contraction (the rows skeleton's pattern);
 * 0 otherwise. */
static gint64
rows_length (NapkinDiagram      *d,
             const NapkinRegion *region)
{
  gint64 c = 0;

  if (region->level != NAPKIN_LEVEL_SMEM && region->level != NAPKIN_LEVEL_REGISTERS)
    return 0;
  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));
      const NapkinNode *node = n >= 0 ? napkin_diagram_node (d, n) : NULL;
      int src, axis;
      const NapkinTensorType *x;

      if (node == NULL || node->kind == NAPKIN_OP_CONTRACT)
        return 0;
      if (node->kind != NAPKIN_OP_SOFTMAX && node->kind != NAPKIN_OP_NORMALIZE)
        continue;
      if (c > 0)
        return 0;
      src = napkin_diagram_input_source (d, n, 0);
      axis = napkin_diagram_find_axis (d, node->axis);
      x = src >= 0 ? napkin_diagram_node_type (d, src) : NULL;
      if (x == NULL || x->n_axes != 2 || axis != (int) x->axes[1]
          || napkin_region_mark (region, node->axis, NULL) != NAPKIN_MARK_WHOLE)
        return 0;
      c = napkin_diagram_axis_size (d, axis);
    }
  return c;
}

static gboolean
streams (const NapkinRegion *region)
{
  for (guint i = 0; i < region->marks->len; i++)
    if (g_array_index (region->marks, NapkinMark, i).kind == NAPKIN_MARK_STREAM)
      return TRUE;
  return FALSE;
}

/* A diagram without regions: propose where the regions go, then tune those. */
static NapkinTuneResult *
tune_proposed_regions (NapkinDiagram            *diagram,
                       NapkinArch               *arch,
                       const NapkinTuneOptions  *options,
                       GError                  **error)
{
  g_auto(GStrv) what = NULL;
  g_autoptr(NapkinDiagram) relabeled = napkin_tune_propose_regions (diagram, &what, error);
  NapkinTuneResult *result;

  if (relabeled == NULL)
    return NULL;
  result = napkin_tune (relabeled, arch, options, error);
  if (result == NULL)
    return NULL;
  result->relabeled = g_steal_pointer (&relabeled);
  result->proposed = g_steal_pointer (&what);
  return result;
}

/* One knob per parallel or streamed mark of region r: its tile sizes. */
static void
add_tile_knobs (NapkinDiagram *copy,
                guint          r,
                GArray        *knobs,
                double        *combos)
{
  const NapkinRegion *region = napkin_diagram_region (copy, r);
  gint64 cap = region->level == NAPKIN_LEVEL_REGISTERS ? 128
               : region->level == NAPKIN_LEVEL_SMEM   ? 256
                                                      : 4096;

  for (guint i = 0; i < region->marks->len; i++)
    {
      const NapkinMark *mark = &g_array_index (region->marks, NapkinMark, i);
      int axis = napkin_diagram_find_axis (copy, mark->axis);
      gint64 size, lo;
      Knob knob = { 0 };

      if (mark->kind == NAPKIN_MARK_WHOLE || axis < 0)
        continue;
      size = napkin_diagram_axis_size (copy, axis);
      /* small axes (batch, heads) and axes no contraction of the region uses
       * (rows of a softmax) from 1; tensor-core sized tiles otherwise */
      lo = size <= 64 || !contraction_uses (copy, region, axis) ? 1
           : region->level == NAPKIN_LEVEL_REGISTERS ? 8 : 16;
      knob.region = r;
      knob.mark = i;
      knob.axis = mark->axis;
      knob.kind = mark->kind;
      knob.values = g_array_new (FALSE, FALSE, sizeof (gint64));
      knob_add_value (&knob, mark->tile);   /* the file's own first */
      for (gint64 v = lo; v <= MIN (size, cap); v *= 2)
        knob_add_value (&knob, v);
      /* the attention tiles of the wgmma skeleton (docs/model.md §9): query tiles of
       * 192 (three warpgroups of 64 rows), key chunks of 176 */
      if (region->level == NAPKIN_LEVEL_SMEM && contractions_in (copy, region) >= 2
          && contraction_uses (copy, region, axis))
        {
          gint64 extra = mark->kind == NAPKIN_MARK_PARALLEL ? 192 : 176;

          /* the skeletons have no edge tiles: one that does not divide the axis
           * would run the generic loop nest, not what the model ranks */
          if (extra <= size && size % extra == 0)
            knob_add_value (&knob, extra);
        }
      knob.limit = knob.values->len;
      *combos *= knob.limit;
      knob.parent_knob = -1;
      g_array_append_val (knobs, knob);
    }
}

/* A knob for a region's setting (stages, threads) rather than a mark. */
static void
knob_init_setting (Knob       *knob,
                   guint       r,
                   const char *key)
{
  knob->region = r;
  knob->axis = key;
  knob->kind = NAPKIN_MARK_WHOLE;
  knob->values = g_array_new (FALSE, FALSE, sizeof (gint64));
  knob->parent_knob = -1;
}

/* Pipeline stages of a shared-memory region that streams: 2 to 6 and the file's
 * own; the model drops those whose buffers do not fit. The tile search runs at
 * the first (2, or 1 where the file has 1: the fewest buffers, so that no tile
 * is lost to the footprint), then every count is tried on the best tiles. */
static void
add_stages_knob (NapkinDiagram *copy,
                 guint          r,
                 GArray        *knobs)
{
  const NapkinRegion *region = napkin_diagram_region (copy, r);
  Knob knob = { 0 };

  if (region->level != NAPKIN_LEVEL_SMEM || !streams (region))
    return;
  knob_init_setting (&knob, r, STAGES_KEY);
  knob.stages = TRUE;
  knob_add_value (&knob, MIN (2, MAX (1, region->stages)));
  for (gint64 v = 2; v <= 6; v++)
    knob_add_value (&knob, v);
  knob_add_value (&knob, MAX (1, region->stages));
  knob.limit = 1;
  g_array_append_val (knobs, knob);
}

/* Threads per block of a softmax or normalisation over whole rows (the rows
 * skeleton, docs/model.md §7c): each thread holds C / T values of a row, so T
 * sets the registers a block needs and how many blocks (rows in flight) an SM
 * keeps. Whole warps up to 1024 with 8·T dividing C and at most 128 values a
 * thread, as try_rows takes them; the one the file runs first. */
static void
add_threads_knob (NapkinDiagram *copy,
                  guint          r,
                  GArray        *knobs,
                  double        *combos)
{
  const NapkinRegion *region = napkin_diagram_region (copy, r);
  gint64 c = rows_length (copy, region);
  Knob knob = { 0 };
  gint64 own = region->threads;

  if (c <= 0)
    return;
  if (own == 0)
    for (own = 256; own >= 32 && c % (own * 8) != 0; own /= 2)
      ;
  knob_init_setting (&knob, r, THREADS_KEY);
  knob.threads = TRUE;
  knob_add_value (&knob, own);
  for (gint64 t = 32; t <= 1024; t *= 2)
    if (c % (t * 8) == 0 && c / t <= 128)
      knob_add_value (&knob, t);
  knob.limit = knob.values->len;
  *combos *= knob.limit;
  g_array_append_val (knobs, knob);
}

/* Pair each knob with the same axis's knob in the smallest enclosing region. */
static void
pair_knobs (NapkinDiagram *copy,
            GArray        *knobs)
{
  for (guint k = 0; k < knobs->len; k++)
    {
      Knob *inner = &g_array_index (knobs, Knob, k);
      const NapkinRegion *ri = napkin_diagram_region (copy, inner->region);
      guint best_size = G_MAXUINT;

      for (guint j = 0; j < knobs->len; j++)
        {
          Knob *outer = &g_array_index (knobs, Knob, j);
          const NapkinRegion *ro = napkin_diagram_region (copy, outer->region);
          gboolean contains = ro->level < ri->level && ro->nodes->len >= ri->nodes->len;

          for (guint n = 0; contains && n < ri->nodes->len; n++)
            contains = napkin_region_has_node (ro, g_ptr_array_index (ri->nodes, n));
          if (j != k && contains && !inner->stages && !outer->stages && !inner->threads && !outer->threads
              && strcmp (outer->axis, inner->axis) == 0
              && ro->nodes->len < best_size)
            {
              best_size = ro->nodes->len;
              inner->parent_knob = j;
            }
        }
    }
}

/* Each knob's kernel: the outermost region holding its region's operations. */
static void
assign_kernels (NapkinDiagram *copy,
                GArray        *knobs)
{
  for (guint k = 0; k < knobs->len; k++)
    {
      Knob *knob = &g_array_index (knobs, Knob, k);
      const NapkinRegion *ri = napkin_diagram_region (copy, knob->region);
      const char *first = ri->nodes->len > 0 ? g_ptr_array_index (ri->nodes, 0) : NULL;
      guint best_size = 0;

      knob->kernel = knob->region;
      for (guint r = 0; first && r < napkin_diagram_n_regions (copy); r++)
        {
          const NapkinRegion *ro = napkin_diagram_region (copy, r);

          if (napkin_region_has_node (ro, first)
              && (ro->nodes->len > best_size
                  || (ro->nodes->len == best_size
                      && ro->level < napkin_diagram_region (copy, knob->kernel)->level)))
            {
              best_size = ro->nodes->len;
              knob->kernel = r;
            }
        }
    }
}

/* The file's own relabeling, for comparison. */
static void
score_current (Search *s)
{
  g_autoptr(NapkinAnalysis) a = napkin_analyze (s->copy, s->arch, &s->options, NULL);

  /* its stages are not the tile search's first value */
  for (guint k = 0; k < s->n_knobs; k++)
    if (s->knobs[k].stages)
      for (guint v = 0; v < s->knobs[k].values->len; v++)
        if (g_array_index (s->knobs[k].values, gint64, v)
            == MAX (1, napkin_diagram_region (s->copy, s->knobs[k].region)->stages))
          {
            s->knobs[k].choice = v;
            break;
          }
  if (a != NULL && a->feasible)
    s->result->current = candidate_new (s->copy, s->knobs, s->n_knobs, a);
  for (guint k = 0; k < s->n_knobs; k++)
    s->knobs[k].choice = 0;
}

/* The diagram's time is the sum of its kernels' times, and a kernel's time
 * depends only on its own tiles: search each kernel on its own, exhaustively
 * where it is small enough, and combine the bests. */
static void
search_by_kernel (Search *s,
                  guint   max_evals)
{
  gboolean all_small = TRUE;

  for (guint g = 0; g < napkin_diagram_n_regions (s->copy); g++)
    {
      double group_combos = 1;

      for (guint k = 0; k < s->n_knobs; k++)
        if (s->knobs[k].kernel == (int) g)
          group_combos *= s->knobs[k].limit;
      if (group_combos > 1 && group_combos <= max_evals / 4)
        exhaustive (s, 0, g);
      else if (group_combos > 1)
        all_small = FALSE;
    }
  if (!all_small)
    descend (s);
  else
    evaluate (s);   /* the combination of every kernel's best */
}

/* Stages on the best tiles found (the list holds at most 4·top_k + 64). */
static void
search_stages (Search *s)
{
  NapkinTuneResult *result = s->result;
  g_autoptr(GPtrArray) seeds = g_ptr_array_new_with_free_func (g_free);
  guint before = result->evaluated;

  sort_distinct (result->best);
  for (guint i = 0; i < result->best->len; i++)
    {
      const NapkinTuneCandidate *c = g_ptr_array_index (result->best, i);

      g_ptr_array_add (seeds, g_memdup2 (c->choices, sizeof (guint) * (s->n_knobs + 1)));
    }
  for (guint i = 0; i < seeds->len; i++)
    for (guint k = 0; k < s->n_knobs; k++)
      {
        Knob *knob = &s->knobs[k];
        const guint *choices = g_ptr_array_index (seeds, i);

        if (!knob->stages)
          continue;
        for (guint j = 0; j < s->n_knobs; j++)
          s->knobs[j].choice = choices[j];
        for (guint v = 1; v < knob->values->len; v++)
          {
            knob->choice = v;
            evaluate (s);
          }
      }
  result->stage_trials = result->evaluated - before;
}

NapkinTuneResult *
napkin_tune (NapkinDiagram            *diagram,
             NapkinArch               *arch,
             const NapkinTuneOptions  *options,
             GError                  **error)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(GArray) knobs = g_array_new (FALSE, TRUE, sizeof (Knob));
  g_autoptr(GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  NapkinTuneResult *result;
  Search s = { 0 };
  double combos = 1;
  guint max_evals = options && options->max_evaluations ? options->max_evaluations : 40000;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  if (napkin_diagram_n_regions (diagram) == 0)
    return tune_proposed_regions (diagram, arch, options, error);
  copy = napkin_diagram_copy (diagram);

  for (guint r = 0; r < napkin_diagram_n_regions (copy); r++)
    {
      add_tile_knobs (copy, r, knobs, &combos);
      add_stages_knob (copy, r, knobs);
      add_threads_knob (copy, r, knobs, &combos);
    }
  pair_knobs (copy, knobs);
  assign_kernels (copy, knobs);

  result = g_new0 (NapkinTuneResult, 1);
  result->best = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_tune_candidate_free);
  s.copy = copy;
  s.arch = arch;
  s.options.trusted = TRUE;
  s.options.has_dtype = options && options->has_dtype;
  s.options.dtype = options ? options->dtype : NAPKIN_DTYPE_FP16;
  s.knobs = (Knob *) knobs->data;
  s.n_knobs = knobs->len;
  s.result = result;
  s.seen = seen;
  s.top_k = options && options->top_k ? options->top_k : 10;
  s.budget = MAX (TUNE_MIN_ANALYSES, TUNE_OPERATION_BUDGET / MAX (1, napkin_diagram_n_nodes (copy)));

  score_current (&s);
  result->exhaustive = combos <= max_evals;
  if (result->exhaustive)
    exhaustive (&s, 0, -1);
  else
    search_by_kernel (&s, max_evals);
  search_stages (&s);
  sort_distinct (result->best);
  if (result->best->len > s.top_k)
    g_ptr_array_set_size (result->best, s.top_k);

  for (guint k = 0; k < knobs->len; k++)
    g_array_unref (g_array_index (knobs, Knob, k).values);
  return result;
}

/* ---- where the regions go: proposals for a diagram without regions --------------------- */

typedef struct
{
  NapkinDiagram *d;
  json_object   *regions;     /* the array being built */
  GPtrArray     *what;        /* char *: one line per region */
  guchar        *taken;       /* per node: already in a proposed region */
  guint          n_gemm, n_attention, n_rows;
} Proposal;

static const char *
axis_name (NapkinDiagram *d,
           guint          axis)
{
  return napkin_diagram_axis (d, axis)->name;
}

static void
mark (json_object *marks,
      const char  *axis,
      const char  *kind,
      gint64       tile,
      gint64       size)
{
  json_object *m;

  if (kind == NULL || tile >= size)
    {
      json_object_object_add (marks, axis, json_object_new_string ("whole"));
      return;
    }
  m = json_object_new_object ();
  json_object_object_add (m, kind, json_object_new_int64 (MAX (1, tile)));
  json_object_object_add (marks, axis, m);
}

static char *
region_name (const char *base,
             guint       n)
{
  return n == 0 ? g_strdup (base) : g_strdup_printf ("%s%u", base, n + 1);
}

static json_object *
region_new (const char    *name,
            const char    *level,
            const guint   *nodes,
            guint          n_nodes,
            NapkinDiagram *d,
            guint          stages)
{
  json_object *r = json_object_new_object ();
  json_object *list = json_object_new_array ();

  json_object_object_add (r, "name", json_object_new_string (name));
  json_object_object_add (r, "level", json_object_new_string (level));
  for (guint i = 0; i < n_nodes; i++)
    json_object_array_add (list, json_object_new_string (napkin_diagram_node (d, nodes[i])->id));
  json_object_object_add (r, "nodes", list);
  json_object_object_add (r, "marks", json_object_new_object ());
  if (stages > 1)
    json_object_object_add (r, "stages", json_object_new_int (stages));
  return r;
}

/* The one consumer of node n, or -1. */
static int
only_consumer (NapkinDiagram *d,
               guint          n)
{
  guint n_consumers;
  const guint *consumers = napkin_diagram_consumers (d, n, &n_consumers);

  return n_consumers == 1 ? (int) consumers[0] : -1;
}

/* Attention: S = contract (Q, K), elementwise maps, softmax over S's key axis, then
 * O = contract (P, V) — as flash-attention.napkin draws it: the query axis in groups
 * of 128, the keys streamed by 128, d whole, one (batch, head) a block, 3 stages (on an
 * A100 the plan runs each chunk as two halves of 64: docs/plan.md). */
static void
propose_attention (Proposal *p,
                   guint     qk)
{
  NapkinDiagram *d = p->d;
  guint nodes[16], n = 0;
  int at = qk, sm = -1, pv;
  const NapkinTensorType *s_type = napkin_diagram_node_type (d, qk), *o_type, *v_type;
  int q_src = napkin_diagram_input_source (d, qk, 0), k_src = napkin_diagram_input_source (d, qk, 1);
  json_object *r, *marks;
  int key;
  g_autofree char *name = NULL;

  nodes[n++] = qk;
  for (;;)
    {
      at = only_consumer (d, at);
      if (at < 0 || n >= G_N_ELEMENTS (nodes) - 1 || p->taken[at])
        return;
      if (napkin_diagram_node (d, at)->kind == NAPKIN_OP_MAP)
        nodes[n++] = at;
      else if (napkin_diagram_node (d, at)->kind == NAPKIN_OP_SOFTMAX)
        {
          sm = at;
          nodes[n++] = at;
          break;
        }
      else
        return;
    }
  pv = only_consumer (d, sm);
  if (pv < 0 || p->taken[pv] || napkin_diagram_node (d, pv)->kind != NAPKIN_OP_CONTRACT
      || napkin_diagram_input_source (d, pv, 0) != sm || q_src < 0 || k_src < 0)
    return;
  key = napkin_diagram_find_axis (d, napkin_diagram_node (d, sm)->axis);
  o_type = napkin_diagram_node_type (d, pv);
  v_type = napkin_diagram_node_type (d, napkin_diagram_input_source (d, pv, 1));
  if (key < 0 || !napkin_tensor_type_has_axis (s_type, key) || napkin_tensor_type_has_axis (o_type, key))
    return;
  nodes[n++] = pv;

  name = region_name ("block", p->n_attention + p->n_gemm);
  r = region_new (name, "smem", nodes, n, d, 3);
  marks = json_object_object_get (r, "marks");
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      gint64 size = napkin_diagram_axis_size (d, a);
      gboolean in_q = napkin_tensor_type_has_axis (napkin_diagram_node_type (d, q_src), a);
      gboolean in_k = napkin_tensor_type_has_axis (napkin_diagram_node_type (d, k_src), a);
      gboolean in_v = napkin_tensor_type_has_axis (v_type, a);
      gboolean in_o = napkin_tensor_type_has_axis (o_type, a);

      if (!in_q && !in_k && !in_v && !in_o && !napkin_tensor_type_has_axis (s_type, a))
        continue;
      if ((int) a == key)
        mark (marks, axis_name (d, a), "stream", 128, size);
      else if (in_q && in_k && in_v && in_o && napkin_tensor_type_has_axis (s_type, a))
        mark (marks, axis_name (d, a), "parallel", 1, size);    /* batch, heads */
      else if (in_q && in_o && !in_k)
        mark (marks, axis_name (d, a), "parallel", 128, size);  /* queries */
      else
        mark (marks, axis_name (d, a), NULL, 0, size);          /* d: whole */
    }
  json_object_array_add (p->regions, r);
  for (guint i = 0; i < n; i++)
    p->taken[nodes[i]] = 1;
  g_ptr_array_add (p->what, g_strdup_printf (_("%s: attention %s … %s (queries in groups, keys streamed, the scores "
                                             "never leave the chip)"), name, napkin_diagram_node (d, qk)->id,
                                             napkin_diagram_node (d, pv)->id));
  p->n_attention++;
}

/* GEMM: C[m, n] = A[m, k] · B[k, n] (batch axes allowed), as matmul-nested.napkin draws it:
 * a 128 × 128 block in shared memory streaming k by 64 over 3 stages, 64 × 32 warp tiles
 * in registers streaming k by 16. */
static void
propose_gemm (Proposal *p,
              guint     mm)
{
  NapkinDiagram *d = p->d;
  int x = napkin_diagram_input_source (d, mm, 0), y = napkin_diagram_input_source (d, mm, 1);
  const NapkinTensorType *out = napkin_diagram_node_type (d, mm), *tx, *ty;
  json_object *block, *warp, *bm, *wm;
  g_autofree char *bname = NULL, *wname = NULL;
  guint nodes[1] = { mm };
  gboolean rows = FALSE, cols = FALSE, depth = FALSE;

  if (x < 0 || y < 0)
    return;
  tx = napkin_diagram_node_type (d, x);
  ty = napkin_diagram_node_type (d, y);
  bname = region_name ("block", p->n_attention + p->n_gemm);
  wname = region_name ("warp", p->n_gemm);
  block = region_new (bname, "smem", nodes, 1, d, 3);
  warp = region_new (wname, "registers", nodes, 1, d, 1);
  bm = json_object_object_get (block, "marks");
  wm = json_object_object_get (warp, "marks");
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      gboolean in_x = napkin_tensor_type_has_axis (tx, a), in_y = napkin_tensor_type_has_axis (ty, a);
      gboolean in_o = napkin_tensor_type_has_axis (out, a);
      gint64 size = napkin_diagram_axis_size (d, a);

      if (in_x && in_y && in_o)
        {
          mark (bm, axis_name (d, a), "parallel", 1, size);
          mark (wm, axis_name (d, a), "parallel", 1, size);
        }
      else if (in_x && in_o)
        {
          mark (bm, axis_name (d, a), "parallel", 128, size);
          mark (wm, axis_name (d, a), "parallel", 64, MIN (size, 128));
          rows = TRUE;
        }
      else if (in_y && in_o)
        {
          mark (bm, axis_name (d, a), "parallel", 128, size);
          mark (wm, axis_name (d, a), "parallel", 32, MIN (size, 128));
          cols = TRUE;
        }
      else if (in_x && in_y)
        {
          mark (bm, axis_name (d, a), "stream", 64, size);
          mark (wm, axis_name (d, a), "stream", 16, MIN (size, 64));
          depth = TRUE;
        }
    }
  if (!rows || !cols || !depth)
    {
      json_object_put (block);
      json_object_put (warp);
      return;
    }
  json_object_array_add (p->regions, block);
  json_object_array_add (p->regions, warp);
  p->taken[mm] = 1;
  g_ptr_array_add (p->what, g_strdup_printf (_("%s: matrix product %s (tiles of the output in groups, the contracted "
                                             "axis streamed; %s: warp tiles in registers)"), bname,
                                             napkin_diagram_node (d, mm)->id, wname));
  p->n_gemm++;
}

/* A softmax or normalisation of a matrix over its last axis, with the ·γ, +β maps after
 * it: whole rows in groups of 4 (softmax.napkin, layernorm.napkin). */
static void
propose_rows (Proposal *p,
              guint     op)
{
  NapkinDiagram *d = p->d;
  int src = napkin_diagram_input_source (d, op, 0), at = op;
  const NapkinTensorType *x;
  guint nodes[4], n = 0;
  json_object *r, *marks;
  g_autofree char *name = NULL;

  if (src < 0)
    return;
  x = napkin_diagram_node_type (d, src);
  if (x == NULL || x->n_axes != 2 || napkin_diagram_find_axis (d, napkin_diagram_node (d, op)->axis) != (int) x->axes[1])
    return;
  nodes[n++] = op;
  while (n < G_N_ELEMENTS (nodes) && (at = only_consumer (d, at)) >= 0 && !p->taken[at]
         && napkin_diagram_node (d, at)->kind == NAPKIN_OP_MAP
         && (napkin_diagram_node (d, at)->fn == NAPKIN_FN_MUL || napkin_diagram_node (d, at)->fn == NAPKIN_FN_ADD))
    nodes[n++] = at;
  name = region_name ("rows", p->n_rows);
  r = region_new (name, "smem", nodes, n, d, 1);
  marks = json_object_object_get (r, "marks");
  mark (marks, axis_name (d, x->axes[0]), "parallel", 4, napkin_diagram_axis_size (d, x->axes[0]));
  mark (marks, axis_name (d, x->axes[1]), NULL, 0, 0);
  json_object_array_add (p->regions, r);
  for (guint i = 0; i < n; i++)
    p->taken[nodes[i]] = 1;
  g_ptr_array_add (p->what, g_strdup_printf (_("%s: %s %s over whole rows (rows in groups, one pass)"), name,
                                             napkin_op_kind_to_string (napkin_diagram_node (d, op)->kind),
                                             napkin_diagram_node (d, op)->id));
  p->n_rows++;
}

NapkinDiagram *
napkin_tune_propose_regions (NapkinDiagram   *diagram,
                             char          ***what,
                             GError         **error)
{
  g_autoptr(json_object) root = NULL;
  g_autoptr(GPtrArray) lines = g_ptr_array_new_with_free_func (g_free);
  g_autofree guchar *taken = NULL;
  const guint *topo;
  Proposal p = { 0 };
  NapkinDiagram *relabeled;
  guint n_nodes;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  if (napkin_diagram_n_regions (diagram) > 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("regions: the diagram already has regions; tune their tiles instead"));
      return NULL;
    }
  n_nodes = napkin_diagram_n_nodes (diagram);
  topo = napkin_diagram_topo_order (diagram);
  taken = g_new0 (guchar, n_nodes + 1);
  p.d = diagram;
  p.regions = json_object_new_array ();
  p.what = lines;
  p.taken = taken;
  /* attention first: its contractions are not two GEMMs */
  for (guint i = 0; i < n_nodes; i++)
    if (!taken[topo[i]] && napkin_diagram_node (diagram, topo[i])->kind == NAPKIN_OP_CONTRACT)
      propose_attention (&p, topo[i]);
  for (guint i = 0; i < n_nodes; i++)
    {
      NapkinOpKind kind = napkin_diagram_node (diagram, topo[i])->kind;

      if (taken[topo[i]])
        continue;
      if (kind == NAPKIN_OP_CONTRACT)
        propose_gemm (&p, topo[i]);
      else if (kind == NAPKIN_OP_SOFTMAX || kind == NAPKIN_OP_NORMALIZE)
        propose_rows (&p, topo[i]);
    }
  if (json_object_array_length (p.regions) == 0)
    {
      json_object_put (p.regions);
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("regions: no pattern the model knows where to relabel (a matrix product, attention, or a "
                   "softmax or normalisation of rows): draw a region"));
      return NULL;
    }
  root = napkin_diagram_to_json (diagram);
  json_object_object_add (root, "regions", p.regions);
  relabeled = napkin_diagram_load_from_data (json_object_to_json_string (root), -1, NAPKIN_LOAD_VALIDATE, error);
  if (relabeled == NULL)
    return NULL;
  if (what != NULL)
    {
      g_ptr_array_add (lines, NULL);
      *what = (char **) g_ptr_array_steal (lines, NULL);
    }
  return relabeled;
}

NapkinDiagram *
napkin_tune_result_relabel (const NapkinTuneResult  *result,
                            NapkinDiagram           *diagram,
                            guint                    index,
                            GError                 **error)
{
  g_autoptr(NapkinDiagram) copy = NULL;

  g_return_val_if_fail (result != NULL, NULL);
  g_return_val_if_fail (index < result->best->len, NULL);

  copy = napkin_diagram_copy (result->relabeled != NULL ? result->relabeled : diagram);
  if (!napkin_tune_apply (copy, g_ptr_array_index (result->best, index), error))
    return NULL;
  return g_steal_pointer (&copy);
}

typedef enum { SPEC_OTHER, SPEC_SET, SPEC_BAD } SpecMatch;

/* "REGION.KEY=N" with N from 1 to max: the region and N (SPEC_SET), a usage error naming
 * the spec (SPEC_BAD), or SPEC_OTHER when the spec is not about KEY (or an axis is named
 * KEY: then it is an axis tile). */
static SpecMatch
region_number_spec (NapkinDiagram  *diagram,
                    const char     *spec,
                    const char     *dot,
                    const char     *key,
                    guint64         max,
                    NapkinRegion  **region,
                    guint64        *value,
                    GError        **error)
{
  gsize key_len = strlen (key);
  g_autofree char *name = NULL;
  int r;

  if (strncmp (dot + 1, key, key_len) != 0 || dot[1 + key_len] != '=' || napkin_diagram_find_axis (diagram, key) >= 0)
    return SPEC_OTHER;
  name = g_strndup (spec, dot - spec);
  r = napkin_diagram_find_region (diagram, name);
  if (r < 0)
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--tile %s: the diagram has no region “%s”"), spec, name);
      return SPEC_BAD;
    }
  if (!g_ascii_string_to_unsigned (dot + 2 + key_len, 10, 1, max, value, NULL))
    {
      g_set_error (error, NAPKIN_DOCUMENT_ERROR, NAPKIN_DOCUMENT_ERROR_USAGE,
                   _("--tile %s: %s must be a whole number from 1 to %llu"), spec, key, (unsigned long long) max);
      return SPEC_BAD;
    }
  *region = (NapkinRegion *) napkin_diagram_region (diagram, r);
  return SPEC_SET;
}

gboolean
napkin_tune_apply_spec (NapkinDiagram  *diagram,
                        const char     *spec,
                        GError        **error)
{
  const char *dot = strchr (spec, '.');

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);

  /* REGION.stages=N and REGION.threads=N, unless the diagram has an axis of that name */
  if (dot != NULL)
    {
      NapkinRegion *region = NULL;
      guint64 value = 0;

      switch (region_number_spec (diagram, spec, dot, STAGES_KEY, 8, &region, &value, error))
        {
        case SPEC_SET: region->stages = (guint) value; return TRUE;
        case SPEC_BAD: return FALSE;
        case SPEC_OTHER: break;
        }
      switch (region_number_spec (diagram, spec, dot, THREADS_KEY, 1024, &region, &value, error))
        {
        case SPEC_SET: region->threads = (guint) value; return TRUE;
        case SPEC_BAD: return FALSE;
        case SPEC_OTHER: break;
        }
    }
  return napkin_diagram_override_tile (diagram, spec, error);
}

gboolean
napkin_tune_apply (NapkinDiagram             *diagram,
                   const NapkinTuneCandidate *candidate,
                   GError                   **error)
{
  for (guint i = 0; candidate->specs[i]; i++)
    if (!napkin_tune_apply_spec (diagram, candidate->specs[i], error))
      return FALSE;
  return napkin_diagram_validate (diagram, error);
}
