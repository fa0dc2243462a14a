/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "napkin-types.h"

G_BEGIN_DECLS

/* napkin-runner's answer to one run, read once from its JSON (docs/cli.md, "run"):
 * what the run panel, the tile suggestions, the analysis pane and `tune --measure`
 * show. A number the result does not carry is NAN; a string, NULL. The JSON itself
 * stays beside it (`json`) for the document's run history and `--format json`. */

typedef struct
{
  char   *name;
  char   *skeleton;
  double  grid;
  double  threads;
  double  registers;
  double  shared_bytes;
  double  local_bytes;
} NapkinRunKernel;

typedef struct
{
  char            *status;             /* "ok", "wrong", "no-gpu", "fault", "timeout", … */
  char            *message;            /* the runner's words, English */
  char            *date;               /* when the app recorded it (ISO 8601) */
  char            *arch;               /* "sm_90a" */
  char            *gpu_name;
  char            *gpu_driver;
  gboolean         dry_run;            /* multi-GPU --dry-run: set up, nothing timed */

  double           time_median_ms;
  double           time_min_ms;
  double           time_max_ms;
  double           time_repeats;
  double           reference_median_ms;

  double           flops;
  double           io_bytes;
  double           ir_hbm_bytes;
  double           tflops;
  double           gbps;

  gboolean         has_error;          /* checked against the fp32 reference */
  double           error_max_rel;
  double           error_bound;
  gboolean         error_ok;

  double           energy_j;           /* NVML, per run */
  double           predicted_energy_j; /* the model's, where a caller added it */

  GArray          *kernels;            /* NapkinRunKernel */

  /* the model's prediction where the app or the CLI added one (napkin-prediction.h) */
  gboolean         has_prediction;
  char            *prediction_arch;
  char            *prediction_bound;
  double           prediction_time_ms;
  double           prediction_level_bytes[NAPKIN_N_LEVELS];
  double           prediction_level_time_ms[NAPKIN_N_LEVELS];

  json_object     *json;               /* the runner's object (a reference) */
} NapkinRunResult;

/* NULL with NAPKIN_JOB_ERROR_OUTPUT naming the field ("time_ms.median: expected a
 * number") where the object lacks "status" or a field has the wrong type; a run that
 * ended "ok" or "wrong" must carry its time (unless a dry run). JSON null is absent. */
NapkinRunResult *napkin_run_result_new_from_json (json_object           *json,
                                                  GError               **error);
void             napkin_run_result_free          (NapkinRunResult       *self);
/* "ok" or "wrong": the kernels ran to the end (the numbers mean something). */
gboolean         napkin_run_result_ran           (const NapkinRunResult *self);
gboolean         napkin_run_result_is_ok         (const NapkinRunResult *self);
const NapkinRunKernel *napkin_run_result_kernel  (const NapkinRunResult *self,
                                                  guint                  index);

G_DEFINE_AUTOPTR_CLEANUP_FUNC (NapkinRunResult, napkin_run_result_free)

G_END_DECLS
