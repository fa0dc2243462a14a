/* SPDX-License-Identifier: GPL-3.0-or-later */
/* The analysis as JSON (docs/model.md lists every key): apart from the model so that the
 * pricing and its machine-readable form can change on their own. */
#define G_LOG_DOMAIN "napkin-perf"

#include "config.h"

#include "napkin-model.h"

static json_object *
strings_to_json (GPtrArray *strings)
{
  json_object *array = json_object_new_array ();

  for (guint i = 0; i < strings->len; i++)
    json_object_array_add (array, json_object_new_string (g_ptr_array_index (strings, i)));
  return array;
}

static json_object *
resources_to_json (const double *time_s)
{
  json_object *obj = json_object_new_object ();

  for (NapkinResource r = 0; r < NAPKIN_N_RESOURCES; r++)
    json_object_object_add (obj, napkin_resource_to_string (r), json_object_new_double (time_s[r]));
  return obj;
}

/* The FLOPs a unit: tensor, CUDA cores, SFU, and the tensor FLOPs of each class. */
static json_object *
flops_to_json (NapkinAnalysis *a)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "tensor", json_object_new_int64 (a->flops.tensor));
  json_object_object_add (obj, "cuda", json_object_new_int64 (a->flops.cuda));
  json_object_object_add (obj, "sfu", json_object_new_int64 (a->flops.sfu));
  for (NapkinTensorClass c = 0; c < NAPKIN_N_TENSOR_CLASSES; c++)
    if (a->tensor_flops[c] > 0)
      {
        g_autofree char *key = g_strdup_printf ("tensor_%s", napkin_tensor_class_to_string (c));

        json_object_object_add (obj, key, json_object_new_int64 (a->tensor_flops[c]));
      }
  return obj;
}

static json_object *
best_path_to_json (NapkinAnalysis *a)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "time_s", json_object_new_double (a->best_time_s));
  json_object_object_add (obj, "throughput_flops_per_s", json_object_new_double (a->best_throughput));
  json_object_object_add (obj, "bound", json_object_new_string (napkin_resource_to_string (a->best_bound)));
  json_object_object_add (obj, "path", a->best_path ? json_object_new_string (a->best_path) : NULL);
  json_object_object_add (obj, "generated", json_object_new_boolean (a->best_generated));
  json_object_object_add (obj, "note", a->best_note ? json_object_new_string (a->best_note) : NULL);
  return obj;
}

static json_object *
levels_to_json (NapkinAnalysis *a)
{
  json_object *array = json_object_new_array ();

  for (NapkinLevel l = 0; l < NAPKIN_N_LEVELS; l++)
    {
      json_object *obj = json_object_new_object ();

      json_object_object_add (obj, "level", json_object_new_string (napkin_level_to_string (l)));
      json_object_object_add (obj, "transfer_elements", json_object_new_int64 (a->levels[l].transfer_elements));
      json_object_object_add (obj, "transfer_bytes", json_object_new_int64 (a->levels[l].transfer_bytes));
      json_object_object_add (obj, "time_s", json_object_new_double (a->levels[l].time_s));
      json_object_object_add (obj, "bandwidth_bytes_per_s",
                              json_object_new_double (a->arch->levels[l].bandwidth));
      json_object_array_add (array, obj);
    }
  return array;
}

static json_object *
transfer_to_json (const NapkinTransfer *tr)
{
  json_object *to = json_object_new_object ();

  json_object_object_add (to, "tensor", json_object_new_string (tr->tensor));
  json_object_object_add (to, "direction", json_object_new_string (tr->is_output ? "out" : "in"));
  json_object_object_add (to, "from", json_object_new_string (napkin_level_to_string (tr->from)));
  json_object_object_add (to, "to", json_object_new_string (napkin_level_to_string (tr->to)));
  json_object_object_add (to, "dtype", json_object_new_string (napkin_dtype_to_string (tr->dtype)));
  json_object_object_add (to, "tile_elements", json_object_new_int64 (tr->tile_elements));
  json_object_object_add (to, "count", json_object_new_int64 (tr->count));
  json_object_object_add (to, "elements", json_object_new_int64 (tr->elements));
  json_object_object_add (to, "bytes", json_object_new_int64 (tr->bytes));
  json_object_object_add (to, "hbm_bytes", json_object_new_int64 (tr->hbm_bytes));
  json_object_object_add (to, "sharers", json_object_new_int (tr->sharers));
  return to;
}

