/* SPDX-License-Identifier: GPL-3.0-or-later */
#pragma once

#include <gio/gio.h>
#include <json-c/json.h>

#include "napkin-diagram.h"
#include "napkin-run-result.h"

G_BEGIN_DECLS

/* Runs napkin-runner as a child process with a time limit and hands back its JSON
 * result. Progress comes from the child's "progress FRACTION MESSAGE" lines. The
 * job never crashes its parent: a kernel that faults, hangs or runs past the limit
 * comes back as a result whose "status" says so ("fault", "timeout", "crashed").
 * Only cancellation and a runner that cannot be started are errors. */

#define NAPKIN_JOB_ERROR (napkin_job_error_quark ())

typedef enum
{
  NAPKIN_JOB_ERROR_NO_RUNNER,   /* napkin-runner is not installed or not found */
  NAPKIN_JOB_ERROR_OUTPUT,      /* the runner's output is not JSON, or a field has the wrong type */
} NapkinJobError;

GQuark napkin_job_error_quark (void);

typedef enum
{
  NAPKIN_JOB_IDLE,
  NAPKIN_JOB_RUNNING,
  NAPKIN_JOB_DONE,
  NAPKIN_JOB_FAILED,
  NAPKIN_JOB_CANCELLED,
} NapkinJobState;

#define NAPKIN_TYPE_RUN_JOB (napkin_run_job_get_type ())
G_DECLARE_FINAL_TYPE (NapkinRunJob, napkin_run_job, NAPKIN, RUN_JOB, GObject)

/* The diagram is copied (as JSON in a temporary file), so the editor may go on
 * changing it. `argv` holds further runner options (--repeats 50, --axis m=512, …). */
NapkinRunJob   *napkin_run_job_new            (NapkinDiagram        *diagram,
                                               const char * const   *argv);
/* A run that reads no diagram: napkin-runner ARGV… (e.g. --calibrate). */
NapkinRunJob   *napkin_run_job_new_for_args   (const char * const   *argv);
/* Defaults: napkin_run_job_find_runner (); 300 s. */
void            napkin_run_job_set_runner     (NapkinRunJob         *self,
                                               const char * const   *command);
void            napkin_run_job_set_timeout    (NapkinRunJob         *self,
                                               guint                 seconds);
double          napkin_run_job_get_fraction   (NapkinRunJob         *self);
const char     *napkin_run_job_get_message    (NapkinRunJob         *self);
NapkinJobState  napkin_run_job_get_state      (NapkinRunJob         *self);

void            napkin_run_job_run_async      (NapkinRunJob         *self,
                                               GCancellable         *cancellable,
                                               GAsyncReadyCallback   callback,
                                               gpointer              user_data);
/* The runner's JSON object (new reference), or NULL with an error. */
json_object    *napkin_run_job_run_finish     (NapkinRunJob         *self,
                                               GAsyncResult         *result,
                                               GError              **error);
/* The same, read into its fields: a run of a diagram (not --calibrate). A result
 * that does not have the fields' types is a NAPKIN_JOB_ERROR_OUTPUT naming the field. */
NapkinRunResult *napkin_run_job_run_finish_result (NapkinRunJob    *self,
                                                   GAsyncResult    *result,
                                                   GError         **error);

/* $NAPKIN_RUNNER, else napkin-runner beside the running program or in the build
 * tree ($NAPKIN_BUILD_DIR/src/runner), else the installed one; NULL if none. */
char           *napkin_run_job_find_runner    (void);

G_END_DECLS
