/* SPDX-License-Identifier: GPL-3.0-or-later */
#define G_LOG_DOMAIN "napkin-runner"
/* kill () and setpgid () under -std=c17 */
#define _POSIX_C_SOURCE 200809L

#include "config.h"

#include <glib/gi18n-lib.h>

#include <errno.h>
#include <signal.h>
#include <glib/gstdio.h>
#include <glib-unix.h>
#include <string.h>
#include <unistd.h>

#include "napkin-file.h"
#include "napkin-json-private.h"
#include "napkin-run-job.h"

G_DEFINE_QUARK (napkin-job-error-quark, napkin_job_error)

struct _NapkinRunJob
{
  GObject         parent_instance;
  char           *json_path;
  gboolean        no_file;    /* a run that reads no diagram (calibrate) */
  GStrv           extra;
  GStrv           runner;
  guint           timeout;
  double          fraction;
  char           *message;
  NapkinJobState  state;
};

G_DEFINE_FINAL_TYPE (NapkinRunJob, napkin_run_job, G_TYPE_OBJECT)

enum { PROP_0, PROP_FRACTION, PROP_MESSAGE, PROP_STATE, N_PROPS };
static GParamSpec *properties[N_PROPS];

static void
napkin_run_job_finalize (GObject *object)
{
  NapkinRunJob *self = NAPKIN_RUN_JOB (object);

  if (self->json_path != NULL)
    g_unlink (self->json_path);
  g_clear_pointer (&self->json_path, g_free);
  g_clear_pointer (&self->extra, g_strfreev);
  g_clear_pointer (&self->runner, g_strfreev);
  g_clear_pointer (&self->message, g_free);
  G_OBJECT_CLASS (napkin_run_job_parent_class)->finalize (object);
}

static void
napkin_run_job_get_property (GObject    *object,
                             guint       prop_id,
                             GValue     *value,
                             GParamSpec *pspec)
{
  NapkinRunJob *self = NAPKIN_RUN_JOB (object);

  switch (prop_id)
    {
    case PROP_FRACTION: g_value_set_double (value, self->fraction); break;
    case PROP_MESSAGE: g_value_set_string (value, self->message); break;
    case PROP_STATE: g_value_set_int (value, self->state); break;
    default: G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
    }
}

static void
napkin_run_job_class_init (NapkinRunJobClass *klass)
{
  GObjectClass *object_class = G_OBJECT_CLASS (klass);

  object_class->finalize = napkin_run_job_finalize;
  object_class->get_property = napkin_run_job_get_property;

  properties[PROP_FRACTION] = g_param_spec_double ("fraction", NULL, NULL, 0, 1, 0,
                                                   G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_MESSAGE] = g_param_spec_string ("message", NULL, NULL, NULL,
                                                  G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  properties[PROP_STATE] = g_param_spec_int ("state", NULL, NULL, NAPKIN_JOB_IDLE, NAPKIN_JOB_CANCELLED, NAPKIN_JOB_IDLE,
                                             G_PARAM_READABLE | G_PARAM_EXPLICIT_NOTIFY | G_PARAM_STATIC_STRINGS);
  g_object_class_install_properties (object_class, N_PROPS, properties);
}

static void
napkin_run_job_init (NapkinRunJob *self)
{
  self->timeout = 300;
}

static void
set_progress (NapkinRunJob *self,
              double        fraction,
              const char   *message)
{
  if (fraction != self->fraction)
    {
      self->fraction = fraction;
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_FRACTION]);
    }
  if (g_strcmp0 (message, self->message) != 0)
    {
      g_free (self->message);
      self->message = g_strdup (message);
      g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_MESSAGE]);
    }
}

static void
set_state (NapkinRunJob   *self,
           NapkinJobState  state)
{
  if (self->state == state)
    return;
  self->state = state;
  g_object_notify_by_pspec (G_OBJECT (self), properties[PROP_STATE]);
}

