/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <math.h>
#include <string.h>

#include <glib/gi18n-lib.h>

#include "napkin-derive.h"
#include "napkin-edit.h"
#include "napkin-explain.h"
#include "napkin-kernels.h"
#include "napkin-tune.h"
#include "napkin-validate.h"

/* A kernel whose last wave leaves more than this share of the GPU idle says so. */
#define IDLE_SHARE 0.25
/* A fix is offered when the model predicts it at least this much faster. */
#define GAIN 0.97
/* Relabelings tune tries per search: a few hundred analyses (docs/editor.md, "Smart defaults"). */
#define MAX_EVALUATIONS 1200

void
napkin_kernel_row_free (NapkinKernelRow *row)
{
  if (row == NULL)
    return;
  g_free (row->name);
  g_strfreev (row->nodes);
  g_free (row->reason);
  g_free (row->adjusted);
  g_free (row);
}

NapkinKernelRow *
napkin_kernel_row_copy (const NapkinKernelRow *row)
{
  NapkinKernelRow *copy;

  g_return_val_if_fail (row != NULL, NULL);

  copy = g_memdup2 (row, sizeof *row);
  copy->name = g_strdup (row->name);
  copy->nodes = g_strdupv (row->nodes);
  copy->reason = g_strdup (row->reason);
  copy->adjusted = g_strdup (row->adjusted);
  return copy;
}

const char *
napkin_plan_kind_to_label (NapkinPlanKind kind)
{
  static const char *labels[NAPKIN_N_PLAN_KINDS] = {
    [NAPKIN_PLAN_GEMM] = N_("GEMM"),
    [NAPKIN_PLAN_ATTENTION] = N_("attention"),
    [NAPKIN_PLAN_ROWS] = N_("row-wise"),
    [NAPKIN_PLAN_ELEMENTWISE] = N_("element-wise"),
    [NAPKIN_PLAN_SPLIT_REDUCE] = N_("split-K sum"),
    [NAPKIN_PLAN_REPACK] = N_("repack"),
    [NAPKIN_PLAN_GENERIC] = N_("generic"),
    [NAPKIN_PLAN_ATTENTION_COMBINE] = N_("split-KV combine"),
    [NAPKIN_PLAN_ATTENTION_BACKWARD] = N_("attention backward"),
  };

  g_return_val_if_fail (kind < NAPKIN_N_PLAN_KINDS, _("generic"));
  return _(labels[kind]);
}

/* The model's cost of plan kernel `pk`: a region's kernel by its region, an operation's
 * by its id, a helper kernel by the "NAME (KIND)" the model gives it. */
static const NapkinKernelCost *
cost_of (const NapkinAnalysis   *a,
         NapkinDiagram          *d,
         const NapkinPlanKernel *pk)
{
  gboolean helper = napkin_plan_kind_is_helper (pk->kind);
  g_autofree char *helper_name = helper ? napkin_plan_kernel_label (pk->name, pk->kind) : NULL;

  for (guint i = 0; i < a->kernels->len; i++)
    {
      const NapkinKernelCost *k = &g_array_index (a->kernels, NapkinKernelCost, i);

      if (helper)
        {
          if (g_strcmp0 (k->name, helper_name) == 0)
            return k;
        }
      else if (pk->region >= 0)
        {
          if (k->region >= 0 && (guint) k->region < a->regions->len
              && (int) g_array_index (a->regions, NapkinRegionCost, k->region).region == pk->region)
            return k;
        }
      else if (k->region < 0 && pk->node >= 0 && (guint) pk->node < napkin_diagram_n_nodes (d)
               && g_strcmp0 (k->name, napkin_diagram_node (d, pk->node)->id) == 0)
        return k;
    }
  return NULL;
}

static GStrv
node_ids (NapkinDiagram          *d,
          const NapkinPlanKernel *pk)
{
  g_autoptr(GStrvBuilder) ids = g_strv_builder_new ();

  /* a helper kernel (a repack, a split-K sum) has no operations of its own: its region's */
  if ((pk->nodes == NULL || pk->nodes->len == 0) && pk->region >= 0
      && (guint) pk->region < napkin_diagram_n_regions (d))
    {
      const NapkinRegion *r = napkin_diagram_region (d, pk->region);

      for (guint i = 0; i < r->nodes->len; i++)
        g_strv_builder_add (ids, g_ptr_array_index (r->nodes, i));
    }
  for (guint i = 0; pk->nodes != NULL && i < pk->nodes->len; i++)
    {
      guint n = g_array_index (pk->nodes, guint, i);

      if (n < napkin_diagram_n_nodes (d))
        g_strv_builder_add (ids, napkin_diagram_node (d, n)->id);
    }
  return g_strv_builder_end (ids);
}

