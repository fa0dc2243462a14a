/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <json-c/json.h>

#include "napkin-diagram.h"

G_BEGIN_DECLS

/* The model's id for a GPU the runner names ("NVIDIA H100 80GB HBM3" -> "h100"), or NULL. */
const char *napkin_arch_id_for_gpu_name  (const char    *gpu_name);

/* Adds the model's prediction to a run result (the JSON of napkin-runner) as its
 * "prediction" member: arch, time_ms, serial_time_ms, bound, feasible, energy_j,
 * levels (transfer_bytes and time_ms per level) and resources_ms. The GPU is the
 * one named in result's gpu.name, unless arch_id names a profile. FALSE, and the
 * result untouched, when the model does not know the GPU or cannot analyse. */
gboolean    napkin_prediction_add_to_run (NapkinDiagram *diagram,
                                          json_object   *result,
                                          const char    *arch_id);

G_END_DECLS