char *
napkin_run_job_find_runner (void)
{
  const char *env = g_getenv ("NAPKIN_RUNNER");
  const char *build = g_getenv ("NAPKIN_BUILD_DIR");
  g_autofree char *self_exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *dir = self_exe ? g_path_get_dirname (self_exe) : NULL;
  char *candidates[5] = { NULL };
  guint n = 0;
  char *found = NULL;

  if (env != NULL && *env)
    return g_strdup (env);
  if (dir != NULL)
    {
      candidates[n++] = g_build_filename (dir, "napkin-runner", NULL);
      candidates[n++] = g_build_filename (dir, "..", "runner", "napkin-runner", NULL);
    }
  if (build != NULL)
    candidates[n++] = g_build_filename (build, "src", "runner", "napkin-runner", NULL);
  candidates[n++] = g_build_filename (NAPKIN_LIBEXECDIR, "napkin-runner", NULL);
  for (guint i = 0; i < n; i++)
    {
      if (found == NULL && g_file_test (candidates[i], G_FILE_TEST_IS_EXECUTABLE))
        found = g_strdup (candidates[i]);
      g_free (candidates[i]);
    }
  return found;
}

NapkinRunJob *
napkin_run_job_new (NapkinDiagram      *diagram,
                    const char * const *argv)
{
  NapkinRunJob *self;
  g_autofree char *data = NULL;
  gsize length = 0;
  g_autoptr(GError) error = NULL;
  int fd;

  g_return_val_if_fail (NAPKIN_IS_DIAGRAM (diagram), NULL);

  self = g_object_new (NAPKIN_TYPE_RUN_JOB, NULL);
  self->extra = g_strdupv ((char **) argv);
  data = napkin_diagram_save_to_data (diagram, &length);
  fd = g_file_open_tmp ("napkin-run-XXXXXX.napkin", &self->json_path, &error);
  if (fd >= 0)
    {
      close (fd);
      if (!g_file_set_contents (self->json_path, data, length, &error))
        g_clear_pointer (&self->json_path, g_free);
    }
  return self;
}

NapkinRunJob *
napkin_run_job_new_for_args (const char * const *argv)
{
  NapkinRunJob *self = g_object_new (NAPKIN_TYPE_RUN_JOB, NULL);

  self->extra = g_strdupv ((char **) argv);
  self->no_file = TRUE;
  return self;
}

void
napkin_run_job_set_runner (NapkinRunJob       *self,
                           const char * const *command)
{
  g_return_if_fail (NAPKIN_IS_RUN_JOB (self));

  g_strfreev (self->runner);
  self->runner = g_strdupv ((char **) command);
}

void
napkin_run_job_set_timeout (NapkinRunJob *self,
                            guint         seconds)
{
  g_return_if_fail (NAPKIN_IS_RUN_JOB (self));
  self->timeout = MAX (seconds, 1);
}

double
napkin_run_job_get_fraction (NapkinRunJob *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_JOB (self), 0);
  return self->fraction;
}

const char *
napkin_run_job_get_message (NapkinRunJob *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_JOB (self), NULL);
  return self->message;
}

NapkinJobState
napkin_run_job_get_state (NapkinRunJob *self)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_JOB (self), NAPKIN_JOB_IDLE);
  return self->state;
}

/* ---- one run ------------------------------------------------------------------------------ */

/* What is read from the runner is capped (docs/security.md, "Kernels"): its result is
 * a few kilobytes of JSON, and a runner that prints gigabytes must not cost the
 * editor gigabytes. Beyond the caps the output is read and dropped, so the runner
 * never blocks on a full pipe. */
#define STDOUT_CAP   (4 * 1024 * 1024)
#define STDERR_LINE  4096     /* longer lines are cut */
#define STDERR_TAIL  16384    /* the last bytes of the error stream kept for the result */