static gboolean
is_memory (NapkinResource r)
{
  return r == NAPKIN_RESOURCE_HBM || r == NAPKIN_RESOURCE_L2 || r == NAPKIN_RESOURCE_SMEM;
}

/* The top-level diagram region of diagram region `region`, through the analysis's nesting. */
static int
top_region (const NapkinAnalysis *a,
            int                   region)
{
  for (guint i = 0; i < a->regions->len; i++)
    {
      const NapkinRegionCost *c = &g_array_index (a->regions, NapkinRegionCost, i);

      if ((int) c->region != region)
        continue;
      while (c->parent >= 0 && (guint) c->parent < a->regions->len)
        c = &g_array_index (a->regions, NapkinRegionCost, c->parent);
      return (int) c->region;
    }
  return region;
}

/* The model's first error about a region of the kernel of top-level region `region`
 * (one that does not fit), or NULL. */
static const char *
model_error (const NapkinAnalysis *a,
             int                   region)
{
  for (guint i = 0; region >= 0 && i < a->errors->len && i < a->error_regions->len; i++)
    {
      int r = g_array_index (a->error_regions, int, i);

      if (r >= 0 && top_region (a, r) == region)
        return g_ptr_array_index (a->errors, i);
    }
  return NULL;
}

/* Why a kernel runs poorly, in a user's words, or NULL. */
static char *
reason_for (const NapkinAnalysis   *a,
            const NapkinPlanKernel *pk,
            const NapkinKernelCost *k,
            int                     region)
{
  const char *error = model_error (a, region);

  if (pk != NULL && !pk->feasible)
    return g_strdup_printf (_("It does not fit the GPU: %s"), pk->infeasible ? pk->infeasible : _("a limit is exceeded"));
  if (error != NULL)
    return g_strdup_printf (_("It does not fit the GPU: %s"), error);
  if ((pk != NULL && pk->path == NAPKIN_PATH_GENERIC) || (k != NULL && k->path == NAPKIN_PATH_GENERIC))
    {
      const char *why = pk && pk->reason ? pk->reason : k && k->reason ? k->reason : NULL;

      return why ? g_strdup_printf (_("Generic code, one thread per element and no tensor cores, because %s"), why)
                 : g_strdup (_("Generic code, one thread per element and no tensor cores"));
    }
  if (k == NULL)
    return NULL;
  if (k->tensor_path != NULL && is_memory (k->bound) && (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION_COMBINE))
    return g_strdup_printf (_("Its products wait on %s: the tiles move more data than the tensor cores use; larger "
                              "tiles or a streamed axis move less"), napkin_resource_to_label (k->bound));
  /* (the fused attention backward's three launches are its design, not re-reads) */
  if (k->launches > 1 && (pk == NULL || pk->kind != NAPKIN_PLAN_ATTENTION_BACKWARD))
    return g_strdup_printf (_("It reads its input %u times from device memory: outside a region there is nowhere "
                              "on chip to keep a row"), k->launches);
  if (k->fill > 0 && k->fill < 1 - IDLE_SHARE && a->arch != NULL)
    return g_strdup_printf (_("Its blocks occupy %.0f of the %u SMs and the others stay idle: device memory moves "
                              "through those alone; smaller tiles (more blocks) would use them"),
                            round (k->fill * a->arch->sms), a->arch->sms);
  if (k->quantisation > 1 / (1 - IDLE_SHARE))
    return g_strdup_printf (_("Its last wave leaves %.0f %% of the GPU idle: other tiles would fill it"),
                            100 * (1 - 1 / k->quantisation));
  return NULL;
}

