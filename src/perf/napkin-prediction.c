/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include <string.h>

#include "napkin-arch.h"
#include "napkin-model.h"
#include "napkin-prediction.h"

const char *
napkin_arch_id_for_gpu_name (const char *gpu_name)
{
  static const struct { const char *key, *id; } known[] = {
    { "h100", "h100" }, { "h200", "h200" }, { "a100", "a100" }, { "b200", "b200" },
    { "l40s", "l40s" }, { "4090", "rtx4090" },
  };
  g_autofree char *lower = g_ascii_strdown (gpu_name ? gpu_name : "", -1);

  for (guint i = 0; i < G_N_ELEMENTS (known); i++)
    if (strstr (lower, known[i].key) != NULL)
      return known[i].id;
  return NULL;
}

/* The model's kernels beside the runner's: prediction.kernels[] has each kernel's
 * predicted time and, where the runner timed the module's kernels one by one
 * (kernels[].time_ms, each labelled with the plan kernel it belongs to in
 * kernels[].owner), the sum of its module kernels' measured times. A model kernel the
 * plan fused into another (a map after an operation) has no module kernel of its own:
 * measured_ms is absent. */
static void
add_kernels (const NapkinAnalysis *analysis,
             json_object          *result,
             json_object          *p)
{
  json_object *runner = json_object_object_get (result, "kernels"), *list = json_object_new_array ();
  double total_pred = 0, total_meas = 0;
  gboolean timed = FALSE;

  for (size_t j = 0; runner && j < json_object_array_length (runner); j++)
    timed |= json_object_object_get (json_object_array_get_idx (runner, j), "time_ms") != NULL;
  for (guint i = 0; i < analysis->kernels->len; i++)
    {
      const NapkinKernelCost *kc = &g_array_index (analysis->kernels, NapkinKernelCost, i);
      json_object *o = json_object_new_object (), *mods = json_object_new_array ();
      double measured = 0;
      guint n = 0;

      json_object_object_add (o, "name", json_object_new_string (kc->name));
      json_object_object_add (o, "kind", json_object_new_string (kc->plan_kind ? kc->plan_kind : "generic"));
      json_object_object_add (o, "path", json_object_new_string (napkin_path_to_string (kc->path)));
      json_object_object_add (o, "predicted_ms", json_object_new_double (kc->time_s_predicted * 1e3));
      total_pred += kc->time_s_predicted;
      for (size_t j = 0; timed && j < json_object_array_length (runner); j++)
        {
          json_object *rk = json_object_array_get_idx (runner, j), *t = json_object_object_get (rk, "time_ms");
          const char *owner = json_object_get_string (json_object_object_get (rk, "owner"));

          if (t == NULL || g_strcmp0 (owner, kc->name) != 0)
            continue;
          measured += json_object_get_double (t);
          json_object_array_add (mods, json_object_new_string (json_object_get_string (json_object_object_get (rk, "name"))));
          n++;
        }
      json_object_object_add (o, "module_kernels", mods);
      if (n > 0)
        {
          json_object_object_add (o, "measured_ms", json_object_new_double (measured));
          json_object_object_add (o, "measured_over_predicted",
                                  json_object_new_double (measured / MAX (kc->time_s_predicted * 1e3, 1e-12)));
          total_meas += measured;
        }
      json_object_array_add (list, o);
    }
  json_object_object_add (p, "kernels", list);
  json_object_object_add (p, "kernels_predicted_ms", json_object_new_double (total_pred * 1e3));
  if (timed)
    {
      /* module kernels no model kernel claims still ran: they count in the total */
      for (size_t j = 0; j < json_object_array_length (runner); j++)
        {
          json_object *rk = json_object_array_get_idx (runner, j), *t = json_object_object_get (rk, "time_ms");
          const char *owner = json_object_get_string (json_object_object_get (rk, "owner"));
          gboolean claimed = FALSE;

          for (guint i = 0; i < analysis->kernels->len && !claimed; i++)
            claimed = g_strcmp0 (owner, g_array_index (analysis->kernels, NapkinKernelCost, i).name) == 0;
          if (t != NULL && !claimed)
            total_meas += json_object_get_double (t);
        }
      json_object_object_add (p, "kernels_measured_ms", json_object_new_double (total_meas));
    }
}

gboolean
napkin_prediction_add_to_run (NapkinDiagram *diagram,
                              json_object   *result,
                              const char    *arch_id)
{
  g_autoptr(GError) error = NULL;
  g_autoptr(NapkinAnalysis) analysis = NULL;
  json_object *gpu = NULL, *name = NULL;
  json_object *p, *levels, *resources;
  const char *id = arch_id;
  NapkinArch *arch;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), FALSE);
  g_return_val_if_fail (result != NULL, FALSE);

  /* the profile the runner planned the kernels for, else the GPU's name's */
  if (id == NULL && json_object_object_get_ex (result, "plan_arch", &name))
    id = json_object_get_string (name);
  if (id == NULL && json_object_object_get_ex (result, "gpu", &gpu)
      && json_object_object_get_ex (gpu, "name", &name))
    id = napkin_arch_id_for_gpu_name (json_object_get_string (name));
  if (id == NULL)
    return FALSE;
  arch = napkin_arch_registry_lookup (napkin_arch_registry_get_default (), id, &error);
  if (arch == NULL)
    return FALSE;
  analysis = napkin_analyze (diagram, arch, NULL, &error);
  if (analysis == NULL)
    return FALSE;

  p = json_object_new_object ();
  json_object_object_add (p, "arch", json_object_new_string (id));
  json_object_object_add (p, "time_ms", json_object_new_double (analysis->predicted_time_s * 1e3));
  json_object_object_add (p, "serial_time_ms", json_object_new_double (analysis->serial_time_s * 1e3));
  json_object_object_add (p, "bound", json_object_new_string (napkin_resource_to_string (analysis->bound)));
  json_object_object_add (p, "feasible", json_object_new_boolean (analysis->feasible));
  json_object_object_add (p, "energy_j", json_object_new_double (analysis->energy_j));

  /* Per level and per resource, for a predicted-vs-measured chart. */
  levels = json_object_new_object ();
  for (guint l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      json_object *o = json_object_new_object ();

      json_object_object_add (o, "transfer_bytes", json_object_new_int64 (analysis->levels[l].transfer_bytes));
      json_object_object_add (o, "time_ms", json_object_new_double (analysis->levels[l].time_s * 1e3));
      json_object_object_add (levels, napkin_level_to_string (l), o);
    }
  json_object_object_add (p, "levels", levels);
  resources = json_object_new_object ();
  for (guint r = 0; r < NAPKIN_N_RESOURCES; r++)
    json_object_object_add (resources, napkin_resource_to_string (r),
                            json_object_new_double (analysis->resource_s[r] * 1e3));
  json_object_object_add (p, "resources_ms", resources);
  add_kernels (analysis, result, p);
  json_object_object_add (result, "prediction", p);
  return TRUE;
}
