/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include "napkin-shard-model.h"

void
napkin_shard_analysis_free (NapkinShardAnalysis *analysis)
{
  if (analysis == NULL)
    return;
  g_clear_pointer (&analysis->shard, napkin_shard_plan_free);
  g_clear_pointer (&analysis->analysis, napkin_analysis_free);
  g_free (analysis);
}

static double
kernel_s (const NapkinAnalysis *a,
          guint                 k)
{
  return k < a->kernels->len ? g_array_index (a->kernels, NapkinKernelCost, k).time_s_predicted : 0;
}

/* One chunk's compute of kernels [first, end): the shard diagram priced with the
 * chunk axis cut k times (docs/model.md, "Overlap"); the whole stretch over k when the
 * chunked plan has other kernels. */
static double
chunk_compute_s (NapkinShardAnalysis        *sa,
                 NapkinArch                 *arch,
                 const NapkinAnalyzeOptions *options,
                 guint                       first,
                 guint                       end)
{
  const NapkinShardPlan *plan = sa->shard;
  g_autoptr(NapkinDiagram) chunk = napkin_diagram_copy (plan->shard);
  g_autoptr(NapkinAnalysis) a = NULL;
  int axis = napkin_diagram_find_axis (chunk, plan->chunk_axis);
  double whole = 0, s = 0;

  for (guint k = first; k < end; k++)
    whole += kernel_s (sa->analysis, k);
  ((NapkinAxis *) napkin_diagram_get_item (chunk, NAPKIN_ITEM_AXIS, axis))->size /= plan->chunks;
  napkin_diagram_changed (chunk);
  a = napkin_analyze (chunk, arch, options, NULL);
  if (a == NULL || a->kernels->len != sa->analysis->kernels->len)
    return whole / plan->chunks;
  for (guint k = first; k < end; k++)
    s += kernel_s (a, k);
  return s;
}

NapkinShardAnalysis *
napkin_shard_analyze (NapkinDiagram              *diagram,
                      NapkinArch                 *arch,
                      guint                       gpus,
                      const NapkinAnalyzeOptions *options,
                      GError                    **error)
{
  g_autoptr(NapkinShardAnalysis) sa = g_new0 (NapkinShardAnalysis, 1);
  guint start = 0;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram) && arch != NULL, NULL);

  if (!(sa->shard = napkin_shard_plan_build (diagram, arch, gpus, error)))
    return NULL;
  if (!(sa->analysis = napkin_analyze (sa->shard->shard, arch, options, error)))
    return NULL;
  sa->compute_s = sa->analysis->predicted_time_s;
  sa->comm_s = sa->shard->comm_s;
  sa->total_s = sa->compute_s + sa->comm_s;
  sa->overlapped_s = sa->total_s;

  /* each overlapped collective pipelines with the kernels since the previous one:
   * t = c + (k − 1)·max (c, m) + m  instead of  C + M */
  for (guint i = 0; i < sa->shard->collectives->len; i++)
    {
      const NapkinCollective *c = g_ptr_array_index (sa->shard->collectives, i);
      guint end = MIN (c->before_kernel, sa->analysis->kernels->len);
      double whole = 0, chunk_c, m, piped;

      if (c->chunks >= 2 && end > start)
        {
          for (guint k = start; k < end; k++)
            whole += kernel_s (sa->analysis, k);
          chunk_c = chunk_compute_s (sa, arch, options, start, end);
          m = c->chunk_seconds;
          piped = chunk_c + (c->chunks - 1) * MAX (chunk_c, m) + m;
          if (piped < whole + c->seconds)
            sa->overlapped_s -= whole + c->seconds - piped;
        }
      start = MAX (start, end);
    }
  sa->gain_s = sa->total_s - sa->overlapped_s;
  return g_steal_pointer (&sa);
}

json_object *
napkin_shard_analysis_to_json (NapkinShardAnalysis *sa)
{
  json_object *root, *times;

  g_return_val_if_fail (sa != NULL, NULL);

  root = napkin_shard_plan_to_json (sa->shard);
  times = json_object_new_array ();
  for (guint k = 0; k < sa->analysis->kernels->len; k++)
    {
      const NapkinKernelCost *kc = &g_array_index (sa->analysis->kernels, NapkinKernelCost, k);
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "name", json_object_new_string (kc->name));
      json_object_object_add (o, "seconds", json_object_new_double (kc->time_s_predicted));
      json_object_array_add (times, o);
    }
  json_object_object_add (root, "kernel_times", times);
  json_object_object_add (root, "compute_s", json_object_new_double (sa->compute_s));
  json_object_object_add (root, "total_s", json_object_new_double (sa->total_s));
  json_object_object_add (root, "overlapped_s", json_object_new_double (sa->overlapped_s));
  json_object_object_add (root, "gain_s", json_object_new_double (sa->gain_s));
  return root;
}