static NapkinKernelRow *
row_new (const NapkinAnalysis   *a,
         NapkinDiagram          *d,
         const NapkinPlanKernel *pk,
         const NapkinKernelCost *k,
         double                  total)
{
  NapkinKernelRow *row = g_new0 (NapkinKernelRow, 1);

  row->name = g_strdup (pk ? pk->name : k->name);
  row->kind = pk ? pk->kind : NAPKIN_PLAN_GENERIC;
  row->path = pk ? pk->path : k->path;
  row->region = pk ? pk->region : -1;
  if (pk == NULL && k->region >= 0 && (guint) k->region < a->regions->len)
    row->region = g_array_index (a->regions, NapkinRegionCost, k->region).region;
  row->nodes = pk ? node_ids (d, pk) : NULL;
  if (row->nodes == NULL)
    {
      const char *one[] = { k->name, NULL };

      row->nodes = g_strdupv ((char **) one);
    }
  row->time_s = k ? k->time_s_predicted : 0;
  row->share = total > 0 ? row->time_s / total : 0;
  row->bound = k ? k->bound : NAPKIN_RESOURCE_HBM;
  row->feasible = (pk == NULL || pk->feasible) && model_error (a, row->region) == NULL;
  row->reason = reason_for (a, pk, k, row->region);
  if (pk != NULL && pk->adjustments != NULL && pk->adjustments->len > 0)
    {
      GString *joined = g_string_new (NULL);

      for (guint i = 0; i < pk->adjustments->len; i++)
        g_string_append_printf (joined, "%s%s", i ? "; " : "", (const char *) g_ptr_array_index (pk->adjustments, i));
      row->adjusted = g_string_free (joined, FALSE);
    }
  row->poor = row->reason != NULL;
  if (row->poor)
    {
      /* generic code in a drawn region that fits is the region's partition or layout,
       * which no tiles change: the derivation re-partitions (regions are hints); a
       * region that does not fit needs other tiles */
      if (row->region >= 0 && (row->path != NAPKIN_PATH_GENERIC || !row->feasible))
        row->fix = NAPKIN_KERNEL_FIX_RELABEL;
      else
        row->fix = NAPKIN_KERNEL_FIX_DERIVE;
    }
  return row;
}

GPtrArray *
napkin_kernel_rows (const NapkinAnalysis *a,
                    NapkinDiagram        *d)
{
  GPtrArray *rows = g_ptr_array_new_with_free_func ((GDestroyNotify) napkin_kernel_row_free);
  double total = 0;

  g_return_val_if_fail (a != NULL, rows);
  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (d), rows);

  /* shares of the kernels' own sum: none above 100 % whatever the totals' rounding */
  for (guint i = 0; i < a->kernels->len; i++)
    total += g_array_index (a->kernels, NapkinKernelCost, i).time_s_predicted;
  if (a->plan == NULL)
    {
      for (guint i = 0; i < a->kernels->len; i++)
        g_ptr_array_add (rows, row_new (a, d, NULL, &g_array_index (a->kernels, NapkinKernelCost, i), total));
      return rows;
    }
  for (guint i = 0; i < a->plan->kernels->len; i++)
    {
      const NapkinPlanKernel *pk = g_ptr_array_index (a->plan->kernels, i);

      g_ptr_array_add (rows, row_new (a, d, pk, cost_of (a, d, pk), total));
    }
  return rows;
}

/* ---- fixes ------------------------------------------------------------------------------- */

void
napkin_kernel_fix_free (NapkinKernelFix *fix)
{
  if (fix == NULL)
    return;
  g_free (fix->label);
  g_free (fix->details);
  g_clear_object (&fix->fixed);
  g_free (fix);
}

NapkinKernelFix *
napkin_kernel_fix_copy (const NapkinKernelFix *fix)
{
  NapkinKernelFix *copy;

  g_return_val_if_fail (fix != NULL, NULL);

  copy = g_memdup2 (fix, sizeof *fix);
  copy->label = g_strdup (fix->label);
  copy->details = g_strdup (fix->details);
  copy->fixed = fix->fixed ? g_object_ref (fix->fixed) : NULL;
  return copy;
}

/* The predicted time of `d`, or INFINITY where it is invalid or does not fit. */
static double
time_of (NapkinDiagram              *d,
         NapkinArch                 *arch,
         const NapkinAnalyzeOptions *options)
{
  NapkinAnalyzeOptions o = options ? *options : (NapkinAnalyzeOptions) { 0 };
  g_autoptr(NapkinAnalysis) a = NULL;

  o.trusted = FALSE;
  a = napkin_analyze (d, arch, &o, NULL);
  return a != NULL && a->feasible ? a->predicted_time_s : INFINITY;
}

static NapkinTuneOptions
tune_options (const NapkinAnalyzeOptions *options)
{
  NapkinTuneOptions t = { 1, MAX_EVALUATIONS, FALSE, NAPKIN_DTYPE_FP16 };

  if (options != NULL)
    {
      t.has_dtype = options->has_dtype;
      t.dtype = options->dtype;
    }
  return t;
}