typedef struct
{
  GSubprocess         *proc;
  GPid                 pid;         /* also the runner's process group */
  GInputStream        *out_pipe;
  GInputStream        *err_pipe;
  GByteArray          *out;
  gboolean             out_overflow;
  GString             *line;        /* the error stream's current line */
  gboolean             line_cut;
  GString             *stderr_tail;
  char                 out_buf[16384];
  char                 err_buf[4096];
  guint                pending;
  guint                timeout_id;
  guint                grace_id;
  gulong               cancel_id;
  GCancellable        *cancellable;
  GCancellable        *reads;       /* stops our reads: the runner is gone, or out of time */
  gboolean             timed_out;
} RunData;

static void
run_data_free (RunData *data)
{
  g_clear_object (&data->proc);
  g_clear_object (&data->out_pipe);
  g_clear_object (&data->err_pipe);
  if (data->cancel_id)
    g_cancellable_disconnect (data->cancellable, data->cancel_id);
  g_clear_object (&data->cancellable);
  g_clear_object (&data->reads);
  g_clear_handle_id (&data->timeout_id, g_source_remove);
  g_clear_handle_id (&data->grace_id, g_source_remove);
  g_clear_pointer (&data->out, g_byte_array_unref);
  if (data->line)
    g_string_free (data->line, TRUE);
  if (data->stderr_tail)
    g_string_free (data->stderr_tail, TRUE);
  g_free (data);
}

/* The runner runs in its own process group (child_setup): killing the group stops
 * whatever it started too, which would otherwise hold our pipes open. The child
 * tells its pid through a pipe: GSubprocess forgets it once the child is reaped,
 * which for a runner that exits at once can happen before we ask. */
static void
child_setup (gpointer user_data)
{
  int fd = GPOINTER_TO_INT (user_data);
  pid_t pid = getpid ();

  setpgid (0, 0);
  if (write (fd, &pid, sizeof pid) != sizeof pid)
    _exit (127);
}

static void
kill_group (RunData *data)
{
  if (data->pid > 0 && kill (-data->pid, SIGKILL) != 0 && errno != ESRCH)
    g_debug ("could not stop the runner's process group %d: %s", (int) data->pid, g_strerror (errno));
}

static void
put_json (gpointer data)
{
  json_object_put (data);
}

static void
complete (GTask *task)
{
  NapkinRunJob *self = g_task_get_source_object (task);
  RunData *data = g_task_get_task_data (task);
  json_object *root = NULL;

  if (--data->pending > 0)
    return;

  g_clear_handle_id (&data->timeout_id, g_source_remove);
  g_clear_handle_id (&data->grace_id, g_source_remove);
  if (g_cancellable_is_cancelled (data->cancellable))
    {
      set_state (self, NAPKIN_JOB_CANCELLED);
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_CANCELLED, "The run was cancelled");
      return;
    }

  if (data->out_overflow)
    {
      set_state (self, NAPKIN_JOB_FAILED);
      g_task_return_new_error (task, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT,
                               "napkin-runner printed more than %d bytes on its standard output, where its "
                               "result is a few kilobytes of JSON; Napkin read no further",
                               STDOUT_CAP);
      return;
    }
  if (data->out->len > 0)
    {
      g_autofree char *copy = g_strndup ((const char *) data->out->data, data->out->len);
      json_object *parsed = json_tokener_parse (copy);

      if (parsed != NULL && json_object_is_type (parsed, json_type_object))
        root = parsed;
      else if (parsed != NULL)
        json_object_put (parsed);
    }

  if (data->timed_out && (root == NULL || json_object_object_get (root, "status") == NULL))
    {
      g_autofree char *msg = g_strdup_printf (_("the run did not finish within %u s; Napkin stopped the runner "
                                              "(a kernel that hangs, or a problem too large for the limit)"),
                                              self->timeout);

      g_clear_pointer (&root, json_object_put);
      root = json_object_new_object ();
      json_object_object_add (root, "status", json_object_new_string ("timeout"));
      json_object_object_add (root, "message", json_object_new_string (msg));
    }
  else if (root == NULL && g_subprocess_get_if_signaled (data->proc))
    {
      g_autofree char *msg = g_strdup_printf (_("napkin-runner died with signal %d (%s)"),
                                              g_subprocess_get_term_sig (data->proc),
                                              g_strsignal (g_subprocess_get_term_sig (data->proc)));

      root = json_object_new_object ();
      json_object_object_add (root, "status", json_object_new_string ("crashed"));
      json_object_object_add (root, "message", json_object_new_string (msg));
    }

  if (root == NULL)
    {
      set_state (self, NAPKIN_JOB_FAILED);
      g_task_return_new_error (task, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_OUTPUT,
                               "napkin-runner gave no result (exit status %d): %s",
                               g_subprocess_get_if_exited (data->proc) ? g_subprocess_get_exit_status (data->proc) : -1,
                               data->stderr_tail->str);
      return;
    }

  if (g_subprocess_get_if_exited (data->proc))
    json_object_object_add (root, "exit_status", json_object_new_int (g_subprocess_get_exit_status (data->proc)));
  if (data->stderr_tail->len > 0)
    json_object_object_add (root, "stderr", json_object_new_string (data->stderr_tail->str));
  set_state (self, g_strcmp0 (json_object_get_string (json_object_object_get (root, "status")), "ok") == 0
                     ? NAPKIN_JOB_DONE : NAPKIN_JOB_FAILED);
  g_task_return_pointer (task, root, put_json);
}

