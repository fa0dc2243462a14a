/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <glib.h>
#include <json-c/json.h>

#include "napkin-cuda-driver.h"

G_BEGIN_DECLS

/* napkin-runner's work on several GPUs (docs/multi-gpu.md, "Running on several GPUs").
 * Each fills `root`, sets *status ("ok", "no-gpu", "failed", "fault", …) and *message,
 * and returns the runner's exit code. */

typedef struct
{
  guint   gpus;
  gint64  min_bytes;   /* 1 MiB */
  gint64  max_bytes;   /* 1 GiB */
  guint   factor;      /* sizes step by this: 4 */
  guint   repeats;     /* timed batches: the median is reported */
  guint   batch;       /* operations per timed batch */
  char  **only;        /* collective names to run, NULL: all four */
} NapkinCollectivesOptions;

int napkin_runner_collectives (NapkinCudaDriver                *cu,
                               const NapkinCollectivesOptions  *options,
                               json_object                     *root,
                               char                           **status,
                               char                           **message);

G_END_DECLS