/* `d` with tune's best tiles set, or NULL when tune finds none that fit. */
static NapkinDiagram *
tuned (NapkinDiagram              *d,
       NapkinArch                 *arch,
       const NapkinAnalyzeOptions *options)
{
  NapkinTuneOptions t = tune_options (options);
  g_autoptr(NapkinTuneResult) result = napkin_tune (d, arch, &t, NULL);
  NapkinDiagram *copy;

  if (result == NULL || result->best == NULL || result->best->len == 0)
    return NULL;
  if (result->relabeled != NULL)
    return napkin_tune_result_relabel (result, d, 0, NULL);
  copy = napkin_diagram_copy (d);
  if (!napkin_tune_apply (copy, g_ptr_array_index (result->best, 0), NULL))
    g_clear_object (&copy);
  return copy;
}

static NapkinKernelFix *
fix_new (NapkinKernelFixKind  kind,
         NapkinDiagram       *fixed,
         double               before,
         double               after,
         char                *label,
         const char          *what)
{
  NapkinKernelFix *fix = g_new0 (NapkinKernelFix, 1);
  g_autofree char *b = isfinite (before) ? napkin_format_si (before, "s") : g_strdup (_("does not fit"));
  g_autofree char *t = napkin_format_si (after, "s");

  fix->kind = kind;
  fix->fixed = fixed;
  fix->before_s = before;
  fix->after_s = after;
  fix->label = label;
  /* TRANSLATORS: what the fix does, then the predicted times before and after it */
  fix->details = g_strdup_printf (_("%s: predicted %s, now %s"), what, t, b);
  return fix;
}

static NapkinKernelFix *
find_derive (NapkinDiagram              *d,
             NapkinArch                 *arch,
             const NapkinAnalyzeOptions *options,
             double                      before,
             GError                    **error)
{
  NapkinTuneOptions t = tune_options (options);
  g_autoptr(NapkinDiagram) plain = napkin_diagram_copy (d);
  g_autoptr(NapkinDerivation) derivation = NULL;
  g_autofree char *what = NULL;

  /* drawn regions that keep operations apart go: the plan's partition decides (docs/plan.md,
   * "The pipeline") */
  while (napkin_diagram_n_regions (plain) > 0)
    napkin_item_free (NAPKIN_ITEM_REGION, napkin_diagram_steal_item (plain, NAPKIN_ITEM_REGION, 0));
  derivation = napkin_derive (plain, arch, &t, error);
  if (derivation == NULL)
    return NULL;
  if (napkin_diagram_n_regions (derivation->derived) == 0 || !(derivation->analyzed_s < before * GAIN))
    return NULL;
  what = g_strdup_printf (ngettext ("Fuse the operations into the kernel the plan derives",
                                    "Fuse the operations into the %u kernels the plan derives",
                                    derivation->kernels->len),
                          derivation->kernels->len);
  return fix_new (NAPKIN_KERNEL_FIX_DERIVE, g_object_ref (derivation->derived), before, derivation->analyzed_s,
                  g_strdup (_("Derive the kernels")), what);
}

/* Is `axis` one that an operation of the region sums, or works along? */
static gboolean
streamable_candidate (NapkinDiagram      *d,
                      const NapkinRegion *region,
                      guint               axis)
{
  const char *name = napkin_diagram_axis (d, axis)->name;

  for (guint i = 0; i < region->nodes->len; i++)
    {
      int n = napkin_diagram_find_node (d, g_ptr_array_index (region->nodes, i));
      const NapkinNode *node = n >= 0 ? napkin_diagram_node (d, n) : NULL;

      if (node == NULL)
        continue;
      if ((node->kind == NAPKIN_OP_SOFTMAX || node->kind == NAPKIN_OP_REDUCE || node->kind == NAPKIN_OP_NORMALIZE)
          && g_strcmp0 (node->axis, name) == 0)
        return TRUE;
      if (node->kind == NAPKIN_OP_CONTRACT && napkin_diagram_node_type (d, n)->valid
          && !napkin_tensor_type_has_axis (napkin_diagram_node_type (d, n), axis))
        for (guint p = 0; p < 2; p++)
          {
            int src = napkin_diagram_input_source (d, n, p);

            if (src >= 0 && napkin_tensor_type_has_axis (napkin_diagram_node_type (d, src), axis))
              return TRUE;
          }
    }
  return FALSE;
}