/* One line of the error stream: progress, or kept in the tail. */
static void
stderr_line (NapkinRunJob *self,
             RunData      *data)
{
  const char *line = data->line->str;

  if (g_str_has_prefix (line, "progress ") && !data->line_cut)
    {
      char *end = NULL;
      double fraction = g_ascii_strtod (line + 9, &end);

      if (end != NULL && end != line + 9)
        set_progress (self, CLAMP (fraction, 0, 1), g_strstrip (end));
    }
  else
    {
      g_string_append (data->stderr_tail, line);
      if (data->line_cut)
        g_string_append (data->stderr_tail, " […]");
      g_string_append_c (data->stderr_tail, '\n');
      /* Keep the last STDERR_TAIL bytes, trimmed in steps so that many short lines
       * cost linear time; the cut lands after a newline when there is one. */
      if (data->stderr_tail->len > 2 * STDERR_TAIL)
        {
          gsize cut = data->stderr_tail->len - STDERR_TAIL;
          const char *nl = memchr (data->stderr_tail->str + cut, '\n', STDERR_TAIL - 1);

          if (nl != NULL)
            cut = nl + 1 - data->stderr_tail->str;
          g_string_erase (data->stderr_tail, 0, cut);
        }
    }
  g_string_truncate (data->line, 0);
  data->line_cut = FALSE;
}

/* A chunk of the error stream: split into lines; at its end (n <= 0) the last line
 * without a newline and the tail trimmed to STDERR_TAIL. */
static void
take_stderr (NapkinRunJob *self,
             RunData      *data,
             gssize        n)
{
  if (n <= 0)
    {
      if (data->line->len > 0)
        stderr_line (self, data);
      if (data->stderr_tail->len > STDERR_TAIL)
        g_string_erase (data->stderr_tail, 0, data->stderr_tail->len - STDERR_TAIL);
      return;
    }
  for (gssize i = 0; i < n; i++)
    {
      char c = data->err_buf[i];

      if (c == '\n')
        stderr_line (self, data);
      else if (data->line->len < STDERR_LINE)
        g_string_append_c (data->line, c);
      else
        data->line_cut = TRUE;
    }
}

/* A chunk of the result: kept up to STDOUT_CAP, the rest read and dropped. */
static void
take_stdout (RunData *data,
             gssize   n)
{
  if (n <= 0)
    return;
  if (data->out->len + n <= STDOUT_CAP)
    g_byte_array_append (data->out, (const guint8 *) data->out_buf, n);
  else
    data->out_overflow = TRUE;
}

static void read_pipe (GTask        *task,
                       GInputStream *pipe);

