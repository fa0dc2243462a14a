/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <glib/gi18n-lib.h>

#include <math.h>
#include <string.h>

#include "napkin-error.h"
#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-history.h"
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

/* The kernels of `a` generated on mma.sync where the GPU's best path, wgmma, is one
 * Napkin generates: their prices are not calibrated on Hopper (measured 1.5–4× slower
 * than predicted on an H200: docs/perf-notes.md, "Session 13"), so the search ranks
 * them after the tiles that keep the best path. */
static guint
off_best_path (const NapkinAnalysis *a)
{
  guint n = 0;

  for (guint i = 0; i < a->kernels->len; i++)
    {
      const NapkinKernelCost *kc = &g_array_index (a->kernels, NapkinKernelCost, i);

      n += kc->path == NAPKIN_PATH_MMA && g_strcmp0 (kc->best_path, "wgmma") == 0;
    }
  return n;
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
  /* indexed by the plan's regions: the drawn ones, then the plan's own */
  g_autofree gboolean *wgmma = g_new0 (gboolean, napkin_diagram_n_regions (a->plan->diagram) + 1);

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
      /* stages are keyed by what the plan runs (below): those asked beyond what fits are
       * clamped, and every count past it is the same kernel */
      if (!(region->level == NAPKIN_LEVEL_REGISTERS && wgmma[knobs[k].kernel]) && !knobs[k].stages)
        g_string_append_printf (key, "%u,", knobs[k].choice);
      else
        g_string_append (key, "-,");
    }
  /* the kernels as launched: shared memory grows with every stage the plan keeps */
  for (guint i = 0; a->plan != NULL && i < a->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (a->plan->kernels, i);

      g_string_append_printf (key, "|%d:%d:%" G_GINT64_FORMAT ":%u:%" G_GINT64_FORMAT, (int) pk->kind, (int) pk->path,
                              pk->grid, pk->threads, pk->smem_bytes);
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
  c->off_best_path = off_best_path (a);
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

  if ((a->off_best_path > 0) != (b->off_best_path > 0))
    return a->off_best_path > 0 ? 1 : -1;
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
/* What the search adds to a candidate off the best tensor path (off_best_path): more
 * than any kernel takes, so the order among such candidates stays the model's. */
#define TUNE_OFF_PATH_S       1e3
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

      /* the search steers by this time: off the best path ranks after on it */
      if (c->off_best_path > 0)
        time += TUNE_OFF_PATH_S;

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

/* One line per kernel of a derivation: what the search starts from. */
static char **
derived_lines (const NapkinDerivation *dr)
{
  GPtrArray *lines = g_ptr_array_new ();

  for (guint i = 0; i < dr->kernels->len; i++)
    {
      const NapkinDeriveKernel *k = g_ptr_array_index (dr->kernels, i);
      g_autofree char *ops = g_strjoinv (" → ", k->nodes);

      g_ptr_array_add (lines, g_strdup_printf ("%s: %s %s%s%s", k->name, k->kind, ops, k->why ? " — " : "",
                                               k->why ? k->why : ""));
    }
  g_ptr_array_add (lines, NULL);
  return (char **) g_ptr_array_free (lines, FALSE);
}

/* Whether the plan's kernel for region `r` fixes `axis`'s mark: an attention template
 * takes its batch and heads one at a time a block and holds d whole; any other mark of
 * them falls back to the generic lowering (a derived Llama block's attention: 14740
 * combinations, 50 feasible, 6.6 s; docs/model.md §9). */
static gboolean
plan_fixes_axis (const NapkinPlan *plan,
                 guint             r,
                 int               axis)
{
  const NapkinPlanKernel *pk = plan != NULL ? napkin_plan_kernel_for (plan, r, -1) : NULL;
  const NapkinPlanAttention *a;

  if (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION || pk->path == NAPKIN_PATH_GENERIC)
    return FALSE;
  a = &pk->u.att;
  for (guint i = 0; i < a->n_unit_axes; i++)
    if (a->unit_axes[i] == axis)
      return TRUE;
  for (guint i = 0; i < a->n_whole_axes; i++)
    if (a->whole_axes[i] == axis)
      return TRUE;
  return FALSE;
}

/* One knob per parallel or streamed mark of region r: its tile sizes. */
static void
add_tile_knobs (NapkinDiagram    *copy,
                const NapkinPlan *plan,
                guint             r,
                GArray           *knobs,
                double           *combos)
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
      if (plan_fixes_axis (plan, r, axis))
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
 * thread, as try_rows takes them; the one the file runs first. Only counts the
 * rows kernel runs as they are, powers of two from 32 (docs/plan.md): a value the
 * plan would round is never proposed. */
static void
add_threads_knob (NapkinDiagram    *copy,
                  const NapkinPlan *plan,
                  guint             r,
                  GArray           *knobs,
                  double           *combos)
{
  const NapkinRegion *region = napkin_diagram_region (copy, r);
  gint64 c = rows_length (copy, region);
  Knob knob = { 0 };
  gint64 own = region->threads;
  const NapkinPlanKernel *pk = plan != NULL ? napkin_plan_kernel_for (plan, (int) r, -1) : NULL;

  if (c <= 0)
    return;
  /* a region that sets none runs the plan's (the file's row says what runs) */
  if (own == 0 && pk != NULL && pk->kind == NAPKIN_PLAN_ROWS && pk->threads > 0)
    own = pk->threads;
  if (own == 0)
    for (own = 256; own > 32 && c % (own * 8) != 0; own /= 2)
      ;
  /* as the plan takes the region's threads: whole warps, a power of two */
  own = MIN (1024, MAX (32, own));
  while ((own & (own - 1)) != 0)
    own += own & -own;
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

/* The plan of `copy` as drawn, under the options a search prices its candidates with. */
static NapkinPlan *
tune_plan (NapkinDiagram           *copy,
           NapkinArch              *arch,
           const NapkinTuneOptions *options)
{
  NapkinPlanOptions plan_options = { options && options->has_dtype, options ? options->dtype : NAPKIN_DTYPE_FP16,
                                     FALSE, FALSE, TRUE, FALSE };

  return napkin_plan_build (copy, arch, &plan_options, NULL);
}

/* Searches the tiles, stages and threads of `copy`'s regions into `result` (the file's
 * own relabeling scored first where `score_file`); `plan` is tune_plan's of `copy`. */
static void
search_copy (NapkinDiagram           *copy,
             const NapkinPlan        *plan,
             NapkinArch              *arch,
             const NapkinTuneOptions *options,
             NapkinTuneResult        *result,
             gboolean                 score_file)
{
  g_autoptr(GArray) knobs = g_array_new (FALSE, TRUE, sizeof (Knob));
  g_autoptr(GHashTable) seen = g_hash_table_new_full (g_str_hash, g_str_equal, g_free, g_free);
  Search s = { 0 };
  double combos = 1;
  guint max_evals = options && options->max_evaluations ? options->max_evaluations : 40000;

  for (guint r = 0; r < napkin_diagram_n_regions (copy); r++)
    {
      add_tile_knobs (copy, plan, r, knobs, &combos);
      add_stages_knob (copy, r, knobs);
      add_threads_knob (copy, plan, r, knobs, &combos);
    }
  pair_knobs (copy, knobs);
  assign_kernels (copy, knobs);

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

  if (score_file)
    score_current (&s);
  result->exhaustive = combos <= max_evals;
  if (result->exhaustive)
    exhaustive (&s, 0, -1);
  else
    search_by_kernel (&s, max_evals);
  search_stages (&s);
  for (guint k = 0; k < knobs->len; k++)
    g_array_unref (g_array_index (knobs, Knob, k).values);
}

/* The file's relabeling with the axes its shared-memory regions hold whole made
 * searchable where that is legal: an axis a product of the region sums over streamed
 * (attention's keys, a GEMM's k), any other axis the region uses cut into parallel
 * groups of its whole size (the same tile, now one the search varies). The search then
 * weighs them against holding the axis whole: a region drawn around attention with
 * every key and head in one block fits nowhere, its streamed form does. NULL when no
 * such axis is there. */
static NapkinDiagram *
searchable_variant (NapkinDiagram    *diagram,
                    const NapkinPlan *plan)
{
  g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (diagram);
  g_autoptr(NapkinHistory) history = napkin_history_new (copy);
  gboolean changed = FALSE;

  for (guint r = 0; r < napkin_diagram_n_regions (copy); r++)
    {
      g_autofree char *name = g_strdup (napkin_diagram_region (copy, r)->name);

      if (napkin_diagram_region (copy, r)->level != NAPKIN_LEVEL_SMEM)
        continue;
      for (guint a = 0; a < napkin_diagram_n_axes (copy); a++)
        {
          const NapkinRegion *region = napkin_diagram_region (copy, r);
          const char *axis = napkin_diagram_axis (copy, a)->name;
          gint64 size = napkin_diagram_axis_size (copy, a);
          g_autoptr(GPtrArray) problems = NULL;
          gboolean bad = FALSE, summed;

          if (napkin_region_mark (region, axis, NULL) != NAPKIN_MARK_WHOLE || size <= 1
              || !napkin_region_uses_axis (copy, region, a) || plan_fixes_axis (plan, r, (int) a))
            continue;
          summed = napkin_region_sums_axis (copy, region, a, NULL);
          /* attention's keys: reduced by the softmax, summed by P·V: streamable (online
           * softmax); a row's axis that nothing sums stays whole */
          if ((summed && size <= 64) || (!summed && napkin_region_reduces_axis (copy, region, axis)))
            continue;
          if (!napkin_edit_set_mark (history, name, axis, summed ? NAPKIN_MARK_STREAM : NAPKIN_MARK_PARALLEL,
                                     summed ? 64 : size, NULL))
            continue;
          problems = napkin_diagram_check (copy);
          for (guint i = 0; i < problems->len && !bad; i++)
            {
              const NapkinProblem *p = g_ptr_array_index (problems, i);

              bad = p->kind == NAPKIN_ITEM_REGION && p->index == r;
            }
          if (bad)
            napkin_edit_set_mark (history, name, axis, NAPKIN_MARK_WHOLE, 0, NULL);
          else
            changed = TRUE;
        }
    }
  return changed && napkin_diagram_validate (copy, NULL) ? g_steal_pointer (&copy) : NULL;
}

static NapkinTuneResult *tune_search (NapkinDiagram *diagram, NapkinArch *arch, const NapkinTuneOptions *options,
                                      GError **error);

/* The file's own tiles (or, for a diagram without regions, its derivation's) stay first
 * unless a relabeling is faster by the model's resolution: a suggestion within it is
 * noise the measurement does not bear out, and applying it would change the kernel for
 * nothing (or for worse). */
static void
prefer_current (NapkinTuneResult *result)
{
  const NapkinTuneCandidate *cur = result->current;
  NapkinTuneCandidate *c;
  const NapkinTuneCandidate *best = result->best->len > 0 ? g_ptr_array_index (result->best, 0) : NULL;

  if (cur == NULL || best == NULL || cur->off_best_path > best->off_best_path
      || best->predicted_time_s < cur->predicted_time_s * (1 - NAPKIN_TUNE_RESOLUTION))
    return;
  for (guint i = 0; i < result->best->len; i++)
    if (g_strcmp0 (((NapkinTuneCandidate *) g_ptr_array_index (result->best, i))->kernel_key, cur->kernel_key) == 0)
      {
        if (i > 0)
          g_ptr_array_insert (result->best, 0, g_ptr_array_steal_index (result->best, i));
        return;
      }
  c = g_new (NapkinTuneCandidate, 1);
  *c = *cur;
  c->tiles = g_strdup (cur->tiles);
  c->specs = g_strdupv (cur->specs);
  c->kernel_key = g_strdup (cur->kernel_key);
  c->choices = NULL;
  g_ptr_array_insert (result->best, 0, c);
}

/* The diagram without its regions. */
static NapkinDiagram *
without_regions (NapkinDiagram *diagram)
{
  NapkinDiagram *copy = napkin_diagram_copy (diagram);

  while (napkin_diagram_n_regions (copy) > 0)
    napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (copy, NAPKIN_ITEM_REGION, 0));
  return copy;
}

static double
best_time (const NapkinTuneResult *r)
{
  return r != NULL && r->best->len > 0 ? ((NapkinTuneCandidate *) g_ptr_array_index (r->best, 0))->predicted_time_s
                                       : G_MAXDOUBLE;
}

NapkinTuneResult *
napkin_tune (NapkinDiagram            *diagram,
             NapkinArch               *arch,
             const NapkinTuneOptions  *options,
             GError                  **error)
{
  NapkinTuneResult *drawn, *own;
  g_autoptr(NapkinDiagram) bare = NULL;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  drawn = tune_search (diagram, arch, options, error);
  if (drawn == NULL || options == NULL || !options->regions_are_hints || napkin_diagram_n_regions (diagram) == 0)
    return drawn;
  /* the drawn regions are hints: beside their relabelings, the plan's own partition of
   * the diagram without them (both priced by one model). Within the model's resolution
   * of the best of all, the file's own tiles stand first, then the plan's own; else the
   * faster search wins */
  bare = without_regions (diagram);
  own = tune_search (bare, arch, options, NULL);
  if (own != NULL && own->relabeled != NULL)
    {
      double best = MIN (best_time (drawn), best_time (own));
      gboolean keep_file = drawn->current != NULL
                           && drawn->current->predicted_time_s * (1 - NAPKIN_TUNE_RESOLUTION) <= best;
      gboolean take_own = !keep_file
                          && ((own->current != NULL
                               && own->current->predicted_time_s * (1 - NAPKIN_TUNE_RESOLUTION) <= best)
                              || best_time (own) < best_time (drawn));

      if (!take_own)
        g_clear_pointer (&own, napkin_tune_result_free);
    }
  else
    g_clear_pointer (&own, napkin_tune_result_free);
  if (own == NULL)
    return drawn;
  /* the file's own tiles stay the row to compare with */
  g_clear_pointer (&own->current, napkin_tune_candidate_free);
  own->current = g_steal_pointer (&drawn->current);
  own->evaluated += drawn->evaluated;
  own->feasible += drawn->feasible;
  own->stage_trials += drawn->stage_trials;
  own->regions_replaced = TRUE;
  napkin_tune_result_free (drawn);
  return own;
}

static NapkinTuneResult *
tune_search (NapkinDiagram            *diagram,
             NapkinArch               *arch,
             const NapkinTuneOptions  *options,
             GError                  **error)
{
  g_autoptr(NapkinDiagram) copy = NULL;
  g_autoptr(NapkinDiagram) streamed = NULL;
  g_autoptr(NapkinPlan) plan = NULL;
  g_autoptr(NapkinDerivation) dr = NULL;
  NapkinTuneResult *result;
  guint top_k = options && options->top_k ? options->top_k : 10;

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  /* A diagram without regions: the search starts from its derivation — the plan's
   * partition, each kernel at the tiles the model prices best, the plan's own regions
   * drawn (docs/plan.md, "Deriving a diagram") — so that it never proposes what the
   * plan runs slower without regions */
  if (napkin_diagram_n_regions (diagram) == 0)
    {
      NapkinTuneOptions derive_options = options != NULL ? *options : (NapkinTuneOptions) { 0 };

      /* the search below runs on the derived regions: the derivation's own would repeat it */
      derive_options.derive_unsearched = TRUE;
      dr = napkin_derive (diagram, arch, &derive_options, error);
      if (dr == NULL)
        return NULL;
      copy = napkin_diagram_copy (dr->derived);
    }
  else
    copy = napkin_diagram_copy (diagram);

  result = g_new0 (NapkinTuneResult, 1);
  result->best = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_tune_candidate_free);
  /* the plan and the variant are built before the search: the search writes tiles into
   * `copy` */
  plan = tune_plan (copy, arch, options);
  streamed = searchable_variant (copy, plan);
  search_copy (copy, plan, arch, options, result, TRUE);
  if (streamed != NULL)
    {
      g_autoptr(NapkinPlan) streamed_plan = tune_plan (streamed, arch, options);
      NapkinTuneResult more = { 0 };
      double best_drawn = G_MAXDOUBLE;

      for (guint i = 0; i < result->best->len; i++)
        best_drawn = MIN (best_drawn, ((NapkinTuneCandidate *) g_ptr_array_index (result->best, i))->predicted_time_s);
      more.best = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_tune_candidate_free);
      search_copy (streamed, streamed_plan, arch, options, &more, FALSE);
      /* only what beats holding the axes whole (a tie would propose the same kernel with
       * a mark that changes nothing); its knobs differ: a kernel key of its own, so that
       * sort_distinct keeps both */
      for (guint i = 0; i < more.best->len; i++)
        {
          NapkinTuneCandidate *c = g_ptr_array_index (more.best, i);
          char *key;

          if (c->predicted_time_s >= best_drawn * (1 - 1e-9))
            continue;
          key = g_strconcat ("streamed:", c->kernel_key, NULL);
          g_free (c->kernel_key);
          c->kernel_key = key;
          g_ptr_array_add (result->best, g_steal_pointer (&more.best->pdata[i]));
        }
      g_ptr_array_unref (more.best);
      result->evaluated += more.evaluated;
      result->feasible += more.feasible;
      result->stage_trials += more.stage_trials;
      result->exhaustive &= more.exhaustive;
    }
  sort_distinct (result->best);
  /* what a user applies (Suggest, `tune`); the editor's own uses rank by the model alone */
  if (options != NULL && options->regions_are_hints)
    prefer_current (result);
  if (result->best->len > top_k)
    g_ptr_array_set_size (result->best, top_k);

  if (dr != NULL)
    {
      result->relabeled = g_object_ref (dr->derived);
      result->proposed = derived_lines (dr);
    }
  return result;
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