/* `d` with `axis` of region `name` streamed, at tune's tile; NULL where that is illegal. */
static NapkinDiagram *
streamed (NapkinDiagram              *d,
          const char                 *name,
          const char                 *axis,
          NapkinArch                 *arch,
          const NapkinAnalyzeOptions *options)
{
  g_autoptr(NapkinDiagram) copy = napkin_diagram_copy (d);
  g_autoptr(NapkinHistory) history = napkin_history_new (copy);
  int r = napkin_diagram_find_region (copy, name);
  int a = napkin_diagram_find_axis (copy, axis);
  gint64 size = a >= 0 ? napkin_diagram_axis_size (copy, a) : 1;
  gint64 tile;

  if (r < 0)
    return NULL;
  tile = MIN (size, napkin_diagram_region (copy, r)->level == NAPKIN_LEVEL_REGISTERS ? 16 : 64);
  if (!napkin_edit_set_mark (history, name, axis, NAPKIN_MARK_STREAM, MAX (1, tile), NULL)
      || !napkin_diagram_validate (copy, NULL))
    return NULL;
  return tuned (copy, arch, options);
}

static NapkinKernelFix *
find_relabel (NapkinDiagram              *d,
              NapkinArch                 *arch,
              const NapkinAnalyzeOptions *options,
              const NapkinKernelRow      *row,
              double                      before)
{
  const NapkinRegion *region;
  g_autoptr(NapkinDiagram) best = NULL;
  g_autofree char *best_axis = NULL;
  double best_s = before * GAIN;

  if (row->region < 0 || (guint) row->region >= napkin_diagram_n_regions (d))
    return NULL;
  region = napkin_diagram_region (d, row->region);
  for (guint a = 0; a < napkin_diagram_n_axes (d); a++)
    {
      const char *axis = napkin_diagram_axis (d, a)->name;
      g_autoptr(NapkinDiagram) candidate = NULL;
      double t;

      if (napkin_region_mark (region, axis, NULL) != NAPKIN_MARK_WHOLE || !streamable_candidate (d, region, a))
        continue;
      candidate = streamed (d, region->name, axis, arch, options);
      region = napkin_diagram_region (d, row->region);
      if (candidate != NULL && (t = time_of (candidate, arch, options)) < best_s)
        {
          best_s = t;
          g_set_object (&best, candidate);
          g_free (best_axis);
          best_axis = g_strdup (axis);
        }
    }
  {
    g_autoptr(NapkinDiagram) candidate = tuned (d, arch, options);
    double t;

    if (candidate != NULL && (t = time_of (candidate, arch, options)) < best_s)
      {
        best_s = t;
        g_set_object (&best, candidate);
        g_clear_pointer (&best_axis, g_free);
      }
  }
  if (best == NULL)
    return NULL;
  if (best_axis != NULL)
    {
      g_autofree char *what = g_strdup_printf (_("Stream %s in region “%s”, with the tiles tune ranks best"),
                                               best_axis, region->name);

      return fix_new (NAPKIN_KERNEL_FIX_RELABEL, g_steal_pointer (&best), before, best_s,
                      g_strdup_printf (_("Stream %s"), best_axis), what);
    }
  return fix_new (NAPKIN_KERNEL_FIX_RELABEL, g_steal_pointer (&best), before, best_s, g_strdup (_("Use tune’s tiles")),
                  _("Set the tiles tune ranks best"));
}

NapkinKernelFix *
napkin_kernel_fix_find (NapkinDiagram              *diagram,
                        NapkinArch                 *arch,
                        const NapkinAnalyzeOptions *options,
                        const NapkinKernelRow      *row,
                        GError                    **error)
{
  double before;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);
  g_return_val_if_fail (arch != NULL, NULL);
  g_return_val_if_fail (row != NULL, NULL);

  if (!napkin_diagram_validate (diagram, error))
    return NULL;
  before = time_of (diagram, arch, options);
  switch (row->fix)
    {
    case NAPKIN_KERNEL_FIX_DERIVE:
      return find_derive (diagram, arch, options, before, error);
    case NAPKIN_KERNEL_FIX_RELABEL:
      return find_relabel (diagram, arch, options, row, before);
    case NAPKIN_KERNEL_FIX_NONE:
    default:
      return NULL;
    }
}