/* Both pipes are read to their end; each end counts towards complete (). */
static void
pipe_read_cb (GObject      *object,
              GAsyncResult *result,
              gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  RunData *data = g_task_get_task_data (task);
  GInputStream *pipe = G_INPUT_STREAM (object);
  gssize n = g_input_stream_read_finish (pipe, result, NULL);

  if (pipe == data->err_pipe)
    take_stderr (g_task_get_source_object (task), data, n);
  else
    take_stdout (data, n);
  if (n <= 0)
    complete (task);
  else
    read_pipe (g_steal_pointer (&task), pipe);
}

/* The next chunk of the runner's stdout or stderr; takes the task's reference. */
static void
read_pipe (GTask        *task,
           GInputStream *pipe)
{
  RunData *data = g_task_get_task_data (task);

  if (pipe == data->err_pipe)
    g_input_stream_read_async (pipe, data->err_buf, sizeof data->err_buf, G_PRIORITY_DEFAULT, data->reads,
                               pipe_read_cb, task);
  else
    g_input_stream_read_async (pipe, data->out_buf, sizeof data->out_buf, G_PRIORITY_DEFAULT, data->reads,
                               pipe_read_cb, task);
}

static gboolean
stop_reads (gpointer user_data)
{
  RunData *data = user_data;

  data->grace_id = 0;
  g_cancellable_cancel (data->reads);
  return G_SOURCE_REMOVE;
}

static void
wait_cb (GObject      *object,
         GAsyncResult *result,
         gpointer      user_data)
{
  g_autoptr(GTask) task = user_data;
  RunData *data = g_task_get_task_data (task);

  g_subprocess_wait_finish (G_SUBPROCESS (object), result, NULL);
  /* Whatever the runner left running is of no use now, and would hold the pipes:
   * the reads end at the end of what it wrote. A process that left the group gets
   * two seconds before the reads stop anyway. */
  kill_group (data);
  if (data->pending > 1)
    data->grace_id = g_timeout_add_seconds (2, stop_reads, data);
  complete (task);
}

static gboolean
on_timeout (gpointer user_data)
{
  RunData *data = user_data;

  data->timeout_id = 0;
  data->timed_out = TRUE;
  kill_group (data);
  g_subprocess_force_exit (data->proc);
  g_cancellable_cancel (data->reads);
  return G_SOURCE_REMOVE;
}

static void
on_cancelled (GCancellable *cancellable,
              gpointer      user_data)
{
  RunData *data = user_data;

  kill_group (data);
  g_subprocess_force_exit (data->proc);
}