static json_object *
region_to_json (NapkinAnalysis         *a,
                const NapkinRegionCost *c)
{
  json_object *obj = json_object_new_object ();
  json_object *transfers = json_object_new_array ();

  json_object_object_add (obj, "name", json_object_new_string (c->name));
  json_object_object_add (obj, "level", json_object_new_string (napkin_level_to_string (c->level)));
  json_object_object_add (obj, "parent_level",
                          json_object_new_string (napkin_level_to_string (c->parent_level)));
  if (c->parent >= 0)
    {
      const NapkinRegionCost *parent = &g_array_index (a->regions, NapkinRegionCost, c->parent);

      json_object_object_add (obj, "parent", json_object_new_string (parent->name));
    }
  json_object_object_add (obj, "tile", json_object_new_string (c->tile));
  json_object_object_add (obj, "groups", json_object_new_int64 (c->groups));
  json_object_object_add (obj, "chunks", json_object_new_int64 (c->chunks));
  json_object_object_add (obj, "instances", json_object_new_int64 (c->instances));
  json_object_object_add (obj, "steps", json_object_new_int64 (c->steps));
  json_object_object_add (obj, "threads", json_object_new_int (c->threads));
  json_object_object_add (obj, "stages", json_object_new_int (c->stages));
  /* one footprint: what a block asks for, its kernel plan's shared memory where the plan
   * runs it (docs/plan.md), and what "feasible" is decided on; the paper's M apart */
  json_object_object_add (obj, "footprint_bytes",
                          json_object_new_int64 (c->plan_smem_bytes > 0 ? c->plan_smem_bytes : c->footprint_bytes));
  json_object_object_add (obj, "footprint_source", json_object_new_string (c->plan_smem_bytes > 0 ? "plan" : "tiles"));
  json_object_object_add (obj, "paper_footprint_elements", json_object_new_int64 (c->footprint_elements));
  json_object_object_add (obj, "paper_footprint_bytes", json_object_new_int64 (c->footprint_bytes));
  if (c->plan_smem_bytes > 0)
    json_object_object_add (obj, "plan_shared_bytes", json_object_new_int64 (c->plan_smem_bytes));
  json_object_object_add (obj, "intermediate_bytes", json_object_new_int64 (c->intermediate_bytes));
  json_object_object_add (obj, "registers_per_thread", json_object_new_int (c->registers_per_thread));
  json_object_object_add (obj, "per_sm", json_object_new_int64 (c->per_sm));
  json_object_object_add (obj, "binding_limit", json_object_new_string (c->binding_limit));
  json_object_object_add (obj, "waves", json_object_new_int64 (c->waves));
  json_object_object_add (obj, "transfer_elements", json_object_new_int64 (c->transfer_elements));
  json_object_object_add (obj, "transfer_bytes", json_object_new_int64 (c->transfer_bytes));
  for (guint t = 0; t < c->transfers->len; t++)
    json_object_array_add (transfers, transfer_to_json (&g_array_index (c->transfers, NapkinTransfer, t)));
  json_object_object_add (obj, "transfers", transfers);
  json_object_object_add (obj, "feasible", json_object_new_boolean (c->feasible));
  return obj;
}