void
napkin_run_job_run_async (NapkinRunJob        *self,
                          GCancellable        *cancellable,
                          GAsyncReadyCallback  callback,
                          gpointer             user_data)
{
  g_autoptr(GTask) task = NULL;
  g_autoptr(GSubprocessLauncher) launcher = NULL;
  g_autoptr(GPtrArray) argv = g_ptr_array_new_with_free_func (g_free);
  g_autoptr(GError) error = NULL;
  g_autofree char *found = NULL;
  int pid_pipe[2];
  RunData *data;

  g_return_if_fail (NAPKIN_IS_RUN_JOB (self));
  g_return_if_fail (self->state != NAPKIN_JOB_RUNNING);

  task = g_task_new (self, cancellable, callback, user_data);
  g_task_set_source_tag (task, (gpointer) (guintptr) napkin_run_job_run_async);

  if (self->json_path == NULL && !self->no_file)
    {
      g_task_return_new_error (task, G_IO_ERROR, G_IO_ERROR_FAILED, "Could not write the diagram to a temporary file");
      return;
    }

  if (self->runner != NULL)
    for (guint i = 0; self->runner[i]; i++)
      g_ptr_array_add (argv, g_strdup (self->runner[i]));
  else if ((found = napkin_run_job_find_runner ()) != NULL)
    g_ptr_array_add (argv, g_strdup (found));
  else
    {
      set_state (self, NAPKIN_JOB_FAILED);
      g_task_return_new_error (task, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_NO_RUNNER,
                               "napkin-runner was not found (set NAPKIN_RUNNER to its path)");
      return;
    }
  if (!self->no_file)
    g_ptr_array_add (argv, g_strdup (self->json_path));
  g_ptr_array_add (argv, g_strdup_printf ("--timeout=%u", self->timeout));
  for (guint i = 0; self->extra && self->extra[i]; i++)
    g_ptr_array_add (argv, g_strdup (self->extra[i]));
  g_ptr_array_add (argv, NULL);

  data = g_new0 (RunData, 1);
  data->out = g_byte_array_new ();
  data->line = g_string_new (NULL);
  data->stderr_tail = g_string_new (NULL);
  data->cancellable = cancellable ? g_object_ref (cancellable) : NULL;
  data->reads = g_cancellable_new ();
  g_task_set_task_data (task, data, (GDestroyNotify) run_data_free);

  if (!g_unix_open_pipe (pid_pipe, FD_CLOEXEC, &error))
    {
      set_state (self, NAPKIN_JOB_FAILED);
      g_task_return_new_error (task, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_NO_RUNNER,
                               "Could not start napkin-runner: %s", error->message);
      return;
    }
  launcher = g_subprocess_launcher_new (G_SUBPROCESS_FLAGS_STDOUT_PIPE | G_SUBPROCESS_FLAGS_STDERR_PIPE);
  g_subprocess_launcher_set_child_setup (launcher, child_setup, GINT_TO_POINTER (pid_pipe[1]), NULL);
  data->proc = g_subprocess_launcher_spawnv (launcher, (const char * const *) argv->pdata, &error);
  close (pid_pipe[1]);
  if (data->proc != NULL)
    {
      pid_t pid = 0;
      gssize n;

      /* Written before the exec, or the pipe ends with the child. */
      while ((n = read (pid_pipe[0], &pid, sizeof pid)) < 0 && errno == EINTR)
        ;
      data->pid = n == sizeof pid ? pid : 0;
    }
  close (pid_pipe[0]);
  if (data->proc == NULL)
    {
      set_state (self, NAPKIN_JOB_FAILED);
      g_task_return_new_error (task, NAPKIN_JOB_ERROR, NAPKIN_JOB_ERROR_NO_RUNNER,
                               "Could not start napkin-runner: %s", error->message);
      return;
    }

  set_progress (self, 0, "Starting");
  set_state (self, NAPKIN_JOB_RUNNING);

  data->pending = 3;
  data->out_pipe = g_object_ref (g_subprocess_get_stdout_pipe (data->proc));
  data->err_pipe = g_object_ref (g_subprocess_get_stderr_pipe (data->proc));
  /* The runner has its own watchdog at the same limit; ours is the backstop. */
  data->timeout_id = g_timeout_add_seconds (self->timeout + (self->timeout < 10 ? 1 : 10), on_timeout, data);
  if (cancellable != NULL)
    data->cancel_id = g_cancellable_connect (cancellable, G_CALLBACK (on_cancelled), data, NULL);

  read_pipe (g_object_ref (task), data->out_pipe);
  read_pipe (g_object_ref (task), data->err_pipe);
  g_subprocess_wait_async (data->proc, NULL, wait_cb, g_object_ref (task));
}

json_object *
napkin_run_job_run_finish (NapkinRunJob  *self,
                           GAsyncResult  *result,
                           GError       **error)
{
  g_return_val_if_fail (NAPKIN_IS_RUN_JOB (self), NULL);
  g_return_val_if_fail (g_task_is_valid (result, self), NULL);

  return g_task_propagate_pointer (G_TASK (result), error);
}

NapkinRunResult *
napkin_run_job_run_finish_result (NapkinRunJob  *self,
                                  GAsyncResult  *result,
                                  GError       **error)
{
  g_autoptr(json_object) json = napkin_run_job_run_finish (self, result, error);

  return json != NULL ? napkin_run_result_new_from_json (json, error) : NULL;
}