static json_object *
kernel_to_json (const NapkinKernelCost *kc)
{
  json_object *obj = json_object_new_object ();

  json_object_object_add (obj, "name", json_object_new_string (kc->name));
  json_object_object_add (obj, "kind", json_object_new_string (kc->region >= 0 ? "region" : "operation"));
  json_object_object_add (obj, "resources_s", resources_to_json (kc->time_s));
  json_object_object_add (obj, "quantisation", json_object_new_double (kc->quantisation));
  json_object_object_add (obj, "fill", json_object_new_double (kc->fill > 0 ? MIN (1.0, kc->fill) : 1.0));
  json_object_object_add (obj, "launches", json_object_new_int (MAX (1, kc->launches)));
  json_object_object_add (obj, "overlap_s", json_object_new_double (kc->overlap_s));
  json_object_object_add (obj, "serial_s", json_object_new_double (kc->serial_s));
  json_object_object_add (obj, "overlaps", json_object_new_boolean (kc->overlaps));
  json_object_object_add (obj, "latency_s", json_object_new_double (kc->latency_s));
  if (kc->turns_s > 0)
    json_object_object_add (obj, "turns_s", json_object_new_double (kc->turns_s));
  json_object_object_add (obj, "time_s", json_object_new_double (kc->time_s_predicted));
  json_object_object_add (obj, "bound", json_object_new_string (napkin_resource_to_string (kc->bound)));
  if (kc->tensor_path != NULL)
    json_object_object_add (obj, "tensor_path", json_object_new_string (kc->tensor_path));
  json_object_object_add (obj, "best_time_s", json_object_new_double (kc->best_s));
  json_object_object_add (obj, "best_bound", json_object_new_string (napkin_resource_to_string (kc->best_bound)));
  if (kc->best_path != NULL)
    json_object_object_add (obj, "best_path", json_object_new_string (kc->best_path));
  json_object_object_add (obj, "path", json_object_new_string (napkin_path_to_string (kc->path)));
  if (kc->plan_kind != NULL)
    json_object_object_add (obj, "plan", json_object_new_string (kc->plan_kind));
  if (kc->reason != NULL)
    json_object_object_add (obj, "reason", json_object_new_string (kc->reason));
  if (kc->note != NULL)
    json_object_object_add (obj, "note", json_object_new_string (kc->note));
  return obj;
}

json_object *
napkin_analysis_to_json (NapkinAnalysis *a)
{
  json_object *root = json_object_new_object ();
  json_object *array;

  g_return_val_if_fail (a != NULL, NULL);

  json_object_object_add (root, "arch", json_object_new_string (a->arch->id));
  json_object_object_add (root, "arch_name", json_object_new_string (a->arch->name));
  json_object_object_add (root, "model", json_object_new_string (a->paper ? "paper" : "l2-reuse"));
  if (a->has_dtype)
    json_object_object_add (root, "dtype", json_object_new_string (napkin_dtype_to_string (a->dtype)));
  json_object_object_add (root, "feasible", json_object_new_boolean (a->feasible));
  json_object_object_add (root, "errors", strings_to_json (a->errors));
  json_object_object_add (root, "warnings", strings_to_json (a->warnings));
  json_object_object_add (root, "flops", json_object_new_int64 (a->flops_total));
  json_object_object_add (root, "flops_by_unit", flops_to_json (a));
  json_object_object_add (root, "predicted_time_s", json_object_new_double (a->predicted_time_s));
  json_object_object_add (root, "launches", json_object_new_int ((int) a->launches));
  json_object_object_add (root, "launch_run_s", json_object_new_double (a->launch_run_s));
  json_object_object_add (root, "overlap_time_s", json_object_new_double (a->overlap_time_s));
  json_object_object_add (root, "serial_time_s", json_object_new_double (a->serial_time_s));
  json_object_object_add (root, "throughput_flops_per_s", json_object_new_double (a->throughput));
  json_object_object_add (root, "serial_throughput_flops_per_s", json_object_new_double (a->serial_throughput));
  json_object_object_add (root, "tensor_throughput_flops_per_s", json_object_new_double (a->tensor_throughput));
  json_object_object_add (root, "intensity_flops_per_byte", json_object_new_double (a->intensity));
  json_object_object_add (root, "energy_j", json_object_new_double (a->energy_j));
  json_object_object_add (root, "bound", json_object_new_string (napkin_resource_to_string (a->bound)));
  json_object_object_add (root, "resources_s", resources_to_json (a->resource_s));
  json_object_object_add (root, "best_path", best_path_to_json (a));
  json_object_object_add (root, "levels", levels_to_json (a));

  array = json_object_new_array ();
  for (guint r = 0; r < a->regions->len; r++)
    json_object_array_add (array, region_to_json (a, &g_array_index (a->regions, NapkinRegionCost, r)));
  json_object_object_add (root, "regions", array);

  array = json_object_new_array ();
  for (guint k = 0; k < a->kernels->len; k++)
    json_object_array_add (array, kernel_to_json (&g_array_index (a->kernels, NapkinKernelCost, k)));
  json_object_object_add (root, "kernels", array);
  return root;
}
